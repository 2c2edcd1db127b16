//! README.md and docs/ against what they describe: every flag they give a `mixcheck` command
//! exists on that command, every other `--flag` they name is one of mixcheck's or of a tool they
//! show (cargo, kubectl, …), the flag tables list each flag of their command with the default
//! `--help` prints, and what they link or name stays inside the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use rstest::rstest;

/// Flags the documents give tools other than mixcheck: cargo (`--workspace`, `--example`, …),
/// the benchmarks' examples (`--nodes`, `--pods`, `--watch`, …), kubectl (`--for`, `--as`, `create secret
/// docker-registry --docker-server`, …), heaptrack_print (`--flamegraph-cost-type`) and the node
/// agents whose flags the causes name (kube-proxy's `--hostname-override`, `--enable-dsr`).
const OTHER_TOOLS: &[&str] = &[
    "addons",
    "as",
    "call-graph",
    "cascade",
    "children",
    "concurrency",
    "current-replicas",
    "docker-password",
    "docker-server",
    "docker-username",
    "duration",
    "enable-dsr",
    "example",
    "faults",
    "feature-gates",
    "flamegraph-cost-type",
    "for",
    "hostname-override",
    "ignored",
    "include-ignored",
    "jobs",
    "locked",
    "no-pairs",
    "no-run",
    "no-default-features",
    "nodes",
    "path",
    "pods",
    "release",
    "replicas",
    "selections",
    "test-threads",
    "timeout",
    "timings",
    "topologies",
    "unit-graph",
    "watch",
    "watchers",
    "windows-priorityclass",
    "workspace",
];

/// One option of a command's `--help`.
#[derive(Debug)]
struct Flag {
    long: String,
    short: Option<char>,
    default: Option<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md and every docs/*.md, as (path from the repository root, text), in name order.
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root().join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            (n, text)
        })
        .collect()
}

/// `mixcheck ARGS --help`.
fn help(command: &str) -> String {
    let mut args: Vec<&str> = command.split_whitespace().collect();
    args.push("--help");
    let out = Command::new(env!("CARGO_BIN_EXE_mixcheck"))
        .args(&args)
        .output()
        .expect("run mixcheck");
    assert!(out.status.success(), "mixcheck {command} --help: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The options of a `--help` text, with the default each prints (`[default: …]`).
fn parse_flags(help: &str) -> Vec<Flag> {
    let mut flags: Vec<Flag> = Vec::new();
    let mut options = false;
    for line in help.lines() {
        if line.starts_with("Options:") {
            options = true;
            continue;
        }
        if !options {
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if (2..=6).contains(&indent) && trimmed.starts_with('-') {
            let (short, rest) = match trimmed.strip_prefix('-').and_then(|t| t.split_once(", ")) {
                Some((s, rest)) if s.chars().count() == 1 => (s.chars().next(), rest),
                _ => (None, trimmed),
            };
            let long: String = rest
                .trim_start_matches("--")
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            flags.push(Flag {
                long,
                short,
                default: None,
            });
        }
        if let (Some(at), Some(flag)) = (line.find("[default: "), flags.last_mut()) {
            let value = &line[at + "[default: ".len()..];
            flag.default = value.split_once(']').map(|(v, _)| v.to_string());
        }
    }
    flags
}

/// The subcommands a `--help` lists under `Commands:`, `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Every command (`run`, `sim serve`, …) with its options.
fn commands() -> BTreeMap<String, Vec<Flag>> {
    let mut out = BTreeMap::new();
    for command in subcommands(&help("")) {
        let sub = subcommands(&help(&command));
        if sub.is_empty() {
            out.insert(command.clone(), parse_flags(&help(&command)));
        } else {
            for s in sub {
                let full = format!("{command} {s}");
                out.insert(full.clone(), parse_flags(&help(&full)));
            }
        }
    }
    out
}

/// The code of each line: the whole line inside a fenced block, else its backtick spans; with
/// the line's number.
fn code(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push((i + 1, line.to_string()));
        } else {
            out.extend(line.split('`').skip(1).step_by(2).map(|span| (i + 1, span.to_string())));
        }
    }
    out
}

/// A flag as written (`[--dry-run]`, `--egress=BOOL`, `-o`) without its decoration: its name
/// and whether it is long.
fn flag_name(token: &str) -> Option<(bool, String)> {
    let token = token.trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | ',' | '.' | ';'));
    let name = token.split('=').next().unwrap_or_default();
    if let Some(long) = name.strip_prefix("--") {
        let ok = long.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && long.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        return ok.then(|| (true, long.to_string()));
    }
    let short = name.strip_prefix('-')?;
    (short.chars().count() == 1 && short.chars().all(|c| c.is_ascii_alphabetic())).then(|| (false, short.to_string()))
}

fn has(flags: &[Flag], long: bool, name: &str) -> bool {
    flags.iter().any(|f| {
        if long {
            f.long == name
        } else {
            f.short.is_some_and(|s| name.chars().eq([s]))
        }
    })
}

/// A flag written after `mixcheck COMMAND` in the documents' code belongs to that command.
#[test]
fn every_flag_given_to_a_mixcheck_command_is_one_of_its_flags() {
    let commands = commands();
    let mut wrong = Vec::new();
    for (file, text) in documents() {
        for (line, code) in code(&text) {
            let tokens: Vec<&str> = code.split_whitespace().collect();
            for (at, token) in tokens.iter().enumerate() {
                if *token != "mixcheck" {
                    continue;
                }
                let one = tokens.get(at + 1).copied().unwrap_or_default();
                let two = format!("{one} {}", tokens.get(at + 2).copied().unwrap_or_default());
                let (command, start) = if commands.contains_key(&two) {
                    (two, at + 3)
                } else if commands.contains_key(one) {
                    (one.to_string(), at + 2)
                } else {
                    continue;
                };
                let flags = &commands[&command];
                for t in tokens[start.min(tokens.len())..]
                    .iter()
                    .take_while(|t| !matches!(**t, "|" | "&&" | ";" | "#" | "mixcheck"))
                {
                    if let Some((long, name)) = flag_name(t)
                        && !has(flags, long, &name)
                    {
                        wrong.push(format!("{file}:{line}: `mixcheck {command}` has no flag {t}"));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "flags --help does not know:\n{}", wrong.join("\n"));
}

/// Any `--flag` the documents name is one of mixcheck's or of another tool they show.
#[test]
fn every_flag_named_anywhere_exists() {
    let known: BTreeSet<String> = commands()
        .into_values()
        .flatten()
        .map(|f| f.long)
        .chain(OTHER_TOOLS.iter().map(|s| s.to_string()))
        .collect();
    let mut wrong = Vec::new();
    for (file, text) in documents() {
        for (i, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("--") {
                let before = line[..at].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
                    continue;
                }
                let name: String = line[at + 2..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) && !known.contains(&name) {
                    wrong.push(format!("{file}:{}: --{name}", i + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags neither mixcheck nor the tools in OTHER_TOOLS have:\n{}",
        wrong.join("\n")
    );
}

/// A flag table (`| flag | meaning |` under a heading naming `` `mixcheck COMMAND` flags``)
/// lists every flag of the command, none it lacks, and each default `--help` prints as
/// "default `VALUE`".
#[rstest]
#[case::run("docs/reference.md", "run")]
#[case::sim_serve("docs/bundled-cluster.md", "sim serve")]
fn flag_tables_match_help(#[case] file: &str, #[case] command: &str) {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let heading = format!("`mixcheck {command}` flags");
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !(l.starts_with('#') && l.contains(&heading)))
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .collect();
    assert!(!table.is_empty(), "{file}: no table under a heading naming {heading}");
    let flags = parse_flags(&help(command));
    let mut wrong = Vec::new();
    let mut listed = BTreeSet::new();
    for row in &table {
        let mut columns = row.trim_matches('|').splitn(2, " | ");
        let names = columns.next().unwrap_or_default();
        let meaning = columns.next().unwrap_or_default();
        let stated = meaning
            .split_once("default `")
            .and_then(|(_, v)| v.split_once('`'))
            .map(|(v, _)| v);
        for token in names.split(['`', ' ', ',']) {
            let Some((long, name)) = flag_name(token) else {
                continue;
            };
            let Some(flag) = flags.iter().find(|f| {
                if long {
                    f.long == name
                } else {
                    f.short.is_some_and(|s| name.chars().eq([s]))
                }
            }) else {
                wrong.push(format!("{file}: `mixcheck {command}` has no flag {token}"));
                continue;
            };
            listed.insert(flag.long.clone());
            match (&flag.default, stated) {
                (Some(d), Some(s)) if d != s => wrong.push(format!(
                    "{file}: --{} defaults to {d:?} (--help), the table says {s:?}",
                    flag.long
                )),
                (Some(d), None) => wrong.push(format!(
                    "{file}: --{} defaults to {d:?} (--help); the table states no default",
                    flag.long
                )),
                (None, Some(s)) => wrong.push(format!(
                    "{file}: --{} has no default in --help, the table says {s:?}",
                    flag.long
                )),
                _ => {}
            }
        }
    }
    for f in &flags {
        // --help, --version and the global --verbose are every command's.
        if !listed.contains(&f.long) && !matches!(f.long.as_str(), "help" | "version" | "verbose") {
            wrong.push(format!("{file}: the table lacks --{} of `mixcheck {command}`", f.long));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Markdown links and named docs/ files resolve inside the repository: no `../` out of it, no
/// page that is not there.
#[test]
fn links_stay_inside_the_repository() {
    let root = root().canonicalize().expect("the repository root");
    let mut wrong = Vec::new();
    for (file, text) in documents() {
        let dir = root
            .join(&file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.clone());
        let targets = text
            .match_indices("](")
            .filter_map(|(at, _)| text[at + 2..].split_once(')').map(|(t, _)| t.to_string()));
        for target in targets {
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with('#') {
                continue;
            }
            let path = dir.join(target.split('#').next().unwrap_or_default());
            match path.canonicalize() {
                Ok(p) if p.starts_with(&root) => {}
                Ok(_) => wrong.push(format!("{file}: {target} is outside the repository")),
                Err(_) => wrong.push(format!("{file}: {target} does not exist")),
            }
        }
        for (line, span) in code(&text) {
            if span.contains("../") && !span.contains("cd ") {
                wrong.push(format!("{file}:{line}: `{span}` points outside the repository"));
            }
            let page = span.trim();
            if page.starts_with("docs/") && page.ends_with(".md") && !root.join(page).is_file() {
                wrong.push(format!("{file}:{line}: {page} does not exist"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn help_parsing_finds_names_and_defaults() {
    let help = "Options:\n      --listen <ADDR:PORT>  Address [default: 127.0.0.1:0]\n  -o, --output <OUTPUT>\n          What\n\n          [default: table]\n  -q, --quiet\n          Only\n";
    let flags = parse_flags(help);
    let names: Vec<_> = flags
        .iter()
        .map(|f| (f.long.as_str(), f.short, f.default.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("listen", None, Some("127.0.0.1:0")),
            ("output", Some('o'), Some("table")),
            ("quiet", Some('q'), None)
        ]
    );
}
