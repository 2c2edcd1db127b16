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
//! --protocol=sctp` is not simulated, and IPv6 literals are unreachable.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::node::exec::{CommandContext, ps_error};
use crate::node::runtime::{ExecOutput, ExitStatus};
use crate::vocab::hash::fnv1a;

pub use crate::network::fabric::{Failure, Proto};
pub use crate::network::wire::{HttpReply, Lookup, Offline, Wire};

// ---------------------------------------------------------------------------------------------
// Entry
// ---------------------------------------------------------------------------------------------

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

/// An address to connect to: IPv4, or an IPv6 literal (unreachable: pods are IPv4-only here).
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

    fn connect(&self, addr: &Addr, port: u16, proto: Proto) -> Result<(), Failure> {
        addr.v4
            .map_or_else(|| Err(unreachable()), |ip| self.wire.connect(ip, port, proto))
    }

    fn http_get(&self, addr: &Addr, port: u16, target: &str) -> Result<HttpReply, Failure> {
        addr.v4
            .map_or_else(|| Err(unreachable()), |ip| self.wire.http_get(ip, port, target))
    }

    fn udp(&self, addr: &Addr, port: u16, payload: &str) -> Result<String, Failure> {
        addr.v4
            .map_or_else(|| Err(unreachable()), |ip| self.wire.udp(ip, port, payload))
    }

    fn ping(&self, addr: &Addr) -> Result<(), Failure> {
        addr.v4.map_or_else(|| Err(unreachable()), |ip| self.wire.ping(ip))
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

/// `agnhost connect HOST:PORT [--timeout=D] [--protocol=tcp|udp]`: silent on success; otherwise
/// one line on stderr prefixed TIMEOUT, REFUSED, DNS, OTHER or UNKNOWN, and exit 1.
fn agnhost(net: &Net, args: &[String]) -> ExecOutput {
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
fn agnhost_resolve(net: &Net, dest: &str, proto: &str) -> Result<(Addr, u16), ExecOutput> {
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
const WSATRY_AGAIN: &str = "This is usually a temporary error during hostname resolution and means that the local server \
    did not receive a response from an authoritative server.";

fn connect_tcp(net: &Net, dest: &str, timed: bool) -> ExecOutput {
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

fn connect_udp(net: &Net, dest: &str, data: &str) -> ExecOutput {
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

/// curl's short options that take a value.
const CURL_SHORT_VALUED: &str = "owmXHduAexTbcKErYyzCDFUQt";

/// curl's long options that take a value (the ones read below excepted).
const CURL_LONG_VALUED: &[&str] = &[
    "request",
    "header",
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "user",
    "user-agent",
    "referer",
    "resolve",
    "connect-to",
    "proxy",
    "retry",
    "retry-delay",
    "retry-max-time",
    "upload-file",
    "cookie",
    "cookie-jar",
    "cacert",
    "cert",
    "key",
    "config",
    "interface",
    "dns-servers",
    "noproxy",
    "form",
    "range",
    "dump-header",
];

#[derive(Debug, Default)]
struct CurlOpts {
    silent: bool,
    show_error: bool,
    fail: bool,
    head: bool,
    include: bool,
    output: Option<String>,
    write_out: Option<String>,
    connect_timeout: Option<f64>,
    max_time: Option<f64>,
    url: Option<String>,
}

impl CurlOpts {
    fn parse(args: &[String]) -> Result<Self, ExecOutput> {
        let mut o = Self::default();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            i += 1;
            if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
                match long {
                    "silent" => o.silent = true,
                    "show-error" => o.show_error = true,
                    "fail" | "fail-with-body" => o.fail = true,
                    "head" => o.head = true,
                    "include" => o.include = true,
                    "output" | "write-out" | "connect-timeout" | "max-time" | "url" => {
                        let value = args.get(i).cloned();
                        i += 1;
                        o.set(long, value, a)?;
                    }
                    l if CURL_LONG_VALUED.contains(&l) => i += 1,
                    _ => {}
                }
            } else if a.len() > 1 && a.starts_with('-') {
                let (flags, valued) = short_flags(a, CURL_SHORT_VALUED, args, &mut i);
                for c in flags.chars() {
                    match c {
                        's' => o.silent = true,
                        'S' => o.show_error = true,
                        'f' => o.fail = true,
                        'I' => o.head = true,
                        'i' => o.include = true,
                        _ => {}
                    }
                }
                if let Some((c, value)) = valued {
                    let long = match c {
                        'o' => "output",
                        'w' => "write-out",
                        'm' => "max-time",
                        _ => "",
                    };
                    o.set(long, value, &format!("-{c}"))?;
                }
            } else if o.url.is_none() {
                o.url = Some(a.clone());
            }
        }
        Ok(o)
    }

    fn set(&mut self, long: &str, value: Option<String>, shown: &str) -> Result<(), ExecOutput> {
        let Some(value) = value else {
            return Err(out(
                "",
                format!(
                    "curl: option {shown}: requires parameter\ncurl: try 'curl --help' or 'curl --manual' for more \
                    information\n"
                ),
                2,
            ));
        };
        let seconds =
            || {
                value.parse::<f64>().ok().filter(|t| t.is_finite() && *t >= 0.0).ok_or_else(|| {
                out(
                    "",
                    format!(
                        "curl: option {shown}: expected a proper numerical parameter\ncurl: try 'curl --help' or \
                        'curl --manual' for more information\n"
                    ),
                    2,
                )
            })
            };
        match long {
            "output" => self.output = Some(value.clone()),
            "write-out" => self.write_out = Some(value.clone()),
            "connect-timeout" => self.connect_timeout = Some(seconds()?),
            "max-time" => self.max_time = Some(seconds()?),
            "url" => self.url = Some(value.clone()),
            _ => {}
        }
        Ok(())
    }

    /// How long a stalled connect or lookup runs before curl gives up, in ms (default 300 s).
    fn timeout_ms(&self) -> u64 {
        let t = match (self.connect_timeout, self.max_time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.filter(|t| *t > 0.0)
            .map_or(300_000, |t| (t * 1000.0).min(1e12) as u64)
    }
}

/// What `-w/--write-out` can print.
struct Transfer<'a> {
    status: u16,
    size: usize,
    remote: Option<(&'a Addr, u16)>,
    exit: i32,
    url: &'a str,
}

fn write_out(format: &str, t: &Transfer) -> String {
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' if chars.peek() == Some(&'{') => {
                chars.next();
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                match name.as_str() {
                    "http_code" | "response_code" => {
                        let _ = write!(text, "{:03}", t.status);
                    }
                    "size_download" => {
                        let _ = write!(text, "{}", t.size);
                    }
                    "remote_ip" => text.push_str(t.remote.map_or("", |(a, _)| a.text.as_str())),
                    "remote_port" => {
                        if let Some((_, port)) = t.remote {
                            let _ = write!(text, "{port}");
                        }
                    }
                    "exitcode" => {
                        let _ = write!(text, "{}", t.exit);
                    }
                    "url" | "url_effective" => text.push_str(t.url),
                    _ => {}
                }
            }
            '%' if chars.peek() == Some(&'%') => {
                chars.next();
                text.push('%');
            }
            '\\' => match chars.next() {
                Some('n') => text.push('\n'),
                Some('r') => text.push('\r'),
                Some('t') => text.push('\t'),
                Some(other) => text.push(other),
                None => text.push('\\'),
            },
            other => text.push(other),
        }
    }
    text
}

/// curl 8 (`curl.exe` prints the same): the body on stdout; `curl: (N) …` on stderr unless `-s`
/// without `-S`; exit 6 (no such host), 7 (refused), 22 (`--fail`, status ≥ 400), 28 (timeout),
/// 56 (reset).
fn curl(net: &Net, args: &[String]) -> ExecOutput {
    let opts = match CurlOpts::parse(args) {
        Ok(o) => o,
        Err(o) => return o,
    };
    let Some(url_text) = opts.url.clone() else {
        return out(
            "",
            "curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information\n",
            2,
        );
    };
    let url = parse_url(&url_text);
    let (host, port) = (url.host.as_str(), url.port);
    let ms = opts.timeout_ms();
    let mut transfer = Transfer {
        status: 0,
        size: 0,
        remote: None,
        exit: 0,
        url: &url_text,
    };
    let (addr, failure) = match net.locate(host) {
        Dest::At(addr, _) => (Some(addr), None),
        Dest::NotFound => (None, Some((6, format!("Could not resolve host: {host}")))),
        Dest::Timeout(_) => (None, Some((28, format!("Resolving timed out after {ms} milliseconds")))),
    };
    let mut body = String::new();
    let failure = match (&addr, failure) {
        (Some(addr), None) => match net.http_get(addr, port, &url.target) {
            Ok(reply) => {
                transfer.status = reply.status;
                transfer.remote = Some((addr, port));
                if opts.head || opts.include {
                    let _ = write!(
                        body,
                        "HTTP/1.1 {} {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
                        reply.status,
                        reason(reply.status),
                        reply.body.len()
                    );
                }
                if opts.fail && reply.status >= 400 {
                    Some((22, format!("The requested URL returned error: {}", reply.status)))
                } else {
                    transfer.size = reply.body.len();
                    if !opts.head {
                        body.push_str(&reply.body);
                    }
                    None
                }
            }
            Err(Failure::Refused | Failure::Other(_)) => Some((
                7,
                format!("Failed to connect to {host} port {port} after 0 ms: Couldn't connect to server"),
            )),
            Err(Failure::Timeout | Failure::NoReply) => Some((
                28,
                format!("Failed to connect to {host} port {port} after {ms} ms: Timeout was reached"),
            )),
            Err(Failure::Reset) => {
                transfer.remote = Some((addr, port));
                Some((56, "Recv failure: Connection reset by peer".to_string()))
            }
        },
        (_, failure) => failure,
    };
    let to_file = opts.output.as_deref().is_some_and(|f| f != "-");
    let mut stdout = if to_file || failure.is_some() {
        String::new()
    } else {
        body
    };
    let (code, stderr) = match failure {
        Some((code, message)) if !opts.silent || opts.show_error => (code, format!("curl: ({code}) {message}\n")),
        Some((code, _)) => (code, String::new()),
        None => (0, String::new()),
    };
    if let Some(format) = &opts.write_out {
        transfer.exit = code;
        stdout.push_str(&write_out(format, &transfer));
    }
    out(stdout, stderr, code)
}

// ---------------------------------------------------------------------------------------------
// wget (busybox)
// ---------------------------------------------------------------------------------------------

/// busybox's five-character size (`   12`, `1234k`).
fn size5(n: usize) -> String {
    if n <= 99_999 {
        return format!("{n:>5}");
    }
    let mut v = n as f64;
    let mut unit = ' ';
    for u in ['k', 'M', 'G', 'T'] {
        v /= 1024.0;
        unit = u;
        if v < 9999.5 {
            break;
        }
    }
    if v < 99.95 {
        format!("{v:>4.1}{unit}")
    } else {
        format!("{:>4}{unit}", v.round() as u64)
    }
}

/// busybox `wget [-q] [-O FILE] [-T SEC] [--spider] URL`: progress on stderr unless `-q`, the
/// body to the file (`-O-`: stdout); `wget: …` and exit 1 on failure.
fn wget(net: &Net, args: &[String]) -> ExecOutput {
    let (mut quiet, mut spider) = (false, false);
    let mut output: Option<String> = None;
    let mut timeout: Option<String> = None;
    let mut url: Option<&str> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if let Some(long) = a.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let mut value = || {
                inline.clone().or_else(|| {
                    i += 1;
                    args.get(i - 1).cloned()
                })
            };
            match name {
                "quiet" => quiet = true,
                "spider" => spider = true,
                "output-document" => output = value(),
                "timeout" => timeout = value(),
                "header" | "user-agent" | "post-data" | "post-file" | "directory-prefix" | "output-file" | "tries"
                | "proxy" => {
                    value();
                }
                _ => {}
            }
        } else if a.len() > 1 && a.starts_with('-') {
            let (flags, valued) = short_flags(a, "OTUPYot", args, &mut i);
            quiet |= flags.contains('q');
            spider |= flags.contains('s');
            match valued {
                Some(('O', value)) => output = value,
                Some(('T', value)) => timeout = value,
                _ => {}
            }
        } else if url.is_none() {
            url = Some(a);
        }
    }
    let Some(url) = url else {
        return out(
            "",
            "Usage: wget [-cqS] [--spider] [-O FILE] [-o LOGFILE] [--header STR] URL...\n",
            1,
        );
    };
    let timed = match timeout.as_deref().map(str::parse::<u32>) {
        None => false,
        Some(Ok(t)) => t > 0,
        Some(Err(_)) => {
            let t = timeout.unwrap_or_default();
            return out("", format!("wget: invalid number '{t}'\n"), 1);
        }
    };
    let target = parse_url(url);
    let host = target.host.as_str();
    let addr = match net.locate(host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => return out("", format!("wget: bad address '{host}'\n"), 1),
    };
    let mut stderr = String::new();
    if !quiet {
        let _ = writeln!(stderr, "Connecting to {host} ({})", addr.with_port(target.port));
    }
    let fail = |mut stderr: String, message: String| {
        let _ = writeln!(stderr, "wget: {message}");
        out("", stderr, 1)
    };
    let reply = match net.http_get(&addr, target.port, &target.target) {
        Ok(reply) => reply,
        Err(Failure::Refused) => {
            return fail(
                stderr,
                format!("can't connect to remote host ({}): Connection refused", addr.text),
            );
        }
        Err(Failure::Timeout | Failure::NoReply) if timed => return fail(stderr, "download timed out".into()),
        Err(Failure::Timeout | Failure::NoReply) => {
            return fail(
                stderr,
                format!("can't connect to remote host ({}): Connection timed out", addr.text),
            );
        }
        Err(Failure::Reset) => return fail(stderr, "error getting response: Connection reset by peer".into()),
        Err(Failure::Other(m)) => {
            return fail(stderr, format!("can't connect to remote host ({}): {m}", addr.text));
        }
    };
    if !(matches!(reply.status, 200..=204) || matches!(reply.status, 300..=303 | 307 | 308)) {
        let status = format!("HTTP/1.1 {} {}", reply.status, reason(reply.status));
        return fail(stderr, format!("server returned error: {}", status.trim_end()));
    }
    if spider {
        if !quiet {
            stderr.push_str("remote file exists\n");
        }
        return out("", stderr, 0);
    }
    let name = match output.as_deref() {
        Some(name) => name.to_string(),
        None => match target.target.rsplit('/').next() {
            Some(last) if !last.is_empty() => last.to_string(),
            _ => "index.html".to_string(),
        },
    };
    let to_stdout = name == "-";
    if !quiet {
        if to_stdout {
            stderr.push_str("writing to stdout\n");
        } else {
            let _ = writeln!(stderr, "saving to '{name}'");
        }
        let size = size5(reply.body.len());
        if reply.body.is_empty() {
            let _ = writeln!(stderr, "{name:<20} {size} --:--:-- ETA");
        } else {
            let _ = writeln!(stderr, "{name:<20} 100% |{}| {size}  0:00:00 ETA", "*".repeat(32));
        }
        if to_stdout {
            stderr.push_str("written to stdout\n");
        } else {
            let _ = writeln!(stderr, "'{name}' saved");
        }
    }
    let stdout = if to_stdout { reply.body } else { String::new() };
    out(stdout, stderr, 0)
}

// ---------------------------------------------------------------------------------------------
// nc (busybox, nc 1.10 compatible)
// ---------------------------------------------------------------------------------------------

/// busybox `nc [-v[v]] [-z] [-u] [-w SEC] HOST PORT`: with `-v`, `HOST (IP:PORT) open` on stderr;
/// failures exit 1 (a refusal is printed only with `-vv`); `-u` without `-z` sends stdin as one
/// datagram and prints the reply.
fn nc(net: &Net, args: &[String], stdin: &[u8]) -> ExecOutput {
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

/// `nslookup NAME [SERVER]`: the server, then the answer; NXDOMAIN and timeouts exit 1.
fn nslookup(net: &Net, args: &[String]) -> ExecOutput {
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

fn windows_nslookup(name: &str, server: &str, lookup: Lookup) -> ExecOutput {
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
fn dig(net: &Net, args: &[String]) -> ExecOutput {
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

/// A stable round-trip time in microseconds for one echo (40–99 µs).
fn rtt_us(ip: &str, seq: u32) -> u32 {
    40 + u32::try_from(fnv1a(format!("{ip}/{seq}").as_bytes()) % 60).unwrap_or(0)
}

/// `ping [-c N | -n N] HOST`: a reply line per echo and the statistics; exit 1 when nothing
/// came back.
fn ping(net: &Net, args: &[String]) -> ExecOutput {
    let (count_flag, size_flag, valued): (&str, &str, &[&str]) = if net.windows {
        ("-n", "-l", &["-n", "-l", "-w", "-i", "-v", "-r", "-s", "-j", "-k"])
    } else {
        ("-c", "-s", &["-c", "-W", "-w", "-s", "-i", "-I", "-t"])
    };
    let number = |flag: &str| flag_value(args, flag).and_then(|c| c.parse::<u32>().ok());
    let count = number(count_flag).unwrap_or(4).min(1000);
    let size = number(size_flag)
        .unwrap_or(if net.windows { 32 } else { 56 })
        .min(65_500);
    let Some(host) = positionals(args, valued).last().copied() else {
        return out("", "Usage: ping [OPTIONS] HOST\n", 1);
    };
    let (addr, fqdn) = match net.locate(host) {
        Dest::At(addr, fqdn) => (addr, fqdn),
        Dest::NotFound | Dest::Timeout(_) if net.windows => {
            return out(
                format!("Ping request could not find host {host}. Please check the name and try again.\r\n"),
                "",
                1,
            );
        }
        Dest::NotFound | Dest::Timeout(_) => return out("", format!("ping: bad address '{host}'\n"), 1),
    };
    let ip = addr.text.clone();
    let results: Vec<Result<(), Failure>> = (0..count).map(|_| net.ping(&addr)).collect();
    let received = u32::try_from(results.iter().filter(|r| r.is_ok()).count()).unwrap_or(0);
    let lost = count - received;
    let loss = (lost * 100).checked_div(count).unwrap_or(0);
    let code = i32::from(received == 0);
    if net.windows {
        let shown = match &fqdn {
            Some(name) => format!("{name} [{ip}]"),
            None => ip.clone(),
        };
        let mut text = format!("\r\nPinging {shown} with {size} bytes of data:\r\n");
        for r in &results {
            match r {
                Ok(()) => {
                    let _ = write!(text, "Reply from {ip}: bytes={size} time<1ms TTL=128\r\n");
                }
                Err(Failure::Other(_)) => text.push_str("General failure.\r\n"),
                Err(_) => text.push_str("Request timed out.\r\n"),
            }
        }
        let _ = write!(
            text,
            "\r\nPing statistics for {ip}:\r\n    Packets: Sent = {count}, Received = {received}, Lost = {lost} \
            ({loss}% loss),\r\n"
        );
        if received > 0 {
            text.push_str(
                "Approximate round trip times in milli-seconds:\r\n    Minimum = 0ms, Maximum = 0ms, Average = 0ms\r\n",
            );
        }
        return out(text, "", code);
    }
    let mut text = format!("PING {host} ({ip}): {size} data bytes\n");
    let mut stderr = String::new();
    let mut times = Vec::new();
    for (seq, r) in (0..count).zip(&results) {
        match r {
            Ok(()) => {
                let t = rtt_us(&ip, seq);
                times.push(t);
                let _ = writeln!(
                    text,
                    "{} bytes from {ip}: seq={seq} ttl=64 time={}.{:03} ms",
                    size + 8,
                    t / 1000,
                    t % 1000
                );
            }
            Err(Failure::Other(m)) => {
                let _ = writeln!(stderr, "ping: sendto: {m}");
                return out(text, stderr, 1);
            }
            Err(_) => {}
        }
    }
    let _ = write!(
        text,
        "\n--- {host} ping statistics ---\n{count} packets transmitted, {received} packets received, {loss}% packet \
        loss\n"
    );
    if let (Some(min), Some(max)) = (times.iter().min(), times.iter().max()) {
        let avg = times.iter().sum::<u32>() / received.max(1);
        let ms = |t: u32| format!("{}.{:03}", t / 1000, t % 1000);
        let _ = writeln!(
            text,
            "round-trip min/avg/max = {}/{}/{} ms",
            ms(*min),
            ms(avg),
            ms(*max)
        );
    }
    out(text, stderr, code)
}

// ---------------------------------------------------------------------------------------------
// PowerShell: Resolve-DnsName, Test-NetConnection
// ---------------------------------------------------------------------------------------------

fn statement(cmdlet: &str, args: &[String]) -> String {
    std::iter::once(cmdlet)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `Resolve-DnsName [-Name] NAME [-Server S] [-Type A]`: the record table, or the DNS error
/// record (exit 1).
fn resolve_dns_name(net: &Net, args: &[String]) -> ExecOutput {
    let name = flag_value(args, "-name")
        .or_else(|| positionals(args, &["-server", "-type", "-name"]).first().copied())
        .unwrap_or("");
    let statement = statement("Resolve-DnsName", args);
    let error = |message: &str, category: &str, fqid: &str| {
        out(
            "",
            ps_error(
                &statement,
                "Resolve-DnsName",
                message,
                category,
                &format!("{fqid},Microsoft.DnsClient.Commands.ResolveDnsName"),
            ),
            1,
        )
    };
    if name.is_empty() {
        return error(
            "Cannot process command because of one or more missing mandatory parameters: Name.",
            "InvalidArgument: (:) [Resolve-DnsName], ParameterBindingException",
            "MissingMandatoryParameter",
        );
    }
    match net.wire.resolve(name, flag_value(args, "-server")) {
        Lookup::Found { fqdn, addrs, alias } if !addrs.is_empty() => {
            let head = |last: &str| {
                let line = "-".repeat(last.len());
                format!(
                    "\r\nName                                           Type   TTL   Section    {last}\r\n\
                    ----                                           ----   ---   -------    {line}\r\n"
                )
            };
            let Some(target) = alias else {
                let mut text = head("IPAddress");
                for a in addrs {
                    let _ = write!(text, "{fqdn:<46} A      {:<5} Answer     {a}\r\n", ttl(&fqdn));
                }
                text.push_str("\r\n");
                return out(text, "", 0);
            };
            // A CNAME first sets the table; the A records that follow are listed.
            let mut text = head("NameHost");
            let _ = write!(text, "{fqdn:<46} CNAME  {:<5} Answer     {target}\r\n", ttl(&fqdn));
            for a in addrs {
                let _ = write!(
                    text,
                    "\r\nName       : {target}\r\nQueryType  : A\r\nTTL        : {}\r\nSection    : Answer\r\n\
                    IP4Address : {a}\r\n",
                    ttl(&target)
                );
            }
            text.push_str("\r\n\r\n");
            out(text, "", 0)
        }
        Lookup::Found { .. } | Lookup::NotFound => error(
            &format!("{name} : DNS name does not exist"),
            &format!("ResourceUnavailable: ({name}:String) [Resolve-DnsName], Win32Exception"),
            "DNS_ERROR_RCODE_NAME_ERROR",
        ),
        Lookup::Timeout { .. } => error(
            &format!("{name} : This operation returned because the timeout period expired"),
            &format!("OperationTimeout: ({name}:String) [Resolve-DnsName], Win32Exception"),
            "ERROR_TIMEOUT",
        ),
    }
}

/// A PowerShell list: `Key : Value` lines with the keys padded alike, framed by blank lines.
fn ps_list(rows: &[(&str, String)]) -> String {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut text = String::from("\r\n");
    for (key, value) in rows {
        let line = format!("{key:<width$} : {value}");
        let _ = write!(text, "{}\r\n", line.trim_end());
    }
    text.push_str("\r\n\r\n");
    text
}

/// `Test-NetConnection [-ComputerName] X [-Port P | -CommonTCPPort NAME] [-InformationLevel
/// Quiet]`: a TCP test (with a ping when it fails) or a ping; always exit 0.
fn test_net_connection(net: &Net, args: &[String]) -> ExecOutput {
    const VALUED: &[&str] = &["-port", "-computername", "-informationlevel", "-commontcpport", "-hops"];
    let found = positionals(args, VALUED);
    let target = flag_value(args, "-computername")
        .or_else(|| found.first().copied())
        .unwrap_or("internetbeacon.msedge.net");
    let quiet = flag_value(args, "-informationlevel").is_some_and(|l| l.eq_ignore_ascii_case("quiet"));
    let common = flag_value(args, "-commontcpport").or_else(|| found.get(1).copied());
    let port = match (flag_value(args, "-port"), common) {
        (Some(p), _) => match p.parse::<u16>() {
            Ok(p) => Some(p),
            Err(_) => {
                let text = ps_error(
                    &statement("Test-NetConnection", args),
                    "Test-NetConnection",
                    &format!(
                        "Cannot process argument transformation on parameter 'Port'. Cannot convert value \"{p}\" \
                        to type \"System.Int32\". Error: \"Input string was not in a correct format.\""
                    ),
                    "InvalidData: (:) [Test-NetConnection], ParameterBindingArgumentTransformationException",
                    "ParameterArgumentTransformationError,Test-NetConnection",
                );
                return out("", text, 1);
            }
        },
        (None, Some(name)) => match name.to_ascii_uppercase().as_str() {
            "HTTP" => Some(80),
            "RDP" => Some(3389),
            "SMB" => Some(445),
            "WINRM" => Some(5985),
            _ => None,
        },
        (None, None) => None,
    };
    let verdict =
        |warning: String, ok: bool| ExecOutput::ok(format!("{warning}{}\r\n", if ok { "True" } else { "False" }));
    let addr = match net.locate(target) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => {
            let warning = format!("WARNING: Name resolution of {target} failed\r\n");
            if quiet {
                return verdict(warning, false);
            }
            return ExecOutput::ok(format!(
                "{warning}\r\nComputerName   : {target}\r\nRemoteAddress  :\r\nInterfaceAlias :\r\nSourceAddress  :\r\n\
                PingSucceeded  : False\r\n\r\n\r\n"
            ));
        }
    };
    let ip = addr.text.clone();
    let source = net.ctx.pod_ip();
    let mut rows: Vec<(&str, String)> = vec![("ComputerName", target.to_string()), ("RemoteAddress", ip.clone())];
    if let Some(port) = port {
        rows.push(("RemotePort", port.to_string()));
    }
    rows.push(("InterfaceAlias", "vEthernet (Ethernet)".into()));
    rows.push(("SourceAddress", source));
    if let Some(port) = port {
        if matches!(net.connect(&addr, port, Proto::Tcp), Ok(()) | Err(Failure::Reset)) {
            if quiet {
                return verdict(String::new(), true);
            }
            rows.push(("TcpTestSucceeded", "True".into()));
            return ExecOutput::ok(ps_list(&rows));
        }
        let warning = format!("WARNING: TCP connect to ({ip} : {port}) failed\r\n");
        if quiet {
            return verdict(warning, false);
        }
        let pinged = net.ping(&addr).is_ok();
        rows.push(("PingSucceeded", if pinged { "True" } else { "False" }.into()));
        rows.push(("PingReplyDetails (RTT)", "0 ms".into()));
        rows.push(("TcpTestSucceeded", "False".into()));
        return ExecOutput::ok(format!("{warning}{}", ps_list(&rows)));
    }
    let pinged = net.ping(&addr).is_ok();
    let warning = if pinged {
        String::new()
    } else {
        format!("WARNING: Ping to {ip} failed with status: TimedOut\r\n")
    };
    if quiet {
        return verdict(warning, pinged);
    }
    rows.push(("PingSucceeded", if pinged { "True" } else { "False" }.into()));
    rows.push(("PingReplyDetails (RTT)", "0 ms".into()));
    ExecOutput::ok(format!("{warning}{}", ps_list(&rows)))
}

/// `Invoke-RestMethod [-Uri] URL [-TimeoutSec N] [-UseBasicParsing] [-Method Get]` of Windows
/// PowerShell 5.1 (.NET Framework `HttpWebRequest`): the body as a string, or the
/// `WebException` error record (exit 1 for the shell). A body with an error status becomes the
/// error message, as 5.1 prints it.
fn invoke_rest_method(net: &Net, args: &[String]) -> ExecOutput {
    const VALUED: &[&str] = &[
        "-uri",
        "-timeoutsec",
        "-method",
        "-headers",
        "-body",
        "-contenttype",
        "-outfile",
    ];
    let statement = statement("Invoke-RestMethod", args);
    let url = flag_value(args, "-uri")
        .or_else(|| positionals(args, VALUED).first().copied())
        .unwrap_or("");
    let failed = |message: &str| {
        out(
            "",
            ps_error(
                &statement,
                "Invoke-RestMethod",
                message,
                "InvalidOperation: (System.Net.HttpWebRequest:HttpWebRequest) [Invoke-RestMethod], WebException",
                "WebCmdletWebResponseException,Microsoft.PowerShell.Commands.InvokeRestMethodCommand",
            ),
            1,
        )
    };
    if url.is_empty() {
        return out(
            "",
            ps_error(
                &statement,
                "Invoke-RestMethod",
                "Cannot validate argument on parameter 'Uri'. The argument is null or empty. Provide an argument \
                that is not null or empty, and then try the command again.",
                "InvalidData: (:) [Invoke-RestMethod], ParameterBindingValidationException",
                "ParameterArgumentValidationError,Microsoft.PowerShell.Commands.InvokeRestMethodCommand",
            ),
            1,
        );
    }
    let url = parse_url(url);
    let addr = match net.locate(&url.host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => {
            return failed(&format!("The remote name could not be resolved: '{}'", url.host));
        }
    };
    match net.http_get(&addr, url.port, &url.target) {
        Ok(reply) if reply.status < 400 => out(format!("{}\r\n", reply.body.trim_end_matches('\n')), "", 0),
        Ok(reply) if !reply.body.trim().is_empty() => failed(reply.body.trim()),
        Ok(reply) => failed(&format!(
            "The remote server returned an error: ({}) {}.",
            reply.status,
            reason(reply.status)
        )),
        Err(Failure::Timeout | Failure::NoReply) => failed("The operation has timed out."),
        Err(Failure::Reset) => {
            failed("The underlying connection was closed: An unexpected error occurred on a receive.")
        }
        Err(Failure::Refused | Failure::Other(_)) => failed("Unable to connect to the remote server"),
    }
}

/// A PowerShell script that talks UDP through a .NET `System.Net.Sockets.UdpClient` — what
/// Windows images without netcat or agnhost (Server Core 2016/1709) have:
///
/// ```text
/// $u = New-Object System.Net.Sockets.UdpClient; $u.Client.ReceiveTimeout = 5000
/// $u.Connect('10.96.0.10', 90); $b = [Text.Encoding]::ASCII.GetBytes('hostname')
/// [void]$u.Send($b, $b.Length); $e = $null; [Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))
/// ```
///
/// The destination is the `Connect(host, port)` arguments (or the last two of a four-argument
/// `Send`), the datagram the first `GetBytes('…')` string; with a `Receive` the reply is
/// printed, or the `SocketException` the method call throws (exit 1). None when the script does
/// not create a `UdpClient` with a destination (it is then interpreted statement by statement).
pub fn dotnet_udp(ctx: &CommandContext, wire: &dyn Wire, script: &str) -> Option<ExecOutput> {
    let lower = script.to_ascii_lowercase();
    if !lower.contains("sockets.udpclient") {
        return None;
    }
    let call_args = |method: &str| -> Option<Vec<String>> {
        let at = lower.find(&format!(".{method}("))? + method.len() + 2;
        let end = at + script.get(at..)?.find(')')?;
        Some(
            script
                .get(at..end)?
                .split(',')
                .map(|a| a.trim().trim_matches(['\'', '"']).to_string())
                .collect(),
        )
    };
    let (host, port) = match (call_args("connect"), call_args("send")) {
        (Some(a), _) if a.len() == 2 => (a[0].clone(), a[1].clone()),
        (_, Some(a)) if a.len() == 4 => (a[2].clone(), a[3].clone()),
        _ => return None,
    };
    let port: u16 = port.parse().ok()?;
    let payload = call_args("getbytes")
        .and_then(|a| a.into_iter().next())
        .unwrap_or_default();
    let receives = lower.contains(".receive(");
    let statement = script.lines().next().unwrap_or("").trim().to_string();
    let thrown = |method: &str, arity: u8, message: &str| {
        let underline = "~".repeat(statement.chars().count().max(1));
        out(
            "",
            format!(
                "Exception calling \"{method}\" with \"{arity}\" argument(s): \"{message}\"\r\nAt line:1 char:1\r\n\
                + {statement}\r\n+ {underline}\r\n    + CategoryInfo          : NotSpecified: (:) [], \
                MethodInvocationException\r\n    + FullyQualifiedErrorId : SocketException\r\n \r\n"
            ),
            1,
        )
    };
    let net = Net {
        ctx,
        wire,
        windows: ctx.is_windows(),
    };
    let addr = match net.locate(&host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound => return Some(thrown("Connect", 2, "No such host is known")),
        Dest::Timeout(_) => {
            return Some(thrown(
                "Connect",
                2,
                "This is usually a temporary error during hostname resolution and means that the local server did \
                not receive a response from an authoritative server",
            ));
        }
    };
    if !receives {
        return Some(out("", "", 0));
    }
    Some(match net.udp(&addr, port, &payload) {
        Ok(reply) => out(format!("{reply}\r\n"), "", 0),
        Err(Failure::Timeout | Failure::NoReply) => thrown(
            "Receive",
            1,
            "A connection attempt failed because the connected party did not properly respond after a period of \
            time, or established connection failed because connected host has failed to respond",
        ),
        Err(Failure::Refused | Failure::Reset) => thrown(
            "Receive",
            1,
            "An existing connection was forcibly closed by the remote host",
        ),
        Err(Failure::Other(m)) => thrown("Send", 2, m.trim_end_matches('.')),
    })
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
