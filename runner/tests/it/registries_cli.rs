//! Private registries on day one, against bundled clusters whose topologies lock them down
//! (`registries:`), on two profiles (the default: Windows Server 2019 and 2022; and
//! current-ws2022-ws2025, whose 2025 node runs Server Core from MCR): a registry that wants
//! credentials settles the fixtures at once as unpullable, naming the 401 and
//! `--image-pull-secret`, and a pull secret copied from another namespace gives the run the
//! verdicts of an open cluster; a registry that does not resolve is named the same way and
//! `--image-registry-map` to a mirror gives the open cluster's verdicts; a missing pull secret
//! and malformed or contradictory mirrors stop the run with exit 2 before anything is created.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use rstest::rstest;
use serde_json::{Value, json};

use crate::cli::{mixcheck, text};
use crate::run_cli::Serve;

/// The timing every run here has: the default cluster's fast clock (a twentieth of real time),
/// its programming delays, the kubelet's transient pull failures on.
const TIMING: &str = "timing:\n  scale: 0.05\n  programmingDelay: {linux: 2s, windows: 10s}\n  transientEvents: true\n";

/// A built-in profile's topology text.
fn profile_text(profile: &str) -> String {
    let path = format!("{}/../simcluster/topologies/{profile}.yaml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A profile's topology text with [`TIMING`] and `registries` added ("" for none).
fn topology(profile: &str, registries: &str) -> String {
    let text = crate::topology_text::with_timing(&profile_text(profile), TIMING);
    if registries.is_empty() {
        text
    } else {
        format!("{text}registries:\n{registries}")
    }
}

/// Runs `mixcheck run --quiet --topology <file> ARGS` in `dir`: exit code, output, results.json.
fn run(dir: &Path, topology_text: &str, args: &[&str]) -> (Option<i32>, String, Value) {
    crate::cli::run_topology(dir, topology_text, args)
}

type Verdicts = BTreeMap<String, String>;

fn verdicts(report: &Value) -> Verdicts {
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The verdicts of `profile` with open registries, run once for the module: where the profile's
/// own timing is [`TIMING`] (the default's), its run as built in, which other modules read too.
fn open_verdicts(profile: &str) -> Verdicts {
    let settings = |timing: &str| -> Vec<String> {
        timing
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    if settings(&crate::topology_text::timing_of(&profile_text(profile))) == settings(TIMING) {
        let run = crate::profiles::run_profile(profile);
        assert_eq!(run.code, Some(0), "{}", run.text());
        return verdicts(&run.report);
    }
    static RUNS: crate::cli::Shared<String, Verdicts> = crate::cli::Shared::new();
    let open = RUNS.get(profile.to_string(), || {
        let dir = tempfile::tempdir().expect("tempdir");
        let (code, out, report) = run(dir.path(), &topology(profile, ""), &[]);
        assert_eq!(code, Some(0), "{out}");
        verdicts(&report)
    });
    Verdicts::clone(&open)
}

/// The indeterminate cells whose reason says `needle`.
fn indeterminate_saying<'a>(report: &'a Value, needle: &str) -> Vec<&'a Value> {
    report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["verdict"] == "indeterminate")
        .filter(|c| c["reason"].as_str().is_some_and(|r| r.contains(needle)))
        .collect()
}

/// A registry that wants credentials, without a pull secret: every fixture of its images is
/// settled as unpullable after the kubelet's third failed pull, long before the pods' readiness
/// timeouts (3 and 10 minutes); the cells that need them are indeterminate, naming the image,
/// the node, the 401 and `--image-pull-secret`; nothing fails or errors for it.
#[rstest]
#[case::default("default", &["linux-1", "win2019-1", "win2022-1"])]
#[case::ws2022_ws2025("current-ws2022-ws2025", &["linux-1", "win2022-1"])]
fn a_registry_that_wants_credentials_is_named_with_the_flag_that_fixes_it(
    #[case] profile: &str,
    #[case] nodes: &[&str],
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, report) = run(
        dir.path(),
        &topology(profile, "  registry.k8s.io: {auth: required}\n"),
        &[],
    );
    assert_eq!(code, Some(0), "indeterminate cells do not fail the gate: {out}");
    let ms = report["duration_ms"].as_u64().expect("duration");
    assert!(
        ms < 60_000,
        "the run settles its fixtures at once, not at their timeouts: {ms} ms"
    );
    assert!(
        out.contains("refused the pull") && out.contains("401 Unauthorized") && out.contains("--image-pull-secret"),
        "{out}"
    );
    let named = indeterminate_saying(&report, "--image-pull-secret");
    assert!(named.len() >= 20, "{} cells name the flag", named.len());
    for node in nodes {
        let on_node = format!("cannot be pulled on {node}: registry registry.k8s.io refused the pull");
        assert!(
            named
                .iter()
                .any(|c| c["reason"].as_str().is_some_and(|r| r.contains(&on_node))),
            "{node}"
        );
    }
    for c in &named {
        let reason = c["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("registry.k8s.io/e2e-test-images/agnhost:2.53") && reason.contains("401 Unauthorized"),
            "{reason}"
        );
    }
    let bad: Vec<&Value> = report["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["verdict"] == "fail" || c["verdict"] == "error")
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// A `kubernetes.io/dockerconfigjson` Secret in `default` with credentials for `registry`.
async fn create_regcred(kubeconfig: &str, registry: &str) {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(config).expect("client");
    let auths = json!({"auths": {registry: {"username": "robot", "password": "s3cret", "auth": "cm9ib3Q6czNjcmV0"}}});
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "regcred", "namespace": "default"},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": auths.to_string()}
    }))
    .expect("secret");
    Api::<Secret>::namespaced(client, "default")
        .create(&PostParams::default(), &secret)
        .await
        .expect("create regcred");
}

/// With the pull secret the registry wants — created in `default`, copied by the run into its
/// namespace, named by every pod — the run gets the open cluster's verdicts cell by cell and
/// records the secret; a pull secret that does not exist stops the run before it creates
/// anything, exit 2, naming it.
#[rstest]
#[case::default("default")]
#[case::ws2022_ws2025("current-ws2022-ws2025")]
fn a_pull_secret_gives_the_run_the_open_clusters_verdicts(#[case] profile: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("locked.yaml");
    std::fs::write(&file, topology(profile, "  registry.k8s.io: {auth: required}\n")).expect("write");
    let serve = Serve::start_with(&["--topology", file.to_str().expect("utf-8 path")]);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(create_regcred(&serve.kubeconfig(), "https://registry.k8s.io"));

    let missing = mixcheck(dir.path())
        .args(["run", "--quiet", "--kubeconfig", &serve.kubeconfig()])
        .args(["--image-pull-secret", "default/nope"])
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("--image-pull-secret default/nope: there is no Secret \"nope\" in namespace default"),
        "{}",
        text(&missing)
    );
    // A bare name is the run namespace's, which a run that creates its namespace cannot have.
    let bare = mixcheck(dir.path())
        .args(["run", "--quiet", "--kubeconfig", &serve.kubeconfig()])
        .args(["--image-pull-secret", "regcred"])
        .output()
        .expect("run");
    assert_eq!(bare.status.code(), Some(2), "{}", text(&bare));
    assert!(
        text(&bare).contains("there is no Secret \"regcred\" in namespace mixcheck-")
            && text(&bare).contains("name the Secret's own namespace, --image-pull-secret NAMESPACE/regcred"),
        "{}",
        text(&bare)
    );
    let out = mixcheck(dir.path())
        .args(["run", "--quiet", "--kubeconfig", &serve.kubeconfig()])
        .args(crate::cli::SERVED_SETTLE)
        .args(["--image-pull-secret", "default/regcred"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("mixcheck-report/results.json")).expect("results.json"),
    )
    .expect("json");
    assert_eq!(report["images"]["pull_secrets"], json!(["default/regcred"]));
    assert!(
        indeterminate_saying(&report, "cannot be pulled").is_empty(),
        "{}",
        text(&out)
    );
    assert_eq!(verdicts(&report), open_verdicts(profile));
}

/// A registry that does not resolve on the nodes is named the same way (the resolver's words,
/// `--image-registry-map`); mapping it to a mirror that keeps the repository paths gives the
/// open cluster's verdicts, and the run records the mapping.
#[rstest]
#[case::default("default")]
#[case::ws2022_ws2025("current-ws2022-ws2025")]
fn an_unreachable_registry_is_named_and_a_mirror_map_gives_the_open_verdicts(#[case] profile: &str) {
    let locked = topology(profile, "  mcr.microsoft.com: {reachable: false}\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, report) = run(dir.path(), &locked, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("registry mcr.microsoft.com did not answer") && out.contains("no such host"),
        "{out}"
    );
    let named = indeterminate_saying(&report, "--image-registry-map mcr.microsoft.com=MIRROR");
    assert!(!named.is_empty(), "{out}");
    for c in &named {
        let reason = c["reason"].as_str().unwrap_or_default();
        // Windows resolves through the system; Ubuntu names its stub resolver.
        let windows = reason.contains("dial tcp: lookup mcr.microsoft.com: no such host");
        let ubuntu = reason.contains("dial tcp: lookup mcr.microsoft.com on 127.0.0.53:53: no such host");
        assert!(windows || ubuntu, "{reason}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out, report) = run(
        dir.path(),
        &locked,
        &["--image-registry-map", "mcr.microsoft.com=harbor.corp/mcr"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        report["images"]["registry_map"],
        json!({"mcr.microsoft.com": "harbor.corp/mcr"})
    );
    assert_eq!(verdicts(&report), open_verdicts(profile));
}

/// Bad registry flags stop `run` and `images` with exit 2 and one line naming the flag;
/// `images` prints the mapped names.
#[rstest]
#[case::no_to(&["run", "--image-registry-map", "registry.k8s.io"], "--image-registry-map \"registry.k8s.io\": no '='")]
#[case::twice(
    &["run", "--image-registry-map", "registry.k8s.io=a.corp/k8s", "--image-registry-map", "registry.k8s.io=b.corp/k8s"],
    "mapped twice, to a.corp/k8s and to b.corp/k8s"
)]
#[case::not_a_host(&["images", "--image-registry-map", "registry.k8s.io=harbor/k8s"], "does not start with a registry host")]
#[case::secret(&["run", "--image-pull-secret", "Team/regcred"], "--image-pull-secret \"Team/regcred\"")]
fn bad_registry_flags_exit_2(#[case] args: &[&str], #[case] needle: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path()).args(args).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(needle), "{}", text(&out));
    assert!(!dir.path().join("mixcheck-report").exists(), "nothing ran");
}

#[test]
fn images_prints_the_mapped_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mixcheck(dir.path())
        .args(["images", "--image-registry-map", "registry.k8s.io=harbor.corp/k8s"])
        .args(["--image-registry-map", "mcr.microsoft.com=harbor.corp/mcr"])
        .output()
        .expect("images");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("harbor.corp/k8s/e2e-test-images/agnhost:2.53"),
        "{stdout}"
    );
    assert!(
        stdout.contains("harbor.corp/mcr/windows/servercore:ltsc2025"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(" registry.k8s.io/") && !stdout.contains(" mcr.microsoft.com/"),
        "{stdout}"
    );
}
