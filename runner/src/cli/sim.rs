//! `mixcheck sim …`: runs the bundled cluster standalone.

use crate::cli::args::{ServeArgs, SimCommand};
use crate::cli::stdout::outln;
use crate::errors::{Code, Error};

pub async fn run(cmd: SimCommand) -> Result<Code, Error> {
    match cmd {
        SimCommand::Serve(args) => serve(args).await,
        SimCommand::Profiles => {
            profiles()?;
            Ok(Code::Passed)
        }
        SimCommand::Faults => {
            outln!("{:<32} {:<8} {:<31} SYMPTOM", "FAULT", "NODES", "RULE");
            for fault in simcluster::faults::ALL {
                let nodes = if fault.windows_only() { "windows" } else { "any" };
                outln!(
                    "{:<32} {nodes:<8} {:<31} {}",
                    fault.name(),
                    fault.rule(),
                    fault.symptom()
                );
            }
            Ok(Code::Passed)
        }
    }
}

fn profiles() -> Result<(), Error> {
    outln!(
        "{:<28} {:<9} {:<8} {:<6} DESCRIPTION",
        "PROFILE",
        "VERSION",
        "PLATFORM",
        "NODES"
    );
    for (name, _) in simcluster::PROFILES {
        let t = simcluster::Topology::profile(name)?;
        outln!(
            "{name:<28} {:<9} {:<8} {:<6} {}",
            t.kubernetes_version,
            t.platform.as_str(),
            t.nodes.len(),
            t.description
        );
    }
    Ok(())
}

/// Applies `--fault NODE:FAULT[@P]` flags to a topology.
pub(crate) fn apply_faults(topology: &mut simcluster::Topology, faults: &[String]) -> Result<(), Error> {
    for spec in faults {
        let (node, fault) = spec
            .split_once(':')
            .ok_or_else(|| Error::Usage(format!("--fault {spec:?}: expected NODE:FAULT")))?;
        simcluster::faults::Injected::parse(fault).map_err(|why| Error::Usage(format!("--fault {spec:?}: {why}")))?;
        if !topology.nodes.iter().any(|n| n.name == node) {
            return Err(Error::Usage(format!(
                "--fault {spec:?}: the topology has no node {node:?}"
            )));
        }
        // The topology's own check: the node's OS, the network mode, the pod network's plugin,
        // the platform and its dataplane (a fault a platform cannot have is refused, naming why).
        topology
            .add_fault(node, fault)
            .map_err(|why| Error::Usage(format!("--fault {spec:?}: {why}")))?;
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> Result<Code, Error> {
    let mut topology = match (&args.topology, &args.profile) {
        (Some(path), _) => simcluster::Topology::load(path)?,
        (None, Some(name)) => simcluster::Topology::profile(name)?,
        (None, None) => simcluster::Topology::default_cluster(),
    };
    apply_faults(&mut topology, &args.faults)?;
    // Its clients (mixcheck through a kubeconfig, kubectl) judge time on their own clock, as on
    // a real cluster: a served cluster runs on the wall clock, unless asked for another.
    let mut topology = topology.on_wall_clock();
    if let Some(scale) = args.time_scale {
        if !(scale.is_finite() && scale > 0.0 && scale <= 100.0) {
            return Err(Error::Usage(format!(
                "--time-scale {scale}: expected real seconds per second of the cluster's clock, above 0 and at most 100"
            )));
        }
        topology.timing.scale = scale;
    }
    let mut config = simcluster::ClusterConfig::new(topology.clone());
    config.listen = args.listen;
    // Handlers go in before anything tells a user (or a script) that the cluster is up.
    let interrupt = Interrupt::install();
    let cluster = simcluster::Cluster::start(config).await?;
    cluster
        .write_kubeconfig(&args.kubeconfig)
        .map_err(|e| Error::Failed(format!("the cluster is not usable without its kubeconfig: {e}")))?;
    let kubeconfig = std::path::absolute(&args.kubeconfig).unwrap_or_else(|_| args.kubeconfig.clone());
    outln!(
        "mixcheck bundled cluster {} ({}) is serving at {}",
        topology.name,
        topology.kubernetes_version,
        cluster.url()
    );
    for (name, ip) in cluster.node_ips() {
        let node = topology.nodes.iter().find(|n| &n.name == name);
        let os = node.map(|n| n.os.as_str()).unwrap_or("?");
        let image = node.map(|n| n.os_image()).unwrap_or_default();
        let faults = node.map(|n| n.faults.join(", ")).unwrap_or_default();
        if faults.is_empty() {
            outln!("  node {name:<16} {os:<8} {ip:<15} {image}");
        } else {
            outln!("  node {name:<16} {os:<8} {ip:<15} {image}  [faults: {faults}]");
        }
    }
    outln!("  network: {}", topology.network.mode.as_str());
    if let Some(scale) = args.time_scale {
        let pace = (100.0 / scale).round() / 100.0;
        outln!("  clock: {scale} real seconds per second of the cluster's ({pace} times the wall clock's pace)");
    }
    outln!(
        "kubeconfig written to {} (mode 0600); point kubectl at it with:",
        kubeconfig.display()
    );
    outln!("  export KUBECONFIG={}", kubeconfig.display());
    outln!("  kubectl get nodes -o wide");
    outln!("Press Ctrl-C to stop.");
    let mut cluster = cluster;
    let mut restart_signal = RestartSignal::install();
    let wait = interrupt.wait();
    tokio::pin!(wait);
    loop {
        tokio::select! {
            () = &mut wait => break,
            () = restart_signal.recv() => {
                // SIGUSR1: an API server restart (a control-plane upgrade), for testing clients.
                outln!("restarting the API server (SIGUSR1): down for {} s", API_RESTART_DOWN.as_secs());
                match cluster.restart_api_server(API_RESTART_DOWN).await {
                    Ok(()) => outln!("the API server is serving again"),
                    Err(e) => {
                        eprintln!("mixcheck: the API server did not come back: {e}");
                        break;
                    }
                }
            }
        }
    }
    outln!("stopping the bundled cluster");
    cluster.shutdown().await;
    let _ = std::fs::remove_file(&args.kubeconfig);
    Ok(Code::Passed)
}

/// How long the API server of `sim serve` is down when SIGUSR1 restarts it.
const API_RESTART_DOWN: std::time::Duration = std::time::Duration::from_secs(2);

/// SIGUSR1, which restarts the API server of `sim serve`, listened for from installation on (a
/// signal arriving during a restart is kept for the next turn).
struct RestartSignal {
    #[cfg(unix)]
    usr1: Option<tokio::signal::unix::Signal>,
}

impl RestartSignal {
    fn install() -> Self {
        Self {
            #[cfg(unix)]
            usr1: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).ok(),
        }
    }

    /// The next SIGUSR1 (never, where there is none).
    async fn recv(&mut self) {
        #[cfg(unix)]
        if let Some(s) = self.usr1.as_mut() {
            s.recv().await;
            return;
        }
        std::future::pending::<()>().await;
    }
}

/// Ctrl-C and, on Unix, SIGTERM, listened for from the moment of installation.
pub(crate) struct Interrupt {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    ctrl_c: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>>,
}

impl Interrupt {
    pub(crate) fn install() -> Self {
        // ctrl_c() registers its handler on first poll; poll it once now by boxing a started future.
        let mut ctrl_c: std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<()>> + Send>> =
            Box::pin(tokio::signal::ctrl_c());
        let waker = std::task::Waker::noop();
        let _ = ctrl_c.as_mut().poll(&mut std::task::Context::from_waker(waker));
        Self {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
            ctrl_c,
        }
    }

    pub(crate) async fn wait(mut self) {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            tokio::select! {
                _ = &mut self.ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = self.ctrl_c.await;
    }
}
