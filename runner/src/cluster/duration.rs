//! Durations as the kubelet prints them: Go's `time.Duration` text (`2m10.512s`, `1.234s`,
//! `850ms`, `1h2m3s`) read back, and durations shown to a person (`2 m 10 s`).

use std::time::Duration;

/// Nanoseconds per unit of Go's duration syntax (`time.ParseDuration`: ns, us, µs, μs, ms, s, m,
/// h).
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// A Go duration's text (`time.Duration.String()`, which the kubelet's `Pulled` event prints
/// with `%v`): a sequence of decimal numbers, each with a unit, or `0`. None for anything else,
/// and for a negative duration (no pull takes one).
pub fn parse_go(text: &str) -> Option<Duration> {
    let text = text.trim();
    let text = text.strip_prefix('+').unwrap_or(text);
    if text == "0" {
        return Some(Duration::ZERO);
    }
    if text.is_empty() || text.starts_with('-') {
        return None;
    }
    let mut rest = text;
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        nanos = nanos.checked_add(scaled(number, unit_nanos(unit)?)?)?;
        rest = after;
    }
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

/// `number` (digits, optionally a fraction) times `unit` nanoseconds.
fn scaled(number: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let parse = |digits: &str| -> Option<u128> {
        if digits.is_empty() {
            Some(0)
        } else if digits.bytes().all(|b| b.is_ascii_digit()) {
            digits.parse().ok()
        } else {
            None
        }
    };
    let mut total = parse(whole)?.checked_mul(unit)?;
    // Digits past nanosecond precision add nothing (Go drops them too).
    let fraction = &fraction[..fraction.len().min(18)];
    if !fraction.is_empty() {
        let scale = 10u128.pow(u32::try_from(fraction.len()).ok()?);
        total = total.checked_add(parse(fraction)?.checked_mul(unit)? / scale)?;
    }
    Some(total)
}

/// A duration for a person: `850 ms`, `1.234 s`, `2 m 10 s`, `1 h 5 m`.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{} h {} m", secs / 3600, secs % 3600 / 60)
    } else if secs >= 60 {
        format!("{} m {} s", secs / 60, secs % 60)
    } else if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

/// An elapsed time on a progress line, to the second: `0 s`, `45 s`, `2 m 10 s`.
pub fn elapsed(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 {
        human(Duration::from_secs(secs))
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::bundled("1.234s", 1_234_000_000)]
    #[case::minutes("2m10.512s", 130_512_000_000)]
    #[case::hours("1h2m3s", 3_723_000_000_000)]
    #[case::hours_fraction("1h0m0.5s", 3_600_500_000_000)]
    #[case::millis("850ms", 850_000_000)]
    #[case::fraction_millis("12.345678ms", 12_345_678)]
    #[case::micro_sign("1.5\u{b5}s", 1_500)]
    #[case::greek_mu("2\u{3bc}s", 2_000)]
    #[case::us("3us", 3_000)]
    #[case::nanos("100ns", 100)]
    #[case::zero("0s", 0)]
    #[case::bare_zero("0", 0)]
    #[case::leading_dot(".5s", 500_000_000)]
    #[case::trailing_dot("1.s", 1_000_000_000)]
    #[case::nine_digits("1.123456789s", 1_123_456_789)]
    #[case::beyond_nanos("1.1234567891s", 1_123_456_789)]
    #[case::plus("+5s", 5_000_000_000)]
    fn go_durations_parse_to_the_nanosecond(#[case] text: &str, #[case] nanos: u64) {
        assert_eq!(parse_go(text), Some(Duration::from_nanos(nanos)), "{text}");
    }

    #[rstest]
    #[case::empty("")]
    #[case::no_unit("12")]
    #[case::unknown_unit("3d")]
    #[case::negative("-1s")]
    #[case::lone_dot(".s")]
    #[case::words("about 2 minutes")]
    #[case::two_dots("1.2.3s")]
    #[case::overflow("99999999999999999999h")]
    fn anything_else_is_not_a_duration(#[case] text: &str) {
        assert_eq!(parse_go(text), None, "{text}");
    }

    #[rstest]
    #[case(Duration::from_millis(850), "850 ms")]
    #[case(Duration::from_millis(1234), "1.234 s")]
    #[case(Duration::from_millis(130_512), "2 m 10 s")]
    #[case(Duration::from_secs(3900), "1 h 5 m")]
    fn durations_read_as_a_person_says_them(#[case] d: Duration, #[case] text: &str) {
        assert_eq!(human(d), text);
    }

    #[rstest]
    #[case(Duration::from_millis(400), "0 s")]
    #[case(Duration::from_millis(45_900), "45 s")]
    #[case(Duration::from_secs(130), "2 m 10 s")]
    fn elapsed_times_count_whole_seconds(#[case] d: Duration, #[case] text: &str) {
        assert_eq!(elapsed(d), text);
    }
}
