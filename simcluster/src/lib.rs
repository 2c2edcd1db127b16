//! The bundled mixed Linux/Windows Kubernetes cluster: an HTTPS API server with simulated nodes.

pub mod defaults;
pub mod patch;
pub mod registry;
pub mod selector;
pub mod status;
pub mod store;
