//! Topology files edited as text for a test: a timing section swapped or removed.

/// `topology` with its top-level `timing` section replaced by `timing` (a whole section, or
/// nothing: instant proxies, no transient events).
pub fn with_timing(topology: &str, timing: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in topology.lines() {
        skipping = line.starts_with("timing:") || (skipping && line.starts_with(' '));
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(timing);
    out
}

/// `topology`'s top-level `timing` section, whole (empty when it has none).
pub fn timing_of(topology: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in topology.lines() {
        inside = line.starts_with("timing:") || (inside && line.starts_with(' '));
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// testdata/realistic.yaml, a cluster that converges as a real one does (proxy lag, slow
/// Windows pulls, transient events).
pub fn realistic() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/realistic.yaml"))
        .expect("testdata/realistic.yaml")
}

/// realistic.yaml's timing section with its upstream-sized delays on a clock `scale` times the
/// wall clock's pace, which a run that starts the cluster judges them on (the clock changes no
/// verdict: `run_cli::the_bundled_clusters_clock_changes_no_verdict`).
pub fn realistic_timing(scale: &str) -> String {
    let timing = timing_of(&realistic());
    assert!(!timing.is_empty(), "testdata/realistic.yaml has a timing section");
    format!("{timing}  scale: {scale}\n")
}

/// realistic.yaml whole, its delays on a clock `scale` times the wall clock's pace.
pub fn realistic_on_a_clock(scale: &str) -> String {
    with_timing(&realistic(), &realistic_timing(scale))
}

#[test]
fn a_timing_section_is_swapped_whole() {
    let t = "name: x\ntiming:\n  scale: 2\n  seed: 1\nnodes:\n  - {name: a, os: linux}\n";
    assert_eq!(with_timing(t, ""), "name: x\nnodes:\n  - {name: a, os: linux}\n");
    assert_eq!(
        with_timing(t, "timing:\n  scale: 3\n"),
        "name: x\nnodes:\n  - {name: a, os: linux}\ntiming:\n  scale: 3\n"
    );
}

#[test]
fn a_timing_section_is_read_whole() {
    let t = "name: x\ntiming:\n  scale: 2\n  seed: 1\nnodes:\n  - {name: a, os: linux}\n";
    assert_eq!(timing_of(t), "timing:\n  scale: 2\n  seed: 1\n");
    assert_eq!(timing_of("name: x\n"), "");
    let timing = realistic_timing("0.25");
    assert!(
        timing.starts_with("timing:\n") && timing.ends_with("\n  scale: 0.25\n"),
        "{timing}"
    );
    assert!(timing.contains("  programmingDelay: "), "{timing}");
    assert_eq!(timing_of(&realistic_on_a_clock("0.25")), timing);
}
