//! The image catalogue: which platforms (OS, architecture, Windows build) each image reference
//! offers, whether it is a manifest list, its default Windows user and whether its default
//! entrypoint keeps running — the facts a simulated runtime needs to pull and start it.
//!
//! References are normalised the way Docker and containerd do it: `docker.io/library/x` and
//! `x` are the same image, a missing tag means `:latest`, and a digest (`x@sha256:…`) matches
//! the repository with any tag (its `latest` entry, else the first one). `k8s.gcr.io` is looked
//! up as `registry.k8s.io` (the old registry redirects there).
//!
//! The cluster add-ons' images (CoreDNS, kube-proxy, flannel, …) are in it too.
//!
//! Manifest lists are matched by platform at pull time; a single manifest is pulled as is and
//! the runtime only finds out at start that it cannot run it. Real Windows images on MCR are
//! manifest lists with one entry per build, so a mismatched build fails at *pull*; the
//! catalogue therefore also carries one deliberately single-manifest Windows image,
//! `mcr.microsoft.com/windows/servercore:10.0.17763.6414`, so that the other documented failure
//! — the HCS "container operating system does not match the host" *start* error (what a
//! locally built or re-tagged image without an `os.version` gives) — can be produced.
//!
//! **Mirrors keep the repository path.** A registry mirror (Harbor, Artifactory, a pull-through
//! cache, `crane copy`) serves a copy of an upstream image under its own host and a prefix of its
//! choosing, the repository path kept: `harbor.corp/k8s/e2e-test-images/agnhost:2.53` is
//! `registry.k8s.io/e2e-test-images/agnhost:2.53`, `harbor.corp/mcr/windows/nanoserver:ltsc2022`
//! is `mcr.microsoft.com/windows/nanoserver:ltsc2022` (Docker Hub's `busybox` is
//! `library/busybox` or `busybox` there). A reference the catalogue does not file under its own
//! name is looked up by its path without the registry host, the longest suffix that is the path of
//! a catalogue repository first; the copy has the original's platforms, manifest kind, user and
//! entrypoint, and its unpublished tags stay unpublished.
//!
//! **Unknown images** (neither built in nor added by the topology's `images:`) are modelled as
//! Linux-only amd64 manifest lists whose default entrypoint keeps running: on Linux they run,
//! on Windows they fail to pull with the realistic `no match for platform in manifest` error.

use std::collections::BTreeMap;

use crate::config::platform::Os;
use crate::config::topology::{ImagePlatform, ImageSpec};

/// What the catalogue knows about one image reference.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageInfo {
    /// The normalised reference as looked up (`busybox:latest`, `mcr.microsoft.com/…:ltsc2022`).
    pub name: String,
    pub platforms: Vec<ImagePlatform>,
    /// A manifest list is platform-matched at pull; a single manifest is pulled as is.
    pub manifest_list: bool,
    /// The Windows default user: `ContainerAdministrator` or `ContainerUser`.
    pub user: Option<String>,
    /// The default entrypoint keeps running (servers, pause).
    pub long_running: bool,
    /// False for images not in the catalogue.
    pub known: bool,
    /// False for a tag its repository's publisher never published (see the module doc): the
    /// pull fails as the registry answers, "not found" / "manifest unknown".
    pub published: bool,
}

/// Which tags of a repository a built-in entry covers.
#[derive(Debug, Clone, PartialEq)]
enum Tags {
    /// Every tag.
    Any,
    /// `MAJOR.MINOR[.…]` tags with `MAJOR == major` and `MINOR` in `from..=to`.
    Version { major: u32, from: u32, to: u32 },
}

#[derive(Debug, Clone, PartialEq)]
struct Pattern {
    repo: String,
    tags: Tags,
    info: ImageInfo,
}

/// The image catalogue: built-in entries plus the topology's additions.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// Exact `repo:tag` → info.
    exact: BTreeMap<String, ImageInfo>,
    /// Tag patterns, tried in order after the exact entries.
    patterns: Vec<Pattern>,
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The repository without the Docker Hub prefixes (`busybox`, `curlimages/curl`,
    /// `mcr.microsoft.com/windows/servercore`).
    pub repo: String,
    pub tag: Option<String>,
    /// `sha256:…` when the reference pins a digest.
    pub digest: Option<String>,
}

impl Reference {
    /// Parses a reference; never fails (garbage in, a repository named after it out).
    pub fn parse(image: &str) -> Self {
        let image = image.trim();
        let (rest, digest) = match image.split_once('@') {
            Some((r, d)) => (r, Some(d.to_string())),
            None => (image, None),
        };
        let slash = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
        let (repo, tag) = match rest.get(slash..).and_then(|last| last.rfind(':')) {
            Some(colon) => {
                let at = slash + colon;
                (rest.get(..at).unwrap_or(rest), rest.get(at + 1..).map(str::to_string))
            }
            None => (rest, None),
        };
        let mut repo = repo.to_ascii_lowercase();
        for prefix in ["docker.io/", "index.docker.io/", "registry-1.docker.io/"] {
            if let Some(r) = repo.strip_prefix(prefix) {
                repo = r.to_string();
                break;
            }
        }
        if let Some(r) = repo.strip_prefix("library/")
            && !r.contains('/')
        {
            repo = r.to_string();
        }
        let tag = tag.filter(|t| !t.is_empty());
        Self { repo, tag, digest }
    }

    /// The normalised name: `repo:tag`, `repo@digest` or `repo:tag@digest` (`:latest` when
    /// neither a tag nor a digest is given).
    pub fn normalised(&self) -> String {
        match (&self.tag, &self.digest) {
            (Some(t), Some(d)) => format!("{}:{t}@{d}", self.repo),
            (Some(t), None) => format!("{}:{t}", self.repo),
            (None, Some(d)) => format!("{}@{d}", self.repo),
            (None, None) => format!("{}:latest", self.repo),
        }
    }

    /// The fully qualified reference containerd reports (`docker.io/library/busybox:latest`).
    pub fn fully_qualified(&self) -> String {
        let first = self.repo.split('/').next().unwrap_or("");
        let has_registry =
            self.repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
        let repo = if has_registry {
            self.repo.clone()
        } else if self.repo.contains('/') {
            format!("docker.io/{}", self.repo)
        } else {
            format!("docker.io/library/{}", self.repo)
        };
        let reference = Self {
            repo,
            tag: self.tag.clone(),
            digest: self.digest.clone(),
        };
        reference.normalised()
    }

    /// The repository under the name the catalogue files it (`k8s.gcr.io` → `registry.k8s.io`).
    fn catalogue_repo(&self) -> String {
        match self.repo.strip_prefix("k8s.gcr.io/") {
            Some(rest) => format!("registry.k8s.io/{rest}"),
            None => self.repo.clone(),
        }
    }
}

/// The Windows base image repositories whose tags the catalogue lists completely (their
/// LTSC and semi-annual tags, and `10.0.<build>.<revision>` tags of the builds listed): any other
/// tag of theirs was never published. MCR answers such a pull "not found" ("manifest unknown" in
/// Docker's words), as for `mcr.microsoft.com/windows/nanoserver:ltsc2019` — Nano Server was a
/// semi-annual image in 2019 and only Server Core got the `ltsc2019` tag (Microsoft, "Windows
/// Server 2019 Now Available", Nov 2018; docs/images.md, MCRBLOG).
const COMPLETE_REPOS: [&str; 2] = [
    "mcr.microsoft.com/windows/nanoserver",
    "mcr.microsoft.com/windows/servercore",
];

/// A tag of a [`COMPLETE_REPOS`] repository the catalogue does not list (and not a
/// `10.0.<build>.<revision>` tag of a listed build, nor a digest).
fn unpublished_tag(reference: &Reference) -> bool {
    if !COMPLETE_REPOS.contains(&reference.repo.as_str()) || reference.digest.is_some() {
        return false;
    }
    let revision_tag = reference.tag.as_deref().is_some_and(|t| {
        let parts: Vec<&str> = t.split('.').collect();
        parts.len() == 4
            && parts[..2] == ["10", "0"]
            && parts[2].parse::<u32>().is_ok_and(|b| {
                [
                    WS2016, WS1709, WS1803, WS2019, 18362, 18363, 19041, 19042, WS2022, WS2025,
                ]
                .contains(&b)
            })
            && parts[3].parse::<u32>().is_ok()
    });
    !revision_tag
}

/// Whether the first segment of a reference names a registry (a dot, a port or `localhost`), as
/// Docker and containerd decide it; otherwise the reference is a Docker Hub repository.
fn is_registry_host(segment: &str) -> bool {
    segment.contains('.') || segment.contains(':') || segment == "localhost"
}

/// The paths a catalogue repository has on any registry: without its registry host
/// (`registry.k8s.io/pause` → `pause`); a Docker Hub repository as it is and, for an official
/// image, under `library/` (`busybox` → `busybox`, `library/busybox`).
fn repository_paths(repo: &str) -> Vec<String> {
    match repo.split_once('/') {
        Some((host, path)) if is_registry_host(host) => vec![path.to_string()],
        Some(_) => vec![repo.to_string()],
        None => vec![repo.to_string(), format!("library/{repo}")],
    }
}

#[cfg(test)] // used by the tests only
/// The normalised name of a reference (`docker.io/library/nginx` → `nginx:latest`).
pub fn normalise(image: &str) -> String {
    Reference::parse(image).normalised()
}

#[cfg(test)] // used by the tests only
/// The fully qualified reference as containerd prints it in pull errors.
pub fn fully_qualified(image: &str) -> String {
    Reference::parse(image).fully_qualified()
}

const ADMIN: &str = "ContainerAdministrator";
const USER: &str = "ContainerUser";

fn linux() -> Vec<ImagePlatform> {
    ["amd64", "arm64"]
        .iter()
        .map(|arch| ImagePlatform {
            os: Os::Linux,
            arch: (*arch).to_string(),
            build: None,
        })
        .collect()
}

fn windows(builds: &[u32]) -> Vec<ImagePlatform> {
    builds
        .iter()
        .map(|b| ImagePlatform {
            os: Os::Windows,
            arch: "amd64".into(),
            build: Some(*b),
        })
        .collect()
}

fn both(builds: &[u32]) -> Vec<ImagePlatform> {
    let mut p = linux();
    p.extend(windows(builds));
    p
}

/// Windows Server 2016, 1709, 1803, 2019 (1809), 2022, 2025.
const WS2016: u32 = 14393;
const WS1709: u32 = 16299;
const WS1803: u32 = 17134;
const WS2019: u32 = 17763;
const WS2022: u32 = 20348;
const WS2025: u32 = 26100;

fn info(platforms: Vec<ImagePlatform>, manifest_list: bool, user: Option<&str>, long_running: bool) -> ImageInfo {
    ImageInfo {
        name: String::new(),
        platforms,
        manifest_list,
        user: user.map(str::to_string),
        long_running,
        known: true,
        published: true,
    }
}

/// A manifest list.
fn list(platforms: Vec<ImagePlatform>, user: Option<&str>, long_running: bool) -> ImageInfo {
    info(platforms, true, user, long_running)
}

fn version_of(tag: &str) -> Option<(u32, u32)> {
    let mut parts = tag.split(['.', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

impl Tags {
    fn matches(&self, tag: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Version { major, from, to } => {
                version_of(tag).is_some_and(|(ma, mi)| ma == *major && (*from..=*to).contains(&mi))
            }
        }
    }
}

impl Catalogue {
    /// The built-in catalogue.
    pub fn builtin() -> Self {
        let mut c = Self {
            exact: BTreeMap::new(),
            patterns: Vec::new(),
        };
        c.add_e2e_images();
        c.add_pause_images();
        c.add_windows_images();
        c.add_linux_images();
        c.add_addon_images();
        c
    }

    /// The built-in catalogue with the topology's `images:` added (an entry with the same
    /// normalised name replaces the built-in one).
    pub fn with_extra(extra: &[ImageSpec]) -> Self {
        let mut c = Self::builtin();
        for spec in extra {
            let reference = Reference::parse(&spec.name);
            let key = format!("{}:{}", reference.repo, reference.tag.as_deref().unwrap_or("latest"));
            c.exact.insert(
                key,
                ImageInfo {
                    name: String::new(),
                    platforms: spec.platforms.clone(),
                    manifest_list: spec.manifest_list,
                    user: spec.user.clone(),
                    long_running: spec.long_running,
                    known: true,
                    published: true,
                },
            );
        }
        c
    }

    /// What the catalogue knows about `image`. Unknown images come back as Linux-only amd64
    /// manifest lists with a long-running entrypoint and `known: false` (see the module doc).
    pub fn lookup(&self, image: &str) -> ImageInfo {
        let reference = Reference::parse(image);
        let name = reference.normalised();
        let repo = self.canonical(&reference);
        let found = self.find(&repo, &reference);
        let reference = Reference { repo, ..reference };
        match found {
            Some(mut i) => {
                i.name = name;
                i
            }
            None => ImageInfo {
                platforms: vec![ImagePlatform {
                    os: Os::Linux,
                    arch: "amd64".into(),
                    build: None,
                }],
                manifest_list: true,
                user: None,
                long_running: true,
                known: false,
                published: !unpublished_tag(&reference),
                name,
            },
        }
    }

    /// The repository the catalogue files `reference` under: its own, the old registry's
    /// (`k8s.gcr.io`), the original of a mirror's copy (see the module doc), else its own.
    fn canonical(&self, reference: &Reference) -> String {
        let alias = reference.catalogue_repo();
        [reference.repo.clone(), alias]
            .into_iter()
            .find(|r| self.has_repo(r))
            .or_else(|| self.mirrored(&reference.repo))
            .unwrap_or_else(|| reference.repo.clone())
    }

    /// Every repository the catalogue has an entry of.
    fn repos(&self) -> impl Iterator<Item = &str> {
        self.exact
            .keys()
            .filter_map(|k| k.rsplit_once(':').map(|(repo, _)| repo))
            .chain(self.patterns.iter().map(|p| p.repo.as_str()))
    }

    fn has_repo(&self, repo: &str) -> bool {
        self.repos().any(|r| r == repo)
    }

    /// The catalogue repository whose path (the repository without its registry host) is the
    /// longest suffix of `repo`'s path, where `repo` names a registry host.
    fn mirrored(&self, repo: &str) -> Option<String> {
        let (host, path) = repo.split_once('/')?;
        if !is_registry_host(host) {
            return None;
        }
        let segments: Vec<&str> = path.split('/').collect();
        (0..segments.len()).find_map(|start| {
            let suffix = segments[start..].join("/");
            self.repos()
                .find(|r| repository_paths(r).contains(&suffix))
                .map(str::to_string)
        })
    }

    fn find(&self, repo: &str, reference: &Reference) -> Option<ImageInfo> {
        let tag = match (&reference.tag, &reference.digest) {
            (Some(t), _) => Some(t.as_str()),
            (None, None) => Some("latest"),
            (None, Some(_)) => None,
        };
        if let Some(tag) = tag {
            if let Some(i) = self.exact.get(&format!("{repo}:{tag}")) {
                return Some(i.clone());
            }
            if let Some(p) = self.patterns.iter().find(|p| p.repo == repo && p.tags.matches(tag)) {
                return Some(p.info.clone());
            }
        }
        if reference.digest.is_some() {
            // A digest matches the repository with any tag: its `latest`, else the first entry.
            if let Some(i) = self.exact.get(&format!("{repo}:latest")) {
                return Some(i.clone());
            }
            let prefix = format!("{repo}:");
            if let Some((_, i)) = self
                .exact
                .range(prefix.clone()..)
                .next()
                .filter(|(k, _)| k.starts_with(&prefix))
            {
                return Some(i.clone());
            }
            if let Some(p) = self.patterns.iter().find(|p| p.repo == repo) {
                return Some(p.info.clone());
            }
        }
        None
    }

    fn exact(&mut self, repo: &str, tags: &[&str], info: ImageInfo) {
        for tag in tags {
            self.exact.insert(format!("{repo}:{tag}"), info.clone());
        }
    }

    fn pattern(&mut self, repo: &str, tags: Tags, info: ImageInfo) {
        self.patterns.push(Pattern {
            repo: repo.to_string(),
            tags,
            info,
        });
    }

    /// `registry.k8s.io/e2e-test-images/*` (IMG @ ~v1.31; Windows variants from the
    /// agnhost/busybox BASEIMAGE files).
    fn add_e2e_images(&mut self) {
        const E2E: &str = "registry.k8s.io/e2e-test-images";
        // agnhost: Linux + Windows 2019/2022 only — its BASEIMAGE builds the Windows variants
        // `windows/amd64/1809` and `windows/amd64/ltsc2022` (AGN, read up to the alpine 3.21
        // version); no tag carries an ltsc2025 (26100) variant.
        self.pattern(
            &format!("{E2E}/agnhost"),
            Tags::Version {
                major: 2,
                from: 0,
                to: u32::MAX,
            },
            list(both(&[WS2019, WS2022]), Some(ADMIN), false),
        );
        // busybox 1.36.1-1: nanoserver + busybox-w32 + PowerShell on Windows.
        self.exact(
            &format!("{E2E}/busybox"),
            &["1.36.1-1", "1.29-4", "1.29-2"],
            list(both(&[WS2019, WS2022]), Some(ADMIN), false),
        );
        self.exact(
            &format!("{E2E}/nonroot"),
            &["1.4", "1.2"],
            list(both(&[WS2019, WS2022]), Some(USER), false),
        );
        self.exact(
            &format!("{E2E}/nonroot"),
            &["1.6.0"],
            list(both(&[WS2019, WS2022, WS2025]), Some(USER), false),
        );
        self.exact(
            &format!("{E2E}/resource-consumer"),
            &["1.13", "1.10", "1.9"],
            list(both(&[WS2019, WS2022]), Some(ADMIN), true),
        );
        self.exact(
            &format!("{E2E}/resource-consumer"),
            &["1.15.0"],
            list(both(&[WS2019, WS2022, WS2025]), Some(ADMIN), true),
        );
        self.exact(
            &format!("{E2E}/nginx"),
            &["1.14-4", "1.15-4", "1.14-2", "1.15-2"],
            list(linux(), None, true),
        );
        self.exact(
            &format!("{E2E}/httpd"),
            &["2.4.38-4", "2.4.39-4", "2.4.38-2"],
            list(linux(), None, true),
        );
        self.exact(
            &format!("{E2E}/jessie-dnsutils"),
            &["1.7", "1.5"],
            list(linux(), None, false),
        );
    }

    /// Pause (sandbox) images over time (VER-PAUSE-IMAGE).
    fn add_pause_images(&mut self) {
        const PAUSE: &str = "registry.k8s.io/pause";
        self.exact(PAUSE, &["3.1", "3.2"], list(linux(), None, true));
        self.exact(
            PAUSE,
            &["3.4.1", "3.5"],
            list(both(&[WS2019, 19041, 19042]), None, true),
        );
        self.exact(
            PAUSE,
            &["3.6", "3.7", "3.8", "3.9", "3.10", "3.10.1"],
            list(both(&[WS2019, WS2022]), None, true),
        );
        // 3.10.2 adds the Windows Server 2025 entry (WT capz windows-base.yaml).
        self.exact(PAUSE, &["3.10.2"], list(both(&[WS2019, WS2022, WS2025]), None, true));
        self.pattern(
            PAUSE,
            Tags::Version {
                major: 3,
                from: 11,
                to: u32::MAX,
            },
            list(both(&[WS2019, WS2022, WS2025]), None, true),
        );
        const OSS: &str = "mcr.microsoft.com/oss/kubernetes/pause";
        self.exact(OSS, &["1.4.1"], list(both(&[WS2019, 18362, 18363, 19041]), None, true));
        self.exact(OSS, &["3.5"], list(both(&[WS2019, 19041, 19042]), None, true));
        self.exact(OSS, &["3.6", "3.9"], list(both(&[WS2019, WS2022]), None, true));
        // The 1.14 pause image: Windows Server 2019 only.
        self.exact(
            "mcr.microsoft.com/k8s/core/pause",
            &["1.0.0"],
            list(windows(&[WS2019]), None, true),
        );
        // The 1.9 guide builds it locally from microsoft/windowsservercore:1709: a single manifest.
        self.exact(
            "kubeletwin/pause",
            &["latest"],
            info(windows(&[WS1709]), false, None, true),
        );
        // The 1.5-era (Windows Server 2016) infra image on Docker Hub: a single manifest.
        self.exact(
            "apprenda/pause",
            &["latest"],
            info(windows(&[WS2016]), false, None, true),
        );
    }

    fn add_windows_images(&mut self) {
        const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore";
        const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver";
        const IIS: &str = "mcr.microsoft.com/windows/servercore/iis";
        let admin = |builds: &[u32], long_running: bool| list(windows(builds), Some(ADMIN), long_running);
        self.exact(SERVERCORE, &["ltsc2019", "1809"], admin(&[WS2019], false));
        self.exact(SERVERCORE, &["ltsc2022"], admin(&[WS2022], false));
        self.exact(SERVERCORE, &["ltsc2025"], admin(&[WS2025], false));
        self.exact(SERVERCORE, &["1709"], admin(&[WS1709], false));
        self.exact(SERVERCORE, &["1803"], admin(&[WS1803], false));
        self.exact(SERVERCORE, &["ltsc2016"], admin(&[WS2016], false));
        // Deliberately single manifests (see the module doc): pulled anywhere, refused by HCS at
        // start on a host that cannot run the build.
        self.exact(
            SERVERCORE,
            &["10.0.17763.6414"],
            info(windows(&[WS2019]), false, Some(ADMIN), false),
        );
        self.exact(
            SERVERCORE,
            &["10.0.20348.2762"],
            info(windows(&[WS2022]), false, Some(ADMIN), false),
        );
        let user = |builds: &[u32]| list(windows(builds), Some(USER), false);
        // Nano Server of 2019 is `1809` only: it stayed a semi-annual image, and only Server Core
        // got an `ltsc2019` tag (MCRBLOG) — nanoserver:ltsc2019 does not exist.
        self.exact(NANOSERVER, &["1809"], user(&[WS2019]));
        // The semi-annual releases after 1809 (both repositories).
        for (tag, build) in [("1903", 18362), ("1909", 18363), ("2004", 19041), ("20H2", 19042)] {
            self.exact(NANOSERVER, &[tag], user(&[build]));
            self.exact(SERVERCORE, &[tag], admin(&[build], false));
        }
        self.exact(NANOSERVER, &["1803"], user(&[WS1803]));
        self.exact(NANOSERVER, &["ltsc2022"], user(&[WS2022]));
        self.exact(NANOSERVER, &["ltsc2025"], user(&[WS2025]));
        self.exact(NANOSERVER, &["1709"], user(&[WS1709]));
        // Nano Server of Windows Server 2016 (1607) was published as a semi-annual image:
        // `sac2016`, not `ltsc2016` (hcsshim's and containerd's Windows tests pick
        // `mcr.microsoft.com/windows/nanoserver:sac2016` for RS1 hosts).
        self.exact(NANOSERVER, &["sac2016"], user(&[WS2016]));
        self.exact(IIS, &["latest"], admin(&[WS2019, WS2022], true));
        self.exact(IIS, &["windowsservercore-ltsc2019"], admin(&[WS2019], true));
        self.exact(IIS, &["windowsservercore-ltsc2022"], admin(&[WS2022], true));
        self.exact(IIS, &["windowsservercore-ltsc2025"], admin(&[WS2025], true));
        self.exact(
            "mcr.microsoft.com/windows/server",
            &["ltsc2022"],
            admin(&[WS2022], false),
        );
        self.exact(
            "mcr.microsoft.com/windows/server",
            &["ltsc2025"],
            admin(&[WS2025], false),
        );
        self.exact(
            "mcr.microsoft.com/dotnet/framework/samples",
            &["aspnetapp"],
            admin(&[WS2019, WS2022], true),
        );
        self.exact(
            "mcr.microsoft.com/dotnet/framework/aspnet",
            &["4.8", "4.8.1"],
            admin(&[WS2019, WS2022], true),
        );
        // Old Docker Hub names of the 2016 and 1709 eras (the 1.5 blog, the 1.9 guide).
        self.exact(
            "microsoft/windowsservercore",
            &["latest"],
            admin(&[WS2016, WS1709], false),
        );
        self.exact("microsoft/nanoserver", &["latest"], admin(&[WS2016, WS1709], false));
        self.exact("microsoft/iis", &["latest"], admin(&[WS2016, WS1709], true));
        self.exact("microsoft/windowsservercore", &["1709"], admin(&[WS1709], false));
        self.exact("microsoft/windowsservercore", &["ltsc2016"], admin(&[WS2016], false));
        self.exact("microsoft/nanoserver", &["1709"], user(&[WS1709]));
        self.exact("microsoft/nanoserver", &["sac2016"], user(&[WS2016]));
        self.exact("microsoft/iis", &["windowsservercore-1709"], admin(&[WS1709], true));
        self.exact("microsoft/iis", &["windowsservercore-ltsc2016"], admin(&[WS2016], true));
        // The HostProcess base image: one Windows entry without os.version, runs on any build.
        self.exact(
            "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image",
            &["v1.0.0"],
            info(
                vec![ImagePlatform {
                    os: Os::Windows,
                    arch: "amd64".into(),
                    build: None,
                }],
                false,
                Some(ADMIN),
                false,
            ),
        );
    }

    /// Common Docker Hub images: Linux only.
    fn add_linux_images(&mut self) {
        for repo in ["busybox", "alpine", "ubuntu", "debian", "curlimages/curl", "python"] {
            self.pattern(repo, Tags::Any, list(linux(), None, false));
        }
        for repo in ["nginx", "httpd", "redis", "postgres", "traefik/whoami"] {
            self.pattern(repo, Tags::Any, list(linux(), None, true));
        }
    }
}

impl Catalogue {
    /// The cluster add-ons' images ([`crate::node::addons`]): CoreDNS and kube-dns, kube-proxy,
    /// flannel and the Azure CNI and ovn-kubernetes agents are Linux images; sig-windows-tools'
    /// HostProcess images carry one Windows entry without an OS build (they run on any build).
    fn add_addon_images(&mut self) {
        let linux_server = || list(linux(), None, true);
        let mut repos = vec![
            "registry.k8s.io/coredns/coredns".to_string(),
            "registry.k8s.io/coredns".to_string(),
            "registry.k8s.io/kube-proxy".to_string(),
            "mcr.microsoft.com/oss/kubernetes/kube-proxy".to_string(),
            "flannel/flannel".to_string(),
            "flannel/flannel-cni-plugin".to_string(),
            "rancher/mirrored-flannelcni-flannel".to_string(),
            "rancher/mirrored-flannelcni-flannel-cni-plugin".to_string(),
            "quay.io/coreos/flannel".to_string(),
            "mcr.microsoft.com/containernetworking/networkmonitor".to_string(),
            "mcr.microsoft.com/aks/ip-masq-agent-v2".to_string(),
            "ghcr.io/ovn-org/ovn-kubernetes/ovn-kube-ubuntu".to_string(),
            // The managed platforms' and Calico's Linux agents (`crate::node::addons`).
            "mcr.microsoft.com/containernetworking/azure-cns".to_string(),
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/amazon-k8s-cni".to_string(),
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/kube-proxy".to_string(),
            "calico/node".to_string(),
        ];
        for registry in ["registry.k8s.io", "gcr.io/google_containers"] {
            for name in [
                "kube-proxy-amd64",
                "k8s-dns-kube-dns-amd64",
                "k8s-dns-dnsmasq-nanny-amd64",
                "k8s-dns-sidecar-amd64",
                "kubedns-amd64",
                "kube-dnsmasq-amd64",
                "dnsmasq-metrics-amd64",
                "exechealthz-amd64",
            ] {
                repos.push(format!("{registry}/{name}"));
            }
        }
        for repo in repos {
            self.pattern(&repo, Tags::Any, linux_server());
        }
        let host_process = || {
            list(
                vec![ImagePlatform {
                    os: Os::Windows,
                    arch: "amd64".into(),
                    build: None,
                }],
                Some(ADMIN),
                true,
            )
        };
        self.pattern("sigwindowstools/kube-proxy", Tags::Any, host_process());
        self.pattern("sigwindowstools/flannel", Tags::Any, host_process());
        self.pattern("calico/node-windows", Tags::Any, host_process());
        // One manifest list for the Linux agent and the Windows HostProcess one.
        let mut cloud_node_manager = linux();
        cloud_node_manager.push(ImagePlatform {
            os: Os::Windows,
            arch: "amd64".into(),
            build: None,
        });
        self.pattern(
            "mcr.microsoft.com/oss/kubernetes/azure-cloud-node-manager",
            Tags::Any,
            list(cloud_node_manager, Some(ADMIN), true),
        );
    }
}

impl Default for Catalogue {
    fn default() -> Self {
        Self::builtin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn builds(i: &ImageInfo, os: Os) -> Vec<Option<u32>> {
        i.platforms.iter().filter(|p| p.os == os).map(|p| p.build).collect()
    }

    #[rstest]
    #[case("busybox", "busybox:latest")]
    #[case("docker.io/library/busybox", "busybox:latest")]
    #[case("docker.io/library/busybox:1.36", "busybox:1.36")]
    #[case("index.docker.io/library/nginx:1.27", "nginx:1.27")]
    #[case("library/alpine", "alpine:latest")]
    #[case("docker.io/curlimages/curl:8.1.0", "curlimages/curl:8.1.0")]
    #[case("localhost:5000/app", "localhost:5000/app:latest")]
    #[case("localhost:5000/app:v2", "localhost:5000/app:v2")]
    #[case("busybox@sha256:abc", "busybox@sha256:abc")]
    #[case("busybox:1.36@sha256:abc", "busybox:1.36@sha256:abc")]
    #[case("  nginx  ", "nginx:latest")]
    fn normalisation(#[case] image: &str, #[case] expected: &str) {
        assert_eq!(normalise(image), expected);
    }

    #[rstest]
    #[case("busybox", "docker.io/library/busybox:latest")]
    #[case("curlimages/curl:8", "docker.io/curlimages/curl:8")]
    #[case(
        "mcr.microsoft.com/windows/servercore:ltsc2019",
        "mcr.microsoft.com/windows/servercore:ltsc2019"
    )]
    #[case("localhost:5000/app", "localhost:5000/app:latest")]
    fn fully_qualified_references(#[case] image: &str, #[case] expected: &str) {
        assert_eq!(fully_qualified(image), expected);
    }

    #[rstest]
    #[case::agnhost_2_52("registry.k8s.io/e2e-test-images/agnhost:2.52", vec![Some(17763), Some(20348)])]
    #[case::agnhost_2_40("registry.k8s.io/e2e-test-images/agnhost:2.40", vec![Some(17763), Some(20348)])]
    // No agnhost tag has a Windows Server 2025 variant (AGN BASEIMAGE: 1809 and ltsc2022).
    #[case::agnhost_2_53("registry.k8s.io/e2e-test-images/agnhost:2.53", vec![Some(17763), Some(20348)])]
    #[case::agnhost_old_registry("k8s.gcr.io/e2e-test-images/agnhost:2.39", vec![Some(17763), Some(20348)])]
    #[case::busybox_e2e("registry.k8s.io/e2e-test-images/busybox:1.36.1-1", vec![Some(17763), Some(20348)])]
    #[case::pause_3_6("registry.k8s.io/pause:3.6", vec![Some(17763), Some(20348)])]
    #[case::pause_3_10("registry.k8s.io/pause:3.10", vec![Some(17763), Some(20348)])]
    #[case::pause_3_10_2("registry.k8s.io/pause:3.10.2", vec![Some(17763), Some(20348), Some(26100)])]
    #[case::pause_future("registry.k8s.io/pause:3.11", vec![Some(17763), Some(20348), Some(26100)])]
    #[case::oss_pause("mcr.microsoft.com/oss/kubernetes/pause:3.6", vec![Some(17763), Some(20348)])]
    #[case::core_pause("mcr.microsoft.com/k8s/core/pause:1.0.0", vec![Some(17763)])]
    #[case::kubeletwin("kubeletwin/pause", vec![Some(16299)])]
    #[case::servercore_2019("mcr.microsoft.com/windows/servercore:ltsc2019", vec![Some(17763)])]
    #[case::servercore_2022("mcr.microsoft.com/windows/servercore:ltsc2022", vec![Some(20348)])]
    #[case::servercore_2025("mcr.microsoft.com/windows/servercore:ltsc2025", vec![Some(26100)])]
    #[case::servercore_1709("mcr.microsoft.com/windows/servercore:1709", vec![Some(16299)])]
    #[case::servercore_2016("mcr.microsoft.com/windows/servercore:ltsc2016", vec![Some(14393)])]
    #[case::nanoserver_1809("mcr.microsoft.com/windows/nanoserver:1809", vec![Some(17763)])]
    #[case::nanoserver_2022("mcr.microsoft.com/windows/nanoserver:ltsc2022", vec![Some(20348)])]
    #[case::nanoserver_2025("mcr.microsoft.com/windows/nanoserver:ltsc2025", vec![Some(26100)])]
    #[case::nanoserver_1903("mcr.microsoft.com/windows/nanoserver:1903", vec![Some(18362)])]
    #[case::nanoserver_1709("mcr.microsoft.com/windows/nanoserver:1709", vec![Some(16299)])]
    #[case::nanoserver_2016("mcr.microsoft.com/windows/nanoserver:sac2016", vec![Some(14393)])]
    #[case::nanoserver_2016_hub("microsoft/nanoserver:sac2016", vec![Some(14393)])]
    #[case::iis_latest("mcr.microsoft.com/windows/servercore/iis", vec![Some(17763), Some(20348)])]
    #[case::iis_2022("mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022", vec![Some(20348)])]
    #[case::old_hub("microsoft/iis:windowsservercore-1709", vec![Some(16299)])]
    #[case::aspnet("mcr.microsoft.com/dotnet/framework/samples:aspnetapp", vec![Some(17763), Some(20348)])]
    #[case::busybox_hub("busybox:1.36", vec![])]
    #[case::nginx_hub("docker.io/library/nginx:1.27", vec![])]
    fn windows_builds(#[case] image: &str, #[case] expected: Vec<Option<u32>>) {
        let c = Catalogue::builtin();
        let i = c.lookup(image);
        assert!(i.known, "{image}");
        assert_eq!(builds(&i, Os::Windows), expected, "{image}");
    }

    #[rstest]
    #[case(
        "mcr.microsoft.com/windows/servercore:ltsc2022",
        Some("ContainerAdministrator"),
        false,
        true
    )]
    #[case("mcr.microsoft.com/windows/nanoserver:ltsc2022", Some("ContainerUser"), false, true)]
    #[case("registry.k8s.io/e2e-test-images/nonroot:1.4", Some("ContainerUser"), false, true)]
    #[case(
        "registry.k8s.io/e2e-test-images/agnhost:2.52",
        Some("ContainerAdministrator"),
        false,
        true
    )]
    #[case(
        "mcr.microsoft.com/windows/servercore/iis",
        Some("ContainerAdministrator"),
        true,
        true
    )]
    #[case("registry.k8s.io/pause:3.9", None, true, true)]
    #[case("nginx", None, true, true)]
    #[case("busybox", None, false, true)]
    #[case(
        "mcr.microsoft.com/windows/servercore:10.0.17763.6414",
        Some("ContainerAdministrator"),
        false,
        false
    )]
    #[case("kubeletwin/pause:latest", None, true, false)]
    fn users_entrypoints_and_manifest_kinds(
        #[case] image: &str,
        #[case] user: Option<&str>,
        #[case] long_running: bool,
        #[case] manifest_list: bool,
    ) {
        let i = Catalogue::builtin().lookup(image);
        assert_eq!(i.user.as_deref(), user, "{image}");
        assert_eq!(i.long_running, long_running, "{image}");
        assert_eq!(i.manifest_list, manifest_list, "{image}");
    }

    #[test]
    fn unknown_images_are_linux_amd64_lists() {
        let i = Catalogue::builtin().lookup("example.com/team/app:1.2");
        assert!(!i.known);
        assert!(i.manifest_list);
        assert_eq!(i.name, "example.com/team/app:1.2");
        assert_eq!(
            i.platforms,
            vec![ImagePlatform {
                os: Os::Linux,
                arch: "amd64".into(),
                build: None
            }]
        );
    }

    #[test]
    fn digests_match_by_repository() {
        let c = Catalogue::builtin();
        let i = c.lookup("mcr.microsoft.com/windows/servercore/iis@sha256:0123");
        assert!(i.known);
        assert_eq!(builds(&i, Os::Windows), vec![Some(17763), Some(20348)], "latest entry");
        // No `latest`: the first entry of the repository.
        let i = c.lookup("mcr.microsoft.com/windows/nanoserver@sha256:0123");
        assert!(i.known);
        assert_eq!(i.name, "mcr.microsoft.com/windows/nanoserver@sha256:0123");
        // Pattern repositories.
        assert!(c.lookup("busybox@sha256:0123").known);
        assert!(c.lookup("registry.k8s.io/e2e-test-images/agnhost@sha256:0").known);
        // An unknown tag with a digest falls back to the repository.
        assert!(c.lookup("mcr.microsoft.com/windows/servercore/iis:nope@sha256:0").known);
        assert!(!c.lookup("mcr.microsoft.com/windows/servercore:nope").known);
    }

    #[test]
    fn topology_images_add_and_override() {
        let extra = vec![
            ImageSpec {
                name: "example.com/app".into(),
                platforms: windows(&[20348]),
                manifest_list: false,
                user: Some("ContainerUser".into()),
                long_running: true,
            },
            ImageSpec {
                name: "docker.io/library/nginx:1.27".into(),
                platforms: both(&[20348]),
                manifest_list: true,
                user: None,
                long_running: false,
            },
        ];
        let c = Catalogue::with_extra(&extra);
        let app = c.lookup("example.com/app:latest");
        assert!(app.known && !app.manifest_list && app.long_running);
        assert_eq!(app.user.as_deref(), Some("ContainerUser"));
        let nginx = c.lookup("nginx:1.27");
        assert_eq!(builds(&nginx, Os::Windows), vec![Some(20348)]);
        assert!(!nginx.long_running);
        // Other nginx tags keep the built-in pattern.
        assert!(c.lookup("nginx:1.26").long_running);
    }

    /// Tags MCR never published fail to pull ("not found"), whichever node asks; published
    /// tags, digests and revision tags of listed builds do not.
    #[rstest]
    #[case::nanoserver_ltsc2019("mcr.microsoft.com/windows/nanoserver:ltsc2019", false)]
    #[case::nanoserver_ltsc2016("mcr.microsoft.com/windows/nanoserver:ltsc2016", false)]
    #[case::servercore_sac2016("mcr.microsoft.com/windows/servercore:sac2016", false)]
    #[case::servercore_nope("mcr.microsoft.com/windows/servercore:nope", false)]
    #[case::nanoserver_1809("mcr.microsoft.com/windows/nanoserver:1809", true)]
    #[case::servercore_ltsc2019("mcr.microsoft.com/windows/servercore:ltsc2019", true)]
    #[case::servercore_ltsc2025("mcr.microsoft.com/windows/servercore:ltsc2025", true)]
    #[case::revision("mcr.microsoft.com/windows/nanoserver:10.0.20348.2762", true)]
    #[case::digest("mcr.microsoft.com/windows/nanoserver@sha256:0123", true)]
    #[case::other_repository("example.com/team/app:ltsc2019", true)]
    fn unpublished_tags(#[case] image: &str, #[case] published: bool) {
        assert_eq!(Catalogue::builtin().lookup(image).published, published, "{image}");
    }

    /// A mirror's copy keeps the repository path and is served as the original: the same
    /// platforms, manifest kind, user and entrypoint, and the same unpublished tags.
    #[rstest]
    #[case::agnhost(
        "harbor.corp/k8s/e2e-test-images/agnhost:2.53",
        "registry.k8s.io/e2e-test-images/agnhost:2.53"
    )]
    #[case::nanoserver(
        "harbor.corp/mcr/windows/nanoserver:ltsc2022",
        "mcr.microsoft.com/windows/nanoserver:ltsc2022"
    )]
    #[case::servercore_port(
        "harbor.corp:5000/windows/servercore:ltsc2025",
        "mcr.microsoft.com/windows/servercore:ltsc2025"
    )]
    #[case::one_prefix("mirror.local/k8s/pause:3.10", "registry.k8s.io/pause:3.10")]
    #[case::host_process(
        "harbor.corp/mcr/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
        "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
    )]
    #[case::hub_library("harbor.corp/hub/library/busybox:1.36", "busybox:1.36")]
    #[case::hub_plain("mirror.local/busybox:1.36", "busybox:1.36")]
    #[case::single_manifest(
        "harbor.corp/mcr/windows/servercore:10.0.17763.6414",
        "mcr.microsoft.com/windows/servercore:10.0.17763.6414"
    )]
    #[case::unpublished(
        "harbor.corp/mcr/windows/nanoserver:ltsc2019",
        "mcr.microsoft.com/windows/nanoserver:ltsc2019"
    )]
    fn mirrors_serve_the_original(#[case] mirror: &str, #[case] original: &str) {
        let c = Catalogue::builtin();
        let (copy, upstream) = (c.lookup(mirror), c.lookup(original));
        assert_eq!(copy.name, normalise(mirror));
        assert_eq!(
            ImageInfo {
                name: String::new(),
                ..copy
            },
            ImageInfo {
                name: String::new(),
                ..upstream
            },
            "{mirror}"
        );
    }

    /// Only a registry's copy is read as a mirror: a Docker Hub repository of the same last
    /// segment is its own image, and an unknown path stays unknown.
    #[rstest]
    #[case::hub_user("someone/agnhost:2.53")]
    #[case::unknown_path("harbor.corp/team/app:1.0")]
    #[case::unknown_tag("harbor.corp/mcr/windows/servercore:nope")]
    fn other_references_are_not_mirrors(#[case] image: &str) {
        assert!(!Catalogue::builtin().lookup(image).known, "{image}");
    }

    #[rstest]
    #[case("")]
    #[case(":")]
    #[case("@")]
    #[case("a:b:c@d@e")]
    #[case("/")]
    #[case("ünïcødé/ímage:tág")]
    fn garbage_does_not_panic(#[case] image: &str) {
        let c = Catalogue::builtin();
        let _ = c.lookup(image);
        let _ = fully_qualified(image);
    }
}
