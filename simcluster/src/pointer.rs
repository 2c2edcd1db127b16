//! JSON pointer lookups without allocation for the hot paths (serde_json's `Value::pointer`
//! allocates to unescape every segment).

use serde_json::Value;

/// The value at an RFC 6901 pointer such as `/spec/nodeName` or `/spec/containers/0/name`.
pub fn get<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    if pointer.is_empty() {
        return Some(v);
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .try_fold(v, |cur, segment| match cur {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// The string at a pointer, or "".
pub fn str<'a>(v: &'a Value, pointer: &str) -> &'a str {
    get(v, pointer).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    #[rstest]
    #[case("/spec/nodeName")]
    #[case("/spec/containers/0/name")]
    #[case("/metadata/annotations/kubectl.kubernetes.io~1default-container")]
    #[case("/spec/containers/9/name")]
    #[case("/spec/containers/x")]
    #[case("")]
    #[case("nope")]
    fn agrees_with_serde_json(#[case] pointer: &str) {
        let v = json!({"spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "metadata": {"annotations": {"kubectl.kubernetes.io/default-container": "c"}}});
        assert_eq!(get(&v, pointer), v.pointer(pointer));
    }
}
