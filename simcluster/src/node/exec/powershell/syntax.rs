//! PowerShell syntax: the tokenizer and the parser of statements, pipelines and expressions.

use std::sync::Arc;

use super::{V, s};

// ---------------------------------------------------------------------------------------------
// Syntax
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
pub(super) struct Block {
    pub(super) stmts: Vec<Stmt>,
    pub(super) text: String,
}

#[derive(Debug)]
pub(super) enum Stmt {
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
pub(super) struct Pipeline {
    pub(super) elements: Vec<Element>,
}

#[derive(Debug)]
pub(super) struct Element {
    pub(super) what: What,
    /// `2>$null`, `*>$null`: drop errors; `>$null`: drop output; `2>&1`: errors as output.
    pub(super) drop_errors: bool,
    pub(super) drop_output: bool,
    pub(super) merge_errors: bool,
    /// `> file`, `>> file`: the file standard output goes to (and whether it appends).
    pub(super) to_file: Option<(String, bool)>,
    /// The element's source text (for error records).
    pub(super) text: String,
}

#[derive(Debug)]
pub(super) enum What {
    Expr(Expr),
    Command { name: Expr, args: Vec<Arg> },
}

#[derive(Debug)]
pub(super) enum Arg {
    /// `-Name` or `-Name:value`.
    Param(String, Option<Expr>),
    Value(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
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
pub(super) enum Part {
    Lit(String),
    Var(String),
    Sub(Vec<Stmt>),
}

#[derive(Debug)]
pub(super) enum Expr {
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
    /// `[type]::Member` and `[type]::Method(args)` (the type lower-cased as written).
    Static(String, String, Option<Vec<Expr>>),
}

/// A parse error: what was unexpected, and where.
#[derive(Debug)]
pub(super) struct ParseError {
    pub(super) message: String,
    pub(super) at: usize,
}

pub(super) struct Parser {
    pub(super) c: Vec<char>,
    pub(super) i: usize,
}

pub(super) fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Characters that end a bare command argument.
pub(super) fn arg_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, '|' | ';' | ')' | '}' | ',' | '\n')
}

impl Parser {
    pub(super) fn new(text: &str) -> Self {
        Self {
            c: text.chars().collect(),
            i: 0,
        }
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.c.get(self.i).copied()
    }

    pub(super) fn at(&self, k: usize) -> Option<char> {
        self.c.get(self.i + k).copied()
    }

    pub(super) fn err<T>(&self, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError {
            message: message.into(),
            at: self.i,
        })
    }

    pub(super) fn text(&self, from: usize) -> String {
        self.c.get(from..self.i).map(|c| c.iter().collect()).unwrap_or_default()
    }

    /// Spaces, tabs, comments and backtick line continuations.
    pub(super) fn ws(&mut self) {
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
    pub(super) fn ws_nl(&mut self) {
        loop {
            self.ws();
            match self.peek() {
                Some('\n' | '\r') => self.i += 1,
                _ => break,
            }
        }
    }

    /// A keyword (case-insensitive) at the current position, not followed by a word character.
    pub(super) fn keyword(&self, word: &str) -> bool {
        let n = word.chars().count();
        let here: String = self.c.iter().skip(self.i).take(n).collect();
        here.eq_ignore_ascii_case(word) && !self.at(n).is_some_and(word_char)
    }

    pub(super) fn eat(&mut self, c: char) -> Result<(), ParseError> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("Missing '{c}'."))
        }
    }

    /// Statements up to the end or the closing `until`.
    pub(super) fn statements(&mut self, until: Option<char>) -> Result<Vec<Stmt>, ParseError> {
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

    pub(super) fn block(&mut self) -> Result<Vec<Stmt>, ParseError> {
        self.ws_nl();
        self.eat('{')?;
        let stmts = self.statements(Some('}'))?;
        self.eat('}')?;
        Ok(stmts)
    }

    pub(super) fn condition(&mut self) -> Result<Pipeline, ParseError> {
        self.ws_nl();
        self.eat('(')?;
        self.ws_nl();
        let p = self.pipeline()?;
        self.ws_nl();
        self.eat(')')?;
        Ok(p)
    }

    pub(super) fn statement(&mut self) -> Result<Stmt, ParseError> {
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
    pub(super) fn name(&mut self) -> String {
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

    pub(super) fn pipeline(&mut self) -> Result<Pipeline, ParseError> {
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

    pub(super) fn starts_expression(&self) -> bool {
        match self.peek() {
            Some('$' | '\'' | '"' | '(' | '@' | '[' | '!' | '{' | '0'..='9') => true,
            Some('-') => self.at(1).is_some_and(|c| c.is_ascii_digit() || c.is_alphabetic()),
            _ => false,
        }
    }

    pub(super) fn element(&mut self) -> Result<Element, ParseError> {
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
            to_file: None,
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
    pub(super) fn redirection(&mut self, e: &mut Element) -> Result<bool, ParseError> {
        let (stream, skip) = match (self.peek(), self.at(1)) {
            (Some(d @ ('1'..='6' | '*')), Some('>')) => (Some(d), 2),
            (Some('>'), _) => (None, 1),
            _ => return Ok(false),
        };
        self.i += skip;
        let append = self.peek() == Some('>');
        if append {
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
        let target = self.text(start);
        match stream {
            Some('2') => e.drop_errors = true,
            Some('*') => {
                e.drop_errors = true;
                e.drop_output = true;
            }
            _ => {
                e.drop_output = true;
                if !target.eq_ignore_ascii_case("$null") {
                    e.to_file = Some((target.trim_matches(['"', '\'']).to_string(), append));
                }
            }
        }
        Ok(true)
    }

    /// A command argument: an expression (`$x`, `'…'`, `(…)`, …) or a bare word.
    pub(super) fn argument(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn argument_item(&mut self) -> Result<Expr, ParseError> {
        if matches!(self.peek(), Some('$' | '\'' | '"' | '(' | '@' | '{')) {
            return self.postfix();
        }
        let start = self.i;
        while self.peek().is_some_and(|c| !arg_end(c)) {
            self.i += 1;
        }
        Ok(Expr::Const(s(self.text(start))))
    }

    pub(super) fn expression(&mut self) -> Result<Expr, ParseError> {
        self.logical()
    }

    /// `-and`, `-or`, `-xor` (lowest, left to right).
    pub(super) fn logical(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn comparison_op(&self) -> Option<(usize, Op, bool)> {
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

    pub(super) fn comparison(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn additive(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn multiplicative(&mut self) -> Result<Expr, ParseError> {
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
    pub(super) fn list(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn unary(&mut self) -> Result<Expr, ParseError> {
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
                    self.i += 2;
                    let from = self.i;
                    while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        self.i += 1;
                    }
                    let member = self.text(from);
                    if member.is_empty() {
                        self.i = save;
                        return self.err(format!("Unable to find type [{ty}]."));
                    }
                    let args = if self.peek() == Some('(') {
                        Some(self.call_args()?)
                    } else {
                        None
                    };
                    let e = Expr::Static(ty.to_ascii_lowercase(), member, args);
                    return self.postfix_tail(e);
                }
                self.ws();
                Ok(Expr::Cast(ty.to_ascii_lowercase(), Box::new(self.unary()?)))
            }
            _ => self.postfix(),
        }
    }

    pub(super) fn postfix(&mut self) -> Result<Expr, ParseError> {
        let e = self.primary()?;
        self.postfix_tail(e)
    }

    /// A method call's `(args…)`, from its opening parenthesis.
    pub(super) fn call_args(&mut self) -> Result<Vec<Expr>, ParseError> {
        self.eat('(')?;
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
        Ok(args)
    }

    /// Member access, method calls and indexing after `e`.
    pub(super) fn postfix_tail(&mut self, mut e: Expr) -> Result<Expr, ParseError> {
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
                        let args = self.call_args()?;
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
    pub(super) fn unary_chain(&mut self) -> Result<Expr, ParseError> {
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

    pub(super) fn primary(&mut self) -> Result<Expr, ParseError> {
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
pub(super) fn number(word: &str) -> Option<V> {
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
