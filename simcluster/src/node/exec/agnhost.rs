//! agnhost's subcommands, and the network commands answered through the seam's wire (or offline).

use std::sync::Arc;

use super::nettools::{self, Offline};
use super::session::Session;
use super::support::out;
use super::volumes::WINDOWS_HOSTS_PATH;
use super::{Call, Reply};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// agnhost
// ---------------------------------------------------------------------------------------------

/// agnhost subcommands that run servers or long tasks: not simulated inside an exec.
pub(super) const AGNHOST_SERVERS: &[&str] = &[
    "audit-proxy",
    "crd-conversion-webhook",
    "entrypoint-tester",
    "fake-gitserver",
    "grpc-health-checking",
    "guestbook",
    "inclusterclient",
    "liveness",
    "logs-generator",
    "mounttest",
    "net",
    "netexec",
    "nettest",
    "no-snat-test",
    "no-snat-test-proxy",
    "pause",
    "port-forward-tester",
    "porter",
    "resource-consumer-controller",
    "serve-hostname",
    "tcp-reset",
    "test-webserver",
    "webhook",
];

/// `agnhost dns-suffix | dns-server-list | etc-hosts | connect …`: the same output format on
/// both OSes (Go's `Println`, `\n`), from the container's DNS configuration.
pub(super) fn agnhost(s: &Arc<Session>, call: Call) -> Reply {
    let sub = call.args().first().map(String::as_str).unwrap_or("");
    let o = match sub {
        "connect" => return network(s, call),
        "dns-suffix" => ExecOutput::ok(format!("{}\n", s.ctx.dns().searches.join(","))),
        "dns-server-list" => ExecOutput::ok(format!("{}\n", s.ctx.dns().nameservers.join(","))),
        "etc-hosts" => {
            let path = if s.windows() { WINDOWS_HOSTS_PATH } else { "/etc/hosts" };
            let content = s.disk().get(path).and_then(|e| e.file.as_ref()).map(|(d, _)| d.clone());
            ExecOutput::ok(content.unwrap_or_default())
        }
        "" | "help" | "--help" | "-h" => ExecOutput::ok(
            "agnhost: a test image with multiple subcommands.\n\nUsage:\n  agnhost [command]\n\nUse \"agnhost \
            [command] --help\" for more information about a command.\n",
        ),
        server if AGNHOST_SERVERS.contains(&server) => out(
            "",
            format!("agnhost {server}: not simulated by the bundled cluster inside an exec\n"),
            1,
        ),
        other => out(
            "",
            format!("Error: unknown command {other:?} for \"agnhost\"\nRun 'agnhost --help' for usage.\n"),
            1,
        ),
    };
    o.into()
}

// ---------------------------------------------------------------------------------------------
// Network commands: through the seam's wire, or offline
// ---------------------------------------------------------------------------------------------

/// .NET socket scripts are not statements the PowerShell interpreter runs one by one: a
/// UdpClient exchange is answered as a whole ([`nettools::dotnet_udp`]).
pub(super) fn ps_dotnet_udp(s: &Session, script: &str) -> Option<ExecOutput> {
    match &s.network {
        Some(net) => nettools::dotnet_udp(&s.ctx, net.wire(&s.ctx).as_ref(), script),
        None => {
            let dns_server = s.ctx.dns().nameservers.first().cloned().unwrap_or_default();
            nettools::dotnet_udp(&s.ctx, &Offline { dns_server }, script)
        }
    }
}

pub(super) fn network(s: &Arc<Session>, call: Call) -> Reply {
    let o = match &s.network {
        Some(net) => nettools::run_with_input(&s.ctx, net.wire(&s.ctx).as_ref(), &call.argv, &call.stdin),
        None => {
            let dns_server = s.ctx.dns().nameservers.first().cloned().unwrap_or_default();
            nettools::run_with_input(&s.ctx, &Offline { dns_server }, &call.argv, &call.stdin)
        }
    };
    o.into()
}
