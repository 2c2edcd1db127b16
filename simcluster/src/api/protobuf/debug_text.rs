//! The `Debug` rendering of a decoded `k8s-pb` message, read back as a tree. `k8s-pb` (prost)
//! offers no serde and no reflection; the names of a message's fields are only in its derived
//! `Debug` impl (`Deployment { metadata: Some(ObjectMeta { name: Some("d1"), .. }), .. }`), so
//! the transcoder reads that rendering. Its grammar is the one `#[derive(prost::Message)]`
//! emits: `debug_struct` for messages, `Option` for optional fields, `Vec` for repeated ones,
//! a map for map fields, `Vec<u8>` for bytes, and Rust's string escapes
//! (<https://doc.rust-lang.org/std/primitive.char.html#method.escape_debug>).

/// One value of the rendering.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A message: its type name and fields in declaration order.
    Message(String, Vec<(String, Node)>),
    /// `Some(x)`.
    Some(Box<Node>),
    /// `None`.
    None,
    /// A repeated field (or the bytes of a `bytes` field).
    List(Vec<Node>),
    /// A map field.
    Map(Vec<(Node, Node)>),
    Str(String),
    /// A number, as written.
    Number(String),
    Bool(bool),
}

/// The rendering did not follow the grammar above (a `k8s-pb`/prost upgrade changed it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected message rendering at byte {at}: {what}")]
pub struct RenderingError {
    pub at: usize,
    pub what: &'static str,
}

/// Parses one rendered value.
pub fn parse(text: &str) -> Result<Node, RenderingError> {
    let mut p = Parser { text, at: 0 };
    let node = p.value()?;
    p.skip_ws();
    if p.at != text.len() {
        return Err(p.error("trailing text"));
    }
    Ok(node)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &'static str) -> RenderingError {
        RenderingError { at: self.at, what }
    }

    fn rest(&self) -> &str {
        self.text.get(self.at..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn skip_ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.at = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.at += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str, what: &'static str) -> Result<(), RenderingError> {
        if self.eat(token) { Ok(()) } else { Err(self.error(what)) }
    }

    fn ident(&mut self) -> &str {
        self.skip_ws();
        let start = self.at;
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'))
            .unwrap_or(self.rest().len());
        self.at += len;
        &self.text[start..self.at]
    }

    /// `items` separated by commas up to `close` (a trailing comma is allowed).
    fn sequence<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, RenderingError>,
    ) -> Result<Vec<T>, RenderingError> {
        let mut out = Vec::new();
        loop {
            if self.eat(close) {
                return Ok(out);
            }
            out.push(item(self)?);
            if !self.eat(",") {
                self.expect(close, "expected a comma or the closing bracket")?;
                return Ok(out);
            }
        }
    }

    fn value(&mut self) -> Result<Node, RenderingError> {
        self.skip_ws();
        match self.peek() {
            Some('"') => self.string().map(Node::Str),
            Some('[') => {
                self.at += 1;
                self.sequence("]", Self::value).map(Node::List)
            }
            Some('{') => {
                self.at += 1;
                self.sequence("}", |p| {
                    let key = p.value()?;
                    p.expect(":", "expected a colon after a map key")?;
                    Ok((key, p.value()?))
                })
                .map(Node::Map)
            }
            Some(c) if c == '-' || c.is_ascii_digit() => Ok(self.number()),
            Some(c) if c.is_ascii_alphabetic() => self.named(),
            _ => Err(self.error("expected a value")),
        }
    }

    fn number(&mut self) -> Node {
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '+' | '.')))
            .unwrap_or(self.rest().len());
        let start = self.at;
        self.at += len;
        Node::Number(self.text[start..self.at].to_string())
    }

    fn named(&mut self) -> Result<Node, RenderingError> {
        let name = self.ident().to_string();
        match name.as_str() {
            "None" => return Ok(Node::None),
            "true" => return Ok(Node::Bool(true)),
            "false" => return Ok(Node::Bool(false)),
            "NaN" | "inf" => return Ok(Node::Number(name)),
            "Some" => {
                self.expect("(", "expected `(` after Some")?;
                let inner = self.value()?;
                self.expect(")", "expected `)` closing Some")?;
                return Ok(Node::Some(Box::new(inner)));
            }
            _ => {}
        }
        if !self.eat("{") {
            // A message without fields renders as its bare name.
            return Ok(Node::Message(name, Vec::new()));
        }
        let fields = self.sequence("}", |p| {
            let field = p.ident().trim_start_matches("r#").to_string();
            if field.is_empty() {
                return Err(p.error("expected a field name"));
            }
            p.expect(":", "expected a colon after a field name")?;
            Ok((field, p.value()?))
        })?;
        Ok(Node::Message(name, fields))
    }

    fn string(&mut self) -> Result<String, RenderingError> {
        self.at += 1; // the opening quote
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let (_, e) = chars.next().ok_or(self.error("unterminated escape"))?;
                    match e {
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        '0' => out.push('\0'),
                        '\\' | '"' | '\'' => out.push(e),
                        'u' => {
                            let mut hex = String::new();
                            for (_, h) in chars.by_ref() {
                                match h {
                                    '{' => {}
                                    '}' => break,
                                    _ => hex.push(h),
                                }
                            }
                            let ch = u32::from_str_radix(&hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .ok_or(self.error("bad unicode escape"))?;
                            out.push(ch);
                        }
                        _ => return Err(self.error("unknown escape")),
                    }
                }
                _ => out.push(c),
            }
        }
        Err(self.error("unterminated string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_messages_maps_and_escapes() -> Result<(), RenderingError> {
        let text = r#"Secret { metadata: Some(ObjectMeta { name: Some("a\"b\n\u{1b}"), labels: {"k": "v"} }), data: {"x": [104, 105]}, immutable: None, empty: Empty, n: Some(-3) }"#;
        let node = parse(text)?;
        let Node::Message(name, fields) = node else {
            return Err(RenderingError {
                at: 0,
                what: "not a message",
            });
        };
        assert_eq!(name, "Secret");
        assert_eq!(fields.len(), 5);
        assert_eq!(fields[2], ("immutable".to_string(), Node::None));
        assert_eq!(fields[3], ("empty".to_string(), Node::Message("Empty".into(), vec![])));
        assert_eq!(
            fields[4],
            ("n".to_string(), Node::Some(Box::new(Node::Number("-3".into()))))
        );
        let Node::Some(meta) = &fields[0].1 else {
            return Err(RenderingError { at: 0, what: "no meta" });
        };
        let Node::Message(_, meta_fields) = meta.as_ref() else {
            return Err(RenderingError {
                at: 0,
                what: "meta not a message",
            });
        };
        assert_eq!(meta_fields[0].1, Node::Some(Box::new(Node::Str("a\"b\n\u{1b}".into()))));
        Ok(())
    }

    #[test]
    fn rejects_broken_renderings() {
        assert!(parse("Pod { name: ").is_err());
        assert!(parse("\"open").is_err());
        assert!(parse("Pod { } extra").is_err());
    }
}
