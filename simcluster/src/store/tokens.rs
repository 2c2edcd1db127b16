//! Service-account tokens issued through `TokenRequest` (`serviceaccounts/token`), kept in
//! memory with what the API server needs to take them back: the ServiceAccount's uid, the
//! audiences, the expiry and the object the token may be bound to.
//!
//! The tokens have the shape of the API server's own (`header.payload.signature`, each part
//! base64url without padding; the payload carries the standard claims `iss`, `sub`, `aud`,
//! `exp`, `iat`, `nbf`, `jti` and the `kubernetes.io` claim naming the namespace, the
//! ServiceAccount and its uid). The header names RS256 as upstream's do, but the signature is 32
//! random bytes: the bundled cluster recognises its tokens by looking them up here, not by
//! verifying a signature, so a token is only ever valid against the cluster that issued it.

use std::collections::HashMap;
use std::sync::RwLock;

use base64::Engine as _;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;

/// The issuer of the tokens and the audience of the API server (kubeadm's defaults).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The object a token is bound to (`spec.boundObjectRef`): the token dies with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    pub kind: String,
    pub name: String,
    pub uid: String,
}

/// What a token was issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// The ServiceAccount's uid when the token was issued (a re-created account has another).
    pub uid: String,
    pub audiences: Vec<String>,
    pub issued_at: DateTime<Utc>,
    pub expires: DateTime<Utc>,
    pub bound: Option<BoundObject>,
}

impl Issued {
    /// `system:serviceaccount:NS:NAME`, the username the token authenticates as.
    pub fn username(&self) -> String {
        format!("system:serviceaccount:{}:{}", self.namespace, self.name)
    }
}

/// The tokens a cluster issued, by token text.
#[derive(Debug)]
pub struct TokenBook {
    /// The `kid` of every token's header (one signing key per cluster, as upstream).
    key_id: String,
    issued: RwLock<HashMap<String, Issued>>,
}

impl Default for TokenBook {
    fn default() -> Self {
        Self {
            key_id: random_b64(32),
            issued: RwLock::new(HashMap::new()),
        }
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// `n` random bytes (from v4 UUIDs), base64url.
fn random_b64(n: usize) -> String {
    let mut bytes = Vec::with_capacity(n + 16);
    while bytes.len() < n {
        bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    bytes.truncate(n);
    b64(&bytes)
}

impl TokenBook {
    /// Issues a token for `what` (its `issued_at`/`expires` as given) and remembers it.
    /// Tokens already expired are forgotten on the way.
    pub fn issue(&self, what: Issued) -> String {
        let jti = uuid::Uuid::new_v4().to_string();
        let mut k8s = json!({
            "namespace": what.namespace,
            "serviceaccount": {"name": what.name, "uid": what.uid},
        });
        if let Some(b) = &what.bound {
            k8s[b.kind.to_ascii_lowercase()] = json!({"name": b.name, "uid": b.uid});
        }
        let claims = json!({
            "aud": what.audiences,
            "exp": what.expires.timestamp(),
            "iat": what.issued_at.timestamp(),
            "iss": ISSUER,
            "jti": jti,
            "kubernetes.io": k8s,
            "nbf": what.issued_at.timestamp(),
            "sub": what.username(),
        });
        let header = json!({"alg": "RS256", "kid": self.key_id});
        let token = format!(
            "{}.{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes()),
            random_b64(32)
        );
        let now = Utc::now();
        let mut issued = self.issued.write().unwrap_or_else(|p| p.into_inner());
        issued.retain(|_, t| t.expires > now);
        issued.insert(token.clone(), what);
        token
    }

    /// What `token` was issued for, expired or not; None for a token this cluster never issued.
    pub fn lookup(&self, token: &str) -> Option<Issued> {
        if token.split('.').count() != 3 {
            return None;
        }
        self.issued
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
            .cloned()
    }

    /// Makes `token` expire now. Issued tokens live at least ten minutes (the API's minimum), so
    /// tests of expiry use this instead of waiting. Returns whether the token was known.
    #[doc(hidden)]
    pub fn expire(&self, token: &str) -> bool {
        let mut issued = self.issued.write().unwrap_or_else(|p| p.into_inner());
        match issued.get_mut(token) {
            Some(t) => {
                t.expires = Utc::now() - Duration::seconds(1);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The claims of a token's payload (None when it is not JWT-shaped).
    fn claims(token: &str) -> Option<Value> {
        let payload = token.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    fn account() -> Issued {
        let now = Utc::now();
        Issued {
            namespace: "mixcheck".into(),
            name: "runner".into(),
            uid: "u-1".into(),
            audiences: vec![ISSUER.into()],
            issued_at: now,
            expires: now + Duration::seconds(3600),
            bound: None,
        }
    }

    #[test]
    fn tokens_are_jwt_shaped_with_the_standard_claims() {
        let book = TokenBook::default();
        let what = account();
        let token = book.issue(what.clone());
        assert_eq!(token.split('.').count(), 3);
        assert!(token.starts_with("eyJ"), "{token}");
        let c = claims(&token).expect("claims");
        assert_eq!(c["sub"], "system:serviceaccount:mixcheck:runner");
        assert_eq!(c["iss"], ISSUER);
        assert_eq!(c["aud"], json!([ISSUER]));
        assert_eq!(c["exp"], what.expires.timestamp());
        assert_eq!(c["iat"], what.issued_at.timestamp());
        assert_eq!(c["nbf"], what.issued_at.timestamp());
        assert!(c["jti"].as_str().is_some_and(|j| j.len() == 36));
        assert_eq!(c["kubernetes.io"]["namespace"], "mixcheck");
        assert_eq!(
            c["kubernetes.io"]["serviceaccount"],
            json!({"name": "runner", "uid": "u-1"})
        );
        assert_eq!(book.lookup(&token), Some(what));
    }

    #[test]
    fn every_token_is_different_and_unknown_ones_are_none() {
        let book = TokenBook::default();
        let a = book.issue(account());
        let b = book.issue(account());
        assert_ne!(a, b);
        assert!(book.lookup("not-a-token").is_none());
        assert!(book.lookup("a.b.c").is_none());
        // The same claims with another signature is another (unknown) token.
        let forged = format!("{}.{}", a.rsplit_once('.').map(|(h, _)| h).unwrap_or(""), "AAAA");
        assert!(book.lookup(&forged).is_none());
    }

    #[test]
    fn expiry_is_recorded_and_expired_tokens_are_forgotten_later() {
        let book = TokenBook::default();
        let token = book.issue(account());
        assert!(book.expire(&token));
        assert!(book.lookup(&token).is_some_and(|t| t.expires < Utc::now()));
        let _other = book.issue(account());
        assert!(book.lookup(&token).is_none(), "pruned on the next issue");
        assert!(!book.expire("unknown"));
    }
}
