//! What the examples share: finding the mixcheck binary they run.

use std::path::{Path, PathBuf};

/// `MIXCHECK_BIN`, else the binary next to the running example (`target/release/mixcheck` when
/// built with `--release`).
pub fn mixcheck() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("MIXCHECK_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target directory")?;
    let bin = dir.join("mixcheck");
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is missing: run `cargo build --release -p mixcheck` first",
            bin.display()
        ))
    }
}
