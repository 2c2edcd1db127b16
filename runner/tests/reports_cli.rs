//! The report formats from the command line: every run writes results.json, junit.xml and
//! report.md into the report folder (and appends the Markdown to `GITHUB_STEP_SUMMARY`), `-o`
//! picks what goes to standard output, and `mixcheck report --from` renders a saved run again
//! without a cluster, with the run's gate as exit code.

use std::path::Path;
use std::process::{Command, Output};

fn mixcheck(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mixcheck"));
    cmd.current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_run_writes_every_format_and_report_renders_them_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step-summary.md");
    let out = mixcheck(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["run", "--quiet", "--suite", "dns", "-o", "junit"])
        .output()
        .expect("run");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let reports = dir.path().join("mixcheck-report");
    let junit = std::fs::read_to_string(reports.join("junit.xml")).expect("junit.xml");
    assert_eq!(stdout, junit, "-o junit prints what junit.xml holds");
    assert!(
        junit.starts_with("<?xml") && junit.contains("<testsuite name=\"dns\""),
        "{junit}"
    );
    assert!(junit.contains("name=\"dns/DNS-FQDN["), "cases are named by cell id");
    let html = std::fs::read_to_string(reports.join("report.html")).expect("report.html");
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("dns/DNS-FQDN["),
        "{html}"
    );
    let md = std::fs::read_to_string(reports.join("report.md")).expect("report.md");
    assert!(md.starts_with("## mixcheck: ✅ gate passed"), "{md}");
    assert_eq!(std::fs::read_to_string(&summary).expect("job summary"), md);

    // Again from results.json, without a cluster.
    let from = reports.join("results.json");
    for (format, marker) in [
        ("table", "gate: passed"),
        ("json", "\"schema_version\""),
        ("junit", "<testsuites"),
        ("markdown", "## mixcheck"),
    ] {
        let again = mixcheck(dir.path())
            .args(["report", "--from"])
            .arg(&from)
            .args(["-o", format])
            .output()
            .expect("report");
        let (stdout, stderr) = text(&again);
        assert_eq!(again.status.code(), Some(0), "{format}: {stderr}");
        assert!(stdout.contains(marker), "{format}: {stdout}");
    }
    let again = mixcheck(dir.path())
        .args(["report", "--from"])
        .arg(&from)
        .args(["-o", "junit"])
        .output()
        .expect("report");
    assert_eq!(text(&again).0, junit, "the same run renders the same JUnit");
}

#[test]
fn report_from_a_failed_run_exits_1_and_from_a_bad_file_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args([
            "run",
            "--quiet",
            "--suite",
            "network-flows",
            "--check",
            "pod-ip-same-node",
        ])
        .args([
            "--fault",
            "win2022-1:mac-spoofing-disabled",
            "--check",
            "pod-ip-cross-node",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    let from = dir.path().join("mixcheck-report/results.json");
    let again = mixcheck(dir.path())
        .args(["report", "--from"])
        .arg(&from)
        .args(["-o", "markdown"])
        .output()
        .expect("report");
    let (stdout, _) = text(&again);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stdout.contains("### Failures") && stdout.contains("MacAddressSpoofing"),
        "{stdout}"
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 1,\n  \"cells\": [").expect("write");
    let out = mixcheck(dir.path())
        .args(["report", "--from"])
        .arg(&bad)
        .output()
        .expect("report");
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.json"), "{stderr}");
}

fn check_jsonschema() -> Command {
    let probe = Command::new("check-jsonschema").arg("--version").output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "check-jsonschema is not on PATH: install it with `pip install check-jsonschema` (.ci/run does)"
    );
    let mut cmd = Command::new("check-jsonschema");
    cmd.arg("--schemafile").arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../reports/schema/results.schema.json"
    ));
    cmd
}

/// results.json of real runs — passing, fault-injected, aborted — validates against the
/// documented schema, and the schema rejects what it must.
#[test]
#[ignore = "needs check-jsonschema (pip install check-jsonschema)"]
fn results_json_follows_its_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runs: [(&str, &[&str]); 3] = [
        ("passing", &["run", "--quiet"]),
        (
            "faulted",
            &["run", "--quiet", "--fault", "win2022-1:pause-image-wrong-build"],
        ),
        ("aborted", &["run", "--quiet", "--kubeconfig", "does-not-exist.yaml"]),
    ];
    for (name, args) in runs {
        let out_dir = dir.path().join(name);
        let out = mixcheck(dir.path())
            .args(args)
            .arg("--report-dir")
            .arg(&out_dir)
            .output()
            .expect("run");
        assert!(out.status.code().is_some(), "{name}: {}", text(&out).1);
        let check = check_jsonschema()
            .arg(out_dir.join("results.json"))
            .output()
            .expect("check-jsonschema");
        assert!(check.status.success(), "{name}: {}\n{}", text(&check).0, text(&check).1);
    }
    // A verdict the schema does not know is refused.
    let good = std::fs::read_to_string(dir.path().join("faulted/results.json")).expect("read");
    let bad = good.replacen("\"verdict\": \"error\"", "\"verdict\": \"maybe\"", 1);
    assert_ne!(good, bad, "the faulted run has an error cell to alter");
    let bad_path = dir.path().join("bad.json");
    std::fs::write(&bad_path, bad).expect("write");
    let check = check_jsonschema().arg(&bad_path).output().expect("check-jsonschema");
    assert!(!check.status.success(), "{}", text(&check).0);
}

/// Run-specific text a snapshot must not pin: run ids (and the namespace named after them),
/// timestamps, durations and ephemeral client ports.
fn normalise(text: &str) -> String {
    let rules = [
        (r"mixcheck-[0-9a-f]{8}", "mixcheck-RUNID"),
        (r"run [0-9a-f]{8}", "run RUNID"),
        (
            r#""mixcheck.run-id" value="[0-9a-f]{8}""#,
            r#""mixcheck.run-id" value="RUNID""#,
        ),
        (
            r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "TIMESTAMP",
        ),
        (r#"time="[0-9.]+""#, r#"time="T""#),
        (r"wall time [0-9.]+ (ms|s)", "wall time T"),
        (r":\d{4,5}->", ":PORT->"),
    ];
    rules.iter().fold(text.to_string(), |t, (re, with)| {
        regex::Regex::new(re)
            .expect("pattern")
            .replace_all(&t, *with)
            .into_owned()
    })
}

/// Reports of a fault-injected bundled run, pinned after normalising what differs per run
/// (`UPDATE_SNAPSHOTS=1` rewrites them): MAC spoofing off on the Windows Server 2022 node.
#[test]
fn a_fault_injected_run_renders_as_pinned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--fault", "win2022-1:mac-spoofing-disabled"])
        .args(["--check", "pod-ip-cross-node", "--check", "hybrid-linux-windows"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    let reports = dir.path().join("mixcheck-report");
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    for file in ["report.md", "junit.xml"] {
        let rendered = normalise(&std::fs::read_to_string(reports.join(file)).expect("report"));
        let pinned_path = snapshots.join(format!("mac-spoofing.{file}"));
        if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
            std::fs::create_dir_all(&snapshots).expect("snapshot dir");
            std::fs::write(&pinned_path, &rendered).expect("write snapshot");
            continue;
        }
        let pinned = std::fs::read_to_string(&pinned_path)
            .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", pinned_path.display()));
        if let Some((n, (a, b))) = pinned
            .lines()
            .zip(rendered.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
        {
            panic!(
                "{file} differs from its snapshot at line {}:\n  pinned:   {a}\n  rendered: {b}",
                n + 1
            );
        }
        assert_eq!(pinned.lines().count(), rendered.lines().count(), "{file}: line count");
    }
}

/// A child process with standard output and error on a new pseudo-terminal (120×40), and all
/// it wrote there.
#[cfg(unix)]
fn on_a_terminal(mut cmd: Command) -> (Option<i32>, Vec<u8>) {
    use std::io::Read as _;
    use std::os::unix::ffi::OsStrExt as _;
    use std::process::Stdio;

    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).expect("openpt");
    grantpt(&master).expect("grantpt");
    unlockpt(&master).expect("unlockpt");
    let name = ptsname(&master, Vec::new()).expect("ptsname");
    let size = rustix::termios::Winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&master, size).expect("window size");
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(std::ffi::OsStr::from_bytes(name.as_bytes()))
        .expect("open the terminal side");
    cmd.stdin(Stdio::null())
        .stdout(terminal.try_clone().expect("dup"))
        .stderr(terminal)
        .env("TERM", "xterm-256color");
    let mut child = cmd.spawn().expect("spawn on the terminal");
    // Only the child holds the terminal side now: reading ends (EIO) when it exits.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut master = std::fs::File::from(master);
        let mut seen = Vec::new();
        let mut buf = [0_u8; 8192];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        seen
    });
    let status = child.wait().expect("wait");
    (status.code(), reader.join().expect("reader"))
}

/// The escape sequences in some output, by kind: SGR (colour and style, `ESC[…m`) and the rest.
fn escapes(bytes: &[u8]) -> (usize, usize) {
    let sequences = regex::bytes::Regex::new(r"\x1b\[[0-9;?]*([A-Za-z])").expect("regex");
    let (mut sgr, mut other) = (0, 0);
    for c in sequences.captures_iter(bytes) {
        if &c[1] == b"m" {
            sgr += 1;
        } else {
            other += 1;
        }
    }
    // A lone ESC that is not a CSI sequence counts as well.
    let lone = bytes.iter().filter(|b| **b == 0x1b).count() - (sgr + other);
    (sgr, other + lone)
}

/// The live display (deploy, wait and probe lines) is drawn on a terminal only; off one the
/// phases are plain lines. `NO_COLOR` removes every colour and style escape (the live lines
/// keep only their cursor movement), and with `--quiet` as well nothing but text is written.
#[cfg(unix)]
#[rstest::rstest]
#[case::terminal(true, false, false)]
#[case::terminal_no_color(true, true, false)]
#[case::terminal_no_color_quiet(true, true, true)]
#[case::pipe(false, false, false)]
fn the_progress_display_is_for_terminals_and_no_color_removes_the_escapes(
    #[case] terminal: bool,
    #[case] no_color: bool,
    #[case] quiet: bool,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = mixcheck(dir.path());
    cmd.args(["run", "--suite", "dns", "--suite", "network-flows", "-o", "table"]);
    if quiet {
        cmd.arg("--quiet");
    }
    cmd.env_remove("NO_COLOR");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let (code, seen) = if terminal {
        on_a_terminal(cmd)
    } else {
        let out = cmd.output().expect("run");
        let mut both = out.stdout.clone();
        both.extend_from_slice(&out.stderr);
        (out.status.code(), both)
    };
    let text = String::from_utf8_lossy(&seen);
    assert_eq!(code, Some(0), "{text}");
    // The summary is there in every case.
    assert!(text.contains("as documented"), "{text}");
    let live = ["fixture objects applied", "fixture pods settled", "cells judged"];
    let (sgr, cursor) = escapes(&seen);
    match (terminal, no_color, quiet) {
        (true, false, _) => {
            for line in live {
                assert!(text.contains(line), "the live display lacks {line:?}: {text}");
            }
            assert!(sgr > 0, "a terminal gets colours");
            assert!(cursor > 0, "the live lines move the cursor");
        }
        (true, true, false) => {
            for line in live {
                assert!(text.contains(line), "the live display lacks {line:?}: {text}");
            }
            assert_eq!(sgr, 0, "NO_COLOR leaves a colour escape: {text:?}");
        }
        (true, true, true) => {
            assert!(live.iter().all(|l| !text.contains(l)), "--quiet draws no live lines");
            assert_eq!((sgr, cursor), (0, 0), "{text:?}");
        }
        (false, ..) => {
            assert!(
                live.iter().all(|l| !text.contains(l)),
                "no live lines off a terminal: {text}"
            );
            assert!(text.contains("Probing "), "the plain phase lines: {text}");
            assert_eq!((sgr, cursor), (0, 0), "{text:?}");
        }
    }
}
