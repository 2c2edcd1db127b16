//! PowerShell (Windows PowerShell 5.1 on Server Core and on the host of a HostProcess
//! container; PowerShell Core in the e2e busybox/agnhost images): a small interpreter of the
//! language with a pipeline of objects, enough for node-side probes written the way an operator
//! writes them — variables, `if`/`elseif`/`else`, `foreach`, `$( )`, `( )`, `@( )`, script blocks,
//! the comparison, logical, string and arithmetic operators, member access, a few .NET string
//! methods and casts — and the cmdlets of the table in [`invocation`]: the file system
//! (`Get-ChildItem`, `Get-Content`, `Test-Path`, `Join-Path`, `Get-Acl`, `Get-Location`),
//! `Select-String`, `Where-Object`, `ForEach-Object`, `Select-Object`, `Measure-Object`,
//! `Get-CimInstance Win32_Process`, output (`Write-Output`, `Write-Host`, `Out-Null`,
//! `Out-String`, `Format-Table`, `Format-List`, `ConvertTo-Json`), the network cmdlets of [`crate::node::exec::nettools`], and the host's
//! networking cmdlets of [`hostcmdlets`] (`Get-HnsNetwork`, `Get-HnsPolicyList`, `Get-HnsEndpoint` — on the host
//! of a HostProcess container only —, `Get-NetAdapter`, `Get-NetTCPConnection`). Anything else
//! runs as a native command (the container's executables, [`super::WINDOWS`]) or fails with
//! PowerShell's CommandNotFoundException.
//!
//! Output is formatted at the end of each top-level statement the way `Out-Default` shows it:
//! strings and numbers one per line, file system items in the `Directory:` table, match
//! results as `path:line:text`, adapters and TCP connections as tables, other objects as lists
//! (array properties as `{a, b}`). Errors are written in PowerShell's
//! console format (non-terminating: the script goes on, unless the cmdlet was given `-ErrorAction
//! Stop`, which ends the script with exit code 1; `-ErrorAction SilentlyContinue` and
//! `2>$null` drop them). The exit code is the last native command's (PowerShell Core) or 0/1
//! by whether the last statement succeeded (Windows PowerShell), or `exit N`.
//!
//! Modelled choices: a node's processes (`Win32_Process` on a HostProcess container) are the
//! Windows services a kubeadm-joined node runs (kubelet and containerd with the command lines
//! of sig-windows-tools' install, the kubelet keeping its default root directory
//! `C:\var\lib\kubelet`); `Get-Acl` shows the ACL every new folder under `C:\` inherits
//! (SYSTEM and Administrators full control, Users read and execute) — the reason the
//! documentation asks operators to restrict the kubelet's directory (SEC-SECRET-AT-REST);
//! `manage-bde` is absent (the BitLocker feature is not installed on the simulated nodes).

mod cmdlets;
mod eval;
mod hostcmdlets;
mod invocation;
mod json;
mod outline;
mod patterns;
mod syntax;
mod system;
mod walk;
pub(in crate::node::exec) use self::eval::run;
pub(crate) use self::outline::outline;
pub(crate) use self::walk::PsHost;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use self::syntax::Block;

type Fut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/// A PowerShell value.
#[derive(Debug, Clone)]
enum V {
    Null,
    Bool(bool),
    Int(i64),
    Num(f64),
    Str(String),
    Arr(Vec<V>),
    Obj(Arc<Obj>),
    Block(Arc<Block>),
}

/// What kind of object, for display and `ToString()`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// `System.IO.FileInfo` / `DirectoryInfo` (Get-ChildItem).
    Item {
        dir: bool,
    },
    /// `Microsoft.PowerShell.Commands.MatchInfo` (Select-String).
    Match,
    Hashtable,
    /// A CIM instance of a class.
    Cim,
    /// `FileSecurity` (Get-Acl).
    Acl,
    /// `FileSystemAccessRule`.
    Rule,
    /// `NTAccount`: shows as its `Value`.
    Identity,
    /// `PathInfo` (Get-Location).
    PathInfo,
    /// An environment variable of `Get-ChildItem env:`.
    EnvEntry,
    /// A PSCustomObject (HNS objects, `Measure-Object`'s result): `@{Name=value; …}` as text.
    Custom,
    /// A CIM instance of this class that shows as a table row (`Get-NetAdapter`,
    /// `Get-NetTCPConnection`).
    Row(&'static str),
    /// A `System.Byte[]` (`[byte[]]::new(n)`): its length, not its bytes.
    Bytes,
}

#[derive(Debug)]
struct Obj {
    kind: Kind,
    props: Vec<(String, V)>,
}

impl Obj {
    fn get(&self, name: &str) -> Option<&V> {
        self.props
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

fn obj(kind: Kind, props: Vec<(&str, V)>) -> V {
    V::Obj(Arc::new(Obj {
        kind,
        props: props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
    }))
}

fn s(text: impl Into<String>) -> V {
    V::Str(text.into())
}

impl V {
    /// PowerShell's conversion to a string (arrays joined with spaces, `$OFS`).
    fn text(&self) -> String {
        match self {
            V::Null => String::new(),
            V::Bool(true) => "True".into(),
            V::Bool(false) => "False".into(),
            V::Int(n) => n.to_string(),
            V::Num(n) => {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    format!("{n:.0}")
                } else {
                    n.to_string()
                }
            }
            V::Str(t) => t.clone(),
            V::Arr(items) => items.iter().map(V::text).collect::<Vec<_>>().join(" "),
            V::Block(b) => b.text.clone(),
            V::Obj(o) => match o.kind {
                Kind::Identity | Kind::EnvEntry => o.get("Value").map(V::text).unwrap_or_default(),
                Kind::Item { .. } => o.get("FullName").map(V::text).unwrap_or_default(),
                Kind::Match => match_line(o),
                Kind::PathInfo => o.get("Path").map(V::text).unwrap_or_default(),
                Kind::Hashtable => "System.Collections.Hashtable".into(),
                Kind::Cim => o.get("Name").map(V::text).unwrap_or_default(),
                Kind::Acl => "System.Security.AccessControl.FileSecurity".into(),
                Kind::Rule => "System.Security.AccessControl.FileSystemAccessRule".into(),
                Kind::Custom => {
                    let fields: Vec<String> = o.props.iter().map(|(k, v)| format!("{k}={}", v.shown())).collect();
                    format!("@{{{}}}", fields.join("; "))
                }
                Kind::Row(class) => (*class).to_string(),
                Kind::Bytes => "System.Byte[]".into(),
            },
        }
    }

    /// How a property value shows in a list or inside `@{…}`: arrays as `{a, b}`.
    fn shown(&self) -> String {
        match self {
            V::Arr(items) => format!("{{{}}}", items.iter().map(V::shown).collect::<Vec<_>>().join(", ")),
            other => other.text(),
        }
    }

    fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Int(n) => *n != 0,
            V::Num(n) => *n != 0.0,
            V::Str(t) => !t.is_empty(),
            V::Arr(items) => match items.as_slice() {
                [] => false,
                [one] => one.truthy(),
                _ => true,
            },
            V::Obj(_) | V::Block(_) => true,
        }
    }

    /// The items a value sends down a pipeline (arrays are enumerated; `$null` sends nothing).
    fn items(self) -> Vec<V> {
        match self {
            V::Arr(items) => items,
            V::Null => Vec::new(),
            other => vec![other],
        }
    }

    fn number(&self) -> Option<f64> {
        match self {
            V::Int(n) => Some(*n as f64),
            V::Num(n) => Some(*n),
            V::Bool(b) => Some(f64::from(u8::from(*b))),
            V::Str(t) => t.trim().parse().ok(),
            V::Null => Some(0.0),
            _ => None,
        }
    }

    fn int(&self) -> Option<i64> {
        match self {
            V::Int(n) => Some(*n),
            other => other.number().filter(|n| n.is_finite()).map(|n| n.round() as i64),
        }
    }

    /// A member: an object's property, a string's or array's `Length`/`Count`; member
    /// enumeration over arrays.
    fn member(&self, name: &str) -> V {
        let lower = name.to_ascii_lowercase();
        match self {
            V::Obj(o) => o.get(name).cloned().unwrap_or(V::Null),
            V::Str(t) if lower == "length" => V::Int(i64::try_from(t.chars().count()).unwrap_or(i64::MAX)),
            V::Arr(items) if lower == "length" || lower == "count" => {
                V::Int(i64::try_from(items.len()).unwrap_or(i64::MAX))
            }
            V::Arr(items) => {
                let found: Vec<V> = items
                    .iter()
                    .map(|i| i.member(name))
                    .filter(|v| !matches!(v, V::Null))
                    .collect();
                collect(found)
            }
            V::Null => V::Null,
            _ if lower == "count" => V::Int(1),
            _ => V::Null,
        }
    }
}

/// A pipeline's output as one value: nothing is `$null`, one item itself, more an array.
fn collect(mut items: Vec<V>) -> V {
    match items.len() {
        0 => V::Null,
        1 => items.pop().unwrap_or(V::Null),
        _ => V::Arr(items),
    }
}

fn match_line(o: &Obj) -> String {
    let line = o.get("Line").map(V::text).unwrap_or_default();
    match o.get("Path").map(V::text) {
        Some(p) if p != "InputStream" => {
            let n = o.get("LineNumber").map(V::text).unwrap_or_default();
            format!("{p}:{n}:{line}")
        }
        _ => line,
    }
}
