//! The `mixcheck` binary's integration tests, one test binary (one link on a small machine). They
//! run the built binary as a user or CI does:
//!
//! - `coverage_cli` — `--coverage`: light nodes, promotion, `--coverage full`; `run --plan`
//! - `run_cli` — `mixcheck run` against the bundled cluster and through a kubeconfig; bad input
//!   and its exit codes
//! - `registries_cli` — `registries:` locked down: unpullable fixtures named with the flag that
//!   fixes them, `--image-pull-secret`, `--image-registry-map`, bad registry flags
//! - `reports_cli` — the report files, `-o`, `mixcheck report --from`, snapshots
//! - `baseline_cli` — the gate against a baseline, `mixcheck diff`
//! - `diagnose_cli` — the diagnosis in results.json, `mixcheck diagnose --from`, `--causes`
//! - `execs_cli` — how a run spends its execs: a flow's ten connections or lookups in one exec
//!   where an agnhost pod's sh runs them, one each through PowerShell
//! - `diagnostics_cli` — `--node-diagnostics` where a command cannot run: "not run", no confirmation
//! - `fidelity_cli` — the third documentation review on whole runs (overlay WS2022 NodePorts,
//!   kube-proxy's skew against its kubelet)
//! - `faults` — every injectable fault against a clean run, cell by cell
//! - `new_checks` — the checks of issue #22 part 4 (no NAT, port-forward, stats, …) per setup
//! - `platforms_cli` — facts from the node, managed remedies, Dataplane V2, GKE's taint, egress
//!   and load balancers judged where the runner stands
//! - `profiles` — every seed-era profile passes its gate with the documented verdicts
//! - `proxy_cli` — proxy variables and a kubeconfig's `proxy-url`, as kubectl honours them
//! - `job_cli` — `--in-cluster` and `mixcheck results --from-job`
//! - `prepull_cli` — `mixcheck prepull`: every image on every node, a DaemonSet per Windows build,
//!   failed pulls, the deadline and Ctrl-C, nothing left behind
//! - `rbac_cli` — deploy/rbac.yaml's service account runs everything; a missing rule exits 3
//! - `canary_cli` — `mixcheck watch`: an intermittent fault's flake ratio on its node only, its
//!   cause, healing, an API server restart, Ctrl-C; a real Prometheus scrape (ignored without it).
//!   Its tests wait on the wall clock for a minute or more at little CPU, and libtest starts tests
//!   in the order of their names: named last (`watch_cli`) they ran alone for the run's last 70 s
//!   (docs/benchmarks.md, "2026-12-06 (order)")
//! - `watch_deploy` — deploy/watch.yaml's pod is restricted and serves where its Service points;
//!   the dashboard and the alert rules query only the watch's metrics
//! - `sim_cli` — `mixcheck sim serve`: kubeconfig, stop, bad topologies
//! - `support_cli` — support boundaries fail the gate; node-scoped cells name their nodes
//! - `seed_network` — the seed guide's network validation with kubectl (ignored without it)
//! - `fixture_schemas` — fixtures against the Kubernetes schemas (ignored without
//!   kubernetes-validate)
//! - `layout` — no module cycles at any folder level; simcluster's layers; no Rust file over 1,500
//!   lines
//! - `topology_text` — topology files edited for a test
//! - `hygiene_cli` — closed pipes, one-line errors, empty lint folders, `images` once per OS
//! - `docs_flags` — README.md and docs/: flags and defaults against `--help`, links inside the
//!   repository

mod baseline_cli;
mod canary_cli;
mod cli;
mod coverage_cli;
mod diagnose_cli;
mod diagnostics_cli;
mod docs_flags;
mod execs_cli;
mod faults;
mod fidelity_cli;
mod fixture_schemas;
mod hygiene_cli;
mod job_cli;
mod layout;
mod new_checks;
mod platforms_cli;
mod prepull_cli;
mod profiles;
mod proxy_cli;
mod rbac_cli;
mod registries_cli;
mod reports_cli;
mod run_cli;
mod seed_network;
mod sim_cli;
mod support_cli;
mod topology_text;
mod triage_matrix;
mod watch_deploy;
