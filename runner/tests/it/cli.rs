//! What the command-line tests share: the built binary run in a folder of the test's own, with
//! no kubeconfig or job summary from the environment, and its output as one text.

use std::path::Path;
use std::process::{Command, Output};

/// `mixcheck` in `dir`, without `KUBECONFIG` or `GITHUB_STEP_SUMMARY` from the environment.
pub(crate) fn mixcheck(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mixcheck"));
    cmd.current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// Standard output, then standard error.
pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
