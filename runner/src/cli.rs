//! The command line: raw arguments as clap parses them (validated into plans elsewhere).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Conformance and diagnostic harness for Kubernetes clusters that mix Linux and Windows nodes.
#[derive(Debug, Parser)]
#[command(name = "mixcheck", version, about, propagate_version = true)]
pub struct Cli {
    /// More logging on stderr (-v, -vv); MIXCHECK_LOG overrides it with a tracing filter.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The bundled mixed Linux/Windows cluster.
    #[command(subcommand)]
    Sim(SimCommand),
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Run the bundled cluster until interrupted, and write a kubeconfig for kubectl.
    Serve(ServeArgs),
    /// List the built-in cluster profiles (use one with `sim serve --profile NAME`).
    Profiles,
    /// List the faults a node can carry, with the symptom each produces.
    Faults,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Topology file (YAML); the built-in default cluster when omitted.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub topology: Option<PathBuf>,
    /// A built-in profile instead of a topology file (see `mixcheck sim profiles`).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Inject a fault on a node (repeatable), e.g. `--fault win2019-1:kubelet-stopped`.
    #[arg(long = "fault", value_name = "NODE:FAULT")]
    pub faults: Vec<String>,
    /// Address and port of the API server (loopback unless you name another address).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, value_name = "PATH", default_value = "mixcheck-sim.kubeconfig")]
    pub kubeconfig: PathBuf,
}
