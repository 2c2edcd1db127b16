//! The control plane's loops over the store: the scheduler, the workload controllers, a cloud's
//! load-balancer controller and the events they record.

pub mod controllers;
pub mod events;
pub mod loadbalancer;
pub mod scheduler;
