//! One self-contained HTML page (inline style and script, no external assets, readable
//! offline): the gate, then the diagnosis first (the likely causes, ranked, each with its nodes,
//! confidence, remedy, confirm commands, evidence and the failing cells it explains; the failing
//! cells no known cause explains; the evidence gathered per node, folded), the counts, the
//! cross-pool flow matrix as a coloured grid, a table per node, and every cell — failures
//! first, with observation, likely cause, remedy, sources, evidence and the command that
//! reproduces them — filterable by verdict, suite and OS pool in the browser, with the filters
//! kept in the address fragment (`report.html#verdict=fail,error&pool=windows-20348`) so that a
//! filtered view can be linked. A legend says in plain words what each verdict and colour means;
//! a square of the flow matrix is a link (`#from=linux&to=windows-20348`) that lists that pair's
//! cells, and "show all cells" undoes every filter. The page fits a 1,280 px window (fixed
//! table layouts, long ids and output wrap), and long lists — a cause's cells, its evidence, a
//! long observation — are folded in `<details>`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::cell::{Cell, Pool};
use crate::diagnosis::{Diagnosis, failing_cells};
use crate::report::RunReport;
use crate::results_json::{self, Error};
use crate::summary::{header, wall_time};
use crate::tally;
use crate::verdict::{Counts, Verdict};

/// The file name in the report folder.
pub const FILE_NAME: &str = "report.html";

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#1d2329;max-width:100%;overflow-wrap:break-word}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;max-width:100%} td,th{border:1px solid #ccd3da;padding:.25em .5em;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#eef1f4} .num{text-align:right}
#cells td,.evidence td,pre{overflow-wrap:anywhere}
.v-pass,.v-better-than-documented{background:#dcf5e3} .v-fail,.v-error{background:#fbd9d9}
.v-warn,.v-known-limitation{background:#fdf0cc} .v-not-applicable,.v-indeterminate{background:#eceff2;color:#555}
.gate-ok{color:#12703a} .gate-bad{color:#b3261e}
details pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em;border:1px solid #dde;margin:.3em 0}
summary{cursor:pointer}
#filters label{margin-right:.8em} .hidden{display:none}
#legend td:first-child{white-space:nowrap}
#matrix td{text-align:center} #matrix em{font-weight:normal} #matrix a{display:block;color:inherit;text-decoration:none;font-weight:600}
#matrix a:hover,#matrix a:focus{text-decoration:underline} #matrix a[aria-current]{outline:2px solid #1d2329}
#cells{width:100%;table-layout:fixed} #cells col.verdict{width:11em} #cells col.cell{width:30%} #cells col.documented{width:22%}
.evidence{width:100%;table-layout:fixed} .evidence col.source{width:22%}
";

/// Added to [`STYLE`] when there is a diagnosis to show (a run without one keeps its page as
/// it was).
const CAUSES_STYLE: &str = "
#causes>ol>li{margin-bottom:.8em} #causes .confidence{font-weight:600}
#causes dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.15em .8em;margin:.3em 0}
#causes dt{color:#555} #causes dd{margin:0;overflow-wrap:anywhere} #causes pre{margin:0;white-space:pre-wrap}
#causes ul{margin:0;padding-left:1.2em}
";

const SCRIPT: &str = "
var boxes=[].slice.call(document.querySelectorAll('#filters input[data-verdict]')), flow=null, cause=null;
function applyFilters(){
  var verdicts=boxes.filter(function(b){return b.checked}).map(function(b){return b.dataset.verdict});
  var suite=document.getElementById('suite').value, pool=document.getElementById('pool').value, shown=0, rows=document.querySelectorAll('tr.cell');
  rows.forEach(function(r){
    var show=verdicts.indexOf(r.dataset.verdict)>=0&&(!suite||r.dataset.suite===suite)&&(!pool||(' '+r.dataset.pools+' ').indexOf(' '+pool+' ')>=0)
      &&(!flow||(r.dataset.from===flow[0]&&r.dataset.to===flow[1]))&&(!cause||r.dataset.cause===cause);
    r.classList.toggle('hidden',!show);
    if(show){shown++}
  });
  document.getElementById('shown').textContent=shown+' of '+rows.length+' cells shown'+(flow?', flows '+flow[0]+' → '+flow[1]:'')+(cause?', explained by cause '+cause:'');
  document.querySelectorAll('#matrix a[data-from]').forEach(function(a){
    if(flow&&a.dataset.from===flow[0]&&a.dataset.to===flow[1]){a.setAttribute('aria-current','true')}else{a.removeAttribute('aria-current')}
  });
  var state=[];
  if(verdicts.length<boxes.length){state.push('verdict='+verdicts.join(','))}
  if(suite){state.push('suite='+encodeURIComponent(suite))}
  if(pool){state.push('pool='+encodeURIComponent(pool))}
  if(flow){state.push('from='+encodeURIComponent(flow[0]),'to='+encodeURIComponent(flow[1]))}
  if(cause){state.push('explained-by='+cause)}
  try{history.replaceState(null,'',state.length?'#'+state.join('&'):location.pathname+location.search)}catch(e){}
}
function loadFilters(){
  var from='', to='';
  cause=null;
  boxes.forEach(function(b){b.checked=true});
  document.getElementById('suite').value='';
  document.getElementById('pool').value='';
  location.hash.slice(1).split('&').forEach(function(kv){
    var i=kv.indexOf('='), k=kv.slice(0,i), v=decodeURIComponent(kv.slice(i+1));
    if(k==='verdict'){var want=v.split(',');boxes.forEach(function(b){b.checked=want.indexOf(b.dataset.verdict)>=0})}
    else if(k==='suite'||k==='pool'){document.getElementById(k).value=v}
    else if(k==='from'){from=v}
    else if(k==='to'){to=v}
    else if(k==='explained-by'){cause=v}
  });
  flow=from&&to?[from,to]:null;
  applyFilters();
}
document.querySelectorAll('#filters input,#filters select').forEach(function(e){e.addEventListener('change',applyFilters)});
document.getElementById('show-all').addEventListener('click',function(){
  try{history.replaceState(null,'',location.pathname+location.search)}catch(e){}
  loadFilters();
});
window.addEventListener('hashchange',function(){
  loadFilters();
  if(flow||cause){document.getElementById('cells-heading').scrollIntoView()}
});
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
    legend(&report.counts(), strict, &mut out);
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

/// The verdict counts as a legend: what each verdict and its colour mean, in plain words, and
/// whether it fails the gate.
fn legend(counts: &Counts, strict: bool, out: &mut String) {
    out.push_str("<section id=\"legend\">\n<h2>Verdicts</h2>\n");
    out.push_str("<table><tr><th>verdict</th><th>cells</th><th>what it means</th><th>gate</th></tr>\n");
    for v in Verdict::ALL {
        let _ = writeln!(
            out,
            "<tr class=\"v-{0}\"><td>{0}</td><td class=\"num\">{1}</td><td>{2}</td><td>{3}</td></tr>",
            v.as_str(),
            counts.get(v),
            meaning(v),
            gate_effect(v, strict)
        );
    }
    out.push_str(
        "</table>\n<p>Colours: <span class=\"v-pass\">green</span> works (as documented, or better); \
<span class=\"v-warn\">yellow</span> a documented limitation or a recommendation not followed; \
<span class=\"v-fail\">red</span> broken, or the check could not run; \
<span class=\"v-not-applicable\">grey</span> not judged.</p>\n</section>\n",
    );
}

/// A verdict in plain words: what the documentation says and what was observed.
fn meaning(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "documented to work; observed working",
        Verdict::KnownLimitation => "documented as unsupported; observed failing the documented way",
        Verdict::BetterThanDocumented => {
            "documented as unsupported; observed working (the documentation may be out of date)"
        }
        Verdict::Warn => "works, but a documented recommendation is not followed",
        Verdict::Fail => "documented to work; observed failing (the cell says how to fix it)",
        Verdict::Error => "mixcheck could not run or judge the check (the cell says why)",
        Verdict::Indeterminate => "not judged: a fact the rule needs is unknown (the cell names it)",
        Verdict::NotApplicable => "not judged: the rule does not apply to this cluster",
    }
}

/// Whether a verdict fails this run's gate, in words.
fn gate_effect(v: Verdict, strict: bool) -> &'static str {
    match (v.fails_gate(false), v.fails_gate(true), strict) {
        (true, _, _) => "fails the gate",
        (false, true, true) => "fails the gate (this run is --strict)",
        (false, true, false) => "fails the gate only with --strict",
        (false, false, _) => "does not fail the gate",
    }
}

/// Source pool × destination pool, coloured by the worst verdict of the flows between them.
fn matrix(report: &RunReport, out: &mut String) {
    let Some(grid) = tally::flow_grid(report) else {
        return;
    };
    let pools = node_pools(report);
    let mut endpoints: Vec<&str> = grid
        .sources
        .iter()
        .chain(&grid.destinations)
        .map(String::as_str)
        .filter(|p| !pools.iter().any(|n| n == p))
        .collect();
    endpoints.sort_unstable();
    endpoints.dedup();
    out.push_str(
        "<h2>Flows between OS pools</h2>\n<p>Each square: the flows that behave as documented / the flows judged \
(not-applicable and indeterminate ones left out), coloured by the worst verdict among them. Select a \
square to list its cells below.",
    );
    if !endpoints.is_empty() {
        let names: Vec<String> = endpoints.iter().map(|e| format!("<em>{}</em>", esc(e))).collect();
        let _ = write!(
            out,
            " In italics, endpoints that are not OS pools: {}.",
            names.join(", ")
        );
    }
    out.push_str("</p>\n<table id=\"matrix\"><tr><th>source ↓ / destination →</th>");
    let name = |p: &str| {
        if pools.iter().any(|n| n == p) {
            esc(p)
        } else {
            format!("<em>{}</em>", esc(p))
        }
    };
    for d in &grid.destinations {
        let _ = write!(out, "<th>{}</th>", name(d));
    }
    out.push_str("</tr>\n");
    for s in &grid.sources {
        let _ = write!(out, "<tr><th>{}</th>", name(s));
        for d in &grid.destinations {
            match grid.cells.get(&(s.clone(), d.clone())) {
                None => out.push_str("<td></td>"),
                Some(counts) => {
                    let worst = tally::worst(counts);
                    let (ok, judged) = tally::documented(counts);
                    let _ = write!(
                        out,
                        "<td class=\"v-{w}\" title=\"worst: {w}\"><a href=\"#from={from_url}&amp;to={to_url}\" data-from=\"{from}\" data-to=\"{to}\" aria-label=\"{from} to {to}: {ok} of {judged} judged flows as documented, worst {w}; list its {total}\">{ok}/{judged}</a></td>",
                        w = worst.as_str(),
                        from_url = esc(&url_part(s)),
                        to_url = esc(&url_part(d)),
                        from = esc(s),
                        to = esc(d),
                        total = plural(counts.total(), "cell", "cells"),
                    );
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// The pools of the cluster's nodes (`linux`, `windows-20348`); the other names a cell's source
/// or destination takes are endpoints (the cluster DNS, outside, the same pod, …).
fn node_pools(report: &RunReport) -> Vec<String> {
    let mut pools: Vec<String> = report
        .facts
        .nodes
        .values()
        .filter_map(|f| {
            f.os.as_ref()
                .map(|os| Pool::of(os.value, f.windows_build.as_ref().map(|b| b.value)))
        })
        .map(|p| p.as_str().to_string())
        .collect();
    pools.sort_unstable();
    pools.dedup();
    pools
}

/// One row per node: OS, build, versions from the facts, and the verdicts of the cells it was in.
fn nodes(report: &RunReport, out: &mut String) {
    if report.facts.nodes.is_empty() {
        return;
    }
    let per_node = per_node(report);
    // Which nodes got every check, where the run sampled (or checked every node by request).
    let coverage = report.coverage.as_ref().filter(|c| c.line().is_some()).map(|c| {
        let levels: BTreeMap<&str, &str> = c.nodes.iter().map(|n| (n.node.as_str(), n.level.as_str())).collect();
        (c.line().unwrap_or_default(), levels)
    });
    out.push_str("<h2>Nodes</h2>\n<p class=\"note\">A cell counts on the nodes it was observed on: a flow between two nodes counts on both, so the last column splits each node's failing cells by the part the node played (source, destination, or the node a check is about). A pool's failing cells are the distinct cells over its nodes, as in the pool table.</p>\n");
    if let Some((line, _)) = &coverage {
        let _ = writeln!(out, "<p class=\"note\">Coverage: {}</p>", esc(line));
    }
    out.push_str("<table><tr><th>node</th><th>OS</th><th>build</th><th>kubelet</th><th>runtime</th>");
    if coverage.is_some() {
        out.push_str("<th>coverage</th>");
    }
    for v in Verdict::ALL {
        let _ = write!(out, "<th class=\"v-{0}\">{0}</th>", v.as_str());
    }
    out.push_str("<th>failing as source / destination / node checked</th></tr>\n");
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
        if let Some((_, levels)) = &coverage {
            let _ = write!(
                out,
                "<td>{}</td>",
                levels.get(name.as_str()).copied().unwrap_or("facts only")
            );
        }
        let on = per_node.get(name.as_str()).cloned().unwrap_or_default();
        for v in Verdict::ALL {
            let _ = write!(out, "<td class=\"num\">{}</td>", on.counts.get(v));
        }
        let _ = writeln!(
            out,
            "<td class=\"num\">{} / {} / {}</td></tr>",
            on.failing_as[0], on.failing_as[1], on.failing_as[2]
        );
    }
    out.push_str("</table>\n");
}

/// What the cells observed on one node add up to.
#[derive(Debug, Clone, Default)]
struct OnNode {
    /// Verdicts of the cells observed on the node, each cell once.
    counts: Counts,
    /// Its failing cells by the node's part: source, destination, the node checked.
    failing_as: [usize; 3],
}

/// The nodes a cell was observed on (the pair whose result it took), else all its nodes.
fn observed_nodes(c: &crate::cell::Cell) -> &[crate::cell::NodeRef] {
    if c.observed.on.is_empty() {
        &c.nodes
    } else {
        &c.observed.on
    }
}

/// Per node, what the cells observed on it add up to.
fn per_node(report: &RunReport) -> BTreeMap<&str, OnNode> {
    use crate::cell::NodeRole;
    let mut out: BTreeMap<&str, OnNode> = BTreeMap::new();
    for c in &report.cells {
        let mut seen: Vec<&str> = Vec::new();
        for n in observed_nodes(c) {
            let entry = out.entry(n.name.as_str()).or_default();
            if !seen.contains(&n.name.as_str()) {
                entry.counts.add(c.verdict);
                seen.push(n.name.as_str());
            }
            if c.verdict.fails_gate(false) {
                let part = match n.role {
                    NodeRole::Source => 0,
                    NodeRole::Destination => 1,
                    NodeRole::Subject => 2,
                };
                entry.failing_as[part] += 1;
            }
        }
    }
    out
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
        // The count of cells a cause explains links the cell list filtered to them.
        let explains = if c.explains.is_empty() {
            failing_cells(0)
        } else {
            format!(
                "<a href=\"#explained-by={}\" title=\"list them below\">{}</a>",
                i + 1,
                failing_cells(c.explains.len())
            )
        };
        let _ = write!(
            out,
            "<li id=\"cause-{}\"><strong>{}</strong> <code>[{}]</code> on <strong>{}</strong> — confidence <span class=\"confidence\">{}%</span>, explains {}",
            i + 1,
            esc(&c.title),
            esc(&c.id),
            esc(&c.location()),
            c.confidence,
            explains
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
            out.push_str("<dt>evidence</dt><dd>");
            folded_list(out, &c.evidence, 3, |line| esc(line));
            out.push_str("</dd>\n");
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
        let _ = write!(out, "<p><strong>{}:</strong></p>", esc(&line));
        folded_list(out, &d.unexplained, FOLD_AFTER, |id| {
            format!("<code>{}</code>", esc(id.as_str()))
        });
        out.push('\n');
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
                "<h3>{}</h3>\n<table class=\"evidence\"><colgroup><col class=\"source\"><col></colgroup><tr><th>source</th><th>what it says</th></tr>",
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

/// A `<dt>` and the cell ids under it, nothing when there are none; a long list is folded.
fn id_list(out: &mut String, label: &str, ids: &[crate::cell::CellId]) {
    if ids.is_empty() {
        return;
    }
    let _ = write!(out, "<dt>{label}</dt><dd>");
    let line = |ids: &[crate::cell::CellId]| {
        ids.iter()
            .map(|id| format!("<code>{}</code>", esc(id.as_str())))
            .collect::<Vec<_>>()
            .join("<br>")
    };
    if ids.len() > FOLD_AFTER {
        let _ = write!(
            out,
            "<details><summary>{}</summary>{}</details>",
            plural(ids.len(), "cell", "cells"),
            line(ids)
        );
    } else {
        out.push_str(&line(ids));
    }
    out.push_str("</dd>\n");
}

/// Lists of cells longer than this are folded (evidence lists after 3 items).
const FOLD_AFTER: usize = 5;

/// A `<ul>` of the items: the first `keep` shown, the others in a `<details>` under it.
fn folded_list<T>(out: &mut String, items: &[T], keep: usize, item: impl Fn(&T) -> String) {
    let (shown, rest) = items.split_at(items.len().min(keep));
    out.push_str("<ul>");
    for x in shown {
        let _ = write!(out, "<li>{}</li>", item(x));
    }
    out.push_str("</ul>");
    if !rest.is_empty() {
        let _ = write!(out, "<details><summary>{} more</summary><ul>", rest.len());
        for x in rest {
            let _ = write!(out, "<li>{}</li>", item(x));
        }
        out.push_str("</ul></details>");
    }
}

/// Text of a cell: short text as it is; long or many-lined text as its start, the whole of it
/// folded under it.
fn long_text(text: &str) -> String {
    const SHORT: usize = 200;
    let text = text.trim_end();
    let first = text.lines().next().unwrap_or_default();
    if text.chars().count() <= SHORT && text.lines().count() <= 3 {
        return esc(text);
    }
    let mut start: String = first.chars().take(120).collect();
    if start.len() < text.len() {
        start.push('…');
    }
    format!(
        "<details class=\"long\"><summary>{}</summary><pre>{}</pre></details>",
        esc(&start),
        esc(text)
    )
}

/// "1 cell", "3 cells".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A pool name for the address fragment: anything but letters, digits and `-_.~` percent-encoded.
fn url_part(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
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
    let node_pools = node_pools(report);
    let (os_pools, endpoints): (Vec<&str>, Vec<&str>) = pools.iter().partition(|p| node_pools.iter().any(|n| n == *p));
    out.push_str("<h2 id=\"cells-heading\">Cells</h2>\n<div id=\"filters\">");
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
    out.push_str("</select></label><label>OS pool or endpoint <select id=\"pool\"><option value=\"\">all</option>");
    for (label, group) in [("OS pools", &os_pools), ("other endpoints", &endpoints)] {
        if group.is_empty() {
            continue;
        }
        let _ = write!(out, "<optgroup label=\"{label}\">");
        for p in group.iter() {
            let _ = write!(out, "<option>{}</option>", esc(p));
        }
        out.push_str("</optgroup>");
    }
    out.push_str(
        "</select></label> <button type=\"button\" id=\"show-all\">show all cells</button> <span id=\"shown\" role=\"status\"></span></div>\n",
    );
    out.push_str(
        "<table id=\"cells\"><colgroup><col class=\"verdict\"><col class=\"cell\"><col class=\"observed\"><col class=\"documented\"></colgroup>\n<tr><th>verdict</th><th>cell</th><th>observed</th><th>documented</th></tr>\n",
    );
    for c in ordered {
        let pools: Vec<&str> = [&c.coordinates.source, &c.coordinates.destination]
            .into_iter()
            .flatten()
            .map(|p| p.as_str())
            .collect();
        let mut flow = String::new();
        if let Some(p) = &c.coordinates.source {
            let _ = write!(flow, " data-from=\"{}\"", esc(p.as_str()));
        }
        if let Some(p) = &c.coordinates.destination {
            let _ = write!(flow, " data-to=\"{}\"", esc(p.as_str()));
        }
        let cause = diagnosis.and_then(|d| d.cause_of(&c.id));
        if let Some((rank, _)) = cause {
            let _ = write!(flow, " data-cause=\"{rank}\"");
        }
        let _ = write!(
            out,
            "<tr class=\"cell v-{v}\" data-verdict=\"{v}\" data-suite=\"{suite}\" data-pools=\"{pools}\"{flow}><td>{v}</td><td><code>{id}</code><br>{title}</td><td>{obs}",
            v = c.verdict.as_str(),
            suite = esc(&c.suite),
            pools = esc(&pools.join(" ")),
            id = esc(c.id.as_str()),
            title = esc(&c.title),
            obs = long_text(&c.observed.summary),
        );
        if let Some((rank, x)) = cause {
            let _ = write!(
                out,
                "<div>likely cause: <a href=\"#cause-{rank}\">{rank}. {}</a></div>",
                esc(&x.title)
            );
        }
        let fails = matches!(c.verdict, Verdict::Fail | Verdict::Error) || c.verdict.fails_gate(report.strict);
        if fails || c.observed.evidence.is_some() || c.reason.is_some() {
            // A failure no cause explains is open; an explained one has its remedy at the cause.
            let open = if fails && cause.is_none() { " open" } else { "" };
            let _ = write!(
                out,
                "<details{open}><summary>details</summary><pre>{}</pre></details>",
                esc(&crate::junit::details(c, cause.map(|(_, x)| x)))
            );
        }
        let _ = writeln!(out, "</td><td>{}</td></tr>", long_text(&c.expected.text));
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
    use crate::cell::Coordinates;
    use crate::testdata::{cell, sample_report};

    /// The node table and the pool table agree: a pool's failing cells are the distinct failing
    /// cells over its nodes, and a flow between two nodes counts on both, split by the part
    /// each played.
    #[test]
    fn nodes_and_pools_count_the_same_failing_cells() {
        use crate::cell::{NodeRef, NodeRole, Pool};
        use crate::facts::Os;
        let node = |name: &str, os: Os, build: Option<u32>, role: NodeRole| NodeRef {
            name: name.into(),
            os,
            build,
            role,
        };
        let at = |rule: &str, src: &str, dst: Option<&str>, verdict: Verdict, on: Vec<NodeRef>| {
            let mut c = cell("net", "x", rule, "v", verdict);
            c.coordinates.source = Some(Pool::named(src));
            c.coordinates.destination = dst.map(Pool::named);
            c.id = crate::cell::CellId::new("net", rule, &c.coordinates).expect("id");
            c.nodes = on.clone();
            c.observed.on = on;
            c
        };
        let (lin, win_a, win_b) = (
            |r| node("linux-1", Os::Linux, None, r),
            |r| node("win-a", Os::Windows, Some(20348), r),
            |r| node("win-b", Os::Windows, Some(20348), r),
        );
        let mut report = sample_report();
        report.cells = vec![
            at(
                "NET-A",
                "linux",
                Some("windows-20348"),
                Verdict::Fail,
                vec![lin(NodeRole::Source), win_a(NodeRole::Destination)],
            ),
            at(
                "NET-B",
                "windows-20348",
                Some("windows-20348"),
                Verdict::Fail,
                vec![win_a(NodeRole::Source), win_b(NodeRole::Destination)],
            ),
            at(
                "NET-C",
                "windows-20348",
                Some("cluster-dns"),
                Verdict::Error,
                vec![win_a(NodeRole::Source)],
            ),
            at(
                "MEM-D",
                "windows-20348",
                None,
                Verdict::Fail,
                vec![win_b(NodeRole::Subject)],
            ),
            at(
                "NET-E",
                "linux",
                Some("linux"),
                Verdict::Pass,
                vec![lin(NodeRole::Source), lin(NodeRole::Destination)],
            ),
        ];
        let nodes = per_node(&report);
        assert_eq!(nodes["linux-1"].failing_as, [1, 0, 0]);
        assert_eq!(nodes["win-a"].failing_as, [2, 1, 0]);
        assert_eq!(nodes["win-b"].failing_as, [0, 1, 1]);
        assert_eq!(
            nodes["linux-1"].counts.get(Verdict::Pass),
            1,
            "a same-node flow counts once"
        );
        let pools = crate::tally::by_pool(&report);
        for (pool, members) in [("linux", vec!["linux-1"]), ("windows-20348", vec!["win-a", "win-b"])] {
            let failing = |c: &&crate::cell::Cell| c.verdict.fails_gate(false);
            let over_nodes = report
                .cells
                .iter()
                .filter(failing)
                .filter(|c| observed_nodes(c).iter().any(|n| members.contains(&n.name.as_str())))
                .count();
            let counts = pools[pool];
            assert_eq!(
                counts.get(Verdict::Fail) + counts.get(Verdict::Error),
                over_nodes,
                "{pool}"
            );
        }
        let html = render(&report);
        assert!(
            html.contains("a flow between two nodes counts on both"),
            "the table says so"
        );
    }

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

    /// The cells of `html` the list shows, as the lines of their rows.
    fn cell_rows(html: &str) -> Vec<&str> {
        html.lines().filter(|l| l.starts_with("<tr class=\"cell ")).collect()
    }

    /// The value of every `name="…"` attribute in `text`, in order.
    fn attrs<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        let key = format!(" {name}=\"");
        text.match_indices(&key)
            .filter_map(|(at, _)| {
                let rest = &text[at + key.len()..];
                rest.find('"').map(|end| &rest[..end])
            })
            .collect()
    }

    #[rstest::rstest]
    #[case::pass(Verdict::Pass, "documented to work; observed working")]
    #[case::limitation(
        Verdict::KnownLimitation,
        "documented as unsupported; observed failing the documented way"
    )]
    #[case::better(Verdict::BetterThanDocumented, "documented as unsupported; observed working")]
    #[case::warn(Verdict::Warn, "a documented recommendation is not followed")]
    #[case::fail(Verdict::Fail, "documented to work; observed failing")]
    #[case::error(Verdict::Error, "mixcheck could not run or judge the check")]
    #[case::indeterminate(Verdict::Indeterminate, "a fact the rule needs is unknown")]
    #[case::not_applicable(Verdict::NotApplicable, "the rule does not apply to this cluster")]
    fn the_legend_says_what_each_verdict_means(#[case] v: Verdict, #[case] words: &str) {
        let html = render(&crate::testdata::every_verdict_report());
        let legend = &html[html.find("<section id=\"legend\">").expect("a legend")..];
        let legend = &legend[..legend.find("</section>").expect("its end")];
        let row = legend
            .lines()
            .find(|l| l.starts_with(&format!("<tr class=\"v-{v}\"><td>{v}</td>")))
            .unwrap_or_else(|| panic!("no legend row for {v}:\n{legend}"));
        assert!(row.contains(words), "{row}");
        let gate = if v.fails_gate(false) {
            "<td>fails the gate</td>"
        } else if v.fails_gate(true) {
            "only with --strict"
        } else {
            "does not fail the gate"
        };
        assert!(row.contains(gate), "{row}");
        for colour in ["green", "yellow", "red", "grey"] {
            assert!(legend.contains(colour), "the legend names the colour {colour}");
        }
    }

    #[rstest::rstest]
    #[case::strict(true, "fails the gate (this run is --strict)")]
    #[case::lenient(false, "fails the gate only with --strict")]
    fn the_legend_follows_the_runs_strictness(#[case] strict: bool, #[case] want: &str) {
        assert_eq!(gate_effect(Verdict::Warn, strict), want);
        assert_eq!(gate_effect(Verdict::Fail, strict), "fails the gate");
        assert_eq!(gate_effect(Verdict::Pass, strict), "does not fail the gate");
    }

    #[test]
    fn every_matrix_square_lists_cells_that_are_in_the_list() {
        let report = crate::testdata::every_verdict_report();
        let html = render(&report);
        let start = html.find("<table id=\"matrix\">").expect("a matrix");
        let matrix = &html[start..start + html[start..].find("</table>").expect("its end")];
        let froms = attrs(matrix, "data-from");
        let tos = attrs(matrix, "data-to");
        let grid = tally::flow_grid(&report).expect("flows");
        assert_eq!(froms.len(), grid.cells.len(), "one link per square:\n{matrix}");
        assert_eq!(froms.len(), tos.len());
        let rows = cell_rows(&html);
        for (from, to) in froms.into_iter().zip(tos) {
            let listed = rows
                .iter()
                .filter(|r| attrs(r, "data-from") == [from] && attrs(r, "data-to") == [to])
                .count();
            let counts = grid
                .cells
                .get(&(from.to_string(), to.to_string()))
                .expect("a square of the grid");
            assert_eq!(
                listed,
                counts.total(),
                "{from} → {to}: the list has each of the square's cells"
            );
            assert!(
                matrix.contains(&format!("href=\"#from={from}&amp;to={to}\"")),
                "{from} → {to} links its filter"
            );
        }
        assert!(html.contains("<button type=\"button\" id=\"show-all\">show all cells</button>"));
        assert!(SCRIPT.contains("'hashchange'") && SCRIPT.contains("getElementById('show-all')"));
    }

    #[test]
    fn each_cause_links_the_cells_it_explains() {
        let report = crate::testdata::every_verdict_report();
        let html = render(&report);
        let rows = cell_rows(&html);
        let d = report.diagnosis.as_ref().expect("diagnosed");
        for (i, c) in d.causes.iter().enumerate() {
            let n = (i + 1).to_string();
            assert!(
                html.contains(&format!(
                    "explains <a href=\"#explained-by={n}\" title=\"list them below\">"
                )),
                "cause {n} links its cells"
            );
            let listed = rows.iter().filter(|r| attrs(r, "data-cause") == [n.as_str()]).count();
            assert_eq!(listed, c.explains.len(), "cause {n}: its cells are in the list");
        }
        assert!(SCRIPT.contains("k==='explained-by'"));
    }

    #[test]
    fn long_lists_and_observations_are_folded() {
        let mut r = crate::testdata::every_verdict_report();
        let ids: Vec<_> = r.cells.iter().map(|c| c.id.clone()).collect();
        let d = r.diagnosis.as_mut().expect("diagnosed");
        d.causes[0].explains = ids.clone();
        d.causes[0].evidence = (1..=5).map(|i| format!("evidence line {i}")).collect();
        d.causes[1].explains.truncate(1);
        let long = format!("first line <b>\n{}", "x".repeat(300));
        r.cells[0].observed.summary = long.clone();
        let html = render(&r);
        assert!(
            html.contains(&format!(
                "<dt>explains</dt><dd><details><summary>{} cells</summary><code>",
                ids.len()
            )),
            "{html}"
        );
        assert!(
            html.contains(
                "<li>evidence line 3</li></ul><details><summary>2 more</summary><ul><li>evidence line 4</li>"
            )
        );
        assert!(
            !html.contains("<dt>explains</dt><dd><details><summary>1 cell</summary>"),
            "a short list stays open"
        );
        assert!(html.contains(
            "<details class=\"long\"><summary>first line &lt;b&gt;…</summary><pre>first line &lt;b&gt;\nxxx"
        ));
    }

    #[test]
    fn the_cell_list_fits_the_window() {
        let html = render(&crate::testdata::every_verdict_report());
        assert!(html.contains("#cells{width:100%;table-layout:fixed}"));
        assert!(html.contains("<table id=\"cells\"><colgroup>"));
        assert!(html.contains("#cells td,.evidence td,pre{overflow-wrap:anywhere}"));
    }

    #[rstest::rstest]
    #[case::pool("windows-20348", "windows-20348")]
    #[case::odd("a b&c/→", "a%20b%26c%2F%E2%86%92")]
    fn pools_in_the_address_are_encoded(#[case] name: &str, #[case] want: &str) {
        assert_eq!(url_part(name), want);
    }
}
