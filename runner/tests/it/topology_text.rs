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

#[test]
fn a_timing_section_is_swapped_whole() {
    let t = "name: x\ntiming:\n  scale: 2\n  seed: 1\nnodes:\n  - {name: a, os: linux}\n";
    assert_eq!(with_timing(t, ""), "name: x\nnodes:\n  - {name: a, os: linux}\n");
    assert_eq!(
        with_timing(t, "timing:\n  scale: 3\n"),
        "name: x\nnodes:\n  - {name: a, os: linux}\ntiming:\n  scale: 3\n"
    );
}
