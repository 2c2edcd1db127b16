//! Verdicts: what the documentation expects of a cell ([`Expected`]), what a probe observed
//! ([`Outcome`]), the one mapping from the pair to a [`Verdict`] ([`decide`]), the gate rule
//! ([`Verdict::fails_gate`]) and per-verdict tallies ([`Counts`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The judgement of one cell, as docs/design.md "Verdicts and the gate" defines it.
///
/// Serialised in kebab-case (`pass`, `known-limitation`, …); [`Verdict::as_str`] and `Display`
/// give the same name, [`Verdict::label`] the words a human report shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Documented to work, and works (or documented to be rejected, and is).
    Pass,
    /// Documented not to work, and fails the documented way.
    KnownLimitation,
    /// A documented limitation was not observed (informational: the docs may be stale).
    BetterThanDocumented,
    /// Works, but a documented recommendation is not followed.
    Warn,
    /// Documented to work, and does not (or fails in a way the documentation does not explain).
    Fail,
    /// The rule does not apply to this cluster's facts.
    NotApplicable,
    /// A fact the rule needs is unknown.
    Indeterminate,
    /// The harness could not run or judge the check.
    Error,
}

impl Verdict {
    /// Every verdict in summary order (see [`Verdict::rank`]).
    pub const ALL: [Verdict; 8] = [
        Verdict::Fail,
        Verdict::Error,
        Verdict::Warn,
        Verdict::KnownLimitation,
        Verdict::BetterThanDocumented,
        Verdict::Pass,
        Verdict::Indeterminate,
        Verdict::NotApplicable,
    ];

    /// Position in summary order, 0 first. Reports sort by it, "worst" first:
    ///
    /// 1. `fail`, `error` — fail the gate whatever the flags; the reason a reader opens the report.
    ///    `fail` precedes `error` because it is a finding about the cluster, `error` one about the
    ///    run.
    /// 2. `warn`, `known-limitation` — fail the gate with `--strict`. `warn` first: a
    ///    recommendation the user can follow, where a limitation is the platform's.
    /// 3. `better-than-documented` — passes, but worth a look (the documentation may be stale).
    /// 4. `pass`.
    /// 5. `indeterminate`, `not-applicable` — not judged. `indeterminate` first: supplying the
    ///    missing fact (e.g. `--network-mode`) turns it into a verdict; not-applicable needs nothing.
    pub fn rank(self) -> usize {
        match self {
            Verdict::Fail => 0,
            Verdict::Error => 1,
            Verdict::Warn => 2,
            Verdict::KnownLimitation => 3,
            Verdict::BetterThanDocumented => 4,
            Verdict::Pass => 5,
            Verdict::Indeterminate => 6,
            Verdict::NotApplicable => 7,
        }
    }

    /// Whether this verdict fails the release gate (docs/design.md "Verdicts and the gate"):
    /// `fail` and `error` always; `known-limitation` and `warn` only with `--strict`; the others
    /// never.
    pub fn fails_gate(self, strict: bool) -> bool {
        match self {
            Verdict::Fail | Verdict::Error => true,
            Verdict::KnownLimitation | Verdict::Warn => strict,
            Verdict::Pass | Verdict::BetterThanDocumented | Verdict::NotApplicable | Verdict::Indeterminate => false,
        }
    }

    /// The serialised name (`known-limitation`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::KnownLimitation => "known-limitation",
            Verdict::BetterThanDocumented => "better-than-documented",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
            Verdict::NotApplicable => "not-applicable",
            Verdict::Indeterminate => "indeterminate",
            Verdict::Error => "error",
        }
    }

    /// What the verdict means (docs/design.md's verdict table), in the words a human report shows.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "works as documented",
            Verdict::KnownLimitation => "documented limitation, observed as documented",
            Verdict::BetterThanDocumented => "documented as unsupported; observed working",
            Verdict::Warn => "works, recommendation not followed",
            Verdict::Fail => "broken",
            Verdict::NotApplicable => "not applicable",
            Verdict::Indeterminate => "indeterminate: a needed fact is unknown",
            Verdict::Error => "harness error: could not run the check",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The documented expectation of a cell for the cluster's facts (docs/design.md "Verdicts and the
/// gate"; a suite's `result`).
///
/// The catalogue's `CONDITIONAL` is not here: the runner resolves it from the facts into one of
/// these before probing, or judges the cell [`Outcome::Indeterminate`] when the fact is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expected {
    /// `WORKS`: documented as supported under these conditions.
    Works,
    /// `LIMITATION`: documented not to work; the probe is expected to fail the documented way.
    Limitation,
    /// `UNSUPPORTED-API`: the API server or kubelet is documented to reject the spec.
    UnsupportedApi,
    /// `KNOWN-OS-ISSUE`: a documented OS bug of a specific build/KB, with a documented workaround.
    KnownOsIssue,
    /// A documented recommendation (e.g. ≥ 2 GiB system-reserved memory on a Windows node).
    Recommendation,
    /// A documented support boundary (the version-skew policy, the supported Windows builds and
    /// runtimes of a release): outside it the cluster is unsupported.
    Requirement,
}

impl Expected {
    /// Every expectation, in declaration order.
    pub const ALL: [Expected; 6] = [
        Expected::Works,
        Expected::Limitation,
        Expected::UnsupportedApi,
        Expected::KnownOsIssue,
        Expected::Recommendation,
        Expected::Requirement,
    ];

    /// The serialised name (`unsupported-api`).
    pub fn as_str(self) -> &'static str {
        match self {
            Expected::Works => "works",
            Expected::Limitation => "limitation",
            Expected::UnsupportedApi => "unsupported-api",
            Expected::KnownOsIssue => "known-os-issue",
            Expected::Recommendation => "recommendation",
            Expected::Requirement => "requirement",
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a probe observed, classified by the check against its documented failure signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The probed operation succeeded (for a recommendation: the recommendation is followed).
    Passed,
    /// It failed, and the failure matches the documented one (e.g. ping gets no reply while TCP
    /// to the same address works).
    FailedAsDocumented,
    /// It failed in a way the documentation does not describe.
    FailedOtherwise,
    /// The API server or kubelet refused the spec with the documented reason.
    RejectedAsDocumented,
    /// The API server and kubelet accepted the spec.
    Accepted,
    /// The configuration deviates from a documented recommendation, or lies outside a documented
    /// support boundary (under [`Expected::Requirement`]).
    RecommendationNotFollowed,
    /// The rule does not apply to these facts.
    NotApplicable {
        /// Why, e.g. "no Windows node runs build 17763".
        reason: String,
    },
    /// A fact the rule needs is unknown.
    Indeterminate {
        /// The fact, e.g. "network mode".
        missing_fact: String,
    },
    /// The harness could not run the probe (API error, fixture never ready).
    HarnessError {
        /// What went wrong.
        message: String,
    },
}

impl Outcome {
    /// The text a [`crate::Cell`]'s `reason` carries for this outcome: the not-applicable reason,
    /// the missing fact, or the harness error; `None` for observations that were judged.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::NotApplicable { reason } => Some(reason),
            Outcome::Indeterminate { missing_fact } => Some(missing_fact),
            Outcome::HarnessError { message } => Some(message),
            Outcome::Passed
            | Outcome::FailedAsDocumented
            | Outcome::FailedOtherwise
            | Outcome::RejectedAsDocumented
            | Outcome::Accepted
            | Outcome::RecommendationNotFollowed => None,
        }
    }
}

/// The verdict for a documented expectation and an observed outcome (docs/design.md "Verdicts and
/// the gate").
///
/// One exhaustive match: a new [`Expected`] or [`Outcome`] does not compile until every pair is
/// decided here. Readings the verdict table of docs/design.md does not spell out:
///
/// - **An API step reads like any other step.** `Accepted` is the success of an API step and
///   `RejectedAsDocumented` its documented failure, so under `Works`, `Limitation` and
///   `KnownOsIssue` they judge like `Passed` and `FailedAsDocumented`; under `UnsupportedApi` a
///   documented failure (e.g. a kubelet admission rejection surfacing as a failed pod) is the
///   documented refusal (pass), and a success means the spec was accepted (fail).
/// - **A failure the documentation does not describe is broken**, also under `Limitation` and
///   `KnownOsIssue`. A limitation excuses only its documented failure: NET-ICMP-EXTERNAL
///   (suites/rules.yaml; network-flows' `icmp-to-outside`) expects ping to an external address
///   to get no reply while TCP and UDP work; if TCP fails too, calling that a known limitation
///   would hide a broken outbound NAT. Likewise under `UnsupportedApi` a failure other than the
///   documented refusal is not the documented behaviour.
/// - **A documented failure of a `Works` rule is still broken**: nothing excuses it; the
///   signature only serves the remedy.
/// - **`Works` + recommendation not followed is `Warn`**: docs/design.md defines warn as "works,
///   but a documented recommendation is not followed".
/// - **A requirement not met is `Fail`**: a documented support boundary (skew policy, supported
///   builds and runtimes) is not advice; a release gate stops on a cluster outside it.
/// - **Pairs a well-formed check cannot produce are `Error`**: a recommendation outcome on a
///   limitation or API rule, or a pass/fail/API outcome on a recommendation. They mean the check
///   is inconsistent with its expectation — the harness could not judge — and `Error` fails the
///   gate, so a suite bug is never reported as a pass.
/// - Not applicable, indeterminate and harness error judge alike under every expectation.
pub fn decide(expected: Expected, outcome: &Outcome) -> Verdict {
    use Expected as E;
    use Outcome as O;
    match (expected, outcome) {
        (_, O::NotApplicable { .. }) => Verdict::NotApplicable,
        (_, O::Indeterminate { .. }) => Verdict::Indeterminate,
        (_, O::HarnessError { .. }) => Verdict::Error,

        (E::Works, O::Passed | O::Accepted) => Verdict::Pass,
        (E::Works, O::FailedAsDocumented | O::FailedOtherwise | O::RejectedAsDocumented) => Verdict::Fail,
        (E::Works, O::RecommendationNotFollowed) => Verdict::Warn,

        (E::Limitation | E::KnownOsIssue, O::FailedAsDocumented | O::RejectedAsDocumented) => Verdict::KnownLimitation,
        (E::Limitation | E::KnownOsIssue, O::Passed | O::Accepted) => Verdict::BetterThanDocumented,
        (E::Limitation | E::KnownOsIssue, O::FailedOtherwise) => Verdict::Fail,
        (E::Limitation | E::KnownOsIssue, O::RecommendationNotFollowed) => Verdict::Error,

        (E::UnsupportedApi, O::RejectedAsDocumented | O::FailedAsDocumented) => Verdict::Pass,
        (E::UnsupportedApi, O::Accepted | O::Passed | O::FailedOtherwise) => Verdict::Fail,
        (E::UnsupportedApi, O::RecommendationNotFollowed) => Verdict::Error,

        (E::Recommendation, O::Passed) => Verdict::Pass,
        (E::Recommendation, O::RecommendationNotFollowed) => Verdict::Warn,
        (E::Recommendation, O::FailedAsDocumented | O::FailedOtherwise | O::RejectedAsDocumented | O::Accepted) => {
            Verdict::Error
        }

        (E::Requirement, O::Passed) => Verdict::Pass,
        (E::Requirement, O::RecommendationNotFollowed) => Verdict::Fail,
        (E::Requirement, O::FailedAsDocumented | O::FailedOtherwise | O::RejectedAsDocumented | O::Accepted) => {
            Verdict::Error
        }
    }
}

/// How many cells got each verdict.
///
/// Built with `collect()` from verdicts; iterated in summary order ([`Verdict::ALL`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts([usize; 8]);

impl Counts {
    /// The number of cells with `verdict`.
    pub fn get(&self, verdict: Verdict) -> usize {
        self.0[verdict.rank()]
    }

    /// Count one more `verdict`.
    pub fn add(&mut self, verdict: Verdict) {
        self.0[verdict.rank()] += 1;
    }

    /// All cells counted.
    pub fn total(&self) -> usize {
        self.0.iter().sum()
    }

    /// The first verdict in summary order with a non-zero count (`None` when empty).
    pub fn worst(&self) -> Option<Verdict> {
        self.iter().find(|&(_, n)| n > 0).map(|(v, _)| v)
    }

    /// Every verdict with its count (zeros included), in summary order.
    pub fn iter(&self) -> impl Iterator<Item = (Verdict, usize)> + '_ {
        Verdict::ALL.iter().map(|&v| (v, self.get(v)))
    }
}

impl FromIterator<Verdict> for Counts {
    fn from_iter<I: IntoIterator<Item = Verdict>>(iter: I) -> Self {
        let mut counts = Counts::default();
        for v in iter {
            counts.add(v);
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use Expected as E;
    use Outcome as O;
    use Verdict as V;

    #[rstest]
    #[case::works_passed(E::Works, O::Passed, V::Pass)]
    #[case::works_failed_as_documented(E::Works, O::FailedAsDocumented, V::Fail)]
    #[case::works_failed_otherwise(E::Works, O::FailedOtherwise, V::Fail)]
    #[case::works_rejected(E::Works, O::RejectedAsDocumented, V::Fail)]
    #[case::works_accepted(E::Works, O::Accepted, V::Pass)]
    #[case::works_recommendation_not_followed(E::Works, O::RecommendationNotFollowed, V::Warn)]
    #[case::limitation_passed(E::Limitation, O::Passed, V::BetterThanDocumented)]
    #[case::limitation_failed_as_documented(E::Limitation, O::FailedAsDocumented, V::KnownLimitation)]
    #[case::limitation_failed_otherwise(E::Limitation, O::FailedOtherwise, V::Fail)]
    #[case::limitation_rejected(E::Limitation, O::RejectedAsDocumented, V::KnownLimitation)]
    #[case::limitation_accepted(E::Limitation, O::Accepted, V::BetterThanDocumented)]
    #[case::limitation_recommendation_not_followed(E::Limitation, O::RecommendationNotFollowed, V::Error)]
    #[case::os_issue_passed(E::KnownOsIssue, O::Passed, V::BetterThanDocumented)]
    #[case::os_issue_failed_as_documented(E::KnownOsIssue, O::FailedAsDocumented, V::KnownLimitation)]
    #[case::os_issue_failed_otherwise(E::KnownOsIssue, O::FailedOtherwise, V::Fail)]
    #[case::os_issue_rejected(E::KnownOsIssue, O::RejectedAsDocumented, V::KnownLimitation)]
    #[case::os_issue_accepted(E::KnownOsIssue, O::Accepted, V::BetterThanDocumented)]
    #[case::os_issue_recommendation_not_followed(E::KnownOsIssue, O::RecommendationNotFollowed, V::Error)]
    #[case::unsupported_passed(E::UnsupportedApi, O::Passed, V::Fail)]
    #[case::unsupported_failed_as_documented(E::UnsupportedApi, O::FailedAsDocumented, V::Pass)]
    #[case::unsupported_failed_otherwise(E::UnsupportedApi, O::FailedOtherwise, V::Fail)]
    #[case::unsupported_rejected(E::UnsupportedApi, O::RejectedAsDocumented, V::Pass)]
    #[case::unsupported_accepted(E::UnsupportedApi, O::Accepted, V::Fail)]
    #[case::unsupported_recommendation_not_followed(E::UnsupportedApi, O::RecommendationNotFollowed, V::Error)]
    #[case::recommendation_followed(E::Recommendation, O::Passed, V::Pass)]
    #[case::recommendation_failed_as_documented(E::Recommendation, O::FailedAsDocumented, V::Error)]
    #[case::recommendation_failed_otherwise(E::Recommendation, O::FailedOtherwise, V::Error)]
    #[case::recommendation_rejected(E::Recommendation, O::RejectedAsDocumented, V::Error)]
    #[case::recommendation_accepted(E::Recommendation, O::Accepted, V::Error)]
    #[case::recommendation_not_followed(E::Recommendation, O::RecommendationNotFollowed, V::Warn)]
    #[case::requirement_met(E::Requirement, O::Passed, V::Pass)]
    #[case::requirement_not_met(E::Requirement, O::RecommendationNotFollowed, V::Fail)]
    #[case::requirement_failed(E::Requirement, O::FailedOtherwise, V::Error)]
    fn judged_outcomes(#[case] expected: Expected, #[case] outcome: Outcome, #[case] verdict: Verdict) {
        assert_eq!(decide(expected, &outcome), verdict);
        assert_eq!(outcome.reason(), None);
    }

    #[rstest]
    #[case::not_applicable(O::NotApplicable { reason: "no Windows node".into() }, V::NotApplicable, "no Windows node")]
    #[case::indeterminate(O::Indeterminate { missing_fact: "network mode".into() }, V::Indeterminate, "network mode")]
    #[case::harness_error(O::HarnessError { message: "pod never ready".into() }, V::Error, "pod never ready")]
    fn unjudged_outcomes_ignore_the_expectation(
        #[case] outcome: Outcome,
        #[case] verdict: Verdict,
        #[case] reason: &str,
        #[values(
            E::Works,
            E::Limitation,
            E::UnsupportedApi,
            E::KnownOsIssue,
            E::Recommendation,
            E::Requirement
        )]
        expected: Expected,
    ) {
        assert_eq!(decide(expected, &outcome), verdict);
        assert_eq!(outcome.reason(), Some(reason));
    }

    #[rstest]
    #[case(V::Pass, false, false)]
    #[case(V::KnownLimitation, false, true)]
    #[case(V::BetterThanDocumented, false, false)]
    #[case(V::Warn, false, true)]
    #[case(V::Fail, true, true)]
    #[case(V::NotApplicable, false, false)]
    #[case(V::Indeterminate, false, false)]
    #[case(V::Error, true, true)]
    fn gate(#[case] verdict: Verdict, #[case] lenient: bool, #[case] strict: bool) {
        assert_eq!(verdict.fails_gate(false), lenient, "{verdict} without --strict");
        assert_eq!(verdict.fails_gate(true), strict, "{verdict} with --strict");
    }

    #[rstest]
    #[case(V::Pass, "pass")]
    #[case(V::KnownLimitation, "known-limitation")]
    #[case(V::BetterThanDocumented, "better-than-documented")]
    #[case(V::Warn, "warn")]
    #[case(V::Fail, "fail")]
    #[case(V::NotApplicable, "not-applicable")]
    #[case(V::Indeterminate, "indeterminate")]
    #[case(V::Error, "error")]
    fn verdict_names(#[case] verdict: Verdict, #[case] name: &str) {
        assert_eq!(serde_json::to_value(verdict).ok(), Some(serde_json::json!(name)));
        assert_eq!(verdict.as_str(), name);
        assert_eq!(verdict.to_string(), name);
        assert_eq!(
            serde_json::from_value::<Verdict>(serde_json::json!(name)).ok(),
            Some(verdict)
        );
    }

    #[rstest]
    #[case(E::Works, "works")]
    #[case(E::Limitation, "limitation")]
    #[case(E::UnsupportedApi, "unsupported-api")]
    #[case(E::KnownOsIssue, "known-os-issue")]
    #[case(E::Recommendation, "recommendation")]
    #[case(E::Requirement, "requirement")]
    fn expected_names(#[case] expected: Expected, #[case] name: &str) {
        assert_eq!(serde_json::to_value(expected).ok(), Some(serde_json::json!(name)));
        assert_eq!(expected.as_str(), name);
    }

    #[test]
    fn summary_order_is_rank_order_and_complete() {
        let ranks: Vec<usize> = Verdict::ALL.iter().map(|v| v.rank()).collect();
        assert_eq!(ranks, (0..8).collect::<Vec<_>>());
        assert_eq!(Verdict::ALL[..2], [V::Fail, V::Error], "gate failures first");
        assert_eq!(Verdict::ALL[6..], [V::Indeterminate, V::NotApplicable], "unjudged last");
        // Every verdict that fails the strict gate sorts before every one that does not.
        for a in Verdict::ALL {
            for b in Verdict::ALL {
                if a.fails_gate(true) && !b.fails_gate(true) {
                    assert!(a.rank() < b.rank(), "{a} before {b}");
                }
            }
        }
    }

    #[test]
    fn labels_are_distinct() {
        let mut labels: Vec<&str> = Verdict::ALL.iter().map(|v| v.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), 8);
        assert_eq!(V::Pass.label(), "works as documented");
        assert_eq!(
            V::KnownLimitation.label(),
            "documented limitation, observed as documented"
        );
        assert_eq!(
            V::BetterThanDocumented.label(),
            "documented as unsupported; observed working"
        );
        assert_eq!(V::Fail.label(), "broken");
    }

    #[test]
    fn counts_tally_and_find_the_worst() {
        let counts: Counts = [V::Pass, V::Warn, V::Pass, V::NotApplicable].into_iter().collect();
        assert_eq!(counts.get(V::Pass), 2);
        assert_eq!(counts.get(V::Warn), 1);
        assert_eq!(counts.get(V::Fail), 0);
        assert_eq!(counts.total(), 4);
        assert_eq!(counts.worst(), Some(V::Warn));
        assert_eq!(Counts::default().worst(), None);
        let order: Vec<Verdict> = counts.iter().map(|(v, _)| v).collect();
        assert_eq!(order, Verdict::ALL);
    }
}
