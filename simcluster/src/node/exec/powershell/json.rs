//! `ConvertTo-Json [-Depth n] [-Compress]`: pipeline objects as JSON, the way operators save
//! HNS state (microsoft/SDN `Kubernetes/windows/debug/collectlogs.ps1`:
//! `Get-HnsPolicyList | ConvertTo-Json -Depth 20`). One input object gives that object, several
//! give an array; objects nested deeper than `-Depth` (default 2) are written as their string
//! form, as PowerShell does.

use serde_json::{Map, Number, Value};

use super::invocation::Invocation;
use super::{Kind, V};

/// PowerShell's default `-Depth`.
const DEFAULT_DEPTH: usize = 2;

/// The JSON text of the pipeline's objects (nothing for an empty pipeline).
pub(super) fn convert_to_json(call: &Invocation, mut input: Vec<V>) -> Vec<V> {
    if let Some(v) = call.get("inputobject") {
        input.push(v.clone());
    }
    let depth = call
        .get("depth")
        .and_then(V::number)
        .map_or(DEFAULT_DEPTH, |d| d.max(0.0) as usize);
    let value = match input.len() {
        0 => return Vec::new(),
        1 => json_of(&input[0], depth),
        _ => Value::Array(input.iter().map(|v| json_of(v, depth)).collect()),
    };
    let text = if call.switch("compress") {
        value.to_string()
    } else {
        serde_json::to_string_pretty(&value).unwrap_or_default()
    };
    vec![V::Str(text)]
}

/// One value as JSON, objects down to `depth` levels.
pub(super) fn json_of(v: &V, depth: usize) -> Value {
    match v {
        V::Null => Value::Null,
        V::Bool(b) => Value::Bool(*b),
        V::Int(n) => Value::Number((*n).into()),
        V::Num(n) => Number::from_f64(*n).map_or(Value::Null, Value::Number),
        V::Str(t) => Value::String(t.clone()),
        V::Block(b) => Value::String(b.text.clone()),
        V::Arr(items) => Value::Array(items.iter().map(|i| json_of(i, depth)).collect()),
        V::Obj(o) => {
            if depth == 0 || o.kind == Kind::Bytes {
                return Value::String(v.text());
            }
            let map: Map<String, Value> = o
                .props
                .iter()
                .map(|(k, val)| (k.clone(), json_of(val, depth - 1)))
                .collect();
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::node::exec::powershell::{Obj, s};

    fn nested() -> V {
        let inner = V::Obj(Arc::new(Obj {
            kind: Kind::Custom,
            props: vec![
                ("VIPs".into(), V::Arr(vec![s("10.96.0.10")])),
                ("ExternalPort".into(), V::Int(53)),
            ],
        }));
        V::Obj(Arc::new(Obj {
            kind: Kind::Custom,
            props: vec![("ID".into(), s("a")), ("Policies".into(), V::Arr(vec![inner]))],
        }))
    }

    #[test]
    fn objects_keep_their_property_order_down_to_the_depth() {
        let deep = json_of(&nested(), 5);
        assert_eq!(
            deep.to_string(),
            r#"{"ID":"a","Policies":[{"VIPs":["10.96.0.10"],"ExternalPort":53}]}"#
        );
        // Below the depth an object is its string form, as PowerShell writes it.
        let shallow = json_of(&nested(), 1);
        assert_eq!(
            shallow.to_string(),
            r#"{"ID":"a","Policies":["@{VIPs={10.96.0.10}; ExternalPort=53}"]}"#
        );
    }
}
