//! The cluster a run checks: the bundled cluster started in-process on a free loopback port,
//! or a real cluster named by a kubeconfig and context. Either way the run gets one kube client
//! with timeouts, and nothing else: every observation goes through the Kubernetes API.

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::plan::TargetSpec;

/// How long one API call may take to connect / to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the run could not reach its cluster.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The kubeconfig itself is wrong (exit code 2).
    #[error("{path}: {message}")]
    Kubeconfig { path: String, message: String },
    /// The bundled cluster did not start.
    #[error("the bundled cluster did not start: {0}")]
    Bundled(#[from] simcluster::ClusterError),
    /// The API server did not answer or refused the credentials (exit code 3).
    #[error(
        "cannot reach the cluster at {server}: {cause}\n  check: the kubeconfig's server address and network path, the context ({context}), and that the credentials are still valid (`kubectl --context {context} version`)"
    )]
    Unreachable {
        server: String,
        context: String,
        cause: String,
    },
}

impl TargetError {
    /// A kubeconfig that cannot be used is bad input (2); an unreachable cluster aborts a run
    /// with 3 inside the run's report, and anything else here is a failure (1).
    pub fn exit_code(&self) -> crate::exit::Code {
        match self {
            TargetError::Kubeconfig { .. } => crate::exit::Code::Usage,
            _ => crate::exit::Code::Failed,
        }
    }
}

/// A connected cluster.
pub struct Target {
    pub client: kube::Client,
    /// The API server's URL.
    pub server: String,
    /// What the report says about the target.
    pub report: mixcheck_reports::Target,
    /// The in-process bundled cluster (stops when dropped).
    pub bundled: Option<simcluster::Cluster>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn with_timeouts(mut config: kube::Config) -> kube::Config {
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(READ_TIMEOUT);
    config
}

/// Starts or connects to the target and checks that the API server answers (`/version`).
pub async fn connect(spec: &TargetSpec, say: &dyn Fn(&str)) -> Result<Target, TargetError> {
    match spec {
        TargetSpec::Bundled { profile, topology } => {
            say(&format!(
                "Starting the bundled cluster (profile {profile}: {}, {} nodes) in-process…",
                topology.kubernetes_version,
                topology.nodes.len()
            ));
            let cluster = simcluster::Cluster::start(simcluster::ClusterConfig::new((**topology).clone())).await?;
            let kubeconfig = Kubeconfig::from_yaml(&cluster.kubeconfig()).map_err(|e| TargetError::Kubeconfig {
                path: "(bundled cluster)".into(),
                message: e.to_string(),
            })?;
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| TargetError::Kubeconfig {
                    path: "(bundled cluster)".into(),
                    message: e.to_string(),
                })?;
            let server = cluster.url().to_string();
            say(&format!(
                "Bundled cluster serving at {server} (in-process, on loopback; it stops with the run)"
            ));
            let client = kube::Client::try_from(with_timeouts(config)).map_err(|e| TargetError::Unreachable {
                server: server.clone(),
                context: "bundled".into(),
                cause: e.to_string(),
            })?;
            let target = Target {
                client,
                server,
                report: mixcheck_reports::Target::Bundled {
                    profile: profile.clone(),
                },
                bundled: Some(cluster),
            };
            target.ping("bundled").await?;
            Ok(target)
        }
        TargetSpec::Kubeconfig { path, context } => {
            let shown = path
                .as_ref()
                .map(|p| p.display().to_string())
                .or_else(|| std::env::var("KUBECONFIG").ok())
                .unwrap_or_else(|| "~/.kube/config".into());
            let options = KubeConfigOptions {
                context: context.clone(),
                ..Default::default()
            };
            let config = match path {
                Some(p) => {
                    let kc = Kubeconfig::read_from(p).map_err(|e| TargetError::Kubeconfig {
                        path: shown.clone(),
                        message: e.to_string(),
                    })?;
                    kube::Config::from_custom_kubeconfig(kc, &options).await
                }
                None => kube::Config::from_kubeconfig(&options).await,
            }
            .map_err(|e| TargetError::Kubeconfig {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            let server = config.cluster_url.to_string();
            let context_name = context.clone().unwrap_or_else(|| "current-context".into());
            say(&format!("Target: {server} (context {context_name}, from {shown})"));
            let client = kube::Client::try_from(with_timeouts(config)).map_err(|e| TargetError::Unreachable {
                server: server.clone(),
                context: context_name.clone(),
                cause: e.to_string(),
            })?;
            let target = Target {
                client,
                server: server.clone(),
                report: mixcheck_reports::Target::Kubeconfig {
                    context: context_name.clone(),
                    server,
                },
                bundled: None,
            };
            target.ping(&context_name).await?;
            Ok(target)
        }
    }
}

impl Target {
    /// Stops the in-process bundled cluster, if the run started one.
    pub async fn stop(self) {
        if let Some(cluster) = self.bundled {
            cluster.shutdown().await;
        }
    }

    /// `GET /version` within the connect timeout: the cluster answers and accepts the credentials.
    async fn ping(&self, context: &str) -> Result<(), TargetError> {
        let unreachable = |cause: String| TargetError::Unreachable {
            server: self.server.clone(),
            context: context.to_string(),
            cause,
        };
        match tokio::time::timeout(
            CONNECT_TIMEOUT + Duration::from_secs(5),
            self.client.apiserver_version(),
        )
        .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable(format!(
                "no answer within {}s",
                (CONNECT_TIMEOUT + Duration::from_secs(5)).as_secs()
            ))),
        }
    }
}
