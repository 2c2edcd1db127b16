//! The `mixcheck` binary: parses the command line, runs the chosen command, maps the outcome
//! to the documented exit code.

mod agents;
mod bundle;
mod causes;
mod cli;
mod deploy;
mod diagnose;
mod diagnostics;
mod exit;
mod facts;
mod fixture;
mod gather;
mod job;
mod plan;
mod podwatch;
mod probe;
mod progress;
mod rules;
mod run;
mod sim;
mod suite;
mod target;
mod triage;
mod verdict;
mod workload;

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    init_tracing(args.verbose);
    raise_open_files_limit();
    if rustls::crypto::ring::default_provider().install_default().is_err() {
        eprintln!("mixcheck: a TLS crypto provider was already installed");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mixcheck: cannot start the async runtime: {e}");
            return exit::Code::Internal.into();
        }
    };
    let result = runtime.block_on(async {
        match args.command {
            cli::Command::Run(run) => run_command(&run).await,
            cli::Command::List(list) => list_command(&list),
            cli::Command::Lint(lint) => lint_command(&lint),
            cli::Command::Images(images) => images_command(&images),
            cli::Command::Cleanup(args) => cleanup_command(&args).await,
            cli::Command::Report(args) => report_command(&args),
            cli::Command::Diagnose(args) => diagnose_command(&args),
            cli::Command::Diff(args) => diff_command(&args),
            cli::Command::Results(args) => results_command(&args).await,
            cli::Command::Sim(sim) => sim::run(sim).await,
        }
    });
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("mixcheck: {e:#}");
            exit_code_of(&e).into()
        }
    }
}

/// The exit code for an error that ended a command: the harness's errors say theirs; the
/// libraries' errors are mapped here.
fn exit_code_of(e: &anyhow::Error) -> exit::Code {
    use mixcheck_reports::results_json::Error as ResultsError;
    if let Some(err) = e.downcast_ref::<sim::UsageError>() {
        return err.exit_code();
    }
    if let Some(err) = e.downcast_ref::<plan::PlanError>() {
        return err.exit_code();
    }
    if let Some(err) = e.downcast_ref::<suite::SuiteError>() {
        return err.exit_code();
    }
    if let Some(err) = e.downcast_ref::<target::TargetError>() {
        return err.exit_code();
    }
    if let Some(err) = e.downcast_ref::<job::JobError>() {
        return err.exit_code();
    }
    if e.downcast_ref::<simcluster::TopologyError>().is_some()
        || matches!(
            e.downcast_ref::<ResultsError>(),
            Some(
                ResultsError::Read { .. }
                    | ResultsError::Syntax { .. }
                    | ResultsError::Content { .. }
                    | ResultsError::UnsupportedSchema { .. }
            )
        )
        || matches!(
            e.downcast_ref::<simcluster::ClusterError>(),
            Some(simcluster::ClusterError::Listen { .. })
        )
    {
        return exit::Code::Usage;
    }
    exit::Code::Failed
}

/// Raises the soft limit on open files to the hard limit: a bundled cluster listens on every
/// node's address for every NodePort (nodes × ports sockets) and a run keeps one connection
/// per probe in flight, more than the common soft limit of 1024 on a large topology.
fn raise_open_files_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::debug!("cannot raise the open-files limit: {e}");
    }
}

/// `mixcheck run`: plan, run, report; the exit code says whether the gate passed.
async fn run_command(args: &cli::RunArgs) -> anyhow::Result<exit::Code> {
    let started = std::time::Instant::now();
    let plan = match plan::RunPlan::from_args(args) {
        Ok(p) => p,
        Err(plan::PlanError::NothingSelected(what)) => {
            eprintln!("mixcheck: no check matches the selection ({what}); `mixcheck list` shows the checks");
            return Ok(exit::Code::NothingSelected);
        }
        Err(e) => return Err(e.into()),
    };
    let fixtures = fixture::Fixtures::load(None)?;
    let finished = run::execute(&plan, &fixtures).await;
    let report = finished.report;
    write_reports(&report, &plan.report_dir);
    if let Some(path) = &plan.bundle {
        // A run that stopped early still bundles its report (and says what it could not read).
        let collected = finished.bundle.unwrap_or_default();
        match bundle::write(path, &report, &collected) {
            Ok(path) => eprintln!(
                "Evidence bundle: {} (Secret values and tokens redacted)",
                path.display()
            ),
            Err(e) => eprintln!("mixcheck: {e}"),
        }
    }
    print!("{}", render(&report, args.output)?);
    if let Some(diff) = &report.baseline {
        eprint!("{}", diff.render_text());
    }
    if args.in_cluster {
        // The Job's log carries the results for `mixcheck results --from-job`.
        print!("{}", job::results_block(&report));
        println!(
            "Results: {}",
            plan.report_dir
                .join(mixcheck_reports::results_json::FILE_NAME)
                .display()
        );
    }
    if let Some(a) = &report.aborted {
        eprintln!("mixcheck: {}", a.reason);
    }
    eprintln!("Wall time: {:.1}s", started.elapsed().as_secs_f64());
    Ok(finished.code)
}

/// Every format into the report folder (each written atomically; one that fails is said and
/// the others still written), and the Markdown appended to a GitHub job summary when
/// `GITHUB_STEP_SUMMARY` names one.
fn write_reports(report: &mixcheck_reports::RunReport, dir: &std::path::Path) {
    use mixcheck_reports::{html, junit, markdown, results_json};
    match results_json::write(report, dir) {
        Ok(path) => eprintln!("Results: {}", path.display()),
        Err(e) => eprintln!("mixcheck: {e}"),
    }
    if let Err(e) = junit::write(report, dir) {
        eprintln!("mixcheck: {e}");
    }
    if let Err(e) = markdown::write(report, dir) {
        eprintln!("mixcheck: {e}");
    }
    if let Err(e) = html::write(report, dir) {
        eprintln!("mixcheck: {e}");
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .and_then(|mut f| std::io::Write::write_all(&mut f, markdown::render(report).as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "mixcheck: cannot append to GITHUB_STEP_SUMMARY ({}): {e}",
                std::path::Path::new(&summary).display()
            );
        }
    }
}

/// A run in the format chosen for standard output.
fn render(report: &mixcheck_reports::RunReport, output: cli::Output) -> anyhow::Result<String> {
    use mixcheck_reports::{junit, markdown};
    Ok(match output {
        cli::Output::Table => {
            use std::io::IsTerminal as _;
            let colour = mixcheck_reports::terminal::colour_wanted(
                std::io::stdout().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            mixcheck_reports::terminal::render(report, colour)
        }
        cli::Output::Json => {
            let mut text = serde_json::to_string_pretty(report)?;
            text.push('\n');
            text
        }
        cli::Output::Junit => junit::render(report)?,
        cli::Output::Markdown => markdown::render(report),
    })
}

/// A run that was saved or fetched: written into `report_dir` (if given), rendered to standard
/// output; the exit code is the run's gate.
fn show_saved(
    report: &mixcheck_reports::RunReport,
    report_dir: Option<&std::path::Path>,
    output: cli::Output,
) -> anyhow::Result<exit::Code> {
    if let Some(dir) = report_dir {
        write_reports(report, dir);
    }
    print!("{}", render(report, output)?);
    Ok(if report.aborted.is_some() || !report.gate_passed(report.strict) {
        exit::Code::Failed
    } else {
        exit::Code::Passed
    })
}

/// `mixcheck report`: a saved run rendered again; the exit code is the run's gate.
fn report_command(args: &cli::ReportArgs) -> anyhow::Result<exit::Code> {
    let report = mixcheck_reports::results_json::read(&args.from)?;
    show_saved(&report, args.report_dir.as_deref(), args.output)
}

/// `mixcheck diagnose`: a saved run's failing cells diagnosed again, offline, with the
/// evidence the run gathered; the exit code is the run's gate.
fn diagnose_command(args: &cli::DiagnoseArgs) -> anyhow::Result<exit::Code> {
    let mut report = mixcheck_reports::results_json::read(&args.from)?;
    let catalogue = rules::Catalogue::embedded()?;
    let suites = suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    let causes = causes::Catalogue::load(args.sources.causes.as_deref(), &catalogue, &suites)?;
    let (evidence, node_diagnostics) = report
        .diagnosis
        .take()
        .map(|d| (d.evidence, d.node_diagnostics))
        .unwrap_or_default();
    report.diagnosis = Some(diagnose::diagnose(&report, &causes, evidence, node_diagnostics));
    show_saved(&report, args.report_dir.as_deref(), args.output)
}

/// `mixcheck diff`: two saved runs compared cell by cell; exit 1 when the newer regressed.
fn diff_command(args: &cli::DiffArgs) -> anyhow::Result<exit::Code> {
    let old = mixcheck_reports::results_json::read(&args.old)?;
    let new = mixcheck_reports::results_json::read(&args.new)?;
    let diff = new.against(&old, args.strict);
    match args.output {
        cli::DiffOutput::Table => print!("{}", diff.render_text()),
        cli::DiffOutput::Markdown => print!("{}", diff.render_markdown()),
        cli::DiffOutput::Json => println!("{}", serde_json::to_string_pretty(&diff)?),
    }
    Ok(if diff.regressed() {
        exit::Code::Failed
    } else {
        exit::Code::Passed
    })
}

/// A real cluster named by a kubeconfig and context, for the commands that read one; an
/// unreachable one is said and becomes exit code 3.
async fn real_cluster(
    kubeconfig: Option<&std::path::PathBuf>,
    context: Option<&String>,
) -> anyhow::Result<Result<target::Target, exit::Code>> {
    let spec = plan::TargetSpec::Kubeconfig {
        path: kubeconfig.cloned(),
        context: context.cloned(),
    };
    match target::connect(&spec, &|m| eprintln!("{m}")).await {
        Ok(t) => Ok(Ok(t)),
        Err(e @ target::TargetError::Unreachable { .. }) => {
            eprintln!("mixcheck: {e}");
            Ok(Err(exit::Code::Unreachable))
        }
        Err(e) => Err(e.into()),
    }
}

/// `mixcheck results --from-job`: an in-cluster run's results, read from its Job's log and
/// rendered like `mixcheck report --from`; the exit code is the run's gate.
async fn results_command(args: &cli::ResultsArgs) -> anyhow::Result<exit::Code> {
    let target = match real_cluster(args.kubeconfig.as_ref(), args.context.as_ref()).await? {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    let report = job::results(&target.client, &args.namespace, &args.from_job).await?;
    show_saved(&report, args.report_dir.as_deref(), args.output)
}

/// `mixcheck list`: the checks with their rule ids and sources, or the rules no check covers.
fn list_command(args: &cli::ListArgs) -> anyhow::Result<exit::Code> {
    let catalogue = rules::Catalogue::embedded()?;
    let suites = suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    if args.uncovered {
        let covered: std::collections::BTreeSet<&str> = suites.checks().map(|(_, c)| c.rule.as_str()).collect();
        println!(
            "{:<32} {:<5} {:<40} DOCUMENTED (SOURCES)",
            "RULE", "CAT", "APPLIES WHEN"
        );
        let uncovered: Vec<_> = catalogue.iter().filter(|r| !covered.contains(r.id.as_str())).collect();
        for r in &uncovered {
            println!(
                "{:<32} {:<5} {:<40} {} ({})",
                r.id,
                r.category,
                r.applies_when,
                r.documented,
                r.sources.join(", ")
            );
        }
        eprintln!("{} of {} rules have no check", uncovered.len(), catalogue.len());
        return Ok(exit::Code::Passed);
    }
    for s in &suites.suites {
        println!("{} ({}): {}", s.name, s.category, s.description.trim());
        for c in &s.checks {
            println!("  {:<40} {:<28} {}", c.name, c.rule, c.sources.join(", "));
            println!("  {:<40} {}", "", c.title);
            if let Some(why) = &c.pending {
                println!("  {:<40} pending (runs with --include-pending): {why}", "");
            }
            if !c.description.trim().is_empty() {
                println!("  {:<40} {}", "", c.description.trim());
            }
        }
    }
    Ok(exit::Code::Passed)
}

/// `mixcheck lint`: suites and fixtures validated; exit 2 on the first problem.
fn lint_command(args: &cli::LintArgs) -> anyhow::Result<exit::Code> {
    let catalogue = rules::Catalogue::embedded()?;
    let suites = suite::Suites::load(args.sources.suites.as_deref(), &catalogue)?;
    let fixtures = fixture::Fixtures::load(args.fixtures.as_deref())?;
    let causes = causes::Catalogue::load(args.sources.causes.as_deref(), &catalogue, &suites)?;
    let checks = suites.checks().count();
    println!(
        "ok: {} suites, {checks} checks, {} fixtures, {} causes",
        suites.suites.len(),
        fixtures.by_name.len(),
        causes.causes.len()
    );
    Ok(exit::Code::Passed)
}

/// `mixcheck images`: the fixture images per OS (Windows tags per build, seed eras included).
fn images_command(args: &cli::ImagesArgs) -> anyhow::Result<exit::Code> {
    let fixtures = fixture::Fixtures::load(None)?;
    println!("{:<8} {:<72} FIXTURE", "OS", "IMAGE");
    for (image, os, name) in fixtures.images() {
        let shown = match &args.image_registry {
            Some(reg) => fixture::rewrite_image(&image, reg),
            None => image,
        };
        println!("{os:<8} {shown:<72} {name}");
    }
    Ok(exit::Code::Passed)
}

/// `mixcheck cleanup`: deletes (or lists) the run namespaces left on a cluster.
async fn cleanup_command(args: &cli::CleanupArgs) -> anyhow::Result<exit::Code> {
    let target = match real_cluster(args.kubeconfig.as_ref(), args.context.as_ref()).await? {
        Ok(t) => t,
        Err(code) => return Ok(code),
    };
    if args.dry_run {
        for (name, phase) in run::leftovers(&target.client).await? {
            println!("{name} {phase}");
        }
        return Ok(exit::Code::Passed);
    }
    let n = run::cleanup_all(&target.client).await?;
    eprintln!("deleted {n} namespaces");
    Ok(exit::Code::Passed)
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,mixcheck=debug",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MIXCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
