//! PowerShell (Windows PowerShell 5.1 on Server Core and on the host of a HostProcess
//! container; PowerShell Core in the e2e busybox/agnhost images): a small interpreter of the
//! language with a pipeline of objects, enough for node-side probes written the way an operator
//! writes them — variables, `if`/`elseif`/`else`, `foreach`, `$( )`, `( )`, `@( )`, script blocks,
//! the comparison, logical, string and arithmetic operators, member access, a few .NET string
//! methods and casts — and the cmdlets of the table in [`cmdlet`]: the file system
//! (`Get-ChildItem`, `Get-Content`, `Test-Path`, `Join-Path`, `Get-Acl`, `Get-Location`),
//! `Select-String`, `Where-Object`, `ForEach-Object`, `Select-Object`, `Get-CimInstance
//! Win32_Process`, output (`Write-Output`, `Write-Host`, `Out-Null`, `Out-String`), and the
//! network cmdlets of [`crate::node::exec::nettools`]. Anything else runs as a native command (the container's
//! executables, [`super::WINDOWS`]) or fails with PowerShell's CommandNotFoundException.
//!
//! Output is formatted at the end of each top-level statement the way `Out-Default` shows it:
//! strings and numbers one per line, file system items in the `Directory:` table, match
//! results as `path:line:text`, other objects as lists. Errors are written in PowerShell's
//! console format (non-terminating: the script goes on; `-ErrorAction SilentlyContinue` and
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

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use super::{
    Call, DiskEntry, ExecOutput, Session, code_of, env_get, network, out, ps_dotnet_udp, ps_error, ps_not_recognized,
    ps_section,
};

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
            },
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

// ---------------------------------------------------------------------------------------------
// Syntax
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct Block {
    stmts: Vec<Stmt>,
    text: String,
}

#[derive(Debug)]
enum Stmt {
    Pipeline(Pipeline),
    Assign {
        name: String,
        append: bool,
        value: Pipeline,
    },
    If {
        arms: Vec<(Pipeline, Vec<Stmt>)>,
        otherwise: Option<Vec<Stmt>>,
    },
    Foreach {
        var: String,
        over: Pipeline,
        body: Vec<Stmt>,
    },
    Exit(Option<Expr>),
}

#[derive(Debug)]
struct Pipeline {
    elements: Vec<Element>,
}

#[derive(Debug)]
struct Element {
    what: What,
    /// `2>$null`, `*>$null`: drop errors; `>$null`: drop output; `2>&1`: errors as output.
    drop_errors: bool,
    drop_output: bool,
    merge_errors: bool,
    /// The element's source text (for error records).
    text: String,
}

#[derive(Debug)]
enum What {
    Expr(Expr),
    Command { name: Expr, args: Vec<Arg> },
}

#[derive(Debug)]
enum Arg {
    /// `-Name` or `-Name:value`.
    Param(String, Option<Expr>),
    Value(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Xor,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Like,
    NotLike,
    Match,
    NotMatch,
    Contains,
    NotContains,
    In,
    NotIn,
    Replace,
    Split,
    Join,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug)]
enum Part {
    Lit(String),
    Var(String),
    Sub(Vec<Stmt>),
}

#[derive(Debug)]
enum Expr {
    Const(V),
    Var(String),
    Text(Vec<Part>),
    /// `$( )` / `@( )` (always an array).
    Sub(Vec<Stmt>, bool),
    Paren(Box<Pipeline>),
    List(Vec<Expr>),
    Block(Arc<Block>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Cast(String, Box<Expr>),
    Binary(Op, bool, Box<Expr>, Box<Expr>),
    Member(Box<Expr>, String),
    Call(Box<Expr>, String, Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Hash(Vec<(String, Expr)>),
}

/// A parse error: what was unexpected, and where.
#[derive(Debug)]
struct ParseError {
    message: String,
    at: usize,
}

struct Parser {
    c: Vec<char>,
    i: usize,
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Characters that end a bare command argument.
fn arg_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, '|' | ';' | ')' | '}' | ',' | '\n')
}

impl Parser {
    fn new(text: &str) -> Self {
        Self {
            c: text.chars().collect(),
            i: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    fn at(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            message: message.into(),
            at: self.i,
        })
    }

    fn text(&self, from: usize) -> String {
        self.c.get(from..self.i).map(|c| c.iter().collect()).unwrap_or_default()
    }

    /// Spaces, tabs, comments and backtick line continuations.
    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.i += 1,
                '`' if matches!(self.at(1), Some('\n' | '\r')) => self.i += 2,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Whitespace including newlines.
    fn ws_nl(&mut self) {
        loop {
            self.ws();
            match self.peek() {
                Some('\n' | '\r') => self.i += 1,
                _ => break,
            }
        }
    }

    /// A keyword (case-insensitive) at the current position, not followed by a word character.
    fn keyword(&self, word: &str) -> bool {
        let n = word.chars().count();
        let here: String = self.c.iter().skip(self.i).take(n).collect();
        here.eq_ignore_ascii_case(word) && !self.at(n).is_some_and(word_char)
    }

    fn eat(&mut self, c: char) -> Result<(), ParseError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("Missing '{c}'."))
        }
    }

    /// Statements up to the end or the closing `until`.
    fn statements(&mut self, until: Option<char>) -> Result<Vec<Stmt>, ParseError> {
        let mut stmts = Vec::new();
        loop {
            loop {
                self.ws_nl();
                if self.peek() == Some(';') {
                    self.i += 1;
                } else {
                    break;
                }
            }
            match self.peek() {
                None if until.is_none() => return Ok(stmts),
                None => return self.err(format!("Missing closing '{}'.", until.unwrap_or(')'))),
                Some(c) if Some(c) == until => return Ok(stmts),
                Some(c @ (')' | '}')) => {
                    return self.err(format!("Unexpected token '{c}' in expression or statement."));
                }
                _ => {}
            }
            stmts.push(self.statement()?);
            self.ws();
            match self.peek() {
                None | Some(';' | '\n' | '\r') => {}
                Some(c) if Some(c) == until => {}
                Some(c) => return self.err(format!("Unexpected token '{c}' in expression or statement.")),
            }
        }
    }

    fn block(&mut self) -> Result<Vec<Stmt>, ParseError> {
        self.ws_nl();
        self.eat('{')?;
        let stmts = self.statements(Some('}'))?;
        self.eat('}')?;
        Ok(stmts)
    }

    fn condition(&mut self) -> Result<Pipeline, ParseError> {
        self.ws_nl();
        self.eat('(')?;
        self.ws_nl();
        let p = self.pipeline()?;
        self.ws_nl();
        self.eat(')')?;
        Ok(p)
    }

    fn statement(&mut self) -> Result<Stmt, ParseError> {
        if self.keyword("if") {
            self.i += 2;
            let mut arms = vec![(self.condition()?, self.block()?)];
            let mut otherwise = None;
            loop {
                let save = self.i;
                self.ws_nl();
                if self.keyword("elseif") {
                    self.i += 6;
                    arms.push((self.condition()?, self.block()?));
                } else if self.keyword("else") {
                    self.i += 4;
                    otherwise = Some(self.block()?);
                    break;
                } else {
                    self.i = save;
                    break;
                }
            }
            return Ok(Stmt::If { arms, otherwise });
        }
        if self.keyword("foreach") {
            self.i += 7;
            self.ws();
            self.eat('(')?;
            self.ws();
            self.eat('$')?;
            let var = self.name();
            self.ws();
            if !self.keyword("in") {
                return self.err("Missing 'in' after variable in foreach loop.");
            }
            self.i += 2;
            self.ws();
            let over = self.pipeline()?;
            self.ws();
            self.eat(')')?;
            let body = self.block()?;
            return Ok(Stmt::Foreach { var, over, body });
        }
        if self.keyword("exit") {
            self.i += 4;
            self.ws();
            let value = match self.peek() {
                None | Some(';' | '\n' | '\r' | '}' | ')') => None,
                _ => Some(self.expression()?),
            };
            return Ok(Stmt::Exit(value));
        }
        // `$name = …` / `$name += …`
        if self.peek() == Some('$') {
            let save = self.i;
            self.i += 1;
            let name = self.name();
            self.ws();
            let append = self.peek() == Some('+') && self.at(1) == Some('=');
            let assign = append || (self.peek() == Some('=') && self.at(1) != Some('='));
            if !name.is_empty() && assign {
                self.i += if append { 2 } else { 1 };
                self.ws_nl();
                let value = self.pipeline()?;
                return Ok(Stmt::Assign { name, append, value });
            }
            self.i = save;
        }
        Ok(Stmt::Pipeline(self.pipeline()?))
    }

    /// A variable name after `$`: `name`, `env:NAME`, `{any name}`, `_`, `?`.
    fn name(&mut self) -> String {
        if self.peek() == Some('{') {
            self.i += 1;
            let from = self.i;
            while self.peek().is_some_and(|c| c != '}') {
                self.i += 1;
            }
            let name = self.text(from);
            self.i += 1;
            return name;
        }
        if matches!(self.peek(), Some('?' | '$' | '^')) {
            self.i += 1;
            return self.text(self.i - 1);
        }
        let from = self.i;
        while self.peek().is_some_and(|c| {
            c.is_alphanumeric() || c == '_' || (c == ':' && self.at(1).is_some_and(char::is_alphanumeric))
        }) {
            self.i += 1;
        }
        self.text(from)
    }

    fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
        let mut elements = vec![self.element()?];
        loop {
            self.ws();
            if self.peek() == Some('|') && self.at(1) != Some('|') {
                self.i += 1;
                self.ws_nl();
                elements.push(self.element()?);
            } else {
                return Ok(Pipeline { elements });
            }
        }
    }

    fn starts_expression(&self) -> bool {
        match self.peek() {
            Some('$' | '\'' | '"' | '(' | '@' | '[' | '!' | '{' | '0'..='9') => true,
            Some('-') => self.at(1).is_some_and(|c| c.is_ascii_digit() || c.is_alphabetic()),
            _ => false,
        }
    }

    fn element(&mut self) -> Result<Element, ParseError> {
        self.ws();
        let from = self.i;
        let what = if self.starts_expression() {
            What::Expr(self.expression()?)
        } else {
            let name = if self.peek() == Some('&') {
                self.i += 1;
                self.ws();
                self.primary()?
            } else {
                let start = self.i;
                while self.peek().is_some_and(|c| !arg_end(c) && c != '(') {
                    self.i += 1;
                }
                let name = self.text(start);
                if name.is_empty() {
                    return match self.peek() {
                        Some(c) => self.err(format!("Unexpected token '{c}' in expression or statement.")),
                        None => self.err("An empty pipe element is not allowed."),
                    };
                }
                Expr::Const(s(name))
            };
            What::Command { name, args: Vec::new() }
        };
        let mut e = Element {
            what,
            drop_errors: false,
            drop_output: false,
            merge_errors: false,
            text: String::new(),
        };
        loop {
            self.ws();
            if self.redirection(&mut e)? {
                continue;
            }
            match self.peek() {
                None | Some('|' | ';' | '\n' | '\r' | ')' | '}') => break,
                _ => {}
            }
            let What::Command { args, .. } = &mut e.what else {
                return match self.peek() {
                    Some(c) => self.err(format!("Unexpected token '{c}' in expression or statement.")),
                    None => self.err("Unexpected end of input."),
                };
            };
            if self.peek() == Some('-') && self.at(1).is_some_and(char::is_alphabetic) {
                self.i += 1;
                let start = self.i;
                while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                    self.i += 1;
                }
                let name = self.text(start);
                let inline = if self.peek() == Some(':') {
                    self.i += 1;
                    Some(self.argument()?)
                } else {
                    None
                };
                args.push(Arg::Param(name, inline));
                continue;
            }
            args.push(Arg::Value(self.argument()?));
        }
        e.text = self.text(from).trim().to_string();
        Ok(e)
    }

    /// `2>$null`, `2>&1`, `*>$null`, `>$null`, `> file` (a file target is discarded).
    fn redirection(&mut self, e: &mut Element) -> Result<bool, ParseError> {
        let (stream, skip) = match (self.peek(), self.at(1)) {
            (Some(d @ ('1'..='6' | '*')), Some('>')) => (Some(d), 2),
            (Some('>'), _) => (None, 1),
            _ => return Ok(false),
        };
        self.i += skip;
        if self.peek() == Some('>') {
            self.i += 1;
        }
        if self.peek() == Some('&') {
            self.i += 2;
            if stream == Some('2') {
                e.merge_errors = true;
            }
            return Ok(true);
        }
        self.ws();
        let start = self.i;
        while self.peek().is_some_and(|c| !arg_end(c)) {
            self.i += 1;
        }
        let _target = self.text(start);
        match stream {
            Some('2') => e.drop_errors = true,
            Some('*') => {
                e.drop_errors = true;
                e.drop_output = true;
            }
            _ => e.drop_output = true,
        }
        Ok(true)
    }

    /// A command argument: an expression (`$x`, `'…'`, `(…)`, …) or a bare word.
    fn argument(&mut self) -> Result<Expr, ParseError> {
        let first = if matches!(self.peek(), Some('$' | '\'' | '"' | '(' | '@' | '{')) {
            self.postfix()?
        } else {
            let start = self.i;
            while self.peek().is_some_and(|c| !arg_end(c)) {
                if self.peek() == Some('`') {
                    self.i += 1;
                }
                self.i += 1;
            }
            Expr::Const(s(self.text(start).replace('`', "")))
        };
        if self.peek() == Some(',') {
            let mut items = vec![first];
            while self.peek() == Some(',') {
                self.i += 1;
                self.ws();
                items.push(self.argument_item()?);
            }
            return Ok(Expr::List(items));
        }
        Ok(first)
    }

    fn argument_item(&mut self) -> Result<Expr, ParseError> {
        if matches!(self.peek(), Some('$' | '\'' | '"' | '(' | '@' | '{')) {
            return self.postfix();
        }
        let start = self.i;
        while self.peek().is_some_and(|c| !arg_end(c)) {
            self.i += 1;
        }
        Ok(Expr::Const(s(self.text(start))))
    }

    fn expression(&mut self) -> Result<Expr, ParseError> {
        self.logical()
    }

    /// `-and`, `-or`, `-xor` (lowest, left to right).
    fn logical(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.comparison()?;
        loop {
            self.ws();
            let op = [("-and", Op::And), ("-or", Op::Or), ("-xor", Op::Xor)]
                .into_iter()
                .find(|(w, _)| self.keyword(w));
            let Some((w, op)) = op else {
                return Ok(left);
            };
            self.i += w.len();
            self.ws_nl();
            let right = self.comparison()?;
            left = Expr::Binary(op, false, Box::new(left), Box::new(right));
        }
    }

    fn comparison_op(&self) -> Option<(usize, Op, bool)> {
        const OPS: &[(&str, Op)] = &[
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
            ("notcontains", Op::NotContains),
            ("in", Op::In),
            ("notin", Op::NotIn),
            ("replace", Op::Replace),
            ("split", Op::Split),
            ("join", Op::Join),
        ];
        if self.peek() != Some('-') {
            return None;
        }
        for (name, op) in OPS {
            for (prefix, case) in [("", false), ("i", false), ("c", true)] {
                let word = format!("-{prefix}{name}");
                if self.keyword(&word) {
                    return Some((word.len(), *op, case));
                }
            }
        }
        None
    }

    fn comparison(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.additive()?;
        loop {
            self.ws();
            let Some((len, op, case)) = self.comparison_op() else {
                return Ok(left);
            };
            self.i += len;
            self.ws_nl();
            let right = self.additive()?;
            left = Expr::Binary(op, case, Box::new(left), Box::new(right));
        }
    }

    fn additive(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.multiplicative()?;
        loop {
            self.ws();
            let op = match (self.peek(), self.at(1)) {
                (Some('+'), Some(c)) if c != '=' => Op::Add,
                (Some('-'), Some(c)) if !c.is_alphabetic() && c != '=' => Op::Sub,
                _ => return Ok(left),
            };
            self.i += 1;
            self.ws_nl();
            let right = self.multiplicative()?;
            left = Expr::Binary(op, false, Box::new(left), Box::new(right));
        }
    }

    fn multiplicative(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.list()?;
        loop {
            self.ws();
            let op = match self.peek() {
                Some('*') if self.at(1) != Some('>') => Op::Mul,
                Some('/') => Op::Div,
                Some('%') => Op::Rem,
                _ => return Ok(left),
            };
            self.i += 1;
            self.ws_nl();
            let right = self.list()?;
            left = Expr::Binary(op, false, Box::new(left), Box::new(right));
        }
    }

    /// `a, b, c` (binds tighter than arithmetic).
    fn list(&mut self) -> Result<Expr, ParseError> {
        let first = self.unary()?;
        self.ws();
        if self.peek() != Some(',') {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.peek() == Some(',') {
            self.i += 1;
            self.ws_nl();
            items.push(self.unary()?);
            self.ws();
        }
        Ok(Expr::List(items))
    }

    fn unary(&mut self) -> Result<Expr, ParseError> {
        self.ws();
        if self.keyword("-not") {
            self.i += 4;
            self.ws();
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        match self.peek() {
            Some('!') => {
                self.i += 1;
                Ok(Expr::Not(Box::new(self.unary()?)))
            }
            Some('-') if self.at(1).is_some_and(|c| c.is_ascii_digit() || c == '$' || c == '(') => {
                self.i += 1;
                Ok(Expr::Neg(Box::new(self.unary()?)))
            }
            Some('[') => {
                let save = self.i;
                self.i += 1;
                let start = self.i;
                let mut depth = 1;
                while let Some(c) = self.peek() {
                    if c == '[' {
                        depth += 1;
                    } else if c == ']' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    self.i += 1;
                }
                let ty = self.text(start);
                self.eat(']')?;
                if self.peek() == Some(':') && self.at(1) == Some(':') {
                    // Static members are not modelled.
                    self.i = save;
                    return self.err(format!("Unable to find type [{ty}]."));
                }
                self.ws();
                Ok(Expr::Cast(ty.to_ascii_lowercase(), Box::new(self.unary()?)))
            }
            _ => self.postfix(),
        }
    }

    fn postfix(&mut self) -> Result<Expr, ParseError> {
        let mut e = self.primary()?;
        loop {
            match (self.peek(), self.at(1)) {
                (Some('.'), Some(c)) if c.is_alphabetic() || c == '_' => {
                    self.i += 1;
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        self.i += 1;
                    }
                    let name = self.text(start);
                    if self.peek() == Some('(') {
                        self.i += 1;
                        let mut args = Vec::new();
                        self.ws_nl();
                        while self.peek() != Some(')') {
                            args.push(self.unary_chain()?);
                            self.ws_nl();
                            match self.peek() {
                                Some(',') => {
                                    self.i += 1;
                                    self.ws_nl();
                                }
                                Some(')') => {}
                                _ => return self.err("Missing closing ')' in expression."),
                            }
                        }
                        self.i += 1;
                        e = Expr::Call(Box::new(e), name, args);
                    } else {
                        e = Expr::Member(Box::new(e), name);
                    }
                }
                (Some('['), _) => {
                    self.i += 1;
                    self.ws();
                    let index = self.expression()?;
                    self.ws();
                    self.eat(']')?;
                    e = Expr::Index(Box::new(e), Box::new(index));
                }
                _ => return Ok(e),
            }
        }
    }

    /// An expression without top-level commas (method arguments).
    fn unary_chain(&mut self) -> Result<Expr, ParseError> {
        let mut left = self.unary()?;
        loop {
            self.ws();
            if let Some((len, op, case)) = self.comparison_op() {
                self.i += len;
                self.ws();
                let right = self.unary()?;
                left = Expr::Binary(op, case, Box::new(left), Box::new(right));
                continue;
            }
            let op = match self.peek() {
                Some('+') => Op::Add,
                Some('-') if self.at(1).is_some_and(|c| !c.is_alphabetic()) => Op::Sub,
                _ => return Ok(left),
            };
            self.i += 1;
            self.ws();
            let right = self.unary()?;
            left = Expr::Binary(op, false, Box::new(left), Box::new(right));
        }
    }

    fn primary(&mut self) -> Result<Expr, ParseError> {
        match (self.peek(), self.at(1)) {
            (Some('$'), Some('(')) => {
                self.i += 2;
                let stmts = self.statements(Some(')'))?;
                self.eat(')')?;
                Ok(Expr::Sub(stmts, false))
            }
            (Some('@'), Some('(')) => {
                self.i += 2;
                let stmts = self.statements(Some(')'))?;
                self.eat(')')?;
                Ok(Expr::Sub(stmts, true))
            }
            (Some('@'), Some('{')) => {
                self.i += 2;
                let mut pairs = Vec::new();
                loop {
                    self.ws_nl();
                    if self.peek() == Some(';') {
                        self.i += 1;
                        continue;
                    }
                    if self.peek() == Some('}') {
                        self.i += 1;
                        return Ok(Expr::Hash(pairs));
                    }
                    let key = match self.peek() {
                        Some('\'' | '"') => self.primary()?,
                        _ => {
                            let start = self.i;
                            while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                                self.i += 1;
                            }
                            Expr::Const(s(self.text(start)))
                        }
                    };
                    let Expr::Const(key) = key else {
                        return self.err("Missing '=' operator after key in hash literal.");
                    };
                    self.ws();
                    self.eat('=')?;
                    self.ws();
                    let value = self.statement()?;
                    let value = match value {
                        Stmt::Pipeline(p) => Expr::Paren(Box::new(p)),
                        _ => return self.err("Missing statement after '=' in hash literal."),
                    };
                    pairs.push((key.text(), value));
                }
            }
            (Some('('), _) => {
                self.i += 1;
                self.ws_nl();
                let p = self.pipeline()?;
                self.ws_nl();
                self.eat(')')?;
                Ok(Expr::Paren(Box::new(p)))
            }
            (Some('{'), _) => {
                self.i += 1;
                let start = self.i;
                let stmts = self.statements(Some('}'))?;
                let text = self.text(start);
                self.eat('}')?;
                Ok(Expr::Block(Arc::new(Block { stmts, text })))
            }
            (Some('$'), _) => {
                self.i += 1;
                let name = self.name();
                if name.is_empty() {
                    return Ok(Expr::Const(s("$")));
                }
                Ok(Expr::Var(name))
            }
            (Some('\''), _) => {
                self.i += 1;
                let mut text = String::new();
                loop {
                    match self.peek() {
                        None => return self.err("The string is missing the terminator: '."),
                        Some('\'') if self.at(1) == Some('\'') => {
                            text.push('\'');
                            self.i += 2;
                        }
                        Some('\'') => {
                            self.i += 1;
                            return Ok(Expr::Const(V::Str(text)));
                        }
                        Some(c) => {
                            text.push(c);
                            self.i += 1;
                        }
                    }
                }
            }
            (Some('"'), _) => {
                self.i += 1;
                let mut parts = Vec::new();
                let mut lit = String::new();
                loop {
                    match self.peek() {
                        None => return self.err("The string is missing the terminator: \"."),
                        Some('"') if self.at(1) == Some('"') => {
                            lit.push('"');
                            self.i += 2;
                        }
                        Some('"') => {
                            self.i += 1;
                            break;
                        }
                        Some('`') => {
                            let e = self.at(1).unwrap_or('`');
                            lit.push(match e {
                                'n' => '\n',
                                't' => '\t',
                                'r' => '\r',
                                '0' => '\0',
                                other => other,
                            });
                            self.i += 2;
                        }
                        Some('$') if self.at(1) == Some('(') => {
                            if !lit.is_empty() {
                                parts.push(Part::Lit(std::mem::take(&mut lit)));
                            }
                            self.i += 2;
                            let stmts = self.statements(Some(')'))?;
                            self.eat(')')?;
                            parts.push(Part::Sub(stmts));
                        }
                        Some('$') if self.at(1).is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '{') => {
                            if !lit.is_empty() {
                                parts.push(Part::Lit(std::mem::take(&mut lit)));
                            }
                            self.i += 1;
                            parts.push(Part::Var(self.name()));
                        }
                        Some(c) => {
                            lit.push(c);
                            self.i += 1;
                        }
                    }
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(lit));
                }
                Ok(Expr::Text(parts))
            }
            (Some(c), _) if c.is_ascii_digit() => {
                let start = self.i;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
                    self.i += 1;
                }
                let word = self.text(start).to_ascii_lowercase();
                match number(&word) {
                    Some(v) => Ok(Expr::Const(v)),
                    None => self.err(format!("Unexpected token '{word}' in expression or statement.")),
                }
            }
            (Some(c), _) => self.err(format!("Unexpected token '{c}' in expression or statement.")),
            (None, _) => self.err("Unexpected end of input."),
        }
    }
}

/// `42`, `1.5`, `0x1F`, `1KB`…`1PB`.
fn number(word: &str) -> Option<V> {
    if let Some(hex) = word.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).ok().map(V::Int);
    }
    let (digits, mult) = [
        ("kb", 1i64 << 10),
        ("mb", 1 << 20),
        ("gb", 1 << 30),
        ("tb", 1 << 40),
        ("pb", 1 << 50),
    ]
    .into_iter()
    .find_map(|(suffix, m)| word.strip_suffix(suffix).map(|d| (d, m)))
    .unwrap_or((word, 1));
    if let Ok(n) = digits.parse::<i64>() {
        return n.checked_mul(mult).map(V::Int);
    }
    digits.parse::<f64>().ok().map(|n| V::Num(n * mult as f64))
}

// ---------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------

/// Why evaluation stopped early.
#[derive(Debug)]
enum Flow {
    Exit(i32),
    /// A terminating error: its console text.
    Fail(String),
}

/// One pipeline element's errors and whether it succeeded.
#[derive(Debug, Default)]
struct Errors {
    text: Vec<String>,
    failed: bool,
}

impl Errors {
    fn add(&mut self, text: String) {
        self.text.push(text);
        self.failed = true;
    }
}

/// A running script.
struct Ps {
    s: Arc<Session>,
    core: bool,
    env: Vec<(String, String)>,
    vars: BTreeMap<String, V>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// `$?` of the last statement.
    last_ok: bool,
    /// The exit code of the last native command (`$LASTEXITCODE`).
    native: Option<i32>,
}

/// Runs a PowerShell script in the session.
pub(super) async fn run(s: Arc<Session>, script: String, env: Vec<(String, String)>, core: bool) -> ExecOutput {
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

fn glob(pattern: &str, text: &str, case: bool) -> bool {
    let fold = |t: &str| if case { t.to_string() } else { t.to_lowercase() };
    let (p, t): (Vec<char>, Vec<char>) = (fold(pattern).chars().collect(), fold(text).chars().collect());
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|k| t.get(k..).is_some_and(|tail| go(rest, tail))),
            Some(('?', rest)) => t.split_first().is_some_and(|(_, tt)| go(rest, tt)),
            Some(('[', rest)) => {
                let Some(end) = rest.iter().position(|c| *c == ']') else {
                    return t.first() == Some(&'[') && go(rest, &t[1..]);
                };
                let set = &rest[..end];
                t.split_first().is_some_and(|(c, tt)| {
                    let mut hit = false;
                    let mut k = 0;
                    while k < set.len() {
                        if k + 2 < set.len() && set[k + 1] == '-' {
                            hit |= set[k] <= *c && *c <= set[k + 2];
                            k += 3;
                        } else {
                            hit |= set[k] == *c;
                            k += 1;
                        }
                    }
                    hit && go(&rest[end + 1..], tt)
                })
            }
            Some(('`', rest)) if !rest.is_empty() => t.first() == rest.first() && go(&rest[1..], &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    go(&p, &t)
}

fn regex(pattern: &str, case: bool) -> Result<regex::Regex, String> {
    let full = if case {
        pattern.to_string()
    } else {
        format!("(?i){pattern}")
    };
    regex::Regex::new(&full).map_err(|e| format!("The regular expression pattern {pattern} is not valid: {e}"))
}

fn compare(a: &V, b: &V, case: bool) -> Option<std::cmp::Ordering> {
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

fn equal(a: &V, b: &V, case: bool) -> bool {
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Null, _) | (_, V::Null) => false,
        _ => compare(a, b, case) == Some(std::cmp::Ordering::Equal),
    }
}

impl Ps {
    fn var(&self, name: &str) -> V {
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

    fn set(&mut self, name: &str, value: V) {
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
    fn statements<'a>(&'a mut self, stmts: &'a [Stmt], capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
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

    fn statement<'a>(&'a mut self, stmt: &'a Stmt, capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
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

    fn pipeline<'a>(&'a mut self, p: &'a Pipeline, capture: bool) -> Fut<'a, Result<Vec<V>, Flow>> {
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

    fn eval<'a>(&'a mut self, e: &'a Expr) -> Fut<'a, Result<V, Flow>> {
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
    fn invoke<'a>(&'a mut self, block: &'a Block, item: V) -> Fut<'a, Result<Vec<V>, Flow>> {
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
    fn command<'a>(
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
                env: self.env.clone(),
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
    fn format(&self, values: &[V]) -> String {
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
                Some(_) => {
                    for v in run {
                        let V::Obj(o) = v else { continue };
                        let width = o.props.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
                        text.push_str("\r\n");
                        for (k, val) in &o.props {
                            let _ = write!(text, "{k:<width$} : {}\r\n", val.text());
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
    fn format_items(&self, items: &[&V]) -> String {
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

fn cast(ty: &str, v: V) -> Result<V, String> {
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

fn binary(op: Op, case: bool, x: V, y: V) -> Result<V, String> {
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
fn method(target: &V, name: &str, args: &[V]) -> Result<V, String> {
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

fn index_of(target: &V, index: &V) -> V {
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

// ---------------------------------------------------------------------------------------------
// Cmdlets
// ---------------------------------------------------------------------------------------------

/// A cmdlet's handler.
#[derive(Debug, Clone, Copy)]
enum Run {
    GetChildItem,
    GetContent,
    TestPath,
    JoinPath,
    GetAcl,
    GetLocation,
    SelectString,
    WhereObject,
    ForEachObject,
    SelectObject,
    GetCim,
    WriteOutput,
    WriteHost,
    OutNull,
    OutString,
    StartSleep,
    Network,
}

/// A cmdlet: its names, whether only Windows PowerShell has it, its parameters in positional
/// order, its switches, its handler.
struct Cmdlet {
    names: &'static [&'static str],
    desktop_only: bool,
    params: &'static [&'static str],
    switches: &'static [&'static str],
    run: Run,
}

const COMMON: &[&str] = &["erroraction", "ea", "warningaction", "outvariable", "errorvariable"];

static CMDLETS: &[Cmdlet] = &[
    Cmdlet {
        names: &["get-childitem", "gci", "dir", "ls"],
        desktop_only: false,
        params: &["path", "filter", "literalpath", "include", "exclude", "depth"],
        switches: &["recurse", "file", "directory", "force", "name", "hidden"],
        run: Run::GetChildItem,
    },
    Cmdlet {
        names: &["get-content", "gc", "cat", "type"],
        desktop_only: false,
        params: &["path", "literalpath", "totalcount", "head", "first", "tail", "encoding"],
        switches: &["raw"],
        run: Run::GetContent,
    },
    Cmdlet {
        names: &["test-path"],
        desktop_only: false,
        params: &["path", "literalpath", "pathtype"],
        switches: &["isvalid"],
        run: Run::TestPath,
    },
    Cmdlet {
        names: &["join-path"],
        desktop_only: false,
        params: &["path", "childpath"],
        switches: &["resolve"],
        run: Run::JoinPath,
    },
    Cmdlet {
        names: &["get-acl"],
        desktop_only: false,
        params: &["path", "literalpath"],
        switches: &[],
        run: Run::GetAcl,
    },
    Cmdlet {
        names: &["get-location", "pwd", "gl"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::GetLocation,
    },
    Cmdlet {
        names: &["select-string", "sls"],
        desktop_only: false,
        params: &["pattern", "path", "literalpath", "encoding"],
        switches: &[
            "simplematch",
            "list",
            "casesensitive",
            "quiet",
            "notmatch",
            "allmatches",
        ],
        run: Run::SelectString,
    },
    Cmdlet {
        names: &["where-object", "where", "?"],
        desktop_only: false,
        params: &["filterscript", "value"],
        switches: &[
            "eq", "ne", "gt", "ge", "lt", "le", "like", "notlike", "match", "notmatch", "contains", "in",
        ],
        run: Run::WhereObject,
    },
    Cmdlet {
        names: &["foreach-object", "foreach", "%"],
        desktop_only: false,
        params: &["process", "membername"],
        switches: &[],
        run: Run::ForEachObject,
    },
    Cmdlet {
        names: &["select-object", "select"],
        desktop_only: false,
        params: &["property", "first", "last", "skip", "expandproperty", "index"],
        switches: &["unique"],
        run: Run::SelectObject,
    },
    Cmdlet {
        names: &["get-ciminstance", "gcim", "get-wmiobject", "gwmi"],
        desktop_only: false,
        params: &["classname", "filter", "namespace", "class", "query"],
        switches: &[],
        run: Run::GetCim,
    },
    Cmdlet {
        names: &["write-output", "echo", "write"],
        desktop_only: false,
        params: &["inputobject"],
        switches: &["noenumerate"],
        run: Run::WriteOutput,
    },
    Cmdlet {
        names: &["write-host"],
        desktop_only: false,
        params: &["object", "foregroundcolor", "backgroundcolor", "separator"],
        switches: &["nonewline"],
        run: Run::WriteHost,
    },
    Cmdlet {
        names: &["out-null"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::OutNull,
    },
    Cmdlet {
        names: &["out-string"],
        desktop_only: false,
        params: &["width"],
        switches: &["stream"],
        run: Run::OutString,
    },
    Cmdlet {
        names: &["out-default", "out-host", "write-verbose", "write-debug"],
        desktop_only: false,
        params: &[],
        switches: &[],
        run: Run::WriteOutput,
    },
    Cmdlet {
        names: &["start-sleep", "sleep"],
        desktop_only: false,
        params: &["seconds", "milliseconds"],
        switches: &[],
        run: Run::StartSleep,
    },
    Cmdlet {
        names: &["resolve-dnsname", "test-netconnection", "tnc"],
        desktop_only: true,
        params: &[
            "name",
            "server",
            "type",
            "computername",
            "port",
            "commontcpport",
            "informationlevel",
        ],
        switches: &["quiet"],
        run: Run::Network,
    },
    // Modelled as Windows PowerShell 5.1's (.NET Framework WebException messages); PowerShell
    // Core's HttpClient-based cmdlet words its errors differently and is not simulated.
    Cmdlet {
        names: &["invoke-restmethod", "irm"],
        desktop_only: true,
        params: &[
            "uri",
            "timeoutsec",
            "method",
            "headers",
            "body",
            "contenttype",
            "outfile",
        ],
        switches: &["usebasicparsing"],
        run: Run::Network,
    },
];

/// An argument as given, evaluated.
enum Given {
    Param(String, Option<V>),
    Value(V),
}

/// A cmdlet call's bound arguments.
struct Invocation {
    named: Vec<(String, V)>,
    switches: Vec<String>,
    positional: Vec<V>,
}

impl Invocation {
    /// Binds the arguments in order: `-Name value` (a name may be abbreviated to a prefix of
    /// the parameter's) or `-Name:value`, switches, and the values left as positional ones.
    fn bind(spec: &Cmdlet, given: Vec<Given>) -> Self {
        let mut inv = Self {
            named: Vec::new(),
            switches: Vec::new(),
            positional: Vec::new(),
        };
        let mut it = given.into_iter().peekable();
        while let Some(g) = it.next() {
            match g {
                Given::Value(v) => inv.positional.push(v),
                Given::Param(name, inline) => {
                    let switch = spec
                        .switches
                        .iter()
                        .find(|p| **p == name || p.starts_with(name.as_str()));
                    let param = spec
                        .params
                        .iter()
                        .chain(COMMON)
                        .find(|p| **p == name || p.starts_with(name.as_str()));
                    match (switch, param, inline) {
                        (_, Some(p), Some(v)) => inv.named.push((p.to_string(), v)),
                        (Some(sw), _, _) => inv.switches.push(sw.to_string()),
                        (None, Some(p), None) => match it.next_if(|n| matches!(n, Given::Value(_))) {
                            Some(Given::Value(v)) => inv.named.push((p.to_string(), v)),
                            _ => inv.named.push((p.to_string(), V::Null)),
                        },
                        (None, None, _) => inv.switches.push(name),
                    }
                }
            }
        }
        inv
    }

    fn get(&self, name: &str) -> Option<&V> {
        self.named.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }

    /// `-ErrorAction SilentlyContinue` / `Ignore` (or `0`).
    fn silent(&self) -> bool {
        ["erroraction", "ea"].iter().any(|p| {
            self.get(p)
                .map(V::text)
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "silentlycontinue" | "ignore" | "0"))
        })
    }

    /// The value of the first of `names` given, else the `n`-th positional value.
    fn value(&self, names: &[&str], n: usize) -> Option<V> {
        names
            .iter()
            .find_map(|p| self.get(p).cloned())
            .or_else(|| self.positional.get(n).cloned())
    }
}

/// `env:NAME` → NAME (case-insensitive drive prefix).
fn env_drive(path: &str) -> Option<&str> {
    path.get(..4)
        .filter(|p| p.eq_ignore_ascii_case("env:"))
        .and_then(|_| path.get(4..))
}

fn texts(v: Option<V>) -> Vec<String> {
    v.map(|v| v.items().iter().map(V::text).collect()).unwrap_or_default()
}

/// A file system item as `Get-ChildItem` returns it.
fn item(e: &DiskEntry, parent: Option<String>) -> V {
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

/// The default ACL of what is created under `C:\` (inherited by the kubelet's directory).
fn default_acl(path: &str) -> V {
    let rule = |who: &str, rights: &str| {
        obj(
            Kind::Rule,
            vec![
                ("FileSystemRights", s(rights)),
                ("AccessControlType", s("Allow")),
                ("IdentityReference", obj(Kind::Identity, vec![("Value", s(who))])),
                ("IsInherited", V::Bool(true)),
                ("InheritanceFlags", s("None")),
                ("PropagationFlags", s("None")),
            ],
        )
    };
    let rules = [
        ("NT AUTHORITY\\SYSTEM", "FullControl"),
        ("BUILTIN\\Administrators", "FullControl"),
        ("BUILTIN\\Users", "ReadAndExecute, Synchronize"),
    ];
    let access_text = rules
        .iter()
        .map(|(who, rights)| format!("{who} Allow  {rights}"))
        .collect::<Vec<_>>()
        .join("\n");
    obj(
        Kind::Acl,
        vec![
            ("Path", s(format!("Microsoft.PowerShell.Core\\FileSystem::{path}"))),
            ("Owner", s("NT AUTHORITY\\SYSTEM")),
            ("Group", s("NT AUTHORITY\\SYSTEM")),
            ("Access", V::Arr(rules.iter().map(|(w, r)| rule(w, r)).collect())),
            ("AccessToString", s(access_text)),
        ],
    )
}

/// The processes `Win32_Process` lists: the node's services for a HostProcess container, the
/// container's own otherwise.
fn processes(s_: &Session) -> Vec<V> {
    let proc_ = |pid: i64, ppid: i64, name: &str, exe: &str, cmdline: &str| {
        obj(
            Kind::Cim,
            vec![
                ("Name", s(name)),
                ("ProcessId", V::Int(pid)),
                ("ParentProcessId", V::Int(ppid)),
                ("ExecutablePath", if exe.is_empty() { V::Null } else { s(exe) }),
                ("CommandLine", if cmdline.is_empty() { V::Null } else { s(cmdline) }),
            ],
        )
    };
    let sys32 = "C:\\Windows\\system32";
    let mut list = vec![
        proc_(0, 0, "System Idle Process", "", ""),
        proc_(4, 0, "System", "", ""),
        proc_(312, 4, "smss.exe", "", ""),
        proc_(420, 412, "csrss.exe", "", ""),
        proc_(496, 412, "wininit.exe", "", ""),
        proc_(628, 496, "services.exe", "", ""),
        proc_(
            636,
            496,
            "lsass.exe",
            &format!("{sys32}\\lsass.exe"),
            &format!("{sys32}\\lsass.exe"),
        ),
        proc_(
            760,
            628,
            "svchost.exe",
            &format!("{sys32}\\svchost.exe"),
            &format!("{sys32}\\svchost.exe -k DcomLaunch -p"),
        ),
    ];
    let ps = proc_(
        5120,
        4800,
        "powershell.exe",
        "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
        "powershell.exe",
    );
    let Some(node) = s_.ctx.node.as_ref().filter(|_| s_.ctx.host_process) else {
        list.push(proc_(
            1020,
            628,
            "CExecSvc.exe",
            &format!("{sys32}\\CExecSvc.exe"),
            &format!("{sys32}\\CExecSvc.exe"),
        ));
        list.push(ps);
        return list;
    };
    // kubelet and containerd as sig-windows-tools installs them (no --root-dir: the kubelet
    // keeps its default C:\var\lib\kubelet).
    let containerd = "C:\\Program Files\\containerd\\containerd.exe";
    list.push(proc_(
        2040,
        628,
        "containerd.exe",
        containerd,
        &format!("\"{containerd}\" --run-service"),
    ));
    let kubelet = format!(
        "C:\\k\\kubelet.exe --cert-dir=C:\\var\\lib\\kubelet\\pki --config=/var/lib/kubelet/config.yaml \
         --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf \
         --hostname-override={} --container-runtime-endpoint=npipe:////./pipe/containerd-containerd \
         --pod-infra-container-image={} --enable-debugging-handlers --cgroups-per-qos=false \
         --enforce-node-allocatable=\"\" --resolv-conf=\"\" --log-dir=/var/log/kubelet --logtostderr=false",
        node.name, node.pause_image
    );
    list.push(proc_(2212, 628, "kubelet.exe", "C:\\k\\kubelet.exe", &kubelet));
    list.push(ps);
    list
}

/// A WQL filter `Prop = 'v' [AND Prop LIKE 'p%']…` as a predicate.
fn wql_matches(filter: &str, item: &V) -> bool {
    let lower = filter.to_ascii_lowercase();
    let mut rest = filter;
    let mut offset = 0;
    let mut conditions: Vec<&str> = Vec::new();
    while let Some(at) = lower.get(offset..).and_then(|l| l.find(" and ")) {
        let cut = at;
        conditions.push(rest.get(..cut).unwrap_or(""));
        rest = rest.get(cut + 5..).unwrap_or("");
        offset += cut + 5;
    }
    conditions.push(rest);
    conditions.iter().all(|c| {
        let c = c.trim();
        let (prop, op, value) = if let Some((p, v)) = c.split_once("!=") {
            (p, "!=", v)
        } else if let Some((p, v)) = c.split_once('=') {
            (p, "=", v)
        } else if let Some(i) = c.to_ascii_lowercase().find(" like ") {
            (&c[..i], "like", &c[i + 6..])
        } else {
            return false;
        };
        let value = value.trim().trim_matches('\'').trim_matches('"');
        let got = item.member(prop.trim()).text();
        match op {
            "=" => got.eq_ignore_ascii_case(value),
            "!=" => !got.eq_ignore_ascii_case(value),
            _ => glob(&value.replace('%', "*").replace('_', "?"), &got, false),
        }
    })
}

impl Ps {
    #[allow(clippy::too_many_arguments)]
    fn cmdlet<'a>(
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
                Run::OutNull | Run::StartSleep => Vec::new(),
                Run::OutString => vec![s(self.format(&input))],
                Run::Network => {
                    let mut argv = vec![words_name(e)];
                    argv.extend(words.iter().cloned());
                    let call = Call {
                        argv,
                        stdin: Bytes::new(),
                        env: self.env.clone(),
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
fn words_name(e: &Element) -> String {
    match &e.what {
        What::Command {
            name: Expr::Const(v), ..
        } => v.text(),
        _ => String::new(),
    }
}

fn get_child_item(
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

fn get_content(session: &Session, call: &Invocation, statement: &str, errors: &mut Errors) -> Vec<V> {
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

fn select_string(session: &Session, call: &Invocation, input: Vec<V>) -> Vec<V> {
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
