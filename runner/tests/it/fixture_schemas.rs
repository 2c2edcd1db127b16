//! Every fixture validates against the Kubernetes OpenAPI schemas (strict: unknown fields are
//! errors) with `kubernetes-validate` from PyPI, which `.ci/run` installs. The schema version is
//! 1.33, the newest field any fixture uses (`lifecycle.stopSignal`, ContainerStopSignals).

use std::path::{Path, PathBuf};
use std::process::Command;

const VALIDATOR: &str = "kubernetes-validate";
const SCHEMA_VERSION: &str = "1.33.0";

fn validator() -> Command {
    let probe = Command::new(VALIDATOR).arg("--version").output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "{VALIDATOR} is not on PATH: install it with `pip install kubernetes-validate` (.ci/run does)"
    );
    let mut cmd = Command::new(VALIDATOR);
    cmd.args(["--strict", "--quiet", "-k", SCHEMA_VERSION]);
    cmd
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
#[ignore = "needs kubernetes-validate (pip install kubernetes-validate)"]
fn every_fixture_is_a_valid_kubernetes_manifest() {
    let files = fixtures();
    assert!(files.len() >= 30, "the fixtures are there: {files:?}");
    let out = validator().args(&files).output().expect("run kubernetes-validate");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The validator does reject what the schemas forbid (so the test above can fail).
#[test]
#[ignore = "needs kubernetes-validate (pip install kubernetes-validate)"]
fn the_validator_rejects_an_unknown_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n    - {name: c, image: busybox, restartPolicyy: Never}\n",
    )
    .expect("write");
    let out = validator().arg(&bad).output().expect("run kubernetes-validate");
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("restartPolicyy"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
