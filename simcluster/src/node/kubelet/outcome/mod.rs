//! What a node's kubelet and container runtime do with a pod, as a pure decision: kubelet
//! admission, the pod sandbox, each container's image pull, container config, start, and what
//! its main process then does (the process model); plus the API server's extra validation of
//! Windows pods. Behaviour derives only from the [`NodeProfile`], the pod spec and the image
//! [`Catalogue`] — never from names, namespaces or labels a test harness might use (the one
//! label read is `kubernetes.io/os`, which the real kubelet reads too).
//!
//! Every failure names the rule of the Windows rules catalogue it models (`rule`).
//!
//! Modelled choices (documented deviations or simplifications):
//! - Admission runs in upstream order: the pod **label** `kubernetes.io/os` (kubelet ≥ 1.23)
//!   before `spec.os.name` (kubelet ≥ 1.24, when `IdentifyPodOS` became on by default), then
//!   the simulator's own check that HostProcess and normal containers are not mixed
//!   (SEC-HOSTPROCESS, a kubelet sandbox-config error upstream, surfaced here as a rejection).
//!   Several containers in one pod start on every build; on Windows Server 2016 they only lack
//!   a shared localhost, which the network fabric models (POD-MULTI-CONTAINER).
//! - `emptyDir.medium: Memory` on Windows is a volume set-up failure; it is returned as
//!   [`PodFate::SandboxFails`] whose message starts with `MountVolume.SetUp failed` — its
//!   event reason is `FailedMount` ([`PodFate::event_reason`]).
//! - A pause image that the node cannot run gives the documented `… (0xc0370101)` sandbox
//!   failure on Windows whether the image is a manifest list without a matching entry or a
//!   mismatched single manifest; on Linux it is the containerd sandbox-image pull error.
//! - `privileged: true` on Windows is ignored and recorded as a Warning event
//!   `PrivilegedNotSupported` (SEC-PRIVILEGED; upstream historically ignored it).
//! - HostProcess requested on a node that cannot run it (kubelet < 1.23 or containerd < 1.6 or
//!   Docker): the containers run as normal containers and the kubelet log says so.
//! - Runtime handlers: containerd knows `runhcs-wcow-process` (Windows), `runc` (Linux) and
//!   `runhcs-wcow-hypervisor` where Hyper-V is offered; Docker only `docker`. Anything else
//!   fails the sandbox as containerd/dockershim do.
//! - [`ContainerOutcome::StartFails`] messages carry the literal [`CONTAINER_ID_PLACEHOLDER`]
//!   (`<containerId>`) where the runtime prints the container id: the caller knows the id of
//!   each attempt and substitutes it. Sandbox messages use [`container_id`] of the pod uid.
//! - The process model interprets `sh -c`, `cmd /c` and `powershell -Command` scripts built from
//!   `echo`/`Write-Host`, `exit`, `sleep`/`Start-Sleep`/`ping -n`, `true`/`false` and a set of
//!   local file utilities. Loops, servers and anything it cannot interpret (including network
//!   clients such as `curl`, whose result depends on the network) keep running. Windows
//!   `timeout /t N` fails at once without console input, as it does in a container. What a
//!   statement's redirection sends to a file is recorded in [`ContainerPlan::writes`] (the
//!   kubelet puts it where the container's mounts say); a redirection into a `readOnly` mount
//!   fails the statement with the shell's error (STO-READONLY-VOLUME).

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::faults::Fault;
use crate::config::profile::{NodeProfile, RuntimeKind};
use crate::config::topology::{ImagePlatform, Os, WINDOWS_SUBNET_ENV};
use crate::node::exec::echo;
use crate::node::images::{Catalogue, ImageInfo, Reference};
use crate::store::api_error::Cause;
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

/// The RuntimeClass handler of Hyper-V isolated Windows containers (containerd ≥ 1.7).
pub const HYPERV_HANDLER: &str = "runhcs-wcow-hypervisor";
/// The default Windows containerd handler (process isolation).
pub const PROCESS_HANDLER: &str = "runhcs-wcow-process";
/// The HCS error text for `HCS_E_IMAGE_MISMATCH` (0xC0370101).
pub const HCS_IMAGE_MISMATCH: &str = "The container operating system does not match the host operating system.";
/// The Win32 text of `ERROR_FILE_NOT_FOUND`, as Go prints it for a failed `os.Open`.
pub const WIN_FILE_NOT_FOUND: &str = "The system cannot find the file specified.";
/// Stands for the container id in [`ContainerOutcome::StartFails`] messages.
pub const CONTAINER_ID_PLACEHOLDER: &str = "<containerId>";
/// The Windows user regarded as root (SEC-RUNASNONROOT-ADMIN).
pub const WINDOWS_ROOT_USER: &str = "ContainerAdministrator";
/// The Win32 text of `ERROR_LOGON_FAILURE` (0x52e): what HCS answers when a container process
/// is to run as an account the container does not have (SEC-RUNASUSERNAME-INVALID).
pub const WIN_LOGON_FAILURE: &str = "The user name or password is incorrect.";

/// Whether a Windows container of an image whose default user is `image_user` has the account
/// `user` (SEC-RUNASUSERNAME-INVALID): the two accounts every Windows base image carries
/// (`ContainerUser`, `ContainerAdministrator`, optionally as `User Manager\…`), the image's own
/// default user, and the service accounts of `NT AUTHORITY` (SYSTEM, LOCAL SERVICE, NETWORK
/// SERVICE). Any other name — a local account the image never created, a domain account — makes
/// the logon fail.
pub fn windows_account_exists(user: &str, image_user: Option<&str>) -> bool {
    let (domain, name) = user.rsplit_once('\\').unwrap_or(("", user));
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let container_account = ["ContainerUser", WINDOWS_ROOT_USER]
        .into_iter()
        .chain(image_user.map(|u| u.rsplit('\\').next().unwrap_or(u)))
        .any(|a| is(a, name));
    let service_account = [
        "SYSTEM",
        "LOCAL SERVICE",
        "LocalService",
        "NETWORK SERVICE",
        "NetworkService",
    ]
    .into_iter()
    .any(|a| is(a, name));
    match domain {
        "" => container_account || service_account,
        d if is(d, "User Manager") => container_account,
        d if is(d, "NT AUTHORITY") => service_account,
        _ => false,
    }
}

/// How the node isolates the pod's Windows containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    Process,
    HyperV,
}

/// What the kubelet does with a pod bound to the node.
#[derive(Debug, Clone, PartialEq)]
pub enum PodFate {
    /// Kubelet admission rejects: pod phase Failed with this reason/message; event type Warning,
    /// reason = reason, message = message without the "Pod was rejected: " prefix.
    Rejected {
        reason: String,
        message: String,
        rule: &'static str,
    },
    /// The sandbox cannot be created: repeated `FailedCreatePodSandBox` events with this message
    /// (`FailedMount` when it starts with `MountVolume.`); pod stays Pending/ContainerCreating.
    SandboxFails { message: String, rule: &'static str },
    /// The pod proceeds; each container (init containers first, in order) has an outcome.
    Proceed(PodPlan),
}

impl PodFate {
    /// The event reason of a sandbox failure (`FailedCreatePodSandBox`, or `FailedMount` for
    /// volume set-up), of a rejection (its reason); None for a pod that proceeds.
    pub fn event_reason(&self) -> Option<&str> {
        match self {
            Self::Rejected { reason, .. } => Some(reason),
            Self::SandboxFails { message, .. } if message.starts_with("MountVolume.") => Some("FailedMount"),
            Self::SandboxFails { .. } => Some("FailedCreatePodSandBox"),
            Self::Proceed(_) => None,
        }
    }

    /// The rule id of a pod-level failure.
    pub fn rule(&self) -> Option<&'static str> {
        match self {
            Self::Rejected { rule, .. } | Self::SandboxFails { rule, .. } => Some(rule),
            Self::Proceed(_) => None,
        }
    }
}

/// The plan of a pod that gets past admission and sandbox creation.
#[derive(Debug, Clone, PartialEq)]
pub struct PodPlan {
    pub init_containers: Vec<ContainerPlan>,
    pub containers: Vec<ContainerPlan>,
    /// Effective: false for a normal Windows pod even with `hostNetwork: true` (NET-HOSTNETWORK,
    /// ignored with containerd).
    pub host_network: bool,
    /// SEC-HOSTPROCESS.
    pub host_process: bool,
    pub isolation: Isolation,
    /// Lines the kubelet would log (klog structured format).
    pub kubelet_log: Vec<String>,
    /// (reason, message) Warning events to record.
    pub warning_events: Vec<(String, String)>,
}

/// One container's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerPlan {
    pub name: String,
    pub image: String,
    /// The effective Windows user (None on Linux).
    pub user: Option<String>,
    pub outcome: ContainerOutcome,
    /// The files its main process writes through its shell's redirections, in order (the
    /// kubelet puts them where the container's mounts say, [`crate::node::exec::volumes`]).
    pub writes: Vec<FileWrite>,
}

/// A file a container's main process writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// The absolute path in the container (normalised for its OS).
    pub path: String,
    pub data: Vec<u8>,
    /// `>>` rather than `>`.
    pub append: bool,
}

/// What happens to one container.
#[derive(Debug, Clone, PartialEq)]
pub enum ContainerOutcome {
    /// Pull fails: events `Failed to pull image "<img>": <message>` then
    /// ErrImagePull/ImagePullBackOff forever.
    PullFails { message: String, rule: &'static str },
    /// CreateContainerConfigError; the event message is `Error: <message>`.
    ConfigError { message: String, rule: &'static str },
    /// The runtime fails to start it: lastState.terminated reason StartError, exitCode 128,
    /// this message (with [`CONTAINER_ID_PLACEHOLDER`] replaced); then CrashLoopBackOff.
    StartFails { message: String, rule: &'static str },
    /// It starts; `process` says what its main process does.
    Runs { process: Process },
}

impl ContainerOutcome {
    /// The rule id of a failure.
    pub fn rule(&self) -> Option<&'static str> {
        match self {
            Self::PullFails { rule, .. } | Self::ConfigError { rule, .. } | Self::StartFails { rule, .. } => Some(rule),
            Self::Runs { .. } => None,
        }
    }
}

/// What a started container's main process does.
#[derive(Debug, Clone, PartialEq)]
pub enum Process {
    /// Keeps running until stopped.
    LongRunning { log: Vec<String> },
    /// Exits after `after_ms` (simulated, unscaled) with this code and log lines.
    Exits { code: i32, after_ms: u64, log: Vec<String> },
    /// Linux: the kernel OOM-kills it (reason OOMKilled, exit 137).
    OomKilled { after_ms: u64 },
    /// Windows: no OOM killer (MEM-NO-OOM-KILL): the allocation fails inside the process, which
    /// exits with an error (reason Error, code 1) and logs the failure.
    AllocationFails { after_ms: u64, log: Vec<String> },
    /// Keeps running, holding `bytes` of memory it allocated (a memory tool within its limit):
    /// what the node's memory signal counts (MEM-EVICTION).
    Holding { bytes: u128, log: Vec<String> },
}

/// A reproducible 64-hex-digit container id for runtime messages.
pub fn container_id(pod_uid: &str, container: &str) -> String {
    let mut out = String::with_capacity(64);
    for salt in 0u8..4 {
        let mut h = crate::vocab::hash::Fnv::default()
            .write(pod_uid.as_bytes())
            .write(&[0, salt])
            .write(container.as_bytes())
            .finish();
        h ^= h >> 29;
        out.push_str(&format!("{h:016x}"));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reading the pod.

fn string_list(v: Option<&Value>) -> Option<Vec<String>> {
    let items = v?.as_array()?;
    Some(
        items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
    )
}

/// The pod as the kubelet sees it.
struct PodView<'a> {
    name: String,
    namespace: String,
    uid: String,
    spec: &'a Value,
    labels: Option<&'a Value>,
    /// Init containers then containers, with a flag for init.
    containers: Vec<(&'a Value, bool)>,
}

impl<'a> PodView<'a> {
    fn new(pod: &'a Value) -> Self {
        static NULL: Value = Value::Null;
        let spec = pod.get("spec").unwrap_or(&NULL);
        let list = |key: &str| -> Vec<&'a Value> {
            spec.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default()
        };
        let containers = list("initContainers")
            .into_iter()
            .map(|c| (c, true))
            .chain(list("containers").into_iter().map(|c| (c, false)))
            .collect();
        Self {
            name: json::opt_str(pod, "/metadata/name").unwrap_or_default().to_string(),
            namespace: json::opt_str(pod, "/metadata/namespace")
                .unwrap_or("default")
                .to_string(),
            uid: json::opt_str(pod, "/metadata/uid").unwrap_or_default().to_string(),
            spec,
            labels: json::get(pod, "/metadata/labels"),
            containers,
        }
    }

    /// `name_namespace(uid)` as the kubelet formats a pod.
    fn format(&self) -> String {
        format!("{}_{}({})", self.name, self.namespace, self.uid)
    }

    fn klog(&self, message: &str, container: Option<&str>) -> String {
        match container {
            Some(c) => format!(
                "{message:?} pod=\"{}/{}\" containerName={c:?}",
                self.namespace, self.name
            ),
            None => format!("{message:?} pod=\"{}/{}\"", self.namespace, self.name),
        }
    }

    fn host_network(&self) -> bool {
        json::bool(self.spec, "/hostNetwork").unwrap_or(false)
    }

    fn pod_sc(&self) -> Option<&'a Value> {
        self.spec.get("securityContext")
    }
}

fn name_of(c: &Value) -> String {
    json::opt_str(c, "/name").unwrap_or_default().to_string()
}

/// A container's effective HostProcess flag (container value, else the pod's).
fn host_process_of(pod: &PodView<'_>, c: &Value) -> bool {
    json::bool(c, "/securityContext/windowsOptions/hostProcess")
        .or_else(|| {
            pod.pod_sc()
                .and_then(|sc| json::bool(sc, "/windowsOptions/hostProcess"))
        })
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// The decision.

fn rejected(reason: &str, message: &str, rule: &'static str) -> PodFate {
    PodFate::Rejected {
        reason: reason.to_string(),
        message: format!("Pod was rejected: {message}"),
        rule,
    }
}

/// What the node's kubelet and runtime do with `pod` (a whole Pod object as JSON).
/// `runtime_class_handler` is the handler of the pod's RuntimeClass, if it names one.
pub fn plan(profile: &NodeProfile, pod: &Value, catalogue: &Catalogue, runtime_class_handler: Option<&str>) -> PodFate {
    let view = PodView::new(pod);
    if let Some(v) = admission(profile, &view) {
        return v;
    }
    let windows = profile.is_windows();
    let mut kubelet_log = Vec::new();
    let mut warning_events = Vec::new();

    // HostProcess (SEC-HOSTPROCESS): known to kubelets from 1.22 on.
    let hp_flags: Vec<bool> = view.containers.iter().map(|(c, _)| host_process_of(&view, c)).collect();
    let wants_host_process = windows && profile.kubelet >= (1, 22) && hp_flags.iter().any(|b| *b);
    let host_process = wants_host_process && profile.supports_host_process();
    if wants_host_process && !host_process {
        kubelet_log.push(view.klog(
            &format!(
                "HostProcess containers are not supported on this node (they need Kubernetes >= 1.23 and containerd >= 1.6; the node runs kubelet {} with {}): running the pod's containers as normal containers",
                profile.kubelet_version, profile.container_runtime
            ),
            None,
        ));
    }

    if let Some(v) = sandbox(profile, &view, catalogue, runtime_class_handler, host_process) {
        return v;
    }
    let isolation = match runtime_class_handler {
        Some(HYPERV_HANDLER) if profile.supports_hyperv() => Isolation::HyperV,
        _ => Isolation::Process,
    };

    let host_network = if windows {
        if view.host_network() && !host_process {
            kubelet_log.push(view.klog(
                "hostNetwork is ignored for Windows pods without HostProcess containers: the pod gets a pod network address",
                None,
            ));
        }
        host_process && view.host_network()
    } else {
        view.host_network()
    };

    if windows {
        linux_only_pod_fields(&view, &mut kubelet_log);
    }

    let mut init_containers = Vec::new();
    let mut containers = Vec::new();
    for (c, init) in &view.containers {
        let cp = container_plan(
            profile,
            &view,
            catalogue,
            c,
            Mode {
                isolation,
                host_process,
                host_network,
            },
            (&mut kubelet_log, &mut warning_events),
        );
        if *init {
            init_containers.push(cp);
        } else {
            containers.push(cp);
        }
    }
    PodFate::Proceed(PodPlan {
        init_containers,
        containers,
        host_network,
        host_process,
        isolation,
        kubelet_log,
        warning_events,
    })
}

fn admission(profile: &NodeProfile, view: &PodView<'_>) -> Option<PodFate> {
    let node_os = profile.os.as_str();
    // rejectPodAdmissionBasedOnOSSelector: the pod *label*, not its nodeSelector.
    if profile.kubelet >= (1, 23)
        && let Some(os) = view
            .labels
            .and_then(|l| l.get("kubernetes.io/os"))
            .and_then(Value::as_str)
        && os != node_os
    {
        return Some(rejected(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
            "SCHED-POD-OS",
        ));
    }
    // rejectPodAdmissionBasedOnOSField.
    if profile.kubelet >= (1, 24)
        && let Some(os) = json::opt_str(view.spec, "/os/name")
        && os != node_os
    {
        return Some(rejected(
            "PodOSNotSupported",
            "Failed to admit pod as the OS field doesn't match node OS",
            "SCHED-POD-OS",
        ));
    }
    if profile.is_windows() && profile.kubelet >= (1, 22) {
        let flags: Vec<bool> = view.containers.iter().map(|(c, _)| host_process_of(view, c)).collect();
        if flags.iter().any(|b| *b) && !flags.iter().all(|b| *b) {
            return Some(rejected(
                "HostProcessContainersMixed",
                "pod must not contain both HostProcess and non-HostProcess containers",
                "SEC-HOSTPROCESS",
            ));
        }
    }
    None
}

fn sandbox_failure(message: String, rule: &'static str) -> Option<PodFate> {
    Some(PodFate::SandboxFails { message, rule })
}

fn sandbox(
    profile: &NodeProfile,
    view: &PodView<'_>,
    catalogue: &Catalogue,
    handler: Option<&str>,
    host_process: bool,
) -> Option<PodFate> {
    let windows = profile.is_windows();
    // Volumes are set up before the sandbox is created.
    if windows {
        let memory_volume = view
            .spec
            .get("volumes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| json::opt_str(v, "/emptyDir/medium") == Some("Memory"));
        if let Some(vol) = memory_volume {
            return sandbox_failure(
                format!(
                    "MountVolume.SetUp failed for volume {:?} : emptyDir medium \"Memory\" (tmpfs) is not supported on Windows nodes",
                    json::opt_str(vol, "/name").unwrap_or_default()
                ),
                "STO-EMPTYDIR-MEMORY",
            );
        }
    }
    // generatePodSandboxWindowsConfig.
    if host_process && !view.host_network() {
        return sandbox_failure(
            format!(
                "Failed to generate sandbox config for pod {:?}: hostNetwork is required if Pod contains HostProcess containers",
                view.format()
            ),
            "SEC-HOSTPROCESS",
        );
    }
    // The runtime handler of the RuntimeClass.
    if let Some(h) = handler.filter(|h| !h.is_empty()) {
        let rule = if h == HYPERV_HANDLER {
            "VER-HYPERV"
        } else {
            "SCHED-RUNTIMECLASS"
        };
        match profile.runtime {
            RuntimeKind::Docker if h != "docker" => {
                return sandbox_failure(
                    format!(
                        "Failed to create pod sandbox: rpc error: code = Unknown desc = RuntimeHandler {h:?} not supported"
                    ),
                    rule,
                );
            }
            RuntimeKind::Docker => {}
            RuntimeKind::Containerd => {
                let known = if windows {
                    h == PROCESS_HANDLER || (h == HYPERV_HANDLER && profile.supports_hyperv())
                } else {
                    h == "runc"
                };
                if !known {
                    return sandbox_failure(
                        format!(
                            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for {h:?} is configured"
                        ),
                        rule,
                    );
                }
            }
        }
    }
    let isolation = match handler {
        Some(HYPERV_HANDLER) if profile.supports_hyperv() => Isolation::HyperV,
        _ => Isolation::Process,
    };
    // dockershim has no host network on Windows (NET-HOSTNETWORK).
    if windows && !host_process && view.host_network() && profile.runtime == RuntimeKind::Docker {
        return sandbox_failure(
            format!(
                "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod {:?}: Error response from daemon: network host not found",
                view.name
            ),
            "NET-HOSTNETWORK",
        );
    }
    // HostProcess sandboxes use the host's network and skip the pause image
    // (VER-HOSTPROCESS-IMAGE-EXEMPT). containerd sets up the pod network before it starts the
    // sandbox container; dockershim starts the container first.
    if host_process {
        return None;
    }
    let network = pod_network(profile, view);
    let pause = || pause_image(profile, view, catalogue, isolation);
    let infra = match profile.runtime {
        RuntimeKind::Containerd => network.or_else(pause),
        RuntimeKind::Docker => pause().or(network),
    };
    infra.or_else(|| sandbox_user(profile, view, catalogue))
}

/// SEC-RUNASUSERNAME-INVALID: since kubelet 1.22 the CRI carries the pod-level
/// `windowsOptions.runAsUserName` to the sandbox, and containerd ≥ 1.6 starts the sandbox
/// (pause) process as that user (E2E/security_context: "Containerd 1.6+ is known to do this").
/// An account the pause image does not have fails the sandbox with HCS's logon error, and the
/// pod stays Pending. Docker and older containerd ignore the sandbox user.
fn sandbox_user(profile: &NodeProfile, view: &PodView<'_>, catalogue: &Catalogue) -> Option<PodFate> {
    if !profile.is_windows()
        || profile.runtime != RuntimeKind::Containerd
        || profile.runtime_version < (1, 6)
        || profile.kubelet < (1, 22)
    {
        return None;
    }
    let user = view
        .pod_sc()
        .and_then(|sc| json::opt_str(sc, "/windowsOptions/runAsUserName"))
        .filter(|u| !u.is_empty())?;
    let pause_user = catalogue.lookup(&profile.pause_image).user;
    if windows_account_exists(user, pause_user.as_deref()) {
        return None;
    }
    let sandbox_id = container_id(&view.uid, "POD");
    sandbox_failure(
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container task {sandbox_id:?}: hcs::System::CreateProcess {sandbox_id}: {WIN_LOGON_FAILURE}: unknown"
        ),
        "SEC-RUNASUSERNAME-INVALID",
    )
}

/// The pause image (VER-PAUSE-IMAGE): it must run on the node. A node with
/// [`Fault::PauseImageWrongBuild`] has a sandbox image built for another Windows build
/// ([`NodeProfile::pause_image_build`]).
fn pause_image(
    profile: &NodeProfile,
    view: &PodView<'_>,
    catalogue: &Catalogue,
    isolation: Isolation,
) -> Option<PodFate> {
    let windows = profile.is_windows();
    let pause = catalogue.lookup(&profile.pause_image);
    let runs = pause.platforms.iter().any(|p| {
        let mut p = p.clone();
        if p.os == Os::Windows
            && let Some(build) = profile.pause_image_build()
        {
            p.build = Some(build);
        }
        platform_runs(profile, &p, isolation, false)
    });
    if runs {
        return None;
    }
    let sandbox_id = container_id(&view.uid, "POD");
    let message = if !windows {
        let fq = Reference::parse(&profile.pause_image).fully_qualified();
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image {fq:?}: failed to pull image {fq:?}: failed to pull and unpack image {fq:?}: no match for platform in manifest: not found"
        )
    } else if profile.runtime == RuntimeKind::Docker {
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod {:?}: Error response from daemon: container {sandbox_id} encountered an error during CreateContainer: failure in a Windows system call: {HCS_IMAGE_MISMATCH} (0xc0370101)",
            view.name
        )
    } else {
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to start sandbox container for pod {:?}: hcs::CreateComputeSystem {sandbox_id}: {HCS_IMAGE_MISMATCH} (0xc0370101)",
            view.name
        )
    };
    sandbox_failure(message, "VER-PAUSE-IMAGE")
}

/// The pod network of a Windows pod that is not HostProcess: the flannel CNI plugin reads
/// flanneld's subnet file, then delegates to win-bridge/win-overlay, which looks up the HNS
/// network by name. [`Fault::FlannelSubnetEnvMissing`] and [`Fault::FlanneldWaiting`] leave
/// no subnet file (NET-FLANNEL-SUBNET-ENV); [`Fault::HnsNetworkMissing`] no HNS network
/// (NET-HNS-NETWORK-PRESENT). The plugin's error reaches the event as containerd (libcni's
/// `plugin type=… name=… failed (add)`) or dockershim (`networkPlugin cni failed …`) wraps it;
/// dockershim-era plugins did not yet prefix `loadFlannelSubnetEnv failed` / `failed to
/// delegate add`.
fn pod_network(profile: &NodeProfile, view: &PodView<'_>) -> Option<PodFate> {
    if !profile.is_windows() {
        return None;
    }
    let flannel = profile.network_mode.flannel()?;
    let docker = profile.runtime == RuntimeKind::Docker;
    let (error, rule) =
        if profile.has_fault(Fault::FlannelSubnetEnvMissing) || profile.has_fault(Fault::FlanneldWaiting) {
            let open = format!("open {WINDOWS_SUBNET_ENV}: {WIN_FILE_NOT_FOUND}");
            let error = if docker {
                open
            } else {
                format!("loadFlannelSubnetEnv failed: {open}")
            };
            (error, "NET-FLANNEL-SUBNET-ENV")
        } else if profile.has_fault(Fault::HnsNetworkMissing) {
            let net = flannel.network;
            let lookup = format!("error while GETHNSNewtorkByName({net}): Network {net} not found");
            let error = if docker {
                lookup
            } else {
                format!("failed to delegate add: {lookup}")
            };
            (error, "NET-HNS-NETWORK-PRESENT")
        } else {
            return None;
        };
    let sandbox_id = container_id(&view.uid, "POD");
    let message = if docker {
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up sandbox container {sandbox_id:?} network for pod {:?}: networkPlugin cni failed to set up pod \"{}_{}\" network: {error}",
            view.name, view.name, view.namespace
        )
    } else {
        format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox {sandbox_id:?}: plugin type=\"flannel\" name={:?} failed (add): {error}",
            flannel.network
        )
    };
    sandbox_failure(message, rule)
}

/// Whether a platform entry runs on the node (OS, architecture and, on Windows, build).
fn platform_runs(profile: &NodeProfile, p: &ImagePlatform, isolation: Isolation, host_process: bool) -> bool {
    if p.os != profile.os || !p.arch.eq_ignore_ascii_case(&profile.arch) {
        return false;
    }
    if p.os == Os::Linux || host_process {
        return true;
    }
    match (p.build, isolation) {
        (None, _) => true,
        (Some(b), Isolation::Process) => profile.process_isolation_runs(b),
        (Some(b), Isolation::HyperV) => profile.hyperv_isolation_runs(b),
    }
}

/// Linux-only pod-level fields on a Windows node: ignored and logged (SEC-LINUX-FIELDS-NO-OS).
fn linux_only_pod_fields(view: &PodView<'_>, log: &mut Vec<String>) {
    if let Some(sc) = view.pod_sc() {
        for (field, shown) in [
            ("runAsUser", "RunAsUser"),
            ("runAsGroup", "RunAsGroup"),
            ("seLinuxOptions", "SELinuxOptions"),
            ("seccompProfile", "SeccompProfile"),
            ("fsGroup", "FSGroup"),
            ("fsGroupChangePolicy", "FSGroupChangePolicy"),
            ("sysctls", "Sysctls"),
            ("supplementalGroups", "SupplementalGroups"),
        ] {
            if json::present(sc, &format!("/{field}")) {
                log.push(view.klog(
                    &format!("Windows pod does not support PodSecurityContext.{shown}, ignoring it"),
                    None,
                ));
            }
        }
    }
    for (field, shown) in [
        ("hostPID", "HostPID"),
        ("hostIPC", "HostIPC"),
        ("shareProcessNamespace", "ShareProcessNamespace"),
    ] {
        if json::bool(view.spec, &format!("/{field}")) == Some(true) {
            log.push(view.klog(&format!("Windows pod does not support {shown}, ignoring it"), None));
        }
    }
}

/// Linux-only container fields on a Windows node: ignored and logged; `privileged` also gets a
/// Warning event.
fn linux_only_container_fields(
    view: &PodView<'_>,
    c: &Value,
    name: &str,
    log: &mut Vec<String>,
    events: &mut Vec<(String, String)>,
) {
    let Some(sc) = c.get("securityContext") else {
        return;
    };
    for (field, text) in [
        (
            "runAsUser",
            "Windows container does not support SecurityContext.RunAsUser, please use SecurityContext.WindowsOptions",
        ),
        (
            "seLinuxOptions",
            "Windows container does not support SecurityContext.SELinuxOptions, please use SecurityContext.WindowsOptions",
        ),
        (
            "runAsGroup",
            "Windows container does not support SecurityContext.RunAsGroup",
        ),
        (
            "seccompProfile",
            "Windows container does not support SecurityContext.SeccompProfile, ignoring it",
        ),
        (
            "capabilities",
            "Windows container does not support SecurityContext.Capabilities, ignoring it",
        ),
        (
            "allowPrivilegeEscalation",
            "Windows container does not support SecurityContext.AllowPrivilegeEscalation, ignoring it",
        ),
        (
            "procMount",
            "Windows container does not support SecurityContext.ProcMount, ignoring it",
        ),
    ] {
        if json::present(sc, &format!("/{field}")) {
            log.push(view.klog(text, Some(name)));
        }
    }
    // STO-READONLY-ROOTFS.
    if json::bool(sc, "/readOnlyRootFilesystem") == Some(true) {
        log.push(view.klog(
            "Windows container does not support SecurityContext.ReadOnlyRootFilesystem, ignoring it",
            Some(name),
        ));
    }
    // SEC-PRIVILEGED.
    if json::bool(sc, "/privileged") == Some(true) {
        log.push(view.klog(
            "Windows container does not support SecurityContext.Privileged, ignoring it",
            Some(name),
        ));
        events.push((
            "PrivilegedNotSupported".into(),
            format!(
                "Windows does not support privileged mode: securityContext.privileged of container {name:?} is ignored; use a HostProcess container instead"
            ),
        ));
    }
}

#[derive(Clone, Copy)]
struct Mode {
    isolation: Isolation,
    host_process: bool,
    host_network: bool,
}

fn pull_failure(profile: &NodeProfile, image: &str, info: &ImageInfo) -> ContainerOutcome {
    let same_os: Vec<&ImagePlatform> = info.platforms.iter().filter(|p| p.os == profile.os).collect();
    let rule = if same_os.is_empty() || !same_os.iter().any(|p| p.arch.eq_ignore_ascii_case(&profile.arch)) {
        "SCHED-NODESELECTOR"
    } else {
        "VER-BUILD-MATCH"
    };
    let message = match profile.runtime {
        RuntimeKind::Containerd => format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image {:?}: no match for platform in manifest: not found",
            Reference::parse(image).fully_qualified()
        ),
        RuntimeKind::Docker => {
            let platform = match (profile.os, profile.build) {
                (Os::Windows, Some(b)) => format!("windows/{} 10.0.{b}", profile.arch),
                _ => format!("{}/{}", profile.os.as_str(), profile.arch),
            };
            format!(
                "rpc error: code = Unknown desc = Error response from daemon: no matching manifest for {platform} in the manifest list entries"
            )
        }
    };
    ContainerOutcome::PullFails { message, rule }
}

/// Why a pulled single manifest cannot start, if it cannot.
fn start_failure(profile: &NodeProfile, platform: &ImagePlatform, mode: Mode, cid: &str) -> Option<ContainerOutcome> {
    let containerd = profile.runtime == RuntimeKind::Containerd;
    if platform.os != profile.os {
        let message = match (profile.os, containerd) {
            (Os::Windows, true) => format!(
                "failed to create containerd task: failed to create shim task: image operating system {:?} cannot be used on this platform: operating system is not supported: unknown",
                platform.os.as_str()
            ),
            (Os::Linux, true) => "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec format error: unknown".to_string(),
            (_, false) => format!(
                "Error response from daemon: image operating system {:?} cannot be used on this platform",
                platform.os.as_str()
            ),
        };
        return Some(ContainerOutcome::StartFails {
            message,
            rule: "SCHED-NODESELECTOR",
        });
    }
    if profile.os == Os::Linux {
        if !platform.arch.eq_ignore_ascii_case(&profile.arch) {
            return Some(ContainerOutcome::StartFails {
                message: if containerd {
                    "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec format error: unknown".into()
                } else {
                    "exec format error".into()
                },
                rule: "SCHED-NODESELECTOR",
            });
        }
        return None;
    }
    if platform_runs(profile, platform, mode.isolation, mode.host_process) {
        return None;
    }
    let message = if containerd {
        format!(
            "failed to create containerd task: failed to create shim task: hcs::CreateComputeSystem {cid}: {HCS_IMAGE_MISMATCH}: unknown"
        )
    } else if profile.runtime_version >= (18, 0) {
        format!("Error response from daemon: hcsshim::CreateComputeSystem {cid}: {HCS_IMAGE_MISMATCH}")
    } else {
        format!(
            "Error response from daemon: container {cid} encountered an error during CreateContainer: failure in a Windows system call: The operating system of the container does not match the operating system of the host. (0xc0370101)"
        )
    };
    Some(ContainerOutcome::StartFails {
        message,
        rule: "VER-BUILD-MATCH",
    })
}

fn container_plan(
    profile: &NodeProfile,
    view: &PodView<'_>,
    catalogue: &Catalogue,
    c: &Value,
    mode: Mode,
    (log, events): (&mut Vec<String>, &mut Vec<(String, String)>),
) -> ContainerPlan {
    let name = name_of(c);
    let image = json::opt_str(c, "/image").unwrap_or_default().to_string();
    let windows = profile.is_windows();
    let info = catalogue.lookup(&image);

    // The effective Windows user (SEC-RUNASUSERNAME): container > pod > image > default.
    let user = windows.then(|| {
        let explicit = if profile.kubelet >= (1, 17) {
            json::opt_str(c, "/securityContext/windowsOptions/runAsUserName").or_else(|| {
                view.pod_sc()
                    .and_then(|sc| json::opt_str(sc, "/windowsOptions/runAsUserName"))
            })
        } else {
            None
        };
        explicit
            .map(str::to_string)
            .or_else(|| info.user.clone())
            .unwrap_or_else(|| WINDOWS_ROOT_USER.to_string())
    });
    if windows {
        linux_only_container_fields(view, c, &name, log, events);
    }
    let plan = |outcome| ContainerPlan {
        name: name.clone(),
        image: image.clone(),
        user: user.clone(),
        outcome,
        writes: Vec::new(),
    };

    // Pull: a manifest list is matched by platform; a single manifest is pulled as is.
    let platform = if info.manifest_list {
        match info
            .platforms
            .iter()
            .find(|p| platform_runs(profile, p, mode.isolation, mode.host_process))
        {
            Some(p) => p.clone(),
            None => return plan(pull_failure(profile, &image, &info)),
        }
    } else {
        info.platforms.first().cloned().unwrap_or(ImagePlatform {
            os: Os::Linux,
            arch: "amd64".into(),
            build: None,
        })
    };

    // Container config: runAsNonRoot against ContainerAdministrator (SEC-RUNASNONROOT-ADMIN).
    if let Some(user) = &user {
        let non_root = json::bool(c, "/securityContext/runAsNonRoot")
            .or_else(|| view.pod_sc().and_then(|sc| json::bool(sc, "/runAsNonRoot")))
            .unwrap_or(false);
        if non_root && user.eq_ignore_ascii_case(WINDOWS_ROOT_USER) {
            return plan(ContainerOutcome::ConfigError {
                message: format!(
                    "container's runAsUserName ({user}) which will be regarded as root identity and will break non-root policy (pod: {:?}, container: {name})",
                    view.format()
                ),
                rule: "SEC-RUNASNONROOT-ADMIN",
            });
        }
    }

    // Start.
    if let Some(failure) = start_failure(profile, &platform, mode, CONTAINER_ID_PLACEHOLDER) {
        return plan(failure);
    }
    // The container's process is created as the effective user (SEC-RUNASUSERNAME-INVALID): an
    // account the image does not have fails the start (StartError, exit code 128). HostProcess
    // containers run as host accounts, which the runtime validates differently.
    if let Some(user) = &user
        && !mode.host_process
        && !windows_account_exists(user, info.user.as_deref())
    {
        let cid = CONTAINER_ID_PLACEHOLDER;
        let message = match profile.runtime {
            RuntimeKind::Containerd => format!(
                "failed to start containerd task \"{cid}\": hcs::System::CreateProcess {cid}: {WIN_LOGON_FAILURE}: unknown"
            ),
            RuntimeKind::Docker => format!(
                "Error response from daemon: container {cid} encountered an error during hcsshim::System::CreateProcess: failure in a Windows system call: {WIN_LOGON_FAILURE} (0x52e)"
            ),
        };
        return plan(ContainerOutcome::StartFails {
            message,
            rule: "SEC-RUNASUSERNAME-INVALID",
        });
    }
    // Docker on Windows binds directories only (STO-SINGLE-FILE-MOUNT: W20, WSTO — "volume
    // mounts can only target a directory in the container, not an individual file").
    if windows && profile.runtime == RuntimeKind::Docker && mounts_a_file(view.spec, c) {
        return plan(ContainerOutcome::StartFails {
            message:
                "Error response from daemon: invalid mount config for type \"bind\": source path must be a directory"
                    .into(),
            rule: "STO-SINGLE-FILE-MOUNT",
        });
    }

    let ctx = ProcCtx {
        os: profile.os,
        user: user.clone(),
        linux_uid: json::get(c, "/securityContext/runAsUser")
            .or_else(|| view.pod_sc().and_then(|sc| sc.get("runAsUser")))
            .and_then(Value::as_i64),
        hostname: if mode.host_network {
            profile.name.clone()
        } else {
            json::opt_str(view.spec, "/hostname").unwrap_or(&view.name).to_string()
        },
        env: c
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                Some((
                    json::opt_str(e, "/name")?.to_string(),
                    json::opt_str(e, "/value").unwrap_or("").to_string(),
                ))
            })
            .collect(),
        limit: json::get(c, "/resources/limits/memory")
            .and_then(Quantity::from_json)
            .and_then(|q| u128::try_from(q.value()).ok()),
        node_memory: profile
            .capacity
            .get("memory")
            .and_then(|m| Quantity::parse(m))
            .and_then(|q| u128::try_from(q.value()).ok()),
        stdin: json::bool(c, "/stdin").unwrap_or(false),
        mounts: crate::node::exec::volumes::mount_points(view.spec, c, windows),
        writes: RefCell::new(Vec::new()),
    };
    let (command, args) = (string_list(c.get("command")), string_list(c.get("args")));
    // The cluster add-ons' images (kube-proxy, flanneld, CoreDNS, …) behave per node profile.
    let process = crate::node::addons::process(profile, &image, command.as_deref(), args.as_deref())
        .unwrap_or_else(|| process_of(&ctx, &info, &Reference::parse(&image).repo, command, args));
    ContainerPlan {
        writes: ctx.writes.into_inner(),
        ..plan(ContainerOutcome::Runs { process })
    }
}

/// Whether the container mounts a hostPath volume of type `File` or `FileOrCreate`: a single
/// file bound onto a file path.
fn mounts_a_file(spec: &Value, c: &Value) -> bool {
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    c.get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| json::opt_str(m, "/name"))
        .any(|name| {
            volumes.iter().any(|v| {
                json::opt_str(v, "/name") == Some(name)
                    && matches!(json::opt_str(v, "/hostPath/type"), Some("File" | "FileOrCreate"))
            })
        })
}

// ---------------------------------------------------------------------------------------------
// The process model.

/// Sleeps this long or longer count as "forever".
const FOREVER_MS: u64 = 24 * 60 * 60 * 1000;
/// How deep shells may nest (`sh -c "cmd /c …"`).
const MAX_DEPTH: usize = 8;
/// At most this many generated log lines.
const MAX_LOG_LINES: u64 = 10_000;
const MIB: u128 = 1024 * 1024;

/// What the process model needs to know about the container.
struct ProcCtx {
    os: Os,
    /// The effective Windows user.
    user: Option<String>,
    /// The effective Linux `runAsUser`.
    linux_uid: Option<i64>,
    hostname: String,
    env: BTreeMap<String, String>,
    /// The container's memory limit in bytes.
    limit: Option<u128>,
    node_memory: Option<u128>,
    stdin: bool,
    /// The container's mounts: where a redirection writes, and which refuse it.
    mounts: Vec<crate::node::exec::volumes::MountPoint>,
    /// What the process wrote so far (redirections to files).
    writes: RefCell<Vec<FileWrite>>,
}

impl ProcCtx {
    fn windows(&self) -> bool {
        self.os == Os::Windows
    }

    /// The absolute path a redirection target names (relative to `/` or `C:\\`).
    fn target_path(&self, target: &str) -> String {
        crate::node::exec::volumes::absolute(target, self.windows())
    }

    /// Why writing `target` fails (the shell's message), if it does: a read-only mount
    /// (STO-READONLY-VOLUME: cmd answers `Access is denied.`, as upstream's e2e asserts).
    fn refused_write(&self, shell: Shell, target: &str) -> Option<String> {
        use crate::node::exec::volumes::{WriteTarget, Writer, resolve};
        let full = self.target_path(target);
        let writer = Writer {
            pod_uid: "",
            container: "",
            node: "",
            windows: self.windows(),
            host_process: false,
        };
        if resolve(&self.mounts, &full, writer) != WriteTarget::ReadOnly {
            return None;
        }
        Some(match (shell, self.windows()) {
            (Shell::Cmd, _) => "Access is denied.".into(),
            (Shell::Ps, _) => format!("out-file : Access to the path '{full}' is denied."),
            (Shell::Sh, false) => format!("sh: can't create {target}: Read-only file system"),
            (Shell::Sh, true) => format!("sh: can't create {target}: Permission denied"),
        })
    }

    /// Records that a statement's output lines went to `target`.
    fn record_write(&self, target: &str, lines: &[String], append: bool) {
        let eol = if self.windows() { "\r\n" } else { "\n" };
        let data: String = lines.iter().map(|l| format!("{l}{eol}")).collect();
        self.writes.borrow_mut().push(FileWrite {
            path: self.target_path(target),
            data: data.into_bytes(),
            append,
        });
    }

    fn var(&self, name: &str) -> Option<String> {
        if let Some(v) = self.env.get(name) {
            return Some(v.clone());
        }
        match (self.os, name.to_ascii_uppercase().as_str()) {
            (_, "HOSTNAME") => Some(self.hostname.clone()),
            (Os::Windows, "COMPUTERNAME") => Some(self.hostname.to_ascii_uppercase()),
            (Os::Windows, "USERNAME") => self
                .user
                .as_deref()
                .map(|u| u.rsplit('\\').next().unwrap_or(u).to_string()),
            (Os::Linux, "HOME") => Some(if self.linux_uid.unwrap_or(0) == 0 { "/root" } else { "/" }.into()),
            _ => None,
        }
    }

    /// What `whoami` prints (and its exit code).
    fn whoami(&self) -> (i32, String) {
        match self.os {
            Os::Windows => {
                let user = self.user.as_deref().unwrap_or(WINDOWS_ROOT_USER);
                let shown = if user.contains('\\') {
                    user.to_ascii_lowercase()
                } else {
                    format!("user manager\\{}", user.to_ascii_lowercase())
                };
                (0, shown)
            }
            Os::Linux => match self.linux_uid {
                None | Some(0) => (0, "root".into()),
                Some(uid) => (1, format!("whoami: unknown uid {uid}")),
            },
        }
    }
}

/// How a simple command or script ended, before it becomes a [`Process`].
#[derive(Debug, Clone, PartialEq)]
enum Eval {
    /// Finished with `code` after `ms`; `exit` when it ends the whole script.
    Ran {
        code: i32,
        ms: u64,
        log: Vec<String>,
        exit: bool,
    },
    Forever {
        log: Vec<String>,
    },
    /// Cannot be interpreted: modelled as running (a server we cannot read).
    Unknown,
    /// A terminal memory outcome (OOM kill or failed allocation).
    Memory(Process),
}

fn ran(code: i32, ms: u64, log: Vec<String>) -> Eval {
    Eval::Ran {
        code,
        ms,
        log,
        exit: false,
    }
}

/// Which shell's syntax a script uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shell {
    /// POSIX sh (also used for argv executed directly).
    Sh,
    Cmd,
    Ps,
}

/// `C:\Windows\System32\cmd.exe` → `cmd`.
fn program(arg: &str) -> String {
    let base = arg.rsplit(['/', '\\']).next().unwrap_or(arg).to_ascii_lowercase();
    base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
}

/// The entrypoint an image prepends to `args` when the container gives no `command`.
fn entrypoint(repo: &str, os: Os) -> Option<Vec<String>> {
    let last = repo.rsplit('/').next().unwrap_or(repo);
    match last {
        "agnhost" => Some(vec!["/agnhost".into()]),
        "busybox" if repo.contains("e2e-test-images") && os == Os::Windows => {
            Some(vec!["cmd.exe".into(), "/s".into(), "/c".into()])
        }
        "pause" => Some(vec!["/pause".into()]),
        "resource-consumer" => Some(vec!["/consumer".into()]),
        _ => None,
    }
}

fn process_of(
    ctx: &ProcCtx,
    info: &ImageInfo,
    repo: &str,
    command: Option<Vec<String>>,
    args: Option<Vec<String>>,
) -> Process {
    let command = command.filter(|c| !c.is_empty());
    let args = args.unwrap_or_default();
    let argv = match (command, entrypoint(repo, ctx.os)) {
        (Some(mut c), _) => {
            c.extend(args);
            c
        }
        (None, Some(mut e)) if !args.is_empty() || info.known => {
            e.extend(args);
            e
        }
        (None, _) if !args.is_empty() => args,
        (None, _) => {
            // The image's default command.
            if info.long_running || ctx.stdin {
                return Process::LongRunning { log: Vec::new() };
            }
            return Process::Exits {
                code: 0,
                after_ms: 0,
                log: Vec::new(),
            };
        }
    };
    finish(run_argv(ctx, &argv, 0))
}

fn finish(eval: Eval) -> Process {
    match eval {
        Eval::Ran { ms, log, .. } if ms >= FOREVER_MS => Process::LongRunning { log },
        Eval::Ran { code, ms, log, .. } => Process::Exits {
            code,
            after_ms: ms,
            log,
        },
        Eval::Forever { log } => Process::LongRunning { log },
        Eval::Unknown => Process::LongRunning { log: Vec::new() },
        Eval::Memory(p) => p,
    }
}

/// Runs an argv as the runtime executes it.
fn run_argv(ctx: &ProcCtx, argv: &[String], depth: usize) -> Eval {
    let Some(first) = argv.first() else {
        return ran(0, 0, Vec::new());
    };
    if depth > MAX_DEPTH {
        return Eval::Unknown;
    }
    let rest = argv.get(1..).unwrap_or_default();
    let interactive = || {
        if ctx.stdin {
            Eval::Forever { log: Vec::new() }
        } else {
            ran(0, 0, Vec::new())
        }
    };
    match program(first).as_str() {
        "sh" | "bash" | "ash" | "dash" | "zsh" | "ksh" => {
            let mut i = 0;
            while let Some(a) = rest.get(i) {
                if a == "--" || !a.starts_with('-') {
                    break;
                }
                if a.len() > 1
                    && a.get(1..)
                        .is_some_and(|f| f.chars().all(|c| c.is_ascii_alphabetic()) && f.contains('c'))
                {
                    return match rest.get(i + 1) {
                        Some(script) => run_script(ctx, Shell::Sh, script, depth + 1),
                        None => Eval::Ran {
                            code: 2,
                            ms: 0,
                            log: vec![format!("{}: -c requires an argument", program(first))],
                            exit: true,
                        },
                    };
                }
                i += 1;
            }
            if rest.get(i).is_some() {
                // A script file we cannot read.
                Eval::Unknown
            } else {
                interactive()
            }
        }
        "busybox" if !rest.is_empty() => run_argv(ctx, rest, depth + 1),
        "cmd" => {
            let switch = rest.iter().position(|a| {
                let l = a.to_ascii_lowercase();
                l.starts_with('/') && (l.ends_with("/c") || l.ends_with("/k"))
            });
            match switch {
                Some(i) => {
                    let line = rest.get(i + 1..).unwrap_or_default().join(" ");
                    let line = line.trim();
                    // `/s` (and the common case without it) strip one pair of outer quotes.
                    let line = line
                        .strip_prefix('"')
                        .and_then(|l| l.strip_suffix('"'))
                        .filter(|l| !l.contains('"'))
                        .unwrap_or(line);
                    run_script(ctx, Shell::Cmd, line, depth + 1)
                }
                None => interactive(),
            }
        }
        "powershell" | "pwsh" => {
            let mut i = 0;
            while let Some(a) = rest.get(i) {
                let l = a.to_ascii_lowercase();
                match l.as_str() {
                    "-command" | "-c" | "/command" | "/c" => {
                        let script = rest.get(i + 1..).unwrap_or_default().join(" ");
                        return run_script(ctx, Shell::Ps, &script, depth + 1);
                    }
                    "-file" | "-f" | "-encodedcommand" | "-ec" | "-e" => return Eval::Unknown,
                    "-executionpolicy" | "-ep" | "-ex" | "-windowstyle" | "-outputformat" | "-inputformat"
                    | "-workingdirectory" | "-configurationname" | "-settingsfile" | "-version" => i += 2,
                    _ if l.starts_with('-') => i += 1,
                    _ => {
                        let script = rest.get(i..).unwrap_or_default().join(" ");
                        return run_script(ctx, Shell::Ps, &script, depth + 1);
                    }
                }
            }
            interactive()
        }
        _ => run_tokens(ctx, Shell::Sh, argv, &argv.join(" "), false, depth),
    }
}

/// How a statement joins the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    Seq,
    And,
    Or,
}

/// Splits a script into statements at unquoted separators (`;`, newlines, `&&`, `||`, `&`),
/// keeping bracketed groups whole.
fn statements(shell: Shell, script: &str) -> Vec<(Join, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut join = Join::Seq;
    let mut quote: Option<char> = None;
    let mut depth = 0i32;
    let mut chars = script.chars().peekable();
    let escape = match shell {
        Shell::Sh => '\\',
        Shell::Cmd => '^',
        Shell::Ps => '`',
    };
    while let Some(ch) = chars.next() {
        if let Some(q) = quote {
            cur.push(ch);
            if ch == q {
                quote = None;
            } else if ch == escape
                && q == '"'
                && shell != Shell::Cmd
                && let Some(n) = chars.next()
            {
                cur.push(n);
            }
            continue;
        }
        match ch {
            c if c == escape => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '"' => {
                quote = Some('"');
                cur.push(ch);
            }
            '\'' if shell != Shell::Cmd => {
                quote = Some('\'');
                cur.push(ch);
            }
            '(' | '{' => {
                depth = depth.saturating_add(1);
                cur.push(ch);
            }
            ')' | '}' => {
                depth = depth.saturating_sub(1);
                cur.push(ch);
            }
            _ if depth > 0 => cur.push(ch),
            ';' if shell != Shell::Cmd => {
                out.push((join, std::mem::take(&mut cur)));
                join = Join::Seq;
            }
            '\n' | '\r' => {
                out.push((join, std::mem::take(&mut cur)));
                join = Join::Seq;
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                out.push((join, std::mem::take(&mut cur)));
                join = Join::And;
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                out.push((join, std::mem::take(&mut cur)));
                join = Join::Or;
            }
            '&' if shell != Shell::Ps && !cur.ends_with('>') && chars.peek() != Some(&'>') => {
                out.push((join, std::mem::take(&mut cur)));
                join = Join::Seq;
            }
            _ => cur.push(ch),
        }
    }
    out.push((join, cur));
    out.into_iter().filter(|(_, s)| !s.trim().is_empty()).collect()
}

fn run_script(ctx: &ProcCtx, shell: Shell, script: &str, depth: usize) -> Eval {
    if depth > MAX_DEPTH {
        return Eval::Unknown;
    }
    let mut log = Vec::new();
    let mut ms: u64 = 0;
    let mut last = 0;
    for (join, stmt) in statements(shell, script) {
        match join {
            Join::And if last != 0 => continue,
            Join::Or if last == 0 => continue,
            _ => {}
        }
        // cmd keeps the blanks before `&` (`echo a & echo b` prints "a ").
        let stmt = if shell == Shell::Cmd {
            stmt.trim_start()
        } else {
            stmt.trim()
        };
        let keyword = stmt
            .split(|c: char| c.is_whitespace() || c == '(' || c == '{')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let result = match keyword.as_str() {
            "while" | "until" | "do" | "goto" => Eval::Forever { log: Vec::new() },
            "for" if stmt.replace(' ', "").starts_with("for(;;)") => Eval::Forever { log: Vec::new() },
            "for" | "foreach" | "if" | "case" | "function" | "select" | "trap" => Eval::Unknown,
            _ if stmt.starts_with(':') && shell == Shell::Cmd => ran(last, 0, Vec::new()),
            _ if stmt.starts_with('(') || stmt.starts_with('{') => Eval::Unknown,
            _ => run_statement(ctx, shell, stmt, last, depth),
        };
        match result {
            Eval::Ran {
                code,
                ms: m,
                log: l,
                exit,
            } => {
                ms = ms.saturating_add(m);
                log.extend(l);
                last = code;
                if exit || ms >= FOREVER_MS {
                    return Eval::Ran {
                        code,
                        ms,
                        log,
                        exit: true,
                    };
                }
            }
            Eval::Forever { log: l } => {
                log.extend(l);
                return Eval::Forever { log };
            }
            Eval::Unknown => return Eval::Forever { log },
            Eval::Memory(p) => return Eval::Memory(after(p, ms, log)),
        }
    }
    ran(last, ms, log)
}

/// A memory outcome that happens after `ms` of earlier work and its log.
fn after(p: Process, ms: u64, mut log: Vec<String>) -> Process {
    match p {
        Process::OomKilled { after_ms } => Process::OomKilled {
            after_ms: after_ms.saturating_add(ms),
        },
        Process::AllocationFails { after_ms, log: l } => {
            log.extend(l);
            Process::AllocationFails {
                after_ms: after_ms.saturating_add(ms),
                log,
            }
        }
        Process::Holding { bytes, log: l } => {
            log.extend(l);
            Process::Holding { bytes, log }
        }
        other => other,
    }
}

/// Splits a statement at unquoted single `|`.
fn pipeline(shell: Shell, stmt: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quote: Option<char> = None;
    for ch in stmt.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (None, '"') => quote = Some('"'),
            (None, '\'') if shell != Shell::Cmd => quote = Some('\''),
            (None, '|') => {
                parts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = parts.last_mut() {
            last.push(ch);
        }
    }
    parts
}

fn run_statement(ctx: &ProcCtx, shell: Shell, stmt: &str, last: i32, depth: usize) -> Eval {
    let parts = pipeline(shell, stmt);
    if parts.len() > 1 {
        // Each stage's output feeds the next: only the exit status of the last one is known.
        let mut ms: u64 = 0;
        let mut code = 0;
        for part in &parts {
            match run_statement(ctx, shell, part.trim(), last, depth + 1) {
                Eval::Ran { code: c, ms: m, .. } => {
                    ms = ms.saturating_add(m);
                    code = c;
                }
                other => return other,
            }
        }
        return ran(code, ms, Vec::new());
    }
    let (tokens, redirect) = tokenize(ctx, shell, stmt);
    let raw = match shell {
        Shell::Cmd => expand_cmd(ctx, stmt),
        _ => stmt.to_string(),
    };
    let file = match &redirect {
        Some(Redirect::File { target, append }) => Some((target.clone(), *append)),
        _ => None,
    };
    // The shell opens the file before it runs the command: a read-only mount stops it.
    if let Some((target, _)) = &file
        && let Some(message) = ctx.refused_write(shell, target)
    {
        return ran(1, 0, vec![message]);
    }
    let eval = run_tokens(ctx, shell, &tokens, &raw, redirect == Some(Redirect::Discard), depth);
    let eval = match (file, eval) {
        (Some((target, append)), Eval::Ran { code, ms, log, exit }) => {
            ctx.record_write(&target, &log, append);
            Eval::Ran {
                code,
                ms,
                log: Vec::new(),
                exit,
            }
        }
        (_, other) => other,
    };
    match eval {
        Eval::Ran { code, ms, log, exit } if tokens.first().is_some_and(|t| program(t) == "exit") => {
            // `exit` without a number keeps the last status (sh, cmd `exit /b`).
            let explicit = tokens.iter().skip(1).any(|t| t.parse::<i64>().is_ok());
            Eval::Ran {
                code: if explicit { code } else { last },
                ms,
                log,
                exit,
            }
        }
        other => other,
    }
}

/// `%VAR%` expansion of cmd (unknown variables stay as written).
fn expand_cmd(ctx: &ProcCtx, s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find('%') {
        out.push_str(rest.get(..start).unwrap_or_default());
        let after_pct = rest.get(start + 1..).unwrap_or_default();
        match after_pct.find('%') {
            Some(end) => {
                let name = after_pct.get(..end).unwrap_or_default();
                match ctx.var(name).filter(|_| !name.is_empty()) {
                    Some(v) => out.push_str(&v),
                    None => {
                        out.push('%');
                        out.push_str(name);
                        out.push('%');
                    }
                }
                rest = after_pct.get(end + 1..).unwrap_or_default();
            }
            None => {
                out.push('%');
                rest = after_pct;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where a statement's standard output goes instead of the container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Redirect {
    /// `/dev/null`, `NUL`, `$null`.
    Discard,
    /// A file (`>`, or `>>` to append).
    File { target: String, append: bool },
}

/// Splits a simple command into words (quotes removed, variables expanded) and says where its
/// standard output is redirected, if it is.
fn tokenize(ctx: &ProcCtx, shell: Shell, stmt: &str) -> (Vec<String>, Option<Redirect>) {
    let text = match shell {
        Shell::Cmd => expand_cmd(ctx, stmt),
        _ => stmt.to_string(),
    };
    let mut tokens = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut quote: Option<char> = None;
    let mut redirected: Option<Redirect> = None;
    let mut chars = text.chars().peekable();
    let escape = match shell {
        Shell::Sh => Some('\\'),
        Shell::Ps => Some('`'),
        Shell::Cmd => Some('^'),
    };
    while let Some(ch) = chars.next() {
        match quote {
            Some(q) if ch == q => {
                quote = None;
                continue;
            }
            Some('\'') => {
                cur.push(ch);
                continue;
            }
            _ => {}
        }
        if Some(ch) == escape && (quote.is_none() || shell != Shell::Cmd) {
            if let Some(n) = chars.next() {
                cur.push(match (shell, n) {
                    (Shell::Ps, 'n') => '\n',
                    (Shell::Ps, 't') => '\t',
                    _ => n,
                });
                has = true;
            }
            continue;
        }
        if ch == '$' && shell != Shell::Cmd && quote != Some('\'') {
            let mut name = String::new();
            if shell == Shell::Ps {
                // `$env:NAME`; other PowerShell variables stay as written.
                let mut look = chars.clone();
                let prefix: String = look.by_ref().take(4).collect();
                if prefix.eq_ignore_ascii_case("env:") {
                    for _ in 0..4 {
                        chars.next();
                    }
                    read_identifier(&mut chars, &mut name);
                    cur.push_str(&ctx.var(&name).unwrap_or_default());
                } else {
                    cur.push('$');
                }
                has = true;
                continue;
            }
            if chars.peek() == Some(&'{') {
                chars.next();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    name.push(c);
                }
            } else {
                read_identifier(&mut chars, &mut name);
            }
            if name.is_empty() {
                cur.push('$');
            } else {
                cur.push_str(&ctx.var(&name).unwrap_or_default());
            }
            has = true;
            continue;
        }
        if quote.is_none() {
            match ch {
                '"' => {
                    quote = Some('"');
                    has = true;
                    continue;
                }
                '\'' if shell != Shell::Cmd => {
                    quote = Some('\'');
                    has = true;
                    continue;
                }
                c if c.is_whitespace() => {
                    if has {
                        tokens.push(std::mem::take(&mut cur));
                        has = false;
                    }
                    continue;
                }
                '>' | '<' => {
                    // A redirection: `[fd]>[>|&]target`.
                    let fd = if has && cur.chars().all(|c| c.is_ascii_digit() || c == '*' || c == '&') {
                        has = false;
                        std::mem::take(&mut cur)
                    } else {
                        if has {
                            tokens.push(std::mem::take(&mut cur));
                            has = false;
                        }
                        String::new()
                    };
                    let mut append = false;
                    while let Some(&c) = chars.peek().filter(|c| matches!(c, '>' | '&')) {
                        append |= c == '>';
                        chars.next();
                    }
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                    let mut target = String::new();
                    while let Some(&c) = chars.peek() {
                        if c.is_whitespace() {
                            break;
                        }
                        target.push(c);
                        chars.next();
                    }
                    let target = target.trim_matches('"').to_string();
                    let lower = target.to_ascii_lowercase();
                    let stdout = ch == '>' && (fd.is_empty() || fd == "1" || fd == "&" || fd == "*");
                    if stdout && !matches!(lower.as_str(), "1" | "2" | "/dev/stdout" | "/dev/stderr") {
                        redirected = Some(
                            if lower == "$null" || crate::node::exec::volumes::is_null_device(&lower, ctx.windows()) {
                                Redirect::Discard
                            } else {
                                Redirect::File { target, append }
                            },
                        );
                    }
                    continue;
                }
                _ => {}
            }
        }
        cur.push(ch);
        has = true;
    }
    if has {
        tokens.push(cur);
    }
    (tokens, redirected)
}

/// Seconds in `5`, `1.5`, `5s`, `2m`, `1h`, `1d`.
fn seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 's') => (s.get(..i)?, 1.0),
        (i, 'm') => (s.get(..i)?, 60.0),
        (i, 'h') => (s.get(..i)?, 3600.0),
        (i, 'd') => (s.get(..i)?, 86400.0),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mult)
}

fn ms_of(secs: f64) -> u64 {
    let ms = secs * 1000.0;
    if ms >= FOREVER_MS as f64 {
        FOREVER_MS
    } else {
        ms.max(0.0) as u64
    }
}

/// A sleep of this many milliseconds.
fn slept(ms: u64) -> Eval {
    if ms >= FOREVER_MS {
        Eval::Forever { log: Vec::new() }
    } else {
        ran(0, ms, Vec::new())
    }
}

/// Go durations: `10s`, `1ms`, `1m30s`, `500us`.
fn go_duration_ms(s: &str) -> Option<u64> {
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = s.trim().chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_digit() || n == '.' {
                break;
            }
            unit.push(n);
            chars.next();
        }
        let v: f64 = num.parse().ok()?;
        num.clear();
        total += v * match unit.as_str() {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        any = true;
    }
    if !num.is_empty() {
        // A bare number: seconds.
        total += num.parse::<f64>().ok()? * 1000.0;
        any = true;
    }
    any.then_some(if total >= FOREVER_MS as f64 {
        FOREVER_MS
    } else {
        total.max(0.0) as u64
    })
}

/// `250M`, `1G`, `100Mb`, `512k` (1024-based, as stress and testlimit count).
fn bytes_1024(s: &str) -> Option<u128> {
    let s = s.trim();
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: u128 = digits.parse().ok()?;
    let unit = s.get(digits.len()..)?.to_ascii_lowercase();
    let mult = match unit.trim_end_matches(['b', 'i']) {
        "" => 1,
        "k" => 1024,
        "m" => MIB,
        "g" => 1024 * MIB,
        "t" => 1024 * 1024 * MIB,
        _ => return None,
    };
    n.checked_mul(mult)
}

fn flag_value<'a>(args: &'a [String], names: &[&str]) -> Option<&'a str> {
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        for n in names {
            if a == n {
                return iter.next().map(String::as_str);
            }
            if let Some(v) = a.strip_prefix(n).and_then(|r| r.strip_prefix('=')) {
                return Some(v);
            }
        }
    }
    None
}

/// The outcome of allocating `total` bytes (None: without bound) against the memory limit.
fn allocate(ctx: &ProcCtx, total: Option<u128>, after_ms: u64, fail_log: Vec<String>, fits: Eval) -> Eval {
    let exceeds = match (ctx.limit, total) {
        (Some(limit), Some(t)) => t > limit,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if exceeds {
        return Eval::Memory(match ctx.os {
            Os::Linux => Process::OomKilled { after_ms },
            Os::Windows => Process::AllocationFails {
                after_ms,
                log: fail_log,
            },
        });
    }
    match (total, &fits) {
        (None, _) => Eval::Forever { log: Vec::new() },
        (Some(bytes), Eval::Forever { log }) => Eval::Memory(Process::Holding {
            bytes,
            log: log.clone(),
        }),
        _ => fits,
    }
}

const PAGING_FILE_TOO_SMALL: &str = "The paging file is too small for this operation to complete.";

/// `stress`, `stress-ng`, `testlimit`, `agnhost stress`, `tail /dev/zero`.
fn memory_tool(ctx: &ProcCtx, name: &str, args: &[String]) -> Eval {
    let limit_mb = ctx.limit.unwrap_or(0) / MIB;
    match name {
        "stress" | "stress-ng" => {
            let workers: u128 = flag_value(args, &["--vm", "-m"])
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let timeout = flag_value(args, &["--timeout", "-t"]).and_then(seconds).map(ms_of);
            let fits = match timeout {
                Some(ms) => slept(ms),
                None => Eval::Forever { log: Vec::new() },
            };
            if workers == 0 && !(name == "stress-ng" && flag_value(args, &["--vm"]).is_some()) {
                return fits;
            }
            let workers = workers.max(1);
            let per = flag_value(args, &["--vm-bytes"]);
            let total = match per {
                Some(p) if p.ends_with('%') => {
                    let pct: u128 = p.trim_end_matches('%').parse().unwrap_or(100);
                    ctx.node_memory.map(|m| m.saturating_mul(pct) / 100)
                }
                Some(p) => bytes_1024(p).map(|b| b.saturating_mul(workers)),
                None => Some((256 * MIB).saturating_mul(workers)),
            };
            let fail = vec![format!(
                "{name}: FAIL: hogvm: memory allocation failed after {limit_mb} MB: {PAGING_FILE_TOO_SMALL}"
            )];
            allocate(ctx, total, 1000, fail, fits)
        }
        "testlimit" | "testlimit64" => {
            let chunk_mb: u128 = flag_value(args, &["-d", "-m"])
                .and_then(|v| bytes_1024(v).map(|b| b.max(1)))
                .map(|b| {
                    // testlimit counts in MB: `-d 100Mb` and `-d 100` are both 100 MB.
                    if b < MIB { b } else { b / MIB }
                })
                .unwrap_or(1);
            if !args.iter().any(|a| a == "-d" || a == "-m") {
                return Eval::Unknown;
            }
            let total = flag_value(args, &["-c"])
                .and_then(|c| c.parse::<u128>().ok())
                .map(|c| c.saturating_mul(chunk_mb).saturating_mul(MIB));
            let fail = vec![
                format!("Leaking private bytes with touch {chunk_mb} MB at a time..."),
                format!("Error allocating memory after {limit_mb} MB: {PAGING_FILE_TOO_SMALL} (1455)"),
            ];
            allocate(ctx, total, 1000, fail, Eval::Forever { log: Vec::new() })
        }
        "agnhost-stress" => {
            let q = |names: &[&str], default: &str| {
                Quantity::parse(flag_value(args, names).unwrap_or(default)).and_then(|q| u128::try_from(q.value()).ok())
            };
            let total = q(&["--mem-total"], "0").unwrap_or(0);
            if total == 0 {
                return Eval::Forever { log: Vec::new() };
            }
            let chunk = q(&["--mem-alloc-size"], "4Mi").unwrap_or(4 * MIB).max(1);
            let sleep = flag_value(args, &["--mem-alloc-sleep"])
                .and_then(go_duration_ms)
                .unwrap_or(1);
            let chunks = ctx.limit.map(|l| l / chunk + 1).unwrap_or(0);
            let after_ms = u64::try_from(chunks.saturating_mul(u128::from(sleep))).unwrap_or(u64::MAX);
            let fail = vec![
                format!("runtime: VirtualAlloc of {chunk} bytes failed with errno=1455"),
                "fatal error: out of memory".to_string(),
            ];
            allocate(ctx, Some(total), after_ms, fail, Eval::Forever { log: Vec::new() })
        }
        _ => {
            // `tail /dev/zero`: reads a line that never ends, without bound.
            let fail = vec![format!("{name}: memory exhausted")];
            allocate(ctx, None, 2000, fail, Eval::Forever { log: Vec::new() })
        }
    }
}

/// `agnhost <subcommand>`.
fn agnhost(ctx: &ProcCtx, args: &[String]) -> Eval {
    let Some(sub) = args.first() else {
        return ran(
            0,
            0,
            vec![
                "agnhost is a tool for testing Kubernetes that bundles many small test servers and clients".into(),
                "Usage:".into(),
                "  agnhost [command]".into(),
            ],
        );
    };
    let rest = args.get(1..).unwrap_or_default();
    match sub.as_str() {
        "pause"
        | "netexec"
        | "serve-hostname"
        | "test-webserver"
        | "webhook"
        | "porter"
        | "liveness"
        | "nettest"
        | "guestbook"
        | "fake-gitserver"
        | "grpc-health-checking"
        | "resource-consumer-controller"
        | "inclusterclient"
        | "tcp-reset"
        | "crd-conversion-webhook"
        | "audit-proxy"
        | "net" => Eval::Forever { log: Vec::new() },
        "stress" => memory_tool(ctx, "agnhost-stress", rest),
        "entrypoint-tester" => {
            let mut all = vec!["/agnhost".to_string()];
            all.extend(args.iter().cloned());
            ran(0, 0, vec![format!("[{}]", all.join(" "))])
        }
        "logs-generator" => {
            let lines: u64 = flag_value(rest, &["--log-lines-total"])
                .and_then(|v| v.parse().ok())
                .or_else(|| rest.first().and_then(|v| v.parse().ok()))
                .unwrap_or(0);
            let ms = flag_value(rest, &["--run-duration"])
                .and_then(go_duration_ms)
                .or_else(|| rest.get(1).and_then(|v| go_duration_ms(v)))
                .unwrap_or(0);
            let log = (0..lines.min(MAX_LOG_LINES))
                .map(|i| {
                    format!(
                        "{i} GET /api/v1/namespaces/default/pods/pod-{i} {}",
                        200 + (i % 3) * 100
                    )
                })
                .collect();
            ran(0, ms, log)
        }
        _ => Eval::Unknown,
    }
}

/// Runs one simple command (words already split).
fn run_tokens(ctx: &ProcCtx, shell: Shell, tokens: &[String], raw: &str, redirected: bool, depth: usize) -> Eval {
    let Some(first) = tokens.first() else {
        return ran(0, 0, Vec::new());
    };
    let name = program(first);
    let args = tokens.get(1..).unwrap_or_default();
    let out = |lines: Vec<String>| if redirected { Vec::new() } else { lines };
    let windows = ctx.os == Os::Windows;
    // cmd's echo forms that are not words of their own (`echo.`, `echo:x`, `echo(`).
    if shell == Shell::Cmd
        && !name.eq_ignore_ascii_case("echo")
        && let Some(text) = echo::cmd_echo(raw.trim_start().split('>').next().unwrap_or_default())
    {
        return ran(0, 0, out(echo::lines(&text)));
    }
    match name.as_str() {
        "echo" | "write-host" | "write-output" | "echo." => {
            let text = match shell {
                Shell::Cmd => {
                    // cmd parses echo from the line as written; a redirection ends it.
                    let line = raw.trim_start();
                    let line = line.split('>').next().unwrap_or(line);
                    echo::cmd_echo(line).unwrap_or_default()
                }
                Shell::Ps => {
                    let mut words = Vec::new();
                    let mut skip = false;
                    for a in args {
                        if skip {
                            skip = false;
                            continue;
                        }
                        let l = a.to_ascii_lowercase();
                        if l == "-foregroundcolor" || l == "-backgroundcolor" || l == "-separator" {
                            skip = true;
                        } else if l == "-nonewline" || l == "-noenumerate" {
                        } else {
                            words.push(a.as_str());
                        }
                    }
                    words.join(" ") + "\n"
                }
                Shell::Sh => echo::sh_echo(args),
            };
            ran(0, 0, out(echo::lines(&text)))
        }
        "printf" => ran(0, 0, out(echo::lines(&echo::printf(args)))),
        "exit" => {
            let n = args
                .iter()
                .find(|a| !a.eq_ignore_ascii_case("/b"))
                .and_then(|a| a.parse::<i64>().ok())
                .unwrap_or(0);
            let code = if windows && shell != Shell::Sh {
                i32::try_from(n).unwrap_or(i32::MAX)
            } else {
                (n.rem_euclid(256)) as i32
            };
            Eval::Ran {
                code,
                ms: 0,
                log: Vec::new(),
                exit: true,
            }
        }
        "true"
        | ":"
        | "rem"
        | "wait"
        | "set"
        | "export"
        | "cls"
        | "cd"
        | "pwd"
        | "ls"
        | "dir"
        | "mkdir"
        | "md"
        | "touch"
        | "rm"
        | "del"
        | "rmdir"
        | "rd"
        | "cp"
        | "copy"
        | "mv"
        | "move"
        | "chmod"
        | "chown"
        | "ln"
        | "date"
        | "ver"
        | "cat"
        | "type"
        | "env"
        | "printenv"
        | "wc"
        | "head"
        | "grep"
        | "findstr"
        | "sort"
        | "test"
        | "["
        | "mount"
        | "df"
        | "ps"
        | "tasklist"
        | "sync"
        | "stat"
        | "find"
        | "xcopy"
        | "robocopy"
        | "set-content"
        | "add-content"
        | "out-file"
        | "new-item"
        | "remove-item"
        | "copy-item"
        | "move-item"
        | "test-path"
        | "get-childitem"
        | "gci"
        | "get-item"
        | "get-date"
        | "get-content"
        | "gc"
        | "out-null"
        | "import-module"
        | "set-location"
        | "get-process"
        | "get-location"
        | "write-verbose"
        | "write-debug"
        | "set-executionpolicy"
        | "$erroractionpreference"
        | "$progresspreference" => ran(0, 0, Vec::new()),
        "false" => ran(1, 0, Vec::new()),
        "whoami" => {
            let (code, line) = ctx.whoami();
            ran(code, 0, out(vec![line]))
        }
        "hostname" => ran(0, 0, out(vec![ctx.hostname.clone()])),
        "uname" if !windows => ran(0, 0, out(vec!["Linux".into()])),
        "id" if !windows => {
            let line = match ctx.linux_uid {
                None | Some(0) => "uid=0(root) gid=0(root) groups=0(root)".to_string(),
                Some(uid) => format!("uid={uid} gid=0(root) groups=0(root)"),
            };
            ran(0, 0, out(vec![line]))
        }
        "sleep" if shell == Shell::Ps => start_sleep(args),
        "start-sleep" => start_sleep(args),
        "sleep" => {
            let mut total = 0u64;
            for a in args {
                if a == "infinity" || a == "inf" {
                    return Eval::Forever { log: Vec::new() };
                }
                match seconds(a) {
                    Some(s) => total = total.saturating_add(ms_of(s)),
                    None => {
                        return ran(1, 0, vec![format!("sleep: invalid time interval '{a}'")]);
                    }
                }
            }
            slept(total)
        }
        "timeout" if windows => {
            // timeout.exe needs console input; a container's stdin is redirected.
            let secs = flag_value(args, &["/t", "/T", "-t"]).or_else(|| args.first().map(String::as_str));
            if secs == Some("-1") && ctx.stdin {
                return Eval::Forever { log: Vec::new() };
            }
            ran(
                1,
                0,
                vec!["ERROR: Input redirection is not supported, exiting the process immediately.".into()],
            )
        }
        "timeout" => {
            // coreutils: timeout [options] DURATION COMMAND…
            let mut i = 0;
            while args.get(i).is_some_and(|a| a.starts_with('-')) {
                i += if matches!(
                    args.get(i).map(String::as_str),
                    Some("-s" | "-k" | "--signal" | "--kill-after")
                ) {
                    2
                } else {
                    1
                };
            }
            let Some(limit) = args.get(i).and_then(|d| seconds(d)).map(ms_of) else {
                return ran(125, 0, vec!["timeout: invalid time interval".into()]);
            };
            match run_argv(ctx, args.get(i + 1..).unwrap_or_default(), depth + 1) {
                Eval::Ran { code, ms, log, .. } if ms <= limit => ran(code, ms, log),
                Eval::Ran { log, .. } | Eval::Forever { log } => ran(124, limit, log),
                Eval::Unknown => ran(124, limit, Vec::new()),
                memory @ Eval::Memory(_) => memory,
            }
        }
        "ping" => {
            let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
            if lower.iter().any(|a| a == "-t") {
                return Eval::Forever { log: Vec::new() };
            }
            let local = lower
                .iter()
                .any(|a| matches!(a.as_str(), "127.0.0.1" | "localhost" | "::1" | "0.0.0.0"));
            let count = flag_value(&lower, &["-n", "-c"]).and_then(|n| n.parse::<u64>().ok());
            match (local, count) {
                (true, Some(n)) => ran(0, n.saturating_sub(1).saturating_mul(1000), Vec::new()),
                (true, None) if !windows => Eval::Forever { log: Vec::new() },
                (true, None) => ran(0, 3000, Vec::new()),
                _ => Eval::Unknown,
            }
        }
        "tail" if args.iter().any(|a| a == "/dev/zero") => memory_tool(ctx, "tail", args),
        "tail" if args.iter().any(|a| a == "-f" || a == "-F" || a == "--follow") => Eval::Forever { log: Vec::new() },
        "tail" => ran(0, 0, Vec::new()),
        "pause" if shell == Shell::Cmd => ran(0, 0, out(vec!["Press any key to continue . . . ".into()])),
        "pause" => Eval::Forever { log: Vec::new() },
        "agnhost" => agnhost(ctx, args),
        "stress" | "stress-ng" | "testlimit" | "testlimit64" => memory_tool(ctx, &name, args),
        "nginx" | "httpd" | "apache2" | "redis-server"
            if args
                .iter()
                .any(|a| matches!(a.as_str(), "-v" | "-V" | "-t" | "-T" | "--version")) =>
        {
            ran(0, 0, Vec::new())
        }
        "nginx" | "httpd" | "apache2" | "redis-server" | "servicemonitor" | "consumer" | "w3wp" | "dotnet"
        | "caddy" | "sshd" | "crond" | "iisexpress" => Eval::Forever { log: Vec::new() },
        "nc" | "netcat" | "ncat" if args.iter().any(|a| a.starts_with("-l") || a.starts_with("-kl")) => {
            Eval::Forever { log: Vec::new() }
        }
        "python" | "python3" if args.windows(2).any(|w| w[0] == "-m" && w[1] == "http.server") => {
            Eval::Forever { log: Vec::new() }
        }
        "exec" | "call" | "start" if !args.is_empty() => run_argv(ctx, args, depth + 1),
        "sh" | "bash" | "ash" | "dash" | "zsh" | "ksh" | "busybox" | "cmd" | "powershell" | "pwsh" => {
            run_argv(ctx, tokens, depth + 1)
        }
        _ => Eval::Unknown,
    }
}

/// PowerShell `Start-Sleep` (`-Seconds N`, `-s N`, `-Milliseconds N`, `-m N`, positional N).
fn start_sleep(args: &[String]) -> Eval {
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let ms = if let Some(v) = flag_value(&lower, &["-milliseconds", "-m", "-ms"]) {
        v.parse::<f64>().ok().map(|m| ms_of(m / 1000.0))
    } else {
        flag_value(&lower, &["-seconds", "-s"])
            .or_else(|| lower.iter().find(|a| !a.starts_with('-')).map(String::as_str))
            .and_then(|v| v.parse::<f64>().ok())
            .map(ms_of)
    };
    match ms {
        Some(ms) => slept(ms),
        None => ran(1, 0, vec!["Start-Sleep : Cannot bind parameter".into()]),
    }
}

// ---------------------------------------------------------------------------------------------
// API validation.

fn invalid_bool(field: String, value: bool, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid",
        field,
        message: format!("Invalid value: {value}: {detail}"),
    }
}

/// `spec.initContainers[i]`, `spec.containers[i]`, `spec.ephemeralContainers[i]` in the order
/// the API server visits them.
fn containers_with_paths(spec: &Value) -> Vec<(String, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|key| {
            spec.get(*key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, c)| (format!("spec.{key}[{i}]"), c))
        })
        .collect()
}

/// Extra API validation of a pod spec at create/update: the HostProcess rules
/// (Kubernetes ≥ 1.23: all containers HostProcess or none, `hostNetwork` required, pod and
/// container values identical) and, for `spec.os.name: windows` on Kubernetes ≥ 1.24 (the
/// `IdentifyPodOS` gate beta and on by default; GA in 1.25), one `Forbidden: cannot be set for
/// a windows pod` cause per Linux-only field (SEC-OS-FIELD-VALIDATION; WI26, WI31); `spec.os.name: linux` forbids `windowsOptions`. Empty when fine.
pub fn windows_api_violations(pod_spec: &Value, cluster_version: (u32, u32)) -> Vec<Cause> {
    let mut causes = Vec::new();
    let containers = containers_with_paths(pod_spec);
    let pod_sc = pod_spec.get("securityContext");

    // validateWindowsHostProcessPod.
    if cluster_version >= (1, 23) {
        let pod_hp = pod_sc.and_then(|sc| json::bool(sc, "/windowsOptions/hostProcess"));
        let mut hp_count = 0;
        for (path, c) in &containers {
            let c_hp = json::bool(c, "/securityContext/windowsOptions/hostProcess");
            if let (Some(p), Some(cv)) = (pod_hp, c_hp)
                && p != cv
            {
                causes.push(invalid_bool(
                    format!("{path}.securityContext.windowsOptions.hostProcess"),
                    cv,
                    &format!("pod hostProcess value must be identical if both are specified, was {p}"),
                ));
            }
            if c_hp.or(pod_hp) == Some(true) {
                hp_count += 1;
            }
        }
        if hp_count > 0 {
            if hp_count != containers.len() {
                causes.push(Cause::invalid(
                    "spec",
                    "",
                    "If pod contains any hostProcess containers then all containers must be HostProcess containers",
                ));
            }
            if !json::bool(pod_spec, "/hostNetwork").unwrap_or(false) {
                causes.push(invalid_bool(
                    "spec.hostNetwork".into(),
                    false,
                    "hostNetwork must be true if pod contains any hostProcess containers",
                ));
            }
        }
    }

    if cluster_version < (1, 24) {
        return causes;
    }
    match json::opt_str(pod_spec, "/os/name") {
        Some("windows") => {}
        Some("linux") => {
            let forbid = |field: String| Cause::forbidden(field, "windows options cannot be set for a linux pod");
            if pod_sc.is_some_and(|sc| json::present(sc, "/windowsOptions")) {
                causes.push(forbid("spec.securityContext.windowsOptions".into()));
            }
            for (path, c) in &containers {
                if json::present(c, "/securityContext/windowsOptions") {
                    causes.push(forbid(format!("{path}.securityContext.windowsOptions")));
                }
            }
            return causes;
        }
        _ => return causes,
    }
    const DETAIL: &str = "cannot be set for a windows pod";
    // validateWindows, pod level.
    if let Some(sc) = pod_sc {
        let since = |field: &str| match field {
            "appArmorProfile" => (1, 30),
            "supplementalGroupsPolicy" => (1, 31),
            "seLinuxChangePolicy" => (1, 32),
            _ => (1, 24),
        };
        for field in ["appArmorProfile", "seLinuxOptions"] {
            if cluster_version >= since(field) && json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
        if cluster_version >= (1, 30) && json::present(pod_spec, "/hostUsers") {
            causes.push(Cause::forbidden("spec.hostUsers", DETAIL));
        }
    } else if cluster_version >= (1, 30) && json::present(pod_spec, "/hostUsers") {
        causes.push(Cause::forbidden("spec.hostUsers", DETAIL));
    }
    for field in ["hostPID", "hostIPC"] {
        if json::bool(pod_spec, &format!("/{field}")) == Some(true) {
            causes.push(Cause::forbidden(format!("spec.{field}"), DETAIL));
        }
    }
    if let Some(sc) = pod_sc {
        for field in ["seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
            if json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
        if sc
            .get("sysctls")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            causes.push(Cause::forbidden("spec.securityContext.sysctls", DETAIL));
        }
    }
    if json::present(pod_spec, "/shareProcessNamespace") {
        causes.push(Cause::forbidden("spec.shareProcessNamespace", DETAIL));
    }
    if let Some(sc) = pod_sc {
        for (field, since) in [
            ("runAsUser", (1, 24)),
            ("runAsGroup", (1, 24)),
            ("supplementalGroups", (1, 24)),
            ("supplementalGroupsPolicy", (1, 31)),
            ("seLinuxChangePolicy", (1, 32)),
        ] {
            if cluster_version >= since && json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("spec.securityContext.{field}"), DETAIL));
            }
        }
    }
    // validateWindows, containers.
    for (path, c) in &containers {
        let Some(sc) = c.get("securityContext") else {
            continue;
        };
        for field in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if field == "appArmorProfile" && cluster_version < (1, 30) {
                continue;
            }
            if json::present(sc, &format!("/{field}")) {
                causes.push(Cause::forbidden(format!("{path}.securityContext.{field}"), DETAIL));
            }
        }
    }
    causes
}

/// Moves a variable name (letters, digits, `_`) from `chars` into `name`.
fn read_identifier(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, name: &mut String) {
    while let Some(&c) = chars.peek() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
            chars.next();
        } else {
            break;
        }
    }
}

#[cfg(test)]
mod tests;
