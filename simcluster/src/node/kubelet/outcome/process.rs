//! The process model: what a container's main process does with its command line over time —
//! log lines, an exit after some time, or running on: sleeps, exits, memory tools, agnhost and
//! web servers. Shell text (`sh -c`, `cmd /c`, `powershell -Command`) is parsed by the exec'd
//! shells of [`crate::node::exec`] (their outlines, [`crate::node::exec::outline`]); this module
//! runs the outlined statements over simulated time.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::{FileWrite, ImageInfo, WINDOWS_ROOT_USER};
use crate::config::platform::Os;
use crate::node::exec::outline::{Command, Outline, Statement, Stdout, skipped};
use crate::node::exec::{cmd, echo, powershell, ps_entry, sh};
use crate::node::runtime::Process;
use crate::vocab::quantity::Quantity;

// ---------------------------------------------------------------------------------------------
// The process model.

/// Sleeps this long or longer count as "forever".
pub(super) const FOREVER_MS: u64 = 24 * 60 * 60 * 1000;
/// How deep shells may nest (`sh -c "cmd /c …"`).
pub(super) const MAX_DEPTH: usize = 8;
/// At most this many generated log lines.
pub(super) const MAX_LOG_LINES: u64 = 10_000;
pub(super) const MIB: u128 = 1024 * 1024;

/// What the process model needs to know about the container.
pub(super) struct ProcCtx {
    pub(super) os: Os,
    /// The effective Windows user.
    pub(super) user: Option<String>,
    /// The effective Linux `runAsUser`.
    pub(super) linux_uid: Option<i64>,
    pub(super) hostname: String,
    /// The node, when the container is a HostProcess container (SEC-HOSTPROCESS): its processes
    /// are the host's.
    pub(super) host_node: Option<crate::config::profile::NodeProfile>,
    pub(super) env: BTreeMap<String, String>,
    /// The container's memory limit in bytes.
    pub(super) limit: Option<u128>,
    pub(super) node_memory: Option<u128>,
    pub(super) stdin: bool,
    /// The container's mounts: where a redirection writes, and which refuse it.
    pub(super) mounts: Vec<crate::node::exec::volumes::MountPoint>,
    /// What the process wrote so far (redirections to files).
    pub(super) writes: RefCell<Vec<FileWrite>>,
}

impl ProcCtx {
    pub(super) fn windows(&self) -> bool {
        self.os == Os::Windows
    }

    /// The absolute path a redirection target names (relative to `/` or `C:\\`).
    pub(super) fn target_path(&self, target: &str) -> String {
        crate::node::exec::volumes::absolute(target, self.windows())
    }

    /// Why writing `target` fails (the shell's message), if it does: a read-only mount
    /// (STO-READONLY-VOLUME: cmd answers `Access is denied.`, as upstream's e2e asserts).
    pub(super) fn refused_write(&self, shell: Shell, target: &str) -> Option<String> {
        use crate::node::exec::volumes::{WriteTarget, Writer, resolve};
        let full = self.target_path(target);
        let writer = Writer {
            pod_uid: "",
            container: "",
            node: "",
            windows: self.windows(),
            host_process: false,
        };
        if resolve(&self.mounts, &full, writer) != WriteTarget::ReadOnly {
            return None;
        }
        Some(match (shell, self.windows()) {
            (Shell::Cmd, _) => "Access is denied.".into(),
            (Shell::Ps, _) => format!("out-file : Access to the path '{full}' is denied."),
            (Shell::Sh, false) => format!("sh: can't create {target}: Read-only file system"),
            (Shell::Sh, true) => format!("sh: can't create {target}: Permission denied"),
        })
    }

    /// Records that a statement's output lines went to `target`.
    pub(super) fn record_write(&self, target: &str, lines: &[String], append: bool) {
        let eol = if self.windows() { "\r\n" } else { "\n" };
        let data: String = lines.iter().map(|l| format!("{l}{eol}")).collect();
        self.writes.borrow_mut().push(FileWrite {
            path: self.target_path(target),
            data: data.into_bytes(),
            append,
        });
    }

    /// The environment a shell expands variables from: the container's, with the variables
    /// the OS sets (`HOSTNAME`; Windows `COMPUTERNAME`, `USERNAME`; Linux `HOME`).
    pub(super) fn vars(&self) -> Vec<(String, String)> {
        let mut vars: Vec<(String, String)> = self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for name in ["HOSTNAME", "COMPUTERNAME", "USERNAME", "HOME"] {
            if !self.env.contains_key(name)
                && let Some(value) = self.var(name)
            {
                vars.push((name.to_string(), value));
            }
        }
        vars
    }

    pub(super) fn var(&self, name: &str) -> Option<String> {
        if let Some(v) = self.env.get(name) {
            return Some(v.clone());
        }
        match (self.os, name.to_ascii_uppercase().as_str()) {
            (_, "HOSTNAME") => Some(self.hostname.clone()),
            // The host name in upper case, cut to 15 characters (the NetBIOS name), as the
            // exec'd shells see it.
            (Os::Windows, "COMPUTERNAME") => Some(self.hostname.to_uppercase().chars().take(15).collect()),
            (Os::Windows, "USERNAME") => self
                .user
                .as_deref()
                .map(|u| u.rsplit('\\').next().unwrap_or(u).to_string()),
            (Os::Linux, "HOME") => Some(if self.linux_uid.unwrap_or(0) == 0 { "/root" } else { "/" }.into()),
            _ => None,
        }
    }

    /// What `whoami` prints (and its exit code).
    pub(super) fn whoami(&self) -> (i32, String) {
        match self.os {
            Os::Windows => {
                let user = self.user.as_deref().unwrap_or(WINDOWS_ROOT_USER);
                let shown = if user.contains('\\') {
                    user.to_ascii_lowercase()
                } else {
                    format!("user manager\\{}", user.to_ascii_lowercase())
                };
                (0, shown)
            }
            Os::Linux => match self.linux_uid {
                None | Some(0) => (0, "root".into()),
                Some(uid) => (1, format!("whoami: unknown uid {uid}")),
            },
        }
    }
}

/// How a simple command or script ended, before it becomes a [`Process`].
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Eval {
    /// Finished with `code` after `ms`; `exit` when it ends the whole script.
    Ran {
        code: i32,
        ms: u64,
        log: Vec<String>,
        exit: bool,
    },
    Forever {
        log: Vec<String>,
    },
    /// Cannot be interpreted: modelled as running (a server we cannot read).
    Unknown,
    /// A terminal memory outcome (OOM kill or failed allocation).
    Memory(Process),
}

pub(super) fn ran(code: i32, ms: u64, log: Vec<String>) -> Eval {
    Eval::Ran {
        code,
        ms,
        log,
        exit: false,
    }
}

/// Which shell's syntax a script uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shell {
    /// POSIX sh (also used for argv executed directly).
    Sh,
    Cmd,
    Ps,
}

/// `C:\Windows\System32\cmd.exe` → `cmd`.
pub(super) fn program(arg: &str) -> String {
    let base = arg.rsplit(['/', '\\']).next().unwrap_or(arg).to_ascii_lowercase();
    base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
}

/// The entrypoint an image prepends to `args` when the container gives no `command`.
pub(super) fn entrypoint(repo: &str, os: Os) -> Option<Vec<String>> {
    let last = repo.rsplit('/').next().unwrap_or(repo);
    match last {
        "agnhost" => Some(vec!["/agnhost".into()]),
        "busybox" if repo.contains("e2e-test-images") && os == Os::Windows => {
            Some(vec!["cmd.exe".into(), "/s".into(), "/c".into()])
        }
        "pause" => Some(vec!["/pause".into()]),
        "resource-consumer" => Some(vec!["/consumer".into()]),
        _ => None,
    }
}

pub(super) fn process_of(
    ctx: &ProcCtx,
    info: &ImageInfo,
    repo: &str,
    command: Option<Vec<String>>,
    args: Option<Vec<String>>,
) -> Process {
    let command = command.filter(|c| !c.is_empty());
    let args = args.unwrap_or_default();
    let argv = match (command, entrypoint(repo, ctx.os)) {
        (Some(mut c), _) => {
            c.extend(args);
            c
        }
        (None, Some(mut e)) if !args.is_empty() || info.known => {
            e.extend(args);
            e
        }
        (None, _) if !args.is_empty() => args,
        (None, _) => {
            // The image's default command.
            if info.long_running || ctx.stdin {
                return Process::LongRunning { log: Vec::new() };
            }
            return Process::Exits {
                code: 0,
                after_ms: 0,
                log: Vec::new(),
            };
        }
    };
    finish(run_argv(ctx, &argv, 0))
}

pub(super) fn finish(eval: Eval) -> Process {
    match eval {
        Eval::Ran { ms, log, .. } if ms >= FOREVER_MS => Process::LongRunning { log },
        Eval::Ran { code, ms, log, .. } => Process::Exits {
            code,
            after_ms: ms,
            log,
        },
        Eval::Forever { log } => Process::LongRunning { log },
        Eval::Unknown => Process::LongRunning { log: Vec::new() },
        Eval::Memory(p) => p,
    }
}

/// Runs an argv as the runtime executes it.
pub(super) fn run_argv(ctx: &ProcCtx, argv: &[String], depth: usize) -> Eval {
    let Some(first) = argv.first() else {
        return ran(0, 0, Vec::new());
    };
    if depth > MAX_DEPTH {
        return Eval::Unknown;
    }
    let rest = argv.get(1..).unwrap_or_default();
    let interactive = || {
        if ctx.stdin {
            Eval::Forever { log: Vec::new() }
        } else {
            ran(0, 0, Vec::new())
        }
    };
    match program(first).as_str() {
        "sh" | "bash" | "ash" | "dash" | "zsh" | "ksh" => match sh::sh_entry(rest) {
            sh::ShEntry::Script(script) => run_script(ctx, Shell::Sh, script, depth + 1),
            sh::ShEntry::MissingScript => Eval::Ran {
                code: 2,
                ms: 0,
                log: vec![format!("{}: -c requires an argument", program(first))],
                exit: true,
            },
            // A script file we cannot read.
            sh::ShEntry::File(_) => Eval::Unknown,
            sh::ShEntry::Stdin => interactive(),
        },
        "busybox" if !rest.is_empty() => run_argv(ctx, rest, depth + 1),
        "cmd" => match cmd::cmd_entry(rest) {
            Some(line) => run_script(ctx, Shell::Cmd, &line, depth + 1),
            None => interactive(),
        },
        "powershell" | "pwsh" => match ps_entry::ps_args(rest) {
            ps_entry::PsEntry::Script(script) if script == "-" => interactive(),
            ps_entry::PsEntry::Script(script) => run_script(ctx, Shell::Ps, &script, depth + 1),
            // A script file we cannot read.
            ps_entry::PsEntry::File(_) => Eval::Unknown,
            ps_entry::PsEntry::Interactive => interactive(),
        },
        _ => run_tokens(ctx, Shell::Sh, argv, &argv.join(" "), false, depth),
    }
}

/// Runs a script through the parser of its shell ([`crate::node::exec`]'s sh, cmd and
/// PowerShell): each statement in turn, as the shell joins them, over simulated time. A script
/// the shell cannot parse is modelled as running.
pub(super) fn run_script(ctx: &ProcCtx, shell: Shell, script: &str, depth: usize) -> Eval {
    if depth > MAX_DEPTH {
        return Eval::Unknown;
    }
    let vars = ctx.vars();
    let parsed = match shell {
        Shell::Sh => sh::outline(script, &vars, ctx.windows()),
        Shell::Cmd => Ok(cmd::outline(script, &vars)),
        Shell::Ps => powershell::outline(
            script,
            powershell::PsHost {
                vars: &vars,
                windows: ctx.windows(),
                host: ctx.host_node.as_ref(),
                limit: ctx.limit,
            },
        ),
    };
    match parsed {
        Ok(statements) => run_outline(ctx, shell, &statements, depth),
        Err(_) => Eval::Unknown,
    }
}

/// Runs parsed statements in turn, as the shell joins them: a statement's time adds up, an
/// `exit` ends them, and one that runs on (or cannot be followed) runs on with the log so far.
pub(super) fn run_outline(ctx: &ProcCtx, shell: Shell, statements: &Outline, depth: usize) -> Eval {
    let mut log = Vec::new();
    let mut ms: u64 = 0;
    let mut last = 0;
    // What the script allocated and holds (PowerShell `$b = [byte[]]::new(n)`): a script that
    // then runs on holds it (MEM-EVICTION counts it).
    let mut held: u128 = 0;
    let holding = |held: u128, log: Vec<String>| {
        if held > 0 {
            Eval::Memory(Process::Holding { bytes: held, log })
        } else {
            Eval::Forever { log }
        }
    };
    for (chain, statement) in statements {
        if skipped(*chain, last) {
            continue;
        }
        if let Statement::Evaluated { holds, .. } = statement {
            held = held.saturating_add(*holds);
        }
        match run_statement(ctx, shell, statement, last, depth) {
            Eval::Ran {
                code,
                ms: m,
                log: l,
                exit,
            } => {
                ms = ms.saturating_add(m);
                log.extend(l);
                last = code;
                if exit || ms >= FOREVER_MS {
                    return Eval::Ran {
                        code,
                        ms,
                        log,
                        exit: true,
                    };
                }
            }
            Eval::Forever { log: l } => {
                log.extend(l);
                return holding(held, log);
            }
            Eval::Unknown => return holding(held, log),
            Eval::Memory(p) => return Eval::Memory(after(p, ms, log)),
        }
    }
    ran(last, ms, log)
}

/// `eval` after `ms` of earlier work that logged `log`.
fn following(eval: Eval, ms: u64, mut log: Vec<String>) -> Eval {
    match eval {
        Eval::Ran {
            code,
            ms: m,
            log: l,
            exit,
        } => {
            log.extend(l);
            Eval::Ran {
                code,
                ms: ms.saturating_add(m),
                log,
                exit,
            }
        }
        Eval::Forever { log: l } => {
            log.extend(l);
            Eval::Forever { log }
        }
        Eval::Unknown => Eval::Forever { log },
        Eval::Memory(p) => Eval::Memory(after(p, ms, log)),
    }
}

/// sh's `if`: the first arm whose condition succeeds runs, else the `else` part (status 0
/// without one).
fn run_if(ctx: &ProcCtx, shell: Shell, arms: &[(Outline, Outline)], otherwise: Option<&Outline>, depth: usize) -> Eval {
    let mut ms: u64 = 0;
    let mut log = Vec::new();
    for (cond, body) in arms {
        match run_outline(ctx, shell, cond, depth + 1) {
            Eval::Ran {
                code,
                ms: m,
                log: l,
                exit,
            } => {
                ms = ms.saturating_add(m);
                log.extend(l);
                if exit {
                    return Eval::Ran { code, ms, log, exit };
                }
                if code == 0 {
                    return following(run_outline(ctx, shell, body, depth + 1), ms, log);
                }
            }
            other => return following(other, ms, log),
        }
    }
    match otherwise {
        Some(body) => following(run_outline(ctx, shell, body, depth + 1), ms, log),
        None => ran(0, ms, log),
    }
}

/// A memory outcome that happens after `ms` of earlier work and its log.
pub(super) fn after(p: Process, ms: u64, mut log: Vec<String>) -> Process {
    match p {
        Process::OomKilled { after_ms } => Process::OomKilled {
            after_ms: after_ms.saturating_add(ms),
        },
        Process::AllocationFails { after_ms, log: l } => {
            log.extend(l);
            Process::AllocationFails {
                after_ms: after_ms.saturating_add(ms),
                log,
            }
        }
        Process::Holding { bytes, log: l } => {
            log.extend(l);
            Process::Holding { bytes, log }
        }
        other => other,
    }
}

/// Runs one statement: a pipeline runs each of its commands; only the last one's status is
/// known, and what the commands print feeds the next one (none of it reaches the log).
pub(super) fn run_statement(ctx: &ProcCtx, shell: Shell, statement: &Statement, last: i32, depth: usize) -> Eval {
    let (commands, negate) = match statement {
        Statement::Assign => return ran(0, 0, Vec::new()),
        Statement::Compound => return Eval::Unknown,
        // PowerShell: a statement that failed sets `$?` to false, which `-Command` turns into
        // exit code 1 when it is the last (learn.microsoft.com powershell/…/about_pwsh, -Command;
        // GH PowerShell/PowerShell#13501).
        Statement::Evaluated { log, ok, .. } => return ran(i32::from(!*ok), 0, log.clone()),
        Statement::Group { .. } | Statement::If { .. } if depth >= MAX_DEPTH => return Eval::Unknown,
        Statement::Group { body, subshell } => {
            return match run_outline(ctx, shell, body, depth + 1) {
                // `exit` in a subshell ends only the subshell.
                Eval::Ran { code, ms, log, exit } => Eval::Ran {
                    code,
                    ms,
                    log,
                    exit: exit && !subshell,
                },
                other => other,
            };
        }
        Statement::If { arms, otherwise } => return run_if(ctx, shell, arms, otherwise.as_ref(), depth),
        Statement::Pipeline { commands, negate } => (commands, *negate),
    };
    let eval = match commands.as_slice() {
        [one] => run_command(ctx, shell, one, last, depth),
        stages => {
            let mut ms: u64 = 0;
            let mut code = 0;
            for stage in stages {
                match run_command(ctx, shell, stage, last, depth + 1) {
                    Eval::Ran { code: c, ms: m, .. } => {
                        ms = ms.saturating_add(m);
                        code = c;
                    }
                    other => return other,
                }
            }
            ran(code, ms, Vec::new())
        }
    };
    match eval {
        Eval::Ran { code, ms, log, exit } if negate => Eval::Ran {
            code: i32::from(code == 0),
            ms,
            log,
            exit,
        },
        other => other,
    }
}

/// Runs one command of a pipeline with its output redirection.
pub(super) fn run_command(ctx: &ProcCtx, shell: Shell, command: &Command, last: i32, depth: usize) -> Eval {
    let keyword = command
        .words
        .first()
        .map(|w| w.to_ascii_lowercase())
        .unwrap_or_default();
    match keyword.as_str() {
        // Loops the process model does not follow: they run on.
        "while" | "until" | "do" | "goto" => return Eval::Forever { log: Vec::new() },
        "for" | "foreach" | "if" | "case" | "function" | "select" | "trap" => return Eval::Unknown,
        // A cmd label keeps the status.
        _ if shell == Shell::Cmd && command.raw.trim_start().starts_with(':') => return ran(last, 0, Vec::new()),
        _ if !command.complete => return Eval::Unknown,
        _ => {}
    }
    let tokens = &command.words;
    let file = match &command.stdout {
        Stdout::File { target, append } => Some((target.clone(), *append)),
        _ => None,
    };
    // The shell opens the file before it runs the command: a read-only mount stops it.
    if let Some((target, _)) = &file
        && let Some(message) = ctx.refused_write(shell, target)
    {
        return ran(1, 0, vec![message]);
    }
    let discard = command.stdout == Stdout::Discard;
    let eval = run_tokens(ctx, shell, tokens, &command.raw, discard, depth);
    let eval = match (file, eval) {
        (Some((target, append)), Eval::Ran { code, ms, log, exit }) => {
            ctx.record_write(&target, &log, append);
            Eval::Ran {
                code,
                ms,
                log: Vec::new(),
                exit,
            }
        }
        (_, other) => other,
    };
    match eval {
        Eval::Ran { code, ms, log, exit } if tokens.first().is_some_and(|t| program(t) == "exit") => {
            // `exit` without a number keeps the last status (sh, cmd `exit /b`).
            let explicit = tokens.iter().skip(1).any(|t| t.parse::<i64>().is_ok());
            Eval::Ran {
                code: if explicit { code } else { last },
                ms,
                log,
                exit,
            }
        }
        other => other,
    }
}

/// Seconds in `5`, `1.5`, `5s`, `2m`, `1h`, `1d`.
pub(super) fn seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 's') => (s.get(..i)?, 1.0),
        (i, 'm') => (s.get(..i)?, 60.0),
        (i, 'h') => (s.get(..i)?, 3600.0),
        (i, 'd') => (s.get(..i)?, 86400.0),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mult)
}

pub(super) fn ms_of(secs: f64) -> u64 {
    let ms = secs * 1000.0;
    if ms >= FOREVER_MS as f64 {
        FOREVER_MS
    } else {
        ms.max(0.0) as u64
    }
}

/// A sleep of this many milliseconds.
pub(super) fn slept(ms: u64) -> Eval {
    if ms >= FOREVER_MS {
        Eval::Forever { log: Vec::new() }
    } else {
        ran(0, ms, Vec::new())
    }
}

/// Go durations: `10s`, `1ms`, `1m30s`, `500us`.
pub(super) fn go_duration_ms(s: &str) -> Option<u64> {
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = s.trim().chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_digit() || n == '.' {
                break;
            }
            unit.push(n);
            chars.next();
        }
        let v: f64 = num.parse().ok()?;
        num.clear();
        total += v * match unit.as_str() {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        any = true;
    }
    if !num.is_empty() {
        // A bare number: seconds.
        total += num.parse::<f64>().ok()? * 1000.0;
        any = true;
    }
    any.then_some(if total >= FOREVER_MS as f64 {
        FOREVER_MS
    } else {
        total.max(0.0) as u64
    })
}

/// `250M`, `1G`, `100Mb`, `512k` (1024-based, as stress and testlimit count).
pub(super) fn bytes_1024(s: &str) -> Option<u128> {
    let s = s.trim();
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: u128 = digits.parse().ok()?;
    let unit = s.get(digits.len()..)?.to_ascii_lowercase();
    let mult = match unit.trim_end_matches(['b', 'i']) {
        "" => 1,
        "k" => 1024,
        "m" => MIB,
        "g" => 1024 * MIB,
        "t" => 1024 * 1024 * MIB,
        _ => return None,
    };
    n.checked_mul(mult)
}

pub(super) fn flag_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        for n in names {
            if a == n {
                return iter.next().map(String::as_str);
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
    }
    None
}

/// The outcome of allocating `total` bytes (None: without bound) against the memory limit.
pub(super) fn allocate(ctx: &ProcCtx, total: Option<u128>, after_ms: u64, fail_log: Vec<String>, fits: Eval) -> Eval {
    let exceeds = match (ctx.limit, total) {
        (Some(limit), Some(t)) => t > limit,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if exceeds {
        return Eval::Memory(match ctx.os {
            Os::Linux => Process::OomKilled { after_ms },
            Os::Windows => Process::AllocationFails {
                after_ms,
                log: fail_log,
            },
        });
    }
    match (total, &fits) {
        (None, _) => Eval::Forever { log: Vec::new() },
        (Some(bytes), Eval::Forever { log }) => Eval::Memory(Process::Holding {
            bytes,
            log: log.clone(),
        }),
        _ => fits,
    }
}

pub(super) const PAGING_FILE_TOO_SMALL: &str = "The paging file is too small for this operation to complete.";

/// `stress`, `stress-ng`, `testlimit`, `agnhost stress`, `tail /dev/zero`.
pub(super) fn memory_tool(ctx: &ProcCtx, name: &str, args: &[String]) -> Eval {
    let limit_mb = ctx.limit.unwrap_or(0) / MIB;
    match name {
        "stress" | "stress-ng" => {
            let workers: u128 = flag_value(args, &["--vm", "-m"])
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let timeout = flag_value(args, &["--timeout", "-t"]).and_then(seconds).map(ms_of);
            let fits = match timeout {
                Some(ms) => slept(ms),
                None => Eval::Forever { log: Vec::new() },
            };
            if workers == 0 && !(name == "stress-ng" && flag_value(args, &["--vm"]).is_some()) {
                return fits;
            }
            let workers = workers.max(1);
            let per = flag_value(args, &["--vm-bytes"]);
            let total = match per {
                Some(p) if p.ends_with('%') => {
                    let pct: u128 = p.trim_end_matches('%').parse().unwrap_or(100);
                    ctx.node_memory.map(|m| m.saturating_mul(pct) / 100)
                }
                Some(p) => bytes_1024(p).map(|b| b.saturating_mul(workers)),
                None => Some((256 * MIB).saturating_mul(workers)),
            };
            let fail = vec![format!(
                "{name}: FAIL: hogvm: memory allocation failed after {limit_mb} MB: {PAGING_FILE_TOO_SMALL}"
            )];
            allocate(ctx, total, 1000, fail, fits)
        }
        "testlimit" | "testlimit64" => {
            let chunk_mb: u128 = flag_value(args, &["-d", "-m"])
                .and_then(|v| bytes_1024(v).map(|b| b.max(1)))
                .map(|b| {
                    // testlimit counts in MB: `-d 100Mb` and `-d 100` are both 100 MB.
                    if b < MIB { b } else { b / MIB }
                })
                .unwrap_or(1);
            if !args.iter().any(|a| a == "-d" || a == "-m") {
                return Eval::Unknown;
            }
            let total = flag_value(args, &["-c"])
                .and_then(|c| c.parse::<u128>().ok())
                .map(|c| c.saturating_mul(chunk_mb).saturating_mul(MIB));
            let fail = vec![
                format!("Leaking private bytes with touch {chunk_mb} MB at a time..."),
                format!("Error allocating memory after {limit_mb} MB: {PAGING_FILE_TOO_SMALL} (1455)"),
            ];
            allocate(ctx, total, 1000, fail, Eval::Forever { log: Vec::new() })
        }
        "agnhost-stress" => {
            let q = |names: &[&str], default: &str| {
                Quantity::parse(flag_value(args, names).unwrap_or(default)).and_then(|q| u128::try_from(q.value()).ok())
            };
            let total = q(&["--mem-total"], "0").unwrap_or(0);
            if total == 0 {
                return Eval::Forever { log: Vec::new() };
            }
            let chunk = q(&["--mem-alloc-size"], "4Mi").unwrap_or(4 * MIB).max(1);
            let sleep = flag_value(args, &["--mem-alloc-sleep"])
                .and_then(go_duration_ms)
                .unwrap_or(1);
            let chunks = ctx.limit.map(|l| l / chunk + 1).unwrap_or(0);
            let after_ms = u64::try_from(chunks.saturating_mul(u128::from(sleep))).unwrap_or(u64::MAX);
            let fail = vec![
                format!("runtime: VirtualAlloc of {chunk} bytes failed with errno=1455"),
                "fatal error: out of memory".to_string(),
            ];
            allocate(ctx, Some(total), after_ms, fail, Eval::Forever { log: Vec::new() })
        }
        _ => {
            // `tail /dev/zero`: reads a line that never ends, without bound.
            let fail = vec![format!("{name}: memory exhausted")];
            allocate(ctx, None, 2000, fail, Eval::Forever { log: Vec::new() })
        }
    }
}

/// `agnhost <subcommand>`.
pub(super) fn agnhost(ctx: &ProcCtx, args: &[String]) -> Eval {
    let Some(sub) = args.first() else {
        return ran(
            0,
            0,
            vec![
                "agnhost is a tool for testing Kubernetes that bundles many small test servers and clients".into(),
                "Usage:".into(),
                "  agnhost [command]".into(),
            ],
        );
    };
    let rest = args.get(1..).unwrap_or_default();
    match sub.as_str() {
        "pause"
        | "netexec"
        | "serve-hostname"
        | "test-webserver"
        | "webhook"
        | "porter"
        | "liveness"
        | "nettest"
        | "guestbook"
        | "fake-gitserver"
        | "grpc-health-checking"
        | "resource-consumer-controller"
        | "inclusterclient"
        | "tcp-reset"
        | "crd-conversion-webhook"
        | "audit-proxy"
        | "net" => Eval::Forever { log: Vec::new() },
        "stress" => memory_tool(ctx, "agnhost-stress", rest),
        "entrypoint-tester" => {
            let mut all = vec!["/agnhost".to_string()];
            all.extend(args.iter().cloned());
            ran(0, 0, vec![format!("[{}]", all.join(" "))])
        }
        "logs-generator" => {
            let lines: u64 = flag_value(rest, &["--log-lines-total"])
                .and_then(|v| v.parse().ok())
                .or_else(|| rest.first().and_then(|v| v.parse().ok()))
                .unwrap_or(0);
            let ms = flag_value(rest, &["--run-duration"])
                .and_then(go_duration_ms)
                .or_else(|| rest.get(1).and_then(|v| go_duration_ms(v)))
                .unwrap_or(0);
            let log = (0..lines.min(MAX_LOG_LINES))
                .map(|i| {
                    format!(
                        "{i} GET /api/v1/namespaces/default/pods/pod-{i} {}",
                        200 + (i % 3) * 100
                    )
                })
                .collect();
            ran(0, ms, log)
        }
        _ => Eval::Unknown,
    }
}

/// Runs one simple command (words already split).
pub(super) fn run_tokens(
    ctx: &ProcCtx,
    shell: Shell,
    tokens: &[String],
    raw: &str,
    redirected: bool,
    depth: usize,
) -> Eval {
    let Some(first) = tokens.first() else {
        return ran(0, 0, Vec::new());
    };
    let name = program(first);
    let args = tokens.get(1..).unwrap_or_default();
    let out = |lines: Vec<String>| if redirected { Vec::new() } else { lines };
    let windows = ctx.os == Os::Windows;
    // cmd's echo forms that are not words of their own (`echo.`, `echo:x`, `echo(`).
    if shell == Shell::Cmd
        && !name.eq_ignore_ascii_case("echo")
        && let Some(text) = echo::cmd_echo(raw.trim_start().split('>').next().unwrap_or_default())
    {
        return ran(0, 0, out(echo::lines(&text)));
    }
    match name.as_str() {
        "echo" | "write-host" | "write-output" | "echo." => {
            let text = match shell {
                Shell::Cmd => {
                    // cmd parses echo from the line as written; a redirection ends it.
                    let line = raw.trim_start();
                    let line = line.split('>').next().unwrap_or(line);
                    echo::cmd_echo(line).unwrap_or_default()
                }
                Shell::Ps => {
                    let mut words = Vec::new();
                    let mut skip = false;
                    for a in args {
                        if skip {
                            skip = false;
                            continue;
                        }
                        let l = a.to_ascii_lowercase();
                        if l == "-foregroundcolor" || l == "-backgroundcolor" || l == "-separator" {
                            skip = true;
                        } else if l == "-nonewline" || l == "-noenumerate" {
                        } else {
                            words.push(a.as_str());
                        }
                    }
                    words.join(" ") + "\n"
                }
                Shell::Sh => echo::sh_echo(args),
            };
            ran(0, 0, out(echo::lines(&text)))
        }
        "printf" => ran(0, 0, out(echo::lines(&echo::printf(args)))),
        "exit" => {
            let n = args
                .iter()
                .find(|a| !a.eq_ignore_ascii_case("/b"))
                .and_then(|a| a.parse::<i64>().ok())
                .unwrap_or(0);
            let code = if windows && shell != Shell::Sh {
                i32::try_from(n).unwrap_or(i32::MAX)
            } else {
                (n.rem_euclid(256)) as i32
            };
            Eval::Ran {
                code,
                ms: 0,
                log: Vec::new(),
                exit: true,
            }
        }
        "true"
        | ":"
        | "rem"
        | "wait"
        | "set"
        | "export"
        | "cls"
        | "cd"
        | "pwd"
        | "ls"
        | "dir"
        | "mkdir"
        | "md"
        | "touch"
        | "rm"
        | "del"
        | "rmdir"
        | "rd"
        | "cp"
        | "copy"
        | "mv"
        | "move"
        | "chmod"
        | "chown"
        | "ln"
        | "date"
        | "ver"
        | "cat"
        | "type"
        | "env"
        | "printenv"
        | "wc"
        | "head"
        | "grep"
        | "findstr"
        | "sort"
        | "test"
        | "["
        | "mount"
        | "df"
        | "ps"
        | "tasklist"
        | "sync"
        | "stat"
        | "find"
        | "xcopy"
        | "robocopy"
        | "set-content"
        | "add-content"
        | "out-file"
        | "new-item"
        | "remove-item"
        | "copy-item"
        | "move-item"
        | "test-path"
        | "get-childitem"
        | "gci"
        | "get-item"
        | "get-date"
        | "get-content"
        | "gc"
        | "out-null"
        | "import-module"
        | "set-location"
        | "get-process"
        | "get-location"
        | "write-verbose"
        | "write-debug"
        | "set-executionpolicy"
        | "$erroractionpreference"
        | "$progresspreference" => ran(0, 0, Vec::new()),
        "false" => ran(1, 0, Vec::new()),
        "whoami" => {
            let (code, line) = ctx.whoami();
            ran(code, 0, out(vec![line]))
        }
        "hostname" => ran(0, 0, out(vec![ctx.hostname.clone()])),
        "uname" if !windows => ran(0, 0, out(vec!["Linux".into()])),
        "id" if !windows => {
            let line = match ctx.linux_uid {
                None | Some(0) => "uid=0(root) gid=0(root) groups=0(root)".to_string(),
                Some(uid) => format!("uid={uid} gid=0(root) groups=0(root)"),
            };
            ran(0, 0, out(vec![line]))
        }
        "sleep" if shell == Shell::Ps => start_sleep(args),
        "start-sleep" => start_sleep(args),
        "sleep" => {
            let mut total = 0u64;
            for a in args {
                if a == "infinity" || a == "inf" {
                    return Eval::Forever { log: Vec::new() };
                }
                match seconds(a) {
                    Some(s) => total = total.saturating_add(ms_of(s)),
                    None => {
                        return ran(1, 0, vec![format!("sleep: invalid time interval '{a}'")]);
                    }
                }
            }
            slept(total)
        }
        "timeout" if windows => {
            // timeout.exe needs console input; a container's stdin is redirected.
            let secs = flag_value(args, &["/t", "/T", "-t"]).or_else(|| args.first().map(String::as_str));
            if secs == Some("-1") && ctx.stdin {
                return Eval::Forever { log: Vec::new() };
            }
            ran(
                1,
                0,
                vec!["ERROR: Input redirection is not supported, exiting the process immediately.".into()],
            )
        }
        "timeout" => {
            // coreutils: timeout [options] DURATION COMMAND…
            let mut i = 0;
            while args.get(i).is_some_and(|a| a.starts_with('-')) {
                i += if matches!(
                    args.get(i).map(String::as_str),
                    Some("-s" | "-k" | "--signal" | "--kill-after")
                ) {
                    2
                } else {
                    1
                };
            }
            let Some(limit) = args.get(i).and_then(|d| seconds(d)).map(ms_of) else {
                return ran(125, 0, vec!["timeout: invalid time interval".into()]);
            };
            match run_argv(ctx, args.get(i + 1..).unwrap_or_default(), depth + 1) {
                Eval::Ran { code, ms, log, .. } if ms <= limit => ran(code, ms, log),
                Eval::Ran { log, .. } | Eval::Forever { log } => ran(124, limit, log),
                Eval::Unknown => ran(124, limit, Vec::new()),
                memory @ Eval::Memory(_) => memory,
            }
        }
        "ping" => {
            let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
            if lower.iter().any(|a| a == "-t") {
                return Eval::Forever { log: Vec::new() };
            }
            let local = lower
                .iter()
                .any(|a| matches!(a.as_str(), "127.0.0.1" | "localhost" | "::1" | "0.0.0.0"));
            let count = flag_value(&lower, &["-n", "-c"]).and_then(|n| n.parse::<u64>().ok());
            match (local, count) {
                (true, Some(n)) => ran(0, n.saturating_sub(1).saturating_mul(1000), Vec::new()),
                (true, None) if !windows => Eval::Forever { log: Vec::new() },
                (true, None) => ran(0, 3000, Vec::new()),
                _ => Eval::Unknown,
            }
        }
        "tail" if args.iter().any(|a| a == "/dev/zero") => memory_tool(ctx, "tail", args),
        "tail" if args.iter().any(|a| a == "-f" || a == "-F" || a == "--follow") => Eval::Forever { log: Vec::new() },
        "tail" => ran(0, 0, Vec::new()),
        "pause" if shell == Shell::Cmd => ran(0, 0, out(vec!["Press any key to continue . . . ".into()])),
        "pause" => Eval::Forever { log: Vec::new() },
        "agnhost" => agnhost(ctx, args),
        "stress" | "stress-ng" | "testlimit" | "testlimit64" => memory_tool(ctx, &name, args),
        "nginx" | "httpd" | "apache2" | "redis-server"
            if args
                .iter()
                .any(|a| matches!(a.as_str(), "-v" | "-V" | "-t" | "-T" | "--version")) =>
        {
            ran(0, 0, Vec::new())
        }
        "nginx" | "httpd" | "apache2" | "redis-server" | "servicemonitor" | "consumer" | "w3wp" | "dotnet"
        | "caddy" | "sshd" | "crond" | "iisexpress" => Eval::Forever { log: Vec::new() },
        "nc" | "netcat" | "ncat" if args.iter().any(|a| a.starts_with("-l") || a.starts_with("-kl")) => {
            Eval::Forever { log: Vec::new() }
        }
        "python" | "python3" if args.windows(2).any(|w| w[0] == "-m" && w[1] == "http.server") => {
            Eval::Forever { log: Vec::new() }
        }
        "exec" | "call" | "start" if !args.is_empty() => run_argv(ctx, args, depth + 1),
        "sh" | "bash" | "ash" | "dash" | "zsh" | "ksh" | "busybox" | "cmd" | "powershell" | "pwsh" => {
            run_argv(ctx, tokens, depth + 1)
        }
        _ => Eval::Unknown,
    }
}

/// PowerShell `Start-Sleep` (`-Seconds N`, `-s N`, `-Milliseconds N`, `-m N`, positional N).
pub(super) fn start_sleep(args: &[String]) -> Eval {
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let ms = if let Some(v) = flag_value(&lower, &["-milliseconds", "-m", "-ms"]) {
        v.parse::<f64>().ok().map(|m| ms_of(m / 1000.0))
    } else {
        flag_value(&lower, &["-seconds", "-s"])
            .or_else(|| lower.iter().find(|a| !a.starts_with('-')).map(String::as_str))
            .and_then(|v| v.parse::<f64>().ok())
            .map(ms_of)
    };
    match ms {
        Some(ms) => slept(ms),
        None => ran(1, 0, vec!["Start-Sleep : Cannot bind parameter".into()]),
    }
}
