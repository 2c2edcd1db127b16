//! One self-contained HTML page (inline style and script, no external assets, readable
//! offline): the gate and counts, the cross-pool flow matrix as a coloured grid, a table per
//! node, and every cell — failures first, with observation, remedy, sources, evidence and the
//! command that reproduces them — filterable by verdict, suite and OS pool in the browser, with
//! the filters kept in the address fragment (`report.html#verdict=fail,error&pool=windows-20348`)
//! so that a filtered view can be linked.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cell::Cell;
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
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mixcheck {} — {gate}</title><style>{STYLE}</style></head><body>\n",
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
    counts_table(&report.counts(), &mut out);
    matrix(report, &mut out);
    nodes(report, &mut out);
    cells(report, &mut out);
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

/// Every cell, failures first, with the filters above them.
fn cells(report: &RunReport, out: &mut String) {
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
        if matches!(c.verdict, Verdict::Fail | Verdict::Error) || c.verdict.fails_gate(report.strict) {
            let _ = write!(
                out,
                "<details open><summary>details</summary><pre>{}</pre></details>",
                esc(&crate::junit::details(c))
            );
        } else if c.observed.evidence.is_some() || c.reason.is_some() {
            let _ = write!(
                out,
                "<details><summary>details</summary><pre>{}</pre></details>",
                esc(&crate::junit::details(c))
            );
        }
        let _ = writeln!(out, "</td><td>{}</td></tr>", esc(&c.expected.text));
    }
    out.push_str("</table>\n");
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
