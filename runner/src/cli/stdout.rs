//! Standard output for the commands: one locked write per piece of output, and a reader that
//! went away (`mixcheck images | head -1`) ends the output quietly — the command finishes, its
//! reports are written and its exit code stands — where `print!` would panic.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once standard output's reader has gone; later output is dropped.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to standard output. A closed pipe stops all later output silently; another
/// write error is said once on standard error.
pub fn write(text: &str) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = written {
        CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("mixcheck: cannot write to standard output: {e}");
        }
    }
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::stdout::write(&format!($($arg)*))
    };
}

/// `println!` through [`write`].
macro_rules! outln {
    () => {
        $crate::cli::stdout::write("\n")
    };
    ($($arg:tt)*) => {{
        let mut line = format!($($arg)*);
        line.push('\n');
        $crate::cli::stdout::write(&line)
    }};
}

pub(crate) use {out, outln};
