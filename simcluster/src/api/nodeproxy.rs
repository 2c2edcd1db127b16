//! `nodes/NAME/proxy/…`: the simulated kubelet's own endpoints — `configz`, `healthz`, `stats/summary` and
//! `logs/`, the node's log directory served the way Go's `http.FileServer` serves it
//! (HTML listings, redirects between a directory and its slash form, `404 page not found`).

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::{ApiState, json_value};
use crate::config::faults::Fault;
use crate::config::profile::NodeProfile;
use crate::node::logs::LogLine;
use crate::node::nodelogs::{self, LogEntry};
use crate::store::Obj;
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::vocab::json;

/// Serves `rest`, the path after `proxy/`, from the kubelet of `node`.
pub(crate) fn serve(state: &ApiState, node: &str, rest: &str) -> Result<Response, ApiError> {
    state.store.get(resources::core("nodes"), "", node)?;
    let profile = state
        .profiles
        .iter()
        .find(|p| p.name == node)
        .ok_or_else(|| ApiError::BadRequest(format!("no kubelet answers for node {node:?}")))?;
    if profile.has_fault(Fault::KubeletStopped) {
        return Err(ApiError::Internal(format!(
            "error trying to reach service: dial tcp {}:10250: connect: connection refused",
            profile.ip
        )));
    }
    if rest == "logs" || rest.starts_with("logs/") {
        return Ok(logs(state, profile, &rest["logs".len()..]));
    }
    match rest.trim_end_matches('/') {
        "configz" => Ok(json_value(StatusCode::OK, &profile.configz())),
        "healthz" => Ok(text(StatusCode::OK, "text/plain; charset=utf-8", "ok".into())),
        "stats/summary" => Ok(json_value(StatusCode::OK, &super::metrics::summary(state, profile)?)),
        _ => Err(ApiError::UnknownPath),
    }
}

fn text(code: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Go's `http.NotFound`.
fn not_found() -> Response {
    let mut resp = text(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "404 page not found\n".into(),
    );
    resp.headers_mut()
        .insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}

/// Go's `localRedirect`: 301 to a path relative to the request's.
fn redirect(to: &str) -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Go's `dirList`: entries sorted by name, directories with a trailing slash.
fn listing(mut names: Vec<String>) -> Response {
    names.sort();
    names.dedup();
    let mut body = String::from("<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n");
    for name in names {
        let shown = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&#34;")
            .replace('\'', "&#39;");
        let href = name.replace('%', "%25").replace('?', "%3F").replace('#', "%23");
        body.push_str(&format!("<a href=\"{href}\">{shown}</a>\n"));
    }
    body.push_str("</pre>\n");
    text(StatusCode::OK, "text/html; charset=utf-8", body)
}

/// What a path of the log directory is.
enum Node {
    /// A directory and its entries' names (directories with a trailing slash).
    Dir(Vec<String>),
    /// A file and its text.
    File(String),
}

/// `logs/…`: `path` is what follows `logs` ("" or "/…").
fn logs(state: &ApiState, profile: &NodeProfile, path: &str) -> Response {
    let Some(rel) = path.strip_prefix('/') else {
        // `logs` itself: a directory asked for without its slash.
        return redirect("logs/");
    };
    let trailing = rel.ends_with('/') || rel.is_empty();
    let clean = rel.trim_end_matches('/');
    if clean
        .split('/')
        .any(|seg| seg == ".." || seg == "." || (seg.is_empty() && !clean.is_empty()))
    {
        return not_found();
    }
    let base = clean.rsplit('/').next().unwrap_or("");
    match lookup(state, profile, clean) {
        None => not_found(),
        Some(Node::Dir(_)) if !trailing => redirect(&format!("{base}/")),
        Some(Node::File(_)) if trailing => redirect(&format!("../{base}")),
        Some(Node::Dir(names)) => listing(names),
        Some(Node::File(body)) => text(StatusCode::OK, "text/plain; charset=utf-8", body),
    }
}

fn lines_text(lines: &[LogLine], format: impl Fn(&LogLine) -> String) -> String {
    lines.iter().map(|l| format(l) + "\n").collect()
}

/// The entry at `path` (no leading or trailing slash; "" is the log directory itself).
fn lookup(state: &ApiState, profile: &NodeProfile, path: &str) -> Option<Node> {
    let fixed = nodelogs::log_files(profile);
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    if fixed
        .iter()
        .any(|(p, e)| *e == LogEntry::Dir && p.trim_end_matches('/') == path)
        || path.is_empty()
    {
        let mut names: Vec<String> = fixed
            .iter()
            .filter_map(|(p, _)| p.strip_prefix(prefix.as_str()))
            .filter(|rest| !rest.is_empty() && !rest.trim_end_matches('/').contains('/'))
            .map(str::to_string)
            .collect();
        names.extend(
            pod_logs(state, profile, path)
                .unwrap_or_default()
                .into_iter()
                .map(|(n, _)| n),
        );
        return Some(Node::Dir(names));
    }
    if let Some((_, entry)) = fixed.iter().find(|(p, _)| *p == path) {
        let read = |key: &str| state.logs.read("", &profile.name, key, false).unwrap_or_default();
        return Some(Node::File(match entry {
            LogEntry::Component(key) => lines_text(&read(key), |l| l.text.clone()),
            LogEntry::Syslog => lines_text(&read(nodelogs::KUBELET), |l| {
                nodelogs::syslog_line(profile, l.at, &l.text)
            }),
            LogEntry::Dir => return None,
        }));
    }
    // Inside containers/ or pods/.
    let (dir, name) = path.rsplit_once('/')?;
    let entries = pod_logs(state, profile, dir)?;
    let (_, node) = entries.into_iter().find(|(n, _)| n.trim_end_matches('/') == name)?;
    match node {
        PodLog::Dir => Some(Node::Dir(
            pod_logs(state, profile, path)?.into_iter().map(|(n, _)| n).collect(),
        )),
        PodLog::File {
            ns,
            pod,
            container,
            previous,
        } => {
            let lines = state.logs.read(&ns, &pod, &container, previous).unwrap_or_default();
            Some(Node::File(lines_text(&lines, cri_line)))
        }
    }
}

/// A line as the runtime writes it to a container's log file (the CRI log format).
fn cri_line(l: &LogLine) -> String {
    format!("{} stdout F {}", l.at.format("%Y-%m-%dT%H:%M:%S%.9fZ"), l.text)
}

/// An entry under `containers/` or `pods/`.
enum PodLog {
    Dir,
    File {
        ns: String,
        pod: String,
        container: String,
        previous: bool,
    },
}

/// The pods bound to the node and their started containers: (pod, status of each container).
fn started_containers(state: &ApiState, node: &str) -> Vec<(Obj, Vec<Value>)> {
    let (pods, _) = state.store.list(resources::core("pods"), None);
    pods.into_iter()
        .filter(|p| p.node_name() == node)
        .map(|p| {
            let statuses: Vec<Value> = ["/status/initContainerStatuses", "/status/containerStatuses"]
                .iter()
                .filter_map(|ptr| p.value().pointer(ptr).and_then(Value::as_array))
                .flatten()
                .filter(|c| !json::str(c, "/containerID").is_empty())
                .cloned()
                .collect();
            (p, statuses)
        })
        .filter(|(_, c)| !c.is_empty())
        .collect()
}

/// The entries of `dir` when it is `containers`, `pods` or below `pods`; None otherwise.
fn pod_logs(state: &ApiState, profile: &NodeProfile, dir: &str) -> Option<Vec<(String, PodLog)>> {
    let segs: Vec<&str> = if dir.is_empty() {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    let file = |pod: &Obj, container: &str, previous: bool| PodLog::File {
        ns: pod.namespace().to_string(),
        pod: pod.name().to_string(),
        container: container.to_string(),
        previous,
    };
    let containers = || started_containers(state, &profile.name);
    match segs.as_slice() {
        [] => Some(Vec::new()),
        ["containers"] => Some(
            containers()
                .iter()
                .flat_map(|(pod, statuses)| {
                    statuses.iter().map(move |c| {
                        let id = json::str(c, "/containerID").split_once("://").map_or("", |(_, id)| id);
                        let name = json::str(c, "/name");
                        (
                            format!("{}_{}_{name}-{id}.log", pod.name(), pod.namespace()),
                            file(pod, name, false),
                        )
                    })
                })
                .collect(),
        ),
        ["pods"] => Some(
            containers()
                .iter()
                .map(|(pod, _)| {
                    (
                        format!("{}_{}_{}/", pod.namespace(), pod.name(), pod.uid()),
                        PodLog::Dir,
                    )
                })
                .collect(),
        ),
        ["pods", pod_dir] => {
            let all = containers();
            let (_, statuses) = all.iter().find(|(p, _)| pod_dir_name(p) == *pod_dir)?;
            Some(
                statuses
                    .iter()
                    .map(|c| (format!("{}/", json::str(c, "/name")), PodLog::Dir))
                    .collect(),
            )
        }
        ["pods", pod_dir, container] => {
            let all = containers();
            let (pod, statuses) = all.iter().find(|(p, _)| pod_dir_name(p) == *pod_dir)?;
            let status = statuses.iter().find(|c| json::str(c, "/name") == *container)?;
            let restarts = status.get("restartCount").and_then(Value::as_u64).unwrap_or(0);
            // The kubelet keeps the current instance's log and the one before.
            let mut files = vec![(format!("{restarts}.log"), file(pod, container, false))];
            if restarts > 0 {
                files.push((format!("{}.log", restarts - 1), file(pod, container, true)));
            }
            Some(files)
        }
        _ => None,
    }
}

fn pod_dir_name(pod: &Obj) -> String {
    format!("{}_{}_{}", pod.namespace(), pod.name(), pod.uid())
}
