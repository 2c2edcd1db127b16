//! Probes: what a cell observes, only through the Kubernetes API — commands exec'd (over
//! WebSocket) in fixture pods with the real tools of their images (`curl`/`curl.exe`, agnhost
//! `connect`, `ping`) — classified into the failure classes the suites name. Every call has a
//! timeout; only transport errors are retried, and a pass after a retry is marked flaky.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use mixcheck_reports::Os;
use tokio::io::AsyncReadExt;

use crate::catalogue::suite::{FailureClass, Protocol};

/// How long one exec may take before it counts as a transport failure.
pub const EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// The connect timeout the probes give their tools.
pub const CONNECT_SECS: u32 = 5;
/// The `path` of a request that is a plain TCP connect (agnhost `connect`), not HTTP.
pub const RAW_TCP: &str = "(tcp connect)";

/// What one command printed.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub argv: Vec<String>,
    pub pod: String,
    pub container: Option<String>,
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// The exec transport failed (not a probe result).
#[derive(Debug, thiserror::Error)]
#[error("exec in pod {pod}: {message}")]
pub struct TransportError {
    pub pod: String,
    pub message: String,
}

/// Runs `argv` in `pod` (container `container`), failing after `timeout`.
pub async fn exec(
    pods: &Api<Pod>,
    pod: &str,
    container: Option<&str>,
    argv: &[String],
    timeout: Duration,
) -> Result<Output, TransportError> {
    let fail = |message: String| TransportError {
        pod: pod.to_string(),
        message,
    };
    let mut params = AttachParams::default().stdin(false).stdout(true).stderr(true);
    if let Some(c) = container {
        params = params.container(c);
    }
    let run = async {
        let mut proc = pods
            .exec(pod, argv.to_vec(), &params)
            .await
            .map_err(|e| fail(e.to_string()))?;
        let mut stdout = proc.stdout().ok_or_else(|| fail("no stdout stream".into()))?;
        let mut stderr = proc.stderr().ok_or_else(|| fail("no stderr stream".into()))?;
        let status = proc.take_status().ok_or_else(|| fail("no status channel".into()))?;
        let (mut so, mut se) = (Vec::new(), Vec::new());
        let (r1, r2, status) = tokio::join!(stdout.read_to_end(&mut so), stderr.read_to_end(&mut se), status);
        r1.map_err(|e| fail(e.to_string()))?;
        r2.map_err(|e| fail(e.to_string()))?;
        let _ = proc.join().await;
        let exit_code = match &status {
            Some(s) if s.status.as_deref() == Some("Success") => Some(0),
            Some(s) => s
                .details
                .as_ref()
                .and_then(|d| d.causes.as_ref())
                .and_then(|c| c.iter().find(|c| c.reason.as_deref() == Some("ExitCode")))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.parse().ok()),
            None => None,
        };
        Ok(Output {
            argv: argv.to_vec(),
            pod: pod.to_string(),
            container: container.map(str::to_string),
            exit_code,
            stdout: so,
            stderr: se,
        })
    };
    match tokio::time::timeout(timeout, run).await {
        Ok(r) => r,
        Err(_) => Err(fail(format!("no answer within {}s", timeout.as_secs()))),
    }
}

/// Runs a probe command, retrying transport failures (not results) up to twice.
/// Returns the output and whether it took a retry (a flaky pass).
pub async fn exec_retrying(
    pods: &Api<Pod>,
    pod: &str,
    container: Option<&str>,
    argv: &[String],
) -> Result<(Output, bool), TransportError> {
    exec_retrying_within(pods, pod, container, argv, EXEC_TIMEOUT).await
}

/// [`exec_retrying`], each exec given `timeout`.
pub async fn exec_retrying_within(
    pods: &Api<Pod>,
    pod: &str,
    container: Option<&str>,
    argv: &[String],
    timeout: Duration,
) -> Result<(Output, bool), TransportError> {
    let mut last = None;
    for attempt in 0..3 {
        match exec(pods, pod, container, argv, timeout).await {
            Ok(out) => return Ok((out, attempt > 0)),
            Err(e) => {
                tracing::debug!("exec transport failure (attempt {}): {e}", attempt + 1);
                last = Some(e);
                tokio::time::sleep(Duration::from_millis(300 * (attempt + 1))).await;
            }
        }
    }
    Err(last.unwrap_or_else(|| TransportError {
        pod: pod.to_string(),
        message: "exec failed".into(),
    }))
}

/// Where a connection probe runs: a pod with the agnhost image, or a Windows host (HostProcess).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// agnhost (Linux: curl, ping, agnhost; Windows: curl.exe, agnhost).
    Agnhost(Os),
    /// A Windows HostProcess pod: the host's curl.exe and ping.
    WindowsHost,
    /// Windows Server Core of a build agnhost has no variant for (Windows Server 2016, 1709 and
    /// 2025; [`crate::cluster::images`]): Windows PowerShell 5.1 — `Invoke-RestMethod` for HTTP,
    /// `Test-NetConnection` for a bare TCP connect, a .NET `UdpClient` exchange for UDP — and
    /// `ping.exe`, which every Server Core of these builds has (the OS has no `curl.exe` before
    /// build 17063, so the same commands serve all three).
    WindowsPowerShell,
}

impl Runner {
    /// The runner of the network fixtures' pods on `node`: agnhost where it has a variant for the
    /// node's build, else Windows PowerShell ([`crate::cluster::images::WINDOWS_BUILDS`]).
    pub fn in_pod(node: &crate::cluster::facts::ClusterNode) -> Self {
        if crate::cluster::fixture::agnhost_runs_on(node) {
            Self::Agnhost(node.os)
        } else {
            Self::WindowsPowerShell
        }
    }
}

/// The first word of a Windows PowerShell probe command.
const POWERSHELL: &str = "powershell.exe";

/// What a connection probe asks for.
#[derive(Debug, Clone)]
pub struct Request {
    pub host: String,
    pub port: u16,
    pub protocol: Protocol,
    /// HTTP path for TCP (`/hostname`, `/clientip`); HTTPS when `tls`.
    pub path: String,
    pub tls: bool,
}

/// The command line of a connection probe.
pub fn command(runner: Runner, req: &Request) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let secs = CONNECT_SECS.to_string();
    match (req.protocol, runner) {
        (Protocol::Icmp, Runner::Agnhost(Os::Linux)) => {
            vec![s("ping"), s("-c"), s("1"), s("-W"), secs, req.host.clone()]
        }
        (Protocol::Icmp, _) => vec![
            s("ping"),
            s("-n"),
            s("1"),
            s("-w"),
            (CONNECT_SECS * 1000).to_string(),
            req.host.clone(),
        ],
        (Protocol::Tcp, Runner::WindowsPowerShell) if req.path == RAW_TCP || req.tls => powershell(format!(
            "Test-NetConnection -ComputerName '{}' -Port {}",
            req.host, req.port
        )),
        (Protocol::Udp, Runner::WindowsPowerShell) => powershell(format!(
            "$u = New-Object System.Net.Sockets.UdpClient; $u.Client.ReceiveTimeout = {ms}; \
             $u.Connect('{}', {}); $b = [System.Text.Encoding]::ASCII.GetBytes('hostname'); \
             [void]$u.Send($b, $b.Length); $e = New-Object System.Net.IPEndPoint ([System.Net.IPAddress]::Any, 0); \
             [System.Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))",
            req.host,
            req.port,
            ms = CONNECT_SECS * 1000
        )),
        (Protocol::Tcp, Runner::WindowsPowerShell) => powershell(format!(
            "Invoke-RestMethod -Uri 'http://{}:{}{}' -TimeoutSec {} -UseBasicParsing",
            req.host,
            req.port,
            req.path,
            CONNECT_SECS * 2
        )),
        (Protocol::Tcp, Runner::Agnhost(_)) if req.path == RAW_TCP => vec![
            s("/agnhost"),
            s("connect"),
            format!("{}:{}", req.host, req.port),
            format!("--timeout={secs}s"),
        ],
        (Protocol::Udp, _) => vec![
            s("/agnhost"),
            s("connect"),
            format!("{}:{}", req.host, req.port),
            format!("--timeout={secs}s"),
            s("--protocol=udp"),
        ],
        (Protocol::Tcp, r) => {
            let curl = match r {
                Runner::Agnhost(Os::Linux) => "curl",
                _ => "curl.exe",
            };
            let scheme = if req.tls { "https" } else { "http" };
            let mut argv = vec![s(curl), s("-s"), s("-S")];
            if req.tls {
                argv.push(s("-k"));
            }
            argv.extend([
                s("--connect-timeout"),
                secs.clone(),
                s("-m"),
                (CONNECT_SECS * 2).to_string(),
                format!("{scheme}://{}:{}{}", req.host, req.port, req.path),
            ]);
            argv
        }
    }
}

/// The command line that makes `connections` HTTP requests of `req` one after another in one
/// exec, each on a connection of its own, where the runner's tool can: curl (`curl.exe` on
/// Windows) given the URL `connections` times with `Connection: close`, so that no request
/// reuses the connection before it (curl keeps a connection for the next request to the same
/// origin otherwise: curl `src/tool_operate.c`, its share of `CURL_LOCK_DATA_CONNECT`) and each
/// goes through the node's load balancer again. curl 7.55 (Windows Server 2019's `curl.exe`)
/// takes these options. None for the other requests (agnhost `connect`, UDP, ICMP, PowerShell):
/// they are made one exec each. curl shares its DNS cache between the requests, so a name is
/// looked up once: name lookups are judged one exec each ([`crate::probes::resolve`]).
pub fn repeated_command(runner: Runner, req: &Request, connections: usize) -> Option<Vec<String>> {
    if req.protocol != Protocol::Tcp || req.path == RAW_TCP || runner == Runner::WindowsPowerShell || connections == 0 {
        return None;
    }
    let mut argv = command(runner, req);
    if !argv.first().is_some_and(|a| a.starts_with("curl")) {
        return None;
    }
    let url = argv.pop()?;
    argv.extend(["-H".to_string(), "Connection: close".to_string()]);
    argv.extend(std::iter::repeat_n(url, connections));
    Some(argv)
}

/// How long a [`repeated_command`] of `connections` requests may run: each may take its whole
/// `-m` (twice [`CONNECT_SECS`]) where a backend drops them.
pub fn repeated_timeout(connections: usize) -> Duration {
    let each = u64::from(CONNECT_SECS * 2);
    EXEC_TIMEOUT + Duration::from_secs(each.saturating_mul(u64::try_from(connections).unwrap_or(u64::MAX)))
}

/// The observations of a [`repeated_command`]'s `connections` requests. curl prints a
/// `curl: (N) …` line on stderr for each request that failed (`-S`), in order, goes on with
/// the next, and exits with the last one's code; each line is classified as [`classify`]
/// classifies a single curl, the other requests reached. None where the output does not account
/// for the requests (more error lines than requests, or an exit code no last error line
/// explains: curl did not run them, e.g. it refused an option).
pub fn classify_repeated(out: &Output, connections: usize) -> Option<Vec<Observation>> {
    let stderr = out.stderr_text();
    let failures: Vec<(i32, &str)> = stderr
        .lines()
        .filter_map(|l| {
            let (code, message) = l.strip_prefix("curl: (")?.split_once(") ")?;
            Some((code.parse().ok()?, message))
        })
        .collect();
    let exit = out.exit_code?;
    if failures.len() > connections || (exit != 0 && failures.last().map(|f| f.0) != Some(exit)) {
        return None;
    }
    let reached = connections - failures.len();
    Some(
        failures
            .into_iter()
            .map(|(code, message)| curl_failure(code, message))
            .chain(std::iter::repeat_n(Observation::Reached(String::new()), reached))
            .collect(),
    )
}

/// curl's exit code `code` (not 0) with its message, as a failure class: 6 could not resolve
/// host, 7 could not connect (refused), 28 timeout, 52 empty reply, 56 receive failure (reset).
/// A 28 while still resolving ("Resolving timed out after N milliseconds": the DNS server never
/// answered) is a DNS failure, not a connect timeout.
fn curl_failure(code: i32, message: &str) -> Observation {
    Observation::Failed(match code {
        6 => FailureClass::Dns,
        7 => FailureClass::Refused,
        28 if message.contains("Resolving timed out") => FailureClass::Dns,
        28 => FailureClass::Timeout,
        52 | 56 => FailureClass::Reset,
        _ => FailureClass::Other,
    })
}

/// `powershell.exe -NoProfile -Command SCRIPT`.
fn powershell(script: String) -> Vec<String> {
    vec![POWERSHELL.into(), "-NoProfile".into(), "-Command".into(), script]
}

/// How a probe came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    /// Got through; the HTTP body (TCP) or nothing.
    Reached(String),
    Failed(FailureClass),
}

/// Classifies a connection probe's output by its tool's documented exit codes and messages.
pub fn classify(req: &Request, out: &Output) -> Observation {
    let code = out.exit_code.unwrap_or(-1);
    if req.protocol == Protocol::Icmp {
        // An echo reply carries a TTL (`TTL=128` on Windows, `ttl=64` from busybox and iputils).
        // Windows ping.exe also exits 0 when the only answer was an ICMP error such as
        // "Destination host unreachable" (real-clusters.md §5): the text decides.
        let replied = out.stdout_text().to_ascii_lowercase().contains("ttl=");
        return match code {
            0 if replied => Observation::Reached(String::new()),
            _ => Observation::Failed(FailureClass::NoReply),
        };
    }
    if out.argv.first().is_some_and(|a| a == POWERSHELL) {
        return classify_powershell(out);
    }
    if req.protocol == Protocol::Udp || req.path == RAW_TCP {
        // agnhost connect: silent on success, else one line prefixed with the failure class.
        if code == 0 {
            return Observation::Reached(out.stdout_text());
        }
        let err = out.stderr_text();
        let class = if err.starts_with("TIMEOUT") {
            FailureClass::Timeout
        } else if err.starts_with("REFUSED") || windows_refusal(req.protocol, &err) {
            FailureClass::Refused
        } else if err.starts_with("DNS") {
            FailureClass::Dns
        } else {
            FailureClass::Other
        };
        return Observation::Failed(class);
    }
    match code {
        0 => Observation::Reached(out.stdout_text()),
        code => curl_failure(code, &out.stderr_text()),
    }
}

/// agnhost `connect` on Windows never prints REFUSED: it compares the error with Linux's
/// `syscall.ECONNREFUSED` (real-clusters.md §5), so a refusal comes out as OTHER or UNKNOWN with
/// the Winsock text — WSAECONNREFUSED (10061) for TCP, and for UDP the WSAECONNRESET (10054) a
/// later receive reports after an ICMP port unreachable (Winsock `recv`/`WSARecv` docs).
fn windows_refusal(protocol: Protocol, err: &str) -> bool {
    err.contains("actively refused")
        || (protocol == Protocol::Udp && err.contains("forcibly closed by the remote host"))
}

/// Windows PowerShell 5.1: `Test-NetConnection` always exits 0 and says `TcpTestSucceeded :
/// True|False` (without telling a refusal from a timeout) or that name resolution failed;
/// `Invoke-RestMethod` and the `UdpClient` script print the answer, or exit 1 with the .NET
/// error (`WebException` / `SocketException` messages).
fn classify_powershell(out: &Output) -> Observation {
    let stdout = out.stdout_text();
    let err = out.stderr_text();
    let text = format!("{stdout}{err}");
    if text.contains("Name resolution of")
        || text.contains("could not be resolved")
        || text.contains("No such host is known")
        || text.contains("temporary error during hostname resolution")
    {
        return Observation::Failed(FailureClass::Dns);
    }
    if stdout.contains("TcpTestSucceeded") {
        return if stdout.contains("TcpTestSucceeded : True") {
            Observation::Reached(String::new())
        } else {
            Observation::Failed(FailureClass::Other)
        };
    }
    if out.exit_code == Some(0) {
        return Observation::Reached(stdout);
    }
    let class = if err.contains("The operation has timed out") || err.contains("did not properly respond") {
        FailureClass::Timeout
    } else if err.contains("Unable to connect to the remote server") || err.contains("forcibly closed") {
        FailureClass::Refused
    } else if err.contains("The underlying connection was closed") {
        FailureClass::Reset
    } else {
        FailureClass::Other
    };
    Observation::Failed(class)
}

/// A `kubectl exec` line that repeats a probe by hand (on a `--keep` run).
pub fn reproduce(ns: &str, out: &Output) -> String {
    let container = out.container.as_ref().map(|c| format!(" -c {c}")).unwrap_or_default();
    let args: Vec<String> = out
        .argv
        .iter()
        .map(|a| {
            if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=%?&".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect();
    format!("kubectl exec -n {ns} {}{container} -- {}", out.pod, args.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn req(protocol: Protocol) -> Request {
        Request {
            host: "10.244.1.5".into(),
            port: 8080,
            protocol,
            path: "/hostname".into(),
            tls: false,
        }
    }

    /// Connections made together: the URL repeated with `Connection: close` for curl (Linux
    /// curl, Windows curl.exe, a HostProcess pod's curl.exe, HTTPS too); one exec each for the
    /// tools that cannot (agnhost connect, UDP, ICMP, PowerShell).
    #[rstest]
    #[case::linux(Runner::Agnhost(Os::Linux), Protocol::Tcp, "/hostname", false, Some("curl"))]
    #[case::windows(Runner::Agnhost(Os::Windows), Protocol::Tcp, "/hostname", false, Some("curl.exe"))]
    #[case::host_process(Runner::WindowsHost, Protocol::Tcp, "/clientip", true, Some("curl.exe"))]
    #[case::raw_tcp(Runner::Agnhost(Os::Linux), Protocol::Tcp, RAW_TCP, false, None)]
    #[case::udp(Runner::Agnhost(Os::Windows), Protocol::Udp, "/hostname", false, None)]
    #[case::icmp(Runner::Agnhost(Os::Linux), Protocol::Icmp, "/hostname", false, None)]
    #[case::powershell(Runner::WindowsPowerShell, Protocol::Tcp, "/hostname", false, None)]
    fn connections_are_made_together_where_curl_makes_them(
        #[case] runner: Runner,
        #[case] protocol: Protocol,
        #[case] path: &str,
        #[case] tls: bool,
        #[case] tool: Option<&str>,
    ) {
        let r = Request {
            path: path.into(),
            tls,
            ..req(protocol)
        };
        let got = repeated_command(runner, &r, 9);
        assert_eq!(got.as_ref().and_then(|a| a.first()).map(String::as_str), tool);
        let Some(argv) = got else { return };
        let one = command(runner, &r);
        let url = one.last().expect("a URL");
        assert_eq!(argv.iter().filter(|a| *a == url).count(), 9, "{argv:?}");
        assert!(
            argv.windows(2).any(|w| w[0] == "-H" && w[1] == "Connection: close"),
            "{argv:?}"
        );
        assert_eq!(
            &argv[..one.len() - 1],
            &one[..one.len() - 1],
            "the single command's options"
        );
        assert_eq!(repeated_command(runner, &r, 0), None);
    }

    fn batch(code: Option<i32>, stderr: &str) -> Output {
        Output {
            exit_code: code,
            stderr: stderr.as_bytes().to_vec(),
            stdout: b"srv-1srv-2".to_vec(),
            ..Output::default()
        }
    }

    const REFUSED: &str = "curl: (7) Failed to connect to 10.96.0.5 port 80 after 0 ms: Couldn't connect to server\n";
    const TIMEOUT: &str = "curl: (28) Failed to connect to 10.96.0.5 port 80 after 5001 ms: Timeout was reached\n";
    const RESET: &str = "curl: (56) Recv failure: Connection reset by peer\n";
    const DNS: &str = "curl: (28) Resolving timed out after 5000 milliseconds\n";

    /// Each `curl: (N)` line is one failed connection, classified as a single curl's would be;
    /// the others reached; an output that does not account for the connections is None.
    #[rstest]
    #[case::all_reached(Some(0), String::new(), Some(vec![]))]
    #[case::one_refused_then_reached(Some(0), REFUSED.to_string(), Some(vec![FailureClass::Refused]))]
    #[case::last_timed_out(Some(28), format!("{RESET}{TIMEOUT}"), Some(vec![FailureClass::Reset, FailureClass::Timeout]))]
    #[case::dns(Some(28), DNS.to_string(), Some(vec![FailureClass::Dns]))]
    #[case::unknown_code(Some(0), "curl: (35) schannel: next InitializeSecurityContext failed\n".to_string(), Some(vec![FailureClass::Other]))]
    #[case::usage_error(Some(2), "curl: option -H: requires parameter\n".to_string(), None)]
    #[case::exit_without_a_line(Some(7), String::new(), None)]
    #[case::exit_not_the_last_line(Some(7), format!("{REFUSED}{TIMEOUT}"), None)]
    #[case::exit_unknown(None, String::new(), None)]
    #[case::more_lines_than_connections(Some(7), REFUSED.repeat(4), None)]
    fn connections_made_together_are_each_classified(
        #[case] code: Option<i32>,
        #[case] stderr: String,
        #[case] failed: Option<Vec<FailureClass>>,
    ) {
        let got = classify_repeated(&batch(code, &stderr), 3);
        let want = failed.map(|f| {
            let reached = 3 - f.len();
            f.into_iter()
                .map(Observation::Failed)
                .chain(std::iter::repeat_n(Observation::Reached(String::new()), reached))
                .collect::<Vec<_>>()
        });
        assert_eq!(got, want);
    }

    fn out(code: i32, stderr: &str) -> Output {
        Output {
            exit_code: Some(code),
            stderr: stderr.as_bytes().to_vec(),
            stdout: b"srv-1".to_vec(),
            ..Output::default()
        }
    }

    #[rstest]
    #[case(Protocol::Tcp, 0, "", Observation::Reached("srv-1".into()))]
    #[case(
        Protocol::Tcp,
        7,
        "curl: (7) Failed to connect",
        Observation::Failed(FailureClass::Refused)
    )]
    #[case(
        Protocol::Tcp,
        28,
        "curl: (28) Connection timed out",
        Observation::Failed(FailureClass::Timeout)
    )]
    #[case(
        Protocol::Tcp,
        6,
        "curl: (6) Could not resolve host",
        Observation::Failed(FailureClass::Dns)
    )]
    #[case(
        Protocol::Tcp,
        28,
        "curl: (28) Resolving timed out after 5000 milliseconds",
        Observation::Failed(FailureClass::Dns)
    )]
    #[case(
        Protocol::Tcp,
        56,
        "curl: (56) Recv failure",
        Observation::Failed(FailureClass::Reset)
    )]
    #[case(Protocol::Udp, 1, "TIMEOUT\n", Observation::Failed(FailureClass::Timeout))]
    #[case(Protocol::Udp, 1, "REFUSED\n", Observation::Failed(FailureClass::Refused))]
    #[case(Protocol::Udp, 1, "DNS: lookup x", Observation::Failed(FailureClass::Dns))]
    #[case(Protocol::Icmp, 1, "", Observation::Failed(FailureClass::NoReply))]
    fn classification(#[case] p: Protocol, #[case] code: i32, #[case] stderr: &str, #[case] expect: Observation) {
        assert_eq!(classify(&req(p), &out(code, stderr)), expect);
    }

    /// agnhost `connect` on Windows (raw TCP and UDP): the refusal is OTHER with
    /// WSAECONNREFUSED's text (TCP), or the WSAECONNRESET a receive reports after an ICMP port
    /// unreachable (UDP); WSAETIMEDOUT without agnhost's deadline stays OTHER.
    #[rstest]
    #[case::refused_tcp(
        Protocol::Tcp,
        "OTHER: dial tcp 10.244.1.5:8080: connectex: No connection could be made because the target machine actively refused it.\n",
        FailureClass::Refused
    )]
    #[case::refused_udp(
        Protocol::Udp,
        "UNKNOWN: read udp 10.244.3.4:50000->10.244.1.5:8081: wsarecv: An existing connection was forcibly closed by the remote host.\n",
        FailureClass::Refused
    )]
    #[case::reset_tcp(
        Protocol::Tcp,
        "UNKNOWN: read tcp 10.244.3.4:50000->10.244.1.5:8080: wsarecv: An existing connection was forcibly closed by the remote host.\n",
        FailureClass::Other
    )]
    #[case::wsaetimedout(
        Protocol::Tcp,
        "OTHER: dial tcp 10.244.1.5:8080: connectex: A connection attempt failed because the connected party did not properly respond after a period of time\n",
        FailureClass::Other
    )]
    fn agnhost_connect_on_windows(#[case] p: Protocol, #[case] stderr: &str, #[case] class: FailureClass) {
        let r = Request {
            path: RAW_TCP.into(),
            ..req(p)
        };
        assert_eq!(classify(&r, &out(1, stderr)), Observation::Failed(class));
    }

    /// ping succeeds only with an echo reply (a TTL) in its output: Windows ping.exe exits 0 on
    /// "Destination host unreachable" too.
    #[rstest]
    #[case::windows_reply(0, "Reply from 10.244.1.5: bytes=32 time<1ms TTL=128\r\n", true)]
    #[case::busybox_reply(0, "64 bytes from 10.244.1.5: seq=0 ttl=64 time=0.061 ms\n", true)]
    #[case::windows_unreachable(
        0,
        "Reply from 10.244.3.4: Destination host unreachable.\r\n\r\nPing statistics for 10.244.1.5:\r\n    Packets: Sent = 1, Received = 1, Lost = 0 (0% loss),\r\n",
        false
    )]
    #[case::windows_timed_out(1, "Request timed out.\r\n", false)]
    #[case::exit_code_without_reply(0, "", false)]
    fn ping_needs_a_reply(#[case] code: i32, #[case] stdout: &str, #[case] reached: bool) {
        let o = Output {
            exit_code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
            ..Output::default()
        };
        let want = if reached {
            Observation::Reached(String::new())
        } else {
            Observation::Failed(FailureClass::NoReply)
        };
        assert_eq!(classify(&req(Protocol::Icmp), &o), want);
    }

    fn ps_out(code: i32, stdout: &str, stderr: &str) -> Output {
        Output {
            argv: vec![POWERSHELL.into(), "-NoProfile".into(), "-Command".into(), "…".into()],
            exit_code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            ..Output::default()
        }
    }

    /// Windows PowerShell's answers, as Windows Server Core 2016/1709 prints them.
    #[rstest]
    #[case::irm_body(0, "srv-2\r\n", "", Observation::Reached("srv-2\r\n".into()))]
    #[case::irm_refused(
        1,
        "",
        "Invoke-RestMethod : Unable to connect to the remote server\r\nAt line:1",
        Observation::Failed(FailureClass::Refused)
    )]
    #[case::irm_timeout(
        1,
        "",
        "Invoke-RestMethod : The operation has timed out.\r\n",
        Observation::Failed(FailureClass::Timeout)
    )]
    #[case::irm_dns(
        1,
        "",
        "Invoke-RestMethod : The remote name could not be resolved: 'svc-2'\r\n",
        Observation::Failed(FailureClass::Dns)
    )]
    #[case::irm_reset(
        1,
        "",
        "Invoke-RestMethod : The underlying connection was closed: An unexpected error occurred on a receive.",
        Observation::Failed(FailureClass::Reset)
    )]
    #[case::udp_reply(0, "hostname\r\n", "", Observation::Reached("hostname\r\n".into()))]
    #[case::udp_silence(
        1,
        "",
        "Exception calling \"Receive\" with \"1\" argument(s): \"A connection attempt failed because the connected party did not properly respond after a period of time\"",
        Observation::Failed(FailureClass::Timeout)
    )]
    #[case::udp_unreachable(
        1,
        "",
        "Exception calling \"Receive\" with \"1\" argument(s): \"An existing connection was forcibly closed by the remote host\"",
        Observation::Failed(FailureClass::Refused)
    )]
    #[case::udp_no_host(
        1,
        "",
        "Exception calling \"Connect\" with \"2\" argument(s): \"No such host is known\"",
        Observation::Failed(FailureClass::Dns)
    )]
    #[case::tnc_ok(
        0,
        "\r\nComputerName     : 10.0.0.1\r\nTcpTestSucceeded : True\r\n",
        "",
        Observation::Reached(String::new())
    )]
    #[case::tnc_failed(
        0,
        "WARNING: TCP connect to (10.0.0.1 : 10250) failed\r\nTcpTestSucceeded       : False\r\n",
        "",
        Observation::Failed(FailureClass::Other)
    )]
    #[case::tnc_no_name(
        0,
        "WARNING: Name resolution of kubernetes.default failed\r\n",
        "",
        Observation::Failed(FailureClass::Dns)
    )]
    fn powershell_classification(
        #[case] code: i32,
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] expect: Observation,
    ) {
        assert_eq!(classify(&req(Protocol::Tcp), &ps_out(code, stdout, stderr)), expect);
    }

    #[test]
    fn powershell_commands() {
        let argv = command(Runner::WindowsPowerShell, &req(Protocol::Tcp));
        assert_eq!(argv[..3], ["powershell.exe", "-NoProfile", "-Command"]);
        assert_eq!(
            argv[3],
            "Invoke-RestMethod -Uri 'http://10.244.1.5:8080/hostname' -TimeoutSec 10 -UseBasicParsing"
        );
        let udp = command(Runner::WindowsPowerShell, &req(Protocol::Udp));
        assert!(udp[3].contains("$u.Connect('10.244.1.5', 8080)"), "{}", udp[3]);
        assert!(udp[3].contains("ReceiveTimeout = 5000"), "{}", udp[3]);
        let mut raw = req(Protocol::Tcp);
        raw.path = RAW_TCP.into();
        assert_eq!(
            command(Runner::WindowsPowerShell, &raw)[3],
            "Test-NetConnection -ComputerName '10.244.1.5' -Port 8080"
        );
        let mut tls = req(Protocol::Tcp);
        tls.tls = true;
        assert!(command(Runner::WindowsPowerShell, &tls)[3].starts_with("Test-NetConnection"));
        assert_eq!(
            command(Runner::WindowsPowerShell, &req(Protocol::Icmp))[0..3],
            ["ping", "-n", "1"]
        );
        // No tool of these images is curl.exe (the OS has none before build 17063).
        for p in [Protocol::Tcp, Protocol::Udp, Protocol::Icmp] {
            assert!(
                !command(Runner::WindowsPowerShell, &req(p))
                    .iter()
                    .any(|a| a.contains("curl"))
            );
        }
    }

    #[test]
    fn commands_per_runner() {
        assert_eq!(
            command(Runner::Agnhost(Os::Windows), &req(Protocol::Tcp)),
            [
                "curl.exe",
                "-s",
                "-S",
                "--connect-timeout",
                "5",
                "-m",
                "10",
                "http://10.244.1.5:8080/hostname"
            ]
        );
        assert_eq!(
            command(Runner::Agnhost(Os::Linux), &req(Protocol::Udp)),
            [
                "/agnhost",
                "connect",
                "10.244.1.5:8080",
                "--timeout=5s",
                "--protocol=udp"
            ]
        );
        assert_eq!(
            command(Runner::WindowsHost, &req(Protocol::Icmp))[0..3],
            ["ping", "-n", "1"]
        );
        let o = Output {
            argv: command(Runner::Agnhost(Os::Linux), &req(Protocol::Tcp)),
            pod: "srv-1".into(),
            container: Some("client".into()),
            ..Output::default()
        };
        assert_eq!(
            reproduce("mixcheck-x", &o),
            "kubectl exec -n mixcheck-x srv-1 -c client -- curl -s -S --connect-timeout 5 -m 10 http://10.244.1.5:8080/hostname"
        );
    }
}
