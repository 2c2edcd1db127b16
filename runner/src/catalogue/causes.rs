//! The cause catalogue (`suites/causes.yaml`, embedded): one entry per troubleshooting item the
//! API can observe, each with the signature of failing and working cells it leaves on a node,
//! the messages that must be seen, the documented remedy and the commands that confirm it.
//! Parsing rejects unknown fields with file:line:column; [`Catalogue::validate`] rejects unknown
//! rule ids and check names, bad regular expressions and duplicate ids. The inference that uses
//! it is [`crate::triage::diagnose`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;
use serde::Deserialize;

use crate::catalogue::suite::{Os, SuiteError, Suites};

/// The catalogue built into the binary.
pub const EMBEDDED: &str = include_str!("../../../suites/causes.yaml");

/// The origin the embedded catalogue is named by in errors.
pub const EMBEDDED_ORIGIN: &str = "suites/causes.yaml (embedded)";

/// The role a node plays in a cell a signature matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The node the flow starts from, or the node a per-node check is about.
    Source,
    /// The node the flow goes to.
    Destination,
    /// Either end.
    #[default]
    Either,
}

/// Same node or another node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Locality {
    SameNode,
    OtherNode,
}

/// What a destination pool is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolKind {
    Linux,
    Windows,
    External,
    ClusterDns,
    SamePod,
}

impl PoolKind {
    /// Whether the pool named `pool` (`windows-20348`, `external`, …) is of this kind.
    pub fn is(self, pool: &str) -> bool {
        match self {
            PoolKind::Linux => pool == "linux",
            PoolKind::Windows => pool == "windows" || pool.starts_with("windows-"),
            PoolKind::External => pool == "external",
            PoolKind::ClusterDns => pool == "cluster-dns",
            PoolKind::SamePod => pool == "same-pod",
        }
    }
}

/// A set of cells relative to one node.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CellMatch {
    /// Rule ids; `*` is any, `NET-*` a prefix.
    #[serde(default)]
    pub rules: Vec<String>,
    /// Rule ids left out of `rules`.
    #[serde(default)]
    pub except_rules: Vec<String>,
    /// Check names (for rules several checks share, where only some are meant).
    #[serde(default)]
    pub checks: Vec<String>,
    /// The node's role in the cell.
    #[serde(default)]
    pub node: Role,
    #[serde(default)]
    pub locality: Option<Locality>,
    /// The destination pool's kind.
    #[serde(default)]
    pub to: Vec<PoolKind>,
    /// A regular expression the cell's own text (observation, reason, evidence) must match:
    /// for causes that break only the cells whose pods met a given refusal, whatever check they
    /// belong to.
    #[serde(default)]
    pub message: Option<String>,
    /// The network modes where these cells are part of the symptom (`l2bridge`, `overlay`, …);
    /// empty: any. A cause whose symptom differs by mode (a flow lost on overlay, delivered
    /// with the wrong source on l2bridge) names, per mode, the cells it breaks there.
    #[serde(default)]
    pub network_modes: Vec<String>,
    /// `message`, compiled when the catalogue is parsed.
    #[serde(skip)]
    pub message_re: Option<Regex>,
}

impl CellMatch {
    /// Whether a cell of this rule and check is one of the set (roles, locality and
    /// destination are the caller's to check).
    pub fn names(&self, rule: &str, check: &str) -> bool {
        let listed = self.rules.iter().any(|r| glob(r, rule)) || self.checks.iter().any(|c| c == check);
        listed && !self.except_rules.iter().any(|r| glob(r, rule))
    }
}

/// `text` with each `{name}` replaced by `vars[name]`; None when one is unknown.
pub fn fill(text: &str, vars: &BTreeMap<&str, String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let name = &rest[open + 1..open + close];
        let known = name.chars().all(|c| c.is_ascii_alphanumeric()) && !name.is_empty();
        out.push_str(&rest[..open]);
        if known {
            out.push_str(vars.get(name)?);
        } else {
            out.push_str(&rest[open..=open + close]);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The `{name}` placeholders of a text (names of letters and digits only).
fn placeholders_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let name = &rest[open + 1..open + close];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()) {
            out.push(name);
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// `*` matches anything, `NET-*` anything that starts with `NET-`, other patterns themselves.
fn glob(pattern: &str, id: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => id.starts_with(prefix),
        None => pattern == id,
    }
}

/// A command that confirms a cause on a node.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Confirm {
    pub os: Os,
    pub command: String,
    /// Output that confirms the cause (a regular expression; a leading `!` confirms when
    /// non-empty output does not match it); without it the output is evidence only. Other
    /// output refutes the cause.
    #[serde(default)]
    pub confirms: Option<String>,
    /// Whether the command runs on the node itself (mixcheck runs it with
    /// `--node-diagnostics`); false for commands of the VM's host or the user's own machine.
    #[serde(default = "yes")]
    pub on_node: bool,
    /// The platforms where the command applies (`kubeadm`, `aks`, `eks`, `gke`); empty: any.
    #[serde(default)]
    pub platforms: Vec<String>,
}

/// The platforms a cause or command may be scoped to, as the `platform` fact names them.
pub const PLATFORMS: &[&str] = &["kubeadm", "aks", "eks", "gke"];

/// The managed platforms: their node set-up, CNI and agents belong to the provider.
pub const MANAGED: &[&str] = &["aks", "eks", "gke"];

/// Whether a scope (empty: any) admits `platform`; an unknown platform is admitted everywhere.
pub fn in_scope(scope: &[String], platform: Option<&str>) -> bool {
    match platform {
        Some(p) if PLATFORMS.contains(&p) => scope.is_empty() || scope.iter().any(|s| s == p),
        _ => true,
    }
}

fn yes() -> bool {
    true
}

/// The placeholders a command or `confirms` pattern may hold, filled per node: its name, its
/// pod CIDR (`10.244.3.0/24`), that CIDR's prefix (`10.244.3.`), the cluster's pod CIDR, and
/// what [`crate::triage::nodevars`] decides: flannel's CNI configuration and kube-proxy's source
/// VIP file, flannel's subnet file where flannel runs, and the computer name where node names
/// are computer names.
pub const PLACEHOLDERS: &[&str] = &[
    "node",
    "podCidr",
    "podCidrPrefix",
    "clusterCidr",
    "cniConfig",
    "sourceVip",
    "flannelSubnetEnv",
    "computerName",
    "kubeletService",
    "kubeletLog",
    "kubeProxyService",
    "kubeProxyLog",
];

/// A `confirms` pattern with its placeholders filled (values regex-escaped), compiled; and
/// whether it is negated. None when a placeholder has no value.
pub fn confirm_pattern(
    pattern: &str,
    vars: &std::collections::BTreeMap<&str, String>,
) -> Option<Result<(bool, Regex), regex::Error>> {
    let (negated, body) = match pattern.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let escaped: std::collections::BTreeMap<&str, String> = vars.iter().map(|(k, v)| (*k, regex::escape(v))).collect();
    let filled = fill(body, &escaped)?;
    Some(
        regex::RegexBuilder::new(&filled)
            .case_insensitive(true)
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map(|re| (negated, re)),
    )
}

/// One entry of the catalogue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cause {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub rule: Option<String>,
    /// The OS of the nodes that can have it; absent: any.
    #[serde(default)]
    pub os: Option<Os>,
    /// The network modes where it occurs (`l2bridge`, `overlay`, …); empty: any.
    #[serde(default)]
    pub network_modes: Vec<String>,
    /// The platforms where it can occur (`kubeadm`, `aks`, `eks`, `gke`); empty: any. A cluster
    /// whose platform is unknown may have any cause.
    #[serde(default)]
    pub platforms: Vec<String>,
    /// What must program Services for the cause to exist (`kube-proxy`; `anetd` is GKE
    /// Dataplane V2, which runs no kube-proxy); empty: any.
    #[serde(default)]
    pub service_proxies: Vec<String>,
    pub fails: Vec<CellMatch>,
    /// Cells the cause breaks for a share of their attempts or for some of the node's pods only
    /// (a stale backend one connection in N picks, a reused address one pod has): it explains
    /// them when they fail, and their working does not speak against it.
    #[serde(default)]
    pub may_fail: Vec<CellMatch>,
    #[serde(default)]
    pub keeps: Vec<CellMatch>,
    /// Each must match the text of an explained cell or of the node's evidence.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Each must match the node's own state as the API shows it — its conditions and taints —
    /// never a cell's or a pod's text: a cause that needs the node to be down (`kubelet-stopped`)
    /// is no candidate while the node reports Ready, however many of its pods fail.
    #[serde(default)]
    pub node_shows: Vec<String>,
    /// Each that matches makes the cause more specific.
    #[serde(default)]
    pub supports: Vec<String>,
    /// Each that matches the evidence gathered about the node (never a cell's text, which may
    /// be another node's) speaks against the cause there, as a refuting node diagnostic does: a
    /// node whose kube-proxy shows `--hostname-override` set to its name does not run without
    /// it. May hold the placeholders of `confirm` (their values matched literally).
    #[serde(default)]
    pub refuted_by: Vec<String>,
    pub remedy: String,
    /// The remedy on a platform where `remedy` is not the user's to act on, by platform
    /// (`aks`, `eks`, `gke`, `kubeadm`) or `managed` (any of AKS, EKS, GKE). May hold the
    /// placeholders of `confirm`.
    #[serde(default)]
    pub remedies: BTreeMap<String, String>,
    #[serde(default)]
    pub confirm: Vec<Confirm>,
    #[serde(default)]
    pub sources: Vec<String>,
}

impl Cause {
    /// The remedy for a cluster of `platform`: its own, else the managed platforms' where it is
    /// one, else the general one.
    pub fn remedy_for(&self, platform: Option<&str>) -> &str {
        let own = platform.and_then(|p| self.remedies.get(p));
        let managed = platform
            .filter(|p| MANAGED.contains(p))
            .and_then(|_| self.remedies.get("managed"));
        own.or(managed).unwrap_or(&self.remedy).trim()
    }

    /// Whether the cause can occur on a cluster of `platform` whose Services `service_proxy`
    /// programs (None: unknown, which admits it).
    pub fn possible(&self, platform: Option<&str>, service_proxy: Option<&str>) -> bool {
        let proxy = service_proxy
            .is_none_or(|p| self.service_proxies.is_empty() || self.service_proxies.iter().any(|s| s == p));
        in_scope(&self.platforms, platform) && proxy
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: String,
    kind: String,
    causes: Vec<Cause>,
    #[serde(default)]
    node_symptoms: Vec<NodeSymptomRow>,
}

/// What a cell shows when nothing ran for a reason of its node rather than of its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeSymptom {
    /// The node is not Ready: the cell was not probed.
    NotReady,
    /// A pod of the cell never got a sandbox (FailedCreatePodSandBox) — with `message`, the
    /// node-wide reason its event names.
    Sandbox,
}

/// One row of `nodeSymptoms`: a symptom (and the message that tells it apart) and the causes
/// whose remedies replace the check's on such a cell.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NodeSymptomRow {
    symptom: NodeSymptom,
    #[serde(default)]
    message: Option<String>,
    causes: Vec<String>,
}

/// A node symptom row, compiled: the remedy it gives.
#[derive(Debug, Clone)]
struct NodeRemedy {
    symptom: NodeSymptom,
    message: Option<Regex>,
    /// The indexes of the row's causes in the catalogue.
    causes: Vec<usize>,
}

/// A cause with its regular expressions compiled.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub cause: Cause,
    pub requires: Vec<Regex>,
    pub node_shows: Vec<Regex>,
    pub supports: Vec<Regex>,
}

/// The catalogue, validated and compiled.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub causes: Vec<Compiled>,
    node_remedies: Vec<NodeRemedy>,
}

/// The kind every catalogue declares.
pub const KIND: &str = "CauseCatalogue";

/// Builds a case-insensitive regular expression of the catalogue, naming the cause on error.
fn compile(origin: &str, id: &str, pattern: &str) -> Result<Regex, SuiteError> {
    regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .multi_line(true)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| SuiteError::Invalid {
            path: origin.to_string(),
            message: format!("cause {id}: bad regular expression {pattern:?}: {e}"),
        })
}

/// What a catalogue's entries are checked against while it is parsed: where it came from (for
/// errors), the rule ids and the suites' check names.
struct Checker<'a> {
    origin: &'a str,
    rules: &'a crate::catalogue::rules::Catalogue,
    checks: BTreeSet<&'a str>,
}

impl Checker<'_> {
    /// The catalogue is invalid for `message`.
    fn invalid(&self, message: String) -> SuiteError {
        SuiteError::Invalid {
            path: self.origin.to_string(),
            message,
        }
    }

    /// The file declares this schema's apiVersion and [`KIND`].
    fn header(&self, file: &File) -> Result<(), SuiteError> {
        if file.api_version != crate::catalogue::suite::API_VERSION {
            return Err(self.invalid(format!(
                "apiVersion {:?}: expected {}",
                file.api_version,
                crate::catalogue::suite::API_VERSION
            )));
        }
        if file.kind != KIND {
            return Err(self.invalid(format!("kind {:?}: expected {KIND}", file.kind)));
        }
        Ok(())
    }

    /// One cause validated and its patterns compiled.
    fn cause(&self, mut cause: Cause) -> Result<Compiled, SuiteError> {
        let id = cause.id.clone();
        self.identity(&cause)?;
        for m in cause
            .fails
            .iter_mut()
            .chain(cause.may_fail.iter_mut())
            .chain(cause.keeps.iter_mut())
        {
            if let Some(pattern) = &m.message {
                m.message_re = Some(compile(self.origin, &id, pattern)?);
            }
        }
        self.cell_sets(&cause)?;
        self.network_modes(&cause)?;
        self.platforms(&cause)?;
        let patterns = |list: &[String]| -> Result<Vec<Regex>, SuiteError> {
            list.iter().map(|p| compile(self.origin, &id, p)).collect()
        };
        let requires = patterns(&cause.requires)?;
        let supports = patterns(&cause.supports)?;
        let node_shows = patterns(&cause.node_shows)?;
        // Placeholders must be known; patterns must compile once filled.
        let sample: BTreeMap<&str, String> = PLACEHOLDERS.iter().map(|p| (*p, "x".to_string())).collect();
        self.confirms(&cause, &sample)?;
        self.refuted_by(&cause, &sample)?;
        Ok(Compiled {
            cause,
            requires,
            node_shows,
            supports,
        })
    }

    /// The cause's id is kebab-case, it has failing cells, and its rule (if any) is known.
    fn identity(&self, cause: &Cause) -> Result<(), SuiteError> {
        let id = &cause.id;
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(self.invalid(format!("cause id {id:?} is not kebab-case")));
        }
        if cause.fails.is_empty() {
            return Err(self.invalid(format!("cause {id} has no failing cells (fails)")));
        }
        if let Some(rule) = &cause.rule
            && !self.rules.contains(rule)
        {
            return Err(self.invalid(format!("cause {id}: unknown rule id {rule}")));
        }
        Ok(())
    }

    /// Each cell set (failing or working) names rules or checks, and every one it names exists
    /// (a rule pattern ending in `*` excepted).
    fn cell_sets(&self, cause: &Cause) -> Result<(), SuiteError> {
        let id = &cause.id;
        for m in cause.fails.iter().chain(&cause.may_fail).chain(&cause.keeps) {
            if m.rules.is_empty() && m.checks.is_empty() {
                return Err(self.invalid(format!("cause {id}: a cell set names no rules and no checks")));
            }
            for r in m.rules.iter().chain(&m.except_rules) {
                if !r.ends_with('*') && !self.rules.contains(r) {
                    return Err(self.invalid(format!("cause {id}: unknown rule id {r}")));
                }
            }
            for c in &m.checks {
                if !self.checks.contains(c.as_str()) {
                    return Err(self.invalid(format!("cause {id}: no suite has a check named {c}")));
                }
            }
        }
        Ok(())
    }

    /// The network modes the cause and its cell sets name are known.
    fn network_modes(&self, cause: &Cause) -> Result<(), SuiteError> {
        let cell_modes = cause
            .fails
            .iter()
            .chain(&cause.may_fail)
            .chain(&cause.keeps)
            .flat_map(|m| &m.network_modes);
        for mode in cause.network_modes.iter().chain(cell_modes) {
            if !["l2bridge", "overlay", "l2tunnel", "transparent"].contains(&mode.as_str()) {
                return Err(self.invalid(format!("cause {}: unknown network mode {mode}", cause.id)));
            }
        }
        Ok(())
    }

    /// The platforms the cause, its remedies and its commands name are known; the service
    /// proxies are `kube-proxy` or `anetd`; the remedies' placeholders are known.
    fn platforms(&self, cause: &Cause) -> Result<(), SuiteError> {
        let id = &cause.id;
        let named = cause
            .platforms
            .iter()
            .chain(cause.confirm.iter().flat_map(|c| &c.platforms))
            .map(String::as_str)
            .chain(cause.remedies.keys().map(String::as_str).filter(|k| *k != "managed"));
        for p in named {
            if !PLATFORMS.contains(&p) {
                return Err(self.invalid(format!(
                    "cause {id}: unknown platform {p} (known: {}; remedies also take managed)",
                    PLATFORMS.join(", ")
                )));
            }
        }
        if let Some(p) = cause
            .service_proxies
            .iter()
            .find(|p| !["kube-proxy", "anetd"].contains(&p.as_str()))
        {
            return Err(self.invalid(format!(
                "cause {id}: unknown service proxy {p} (known: kube-proxy, anetd)"
            )));
        }
        for text in std::iter::once(&cause.remedy).chain(cause.remedies.values()) {
            if let Some(name) = placeholders_in(text).into_iter().find(|n| !PLACEHOLDERS.contains(n)) {
                return Err(self.invalid(format!(
                    "cause {id}: unknown placeholder {{{name}}} in a remedy (known: {})",
                    PLACEHOLDERS.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// The confirming commands use known placeholders, and their `confirms` patterns compile
    /// once filled with `sample`.
    fn confirms(&self, cause: &Cause, sample: &BTreeMap<&str, String>) -> Result<(), SuiteError> {
        let id = &cause.id;
        for c in &cause.confirm {
            for text in std::iter::once(&c.command).chain(c.confirms.as_ref()) {
                for name in placeholders_in(text) {
                    if !PLACEHOLDERS.contains(&name) {
                        return Err(self.invalid(format!(
                            "cause {id}: unknown placeholder {{{name}}} (known: {})",
                            PLACEHOLDERS.join(", ")
                        )));
                    }
                }
            }
            if let Some(Some(Err(e))) = c.confirms.as_deref().map(|p| confirm_pattern(p, sample)) {
                return Err(self.invalid(format!("cause {id}: bad regular expression in confirms: {e}")));
            }
        }
        Ok(())
    }

    /// The `refutedBy` patterns use known placeholders, are not negated, and compile once
    /// filled with `sample`.
    fn refuted_by(&self, cause: &Cause, sample: &BTreeMap<&str, String>) -> Result<(), SuiteError> {
        let id = &cause.id;
        for pattern in &cause.refuted_by {
            if let Some(name) = placeholders_in(pattern).into_iter().find(|n| !PLACEHOLDERS.contains(n)) {
                return Err(self.invalid(format!(
                    "cause {id}: unknown placeholder {{{name}}} in refutedBy (known: {})",
                    PLACEHOLDERS.join(", ")
                )));
            }
            if pattern.starts_with('!') {
                return Err(self.invalid(format!("cause {id}: refutedBy patterns cannot be negated: {pattern}")));
            }
            if let Some(Err(e)) = confirm_pattern(pattern, sample) {
                return Err(self.invalid(format!("cause {id}: bad regular expression in refutedBy: {e}")));
            }
        }
        Ok(())
    }

    /// The node symptoms' remedies: each row's causes' remedies joined, its message compiled.
    fn node_remedies(&self, rows: Vec<NodeSymptomRow>, causes: &[Compiled]) -> Result<Vec<NodeRemedy>, SuiteError> {
        let mut node_remedies = Vec::new();
        for row in rows {
            let what = format!("node symptom {:?}", row.symptom);
            let mut found = Vec::new();
            for id in &row.causes {
                let index = causes
                    .iter()
                    .position(|c: &Compiled| &c.cause.id == id)
                    .ok_or_else(|| self.invalid(format!("{what}: no cause {id}")))?;
                found.push(index);
            }
            if found.is_empty() {
                return Err(self.invalid(format!("{what} names no cause")));
            }
            let message = row
                .message
                .as_deref()
                .map(|m| compile(self.origin, &what, m))
                .transpose()?;
            node_remedies.push(NodeRemedy {
                symptom: row.symptom,
                message,
                causes: found,
            });
        }
        Ok(node_remedies)
    }
}

impl Catalogue {
    /// Parses a catalogue; `origin` names it in errors. Checks names against `suites` (rule ids
    /// through `rules`).
    pub fn parse(
        text: &str,
        origin: &str,
        rules: &crate::catalogue::rules::Catalogue,
        suites: &Suites,
    ) -> Result<Self, SuiteError> {
        let file: File = crate::catalogue::suite::from_yaml(text, origin)?;
        let checker = Checker {
            origin,
            rules,
            checks: suites.checks().map(|(_, c)| c.name.as_str()).collect(),
        };
        checker.header(&file)?;
        let mut ids = BTreeSet::new();
        let mut causes = Vec::new();
        for cause in file.causes {
            if !ids.insert(cause.id.clone()) {
                return Err(checker.invalid(format!("cause {} is listed twice", cause.id)));
            }
            causes.push(checker.cause(cause)?);
        }
        let node_remedies = checker.node_remedies(file.node_symptoms, &causes)?;
        Ok(Catalogue { causes, node_remedies })
    }

    /// A node symptom row's remedy on `platform`: its causes' that can occur there, joined.
    fn row_remedy(&self, row: &NodeRemedy, platform: Option<&str>) -> Option<String> {
        let texts: Vec<&str> = row
            .causes
            .iter()
            .filter_map(|&i| self.causes.get(i))
            .filter(|c| in_scope(&c.cause.platforms, platform))
            .map(|c| c.cause.remedy_for(platform))
            .collect();
        (!texts.is_empty()).then(|| texts.join(" "))
    }

    /// The remedy for a cell on a node that is not Ready on a cluster of `platform`: its
    /// causes' (kubelet-stopped).
    pub fn not_ready_remedy(&self, platform: Option<&str>) -> Option<String> {
        self.node_remedies
            .iter()
            .find(|r| r.symptom == NodeSymptom::NotReady)
            .and_then(|r| self.row_remedy(r, platform))
    }

    /// The remedy for an observation that shows a pod never got a sandbox
    /// (FailedCreatePodSandBox) for a node-wide cause its message names, on a cluster of
    /// `platform`; None for any other observation (a sandbox can also fail for the pod's own
    /// spec, e.g. an unknown runAsUserName), or when the check's own remedy already deals with
    /// sandbox failures.
    pub fn sandbox_remedy(&self, observed: &str, own: Option<&str>, platform: Option<&str>) -> Option<String> {
        if !observed.contains("FailedCreatePodSandBox") || own.is_some_and(|r| r.contains("FailedCreatePodSandBox")) {
            return None;
        }
        self.node_remedies
            .iter()
            .filter(|r| r.symptom == NodeSymptom::Sandbox)
            .filter(|r| r.message.as_ref().is_none_or(|m| m.is_match(observed)))
            .find_map(|r| self.row_remedy(r, platform))
    }

    /// The embedded catalogue, or the file given instead of it.
    pub fn load(
        file: Option<&Path>,
        rules: &crate::catalogue::rules::Catalogue,
        suites: &Suites,
    ) -> Result<Self, SuiteError> {
        match file {
            None => Self::parse(EMBEDDED, EMBEDDED_ORIGIN, rules, suites),
            Some(path) => {
                let shown = path.display().to_string();
                let text = std::fs::read_to_string(path).map_err(|cause| SuiteError::Read {
                    path: shown.clone(),
                    cause,
                })?;
                Self::parse(&text, &shown, rules, suites)
            }
        }
    }

    /// The cause with this id.
    #[cfg(test)]
    pub fn get(&self, id: &str) -> Option<&Compiled> {
        self.causes.iter().find(|c| c.cause.id == id)
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn context() -> (crate::catalogue::rules::Catalogue, Suites) {
        let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
        let suites = Suites::load(None, &rules).expect("suites");
        (rules, suites)
    }

    #[test]
    fn the_embedded_catalogue_is_valid_and_covers_every_documented_item() {
        let (rules, suites) = context();
        let c = Catalogue::parse(EMBEDDED, EMBEDDED_ORIGIN, &rules, &suites).expect("valid");
        // The documented troubleshooting items (sources in docs/sources.md).
        for id in [
            "kubelet-stopped",
            "mac-spoofing-disabled",
            "exceptionlist-missing-cluster",
            "exceptionlist-covers-outside",
            "kube-proxy-no-hostname-override",
            "kube-proxy-stopped",
            "pause-image-wrong-build",
            "flannel-subnet-env-missing",
            "flanneld-waiting",
            "hns-network-missing",
            "flannel-rejoin-stale-sourcevip",
            "vxlan-params-mismatch",
            "dns-unreachable",
            "port-exhaustion",
            "image-build-mismatch",
            "hyperv-isolation-unavailable",
            "hostprocess-logon-failure",
            "run-as-username-invalid",
            "hns-lb-policy-missing",
            "hns-stale-backend",
            "hns-stale-remote-endpoint",
            "hns-leaked-policies",
        ] {
            let cause = c.get(id).unwrap_or_else(|| panic!("{id} is in the catalogue"));
            assert!(
                !cause.cause.remedy.is_empty() && !cause.cause.sources.is_empty(),
                "{id}"
            );
        }
    }

    fn minimal(body: &str) -> String {
        format!(
            "apiVersion: mixcheck/v1\nkind: CauseCatalogue\ncauses:\n  - id: x\n    title: t\n    remedy: r\n{body}"
        )
    }

    #[rstest]
    #[case::unknown_rule("    fails: [{rules: [NET-TELEPORT]}]\n", "unknown rule id NET-TELEPORT")]
    #[case::unknown_check("    fails: [{checks: [teleport]}]\n", "no suite has a check named teleport")]
    #[case::empty_set("    fails: [{node: source}]\n", "names no rules and no checks")]
    #[case::no_fails("    fails: []\n", "has no failing cells")]
    #[case::bad_regex("    fails: [{rules: ['*']}]\n    requires: ['(']\n", "bad regular expression")]
    #[case::bad_mode(
        "    fails: [{rules: ['*']}]\n    networkModes: [teleport]\n",
        "unknown network mode"
    )]
    fn semantic_errors_name_the_cause(#[case] body: &str, #[case] needle: &str) {
        let (rules, suites) = context();
        let err = Catalogue::parse(&minimal(body), "causes.yaml", &rules, &suites).expect_err("invalid");
        let text = err.to_string();
        assert!(text.starts_with("causes.yaml: "), "{text}");
        assert!(text.contains(needle), "{text}");
    }

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let (rules, suites) = context();
        let err = Catalogue::parse(
            &minimal("    fails: [{rules: ['*']}]\n    colour: red\n"),
            "causes.yaml",
            &rules,
            &suites,
        )
        .expect_err("unknown field");
        let text = err.to_string();
        assert!(text.starts_with("causes.yaml:8:"), "{text}");
        assert!(text.contains("colour"), "{text}");
    }

    #[rstest]
    #[case("*", "NET-POD-EXT-IP", true)]
    #[case("NET-*", "NET-POD-EXT-IP", true)]
    #[case("NET-*", "DNS-FQDN", false)]
    #[case("DNS-FQDN", "DNS-FQDN", true)]
    #[case("DNS-FQDN", "DNS-FQDN-X", false)]
    fn rule_patterns(#[case] pattern: &str, #[case] id: &str, #[case] matches: bool) {
        assert_eq!(glob(pattern, id), matches);
    }

    #[rstest]
    #[case(PoolKind::Windows, "windows-20348", true)]
    #[case(PoolKind::Windows, "windows", true)]
    #[case(PoolKind::Windows, "linux", false)]
    #[case(PoolKind::External, "external", true)]
    #[case(PoolKind::ClusterDns, "cluster-dns", true)]
    fn pool_kinds(#[case] kind: PoolKind, #[case] pool: &str, #[case] is: bool) {
        assert_eq!(kind.is(pool), is);
    }

    fn embedded() -> Catalogue {
        let rules = crate::catalogue::rules::Catalogue::embedded().expect("rules");
        let suites = Suites::load(None, &rules).expect("suites");
        Catalogue::load(None, &rules, &suites).expect("causes")
    }

    /// A node that is not Ready gets the stopped kubelet's remedy, in the platform's terms: the
    /// start scripts on kubeadm (or an unknown platform), the node's replacement on a managed one.
    #[rstest]
    #[case::kubeadm(Some("kubeadm"), "kubelet and kube-proxy processes run on the node")]
    #[case::unknown(None, "kubelet and kube-proxy processes run on the node")]
    #[case::aks(Some("aks"), "az vmss reimage")]
    #[case::eks(Some("eks"), "support case")]
    #[case::gke(Some("gke"), "node pool")]
    fn a_node_that_is_not_ready_gets_the_remedy_of_a_stopped_kubelet(
        #[case] platform: Option<&str>,
        #[case] says: &str,
    ) {
        let remedy = embedded().not_ready_remedy(platform).expect("a remedy");
        assert!(remedy.contains(says), "{remedy}");
    }

    /// On a managed platform no remedy a cause can give there asks for what the provider owns:
    /// a Hyper-V setting, MAC spoofing, a cni.conf edit, a start script (real-clusters.md §7,
    /// "The diagnosis ignores the platform"); and the node-symptom remedies follow.
    #[rstest]
    fn managed_remedies_ask_nothing_the_provider_owns(#[values("aks", "eks", "gke")] platform: &str) {
        let forbidden = regex::RegexBuilder::new(
            r"mac address spoofing|macaddressspoofing|set-vmnetworkadapter|promiscuous|cni\.conf|start[ -]?scripts?|start\.ps1|hyper-v role|\bnssm\b|sc\.exe",
        )
        .case_insensitive(true)
        .build()
        .expect("a pattern");
        let c = embedded();
        let mut seen = 0;
        for cause in c
            .causes
            .iter()
            .map(|c| &c.cause)
            .filter(|c| c.possible(Some(platform), None))
        {
            let remedy = cause.remedy_for(Some(platform));
            assert!(!forbidden.is_match(remedy), "{} on {platform}: {remedy}", cause.id);
            seen += 1;
        }
        assert!(seen > 10, "{seen} causes possible on {platform}");
        for r in [c.not_ready_remedy(Some(platform))].into_iter().flatten() {
            assert!(!forbidden.is_match(&r), "{r}");
        }
        assert!(
            !c.causes
                .iter()
                .any(|x| x.cause.id == "mac-spoofing-disabled" && x.cause.possible(Some(platform), None))
        );
    }

    /// Causes scoped to a platform or a service proxy are possible only there; an unknown
    /// platform or proxy admits them.
    #[rstest]
    #[case::flannel_on_kubeadm("flanneld-waiting", Some("kubeadm"), None, true)]
    #[case::flannel_on_aks("flanneld-waiting", Some("aks"), None, false)]
    #[case::flannel_unknown("flanneld-waiting", Some("unknown"), None, true)]
    #[case::kube_proxy_on_dpv2("kube-proxy-stopped", Some("gke"), Some("anetd"), false)]
    #[case::kube_proxy_on_gke("kube-proxy-stopped", Some("gke"), Some("kube-proxy"), true)]
    #[case::kube_proxy_unknown_proxy("kube-proxy-stopped", Some("aks"), None, true)]
    fn causes_are_scoped(
        #[case] id: &str,
        #[case] platform: Option<&str>,
        #[case] proxy: Option<&str>,
        #[case] possible: bool,
    ) {
        let c = embedded();
        let cause = c.causes.iter().find(|c| c.cause.id == id).expect("the cause");
        assert_eq!(cause.cause.possible(platform, proxy), possible);
    }

    /// A platform, service proxy or remedy key the catalogue does not know is refused.
    #[rstest]
    #[case::platform("platforms: [openshift]\n", "unknown platform openshift")]
    #[case::proxy("serviceProxies: [cilium]\n", "unknown service proxy cilium")]
    #[case::remedy_key("remedies: {rke2: x}\n", "unknown platform rke2")]
    #[case::remedy_placeholder(
        "remedies: {managed: 'restart {kubeProxyServce}'}\n",
        "unknown placeholder {kubeProxyServce}"
    )]
    fn scopes_are_validated(#[case] extra: &str, #[case] message: &str) {
        let (rules, suites) = context();
        let text = format!(
            "apiVersion: mixcheck/v1\nkind: CauseCatalogue\ncauses:\n  - id: x\n    title: t\n    remedy: r\n    fails: [{{rules: [NET-POD-SVC-CLUSTERIP]}}]\n{}",
            extra.lines().map(|l| format!("    {l}\n")).collect::<String>()
        );
        let err = Catalogue::parse(&text, "causes.yaml", &rules, &suites).expect_err("invalid");
        assert!(err.to_string().contains(message), "{err}");
    }

    const PREFIX: &str = "the client pod on win2022-1 is not usable: FailedCreatePodSandBox (3 times): \
        Failed to create pod sandbox: rpc error: code = Unknown desc = ";

    #[rstest::rstest]
    #[case::pause(
        "failed to start sandbox container for pod \"x\": hcs::CreateComputeSystem 1: The container operating system does not match the host operating system. (0xc0370101)",
        "sandbox_image"
    )]
    #[case::subnet_env(
        "failed to setup network for sandbox \"1\": plugin type=\"flannel\" name=\"cbr0\" failed (add): loadFlannelSubnetEnv failed: open C:\\run\\flannel\\subnet.env: The system cannot find the file specified.",
        "NODE_NAME"
    )]
    #[case::hns(
        "failed to setup network for sandbox \"1\": plugin type=\"flannel\" name=\"cbr0\" failed (add): failed to delegate add: error while GETHNSNewtorkByName(cbr0): Network cbr0 not found",
        "Get-HnsNetwork"
    )]
    fn sandbox_failures_get_the_remedy_of_their_causes(#[case] message: &str, #[case] names: &str) {
        let causes = embedded();
        let remedy = causes
            .sandbox_remedy(&format!("{PREFIX}{message}"), Some("Check the CNI."), Some("kubeadm"))
            .expect("a remedy");
        assert!(remedy.contains(names), "{remedy}");
    }

    #[test]
    fn other_failures_and_checks_about_sandboxes_keep_their_own_remedy() {
        let causes = embedded();
        let sandbox = |observed: &str, own| causes.sandbox_remedy(observed, own, None);
        assert_eq!(sandbox("cli-3 → 10.96.0.2:80 tcp: timeout", None), None);
        assert_eq!(
            sandbox(&format!("{PREFIX}The user name or password is incorrect."), None),
            None
        );
        assert_eq!(
            sandbox(
                &format!("{PREFIX}(0xc0370101)"),
                Some("Pods stuck in ContainerCreating (FailedCreatePodSandBox): …")
            ),
            None
        );
    }
}
