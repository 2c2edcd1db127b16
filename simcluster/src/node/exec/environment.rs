//! Environment and small utilities: printenv, env, echo, printf, true, false, test.

use std::fmt::Write as _;
use std::sync::Arc;

use super::session::Session;
use super::support::{env_get, env_set, out};
use super::{Call, Reply};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// Environment and small utilities: printenv, env, echo, true, false, test
// ---------------------------------------------------------------------------------------------

pub(super) fn env_listing(env: &[(String, String)]) -> ExecOutput {
    ExecOutput::ok(env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>())
}

pub(super) fn printenv(s: &Arc<Session>, call: Call) -> Reply {
    if call.args().is_empty() {
        return env_listing(call.env(s)).into();
    }
    let mut stdout = String::new();
    let mut code = 0;
    for name in call.args() {
        match env_get(call.env(s), name, s.windows()) {
            Some(v) => {
                let _ = writeln!(stdout, "{v}");
            }
            None => code = 1,
        }
    }
    out(stdout, "", code).into()
}

pub(super) fn env(s: &Arc<Session>, call: Call) -> Reply {
    let mut vars = call.env(s).to_vec();
    let mut rest = call.args();
    while let Some((first, tail)) = rest.split_first() {
        if first == "-i" {
            vars.clear();
        } else if let Some((k, v)) = first.split_once('=').filter(|(k, _)| !k.is_empty()) {
            env_set(&mut vars, k, v.to_string(), s.windows());
        } else {
            break;
        }
        rest = tail;
    }
    let Some(name) = rest.first().cloned() else {
        return env_listing(&vars).into();
    };
    let child = Call {
        argv: rest.to_vec(),
        stdin: call.stdin,
        env: Some(vars),
    };
    let s = s.clone();
    Reply::Later(Box::pin(async move {
        match s.run_child(child).await {
            Some(o) => o,
            None => out(
                "",
                format!("env: can't execute '{name}': No such file or directory\n"),
                127,
            ),
        }
    }))
}

pub(super) fn echo(_s: &Arc<Session>, call: Call) -> Reply {
    ExecOutput::ok(super::echo::sh_echo(call.args())).into()
}

pub(super) fn printf(_s: &Arc<Session>, call: Call) -> Reply {
    ExecOutput::ok(super::echo::printf(call.args())).into()
}

pub(super) fn succeed(_s: &Arc<Session>, _call: Call) -> Reply {
    ExecOutput::ok(Vec::new()).into()
}

pub(super) fn fail_quietly(_s: &Arc<Session>, _call: Call) -> Reply {
    out("", "", 1).into()
}

pub(super) fn test(s: &Arc<Session>, call: Call) -> Reply {
    let mut args: Vec<String> = call.args().to_vec();
    if s.command_name(call.argv.first().map(String::as_str).unwrap_or("")) == "[" {
        if args.last().map(String::as_str) != Some("]") {
            return out("", "[: missing ]\n", 2).into();
        }
        args.pop();
    }
    match eval_test(s, &args) {
        Some(true) => out("", "", 0),
        Some(false) => out("", "", 1),
        None => out("", "test: syntax error\n", 2),
    }
    .into()
}

pub(super) fn eval_test(s: &Session, args: &[String]) -> Option<bool> {
    let disk = s.disk();
    let entry = |p: &str| disk.get(&s.path(p));
    match args {
        [] => Some(false),
        [bang, rest @ ..] if bang == "!" => eval_test(s, rest).map(|b| !b),
        [single] => Some(!single.is_empty()),
        [op, p] => Some(match op.as_str() {
            "-n" => !p.is_empty(),
            "-z" => p.is_empty(),
            "-e" | "-r" | "-a" => entry(p).is_some(),
            "-f" => entry(p).is_some_and(|e| e.file.is_some()),
            "-d" => entry(p).is_some_and(|e| e.file.is_none()),
            "-s" => entry(p).is_some_and(|e| e.size() > 0),
            "-x" => entry(p).is_some_and(|e| e.file.as_ref().is_none_or(|(_, m)| m & 0o111 != 0)),
            "-w" => entry(p).is_some_and(|e| e.file.as_ref().is_some_and(|(_, m)| m & 0o222 != 0)),
            "-L" | "-h" => false,
            _ => return None,
        }),
        [a, op, b] => {
            let num = |x: &str| x.trim().parse::<i64>().ok();
            Some(match op.as_str() {
                "=" | "==" => a == b,
                "!=" => a != b,
                "-eq" => num(a)? == num(b)?,
                "-ne" => num(a)? != num(b)?,
                "-lt" => num(a)? < num(b)?,
                "-le" => num(a)? <= num(b)?,
                "-gt" => num(a)? > num(b)?,
                "-ge" => num(a)? >= num(b)?,
                _ => return None,
            })
        }
        _ => None,
    }
}
