//! Interrupt tokens: `ow2.hs256.<kid>.<payload>.<mac>`.
//!
//! `payload` is base64url(JSON claims); `mac` is base64url(HMAC-SHA256(secret,
//! "hs256.<kid>.<payload>")). `kid` selects the secret, so several keys can be
//! live at once: the newest active key signs, retired keys still verify until
//! the tokens they signed expire. MACs are compared in constant time.

use crate::clock::Millis;
use crate::error::{EngineError, Result};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use subtle::ConstantTimeEq;

pub const ALG: &str = "hs256";
/// Default token lifetime: 30 minutes (capped at the interrupt's deadline).
pub const DEFAULT_TTL_MS: Millis = 30 * 60 * 1000;

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
    /// expires at, unix millis
    pub e: Millis,
    /// token id, for revocation
    pub j: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningKey {
    pub kid: String,
    pub secret: String,
    /// A retired key verifies but never signs.
    pub retired: bool,
}

/// The live signing keys.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: Vec<SigningKey>,
}

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, material: &str) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    m.update(material.as_bytes());
    m.finalize().into_bytes().to_vec()
}

impl KeyRing {
    pub fn new(keys: Vec<SigningKey>) -> Self {
        KeyRing { keys }
    }

    pub fn keys(&self) -> &[SigningKey] {
        &self.keys
    }

    /// The key that signs new tokens: the last one not retired.
    pub fn signing_key(&self) -> Option<&SigningKey> {
        self.keys.iter().rev().find(|k| !k.retired)
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

    /// Checks grammar, alg, kid and MAC (401 on any failure), then expiry (410).
    pub fn verify(&self, token: &str, now: Millis) -> Result<Claims> {
        let invalid = |why: &str| EngineError::TokenInvalid(format!("interrupt token rejected: {why}"));
        let rest = token
            .strip_prefix("ow2.")
            .ok_or_else(|| invalid("not an ow2 token"))?;
        let parts: Vec<&str> = rest.split('.').collect();
        if parts.len() != 4 {
            return Err(invalid("wrong number of segments"));
        }
        let (alg, kid, payload, tag) = (parts[0], parts[1], parts[2], parts[3]);
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
        if claims.e <= now {
            return Err(EngineError::Expired("this interrupt link has expired".into()));
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        KeyRing::new(vec![
            SigningKey {
                kid: "old".into(),
                secret: "o".repeat(32),
                retired: true,
            },
            SigningKey {
                kid: "k1".into(),
                secret: "s".repeat(32),
                retired: false,
            },
        ])
    }

    fn claims(e: Millis) -> Claims {
        Claims {
            i: "t/0123456789abcdef".into(),
            r: "t/0123456789abcdeg".into(),
            n: "gate".into(),
            p: "ann".into(),
            t: Intent::Resolve,
            e,
            j: "jti".into(),
        }
    }

    fn is_invalid(r: Result<Claims>) -> bool {
        matches!(r, Err(EngineError::TokenInvalid(_)))
    }

    #[test]
    fn round_trip_and_rotation() {
        let r = ring();
        let t = r.sign(&claims(1000)).unwrap();
        assert!(t.starts_with("ow2.hs256.k1."));
        assert_eq!(r.verify(&t, 999).unwrap(), claims(1000));
        // A token from the retired key still verifies.
        let old = KeyRing::new(vec![SigningKey {
            kid: "old".into(),
            secret: "o".repeat(32),
            retired: false,
        }]);
        let t_old = old.sign(&claims(1000)).unwrap();
        assert!(r.verify(&t_old, 0).is_ok());
        // Once the key is removed, its tokens are invalid.
        let newer = KeyRing::new(vec![SigningKey {
            kid: "k1".into(),
            secret: "s".repeat(32),
            retired: false,
        }]);
        assert!(is_invalid(newer.verify(&t_old, 0)));
    }

    #[test]
    fn tamper_matrix() {
        let r = ring();
        let t = r.sign(&claims(1000)).unwrap();
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
                ..claims(1000)
            })
            .unwrap(),
        );
        assert!(is_invalid(r.verify(&with(3, &forged), 0)));
        assert!(is_invalid(r.verify(&with(4, &B64.encode([0u8; 32])), 0)));
        assert!(is_invalid(r.verify(&with(4, "***"), 0)));
        assert!(is_invalid(r.verify("ow2.hs256.nokid.e30.00", 0)));
        assert!(is_invalid(r.verify(&format!("{t}.extra"), 0)));
        assert!(is_invalid(r.verify("tok_random", 0)));
        assert!(matches!(r.verify(&t, 1000), Err(EngineError::Expired(_))));
    }

    #[test]
    fn no_active_key_cannot_sign() {
        let r = KeyRing::new(vec![SigningKey {
            kid: "old".into(),
            secret: "o".repeat(32),
            retired: true,
        }]);
        assert!(r.sign(&claims(1)).is_err());
    }
}
