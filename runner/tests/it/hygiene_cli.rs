//! The command line's manners: a reader that goes away ends every command quietly, a usage or
//! kubeconfig error is one line with no empty report after it, `lint` on a folder without files
//! says so, and `mixcheck images` lists each image once per OS with the OS right.

use std::io::Read as _;
use std::process::Stdio;

use crate::cli::{mixcheck, text};

/// The read end of standard output closed before the command writes (`… | head -0`): the
/// command ends as it would have, with no panic and nothing on standard error.
#[rstest::rstest]
#[case::images(&["images"])]
#[case::images_by_fixture(&["images", "--by-fixture"])]
#[case::list(&["list"])]
#[case::list_uncovered(&["list", "--uncovered"])]
#[case::profiles(&["sim", "profiles"])]
#[case::faults(&["sim", "faults"])]
#[case::lint(&["lint"])]
fn a_closed_pipe_ends_the_command_quietly(#[case] args: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mixcheck(dir.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{args:?}: {stderr}"
    );
}

/// `mixcheck images | head -1` as a shell runs it.
#[test]
fn images_into_head_exits_0() {
    let out = std::process::Command::new("bash")
        .args(["-o", "pipefail", "-c"])
        .arg(format!("{} images | head -1", env!("CARGO_BIN_EXE_mixcheck")))
        .output()
        .expect("bash");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("OS "),
        "{}",
        text(&out)
    );
}

/// A kubeconfig that is not there: one line on standard error naming it once, nothing on
/// standard output (no report of a run that never started), exit 2.
#[test]
fn a_missing_kubeconfig_is_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--kubeconfig", "/nonexistent/kubeconfig"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "no report on standard output");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("/nonexistent/kubeconfig").count(), 1, "{stderr}");
    assert!(!stderr.contains("'\""), "no quoted quotes: {stderr}");
    assert!(stderr.contains("no such file"), "{stderr}");
}

/// `lint` of a folder that holds no suite (or fixture) files is an error, not "ok".
#[rstest::rstest]
#[case::suites("--suites", "no suite files")]
#[case::fixtures("--fixtures", "no fixture files")]
fn lint_of_an_empty_folder_says_so(#[case] flag: &str, #[case] says: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("empty")).expect("mkdir");
    std::fs::write(dir.path().join("empty/notes.txt"), "not a suite").expect("write");
    let out = mixcheck(dir.path())
        .args(["lint", flag, "empty"])
        .output()
        .expect("lint");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(says), "{}", text(&out));
    assert!(!text(&out).contains("ok:"), "{}", text(&out));
}

/// `images` lists each image once per OS, with the image's own OS (a Nano Server container in
/// the mixed-OS test pod is a Windows image), and `--by-fixture` one row per image, build and
/// fixture.
#[test]
fn images_are_listed_once_per_os() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path()).arg("images").output().expect("images");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<(String, String)> = stdout
        .lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0].to_string(), cols[2].to_string())
        })
        .collect();
    let mut distinct = rows.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        rows.len(),
        "an image listed twice for one OS:\n{stdout}"
    );
    for (os, image) in &rows {
        if image.contains("mcr.microsoft.com/windows/") {
            assert_eq!(os, "windows", "{image} under {os}");
        }
    }
    assert!(
        rows.iter().any(|(os, i)| os == "linux" && i.contains("agnhost")),
        "{stdout}"
    );
    assert!(
        rows.iter().any(|(os, i)| os == "windows" && i.contains("agnhost")),
        "{stdout}"
    );
    let by_fixture = mixcheck(dir.path())
        .args(["images", "--by-fixture"])
        .output()
        .expect("images");
    let detailed = String::from_utf8_lossy(&by_fixture.stdout).lines().count();
    assert!(detailed > rows.len() + 1, "--by-fixture lists more rows ({detailed})");
}

/// `images --build B` lists what a node of build B pulls, each with the image table's source
/// (docs/images.md): Windows Server 2019 pulls Nano Server `1809` (never `ltsc2019`, which MCR
/// never published) and agnhost; Windows Server 2025, for which agnhost publishes no variant,
/// pulls Server Core ltsc2025 instead.
#[rstest::rstest]
#[case::ws2016("14393", &["nanoserver:sac2016", "servercore:ltsc2016"], &["agnhost"])]
#[case::ws2019("17763", &["nanoserver:1809", "agnhost:2.53"], &["ltsc2019", "servercore"])]
#[case::ws2022("10.0.20348", &["nanoserver:ltsc2022", "agnhost:2.53"], &["ltsc2019", "servercore"])]
#[case::ws2025("26100", &["nanoserver:ltsc2025", "servercore:ltsc2025"], &["agnhost", "ltsc2019"])]
fn images_per_build_name_their_source(#[case] build: &str, #[case] pulled: &[&str], #[case] not: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["images", "--build", build])
        .output()
        .expect("images");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert!(!rows.is_empty(), "{stdout}");
    for row in &rows {
        assert!(
            row.starts_with("windows"),
            "only Windows images for a Windows build: {row}"
        );
        assert!(!row.contains("(not in the image table)"), "{row}");
    }
    for image in pulled {
        assert!(
            rows.iter().any(|r| r.contains(image)),
            "{build}: {image} missing:\n{stdout}"
        );
    }
    for image in not {
        assert!(
            !rows.iter().any(|r| r.contains(image)),
            "{build}: {image} listed:\n{stdout}"
        );
    }
    let bad = mixcheck(dir.path())
        .args(["images", "--build", "ws2025"])
        .output()
        .expect("images");
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}
