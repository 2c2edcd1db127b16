//! Kubernetes name formats (apimachinery's `validation`): RFC 1123 labels and subdomains and
//! DNS-1035 labels — one definition for object names, label-key prefixes and node names.

/// The longest RFC 1123 subdomain (`DNS1123SubdomainMaxLength`).
pub const MAX_SUBDOMAIN_LEN: usize = 253;

/// The longest RFC 1123 or DNS-1035 label (`DNS1123LabelMaxLength`).
pub const MAX_LABEL_LEN: usize = 63;

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, of any length.
fn label_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(|c| lower_alnum(*c))
        && b.last().is_some_and(|c| lower_alnum(*c))
        && b.iter().all(|c| lower_alnum(*c) || *c == b'-')
}

/// An RFC 1123 label (`IsDNS1123Label`): the label shape, at most 63 characters.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= MAX_LABEL_LEN && label_shape(s)
}

/// An RFC 1123 subdomain (`IsDNS1123Subdomain`): dot-separated label shapes, at most 253
/// characters in all (upstream limits the whole, not each part).
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= MAX_SUBDOMAIN_LEN && s.split('.').all(label_shape)
}

/// A DNS-1035 label (`IsDNS1035Label`): an RFC 1123 label that starts with a letter.
pub fn is_dns1035_label(s: &str) -> bool {
    is_dns_label(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("web", true, true, true)]
    #[case("web.example", true, false, false)]
    #[case("1abc", true, true, false)]
    #[case("Web", false, false, false)]
    #[case("-a", false, false, false)]
    #[case("a-", false, false, false)]
    #[case("a..b", false, false, false)]
    #[case("a_b", false, false, false)]
    #[case("", false, false, false)]
    #[case(&"a".repeat(63), true, true, true)]
    #[case(&"a".repeat(64), true, false, false)]
    #[case(&format!("{}.b", "a".repeat(100)), true, false, false)]
    #[case(&"a.".repeat(126).trim_end_matches('.').to_string(), true, false, false)]
    #[case(&"a".repeat(254), false, false, false)]
    fn name_formats(#[case] name: &str, #[case] subdomain: bool, #[case] label: bool, #[case] dns1035: bool) {
        assert_eq!(is_dns_subdomain(name), subdomain, "subdomain {name}");
        assert_eq!(is_dns_label(name), label, "label {name}");
        assert_eq!(is_dns1035_label(name), dns1035, "dns1035 {name}");
    }
}
