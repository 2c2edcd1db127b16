//! Simulated container commands: what an exec'd command answers in a Linux, Windows or HostProcess
//! container (derived from the node profile, the pod, the image and the store), and the node-disk
//! view of pods' secret and configMap volumes (SEC-SECRET-AT-REST).
//!
//! [`SimRuntime`] looks `argv[0]` up in the command table of the container's OS, keeping only
//! what the image ships (no PowerShell in nanoserver, nothing at all in `pause`), and runs the
//! handler of that command family. A missing executable fails the way the runtime reports it:
//! an OCI error from runc on Linux, an HCS error on Windows. Shells (`sh -c`, `cmd /c`,
//! `powershell -Command`, `pwsh -c`) interpret their command line with the same tables, with
//! `&&`, `||`, `;`/`&` and `|` chaining and the common redirections. Each shell then reports a
//! missing command the way that shell does.
//!
//! Network commands (`agnhost connect`, `curl`, `wget`, `nc`, `nslookup`, `dig`, `ping`,
//! `Resolve-DnsName`, `Test-NetConnection`) are answered by [`crate::node::exec::nettools`] over the wire that
//! [`NetworkCommands`] supplies. Without one they fail the way a container with no reachable
//! network does: every connection and every DNS query times out (the exact messages are listed
//! on [`NetworkCommands`]).
//!
//! A HostProcess container sees its Windows node's host ([`crate::node::host`]): `hostname`
//! prints the machine's name, the disk holds what the node's agents keep there
//! (`C:\run\flannel\subnet.env`, the source VIP and CNI configuration at the paths of its era, the node's
//! log files under `C:\var\log`), and Windows PowerShell answers `Get-HnsNetwork`,
//! `Get-HnsPolicyList`, `Get-NetAdapter` and `Get-NetTCPConnection` from the node's modelled
//! state and faults. `netsh int ipv4 show dynamicport tcp` shows the dynamic port range.
//!
//! sh understands `if`/`elif`/`else`, `( … )` subshells, `{ …; }` groups and `!`; cmd
//! understands `( … )` groups. Redirections write files: into the pod's emptyDir volumes (seen
//! by its other containers), the node's disk through hostPath, or the container's own layer,
//! as [`crate::node::exec::volumes`] places them; a `readOnly` mount or an API-data volume refuses the write
//! the way each shell reports it (STO-READONLY-VOLUME: cmd's `Access is denied.`).
//!
//! Limits: only redirections write (no `cp`, `mkdir`, `touch`), `$( … )` is not substituted,
//! `sleep` returns at once, and only the PowerShell cmdlets in the cmdlet table exist.

mod agnhost;
mod archive;
pub(crate) mod cmd;
mod context;
mod disk;
pub mod echo;
mod environment;
mod files;
mod identity;
pub(crate) mod mounts;
pub mod nettools;
pub mod network;
pub(crate) mod outline;
mod plumbing;
pub(crate) mod powershell;
pub(crate) mod ps_entry;
mod ps_errors;
mod session;
pub(crate) mod sh;
mod support;
pub(crate) use self::support::field_ref;
pub mod volumes;

pub use self::context::CommandContext;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;

use self::agnhost::{agnhost, network};
use self::archive::tar;
use self::cmd::cmd;
use self::environment::{echo, env, fail_quietly, printenv, printf, succeed, test};
use self::files::{cat, findstr, grep, icacls, ls, stat};
use self::identity::{hnsdiag, hostname, id, ip, ipconfig, kube_proxy, netsh, uname, whoami_linux, whoami_windows};
use self::mounts::{VolumeKind, pod_volumes, volume_data};
use self::nettools::Wire;
use self::ps_entry::{powershell, pwsh};
use self::session::Session;
use self::sh::sh;
use self::support::{runtime_error, through_tty};
use self::volumes::VolumeStore;
use crate::config::profile::NodeProfile;
use crate::node::logs::LogBook;
use crate::node::runtime::{ContainerRuntime, ExecFuture, ExecOutput, ExecRequest};
use crate::store::{Obj, Store, resources};
use crate::vocab::json;

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Answers exec'd commands in simulated containers, per image and OS.
#[derive(Debug, Clone)]
pub struct SimRuntime {
    store: Arc<Store>,
    profiles: Arc<Vec<NodeProfile>>,
    /// Each profile's position in `profiles` by node name: an exec finds its node at once,
    /// not by a scan of 5,000 profiles.
    by_name: Arc<HashMap<String, usize>>,
    network: Option<Arc<dyn NetworkCommands>>,
    volumes: Arc<VolumeStore>,
    logs: Arc<LogBook>,
}

impl SimRuntime {
    /// A runtime answering for the pods in `store` on the nodes in `profiles` (looked up by
    /// `spec.nodeName`).
    pub fn new(store: Arc<Store>, profiles: Arc<Vec<NodeProfile>>) -> Self {
        let by_name = profiles.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
        Self {
            store,
            profiles,
            by_name: Arc::new(by_name),
            network: None,
            volumes: Arc::new(VolumeStore::new()),
            logs: Arc::new(LogBook::default()),
        }
    }

    /// Keeps what commands write in `volumes` (shared with the kubelets, [`crate::node::exec::volumes`]).
    #[must_use]
    pub fn with_volumes(mut self, volumes: Arc<VolumeStore>) -> Self {
        self.volumes = volumes;
        self
    }

    /// Shows the node-level logs of `logs` (the kubelets' log book) on the nodes' disks.
    #[must_use]
    pub fn with_logs(mut self, logs: Arc<LogBook>) -> Self {
        self.logs = logs;
        self
    }

    /// Routes network commands to `network` (the network fabric).
    #[must_use]
    pub fn with_network(mut self, network: Arc<dyn NetworkCommands>) -> Self {
        self.network = Some(network);
        self
    }

    /// What a command in `container` of `pod` sees.
    pub fn context(&self, pod: Obj, container: &str) -> CommandContext {
        let files = (self.volumes.clone(), self.logs.clone());
        // The pod's node profile alone (none where the pod is on no known node).
        let node = match self.by_name.get(json::str(pod.value(), "/spec/nodeName")) {
            Some(&i) => &self.profiles[i..=i],
            None => &[],
        };
        CommandContext::sharing(self.store.clone(), node, pod, container, files)
    }
}

impl ContainerRuntime for SimRuntime {
    fn exec(&self, request: ExecRequest) -> ExecFuture {
        let ctx = self.context(request.pod.clone(), &request.container);
        if ctx.container_spec().is_none() {
            let message = format!("container not found ({:?})", request.container);
            return Box::pin(std::future::ready(runtime_error(message)));
        }
        let windows = ctx.is_windows();
        let session = Arc::new(Session::new(ctx, self.network.clone(), &request.command));
        let call = Call {
            env: None,
            argv: request.command,
            stdin: request.stdin.unwrap_or_default(),
        };
        let tty = request.tty;
        let running = run_top(session, call);
        Box::pin(async move {
            let out = running.await;
            if tty { through_tty(out, windows) } else { out }
        })
    }
}

/// The seam for network commands (`agnhost connect`, `curl`, `wget`, `nc`, `nslookup`, `dig`,
/// `ping`, `Resolve-DnsName`, `Test-NetConnection`), which the network fabric implements.
///
/// The commands themselves are parsed and rendered by [`nettools::run`]; the seam only supplies
/// the [`Wire`] that answers one container's lookups, connections, HTTP requests, UDP exchanges
/// and pings. Without a network the wire is [`Offline`](nettools::Offline): every connection and DNS query times
/// out, so `agnhost connect` prints `TIMEOUT` (an IP) or `DNS: lookup …: i/o timeout` (a name)
/// and exits 1; `curl` exits 28; busybox `wget`/`nc`/`ping` print `bad address 'NAME'` or a
/// timeout and exit 1; `nslookup` and `dig` report that no server could be reached;
/// `Resolve-DnsName` fails with the timeout error; `Test-NetConnection` reports
/// `TcpTestSucceeded : False`.
pub trait NetworkCommands: Send + Sync + std::fmt::Debug {
    /// The wire a command in the container `ctx` talks through.
    fn wire<'a>(&'a self, ctx: &'a CommandContext) -> Box<dyn Wire + 'a>;
}

/// The files a node's disk holds for pods' secret and configMap volumes: path → content.
///
/// Windows writes every API-data volume (secret, configMap, projected, downwardAPI) as plain
/// files under the kubelet root, `C:\var\lib\kubelet\pods\<podUID>\volumes\kubernetes.io~<plugin>\<volume>\<key>`,
/// with the decoded data in clear text (SEC-SECRET-AT-REST). Linux keeps secret, projected and
/// downwardAPI volumes on tmpfs, so only configMap volumes reach its disk (under
/// `/var/lib/kubelet/pods/…`). Pods that finished (Succeeded, Failed) have had their volumes
/// cleaned up.
pub fn node_volume_files(store: &Store, node: &NodeProfile) -> BTreeMap<String, Vec<u8>> {
    let windows = node.is_windows();
    let mut files = BTreeMap::new();
    let (pods, _) = store.list(resources::core("pods"), None);
    for pod in pods.iter().filter(|p| p.node_name() == node.name) {
        let v = pod.value();
        if matches!(json::str(v, "/status/phase"), "Succeeded" | "Failed") {
            continue;
        }
        for volume in pod_volumes(store, v) {
            let data = volume_data(store, v, &volume, Some(node));
            let Some(plugin) = data.kind.plugin_dir() else {
                continue;
            };
            if !windows && data.kind != VolumeKind::ConfigMap {
                continue;
            }
            let (root, sep) = if windows {
                ("C:\\var\\lib\\kubelet\\pods", "\\")
            } else {
                ("/var/lib/kubelet/pods", "/")
            };
            let dir = [root, pod.uid(), "volumes", plugin, json::str(&volume, "/name")].join(sep);
            for (rel, content, _) in data.files {
                let rel = if windows { rel.replace('/', "\\") } else { rel };
                files.insert(format!("{dir}{sep}{rel}"), content);
            }
        }
    }
    files
}

// ---------------------------------------------------------------------------------------------
// Dispatch and the command tables
// ---------------------------------------------------------------------------------------------

/// One command invocation: argv, stdin and the process environment.
#[derive(Debug, Clone, Default)]
struct Call {
    argv: Vec<String>,
    stdin: Bytes,
    /// None: the container's own environment ([`Session::env`]), as exec starts a command with;
    /// a shell's or `env`'s children get the variables it hands them.
    env: Option<Vec<(String, String)>>,
}

impl Call {
    /// The command's environment.
    fn env<'a>(&'a self, s: &'a Session) -> &'a [(String, String)] {
        self.env.as_deref().unwrap_or_else(|| s.env())
    }

    /// The command's environment, to keep.
    fn take_env(&mut self, s: &Session) -> Vec<(String, String)> {
        self.env.take().unwrap_or_else(|| s.env().to_vec())
    }

    fn args(&self) -> &[String] {
        self.argv.get(1..).unwrap_or(&[])
    }
}

/// A handler's answer: finished, or still running (shells, `env` running a command).
enum Reply {
    Done(ExecOutput),
    Later(ExecFuture),
}

impl Reply {
    fn run(self) -> ExecFuture {
        match self {
            Self::Done(o) => Box::pin(std::future::ready(o)),
            Self::Later(f) => f,
        }
    }
}

impl From<ExecOutput> for Reply {
    fn from(o: ExecOutput) -> Self {
        Self::Done(o)
    }
}

type Handler = fn(&Arc<Session>, Call) -> Reply;

/// What must be in the container for a command to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Always,
    /// A Linux userland (every image but pause).
    Userland,
    /// bash (general-purpose distribution images).
    Bash,
    /// curl (agnhost and general-purpose images; not busybox).
    Curl,
    /// Windows' own `curl.exe`: in the OS from build 17063 (Windows Server 1803) on, so absent
    /// from the Windows Server 2016 and 1709 images; the e2e busybox/agnhost images carry their
    /// own (they exist from 1809 on anyway).
    CurlExe,
    /// The agnhost binary.
    Agnhost,
    /// Windows PowerShell: Server Core and Server images, and the host of a HostProcess container.
    WindowsPowerShell,
    /// PowerShell Core: the e2e busybox/agnhost Windows images and the PowerShell images.
    Pwsh,
    /// busybox-w32 applets of the e2e busybox and agnhost Windows images.
    Applets,
    /// The Windows kube-proxy's binary: on the host (a HostProcess container) of a node whose
    /// pod network runs kube-proxy.
    HostKubeProxy,
    /// A tool of the Windows host's System32 (`hnsdiag.exe`): on the host (a HostProcess
    /// container) only.
    Host,
}

/// An executable: the names it answers to, what must be in the image, its handler.
struct Command {
    names: &'static [&'static str],
    needs: Needs,
    run: Handler,
}

const fn command(names: &'static [&'static str], needs: Needs, run: Handler) -> Command {
    Command { names, needs, run }
}

/// Executables of Linux containers.
static LINUX: &[Command] = &[
    command(&["sh", "ash"], Needs::Userland, sh),
    command(&["bash"], Needs::Bash, sh),
    command(&["hostname"], Needs::Userland, hostname),
    command(&["cat"], Needs::Userland, cat),
    command(&["tar"], Needs::Userland, tar),
    command(&["ls"], Needs::Userland, ls),
    command(&["stat"], Needs::Userland, stat),
    command(&["printenv"], Needs::Userland, printenv),
    command(&["env"], Needs::Userland, env),
    command(&["echo"], Needs::Userland, echo),
    command(&["printf"], Needs::Userland, printf),
    command(&["true", "sleep"], Needs::Userland, succeed),
    command(&["false"], Needs::Userland, fail_quietly),
    command(&["test", "["], Needs::Userland, test),
    command(&["grep"], Needs::Userland, grep),
    command(&["id"], Needs::Userland, id),
    command(&["whoami"], Needs::Userland, whoami_linux),
    command(&["uname"], Needs::Userland, uname),
    // iproute2 in agnhost (AGN Dockerfile: `apk add … iproute2`); the busybox applet elsewhere.
    command(&["ip"], Needs::Userland, ip),
    command(&["agnhost"], Needs::Agnhost, agnhost),
    command(&["nc", "nslookup", "ping", "wget"], Needs::Userland, network),
    command(&["curl"], Needs::Curl, network),
    command(&["dig"], Needs::Agnhost, network),
];

/// Executables of Windows containers (`cmd` builtins and PowerShell cmdlets have their own tables).
static WINDOWS: &[Command] = &[
    command(&["cmd"], Needs::Always, cmd),
    command(&["hostname"], Needs::Always, hostname),
    command(&["whoami"], Needs::Always, whoami_windows),
    command(&["ipconfig"], Needs::Always, ipconfig),
    command(&["findstr"], Needs::Always, findstr),
    command(&["icacls"], Needs::Always, icacls),
    command(&["curl"], Needs::CurlExe, network),
    command(&["ping", "nslookup"], Needs::Always, network),
    // netsh ships where Windows PowerShell does (Server Core, Server, the host).
    command(&["netsh"], Needs::WindowsPowerShell, netsh),
    command(&["powershell"], Needs::WindowsPowerShell, powershell),
    command(&["pwsh"], Needs::Pwsh, pwsh),
    command(&["agnhost"], Needs::Agnhost, agnhost),
    command(&["kube-proxy"], Needs::HostKubeProxy, kube_proxy),
    command(&["hnsdiag"], Needs::Host, hnsdiag),
    command(&["sh", "ash"], Needs::Applets, sh),
    command(&["cat"], Needs::Applets, cat),
    command(&["ls"], Needs::Applets, ls),
    command(&["printenv"], Needs::Applets, printenv),
    command(&["env"], Needs::Applets, env),
    command(&["echo"], Needs::Applets, echo),
    command(&["printf"], Needs::Applets, printf),
    command(&["true", "sleep"], Needs::Applets, succeed),
    command(&["false"], Needs::Applets, fail_quietly),
    command(&["test", "["], Needs::Applets, test),
    command(&["grep"], Needs::Applets, grep),
    command(&["nc", "wget"], Needs::Applets, network),
];

/// Runs an exec's command: its handler, or the runtime's error when it does not exist.
fn run_top(s: Arc<Session>, call: Call) -> ExecFuture {
    let Some(name) = call.argv.first().cloned() else {
        let missing = runtime_error("you must specify at least one command for the container".into());
        return Box::pin(std::future::ready(missing));
    };
    match s.lookup(&name) {
        Some(handler) => handler(&s, call).run(),
        None => Box::pin(std::future::ready(s.not_found(&name))),
    }
}

#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod tests;
