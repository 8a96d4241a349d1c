//! Interrupt tokens: `ow2.hs256.<kid>.<payload>.<mac>`.
//!
//! `payload` is base64url(JSON claims); `mac` is base64url(HMAC-SHA256(secret,
//! "hs256.<kid>.<payload>")). `kid` selects the secret, so several keys can be
//! live at once. MACs are compared in constant time.
//!
//! The ring holds only keys that may verify: the signing key, keys it
//! superseded, and retired keys. A retired key verifies only tokens issued
//! (claim `a`) before its retirement; keys never activated and revoked keys
//! are not in the ring, so their tokens are unknown (401). No token lives
//! longer than the ring's maximum lifetime, so a retired key stops verifying
//! anything that long after its retirement.

use crate::clock::Millis;
use crate::error::{EngineError, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub const ALG: &str = "hs256";
/// Default lifetime of a link handed out over the API or CLI: 30 minutes
/// (capped at the interrupt's deadline).
pub const DEFAULT_TTL_MS: Millis = 30 * 60 * 1000;
/// A mailed link's default lifetime: a day (capped at the interrupt's deadline).
pub const DEFAULT_MAIL_LINK_TTL_MS: Millis = 24 * 60 * 60_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// May inspect and resolve.
    Resolve,
    /// May only inspect.
    Inspect,
}

/// What a token says. Short names keep links short.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// interrupt id
    pub i: String,
    /// run id
    pub r: String,
    /// node id
    pub n: String,
    /// recipient principal id
    pub p: String,
    /// intent
    pub t: Intent,
    /// issued at, unix millis (checked against the key's retirement)
    pub a: Millis,
    /// expires at, unix millis
    pub e: Millis,
    /// token id, for revocation
    pub j: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningKey {
    pub kid: String,
    pub secret: String,
    /// When the key was retired: it verifies only tokens issued before, and
    /// never signs. `None`: the key may sign.
    pub retired_at: Option<Millis>,
}

/// The keys that verify, the signing one last among those not retired.
#[derive(Debug, Clone)]
pub struct KeyRing {
    keys: Vec<SigningKey>,
    max_ttl_ms: Millis,
}

impl Default for KeyRing {
    fn default() -> Self {
        KeyRing::new(Vec::new())
    }
}

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, material: &str) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    m.update(material.as_bytes());
    m.finalize().into_bytes().to_vec()
}

impl KeyRing {
    /// A ring with the default maximum lifetime ([`DEFAULT_TTL_MS`]).
    pub fn new(keys: Vec<SigningKey>) -> Self {
        KeyRing {
            keys,
            max_ttl_ms: DEFAULT_TTL_MS,
        }
    }

    /// Tokens whose lifetime (`e - a`) exceeds `ttl_ms` are refused.
    pub fn with_max_ttl(mut self, ttl_ms: Millis) -> Self {
        self.max_ttl_ms = ttl_ms.max(1);
        self
    }

    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    pub fn max_ttl_ms(&self) -> Millis {
        self.max_ttl_ms
    }

    /// The key that signs new tokens: the last one not retired.
    pub fn signing_key(&self) -> Option<&SigningKey> {
        self.keys.iter().rev().find(|k| k.retired_at.is_none())
    }

    pub fn sign(&self, claims: &Claims) -> Result<String> {
        let key = self
            .signing_key()
            .ok_or_else(|| EngineError::Conflict("no active token signing key is configured".into()))?;
        let payload = B64.encode(serde_json::to_vec(claims)?);
        let material = format!("{ALG}.{}.{payload}", key.kid);
        let tag = B64.encode(mac(&key.secret, &material));
        Ok(format!("ow2.{material}.{tag}"))
    }

    /// Checks grammar, alg, kid, MAC, lifetime and the key's retirement (401
    /// on any failure), then expiry (410).
    pub fn verify(&self, token: &str, now: Millis) -> Result<Claims> {
        let invalid = |why: &str| EngineError::TokenInvalid(format!("interrupt token rejected: {why}"));
        let (alg, kid, payload, tag) = split(token).ok_or_else(|| invalid("not an ow2 token"))?;
        if alg != ALG {
            return Err(invalid("unsupported alg"));
        }
        let key = self
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .ok_or_else(|| invalid("unknown kid"))?;
        let given = B64.decode(tag).map_err(|_| invalid("malformed mac"))?;
        let expected = mac(&key.secret, &format!("{alg}.{kid}.{payload}"));
        if given.len() != expected.len() || !bool::from(given.ct_eq(&expected)) {
            return Err(invalid("bad mac"));
        }
        let bytes = B64.decode(payload).map_err(|_| invalid("malformed payload"))?;
        let claims: Claims = serde_json::from_slice(&bytes).map_err(|_| invalid("malformed claims"))?;
        if claims.e < claims.a || claims.e - claims.a > self.max_ttl_ms {
            return Err(invalid("lifetime exceeds the allowed maximum"));
        }
        if key.retired_at.is_some_and(|r| claims.a >= r) {
            return Err(invalid("issued after its key was retired"));
        }
        if claims.e <= now {
            return Err(EngineError::Expired("this interrupt link has expired".into()));
        }
        Ok(claims)
    }
}

/// `ow2.<alg>.<kid>.<payload>.<mac>` split into its four parts.
fn split(token: &str) -> Option<(&str, &str, &str, &str)> {
    let parts: Vec<&str> = token.strip_prefix("ow2.")?.split('.').collect();
    match parts.as_slice() {
        [alg, kid, payload, tag] => Some((*alg, *kid, *payload, *tag)),
        _ => None,
    }
}

/// A name for a token that cannot be used as one: the start of its SHA-256
/// digest (for idempotency records and logs).
pub fn fingerprint(token: &str) -> String {
    hex::encode(&Sha256::digest(token.as_bytes())[..12])
}

/// What a stored message shows in place of a link's token: its id.
fn placeholder(jti: Option<&str>) -> String {
    format!("[link {}]", jti.unwrap_or("?"))
}

/// The token id a token claims, read without verifying it (only to name it).
fn claimed_jti(token: &str) -> Option<String> {
    let (_, _, payload, _) = split(token)?;
    let bytes = B64.decode(payload).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let j = v.get("j")?.as_str()?;
    // Only an id-shaped value is echoed.
    (j.len() <= 64
        && j.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| j.to_string())
}

/// Replaces every token in `text` by `[link <jti>]`, so stored messages and
/// logs never carry a usable link.
pub fn redact(text: &str) -> String {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '~');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("ow2.") {
        // Only at a word boundary: `xow2.` is not a token start.
        let boundary = rest[..at].chars().next_back().is_none_or(|c| !is_token_char(c));
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let len = tail.find(|c: char| !is_token_char(c)).unwrap_or(tail.len());
        // A token never ends in a dot: a full stop after a link stays.
        let candidate = tail[..len].trim_end_matches('.');
        let len = candidate.len();
        if boundary {
            out.push_str(&placeholder(claimed_jti(candidate).as_deref()));
        } else {
            out.push_str(candidate);
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETIRED_AT: Millis = 500;

    fn ring() -> KeyRing {
        KeyRing::new(vec![
            SigningKey {
                kid: "old".into(),
                secret: "o".repeat(32),
                retired_at: Some(RETIRED_AT),
            },
            SigningKey {
                kid: "k1".into(),
                secret: "s".repeat(32),
                retired_at: None,
            },
        ])
        .with_max_ttl(1000)
    }

    fn claims(a: Millis, e: Millis) -> Claims {
        Claims {
            i: "t/0123456789abcdef".into(),
            r: "t/0123456789abcdeg".into(),
            n: "gate".into(),
            p: "ann".into(),
            t: Intent::Resolve,
            a,
            e,
            j: "jti".into(),
        }
    }

    fn signed_by(kid: &str, secret: &str, c: &Claims) -> String {
        KeyRing::new(vec![SigningKey {
            kid: kid.into(),
            secret: secret.into(),
            retired_at: None,
        }])
        .sign(c)
        .unwrap()
    }

    fn is_invalid(r: Result<Claims>) -> bool {
        matches!(r, Err(EngineError::TokenInvalid(_)))
    }

    #[test]
    fn round_trip_and_rotation() {
        let r = ring();
        let t = r.sign(&claims(0, 1000)).unwrap();
        assert!(t.starts_with("ow2.hs256.k1."));
        assert_eq!(r.verify(&t, 999).unwrap(), claims(0, 1000));
        // The retired key verifies what it signed before its retirement…
        let before = signed_by("old", &"o".repeat(32), &claims(RETIRED_AT - 1, 1000));
        assert!(r.verify(&before, 0).is_ok());
        // …and nothing issued at or after it.
        let after = signed_by("old", &"o".repeat(32), &claims(RETIRED_AT, 1000));
        assert!(is_invalid(r.verify(&after, 0)));
        // Once the key is out of the ring, its tokens are invalid.
        let newer = KeyRing::new(vec![SigningKey {
            kid: "k1".into(),
            secret: "s".repeat(32),
            retired_at: None,
        }]);
        assert!(is_invalid(newer.verify(&before, 0)));
    }

    #[test]
    fn lifetime_is_capped() {
        let r = ring();
        // A retired key cannot mint a long-lived token dated before its retirement.
        let long = signed_by("old", &"o".repeat(32), &claims(0, 5000));
        assert!(is_invalid(r.verify(&long, 0)));
        let backwards = r.sign(&claims(900, 800)).unwrap();
        assert!(is_invalid(r.verify(&backwards, 0)));
        let exact = r.sign(&claims(0, 1000)).unwrap();
        assert!(r.verify(&exact, 0).is_ok());
    }

    #[test]
    fn tamper_matrix() {
        let r = ring();
        let t = r.sign(&claims(0, 1000)).unwrap();
        let parts: Vec<&str> = t.split('.').collect();
        let with = |i: usize, v: &str| {
            let mut p = parts.clone();
            p[i] = v;
            p.join(".")
        };
        assert!(is_invalid(r.verify(&with(0, "ow1"), 0)));
        assert!(is_invalid(r.verify(&with(1, "hs512"), 0)));
        assert!(is_invalid(r.verify(&with(2, "nokid"), 0)));
        assert!(is_invalid(r.verify(&with(2, "old"), 0)), "right mac, wrong kid");
        let forged = B64.encode(
            serde_json::to_vec(&Claims {
                p: "mallory".into(),
                ..claims(0, 1000)
            })
            .unwrap(),
        );
        assert!(is_invalid(r.verify(&with(3, &forged), 0)));
        assert!(is_invalid(r.verify(&with(4, &B64.encode([0u8; 32])), 0)));
        assert!(is_invalid(r.verify(&with(4, "***"), 0)));
        assert!(is_invalid(r.verify("ow2.hs256.nokid.e30.00", 0)));
        assert!(is_invalid(r.verify(&format!("{t}.extra"), 0)));
        assert!(is_invalid(r.verify("tok_random", 0)));
        // Claims without an issue time are refused.
        let no_iat = B64.encode(br#"{"i":"x","r":"y","n":"g","p":"ann","t":"resolve","e":1000,"j":"j"}"#);
        let material = format!("hs256.k1.{no_iat}");
        let tag = B64.encode(mac(&"s".repeat(32), &material));
        assert!(is_invalid(r.verify(&format!("ow2.{material}.{tag}"), 0)));
        assert!(matches!(r.verify(&t, 1000), Err(EngineError::Expired(_))));
    }

    #[test]
    fn no_active_key_cannot_sign() {
        let r = KeyRing::new(vec![SigningKey {
            kid: "old".into(),
            secret: "o".repeat(32),
            retired_at: Some(1),
        }]);
        assert!(r.sign(&claims(0, 1)).is_err());
    }

    #[test]
    fn redaction_leaves_only_the_token_id() {
        let r = ring();
        let t = r.sign(&claims(0, 1000)).unwrap();
        let text = format!("Open this link:\nhttps://h/t/{t}\n\nor {t}. Thanks; xow2.not");
        let shown = redact(&text);
        assert!(!shown.contains(&t), "{shown}");
        assert!(!shown.contains("ow2.hs256"), "{shown}");
        assert_eq!(
            shown,
            "Open this link:\nhttps://h/t/[link jti]\n\nor [link jti]. Thanks; xow2.not"
        );
        assert_eq!(redact("no links"), "no links");
        assert_eq!(redact("ow2.garbage"), "[link ?]");
        assert_ne!(fingerprint(&t), fingerprint("other"));
        assert!(!fingerprint(&t).contains("ow2"));
    }
}
