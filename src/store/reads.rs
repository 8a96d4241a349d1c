//! Reads of runs, interrupts, votes and events on the read pool, decoded by
//! the same decoders the writer's rows go through (`store::rows`).

use super::rows::{InterruptRow, RunRow, INTERRUPT_COLUMNS, RUN_COLUMNS};
use super::{fetch_rows, Store};
use crate::clock::rfc3339;
use crate::clock::Millis;
use crate::error::{EngineError, Result};
use crate::events::{RunEvent, EVENT_SCHEMA_VERSION};
use crate::ids::TenantRange;
use tollgate_wire::EventType;
use tollgate_wire::{InterruptKind, InterruptStatus, NodeStatus};

pub(crate) use super::votes::StoredVote;

/// Which interrupts of a tenant a listing wants.
pub(crate) struct InterruptQuery<'a> {
    pub tenant: &'a str,
    pub status: Option<InterruptStatus>,
    pub workflow_id: Option<&'a str>,
    pub kind: Option<InterruptKind>,
    pub limit: i64,
}

/// The deadline sweep (every timer tick): walks `interrupts_deadline` from
/// the oldest deadline and stops at `now`, whatever the size of the inbox.
pub(super) const DUE_DEADLINES_SQL: &str = "SELECT interrupt_id, run_id FROM interrupts WHERE status = 'pending' AND deadline_at IS NOT NULL AND deadline_at <= ? ORDER BY deadline_at LIMIT 200";

/// The delay sweep (every timer tick), on `runs_delay_due`: the runs whose
/// earliest delay is due, with their node states.
pub(super) const DUE_DELAYS_SQL: &str = "SELECT run_id, nodes FROM runs WHERE delay_due_at IS NOT NULL AND delay_due_at <= ? ORDER BY delay_due_at LIMIT 200";

impl Store {
    pub(crate) async fn run(&self, run_id: &str) -> Result<Option<RunRow>> {
        let sql = self
            .q(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?"))
            .into_owned();
        Ok(
            fetch_rows(sqlx::query(&sql).bind(run_id), &self.read, RunRow::from_row)
                .await?
                .pop(),
        )
    }

    /// The newest interrupt raised at a node, with its votes.
    pub(crate) async fn latest_interrupt(&self, run_id: &str, node_id: &str) -> Result<Option<InterruptRow>> {
        let sql = super::rows::latest_interrupt_sql(self.dialect());
        let query = sqlx::query(sql).bind(run_id).bind(node_id);
        Ok(fetch_rows(query, &self.read, InterruptRow::from_row).await?.pop())
    }

    /// An interrupt by id; with `pending_only`, only while it is pending.
    pub(crate) async fn interrupt(
        &self,
        interrupt_id: &str,
        pending_only: bool,
    ) -> Result<Option<InterruptRow>> {
        let status = if pending_only {
            " AND status = 'pending'"
        } else {
            ""
        };
        let sql = self
            .q(&format!(
                "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ?{status}"
            ))
            .into_owned();
        Ok(fetch_rows(
            sqlx::query(&sql).bind(interrupt_id),
            &self.read,
            InterruptRow::from_row,
        )
        .await?
        .pop())
    }

    /// A tenant's interrupts, newest first.
    pub(crate) async fn interrupts(&self, q: &InterruptQuery<'_>) -> Result<Vec<InterruptRow>> {
        let tenant = TenantRange::of(q.tenant);
        let sql = self
            .q(&format!(
                "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE {} \
                 AND (? IS NULL OR status = ?) AND (? IS NULL OR workflow_id = ?) AND (? IS NULL OR kind = ?) \
                 ORDER BY created_at DESC LIMIT ?",
                TenantRange::sql("run_id")
            ))
            .into_owned();
        let status = q.status.map(InterruptStatus::as_str);
        let kind = q.kind.map(InterruptKind::as_str);
        let query = sqlx::query(&sql)
            .bind(&tenant.from)
            .bind(&tenant.to)
            .bind(status)
            .bind(status)
            .bind(q.workflow_id)
            .bind(q.workflow_id)
            .bind(kind)
            .bind(kind)
            .bind(q.limit);
        fetch_rows(query, &self.read, InterruptRow::from_row).await
    }

    /// The votes on an interrupt, in the order they were cast.
    pub(crate) async fn votes(&self, interrupt_id: &str) -> Result<Vec<StoredVote>> {
        let votes: Option<String> = sqlx::query_scalar(&self.q(super::votes::VOTES_OF_SQL))
            .bind(interrupt_id)
            .fetch_optional(&self.read)
            .await?;
        super::votes::parse(interrupt_id, votes.as_deref().unwrap_or("[]"))
    }

    /// A run's events after `after`, in sequence order.
    pub(crate) async fn events(&self, run_id: &str, after: i64, limit: i64) -> Result<Vec<RunEvent>> {
        let rows = sqlx::query_as::<_, EventRow>(super::event_log::events_after_sql(self.dialect))
            .bind(run_id)
            .bind(after)
            .bind(limit)
            .fetch_all(&self.read)
            .await?;
        rows.into_iter().map(EventRow::into_event).collect()
    }

    /// The stored node and interrupt statuses of a run (to compare with its log).
    #[allow(clippy::type_complexity)]
    pub(crate) async fn projection(
        &self,
        run_id: &str,
    ) -> Result<(Vec<(String, NodeStatus, i64)>, Vec<(String, InterruptStatus)>)> {
        let nodes: Option<String> = sqlx::query_scalar(&self.q("SELECT nodes FROM runs WHERE run_id = ?"))
            .bind(run_id)
            .fetch_optional(&self.read)
            .await?;
        let mut nodes = super::nodes::parse_node_rows(nodes.as_deref().unwrap_or("[]"))?;
        nodes.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        let interrupts: Vec<(String, String)> = sqlx::query_as(
            &self.q("SELECT interrupt_id, status FROM interrupts WHERE run_id = ? ORDER BY interrupt_id"),
        )
        .bind(run_id)
        .fetch_all(&self.read)
        .await?;
        let nodes = nodes
            .into_iter()
            .map(|n| (String::from(n.node_id), n.status, n.visits))
            .collect();
        let interrupts = interrupts
            .into_iter()
            .map(|(id, status)| Ok((id, status.parse()?)))
            .collect::<Result<_>>()?;
        Ok((nodes, interrupts))
    }

    /// Pending interrupts whose deadline has passed, soonest first: (interrupt, run).
    pub(crate) async fn due_deadlines(&self, now: Millis) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(&self.q(DUE_DEADLINES_SQL))
            .bind(now)
            .fetch_all(&self.read)
            .await?)
    }

    /// `core.delay` nodes whose timer is due: (run, node).
    pub(crate) async fn due_delays(&self, now: Millis) -> Result<Vec<(String, String)>> {
        let runs: Vec<(String, String)> = sqlx::query_as(&self.q(DUE_DELAYS_SQL))
            .bind(now)
            .fetch_all(&self.read)
            .await?;
        let mut due = Vec::new();
        for (run_id, nodes) in runs {
            for node in super::nodes::parse_node_rows(&nodes)? {
                if node.delay_due_at().is_some_and(|d| d <= now) {
                    due.push((run_id.clone(), String::from(node.node_id)));
                }
            }
        }
        Ok(due)
    }

    /// Whether a token id is on the revocation list.
    pub(crate) async fn token_revoked(&self, jti: &str) -> Result<bool> {
        let revoked: Option<i64> = sqlx::query_scalar(&self.q("SELECT 1 FROM revoked_tokens WHERE jti = ?"))
            .bind(jti)
            .fetch_optional(&self.read)
            .await?;
        Ok(revoked.is_some())
    }

    /// Every run of the instance: a count of all its rows, which grows with
    /// the store (for tools and tests, not for a scrape).
    pub(crate) async fn run_count(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM runs")
            .fetch_one(&self.read)
            .await?)
    }

    /// Whether the instance stores any run (one row read at any size).
    pub(crate) async fn has_runs(&self) -> Result<bool> {
        let one: Option<i64> = sqlx::query_scalar("SELECT 1 FROM runs LIMIT 1")
            .fetch_optional(&self.read)
            .await?;
        Ok(one.is_some())
    }

    /// Whether the database answers (cheap at any size).
    pub(crate) async fn ping(&self) -> Result<()> {
        let one: i64 = sqlx::query_scalar("SELECT 1").fetch_one(&self.read).await?;
        if one == 1 {
            Ok(())
        } else {
            Err(EngineError::Storage(
                "the database answered SELECT 1 wrongly".into(),
            ))
        }
    }
}

/// An `events` row as stored.
#[derive(sqlx::FromRow)]
struct EventRow {
    pub run_id: String,
    pub sequence: i64,
    pub event_id: String,
    #[sqlx(rename = "type", try_from = "String")]
    pub event_type: EventType,
    pub node_id: Option<String>,
    pub payload: String,
    pub timestamp: Millis,
}

impl EventRow {
    /// The event as served; a stored payload that is not JSON is an error.
    fn into_event(self) -> Result<RunEvent> {
        let payload = serde_json::from_str(&self.payload).map_err(|e| {
            EngineError::Storage(format!(
                "event {} of run {}: payload is not JSON: {e}",
                self.sequence, self.run_id
            ))
        })?;
        Ok(RunEvent {
            event_id: self.event_id,
            run_id: self.run_id,
            event_type: self.event_type,
            payload,
            timestamp: rfc3339(self.timestamp),
            sequence: self.sequence,
            schema_version: EVENT_SCHEMA_VERSION,
            node_id: self.node_id,
        })
    }
}
