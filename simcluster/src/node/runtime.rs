//! The seam between the API server and simulated containers: what a container answers when a
//! command is exec'd in it (simulated nodes implement [`ContainerRuntime`] per image and OS), and
//! what a started container's main process does over time ([`Process`]).

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

/// What a started container's main process does.
#[derive(Debug, Clone, PartialEq)]
pub enum Process {
    /// Keeps running until stopped.
    LongRunning { log: Vec<String> },
    /// Exits after `after_ms` (simulated, unscaled) with this code and log lines.
    Exits { code: i32, after_ms: u64, log: Vec<String> },
    /// Linux: the kernel OOM-kills it (reason OOMKilled, exit 137).
    OomKilled { after_ms: u64 },
    /// Windows: no OOM killer (MEM-NO-OOM-KILL): the allocation fails inside the process, which
    /// exits with an error (reason Error, code 1) and logs the failure.
    AllocationFails { after_ms: u64, log: Vec<String> },
    /// Keeps running, holding `bytes` of memory it allocated (a memory tool within its limit):
    /// what the node's memory signal counts (MEM-EVICTION).
    Holding { bytes: u128, log: Vec<String> },
}
