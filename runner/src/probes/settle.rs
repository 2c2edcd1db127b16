//! Settling a flow the way upstream's e2e tests do (`Eventually`, `KubeProxyLagTimeout`): a flow
//! that works is judged at once; one that does not is tried again, with backoff, until its settle
//! window — counted from when the fixtures it reaches became ready — has passed, since a real
//! node's proxy programs a new Service seconds to minutes after it exists (Windows kube-proxy
//! and HNS especially). Documented limitations are concluded the same way: only a flow that kept
//! failing through its window is a failure, expected or not.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::probes::transport::Observation;

/// The first pause between attempts on a real cluster; it doubles up to twenty times itself
/// (5 s).
const FIRST_PAUSE: Duration = Duration::from_millis(250);
/// How many first pauses the longest pause lasts.
const MAX_PAUSES: u32 = 20;
/// The shortest first pause, however fast the bundled cluster's clock runs: each attempt is an
/// exec through the API server, so faster retries would only load the machine.
const SHORTEST_PAUSE: Duration = Duration::from_millis(10);

/// The default window of pod and Service flows on a real cluster: upstream's hybrid-network
/// test waits 30 s (`Eventually(…, 30s)`), `KubeProxyEndpointLagTimeout` is 30 s.
pub const REAL_CLUSTER_BASE: Duration = Duration::from_secs(30);

/// What a flow reaches, which decides its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowKind {
    /// A pod by IP or name.
    Pod,
    /// A Service's ClusterIP or name, a lookup through the cluster DNS.
    Service,
    /// A NodePort or hostPort: programmed on every node.
    NodePort,
    /// A LoadBalancer: its address provisioned and programmed by the cloud, then every node.
    LoadBalancer,
    /// An address outside the cluster (egress).
    Outside,
}

/// The settle windows of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    /// The window of pod and Service flows; the others are multiples of it.
    pub base: Duration,
    /// Whether NodePorts and LoadBalancers get multiples of `base` (a real cluster: every
    /// node's proxy and the cloud must catch up), or `base` too (the bundled cluster, whose
    /// proxies program every kind of Service within one known delay).
    pub multiples: bool,
    /// How many connections a Service flow makes once it works ([`SERVICE_CONNECTIONS`], or one
    /// in a watch cycle, where each cycle's connection is one attempt of a flake ratio).
    pub connections: usize,
    /// The first pause between attempts ([`FIRST_PAUSE`] on a real cluster; on the bundled
    /// cluster's clock when the run started it, [`Settle::on_clock`]).
    pub pause: Duration,
}

impl Settle {
    /// One attempt per flow: the verdict of the first observation.
    pub const NONE: Settle = Settle {
        base: Duration::ZERO,
        multiples: false,
        connections: SERVICE_CONNECTIONS,
        pause: FIRST_PAUSE,
    };

    /// The same windows with one connection per Service flow: a watch cycle, where each cycle's
    /// connection is one attempt of a flake ratio. Flows through fixtures that settled long ago
    /// get one attempt (their window has passed); fixtures just replaced, and the objects a cell
    /// creates for itself, still settle.
    pub fn one_connection(self) -> Self {
        Self { connections: 1, ..self }
    }

    /// The windows of a real cluster with pod and Service flows given `base`.
    pub fn real(base: Duration) -> Self {
        Self {
            base,
            multiples: true,
            connections: SERVICE_CONNECTIONS,
            pause: FIRST_PAUSE,
        }
    }

    /// The pauses between attempts on a cluster clock that runs `scale` real seconds to a second
    /// (the bundled cluster's `timing.scale`): a proxy that programs in 10 s of that clock is
    /// retried as often, on that clock, as one on a real cluster (never more than every
    /// [`SHORTEST_PAUSE`]).
    pub fn on_clock(self, scale: f64) -> Self {
        let scale = if scale.is_finite() { scale.clamp(0.0, 1.0) } else { 1.0 };
        Self {
            pause: FIRST_PAUSE.mul_f64(scale).max(SHORTEST_PAUSE),
            ..self
        }
    }

    /// The window of a kind of flow: pod, Service and outside flows the base; NodePorts twice
    /// that (every node's proxy must catch up); LoadBalancers four times (2 min on a real
    /// cluster: upstream's `LoadBalancerLagTimeoutDefault`, E2E/service const.go).
    pub fn window(self, kind: FlowKind) -> Duration {
        if !self.multiples {
            return self.base;
        }
        match kind {
            FlowKind::Pod | FlowKind::Service | FlowKind::Outside => self.base,
            FlowKind::NodePort => self.base.saturating_mul(2),
            FlowKind::LoadBalancer => self.base.saturating_mul(4),
        }
    }
}

impl Default for Settle {
    fn default() -> Self {
        Settle::NONE
    }
}

/// One attempt of a settling flow: when it started (from the first attempt) and what it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at: Duration,
    pub result: String,
}

/// How many connections a Service flow makes once it works: a stale backend that one connection
/// in N picks fails some of them (kubernetes#112836, #131466: "one lookup in N times out"), so a
/// flow is judged on all of them, never on its first success. Ten spreads the connections over
/// every backend of a Service of up to ten (the load balancer picks round robin or at random).
pub const SERVICE_CONNECTIONS: usize = 10;

/// What settling ended with: the last attempt's observation and value, and every attempt.
#[derive(Debug)]
pub struct Settled<T> {
    pub observation: Observation,
    pub value: T,
    pub attempts: Vec<Attempt>,
    /// After the flow worked, the connections made to judge it ([`repeat`]): (failed, made).
    pub repeated: Option<(usize, usize)>,
}

impl<T> Settled<T> {
    /// ` (3 attempts over 2.1 s: timeout, timeout, reached)`, or nothing after one attempt; then
    /// ` (3 of 10 connections failed: timeout)` where some of the connections made once it
    /// worked failed.
    pub fn note(&self) -> String {
        let mut note = self.settling();
        if let Some((failed, made)) = self.repeated.filter(|(failed, _)| *failed > 0) {
            note.push_str(&format!(
                " ({failed} of {made} connections failed: {})",
                name(&self.observation)
            ));
        }
        note
    }

    fn settling(&self) -> String {
        if self.attempts.len() < 2 {
            return String::new();
        }
        let last = self.attempts.last().map_or(0.0, |a| a.at.as_secs_f64());
        let results: Vec<String> = self
            .attempts
            .iter()
            .map(|a| format!("{} at {:.1} s", a.result, a.at.as_secs_f64()))
            .collect();
        format!(
            " ({} attempts over {last:.1} s: {})",
            self.attempts.len(),
            results.join(", ")
        )
    }
}

fn name(o: &Observation) -> String {
    match o {
        Observation::Reached(_) => "reached".to_string(),
        Observation::Failed(c) => c.name().to_string(),
    }
}

/// Attempts a flow until it works or an attempt begun at or after `until` failed too (an attempt
/// begun inside the window and still waiting when it ended proves nothing about the settled
/// flow); an attempt that could not run at all (`Err`) ends settling with that error. The pauses
/// between attempts start at `first_pause` and double up to twenty times it.
pub async fn until_works<T, E, F, Fut>(until: Instant, first_pause: Duration, mut attempt: F) -> Result<Settled<T>, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(Observation, T), E>>,
{
    let start = Instant::now();
    let mut attempts = Vec::new();
    let mut pause = first_pause;
    let longest = first_pause.saturating_mul(MAX_PAUSES);
    loop {
        let at = start.elapsed();
        let began = Instant::now();
        let (observation, value) = attempt().await?;
        attempts.push(Attempt {
            at,
            result: name(&observation),
        });
        let now = Instant::now();
        if matches!(observation, Observation::Reached(_)) || began >= until {
            return Ok(Settled {
                observation,
                value,
                attempts,
                repeated: None,
            });
        }
        tokio::time::sleep(pause.min(until.saturating_duration_since(now))).await;
        pause = (pause * 2).min(longest);
    }
}

/// Once a settled flow works, makes `connections` in all (the one that worked counts) one after
/// the other and judges the flow on all of them: the first failure among them is its
/// observation, with how many failed ([`Settled::repeated`]). A flow that never worked is left as
/// it is; an attempt that could not run at all ends with that error.
pub async fn repeat<T, E, F, Fut>(settled: Settled<T>, connections: usize, mut attempt: F) -> Result<Settled<T>, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(Observation, T), E>>,
{
    if !matches!(settled.observation, Observation::Reached(_)) || connections < 2 {
        return Ok(settled);
    }
    let mut settled = settled;
    let mut failed = 0;
    for _ in 1..connections {
        let (observation, value) = attempt().await?;
        if !matches!(observation, Observation::Reached(_)) {
            failed += 1;
            if failed == 1 {
                settled.observation = observation;
                settled.value = value;
            }
        }
    }
    settled.repeated = Some((failed, connections));
    Ok(settled)
}

/// [`repeat`], with the connections after the first made together where `together` can: it is
/// asked for `connections - 1` and answers the observation of each with what the command
/// printed (one exec, where [`repeat`] makes one per connection), or None where it cannot make
/// or account for them; then they are made one at a time by `one`. A failure among them is the
/// flow's observation, the command's output its value, as in [`repeat`].
pub async fn repeat_together<T, E, B, BFut, F, Fut>(
    settled: Settled<T>,
    connections: usize,
    together: B,
    one: F,
) -> Result<Settled<T>, E>
where
    B: FnOnce(usize) -> BFut,
    BFut: Future<Output = Result<Option<(Vec<Observation>, T)>, E>>,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(Observation, T), E>>,
{
    if !matches!(settled.observation, Observation::Reached(_)) || connections < 2 {
        return Ok(settled);
    }
    let Some((observations, value)) = together(connections - 1).await? else {
        return repeat(settled, connections, one).await;
    };
    let mut settled = settled;
    let mut failures = observations
        .into_iter()
        .filter(|o| !matches!(o, Observation::Reached(_)));
    if let Some(first) = failures.next() {
        settled.observation = first;
        settled.value = value;
        settled.repeated = Some((1 + failures.count(), connections));
    } else {
        settled.repeated = Some((0, connections));
    }
    Ok(settled)
}

/// [`until_works`] then [`repeat_together`], with each attempt making all `connections` in one
/// go where `first` can: it is asked for `connections` and answers what each connection it made
/// saw, with its own value (its output as if made alone) — the first alone where that one
/// failed (the flow is tried again after a pause, as a single attempt would be), all of them
/// otherwise. Once the first connection of such an attempt works, the others it made judge the
/// flow as the connections [`repeat_together`] makes after a single attempt would: the first
/// failure among them is the observation, its value the flow's, with how many failed; no
/// further exec. Where `first` cannot (None, or an answer with no connection) the flow settles
/// and repeats as [`until_works`] and [`repeat_together`] do.
pub async fn until_works_together<T, E, A, AFut, B, BFut, F, Fut>(
    until: Instant,
    first_pause: Duration,
    connections: usize,
    (first, together, one): (A, B, F),
) -> Result<Settled<T>, E>
where
    A: Fn(usize) -> AFut,
    AFut: Future<Output = Result<Option<Vec<(Observation, T)>>, E>>,
    B: FnOnce(usize) -> BFut,
    BFut: Future<Output = Result<Option<(Vec<Observation>, T)>, E>>,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(Observation, T), E>>,
{
    let others: std::cell::RefCell<Option<Vec<(Observation, T)>>> = std::cell::RefCell::new(None);
    let can = std::cell::Cell::new(connections > 1);
    let attempt = || async {
        if can.get() {
            match first(connections).await? {
                Some(seen) if !seen.is_empty() => {
                    let mut seen = seen.into_iter();
                    let made = seen.next();
                    *others.borrow_mut() = Some(seen.collect());
                    if let Some(made) = made {
                        return Ok(made);
                    }
                }
                _ => can.set(false),
            }
        }
        *others.borrow_mut() = None;
        one().await
    };
    let settled = until_works(until, first_pause, attempt).await?;
    match others.into_inner() {
        Some(rest) if matches!(settled.observation, Observation::Reached(_)) && rest.len() + 1 == connections => {
            let mut settled = settled;
            let mut failures = rest.into_iter().filter(|(o, _)| !matches!(o, Observation::Reached(_)));
            let mut failed = 0;
            if let Some((observation, value)) = failures.next() {
                settled.observation = observation;
                settled.value = value;
                failed = 1 + failures.count();
            }
            settled.repeated = Some((failed, connections));
            Ok(settled)
        }
        _ => repeat_together(settled, connections, together, one).await,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::catalogue::suite::FailureClass;

    fn scripted(script: &[bool]) -> impl FnMut() -> std::future::Ready<Result<(Observation, usize), ()>> + '_ {
        let n = Cell::new(0);
        move || {
            let i = n.get();
            n.set(i + 1);
            let works = script.get(i).copied().unwrap_or(false);
            std::future::ready(Ok((
                if works {
                    Observation::Reached("ok".into())
                } else {
                    Observation::Failed(FailureClass::Timeout)
                },
                i,
            )))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flow_that_works_is_judged_at_once() {
        let s = until_works(Instant::now() + Duration::from_secs(30), FIRST_PAUSE, scripted(&[true]))
            .await
            .expect("runs");
        assert_eq!(s.attempts.len(), 1);
        assert!(matches!(s.observation, Observation::Reached(_)));
        assert_eq!(s.note(), "");
    }

    #[tokio::test(start_paused = true)]
    async fn a_flow_that_converges_within_its_window_works() {
        let s = until_works(
            Instant::now() + Duration::from_secs(30),
            FIRST_PAUSE,
            scripted(&[false, false, true]),
        )
        .await
        .expect("runs");
        assert!(matches!(s.observation, Observation::Reached(_)));
        assert_eq!(s.value, 2);
        assert_eq!(
            s.attempts.iter().map(|a| a.result.as_str()).collect::<Vec<_>>(),
            ["timeout", "timeout", "reached"]
        );
        assert!(s.note().starts_with(" (3 attempts over "), "{}", s.note());
    }

    /// A 30 s window on a real cluster, and the same window on a bundled cluster whose clock
    /// runs ten times as fast (3 s): the same attempts, each at the same time on its clock.
    #[rstest::rstest]
    #[case::wall_clock(1.0)]
    #[case::ten_times_faster(0.1)]
    #[tokio::test(start_paused = true)]
    async fn a_flow_that_keeps_failing_is_concluded_once_its_window_passed(#[case] scale: f64) {
        let window = Duration::from_secs(30).mul_f64(scale);
        let settle = Settle::real(window).on_clock(scale);
        let start = Instant::now();
        let s = until_works(Instant::now() + window, settle.pause, scripted(&[]))
            .await
            .expect("runs");
        assert!(matches!(s.observation, Observation::Failed(FailureClass::Timeout)));
        // Backoff: 0.25, 0.5, 1, 2, 4, 5, 5, … s on the cluster's clock — not one attempt per
        // millisecond.
        assert_eq!(s.attempts.len(), 11, "{:?}", s.attempts);
        let on_clock: Vec<u128> = s.attempts.iter().map(|a| a.at.div_f64(scale).as_millis()).collect();
        assert_eq!(on_clock[..6], [0, 250, 750, 1750, 3750, 7750]);
        assert!(start.elapsed() >= window && start.elapsed() < window + Duration::from_secs(1).mul_f64(scale));
    }

    #[rstest::rstest]
    #[case::wall(1.0, 250)]
    #[case::slower_clock_keeps_the_real_pause(3.0, 250)]
    #[case::twenty_times_faster(0.05, 12)]
    #[case::stopped_clock_has_a_floor(0.0, 10)]
    #[case::nonsense(f64::NAN, 250)]
    fn pauses_follow_the_clusters_clock(#[case] scale: f64, #[case] first_ms: u128) {
        assert_eq!(Settle::NONE.on_clock(scale).pause.as_millis(), first_ms);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_window_one_attempt_decides() {
        let s = until_works(Instant::now(), FIRST_PAUSE, scripted(&[false, true]))
            .await
            .expect("runs");
        assert_eq!(s.attempts.len(), 1);
        assert!(matches!(s.observation, Observation::Failed(_)));
    }

    #[rstest::rstest]
    #[case::pod(FlowKind::Pod, 30, 3)]
    #[case::service(FlowKind::Service, 30, 3)]
    #[case::outside(FlowKind::Outside, 30, 3)]
    #[case::nodeport(FlowKind::NodePort, 60, 3)]
    #[case::load_balancer(FlowKind::LoadBalancer, 120, 3)]
    fn real_clusters_give_nodeports_and_load_balancers_longer(
        #[case] kind: FlowKind,
        #[case] real_secs: u64,
        #[case] bundled_secs: u64,
    ) {
        assert_eq!(
            Settle::real(Duration::from_secs(30)).window(kind),
            Duration::from_secs(real_secs)
        );
        let bundled = Settle {
            base: Duration::from_secs(3),
            multiples: false,
            connections: SERVICE_CONNECTIONS,
            pause: FIRST_PAUSE,
        };
        assert_eq!(bundled.window(kind), Duration::from_secs(bundled_secs));
        assert_eq!(Settle::NONE.window(kind), Duration::ZERO);
    }

    /// How a test makes the connections after the first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum How {
        /// [`repeat`]: one attempt each.
        OneAtATime,
        /// [`repeat_together`] where they can be made together.
        Together,
        /// [`repeat_together`] where they cannot (`together` answers None).
        NotTogether,
    }

    /// Once it works a flow is judged on all its connections: a backend that one in four
    /// picks fails a share of them, named; all working leaves the note as it was; a flow that
    /// never worked makes no more. Connections made together judge it as the same connections
    /// made one at a time would; where they cannot be made together they are made one at a
    /// time.
    #[rstest::rstest]
    #[case::one_in_four(&[true, true, true, false], 10, Some((2, 10)), false)]
    #[case::all_work(&[true; 10], 10, Some((0, 10)), true)]
    #[case::never_worked(&[false], 10, None, false)]
    #[case::one_connection(&[true, false], 1, None, true)]
    #[tokio::test(start_paused = true)]
    async fn repeated_connections_show_a_partial_break(
        #[case] pattern: &[bool],
        #[case] connections: usize,
        #[case] repeated: Option<(usize, usize)>,
        #[case] works: bool,
        #[values(How::OneAtATime, How::Together, How::NotTogether)] how: How,
    ) {
        // The pattern repeats: [ok, ok, ok, fail] is the fourth connection of every four.
        let script: Vec<bool> = pattern.iter().copied().cycle().take(40).collect();
        let mut attempt = scripted(&script);
        let first = until_works(Instant::now(), FIRST_PAUSE, &mut attempt)
            .await
            .expect("runs");
        let s = if how == How::OneAtATime {
            repeat(first, connections, &mut attempt).await.expect("runs")
        } else {
            let can = how == How::Together;
            let asked = Cell::new(None);
            let together = |n: usize| {
                asked.set(Some(n));
                let made: Vec<Observation> = (0..n)
                    .map(|_| attempt().into_inner().map(|(o, _)| o))
                    .collect::<Result<_, ()>>()
                    .expect("scripted");
                std::future::ready(Ok::<_, ()>(can.then_some((made, 99))))
            };
            let singles = Cell::new(0);
            let mut rest = scripted(&script[1..]);
            let one = || {
                singles.set(singles.get() + 1);
                rest()
            };
            let s = repeat_together(first, connections, together, one).await.expect("runs");
            let more = repeated.is_some();
            assert_eq!(asked.get(), more.then_some(connections - 1));
            assert_eq!(singles.get(), if more && !can { connections - 1 } else { 0 });
            if can && !works && more {
                assert_eq!(s.value, 99, "the failed command's output is the flow's");
            }
            s
        };
        assert_eq!(s.repeated, repeated);
        assert_eq!(matches!(s.observation, Observation::Reached(_)), works);
        match repeated {
            Some((failed, made)) if failed > 0 => {
                assert_eq!(s.note(), format!(" ({failed} of {made} connections failed: timeout)"));
            }
            _ => assert!(!s.note().contains("connections failed"), "{}", s.note()),
        }
    }

    /// All connections in one go where `first` can (`+` a connection that works, `-` one that
    /// fails; an attempt not listed fails its first): a flow that works at once takes one such
    /// attempt and nothing more, and is judged on every connection it made; a flow whose first
    /// connection fails at first is tried again (each attempt one `first`) until it works; a
    /// failure among the others is the flow's observation with its count; where `first`
    /// cannot, the flow settles and repeats one connection at a time (or `together`).
    #[rstest::rstest]
    #[case::works_at_once(&["++++++++++"], true, 1, 0, Some((0, 10)), true)]
    #[case::works_on_the_third_attempt(&["-", "-", "++++++++++"], true, 3, 0, Some((0, 10)), true)]
    #[case::a_stale_backend(&["++-++-++++"], true, 1, 0, Some((2, 10)), false)]
    #[case::never_works(&[], true, 11, 0, None, false)]
    #[case::first_cannot(&[], false, 0, 1, Some((0, 10)), true)]
    #[tokio::test(start_paused = true)]
    async fn all_connections_at_once_judge_the_flow_as_one_at_a_time(
        #[case] attempts: &[&str],
        #[case] can: bool,
        #[case] firsts: usize,
        #[case] singles: usize,
        #[case] repeated: Option<(usize, usize)>,
        #[case] works: bool,
    ) {
        let seen = |ok: bool| {
            if ok {
                Observation::Reached("ok".into())
            } else {
                Observation::Failed(FailureClass::Timeout)
            }
        };
        let asked = Cell::new(0);
        let first = |n: usize| {
            let i = asked.get();
            asked.set(i + 1);
            assert_eq!(n, 10);
            let made = attempts
                .get(i)
                .map(|a| {
                    a.chars()
                        .enumerate()
                        .map(|(k, c)| (seen(c == '+'), 100 * i + k))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_else(|| vec![(seen(false), 100 * i)]);
            std::future::ready(Ok::<_, ()>(can.then_some(made)))
        };
        let ones = Cell::new(0);
        let one = || {
            ones.set(ones.get() + 1);
            std::future::ready(Ok::<_, ()>((seen(true), 99)))
        };
        let together = |n: usize| std::future::ready(Ok::<_, ()>(Some((vec![seen(true); n], 98))));
        let window = Duration::from_secs(30);
        let s = until_works_together(Instant::now() + window, FIRST_PAUSE, 10, (first, together, one))
            .await
            .expect("runs");
        let made_first = if can { firsts } else { 1 };
        assert_eq!(asked.get(), made_first, "attempts through `first`");
        assert_eq!(ones.get(), singles, "single attempts");
        assert_eq!(s.attempts.len(), if can { firsts } else { 1 });
        assert_eq!(s.repeated, repeated);
        assert_eq!(matches!(s.observation, Observation::Reached(_)), works);
        if can {
            // The value of the last attempt's first connection, or of its first that failed.
            let last = attempts.get(firsts - 1).copied().unwrap_or("-");
            let k = last.chars().skip(1).position(|c| c == '-').map_or(0, |k| k + 1);
            assert_eq!(s.value, 100 * (firsts - 1) + k, "whose value");
        }
    }
}
