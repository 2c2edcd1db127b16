//! PowerShell evaluation: statements, pipelines, operators, member access and output formatting.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;

use super::invocation::{CMDLETS, Errors, Given, Invocation, texts};
use super::patterns::{glob, regex};
use super::syntax::{Arg, Block, Element, Expr, Op, Parser, Part, Pipeline, Stmt, What};
use super::{Fut, Kind, Obj, V, collect, obj, s};
use crate::node::exec::Call;
use crate::node::exec::agnhost::ps_dotnet_udp;
use crate::node::exec::disk::DiskEntry;
use crate::node::exec::ps_errors::ps_not_recognized;
use crate::node::exec::session::Session;
use crate::node::exec::support::{code_of, env_get, out};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// Why evaluation stopped early.
#[derive(Debug)]
pub(super) enum Flow {
    Exit(i32),
    /// A terminating error: its console text.
    Fail(String),
}

/// A running script.
pub(super) struct Ps {
    pub(super) s: Arc<Session>,
    pub(super) core: bool,
    pub(super) env: Vec<(String, String)>,
    pub(super) vars: BTreeMap<String, V>,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    /// `$?` of the last statement.
    pub(super) last_ok: bool,
    /// The exit code of the last native command (`$LASTEXITCODE`).
    pub(super) native: Option<i32>,
    /// Whether the script imported microsoft/SDN's `hns.v2.psm1`, whose `Get-HnsPolicyList`
    /// lists the HNS v2 load balancers (see [`super::hostcmdlets::get_hns_policy_list`]).
    pub(super) hns_v2: bool,
}

/// Runs a PowerShell script in the session.
pub(in crate::node::exec) async fn run(
    s: Arc<Session>,
    script: String,
    env: Vec<(String, String)>,
    core: bool,
) -> ExecOutput {
    if let Some(o) = ps_dotnet_udp(&s, &script) {
        return o;
    }
    let text = script.replace("\r\n", "\n");
    let mut parser = Parser::new(&text);
    let stmts = match parser.statements(None) {
        Ok(stmts) => stmts,
        Err(e) => {
            let line: String = text.lines().next().unwrap_or("").to_string();
            let message = format!(
                "At line:1 char:{}\r\n+ {line}\r\n{}\r\n    + CategoryInfo          : ParserError: (:) [], ParentContainsErrorRecordException\r\n    + FullyQualifiedErrorId : UnexpectedToken\r\n \r\n",
                e.at + 1,
                e.message
            );
            return out("", message, 1);
        }
    };
    let mut ps = Ps {
        s,
        core,
        env,
        vars: BTreeMap::new(),
        stdout: Vec::new(),
        stderr: Vec::new(),
        last_ok: true,
        native: None,
        hns_v2: false,
    };
    for stmt in &stmts {
        match ps.statement(stmt, false).await {
            Ok(values) => {
                let text = ps.format(&values);
                ps.stdout.extend(text.into_bytes());
            }
            Err(Flow::Exit(code)) => return out(ps.stdout, ps.stderr, code),
            Err(Flow::Fail(text)) => {
                ps.stderr.extend(text.into_bytes());
                return out(ps.stdout, ps.stderr, 1);
            }
        }
    }
    let code = match (ps.core, ps.native) {
        (true, Some(code)) => code,
        _ if ps.last_ok => 0,
        _ => 1,
    };
    out(ps.stdout, ps.stderr, code)
}

pub(super) fn compare(a: &V, b: &V, case: bool) -> Option<std::cmp::Ordering> {
    match a {
        V::Int(_) | V::Num(_) => Some(a.number()?.partial_cmp(&b.number()?)?),
        V::Bool(x) => Some(x.cmp(&b.truthy())),
        V::Null => Some(if matches!(b, V::Null) {
            std::cmp::Ordering::Equal
        } else {
            std::cmp::Ordering::Less
        }),
        _ => {
            let (x, y) = (a.text(), b.text());
            Some(if case {
                x.cmp(&y)
            } else {
                x.to_lowercase().cmp(&y.to_lowercase())
            })
        }
    }
}

pub(super) fn equal(a: &V, b: &V, case: bool) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Null, _) | (_, V::Null) => false,
        _ => compare(a, b, case) == Some(std::cmp::Ordering::Equal),
    }
}

impl Ps {
    pub(super) fn var(&self, name: &str) -> V {
        let lower = name.to_ascii_lowercase();
        if let Some(env) = lower.strip_prefix("env:") {
            return env_get(&self.env, name.get(4..).unwrap_or(env), true)
                .map(|v| V::Str(v.to_string()))
                .unwrap_or(V::Null);
        }
        match lower.as_str() {
            "true" => V::Bool(true),
            "false" => V::Bool(false),
            "null" => V::Null,
            "?" => V::Bool(self.last_ok),
            "lastexitcode" => self.native.map_or(V::Null, |c| V::Int(i64::from(c))),
            "pwd" => obj(Kind::PathInfo, vec![("Path", s(self.s.cwd()))]),
            "home" => s(env_get(&self.env, "USERPROFILE", true).unwrap_or("")),
            "pshome" => s("C:\\Windows\\System32\\WindowsPowerShell\\v1.0"),
            _ => self.vars.get(&lower).cloned().unwrap_or(V::Null),
        }
    }

    pub(super) fn set(&mut self, name: &str, value: V) {
        let lower = name.to_ascii_lowercase();
        if let Some(env) = lower.strip_prefix("env:") {
            let key = name.get(4..).unwrap_or(env).to_string();
            self.env.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
            if !matches!(value, V::Null) {
                self.env.push((key, value.text()));
            }
            return;
        }
        self.vars.insert(lower, value);
    }

    /// Runs statements; their output is returned (at top level the caller shows it).
    pub(super) fn statements<'a>(&'a mut self, stmts: &'a [Stmt], capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            let mut values = Vec::new();
            for stmt in stmts {
                let produced = self.statement(stmt, capture).await?;
                if capture {
                    values.extend(produced);
                } else {
                    // Output reaches the console as each statement ends.
                    let text = self.format(&produced);
                    self.stdout.extend(text.into_bytes());
                }
            }
            Ok(values)
        })
    }

    pub(super) fn statement<'a>(&'a mut self, stmt: &'a Stmt, capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            match stmt {
                Stmt::Pipeline(p) => self.pipeline(p, capture).await,
                Stmt::Assign { name, append, value } => {
                    let got = collect(self.pipeline(value, true).await?);
                    let new = if *append {
                        binary(Op::Add, false, self.var(name), got).map_err(Flow::Fail)?
                    } else {
                        got
                    };
                    self.set(name, new);
                    Ok(Vec::new())
                }
                Stmt::If { arms, otherwise } => {
                    for (cond, body) in arms {
                        if collect(self.pipeline(cond, true).await?).truthy() {
                            return self.statements(body, capture).await;
                        }
                    }
                    match otherwise {
                        Some(body) => self.statements(body, capture).await,
                        None => Ok(Vec::new()),
                    }
                }
                Stmt::Foreach { var, over, body } => {
                    let items = collect(self.pipeline(over, true).await?).items();
                    let mut values = Vec::new();
                    for item in items {
                        self.set(var, item);
                        values.extend(self.statements(body, capture).await?);
                    }
                    Ok(values)
                }
                Stmt::Exit(value) => {
                    let code = match value {
                        Some(e) => self.eval(e).await?.int().unwrap_or(0),
                        None => 0,
                    };
                    Err(Flow::Exit(i32::try_from(code).unwrap_or(i32::MAX)))
                }
            }
        })
    }

    pub(super) fn pipeline<'a>(&'a mut self, p: &'a Pipeline, capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            let mut input: Option<Vec<V>> = None;
            let last = p.elements.len().saturating_sub(1);
            let mut ok = true;
            for (idx, e) in p.elements.iter().enumerate() {
                // A lone native command's output reaches the console as it was written.
                let direct = !capture && idx == last && input.is_none();
                let mut errors = Errors::default();
                let mut values = match &e.what {
                    What::Expr(x) => match self.eval(x).await {
                        Ok(v) => v.items(),
                        Err(Flow::Fail(text)) => {
                            errors.add(text);
                            Vec::new()
                        }
                        Err(flow) => return Err(flow),
                    },
                    What::Command { name, args } => {
                        let name = self.eval(name).await?.text();
                        self.command(&name, args, input.take(), e, direct, &mut errors).await?
                    }
                };
                ok &= !errors.failed;
                if e.merge_errors {
                    values.extend(errors.text.drain(..).map(V::Str));
                } else if !e.drop_errors {
                    for text in errors.text.drain(..) {
                        self.stderr.extend(text.into_bytes());
                    }
                }
                if e.drop_output {
                    values.clear();
                }
                input = Some(values);
            }
            self.last_ok = ok;
            Ok(input.unwrap_or_default())
        })
    }

    pub(super) fn eval<'a>(&'a mut self, e: &'a Expr) -> Fut<'a, Result<V, Flow>> {
        Box::pin(async move {
            Ok(match e {
                Expr::Const(v) => v.clone(),
                Expr::Var(name) => self.var(name),
                Expr::Text(parts) => {
                    let mut text = String::new();
                    for part in parts {
                        match part {
                            Part::Lit(l) => text.push_str(l),
                            Part::Var(name) => text.push_str(&self.var(name).text()),
                            Part::Sub(stmts) => {
                                let v = collect(self.statements(stmts, true).await?);
                                text.push_str(&v.text());
                            }
                        }
                    }
                    V::Str(text)
                }
                Expr::Sub(stmts, array) => {
                    let values = self.statements(stmts, true).await?;
                    if *array { V::Arr(values) } else { collect(values) }
                }
                Expr::Paren(p) => collect(self.pipeline(p, true).await?),
                Expr::List(items) => {
                    let mut values = Vec::new();
                    for item in items {
                        values.push(self.eval(item).await?);
                    }
                    V::Arr(values)
                }
                Expr::Block(b) => V::Block(b.clone()),
                Expr::Not(x) => V::Bool(!self.eval(x).await?.truthy()),
                Expr::Neg(x) => match self.eval(x).await? {
                    V::Int(n) => V::Int(-n),
                    other => V::Num(-other.number().unwrap_or(0.0)),
                },
                Expr::Cast(ty, x) => {
                    let v = self.eval(x).await?;
                    cast(ty, v).map_err(Flow::Fail)?
                }
                Expr::Binary(Op::And, _, a, b) => V::Bool(self.eval(a).await?.truthy() && self.eval(b).await?.truthy()),
                Expr::Binary(Op::Or, _, a, b) => V::Bool(self.eval(a).await?.truthy() || self.eval(b).await?.truthy()),
                Expr::Binary(op, case, a, b) => {
                    let (x, y) = (self.eval(a).await?, self.eval(b).await?);
                    if matches!(op, Op::Match) && !matches!(x, V::Arr(_)) {
                        let re = regex(&y.text(), *case).map_err(Flow::Fail)?;
                        let text = x.text();
                        return Ok(match re.captures(&text) {
                            Some(caps) => {
                                let mut props = Vec::new();
                                for (k, m) in caps.iter().enumerate() {
                                    if let Some(m) = m {
                                        props.push((k.to_string(), V::Str(m.as_str().to_string())));
                                    }
                                }
                                for name in re.capture_names().flatten() {
                                    if let Some(m) = caps.name(name) {
                                        props.push((name.to_string(), V::Str(m.as_str().to_string())));
                                    }
                                }
                                self.vars.insert(
                                    "matches".into(),
                                    V::Obj(Arc::new(Obj {
                                        kind: Kind::Hashtable,
                                        props,
                                    })),
                                );
                                V::Bool(true)
                            }
                            None => V::Bool(false),
                        });
                    }
                    binary(*op, *case, x, y).map_err(Flow::Fail)?
                }
                Expr::Member(x, name) => self.eval(x).await?.member(name),
                Expr::Call(x, name, args) => {
                    let target = self.eval(x).await?;
                    let mut values = Vec::new();
                    for a in args {
                        values.push(self.eval(a).await?);
                    }
                    method(&target, name, &values).map_err(Flow::Fail)?
                }
                Expr::Index(x, i) => {
                    let (target, index) = (self.eval(x).await?, self.eval(i).await?);
                    index_of(&target, &index)
                }
                Expr::Static(ty, member, args) => {
                    let values = match args {
                        Some(list) => {
                            let mut values = Vec::new();
                            for a in list {
                                values.push(self.eval(a).await?);
                            }
                            Some(values)
                        }
                        None => None,
                    };
                    let limit = super::system::container_limit(&self.s);
                    match super::system::static_member(ty, member, values.as_deref(), self.s.windows(), limit) {
                        Ok(v) => v,
                        Err(super::system::DotNetMiss::Threw(message)) => {
                            let method = if member.eq_ignore_ascii_case("new") {
                                ".ctor"
                            } else {
                                member
                            };
                            let argc = values.as_ref().map_or(0, Vec::len);
                            let text =
                                format!("Exception calling \"{method}\" with \"{argc}\" argument(s): \"{message}\"");
                            return Err(Flow::Fail(text));
                        }
                        Err(super::system::DotNetMiss::Unmodelled) => {
                            return Err(Flow::Fail(format!("Unable to find type [{ty}].")));
                        }
                    }
                }
                Expr::Hash(pairs) => {
                    let mut props = Vec::new();
                    for (k, v) in pairs {
                        props.push((k.clone(), self.eval(v).await?));
                    }
                    V::Obj(Arc::new(Obj {
                        kind: Kind::Hashtable,
                        props,
                    }))
                }
            })
        })
    }

    /// Runs a script block with `$_` bound to `item`: its output.
    pub(super) fn invoke<'a>(&'a mut self, block: &'a Block, item: V) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            let saved = self.vars.insert("_".into(), item.clone());
            self.vars.insert("psitem".into(), item);
            let result = self.statements(&block.stmts, true).await;
            match saved {
                Some(v) => self.vars.insert("_".into(), v),
                None => self.vars.remove("_"),
            };
            result
        })
    }

    /// A command: a cmdlet of the table, else a native executable, else CommandNotFound.
    pub(super) fn command<'a>(
        &'a mut self,
        name: &'a str,
        args: &'a [Arg],
        input: Option<Vec<V>>,
        e: &'a Element,
        direct: bool,
        errors: &'a mut Errors,
    ) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            let mut given: Vec<Given> = Vec::new();
            let mut words: Vec<String> = Vec::new();
            for a in args {
                match a {
                    Arg::Param(p, inline) => {
                        let value = match inline {
                            Some(x) => Some(self.eval(x).await?),
                            None => None,
                        };
                        words.push(match &value {
                            Some(v) => format!("-{p}:{}", v.text()),
                            None => format!("-{p}"),
                        });
                        given.push(Given::Param(p.to_ascii_lowercase(), value));
                    }
                    Arg::Value(x) => {
                        let v = self.eval(x).await?;
                        words.extend(v.clone().items().iter().map(V::text));
                        given.push(Given::Value(v));
                    }
                }
            }
            let lower = name.to_ascii_lowercase();
            if let Some(spec) = CMDLETS
                .iter()
                .find(|c| c.names.contains(&lower.as_str()) && !(self.core && c.desktop_only))
            {
                let call = Invocation::bind(spec, given);
                let silent = call.silent();
                let mut own = Errors::default();
                let result = self
                    .cmdlet(spec.run, &call, input.unwrap_or_default(), e, &words, direct, &mut own)
                    .await;
                if own.failed && call.stop() {
                    return Err(Flow::Fail(own.text.concat()));
                }
                if own.failed {
                    errors.failed = true;
                    if !silent {
                        errors.text.extend(own.text);
                    }
                }
                return result;
            }
            // A native command: argv as text; its output as lines when piped or captured.
            let mut argv = vec![name.to_string()];
            argv.extend(words);
            let stdin = input
                .map(|items| items.iter().map(|v| format!("{}\r\n", v.text())).collect::<String>())
                .map(Bytes::from)
                .unwrap_or_default();
            let call = Call {
                argv,
                stdin,
                env: Some(self.env.clone()),
            };
            let Some(o) = self.s.run_child(call).await else {
                errors.add(ps_not_recognized(&e.text, name));
                return Ok(Vec::new());
            };
            let code = code_of(&o);
            self.native = Some(code);
            if code != 0 {
                errors.failed = true;
            }
            if !o.stderr.is_empty() {
                errors.text.push(String::from_utf8_lossy(&o.stderr).into_owned());
            }
            if direct && !e.drop_output {
                self.stdout.extend(o.stdout);
                return Ok(Vec::new());
            }
            Ok(String::from_utf8_lossy(&o.stdout).lines().map(s).collect())
        })
    }

    /// How objects look on the console (`Out-Default`).
    pub(super) fn format(&self, values: &[V]) -> String {
        let mut text = String::new();
        let mut i = 0;
        while let Some(v) = values.get(i) {
            let kind = match v {
                V::Obj(o) => Some(o.kind.clone()),
                _ => None,
            };
            let run: Vec<&V> = values[i..]
                .iter()
                .take_while(|w| {
                    let k = match w {
                        V::Obj(o) => Some(o.kind.clone()),
                        _ => None,
                    };
                    match (&kind, &k) {
                        (Some(Kind::Item { .. }), Some(Kind::Item { .. })) => true,
                        (None, None) => true,
                        (a, b) => a == b && a.is_some(),
                    }
                })
                .collect();
            i += run.len().max(1);
            match kind {
                None => {
                    for v in run {
                        if !matches!(v, V::Null) {
                            let _ = write!(text, "{}\r\n", v.text());
                        }
                    }
                }
                Some(Kind::Item { .. }) => text.push_str(&self.format_items(&run)),
                Some(Kind::Match) => {
                    let body: String = run.iter().map(|v| format!("{}\r\n", v.text())).collect();
                    let _ = write!(text, "\r\n{body}\r\n\r\n");
                }
                Some(Kind::PathInfo) => {
                    for v in run {
                        let _ = write!(text, "\r\nPath\r\n----\r\n{}\r\n\r\n\r\n", v.text());
                    }
                }
                Some(Kind::EnvEntry) => {
                    text.push_str(
                        "\r\nName                           Value\r\n----                           -----\r\n",
                    );
                    for v in run {
                        let _ = write!(text, "{:<30} {}\r\n", v.member("Name").text(), v.member("Value").text());
                    }
                    text.push_str("\r\n\r\n");
                }
                Some(Kind::Row(_)) => text.push_str(&format_table(&run)),
                Some(_) => {
                    for v in run {
                        let V::Obj(o) = v else { continue };
                        let width = o.props.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
                        text.push_str("\r\n");
                        for (k, val) in &o.props {
                            let _ = write!(text, "{k:<width$} : {}\r\n", val.shown());
                        }
                        text.push_str("\r\n");
                    }
                    text.push_str("\r\n");
                }
            }
        }
        text
    }

    /// File system items in the `Directory:` sections of `Get-ChildItem`.
    pub(super) fn format_items(&self, items: &[&V]) -> String {
        let disk = self.s.disk();
        let mut sections: Vec<(String, Vec<&DiskEntry>)> = Vec::new();
        for v in items {
            let full = v.member("FullName").text();
            let Some(entry) = disk.get(&full) else { continue };
            let parent = disk.parent(&entry.path).unwrap_or_default();
            match sections.iter_mut().find(|(p, _)| p.eq_ignore_ascii_case(&parent)) {
                Some((_, list)) => list.push(entry),
                None => sections.push((parent, vec![entry])),
            }
        }
        sections.sort_by_key(|(p, _)| p.to_lowercase());
        let mut text: String = sections
            .iter()
            .map(|(dir, list)| ps_section(&self.s, dir, list))
            .collect();
        text.push_str("\r\n\r\n");
        text
    }
}

/// `Format-Table` / `Format-List [-Property p…]`: objects as table rows or list entries with
/// the named properties (`*` or none: all of them); anything else passes as it is.
pub(super) fn format_objects(call: &Invocation, input: Vec<V>, table: bool) -> Vec<V> {
    let wanted = texts(call.value(&["property"], 0));
    input
        .into_iter()
        .map(|item| {
            let V::Obj(o) = &item else { return item };
            let props: Vec<(String, V)> = if wanted.is_empty() || wanted.iter().any(|w| w == "*") {
                o.props.clone()
            } else {
                wanted
                    .iter()
                    .flat_map(|w| {
                        o.props
                            .iter()
                            .filter(|(k, _)| glob(w, k, false))
                            .cloned()
                            .collect::<Vec<_>>()
                    })
                    .collect()
            };
            let kind = if table { Kind::Row("Format-Table") } else { Kind::Custom };
            V::Obj(Arc::new(Obj { kind, props }))
        })
        .collect()
}

/// Objects as `Format-Table` shows them: the first object's properties as columns, each as
/// wide as its widest cell, numbers right-aligned.
pub(super) fn format_table(rows: &[&V]) -> String {
    let Some(V::Obj(first)) = rows.first() else {
        return String::new();
    };
    let columns: Vec<&str> = first.props.iter().map(|(k, _)| k.as_str()).collect();
    let cells: Vec<Vec<(String, bool)>> = rows
        .iter()
        .map(|r| {
            columns
                .iter()
                .map(|c| {
                    let v = r.member(c);
                    (v.shown(), matches!(v, V::Int(_) | V::Num(_)))
                })
                .collect()
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|row| row[i].0.chars().count())
                .max()
                .unwrap_or(0)
                .max(c.len())
        })
        .collect();
    let numeric: Vec<bool> = (0..columns.len())
        .map(|i| cells.iter().any(|row| row[i].1) && cells.iter().all(|row| row[i].1 || row[i].0.is_empty()))
        .collect();
    let line = |parts: Vec<String>| {
        let joined: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let w = widths[i];
                if numeric[i] {
                    format!("{p:>w$}")
                } else {
                    format!("{p:<w$}")
                }
            })
            .collect();
        format!("{}\r\n", joined.join(" ").trim_end())
    };
    let mut text = String::from("\r\n");
    text.push_str(&line(columns.iter().map(|c| (*c).to_string()).collect()));
    text.push_str(&line(columns.iter().map(|c| "-".repeat(c.len())).collect()));
    for row in cells {
        text.push_str(&line(row.into_iter().map(|(t, _)| t).collect()));
    }
    text.push_str("\r\n\r\n");
    text
}

/// The `Directory:` section in which `Get-ChildItem` lists the items of one folder.
fn ps_section(s: &Session, dir: &str, items: &[&DiskEntry]) -> String {
    let mut text = format!(
        "\r\n\r\n    Directory: {dir}\r\n\r\n\r\nMode                 LastWriteTime         Length Name\r\n\
        ----                 -------------         ------ ----\r\n"
    );
    let date = s.stamp.format("%-m/%-d/%Y").to_string();
    let time = s.stamp.format("%-I:%M %p").to_string();
    for e in items {
        let (mode, length) = match &e.file {
            Some((data, _)) => ("-a----", data.len().to_string()),
            None => ("d-----", String::new()),
        };
        let _ = write!(text, "{mode:<6} {date:>18} {time:>8} {length:>14} {}\r\n", e.name());
    }
    text
}

pub(super) fn cast(ty: &str, v: V) -> Result<V, String> {
    Ok(match ty {
        "char" => match &v {
            V::Str(t) if t.chars().count() == 1 => v,
            other => {
                let n = other
                    .int()
                    .ok_or_else(|| format!("Cannot convert value \"{}\" to type \"System.Char\".", other.text()))?;
                let c = u32::try_from(n).ok().and_then(char::from_u32).unwrap_or('\u{fffd}');
                V::Str(c.to_string())
            }
        },
        "int" | "int32" | "int64" | "long" => V::Int(
            v.int()
                .ok_or_else(|| format!("Cannot convert value \"{}\" to type \"System.Int32\".", v.text()))?,
        ),
        "double" | "float" | "decimal" => V::Num(v.number().unwrap_or(0.0)),
        "string" => V::Str(v.text()),
        "bool" | "boolean" => V::Bool(v.truthy()),
        "array" | "object[]" | "string[]" => V::Arr(v.items()),
        _ => v,
    })
}

pub(super) fn binary(op: Op, case: bool, x: V, y: V) -> Result<V, String> {
    let fold = |t: String| if case { t } else { t.to_lowercase() };
    // Comparison operators filter an array on their left.
    if let V::Arr(items) = &x
        && matches!(
            op,
            Op::Eq | Op::Ne | Op::Gt | Op::Ge | Op::Lt | Op::Le | Op::Like | Op::NotLike | Op::Match | Op::NotMatch
        )
    {
        let mut kept = Vec::new();
        for item in items {
            if binary(op, case, item.clone(), y.clone())?.truthy() {
                kept.push(item.clone());
            }
        }
        return Ok(V::Arr(kept));
    }
    Ok(match op {
        Op::And => V::Bool(x.truthy() && y.truthy()),
        Op::Or => V::Bool(x.truthy() || y.truthy()),
        Op::Xor => V::Bool(x.truthy() != y.truthy()),
        Op::Eq => V::Bool(equal(&x, &y, case)),
        Op::Ne => V::Bool(!equal(&x, &y, case)),
        Op::Gt => V::Bool(compare(&x, &y, case) == Some(std::cmp::Ordering::Greater)),
        Op::Ge => V::Bool(compare(&x, &y, case).is_some_and(|o| o != std::cmp::Ordering::Less)),
        Op::Lt => V::Bool(compare(&x, &y, case) == Some(std::cmp::Ordering::Less)),
        Op::Le => V::Bool(compare(&x, &y, case).is_some_and(|o| o != std::cmp::Ordering::Greater)),
        Op::Like => V::Bool(glob(&y.text(), &x.text(), case)),
        Op::NotLike => V::Bool(!glob(&y.text(), &x.text(), case)),
        Op::Match => V::Bool(regex(&y.text(), case)?.is_match(&x.text())),
        Op::NotMatch => V::Bool(!regex(&y.text(), case)?.is_match(&x.text())),
        Op::Contains => V::Bool(x.items().iter().any(|i| equal(i, &y, case))),
        Op::NotContains => V::Bool(!x.items().iter().any(|i| equal(i, &y, case))),
        Op::In => V::Bool(y.items().iter().any(|i| equal(&x, i, case))),
        Op::NotIn => V::Bool(!y.items().iter().any(|i| equal(&x, i, case))),
        Op::Replace => {
            let items = y.items();
            let pattern = items.first().map(V::text).unwrap_or_default();
            let with = items.get(1).map(V::text).unwrap_or_default();
            let re = regex(&pattern, case)?;
            let replace = |t: &str| s(re.replace_all(t, with.as_str()).into_owned());
            match x {
                V::Arr(items) => V::Arr(items.iter().map(|i| replace(&i.text())).collect()),
                other => replace(&other.text()),
            }
        }
        Op::Split => {
            let re = regex(&y.text(), case)?;
            V::Arr(re.split(&x.text()).map(s).collect())
        }
        Op::Join => s(x.items().iter().map(V::text).collect::<Vec<_>>().join(&y.text())),
        Op::Add => match (x, y) {
            (V::Arr(mut a), other) => {
                a.extend(other.items());
                V::Arr(a)
            }
            (V::Str(a), b) => s(a + &b.text()),
            (V::Int(a), V::Int(b)) => a.checked_add(b).map_or(V::Num(a as f64 + b as f64), V::Int),
            (V::Null, b) => b,
            (a, b) => match (a.number(), b.number()) {
                (Some(p), Some(q)) => V::Num(p + q),
                _ => {
                    return Err(format!(
                        "Method invocation failed because [{}] does not contain a method named 'op_Addition'.",
                        a.text()
                    ));
                }
            },
        },
        Op::Sub | Op::Mul | Op::Div | Op::Rem => {
            if let (Op::Mul, V::Str(t)) = (op, &x) {
                return Ok(s(t.repeat(usize::try_from(y.int().unwrap_or(0)).unwrap_or(0))));
            }
            if let (V::Int(a), V::Int(b)) = (&x, &y) {
                let r = match op {
                    Op::Sub => a.checked_sub(*b),
                    Op::Mul => a.checked_mul(*b),
                    Op::Rem => a.checked_rem(*b),
                    _ if *b != 0 && a % b == 0 => Some(a / b),
                    _ => None,
                };
                if let Some(r) = r {
                    return Ok(V::Int(r));
                }
            }
            let (p, q) = (x.number().unwrap_or(0.0), y.number().unwrap_or(0.0));
            if matches!(op, Op::Div | Op::Rem) && q == 0.0 {
                return Err("Attempted to divide by zero.".into());
            }
            V::Num(match op {
                Op::Sub => p - q,
                Op::Mul => p * q,
                Op::Div => p / q,
                _ => p % q,
            })
        }
    })
    .map(|v| match (op, v) {
        (Op::Eq | Op::Ne, V::Bool(b)) => V::Bool(b),
        (_, v) => {
            let _ = fold;
            v
        }
    })
}

/// `.Trim()`, `.Trim(chars…)`, `.ToLower()`, `.Split(c)`, … of strings; `.Count` and
/// `.Contains(x)` of arrays; `.ToString()` of anything.
pub(super) fn method(target: &V, name: &str, args: &[V]) -> Result<V, String> {
    let lower = name.to_ascii_lowercase();
    let arg = |k: usize| args.get(k).map(V::text).unwrap_or_default();
    let chars: Vec<char> = args.iter().flat_map(|a| a.text().chars().collect::<Vec<_>>()).collect();
    if lower == "tostring" {
        return Ok(s(target.text()));
    }
    if let V::Arr(items) = target {
        return match lower.as_str() {
            "contains" => Ok(V::Bool(
                items.iter().any(|i| equal(i, args.first().unwrap_or(&V::Null), true)),
            )),
            _ => Err(format!(
                "Method invocation failed because [System.Object[]] does not contain a method named '{name}'."
            )),
        };
    }
    let V::Str(t) = target else {
        if matches!(target, V::Null) {
            return Err("You cannot call a method on a null-valued expression.".into());
        }
        return Err(format!(
            "Method invocation failed because the object does not contain a method named '{name}'."
        ));
    };
    Ok(match lower.as_str() {
        "trim" if chars.is_empty() => s(t.trim()),
        "trim" => s(t.trim_matches(|c| chars.contains(&c))),
        "trimstart" if chars.is_empty() => s(t.trim_start()),
        "trimstart" => s(t.trim_start_matches(|c| chars.contains(&c))),
        "trimend" if chars.is_empty() => s(t.trim_end()),
        "trimend" => s(t.trim_end_matches(|c| chars.contains(&c))),
        "tolower" | "tolowerinvariant" => s(t.to_lowercase()),
        "toupper" | "toupperinvariant" => s(t.to_uppercase()),
        "contains" => V::Bool(t.contains(&arg(0))),
        "startswith" => V::Bool(t.starts_with(&arg(0))),
        "endswith" => V::Bool(t.ends_with(&arg(0))),
        "replace" => s(t.replace(&arg(0), &arg(1))),
        "indexof" => V::Int(t.find(&arg(0)).map_or(-1, |i| i64::try_from(i).unwrap_or(-1))),
        "split" => V::Arr(if chars.is_empty() {
            t.split_whitespace().map(s).collect()
        } else {
            t.split(|c| chars.contains(&c)).map(s).collect()
        }),
        "substring" => {
            let from = usize::try_from(args.first().and_then(V::int).unwrap_or(0)).unwrap_or(0);
            let rest: String = t.chars().skip(from).collect();
            match args.get(1).and_then(V::int) {
                Some(n) => s(rest.chars().take(usize::try_from(n).unwrap_or(0)).collect::<String>()),
                None => s(rest),
            }
        }
        _ => {
            return Err(format!(
                "Method invocation failed because [System.String] does not contain a method named '{name}'."
            ));
        }
    })
}

pub(super) fn index_of(target: &V, index: &V) -> V {
    match target {
        V::Arr(items) => {
            let Some(i) = index.int() else { return V::Null };
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let at = if i < 0 { len + i } else { i };
            usize::try_from(at)
                .ok()
                .and_then(|k| items.get(k))
                .cloned()
                .unwrap_or(V::Null)
        }
        V::Str(t) => index
            .int()
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| t.chars().nth(i))
            .map_or(V::Null, |c| s(c.to_string())),
        V::Obj(o) => o.get(&index.text()).cloned().unwrap_or(V::Null),
        _ => V::Null,
    }
}
