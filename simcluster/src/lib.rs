//! The bundled mixed Linux/Windows Kubernetes cluster: an HTTPS API server that kubectl and
//! kube-rs drive, with simulated nodes behind it.
//!
//! Start one with [`Cluster::start`]; point clients at [`Cluster::kubeconfig`].

pub(crate) mod api;
pub(crate) mod cluster;
pub(crate) mod config;
pub(crate) mod control;
pub(crate) mod network;
pub(crate) mod node;
pub(crate) mod store;
pub(crate) mod vocab;

pub use cluster::{Cluster, ClusterConfig, ClusterError};
pub use config::faults::{self, Fault};
pub use config::platform::{Dataplane, NetworkMode, Os, Platform, PodNetwork};
pub use config::profile::{NodeProfile, profiles};
pub use config::topology::{Admission, DEFAULT_TOPOLOGY, Enforcement, PROFILES, Privilege, Topology, TopologyError};
pub use vocab::quantity::Quantity;

/// The parts below the façade that this crate's benchmarks (`examples/`) and integration tests
/// drive directly. Not a stable API.
#[doc(hidden)]
pub mod internals {
    pub use crate::api::MAX_BODY;
    pub use crate::network::{apps, dns, fabric, snapshot, wire};
    pub use crate::node::exec::CommandContext;
    pub use crate::node::kubelet::outcome::container_id;
    pub use crate::node::kubelet::transient;
    pub use crate::store::api_error::ApiError;
    pub use crate::store::{Obj, Part, Store, StoreConfig, resources};
}
