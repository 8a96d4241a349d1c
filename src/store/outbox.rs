//! The outbox's statements: claiming due messages with a lease, recording
//! each attempt, the admin's view, and the reminder scan.

use super::{Row, Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::engine::outbox::OutboxItem;
use crate::error::{EngineError, Result};
use crate::ids::TenantRange;
use std::sync::LazyLock;
use tollgate_wire::{MailReason, OutboxKind, OutboxStatus};

const COLUMNS: &str = "id, kind, reason, run_id, node_id, interrupt_id, recipient, address, status, attempts, \
                       next_attempt_at, last_error, message, delivered_via, created_at, sent_at, body, response_status";

/// Decodes a row selected with [`COLUMNS`], from either pool.
fn item(r: &Row) -> Result<OutboxItem> {
    Ok(OutboxItem {
        id: r.get(0)?,
        kind: r.get(1)?,
        reason: r.get(2)?,
        run_id: r.get(3)?,
        node_id: r.get(4)?,
        interrupt_id: r.get(5)?,
        recipient: r.get(6)?,
        address: r.get(7)?,
        status: r.get(8)?,
        attempts: r.get(9)?,
        next_attempt_at: r.get(10)?,
        last_error: r.get(11)?,
        message: r.get(12)?,
        delivered_via: r.get(13)?,
        created_at: r.get(14)?,
        sent_at: r.get(15)?,
        body: r.get(16)?,
        response_status: r.get(17)?,
    })
}

/// When `recipient` was last queued a mail of `reason` about `interrupt_id`
/// (read inside the write that may queue another, so two asking at once
/// cannot both pass a throttle).
pub(crate) fn last_mail_at(
    conn: &WriteConn,
    interrupt_id: &str,
    recipient: &str,
    reason: MailReason,
) -> Result<Option<Millis>> {
    Ok(conn
        .query_scalar(
            "SELECT MAX(created_at) FROM outbox WHERE interrupt_id = ? AND recipient = ? AND kind = 'email' AND reason = ?",
            args![interrupt_id, recipient, reason.as_str()],
        )?
        .flatten())
}

/// Pending interrupts not reminded yet whose deadline is at or before the
/// bound: a range on `interrupts_deadline`, not a pass over every pending row.
pub(super) fn reminders_due_sql(dialect: super::Dialect) -> String {
    format!(
        "SELECT i.interrupt_id, i.run_id, i.node_id, i.kind, i.eligibility, i.owner_subject, {} FROM interrupts i \
         WHERE i.status = 'pending' AND i.reminded_at IS NULL AND i.deadline_at IS NOT NULL AND i.deadline_at <= ? LIMIT 100",
        dialect.json_member("i.payload", "data.audience")
    )
}

/// [`claim_due`]'s statement, with what follows its inner `LIMIT`.
fn claim_due_sql(skip_locked: &str) -> String {
    format!(
        "UPDATE outbox SET lease_until = ? WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' \
         AND next_attempt_at <= ? AND kind = ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY id LIMIT ?{skip_locked}) \
         RETURNING {COLUMNS}"
    )
}

static CLAIM_DUE: LazyLock<String> = LazyLock::new(|| claim_due_sql(""));
static CLAIM_DUE_PG: LazyLock<String> = LazyLock::new(|| claim_due_sql(" FOR UPDATE SKIP LOCKED"));

/// Claims up to `limit` pending messages of `kind` that are due and not
/// leased, leasing them until `lease_until` (`FOR UPDATE SKIP LOCKED` on
/// PostgreSQL: instances claiming at once get different messages).
pub(crate) fn claim_due(
    conn: &WriteConn,
    kind: OutboxKind,
    now: Millis,
    lease_until: Millis,
    limit: i64,
) -> Result<Vec<OutboxItem>> {
    let sql: &'static str = match conn.dialect() {
        super::Dialect::Postgres => &CLAIM_DUE_PG,
        super::Dialect::Sqlite => &CLAIM_DUE,
    };
    conn.query_map(sql, args![lease_until, now, kind, now, limit], item)
}

/// How many attempts a message has had.
pub(crate) fn attempts(conn: &WriteConn, id: i64) -> Result<i64> {
    conn.query_scalar("SELECT attempts FROM outbox WHERE id = ?", args![id])?
        .ok_or_else(|| EngineError::NotFound(format!("no outbox message {id}")))
}

/// A delivered message: sent (`via` the transport), with what was sent and,
/// for a callback, the HTTP status that answered it.
pub(crate) fn mark_sent(
    conn: &WriteConn,
    id: i64,
    now: Millis,
    via: &str,
    message: &str,
    response_status: Option<i64>,
) -> Result<()> {
    conn.execute(
        "UPDATE outbox SET status = 'sent', attempts = attempts + 1, sent_at = ?, delivered_via = ?, message = ?, response_status = ?, last_error = NULL WHERE id = ?",
        args![now, via, message, response_status, id],
    )?;
    Ok(())
}

/// A failed attempt: `status` pending (retried at `next_attempt_at`) or failed; the lease ends.
pub(crate) fn mark_failed(
    conn: &WriteConn,
    id: i64,
    status: OutboxStatus,
    attempts: i64,
    next_attempt_at: Millis,
    error: &str,
    response_status: Option<i64>,
) -> Result<()> {
    conn.execute(
        "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, response_status = ?, lease_until = NULL WHERE id = ?",
        args![status, attempts, next_attempt_at, error, response_status, id],
    )?;
    Ok(())
}

/// A message there is nothing to send for any more.
pub(crate) fn mark_dropped(conn: &WriteConn, id: i64, why: &str) -> Result<()> {
    conn.execute(
        "UPDATE outbox SET status = 'dropped', last_error = ? WHERE id = ?",
        args![why, id],
    )?;
    Ok(())
}

static REQUEUE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?, lease_until = NULL \
         WHERE id = ? AND status IN ('failed', 'dropped') RETURNING {COLUMNS}"
    )
});

/// Puts a failed or dropped message back in the queue and returns it as
/// queued (read in the same statement: a worker may deliver it again before
/// any later read); `None` when there is no such message.
pub(crate) fn requeue(conn: &WriteConn, id: i64, now: Millis) -> Result<Option<OutboxItem>> {
    conn.query_opt(&REQUEUE, args![now, id], item)
}

/// Claims an interrupt's one reminder; false when another instance (or an
/// earlier scan) already reminded it, or it is no longer pending.
pub(crate) fn claim_reminder(conn: &WriteConn, interrupt_id: &str, now: Millis) -> Result<bool> {
    let claimed = conn.execute(
        "UPDATE interrupts SET reminded_at = ? WHERE interrupt_id = ? AND reminded_at IS NULL AND status = 'pending'",
        args![now, interrupt_id],
    )?;
    Ok(claimed > 0)
}

/// Everyone who has voted (or asked) on an interrupt, in the order they first did.
pub(crate) fn voters(conn: &WriteConn, interrupt_id: &str) -> Result<Vec<String>> {
    let votes: Option<String> = conn.query_scalar(super::votes::VOTES_OF_SQL, args![interrupt_id])?;
    let mut voters: Vec<String> = Vec::new();
    for vote in super::votes::parse(interrupt_id, votes.as_deref().unwrap_or("[]"))? {
        if !voters.contains(&vote.principal) {
            voters.push(vote.principal);
        }
    }
    Ok(voters)
}

/// A pending interrupt whose deadline is near and that was not reminded yet.
pub(crate) struct ReminderDue {
    pub interrupt_id: String,
    pub run_id: String,
    pub node_id: String,
    /// The kind as stored.
    pub kind: String,
    /// Approval rules as stored (`null` for other kinds).
    pub eligibility: String,
    /// The run owner's subject id.
    pub owner_subject: String,
    /// `data.audience` as JSON, if any.
    pub audience: Option<String>,
}

impl Store {
    /// Messages matching the filter's values, newest first.
    pub(crate) async fn outbox_list(
        &self,
        tenant: Option<&str>,
        kind: Option<&str>,
        status: Option<&str>,
        limit: i64,
    ) -> Result<Vec<OutboxItem>> {
        let range = tenant.map(TenantRange::of);
        let sql = self
            .q(&format!(
                "SELECT {COLUMNS} FROM outbox WHERE (?1 IS NULL OR {}) \
                 AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR status = ?4) ORDER BY id DESC LIMIT ?5",
                TenantRange::sql_numbered("run_id", 1)
            ))
            .into_owned();
        let query = sqlx::query(&sql)
            .bind(range.as_ref().map(|r| r.from.as_str()))
            .bind(range.as_ref().map(|r| r.to.as_str()))
            .bind(kind)
            .bind(status)
            .bind(limit);
        super::fetch_rows(query, &self.read, item).await
    }

    pub(crate) async fn outbox_item(&self, id: i64) -> Result<Option<OutboxItem>> {
        let sql = self
            .q(&format!("SELECT {COLUMNS} FROM outbox WHERE id = ?"))
            .into_owned();
        Ok(super::fetch_rows(sqlx::query(&sql).bind(id), &self.read, item)
            .await?
            .pop())
    }

    /// Messages not yet delivered, over the whole instance.
    pub(crate) async fn outbox_backlog(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar(&self.q("SELECT COUNT(*) FROM outbox WHERE status = 'pending'"))
                .fetch_one(&self.read)
                .await?,
        )
    }

    /// Pending interrupts due within `before_ms` of `now` and not reminded yet (at most 100).
    pub(crate) async fn reminders_due(&self, now: Millis, before_ms: Millis) -> Result<Vec<ReminderDue>> {
        let sql = reminders_due_sql(self.dialect());
        #[allow(clippy::type_complexity)]
        let rows: Vec<(String, String, String, String, String, String, Option<String>)> =
            sqlx::query_as(&self.q(&sql))
                // A range on the column itself, so the partial deadline index serves it.
                .bind(now.saturating_add(before_ms))
                .fetch_all(&self.read)
                .await?;
        Ok(rows
            .into_iter()
            .map(
                |(interrupt_id, run_id, node_id, kind, eligibility, owner_subject, audience)| ReminderDue {
                    interrupt_id,
                    run_id,
                    node_id,
                    kind,
                    eligibility,
                    owner_subject,
                    audience,
                },
            )
            .collect())
    }
}
