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
//! - The process model runs `sh -c`, `cmd /c` and `powershell -Command` scripts as the exec'd
//!   shells of [`crate::node::exec`] parse them (`;`, `&&`, `||`, pipes, redirections, sh
//!   `if`/groups, cmd groups), built from `echo`/`Write-Host`, `exit`,
//!   `sleep`/`Start-Sleep`/`ping -n`, `true`/`false` and a set of local file utilities.
//!   Loops, servers and anything it cannot interpret (including network
//!   clients such as `curl`, whose result depends on the network) keep running. Windows
//!   `timeout /t N` fails at once without console input, as it does in a container. What a
//!   statement's redirection sends to a file is recorded in [`ContainerPlan::writes`] (the
//!   kubelet puts it where the container's mounts say); a redirection into a `readOnly` mount
//!   fails the statement with the shell's error (STO-READONLY-VOLUME).

mod process;

use std::cell::RefCell;

use serde_json::Value;

use self::process::{ProcCtx, process_of};
use crate::config::faults::Fault;
use crate::config::platform::{Os, WINDOWS_SUBNET_ENV};
use crate::config::profile::{NodeProfile, RuntimeKind};
use crate::config::topology::ImagePlatform;
use crate::node::images::{Catalogue, ImageInfo, Reference};
use crate::node::runtime::Process;
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
    #[cfg(test)] // used by the tests only
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

impl ContainerOutcome {}

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
    /// The pod as given.
    pod: &'a Value,
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
            pod,
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
/// delegate add`. On GKE the `sdnbridge` plugin of `l2bridge.conf` (kubernetes
/// `cluster/gce/windows/k8s-node-setup.psm1`) looks the `l2bridge` network up and returns the
/// lookup's error (microsoft/windows-container-networking `cni/network`; hcsshim `hcn`'s
/// `NetworkNotFoundError`: `Network name "…" not found`).
fn pod_network(profile: &NodeProfile, view: &PodView<'_>) -> Option<PodFate> {
    if !profile.is_windows() {
        return None;
    }
    let sandbox_id = container_id(&view.uid, "POD");
    if profile.pod_network == crate::config::platform::PodNetwork::GkeWinBridge {
        if !profile.has_fault(Fault::HnsNetworkMissing) {
            return None;
        }
        let message = format!(
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox {sandbox_id:?}: plugin type=\"sdnbridge\" name=\"l2bridge\" failed (add): Network name \"l2bridge\" not found"
        );
        return sandbox_failure(message, "NET-HNS-NETWORK-PRESENT");
    }
    let flannel = profile.flannel()?;
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

/// The pull of a tag the registry does not have (`crate::node::images`, unpublished tags): the
/// registry answers 404 MANIFEST_UNKNOWN, which containerd reports as `failed to resolve reference
/// "<ref>": <ref>: not found` and Docker as `manifest for <ref> not found: manifest unknown`.
fn tag_not_found(profile: &NodeProfile, image: &str) -> ContainerOutcome {
    let reference = Reference::parse(image);
    let fq = reference.fully_qualified();
    let message = match profile.runtime {
        RuntimeKind::Containerd => format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image {fq:?}: failed to resolve reference {fq:?}: {fq}: not found"
        ),
        RuntimeKind::Docker => format!(
            "rpc error: code = Unknown desc = Error response from daemon: manifest for {fq} not found: manifest unknown: manifest tagged by {:?} is not found",
            reference.tag.as_deref().unwrap_or("latest")
        ),
    };
    ContainerOutcome::PullFails {
        message,
        rule: "VER-BUILD-MATCH",
    }
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

    // Pull: a tag its publisher never published is not found; a manifest list is matched by
    // platform; a single manifest is pulled as is.
    if !info.published {
        return plan(tag_not_found(profile, &image));
    }
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
            crate::node::host::host_name(profile)
        } else {
            json::opt_str(view.spec, "/hostname").unwrap_or(&view.name).to_string()
        },
        host_node: mode.host_process.then(|| profile.clone()),
        env: c
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let value = match e.get("valueFrom").and_then(|f| f.get("fieldRef")) {
                    // The downward API (fieldRef) as the kubelet resolves it; the pod runs on
                    // this node.
                    Some(field) => match json::opt_str(field, "/fieldPath") {
                        Some("spec.nodeName") => profile.name.clone(),
                        Some(path) => crate::node::exec::field_ref(view.pod, path).unwrap_or_default(),
                        None => String::new(),
                    },
                    None => json::opt_str(e, "/value").unwrap_or("").to_string(),
                };
                Some((json::opt_str(e, "/name")?.to_string(), value))
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

#[cfg(test)]
mod tests;
