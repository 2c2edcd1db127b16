//! Causes that tie: on one node, another cause explains every failing cell a named cause
//! explains, as well and as specifically. Nothing observed tells them apart, so the run probes
//! what would (`run::discriminate`) and the diagnosis states what the observations support: the
//! confidence split between them, the causes that remain and what tells them apart.

use std::collections::{BTreeMap, BTreeSet};

use mixcheck_reports::{NodeEvidence, RunReport};

use super::{Candidate, Picked, candidates, pick};
use crate::catalogue::causes::{Catalogue, Cause, CellMatch};

/// How close two confidences may be to count as the same.
const SAME: f64 = 0.005;

/// A named cause's rivals on its node.
pub(super) struct Tied {
    /// Indexes of the rival candidates.
    pub rivals: Vec<usize>,
    /// Indexes of the named candidate.
    pub named: usize,
}

impl Tied {
    /// `undecided: dns-unreachable explains the same 3 failing cells as well; what tells them
    /// apart: NET-POD-POD-IP-CROSS`.
    pub fn line(&self, candidates: &[Candidate<'_>], cells: usize) -> String {
        let named = &candidates[self.named].cause.cause;
        let ids: Vec<&str> = self
            .rivals
            .iter()
            .map(|&r| candidates[r].cause.cause.id.as_str())
            .collect();
        let apart: BTreeSet<String> = self
            .rivals
            .iter()
            .flat_map(|&r| telling_apart(named, &candidates[r].cause.cause))
            .collect();
        let apart = if apart.is_empty() {
            "nothing in the suites' cells (their node diagnostics may: --node-diagnostics)".to_string()
        } else {
            apart.into_iter().collect::<Vec<_>>().join(", ")
        };
        format!(
            "undecided: {} explain{} the same {cells} failing cell{} as well; what tells them apart: {apart}",
            ids.join(", "),
            if ids.len() == 1 { "s" } else { "" },
            if cells == 1 { "" } else { "s" },
        )
    }
}

/// Whether `rival` explains every cell of `named` as well and as specifically, on its node.
fn rivals_it(named: &Candidate<'_>, explains: &[usize], rival: &Candidate<'_>, confidence: f64) -> bool {
    rival.node == named.node
        && rival.cause.cause.id != named.cause.cause.id
        && explains.iter().all(|i| rival.explained.contains(i))
        && rival.confidence + SAME >= confidence
        && rival.specificity >= named.specificity
}

/// The picked causes (by their place in `picked`) that confirmed candidates rival.
pub(super) fn undecided(candidates: &[Candidate<'_>], picked: &[Picked]) -> BTreeMap<usize, Tied> {
    let chosen: BTreeSet<usize> = picked.iter().map(|p| p.index).collect();
    let mut out = BTreeMap::new();
    for (k, p) in picked.iter().enumerate() {
        let named = &candidates[p.index];
        let rivals: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(i, c)| !c.unconfirmed && !chosen.contains(i) && rivals_it(named, &p.explains, c, p.confidence))
            .map(|(i, _)| i)
            .collect();
        if !rivals.is_empty() {
            out.insert(k, Tied { rivals, named: p.index });
        }
    }
    out
}

/// The nodes where a named cause has a rival — confirmed, or one a required message not seen
/// yet keeps from being named — with the contenders' ids (the named cause's and its rivals'):
/// where an observation that tells them apart is worth making before ranking.
pub fn ties(
    report: &RunReport,
    catalogue: &Catalogue,
    evidence: &[NodeEvidence],
) -> BTreeMap<String, BTreeSet<String>> {
    let candidates = candidates(report, catalogue, evidence);
    let (picked, _) = pick(report, &candidates);
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &picked {
        let named = &candidates[p.index];
        for c in &candidates {
            // An unconfirmed rival's confidence counts its signature only.
            if rivals_it(named, &p.explains, c, p.confidence)
                || (c.unconfirmed && rivals_it(named, &p.explains, c, 0.0))
            {
                let contenders = out.entry(named.node.clone()).or_default();
                contenders.insert(named.cause.cause.id.clone());
                contenders.insert(c.cause.cause.id.clone());
            }
        }
    }
    out
}

/// The rules and checks one cause says fail and the other says keep working, and the rules whose
/// cells one of them needs a message from (a node's own reading): what tells them apart.
fn telling_apart(a: &Cause, b: &Cause) -> Vec<String> {
    let names = |sets: &[CellMatch]| -> BTreeSet<String> {
        sets.iter()
            .flat_map(|m| m.rules.iter().chain(&m.checks))
            .filter(|n| !n.contains('*'))
            .cloned()
            .collect()
    };
    let messages = |c: &Cause| -> BTreeSet<String> {
        c.fails
            .iter()
            .filter(|m| m.message.is_some() && !m.rules.iter().any(|r| r.contains('*')))
            .flat_map(|m| m.rules.iter().chain(&m.checks))
            .cloned()
            .collect()
    };
    let (a_fails, b_fails) = (names(&a.fails), names(&b.fails));
    let (a_keeps, b_keeps) = (names(&a.keeps), names(&b.keeps));
    let mut out: BTreeSet<String> = a_fails.intersection(&b_keeps).cloned().collect();
    out.extend(b_fails.intersection(&a_keeps).cloned());
    out.extend(messages(a).symmetric_difference(&messages(b)).cloned());
    out.into_iter().collect()
}
