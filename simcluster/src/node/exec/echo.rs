//! What the printing builtins print — `echo` and `printf` of sh, cmd's `echo` forms — as text,
//! for both places a command line runs: a container's main process (the kubelet's process
//! model) and a command exec'd into a running container.

/// sh's `echo ARGS…` (busybox and coreutils agree on these): leading flag words made of `n`,
/// `e` and `E` (`-n`, `-e`, `-ne`, `-en`, `-nE`, …) drop the newline and turn backslash escapes
/// on or off; the rest is joined by spaces.
pub fn sh_echo(args: &[String]) -> String {
    let (mut newline, mut escapes) = (true, false);
    let mut rest = args;
    while let Some((flag, tail)) = rest.split_first() {
        let Some(letters) = flag.strip_prefix('-') else {
            break;
        };
        if letters.is_empty() || !letters.chars().all(|c| matches!(c, 'n' | 'e' | 'E')) {
            break;
        }
        for c in letters.chars() {
            match c {
                'n' => newline = false,
                'e' => escapes = true,
                _ => escapes = false,
            }
        }
        rest = tail;
    }
    let mut text = rest.join(" ");
    if escapes {
        text = unescape(&text);
    }
    if newline {
        text.push('\n');
    }
    text
}

/// Backslash escapes as `echo -e` and `printf` read them: `\n`, `\t`, `\r`, `\\`; any other
/// backslash stays as written.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// sh's `printf FORMAT [ARGS…]`: the format's escapes, `%s`, `%d` and `%%`, reused while
/// arguments are left (a missing argument prints as empty, or 0 for `%d`).
pub fn printf(args: &[String]) -> String {
    let Some((format, mut rest)) = args.split_first() else {
        return String::new();
    };
    let format = unescape(format);
    let mut out = String::new();
    loop {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some(conv @ ('s' | 'd')) => {
                    let arg = rest.first().map(String::as_str);
                    if arg.is_some() {
                        used = true;
                        rest = rest.get(1..).unwrap_or_default();
                    }
                    match conv {
                        's' => out.push_str(arg.unwrap_or("")),
                        _ => out.push_str(&arg.and_then(|a| a.trim().parse::<i64>().ok()).unwrap_or(0).to_string()),
                    }
                }
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        if !used || rest.is_empty() {
            return out;
        }
    }
}

/// cmd's `echo` as it parses the line: `echo` alone or with only blanks prints `ECHO is on.`,
/// `echo on` and `echo off` print nothing, `echo.`, `echo:`, `echo(` and the other separators
/// print what follows them (an empty line for `echo.`), and `echo text` prints the rest of the
/// line as written, quotes and trailing blanks included. Not an echo: None.
pub fn cmd_echo(line: &str) -> Option<String> {
    let head = line.get(..4)?;
    if !head.eq_ignore_ascii_case("echo") {
        return None;
    }
    let mut rest = line.get(4..)?.chars();
    let body = match rest.next() {
        None => return Some("ECHO is on.\r\n".into()),
        Some(' ' | '\t') => rest.as_str(),
        Some('.' | ':' | '(' | ',' | ';' | '=' | '/' | '[' | ']' | '+') => {
            return Some(format!("{}\r\n", rest.as_str()));
        }
        Some(_) => return None,
    };
    Some(match body.trim().to_ascii_lowercase().as_str() {
        "" => "ECHO is on.\r\n".into(),
        "on" | "off" => String::new(),
        _ => format!("{body}\r\n"),
    })
}

/// Printed text as log lines: split at line ends (`\r\n` or `\n`), without the empty line after
/// a final line end.
pub fn lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
        .collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[rstest]
    #[case(&["a", "b"], "a b\n")]
    #[case(&["-n", "a"], "a")]
    #[case(&["-e", "a\\tb"], "a\tb\n")]
    #[case(&["-ne", "a\\nb"], "a\nb")]
    #[case(&["-en", "a\\nb"], "a\nb")]
    #[case(&["-e", "-E", "a\\nb"], "a\\nb\n")]
    #[case(&["-x", "a"], "-x a\n")]
    #[case(&["-", "a"], "- a\n")]
    #[case(&["-e", "a\\\\nb"], "a\\nb\n")]
    #[case(&[], "\n")]
    fn sh_echo_flags_and_escapes(#[case] args: &[&str], #[case] printed: &str) {
        assert_eq!(sh_echo(&words(args)), printed);
    }

    #[rstest]
    #[case(&["a\\nb\\n"], "a\nb\n")]
    #[case(&["%s-%s\\n", "a", "b", "c"], "a-b\nc-\n")]
    #[case(&["%d%%\\n", "7"], "7%\n")]
    #[case(&["%d\\n", "x"], "0\n")]
    #[case(&[], "")]
    fn printf_formats(#[case] args: &[&str], #[case] printed: &str) {
        assert_eq!(printf(&words(args)), printed);
    }

    #[rstest]
    #[case("echo", Some("ECHO is on.\r\n"))]
    #[case("echo.", Some("\r\n"))]
    #[case("echo:x", Some("x\r\n"))]
    #[case("echo a ", Some("a \r\n"))]
    #[case("ECHO \"q\" t", Some("\"q\" t\r\n"))]
    #[case("echo off", Some(""))]
    #[case("echoes", None)]
    fn cmd_echo_forms(#[case] line: &str, #[case] printed: Option<&str>) {
        assert_eq!(cmd_echo(line).as_deref(), printed);
    }
}
