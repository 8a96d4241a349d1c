//! Workflow definitions as stored: each version by content digest, and
//! which version is current for a (tenant, workflow id).

use super::{Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::error::Result;

/// One current definition: (tenant, workflow id, digest, definition JSON).
pub(crate) type Registered = (String, String, String, String);

/// Stores a version (once per digest) and makes it current for (`tenant`, `id`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn register(
    conn: &WriteConn,
    tenant: &str,
    id: &str,
    digest: &str,
    definition: &str,
    version: &str,
    name: &str,
    now: Millis,
) -> Result<()> {
    conn.execute(
        "INSERT INTO workflow_versions (digest, workflow_id, definition, registered_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        args![digest, id, definition, now],
    )?;
    conn.execute(
        "INSERT INTO workflows (tenant, id, digest, version, name, registered_at) VALUES (?, ?, ?, ?, ?, ?) \
         ON CONFLICT (tenant, id) DO UPDATE SET digest = excluded.digest, version = excluded.version, name = excluded.name, registered_at = excluded.registered_at",
        args![tenant, id, digest, version, name, now],
    )?;
    Ok(())
}

/// The definition stored under `digest`, read inside a command.
pub(crate) fn version(conn: &WriteConn, digest: &str) -> Result<Option<String>> {
    conn.query_scalar(
        "SELECT definition FROM workflow_versions WHERE digest = ?",
        args![digest],
    )
}

impl Store {
    /// Every current definition of every tenant.
    pub(crate) async fn registered(&self) -> Result<Vec<Registered>> {
        Ok(sqlx::query_as(&self.q(
            "SELECT w.tenant, w.id, w.digest, v.definition FROM workflows w JOIN workflow_versions v ON v.digest = w.digest",
        ))
        .fetch_all(&self.read)
        .await?)
    }

    /// The current definitions under `id` of `tenants` (a cache miss, read
    /// again: another instance may have registered it a moment ago).
    pub(crate) async fn registered_as(&self, tenants: [&str; 2], id: &str) -> Result<Vec<Registered>> {
        Ok(sqlx::query_as(&self.q(
            "SELECT w.tenant, w.id, w.digest, v.definition FROM workflows w JOIN workflow_versions v ON v.digest = w.digest \
             WHERE w.tenant IN (?, ?) AND w.id = ?",
        ))
        .bind(tenants[0])
        .bind(tenants[1])
        .bind(id)
        .fetch_all(&self.read)
        .await?)
    }
}
