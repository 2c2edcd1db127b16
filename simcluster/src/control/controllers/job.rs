//! The Job controller (`batch/v1`, NonIndexed completion mode): runs a Job's pods up to its
//! `parallelism` until `completions` succeed, counts failed pods (and, with `restartPolicy:
//! OnFailure`, container restarts) against `backoffLimit`, fails it at `activeDeadlineSeconds`,
//! writes the upstream status and conditions (`SuccessCriteriaMet`/`FailureTarget` before
//! `Complete`/`Failed` from 1.31), and deletes a finished Job after `ttlSecondsAfterFinished`.
//!
//! Simplification: a failed pod is replaced after 1 s doubling per failure, times
//! `timing.scale` (upstream waits 10 s doubling), so tests need not wait minutes.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::{Controllers, is_active, is_ready, rt};
use crate::control::events::{self, Kind, Source};
use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::{DeleteOptions, Obj, Part};
use crate::vocab::json;

const BACKOFF_LIMIT: (&str, &str) = ("BackoffLimitExceeded", "Job has reached the specified backoff limit");
const DEADLINE: (&str, &str) = ("DeadlineExceeded", "Job was active longer than specified deadline");
const COMPLETIONS_REACHED: (&str, &str) = ("CompletionsReached", "Reached expected number of succeeded pods");

fn source() -> Source {
    Source::controller("job-controller")
}

fn time(v: &Value, ptr: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(json::str(v, ptr))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn condition<'a>(job: &'a Value, ty: &str) -> Option<&'a Value> {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| json::str(c, "/type") == ty && json::str(c, "/status") == "True")
}

/// When the Job finished (Complete or Failed), if it has.
fn finished_at(job: &Value) -> Option<DateTime<Utc>> {
    ["Complete", "Failed"]
        .iter()
        .find_map(|ty| condition(job, ty))
        .map(|c| time(c, "/lastTransitionTime").unwrap_or_else(Utc::now))
}

fn int(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

/// How the Job ends this round, if it does.
enum Outcome {
    Running,
    Complete,
    Failed((&'static str, &'static str)),
}

impl Controllers {
    pub(super) fn job(&mut self, ns: &str, name: &str) -> Result<(), ApiError> {
        let job_rt = rt("batch", "jobs");
        let job = self.store.get(job_rt, ns, name)?;
        if job.is_terminating() {
            return Ok(());
        }
        let j = job.value();
        let now = Utc::now();
        if let Some(done) = finished_at(j) {
            return self.finished_job(&job, done, now);
        }
        let owned = self.owned_pods(job.uid());
        let pods_rt = resources::core("pods");
        let active: Vec<&Obj> = owned.iter().filter(|p| is_active(p)).collect();
        let terminating = owned.iter().filter(|p| p.is_terminating()).count();
        let phase = |want: &str| {
            owned
                .iter()
                .filter(|p| json::str(p.value(), "/status/phase") == want)
                .count() as i64
        };
        let (succeeded, failed_pods) = (phase("Succeeded"), phase("Failed"));
        let on_failure = json::str(j, "/spec/template/spec/restartPolicy") == "OnFailure";
        let restarts: i64 = active
            .iter()
            .flat_map(|p| {
                ["/status/initContainerStatuses", "/status/containerStatuses"]
                    .into_iter()
                    .filter_map(|ptr| p.value().pointer(ptr).and_then(Value::as_array))
                    .flatten()
            })
            .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
            .sum();
        let backoff_limit = int(j, "/spec/backoffLimit").unwrap_or(6);
        let completions = int(j, "/spec/completions");
        let parallelism = int(j, "/spec/parallelism").unwrap_or(1).max(0);
        let suspended = j.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let start = time(j, "/status/startTime").or((!suspended).then_some(now));

        let outcome = if failed_pods > backoff_limit || (on_failure && restarts > 0 && restarts >= backoff_limit) {
            Outcome::Failed(BACKOFF_LIMIT)
        } else if let (Some(deadline), Some(start)) = (int(j, "/spec/activeDeadlineSeconds"), start)
            && !suspended
            && (now - start).num_seconds() >= deadline
        {
            Outcome::Failed(DEADLINE)
        } else if completions.map_or(succeeded > 0 && active.is_empty(), |c| succeeded >= c) {
            Outcome::Complete
        } else {
            Outcome::Running
        };

        let mut active_count = active.len() as i64;
        match outcome {
            Outcome::Failed(_) => {
                for pod in &active {
                    self.delete_job_pod(&job, pod);
                }
                active_count = 0;
            }
            Outcome::Complete => {}
            Outcome::Running if suspended => {
                for pod in &active {
                    self.delete_job_pod(&job, pod);
                }
                active_count = 0;
            }
            Outcome::Running => {
                let wanted = match completions {
                    Some(c) => parallelism.min((c - succeeded).max(0)),
                    None if succeeded > 0 => 0,
                    None => parallelism,
                };
                let key = (ns.to_string(), name.to_string());
                let failures = failed_pods + if on_failure { restarts } else { 0 };
                // Replacing failed pods backs off; the first pods start at once.
                let (seen, at) = self.job_backoff.get(&key).copied().unwrap_or((0, Instant::now()));
                if failures > seen {
                    let exp = u32::try_from(failures - 1).unwrap_or(u32::MAX).min(6);
                    let wait = Duration::from_secs(1u64 << exp).mul_f64(self.scale.max(0.0));
                    self.job_backoff.insert(key.clone(), (failures, Instant::now() + wait));
                } else if Instant::now() >= at {
                    while active_count < wanted {
                        self.create_pod(&job, "Job", None)?;
                        active_count += 1;
                    }
                }
                if active_count > wanted {
                    let mut extra: Vec<&&Obj> = active.iter().collect();
                    extra.sort_by_key(|p| {
                        (
                            is_ready(p.value()),
                            std::cmp::Reverse(json::str(p.value(), "/metadata/creationTimestamp").to_string()),
                        )
                    });
                    for pod in extra.iter().take((active_count - wanted) as usize) {
                        let _ = self.store.delete(pods_rt, ns, pod.name(), &DeleteOptions::default());
                    }
                    active_count = wanted;
                }
            }
        }

        let ready = active.iter().filter(|p| is_ready(p.value())).count();
        let mut status = json!({"ready": if matches!(outcome, Outcome::Running) { ready } else { 0 },
            "terminating": terminating, "uncountedTerminatedPods": {}});
        for (field, n) in [
            ("active", active_count),
            ("succeeded", succeeded),
            ("failed", failed_pods),
        ] {
            if n > 0 {
                status[field] = json!(n);
            }
        }
        if let Some(start) = start {
            status["startTime"] = json!(crate::store::timestamp(start));
        }
        let modern = self.version >= (1, 31);
        let stamp = crate::store::timestamp(now);
        let cond = |ty: &str, (reason, message): (&str, &str)| {
            json!({"type": ty, "status": "True", "reason": reason, "message": message,
                   "lastProbeTime": stamp, "lastTransitionTime": stamp})
        };
        let mut conditions: Vec<Value> = Vec::new();
        match outcome {
            Outcome::Running => {}
            Outcome::Complete => {
                status["completionTime"] = json!(stamp);
                if modern {
                    conditions.push(cond("SuccessCriteriaMet", COMPLETIONS_REACHED));
                    conditions.push(cond("Complete", COMPLETIONS_REACHED));
                } else {
                    conditions.push(cond("Complete", ("", "")));
                }
                events::emit(&self.store, j, Kind::Normal, "Completed", "Job completed", &source());
            }
            Outcome::Failed(why) => {
                if modern {
                    conditions.push(cond("FailureTarget", why));
                }
                conditions.push(cond("Failed", why));
                events::emit(&self.store, j, Kind::Warning, why.0, why.1, &source());
            }
        }
        if suspended {
            conditions.push(cond("Suspended", ("JobSuspended", "Job suspended")));
        }
        if !conditions.is_empty() {
            status["conditions"] = json!(conditions);
        }
        if j.get("status") == Some(&status) {
            return Ok(());
        }
        self.store.modify(job_rt, ns, name, Part::Status, |v| {
            v["status"] = status;
            Ok(())
        })?;
        Ok(())
    }

    fn delete_job_pod(&self, job: &Obj, pod: &Obj) {
        let pods_rt = resources::core("pods");
        if self
            .store
            .delete(pods_rt, pod.namespace(), pod.name(), &DeleteOptions::default())
            .is_ok()
        {
            events::emit(
                &self.store,
                job.value(),
                Kind::Normal,
                "SuccessfulDelete",
                &format!("Deleted pod: {}", pod.name()),
                &source(),
            );
        }
    }

    /// A finished Job: its leftover pods go, and after `ttlSecondsAfterFinished` the Job (and
    /// so its pods, by garbage collection).
    fn finished_job(&mut self, job: &Obj, done: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), ApiError> {
        let failed = condition(job.value(), "Failed").is_some();
        if failed {
            for pod in self.owned_pods(job.uid()).iter().filter(|p| is_active(p)) {
                self.delete_job_pod(job, pod);
            }
        }
        let Some(ttl) = int(job.value(), "/spec/ttlSecondsAfterFinished") else {
            return Ok(());
        };
        if (now - done).num_milliseconds() >= ttl.saturating_mul(1000) {
            self.store.delete(
                rt("batch", "jobs"),
                job.namespace(),
                job.name(),
                &DeleteOptions::default(),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_job_knows_when() {
        let job = json!({"status": {"conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"}]}});
        assert_eq!(
            finished_at(&job).map(|t| t.to_rfc3339()),
            Some("2026-01-01T00:00:01+00:00".to_string())
        );
        let running = json!({"status": {"conditions": [{"type": "Complete", "status": "False"}]}});
        assert!(finished_at(&running).is_none());
    }
}
