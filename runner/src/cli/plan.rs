//! `mixcheck run`'s arguments validated once into a [`RunPlan`], before any cluster call. Every
//! problem here is a usage error (exit code 2), except a selection that matches nothing (4).

use std::time::Duration;

use regex::Regex;

use crate::catalogue::rules::Catalogue;
use crate::catalogue::suite::Suites;
use crate::cli::args::RunArgs;
use crate::cluster::target::TargetSpec;
use crate::errors::Error;
use crate::run::plan::RunPlan;

/// `10m`, `90s`, `1h30m`, `500ms`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        total += match unit {
            "ms" => Duration::from_millis(n),
            "s" | "" => Duration::from_secs(n),
            "m" => Duration::from_secs(n * 60),
            "h" => Duration::from_secs(n * 3600),
            _ => return None,
        };
    }
    Some(total)
}

const NETWORK_MODES: &[&str] = &["l2bridge", "overlay", "l2tunnel", "transparent"];

/// One `--check` expression.
#[derive(Debug)]
struct CheckFilter {
    negate: bool,
    re: Regex,
}

impl RunPlan {
    /// Validates `mixcheck run`'s arguments, loads the suites and causes they name and selects
    /// the checks, in that order: the first problem found is the one reported.
    pub fn from_args(args: &RunArgs) -> Result<Self, Error> {
        let real = names_real_cluster(args)?;
        check_network_mode(args)?;
        let (deadline, settle) = durations(args)?;
        check_concurrency(args)?;
        check_namespace(args)?;
        let registry = crate::cluster::registry::Registry::parse(
            args.image_registry.as_deref(),
            &args.image_registry_map,
            &args.image_pull_secrets,
        )
        .map_err(Error::Usage)?;
        let filters = check_filters(args)?;
        check_bundle(args)?;
        let baseline = match &args.baseline {
            Some(path) => Some(Box::new(
                mixcheck_reports::results_json::read(path).map_err(|e| Error::Usage(format!("--baseline: {e}")))?,
            )),
            None => None,
        };
        let catalogue = Catalogue::embedded()?;
        let suites = Suites::load(args.sources.suites.as_deref(), &catalogue)?;
        let causes = crate::catalogue::causes::Catalogue::load(args.sources.causes.as_deref(), &catalogue, &suites)?;
        let selected = select_checks(args, &suites, &filters)?;
        let selection = mixcheck_reports::Selection {
            suites: args.suite.clone(),
            checks: args.check.clone(),
        };
        let target = target_spec(args, real)?;
        Ok(Self {
            target,
            suites,
            selected,
            selection,
            deadline,
            settle,
            concurrency: args.concurrency,
            coverage: args.coverage.into(),
            plan_only: args.plan,
            keep: args.keep,
            strict: args.strict,
            quiet: args.quiet,
            report_dir: args.report_dir.clone(),
            namespace: args.namespace.clone(),
            registry,
            network_mode: args.network_mode.clone(),
            egress: args.egress,
            outside: outside(args)?,
            causes,
            node_diagnostics: args.node_diagnostics,
            bundle: args.bundle.clone(),
            baseline,
        })
    }
}

/// Whether the run targets a real cluster (`--kubeconfig`, `--context` or `--in-cluster`),
/// refusing the flags that do not go with how it is named.
fn names_real_cluster(args: &RunArgs) -> Result<bool, Error> {
    if args.in_cluster && (args.kubeconfig.is_some() || args.context.is_some()) {
        return Err(Error::Usage(
            "--in-cluster uses the pod's service account; it does not take --kubeconfig or --context".into(),
        ));
    }
    let real = args.kubeconfig.is_some() || args.context.is_some() || args.in_cluster;
    if real && (args.topology.is_some() || args.profile.is_some() || !args.faults.is_empty()) {
        return Err(Error::Usage(
            "--topology, --profile and --fault apply to the bundled cluster only, not to a cluster named by --kubeconfig/--context/--in-cluster"
                .into(),
        ));
    }
    Ok(real)
}

/// `--network-mode` names one of [`NETWORK_MODES`].
fn check_network_mode(args: &RunArgs) -> Result<(), Error> {
    if let Some(mode) = &args.network_mode
        && !NETWORK_MODES.contains(&mode.as_str())
    {
        return Err(Error::Usage(format!(
            "--network-mode {mode:?}: expected one of {}",
            NETWORK_MODES.join(", ")
        )));
    }
    Ok(())
}

/// The outside targets: `--outside-address` an IP address (it is pinged and connected to as
/// is), `--outside-name` a DNS name.
fn outside(args: &RunArgs) -> Result<crate::probes::egress::Outside, Error> {
    let address = args.outside_address.trim();
    if address.parse::<std::net::IpAddr>().is_err() {
        return Err(Error::Usage(format!(
            "--outside-address {address:?}: expected an IP address (a name goes in --outside-name)"
        )));
    }
    let name = args.outside_name.trim().trim_end_matches('.');
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(Error::Usage(format!(
            "--outside-name {:?}: expected a DNS name such as www.example.com",
            args.outside_name
        )));
    }
    Ok(crate::probes::egress::Outside {
        address: address.to_string(),
        name: name.to_string(),
    })
}

/// The run's `--timeout` (not zero) and its `--settle`, if given.
fn durations(args: &RunArgs) -> Result<(Duration, Option<Duration>), Error> {
    let deadline = parse_duration(&args.timeout).filter(|d| !d.is_zero()).ok_or_else(|| {
        Error::Usage(format!(
            "--timeout {:?}: expected a duration such as 10m or 90s",
            args.timeout
        ))
    })?;
    let settle = match &args.settle {
        Some(text) => Some(parse_duration(text).ok_or_else(|| {
            Error::Usage(format!(
                "--settle {text:?}: expected a duration such as 30s or 2m (0 judges the first attempt)"
            ))
        })?),
        None => None,
    };
    Ok((deadline, settle))
}

/// `--concurrency` is at least 1.
fn check_concurrency(args: &RunArgs) -> Result<(), Error> {
    if args.concurrency == 0 {
        return Err(Error::Usage("--concurrency must be at least 1".into()));
    }
    Ok(())
}

/// `--namespace` names a namespace: a DNS-1123 label (lower-case letters, digits and `-`,
/// starting and ending with a letter or digit, at most 63 characters).
fn check_namespace(args: &RunArgs) -> Result<(), Error> {
    match &args.namespace {
        Some(ns) if !is_dns_label(ns) => Err(Error::Usage(format!(
            "--namespace {ns:?}: not a namespace name (lower-case letters, digits and '-', at most 63 characters)"
        ))),
        _ => Ok(()),
    }
}

/// The `--check` expressions compiled (`!` negates one).
fn check_filters(args: &RunArgs) -> Result<Vec<CheckFilter>, Error> {
    args.check
        .iter()
        .map(|raw| {
            let (negate, pattern) = match raw.strip_prefix('!') {
                Some(p) => (true, p),
                None => (false, raw.as_str()),
            };
            Regex::new(pattern)
                .map(|re| CheckFilter { negate, re })
                .map_err(|e| Error::Usage(format!("--check {raw:?}: {e}")))
        })
        .collect()
}

/// `--bundle` names a `.tar.gz` or `.tgz` file in a folder that exists.
fn check_bundle(args: &RunArgs) -> Result<(), Error> {
    let Some(path) = &args.bundle else {
        return Ok(());
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
        return Err(Error::Usage(format!(
            "--bundle {}: expected a file name ending in .tar.gz or .tgz",
            path.display()
        )));
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = dir
        && !dir.is_dir()
    {
        return Err(Error::Usage(format!(
            "--bundle {}: the folder {} does not exist",
            path.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// The checks `--suite`, `--check` and `--include-pending` select, as (suite, check) indexes;
/// an unknown suite is a usage error and an empty selection [`Error::NothingSelected`].
fn select_checks(args: &RunArgs, suites: &Suites, filters: &[CheckFilter]) -> Result<Vec<(usize, usize)>, Error> {
    for name in &args.suite {
        if !suites.suites.iter().any(|s| &s.name == name) {
            let known: Vec<&str> = suites.suites.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "--suite {name:?}: no such suite (known: {})",
                known.join(", ")
            )));
        }
    }
    let mut selected = Vec::new();
    for (si, suite) in suites.suites.iter().enumerate() {
        if !args.suite.is_empty() && !args.suite.contains(&suite.name) {
            continue;
        }
        for (ci, check) in suite.checks.iter().enumerate() {
            if check.pending.is_some() && !args.include_pending {
                continue;
            }
            let key = format!("{}/{}", suite.name, check.name);
            // Kept when it matches some positive filter (or there is none) and no negated one.
            let hit = |f: &&CheckFilter| f.re.is_match(&key) || f.re.is_match(&check.rule);
            let mut positives = filters.iter().filter(|f| !f.negate).peekable();
            let wanted = positives.peek().is_none() || positives.any(|f| hit(&f));
            let keep = wanted && !filters.iter().filter(|f| f.negate).any(|f| hit(&f));
            if keep {
                selected.push((si, ci));
            }
        }
    }
    if selected.is_empty() {
        let what = if args.check.is_empty() && args.suite.is_empty() {
            "the suites hold no checks".to_string()
        } else {
            format!("suites {:?}, checks {:?}", args.suite, args.check)
        };
        return Err(Error::NothingSelected(what));
    }
    Ok(selected)
}

/// The cluster the run targets: the pod's own (`--in-cluster`), one a kubeconfig names (`real`),
/// else the bundled one with its topology and faults.
fn target_spec(args: &RunArgs, real: bool) -> Result<TargetSpec, Error> {
    Ok(if args.in_cluster {
        let kubeconfig = crate::cluster::target::in_cluster_kubeconfig(
            &|name| std::env::var(name).ok(),
            std::path::Path::new(crate::cluster::target::SERVICE_ACCOUNT_DIR),
        )
        .map_err(Error::Usage)?;
        TargetSpec::InCluster {
            kubeconfig: Box::new(kubeconfig),
        }
    } else if real {
        TargetSpec::Kubeconfig {
            path: args.kubeconfig.clone(),
            context: args.context.clone(),
        }
    } else {
        let (profile, mut topology) = match (&args.topology, &args.profile) {
            (Some(path), _) => (path.display().to_string(), simcluster::Topology::load(path)?),
            (None, Some(name)) => (name.clone(), simcluster::Topology::profile(name)?),
            (None, None) => ("default".to_string(), simcluster::Topology::default_cluster()),
        };
        crate::cli::sim::apply_faults(&mut topology, &args.faults)?;
        TargetSpec::Bundled {
            profile,
            topology: Box::new(topology),
        }
    })
}

/// An RFC 1123 label, as namespace names are.
pub(crate) fn is_dns_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;
    use rstest::rstest;

    fn plan(args: &[&str]) -> Result<RunPlan, Error> {
        let mut argv = vec!["mixcheck", "run"];
        argv.extend_from_slice(args);
        let cli = crate::cli::args::Cli::try_parse_from(argv).expect("parses");
        match cli.command {
            crate::cli::args::Command::Run(run) => RunPlan::from_args(&run),
            other => panic!("{other:?}"),
        }
    }

    #[rstest]
    #[case("10m", Some(600))]
    #[case("90s", Some(90))]
    #[case("1h30m", Some(5400))]
    #[case("45", Some(45))]
    #[case("5x", None)]
    #[case("", None)]
    fn durations(#[case] text: &str, #[case] secs: Option<u64>) {
        assert_eq!(parse_duration(text).map(|d| d.as_secs()), secs);
    }

    #[test]
    fn the_default_plan_targets_the_bundled_cluster_with_every_check_but_the_pending() {
        let p = plan(&[]).expect("plan");
        assert!(matches!(p.target, TargetSpec::Bundled { ref profile, .. } if profile == "default"));
        let ready = p.suites.checks().filter(|(_, c)| c.pending.is_none()).count();
        assert_eq!(p.selected.len(), ready);
        assert!(p.checks().all(|(_, c)| c.pending.is_none()));
        let all = plan(&["--include-pending"]).expect("plan");
        assert_eq!(all.selected.len(), all.suites.checks().count());
        assert_eq!(p.deadline, Duration::from_secs(20 * 60));
    }

    #[rstest]
    #[case::fault_on_real_cluster(&["--context", "prod", "--fault", "win-1:kube-proxy-stopped"], "bundled cluster only")]
    #[case::profile_on_real_cluster(&["--kubeconfig", "kc", "--profile", "default"], "bundled cluster only")]
    #[case::bad_regex(&["--check", "("], "--check")]
    #[case::bad_mode(&["--network-mode", "mesh"], "--network-mode")]
    #[case::outside_address_not_ip(&["--outside-address", "dns.google"], "--outside-address")]
    #[case::outside_name_not_dns(&["--outside-name", "http://x"], "--outside-name")]
    #[case::bad_timeout(&["--timeout", "soon"], "--timeout")]
    #[case::unknown_suite(&["--suite", "nope"], "no such suite")]
    #[case::unknown_fault(&["--fault", "win2019-1:gremlins"], "unknown fault")]
    #[case::registry_map_without_to(&["--image-registry-map", "registry.k8s.io"], "--image-registry-map")]
    #[case::registry_mapped_twice(
        &["--image-registry-map", "registry.k8s.io=a.corp/k8s", "--image-registry-map", "registry.k8s.io=b.corp/k8s"],
        "mapped twice"
    )]
    #[case::registry_prefix_without_host(&["--image-registry", "mirror"], "--image-registry")]
    #[case::pull_secret_name(&["--image-pull-secret", "Reg_Cred"], "--image-pull-secret")]
    #[case::pull_secrets_colliding(
        &["--image-pull-secret", "a/regcred", "--image-pull-secret", "b/regcred"],
        "both would be"
    )]
    fn usage_errors(#[case] args: &[&str], #[case] needle: &str) {
        match plan(args) {
            Err(Error::Usage(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    /// The mirrors and pull secrets reach the plan as given.
    #[test]
    fn registry_flags_reach_the_plan() {
        let p = plan(&[
            "--image-registry",
            "mirror.local/all",
            "--image-registry-map",
            "mcr.microsoft.com=harbor.corp/mcr",
            "--image-pull-secret",
            "default/regcred",
            "--image-pull-secret",
            "local",
        ])
        .expect("plan");
        assert_eq!(p.registry.mirrors.prefix.as_deref(), Some("mirror.local/all"));
        assert_eq!(p.registry.mirrors.map["mcr.microsoft.com"], "harbor.corp/mcr");
        assert_eq!(p.registry.secret_names(), ["regcred", "local"]);
        assert!(plan(&[]).expect("plan").registry.report().is_none());
    }

    #[test]
    fn check_filters_select_and_negate() {
        let only = plan(&["--check", "NET-POD-POD-IP"]).expect("plan");
        assert!(only.checks().all(|(_, c)| c.rule.starts_with("NET-POD-POD-IP")));
        assert!(only.selected.len() >= 2);
        let without = plan(&["--check", "!NET-POD-POD-IP"]).expect("plan");
        assert!(without.checks().all(|(_, c)| !c.rule.starts_with("NET-POD-POD-IP")));
        assert_eq!(
            only.selected.len() + without.selected.len(),
            only.suites.checks().filter(|(_, c)| c.pending.is_none()).count()
        );
        // Several positive filters select the union; a negated one removes from it.
        let two = plan(&["--check", "pod-ip-same-node", "--check", "pod-ip-cross-node"]).expect("plan");
        let names: Vec<&str> = two.checks().map(|(_, c)| c.name.as_str()).collect();
        assert_eq!(names, ["pod-ip-same-node", "pod-ip-cross-node"]);
        let minus = plan(&["--check", "NET-POD-POD-IP", "--check", "!cross"]).expect("plan");
        assert!(minus.checks().all(|(_, c)| c.name != "pod-ip-cross-node"));
        assert!(minus.checks().any(|(_, c)| c.name == "pod-ip-same-node"));
        assert!(matches!(
            plan(&["--check", "^nothing-at-all$"]),
            Err(Error::NothingSelected(_))
        ));
    }
}
