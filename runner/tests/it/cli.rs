//! What the command-line tests share: the built binary run in a folder of the test's own, with
//! no kubeconfig or job summary from the environment, and its output as one text.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex, OnceLock};

/// `mixcheck` in `dir`, without `KUBECONFIG` or `GITHUB_STEP_SUMMARY` from the environment.
pub(crate) fn mixcheck(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mixcheck"));
    cmd.current_dir(dir)
        .env_remove("KUBECONFIG")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// The settle window of a run against a served bundled cluster (`sim serve`): its proxies
/// program within half a second of wall time (its topology's delays on the wall clock), so 3 s
/// (NodePorts 6 s) leaves a wide margin. The default, 30 s as on a real cluster, would make every
/// documented limitation wait it out: a minute per run for the same verdicts.
pub(crate) const SERVED_SETTLE: [&str; 2] = ["--settle", "3s"];

/// `args`, then [`SERVED_SETTLE`].
pub(crate) fn served<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [args, &SERVED_SETTLE[..]].concat()
}

/// Standard output, then standard error.
pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `mixcheck run --quiet ARGS` in `dir`: its exit code, output and `results.json` (Null when
/// the run wrote none).
pub(crate) fn run_report(dir: &Path, args: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let run = quiet_run(dir, args);
    (run.code, run.text(), run.report)
}

/// `mixcheck run --quiet ARGS` in `dir`, as [`SharedRun`] keeps it.
fn quiet_run(dir: &Path, args: &[&str]) -> SharedRun {
    let out = mixcheck(dir)
        .args(["run", "--quiet"])
        .args(args)
        .output()
        .expect("run mixcheck");
    let results = std::fs::read_to_string(dir.join("mixcheck-report/results.json")).unwrap_or_default();
    SharedRun {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report: serde_json::from_str(&results).unwrap_or(serde_json::Value::Null),
    }
}

/// What one `mixcheck run` gave: its exit code, standard output and error, and `results.json`
/// (Null when the run wrote none).
pub(crate) struct SharedRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub report: serde_json::Value,
}

impl SharedRun {
    /// Standard output, then standard error.
    pub fn text(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// Values made once per test process for each key, and shared by every test that asks for the
/// same key; a test that asks while the value is being made waits for it (a reference run that
/// several tests only read starts one bundled cluster, not one per test).
pub(crate) struct Shared<K, T>(Mutex<BTreeMap<K, Arc<OnceLock<Arc<T>>>>>);

impl<K: Ord, T> Shared<K, T> {
    pub const fn new() -> Self {
        Self(Mutex::new(BTreeMap::new()))
    }

    /// The value of `key`, made with `make` by the first test that asks.
    pub fn get(&self, key: K, make: impl FnOnce() -> T) -> Arc<T> {
        let cell = {
            let mut values = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(values.entry(key).or_default())
        };
        Arc::clone(cell.get_or_init(|| Arc::new(make())))
    }
}

/// `mixcheck run --quiet ARGS`, made once per test process for each distinct `args` and shared
/// by every test that asks for it ([`Shared`]): the default run, a profile's clean run. `args`
/// must name no file of a test's own folder.
pub(crate) fn shared_run(args: &[&str]) -> Arc<SharedRun> {
    static RUNS: Shared<Vec<String>, SharedRun> = Shared::new();
    let key: Vec<String> = args.iter().map(|a| (*a).to_string()).collect();
    RUNS.get(key, || {
        let dir = tempfile::tempdir().expect("tempdir");
        quiet_run(dir.path(), args)
    })
}

/// The same with `--topology`, the topology's text written to `dir/topology.yaml` first.
pub(crate) fn run_topology(dir: &Path, topology: &str, args: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let file = dir.join("topology.yaml");
    std::fs::write(&file, topology).expect("write topology");
    let file = file.to_string_lossy().into_owned();
    let mut all = vec!["--topology", file.as_str()];
    all.extend_from_slice(args);
    run_report(dir, &all)
}

/// `work` over every row, `n` rows at a time, the results in no particular order. Each row's work
/// runs mixcheck (and with it a bundled cluster of its own): a run uses a core while it probes,
/// so more than a few side by side only makes every run's deadlines tighter on a small machine.
pub(crate) fn at_a_time<T: Sync, R: Send>(n: usize, rows: &[T], work: impl Fn(&T) -> Vec<R> + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..n.max(1))
            .map(|first| {
                scope.spawn(move || {
                    rows.iter()
                        .skip(first)
                        .step_by(n.max(1))
                        .flat_map(work)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a worker")).collect()
    })
}
