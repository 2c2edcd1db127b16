//! A container's main PowerShell process, evaluated as its outline is made ([`super::outline`]):
//! what the script's expressions, conditions and assignments come to, statement by statement, so
//! that an `if`/`elseif`/`else` takes its branch, a `foreach` runs its body per item, an
//! expression statement prints its value and an allocation (`[byte[]]::new(n)`) meets the
//! container's memory limit. The operators, conversions and methods are the exec'd PowerShell's
//! ([`super::eval`]: `binary`, `cast`, `method`), and so are the cmdlets it can answer without
//! a session (`Get-Process` over the processes of [`super::system`], `New-Object byte[]`,
//! `Write-Output`). Anything else — a command the walk does not model, a variable such a command
//! set, `$?` — is [`Miss::Unknown`]: the statement stays as the outline showed it before (a
//! compound the process model runs on).

use std::collections::BTreeMap;

use super::eval::{binary, cast, index_of, method};
use super::invocation::{CMDLETS, Given, Invocation};
use super::syntax::{Arg, Element, Expr, Op, Part, Pipeline, Stmt, What};
use super::system::{DotNetMiss, get_process, method_exception_parts, new_object, process_table, static_member};
use super::{Kind, V, collect, s};
use crate::config::profile::NodeProfile;
use crate::node::exec::ps_errors::ps_error;
use crate::node::exec::support::env_get;

/// What a container's main PowerShell process sees of its container.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PsHost<'a> {
    /// The environment (`$env:NAME`), with the variables Windows sets (`COMPUTERNAME`, …).
    pub(crate) vars: &'a [(String, String)],
    pub(crate) windows: bool,
    /// The node when the container is a HostProcess container (SEC-HOSTPROCESS: it runs on the
    /// host, so `Get-Process` sees the node's kubelet and containerd).
    pub(crate) host: Option<&'a NodeProfile>,
    /// The container's memory limit in bytes.
    pub(crate) limit: Option<u128>,
}

/// Why an expression or statement has no value here.
#[derive(Debug)]
pub(super) enum Miss {
    /// The walk cannot follow it.
    Unknown,
    /// A statement-terminating error (a .NET exception, a failed conversion).
    Error(Failure),
}

/// A statement-terminating error record: the cmdlet that wrote it (or none), its message,
/// category and error id.
#[derive(Debug)]
pub(super) struct Failure {
    head: String,
    message: String,
    category: String,
    fqid: String,
}

impl Failure {
    /// A runtime error of an operator, conversion or method.
    fn runtime(message: String) -> Miss {
        Miss::Error(Self {
            head: String::new(),
            message,
            category: "NotSpecified: (:) [], RuntimeException".into(),
            fqid: "RuntimeException".into(),
        })
    }

    /// A .NET exception thrown by a method call.
    fn exception(head: &str, method: &str, argc: usize, message: &str) -> Miss {
        let (message, category, fqid) = method_exception_parts(head, method, argc, message);
        Miss::Error(Self {
            head: head.into(),
            message,
            category,
            fqid,
        })
    }

    /// The record as the console shows it, for the statement `statement`, as log lines.
    pub(super) fn lines(&self, statement: &str) -> Vec<String> {
        let text = ps_error(statement, &self.head, &self.message, &self.category, &self.fqid);
        let mut lines: Vec<String> = text.split("\r\n").map(str::to_string).collect();
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        lines
    }
}

/// The state of the walk: variables the script set, and the non-terminating errors the current
/// statement wrote.
pub(super) struct Walker<'a> {
    host: PsHost<'a>,
    /// `Some(value)`, or `None` when something the walk does not follow set it.
    vars: BTreeMap<String, Option<V>>,
    pub(super) errors: Vec<String>,
}

/// At most this many items a `foreach` walks.
pub(super) const MAX_ITEMS: usize = 1000;

impl<'a> Walker<'a> {
    pub(super) fn new(host: PsHost<'a>) -> Self {
        Self {
            host,
            vars: BTreeMap::new(),
            errors: Vec::new(),
        }
    }

    fn var(&self, name: &str) -> Result<V, Miss> {
        let lower = name.to_ascii_lowercase();
        if let Some(env) = lower.strip_prefix("env:") {
            return Ok(env_get(self.host.vars, name.get(4..).unwrap_or(env), true).map_or(V::Null, s));
        }
        match lower.as_str() {
            "true" => return Ok(V::Bool(true)),
            "false" => return Ok(V::Bool(false)),
            "null" => return Ok(V::Null),
            _ => {}
        }
        match self.vars.get(&lower) {
            Some(Some(v)) => Ok(v.clone()),
            // Automatic variables (`$?`, `$LASTEXITCODE`, `$PSVersionTable` …) and what unfollowed
            // commands set.
            _ => Err(Miss::Unknown),
        }
    }

    /// `$name = value` (`None`: set by something the walk does not follow).
    pub(super) fn set(&mut self, name: &str, value: Option<V>) {
        self.vars.insert(name.to_ascii_lowercase(), value);
    }

    /// A variable an assignment that failed did not set: unset variables are `$null`.
    pub(super) fn keep_unset(&mut self, name: &str) {
        self.vars.entry(name.to_ascii_lowercase()).or_insert(Some(V::Null));
    }

    /// A statement's output (captured: `$( )`, `( )`).
    fn capture(&mut self, stmts: &[Stmt]) -> Result<Vec<V>, Miss> {
        let mut values = Vec::new();
        for stmt in stmts {
            match stmt {
                Stmt::Pipeline(p) => values.extend(self.pipeline(p)?),
                _ => return Err(Miss::Unknown),
            }
        }
        Ok(values)
    }

    /// A pipeline's output.
    pub(super) fn pipeline(&mut self, p: &Pipeline) -> Result<Vec<V>, Miss> {
        let mut input: Option<Vec<V>> = None;
        for e in &p.elements {
            let before = self.errors.len();
            let mut values = match &e.what {
                What::Expr(x) if input.is_none() => self.eval(x)?.items(),
                What::Expr(_) => return Err(Miss::Unknown),
                What::Command { name, args } => {
                    let Expr::Const(name) = name else {
                        return Err(Miss::Unknown);
                    };
                    self.command(&name.text(), args, input.take(), e)?
                }
            };
            if e.drop_errors || e.merge_errors {
                self.errors.truncate(before);
            }
            if e.drop_output || e.to_file.is_some() {
                if e.to_file.is_some() {
                    return Err(Miss::Unknown);
                }
                values.clear();
            }
            input = Some(values);
        }
        Ok(input.unwrap_or_default())
    }

    /// The cmdlets the walk answers: `Get-Process`, `New-Object byte[]`, `Write-Output`,
    /// `Out-Null`.
    fn command(&mut self, name: &str, args: &[Arg], input: Option<Vec<V>>, e: &Element) -> Result<Vec<V>, Miss> {
        let lower = name.to_ascii_lowercase();
        // `ps` is Get-Process's alias on Windows only (a native command elsewhere).
        let lower = if lower == "ps" && self.host.windows {
            "get-process".to_string()
        } else {
            lower
        };
        let Some(spec) = CMDLETS.iter().find(|c| c.names.contains(&lower.as_str())) else {
            return Err(Miss::Unknown);
        };
        let mut given = Vec::new();
        for a in args {
            given.push(match a {
                Arg::Param(p, inline) => Given::Param(
                    p.to_ascii_lowercase(),
                    match inline {
                        Some(x) => Some(self.eval(x)?),
                        None => None,
                    },
                ),
                Arg::Value(x) => Given::Value(self.eval(x)?),
            });
        }
        let call = Invocation::bind(spec, given);
        match spec.names.first().copied() {
            Some("get-process") => {
                let table = process_table(self.host.host.filter(|_| self.host.windows));
                let table = if self.host.windows {
                    table
                } else {
                    // A Linux container's PowerShell sees itself.
                    vec![super::obj(
                        Kind::Cim,
                        vec![
                            ("Name", s("pwsh")),
                            ("ProcessId", V::Int(1)),
                            ("ExecutablePath", V::Null),
                        ],
                    )]
                };
                let (found, errors) = get_process(&call, &table, &e.text);
                if !call.silent() {
                    self.errors.extend(errors);
                }
                Ok(found)
            }
            Some("new-object") => match new_object(&call, self.host.windows, self.host.limit) {
                Ok(v) => Ok(vec![v]),
                Err(DotNetMiss::Threw(message)) => Err(Failure::exception("New-Object", ".ctor", 1, &message)),
                Err(DotNetMiss::Unmodelled) => Err(Miss::Unknown),
            },
            Some("write-output") => {
                let mut out = input.unwrap_or_default();
                if let Some(v) = call.value(&["inputobject"], 0) {
                    out.extend(v.items());
                }
                out.extend(call.positional.iter().skip(1).flat_map(|v| v.clone().items()));
                Ok(out)
            }
            Some("out-null") => Ok(Vec::new()),
            _ => Err(Miss::Unknown),
        }
    }

    /// An expression's value.
    pub(super) fn eval(&mut self, e: &Expr) -> Result<V, Miss> {
        Ok(match e {
            Expr::Const(v) => v.clone(),
            Expr::Var(name) => self.var(name)?,
            Expr::Text(parts) => {
                let mut text = String::new();
                for part in parts {
                    match part {
                        Part::Lit(l) => text.push_str(l),
                        Part::Var(name) => text.push_str(&self.var(name)?.text()),
                        Part::Sub(stmts) => text.push_str(&collect(self.capture(stmts)?).text()),
                    }
                }
                V::Str(text)
            }
            Expr::Sub(stmts, array) => {
                let values = self.capture(stmts)?;
                if *array { V::Arr(values) } else { collect(values) }
            }
            Expr::Paren(p) => collect(self.pipeline(p)?),
            Expr::List(items) => {
                let mut values = Vec::new();
                for item in items {
                    values.push(self.eval(item)?);
                }
                V::Arr(values)
            }
            Expr::Not(x) => V::Bool(!self.eval(x)?.truthy()),
            Expr::Neg(x) => match self.eval(x)? {
                V::Int(n) => V::Int(-n),
                other => V::Num(-other.number().unwrap_or(0.0)),
            },
            Expr::Cast(ty, x) => {
                let v = self.eval(x)?;
                cast(ty, v).map_err(Failure::runtime)?
            }
            Expr::Binary(Op::And, _, a, b) => V::Bool(self.eval(a)?.truthy() && self.eval(b)?.truthy()),
            Expr::Binary(Op::Or, _, a, b) => V::Bool(self.eval(a)?.truthy() || self.eval(b)?.truthy()),
            Expr::Binary(op, case, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                // `-match` also sets `$Matches`, which the walk does not keep.
                if matches!(op, Op::Match) {
                    self.set("matches", None);
                }
                binary(*op, *case, x, y).map_err(Failure::runtime)?
            }
            Expr::Member(x, name) => self.eval(x)?.member(name),
            Expr::Call(x, name, args) => {
                let target = self.eval(x)?;
                let mut values = Vec::new();
                for a in args {
                    values.push(self.eval(a)?);
                }
                method(&target, name, &values).map_err(Failure::runtime)?
            }
            Expr::Index(x, i) => {
                let (target, index) = (self.eval(x)?, self.eval(i)?);
                index_of(&target, &index)
            }
            Expr::Static(ty, member, args) => {
                let values = match args {
                    Some(list) => {
                        let mut values = Vec::new();
                        for a in list {
                            values.push(self.eval(a)?);
                        }
                        Some(values)
                    }
                    None => None,
                };
                match static_member(ty, member, values.as_deref(), self.host.windows, self.host.limit) {
                    Ok(v) => v,
                    Err(DotNetMiss::Threw(message)) => {
                        let method = if member.eq_ignore_ascii_case("new") {
                            ".ctor"
                        } else {
                            member
                        };
                        let argc = values.as_ref().map_or(0, Vec::len);
                        return Err(Failure::exception("", method, argc, &message));
                    }
                    Err(DotNetMiss::Unmodelled) => return Err(Miss::Unknown),
                }
            }
            Expr::Block(_) | Expr::Hash(_) => return Err(Miss::Unknown),
        })
    }
}

/// The lines a statement's output shows as in the log (`Out-Default`): strings and numbers one
/// per line; objects the walk does not format are unknown.
pub(super) fn shown(values: &[V]) -> Result<Vec<String>, Miss> {
    let mut lines = Vec::new();
    for v in values {
        match v {
            V::Null => {}
            V::Obj(_) | V::Block(_) | V::Arr(_) => return Err(Miss::Unknown),
            other => lines.extend(other.text().split('\n').map(|l| l.trim_end_matches('\r').to_string())),
        }
    }
    Ok(lines)
}
