//! The outline of a parsed shell script, as the sh, cmd and PowerShell parsers of this module
//! give it to a container's main process ([`crate::node::kubelet::outcome`]): its statements
//! with how each joins the previous one, each a pipeline of commands whose words are already
//! split, unquoted and expanded, with where the command's standard output goes.

pub(crate) use super::plumbing::{Chain, skipped};

/// A script: its statements in order, each with how it joins the one before.
pub(crate) type Outline = Vec<(Chain, Statement)>;

/// One statement of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Statement {
    /// A pipeline of commands (one command when nothing is piped); `negate` for sh's `!`.
    Pipeline { commands: Vec<Command>, negate: bool },
    /// A variable assignment (sh `NAME=value`, PowerShell `$name = …`).
    Assign,
    /// A group of statements: sh `( … )` (a subshell: `exit` ends only the group) and
    /// `{ …; }`, cmd `( … )`.
    Group { body: Outline, subshell: bool },
    /// sh `if cond; then body; [elif cond; then body;]… [else body;] fi`.
    If {
        arms: Vec<(Outline, Outline)>,
        otherwise: Option<Outline>,
    },
    /// A compound statement the outline does not show (a PowerShell `if` whose condition it
    /// cannot evaluate, sh compounds inside a pipeline).
    Compound,
    /// A PowerShell statement evaluated as the outline was made
    /// ([`super::powershell::outline`]): the lines it printed (its output and its errors),
    /// whether it succeeded (`$?`), and the bytes it allocated and holds from then on.
    Evaluated { log: Vec<String>, ok: bool, holds: u128 },
}

/// One command of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// The words, split, unquoted and expanded the way the shell does it.
    pub(crate) words: Vec<String>,
    /// False when some argument is an expression the outline cannot show as a word
    /// (PowerShell script blocks, sub-expressions …): only the words before it are kept.
    pub(crate) complete: bool,
    /// cmd: the command's text as written (expanded, without its redirections), which cmd's
    /// `echo` prints from; empty for the other shells.
    pub(crate) raw: String,
    pub(crate) stdout: Stdout,
}

/// Where a command's standard output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stdout {
    /// The script's own output (the container's log).
    Inherit,
    /// `/dev/null`, `NUL`, `$null`.
    Discard,
    /// A file (`>`, or `>>` to append).
    File { target: String, append: bool },
}

impl Stdout {
    /// Where an output redirection to `target` sends standard output.
    pub(crate) fn to(target: &str, append: bool, windows: bool) -> Self {
        let lower = target.to_ascii_lowercase();
        if lower == "$null" || super::volumes::is_null_device(&lower, windows) {
            Self::Discard
        } else {
            Self::File {
                target: target.to_string(),
                append,
            }
        }
    }
}
