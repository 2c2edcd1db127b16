//! The shared vocabulary every part of the bundled cluster may use: stable hashing, JSON
//! getters and Kubernetes quantities.

pub mod hash;
pub mod image;
pub mod ipv6;
pub mod json;
pub mod names;
pub mod pod;
pub mod quantity;
pub mod schedule;
