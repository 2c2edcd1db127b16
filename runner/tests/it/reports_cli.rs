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
/// timestamps, durations, attempt times, ephemeral client ports and pod addresses within a
/// node's range.
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
        // A settling flow's attempts are paced by the clock.
        (r" \(\d+ attempts over [^)]*\)", " (ATTEMPTS)"),
        // An ephemeral source port, as text and escaped in XML.
        (r":\d{4,5}(->|-&gt;)", ":PORT$1"),
        // A pod's address within its node's range depends on the order the node's pods start.
        (r"\b10\.244\.(\d+)\.\d+\b", "10.244.$1.HOST"),
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

/// junit.xml read by an independent consumer (junitparser, from PyPI): its test, failure,
/// error and skipped counts, as `tests failures errors skipped`, counted case by case.
fn junitparser_counts(path: &Path) -> [usize; 4] {
    const COUNT: &str = "
import sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
tests = failures = errors = skipped = 0
for suite in xml:
    for case in suite:
        tests += 1
        for result in case.result:
            if isinstance(result, Failure): failures += 1
            elif isinstance(result, Error): errors += 1
            elif isinstance(result, Skipped): skipped += 1
print(tests, failures, errors, skipped)
";
    let out = Command::new("python3")
        .args(["-c", COUNT])
        .arg(path)
        .output()
        .expect("python3");
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "junitparser could not read {}: {stderr}\n(install it with `pip install junitparser`; .ci/run does)",
        path.display()
    );
    let n: Vec<usize> = stdout.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    n.try_into().unwrap_or_else(|n| panic!("junitparser printed {n:?}"))
}

/// The same counts from results.json (a non-strict run): fail → failure, error → error,
/// not-applicable and indeterminate → skipped, an aborted run → one failed case.
fn report_counts(results: &serde_json::Value) -> [usize; 4] {
    let cells = results["cells"].as_array().cloned().unwrap_or_default();
    let count = |verdicts: &[&str]| {
        cells
            .iter()
            .filter(|c| verdicts.iter().any(|v| c["verdict"] == *v))
            .count()
    };
    if results["aborted"].is_object() && cells.is_empty() {
        return [1, 1, 0, 0];
    }
    [
        cells.len(),
        count(&["fail"]),
        count(&["error"]),
        count(&["not-applicable", "indeterminate"]),
    ]
}

/// An independent JUnit consumer counts what the RunReport says, for a fault-injected run
/// (failures, errors and skips), for the same run with control bytes, ANSI escapes and
/// replacement characters in what a probe printed, and for an aborted run.
#[test]
#[ignore = "needs junitparser (pip install junitparser)"]
fn junitparser_counts_what_the_run_report_says() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--report-dir", "faulted"])
        .args(["--fault", "win2022-1:pause-image-wrong-build"])
        .args(["--fault", "win2019-1:mac-spoofing-disabled"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    let faulted = dir.path().join("faulted");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(faulted.join("results.json")).expect("results.json"))
            .expect("json");
    let want = report_counts(&results);
    assert!(want.iter().all(|n| *n > 0), "every kind of case is present: {want:?}");
    assert_eq!(junitparser_counts(&faulted.join("junit.xml")), want);

    // What containers print goes into the XML: make it as hostile as it gets, render again.
    let mut hostile = results.clone();
    let noise = "\u{1}\u{7}\u{8}\u{b}\u{c}\u{1b}[31mred\u{1b}[0m \u{fffd}\u{fffe}\u{ffff} ]]> <x> &amp;";
    for cell in hostile["cells"].as_array_mut().into_iter().flatten() {
        if let Some(summary) = cell["observed"]["summary"].as_str() {
            cell["observed"]["summary"] = serde_json::json!(format!("{summary} {noise}"));
        }
    }
    std::fs::write(dir.path().join("hostile.json"), hostile.to_string()).expect("write");
    let out = mixcheck(dir.path())
        .args(["report", "--from", "hostile.json", "--report-dir", "hostile"])
        .output()
        .expect("report");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    assert_eq!(junitparser_counts(&dir.path().join("hostile/junit.xml")), want);

    // An aborted run still gives CI one failed case.
    let out = mixcheck(dir.path())
        .args([
            "run",
            "--quiet",
            "--kubeconfig",
            "does-not-exist.yaml",
            "--report-dir",
            "aborted",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out).1);
    let aborted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("aborted/results.json")).expect("results.json"))
            .expect("json");
    assert!(
        aborted["aborted"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("does-not-exist.yaml"))
    );
    assert_eq!(junitparser_counts(&dir.path().join("aborted/junit.xml")), [1, 1, 0, 0]);
}

/// Debian's Chromium (or `$CHROMIUM`), headless, with a fresh profile and no background
/// connections; the test fails, saying how to install it, when there is none.
fn chromium(profile: &Path) -> Command {
    let binary = std::env::var_os("CHROMIUM").map(std::path::PathBuf::from).or_else(|| {
        ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|name| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|dir| dir.join(name))
                        .find(|p| p.is_file())
                })
            })
    });
    let Some(binary) = binary else {
        panic!("Chromium is not on PATH: install Debian's `chromium` package (.ci/run does) or set CHROMIUM");
    };
    let mut cmd = Command::new(binary);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Runs a browser command with a deadline (a hung browser must not hang the suite), reading
/// its output as it comes (a page's DOM is larger than a pipe holds).
fn within(mut cmd: Command, limit: std::time::Duration) -> Output {
    use std::io::Read as _;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start chromium");
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    }
}

/// The cell rows of a page as Chromium rendered it: (verdict, suite, pools, cell id, hidden).
fn rendered_rows(dom: &str) -> Vec<(String, String, String, String, bool)> {
    let row = regex::Regex::new(
        r#"<tr class="([^"]*)" data-verdict="([^"]*)" data-suite="([^"]*)" data-pools="([^"]*)"(?: data-[a-z]+="[^"]*")*><td>[^<]*</td><td><code>([^<]*)</code>"#,
    )
    .expect("regex");
    row.captures_iter(dom)
        .map(|c| {
            let hidden = c[1].split_whitespace().any(|k| k == "hidden");
            (c[2].into(), c[3].into(), c[4].into(), c[5].into(), hidden)
        })
        .collect()
}

/// Which rows a filter shows, by verdict, suite and pools.
type ShownBy = dyn Fn(&str, &str, &str) -> bool;

/// report.html of a fault-injected run, rendered by headless Chromium: the flow matrix and
/// every failing cell are on the page; filters given in the address hide exactly the rows they
/// should (the page's script ran); a screenshot lands in the report folder for a person to look
/// at (under `target/tmp`, so it survives the test).
#[test]
#[ignore = "needs chromium (apt-get install chromium)"]
fn report_html_renders_in_chromium_with_working_filters() {
    let reports = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-html-in-chromium");
    let _ = std::fs::remove_dir_all(&reports);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args([
            "run",
            "--quiet",
            "--fault",
            "win2022-1:mac-spoofing-disabled",
            "--report-dir",
        ])
        .arg(&reports)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out).1);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("results.json")).expect("results.json"))
            .expect("json");
    let cells = results["cells"].as_array().cloned().unwrap_or_default();
    let failing: Vec<String> = cells
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .filter_map(|c| c["id"].as_str().map(String::from))
        .collect();
    assert!(!failing.is_empty(), "the fault makes cells fail");
    let page = format!("file://{}", reports.join("report.html").display());
    let dom = |fragment: &str| {
        let out = within(
            {
                let mut cmd = chromium(&dir.path().join("profile"));
                cmd.arg("--dump-dom").arg(format!("{page}{fragment}"));
                cmd
            },
            std::time::Duration::from_secs(60),
        );
        assert!(out.status.success(), "chromium: {}", text(&out).1);
        text(&out).0
    };

    // Unfiltered: the matrix, every cell, every failure visible.
    let all = dom("");
    assert!(
        all.contains("<table id=\"matrix\">") && all.contains("windows-20348"),
        "no flow matrix"
    );
    let rows = rendered_rows(&all);
    assert_eq!(rows.len(), cells.len(), "one row per cell");
    for id in &failing {
        assert!(
            rows.iter()
                .any(|(v, _, _, row_id, hidden)| v == "fail" && row_id == id && !hidden),
            "failing cell {id} is not shown"
        );
    }
    assert!(
        all.contains(&format!("{0} of {0} cells shown", cells.len())),
        "the script did not run"
    );

    // Filters from the address: verdict, suite and OS pool, alone and together.
    let cases: [(&str, &ShownBy); 3] = [
        ("#verdict=fail", &|v, _, _| v == "fail"),
        ("#suite=dns", &|_, s, _| s == "dns"),
        ("#verdict=fail,pass&pool=linux", &|v, _, p| {
            (v == "fail" || v == "pass") && p.split(' ').any(|x| x == "linux")
        }),
    ];
    for (fragment, shown) in cases {
        let rows = rendered_rows(&dom(fragment));
        assert_eq!(rows.len(), cells.len(), "{fragment}: one row per cell");
        let visible = rows.iter().filter(|r| !r.4).count();
        assert!(
            visible > 0 && visible < rows.len(),
            "{fragment}: {visible} of {} shown",
            rows.len()
        );
        for (v, s, p, id, hidden) in &rows {
            assert_eq!(!hidden, shown(v, s, p), "{fragment}: row {id} ({v}, {s}, {p})");
        }
    }

    // A square of the flow matrix lists the cells of its pair; a cause's count, the cells it
    // explains.
    let flow = cells
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .find_map(|c| {
            Some((
                c["coordinates"]["source"].as_str()?,
                c["coordinates"]["destination"].as_str()?,
            ))
        })
        .expect("a failing flow");
    let of_pair = cells
        .iter()
        .filter(|c| c["coordinates"]["source"] == flow.0 && c["coordinates"]["destination"] == flow.1)
        .count();
    let explained = results["diagnosis"]["causes"][0]["explains"]
        .as_array()
        .map_or(0, Vec::len);
    for (fragment, want) in [
        (format!("#from={}&to={}", flow.0, flow.1), of_pair),
        ("#explained-by=1".to_string(), explained),
    ] {
        let rows = rendered_rows(&dom(&fragment));
        let visible = rows.iter().filter(|r| !r.4).count();
        assert!(want > 0, "{fragment}: nothing to list");
        assert_eq!(visible, want, "{fragment}: the rows shown");
    }

    // The page fits a 1,280 px window with every <details> open: nothing wider than the view.
    let probe = dir.path().join("width.html");
    let html = std::fs::read_to_string(reports.join("report.html")).expect("report.html");
    let measure = "<script>document.querySelectorAll('details').forEach(function(d){d.open=true});\
document.title='width '+document.documentElement.scrollWidth+' of '+document.documentElement.clientWidth</script></body>";
    std::fs::write(&probe, html.replacen("</body>", measure, 1)).expect("write the probe page");
    let out = within(
        {
            let mut cmd = chromium(&dir.path().join("profile"));
            cmd.arg("--window-size=1280,2000")
                .arg("--dump-dom")
                .arg(format!("file://{}", probe.display()));
            cmd
        },
        std::time::Duration::from_secs(60),
    );
    let dom = text(&out).0;
    let title = dom
        .split_once("<title>width ")
        .and_then(|(_, rest)| rest.split_once("</title>"))
        .map(|(t, _)| t.to_string())
        .unwrap_or_else(|| panic!("the probe did not run: {}", &dom[..dom.len().min(500)]));
    let widths: Vec<u32> = title.split(" of ").filter_map(|w| w.parse().ok()).collect();
    assert!(
        widths.len() == 2 && widths[0] <= widths[1],
        "the page is wider than a 1,280 px window: {title}"
    );

    // A screenshot of the failures for a person, next to the reports.
    let shot = reports.join("report.png");
    let out = within(
        {
            let mut cmd = chromium(&dir.path().join("profile"));
            cmd.arg(format!("--screenshot={}", shot.display()))
                .arg("--window-size=1280,2000")
                .arg(format!("{page}#verdict=fail"));
            cmd
        },
        std::time::Duration::from_secs(60),
    );
    assert!(out.status.success(), "chromium: {}", text(&out).1);
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "not a screenshot"
    );
}

/// A run with one fault, every suite, at the default verbosity: the terminal leads with the
/// cause, says its remedy once, and fits a screen or two (≤ 80 lines); the totals and the gate
/// end it. Faults on other nodes and pools give the same shape.
#[rstest::rstest]
#[case::kube_proxy_on_2022("win2022-1:kube-proxy-stopped")]
#[case::mac_spoofing_on_2022("win2022-1:mac-spoofing-disabled")]
#[case::flanneld_on_2019("win2019-1:flannel-subnet-env-missing")]
fn a_one_fault_run_leads_with_its_cause_on_one_screen(#[case] fault: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--fault", fault])
        .output()
        .expect("run");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() <= 80, "{} lines:\n{stdout}", lines.len());
    let first_section = lines
        .iter()
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .copied()
        .unwrap_or_default();
    assert!(first_section.starts_with("LIKELY CAUSES ("), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json"),
    )
    .expect("json");
    let remedy = report["diagnosis"]["causes"][0]["remedy"]
        .as_str()
        .expect("a cause with a remedy");
    assert_eq!(stdout.matches(remedy).count(), 1, "the cause's remedy once:\n{stdout}");
    // A rule's remedy is said once, however many of its cells fail.
    for remedy in stdout.lines().filter_map(|l| l.trim().strip_prefix("remedy:")) {
        assert_eq!(stdout.matches(remedy.trim()).count(), 1, "{remedy}:\n{stdout}");
    }
    assert!(lines.iter().rev().take(3).any(|l| *l == "gate: FAILED"), "{stdout}");
    assert!(stdout.contains("\ntotals: "), "{stdout}");
    // The pool table and the node table agree: a pool's failing cells by their coordinates are
    // the failing cells observed on that pool's nodes.
    let pool_of = |n: &serde_json::Value| match n["os"].as_str() {
        Some("windows") => format!("windows-{}", n["build"]),
        _ => "linux".to_string(),
    };
    let failing: Vec<&serde_json::Value> = report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| matches!(c["verdict"].as_str(), Some("fail" | "error")))
        .collect();
    for pool in ["linux", "windows-17763", "windows-20348"] {
        let by_coordinates = failing
            .iter()
            .filter(|c| c["coordinates"]["source"] == pool || c["coordinates"]["destination"] == pool)
            .count();
        let on_nodes = failing
            .iter()
            .filter(|c| {
                let on = if c["observed"]["on"].as_array().is_some_and(|a| !a.is_empty()) {
                    &c["observed"]["on"]
                } else {
                    &c["nodes"]
                };
                on.as_array().into_iter().flatten().any(|n| pool_of(n) == pool)
            })
            .count();
        assert_eq!(by_coordinates, on_nodes, "{pool}: the pool and node tables disagree");
    }
}

/// No report format shows Rust's Debug forms (`Some(…)`, escaped backslashes in Windows paths):
/// a run whose evidence is full of Windows paths and exit codes, in every format.
#[test]
fn no_format_shows_debug_forms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--details", "--fault", "win2019-1:flanneld-waiting"])
        .output()
        .expect("run");
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let reports = dir.path().join("mixcheck-report");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("results.json")).expect("results.json"))
            .expect("json");
    // results.json escapes backslashes as JSON must: judge its strings, decoded.
    let mut strings = Vec::new();
    fn collect(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| collect(x, out)),
            _ => {}
        }
    }
    collect(&json, &mut strings);
    let formats = [
        ("terminal", stdout.clone()),
        ("results.json", strings.join("\n")),
        (
            "junit.xml",
            std::fs::read_to_string(reports.join("junit.xml")).expect("junit"),
        ),
        (
            "report.md",
            std::fs::read_to_string(reports.join("report.md")).expect("md"),
        ),
        (
            "report.html",
            std::fs::read_to_string(reports.join("report.html")).expect("html"),
        ),
    ];
    let doubled = regex::Regex::new(r"[A-Za-z]:\\\\|\\\\[A-Za-z]").expect("pattern");
    assert!(
        formats[1].1.contains(r"C:\run\flannel\subnet.env"),
        "the run has Windows paths to show"
    );
    for (name, text) in &formats {
        for line in text.lines() {
            assert!(!line.contains("Some("), "{name}: {line}");
            assert!(!line.contains("None)"), "{name}: {line}");
            // A structured log line quotes its values (`err="… C:\\run\\…"`) as the agent wrote
            // it: that is the evidence verbatim, not a Debug form of ours.
            // An excerpt of such a line may start after its `err=` (a long line is cut around
            // what matched); its `pod="…"` key still marks it.
            let own_text = !line.contains("err=") && !line.contains("\" pod=\"");
            assert!(
                !own_text || !doubled.is_match(line),
                "{name}: a doubled backslash: {line}"
            );
        }
    }
}
