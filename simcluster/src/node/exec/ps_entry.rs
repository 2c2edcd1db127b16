//! The PowerShell entry points (`powershell`, `pwsh`): arguments, encoded commands, and the
//! interpreter in [`super::powershell`].

use std::sync::Arc;

use super::session::Session;
use super::support::{b64_decode, out};
use super::{Call, Reply};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// PowerShell (Windows PowerShell and PowerShell Core)
// ---------------------------------------------------------------------------------------------

pub(super) fn powershell(s: &Arc<Session>, call: Call) -> Reply {
    ps_entry(s, call, false)
}

pub(super) fn pwsh(s: &Arc<Session>, call: Call) -> Reply {
    ps_entry(s, call, true)
}

/// `-EncodedCommand`: base64 of UTF-16LE.
pub(super) fn decode_encoded_command(text: &str) -> String {
    let bytes = b64_decode(text);
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|p| u16::from_le_bytes([p[0], p[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// What `powershell`/`pwsh` is asked to run, read from its arguments (after the program name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PsEntry {
    /// `-Command …`, `-EncodedCommand …` (decoded), or the command as plain arguments; `-`
    /// reads the script from stdin.
    Script(String),
    /// `-File path`.
    File(String),
    /// No script: an interactive shell (or a script on stdin).
    Interactive,
}

/// Reads PowerShell's arguments: `[-NoProfile] [-NonInteractive] [-ExecutionPolicy P]
/// -Command …` (or `-EncodedCommand`, `-File`, or the command as plain arguments).
pub(crate) fn ps_args(args: &[String]) -> PsEntry {
    const VALUED: &[&str] = &[
        "-executionpolicy",
        "-ep",
        "-ex",
        "-inputformat",
        "-outputformat",
        "-windowstyle",
        "-configurationname",
        "-workingdirectory",
        "-settingsfile",
        "-version",
    ];
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let lower = a.to_ascii_lowercase();
        let rest = args.get(i + 1..).unwrap_or(&[]);
        if lower == "-c" || lower.starts_with("-com") || lower == "/c" || lower == "/command" {
            return PsEntry::Script(rest.join(" "));
        }
        if lower == "-e" || lower == "-ec" || lower.starts_with("-enc") {
            return match rest.first() {
                Some(t) => PsEntry::Script(decode_encoded_command(t)),
                None => PsEntry::Interactive,
            };
        }
        if lower == "-f" || lower == "-file" {
            return PsEntry::File(rest.first().cloned().unwrap_or_default());
        }
        if VALUED.contains(&lower.as_str()) {
            i += 2;
            continue;
        }
        if !lower.starts_with('-') {
            return PsEntry::Script(args.get(i..).unwrap_or(&[]).join(" "));
        }
        i += 1;
    }
    PsEntry::Interactive
}

/// `powershell …`/`pwsh …` as [`ps_args`] reads them.
pub(super) fn ps_entry(s: &Arc<Session>, mut call: Call, core: bool) -> Reply {
    let script = match ps_args(call.args()) {
        PsEntry::Script(text) => Some(text),
        PsEntry::File(path) => match s.disk().get(&s.path(&path)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => Some(String::from_utf8_lossy(data).into_owned()),
            None => {
                return out(
                    "",
                    format!(
                        "The argument '{path}' to the -File parameter does not exist. Provide the path to an \
                        existing '.ps1' file as an argument to the -File parameter.\r\n"
                    ),
                    // Windows PowerShell exits with 0xFFFD0000.
                    if core { 64 } else { -196_608 },
                )
                .into();
            }
        },
        PsEntry::Interactive => None,
    };
    let script = match script.as_deref() {
        Some("-") => String::from_utf8_lossy(&call.stdin).into_owned(),
        Some(_) => script.unwrap_or_default(),
        None if !call.stdin.is_empty() => String::from_utf8_lossy(&call.stdin).into_owned(),
        None => {
            let banner = if core {
                "PowerShell 6.2.7\r\nCopyright (c) Microsoft Corporation. All rights reserved.\r\n\r\n"
            } else {
                "Windows PowerShell\r\nCopyright (C) Microsoft Corporation. All rights reserved.\r\n\r\n"
            };
            return ExecOutput::ok(format!("{banner}PS {}> ", s.cwd())).into();
        }
    };
    let progress = !core && s.ctx.host_process && first_use_progress(call.args(), &script);
    let run = super::powershell::run(s.clone(), script, call.take_env(s), core);
    if !progress {
        return Reply::Later(Box::pin(run));
    }
    Reply::Later(Box::pin(async move {
        let mut o = run.await;
        let mut stderr = FIRST_USE_PROGRESS.as_bytes().to_vec();
        stderr.extend(o.stderr);
        o.stderr = stderr;
        o
    }))
}

/// What a non-interactive Windows PowerShell writes to stderr when a script loads a module for
/// the first time: the progress record "Preparing modules for first use." serialized as CLIXML
/// (inspec/train#153, from `powershell -Command` over WinRM; the exit code stays 0).
pub(crate) const FIRST_USE_PROGRESS: &str = "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\"><Obj S=\"progress\" RefId=\"0\"><TN RefId=\"0\"><T>System.Management.Automation.PSCustomObject</T><T>System.Object</T></TN><MS><I64 N=\"SourceId\">1</I64><PR N=\"Record\"><AV>Preparing modules for first use.</AV><AI>0</AI><Nil /><PI>-1</PI><PC>-1</PC><T>Completed</T><SR>-1</SR><SD> </SD></PR></MS></Obj></Objs>";

/// Whether Windows PowerShell on a host prints [`FIRST_USE_PROGRESS`] for this script: it imports
/// a module (`Import-Module`/`ipmo`), the shell was started with a profile (inspec/train#153:
/// `-NoProfile` is what kept the text away there), and the script did not first set
/// `$ProgressPreference` to `SilentlyContinue` or `Ignore` (PowerShell/PowerShell#20725: the
/// preference variable silences the module-loading progress where `-ProgressAction` does not;
/// inspec/train#153 reports SilentlyContinue not helping in its case — modelled as helping,
/// the documented meaning of the preference).
fn first_use_progress(args: &[String], script: &str) -> bool {
    if args
        .iter()
        .any(|a| a.eq_ignore_ascii_case("-noprofile") || a.eq_ignore_ascii_case("-nop"))
    {
        return false;
    }
    let lower = script.to_ascii_lowercase();
    let Some(import) = ["import-module", "ipmo "].iter().filter_map(|w| lower.find(w)).min() else {
        return false;
    };
    let before: String = lower[..import].chars().filter(|c| !c.is_whitespace()).collect();
    ![
        "$progresspreference='silentlycontinue'",
        "$progresspreference=\"silentlycontinue\"",
        "$progresspreference='ignore'",
        "$progresspreference=\"ignore\"",
    ]
    .iter()
    .any(|set| before.contains(set))
}
