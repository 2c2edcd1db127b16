//! From a decoded `k8s-pb` message (read back from its `Debug` rendering) to the JSON object
//! the JSON path stores, led by the kind's OpenAPI schema (generated from `k8s-openapi`): the
//! schema gives each field its JSON name (`host_ipc` is `hostIPC`) and tells bytes (base64 in
//! JSON) from lists of numbers. The apimachinery types that have their own JSON form follow
//! their upstream marshallers (`k8s.io/apimachinery`: `util/intstr`, `api/resource`,
//! `apis/meta/v1/time.go`, `micro_time.go`, `duration.go`, `runtime/types.go`).
//!
//! Go's generated marshallers write every non-pointer field, so a zero string arrives for each
//! unset one (`generateName: ""`, `imagePullPolicy: ""`). Go treats an empty non-pointer string
//! as unset (defaulting fills it), so an empty string is dropped unless the schema requires the
//! field; zero numbers and `false` are kept, since for pointer fields (`replicas: 0`,
//! `automountServiceAccountToken: false`) they mean something.

use base64::Engine as _;
use chrono::{DateTime, SecondsFormat};
use serde_json::{Map, Value, json};

use super::debug_text::Node;
use crate::api::openapi;

/// The message could not be turned into JSON.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TranscodeError(pub String);

/// The JSON of `node`, a message of the kind whose schema is `schema`.
pub fn to_json(node: &Node, schema: &'static Value) -> Result<Value, TranscodeError> {
    Ok(value(node, schema, 0)?.unwrap_or(Value::Null))
}

/// Field names compared as prost writes them (snake case) against the JSON names.
fn normalized(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_bytes(schema: &Value) -> bool {
    schema.get("format").and_then(Value::as_str) == Some("byte")
}

fn empty_schema() -> &'static Value {
    static EMPTY: Value = Value::Null;
    &EMPTY
}

/// The JSON of one value; None when it is absent.
fn value(node: &Node, schema: &'static Value, depth: usize) -> Result<Option<Value>, TranscodeError> {
    if depth > 100 {
        return Err(TranscodeError("the message nests too deeply".into()));
    }
    let schema = openapi::resolved(schema);
    Ok(match node {
        Node::None => None,
        Node::Some(inner) => value(inner, schema, depth + 1)?,
        Node::Str(s) => Some(json!(s)),
        Node::Bool(b) => Some(json!(b)),
        Node::Number(n) => Some(number(n)?),
        Node::List(items) if is_bytes(schema) => Some(json!(base64_of(items)?)),
        Node::List(items) if items.is_empty() => None,
        Node::List(items) => {
            let item_schema = schema.get("items").unwrap_or(empty_schema());
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                out.push(value(item, item_schema, depth + 1)?.unwrap_or(Value::Null));
            }
            Some(Value::Array(out))
        }
        Node::Map(entries) if entries.is_empty() => None,
        Node::Map(entries) => {
            let value_schema = schema.get("additionalProperties").unwrap_or(empty_schema());
            let mut out = Map::new();
            for (k, v) in entries {
                let Node::Str(key) = k else {
                    return Err(TranscodeError("a map key is not a string".into()));
                };
                let v = match v {
                    Node::List(bytes) if is_bytes(openapi::resolved(value_schema)) => json!(base64_of(bytes)?),
                    _ => value(v, value_schema, depth + 1)?.unwrap_or(Value::Null),
                };
                out.insert(key.clone(), v);
            }
            Some(Value::Object(out))
        }
        Node::Message(name, fields) => message(name, fields, schema, depth)?,
    })
}

fn number(text: &str) -> Result<Value, TranscodeError> {
    if let Ok(i) = text.parse::<i64>() {
        return Ok(json!(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Ok(json!(u));
    }
    text.parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| TranscodeError(format!("{text} is not a JSON number")))
}

fn bytes(items: &[Node]) -> Result<Vec<u8>, TranscodeError> {
    items
        .iter()
        .map(|n| match n {
            Node::Number(t) => t
                .parse::<u8>()
                .map_err(|_| TranscodeError(format!("{t} is not a byte"))),
            _ => Err(TranscodeError("a bytes field holds a non-number".into())),
        })
        .collect()
}

fn base64_of(items: &[Node]) -> Result<String, TranscodeError> {
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes(items)?))
}

/// `node` without its `Some`.
fn unwrapped(node: &Node) -> Option<&Node> {
    match node {
        Node::Some(inner) => Some(inner),
        Node::None => None,
        other => Some(other),
    }
}

/// The field `name` of a message, unwrapped from its Option.
fn field<'a>(fields: &'a [(String, Node)], name: &str) -> Option<&'a Node> {
    let node = fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)?;
    match node {
        Node::Some(inner) => Some(inner),
        Node::None => None,
        other => Some(other),
    }
}

fn int_field(fields: &[(String, Node)], name: &str) -> i64 {
    match field(fields, name) {
        Some(Node::Number(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

fn str_field(fields: &[(String, Node)], name: &str) -> Option<String> {
    match field(fields, name) {
        Some(Node::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Raw JSON bytes (`runtime.RawExtension`, `FieldsV1`); bytes that are not JSON stay base64.
fn raw_json(fields: &[(String, Node)]) -> Result<Option<Value>, TranscodeError> {
    let Some(Node::List(items)) = field(fields, "raw") else {
        return Ok(None);
    };
    let raw = bytes(items)?;
    Ok(Some(serde_json::from_slice(&raw).unwrap_or_else(|_| {
        json!(base64::engine::general_purpose::STANDARD.encode(&raw))
    })))
}

/// Go's `time.Duration.String()` for whole hours, minutes, seconds and fractions.
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let (h, m) = (n / 3_600_000_000_000, (n / 60_000_000_000) % 60);
    let secs = (n % 60_000_000_000) as f64 / 1e9;
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{secs}s"));
    out
}

fn message(
    name: &str,
    fields: &[(String, Node)],
    schema: &'static Value,
    depth: usize,
) -> Result<Option<Value>, TranscodeError> {
    match name {
        // intstr.IntOrString: type 0 is an int, 1 a string.
        "IntOrString" => {
            return Ok(Some(if int_field(fields, "type") == 1 {
                json!(str_field(fields, "str_val").unwrap_or_default())
            } else {
                json!(int_field(fields, "int_val"))
            }));
        }
        "Quantity" | "QuantityValue" => return Ok(str_field(fields, "string").map(Value::String)),
        // metav1.Time marshals a zero time as an empty message; JSON has null (dropped here).
        "Time" | "MicroTime" => {
            let Some(Node::Number(_)) = field(fields, "seconds") else {
                return Ok(None);
            };
            let nanos = u32::try_from(int_field(fields, "nanos")).unwrap_or(0);
            let t = DateTime::from_timestamp(int_field(fields, "seconds"), nanos)
                .ok_or_else(|| TranscodeError("a timestamp is out of range".into()))?;
            let format = if name == "Time" {
                SecondsFormat::Secs
            } else {
                SecondsFormat::Micros
            };
            return Ok(Some(json!(t.to_rfc3339_opts(format, true))));
        }
        "Duration" if fields.len() == 1 => {
            return Ok(Some(json!(go_duration(int_field(fields, "duration")))));
        }
        "RawExtension" | "FieldsV1" => return raw_json(fields),
        _ => {}
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (field_name, node) in fields {
        let wanted = normalized(field_name);
        let property = props.and_then(|p| p.iter().find(|(k, _)| normalized(k) == wanted));
        // A Go struct embedded with `json:",inline"` (a Volume's `volumeSource`, the
        // `localObjectReference` of key selectors) is a field of its own in protobuf and has
        // no JSON property: its fields belong to this object.
        if property.is_none()
            && let Some(Node::Message(inner_name, inner_fields)) = unwrapped(node)
            && let Some(Value::Object(inlined)) = message(inner_name, inner_fields, schema, depth + 1)?
        {
            out.extend(inlined);
            continue;
        }
        let (json_name, field_schema) = property
            .map(|(k, s)| (k.clone(), s))
            .unwrap_or_else(|| (camel_case(field_name), empty_schema()));
        let Some(v) = value(node, field_schema, depth + 1)? else {
            continue;
        };
        if v == json!("") && !required.contains(&json_name.as_str()) {
            continue;
        }
        out.insert(json_name, v);
    }
    Ok(Some(Value::Object(out)))
}

/// A field the schema does not know keeps its data under the camel-case of its name.
fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case(0, "0s")]
    #[case(1_500_000_000, "1.5s")]
    #[case(3_600_000_000_000, "1h0m0s")]
    #[case(-90_000_000_000, "-1m30s")]
    fn durations_read_as_go_writes_them(#[case] nanos: i64, #[case] text: &str) {
        assert_eq!(go_duration(nanos), text);
    }

    #[test]
    fn unknown_fields_keep_camel_case() {
        assert_eq!(camel_case("host_users"), "hostUsers");
    }
}
