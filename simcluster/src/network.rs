//! The network commands simulated containers run, answered from the cluster's state. So far
//! the name lookups (`nslookup`, `Resolve-DnsName`) through [`crate::dns`]; connections
//! (`agnhost connect`, `curl`, `ping`, …) still fail as in a container without a network,
//! until the flow fabric decides them.

use std::sync::Arc;

use crate::commands::{CommandContext, NetworkCommands};
use crate::dns::{self, Records, Resolution};
use crate::runtime::{ExecFuture, ExecOutput, ExitStatus};
use crate::store::Store;

/// Network commands backed by the store.
#[derive(Debug)]
pub struct SimNetwork {
    store: Arc<Store>,
}

impl SimNetwork {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }
}

fn output(stdout: String, stderr: String, code: i32) -> ExecOutput {
    ExecOutput {
        stdout: stdout.into_bytes(),
        stderr: stderr.into_bytes(),
        exit: ExitStatus::Code(code),
    }
}

impl NetworkCommands for SimNetwork {
    fn run(&self, ctx: &CommandContext, argv: &[String]) -> Option<ExecFuture> {
        let command = argv.first()?.rsplit(['/', '\\']).next()?.to_ascii_lowercase();
        let out = match command.trim_end_matches(".exe") {
            "nslookup" if !ctx.is_windows() => self.nslookup(ctx, &argv[1..]),
            "resolve-dnsname" => self.resolve_dns_name(ctx, &argv[1..]),
            _ => return None,
        };
        Some(Box::pin(std::future::ready(out)))
    }
}

impl SimNetwork {
    /// busybox `nslookup NAME`: the server, then the answer or NXDOMAIN.
    fn nslookup(&self, ctx: &CommandContext, args: &[String]) -> ExecOutput {
        let Some(name) = args.iter().find(|a| !a.starts_with('-')) else {
            return output(
                String::new(),
                "BusyBox v1.36.1 multi-call binary.\n\nUsage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n"
                    .into(),
                1,
            );
        };
        let config = ctx.dns();
        let server = config.nameservers.first().cloned().unwrap_or_default();
        let records = Records::from_store(&self.store);
        let head = format!("Server:\t\t{server}\nAddress:\t{server}:53\n\n");
        match dns::resolve(&records, name, &config, false) {
            Resolution::Resolved {
                name: fqdn,
                addresses,
                alias,
            } => {
                let mut text = head;
                if let Some(target) = alias {
                    text.push_str(&format!("{fqdn}\tcanonical name = {target}\n"));
                }
                for a in addresses {
                    text.push_str(&format!("Name:\t{fqdn}\nAddress: {a}\n"));
                }
                text.push('\n');
                output(text, String::new(), 0)
            }
            Resolution::NotFound { .. } => output(
                format!("{head}** server can't find {name}: NXDOMAIN\n\n"),
                String::new(),
                1,
            ),
            Resolution::NoNameserver => output(
                String::new(),
                ";; connection timed out; no servers could be reached\n".into(),
                1,
            ),
        }
    }

    /// PowerShell `Resolve-DnsName [-Name] NAME`: the answer table, or the DNS error record.
    fn resolve_dns_name(&self, ctx: &CommandContext, args: &[String]) -> ExecOutput {
        let named = args
            .iter()
            .position(|a| a.eq_ignore_ascii_case("-name"))
            .and_then(|i| args.get(i + 1));
        let name = named
            .or_else(|| args.iter().find(|a| !a.starts_with('-')))
            .cloned()
            .unwrap_or_default();
        let config = ctx.dns();
        let records = Records::from_store(&self.store);
        match dns::resolve(&records, &name, &config, true) {
            Resolution::Resolved {
                name: fqdn, addresses, ..
            } => {
                let mut text = String::from(
                    "\r\nName                                           Type   TTL   Section    IPAddress\r\n----                                           ----   ---   -------    ---------\r\n",
                );
                for a in addresses {
                    text.push_str(&format!("{fqdn:<46} A      30    Answer     {a}\r\n"));
                }
                text.push_str("\r\n");
                output(text, String::new(), 0)
            }
            Resolution::NotFound { .. } => output(
                String::new(),
                format!(
                    "Resolve-DnsName : {name} : DNS name does not exist\r\nAt line:1 char:1\r\n+ Resolve-DnsName {name}\r\n+ ~~~~~~~~~~~~~~~~~~~~~~~~\r\n    + CategoryInfo          : ResourceUnavailable: ({name}:String) [Resolve-DnsName], Win32Exception\r\n    + FullyQualifiedErrorId : DNS_ERROR_RCODE_NAME_ERROR,Microsoft.DnsClient.Commands.ResolveDnsName\r\n"
                ),
                1,
            ),
            Resolution::NoNameserver => output(
                String::new(),
                format!("Resolve-DnsName : {name} : This operation returned because the timeout period expired\r\n"),
                1,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profiles;
    use crate::registry;
    use crate::store::Part;
    use crate::topology::Topology;
    use serde_json::json;
    use std::net::Ipv4Addr;

    fn setup() -> (Arc<Store>, Arc<Vec<crate::profile::NodeProfile>>) {
        let store = Arc::new(Store::default());
        for ns in ["default", "team"] {
            store
                .create(registry::core("namespaces"), "", json!({"metadata": {"name": ns}}))
                .expect("ns");
        }
        store
            .create(
                registry::core("services"),
                "team",
                json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}}),
            )
            .expect("svc");
        let topo = Topology::default_cluster();
        let ips: Vec<Ipv4Addr> = (0..topo.nodes.len())
            .map(|i| Ipv4Addr::new(127, 8, 8, 10 + i as u8))
            .collect();
        (store, Arc::new(profiles(&topo, &ips)))
    }

    fn pod_on(store: &Store, name: &str, node: &str, image: &str) -> crate::store::Obj {
        let pods = registry::core("pods");
        store
            .create(
                pods,
                "team",
                json!({"metadata": {"name": name}, "spec": {"nodeName": node,
                "containers": [{"name": "c", "image": image}]}}),
            )
            .expect("pod");
        store
            .modify(pods, "team", name, Part::Status, |p| {
                p["status"] = json!({"phase": "Running", "podIP": "10.244.1.9"});
                Ok(())
            })
            .expect("status")
    }

    async fn run(net: &SimNetwork, ctx: &CommandContext, argv: &[&str]) -> ExecOutput {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        net.run(ctx, &argv).expect("a network command").await
    }

    #[tokio::test]
    async fn linux_nslookup_uses_the_search_list() {
        let (store, profiles) = setup();
        let pod = pod_on(&store, "lin", "linux-1", "busybox:1.36");
        let ctx = CommandContext::new(store.clone(), &profiles, pod, "c");
        let net = SimNetwork::new(store);
        let out = run(&net, &ctx, &["nslookup", "web.team"]).await;
        assert_eq!(out.exit, ExitStatus::Code(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Name:\tweb.team.svc.cluster.local\nAddress: 10.96.0.50"),
            "{text}"
        );
        let missing = run(&net, &ctx, &["nslookup", "nope"]).await;
        assert_eq!(missing.exit, ExitStatus::Code(1));
        assert!(String::from_utf8_lossy(&missing.stdout).contains("NXDOMAIN"));
    }

    #[tokio::test]
    async fn windows_resolve_dns_name_has_a_single_suffix() {
        // DNS-SINGLE-SUFFIX and DNS-PQDN-DOTTED on a Windows pod.
        let (store, profiles) = setup();
        let pod = pod_on(
            &store,
            "win",
            "win2022-1",
            "mcr.microsoft.com/windows/servercore:ltsc2022",
        );
        let ctx = CommandContext::new(store.clone(), &profiles, pod, "c");
        let net = SimNetwork::new(store);
        let short = run(&net, &ctx, &["Resolve-DnsName", "web"]).await;
        assert_eq!(short.exit, ExitStatus::Code(0));
        assert!(String::from_utf8_lossy(&short.stdout).contains("web.team.svc.cluster.local"));
        let dotted = run(&net, &ctx, &["Resolve-DnsName", "-Name", "web.team"]).await;
        assert_eq!(dotted.exit, ExitStatus::Code(1));
        assert!(String::from_utf8_lossy(&dotted.stderr).contains("DNS name does not exist"));
        assert!(
            net.run(&ctx, &["curl".to_string(), "http://web".into()]).is_none(),
            "connections are not answered yet"
        );
    }
}
