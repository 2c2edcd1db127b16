//! The CronJob controller (`batch/v1`): creates a Job from `spec.jobTemplate` at each time of
//! `spec.schedule`, honours `suspend` and `concurrencyPolicy` (Allow, Forbid, Replace), keeps
//! `successfulJobsHistoryLimit`/`failedJobsHistoryLimit` finished Jobs, and writes `status`
//! (`active`, `lastScheduleTime`, `lastSuccessfulTime`) as upstream's controller does
//! (<https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/>,
//! `pkg/controller/cronjob/cronjob_controllerv2.go`). Jobs are named
//! `<cronjob>-<scheduled time in minutes since the epoch>` (`getJobName` upstream) and carry the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation.
//!
//! Simulated time: the schedule runs on a clock that starts at the CronJob's creation and runs
//! `1 / timing.scale` times as fast as wall time (at scale 1 it is the wall clock), so a
//! `*/1 * * * *` CronJob fires every `60 s × scale`. Only the latest missed time runs, as
//! upstream does when several were missed.

use chrono::{DateTime, Duration as ChronoDuration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::{Controllers, owned_by, owner_ref, rt};
use crate::control::events::{self, Kind, Source};
use crate::store::api_error::ApiError;
use crate::store::{DeleteOptions, Obj, Part};
use crate::vocab::json;
use crate::vocab::schedule::Schedule;

fn source() -> Source {
    Source::controller("cronjob-controller")
}

fn time(v: &Value, ptr: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(json::str(v, ptr))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Complete or Failed, with when.
fn finished(job: &Value) -> Option<(&'static str, DateTime<Utc>)> {
    let conditions = job.pointer("/status/conditions").and_then(Value::as_array)?;
    ["Complete", "Failed"].into_iter().find_map(|ty| {
        conditions
            .iter()
            .find(|c| json::str(c, "/type") == ty && json::str(c, "/status") == "True")
            .map(|c| (ty, time(c, "/lastTransitionTime").unwrap_or_else(Utc::now)))
    })
}

impl Controllers {
    pub(super) fn cron_job(&mut self, ns: &str, name: &str) -> Result<(), ApiError> {
        let cj_rt = rt("batch", "cronjobs");
        let jobs_rt = rt("batch", "jobs");
        let cj = self.store.get(cj_rt, ns, name)?;
        if cj.is_terminating() {
            return Ok(());
        }
        let v = cj.value().clone();
        let mut jobs: Vec<Obj> = self
            .store
            .list(jobs_rt, Some(ns))
            .0
            .into_iter()
            .filter(|j| owned_by(j.value(), cj.uid()) && !j.is_terminating())
            .collect();
        jobs.sort_by_key(|j| json::str(j.value(), "/metadata/creationTimestamp").to_string());
        let now = Utc::now();
        let created = time(&v, "/metadata/creationTimestamp").unwrap_or(now);
        let elapsed = (now - created).to_std().unwrap_or_default();
        let sim_now = created
            + ChronoDuration::from_std(elapsed.div_f64(self.scale.max(0.001)))
                .unwrap_or_else(|_| ChronoDuration::zero());
        let last = time(&v, "/status/lastScheduleTime");
        let mut status = v.get("status").cloned().unwrap_or_else(|| json!({}));
        let suspended = v.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        if let (false, Ok(schedule)) = (suspended, Schedule::parse(json::str(&v, "/spec/schedule"))) {
            let mut due = None;
            let mut t = last.unwrap_or(created);
            for _ in 0..10_000 {
                match schedule.next_after(t) {
                    Some(n) if n <= sim_now => {
                        due = Some(n);
                        t = n;
                    }
                    _ => break,
                }
            }
            if let Some(when) = due {
                let active: Vec<&Obj> = jobs.iter().filter(|j| finished(j.value()).is_none()).collect();
                let policy = json::str(&v, "/spec/concurrencyPolicy");
                // Forbid: upstream starts nothing while a Job runs and leaves `lastScheduleTime`
                // alone; the latest missed time runs once the Job has finished.
                let forbidden = policy == "Forbid" && !active.is_empty();
                if !forbidden {
                    if policy == "Replace" {
                        for j in &active {
                            let _ = self.store.delete(jobs_rt, ns, j.name(), &DeleteOptions::default());
                            events::emit(
                                &self.store,
                                &v,
                                Kind::Normal,
                                "SuccessfulDelete",
                                &format!("Deleted job {}", j.name()),
                                &source(),
                            );
                        }
                    }
                    let job_name = format!("{name}-{}", when.timestamp() / 60);
                    let template = v.pointer("/spec/jobTemplate").cloned().unwrap_or_else(|| json!({}));
                    let mut meta = template.get("metadata").cloned().unwrap_or_else(|| json!({}));
                    meta["name"] = json!(job_name);
                    meta["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] = json!(stamp(when));
                    meta["ownerReferences"] = json!([owner_ref(&cj, "CronJob", "batch/v1")]);
                    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
                                     "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))});
                    match self.store.create(jobs_rt, ns, job) {
                        Ok(created_job) => {
                            events::emit(
                                &self.store,
                                &v,
                                Kind::Normal,
                                "SuccessfulCreate",
                                &format!("Created job {job_name}"),
                                &source(),
                            );
                            jobs.push(created_job);
                        }
                        Err(ApiError::AlreadyExists { .. }) => {}
                        Err(e) => {
                            events::emit(
                                &self.store,
                                &v,
                                Kind::Warning,
                                "FailedCreate",
                                &format!("Error creating job: {e}"),
                                &source(),
                            );
                            return Err(e);
                        }
                    }
                    status["lastScheduleTime"] = json!(stamp(when));
                }
            }
        }
        self.prune_history(&v, ns, &mut jobs);
        let active: Vec<Value> = jobs
            .iter()
            .filter(|j| finished(j.value()).is_none())
            .map(|j| {
                json!({"apiVersion": "batch/v1", "kind": "Job", "name": j.name(), "namespace": ns,
                       "uid": j.uid(), "resourceVersion": json::str(j.value(), "/metadata/resourceVersion")})
            })
            .collect();
        if active.is_empty() {
            if let Some(s) = status.as_object_mut() {
                s.remove("active");
            }
        } else {
            status["active"] = json!(active);
        }
        if let Some(done) = jobs
            .iter()
            .filter_map(|j| finished(j.value()).filter(|(ty, _)| *ty == "Complete").map(|(_, t)| t))
            .max()
        {
            status["lastSuccessfulTime"] = json!(stamp(done));
        }
        if v.get("status") == Some(&status) {
            return Ok(());
        }
        self.store.modify(cj_rt, ns, name, Part::Status, |c| {
            c["status"] = status;
            Ok(())
        })?;
        Ok(())
    }

    /// Deletes the oldest finished Jobs beyond the history limits.
    fn prune_history(&self, cj: &Value, ns: &str, jobs: &mut Vec<Obj>) {
        for (ty, field, default) in [
            ("Complete", "/spec/successfulJobsHistoryLimit", 3),
            ("Failed", "/spec/failedJobsHistoryLimit", 1),
        ] {
            let limit = usize::try_from(cj.pointer(field).and_then(Value::as_i64).unwrap_or(default)).unwrap_or(0);
            let done: Vec<String> = jobs
                .iter()
                .filter(|j| finished(j.value()).is_some_and(|(t, _)| t == ty))
                .map(|j| j.name().to_string())
                .collect();
            let excess = done.len().saturating_sub(limit);
            for name in done.into_iter().take(excess) {
                let _ = self
                    .store
                    .delete(rt("batch", "jobs"), ns, &name, &DeleteOptions::default());
                jobs.retain(|j| j.name() != name);
            }
        }
    }
}
