//! The bundled mixed Linux/Windows Kubernetes cluster: an HTTPS API server that kubectl and
//! kube-rs drive, with simulated nodes behind it.
//!
//! Start one with [`Cluster::start`]; point clients at [`Cluster::kubeconfig`].

pub mod addons;
pub mod admission;
pub mod api;
pub mod authorization;
pub mod cluster;
pub mod commands;
pub mod controllers;
pub mod defaults;
pub mod discovery;
pub mod dns;
pub mod events;
pub mod eviction;
pub mod fabric;
pub mod faults;
pub mod hash;
pub mod images;
pub mod kubeconfig;
pub mod kubelet;
pub mod listeners;
pub mod logs;
pub mod netcmd;
pub mod netstate;
pub mod network;
pub mod node;
pub mod nodelogs;
pub mod openapi;
pub mod outcome;
pub mod patch;
pub mod pointer;
pub mod profile;
pub mod protobuf;
pub mod quantity;
pub mod registry;
pub mod runtime;
pub mod scheduler;
pub mod selector;
pub mod servers;
pub mod services;
pub mod status;
pub mod store;
pub mod table;
pub mod tls;
pub mod topology;
pub mod validation;
pub mod volumes;

pub use cluster::{Cluster, ClusterConfig, ClusterError};
pub use topology::Topology;
