//! The cluster under test: opening it ([`target::Target`]), reading its facts
//! ([`facts::ClusterFacts`]), the fixtures deployed into it ([`deploy::Deployment`]), the pods
//! a check creates ([`workload::Workloads`]) and the watch over them, progress on the terminal,
//! an in-cluster Job's results, and the fixture images pulled ahead of a run ([`prepull`]).

pub mod access;
pub mod admission;
pub mod agents;
pub mod budget;
pub mod chunks;
pub mod dataplane;
pub mod deploy;
pub mod duration;
pub mod facts;
pub mod fixture;
pub mod gmsa;
pub mod images;
pub mod job;
pub mod leftovers;
pub mod netpol;
pub mod podwatch;
pub mod prepull;
pub mod progress;
pub mod proxy;
pub mod pulls;
pub mod pullsecret;
pub mod reach;
pub mod registry;
pub mod scheduling;
pub mod signal;
pub mod startup;
pub mod target;
pub mod workload;
