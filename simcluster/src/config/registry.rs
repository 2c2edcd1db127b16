//! The registries of a topology (`registries:`): which registry hosts answer a pull only to a
//! client that sends credentials, and which do not resolve from the nodes. A registry the
//! topology does not list answers every pull without credentials.
//!
//! ```yaml
//! registries:
//!   registry.k8s.io: {auth: required}      # a pull without matching imagePullSecrets gets a 401
//!   mcr.microsoft.com: {reachable: false}  # the name does not resolve on the nodes
//!   harbor.corp:5000: {}                   # listed, open: the same as not listed
//! ```
//!
//! Keys are registry hosts as image references name them (a host name with an optional port;
//! Docker Hub is `docker.io`), without a scheme or a path.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Whether a registry wants credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Auth {
    /// Anonymous pulls are answered (public registries).
    #[default]
    None,
    /// Every pull must carry credentials (a private registry, a mirror behind a login).
    Required,
}

/// What one registry does with pulls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    #[serde(default)]
    pub auth: Auth,
    /// False: the host name does not resolve on the nodes (a cluster whose DNS only knows the
    /// internal mirror). Default true.
    #[serde(default = "yes")]
    pub reachable: bool,
}

fn yes() -> bool {
    true
}

/// A registry host as image references name it: `registry.k8s.io`, `harbor.corp:5000`,
/// `localhost:5000`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Host(String);

impl Host {
    /// `text` as a registry host, or why it is not one.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (text, None),
        };
        let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
        let name_ok = (name.contains('.') || name == "localhost" || port.is_some())
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if port_ok && name_ok {
            Ok(Self(text.to_string()))
        } else {
            Err(format!(
                "registries: {text:?} is not a registry host such as registry.k8s.io or harbor.corp:5000 (lower case, no scheme, no path)"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Host {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The topology's registries by host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Registries(BTreeMap<Host, Registry>);

impl Registries {
    /// What the registry at `host` does (an unlisted one: open and reachable).
    pub fn get(&self, host: &str) -> Registry {
        self.0
            .iter()
            .find(|(h, _)| h.as_str() == host)
            .map(|(_, r)| *r)
            .unwrap_or(Registry {
                auth: Auth::None,
                reachable: true,
            })
    }

    /// Whether some registry refuses anonymous pulls or does not resolve.
    pub fn restricted(&self) -> bool {
        self.0.values().any(|r| r.auth == Auth::Required || !r.reachable)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::plain("registry.k8s.io", true)]
    #[case::port("harbor.corp:5000", true)]
    #[case::localhost("localhost", true)]
    #[case::localhost_port("localhost:5000", true)]
    #[case::hub("docker.io", true)]
    #[case::bare_port("myregistry:5000", true)]
    #[case::scheme("https://registry.k8s.io", false)]
    #[case::path("registry.k8s.io/e2e-test-images", false)]
    #[case::upper("Registry.k8s.io", false)]
    #[case::single_label("myregistry", false)]
    #[case::bad_port("harbor.corp:http", false)]
    #[case::zero_port("harbor.corp:0", false)]
    #[case::empty("", false)]
    #[case::dash("-bad.example.com", false)]
    fn hosts(#[case] text: &str, #[case] valid: bool) {
        assert_eq!(Host::parse(text).is_ok(), valid, "{text}");
    }

    #[test]
    fn unlisted_registries_are_open_and_reachable() {
        let r: Registries = serde_saphyr::from_str(
            "registry.k8s.io: {auth: required}\nmcr.microsoft.com: {reachable: false}\nharbor.corp: {}\n",
        )
        .expect("parses");
        assert_eq!(r.get("registry.k8s.io").auth, Auth::Required);
        assert!(r.get("registry.k8s.io").reachable);
        assert!(!r.get("mcr.microsoft.com").reachable);
        assert_eq!(r.get("harbor.corp"), r.get("example.com"));
        assert_eq!(r.get("example.com").auth, Auth::None);
        assert!(r.restricted());
        let open: Registries = serde_saphyr::from_str("harbor.corp: {}\n").expect("parses");
        assert!(!open.restricted() && !open.is_empty());
        assert!(Registries::default().is_empty());
    }
}
