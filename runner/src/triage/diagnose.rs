//! Diagnosis: from a run's failing cells to the likely causes of the cause catalogue
//! ([`crate::catalogue::causes`]), each localised to nodes. Pure: it reads the judged cells, the facts and
//! the evidence gathered per node, so `mixcheck diagnose --from results.json` reruns it offline.
//!
//! For every node that a failing cell was observed on and every cause that can occur there (OS,
//! network mode), the cause's signature is laid over the run: the failing cells it predicts are
//! what it *explains*; cells it predicts to fail that worked, and cells it says keep working
//! that failed, speak against it. Its confidence is the share of its predictions that held,
//! raised or lowered by node diagnostics and lowered by what the node's evidence shows against
//! it (`refutedBy`). A cause whose required messages are not seen is not a candidate. Causes are
//! then picked greedily — the one that explains most of what is still unexplained, weighted by
//! confidence, first — so each failing cell is explained at most once, by the best cause; what no
//! cause explains stays visible as unexplained. Once a cause is named on a node, the cells it
//! explains count neither for nor against the candidates on other nodes ([`pick`]). Documented
//! limitations never fail a cell, so they never become causes.

use std::collections::{BTreeMap, BTreeSet};

use mixcheck_reports::{
    Cause as Found, Cell, CellId, Diagnosis, EvidenceItem, NodeEvidence, NodeRef, NodeRole, Os, RunReport, Verdict,
};
use regex::Regex;

use crate::catalogue::causes::{Catalogue, Cause, CellMatch, Compiled, Locality, Role};

/// Below this confidence a cause is not named.
const MIN_CONFIDENCE: f64 = 0.4;
/// The most confidence the cells' pattern and messages give; the rest comes from node
/// diagnostics that confirm the cause.
const SYMPTOMS_WEIGHT: f64 = 0.85;
/// How many evidence lines a cause shows.
const EVIDENCE_LINES: usize = 6;
/// How long one evidence line may be.
const EVIDENCE_LINE_CHARS: usize = 300;

/// The prefix of the evidence items that hold a confirmation command's output.
pub const DIAGNOSTICS_PREFIX: &str = "diagnostics: ";

fn failing(v: Verdict) -> bool {
    matches!(v, Verdict::Fail | Verdict::Error)
}

fn working(v: Verdict) -> bool {
    matches!(v, Verdict::Pass | Verdict::BetterThanDocumented | Verdict::Warn)
}

/// The nodes a cell's result was observed on: the pair it took its result from, or (in a
/// report without that) all its nodes.
fn observed_on(cell: &Cell) -> &[NodeRef] {
    if cell.observed.on.is_empty() {
        &cell.nodes
    } else {
        &cell.observed.on
    }
}

fn role_fits(wanted: Role, role: NodeRole) -> bool {
    match wanted {
        Role::Either => true,
        Role::Source => matches!(role, NodeRole::Source | NodeRole::Subject),
        Role::Destination => role == NodeRole::Destination,
    }
}

/// The pod-to-pod check a cell's failure is a symptom of, where its own rule is not about plain
/// connectivity: a `network-policy` cell probes the flow between its pods before any policy, and
/// a failure there is the same pod → pod by IP flow failing (rule and check), whatever the
/// policy case — so the causes that break pod flows explain it too.
fn symptom_of(cell: &Cell) -> Option<(&'static str, &'static str)> {
    if !cell.rule_id.starts_with("NETPOL-") || !cell.observed.summary.contains(crate::probes::netpol::BEFORE_ANY_POLICY)
    {
        return None;
    }
    Some(match cell.coordinates.locality {
        Some(mixcheck_reports::Locality::SameNode) => ("NET-POD-POD-IP-SAME", "pod-ip-same-node"),
        _ => ("NET-POD-POD-IP-CROSS", "pod-ip-cross-node"),
    })
}

/// Whether `cell` is one of the set `m` for `node`, among the node references `refs`.
fn matches(m: &CellMatch, cell: &Cell, refs: &[NodeRef], node: &str, mode: Option<&str>) -> bool {
    let named =
        m.names(&cell.rule_id, &cell.check) || symptom_of(cell).is_some_and(|(rule, check)| m.names(rule, check));
    if !named {
        return false;
    }
    if let Some(mode) = mode
        && !m.network_modes.is_empty()
        && !m.network_modes.iter().any(|w| w == mode)
    {
        return false;
    }
    if !refs.iter().any(|r| r.name == node && role_fits(m.node, r.role)) {
        return false;
    }
    if let Some(want) = m.locality {
        let have = cell.coordinates.locality;
        let fits = matches!(
            (want, have),
            (Locality::SameNode, Some(mixcheck_reports::Locality::SameNode))
                | (Locality::OtherNode, Some(mixcheck_reports::Locality::OtherNode))
        );
        if !fits {
            return false;
        }
    }
    if !m.to.is_empty() {
        let Some(dst) = &cell.coordinates.destination else {
            return false;
        };
        if !m.to.iter().any(|k| k.is(dst.as_str())) {
            return false;
        }
    }
    if let Some(re) = &m.message_re
        && !re.is_match(&cell_text(cell))
    {
        return false;
    }
    true
}

/// Everything a cell says, for message patterns.
fn cell_text(cell: &Cell) -> String {
    let mut text = cell.observed.summary.clone();
    if let Some(reason) = &cell.reason {
        text.push('\n');
        text.push_str(reason);
    }
    if let Some(e) = &cell.observed.evidence {
        for part in [e.stdout.as_str(), e.stderr.as_str()] {
            text.push('\n');
            text.push_str(part);
        }
        for ev in &e.events {
            text.push_str(&format!("\n{} {}", ev.reason, ev.message.as_str()));
        }
    }
    text
}

/// The first line of `text` that `re` matches, shortened.
fn matching_line(re: &Regex, text: &str) -> Option<String> {
    let line = text.lines().find(|l| re.is_match(l))?;
    Some(shorten(line.trim()))
}

/// A line cut to [`EVIDENCE_LINE_CHARS`].
fn shorten(line: &str) -> String {
    if line.chars().count() > EVIDENCE_LINE_CHARS {
        let mut short: String = line.chars().take(EVIDENCE_LINE_CHARS).collect();
        short.push('…');
        short
    } else {
        line.to_string()
    }
}

/// Where a pattern matched: `cell ID` or an evidence item's source, and the line.
fn find(re: &Regex, cells: &[(&CellId, String)], items: &[EvidenceItem]) -> Option<String> {
    cells
        .iter()
        .find_map(|(id, text)| matching_line(re, text).map(|l| format!("cell {id}: {l}")))
        .or_else(|| {
            items
                .iter()
                .find_map(|i| matching_line(re, i.text.as_str()).map(|l| format!("{}: {l}", i.source)))
        })
}

/// Whether an evidence item is the node's own state as the API shows it (its conditions, taints
/// and Lease; [`crate::triage::evidence`]), not a pod's or a cell's.
fn node_state(source: &str) -> bool {
    source.starts_with("condition ") || source == "taints" || source.starts_with("lease ")
}

/// One cause on one node, scored over the whole run.
struct Candidate<'a> {
    cause: &'a Compiled,
    node: String,
    /// The failing cells it predicts.
    explained: Vec<usize>,
    /// Those of `explained` that are a stand-in's observation counted with its twin (weighed
    /// once: [`twins`]).
    doubles: BTreeSet<usize>,
    /// The cells it predicts to fail that worked.
    contradicted: Vec<usize>,
    /// The failing cells it says keep working.
    violated: Vec<usize>,
    /// Its confidence over the whole run ([`Candidate::confidence`] with nothing set aside).
    confidence: f64,
    /// How many node diagnostics refuted it (each halves its confidence).
    refuted: i32,
    /// Whether a node diagnostic confirmed it.
    confirmed: bool,
    /// Whether a message it requires was not seen: no candidate to name, but a rival that a
    /// discriminating observation could make one ([`rivals`]).
    unconfirmed: bool,
    /// Matched message patterns: a cause that names more of what was seen is more specific.
    specificity: usize,
    evidence: Vec<String>,
}

/// What the run says about a node: its OS, from the facts or the cells.
fn os_of(report: &RunReport, node: &str) -> Option<Os> {
    report
        .facts
        .nodes
        .get(node)
        .and_then(|f| f.os.as_ref().map(|o| o.value))
        .or_else(|| {
            report
                .cells
                .iter()
                .flat_map(|c| &c.nodes)
                .find(|r| r.name == node)
                .map(|r| r.os)
        })
}

fn os_fits(want: Option<Os>, have: Option<Os>) -> bool {
    match (want, have) {
        (None, _) | (_, None) => true,
        (Some(w), Some(o)) => w == o,
    }
}

/// How the report's cells fit a cause's signature on a node, by index: failing cells its
/// failing set explains, working cells it predicted to fail, failing cells it predicted to keep
/// working.
struct CellFit {
    explained: Vec<usize>,
    contradicted: Vec<usize>,
    violated: Vec<usize>,
}

/// Sorts the report's cells against `cause`'s cell sets on `node`.
fn cell_fit(report: &RunReport, cause: &Compiled, node: &str) -> CellFit {
    let c = &cause.cause;
    let mut fit = CellFit {
        explained: Vec::new(),
        contradicted: Vec::new(),
        violated: Vec::new(),
    };
    let mode = report.facts.network_mode.as_ref().map(|f| f.value.as_str());
    for (i, cell) in report.cells.iter().enumerate() {
        let refs = if failing(cell.verdict) {
            observed_on(cell)
        } else {
            &cell.nodes
        };
        if c.fails.iter().any(|m| matches(m, cell, refs, node, mode)) {
            if failing(cell.verdict) {
                fit.explained.push(i);
            } else if working(cell.verdict) {
                fit.contradicted.push(i);
            }
        } else if c.may_fail.iter().any(|m| matches(m, cell, refs, node, mode)) {
            if failing(cell.verdict) {
                fit.explained.push(i);
            }
        } else if failing(cell.verdict) && c.keeps.iter().any(|m| matches(m, cell, refs, node, mode)) {
            fit.violated.push(i);
        }
    }
    fit
}

/// What the messages and the node's evidence say about a cause on a node: the evidence lines
/// shown, how specific the fit is, whether a diagnostic confirmed it and how many things refute
/// it.
#[derive(Default)]
struct Weighing {
    lines: Vec<String>,
    specificity: usize,
    confirmed: bool,
    refuted: i32,
    /// A required message was not seen.
    unconfirmed: bool,
}

impl Weighing {
    /// The messages the cause needs and those that support it, searched in the explained
    /// cells' `texts` and the node's `evidence`: None when the node's state contradicts it; a
    /// required message not seen leaves it unconfirmed.
    fn messages(&mut self, cause: &Compiled, texts: &[(&CellId, String)], evidence: &[EvidenceItem]) -> Option<()> {
        // The node's own state first: a cause it contradicts (a Ready node for a stopped kubelet)
        // is no candidate, whatever the count of cells it would explain.
        let state: Vec<EvidenceItem> = evidence.iter().filter(|i| node_state(&i.source)).cloned().collect();
        for re in &cause.node_shows {
            self.lines.push(find(re, &[], &state)?);
        }
        for re in &cause.requires {
            match find(re, texts, evidence) {
                Some(line) => self.lines.push(line),
                None => self.unconfirmed = true,
            }
        }
        // What the cells themselves say counts like a required message: a cause whose cell set is
        // narrowed by a message the cells show is more specific than one that fits by rule alone.
        self.specificity += cause.requires.len()
            + cause.node_shows.len()
            + cause.cause.fails.iter().filter(|m| m.message_re.is_some()).count();
        for re in &cause.supports {
            if let Some(line) = find(re, texts, evidence) {
                self.specificity += 1;
                self.lines.push(line);
            }
        }
        Some(())
    }

    /// What the node's own evidence shows against the cause (its `refutedBy`): counts like a
    /// refuting diagnostic, shown first.
    fn refutations(&mut self, c: &Cause, vars: &BTreeMap<&str, String>, evidence: &[EvidenceItem]) {
        for pattern in &c.refuted_by {
            let Some(Ok((_, re))) = crate::catalogue::causes::confirm_pattern(pattern, vars) else {
                continue;
            };
            if let Some(line) = evidence
                .iter()
                .find_map(|i| matching_line(&re, i.text.as_str()).map(|l| format!("{}: {l}", i.source)))
            {
                self.refuted += 1;
                self.lines.insert(0, format!("against it: {line}"));
            }
        }
    }

    /// What the cause's confirming commands, run on the node, showed: each that confirms it
    /// makes it more specific, each that does not refutes it; one that failed is shown only.
    fn confirmations(&mut self, c: &Cause, vars: &BTreeMap<&str, String>, evidence: &[EvidenceItem]) {
        for confirm in &c.confirm {
            let Some(pattern) = &confirm.confirms else { continue };
            let source = format!("{DIAGNOSTICS_PREFIX}{}", confirm.command);
            let Some(item) = evidence.iter().find(|i| i.source == source) else {
                continue;
            };
            // A command that failed (a missing cmdlet, file or tool) is no evidence either way.
            if crate::probes::outcome::not_run(item.text.as_str()) {
                self.lines
                    .push(format!("{source}: {}", shorten(item.text.as_str().trim())));
                continue;
            }
            let output = item.text.as_str();
            let Some((confirms, line)) = confirmation(pattern, vars, output) else {
                continue;
            };
            if confirms {
                self.confirmed = true;
                self.specificity += 1;
                let shown =
                    line.unwrap_or_else(|| shorten(output.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim()));
                self.lines.push(format!("{source}: {shown}"));
            } else {
                self.refuted += 1;
            }
        }
    }

    /// What the first explained cells observed, up to [`EVIDENCE_LINES`] lines in all.
    fn cell_summaries(&mut self, report: &RunReport, texts: &[(&CellId, String)]) {
        for (id, _) in texts.iter().take(EVIDENCE_LINES) {
            if self.lines.len() >= EVIDENCE_LINES {
                break;
            }
            let summary = report
                .cells
                .iter()
                .find(|c| &c.id == *id)
                .map(|c| c.observed.summary.as_str());
            if let Some(first) = summary.and_then(|s| s.lines().next()) {
                self.lines.push(format!("cell {id}: {}", shorten(first.trim())));
            }
        }
    }
}

/// What a stand-in's summary starts its observation with: another node's host network standing
/// in for a client outside the cluster ([`crate::probes::outside`]).
const STAND_IN: &str = "not observed from outside the cluster";

/// The attempt a flow cell's summary names: `CLIENT → ADDRESS:PORT PROTOCOL`.
fn attempt_of(summary: &str) -> Option<&str> {
    static ATTEMPT: std::sync::LazyLock<Option<Regex>> =
        std::sync::LazyLock::new(|| Regex::new(r"\S+ → \S+:\d+ (?:tcp|udp|sctp)\b").ok());
    ATTEMPT.as_ref()?.find(summary).map(|m| m.as_str())
}

/// The stand-in cells among `cells` whose twin is among them too: a cell judged from another
/// node's host network because this machine does not reach the node is the same attempt (same
/// client, address and nodes) as a node → NodePort cell of the run, so the two are one
/// observation and weigh once (fidelity review 2026-12 §2).
fn twins(report: &RunReport, cells: &[usize]) -> BTreeSet<usize> {
    let attempt = |i: usize| {
        let c = &report.cells[i];
        let after = c.observed.summary.split_once(STAND_IN).map_or("", |(_, rest)| rest);
        attempt_of(after).map(|a| (a, observed_on(c)))
    };
    cells
        .iter()
        .copied()
        .filter(|&i| report.cells[i].observed.summary.contains(STAND_IN))
        .filter(|&i| {
            let Some((what, on)) = attempt(i) else { return false };
            cells.iter().any(|&j| {
                let twin = &report.cells[j];
                j != i
                    && !twin.observed.summary.contains(STAND_IN)
                    && attempt_of(&twin.observed.summary) == Some(what)
                    && observed_on(twin) == on
            })
        })
        .collect()
}

/// `cause` as a candidate on `node`: the cells it explains and contradicts, the evidence for
/// and against it, its confidence. None when it explains no failing cell or the node's own
/// state contradicts it; unconfirmed when a message it requires was not seen.
fn score<'a>(report: &RunReport, cause: &'a Compiled, node: &str, evidence: &[EvidenceItem]) -> Option<Candidate<'a>> {
    let c = &cause.cause;
    let CellFit {
        explained,
        contradicted,
        violated,
    } = cell_fit(report, cause, node);
    if explained.is_empty() {
        return None;
    }
    let doubles = twins(report, &explained);
    let texts: Vec<(&CellId, String)> = explained
        .iter()
        .map(|&i| (&report.cells[i].id, cell_text(&report.cells[i])))
        .collect();
    let mut weighing = Weighing::default();
    weighing.messages(cause, &texts, evidence)?;
    let vars = node_vars(&report.facts, node);
    weighing.refutations(c, &vars, evidence);
    weighing.confirmations(c, &vars, evidence);
    // Then what the first explained cells observed.
    weighing.cell_summaries(report, &texts);
    let Weighing {
        mut lines,
        specificity,
        confirmed,
        refuted,
        unconfirmed,
    } = weighing;
    lines.dedup();
    lines.truncate(EVIDENCE_LINES);
    let mut candidate = Candidate {
        cause,
        node: node.to_string(),
        explained,
        doubles,
        contradicted,
        violated,
        confidence: 0.0,
        refuted,
        confirmed,
        unconfirmed,
        specificity,
        evidence: lines,
    };
    candidate.confidence = candidate.confidence(&BTreeSet::new());
    Some(candidate)
}

impl Candidate<'_> {
    /// Its confidence with the failing cells `aside` set aside: the share of its predictions
    /// that held, counting neither for nor against it the cells in `aside` (those a cause
    /// already named on another node explains), halved by each node diagnostic that refuted
    /// it and raised by one that confirmed it.
    fn confidence(&self, aside: &BTreeSet<usize>) -> f64 {
        let held = self
            .explained
            .iter()
            .filter(|i| !aside.contains(i) && !self.doubles.contains(i))
            .count() as f64;
        if held == 0.0 {
            return 0.0;
        }
        let against = self.contradicted.len() + self.violated.iter().filter(|i| !aside.contains(i)).count();
        let signature = held / (held + against as f64);
        // An inference from symptoms alone stays below certainty; what the node itself shows
        // (--node-diagnostics) confirms or refutes it.
        let mut confidence = SYMPTOMS_WEIGHT * signature / 2f64.powi(self.refuted);
        if self.confirmed {
            confidence = (confidence + 1.0 - SYMPTOMS_WEIGHT).min(1.0);
        }
        confidence
    }

    /// What speaks against it with the cells `aside` set aside: the cells it predicts to fail
    /// that worked and the failing ones it says keep working.
    fn against(&self, aside: &BTreeSet<usize>) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .contradicted
            .iter()
            .chain(self.violated.iter().filter(|i| !aside.contains(i)))
            .copied()
            .collect();
        out.sort_unstable();
        out
    }
}

/// What a diagnostics command's evidence `output` says of a cause whose `confirms` pattern is
/// `pattern`: whether it confirms it (else it refutes it), with the matching line; None when it
/// says nothing — the command did not run to success ([`crate::probes::outcome::not_run`]), or
/// the pattern's placeholders have no value. A negated pattern confirms only non-empty output
/// of a successful command that does not match it.
pub fn confirmation(pattern: &str, vars: &BTreeMap<&str, String>, output: &str) -> Option<(bool, Option<String>)> {
    if crate::probes::outcome::not_run(output) {
        return None;
    }
    let (negated, re) = crate::catalogue::causes::confirm_pattern(pattern, vars)?.ok()?;
    let line = matching_line(&re, output);
    let confirms = if negated {
        !output.trim().is_empty() && line.is_none()
    } else {
        line.is_some()
    };
    Some((confirms, line))
}

/// The key under which [`node_vars`] keeps the cluster's platform (not a placeholder: commands
/// cannot name it; it scopes them).
pub const PLATFORM_VAR: &str = "platform";

/// The values of the catalogue's placeholders for `node` (see [`crate::catalogue::causes::PLACEHOLDERS`]):
/// what the run's facts know; and the platform under [`PLATFORM_VAR`].
pub fn node_vars<'a>(facts: &mixcheck_reports::Facts, node: &str) -> BTreeMap<&'a str, String> {
    let mut vars = BTreeMap::from([("node", node.to_string())]);
    if let Some(platform) = &facts.platform {
        vars.insert(PLATFORM_VAR, platform.value.clone());
    }
    if let Some(cidr) = facts.nodes.get(node).and_then(|n| n.pod_cidr.as_ref()) {
        vars.insert("podCidr", cidr.value.clone());
        if let Some((prefix, _)) = cidr.value.rsplit_once('.') {
            vars.insert("podCidrPrefix", format!("{prefix}."));
        }
    }
    if let Some(cidr) = &facts.cluster_cidr {
        vars.insert("clusterCidr", cidr.value.clone());
    }
    crate::triage::nodevars::extend(&mut vars, facts, node);
    vars
}

/// The nodes failing cells were observed on: the ones evidence is gathered about.
pub fn implicated_nodes(cells: &[Cell]) -> BTreeSet<String> {
    cells
        .iter()
        .filter(|c| failing(c.verdict))
        .flat_map(|c| observed_on(c).iter().map(|r| r.name.clone()))
        .collect()
}

/// Every cause that explains some failing cell on some node, scored.
fn candidates<'a>(report: &RunReport, catalogue: &'a Catalogue, evidence: &[NodeEvidence]) -> Vec<Candidate<'a>> {
    let mode = report.facts.network_mode.as_ref().map(|f| f.value.as_str());
    let platform = report.facts.platform.as_ref().map(|f| f.value.as_str());
    let proxy = report.facts.service_proxy.as_ref().map(|f| f.value.as_str());
    let empty = Vec::new();
    let mut out = Vec::new();
    for node in &implicated_nodes(&report.cells) {
        let items = evidence.iter().find(|e| &e.node == node).map_or(&empty, |e| &e.items);
        let os = os_of(report, node);
        for cause in &catalogue.causes {
            let c = &cause.cause;
            if !os_fits(c.os, os) || !c.possible(platform, proxy) {
                continue;
            }
            if let Some(mode) = mode
                && !c.network_modes.is_empty()
                && !c.network_modes.iter().any(|m| m == mode)
            {
                continue;
            }
            if let Some(candidate) = score(report, cause, node, items) {
                out.push(candidate);
            }
        }
    }
    out
}

/// The causes each node a likely cause is localised to is suspected of (every candidate that
/// explains a failing cell there, whatever its rank): what node diagnostics confirm or refute
/// there. Nodes no likely cause points at are left out.
pub fn suspects(
    report: &RunReport,
    catalogue: &Catalogue,
    evidence: &[NodeEvidence],
) -> BTreeMap<String, BTreeSet<String>> {
    let candidates = candidates(report, catalogue, evidence);
    let (picked, _) = pick(report, &candidates);
    let pointed: BTreeSet<&str> = picked.iter().map(|p| candidates[p.index].node.as_str()).collect();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for c in candidates
        .iter()
        .filter(|c| !c.unconfirmed && pointed.contains(c.node.as_str()))
    {
        out.entry(c.node.clone()).or_default().insert(c.cause.cause.id.clone());
    }
    out
}

/// A picked candidate: its index, the cells it explains (those no earlier pick explained), its
/// confidence and what speaks against it when it was picked.
struct Picked {
    index: usize,
    explains: Vec<usize>,
    confidence: f64,
    against: Vec<usize>,
}

/// Picks candidates greedily — the one that explains most of what is still unexplained,
/// weighted by confidence, first — so each failing cell is explained once: the picked
/// candidates with the cells each explains, and the failing cells left unexplained.
///
/// Once a cause is named on a node, the cells it explains are set aside for the candidates on
/// other nodes: a cross-node flow that a node without sandboxes breaks neither speaks against
/// a cause on its peer (a cell that cause says keeps working) nor for one (a cell it would
/// explain too). So a cause whose own cells are there on its node is named beside a stronger
/// cause on another node that also explains the cells they share, and a cause that fits
/// another node only through the cells of the named one is not.
fn pick(report: &RunReport, candidates: &[Candidate<'_>]) -> (Vec<Picked>, BTreeSet<usize>) {
    let mut remaining: BTreeSet<usize> = report
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| failing(c.verdict))
        .map(|(i, _)| i)
        .collect();
    let mut picked: Vec<Picked> = Vec::new();
    loop {
        let best = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.unconfirmed)
            .filter_map(|(k, c)| {
                let left = c
                    .explained
                    .iter()
                    .filter(|i| remaining.contains(i) && !c.doubles.contains(i))
                    .count();
                if left == 0 {
                    return None;
                }
                // A cause already named on another node sets its cells aside for the other
                // causes; the same cause on a second node qualifies on its own cells alone
                // (a peer in the faulted node's pool shares its cells, not its fault).
                let aside: BTreeSet<usize> = picked
                    .iter()
                    .filter(|p| {
                        let named = &candidates[p.index];
                        named.node != c.node && named.cause.cause.id != c.cause.cause.id
                    })
                    .flat_map(|p| candidates[p.index].explained.iter().copied())
                    .collect();
                let confidence = if aside.is_empty() {
                    c.confidence
                } else {
                    c.confidence(&aside)
                };
                (confidence >= MIN_CONFIDENCE).then_some((
                    k,
                    left as f64 * confidence,
                    c.specificity,
                    confidence,
                    aside,
                ))
            })
            // Most explained (weighted), then the more specific; ties keep catalogue order.
            .max_by(|a, b| a.1.total_cmp(&b.1).then(a.2.cmp(&b.2)).then(b.0.cmp(&a.0)));
        let Some((k, _, _, confidence, aside)) = best else {
            break;
        };
        let explains: Vec<usize> = candidates[k]
            .explained
            .iter()
            .copied()
            .filter(|i| remaining.contains(i))
            .collect();
        for i in &explains {
            remaining.remove(i);
        }
        picked.push(Picked {
            index: k,
            explains,
            confidence,
            against: candidates[k].against(&aside),
        });
    }
    (picked, remaining)
}

/// The diagnosis of `report` by `catalogue`, with the evidence gathered per node.
pub fn diagnose(
    report: &RunReport,
    catalogue: &Catalogue,
    evidence: Vec<NodeEvidence>,
    node_diagnostics: bool,
) -> Diagnosis {
    let candidates = candidates(report, catalogue, &evidence);
    let (mut picked, remaining) = pick(report, &candidates);
    let undecided = rivals::undecided(&candidates, &picked);
    let platform = report.facts.platform.as_ref().map(|f| f.value.as_str());
    // One entry per cause: the same cause on several nodes is one finding on those nodes.
    let mut order: Vec<String> = Vec::new();
    let mut by_id: BTreeMap<String, Found> = BTreeMap::new();
    let ids = |cells: &[usize]| -> Vec<CellId> { cells.iter().map(|&i| report.cells[i].id.clone()).collect() };
    for (k, p) in picked.iter_mut().enumerate() {
        // Causes that explain the same cells as well split what the observations support.
        if let Some(tied) = undecided.get(&k) {
            p.confidence /= (1 + tied.rivals.len()) as f64;
        }
    }
    for (k, p) in picked.into_iter().enumerate() {
        let cand = &candidates[p.index];
        let c = &cand.cause.cause;
        let confidence = (p.confidence * 100.0).round().clamp(0.0, 100.0) as u8;
        let entry = by_id.entry(c.id.clone()).or_insert_with(|| {
            order.push(c.id.clone());
            Found {
                id: c.id.clone(),
                title: c.title.clone(),
                rule_id: c.rule.clone(),
                confidence,
                nodes: Vec::new(),
                explains: Vec::new(),
                contradicted_by: Vec::new(),
                evidence: Vec::new(),
                remedy: {
                    let remedy = c.remedy_for(platform);
                    let vars = node_vars(&report.facts, &cand.node);
                    crate::catalogue::causes::fill(remedy, &vars).unwrap_or_else(|| remedy.to_string())
                },
                confirm: c
                    .confirm
                    .iter()
                    .filter(|x| os_fits(Some(x.os), os_of(report, &cand.node)))
                    .filter(|x| crate::catalogue::causes::in_scope(&x.platforms, platform))
                    .map(|x| {
                        let vars = node_vars(&report.facts, &cand.node);
                        let command =
                            crate::catalogue::causes::fill(&x.command, &vars).unwrap_or_else(|| x.command.clone());
                        if x.on_node {
                            command
                        } else {
                            format!("(by hand) {command}")
                        }
                    })
                    .collect(),
                sources: c.sources.clone(),
            }
        });
        entry.confidence = entry.confidence.min(confidence);
        entry.nodes.push(cand.node.clone());
        entry.explains.extend(ids(&p.explains));
        entry.contradicted_by.extend(ids(&p.against));
        if let Some(tied) = undecided.get(&k) {
            entry
                .evidence
                .push(format!("{}: {}", cand.node, tied.line(&candidates, p.explains.len())));
        }
        entry
            .evidence
            .extend(cand.evidence.iter().map(|l| format!("{}: {l}", cand.node)));
    }
    Diagnosis {
        causes: order.into_iter().filter_map(|id| by_id.remove(&id)).collect(),
        unexplained: remaining.into_iter().map(|i| report.cells[i].id.clone()).collect(),
        node_diagnostics,
        evidence,
    }
}

mod rivals;
pub use rivals::ties;

#[cfg(test)]
mod tests;
