//! The cluster a run checks: the bundled cluster started in-process on a free loopback port,
//! or a real cluster named by a kubeconfig and context. Either way the run gets one kube client
//! with timeouts, and nothing else: every observation goes through the Kubernetes API.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::cluster::proxy::{self, ChosenProxy, ProxyEnv};

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
    #[error("{}", unreachable(.server, .context, .cause, .proxy.as_deref()))]
    Unreachable {
        server: String,
        context: String,
        cause: String,
        /// The proxy the client went through, if any.
        proxy: Option<Box<ChosenProxy>>,
    },
}

fn unreachable(server: &str, context: &str, cause: &str, proxy: Option<&ChosenProxy>) -> String {
    let credentials = format!(
        "the context ({context}), and that the credentials are still valid (`kubectl --context {context} version`)"
    );
    match proxy {
        None => format!(
            "cannot reach the cluster at {server}: {cause}\n  check: the kubeconfig's server address and network path, {credentials}"
        ),
        Some(p) => format!(
            "cannot reach the cluster at {server} through the proxy {p}: {cause}\n  check: that the proxy answers and allows CONNECT to the server (or exempt the server with NO_PROXY, as for kubectl), {credentials}"
        ),
    }
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
    /// The proxy the API client goes through, if any.
    pub proxy: Option<ChosenProxy>,
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
            let config = load(kubeconfig, &KubeConfigOptions::default(), "(bundled cluster)").await?;
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
            let config = load(
                (**kubeconfig).clone(),
                &KubeConfigOptions::default(),
                "(in-cluster service account)",
            )
            .await?;
            let server = config.kube.cluster_url.to_string();
            say(&format!(
                "Target: {server}{} (in-cluster, the pod's service account)",
                config.via()
            ));
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
            let kc = match path {
                Some(p) => Kubeconfig::read_from(p),
                None => Kubeconfig::read(),
            }
            .map_err(|e| TargetError::Kubeconfig {
                path: shown.clone(),
                message: kubeconfig_problem(&e),
            })?;
            let config = load(kc, &options, &shown).await?;
            let server = config.kube.cluster_url.to_string();
            let context_name = context.clone().unwrap_or_else(|| "current-context".into());
            say(&format!(
                "Target: {server}{} (context {context_name}, from {shown})",
                config.via()
            ));
            let report = mixcheck_reports::Target::Kubeconfig {
                context: context_name.clone(),
                server: server.clone(),
            };
            Target::open(config, server, &context_name, report, None).await
        }
    }
}

/// The client configuration of `kc`'s context (the current one unless `options` names one),
/// with the proxy chosen as kubectl chooses it ([`proxy::choose`]), not as kube-rs would.
/// `shown` names the kubeconfig in errors.
async fn load(kc: Kubeconfig, options: &KubeConfigOptions, shown: &str) -> Result<Config, TargetError> {
    let bad = |message: String| TargetError::Kubeconfig {
        path: shown.to_string(),
        message,
    };
    let cluster = selected_cluster(&kc, options);
    let named_proxy = cluster.as_ref().and_then(|c| c.proxy_url.clone());
    let mut config = match kube::Config::from_custom_kubeconfig(kc.clone(), options).await {
        Ok(c) => c,
        // kube-rs parses NO_PROXY itself, more strictly than Go (an empty entry, a trailing
        // comma); the proxy is chosen here anyway, so build the same configuration without it.
        Err(kube::config::KubeconfigError::ParseNoProxy(_)) => {
            let cluster = cluster.ok_or_else(|| bad("the context names no cluster".into()))?;
            without_environment(&kc, options, &cluster).map_err(bad)?
        }
        Err(e) => return Err(bad(kubeconfig_problem(&e))),
    };
    let chosen = proxy::choose(&config.cluster_url, named_proxy.as_deref(), &ProxyEnv::from_process())
        .map_err(|e| bad(e.to_string()))?;
    config.proxy_url = chosen.as_ref().map(|c| c.url.clone());
    Ok(Config {
        kube: config,
        proxy: chosen,
    })
}

/// A kube configuration and the proxy chosen for it.
pub struct Config {
    kube: kube::Config,
    proxy: Option<ChosenProxy>,
}

impl Config {
    /// ` through the proxy …` when there is one, for the progress line.
    fn via(&self) -> String {
        self.proxy
            .as_ref()
            .map(|p| format!(" through the proxy {p}"))
            .unwrap_or_default()
    }
}

/// The cluster entry `options` (or the current context) selects.
fn selected_cluster(kc: &Kubeconfig, options: &KubeConfigOptions) -> Option<kube::config::Cluster> {
    let context_name = options.context.clone().or_else(|| kc.current_context.clone())?;
    let context = kc
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())?;
    let cluster_name = options.cluster.clone().unwrap_or_else(|| context.cluster.clone());
    kc.clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.clone())
}

/// The configuration kube-rs builds from a kubeconfig (`Config::new_from_loader`), built here
/// without reading the proxy variables: server, namespace, CA bundle, TLS options, user.
fn without_environment(
    kc: &Kubeconfig,
    options: &KubeConfigOptions,
    cluster: &kube::config::Cluster,
) -> Result<kube::Config, String> {
    use base64::Engine as _;
    use rustls::pki_types::{CertificateDer, pem::PemObject as _};
    let server = cluster.server.as_deref().ok_or("the cluster has no server")?;
    let mut config = kube::Config::new(server.parse().map_err(|e| format!("server {server:?}: {e}"))?);
    let context_name = options.context.clone().or_else(|| kc.current_context.clone());
    let context = kc
        .contexts
        .iter()
        .find(|c| Some(&c.name) == context_name.as_ref())
        .and_then(|c| c.context.as_ref());
    if let Some(ns) = context.and_then(|c| c.namespace.clone()) {
        config.default_namespace = ns;
    }
    let user_name = options.user.clone().or_else(|| context.and_then(|c| c.user.clone()));
    if let Some(user) = kc
        .auth_infos
        .iter()
        .find(|u| Some(&u.name) == user_name.as_ref())
        .and_then(|u| u.auth_info.clone())
    {
        config.auth_info = user;
    }
    config.accept_invalid_certs = cluster.insecure_skip_tls_verify.unwrap_or(false);
    config.disable_compression = cluster.disable_compression.unwrap_or(false);
    config.tls_server_name = cluster.tls_server_name.clone();
    let pem = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| format!("certificate-authority-data: {e}"))?,
        ),
        (None, Some(file)) => Some(std::fs::read(file).map_err(|e| format!("certificate-authority {file}: {e}"))?),
        (None, None) => None,
    };
    if let Some(pem) = pem {
        let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(&pem)
            .map(|c| c.map(|c| c.to_vec()))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("certificate authority: {e}"))?;
        config.root_cert = Some(certs);
    }
    Ok(config)
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
        config: Config,
        server: String,
        context: &str,
        report: mixcheck_reports::Target,
        bundled: Option<simcluster::Cluster>,
    ) -> Result<Target, TargetError> {
        let proxy = config.proxy;
        let builder = kube::client::ClientBuilder::try_from(with_timeouts(config.kube)).map_err(|e| {
            TargetError::Unreachable {
                server: server.clone(),
                context: context.to_string(),
                cause: e.to_string(),
                proxy: proxy.clone().map(Box::new),
            }
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
            proxy,
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
            proxy: self.proxy.clone().map(Box::new),
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
