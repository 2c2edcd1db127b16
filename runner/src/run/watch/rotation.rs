//! Which cells a watch cycle probes: the light per-node checks (`everyNode`) on every node in
//! every cycle, and a rotating share of the other cells, so that each of them is probed at least
//! once every `--full-every`.

use std::time::Duration;

/// The cells of a watch, by plan index, and where the rotation stands.
#[derive(Debug, Clone)]
pub struct Rotation {
    light: Vec<usize>,
    rest: Vec<usize>,
    share: usize,
    next: usize,
}

impl Rotation {
    /// The rotation over `light` (every cycle) and `rest` (`share` of them per cycle): as many
    /// as make every one of `rest` come round within `full_every` at one cycle per `interval`.
    pub fn new(light: Vec<usize>, rest: Vec<usize>, interval: Duration, full_every: Duration) -> Self {
        let cycles = (full_every.as_secs_f64() / interval.as_secs_f64().max(0.001))
            .floor()
            .max(1.0);
        let share = ((rest.len() as f64) / cycles).ceil() as usize;
        Rotation {
            light,
            rest,
            share: share.max(1),
            next: 0,
        }
    }

    /// How many of the other cells each cycle takes.
    pub fn share(&self) -> usize {
        self.share.min(self.rest.len())
    }

    /// The cells of the next cycle: every light cell and the next share of the others.
    pub fn next_cycle(&mut self) -> Vec<usize> {
        let mut cells = self.light.clone();
        let take = self.share();
        for k in 0..take {
            cells.push(self.rest[(self.next + k) % self.rest.len()]);
        }
        if !self.rest.is_empty() {
            self.next = (self.next + take) % self.rest.len();
        }
        cells
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rstest::rstest;

    use super::*;

    /// Every light cell is in every cycle; every other cell comes round within `full_every`
    /// (at one cycle per interval), and the shares are as even as the division allows.
    #[rstest]
    #[case::few_cells_slow_rotation(3, 10, 60, 3600)]
    #[case::many_cells_fast_rotation(5, 1000, 5, 60)]
    #[case::one_cycle_holds_all(2, 7, 60, 30)]
    #[case::no_light_cells(0, 40, 10, 100)]
    #[case::no_other_cells(4, 0, 10, 100)]
    fn every_cell_comes_round_within_full_every(
        #[case] light: usize,
        #[case] rest: usize,
        #[case] interval: u64,
        #[case] full_every: u64,
    ) {
        let light_cells: Vec<usize> = (0..light).collect();
        let rest_cells: Vec<usize> = (light..light + rest).collect();
        let mut r = Rotation::new(
            light_cells.clone(),
            rest_cells.clone(),
            Duration::from_secs(interval),
            Duration::from_secs(full_every),
        );
        let cycles = (full_every / interval).max(1);
        let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
        for _ in 0..cycles {
            let cycle = r.next_cycle();
            for l in &light_cells {
                assert!(cycle.contains(l), "light cell {l} in every cycle");
            }
            for c in cycle {
                *seen.entry(c).or_default() += 1;
            }
        }
        for c in &rest_cells {
            assert!(seen.contains_key(c), "cell {c} not probed within {full_every} s");
        }
        if rest > 0 {
            let counts: Vec<usize> = rest_cells.iter().map(|c| seen[c]).collect();
            let (lo, hi) = (counts.iter().min().copied(), counts.iter().max().copied());
            assert!(hi.zip(lo).is_some_and(|(h, l)| h - l <= 1), "{counts:?}");
        }
    }
}
