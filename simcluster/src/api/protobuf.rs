//! Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) for
//! the kinds whose objects `kubectl create` sends that way: Namespace, ConfigMap, Secret,
//! ServiceAccount and Service, the RBAC kinds (`kubectl create role|clusterrole|rolebinding|
//! clusterrolebinding`), the TokenRequest of `kubectl create token`, and the reviews `kubectl
//! auth can-i` sends (SelfSubjectAccessReview, SelfSubjectRulesReview). The envelope is the magic
//! `k8s\0` followed by a `runtime.Unknown` message whose `raw` field holds the object; field
//! numbers follow the upstream `generated.proto`.

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// A protobuf body that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("the protobuf body is malformed: {0}")]
    Malformed(&'static str),
    #[error(
        "protobuf request bodies are supported for Namespace, ConfigMap, Secret, ServiceAccount, Service, the RBAC kinds, TokenRequest and the self-subject reviews only, not {0}; send JSON or YAML instead"
    )]
    UnsupportedKind(String),
}

const MAGIC: &[u8] = b"k8s\0";

/// One decoded field: number and value.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or(ProtobufError::Malformed("truncated varint"))?;
            self.buf = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::Malformed("varint too long"))
    }

    fn next(&mut self) -> Result<Option<(u64, Wire<'a>)>, ProtobufError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (field, wire_type) = (key >> 3, key & 7);
        let value = match wire_type {
            0 => Wire::Varint(self.varint()?),
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| ProtobufError::Malformed("length overflow"))?;
                if len > self.buf.len() {
                    return Err(ProtobufError::Malformed("length past the end"));
                }
                let (bytes, rest) = self.buf.split_at(len);
                self.buf = rest;
                Wire::Bytes(bytes)
            }
            1 => {
                self.skip(8)?;
                Wire::Varint(0)
            }
            5 => {
                self.skip(4)?;
                Wire::Varint(0)
            }
            _ => return Err(ProtobufError::Malformed("unsupported wire type")),
        };
        Ok(Some((field, value)))
    }

    fn skip(&mut self, n: usize) -> Result<(), ProtobufError> {
        if n > self.buf.len() {
            return Err(ProtobufError::Malformed("fixed-width field past the end"));
        }
        self.buf = &self.buf[n..];
        Ok(())
    }
}

fn fields(buf: &[u8]) -> Result<Vec<(u64, Wire<'_>)>, ProtobufError> {
    let mut reader = Reader { buf };
    let mut out = Vec::new();
    while let Some(f) = reader.next()? {
        out.push(f);
    }
    Ok(out)
}

fn text(b: &[u8]) -> Result<String, ProtobufError> {
    String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::Malformed("a string field is not UTF-8"))
}

fn bytes_of<'a>(w: &Wire<'a>) -> Result<&'a [u8], ProtobufError> {
    match w {
        Wire::Bytes(b) => Ok(b),
        Wire::Varint(_) => Err(ProtobufError::Malformed("expected a length-delimited field")),
    }
}

/// A `map<string, string>` (or `map<string, bytes>` as base64) entry.
fn map_entry(b: &[u8], value_as_base64: bool) -> Result<(String, Value), ProtobufError> {
    let mut key = String::new();
    let mut value = Value::String(String::new());
    for (n, w) in fields(b)? {
        match n {
            1 => key = text(bytes_of(&w)?)?,
            2 if value_as_base64 => {
                value = json!(base64::engine::general_purpose::STANDARD.encode(bytes_of(&w)?));
            }
            2 => value = json!(text(bytes_of(&w)?)?),
            _ => {}
        }
    }
    Ok((key, value))
}

fn insert_map_entry(obj: &mut Map<String, Value>, field: &str, b: &[u8], base64: bool) -> Result<(), ProtobufError> {
    let (k, v) = map_entry(b, base64)?;
    let map = obj.entry(field).or_insert_with(|| json!({}));
    if let Some(m) = map.as_object_mut() {
        m.insert(k, v);
    }
    Ok(())
}

fn push(obj: &mut Map<String, Value>, field: &str, v: Value) {
    let list = obj.entry(field).or_insert_with(|| json!([]));
    if let Some(l) = list.as_array_mut() {
        l.push(v);
    }
}

fn object_meta(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut meta = Map::new();
    for (n, w) in fields(b)? {
        match n {
            1 => _ = meta.insert("name".into(), json!(text(bytes_of(&w)?)?)),
            2 => _ = meta.insert("generateName".into(), json!(text(bytes_of(&w)?)?)),
            3 => _ = meta.insert("namespace".into(), json!(text(bytes_of(&w)?)?)),
            6 => _ = meta.insert("resourceVersion".into(), json!(text(bytes_of(&w)?)?)),
            11 => insert_map_entry(&mut meta, "labels", bytes_of(&w)?, false)?,
            12 => insert_map_entry(&mut meta, "annotations", bytes_of(&w)?, false)?,
            14 => push(&mut meta, "finalizers", json!(text(bytes_of(&w)?)?)),
            _ => {}
        }
    }
    Ok(Value::Object(meta))
}

fn boolean(w: &Wire<'_>) -> Value {
    json!(matches!(w, Wire::Varint(v) if *v != 0))
}

fn name_ref(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut out = Map::new();
    for (n, w) in fields(b)? {
        if n == 1 {
            out.insert("name".into(), json!(text(bytes_of(&w)?)?));
        }
    }
    Ok(Value::Object(out))
}

fn int(w: &Wire<'_>) -> Value {
    match w {
        // int32 fields are varints (negative values are sign-extended to 64 bits).
        Wire::Varint(v) => json!(*v as i64),
        Wire::Bytes(_) => Value::Null,
    }
}

/// `intstr.IntOrString`: type (0 int, 1 string), intVal, strVal.
fn int_or_string(b: &[u8]) -> Result<Value, ProtobufError> {
    let (mut ty, mut int_val, mut str_val) = (0u64, Value::Null, Value::Null);
    for (n, w) in fields(b)? {
        match (n, &w) {
            (1, Wire::Varint(v)) => ty = *v,
            (2, _) => int_val = int(&w),
            (3, _) => str_val = json!(text(bytes_of(&w)?)?),
            _ => {}
        }
    }
    Ok(if ty == 1 { str_val } else { int_val })
}

fn service_port(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut port = Map::new();
    for (n, w) in fields(b)? {
        match n {
            1 => _ = port.insert("name".into(), json!(text(bytes_of(&w)?)?)),
            2 => _ = port.insert("protocol".into(), json!(text(bytes_of(&w)?)?)),
            3 => _ = port.insert("port".into(), int(&w)),
            4 => _ = port.insert("targetPort".into(), int_or_string(bytes_of(&w)?)?),
            5 => _ = port.insert("nodePort".into(), int(&w)),
            6 => _ = port.insert("appProtocol".into(), json!(text(bytes_of(&w)?)?)),
            _ => {}
        }
    }
    Ok(Value::Object(port))
}

/// `ServiceSpec`, the fields `kubectl create service` and `kubectl expose` set.
fn service_spec(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut spec = Map::new();
    for (n, w) in fields(b)? {
        match n {
            1 => push(&mut spec, "ports", service_port(bytes_of(&w)?)?),
            2 => insert_map_entry(&mut spec, "selector", bytes_of(&w)?, false)?,
            3 => _ = spec.insert("clusterIP".into(), json!(text(bytes_of(&w)?)?)),
            4 => _ = spec.insert("type".into(), json!(text(bytes_of(&w)?)?)),
            5 => push(&mut spec, "externalIPs", json!(text(bytes_of(&w)?)?)),
            7 => _ = spec.insert("sessionAffinity".into(), json!(text(bytes_of(&w)?)?)),
            10 => _ = spec.insert("externalName".into(), json!(text(bytes_of(&w)?)?)),
            11 => _ = spec.insert("externalTrafficPolicy".into(), json!(text(bytes_of(&w)?)?)),
            13 => _ = spec.insert("publishNotReadyAddresses".into(), boolean(&w)),
            17 => _ = spec.insert("ipFamilyPolicy".into(), json!(text(bytes_of(&w)?)?)),
            18 => push(&mut spec, "clusterIPs", json!(text(bytes_of(&w)?)?)),
            19 => push(&mut spec, "ipFamilies", json!(text(bytes_of(&w)?)?)),
            22 => _ = spec.insert("internalTrafficPolicy".into(), json!(text(bytes_of(&w)?)?)),
            _ => {}
        }
    }
    Ok(Value::Object(spec))
}

/// The string fields of a message, by field number, into `names`.
fn strings(b: &[u8], names: &[(u64, &str)]) -> Result<Value, ProtobufError> {
    let mut obj = Map::new();
    for (n, w) in fields(b)? {
        if let Some((_, name)) = names.iter().find(|(m, _)| *m == n) {
            obj.insert((*name).into(), json!(text(bytes_of(&w)?)?));
        }
    }
    Ok(Value::Object(obj))
}

/// `SelfSubjectAccessReviewSpec` (`authorization/v1/generated.proto`); the field and label
/// selectors of resource attributes are not decoded.
fn access_review_spec(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut spec = Map::new();
    for (n, w) in fields(b)? {
        match n {
            1 => {
                let names = [
                    (1, "namespace"),
                    (2, "verb"),
                    (3, "group"),
                    (4, "version"),
                    (5, "resource"),
                    (6, "subresource"),
                    (7, "name"),
                ];
                spec.insert("resourceAttributes".into(), strings(bytes_of(&w)?, &names)?);
            }
            2 => {
                let names = [(1, "path"), (2, "verb")];
                spec.insert("nonResourceAttributes".into(), strings(bytes_of(&w)?, &names)?);
            }
            _ => {}
        }
    }
    Ok(Value::Object(spec))
}

/// The repeated string fields of a message, by field number, into lists under `names`.
fn string_lists(b: &[u8], names: &[(u64, &str)]) -> Result<Map<String, Value>, ProtobufError> {
    let mut obj = Map::new();
    for (n, w) in fields(b)? {
        if let Some((_, name)) = names.iter().find(|(m, _)| *m == n) {
            push(&mut obj, name, json!(text(bytes_of(&w)?)?));
        }
    }
    Ok(obj)
}

/// `TokenRequestSpec` (`authentication/v1/generated.proto`).
fn token_request_spec(b: &[u8]) -> Result<Value, ProtobufError> {
    let mut spec = string_lists(b, &[(1, "audiences")])?;
    for (n, w) in fields(b)? {
        match n {
            3 => {
                let names = [(1, "kind"), (2, "apiVersion"), (3, "name"), (4, "uid")];
                spec.insert("boundObjectRef".into(), strings(bytes_of(&w)?, &names)?);
            }
            4 => _ = spec.insert("expirationSeconds".into(), int(&w)),
            _ => {}
        }
    }
    Ok(Value::Object(spec))
}

/// The fields of an RBAC object or a TokenRequest (`rbac/v1`, `authentication/v1`).
fn other_kind(kind: &str, raw: &[u8], obj: &mut Map<String, Value>) -> Result<(), ProtobufError> {
    for (n, w) in fields(raw)? {
        let b = || bytes_of(&w);
        match (kind, n) {
            (_, 1) => _ = obj.insert("metadata".into(), object_meta(b()?)?),
            ("Role" | "ClusterRole", 2) => {
                let names = [
                    (1, "verbs"),
                    (2, "apiGroups"),
                    (3, "resources"),
                    (4, "resourceNames"),
                    (5, "nonResourceURLs"),
                ];
                push(obj, "rules", Value::Object(string_lists(b()?, &names)?));
            }
            ("RoleBinding" | "ClusterRoleBinding", 2) => {
                let names = [(1, "kind"), (2, "apiGroup"), (3, "name"), (4, "namespace")];
                push(obj, "subjects", strings(b()?, &names)?);
            }
            ("RoleBinding" | "ClusterRoleBinding", 3) => {
                let names = [(1, "apiGroup"), (2, "kind"), (3, "name")];
                obj.insert("roleRef".into(), strings(b()?, &names)?);
            }
            ("TokenRequest", 2) => _ = obj.insert("spec".into(), token_request_spec(b()?)?),
            _ => {}
        }
    }
    Ok(())
}

/// Decodes a protobuf request body into the JSON object it encodes.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or(ProtobufError::Malformed("missing the k8s protobuf magic"))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    for (n, w) in fields(envelope)? {
        match n {
            1 => {
                for (m, tw) in fields(bytes_of(&w)?)? {
                    match m {
                        1 => api_version = text(bytes_of(&tw)?)?,
                        2 => kind = text(bytes_of(&tw)?)?,
                        _ => {}
                    }
                }
            }
            2 => raw = bytes_of(&w)?,
            _ => {}
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!(api_version));
    obj.insert("kind".into(), json!(kind));
    let rbac = api_version == "rbac.authorization.k8s.io/v1"
        && matches!(
            kind.as_str(),
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding"
        );
    let token_request = api_version == "authentication.k8s.io/v1" && kind == "TokenRequest";
    if rbac || token_request {
        other_kind(&kind, raw, &mut obj)?;
        return Ok(Value::Object(obj));
    }
    let core = api_version == "v1";
    let review = api_version == "authorization.k8s.io/v1"
        && matches!(kind.as_str(), "SelfSubjectAccessReview" | "SelfSubjectRulesReview");
    for (n, w) in fields(raw)? {
        let b = || bytes_of(&w);
        match (core, kind.as_str(), n) {
            (false, _, 1) if review => _ = obj.insert("metadata".into(), object_meta(b()?)?),
            (false, "SelfSubjectAccessReview", 2) if review => _ = obj.insert("spec".into(), access_review_spec(b()?)?),
            (false, "SelfSubjectRulesReview", 2) if review => {
                _ = obj.insert("spec".into(), strings(b()?, &[(1, "namespace")])?)
            }
            (false, _, _) if review => {}
            (true, _, 1) => _ = obj.insert("metadata".into(), object_meta(b()?)?),
            (true, "Namespace", 2) => {
                let mut spec = Map::new();
                for (m, fw) in fields(b()?)? {
                    if m == 1 {
                        push(&mut spec, "finalizers", json!(text(bytes_of(&fw)?)?));
                    }
                }
                obj.insert("spec".into(), Value::Object(spec));
            }
            (true, "Namespace", _) => {}
            (true, "ConfigMap", 2) => insert_map_entry(&mut obj, "data", b()?, false)?,
            (true, "ConfigMap", 3) => insert_map_entry(&mut obj, "binaryData", b()?, true)?,
            (true, "ConfigMap", 4) => _ = obj.insert("immutable".into(), boolean(&w)),
            (true, "ConfigMap", _) => {}
            (true, "Secret", 2) => insert_map_entry(&mut obj, "data", b()?, true)?,
            (true, "Secret", 3) => _ = obj.insert("type".into(), json!(text(b()?)?)),
            (true, "Secret", 4) => insert_map_entry(&mut obj, "stringData", b()?, false)?,
            (true, "Secret", 5) => _ = obj.insert("immutable".into(), boolean(&w)),
            (true, "Secret", _) => {}
            (true, "ServiceAccount", 2) => push(&mut obj, "secrets", name_ref(b()?)?),
            (true, "ServiceAccount", 3) => push(&mut obj, "imagePullSecrets", name_ref(b()?)?),
            (true, "ServiceAccount", 4) => _ = obj.insert("automountServiceAccountToken".into(), boolean(&w)),
            (true, "ServiceAccount", _) => {}
            (true, "Service", 2) => _ = obj.insert("spec".into(), service_spec(b()?)?),
            (true, "Service", _) => {}
            _ => return Err(ProtobufError::UnsupportedKind(format!("{api_version}/{kind}"))),
        }
    }
    let core_kind = core
        && matches!(
            kind.as_str(),
            "Namespace" | "ConfigMap" | "Secret" | "ServiceAccount" | "Service"
        );
    if !core_kind && !review {
        return Err(ProtobufError::UnsupportedKind(format!("{api_version}/{kind}")));
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(n << 3 | 2, &mut out);
        varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    }

    fn entry(k: &str, v: &[u8]) -> Vec<u8> {
        [field(1, k.as_bytes()), field(2, v)].concat()
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        [
            MAGIC.to_vec(),
            field(1, &type_meta),
            field(2, raw),
            field(4, b"application/vnd.kubernetes.protobuf"),
        ]
        .concat()
    }

    #[test]
    fn namespace_as_kubectl_create_sends_it() {
        let meta = [field(1, b"scratch"), field(11, &entry("team", b"a"))].concat();
        let body = envelope(
            "v1",
            "Namespace",
            &[field(1, &meta), field(2, &[]), field(3, &[])].concat(),
        );
        let obj = decode(&body).expect("decodes");
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "scratch", "labels": {"team": "a"}}, "spec": {}})
        );
    }

    #[test]
    fn secret_and_configmap_maps() {
        let meta = field(1, b"creds");
        let raw = [
            field(1, &meta),
            field(2, &entry("password", b"hunter2")),
            field(3, b"Opaque"),
        ]
        .concat();
        let obj = decode(&envelope("v1", "Secret", &raw)).expect("secret");
        assert_eq!(obj["data"]["password"], "aHVudGVyMg==");
        assert_eq!(obj["type"], "Opaque");
        let raw = [field(1, &field(1, b"cfg")), field(2, &entry("mode", b"fast"))].concat();
        let obj = decode(&envelope("v1", "ConfigMap", &raw)).expect("configmap");
        assert_eq!(obj["data"]["mode"], "fast");
    }

    fn varint_field(n: u64, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(n << 3, &mut out);
        varint(v, &mut out);
        out
    }

    #[test]
    fn service_as_kubectl_create_service_sends_it() {
        let target = [varint_field(1, 0), varint_field(2, 8080)].concat();
        let port = [
            field(1, b"80-8080"),
            field(2, b"TCP"),
            varint_field(3, 80),
            field(4, &target),
        ]
        .concat();
        let spec = [field(1, &port), field(2, &entry("app", b"web")), field(4, b"NodePort")].concat();
        let raw = [field(1, &field(1, b"web")), field(2, &spec)].concat();
        let obj = decode(&envelope("v1", "Service", &raw)).expect("service");
        assert_eq!(
            obj["spec"]["ports"][0],
            json!({"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080})
        );
        assert_eq!(obj["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(obj["spec"]["type"], "NodePort");
        let named = [varint_field(1, 1), field(3, b"http")].concat();
        let port = [varint_field(3, 80), field(4, &named)].concat();
        let raw = [field(1, &field(1, b"w")), field(2, &field(1, &port))].concat();
        let obj = decode(&envelope("v1", "Service", &raw)).expect("service");
        assert_eq!(obj["spec"]["ports"][0]["targetPort"], "http");
    }

    #[test]
    fn access_review_as_kubectl_auth_can_i_sends_it() {
        let attributes = [field(1, b"default"), field(2, b"create"), field(5, b"pods")].concat();
        let raw = [field(1, &[]), field(2, &field(1, &attributes))].concat();
        let obj = decode(&envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw)).expect("review");
        assert_eq!(
            obj["spec"]["resourceAttributes"],
            json!({"namespace": "default", "verb": "create", "resource": "pods"})
        );
        let raw = field(2, &field(1, b"default"));
        let obj = decode(&envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview", &raw)).expect("rules");
        assert_eq!(obj["spec"], json!({"namespace": "default"}));
    }

    #[test]
    fn token_request_as_kubectl_create_token_sends_it() {
        let bound = [field(1, b"Pod"), field(2, b"v1"), field(3, b"p")].concat();
        let spec = [
            field(1, b"https://kubernetes.default.svc.cluster.local"),
            field(1, b"vault"),
            field(3, &bound),
            varint_field(4, 7200),
        ]
        .concat();
        let raw = [field(1, &[]), field(2, &spec), field(3, &[])].concat();
        let obj = decode(&envelope("authentication.k8s.io/v1", "TokenRequest", &raw)).expect("token request");
        assert_eq!(
            obj["spec"],
            json!({"audiences": ["https://kubernetes.default.svc.cluster.local", "vault"],
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}, "expirationSeconds": 7200})
        );
    }

    #[test]
    fn rbac_objects_as_kubectl_create_sends_them() {
        let rule = [
            field(1, b"get"),
            field(1, b"list"),
            field(2, b""),
            field(3, b"pods"),
            field(4, b"p1"),
        ]
        .concat();
        let raw = [field(1, &field(1, b"reader")), field(2, &rule)].concat();
        let obj = decode(&envelope("rbac.authorization.k8s.io/v1", "ClusterRole", &raw)).expect("role");
        assert_eq!(
            obj["rules"],
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p1"]}])
        );
        let subject = [field(1, b"ServiceAccount"), field(3, b"sa"), field(4, b"ns")].concat();
        let role_ref = [
            field(1, b"rbac.authorization.k8s.io"),
            field(2, b"ClusterRole"),
            field(3, b"reader"),
        ]
        .concat();
        let raw = [field(1, &field(1, b"b")), field(2, &subject), field(3, &role_ref)].concat();
        let obj = decode(&envelope("rbac.authorization.k8s.io/v1", "RoleBinding", &raw)).expect("binding");
        assert_eq!(
            obj["subjects"],
            json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}])
        );
        assert_eq!(
            obj["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"})
        );
    }

    #[rstest]
    #[case::no_magic(b"{}".to_vec(), "magic")]
    #[case::truncated([MAGIC.to_vec(), vec![0x0a, 0x05, 0x01]].concat(), "past the end")]
    #[case::bad_varint([MAGIC.to_vec(), vec![0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]].concat(), "varint")]
    #[case::deployment(envelope("apps/v1", "Deployment", &field(1, &field(1, b"d"))), "Namespace, ConfigMap, Secret, ServiceAccount, Service, the RBAC kinds, TokenRequest and the self-subject reviews")]
    fn bad_bodies(#[case] body: Vec<u8>, #[case] needle: &str) {
        let err = decode(&body).expect_err("rejected");
        assert!(err.to_string().contains(needle), "{err}");
    }
}
