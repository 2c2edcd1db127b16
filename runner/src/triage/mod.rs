//! Triage of a run's failing cells: the diagnosis ([`diagnose::diagnose`], ranking the causes
//! of the cause catalogue), the evidence it reads through the API, node diagnostics
//! (`--node-diagnostics`; [`outcome`] and [`nodevars`] are how its commands run and where they
//! look) and the evidence bundle (`--bundle`).

pub mod bundle;
pub mod diagnose;
pub mod diagnostics;
pub mod evidence;
pub mod nodevars;

#[cfg(test)]
mod healthy_tests;
