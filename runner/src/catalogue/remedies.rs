//! The remedy paragraphs several checks share (`suites/remedies.yaml`), and a check's remedy
//! ([`Remedy`]): its own text, the shared paragraphs it names with `see:`, or both — resolved
//! once when the suites load, so a paragraph is written in one place.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::catalogue::document::{API_VERSION, SuiteError, from_yaml};

/// The embedded remedies file.
pub const EMBEDDED: &str = include_str!("../../../suites/remedies.yaml");
/// Its file name, in `suites/` and in a `--suites` folder.
pub const FILE_NAME: &str = "remedies.yaml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: String,
    kind: String,
    remedies: BTreeMap<String, String>,
}

/// The shared remedy paragraphs by id.
#[derive(Debug, Clone, Default)]
pub struct Remedies {
    by_id: BTreeMap<String, String>,
}

impl Remedies {
    /// The embedded paragraphs, with those of `extra/remedies.yaml` (if there is one) added or
    /// replacing theirs by id.
    pub fn load(extra: Option<&Path>) -> Result<Self, SuiteError> {
        let mut remedies = Self::parse(EMBEDDED, "suites/remedies.yaml (embedded)")?;
        if let Some(path) = extra.map(|d| d.join(FILE_NAME)).filter(|p| p.is_file()) {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|cause| SuiteError::Read {
                path: shown.clone(),
                cause,
            })?;
            remedies.by_id.extend(Self::parse(&text, &shown)?.by_id);
        }
        Ok(remedies)
    }

    fn parse(text: &str, origin: &str) -> Result<Self, SuiteError> {
        let file: File = from_yaml(text, origin)?;
        let invalid = |message: String| SuiteError::Invalid {
            path: origin.to_string(),
            message,
        };
        if file.api_version != API_VERSION {
            return Err(invalid(format!(
                "apiVersion {:?} is not supported (expected {API_VERSION:?})",
                file.api_version
            )));
        }
        if file.kind != "Remedies" {
            return Err(invalid(format!("kind {:?} must be \"Remedies\"", file.kind)));
        }
        let by_id = file
            .remedies
            .into_iter()
            .map(|(id, text)| (id, text.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect();
        Ok(Self { by_id })
    }

    /// The paragraph with this id.
    pub fn get(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.by_id.keys().map(String::as_str)
    }
}

/// A check's remedy for one failure class: a text, or `{text, see: [ids]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Remedy {
    Text(String),
    Shared {
        #[serde(default)]
        text: Option<String>,
        see: Vec<String>,
    },
    /// Resolved: the text a report shows.
    #[serde(skip)]
    Resolved(String),
}

impl Remedy {
    /// The whole text: the check's own words, then the paragraphs it names.
    pub fn resolve(&self, remedies: &Remedies) -> Result<Remedy, String> {
        Ok(Remedy::Resolved(match self {
            Remedy::Text(t) | Remedy::Resolved(t) => t.trim().to_string(),
            Remedy::Shared { text, see } => {
                let mut parts: Vec<String> = text.iter().map(|t| t.trim().to_string()).collect();
                for id in see {
                    let known = || remedies.ids().collect::<Vec<_>>().join(", ");
                    let p = remedies
                        .get(id)
                        .ok_or_else(|| format!("remedy {id:?} is not in remedies.yaml (known: {})", known()))?;
                    parts.push(p.to_string());
                }
                parts.join(" ")
            }
        }))
    }

    /// The text a report shows (a remedy not resolved yet shows its own words).
    pub fn text(&self) -> &str {
        match self {
            Remedy::Text(t) | Remedy::Resolved(t) => t,
            Remedy::Shared { text, .. } => text.as_deref().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_paragraphs_are_resolved_after_the_checks_own_words() {
        let remedies = Remedies::load(None).expect("embedded remedies");
        let r = Remedy::Shared {
            text: Some("Check the routes between nodes.".into()),
            see: vec!["mac-spoofing".into(), "vxlan-params".into()],
        };
        let text = r.resolve(&remedies).expect("known ids").text().to_string();
        assert!(
            text.starts_with("Check the routes between nodes. On l2bridge"),
            "{text}"
        );
        assert!(
            text.contains("-MacAddressSpoofing On") && text.ends_with("(NET-FLANNEL-VXLAN-PARAMS)."),
            "{text}"
        );
        let unknown = Remedy::Shared {
            text: None,
            see: vec!["gremlins".into()],
        };
        let err = unknown.resolve(&remedies).expect_err("unknown id");
        assert!(err.contains("\"gremlins\"") && err.contains("mac-spoofing"), "{err}");
    }

    #[test]
    fn a_remedies_file_in_the_suites_folder_adds_and_replaces_paragraphs() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(FILE_NAME),
            "apiVersion: mixcheck/v1\nkind: Remedies\nremedies:\n  mac-spoofing: Ours.\n  site-vpn: Check the VPN.\n",
        )
        .expect("write");
        let r = Remedies::load(Some(dir.path())).expect("load");
        assert_eq!(r.get("mac-spoofing"), Some("Ours."));
        assert_eq!(r.get("site-vpn"), Some("Check the VPN."));
        assert!(r.get("vxlan-params").is_some());
        std::fs::write(
            dir.path().join(FILE_NAME),
            "apiVersion: mixcheck/v1\nkind: Remedies\nremedies: [1]\n",
        )
        .expect("write");
        let err = Remedies::load(Some(dir.path())).expect_err("malformed").to_string();
        assert!(err.contains("remedies.yaml:3:"), "{err}");
    }
}
