//! The control plane's loops over the store: the scheduler, the workload controllers and the
//! events they record.

pub mod controllers;
pub mod events;
pub mod scheduler;
