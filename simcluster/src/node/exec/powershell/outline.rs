//! The outline of a PowerShell script for a container's main process: parsed by
//! [`super::syntax`], each command's name and arguments shown as the words PowerShell passes
//! (`$env:NAME` expanded from the container's environment, other variables as written).

use super::syntax::{Arg, Element, Expr, Parser, Part, Stmt, What};
use crate::node::exec::outline::{Chain, Command, Outline, Statement, Stdout};
use crate::node::exec::support::env_get;

/// The outline of `script`, or the parser's message. A script the parser reads only in part
/// (a `while` loop after a greeting) still runs the statements of the lines before the first one
/// it cannot read, which stand for a compound the outline does not show (it runs on).
pub(crate) fn outline(script: &str, vars: &[(String, String)]) -> Result<Outline, String> {
    let text = script.replace("\r\n", "\n");
    let error = match Parser::new(&text).statements(None) {
        Ok(stmts) => return Ok(stmts.iter().map(|s| (Chain::Always, statement(s, vars))).collect()),
        Err(e) => e.message,
    };
    let mut out: Outline = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match Parser::new(line).statements(None) {
            Ok(stmts) => out.extend(stmts.iter().map(|s| (Chain::Always, statement(s, vars)))),
            Err(_) => {
                if out.is_empty() {
                    return Err(error);
                }
                out.push((Chain::Always, Statement::Compound));
                return Ok(out);
            }
        }
    }
    Err(error)
}

fn statement(stmt: &Stmt, vars: &[(String, String)]) -> Statement {
    match stmt {
        Stmt::Pipeline(p) => Statement::Pipeline {
            commands: p.elements.iter().map(|e| element(e, vars)).collect(),
            negate: false,
        },
        Stmt::Assign { .. } => Statement::Assign,
        Stmt::If { .. } | Stmt::Foreach { .. } => Statement::Compound,
        Stmt::Exit(value) => {
            let mut words = vec!["exit".to_string()];
            let mut complete = true;
            if let Some(v) = value {
                match word(v, vars) {
                    Some(w) => words.push(w),
                    None => complete = false,
                }
            }
            Statement::Pipeline {
                commands: vec![Command {
                    words,
                    complete,
                    raw: String::new(),
                    stdout: Stdout::Inherit,
                }],
                negate: false,
            }
        }
    }
}

fn element(e: &Element, vars: &[(String, String)]) -> Command {
    let stdout = match (&e.to_file, e.drop_output) {
        (Some((target, append)), _) => Stdout::to(target, *append, true),
        (None, true) => Stdout::Discard,
        (None, false) => Stdout::Inherit,
    };
    let mut words = Vec::new();
    let mut complete = false;
    if let What::Command { name, args } = &e.what
        && let Some(name) = word(name, vars)
    {
        words.push(name);
        complete = args.iter().all(|arg| match arg {
            Arg::Param(name, value) => {
                words.push(format!("-{name}"));
                match value {
                    Some(v) => word(v, vars).map(|w| words.push(w)).is_some(),
                    None => true,
                }
            }
            Arg::Value(v) => word(v, vars).map(|w| words.push(w)).is_some(),
        });
    }
    Command {
        words,
        complete,
        raw: String::new(),
        stdout,
    }
}

/// The word an argument passes, if it is one (not a script block, a sub-expression …).
fn word(expr: &Expr, vars: &[(String, String)]) -> Option<String> {
    match expr {
        Expr::Const(v) => Some(v.text()),
        Expr::Var(name) => Some(variable(name, vars)),
        Expr::Text(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Lit(l) => Some(l.clone()),
                Part::Var(name) => Some(variable(name, vars)),
                Part::Sub(_) => None,
            })
            .collect(),
        Expr::List(items) => items
            .iter()
            .map(|i| word(i, vars))
            .collect::<Option<Vec<_>>>()
            .map(|w| w.join(",")),
        _ => None,
    }
}

/// `$env:NAME` from the environment (empty when unset); other variables stay as written.
fn variable(name: &str, vars: &[(String, String)]) -> String {
    match name.get(..4).filter(|p| p.eq_ignore_ascii_case("env:")) {
        Some(_) => env_get(vars, name.get(4..).unwrap_or_default(), true)
            .unwrap_or_default()
            .to_string(),
        None => format!("${name}"),
    }
}
