//! busybox nc: -z port checks and UDP datagrams.

use super::{Dest, Failure, Net, Proto, out};
use crate::node::runtime::ExecOutput;

/// busybox `nc [-v[v]] [-z] [-u] [-w SEC] HOST PORT`: with `-v`, `HOST (IP:PORT) open` on stderr;
/// failures exit 1 (a refusal is printed only with `-vv`); `-u` without `-z` sends stdin as one
/// datagram and prints the reply.
pub(super) fn nc(net: &Net, args: &[String], stdin: &[u8]) -> ExecOutput {
    let (mut verbose, mut zero, mut udp) = (0, false, false);
    let mut found: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if a.len() > 1 && a.starts_with('-') {
            for (k, c) in a.char_indices().skip(1) {
                match c {
                    'v' => verbose += 1,
                    'z' => zero = true,
                    'u' => udp = true,
                    'p' | 's' | 'w' | 'i' | 'o' | 'q' => {
                        if a[k + 1..].is_empty() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(a);
        }
    }
    let (Some(host), Some(port_text)) = (found.first().copied(), found.get(1).copied()) else {
        return out("", "Usage: nc [OPTIONS] HOST PORT\n", 1);
    };
    let Ok(port) = port_text.parse::<u16>() else {
        return out("", format!("nc: bad port '{port_text}'\n"), 1);
    };
    let addr = match net.locate(host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => return out("", format!("nc: bad address '{host}'\n"), 1),
    };
    let dotted = addr.with_port(port);
    let open = if verbose > 0 {
        format!("{host} ({dotted}) open\n")
    } else {
        String::new()
    };
    let failed = |reason: &str, shown: bool| {
        let text = if shown {
            format!("nc: {host} ({dotted}): {reason}\n")
        } else {
            String::new()
        };
        out("", text, 1)
    };
    if udp && !zero {
        // Connecting a UDP socket always succeeds; then one datagram out, one back.
        let payload = String::from_utf8_lossy(stdin);
        let payload = payload.trim_end_matches(['\r', '\n']);
        if payload.is_empty() {
            return out("", open, 0);
        }
        return match net.udp(&addr, port, payload) {
            Ok(reply) => out(reply, open, 0),
            Err(Failure::Refused | Failure::Reset) if verbose > 1 => {
                out("", format!("{open}nc: net read: Connection refused\n"), 0)
            }
            Err(_) => out("", open, 0),
        };
    }
    let proto = if udp { Proto::Udp } else { Proto::Tcp };
    match net.connect(&addr, port, proto) {
        Ok(()) | Err(Failure::Reset) => out("", open, 0),
        // A UDP probe only fails when an ICMP port unreachable comes back.
        Err(Failure::Timeout | Failure::NoReply) if udp => out("", open, 0),
        Err(Failure::Refused) => failed("Connection refused", verbose > 1),
        Err(Failure::Timeout | Failure::NoReply) => failed("Connection timed out", verbose > 0),
        Err(Failure::Other(m)) => failed(&m, verbose > 0),
    }
}

// ---------------------------------------------------------------------------------------------
// nslookup (busybox on Linux, nslookup.exe on Windows), dig
// ---------------------------------------------------------------------------------------------
