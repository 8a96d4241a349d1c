//! The outbox: messages written with the interrupt that causes them and
//! delivered afterwards, with retries and recorded delivery state.

use super::Engine;
use crate::clock::{rfc3339, Millis};
use crate::error::{EngineError, Result};
use crate::store::changes::Change;
use crate::store::outbox;
use serde::{Deserialize, Serialize};
use tollgate_wire::{InterruptKind, MailReason, NodeId, OutboxKind, OutboxStatus, RunId};

/// Attempts before a message is given up.
pub const MAX_ATTEMPTS: i64 = 8;

/// One message to deliver.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub id: i64,
    pub kind: OutboxKind,
    pub reason: String,
    pub run_id: String,
    pub node_id: String,
    pub interrupt_id: String,
    pub recipient: String,
    pub address: String,
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
    /// Why an email was queued; `None` for a callback (its reason is the
    /// event type) or a reason this build does not know.
    pub fn mail_reason(&self) -> Option<MailReason> {
        (self.kind == OutboxKind::Email)
            .then(|| MailReason::parse(&self.reason))
            .flatten()
    }

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
}

/// How long a claimed message is its claimer's (see [`Engine::outbox_due_of`]):
/// longer than a delivery attempt takes (SMTP and callback timeouts are shorter).
pub const OUTBOX_LEASE_MS: Millis = 120_000;

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
        self.outbox_due_of(OutboxKind::Email, limit).await
    }

    /// Claims messages of `kind` due for delivery, oldest first, for
    /// [`OUTBOX_LEASE_MS`]: of several instances polling at once each message
    /// goes to one, and a message whose holder died before recording the
    /// outcome is claimed again when its lease runs out.
    pub async fn outbox_due_of(&self, kind: OutboxKind, limit: i64) -> Result<Vec<OutboxItem>> {
        let now = self.now();
        let mut items = self
            .inner
            .store
            .write(move |conn| outbox::claim_due(conn, kind, now, now + OUTBOX_LEASE_MS, limit))
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
        self.inner
            .store
            .outbox_list(
                filter.tenant.as_deref(),
                filter.kind.as_deref(),
                filter.status.as_deref(),
                filter.limit.unwrap_or(100),
            )
            .await
    }

    /// One outbox message.
    pub async fn outbox_item(&self, id: i64) -> Result<OutboxItem> {
        self.inner
            .store
            .outbox_item(id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no outbox message {id}")))
    }

    /// The exact body to POST for a callback row at this attempt: the body
    /// fixed when its command committed, plus, on an `interrupt.requested`
    /// callback whose interrupt is still pending, a link for the run's owner
    /// in [`crate::callback::TOKEN_MEMBER`] (see
    /// [`Engine::callback_link_for`]). The link is minted now and never
    /// stored: the row keeps the body without it. Sign what this returns.
    pub async fn callback_body_at_delivery(&self, item: &OutboxItem) -> Result<String> {
        let stored = item.body.as_deref().unwrap_or("{}");
        let mut body: serde_json::Value = serde_json::from_str(stored)
            .map_err(|e| EngineError::Storage(format!("outbox.body of message {}: {e}", item.id)))?;
        let carries = body["type"]
            .as_str()
            .and_then(|t| t.parse::<tollgate_wire::EventType>().ok())
            .is_some_and(crate::callback::carries_token);
        let interrupt_id = body["interruptId"].as_str().map(str::to_string);
        match interrupt_id.filter(|_| carries) {
            Some(id) => match self.callback_link_for(&id).await? {
                Some(link) => {
                    crate::callback::with_token(&mut body, &link);
                    Ok(body.to_string())
                }
                None => Ok(stored.to_string()),
            },
            None => Ok(stored.to_string()),
        }
    }

    /// Records a callback answered 2xx: sent (`via` the URL scheme), with the status and a summary.
    pub async fn callback_delivered(&self, id: i64, via: &str, status: u16, message: String) -> Result<()> {
        let (via, now, message) = (via.to_string(), self.now(), crate::token::redact(&message));
        self.inner
            .store
            .write(move |conn| outbox::mark_sent(conn, id, now, &via, &message, Some(i64::from(status))))
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
        self.record_failure(id, error, status.map(i64::from), retry).await
    }

    /// Messages not yet delivered.
    pub async fn outbox_backlog(&self) -> Result<i64> {
        self.inner.store.outbox_backlog().await
    }

    /// Records a delivery. The message is stored with every link's token
    /// replaced by its id: the outbox never holds a usable link (the mailer
    /// mints a fresh one at each delivery).
    pub async fn outbox_delivered(&self, id: i64, via: &str, message: String) -> Result<()> {
        let (via, now, message) = (via.to_string(), self.now(), crate::token::redact(&message));
        self.inner
            .store
            .write(move |conn| outbox::mark_sent(conn, id, now, &via, &message, None))
            .await
    }

    /// Records a failed attempt; retried with backoff until `MAX_ATTEMPTS`.
    pub async fn outbox_failed(&self, id: i64, error: String) -> Result<()> {
        self.record_failure(id, crate::token::redact(&error), None, true)
            .await
    }

    /// One failed attempt: retried after [`backoff_ms`] while `retry` and
    /// under [`MAX_ATTEMPTS`], else given up (`failed`).
    async fn record_failure(
        &self,
        id: i64,
        error: String,
        response_status: Option<i64>,
        retry: bool,
    ) -> Result<()> {
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                let attempts = outbox::attempts(conn, id)? + 1;
                let status = if !retry || attempts >= MAX_ATTEMPTS {
                    OutboxStatus::Failed
                } else {
                    OutboxStatus::Pending
                };
                let next = now + backoff_ms(attempts);
                outbox::mark_failed(conn, id, status, attempts, next, &error, response_status)
            })
            .await
    }

    /// Drops a message whose interrupt is no longer open (nothing to decide any more).
    pub async fn outbox_drop(&self, id: i64, why: String) -> Result<()> {
        self.inner
            .store
            .write(move |conn| outbox::mark_dropped(conn, id, &why))
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
    /// runs; another tenant's message does not exist for them. Returns the
    /// message as queued again.
    pub async fn outbox_retry_for_tenant(&self, actor: &crate::Actor, id: i64) -> Result<OutboxItem> {
        let tenant = super::admin::admin_tenant(actor)?;
        match self.outbox_item(id).await {
            Ok(item) if crate::ids::tenant_of(&item.run_id) == tenant => self.outbox_retry(id).await,
            Ok(_) | Err(EngineError::NotFound(_)) => {
                Err(EngineError::NotFound(format!("no outbox message {id}")))
            }
            Err(e) => Err(e),
        }
    }

    /// Puts a failed or dropped message back in the queue (admin retry) and
    /// returns it as the retry left it: status `pending`, no attempts yet,
    /// whatever a worker does with it next.
    pub async fn outbox_retry(&self, id: i64) -> Result<OutboxItem> {
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                outbox::requeue(conn, id, now)?
                    .ok_or_else(|| EngineError::NotFound(format!("no failed outbox message {id}")))
            })
            .await
    }

    /// Queues a reminder for the people told about interrupts whose deadline
    /// is within `before_ms` (the same people as when it was raised, see
    /// [`crate::notify`]) who have not voted; each interrupt is reminded once.
    pub async fn queue_reminders(&self, before_ms: Millis) -> Result<usize> {
        let now = self.now();
        let due = self.inner.store.reminders_due(now, before_ms).await?;
        let mut queued = 0;
        for r in due {
            let decoded = (|| -> std::result::Result<_, String> {
                let kind: InterruptKind = r.kind.parse().map_err(|e| format!("interrupts.kind: {e}"))?;
                let rules = serde_json::from_str::<Option<crate::approval::ApprovalRules>>(&r.eligibility)
                    .map_err(|e| format!("interrupts.eligibility: {e}"))?;
                let audience = r
                    .audience
                    .as_deref()
                    .map(serde_json::from_str::<serde_json::Value>)
                    .transpose()
                    .map_err(|e| format!("interrupts.payload: {e}"))?;
                Ok((kind, rules, audience))
            })();
            let (kind, rules, audience) = match decoded {
                Ok(d) => d,
                Err(e) => {
                    // Claimed anyway, so one unreadable row is not scanned again and again.
                    tracing::error!(interrupt = %r.interrupt_id, error = %e, "reminder skipped: stored interrupt does not decode");
                    let id = r.interrupt_id.clone();
                    self.inner
                        .store
                        .write(move |conn| outbox::claim_reminder(conn, &id, now))
                        .await?;
                    continue;
                }
            };
            let tenant = crate::ids::tenant_of(&r.run_id).to_string();
            let count = self
                .inner
                .store
                .write(move |conn| {
                    // Claimed first: of instances reminding at once, one queues.
                    if !outbox::claim_reminder(conn, &r.interrupt_id, now)? {
                        return Ok(0);
                    }
                    let directory = crate::runtime::load_directory(conn, &tenant)?;
                    let voted = outbox::voters(conn, &r.interrupt_id)?;
                    let notice = crate::notify::Notice {
                        tenant: &tenant,
                        kind,
                        rules: rules.as_ref(),
                        audience: audience.as_ref(),
                        requester: &r.owner_subject,
                    };
                    let mails: Vec<Change> = crate::notify::recipients(&notice, &directory)
                        .into_iter()
                        .filter(|p| !voted.contains(&p.id))
                        .map(|p| Change::Email {
                            reason: MailReason::Reminder,
                            run_id: RunId::trusted(r.run_id.as_str()),
                            node_id: NodeId::trusted(r.node_id.as_str()),
                            interrupt_id: r.interrupt_id.clone(),
                            recipient: p.id.clone(),
                            address: p.email.clone(),
                            at: now,
                        })
                        .collect();
                    let n = mails.len();
                    crate::store::changes::apply(conn, mails)?;
                    Ok(n)
                })
                .await?;
            queued += count;
        }
        Ok(queued)
    }
}
