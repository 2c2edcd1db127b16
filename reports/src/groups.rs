//! Cells grouped for people to read: by rule (a remedy is said once per rule, not once per
//! cell), by the reason a cell was not judged, and written compactly (`DNS-FQDN ×2,
//! NET-POD-POD-IP-CROSS ×4, …`) so that a run with one broken node fits on a screen.

use crate::cell::Cell;
use crate::evidence::one_line;

/// The cells of one rule, in the order they came.
pub(crate) struct RuleGroup<'a> {
    /// The rule id (`NET-POD-POD-IP-CROSS`).
    pub rule_id: &'a str,
    /// Its cells.
    pub cells: Vec<&'a Cell>,
}

impl<'a> RuleGroup<'a> {
    /// The distinct remedies of the group's cells, in order.
    pub fn remedies(&self) -> Vec<&'a str> {
        distinct(self.cells.iter().filter_map(|c| c.remedy.as_deref()))
    }

    /// Where the cells are, as `source→destination` pools (or the one pool), distinct, in order.
    pub fn places(&self) -> Vec<String> {
        distinct_owned(self.cells.iter().map(|c| place(c)))
    }
}

/// Cells by rule id, rules in the order they first appear.
pub(crate) fn by_rule<'a>(cells: impl IntoIterator<Item = &'a Cell>) -> Vec<RuleGroup<'a>> {
    let mut groups: Vec<RuleGroup<'a>> = Vec::new();
    for cell in cells {
        match groups.iter_mut().find(|g| g.rule_id == cell.rule_id) {
            Some(g) => g.cells.push(cell),
            None => groups.push(RuleGroup {
                rule_id: &cell.rule_id,
                cells: vec![cell],
            }),
        }
    }
    groups
}

/// Cells by their reason (the fact an indeterminate cell lacks, the error a cell met), reasons
/// in the order they first appear; a cell without a reason is grouped under `no reason given`.
pub(crate) fn by_reason<'a>(cells: impl IntoIterator<Item = &'a Cell>) -> Vec<(String, Vec<&'a Cell>)> {
    let mut groups: Vec<(String, Vec<&'a Cell>)> = Vec::new();
    for cell in cells {
        let reason = cell
            .reason
            .as_deref()
            .map_or_else(|| "no reason given".to_string(), one_line);
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, cells)) => cells.push(cell),
            None => groups.push((reason, vec![cell])),
        }
    }
    groups
}

/// Where a cell is in the matrix, by pool: `windows-17763→cluster-dns`, `windows-20348` (a
/// per-pool check), or `cluster` (no coordinates).
pub(crate) fn place(cell: &Cell) -> String {
    let c = &cell.coordinates;
    match (&c.source, &c.destination) {
        (Some(s), Some(d)) => format!("{s}→{d}"),
        (Some(s), None) => s.to_string(),
        (None, Some(d)) => format!("→{d}"),
        (None, None) => "cluster".to_string(),
    }
}

/// The rules of `cells` as `RULE ×n` items (`×n` only when a rule has more than one cell),
/// filled into lines of at most `width` characters; beyond `max_lines` the last line ends with
/// how many more rules there are.
pub(crate) fn compact_rules(cells: &[&Cell], width: usize, max_lines: usize) -> Vec<String> {
    let items: Vec<String> = by_rule(cells.iter().copied())
        .iter()
        .map(|g| match g.cells.len() {
            1 => g.rule_id.to_string(),
            n => format!("{} ×{n}", g.rule_id),
        })
        .collect();
    fill(&items, width, max_lines, "rule", "rules")
}

/// `items` joined with `, ` into lines of at most `width` characters (an item longer than that
/// gets a line of its own); when they need more than `max_lines` lines, the last line kept ends
/// with `… and N more ONE|MANY`.
pub(crate) fn fill(items: &[String], width: usize, max_lines: usize, one: &str, many: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut placed = 0;
    for item in items {
        let needed = if current.is_empty() {
            item.len()
        } else {
            current.len() + 2 + item.len()
        };
        if !current.is_empty() && needed > width {
            if lines.len() + 1 == max_lines {
                break;
            }
            lines.push(std::mem::take(&mut current) + ",");
        }
        if !current.is_empty() {
            current.push_str(", ");
        }
        current.push_str(item);
        placed += 1;
    }
    if !current.is_empty() {
        lines.push(current);
    }
    let more = items.len() - placed;
    if more > 0 {
        let word = if more == 1 { one } else { many };
        if let Some(last) = lines.last_mut() {
            last.push_str(&format!(", … and {more} more {word}"));
        }
    }
    lines
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn distinct_owned(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;
    use crate::testdata::cell;
    use crate::verdict::Verdict;

    fn items(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("RULE-{i:02}")).collect()
    }

    #[rstest]
    #[case::one_line(3, 80, 3, &["RULE-01, RULE-02, RULE-03"])]
    #[case::wraps(6, 24, 5, &["RULE-01, RULE-02,", "RULE-03, RULE-04,", "RULE-05, RULE-06"])]
    #[case::cut(6, 24, 2, &["RULE-01, RULE-02,", "RULE-03, RULE-04, … and 2 more rules"])]
    #[case::cut_one(5, 24, 2, &["RULE-01, RULE-02,", "RULE-03, RULE-04, … and 1 more rule"])]
    #[case::empty(0, 80, 3, &[])]
    fn fills_lines(#[case] n: usize, #[case] width: usize, #[case] max: usize, #[case] want: &[&str]) {
        assert_eq!(fill(&items(n), width, max, "rule", "rules"), want);
    }

    #[test]
    fn rules_are_counted_once_each_in_order() {
        let at = |rule: &str, pool: &str, verdict| {
            let mut c = cell("net", "x", rule, pool, verdict);
            c.coordinates.source = Some(crate::cell::Pool::named(pool));
            c
        };
        let a = at("NET-A", "linux", Verdict::Fail);
        let b = at("NET-B", "linux", Verdict::Fail);
        let a2 = at("NET-A", "windows-20348", Verdict::Error);
        let cells = [&a, &b, &a2];
        assert_eq!(compact_rules(&cells, 80, 3), ["NET-A ×2, NET-B"]);
        let groups = by_rule(cells);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].places(), ["linux", "windows-20348"]);
    }

    #[test]
    fn reasons_group_cells() {
        let mut a = cell("net", "x", "NET-A", "linux", Verdict::Indeterminate);
        a.reason = Some("egress\n(pass --egress)".into());
        let mut b = cell("net", "x", "NET-B", "linux", Verdict::Indeterminate);
        b.reason = a.reason.clone();
        let c = cell("net", "x", "NET-C", "linux", Verdict::Indeterminate);
        let groups = by_reason([&a, &b, &c]);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0, "egress (pass --egress)");
        assert_eq!(groups[0].1.len(), 2);
        assert_eq!(groups[1].0, "no reason given");
    }
}
