//! Tests of the network tools' output over scripted wires.

use super::*;
use crate::config::profile::profiles;
use crate::config::topology::Topology;
use crate::store::resources;
use crate::store::{Part, Store};
use rstest::rstest;
use serde_json::json;
use std::sync::Arc;

/// Which network a case runs in.
#[derive(Debug, Clone, Copy)]
enum World {
    /// Everything answers: `web` resolves, HTTP 200, UDP and pings reply.
    Up,
    /// Nothing listens: TCP and UDP refused; pings reply.
    Refused,
    /// Packets are dropped: connections time out, pings get no reply.
    Dropped,
    /// Connections are accepted, then reset.
    Reset,
    /// Every name is NXDOMAIN.
    Nx,
    /// No DNS server answers.
    DnsDown,
    /// HTTP answers 404.
    Http404,
}

use World::{DnsDown, Dropped, Http404, Nx, Refused, Reset, Up};

/// The container a case runs in.
#[derive(Debug, Clone, Copy)]
enum Pod {
    Lin,
    Win,
}

use Pod::{Lin, Win};

const BODY: &str = "web-7f9c";

struct Fake(World);

impl Wire for Fake {
    fn dns_server(&self) -> String {
        "10.96.0.10".into()
    }
    fn resolve(&self, name: &str, server: Option<&str>) -> Lookup {
        match self.0 {
            Nx => Lookup::NotFound,
            DnsDown => Lookup::Timeout {
                server: server.unwrap_or("10.96.0.10").into(),
            },
            _ if name.starts_with("nope") => Lookup::NotFound,
            _ => Lookup::Found {
                fqdn: "web.team.svc.cluster.local".into(),
                addrs: vec![Ipv4Addr::new(10, 96, 0, 50)],
                alias: None,
            },
        }
    }
    fn connect(&self, _ip: Ipv4Addr, _port: u16, _proto: Proto) -> Result<(), Failure> {
        match self.0 {
            Refused => Err(Failure::Refused),
            Dropped => Err(Failure::Timeout),
            Reset => Err(Failure::Reset),
            _ => Ok(()),
        }
    }
    fn http_get(&self, ip: Ipv4Addr, port: u16, target: &str) -> Result<HttpReply, Failure> {
        self.connect(ip, port, Proto::Tcp)?;
        Ok(match self.0 {
            Http404 => HttpReply {
                status: 404,
                body: "404 page not found\n".into(),
            },
            _ => HttpReply {
                status: 200,
                body: if target == "/hostname" {
                    BODY.into()
                } else {
                    format!("GET {target}")
                },
            },
        })
    }
    fn udp(&self, ip: Ipv4Addr, port: u16, payload: &str) -> Result<String, Failure> {
        match self.connect(ip, port, Proto::Udp) {
            Err(Failure::Reset) => Err(Failure::Refused),
            other => other.map(|()| format!("{BODY} <- {payload}")),
        }
    }
    fn ping(&self, _ip: Ipv4Addr) -> Result<(), Failure> {
        match self.0 {
            Dropped => Err(Failure::NoReply),
            _ => Ok(()),
        }
    }
}

fn context(pod: Pod) -> CommandContext {
    let store = Arc::new(Store::default());
    store
        .create(resources::core("namespaces"), "", json!({"metadata": {"name": "team"}}))
        .expect("namespace");
    let (node, image) = match pod {
        Lin => ("linux-1", "registry.k8s.io/e2e-test-images/agnhost:2.52"),
        Win => ("win2022-1", "mcr.microsoft.com/windows/servercore:ltsc2022"),
    };
    let pods = resources::core("pods");
    store
        .create(
            pods,
            "team",
            json!({"metadata": {"name": "client"}, "spec": {"nodeName": node,
            "containers": [{"name": "c", "image": image}]}}),
        )
        .expect("pod");
    let pod = store
        .modify(pods, "team", "client", Part::Status, |p| {
            p["status"] = json!({"phase": "Running", "podIP": "10.244.1.9"});
            Ok(())
        })
        .expect("status");
    let topology = Topology::default_cluster().instant();
    let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
        .map(|i| Ipv4Addr::new(127, 8, 8, 10 + u8::try_from(i).expect("few nodes")))
        .collect();
    CommandContext::new(store, &profiles(&topology, &ips), pod, "c")
}

fn exec(world: World, pod: Pod, line: &str) -> ExecOutput {
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    run(&context(pod), &Fake(world), &argv)
}

/// What a command line should print and exit with.
struct Want {
    stdout: String,
    stderr: String,
    code: i32,
}

fn both(code: i32, stdout: &str, stderr: &str) -> Want {
    Want {
        stdout: stdout.into(),
        stderr: stderr.into(),
        code,
    }
}

/// Exit 0 with this on stdout.
fn ok(stdout: &str) -> Want {
    both(0, stdout, "")
}

/// This exit code with this on stdout only.
fn said(code: i32, stdout: &str) -> Want {
    both(code, stdout, "")
}

/// This exit code with this on stderr only.
fn err(code: i32, stderr: &str) -> Want {
    both(code, "", stderr)
}

const WIN_REFUSED: &str = "OTHER: dial tcp 10.0.0.1:80: connectex: No connection could be made because the target \
    machine actively refused it.\n";
const WIN_TIMED_OUT: &str = "OTHER: dial tcp 10.0.0.1:80: connectex: A connection attempt failed because the \
    connected party did not properly respond after a period of time, or established connection failed because \
    connected host has failed to respond.\n";
const CURL_REFUSED: &str = "curl: (7) Failed to connect to web port 8080 after 0 ms: Couldn't connect to server\n";
const WGET_VERBOSE: &str = "Connecting to web (10.96.0.50:80)\nwriting to stdout\n-                    100% \
    |********************************|     8  0:00:00 ETA\nwritten to stdout\n";
const NS_WINDOWS: &str = "Server:  UnKnown\r\nAddress:  10.96.0.10\r\n\r\n";
const NS_FOUND_LINUX: &str =
    "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tweb.team.svc.cluster.local\nAddress: 10.96.0.50\n\n";
const NS_FOUND_WINDOWS: &str = "Server:  UnKnown\r\nAddress:  10.96.0.10\r\n\r\nName:    \
    web.team.svc.cluster.local\r\n\
    Address:  10.96.0.50\r\n\r\n";
const DIG_FULL: &str = "\n; <<>> DiG 9.18.27 <<>> web.team.svc.cluster.local\n;; global options: +cmd\n;; Got \
    answer:\n;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 36553\n;; flags: qr aa rd; QUERY: 1, ANSWER: 1, \
    AUTHORITY: 0, ADDITIONAL: 0\n;; WARNING: recursion requested but not available\n\n;; QUESTION SECTION:\n\
    ;web.team.svc.cluster.local.\t\t\tIN\tA\n\n;; ANSWER SECTION:\nweb.team.svc.cluster.local.\t5\tIN\tA\t\
    10.96.0.50\n\n;; Query time: 0 msec\n;; SERVER: 10.96.0.10#53(10.96.0.10) (UDP)\n\n";
const PING_LINUX: &str = "PING web (10.96.0.50): 56 data bytes\n64 bytes from 10.96.0.50: seq=0 ttl=64 \
    time=0.089 ms\n64 bytes from 10.96.0.50: seq=1 ttl=64 time=0.058 ms\n\n--- web ping statistics ---\n2 packets \
    transmitted, 2 packets received, 0% packet loss\nround-trip min/avg/max = 0.058/0.073/0.089 ms\n";
const PING_LINUX_LOST: &str = "PING 10.0.0.1 (10.0.0.1): 56 data bytes\n\n--- 10.0.0.1 ping statistics ---\n1 \
    packets transmitted, 0 packets received, 100% packet loss\n";
const PING_WINDOWS: &str = "\r\nPinging 10.0.0.1 with 32 bytes of data:\r\nReply from 10.0.0.1: bytes=32 time<1ms \
    TTL=128\r\nReply from 10.0.0.1: bytes=32 time<1ms TTL=128\r\n\r\nPing statistics for 10.0.0.1:\r\n    Packets: \
    Sent = 2, Received = 2, Lost = 0 (0% loss),\r\nApproximate round trip times in milli-seconds:\r\n    Minimum = \
    0ms, Maximum = 0ms, Average = 0ms\r\n";
const PING_WINDOWS_LOST: &str = "\r\nPinging web.team.svc.cluster.local [10.96.0.50] with 32 bytes of data:\r\n\
    Request timed out.\r\n\r\nPing statistics for 10.96.0.50:\r\n    Packets: Sent = 1, Received = 0, Lost = 1 \
    (100% loss),\r\n";
const RESOLVED: &str = "\r\nName                                           Type   TTL   Section    IPAddress\r\n\
    ----                                           ----   ---   -------    ---------\r\n\
    web.team.svc.cluster.local                     A      5     Answer     10.96.0.50\r\n\r\n";
const PS_NX: &str = "Resolve-DnsName : nope : DNS name does not exist\r\nAt line:1 char:1\r\n+ Resolve-DnsName \
    -Name nope\r\n+ ~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n    + CategoryInfo          : ResourceUnavailable: \
    (nope:String) [Resolve-DnsName], Win32Exception\r\n    + FullyQualifiedErrorId : \
    DNS_ERROR_RCODE_NAME_ERROR,Microsoft.DnsClient.Commands.ResolveDnsName\r\n \r\n";
const PS_TIMEOUT: &str = "Resolve-DnsName : nope : This operation returned because the timeout period expired\r\n\
    At line:1 char:1\r\n+ Resolve-DnsName nope\r\n+ ~~~~~~~~~~~~~~~~~~~~\r\n    + CategoryInfo          : \
    OperationTimeout: (nope:String) [Resolve-DnsName], Win32Exception\r\n    + FullyQualifiedErrorId : \
    ERROR_TIMEOUT,Microsoft.DnsClient.Commands.ResolveDnsName\r\n \r\n";
const TNC_TCP: &str = "\r\nComputerName     : web\r\nRemoteAddress    : 10.96.0.50\r\nRemotePort       : 80\r\n\
    InterfaceAlias   : vEthernet (Ethernet)\r\nSourceAddress    : 10.244.1.9\r\nTcpTestSucceeded : \
    True\r\n\r\n\r\n";
const TNC_TCP_REFUSED: &str = "WARNING: TCP connect to (10.0.0.1 : 80) failed\r\n\r\nComputerName           : \
    10.0.0.1\r\nRemoteAddress          : 10.0.0.1\r\nRemotePort             : 80\r\nInterfaceAlias         : \
    vEthernet (Ethernet)\r\nSourceAddress          : 10.244.1.9\r\nPingSucceeded          : True\r\n\
    PingReplyDetails (RTT) : 0 ms\r\nTcpTestSucceeded       : False\r\n\r\n\r\n";
const TNC_PING: &str = "\r\nComputerName           : 10.0.0.1\r\nRemoteAddress          : 10.0.0.1\r\n\
    InterfaceAlias         : vEthernet (Ethernet)\r\nSourceAddress          : \
    10.244.1.9\r\nPingSucceeded          : \
    True\r\nPingReplyDetails (RTT) : 0 ms\r\n\r\n\r\n";
const TNC_PING_LOST: &str = "WARNING: Ping to 10.0.0.1 failed with status: \
    TimedOut\r\n\r\nComputerName           : \
    10.0.0.1\r\nRemoteAddress          : 10.0.0.1\r\nInterfaceAlias         : vEthernet (Ethernet)\r\n\
    SourceAddress          : 10.244.1.9\r\nPingSucceeded          : False\r\nPingReplyDetails (RTT) : 0 \
    ms\r\n\r\n\r\n";
const TNC_NO_NAME: &str = "WARNING: Name resolution of nope failed\r\n\r\nComputerName   : \
    nope\r\nRemoteAddress  :\r\n\
    InterfaceAlias :\r\nSourceAddress  :\r\nPingSucceeded  : False\r\n\r\n\r\n";

const CONNECT_NXDOMAIN: &str = "DNS: lookup nope on 10.96.0.10:53: no such host\n";
const CONNECT_DNS_TIMEOUT: &str = "DNS: lookup nope on 10.96.0.10:53: i/o timeout\n";
const CONNECT_DNS_TIMEOUT_WINDOWS: &str = "DNS: lookup nope: getaddrinfow: This is usually a temporary error \
    during hostname resolution and means that the local server did not receive a response from an authoritative \
    server.\n";
const CONNECT_NO_PORT: &str = "UNKNOWN: address web: missing port in address\n";
const UDP_REFUSED: &str = "REFUSED: read udp 10.244.1.9:59235->10.0.0.1:8081: read: connection refused\n";
const UDP_REFUSED_WINDOWS: &str = "UNKNOWN: read udp 10.244.1.9:65443->10.0.0.1:8081: wsarecv: An existing \
    connection was forcibly closed by the remote host.\n";
const UDP_TIMEOUT: &str = "TIMEOUT: read udp 10.244.1.9:59235->10.0.0.1:8081: i/o timeout\n";
const CURL_TIMEOUT: &str = "curl: (28) Failed to connect to 10.0.0.1 port 80 after 5000 ms: Timeout was reached\n";
const CURL_RESET: &str = "curl: (56) Recv failure: Connection reset by peer\n";
const CURL_DNS_TIMEOUT: &str = "curl: (28) Resolving timed out after 3000 milliseconds\n";
const CURL_404_FAIL: &str = "curl: (22) The requested URL returned error: 404\n";
const CURL_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 8\r\n\r\n";
const WGET_REFUSED: &str = "wget: can't connect to remote host (10.96.0.50): Connection refused\n";
const WGET_OS_TIMEOUT: &str = "wget: can't connect to remote host (10.0.0.1): Connection timed out\n";
const WGET_RESET: &str = "wget: error getting response: Connection reset by peer\n";
const WGET_404: &str = "wget: server returned error: HTTP/1.1 404 Not Found\n";
const NC_REFUSED_VERY_VERBOSE: &str = "nc: web (10.96.0.50:80): Connection refused\n";
const NC_TIMEOUT: &str = "nc: 10.0.0.1 (10.0.0.1:80): Connection timed out\n";
const NSLOOKUP_NXDOMAIN_WINDOWS: &str = "*** UnKnown can't find nope: Non-existent domain\r\n";
const NSLOOKUP_TIMEOUT: &str = ";; connection timed out; no servers could be reached\n\n";
const NSLOOKUP_TIMEOUT_WINDOWS: &str =
    "DNS request timed out.\r\n    timeout was 2 seconds.\r\n*** Request to UnKnown timed-out\r\n";
const DIG_TIMEOUT: &str = ";; connection timed out; no servers could be reached\n";
const PING_NXDOMAIN_WINDOWS: &str = "Ping request could not find host nope. Please check the name and try again.\r\n";
const NS_NXDOMAIN_LINUX: &str =
    "Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n** server can't find nope: NXDOMAIN\n\n";
const TNC_TCP_QUIET_TIMEOUT: &str = "WARNING: TCP connect to (10.0.0.1 : 80) failed\r\nFalse\r\n";

#[rstest]
// agnhost connect: silent success; Go's error prefixes; the Windows build reports as OTHER.
#[case::connect_up(Up, Lin, "/agnhost connect web:80 --timeout=1s", ok(""))]
#[case::connect_reset_is_connected(Reset, Lin, "agnhost connect web:80", ok(""))]
#[case::connect_refused(Refused, Lin, "/agnhost connect 10.0.0.1:80", err(1, "REFUSED\n"))]
#[case::connect_refused_windows(Refused, Win, "c:\\hpc\\agnhost.exe connect 10.0.0.1:80", err(1, WIN_REFUSED))]
#[case::connect_timeout(Dropped, Lin, "agnhost connect 10.0.0.1:80 --timeout=1s", err(1, "TIMEOUT\n"))]
#[case::connect_timeout_windows(Dropped, Win, "agnhost.exe connect 10.0.0.1:80 --timeout 1s", err(1, "TIMEOUT\n"))]
#[case::connect_os_timeout_windows(Dropped, Win, "agnhost connect 10.0.0.1:80", err(1, WIN_TIMED_OUT))]
#[case::connect_nxdomain(Nx, Lin, "agnhost connect nope:80", err(1, CONNECT_NXDOMAIN))]
#[case::connect_nxdomain_windows(Nx, Win, "agnhost connect nope:80", err(1, "DNS: lookup nope: no such host\n"))]
#[case::connect_dns_timeout(DnsDown, Lin, "agnhost connect nope:80", err(1, CONNECT_DNS_TIMEOUT))]
#[case::connect_dns_timeout_windows(DnsDown, Win, "agnhost connect nope:80", err(1, CONNECT_DNS_TIMEOUT_WINDOWS))]
#[case::connect_udp_dns_timeout_windows(
    DnsDown,
    Win,
    "agnhost connect nope:8081 --protocol=udp",
    err(1, CONNECT_DNS_TIMEOUT_WINDOWS)
)]
#[case::connect_no_port(Up, Lin, "agnhost connect web", err(1, CONNECT_NO_PORT))]
#[case::connect_udp_up(Up, Lin, "agnhost connect 10.0.0.1:8081 --protocol=udp", ok(""))]
#[case::udp_refused(Refused, Lin, "agnhost connect 10.0.0.1:8081 --protocol=udp", err(1, UDP_REFUSED))]
#[case::udp_refused_windows(
    Refused,
    Win,
    "agnhost connect 10.0.0.1:8081 --protocol udp",
    err(1, UDP_REFUSED_WINDOWS)
)]
#[case::udp_timeout(
    Dropped,
    Lin,
    "agnhost connect 10.0.0.1:8081 --protocol=udp --timeout=1s",
    err(1, UDP_TIMEOUT)
)]
// curl 8, alike on Windows (curl.exe).
#[case::curl_up(Up, Lin, "curl -s http://web:8080/hostname", ok(BODY))]
#[case::curl_up_windows(Up, Win, "curl.exe -s http://web:8080/hostname", ok(BODY))]
#[case::curl_write_out(Up, Lin, r"curl -s -w \n%{http_code} web:8080/hostname", ok("web-7f9c\n200"))]
#[case::curl_refused(Refused, Lin, "curl http://web:8080/", err(7, CURL_REFUSED))]
#[case::curl_refused_silent(Refused, Lin, "curl -s http://web:8080/", err(7, ""))]
#[case::curl_refused_shown(
    Refused,
    Win,
    "curl.exe -sSo NUL -w %{http_code} web:8080",
    both(7, "000", CURL_REFUSED)
)]
#[case::curl_timeout(Dropped, Lin, "curl -m 5 http://10.0.0.1/", err(28, CURL_TIMEOUT))]
#[case::curl_reset(Reset, Win, "curl.exe http://web/", err(56, CURL_RESET))]
#[case::curl_localhost_skips_dns(DnsDown, Lin, "curl -s localhost:8080/hostname", ok(BODY))]
#[case::curl_nxdomain(Nx, Lin, "curl http://nope/", err(6, "curl: (6) Could not resolve host: nope\n"))]
#[case::curl_dns_timeout(DnsDown, Lin, "curl --connect-timeout 3 http://nope/", err(28, CURL_DNS_TIMEOUT))]
#[case::curl_404(Http404, Lin, "curl -s http://web/x", ok("404 page not found\n"))]
#[case::curl_404_fail(Http404, Lin, "curl -sSf http://web/x", err(22, CURL_404_FAIL))]
#[case::curl_404_fail_silent(Http404, Win, "curl.exe -fso NUL -w %{http_code} web/x", said(22, "404"))]
#[case::curl_head(Up, Lin, "curl -sI http://web/hostname", ok(CURL_HEAD))]
// busybox wget (busybox-w32 on Windows).
#[case::wget_up(Up, Lin, "wget -qO- http://web:8080/hostname", ok(BODY))]
#[case::wget_up_verbose(Up, Lin, "wget -O- http://web/hostname", both(0, BODY, WGET_VERBOSE))]
#[case::wget_refused(Refused, Lin, "wget -qO- http://web/", err(1, WGET_REFUSED))]
#[case::wget_timeout(Dropped, Win, "wget -T 2 -qO- 10.0.0.1", err(1, "wget: download timed out\n"))]
#[case::wget_os_timeout(Dropped, Lin, "wget -q -O /dev/null http://10.0.0.1/", err(1, WGET_OS_TIMEOUT))]
#[case::wget_reset(Reset, Lin, "wget -qO- http://web/", err(1, WGET_RESET))]
#[case::wget_404(Http404, Win, "wget -qO- http://web/x", err(1, WGET_404))]
#[case::wget_nxdomain(Nx, Lin, "wget -qO- http://nope/", err(1, "wget: bad address 'nope'\n"))]
// busybox nc: refusals are printed only with -vv.
#[case::nc_up(Up, Lin, "nc -vz web 80", err(0, "web (10.96.0.50:80) open\n"))]
#[case::nc_up_quiet(Up, Win, "nc -z 10.0.0.1 80", ok(""))]
#[case::nc_refused(Refused, Lin, "nc -vz web 80", err(1, ""))]
#[case::nc_refused_very_verbose(Refused, Lin, "nc -vvz web 80", err(1, NC_REFUSED_VERY_VERBOSE))]
#[case::nc_timeout(Dropped, Lin, "nc -vz -w 1 10.0.0.1 80", err(1, NC_TIMEOUT))]
#[case::nc_udp_silence_is_open(Dropped, Lin, "nc -vzu 10.0.0.1 53", err(0, "10.0.0.1 (10.0.0.1:53) open\n"))]
#[case::nc_udp_refused(Refused, Lin, "nc -vzu 10.0.0.1 53", err(1, ""))]
#[case::nc_nxdomain(Nx, Win, "nc -vz nope 80", err(1, "nc: bad address 'nope'\n"))]
// nslookup: busybox on Linux, nslookup.exe on Windows.
#[case::nslookup_up(Up, Lin, "nslookup web", ok(NS_FOUND_LINUX))]
#[case::nslookup_up_windows(Up, Win, "nslookup web", ok(NS_FOUND_WINDOWS))]
#[case::nslookup_server(Up, Lin, "nslookup web 10.96.0.11", ok(&NS_FOUND_LINUX.replace(".10", ".11")))]
#[case::nslookup_nxdomain(Nx, Lin, "nslookup nope", said(1, NS_NXDOMAIN_LINUX))]
#[case::nslookup_nxdomain_windows(Nx, Win, "nslookup nope", both(1, NS_WINDOWS, NSLOOKUP_NXDOMAIN_WINDOWS))]
#[case::nslookup_timeout(DnsDown, Lin, "nslookup nope", said(1, NSLOOKUP_TIMEOUT))]
#[case::nslookup_timeout_windows(DnsDown, Win, "nslookup nope", both(1, NS_WINDOWS, NSLOOKUP_TIMEOUT_WINDOWS))]
// dig
#[case::dig_short(Up, Lin, "dig +short web.team.svc.cluster.local", ok("10.96.0.50\n"))]
#[case::dig_short_nxdomain(Nx, Lin, "dig +short nope", ok(""))]
#[case::dig_full(Up, Lin, "dig web.team.svc.cluster.local", ok(DIG_FULL))]
#[case::dig_timeout(DnsDown, Lin, "dig nope", said(9, DIG_TIMEOUT))]
// ping: busybox on Linux, ping.exe on Windows.
#[case::ping_up(Up, Lin, "ping -c 2 web", ok(PING_LINUX))]
#[case::ping_up_windows(Up, Win, "ping -n 2 10.0.0.1", ok(PING_WINDOWS))]
#[case::ping_lost(Dropped, Lin, "ping -c 1 -W 1 10.0.0.1", said(1, PING_LINUX_LOST))]
#[case::ping_lost_windows(Dropped, Win, "ping -n 1 -w 1000 web", said(1, PING_WINDOWS_LOST))]
#[case::ping_nxdomain(Nx, Lin, "ping -c 1 nope", err(1, "ping: bad address 'nope'\n"))]
#[case::ping_nxdomain_windows(Nx, Win, "ping nope", said(1, PING_NXDOMAIN_WINDOWS))]
// PowerShell cmdlets.
#[case::resolve_up(Up, Win, "Resolve-DnsName web", ok(RESOLVED))]
#[case::resolve_nxdomain(Nx, Win, "Resolve-DnsName -Name nope", err(1, PS_NX))]
#[case::resolve_timeout(DnsDown, Win, "Resolve-DnsName nope", err(1, PS_TIMEOUT))]
#[case::tnc_tcp(Up, Win, "Test-NetConnection web -Port 80", ok(TNC_TCP))]
#[case::tnc_tcp_quiet(
    Up,
    Win,
    "tnc -ComputerName 10.0.0.1 -Port 80 -InformationLevel Quiet",
    ok("True\r\n")
)]
#[case::tnc_tcp_refused(Refused, Win, "Test-NetConnection 10.0.0.1 -Port 80", ok(TNC_TCP_REFUSED))]
#[case::tnc_tcp_quiet_timeout(
    Dropped,
    Win,
    "tnc 10.0.0.1 -Port 80 -InformationLevel quiet",
    ok(TNC_TCP_QUIET_TIMEOUT)
)]
#[case::tnc_ping(Up, Win, "Test-NetConnection 10.0.0.1", ok(TNC_PING))]
#[case::tnc_ping_lost(Dropped, Win, "Test-NetConnection 10.0.0.1", ok(TNC_PING_LOST))]
#[case::tnc_nxdomain(Nx, Win, "Test-NetConnection nope -Port 80", ok(TNC_NO_NAME))]
fn tools_print_each_outcome(#[case] world: World, #[case] pod: Pod, #[case] line: &str, #[case] want: Want) {
    let o = exec(world, pod, line);
    assert_eq!(String::from_utf8_lossy(&o.stdout), want.stdout, "stdout of {line}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), want.stderr, "stderr of {line}");
    assert_eq!(o.exit, ExitStatus::Code(want.code), "exit of {line}");
}

/// Windows PowerShell 5.1's Invoke-RestMethod: the body, or the WebException message.
#[rstest]
#[case::body(
    Up,
    "Invoke-RestMethod -Uri http://web:8080/hostname -TimeoutSec 10 -UseBasicParsing",
    Ok(BODY)
)]
#[case::positional(Up, "irm http://10.0.0.1:8080/hostname", Ok(BODY))]
#[case::refused(
    Refused,
    "Invoke-RestMethod http://10.0.0.1:8080/",
    Err("Unable to connect to the remote server")
)]
#[case::timeout(
    Dropped,
    "Invoke-RestMethod http://10.0.0.1:8080/",
    Err("The operation has timed out.")
)]
#[case::reset(
    Reset,
    "Invoke-RestMethod http://10.0.0.1:8080/",
    Err("The underlying connection was closed: An unexpected error occurred on a receive.")
)]
#[case::nxdomain(
    Nx,
    "Invoke-RestMethod http://web:8080/",
    Err("The remote name could not be resolved: 'web'")
)]
#[case::dns_down(
    DnsDown,
    "Invoke-RestMethod http://web:8080/",
    Err("The remote name could not be resolved: 'web'")
)]
#[case::error_body(Http404, "Invoke-RestMethod http://10.0.0.1:8080/x", Err("404 page not found"))]
fn invoke_rest_method(#[case] world: World, #[case] line: &str, #[case] want: Result<&str, &str>) {
    let o = exec(world, Win, line);
    match want {
        Ok(body) => {
            assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{body}\r\n"));
            assert_eq!(o.exit, ExitStatus::Code(0));
        }
        Err(message) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.starts_with(&format!("Invoke-RestMethod : {message}\r\n")), "{err}");
            assert!(err.contains("WebCmdletWebResponseException"), "{err}");
            assert_eq!(o.exit, ExitStatus::Code(1));
        }
    }
}

const UDP_SCRIPT: &str = "$u = New-Object System.Net.Sockets.UdpClient; $u.Client.ReceiveTimeout = 5000; \
    $u.Connect('web', 90); $b = [System.Text.Encoding]::ASCII.GetBytes('hostname'); [void]$u.Send($b, $b.Length); \
    $e = New-Object System.Net.IPEndPoint ([System.Net.IPAddress]::Any, 0); \
    [System.Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))";

/// A .NET UdpClient exchange in a PowerShell script: the reply, or the SocketException.
#[rstest]
#[case::reply(Up, Ok("web-7f9c <- hostname"))]
#[case::silence(Dropped, Err(("Receive", "A connection attempt failed because the connected party did not properly respond")))]
#[case::port_unreachable(Refused, Err(("Receive", "An existing connection was forcibly closed by the remote host")))]
#[case::no_such_host(Nx, Err(("Connect", "No such host is known")))]
fn dotnet_udp_exchanges(#[case] world: World, #[case] want: Result<&str, (&str, &str)>) {
    let o = dotnet_udp(&context(Win), &Fake(world), UDP_SCRIPT).expect("a UdpClient script");
    match want {
        Ok(reply) => {
            assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{reply}\r\n"));
            assert_eq!(o.exit, ExitStatus::Code(0));
        }
        Err((method, message)) => {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.starts_with(&format!("Exception calling \"{method}\"")), "{err}");
            assert!(err.contains(message), "{err}");
            assert!(err.contains("FullyQualifiedErrorId : SocketException"), "{err}");
            assert_eq!(o.exit, ExitStatus::Code(1));
        }
    }
}

#[rstest]
#[case::no_udp("Write-Output hi")]
#[case::server_only("$u = New-Object System.Net.Sockets.UdpClient(8081); while ($true) { }")]
fn other_scripts_are_not_udp_exchanges(#[case] script: &str) {
    assert!(dotnet_udp(&context(Win), &Fake(Up), script).is_none());
}

#[rstest]
#[case::curl("curl -s http://10.0.0.2:8080/dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1#x")]
#[case::curl_exe("curl.exe -s 10.0.0.2:8080/dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1")]
#[case::wget("wget -qO- http://10.0.0.2:8080/dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1")]
fn http_targets_keep_path_and_query(#[case] line: &str) {
    let o = exec(Up, Lin, line);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "GET /dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1"
    );
}

#[rstest]
#[case("http://web", "web", 80, "/")]
#[case("https://u:p@web:8443?x=1#frag", "web", 8443, "/?x=1")]
#[case("web:8080/hostname", "web", 8080, "/hostname")]
#[case("http://[::1]:81/a", "[::1]", 81, "/a")]
fn urls(#[case] url: &str, #[case] host: &str, #[case] port: u16, #[case] target: &str) {
    let expected = Url {
        host: host.into(),
        port,
        target: target.into(),
    };
    assert_eq!(parse_url(url), expected);
}

#[rstest]
#[case("1s", Some(1.0))]
#[case("1m30s", Some(90.0))]
#[case("500ms", Some(0.5))]
#[case("0", Some(0.0))]
#[case("5", None)]
#[case("1x", None)]
fn go_durations(#[case] text: &str, #[case] seconds: Option<f64>) {
    assert_eq!(go_duration(text), seconds);
}

#[test]
fn odd_arguments_never_panic() {
    let tools = [
        "agnhost connect",
        "curl",
        "wget",
        "nc",
        "nslookup",
        "dig",
        "ping",
        "Resolve-DnsName",
        "tnc",
    ];
    let odd = [
        "",
        "-",
        "--",
        "-o",
        "-w",
        "-T",
        "-é",
        "-oé",
        "[::1",
        "[::1]:x",
        ":",
        "a:b:c",
        "http://[::1",
        "@",
        "+",
        "-n -1",
        "-c 99999999999",
        "--timeout",
        "--timeout=x",
        "-Port x",
        "-Name",
        "http://u@:99999/é",
    ];
    for ctx in [context(Lin), context(Win)] {
        for world in [Up, Refused, Dropped, Nx, DnsDown] {
            for line in tools.iter().flat_map(|t| {
                odd.iter()
                    .flat_map(move |a| [format!("{t} {a}"), format!("{t} {a} web")])
            }) {
                let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
                let _ = run(&ctx, &Fake(world), &argv);
            }
        }
    }
}

#[test]
fn offline_names_time_out_and_addresses_drop() {
    let offline = Offline {
        dns_server: "10.96.0.10".into(),
    };
    let argv = |line: &str| line.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let o = run(&context(Lin), &offline, &argv("agnhost connect web:80"));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "DNS: lookup web on 10.96.0.10:53: i/o timeout\n"
    );
    let o = run(&context(Win), &offline, &argv("Test-NetConnection 10.0.0.1 -Port 80"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("PingSucceeded          : False"));
    let o = run(&context(Lin), &offline, &argv("telnet web 80"));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "telnet: network unreachable\n");
}

/// A Service whose backends answer in turn on each new connection (`backend-0`, `backend-1`,
/// …); connection `refused` (counted from 0) is refused. Counts the name lookups.
struct Backends {
    connections: std::cell::Cell<usize>,
    lookups: std::cell::Cell<usize>,
    refused: Option<usize>,
}

impl Wire for Backends {
    fn dns_server(&self) -> String {
        "10.96.0.10".into()
    }
    fn resolve(&self, _name: &str, _server: Option<&str>) -> Lookup {
        self.lookups.set(self.lookups.get() + 1);
        Lookup::Found {
            fqdn: "web.team.svc.cluster.local".into(),
            addrs: vec![Ipv4Addr::new(10, 96, 0, 50)],
            alias: None,
        }
    }
    fn connect(&self, _ip: Ipv4Addr, _port: u16, _proto: Proto) -> Result<(), Failure> {
        Ok(())
    }
    fn http_get(&self, _ip: Ipv4Addr, _port: u16, _target: &str) -> Result<HttpReply, Failure> {
        let n = self.connections.get();
        self.connections.set(n + 1);
        if self.refused == Some(n) {
            return Err(Failure::Refused);
        }
        Ok(HttpReply {
            status: 200,
            body: format!("backend-{n} "),
        })
    }
    fn udp(&self, _ip: Ipv4Addr, _port: u16, _payload: &str) -> Result<String, Failure> {
        Err(Failure::Timeout)
    }
    fn ping(&self, _ip: Ipv4Addr) -> Result<(), Failure> {
        Ok(())
    }
}

const REFUSED_WEB: &str = "curl: (7) Failed to connect to web port 80 after 0 ms: Couldn't connect to server\n";

/// curl's URLs are transferred one after another (curl `src/tool_operate.c` serial_transfers):
/// one lookup for the name (the shared DNS cache), a connection kept for the next request to
/// the same origin unless the request says `Connection: close`, an error line per failed
/// transfer, and the last transfer's exit code.
#[rstest]
#[case::kept_connection(
    "curl -s web/hostname web/hostname web/hostname",
    None,
    said(0, "backend-0 backend-0 backend-0 "),
    1
)]
#[case::new_connection_each(
    "curl -s -H Connection:close web/hostname web/hostname web/hostname",
    None,
    said(0, "backend-0 backend-1 backend-2 "),
    3
)]
#[case::another_path_connects_again("curl -s web/hostname web/clientip", None, said(0, "backend-0 backend-1 "), 2)]
#[case::a_failed_one_in_the_middle(
    "curl.exe -sS --header connection:close web/hostname web/hostname web/hostname",
    Some(1),
    both(0, "backend-0 backend-2 ", REFUSED_WEB),
    3
)]
#[case::the_last_one_sets_the_exit_code(
    "curl -sS -H Connection:close -w %{http_code}, web/hostname web/hostname",
    Some(1),
    both(7, "backend-0 200,000,", REFUSED_WEB),
    2
)]
#[case::a_failure_closes_the_connection(
    "curl -sS web/hostname web/hostname web/hostname",
    Some(0),
    both(0, "backend-1 backend-1 ", REFUSED_WEB),
    2
)]
fn curl_transfers_each_url_in_turn(
    #[case] line: &str,
    #[case] refused: Option<usize>,
    #[case] want: Want,
    #[case] connections: usize,
) {
    let wire = Backends {
        connections: std::cell::Cell::new(0),
        lookups: std::cell::Cell::new(0),
        refused,
    };
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    let got = run(&context(Lin), &wire, &argv);
    assert_eq!(String::from_utf8_lossy(&got.stdout), want.stdout, "{line}");
    assert_eq!(String::from_utf8_lossy(&got.stderr), want.stderr, "{line}");
    assert_eq!(got.exit, ExitStatus::Code(want.code), "{line}");
    assert_eq!(wire.connections.get(), connections, "connections of {line}");
    assert_eq!(wire.lookups.get(), 1, "one lookup for {line}");
}
