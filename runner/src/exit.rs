//! The exit codes, in one documented place (DESIGN.md): 0 gate passed · 1 some check failed or
//! errored · 2 bad usage, suite, fixture or config · 3 cluster unreachable or unauthorised ·
//! 4 no check selected · 130 interrupted (after cleanup).
//!
//! Each error type of the harness says which code it ends a command with (`exit_code`); the
//! binary's edge (`exit_code_of` in `main.rs`) asks the error that ended a command.

/// A process exit code of mixcheck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    Passed = 0,
    Failed = 1,
    Usage = 2,
    Unreachable = 3,
    NothingSelected = 4,
    Interrupted = 130,
    /// Not a documented outcome: the harness itself broke (reported as a failure).
    Internal = 70,
}

impl From<Code> for std::process::ExitCode {
    fn from(c: Code) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}
