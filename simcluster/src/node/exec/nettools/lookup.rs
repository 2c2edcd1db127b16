//! Name lookups: nslookup (busybox and Windows) and dig.

use std::fmt::Write as _;

use super::{Lookup, Net, out, positionals, ttl};
use crate::node::runtime::ExecOutput;
use crate::vocab::hash::fnv1a;

/// `nslookup NAME [SERVER]`: the server, then the answer; NXDOMAIN and timeouts exit 1.
pub(super) fn nslookup(net: &Net, args: &[String]) -> ExecOutput {
    let found = positionals(args, &[]);
    let asked = found.get(1).copied();
    let default_server = asked.map_or_else(|| net.wire.dns_server(), str::to_string);
    let Some(name) = found.first().copied() else {
        if net.windows {
            return out(
                format!("Default Server:  UnKnown\r\nAddress:  {default_server}\r\n\r\n> "),
                "",
                0,
            );
        }
        return out(
            "",
            "BusyBox v1.36.1 multi-call binary.\n\nUsage: nslookup [-type=QUERY_TYPE] [-debug] HOST [DNS_SERVER]\n",
            1,
        );
    };
    let lookup = net.wire.resolve(name, asked);
    if net.windows {
        return windows_nslookup(name, &default_server, lookup);
    }
    let head = |server: &str| format!("Server:\t\t{server}\nAddress:\t{server}:53\n\n");
    match lookup {
        Lookup::Found { fqdn, addrs, alias } if !addrs.is_empty() || alias.is_some() => {
            let mut text = head(&default_server);
            let owner = match &alias {
                Some(target) => {
                    let _ = writeln!(text, "{fqdn}\tcanonical name = {target}");
                    target.clone()
                }
                None => fqdn,
            };
            for a in addrs {
                let _ = write!(text, "Name:\t{owner}\nAddress: {a}\n");
            }
            text.push('\n');
            out(text, "", 0)
        }
        Lookup::Found { .. } | Lookup::NotFound => out(
            format!("{}** server can't find {name}: NXDOMAIN\n\n", head(&default_server)),
            "",
            1,
        ),
        Lookup::Timeout { .. } => out(";; connection timed out; no servers could be reached\n\n", "", 1),
    }
}

pub(super) fn windows_nslookup(name: &str, server: &str, lookup: Lookup) -> ExecOutput {
    let head = format!("Server:  UnKnown\r\nAddress:  {server}\r\n\r\n");
    match lookup {
        Lookup::Found { fqdn, addrs, alias } if !addrs.is_empty() => {
            let mut text = head;
            let (owner, aliases) = match alias {
                Some(target) => (target, Some(fqdn)),
                None => (fqdn, None),
            };
            let _ = write!(text, "Name:    {owner}\r\n");
            match &addrs[..] {
                [one] => {
                    let _ = write!(text, "Address:  {one}\r\n");
                }
                [first, rest @ ..] => {
                    let _ = write!(text, "Addresses:  {first}\r\n");
                    for a in rest {
                        let _ = write!(text, "\t  {a}\r\n");
                    }
                }
                [] => {}
            }
            if let Some(a) = aliases {
                let _ = write!(text, "Aliases:  {a}\r\n");
            }
            text.push_str("\r\n");
            out(text, "", 0)
        }
        Lookup::Found { .. } | Lookup::NotFound => out(
            head,
            format!("*** UnKnown can't find {name}: Non-existent domain\r\n"),
            1,
        ),
        Lookup::Timeout { .. } => out(
            head,
            "DNS request timed out.\r\n    timeout was 2 seconds.\r\n*** Request to UnKnown timed-out\r\n",
            1,
        ),
    }
}

/// `dig [@SERVER] NAME [TYPE] [+short] [+search]`: no search list unless `+search`; NXDOMAIN is
/// an answer (exit 0), no server is exit 9.
pub(super) fn dig(net: &Net, args: &[String]) -> ExecOutput {
    const TYPES: &[&str] = &["A", "AAAA", "ANY", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT"];
    let (mut short, mut search) = (false, false);
    let mut server: Option<&str> = None;
    let mut name: Option<&str> = None;
    let mut qtype = "A".to_string();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if let Some(s) = a.strip_prefix('@') {
            server = Some(s);
        } else if let Some(option) = a.strip_prefix('+') {
            match option {
                "short" => short = true,
                "search" => search = true,
                "nosearch" => search = false,
                _ => {}
            }
        } else if a == "-t" {
            qtype = args.get(i).map(|t| t.to_ascii_uppercase()).unwrap_or(qtype);
            i += 1;
        } else if a.starts_with('-') {
            if matches!(a.as_str(), "-p" | "-b" | "-c" | "-q" | "-x" | "-f" | "-k" | "-y") {
                i += 1;
            }
        } else if TYPES.contains(&a.to_ascii_uppercase().as_str()) && name.is_some() {
            qtype = a.to_ascii_uppercase();
        } else if name.is_none() {
            name = Some(a);
        }
    }
    let name = name.unwrap_or(".");
    let query = if search || name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    };
    let asked = server.map_or_else(|| net.wire.dns_server(), str::to_string);
    let lookup = net.wire.resolve(&query, server);
    if let Lookup::Timeout { .. } = lookup {
        return out(";; connection timed out; no servers could be reached\n", "", 9);
    }
    let mut answers: Vec<(String, u32, &str, String)> = Vec::new();
    let found = matches!(lookup, Lookup::Found { .. });
    if let Lookup::Found { fqdn, addrs, alias } = lookup {
        let owner = match alias {
            Some(target) => {
                answers.push((format!("{fqdn}."), ttl(&fqdn), "CNAME", format!("{target}.")));
                target
            }
            None => fqdn,
        };
        if matches!(qtype.as_str(), "A" | "ANY") {
            for a in addrs {
                answers.push((format!("{owner}."), ttl(&owner), "A", a.to_string()));
            }
        }
    }
    if short {
        let text: String = answers.iter().map(|(_, _, _, data)| format!("{data}\n")).collect();
        return out(text, "", 0);
    }
    let status = if found { "NOERROR" } else { "NXDOMAIN" };
    let id = fnv1a(query.as_bytes()) % 65536;
    let shown = if query.ends_with('.') {
        query.clone()
    } else {
        format!("{query}.")
    };
    let mut text = format!(
        "\n; <<>> DiG 9.18.27 <<>> {}\n;; global options: +cmd\n;; Got answer:\n;; ->>HEADER<<- opcode: QUERY, status: \
        {status}, id: {id}\n;; flags: qr aa rd; QUERY: 1, ANSWER: {}, AUTHORITY: 0, ADDITIONAL: 0\n;; WARNING: \
        recursion requested but not available\n\n;; QUESTION SECTION:\n;{shown}\t\t\tIN\t{qtype}\n",
        args.join(" "),
        answers.len(),
    );
    if !answers.is_empty() {
        text.push_str("\n;; ANSWER SECTION:\n");
        for (owner, ttl, kind, data) in &answers {
            let _ = writeln!(text, "{owner}\t{ttl}\tIN\t{kind}\t{data}");
        }
    }
    let _ = write!(
        text,
        "\n;; Query time: 0 msec\n;; SERVER: {asked}#53({asked}) (UDP)\n\n"
    );
    out(text, "", 0)
}

// ---------------------------------------------------------------------------------------------
// ping (busybox on Linux, ping.exe on Windows)
// ---------------------------------------------------------------------------------------------
