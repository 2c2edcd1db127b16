//! Windows system objects the cmdlets return: the ACL `Get-Acl` shows, the processes
//! `Get-CimInstance Win32_Process` lists (with a WQL `-Filter`).

use super::eval::glob;
use super::{Kind, V, obj, s};
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
    let Some(node) = s_.ctx.node.as_ref().filter(|_| s_.ctx.host_process) else {
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
         --enforce-node-allocatable=\"\" --resolv-conf=\"\" --log-dir=/var/log/kubelet --logtostderr=false",
        node.name, node.pause_image
    );
    list.push(proc_(
        pid(host::KUBELET_PID),
        pid(host::SERVICES_PID),
        "kubelet.exe",
        "C:\\k\\kubelet.exe",
        &kubelet,
    ));
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
