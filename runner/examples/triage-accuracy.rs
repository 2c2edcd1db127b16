//! Triage accuracy: the release binary against the bundled cluster with every fault of `mixcheck
//! sim faults` injected on every node it applies to, under three suite selections (all suites,
//! the network suites, version matching only), on several topologies; every pair of two faults
//! on two different nodes; and a clean run of each topology. Prints per topology and selection
//! the rank-1 and rank-3 accuracy of the diagnosis (the injected fault's cause first, or among
//! the first three), the localisation accuracy (the top cause names exactly the faulted node),
//! the runs that named a cause besides the injected one (EXTRA), the false causes of clean
//! runs and of faults the selection cannot see, the confusion matrix
//! (injected fault → top cause) and the time the diagnosis adds; then every miss.
//!
//! A fault the selection does not observe (the run passes) is not scored for accuracy; a cause
//! named there is a false cause. A fault the simulator refuses on a topology (it does not apply
//! there, e.g. flannel faults without flannel) is left out.
//!
//! Run: `cargo build --release -p mixcheck && cargo run --release -p mixcheck --example triage-accuracy [-- --topologies default,aks --selections all,network,version,dns,nodeport --jobs 2 --no-pairs --faults hns-,dns-unreachable]`
//! (`MIXCHECK_BIN` runs another mixcheck binary).

mod common;
use common::mixcheck;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

/// The topologies: a name and the arguments that select it.
fn topology_args(name: &str) -> Vec<String> {
    let testdata = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");
    match name {
        "overlay" => vec!["--topology".into(), format!("{testdata}/overlay-current.yaml")],
        "realistic" => vec!["--topology".into(), format!("{testdata}/realistic.yaml")],
        profile => vec!["--profile".into(), profile.into()],
    }
}

/// The suite selections.
fn selection_args(name: &str) -> Vec<String> {
    let suites: &[&str] = match name {
        "network" => &["network-flows", "nodeport", "dns", "network-config", "dataplane"],
        "dns" => &["dns"],
        "nodeport" => &["nodeport"],
        "version" => &["version-matching"],
        _ => &[],
    };
    suites
        .iter()
        .flat_map(|s| ["--suite".to_string(), (*s).to_string()])
        .collect()
}

/// One run to make.
#[derive(Debug, Clone)]
struct Case {
    topology: String,
    selection: String,
    /// (node, fault) injected.
    faults: Vec<(String, String)>,
}

/// A cause of a diagnosis: its id and nodes.
#[derive(Debug, Clone)]
struct Cause {
    id: String,
    nodes: Vec<String>,
}

/// What a run gave.
#[derive(Debug)]
enum Outcome {
    /// The simulator refused a fault: it does not apply on this topology.
    Refused,
    Ran {
        exit: Option<i32>,
        causes: Vec<Cause>,
        diagnosis_ms: Option<u64>,
    },
    Broken(String),
}

fn run(bin: &Path, case: &Case, dir: &Path) -> Outcome {
    let _ = std::fs::remove_dir_all(dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        return Outcome::Broken(e.to_string());
    }
    let mut cmd = Command::new(bin);
    cmd.arg("run")
        .args(topology_args(&case.topology))
        .args(selection_args(&case.selection))
        .arg("--report-dir")
        .arg(dir.join("report"))
        .current_dir(dir)
        .env_remove("KUBECONFIG");
    for (node, fault) in &case.faults {
        cmd.arg("--fault").arg(format!("{node}:{fault}"));
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => return Outcome::Broken(e.to_string()),
    };
    let exit = out.status.code();
    if exit == Some(2) {
        return Outcome::Refused;
    }
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let diagnosis_ms = said
        .lines()
        .find(|l| l.starts_with("Diagnosis: "))
        .and_then(|l| l.rsplit_once('(')?.1.strip_suffix(" ms)")?.parse().ok());
    let text = match std::fs::read_to_string(dir.join("report/results.json")) {
        Ok(t) => t,
        Err(e) => {
            return Outcome::Broken(format!(
                "exit {exit:?}, no results.json ({e}): {}",
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or_default()
            ));
        }
    };
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return Outcome::Broken(e.to_string()),
    };
    let causes = report["diagnosis"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Cause {
            id: c["id"].as_str().unwrap_or_default().to_string(),
            nodes: c["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect(),
        })
        .collect();
    let _ = std::fs::remove_dir_all(dir);
    Outcome::Ran {
        exit,
        causes,
        diagnosis_ms,
    }
}

/// The nodes of a topology and their OS (from a clean run's facts), workers only.
fn workers(report_dir: &Path) -> Vec<(String, String)> {
    let Ok(text) = std::fs::read_to_string(report_dir.join("results.json")) else {
        return Vec::new();
    };
    let Ok(report) = serde_json::from_str::<Value>(&text) else {
        return Vec::new();
    };
    report["facts"]["nodes"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, n)| {
            !n["taints"]["value"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["key"] == "node-role.kubernetes.io/control-plane")
        })
        .map(|(name, n)| (name.clone(), n["os"]["value"].as_str().unwrap_or_default().to_string()))
        .collect()
}

/// `mixcheck sim faults`: each fault and the OS it applies to (`any` or `windows`).
fn faults(bin: &Path) -> Result<Vec<(String, String)>, String> {
    let out = Command::new(bin)
        .args(["sim", "faults"])
        .output()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect())
}

/// The first three causes, `id@nodes`.
fn tops(causes: &[Cause]) -> String {
    causes
        .iter()
        .take(3)
        .map(|c| format!("{}@{}", c.id, c.nodes.join(",")))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Default)]
struct Score {
    scored: usize,
    rank1: usize,
    rank3: usize,
    localised: usize,
    /// Scored runs that named a cause besides the injected one.
    extra: usize,
    unobserved: usize,
    false_causes: usize,
    clean_runs: usize,
    clean_false: usize,
    diagnosis_ms: Vec<u64>,
}

fn percent(n: usize, of: usize) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1} %", 100.0 * n as f64 / of as f64)
    }
}

fn list_arg(args: &[String], flag: &str, default: &str) -> Vec<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map_or(default, String::as_str)
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let topologies = list_arg(
        &args,
        "--topologies",
        "default,overlay,aks,aks-overlay,eks,gke,gke-dpv2,kubeadm-flannel-hostprocess,kubeadm-calico,realistic",
    );
    let selections = list_arg(&args, "--selections", "all,network,version,dns,nodeport");
    let jobs: usize = list_arg(&args, "--jobs", "2")
        .first()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2)
        .max(1);
    let pairs = !args.iter().any(|a| a == "--no-pairs");
    // `--faults hns-,dns-unreachable`: only the faults whose names start with one of these.
    let only = list_arg(&args, "--faults", "");
    let bin = mixcheck()?;
    let faults: Vec<(String, String)> = faults(&bin)?
        .into_iter()
        .filter(|(f, _)| only.is_empty() || only.iter().any(|o| f.starts_with(o.as_str())))
        .collect();
    let scratch = std::env::temp_dir().join(format!("mixcheck-triage-accuracy-{}", std::process::id()));
    let started = Instant::now();

    // Clean runs first: they give each topology's workers.
    let mut cases: Vec<Case> = Vec::new();
    let mut nodes_of: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for t in &topologies {
        let dir = scratch.join(format!("clean-{t}"));
        let _ = std::fs::create_dir_all(&dir);
        let out = Command::new(&bin)
            .arg("run")
            .args(topology_args(t))
            .arg("--report-dir")
            .arg(dir.join("report"))
            .current_dir(&dir)
            .env_remove("KUBECONFIG")
            .output()
            .map_err(|e| e.to_string())?;
        let nodes = workers(&dir.join("report"));
        if nodes.is_empty() {
            return Err(format!(
                "the clean run of {t} gave no results: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        eprintln!("{t}: {} workers", nodes.len());
        nodes_of.insert(t.clone(), nodes);
        for s in &selections {
            cases.push(Case {
                topology: t.clone(),
                selection: s.clone(),
                faults: Vec::new(),
            });
        }
    }
    for t in &topologies {
        for (node, os) in &nodes_of[t] {
            for (fault, applies) in &faults {
                if applies == "windows" && os != "windows" {
                    continue;
                }
                for s in &selections {
                    cases.push(Case {
                        topology: t.clone(),
                        selection: s.clone(),
                        faults: vec![(node.clone(), fault.clone())],
                    });
                }
            }
        }
    }
    if pairs && let Some(first) = topologies.first() {
        let windows: Vec<&String> = nodes_of[first]
            .iter()
            .filter(|(_, os)| os == "windows")
            .map(|(n, _)| n)
            .collect();
        if let [a, b, ..] = windows.as_slice() {
            for (i, (f1, _)) in faults.iter().enumerate() {
                for (f2, _) in faults.iter().skip(i + 1) {
                    cases.push(Case {
                        topology: first.clone(),
                        selection: "all".into(),
                        faults: vec![((*a).clone(), f1.clone()), ((*b).clone(), f2.clone())],
                    });
                }
            }
        }
    }
    eprintln!("{} runs, {jobs} at a time", cases.len());

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let (bin, cases, next, results, scratch) = (&bin, &cases, &next, &results, &scratch);
            scope.spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(case) = cases.get(i) else { break };
                    let outcome = run(bin, case, &scratch.join(format!("job-{job}")));
                    if i % 25 == 0 {
                        eprintln!("{i}/{} runs ({} s)", cases.len(), started.elapsed().as_secs());
                    }
                    if let Ok(mut r) = results.lock() {
                        r.push((i, outcome));
                    }
                }
            });
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    let mut results = results.into_inner().map_err(|e| e.to_string())?;
    results.sort_by_key(|(i, _)| *i);

    let mut scores: BTreeMap<(String, String), Score> = BTreeMap::new();
    let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut misses: Vec<String> = Vec::new();
    let mut extras: Vec<String> = Vec::new();
    let mut pair_score = (0usize, 0usize);
    let mut refused = 0;
    for (i, outcome) in &results {
        let case = &cases[*i];
        let label = format!(
            "{} {} {}",
            case.topology,
            case.selection,
            case.faults
                .iter()
                .map(|(n, f)| format!("{f}@{n}"))
                .collect::<Vec<_>>()
                .join("+")
        );
        let (exit, causes, ms) = match outcome {
            Outcome::Refused => {
                refused += 1;
                continue;
            }
            Outcome::Broken(why) => {
                misses.push(format!("{label}: broken run: {why}"));
                continue;
            }
            Outcome::Ran {
                exit,
                causes,
                diagnosis_ms,
            } => (exit, causes, diagnosis_ms),
        };
        if case.faults.len() == 2 {
            pair_score.1 += 1;
            let found = case.faults.iter().all(|(node, fault)| {
                causes
                    .iter()
                    .take(2)
                    .any(|c| &c.id == fault && c.nodes == [node.clone()])
            });
            if found {
                pair_score.0 += 1;
            } else {
                misses.push(format!("{label}: top causes {}", tops(causes)));
            }
            continue;
        }
        let score = scores
            .entry((case.topology.clone(), case.selection.clone()))
            .or_default();
        if let Some(ms) = ms {
            score.diagnosis_ms.push(*ms);
        }
        let Some((node, fault)) = case.faults.first() else {
            score.clean_runs += 1;
            score.clean_false += causes.len();
            if !causes.is_empty() {
                misses.push(format!(
                    "{label}: clean run, causes {}",
                    causes.iter().map(|c| c.id.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
            continue;
        };
        if *exit == Some(0) {
            score.unobserved += 1;
            score.false_causes += causes.len();
            continue;
        }
        score.scored += 1;
        let top = causes.first();
        *confusion
            .entry(fault.clone())
            .or_default()
            .entry(top.map_or("(none)".into(), |c| c.id.clone()))
            .or_default() += 1;
        let first = top.is_some_and(|c| &c.id == fault);
        if first {
            score.rank1 += 1;
        }
        if causes.iter().take(3).any(|c| &c.id == fault) {
            score.rank3 += 1;
        }
        let localised = top.is_some_and(|c| &c.id == fault && c.nodes == [node.clone()]);
        if localised {
            score.localised += 1;
        } else {
            misses.push(format!("{label}: top causes {}", tops(causes)));
        }
        if causes.len() > 1 {
            score.extra += 1;
            extras.push(format!("{label}: causes {}", tops(causes)));
        }
    }

    println!(
        "Triage accuracy: {} runs ({refused} refused: the fault does not apply there) in {} s\n",
        cases.len(),
        started.elapsed().as_secs()
    );
    println!(
        "{:<28} {:<8} {:>6} {:>8} {:>8} {:>10} {:>6} {:>10} {:>12} {:>10}",
        "TOPOLOGY",
        "SUITES",
        "SCORED",
        "RANK-1",
        "RANK-3",
        "LOCALISED",
        "EXTRA",
        "UNOBSERVED",
        "FALSE CAUSES",
        "DIAG MS"
    );
    let mut total = Score::default();
    for ((t, s), sc) in &scores {
        let median = {
            let mut v = sc.diagnosis_ms.clone();
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        println!(
            "{:<28} {:<8} {:>6} {:>8} {:>8} {:>10} {:>6} {:>10} {:>12} {:>10}",
            t,
            s,
            sc.scored,
            percent(sc.rank1, sc.scored),
            percent(sc.rank3, sc.scored),
            percent(sc.localised, sc.scored),
            sc.extra,
            sc.unobserved,
            format!("{}+{}", sc.clean_false, sc.false_causes),
            median.map_or("-".into(), |m| m.to_string())
        );
        total.scored += sc.scored;
        total.rank1 += sc.rank1;
        total.rank3 += sc.rank3;
        total.localised += sc.localised;
        total.extra += sc.extra;
        total.unobserved += sc.unobserved;
        total.false_causes += sc.false_causes;
        total.clean_runs += sc.clean_runs;
        total.clean_false += sc.clean_false;
    }
    println!(
        "{:<28} {:<8} {:>6} {:>8} {:>8} {:>10} {:>6} {:>10} {:>12}",
        "all",
        "",
        total.scored,
        percent(total.rank1, total.scored),
        percent(total.rank3, total.scored),
        percent(total.localised, total.scored),
        total.extra,
        total.unobserved,
        format!("{}+{}", total.clean_false, total.false_causes)
    );
    println!(
        "(EXTRA: scored runs that named a cause besides the injected one; FALSE CAUSES: causes named on the {} clean runs + on runs whose fault the selection does not observe)",
        total.clean_runs
    );
    if pair_score.1 > 0 {
        println!(
            "\nPairs of faults on two Windows nodes ({}, all suites): both causes first and second, each on its node: {} of {} ({})",
            topologies.first().map_or("", String::as_str),
            pair_score.0,
            pair_score.1,
            percent(pair_score.0, pair_score.1)
        );
    }
    println!("\nConfusion matrix (injected fault → top cause, scored runs):");
    for (fault, tops) in &confusion {
        let row: Vec<String> = tops.iter().map(|(c, n)| format!("{c} {n}")).collect();
        println!("  {fault:<32} → {}", row.join(", "));
    }
    if !extras.is_empty() {
        println!("\nRuns with a cause besides the injected one ({}):", extras.len());
        for m in &extras {
            println!("  {m}");
        }
    }
    if !misses.is_empty() {
        println!("\nMisses ({}):", misses.len());
        for m in &misses {
            println!("  {m}");
        }
    }
    Ok(())
}
