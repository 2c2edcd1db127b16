//! Tests of the exec'd commands: every command family, shell and tool in Linux, Windows and
//! HostProcess containers; the main process agreeing with exec is in [`main_process`].

use std::net::Ipv4Addr;

use base64::Engine as _;
use rstest::rstest;
use serde_json::{Value, json};

use super::cmd::expand_percent;
use super::support::{EnvBuilder, ImageKind, image_kind};
use super::volumes::{linux_path, win_path};
use super::*;
use crate::config::profile::RuntimeKind;
use crate::config::topology::Topology;
use crate::node::runtime::ExitStatus;
use crate::store::Part;

mod chains;
mod main_process;

const NS: &str = "probe";
const MARKER: &str = "s3cr3t-marker";
const BUSYBOX: &str = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1";
const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.52";
const SERVERCORE: &str = "mcr.microsoft.com/windows/servercore:ltsc2022";
const NANOSERVER: &str = "mcr.microsoft.com/windows/nanoserver:ltsc2022";
const NONROOT: &str = "registry.k8s.io/e2e-test-images/nonroot:1.4";
const HPC_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";

#[rstest]
#[case::windows_ignores_case(true, &[("Path", "a"), ("PATH", "b"), ("x", "1")], &[("Path", "b"), ("x", "1")])]
#[case::linux_keeps_case(false, &[("Path", "a"), ("PATH", "b")], &[("Path", "a"), ("PATH", "b")])]
#[case::last_value_wins_in_place(false, &[("A", "1"), ("B", "2"), ("A", "3")], &[("A", "3"), ("B", "2")])]
fn environment_names_compare_as_the_os_does(
    #[case] windows: bool,
    #[case] sets: &[(&str, &str)],
    #[case] want: &[(&str, &str)],
) {
    let mut env = EnvBuilder::new(windows);
    for (k, v) in sets {
        env.set((*k).to_string(), (*v).to_string());
    }
    assert_eq!(env.get("path").is_some(), windows);
    let got: Vec<(String, String)> = env.into_vars();
    let want: Vec<(String, String)> = want.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
    assert_eq!(got, want);
}

struct Fixture {
    store: Arc<Store>,
    profiles: Arc<Vec<NodeProfile>>,
    volumes: Arc<VolumeStore>,
}

impl Fixture {
    fn new() -> Self {
        Self::with_profiles(|_| {})
    }

    fn with_profiles(tweak: impl FnOnce(&mut Vec<NodeProfile>)) -> Self {
        let store = Arc::new(Store::default());
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": NS}}))
            .expect("namespace");
        let encoded = base64::engine::general_purpose::STANDARD.encode(MARKER);
        store
            .create(
                resources::core("secrets"),
                NS,
                json!({"metadata": {"name": "creds"}, "data": {"password": encoded}}),
            )
            .expect("secret");
        store
            .create(
                resources::core("configmaps"),
                NS,
                json!({"metadata": {"name": "settings"}, "data": {"mode": "fast"}}),
            )
            .expect("configmap");
        let topology = Topology::default_cluster().instant();
        let ips: Vec<Ipv4Addr> = (0..topology.nodes.len())
            .map(|i| Ipv4Addr::new(10, 1, 0, 10 + u8::try_from(i).expect("few nodes")))
            .collect();
        let mut profiles = crate::config::profile::profiles(&topology, &ips);
        tweak(&mut profiles);
        Self {
            store,
            profiles: Arc::new(profiles),
            volumes: Arc::new(VolumeStore::new()),
        }
    }

    fn runtime(&self) -> SimRuntime {
        SimRuntime::new(self.store.clone(), self.profiles.clone()).with_volumes(self.volumes.clone())
    }

    fn profile(&self, node: &str) -> &NodeProfile {
        self.profiles.iter().find(|p| p.name == node).expect("node profile")
    }

    /// Creates a running pod bound to `node` with the given spec fields.
    fn pod(&self, name: &str, node: &str, spec: Value) -> Obj {
        let mut spec = spec;
        spec["nodeName"] = json!(node);
        let created = self
            .store
            .create(
                resources::core("pods"),
                NS,
                json!({"metadata": {"name": name}, "spec": spec}),
            )
            .expect("pod");
        let index = self.profile(node).index;
        let ip = format!("10.244.{index}.7");
        self.store
            .modify(resources::core("pods"), NS, created.name(), Part::Status, |v| {
                v["status"]["phase"] = json!("Running");
                v["status"]["podIP"] = json!(ip);
                Ok(())
            })
            .expect("status")
    }

    /// A pod with one container `c` mounting the `creds` secret and `settings` configMap.
    fn app(&self, name: &str, node: &str, image: &str, extra: Value) -> Obj {
        let windows = self.profile(node).is_windows();
        let (secret_at, config_at) = if windows {
            ("C:\\secrets", "C:\\config")
        } else {
            ("/etc/secret", "/etc/config")
        };
        let mut container = json!({
            "name": "c",
            "image": image,
            "env": [
                {"name": "GREETING", "value": "hi"},
                {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "COMPOSED", "value": "$(GREETING)-$(POD_NAME)"},
            ],
            "volumeMounts": [
                {"name": "creds", "mountPath": secret_at},
                {"name": "settings", "mountPath": config_at},
            ],
        });
        let mut spec = json!({
            "containers": [],
            "volumes": [
                {"name": "creds", "secret": {"secretName": "creds"}},
                {"name": "settings", "configMap": {"name": "settings"}},
            ],
        });
        if let Some(c) = extra.get("container").and_then(Value::as_object) {
            for (k, v) in c {
                container[k] = v.clone();
            }
        }
        if let Some(p) = extra.get("pod").and_then(Value::as_object) {
            for (k, v) in p {
                spec[k] = v.clone();
            }
        }
        spec["containers"] = json!([container]);
        self.pod(name, node, spec)
    }
}

fn request(pod: &Obj, argv: &[&str]) -> ExecRequest {
    ExecRequest {
        pod: pod.clone(),
        container: "c".into(),
        command: argv.iter().map(|s| s.to_string()).collect(),
        stdin: None,
        tty: false,
    }
}

async fn exec(f: &Fixture, pod: &Obj, argv: &[&str]) -> ExecOutput {
    f.runtime().exec(request(pod, argv)).await
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn runtime_message(o: &ExecOutput) -> String {
    match &o.exit {
        ExitStatus::Error(m) => m.clone(),
        other => panic!("expected a runtime error, got {other:?} (stdout {:?})", text(&o.stdout)),
    }
}

#[rstest]
#[case::hostname(&["hostname"], "web-1\n", "", 0)]
#[case::secret_file(&["cat", "/etc/secret/password"], MARKER, "", 0)]
#[case::configmap_file(&["cat", "/etc/config/mode"], "fast", "", 0)]
#[case::ls_secret(&["ls", "/etc/secret"], "password\n", "", 0)]
#[case::printenv(&["printenv", "GREETING"], "hi\n", "", 0)]
#[case::printenv_missing(&["printenv", "NOPE"], "", "", 1)]
#[case::env_from_secret(&["printenv", "FROM_SECRET"], "s3cr3t-marker\n", "", 0)]
#[case::env_refs(&["printenv", "COMPOSED"], "hi-web-1\n", "", 0)]
#[case::echo(&["echo", "a", "b"], "a b\n", "", 0)]
#[case::true_(&["true"], "", "", 0)]
#[case::false_(&["false"], "", "", 1)]
#[case::sh_exit(&["sh", "-c", "echo $GREETING && exit 3"], "hi\n", "", 3)]
#[case::bin_sh_or(&["/bin/sh", "-c", "false || echo fallback"], "fallback\n", "", 0)]
#[case::sh_pipe(&["sh", "-c", "cat /etc/config/mode | grep -c fast"], "1\n", "", 0)]
#[case::sh_test(&["sh", "-c", "test -f /etc/secret/password && echo yes"], "yes\n", "", 0)]
#[case::sh_redirect(&["sh", "-c", "cat /nope 2>/dev/null; echo $?"], "1\n", "", 0)]
#[case::sh_quotes(&["sh", "-c", "echo 'a  b' \"$GREETING there\""], "a  b hi there\n", "", 0)]
#[case::sh_unknown(&["sh", "-c", "unknown"], "", "sh: unknown: not found\n", 127)]
#[case::cat_missing(&["cat", "x"], "", "cat: can't open 'x': No such file or directory\n", 1)]
#[case::whoami(&["whoami"], "root\n", "", 0)]
#[case::id(&["id"], "uid=0(root) gid=0(root) groups=0(root)\n", "", 0)]
#[case::stat_default_mode(&["stat", "-c", "%a", "/etc/secret/password"], "644\n", "", 0)]
#[case::sa_namespace(&["cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"], NS, "", 0)]
#[case::resolv(
    &["cat", "/etc/resolv.conf"],
    "search probe.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n",
    "",
    0
)]
#[case::hosts(&["sh", "-c", "grep web-1 /etc/hosts"], "10.244.1.7\tweb-1\n", "", 0)]
#[tokio::test]
async fn linux_commands(#[case] argv: &[&str], #[case] stdout: &str, #[case] stderr: &str, #[case] code: i32) {
    let f = Fixture::new();
    let pod = f.app("web-1", "linux-1", BUSYBOX, json!({}));
    let o = exec(&f, &pod, argv).await;
    assert_eq!(text(&o.stdout), stdout, "{argv:?}");
    assert_eq!(text(&o.stderr), stderr, "{argv:?}");
    assert_eq!(o.exit, ExitStatus::Code(code), "{argv:?}");
}

#[rstest]
#[case::hostname(&["hostname"], "web-win\r\n", "", 0)]
#[case::type_secret(&["cmd", "/c", "type", "C:\\secrets\\password"], MARKER, "", 0)]
#[case::type_any_case(&["cmd.exe", "/c", "type C:\\SECRETS\\Password"], MARKER, "", 0)]
#[case::type_configmap(&["cmd", "/S", "/C", "type C:\\config\\mode"], "fast", "", 0)]
#[case::echo_env(&["cmd", "/c", "echo", "%GREETING%"], "hi\r\n", "", 0)]
#[case::echo_unknown(&["cmd", "/c", "echo %NOPE% and %GREETING%"], "%NOPE% and hi\r\n", "", 0)]
#[case::echo_username(&["cmd", "/c", "echo %USERNAME%"], "ContainerAdministrator\r\n", "", 0)]
#[case::chained(&["cmd", "/S", "/C", "echo one && echo two"], "one \r\ntwo\r\n", "", 0)]
#[case::exit(&["cmd", "/c", "exit 7"], "", "", 7)]
#[case::set_name(&["cmd", "/c", "set COMPUTERNAME"], "COMPUTERNAME=WEB-WIN\r\n", "", 0)]
#[case::set_user(&["cmd", "/c", "set USERNAME"], "USERNAME=ContainerAdministrator\r\n", "", 0)]
#[case::whoami(&["whoami"], "user manager\\containeradministrator\r\n", "", 0)]
#[case::type_missing(&["cmd", "/c", "type C:\\nope.txt"], "", "The system cannot find the file specified.\r\n", 1)]
#[case::proc_mounts(&["cmd", "/c", "type /proc/mounts"], "", "The system cannot find the file specified.\r\n", 1)]
#[case::unknown(
    &["cmd", "/c", "unknown"],
    "",
    "'unknown' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n",
    1
)]
#[case::ps_content(&["powershell", "-Command", "Get-Content C:\\secrets\\password"], "s3cr3t-marker\r\n", "", 0)]
#[case::ps_env(&["powershell.exe", "-NoProfile", "-Command", "$env:GREETING"], "hi\r\n", "", 0)]
#[case::ps_test_path(
    &["powershell", "-c", "Test-Path C:\\secrets\\password; Test-Path C:\\nope"],
    "True\r\nFalse\r\n",
    "",
    0
)]
#[case::ps_exit(&["powershell", "-Command", "exit 4"], "", "", 4)]
#[case::ps_pipe(&["powershell", "-Command", "Get-Content C:\\config\\mode | Out-Null"], "", "", 0)]
#[tokio::test]
async fn windows_commands(#[case] argv: &[&str], #[case] stdout: &str, #[case] stderr: &str, #[case] code: i32) {
    let f = Fixture::new();
    let pod = f.app("web-win", "win2022-1", SERVERCORE, json!({}));
    let o = exec(&f, &pod, argv).await;
    assert_eq!(text(&o.stdout), stdout, "{argv:?}");
    assert_eq!(text(&o.stderr), stderr, "{argv:?}");
    assert_eq!(o.exit, ExitStatus::Code(code), "{argv:?}");
}

/// STO-DEFAULTMODE: a Windows file's permissions are its ACL (WI31), the one it inherits from the
/// kubelet's directory, whatever defaultMode the Secret volume sets (WSTO "DefaultMode (due to
/// UID/GID dependency)" unsupported); Linux applies the mode (the upstream e2e "Secrets should be
/// consumable from pods in volume with defaultMode set [LinuxOnly]").
#[tokio::test]
async fn a_default_mode_sets_linux_modes_and_leaves_windows_acls() {
    let f = Fixture::new();
    let with_mode = json!({"pod": {"volumes": [
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 256}},
        {"name": "settings", "configMap": {"name": "settings"}},
    ]}});
    let lin = f.app("modes", "linux-1", AGNHOST, with_mode.clone());
    let o = exec(&f, &lin, &["stat", "-L", "-c", "mode=%a", "/etc/secret/password"]).await;
    assert_eq!(text(&o.stdout), "mode=400\n");
    let win = f.app("modes-win", "win2022-1", NANOSERVER, with_mode);
    let o = exec(&f, &win, &["cmd", "/c", "icacls C:\\secrets\\password"]).await;
    let acl = text(&o.stdout);
    assert_eq!(o.exit, ExitStatus::Code(0), "{acl}");
    assert!(
        acl.starts_with("C:\\secrets\\password NT AUTHORITY\\SYSTEM:(I)(F)\r\n"),
        "{acl}"
    );
    assert!(acl.contains("BUILTIN\\Users:(I)(RX)"), "{acl}");
    assert!(!acl.contains("mode="), "{acl}");
    let o = exec(&f, &win, &["icacls", "C:\\nope"]).await;
    assert_eq!(o.exit, ExitStatus::Code(2));
    assert!(text(&o.stderr).contains("cannot find the file"), "{}", text(&o.stderr));
}

/// STO-MOUNTPROPAGATION: /proc/self/mountinfo shows what the kubelet asked the runtime for
/// (KPODS translateMountPropagation): HostToContainer is a slave (`master:N`), Bidirectional a
/// shared mount (`shared:N`), an unset field private (no optional field; proc(5)).
#[rstest]
#[case::host_to_container(Some("HostToContainer"), Some(" master:1 "))]
#[case::bidirectional(Some("Bidirectional"), Some(" shared:1 "))]
#[case::private(None, None)]
#[tokio::test]
async fn mountinfo_shows_the_propagation_of_a_mount(#[case] propagation: Option<&str>, #[case] optional: Option<&str>) {
    let f = Fixture::new();
    let mut mount = json!({"name": "hostetc", "mountPath": "/mnt/propagated", "readOnly": true});
    if let Some(p) = propagation {
        mount["mountPropagation"] = json!(p);
    }
    let pod = f.app(
        "prop",
        "linux-1",
        AGNHOST,
        json!({
            "pod": {"volumes": [
                {"name": "creds", "secret": {"secretName": "creds"}},
                {"name": "settings", "configMap": {"name": "settings"}},
                {"name": "hostetc", "hostPath": {"path": "/etc", "type": "Directory"}},
            ]},
            "container": {"volumeMounts": [mount]},
        }),
    );
    let info = text(&exec(&f, &pod, &["cat", "/proc/self/mountinfo"]).await.stdout);
    let line = info
        .lines()
        .find(|l| l.contains(" /mnt/propagated "))
        .unwrap_or_else(|| panic!("no line for the mount in {info}"));
    assert!(
        line.contains(" ro,relatime") && line.contains(" - ext4 /dev/root "),
        "{line}"
    );
    match optional {
        Some(o) => assert!(line.contains(o), "{line}"),
        None => assert!(!line.contains("master:") && !line.contains("shared:"), "{line}"),
    }
    assert!(
        info.lines()
            .next()
            .is_some_and(|l| l.contains(" / / rw,relatime - overlay overlay ")),
        "{info}"
    );
}

#[tokio::test]
async fn powershell_errors_look_like_powershell() {
    let f = Fixture::new();
    let pod = f.app("web-win", "win2022-1", SERVERCORE, json!({}));
    let o = exec(&f, &pod, &["powershell", "-Command", "Get-Content C:\\nope"]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
    assert!(
        text(&o.stderr).starts_with("Get-Content : Cannot find path 'C:\\nope' because it does not exist.\r\n"),
        "{}",
        text(&o.stderr)
    );
    let o = exec(&f, &pod, &["powershell", "-Command", "Frobnicate-Thing"]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
    assert!(text(&o.stderr).contains("The term 'Frobnicate-Thing' is not recognized as the name of a cmdlet"));
}

#[rstest]
#[case::ws2019("win2019-1", "17763")]
#[case::ws2022("win2022-1", "20348")]
#[tokio::test]
async fn ver_prints_the_node_build(#[case] node: &str, #[case] build: &str) {
    let f = Fixture::new();
    let pod = f.app("ver", node, SERVERCORE, json!({}));
    let o = exec(&f, &pod, &["cmd", "/c", "ver"]).await;
    let kernel = &f.profile(node).kernel_version;
    assert_eq!(text(&o.stdout), format!("\r\nMicrosoft Windows [Version {kernel}]\r\n"));
    assert!(kernel.contains(build));
    assert_eq!(o.exit, ExitStatus::Code(0));
}

#[rstest]
#[case::linux("linux-1", "probe.svc.cluster.local,svc.cluster.local,cluster.local\n")]
#[case::ws2019("win2019-1", "probe.svc.cluster.local\n")]
#[case::ws2022("win2022-1", "probe.svc.cluster.local\n")]
#[tokio::test]
async fn dns_suffix_is_single_on_windows(#[case] node: &str, #[case] suffixes: &str) {
    let f = Fixture::new();
    let pod = f.app("dns", node, AGNHOST, json!({}));
    let o = exec(&f, &pod, &["/agnhost", "dns-suffix"]).await;
    assert_eq!(text(&o.stdout), suffixes);
    let o = exec(&f, &pod, &["/agnhost", "dns-server-list"]).await;
    assert_eq!(text(&o.stdout), "10.96.0.10\n");
}

#[tokio::test]
async fn custom_dns_config_reaches_resolv_conf_and_ipconfig() {
    let f = Fixture::new();
    let dns = json!({"pod": {"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["10.96.0.10", "1.1.1.1"], "searches": ["default.svc.cluster.local"],
        "options": [{"name": "ndots", "value": "2"}]}}});
    let linux = f.app("dns-lin", "linux-1", AGNHOST, dns.clone());
    let o = exec(&f, &linux, &["cat", "/etc/resolv.conf"]).await;
    assert_eq!(
        text(&o.stdout),
        "search default.svc.cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:2\n"
    );
    let windows = f.app("dns-win", "win2022-1", AGNHOST, dns);
    let o = exec(&f, &windows, &["ipconfig", "/all"]).await;
    let shown = text(&o.stdout);
    assert!(shown.contains("1.1.1.1"), "{shown}");
    assert!(
        shown.contains("IPv4 Address. . . . . . . . . . . : 10.244.3.7(Preferred)"),
        "{shown}"
    );
    let o = exec(&f, &windows, &["agnhost", "dns-suffix"]).await;
    assert_eq!(text(&o.stdout), "default.svc.cluster.local\n");
}

#[rstest]
#[case::image_default(None, None, "ContainerUser")]
#[case::container(None, Some("ContainerAdministrator"), "ContainerAdministrator")]
#[case::pod(Some("ContainerAdministrator"), None, "ContainerAdministrator")]
#[case::container_wins(Some("ContainerAdministrator"), Some("ContainerUser"), "ContainerUser")]
#[tokio::test]
async fn run_as_user_name_is_echoed(
    #[case] pod_user: Option<&str>,
    #[case] container_user: Option<&str>,
    #[case] expected: &str,
) {
    let f = Fixture::new();
    let mut extra = json!({"pod": {}, "container": {}});
    if let Some(u) = pod_user {
        extra["pod"]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    if let Some(u) = container_user {
        extra["container"]["securityContext"] = json!({"windowsOptions": {"runAsUserName": u}});
    }
    let pod = f.app("nonroot", "win2022-1", NONROOT, extra);
    let o = exec(&f, &pod, &["cmd", "/S", "/C", "echo %username%"]).await;
    assert_eq!(text(&o.stdout), format!("{expected}\r\n"));
    let o = exec(&f, &pod, &["whoami"]).await;
    assert_eq!(
        text(&o.stdout),
        format!("user manager\\{}\r\n", expected.to_lowercase())
    );
}

/// Before kubelet 1.17 runAsUserName is not honoured (alpha gate in 1.16, no field before):
/// the image's default user runs, as in the process model.
#[rstest]
#[case::kubelet_1_14((1, 14), "ContainerUser")]
#[case::kubelet_1_16((1, 16), "ContainerUser")]
#[case::kubelet_1_17((1, 17), "ContainerAdministrator")]
#[tokio::test]
async fn run_as_user_name_needs_kubelet_1_17(#[case] kubelet: (u32, u32), #[case] expected: &str) {
    let f = Fixture::with_profiles(|ps| {
        for p in ps.iter_mut() {
            p.kubelet = kubelet;
        }
    });
    let extra = json!({"pod": {"securityContext": {"windowsOptions": {"runAsUserName": "ContainerAdministrator"}}}});
    let pod = f.app("nonroot", "win2022-1", NONROOT, extra);
    let o = exec(&f, &pod, &["cmd", "/S", "/C", "echo %username%"]).await;
    assert_eq!(text(&o.stdout), format!("{expected}\r\n"));
}

#[rstest]
#[case::linux("linux-1", BUSYBOX, "frobnicate", "executable file not found in $PATH: unknown")]
#[case::linux_path(
    "linux-1",
    BUSYBOX,
    "/opt/frob",
    "stat /opt/frob: no such file or directory: unknown"
)]
#[case::pause(
    "linux-1",
    "registry.k8s.io/pause:3.10",
    "sh",
    "exec: \"sh\": executable file not found"
)]
#[case::windows(
    "win2022-1",
    SERVERCORE,
    "frobnicate",
    "The system cannot find the file specified.: unknown"
)]
#[case::builtin_is_no_exe("win2022-1", SERVERCORE, "type", "hcs::System::CreateProcess")]
#[tokio::test]
async fn unknown_executables_fail_in_the_runtime(
    #[case] node: &str,
    #[case] image: &str,
    #[case] command: &str,
    #[case] needle: &str,
) {
    let f = Fixture::new();
    let pod = f.app("unknown", node, image, json!({}));
    let message = runtime_message(&exec(&f, &pod, &[command]).await);
    assert!(
        message.starts_with("failed to exec in container: failed to start exec \""),
        "{message}"
    );
    assert!(message.contains(needle), "{message}");
    if f.profile(node).is_windows() {
        assert!(message.contains("hcs::System::CreateProcess"), "{message}");
    } else {
        assert!(message.contains("OCI runtime exec failed"), "{message}");
    }
}

#[tokio::test]
async fn exec_ids_are_stable_hex() {
    let f = Fixture::new();
    let pod = f.app("ids", "win2022-1", SERVERCORE, json!({}));
    let a = runtime_message(&exec(&f, &pod, &["frob"]).await);
    let b = runtime_message(&exec(&f, &pod, &["frob"]).await);
    assert_eq!(a, b);
    let id = a.split('"').nth(1).expect("quoted id");
    assert_eq!(id.len(), 64);
    assert!(id.bytes().all(|c| c.is_ascii_hexdigit()));
}

#[rstest]
#[case::nanoserver(NANOSERVER, false, false)]
#[case::servercore(SERVERCORE, true, false)]
#[case::agnhost(AGNHOST, false, true)]
#[tokio::test]
async fn powershell_only_where_the_image_ships_it(#[case] image: &str, #[case] desktop: bool, #[case] core: bool) {
    let f = Fixture::new();
    let pod = f.app("ps", "win2022-1", image, json!({}));
    for (shell, present) in [("powershell", desktop), ("pwsh", core)] {
        let o = exec(&f, &pod, &[shell, "-Command", "Write-Output ok"]).await;
        if present {
            assert_eq!(o.exit, ExitStatus::Code(0), "{shell} in {image}");
            assert_eq!(text(&o.stdout), "ok\r\n");
        } else {
            assert!(
                runtime_message(&o).contains("hcs::System::CreateProcess"),
                "{shell} in {image}"
            );
            let o = exec(&f, &pod, &["cmd", "/c", &format!("{shell} -Command hostname")]).await;
            assert_eq!(o.exit, ExitStatus::Code(1));
            assert!(text(&o.stderr).starts_with(&format!("'{shell}' is not recognized")));
        }
    }
}

/// curl.exe ships with Windows from build 17063 on: a Windows Server 1709 container has none.
#[rstest]
#[case::ws1709("10.0.16299.192", false)]
#[case::ws2016("10.0.14393.1198", false)]
#[case::ws2019("10.0.17763.6414", true)]
#[tokio::test]
async fn curl_exe_only_from_build_17063(#[case] kernel: &str, #[case] present: bool) {
    let f = Fixture::with_profiles(|ps| {
        for p in ps.iter_mut().filter(|p| p.name == "win2019-1") {
            p.kernel_version = kernel.to_string();
        }
    });
    let pod = f.app(
        "old",
        "win2019-1",
        "mcr.microsoft.com/windows/servercore:1709",
        json!({}),
    );
    let o = exec(&f, &pod, &["curl.exe", "--version"]).await;
    if present {
        assert!(!matches!(o.exit, ExitStatus::Error(_)), "{kernel}");
    } else {
        assert!(runtime_message(&o).contains("hcs::System::CreateProcess"), "{kernel}");
        let o = exec(&f, &pod, &["cmd", "/c", "curl.exe -s http://10.0.0.1/"]).await;
        assert_eq!(o.exit, ExitStatus::Code(1));
        assert!(
            text(&o.stderr).starts_with("'curl.exe' is not recognized"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// Windows PowerShell's own network clients in a Server Core container without a network:
/// Invoke-RestMethod and a .NET UdpClient exchange both time out.
#[rstest]
#[case::irm(
    "Invoke-RestMethod -Uri http://10.0.0.1:8080/hostname -TimeoutSec 5",
    "Invoke-RestMethod : The operation has timed out."
)]
#[case::udp(
    "$u = New-Object System.Net.Sockets.UdpClient; $u.Connect('10.0.0.1', 8081); $b = [Text.Encoding]::ASCII.GetBytes('hostname'); [void]$u.Send($b, $b.Length); $e = $null; [Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))",
    "Exception calling \"Receive\" with \"1\" argument(s)"
)]
#[tokio::test]
async fn windows_powershell_network_clients(#[case] script: &str, #[case] error: &str) {
    let f = Fixture::new();
    let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
    let o = exec(&f, &pod, &["powershell.exe", "-NoProfile", "-Command", script]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
    assert!(text(&o.stderr).starts_with(error), "{}", text(&o.stderr));
}

#[tokio::test]
async fn resolve_dns_name_exists_only_in_windows_powershell() {
    let f = Fixture::new();
    let pod = f.app("ps", "win2022-1", AGNHOST, json!({}));
    let o = exec(&f, &pod, &["pwsh", "-c", "Resolve-DnsName kubernetes"]).await;
    assert!(text(&o.stderr).contains("The term 'Resolve-DnsName' is not recognized"));
}

fn host_process_spec(user: &str) -> Value {
    json!({
        "hostNetwork": true,
        "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": user}},
        "containers": [{"name": "c", "image": HPC_IMAGE}],
    })
}

#[tokio::test]
async fn host_process_sees_another_pods_secret_in_clear_text() {
    let f = Fixture::new();
    let victim = f.app("victim", "win2022-1", SERVERCORE, json!({}));
    let probe = f.pod("node-probe", "win2022-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
    let path = format!(
        "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
        victim.uid()
    );
    let o = exec(&f, &probe, &["powershell", "-Command", &format!("Get-Content {path}")]).await;
    assert_eq!(text(&o.stdout), format!("{MARKER}\r\n"));
    let o = exec(&f, &probe, &["cmd", "/c", "type", &path]).await;
    assert_eq!(text(&o.stdout), MARKER);
    let listing = exec(
        &f,
        &probe,
        &[
            "powershell",
            "-Command",
            "Get-ChildItem -Recurse -Name C:\\var\\lib\\kubelet\\pods",
        ],
    )
    .await;
    let wanted = format!("{}\\volumes\\kubernetes.io~configmap\\settings\\mode\r\n", victim.uid());
    assert!(text(&listing.stdout).contains(&wanted), "{}", text(&listing.stdout));
    // The victim itself cannot see the kubelet's directory.
    let o = exec(&f, &victim, &["cmd", "/c", "type", &path]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
}

#[rstest]
#[case::hostname(&["hostname"], "win2022-1\r\n")]
#[case::whoami(&["whoami"], "nt authority\\system\r\n")]
#[case::sandbox(&["powershell", "-Command", "Test-Path $env:CONTAINER_SANDBOX_MOUNT_POINT"], "True\r\n")]
#[case::username(&["cmd", "/c", "echo %USERNAME%"], "WIN2022-1$\r\n")]
#[case::ver(&["cmd", "/c", "ver"], "\r\nMicrosoft Windows [Version 10.0.20348.2762]\r\n")]
#[tokio::test]
async fn host_process_runs_on_the_node(#[case] argv: &[&str], #[case] stdout: &str) {
    let f = Fixture::new();
    let probe = f.pod("node-probe", "win2022-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
    let o = exec(&f, &probe, argv).await;
    assert_eq!(text(&o.stdout), stdout, "{}", text(&o.stderr));
    assert_eq!(o.exit, ExitStatus::Code(0));
}

#[tokio::test]
async fn host_process_needs_a_capable_node() {
    let f = Fixture::with_profiles(|profiles| {
        for p in profiles.iter_mut().filter(|p| p.name == "win2019-1") {
            p.runtime = RuntimeKind::Docker;
            p.runtime_version = (19, 3);
        }
    });
    let pod = f.pod("node-probe", "win2019-1", host_process_spec("NT AUTHORITY\\SYSTEM"));
    assert!(!f.runtime().context(pod.clone(), "c").host_process);
    let o = exec(&f, &pod, &["hostname"]).await;
    assert_eq!(text(&o.stdout), "node-probe\r\n");
}

#[test]
fn node_volume_files_follow_the_node_os() {
    let f = Fixture::new();
    let win = f.app("win", "win2022-1", SERVERCORE, json!({}));
    let lin = f.app("lin", "linux-1", BUSYBOX, json!({}));
    let on_windows = node_volume_files(&f.store, f.profile("win2022-1"));
    let secret = format!(
        "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
        win.uid()
    );
    assert_eq!(on_windows.get(&secret).map(Vec::as_slice), Some(MARKER.as_bytes()));
    assert!(
        on_windows.keys().any(|k| k.ends_with("\\token")),
        "service account token on disk"
    );
    assert!(!on_windows.keys().any(|k| k.contains(lin.uid())));
    let on_linux = node_volume_files(&f.store, f.profile("linux-1"));
    let config = format!(
        "/var/lib/kubelet/pods/{}/volumes/kubernetes.io~configmap/settings/mode",
        lin.uid()
    );
    assert_eq!(on_linux.get(&config).map(Vec::as_slice), Some(&b"fast"[..]));
    assert!(
        on_linux.keys().all(|k| !k.contains("kubernetes.io~secret")),
        "secrets stay on tmpfs"
    );
}

#[tokio::test]
async fn proc_mounts_show_secrets_on_tmpfs() {
    let f = Fixture::new();
    let pod = f.app(
        "mounts",
        "linux-1",
        BUSYBOX,
        json!({"pod": {"volumes": [
            {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 256}},
            {"name": "settings", "configMap": {"name": "settings"}},
        ]}}),
    );
    let mounts = text(&exec(&f, &pod, &["cat", "/proc/mounts"]).await.stdout);
    let lines: Vec<&str> = mounts.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.starts_with("overlay / overlay rw")),
        "{mounts}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tmpfs /etc/secret tmpfs ro,relatime")),
        "{mounts}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tmpfs /var/run/secrets/kubernetes.io/serviceaccount tmpfs ro,")),
        "{mounts}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("/dev/root /etc/config ext4 ro,")),
        "{mounts}"
    );
    assert!(lines.iter().any(|l| l.starts_with("proc /proc proc")), "{mounts}");
    let o = exec(&f, &pod, &["stat", "-c", "%a %n", "/etc/secret/password"]).await;
    assert_eq!(text(&o.stdout), "400 /etc/secret/password\n");
    let o = exec(&f, &pod, &["ls", "-l", "/etc/secret"]).await;
    assert!(text(&o.stdout).starts_with("-r--------"), "{}", text(&o.stdout));
}

#[rstest]
#[case::linux("linux-1", &["uname", "-r"])]
#[case::linux_all("linux-1", &["uname", "-a"])]
#[tokio::test]
async fn uname_reports_the_node_kernel(#[case] node: &str, #[case] argv: &[&str]) {
    let f = Fixture::new();
    let pod = f.app("uname", node, BUSYBOX, json!({}));
    let o = exec(&f, &pod, argv).await;
    assert!(text(&o.stdout).contains(&f.profile(node).kernel_version));
}

#[tokio::test]
async fn host_network_linux_pods_see_the_node() {
    let f = Fixture::new();
    let pod = f.app("hostnet", "linux-1", BUSYBOX, json!({"pod": {"hostNetwork": true}}));
    let o = exec(&f, &pod, &["hostname"]).await;
    assert_eq!(text(&o.stdout), "linux-1\n");
    let resolv = text(&exec(&f, &pod, &["cat", "/etc/resolv.conf"]).await.stdout);
    assert!(!resolv.contains("svc.cluster.local"), "{resolv}");
    // Windows ignores hostNetwork without HostProcess.
    let win = f.app(
        "hostnet-win",
        "win2022-1",
        SERVERCORE,
        json!({"pod": {"hostNetwork": true}}),
    );
    assert_eq!(text(&exec(&f, &win, &["hostname"]).await.stdout), "hostnet-win\r\n");
}

#[rstest]
#[case::nc(
    BUSYBOX,
    "linux-1",
    &["sh", "-c", "nc -vz 10.96.0.1 443 -w 1"],
    "nc: 10.96.0.1 (10.96.0.1:443): Connection timed out\n",
    1
)]
#[case::ping_name(BUSYBOX, "linux-1", &["ping", "-c", "1", "kubernetes"], "ping: bad address 'kubernetes'\n", 1)]
#[case::connect(AGNHOST, "linux-1", &["/agnhost", "connect", "10.0.0.1:80", "--timeout=1s"], "TIMEOUT\n", 1)]
#[case::connect_dns(
    AGNHOST,
    "win2022-1",
    &["agnhost", "connect", "kubernetes:443"],
    "DNS: lookup kubernetes: getaddrinfow: This is usually a temporary error during hostname resolution and means \
    that the local server did not receive a response from an authoritative server.\n",
    1
)]
#[case::curl_silent(SERVERCORE, "win2022-1", &["cmd", "/c", "curl.exe -s http://10.0.0.1/"], "", 28)]
#[case::curl(
    AGNHOST,
    "linux-1",
    &["curl", "--connect-timeout", "2", "http://10.0.0.1:8080/"],
    "curl: (28) Failed to connect to 10.0.0.1 port 8080 after 2000 ms: Timeout was reached\n",
    28
)]
#[tokio::test]
async fn network_commands_time_out_without_a_network(
    #[case] image: &str,
    #[case] node: &str,
    #[case] argv: &[&str],
    #[case] stderr: &str,
    #[case] code: i32,
) {
    let f = Fixture::new();
    let pod = f.app("net", node, image, json!({}));
    let o = exec(&f, &pod, argv).await;
    assert_eq!(text(&o.stderr), stderr);
    assert_eq!(o.exit, ExitStatus::Code(code));
}

/// Records what reaches the wire: `web` resolves, every HTTP request is answered with the
/// client's address, every UDP request is echoed, pings get no reply.
#[derive(Debug, Default)]
struct Recorder {
    seen: std::sync::Mutex<Vec<String>>,
}

impl Recorder {
    fn note(&self, event: String) {
        self.seen.lock().expect("lock").push(event);
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

struct RecordingWire<'a> {
    recorder: &'a Recorder,
    ctx: &'a CommandContext,
}

impl NetworkCommands for Recorder {
    fn wire<'a>(&'a self, ctx: &'a CommandContext) -> Box<dyn Wire + 'a> {
        Box::new(RecordingWire { recorder: self, ctx })
    }
}

impl Wire for RecordingWire<'_> {
    fn dns_server(&self) -> String {
        "10.96.0.10".into()
    }
    fn resolve(&self, name: &str, _server: Option<&str>) -> nettools::Lookup {
        self.recorder.note(format!("resolve {name}"));
        if name != "web" {
            return nettools::Lookup::NotFound;
        }
        nettools::Lookup::Found {
            fqdn: format!("web.{NS}.svc.cluster.local"),
            addrs: vec![Ipv4Addr::new(10, 96, 0, 50)],
            alias: None,
        }
    }
    fn connect(&self, ip: Ipv4Addr, port: u16, proto: nettools::Proto) -> Result<(), nettools::Failure> {
        self.recorder.note(format!("connect {proto} {ip}:{port}"));
        Ok(())
    }
    fn http_get(&self, ip: Ipv4Addr, port: u16, target: &str) -> Result<nettools::HttpReply, nettools::Failure> {
        self.recorder.note(format!("GET {ip}:{port}{target}"));
        Ok(nettools::HttpReply {
            status: 200,
            body: format!("reached from {}\n", self.ctx.pod_ip()),
        })
    }
    fn udp(&self, ip: Ipv4Addr, port: u16, payload: &str) -> Result<String, nettools::Failure> {
        self.recorder.note(format!("udp {ip}:{port} {payload}"));
        Ok(format!("echo:{payload}"))
    }
    fn ping(&self, ip: Ipv4Addr) -> Result<(), nettools::Failure> {
        self.recorder.note(format!("ping {ip}"));
        Err(nettools::Failure::NoReply)
    }
}

#[tokio::test]
async fn network_commands_go_through_the_seam() {
    let f = Fixture::new();
    let recorder = Arc::new(Recorder::default());
    let runtime = f.runtime().with_network(recorder.clone());
    let pod = f.app("net", "linux-1", AGNHOST, json!({}));
    let o = runtime
        .exec(request(
            &pod,
            &["sh", "-c", "curl -s http://web:8080/hostname && echo done"],
        ))
        .await;
    assert_eq!(text(&o.stdout), "reached from 10.244.1.7\ndone\n");
    let o = runtime.exec(request(&pod, &["ping", "-c", "1", "web"])).await;
    assert_eq!(
        text(&o.stdout),
        "PING web (10.96.0.50): 56 data bytes\n\n--- web ping statistics ---\n1 packets transmitted, 0 packets \
        received, 100% packet loss\n"
    );
    assert_eq!(o.exit, ExitStatus::Code(1));
    let o = runtime
        .exec(request(&pod, &["sh", "-c", "echo hostname | nc -u -w 1 web 8081"]))
        .await;
    assert_eq!(text(&o.stdout), "echo:hostname");
    assert_eq!(
        recorder.seen(),
        [
            "resolve web",
            "GET 10.96.0.50:8080/hostname",
            "resolve web",
            "ping 10.96.0.50",
            "resolve web",
            "udp 10.96.0.50:8081 hostname",
        ]
    );
}

const DIAL: &str = "/dial?request=hostname&host=10.0.0.1&port=8080&protocol=http&tries=1";

#[rstest]
#[case::argv("linux-1", AGNHOST, &["curl", "-s", "URL"])]
#[case::sh_single_quotes("linux-1", AGNHOST, &["sh", "-c", "curl -s 'URL'"])]
#[case::sh_double_quotes("linux-1", AGNHOST, &["sh", "-c", "curl -s \"URL\""])]
#[case::sh_wget("linux-1", BUSYBOX, &["sh", "-c", "wget -qO- 'URL'"])]
#[case::cmd_curl_exe("win2022-1", SERVERCORE, &["cmd", "/c", "curl.exe -s \"URL\""])]
#[case::powershell_curl_exe("win2022-1", SERVERCORE, &["powershell", "-Command", "curl.exe -s 'URL'"])]
#[tokio::test]
async fn http_targets_pass_through_shells_unchanged(#[case] node: &str, #[case] image: &str, #[case] argv: &[&str]) {
    let f = Fixture::new();
    let recorder = Arc::new(Recorder::default());
    let runtime = f.runtime().with_network(recorder.clone());
    let pod = f.app("dial", node, image, json!({}));
    let url = format!("http://10.0.0.2:8080{DIAL}");
    let argv: Vec<String> = argv.iter().map(|a| a.replace("URL", &url)).collect();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let o = runtime.exec(request(&pod, &argv)).await;
    assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
    assert_eq!(recorder.seen(), [format!("GET 10.0.0.2:8080{DIAL}")]);
}

#[tokio::test]
async fn stdin_and_tty() {
    let f = Fixture::new();
    let pod = f.app("io", "linux-1", BUSYBOX, json!({}));
    let mut req = request(&pod, &["sh"]);
    req.stdin = Some(Bytes::from_static(b"echo from-stdin\ncat /etc/config/mode\n"));
    let o = f.runtime().exec(req).await;
    assert_eq!(text(&o.stdout), "from-stdin\nfast");
    let mut req = request(&pod, &["sh", "-c", "echo out; cat /nope"]);
    req.tty = true;
    let o = f.runtime().exec(req).await;
    assert_eq!(
        text(&o.stdout),
        "out\r\ncat: can't open '/nope': No such file or directory\r\n"
    );
    assert!(o.stderr.is_empty());
}

#[tokio::test]
async fn missing_container_is_a_runtime_error() {
    let f = Fixture::new();
    let pod = f.app("x", "linux-1", BUSYBOX, json!({}));
    let mut req = request(&pod, &["hostname"]);
    req.container = "nope".into();
    let message = runtime_message(&f.runtime().exec(req).await);
    assert_eq!(message, "container not found (\"nope\")");
}

#[rstest]
#[case("sh", "-c")]
#[case("cmd", "/c")]
#[case("powershell", "-Command")]
#[tokio::test]
async fn odd_input_never_panics(#[case] shell: &str, #[case] flag: &str) {
    let f = Fixture::new();
    let linux = f.app("fuzz", "linux-1", BUSYBOX, json!({}));
    let windows = f.app("fuzz-w", "win2022-1", SERVERCORE, json!({}));
    let inputs = [
        "",
        "'",
        "\"",
        "${",
        "$",
        "&&",
        "|",
        "||",
        ">",
        "2>&",
        "%",
        "%%",
        "^",
        "`",
        "$env:",
        "${env:X",
        "echo é\u{0301} ü > /dev/null",
        "cat ../../..",
        "type \\\\?\\C:\\x",
        "exit 99999999999",
        "Get-ChildItem -Recurse C:\\",
        "ls -la /",
        "a=b",
        "(",
        ")",
        "{}",
        "\u{0}",
    ];
    for input in inputs {
        for pod in [&linux, &windows] {
            let _ = exec(&f, pod, &[shell, flag, input]).await;
            let _ = exec(&f, pod, &[input]).await;
        }
    }
}

#[rstest]
#[case("/etc/./secret/../secret/", "/", "/etc/secret")]
#[case("x/y", "/tmp", "/tmp/x/y")]
#[case("/..", "/", "/")]
fn linux_paths(#[case] path: &str, #[case] cwd: &str, #[case] expected: &str) {
    assert_eq!(linux_path(path, cwd), expected);
}

#[rstest]
#[case("/etc/secret", "C:\\", "C:\\etc\\secret")]
#[case("c:/x\\y\\", "C:\\", "C:\\x\\y")]
#[case("y", "C:\\a", "C:\\a\\y")]
#[case("D:", "C:\\", "D:\\")]
fn windows_paths(#[case] path: &str, #[case] cwd: &str, #[case] expected: &str) {
    assert_eq!(win_path(path, cwd), expected);
}

#[rstest]
#[case(AGNHOST, ImageKind::Agnhost)]
#[case("busybox", ImageKind::Busybox)]
#[case("localhost:5000/team/busybox:1", ImageKind::Busybox)]
#[case(NANOSERVER, ImageKind::NanoServer)]
#[case(
    "mcr.microsoft.com/dotnet/framework/runtime:4.8-windowsservercore-ltsc2022",
    ImageKind::ServerCore
)]
#[case("mcr.microsoft.com/windows/server:ltsc2022", ImageKind::WindowsServer)]
#[case("mcr.microsoft.com/powershell:lts-nanoserver-ltsc2022", ImageKind::PowerShell)]
#[case("nginx:1.27", ImageKind::Other)]
fn image_kinds(#[case] image: &str, #[case] kind: ImageKind) {
    assert_eq!(image_kind(image), kind);
}

#[rstest]
#[case("echo %A% %B%", "echo 1 %B%")]
#[case("100%", "100%")]
#[case("%a%%a%", "11")]
fn percent_expansion(#[case] line: &str, #[case] expected: &str) {
    let env = vec![("A".to_string(), "1".to_string())];
    assert_eq!(expand_percent(line, &env), expected);
}

async fn exec_in(f: &Fixture, pod: &Obj, container: &str, argv: &[&str]) -> ExecOutput {
    let mut req = request(pod, argv);
    req.container = container.into();
    f.runtime().exec(req).await
}

/// A pod with a writer and a reader container sharing the emptyDir `data` (the reader
/// mounts it `readOnly` at a second path too).
fn shared_pod(f: &Fixture, node: &str, image: &str) -> Obj {
    let (rw, ro) = if f.profile(node).is_windows() {
        ("C:\\data", "C:\\ro")
    } else {
        ("/data", "/ro")
    };
    f.pod(
        "shared",
        node,
        json!({
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [
                {"name": "writer", "image": image, "volumeMounts": [{"name": "data", "mountPath": rw}]},
                {"name": "reader", "image": image, "volumeMounts": [
                    {"name": "data", "mountPath": rw},
                    {"name": "data", "mountPath": ro, "readOnly": true},
                ]},
            ],
        }),
    )
}

/// STO-EMPTYDIR-DISK (W14): a file one container writes into an emptyDir is there for the
/// pod's other containers; STO-READONLY-VOLUME (W14, E2E/volumes): the readOnly mount of the
/// same volume shows it and refuses writes (busybox ash: `Read-only file system`).
#[tokio::test]
async fn linux_emptydir_is_shared_and_read_only_mounts_refuse_writes() {
    let f = Fixture::new();
    let pod = shared_pod(&f, "linux-1", AGNHOST);
    let o = exec_in(
        &f,
        &pod,
        "writer",
        &["sh", "-c", "echo one > /data/f.txt; echo two >> /data/f.txt"],
    )
    .await;
    assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
    let o = exec_in(&f, &pod, "reader", &["cat", "/data/f.txt", "/ro/f.txt"]).await;
    assert_eq!(text(&o.stdout), "one\ntwo\none\ntwo\n");
    let o = exec_in(
        &f,
        &pod,
        "reader",
        &[
            "sh",
            "-c",
            "(echo x > /ro/y.txt) 2>/dev/null && echo allowed || echo denied; echo x > /ro/y.txt",
        ],
    )
    .await;
    assert_eq!(text(&o.stdout), "denied\n");
    assert_eq!(text(&o.stderr), "sh: can't create /ro/y.txt: Read-only file system\n");
    assert_eq!(o.exit, ExitStatus::Code(1));
    // An API-data volume is always read-only; a missing directory cannot be created into.
    let app = f.app("app", "linux-1", AGNHOST, json!({}));
    let o = exec(&f, &app, &["sh", "-c", "echo x > /etc/secret/new; echo y > /nowhere/z"]).await;
    assert_eq!(
        text(&o.stderr),
        "sh: can't create /etc/secret/new: Read-only file system\nsh: can't create /nowhere/z: nonexistent directory\n"
    );
    // The container's own layer keeps what it wrote, for it alone.
    let o = exec(&f, &app, &["sh", "-c", "echo mine > /tmp/own"]).await;
    assert_eq!(o.exit, ExitStatus::Code(0));
    assert_eq!(text(&exec(&f, &app, &["cat", "/tmp/own"]).await.stdout), "mine\n");
    f.volumes.forget_pod(pod.uid());
    let o = exec_in(&f, &pod, "reader", &["cat", "/data/f.txt"]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
}

/// STO-READONLY-VOLUME (E2E/volumes): on Windows the read-only mount answers exactly
/// `Access is denied.`; the read-write container's file is readable through it.
#[tokio::test]
async fn windows_read_only_mount_denies_access() {
    let f = Fixture::new();
    let pod = shared_pod(&f, "win2022-1", NANOSERVER);
    let o = exec_in(
        &f,
        &pod,
        "writer",
        &["cmd", "/c", "echo windows-volume-test> C:\\data\\seed.txt"],
    )
    .await;
    assert_eq!(o.exit, ExitStatus::Code(0), "{}", text(&o.stderr));
    let o = exec_in(
        &f,
        &pod,
        "reader",
        &[
            "cmd",
            "/c",
            "type C:\\ro\\seed.txt & (echo probe> C:\\ro\\probe.txt) && echo write-allowed || echo write-denied",
        ],
    )
    .await;
    assert_eq!(text(&o.stdout), "windows-volume-test\r\nwrite-denied\r\n");
    assert_eq!(text(&o.stderr), "Access is denied.\r\n");
    let o = exec_in(&f, &pod, "reader", &["cmd", "/c", "echo x> C:\\missing\\y.txt"]).await;
    assert_eq!(text(&o.stderr), "The system cannot find the path specified.\r\n");
    assert_eq!(o.exit, ExitStatus::Code(1));
}

/// STO-HOSTPATH (W14, E2E/volumes): a hostPath mount shows the node's files — the hosts file
/// of the node's OS — and what pods wrote there.
#[rstest]
#[case::linux("linux-1", AGNHOST, "/etc", "/host", &["cat", "/host/hosts"], "127.0.0.1\tlocalhost")]
#[case::windows(
    "win2022-1",
    NANOSERVER,
    "C:\\Windows\\System32\\drivers\\etc",
    "C:\\host",
    &["cmd", "/c", "type C:\\host\\hosts"],
    "localhost name resolution is handled within DNS itself."
)]
#[tokio::test]
async fn host_path_shows_the_node_files(
    #[case] node: &str,
    #[case] image: &str,
    #[case] host: &str,
    #[case] at: &str,
    #[case] argv: &[&str],
    #[case] expected: &str,
) {
    let f = Fixture::new();
    let pod = f.app(
        "hp",
        node,
        image,
        json!({"pod": {"volumes": [{"name": "h", "hostPath": {"path": host, "type": "Directory"}}]},
               "container": {"volumeMounts": [{"name": "h", "mountPath": at}]}}),
    );
    let o = exec(&f, &pod, argv).await;
    assert!(text(&o.stdout).contains(expected), "{}", text(&o.stdout));
    // A write through the mount lands on the node, where another pod's hostPath sees it.
    let write: &[&str] = if f.profile(node).is_windows() {
        &["cmd", "/c", "echo left-behind> C:\\host\\note.txt"]
    } else {
        &["sh", "-c", "echo left-behind > /host/note.txt"]
    };
    assert_eq!(exec(&f, &pod, write).await.exit, ExitStatus::Code(0));
    let other = f.app(
        "hp2",
        node,
        image,
        json!({"pod": {"volumes": [{"name": "h", "hostPath": {"path": host}}]},
               "container": {"volumeMounts": [{"name": "h", "mountPath": at}]}}),
    );
    let read: &[&str] = if f.profile(node).is_windows() {
        &["cmd", "/c", "type C:\\host\\note.txt"]
    } else {
        &["cat", "/host/note.txt"]
    };
    assert!(text(&exec(&f, &other, read).await.stdout).starts_with("left-behind"));
}

/// NET-HOSTNETWORK (W14, WI26): a Linux hostNetwork pod has the node's address on one of
/// its own interfaces, a pod on the pod network has its pod IP; sh `if` decides as written.
#[rstest]
#[case::host_network(true, "host-network\n")]
#[case::pod_network(false, "pod-network\n")]
#[tokio::test]
async fn ip_addr_shows_the_network_namespace(#[case] host_network: bool, #[case] expected: &str) {
    let f = Fixture::new();
    let node_ip = f.profile("linux-1").ip.to_string();
    let pod = f.app(
        "net",
        "linux-1",
        AGNHOST,
        json!({"pod": {"hostNetwork": host_network},
               "container": {"env": [{"name": "HOST_IP", "value": node_ip}]}}),
    );
    let o = exec(
        &f,
        &pod,
        &[
            "/bin/sh",
            "-c",
            "if ip -o addr show | grep -qF \" $HOST_IP/\"; then echo host-network; else echo pod-network; fi",
        ],
    )
    .await;
    assert_eq!(text(&o.stdout), expected, "{}", text(&o.stderr));
    let o = exec(&f, &pod, &["ip", "-o", "addr", "show"]).await;
    assert!(
        text(&o.stdout).starts_with("1: lo    inet 127.0.0.1/8 scope host lo\\"),
        "{}",
        text(&o.stdout)
    );
    let o = exec(&f, &pod, &["ip", "frob"]).await;
    assert_eq!(o.exit, ExitStatus::Code(255));
}

#[rstest]
#[case::if_else("if false; then echo a; elif true; then echo b; else echo c; fi", "b\n", 0)]
#[case::if_no_branch("if false; then echo a; fi; echo $?", "0\n", 0)]
#[case::nested("if true; then if false; then echo x; else echo y; fi; fi", "y\n", 0)]
#[case::subshell_exit("(exit 3); echo $?", "3\n", 0)]
#[case::subshell_vars("X=1; (X=2); echo $X", "1\n", 0)]
#[case::brace_group("{ echo a; echo ab; } | grep -c a", "2\n", 0)]
#[case::negate("! false && echo yes", "yes\n", 0)]
#[case::redirect_group("if true; then echo hidden; fi > /dev/null; echo shown", "shown\n", 0)]
#[case::syntax("if true; then echo a", "", 2)]
#[tokio::test]
async fn sh_compound_commands(#[case] script: &str, #[case] expected: &str, #[case] code: i32) {
    let f = Fixture::new();
    let pod = f.app("sh", "linux-1", AGNHOST, json!({}));
    let o = exec(&f, &pod, &["sh", "-c", script]).await;
    assert_eq!(text(&o.stdout), expected, "{}", text(&o.stderr));
    assert_eq!(o.exit, ExitStatus::Code(code));
}

/// The SEC-SECRET-AT-REST search as an operator writes it (W14, W22, WSEC): a HostProcess pod
/// finds the marker of a Secret in clear text under the kubelet's default root directory
/// (kubelet.exe has no --root-dir), with the ACL the directory inherits from C:\ and no
/// BitLocker tooling on the node.
#[tokio::test]
async fn host_process_search_finds_a_secret_in_clear_text() {
    let f = Fixture::new();
    let victim = f.app("victim", "win2022-1", SERVERCORE, json!({}));
    let mut spec = host_process_spec("NT AUTHORITY\\SYSTEM");
    spec["containers"][0]["env"] = json!([{"name": "MARKER", "value": MARKER}]);
    let probe = f.pod("node-probe", "win2022-1", spec);
    let script = "$m = $env:MARKER; $root = 'C:\\var\\lib\\kubelet'; \
        $k = Get-CimInstance Win32_Process -Filter 'Name = ''kubelet.exe''' | Select-Object -First 1; \
        if ($k -and $k.CommandLine -match '--root-dir[= ]+(\\S+)') { $root = $Matches[1].Trim([char]34) }; \
        $hit = Get-ChildItem -Path (Join-Path $root 'pods') -Recurse -File -Force -ErrorAction SilentlyContinue | \
        Where-Object { $_.FullName -like '*kubernetes.io~secret*' } | \
        Select-String -SimpleMatch -Pattern $m -List | Select-Object -First 1; \
        if ($hit) { 'clear-text-on-node-disk: ' + $hit.Path; \
        'acl: ' + (((Get-Acl -LiteralPath $hit.Path).Access | ForEach-Object { $_.IdentityReference.Value + '=' + $_.FileSystemRights }) -join '; '); \
        $bl = manage-bde -status C: 2>$null | Select-String 'Conversion Status' | Select-Object -First 1; \
        'bitlocker: ' + $(if ($bl) { $bl.Line.Trim() } else { 'unknown' }) \
        } else { 'marker-not-found-under: ' + $root; exit 3 }";
    let o = exec(&f, &probe, &["powershell.exe", "-NoProfile", "-Command", script]).await;
    let path = format!(
        "C:\\var\\lib\\kubelet\\pods\\{}\\volumes\\kubernetes.io~secret\\creds\\password",
        victim.uid()
    );
    assert_eq!(
        text(&o.stdout),
        format!(
            "clear-text-on-node-disk: {path}\r\nacl: NT AUTHORITY\\SYSTEM=FullControl; BUILTIN\\Administrators=FullControl; \
             BUILTIN\\Users=ReadAndExecute, Synchronize\r\nbitlocker: unknown\r\n"
        ),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(o.exit, ExitStatus::Code(0));
    // Another marker is not there: the search says where it looked and exits 3.
    let mut spec = host_process_spec("NT AUTHORITY\\SYSTEM");
    spec["containers"][0]["env"] = json!([{"name": "MARKER", "value": "absent"}]);
    let other = f.pod("node-probe-2", "win2022-1", spec);
    let o = exec(&f, &other, &["powershell.exe", "-NoProfile", "-Command", script]).await;
    assert_eq!(text(&o.stdout), "marker-not-found-under: C:\\var\\lib\\kubelet\r\n");
    assert_eq!(o.exit, ExitStatus::Code(3));
}

#[rstest]
#[case::variables("$a = 2; $b = $a * 3 + 1; $b", "7\r\n")]
#[case::strings("$n = 'x'; \"a-$n-$($n.ToUpper())\"; 'it''s'", "a-x-X\r\nit's\r\n")]
#[case::if_elseif(
    "$v = 5; if ($v -lt 3) { 'low' } elseif ($v -ge 5) { 'high' } else { 'mid' }",
    "high\r\n"
)]
#[case::matches(
    "if ('--root-dir=D:\\k --v=2' -match '--root-dir[= ]+(\\S+)') { $Matches[1] }",
    "D:\\k\r\n"
)]
#[case::like_join("@('a.txt','b.log','c.txt') -like '*.txt' -join ','", "a.txt,c.txt\r\n")]
#[case::pipeline("1,2,3,4 | Where-Object { $_ -gt 2 } | ForEach-Object { $_ * 10 }", "30\r\n40\r\n")]
#[case::select_first("'a','b','c' | Select-Object -First 2", "a\r\nb\r\n")]
#[case::select_last("'a','b','c' | Select-Object -Last 1", "c\r\n")]
#[case::foreach("foreach ($x in 1,2) { \"n$x\" }", "n1\r\nn2\r\n")]
#[case::join_path("Join-Path 'C:\\var\\' '\\pods'", "C:\\var\\pods\r\n")]
#[case::cast_char("[char]65 + [string]7", "A7\r\n")]
#[case::trim_chars("'\"quoted\"'.Trim([char]34)", "quoted\r\n")]
#[case::not_found_silenced("$x = frobnicate 2>$null; if ($x) { 'some' } else { 'none' }", "none\r\n")]
#[case::count("@(Get-ChildItem C:\\secrets).Count", "1\r\n")]
#[case::select_string_file(
    "Get-ChildItem C:\\secrets | Select-String s3cr3t | ForEach-Object { $_.LineNumber }",
    "1\r\n"
)]
#[case::where_property(
    "Get-ChildItem C:\\secrets | Where-Object Name -eq 'password' | ForEach-Object Name",
    "password\r\n"
)]
#[case::cim_in_container(
    "(Get-CimInstance Win32_Process | Where-Object { $_.Name -eq 'CExecSvc.exe' }).Name",
    "CExecSvc.exe\r\n"
)]
#[case::exit_in_block("if ($true) { 'before'; exit 5 }; 'after'", "before\r\n")]
#[case::hashtable("$h = @{ a = 1; b = 'two' }; $h.b", "two\r\n")]
#[case::replace_split("('a-b-c' -replace '-', '+') + ' ' + ('x,y' -split ',').Count", "a+b+c 2\r\n")]
#[tokio::test]
async fn powershell_language(#[case] script: &str, #[case] expected: &str) {
    let f = Fixture::new();
    let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
    let o = exec(&f, &pod, &["powershell", "-NoProfile", "-Command", script]).await;
    assert_eq!(text(&o.stdout), expected, "stderr: {}", text(&o.stderr));
}

#[tokio::test]
async fn powershell_errors_and_exit_codes() {
    let f = Fixture::new();
    let pod = f.app("ps", "win2022-1", SERVERCORE, json!({}));
    let o = exec(&f, &pod, &["powershell", "-Command", "if ($true) { 'x' "]).await;
    assert_eq!(o.exit, ExitStatus::Code(1));
    assert!(text(&o.stderr).contains("ParserError"), "{}", text(&o.stderr));
    // A non-terminating error goes to stderr; the script goes on; -ErrorAction drops it.
    let o = exec(
        &f,
        &pod,
        &[
            "powershell",
            "-Command",
            "Get-Content C:\\nope; Get-Content C:\\nope -ErrorAction SilentlyContinue; 'next'",
        ],
    )
    .await;
    assert_eq!(text(&o.stdout), "next\r\n");
    assert_eq!(text(&o.stderr).matches("Cannot find path 'C:\\nope'").count(), 1);
    assert_eq!(o.exit, ExitStatus::Code(0));
    let o = exec(&f, &pod, &["powershell", "-Command", "exit 9"]).await;
    assert_eq!(o.exit, ExitStatus::Code(9));
}

/// The seed eras' Windows kubelets (keyed on the kubelet's version, WGSG15, WGSG19): on 1.5
/// Secrets reach a Windows container neither as environment variables nor as volume files
/// ("Secrets currently do not work", moby#28401); on 1.9 environment variables work and Secret
/// and ConfigMap volume files cannot be read ("Using Secrets and ConfigMaps as volume mounts is
/// not supported"); from 1.10 both work. Linux pods are not affected.
#[rstest]
#[case::k1_5_windows("win2022-1", (1, 5), false, false)]
#[case::k1_9_windows("win2022-1", (1, 9), true, false)]
#[case::k1_10_windows("win2022-1", (1, 10), true, true)]
#[case::current_windows("win2022-1", (1, 32), true, true)]
#[case::k1_5_linux("linux-1", (1, 5), true, true)]
#[tokio::test]
async fn seed_era_secrets(
    #[case] node: &str,
    #[case] kubelet: (u32, u32),
    #[case] env_works: bool,
    #[case] volume_works: bool,
) {
    let f = Fixture::with_profiles(|ps| {
        for p in ps.iter_mut().filter(|p| p.name == node) {
            p.kubelet = kubelet;
        }
    });
    let windows = f.profile(node).is_windows();
    let image = if windows { NANOSERVER } else { BUSYBOX };
    let pod = f.app("seed", node, image, json!({}));
    let (env, secret, config): (&[&str], &[&str], &[&str]) = if windows {
        (
            &["cmd", "/c", "echo %FROM_SECRET%"],
            &["cmd", "/c", "type C:\\secrets\\password"],
            &["cmd", "/c", "type C:\\config\\mode"],
        )
    } else {
        (
            &["sh", "-c", "echo $FROM_SECRET"],
            &["cat", "/etc/secret/password"],
            &["cat", "/etc/config/mode"],
        )
    };
    let out = text(&exec(&f, &pod, env).await.stdout);
    assert_eq!(out.contains(MARKER), env_works, "env: {out:?}");
    let read = exec(&f, &pod, secret).await;
    assert_eq!(
        text(&read.stdout).contains(MARKER),
        volume_works && env_works,
        "secret volume"
    );
    if !(volume_works && env_works) {
        assert_eq!(text(&read.stderr), "The system cannot find the file specified.\r\n");
    }
    let read = exec(&f, &pod, config).await;
    assert_eq!(text(&read.stdout).contains("fast"), volume_works, "configMap volume");
}
