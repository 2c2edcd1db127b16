//! cmd.exe: quoting, %VAR% expansion, chaining, redirections, echo forms and the builtins.

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;

use super::disk::DiskEntry;
use super::outline::{Command, Outline, Statement, Stdout};
use super::plumbing::{Chain, Opened, RedirTo, deliver, route, skipped};
use super::session::{Session, WriteError};
use super::support::{code_of, env_get, env_set, out};
use super::{Call, Reply, echo, volumes};
use crate::node::runtime::ExecOutput;
use crate::vocab::quantity::Quantity;

// ---------------------------------------------------------------------------------------------
// cmd.exe
// ---------------------------------------------------------------------------------------------

/// The line `cmd [/S] [/Q] [/D] /C line…` (or `/K`) runs, as cmd reads it from its arguments
/// (after the program name); None without `/C` or `/K`.
pub(crate) fn cmd_entry(args: &[String]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        let lower = a.to_ascii_lowercase();
        if lower.starts_with("/c") || lower.starts_with("/k") {
            let first = a.get(2..).unwrap_or("");
            let rest = args.get(i + 1..).unwrap_or(&[]);
            let parts: Vec<&str> = std::iter::once(first)
                .filter(|f| !f.is_empty())
                .chain(rest.iter().map(String::as_str))
                .collect();
            return Some(parts.join(" "));
        }
        if !lower.starts_with('/') {
            break;
        }
    }
    None
}

/// `cmd [/S] [/Q] [/D] /C line…`: runs the line; without `/C` prints the banner.
pub(super) fn cmd(s: &Arc<Session>, mut call: Call) -> Reply {
    let Some(line) = cmd_entry(call.args()) else {
        return ExecOutput::ok(format!(
            "Microsoft Windows [Version {}]\r\n(c) Microsoft Corporation. All rights reserved.\r\n\r\nC:\\>",
            s.kernel()
        ))
        .into();
    };
    let env = call.take_env(s);
    Reply::Later(Box::pin(run_cmd(s.clone(), line, call.stdin, env)))
}

/// cmd strips the first and the last quote of a line that starts with one.
pub(crate) fn strip_cmd_quotes(line: &str) -> String {
    let trimmed = line.trim_start();
    match (trimmed.strip_prefix('"'), trimmed.rfind('"')) {
        (Some(_), Some(last)) if last > 0 => {
            let mut text = trimmed.to_string();
            text.remove(last);
            text.remove(0);
            text
        }
        _ => line.to_string(),
    }
}

/// Expands `%VAR%` (case-insensitive); unknown variables stay as written.
pub(super) fn expand_percent(line: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('%') {
            Some(end) if end > 0 => {
                let name = &after[..end];
                match env_get(env, name, true) {
                    Some(v) => {
                        out.push_str(v);
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push('%');
                        out.push_str(name);
                        rest = &after[end..];
                    }
                }
            }
            _ => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Splits a line at `&&`, `||`, `&` (pipelines) and `|` (their commands), outside quotes.
pub(super) fn split_cmd(line: &str) -> Vec<(Chain, Vec<String>)> {
    let mut result = Vec::new();
    let mut segments = Vec::new();
    let mut cur = String::new();
    let mut chain = Chain::Always;
    let mut quoted = false;
    // Inside `( … )` everything is kept for the group's own line.
    let mut depth = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            '^' if !quoted && depth > 0 => {
                cur.push(c);
                cur.extend(chars.next());
            }
            '^' if !quoted => cur.extend(chars.next()),
            '(' if !quoted && (depth > 0 || cur.trim().is_empty()) => {
                depth += 1;
                cur.push(c);
            }
            ')' if !quoted && depth > 0 => {
                depth -= 1;
                cur.push(c);
            }
            _ if depth > 0 => cur.push(c),
            '&' if cur.ends_with('>') => cur.push(c),
            '&' | '|' if !quoted => {
                let double = chars.peek() == Some(&c);
                if double {
                    chars.next();
                }
                segments.push(std::mem::take(&mut cur));
                if c == '|' && !double {
                    continue;
                }
                result.push((chain, std::mem::take(&mut segments)));
                chain = match (c, double) {
                    ('&', true) => Chain::And,
                    ('|', true) => Chain::Or,
                    _ => Chain::Always,
                };
            }
            _ => cur.push(c),
        }
    }
    segments.push(cur);
    result.push((chain, segments));
    result
}

/// Splits at whitespace outside double quotes, removing the quotes (the CRT's argv rules,
/// simplified).
pub(super) fn cmd_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut started = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                started = true;
            }
            c if c.is_whitespace() && !quoted => {
                if started {
                    tokens.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            c => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        tokens.push(cur);
    }
    tokens
}

/// A command's redirections: output routes, the files they open ((path, append), indexed by
/// [`RedirTo::File`]) and the input file.
#[derive(Debug, Default)]
pub(super) struct CmdRedirs {
    pub(super) outputs: Vec<(u8, RedirTo)>,
    pub(super) files: Vec<(String, bool)>,
    pub(super) input: Option<String>,
}

/// Takes the redirections out of a command: (text left, its redirections).
pub(super) fn cmd_redirections(segment: &str) -> (String, CmdRedirs) {
    let mut text = String::new();
    let mut redirs = CmdRedirs::default();
    let mut quoted = false;
    let chars: Vec<char> = segment.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c == '"' {
            quoted = !quoted;
        }
        if quoted || !(c == '>' || c == '<') {
            text.push(c);
            i += 1;
            continue;
        }
        let fd_digit = text
            .chars()
            .last()
            .and_then(|d| d.to_digit(10))
            .filter(|_| text.chars().rev().nth(1).is_none_or(char::is_whitespace));
        let fd = fd_digit.and_then(|d| u8::try_from(d).ok());
        if fd.is_some() {
            text.pop();
        }
        i += 1;
        if c == '>' && chars.get(i) == Some(&'&') {
            let to = chars
                .get(i + 1)
                .and_then(|d| d.to_digit(10))
                .and_then(|d| u8::try_from(d).ok());
            i += 2;
            redirs.outputs.push((fd.unwrap_or(1), RedirTo::Fd(to.unwrap_or(1))));
            continue;
        }
        let append = c == '>' && chars.get(i) == Some(&'>');
        if append {
            i += 1;
        }
        while chars.get(i).is_some_and(|x| x.is_whitespace()) {
            i += 1;
        }
        let mut target = String::new();
        while let Some(&x) = chars.get(i).filter(|x| !x.is_whitespace() && !matches!(x, '>' | '<')) {
            if x != '"' {
                target.push(x);
            }
            i += 1;
        }
        if c == '<' {
            redirs.input = Some(target);
        } else if volumes::is_null_device(&target, true) {
            redirs.outputs.push((fd.unwrap_or(1), RedirTo::Null));
        } else {
            redirs.files.push((target, append));
            redirs
                .outputs
                .push((fd.unwrap_or(1), RedirTo::File(redirs.files.len() - 1)));
        }
    }
    (text, redirs)
}

/// `echo`, `echo.`, `echo text`: cmd prints the rest of the line as written.
pub(super) fn cmd_echo(text: &str) -> Option<ExecOutput> {
    echo::cmd_echo(text).map(ExecOutput::ok)
}

/// What one cmd command did.
pub(super) enum Step {
    Done(ExecOutput),
    Exit(i32),
}

/// Arguments of a cmd builtin.
pub(super) struct CmdArgs<'a> {
    pub(super) args: Vec<String>,
    pub(super) rest: &'a str,
    pub(super) env: &'a [(String, String)],
}

pub(super) type Builtin = fn(&Session, &CmdArgs) -> ExecOutput;

/// cmd's internal commands (besides `echo`, `exit` and `set NAME=value`, which the
/// interpreter handles).
pub(super) static CMD_BUILTINS: &[(&[&str], Builtin)] = &[
    (&["type"], cmd_type),
    (&["ver"], cmd_ver),
    (&["dir"], cmd_dir),
    (&["cd", "chdir"], cmd_cd),
    (&["set"], cmd_set),
    (&["rem"], cmd_rem),
];

pub(super) fn cmd_rem(_s: &Session, _a: &CmdArgs) -> ExecOutput {
    ExecOutput::ok(Vec::new())
}

pub(super) fn cmd_type(s: &Session, a: &CmdArgs) -> ExecOutput {
    if a.args.is_empty() {
        return out("", "The syntax of the command is incorrect.\r\n", 1);
    }
    let (mut stdout, mut stderr, mut code) = (Vec::new(), String::new(), 0);
    for f in &a.args {
        match s.disk().get(&s.path(f)).map(|e| &e.file) {
            Some(Some((data, _))) => stdout.extend_from_slice(data),
            Some(None) => {
                stderr.push_str("Access is denied.\r\n");
                code = 1;
            }
            None => {
                stderr.push_str("The system cannot find the file specified.\r\n");
                code = 1;
            }
        }
    }
    out(stdout, stderr, code)
}

pub(super) fn cmd_ver(s: &Session, _a: &CmdArgs) -> ExecOutput {
    ExecOutput::ok(format!("\r\nMicrosoft Windows [Version {}]\r\n", s.kernel()))
}

pub(super) fn cmd_cd(s: &Session, a: &CmdArgs) -> ExecOutput {
    match a.args.first() {
        None => ExecOutput::ok(format!("{}\r\n", s.cwd())),
        Some(p) if s.disk().get(&s.path(p)).is_some_and(|e| e.file.is_none()) => ExecOutput::ok(Vec::new()),
        Some(_) => out("", "The system cannot find the path specified.\r\n", 1),
    }
}

pub(super) fn cmd_set(_s: &Session, a: &CmdArgs) -> ExecOutput {
    let prefix = a.rest.trim();
    let mut vars: Vec<&(String, String)> = a
        .env
        .iter()
        .filter(|(k, _)| k.to_lowercase().starts_with(&prefix.to_lowercase()))
        .collect();
    vars.sort_by_key(|(k, _)| k.to_lowercase());
    if vars.is_empty() {
        return out("", format!("Environment variable {prefix} not defined\r\n"), 1);
    }
    ExecOutput::ok(vars.iter().map(|(k, v)| format!("{k}={v}\r\n")).collect::<String>())
}

pub(super) fn thousands(n: i128) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(d);
    }
    grouped
}

pub(super) fn cmd_dir(s: &Session, a: &CmdArgs) -> ExecOutput {
    let bare = a.args.iter().any(|x| x.eq_ignore_ascii_case("/b"));
    let target = a
        .args
        .iter()
        .find(|x| !x.starts_with('/'))
        .cloned()
        .unwrap_or_else(|| s.cwd());
    let full = s.path(&target);
    let disk = s.disk();
    let Some(entry) = disk.get(&full) else {
        return out("", "File Not Found\r\n", 1);
    };
    let items: Vec<&DiskEntry> = if entry.file.is_some() {
        vec![entry]
    } else {
        disk.children(&entry.path)
    };
    if bare {
        return ExecOutput::ok(items.iter().map(|e| format!("{}\r\n", e.name())).collect::<String>());
    }
    let when = s.stamp.format("%m/%d/%Y  %I:%M %p").to_string();
    let dir = if entry.file.is_some() {
        disk.parent(&entry.path).unwrap_or_default()
    } else {
        entry.path.clone()
    };
    let serial = s.ctx.container_id().get(..8).unwrap_or("").to_uppercase();
    let mut text = format!(
        " Volume in drive C has no label.\r\n Volume Serial Number is {}-{}\r\n\r\n Directory of {dir}\r\n\r\n",
        serial.get(..4).unwrap_or(""),
        serial.get(4..).unwrap_or("")
    );
    let mut dirs = 0;
    if entry.file.is_none() && disk.parent(&entry.path).is_some() {
        for name in [".", ".."] {
            let _ = write!(text, "{when}    <DIR>          {name}\r\n");
        }
        dirs += 2;
    }
    let (mut files, mut bytes) = (0usize, 0usize);
    for e in &items {
        if e.file.is_some() {
            files += 1;
            bytes += e.size();
            let _ = write!(text, "{when} {:>17} {}\r\n", thousands(e.size() as i128), e.name());
        } else {
            dirs += 1;
            let _ = write!(text, "{when}    <DIR>          {}\r\n", e.name());
        }
    }
    let free = s
        .ctx
        .node
        .as_ref()
        .and_then(|n| n.allocatable.get("ephemeral-storage"))
        .and_then(|q| Quantity::parse(q))
        .map_or(0, Quantity::value);
    let _ = write!(
        text,
        "{files:>16} File(s) {:>14} bytes\r\n{dirs:>16} Dir(s) {:>15} bytes free\r\n",
        thousands(bytes as i128),
        thousands(free)
    );
    ExecOutput::ok(text)
}

pub(super) async fn run_cmd(s: Arc<Session>, line: String, stdin: Bytes, env: Vec<(String, String)>) -> ExecOutput {
    let line = expand_percent(&strip_cmd_quotes(&line), &env);
    let mut env = env;
    let r = cmd_line(&s, &line, &mut env, stdin).await;
    out(r.stdout, r.stderr, r.exit.unwrap_or(r.status))
}

/// What a cmd line (or a parenthesised group) did; `exit` when it ran `exit`.
#[derive(Default)]
pub(super) struct CmdRun {
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) status: i32,
    pub(super) exit: Option<i32>,
}

/// The message of a redirection cmd cannot open (the command does not run; errorlevel 1).
pub(super) fn cmd_open_error(e: WriteError) -> &'static str {
    match e {
        // STO-READONLY-VOLUME: upstream's e2e asserts exactly this text on a readOnly mount.
        WriteError::ReadOnly | WriteError::IsDirectory => "Access is denied.\r\n",
        WriteError::NoDirectory => "The system cannot find the path specified.\r\n",
    }
}

/// `( … )` at the start of a segment: the group's line and the text after its `)`.
pub(super) fn cmd_group(segment: &str) -> Option<(&str, &str)> {
    let text = segment.trim_start().strip_prefix('(')?;
    let mut depth = 1usize;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some((text.get(..i)?, text.get(i + 1..)?));
                }
            }
            _ => {}
        }
    }
    None
}

pub(super) fn cmd_line<'a>(
    s: &'a Arc<Session>,
    line: &'a str,
    env: &'a mut Vec<(String, String)>,
    stdin: Bytes,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = CmdRun> + Send + 'a>> {
    Box::pin(async move {
        let mut run = CmdRun::default();
        let mut stdin = Some(stdin);
        for (chain, segments) in split_cmd(line) {
            if skipped(chain, run.status) {
                continue;
            }
            let last = segments.len().saturating_sub(1);
            let mut input = stdin.take().unwrap_or_default();
            for (idx, segment) in segments.iter().enumerate() {
                let group = cmd_group(segment);
                let (text, redirs) = match group {
                    Some((_, after)) => cmd_redirections(after),
                    None => cmd_redirections(segment),
                };
                let cin = match redirs.input {
                    None => std::mem::take(&mut input),
                    Some(path) => match s.disk().get(&s.path(&path)).and_then(|e| e.file.as_ref()) {
                        Some((data, _)) => Bytes::from(data.clone()),
                        None => {
                            run.stderr
                                .extend_from_slice(b"The system cannot find the file specified.\r\n");
                            run.status = 1;
                            continue;
                        }
                    },
                };
                let mut opened = match Opened::open(s, redirs.files) {
                    Ok(o) => o,
                    Err((_, e)) => {
                        run.stderr.extend_from_slice(cmd_open_error(e).as_bytes());
                        run.status = 1;
                        continue;
                    }
                };
                let o = match group {
                    Some((inner, _)) => {
                        let r = cmd_line(s, inner, env, cin).await;
                        if let Some(code) = r.exit {
                            run.stdout.extend(r.stdout);
                            run.stderr.extend(r.stderr);
                            run.exit = Some(code);
                            return run;
                        }
                        out(r.stdout, r.stderr, r.status)
                    }
                    None => match run_cmd_command(s, &text, env, cin).await {
                        Step::Done(o) => o,
                        Step::Exit(code) => {
                            run.exit = Some(code);
                            return run;
                        }
                    },
                };
                run.status = code_of(&o);
                let mut piped = Vec::new();
                let target = if idx < last { &mut piped } else { &mut run.stdout };
                deliver(o, route(&redirs.outputs), target, &mut run.stderr, &mut opened);
                opened.close(s);
                input = Bytes::from(piped);
            }
        }
        run
    })
}

pub(super) async fn run_cmd_command(
    s: &Arc<Session>,
    text: &str,
    env: &mut Vec<(String, String)>,
    stdin: Bytes,
) -> Step {
    let text = text.trim_start();
    if text.is_empty() {
        return Step::Done(ExecOutput::ok(Vec::new()));
    }
    if let Some(o) = cmd_echo(text) {
        return Step::Done(o);
    }
    let name = cmd_tokens(text).into_iter().next().unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let rest = text
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or("", |(i, _)| &text[i..]);
    if lower == "exit" {
        let code = cmd_tokens(rest)
            .iter()
            .find(|t| !t.eq_ignore_ascii_case("/b"))
            .and_then(|t| t.parse::<i32>().ok())
            .unwrap_or(0);
        return Step::Exit(code);
    }
    if lower == "set"
        && let Some((k, v)) = rest.trim_start().split_once('=')
    {
        if v.is_empty() {
            env.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        } else {
            env_set(env, k, v.to_string(), true);
        }
        return Step::Done(ExecOutput::ok(Vec::new()));
    }
    if let Some((_, builtin)) = CMD_BUILTINS.iter().find(|(names, _)| names.contains(&lower.as_str())) {
        let args = CmdArgs {
            args: cmd_tokens(rest),
            rest,
            env: env.as_slice(),
        };
        return Step::Done(builtin(s, &args));
    }
    let call = Call {
        argv: cmd_tokens(text),
        stdin,
        env: Some(env.clone()),
    };
    Step::Done(match s.run_child(call).await {
        Some(o) => o,
        None => out(
            "",
            format!(
                "'{name}' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
            ),
            1,
        ),
    })
}

/// The outline of a cmd line for a container's main process: its outer quotes stripped and
/// `%VAR%` expanded with `vars` (the container's environment) as [`run_cmd`] does, then split
/// and tokenized as above.
pub(crate) fn outline(line: &str, vars: &[(String, String)]) -> Outline {
    outline_line(&expand_percent(&strip_cmd_quotes(line), vars))
}

fn outline_line(line: &str) -> Outline {
    split_cmd(line)
        .into_iter()
        .map(|(chain, segments)| {
            if let [segment] = segments.as_slice()
                && let Some((inner, _)) = cmd_group(segment)
            {
                let body = outline_line(inner);
                return (chain, Statement::Group { body, subshell: false });
            }
            if segments.iter().any(|s| cmd_group(s).is_some()) {
                return (chain, Statement::Compound);
            }
            let commands = segments
                .iter()
                .map(|segment| {
                    let (text, redirs) = cmd_redirections(segment);
                    let mut stdout = Stdout::Inherit;
                    for (fd, to) in &redirs.outputs {
                        match (fd, to) {
                            (1, RedirTo::Null) => stdout = Stdout::Discard,
                            (1, RedirTo::File(i)) => {
                                if let Some((target, append)) = redirs.files.get(*i) {
                                    stdout = Stdout::File {
                                        target: target.clone(),
                                        append: *append,
                                    };
                                }
                            }
                            _ => {}
                        }
                    }
                    Command {
                        words: cmd_tokens(&text),
                        complete: true,
                        raw: text,
                        stdout,
                    }
                })
                .collect();
            (
                chain,
                Statement::Pipeline {
                    commands,
                    negate: false,
                },
            )
        })
        .collect()
}
