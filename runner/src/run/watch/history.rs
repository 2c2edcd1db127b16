//! A watch's history: one JSON line per cycle appended to `--history DIR`, in segment files
//! (`cycles-<start time>-<run>-<n>.jsonl`, so that a restarted watch never appends to an old
//! segment) of bounded length, so that `--retain` cycles are kept by deleting whole old segments
//! (an append never rewrites what is there; files not named so are never touched); and `mixcheck history --from DIR`, which reads them back and
//! prints per cell its flake ratio and latency trend, and the cycles in which a verdict changed.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One cell's judgement in one cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellLine {
    pub cell: String,
    pub check: String,
    /// What tells the cell from others of its check between the same nodes: its protocol and
    /// variant (`tcp cluster-ip`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub variant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from_node: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub to_node: String,
    pub verdict: String,
    pub ms: u64,
}

/// One cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cycle {
    pub cycle: u64,
    /// When it ended (RFC 3339).
    pub at: String,
    pub duration_ms: u64,
    pub cells: Vec<CellLine>,
    /// The likely causes over the window after the cycle: `cause@node confidence%`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<String>,
    /// What kept the cycle from probing, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why the history could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("{path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("{path}:{line}:{column}: not a cycle of a watch's history: {message}")]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}: no history (*.jsonl) there")]
    Empty(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryError + '_ {
    move |cause| HistoryError::Io {
        path: path.display().to_string(),
        cause,
    }
}

/// Appends cycles to a folder, keeping the last `retain` (and at most one segment more).
#[derive(Debug)]
pub struct Writer {
    dir: PathBuf,
    retain: usize,
    /// Names this watch's segments apart from an earlier watch's.
    run: String,
    /// The segment being written and how many lines it holds.
    current: Option<(PathBuf, usize)>,
    /// Every segment, oldest first, with its lines (counted once, when the writer starts).
    segments: Vec<(PathBuf, usize)>,
    /// Segments this writer started.
    started: u64,
}

/// A segment's name: `cycles-` and the time its first cycle ended.
const PREFIX: &str = "cycles-";

impl Writer {
    pub fn new(dir: &Path, retain: usize, run: &str) -> Result<Self, HistoryError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let segments = segments(dir)?.into_iter().map(|p| {
            let n = count_lines(&p);
            (p, n)
        });
        Ok(Writer {
            dir: dir.to_path_buf(),
            retain: retain.max(1),
            run: run.to_string(),
            current: None,
            segments: segments.collect(),
            started: 0,
        })
    }

    /// Lines per segment: a tenth of what is retained.
    fn segment_len(&self) -> usize {
        (self.retain / 10).max(1)
    }

    /// Appends one cycle, then deletes the oldest segments beyond what is retained.
    pub fn append(&mut self, cycle: &Cycle) -> Result<(), HistoryError> {
        let full = self.current.as_ref().is_none_or(|(_, n)| *n >= self.segment_len());
        if full {
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
            self.started += 1;
            let name = format!("{PREFIX}{stamp}-{}-{:06}.jsonl", self.run, self.started);
            self.current = Some((self.dir.join(name), 0));
        }
        let Some((path, lines)) = self.current.as_mut() else {
            return Ok(());
        };
        let mut line = serde_json::to_string(cycle).map_err(|e| HistoryError::Io {
            path: path.display().to_string(),
            cause: std::io::Error::other(e),
        })?;
        line.push('\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&*path)
            .map_err(io(path))?;
        f.write_all(line.as_bytes()).map_err(io(path))?;
        *lines += 1;
        let (path, lines) = (path.clone(), *lines);
        match self.segments.last_mut() {
            Some((last, n)) if *last == path => *n = lines,
            _ => self.segments.push((path, lines)),
        }
        self.prune()
    }

    /// Deletes whole old segments — never the one being written — while the others still hold
    /// `retain` cycles.
    fn prune(&mut self) -> Result<(), HistoryError> {
        let mut total: usize = self.segments.iter().map(|(_, n)| n).sum();
        while self.segments.len() > 1 && total - self.segments[0].1 >= self.retain {
            let (path, n) = self.segments.remove(0);
            std::fs::remove_file(&path).map_err(io(&path))?;
            total -= n;
        }
        Ok(())
    }
}

fn count_lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |t| t.lines().count())
}

/// The history's segment files, oldest first.
fn segments(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Every cycle of the history in `dir`, oldest first; a malformed line names its file, line
/// and column.
pub fn read(dir: &Path) -> Result<Vec<Cycle>, HistoryError> {
    let files = segments(dir)?;
    if files.is_empty() {
        return Err(HistoryError::Empty(dir.display().to_string()));
    }
    let mut cycles = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        for (k, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let cycle: Cycle = serde_json::from_str(line).map_err(|e| HistoryError::Parse {
                path: path.display().to_string(),
                line: k + 1,
                column: e.column(),
                message: e.to_string(),
            })?;
            cycles.push(cycle);
        }
    }
    // In the order written: segments by name (their start time), lines in order.
    Ok(cycles)
}

/// One cell over the history.
#[derive(Debug, Default)]
struct Trend {
    check: String,
    ends: String,
    attempts: usize,
    failed: usize,
    ms: Vec<u64>,
}

fn mean(v: &[u64]) -> u64 {
    if v.is_empty() {
        0
    } else {
        v.iter().sum::<u64>() / v.len() as u64
    }
}

/// What `mixcheck history` prints: per cell its flake ratio and latency trend (the mean of the
/// first and second half of its attempts), then the cycles in which a verdict changed.
pub fn summarise(cycles: &[Cycle]) -> String {
    let mut trends: BTreeMap<&str, Trend> = BTreeMap::new();
    let mut last: BTreeMap<&str, &str> = BTreeMap::new();
    let mut changes = Vec::new();
    for c in cycles {
        for l in &c.cells {
            let t = trends.entry(&l.cell).or_default();
            t.check = if l.variant.is_empty() {
                l.check.clone()
            } else {
                format!("{} ({})", l.check, l.variant)
            };
            t.ends = match (l.from_node.as_str(), l.to_node.as_str()) {
                ("", "") => String::new(),
                (f, "") => f.to_string(),
                (f, to) => format!("{f} → {to}"),
            };
            if matches!(l.verdict.as_str(), "error" | "indeterminate" | "not-applicable") {
                continue;
            }
            t.attempts += 1;
            t.failed += usize::from(l.verdict == "fail");
            t.ms.push(l.ms);
            if let Some(before) = last.insert(&l.cell, &l.verdict)
                && before != l.verdict
            {
                changes.push(format!(
                    "  cycle {} ({}): {} {}: {before} → {}",
                    c.cycle, c.at, l.check, t.ends, l.verdict
                ));
            }
        }
    }
    let first = cycles.first().map_or("", |c| c.at.as_str());
    let end = cycles.last().map_or("", |c| c.at.as_str());
    let mut out = format!("{} cycles from {first} to {end}\n\n", cycles.len());
    out.push_str(&format!(
        "{:<52} {:<28} {:>8} {:>6}  {}\n",
        "CHECK", "NODES", "ATTEMPTS", "FLAKE", "LATENCY ms (first half → second half)"
    ));
    let mut rows: Vec<&Trend> = trends.values().filter(|t| t.attempts > 0).collect();
    rows.sort_by(|a, b| {
        let ra = a.failed as f64 / a.attempts as f64;
        let rb = b.failed as f64 / b.attempts as f64;
        rb.total_cmp(&ra)
            .then_with(|| a.check.cmp(&b.check))
            .then_with(|| a.ends.cmp(&b.ends))
    });
    for t in rows {
        let half = t.ms.len() / 2;
        let (a, b) = t.ms.split_at(half);
        out.push_str(&format!(
            "{:<52} {:<28} {:>8} {:>6.2}  {} → {}\n",
            t.check,
            t.ends,
            t.attempts,
            t.failed as f64 / t.attempts as f64,
            mean(if a.is_empty() { b } else { a }),
            mean(b)
        ));
    }
    let errors: Vec<String> = cycles
        .iter()
        .filter_map(|c| c.error.as_ref().map(|e| format!("  cycle {} ({}): {e}", c.cycle, c.at)))
        .collect();
    if !errors.is_empty() {
        out.push_str(&format!("\nCycles that could not probe:\n{}\n", errors.join("\n")));
    }
    if changes.is_empty() {
        out.push_str("\nNo verdict changed.\n");
    } else {
        out.push_str(&format!("\nVerdict changes:\n{}\n", changes.join("\n")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(n: u64, verdict: &str, ms: u64) -> Cycle {
        Cycle {
            cycle: n,
            at: format!("2026-12-03T14:{:02}:00Z", n),
            duration_ms: 100,
            cells: vec![
                CellLine {
                    cell: "dns-a".into(),
                    check: "dns/service-fqdn".into(),
                    variant: String::new(),
                    from_node: "win2022-1".into(),
                    to_node: "linux-1".into(),
                    verdict: verdict.into(),
                    ms,
                },
                CellLine {
                    cell: "net-b".into(),
                    check: "network-flows/pod-ip-cross-node".into(),
                    variant: "tcp".into(),
                    from_node: "linux-1".into(),
                    to_node: "win2019-1".into(),
                    verdict: "pass".into(),
                    ms: 5,
                },
            ],
            causes: Vec::new(),
            error: None,
        }
    }

    /// Cycles written with a retention of 20 are read back in order (the oldest segments
    /// deleted); the summary gives each cell's flake ratio and latency trend and names the
    /// cycles in which a verdict changed.
    #[test]
    fn written_cycles_are_retained_read_back_and_summarised() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.jsonl"), "not a cycle\n").expect("a file of someone else's");
        let mut w = Writer::new(dir.path(), 20, "a1b2c3d4").expect("writer");
        for n in 1..=50u64 {
            let v = if n % 4 == 0 { "fail" } else { "pass" };
            w.append(&cycle(n, v, n * 2)).expect("append");
        }
        let back = read(dir.path()).expect("read");
        assert!((20..=22).contains(&back.len()), "{} cycles kept", back.len());
        assert_eq!(back.last().map(|c| c.cycle), Some(50));
        assert!(back.windows(2).all(|w| w[0].cycle + 1 == w[1].cycle), "contiguous");
        assert!(dir.path().join("notes.jsonl").exists(), "another file is never deleted");
        // A restarted watch (another run) starts its own segment and keeps the retention.
        let mut again = Writer::new(dir.path(), 20, "e5f6a7b8").expect("writer");
        for n in 1..=5u64 {
            again.append(&cycle(n, "pass", 1)).expect("append");
        }
        let after = read(dir.path()).expect("read");
        assert!((20..=22).contains(&after.len()), "{} cycles kept", after.len());
        assert_eq!(
            after.last().map(|c| c.cycle),
            Some(5),
            "the new watch's cycles come last"
        );
        let text = summarise(&back);
        let dns = text
            .lines()
            .find(|l| l.starts_with("dns/service-fqdn"))
            .expect("dns row");
        assert!(dns.contains("win2022-1 → linux-1"), "{dns}");
        assert!(dns.contains(" 0.2"), "a flake ratio of about a quarter: {dns}");
        let net = text.lines().find(|l| l.starts_with("network-flows/")).expect("net row");
        assert!(
            net.contains("(tcp)") && net.contains(" 0.00 ") && net.contains("5 → 5"),
            "{net}"
        );
        assert!(
            text.contains("dns/service-fqdn win2022-1 → linux-1: pass → fail"),
            "{text}"
        );
        assert!(text.contains("fail → pass"), "{text}");
    }

    #[test]
    fn a_malformed_line_names_file_line_and_column() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut w = Writer::new(dir.path(), 10, "r").expect("writer");
        w.append(&cycle(1, "pass", 1)).expect("append");
        let seg = segments(dir.path()).expect("segments").remove(0);
        let mut text = std::fs::read_to_string(&seg).expect("read");
        text.push_str("{\"cycle\": 2, \"at\": oops}\n");
        std::fs::write(&seg, text).expect("write");
        let e = read(dir.path()).expect_err("malformed").to_string();
        assert!(e.contains(&format!("{}:2:", seg.display())), "{e}");
    }

    #[test]
    fn an_empty_folder_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = read(dir.path()).expect_err("empty").to_string();
        assert!(e.contains("no history"), "{e}");
    }
}
