//! The outline of a PowerShell script for a container's main process: parsed by
//! [`super::syntax`] and walked in order by [`super::walk`], each command's name and arguments
//! shown as the words PowerShell passes (`$env:NAME` expanded from the container's environment,
//! variables the script set to values the walk follows as their text, other variables as
//! written). An `if` whose condition the walk evaluates becomes the group of its chosen branch,
//! a `foreach` over known items the group of its bodies, and an expression statement (or an
//! allocation) the lines it prints ([`Statement::Evaluated`]); what the walk cannot follow stays a
//! [`Statement::Compound`], which the process model runs on.

use super::syntax::{Arg, Element, Expr, Parser, Part, Pipeline, Stmt, What};
use super::walk::{MAX_ITEMS, Miss, PsHost, Walker, shown};
use super::{Kind, V, collect};
use crate::node::exec::outline::{Chain, Command, Outline, Statement, Stdout};

/// How deeply `if`/`foreach` bodies nest before the walk gives up.
const MAX_NESTING: usize = 16;

/// The outline of `script`, or the parser's message. A script the parser reads only in part
/// (a `while` loop after a greeting) still runs the statements of the lines before the first one
/// it cannot read, which stand for a compound the outline does not show (it runs on).
pub(crate) fn outline(script: &str, host: PsHost<'_>) -> Result<Outline, String> {
    let text = script.replace("\r\n", "\n");
    let error = match Parser::new(&text).statements(None) {
        Ok(stmts) => return Ok(block(&stmts, &mut Walker::new(host), 0)),
        Err(e) => e.message,
    };
    let mut walker = Walker::new(host);
    let mut out: Outline = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match Parser::new(line).statements(None) {
            Ok(stmts) => out.extend(block(&stmts, &mut walker, 0)),
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

fn block(stmts: &[Stmt], w: &mut Walker<'_>, depth: usize) -> Outline {
    stmts.iter().map(|s| (Chain::Always, statement(s, w, depth))).collect()
}

/// Error records' console text as log lines.
fn text_lines(texts: Vec<String>) -> Vec<String> {
    let mut lines = Vec::new();
    for text in texts {
        let mut these: Vec<String> = text.split("\r\n").map(str::to_string).collect();
        while these.last().is_some_and(|l| l.trim().is_empty()) {
            these.pop();
        }
        lines.extend(these);
    }
    lines
}

fn pipeline_text(p: &Pipeline) -> String {
    p.elements
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

fn statement(stmt: &Stmt, w: &mut Walker<'_>, depth: usize) -> Statement {
    w.errors.clear();
    if depth > MAX_NESTING {
        return Statement::Compound;
    }
    match stmt {
        Stmt::Pipeline(p) => match w.pipeline(p) {
            Ok(values) => match shown(&values) {
                Ok(lines) => {
                    let ok = w.errors.is_empty();
                    let mut log = text_lines(std::mem::take(&mut w.errors));
                    log.extend(lines);
                    Statement::Evaluated { log, ok, holds: 0 }
                }
                Err(_) => pipeline(p, w),
            },
            Err(Miss::Error(f)) => {
                let mut log = text_lines(std::mem::take(&mut w.errors));
                log.extend(f.lines(&pipeline_text(p)));
                Statement::Evaluated {
                    log,
                    ok: false,
                    holds: 0,
                }
            }
            Err(Miss::Unknown) => pipeline(p, w),
        },
        Stmt::Assign { name, append, value } => {
            if *append {
                w.set(name, None);
                return Statement::Assign;
            }
            match w.pipeline(value) {
                Ok(values) => {
                    let v = collect(values);
                    let holds = match &v {
                        V::Obj(o) if o.kind == Kind::Bytes => o
                            .get("Length")
                            .and_then(V::int)
                            .and_then(|n| u128::try_from(n).ok())
                            .unwrap_or(0),
                        _ => 0,
                    };
                    w.set(name, Some(v));
                    if w.errors.is_empty() && holds == 0 {
                        return Statement::Assign;
                    }
                    let ok = w.errors.is_empty();
                    let log = text_lines(std::mem::take(&mut w.errors));
                    Statement::Evaluated { log, ok, holds }
                }
                Err(Miss::Error(f)) => {
                    // The assignment does not happen.
                    w.keep_unset(name);
                    let mut log = text_lines(std::mem::take(&mut w.errors));
                    log.extend(f.lines(&format!("${name} = {}", pipeline_text(value))));
                    Statement::Evaluated {
                        log,
                        ok: false,
                        holds: 0,
                    }
                }
                Err(Miss::Unknown) => {
                    w.set(name, None);
                    Statement::Assign
                }
            }
        }
        Stmt::If { arms, otherwise } => {
            let mut log = Vec::new();
            for (cond, body) in arms {
                w.errors.clear();
                match w.pipeline(cond) {
                    Ok(values) => {
                        log.extend(text_lines(std::mem::take(&mut w.errors)));
                        if collect(values).truthy() {
                            return group(log, block(body, w, depth + 1));
                        }
                    }
                    Err(Miss::Unknown) => return Statement::Compound,
                    Err(Miss::Error(f)) => {
                        log.extend(text_lines(std::mem::take(&mut w.errors)));
                        log.extend(f.lines(&pipeline_text(cond)));
                        return Statement::Evaluated {
                            log,
                            ok: false,
                            holds: 0,
                        };
                    }
                }
            }
            let body = otherwise.as_ref().map(|b| block(b, w, depth + 1)).unwrap_or_default();
            group(log, body)
        }
        Stmt::Foreach { var, over, body } => match w.pipeline(over) {
            Ok(values) => {
                let items = collect(values).items();
                if items.len() > MAX_ITEMS {
                    return Statement::Compound;
                }
                let mut log = text_lines(std::mem::take(&mut w.errors));
                let mut all: Outline = Vec::new();
                for item in items {
                    w.set(var, Some(item));
                    all.extend(block(body, w, depth + 1));
                }
                group(std::mem::take(&mut log), all)
            }
            Err(Miss::Unknown) => Statement::Compound,
            Err(Miss::Error(f)) => {
                let mut log = text_lines(std::mem::take(&mut w.errors));
                log.extend(f.lines(&pipeline_text(over)));
                Statement::Evaluated {
                    log,
                    ok: false,
                    holds: 0,
                }
            }
        },
        Stmt::Exit(value) => {
            let mut words = vec!["exit".to_string()];
            let mut complete = true;
            if let Some(v) = value {
                match word(v, w) {
                    Some(text) => words.push(text),
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

/// The chosen branch of an `if` (or the bodies of a `foreach`) after the lines its condition
/// printed: a group that is not a subshell, so `exit` in it ends the script.
fn group(log: Vec<String>, body: Outline) -> Statement {
    let mut all: Outline = Vec::new();
    if !log.is_empty() {
        all.push((
            Chain::Always,
            Statement::Evaluated {
                log,
                ok: true,
                holds: 0,
            },
        ));
    }
    all.extend(body);
    Statement::Group {
        body: all,
        subshell: false,
    }
}

fn pipeline(p: &Pipeline, w: &mut Walker<'_>) -> Statement {
    Statement::Pipeline {
        commands: p.elements.iter().map(|e| element(e, w)).collect(),
        negate: false,
    }
}

fn element(e: &Element, w: &mut Walker<'_>) -> Command {
    let stdout = match (&e.to_file, e.drop_output) {
        (Some((target, append)), _) => Stdout::to(target, *append, true),
        (None, true) => Stdout::Discard,
        (None, false) => Stdout::Inherit,
    };
    let mut words = Vec::new();
    let mut complete = false;
    if let What::Command { name, args } = &e.what
        && let Some(name) = word(name, w)
    {
        words.push(name);
        complete = args.iter().all(|arg| match arg {
            Arg::Param(name, value) => {
                words.push(format!("-{name}"));
                match value {
                    Some(v) => word(v, w).map(|text| words.push(text)).is_some(),
                    None => true,
                }
            }
            Arg::Value(v) => word(v, w).map(|text| words.push(text)).is_some(),
        });
    }
    Command {
        words,
        complete,
        raw: String::new(),
        stdout,
    }
}

/// The word an argument passes, if the outline can show it: literals, `$env:NAME`, variables
/// the walk knows (others as written), and expressions the walk evaluates to a string or number.
fn word(expr: &Expr, w: &mut Walker<'_>) -> Option<String> {
    match expr {
        Expr::Const(v) => Some(v.text()),
        Expr::Var(name) => Some(variable(name, w)),
        Expr::Text(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Lit(l) => Some(l.clone()),
                Part::Var(name) => Some(variable(name, w)),
                Part::Sub(_) => None,
            })
            .collect::<Option<String>>()
            .or_else(|| evaluated(expr, w)),
        Expr::List(items) => items
            .iter()
            .map(|i| word(i, w))
            .collect::<Option<Vec<_>>>()
            .map(|words| words.join(",")),
        _ => evaluated(expr, w),
    }
}

fn evaluated(expr: &Expr, w: &mut Walker<'_>) -> Option<String> {
    match w.eval(expr).ok()? {
        v @ (V::Str(_) | V::Int(_) | V::Num(_) | V::Bool(_)) => Some(v.text()),
        _ => None,
    }
}

/// `$env:NAME` from the environment (empty when unset); a variable the walk knows as its text;
/// other variables stay as written.
fn variable(name: &str, w: &mut Walker<'_>) -> String {
    match w.eval(&Expr::Var(name.to_string())) {
        Ok(v @ (V::Null | V::Str(_) | V::Int(_) | V::Num(_) | V::Bool(_))) => v.text(),
        _ => format!("${name}"),
    }
}
