//! Cron schedules as a CronJob's `spec.schedule` reads them: five fields (minute, hour, day of
//! month, month, day of week) with `*`, `?`, lists, ranges, steps and month/day names, or a
//! macro (`@hourly`, `@daily`, …), in UTC — the standard parser upstream uses
//! (<https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#schedule-syntax>).
//! When both day fields are restricted, a day matching either runs, as in cron.

use chrono::{DateTime, Datelike, Duration, Timelike, Utc};

/// A schedule that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable cron schedule {0:?}: {1}")]
pub struct ScheduleError(String, &'static str);

/// A parsed schedule: the allowed values of each field as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Both day fields restricted: either matches.
    either_day: bool,
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(text: &str, min: u32, names: &[&str], spec: &str) -> Result<u32, ScheduleError> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(i as u32 + min);
    }
    text.parse()
        .map_err(|_| ScheduleError(spec.to_string(), "a field value is not a number"))
}

/// The bits of one field, `min..=max`.
fn field(text: &str, min: u32, max: u32, names: &[&str], spec: &str) -> Result<u64, ScheduleError> {
    let mut bits = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (
                r,
                s.parse::<u32>()
                    .ok()
                    .filter(|s| *s > 0)
                    .ok_or_else(|| ScheduleError(spec.to_string(), "a step is not a positive number"))?,
            ),
            None => (part, 1),
        };
        let (lo, hi) = match range {
            "*" | "?" => (min, max),
            r => match r.split_once('-') {
                Some((a, b)) => (value(a, min, names, spec)?, value(b, min, names, spec)?),
                None => {
                    let v = value(r, min, names, spec)?;
                    (v, if part.contains('/') { max } else { v })
                }
            },
        };
        if lo < min || hi > max || lo > hi {
            return Err(ScheduleError(spec.to_string(), "a field value is out of range"));
        }
        for v in (lo..=hi).step_by(step as usize) {
            bits |= 1 << v;
        }
    }
    Ok(bits)
}

impl Schedule {
    pub fn parse(spec: &str) -> Result<Self, ScheduleError> {
        let expanded = match spec.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(ScheduleError(spec.to_string(), "expected exactly 5 fields"));
        };
        let mut weekdays = field(weekday, 0, 7, WEEKDAYS, spec)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1; // 7 is Sunday too
        }
        let restricted = |f: &str| !f.starts_with('*') && !f.starts_with('?');
        Ok(Self {
            minutes: field(minute, 0, 59, &[], spec)?,
            hours: field(hour, 0, 23, &[], spec)?,
            days: field(day, 1, 31, &[], spec)?,
            months: field(month, 1, 12, MONTHS, spec)?,
            weekdays,
            either_day: restricted(day) && restricted(weekday),
        })
    }

    fn day_matches(&self, t: DateTime<Utc>) -> bool {
        let dom = self.days & (1 << t.day()) != 0;
        let dow = self.weekdays & (1 << t.weekday().num_days_from_sunday()) != 0;
        if self.either_day { dom || dow } else { dom && dow }
    }

    /// The first time strictly after `after` that the schedule fires (None within 5 years).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut t = after.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let limit = after + Duration::days(5 * 366);
        while t <= limit {
            if self.months & (1 << t.month()) == 0 {
                let (y, m) = if t.month() == 12 {
                    (t.year() + 1, 1)
                } else {
                    (t.year(), t.month() + 1)
                };
                t = t
                    .with_day(1)?
                    .with_hour(0)?
                    .with_minute(0)?
                    .with_month(m)?
                    .with_year(y)?;
                continue;
            }
            if !self.day_matches(t) {
                t = (t + Duration::days(1)).with_hour(0)?.with_minute(0)?;
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = (t + Duration::hours(1)).with_minute(0)?;
                continue;
            }
            if self.minutes & (1 << t.minute()) == 0 {
                t += Duration::minutes(1);
                continue;
            }
            return Some(t);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[rstest]
    #[case("*/1 * * * *", "2026-11-27T06:00:30Z", "2026-11-27T06:01:00Z")]
    #[case("*/15 * * * *", "2026-11-27T06:01:00Z", "2026-11-27T06:15:00Z")]
    #[case("0 3 * * *", "2026-11-27T06:00:00Z", "2026-11-28T03:00:00Z")]
    #[case("@hourly", "2026-11-27T06:00:00Z", "2026-11-27T07:00:00Z")]
    #[case("30 9 * * MON-FRI", "2026-11-27T10:00:00Z", "2026-11-30T09:30:00Z")]
    #[case("0 0 1 JAN *", "2026-11-27T10:00:00Z", "2027-01-01T00:00:00Z")]
    #[case("0 0 13 * 5", "2026-11-27T10:00:00Z", "2026-12-04T00:00:00Z")]
    fn next_times(#[case] spec: &str, #[case] after: &str, #[case] next: &str) -> Result<(), ScheduleError> {
        assert_eq!(Schedule::parse(spec)?.next_after(at(after)), Some(at(next)));
        Ok(())
    }

    #[rstest]
    #[case("* * * *")]
    #[case("61 * * * *")]
    #[case("*/0 * * * *")]
    #[case("a b c d e")]
    fn bad_schedules(#[case] spec: &str) {
        assert!(Schedule::parse(spec).is_err());
    }
}
