//! `Idempotency-Key` records: the outcome of the first request with a key,
//! replayed for every later one with the same key.

use super::{Dialect, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::error::Result;

/// On PostgreSQL, waits for any other transaction holding the same key (two
/// instances given it at once: the second replays the first's record).
pub(crate) fn lock_key(conn: &WriteConn, tenant: &str, operation: &str, key: &str) -> Result<()> {
    if conn.dialect() == Dialect::Postgres {
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(? || '/' || ? || '/' || ?, 0))",
            args![tenant, operation, key],
        )?;
    }
    Ok(())
}

/// The stored (request digest, outcome JSON) of a key.
pub(crate) fn record(
    conn: &WriteConn,
    tenant: &str,
    operation: &str,
    key: &str,
) -> Result<Option<(String, String)>> {
    conn.query_opt(
        "SELECT digest, outcome FROM idempotency WHERE tenant = ? AND operation = ? AND key = ?",
        args![tenant, operation, key],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
}

/// Stores a key's first outcome.
pub(crate) fn keep(
    conn: &WriteConn,
    tenant: &str,
    operation: &str,
    key: &str,
    digest: &str,
    outcome: &str,
    now: Millis,
) -> Result<()> {
    conn.execute(
        "INSERT INTO idempotency (tenant, operation, key, digest, outcome, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        args![tenant, operation, key, digest, outcome, now],
    )?;
    Ok(())
}
