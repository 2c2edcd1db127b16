//! mixcheck as an in-cluster Job (`deploy/job.yaml`, `mixcheck run --in-cluster`): the run
//! prints its results.json between two marker lines to its log, and `mixcheck results
//! --from-job NAME -n NS` reads the newest pod of that Job's log back through the API.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use mixcheck_reports::RunReport;

/// The line before results.json in the Job's log.
pub const BEGIN: &str = "----- BEGIN MIXCHECK RESULTS -----";
/// The line after it.
pub const END: &str = "----- END MIXCHECK RESULTS -----";
/// The limit on each API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a Job's results could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The API did not answer (exit code 3).
    #[error("cannot read job {namespace}/{name}: {cause}")]
    Api {
        namespace: String,
        name: String,
        cause: String,
    },
    /// The Job has no pod, or its log holds no results (exit code 2).
    #[error("job {namespace}/{name}: {message}")]
    NoResults {
        namespace: String,
        name: String,
        message: String,
    },
    /// What is between the markers is not a run report (exit code 2).
    #[error(transparent)]
    Report(#[from] mixcheck_reports::results_json::Error),
}

/// The block an in-cluster run prints at the end of its log.
pub fn results_block(report: &RunReport) -> String {
    let json = serde_json::to_string(report).unwrap_or_default();
    format!("{BEGIN}\n{json}\n{END}\n")
}

/// The text between the last pair of markers of `log` (a Job that ran twice prints twice).
pub fn extract(log: &str) -> Option<&str> {
    let start = log.rfind(BEGIN)? + BEGIN.len();
    let end = start + log[start..].find(END)?;
    Some(log[start..end].trim())
}

/// The results of Job `name` in namespace `ns`: from the log of its newest pod.
pub async fn results(client: &kube::Client, ns: &str, name: &str) -> Result<RunReport, JobError> {
    let api_err = |cause: String| JobError::Api {
        namespace: ns.to_string(),
        name: name.to_string(),
        cause,
    };
    let none = |message: String| JobError::NoResults {
        namespace: ns.to_string(),
        name: name.to_string(),
        message,
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = tokio::time::timeout(
        CALL_TIMEOUT,
        pods.list(&ListParams::default().labels(&format!("job-name={name}"))),
    )
    .await
    .map_err(|_| api_err("listing its pods timed out".into()))?
    .map_err(|e| api_err(e.to_string()))?;
    let newest = list
        .items
        .iter()
        .max_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .and_then(|p| p.metadata.name.clone())
        .ok_or_else(|| none("no pod (is the name right, and has it started?)".into()))?;
    let log = tokio::time::timeout(CALL_TIMEOUT, pods.logs(&newest, &LogParams::default()))
        .await
        .map_err(|_| api_err(format!("reading the log of pod {newest} timed out")))?
        .map_err(|e| api_err(e.to_string()))?;
    let json = extract(&log).ok_or_else(|| {
        none(format!(
            "the log of pod {newest} holds no results between {BEGIN:?} and {END:?} (still running, or it ended before writing them)"
        ))
    })?;
    Ok(mixcheck_reports::results_json::parse(
        json,
        Path::new(&format!("job {ns}/{name} (pod {newest})")),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_round_trips_through_a_log() {
        let report = RunReport::new(
            "0.1.0",
            "abc12345",
            mixcheck_reports::Target::Kubeconfig {
                context: "in-cluster".into(),
                server: "https://10.96.0.1:443".into(),
            },
            chrono::Utc::now(),
        );
        let log = format!(
            "## mixcheck: ✅ gate passed\n…\n{}Results: mixcheck-report/results.json\n",
            results_block(&report)
        );
        let json = extract(&log).expect("the block");
        let back = mixcheck_reports::results_json::parse(json, Path::new("log")).expect("a report");
        assert_eq!(back.run_id, "abc12345");
    }

    #[test]
    fn the_last_block_wins_and_a_cut_block_is_none() {
        let log = format!("{BEGIN}\n{{\"a\":1}}\n{END}\n{BEGIN}\n{{\"b\":2}}\n{END}\n");
        assert_eq!(extract(&log), Some("{\"b\":2}"));
        assert_eq!(extract(&format!("{BEGIN}\n{{\"a\"")), None);
        assert_eq!(extract("no markers"), None);
    }
}
