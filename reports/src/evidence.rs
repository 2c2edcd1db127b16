//! What a check saw, made safe to keep: [`clean`] turns the bytes a container printed into
//! bounded, printable text ([`Excerpt`]), and [`Evidence`] holds the command, exit code, output
//! excerpts and pod events behind an observation.
//!
//! Every renderer relies on an [`Excerpt`] being clean: the JUnit writer puts it into XML, where
//! an ESC or NUL byte makes the file unparseable, and the terminal report prints it, where an
//! escape sequence would restyle the user's terminal.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// The default bound of an excerpt, in bytes of UTF-8 (4 KiB), marker included.
pub const EXCERPT_LIMIT: usize = 4096;

/// [`clean_bounded`] with the default bound, [`EXCERPT_LIMIT`].
pub fn clean(bytes: &[u8]) -> String {
    clean_bounded(bytes, EXCERPT_LIMIT)
}

/// Bytes a container printed, as printable text of at most `max` bytes.
///
/// 1. Invalid UTF-8 is replaced with U+FFFD.
/// 2. ANSI escape sequences are removed whole: CSI (`ESC [` … final byte, and the 8-bit CSI),
///    string commands such as OSC titles and hyperlinks (`ESC ]` … BEL or `ESC \`; also DCS, SOS,
///    PM, APC) and two-byte and `nF` escapes (`ESC ( B`). An unterminated string command ends at
///    the next newline, so a stray `ESC ]` cannot swallow the rest of the output.
/// 3. Control characters (C0, DEL, C1) other than `\n` and `\t` are removed — `\r` too, so
///    Windows `\r\n` line ends become `\n` — as are U+FFFE and U+FFFF, which XML cannot carry.
/// 4. Text longer than `max` keeps its head and its tail (a failing command usually says why at
///    the end) around a line `… (N bytes cut)`, N counting the cleaned bytes left out; the whole,
///    marker included, is at most `max` bytes. A `max` too small for the marker keeps the head only.
///
/// Cleaning clean text within the bound returns it unchanged.
pub fn clean_bounded(bytes: &[u8], max: usize) -> String {
    let text = strip(&String::from_utf8_lossy(bytes));
    truncate_middle(text, max)
}

/// Text without escape sequences and control characters (steps 2 and 3 of [`clean_bounded`]),
/// however long.
pub fn printable(text: &str) -> String {
    strip(text)
}

/// Where [`strip`] is inside an escape sequence.
#[derive(Clone, Copy)]
enum State {
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (`ESC (`), before the final byte.
    EscapeIntermediate,
    /// Inside a control sequence (after `ESC [` or the 8-bit CSI).
    Csi,
    /// Inside a string command (OSC, DCS, SOS, PM, APC), until BEL or ST.
    CommandString,
    /// After ESC inside a string command: `\` ends it (ST).
    CommandStringEscape,
}

/// Newlines (and the spaces around them) become one space.
pub(crate) fn one_line(text: &str) -> String {
    text.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut state = State::Text;
    for c in text.chars() {
        // A character that ends a sequence abnormally is looked at again as text.
        loop {
            match state {
                State::Text => {
                    match c {
                        '\x1b' => state = State::Escape,
                        '\u{9b}' => state = State::Csi,
                        '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => state = State::CommandString,
                        '\n' | '\t' => out.push(c),
                        '\u{fffe}' | '\u{ffff}' => {}
                        c if c.is_control() => {}
                        c => out.push(c),
                    }
                    break;
                }
                State::Escape => match c {
                    '[' => {
                        state = State::Csi;
                        break;
                    }
                    ']' | 'P' | 'X' | '^' | '_' => {
                        state = State::CommandString;
                        break;
                    }
                    '\x20'..='\x2f' => {
                        state = State::EscapeIntermediate;
                        break;
                    }
                    '\x30'..='\x7e' => {
                        state = State::Text;
                        break;
                    }
                    _ => state = State::Text,
                },
                State::EscapeIntermediate => match c {
                    '\x20'..='\x2f' => break,
                    '\x30'..='\x7e' => {
                        state = State::Text;
                        break;
                    }
                    _ => state = State::Text,
                },
                State::Csi => match c {
                    '\x20'..='\x3f' => break,
                    '\x40'..='\x7e' => {
                        state = State::Text;
                        break;
                    }
                    _ => state = State::Text,
                },
                State::CommandString => match c {
                    '\x07' | '\u{9c}' => {
                        state = State::Text;
                        break;
                    }
                    '\x1b' => {
                        state = State::CommandStringEscape;
                        break;
                    }
                    '\n' => state = State::Text,
                    _ => break,
                },
                State::CommandStringEscape => {
                    if c == '\\' {
                        state = State::Text;
                        break;
                    }
                    // Not ST: the string ended, and this ESC starts a new sequence.
                    state = State::Escape;
                }
            }
        }
    }
    out
}

fn cut_marker(n: usize) -> String {
    format!("\n… ({n} bytes cut)\n")
}

fn truncate_middle(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    // The marker for the largest possible count is at least as long as the real one.
    let widest = cut_marker(text.len()).len();
    let Some(budget) = max.checked_sub(widest) else {
        let end = floor_boundary(&text, max);
        return text[..end].to_owned();
    };
    let head_end = floor_boundary(&text, budget / 2);
    let tail_start = ceil_boundary(&text, text.len() - (budget - budget / 2));
    let cut = tail_start - head_end;
    let mut out = String::with_capacity(max);
    out.push_str(&text[..head_end]);
    out.push_str(&cut_marker(cut));
    out.push_str(&text[tail_start..]);
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Text a container or the cluster produced, cleaned by [`clean`]: printable, valid UTF-8 and
/// bounded. The only way to build one is through cleaning — also when read back from
/// `results.json` (without the bound there, so a report round-trips unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Excerpt(String);

impl Excerpt {
    /// Cleaned and bounded to [`EXCERPT_LIMIT`].
    pub fn new(bytes: impl AsRef<[u8]>) -> Self {
        Excerpt(clean(bytes.as_ref()))
    }

    /// Cleaned and bounded to `max` bytes.
    pub fn with_limit(bytes: impl AsRef<[u8]>, max: usize) -> Self {
        Excerpt(clean_bounded(bytes.as_ref(), max))
    }

    /// The cleaned text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Excerpt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Excerpt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Excerpt(clean_bounded(text.as_bytes(), usize::MAX)))
    }
}

/// A Kubernetes event about an object a check used (usually a fixture pod).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodEvent {
    /// The object, `kind/name` (`pod/win-client-0`).
    pub object: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// e.g. `FailedCreatePodSandBox`.
    pub reason: String,
    /// The event's message (it may quote container output, so it is cleaned).
    pub message: Excerpt,
}

/// The raw material behind an observation, for triage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// The pod the command ran in, `namespace/name`; absent for commands the runner ran itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The command, one argument per element.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Its exit code, when it ran to the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What it printed on stdout.
    #[serde(skip_serializing_if = "Excerpt::is_empty")]
    pub stdout: Excerpt,
    /// What it printed on stderr.
    #[serde(skip_serializing_if = "Excerpt::is_empty")]
    pub stderr: Excerpt,
    /// Events of the pods involved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<PodEvent>,
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::plain("curl: (28) Connection timed out\n", "curl: (28) Connection timed out\n")]
    #[case::sgr_colours("\x1b[32mok\x1b[0m \x1b[1;31mFAIL\x1b[m", "ok FAIL")]
    #[case::cursor_and_erase("50%\x1b[2K\x1b[1G100%", "50%100%")]
    #[case::private_mode("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor")]
    #[case::osc_title_bel("\x1b]0;PowerShell\x07PS C:\\>", "PS C:\\>")]
    #[case::osc_hyperlink_st("\x1b]8;;https://k8s.io\x1b\\link\x1b]8;;\x1b\\", "link")]
    #[case::charset_designation("\x1b(Bascii", "ascii")]
    #[case::two_byte_escape("\x1bMup\x1b7saved", "upsaved")]
    #[case::c1_csi("\u{9b}31mred", "red")]
    #[case::unterminated_osc_ends_at_newline("\x1b]0;title never ends\nnext line", "\nnext line")]
    #[case::broken_csi_keeps_newline("\x1b[12\nrest", "\nrest")]
    #[case::escape_at_end("done\x1b", "done")]
    #[case::windows_line_ends("a\r\nb\r\n", "a\nb\n")]
    #[case::tabs_and_newlines_kept("k\tv\n", "k\tv\n")]
    #[case::c0_and_del("nul\0 bell\x07 bs\x08 del\x7f end", "nul bell bs del end")]
    #[case::c1_control("x\u{85}y", "xy")]
    #[case::xml_noncharacters("a\u{fffe}b\u{ffff}c", "abc")]
    #[case::unicode_kept("Zugriff verweigert — 拒绝访问 ✓", "Zugriff verweigert — 拒绝访问 ✓")]
    fn strips_escapes_and_controls(#[case] input: &str, #[case] expected: &str) {
        assert_eq!(clean(input.as_bytes()), expected);
    }

    #[test]
    fn replaces_invalid_utf8() {
        assert_eq!(clean(b"ok \xff\xfe then \xc3"), "ok \u{fffd}\u{fffd} then \u{fffd}");
        // A valid multi-byte sequence next to an invalid one survives.
        assert_eq!(clean(b"\xc3\xa9\x80"), "é\u{fffd}");
    }

    #[test]
    fn short_text_is_not_cut() {
        let text = "x".repeat(EXCERPT_LIMIT);
        assert_eq!(clean(text.as_bytes()), text);
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_a_marker() {
        let text = format!("HEAD{}TAIL", "-".repeat(10_000));
        let out = clean(text.as_bytes());
        assert!(out.len() <= EXCERPT_LIMIT, "{} bytes", out.len());
        assert!(out.starts_with("HEAD"));
        assert!(out.ends_with("TAIL"));
        let marker_line = out.lines().find(|l| l.starts_with('…')).expect("a marker line");
        let cut: usize = marker_line
            .trim_start_matches("… (")
            .trim_end_matches(" bytes cut)")
            .parse()
            .expect("a byte count");
        let kept = out.len() - cut_marker(cut).len();
        assert_eq!(kept + cut, text.len(), "the marker counts exactly the bytes left out");
    }

    #[rstest]
    fn cut_respects_char_boundaries_and_bound(#[values(40, 41, 42, 43, 64, 100)] max: usize) {
        let text = "é✓拒".repeat(50);
        let out = clean_bounded(text.as_bytes(), max);
        assert!(out.len() <= max, "{} > {max}", out.len());
        assert!(out.contains("bytes cut)"));
    }

    #[test]
    fn counts_cleaned_bytes_not_raw_ones() {
        let raw = format!("{}{}", "\x1b[31m".repeat(1000), "y".repeat(100));
        assert_eq!(
            clean(raw.as_bytes()),
            "y".repeat(100),
            "escapes do not count towards the bound"
        );
    }

    #[test]
    fn tiny_bound_keeps_the_head_only() {
        assert_eq!(clean_bounded(b"abcdefghijklmnopqrstuvwxyz", 5), "abcde");
        assert_eq!(clean_bounded("ééé".as_bytes(), 3), "é");
    }

    #[rstest]
    #[case::plain(b"hello\n".to_vec())]
    #[case::dirty(b"\x1b[1mbold\x1b[0m\r\n\xff".to_vec())]
    #[case::long(vec![b'z'; 9000])]
    fn cleaning_is_idempotent(#[case] input: Vec<u8>) {
        let once = clean(&input);
        assert_eq!(clean(once.as_bytes()), once);
    }

    #[test]
    fn excerpt_is_cleaned_when_read_back() {
        let excerpt: Excerpt = serde_json::from_str(r#""\u001b[31mred\u001b[0m\u0000""#).expect("parse");
        assert_eq!(excerpt.as_str(), "red");
        // …but not bounded, so a report written with a larger bound round-trips.
        let long = Excerpt::with_limit("w".repeat(10_000), 20_000);
        let json = serde_json::to_string(&long).expect("serialise");
        assert_eq!(serde_json::from_str::<Excerpt>(&json).expect("parse"), long);
    }
}
