//! The result model of a `mixcheck run`, and the reports rendered from it.
//!
//! Every report format — `results.json`, the plain CI summary, JUnit, the terminal table,
//! Markdown and HTML — is rendered from one [`RunReport`]. Renderers only read it: the runner
//! decides verdicts and sanitises evidence before anything reaches the model, so every format
//! shows the same judgement and none has to clean up after the cluster. When the run diagnosed
//! its failures, every human format shows the likely causes first, before the failures, and a
//! JUnit failure a cause explains names it; a run without a diagnosis (or with an empty one)
//! renders as if diagnoses did not exist.
//!
//! # The model
//!
//! ```text
//! RunReport                      one run; serialised, it is results.json (SCHEMA_VERSION)
//! ├─ tool_version, run_id, started_at / finished_at (RFC 3339), duration_ms, strict
//! ├─ target                      bundled cluster (profile) | kubeconfig (context, server)
//! ├─ facts: Facts                server version; per node OS, build, versions, taints, memory;
//! │                              network mode, DSR, kube-proxy, HostProcess, egress —
//! │                              each an optional Fact { value, source }
//! ├─ selection                   suites and check regexes
//! ├─ images?                     registry mirrors and pull secrets the images came through
//! ├─ aborted?                    reason + exit code of a run that stopped early
//! ├─ cells: Vec<Cell>            one per judged matrix point = one JUnit test case
//!    ├─ id: CellId               suite/RULE-ID[source→destination,locality,protocol,variant]
//!    ├─ suite, check, rule_id, title, category, sources, reproduce
//!    ├─ verdict: Verdict         decide(expected.kind, outcome)
//!    ├─ expected: Expectation    Expected + the documented one-liner
//!    ├─ coordinates, nodes       matrix position by pool (linux, windows-20348); nodes as landed
//!    ├─ observed                 summary, the nodes it was made on, Evidence (command, exit
//!    │                           code, Excerpts, pod events)
//!    └─ remedy, reason, flaky, duration_ms
//! └─ diagnosis?: Diagnosis       ranked likely causes of the failing cells (nodes, cells
//!                                explained, evidence, remedy, confirm commands), the
//!                                unexplained cells, the evidence gathered per node
//! ```
//!
//! # Rules the model keeps
//!
//! - **One mapping to verdicts.** [`verdict::decide`] is the only place an expectation and an
//!   observation become a [`Verdict`]; [`Verdict::fails_gate`] the only gate rule; both are
//!   exhaustive matches.
//! - **Stable identities.** A [`CellId`] is built from the suite, the rule id and the matrix
//!   coordinates, whose ends are node *pools* ([`Pool`]), never node names — so `mixcheck diff`
//!   can compare a run with a baseline taken before nodes were replaced.
//! - **Facts say where they came from.** A [`Fact`] carries its source; an unknown fact is
//!   absent, and a rule that needs it judges its cells indeterminate, naming it.
//! - **Container output is cleaned on the way in.** An [`Excerpt`] exists only through
//!   [`evidence::clean`] (valid UTF-8, no escape sequences or control bytes, bounded), so XML and
//!   terminal renderers can print it as is.
//! - **A report is always written**, atomically ([`results_json::write`]), also for a run that
//!   stopped before its first check ([`Aborted`]).
//!
//! # Example
//!
//! ```
//! use mixcheck_reports::{CellId, Coordinates, Expected, Os, Outcome, Pool, Verdict, decide};
//!
//! // Ping to the internet from a Windows pod on overlay: documented to get no reply.
//! let verdict = decide(Expected::Limitation, &Outcome::FailedAsDocumented);
//! assert_eq!(verdict, Verdict::KnownLimitation);
//! assert!(!verdict.fails_gate(false) && verdict.fails_gate(true));
//!
//! let at = Coordinates {
//!     source: Some(Pool::of(Os::Windows, Some(20348))),
//!     destination: Some(Pool::named("external")),
//!     protocol: Some("icmp".into()),
//!     ..Default::default()
//! };
//! let id = CellId::new("net", "NET-ICMP-EXTERNAL", &at)?;
//! assert_eq!(id.as_str(), "net/NET-ICMP-EXTERNAL[windows-20348→external,icmp]");
//! # Ok::<(), mixcheck_reports::CellIdError>(())
//! ```
//!
//! # Modules
//!
//! [`verdict`] (verdicts, expectations, outcomes, counts) · [`facts`] · [`cell`] · [`evidence`] ·
//! [`diagnosis`] (likely causes) · [`report`] · [`results_json`] (the file) · the renderers:
//! [`summary`] (plain text for CI logs), [`terminal`], [`markdown`], [`html`], [`junit`].

#![warn(missing_docs)]

pub mod cell;
pub mod coverage;
pub mod diagnosis;
pub mod diff;
pub mod evidence;
pub mod facts;
mod groups;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod report;
pub mod results_json;
pub mod summary;
mod tally;
pub mod terminal;
pub mod verdict;

#[cfg(test)]
mod snapshots;
#[cfg(test)]
mod testdata;

pub use cell::{Cell, CellId, CellIdError, Coordinates, Expectation, Locality, NodeRef, NodeRole, Observed, Pool};
pub use diagnosis::{Cause, Diagnosis, EvidenceItem, NodeEvidence};
pub use evidence::{Evidence, Excerpt, PodEvent};
pub use facts::{Fact, Facts, NodeFacts, Os, Taint};
pub use report::{Aborted, Images, RunReport, SCHEMA_VERSION, Selection, Target};
pub use verdict::{Counts, Expected, Outcome, Verdict, decide};
