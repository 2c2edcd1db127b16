//! The proxy between the run and the API server, chosen as kubectl (client-go) chooses it: a
//! kubeconfig cluster's `proxy-url` always; otherwise `HTTPS_PROXY`/`HTTP_PROXY` by the server's
//! scheme unless `NO_PROXY` or loopback exempts the server.
//!
//! Rules, from upstream:
//! - client-go `rest.Config.Proxy` is set from the cluster's `proxy-url`
//!   (`tools/clientcmd/client_config.go`), and a transport with its own proxy function never
//!   consults the environment (`transport/cache.go`); without one it uses
//!   `utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)`;
//! - `ProxyFromEnvironment` is `golang.org/x/net/http/httpproxy` (`proxy.go`): each variable is
//!   read upper case first, then lower case (`getEnvAny`); a value without a scheme means
//!   `http://`; `localhost` and loopback addresses are never proxied; `NO_PROXY` is a comma
//!   list of `*`, IPs, CIDRs, `[IPv6]:port`, and names with an optional port, where `foo.com`
//!   matches itself and its subdomains, `.foo.com` and `*.foo.com` only the subdomains; empty
//!   entries are skipped.
//!
//! The runner's own HTTP client for outside probes never uses a proxy: it probes node
//! addresses directly, as an outside client of a NodePort would.

use std::net::IpAddr;

/// The proxy settings of the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, either case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyEnv {
    pub https: Option<(String, &'static str)>,
    pub http: Option<(String, &'static str)>,
    pub no_proxy: Option<String>,
}

impl ProxyEnv {
    /// Reads the variables through `env` (upper case wins over lower case, empty is unset).
    pub fn read(env: &dyn Fn(&str) -> Option<String>) -> Self {
        let any = |names: [&'static str; 2]| {
            names.into_iter().find_map(|n| {
                env(n)
                    .filter(|v| !v.trim().is_empty())
                    .map(|v| (v.trim().to_string(), n))
            })
        };
        Self {
            https: any(["HTTPS_PROXY", "https_proxy"]),
            http: any(["HTTP_PROXY", "http_proxy"]),
            no_proxy: any(["NO_PROXY", "no_proxy"]).map(|(v, _)| v),
        }
    }

    /// This process's environment.
    pub fn from_process() -> Self {
        Self::read(&|name| std::env::var(name).ok())
    }
}

/// The proxy the API client goes through, and where it was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenProxy {
    pub url: http::Uri,
    /// `the kubeconfig's proxy-url` or the variable's name.
    pub from: String,
}

impl std::fmt::Display for ChosenProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (from {})", shown(&self.url), self.from)
    }
}

/// The URL without its credentials, for messages.
fn shown(url: &http::Uri) -> String {
    let authority = url.authority().map(|a| a.as_str()).unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{}://{host}", url.scheme_str().unwrap_or("http"))
}

/// A proxy setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{from} {value:?}: {why}")]
pub struct ProxyError {
    pub from: String,
    pub value: String,
    pub why: String,
}

/// The proxy for requests to `server`: the kubeconfig cluster's `proxy_url` when set, else
/// the environment's by the server's scheme unless `NO_PROXY` or loopback exempts the server.
pub fn choose(
    server: &http::Uri,
    kubeconfig_proxy: Option<&str>,
    env: &ProxyEnv,
) -> Result<Option<ChosenProxy>, ProxyError> {
    if let Some(p) = kubeconfig_proxy.map(str::trim).filter(|p| !p.is_empty()) {
        return parse(p, "the kubeconfig's proxy-url").map(Some);
    }
    let configured = match server.scheme_str() {
        Some("http") => env.http.as_ref(),
        _ => env.https.as_ref(),
    };
    let Some((value, name)) = configured else {
        return Ok(None);
    };
    let host = server
        .host()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = server
        .port_u16()
        .unwrap_or(if server.scheme_str() == Some("http") { 80 } else { 443 });
    if !use_proxy(host, port, env.no_proxy.as_deref().unwrap_or("")) {
        return Ok(None);
    }
    parse(value, name).map(Some)
}

/// Parses a proxy address as Go's `httpproxy.parseProxy`: without a scheme it is `http://`;
/// only http, https and socks5 proxies can carry the API's requests.
fn parse(value: &str, from: &str) -> Result<ChosenProxy, ProxyError> {
    let err = |why: &str| ProxyError {
        from: from.to_string(),
        value: value.to_string(),
        why: why.to_string(),
    };
    let with_scheme = if value.contains("://") {
        value.to_string()
    } else {
        format!("http://{value}")
    };
    let url: http::Uri = with_scheme
        .parse()
        .map_err(|_| err("not a proxy address (expected http://host:port)"))?;
    if url.host().is_none_or(str::is_empty) {
        return Err(err("no host in the proxy address"));
    }
    match url.scheme_str() {
        Some("http" | "https" | "socks5") => Ok(ChosenProxy {
            url,
            from: from.to_string(),
        }),
        _ => Err(err("only http, https and socks5 proxies are supported (as kubectl)")),
    }
}

/// Whether a request to `host:port` goes through the proxy (`httpproxy.config.useProxy`).
pub fn use_proxy(host: &str, port: u16, no_proxy: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    if host == "localhost" {
        return false;
    }
    let ip = host.parse::<IpAddr>().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    !no_proxy
        .split(',')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| !e.is_empty())
        .any(|entry| Exemption::parse(&entry).is_some_and(|e| e.covers(&host, ip, port)))
}

/// One `NO_PROXY` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Exemption {
    All,
    Cidr(IpAddr, u8),
    Ip(IpAddr, Option<u16>),
    /// `.suffix` (always with its leading dot); `also_itself` for entries written without one.
    Domain {
        suffix: String,
        also_itself: bool,
        port: Option<u16>,
    },
}

impl Exemption {
    /// Parses an entry (lower case, trimmed, not empty); None for a malformed one, which
    /// `httpproxy` ignores too.
    fn parse(entry: &str) -> Option<Self> {
        if entry == "*" {
            return Some(Self::All);
        }
        if let Some((addr, bits)) = entry.split_once('/') {
            let ip: IpAddr = addr.parse().ok()?;
            let bits: u8 = bits.parse().ok()?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            return (bits <= max).then_some(Self::Cidr(ip, bits));
        }
        let (host, port) = split_port(entry);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return None;
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Some(Self::Ip(ip, port));
        }
        let bare = host.strip_prefix('*').unwrap_or(host);
        let (suffix, also_itself) = match bare.strip_prefix('.') {
            Some(_) => (bare.to_string(), false),
            None => (format!(".{bare}"), true),
        };
        (suffix.len() > 1).then_some(Self::Domain {
            suffix,
            also_itself,
            port,
        })
    }

    fn covers(&self, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        match (self, ip) {
            (Self::All, _) => true,
            (Self::Cidr(net, bits), Some(ip)) => in_cidr(ip, *net, *bits),
            (Self::Ip(e, p), Some(ip)) => *e == ip && port_ok(p),
            (
                Self::Domain {
                    suffix,
                    also_itself,
                    port: p,
                },
                _,
            ) => (host.ends_with(suffix.as_str()) || (*also_itself && host == &suffix[1..])) && port_ok(p),
            _ => false,
        }
    }
}

/// `host:port`, `[v6]:port` or a bare host (an IPv6 address without brackets has no port).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((host, tail)) = rest.split_once(']') {
            return (host, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(p) => (host, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, b, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32u32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128u32),
        _ => return false,
    };
    let bits = u32::from(bits);
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    (a >> shift) == (b >> shift)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    // Loopback is never proxied, whatever NO_PROXY says.
    #[case::localhost("localhost", 6443, "", false)]
    #[case::loopback_v4("127.0.0.1", 6443, "", false)]
    #[case::loopback_v4_other("127.8.9.1", 443, "", false)]
    #[case::loopback_v6("::1", 443, "", false)]
    #[case::nothing_exempt("api.corp.example", 443, "", true)]
    #[case::wildcard("api.corp.example", 443, "*", false)]
    // Names: `foo.com` matches itself and subdomains; `.foo.com` and `*.foo.com` only subdomains.
    #[case::exact_name("api.corp.example", 443, "api.corp.example", false)]
    #[case::parent_name("api.corp.example", 443, "corp.example", false)]
    #[case::not_a_label_boundary("api.xcorp.example", 443, "corp.example", true)]
    #[case::dot_suffix("api.corp.example", 443, ".corp.example", false)]
    #[case::dot_suffix_not_itself("corp.example", 443, ".corp.example", true)]
    #[case::star_suffix("api.corp.example", 443, "*.corp.example", false)]
    #[case::star_suffix_not_itself("corp.example", 443, "*.corp.example", true)]
    #[case::name_case_insensitive("API.Corp.Example", 443, "corp.EXAMPLE", false)]
    #[case::name_with_port("api.corp.example", 6443, "api.corp.example:6443", false)]
    #[case::name_with_other_port("api.corp.example", 443, "api.corp.example:6443", true)]
    // IPs and CIDRs.
    #[case::ip("10.1.2.3", 443, "10.1.2.3", false)]
    #[case::other_ip("10.1.2.4", 443, "10.1.2.3", true)]
    #[case::ip_with_port("10.1.2.3", 6443, "10.1.2.3:6443", false)]
    #[case::ip_with_other_port("10.1.2.3", 443, "10.1.2.3:6443", true)]
    #[case::cidr("10.1.2.3", 443, "10.0.0.0/8", false)]
    #[case::outside_cidr("11.1.2.3", 443, "10.0.0.0/8", true)]
    #[case::cidr_v6("fd00::5", 443, "fd00::/8", false)]
    #[case::ipv6_exact("fd00::5", 443, "fd00::5", false)]
    #[case::ipv6_bracket_port("fd00::5", 6443, "[fd00::5]:6443", false)]
    #[case::cidr_does_not_match_names("api.corp.example", 443, "10.0.0.0/8", true)]
    // Lists: spaces, empty entries and malformed entries are skipped, as httpproxy does.
    #[case::list("api.corp.example", 443, "localhost, 10.0.0.0/8 ,,.corp.example,", false)]
    #[case::malformed_skipped("api.corp.example", 443, "10.0.0.0/99,:80,api.corp.example", false)]
    fn no_proxy_decides_as_client_go(
        #[case] host: &str,
        #[case] port: u16,
        #[case] no_proxy: &str,
        #[case] proxied: bool,
    ) {
        assert_eq!(
            use_proxy(host, port, no_proxy),
            proxied,
            "{host}:{port} with NO_PROXY={no_proxy:?}"
        );
    }

    fn env(vars: &[(&str, &str)]) -> ProxyEnv {
        let vars: std::collections::BTreeMap<String, String> =
            vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProxyEnv::read(&move |name| vars.get(name).cloned())
    }

    fn uri(s: &str) -> http::Uri {
        s.parse().expect("uri")
    }

    #[rstest]
    #[case::upper(&[("HTTPS_PROXY", "http://proxy.corp:3128")], "https://api.corp:6443", Some("http://proxy.corp:3128/ (from HTTPS_PROXY)"))]
    #[case::lower(&[("https_proxy", "proxy.corp:3128")], "https://api.corp:6443", Some("http://proxy.corp:3128/ (from https_proxy)"))]
    #[case::upper_wins(&[("HTTPS_PROXY", "http://a:1"), ("https_proxy", "http://b:2")], "https://api.corp", Some("http://a:1/ (from HTTPS_PROXY)"))]
    #[case::empty_upper_falls_back(&[("HTTPS_PROXY", ""), ("https_proxy", "http://b:2")], "https://api.corp", Some("http://b:2/ (from https_proxy)"))]
    #[case::http_proxy_not_for_https(&[("HTTP_PROXY", "http://a:1")], "https://api.corp", None)]
    #[case::http_proxy_for_http(&[("HTTP_PROXY", "http://a:1")], "http://api.corp", Some("http://a:1/ (from HTTP_PROXY)"))]
    #[case::loopback_server(&[("HTTPS_PROXY", "http://127.0.0.1:9")], "https://127.0.0.1:41234", None)]
    #[case::no_proxy_names_server(&[("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", "api.corp")], "https://api.corp:6443", None)]
    #[case::no_proxy_lower(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", ".corp")], "https://api.corp:6443", None)]
    #[case::socks(&[("HTTPS_PROXY", "socks5://p:1080")], "https://api.corp", Some("socks5://p:1080/ (from HTTPS_PROXY)"))]
    fn the_environment_chooses_by_scheme_and_exemptions(
        #[case] vars: &[(&str, &str)],
        #[case] server: &str,
        #[case] expected: Option<&str>,
    ) {
        let chosen = choose(&uri(server), None, &env(vars)).expect("valid");
        assert_eq!(
            chosen.map(|c| format!("{} (from {})", c.url, c.from)).as_deref(),
            expected
        );
    }

    #[test]
    fn a_kubeconfig_proxy_url_is_always_used() {
        let e = env(&[("HTTPS_PROXY", "http://env:1"), ("NO_PROXY", "*")]);
        let chosen = choose(
            &uri("https://127.0.0.1:6443"),
            Some("http://user:secret@corp-proxy:3128"),
            &e,
        )
        .expect("valid")
        .expect("a proxy");
        assert_eq!(chosen.from, "the kubeconfig's proxy-url");
        // Messages name the proxy without its credentials.
        assert_eq!(
            chosen.to_string(),
            "http://corp-proxy:3128 (from the kubeconfig's proxy-url)"
        );
    }

    #[rstest]
    #[case::scheme("ftp://p:21", "only http, https and socks5")]
    #[case::garbage("http://exa mple", "not a proxy address")]
    fn a_bad_proxy_is_named(#[case] value: &str, #[case] why: &str) {
        let err = choose(&uri("https://api.corp"), Some(value), &ProxyEnv::default()).expect_err("bad proxy");
        assert!(err.to_string().contains(why), "{err}");
        assert!(err.to_string().contains("proxy-url"), "{err}");
    }
}
