//! The cmdlets' handlers (their table and binding: [`super::invocation`]): the file system,
//! text, objects, processes, output, the network cmdlets and the host's networking cmdlets
//! ([`super::hostcmdlets`]).

use std::sync::Arc;

use bytes::Bytes;

use super::eval::{Flow, Ps, binary, format_objects};
use super::hostcmdlets::{
    get_hns_endpoint, get_hns_network, get_hns_policy_list, get_net_adapter, get_net_tcp_connection, measure_object,
};
use super::invocation::{Errors, Invocation, Run, texts};
use super::patterns::{glob, regex};
use super::syntax::{Element, Expr, Op, What};
use super::system::{
    DotNetMiss, container_limit, default_acl, get_process, method_exception, new_object, processes, wql_matches,
};
use super::{Fut, Kind, Obj, V, collect, obj, s};
use crate::node::exec::Call;
use crate::node::exec::agnhost::network;
use crate::node::exec::disk::DiskEntry;
use crate::node::exec::ps_errors::ps_error;
use crate::node::exec::session::Session;
use crate::node::exec::support::{code_of, env_get};

// ---------------------------------------------------------------------------------------------
// Cmdlets
// ---------------------------------------------------------------------------------------------

/// `env:NAME` → NAME (case-insensitive drive prefix).
pub(super) fn env_drive(path: &str) -> Option<&str> {
    path.get(..4)
        .filter(|p| p.eq_ignore_ascii_case("env:"))
        .and_then(|_| path.get(4..))
}

/// A file system item as `Get-ChildItem` returns it.
pub(super) fn item(e: &DiskEntry, parent: Option<String>) -> V {
    let dir = e.file.is_none();
    let name = e.name().to_string();
    let mut props = vec![
        ("Name", s(name.clone())),
        ("FullName", s(e.path.clone())),
        ("PSIsContainer", V::Bool(dir)),
        ("Mode", s(if dir { "d-----" } else { "-a----" })),
    ];
    if !dir {
        props.push(("Length", V::Int(i64::try_from(e.size()).unwrap_or(i64::MAX))));
        props.push(("DirectoryName", s(parent.unwrap_or_default())));
        let ext = name.rfind('.').map(|i| name[i..].to_string()).unwrap_or_default();
        props.push(("Extension", s(ext)));
    }
    obj(Kind::Item { dir }, props)
}

impl Ps {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cmdlet<'a>(
        &'a mut self,
        run: Run,
        call: &'a Invocation,
        input: Vec<V>,
        e: &'a Element,
        words: &'a [String],
        direct: bool,
        errors: &'a mut Errors,
    ) -> Fut<'a, Result<Vec<V>, Flow>> {
        Box::pin(async move {
            let session = self.s.clone();
            Ok(match run {
                Run::GetChildItem => get_child_item(&session, call, &self.env, &e.text, errors),
                Run::GetContent => get_content(&session, call, &e.text, errors),
                Run::TestPath => {
                    let disk = session.disk();
                    texts(call.value(&["path", "literalpath"], 0))
                        .iter()
                        .map(|path| {
                            V::Bool(match env_drive(path) {
                                Some(name) => name.is_empty() || env_get(&self.env, name, true).is_some(),
                                None => {
                                    let entry = disk.get(&session.path(path));
                                    match call.get("pathtype").map(|v| v.text().to_ascii_lowercase()).as_deref() {
                                        Some("leaf") => entry.is_some_and(|e| e.file.is_some()),
                                        Some("container") => entry.is_some_and(|e| e.file.is_none()),
                                        _ => entry.is_some(),
                                    }
                                }
                            })
                        })
                        .collect()
                }
                Run::JoinPath => {
                    let child = call.value(&["childpath"], 1).map(|v| v.text()).unwrap_or_default();
                    texts(call.value(&["path"], 0))
                        .iter()
                        .map(|p| {
                            s(format!(
                                "{}\\{}",
                                p.trim_end_matches(['\\', '/']),
                                child.trim_start_matches(['\\', '/'])
                            ))
                        })
                        .collect()
                }
                Run::GetAcl => {
                    let disk = session.disk();
                    let mut acls = Vec::new();
                    for path in texts(call.value(&["path", "literalpath"], 0)) {
                        let full = session.path(&path);
                        if disk.get(&full).is_some() {
                            acls.push(default_acl(&full));
                        } else {
                            errors.add(ps_error(
                                &e.text,
                                "Get-Acl",
                                &format!("Cannot find path '{full}' because it does not exist."),
                                &format!("ObjectNotFound: ({full}:String) [Get-Acl], ItemNotFoundException"),
                                "GetAcl_PathNotFound_Exception,Microsoft.PowerShell.Commands.GetAclCommand",
                            ));
                        }
                    }
                    acls
                }
                Run::GetLocation => vec![obj(Kind::PathInfo, vec![("Path", s(session.cwd()))])],
                Run::SelectString => select_string(&session, call, input),
                Run::WhereObject => {
                    let mut kept = Vec::new();
                    match call.value(&["filterscript"], 0) {
                        Some(V::Block(block)) => {
                            for item in input {
                                if collect(self.invoke(&block, item.clone()).await?).truthy() {
                                    kept.push(item);
                                }
                            }
                        }
                        Some(prop) => {
                            let ops = [
                                ("eq", Op::Eq),
                                ("ne", Op::Ne),
                                ("gt", Op::Gt),
                                ("ge", Op::Ge),
                                ("lt", Op::Lt),
                                ("le", Op::Le),
                                ("like", Op::Like),
                                ("notlike", Op::NotLike),
                                ("match", Op::Match),
                                ("notmatch", Op::NotMatch),
                                ("contains", Op::Contains),
                                ("in", Op::In),
                            ];
                            let op = ops.iter().find(|(w, _)| call.switch(w)).map(|(_, op)| *op);
                            let value = call.value(&["value"], 1).unwrap_or(V::Null);
                            for item in input {
                                let got = item.member(&prop.text());
                                let keep = match op {
                                    Some(op) => binary(op, false, got, value.clone()).map_err(Flow::Fail)?.truthy(),
                                    None => got.truthy(),
                                };
                                if keep {
                                    kept.push(item);
                                }
                            }
                        }
                        None => kept = input,
                    }
                    kept
                }
                Run::ForEachObject => {
                    let mut produced = Vec::new();
                    match call.value(&["process", "membername"], 0) {
                        Some(V::Block(block)) => {
                            for item in input {
                                produced.extend(self.invoke(&block, item).await?);
                            }
                        }
                        Some(name) => produced.extend(input.iter().map(|i| i.member(&name.text()))),
                        None => {}
                    }
                    produced
                }
                Run::SelectObject => {
                    let n = |p: &str| call.get(p).and_then(V::int).and_then(|n| usize::try_from(n).ok());
                    let mut items: Vec<V> = input.into_iter().skip(n("skip").unwrap_or(0)).collect();
                    if let Some(k) = n("first") {
                        items.truncate(k);
                    }
                    if let Some(k) = n("last") {
                        let from = items.len().saturating_sub(k);
                        items.drain(..from);
                    }
                    if let Some(name) = call.get("expandproperty") {
                        items = items.iter().flat_map(|i| i.member(&name.text()).items()).collect();
                    } else if let Some(props) = call.value(&["property"], 0) {
                        let names = texts(Some(props));
                        items = items
                            .iter()
                            .map(|i| {
                                V::Obj(Arc::new(Obj {
                                    kind: Kind::Cim,
                                    props: names.iter().map(|n| (n.clone(), i.member(n))).collect(),
                                }))
                            })
                            .collect();
                    }
                    if call.switch("unique") {
                        let mut seen = std::collections::BTreeSet::new();
                        items.retain(|i| seen.insert(i.text()));
                    }
                    items
                }
                Run::GetCim => {
                    let class = call
                        .value(&["classname", "class"], 0)
                        .map(|v| v.text())
                        .unwrap_or_default();
                    match class.to_ascii_lowercase().as_str() {
                        "win32_process" => {
                            let filter = call.get("filter").map(V::text);
                            processes(&session)
                                .into_iter()
                                .filter(|p| filter.as_deref().is_none_or(|f| wql_matches(f, p)))
                                .collect()
                        }
                        _ => {
                            errors.add(ps_error(
                                &e.text,
                                "Get-CimInstance",
                                "Invalid class ",
                                &format!("MetadataError: (root\\cimv2:{class}:String) [Get-CimInstance], CimException"),
                                "HRESULT 0x80041010,Microsoft.Management.Infrastructure.CimCmdlets.GetCimInstanceCommand",
                            ));
                            Vec::new()
                        }
                    }
                }
                Run::WriteOutput => {
                    let mut produced = input;
                    for v in &call.positional {
                        produced.extend(v.clone().items());
                    }
                    if let Some(v) = call.get("inputobject") {
                        produced.extend(v.clone().items());
                    }
                    produced
                }
                Run::WriteHost => {
                    let separator = call.get("separator").map(V::text).unwrap_or_else(|| " ".into());
                    let mut parts: Vec<String> = call
                        .positional
                        .iter()
                        .chain(call.get("object"))
                        .flat_map(|v| v.clone().items())
                        .map(|v| v.text())
                        .collect();
                    if parts.is_empty() {
                        parts = input.iter().map(V::text).collect();
                    }
                    let mut text = parts.join(&separator);
                    if !call.switch("nonewline") {
                        text.push_str("\r\n");
                    }
                    self.stdout.extend(text.into_bytes());
                    Vec::new()
                }
                Run::GetService => {
                    let (found, errs) = super::system::get_service(call, &session, &e.text);
                    for err in errs {
                        errors.add(err);
                    }
                    found
                }
                Run::ImportModule => {
                    match super::system::import_module(call, &session, &e.text) {
                        Some(err) => errors.add(err),
                        None => self.hns_v2 |= super::system::imports_hns_v2(call),
                    }
                    Vec::new()
                }
                Run::GetProcess => {
                    let (found, errs) = get_process(call, &processes(&session), &e.text);
                    for err in errs {
                        errors.add(err);
                    }
                    found
                }
                Run::NewObject => match new_object(call, session.windows(), container_limit(&session)) {
                    Ok(v) => vec![v],
                    Err(DotNetMiss::Threw(message)) => {
                        errors.add(method_exception(&e.text, "New-Object", ".ctor", 1, &message));
                        Vec::new()
                    }
                    Err(DotNetMiss::Unmodelled) => {
                        let ty = call.value(&["typename"], 0).map(|v| v.text()).unwrap_or_default();
                        errors.add(ps_error(
                            &e.text,
                            "New-Object",
                            &format!(
                                "Cannot find type [{ty}]: verify that the assembly containing this type is loaded."
                            ),
                            "InvalidType: (:) [New-Object], PSArgumentException",
                            "TypeNotFound,Microsoft.PowerShell.Commands.NewObjectCommand",
                        ));
                        Vec::new()
                    }
                },
                Run::OutNull | Run::StartSleep => Vec::new(),
                Run::MeasureObject => {
                    let mut input = input;
                    if let Some(v) = call.get("inputobject") {
                        input.push(v.clone());
                    }
                    measure_object(call, input, self.core)
                }
                Run::FormatTable => format_objects(call, input, true),
                Run::FormatList => format_objects(call, input, false),
                Run::ConvertToJson => super::json::convert_to_json(call, input),
                Run::GetHnsNetwork => get_hns_network(&session, &e.text, errors),
                Run::GetHnsPolicyList => get_hns_policy_list(&session, self.hns_v2, &e.text, errors),
                Run::GetHnsEndpoint => get_hns_endpoint(&session, self.hns_v2, &e.text, errors),
                Run::GetNetAdapter => get_net_adapter(&session, call, &e.text, errors),
                Run::GetNetTcpConnection => get_net_tcp_connection(&session, call, &e.text, errors),
                Run::OutString => vec![s(self.format(&input))],
                Run::Network => {
                    let mut argv = vec![words_name(e)];
                    argv.extend(words.iter().cloned());
                    let call = Call {
                        argv,
                        stdin: Bytes::new(),
                        env: Some(self.env.clone()),
                    };
                    let o = network(&session, call).run().await;
                    if code_of(&o) != 0 {
                        errors.failed = true;
                    }
                    if !o.stderr.is_empty() {
                        errors.text.push(String::from_utf8_lossy(&o.stderr).into_owned());
                    }
                    if direct && !e.drop_output {
                        self.stdout.extend(o.stdout);
                        Vec::new()
                    } else {
                        String::from_utf8_lossy(&o.stdout).lines().map(s).collect()
                    }
                }
            })
        })
    }
}

/// The command name as written in an element.
pub(super) fn words_name(e: &Element) -> String {
    match &e.what {
        What::Command {
            name: Expr::Const(v), ..
        } => v.text(),
        _ => String::new(),
    }
}

pub(super) fn get_child_item(
    session: &Session,
    call: &Invocation,
    env: &[(String, String)],
    statement: &str,
    errors: &mut Errors,
) -> Vec<V> {
    let paths = texts(call.value(&["path", "literalpath"], 0));
    let paths = if paths.is_empty() { vec![".".to_string()] } else { paths };
    let filter = call.get("filter").map(V::text);
    let mut found = Vec::new();
    let disk = session.disk();
    for path in paths {
        if let Some(name) = env_drive(&path) {
            let mut vars: Vec<&(String, String)> = env
                .iter()
                .filter(|(k, _)| name.is_empty() || k.eq_ignore_ascii_case(name))
                .collect();
            vars.sort_by_key(|(k, _)| k.to_lowercase());
            found.extend(vars.into_iter().map(|(k, v)| {
                obj(
                    Kind::EnvEntry,
                    vec![("Name", s(k.clone())), ("Key", s(k.clone())), ("Value", s(v.clone()))],
                )
            }));
            continue;
        }
        let full = session.path(&path);
        let Some(entry) = disk.get(&full) else {
            errors.add(ps_error(
                statement,
                "Get-ChildItem",
                &format!("Cannot find path '{full}' because it does not exist."),
                &format!("ObjectNotFound: ({full}:String) [Get-ChildItem], ItemNotFoundException"),
                "PathNotFound,Microsoft.PowerShell.Commands.GetChildItemCommand",
            ));
            continue;
        };
        let mut items: Vec<&DiskEntry> = match (&entry.file, call.switch("recurse")) {
            (Some(_), _) => vec![entry],
            (None, true) => disk.descendants(&entry.path),
            (None, false) => disk.children(&entry.path),
        };
        if call.switch("file") {
            items.retain(|e| e.file.is_some());
        }
        if call.switch("directory") {
            items.retain(|e| e.file.is_none());
        }
        if let Some(f) = &filter {
            items.retain(|e| glob(f, e.name(), false));
        }
        if call.switch("name") {
            let base = format!("{}\\", entry.path.trim_end_matches('\\'));
            found.extend(
                items
                    .iter()
                    .map(|e| s(e.path.strip_prefix(&base).unwrap_or(e.name()).to_string())),
            );
            continue;
        }
        found.extend(items.iter().map(|e| item(e, disk.parent(&e.path))));
    }
    found
}

pub(super) fn get_content(session: &Session, call: &Invocation, statement: &str, errors: &mut Errors) -> Vec<V> {
    let fqid = |id: &str| format!("{id},Microsoft.PowerShell.Commands.GetContentCommand");
    let paths = texts(call.value(&["path", "literalpath"], 0));
    if paths.is_empty() {
        errors.add(ps_error(
            statement,
            "Get-Content",
            "Cannot process command because of one or more missing mandatory parameters: Path.",
            "InvalidArgument: (:) [Get-Content], ParameterBindingException",
            &fqid("MissingMandatoryParameter"),
        ));
        return Vec::new();
    }
    let head = ["totalcount", "head", "first"]
        .iter()
        .find_map(|p| call.get(p))
        .and_then(V::int)
        .and_then(|n| usize::try_from(n).ok());
    let tail = call.get("tail").and_then(V::int).and_then(|n| usize::try_from(n).ok());
    let disk = session.disk();
    let mut lines = Vec::new();
    for path in paths {
        let full = session.path(&path);
        match disk.get(&full).map(|e| &e.file) {
            Some(Some((data, _))) => {
                let text = String::from_utf8_lossy(data);
                if call.switch("raw") {
                    lines.push(s(text.into_owned()));
                    continue;
                }
                let mut all: Vec<V> = text.lines().map(s).collect();
                if let Some(n) = head {
                    all.truncate(n);
                }
                if let Some(n) = tail {
                    let from = all.len().saturating_sub(n);
                    all.drain(..from);
                }
                lines.extend(all);
            }
            Some(None) => errors.add(ps_error(
                statement,
                "Get-Content",
                &format!(
                    "Unable to get content because it is a directory: '{full}'. Please use 'Get-ChildItem' instead."
                ),
                &format!("InvalidOperation: ({full}:String) [Get-Content], UnauthorizedAccessException"),
                &fqid("GetContentReaderUnauthorizedAccessError"),
            )),
            None => errors.add(ps_error(
                statement,
                "Get-Content",
                &format!("Cannot find path '{full}' because it does not exist."),
                &format!("ObjectNotFound: ({full}:String) [Get-Content], ItemNotFoundException"),
                &fqid("PathNotFound"),
            )),
        }
    }
    lines
}

pub(super) fn select_string(session: &Session, call: &Invocation, input: Vec<V>) -> Vec<V> {
    let patterns = texts(call.value(&["pattern"], 0));
    let case = call.switch("casesensitive");
    let simple = call.switch("simplematch");
    let regexes: Vec<regex::Regex> = if simple {
        Vec::new()
    } else {
        patterns.iter().filter_map(|p| regex(p, case).ok()).collect()
    };
    let hit = |line: &str| {
        if simple {
            patterns.iter().any(|p| {
                if case {
                    line.contains(p.as_str())
                } else {
                    line.to_lowercase().contains(&p.to_lowercase())
                }
            })
        } else {
            regexes.iter().any(|r| r.is_match(line))
        }
    };
    // (path, file name, text) of each input.
    let disk = session.disk();
    let mut sources: Vec<(String, String, String)> = Vec::new();
    let read = |full: &str| {
        disk.get(full)
            .and_then(|e| e.file.as_ref())
            .map(|(d, _)| String::from_utf8_lossy(d).into_owned())
    };
    for path in texts(call.value(&["path", "literalpath"], 1)) {
        let full = session.path(&path);
        if let Some(text) = read(&full) {
            let name = full.rsplit('\\').next().unwrap_or(&full).to_string();
            sources.push((full, name, text));
        }
    }
    for v in input {
        match &v {
            V::Obj(o) if matches!(o.kind, Kind::Item { dir: false }) => {
                let full = v.member("FullName").text();
                if let Some(text) = read(&full) {
                    sources.push((full, v.member("Name").text(), text));
                }
            }
            V::Obj(o) if matches!(o.kind, Kind::Item { dir: true }) => {}
            other => sources.push(("InputStream".into(), "InputStream".into(), other.text())),
        }
    }
    let mut found = Vec::new();
    for (path, name, text) in sources {
        for (n, line) in text.lines().enumerate() {
            if hit(line) == call.switch("notmatch") {
                continue;
            }
            found.push(obj(
                Kind::Match,
                vec![
                    ("Path", s(path.clone())),
                    ("Filename", s(name.clone())),
                    ("LineNumber", V::Int(i64::try_from(n + 1).unwrap_or(i64::MAX))),
                    ("Line", s(line)),
                    ("Pattern", s(patterns.first().cloned().unwrap_or_default())),
                ],
            ));
            if call.switch("list") {
                break;
            }
        }
    }
    if call.switch("quiet") {
        return vec![V::Bool(!found.is_empty())];
    }
    found
}
