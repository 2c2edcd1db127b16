//! ping (busybox and Windows ping.exe).

use std::fmt::Write as _;

use super::{Dest, Failure, Net, flag_value, out, positionals};
use crate::node::runtime::ExecOutput;
use crate::vocab::hash::fnv1a;

/// A stable round-trip time in microseconds for one echo (40–99 µs).
pub(super) fn rtt_us(ip: &str, seq: u32) -> u32 {
    40 + u32::try_from(fnv1a(format!("{ip}/{seq}").as_bytes()) % 60).unwrap_or(0)
}

/// `ping [-c N | -n N] HOST`: a reply line per echo and the statistics; exit 1 when nothing
/// came back.
pub(super) fn ping(net: &Net, args: &[String]) -> ExecOutput {
    let (count_flag, size_flag, valued): (&str, &str, &[&str]) = if net.windows {
        ("-n", "-l", &["-n", "-l", "-w", "-i", "-v", "-r", "-s", "-j", "-k"])
    } else {
        ("-c", "-s", &["-c", "-W", "-w", "-s", "-i", "-I", "-t"])
    };
    let number = |flag: &str| flag_value(args, flag).and_then(|c| c.parse::<u32>().ok());
    let count = number(count_flag).unwrap_or(4).min(1000);
    let size = number(size_flag)
        .unwrap_or(if net.windows { 32 } else { 56 })
        .min(65_500);
    let Some(host) = positionals(args, valued).last().copied() else {
        return out("", "Usage: ping [OPTIONS] HOST\n", 1);
    };
    let (addr, fqdn) = match net.locate(host) {
        Dest::At(addr, fqdn) => (addr, fqdn),
        Dest::NotFound | Dest::Timeout(_) if net.windows => {
            return out(
                format!("Ping request could not find host {host}. Please check the name and try again.\r\n"),
                "",
                1,
            );
        }
        Dest::NotFound | Dest::Timeout(_) => return out("", format!("ping: bad address '{host}'\n"), 1),
    };
    let ip = addr.text.clone();
    let results: Vec<Result<(), Failure>> = (0..count).map(|_| net.ping(&addr)).collect();
    let received = u32::try_from(results.iter().filter(|r| r.is_ok()).count()).unwrap_or(0);
    let lost = count - received;
    let loss = (lost * 100).checked_div(count).unwrap_or(0);
    let code = i32::from(received == 0);
    if net.windows {
        let shown = match &fqdn {
            Some(name) => format!("{name} [{ip}]"),
            None => ip.clone(),
        };
        let mut text = format!("\r\nPinging {shown} with {size} bytes of data:\r\n");
        for r in &results {
            match r {
                Ok(()) => {
                    let _ = write!(text, "Reply from {ip}: bytes={size} time<1ms TTL=128\r\n");
                }
                Err(Failure::Other(_)) => text.push_str("General failure.\r\n"),
                Err(_) => text.push_str("Request timed out.\r\n"),
            }
        }
        let _ = write!(
            text,
            "\r\nPing statistics for {ip}:\r\n    Packets: Sent = {count}, Received = {received}, Lost = {lost} \
            ({loss}% loss),\r\n"
        );
        if received > 0 {
            text.push_str(
                "Approximate round trip times in milli-seconds:\r\n    Minimum = 0ms, Maximum = 0ms, Average = 0ms\r\n",
            );
        }
        return out(text, "", code);
    }
    let mut text = format!("PING {host} ({ip}): {size} data bytes\n");
    let mut stderr = String::new();
    let mut times = Vec::new();
    for (seq, r) in (0..count).zip(&results) {
        match r {
            Ok(()) => {
                let t = rtt_us(&ip, seq);
                times.push(t);
                let _ = writeln!(
                    text,
                    "{} bytes from {ip}: seq={seq} ttl=64 time={}.{:03} ms",
                    size + 8,
                    t / 1000,
                    t % 1000
                );
            }
            Err(Failure::Other(m)) => {
                let _ = writeln!(stderr, "ping: sendto: {m}");
                return out(text, stderr, 1);
            }
            Err(_) => {}
        }
    }
    let _ = write!(
        text,
        "\n--- {host} ping statistics ---\n{count} packets transmitted, {received} packets received, {loss}% packet \
        loss\n"
    );
    if let (Some(min), Some(max)) = (times.iter().min(), times.iter().max()) {
        let avg = times.iter().sum::<u32>() / received.max(1);
        let ms = |t: u32| format!("{}.{:03}", t / 1000, t % 1000);
        let _ = writeln!(
            text,
            "round-trip min/avg/max = {}/{}/{} ms",
            ms(*min),
            ms(avg),
            ms(*max)
        );
    }
    out(text, stderr, code)
}
