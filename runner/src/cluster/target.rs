//! The cluster a run checks: the bundled cluster started in-process on a free loopback port,
//! or a real cluster named by a kubeconfig and context. Either way the run gets one kube client
//! with timeouts, and nothing else: every observation goes through the Kubernetes API.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

/// What a run checks.
#[derive(Debug)]
pub enum TargetSpec {
    /// The bundled cluster, started in-process.
    Bundled {
        profile: String,
        topology: Box<simcluster::Topology>,
    },
    /// A real cluster named by a kubeconfig and/or context.
    Kubeconfig {
        path: Option<PathBuf>,
        context: Option<String>,
    },
    /// The cluster this process runs in (`--in-cluster`), through its pod's service account,
    /// already resolved into a kubeconfig.
    InCluster { kubeconfig: Box<kube::config::Kubeconfig> },
}

/// Where a pod's service-account token, CA certificate and namespace are mounted.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The kubeconfig of the cluster a pod runs in: the API server from
/// `KUBERNETES_SERVICE_HOST`/`_PORT`, the CA and token files of the service account mounted at
/// `dir` (read again at each request, as the token rotates). `env` reads the environment. The
/// error says why this is not a pod of a cluster.
pub fn in_cluster_kubeconfig(
    env: &dyn Fn(&str) -> Option<String>,
    dir: &std::path::Path,
) -> Result<Kubeconfig, String> {
    let not_here = |why: String| {
        format!(
            "--in-cluster: {why}; this is not a pod of a Kubernetes cluster (outside one, use --kubeconfig/--context)"
        )
    };
    let host = env("KUBERNETES_SERVICE_HOST")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| not_here("KUBERNETES_SERVICE_HOST is not set".into()))?;
    let port = env("KUBERNETES_SERVICE_PORT")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| not_here("KUBERNETES_SERVICE_PORT is not set".into()))?;
    if port.parse::<u16>().is_err() {
        return Err(not_here(format!("KUBERNETES_SERVICE_PORT {port:?} is not a port")));
    }
    let (token, ca) = (dir.join("token"), dir.join("ca.crt"));
    for file in [&token, &ca] {
        if !file.is_file() {
            return Err(not_here(format!("no service-account file {}", file.display())));
        }
    }
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    let namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    let yaml = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "in-cluster", "cluster": {
            "server": format!("https://{host}:{port}"),
            "certificate-authority": ca.display().to_string(),
        }}],
        "users": [{"name": "service-account", "user": {"tokenFile": token.display().to_string()}}],
        "contexts": [{"name": "in-cluster", "context": {
            "cluster": "in-cluster", "user": "service-account", "namespace": namespace,
        }}],
        "current-context": "in-cluster",
    });
    serde_json::from_value(yaml).map_err(|e| not_here(format!("cannot build its configuration: {e}")))
}

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

/// A connected cluster.
pub struct Target {
    pub client: kube::Client,
    /// Requests the client has sent to the API server so far.
    pub api_calls: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
            let report = mixcheck_reports::Target::Bundled {
                profile: profile.clone(),
            };
            Target::open(config, server, "bundled", report, Some(cluster)).await
        }
        TargetSpec::InCluster { kubeconfig } => {
            let config = kube::Config::from_custom_kubeconfig((**kubeconfig).clone(), &KubeConfigOptions::default())
                .await
                .map_err(|e| TargetError::Kubeconfig {
                    path: "(in-cluster service account)".into(),
                    message: e.to_string(),
                })?;
            let server = config.cluster_url.to_string();
            say(&format!("Target: {server} (in-cluster, the pod's service account)"));
            let report = mixcheck_reports::Target::Kubeconfig {
                context: "in-cluster".into(),
                server: server.clone(),
            };
            Target::open(config, server, "in-cluster", report, None).await
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
                        message: kubeconfig_problem(&e),
                    })?;
                    kube::Config::from_custom_kubeconfig(kc, &options).await
                }
                None => kube::Config::from_kubeconfig(&options).await,
            }
            .map_err(|e| TargetError::Kubeconfig {
                path: shown.clone(),
                message: kubeconfig_problem(&e),
            })?;
            let server = config.cluster_url.to_string();
            let context_name = context.clone().unwrap_or_else(|| "current-context".into());
            say(&format!("Target: {server} (context {context_name}, from {shown})"));
            let report = mixcheck_reports::Target::Kubeconfig {
                context: context_name.clone(),
                server: server.clone(),
            };
            Target::open(config, server, &context_name, report, None).await
        }
    }
}

/// What is wrong with a kubeconfig, in words that do not repeat its path (the error names it
/// first) or quote it twice, as kube's own message does.
fn kubeconfig_problem(e: &kube::config::KubeconfigError) -> String {
    use kube::config::KubeconfigError as K;
    match e {
        K::ReadConfig(io, _) if io.kind() == std::io::ErrorKind::NotFound => {
            "no such file (pass --kubeconfig PATH, set KUBECONFIG, or leave both out to check the bundled cluster)"
                .to_string()
        }
        K::ReadConfig(io, _) => format!("cannot read it: {io}"),
        other => other.to_string(),
    }
}

impl Target {
    /// A client for `config` with the run's timeouts, checked against the API server.
    async fn open(
        config: kube::Config,
        server: String,
        context: &str,
        report: mixcheck_reports::Target,
        bundled: Option<simcluster::Cluster>,
    ) -> Result<Target, TargetError> {
        let builder =
            kube::client::ClientBuilder::try_from(with_timeouts(config)).map_err(|e| TargetError::Unreachable {
                server: server.clone(),
                context: context.to_string(),
                cause: e.to_string(),
            })?;
        let api_calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counter = api_calls.clone();
        let client = builder
            .with_layer(
                &tower::ServiceBuilder::new().map_request(move |request: http::Request<kube::client::Body>| {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    request
                }),
            )
            .build();
        let target = Target {
            client,
            api_calls,
            server,
            report,
            bundled,
        };
        target.ping(context).await?;
        Ok(target)
    }

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rstest::rstest;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: BTreeMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| vars.get(name).cloned()
    }

    fn service_account(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in files {
            std::fs::write(dir.path().join(f), format!("{f} content\n")).expect("write");
        }
        dir
    }

    #[test]
    fn in_a_pod_the_service_account_makes_the_kubeconfig() {
        let dir = service_account(&["token", "ca.crt", "namespace"]);
        let vars = env(&[
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ]);
        let kc = in_cluster_kubeconfig(&vars, dir.path()).expect("kubeconfig");
        let cluster = kc.clusters[0].cluster.as_ref().expect("cluster");
        assert_eq!(cluster.server.as_deref(), Some("https://10.96.0.1:443"));
        assert_eq!(
            cluster.certificate_authority.as_deref(),
            Some(dir.path().join("ca.crt").to_str().expect("utf-8"))
        );
        let user = kc.auth_infos[0].auth_info.as_ref().expect("user");
        assert_eq!(
            user.token_file.as_deref(),
            Some(dir.path().join("token").to_str().expect("utf-8"))
        );
        let context = kc.contexts[0].context.as_ref().expect("context");
        assert_eq!(context.namespace.as_deref(), Some("namespace content"));
        assert_eq!(kc.current_context.as_deref(), Some("in-cluster"));
        // IPv6 service addresses are bracketed.
        let v6 = env(&[
            ("KUBERNETES_SERVICE_HOST", "fd00::1"),
            ("KUBERNETES_SERVICE_PORT", "443"),
        ]);
        let kc = in_cluster_kubeconfig(&v6, dir.path()).expect("kubeconfig");
        assert_eq!(
            kc.clusters[0].cluster.as_ref().and_then(|c| c.server.as_deref()),
            Some("https://[fd00::1]:443")
        );
    }

    #[rstest]
    #[case::no_host(&[("KUBERNETES_SERVICE_PORT", "443")], &["token", "ca.crt"], "KUBERNETES_SERVICE_HOST is not set")]
    #[case::no_port(&[("KUBERNETES_SERVICE_HOST", "10.96.0.1")], &["token", "ca.crt"], "KUBERNETES_SERVICE_PORT is not set")]
    #[case::bad_port(&[("KUBERNETES_SERVICE_HOST", "h"), ("KUBERNETES_SERVICE_PORT", "https")], &["token", "ca.crt"], "is not a port")]
    #[case::no_token(&[("KUBERNETES_SERVICE_HOST", "h"), ("KUBERNETES_SERVICE_PORT", "443")], &["ca.crt"], "no service-account file")]
    fn outside_a_pod_it_says_why(#[case] vars: &[(&str, &str)], #[case] files: &[&str], #[case] why: &str) {
        let dir = service_account(files);
        let err = in_cluster_kubeconfig(&env(vars), dir.path()).expect_err("not a pod");
        assert!(err.contains(why), "{err}");
        assert!(err.contains("use --kubeconfig/--context"), "{err}");
    }
}
