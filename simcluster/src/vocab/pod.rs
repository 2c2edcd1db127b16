//! What a pod object says about its containers, read the same way by the kubelet, exec and the
//! network.

use serde_json::Value;

use crate::vocab::json;

/// A container of the pod by name, in `containers`, `initContainers` or `ephemeralContainers`.
pub fn find_container<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["/spec/containers", "/spec/initContainers", "/spec/ephemeralContainers"]
        .iter()
        .flat_map(|p| json::array(pod, p))
        .find(|c| json::str(c, "/name") == name)
}

/// A pod asks for HostProcess at pod level or in every one of its containers.
pub fn wants_host_process(pod: &Value) -> bool {
    if json::bool(pod, "/spec/securityContext/windowsOptions/hostProcess") == Some(true) {
        return true;
    }
    let mut containers = ["/spec/containers", "/spec/initContainers"]
        .iter()
        .flat_map(|p| json::array(pod, p))
        .peekable();
    containers.peek().is_some()
        && containers.all(|c| json::bool(c, "/securityContext/windowsOptions/hostProcess") == Some(true))
}
