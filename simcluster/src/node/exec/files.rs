//! File commands: cat, ls, stat, grep, findstr.

use std::fmt::Write as _;
use std::sync::Arc;

use super::disk::DiskEntry;
use super::session::Session;
use super::support::out;
use super::{Call, Reply};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// Files: cat, ls, stat, grep, findstr
// ---------------------------------------------------------------------------------------------

pub(super) fn cat(s: &Arc<Session>, call: Call) -> Reply {
    let files: Vec<&String> = call
        .args()
        .iter()
        .filter(|a| !a.starts_with('-') || a.as_str() == "-")
        .collect();
    if files.is_empty() {
        return ExecOutput::ok(call.stdin.to_vec()).into();
    }
    let (mut stdout, mut stderr, mut code) = (Vec::new(), String::new(), 0);
    for f in files {
        if f == "-" {
            stdout.extend_from_slice(&call.stdin);
            continue;
        }
        match s.disk().get(&s.path(f)).map(|e| &e.file) {
            Some(Some((data, _))) => stdout.extend_from_slice(data),
            Some(None) => {
                stderr.push_str("cat: read error: Is a directory\n");
                code = 1;
            }
            None => {
                let _ = writeln!(stderr, "cat: can't open '{f}': No such file or directory");
                code = 1;
            }
        }
    }
    out(stdout, stderr, code).into()
}

pub(super) fn rwx(mode: u32) -> String {
    (0..9)
        .map(|i| {
            let bit = 1 << (8 - i);
            match (mode & bit != 0, i % 3) {
                (false, _) => '-',
                (true, 0) => 'r',
                (true, 1) => 'w',
                (true, _) => 'x',
            }
        })
        .collect()
}

pub(super) fn mode_and_type(e: &DiskEntry) -> (u32, char) {
    match &e.file {
        Some((_, mode)) => (*mode, '-'),
        None => (0o755, 'd'),
    }
}

pub(super) fn ls(s: &Arc<Session>, call: Call) -> Reply {
    let flags: String = call
        .args()
        .iter()
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .flat_map(|a| a.chars().skip(1))
        .collect();
    let mut paths: Vec<String> = call
        .args()
        .iter()
        .filter(|a| !a.starts_with('-') || a.len() == 1)
        .cloned()
        .collect();
    if paths.is_empty() {
        paths.push(".".into());
    }
    let long = flags.contains('l');
    let line = |e: &DiskEntry, shown: &str| {
        if !long {
            return format!("{shown}\n");
        }
        let (mode, kind) = mode_and_type(e);
        let when = s.stamp.format("%b %e %H:%M");
        format!(
            "{kind}{}    1 root     root     {:>9} {when} {shown}\n",
            rwx(mode),
            e.size()
        )
    };
    let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
    let many = paths.len() > 1;
    for p in &paths {
        match s.disk().get(&s.path(p)) {
            None => {
                let _ = writeln!(stderr, "ls: {p}: No such file or directory");
                code = 1;
            }
            Some(e) if e.file.is_some() => stdout.push_str(&line(e, p)),
            Some(dir) => {
                if many {
                    let _ = writeln!(stdout, "{p}:");
                }
                if flags.contains('a') {
                    stdout.push_str(&line(dir, "."));
                    stdout.push_str(&line(dir, ".."));
                }
                for child in s.disk().children(&dir.path) {
                    stdout.push_str(&line(child, child.name()));
                }
                if many {
                    stdout.push('\n');
                }
            }
        }
    }
    out(stdout, stderr, code).into()
}

pub(super) fn stat(s: &Arc<Session>, call: Call) -> Reply {
    let mut format = None;
    let mut files = Vec::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        if a == "-c" || a == "--format" {
            format = args.next().cloned();
        } else if let Some(f) = a.strip_prefix("--format=") {
            format = Some(f.to_string());
        } else if let Some(f) = a.strip_prefix("-c").filter(|f| !f.is_empty()) {
            format = Some(f.to_string());
        } else if !(a.starts_with('-') && a.len() > 1) {
            files.push(a.clone());
        }
    }
    if files.is_empty() {
        return out("", "Usage: stat [-ltf] [-c FMT] FILE...\n", 1).into();
    }
    let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
    for f in &files {
        let disk = s.disk();
        let Some(e) = disk.get(&s.path(f)) else {
            let _ = writeln!(stderr, "stat: can't stat '{f}': No such file or directory");
            code = 1;
            continue;
        };
        let (mode, kind) = mode_and_type(e);
        let kind_name = if kind == 'd' { "directory" } else { "regular file" };
        let fmt = format.clone().unwrap_or_else(|| {
            "  File: %n\n  Size: %s\t%F\nAccess: (0%a/%A)  Uid: (    0/    root)   Gid: (    0/    root)".into()
        });
        let mut text = String::new();
        let mut chars = fmt.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                text.push(c);
                continue;
            }
            match chars.next() {
                Some('a') => text.push_str(&format!("{mode:o}")),
                Some('A') => text.push_str(&format!("{kind}{}", rwx(mode))),
                Some('n') => text.push_str(f),
                Some('s') => text.push_str(&e.size().to_string()),
                Some('F') => text.push_str(kind_name),
                Some('U' | 'G') => text.push_str("root"),
                Some('u' | 'g') => text.push('0'),
                Some('%') => text.push('%'),
                Some(other) => {
                    text.push('?');
                    let _ = other;
                }
                None => text.push('%'),
            }
        }
        let _ = writeln!(stdout, "{text}");
    }
    out(stdout, stderr, code).into()
}

/// A line matches a pattern: `^`/`$` anchor it, otherwise it is a substring.
pub(super) fn line_matches(line: &str, pattern: &str, ignore_case: bool) -> bool {
    let (line, pattern) = if ignore_case {
        (line.to_lowercase(), pattern.to_lowercase())
    } else {
        (line.to_string(), pattern.to_string())
    };
    let start = pattern.strip_prefix('^');
    let body = start.unwrap_or(&pattern);
    let end = body.strip_suffix('$');
    match (start.is_some(), end) {
        (true, Some(b)) => line == b,
        (true, None) => line.starts_with(body),
        (false, Some(b)) => line.ends_with(b),
        (false, None) => line.contains(body),
    }
}

pub(super) fn grep(s: &Arc<Session>, call: Call) -> Reply {
    let mut pattern: Option<String> = None;
    let mut files = Vec::new();
    let mut flags = String::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        if a == "-e" {
            pattern = args.next().cloned();
        } else if a.starts_with('-') && a.len() > 1 {
            flags.push_str(&a[1..]);
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            files.push(a.clone());
        }
    }
    let Some(pattern) = pattern else {
        return out(
            "",
            "Usage: grep [-HhnlLoqvsrRiwFE] [-m N] [-A|B|C N] { PATTERN | -e PATTERN... | -f FILE... } [FILE]...\n",
            2,
        )
        .into();
    };
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let mut stderr = String::new();
    if files.is_empty() {
        inputs.push((String::new(), call.stdin.to_vec()));
    }
    for f in &files {
        match s.disk().get(&s.path(f)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => inputs.push((f.clone(), data.clone())),
            None => {
                let _ = writeln!(stderr, "grep: {f}: No such file or directory");
            }
        }
    }
    let (invert, icase) = (flags.contains('v'), flags.contains('i'));
    let mut stdout = String::new();
    let mut matched = 0usize;
    for (name, data) in &inputs {
        let text = String::from_utf8_lossy(data);
        let hits: Vec<&str> = text
            .lines()
            .filter(|l| line_matches(l, &pattern, icase) != invert)
            .collect();
        matched += hits.len();
        if flags.contains('c') {
            let prefix = if files.len() > 1 {
                format!("{name}:")
            } else {
                String::new()
            };
            let _ = writeln!(stdout, "{prefix}{}", hits.len());
        } else {
            for hit in hits {
                let prefix = if files.len() > 1 {
                    format!("{name}:")
                } else {
                    String::new()
                };
                let _ = writeln!(stdout, "{prefix}{hit}");
            }
        }
    }
    if flags.contains('q') {
        stdout.clear();
    }
    let code = match (matched > 0, stderr.is_empty()) {
        (true, _) if flags.contains('q') => 0,
        (_, false) => 2,
        (true, true) => 0,
        (false, true) => 1,
    };
    out(stdout, stderr, code).into()
}

/// `findstr [/i] [/v] [/c:"text"] text [file…]`.
/// `icacls PATH…`: the access control list of each file or directory. Windows permissions are
/// ACLs of security identifiers, not a mode bitmask (WI31, "File permissions"); a file in a
/// container has the ACL it inherits where it lies — for a volume's files the kubelet's directory
/// on the node, SYSTEM and Administrators with full control and Users read & execute — whatever
/// `defaultMode` or item `mode` a Secret or ConfigMap volume sets: DefaultMode depends on UID/GID,
/// which Windows does not have (WSTO, W14; STO-DEFAULTMODE). Directories' entries also say that
/// files and folders under them inherit (`(OI)(CI)`).
pub(super) fn icacls(s: &Arc<Session>, call: Call) -> Reply {
    let paths: Vec<&String> = call.args().iter().filter(|a| !a.starts_with('/')).collect();
    if paths.is_empty() {
        return out("", "Invalid parameter \"\"\r\n", 87).into();
    }
    let (mut stdout, mut stderr) = (String::new(), String::new());
    let (mut done, mut failed) = (0, 0);
    for p in paths {
        let disk = s.disk();
        let Some(e) = disk.get(&s.path(p)) else {
            let _ = write!(stderr, "{p}: The system cannot find the file specified.\r\n");
            failed += 1;
            continue;
        };
        let inherit = if e.file.is_some() { "" } else { "(OI)(CI)" };
        let pad = " ".repeat(p.chars().count() + 1);
        let _ = write!(
            stdout,
            "{p} NT AUTHORITY\\SYSTEM:(I){inherit}(F)\r\n{pad}BUILTIN\\Administrators:(I){inherit}(F)\r\n{pad}BUILTIN\\Users:(I){inherit}(RX)\r\n\r\n"
        );
        done += 1;
    }
    let _ = write!(
        stdout,
        "Successfully processed {done} files; Failed processing {failed} files\r\n"
    );
    // icacls exits 2 when a file is not found (ERROR_FILE_NOT_FOUND).
    out(stdout, stderr, if failed > 0 { 2 } else { 0 }).into()
}

pub(super) fn findstr(s: &Arc<Session>, call: Call) -> Reply {
    let (mut icase, mut invert) = (false, false);
    let mut pattern: Option<String> = None;
    let mut files = Vec::new();
    for a in call.args() {
        let lower = a.to_ascii_lowercase();
        if let Some(text) = lower.strip_prefix("/c:").map(|_| a.get(3..).unwrap_or("")) {
            pattern = Some(text.trim_matches('"').to_string());
        } else if lower == "/i" {
            icase = true;
        } else if lower == "/v" {
            invert = true;
        } else if lower.starts_with('/') && lower.len() == 2 {
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            files.push(a.clone());
        }
    }
    let Some(pattern) = pattern else {
        return out("", "FINDSTR: Bad command line\r\n", 2).into();
    };
    let mut text = String::new();
    let mut stderr = String::new();
    if files.is_empty() {
        text.push_str(&String::from_utf8_lossy(&call.stdin));
    }
    for f in &files {
        match s.disk().get(&s.path(f)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => text.push_str(&String::from_utf8_lossy(data)),
            None => {
                let _ = write!(stderr, "FINDSTR: Cannot open {f}\r\n");
            }
        }
    }
    let hits: Vec<&str> = text
        .lines()
        .filter(|l| line_matches(l, &pattern, icase) != invert)
        .collect();
    let stdout: String = hits.iter().map(|h| format!("{h}\r\n")).collect();
    out(stdout, stderr, if hits.is_empty() { 1 } else { 0 }).into()
}
