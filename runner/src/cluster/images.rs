//! The fixture images per Windows build, from what upstream publishes: one row per build
//! (the tags `{{windows-tag}}` and `{{other-windows-tag}}` stand for, the image of the network
//! fixtures and the probe tools it carries) and every image reference the fixtures pull with
//! the Windows builds its publisher builds it for. Each row cites its source (ids of
//! docs/sources.md; docs/images.md has the table with the quotes). This is the one place these
//! facts live: the fixture stamping, the probe runner and `mixcheck images` read them here.

use mixcheck_reports::Os;

/// What the network fixtures (`netexec-server`, `netexec-client`, `affinity-backend`) run on a
/// node, and so which tools its probes have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkImage {
    /// `registry.k8s.io/e2e-test-images/agnhost`: `netexec` serves, `curl.exe` and
    /// `/agnhost connect` probe (AGN, AGNW).
    Agnhost,
    /// Windows Server Core of the node's build: a PowerShell `HttpListener` and `UdpClient` echo
    /// loop serve, Windows PowerShell 5.1 (`Invoke-RestMethod`, `Test-NetConnection`, a .NET
    /// `UdpClient`) and `ping.exe` probe — for builds agnhost publishes no variant for.
    ServerCorePowerShell,
}

/// One Windows build: the tags the fixtures' placeholders become and the network image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowsBuild {
    pub build: u32,
    pub release: &'static str,
    /// `mcr.microsoft.com/windows/nanoserver:{{windows-tag}}`.
    pub nanoserver: &'static str,
    /// `mcr.microsoft.com/windows/servercore:{{windows-tag}}`.
    pub servercore: &'static str,
    /// `{{other-windows-tag}}`: a Nano Server tag of a build this host cannot run with process
    /// isolation (VER-BUILD-MATCH: below 20348 only the host's own build; from 20348 the
    /// previous LTSC, 2022 at the oldest, up to the host's build).
    pub other: &'static str,
    pub network: NetworkImage,
    /// Where the tags and the choice of network image come from (docs/sources.md ids).
    pub source: &'static str,
}

/// The agnhost the fixtures pin.
pub const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";

/// The Windows builds of the documented eras (VER-OS-SUPPORTED), oldest first.
pub const WINDOWS_BUILDS: [WindowsBuild; 5] = [
    // Nano Server of 2016 was a semi-annual image and never had an LTSC tag: `sac2016`
    // (docker-library's note quoting Docker Hub microsoft/nanoserver; hcsshim's tests pick
    // nanoserver:sac2016 for RS1). Server Core's is ltsc2016 (MCRBLOG). No agnhost variant (AGN).
    WindowsBuild {
        build: 14393,
        release: "Windows Server 2016",
        nanoserver: "sac2016",
        servercore: "ltsc2016",
        other: "1809",
        network: NetworkImage::ServerCorePowerShell,
        source: "MCRBLOG, NANO2016, AGN",
    },
    // 1709 (MCRBLOG: servercore:1709 and nanoserver:1709 on MCR). No agnhost variant (AGN).
    WindowsBuild {
        build: 16299,
        release: "Windows Server, version 1709",
        nanoserver: "1709",
        servercore: "1709",
        other: "1809",
        network: NetworkImage::ServerCorePowerShell,
        source: "MCRBLOG, AGN",
    },
    // 2019: Nano Server is `1809` only — "Just like the Windows Server 2016 release, the
    // Windows Server Core container image is the only Windows base image in our Long-Term
    // Servicing Channel. For this image we also have an 'ltsc2019' tag" (MCRBLOG); there is no
    // nanoserver:ltsc2019. agnhost's `windows/amd64/1809` variant (AGN).
    WindowsBuild {
        build: 17763,
        release: "Windows Server 2019",
        nanoserver: "1809",
        servercore: "ltsc2019",
        other: "ltsc2022",
        network: NetworkImage::Agnhost,
        source: "MCRBLOG, AGN",
    },
    // 2022: ltsc2022 for both (MCRBASE); agnhost's `windows/amd64/ltsc2022` variant (AGN).
    WindowsBuild {
        build: 20348,
        release: "Windows Server 2022",
        nanoserver: "ltsc2022",
        servercore: "ltsc2022",
        other: "1809",
        network: NetworkImage::Agnhost,
        source: "MCRBASE, AGN",
    },
    // 2025: ltsc2025 for both (MCRBASE, WC572). agnhost has no ltsc2025 variant (AGN), and its
    // e2e busybox base failed StartContainer on Windows Server 2025 (CTRD11947), so the network
    // fixtures run Server Core ltsc2025 with PowerShell probes, as on 2016 and 1709.
    WindowsBuild {
        build: 26100,
        release: "Windows Server 2025",
        nanoserver: "ltsc2025",
        servercore: "ltsc2025",
        other: "1809",
        network: NetworkImage::ServerCorePowerShell,
        source: "MCRBASE, WC572, AGN, CTRD11947",
    },
];

/// The row for `build`: its own, else that of the newest documented build before it (the
/// oldest for builds before 14393) — a semi-annual build such as 18362 follows its LTSC.
pub fn row(build: u32) -> &'static WindowsBuild {
    WINDOWS_BUILDS
        .iter()
        .rev()
        .find(|r| r.build <= build)
        .unwrap_or(&WINDOWS_BUILDS[0])
}

/// The network fixtures' image on a node (`None` build: agnhost, the image of every current
/// build and of Linux).
pub fn network_image(os: Os, build: Option<u32>) -> NetworkImage {
    match (os, build) {
        (Os::Windows, Some(b)) => row(b).network,
        _ => NetworkImage::Agnhost,
    }
}

/// `{{windows-tag}}` in `image`: the node build's tag in that image's repository.
pub fn windows_tag_for(image: &str, build: u32) -> &'static str {
    let r = row(build);
    if image.to_ascii_lowercase().contains("/windows/servercore") {
        r.servercore
    } else {
        r.nanoserver
    }
}

/// `{{other-windows-tag}}` on a node of `build`.
pub fn other_windows_tag(build: u32) -> &'static str {
    row(build).other
}

/// Which Windows builds a published image has a variant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builds {
    /// One Windows entry without `os.version`: any build (HostProcess images).
    Any,
    /// The `os.version` builds of its manifest list.
    Only(&'static [u32]),
}

impl Builds {
    /// Whether the image has a variant for `build`.
    #[cfg(test)]
    pub fn covers(&self, build: u32) -> bool {
        match self {
            Self::Any => true,
            Self::Only(builds) => builds.contains(&build),
        }
    }
}

/// An image reference the fixtures pull, as its publisher builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    pub image: &'static str,
    pub windows: Builds,
    pub source: &'static str,
}

/// Every image reference the embedded fixtures pull, with its Windows variants.
pub const PUBLISHED: &[Published] = &[
    // BASEIMAGE: windows/amd64/1809 and windows/amd64/ltsc2022 only (read at 00238edf, the
    // alpine 3.21 version, as at f6fde3ba).
    Published {
        image: AGNHOST,
        windows: Builds::Only(&[17763, 20348]),
        source: "AGN",
    },
    // 3.6 added ltsc2022, 3.7 dropped the semi-annual builds; 3.10.2 adds ltsc2025 (PAUSE).
    Published {
        image: "registry.k8s.io/pause:3.10",
        windows: Builds::Only(&[17763, 20348]),
        source: "PAUSE",
    },
    Published {
        image: "registry.k8s.io/pause:3.10.2",
        windows: Builds::Only(&[17763, 20348, 26100]),
        source: "PAUSE",
    },
    Published {
        image: "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0",
        windows: Builds::Any,
        source: "WHPC",
    },
    Published {
        image: "mcr.microsoft.com/windows/nanoserver:sac2016",
        windows: Builds::Only(&[14393]),
        source: "NANO2016",
    },
    Published {
        image: "mcr.microsoft.com/windows/nanoserver:1709",
        windows: Builds::Only(&[16299]),
        source: "MCRBLOG",
    },
    Published {
        image: "mcr.microsoft.com/windows/nanoserver:1809",
        windows: Builds::Only(&[17763]),
        source: "MCRBLOG",
    },
    Published {
        image: "mcr.microsoft.com/windows/nanoserver:ltsc2022",
        windows: Builds::Only(&[20348]),
        source: "MCRBASE, WC572",
    },
    Published {
        image: "mcr.microsoft.com/windows/nanoserver:ltsc2025",
        windows: Builds::Only(&[26100]),
        source: "MCRBASE, WC572",
    },
    Published {
        image: "mcr.microsoft.com/windows/servercore:ltsc2016",
        windows: Builds::Only(&[14393]),
        source: "MCRBLOG",
    },
    Published {
        image: "mcr.microsoft.com/windows/servercore:1709",
        windows: Builds::Only(&[16299]),
        source: "MCRBLOG",
    },
    Published {
        image: "mcr.microsoft.com/windows/servercore:ltsc2019",
        windows: Builds::Only(&[17763]),
        source: "MCRBLOG",
    },
    Published {
        image: "mcr.microsoft.com/windows/servercore:ltsc2022",
        windows: Builds::Only(&[20348]),
        source: "MCRBASE",
    },
    Published {
        image: "mcr.microsoft.com/windows/servercore:ltsc2025",
        windows: Builds::Only(&[26100]),
        source: "MCRBASE",
    },
];

/// What upstream publishes under `image` (a reference as the fixtures write it, placeholders
/// filled), if the table knows it.
pub fn published(image: &str) -> Option<&'static Published> {
    PUBLISHED.iter().find(|p| p.image == image)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver";
    const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore";

    /// Both repositories' tags of a row.
    fn base_images(r: &WindowsBuild) -> [String; 2] {
        [
            format!("{NANOSERVER}:{}", r.nanoserver),
            format!("{SERVERCORE}:{}", r.servercore),
        ]
    }

    /// Each build's images: the base images of its own build exist with a variant for it, the
    /// "other" tag exists and has none, and the network image is agnhost exactly where agnhost
    /// publishes the build.
    #[rstest]
    #[case::ws2016(14393, "sac2016", "ltsc2016", NetworkImage::ServerCorePowerShell)]
    #[case::ws1709(16299, "1709", "1709", NetworkImage::ServerCorePowerShell)]
    #[case::ws2019(17763, "1809", "ltsc2019", NetworkImage::Agnhost)]
    #[case::ws2022(20348, "ltsc2022", "ltsc2022", NetworkImage::Agnhost)]
    #[case::ws2025(26100, "ltsc2025", "ltsc2025", NetworkImage::ServerCorePowerShell)]
    fn each_build_pulls_what_upstream_publishes_for_it(
        #[case] build: u32,
        #[case] nanoserver: &str,
        #[case] servercore: &str,
        #[case] network: NetworkImage,
    ) {
        let r = row(build);
        assert_eq!(r.build, build);
        assert_eq!(
            (r.nanoserver, r.servercore, r.network),
            (nanoserver, servercore, network)
        );
        assert!(!r.source.is_empty());
        for image in base_images(r) {
            let p = published(&image).unwrap_or_else(|| panic!("{image} is not in the table"));
            assert!(p.windows.covers(build), "{image} has no variant for {build}");
        }
        let other = format!("{NANOSERVER}:{}", r.other);
        let p = published(&other).unwrap_or_else(|| panic!("{other} is not in the table"));
        assert!(!p.windows.covers(build), "{other} must be a build {build} cannot run");
        let agnhost = published(AGNHOST).expect("agnhost");
        assert_eq!(agnhost.windows.covers(build), network == NetworkImage::Agnhost);
        assert_eq!(network_image(Os::Windows, Some(build)), network);
    }

    #[test]
    fn nano_server_2019_is_1809_never_ltsc2019() {
        assert_eq!(
            windows_tag_for("mcr.microsoft.com/windows/nanoserver:{{windows-tag}}", 17763),
            "1809"
        );
        assert_eq!(
            windows_tag_for("mcr.microsoft.com/windows/servercore:{{windows-tag}}", 17763),
            "ltsc2019"
        );
        assert!(PUBLISHED.iter().all(|p| !p.image.ends_with("nanoserver:ltsc2019")));
        assert!(WINDOWS_BUILDS.iter().all(|r| r.other != "ltsc2019"));
    }

    #[rstest]
    #[case::before_2016(10586, 14393)]
    #[case::sac_1903(18362, 17763)]
    #[case::after_2025(26200, 26100)]
    fn builds_between_rows_follow_the_previous_one(#[case] build: u32, #[case] row_build: u32) {
        assert_eq!(row(build).build, row_build);
    }

    #[test]
    fn linux_and_unknown_builds_get_agnhost() {
        assert_eq!(network_image(Os::Linux, None), NetworkImage::Agnhost);
        assert_eq!(network_image(Os::Windows, None), NetworkImage::Agnhost);
    }

    #[test]
    fn every_published_image_cites_a_source() {
        for p in PUBLISHED {
            assert!(!p.source.is_empty(), "{}", p.image);
        }
    }
}
