//! `mixcheck sim …`: runs the bundled cluster standalone.

use anyhow::Context as _;

use crate::cli::{ServeArgs, SimCommand};
use crate::exit::Code;

pub async fn run(cmd: SimCommand) -> anyhow::Result<Code> {
    match cmd {
        SimCommand::Serve(args) => serve(args).await,
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<Code> {
    let topology = match &args.topology {
        Some(path) => simcluster::Topology::load(path)?,
        None => simcluster::Topology::default_cluster(),
    };
    let mut config = simcluster::ClusterConfig::new(topology.clone());
    config.listen = args.listen;
    let cluster = simcluster::Cluster::start(config).await?;
    cluster
        .write_kubeconfig(&args.kubeconfig)
        .with_context(|| "the cluster is not usable without its kubeconfig")?;
    let kubeconfig = std::path::absolute(&args.kubeconfig).unwrap_or_else(|_| args.kubeconfig.clone());
    println!(
        "mixcheck bundled cluster {:?} ({}) is serving at {}",
        topology.name,
        topology.kubernetes_version,
        cluster.url()
    );
    for (name, ip) in cluster.node_ips() {
        let node = topology.nodes.iter().find(|n| &n.name == name);
        let os = node.map(|n| n.os.as_str()).unwrap_or("?");
        let image = node.map(|n| n.os_image()).unwrap_or_default();
        println!("  node {name:<16} {os:<8} {ip:<15} {image}");
    }
    println!(
        "kubeconfig written to {} (mode 0600); point kubectl at it with:",
        kubeconfig.display()
    );
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl get nodes -o wide");
    println!("Press Ctrl-C to stop.");
    wait_for_interrupt().await;
    println!("stopping the bundled cluster");
    cluster.shutdown().await;
    let _ = std::fs::remove_file(&args.kubeconfig);
    Ok(Code::Passed)
}

async fn wait_for_interrupt() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
