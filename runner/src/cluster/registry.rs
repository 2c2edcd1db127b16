//! Where the run's pods get their images: the registry mirrors that rewrite fixture images
//! (`--image-registry`, one prefix for every image; `--image-registry-map FROM=TO`, per upstream
//! registry) and the pull secrets every pod the run creates names (`--image-pull-secret`),
//! validated once from the command line.
//!
//! Rewriting keeps the repository path, as registry mirrors (Harbor proxy caches, Artifactory
//! remotes, `crane copy`) serve it: `--image-registry-map registry.k8s.io=harbor.corp/k8s` makes
//! `registry.k8s.io/e2e-test-images/agnhost:2.53` into
//! `harbor.corp/k8s/e2e-test-images/agnhost:2.53`. `FROM` is a registry host, optionally with a
//! path (`mcr.microsoft.com/windows=harbor.corp/win`), matched at a path boundary, the longest
//! `FROM` first; Docker Hub is `docker.io`, its official images under `library/`. An image no
//! `FROM` matches takes `--image-registry` where it is given (its registry host replaced by the
//! prefix, as before), else stays as it is: the map names the exceptions, the prefix the rest.
//! A `FROM` mapped to two different places is refused.

use std::collections::BTreeMap;

/// A pull secret of `--image-pull-secret`: `NAME` (in the run namespace) or `NAMESPACE/NAME`
/// (copied into the run namespace under `NAME`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PullSecret {
    pub namespace: Option<String>,
    pub name: String,
}

impl PullSecret {
    /// `NAME` or `NAMESPACE/NAME`, or why it is neither.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = |why: &str| {
            format!(
                "--image-pull-secret {text:?}: {why} (expected NAME or NAMESPACE/NAME of a Secret of type kubernetes.io/dockerconfigjson)"
            )
        };
        let (namespace, name) = match text.split_once('/') {
            Some((ns, name)) => (Some(ns), name),
            None => (None, text),
        };
        if let Some(ns) = namespace
            && !is_dns_label(ns)
        {
            return Err(bad(&format!("{ns:?} is not a namespace name")));
        }
        if !is_dns_subdomain(name) {
            return Err(bad(&format!("{name:?} is not a Secret name")));
        }
        Ok(Self {
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        })
    }

    /// As given on the command line.
    pub fn shown(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// How the run rewrites image references for a mirror.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors {
    /// `--image-registry`: the prefix every image no mapping matches gets.
    pub prefix: Option<String>,
    /// `--image-registry-map`: FROM → TO.
    pub map: BTreeMap<String, String>,
}

impl Mirrors {
    /// The mirrors of `--image-registry` and the `--image-registry-map` values, or the usage
    /// error of the first bad one.
    pub fn parse(prefix: Option<&str>, map: &[String]) -> Result<Self, String> {
        if let Some(p) = prefix {
            check_place(p).map_err(|why| {
                format!("--image-registry {p:?}: {why}; expected a registry prefix such as mirror.example.com/k8s")
            })?;
        }
        let mut mapped = BTreeMap::new();
        for value in map {
            let bad = |why: String| {
                format!(
                    "--image-registry-map {value:?}: {why}; expected FROM=TO such as registry.k8s.io=harbor.corp/k8s"
                )
            };
            let Some((from, to)) = value.split_once('=') else {
                return Err(bad("no '='".into()));
            };
            check_place(from).map_err(|why| bad(format!("FROM {why}")))?;
            check_place(to).map_err(|why| bad(format!("TO {why}")))?;
            if from == to {
                return Err(bad(format!("maps {from} onto itself")));
            }
            match mapped.insert(from.to_string(), to.to_string()) {
                Some(before) if before != to => {
                    return Err(format!(
                        "--image-registry-map {from}: mapped twice, to {before} and to {to}; give each registry one mirror"
                    ));
                }
                _ => {}
            }
        }
        Ok(Self {
            prefix: prefix.map(str::to_string),
            map: mapped,
        })
    }

    /// Whether images are used as the fixtures name them.
    pub fn is_empty(&self) -> bool {
        self.prefix.is_none() && self.map.is_empty()
    }

    /// `image` as the run pulls it (see the module doc).
    pub fn rewrite(&self, image: &str) -> String {
        let full = qualified(image);
        let mapped = self
            .map
            .iter()
            .filter(|(from, _)| full == **from || full.starts_with(&format!("{from}/")))
            .max_by_key(|(from, _)| from.len());
        match (mapped, &self.prefix) {
            (Some((from, to)), _) => format!("{to}{}", &full[from.len()..]),
            (None, Some(prefix)) => rewrite_with_prefix(image, prefix),
            (None, None) => image.to_string(),
        }
    }
}

/// What the run's pods pull with: the mirrors and the pull secrets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    pub mirrors: Mirrors,
    pub pull_secrets: Vec<PullSecret>,
}

impl Registry {
    /// The run's registry settings from the command line, or the usage error of the first bad
    /// value: a malformed secret or mirror, two secrets of one name from different namespaces.
    pub fn parse(prefix: Option<&str>, map: &[String], secrets: &[String]) -> Result<Self, String> {
        let mirrors = Mirrors::parse(prefix, map)?;
        let mut pull_secrets: Vec<PullSecret> = Vec::new();
        for text in secrets {
            let s = PullSecret::parse(text)?;
            if let Some(other) = pull_secrets.iter().find(|o| o.name == s.name && **o != s) {
                return Err(format!(
                    "--image-pull-secret {} and {}: both would be the run namespace's Secret {:?}; copy one under another name first",
                    other.shown(),
                    s.shown(),
                    s.name
                ));
            }
            if !pull_secrets.contains(&s) {
                pull_secrets.push(s);
            }
        }
        Ok(Self { mirrors, pull_secrets })
    }

    /// The pull secrets' names in the run namespace.
    pub fn secret_names(&self) -> Vec<&str> {
        self.pull_secrets.iter().map(|s| s.name.as_str()).collect()
    }

    /// What results.json records (None: upstream images, no pull secrets).
    pub fn report(&self) -> Option<mixcheck_reports::Images> {
        let empty = self.mirrors.is_empty() && self.pull_secrets.is_empty();
        (!empty).then(|| mixcheck_reports::Images {
            registry: self.mirrors.prefix.clone(),
            registry_map: self.mirrors.map.clone(),
            pull_secrets: self.pull_secrets.iter().map(PullSecret::shown).collect(),
        })
    }
}

/// Whether the first segment of a reference is a registry host (a dot, a port or `localhost`),
/// as Docker and containerd decide it.
pub fn is_registry_host(segment: &str) -> bool {
    segment.contains('.') || segment.contains(':') || segment == "localhost"
}

/// The registry host an image is pulled from (`docker.io` for Docker Hub).
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if is_registry_host(first) => first,
        _ => "docker.io",
    }
}

/// The image with its registry: `busybox:1.36` → `docker.io/library/busybox:1.36`.
fn qualified(image: &str) -> String {
    match image.split_once('/') {
        Some((first, _)) if is_registry_host(first) => image.to_string(),
        Some(_) => format!("docker.io/{image}"),
        None => format!("docker.io/library/{image}"),
    }
}

/// `--image-registry`'s rewrite: `registry.k8s.io/e2e-test-images/agnhost:2.53` with
/// `mirror.local/k8s` → `mirror.local/k8s/e2e-test-images/agnhost:2.53` (the registry host
/// dropped, the path kept).
pub fn rewrite_with_prefix(image: &str, prefix: &str) -> String {
    let path = match image.split_once('/') {
        Some((first, rest)) if is_registry_host(first) => rest,
        _ => image,
    };
    format!("{prefix}/{path}")
}

/// A registry, optionally with a path: a host first (else images would be read as Docker Hub
/// repositories), no scheme, no whitespace, no empty segment or trailing slash.
fn check_place(text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Err("is empty".into());
    }
    if text.contains("://") {
        return Err(format!("{text:?} has a scheme"));
    }
    if text.contains(char::is_whitespace) || text.split('/').any(str::is_empty) {
        return Err(format!("{text:?} is not a registry path"));
    }
    let host = text.split('/').next().unwrap_or(text);
    if !is_registry_host(host) {
        return Err(format!(
            "{text:?} does not start with a registry host (a name with a dot or a port, or localhost; Docker Hub is docker.io)"
        ));
    }
    Ok(())
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn mirrors(prefix: Option<&str>, map: &[&str]) -> Result<Mirrors, String> {
        let map: Vec<String> = map.iter().map(|s| s.to_string()).collect();
        Mirrors::parse(prefix, &map)
    }

    #[rstest]
    #[case::mapped(None, &["registry.k8s.io=harbor.corp/k8s"], "registry.k8s.io/e2e-test-images/agnhost:2.53", "harbor.corp/k8s/e2e-test-images/agnhost:2.53")]
    #[case::other_registry_untouched(None, &["registry.k8s.io=harbor.corp/k8s"], "mcr.microsoft.com/windows/nanoserver:ltsc2022", "mcr.microsoft.com/windows/nanoserver:ltsc2022")]
    #[case::two_maps(None, &["registry.k8s.io=harbor.corp/k8s", "mcr.microsoft.com=harbor.corp/mcr"], "mcr.microsoft.com/windows/nanoserver:ltsc2022", "harbor.corp/mcr/windows/nanoserver:ltsc2022")]
    #[case::longest_from(None, &["mcr.microsoft.com=harbor.corp/mcr", "mcr.microsoft.com/windows=win.corp:5000/base"], "mcr.microsoft.com/windows/servercore:ltsc2025", "win.corp:5000/base/servercore:ltsc2025")]
    #[case::path_boundary(None, &["registry.k8s.io/e2e=harbor.corp/e2e"], "registry.k8s.io/e2e-test-images/agnhost:2.53", "registry.k8s.io/e2e-test-images/agnhost:2.53")]
    #[case::hub(None, &["docker.io=harbor.corp/hub"], "busybox:1.36", "harbor.corp/hub/library/busybox:1.36")]
    #[case::prefix_for_the_rest(Some("mirror.local/all"), &["registry.k8s.io=harbor.corp/k8s"], "mcr.microsoft.com/windows/nanoserver:1809", "mirror.local/all/windows/nanoserver:1809")]
    #[case::map_before_prefix(Some("mirror.local/all"), &["registry.k8s.io=harbor.corp/k8s"], "registry.k8s.io/pause:3.10", "harbor.corp/k8s/pause:3.10")]
    #[case::prefix_only(Some("m.io/x"), &[], "registry.k8s.io/pause:3.10", "m.io/x/pause:3.10")]
    #[case::prefix_hub(Some("m.io/x"), &[], "busybox:1.36", "m.io/x/busybox:1.36")]
    #[case::prefix_port(Some("m.io"), &[], "localhost:5000/a/b:1", "m.io/a/b:1")]
    #[case::digest(None, &["registry.k8s.io=harbor.corp/k8s"], "registry.k8s.io/pause@sha256:ab", "harbor.corp/k8s/pause@sha256:ab")]
    #[case::nothing(None, &[], "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10")]
    fn rewrites(#[case] prefix: Option<&str>, #[case] map: &[&str], #[case] image: &str, #[case] out: &str) {
        assert_eq!(mirrors(prefix, map).expect("valid").rewrite(image), out);
    }

    #[rstest]
    #[case::no_equals(None, &["registry.k8s.io"], "no '='")]
    #[case::empty_to(None, &["registry.k8s.io="], "TO is empty")]
    #[case::empty_from(None, &["=harbor.corp"], "FROM is empty")]
    #[case::scheme(None, &["registry.k8s.io=https://harbor.corp"], "scheme")]
    #[case::trailing_slash(None, &["registry.k8s.io=harbor.corp/k8s/"], "not a registry path")]
    #[case::not_a_host(None, &["registry.k8s.io=harbor/k8s"], "does not start with a registry host")]
    #[case::hub_user_from(None, &["library=harbor.corp/hub"], "does not start with a registry host")]
    #[case::itself(None, &["registry.k8s.io=registry.k8s.io"], "onto itself")]
    #[case::twice(None, &["registry.k8s.io=a.corp/k8s", "registry.k8s.io=b.corp/k8s"], "mapped twice, to a.corp/k8s and to b.corp/k8s")]
    #[case::bad_prefix(Some("mirror"), &[], "--image-registry \"mirror\"")]
    #[case::prefix_slash(Some("mirror.local/k8s/"), &[], "--image-registry")]
    #[case::space(None, &["registry.k8s.io=harbor corp"], "not a registry path")]
    fn malformed_or_contradictory_mirrors_are_refused(
        #[case] prefix: Option<&str>,
        #[case] map: &[&str],
        #[case] needle: &str,
    ) {
        let err = mirrors(prefix, map).expect_err("refused");
        assert!(err.contains(needle), "{err}");
    }

    #[test]
    fn the_same_mapping_twice_is_one() {
        let m = mirrors(
            None,
            &["registry.k8s.io=harbor.corp/k8s", "registry.k8s.io=harbor.corp/k8s"],
        )
        .expect("valid");
        assert_eq!(m.map.len(), 1);
    }

    #[rstest]
    #[case::here("regcred", None, "regcred")]
    #[case::copied("default/regcred", Some("default"), "regcred")]
    #[case::dotted("ci/harbor.corp-robot", Some("ci"), "harbor.corp-robot")]
    fn pull_secrets(#[case] text: &str, #[case] ns: Option<&str>, #[case] name: &str) {
        let s = PullSecret::parse(text).expect("valid");
        assert_eq!((s.namespace.as_deref(), s.name.as_str()), (ns, name));
        assert_eq!(s.shown(), text);
    }

    #[rstest]
    #[case::upper("RegCred", "not a Secret name")]
    #[case::empty("", "not a Secret name")]
    #[case::two_slashes("a/b/c", "not a Secret name")]
    #[case::bad_namespace("Team/regcred", "not a namespace name")]
    #[case::empty_name("default/", "not a Secret name")]
    fn malformed_pull_secrets_are_refused(#[case] text: &str, #[case] needle: &str) {
        let err = PullSecret::parse(text).expect_err("refused");
        assert!(err.contains(needle) && err.contains("--image-pull-secret"), "{err}");
    }

    #[test]
    fn two_secrets_of_one_name_would_collide() {
        let err = Registry::parse(None, &[], &["a/regcred".into(), "b/regcred".into()]).expect_err("refused");
        assert!(err.contains("a/regcred and b/regcred"), "{err}");
        let same = Registry::parse(None, &[], &["a/regcred".into(), "a/regcred".into()]).expect("valid");
        assert_eq!(same.secret_names(), ["regcred"]);
        assert_eq!(Registry::default().report(), None);
        let r = Registry::parse(
            Some("m.io/x"),
            &["registry.k8s.io=harbor.corp/k8s".into()],
            &["default/regcred".into()],
        )
        .expect("valid")
        .report()
        .expect("recorded");
        assert_eq!(r.registry.as_deref(), Some("m.io/x"));
        assert_eq!(r.registry_map["registry.k8s.io"], "harbor.corp/k8s");
        assert_eq!(r.pull_secrets, ["default/regcred"]);
    }

    #[rstest]
    #[case("registry.k8s.io/pause:3.10", "registry.k8s.io")]
    #[case("busybox", "docker.io")]
    #[case("curlimages/curl:8", "docker.io")]
    #[case("localhost:5000/app", "localhost:5000")]
    fn registries_of_images(#[case] image: &str, #[case] registry: &str) {
        assert_eq!(registry_of(image), registry);
    }
}
