//! Reading API objects held as JSON: getters by RFC 6901 pointer (`/spec/nodeName`,
//! `/spec/containers/0/name`) that every module uses instead of helpers of its own, without
//! allocation on the hot paths (serde_json's `Value::pointer` allocates to unescape every
//! segment); and a value's encoding and decoding as the store keeps it.

use serde_json::Value;

/// `value` as compact JSON: the bytes `serde_json::to_vec` gives, made by `Value`'s `Display`.
/// That one is compiled in serde_json itself, where `to_vec`'s serialiser is generic and so
/// compiled in the crate that calls it: in the test build, which optimises dependencies and not
/// this crate, the store's encoding of every write took 3.7 % of a run's CPU that way
/// (docs/benchmarks.md, "2026-12-07").
pub fn encode(value: &Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// JSON text as a value, through `Value`'s `FromStr` (compiled in serde_json, as [`encode`]'s
/// `Display`): what `serde_json::from_slice` gives, and its error for bytes that are not UTF-8.
pub fn decode(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.parse(),
        Err(_) => serde_json::from_slice(bytes),
    }
}

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
            Value::Object(map) => field(map, segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// A map's value of `key`. An object's maps are mostly small (an object's top level, its
/// metadata, a container): those are searched in order, since hashing the key (serde_json's
/// maps hash with SipHash) cost more than the comparisons where the hasher is compiled
/// unoptimised, in the test build (docs/benchmarks.md, "2026-12-07"). The same value either way.
fn field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 16 {
        map.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get(key)
    }
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

    /// A key is found the same in a small map (searched in order) and a large one (hashed).
    #[rstest]
    #[case::small(3)]
    #[case::at_the_limit(16)]
    #[case::large(40)]
    fn fields_are_found_in_maps_of_any_size(#[case] size: usize) {
        let map: serde_json::Map<String, Value> = (0..size).map(|i| (format!("k{i}"), json!(i))).collect();
        let v = json!({"m": map});
        for i in 0..size {
            assert_eq!(get(&v, &format!("/m/k{i}")), Some(&json!(i)));
        }
        assert_eq!(get(&v, "/m/absent"), None);
        assert_eq!(get(&v, &format!("/m/k{size}")), None);
    }

    /// The encoding and decoding through `Display` and `FromStr` are serde_json's own, byte for
    /// byte: key order, escapes, numbers past i64, and the errors of text that is not JSON.
    #[rstest]
    #[case::object(json!({"b": 1, "a": [true, null, -2.5e-7], "c": {"é\n\"\u{1}": "x"}}))]
    #[case::big_numbers(json!([18446744073709551615u64, -9223372036854775808i64, 0.1]))]
    #[case::scalar(json!("just a string"))]
    fn encoding_and_decoding_are_serde_jsons(#[case] value: Value) {
        let bytes = encode(&value);
        assert_eq!(bytes, serde_json::to_vec(&value).expect("encodes"));
        assert_eq!(decode(&bytes).expect("decodes"), value);
    }

    #[rstest]
    #[case::truncated(b"{\"a\": 1".as_slice())]
    #[case::trailing(b"{} x".as_slice())]
    #[case::not_utf8(b"\"\xff\"".as_slice())]
    fn what_is_not_json_fails_as_serde_json_fails_it(#[case] bytes: &[u8]) {
        let ours = decode(bytes).expect_err("not JSON");
        let theirs = serde_json::from_slice::<Value>(bytes).expect_err("not JSON");
        assert_eq!(ours.to_string(), theirs.to_string());
    }

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
