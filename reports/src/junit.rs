//! JUnit XML for CI systems: one `testsuite` per suite, one `testcase` per cell, named by the
//! cell's stable id, with the verdict mapped as docs/design.md's verdict table says (one exhaustive
//! match).
//! A failing or errored case that the run's diagnosis explains says so in its description:
//! `Likely cause: TITLE [id] on NODES (confidence N%): REMEDY`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::cell::Cell;
use crate::diagnosis::{Cause, Diagnosis};
use crate::report::RunReport;
use crate::results_json::{self, Error};
use crate::verdict::Verdict;

/// The file name in the report folder.
pub const FILE_NAME: &str = "junit.xml";

/// The name of the synthetic test case of a run that stopped before its first check.
pub const ABORTED_CASE: &str = "mixcheck/run";

/// The JUnit XML of a run. A run that aborted gets one failed test case saying why, beside the
/// cells it judged before (a deadline keeps them), so CI always has a failure to show.
pub fn render(report: &RunReport) -> Result<String, Error> {
    let mut junit = Report::new(format!("mixcheck run {}", report.run_id));
    junit.set_timestamp(report.started_at);
    junit.set_time(Duration::from_millis(report.duration_ms));
    let mut suites: Vec<TestSuite> = Vec::new();
    for cell in &report.cells {
        let position = match suites.iter().position(|s| s.name.as_str() == cell.suite) {
            Some(p) => p,
            None => {
                let mut suite = TestSuite::new(cell.suite.clone());
                suite.set_timestamp(report.started_at);
                suite.add_properties(suite_properties(report));
                suites.push(suite);
                suites.len() - 1
            }
        };
        suites[position].add_test_case(test_case(cell, report.strict, report.diagnosis.as_ref()));
    }
    if let Some(aborted) = &report.aborted {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status.set_message(format!("the run aborted: {}", aborted.reason));
        status.set_type("aborted");
        status.set_description(format!(
            "mixcheck stopped before judging every check (exit code {}): {}",
            aborted.exit_code, aborted.reason
        ));
        let mut case = TestCase::new(ABORTED_CASE, status);
        case.set_classname("mixcheck");
        let mut suite = TestSuite::new("mixcheck");
        suite.set_timestamp(report.started_at);
        suite.add_properties(suite_properties(report));
        suite.add_test_case(case);
        suites.push(suite);
    }
    for suite in &mut suites {
        let millis: u64 = suite
            .test_cases
            .iter()
            .filter_map(|c| c.time)
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
            .sum();
        suite.set_time(Duration::from_millis(millis));
    }
    junit.add_test_suites(suites);
    let xml = junit.to_string().map_err(|e| Error::Render {
        format: "JUnit",
        message: e.to_string(),
    })?;
    Ok(xml_chars_only(xml))
}

/// Drops the characters XML 1.0 cannot carry at all, escaped or not (C0 controls other than
/// tab, newline and carriage return, U+FFFE, U+FFFF): text reaches the renderer unchecked from
/// a saved results.json, and one such character makes the whole file unreadable to CI.
/// Markup never contains them, so filtering the rendered document only touches text.
fn xml_chars_only(mut xml: String) -> String {
    let allowed =
        |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    if !xml.chars().all(allowed) {
        xml.retain(allowed);
    }
    xml
}

/// Renders and writes `junit.xml` into `dir` atomically.
pub fn write(report: &RunReport, dir: &Path) -> Result<PathBuf, Error> {
    results_json::write_atomically(dir, FILE_NAME, render(report)?.as_bytes())
}

fn suite_properties(report: &RunReport) -> Vec<Property> {
    let mut props = vec![
        Property::new("mixcheck.version", report.tool_version.clone()),
        Property::new("mixcheck.run-id", report.run_id.clone()),
        Property::new("mixcheck.strict", report.strict.to_string()),
    ];
    let facts = &report.facts;
    let mut fact = |name: &str, value: Option<String>| {
        if let Some(v) = value {
            props.push(Property::new(format!("cluster.{name}"), v));
        }
    };
    fact("server-version", facts.server_version.as_ref().map(|f| f.value.clone()));
    fact("network-mode", facts.network_mode.as_ref().map(|f| f.value.clone()));
    fact("dsr", facts.dsr.as_ref().map(|f| f.value.to_string()));
    fact(
        "kube-proxy-version",
        facts.kube_proxy_version.as_ref().map(|f| f.value.clone()),
    );
    fact("host-process", facts.host_process.as_ref().map(|f| f.value.to_string()));
    fact("egress", facts.egress.as_ref().map(|f| f.value.to_string()));
    for (name, node) in &facts.nodes {
        let os = node.os.as_ref().map(|f| f.value.to_string()).unwrap_or_default();
        let build = node
            .windows_build
            .as_ref()
            .map(|f| format!(" {}", f.value))
            .unwrap_or_default();
        let kubelet = node
            .kubelet_version
            .as_ref()
            .map(|f| format!(", kubelet {}", f.value))
            .unwrap_or_default();
        props.push(Property::new(format!("node.{name}"), format!("{os}{build}{kubelet}")));
    }
    props
}

/// One cell as a test case: docs/design.md's verdict table.
fn test_case(cell: &Cell, strict: bool, diagnosis: Option<&Diagnosis>) -> TestCase {
    let cause = diagnosis.and_then(|d| d.cause_of(&cell.id)).map(|(_, c)| c);
    let status = match cell.verdict {
        Verdict::Pass => success(cell),
        Verdict::KnownLimitation | Verdict::Warn if strict => failure(cell, cause, NonSuccessKind::Failure),
        Verdict::KnownLimitation | Verdict::BetterThanDocumented | Verdict::Warn => success(cell),
        Verdict::Fail => failure(cell, cause, NonSuccessKind::Failure),
        Verdict::Error => failure(cell, cause, NonSuccessKind::Error),
        Verdict::NotApplicable | Verdict::Indeterminate => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(cell.reason.clone().unwrap_or_else(|| cell.observed.summary.clone()));
            s.set_type(cell.verdict.as_str());
            s
        }
    };
    let mut case = TestCase::new(cell.id.as_str(), status);
    case.set_classname(cell.category.clone());
    case.set_time(Duration::from_millis(cell.duration_ms));
    case.add_property(("rule", cell.rule_id.as_str()));
    case.add_property(("verdict", cell.verdict.as_str()));
    case.add_property(("check", cell.check.as_str()));
    case.add_property(("expected", cell.expected.text.as_str()));
    if matches!(
        cell.verdict,
        Verdict::KnownLimitation | Verdict::BetterThanDocumented | Verdict::Warn
    ) {
        case.add_property(("note", note(cell).as_str()));
    }
    for node in &cell.nodes {
        let build = node.build.map(|b| format!(" {b}")).unwrap_or_default();
        case.add_property((
            format!("node.{}", role(node.role)),
            format!("{} ({}{build})", node.name, node.os),
        ));
    }
    if !cell.sources.is_empty() {
        case.add_property(("sources", cell.sources.join(", ").as_str()));
    }
    case.set_system_out(details(cell, cause));
    case
}

fn role(role: crate::cell::NodeRole) -> &'static str {
    match role {
        crate::cell::NodeRole::Source => "source",
        crate::cell::NodeRole::Destination => "destination",
        crate::cell::NodeRole::Subject => "subject",
    }
}

/// A passing case; a pass after a transport retry records the retried run as flaky.
fn success(cell: &Cell) -> TestCaseStatus {
    let mut status = TestCaseStatus::success();
    if cell.flaky
        && let TestCaseStatus::Success { flaky_runs } = &mut status
    {
        let mut rerun = TestRerun::new(NonSuccessKind::Error);
        rerun.set_message("a transport error before the probe passed on retry");
        flaky_runs.push(rerun);
    }
    status
}

fn failure(cell: &Cell, cause: Option<&Cause>, kind: NonSuccessKind) -> TestCaseStatus {
    let mut status = TestCaseStatus::non_success(kind);
    status.set_message(format!(
        "{}: observed {}; documented: {}",
        cell.verdict, cell.observed.summary, cell.expected.text
    ));
    status.set_type(cell.verdict.as_str());
    status.set_description(details(cell, cause));
    status
}

/// Why a verdict that passes the gate is not a plain pass.
fn note(cell: &Cell) -> String {
    match cell.verdict {
        Verdict::KnownLimitation => format!("documented limitation: {}", cell.expected.text),
        Verdict::BetterThanDocumented => format!(
            "documented limitation not observed (the docs may be stale): {}",
            cell.expected.text
        ),
        Verdict::Warn => format!("documented recommendation not followed: {}", cell.expected.text),
        _ => String::new(),
    }
}

/// The cell in words: observation, expectation, the likely cause that explains it (when the
/// diagnosis names one), remedy, sources, evidence, reproduce command.
pub(crate) fn details(cell: &Cell, cause: Option<&Cause>) -> String {
    let mut out = format!(
        "{} — {}\nverdict: {}\nobserved: {}\ndocumented: {}\n",
        cell.id, cell.title, cell.verdict, cell.observed.summary, cell.expected.text
    );
    if let Some(cause) = cause {
        out.push_str(&cause.likely_cause_line());
        out.push('\n');
    }
    if let Some(reason) = &cell.reason {
        out.push_str(&format!("reason: {reason}\n"));
    }
    if let Some(remedy) = &cell.remedy {
        out.push_str(&format!("remedy: {remedy}\n"));
    }
    if !cell.sources.is_empty() {
        out.push_str(&format!("sources: {}\n", cell.sources.join(", ")));
    }
    if let Some(e) = &cell.observed.evidence {
        if let Some(pod) = &e.pod {
            out.push_str(&format!("pod: {pod}\n"));
        }
        if !e.command.is_empty() {
            out.push_str(&format!("command: {}\n", e.command.join(" ")));
        }
        if let Some(code) = e.exit_code {
            out.push_str(&format!("exit code: {code}\n"));
        }
        if !e.stdout.is_empty() {
            out.push_str(&format!("stdout:\n{}\n", e.stdout));
        }
        if !e.stderr.is_empty() {
            out.push_str(&format!("stderr:\n{}\n", e.stderr));
        }
        for ev in &e.events {
            out.push_str(&format!(
                "event: {} {} {}: {}\n",
                ev.object, ev.event_type, ev.reason, ev.message
            ));
        }
    }
    if let Some(r) = &cell.reproduce {
        out.push_str(&format!("reproduce: {r}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::report::Aborted;
    use crate::testdata::{cell, sample_report};

    fn parse(xml: &str) -> Report {
        Report::deserialize_from_str(xml).expect("well-formed JUnit")
    }

    #[test]
    fn one_suite_per_suite_one_case_per_cell() {
        let report = sample_report();
        let junit = parse(&render(&report).expect("render"));
        let cases: usize = junit.test_suites.iter().map(|s| s.test_cases.len()).sum();
        assert_eq!(cases, report.cells.len());
        for c in &report.cells {
            let suite = junit
                .test_suites
                .iter()
                .find(|s| s.name.as_str() == c.suite)
                .expect("suite");
            let case = suite
                .test_cases
                .iter()
                .find(|t| t.name.as_str() == c.id.as_str())
                .expect("a case named by the cell id");
            assert_eq!(case.classname.as_ref().map(|s| s.as_str()), Some(c.category.as_str()));
            assert!(
                case.properties
                    .iter()
                    .any(|p| p.name.as_str() == "verdict" && p.value.as_str() == c.verdict.as_str())
            );
        }
        assert!(
            junit.test_suites[0]
                .properties
                .iter()
                .any(|p| p.name.as_str() == "cluster.network-mode")
        );
    }

    /// docs/design.md's verdict table: verdict → JUnit status (strict turns limitations and
    /// warnings into failures).
    #[rstest]
    #[case::pass(Verdict::Pass, false, "success")]
    #[case::limitation(Verdict::KnownLimitation, false, "success")]
    #[case::limitation_strict(Verdict::KnownLimitation, true, "failure")]
    #[case::better(Verdict::BetterThanDocumented, true, "success")]
    #[case::warn(Verdict::Warn, false, "success")]
    #[case::warn_strict(Verdict::Warn, true, "failure")]
    #[case::fail(Verdict::Fail, false, "failure")]
    #[case::error(Verdict::Error, false, "error")]
    #[case::not_applicable(Verdict::NotApplicable, false, "skipped")]
    #[case::indeterminate(Verdict::Indeterminate, false, "skipped")]
    fn verdicts_map_to_junit_statuses(#[case] verdict: Verdict, #[case] strict: bool, #[case] want: &str) {
        let case = test_case(&cell("dns", "fqdn", "DNS-FQDN", "v", verdict), strict, None);
        let got = match &case.status {
            TestCaseStatus::Success { .. } => "success",
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Failure,
                ..
            } => "failure",
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Error,
                ..
            } => "error",
            TestCaseStatus::Skipped { .. } => "skipped",
        };
        assert_eq!(got, want);
    }

    #[test]
    fn a_failure_carries_observation_remedy_and_reproduce_command() {
        let mut c = cell("network-flows", "pod-ip", "NET-POD-POD-IP-CROSS", "v", Verdict::Fail);
        c.remedy = Some("Set-VMNetworkAdapter -MacAddressSpoofing On".into());
        c.reproduce = Some("kubectl exec -n ns cli-1 -- curl.exe http://10.244.1.5:8080".into());
        c.sources = vec!["W14".into()];
        let case = test_case(&c, false, None);
        let TestCaseStatus::NonSuccess {
            message, description, ..
        } = &case.status
        else {
            panic!("a failure");
        };
        let message = message.as_ref().map(|m| m.as_str()).unwrap_or_default();
        assert!(
            message.contains("observed") && message.contains("documented"),
            "{message}"
        );
        let description = description.as_ref().map(|d| d.as_str()).unwrap_or_default();
        for want in ["MacAddressSpoofing", "kubectl exec", "sources: W14"] {
            assert!(description.contains(want), "{want}: {description}");
        }
    }

    /// The description of a failing or errored case that a cause explains, and its
    /// system-out, carry the likely cause; an unexplained failure does not.
    #[rstest]
    #[case::fail(
        "net/NET-POD-POD-IP-CROSS[windows-20348→linux,other-node,tcp,pod-ip]",
        NonSuccessKind::Failure,
        Some(
            "Likely cause: The sandbox (pause) image is built for another Windows build [pause-image-wrong-build] on win2022-1 (confidence 67%): Pods on this node never get a sandbox"
        )
    )]
    #[case::error(
        "ver/VER-PAUSE-IMAGE[windows-20348]",
        NonSuccessKind::Error,
        Some(
            "Likely cause: The sandbox (pause) image is built for another Windows build [pause-image-wrong-build] on win2022-1 (confidence 67%): "
        )
    )]
    #[case::other_cause(
        "dns/DNS-FQDN[linux]",
        NonSuccessKind::Failure,
        Some(
            "Likely cause: The cluster DNS service is unreachable from the node (name lookups time out) [dns-unreachable] on linux-1 (confidence 100%): Pods on this node cannot reach"
        )
    )]
    #[case::unexplained("sched/SCHED-RUNTIMECLASS[windows-20348]", NonSuccessKind::Failure, None)]
    fn a_failure_carries_its_likely_cause(#[case] id: &str, #[case] kind: NonSuccessKind, #[case] line: Option<&str>) {
        let junit = parse(&render(&crate::testdata::every_verdict_report()).expect("render"));
        let case = junit
            .test_suites
            .iter()
            .flat_map(|s| &s.test_cases)
            .find(|c| c.name.as_str() == id)
            .expect("the case");
        let TestCaseStatus::NonSuccess {
            kind: got, description, ..
        } = &case.status
        else {
            panic!("{id} is not a failure");
        };
        assert_eq!(*got, kind);
        let description = description.as_ref().map(|d| d.as_str()).unwrap_or_default();
        let system_out = case.system_out.as_ref().map(|d| d.as_str()).unwrap_or_default();
        match line {
            Some(line) => {
                let found = description
                    .lines()
                    .find(|l| l.starts_with("Likely cause: "))
                    .unwrap_or_else(|| panic!("no likely cause in {description}"));
                assert!(found.starts_with(line), "{found}");
                assert!(system_out.contains(found), "{system_out}");
            }
            None => assert!(!description.contains("Likely cause"), "{description}"),
        }
    }

    #[test]
    fn a_likely_cause_with_markup_and_control_characters_keeps_the_xml_valid() {
        let mut r = sample_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].title = "<b>&</b> \"q\" \u{1b}[31mred\u{0}".into();
        d.causes[0].remedy = "run `x` ]]> then \u{b}\u{fffe}".into();
        let xml = render(&r).expect("render");
        let junit = parse(&xml);
        assert!(xml.contains("Likely cause: &lt;b&gt;&amp;&lt;/b&gt;"), "{xml}");
        for bad in ['\u{0}', '\u{1b}', '\u{b}', '\u{fffe}'] {
            assert!(!xml.contains(bad), "{bad:?} in {xml}");
        }
        assert!(!junit.test_suites.is_empty());
    }

    #[test]
    fn a_flaky_pass_is_recorded_as_such() {
        let mut c = cell("dns", "fqdn", "DNS-FQDN", "v", Verdict::Pass);
        c.flaky = true;
        let xml = {
            let mut r = sample_report();
            r.cells = vec![c];
            render(&r).expect("render")
        };
        assert!(xml.contains("flakyError"), "{xml}");
    }

    #[test]
    fn whatever_a_container_printed_the_xml_stays_valid() {
        let mut r = sample_report();
        let mut c = cell("dns", "fqdn", "DNS-FQDN", "v", Verdict::Fail);
        // Summaries are cleaned on the way in, but a renderer must not rely on it for XML.
        c.observed.summary =
            "ok \u{1b}[31mred\u{1b}[0m and a NUL \u{0} and <&> \"quotes\" \u{b}\u{c}\u{fffe}\u{ffff}".into();
        r.cells = vec![c];
        let xml = render(&r).expect("render");
        parse(&xml);
        for bad in ['\u{0}', '\u{1b}', '\u{b}', '\u{c}', '\u{fffe}', '\u{ffff}'] {
            assert!(!xml.contains(bad), "{bad:?} in {xml}");
        }
    }

    #[test]
    fn an_aborted_run_still_fails_one_case() {
        let mut r = sample_report();
        r.cells.clear();
        r.aborted = Some(Aborted {
            reason: "the cluster did not answer (connection refused)".into(),
            exit_code: 3,
        });
        let junit = parse(&render(&r).expect("render"));
        let case = &junit.test_suites[0].test_cases[0];
        assert_eq!(case.name.as_str(), ABORTED_CASE);
        assert!(matches!(
            case.status,
            TestCaseStatus::NonSuccess {
                kind: NonSuccessKind::Failure,
                ..
            }
        ));
    }

    #[test]
    fn written_atomically_into_the_report_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(&sample_report(), &dir.path().join("out")).expect("write");
        assert_eq!(path.file_name().and_then(|n| n.to_str()), Some(FILE_NAME));
        parse(&std::fs::read_to_string(&path).expect("read"));
        let names: Vec<_> = std::fs::read_dir(dir.path().join("out"))
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }
}
