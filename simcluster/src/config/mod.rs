//! What a bundled cluster is made of: its topology (nodes, network, versions), the node
//! profiles each OS and release gets, the faults a node can carry and what its registries do
//! with pulls.

pub mod delegate;
pub mod faults;
pub mod platform;
pub mod policy_engine;
pub mod profile;
pub mod registry;
pub mod topology;
