//! The simulated nodes: their objects, images, registries and logs, the kube-system agents that run on them,
//! each node's kubelet (the pod plan and the process model), a Windows node's host as its
//! HostProcess containers see it, and what runs in a container when a command is exec'd in it.

pub mod addons;
pub mod exec;
pub mod forward;
pub(crate) mod hnslb;
pub(crate) mod host;
pub mod images;
pub mod kubelet;
pub mod logs;
pub mod nodelogs;
pub mod objects;
pub mod registry;
pub mod runtime;
pub mod stats;
pub(crate) mod winservices;

#[cfg(test)]
mod fault_matrix;
