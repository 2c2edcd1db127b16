//! The seam between the network and what runs on nodes: a client's view of the network — name
//! lookups, connections, HTTP requests, UDP exchanges and pings — as the [`Wire`] trait that
//! exec'd tools (`nettools` on the node side) call and the fabric answers.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::network::fabric::{Failure, Proto};

/// The answer to a name lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Found {
        /// The fully qualified name that answered.
        fqdn: String,
        addrs: Vec<Ipv4Addr>,
        /// The alias (CNAME) target, for ExternalName services.
        alias: Option<String>,
    },
    /// The server answered NXDOMAIN for every candidate name.
    NotFound,
    /// No DNS server answered (`server` is the one asked first).
    Timeout { server: String },
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    pub status: u16,
    pub body: String,
}

/// What the network answers a client: implemented by the fabric's [`crate::network::apps::Client`]
/// and by [`Offline`] (a container whose packets all get lost).
pub trait Wire {
    /// The resolver's first nameserver, as tools print it.
    fn dns_server(&self) -> String;
    /// Resolves `name` with the container's resolver (search list and OS rules), or asks
    /// `server` directly (`nslookup NAME SERVER`, `Resolve-DnsName -Server`).
    fn resolve(&self, name: &str, server: Option<&str>) -> Lookup;
    /// Opens a TCP connection, or sends a UDP datagram (`nc -u`), to `ip:port`.
    fn connect(&self, ip: Ipv4Addr, port: u16, proto: Proto) -> Result<(), Failure>;
    /// An HTTP GET of `target` (path and query, e.g. `/hostname`) on `ip:port`.
    fn http_get(&self, ip: Ipv4Addr, port: u16, target: &str) -> Result<HttpReply, Failure>;
    /// One UDP request and its reply (`hostname`, `echo msg`, `clientip` to a netexec).
    fn udp(&self, ip: Ipv4Addr, port: u16, payload: &str) -> Result<String, Failure>;
    /// One ICMP echo request.
    fn ping(&self, ip: Ipv4Addr) -> Result<(), Failure>;
    /// Where the client's IPv6 traffic to `ip` goes: the IPv4 address of the same pod or Service
    /// (dual-stack clusters), whose flow then answers; or how it fails. Without an IPv6 route
    /// (single-stack clusters, the default) the OS says "Network is unreachable".
    fn over_ipv6(&self, _ip: Ipv6Addr) -> Result<Ipv4Addr, Failure> {
        Err(Failure::Other("Network is unreachable".into()))
    }
}

/// A network where nothing answers: every lookup and connection times out.
#[derive(Debug, Clone)]
pub struct Offline {
    pub dns_server: String,
}

impl Wire for Offline {
    fn dns_server(&self) -> String {
        self.dns_server.clone()
    }
    fn resolve(&self, _name: &str, server: Option<&str>) -> Lookup {
        Lookup::Timeout {
            server: server.map_or_else(|| self.dns_server.clone(), str::to_string),
        }
    }
    fn connect(&self, _ip: Ipv4Addr, _port: u16, _proto: Proto) -> Result<(), Failure> {
        Err(Failure::Timeout)
    }
    fn http_get(&self, _ip: Ipv4Addr, _port: u16, _target: &str) -> Result<HttpReply, Failure> {
        Err(Failure::Timeout)
    }
    fn udp(&self, _ip: Ipv4Addr, _port: u16, _payload: &str) -> Result<String, Failure> {
        Err(Failure::Timeout)
    }
    fn ping(&self, _ip: Ipv4Addr) -> Result<(), Failure> {
        Err(Failure::NoReply)
    }
}
