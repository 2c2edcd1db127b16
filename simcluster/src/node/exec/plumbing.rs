//! Shell plumbing shared by sh, cmd and PowerShell: chaining, redirections and where output goes.

use super::session::{Session, WriteError};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// Shell plumbing shared by sh, cmd and PowerShell
// ---------------------------------------------------------------------------------------------

/// How a pipeline is chained to the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chain {
    Always,
    And,
    Or,
}

pub(crate) fn skipped(chain: Chain, status: i32) -> bool {
    (chain == Chain::And && status != 0) || (chain == Chain::Or && status == 0)
}

/// Where an output stream ends up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sink {
    Out,
    Err,
    Null,
    /// The n-th file the command's redirections opened.
    File(usize),
}

/// The target of an output redirection: the n-th opened file, the null device, or another
/// descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RedirTo {
    File(usize),
    Null,
    Fd(u8),
}

/// Applies output redirections in order: where fd 1 and fd 2 end up.
pub(super) fn route(redirs: &[(u8, RedirTo)]) -> [Sink; 2] {
    let mut sinks = [Sink::Out, Sink::Err];
    for (fd, to) in redirs {
        let Some(slot) = fd.checked_sub(1).map(usize::from).filter(|i| *i < 2) else {
            continue;
        };
        sinks[slot] = match to {
            RedirTo::File(n) => Sink::File(*n),
            RedirTo::Null => Sink::Null,
            RedirTo::Fd(1) => sinks[0],
            RedirTo::Fd(2) => sinks[1],
            RedirTo::Fd(_) => continue,
        };
    }
    sinks
}

/// Output files a command opened: (path as given, append), and what it wrote to each.
#[derive(Debug, Default)]
pub(super) struct Opened {
    pub(super) files: Vec<(String, bool)>,
    pub(super) written: Vec<Vec<u8>>,
}

impl Opened {
    /// Opens every file before the command runs, as shells do (`>` truncates, `>>` creates):
    /// the first that cannot be opened stops the command, with its path and why.
    pub(super) fn open(s: &Session, files: Vec<(String, bool)>) -> Result<Self, (String, WriteError)> {
        for (path, append) in &files {
            s.write_file(path, b"", *append).map_err(|e| (path.clone(), e))?;
        }
        let written = vec![Vec::new(); files.len()];
        Ok(Self { files, written })
    }

    /// Appends what the command wrote to each file.
    pub(super) fn close(self, s: &Session) {
        for ((path, _), data) in self.files.iter().zip(self.written) {
            if !data.is_empty() {
                // Opening succeeded, so writing can only fail if the tree changed meanwhile.
                let _ = s.write_file(path, &data, true);
            }
        }
    }
}

pub(super) fn deliver(
    o: ExecOutput,
    sinks: [Sink; 2],
    stdout: &mut Vec<u8>,
    stderr: &mut Vec<u8>,
    opened: &mut Opened,
) {
    for (bytes, sink) in [(o.stdout, sinks[0]), (o.stderr, sinks[1])] {
        match sink {
            Sink::Out => stdout.extend(bytes),
            Sink::Err => stderr.extend(bytes),
            Sink::Null => {}
            Sink::File(n) => {
                if let Some(buf) = opened.written.get_mut(n) {
                    buf.extend(bytes);
                }
            }
        }
    }
}
