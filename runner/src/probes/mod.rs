//! The probe kinds: how each kind builds its command, observes and is judged.

pub mod audit;
pub mod expectation;
pub mod logs;
pub mod transport;
