//! Reading API objects held as JSON: getters by RFC 6901 pointer (`/spec/nodeName`,
//! `/spec/containers/0/name`) that every module uses instead of helpers of its own, without
//! allocation on the hot paths (serde_json's `Value::pointer` allocates to unescape every
//! segment).

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

/// The string at a pointer, or "" (absent, null or not a string).
pub fn str<'a>(v: &'a Value, pointer: &str) -> &'a str {
    opt_str(v, pointer).unwrap_or("")
}

/// The string at a pointer, if there is one.
pub fn opt_str<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    get(v, pointer).and_then(Value::as_str)
}

/// The array at a pointer, or an empty slice.
pub fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    get(v, pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The boolean at a pointer, if there is one.
pub fn bool(v: &Value, pointer: &str) -> Option<bool> {
    get(v, pointer).and_then(Value::as_bool)
}

/// Whether the pointer names a value that is not null.
pub fn present(v: &Value, pointer: &str) -> bool {
    get(v, pointer).is_some_and(|v| !v.is_null())
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

    #[test]
    fn typed_getters_default_when_absent_or_of_another_type() {
        let v = json!({"a": {"s": "x", "n": 3, "b": true, "l": [1, 2], "z": null}});
        assert_eq!((str(&v, "/a/s"), str(&v, "/a/n"), str(&v, "/nope")), ("x", "", ""));
        assert_eq!((opt_str(&v, "/a/s"), opt_str(&v, "/a/z")), (Some("x"), None));
        assert_eq!((array(&v, "/a/l").len(), array(&v, "/a/s").len()), (2, 0));
        assert_eq!((bool(&v, "/a/b"), bool(&v, "/a/s")), (Some(true), None));
        assert_eq!(
            (present(&v, "/a/s"), present(&v, "/a/z"), present(&v, "/x")),
            (true, false, false)
        );
    }
}
