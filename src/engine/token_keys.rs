//! Token signing keys: the instance operator's, never a tenant's.
//!
//! Two sources share the `token_keys` table. Keys in the configuration's
//! `[[token_keys]]` (source `config`) are synced at every start: a key no
//! longer in the file is deleted, so its links stop verifying. Keys added
//! with the CLI (source `cli`) get a secret generated here, which is never
//! shown. Either kind is activated, retired and revoked with the CLI:
//!
//! - `new`: added, never activated; verifies nothing, signs nothing;
//! - `signing`: the newest activated key; signs new links and verifies;
//! - `verifying`: activated before, superseded; verifies;
//! - `retired`: verifies only links issued before its retirement, until
//!   they expire; never signs again;
//! - `revoked`: verifies nothing, for good.

use super::Engine;
use crate::auth;
use crate::clock::{rfc3339, Millis};
use crate::error::{EngineError, Result};
use crate::store::token_keys::{self as store, KeyChange, KeyRow as Row};
use crate::token::{KeyRing, SigningKey};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKeyState {
    Signing,
    Verifying,
    New,
    Retired,
    Revoked,
}

/// Where a key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKeySource {
    /// `[[token_keys]]` in the configuration file.
    Config,
    /// `tollgate token-key add`.
    Cli,
}

impl TokenKeySource {
    fn as_str(self) -> &'static str {
        match self {
            TokenKeySource::Config => "config",
            TokenKeySource::Cli => "cli",
        }
    }

    fn parse(s: &str) -> TokenKeySource {
        // Rows from before the CLI (`dashboard`) were revoked by a migration.
        if s == "config" {
            TokenKeySource::Config
        } else {
            TokenKeySource::Cli
        }
    }
}

/// A key as listed: never its secret.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TokenKeyRow {
    pub kid: String,
    pub state: TokenKeyState,
    pub source: TokenKeySource,
    pub created_at: String,
    pub activated_at: Option<String>,
    pub retired_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// A token key from the configuration file.
#[derive(Debug, Clone)]
pub struct ConfiguredTokenKey {
    pub kid: String,
    pub secret: String,
    pub retired: bool,
}

/// What a start-time sync changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySync {
    /// Config keys no longer in the file, deleted: their links no longer verify.
    pub removed: Vec<String>,
}

/// The minimum length of a configured secret.
pub const MIN_SECRET_LEN: usize = 32;

struct Stored {
    kid: String,
    secret: String,
    source: TokenKeySource,
    created_at: Millis,
    activated_at: Option<Millis>,
    retired_at: Option<Millis>,
    revoked_at: Option<Millis>,
    state: TokenKeyState,
}

/// Key ids: what fits in one token segment (no dots) and a config file.
pub fn check_kid(field: &str, kid: &str) -> Result<()> {
    let ok = (1..=64).contains(&kid.len())
        && kid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '~'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::validation(
            field,
            format!("kid {kid:?} must match ^[A-Za-z0-9_~-]{{1,64}}$"),
        ))
    }
}

/// Each row's state: the newest activated key that is neither retired nor revoked signs.
fn with_states(rows: Vec<Row>) -> Vec<Stored> {
    let live = |r: &Row| r.4.is_some() && r.5.is_none() && r.6.is_none();
    let signing = rows
        .iter()
        .filter(|r| live(r))
        .max_by_key(|r| (r.4, r.3))
        .map(|r| r.0.clone());
    rows.into_iter()
        .map(
            |(kid, secret, source, created_at, activated_at, retired_at, revoked_at)| {
                let state = if revoked_at.is_some() {
                    TokenKeyState::Revoked
                } else if retired_at.is_some() {
                    TokenKeyState::Retired
                } else if signing.as_deref() == Some(kid.as_str()) {
                    TokenKeyState::Signing
                } else if activated_at.is_some() {
                    TokenKeyState::Verifying
                } else {
                    TokenKeyState::New
                };
                Stored {
                    kid,
                    secret,
                    source: TokenKeySource::parse(&source),
                    created_at,
                    activated_at,
                    retired_at,
                    revoked_at,
                    state,
                }
            },
        )
        .collect()
}

/// The ring of keys that verify, the signing key last.
fn ring_of(rows: Vec<Stored>, max_ttl_ms: Millis) -> KeyRing {
    let mut keys: Vec<(u8, Millis, SigningKey)> = rows
        .into_iter()
        .filter_map(|k| {
            let order = match k.state {
                TokenKeyState::New | TokenKeyState::Revoked => return None,
                TokenKeyState::Retired => 0,
                TokenKeyState::Verifying => 1,
                TokenKeyState::Signing => 2,
            };
            Some((
                order,
                k.activated_at.unwrap_or(0),
                SigningKey {
                    kid: k.kid,
                    secret: k.secret,
                    retired_at: k.retired_at,
                },
            ))
        })
        .collect();
    keys.sort_by_key(|(order, at, _)| (*order, *at));
    KeyRing::new(keys.into_iter().map(|(_, _, k)| k).collect()).with_max_ttl(max_ttl_ms)
}

impl Engine {
    /// Puts the configuration's `[[token_keys]]` into the database and loads
    /// the ring. A key new to the database is activated when added (in file
    /// order, so the last one signs) unless it says `retired`. Config keys
    /// absent from the file are deleted. Retiring and revoking are one-way:
    /// a key retired or revoked with the CLI stays so. A kid added with the
    /// CLI cannot be taken over by the file.
    pub async fn sync_token_keys(
        &self,
        keys: Vec<ConfiguredTokenKey>,
        ttl_ms: Option<Millis>,
    ) -> Result<KeySync> {
        for k in &keys {
            check_kid("token_keys.kid", &k.kid)?;
            if k.secret.len() < MIN_SECRET_LEN {
                return Err(EngineError::validation(
                    "token_keys.secret",
                    format!(
                        "the secret of token key \"{}\" needs at least {MIN_SECRET_LEN} characters",
                        k.kid
                    ),
                ));
            }
        }
        if let Some(ttl) = ttl_ms.filter(|t| *t > 0) {
            *self.inner.token_ttl_ms.write().expect("lock") = ttl;
        }
        let now = self.now();
        let notice = self.peer_message(super::peers::Change::TokenKeys);
        let removed = self
            .inner
            .store
            .write(move |conn| {
                super::peers::notify_in(conn, &notice)?;
                for k in &keys {
                    let source = store::source_of(conn, &k.kid)?;
                    if source.is_some_and(|s| s != "config") {
                        return Err(EngineError::validation(
                            "token_keys.kid",
                            format!(
                                "token key \"{}\" was added with the CLI; give the configured key another kid",
                                k.kid
                            ),
                        ));
                    }
                }
                let mut removed = Vec::new();
                for kid in store::configured_kids(conn)? {
                    if !keys.iter().any(|k| k.kid == kid) {
                        store::delete(conn, &kid)?;
                        removed.push(kid);
                    }
                }
                for (i, k) in keys.iter().enumerate() {
                    // `now + i` keeps the file's order among keys added together.
                    let at = now + i as Millis;
                    store::put_configured(conn, &k.kid, &k.secret, at, k.retired)?;
                }
                Ok(removed)
            })
            .await?;
        self.reload_token_keys().await?;
        Ok(KeySync { removed })
    }

    /// Loads the key ring from the database (the CLI or another instance may have changed it).
    pub async fn reload_token_keys(&self) -> Result<()> {
        let _serial = self.inner.reloading.lock().await;
        let rows = self.token_key_rows().await?;
        let ttl = self.longest_link_ms();
        *self.inner.tokens.write().expect("lock") = ring_of(rows, ttl);
        Ok(())
    }

    async fn token_key_rows(&self) -> Result<Vec<Stored>> {
        let rows = self.inner.store.token_key_rows().await?;
        Ok(with_states(rows))
    }

    /// Every key with its state, without secrets, newest first.
    pub async fn token_keys(&self) -> Result<Vec<TokenKeyRow>> {
        let mut rows = self.token_key_rows().await?;
        rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.kid.cmp(&b.kid)));
        Ok(rows.into_iter().map(row_view).collect())
    }

    /// Adds a key with a generated secret (never shown); with `activate` it
    /// signs new links from now on.
    pub async fn add_token_key(&self, kid: &str, activate: bool) -> Result<TokenKeyRow> {
        check_kid("kid", kid)?;
        let (kid, secret, now) = (kid.to_string(), auth::generate_key(), self.now());
        let k = kid.clone();
        let notice = self.peer_message(super::peers::Change::TokenKeys);
        let inserted = self
            .inner
            .store
            .write(move |conn| {
                super::peers::notify_in(conn, &notice)?;
                store::add(conn, &k, &secret, TokenKeySource::Cli.as_str(), now, activate)
            })
            .await?;
        if !inserted {
            return Err(EngineError::validation(
                "kid",
                format!("a token key \"{kid}\" exists"),
            ));
        }
        self.changed_key(&kid).await
    }

    /// Makes `kid` the signing key. Retired and revoked keys cannot come back.
    pub async fn activate_token_key(&self, kid: &str) -> Result<TokenKeyRow> {
        self.change_token_key(kid, KeyChange::Activate).await
    }

    /// Retires `kid`: it verifies the links it issued before now until they
    /// expire, and never signs again.
    pub async fn retire_token_key(&self, kid: &str) -> Result<TokenKeyRow> {
        self.change_token_key(kid, KeyChange::Retire).await
    }

    /// Revokes `kid`: nothing it signed verifies any more.
    pub async fn revoke_token_key(&self, kid: &str) -> Result<TokenKeyRow> {
        self.change_token_key(kid, KeyChange::Revoke).await
    }

    async fn change_token_key(&self, kid: &str, change: KeyChange) -> Result<TokenKeyRow> {
        let (k, now) = (kid.to_string(), self.now());
        let notice = self.peer_message(super::peers::Change::TokenKeys);
        let changed = self
            .inner
            .store
            .write(move |conn| {
                super::peers::notify_in(conn, &notice)?;
                store::change(conn, &k, change, now)
            })
            .await?;
        if !changed {
            let row = self.token_keys().await?.into_iter().find(|r| r.kid == kid);
            return Err(match row {
                None => EngineError::NotFound(format!("no token key \"{kid}\"")),
                Some(r) => EngineError::Conflict(format!(
                    "token key \"{kid}\" is {}",
                    serde_json::to_value(r.state)?.as_str().unwrap_or("?")
                )),
            });
        }
        self.changed_key(kid).await
    }

    async fn changed_key(&self, kid: &str) -> Result<TokenKeyRow> {
        self.reload_token_keys().await?;
        self.token_keys()
            .await?
            .into_iter()
            .find(|r| r.kid == kid)
            .ok_or_else(|| EngineError::NotFound(format!("no token key \"{kid}\"")))
    }
}

fn row_view(k: Stored) -> TokenKeyRow {
    TokenKeyRow {
        kid: k.kid,
        state: k.state,
        source: k.source,
        created_at: rfc3339(k.created_at),
        activated_at: k.activated_at.map(rfc3339),
        retired_at: k.retired_at.map(rfc3339),
        revoked_at: k.revoked_at.map(rfc3339),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kid: &str, created: Millis, a: Option<Millis>, r: Option<Millis>, x: Option<Millis>) -> Row {
        (kid.into(), "s".repeat(32), "cli".into(), created, a, r, x)
    }

    #[test]
    fn states_and_ring() {
        let rows = with_states(vec![
            row("new", 1, None, None, None),
            row("old", 1, Some(1), None, None),
            row("cur", 2, Some(5), None, None),
            row("ret", 1, Some(2), Some(3), None),
            row("rev", 1, Some(3), Some(4), Some(4)),
        ]);
        let state = |kid: &str| rows.iter().find(|r| r.kid == kid).unwrap().state;
        assert_eq!(state("new"), TokenKeyState::New);
        assert_eq!(state("old"), TokenKeyState::Verifying);
        assert_eq!(state("cur"), TokenKeyState::Signing);
        assert_eq!(state("ret"), TokenKeyState::Retired);
        assert_eq!(state("rev"), TokenKeyState::Revoked);
        let ring = ring_of(rows, 1000);
        let kids: Vec<&str> = ring.keys().iter().map(|k| k.kid.as_str()).collect();
        assert_eq!(kids, ["ret", "old", "cur"], "new and revoked keys do not verify");
        assert_eq!(ring.signing_key().unwrap().kid, "cur");
        assert_eq!(ring.keys()[0].retired_at, Some(3));
    }

    #[test]
    fn kids() {
        assert!(check_kid("kid", "k-2026_1").is_ok());
        assert!(check_kid("kid", "k.1").is_err(), "a dot would split the token");
        assert!(check_kid("kid", "").is_err());
        assert!(check_kid("kid", "a.b/c").is_err());
        assert!(check_kid("kid", "anon:x").is_err());
    }
}
