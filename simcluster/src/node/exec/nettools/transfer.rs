//! HTTP transfers: curl (its options, -w write-out and exit codes) and busybox wget.

use std::fmt::Write as _;

use super::{Addr, Dest, Failure, HttpReply, Net, out, parse_url, reason, short_flags};
use crate::node::runtime::ExecOutput;

/// curl's short options that take a value.
pub(super) const CURL_SHORT_VALUED: &str = "owmXHduAexTbcKErYyzCDFUQt";

/// curl's long options that take a value (the ones read below excepted).
pub(super) const CURL_LONG_VALUED: &[&str] = &[
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
pub(super) struct CurlOpts {
    pub(super) silent: bool,
    pub(super) show_error: bool,
    pub(super) fail: bool,
    pub(super) head: bool,
    pub(super) include: bool,
    pub(super) output: Option<String>,
    pub(super) write_out: Option<String>,
    pub(super) connect_timeout: Option<f64>,
    pub(super) max_time: Option<f64>,
    /// The URLs in the order given (positional arguments and `--url`): one transfer each.
    pub(super) urls: Vec<String>,
    /// A `-H "Connection: close"` header: each connection closes after its answer.
    pub(super) close: bool,
}

impl CurlOpts {
    pub(super) fn parse(args: &[String]) -> Result<Self, ExecOutput> {
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
                    "output" | "write-out" | "connect-timeout" | "max-time" | "url" | "header" => {
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
                        'H' => "header",
                        _ => "",
                    };
                    o.set(long, value, &format!("-{c}"))?;
                }
            } else {
                o.urls.push(a.clone());
            }
        }
        Ok(o)
    }

    pub(super) fn set(&mut self, long: &str, value: Option<String>, shown: &str) -> Result<(), ExecOutput> {
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
            "url" => self.urls.push(value.clone()),
            "header" => {
                if let Some((name, v)) = value.split_once(':') {
                    let name = name.trim();
                    if name.eq_ignore_ascii_case("connection") {
                        self.close = v.trim().eq_ignore_ascii_case("close");
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// How long a stalled connect or lookup runs before curl gives up, in ms (default 300 s).
    pub(super) fn timeout_ms(&self) -> u64 {
        let t = match (self.connect_timeout, self.max_time) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.filter(|t| *t > 0.0)
            .map_or(300_000, |t| (t * 1000.0).min(1e12) as u64)
    }
}

/// What `-w/--write-out` can print.
pub(super) struct Transfer<'a> {
    pub(super) status: u16,
    pub(super) size: usize,
    pub(super) remote: Option<(&'a Addr, u16)>,
    pub(super) exit: i32,
    pub(super) url: &'a str,
}

pub(super) fn write_out(format: &str, t: &Transfer) -> String {
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
///
/// Several URLs are transferred one after another, as curl's `serial_transfers` does
/// (curl `src/tool_operate.c`): each prints its body, its `-w` text and its own error line,
/// and the exit code is the last transfer's. The transfers share one DNS cache and one
/// connection cache (the tool's `curl_share` of `CURL_LOCK_DATA_DNS` and
/// `CURL_LOCK_DATA_CONNECT`): a name is looked up once, and a connection that answered is used
/// again for the next request to the same origin unless the request said `Connection: close`
/// (the server closes after answering it). `-o FILE` takes the first URL's body.
pub(super) fn curl(net: &Net, args: &[String]) -> ExecOutput {
    let opts = match CurlOpts::parse(args) {
        Ok(o) => o,
        Err(o) => return o,
    };
    if opts.urls.is_empty() {
        return out(
            "",
            "curl: no URL specified!\ncurl: try 'curl --help' or 'curl --manual' for more information\n",
            2,
        );
    }
    let mut shared = Shared::default();
    let (mut stdout, mut stderr, mut code) = (String::new(), String::new(), 0);
    for (index, url_text) in opts.urls.iter().enumerate() {
        let (body, error, exit) = transfer(net, &opts, url_text, index, &mut shared);
        stdout.push_str(&body);
        stderr.push_str(&error);
        code = exit;
    }
    out(stdout, stderr, code)
}

/// What one curl invocation's transfers share: the names looked up, and the connection the
/// last answer came over (its origin, path and answer) while it stays open.
#[derive(Default)]
struct Shared {
    names: std::collections::HashMap<String, Dest>,
    open: Option<(String, u16, String, HttpReply)>,
}

/// One transfer of a curl invocation: what it prints on stdout and stderr, and its exit code.
fn transfer(net: &Net, opts: &CurlOpts, url_text: &str, index: usize, shared: &mut Shared) -> (String, String, i32) {
    let url = parse_url(url_text);
    let (host, port) = (url.host.as_str(), url.port);
    let ms = opts.timeout_ms();
    let mut transfer = Transfer {
        status: 0,
        size: 0,
        remote: None,
        exit: 0,
        url: url_text,
    };
    let dest = shared
        .names
        .entry(host.to_string())
        .or_insert_with(|| net.locate(host))
        .clone();
    let (addr, failure) = match dest {
        Dest::At(addr, _) => (Some(addr), None),
        Dest::NotFound => (None, Some((6, format!("Could not resolve host: {host}")))),
        Dest::Timeout(_) => (None, Some((28, format!("Resolving timed out after {ms} milliseconds")))),
    };
    let mut body = String::new();
    let failure = match (&addr, failure) {
        (Some(addr), None) => {
            // A kept connection answers a request for the same path as it did (the same backend
            // behind a Service); another path, or no kept connection, makes a new one.
            let kept = shared
                .open
                .take()
                .filter(|(h, p, target, _)| h == host && *p == port && *target == url.target)
                .map(|(.., reply)| reply);
            let answer = match kept {
                Some(reply) => Ok(reply),
                None => net.http_get(addr, port, &url.target),
            };
            match answer {
                Ok(reply) => {
                    if !opts.close {
                        shared.open = Some((host.to_string(), port, url.target.clone(), reply.clone()));
                    }
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
            }
        }
        (_, failure) => failure,
    };
    let to_file = index == 0 && opts.output.as_deref().is_some_and(|f| f != "-");
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
    (stdout, stderr, code)
}

// ---------------------------------------------------------------------------------------------
// wget (busybox)
// ---------------------------------------------------------------------------------------------

/// busybox's five-character size (`   12`, `1234k`).
pub(super) fn size5(n: usize) -> String {
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
pub(super) fn wget(net: &Net, args: &[String]) -> ExecOutput {
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
