//! Tests of the process model: what a container's main process does — exits, runs on, prints,
//! allocates — for the commands, shells and PowerShell scripts it is started with, on Linux,
//! Windows and HostProcess containers.

use rstest::rstest;
use serde_json::json;

use super::*;

fn exits(code: i32, after_ms: u64, log: &[&str]) -> Process {
    Process::Exits {
        code,
        after_ms,
        log: log.iter().map(|s| s.to_string()).collect(),
    }
}

fn forever(log: &[&str]) -> Process {
    Process::LongRunning {
        log: log.iter().map(|s| s.to_string()).collect(),
    }
}

#[rstest]
#[case::echo(json!({"image": "busybox", "command": ["echo", "hi"]}), exits(0, 0, &["hi"]))]
#[case::sh_exit_3(json!({"image": "busybox", "command": ["sh", "-c", "exit 3"]}), exits(3, 0, &[]))]
#[case::sh_c_in_args(json!({"image": "busybox", "args": ["sh", "-c", "echo a; exit 4"]}), exits(4, 0, &["a"]))]
#[case::sh_sequence(json!({"image": "busybox", "command": ["/bin/sh", "-c", "echo a; echo b && exit 4"]}), exits(4, 0, &["a", "b"]))]
#[case::sh_or(json!({"image": "busybox", "command": ["sh", "-c", "false || echo fallback"]}), exits(0, 0, &["fallback"]))]
#[case::sh_and_skipped(json!({"image": "busybox", "command": ["sh", "-c", "false && echo no"]}), exits(1, 0, &[]))]
#[case::sh_exit_wraps(json!({"image": "busybox", "command": ["sh", "-c", "exit 256"]}), exits(0, 0, &[]))]
#[case::sh_exit_negative(json!({"image": "busybox", "command": ["sh", "-c", "exit -1"]}), exits(255, 0, &[]))]
#[case::sh_exit_keeps_status(json!({"image": "busybox", "command": ["sh", "-c", "false; exit"]}), exits(1, 0, &[]))]
#[case::sleep_5(json!({"image": "busybox", "command": ["sleep", "5"]}), exits(0, 5000, &[]))]
#[case::sleep_then_echo(json!({"image": "busybox", "command": ["sh", "-c", "sleep 2; echo done"]}), exits(0, 2000, &["done"]))]
#[case::sleep_minutes(json!({"image": "busybox", "command": ["sleep", "1m"]}), exits(0, 60_000, &[]))]
#[case::sleep_infinity(json!({"image": "busybox", "command": ["sleep", "infinity"]}), forever(&[]))]
#[case::sleep_days(json!({"image": "busybox", "command": ["sleep", "3650d"]}), forever(&[]))]
#[case::while_loop(json!({"image": "busybox", "command": ["sh", "-c", "echo start; while true; do sleep 1; done"]}), forever(&["start"]))]
#[case::tail_follow(json!({"image": "busybox", "command": ["sh", "-c", "tail -f /dev/null"]}), forever(&[]))]
#[case::bash_flags(json!({"image": "ubuntu", "command": ["bash", "-ec", "echo ok"]}), exits(0, 0, &["ok"]))]
#[case::redirected(json!({"image": "busybox", "command": ["sh", "-c", "echo hi > /tmp/x; echo shown 2>&1"]}), exits(0, 0, &["shown"]))]
#[case::env_expansion(json!({"image": "busybox", "env": [{"name": "FOO", "value": "bar"}], "command": ["sh", "-c", "echo $FOO ${FOO}-x '$FOO'"]}), exits(0, 0, &["bar bar-x $FOO"]))]
#[case::hostname(json!({"image": "busybox", "command": ["sh", "-c", "echo $HOSTNAME; hostname"]}), exits(0, 0, &["app", "app"]))]
#[case::whoami_root(json!({"image": "busybox", "command": ["whoami"]}), exits(0, 0, &["root"]))]
#[case::coreutils_timeout(json!({"image": "busybox", "command": ["timeout", "2", "sleep", "10"]}), exits(124, 2000, &[]))]
#[case::unknown_command(json!({"image": "busybox", "command": ["/app/server", "--port=80"]}), forever(&[]))]
#[case::network_client_unknown(json!({"image": "busybox", "command": ["sh", "-c", "echo go; wget -qO- http://svc"]}), forever(&["go"]))]
#[case::default_busybox(json!({"image": "busybox"}), exits(0, 0, &[]))]
#[case::default_busybox_stdin(json!({"image": "busybox", "stdin": true}), forever(&[]))]
#[case::default_nginx(json!({"image": "nginx"}), forever(&[]))]
#[case::default_pause(json!({"image": "registry.k8s.io/pause:3.9"}), forever(&[]))]
#[case::agnhost_netexec(json!({"image": AGNHOST, "args": ["netexec", "--http-port=8080"]}), forever(&[]))]
#[case::agnhost_pause(json!({"image": AGNHOST, "args": ["pause"]}), forever(&[]))]
#[case::agnhost_entrypoint_tester(json!({"image": AGNHOST, "args": ["entrypoint-tester", "a", "b"]}), exits(0, 0, &["[/agnhost entrypoint-tester a b]"]))]
#[case::agnhost_logs_generator(json!({"image": AGNHOST, "args": ["logs-generator", "--log-lines-total", "2", "--run-duration", "3s"]}), exits(0, 3000, &["0 GET /api/v1/namespaces/default/pods/pod-0 200", "1 GET /api/v1/namespaces/default/pods/pod-1 300"]))]
#[case::nginx_version(json!({"image": "nginx", "command": ["nginx", "-v"]}), exits(0, 0, &[]))]
#[case::python_server(json!({"image": "python", "command": ["python3", "-m", "http.server", "8080"]}), forever(&[]))]
fn linux_process_model(#[case] container: Value, #[case] expected: Process) {
    assert_eq!(process(&linux(), container), expected);
}

#[test]
fn agnhost_without_arguments_prints_usage() {
    match process(&win(20348), json!({"image": AGNHOST})) {
        Process::Exits {
            code: 0,
            after_ms: 0,
            log,
        } => assert!(log.iter().any(|l| l.contains("agnhost [command]"))),
        other => panic!("{other:?}"),
    }
}

#[rstest]
#[case::cmd_exit_3(json!({"image": SC2022, "command": ["cmd", "/c", "exit 3"]}), exits(3, 0, &[]))]
#[case::cmd_exit_split_args(json!({"image": SC2022, "command": ["cmd.exe", "/c", "exit", "3"]}), exits(3, 0, &[]))]
// cmd prints the blank before `&` (a well-known cmd quirk; exec'd cmd does the same).
#[case::cmd_echo_and_exit_b(json!({"image": SC2022, "command": ["cmd", "/S", "/C", "echo hi & exit /b 2"]}), exits(2, 0, &["hi "]))]
#[case::cmd_exit_negative(json!({"image": SC2022, "command": ["cmd", "/c", "exit -1"]}), exits(-1, 0, &[]))]
#[case::cmd_echo_keeps_quotes(json!({"image": SC2022, "command": ["cmd", "/c", "echo \"quoted\""]}), exits(0, 0, &["\"quoted\""]))]
#[case::cmd_username_nonroot(json!({"image": "registry.k8s.io/e2e-test-images/nonroot:1.4", "command": ["cmd", "/S", "/C", "echo %username%"]}), exits(0, 0, &["ContainerUser"]))]
#[case::cmd_username_admin(json!({"image": "registry.k8s.io/e2e-test-images/nonroot:1.4", "securityContext": {"windowsOptions": {"runAsUserName": "ContainerAdministrator"}}, "command": ["cmd", "/S", "/C", "echo %USERNAME%"]}), exits(0, 0, &["ContainerAdministrator"]))]
#[case::cmd_unknown_variable(json!({"image": SC2022, "command": ["cmd", "/c", "echo %NOPE%"]}), exits(0, 0, &["%NOPE%"]))]
#[case::cmd_ping_as_sleep(json!({"image": SC2022, "command": ["cmd", "/c", "ping -n 6 127.0.0.1 > nul & echo ok"]}), exits(0, 5000, &["ok"]))]
#[case::cmd_timeout_fails_without_console(json!({"image": SC2022, "command": ["cmd", "/c", "timeout /t 5"]}), exits(1, 0, &["ERROR: Input redirection is not supported, exiting the process immediately."]))]
#[case::cmd_goto_loop(json!({"image": SC2022, "command": ["cmd", "/c", ":loop & goto loop"]}), forever(&[]))]
#[case::ping_t(json!({"image": SC2022, "command": ["ping", "-t", "localhost"]}), forever(&[]))]
#[case::ps_sequence(json!({"image": SC2022, "command": ["powershell", "-Command", "Write-Host hi; Start-Sleep -Seconds 3; exit 5"]}), exits(5, 3000, &["hi"]))]
#[case::ps_flags(json!({"image": SC2022, "command": ["powershell.exe", "-NoProfile", "-ExecutionPolicy", "Bypass", "-c", "Write-Output 'a b'"]}), exits(0, 0, &["a b"]))]
#[case::ps_positional(json!({"image": SC2022, "command": ["powershell", "Start-Sleep", "-m", "1500"]}), exits(0, 1500, &[]))]
#[case::ps_env(json!({"image": SC2022, "command": ["powershell", "-Command", "Write-Host \"user=$env:USERNAME\""]}), exits(0, 0, &["user=ContainerAdministrator"]))]
#[case::ps_loop(json!({"image": SC2022, "command": ["powershell", "-Command", "while ($true) { Start-Sleep 1; Write-Host tick }"]}), forever(&[]))]
#[case::ps_sleep_loop_after_output(json!({"image": SC2022, "command": ["pwsh", "-c", "Write-Host ready; while ($true) { Start-Sleep -Seconds 10 }"]}), forever(&["ready"]))]
// The seed guide's web server: a greeting, then lines the parser cannot read (a `while` loop).
#[case::ps_lines_before_a_loop(json!({"image": SC2022, "command": ["powershell.exe", "-command", "Write-Host 'Listening at http://*:80/'\n$listener = New-Object System.Net.HttpListener\nwhile ($listener.IsListening) {\n  $context = $listener.GetContext()\n}\n"]}), forever(&["Listening at http://*:80/"]))]
#[case::whoami_windows(json!({"image": SC2022, "command": ["whoami"]}), exits(0, 0, &["user manager\\containeradministrator"]))]
#[case::default_servercore(json!({"image": SC2022}), exits(0, 0, &[]))]
#[case::default_nanoserver(json!({"image": NANO2022}), exits(0, 0, &[]))]
#[case::default_iis(json!({"image": "mcr.microsoft.com/windows/servercore/iis:windowsservercore-ltsc2022"}), forever(&[]))]
#[case::e2e_busybox_args_through_cmd(json!({"image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "args": ["echo hi & exit 7"]}), exits(7, 0, &["hi "]))]
#[case::e2e_busybox_powershell(json!({"image": "registry.k8s.io/e2e-test-images/busybox:1.36.1-1", "command": ["powershell", "-c", "sleep 600"]}), exits(0, 600_000, &[]))]
#[case::iis_servicemonitor(json!({"image": "mcr.microsoft.com/windows/servercore/iis", "command": ["C:\\ServiceMonitor.exe", "w3svc"]}), forever(&[]))]
fn windows_process_model(#[case] container: Value, #[case] expected: Process) {
    assert_eq!(process(&win(20348), container), expected);
}

// A PowerShell main process is walked: `if` takes the branch its condition chooses, an
// expression statement prints its value, `exit N` ends it, and a `-Command` script's exit code
// is `$?` of its last statement (GH PowerShell/PowerShell#13501; about_Pwsh -Command).

const HPC_IMAGE: &str = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0";

/// The HostProcess probe of upstream's e2e (E2E/host_process: the pod runs to completion and
/// is judged by PodSucceeded): on the host, kubelet is a visible process and COMPUTERNAME is the
/// node's name.
const ON_THE_HOST: &str = "if ((Get-Process -Name kubelet -ErrorAction SilentlyContinue) -or ($env:COMPUTERNAME -ieq $env:NODE_NAME)) { 'running on the host of ' + $env:NODE_NAME; exit 0 } else { 'not on the host: ' + $env:COMPUTERNAME; exit 1 }";

fn node_name_env() -> Value {
    json!([{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}])
}

/// The process of the only container of `pod`.
fn pod_process(node: &NodeProfile, pod: &Value) -> Process {
    let p = proceed(verdict(node, pod, None));
    match &p.containers[0].outcome {
        ContainerOutcome::Runs { process } => process.clone(),
        other => panic!("expected the container to run: {other:?}"),
    }
}

/// SEC-HOSTPROCESS: a HostProcess container runs on the host — it sees the node's kubelet and
/// has the host's computer name — so the probe takes its `if` branch and exits 0; the same script
/// in a process-isolated container sees neither and exits 1.
#[rstest]
#[case::host_process(true, exits(0, 0, &["running on the host of node-1"]))]
#[case::ordinary_container(false, exits(1, 0, &["not on the host: APP"]))]
fn hostprocess_probe_runs_to_completion(#[case] host_process: bool, #[case] expected: Process) {
    let command = json!(["powershell.exe", "-NoProfile", "-Command", ON_THE_HOST]);
    let pod = if host_process {
        with_spec(json!({
            "hostNetwork": true,
            "securityContext": {"windowsOptions": {"hostProcess": true, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
            "containers": [{"name": "app", "image": HPC_IMAGE, "env": node_name_env(), "command": command}],
        }))
    } else {
        with_spec(json!({"containers": [{"name": "app", "image": SC2022, "env": node_name_env(), "command": command}]}))
    };
    assert_eq!(pod_process(&win(20348), &pod), expected);
}

#[rstest]
#[case::if_eq_true("if ($env:A -eq 'x') { 'same' } else { 'different' }", exits(0, 0, &["same"]))]
#[case::if_eq_false("if ($env:A -eq $env:B) { 'same' } else { 'different'; exit 4 }", exits(4, 0, &["different"]))]
#[case::if_ne("if ($env:A -ne $env:B) { exit 7 }", exits(7, 0, &[]))]
#[case::if_not_and("if (-not ($env:A -eq 'y') -and $env:B) { 'b is ' + $env:B }", exits(0, 0, &["b is z"]))]
#[case::elseif("if ($env:A -eq 'q') { 'q' } elseif ($env:B -ceq 'Z') { 'upper' } elseif ($env:B -eq 'Z') { 'any case' } else { 'none' }", exits(0, 0, &["any case"]))]
#[case::if_without_else_not_taken("if ($env:NOPE) { exit 3 }; 'after'", exits(0, 0, &["after"]))]
#[case::variables("$n = 2 + 3; if ($n -gt 4) { \"n=$n\" }", exits(0, 0, &["n=5"]))]
#[case::foreach("foreach ($i in 1, 2) { 'item ' + $i }", exits(0, 0, &["item 1", "item 2"]))]
#[case::branch_sleeps("if ($env:A) { Start-Sleep -Seconds 2; Write-Host done }", exits(0, 2000, &["done"]))]
#[case::get_process_not_found_is_false("if (Get-Process -Name kubelet -ErrorAction SilentlyContinue) { 'host' } else { 'container' }", exits(0, 0, &["container"]))]
#[case::while_loop_runs_on("'start'; while ($true) { Start-Sleep 1 }", forever(&["start"]))]
#[case::while_loop_after_a_line("'start'\nwhile ($true) { Start-Sleep 1 }", forever(&["start"]))]
#[case::condition_unknown("if (Test-Connection example.com) { exit 0 }", forever(&[]))]
#[case::automatic_variable_unknown("if ($PSVersionTable) { exit 0 }", forever(&[]))]
fn powershell_if_and_expressions(#[case] script: &str, #[case] expected: Process) {
    let c = json!({"image": SC2022, "env": [{"name": "A", "value": "x"}, {"name": "B", "value": "z"}],
        "command": ["powershell", "-NoProfile", "-Command", script]});
    assert_eq!(process(&win(20348), c), expected);
}

/// A statement of the script is not followed by the walk when Get-Process writes its error
/// (no -ErrorAction): the error record reaches the log and the branch still runs.
#[test]
fn get_process_error_reaches_the_log() {
    let c = json!({"image": SC2022, "command": ["powershell", "-Command", "if (Get-Process kubelet) { 'host' } else { 'container' }"]});
    match process(&win(20348), c) {
        Process::Exits { code: 0, log, .. } => {
            assert!(
                log[0].starts_with("Get-Process : Cannot find a process with the name \"kubelet\""),
                "{log:?}"
            );
            assert!(log.iter().any(|l| l.contains("NoProcessFoundForGivenName")), "{log:?}");
            assert_eq!(log.last().map(String::as_str), Some("container"));
        }
        other => panic!("{other:?}"),
    }
}

const ALLOCATE_1G: &str = "$b = [byte[]]::new(1GB); 'allocated ' + $b.Length";

/// MEM-NO-OOM-KILL: a Windows container over its memory limit is not OOM-killed; the allocation
/// fails and .NET throws OutOfMemoryException, a statement-terminating error after which the
/// script goes on (`$b` stays unset). Its exit code is that of its last statement: 0 when a
/// statement that succeeds follows, 1 when the failed allocation is the last.
#[rstest]
#[case::over_the_limit_then_a_statement("512Mi", ALLOCATE_1G, 0, "allocated ")]
#[case::over_the_limit_last("512Mi", "$b = [byte[]]::new(1GB)", 1, "")]
#[case::new_object_over_the_limit("512Mi", "New-Object byte[] 1GB | Out-Null", 1, "")]
#[case::within_the_limit("2Gi", ALLOCATE_1G, 0, "allocated 1073741824")]
#[case::new_object_within(
    "2Gi",
    "$b = New-Object byte[] 1GB; 'allocated ' + $b.Length",
    0,
    "allocated 1073741824"
)]
fn powershell_allocation_on_windows(
    #[case] limit: &str,
    #[case] script: &str,
    #[case] code: i32,
    #[case] last_line: &str,
) {
    let c = json!({"image": AGNHOST53, "command": ["pwsh", "-NoProfile", "-Command", script],
        "resources": {"limits": {"memory": limit}}});
    match process(&win(20348), c) {
        Process::Exits {
            code: got,
            after_ms: 0,
            log,
        } => {
            assert_eq!(got, code, "{log:?}");
            let over = limit == "512Mi";
            let text = log.join("\n");
            assert_eq!(
                text.contains("\"Exception of type 'System.OutOfMemoryException' was thrown.\""),
                over,
                "{log:?}"
            );
            if over {
                assert!(
                    text.contains("Exception calling \".ctor\" with \"1\" argument(s)"),
                    "{log:?}"
                );
            }
            if !last_line.is_empty() {
                assert_eq!(log.last().map(String::as_str), Some(last_line), "{log:?}");
            }
        }
        other => panic!("expected the script to exit, got {other:?}"),
    }
}

#[test]
fn powershell_allocation_error_record() {
    let c = json!({"image": AGNHOST53, "command": ["pwsh", "-NoProfile", "-Command", ALLOCATE_1G],
        "resources": {"limits": {"memory": "512Mi"}}});
    assert_eq!(
        process(&win(20348), c),
        exits(
            0,
            0,
            &[
                "Exception calling \".ctor\" with \"1\" argument(s): \"Exception of type 'System.OutOfMemoryException' was thrown.\"",
                "At line:1 char:1",
                "+ $b = [byte[]]::new(1GB)",
                "+ ~~~~~~~~~~~~~~~~~~~~~~~",
                "    + CategoryInfo          : NotSpecified: (:) [], MethodInvocationException",
                "    + FullyQualifiedErrorId : OutOfMemoryException",
                "allocated ",
            ]
        )
    );
}

/// An allocation within the limit is held while the script runs on (MEM-EVICTION counts it);
/// PowerShell 7 on Linux caps its GC heap at 75% of the cgroup's limit, so the allocation throws
/// before the kernel's OOM killer is involved, while a native tool over the limit is OOM-killed.
#[test]
fn powershell_allocation_is_held_and_linux_throws() {
    let c = json!({"image": SC2022, "command": ["powershell", "-Command", "$b = [byte[]]::new(100MB)\nwhile ($true) { Start-Sleep 1 }"],
        "resources": {"limits": {"memory": "1Gi"}}});
    assert_eq!(
        process(&win(20348), c),
        Process::Holding {
            bytes: 100 * 1024 * 1024,
            log: Vec::new()
        }
    );
    let c = json!({"image": "mcr.microsoft.com/powershell:7.4-ubuntu-22.04", "command": ["pwsh", "-c", "$b = [byte[]]::new(900MB)"],
        "resources": {"limits": {"memory": "1Gi"}}});
    match process(&linux(), c) {
        Process::Exits { code: 1, log, .. } => assert!(log[0].contains("OutOfMemoryException"), "{log:?}"),
        other => panic!("{other:?}"),
    }
    let c = json!({"image": "busybox", "command": ["stress", "--vm", "1", "--vm-bytes", "900M"],
        "resources": {"limits": {"memory": "512Mi"}}});
    assert!(matches!(process(&linux(), c), Process::OomKilled { .. }));
}

/// Memory: the Linux kernel OOM-kills, Windows allocations fail (MEM-NO-OOM-KILL).
#[rstest]
#[case::stress_over_limit(
    "linux",
    Some("100Mi"),
    json!(["stress", "--vm", "1", "--vm-bytes", "250M", "--vm-hang", "1"]),
    "oom"
)]
#[case::stress_under_limit("linux", Some("100Mi"), json!(["stress", "--vm", "1", "--vm-bytes", "50M"]), "running")]
#[case::stress_two_workers("linux", Some("150Mi"), json!(["stress", "--vm", "2", "--vm-bytes", "100M"]), "oom")]
#[case::stress_no_limit("linux", None, json!(["stress", "--vm", "1", "--vm-bytes", "4G"]), "running")]
#[case::stress_ng_timeout_fits("linux", Some("300Mi"), json!(["stress-ng", "--vm", "2", "--vm-bytes", "100M", "--timeout", "10s"]), "exits")]
#[case::stress_ng_percent("linux", Some("1Gi"), json!(["stress-ng", "--vm", "1", "--vm-bytes", "80%"]), "oom")]
#[case::stress_in_shell("linux", Some("64Mi"), json!(["sh", "-c", "echo go; stress --vm 1 --vm-bytes 128M"]), "oom")]
#[case::tail_dev_zero("linux", Some("64Mi"), json!(["tail", "/dev/zero"]), "oom")]
#[case::agnhost_stress_linux("linux", Some("100Mi"), json!(["/agnhost", "stress", "--mem-total", "200Mi", "--mem-alloc-size", "10Mi", "--mem-alloc-sleep", "100ms"]), "oom")]
#[case::agnhost_stress_windows("windows", Some("100Mi"), json!(["/agnhost", "stress", "--mem-total", "200Mi", "--mem-alloc-size", "10Mi", "--mem-alloc-sleep", "100ms"]), "alloc")]
#[case::agnhost_stress_fits("windows", Some("300Mi"), json!(["agnhost", "stress", "--mem-total", "200Mi"]), "running")]
#[case::testlimit_over("windows", Some("400Mi"), json!(["testlimit.exe", "-accepteula", "-d", "100Mb", "-e", "5", "20000s", "-c", "5"]), "alloc")]
#[case::testlimit_fits("windows", Some("1Gi"), json!(["testlimit.exe", "-d", "100Mb", "-c", "5"]), "running")]
#[case::testlimit_unbounded("windows", Some("1Gi"), json!(["testlimit64", "-d", "300"]), "alloc")]
#[case::testlimit_unbounded_no_limit("windows", None, json!(["testlimit64", "-d", "300"]), "running")]
#[case::stress_windows("windows", Some("100Mi"), json!(["stress", "--vm", "1", "--vm-bytes", "250M"]), "alloc")]
fn memory(#[case] os: &str, #[case] limit: Option<&str>, #[case] command: Value, #[case] expected: &str) {
    let (node, image) = if os == "linux" {
        (linux(), "busybox")
    } else {
        (win(20348), SC2022)
    };
    let mut c = json!({"image": image, "command": command});
    if let Some(l) = limit {
        c["resources"] = json!({"limits": {"memory": l}});
    }
    let p = process(&node, c);
    match (expected, &p) {
        ("oom", Process::OomKilled { .. })
        | ("running", Process::LongRunning { .. } | Process::Holding { .. })
        | ("exits", Process::Exits { code: 0, .. }) => {}
        ("alloc", Process::AllocationFails { log, .. }) => {
            assert!(!log.is_empty());
            assert!(
                log.join("\n").contains("1455") || log.join("\n").contains("paging file"),
                "{log:?}"
            );
        }
        _ => panic!("expected {expected}, got {p:?}"),
    }
}

#[test]
fn allocation_timing_follows_the_allocation_rate() {
    let args = json!([
        "/agnhost",
        "stress",
        "--mem-total",
        "200Mi",
        "--mem-alloc-size",
        "10Mi",
        "--mem-alloc-sleep",
        "100ms"
    ]);
    let c = json!({"image": AGNHOST, "command": args, "resources": {"limits": {"memory": "100Mi"}}});
    assert_eq!(process(&linux(), c.clone()), Process::OomKilled { after_ms: 1100 });
    match process(&win(20348), c) {
        Process::AllocationFails { after_ms, log } => {
            assert_eq!(after_ms, 1100);
            assert_eq!(log[0], "runtime: VirtualAlloc of 10485760 bytes failed with errno=1455");
            assert_eq!(log[1], "fatal error: out of memory");
        }
        other => panic!("{other:?}"),
    }
    // Earlier work in the script delays the kill and keeps its output.
    let c = json!({"image": "busybox", "command": ["sh", "-c", "echo go; sleep 2; tail /dev/zero"],
        "resources": {"limits": {"memory": "64Mi"}}});
    assert_eq!(process(&linux(), c), Process::OomKilled { after_ms: 4000 });
    let c = json!({"image": SC2022, "command": ["powershell", "-c", "Write-Host go; testlimit64 -d 10"],
        "resources": {"limits": {"memory": "64Mi"}}});
    match process(&win(20348), c) {
        Process::AllocationFails { log, .. } => assert_eq!(log[0], "go"),
        other => panic!("{other:?}"),
    }
}
