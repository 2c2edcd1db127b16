//! What a run shows while it works: plain phase lines on standard error, and — on a terminal,
//! without `--quiet` — one live line per phase (deploy, wait, probe) that stays readable while
//! the cells run side by side.

use std::sync::Mutex;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The phases of a run that take long enough to watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Fixture objects applied to the run namespace.
    Deploy,
    /// Fixture pods settled (ready, failed or given up on).
    Wait,
    /// Cells judged.
    Probe,
}

/// Phase lines and, on a terminal, the live display.
pub struct Progress {
    quiet: bool,
    /// The live lines; None when standard error is not a terminal or the run is quiet.
    live: Option<Live>,
}

/// The live lines, each added when its phase starts and kept in phase order.
struct Live {
    multi: MultiProgress,
    lines: Mutex<Vec<(Phase, ProgressBar)>>,
}

impl Phase {
    fn template(self) -> &'static str {
        match self {
            Phase::Deploy => "{spinner} deploy  {pos} fixture objects applied {msg}",
            Phase::Wait => "{spinner} wait    {pos}/{len} fixture pods settled {msg}",
            Phase::Probe => "{spinner} probe   {pos}/{len} cells judged [{elapsed_precise}] {wide_bar} {msg}",
        }
    }
}

impl Progress {
    /// Live lines when standard error is a terminal and the run is not quiet.
    pub fn for_stderr(quiet: bool) -> Self {
        use std::io::IsTerminal as _;
        Self::new(quiet, !quiet && std::io::stderr().is_terminal())
    }

    /// `live`: draw the phase lines on standard error (the caller knows it is a terminal).
    pub fn new(quiet: bool, live: bool) -> Self {
        let live = live.then(|| Live {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            lines: Mutex::new(Vec::new()),
        });
        Self { quiet, live }
    }

    /// One phase line: above the live lines on a terminal, plain otherwise, nothing when quiet.
    pub fn say(&self, line: &str) {
        if self.quiet {
            return;
        }
        match &self.live {
            Some(live) if live.multi.println(line).is_ok() => {}
            _ => eprintln!("{line}"),
        }
    }

    /// A warning the user must see: a phase line, and on standard error also when quiet.
    pub fn warn(&self, line: &str) {
        if self.quiet {
            eprintln!("{line}");
        } else {
            self.say(line);
        }
    }

    /// The line of a phase, added to the display the first time it is asked for (a hidden bar
    /// that ignores every update when not live).
    pub fn bar(&self, phase: Phase) -> ProgressBar {
        let Some(live) = &self.live else {
            return ProgressBar::hidden();
        };
        let mut lines = live.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, bar)) = lines.iter().find(|(p, _)| *p == phase) {
            return bar.clone();
        }
        let at = lines.iter().filter(|(p, _)| *p < phase).count();
        let bar = live.multi.insert(at, ProgressBar::new(0));
        if let Ok(style) = ProgressStyle::with_template(phase.template()) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        lines.insert(at, (phase, bar.clone()));
        bar
    }

    /// Removes the live lines (before the summary is printed).
    pub fn finish(&self) {
        if let Some(live) = &self.live {
            let lines = live.lines.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for (_, bar) in lines.iter() {
                bar.finish_and_clear();
            }
            let _ = live.multi.clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `text` on one line, cut to at most `max` characters with `…` when longer.
pub fn shorten(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_a_terminal_every_phase_bar_is_hidden() {
        let p = Progress::new(false, false);
        for phase in [Phase::Deploy, Phase::Wait, Phase::Probe] {
            assert!(p.bar(phase).is_hidden(), "{phase:?}");
        }
    }

    #[test]
    fn live_lines_are_one_bar_per_phase_in_phase_order() {
        let p = Progress::new(false, true);
        let probe = p.bar(Phase::Probe);
        p.bar(Phase::Wait);
        p.bar(Phase::Deploy);
        let order: Vec<Phase> = p.live.as_ref().map_or_else(Vec::new, |l| {
            l.lines
                .lock()
                .map(|v| v.iter().map(|(ph, _)| *ph).collect())
                .unwrap_or_default()
        });
        // Cells start before the fixtures are deployed; the lines still read deploy, wait, probe.
        assert_eq!(order, [Phase::Deploy, Phase::Wait, Phase::Probe]);
        probe.set_length(3);
        probe.inc(2);
        // The same line whoever asks for it: concurrent cells advance one counter.
        assert_eq!(p.bar(Phase::Probe).position(), 2);
        assert_eq!(p.bar(Phase::Deploy).position(), 0);
        p.finish();
        assert!(p.bar(Phase::Probe).is_finished());
    }
}
