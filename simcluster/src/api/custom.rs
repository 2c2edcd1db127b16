//! Custom resources an add-on brings with its CRD, served read-only (get and list) beside the
//! built-in kinds: Calico's operator `Installation` (`operator.tigera.io/v1`, cluster-scoped,
//! named `default`) where the Tigera operator installed Calico (CAL: the supported install of
//! Calico for Windows is the operator). A cluster without the add-on does not serve the group:
//! its paths answer 404, as on a real cluster without the CRD. Writes and watches are not
//! served (405 and 400): nothing in the bundled cluster changes these objects.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::json_value;
use crate::store::api_error::ApiError;
pub use crate::store::custom::{CustomResource, CustomResources};

/// How the API serves one custom resource: discovery documents and its list.
trait Served {
    fn resource_list(&self) -> Value;
    fn group_doc(&self) -> Value;
    fn list(&self) -> Value;
}

impl Served for CustomResource {
    fn resource_list(&self) -> Value {
        json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": self.group_version(),
            "resources": [{
                "name": self.plural, "singularName": self.singular, "namespaced": false,
                "kind": self.kind, "verbs": ["get", "list"],
            }],
        })
    }

    fn group_doc(&self) -> Value {
        let gv = json!({"groupVersion": self.group_version(), "version": self.version});
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": self.group, "versions": [gv], "preferredVersion": gv})
    }

    fn list(&self) -> Value {
        json!({
            "kind": format!("{}List", self.kind),
            "apiVersion": self.group_version(),
            "metadata": {"resourceVersion": "1"},
            "items": self.objects,
        })
    }
}

/// The answer to a request under `/apis/<group>` of one of `served`; None when the path is not
/// one.
pub fn serve(served: &CustomResources, method: &Method, path: &str, watch: bool) -> Option<Result<Response, ApiError>> {
    let rest = path.strip_prefix("/apis/")?;
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let r = served.0.iter().find(|r| segs.first() == Some(&r.group))?;
    if segs.len() > 1 && segs[1] != r.version {
        return None;
    }
    if *method != Method::GET {
        return Some(Err(ApiError::MethodNotAllowed {
            verb: method.to_string(),
            kind: r.kind.into(),
        }));
    }
    Some(match segs.as_slice() {
        [_] => Ok(json_value(StatusCode::OK, &r.group_doc())),
        [_, _] => Ok(json_value(StatusCode::OK, &r.resource_list())),
        [_, _, plural] if *plural == r.plural && watch => Err(ApiError::BadRequest(format!(
            "the bundled cluster does not serve watches of {}.{}",
            r.plural, r.group
        ))),
        [_, _, plural] if *plural == r.plural => Ok(json_value(StatusCode::OK, &r.list())),
        [_, _, plural, name] if *plural == r.plural => r
            .objects
            .iter()
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            .map(|o| json_value(StatusCode::OK, o))
            .ok_or_else(|| ApiError::not_found(r.group, r.plural, name)),
        _ => Err(ApiError::UnknownPath),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calico() -> CustomResources {
        CustomResources(vec![CustomResource {
            group: "operator.tigera.io",
            version: "v1",
            plural: "installations",
            singular: "installation",
            kind: "Installation",
            objects: vec![
                json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation", "metadata": {"name": "default"}}),
            ],
        }])
    }

    #[test]
    fn served_paths_answer_and_others_are_not_custom() {
        let c = calico();
        let code =
            |m: Method, p: &str| serve(&c, &m, p, false).map(|r| r.map(|r| r.status().as_u16()).map_err(|e| e.code()));
        assert_eq!(
            code(Method::GET, "/apis/operator.tigera.io/v1/installations"),
            Some(Ok(200))
        );
        assert_eq!(
            code(Method::GET, "/apis/operator.tigera.io/v1/installations/default"),
            Some(Ok(200))
        );
        assert_eq!(
            code(Method::GET, "/apis/operator.tigera.io/v1/installations/other"),
            Some(Err(404))
        );
        assert_eq!(
            code(Method::DELETE, "/apis/operator.tigera.io/v1/installations/default"),
            Some(Err(405))
        );
        assert_eq!(code(Method::GET, "/apis/apps/v1/deployments"), None);
        assert_eq!(
            serve(
                &CustomResources::default(),
                &Method::GET,
                "/apis/operator.tigera.io/v1/installations",
                false
            )
            .map(|_| ()),
            None
        );
    }
}
