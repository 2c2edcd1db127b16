//! PowerShell's patterns: wildcards (`-like`, `Get-ChildItem -Filter`, a WQL `LIKE`, process and
//! adapter names) and regular expressions (`-match`, `-replace`, `-split`, `Select-String`),
//! case-insensitive unless asked.

pub(super) fn glob(pattern: &str, text: &str, case: bool) -> bool {
    let fold = |t: &str| if case { t.to_string() } else { t.to_lowercase() };
    let (p, t): (Vec<char>, Vec<char>) = (fold(pattern).chars().collect(), fold(text).chars().collect());
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|k| t.get(k..).is_some_and(|tail| go(rest, tail))),
            Some(('?', rest)) => t.split_first().is_some_and(|(_, tt)| go(rest, tt)),
            Some(('[', rest)) => {
                let Some(end) = rest.iter().position(|c| *c == ']') else {
                    return t.first() == Some(&'[') && go(rest, &t[1..]);
                };
                let set = &rest[..end];
                t.split_first().is_some_and(|(c, tt)| {
                    let mut hit = false;
                    let mut k = 0;
                    while k < set.len() {
                        if k + 2 < set.len() && set[k + 1] == '-' {
                            hit |= set[k] <= *c && *c <= set[k + 2];
                            k += 3;
                        } else {
                            hit |= set[k] == *c;
                            k += 1;
                        }
                    }
                    hit && go(&rest[end + 1..], tt)
                })
            }
            Some(('`', rest)) if !rest.is_empty() => t.first() == rest.first() && go(&rest[1..], &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    go(&p, &t)
}

pub(super) fn regex(pattern: &str, case: bool) -> Result<regex::Regex, String> {
    let full = if case {
        pattern.to_string()
    } else {
        format!("(?i){pattern}")
    };
    regex::Regex::new(&full).map_err(|e| format!("The regular expression pattern {pattern} is not valid: {e}"))
}
