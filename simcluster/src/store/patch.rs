//! PATCH bodies applied to stored JSON objects: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and Kubernetes strategic merge patch.

use serde_json::{Map, Value};

use ListStrategy::{MergeByKey, Set};

/// Why a patch could not be applied.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PatchError {
    /// The patch body is not of the right shape (e.g. a JSON patch that is not an array of
    /// operations, a strategic patch that is not an object).
    #[error("{0}")]
    Malformed(String),
    /// The patch is well-formed but cannot be applied (e.g. a json-patch `test` failed, a path
    /// does not exist, `$patch: delete` on something odd).
    #[error("{0}")]
    Failed(String),
}

// ---------------------------------------------------------------------------
// RFC 7386 merge patch
// ---------------------------------------------------------------------------

/// RFC 7386 JSON merge patch: `null` deletes, objects merge recursively, everything else
/// replaces; a non-object patch replaces the target.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else { return };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.as_str()).or_insert(Value::Null), value);
        }
    }
}

// ---------------------------------------------------------------------------
// RFC 6902 JSON patch
// ---------------------------------------------------------------------------

/// RFC 6902 JSON patch. The patch is applied atomically: on error `target` is left unchanged.
/// Errors name the failing operation's index and path, e.g.
/// `json patch operation 1 (replace /spec/x): path not found`.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::Malformed(
            "a json patch must be an array of operations".into(),
        ));
    };
    let ops = ops
        .iter()
        .enumerate()
        .map(|(i, op)| {
            serde_json::from_value::<json_patch::PatchOperation>(op.clone())
                .map_err(|e| PatchError::Malformed(format!("json patch operation {i}: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Work on a copy and commit only on success, instead of relying on the crate's undo log.
    let mut work = target.clone();
    json_patch::patch_unsafe(&mut work, &ops).map_err(|e| describe_json_patch_error(&ops, &e))?;
    *target = work;
    Ok(())
}

fn describe_json_patch_error(ops: &[json_patch::PatchOperation], e: &json_patch::PatchError) -> PatchError {
    use json_patch::{PatchErrorKind as Kind, PatchOperation as Op};
    let op = ops.get(e.operation);
    let name = match op {
        Some(Op::Add(_)) => "add",
        Some(Op::Remove(_)) => "remove",
        Some(Op::Replace(_)) => "replace",
        Some(Op::Move(_)) => "move",
        Some(Op::Copy(_)) => "copy",
        Some(Op::Test(_)) => "test",
        None => "?",
    };
    let from = match op {
        Some(Op::Move(m)) => m.from.as_str(),
        Some(Op::Copy(c)) => c.from.as_str(),
        _ => "",
    };
    let reason = match &e.kind {
        Kind::TestFailed => "test failed: value did not match".to_owned(),
        Kind::InvalidPointer => "path not found".to_owned(),
        Kind::InvalidFromPointer => format!("from path {from} not found"),
        Kind::CannotMoveInsideItself => format!("cannot move {from} inside itself"),
        other => other.to_string(),
    };
    PatchError::Failed(format!(
        "json patch operation {} ({name} {}): {reason}",
        e.operation, e.path
    ))
}

// ---------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------

/// How a list field is merged by a strategic merge patch.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ListStrategy {
    /// `patchStrategy: merge` with `patchMergeKey`: elements are matched by this key.
    MergeByKey(&'static str),
    /// `patchStrategy: merge` on a list of primitives: a set union.
    Set,
    /// No strategy: the patch's list replaces the target's.
    Replace,
}

/// One row of the strategic-merge table: the list field `field`, optionally only when its
/// parent field is `parent` (`""` is the object's top level; for fields inside list elements
/// the parent is the list field, e.g. `containers`) and only for objects of kind `kind`.
struct ListRule {
    field: &'static str,
    parent: Option<&'static str>,
    kind: Option<&'static str>,
    strategy: ListStrategy,
}

const fn rule(
    field: &'static str,
    parent: Option<&'static str>,
    kind: Option<&'static str>,
    strategy: ListStrategy,
) -> ListRule {
    ListRule {
        field,
        parent,
        kind,
        strategy,
    }
}

/// The strategic-merge table (from the `patchStrategy`/`patchMergeKey` tags of the built-in
/// types). The first matching row wins; lists not listed here are replaced wholesale
/// (e.g. `tolerations`, `args`, `command`, `taints`, `subsets`).
///
/// | field | parent | kind | strategy |
/// |---|---|---|---|
/// | `containers`, `initContainers`, `ephemeralContainers` | any | any | merge by `name` |
/// | `ports` | `containers`, `initContainers`, `ephemeralContainers` | any | merge by `containerPort` |
/// | `ports` | `spec` | `Service` | merge by `port` |
/// | `volumes`, `env`, `imagePullSecrets`, `resourceClaims` | any | any | merge by `name` |
/// | `volumeMounts` | any | any | merge by `mountPath` |
/// | `volumeDevices` | any | any | merge by `devicePath` |
/// | `hostAliases`, `podIPs`, `hostIPs` | any | any | merge by `ip` |
/// | `topologySpreadConstraints` | any | any | merge by `topologyKey` |
/// | `conditions` | any | any | merge by `type` |
/// | `addresses` | `status` | `Node` | merge by `type` |
/// | `ownerReferences` | `metadata` | any | merge by `uid` |
/// | `finalizers` | `metadata` | any | set of primitives |
/// | `secrets` | top level | `ServiceAccount` | merge by `name` |
const LIST_RULES: &[ListRule] = &[
    rule("containers", None, None, MergeByKey("name")),
    rule("initContainers", None, None, MergeByKey("name")),
    rule("ephemeralContainers", None, None, MergeByKey("name")),
    rule("ports", Some("containers"), None, MergeByKey("containerPort")),
    rule("ports", Some("initContainers"), None, MergeByKey("containerPort")),
    rule("ports", Some("ephemeralContainers"), None, MergeByKey("containerPort")),
    rule("ports", Some("spec"), Some("Service"), MergeByKey("port")),
    rule("volumes", None, None, MergeByKey("name")),
    rule("env", None, None, MergeByKey("name")),
    rule("imagePullSecrets", None, None, MergeByKey("name")),
    rule("resourceClaims", None, None, MergeByKey("name")),
    rule("volumeMounts", None, None, MergeByKey("mountPath")),
    rule("volumeDevices", None, None, MergeByKey("devicePath")),
    rule("hostAliases", None, None, MergeByKey("ip")),
    rule("podIPs", None, None, MergeByKey("ip")),
    rule("hostIPs", None, None, MergeByKey("ip")),
    rule("topologySpreadConstraints", None, None, MergeByKey("topologyKey")),
    rule("conditions", None, None, MergeByKey("type")),
    rule("addresses", Some("status"), Some("Node"), MergeByKey("type")),
    rule("ownerReferences", Some("metadata"), None, MergeByKey("uid")),
    rule("finalizers", Some("metadata"), None, Set),
    rule("secrets", Some(""), Some("ServiceAccount"), MergeByKey("name")),
];

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

fn is_directive(key: &str) -> bool {
    key == PATCH
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Where the merge currently is: the object kind, the field being merged and its parent chain.
/// List elements share their list's context, so a container's `ports` has parent `containers`.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    kind: &'a str,
    field: &'a str,
    up: Option<&'a Ctx<'a>>,
}

impl<'a> Ctx<'a> {
    fn child(&'a self, field: &'a str) -> Ctx<'a> {
        Ctx {
            kind: self.kind,
            field,
            up: Some(self),
        }
    }

    fn strategy(&self) -> ListStrategy {
        let parent = self.up.map_or("", |p| p.field);
        LIST_RULES
            .iter()
            .find(|r| {
                r.field == self.field && r.parent.is_none_or(|p| p == parent) && r.kind.is_none_or(|k| k == self.kind)
            })
            .map_or(ListStrategy::Replace, |r| r.strategy)
    }

    /// A dotted path for error messages.
    fn path(&self) -> String {
        match self.up {
            Some(up) if !up.field.is_empty() => format!("{}.{}", up.path(), self.field),
            _ => self.field.to_owned(),
        }
    }
}

/// What the parent must do with a merged map.
#[derive(Debug, PartialEq)]
enum Outcome {
    Keep,
    /// `$patch: delete`: remove the map from its parent.
    Delete,
}

/// Strategic merge patch for the built-in Kubernetes kinds; `kind` is the object's kind (e.g.
/// `Pod`, `Deployment`, `Service`, `Node`) and selects kind-specific merge keys.
///
/// Maps merge recursively (`null` deletes a key), lists merge by their merge key, as sets
/// (`metadata.finalizers`) or are replaced (see the table on `LIST_RULES`), and the
/// `$patch`, `$retainKeys`, `$setElementOrder/…` and `$deleteFromPrimitiveList/…` directives
/// are honoured and never left in the result. On error `target` is left unchanged.
pub fn strategic_merge(target: &mut Value, patch: &Value, kind: &str) -> Result<(), PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::Malformed(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    let mut work = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let ctx = Ctx {
        kind,
        field: "",
        up: None,
    };
    if merge_map(&mut work, patch, &ctx)? == Outcome::Delete {
        return Err(PatchError::Failed(
            "$patch: delete cannot delete the whole object".into(),
        ));
    }
    *target = Value::Object(work);
    Ok(())
}

fn malformed(ctx: &Ctx<'_>, what: impl std::fmt::Display) -> PatchError {
    PatchError::Malformed(format!("strategic merge patch at {:?}: {what}", ctx.path()))
}

fn failed(ctx: &Ctx<'_>, what: impl std::fmt::Display) -> PatchError {
    PatchError::Failed(format!("strategic merge patch at {:?}: {what}", ctx.path()))
}

/// Merges `patch` into the map `target`, honouring map-level directives.
fn merge_map(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    ctx: &Ctx<'_>,
) -> Result<Outcome, PatchError> {
    match patch.get(PATCH) {
        None => {}
        Some(Value::String(s)) if s == "merge" => {}
        Some(Value::String(s)) if s == "replace" => target.clear(),
        Some(Value::String(s)) if s == "delete" => return Ok(Outcome::Delete),
        Some(other) => return Err(malformed(ctx, format_args!("unknown $patch directive {other}"))),
    }
    for (key, values) in prefixed(patch, DELETE_FROM_PRIMITIVE_LIST) {
        let values = directive_list(values, key, ctx)?;
        if let Some(Value::Array(list)) = target.get_mut(key) {
            list.retain(|v| !values.contains(v));
        }
    }
    for (key, value) in patch.iter().filter(|(k, _)| !is_directive(k)) {
        merge_entry(target, key, value, &ctx.child(key))?;
    }
    for (key, order) in prefixed(patch, SET_ELEMENT_ORDER) {
        let order = directive_list(order, key, ctx)?;
        let field_ctx = ctx.child(key);
        if let Some(Value::Array(list)) = target.get_mut(key) {
            reorder(list, order, field_ctx.strategy());
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let retain = directive_list(retain, RETAIN_KEYS, ctx)?
            .iter()
            .map(|k| {
                k.as_str()
                    .ok_or_else(|| malformed(ctx, "$retainKeys must be a list of strings"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        target.retain(|k, _| retain.contains(&k.as_str()));
    }
    Ok(Outcome::Keep)
}

/// Directive entries `prefix<field>: value` of a patch map, as `(field, value)`.
fn prefixed<'p>(patch: &'p Map<String, Value>, prefix: &'p str) -> impl Iterator<Item = (&'p str, &'p Value)> {
    patch
        .iter()
        .filter_map(move |(k, v)| Some((k.strip_prefix(prefix)?, v)))
}

fn directive_list<'p>(v: &'p Value, key: &str, ctx: &Ctx<'_>) -> Result<&'p [Value], PatchError> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| malformed(ctx, format_args!("directive for {key:?} must be a list")))
}

/// Merges one patch entry into `target[key]`: `null` deletes, a `$patch: delete` map removes.
fn merge_entry(target: &mut Map<String, Value>, key: &str, patch: &Value, ctx: &Ctx<'_>) -> Result<(), PatchError> {
    if patch.is_null() {
        target.remove(key);
        return Ok(());
    }
    let slot = target.entry(key).or_insert(Value::Null);
    if merge_value(slot, patch, ctx)? == Outcome::Delete {
        target.remove(key);
    }
    Ok(())
}

/// Merges any patch value into `target`; when the types differ the target starts out empty.
fn merge_value(target: &mut Value, patch: &Value, ctx: &Ctx<'_>) -> Result<Outcome, PatchError> {
    match patch {
        Value::Object(patch) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            match target {
                Value::Object(map) => merge_map(map, patch, ctx),
                _ => Ok(Outcome::Keep),
            }
        }
        Value::Array(patch) => {
            if !target.is_array() {
                *target = Value::Array(Vec::new());
            }
            if let Value::Array(list) = target {
                merge_list(list, patch, ctx)?;
            }
            Ok(Outcome::Keep)
        }
        scalar => {
            *target = scalar.clone();
            Ok(Outcome::Keep)
        }
    }
}

/// The value of an element's `$patch` directive, if it is a directive-bearing map.
fn element_directive(v: &Value) -> Option<&Value> {
    v.as_object().and_then(|m| m.get(PATCH))
}

/// Merges a patch list into `target` according to the field's strategy.
fn merge_list(target: &mut Vec<Value>, patch: &[Value], ctx: &Ctx<'_>) -> Result<(), PatchError> {
    let replace_all = patch
        .iter()
        .any(|v| element_directive(v).and_then(Value::as_str) == Some("replace"));
    let strategy = ctx.strategy();
    if replace_all || strategy == ListStrategy::Replace {
        target.clear();
    }
    let mut elements = patch
        .iter()
        .filter(|v| !(replace_all && v.as_object().is_some_and(|m| m.len() == 1 && m.contains_key(PATCH))));
    match strategy {
        ListStrategy::MergeByKey(key) if !replace_all => {
            elements.try_for_each(|el| merge_keyed_element(target, el, key, ctx))
        }
        ListStrategy::Set if !replace_all => {
            for el in elements {
                if !target.contains(el) {
                    target.push(el.clone());
                }
            }
            Ok(())
        }
        _ => elements.try_for_each(|el| push_fresh(target, el, ctx)),
    }
}

/// Appends a patch element to a list, processing (and stripping) any directives inside it.
fn push_fresh(target: &mut Vec<Value>, element: &Value, ctx: &Ctx<'_>) -> Result<(), PatchError> {
    let mut fresh = Value::Null;
    if merge_value(&mut fresh, element, ctx)? == Outcome::Keep {
        target.push(fresh);
    }
    Ok(())
}

/// Merges one element of a keyed list: into the existing element with the same key, or appended.
fn merge_keyed_element(target: &mut Vec<Value>, element: &Value, key: &str, ctx: &Ctx<'_>) -> Result<(), PatchError> {
    let Value::Object(map) = element else {
        return Err(malformed(
            ctx,
            format_args!("list elements must be objects with merge key {key:?}, got {element}"),
        ));
    };
    let Some(id) = map.get(key) else {
        return Err(match map.get(PATCH) {
            Some(_) => failed(
                ctx,
                format_args!("$patch directive on a list element without merge key {key:?}"),
            ),
            None => malformed(ctx, format_args!("list element {element} has no merge key {key:?}")),
        });
    };
    let same = |v: &Value| v.get(key) == Some(id);
    if element_directive(element).and_then(Value::as_str) == Some("delete") {
        target.retain(|v| !same(v));
        return Ok(());
    }
    match target.iter_mut().find(|v| same(v)) {
        Some(existing) => merge_value(existing, element, ctx).map(drop),
        None => push_fresh(target, element, ctx),
    }
}

/// Reorders `list` so the elements named by `order` come first, in that order, and the rest
/// follow in their current order. Keyed lists match on the merge key, others by value.
fn reorder(list: &mut Vec<Value>, order: &[Value], strategy: ListStrategy) {
    let same = |a: &Value, b: &Value| match strategy {
        ListStrategy::MergeByKey(key) => a.get(key).is_some_and(|id| b.get(key) == Some(id)),
        _ => a == b,
    };
    let mut rest = std::mem::take(list);
    for wanted in order {
        let (hit, miss): (Vec<_>, Vec<_>) = rest.into_iter().partition(|v| same(v, wanted));
        list.extend(hit);
        rest = miss;
    }
    list.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn smp(target: Value, patch: Value, kind: &str) -> Value {
        let mut t = target;
        strategic_merge(&mut t, &patch, kind).expect("patch applies");
        t
    }

    fn pod_spec(containers: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[rstest]
    #[case::scalar_replaces(json!({"a": 1, "b": 2}), json!({"a": 3}), json!({"a": 3, "b": 2}))]
    #[case::map_merges(json!({"m": {"x": 1}}), json!({"m": {"y": 2}}), json!({"m": {"x": 1, "y": 2}}))]
    #[case::null_deletes(json!({"m": {"x": 1, "y": 2}}), json!({"m": {"x": null}}), json!({"m": {"y": 2}}))]
    #[case::null_on_absent(json!({"a": 1}), json!({"z": null}), json!({"a": 1}))]
    #[case::type_change(json!({"a": [1]}), json!({"a": {"b": 1}}), json!({"a": {"b": 1}}))]
    #[case::new_map_is_cleaned(json!({}), json!({"m": {"a": 1, "b": null, "$patch": "merge"}}), json!({"m": {"a": 1}}))]
    fn maps(#[case] target: Value, #[case] patch: Value, #[case] expected: Value) {
        assert_eq!(smp(target, patch, "ConfigMap"), expected);
    }

    #[rstest]
    #[case::merge_existing(
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
        json!([{"name": "b", "image": "b:2"}]),
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])
    )]
    #[case::append_new_in_patch_order(
        json!([{"name": "a"}]),
        json!([{"name": "c"}, {"name": "b"}]),
        json!([{"name": "a"}, {"name": "c"}, {"name": "b"}])
    )]
    #[case::nested_null_deletes(
        json!([{"name": "a", "image": "a:1", "tty": true}]),
        json!([{"name": "a", "tty": null}]),
        json!([{"name": "a", "image": "a:1"}])
    )]
    #[case::delete_element(
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"name": "a", "$patch": "delete"}]),
        json!([{"name": "b"}])
    )]
    #[case::replace_list(
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"name": "c", "image": "c:1"}, {"$patch": "replace"}]),
        json!([{"name": "c", "image": "c:1"}])
    )]
    #[case::env_by_name(
        json!([{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]),
        json!([{"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}]),
        json!([{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}])
    )]
    #[case::container_ports_by_container_port(
        json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]),
        json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]),
        json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}]}])
    )]
    #[case::volume_mounts_by_mount_path(
        json!([{"name": "a", "volumeMounts": [{"mountPath": "/d", "name": "v1"}]}]),
        json!([{"name": "a", "volumeMounts": [{"mountPath": "/d", "readOnly": true}, {"mountPath": "/e", "name": "v2"}]}]),
        json!([{"name": "a", "volumeMounts": [{"mountPath": "/d", "name": "v1", "readOnly": true}, {"mountPath": "/e", "name": "v2"}]}])
    )]
    #[case::args_replace(
        json!([{"name": "a", "args": ["x", "y"], "command": ["sh"]}]),
        json!([{"name": "a", "args": ["z"]}]),
        json!([{"name": "a", "args": ["z"], "command": ["sh"]}])
    )]
    fn pod_containers(#[case] target: Value, #[case] patch: Value, #[case] expected: Value) {
        let got = smp(pod_spec(target), json!({"spec": {"containers": patch}}), "Pod");
        assert_eq!(got, pod_spec(expected));
    }

    #[test]
    fn init_and_ephemeral_containers_merge_by_name() {
        let target = json!({"spec": {"initContainers": [{"name": "i", "image": "1"}], "ephemeralContainers": [{"name": "e", "ports": [{"containerPort": 1}]}]}});
        let patch = json!({"spec": {"initContainers": [{"name": "i", "image": "2"}], "ephemeralContainers": [{"name": "e", "ports": [{"containerPort": 2}]}]}});
        let expected = json!({"spec": {"initContainers": [{"name": "i", "image": "2"}], "ephemeralContainers": [{"name": "e", "ports": [{"containerPort": 1}, {"containerPort": 2}]}]}});
        assert_eq!(smp(target, patch, "Pod"), expected);
    }

    #[rstest]
    #[case::service_ports_by_port(
        "Service",
        json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
        json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
        json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}})
    )]
    #[case::spec_ports_replaced_for_other_kinds(
        "EndpointSlice",
        json!({"spec": {"ports": [{"port": 80}, {"port": 443}]}}),
        json!({"spec": {"ports": [{"port": 80, "name": "x"}]}}),
        json!({"spec": {"ports": [{"port": 80, "name": "x"}]}})
    )]
    #[case::volumes_by_name(
        "Pod",
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}),
        json!({"spec": {"volumes": [{"name": "w", "configMap": {"name": "c"}}]}}),
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "configMap": {"name": "c"}}]}})
    )]
    #[case::tolerations_replace(
        "Pod",
        json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}}),
        json!({"spec": {"tolerations": [{"key": "c", "operator": "Exists"}]}}),
        json!({"spec": {"tolerations": [{"key": "c", "operator": "Exists"}]}})
    )]
    #[case::taints_replace(
        "Node",
        json!({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}),
        json!({"spec": {"taints": []}}),
        json!({"spec": {"taints": []}})
    )]
    #[case::pod_conditions_by_type(
        "Pod",
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Initialized", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}})
    )]
    #[case::node_addresses_by_type(
        "Node",
        json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n"}]}}),
        json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}}),
        json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "address": "n"}]}})
    )]
    #[case::pod_ips_by_ip(
        "Pod",
        json!({"status": {"podIPs": [{"ip": "10.0.0.1"}]}}),
        json!({"status": {"podIPs": [{"ip": "fd00::1"}]}}),
        json!({"status": {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}})
    )]
    #[case::owner_references_by_uid(
        "Pod",
        json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}),
        json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}, {"uid": "2", "name": "b"}]}}),
        json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a", "controller": true}, {"uid": "2", "name": "b"}]}})
    )]
    #[case::service_account_secrets(
        "ServiceAccount",
        json!({"secrets": [{"name": "a"}]}),
        json!({"secrets": [{"name": "b"}]}),
        json!({"secrets": [{"name": "a"}, {"name": "b"}]})
    )]
    #[case::finalizers_as_set(
        "Pod",
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
        json!({"metadata": {"finalizers": ["a", "b", "c"]}})
    )]
    #[case::deployment_template_containers(
        "Deployment",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 81}]}]}}}}),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 81}]}]}}}})
    )]
    fn merge_key_families(#[case] kind: &str, #[case] target: Value, #[case] patch: Value, #[case] expected: Value) {
        assert_eq!(smp(target, patch, kind), expected);
    }

    #[rstest]
    #[case::delete_map(
        json!({"spec": {"a": {"x": 1}, "b": 2}}),
        json!({"spec": {"a": {"$patch": "delete"}}}),
        json!({"spec": {"b": 2}})
    )]
    #[case::replace_map(
        json!({"spec": {"selector": {"a": "1", "b": "2"}}}),
        json!({"spec": {"selector": {"$patch": "replace", "c": "3"}}}),
        json!({"spec": {"selector": {"c": "3"}}})
    )]
    #[case::retain_keys(
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        json!({"spec": {"strategy": {"type": "Recreate"}}})
    )]
    #[case::set_element_order(
        json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
        json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}], "containers": [{"name": "a", "image": "x"}]}}),
        json!({"spec": {"containers": [{"name": "c"}, {"name": "a", "image": "x"}, {"name": "b"}]}})
    )]
    #[case::set_element_order_primitive(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"]}}),
        json!({"metadata": {"finalizers": ["c", "b", "a"]}})
    )]
    #[case::delete_from_primitive_list(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"], "finalizers": ["d"]}}),
        json!({"metadata": {"finalizers": ["a", "c", "d"]}})
    )]
    #[case::directives_in_new_values_are_stripped(
        json!({}),
        json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}, {"name": "b", "$patch": "delete"}], "m": {"$retainKeys": ["x"], "x": 1, "y": 2}}}),
        json!({"spec": {"containers": [{"name": "a"}], "m": {"x": 1}}})
    )]
    #[case::replace_directive_in_non_merging_list(
        json!({"spec": {"tolerations": [{"key": "a"}]}}),
        json!({"spec": {"tolerations": [{"$patch": "replace"}, {"key": "b"}]}}),
        json!({"spec": {"tolerations": [{"key": "b"}]}})
    )]
    fn directives(#[case] target: Value, #[case] patch: Value, #[case] expected: Value) {
        assert_eq!(smp(target, patch, "Deployment"), expected);
    }

    #[test]
    fn kubectl_apply_three_way_patch() {
        let last_applied = r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"s:2"},{"name":"web","image":"w:2"}]}}}}"#;
        let target = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "other": "x"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "web", "image": "w:1", "ports": [{"containerPort": 80}]},
                {"name": "sidecar", "image": "s:1"},
                {"name": "old", "image": "o:1"}
            ]}}}
        });
        let patch = json!({
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}},
            "spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}],
                "containers": [{"name": "sidecar", "image": "s:2"}, {"name": "web", "image": "w:2"}, {"name": "old", "$patch": "delete"}]
            }}}
        });
        let expected = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied, "other": "x"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "s:2"},
                {"name": "web", "image": "w:2", "ports": [{"containerPort": 80}]}
            ]}}}
        });
        assert_eq!(smp(target, patch, "Deployment"), expected);
    }

    #[rstest]
    #[case::string(json!("x"), true)]
    #[case::number(json!(1), true)]
    #[case::array(json!([{"op": "add"}]), true)]
    #[case::null(json!(null), true)]
    #[case::unknown_patch_directive(json!({"spec": {"$patch": "explode"}}), true)]
    #[case::keyed_element_not_object(json!({"spec": {"containers": ["a"]}}), true)]
    #[case::keyed_element_without_key(json!({"spec": {"containers": [{"image": "x"}]}}), true)]
    #[case::retain_keys_not_list(json!({"spec": {"$retainKeys": "a"}}), true)]
    #[case::retain_keys_not_strings(json!({"spec": {"$retainKeys": [1]}}), true)]
    #[case::order_not_list(json!({"spec": {"$setElementOrder/containers": {}}}), true)]
    #[case::delete_list_not_list(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}}), true)]
    #[case::delete_whole_object(json!({"$patch": "delete"}), false)]
    #[case::delete_element_without_key(json!({"spec": {"containers": [{"$patch": "delete"}]}}), false)]
    fn strategic_merge_rejects(#[case] patch: Value, #[case] malformed: bool) {
        let original = pod_spec(json!([{"name": "a"}]));
        let mut target = original.clone();
        let err = strategic_merge(&mut target, &patch, "Pod").expect_err("must be rejected");
        assert_eq!(matches!(err, PatchError::Malformed(_)), malformed, "{err}");
        assert_eq!(target, original, "target must be untouched on error");
    }

    #[test]
    fn strategic_merge_replaces_non_object_target() {
        let mut target = json!("garbage");
        strategic_merge(&mut target, &json!({"a": {"b": 1}}), "Pod").expect("patch applies");
        assert_eq!(target, json!({"a": {"b": 1}}));
    }

    // RFC 7386 appendix A.
    #[rstest]
    #[case(json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"}))]
    #[case(json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"}))]
    #[case(json!({"a": "b"}), json!({"a": null}), json!({}))]
    #[case(json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"}))]
    #[case(json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"}))]
    #[case(json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]}))]
    #[case(json!({"a": {"b": "c"}}), json!({"a": {"b": "d", "c": null}}), json!({"a": {"b": "d"}}))]
    #[case(json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]}))]
    #[case(json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"]))]
    #[case(json!({"a": "b"}), json!(["c"]), json!(["c"]))]
    #[case(json!({"a": "foo"}), json!(null), json!(null))]
    #[case(json!({"a": "foo"}), json!("bar"), json!("bar"))]
    #[case(json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1}))]
    #[case(json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"}))]
    #[case(json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}}))]
    fn merge_patch_rfc7386(#[case] target: Value, #[case] patch: Value, #[case] expected: Value) {
        let mut t = target;
        merge_patch(&mut t, &patch);
        assert_eq!(t, expected);
    }

    fn doc() -> Value {
        json!({"spec": {"x": 1, "list": ["a", "b"]}, "status": {}})
    }

    #[rstest]
    #[case::add(json!([{"op": "add", "path": "/spec/y", "value": 2}]), json!({"spec": {"x": 1, "list": ["a", "b"], "y": 2}, "status": {}}))]
    #[case::add_to_list_end(json!([{"op": "add", "path": "/spec/list/-", "value": "c"}]), json!({"spec": {"x": 1, "list": ["a", "b", "c"]}, "status": {}}))]
    #[case::remove(json!([{"op": "remove", "path": "/spec/list/0"}]), json!({"spec": {"x": 1, "list": ["b"]}, "status": {}}))]
    #[case::replace(json!([{"op": "replace", "path": "/spec/x", "value": "z"}]), json!({"spec": {"x": "z", "list": ["a", "b"]}, "status": {}}))]
    #[case::move_op(json!([{"op": "move", "from": "/spec/x", "path": "/status/x"}]), json!({"spec": {"list": ["a", "b"]}, "status": {"x": 1}}))]
    #[case::copy(json!([{"op": "copy", "from": "/spec/list", "path": "/status/list"}]), json!({"spec": {"x": 1, "list": ["a", "b"]}, "status": {"list": ["a", "b"]}}))]
    #[case::test_then_replace(
        json!([{"op": "test", "path": "/spec/x", "value": 1}, {"op": "replace", "path": "/spec/x", "value": 2}]),
        json!({"spec": {"x": 2, "list": ["a", "b"]}, "status": {}})
    )]
    #[case::empty(json!([]), doc())]
    fn json_patch_applies(#[case] patch: Value, #[case] expected: Value) {
        let mut t = doc();
        json_patch(&mut t, &patch).expect("patch applies");
        assert_eq!(t, expected);
    }

    #[rstest]
    #[case::test_fails(
        json!([{"op": "replace", "path": "/spec/x", "value": 5}, {"op": "test", "path": "/spec/x", "value": 1}]),
        "json patch operation 1 (test /spec/x): test failed: value did not match"
    )]
    #[case::missing_path(
        json!([{"op": "add", "path": "/a", "value": 1}, {"op": "replace", "path": "/spec/nope", "value": 1}]),
        "json patch operation 1 (replace /spec/nope): path not found"
    )]
    #[case::remove_missing(json!([{"op": "remove", "path": "/spec/list/5"}]), "json patch operation 0 (remove /spec/list/5): path not found")]
    #[case::bad_from(json!([{"op": "move", "from": "/nope", "path": "/a"}]), "json patch operation 0 (move /a): from path /nope not found")]
    #[case::move_inside_itself(json!([{"op": "move", "from": "/spec", "path": "/spec/x/y"}]), "json patch operation 0 (move /spec/x/y): cannot move /spec inside itself")]
    #[case::move_to_root_then_fail(
        json!([{"op": "move", "from": "/spec", "path": ""}, {"op": "test", "path": "/x", "value": 2}]),
        "json patch operation 1 (test /x): test failed: value did not match"
    )]
    fn json_patch_fails(#[case] patch: Value, #[case] message: &str) {
        let mut t = doc();
        let err = json_patch(&mut t, &patch).expect_err("must be rejected");
        assert_eq!(err, PatchError::Failed(message.to_owned()));
        assert_eq!(t, doc(), "target must be untouched on error");
    }

    #[rstest]
    #[case::string(json!("x"), "must be an array")]
    #[case::number(json!(3), "must be an array")]
    #[case::object(json!({"op": "add"}), "must be an array")]
    #[case::unknown_op(json!([{"op": "frobnicate", "path": "/a"}]), "json patch operation 0")]
    #[case::missing_value(json!([{"op": "test", "path": "/spec/x", "value": 1}, {"op": "add", "path": "/a"}]), "json patch operation 1")]
    #[case::bad_pointer(json!([{"op": "remove", "path": "no-slash"}]), "json patch operation 0")]
    #[case::not_an_object(json!([1]), "json patch operation 0")]
    fn json_patch_malformed(#[case] patch: Value, #[case] message: &str) {
        let mut t = doc();
        match json_patch(&mut t, &patch) {
            Err(PatchError::Malformed(m)) => assert!(m.contains(message), "{m}"),
            other => panic!("expected Malformed, got {other:?}"),
        }
        assert_eq!(t, doc());
    }
}
