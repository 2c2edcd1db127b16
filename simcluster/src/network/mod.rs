//! The simulated network: the fabric (facts and the decision for every flow), the snapshot of
//! the store it reads, the [`wire`] through which clients on nodes reach it, the simulated apps
//! that answer (netexec, web servers, CoreDNS), cluster DNS, and the real listeners for
//! NodePorts and hostPorts, with the firewall in front of private node addresses.

pub mod apps;
pub mod dns;
pub mod dualstack;
pub mod fabric;
pub mod firewall;
pub mod listeners;
pub mod snapshot;
pub mod versions;
pub mod wire;
