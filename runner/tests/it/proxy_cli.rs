//! `mixcheck run` behind a proxy, as on a corporate CI runner: proxy variables that do not apply
//! to a loopback API server (or that `NO_PROXY` exempts it from) change nothing, as for kubectl;
//! a kubeconfig's `proxy-url` is always used — a real CONNECT proxy on loopback carries every
//! request and the verdicts stay the same — and a dead one exits 3 naming it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rstest::rstest;
use serde_json::Value;

use crate::run_cli::Serve;

/// The variables a corporate runner may set; each test sets its own and clears the others.
const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// A proxy address where nothing listens.
fn dead_proxy() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn run(dir: &Path, vars: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mixcheck"));
    cmd.current_dir(dir).env_remove("KUBECONFIG");
    for v in PROXY_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(vars.iter().copied())
        .args(args)
        .output()
        .expect("run mixcheck")
}

fn verdicts(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("mixcheck-report/results.json")).expect("results.json");
    let report: Value = serde_json::from_str(&text).expect("parses");
    report["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                c["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn assert_passed(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A check of every flow kind that goes through the API (exec, port-forward, pod creation).
const SELECTION: &[&str] = &["--check", "NET-POD-SVC-CLUSTERIP", "--check", "NET-HOSTPORT"];

#[rstest]
// A served cluster (through its kubeconfig, on the wall clock) once; the in-process one, whose
// client is configured from a kubeconfig the same way, for every shape of the variables.
#[case::upper_served(&[("HTTPS_PROXY", "DEAD")], true)]
#[case::upper(&[("HTTPS_PROXY", "DEAD")], false)]
#[case::lower(&[("https_proxy", "DEAD")], false)]
#[case::all_three(&[("HTTPS_PROXY", "DEAD"), ("HTTP_PROXY", "DEAD"), ("NO_PROXY", "127.0.0.1")], false)]
#[case::no_proxy_names_it(&[("HTTPS_PROXY", "DEAD"), ("no_proxy", "localhost,127.0.0.0/8")], false)]
// kube-rs refuses to parse this list (an empty entry); Go skips the entry, and so does the run.
#[case::no_proxy_go_accepts(&[("HTTPS_PROXY", "DEAD"), ("NO_PROXY", "localhost,,.corp.example,")], false)]
fn proxy_variables_do_not_stop_a_run_on_a_loopback_cluster(#[case] vars: &[(&str, &str)], #[case] served: bool) {
    let dead = dead_proxy();
    let vars: Vec<(&str, &str)> = vars
        .iter()
        .map(|(k, v)| (*k, if *v == "DEAD" { dead.as_str() } else { *v }))
        .collect();
    let serve = served.then(Serve::start);
    let kubeconfig = serve.as_ref().map(Serve::kubeconfig);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["run", "--quiet"];
    args.extend(SELECTION);
    if let Some(kc) = &kubeconfig {
        args.extend(["--kubeconfig", kc.as_str()]);
        args.extend(crate::cli::SERVED_SETTLE);
    }
    let out = run(dir.path(), &vars, &args);
    assert_passed(&out);
    assert!(!verdicts(dir.path()).is_empty());
}

/// A CONNECT proxy on loopback that counts the tunnels it opened.
struct ConnectProxy {
    url: String,
    tunnels: Arc<AtomicUsize>,
}

impl ConnectProxy {
    fn start() -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://127.0.0.1:{}", listener.local_addr().expect("addr").port());
        let tunnels = Arc::new(AtomicUsize::new(0));
        let counter = tunnels.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let counter = counter.clone();
                std::thread::spawn(move || tunnel(client, &counter));
            }
        });
        ConnectProxy { url, tunnels }
    }
}

/// Serves one `CONNECT host:port` request: connects, answers 200, copies both ways.
fn tunnel(client: TcpStream, tunnels: &AtomicUsize) {
    let Ok(reader_side) = client.try_clone() else { return };
    let mut reader = BufReader::new(reader_side);
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => return,
            Ok(_) if header == "\r\n" || header == "\n" => break,
            Ok(_) => {}
        }
    }
    let mut parts = request.split_whitespace();
    let (Some("CONNECT"), Some(authority)) = (parts.next(), parts.next()) else {
        let _ = (&client).write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n");
        return;
    };
    let Ok(upstream) = TcpStream::connect(authority) else {
        let _ = (&client).write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
        return;
    };
    tunnels.fetch_add(1, Ordering::SeqCst);
    if (&client)
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    // Whatever the client sent after the request is already buffered in `reader`.
    let buffered = reader.buffer().to_vec();
    let (Ok(mut up_write), Ok(mut up_read), Ok(mut down)) =
        (upstream.try_clone(), upstream.try_clone(), client.try_clone())
    else {
        return;
    };
    if up_write.write_all(&buffered).is_err() {
        return;
    }
    let upward = std::thread::spawn(move || {
        let mut from_client = reader.into_inner();
        let _ = std::io::copy(&mut from_client, &mut up_write);
        let _ = up_write.shutdown(std::net::Shutdown::Write);
    });
    let mut buf = [0u8; 16384];
    loop {
        match up_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if down.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = down.shutdown(std::net::Shutdown::Write);
    let _ = upward.join();
}

/// The served cluster's kubeconfig with `proxy-url` under its cluster's server.
fn with_proxy_url(kubeconfig: &str, proxy: &str, dir: &Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).expect("kubeconfig");
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.trim_start().starts_with("server:") {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}proxy-url: {proxy}\n"));
        }
    }
    assert!(out.contains("proxy-url"), "{text}");
    let path = dir.join("kc-proxied");
    std::fs::write(&path, out).expect("write");
    path.display().to_string()
}

#[test]
fn a_kubeconfig_proxy_url_carries_the_whole_run_with_the_same_verdicts() {
    let serve = Serve::start();
    let proxy = ConnectProxy::start();
    let work = tempfile::tempdir().expect("tempdir");
    let proxied = with_proxy_url(&serve.kubeconfig(), &proxy.url, work.path());
    let direct_dir = tempfile::tempdir().expect("tempdir");
    assert_passed(&run(
        direct_dir.path(),
        &[],
        &crate::cli::served(&["run", "--quiet", "--kubeconfig", &serve.kubeconfig()]),
    ));
    let proxied_dir = tempfile::tempdir().expect("tempdir");
    // NO_PROXY does not exempt a kubeconfig's proxy (client-go uses proxy-url as is).
    let out = run(
        proxied_dir.path(),
        &[("NO_PROXY", "*")],
        &crate::cli::served(&["run", "--quiet", "--kubeconfig", &proxied]),
    );
    assert_passed(&out);
    assert!(
        proxy.tunnels.load(Ordering::SeqCst) > 0,
        "the run opened no tunnel through the proxy"
    );
    assert_eq!(verdicts(proxied_dir.path()), verdicts(direct_dir.path()));
}

#[test]
fn a_dead_proxy_url_exits_3_naming_the_proxy() {
    let serve = Serve::start();
    let work = tempfile::tempdir().expect("tempdir");
    let dead = dead_proxy();
    let proxied = with_proxy_url(&serve.kubeconfig(), &dead, work.path());
    let out = run(
        work.path(),
        &[],
        &["run", "--quiet", "--timeout", "60s", "--kubeconfig", &proxied],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains(&format!("through the proxy {dead}")), "{stderr}");
    assert!(stderr.contains("from the kubeconfig's proxy-url"), "{stderr}");
}
