//! The metrics as text: the Prometheus text format 0.0.4 and OpenMetrics 1.0, chosen from the
//! scraper's `Accept` header. Both are written from the same families: names, help, types and
//! samples with their labels (prometheus/docs "Exposition formats"; the OpenMetrics 1.0
//! specification): a counter is `NAME_total` in both, its family `NAME` in OpenMetrics and
//! `NAME_total` in the text format; OpenMetrics ends with `# EOF`.

use std::fmt::Write as _;

/// The text format's content type.
pub const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
/// OpenMetrics' content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
    Histogram,
}

/// One metric family: its name (a counter's without `_total`), help and samples.
#[derive(Debug, Clone)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

/// One sample: the suffix after the family's name (`_total`, `_bucket`, `_sum`, `_count` or
/// none), its labels and value.
#[derive(Debug, Clone)]
pub struct Sample {
    pub suffix: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

impl Family {
    pub fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// Adds a gauge's or counter's sample.
    pub fn add(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        let suffix = if self.kind == Kind::Counter { "_total" } else { "" };
        self.samples.push(Sample { suffix, labels, value });
    }

    /// Adds a histogram's buckets, sum and count.
    pub fn add_histogram(&mut self, labels: Vec<(&'static str, String)>, h: &Histogram) {
        let mut cumulative = 0u64;
        for (bound, count) in h.bounds.iter().zip(&h.counts) {
            cumulative += count;
            let mut l = labels.clone();
            l.push(("le", number(*bound)));
            self.samples.push(Sample {
                suffix: "_bucket",
                labels: l,
                value: cumulative as f64,
            });
        }
        let mut l = labels.clone();
        l.push(("le", "+Inf".into()));
        self.samples.push(Sample {
            suffix: "_bucket",
            labels: l,
            value: h.count as f64,
        });
        self.samples.push(Sample {
            suffix: "_sum",
            labels: labels.clone(),
            value: h.sum,
        });
        self.samples.push(Sample {
            suffix: "_count",
            labels,
            value: h.count as f64,
        });
    }
}

/// A histogram of observations in seconds over fixed upper bounds.
#[derive(Debug, Clone)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per bound, the observations above the bound before it and at most this one.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, value: f64) {
        if let Some(k) = self.bounds.iter().position(|b| value <= *b) {
            self.counts[k] += 1;
        }
        self.sum += value;
        self.count += 1;
    }
}

/// Whether the scraper asked for OpenMetrics: its `Accept` header names it, with a weight
/// above 0 (`q=0` refuses a type).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let ty = parts.next().unwrap_or_default();
            let refused = parts.any(|p| p.strip_prefix("q=").and_then(|q| q.parse::<f64>().ok()) == Some(0.0));
            ty == "application/openmetrics-text" && !refused
        })
    })
}

/// The families in the text format 0.0.4.
pub fn text(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            _ => f.name.to_string(),
        };
        let _ = writeln!(out, "# HELP {name} {}", escape_help(f.help, false));
        let _ = writeln!(out, "# TYPE {name} {}", kind(f.kind));
        for s in &f.samples {
            sample(&mut out, f.name, s);
        }
    }
    out
}

/// The families in OpenMetrics 1.0.
pub fn openmetrics(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# TYPE {} {}", f.name, kind(f.kind));
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help, true));
        for s in &f.samples {
            sample(&mut out, f.name, s);
        }
    }
    out.push_str("# EOF\n");
    out
}

fn kind(k: Kind) -> &'static str {
    match k {
        Kind::Gauge => "gauge",
        Kind::Counter => "counter",
        Kind::Histogram => "histogram",
    }
}

fn sample(out: &mut String, name: &str, s: &Sample) {
    out.push_str(name);
    out.push_str(s.suffix);
    if !s.labels.is_empty() {
        out.push('{');
        for (k, (key, value)) in s.labels.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            let _ = write!(out, "{key}=\"{}\"", escape_label(value));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", number(s.value));
}

/// A sample value or bound: integers without a fraction, infinities as `+Inf`/`-Inf`.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        format!("{v}")
    }
}

/// A label value: backslash, double quote and line feed escaped (both formats).
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Help text: backslash and line feed escaped; OpenMetrics escapes the double quote too.
fn escape_help(v: &str, openmetrics: bool) -> String {
    let v = v.replace('\\', "\\\\").replace('\n', "\\n");
    if openmetrics { v.replace('"', "\\\"") } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> Vec<Family> {
        let mut g = Family::new(
            "mixcheck_cell_flake_ratio",
            "Share of \"failed\" attempts.",
            Kind::Gauge,
        );
        g.add(vec![("cell", "a\\b\"c\nd".into())], 0.25);
        let mut c = Family::new("mixcheck_cycles", "Cycles run.", Kind::Counter);
        c.add(Vec::new(), 3.0);
        let mut h = Family::new(
            "mixcheck_cycle_duration_seconds",
            "How long a cycle took.",
            Kind::Histogram,
        );
        let mut hist = Histogram::new(&[0.5, 1.0]);
        hist.observe(0.25);
        hist.observe(0.75);
        hist.observe(9.0);
        h.add_histogram(vec![("kind", "all".into())], &hist);
        vec![g, c, h]
    }

    #[test]
    fn the_text_format_names_a_counter_with_its_total() {
        let t = text(&families());
        assert!(
            t.contains("# TYPE mixcheck_cycles_total counter\nmixcheck_cycles_total 3\n"),
            "{t}"
        );
        assert!(
            t.contains("mixcheck_cell_flake_ratio{cell=\"a\\\\b\\\"c\\nd\"} 0.25"),
            "{t}"
        );
        assert!(
            t.contains("# HELP mixcheck_cell_flake_ratio Share of \"failed\" attempts."),
            "{t}"
        );
        assert!(!t.contains("# EOF"), "{t}");
    }

    #[test]
    fn openmetrics_names_the_family_and_ends_with_eof() {
        let t = openmetrics(&families());
        assert!(
            t.contains("# TYPE mixcheck_cycles counter\n# HELP mixcheck_cycles Cycles run.\nmixcheck_cycles_total 3\n"),
            "{t}"
        );
        assert!(
            t.contains("# HELP mixcheck_cell_flake_ratio Share of \\\"failed\\\" attempts."),
            "{t}"
        );
        assert!(t.ends_with("# EOF\n"), "{t}");
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_at_inf() {
        let t = text(&families());
        for line in [
            "mixcheck_cycle_duration_seconds_bucket{kind=\"all\",le=\"0.5\"} 1",
            "mixcheck_cycle_duration_seconds_bucket{kind=\"all\",le=\"1\"} 2",
            "mixcheck_cycle_duration_seconds_bucket{kind=\"all\",le=\"+Inf\"} 3",
            "mixcheck_cycle_duration_seconds_sum{kind=\"all\"} 10",
            "mixcheck_cycle_duration_seconds_count{kind=\"all\"} 3",
        ] {
            assert!(t.contains(line), "{line} missing:\n{t}");
        }
    }

    #[rstest::rstest]
    #[case(None, false)]
    #[case(Some("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), false)]
    #[case(
        Some(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        ),
        true
    )]
    #[case(Some("application/openmetrics-text;q=0,text/plain"), false)]
    fn the_accept_header_chooses_the_format(#[case] accept: Option<&str>, #[case] om: bool) {
        assert_eq!(wants_openmetrics(accept), om);
    }
}
