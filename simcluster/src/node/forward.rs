//! Port forwarding as the kubelet does it: a connection from inside the pod's network namespace
//! to one of its ports (`localhost:PORT`, never through Services or network policy), answered by
//! the app the pod runs (<https://kubernetes.io/docs/tasks/access-application-cluster/port-forward-access-application-cluster/>).

use std::net::Ipv4Addr;
use std::sync::Arc;

use serde_json::Value;

use crate::network::apps::SimNet;
use crate::network::dns::DnsConfig;
use crate::network::wire::Wire as _;
use crate::store::Obj;
use crate::vocab::json;

/// Reaches the apps of the cluster's pods.
#[derive(Debug)]
pub struct Forwarder {
    net: Arc<SimNet>,
}

impl Forwarder {
    pub fn new(net: Arc<SimNet>) -> Self {
        Self { net }
    }

    /// One HTTP GET of `target` at `port` of `pod`: the status and body, or None when nothing
    /// answers HTTP there.
    pub fn http_get(&self, pod: &Obj, port: u16, target: &str) -> Option<(u16, String)> {
        let ip: Ipv4Addr = pod
            .value()
            .pointer("/status/podIP")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())?;
        let container = json::str(pod.value(), "/spec/containers/0/name").to_string();
        let windows = json::str(pod.value(), "/spec/os/name") == "windows";
        let client = self.net.client_for(pod, &container, DnsConfig::default(), windows)?;
        client.http_get(ip, port, target).ok().map(|r| (r.status, r.body))
    }
}
