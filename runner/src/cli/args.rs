//! The command line: raw arguments as clap parses them (validated into plans elsewhere).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Conformance and diagnostic harness for Kubernetes clusters that mix Linux and Windows nodes.
#[derive(Debug, Parser)]
#[command(name = "mixcheck", version, about, propagate_version = true)]
pub struct Cli {
    /// More logging on stderr (-v, -vv); MIXCHECK_LOG overrides it with a tracing filter.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check a mixed cluster against the documented Windows-node rules (the bundled cluster
    /// unless --kubeconfig or --context names a real one).
    Run(Box<RunArgs>),
    /// List the suites and checks, with rule ids and sources.
    List(ListArgs),
    /// Validate suites and fixtures without touching a cluster.
    Lint(LintArgs),
    /// Every image the fixtures use, per OS (to mirror them for air-gapped clusters).
    Images(ImagesArgs),
    /// Delete the namespaces earlier runs left behind (label app.kubernetes.io/managed-by=mixcheck).
    Cleanup(CleanupArgs),
    /// Pull the fixture images onto every node once (a DaemonSet per OS and Windows build),
    /// report each node's pull times, and delete the DaemonSets again.
    Prepull(PrepullArgs),
    /// Render a saved run (results.json) again, without a cluster.
    Report(ReportArgs),
    /// Diagnose a saved run (results.json) again, offline: rank the likely causes of its
    /// failing cells with the cause catalogue and the evidence the run gathered.
    Diagnose(DiagnoseArgs),
    /// Compare two runs (results.json) cell by cell; exit 1 when the newer one regressed.
    Diff(DiffArgs),
    /// Fetch the results of an in-cluster run (deploy/job.yaml) from its Job's log and render them.
    Results(ResultsArgs),
    /// Keep checking a cluster: deploy the fixtures once, probe every --interval, and serve
    /// Prometheus metrics (verdicts, flake ratios, likely causes, start-up times) until
    /// interrupted; Ctrl-C deletes what it created.
    Watch(Box<WatchArgs>),
    /// Summarise a watch's history (`watch --history DIR`): per cell its flake ratio and
    /// latency trend, and the cycles in which a verdict changed.
    History(HistoryArgs),
    /// The bundled mixed Linux/Windows cluster.
    #[command(subcommand)]
    Sim(SimCommand),
}

/// `mixcheck watch`: a run's flags (the target, the selection, the images) and the watch's own.
#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Time between the starts of two cycles (e.g. 60s, 5m).
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub interval: String,
    /// Every cell is probed at least this often: each cycle takes the light per-node checks on
    /// every node and a share of the other cells.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub full_every: String,
    /// The rolling window of flake ratios and of the diagnosis.
    #[arg(long, value_name = "DURATION", default_value = "1h")]
    pub flake_window: String,
    /// Where /metrics, /healthz and /readyz are served.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:9469")]
    pub listen: SocketAddr,
    /// Append each cycle's results to this folder as JSON lines (read with `mixcheck history`).
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// How many cycles the history keeps (older segments are deleted).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub retain: usize,
    /// Stop after this many cycles (scripts); default: until interrupted.
    #[arg(long, value_name = "N")]
    pub cycles: Option<u64>,
    /// Set a node condition MixcheckDataplane=False on a node whose light checks fail for
    /// --mark-after cycles in a row, True once they work again (needs nodes/status patch).
    #[arg(long)]
    pub mark_nodes: bool,
    /// Failing cycles in a row before --mark-nodes marks a node.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "mark_nodes")]
    pub mark_after: u32,
}

/// `mixcheck history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The folder a watch wrote with --history.
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
}

/// Where suites and fixtures come from, besides the embedded ones.
#[derive(Debug, Args, Clone, Default)]
pub struct SourceArgs {
    /// A folder of suite files (*.yaml) that add to or replace the embedded suites by name.
    #[arg(long, value_name = "DIR")]
    pub suites: Option<PathBuf>,
    /// A cause catalogue (YAML) to diagnose with instead of the embedded suites/causes.yaml.
    #[arg(long, value_name = "FILE")]
    pub causes: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// List the rules of the catalogue that no check covers, instead of the checks.
    #[arg(long)]
    pub uncovered: bool,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// A folder of fixture files (*.yaml) to validate besides the embedded ones.
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImagesArgs {
    /// Print the images as rewritten for this registry mirror (see `run --image-registry`).
    #[arg(long, value_name = "REGISTRY")]
    pub image_registry: Option<String>,
    /// Print the images of one upstream registry as rewritten for its mirror (repeatable; see
    /// `run --image-registry-map`).
    #[arg(long = "image-registry-map", value_name = "FROM=TO")]
    pub image_registry_map: Vec<String>,
    /// One row per image and fixture (default: each image once per OS, with the Windows builds
    /// that pull it and how many fixtures use it — the list to mirror).
    #[arg(long)]
    pub by_fixture: bool,
    /// Only what a node of this Windows build pulls (`26100` or `10.0.26100`; a build between
    /// the documented ones pulls as the one before it).
    #[arg(long, value_name = "BUILD")]
    pub build: Option<String>,
}

#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Only list the namespaces that would be deleted.
    #[arg(long)]
    pub dry_run: bool,
    /// Delete what runs left in this existing namespace (`run --namespace`): their pods,
    /// Services and Secrets, by label; the namespace itself stays.
    #[arg(long, short = 'n', value_name = "NAME")]
    pub namespace: Option<String>,
}

/// `mixcheck prepull`.
#[derive(Debug, Args)]
pub struct PrepullArgs {
    /// Kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Pull in this existing namespace (never created or deleted; only the DaemonSets go).
    /// Default: a namespace mixcheck-prepull-<id> created for the pull and deleted after it.
    #[arg(long, short = 'n', value_name = "NAME")]
    pub namespace: Option<String>,
    /// Pull the fixture images as rewritten for this registry mirror, as `mixcheck run` does.
    #[arg(long, value_name = "REGISTRY")]
    pub image_registry: Option<String>,
    /// Pull from a mirror per upstream registry (repeatable), as `mixcheck run` does, e.g.
    /// `mcr.microsoft.com=harbor.corp/mcr`.
    #[arg(long = "image-registry-map", value_name = "FROM=TO")]
    pub image_registry_map: Vec<String>,
    /// How long the pulls may take in all (e.g. 30m, 90s); then the DaemonSets are deleted
    /// and the nodes not done are reported.
    #[arg(long, value_name = "DURATION", default_value = "30m")]
    pub timeout: String,
    /// Only the report; no progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = PrepullOutput::Table)]
    pub output: PrepullOutput,
}

/// `mixcheck prepull -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrepullOutput {
    /// One row per node and image, then the totals per group.
    Table,
    /// The same as JSON.
    Json,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Kubeconfig of a real cluster to check (also $KUBECONFIG together with --context).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use (a real cluster; never chosen implicitly).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Check the cluster this runs in, through the pod's service account (a Job; see
    /// deploy/job.yaml). Prints the results between marker lines for `mixcheck results`.
    #[arg(long)]
    pub in_cluster: bool,
    /// Run in this existing namespace instead of creating one: the run never creates or deletes
    /// it, and deletes only the objects it created there (by its run label), also on Ctrl-C and
    /// at the deadline. For identities that own one namespace (deploy/rbac-namespaced.yaml).
    #[arg(long, short = 'n', value_name = "NAME")]
    pub namespace: Option<String>,
    /// Bundled cluster: a topology file instead of the default topology.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub topology: Option<PathBuf>,
    /// Bundled cluster: a built-in profile (see `mixcheck sim profiles`).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Bundled cluster: inject a fault on a node (repeatable), e.g. `win2019-1:kube-proxy-stopped`.
    #[arg(long = "fault", value_name = "NODE:FAULT")]
    pub faults: Vec<String>,
    /// Run only this suite (repeatable).
    #[arg(long = "suite", value_name = "NAME")]
    pub suite: Vec<String>,
    /// Run only checks whose `suite/check` or rule id matches (repeatable; a leading `!` negates).
    #[arg(long = "check", value_name = "REGEX")]
    pub check: Vec<String>,
    #[command(flatten)]
    pub sources: SourceArgs,
    /// Also run checks marked pending (not yet triaged; see `mixcheck list`).
    #[arg(long)]
    pub include_pending: bool,
    /// The cluster's network mode when it cannot be detected (l2bridge, overlay, l2tunnel, transparent).
    #[arg(long, value_name = "MODE")]
    pub network_mode: Option<String>,
    /// Whether pods may reach the internet (`--egress=false` on air-gapped clusters). Default:
    /// detected — a pod of each OS tries an outside address until it works or its settle
    /// window ends.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub egress: Option<bool>,
    /// An address outside the cluster the outbound checks (and egress detection) aim at, on TCP
    /// 443 and 53 and with ping: one your egress firewall allows.
    #[arg(long, value_name = "IP", default_value = crate::probes::egress::DEFAULT_ADDRESS)]
    pub outside_address: String,
    /// A name outside the cluster the outbound checks resolve and connect to on TCP 443.
    #[arg(long, value_name = "NAME", default_value = crate::probes::egress::DEFAULT_NAME)]
    pub outside_name: String,
    /// The whole run's deadline (e.g. 20m, 90s). The default fits a first run on a Windows
    /// Server 2025 pool with cold pulls: 15 minutes for the fixtures (the e2e framework's
    /// `podStartSlowTimeout` for pods pulling a large image) and 5 for the cells.
    #[arg(long, value_name = "DURATION", default_value = "20m")]
    pub timeout: String,
    /// How long a flow that does not work yet is tried again before it is judged (pod and
    /// Service flows; NodePorts and LoadBalancers twice that), counted from when the fixtures
    /// were ready; 0 judges the first attempt. Default: 30s on a real cluster; on the bundled
    /// cluster, from its topology's programming delays.
    #[arg(long, value_name = "DURATION")]
    pub settle: Option<String>,
    /// Cells probed at once.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub concurrency: usize,
    /// `sampled`: every check on two nodes per distinct set of node facts in each pool, the
    /// light per-node checks (`everyNode`) on the others, promoting a node whose light check
    /// fails; `full`: every check on every node.
    #[arg(long, value_enum, value_name = "MODE", default_value = "sampled")]
    pub coverage: CoverageArg,
    /// Print what the run would do — checks, cells, pods per node, probes, API calls and an
    /// estimated time measured on this cluster — and stop: reads the cluster, creates nothing.
    #[arg(long)]
    pub plan: bool,
    /// Keep the run namespace afterwards, for triage with the printed kubectl commands; on the
    /// bundled cluster, keep the cluster serving too (with a kubeconfig beside the reports) until
    /// Ctrl-C.
    #[arg(long)]
    pub keep: bool,
    /// Documented limitations and unfollowed recommendations fail the gate too.
    #[arg(long)]
    pub strict: bool,
    /// Where the reports go (results.json, junit.xml, report.md, report.html).
    #[arg(long, value_name = "DIR", default_value = "mixcheck-report")]
    pub report_dir: PathBuf,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The table output also lists every failing cell (observation, remedy, evidence, reproduce
    /// command) and every documented limitation; by default failures are grouped by cause and
    /// rule, and the report files hold the rest.
    #[arg(long)]
    pub details: bool,
    /// Rewrite fixture images to this registry prefix (air-gapped mirrors), e.g.
    /// `mirror.example.com/k8s`: the registry host is replaced, the repository path kept. With
    /// --image-registry-map, only the images no mapping matches.
    #[arg(long, value_name = "REGISTRY")]
    pub image_registry: Option<String>,
    /// Rewrite the images of one upstream registry to its mirror, the repository path kept
    /// (repeatable), e.g. `registry.k8s.io=harbor.corp/k8s`, `mcr.microsoft.com=harbor.corp/mcr`;
    /// Docker Hub is `docker.io`. The longest matching FROM wins.
    #[arg(long = "image-registry-map", value_name = "FROM=TO")]
    pub image_registry_map: Vec<String>,
    /// A pull secret (type kubernetes.io/dockerconfigjson) every pod of the run names in
    /// imagePullSecrets (repeatable): NAME in the run namespace, or NAMESPACE/NAME, which the run
    /// copies into its namespace first. A missing Secret stops the run before it creates
    /// anything.
    #[arg(long = "image-pull-secret", value_name = "[NAMESPACE/]NAME")]
    pub image_pull_secrets: Vec<String>,
    /// Only the summary; no progress lines.
    #[arg(long, short)]
    pub quiet: bool,
    /// Also run the diagnosis's confirmation commands on the implicated nodes: deploys a
    /// privileged HostProcess pod on Windows and a hostNetwork pod on Linux nodes.
    #[arg(long)]
    pub node_diagnostics: bool,
    /// Compare with the results.json of an earlier run: only regressions (cells that got worse,
    /// or new failing cells) fail the gate; known failures and improvements are reported.
    #[arg(long, value_name = "RESULTS.json")]
    pub baseline: Option<PathBuf>,
    /// Also write an evidence bundle for a support ticket (reports, facts, diagnosis, the run
    /// namespace's objects, the nodes, kube-system's agents), Secret values and tokens redacted.
    #[arg(long, value_name = "FILE.tar.gz")]
    pub bundle: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Run the bundled cluster until interrupted, and write a kubeconfig for kubectl.
    Serve(ServeArgs),
    /// List the built-in cluster profiles (use one with `sim serve --profile NAME`).
    Profiles,
    /// List the faults a node can carry, with the symptom each produces.
    Faults,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Topology file (YAML); the built-in default cluster when omitted.
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub topology: Option<PathBuf>,
    /// A built-in profile instead of a topology file (see `mixcheck sim profiles`).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Inject a fault on a node (repeatable), e.g. `--fault win2019-1:kubelet-stopped`.
    #[arg(long = "fault", value_name = "NODE:FAULT")]
    pub faults: Vec<String>,
    /// Address and port of the API server (loopback unless you name another address).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (mode 0600).
    #[arg(long, value_name = "PATH", default_value = "mixcheck-sim.kubeconfig")]
    pub kubeconfig: PathBuf,
    /// Real seconds per second of the served cluster's clock (default 1: the wall clock). Below
    /// 1 the cluster's own waits — the kubelet's back-offs, pulls, start-up steps, proxy
    /// programming, CronJob schedules — pass that much faster; its clients time what they see on
    /// their own clock, so a grace period or shutdown delay looks as much shorter to them.
    #[arg(long, value_name = "SCALE", allow_negative_numbers = true)]
    pub time_scale: Option<f64>,
}

/// A report format for standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// The per-check summary with counts per verdict.
    Table,
    /// results.json.
    Json,
    /// JUnit XML.
    Junit,
    /// Markdown (for a pull request or a job summary).
    Markdown,
}

/// `mixcheck report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results.json of an earlier run.
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The table output also lists every failing cell and every documented limitation.
    #[arg(long)]
    pub details: bool,
    /// Also write every format into this folder.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
}

/// `mixcheck diagnose`.
#[derive(Debug, Args)]
pub struct DiagnoseArgs {
    /// The results.json of an earlier run.
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    #[command(flatten)]
    pub sources: SourceArgs,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Also write every format, with the new diagnosis, into this folder.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
}

/// `mixcheck diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The earlier run's results.json (the baseline).
    #[arg(value_name = "OLD.json")]
    pub old: PathBuf,
    /// The newer run's results.json.
    #[arg(value_name = "NEW.json")]
    pub new: PathBuf,
    /// Judge the gate as --strict does (known limitations and warnings fail it).
    #[arg(long)]
    pub strict: bool,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = DiffOutput::Table)]
    pub output: DiffOutput,
}

/// `mixcheck diff -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffOutput {
    Table,
    Markdown,
    Json,
}

/// `mixcheck results`.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    /// The Job that ran `mixcheck run --in-cluster`.
    #[arg(long, value_name = "NAME")]
    pub from_job: String,
    /// The Job's namespace.
    #[arg(long, short = 'n', value_name = "NAMESPACE", default_value = "mixcheck")]
    pub namespace: String,
    /// Kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// What goes to standard output.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// The table output also lists every failing cell and every documented limitation.
    #[arg(long)]
    pub details: bool,
    /// Also write every format into this folder.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
}

/// `--coverage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CoverageArg {
    /// Representatives of each fact set get every check; the other nodes the light ones.
    Sampled,
    /// Every node gets every check.
    Full,
}

impl From<CoverageArg> for mixcheck_reports::coverage::Mode {
    fn from(c: CoverageArg) -> Self {
        match c {
            CoverageArg::Sampled => Self::Sampled,
            CoverageArg::Full => Self::Full,
        }
    }
}
