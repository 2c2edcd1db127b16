//! Whether pods reach the world outside the cluster: the outside targets the outbound checks aim
//! at (`--outside-address`, `--outside-name`), what the detection's attempts (TCP 443 to the
//! address and the name, TCP 53 to the address, from a client pod of each OS: made by
//! [`crate::probes::connect::detect_egress`]) conclude, and what a cell that needs it is told
//! when nothing got out.
//!
//! Firewalls that allow only web traffic out (Azure Firewall's application rules, corporate
//! egress proxies; real-clusters.md §7 "Egress probe on port 53 only") answer on 443 and drop 53:
//! detecting on one port alone would read "no egress" and leave every outbound cell quietly
//! `not-applicable` — and a cluster-wide egress fault would pass the gate. So every attempt is
//! made, the first that works names the port the outbound checks use, and egress that no
//! attempt finds is unknown (the cells `indeterminate`, naming the attempts) unless the user
//! said `--egress=false`.

use mixcheck_reports::{Fact, Os};

/// The outside address by default: a public resolver that answers TCP 53 and HTTPS on 443.
pub const DEFAULT_ADDRESS: &str = "1.1.1.1";
/// The outside name by default (the outbound checks' web site).
pub const DEFAULT_NAME: &str = "www.microsoft.com";

/// The targets outside the cluster the outbound checks aim at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outside {
    /// An address (`--outside-address`): tried on TCP 443 and 53, and pinged.
    pub address: String,
    /// A name (`--outside-name`): tried on TCP 443.
    pub name: String,
}

impl Default for Outside {
    fn default() -> Self {
        Self {
            address: DEFAULT_ADDRESS.to_string(),
            name: DEFAULT_NAME.to_string(),
        }
    }
}

/// The ports tried on the outside address, in the order a working one is preferred.
pub const ADDRESS_PORTS: [u16; 2] = [443, 53];
/// The port tried on the outside name.
pub const NAME_PORT: u16 = 443;

/// What the run found out about egress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Egress {
    /// Whether pods reach outside, and how that was found (or said).
    pub fact: Fact<bool>,
    /// False when no attempt got out and the user did not say: whether the cluster has egress is
    /// then unknown (a firewall that allows other ports, a target that is down, a broken egress).
    pub determined: bool,
    /// The port of the outside address the outbound checks use (the first that worked).
    pub address_port: u16,
}

impl Egress {
    /// As the user said it (`--egress`).
    pub fn stated(value: bool) -> Self {
        Self {
            fact: Fact::new(value, format!("--egress={value}")),
            determined: true,
            address_port: ADDRESS_PORTS[0],
        }
    }

    /// Why a cell that needs egress cannot be judged (None when egress is known).
    pub fn unknown_because(&self) -> Option<String> {
        (!self.determined).then(|| {
            format!(
                "whether pods reach outside the cluster: {}; say --egress=false if pods have no internet access, or name reachable targets with --outside-address/--outside-name",
                self.fact.source
            )
        })
    }
}

/// One target tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

impl Target {
    fn shown(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// One attempt's outcome: (node, its OS, the pod tried from, the target, whether it got out).
pub type Attempt = (String, Os, String, Target, bool);

/// The targets in the order a working one is preferred.
pub fn targets(outside: &Outside) -> Vec<Target> {
    let mut out: Vec<Target> = ADDRESS_PORTS
        .iter()
        .map(|&port| Target {
            host: outside.address.clone(),
            port,
        })
        .collect();
    out.push(Target {
        host: outside.name.clone(),
        port: NAME_PORT,
    });
    out
}

/// What the attempts found.
pub fn conclude(attempts: &[Attempt], outside: &Outside) -> Egress {
    if attempts.is_empty() {
        return Egress {
            fact: Fact::new(
                true,
                "assumed: no client pod could try an outside address (say --egress=false if pods cannot reach the internet)",
            ),
            determined: true,
            address_port: ADDRESS_PORTS[0],
        };
    }
    // The first target (in preference order) any pod reached.
    for target in targets(outside) {
        if let Some((node, os, pod, _, _)) = attempts.iter().find(|(_, _, _, t, reached)| *reached && *t == target) {
            let address_port = ADDRESS_PORTS
                .into_iter()
                .find(|p| {
                    attempts
                        .iter()
                        .any(|(_, _, _, t, reached)| *reached && t.host == outside.address && t.port == *p)
                })
                .unwrap_or(ADDRESS_PORTS[0]);
            return Egress {
                fact: Fact::new(
                    true,
                    format!("detected: pod {pod} on {node} ({os}) reached {}", target.shown()),
                ),
                determined: true,
                address_port,
            };
        }
    }
    let tried: Vec<String> = targets(outside).iter().map(Target::shown).collect();
    let mut from: Vec<String> = attempts
        .iter()
        .map(|(node, os, pod, _, _)| format!("{pod} on {node} ({os})"))
        .collect();
    from.dedup();
    Egress {
        fact: Fact::new(
            false,
            format!(
                "no pod reached {} within its settle window (tried from {})",
                tried.join(", "),
                from.join(", ")
            ),
        ),
        determined: false,
        address_port: ADDRESS_PORTS[0],
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn attempt(os: Os, host: &str, port: u16, reached: bool) -> Attempt {
        let node = if os == Os::Linux { "l1" } else { "w1" };
        (
            node.to_string(),
            os,
            format!("cli-{node}"),
            Target {
                host: host.to_string(),
                port,
            },
            reached,
        )
    }

    /// Egress is found on whatever port the firewall allows, and the outbound checks use it;
    /// nothing reached leaves it unknown, naming every attempt; no pod to try from assumes it.
    #[rstest]
    #[case::all_open(&[(443, true), (53, true), (0, true)], Some(true), 443, "1.1.1.1:443")]
    #[case::web_only(&[(443, true), (53, false), (0, true)], Some(true), 443, "1.1.1.1:443")]
    #[case::dns_only(&[(443, false), (53, true), (0, false)], Some(true), 53, "1.1.1.1:53")]
    #[case::name_only(&[(443, false), (53, false), (0, true)], Some(true), 443, "www.microsoft.com:443")]
    #[case::nothing(&[(443, false), (53, false), (0, false)], None, 443, "1.1.1.1:443, 1.1.1.1:53, www.microsoft.com:443")]
    fn egress_is_found_on_any_port(
        #[case] results: &[(u16, bool)],
        #[case] want: Option<bool>,
        #[case] port: u16,
        #[case] names: &str,
    ) {
        let outside = Outside::default();
        let mut attempts = Vec::new();
        for os in [Os::Linux, Os::Windows] {
            for &(p, reached) in results {
                let (host, p) = if p == 0 {
                    (DEFAULT_NAME, NAME_PORT)
                } else {
                    (DEFAULT_ADDRESS, p)
                };
                attempts.push(attempt(os, host, p, reached));
            }
        }
        let e = conclude(&attempts, &outside);
        assert_eq!(e.determined.then_some(e.fact.value), want);
        assert_eq!(e.address_port, port);
        assert!(e.fact.source.contains(names), "{}", e.fact.source);
        if want.is_none() {
            let why = e.unknown_because().expect("unknown");
            assert!(
                why.contains("--egress=false") && why.contains("cli-w1 on w1 (windows)"),
                "{why}"
            );
        } else {
            assert!(e.unknown_because().is_none());
        }
    }

    /// One pool that gets out is enough: the other's failure is the outbound checks' to show.
    #[test]
    fn one_pool_out_is_egress() {
        let attempts = [
            attempt(Os::Linux, DEFAULT_ADDRESS, 443, true),
            attempt(Os::Windows, DEFAULT_ADDRESS, 443, false),
        ];
        let e = conclude(&attempts, &Outside::default());
        assert!(e.determined && e.fact.value);
        assert!(e.fact.source.contains("cli-l1 on l1 (linux)"), "{}", e.fact.source);
    }

    #[test]
    fn nobody_to_try_from_assumes_egress() {
        let e = conclude(&[], &Outside::default());
        assert!(e.determined && e.fact.value && e.fact.source.starts_with("assumed"));
    }

    /// The user's own targets are the ones tried and named.
    #[test]
    fn the_users_targets_are_tried() {
        let outside = Outside {
            address: "192.0.2.10".into(),
            name: "proxy.corp.example".into(),
        };
        let t: Vec<String> = targets(&outside).iter().map(Target::shown).collect();
        assert_eq!(t, ["192.0.2.10:443", "192.0.2.10:53", "proxy.corp.example:443"]);
    }
}
