//! sh (busybox ash; busybox-w32 on Windows): lexer, parser and runner.

use std::sync::Arc;

use bytes::Bytes;

use super::outline::{Command, Outline, Statement, Stdout};
use super::plumbing::{Chain, Opened, RedirTo, deliver, route, skipped};
use super::session::{Session, WriteError};
use super::support::{code_of, env_get, env_set, out};
use super::{Call, Reply, volumes};
use crate::node::runtime::{ExecOutput, ExitStatus};

// ---------------------------------------------------------------------------------------------
// sh (busybox ash; busybox-w32 on Windows)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub(super) enum Piece {
    Lit(String),
    Var(String),
}

#[derive(Debug, Clone, Default)]
pub(super) struct Word {
    pub(super) pieces: Vec<Piece>,
    pub(super) quoted: bool,
}

impl Word {
    /// The unquoted literal text of a word, if it is one (for reserved words).
    pub(super) fn bare(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Lit(l)] if !self.quoted => Some(l),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) enum ShRedir {
    /// To a file (`>`, or `>>` to append).
    Out {
        target: Word,
        append: bool,
    },
    In(Word),
    Dup(u8),
}

#[derive(Debug, Clone)]
pub(super) enum ShTok {
    Word(Word),
    Op(&'static str),
    Redir(u8, ShRedir),
}

#[derive(Debug, Default)]
pub(super) struct ShSimple {
    pub(super) words: Vec<Word>,
    pub(super) redirs: Vec<(u8, ShRedir)>,
}

/// A command of a pipeline: a simple command or a compound one with its redirections.
#[derive(Debug)]
pub(super) enum ShCmd {
    Simple(ShSimple),
    /// `( list )` (a subshell: variables and `exit` stay inside) or `{ list; }`.
    Group {
        body: Vec<ShPipeline>,
        subshell: bool,
        redirs: Vec<(u8, ShRedir)>,
    },
    /// `if list; then list; [elif list; then list;]… [else list;] fi`.
    If {
        arms: Vec<(Vec<ShPipeline>, Vec<ShPipeline>)>,
        otherwise: Option<Vec<ShPipeline>>,
        redirs: Vec<(u8, ShRedir)>,
    },
}

#[derive(Debug)]
pub(super) struct ShPipeline {
    pub(super) chain: Chain,
    /// `! pipeline` inverts its status.
    pub(super) negate: bool,
    pub(super) cmds: Vec<ShCmd>,
}

/// `$NAME`, `${NAME}`, `$?` … at `c[*i] == '$'`; None when no name follows.
pub(super) fn lex_var(c: &[char], i: &mut usize) -> Option<String> {
    let next = *c.get(*i + 1)?;
    if next == '{' {
        let rest = c.get(*i + 2..)?;
        let end = rest.iter().position(|x| *x == '}')?;
        *i += end + 3;
        return Some(rest.get(..end)?.iter().collect());
    }
    if matches!(next, '?' | '#' | '$' | '!' | '@' | '*') || next.is_ascii_digit() {
        *i += 2;
        return Some(next.to_string());
    }
    if !(next.is_ascii_alphabetic() || next == '_') {
        return None;
    }
    let start = *i + 1;
    let mut end = start;
    while c.get(end).is_some_and(|x| x.is_ascii_alphanumeric() || *x == '_') {
        end += 1;
    }
    *i = end;
    Some(c.get(start..end)?.iter().collect())
}

/// `$( … )` at `c[*i] == '$'`: command substitution is not run; its text stays literal.
pub(super) fn lex_substitution(c: &[char], i: &mut usize, lit: &mut String) -> bool {
    if c.get(*i + 1) != Some(&'(') {
        return false;
    }
    let mut depth = 0usize;
    while let Some(&x) = c.get(*i) {
        lit.push(x);
        *i += 1;
        match x {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
    }
    true
}

pub(super) fn lex_word(c: &[char], i: &mut usize) -> Result<Word, String> {
    let mut word = Word::default();
    let mut lit = String::new();
    let flush = |lit: &mut String, word: &mut Word| {
        if !lit.is_empty() {
            word.pieces.push(Piece::Lit(std::mem::take(lit)));
        }
    };
    while let Some(&ch) = c.get(*i) {
        match ch {
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => break,
            '\'' => {
                word.quoted = true;
                *i += 1;
                loop {
                    match c.get(*i) {
                        None => return Err("syntax error: unterminated quoted string".into()),
                        Some('\'') => break,
                        Some(&x) => lit.push(x),
                    }
                    *i += 1;
                }
                *i += 1;
            }
            '"' => {
                word.quoted = true;
                *i += 1;
                loop {
                    match c.get(*i) {
                        None => return Err("syntax error: unterminated quoted string".into()),
                        Some('"') => break,
                        Some('\\') if matches!(c.get(*i + 1), Some('"' | '\\' | '$' | '`')) => {
                            lit.extend(c.get(*i + 1));
                            *i += 2;
                        }
                        Some('$') if lex_substitution(c, i, &mut lit) => {}
                        Some('$') => match lex_var(c, i) {
                            Some(var) => {
                                flush(&mut lit, &mut word);
                                word.pieces.push(Piece::Var(var));
                            }
                            None => {
                                lit.push('$');
                                *i += 1;
                            }
                        },
                        Some(&x) => {
                            lit.push(x);
                            *i += 1;
                        }
                    }
                }
                *i += 1;
            }
            '\\' => {
                if let Some(&x) = c.get(*i + 1).filter(|x| **x != '\n') {
                    lit.push(x);
                }
                *i += 2;
            }
            '$' if lex_substitution(c, i, &mut lit) => {}
            '$' => match lex_var(c, i) {
                Some(var) => {
                    flush(&mut lit, &mut word);
                    word.pieces.push(Piece::Var(var));
                }
                None => {
                    lit.push('$');
                    *i += 1;
                }
            },
            _ => {
                lit.push(ch);
                *i += 1;
            }
        }
    }
    flush(&mut lit, &mut word);
    Ok(word)
}

pub(super) fn lex_redir(c: &[char], i: &mut usize, fd: Option<u8>) -> Result<ShTok, String> {
    let input = c.get(*i) == Some(&'<');
    *i += 1;
    if !input && c.get(*i) == Some(&'&') {
        let to = c
            .get(*i + 1)
            .and_then(|d| d.to_digit(10))
            .and_then(|d| u8::try_from(d).ok());
        *i += 2;
        return match to {
            Some(to) => Ok(ShTok::Redir(fd.unwrap_or(1), ShRedir::Dup(to))),
            None => Err("syntax error: bad fd number".into()),
        };
    }
    let append = !input && c.get(*i) == Some(&'>');
    if append {
        *i += 1;
    }
    while c.get(*i).is_some_and(|x| *x == ' ' || *x == '\t') {
        *i += 1;
    }
    let target = lex_word(c, i)?;
    if target.pieces.is_empty() && !target.quoted {
        return Err("syntax error: unexpected newline".into());
    }
    Ok(if input {
        ShTok::Redir(fd.unwrap_or(0), ShRedir::In(target))
    } else {
        ShTok::Redir(fd.unwrap_or(1), ShRedir::Out { target, append })
    })
}

pub(super) fn lex_sh(text: &str) -> Result<Vec<ShTok>, String> {
    let c: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut toks = Vec::new();
    while let Some(&ch) = c.get(i) {
        let next = c.get(i + 1).copied();
        match ch {
            ' ' | '\t' => i += 1,
            '\\' if next == Some('\n') => i += 2,
            '\n' | ';' => {
                toks.push(ShTok::Op(";"));
                i += 1;
            }
            '#' => {
                while c.get(i).is_some_and(|x| *x != '\n') {
                    i += 1;
                }
            }
            '&' | '|' if next == Some(ch) => {
                toks.push(ShTok::Op(if ch == '&' { "&&" } else { "||" }));
                i += 2;
            }
            '&' => {
                toks.push(ShTok::Op(";"));
                i += 1;
            }
            '|' => {
                toks.push(ShTok::Op("|"));
                i += 1;
            }
            '(' | ')' => {
                toks.push(ShTok::Op(if ch == '(' { "(" } else { ")" }));
                i += 1;
            }
            '>' | '<' => toks.push(lex_redir(&c, &mut i, None)?),
            d if d.is_ascii_digit() && matches!(next, Some('>' | '<')) => {
                i += 1;
                let fd = d.to_digit(10).and_then(|d| u8::try_from(d).ok());
                toks.push(lex_redir(&c, &mut i, fd)?);
            }
            _ => toks.push(ShTok::Word(lex_word(&c, &mut i)?)),
        }
    }
    Ok(toks)
}

/// Words that start or end compound commands where a command may start.
pub(super) const SH_RESERVED: &[&str] = &["if", "then", "elif", "else", "fi", "{", "}", "!"];

/// A recursive-descent parser of sh command lists.
pub(super) struct ShParser {
    pub(super) toks: Vec<ShTok>,
    pub(super) i: usize,
}

pub(super) fn sh_unexpected(tok: Option<&ShTok>) -> String {
    match tok {
        None => "syntax error: unexpected end of file".into(),
        Some(ShTok::Op(";")) => "syntax error: unexpected \";\"".into(),
        Some(ShTok::Op(op)) => format!("syntax error: unexpected \"{op}\""),
        Some(ShTok::Word(w)) => format!("syntax error: unexpected \"{}\"", w.bare().unwrap_or("word")),
        Some(ShTok::Redir(..)) => "syntax error: unexpected redirection".into(),
    }
}

impl ShParser {
    pub(super) fn peek(&self) -> Option<&ShTok> {
        self.toks.get(self.i)
    }

    /// The reserved word at the current position, if any.
    pub(super) fn reserved(&self) -> Option<&'static str> {
        match self.peek() {
            Some(ShTok::Word(w)) => {
                let bare = w.bare()?;
                SH_RESERVED.iter().copied().find(|r| *r == bare)
            }
            _ => None,
        }
    }

    pub(super) fn op(&self) -> Option<&'static str> {
        match self.peek() {
            Some(ShTok::Op(op)) => Some(op),
            _ => None,
        }
    }

    pub(super) fn expect_reserved(&mut self, word: &str) -> Result<(), String> {
        if self.reserved() == Some(word) {
            self.i += 1;
            Ok(())
        } else {
            Err(sh_unexpected(self.peek()))
        }
    }

    /// A list of pipelines, up to the end, a `)` or one of the reserved words `stops`.
    pub(super) fn list(&mut self, stops: &[&str]) -> Result<Vec<ShPipeline>, String> {
        let mut list = Vec::new();
        let mut chain = Chain::Always;
        loop {
            while self.op() == Some(";") && chain == Chain::Always {
                self.i += 1;
            }
            let at_end = match self.peek() {
                None => true,
                Some(ShTok::Op(")")) => true,
                _ => self.reserved().is_some_and(|r| stops.contains(&r)),
            };
            if at_end {
                if chain != Chain::Always {
                    return Err(sh_unexpected(self.peek()));
                }
                return Ok(list);
            }
            let mut pipeline = self.pipeline()?;
            pipeline.chain = chain;
            list.push(pipeline);
            chain = match self.op() {
                Some(";") => Chain::Always,
                Some("&&") => Chain::And,
                Some("||") => Chain::Or,
                _ => return Ok(list),
            };
            self.i += 1;
        }
    }

    pub(super) fn pipeline(&mut self) -> Result<ShPipeline, String> {
        let negate = self.reserved() == Some("!");
        if negate {
            self.i += 1;
        }
        let mut cmds = vec![self.command()?];
        while self.op() == Some("|") {
            self.i += 1;
            cmds.push(self.command()?);
        }
        Ok(ShPipeline {
            chain: Chain::Always,
            negate,
            cmds,
        })
    }

    pub(super) fn redirections(&mut self) -> Vec<(u8, ShRedir)> {
        let mut redirs = Vec::new();
        while let Some(ShTok::Redir(fd, r)) = self.peek() {
            redirs.push((*fd, r.clone()));
            self.i += 1;
        }
        redirs
    }

    pub(super) fn command(&mut self) -> Result<ShCmd, String> {
        if self.op() == Some("(") {
            self.i += 1;
            let body = self.list(&[])?;
            if self.op() != Some(")") || body.is_empty() {
                return Err(sh_unexpected(self.peek()));
            }
            self.i += 1;
            let redirs = self.redirections();
            return Ok(ShCmd::Group {
                body,
                subshell: true,
                redirs,
            });
        }
        match self.reserved() {
            Some("{") => {
                self.i += 1;
                let body = self.list(&["}"])?;
                self.expect_reserved("}")?;
                let redirs = self.redirections();
                return Ok(ShCmd::Group {
                    body,
                    subshell: false,
                    redirs,
                });
            }
            Some("if") => {
                self.i += 1;
                let mut arms = Vec::new();
                let mut otherwise = None;
                loop {
                    let cond = self.list(&["then"])?;
                    self.expect_reserved("then")?;
                    let body = self.list(&["elif", "else", "fi"])?;
                    if cond.is_empty() || body.is_empty() {
                        return Err(sh_unexpected(self.peek()));
                    }
                    arms.push((cond, body));
                    match self.reserved() {
                        Some("elif") => self.i += 1,
                        Some("else") => {
                            self.i += 1;
                            otherwise = Some(self.list(&["fi"])?);
                            self.expect_reserved("fi")?;
                            break;
                        }
                        _ => {
                            self.expect_reserved("fi")?;
                            break;
                        }
                    }
                }
                let redirs = self.redirections();
                return Ok(ShCmd::If {
                    arms,
                    otherwise,
                    redirs,
                });
            }
            Some(word @ ("then" | "elif" | "else" | "fi" | "}")) => {
                return Err(format!("syntax error: unexpected \"{word}\""));
            }
            _ => {}
        }
        let mut simple = ShSimple::default();
        loop {
            match self.peek() {
                Some(ShTok::Word(w)) => simple.words.push(w.clone()),
                Some(ShTok::Redir(fd, r)) => simple.redirs.push((*fd, r.clone())),
                _ => break,
            }
            self.i += 1;
        }
        if simple.words.is_empty() && simple.redirs.is_empty() {
            return Err(sh_unexpected(self.peek()));
        }
        Ok(ShCmd::Simple(simple))
    }
}

pub(super) fn parse_sh(toks: Vec<ShTok>) -> Result<Vec<ShPipeline>, String> {
    let mut parser = ShParser { toks, i: 0 };
    let list = parser.list(&[])?;
    match parser.peek() {
        None => Ok(list),
        other => Err(sh_unexpected(other)),
    }
}

/// A word's value; None for an unquoted word that expanded to nothing (it disappears).
pub(super) fn expand(word: &Word, vars: &[(String, String)], status: i32) -> Option<String> {
    let mut text = String::new();
    for piece in &word.pieces {
        match piece {
            Piece::Lit(l) => text.push_str(l),
            Piece::Var(v) => match v.as_str() {
                "?" => text.push_str(&status.to_string()),
                "$" => text.push('1'),
                "#" => text.push('0'),
                "0" => text.push_str("sh"),
                name => text.push_str(env_get(vars, name, false).unwrap_or("")),
            },
        }
    }
    (!text.is_empty() || word.quoted || word.pieces.iter().any(|p| matches!(p, Piece::Lit(_)))).then_some(text)
}

pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// What `sh [flags] [-c script | file]` is asked to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShEntry<'a> {
    /// `-c script` (the flag may be grouped: `-ec`).
    Script(&'a str),
    /// `-c` without a script.
    MissingScript,
    /// A script file.
    File(&'a str),
    /// No script: sh reads its commands from stdin.
    Stdin,
}

/// Reads sh's arguments (after the program name).
pub(crate) fn sh_entry(args: &[String]) -> ShEntry<'_> {
    for (idx, a) in args.iter().enumerate() {
        if a.starts_with('-') && a.len() > 1 && !a.starts_with("--") {
            if a.contains('c') {
                return match args.get(idx + 1) {
                    Some(text) => ShEntry::Script(text),
                    None => ShEntry::MissingScript,
                };
            }
            continue;
        }
        return ShEntry::File(a);
    }
    ShEntry::Stdin
}

pub(super) fn sh(s: &Arc<Session>, mut call: Call) -> Reply {
    let env = call.take_env(s);
    let script = match sh_entry(call.args()) {
        ShEntry::Script(text) => Some(text.to_string()),
        ShEntry::MissingScript => return out("", "sh: -c requires an argument\n", 2).into(),
        ShEntry::File(a) => match s.disk().get(&s.path(a)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => Some(String::from_utf8_lossy(data).into_owned()),
            None => return out("", format!("sh: can't open '{a}': No such file or directory\n"), 2).into(),
        },
        ShEntry::Stdin => None,
    };
    let (script, stdin) = match script {
        Some(text) => (text, call.stdin),
        None => (String::from_utf8_lossy(&call.stdin).into_owned(), Bytes::new()),
    };
    Reply::Later(Box::pin(run_sh(s.clone(), script, stdin, env)))
}

/// The state of a running sh script.
pub(super) struct ShState {
    pub(super) vars: Vec<(String, String)>,
    pub(super) stdout: Vec<u8>,
    pub(super) stderr: Vec<u8>,
    pub(super) status: i32,
    /// What the script reads (the exec's stdin), until a command takes it.
    pub(super) stdin: Option<Bytes>,
}

/// How a list ended: normally, or by `exit` (with its status).
pub(super) enum ShFlow {
    Next,
    Exit(i32),
}

pub(super) async fn run_sh(s: Arc<Session>, script: String, stdin: Bytes, env: Vec<(String, String)>) -> ExecOutput {
    let list = match lex_sh(&script).and_then(parse_sh) {
        Ok(p) => p,
        Err(e) => return out("", format!("sh: {e}\n"), 2),
    };
    let mut st = ShState {
        vars: env,
        stdout: Vec::new(),
        stderr: Vec::new(),
        status: 0,
        stdin: Some(stdin),
    };
    let status = match sh_list(&s, &list, &mut st).await {
        ShFlow::Next => st.status,
        ShFlow::Exit(code) => code,
    };
    out(st.stdout, st.stderr, status)
}

/// The message and status of a redirection that cannot be opened.
pub(super) fn sh_open_error(s: &Session, path: &str, e: WriteError) -> String {
    let why = match e {
        WriteError::ReadOnly if s.windows() => "Permission denied",
        WriteError::ReadOnly => "Read-only file system",
        WriteError::NoDirectory => "nonexistent directory",
        WriteError::IsDirectory => "Is a directory",
    };
    format!("sh: can't create {path}: {why}\n")
}

/// A command's opened output files, its output routes and its input file.
pub(super) type ShRedirections = (Opened, Vec<(u8, RedirTo)>, Option<String>);

/// Splits redirections into output routes (opening files) and an input file.
pub(super) fn sh_redirections(s: &Session, redirs: &[(u8, ShRedir)], st: &ShState) -> Result<ShRedirections, String> {
    let mut files = Vec::new();
    let mut outputs = Vec::new();
    let mut from = None;
    for (fd, r) in redirs {
        match r {
            ShRedir::Out { target, append } => {
                let path = expand(target, &st.vars, st.status).unwrap_or_default();
                if volumes::is_null_device(&path, s.windows()) {
                    outputs.push((*fd, RedirTo::Null));
                    continue;
                }
                files.push((path, *append));
                outputs.push((*fd, RedirTo::File(files.len() - 1)));
            }
            ShRedir::Dup(to) => outputs.push((*fd, RedirTo::Fd(*to))),
            ShRedir::In(w) => from = expand(w, &st.vars, st.status),
        }
    }
    let opened = Opened::open(s, files).map_err(|(path, e)| sh_open_error(s, &path, e))?;
    Ok((opened, outputs, from))
}

pub(super) fn sh_list<'a>(
    s: &'a Arc<Session>,
    list: &'a [ShPipeline],
    st: &'a mut ShState,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ShFlow> + Send + 'a>> {
    Box::pin(async move {
        for pipeline in list {
            if skipped(pipeline.chain, st.status) {
                continue;
            }
            if let ShFlow::Exit(code) = sh_pipeline(s, pipeline, st).await {
                return ShFlow::Exit(code);
            }
        }
        ShFlow::Next
    })
}

pub(super) async fn sh_pipeline(s: &Arc<Session>, pipeline: &ShPipeline, st: &mut ShState) -> ShFlow {
    let last = pipeline.cmds.len().saturating_sub(1);
    let mut input = st.stdin.take().unwrap_or_default();
    for (idx, cmd) in pipeline.cmds.iter().enumerate() {
        let piped = idx < last;
        let (flow, output) = sh_command(s, cmd, st, std::mem::take(&mut input), piped).await;
        if let ShFlow::Exit(code) = flow {
            return ShFlow::Exit(code);
        }
        input = Bytes::from(output);
    }
    if pipeline.negate {
        st.status = i32::from(st.status == 0);
    }
    ShFlow::Next
}

/// Runs one command of a pipeline; returns how it ended and, when it feeds a pipe, its output.
pub(super) async fn sh_command(
    s: &Arc<Session>,
    cmd: &ShCmd,
    st: &mut ShState,
    input: Bytes,
    piped: bool,
) -> (ShFlow, Vec<u8>) {
    let redirs = match cmd {
        ShCmd::Simple(simple) => &simple.redirs,
        ShCmd::Group { redirs, .. } | ShCmd::If { redirs, .. } => redirs,
    };
    let (mut opened, outputs, from) = match sh_redirections(s, redirs, st) {
        Ok(x) => x,
        Err(message) => {
            st.stderr.extend(message.into_bytes());
            st.status = 1;
            return (ShFlow::Next, Vec::new());
        }
    };
    let cin = match &from {
        None => input,
        Some(path) => match s.disk().get(&s.path(path)).and_then(|e| e.file.as_ref()) {
            Some((data, _)) => Bytes::from(data.clone()),
            None => {
                st.stderr
                    .extend(format!("sh: can't open '{path}': No such file or directory\n").into_bytes());
                st.status = 1;
                return (ShFlow::Next, Vec::new());
            }
        },
    };
    let sinks = route(&outputs);
    let (flow, o) = match cmd {
        ShCmd::Simple(simple) => sh_simple(s, simple, st, cin).await,
        ShCmd::Group { body, subshell, .. } => {
            let mut inner = ShState {
                vars: st.vars.clone(),
                stdout: Vec::new(),
                stderr: Vec::new(),
                status: st.status,
                stdin: Some(cin),
            };
            let flow = sh_list(s, body, &mut inner).await;
            let (flow, status) = match (flow, subshell) {
                (ShFlow::Exit(code), true) => (ShFlow::Next, code),
                (ShFlow::Exit(code), false) => (ShFlow::Exit(code), code),
                (ShFlow::Next, _) => (ShFlow::Next, inner.status),
            };
            if !subshell {
                st.vars = inner.vars;
            }
            (flow, out(inner.stdout, inner.stderr, status))
        }
        ShCmd::If { arms, otherwise, .. } => {
            let mut inner = ShState {
                vars: std::mem::take(&mut st.vars),
                stdout: Vec::new(),
                stderr: Vec::new(),
                status: st.status,
                stdin: Some(cin),
            };
            let mut flow = ShFlow::Next;
            let mut ran = false;
            for (cond, body) in arms {
                if let ShFlow::Exit(code) = sh_list(s, cond, &mut inner).await {
                    flow = ShFlow::Exit(code);
                    ran = true;
                    break;
                }
                if inner.status == 0 {
                    flow = sh_list(s, body, &mut inner).await;
                    ran = true;
                    break;
                }
            }
            if !ran {
                match otherwise {
                    Some(body) => flow = sh_list(s, body, &mut inner).await,
                    None => inner.status = 0,
                }
            }
            st.vars = inner.vars;
            let status = match flow {
                ShFlow::Exit(code) => code,
                ShFlow::Next => inner.status,
            };
            (flow, out(inner.stdout, inner.stderr, status))
        }
    };
    st.status = code_of(&o);
    let mut piped_out = Vec::new();
    let target = if piped { &mut piped_out } else { &mut st.stdout };
    deliver(o, sinks, target, &mut st.stderr, &mut opened);
    opened.close(s);
    (flow, piped_out)
}

/// Runs a simple command: assignments, the built-ins, or a program.
pub(super) async fn sh_simple(
    s: &Arc<Session>,
    simple: &ShSimple,
    st: &mut ShState,
    cin: Bytes,
) -> (ShFlow, ExecOutput) {
    let mut argv: Vec<String> = simple
        .words
        .iter()
        .filter_map(|w| expand(w, &st.vars, st.status))
        .collect();
    let assigned: Vec<(String, String)> = argv
        .drain(..argv.iter().take_while(|a| is_assignment(a)).count())
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let o = match argv.first().map(String::as_str) {
        None => {
            for (k, v) in assigned {
                env_set(&mut st.vars, &k, v, false);
            }
            out("", "", 0)
        }
        Some("exit") => {
            let code = match argv.get(1) {
                None => st.status,
                Some(n) => match n.parse::<i64>() {
                    Ok(n) => i32::try_from(n.rem_euclid(256)).unwrap_or(0),
                    Err(_) => {
                        st.stderr
                            .extend(format!("sh: exit: Illegal number: {n}\n").into_bytes());
                        2
                    }
                },
            };
            return (ShFlow::Exit(code), out("", "", code));
        }
        Some("export") => {
            for a in argv.iter().skip(1) {
                if let Some((k, v)) = a.split_once('=') {
                    env_set(&mut st.vars, k, v.to_string(), false);
                }
            }
            out("", "", 0)
        }
        Some("unset") => {
            st.vars.retain(|(k, _)| !argv.iter().skip(1).any(|a| a == k));
            out("", "", 0)
        }
        Some("cd" | ":") => out("", "", 0),
        Some(name) => {
            let name = name.to_string();
            let mut cmd_env = st.vars.clone();
            for (k, v) in &assigned {
                env_set(&mut cmd_env, k, v.clone(), false);
            }
            let call = Call {
                argv,
                stdin: cin,
                env: Some(cmd_env),
            };
            match s.run_child(call).await {
                Some(o) => o,
                None => out("", format!("sh: {name}: not found\n"), 127),
            }
        }
    };
    if let ExitStatus::Error(message) = &o.exit {
        st.stderr.extend(format!("sh: {message}\n").into_bytes());
    }
    (ShFlow::Next, o)
}

/// The outline of a script for a container's main process: parsed as above, words expanded
/// with `vars` (the container's environment) and a status of 0; the parser's error otherwise.
pub(crate) fn outline(script: &str, vars: &[(String, String)], windows: bool) -> Result<Outline, String> {
    let list = lex_sh(script).and_then(parse_sh)?;
    Ok(outline_list(&list, vars, windows))
}

fn outline_list(list: &[ShPipeline], vars: &[(String, String)], windows: bool) -> Outline {
    list.iter()
        .map(|pipeline| (pipeline.chain, outline_pipeline(pipeline, vars, windows)))
        .collect()
}

fn outline_pipeline(pipeline: &ShPipeline, vars: &[(String, String)], windows: bool) -> Statement {
    let mut commands = Vec::new();
    for cmd in &pipeline.cmds {
        let simple = match (cmd, pipeline.cmds.len(), pipeline.negate) {
            (ShCmd::Simple(simple), _, _) => simple,
            (ShCmd::Group { body, subshell, .. }, 1, false) => {
                return Statement::Group {
                    body: outline_list(body, vars, windows),
                    subshell: *subshell,
                };
            }
            (ShCmd::If { arms, otherwise, .. }, 1, false) => {
                return Statement::If {
                    arms: arms
                        .iter()
                        .map(|(cond, body)| (outline_list(cond, vars, windows), outline_list(body, vars, windows)))
                        .collect(),
                    otherwise: otherwise.as_ref().map(|body| outline_list(body, vars, windows)),
                };
            }
            _ => return Statement::Compound,
        };
        let mut words: Vec<String> = simple.words.iter().filter_map(|w| expand(w, vars, 0)).collect();
        let assignments = words.iter().take_while(|w| is_assignment(w)).count();
        if assignments == words.len() && assignments > 0 && pipeline.cmds.len() == 1 {
            return Statement::Assign;
        }
        words.drain(..assignments);
        let mut stdout = Stdout::Inherit;
        for (fd, redir) in &simple.redirs {
            if let (1, ShRedir::Out { target, append }) = (fd, redir) {
                let target = expand(target, vars, 0).unwrap_or_default();
                if !matches!(target.as_str(), "/dev/stdout" | "/dev/stderr") {
                    stdout = Stdout::to(&target, *append, windows);
                }
            }
        }
        commands.push(Command {
            words,
            complete: true,
            raw: String::new(),
            stdout,
        });
    }
    Statement::Pipeline {
        commands,
        negate: pipeline.negate,
    }
}
