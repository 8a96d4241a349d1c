//! The outbox: messages written with the interrupt that causes them and
//! delivered afterwards, with retries and recorded delivery state.

use super::Engine;
use crate::args;
use crate::clock::{rfc3339, Millis};
use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use tollgate_wire::{OutboxKind, OutboxStatus};

/// Attempts before a message is given up.
pub const MAX_ATTEMPTS: i64 = 8;

/// One message to deliver.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub id: i64,
    #[sqlx(try_from = "String")]
    pub kind: OutboxKind,
    pub reason: String,
    pub run_id: String,
    pub node_id: String,
    pub interrupt_id: String,
    pub recipient: String,
    pub address: String,
    #[sqlx(try_from = "String")]
    pub status: OutboxStatus,
    pub attempts: i64,
    pub next_attempt_at: Millis,
    pub last_error: Option<String>,
    pub message: Option<String>,
    pub delivered_via: Option<String>,
    pub created_at: Millis,
    pub sent_at: Option<Millis>,
    /// Callbacks: the JSON body POSTed (fixed when the row is written).
    pub body: Option<String>,
    /// Callbacks: the HTTP status of the last attempt, when one was answered.
    pub response_status: Option<i64>,
}

impl OutboxItem {
    pub fn created(&self) -> String {
        rfc3339(self.created_at)
    }

    /// The message as the dashboard lists it.
    pub fn to_row(&self) -> tollgate_wire::admin::OutboxRow {
        tollgate_wire::admin::OutboxRow {
            id: self.id,
            kind: self.kind,
            reason: self.reason.clone(),
            run_id: self.run_id.clone(),
            node_id: self.node_id.clone(),
            recipient: self.recipient.clone(),
            address: self.address.clone(),
            status: self.status,
            attempts: self.attempts,
            last_error: self.last_error.clone(),
            created_at: self.created(),
            sent_at: self.sent_at.map(rfc3339),
        }
    }

    /// A row selected with [`COLUMNS`] in a write command.
    fn from_row(r: &crate::store::Row) -> Result<OutboxItem> {
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
}

/// How long a claimed message is its claimer's (see [`Engine::outbox_due_of`]):
/// longer than a delivery attempt takes (SMTP and callback timeouts are shorter).
pub const OUTBOX_LEASE_MS: Millis = 120_000;

const COLUMNS: &str =
    "id, kind, reason, run_id, node_id, interrupt_id, recipient, address, status, attempts, \
                       next_attempt_at, last_error, message, delivered_via, created_at, sent_at, body, response_status";

/// Backoff after `attempts` failures: 5 s, 10 s, 20 s, … capped at one hour.
pub fn backoff_ms(attempts: i64) -> Millis {
    (5_000_i64 << attempts.clamp(0, 10)).min(3_600_000)
}

/// Kinds of outbox rows.
pub const KINDS: &[&str] = OutboxKind::TEXTS;
/// Delivery states of outbox rows.
pub const STATUSES: &[&str] = OutboxStatus::TEXTS;

/// Which rows the admin's outbox view lists.
#[derive(Debug, Clone, Default)]
pub struct OutboxFilter {
    /// Only messages of this tenant's runs.
    pub tenant: Option<String>,
    /// `email` or `callback`.
    pub kind: Option<String>,
    /// `pending`, `sent`, `failed` or `dropped`.
    pub status: Option<String>,
    /// 1..=1000 (default 100).
    pub limit: Option<i64>,
}

impl OutboxFilter {
    /// Refuses unknown kinds, statuses and limits, naming the parameter.
    pub fn check(&self) -> Result<()> {
        if let Some(k) = self.kind.as_deref().filter(|k| !KINDS.contains(k)) {
            return Err(EngineError::validation(
                "kind",
                format!("kind {k:?} is not one of {KINDS:?}"),
            ));
        }
        if let Some(s) = self.status.as_deref().filter(|s| !STATUSES.contains(s)) {
            return Err(EngineError::validation(
                "status",
                format!("status {s:?} is not one of {STATUSES:?}"),
            ));
        }
        if let Some(l) = self.limit.filter(|l| !(1..=1000).contains(l)) {
            return Err(EngineError::validation(
                "limit",
                format!("limit {l} is not within 1..=1000"),
            ));
        }
        Ok(())
    }
}

impl Engine {
    /// Emails due for delivery, oldest first.
    pub async fn outbox_due(&self, limit: i64) -> Result<Vec<OutboxItem>> {
        self.outbox_due_of("email", limit).await
    }

    /// Claims messages of `kind` due for delivery, oldest first, for
    /// [`OUTBOX_LEASE_MS`]: of several instances polling at once each message
    /// goes to one, and a message whose holder died before recording the
    /// outcome is claimed again when its lease runs out.
    pub async fn outbox_due_of(&self, kind: &str, limit: i64) -> Result<Vec<OutboxItem>> {
        let (kind, now) = (kind.to_string(), self.now());
        let mut items = self
            .inner
            .store
            .write(move |conn| {
                let skip_locked = match conn.dialect() {
                    crate::store::Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
                    crate::store::Dialect::Sqlite => "",
                };
                let sql = format!(
                    "UPDATE outbox SET lease_until = ? WHERE id IN (SELECT id FROM outbox WHERE status = 'pending' \
                     AND next_attempt_at <= ? AND kind = ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY id LIMIT ?{skip_locked}) \
                     RETURNING {COLUMNS}"
                );
                conn.query_map(&sql, args![now + OUTBOX_LEASE_MS, now, kind, now, limit], OutboxItem::from_row)
            })
            .await?;
        items.sort_by_key(|i| i.id);
        Ok(items)
    }

    /// The latest messages, newest first (the admin's view of the outbox).
    pub async fn outbox_recent(&self, limit: i64) -> Result<Vec<OutboxItem>> {
        self.outbox_list(&OutboxFilter {
            limit: Some(limit.clamp(1, 1000)),
            ..OutboxFilter::default()
        })
        .await
    }

    /// The latest messages matching `filter`, newest first.
    pub async fn outbox_list(&self, filter: &OutboxFilter) -> Result<Vec<OutboxItem>> {
        filter.check()?;
        let range = filter.tenant.as_deref().map(crate::ids::TenantRange::of);
        Ok(sqlx::query_as::<_, OutboxItem>(&self.inner.store.q(&format!(
            "SELECT {COLUMNS} FROM outbox WHERE (?1 IS NULL OR {}) \
             AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR status = ?4) ORDER BY id DESC LIMIT ?5",
            crate::ids::TenantRange::sql_numbered("run_id", 1)
        )))
        .bind(range.as_ref().map(|r| r.from.as_str()))
        .bind(range.as_ref().map(|r| r.to.as_str()))
        .bind(filter.kind.as_deref())
        .bind(filter.status.as_deref())
        .bind(filter.limit.unwrap_or(100))
        .fetch_all(&self.inner.store.read)
        .await?)
    }

    /// One outbox message.
    pub async fn outbox_item(&self, id: i64) -> Result<OutboxItem> {
        sqlx::query_as::<_, OutboxItem>(
            &self
                .inner
                .store
                .q(&format!("SELECT {COLUMNS} FROM outbox WHERE id = ?")),
        )
        .bind(id)
        .fetch_optional(&self.inner.store.read)
        .await?
        .ok_or_else(|| EngineError::NotFound(format!("no outbox message {id}")))
    }

    /// Records a callback answered 2xx: sent (`via` the URL scheme), with the status and a summary.
    pub async fn callback_delivered(&self, id: i64, via: &str, status: u16, message: String) -> Result<()> {
        let (via, now, message) = (via.to_string(), self.now(), crate::token::redact(&message));
        self.inner
            .store
            .write(move |conn| {
                conn.execute(
                    "UPDATE outbox SET status = 'sent', attempts = attempts + 1, sent_at = ?, delivered_via = ?, message = ?, response_status = ?, last_error = NULL WHERE id = ?",
                    args![now, via, message, status as i64, id],
                )?;
                Ok(())
            })
            .await
    }

    /// Records a failed callback attempt (with the HTTP status when there was
    /// one). `retry` false gives the message up at once (status `failed`),
    /// e.g. when the egress guard refused the address at delivery.
    pub async fn callback_failed(
        &self,
        id: i64,
        status: Option<u16>,
        error: String,
        retry: bool,
    ) -> Result<()> {
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                let attempts = outbox_attempts(conn, id)? + 1;
                let state = if !retry || attempts >= MAX_ATTEMPTS { "failed" } else { "pending" };
                conn.execute(
                    "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, response_status = ?, lease_until = NULL WHERE id = ?",
                    args![state, attempts, now + backoff_ms(attempts), error, status.map(i64::from), id],
                )?;
                Ok(())
            })
            .await
    }

    /// Messages not yet delivered.
    pub async fn outbox_backlog(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(
            &self
                .inner
                .store
                .q("SELECT COUNT(*) FROM outbox WHERE status = 'pending'"),
        )
        .fetch_one(&self.inner.store.read)
        .await?)
    }

    /// Records a delivery. The message is stored with every link's token
    /// replaced by its id: the outbox never holds a usable link (the mailer
    /// mints a fresh one at each delivery).
    pub async fn outbox_delivered(&self, id: i64, via: &str, message: String) -> Result<()> {
        let (via, now, message) = (via.to_string(), self.now(), crate::token::redact(&message));
        self.inner
            .store
            .write(move |conn| {
                conn.execute(
                    "UPDATE outbox SET status = 'sent', attempts = attempts + 1, sent_at = ?, delivered_via = ?, message = ?, last_error = NULL WHERE id = ?",
                    args![now, via, message, id],
                )?;
                Ok(())
            })
            .await
    }

    /// Records a failed attempt; retried with backoff until `MAX_ATTEMPTS`.
    pub async fn outbox_failed(&self, id: i64, error: String) -> Result<()> {
        let (now, error) = (self.now(), crate::token::redact(&error));
        self.inner
            .store
            .write(move |conn| {
                let attempts = outbox_attempts(conn, id)? + 1;
                let status = if attempts >= MAX_ATTEMPTS { "failed" } else { "pending" };
                conn.execute(
                    "UPDATE outbox SET status = ?, attempts = ?, next_attempt_at = ?, last_error = ?, lease_until = NULL WHERE id = ?",
                    args![status, attempts, now + backoff_ms(attempts), error, id],
                )?;
                Ok(())
            })
            .await
    }

    /// Drops a message whose interrupt is no longer open (nothing to decide any more).
    pub async fn outbox_drop(&self, id: i64, why: String) -> Result<()> {
        self.inner
            .store
            .write(move |conn| {
                conn.execute(
                    "UPDATE outbox SET status = 'dropped', last_error = ? WHERE id = ?",
                    args![why, id],
                )?;
                Ok(())
            })
            .await
    }

    /// The admin's view of their tenant's outbox: `filter` with the tenant
    /// set to the admin's own, whatever it said.
    pub async fn outbox_list_for(
        &self,
        actor: &crate::Actor,
        filter: &OutboxFilter,
    ) -> Result<Vec<OutboxItem>> {
        let tenant = super::admin::admin_tenant(actor)?;
        self.outbox_list(&OutboxFilter {
            tenant: Some(tenant.to_string()),
            ..filter.clone()
        })
        .await
    }

    /// Retries a failed or dropped message of one of the admin's tenant's
    /// runs; another tenant's message does not exist for them.
    pub async fn outbox_retry_for_tenant(&self, actor: &crate::Actor, id: i64) -> Result<()> {
        let tenant = super::admin::admin_tenant(actor)?;
        match self.outbox_item(id).await {
            Ok(item) if crate::ids::tenant_of(&item.run_id) == tenant => self.outbox_retry(id).await,
            Ok(_) | Err(EngineError::NotFound(_)) => {
                Err(EngineError::NotFound(format!("no outbox message {id}")))
            }
            Err(e) => Err(e),
        }
    }

    /// Puts a failed message back in the queue (admin retry).
    pub async fn outbox_retry(&self, id: i64) -> Result<()> {
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                let n = conn.execute(
                    "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?, lease_until = NULL WHERE id = ? AND status IN ('failed', 'dropped')",
                    args![now, id],
                )?;
                if n == 0 {
                    return Err(EngineError::NotFound(format!("no failed outbox message {id}")));
                }
                Ok(())
            })
            .await
    }

    /// Queues a reminder for the people who have not voted on interrupts whose
    /// deadline is within `before_ms`; each interrupt is reminded once.
    pub async fn queue_reminders(&self, before_ms: Millis) -> Result<usize> {
        let now = self.now();
        let store = &self.inner.store;
        let sql = format!(
            "SELECT i.interrupt_id, i.run_id, i.node_id, i.eligibility, {} FROM interrupts i \
             WHERE i.status = 'pending' AND i.reminded_at IS NULL AND i.deadline_at IS NOT NULL AND i.deadline_at - ? <= ? LIMIT 100",
            store.dialect().json_text("i.payload", "data.audience")
        );
        let due: Vec<(String, String, String, String, Option<String>)> = sqlx::query_as(&store.q(&sql))
            .bind(before_ms)
            .bind(now)
            .fetch_all(&self.inner.store.read)
            .await?;
        let mut queued = 0;
        for (interrupt_id, run_id, node_id, eligibility, audience) in due {
            let rules: Option<crate::approval::ApprovalRules> =
                serde_json::from_str(&eligibility).map_err(|e| {
                    EngineError::Storage(format!("interrupts.eligibility of {interrupt_id}: {e}"))
                })?;
            let audience: Option<serde_json::Value> = audience
                .map(|a| serde_json::from_str(&a))
                .transpose()
                .map_err(|e| EngineError::Storage(format!("interrupts.payload of {interrupt_id}: {e}")))?;
            let tenant = crate::ids::tenant_of(&run_id).to_string();
            let count = self
                .inner
                .store
                .write(move |conn| {
                    // Claimed first: of instances reminding at once, one queues.
                    let claimed = conn.execute(
                        "UPDATE interrupts SET reminded_at = ? WHERE interrupt_id = ? AND reminded_at IS NULL AND status = 'pending'",
                        args![now, interrupt_id],
                    )?;
                    if claimed == 0 {
                        return Ok(0);
                    }
                    let directory = crate::runtime::load_directory(conn, &tenant)?;
                    let voted: Vec<String> = conn.query_map(
                        "SELECT DISTINCT principal FROM votes WHERE interrupt_id = ?",
                        args![interrupt_id],
                        |r| r.get(0),
                    )?;
                    let mut n = 0;
                    for p in crate::notify::recipients(rules.as_ref(), audience.as_ref(), &directory) {
                        if voted.contains(&p.id) {
                            continue;
                        }
                        conn.execute(
                            "INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at) VALUES ('email', 'reminder', ?, ?, ?, ?, ?, 'pending', ?, ?)",
                            args![run_id, node_id, interrupt_id, p.id, p.email, now, now],
                        )?;
                        n += 1;
                    }
                    Ok(n)
                })
                .await?;
            queued += count;
        }
        Ok(queued)
    }
}

/// Attempts so far of an outbox message, read inside a write command.
fn outbox_attempts(conn: &crate::store::WriteConn, id: i64) -> Result<i64> {
    conn.query_scalar("SELECT attempts FROM outbox WHERE id = ?", args![id])?
        .ok_or_else(|| EngineError::NotFound(format!("no outbox message {id}")))
}
