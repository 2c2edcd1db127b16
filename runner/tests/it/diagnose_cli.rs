//! Triage from the command line: a fault-injected run carries its diagnosis in results.json;
//! `mixcheck diagnose --from` reruns the inference offline and gets the same causes, also with a
//! cause catalogue of one's own (`--causes`); a malformed catalogue is refused with
//! file:line:column (exit 2), by `lint` as by `diagnose`; `--bundle` packs the run for a support
//! ticket without any Secret value.

use serde_json::Value;

use crate::cli::{mixcheck, text};

fn cause_ids(diagnosis: &Value) -> Vec<String> {
    diagnosis["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn diagnose_from_results_json_reruns_the_inference_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--suite", "dns", "--suite", "network-flows"])
        .args(["--fault", "win2022-1:kube-proxy-stopped", "-o", "json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let from = dir.path().join("mixcheck-report/results.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&from).expect("results.json")).expect("json");
    let diagnosed = cause_ids(&saved["diagnosis"]);
    assert_eq!(
        diagnosed.first().map(String::as_str),
        Some("kube-proxy-stopped"),
        "{diagnosed:?}"
    );
    // The evidence that decided it (kube-proxy's pod not running) was gathered and kept.
    let evidence = saved["diagnosis"]["evidence"].to_string();
    assert!(evidence.contains("kube-proxy"), "{evidence}");

    let again = mixcheck(dir.path())
        .args(["diagnose", "--from"])
        .arg(&from)
        .args(["-o", "json"])
        .output()
        .expect("diagnose");
    assert_eq!(again.status.code(), Some(1), "the run's gate: {}", text(&again));
    let offline: Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(offline["diagnosis"], saved["diagnosis"], "the same diagnosis offline");

    // A catalogue of one's own: without kube-proxy-stopped, what is left stays unexplained or
    // goes to another cause, never to the removed one.
    let own = dir.path().join("causes.yaml");
    let embedded =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../suites/causes.yaml")).expect("causes");
    let start = embedded.find("  - id: kube-proxy-stopped").expect("entry");
    let end = start + embedded[start..].find("\n\n").expect("entry end");
    std::fs::write(&own, format!("{}{}", &embedded[..start], &embedded[end + 2..])).expect("write");
    let without = mixcheck(dir.path())
        .args(["diagnose", "--from"])
        .arg(&from)
        .arg("--causes")
        .arg(&own)
        .args(["-o", "json"])
        .output()
        .expect("diagnose");
    let d: Value = serde_json::from_slice(&without.stdout).expect("json");
    assert!(
        !cause_ids(&d["diagnosis"]).contains(&"kube-proxy-stopped".to_string()),
        "{d:#}"
    );
    assert!(
        d["diagnosis"]["unexplained"].as_array().is_some_and(|u| !u.is_empty()),
        "{d:#}"
    );
}

#[test]
fn a_malformed_cause_catalogue_is_refused_with_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("causes.yaml");
    std::fs::write(
        &bad,
        "apiVersion: mixcheck/v1\nkind: CauseCatalogue\ncauses:\n  - id: x\n    title: t\n    remedy: r\n    fails: [{rules: ['*']}]\n    colour: red\n",
    )
    .expect("write");
    for args in [vec!["lint"], vec!["run", "--suite", "dns"]] {
        let out = mixcheck(dir.path())
            .args(&args)
            .arg("--causes")
            .arg(&bad)
            .output()
            .expect("mixcheck");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let all = text(&out);
        assert!(
            all.contains("causes.yaml:8:") && all.contains("colour"),
            "{args:?}: {all}"
        );
    }
    let lint = mixcheck(dir.path()).arg("lint").output().expect("lint");
    assert_eq!(lint.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&lint.stdout).contains(" causes"),
        "{}",
        text(&lint)
    );
}

#[test]
fn diagnose_from_a_file_that_is_not_a_report_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("x.json"), "{\"hello\": 1}").expect("write");
    let out = mixcheck(dir.path())
        .args(["diagnose", "--from", "x.json"])
        .output()
        .expect("diagnose");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// The secrets suite puts Secrets of known values into the run namespace (the fixtures'
/// `stringData`, SEC-SECRET-AT-REST, POD-LIFECYCLE-BASICS), and its probes print one back (a
/// pod's environment): results.json holds it; the bundle, which dumps the namespace's Secrets,
/// must hold none of them, plain or base64, anywhere.
#[test]
fn the_bundle_holds_the_run_but_no_secret_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--suite", "secrets", "--bundle", "support.tar.gz"])
        .output()
        .expect("run");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Evidence bundle: support.tar.gz"),
        "{}",
        text(&out)
    );
    let results = std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&results).expect("json");
    let run_id = report["run_id"].as_str().expect("run id");
    let known: Vec<String> = fixture_secret_values()
        .iter()
        .map(|v| v.replace("{{run-id}}", run_id))
        .collect();
    assert!(
        known.len() >= 3 && known.iter().any(|v| v.ends_with(run_id)),
        "{known:?}"
    );
    assert!(
        known.iter().any(|v| results.contains(v.as_str())),
        "a probe printed a secret value back, so the test means something"
    );
    let file = std::fs::File::open(dir.path().join("support.tar.gz")).expect("bundle");
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut names = Vec::new();
    for entry in archive.entries().expect("entries") {
        let mut entry = entry.expect("entry");
        let name = entry.path().expect("path").display().to_string();
        let mut body = String::new();
        std::io::Read::read_to_string(&mut entry, &mut body).expect("utf-8");
        for value in &known {
            assert!(
                !body.contains(value.as_str()),
                "{name} holds the secret value {value:?}"
            );
            assert!(
                !body.contains(&base64_of(value)),
                "{name} holds the secret value {value:?} in base64"
            );
        }
        if name.ends_with("namespace/secrets.json") {
            // The Secrets were dumped (so the checks above mean something), values redacted.
            assert!(
                body.contains("\"secret-at-rest\"") && body.contains("<redacted>"),
                "{body}"
            );
        }
        names.push(name);
    }
    for wanted in [
        "README.txt",
        "reports/results.json",
        "reports/junit.xml",
        "reports/report.html",
        "facts.json",
        "diagnosis.json",
        "cluster/nodes.json",
        "kube-system/pods.json",
        "namespace/pods.json",
        "namespace/events.json",
        "namespace/secrets.json",
    ] {
        assert!(
            names.iter().any(|n| n.ends_with(&format!("/{wanted}"))),
            "{wanted} missing: {names:?}"
        );
    }
}

/// The `stringData` values of every Secret in fixtures/*.yaml.
fn fixture_secret_values() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("fixture");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("fixture parses");
        for doc in docs.iter().filter(|d| d["kind"] == "Secret") {
            out.extend(
                doc["stringData"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(_, v)| v.as_str().map(str::to_string)),
            );
        }
    }
    out
}

#[test]
fn a_bundle_that_is_not_a_tar_gz_is_refused_before_any_cluster_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (bad, says) in [
        ("support.zip", "ending in .tar.gz"),
        ("nowhere/b.tar.gz", "does not exist"),
    ] {
        let out = mixcheck(dir.path())
            .args(["run", "--bundle", bad])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(says), "{}", text(&out));
        assert!(!dir.path().join("mixcheck-report").exists(), "no run started");
    }
}

/// Standard base64 with padding (as the API serialises Secret data).
fn base64_of(text: &str) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn base64_of_matches_the_standard_alphabet() {
    assert_eq!(base64_of("v4lue"), "djRsdWU=");
    assert_eq!(base64_of("ab"), "YWI=");
    assert_eq!(base64_of("abc"), "YWJj");
}
