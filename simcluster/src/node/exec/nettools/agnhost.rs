//! agnhost connect (TCP and UDP) as the e2e images run it, with its Go-style errors.

use super::{AGNHOST_CONNECT_USAGE, Addr, Dest, Failure, Net, Proto, go_duration, out, split_host_port};
use crate::node::runtime::ExecOutput;

/// `agnhost connect HOST:PORT [--timeout=D] [--protocol=tcp|udp]`: silent on success; otherwise
/// one line on stderr prefixed TIMEOUT, REFUSED, DNS, OTHER or UNKNOWN, and exit 1.
pub(super) fn agnhost(net: &Net, args: &[String]) -> ExecOutput {
    match args.first().map(String::as_str) {
        Some("connect") => {}
        other => {
            let other = other.unwrap_or("");
            return out(
                "",
                format!("Error: unknown command {other:?} for \"agnhost\"\nRun 'agnhost --help' for usage.\n"),
                1,
            );
        }
    }
    let mut timeout: Option<f64> = None;
    let mut protocol = "tcp".to_string();
    let mut udp_data = "hostname".to_string();
    let mut dests: Vec<&str> = Vec::new();
    let mut i = 1;
    let mut flags = true;
    while let Some(a) = args.get(i) {
        i += 1;
        if a == "--" {
            flags = false;
            continue;
        }
        let Some(flag) = a.strip_prefix("--").filter(|_| flags) else {
            if a == "-h" && flags {
                return out(AGNHOST_CONNECT_USAGE, "", 0);
            }
            if let Some(short) = a.strip_prefix('-').and_then(|s| s.chars().next()).filter(|_| flags) {
                return out(
                    "",
                    format!("Error: unknown shorthand flag: '{short}' in {a}\n{AGNHOST_CONNECT_USAGE}"),
                    1,
                );
            }
            dests.push(a);
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        if name == "help" {
            return out(AGNHOST_CONNECT_USAGE, "", 0);
        }
        if !matches!(name, "timeout" | "protocol" | "udp-data" | "sctp-data") {
            return out("", format!("Error: unknown flag: --{name}\n{AGNHOST_CONNECT_USAGE}"), 1);
        }
        let value = match inline {
            Some(v) => v,
            None => match args.get(i) {
                Some(v) => {
                    i += 1;
                    v.clone()
                }
                None => {
                    return out(
                        "",
                        format!("Error: flag needs an argument: --{name}\n{AGNHOST_CONNECT_USAGE}"),
                        1,
                    );
                }
            },
        };
        match name {
            "timeout" => match go_duration(&value) {
                Some(t) => timeout = Some(t),
                None => {
                    return out(
                        "",
                        format!(
                            "Error: invalid argument {value:?} for \"--timeout\" flag: time: invalid duration \
                            {value:?}\n{AGNHOST_CONNECT_USAGE}"
                        ),
                        1,
                    );
                }
            },
            "protocol" => protocol = value,
            "udp-data" => udp_data = value,
            _ => {}
        }
    }
    let [dest] = dests[..] else {
        return out(
            "",
            format!(
                "Error: accepts 1 arg(s), received {}\n{AGNHOST_CONNECT_USAGE}",
                dests.len()
            ),
            1,
        );
    };
    let timed = timeout.is_some_and(|t| t > 0.0);
    match protocol.as_str() {
        "" | "tcp" => connect_tcp(net, dest, timed),
        "udp" => connect_udp(net, dest, &udp_data),
        "sctp" => out("", "OTHER: protocol not supported\n", 1),
        other => out("", format!("Unsupported protocol\n{other}"), 1),
    }
}

/// The address of `dest`, or agnhost's UNKNOWN/DNS line.
pub(super) fn agnhost_resolve(net: &Net, dest: &str, proto: &str) -> Result<(Addr, u16), ExecOutput> {
    let (host, port) = split_host_port(dest).map_err(|e| out("", format!("UNKNOWN: {e}\n"), 1))?;
    let port: u16 = match port {
        "" => 0,
        p => p
            .parse()
            .map_err(|_| out("", format!("DNS: lookup {proto}/{p}: unknown port\n"), 1))?,
    };
    let server = net.wire.dns_server();
    match net.locate(host) {
        Dest::At(addr, _) => Ok((addr, port)),
        Dest::NotFound if net.windows => Err(out("", format!("DNS: lookup {host}: no such host\n"), 1)),
        Dest::NotFound => Err(out("", format!("DNS: lookup {host} on {server}:53: no such host\n"), 1)),
        // Go on Windows resolves through GetAddrInfoW: no server in the message, and a lookup that
        // got no answer is WSATRY_AGAIN.
        Dest::Timeout(_) if net.windows => Err(out(
            "",
            format!("DNS: lookup {host}: getaddrinfow: {WSATRY_AGAIN}\n"),
            1,
        )),
        Dest::Timeout(server) => Err(out("", format!("DNS: lookup {host} on {server}:53: i/o timeout\n"), 1)),
    }
}

/// The Windows text of WSATRY_AGAIN (11002), what GetAddrInfoW fails with when no DNS server answered.
pub(super) const WSATRY_AGAIN: &str = "This is usually a temporary error during hostname resolution and means that the local server \
    did not receive a response from an authoritative server.";

pub(super) fn connect_tcp(net: &Net, dest: &str, timed: bool) -> ExecOutput {
    let (addr, port) = match agnhost_resolve(net, dest, "tcp") {
        Ok(found) => found,
        Err(o) => return o,
    };
    let dial = format!("dial tcp {}", addr.with_port(port));
    let syscall = if net.windows { "connectex" } else { "connect" };
    match net.connect(&addr, port, Proto::Tcp) {
        // A reset after the handshake: the dial itself succeeded.
        Ok(()) | Err(Failure::Reset) => out("", "", 0),
        // Go on Windows: WSAETIMEDOUT is not a net timeout unless agnhost set a deadline.
        Err(Failure::Timeout | Failure::NoReply) if net.windows && !timed => out(
            "",
            format!(
                "OTHER: {dial}: connectex: A connection attempt failed because the connected party did not properly \
                respond after a period of time, or established connection failed because connected host has failed \
                to respond.\n"
            ),
            1,
        ),
        Err(Failure::Timeout | Failure::NoReply) => out("", "TIMEOUT\n", 1),
        // Go on Windows: WSAECONNREFUSED is not syscall.ECONNREFUSED.
        Err(Failure::Refused) if net.windows => out(
            "",
            format!(
                "OTHER: {dial}: connectex: No connection could be made because the target machine actively refused \
                it.\n"
            ),
            1,
        ),
        Err(Failure::Refused) => out("", "REFUSED\n", 1),
        Err(Failure::Other(m)) => out("", format!("OTHER: {dial}: {syscall}: {m}\n"), 1),
    }
}

pub(super) fn connect_udp(net: &Net, dest: &str, data: &str) -> ExecOutput {
    let (addr, port) = match agnhost_resolve(net, dest, "udp") {
        Ok(found) => found,
        Err(o) => return o,
    };
    let remote = addr.with_port(port);
    let local = format!("{}:{}", net.ctx.pod_ip(), net.local_port(&remote));
    let read = format!("read udp {local}->{remote}");
    match net.udp(&addr, port, data) {
        Ok(reply) if reply.is_empty() => out(
            "",
            "OTHER: No data received from the server. Cannot guarantee the server received the request.\n",
            1,
        ),
        Ok(_) => out("", "", 0),
        Err(Failure::Timeout | Failure::NoReply) => out("", format!("TIMEOUT: {read}: i/o timeout\n"), 1),
        Err(Failure::Refused | Failure::Reset) if net.windows => out(
            "",
            format!("UNKNOWN: {read}: wsarecv: An existing connection was forcibly closed by the remote host.\n"),
            1,
        ),
        Err(Failure::Refused | Failure::Reset) => out("", format!("REFUSED: {read}: read: connection refused\n"), 1),
        Err(Failure::Other(m)) => {
            let call = if net.windows { "wsarecv" } else { "read" };
            out("", format!("UNKNOWN: {read}: {call}: {m}\n"), 1)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// curl
// ---------------------------------------------------------------------------------------------
