//! API keys and scopes. Keys are random secrets stored only as SHA-256
//! digests; each belongs to a principal and carries scopes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "runs:create")]
    RunsCreate,
    #[serde(rename = "runs:read")]
    RunsRead,
    #[serde(rename = "runs:cancel")]
    RunsCancel,
    #[serde(rename = "approvals:respond")]
    ApprovalsRespond,
    #[serde(rename = "admin")]
    Admin,
    /// Create runs for another person of the tenant (`createRun.requestedBy`).
    #[serde(rename = "runs:on-behalf")]
    RunsOnBehalf,
}

pub const ALL_SCOPES: [Scope; 6] = [
    Scope::RunsCreate,
    Scope::RunsRead,
    Scope::RunsCancel,
    Scope::ApprovalsRespond,
    Scope::Admin,
    Scope::RunsOnBehalf,
];

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::RunsCreate => "runs:create",
            Scope::RunsRead => "runs:read",
            Scope::RunsCancel => "runs:cancel",
            Scope::ApprovalsRespond => "approvals:respond",
            Scope::Admin => "admin",
            Scope::RunsOnBehalf => "runs:on-behalf",
        }
    }
    pub fn parse(s: &str) -> Option<Scope> {
        ALL_SCOPES.into_iter().find(|x| x.as_str() == s)
    }
}

/// Parses a space- or comma-separated scope list; names the first unknown one.
pub fn parse_scopes(list: &[String]) -> Result<Vec<Scope>, String> {
    let mut out = Vec::new();
    for s in list
        .iter()
        .flat_map(|s| s.split([' ', ',']))
        .filter(|s| !s.is_empty())
    {
        let scope = Scope::parse(s).ok_or_else(|| format!("unknown scope \"{s}\""))?;
        if !out.contains(&scope) {
            out.push(scope);
        }
    }
    Ok(out)
}

/// The stored form of an API key: its SHA-256 in lowercase hex (every
/// API request computes it, hence the slice encoder rather than a char iterator).
pub fn hash_key(key: &str) -> String {
    let mut text = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(key.as_bytes()), &mut text).expect("64 hex digits for 32 bytes");
    std::str::from_utf8(&text).expect("hex is ASCII").to_owned()
}

/// A new API key: `tg_` and 32 random bytes, base64url.
pub fn generate_key() -> String {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    format!(
        "tg_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// An authenticated API key's grant.
#[derive(Debug, Clone)]
pub struct Grant {
    pub principal_id: String,
    pub scopes: Vec<Scope>,
}

impl Grant {
    /// `admin` implies every other scope.
    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope) || self.scopes.contains(&Scope::Admin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_admin_implies_all() {
        let s = parse_scopes(&["runs:create runs:read".into(), "approvals:respond".into()]).unwrap();
        assert_eq!(
            s,
            vec![Scope::RunsCreate, Scope::RunsRead, Scope::ApprovalsRespond]
        );
        assert!(parse_scopes(&["runs:write".into()])
            .unwrap_err()
            .contains("runs:write"));
        let admin = Grant {
            principal_id: "a".into(),
            scopes: vec![Scope::Admin],
        };
        assert!(admin.allows(Scope::RunsCancel));
        let reader = Grant {
            principal_id: "r".into(),
            scopes: vec![Scope::RunsRead],
        };
        assert!(!reader.allows(Scope::RunsCreate));
    }

    #[test]
    fn keys_are_unique_and_hashed() {
        let a = generate_key();
        let b = generate_key();
        assert_ne!(a, b);
        assert_eq!(hash_key(&a).len(), 64);
        // Keys stored before keep working: the same lowercase hex of SHA-256.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(hash_key(&a), a);
    }
}
