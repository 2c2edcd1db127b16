//! One exec: the session of a command (its context, disk, environment and writes) and the
//! disk it is built with (image files, volumes, hosts, resolv.conf, /proc/mounts).

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::context::CommandContext;
use super::disk::Disk;
use super::mounts::{DEFAULT_MODE, Mount, VolumeData, VolumeKind, container_mounts, volume_data};
use super::support::{ImageKind, hex_id, image_kind, runtime_error};
use super::volumes::{
    self, MountPoint, MountSource, Place, WINDOWS_HOSTS, WINDOWS_HOSTS_PATH, WriteTarget, Writer, linux_path, win_path,
};
use super::{Call, Handler, LINUX, Needs, NetworkCommands, WINDOWS, node_volume_files};
use crate::config::profile::NodeProfile;
use crate::network::dns::{self, DnsConfig};
use crate::node::runtime::ExecOutput;
use crate::vocab::json;
use crate::vocab::quantity::Quantity;

// ---------------------------------------------------------------------------------------------
// Sessions: one exec
// ---------------------------------------------------------------------------------------------

/// One exec: the context, what the image ships, the environment and the disk it sees.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) ctx: CommandContext,
    pub(super) network: Option<Arc<dyn NetworkCommands>>,
    pub(super) kind: ImageKind,
    /// The container's environment, worked out when a command first reads it: most probes
    /// (curl, agnhost, ping) never do.
    env: OnceLock<Vec<(String, String)>>,
    /// What the command sees (its writes update it and the
    /// [`VolumeStore`](super::volumes::VolumeStore)) and the container's mounts, which decide
    /// where writes go: built when the command first touches a file (most probes only connect).
    built: OnceLock<(RwLock<Disk>, Vec<MountPoint>)>,
    pub(super) exec_id: String,
    /// When the container's files were written (the pod's creation), for listings.
    pub(super) stamp: DateTime<Utc>,
}

/// Why a file cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteError {
    /// A `readOnly` mount or an API-data volume (STO-READONLY-VOLUME).
    ReadOnly,
    /// The directory does not exist.
    NoDirectory,
    /// The path is a directory.
    IsDirectory,
}

impl Session {
    pub(super) fn new(ctx: CommandContext, network: Option<Arc<dyn NetworkCommands>>, argv: &[String]) -> Self {
        let kind = image_kind(&ctx.image);
        let exec_id = hex_id(&["exec", ctx.pod.uid(), &ctx.container, &argv.join("\u{1f}")]);
        let stamp = DateTime::parse_from_rfc3339(json::str(ctx.pod.value(), "/metadata/creationTimestamp"))
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        Self {
            ctx,
            network,
            kind,
            env: OnceLock::new(),
            built: OnceLock::new(),
            exec_id,
            stamp,
        }
    }

    /// The container's environment (the image's, the pod spec's and the Services' variables).
    pub(super) fn env(&self) -> &[(String, String)] {
        self.env.get_or_init(|| self.ctx.env())
    }

    pub(super) fn windows(&self) -> bool {
        self.ctx.is_windows()
    }

    /// The disk and the mounts, built on first use.
    fn built(&self) -> &(RwLock<Disk>, Vec<MountPoint>) {
        self.built.get_or_init(|| {
            let (disk, mounts) = build_disk(&self.ctx, self.kind);
            (RwLock::new(disk), mounts)
        })
    }

    /// The disk as it is now.
    pub(super) fn disk(&self) -> RwLockReadGuard<'_, Disk> {
        self.built().0.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes (or appends `data` to) the file `path` names: into the volume, host or layer its
    /// mounts say ([`volumes::resolve`]), and into this exec's view. The null device discards.
    pub(super) fn write_file(&self, path: &str, data: &[u8], append: bool) -> Result<(), WriteError> {
        let windows = self.windows();
        if volumes::is_null_device(path, windows) {
            return Ok(());
        }
        let full = self.path(path);
        let writer = Writer {
            pod_uid: self.ctx.pod.uid(),
            container: &self.ctx.container,
            node: self.ctx.node.as_ref().map_or("", |n| n.name.as_str()),
            windows,
            host_process: self.ctx.host_process,
        };
        let (place, at) = match volumes::resolve(&self.built().1, &full, writer) {
            WriteTarget::ReadOnly => return Err(WriteError::ReadOnly),
            WriteTarget::Store { place, path } => (place, path),
        };
        let mut disk = self.built().0.write().unwrap_or_else(|p| p.into_inner());
        if disk.get(&full).is_some_and(|e| e.file.is_none()) {
            return Err(WriteError::IsDirectory);
        }
        let parent_is_dir = disk
            .parent(&full)
            .is_some_and(|dir| disk.get(&dir).is_some_and(|e| e.file.is_none()));
        if !parent_is_dir {
            return Err(WriteError::NoDirectory);
        }
        self.ctx.volumes.write(&place, &at, data, append, windows);
        let mut content = match disk.get(&full).and_then(|e| e.file.as_ref()) {
            Some((old, _)) if append => old.clone(),
            _ => Vec::new(),
        };
        content.extend_from_slice(data);
        disk.add_file(&full, content, DEFAULT_MODE);
        Ok(())
    }

    /// The working directory: `/`, `C:\`, or the sandbox mount point of a HostProcess container.
    pub(super) fn cwd(&self) -> String {
        match (self.windows(), self.ctx.host_process) {
            (false, _) => "/".into(),
            (true, false) => "C:\\".into(),
            (true, true) => self.ctx.sandbox_mount_point().trim_end_matches('\\').to_string(),
        }
    }

    pub(super) fn path(&self, p: &str) -> String {
        if self.windows() {
            win_path(p, &self.cwd())
        } else {
            linux_path(p, &self.cwd())
        }
    }

    pub(super) fn kernel(&self) -> String {
        self.ctx
            .node
            .as_ref()
            .map(|n| n.kernel_version.clone())
            .unwrap_or_default()
    }

    pub(super) fn has(&self, needs: Needs) -> bool {
        use ImageKind as K;
        let hpc = self.ctx.host_process;
        match needs {
            Needs::Always => true,
            Needs::Userland => self.kind != K::Pause,
            Needs::Bash => self.kind == K::Other,
            Needs::Curl => matches!(self.kind, K::Agnhost | K::Other),
            Needs::CurlExe => {
                matches!(self.kind, K::Agnhost | K::Busybox) || windows_build(&self.kernel()).is_none_or(|b| b >= 17063)
            }
            Needs::Agnhost => self.kind == K::Agnhost,
            Needs::WindowsPowerShell => hpc || matches!(self.kind, K::ServerCore | K::WindowsServer),
            Needs::Pwsh => !hpc && matches!(self.kind, K::Agnhost | K::Busybox | K::PowerShell),
            Needs::Applets => !hpc && matches!(self.kind, K::Agnhost | K::Busybox),
            Needs::HostKubeProxy => hpc && self.ctx.node.as_ref().is_some_and(|n| n.runs_kube_proxy),
            Needs::Host => hpc,
        }
    }

    /// `argv[0]` as the command tables name it: the base name; on Windows lower case without `.exe`.
    pub(super) fn command_name(&self, name: &str) -> String {
        if self.windows() {
            let base = name.rsplit(['\\', '/']).next().unwrap_or(name).to_lowercase();
            base.strip_suffix(".exe").map(str::to_string).unwrap_or(base)
        } else {
            name.rsplit('/').next().unwrap_or(name).to_string()
        }
    }

    /// The executable `name` resolves to in this container.
    pub(super) fn lookup(&self, name: &str) -> Option<Handler> {
        let name = self.command_name(name);
        let table = if self.windows() { WINDOWS } else { LINUX };
        table
            .iter()
            .find(|c| c.names.contains(&name.as_str()) && self.has(c.needs))
            .map(|c| c.run)
    }

    /// The runtime's answer to a missing executable.
    pub(super) fn not_found(&self, name: &str) -> ExecOutput {
        let id = &self.exec_id;
        let message = if self.windows() {
            format!(
                "failed to exec in container: failed to start exec {id:?}: hcs::System::CreateProcess {}: The system \
                cannot find the file specified.: unknown",
                self.ctx.container_id()
            )
        } else if name.contains('/') {
            format!(
                "failed to exec in container: failed to start exec {id:?}: OCI runtime exec failed: exec failed: \
                unable to start container process: exec: {name:?}: stat {name}: no such file or directory: unknown"
            )
        } else {
            format!(
                "failed to exec in container: failed to start exec {id:?}: OCI runtime exec failed: exec failed: \
                unable to start container process: exec: {name:?}: executable file not found in $PATH: unknown"
            )
        };
        runtime_error(message)
    }

    /// Runs a command a shell started; None when it does not exist.
    pub(super) async fn run_child(self: &Arc<Self>, call: Call) -> Option<ExecOutput> {
        let handler = self.lookup(call.argv.first()?)?;
        Some(handler(self, call).run().await)
    }
}

/// The build of a Windows kernel version (`10.0.16299.192` → 16299).
pub(super) fn windows_build(kernel: &str) -> Option<u32> {
    kernel.split('.').nth(2).and_then(|b| b.parse().ok())
}

/// The files of the node's own disk the container can reach: the OS's files, what the node's
/// agents keep there ([`crate::node::host::files`]: flannel's subnet file, the source VIP, the
/// CNI configuration, the node's logs), the kubelet's API-data volume files (clear text on
/// Windows, SEC-SECRET-AT-REST) and what was written there.
pub(super) fn host_files(ctx: &CommandContext, node: &NodeProfile) -> Vec<(String, Vec<u8>)> {
    let mut files = volumes::host_base_files(node);
    files.extend(crate::node::host::files(node, &ctx.store, &ctx.logs));
    files.extend(node_volume_files(&ctx.store, node));
    files.extend(ctx.volumes.files(&Place::Host {
        node: node.name.clone(),
    }));
    files
}

/// What a writable volume holds: an emptyDir's (or other pod volume's) written files, or the
/// node's files under a hostPath (STO-EMPTYDIR-DISK, STO-HOSTPATH).
pub(super) fn writable_volume_data(ctx: &CommandContext, volume: &Value, kind: VolumeKind) -> VolumeData {
    let windows = ctx.is_windows();
    let files = match volumes::source_of(volume, windows) {
        MountSource::PodVolume(name) => ctx
            .volumes
            .files(&Place::PodVolume {
                pod_uid: ctx.pod.uid().to_string(),
                volume: name,
            })
            .into_iter()
            .map(|(rel, data)| (rel, data, DEFAULT_MODE))
            .collect(),
        MountSource::HostPath(dir) => match ctx.node.as_ref() {
            Some(node) => host_files(ctx, node)
                .into_iter()
                .filter_map(|(path, data)| {
                    let rel = volumes::relative(&path, &dir, windows)?;
                    Some((rel, data, DEFAULT_MODE))
                })
                .collect(),
            None => Vec::new(),
        },
        MountSource::ApiData => Vec::new(),
    };
    VolumeData { kind, files }
}

/// The disk a command sees and the mounts that decide where its writes go.
pub(super) fn build_disk(ctx: &CommandContext, kind: ImageKind) -> (Disk, Vec<MountPoint>) {
    let windows = ctx.is_windows();
    let mut disk = Disk::new(windows);
    let Some(container) = ctx.container_spec() else {
        return (disk, Vec::new());
    };
    let pod = ctx.pod.value();
    let mounts = container_mounts(&ctx.store, pod, container);
    let node = ctx.node.as_ref();
    let data: Vec<VolumeData> = mounts
        .iter()
        .map(|m| match VolumeKind::of(&m.volume) {
            k @ (VolumeKind::EmptyDir { .. } | VolumeKind::HostPath | VolumeKind::Other) => {
                writable_volume_data(ctx, &m.volume, k)
            }
            k => {
                let mut data = volume_data(&ctx.store, pod, &m.volume, node);
                // What the Windows kubelets of the seed eras could not hand a container
                // (NodeProfile::secrets_reach_containers, api_volume_files_readable).
                let unreadable = node.is_some_and(|n| {
                    (k == VolumeKind::Secret && !n.secrets_reach_containers())
                        || (matches!(k, VolumeKind::Secret | VolumeKind::ConfigMap) && !n.api_volume_files_readable())
                });
                if unreadable {
                    data.files.clear();
                }
                data
            }
        })
        .collect();
    let point = |m: &Mount, at: String| MountPoint {
        at,
        source: volumes::source_of(&m.volume, windows),
        read_only: m.read_only,
        sub_path: m.sub_path.trim_matches('/').to_string(),
    };
    let mut points = Vec::new();
    let layer = ctx.volumes.files(&Place::Layer {
        pod_uid: ctx.pod.uid().to_string(),
        container: ctx.container.clone(),
    });
    if !windows {
        for dir in [
            "/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr/bin", "/var",
        ] {
            disk.add_dir(dir);
        }
        disk.add_file("/etc/hostname", format!("{}\n", ctx.hostname()).into_bytes(), 0o644);
        disk.add_file("/etc/hosts", linux_hosts(ctx).into_bytes(), 0o644);
        disk.add_file("/etc/resolv.conf", resolv_conf(&ctx.dns()).into_bytes(), 0o644);
        disk.add_file(
            "/etc/passwd",
            b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n".to_vec(),
            0o644,
        );
        let version = format!(
            "Linux version {} (buildd@simcluster) (gcc version 12.3.0) #1 SMP\n",
            ctx.node.as_ref().map(|n| n.kernel_version.as_str()).unwrap_or("")
        );
        disk.add_file("/proc/version", version.into_bytes(), 0o444);
        let mounts_text = proc_mounts(ctx, &mounts, &data).into_bytes();
        disk.add_file("/proc/mounts", mounts_text.clone(), 0o444);
        let mountinfo = proc_mountinfo(&String::from_utf8_lossy(&mounts_text), &mounts).into_bytes();
        disk.add_file("/proc/self/mounts", mounts_text, 0o444);
        disk.add_file("/proc/self/mountinfo", mountinfo, 0o444);
        disk.add_file("/dev/termination-log", Vec::new(), 0o666);
        if kind == ImageKind::Agnhost {
            disk.add_file("/agnhost", Vec::new(), 0o755);
        }
        for (path, content) in layer {
            disk.add_file(&path, content, 0o644);
        }
        for (m, d) in mounts.iter().zip(&data) {
            let at = linux_path(&m.path, "/");
            disk.mount(&at, d, &m.sub_path);
            points.push(point(m, at));
        }
        return (disk, points);
    }
    for dir in [
        "C:\\Program Files",
        "C:\\ProgramData",
        "C:\\Users\\Public",
        "C:\\Windows\\System32",
    ] {
        disk.add_dir(dir);
    }
    // The kubelet mounts its managed hosts file (hostAliases included) into a Windows container
    // only on containerd: `shouldMountHostsFile` in pkg/kubelet/kubelet_pods.go ("if it is
    // Windows and ContainerD is used"); Docker on Windows cannot map a single file (W14).
    let managed =
        !ctx.host_process && node.is_some_and(|n| n.runtime == crate::config::profile::RuntimeKind::Containerd);
    if managed {
        disk.add_file(WINDOWS_HOSTS_PATH, linux_hosts(ctx).into_bytes(), 0o644);
    } else {
        disk.add_file(WINDOWS_HOSTS_PATH, WINDOWS_HOSTS.as_bytes().to_vec(), 0o644);
    }
    if ctx.host_process {
        if let Some(node) = node {
            disk.add_dir("C:\\var\\lib\\kubelet\\pods");
            for (path, content) in host_files(ctx, node) {
                disk.add_file(&path, content, 0o644);
            }
        }
        let sandbox = ctx.sandbox_mount_point();
        disk.add_dir(sandbox.trim_end_matches('\\'));
        // containerd 1.7 also binds volumes at their mountPath; 1.6 only under the sandbox.
        let bind = node.is_some_and(|n| n.runtime_version >= (1, 7));
        for (m, d) in mounts.iter().zip(&data) {
            let at = win_path(&m.path, "C:\\");
            let rel = at.get(3..).unwrap_or("");
            let under_sandbox = win_path(&format!("{sandbox}{rel}"), "C:\\");
            disk.mount(&under_sandbox, d, &m.sub_path);
            points.push(point(m, under_sandbox));
            if bind {
                disk.mount(&at, d, &m.sub_path);
                points.push(point(m, at));
            }
        }
        return (disk, points);
    }
    for (path, content) in layer {
        disk.add_file(&path, content, 0o644);
    }
    for (m, d) in mounts.iter().zip(&data) {
        let at = win_path(&m.path, "C:\\");
        disk.mount(&at, d, &m.sub_path);
        points.push(point(m, at));
    }
    (disk, points)
}

/// The kubelet-managed `/etc/hosts`.
pub(super) fn linux_hosts(ctx: &CommandContext) -> String {
    if ctx.host_network() {
        let (ip, name) = ctx
            .node
            .as_ref()
            .map(|n| (n.ip.to_string(), n.name.clone()))
            .unwrap_or_default();
        return format!(
            "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost \
            ip6-loopback\n{ip}\t{name}\n"
        );
    }
    let mut hosts = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n\
        fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n",
    );
    let ip = ctx.pod_ip();
    let hostname = ctx.hostname();
    let subdomain = json::str(ctx.spec(), "/subdomain");
    if !ip.is_empty() {
        if subdomain.is_empty() {
            let _ = writeln!(hosts, "{ip}\t{hostname}");
        } else {
            let domain = dns::cluster_dns(&ctx.dns_asker())
                .searches
                .last()
                .cloned()
                .unwrap_or_default();
            let _ = writeln!(
                hosts,
                "{ip}\t{hostname}.{subdomain}.{}.svc.{domain}\t{hostname}",
                ctx.namespace()
            );
        }
    }
    let aliases = json::array(ctx.spec(), "/hostAliases");
    if !aliases.is_empty() {
        hosts.push_str("\n# Entries added by HostAliases.\n");
        for alias in aliases {
            let names: Vec<&str> = json::array(alias, "/hostnames")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let _ = writeln!(hosts, "{}\t{}", json::str(alias, "/ip"), names.join("\t"));
        }
    }
    hosts
}

pub(super) fn resolv_conf(dns: &DnsConfig) -> String {
    let mut text = String::new();
    if !dns.searches.is_empty() {
        let _ = writeln!(text, "search {}", dns.searches.join(" "));
    }
    for ns in &dns.nameservers {
        let _ = writeln!(text, "nameserver {ns}");
    }
    if !dns.options.is_empty() {
        let opts: Vec<String> = dns
            .options
            .iter()
            .map(|(n, v)| match v {
                Some(v) => format!("{n}:{v}"),
                None => n.clone(),
            })
            .collect();
        let _ = writeln!(text, "options {}", opts.join(" "));
    }
    text
}

/// `/proc/self/mountinfo` of a Linux container: the mounts of `/proc/mounts` (`mounts_text`) with
/// IDs and propagation (proc(5): optional fields `shared:N` for a shared peer group, `master:N`
/// for a slave of one; none for a private mount). The kubelet translates a volumeMount's
/// `mountPropagation` into the CRI's (`translateMountPropagation` in
/// pkg/kubelet/kubelet_pods.go): HostToContainer is rslave (`master:`), Bidirectional rshared
/// (`shared:`), None or unset private (STO-MOUNTPROPAGATION; Windows containers have no mount
/// table and the Windows kubelet uses private for every mount).
pub(super) fn proc_mountinfo(mounts_text: &str, mounts: &[Mount]) -> String {
    let mut text = String::new();
    let mut peer_group = 0;
    for (i, line) in mounts_text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [source, path, fstype, options, ..] = f.as_slice() else {
            continue;
        };
        // Per-mount flags before the separator, the file system's own options after it.
        let mount_opts = options
            .split(',')
            .filter(|o| matches!(*o, "rw" | "ro" | "nosuid" | "nodev" | "noexec" | "relatime"))
            .collect::<Vec<_>>()
            .join(",");
        let super_opts = options;
        let propagation = mounts
            .iter()
            .find(|m| linux_path(&m.path, "/") == *path)
            .map_or("", |m| m.propagation.as_str());
        let optional = match propagation {
            "HostToContainer" => {
                peer_group += 1;
                format!(" master:{peer_group}")
            }
            "Bidirectional" => {
                peer_group += 1;
                format!(" shared:{peer_group}")
            }
            _ => String::new(),
        };
        let (id, parent) = (i + 100, if i == 0 { 99 } else { 100 });
        let _ = writeln!(
            text,
            "{id} {parent} 0:{} / {path} {mount_opts}{optional} - {fstype} {source} {super_opts}",
            i + 30
        );
    }
    text
}

/// `/proc/mounts` of a Linux container: overlay root, the runtime's mounts, the volumes (API
/// data and memory emptyDirs on tmpfs, the rest on the node's disk) and the masked /proc paths.
pub(super) fn proc_mounts(ctx: &CommandContext, mounts: &[Mount], data: &[VolumeData]) -> String {
    let snapshots = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots";
    let mut text = format!(
        "overlay / overlay rw,relatime,lowerdir={snapshots}/1/fs,upperdir={snapshots}/2/fs,\
         workdir={snapshots}/2/work 0 0\n\
         proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n\
         tmpfs /dev tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0\n\
         devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=666 0 0\n\
         mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0\n\
         sysfs /sys sysfs ro,nosuid,nodev,noexec,relatime 0 0\n\
         cgroup /sys/fs/cgroup cgroup2 ro,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0\n"
    );
    let memory_k = ctx
        .node
        .as_ref()
        .and_then(|n| n.allocatable.get("memory"))
        .and_then(|m| Quantity::parse(m))
        .map_or(65536, |q| q.value() / 1024);
    let disk_line =
        |path: &str, rw: &str| format!("/dev/root {path} ext4 {rw},relatime,discard,errors=remount-ro 0 0\n");
    for (m, d) in mounts.iter().zip(data) {
        let path = linux_path(&m.path, "/");
        let rw = if m.read_only || d.kind.api_data() { "ro" } else { "rw" };
        if d.kind.tmpfs() {
            let _ = writeln!(text, "tmpfs {path} tmpfs {rw},relatime,size={memory_k}k,inode64 0 0");
        } else {
            text.push_str(&disk_line(&path, rw));
        }
    }
    for path in [
        "/etc/hosts",
        "/dev/termination-log",
        "/etc/hostname",
        "/etc/resolv.conf",
    ] {
        text.push_str(&disk_line(path, "rw"));
    }
    text.push_str("shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n");
    for path in ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"] {
        let _ = writeln!(text, "proc {path} proc ro,nosuid,nodev,noexec,relatime 0 0");
    }
    for path in ["/proc/acpi", "/proc/scsi", "/sys/firmware"] {
        let _ = writeln!(text, "tmpfs {path} tmpfs ro,relatime,inode64 0 0");
    }
    for path in ["/proc/kcore", "/proc/keys", "/proc/timer_list"] {
        let _ = writeln!(text, "tmpfs {path} tmpfs rw,nosuid,size=65536k,mode=755,inode64 0 0");
    }
    text
}
