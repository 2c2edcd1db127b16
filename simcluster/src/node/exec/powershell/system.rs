//! Windows system objects the cmdlets return: the ACL `Get-Acl` shows, the processes
//! `Get-CimInstance Win32_Process` lists (with a WQL `-Filter`) and `Get-Process` finds, and the
//! .NET static members a script calls (`[byte[]]::new(n)`, an allocation under the container's
//! memory limit). Both the exec'd PowerShell ([`super::eval`]) and a container's main process
//! ([`super::walk`]) answer from here.

use super::invocation::{Invocation, texts};
use super::patterns::glob;
use super::{Kind, V, obj, s};
use crate::config::profile::NodeProfile;
use crate::node::exec::ps_errors::ps_error;
use crate::node::exec::session::Session;

/// The default ACL of what is created under `C:\` (inherited by the kubelet's directory).
pub(super) fn default_acl(path: &str) -> V {
    let rule = |who: &str, rights: &str| {
        obj(
            Kind::Rule,
            vec![
                ("FileSystemRights", s(rights)),
                ("AccessControlType", s("Allow")),
                ("IdentityReference", obj(Kind::Identity, vec![("Value", s(who))])),
                ("IsInherited", V::Bool(true)),
                ("InheritanceFlags", s("None")),
                ("PropagationFlags", s("None")),
            ],
        )
    };
    let rules = [
        ("NT AUTHORITY\\SYSTEM", "FullControl"),
        ("BUILTIN\\Administrators", "FullControl"),
        ("BUILTIN\\Users", "ReadAndExecute, Synchronize"),
    ];
    let access_text = rules
        .iter()
        .map(|(who, rights)| format!("{who} Allow  {rights}"))
        .collect::<Vec<_>>()
        .join("\n");
    obj(
        Kind::Acl,
        vec![
            ("Path", s(format!("Microsoft.PowerShell.Core\\FileSystem::{path}"))),
            ("Owner", s("NT AUTHORITY\\SYSTEM")),
            ("Group", s("NT AUTHORITY\\SYSTEM")),
            ("Access", V::Arr(rules.iter().map(|(w, r)| rule(w, r)).collect())),
            ("AccessToString", s(access_text)),
        ],
    )
}

/// The processes `Win32_Process` lists: the node's services for a HostProcess container, the
/// container's own otherwise.
pub(super) fn processes(s_: &Session) -> Vec<V> {
    process_table(s_.ctx.node.as_ref().filter(|_| s_.ctx.host_process))
}

/// The processes of [`processes`]: the host's services when `host` is the node of a
/// HostProcess container (SEC-HOSTPROCESS: it runs on the host and sees its processes), a
/// process-isolated container's own processes otherwise.
pub(super) fn process_table(host: Option<&NodeProfile>) -> Vec<V> {
    use crate::node::host;
    let pid = i64::from;
    let proc_ = |pid: i64, ppid: i64, name: &str, exe: &str, cmdline: &str| {
        obj(
            Kind::Cim,
            vec![
                ("Name", s(name)),
                ("ProcessId", V::Int(pid)),
                ("ParentProcessId", V::Int(ppid)),
                ("ExecutablePath", if exe.is_empty() { V::Null } else { s(exe) }),
                ("CommandLine", if cmdline.is_empty() { V::Null } else { s(cmdline) }),
            ],
        )
    };
    let sys32 = "C:\\Windows\\system32";
    let mut list = vec![
        proc_(0, 0, "System Idle Process", "", ""),
        proc_(pid(host::SYSTEM_PID), 0, "System", "", ""),
        proc_(312, 4, "smss.exe", "", ""),
        proc_(420, 412, "csrss.exe", "", ""),
        proc_(pid(host::WININIT_PID), 412, "wininit.exe", "", ""),
        proc_(pid(host::SERVICES_PID), pid(host::WININIT_PID), "services.exe", "", ""),
        proc_(
            pid(host::LSASS_PID),
            pid(host::WININIT_PID),
            "lsass.exe",
            &format!("{sys32}\\lsass.exe"),
            &format!("{sys32}\\lsass.exe"),
        ),
        proc_(
            pid(host::SVCHOST_PID),
            pid(host::SERVICES_PID),
            "svchost.exe",
            &format!("{sys32}\\svchost.exe"),
            &format!("{sys32}\\svchost.exe -k DcomLaunch -p"),
        ),
    ];
    let ps = proc_(
        5120,
        4800,
        "powershell.exe",
        "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe",
        "powershell.exe",
    );
    let Some(node) = host else {
        list.push(proc_(
            1020,
            pid(host::SERVICES_PID),
            "CExecSvc.exe",
            &format!("{sys32}\\CExecSvc.exe"),
            &format!("{sys32}\\CExecSvc.exe"),
        ));
        list.push(ps);
        return list;
    };
    // kubelet and containerd as sig-windows-tools installs them (no --root-dir: the kubelet
    // keeps its default C:\var\lib\kubelet).
    let containerd = "C:\\Program Files\\containerd\\containerd.exe";
    list.push(proc_(
        pid(host::CONTAINERD_PID),
        pid(host::SERVICES_PID),
        "containerd.exe",
        containerd,
        &format!("\"{containerd}\" --run-service"),
    ));
    let kubelet = format!(
        "C:\\k\\kubelet.exe --cert-dir=C:\\var\\lib\\kubelet\\pki --config=/var/lib/kubelet/config.yaml \
         --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf \
         --hostname-override={} --container-runtime-endpoint=npipe:////./pipe/containerd-containerd \
         --pod-infra-container-image={} --enable-debugging-handlers --cgroups-per-qos=false \
         --enforce-node-allocatable=\"\" --resolv-conf=\"\" --log-dir=/var/log/kubelet --logtostderr=false{}",
        node.name,
        node.pause_image,
        node.windows_priority_class
            .as_ref()
            .map(|c| format!(" --windows-priorityclass={c}"))
            .unwrap_or_default()
    );
    list.push(proc_(
        pid(host::KUBELET_PID),
        pid(host::SERVICES_PID),
        "kubelet.exe",
        "C:\\k\\kubelet.exe",
        &kubelet,
    ));
    // The Windows kube-proxy: a service of its own, or a HostProcess container's process (which
    // the host lists like any other: SEC-HOSTPROCESS).
    if let Some((exe, cmdline)) = host::kube_proxy_process(node) {
        list.push(proc_(
            i64::try_from(crate::node::nodelogs::service_pid(node, "kube-proxy")).unwrap_or(4000),
            pid(host::SERVICES_PID),
            "kube-proxy.exe",
            &exe,
            &cmdline,
        ));
    }
    list.push(ps);
    list
}

/// A WQL filter `Prop = 'v' [AND Prop LIKE 'p%']…` as a predicate.
pub(super) fn wql_matches(filter: &str, item: &V) -> bool {
    let lower = filter.to_ascii_lowercase();
    let mut rest = filter;
    let mut offset = 0;
    let mut conditions: Vec<&str> = Vec::new();
    while let Some(at) = lower.get(offset..).and_then(|l| l.find(" and ")) {
        let cut = at;
        conditions.push(rest.get(..cut).unwrap_or(""));
        rest = rest.get(cut + 5..).unwrap_or("");
        offset += cut + 5;
    }
    conditions.push(rest);
    conditions.iter().all(|c| {
        let c = c.trim();
        let (prop, op, value) = if let Some((p, v)) = c.split_once("!=") {
            (p, "!=", v)
        } else if let Some((p, v)) = c.split_once('=') {
            (p, "=", v)
        } else if let Some(i) = c.to_ascii_lowercase().find(" like ") {
            (&c[..i], "like", &c[i + 6..])
        } else {
            return false;
        };
        let value = value.trim().trim_matches('\'').trim_matches('"');
        let got = item.member(prop.trim()).text();
        match op {
            "=" => got.eq_ignore_ascii_case(value),
            "!=" => !got.eq_ignore_ascii_case(value),
            _ => glob(&value.replace('%', "*").replace('_', "?"), &got, false),
        }
    })
}

/// `Get-Process [[-Name] name…]`: the processes of `table` (`Win32_Process` objects) as
/// `System.Diagnostics.Process` objects (`ProcessName` without `.exe`, `Id`), all of them without
/// a name; a name without wildcards that matches nothing writes PowerShell's non-terminating
/// `NoProcessFoundForGivenName` error (which `-ErrorAction SilentlyContinue` drops), so the
/// cmdlet outputs nothing and `$?` is false. `text` is the pipeline element, for the error record.
pub(super) fn get_process(call: &Invocation, table: &[V], text: &str) -> (Vec<V>, Vec<String>) {
    let procs: Vec<V> = table
        .iter()
        .filter(|p| p.member("ProcessId").int().is_some_and(|id| id != 0))
        .map(|p| {
            let name = p.member("Name").text();
            let short = name
                .strip_suffix(".exe")
                .or_else(|| name.strip_suffix(".EXE"))
                .unwrap_or(&name)
                .to_string();
            obj(
                Kind::Row("System.Diagnostics.Process"),
                vec![
                    ("Id", p.member("ProcessId")),
                    ("ProcessName", s(short.clone())),
                    ("Name", s(short)),
                    ("Path", p.member("ExecutablePath")),
                ],
            )
        })
        .collect();
    let names = texts(call.value(&["name", "processname"], 0));
    if names.is_empty() {
        return (procs, Vec::new());
    }
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for name in &names {
        let hits: Vec<V> = procs
            .iter()
            .filter(|p| glob(name, &p.member("ProcessName").text(), false))
            .cloned()
            .collect();
        if hits.is_empty() && !name.contains(['*', '?', '[']) {
            errors.push(ps_error(
                text,
                "Get-Process",
                &format!(
                    "Cannot find a process with the name \"{name}\". Verify the process name and call the cmdlet again."
                ),
                &format!("ObjectNotFound: ({name}:String) [Get-Process], ProcessCommandException"),
                "NoProcessFoundForGivenName,Microsoft.PowerShell.Commands.GetProcessCommand",
            ));
        }
        found.extend(hits);
    }
    (found, errors)
}

/// `Get-Service [[-Name] name…]`: the node's services ([`crate::node::winservices`]) on the host
/// of a HostProcess container (a container's own service control manager is not modelled: it
/// lists none), as `ServiceController` rows (`Status`, `Name`, `DisplayName`, the columns of
/// the default table view); names match case-insensitively with wildcards, as the service
/// control manager's do. A name without wildcards that matches nothing writes PowerShell's
/// non-terminating `NoServiceFoundForGivenName` error.
pub(super) fn get_service(call: &Invocation, session: &Session, text: &str) -> (Vec<V>, Vec<String>) {
    let host = session.ctx.node.as_ref().filter(|_| session.ctx.host_process);
    let all: Vec<V> = host
        .map(crate::node::winservices::services)
        .unwrap_or_default()
        .into_iter()
        .map(|svc| {
            obj(
                Kind::Row("System.ServiceProcess.ServiceController"),
                vec![
                    ("Status", s(if svc.running { "Running" } else { "Stopped" })),
                    ("Name", s(svc.name)),
                    ("DisplayName", s(svc.display)),
                ],
            )
        })
        .collect();
    let names = texts(call.value(&["name"], 0));
    if names.is_empty() {
        return (all, Vec::new());
    }
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for name in &names {
        let hits: Vec<V> = all
            .iter()
            .filter(|v| glob(name, &v.member("Name").text(), false))
            .cloned()
            .collect();
        if hits.is_empty() && !name.contains(['*', '?', '[']) {
            errors.push(ps_error(
                text,
                "Get-Service",
                &format!("Cannot find any service with service name '{name}'."),
                &format!("ObjectNotFound: ({name}:String) [Get-Service], ServiceCommandException"),
                "NoServiceFoundForGivenName,Microsoft.PowerShell.Commands.GetServiceCommand",
            ));
        }
        found.extend(hits);
    }
    (found, errors)
}

/// The modules a host's Windows PowerShell can import: the in-box `HostNetworkingService`
/// where the host has the HNS cmdlets (`hnsCmdlets`; projectcalico/calico#6843), and the
/// platform's own copy of microsoft/SDN's HNS module on disk — AKS `C:\k\hns.v2.psm1`
/// (AgentBaker `kubeletstart.ps1`: `ipmo $global:HNSModule`), GKE's `C:\etc\kubernetes\hns.psm1`
/// (kubernetes `cluster/gce/windows/k8s-node-setup.psm1`). Importing a path does not add cmdlets
/// here (the HNS cmdlets are the host's `hnsCmdlets`); modules PowerShell ships
/// (`Microsoft.PowerShell.*`, `NetTCPIP`, `NetAdapter`, `CimCmdlets`) import everywhere.
/// Elsewhere: PowerShell's `Modules_ModuleNotFound` error (non-terminating;
/// `-ErrorAction SilentlyContinue` drops it).
pub(super) fn import_module(call: &Invocation, session: &Session, text: &str) -> Option<String> {
    let host = session.ctx.node.as_ref().filter(|_| session.ctx.host_process);
    for name in texts(call.value(&["name"], 0)) {
        let lower = name.to_ascii_lowercase();
        let shipped = lower.starts_with("microsoft.powershell")
            || matches!(lower.as_str(), "nettcpip" | "netadapter" | "cimcmdlets" | "dnsclient");
        let found = shipped
            || host.is_some_and(|node| match lower.as_str() {
                "hostnetworkingservice" => node.hns_cmdlets,
                r"c:\k\hns.v2.psm1" => node.platform == crate::config::platform::Platform::Aks,
                r"c:\etc\kubernetes\hns.psm1" => node.platform == crate::config::platform::Platform::Gke,
                _ => false,
            });
        if !found {
            let message = format!(
                "The specified module '{name}' was not loaded because no valid module file was found in any module directory."
            );
            return Some(ps_error(
                text,
                "Import-Module",
                &message,
                &format!("ResourceUnavailable: ({name}:String) [Import-Module], FileNotFoundException"),
                "Modules_ModuleNotFound,Microsoft.PowerShell.Commands.ImportModuleCommand",
            ));
        }
    }
    None
}

/// Whether an `Import-Module` call names microsoft/SDN's `hns.v2.psm1` (AKS keeps it at
/// `C:\k\hns.v2.psm1`).
pub(super) fn imports_hns_v2(call: &Invocation) -> bool {
    texts(call.value(&["name"], 0))
        .iter()
        .any(|n| n.to_ascii_lowercase().ends_with("hns.v2.psm1"))
}

/// What calling a .NET static member did not give.
#[derive(Debug)]
pub(super) enum DotNetMiss {
    /// A type or member the simulation does not model.
    Unmodelled,
    /// The call threw: the exception's message.
    Threw(String),
}

/// The message of `System.OutOfMemoryException`.
pub(super) const OUT_OF_MEMORY: &str = "Exception of type 'System.OutOfMemoryException' was thrown.";

/// `new byte[n]` under the container's memory limit. MEM-NO-OOM-KILL: a process that commits
/// more than its Windows job object allows is not killed; the commit fails and .NET throws
/// `OutOfMemoryException` (1 GiB is within a byte array's range, so not "Array dimensions
/// exceeded supported range."). The agnhost/busybox e2e images ship PowerShell 6.2 (.NET Core
/// 2.1; AGNW) and Server Core's Windows PowerShell runs on .NET Framework, neither of which has a GC heap
/// hard limit: the job's limit is what fails the commit. On Linux the .NET runtime of PowerShell 7
/// caps its GC heap at 75% of the cgroup's limit (learn.microsoft.com
/// dotnet/core/runtime-config/garbage-collector, GCHeapHardLimit), so the managed allocation
/// throws before the kernel's OOM killer is involved. The process's own baseline is not counted.
pub(super) fn byte_array(n: &V, windows: bool, limit: Option<u128>) -> Result<V, DotNetMiss> {
    let n = match n {
        // A bare word (`New-Object byte[] 1GB`) converts as a number literal does.
        V::Str(t) => super::syntax::number(&t.trim().to_ascii_lowercase()).unwrap_or(V::Null),
        other => other.clone(),
    };
    let Some(len) = n.int().filter(|l| *l >= 0) else {
        return Err(DotNetMiss::Unmodelled);
    };
    if len > 0x7FFF_FFC7 {
        return Err(DotNetMiss::Threw("Array dimensions exceeded supported range.".into()));
    }
    let bytes = u128::try_from(len).unwrap_or(0);
    let room = limit.map(|l| if windows { l } else { l / 4 * 3 });
    if room.is_some_and(|r| bytes > r) {
        return Err(DotNetMiss::Threw(OUT_OF_MEMORY.into()));
    }
    Ok(obj(
        Kind::Bytes,
        vec![
            ("Length", V::Int(len)),
            ("LongLength", V::Int(len)),
            ("Count", V::Int(len)),
        ],
    ))
}

/// `[type]::Member` / `[type]::Method(args)`: `[byte[]]::new(n)` ([`byte_array`]); other types
/// and members are not modelled.
pub(super) fn static_member(
    ty: &str,
    member: &str,
    args: Option<&[V]>,
    windows: bool,
    limit: Option<u128>,
) -> Result<V, DotNetMiss> {
    match (ty.trim(), member.to_ascii_lowercase().as_str(), args) {
        ("byte[]" | "system.byte[]", "new", Some([n])) => byte_array(n, windows, limit),
        _ => Err(DotNetMiss::Unmodelled),
    }
}

/// `New-Object [-TypeName] byte[] [-ArgumentList] n` ([`byte_array`]); other types are not modelled.
pub(super) fn new_object(call: &Invocation, windows: bool, limit: Option<u128>) -> Result<V, DotNetMiss> {
    let ty = call.value(&["typename"], 0).map(|v| v.text()).unwrap_or_default();
    let args = call.value(&["argumentlist"], 1).map(V::items).unwrap_or_default();
    static_member(&ty.to_ascii_lowercase(), "new", Some(&args), windows, limit)
}

/// The error record of a .NET exception thrown by a method call (`Exception calling "m" with "n"
/// argument(s): "…"`, a statement-terminating error): `head` is the cmdlet that called it
/// (`New-Object`), if any; `statement` the statement's text.
pub(super) fn method_exception(statement: &str, head: &str, method: &str, argc: usize, message: &str) -> String {
    let (text, category, fqid) = method_exception_parts(head, method, argc, message);
    ps_error(statement, head, &text, &category, &fqid)
}

/// The message, category and error id of [`method_exception`].
pub(super) fn method_exception_parts(head: &str, method: &str, argc: usize, message: &str) -> (String, String, String) {
    let text = format!("Exception calling \"{method}\" with \"{argc}\" argument(s): \"{message}\"");
    if head.is_empty() {
        let id = message
            .strip_prefix("Exception of type 'System.")
            .and_then(|m| m.split_once('\''))
            .map_or("MethodInvocationException", |(ty, _)| ty);
        (
            text,
            "NotSpecified: (:) [], MethodInvocationException".into(),
            id.into(),
        )
    } else {
        (
            text,
            format!("InvalidOperation: (:) [{head}], MethodInvocationException"),
            "ConstructorInvokedThrowException,Microsoft.PowerShell.Commands.NewObjectCommand".into(),
        )
    }
}

/// The exec'd container's memory limit (`resources.limits.memory`), in bytes.
pub(super) fn container_limit(s_: &Session) -> Option<u128> {
    s_.ctx
        .container_spec()
        .and_then(|c| c.pointer("/resources/limits/memory"))
        .and_then(crate::vocab::quantity::Quantity::from_json)
        .and_then(|q| u128::try_from(q.value()).ok())
}
