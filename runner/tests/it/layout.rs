//! The workspace's module layout: in each crate, the top-level modules depend on each other one
//! way only (no cycles), and so do the children of every folder at every depth; simcluster's
//! follow its documented layers (`api → store ← control ← node → network`, all over `config` and
//! `vocab`). Dependencies are read from each module's non-test code: `crate::` paths, and
//! `super::` paths that climb to the folder whose children are compared. No Rust file of the
//! workspace is longer than [`MAX_LINES`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level modules of a crate's `src` (files and folders, without the crate root) and,
/// for each, the other top-level modules its non-test code names with `crate::`.
fn module_graph(src: &Path) -> Graph {
    children_graph(src, &[])
}

/// The children of the module at `path` below `src` (`[]`: the crate's top level) — its files
/// and folders, without `mod.rs` and the test modules (`tests.rs`, a `tests/` folder) — and, for
/// each, the siblings its non-test code names: `crate::<path>::sibling`, or `super::` climbing
/// from a file to `path`.
fn children_graph(src: &Path, path: &[&str]) -> Graph {
    let dir = path.iter().fold(src.to_path_buf(), |d, p| d.join(p));
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("read src") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if path.is_dir() {
            if name != "tests" {
                modules.entry(name).or_default().extend(rust_files(&path));
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["lib", "main", "mod", "tests"].contains(&name.as_str())
        {
            modules.entry(name).or_default().push(path);
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let prefix: String = path.iter().map(|p| format!("{p}::")).collect();
    let crate_re = regex::Regex::new(&format!(r"crate::{prefix}([a-z_]+)")).expect("regex");
    modules
        .iter()
        .map(|(name, files)| {
            let mut deps = BTreeSet::new();
            for file in files {
                let rel = file.strip_prefix(&dir).expect("below the folder");
                // Test modules (`tests.rs`, or the files of a `tests/` folder) may use anything.
                if rel.file_name().is_some_and(|f| f == "tests.rs")
                    || rel.components().any(|c| c.as_os_str() == "tests")
                {
                    continue;
                }
                // `super::` repeated once per level between the file's module and `path`.
                let rel = rel.with_extension("");
                let mut levels = rel.components().count();
                if rel.file_name().is_some_and(|f| f == "mod") {
                    levels -= 1;
                }
                let super_re =
                    regex::Regex::new(&format!(r"(?:^|[^:\w])(?:super::){{{levels}}}([a-z_]+)")).expect("regex");
                let text = std::fs::read_to_string(file).expect("read module");
                // Test code (a trailing `#[cfg(test)]` module) may use anything.
                let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
                for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                    for c in crate_re.captures_iter(line).chain(super_re.captures_iter(line)) {
                        if names.contains(&c[1]) && c[1] != **name {
                            deps.insert(c[1].to_string());
                        }
                    }
                }
            }
            (name.clone(), deps)
        })
        .collect()
}

/// Every folder below `src` but the test modules' (`tests/`), as module paths (`src` itself, the
/// crate's top level, is `[]`), parents before their children.
fn folders(src: &Path) -> Vec<Vec<String>> {
    fn walk(dir: &Path, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(path.clone());
        let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("read dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n != "tests"))
            .collect();
        children.sort();
        for child in children {
            path.push(
                child
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string(),
            );
            walk(&child, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(src, &mut Vec::new(), &mut out);
    out
}

/// The cycles among the children of every folder below `src` (its top level included), each as
/// `folder: a → b → a`.
fn cycles_at_every_level(src: &Path) -> Vec<String> {
    folders(src)
        .iter()
        .filter_map(|path| {
            let path: Vec<&str> = path.iter().map(String::as_str).collect();
            let graph = children_graph(src, &path);
            cycle(&graph).map(|c| format!("{}: {}", path.join("/"), c.join(" → ")))
        })
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// A cycle in the graph, if there is one (as the modules along it).
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(node: &str, graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_string());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(x, y)| (x.to_string(), BTreeSet::from([y.to_string()])))
        .collect();
    assert_eq!(
        cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[rstest::rstest]
#[case::runner("src")]
#[case::simcluster("../simcluster/src")]
#[case::reports("../reports/src")]
fn no_module_cycles(#[case] src: &str) {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join(src));
    assert!(graph.len() > 3, "{src}: too few modules found: {graph:?}");
    assert_eq!(cycle(&graph), None, "{src}: {graph:#?}");
}

/// At every depth, the children of each folder depend on each other one way only.
#[rstest::rstest]
#[case::runner("src")]
#[case::simcluster("../simcluster/src")]
#[case::reports("../reports/src")]
fn no_module_cycles_at_any_level(#[case] src: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let levels = folders(&root);
    assert!(levels.len() > 1 || src.contains("reports"), "{src}: no folders found");
    let cycles = cycles_at_every_level(&root);
    assert!(cycles.is_empty(), "{src}: module cycles:\n{}", cycles.join("\n"));
}

/// A cycle planted one level down, through a `crate::` path one way and a `super::` path back,
/// is found.
#[test]
fn a_planted_cycle_one_level_down_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = dir.path().join("net");
    std::fs::create_dir_all(top.join("wire")).expect("mkdir");
    std::fs::write(top.join("mod.rs"), "mod dns;\nmod wire;\n").expect("write");
    std::fs::write(top.join("dns.rs"), "use crate::net::wire::Frame;\n").expect("write");
    std::fs::write(top.join("wire").join("mod.rs"), "mod codec;\n").expect("write");
    std::fs::write(
        top.join("wire").join("codec.rs"),
        "use super::super::dns::Name;\n#[cfg(test)]\nmod tests { use crate::net::other; }\n",
    )
    .expect("write");
    let graph = children_graph(dir.path(), &["net"]);
    assert_eq!(
        cycle(&graph),
        Some(vec!["dns".into(), "wire".into(), "dns".into()]),
        "{graph:#?}"
    );
    // Without the way back there is none.
    std::fs::write(top.join("wire").join("codec.rs"), "use super::Frame;\n").expect("write");
    assert_eq!(cycle(&children_graph(dir.path(), &["net"])), None);
}

/// A cycle planted three levels down, between two files of `node/exec/shell`, is found by the
/// walk over every folder, and named by its folder.
#[test]
fn a_planted_cycle_three_levels_down_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shell = dir.path().join("node").join("exec").join("shell");
    std::fs::create_dir_all(&shell).expect("mkdir");
    std::fs::write(dir.path().join("lib.rs"), "mod node;\n").expect("write");
    std::fs::write(dir.path().join("node").join("mod.rs"), "mod exec;\n").expect("write");
    std::fs::write(dir.path().join("node").join("exec").join("mod.rs"), "mod shell;\n").expect("write");
    std::fs::write(shell.join("mod.rs"), "mod eval;\nmod words;\n").expect("write");
    std::fs::write(shell.join("eval.rs"), "use super::words::split;\n").expect("write");
    std::fs::write(shell.join("words.rs"), "use crate::node::exec::shell::eval::run;\n").expect("write");
    assert_eq!(
        cycles_at_every_level(dir.path()),
        vec!["node/exec/shell: eval → words → eval".to_string()]
    );
    // Without the way back there is none.
    std::fs::write(shell.join("words.rs"), "pub fn split() {}\n").expect("write");
    assert_eq!(cycles_at_every_level(dir.path()), Vec::<String>::new());
    // Test modules may use anything: a `tests/` folder of exec naming kubelet, which uses exec,
    // is no cycle.
    let node = dir.path().join("node");
    std::fs::write(node.join("mod.rs"), "mod exec;\nmod kubelet;\n").expect("write");
    std::fs::write(node.join("kubelet.rs"), "use crate::node::exec::shell;\n").expect("write");
    std::fs::create_dir_all(node.join("exec").join("tests")).expect("mkdir");
    std::fs::write(
        node.join("exec").join("tests").join("mod.rs"),
        "use crate::node::kubelet::plan;\n",
    )
    .expect("write");
    assert_eq!(cycles_at_every_level(dir.path()), Vec::<String>::new());
    // The same use from exec's own code is one.
    std::fs::write(
        node.join("exec").join("mod.rs"),
        "mod shell;\nuse crate::node::kubelet::plan;\n",
    )
    .expect("write");
    assert_eq!(
        cycles_at_every_level(dir.path()),
        vec!["node: exec → kubelet → exec".to_string()]
    );
}

/// The longest a Rust file may be, tests included.
const MAX_LINES: usize = 1500;

/// No Rust file of the workspace (sources, tests, examples; build output excluded) is longer
/// than [`MAX_LINES`].
#[test]
fn no_rust_file_is_too_long() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read dir") {
            let path = entry.expect("entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() {
                if !name.starts_with('.') && !name.starts_with("target") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    walk(&root, &mut files);
    assert!(files.len() > 100, "too few Rust files found: {}", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).expect("read file").lines().count();
            let shown = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            (lines > MAX_LINES).then(|| format!("{shown}: {lines} lines"))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "longer than {MAX_LINES} lines:\n{}", long.join("\n"));
}

/// The runner's folders follow the run's pipeline, each using only those below it: the
/// catalogue (data) under the cluster, probes over both, triage over probes, the run over all
/// of them, the command line on top; `errors` owns the exit codes of them all.
#[test]
fn runner_modules_follow_the_pipeline() {
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("catalogue", &[][..]),
        ("cluster", &["catalogue"][..]),
        ("probes", &["cluster", "catalogue"][..]),
        ("triage", &["probes", "cluster", "catalogue"][..]),
        ("errors", &["cluster", "catalogue"][..]),
        ("run", &["triage", "probes", "cluster", "catalogue", "errors"][..]),
        (
            "cli",
            &["run", "triage", "probes", "cluster", "catalogue", "errors"][..],
        ),
    ]);
    assert_layers("src", &allowed);
}

/// simcluster's layers, each with what it may use.
#[test]
fn simcluster_modules_follow_their_layers() {
    let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("vocab", &[][..]),
        ("config", &["vocab"][..]),
        ("store", &["config", "vocab"][..]),
        ("control", &["store", "config", "vocab"][..]),
        ("network", &["store", "config", "vocab"][..]),
        ("node", &["control", "network", "store", "config", "vocab"][..]),
        ("api", &["node", "store", "config", "vocab"][..]),
        (
            "cluster",
            &["api", "node", "network", "control", "store", "config", "vocab"][..],
        ),
    ]);
    assert_layers("../simcluster/src", &allowed);
}

/// The top-level modules of the crate at `src` are exactly `allowed`'s, and each uses only the
/// modules listed for it.
fn assert_layers(src: &str, allowed: &BTreeMap<&str, &[&str]>) {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join(src));
    let found: BTreeSet<&str> = graph.keys().map(String::as_str).collect();
    let documented: BTreeSet<&str> = allowed.keys().copied().collect();
    assert_eq!(found, documented, "{src}: top-level modules");
    for (module, deps) in &graph {
        let may = allowed[module.as_str()];
        for dep in deps {
            assert!(
                may.contains(&dep.as_str()),
                "{src}: {module} uses {dep}, outside its layers {may:?}"
            );
        }
    }
}
