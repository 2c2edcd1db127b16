//! Several runs of one probe command in one exec, each a process of its own, through the
//! container's shell: what a flow judged on several connections or lookups makes where one
//! invocation of its tool cannot make them (curl looks a name up once for all its URLs; agnhost
//! `connect` makes one connection), and how the shell's output splits back into each run's.
//!
//! On a real cluster each exec is a stream through the API server and the node's kubelet (and a
//! TLS handshake with the API server): nine lookups in one exec spare it eight.

use mixcheck_reports::Os;

use crate::probes::judgement::Ctx;
use crate::probes::transport::{self, Output, Runner, TransportError};

/// What each run prints on stdout after its own output: its exit status.
const EXIT_MARK: &str = "mixcheck-exit=";
/// What each run prints on stderr after its own errors.
const END_MARK: &str = "mixcheck-end\n";

/// Whether `arg` needs no quoting anywhere (no glob, quote, expansion or separator character of
/// sh): the probe commands' words are options, numbers, addresses, names and URL paths.
fn plain(arg: &str) -> bool {
    !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c))
}

/// The command line that runs `single` `times` times in one exec, each run a process of its own
/// (its own name lookup, its own connection), one after another: `sh -c` in an agnhost pod —
/// the agnhost images carry sh on Linux (Alpine) and on Windows (busybox-w32 of the e2e
/// busybox image they are built on) — each run followed by its exit status on stdout and a
/// marker on stderr, so that [`split`] gives back each run's output. None where the pod has no
/// such shell (a HostProcess pod's host, Server Core's PowerShell), for fewer than two runs, or
/// for a word that would need quoting.
pub fn command(runner: Runner, single: &[String], times: usize) -> Option<Vec<String>> {
    script(runner, single, times, false)
}

/// [`command`] for a flow's first attempt: the runs after the first are made only if the first
/// succeeded (a flow that does not work yet is tried again later, not `times` times now), so
/// [`split`] gives back one run or `times`.
pub fn first_command(runner: Runner, single: &[String], times: usize) -> Option<Vec<String>> {
    script(runner, single, times, true)
}

fn script(runner: Runner, single: &[String], times: usize, stop_after_failed_first: bool) -> Option<Vec<String>> {
    if !matches!(runner, Runner::Agnhost(Os::Linux | Os::Windows)) || times < 2 || single.is_empty() {
        return None;
    }
    if !single.iter().all(|a| plain(a)) {
        return None;
    }
    let line = single.join(" ");
    let end = END_MARK.trim_end();
    let one = format!("{line}; echo \"{EXIT_MARK}$?\"; echo {end} >&2");
    let mut runs = vec![one; times];
    if stop_after_failed_first {
        runs[0] = format!("{line}; s=$?; echo \"{EXIT_MARK}$s\"; echo {end} >&2; [ $s -eq 0 ] || exit 0");
    }
    Some(vec!["/bin/sh".into(), "-c".into(), runs.join("; ")])
}

/// Which chain to make: a flow's first attempt ([`first_command`]) or the runs after a first
/// made alone ([`command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    First,
    Rest,
}

/// What a chained exec gave: each run's output as if exec'd alone, and the exec's own output
/// and whether it needed retrying.
pub type Chained = (Vec<Output>, (Output, bool));

/// Runs `single` `times` times in one exec in `pod` (its `container`), as `chain` says, within
/// the time the runs may all take: None where the pod's shell cannot chain the command or the
/// output does not account for the runs (the caller then makes them one exec each).
pub async fn exec(
    ctx: &Ctx<'_>,
    (pod, container): (&str, Option<&str>),
    runner: Runner,
    single: &[String],
    (times, chain): (usize, Chain),
) -> Result<Option<Chained>, TransportError> {
    let argv = match chain {
        Chain::First => first_command(runner, single, times),
        Chain::Rest => command(runner, single, times),
    };
    let Some(argv) = argv else {
        return Ok(None);
    };
    let (out, flaky) = ctx
        .exec_within(pod, container, &argv, transport::repeated_timeout(times))
        .await?;
    let runs = match chain {
        Chain::First => split_first(&out, single, times),
        Chain::Rest => split(&out, single, times),
    };
    Ok(runs.map(|runs| (runs, (out, flaky))))
}

/// Each run's output of a [`command`] of `times` runs of `single`, in order, as if it had been
/// exec'd alone (its argv `single`, its exit status, its stdout and stderr). None where the
/// output does not account for `times` runs: the shell did not run them (no such shell, an exec
/// cut short) — the caller then runs them one exec each.
pub fn split(out: &Output, single: &[String], times: usize) -> Option<Vec<Output>> {
    runs(out, single).filter(|r| r.len() == times)
}

/// Each run's output of a [`first_command`] of `times` runs: the first alone where it failed,
/// else all `times`; None where the output accounts for neither.
pub fn split_first(out: &Output, single: &[String], times: usize) -> Option<Vec<Output>> {
    runs(out, single).filter(|r| match r.as_slice() {
        [first] => first.exit_code != Some(0),
        all => all.len() == times,
    })
}

/// The statuses sh gives a command it could not run (126: not executable, 127: not found), which
/// neither curl nor agnhost exits with: the shell could not run the tool the way the pod's own
/// runtime does (a path such as `/agnhost` the Windows shell does not resolve), so the runs are
/// made one exec each rather than judged a failed connection.
const SHELL_COULD_NOT_RUN: [i32; 2] = [126, 127];

/// Every run a chained output accounts for, in order; None where its markers do not pair up,
/// something follows the last, or the shell could not run the tool.
fn runs(out: &Output, single: &[String]) -> Option<Vec<Output>> {
    if out.exit_code != Some(0) {
        return None;
    }
    let stdout = out.stdout_text();
    let stderr = out.stderr_text();
    let mut errors: Vec<&str> = stderr.split(END_MARK).collect();
    // Nothing but an empty tail after the last run's marker.
    if errors.pop() != Some("") {
        return None;
    }
    let mut runs = Vec::with_capacity(errors.len());
    let mut rest = stdout.as_str();
    for own_errors in errors {
        let (own, after) = rest.split_once(EXIT_MARK)?;
        let (code, after) = after.split_once('\n')?;
        let code: i32 = code.trim_end_matches('\r').parse().ok()?;
        if SHELL_COULD_NOT_RUN.contains(&code) {
            return None;
        }
        rest = after;
        runs.push(Output {
            argv: single.to_vec(),
            pod: out.pod.clone(),
            container: out.container.clone(),
            exit_code: Some(code),
            stdout: own.as_bytes().to_vec(),
            stderr: own_errors.as_bytes().to_vec(),
        });
    }
    (!runs.is_empty() && !rest.contains(EXIT_MARK)).then_some(runs)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    const CURL: &str = "curl -s -S --connect-timeout 5 -m 10 http://svc-3.ns.svc.cluster.local:80/hostname";
    const UDP: &str = "/agnhost connect 10.96.0.17:90 --timeout=5s --protocol=udp";

    /// An agnhost pod's sh runs the command `times` times, each followed by its status and
    /// marker; no chain where there is no such shell, for one run, or for words sh would read.
    #[rstest]
    #[case::linux_curl(Runner::Agnhost(Os::Linux), CURL, 9, true)]
    #[case::windows_curl(
        Runner::Agnhost(Os::Windows),
        "curl.exe -s -S http://10.96.0.17:80/hostname",
        3,
        true
    )]
    #[case::windows_udp(Runner::Agnhost(Os::Windows), UDP, 9, true)]
    #[case::host_process(Runner::WindowsHost, "curl.exe -s http://10.96.0.17:80/hostname", 9, false)]
    #[case::powershell(Runner::WindowsPowerShell, "powershell.exe -NoProfile -Command x", 9, false)]
    #[case::one_run(Runner::Agnhost(Os::Linux), CURL, 1, false)]
    #[case::a_word_sh_would_read(Runner::Agnhost(Os::Linux), "curl -s http://x/a?b=$c", 3, false)]
    #[case::a_quoted_header(Runner::Agnhost(Os::Linux), "curl -H Connection:\tclose http://x", 3, false)]
    fn runs_chain_in_an_agnhost_shell(
        #[case] runner: Runner,
        #[case] single: &str,
        #[case] times: usize,
        #[case] chained: bool,
    ) {
        let single = words(single);
        let got = command(runner, &single, times);
        assert_eq!(got.is_some(), chained, "{got:?}");
        let Some(argv) = got else { return };
        assert_eq!(argv[..2], ["/bin/sh", "-c"]);
        let script = &argv[2];
        assert_eq!(script.matches(&single.join(" ")).count(), times, "{script}");
        assert_eq!(script.matches("echo \"mixcheck-exit=$?\"").count(), times, "{script}");
        assert_eq!(script.matches("echo mixcheck-end >&2").count(), times, "{script}");
    }

    fn chained(code: Option<i32>, stdout: &str, stderr: &str) -> Output {
        Output {
            argv: vec!["/bin/sh".into(), "-c".into(), "…".into()],
            pod: "cli-3".into(),
            container: None,
            exit_code: code,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    /// Each run's status, stdout and stderr come back in order, as if exec'd alone.
    #[test]
    fn each_run_comes_back_as_if_alone() {
        let out = chained(
            Some(0),
            "srv-1mixcheck-exit=0\nmixcheck-exit=6\nhostname\r\nmixcheck-exit=0\r\n",
            "mixcheck-end\ncurl: (6) Could not resolve host: svc-3\nmixcheck-end\nmixcheck-end\n",
        );
        let single = words(CURL);
        let runs = split(&out, &single, 3).expect("three runs");
        let seen: Vec<(Option<i32>, String, String)> = runs
            .iter()
            .map(|r| (r.exit_code, r.stdout_text(), r.stderr_text()))
            .collect();
        assert_eq!(
            seen,
            [
                (Some(0), "srv-1".to_string(), String::new()),
                (
                    Some(6),
                    String::new(),
                    "curl: (6) Could not resolve host: svc-3\n".to_string()
                ),
                (Some(0), "hostname\r\n".to_string(), String::new()),
            ]
        );
        assert!(runs.iter().all(|r| r.argv == single && r.pod == "cli-3"));
    }

    /// An output that does not account for every run is None: the runs are then made alone.
    #[rstest]
    #[case::no_shell(Some(127), "", "sh: not found\n")]
    #[case::cut_short(None, "srv-1mixcheck-exit=0\n", "mixcheck-end\n")]
    #[case::fewer_runs(Some(0), "srv-1mixcheck-exit=0\n", "mixcheck-end\n")]
    #[case::more_runs(
        Some(0),
        "amixcheck-exit=0\nbmixcheck-exit=0\ncmixcheck-exit=0\n",
        "mixcheck-end\nmixcheck-end\nmixcheck-end\n"
    )]
    #[case::fewer_error_markers(Some(0), "amixcheck-exit=0\nbmixcheck-exit=0\n", "mixcheck-end\n")]
    #[case::an_error_after_the_last(
        Some(0),
        "amixcheck-exit=0\nbmixcheck-exit=0\n",
        "mixcheck-end\nmixcheck-end\nsh: oops\n"
    )]
    #[case::no_status(Some(0), "amixcheck-exit=\nbmixcheck-exit=0\n", "mixcheck-end\nmixcheck-end\n")]
    #[case::tool_not_found(
        Some(0),
        "mixcheck-exit=127\nmixcheck-exit=127\n",
        "sh: /agnhost: not found\nmixcheck-end\nsh: /agnhost: not found\nmixcheck-end\n"
    )]
    #[case::tool_not_executable(
        Some(0),
        "amixcheck-exit=0\nmixcheck-exit=126\n",
        "mixcheck-end\nsh: /agnhost: Permission denied\nmixcheck-end\n"
    )]
    fn an_output_that_does_not_account_for_the_runs_is_none(
        #[case] code: Option<i32>,
        #[case] stdout: &str,
        #[case] stderr: &str,
    ) {
        assert!(split(&chained(code, stdout, stderr), &words(UDP), 2).is_none());
    }

    /// A first attempt's chain stops after its first run where that one failed: one run or all
    /// of them come back, nothing in between.
    #[rstest]
    #[case::first_failed(
        Some(0),
        "mixcheck-exit=6\n",
        "curl: (6) Could not resolve host: x\nmixcheck-end\n",
        Some(1)
    )]
    #[case::all_ran(
        Some(0),
        "amixcheck-exit=0\nbmixcheck-exit=7\ncmixcheck-exit=0\n",
        "mixcheck-end\ncurl: (7) refused\nmixcheck-end\nmixcheck-end\n",
        Some(3)
    )]
    #[case::first_worked_alone(Some(0), "amixcheck-exit=0\n", "mixcheck-end\n", None)]
    #[case::two_of_three(
        Some(0),
        "amixcheck-exit=1\nbmixcheck-exit=0\n",
        "x\nmixcheck-end\nmixcheck-end\n",
        None
    )]
    #[case::no_shell(Some(127), "", "sh: not found\n", None)]
    fn a_first_attempt_comes_back_whole_or_as_its_failed_first_run(
        #[case] code: Option<i32>,
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] runs: Option<usize>,
    ) {
        let got = split_first(&chained(code, stdout, stderr), &words(CURL), 3);
        assert_eq!(got.as_ref().map(Vec::len), runs);
        assert!(
            got.is_none()
                || split(&chained(code, stdout, stderr), &words(CURL), 3).map(|r| r.len()) == runs.filter(|n| *n == 3)
        );
    }

    /// The first attempt's script: the first run keeps its status and stops the chain where it
    /// failed; the others are as in [`command`].
    #[test]
    fn a_first_attempt_stops_where_its_first_run_failed() {
        let single = words(CURL);
        let argv = first_command(Runner::Agnhost(Os::Linux), &single, 3).expect("chained");
        let line = single.join(" ");
        assert_eq!(
            argv[2],
            format!(
                "{line}; s=$?; echo \"mixcheck-exit=$s\"; echo mixcheck-end >&2; [ $s -eq 0 ] || exit 0; \
                 {line}; echo \"mixcheck-exit=$?\"; echo mixcheck-end >&2; \
                 {line}; echo \"mixcheck-exit=$?\"; echo mixcheck-end >&2"
            )
        );
        assert_eq!(first_command(Runner::WindowsHost, &single, 3), None);
    }
}
