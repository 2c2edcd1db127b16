//! The resource verbs: get, list, create, update, patch (JSON, merge, strategic, server-side
//! apply), delete, delete-collection and pod binding.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::{ApiState, Format, Query, Target, decode_object, json_response, json_value, paging};
use crate::api::authorization::{Attributes, UserInfo};
use crate::store::api_error::{ApiError, Cause};
use crate::store::patch::{self, PatchError};
use crate::store::resources::{self, ResourceType};
use crate::store::selector::{FieldSelector, LabelSelector};
use crate::store::{DeleteOptions, Deleted, Obj, Part};
use crate::{api::openapi, api::table, store::admission, store::validation};

/// Parsed `labelSelector` and `fieldSelector`, checked against what the kind supports.
pub(crate) struct Selectors {
    pub label: LabelSelector,
    pub field: FieldSelector,
    /// Whether the kind is the core pods (whose versions carry `spec.nodeName`).
    pods: bool,
}

impl Selectors {
    pub(crate) fn parse(rt: &ResourceType, q: &Query) -> Result<Self, ApiError> {
        let label = LabelSelector::parse(q.get("labelSelector").unwrap_or(""))
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        let field = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""))
            .map_err(|e| ApiError::BadRequest(e.to_string()))?;
        if let Some(bad) = field.fields().find(|f| !rt.supports_field(f)) {
            return Err(ApiError::BadRequest(format!("field label not supported: {bad}")));
        }
        let pods = rt.group.is_empty() && rt.plural == "pods";
        Ok(Self { label, field, pods })
    }

    /// Whether `obj` passes both selectors. A LIST reads every object of its kind once: an
    /// empty selector looks at none, a label selector at the labels alone, a field selector on
    /// the name, namespace or a pod's node at the version's metadata, and a value decoded for
    /// another field is not kept ([`Stored::peek`](crate::store::Stored::peek)).
    pub(crate) fn matches(&self, obj: &Obj) -> bool {
        let known = |field: &str| match field {
            "metadata.name" => Some(obj.name()),
            "metadata.namespace" => Some(obj.namespace()),
            "spec.nodeName" if self.pods => Some(obj.node_name()),
            _ => None,
        };
        (self.label.is_empty() || obj.peek_labels(|labels| self.label.matches(labels)))
            && (self.field.is_empty()
                || self
                    .field
                    .matches_fields(known)
                    .unwrap_or_else(|| obj.peek(|value| self.field.matches(value))))
    }
}

/// Whether the resource is the core `namespaces` (its writes pass the namespace admission).
fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces"
}

/// Validates an object, including the Windows pod rules that depend on the cluster version
/// (for pods and for the pod templates of workloads).
fn validate(state: &ApiState, rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    validation::validate(rt, obj)?;
    let (spec, prefix) = match rt.kind {
        "Pod" => (obj.get("spec"), "spec"),
        "Deployment" | "ReplicaSet" | "DaemonSet" | "Job" => (obj.pointer("/spec/template/spec"), "spec.template.spec"),
        _ => (None, ""),
    };
    let Some(spec) = spec else { return Ok(()) };
    let causes: Vec<Cause> = crate::store::pod_validation::windows_api_violations(spec, state.cluster_version)
        .into_iter()
        .map(|mut c| {
            if let Some(rest) = c.field.strip_prefix("spec") {
                c.field = format!("{prefix}{rest}");
            }
            c
        })
        .collect();
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        group: rt.group.into(),
        kind: rt.kind.into(),
        name: obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        causes,
    })
}

/// Creates an object; Services get their addresses from the allocator.
fn create_object(state: &ApiState, rt: &'static ResourceType, ns: &str, obj: Value) -> Result<Obj, ApiError> {
    if rt.group.is_empty() && rt.plural == "services" {
        state.allocator.create(&state.store, ns, obj)
    } else {
        state.store.create(rt, ns, obj)
    }
}

fn part(t: &Target) -> Part {
    if t.sub.as_deref() == Some("status") {
        Part::Status
    } else {
        Part::Main
    }
}

fn name(t: &Target) -> &str {
    t.name.as_deref().unwrap_or("")
}

fn object_response(code: StatusCode, obj: &Obj) -> Response {
    json_response(code, obj.json().clone())
}

fn reject_dry_run(q: &Query) -> Result<(), ApiError> {
    match q.get("dryRun") {
        Some(v) if !v.is_empty() => Err(ApiError::BadRequest(
            "dryRun is not supported by the bundled cluster; send the request without it".into(),
        )),
        _ => Ok(()),
    }
}

pub(crate) fn get(state: &ApiState, t: &Target, format: Format) -> Result<Response, ApiError> {
    let obj = state.store.get(t.rt, t.ns(), name(t))?;
    Ok(match format {
        Format::Json => object_response(StatusCode::OK, &obj),
        Format::Table(include) => {
            let rv = obj.resource_version();
            json_value(StatusCode::OK, &table::render(t.rt, &[obj], rv, include, true))
        }
    })
}

pub(crate) fn list(state: &ApiState, t: &Target, q: &Query, format: Format) -> Result<Response, ApiError> {
    let limit = paging::limit(q.get("limit"))?;
    let page = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => state.pages.next(token, limit)?,
        None => {
            let selectors = Selectors::parse(t.rt, q)?;
            let (items, rv) = state.store.list(t.rt, t.namespace.as_deref());
            let items: Vec<Obj> = items.into_iter().filter(|o| selectors.matches(o)).collect();
            state.pages.first(items, rv, limit)
        }
    };
    let (items, rv) = (page.items, page.rv);
    Ok(match format {
        Format::Table(include) => {
            let mut table = table::render(t.rt, &items, rv, include, true);
            if let Some((token, left)) = &page.rest {
                table["metadata"]["continue"] = json!(token);
                table["metadata"]["remainingItemCount"] = json!(left);
            }
            json_value(StatusCode::OK, &table)
        }
        Format::Json => {
            // Assemble the list from the stored encodings instead of re-serialising objects.
            let rest = page
                .rest
                .as_ref()
                .map(|(token, left)| format!(r#","continue":{},"remainingItemCount":{left}"#, json!(token)))
                .unwrap_or_default();
            let head = format!(
                r#"{{"kind":"{}List","apiVersion":"{}","metadata":{{"resourceVersion":"{rv}"{rest}}},"items":["#,
                t.rt.kind,
                t.rt.api_version()
            );
            let size = head.len() + items.iter().map(|o| o.json().len() + 1).sum::<usize>() + 2;
            let mut body = Vec::with_capacity(size);
            body.extend_from_slice(head.as_bytes());
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(o.json());
            }
            body.extend_from_slice(b"]}");
            json_response(StatusCode::OK, body)
        }
    })
}

/// Checks apiVersion/kind and namespace of a body against the URL.
pub(crate) fn check_identity(t: &Target, obj: &mut Value) -> Result<(), ApiError> {
    let rt = t.rt;
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str)
        && av != rt.api_version()
    {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    if let Some(kind) = obj.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::BadRequest(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    if rt.namespaced {
        let body_ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
        if !body_ns.is_empty() && body_ns != t.ns() {
            return Err(ApiError::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request".into(),
            ));
        }
    }
    if !obj.get("metadata").is_none_or(Value::is_object) {
        return Err(ApiError::BadRequest("metadata must be an object".into()));
    }
    Ok(())
}

/// How a write treats fields its kind's schema does not declare (`fieldValidation`; Warn when
/// not given, as upstream): the apiserver drops them, warning or not, or refuses the write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

fn field_validation(q: &Query) -> Result<FieldValidation, ApiError> {
    match q.get("fieldValidation") {
        None | Some("" | "Warn") => Ok(FieldValidation::Warn),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some(other) => Err(ApiError::BadRequest(format!(
            "fieldValidation parameter unsupported: {other}. Supported values are \"Ignore\", \"Warn\" and \"Strict\""
        ))),
    }
}

/// Checks the fields `obj` has beyond its kind's schema (and beyond those `before` already
/// had): Strict refuses them with the decoder's `strict decoding error`, after `context` when
/// given; Warn and Ignore drop them, Warn returning the warnings to send.
fn check_fields(
    rt: &ResourceType,
    obj: &mut Value,
    before: Option<&Value>,
    mode: FieldValidation,
    context: Option<String>,
) -> Result<Vec<String>, ApiError> {
    let mut unknown = openapi::unknown_fields(rt, obj);
    if let Some(before) = before {
        let old: Vec<String> = openapi::unknown_fields(rt, before)
            .into_iter()
            .map(|f| f.path)
            .collect();
        unknown.retain(|f| !old.contains(&f.path));
    }
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let named: Vec<String> = unknown.iter().map(|f| format!("unknown field {:?}", f.path)).collect();
    if mode == FieldValidation::Strict {
        let error = format!("strict decoding error: {}", named.join(", "));
        return Err(ApiError::BadRequest(match context {
            Some(c) => format!("{c}: {error}"),
            None => error,
        }));
    }
    openapi::prune(obj, &unknown);
    Ok(if mode == FieldValidation::Warn {
        named
    } else {
        Vec::new()
    })
}

/// What the decoder says before a strict decoding error of a whole object.
fn decoding_context(rt: &ResourceType) -> Option<String> {
    Some(format!(
        "{kind} in version {:?} cannot be handled as a {kind}",
        rt.version,
        kind = rt.kind
    ))
}

/// Adds `Warning: 299 - "…"` headers, as the apiserver sends them: like its warning recorder,
/// at most 4 KiB of warnings per response (the rest are dropped).
fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    const BUDGET: usize = 4 * 1024;
    let mut used = 0;
    for w in warnings {
        used += w.len();
        if used > BUDGET {
            break;
        }
        let text = format!("299 - {:?}", w);
        if let Ok(v) = axum::http::HeaderValue::from_str(&text) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

pub(crate) fn create(state: &ApiState, t: &Target, q: &Query, ct: &str, bytes: &[u8]) -> Result<Response, ApiError> {
    reject_dry_run(q)?;
    if t.rt.namespaced && t.namespace.is_none() {
        return Err(ApiError::MethodNotAllowed {
            verb: "POST".into(),
            kind: t.rt.kind.into(),
        });
    }
    let mode = field_validation(q)?;
    let mut obj = decode_object(ct, bytes)?;
    check_identity(t, &mut obj)?;
    let warnings = check_fields(t.rt, &mut obj, None, mode, decoding_context(t.rt))?;
    validate(state, t.rt, &obj)?;
    if t.rt.kind == "Pod" {
        admission::admit_pod(&state.store, t.ns(), &mut obj)?;
    }
    if is_namespace(t.rt) {
        state.store.generate_name(t.rt, "", &mut obj);
        admission::admit_namespace(&state.store, &obj)?;
    }
    let created = create_object(state, t.rt, t.ns(), obj)?;
    Ok(with_warnings(object_response(StatusCode::CREATED, &created), &warnings))
}

pub(crate) fn update(state: &ApiState, t: &Target, q: &Query, ct: &str, bytes: &[u8]) -> Result<Response, ApiError> {
    reject_dry_run(q)?;
    let mode = field_validation(q)?;
    let mut obj = decode_object(ct, bytes)?;
    check_identity(t, &mut obj)?;
    let warnings = if t.sub.is_none() {
        check_fields(t.rt, &mut obj, None, mode, decoding_context(t.rt))?
    } else {
        Vec::new()
    };
    let body_name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !body_name.is_empty() && body_name != name(t) {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            name(t)
        )));
    }
    if t.sub.as_deref() == Some("finalize") {
        let finalizers = obj.pointer("/spec/finalizers").cloned().unwrap_or_else(|| json!([]));
        let updated = state.store.modify(t.rt, t.ns(), name(t), Part::Main, |cur| {
            cur["spec"]["finalizers"] = finalizers;
            Ok(())
        })?;
        return Ok(object_response(StatusCode::OK, &updated));
    }
    if part(t) == Part::Main {
        validate(state, t.rt, &obj)?;
        if is_namespace(t.rt) {
            admission::admit_namespace(&state.store, &obj)?;
        }
    }
    let updated = state.store.update(t.rt, t.ns(), name(t), part(t), obj)?;
    Ok(with_warnings(object_response(StatusCode::OK, &updated), &warnings))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

fn patch_type(ct: &str) -> Result<PatchType, ApiError> {
    match ct {
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" | "application/apply-patch+cbor" if ct.ends_with("yaml") => Ok(PatchType::Apply),
        other => Err(ApiError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format ({other}) - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
        ))),
    }
}

fn patch_failed(rt: &ResourceType, name: &str, e: PatchError) -> ApiError {
    match e {
        PatchError::Malformed(msg) => ApiError::BadRequest(msg),
        PatchError::Failed(msg) => ApiError::Invalid {
            group: rt.group.into(),
            kind: rt.kind.into(),
            name: name.into(),
            causes: vec![Cause {
                reason: "FieldValueInvalid",
                field: "patch".into(),
                message: msg,
            }],
        },
    }
}

pub(crate) fn patch(
    state: &ApiState,
    t: &Target,
    user: &UserInfo,
    q: &Query,
    ct: &str,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    reject_dry_run(q)?;
    let kind = patch_type(ct)?;
    let rt = t.rt;
    let obj_name = name(t).to_string();
    if kind == PatchType::Apply {
        return server_side_apply(state, t, user, q, ct, bytes);
    }
    if q.get("force").is_some() {
        return Err(ApiError::BadRequest("force may only be set for apply patches".into()));
    }
    let mode = field_validation(q)?;
    let body: Value = crate::vocab::json::decode(bytes)
        .map_err(|e| ApiError::BadRequest(format!("the patch is not valid JSON: {e}")))?;
    let p = part(t);
    let mut warnings = Vec::new();
    let updated = state.store.modify(rt, t.ns(), &obj_name, p, |cur| {
        let current_rv = cur.pointer("/metadata/resourceVersion").cloned();
        let mut next = cur.clone();
        match kind {
            PatchType::Json => patch::json_patch(&mut next, &body),
            PatchType::Merge => {
                if body.is_object() {
                    patch::merge_patch(&mut next, &body);
                    Ok(())
                } else {
                    Err(PatchError::Malformed("a merge patch must be a JSON object".into()))
                }
            }
            PatchType::Strategic => patch::strategic_merge(&mut next, &body, rt.kind),
            PatchType::Apply => Ok(()),
        }
        .map_err(|e| patch_failed(rt, &obj_name, e))?;
        let patched_rv = next.pointer("/metadata/resourceVersion").cloned();
        if patched_rv.as_ref().is_some_and(|v| !v.is_null()) && patched_rv != current_rv {
            return Err(ApiError::Conflict {
                group: rt.group.into(),
                resource: rt.plural.into(),
                name: obj_name.clone(),
            });
        }
        if p == Part::Main {
            warnings = check_fields(rt, &mut next, Some(cur), mode, None)?;
            validate(state, rt, &next)?;
            if is_namespace(rt) {
                admission::admit_namespace(&state.store, &next)?;
            }
        }
        *cur = next;
        Ok(())
    })?;
    Ok(with_warnings(object_response(StatusCode::OK, &updated), &warnings))
}

/// An apply that creates the object needs `create` as well as the `patch` the request was
/// authorized for (upstream's `withAuthorization` of the create-on-update path; its message is
/// the authorizer's reason alone, so usually `pods "p" is forbidden: `).
fn authorize_create(state: &ApiState, t: &Target, user: &UserInfo, name: &str) -> Result<(), ApiError> {
    let create = Attributes::Resource {
        verb: "create".into(),
        group: t.rt.group.into(),
        version: t.rt.version.into(),
        resource: t.rt.plural.into(),
        subresource: String::new(),
        namespace: t.ns().into(),
        name: name.into(),
    };
    let d = state.authorizer.authorize(user, &create);
    if d.allowed {
        return Ok(());
    }
    Err(ApiError::Forbidden {
        group: t.rt.group.into(),
        resource: t.rt.plural.into(),
        name: name.into(),
        reason: d.reason,
    })
}

/// Server-side apply: creates the object when absent, otherwise merges the applied
/// configuration into it (keyed lists merge by their keys). Field ownership is not tracked.
fn server_side_apply(
    state: &ApiState,
    t: &Target,
    user: &UserInfo,
    q: &Query,
    ct: &str,
    bytes: &[u8],
) -> Result<Response, ApiError> {
    let rt = t.rt;
    if q.get("fieldManager").is_none_or(str::is_empty) {
        return Err(ApiError::Invalid {
            group: "meta.k8s.io".into(),
            kind: "PatchOptions".into(),
            name: String::new(),
            causes: vec![Cause::required("fieldManager", "is required for apply patch")],
        });
    }
    let mode = field_validation(q)?;
    let mut applied = decode_object(ct, bytes)?;
    let mut check = Target { ..t.clone() };
    check.sub = None;
    check_identity(&check, &mut applied)?;
    let obj_name = name(t).to_string();
    let body_name = applied.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if !body_name.is_empty() && body_name != obj_name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({obj_name})"
        )));
    }
    let p = part(t);
    let mut warnings = Vec::new();
    if p == Part::Main {
        // The applied configuration is a partial object of the kind: its unknown fields are
        // the ones to report (or drop).
        warnings = check_fields(rt, &mut applied, None, mode, None)?;
    }
    for _ in 0..3 {
        let result = state.store.modify(rt, t.ns(), &obj_name, p, |cur| {
            let mut next = cur.clone();
            let mut patch_body = applied.clone();
            if let Some(meta) = patch_body.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                meta.remove("managedFields");
            }
            patch::strategic_merge(&mut next, &patch_body, rt.kind).map_err(|e| patch_failed(rt, &obj_name, e))?;
            if p == Part::Main {
                validate(state, rt, &next)?;
                if is_namespace(rt) {
                    admission::admit_namespace(&state.store, &next)?;
                }
            }
            *cur = next;
            Ok(())
        });
        match result {
            Ok(updated) => return Ok(with_warnings(object_response(StatusCode::OK, &updated), &warnings)),
            Err(ApiError::NotFound { .. }) if p == Part::Main => {
                authorize_create(state, t, user, &obj_name)?;
                let mut obj = applied.clone();
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("name".into(), json!(obj_name));
                }
                validate(state, rt, &obj)?;
                if rt.kind == "Pod" {
                    admission::admit_pod(&state.store, t.ns(), &mut obj)?;
                }
                if is_namespace(rt) {
                    admission::admit_namespace(&state.store, &obj)?;
                }
                match create_object(state, rt, t.ns(), obj) {
                    Ok(created) => {
                        return Ok(with_warnings(object_response(StatusCode::CREATED, &created), &warnings));
                    }
                    // Someone created it meanwhile: merge into theirs.
                    Err(ApiError::AlreadyExists { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::Conflict {
        group: rt.group.into(),
        resource: rt.plural.into(),
        name: obj_name,
    })
}

fn delete_options(q: &Query, bytes: &[u8]) -> Result<DeleteOptions, ApiError> {
    let mut opts = DeleteOptions::default();
    if bytes.iter().any(|b| !b.is_ascii_whitespace()) {
        let body: Value = crate::vocab::json::decode(bytes)
            .map_err(|e| ApiError::BadRequest(format!("the DeleteOptions body is not valid JSON: {e}")))?;
        if let Some(dry) = body.get("dryRun").and_then(Value::as_array)
            && !dry.is_empty()
        {
            return Err(ApiError::BadRequest(
                "dryRun is not supported by the bundled cluster".into(),
            ));
        }
        opts.grace_period_seconds = body.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.precondition_uid = body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        opts.precondition_rv = body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if let Some(g) = q.get("gracePeriodSeconds") {
        opts.grace_period_seconds = Some(
            g.parse()
                .map_err(|_| ApiError::BadRequest(format!("invalid gracePeriodSeconds {g:?}")))?,
        );
    }
    reject_dry_run(q)?;
    Ok(opts)
}

fn deleted_response(rt: &ResourceType, deleted: &Deleted) -> Response {
    let obj = deleted.object();
    // Pods and namespaces answer with the object (as the upstream registry does); the rest
    // with a Success status.
    if rt.group.is_empty() && matches!(rt.plural, "pods" | "namespaces") {
        return object_response(StatusCode::OK, obj);
    }
    if matches!(deleted, Deleted::Terminating(_)) {
        return object_response(StatusCode::OK, obj);
    }
    json_value(
        StatusCode::OK,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": obj.name(), "group": rt.group, "kind": rt.plural, "uid": obj.uid()},
        }),
    )
}

pub(crate) fn delete(state: &ApiState, t: &Target, q: &Query, bytes: &[u8]) -> Result<Response, ApiError> {
    let opts = delete_options(q, bytes)?;
    let deleted = state.store.delete(t.rt, t.ns(), name(t), &opts)?;
    Ok(deleted_response(t.rt, &deleted))
}

pub(crate) fn delete_collection(state: &ApiState, t: &Target, q: &Query, bytes: &[u8]) -> Result<Response, ApiError> {
    let opts = delete_options(q, bytes)?;
    let selectors = Selectors::parse(t.rt, q)?;
    let (items, _) = state.store.list(t.rt, t.namespace.as_deref());
    let mut deleted = Vec::new();
    for item in items.into_iter().filter(|o| selectors.matches(o)) {
        match state.store.delete(t.rt, item.namespace(), item.name(), &opts) {
            Ok(d) => deleted.push(d.object().value().clone()),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(json_value(
        StatusCode::OK,
        &json!({
            "kind": format!("{}List", t.rt.kind),
            "apiVersion": t.rt.api_version(),
            "metadata": {"resourceVersion": state.store.current_rv().to_string()},
            "items": deleted,
        }),
    ))
}

/// `POST pods/<name>/binding`: assigns a pod to a node (what a scheduler does).
pub(crate) fn bind(state: &ApiState, t: &Target, ct: &str, bytes: &[u8]) -> Result<Response, ApiError> {
    let body = decode_object(ct, bytes)?;
    let node = body
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return Err(ApiError::Invalid {
            group: String::new(),
            kind: "Binding".into(),
            name: name(t).into(),
            causes: vec![Cause::required("target.name", "")],
        });
    }
    let pod_name = name(t).to_string();
    let pods = resources::core("pods");
    let now = crate::store::timestamp(chrono::Utc::now());
    state.store.modify(pods, t.ns(), &pod_name, Part::Main, |pod| {
        let current = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        if !current.is_empty() {
            return Err(ApiError::Precondition {
                group: String::new(),
                resource: "pods".into(),
                name: pod_name.clone(),
                reason: format!("pod {pod_name} is already assigned to node {current:?}"),
            });
        }
        pod["spec"]["nodeName"] = json!(node);
        Ok(())
    })?;
    state.store.modify(pods, t.ns(), &pod_name, Part::Status, |pod| {
        let conditions = pod["status"]["conditions"].as_array().cloned().unwrap_or_default();
        let mut conditions: Vec<Value> = conditions.into_iter().filter(|c| c["type"] != "PodScheduled").collect();
        conditions
            .push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
        pod["status"]["conditions"] = json!(conditions);
        Ok(())
    })?;
    Ok(json_value(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, StoreConfig};
    use rstest::rstest;

    /// A LIST's selectors pick what they did when they read each decoded object, and leave a
    /// cold version cold: a selector on labels, names, namespaces or a pod's node reads no
    /// value, one on another field decodes it for the look alone.
    #[rstest]
    #[case::everything("", "", &["web-1", "web-2", "db-1"])]
    #[case::labels("app=web", "", &["web-1", "web-2"])]
    #[case::label_set("app notin (web),tier", "", &["db-1"])]
    #[case::node("", "spec.nodeName=win-1", &["web-1", "db-1"])]
    #[case::name_and_namespace("", "metadata.name!=web-1,metadata.namespace=shop", &["web-2", "db-1"])]
    #[case::labels_and_node("app=web", "spec.nodeName=win-1", &["web-1"])]
    #[case::restart_policy("", "spec.restartPolicy=Never", &["web-2"])]
    #[case::restart_policy_and_labels("tier=back", "spec.restartPolicy!=Never", &["db-1"])]
    fn list_selectors_pick_without_keeping_values(#[case] labels: &str, #[case] fields: &str, #[case] picked: &[&str]) {
        let store = Store::new(StoreConfig::default());
        let pods = crate::store::resources::core("pods");
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "shop"}}))
            .expect("namespace");
        let pod = |name: &str, app: &str, tier: &str, node: &str, restart: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {"app": app, "tier": tier}},
                   "spec": {"nodeName": node, "restartPolicy": restart,
                            "containers": [{"name": "c", "image": "agnhost"}]}})
        };
        let cold: Vec<Obj> = [
            pod("web-1", "web", "front", "win-1", "Always"),
            pod("web-2", "web", "front", "linux-1", "Never"),
            pod("db-1", "db", "back", "win-1", "OnFailure"),
        ]
        .into_iter()
        .map(|p| store.create(pods, "shop", p).expect("create").without_value())
        .collect();
        let query = Query::parse(Some(&format!(
            "labelSelector={}&fieldSelector={}",
            form_urlencoded::byte_serialize(labels.as_bytes()).collect::<String>(),
            form_urlencoded::byte_serialize(fields.as_bytes()).collect::<String>()
        )));
        let selectors = Selectors::parse(pods, &query).expect("valid selectors");
        let got: Vec<&str> = cold.iter().filter(|o| selectors.matches(o)).map(|o| o.name()).collect();
        assert_eq!(got, picked);
        assert!(cold.iter().all(|o| !o.is_decoded()), "a selector kept a decoded value");
        let by_value: Vec<&str> = cold
            .iter()
            .filter(|o| selectors.label.matches_object(o.value()) && selectors.field.matches(o.value()))
            .map(|o| o.name())
            .collect();
        assert_eq!(by_value, picked, "the decoded objects pick the same");
    }
}
