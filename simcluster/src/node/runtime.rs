//! The seam between the API server and simulated containers: what a container answers when a
//! command is exec'd in it. Simulated nodes implement [`ContainerRuntime`] per image and OS; the
//! [`MinimalRuntime`] answers a handful of generic commands until they do.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use serde_json::Value;

use crate::store::Obj;

/// A command to run in a container.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The pod as stored when the exec started.
    pub pod: Obj,
    pub container: String,
    pub command: Vec<String>,
    /// Everything the client wrote to stdin (None when stdin was not requested).
    pub stdin: Option<Bytes>,
    pub tty: bool,
}

impl ExecRequest {
    /// The container's spec within the pod.
    pub fn container_spec(&self) -> Option<&Value> {
        self.pod
            .value()
            .pointer("/spec/containers")
            .and_then(Value::as_array)?
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(self.container.as_str()))
    }

    /// The value of an environment variable set in the container spec.
    pub fn env(&self, name: &str) -> Option<String> {
        self.container_spec()?
            .get("env")?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|e| e.get("value").and_then(Value::as_str))
            .map(str::to_string)
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitStatus {
    /// The command ran and exited with this code.
    Code(i32),
    /// The runtime could not run the command (the message is what the runtime reports).
    Error(String),
}

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: ExitStatus,
}

impl ExecOutput {
    pub fn ok(stdout: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: stdout.into(),
            stderr: Vec::new(),
            exit: ExitStatus::Code(0),
        }
    }

    pub fn failed(code: i32, stderr: impl Into<Vec<u8>>) -> Self {
        Self {
            stdout: Vec::new(),
            stderr: stderr.into(),
            exit: ExitStatus::Code(code),
        }
    }
}

/// A boxed future returned by [`ContainerRuntime::exec`].
pub type ExecFuture = Pin<Box<dyn Future<Output = ExecOutput> + Send>>;

/// Runs commands in simulated containers.
pub trait ContainerRuntime: Send + Sync + std::fmt::Debug {
    fn exec(&self, request: ExecRequest) -> ExecFuture;
}

/// Generic answers: `hostname`, `echo`, `printenv`/`env`, `cat` (echoes stdin), `true`,
/// `false`, `sh -c 'exit N'`; anything else is "executable file not found" (exit 126, as
/// containerd's runc reports it).
#[derive(Debug, Default, Clone, Copy)]
pub struct MinimalRuntime;

impl ContainerRuntime for MinimalRuntime {
    fn exec(&self, request: ExecRequest) -> ExecFuture {
        Box::pin(std::future::ready(minimal(&request)))
    }
}

fn minimal(req: &ExecRequest) -> ExecOutput {
    let args: Vec<&str> = req.command.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["hostname"] => ExecOutput::ok(format!("{}\n", req.pod.name())),
        ["echo", rest @ ..] => ExecOutput::ok(format!("{}\n", rest.join(" "))),
        ["true"] => ExecOutput::ok(Vec::new()),
        ["false"] => ExecOutput::failed(1, Vec::new()),
        ["printenv", var] => match req.env(var) {
            Some(v) => ExecOutput::ok(format!("{v}\n")),
            None => ExecOutput::failed(1, Vec::new()),
        },
        ["env"] | ["printenv"] => {
            let mut out = format!("HOSTNAME={}\n", req.pod.name());
            if let Some(env) = req
                .container_spec()
                .and_then(|c| c.get("env"))
                .and_then(Value::as_array)
            {
                for e in env {
                    if let (Some(n), Some(v)) = (
                        e.get("name").and_then(Value::as_str),
                        e.get("value").and_then(Value::as_str),
                    ) {
                        out.push_str(&format!("{n}={v}\n"));
                    }
                }
            }
            ExecOutput::ok(out)
        }
        ["cat"] => ExecOutput::ok(req.stdin.clone().unwrap_or_default().to_vec()),
        ["sh", "-c", script] => match script.trim().strip_prefix("exit").map(str::trim) {
            Some(code) => match code.parse::<i32>() {
                Ok(0) => ExecOutput::ok(Vec::new()),
                Ok(c) => ExecOutput::failed(c, Vec::new()),
                Err(_) => ExecOutput::failed(2, format!("sh: exit: Illegal number: {code}\n")),
            },
            None => ExecOutput::failed(
                127,
                format!("sh: {}: not found\n", script.split_whitespace().next().unwrap_or("")),
            ),
        },
        [] => ExecOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit: ExitStatus::Error("you must specify at least one command for the container".into()),
        },
        [cmd, ..] => ExecOutput {
            stdout: Vec::new(),
            stderr: Vec::new(),
            exit: ExitStatus::Error(format!(
                "error executing command in container: failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: {cmd:?}: executable file not found in $PATH: unknown"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{store::Store, store::resources};
    use rstest::rstest;
    use serde_json::json;

    fn request(command: &[&str], stdin: Option<&str>) -> ExecRequest {
        let store = Store::default();
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "a"}}))
            .expect("ns");
        let pod = store
            .create(
                resources::core("pods"),
                "a",
                json!({"metadata": {"name": "web-1"}, "spec": {"containers": [
                {"name": "c", "image": "busybox", "env": [{"name": "GREETING", "value": "hi"}]}]}}),
            )
            .expect("pod");
        ExecRequest {
            pod,
            container: "c".into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            stdin: stdin.map(|s| Bytes::from(s.to_string())),
            tty: false,
        }
    }

    #[rstest]
    #[case(&["hostname"], None, "web-1\n", ExitStatus::Code(0))]
    #[case(&["echo", "a", "b"], None, "a b\n", ExitStatus::Code(0))]
    #[case(&["printenv", "GREETING"], None, "hi\n", ExitStatus::Code(0))]
    #[case(&["printenv", "NOPE"], None, "", ExitStatus::Code(1))]
    #[case(&["cat"], Some("piped"), "piped", ExitStatus::Code(0))]
    #[case(&["sh", "-c", "exit 3"], None, "", ExitStatus::Code(3))]
    #[case(&["false"], None, "", ExitStatus::Code(1))]
    #[tokio::test]
    async fn minimal_commands(
        #[case] cmd: &[&str],
        #[case] stdin: Option<&str>,
        #[case] stdout: &str,
        #[case] exit: ExitStatus,
    ) {
        let out = MinimalRuntime.exec(request(cmd, stdin)).await;
        assert_eq!(String::from_utf8_lossy(&out.stdout), stdout);
        assert_eq!(out.exit, exit);
    }

    #[tokio::test]
    async fn unknown_command_is_not_found() {
        let out = MinimalRuntime.exec(request(&["frobnicate"], None)).await;
        match out.exit {
            ExitStatus::Error(msg) => assert!(msg.contains("executable file not found"), "{msg}"),
            other => panic!("unexpected {other:?}"),
        }
    }
}
