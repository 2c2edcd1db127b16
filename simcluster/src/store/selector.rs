//! Kubernetes label and field selectors: parsing (query-string and `metav1.LabelSelector` forms), matching against JSON objects, and canonical display.

use std::fmt;

use serde_json::{Map, Value};

/// A selector that could not be parsed or built.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("invalid {kind} selector {selector:?}: {reason}")]
pub struct SelectorError {
    /// `"label"` or `"field"`.
    pub kind: &'static str,
    /// The offending selector text (for the object form, its JSON text).
    pub selector: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SelectorError {
    fn label(selector: &str, reason: impl Into<String>) -> Self {
        Self {
            kind: "label",
            selector: selector.to_owned(),
            reason: reason.into(),
        }
    }

    fn field(selector: &str, reason: impl Into<String>) -> Self {
        Self {
            kind: "field",
            selector: selector.to_owned(),
            reason: reason.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Name validation (k8s.io/apimachinery/pkg/util/validation)
// ---------------------------------------------------------------------------

const MAX_NAME_LEN: usize = 63;
const MAX_PREFIX_LEN: usize = crate::vocab::names::MAX_SUBDOMAIN_LEN;

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_qualified_name_part(s: &str) -> bool {
    let edge_ok = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    edge_ok(s.bytes().next())
        && edge_ok(s.bytes().next_back())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Checks a label key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if key.is_empty() {
        return Err("the key must not be empty".into());
    }
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err(format!("key {key:?}: the prefix before '/' must not be empty"));
        }
        if !crate::vocab::names::is_dns_subdomain(prefix) {
            return Err(format!(
                "key {key:?}: the prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.', at most {MAX_PREFIX_LEN} characters)"
            ));
        }
    }
    if name.is_empty() {
        return Err(format!("key {key:?}: the name part must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "key {key:?}: the name part must be at most {MAX_NAME_LEN} characters"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!(
            "key {key:?}: the name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
        ));
    }
    Ok(())
}

/// Checks a label value: empty, or at most 63 characters of the qualified-name charset.
fn validate_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_NAME_LEN {
        return Err(format!("value {value:?} must be at most {MAX_NAME_LEN} characters"));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(format!(
            "value {value:?} must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// A label requirement operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum LabelOp {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One ANDed term of a label selector. `values` is sorted and deduplicated.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

impl LabelRequirement {
    /// Validates and normalises a requirement.
    fn new(key: &str, op: LabelOp, values: Vec<String>) -> Result<Self, String> {
        validate_key(key)?;
        values.iter().try_for_each(|v| validate_value(v))?;
        let mut values = values;
        values.sort();
        values.dedup();
        let want_values = match op {
            LabelOp::Exists | LabelOp::DoesNotExist => values.is_empty(),
            LabelOp::Equals | LabelOp::NotEquals => values.len() == 1,
            LabelOp::In | LabelOp::NotIn => !values.is_empty(),
        };
        if !want_values {
            return Err(match op {
                LabelOp::Exists | LabelOp::DoesNotExist => {
                    format!("key {key:?}: values must be empty for Exists and DoesNotExist")
                }
                LabelOp::Equals | LabelOp::NotEquals => format!("key {key:?}: exactly one value is required"),
                LabelOp::In | LabelOp::NotIn => {
                    format!("key {key:?}: the values set for 'in' and 'notin' must not be empty")
                }
            });
        }
        Ok(Self {
            key: key.to_owned(),
            op,
            values,
        })
    }

    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key));
        let in_set = || {
            value
                .and_then(Value::as_str)
                .is_some_and(|v| self.values.iter().any(|x| x == v))
        };
        match self.op {
            LabelOp::Equals | LabelOp::In => in_set(),
            LabelOp::NotEquals | LabelOp::NotIn => !in_set(),
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, set) = (&self.key, self.values.join(","));
        match self.op {
            LabelOp::Equals => write!(f, "{key}={set}"),
            LabelOp::NotEquals => write!(f, "{key}!={set}"),
            LabelOp::In => write!(f, "{key} in ({set})"),
            LabelOp::NotIn => write!(f, "{key} notin ({set})"),
            LabelOp::Exists => write!(f, "{key}"),
            LabelOp::DoesNotExist => write!(f, "!{key}"),
        }
    }
}

/// A label selector: requirements that must all hold.
///
/// The default (and the empty string / empty object) selects everything; a `null`
/// `metav1.LabelSelector` selects nothing, as in Kubernetes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
    nothing: bool,
}

/// A token of the label selector query-string syntax.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Token<'a> {
    Ident(&'a str),
    Not,
    Eq,
    NotEq,
    Open,
    Close,
    Comma,
}

impl fmt::Display for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "{s:?}"),
            Token::Not => f.write_str("'!'"),
            Token::Eq => f.write_str("'='"),
            Token::NotEq => f.write_str("'!='"),
            Token::Open => f.write_str("'('"),
            Token::Close => f.write_str("')'"),
            Token::Comma => f.write_str("','"),
        }
    }
}

fn describe(tok: Option<&Token<'_>>) -> String {
    tok.map_or_else(|| "end of input".to_owned(), ToString::to_string)
}

/// Splits a label selector into tokens; identifiers are runs of anything but whitespace and `!=(),`.
fn tokenize(s: &str) -> Vec<Token<'_>> {
    let is_special = |c: char| c.is_whitespace() || matches!(c, '!' | '=' | '(' | ')' | ',');
    let mut tokens = Vec::new();
    let mut rest = s.trim_start();
    while let Some(c) = rest.chars().next() {
        let (tok, len) = match c {
            '!' if rest.starts_with("!=") => (Token::NotEq, 2),
            '!' => (Token::Not, 1),
            '=' if rest.starts_with("==") => (Token::Eq, 2),
            '=' => (Token::Eq, 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            _ => {
                let len = rest.find(is_special).unwrap_or(rest.len());
                (Token::Ident(rest.get(..len).unwrap_or(rest)), len)
            }
        };
        tokens.push(tok);
        rest = rest.get(len..).unwrap_or("").trim_start();
    }
    tokens
}

type Tokens<'a> = std::iter::Peekable<std::vec::IntoIter<Token<'a>>>;

fn parse_requirement(toks: &mut Tokens<'_>) -> Result<LabelRequirement, String> {
    match toks.next() {
        Some(Token::Not) => match toks.next() {
            Some(Token::Ident(key)) => LabelRequirement::new(key, LabelOp::DoesNotExist, vec![]),
            other => Err(format!("expected a key after '!', found {}", describe(other.as_ref()))),
        },
        Some(Token::Ident(key)) => parse_operation(key, toks),
        other => Err(format!("expected a key, found {}", describe(other.as_ref()))),
    }
}

fn parse_operation(key: &str, toks: &mut Tokens<'_>) -> Result<LabelRequirement, String> {
    let op = match toks.peek() {
        None | Some(Token::Comma) => return LabelRequirement::new(key, LabelOp::Exists, vec![]),
        Some(Token::Eq) => LabelOp::Equals,
        Some(Token::NotEq) => LabelOp::NotEquals,
        Some(Token::Ident("in")) => LabelOp::In,
        Some(Token::Ident("notin")) => LabelOp::NotIn,
        other => {
            return Err(format!(
                "expected '=', '==', '!=', 'in' or 'notin' after key {key:?}, found {}",
                describe(other)
            ));
        }
    };
    toks.next();
    let values = match op {
        LabelOp::In | LabelOp::NotIn => parse_set(key, toks)?,
        _ => vec![parse_exact_value(toks)?.to_owned()],
    };
    LabelRequirement::new(key, op, values)
}

/// The value after `=`, `==` or `!=`; a missing value is the empty string.
fn parse_exact_value<'a>(toks: &mut Tokens<'a>) -> Result<&'a str, String> {
    match toks.peek() {
        None | Some(Token::Comma) => Ok(""),
        Some(&Token::Ident(v)) => {
            toks.next();
            Ok(v)
        }
        other => Err(format!("expected a value, found {}", describe(other))),
    }
}

/// A parenthesised, comma-separated, non-empty set of values (the `(` not yet consumed).
fn parse_set(key: &str, toks: &mut Tokens<'_>) -> Result<Vec<String>, String> {
    match toks.next() {
        Some(Token::Open) => {}
        other => {
            return Err(format!(
                "expected '(' after 'in'/'notin', found {}",
                describe(other.as_ref())
            ));
        }
    }
    if toks.peek() == Some(&Token::Close) {
        return Err(format!(
            "key {key:?}: the values set for 'in' and 'notin' must not be empty"
        ));
    }
    let mut values = Vec::new();
    loop {
        let value = match toks.peek() {
            Some(&Token::Ident(v)) => {
                toks.next();
                v
            }
            _ => "",
        };
        values.push(value.to_owned());
        match toks.next() {
            Some(Token::Comma) => {}
            Some(Token::Close) => return Ok(values),
            other => {
                return Err(format!(
                    "expected ',' or ')' in a values set, found {}",
                    describe(other.as_ref())
                ));
            }
        }
    }
}

impl LabelSelector {
    /// Parses the query-string form: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x, y)`,
    /// `a` (exists), `!a` (does not exist), comma-separated, whitespace tolerant.
    /// The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut toks = tokenize(s).into_iter().peekable();
        let mut requirements = Vec::new();
        if toks.peek().is_none() {
            return Ok(Self::default());
        }
        loop {
            requirements.push(parse_requirement(&mut toks).map_err(|r| SelectorError::label(s, r))?);
            match toks.next() {
                None => break,
                Some(Token::Comma) => {}
                Some(other) => {
                    return Err(SelectorError::label(
                        s,
                        format!("expected ',' or end of input, found {other}"),
                    ));
                }
            }
        }
        Ok(Self::from_requirements(requirements))
    }

    /// Builds from a `metav1.LabelSelector` JSON object (`matchLabels` and `matchExpressions`
    /// with operators `In`, `NotIn`, `Exists`, `DoesNotExist`).
    ///
    /// `{}` selects everything and `null` selects nothing, as in Kubernetes; other shapes,
    /// unknown operators and invalid keys or values are errors.
    pub fn from_label_selector_object(v: &Value) -> Result<Self, SelectorError> {
        let err = |reason: String| SelectorError::label(&v.to_string(), reason);
        let obj = match v {
            Value::Null => {
                return Ok(Self {
                    requirements: Vec::new(),
                    nothing: true,
                });
            }
            Value::Object(obj) => obj,
            _ => return Err(err("a label selector must be an object".into())),
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, value) in labels {
                    let value = value
                        .as_str()
                        .ok_or_else(|| err(format!("matchLabels[{key:?}] must be a string")))?;
                    requirements
                        .push(LabelRequirement::new(key, LabelOp::Equals, vec![value.to_owned()]).map_err(err)?);
                }
            }
            Some(_) => return Err(err("matchLabels must be an object".into())),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, expr) in exprs.iter().enumerate() {
                    requirements.push(match_expression(expr).map_err(|r| err(format!("matchExpressions[{i}]: {r}")))?);
                }
            }
            Some(_) => return Err(err("matchExpressions must be an array".into())),
        }
        Ok(Self::from_requirements(requirements))
    }

    fn from_requirements(mut requirements: Vec<LabelRequirement>) -> Self {
        requirements.sort();
        requirements.dedup();
        Self {
            requirements,
            nothing: false,
        }
    }

    /// True when the selector has no requirements and therefore selects everything.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Matches an object's `metadata.labels` map (`None` when the object has no labels).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches a whole object by reading its `metadata.labels`.
    #[cfg(test)] // used by the tests only
    pub fn matches_object(&self, obj: &Value) -> bool {
        self.matches(
            obj.get("metadata")
                .and_then(|m| m.get("labels"))
                .and_then(Value::as_object),
        )
    }
}

/// One `matchExpressions` entry: `{key, operator, values}`.
fn match_expression(expr: &Value) -> Result<LabelRequirement, String> {
    let obj = expr.as_object().ok_or("must be an object")?;
    let key = obj.get("key").and_then(Value::as_str).ok_or("key must be a string")?;
    let operator = obj
        .get("operator")
        .and_then(Value::as_str)
        .ok_or("operator must be a string")?;
    let op = match operator {
        "In" => LabelOp::In,
        "NotIn" => LabelOp::NotIn,
        "Exists" => LabelOp::Exists,
        "DoesNotExist" => LabelOp::DoesNotExist,
        other => {
            return Err(format!(
                "unknown operator {other:?} (expected In, NotIn, Exists or DoesNotExist)"
            ));
        }
    };
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or("values must be strings"))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("values must be an array of strings".into()),
    };
    LabelRequirement::new(key, op, values)
}

impl fmt::Display for LabelSelector {
    /// The canonical query-string form, e.g. `app=web,tier in (a,b)`: requirements sorted by key,
    /// set values sorted. Like Kubernetes, a selector that selects nothing renders as the empty string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// One ANDed term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct FieldRequirement {
    field: String,
    negated: bool,
    value: String,
}

/// A field selector: `field=value` / `field!=value` terms that must all hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// Splits on commas that are not escaped by a backslash.
fn split_unescaped_commas(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                parts.push(s.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s.get(start..).unwrap_or(""));
    parts
}

/// Undoes `fields.EscapeValue`: `\\`, `\,` and `\=` are the only escapes; bare `,` and `=` are errors.
fn unescape_field_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence \"\\{e}\" in value {s:?}")),
                None => return Err(format!("value {s:?} ends with a lone backslash")),
            },
            ',' | '=' => return Err(format!("unescaped {c:?} in value {s:?}")),
            _ => out.push(c),
        }
    }
    Ok(out)
}

/// The inverse of [`unescape_field_value`] (Kubernetes' `fields.EscapeValue`).
fn escape_field_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A dotted path of non-empty segments made of alphanumerics, `-` and `_`.
fn validate_field_name(field: &str) -> Result<(), String> {
    if field.is_empty() {
        return Err("the field name must not be empty".into());
    }
    let segment_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    if field.split('.').all(segment_ok) {
        Ok(())
    } else {
        Err(format!(
            "invalid field name {field:?}: expected a dotted path such as metadata.name"
        ))
    }
}

/// Parses one `field op value` term (operators tried in the order `!=`, `==`, `=`).
fn parse_field_term(term: &str) -> Result<FieldRequirement, String> {
    let (field, negated, value) = term
        .char_indices()
        .find_map(|(i, _)| {
            let (lhs, rest) = (term.get(..i)?, term.get(i..)?);
            [("!=", true), ("==", false), ("=", false)]
                .into_iter()
                .find_map(|(op, neg)| rest.strip_prefix(op).map(|rhs| (lhs, neg, rhs)))
        })
        .ok_or_else(|| format!("{term:?} is not of the form field=value, field==value or field!=value"))?;
    let field = field.trim();
    validate_field_name(field)?;
    Ok(FieldRequirement {
        field: field.to_owned(),
        negated,
        value: unescape_field_value(value.trim())?,
    })
}

/// Looks up a dotted path; missing values and `null` read as `""`, scalars by their string form.
fn field_value(obj: &Value, path: &str) -> String {
    match path.split('.').try_fold(obj, |v, seg| v.get(seg)) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

impl FieldSelector {
    /// Parses `f=v`, `f==v`, `f!=v` terms, comma separated. Values may escape `\,`, `\=` and `\\`
    /// (as Kubernetes' `fields.EscapeValue` does). The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut requirements = split_unescaped_commas(s)
            .into_iter()
            .map(str::trim)
            .filter(|term| !term.is_empty())
            .map(|term| parse_field_term(term).map_err(|r| SelectorError::field(s, r)))
            .collect::<Result<Vec<_>, _>>()?;
        requirements.sort();
        requirements.dedup();
        Ok(Self { requirements })
    }

    /// True when the selector has no terms and therefore selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Matches from the fields' values alone, as [`matches`](Self::matches) reads them from
    /// the object; None when `value_of` does not know one of the fields.
    pub fn matches_fields<'v>(&self, value_of: impl Fn(&str) -> Option<&'v str>) -> Option<bool> {
        self.requirements.iter().try_fold(true, |all, r| {
            Some(all && (value_of(&r.field)? == r.value) != r.negated)
        })
    }

    /// The field names used (in canonical order, possibly repeated), so the caller can reject
    /// fields a kind does not support.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.requirements.iter().map(|r| r.field.as_str())
    }

    #[cfg(test)] // used by the tests only
    /// `Some(v)` when the selector contains the equality `field=v` (useful for index shortcuts).
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| !r.negated && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// Matches an object: each field is a dotted path (e.g. `metadata.name`, `status.phase`)
    /// looked up in the JSON; a missing value or `null` counts as the empty string, and
    /// booleans and numbers compare by their string form.
    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements
            .iter()
            .all(|r| (field_value(obj, &r.field) == r.value) != r.negated)
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form: sorted terms, `=`/`!=` only, values escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            let sep = if i > 0 { "," } else { "" };
            let op = if r.negated { "!=" } else { "=" };
            write!(f, "{sep}{}{op}{}", r.field, escape_field_value(&r.value))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[rstest]
    #[case::equals("app=web", json!({"app": "web"}), true)]
    #[case::equals_other_value("app=web", json!({"app": "db"}), false)]
    #[case::equals_absent("app=web", json!({}), false)]
    #[case::double_equals("app==web", json!({"app": "web"}), true)]
    #[case::not_equals("app!=web", json!({"app": "db"}), true)]
    #[case::not_equals_same("app!=web", json!({"app": "web"}), false)]
    #[case::not_equals_absent("app!=web", json!({}), true)]
    #[case::in_set("tier in (a,b)", json!({"tier": "b"}), true)]
    #[case::in_set_miss("tier in (a,b)", json!({"tier": "c"}), false)]
    #[case::in_set_absent("tier in (a,b)", json!({}), false)]
    #[case::notin("tier notin (a, b)", json!({"tier": "c"}), true)]
    #[case::notin_hit("tier notin (a, b)", json!({"tier": "a"}), false)]
    #[case::notin_absent("tier notin (a, b)", json!({}), true)]
    #[case::exists("app", json!({"app": ""}), true)]
    #[case::exists_absent("app", json!({"x": "y"}), false)]
    #[case::not_exists("!app", json!({"x": "y"}), true)]
    #[case::not_exists_present("!app", json!({"app": "web"}), false)]
    #[case::empty_value("app=", json!({"app": ""}), true)]
    #[case::empty_value_in_set("app in (,x)", json!({"app": ""}), true)]
    #[case::conjunction("app=web,tier!=db", json!({"app": "web", "tier": "fe"}), true)]
    #[case::conjunction_fails("app=web,tier!=db", json!({"app": "web", "tier": "db"}), false)]
    #[case::whitespace("  app = web ,  tier  in(a ,b) , ! gone ", json!({"app": "web", "tier": "a"}), true)]
    #[case::prefixed_key("example.com/role=x", json!({"example.com/role": "x"}), true)]
    #[case::everything("", json!({}), true)]
    #[case::blank("   ", json!({"a": "b"}), true)]
    fn label_selector_matches(#[case] sel: &str, #[case] l: Value, #[case] expected: bool) {
        let parsed = LabelSelector::parse(sel).expect("valid selector");
        assert_eq!(parsed.matches(Some(&labels(l))), expected, "{sel}");
    }

    #[rstest]
    #[case("app!=web", true)]
    #[case("tier notin (a)", true)]
    #[case("!app", true)]
    #[case("app", false)]
    #[case("app=web", false)]
    #[case("", true)]
    fn label_selector_without_labels(#[case] sel: &str, #[case] expected: bool) {
        let parsed = LabelSelector::parse(sel).expect("valid selector");
        assert_eq!(parsed.matches(None), expected);
        assert_eq!(parsed.matches_object(&json!({"metadata": {"name": "x"}})), expected);
    }

    #[test]
    fn matches_object_reads_metadata_labels() {
        let sel = LabelSelector::parse("app=web").expect("valid selector");
        assert!(sel.matches_object(&json!({"metadata": {"labels": {"app": "web"}}})));
        assert!(!sel.matches_object(&json!({"metadata": {"labels": {"app": "db"}}})));
        assert!(!sel.matches_object(&json!("not an object")));
    }

    #[rstest]
    #[case::unbalanced_open("a in (x,y", "expected ',' or ')'")]
    #[case::unbalanced_close("a in x,y)", "expected '('")]
    #[case::extra_close("a in (x))", "expected ',' or end of input")]
    #[case::empty_set("a in ()", "must not be empty")]
    #[case::empty_set_spaces("a notin ( )", "must not be empty")]
    #[case::empty_key("=b", "expected a key")]
    #[case::lone_bang("!", "expected a key after '!'")]
    #[case::bang_with_op("!a=b", "expected ',' or end of input")]
    #[case::garbage_chain("a=b=c", "expected ',' or end of input")]
    #[case::bad_key_chars("a$b=c", "name part must consist")]
    #[case::bad_key_edge("-a=b", "name part must consist")]
    #[case::long_key(&format!("{}=b", "k".repeat(64)), "at most 63")]
    #[case::bad_prefix("Example.com/a=b", "prefix must be a DNS subdomain")]
    #[case::empty_prefix("/a=b", "prefix before '/' must not be empty")]
    #[case::empty_name("example.com/=b", "name part must not be empty")]
    #[case::two_slashes("a/b/c=d", "name part must consist")]
    #[case::bad_value("a=b$", "value \"b$\"")]
    #[case::long_value(&format!("a={}", "v".repeat(64)), "at most 63")]
    #[case::trailing_comma("a=b,", "expected a key")]
    #[case::leading_comma(",a", "expected a key")]
    #[case::missing_operator("a b", "expected '=', '==', '!=', 'in' or 'notin'")]
    #[case::set_after_equals("a=(b)", "expected a value")]
    fn label_selector_rejects(#[case] sel: &str, #[case] reason: &str) {
        let err = LabelSelector::parse(sel).expect_err("must be rejected");
        assert_eq!(err.kind, "label");
        assert_eq!(err.selector, sel);
        assert!(err.reason.contains(reason), "{sel}: {}", err.reason);
    }

    #[rstest]
    #[case("app=web", "app=web")]
    #[case("app==web", "app=web")]
    #[case(" tier in ( b , a, b ) , app != x", "app!=x,tier in (a,b)")]
    #[case("!b, a", "a,!b")]
    #[case("x notin (z,y)", "x notin (y,z)")]
    #[case("a=", "a=")]
    #[case("", "")]
    fn label_selector_display_round_trips(#[case] input: &str, #[case] canonical: &str) {
        let parsed = LabelSelector::parse(input).expect("valid selector");
        assert_eq!(parsed.to_string(), canonical);
        assert_eq!(LabelSelector::parse(canonical).expect("valid selector"), parsed);
    }

    #[rstest]
    #[case::empty_object(json!({}), json!({"x": "y"}), true)]
    #[case::match_labels(json!({"matchLabels": {"app": "web"}}), json!({"app": "web", "x": "y"}), true)]
    #[case::match_labels_miss(json!({"matchLabels": {"app": "web"}}), json!({"app": "db"}), false)]
    #[case::expr_in(json!({"matchExpressions": [{"key": "t", "operator": "In", "values": ["a", "b"]}]}), json!({"t": "a"}), true)]
    #[case::expr_notin(json!({"matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["a"]}]}), json!({}), true)]
    #[case::expr_exists(json!({"matchExpressions": [{"key": "t", "operator": "Exists"}]}), json!({"t": ""}), true)]
    #[case::expr_does_not_exist(json!({"matchExpressions": [{"key": "t", "operator": "DoesNotExist", "values": []}]}), json!({"t": ""}), false)]
    #[case::combined(
        json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["db"]}]}),
        json!({"app": "web", "t": "db"}),
        false
    )]
    #[case::null_fields(json!({"matchLabels": null, "matchExpressions": null}), json!({}), true)]
    #[case::null_selects_nothing(json!(null), json!({}), false)]
    fn label_selector_object_form(#[case] sel: Value, #[case] l: Value, #[case] expected: bool) {
        let parsed = LabelSelector::from_label_selector_object(&sel).expect("valid selector");
        assert_eq!(parsed.matches(Some(&labels(l))), expected);
    }

    #[test]
    fn label_selector_object_form_displays_like_query_form() {
        let obj = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "t", "operator": "In", "values": ["b", "a"]}]});
        let parsed = LabelSelector::from_label_selector_object(&obj).expect("valid selector");
        assert_eq!(parsed.to_string(), "app=web,t in (a,b)");
        assert_eq!(
            parsed,
            LabelSelector::parse("t in (b,a), app=web").expect("valid selector")
        );
        assert!(
            LabelSelector::from_label_selector_object(&json!({}))
                .expect("valid selector")
                .is_empty()
        );
        assert!(
            !LabelSelector::from_label_selector_object(&json!(null))
                .expect("valid selector")
                .is_empty()
        );
    }

    #[rstest]
    #[case::not_object(json!("app=web"), "must be an object")]
    #[case::labels_not_object(json!({"matchLabels": ["a"]}), "matchLabels must be an object")]
    #[case::label_value_not_string(json!({"matchLabels": {"a": 1}}), "must be a string")]
    #[case::bad_label_key(json!({"matchLabels": {"a b": "c"}}), "name part must consist")]
    #[case::exprs_not_array(json!({"matchExpressions": {}}), "must be an array")]
    #[case::unknown_operator(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}), "unknown operator")]
    #[case::missing_key(json!({"matchExpressions": [{"operator": "Exists"}]}), "key must be a string")]
    #[case::in_without_values(json!({"matchExpressions": [{"key": "a", "operator": "In"}]}), "must not be empty")]
    #[case::exists_with_values(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}), "must be empty")]
    #[case::values_not_strings(json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}), "values must be strings")]
    fn label_selector_object_form_rejects(#[case] sel: Value, #[case] reason: &str) {
        let err = LabelSelector::from_label_selector_object(&sel).expect_err("must be rejected");
        assert_eq!(err.kind, "label");
        assert!(err.reason.contains(reason), "{}", err.reason);
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web-1", "namespace": "default"},
            "spec": {"nodeName": "node-a", "hostNetwork": false, "priority": 10},
            "status": {"phase": "Running"},
            "involvedObject": {"uid": "u-1"},
            "type": "Normal",
            "odd": "a,b=c\\d"
        })
    }

    #[rstest]
    #[case::name("metadata.name=web-1", true)]
    #[case::double_equals("metadata.name==web-1", true)]
    #[case::name_miss("metadata.name=web-2", false)]
    #[case::phase_not_equal("status.phase!=Running", false)]
    #[case::phase_not_equal_other("status.phase!=Succeeded", true)]
    #[case::nested("spec.nodeName=node-a,metadata.namespace=default", true)]
    #[case::deep_nested("involvedObject.uid=u-1", true)]
    #[case::top_level("type=Normal", true)]
    #[case::missing_is_empty("spec.missing=", true)]
    #[case::missing_not_empty("spec.missing!=", false)]
    #[case::missing_vs_value("status.podIP=1.2.3.4", false)]
    #[case::bool_as_string("spec.hostNetwork=false", true)]
    #[case::number_as_string("spec.priority=10", true)]
    #[case::escaped_value(r"odd=a\,b\=c\\d", true)]
    #[case::whitespace(" metadata.name = web-1 , type=Normal ", true)]
    #[case::everything("", true)]
    fn field_selector_matches(#[case] sel: &str, #[case] expected: bool) {
        assert_eq!(
            FieldSelector::parse(sel).expect("valid selector").matches(&pod()),
            expected,
            "{sel}"
        );
    }

    #[rstest]
    #[case::garbage("a=b=c", "unescaped '='")]
    #[case::unescaped_comma_is_split("a=b,c", "not of the form")]
    #[case::no_operator("metadata.name", "not of the form")]
    #[case::lone_bang("!", "not of the form")]
    #[case::empty_field("=x", "field name must not be empty")]
    #[case::bad_field("meta data=x", "invalid field name")]
    #[case::empty_segment("metadata..name=x", "invalid field name")]
    #[case::bad_escape(r"a=b\x", "invalid escape sequence")]
    #[case::trailing_backslash(r"a=b\", "lone backslash")]
    fn field_selector_rejects(#[case] sel: &str, #[case] reason: &str) {
        let err = FieldSelector::parse(sel).expect_err("must be rejected");
        assert_eq!(err.kind, "field");
        assert!(err.reason.contains(reason), "{sel}: {}", err.reason);
    }

    #[rstest]
    #[case("metadata.name==x", "metadata.name=x")]
    #[case("status.phase!=Running,metadata.name=a", "metadata.name=a,status.phase!=Running")]
    #[case(r"a=x\,y\=z\\", r"a=x\,y\=z\\")]
    #[case("", "")]
    fn field_selector_display_round_trips(#[case] input: &str, #[case] canonical: &str) {
        let parsed = FieldSelector::parse(input).expect("valid selector");
        assert_eq!(parsed.to_string(), canonical);
        assert_eq!(FieldSelector::parse(canonical).expect("valid selector"), parsed);
    }

    #[test]
    fn field_selector_fields_and_exact() {
        let sel = FieldSelector::parse(r"spec.nodeName=n\,1,status.phase!=Failed").expect("valid selector");
        assert_eq!(sel.fields().collect::<Vec<_>>(), ["spec.nodeName", "status.phase"]);
        assert_eq!(sel.exact("spec.nodeName"), Some("n,1"));
        assert_eq!(sel.exact("status.phase"), None);
        assert_eq!(sel.exact("metadata.name"), None);
        assert!(!sel.is_empty());
        assert!(FieldSelector::parse("").expect("valid selector").is_empty());
    }
}
