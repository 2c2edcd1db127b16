//! What a command writes: every report format into the report folder, one format rendered to
//! standard output, and a saved run shown again with its gate as the exit code.

use crate::cli::stdout::out;
use mixcheck_reports::RunReport;
pub use mixcheck_reports::terminal::Detail;

use crate::cli::args::Output;
use crate::errors::{Code, Error};

/// Every format into the report folder (each written atomically; one that fails is said and
/// the others still written), and the Markdown appended to a GitHub job summary when
/// `GITHUB_STEP_SUMMARY` names one.
pub fn write_reports(report: &RunReport, dir: &std::path::Path, announce: bool) {
    use mixcheck_reports::{html, junit, markdown, results_json};
    let written: Vec<Result<std::path::PathBuf, results_json::Error>> = vec![
        results_json::write(report, dir),
        junit::write(report, dir),
        markdown::write(report, dir),
        html::write(report, dir),
    ];
    let mut names = Vec::new();
    let mut html_file = None;
    for result in written {
        match result {
            Ok(path) => {
                if path.extension().is_some_and(|e| e == "html") {
                    html_file = Some(path.clone());
                }
                names.push(path.display().to_string());
            }
            Err(e) => eprintln!("mixcheck: {e}"),
        }
    }
    if announce && !names.is_empty() {
        eprintln!("Reports: {}", names.join(", "));
    }
    if let Some(html_file) = html_file.filter(|_| announce) {
        eprintln!(
            "Open {} in a browser for the matrix and every cell",
            html_file.display()
        );
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
pub fn render(report: &RunReport, output: Output, detail: Detail) -> Result<String, Error> {
    use mixcheck_reports::{junit, markdown};
    Ok(match output {
        Output::Table => {
            use std::io::IsTerminal as _;
            let colour = mixcheck_reports::terminal::colour_wanted(
                std::io::stdout().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            mixcheck_reports::terminal::render(report, colour, detail)
        }
        Output::Json => {
            let mut text = serde_json::to_string_pretty(report).map_err(|e| Error::Failed(e.to_string()))?;
            text.push('\n');
            text
        }
        Output::Junit => junit::render(report)?,
        Output::Markdown => markdown::render(report),
    })
}

/// A run that was saved or fetched: written into `report_dir` (if given), rendered to standard
/// output; the exit code is the run's gate.
pub fn show_saved(
    report: &RunReport,
    report_dir: Option<&std::path::Path>,
    output: Output,
    detail: Detail,
) -> Result<Code, Error> {
    if let Some(dir) = report_dir {
        write_reports(report, dir, true);
    }
    out!("{}", render(report, output, detail)?);
    Ok(if report.aborted.is_some() || !report.gate_passed(report.strict) {
        Code::Failed
    } else {
        Code::Passed
    })
}
