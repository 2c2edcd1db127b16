//! Kubernetes resource quantities (`4`, `3800m`, `16Gi`, `500Mi`, `16370000Ki`, `1e3`): parsing
//! to base units (bytes, millicores) and formatting back.

/// A parsed quantity in milli-units (so `100m` CPU is 100 and `1Ki` memory is 1_024_000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Quantity(pub i128);

impl Quantity {
    /// Parses a quantity string; None when it is not one.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
            .unwrap_or(s.len());
        let (num, suffix) = s.split_at(split);
        if num.is_empty() || num.len() > 30 {
            return None;
        }
        let milli_factor: i128 = match suffix {
            "" => 1000,
            "m" => 1,
            "k" => 1000 * 1000,
            "M" => 1000 * 1_000_000,
            "G" => 1000 * 1_000_000_000,
            "T" => 1000 * 1_000_000_000_000,
            "Ki" => 1000 * 1024,
            "Mi" => 1000 * 1024 * 1024,
            "Gi" => 1000 * 1024 * 1024 * 1024,
            "Ti" => 1000 * 1024 * 1024 * 1024 * 1024,
            "Pi" => 1000 * 1024 * 1024 * 1024 * 1024 * 1024,
            _ => return None,
        };
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let negative = int_part.starts_with('-');
        let int_digits = int_part.trim_start_matches(['-', '+']);
        if int_digits.is_empty() && frac_part.is_empty() {
            return None;
        }
        let int: i128 = if int_digits.is_empty() {
            0
        } else {
            int_digits.parse().ok()?
        };
        let mut value = int.checked_mul(milli_factor)?;
        if !frac_part.is_empty() {
            if !frac_part.bytes().all(|b| b.is_ascii_digit()) || frac_part.len() > 9 {
                return None;
            }
            let frac: i128 = frac_part.parse().ok()?;
            let scale = 10i128.pow(u32::try_from(frac_part.len()).ok()?);
            value = value.checked_add(frac.checked_mul(milli_factor)? / scale)?;
        }
        Some(Self(if negative { -value } else { value }))
    }

    /// Parses a value of a JSON field (strings, or plain numbers).
    pub fn from_json(v: &serde_json::Value) -> Option<Self> {
        match v {
            serde_json::Value::String(s) => Self::parse(s),
            serde_json::Value::Number(n) => Self::parse(&n.to_string()),
            _ => None,
        }
    }

    /// Whole base units (bytes, cores), rounded up.
    pub fn value(self) -> i128 {
        (self.0 + 999).div_euclid(1000)
    }

    pub fn milli(self) -> i128 {
        self.0
    }

    /// Formats a memory or storage amount as the kubelet does (`Ki` when whole kibibytes).
    pub fn format_bytes(self) -> String {
        let bytes = self.value();
        if bytes % 1024 == 0 && bytes != 0 {
            format!("{}Ki", bytes / 1024)
        } else {
            bytes.to_string()
        }
    }

    /// Formats CPU (`4`, or `3800m`).
    pub fn format_cpu(self) -> String {
        if self.0 % 1000 == 0 {
            (self.0 / 1000).to_string()
        } else {
            format!("{}m", self.0)
        }
    }
}

impl std::ops::Sub for Quantity {
    type Output = Quantity;
    fn sub(self, rhs: Quantity) -> Quantity {
        Quantity(self.0.saturating_sub(rhs.0))
    }
}

impl std::ops::Add for Quantity {
    type Output = Quantity;
    fn add(self, rhs: Quantity) -> Quantity {
        Quantity(self.0.saturating_add(rhs.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("4", 4000)]
    #[case("3800m", 3800)]
    #[case("0.5", 500)]
    #[case("1Ki", 1_024_000)]
    #[case("16Gi", 16 * 1024 * 1024 * 1024 * 1000)]
    #[case("500Mi", 500 * 1024 * 1024 * 1000)]
    #[case("1G", 1_000_000_000_000)]
    #[case("1.5Gi", 1536 * 1024 * 1024 * 1000)]
    fn parses(#[case] s: &str, #[case] milli: i128) {
        assert_eq!(Quantity::parse(s), Some(Quantity(milli)));
    }

    #[rstest]
    #[case("")]
    #[case("Gi")]
    #[case("12Zi")]
    #[case("1.2.3")]
    #[case("99999999999999999999999999999999999")]
    fn rejects(#[case] s: &str) {
        assert_eq!(Quantity::parse(s), None);
    }

    #[test]
    fn formats() {
        let mem = Quantity::parse("16Gi").expect("q") - Quantity::parse("2Gi").expect("q");
        assert_eq!(mem.format_bytes(), "14680064Ki");
        assert_eq!(Quantity::parse("3800m").expect("q").format_cpu(), "3800m");
        assert_eq!(Quantity::parse("4").expect("q").format_cpu(), "4");
    }
}
