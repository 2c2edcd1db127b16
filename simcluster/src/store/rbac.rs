//! The API server's rules for RBAC objects (`rbac.authorization.k8s.io/v1` Role, ClusterRole,
//! RoleBinding, ClusterRoleBinding): defaulting of subjects and role references, validation with
//! upstream's wording, and the immutable `roleRef`. Evaluation lives in the API layer
//! (`api::rbac`); privilege-escalation checks on writes (`escalate`, `bind`) are not made.

use serde_json::{Map, Value, json};

use crate::store::api_error::{ApiError, Cause};
use crate::store::resources::ResourceType;
use crate::vocab::names::is_dns_subdomain;

/// The RBAC API group, also the default `apiGroup` of role references and User/Group subjects.
pub const GROUP: &str = "rbac.authorization.k8s.io";

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Defaults of a binding: `roleRef.apiGroup`, and each subject's `apiGroup` (`""` for a
/// ServiceAccount, the RBAC group for User and Group), as `SetDefaults_Subject` does.
pub fn defaults(rt: &ResourceType, obj: &mut Map<String, Value>) {
    if !matches!(rt.kind, "RoleBinding" | "ClusterRoleBinding") {
        return;
    }
    if let Some(role_ref) = obj.get_mut("roleRef").and_then(Value::as_object_mut)
        && role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        role_ref.insert("apiGroup".into(), json!(GROUP));
    }
    if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
        for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
            if s.get("apiGroup").and_then(Value::as_str).is_some_and(|g| !g.is_empty()) {
                continue;
            }
            match s.get("kind").and_then(Value::as_str) {
                Some("ServiceAccount") => _ = s.insert("apiGroup".into(), json!("")),
                Some("User" | "Group") => _ = s.insert("apiGroup".into(), json!(GROUP)),
                _ => {}
            }
        }
    }
}

/// Go's `%#v` of a string slice, as field errors print one (`[]string{"/x"}`).
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn invalid_raw(field: String, shown: &str, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field,
        message: format!("Invalid value: {shown}: {detail}"),
    }
}

/// `ValidatePolicyRule`: verbs always; resource rules need groups and resources; a rule is for
/// resources or for non-resource URLs, and namespaced rules (Roles) never for URLs.
fn policy_rule(rule: &Value, namespaced: bool, at: &str, causes: &mut Vec<Cause>) {
    if strings(rule, "verbs").is_empty() {
        causes.push(Cause::required(
            format!("{at}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    if !urls.is_empty() {
        if namespaced {
            causes.push(invalid_raw(
                format!("{at}.nonResourceURLs"),
                &go_strings(&urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let resourceful = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|k| !strings(rule, k).is_empty());
        if resourceful {
            causes.push(invalid_raw(
                format!("{at}.nonResourceURLs"),
                &go_strings(&urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if rule
        .get("apiGroups")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        causes.push(Cause::required(
            format!("{at}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if strings(rule, "resources").is_empty() {
        causes.push(Cause::required(
            format!("{at}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// `ValidateRoleBindingSubject`.
fn subject(s: &Value, namespaced: bool, at: &str, causes: &mut Vec<Cause>) {
    let name = str_of(s, "name");
    if name.is_empty() {
        causes.push(Cause::required(format!("{at}.name"), ""));
    }
    let group = str_of(s, "apiGroup");
    match str_of(s, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() && !is_dns_subdomain(name) {
                causes.push(Cause::invalid(
                    format!("{at}.name"),
                    name,
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ));
            }
            if !group.is_empty() {
                causes.push(Cause::unsupported(format!("{at}.apiGroup"), group, &[""]));
            }
            if !namespaced && str_of(s, "namespace").is_empty() {
                causes.push(Cause::required(format!("{at}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                causes.push(Cause::unsupported(format!("{at}.apiGroup"), group, &[GROUP]));
            }
        }
        other => causes.push(Cause::unsupported(
            format!("{at}.kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// Validates an RBAC object as it will be stored (defaulted first, as decoding defaults it
/// upstream), adding to `causes`.
pub fn validate(rt: &ResourceType, obj: &Value, causes: &mut Vec<Cause>) {
    let mut defaulted = obj.clone();
    if let Some(o) = defaulted.as_object_mut() {
        defaults(rt, o);
    }
    let obj = &defaulted;
    match rt.kind {
        "Role" | "ClusterRole" => {
            for (i, rule) in obj
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                policy_rule(rule, rt.namespaced, &format!("rules[{i}]"), causes);
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let role_ref = obj.get("roleRef").cloned().unwrap_or(Value::Null);
            let group = str_of(&role_ref, "apiGroup");
            if group != GROUP {
                causes.push(Cause::unsupported("roleRef.apiGroup", group, &[GROUP]));
            }
            let kinds: &[&str] = if rt.namespaced {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            let kind = str_of(&role_ref, "kind");
            if !kinds.contains(&kind) {
                causes.push(Cause::unsupported("roleRef.kind", kind, kinds));
            }
            let name = str_of(&role_ref, "name");
            if name.is_empty() {
                causes.push(Cause::required("roleRef.name", ""));
            } else {
                causes.extend(
                    path_segment_problems(name)
                        .into_iter()
                        .map(|m| Cause::invalid("roleRef.name", name, m)),
                );
            }
            for (i, s) in obj
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                subject(s, rt.namespaced, &format!("subjects[{i}]"), causes);
            }
        }
        _ => {}
    }
}

/// `path.IsValidPathSegmentName`: what makes `name` unusable as one URL path segment (RBAC
/// names may hold `:`, as in `system:basic-user`).
pub fn path_segment_problems(name: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    match name {
        "." => out.push("may not be '.'"),
        ".." => out.push("may not be '..'"),
        _ => {}
    }
    if name.contains('/') {
        out.push("may not contain '/'");
    }
    if name.contains('%') {
        out.push("may not contain '%'");
    }
    out
}

/// Go's `%#v` of a RoleRef, as the immutability error prints it.
fn role_ref_go(role_ref: Option<&Value>) -> String {
    let r = role_ref.cloned().unwrap_or(Value::Null);
    format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        str_of(&r, "apiGroup"),
        str_of(&r, "kind"),
        str_of(&r, "name")
    )
}

/// Update rules: a binding's `roleRef` cannot change (delete and re-create the binding).
pub fn check_update(rt: &ResourceType, old: &Value, new: &Value) -> Result<(), ApiError> {
    if !matches!(rt.kind, "RoleBinding" | "ClusterRoleBinding") || old.get("roleRef") == new.get("roleRef") {
        return Ok(());
    }
    Err(ApiError::Invalid {
        group: rt.group.into(),
        kind: rt.kind.into(),
        name: new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .into(),
        causes: vec![invalid_raw(
            "roleRef".into(),
            &role_ref_go(new.get("roleRef")),
            "cannot change roleRef",
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;
    use rstest::rstest;

    fn rt(plural: &str) -> &'static ResourceType {
        resources::named(GROUP, plural)
    }

    fn messages(plural: &str, obj: Value) -> Vec<String> {
        let mut obj = obj;
        if let Some(o) = obj.as_object_mut() {
            defaults(rt(plural), o);
        }
        let mut causes = Vec::new();
        validate(rt(plural), &obj, &mut causes);
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn subjects_and_role_refs_are_defaulted() {
        let mut obj = json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "n"}, {"kind": "User", "name": "u"}]});
        if let Some(o) = obj.as_object_mut() {
            defaults(rt("rolebindings"), o);
        }
        assert_eq!(obj["roleRef"]["apiGroup"], GROUP);
        assert_eq!(obj["subjects"][0]["apiGroup"], "");
        assert_eq!(obj["subjects"][1]["apiGroup"], GROUP);
        assert!(messages("rolebindings", obj).is_empty());
    }

    #[rstest]
    #[case::no_verbs("clusterroles", json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
        "rules[0].verbs: Required value: verbs must contain at least one value")]
    #[case::no_groups("roles", json!({"rules": [{"verbs": ["get"], "resources": ["pods"]}]}),
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group")]
    #[case::no_resources("clusterroles", json!({"rules": [{"verbs": ["get"], "apiGroups": [""]}]}),
        "rules[0].resources: Required value: resource rules must supply at least one resource")]
    #[case::urls_in_a_role("roles", json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
        r#"rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#)]
    #[case::both("clusterroles", json!({"rules": [{"verbs": ["get"], "resources": ["pods"], "nonResourceURLs": ["/x"]}]}),
        r#"rules[0].nonResourceURLs: Invalid value: []string{"/x"}: rules cannot apply to both regular resources and non-resource URLs"#)]
    #[case::cluster_binding_to_a_role("clusterrolebindings", json!({"roleRef": {"kind": "Role", "name": "r"}}),
        r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#)]
    #[case::binding_kind("rolebindings", json!({"roleRef": {"kind": "Policy", "name": "r"}}),
        r#"roleRef.kind: Unsupported value: "Policy": supported values: "Role", "ClusterRole""#)]
    #[case::no_role_name("rolebindings", json!({"roleRef": {"kind": "Role"}}), "roleRef.name: Required value")]
    #[case::sa_without_namespace("clusterrolebindings",
        json!({"roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "ServiceAccount", "name": "a"}]}),
        "subjects[0].namespace: Required value")]
    #[case::unknown_subject("rolebindings",
        json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [{"kind": "Robot", "name": "a"}]}),
        r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#)]
    fn invalid_objects(#[case] plural: &str, #[case] obj: Value, #[case] expected: &str) {
        let got = messages(plural, obj);
        assert!(got.iter().any(|m| m == expected), "{got:?}");
    }

    #[test]
    fn role_refs_are_immutable() {
        let rb = rt("rolebindings");
        let old =
            json!({"metadata": {"name": "b"}, "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}});
        let mut new = old.clone();
        assert!(check_update(rb, &old, &new).is_ok());
        new["roleRef"]["name"] = json!("edit");
        let err = check_update(rb, &old, &new).expect_err("immutable");
        assert_eq!(
            err.to_string(),
            r#"RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#
        );
    }

    #[rstest]
    #[case("system:basic-user", &[])]
    #[case("..", &["may not be '..'"])]
    #[case("a/b%c", &["may not contain '/'", "may not contain '%'"])]
    fn path_segment_names(#[case] name: &str, #[case] problems: &[&str]) {
        assert_eq!(path_segment_problems(name), problems);
    }
}
