//! The PowerShell network cmdlets: Resolve-DnsName, Test-NetConnection, Invoke-RestMethod and
//! .NET UDP clients in scripts.

use std::fmt::Write as _;

use super::{Dest, Failure, Lookup, Net, Proto, Wire, flag_value, out, parse_url, positionals, reason, ttl};
use crate::node::exec::context::CommandContext;
use crate::node::exec::ps_errors::ps_error;
use crate::node::runtime::ExecOutput;

pub(super) fn statement(cmdlet: &str, args: &[String]) -> String {
    std::iter::once(cmdlet)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `Resolve-DnsName [-Name] NAME [-Server S] [-Type A]`: the record table, or the DNS error
/// record (exit 1).
pub(super) fn resolve_dns_name(net: &Net, args: &[String]) -> ExecOutput {
    let name = flag_value(args, "-name")
        .or_else(|| positionals(args, &["-server", "-type", "-name"]).first().copied())
        .unwrap_or("");
    let statement = statement("Resolve-DnsName", args);
    let error = |message: &str, category: &str, fqid: &str| {
        out(
            "",
            ps_error(
                &statement,
                "Resolve-DnsName",
                message,
                category,
                &format!("{fqid},Microsoft.DnsClient.Commands.ResolveDnsName"),
            ),
            1,
        )
    };
    if name.is_empty() {
        return error(
            "Cannot process command because of one or more missing mandatory parameters: Name.",
            "InvalidArgument: (:) [Resolve-DnsName], ParameterBindingException",
            "MissingMandatoryParameter",
        );
    }
    match net.wire.resolve(name, flag_value(args, "-server")) {
        Lookup::Found { fqdn, addrs, alias } if !addrs.is_empty() => {
            let head = |last: &str| {
                let line = "-".repeat(last.len());
                format!(
                    "\r\nName                                           Type   TTL   Section    {last}\r\n\
                    ----                                           ----   ---   -------    {line}\r\n"
                )
            };
            let Some(target) = alias else {
                let mut text = head("IPAddress");
                for a in addrs {
                    let _ = write!(text, "{fqdn:<46} A      {:<5} Answer     {a}\r\n", ttl(&fqdn));
                }
                text.push_str("\r\n");
                return out(text, "", 0);
            };
            // A CNAME first sets the table; the A records that follow are listed.
            let mut text = head("NameHost");
            let _ = write!(text, "{fqdn:<46} CNAME  {:<5} Answer     {target}\r\n", ttl(&fqdn));
            for a in addrs {
                let _ = write!(
                    text,
                    "\r\nName       : {target}\r\nQueryType  : A\r\nTTL        : {}\r\nSection    : Answer\r\n\
                    IP4Address : {a}\r\n",
                    ttl(&target)
                );
            }
            text.push_str("\r\n\r\n");
            out(text, "", 0)
        }
        Lookup::Found { .. } | Lookup::NotFound => error(
            &format!("{name} : DNS name does not exist"),
            &format!("ResourceUnavailable: ({name}:String) [Resolve-DnsName], Win32Exception"),
            "DNS_ERROR_RCODE_NAME_ERROR",
        ),
        Lookup::Timeout { .. } => error(
            &format!("{name} : This operation returned because the timeout period expired"),
            &format!("OperationTimeout: ({name}:String) [Resolve-DnsName], Win32Exception"),
            "ERROR_TIMEOUT",
        ),
    }
}

/// A PowerShell list: `Key : Value` lines with the keys padded alike, framed by blank lines.
pub(super) fn ps_list(rows: &[(&str, String)]) -> String {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut text = String::from("\r\n");
    for (key, value) in rows {
        let line = format!("{key:<width$} : {value}");
        let _ = write!(text, "{}\r\n", line.trim_end());
    }
    text.push_str("\r\n\r\n");
    text
}

/// `Test-NetConnection [-ComputerName] X [-Port P | -CommonTCPPort NAME] [-InformationLevel
/// Quiet]`: a TCP test (with a ping when it fails) or a ping; always exit 0.
pub(super) fn test_net_connection(net: &Net, args: &[String]) -> ExecOutput {
    const VALUED: &[&str] = &["-port", "-computername", "-informationlevel", "-commontcpport", "-hops"];
    let found = positionals(args, VALUED);
    let target = flag_value(args, "-computername")
        .or_else(|| found.first().copied())
        .unwrap_or("internetbeacon.msedge.net");
    let quiet = flag_value(args, "-informationlevel").is_some_and(|l| l.eq_ignore_ascii_case("quiet"));
    let common = flag_value(args, "-commontcpport").or_else(|| found.get(1).copied());
    let port = match (flag_value(args, "-port"), common) {
        (Some(p), _) => match p.parse::<u16>() {
            Ok(p) => Some(p),
            Err(_) => {
                let text = ps_error(
                    &statement("Test-NetConnection", args),
                    "Test-NetConnection",
                    &format!(
                        "Cannot process argument transformation on parameter 'Port'. Cannot convert value \"{p}\" \
                        to type \"System.Int32\". Error: \"Input string was not in a correct format.\""
                    ),
                    "InvalidData: (:) [Test-NetConnection], ParameterBindingArgumentTransformationException",
                    "ParameterArgumentTransformationError,Test-NetConnection",
                );
                return out("", text, 1);
            }
        },
        (None, Some(name)) => match name.to_ascii_uppercase().as_str() {
            "HTTP" => Some(80),
            "RDP" => Some(3389),
            "SMB" => Some(445),
            "WINRM" => Some(5985),
            _ => None,
        },
        (None, None) => None,
    };
    let verdict =
        |warning: String, ok: bool| ExecOutput::ok(format!("{warning}{}\r\n", if ok { "True" } else { "False" }));
    let addr = match net.locate(target) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => {
            let warning = format!("WARNING: Name resolution of {target} failed\r\n");
            if quiet {
                return verdict(warning, false);
            }
            return ExecOutput::ok(format!(
                "{warning}\r\nComputerName   : {target}\r\nRemoteAddress  :\r\nInterfaceAlias :\r\nSourceAddress  :\r\n\
                PingSucceeded  : False\r\n\r\n\r\n"
            ));
        }
    };
    let ip = addr.text.clone();
    let source = net.ctx.pod_ip();
    let mut rows: Vec<(&str, String)> = vec![("ComputerName", target.to_string()), ("RemoteAddress", ip.clone())];
    if let Some(port) = port {
        rows.push(("RemotePort", port.to_string()));
    }
    rows.push(("InterfaceAlias", "vEthernet (Ethernet)".into()));
    rows.push(("SourceAddress", source));
    if let Some(port) = port {
        if matches!(net.connect(&addr, port, Proto::Tcp), Ok(()) | Err(Failure::Reset)) {
            if quiet {
                return verdict(String::new(), true);
            }
            rows.push(("TcpTestSucceeded", "True".into()));
            return ExecOutput::ok(ps_list(&rows));
        }
        let warning = format!("WARNING: TCP connect to ({ip} : {port}) failed\r\n");
        if quiet {
            return verdict(warning, false);
        }
        let pinged = net.ping(&addr).is_ok();
        rows.push(("PingSucceeded", if pinged { "True" } else { "False" }.into()));
        rows.push(("PingReplyDetails (RTT)", "0 ms".into()));
        rows.push(("TcpTestSucceeded", "False".into()));
        return ExecOutput::ok(format!("{warning}{}", ps_list(&rows)));
    }
    let pinged = net.ping(&addr).is_ok();
    let warning = if pinged {
        String::new()
    } else {
        format!("WARNING: Ping to {ip} failed with status: TimedOut\r\n")
    };
    if quiet {
        return verdict(warning, pinged);
    }
    rows.push(("PingSucceeded", if pinged { "True" } else { "False" }.into()));
    rows.push(("PingReplyDetails (RTT)", "0 ms".into()));
    ExecOutput::ok(format!("{warning}{}", ps_list(&rows)))
}

/// `Invoke-RestMethod [-Uri] URL [-TimeoutSec N] [-UseBasicParsing] [-Method Get]` of Windows
/// PowerShell 5.1 (.NET Framework `HttpWebRequest`): the body as a string, or the
/// `WebException` error record (exit 1 for the shell). A body with an error status becomes the
/// error message, as 5.1 prints it.
pub(super) fn invoke_rest_method(net: &Net, args: &[String]) -> ExecOutput {
    const VALUED: &[&str] = &[
        "-uri",
        "-timeoutsec",
        "-method",
        "-headers",
        "-body",
        "-contenttype",
        "-outfile",
    ];
    let statement = statement("Invoke-RestMethod", args);
    let url = flag_value(args, "-uri")
        .or_else(|| positionals(args, VALUED).first().copied())
        .unwrap_or("");
    let failed = |message: &str| {
        out(
            "",
            ps_error(
                &statement,
                "Invoke-RestMethod",
                message,
                "InvalidOperation: (System.Net.HttpWebRequest:HttpWebRequest) [Invoke-RestMethod], WebException",
                "WebCmdletWebResponseException,Microsoft.PowerShell.Commands.InvokeRestMethodCommand",
            ),
            1,
        )
    };
    if url.is_empty() {
        return out(
            "",
            ps_error(
                &statement,
                "Invoke-RestMethod",
                "Cannot validate argument on parameter 'Uri'. The argument is null or empty. Provide an argument \
                that is not null or empty, and then try the command again.",
                "InvalidData: (:) [Invoke-RestMethod], ParameterBindingValidationException",
                "ParameterArgumentValidationError,Microsoft.PowerShell.Commands.InvokeRestMethodCommand",
            ),
            1,
        );
    }
    let url = parse_url(url);
    let addr = match net.locate(&url.host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound | Dest::Timeout(_) => {
            return failed(&format!("The remote name could not be resolved: '{}'", url.host));
        }
    };
    match net.http_get(&addr, url.port, &url.target) {
        Ok(reply) if reply.status < 400 => out(format!("{}\r\n", reply.body.trim_end_matches('\n')), "", 0),
        Ok(reply) if !reply.body.trim().is_empty() => failed(reply.body.trim()),
        Ok(reply) => failed(&format!(
            "The remote server returned an error: ({}) {}.",
            reply.status,
            reason(reply.status)
        )),
        Err(Failure::Timeout | Failure::NoReply) => failed("The operation has timed out."),
        Err(Failure::Reset) => {
            failed("The underlying connection was closed: An unexpected error occurred on a receive.")
        }
        Err(Failure::Refused | Failure::Other(_)) => failed("Unable to connect to the remote server"),
    }
}

/// A PowerShell script that talks UDP through a .NET `System.Net.Sockets.UdpClient` — what
/// Windows images without netcat or agnhost (Server Core 2016/1709) have:
///
/// ```text
/// $u = New-Object System.Net.Sockets.UdpClient; $u.Client.ReceiveTimeout = 5000
/// $u.Connect('10.96.0.10', 90); $b = [Text.Encoding]::ASCII.GetBytes('hostname')
/// [void]$u.Send($b, $b.Length); $e = $null; [Text.Encoding]::ASCII.GetString($u.Receive([ref]$e))
/// ```
///
/// The destination is the `Connect(host, port)` arguments (or the last two of a four-argument
/// `Send`), the datagram the first `GetBytes('…')` string; with a `Receive` the reply is
/// printed, or the `SocketException` the method call throws (exit 1). None when the script does
/// not create a `UdpClient` with a destination (it is then interpreted statement by statement).
pub fn dotnet_udp(ctx: &CommandContext, wire: &dyn Wire, script: &str) -> Option<ExecOutput> {
    let lower = script.to_ascii_lowercase();
    if !lower.contains("sockets.udpclient") {
        return None;
    }
    let call_args = |method: &str| -> Option<Vec<String>> {
        let at = lower.find(&format!(".{method}("))? + method.len() + 2;
        let end = at + script.get(at..)?.find(')')?;
        Some(
            script
                .get(at..end)?
                .split(',')
                .map(|a| a.trim().trim_matches(['\'', '"']).to_string())
                .collect(),
        )
    };
    let (host, port) = match (call_args("connect"), call_args("send")) {
        (Some(a), _) if a.len() == 2 => (a[0].clone(), a[1].clone()),
        (_, Some(a)) if a.len() == 4 => (a[2].clone(), a[3].clone()),
        _ => return None,
    };
    let port: u16 = port.parse().ok()?;
    let payload = call_args("getbytes")
        .and_then(|a| a.into_iter().next())
        .unwrap_or_default();
    let receives = lower.contains(".receive(");
    let statement = script.lines().next().unwrap_or("").trim().to_string();
    let thrown = |method: &str, arity: u8, message: &str| {
        let underline = "~".repeat(statement.chars().count().max(1));
        out(
            "",
            format!(
                "Exception calling \"{method}\" with \"{arity}\" argument(s): \"{message}\"\r\nAt line:1 char:1\r\n\
                + {statement}\r\n+ {underline}\r\n    + CategoryInfo          : NotSpecified: (:) [], \
                MethodInvocationException\r\n    + FullyQualifiedErrorId : SocketException\r\n \r\n"
            ),
            1,
        )
    };
    let net = Net {
        ctx,
        wire,
        windows: ctx.is_windows(),
    };
    let addr = match net.locate(&host) {
        Dest::At(addr, _) => addr,
        Dest::NotFound => return Some(thrown("Connect", 2, "No such host is known")),
        Dest::Timeout(_) => {
            return Some(thrown(
                "Connect",
                2,
                "This is usually a temporary error during hostname resolution and means that the local server did \
                not receive a response from an authoritative server",
            ));
        }
    };
    if !receives {
        return Some(out("", "", 0));
    }
    Some(match net.udp(&addr, port, &payload) {
        Ok(reply) => out(format!("{reply}\r\n"), "", 0),
        Err(Failure::Timeout | Failure::NoReply) => thrown(
            "Receive",
            1,
            "A connection attempt failed because the connected party did not properly respond after a period of \
            time, or established connection failed because connected host has failed to respond",
        ),
        Err(Failure::Refused | Failure::Reset) => thrown(
            "Receive",
            1,
            "An existing connection was forcibly closed by the remote host",
        ),
        Err(Failure::Other(m)) => thrown("Send", 2, m.trim_end_matches('.')),
    })
}
