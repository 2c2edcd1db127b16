//! The commands: `run` (plan, run, report), and the small ones that read a saved run, the
//! catalogue or a cluster (report, diagnose, diff, results, list, lint, images, cleanup,
//! prepull), and `watch` with the `history` it leaves.

use crate::cli::args::{
    CleanupArgs, DiagnoseArgs, DiffArgs, DiffOutput, HistoryArgs, ImagesArgs, LintArgs, ListArgs, PrepullArgs,
    PrepullOutput, ReportArgs, ResultsArgs, RunArgs, WatchArgs,
};
use crate::cli::output::{Detail, render, show_saved, write_reports};
use crate::cli::stdout::{out, outln};
use crate::errors::{Code, Error};

/// `mixcheck run`: plan, run, report; the exit code says whether the gate passed.
pub async fn run(args: &RunArgs) -> Result<Code, Error> {
    let started = std::time::Instant::now();
    let plan = crate::run::plan::RunPlan::from_args(args)?;
    let fixtures = crate::cluster::fixture::Fixtures::load(None)?;
    if plan.plan_only {
        return match crate::run::preview::show(&plan, &fixtures).await {
            Ok(text) => {
                out!("{text}");
                Ok(Code::Passed)
            }
            Err((code, why)) => {
                eprintln!("mixcheck: {why}");
                Ok(code)
            }
        };
    }
    let finished = crate::run::execute(&plan, &fixtures).await;
    let report = finished.report;
    // A run that could not start (no kubeconfig, an unreachable cluster) still leaves its files
    // for CI, but says only why it stopped: an empty report on the terminal is noise.
    let stopped_early = report.aborted.is_some() && report.cells.is_empty();
    write_reports(&report, &plan.report_dir, !stopped_early);
    if let Some(path) = &plan.bundle {
        // A run that stopped early still bundles its report (and says what it could not read).
        let collected = finished.bundle.unwrap_or_default();
        match crate::triage::bundle::write(path, &report, &collected) {
            Ok(path) => eprintln!(
                "Evidence bundle: {} (Secret values and tokens redacted)",
                path.display()
            ),
            Err(e) => eprintln!("mixcheck: {e}"),
        }
    }
    if !(stopped_early && args.output == crate::cli::args::Output::Table) {
        out!("{}", render(&report, args.output, detail(args.details))?);
    }
    if let Some(diff) = &report.baseline {
        eprint!("{}", diff.render_text());
    }
    if args.in_cluster {
        // The Job's log carries the results for `mixcheck results --from-job`.
        out!("{}", crate::cluster::job::results_block(&report));
        outln!(
            "Results: {}",
            plan.report_dir
                .join(mixcheck_reports::results_json::FILE_NAME)
                .display()
        );
    }
    if let Some(a) = &report.aborted {
        eprintln!("mixcheck: {}", a.reason);
    }
    if !stopped_early {
        eprintln!("Wall time: {:.1}s", started.elapsed().as_secs_f64());
    }
    if let Some(cluster) = finished.kept {
        keep_serving(cluster, &plan.report_dir, &report.run_id).await;
    }
    Ok(finished.code)
}

/// `--keep` on the bundled cluster: it keeps serving, with a kubeconfig beside the reports, so
/// that the printed reproduce commands run as printed, until Ctrl-C (or SIGTERM).
async fn keep_serving(cluster: simcluster::Cluster, report_dir: &std::path::Path, run_id: &str) {
    let interrupt = crate::cli::sim::Interrupt::install();
    let path = report_dir.join("kubeconfig");
    if let Err(e) = cluster.write_kubeconfig(&path) {
        eprintln!(
            "mixcheck: cannot write the bundled cluster's kubeconfig to {}: {e}",
            path.display()
        );
    } else {
        let shown = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        eprintln!(
            "The bundled cluster keeps serving at {} with namespace mixcheck-{run_id}, so the reproduce commands run as printed:\n  export KUBECONFIG={}\n  kubectl get pods,svc -n mixcheck-{run_id} -o wide\nPress Ctrl-C to stop it.",
            cluster.url(),
            shown.display()
        );
    }
    interrupt.wait().await;
    eprintln!("Stopping the bundled cluster");
    cluster.shutdown().await;
    let _ = std::fs::remove_file(&path);
}

/// What the table output shows: `--details` lists every failing cell.
fn detail(details: bool) -> Detail {
    if details { Detail::Full } else { Detail::Summary }
}

/// `mixcheck report`: a saved run rendered again; the exit code is the run's gate.
pub fn report(args: &ReportArgs) -> Result<Code, Error> {
    let report = mixcheck_reports::results_json::read(&args.from)?;
    show_saved(&report, args.report_dir.as_deref(), args.output, detail(args.details))
}

/// `mixcheck diagnose`: a saved run's failing cells diagnosed again, offline, with the
/// evidence the run gathered; the exit code is the run's gate.
pub fn diagnose(args: &DiagnoseArgs) -> Result<Code, Error> {
    let mut report = mixcheck_reports::results_json::read(&args.from)?;
    let catalogue = crate::catalogue::rules::Catalogue::embedded()?;
    let suites = crate::catalogue::suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    let causes = crate::catalogue::causes::Catalogue::load(args.sources.causes.as_deref(), &catalogue, &suites)?;
    let (evidence, node_diagnostics) = report
        .diagnosis
        .take()
        .map(|d| (d.evidence, d.node_diagnostics))
        .unwrap_or_default();
    report.diagnosis = Some(crate::triage::diagnose::diagnose(
        &report,
        &causes,
        evidence,
        node_diagnostics,
    ));
    show_saved(&report, args.report_dir.as_deref(), args.output, Detail::Diagnosis)
}

/// `mixcheck diff`: two saved runs compared cell by cell; exit 1 when the newer regressed.
pub fn diff(args: &DiffArgs) -> Result<Code, Error> {
    let old = mixcheck_reports::results_json::read(&args.old)?;
    let new = mixcheck_reports::results_json::read(&args.new)?;
    let diff = new.against(&old, args.strict);
    match args.output {
        DiffOutput::Table => out!("{}", diff.render_text()),
        DiffOutput::Markdown => out!("{}", diff.render_markdown()),
        DiffOutput::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&diff).map_err(|e| Error::Failed(e.to_string()))?
        ),
    }
    Ok(if diff.regressed() { Code::Failed } else { Code::Passed })
}

/// A real cluster named by a kubeconfig and context, for the commands that read one (an
/// unreachable one ends the command with exit code 3).
async fn real_cluster(
    kubeconfig: Option<&std::path::PathBuf>,
    context: Option<&String>,
) -> Result<crate::cluster::target::Target, Error> {
    let spec = crate::cluster::target::TargetSpec::Kubeconfig {
        path: kubeconfig.cloned(),
        context: context.cloned(),
    };
    Ok(crate::cluster::target::connect(&spec, &|m| eprintln!("{m}")).await?)
}

/// `mixcheck results --from-job`: an in-cluster run's results, read from its Job's log and
/// rendered like `mixcheck report --from`; the exit code is the run's gate.
pub async fn results(args: &ResultsArgs) -> Result<Code, Error> {
    let target = real_cluster(args.kubeconfig.as_ref(), args.context.as_ref()).await?;
    let report = crate::cluster::job::results(&target.client, &args.namespace, &args.from_job).await?;
    show_saved(&report, args.report_dir.as_deref(), args.output, detail(args.details))
}

/// `mixcheck list`: the checks with their rule ids and sources, or the rules no check covers.
pub fn list(args: &ListArgs) -> Result<Code, Error> {
    let catalogue = crate::catalogue::rules::Catalogue::embedded()?;
    let suites = crate::catalogue::suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    if args.uncovered {
        let covered = suites.covered_rules(&catalogue);
        outln!(
            "{:<32} {:<5} {:<14} {:<40} DOCUMENTED (SOURCES) — WHY NO CHECK",
            "RULE",
            "CAT",
            "LEVEL",
            "APPLIES WHEN"
        );
        let uncovered: Vec<_> = catalogue.iter().filter(|r| !covered.contains(r.id.as_str())).collect();
        for r in &uncovered {
            let level = match r.level {
                crate::catalogue::rules::Level::Requirement => "requirement",
                crate::catalogue::rules::Level::Recommendation => "recommendation",
            };
            outln!(
                "{:<32} {:<5} {:<14} {:<40} {} ({}) — {}",
                r.id,
                r.category,
                level,
                r.applies_when,
                r.documented,
                r.sources.join(", "),
                r.uncovered.as_deref().unwrap_or("(no reason stated)")
            );
        }
        eprintln!("{} of {} rules have no check", uncovered.len(), catalogue.len());
        return Ok(Code::Passed);
    }
    for s in &suites.suites {
        outln!("{} ({}): {}", s.name, s.category, s.description.trim());
        for c in &s.checks {
            outln!("  {:<40} {:<28} {}", c.name, c.rule, c.sources.join(", "));
            outln!("  {:<40} {}", "", c.title);
            if let Some(why) = &c.pending {
                outln!("  {:<40} pending (runs with --include-pending): {why}", "");
            }
            if !c.description.trim().is_empty() {
                outln!("  {:<40} {}", "", c.description.trim());
            }
        }
    }
    Ok(Code::Passed)
}

/// `mixcheck lint`: suites and fixtures validated; exit 2 on the first problem.
pub fn lint(args: &LintArgs) -> Result<Code, Error> {
    for (dir, what) in [
        (args.sources.suites.as_deref(), "suite files"),
        (args.fixtures.as_deref(), "fixture files"),
    ] {
        if let Some(dir) = dir.filter(|d| d.is_dir())
            && yaml_files(dir) == 0
        {
            return Err(Error::Usage(format!(
                "{}: no {what} (*.yaml) in this folder; nothing to lint",
                dir.display()
            )));
        }
    }
    let catalogue = crate::catalogue::rules::Catalogue::embedded()?;
    let suites = crate::catalogue::suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    let fixtures = crate::cluster::fixture::Fixtures::load(args.fixtures.as_deref())?;
    let causes = crate::catalogue::causes::Catalogue::load(args.sources.causes.as_deref(), &catalogue, &suites)?;
    let checks = suites.checks().count();
    outln!(
        "ok: {} suites, {checks} checks, {} fixtures, {} causes",
        suites.suites.len(),
        fixtures.by_name.len(),
        causes.causes.len()
    );
    Ok(Code::Passed)
}

/// How many `*.yaml` files a folder holds (0 when it cannot be read).
fn yaml_files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
            .count()
    })
}

/// `mixcheck images`: the fixture images — each once per OS with the Windows builds that pull
/// it and the source that says the image exists for them (the list to mirror), or one row per
/// fixture with `--by-fixture`; `--build` keeps what a node of one Windows build pulls.
pub fn images(args: &ImagesArgs) -> Result<Code, Error> {
    use crate::cluster::images;
    let fixtures = crate::cluster::fixture::Fixtures::load(None)?;
    let mirrors = crate::cluster::registry::Mirrors::parse(args.image_registry.as_deref(), &args.image_registry_map)
        .map_err(Error::Usage)?;
    let shown = |image: &str| mirrors.rewrite(image);
    let build = match args.build.as_deref() {
        None => None,
        Some(text) => {
            let b = parse_windows_build(text).ok_or_else(|| {
                Error::Usage(format!(
                    "--build {text:?}: expected a Windows build such as 26100 or 10.0.26100"
                ))
            })?;
            let row = images::row(b);
            let tools = match row.network {
                images::NetworkImage::Agnhost => {
                    format!("agnhost ({}): netexec, curl.exe, agnhost connect", images::AGNHOST)
                }
                images::NetworkImage::ServerCorePowerShell => format!(
                    "mcr.microsoft.com/windows/servercore:{} with Windows PowerShell probes (agnhost publishes no variant for this build)",
                    row.servercore
                ),
            };
            eprintln!(
                "build {b}: pulls as {} ({}); network fixtures: {tools} [{}]",
                row.build, row.release, row.source
            );
            Some(row.build)
        }
    };
    let rows = image_rows(&fixtures, build);
    if args.by_fixture {
        outln!("{:<8} {:<6} {:<72} FIXTURE", "OS", "BUILD", "IMAGE");
        for i in fixtures.images().iter().filter(|i| build.is_none() || i.build == build) {
            let b = i.build.map_or("-".to_string(), |b| b.to_string());
            outln!("{:<8} {b:<6} {:<72} {}", i.os, shown(&i.image), i.fixture);
        }
        return Ok(Code::Passed);
    }
    outln!(
        "{:<8} {:<30} {:<80} {:<9} SOURCE",
        "OS",
        "WINDOWS BUILDS",
        "IMAGE",
        "FIXTURES"
    );
    for r in &rows {
        let builds = if r.builds.is_empty() {
            "-".to_string()
        } else {
            r.builds.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        };
        let source = r.source.unwrap_or("(not in the image table)");
        outln!(
            "{:<8} {builds:<30} {:<80} {:<9} {source}",
            r.os,
            shown(&r.image),
            r.fixtures
        );
    }
    eprintln!(
        "{} images; mirror them and point the run at the mirror with --image-registry-map or --image-registry (docs/images.md: the images per Windows build)",
        rows.len()
    );
    Ok(Code::Passed)
}

/// One row of `mixcheck images`: an image, the Windows builds that pull it (none: Linux), how
/// many fixtures use it and the image table's source for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRow {
    pub os: &'static str,
    pub image: String,
    pub builds: std::collections::BTreeSet<u32>,
    pub fixtures: usize,
    pub source: Option<&'static str>,
}

/// The rows of `mixcheck images`, of one Windows build only with `build`.
pub fn image_rows(fixtures: &crate::cluster::fixture::Fixtures, build: Option<u32>) -> Vec<ImageRow> {
    type Uses = (std::collections::BTreeSet<u32>, std::collections::BTreeSet<String>);
    let mut rows: std::collections::BTreeMap<(&str, String), Uses> = std::collections::BTreeMap::new();
    for i in fixtures.images() {
        if build.is_some() && i.build != build {
            continue;
        }
        let (builds, users) = rows.entry((i.os, i.image.clone())).or_default();
        builds.extend(i.build);
        users.insert(i.fixture.clone());
    }
    rows.into_iter()
        .map(|((os, image), (builds, users))| ImageRow {
            os,
            source: crate::cluster::images::published(&image).map(|p| p.source),
            image,
            builds,
            fixtures: users.len(),
        })
        .collect()
}

/// `26100` or `10.0.26100` (the node label's form).
fn parse_windows_build(text: &str) -> Option<u32> {
    let t = text.trim();
    t.strip_prefix("10.0.").unwrap_or(t).parse().ok()
}

/// `mixcheck cleanup`: deletes (or lists) the run namespaces left on a cluster.
pub async fn cleanup(args: &CleanupArgs) -> Result<Code, Error> {
    let target = real_cluster(args.kubeconfig.as_ref(), args.context.as_ref()).await?;
    if let Some(ns) = &args.namespace {
        let (key, value) = crate::cluster::fixture::MANAGED_BY;
        let selector = format!("{key}={value}");
        if args.dry_run {
            outln!("would delete the pods, Services and Secrets labelled {selector} in namespace {ns}");
            return Ok(Code::Passed);
        }
        crate::run::remove_labelled(&target.client, ns, &selector, &|line| outln!("{line}")).await;
        return Ok(Code::Passed);
    }
    if args.dry_run {
        for (name, phase) in crate::run::leftovers(&target.client)
            .await
            .map_err(|source| Error::Api {
                what: "listing the run namespaces".into(),
                source,
            })?
        {
            outln!("{name} {phase}");
        }
        return Ok(Code::Passed);
    }
    let n = crate::run::cleanup_all(&target.client, &|line| outln!("{line}"))
        .await
        .map_err(|source| Error::Api {
            what: "deleting the run namespaces".into(),
            source,
        })?;
    eprintln!("deleted {n} namespace{}", if n == 1 { "" } else { "s" });
    Ok(Code::Passed)
}

/// `mixcheck prepull`: the fixture images pulled onto every schedulable node, each node's pull
/// times reported; exit 0 when every node has every image, 1 when a pull failed or the deadline
/// came first, 3 for a cluster that does not answer or refuses the credentials, 130 on Ctrl-C.
pub async fn prepull(args: &PrepullArgs) -> Result<Code, Error> {
    use crate::cluster::prepull::{self, Outcome, PrepullError};
    let timeout = crate::cli::plan::parse_duration(&args.timeout)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--timeout {:?}: expected a duration such as 30m or 90s",
                args.timeout
            ))
        })?;
    let mirrors = crate::cluster::registry::Mirrors::parse(args.image_registry.as_deref(), &args.image_registry_map)
        .map_err(Error::Usage)?;
    if let Some(ns) = &args.namespace
        && !crate::cli::plan::is_dns_label(ns)
    {
        return Err(Error::Usage(format!(
            "--namespace {ns:?}: not a namespace name (lower-case letters, digits and '-', at most 63)"
        )));
    }
    let images = crate::cluster::fixture::Fixtures::load(None)?.images();
    let spec = crate::cluster::target::TargetSpec::Kubeconfig {
        path: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    let quiet = args.quiet;
    let target = crate::cluster::target::connect(&spec, &|m| {
        if !quiet {
            eprintln!("{m}");
        }
    })
    .await?;
    let options = prepull::Options {
        namespace: args.namespace.clone(),
        mirrors,
        timeout,
        quiet: args.quiet,
    };
    let report = match prepull::run(&target.client, &images, &options).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mixcheck: {e}");
            return Ok(match e {
                PrepullError::Usage(_) => Code::Usage,
                PrepullError::Unreachable { .. } => Code::Unreachable,
                PrepullError::Api { .. } | PrepullError::NoNodes(_) => Code::Failed,
            });
        }
    };
    match args.output {
        PrepullOutput::Table => out!("{}", report.table()),
        PrepullOutput::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| Error::Failed(e.to_string()))?
        ),
    }
    Ok(match report.outcome {
        Outcome::Pulled => Code::Passed,
        Outcome::Failed | Outcome::Deadline => Code::Failed,
        Outcome::Interrupted => Code::Interrupted,
    })
}

/// `mixcheck watch`: the run's plan, the watch's options, then the watch until interrupted.
pub async fn watch(args: &WatchArgs) -> Result<Code, Error> {
    let r = &args.run;
    for (given, flag) in [
        (r.plan, "--plan"),
        (r.keep, "--keep"),
        (r.bundle.is_some(), "--bundle"),
        (r.baseline.is_some(), "--baseline"),
        (r.node_diagnostics, "--node-diagnostics"),
        (r.strict, "--strict"),
        (r.details, "--details"),
        (r.output != crate::cli::args::Output::Table, "--output"),
        (r.report_dir != std::path::Path::new("mixcheck-report"), "--report-dir"),
    ] {
        if given {
            return Err(Error::Usage(format!(
                "{flag} is a flag of `mixcheck run`, not of `mixcheck watch` (a watch reports through its metrics and --history)"
            )));
        }
    }
    let plan = crate::run::plan::RunPlan::from_args(r)?;
    let fixtures = crate::cluster::fixture::Fixtures::load(None)?;
    let duration = |flag: &str, text: &str| {
        crate::cli::plan::parse_duration(text)
            .filter(|d| !d.is_zero())
            .ok_or_else(|| Error::Usage(format!("{flag} {text:?}: expected a duration such as 60s or 1h")))
    };
    let opts = crate::run::watch::Options {
        interval: duration("--interval", &args.interval)?,
        full_every: duration("--full-every", &args.full_every)?,
        flake_window: duration("--flake-window", &args.flake_window)?,
        listen: args.listen,
        history: args.history.clone(),
        retain: args.retain,
        cycles: args.cycles,
        mark_after: args.mark_nodes.then_some(args.mark_after.max(1)),
    };
    Ok(crate::run::watch::watch(&plan, &fixtures, &opts).await)
}

/// `mixcheck history --from DIR`.
pub fn history(args: &HistoryArgs) -> Result<Code, Error> {
    let cycles = crate::run::watch::history::read(&args.from).map_err(|e| Error::Usage(e.to_string()))?;
    out!("{}", crate::run::watch::history::summarise(&cycles));
    Ok(Code::Passed)
}
