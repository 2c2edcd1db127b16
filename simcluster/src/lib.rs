//! The bundled mixed Linux/Windows Kubernetes cluster: an HTTPS API server that kubectl and
//! kube-rs drive, with simulated nodes behind it.
//!
//! Start one with [`Cluster::start`]; point clients at [`Cluster::kubeconfig`].

pub mod api;
pub mod cluster;
pub mod config;
pub mod control;
pub mod network;
pub mod node;
pub mod store;
pub mod vocab;

pub use cluster::{Cluster, ClusterConfig, ClusterError};
pub use config::topology::Topology;
