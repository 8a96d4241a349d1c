//! The instance's token signing keys as stored.

use super::{Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::error::Result;

/// (kid, secret, source, created_at, activated_at, retired_at, revoked_at).
pub(crate) type KeyRow = (
    String,
    String,
    String,
    Millis,
    Option<Millis>,
    Option<Millis>,
    Option<Millis>,
);

/// A change of one key's state.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyChange {
    /// Signs new links from now on (not once retired or revoked).
    Activate,
    /// Verifies what it signed until that expires; never signs again.
    Retire,
    /// Nothing it signed verifies any more.
    Revoke,
}

/// Where a key came from (`config` or `cli`), if it is stored.
pub(crate) fn source_of(conn: &WriteConn, kid: &str) -> Result<Option<String>> {
    conn.query_scalar("SELECT source FROM token_keys WHERE kid = ?", args![kid])
}

/// The kids of the keys the configuration put there.
pub(crate) fn configured_kids(conn: &WriteConn) -> Result<Vec<String>> {
    conn.query_map("SELECT kid FROM token_keys WHERE source = 'config'", &[], |r| {
        r.get(0)
    })
}

pub(crate) fn delete(conn: &WriteConn, kid: &str) -> Result<()> {
    conn.execute("DELETE FROM token_keys WHERE kid = ?", args![kid])?;
    Ok(())
}

/// Stores a configured key (created at `at`; retired at once when the file
/// says so); an existing key gets the file's secret and stays retired once it was.
pub(crate) fn put_configured(
    conn: &WriteConn,
    kid: &str,
    secret: &str,
    at: Millis,
    retired: bool,
) -> Result<()> {
    conn.execute(
        "INSERT INTO token_keys (kid, secret, source, created_at, activated_at, retired_at) \
         VALUES (?1, ?2, 'config', ?3, CASE WHEN ?4 <> 0 THEN NULL ELSE ?3 END, CASE WHEN ?4 <> 0 THEN ?3 END) \
         ON CONFLICT (kid) DO UPDATE SET secret = excluded.secret, \
         retired_at = COALESCE(token_keys.retired_at, excluded.retired_at)",
        args![kid, secret, at, retired],
    )?;
    Ok(())
}

/// Adds a key; false when the kid is taken.
pub(crate) fn add(
    conn: &WriteConn,
    kid: &str,
    secret: &str,
    source: &str,
    now: Millis,
    activate: bool,
) -> Result<bool> {
    Ok(conn.execute(
        "INSERT INTO token_keys (kid, secret, source, created_at, activated_at, retired_at) \
         VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (kid) DO NOTHING",
        args![kid, secret, source, now, activate.then_some(now)],
    )? == 1)
}

/// Applies `change` at `now`; false when the key is missing or its state does not allow it.
pub(crate) fn change(conn: &WriteConn, kid: &str, change: KeyChange, now: Millis) -> Result<bool> {
    let sql = match change {
        KeyChange::Activate => {
            "UPDATE token_keys SET activated_at = ? WHERE kid = ? AND retired_at IS NULL AND revoked_at IS NULL"
        }
        KeyChange::Retire => {
            "UPDATE token_keys SET retired_at = ? WHERE kid = ? AND retired_at IS NULL AND revoked_at IS NULL"
        }
        KeyChange::Revoke => {
            "UPDATE token_keys SET revoked_at = ?1, retired_at = COALESCE(retired_at, ?1) WHERE kid = ?2 AND revoked_at IS NULL"
        }
    };
    Ok(conn.execute(sql, args![now, kid])? == 1)
}

impl Store {
    pub(crate) async fn token_key_rows(&self) -> Result<Vec<KeyRow>> {
        Ok(sqlx::query_as(&self.q(
            "SELECT kid, secret, source, created_at, activated_at, retired_at, revoked_at FROM token_keys",
        ))
        .fetch_all(&self.read)
        .await?)
    }
}
