//! A probe command run several times in one exec through an agnhost pod's sh, as the harness
//! chains a flow's connections and lookups: each run a process of its own, its status and errors
//! in order, the chain ended after a failed first run.

use std::sync::Arc;

use rstest::rstest;
use serde_json::json;

use super::{AGNHOST, Fixture, Recorder, request, text};
use crate::node::runtime::{ContainerRuntime as _, ExecOutput, ExitStatus};

/// Runs `script` with `sh -c` in an agnhost pod on `node` whose network records what reaches
/// it: the output (the shell exits 0: every chain ends with a marker) and what was recorded.
async fn in_sh(node: &str, script: &str) -> (ExecOutput, Vec<String>) {
    let f = Fixture::new();
    let recorder = Arc::new(Recorder::default());
    let runtime = f.runtime().with_network(recorder.clone());
    let pod = f.app("chain", node, AGNHOST, json!({}));
    let o = runtime.exec(request(&pod, &["/bin/sh", "-c", script])).await;
    assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
    (o, recorder.seen())
}

/// One probe command run several times in one exec through an agnhost pod's sh (busybox ash on
/// Linux, busybox-w32 on Windows: the agnhost images carry it), each run followed by its exit
/// status and a marker on stderr, as the harness chains a flow's lookups and UDP connections:
/// each run is a process of its own, so each looks the name up again (curl looks a name up once
/// for all the URLs of one invocation), and each run's status and errors come out in order.
#[rstest]
#[case::linux("linux-1", "curl")]
#[case::windows("win2022-1", "curl.exe")]
#[tokio::test]
async fn chained_runs_are_processes_of_their_own(#[case] node: &str, #[case] curl: &str) {
    let run = |cmd: String| format!("{cmd}; echo \"mixcheck-exit=$?\"; echo mixcheck-end >&2");
    let lookup = |name: &str| {
        run(format!(
            "{curl} -s -S --connect-timeout 5 -m 10 http://{name}:8080/hostname"
        ))
    };
    let udp = run("/agnhost connect web:8081 --timeout=5s --protocol=udp".to_string());
    let script = [lookup("web"), lookup("nx"), lookup("web"), udp].join("; ");
    let (o, seen) = in_sh(node, &script).await;
    let ip = match node {
        "linux-1" => "10.244.1.7",
        _ => "10.244.3.7",
    };
    assert_eq!(
        text(&o.stdout),
        format!(
            "reached from {ip}\nmixcheck-exit=0\nmixcheck-exit=6\nreached from {ip}\nmixcheck-exit=0\nmixcheck-exit=0\n"
        )
    );
    assert_eq!(
        text(&o.stderr),
        "mixcheck-end\ncurl: (6) Could not resolve host: nx\nmixcheck-end\nmixcheck-end\nmixcheck-end\n"
    );
    assert_eq!(
        seen,
        [
            "resolve web",
            "GET 10.96.0.50:8080/hostname",
            "resolve nx",
            "resolve web",
            "GET 10.96.0.50:8080/hostname",
            "resolve web",
            "udp 10.96.0.50:8081 hostname",
        ]
    );
}

/// A flow's first attempt chained in sh: the first run keeps its status (`s=$?`) and ends the
/// chain where it failed (`[ $s -eq 0 ] || exit 0`), so a name that does not resolve yet is
/// looked up once, not ten times; where it worked the other runs follow.
#[rstest]
#[case::first_fails_alone("linux-1", "curl", "nx", 1)]
#[case::first_works_then_the_rest("linux-1", "curl", "web", 3)]
#[case::windows_first_fails_alone("win2022-1", "curl.exe", "nx", 1)]
#[case::windows_first_works_then_the_rest("win2022-1", "curl.exe", "web", 3)]
#[tokio::test]
async fn a_chain_ends_after_a_failed_first_run(
    #[case] node: &str,
    #[case] curl: &str,
    #[case] name: &str,
    #[case] runs: usize,
) {
    let line = format!("{curl} -s -S --connect-timeout 5 -m 10 http://{name}:8080/hostname");
    let first = format!("{line}; s=$?; echo \"mixcheck-exit=$s\"; echo mixcheck-end >&2; [ $s -eq 0 ] || exit 0");
    let other = format!("{line}; echo \"mixcheck-exit=$?\"; echo mixcheck-end >&2");
    let script = [first, other.clone(), other].join("; ");
    let (o, seen) = in_sh(node, &script).await;
    let code = if name == "web" { "0" } else { "6" };
    assert_eq!(
        text(&o.stdout).matches(&format!("mixcheck-exit={code}\n")).count(),
        runs
    );
    assert_eq!(text(&o.stderr).matches("mixcheck-end\n").count(), runs);
    let lookups = seen.iter().filter(|e| e.starts_with("resolve ")).count();
    assert_eq!(lookups, runs, "{:?}", seen);
}
