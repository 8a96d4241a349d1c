//! PostgreSQL's `pg_notify`, how instances on one database tell each other
//! of committed changes (`engine::peers` decides what the messages say).

use super::WriteConn;
use crate::args;
use crate::error::Result;
use sqlx::AnyPool;

/// Sends `message` on `channel` inside a write command: PostgreSQL
/// delivers it when, and only if, the command commits.
pub(crate) fn notify_in(conn: &WriteConn, channel: &str, message: &str) -> Result<()> {
    conn.execute("SELECT pg_notify(?, ?)", args![channel, message])?;
    Ok(())
}

/// Sends `message` on `channel` on its own (after a commit).
pub(crate) async fn notify(pool: &AnyPool, channel: &str, message: &str) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(message)
        .execute(pool)
        .await?;
    Ok(())
}
