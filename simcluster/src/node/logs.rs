//! Container logs: per-container line buffers (current and previous instance) that simulated
//! kubelets append to and the `pods/log` endpoint reads and follows.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use tokio::sync::broadcast;

/// Identifies one container: namespace, pod, container.
pub type ContainerKey = (String, String, String);

/// One logged line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub at: DateTime<Utc>,
    pub text: String,
}

#[derive(Debug, Default)]
struct ContainerLog {
    current: Vec<LogLine>,
    previous: Option<Vec<LogLine>>,
}

/// Lines kept per container instance; older lines are dropped.
const MAX_LINES: usize = 10_000;

/// All container logs of a cluster.
#[derive(Debug)]
pub struct LogBook {
    logs: Mutex<HashMap<ContainerKey, ContainerLog>>,
    appended: broadcast::Sender<(ContainerKey, LogLine)>,
}

impl Default for LogBook {
    fn default() -> Self {
        let (appended, _) = broadcast::channel(4096);
        Self {
            logs: Mutex::new(HashMap::new()),
            appended,
        }
    }
}

fn key(ns: &str, pod: &str, container: &str) -> ContainerKey {
    (ns.to_string(), pod.to_string(), container.to_string())
}

impl LogBook {
    /// Appends a line to a container's current log.
    pub fn append(&self, ns: &str, pod: &str, container: &str, text: &str) {
        let line = LogLine {
            at: Utc::now(),
            text: text.trim_end_matches('\n').to_string(),
        };
        let k = key(ns, pod, container);
        {
            let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
            let log = logs.entry(k.clone()).or_default();
            log.current.push(line.clone());
            if log.current.len() > MAX_LINES {
                let excess = log.current.len() - MAX_LINES;
                log.current.drain(..excess);
            }
        }
        let _ = self.appended.send((k, line));
    }

    /// A container restarted: its current log becomes the previous one.
    pub fn restart(&self, ns: &str, pod: &str, container: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs.entry(key(ns, pod, container)).or_default();
        log.previous = Some(std::mem::take(&mut log.current));
    }

    /// Forgets a pod's logs (the pod is gone).
    pub fn remove_pod(&self, ns: &str, pod: &str) {
        let mut logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        logs.retain(|(n, p, _), _| !(n == ns && p == pod));
    }

    /// The lines of the current (or previous) instance; None when there is no previous one.
    pub fn read(&self, ns: &str, pod: &str, container: &str, previous: bool) -> Option<Vec<LogLine>> {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let log = logs.get(&key(ns, pod, container));
        if previous {
            log.and_then(|l| l.previous.clone())
        } else {
            Some(log.map(|l| l.current.clone()).unwrap_or_default())
        }
    }

    /// Lines read and a subscription for what follows, without a gap between the two.
    pub fn read_and_follow(
        &self,
        ns: &str,
        pod: &str,
        container: &str,
    ) -> (Vec<LogLine>, broadcast::Receiver<(ContainerKey, LogLine)>) {
        let logs = self.logs.lock().unwrap_or_else(|p| p.into_inner());
        let rx = self.appended.subscribe();
        let lines = logs
            .get(&key(ns, pod, container))
            .map(|l| l.current.clone())
            .unwrap_or_default();
        (lines, rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_previous_and_follow() {
        let book = LogBook::default();
        book.append("a", "p", "c", "one");
        book.restart("a", "p", "c");
        book.append("a", "p", "c", "two\n");
        let current: Vec<_> = book
            .read("a", "p", "c", false)
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(current, ["two"]);
        let previous: Vec<_> = book
            .read("a", "p", "c", true)
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.text)
            .collect();
        assert_eq!(previous, ["one"]);
        assert!(book.read("a", "q", "c", true).is_none());
        let (lines, mut rx) = book.read_and_follow("a", "p", "c");
        assert_eq!(lines.len(), 1);
        book.append("a", "p", "c", "three");
        let (k, line) = rx.try_recv().expect("followed line");
        assert_eq!(k.2, "c");
        assert_eq!(line.text, "three");
    }
}
