//! Identity commands: hostname, whoami, id, uname, ip, ipconfig, netsh.

use std::fmt::Write as _;
use std::sync::Arc;

use super::context::CommandContext;
use super::session::Session;
use super::support::{WinUser, out};
use super::{Call, Reply};
use crate::node::runtime::ExecOutput;

// ---------------------------------------------------------------------------------------------
// Identity: hostname, whoami, id, uname, ipconfig
// ---------------------------------------------------------------------------------------------

pub(super) fn hostname(s: &Arc<Session>, call: Call) -> Reply {
    let name = s.ctx.hostname();
    let first = call.args().first().map(String::as_str);
    let o = match (s.windows(), first) {
        (true, None) => ExecOutput::ok(format!("{name}\r\n")),
        (true, Some(_)) => out(
            "",
            "sethostname: Use the Network Control Panel Applet to set hostname.\r\n",
            1,
        ),
        (false, None | Some("-s" | "-f")) => ExecOutput::ok(format!("{name}\n")),
        (false, Some("-i")) => ExecOutput::ok(format!("{}\n", s.ctx.pod_ip())),
        (false, Some(_)) => out("", "hostname: sethostname: Operation not permitted\n", 1),
    };
    o.into()
}

pub(super) fn whoami_linux(s: &Arc<Session>, _call: Call) -> Reply {
    match s.ctx.linux_ids().0 {
        0 => ExecOutput::ok("root\n"),
        uid => out("", format!("whoami: unknown uid {uid}\n"), 1),
    }
    .into()
}

pub(super) fn whoami_windows(s: &Arc<Session>, _call: Call) -> Reply {
    let user = WinUser::parse(&s.ctx.windows_user(), &s.ctx.computer_name());
    ExecOutput::ok(format!("{}\r\n", user.whoami())).into()
}

pub(super) fn id(s: &Arc<Session>, call: Call) -> Reply {
    let (uid, gid, groups) = s.ctx.linux_ids();
    let named = |n: &i64| if *n == 0 { format!("{n}(root)") } else { n.to_string() };
    let flags: String = call.args().iter().filter_map(|a| a.strip_prefix('-')).collect();
    let o = if flags.contains('n') && (flags.contains('u') && uid != 0 || flags.contains('g') && gid != 0) {
        out(
            "",
            format!("id: unknown ID {}\n", if flags.contains('u') { uid } else { gid }),
            1,
        )
    } else if flags.contains('n') {
        ExecOutput::ok("root\n")
    } else if flags.contains('u') {
        ExecOutput::ok(format!("{uid}\n"))
    } else if flags.contains('G') {
        let list: Vec<String> = groups.iter().map(i64::to_string).collect();
        ExecOutput::ok(format!("{}\n", list.join(" ")))
    } else if flags.contains('g') {
        ExecOutput::ok(format!("{gid}\n"))
    } else {
        let list: Vec<String> = groups.iter().map(named).collect();
        ExecOutput::ok(format!(
            "uid={} gid={} groups={}\n",
            named(&uid),
            named(&gid),
            list.join(",")
        ))
    };
    o.into()
}

pub(super) fn uname(s: &Arc<Session>, call: Call) -> Reply {
    let flags: String = call.args().iter().filter_map(|a| a.strip_prefix('-')).collect();
    let machine = match s.ctx.node.as_ref().map(|n| n.arch.as_str()) {
        Some("arm64") => "aarch64",
        _ => "x86_64",
    };
    let hostname = s.ctx.hostname();
    let kernel = s.kernel();
    let fields = [
        ('s', "Linux"),
        ('n', hostname.as_str()),
        ('r', kernel.as_str()),
        ('v', "#1 SMP"),
        ('m', machine),
        ('o', "GNU/Linux"),
    ];
    let picked: Vec<&str> = fields
        .iter()
        .filter(|(c, _)| flags.contains('a') || flags.contains(*c) || (flags.is_empty() && *c == 's'))
        .map(|(_, v)| *v)
        .collect();
    ExecOutput::ok(format!("{}\n", picked.join(" "))).into()
}

/// One network interface of a Linux container's network namespace, for `ip`.
pub(super) struct Iface {
    pub(super) index: u32,
    pub(super) name: String,
    /// The peer's index of a veth (`eth0@if12`), if any.
    pub(super) peer: Option<u32>,
    pub(super) mac: String,
    /// (address, prefix length)
    pub(super) v4: Option<(std::net::Ipv4Addr, u8)>,
    pub(super) loopback: bool,
}

/// The interfaces a Linux container sees: `lo` and the pod's veth `eth0` on its node's pod
/// network; on the host network the node's own `eth0` and the CNI bridge `cni0` (the pod
/// CIDR's gateway) (NET-HOSTNETWORK: a hostNetwork pod shares the node's interfaces).
pub(super) fn linux_interfaces(ctx: &CommandContext) -> Vec<Iface> {
    let mac = |ip: std::net::Ipv4Addr, lead: u8| {
        let [a, b, c, d] = ip.octets();
        format!("{lead:02x}:42:{a:02x}:{b:02x}:{c:02x}:{d:02x}")
    };
    let mut list = vec![Iface {
        index: 1,
        name: "lo".into(),
        peer: None,
        mac: "00:00:00:00:00:00".into(),
        v4: Some((std::net::Ipv4Addr::LOCALHOST, 8)),
        loopback: true,
    }];
    let own = ctx.pod_ip().parse::<std::net::Ipv4Addr>().ok();
    if ctx.host_network() {
        if let Some(node) = &ctx.node {
            list.push(Iface {
                index: 2,
                name: "eth0".into(),
                peer: None,
                mac: mac(node.ip, 0x06),
                v4: Some((node.ip, 24)),
                loopback: false,
            });
            let gateway = node
                .pod_cidr
                .split('/')
                .next()
                .and_then(|net| net.parse::<std::net::Ipv4Addr>().ok())
                .map(|net| {
                    let [a, b, c, _] = net.octets();
                    std::net::Ipv4Addr::new(a, b, c, 1)
                });
            if let Some(gw) = gateway {
                list.push(Iface {
                    index: 3,
                    name: "cni0".into(),
                    peer: None,
                    mac: mac(gw, 0x0a),
                    v4: Some((gw, 24)),
                    loopback: false,
                });
            }
        }
    } else if let Some(ip) = own {
        let peer = 4 + u32::from(ip.octets()[3]);
        list.push(Iface {
            index: 2,
            name: "eth0".into(),
            peer: Some(peer),
            mac: mac(ip, 0x02),
            v4: Some((ip, 24)),
            loopback: false,
        });
    }
    list
}

/// `ip [-o] [-4|-6] [-br] addr|link|route [show [dev IF]]` (iproute2 in agnhost, the busybox
/// applet elsewhere): the container's interfaces, addresses and routes.
pub(super) fn ip(s: &Arc<Session>, call: Call) -> Reply {
    let mut oneline = false;
    let mut brief = false;
    let mut v6_only = false;
    let mut words: Vec<&str> = Vec::new();
    let mut args = call.args().iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "-oneline" => oneline = true,
            "-br" | "-brief" => brief = true,
            "-4" => v6_only = false,
            "-6" => v6_only = true,
            "-f" | "-family" => v6_only = args.next().is_some_and(|f| f == "inet6"),
            x if x.starts_with('-') => {}
            x => words.push(x),
        }
    }
    let object = words.first().copied().unwrap_or("");
    let dev = words
        .iter()
        .position(|w| *w == "dev")
        .and_then(|i| words.get(i + 1))
        .copied();
    let ifaces: Vec<Iface> = linux_interfaces(&s.ctx)
        .into_iter()
        .filter(|i| dev.is_none_or(|d| d == i.name))
        .collect();
    if let Some(d) = dev
        && ifaces.is_empty()
    {
        return out("", format!("Device \"{d}\" does not exist.\n"), 1).into();
    }
    let shown_name = |i: &Iface| match i.peer {
        Some(p) => format!("{}@if{p}", i.name),
        None => i.name.clone(),
    };
    let flags = |i: &Iface| {
        if i.loopback {
            "<LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000".to_string()
        } else {
            "<BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP group default".to_string()
        }
    };
    let link_line = |i: &Iface| {
        if i.loopback {
            "link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00".to_string()
        } else {
            let netns = if i.peer.is_some() { " link-netnsid 0" } else { "" };
            format!("link/ether {} brd ff:ff:ff:ff:ff:ff{netns}", i.mac)
        }
    };
    let inet = |i: &Iface| -> Option<String> {
        let (ip, len) = i.v4?;
        let scope = if i.loopback { "host" } else { "global" };
        let brd = if i.loopback {
            String::new()
        } else {
            let [a, b, c, _] = ip.octets();
            format!(" brd {a}.{b}.{c}.255")
        };
        Some(format!("inet {ip}/{len}{brd} scope {scope} {}", i.name))
    };
    let mut text = String::new();
    match object {
        "a" | "ad" | "addr" | "address" => {
            for i in &ifaces {
                if brief {
                    let state = if i.loopback { "UNKNOWN" } else { "UP" };
                    let addr = i.v4.map(|(ip, len)| format!("{ip}/{len}")).unwrap_or_default();
                    let _ = writeln!(text, "{:<16} {state:<14} {addr} ", shown_name(i));
                } else if oneline {
                    if let Some(line) = inet(i).filter(|_| !v6_only) {
                        let _ = writeln!(
                            text,
                            "{}: {}    {line}\\       valid_lft forever preferred_lft forever",
                            i.index, i.name
                        );
                    }
                } else {
                    let _ = writeln!(text, "{}: {}: {}", i.index, shown_name(i), flags(i));
                    let _ = writeln!(text, "    {}", link_line(i));
                    if let Some(line) = inet(i).filter(|_| !v6_only) {
                        let _ = writeln!(text, "    {line}\n       valid_lft forever preferred_lft forever");
                    }
                }
            }
        }
        "l" | "link" => {
            for i in &ifaces {
                if oneline {
                    let _ = writeln!(
                        text,
                        "{}: {}: {}\\    {}",
                        i.index,
                        shown_name(i),
                        flags(i),
                        link_line(i)
                    );
                } else {
                    let _ = writeln!(
                        text,
                        "{}: {}: {}\n    {}",
                        i.index,
                        shown_name(i),
                        flags(i),
                        link_line(i)
                    );
                }
            }
        }
        "r" | "ro" | "route" => {
            for i in ifaces.iter().filter(|i| !i.loopback) {
                if let Some((ip, _)) = i.v4 {
                    let [a, b, c, _] = ip.octets();
                    if i.name == "eth0" {
                        let _ = writeln!(text, "default via {a}.{b}.{c}.1 dev eth0 ");
                    }
                    let _ = writeln!(
                        text,
                        "{a}.{b}.{c}.0/24 dev {} proto kernel scope link src {ip} ",
                        i.name
                    );
                }
            }
        }
        "" => {
            return out(
                "",
                "Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }\nwhere  OBJECT := { address | link | route | ... }\n",
                255,
            )
            .into();
        }
        other => {
            return out("", format!("Object \"{other}\" is unknown, try \"ip help\".\n"), 255).into();
        }
    }
    ExecOutput::ok(text).into()
}

/// `ipconfig [/all]`: the pod's address on its node's pod network (the node's own address for
/// HostProcess containers) and the container's DNS configuration.
pub(super) fn ipconfig(s: &Arc<Session>, call: Call) -> Reply {
    let all = call.args().iter().any(|a| a.eq_ignore_ascii_case("/all"));
    let dns = s.ctx.dns();
    let ip = s.ctx.pod_ip();
    let gateway = match ip.rsplit_once('.') {
        Some((net, _)) => format!("{net}.1"),
        None => String::new(),
    };
    let adapter = if s.ctx.host_process {
        "Ethernet".to_string()
    } else {
        format!("{}_cbr0", s.ctx.container_id().get(..12).unwrap_or(""))
    };
    let continued = |list: &[String]| list.join("\r\n                                       ");
    let mut text = String::from("\r\nWindows IP Configuration\r\n\r\n");
    if all {
        let _ = write!(
            text,
            "   Host Name . . . . . . . . . . . . : {}\r\n   Primary Dns Suffix  . . . . . . . : \r\n   Node Type . \
            . . . . . . . . . . . : Hybrid\r\n   IP Routing Enabled. . . . . . . . : No\r\n   WINS Proxy Enabled. . \
            . . . . . . : No\r\n",
            s.ctx.hostname()
        );
        if !dns.searches.is_empty() {
            let _ = write!(
                text,
                "   DNS Suffix Search List. . . . . . : {}\r\n",
                continued(&dns.searches)
            );
        }
        text.push_str("\r\n");
    }
    let _ = write!(
        text,
        "Ethernet adapter vEthernet ({adapter}):\r\n\r\n   Connection-specific DNS Suffix  . : {}\r\n",
        dns.searches.first().map(String::as_str).unwrap_or("")
    );
    if all {
        text.push_str(
            "   Description . . . . . . . . . . . : Hyper-V Virtual Ethernet Adapter\r\n   DHCP Enabled. . \
            . . . . . . . . . : No\r\n   Autoconfiguration Enabled . . . . : Yes\r\n",
        );
        let _ = write!(text, "   IPv4 Address. . . . . . . . . . . : {ip}(Preferred)\r\n");
    } else {
        let _ = write!(text, "   IPv4 Address. . . . . . . . . . . : {ip}\r\n");
    }
    let _ = write!(
        text,
        "   Subnet Mask . . . . . . . . . . . : 255.255.255.0\r\n   Default Gateway . . . . . . . . . : {gateway}\r\n"
    );
    if all {
        let _ = write!(
            text,
            "   DNS Servers . . . . . . . . . . . : {}\r\n   NetBIOS over Tcpip. . . . . . . . : Disabled\r\n",
            continued(&dns.nameservers)
        );
    }
    ExecOutput::ok(text).into()
}

/// `netsh int[erface] ipv4|ipv6 show dynamicport[range] tcp|udp` (also `protocol=tcp`): the
/// dynamic port range, Windows' default on every node (its exhaustion is about ports in use,
/// not the range). Any other netsh command is one it does not know.
pub(super) fn netsh(_s: &Arc<Session>, call: Call) -> Reply {
    let words: Vec<String> = call.args().iter().map(|a| a.to_ascii_lowercase()).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let protocol = match words.as_slice() {
        [
            "int" | "interface",
            "ipv4" | "ipv6" | "ip",
            "show",
            "dynamicport" | "dynamicportrange",
            p,
        ] => p.strip_prefix("protocol=").unwrap_or(p),
        _ => "",
    };
    let o = match protocol {
        "tcp" | "udp" => ExecOutput::ok(format!(
            "\r\nProtocol {protocol} Dynamic Port Range\r\n---------------------------------\r\nStart Port      : \
             {}\r\nNumber of Ports : {}\r\n\r\n",
            crate::node::host::DYNAMIC_PORT_START,
            crate::node::host::DYNAMIC_PORTS
        )),
        _ => out(
            format!("The following command was not found: {}.\r\n", call.args().join(" ")),
            "",
            1,
        ),
    };
    o.into()
}

/// The Windows kube-proxy binary on the node, run from its host (a HostProcess container):
/// `--version` prints `Kubernetes v1.32.3` (component-base's version flag). The simulated
/// binary answers nothing else; starting a second proxier from a probe is not modelled.
pub(super) fn kube_proxy(s: &Arc<Session>, call: Call) -> Reply {
    let Some(node) = s.ctx.node.as_ref() else {
        return out("", "kube-proxy: no node\r\n", 1).into();
    };
    let o = match call.args().first().map(String::as_str) {
        Some("--version" | "--version=true") => {
            ExecOutput::ok(format!("{}\r\n", crate::node::host::kube_proxy_version_line(node)))
        }
        _ => out(
            "",
            format!(
                "kube-proxy: the simulated binary answers --version only (got {:?})\r\n",
                call.args()
            ),
            1,
        ),
    };
    o.into()
}

/// `hnsdiag list networks` on the host: the built-in HNS diagnostic tool, there whatever the
/// HostNetworkingService module (real-clusters.md §4; Microsoft's Kubernetes troubleshooting
/// guide: `hnsdiag list networks`, `hnsdiag list endpoints`). Its plain-text table has the
/// networks' names and ids only, no type (as pasted from nodes in
/// kubernetes-sigs/sig-windows-tools#84 and #168: `Name             ID`, then one row per network);
/// the pod network's HNS network ([`crate::node::host::pod_network`]) is its one row, none when
/// it does not exist. Other sub-commands print the usage line and fail.
pub(super) fn hnsdiag(s: &Arc<Session>, call: Call) -> Reply {
    let words: Vec<String> = call.args().iter().map(|a| a.to_ascii_lowercase()).collect();
    let o = match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["list", "networks"] => {
            let mut text = format!("{:<16} ID\r\n", "Name");
            let network = s.ctx.node.as_ref().and_then(crate::node::host::pod_network);
            if let Some(n) = network {
                text.push_str(&format!("{:<16} {}\r\n", n.name, n.id));
            }
            ExecOutput::ok(text)
        }
        _ => out(
            "Usage: hnsdiag list <networks|endpoints|policies|namespaces|all> [-d]\r\n",
            "",
            1,
        ),
    };
    o.into()
}
