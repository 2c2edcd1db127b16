//! simcluster's integration tests, one binary (one link on a small machine). Each module drives
//! an in-process bundled cluster through its API, as a client would:
//!
//! - `kube_client` — kube-rs: typed CRUD, selectors, patches, watches, errors, exec and logs
//! - `api_calls` — the scale subresource, access and rules reviews, Jobs
//! - `cronjobs` — CronJobs on the simulated clock: Forbid, suspend, history limits
//! - `services` — ClusterIP/NodePort allocation, Endpoints and EndpointSlices
//! - `nodes` — scheduling, controllers, kubelet and Windows admission rules
//! - `realism` — real-cluster behaviours a topology switches on (policy, maxPods, pulls, transient events, node reachability)
//! - `registries` — registries that want credentials or do not resolve, pull secrets, mirrors
//! - `volumes` — emptyDir, readOnly mounts, hostPath
//! - `kube_system` — the add-ons a real cluster of each profile shows
//! - `faults` — kubelet-side node faults and the node log proxy
//! - `network_faults` — network node faults seen from exec'd commands
//! - `platforms` — GKE Dataplane V2 without kube-proxy, egress ports, unreachable load balancers
//! - `protobuf` — protobuf request bodies store what their JSON stores
//! - `robustness` — bad input never panics
//! - `rbac` — deploy/rbac.yaml, TokenRequest tokens, RBAC enforcement and its 403s, impersonation
//! - `kubectl` — the real kubectl CLI (ignored without kubectl)

mod common;

mod api_calls;
mod cooling;
mod cronjobs;
mod faults;
mod kube_client;
mod kube_system;
mod kubectl;
mod network_faults;
mod nodes;
mod platforms;
mod protobuf;
mod rbac;
mod realism;
mod registries;
mod robustness;
mod services;
mod volumes;
