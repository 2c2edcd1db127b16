//! Benchmark of `mixcheck run`: the release binary against the bundled cluster on the default
//! topology and on generated topologies of growing size. Reports, per topology, the wall time,
//! the peak resident memory of the mixcheck process (bundled cluster included: it runs
//! in-process), the cells, the probes (exec'd commands and reads; judgements from the facts read
//! once are not probes) and the API calls the run made.
//!
//! With `--watch SECONDS [--interval SECONDS]`, it measures `mixcheck watch` instead: on each
//! generated topology, a watch at the interval (default 10 s) for that long; per topology the
//! cycles, the longest and the mean cycle (from the watch's history) and the peak resident
//! memory.
//!
//! Run: `cargo build --release -p mixcheck && cargo run --release -p mixcheck --example bench [-- --nodes 25,100,250,1000] [--coverage full] [--watch 600 --interval 10]`

mod common;
use common::mixcheck;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A topology of `n` nodes: one Linux control plane, then Linux, Windows Server 2019 and
/// Windows Server 2022 workers in turn — three pools, each of two fact sets (two kernel or OS
/// revisions, as a pool mid-way through its monthly patch), so that sampled coverage has six
/// sets to pick representatives from. Its clock runs as the built-in profiles' (`timing.scale`
/// 0.05): what a check waits for takes a twentieth of the wall time.
fn topology(n: usize) -> String {
    let workers = n.saturating_sub(1);
    let per = |k: usize| workers / 6 + usize::from(workers % 6 > k);
    let mut t = String::from(
        "name: bench\nkubernetesVersion: v1.32.3\nnetwork: {mode: l2bridge}\ntiming: {scale: 0.05}\nnodes:\n",
    );
    t.push_str("  - {name: control-plane, os: linux, role: control-plane, taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}\n");
    let windows = ", taints: [{key: os, value: windows, effect: NoSchedule}], kubelet: {systemReserved: {memory: 2Gi}}";
    let sets = [
        ("linux-a", "linux", "6.8.0-1017-azure", ""),
        ("win2019-a", "windows", "10.0.17763.6414", windows),
        ("win2022-a", "windows", "10.0.20348.2762", windows),
        ("linux-b", "linux", "6.8.0-1018-azure", ""),
        ("win2019-b", "windows", "10.0.17763.6532", windows),
        ("win2022-b", "windows", "10.0.20348.2849", windows),
    ];
    for (k, (name, os, kernel, extra)) in sets.iter().enumerate() {
        let count = per(k);
        if count > 0 {
            t.push_str(&format!(
                "  - {{name: {name}, os: {os}, kernelVersion: \"{kernel}\", count: {count}{extra}}}\n"
            ));
        }
    }
    t
}

/// Peak resident memory so far (VmHWM) of a process, in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Waits for `child` (process `pid`) to exit, sampling its peak resident memory every `every`:
/// its exit status and that peak in KiB.
fn until_exit(
    child: &mut std::process::Child,
    pid: u32,
    every: Duration,
) -> Result<(std::process::ExitStatus, u64), String> {
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_kib(pid) {
            peak = peak.max(kib);
        }
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(s) => return Ok((s, peak)),
            None => std::thread::sleep(every),
        }
    }
}

struct Figures {
    wall: Duration,
    peak_mib: f64,
    cells: usize,
    probes: usize,
    api_calls: u64,
    exit: Option<i32>,
}

/// The number before `suffix` on `line` (`1239 API calls`), if any.
fn number_before(line: &str, suffix: &str) -> Option<u64> {
    line.strip_suffix(suffix)?.trim().split(' ').next_back()?.parse().ok()
}

fn run(bin: &Path, topology: Option<&Path>, dir: &Path, coverage: &str) -> Result<Figures, String> {
    let mut cmd = Command::new(bin);
    cmd.arg("run")
        .arg("--coverage")
        .arg(coverage)
        .arg("--report-dir")
        .arg(dir.join("report"))
        .current_dir(dir);
    if let Some(t) = topology {
        cmd.arg("--topology").arg(t);
    }
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id();
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        let (mut probes, mut calls) = (0, 0);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split(" checks (").nth(1) {
                probes = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
            }
            if let Some(n) = number_before(&line, " API calls") {
                calls = n;
            }
        }
        (probes, calls)
    });
    let (status, peak) = until_exit(&mut child, pid, Duration::from_millis(20))?;
    let wall = started.elapsed();
    let (probes, api_calls) = reader.join().unwrap_or((0, 0));
    let results = std::fs::read_to_string(dir.join("report/results.json")).map_err(|e| e.to_string())?;
    let report: serde_json::Value = serde_json::from_str(&results).map_err(|e| e.to_string())?;
    let cells = report["cells"].as_array().map_or(0, Vec::len);
    Ok(Figures {
        wall,
        peak_mib: peak as f64 / 1024.0,
        cells,
        probes,
        api_calls,
        exit: status.code(),
    })
}

/// What one watch measured: cycles, the longest and mean cycle, peak memory.
struct Watched {
    cycles: usize,
    longest: Duration,
    mean: Duration,
    peak_mib: f64,
    exit: Option<i32>,
}

/// `mixcheck watch` on `topology` at `interval` for `cycles` cycles, its memory sampled.
fn watch(bin: &Path, topology: &Path, dir: &Path, interval: u64, cycles: u64) -> Result<Watched, String> {
    let history = dir.join("history");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let mut child = Command::new(bin)
        .args(["watch", "--quiet", "--topology"])
        .arg(topology)
        .args(["--interval", &format!("{interval}s"), "--cycles", &cycles.to_string()])
        .args(["--listen", &format!("127.0.0.1:{port}"), "--history"])
        .arg(&history)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id();
    let (status, peak) = until_exit(&mut child, pid, Duration::from_millis(200))?;
    let mut durations = Vec::new();
    for entry in std::fs::read_dir(&history).map_err(|e| e.to_string())? {
        let text = std::fs::read_to_string(entry.map_err(|e| e.to_string())?.path()).map_err(|e| e.to_string())?;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
            durations.push(Duration::from_millis(v["duration_ms"].as_u64().unwrap_or(0)));
        }
    }
    let total: Duration = durations.iter().sum();
    Ok(Watched {
        cycles: durations.len(),
        longest: durations.iter().max().copied().unwrap_or_default(),
        mean: total / u32::try_from(durations.len().max(1)).unwrap_or(1),
        peak_mib: peak as f64 / 1024.0,
        exit: status.code(),
    })
}

fn print_row(name: &str, f: &Figures) {
    println!(
        "{:<22} {:>8.2}s {:>6.0} MiB {:>7} {:>7} {:>9} {:>5}",
        name,
        f.wall.as_secs_f64(),
        f.peak_mib,
        f.cells,
        f.probes,
        f.api_calls,
        f.exit.map_or("-".into(), |c| c.to_string())
    );
}

fn main() -> Result<(), String> {
    let bin = mixcheck()?;
    let mut sizes = vec![25, 100, 250, 1000];
    let mut coverage = "sampled".to_string();
    let (mut watch_for, mut interval): (Option<u64>, u64) = (None, 10);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--nodes" => {
                let list = args.next().ok_or("--nodes needs a list, e.g. 25,50,100")?;
                sizes = list
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|_| format!("--nodes: {n:?} is not a number")))
                    .collect::<Result<_, _>>()?;
            }
            "--coverage" => coverage = args.next().ok_or("--coverage needs sampled or full")?,
            "--watch" => {
                let secs = args.next().ok_or("--watch needs a number of seconds")?;
                watch_for = Some(secs.parse().map_err(|_| format!("--watch: {secs:?} is not a number"))?);
            }
            "--interval" => {
                let secs = args.next().ok_or("--interval needs a number of seconds")?;
                interval = secs
                    .parse()
                    .map_err(|_| format!("--interval: {secs:?} is not a number"))?;
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let tmp = std::env::temp_dir().join(format!("mixcheck-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    if let Some(secs) = watch_for {
        let cycles = (secs / interval.max(1)).max(1);
        println!("watch: {cycles} cycles at {interval} s");
        println!(
            "{:<22} {:>7} {:>12} {:>10} {:>10} {:>5}",
            "TOPOLOGY", "CYCLES", "LONGEST", "MEAN", "PEAK RSS", "EXIT"
        );
        for n in sizes {
            let dir = tmp.join(format!("w{n}"));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let path = dir.join("topology.yaml");
            std::fs::write(&path, topology(n)).map_err(|e| e.to_string())?;
            let w = watch(&bin, &path, &dir, interval, cycles)?;
            println!(
                "{:<22} {:>7} {:>11.2}s {:>9.2}s {:>6.0} MiB {:>5}",
                format!("{n} nodes"),
                w.cycles,
                w.longest.as_secs_f64(),
                w.mean.as_secs_f64(),
                w.peak_mib,
                w.exit.map_or("-".into(), |c| c.to_string())
            );
        }
        let _ = std::fs::remove_dir_all(&tmp);
        return Ok(());
    }
    println!("coverage: {coverage}");
    println!(
        "{:<22} {:>9} {:>10} {:>7} {:>7} {:>9} {:>5}",
        "TOPOLOGY", "WALL", "PEAK RSS", "CELLS", "PROBES", "API CALLS", "EXIT"
    );
    let dir = tmp.join("default");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    print_row("default (4 nodes)", &run(&bin, None, &dir, &coverage)?);
    for n in sizes {
        let dir = tmp.join(format!("n{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let path = dir.join("topology.yaml");
        std::fs::write(&path, topology(n)).map_err(|e| e.to_string())?;
        print_row(&format!("{n} nodes"), &run(&bin, Some(&path), &dir, &coverage)?);
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
