//! One self-contained HTML page (inline style and script, no external assets, readable
//! offline): the gate, then the diagnosis first (the likely causes, ranked, each with its nodes,
//! confidence, remedy, confirm commands, evidence and the failing cells it explains; the failing
//! cells no known cause explains; the evidence gathered per node, folded), the counts, the
//! cross-pool flow matrix as a coloured grid, a table per node, and every cell — failures
//! first, with observation, likely cause, remedy, sources, evidence and the command that
//! reproduces them — filterable by verdict, suite and OS pool in the browser, with the filters
//! kept in the address fragment (`report.html#verdict=fail,error&pool=windows-20348`) so that a
//! filtered view can be linked.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cell::Cell;
use crate::diagnosis::{Diagnosis, failing_cells};
use crate::report::RunReport;
use crate::results_json::{self, Error};
use crate::summary::{header, wall_time};
use crate::tally;
use crate::verdict::{Counts, Verdict};

/// The file name in the report folder.
pub const FILE_NAME: &str = "report.html";

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#1d2329}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccd3da;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#eef1f4} .num{text-align:right}
.v-pass,.v-better-than-documented{background:#dcf5e3} .v-fail,.v-error{background:#fbd9d9}
.v-warn,.v-known-limitation{background:#fdf0cc} .v-not-applicable,.v-indeterminate{background:#eceff2;color:#555}
.gate-ok{color:#12703a} .gate-bad{color:#b3261e}
details pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em;border:1px solid #dde}
#filters label{margin-right:.8em} .hidden{display:none}
";

/// Added to [`STYLE`] when there is a diagnosis to show (a run without one keeps its page as
/// it was).
const CAUSES_STYLE: &str = "
#causes li{margin-bottom:.8em} #causes .confidence{font-weight:600}
#causes dl{display:grid;grid-template-columns:max-content auto;gap:.15em .8em;margin:.3em 0}
#causes dt{color:#555} #causes dd{margin:0} #causes pre{margin:0;white-space:pre-wrap}
#causes ul{margin:0;padding-left:1.2em}
";

const SCRIPT: &str = "
var boxes=[].slice.call(document.querySelectorAll('#filters input[data-verdict]'));
function applyFilters(){
  var verdicts=boxes.filter(function(b){return b.checked}).map(function(b){return b.dataset.verdict});
  var suite=document.getElementById('suite').value, pool=document.getElementById('pool').value, shown=0, rows=document.querySelectorAll('tr.cell');
  rows.forEach(function(r){
    var show=verdicts.indexOf(r.dataset.verdict)>=0&&(!suite||r.dataset.suite===suite)&&(!pool||(' '+r.dataset.pools+' ').indexOf(' '+pool+' ')>=0);
    r.classList.toggle('hidden',!show);
    if(show){shown++}
  });
  document.getElementById('shown').textContent=shown+' of '+rows.length+' cells shown';
  var state=[];
  if(verdicts.length<boxes.length){state.push('verdict='+verdicts.join(','))}
  if(suite){state.push('suite='+encodeURIComponent(suite))}
  if(pool){state.push('pool='+encodeURIComponent(pool))}
  try{history.replaceState(null,'',state.length?'#'+state.join('&'):location.pathname+location.search)}catch(e){}
}
function loadFilters(){
  location.hash.slice(1).split('&').forEach(function(kv){
    var i=kv.indexOf('='), k=kv.slice(0,i), v=decodeURIComponent(kv.slice(i+1));
    if(k==='verdict'){var want=v.split(',');boxes.forEach(function(b){b.checked=want.indexOf(b.dataset.verdict)>=0})}
    else if(k==='suite'||k==='pool'){document.getElementById(k).value=v}
  });
  applyFilters();
}
document.querySelectorAll('#filters input,#filters select').forEach(function(e){e.addEventListener('change',applyFilters)});
loadFilters();
";

/// The HTML report of a run.
pub fn render(report: &RunReport) -> String {
    let strict = report.strict;
    let mut out = String::new();
    let (gate_class, gate) = if report.gate_passed(strict) {
        ("gate-ok", "gate passed")
    } else {
        ("gate-bad", "gate failed")
    };
    let diagnosis = tally::diagnosis(report);
    let causes_style = if diagnosis.is_some() { CAUSES_STYLE } else { "" };
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mixcheck {} — {gate}</title><style>{STYLE}{causes_style}</style></head><body>\n",
        esc(&report.run_id)
    );
    let _ = writeln!(out, "<h1>mixcheck: <span class=\"{gate_class}\">{gate}</span></h1>");
    for line in header(report) {
        let _ = writeln!(out, "<p>{}</p>", esc(&line));
    }
    let _ = writeln!(
        out,
        "<p>{} cells of {} rules, wall time {}</p>",
        report.cells.len(),
        report.rule_count(),
        esc(&wall_time(report.duration_ms))
    );
    if let Some(d) = diagnosis {
        causes(d, &mut out);
    }
    counts_table(&report.counts(), &mut out);
    matrix(report, &mut out);
    nodes(report, &mut out);
    cells(report, diagnosis, &mut out);
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

/// Renders and writes `report.html` into `dir` atomically.
pub fn write(report: &RunReport, dir: &Path) -> Result<PathBuf, Error> {
    results_json::write_atomically(dir, FILE_NAME, render(report).as_bytes())
}

fn counts_table(counts: &Counts, out: &mut String) {
    out.push_str("<table><tr><th>verdict</th><th>cells</th></tr>\n");
    for v in Verdict::ALL {
        let _ = writeln!(
            out,
            "<tr class=\"v-{0}\"><td>{0}</td><td class=\"num\">{1}</td></tr>",
            v.as_str(),
            counts.get(v)
        );
    }
    out.push_str("</table>\n");
}

/// Source pool × destination pool, coloured by the worst verdict of the flows between them.
fn matrix(report: &RunReport, out: &mut String) {
    let Some(grid) = tally::flow_grid(report) else {
        return;
    };
    out.push_str("<h2>Flows between OS pools</h2>\n<table id=\"matrix\"><tr><th>source ↓ / destination →</th>");
    for d in &grid.destinations {
        let _ = write!(out, "<th>{}</th>", esc(d));
    }
    out.push_str("</tr>\n");
    for s in &grid.sources {
        let _ = write!(out, "<tr><th>{}</th>", esc(s));
        for d in &grid.destinations {
            match grid.cells.get(&(s.clone(), d.clone())) {
                None => out.push_str("<td></td>"),
                Some(counts) => {
                    let worst = tally::worst(counts);
                    let (ok, judged) = tally::documented(counts);
                    let _ = write!(
                        out,
                        "<td class=\"v-{}\" title=\"worst: {}\">{ok}/{judged}</td>",
                        worst.as_str(),
                        worst.as_str()
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// One row per node: OS, build, versions from the facts, and the verdicts of the cells it was in.
fn nodes(report: &RunReport, out: &mut String) {
    if report.facts.nodes.is_empty() {
        return;
    }
    let mut per_node: BTreeMap<&str, Counts> = BTreeMap::new();
    for c in &report.cells {
        let mut seen: Vec<&str> = Vec::new();
        for n in &c.nodes {
            if !seen.contains(&n.name.as_str()) {
                per_node.entry(n.name.as_str()).or_default().add(c.verdict);
                seen.push(n.name.as_str());
            }
        }
    }
    out.push_str("<h2>Nodes</h2>\n<table><tr><th>node</th><th>OS</th><th>build</th><th>kubelet</th><th>runtime</th>");
    for v in Verdict::ALL {
        let _ = write!(out, "<th class=\"v-{0}\">{0}</th>", v.as_str());
    }
    out.push_str("</tr>\n");
    for (name, f) in &report.facts.nodes {
        let text = |v: Option<String>| esc(&v.unwrap_or_default());
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            esc(name),
            text(f.os.as_ref().map(|x| x.value.to_string())),
            text(f.windows_build.as_ref().map(|x| x.value.to_string())),
            text(f.kubelet_version.as_ref().map(|x| x.value.clone())),
            text(f.container_runtime_version.as_ref().map(|x| x.value.clone())),
        );
        let counts = per_node.get(name.as_str()).copied().unwrap_or_default();
        for v in Verdict::ALL {
            let _ = write!(out, "<td class=\"num\">{}</td>", counts.get(v));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// The likely causes, most likely first, each with everything the diagnosis says about it;
/// then the failing cells no cause explains and, folded, the evidence gathered per node.
fn causes(d: &Diagnosis, out: &mut String) {
    out.push_str("<section id=\"causes\">\n<h2>Likely causes</h2>\n");
    if d.causes.is_empty() {
        out.push_str("<p>No known cause fits the failing cells.</p>\n");
    } else {
        out.push_str("<ol>\n");
    }
    for (i, c) in d.causes.iter().enumerate() {
        let _ = write!(
            out,
            "<li id=\"cause-{}\"><strong>{}</strong> <code>[{}]</code> on <strong>{}</strong> — confidence <span class=\"confidence\">{}%</span>, explains {}",
            i + 1,
            esc(&c.title),
            esc(&c.id),
            esc(&c.location()),
            c.confidence,
            failing_cells(c.explains.len())
        );
        if let Some(against) = c.contradiction() {
            let _ = write!(out, ", {against}");
        }
        let _ = write!(out, "\n<dl>\n<dt>remedy</dt><dd>{}</dd>\n", inline(&c.remedy));
        if !c.confirm.is_empty() {
            let _ = writeln!(
                out,
                "<dt>confirm on the node</dt><dd><pre>{}</pre></dd>",
                esc(&c.confirm.join("\n"))
            );
        }
        if !c.evidence.is_empty() {
            out.push_str("<dt>evidence</dt><dd><ul>");
            for line in &c.evidence {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul></dd>\n");
        }
        if let Some(rule) = &c.rule_id {
            let _ = write!(out, "<dt>rule</dt><dd>{}", esc(rule));
            if !c.sources.is_empty() {
                let _ = write!(out, " (sources {})", esc(&c.sources.join(", ")));
            }
            out.push_str("</dd>\n");
        }
        id_list(out, "explains", &c.explains);
        id_list(out, "contradicted by", &c.contradicted_by);
        out.push_str("</dl></li>\n");
    }
    if !d.causes.is_empty() {
        out.push_str("</ol>\n");
    }
    if let Some(line) = d.unexplained_line() {
        let _ = write!(out, "<p><strong>{}:</strong></p><ul>", esc(&line));
        for id in &d.unexplained {
            let _ = write!(out, "<li><code>{}</code></li>", esc(id.as_str()));
        }
        out.push_str("</ul>\n");
    }
    if let Some(note) = d.confirm_note() {
        let _ = writeln!(out, "<p><em>{}</em></p>", esc(note));
    }
    if !d.evidence.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>evidence gathered from the nodes ({})</summary>",
            d.evidence.len()
        );
        for node in &d.evidence {
            let _ = writeln!(
                out,
                "<h3>{}</h3>\n<table><tr><th>source</th><th>what it says</th></tr>",
                esc(&node.node)
            );
            for item in &node.items {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td><pre>{}</pre></td></tr>",
                    esc(&item.source),
                    esc(item.text.as_str().trim_end())
                );
            }
            out.push_str("</table>\n");
        }
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
}

/// A `<dt>` and the cell ids under it, nothing when there are none.
fn id_list(out: &mut String, label: &str, ids: &[crate::cell::CellId]) {
    if ids.is_empty() {
        return;
    }
    let _ = write!(out, "<dt>{label}</dt><dd>");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        let _ = write!(out, "<code>{}</code>", esc(id.as_str()));
    }
    out.push_str("</dd>\n");
}

/// Every cell, failures first, with the filters above them.
fn cells(report: &RunReport, diagnosis: Option<&Diagnosis>, out: &mut String) {
    let mut ordered: Vec<&Cell> = report.cells.iter().collect();
    ordered.sort_by_key(|c| c.verdict.rank());
    let mut suites: Vec<&str> = report.cells.iter().map(|c| c.suite.as_str()).collect();
    suites.sort_unstable();
    suites.dedup();
    let mut pools: Vec<&str> = report
        .cells
        .iter()
        .flat_map(|c| [&c.coordinates.source, &c.coordinates.destination])
        .flatten()
        .map(|p| p.as_str())
        .collect();
    pools.sort_unstable();
    pools.dedup();
    out.push_str("<h2>Cells</h2>\n<div id=\"filters\">");
    for v in Verdict::ALL {
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" data-verdict=\"{0}\" checked> {0}</label>",
            v.as_str()
        );
    }
    out.push_str("<br><label>suite <select id=\"suite\"><option value=\"\">all</option>");
    for s in &suites {
        let _ = write!(out, "<option>{}</option>", esc(s));
    }
    out.push_str("</select></label><label>OS pool <select id=\"pool\"><option value=\"\">all</option>");
    for p in &pools {
        let _ = write!(out, "<option>{}</option>", esc(p));
    }
    out.push_str("</select></label> <span id=\"shown\"></span></div>\n");
    out.push_str("<table><tr><th>verdict</th><th>cell</th><th>observed</th><th>documented</th></tr>\n");
    for c in ordered {
        let pools: Vec<&str> = [&c.coordinates.source, &c.coordinates.destination]
            .into_iter()
            .flatten()
            .map(|p| p.as_str())
            .collect();
        let _ = write!(
            out,
            "<tr class=\"cell v-{v}\" data-verdict=\"{v}\" data-suite=\"{suite}\" data-pools=\"{pools}\"><td>{v}</td><td><code>{id}</code><br>{title}</td><td>{obs}",
            v = c.verdict.as_str(),
            suite = esc(&c.suite),
            pools = esc(&pools.join(" ")),
            id = esc(c.id.as_str()),
            title = esc(&c.title),
            obs = esc(&c.observed.summary),
        );
        let cause = diagnosis.and_then(|d| d.cause_of(&c.id));
        if let Some((rank, x)) = cause {
            let _ = write!(
                out,
                "<br>likely cause: <a href=\"#cause-{rank}\">{rank}. {}</a>",
                esc(&x.title)
            );
        }
        if matches!(c.verdict, Verdict::Fail | Verdict::Error) || c.verdict.fails_gate(report.strict) {
            let _ = write!(
                out,
                "<details open><summary>details</summary><pre>{}</pre></details>",
                esc(&crate::junit::details(c, cause.map(|(_, x)| x)))
            );
        } else if c.observed.evidence.is_some() || c.reason.is_some() {
            let _ = write!(
                out,
                "<details><summary>details</summary><pre>{}</pre></details>",
                esc(&crate::junit::details(c, cause.map(|(_, x)| x)))
            );
        }
        let _ = writeln!(out, "</td><td>{}</td></tr>", esc(&c.expected.text));
    }
    out.push_str("</table>\n");
}

/// Prose that marks code with backticks, as the cause catalogue's remedies do: the quoted
/// parts become `<code>`, everything escaped. Unbalanced backticks stay as they are.
fn inline(text: &str) -> String {
    if text.matches('`').count() % 2 == 1 {
        return esc(text);
    }
    text.split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{}</code>", esc(part))
            } else {
                esc(part)
            }
        })
        .collect()
}

/// Text for HTML element content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Coordinates, Pool};
    use crate::testdata::{cell, sample_report};

    #[test]
    fn self_contained_with_filters_matrix_and_nodes() {
        let html = render(&sample_report());
        assert!(html.starts_with("<!DOCTYPE html>"));
        for external in ["src=\"http", "href=\"http", "<link", "@import", "src=\"//"] {
            assert!(!html.contains(external), "no external asset: {external}");
        }
        assert!(html.contains("id=\"filters\"") && html.contains("<select id=\"pool\""));
        assert!(html.contains("<h2>Nodes</h2>"));
        assert_eq!(html.matches("<tr class=\"cell ").count(), sample_report().cells.len());
    }

    #[test]
    fn failures_come_first_and_open_with_their_remedy() {
        let mut r = sample_report();
        let mut bad = cell("network-flows", "pod-ip", "NET-POD-POD-IP-CROSS", "v", Verdict::Fail);
        bad.coordinates = Coordinates {
            source: Some(Pool::named("windows-20348")),
            destination: Some(Pool::named("linux")),
            ..Default::default()
        };
        bad.remedy = Some("Set-VMNetworkAdapter -MacAddressSpoofing On".into());
        r.cells.insert(0, cell("dns", "fqdn", "DNS-FQDN", "v", Verdict::Pass));
        r.cells.push(bad);
        let html = render(&r);
        let first = html.find("<tr class=\"cell ").expect("a cell row");
        assert!(
            html[first..].starts_with("<tr class=\"cell v-fail\""),
            "{}",
            &html[first..first + 80]
        );
        assert!(html.contains("<details open><summary>details</summary><pre>"));
        assert!(html.contains("MacAddressSpoofing On"));
        assert!(
            html.contains("<td class=\"v-fail\" title=\"worst: fail\">"),
            "the matrix colours the pair"
        );
    }

    #[test]
    fn the_causes_are_escaped_and_need_no_external_asset() {
        let mut r = sample_report();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].title = "<script>alert(1)</script>".into();
        d.causes[0].remedy = "run `Set-X -Name <vm>` & \"restart\"".into();
        d.causes[0].evidence[0] = "<img src=x onerror=alert(2)>".into();
        d.causes[0].confirm = vec!["Get-Item '<path>'".into()];
        d.evidence[0].items[0].source = "log <b>".into();
        let html = render(&r);
        assert!(!html.contains("<script>alert") && !html.contains("<img") && !html.contains("<b>"));
        assert!(
            html.contains("<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>"),
            "{html}"
        );
        assert!(
            html.contains("run <code>Set-X -Name &lt;vm&gt;</code> &amp; &quot;restart&quot;"),
            "{html}"
        );
        assert!(html.contains("<pre>Get-Item &#39;&lt;path&gt;&#39;</pre>"), "{html}");
        for external in ["src=\"http", "href=\"http", "<link", "@import", "src=\"//"] {
            assert!(!html.contains(external), "no external asset: {external}");
        }
        let causes = html.find("<section id=\"causes\">").expect("a causes section");
        assert!(causes < html.find("<table><tr><th>verdict</th>").expect("the counts"));
        assert!(html.contains("#causes dl{"), "the causes' style is inline");
    }

    #[test]
    fn a_run_without_a_diagnosis_has_no_causes_style() {
        let mut r = sample_report();
        r.diagnosis = None;
        let html = render(&r);
        assert!(!html.contains("#causes") && !html.contains("id=\"causes\""));
    }

    #[rstest::rstest]
    #[case::code("run `a <b>` now", "run <code>a &lt;b&gt;</code> now")]
    #[case::unbalanced("a ` b <c>", "a ` b &lt;c&gt;")]
    #[case::plain("x & y", "x &amp; y")]
    fn remedies_mark_quoted_code(#[case] text: &str, #[case] want: &str) {
        assert_eq!(inline(text), want);
    }

    #[test]
    fn container_output_cannot_inject_markup() {
        let mut r = sample_report();
        let mut c = cell("dns", "fqdn", "DNS-FQDN", "v", Verdict::Fail);
        c.observed.summary = "<script>alert(1)</script> \"x\" & \u{7}".into();
        r.cells = vec![c];
        let html = render(&r);
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &quot;x&quot; &amp; "));
    }
}
