//! One command run on a node's host (node diagnostics, facts read on the node) as it ran: how it is invoked so that a failure shows (exit
//! code; PowerShell's error records), and what its run is as evidence — its output when it
//! succeeded, else "not run: <why>", which confirms and refutes nothing.

use mixcheck_reports::Os;

/// The start of the evidence text of a command that did not run to success.
pub const NOT_RUN: &str = "not run: ";

/// Whether an evidence text is that of a command that did not run to success.
pub fn not_run(text: &str) -> bool {
    text.starts_with(NOT_RUN)
}

/// The argv that runs `command` on a node of `os`: Windows PowerShell without profile or
/// prompts (its exit code is 1 when the last statement failed; the catalogue's cmdlets take
/// `-ErrorAction Stop`), or `sh -c`.
pub fn argv(os: Os, command: &str) -> Vec<String> {
    if os == Os::Windows {
        ["powershell", "-NoProfile", "-NonInteractive", "-Command", command]
            .map(String::from)
            .to_vec()
    } else {
        ["sh", "-c", command].map(String::from).to_vec()
    }
}

/// The first non-empty line of `text`, trimmed.
fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// The evidence text of a finished command: its standard output when it exited 0 (and, on
/// Windows, wrote no error record), else "not run: …" with the exit code and its first error line.
pub fn evidence(os: Os, exit_code: Option<i32>, stdout: &str, stderr: &str) -> String {
    let why = first_line(stderr);
    match exit_code {
        Some(0) if os == Os::Windows && !why.is_empty() => format!("{NOT_RUN}the command wrote an error: {why}"),
        Some(0) => stdout.to_string(),
        Some(code) if why.is_empty() => format!("{NOT_RUN}exit code {code}"),
        Some(code) => format!("{NOT_RUN}exit code {code}: {why}"),
        None => format!(
            "{NOT_RUN}no exit status{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::success(Os::Windows, Some(0), "Count : 0\r\n", "", "Count : 0\r\n")]
    #[case::linux_warning(Os::Linux, Some(0), "sockets: used 5\n", "warning\n", "sockets: used 5\n")]
    #[case::not_recognized(
        Os::Windows,
        Some(1),
        "",
        "Get-HnsNetwork : The term 'Get-HnsNetwork' is not recognized as the name of a cmdlet\r\n",
        "not run: exit code 1: Get-HnsNetwork : The term 'Get-HnsNetwork' is not recognized as the name of a cmdlet"
    )]
    #[case::error_record(
        Os::Windows,
        Some(0),
        "x\r\n",
        "Get-Content : Cannot find path\r\n",
        "not run: the command wrote an error: Get-Content : Cannot find path"
    )]
    #[case::bare_exit(Os::Linux, Some(2), "", "", "not run: exit code 2")]
    #[case::no_status(Os::Linux, None, "partial", "", "not run: no exit status")]
    fn failures_are_not_output(
        #[case] os: Os,
        #[case] code: Option<i32>,
        #[case] stdout: &str,
        #[case] stderr: &str,
        #[case] want: &str,
    ) {
        let got = evidence(os, code, stdout, stderr);
        assert_eq!(got, want);
        assert_eq!(
            not_run(&got),
            code != Some(0) || (os == Os::Windows && !stderr.is_empty())
        );
    }
}
