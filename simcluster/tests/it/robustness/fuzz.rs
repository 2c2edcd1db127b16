//! The fuzz batch: a seeded batch of random, truncated, deep and huge bodies with odd query
//! strings, content types and accept headers, sent concurrently at every handler; the server
//! must not panic and must still answer afterwards.

use super::*;

/// xorshift64: a tiny deterministic generator, so a failing batch can be replayed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX).max(1);
        usize::try_from(self.next() % n64).unwrap_or(0)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next().to_le_bytes()[3]).collect()
    }
}

const FUZZ_REQUESTS: usize = 4000;
const FUZZ_CONCURRENCY: usize = 16;

/// Block-style YAML for a JSON value (strings and keys as JSON, i.e. double-quoted, strings).
fn to_yaml(v: &Value) -> String {
    fn nested(v: &Value) -> bool {
        matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
    }
    fn value(v: &Value, indent: usize, out: &mut String) {
        if nested(v) {
            out.push('\n');
            block(v, indent + 2, out);
        } else {
            out.push(' ');
            out.push_str(&v.to_string());
            out.push('\n');
        }
    }
    fn block(v: &Value, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, item) in m {
                    out.push_str(&pad);
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    value(item, indent, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for item in a {
                    out.push_str(&pad);
                    out.push('-');
                    value(item, indent, out);
                }
            }
            other => {
                out.push_str(&pad);
                out.push_str(&other.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    block(v, 0, &mut out);
    out
}

/// Valid JSON of the wrong shape: wrong types, nulls, odd patch directives, extreme numbers.
const WRONG_SHAPES: &[&str] = &[
    "[]",
    "{}",
    "null",
    "42",
    "-0",
    r#""str""#,
    "true",
    "[{}]",
    r#"{"metadata":null}"#,
    r#"{"metadata":"x"}"#,
    r#"{"metadata":[]}"#,
    r#"{"metadata":{"name":42}}"#,
    r#"{"metadata":{"name":""}}"#,
    r#"{"metadata":{"name":null,"generateName":7}}"#,
    r#"{"metadata":{"generateName":"fz-"}}"#,
    r#"{"metadata":{"generateName":"Bad_"}}"#,
    r#"{"metadata":{"labels":"x"}}"#,
    r#"{"metadata":{"labels":{"a":{"b":1}}}}"#,
    r#"{"metadata":{"labels":{"a":null}}}"#,
    r#"{"metadata":{"annotations":[1]}}"#,
    r#"{"metadata":{"namespace":["x"]}}"#,
    r#"{"metadata":{"resourceVersion":"1"}}"#,
    r#"{"metadata":{"resourceVersion":42}}"#,
    r#"{"metadata":{"resourceVersion":"18446744073709551616"}}"#,
    r#"{"metadata":{"uid":"x","finalizers":"a"}}"#,
    r#"{"metadata":{"finalizers":[1,null]}}"#,
    r#"{"metadata":{"finalizers":["fz/hold"]}}"#,
    r#"{"metadata":{"deletionTimestamp":"now","deletionGracePeriodSeconds":"x"}}"#,
    r#"{"metadata":{"generation":9223372036854775807}}"#,
    r#"{"metadata":{"creationTimestamp":7,"managedFields":"x"}}"#,
    r#"{"metadata":{"ownerReferences":"x"}}"#,
    r#"{"spec":null}"#,
    r#"{"spec":"x"}"#,
    r#"{"spec":[]}"#,
    r#"{"spec":{"containers":"x"}}"#,
    r#"{"spec":{"containers":[null]}}"#,
    r#"{"spec":{"containers":[{"name":7,"image":[]}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":"80"}]}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","ports":"x"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":[],"memory":7}}}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","image":":::@@@"}]}}"#,
    r#"{"spec":{"initContainers":"x","ephemeralContainers":7}}"#,
    r#"{"spec":{"restartPolicy":7,"nodeName":[]}}"#,
    r#"{"spec":{"nodeName":"no-such-node"}}"#,
    r#"{"spec":{"terminationGracePeriodSeconds":9223372036854775807}}"#,
    r#"{"spec":{"terminationGracePeriodSeconds":-9223372036854775808}}"#,
    r#"{"spec":{"replicas":"3","selector":"x","template":null}}"#,
    r#"{"spec":{"replicas":1e300}}"#,
    r#"{"spec":{"replicas":-1}}"#,
    r#"{"spec":{"selector":{"matchLabels":{"a":1}}}}"#,
    r#"{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}"#,
    r#"{"spec":{"selector":{"matchExpressions":"x"}}}"#,
    r#"{"spec":{"selector":null}}"#,
    r#"{"spec":{"template":{"metadata":{"labels":"x"},"spec":{"containers":[]}}}}"#,
    r#"{"spec":{"ports":[{"port":"x"}],"type":7}}"#,
    r#"{"spec":{"ports":[{"port":70000,"nodePort":-1}],"type":"NodePort"}}"#,
    r#"{"spec":{"ports":[{"port":80},{"port":81}]}}"#,
    r#"{"spec":{"type":"ExternalName"}}"#,
    r#"{"spec":{"clusterIP":"None","ports":null}}"#,
    r#"{"spec":{"finalizers":"x"}}"#,
    r#"{"spec":{"finalizers":[1]}}"#,
    r#"{"spec":{"unschedulable":"yes","taints":"x"}}"#,
    r#"{"spec":{"holderIdentity":7,"leaseDurationSeconds":"x"}}"#,
    r#"{"status":"x"}"#,
    r#"{"status":null}"#,
    r#"{"status":{"phase":7,"containerStatuses":"x"}}"#,
    r#"{"status":{"phase":"Succeeded"}}"#,
    r#"{"status":{"containerStatuses":[{"name":"c","state":{"running":7}}]}}"#,
    r#"{"status":{"containerStatuses":[{"name":"c","lastState":{"terminated":{}},"state":{"waiting":{"reason":7}}}]}}"#,
    r#"{"status":{"conditions":[1,2]}}"#,
    r#"{"status":{"conditions":"x","replicas":"x"}}"#,
    r#"{"data":"x"}"#,
    r#"{"data":{"k":7}}"#,
    r#"{"data":{"":"x"}}"#,
    r#"{"binaryData":{"k":"not base64"}}"#,
    r#"{"stringData":{"k":1}}"#,
    r#"{"stringData":"x","data":null}"#,
    r#"{"type":7}"#,
    r#"{"target":{"name":7}}"#,
    r#"{"target":"node"}"#,
    r#"{"target":{"name":""}}"#,
    r#"{"target":{"name":"no-such-node"}}"#,
    r#"{"kind":7,"apiVersion":[]}"#,
    r#"{"kind":"","apiVersion":""}"#,
    r#"{"kind":"Status"}"#,
    r#"{"apiVersion":"v1","kind":"List","items":[{}]}"#,
    r#"{"gracePeriodSeconds":"x"}"#,
    r#"{"gracePeriodSeconds":-1}"#,
    r#"{"gracePeriodSeconds":1e300}"#,
    r#"{"gracePeriodSeconds":9223372036854775807}"#,
    r#"{"gracePeriodSeconds":99999999999999999}"#,
    r#"{"preconditions":{"uid":7}}"#,
    r#"{"preconditions":{"uid":"x","resourceVersion":"1"}}"#,
    r#"{"preconditions":"x"}"#,
    r#"{"dryRun":"All"}"#,
    r#"{"dryRun":["All"]}"#,
    r#"{"propagationPolicy":"Bogus"}"#,
    r#"{"subsets":[{"addresses":[{"ip":7}]}]}"#,
    r#"{"endpoints":"x","addressType":7}"#,
    r#"{"ports":[{"port":"x"}]}"#,
    r#"{"handler":7}"#,
    r#"{"involvedObject":"x","count":"x"}"#,
    r#"[{"op":"add"}]"#,
    r#"[{"op":"add","path":"x","value":1}]"#,
    r#"[{"op":"remove","path":""}]"#,
    r#"[{"op":"replace","path":"","value":[]}]"#,
    r#"[{"op":"replace","path":"","value":null}]"#,
    r#"[{"op":"replace","path":"","value":{}}]"#,
    r#"[{"op":"move","from":"/metadata","path":"/metadata/x"}]"#,
    r#"[{"op":"copy","from":"/spec","path":"/spec/containers/-"}]"#,
    r#"[{"op":"test","path":"/metadata/name","value":"zz"}]"#,
    r#"[{"op":"add","path":"/metadata/labels/a~2b","value":"x"}]"#,
    r#"[{"op":"add","path":"/spec/containers/99999999999999999999","value":{}}]"#,
    r#"[{"op":"add","path":"/spec/containers/-1","value":{}}]"#,
    r#"[{"op":"add","path":"/metadata/name","value":"other"}]"#,
    r#"[{"op":"add","path":"/metadata/namespace","value":"other"}]"#,
    r#"[{"op":"remove","path":"/metadata"}]"#,
    r#"[{"op":"remove","path":"/kind"}]"#,
    r#"[{"op":"replace","path":"/metadata/resourceVersion","value":"1"}]"#,
    r#"[{"op":"replace","path":"/metadata/resourceVersion","value":null}]"#,
    r#"[{"op":"add","path":"/spec","value":[]}]"#,
    r#"[{"op":"add","path":"/status","value":"x"}]"#,
    r#"[{"op":"add","path":"/metadata/generation","value":9223372036854775807}]"#,
    r#"[null]"#,
    r#"[1,2,3]"#,
    r#"{"$patch":"delete"}"#,
    r#"{"$patch":"replace"}"#,
    r#"{"$patch":7}"#,
    r#"{"spec":{"$patch":"delete"}}"#,
    r#"{"spec":{"$patch":"replace"}}"#,
    r#"{"spec":{"containers":[{"$patch":"delete"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}"#,
    r#"{"spec":{"containers":[{"name":"c","$patch":"replace"}]}}"#,
    r#"{"spec":{"containers":[{"$patch":"replace"}]}}"#,
    r#"{"spec":{"containers":{"$patch":"replace"}}}"#,
    r#"{"spec":{"containers":[null,7,"x"]}}"#,
    r#"{"spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"$patch":"delete"}]}]}}"#,
    r#"{"spec":{"$setElementOrder/containers":[{"name":"zz"}],"containers":[]}}"#,
    r#"{"spec":{"$setElementOrder/containers":"x"}}"#,
    r#"{"spec":{"$setElementOrder/containers":[null,1]}}"#,
    r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}"#,
    r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":"a"}}"#,
    r#"{"$retainKeys":["metadata"]}"#,
    r#"{"spec":{"$retainKeys":"x"}}"#,
    r#"{"spec":{"$retainKeys":[7]}}"#,
    r#"{"status":{"conditions":[{"type":"Ready","$patch":"delete"}]}}"#,
    r#"{"status":{"conditions":[{"$patch":"merge"}]}}"#,
    r#"{"status":{"containerStatuses":[{"$patch":"delete"}]}}"#,
];

/// Literals that trip parsers: JSON edge cases first, then YAML ones.
const NASTY: &[&str] = &[
    r#"{"a":1e999}"#,
    r#"{"a":"\ud800"}"#,
    "\u{feff}{}",
    r#"{"a":1,"a":2}"#,
    r#"{"metadata":{"name":"a\u0000b"}}"#,
    r#"{"metadata":{"name":"é"}}"#,
    r#"{"metadata":{"name":"..."}}"#,
    r#"{"a":18446744073709551616}"#,
    r#"{"a":NaN}"#,
    "{'a':1}",
    r#"{"a":1,}"#,
    r#"{"a":1}{"b":2}"#,
    "/* c */ {}",
    "[1,2",
    "{\"a\":\"\\x\"}",
    "&a [*a]",
    "*undefined",
    "a: !!binary zzz",
    "? [a]\n: b",
    "{a: 1, a: 2}",
    "---\na: 1\n---\nb: 2\n",
    "a: !!float abc",
    "<<: *x",
    "a: 1e99999",
    "a: 99999999999999999999999",
    "a: [1, 2",
    "\"unterminated",
    "a: |\n  block\n b: c",
    "%YAML 9.9\n---\na: 1",
    "!custom {a: 1}",
    "base: &x {name: y}\nmetadata: *x",
    "metadata:\n  name: [a, b]",
    "metadata: {name: 7}",
    "~: 1",
    "{[1]: 2}",
    "{{a: 1}: 2}",
    "1.5: x\ntrue: y\nnull: z",
    "metadata:\n  name: x\n  labels: {a: [1]}",
    "metadata:\n  name: x\n    bad: indent",
    "\t",
    "- - - - - - - - x",
    "a: &a\n  b: *a",
    "key: 'unterminated",
    "? ? ? x",
];

/// Query fragments: garbage selectors, resourceVersions, numbers out of range, log and exec options.
const QUERY_FRAGMENTS: &[&str] = &[
    "watch=1",
    "watch=true",
    "watch=false",
    "watch",
    "resourceVersion=zz",
    "resourceVersion=-1",
    "resourceVersion=18446744073709551616",
    "resourceVersion=0",
    "resourceVersion=1",
    "resourceVersion=",
    "resourceVersionMatch=Bogus",
    "labelSelector=%%%",
    "labelSelector=a%20in%20(",
    "labelSelector=!!",
    "labelSelector=%C3%A9%3D%E2%82%AC",
    "labelSelector=a%3D%3D%3Db",
    "labelSelector=(((",
    "labelSelector=a%20notin%20(%C3%A9",
    "labelSelector=app%3Dfz",
    "fieldSelector=spec.foo%3D1",
    "fieldSelector=metadata.name%3D%3D%3D",
    "fieldSelector=%E2%82%AC",
    "fieldSelector=metadata.name!%3D",
    "fieldSelector=,,,",
    "fieldSelector=metadata.name%3Dp",
    "timeoutSeconds=-5",
    "timeoutSeconds=abc",
    "timeoutSeconds=99999999999999999999",
    "limit=-1",
    "limit=abc",
    "continue=%FF",
    "gracePeriodSeconds=x",
    "gracePeriodSeconds=-1",
    "gracePeriodSeconds=0",
    "gracePeriodSeconds=99999999999999999",
    "gracePeriodSeconds=9223372036854775807",
    "propagationPolicy=Bogus",
    "dryRun=All",
    "dryRun=",
    "fieldManager=",
    "fieldManager=fz",
    "fieldValidation=Strict",
    "force=true",
    "force=",
    "container=zz",
    "container=c",
    "container=",
    "command=ls",
    "command=",
    "stdout=1",
    "stdin=1",
    "tty=1",
    "tailLines=-1",
    "tailLines=zz",
    "tailLines=99999999999999999999",
    "limitBytes=zz",
    "limitBytes=0",
    "limitBytes=-7",
    "sinceSeconds=-5",
    "sinceSeconds=99999999999999999",
    "sinceSeconds=9000000000000000",
    "sinceSeconds=-9223372036854775808",
    "sinceTime=garbage",
    "sinceTime=9999-12-31T23:59:59Z",
    "sinceTime=0001-01-01T00:00:00Z",
    "timestamps=1",
    "follow=1",
    "previous=1",
    "includeObject=Bogus",
    "includeObject=Object",
    "sendInitialEvents=true",
    "allowWatchBookmarks=true",
    "%ZZ=%ZZ",
    "&&&",
    "=",
    "a=%FF%FE",
    "pretty=true",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-garbage;;=",
    "*/*",
    "",
];

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
    "application/vnd.kubernetes.protobuf",
    "*/*",
    "garbage;;;",
    "application/json;as=Table",
];

/// One path the batch aims at, with the kind of body it expects.
struct FuzzPath {
    path: String,
    sample: Sample,
    /// The object's name for item paths (None for collections).
    name: Option<String>,
}

fn fuzz_paths(node: &str) -> Vec<FuzzPath> {
    let ns = format!("/api/v1/namespaces/{FUZZ_NS}");
    let p = |path: String, sample: Sample, name: Option<&str>| FuzzPath {
        path,
        sample,
        name: name.map(str::to_string),
    };
    let node_name = node;
    vec![
        // Core, namespaced.
        p(format!("{ns}/pods"), Sample::Pod, None),
        p(format!("{ns}/pods/p"), Sample::Pod, Some("p")),
        p(format!("{ns}/pods/ghost"), Sample::Pod, Some("ghost")),
        p(format!("{ns}/pods/p/status"), Sample::PodStatus, Some("p")),
        p(format!("{ns}/pods/p/binding"), Sample::Binding, Some("p")),
        p(format!("{ns}/pods/p/log"), Sample::Nothing, Some("p")),
        p(format!("{ns}/pods/p/exec"), Sample::Nothing, Some("p")),
        p(format!("{ns}/pods/ghost/log"), Sample::Nothing, Some("ghost")),
        p(format!("{ns}/configmaps"), Sample::ConfigMap, None),
        p(format!("{ns}/configmaps/cm"), Sample::ConfigMap, Some("cm")),
        p(format!("{ns}/secrets"), Sample::Secret, None),
        p(format!("{ns}/secrets/s"), Sample::Secret, Some("s")),
        p(format!("{ns}/services"), Sample::Service, None),
        p(format!("{ns}/services/svc"), Sample::Service, Some("svc")),
        p(format!("{ns}/services/svc/status"), Sample::Service, Some("svc")),
        p(format!("{ns}/events"), Sample::Event, None),
        p(format!("{ns}/events/ev"), Sample::Event, Some("ev")),
        p(
            "/api/v1/namespaces/nope/configmaps/cm".into(),
            Sample::ConfigMap,
            Some("cm"),
        ),
        p("/api/v1/pods".into(), Sample::Pod, None),
        p("/api/v1/configmaps".into(), Sample::ConfigMap, None),
        // Core, cluster-scoped.
        p("/api/v1/namespaces".into(), Sample::Namespace, None),
        p(ns.clone(), Sample::Namespace, Some(FUZZ_NS)),
        p(format!("{ns}/status"), Sample::Namespace, Some(FUZZ_NS)),
        p(format!("{ns}/finalize"), Sample::NamespaceFinalize, Some(FUZZ_NS)),
        p("/api/v1/nodes".into(), Sample::Node, None),
        p(format!("/api/v1/nodes/{node}"), Sample::Node, Some(node_name)),
        p(format!("/api/v1/nodes/{node}/status"), Sample::Node, Some(node_name)),
        p(
            format!("/api/v1/nodes/{node}/proxy/metrics"),
            Sample::Nothing,
            Some(node_name),
        ),
        // Named groups.
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments"),
            Sample::Deployment,
            None,
        ),
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments/d"),
            Sample::Deployment,
            Some("d"),
        ),
        p(
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments/d/status"),
            Sample::Deployment,
            Some("d"),
        ),
        p("/apis/apps/v1/deployments".into(), Sample::Deployment, None),
        p(
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases"),
            Sample::Lease,
            None,
        ),
        p(
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases/l"),
            Sample::Lease,
            Some("l"),
        ),
        p(
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices"),
            Sample::EndpointSlice,
            None,
        ),
        p(
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices/es"),
            Sample::EndpointSlice,
            Some("es"),
        ),
        p("/apis/node.k8s.io/v1/runtimeclasses".into(), Sample::RuntimeClass, None),
        p(
            "/apis/node.k8s.io/v1/runtimeclasses/rc".into(),
            Sample::RuntimeClass,
            Some("rc"),
        ),
        // Discovery, OpenAPI, health, unknown.
        p("/api".into(), Sample::Nothing, None),
        p("/api/v1".into(), Sample::Nothing, None),
        p("/apis".into(), Sample::Nothing, None),
        p("/apis/apps".into(), Sample::Nothing, None),
        p("/apis/apps/v1".into(), Sample::Nothing, None),
        p("/version".into(), Sample::Nothing, None),
        p("/openapi/v3".into(), Sample::Nothing, None),
        p("/openapi/v3/api/v1".into(), Sample::Nothing, None),
        p("/healthz".into(), Sample::Nothing, None),
        p("/api/v1/widgets".into(), Sample::Nothing, None),
        p(format!("{ns}/pods/p/teleport"), Sample::Nothing, Some("p")),
        p("/nonsense".into(), Sample::Nothing, None),
    ]
}

/// One request of the batch.
#[derive(Debug, Clone)]
struct FuzzRequest {
    method: Method,
    /// Path and query.
    path: String,
    content_type: Option<&'static str>,
    accept: Option<&'static str>,
    body: bytes::Bytes,
    body_kind: &'static str,
}

impl FuzzRequest {
    fn describe(&self) -> String {
        let prefix: String = String::from_utf8_lossy(&self.body[..self.body.len().min(120)])
            .chars()
            .map(|c| if c.is_control() { '·' } else { c })
            .collect();
        format!(
            "{} {} content-type={:?} accept={:?} body[{}; {} bytes]={prefix:?}",
            self.method,
            self.path,
            self.content_type.unwrap_or("(none)"),
            self.accept.unwrap_or("(none)"),
            self.body_kind,
            self.body.len()
        )
    }
}

/// A body of the chosen kind for a path.
fn fuzz_body(rng: &mut XorShift, target: &FuzzPath, content_type: &str, node: &str) -> (&'static str, Vec<u8>) {
    let name = target.name.clone().unwrap_or_else(|| format!("fz-{}", rng.below(1000)));
    let mut sample = sample_object(target.sample, &name, node);
    if content_type == "application/json-patch+json" && rng.chance(70) {
        sample = json!([{"op": "replace", "path": "/metadata/labels", "value": {"fz": "1"}},
                        {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    }
    let yaml = content_type.contains("yaml") && rng.chance(70);
    let render = |v: &Value| -> Vec<u8> {
        if yaml {
            to_yaml(v).into_bytes()
        } else {
            v.to_string().into_bytes()
        }
    };
    let roll = rng.below(100);
    match roll {
        0..=13 => {
            let len = if rng.chance(80) {
                rng.below(512)
            } else {
                rng.below(16 * 1024)
            };
            ("random bytes", rng.bytes(len))
        }
        14..=33 => {
            let full = render(&sample);
            let cut = rng.below(full.len().max(1));
            ("truncated object", full[..cut].to_vec())
        }
        34..=43 => {
            let mut bytes = render(&sample);
            for _ in 0..=rng.below(8) {
                let at = rng.below(bytes.len().max(1));
                if let Some(b) = bytes.get_mut(at) {
                    *b = rng.bytes(1)[0];
                }
            }
            ("mutated object", bytes)
        }
        44..=53 => ("valid object", render(&sample)),
        54..=67 => ("wrong shape", rng.pick(WRONG_SHAPES).as_bytes().to_vec()),
        68..=79 => {
            let shape = *rng.pick::<&str>(WRONG_SHAPES);
            let shape: Value = serde_json::from_str(shape).unwrap_or(Value::Null);
            overlay(&mut sample, &shape);
            ("object with a wrong-shape part", render(&sample))
        }
        80..=85 => ("deep nesting", deep_body(rng)),
        86..=91 => ("huge strings", huge_body(rng, &sample)),
        92..=96 => ("nasty literal", rng.pick(NASTY).as_bytes().to_vec()),
        _ => ("empty", if rng.chance(50) { Vec::new() } else { b" \n\t ".to_vec() }),
    }
}

fn deep_body(rng: &mut XorShift) -> Vec<u8> {
    const DEPTH: usize = 10_000;
    match rng.below(8) {
        0 => "[".repeat(DEPTH),
        1 => format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH)),
        2 => format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH)),
        3 => format!("{}x", "- ".repeat(DEPTH)),
        4 => "{a: ".repeat(DEPTH),
        5 => (0..600).map(|i| format!("{}k:\n", " ".repeat(i))).collect(),
        // Deep, but within serde_json's recursion limit: reaches the handlers.
        6 => format!(
            r#"{{"metadata":{{"name":"deep"}},"spec":{}{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        ),
        _ => format!(
            r#"{{"metadata":{{"name":"deep","labels":{{"a":"b"}}}},"data":{}"x"{}}}"#,
            r#"{"a":"#.repeat(120),
            "}".repeat(120)
        ),
    }
    .into_bytes()
}

fn huge_body(rng: &mut XorShift, sample: &Value) -> Vec<u8> {
    let size = *rng.pick(&[64 * 1024, 512 * 1024, 1024 * 1024, MAX_BODY - 1024, MAX_BODY + 10]);
    // Built by splicing, not by serialising: escaping megabytes is slow in a debug build.
    let big = "x".repeat(size);
    match rng.below(7) {
        0 => format!(r#"{{"metadata":{{"name":"{big}"}}}}"#),
        1 => {
            // Valid but for a huge label; the fixed name keeps at most one such object per kind.
            let mut v = sample.clone();
            overlay(
                &mut v,
                &json!({"metadata": {"name": "huge", "labels": {"k": "@HUGE@"}}}),
            );
            v.to_string().replacen("@HUGE@", &big, 1)
        }
        2 => format!(r#"{{"metadata":{{"name":"huge"}},"data":{{"k":"{big}"}}}}"#),
        3 => format!(r#"{{"metadata":{{"name":"huge"}},"{big}":1}}"#),
        4 => format!(r#""{big}""#),
        5 => format!("[{}0]", "0,".repeat(size / 2)),
        _ => "1".repeat(size),
    }
    .into_bytes()
}

/// Options of the log handler, with numbers and times out of range.
const LOG_FRAGMENTS: &[&str] = &[
    "container=c",
    "container=zz",
    "tailLines=-1",
    "tailLines=0",
    "tailLines=99999999999999999999",
    "limitBytes=0",
    "limitBytes=-7",
    "limitBytes=18446744073709551615",
    "sinceSeconds=-5",
    "sinceSeconds=0",
    "sinceSeconds=99999999999999999",
    "sinceSeconds=9000000000000000",
    "sinceSeconds=-9223372036854775808",
    "sinceSeconds=9223372036854775807",
    "sinceTime=garbage",
    "sinceTime=9999-12-31T23:59:59Z",
    "sinceTime=0001-01-01T00:00:00Z",
    "sinceTime=2026-01-01T00:00:00%2B25:00",
    "timestamps=1",
    "follow=1",
    "previous=1",
];

/// Options of the exec handler.
const EXEC_FRAGMENTS: &[&str] = &[
    "command=ls",
    "command=",
    "command=%00",
    "container=c",
    "container=zz",
    "stdin=1",
    "stdout=0",
    "stderr=0",
    "tty=1",
];

/// Options of deletes.
const DELETE_FRAGMENTS: &[&str] = &[
    "gracePeriodSeconds=x",
    "gracePeriodSeconds=-1",
    "gracePeriodSeconds=0",
    "gracePeriodSeconds=1",
    "gracePeriodSeconds=99999999999999999",
    "gracePeriodSeconds=9223372036854775807",
    "gracePeriodSeconds=-9223372036854775808",
    "propagationPolicy=Bogus",
    "dryRun=All",
    "labelSelector=a%20in%20(",
    "labelSelector=app%3Dfz",
    "fieldSelector=spec.foo%3D1",
];

fn fuzz_query(rng: &mut XorShift, method: &Method, path: &str) -> String {
    if rng.chance(40) {
        return String::new();
    }
    let special: &[&str] = if path.ends_with("/log") {
        LOG_FRAGMENTS
    } else if path.ends_with("/exec") {
        EXEC_FRAGMENTS
    } else if *method == Method::DELETE {
        DELETE_FRAGMENTS
    } else {
        QUERY_FRAGMENTS
    };
    let mut parts: Vec<&str> = (0..=rng.below(4))
        .map(|_| {
            if rng.chance(60) {
                *rng.pick(special)
            } else {
                *rng.pick(QUERY_FRAGMENTS)
            }
        })
        .collect();
    if parts.iter().any(|p| p.starts_with("watch")) || rng.chance(5) {
        // Watches stream: keep them short (the last occurrence of a parameter wins).
        parts.push("timeoutSeconds=1");
    }
    format!("?{}", parts.join("&"))
}

fn fuzz_requests(seed: u64, count: usize, node: &str) -> Vec<FuzzRequest> {
    let mut rng = XorShift(seed);
    let paths = fuzz_paths(node);
    let methods = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let target = &paths[i % paths.len()];
        let method = match (i / paths.len()) % 5 {
            _ if rng.chance(2) => {
                Method::from_bytes(rng.pick(&["HEAD", "OPTIONS", "FUZZ"]).as_bytes()).unwrap_or(Method::OPTIONS)
            }
            n => methods[n].clone(),
        };
        let content_type = if rng.chance(75) {
            match method {
                Method::PATCH => *rng.pick(PATCH_TYPES),
                Method::GET | Method::HEAD => *rng.pick(&["", "application/json"]),
                _ => *rng.pick(&["application/json", "application/yaml"]),
            }
        } else {
            *rng.pick(CONTENT_TYPES)
        };
        let (body_kind, body) = if matches!(method, Method::GET | Method::HEAD) && rng.chance(70) {
            ("none", Vec::new())
        } else {
            fuzz_body(&mut rng, target, content_type, node)
        };
        let mut query = fuzz_query(&mut rng, &method, &target.path);
        if content_type == "application/apply-patch+yaml" && rng.chance(60) {
            query.push_str(if query.is_empty() {
                "?fieldManager=fz"
            } else {
                "&fieldManager=fz"
            });
        }
        let accept = if rng.chance(80) { None } else { Some(*rng.pick(ACCEPTS)) };
        out.push(FuzzRequest {
            method,
            path: format!("{}{query}", target.path),
            content_type: (!content_type.is_empty()).then_some(content_type),
            accept,
            body: body.into(),
            body_kind,
        });
    }
    out
}

/// How the server answered one request.
enum Answer {
    Response {
        code: u16,
        content_type: String,
        body: Vec<u8>,
    },
    Failure(String),
}

async fn fire(client: reqwest::Client, base: String, token: String, request: FuzzRequest) -> (FuzzRequest, Answer) {
    let mut rb = client
        .request(request.method.clone(), format!("{base}{}", request.path))
        .bearer_auth(token)
        .body(request.body.clone());
    if let Some(ct) = request.content_type {
        rb = rb.header(CONTENT_TYPE, ct);
    }
    if let Some(accept) = request.accept {
        rb = rb.header(ACCEPT, accept);
    }
    let exchange = async {
        let mut resp = rb
            .send()
            .await
            .map_err(|e| format!("no response: {}", error_chain(&e)))?;
        let code = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        if (200..300).contains(&code) {
            // Watches and followed logs stream: take what arrives in a short window.
            let window = tokio::time::Instant::now() + Duration::from_secs(2);
            loop {
                match tokio::time::timeout_at(window, resp.chunk()).await {
                    Err(_) | Ok(Ok(None)) => break,
                    Ok(Ok(Some(chunk))) => {
                        let room = 4096usize.saturating_sub(body.len());
                        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    }
                    Ok(Err(e)) => return Err(format!("{code} body broke off: {}", error_chain(&e))),
                }
            }
        } else {
            body = tokio::time::timeout(Duration::from_secs(10), resp.bytes())
                .await
                .map_err(|_| format!("{code} body did not complete within 10s"))?
                .map_err(|e| format!("{code} body broke off: {}", error_chain(&e)))?
                .to_vec();
        }
        Ok::<_, String>((code, content_type, body))
    };
    let answer = match tokio::time::timeout(Duration::from_secs(30), exchange).await {
        Err(_) => Answer::Failure("no answer within 30s".into()),
        Ok(Err(e)) => Answer::Failure(e),
        Ok(Ok((code, content_type, body))) => Answer::Response {
            code,
            content_type,
            body,
        },
    };
    (request, answer)
}

/// The name of the fuzzed server's threads.
const SERVER_THREADS: &str = "fuzzed-server";

/// Panics raised on the fuzzed server's threads.
static SERVER_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A runtime of its own for the fuzzed cluster, so that a panic on one of its threads is
/// the server's (and not another test's or the client's).
struct ServerRuntime(Option<tokio::runtime::Runtime>);

impl ServerRuntime {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(SERVER_THREADS)
            .enable_all()
            .build()
            .expect("server runtime");
        Self(Some(rt))
    }

    /// Starts a cluster whose tasks all run on this runtime.
    async fn start_cluster(&self) -> Cluster {
        let rt = self.0.as_ref().expect("the runtime is up");
        rt.spawn(common::start()).await.expect("the cluster starts")
    }
}

impl Drop for ServerRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

fn record_server_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            if thread.name() == Some(SERVER_THREADS) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()))
                    .unwrap_or_default();
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                SERVER_PANICS
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(format!("{message} at {at}"));
            }
            previous(info);
        }));
    });
}

fn body_prefix(body: &[u8]) -> String {
    String::from_utf8_lossy(&body[..body.len().min(200)]).replace('\n', "⏎")
}

/// Creates the objects the batch's item paths point at, with `p` bound and running.
async fn seed_fuzz_objects(api: &Api, node: &str) {
    let ns = format!("/api/v1/namespaces/{FUZZ_NS}");
    api.create("/api/v1/namespaces", sample_object(Sample::Namespace, FUZZ_NS, node))
        .await;
    api.create(&format!("{ns}/pods"), pod("p")).await;
    make_running(api, FUZZ_NS, "p").await;
    let seeds = [
        ("configmaps", Sample::ConfigMap, "cm"),
        ("secrets", Sample::Secret, "s"),
        ("services", Sample::Service, "svc"),
        ("events", Sample::Event, "ev"),
    ];
    for (plural, sample, name) in seeds {
        api.create(&format!("{ns}/{plural}"), sample_object(sample, name, node))
            .await;
    }
    let named = [
        (
            format!("/apis/apps/v1/namespaces/{FUZZ_NS}/deployments"),
            Sample::Deployment,
            "d",
        ),
        (
            format!("/apis/coordination.k8s.io/v1/namespaces/{FUZZ_NS}/leases"),
            Sample::Lease,
            "l",
        ),
        (
            format!("/apis/discovery.k8s.io/v1/namespaces/{FUZZ_NS}/endpointslices"),
            Sample::EndpointSlice,
            "es",
        ),
        (
            "/apis/node.k8s.io/v1/runtimeclasses".to_string(),
            Sample::RuntimeClass,
            "rc",
        ),
    ];
    for (collection, sample, name) in named {
        api.create(&collection, sample_object(sample, name, node)).await;
    }
}

/// What is wrong with the server after the batch: it must still be ready and serve a normal
/// create and get.
async fn still_serving(api: &Api) -> Vec<String> {
    let mut problems = Vec::new();
    let ready = api.get("/readyz").await;
    if (ready.code, ready.text().as_str()) != (200, "ok") {
        problems.push(format!(
            "after the batch /readyz answered {} {}",
            ready.code,
            ready.text()
        ));
    }
    let ns = api
        .send_json(
            Method::POST,
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "after-fuzz"}}),
        )
        .await;
    let mut cm = configmap("after");
    cm["data"] = json!({"key": "value"});
    let created = api
        .send_json(Method::POST, "/api/v1/namespaces/after-fuzz/configmaps", &cm)
        .await;
    let got = api.get("/api/v1/namespaces/after-fuzz/configmaps/after").await;
    let data = serde_json::from_slice::<Value>(&got.body)
        .map(|v| v["data"].clone())
        .ok();
    if (ns.code, created.code, got.code) != (201, 201, 200) || data != Some(json!({"key": "value"})) {
        problems.push(format!(
            "after the batch a create and get round-trip failed: namespace {} {}, configmap {} {}, get {} {}",
            ns.code,
            ns.text(),
            created.code,
            created.text(),
            got.code,
            got.text()
        ));
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_batch_never_breaks_the_server() {
    record_server_panics();
    let server = ServerRuntime::new();
    let api = Api::with(server.start_cluster().await);
    let node = api
        .cluster
        .node_ips()
        .first()
        .map(|(n, _)| n.clone())
        .expect("the cluster has a node");
    seed_fuzz_objects(&api, &node).await;

    let generating = std::time::Instant::now();
    let requests = fuzz_requests(0x5EED_F00D_CAFE_D00D, FUZZ_REQUESTS, &node);
    let generated = generating.elapsed();
    // Deletes go last, so the batch's other requests meet the seeded objects.
    let (deletes, others): (Vec<_>, Vec<_>) = requests.into_iter().partition(|r| r.method == Method::DELETE);
    let started = std::time::Instant::now();
    let base = api.cluster.url().to_string();
    let token = api.cluster.token().to_string();
    let mut answers = Vec::new();
    for phase in [others, deletes] {
        let batch: Vec<(FuzzRequest, Answer)> = futures::stream::iter(
            phase
                .into_iter()
                .map(|r| fire(api.client.clone(), base.clone(), token.clone(), r)),
        )
        .buffer_unordered(FUZZ_CONCURRENCY)
        .collect()
        .await;
        answers.extend(batch);
    }
    let elapsed = started.elapsed();

    let mut defects = Vec::new();
    let mut codes: BTreeMap<u16, usize> = BTreeMap::new();
    for (request, answer) in &answers {
        match answer {
            Answer::Failure(why) => defects.push(format!("{why}\n    request: {}", request.describe())),
            Answer::Response {
                code,
                content_type,
                body,
            } => {
                *codes.entry(*code).or_default() += 1;
                if *code >= 500 {
                    defects.push(format!(
                        "{code} answered\n    request: {}\n    response: {}",
                        request.describe(),
                        body_prefix(body)
                    ));
                } else if !(200..300).contains(code)
                    && request.method != Method::HEAD
                    && content_type.starts_with("application/json")
                    && let Some(problem) = status_problem(*code, body)
                {
                    defects.push(format!(
                        "{code} without a proper Status ({problem})\n    request: {}\n    response: {}",
                        request.describe(),
                        body_prefix(body)
                    ));
                }
            }
        }
    }
    defects.extend(still_serving(&api).await);
    let panics = SERVER_PANICS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for p in &panics {
        defects.push(format!("server panic: {p}"));
    }
    println!(
        "fuzz batch: {} requests generated in {:.1}s, sent in {:.1}s; status codes {codes:?}",
        answers.len(),
        generated.as_secs_f64(),
        elapsed.as_secs_f64()
    );
    let past_routing = answers
        .iter()
        .filter(|(_, a)| !matches!(a, Answer::Response { code: 405, .. }))
        .count();
    assert!(
        past_routing >= 2000,
        "only {past_routing} requests got past method routing"
    );
    assert!(
        defects.is_empty(),
        "{} of {} fuzz requests went wrong:\n{}",
        defects.len(),
        answers.len(),
        defects.join("\n")
    );
}
