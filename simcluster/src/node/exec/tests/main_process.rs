//! A container's main process (the kubelet's process model) and the same command line exec'd
//! into a running container print the same lines: one shell layer answers both.

use rstest::rstest;
use serde_json::json;

use super::*;

/// What a container's main process logs for `argv` (the kubelet's process model).
fn main_process_lines(f: &Fixture, node: &str, image: &str, argv: &[&str]) -> Vec<String> {
    let pod = json!({"metadata": {"name": "main", "namespace": NS, "uid": "u1"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": image, "command": argv,
            "env": [{"name": "GREETING", "value": "hi"}]}]}});
    let catalogue = crate::node::images::Catalogue::default();
    match crate::node::kubelet::outcome::plan(f.profile(node), &pod, &catalogue, None) {
        crate::node::kubelet::outcome::PodFate::Proceed(p) => match &p.containers[0].outcome {
            crate::node::kubelet::outcome::ContainerOutcome::Runs { process } => match process {
                crate::node::runtime::Process::Exits { log, .. }
                | crate::node::runtime::Process::LongRunning { log } => log.clone(),
                other => panic!("{argv:?}: {other:?}"),
            },
            other => panic!("{argv:?}: {other:?}"),
        },
        other => panic!("{argv:?}: {other:?}"),
    }
}

/// The same command line run as a container's main process and exec'd into a running
/// container prints the same lines: one shell layer answers both (echo variants, escapes,
/// cmd's `echo` forms, PowerShell's Write-Host and Write-Output).
#[rstest]
#[case::sh_echo("linux-1", BUSYBOX, &["echo", "a", "b"])]
#[case::sh_echo_n("linux-1", BUSYBOX, &["echo", "-n", "a"])]
#[case::sh_echo_e("linux-1", BUSYBOX, &["echo", "-e", "a\\tb\\nc"])]
#[case::sh_echo_ne("linux-1", BUSYBOX, &["echo", "-ne", "a\\nb"])]
#[case::sh_echo_en("linux-1", BUSYBOX, &["echo", "-en", "a\\nb"])]
#[case::sh_echo_e_n("linux-1", BUSYBOX, &["echo", "-e", "-n", "x\\ny"])]
#[case::sh_echo_upper_e("linux-1", BUSYBOX, &["echo", "-E", "a\\nb"])]
#[case::sh_echo_backslash("linux-1", BUSYBOX, &["echo", "-e", "a\\\\nb"])]
#[case::sh_echo_cr("linux-1", BUSYBOX, &["echo", "-e", "a\\rb"])]
#[case::sh_c_sequence("linux-1", BUSYBOX, &["sh", "-c", "echo hi; echo there"])]
#[case::sh_c_echo_e("linux-1", BUSYBOX, &["sh", "-c", "echo -e 'a\\tb'"])]
#[case::sh_c_quotes("linux-1", BUSYBOX, &["sh", "-c", "echo 'single quoted' \"double quoted\""])]
#[case::printf("linux-1", BUSYBOX, &["printf", "a\\nb\\n"])]
#[case::sh_c_printf("linux-1", BUSYBOX, &["sh", "-c", "printf 'x\\ty\\n'"])]
#[case::cmd_echo("win2022-1", SERVERCORE, &["cmd", "/c", "echo hello world"])]
#[case::cmd_echo_dot("win2022-1", SERVERCORE, &["cmd", "/c", "echo."])]
#[case::cmd_echo_bare("win2022-1", SERVERCORE, &["cmd", "/c", "echo"])]
#[case::cmd_echo_quotes("win2022-1", SERVERCORE, &["cmd", "/c", "echo \"quoted\" text"])]
#[case::cmd_echo_colon("win2022-1", SERVERCORE, &["cmd", "/c", "echo:x"])]
#[case::cmd_echo_sequence("win2022-1", SERVERCORE, &["cmd", "/c", "echo a & echo b"])]
#[case::cmd_echo_split_args("win2022-1", SERVERCORE, &["cmd", "/c", "echo", "a", "b"])]
#[case::ps_write_host("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Host hi there"])]
#[case::ps_write_output("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output 'a b'"])]
#[case::ps_echo("win2022-1", SERVERCORE, &["powershell", "-Command", "echo hi"])]
#[case::ps_sequence("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Host a; Write-Host b"])]
// The shell forms of the suites' exec probes and the fixtures' containers (with commands both
// sides model: the main process does not read files or the network, so `cat`, `type`, `ver`
// and `ipconfig` stand in as `echo`, `grep -q` and `findstr`).
#[case::sh_c_single("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo cpu-limited"])]
#[case::sh_c_redirect_and("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo in-memory > /tmp/probe.txt && echo written"])]
#[case::sh_c_redirect_only("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo seeded-by-init > /tmp/seed.txt"])]
#[case::sh_c_append("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo a >> /tmp/log.txt; echo b"])]
#[case::sh_c_dev_null("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo hidden > /dev/null; echo shown"])]
#[case::sh_c_stderr_to_stdout("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo shown 2>&1"])]
#[case::sh_c_or("linux-1", BUSYBOX, &["/bin/sh", "-c", "false || echo fallback"])]
#[case::sh_c_and_skipped("linux-1", BUSYBOX, &["/bin/sh", "-c", "false && echo no; echo after"])]
#[case::sh_c_and_or("linux-1", BUSYBOX, &["/bin/sh", "-c", "true && echo write-allowed || echo write-denied"])]
#[case::sh_c_subshell_and_or("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo seeded; (echo probe > /tmp/probe.txt) 2>/dev/null && echo write-allowed || echo write-denied"])]
#[case::sh_c_brace_group("linux-1", BUSYBOX, &["/bin/sh", "-c", "{ echo a; echo b; }"])]
#[case::sh_c_subshell_exit("linux-1", BUSYBOX, &["/bin/sh", "-c", "(echo in; exit 3); echo out"])]
#[case::sh_c_if_pipe("linux-1", BUSYBOX, &["/bin/sh", "-c", "if echo x | grep -q x; then echo host-network; else echo pod-network; fi"])]
#[case::sh_c_if_else("linux-1", BUSYBOX, &["/bin/sh", "-c", "if false; then echo yes; elif false; then echo maybe; else echo no; fi"])]
#[case::sh_c_pipe_and("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo a | grep -q a && echo found"])]
#[case::sh_c_var_quoted("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo \"$GREETING\""])]
#[case::sh_c_var_braces("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo ${GREETING}-x '$GREETING'"])]
#[case::sh_c_newlines("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo one\necho two"])]
#[case::sh_c_sleep_then_echo("linux-1", BUSYBOX, &["/bin/sh", "-c", "sleep 1; echo done"])]
#[case::sh_c_exit_stops("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo before; exit 3; echo after"])]
#[case::sh_c_background("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo a & echo b"])]
#[case::sh_c_negate("linux-1", BUSYBOX, &["/bin/sh", "-c", "! false && echo negated"])]
#[case::sh_c_comment("linux-1", BUSYBOX, &["/bin/sh", "-c", "echo a # not shown"])]
#[case::sh_c_assignment("linux-1", BUSYBOX, &["/bin/sh", "-c", "X=1; echo set"])]
#[case::cmd_c_redirect_and("win2022-1", SERVERCORE, &["cmd", "/c", "echo in-memory> C:\\probe.txt && echo written"])]
#[case::cmd_c_redirect_only("win2022-1", SERVERCORE, &["cmd", "/c", "echo seeded-by-init> C:\\seed.txt"])]
#[case::cmd_c_nul("win2022-1", SERVERCORE, &["cmd", "/c", "echo hidden > NUL & echo shown"])]
#[case::cmd_c_ping_forever("win2022-1", SERVERCORE, &["cmd", "/c", "ping -t localhost > NUL"])]
#[case::cmd_c_pipe_and_or("win2022-1", SERVERCORE, &["cmd", "/c", "echo x | findstr x >NUL && echo host-network || echo pod-network"])]
#[case::cmd_c_variable("win2022-1", SERVERCORE, &["cmd", "/c", "echo %GREETING%"])]
#[case::cmd_c_unknown_variable("win2022-1", SERVERCORE, &["cmd", "/c", "echo %NOPE%"])]
#[case::cmd_c_group_and_or("win2022-1", SERVERCORE, &["cmd", "/c", "echo seeded & (echo probe> C:\\probe.txt) && echo write-allowed || echo write-denied"])]
#[case::cmd_c_exit_b("win2022-1", SERVERCORE, &["cmd", "/c", "echo hi & exit /b 2"])]
#[case::cmd_s_c_quoted("win2022-1", SERVERCORE, &["cmd", "/s", "/c", "\"echo quoted line\""])]
#[case::cmd_c_or("win2022-1", SERVERCORE, &["cmd", "/c", "exit /b 1 || echo fallback"])]
#[case::ps_long_sleep("win2022-1", SERVERCORE, &["powershell.exe", "-NoProfile", "-Command", "Start-Sleep -Seconds 86400"])]
#[case::ps_sleep_then_output("win2022-1", SERVERCORE, &["powershell", "-NoProfile", "-Command", "Start-Sleep -Seconds 1; Write-Output done"])]
#[case::ps_env("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output \"greeting=$env:GREETING\""])]
#[case::ps_out_null("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output hidden | Out-Null; Write-Output shown"])]
#[case::ps_redirect_null("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output hidden > $null; Write-Output shown"])]
#[case::ps_redirect_file("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output saved > C:\\out.txt; Write-Output shown"])]
#[case::ps_exit("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output a; exit 3"])]
#[case::ps_assign("win2022-1", SERVERCORE, &["powershell", "-Command", "$ErrorActionPreference = 'Stop'; Write-Output ok"])]
#[case::ps_newlines("win2022-1", SERVERCORE, &["powershell", "-Command", "Write-Output one\nWrite-Output two"])]
#[case::ps_execution_policy("win2022-1", SERVERCORE, &["powershell.exe", "-NoProfile", "-ExecutionPolicy", "Bypass", "-Command", "Write-Output policy"])]
#[case::ps_plain_arguments("win2022-1", SERVERCORE, &["powershell", "Write-Output", "plain"])]
#[case::ps_encoded("win2022-1", SERVERCORE, &["powershell", "-EncodedCommand", "VwByAGkAdABlAC0ATwB1AHQAcAB1AHQAIABlAG4AYwBvAGQAZQBkAA=="])]
#[case::sh_grouped_flags("linux-1", BUSYBOX, &["sh", "-ec", "echo grouped"])]
#[case::sh_in_sh("linux-1", BUSYBOX, &["sh", "-c", "sh -c 'echo nested'"])]
#[case::cmd_in_cmd("win2022-1", SERVERCORE, &["cmd", "/c", "cmd /c echo nested"])]
#[case::cmd_c_joined("win2022-1", SERVERCORE, &["cmd", "/cecho", "joined"])]
#[tokio::test]
async fn main_process_and_exec_print_the_same(#[case] node: &str, #[case] image: &str, #[case] argv: &[&str]) {
    let f = Fixture::new();
    let pod = f.app("shell", node, image, json!({}));
    let o = exec(&f, &pod, argv).await;
    let printed = text(&o.stdout);
    let mut exec_lines: Vec<String> = printed
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect();
    if exec_lines.last().is_some_and(String::is_empty) {
        exec_lines.pop();
    }
    assert_eq!(
        main_process_lines(&f, node, image, argv),
        exec_lines,
        "{argv:?}: exec printed {printed:?}"
    );
}
