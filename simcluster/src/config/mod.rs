//! What a bundled cluster is made of: its topology (nodes, network, versions), the node
//! profiles each OS and release gets, and the faults a node can carry.

pub mod faults;
pub mod platform;
pub mod profile;
pub mod topology;
