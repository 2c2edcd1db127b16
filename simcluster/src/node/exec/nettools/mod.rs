//! Network command lines in simulated containers — `agnhost connect`, `curl`/`curl.exe`, `wget`,
//! `nc`, `nslookup`, `dig`, `ping`, `Resolve-DnsName`, `Test-NetConnection`, `Invoke-RestMethod`
//! (Windows PowerShell 5.1's; no certificate checks) — parsed and answered
//! with each tool's exact output, over a [`Wire`] that decides every lookup and connection.
//!
//! [`run`] resolves host names through [`Wire::resolve`] (an IP literal skips DNS), then asks the
//! wire for the connection, HTTP request, UDP exchange or ping, and renders the outcome the way
//! the tool in that container prints it: busybox applets on Linux and busybox-w32 on Windows
//! (`wget`, `nc`, Linux `ping`/`nslookup`), curl 8, agnhost (Go; its Windows build reports
//! refusals and OS timeouts as `OTHER` and resolves names through GetAddrInfoW), Windows
//! `ping.exe`/`nslookup.exe` (`\r\n`), and the PowerShell cmdlets. [`Offline`] is the wire of a
//! container whose packets all get lost.
//!
//! Limits: no progress meters (curl's, or busybox wget's bar beyond one final line), `curl -I`
//! has no `Date` header, `nc` without `-z` only exchanges UDP datagrams, `agnhost connect
//! --protocol=sctp` is not simulated, and an IPv6 literal is reached as the IPv4 address of the
//! same pod or Service ([`Wire::over_ipv6`]; unreachable on single-stack clusters), so a server's
//! `/clientip` answers the client's IPv4 address.

pub use crate::network::fabric::{Failure, Proto};
pub use crate::network::wire::{HttpReply, Lookup, Offline, Wire};
mod agnhost;
mod cmdlets;
mod lookup;
mod nc;
mod ping;
mod transfer;
pub use self::cmdlets::dotnet_udp;

use std::net::{Ipv4Addr, Ipv6Addr};

use self::agnhost::agnhost;
use self::cmdlets::{invoke_rest_method, resolve_dns_name, test_net_connection};
use self::lookup::{dig, nslookup};
use self::nc::nc;
use self::ping::ping;
use self::transfer::{curl, wget};
use crate::node::exec::context::CommandContext;
use crate::node::runtime::{ExecOutput, ExitStatus};
use crate::vocab::hash::fnv1a;

// ---------------------------------------------------------------------------------------------
// Entry
// ---------------------------------------------------------------------------------------------

#[cfg(test)] // used by the tests only
/// Runs a network command line (`argv` after shell interpretation; `argv[0]` as typed, e.g.
/// `curl.exe`, `/agnhost`, `Resolve-DnsName`) in the container `ctx` over `wire`.
pub fn run(ctx: &CommandContext, wire: &dyn Wire, argv: &[String]) -> ExecOutput {
    run_with_input(ctx, wire, argv, &[])
}

/// [`run`] with the command's standard input (what `nc -u` sends).
pub fn run_with_input(ctx: &CommandContext, wire: &dyn Wire, argv: &[String], stdin: &[u8]) -> ExecOutput {
    let net = Net {
        ctx,
        wire,
        windows: ctx.is_windows(),
    };
    let name = tool_name(argv.first().map_or("", String::as_str));
    let args = argv.get(1..).unwrap_or(&[]);
    match name.as_str() {
        "agnhost" => agnhost(&net, args),
        "curl" => curl(&net, args),
        "wget" => wget(&net, args),
        "nc" => nc(&net, args, stdin),
        "nslookup" => nslookup(&net, args),
        "dig" => dig(&net, args),
        "ping" => ping(&net, args),
        "resolve-dnsname" => resolve_dns_name(&net, args),
        "test-netconnection" | "tnc" => test_net_connection(&net, args),
        "invoke-restmethod" | "irm" => invoke_rest_method(&net, args),
        _ => out("", format!("{name}: network unreachable\n"), 1),
    }
}

/// The tool a command name runs: the base name, lower case, without `.exe`
/// (`c:\hpc\agnhost.exe` → `agnhost`).
pub fn tool_name(argv0: &str) -> String {
    let base = argv0.rsplit(['/', '\\']).next().unwrap_or(argv0).to_ascii_lowercase();
    base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
}

fn out(stdout: impl Into<String>, stderr: impl Into<String>, code: i32) -> ExecOutput {
    ExecOutput {
        stdout: stdout.into().into_bytes(),
        stderr: stderr.into().into_bytes(),
        exit: ExitStatus::Code(code),
    }
}

/// One command's view of the network.
struct Net<'a> {
    ctx: &'a CommandContext,
    wire: &'a dyn Wire,
    windows: bool,
}

/// An address to connect to: IPv4, or an IPv6 literal (reached through [`Wire::over_ipv6`]).
#[derive(Debug, Clone)]
struct Addr {
    text: String,
    v4: Option<Ipv4Addr>,
}

impl Addr {
    fn v4(ip: Ipv4Addr) -> Self {
        Self {
            text: ip.to_string(),
            v4: Some(ip),
        }
    }

    /// `ip:port` as sockaddr printers show it (`[::1]:80` for IPv6).
    fn with_port(&self, port: u16) -> String {
        match self.v4 {
            Some(ip) => format!("{ip}:{port}"),
            None => format!("[{}]:{port}", self.text),
        }
    }
}

/// Where a host name led.
#[derive(Clone)]
enum Dest {
    /// An address (an IP literal, or the first address of the name), and the name that answered.
    At(Addr, Option<String>),
    NotFound,
    /// No DNS server answered; the server asked.
    Timeout(String),
}

fn unreachable() -> Failure {
    Failure::Other("Network is unreachable".into())
}

impl Net<'_> {
    fn locate(&self, host: &str) -> Dest {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<Ipv4Addr>() {
            return Dest::At(Addr::v4(ip), None);
        }
        if bare.parse::<Ipv6Addr>().is_ok() {
            let addr = Addr {
                text: bare.to_string(),
                v4: None,
            };
            return Dest::At(addr, None);
        }
        if host.is_empty() {
            return Dest::NotFound;
        }
        // The hosts file answers `localhost` before any DNS query, on both OSes.
        if host.eq_ignore_ascii_case("localhost") {
            return Dest::At(Addr::v4(Ipv4Addr::LOCALHOST), None);
        }
        match self.wire.resolve(host, None) {
            Lookup::Found { fqdn, addrs, .. } => match addrs.first() {
                Some(ip) => Dest::At(Addr::v4(*ip), Some(fqdn)),
                None => Dest::NotFound,
            },
            Lookup::NotFound => Dest::NotFound,
            Lookup::Timeout { server } => Dest::Timeout(server),
        }
    }

    /// The IPv4 address a flow to `addr` is decided by: its own, or for an IPv6 literal the
    /// address of the same pod or Service (dual-stack), else why it fails.
    fn route(&self, addr: &Addr) -> Result<Ipv4Addr, Failure> {
        match addr.v4 {
            Some(ip) => Ok(ip),
            None => match addr.text.parse::<Ipv6Addr>() {
                Ok(v6) => self.wire.over_ipv6(v6),
                Err(_) => Err(unreachable()),
            },
        }
    }

    fn connect(&self, addr: &Addr, port: u16, proto: Proto) -> Result<(), Failure> {
        self.route(addr).and_then(|ip| self.wire.connect(ip, port, proto))
    }

    fn http_get(&self, addr: &Addr, port: u16, target: &str) -> Result<HttpReply, Failure> {
        self.route(addr).and_then(|ip| self.wire.http_get(ip, port, target))
    }

    fn udp(&self, addr: &Addr, port: u16, payload: &str) -> Result<String, Failure> {
        self.route(addr).and_then(|ip| self.wire.udp(ip, port, payload))
    }

    fn ping(&self, addr: &Addr) -> Result<(), Failure> {
        self.route(addr).and_then(|ip| self.wire.ping(ip))
    }

    /// A local UDP port for a socket to `dest` (stable, in the OS's ephemeral range).
    fn local_port(&self, dest: &str) -> u16 {
        let h = fnv1a(format!("{}>{dest}", self.ctx.pod_ip()).as_bytes());
        let (base, span) = if self.windows { (49152, 16384) } else { (32768, 28232) };
        base + u16::try_from(h % span).unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// Argument helpers
// ---------------------------------------------------------------------------------------------

/// Positional arguments, skipping flags and the values of `valued` flags (case-insensitive).
fn positionals<'a>(args: &'a [String], valued: &[&str]) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if valued.iter().any(|v| a.eq_ignore_ascii_case(v)) {
            it.next();
        } else if !(a.starts_with('-') && a.len() > 1) {
            found.push(a.as_str());
        }
    }
    found
}

/// The value after a PowerShell-style `-Flag` (case-insensitive).
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a.eq_ignore_ascii_case(flag))
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// The parts of a URL a client uses.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url {
    host: String,
    port: u16,
    /// Path and query, as sent on the request line (`/dial?request=hostname`).
    target: String,
}

fn parse_url(url: &str) -> Url {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let tail = tail.split('#').next().unwrap_or("");
    let target = if tail.starts_with('/') {
        tail.to_string()
    } else {
        format!("/{tail}")
    };
    let default = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') && !port.contains(']') => {
            (host.to_string(), port.parse().unwrap_or(default))
        }
        _ => (authority.to_string(), default),
    };
    Url { host, port, target }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// The TTL CoreDNS gives a record: 5 s for cluster names, the cache's 30 s for forwarded ones.
fn ttl(fqdn: &str) -> u32 {
    if fqdn.contains(".svc.") || fqdn.contains(".pod.") {
        5
    } else {
        30
    }
}

// ---------------------------------------------------------------------------------------------
// agnhost connect
// ---------------------------------------------------------------------------------------------

/// cobra's usage of `agnhost connect`, printed after its errors.
const AGNHOST_CONNECT_USAGE: &str = concat!(
    "Usage:\n",
    "  agnhost connect [host:port] [flags]\n",
    "\n",
    "Flags:\n",
    "  -h, --help               help for connect\n",
    "      --protocol string    The protocol to use to perform the connection, can be tcp, udp or sctp ",
    "(default \"tcp\")\n",
    "      --sctp-data string   The SCTP payload send to the server (default \"hostname\")\n",
    "      --timeout duration   Maximum time before returning an error\n",
    "      --udp-data string    The UDP payload send to the server (default \"hostname\")\n",
);

/// A Go duration (`1s`, `500ms`, `1m30s`, `0`) in seconds.
fn go_duration(text: &str) -> Option<f64> {
    if text == "0" {
        return Some(0.0);
    }
    let mut rest = text;
    let mut total = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let value: f64 = rest.get(..digits)?.parse().ok()?;
        rest = rest.get(digits..)?;
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match rest.get(..unit_len)? {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = rest.get(unit_len..)?;
    }
    Some(total)
}

/// Go's `net.SplitHostPort`, with its error text.
fn split_host_port(dest: &str) -> Result<(&str, &str), String> {
    fn fail<T>(dest: &str, why: &str) -> Result<T, String> {
        Err(format!("address {dest}: {why}"))
    }
    if let Some(rest) = dest.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return fail(dest, "missing ']' in address");
        };
        return match after.strip_prefix(':') {
            Some(port) => Ok((host, port)),
            None => fail(dest, "missing port in address"),
        };
    }
    match dest.rsplit_once(':') {
        None => fail(dest, "missing port in address"),
        Some((host, _)) if host.contains(':') => fail(dest, "too many colons in address"),
        Some((host, port)) => Ok((host, port)),
    }
}

/// A cluster of short options (`-sSf`, `-qO-`, `-o FILE`): the flag letters before the first
/// letter in `valued`, and that letter with its value (the rest of the cluster, or the next
/// argument, which `i` then moves past).
fn short_flags(
    cluster: &str,
    valued: &str,
    args: &[String],
    i: &mut usize,
) -> (String, Option<(char, Option<String>)>) {
    let mut flags = String::new();
    for (k, c) in cluster.char_indices().skip(1) {
        if valued.contains(c) {
            let rest = &cluster[k + c.len_utf8()..];
            let value = if rest.is_empty() {
                *i += 1;
                args.get(*i - 1).cloned()
            } else {
                Some(rest.to_string())
            };
            return (flags, Some((c, value)));
        }
        flags.push(c);
    }
    (flags, None)
}

#[cfg(test)]
mod tests;
