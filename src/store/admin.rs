//! The admin dashboard's statements, each scoped to one tenant (by the
//! `tenant` column or the exact `run_id` range, never a pattern). The engine
//! (`engine::admin`) turns the rows into the dashboard's types.

use super::{Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::error::Result;
use crate::ids::TenantRange;
use tollgate_wire::RunStatus;

// The dashboard's reads of a tenant's runs and people: each searches the
// `runs_by_tenant` or `principals_by_tenant` index (asserted on SQLite's
// plans in `store::sqlite`'s tests), never every tenant's rows.
pub(super) const RUN_STATUS_COUNTS_SQL: &str =
    "SELECT status, COUNT(*) FROM runs WHERE tenant = ? GROUP BY status";
pub(super) const RUN_PAGE_COUNT_SQL: &str =
    "SELECT COUNT(*) FROM runs WHERE tenant = ? AND (? IS NULL OR status = ?) AND (? IS NULL OR workflow_id = ?)";
pub(super) static RUN_PAGE_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE tenant = ? AND (? IS NULL OR status = ?) AND (? IS NULL OR workflow_id = ?) \
         ORDER BY created_at DESC, run_id LIMIT ? OFFSET ?"
    )
});
pub(super) const RUN_WORKFLOWS_SQL: &str =
    "SELECT DISTINCT workflow_id FROM runs WHERE tenant = ? ORDER BY workflow_id";
pub(super) const TENANT_PRINCIPALS_SQL: &str =
    "SELECT id, name, email, groups, roles, is_override, password_hash FROM principals WHERE tenant = ? ORDER BY id";

/// (run_id, node_id, kind, title, workflow_id, created_at, deadline_at, counted votes).
pub(crate) type PendingTuple = (
    String,
    String,
    String,
    String,
    String,
    Millis,
    Option<Millis>,
    i64,
);
/// A pending interrupt as [`Store::most_urgent`] reads it.
#[derive(sqlx::FromRow)]
struct UrgentRow {
    run_id: String,
    node_id: String,
    kind: String,
    title: String,
    workflow_id: String,
    created_at: Millis,
    deadline_at: Option<Millis>,
    interrupt_id: String,
    votes: String,
}

/// (resolved_at, kind, resolution.decision, resolution.reason, resolution.action).
pub(crate) type ResolvedTuple = (Millis, String, Option<String>, Option<String>, Option<String>);
/// (id, name, email, groups, roles, is_override, password_hash).
pub(crate) type PrincipalTuple = (
    String,
    String,
    Option<String>,
    String,
    String,
    i64,
    Option<String>,
);
/// (key_hash, principal, scopes, label, created_at, revoked_at).
pub(crate) type ApiKeyTuple = (String, String, String, Option<String>, Millis, Option<Millis>);
/// (run_id, workflow_id, status, current_node_id, owner, created_at, completed_at).
pub(crate) type RunTuple = (
    String,
    String,
    String,
    Option<String>,
    String,
    Millis,
    Option<Millis>,
);
/// (sequence, type, node_id, timestamp, payload).
pub(crate) type EventTuple = (i64, String, Option<String>, Millis, String);
/// (node_id, visit, principal, action, eligible_via, decided_at, superseded, cast_by).
pub(crate) type AuditTuple = (String, i64, String, String, String, Millis, i64, Option<String>);

const RUN_COLUMNS: &str = "run_id, workflow_id, status, current_node_id, owner, created_at, completed_at";

/// Which of a tenant's runs a page lists.
pub(crate) struct RunQuery<'a> {
    pub tenant: &'a str,
    pub status: Option<RunStatus>,
    pub workflow_id: Option<&'a str>,
    pub limit: i64,
    pub offset: i64,
}

/// Revokes a key (again is a no-op).
pub(crate) fn revoke_key(conn: &WriteConn, hash: &str, now: Millis) -> Result<()> {
    conn.execute(
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE key_hash = ?",
        args![now, hash],
    )?;
    Ok(())
}

impl Store {
    /// Every tenant with a principal.
    pub(crate) async fn tenants(&self) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar(&self.q("SELECT DISTINCT tenant FROM principals ORDER BY tenant"))
                .fetch_all(&self.read)
                .await?,
        )
    }

    /// Pending interrupts of a tenant per age bucket (`bounds`: the upper
    /// bounds of the first four buckets; the fifth is the rest).
    pub(crate) async fn pending_by_age(
        &self,
        tenant: &str,
        now: Millis,
        bounds: [Millis; 4],
    ) -> Result<Vec<(i64, i64)>> {
        let range = TenantRange::of(tenant);
        Ok(sqlx::query_as(&self.q(&format!(
            "SELECT CASE WHEN ?1 - created_at < ?2 THEN 0 WHEN ?1 - created_at < ?3 THEN 1 \
             WHEN ?1 - created_at < ?4 THEN 2 WHEN ?1 - created_at < ?5 THEN 3 ELSE 4 END AS bucket, COUNT(*) \
             FROM interrupts WHERE status = 'pending' AND {} GROUP BY bucket",
            TenantRange::sql_numbered("run_id", 6)
        )))
        .bind(now)
        .bind(bounds[0])
        .bind(bounds[1])
        .bind(bounds[2])
        .bind(bounds[3])
        .bind(&range.from)
        .bind(&range.to)
        .fetch_all(&self.read)
        .await?)
    }

    /// Pending interrupts of a tenant whose deadline has passed.
    pub(crate) async fn overdue_count(&self, tenant: &str, now: Millis) -> Result<i64> {
        let range = TenantRange::of(tenant);
        Ok(sqlx::query_scalar(&self.q(&format!(
            "SELECT COUNT(*) FROM interrupts WHERE status = 'pending' AND {} \
             AND deadline_at IS NOT NULL AND deadline_at <= ?",
            TenantRange::sql("run_id")
        )))
        .bind(&range.from)
        .bind(&range.to)
        .bind(now)
        .fetch_one(&self.read)
        .await?)
    }

    /// The most urgent pending interrupts: overdue first, then the nearest
    /// deadline, then the oldest without one.
    pub(crate) async fn most_urgent(&self, tenant: &str, limit: i64) -> Result<Vec<PendingTuple>> {
        let range = TenantRange::of(tenant);
        let rows: Vec<UrgentRow> = sqlx::query_as(&self.q(&format!(
            "SELECT i.run_id, i.node_id, i.kind, i.title, i.workflow_id, i.created_at, i.deadline_at, i.interrupt_id, i.votes \
                 FROM interrupts i WHERE i.status = 'pending' AND {} \
                 ORDER BY i.deadline_at IS NULL, i.deadline_at, i.created_at LIMIT ?",
            TenantRange::sql("i.run_id")
        )))
        .bind(&range.from)
        .bind(&range.to)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|r| {
                // Votes and asks that no later one replaced.
                let standing = super::votes::parse(&r.interrupt_id, &r.votes)?
                    .iter()
                    .filter(|v| !v.superseded)
                    .count();
                Ok((
                    r.run_id,
                    r.node_id,
                    r.kind,
                    r.title,
                    r.workflow_id,
                    r.created_at,
                    r.deadline_at,
                    standing as i64,
                ))
            })
            .collect()
    }

    /// Undelivered outbox messages of a tenant's runs.
    pub(crate) async fn outbox_backlog_of(&self, tenant: &str) -> Result<i64> {
        let range = TenantRange::of(tenant);
        Ok(sqlx::query_scalar(&self.q(&format!(
            "SELECT COUNT(*) FROM outbox WHERE status = 'pending' AND {}",
            TenantRange::sql("run_id")
        )))
        .bind(&range.from)
        .bind(&range.to)
        .fetch_one(&self.read)
        .await?)
    }

    /// Runs of a tenant per stored status.
    pub(crate) async fn run_status_counts(&self, tenant: &str) -> Result<Vec<(String, i64)>> {
        Ok(sqlx::query_as(&self.q(RUN_STATUS_COUNTS_SQL))
            .bind(tenant)
            .fetch_all(&self.read)
            .await?)
    }

    /// Interrupts of a tenant resolved at or after `since`.
    pub(crate) async fn resolved_since(&self, tenant: &str, since: Millis) -> Result<Vec<ResolvedTuple>> {
        let range = TenantRange::of(tenant);
        let dialect = self.dialect();
        Ok(sqlx::query_as(&self.q(&format!(
            "SELECT resolved_at, kind, {}, {}, {} \
             FROM interrupts WHERE status = 'resolved' AND resolved_at >= ? AND {}",
            dialect.json_text("resolution", "decision"),
            dialect.json_text("resolution", "reason"),
            dialect.json_text("resolution", "action"),
            TenantRange::sql("run_id")
        )))
        .bind(since)
        .bind(&range.from)
        .bind(&range.to)
        .fetch_all(&self.read)
        .await?)
    }

    /// How many runs match, and one page of them, newest first.
    pub(crate) async fn run_page(&self, q: &RunQuery<'_>) -> Result<(i64, Vec<RunTuple>)> {
        let status = q.status.map(RunStatus::as_str);
        let total: i64 = sqlx::query_scalar(&self.q(RUN_PAGE_COUNT_SQL))
            .bind(q.tenant)
            .bind(status)
            .bind(status)
            .bind(q.workflow_id)
            .bind(q.workflow_id)
            .fetch_one(&self.read)
            .await?;
        let rows = sqlx::query_as(&self.q(&RUN_PAGE_SQL))
            .bind(q.tenant)
            .bind(status)
            .bind(status)
            .bind(q.workflow_id)
            .bind(q.workflow_id)
            .bind(q.limit)
            .bind(q.offset)
            .fetch_all(&self.read)
            .await?;
        Ok((total, rows))
    }

    /// The workflows a tenant has runs of.
    pub(crate) async fn run_workflows(&self, tenant: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(&self.q(RUN_WORKFLOWS_SQL))
            .bind(tenant)
            .fetch_all(&self.read)
            .await?)
    }

    /// A run with its stored error and its tenant.
    pub(crate) async fn timeline_run(
        &self,
        run_id: &str,
    ) -> Result<Option<(RunTuple, Option<String>, String)>> {
        type Full = (
            String,
            String,
            String,
            Option<String>,
            String,
            Millis,
            Option<Millis>,
            Option<String>,
            String,
        );
        let row: Option<Full> = sqlx::query_as(&self.q(&format!(
            "SELECT {RUN_COLUMNS}, error, tenant FROM runs WHERE run_id = ?"
        )))
        .bind(run_id)
        .fetch_optional(&self.read)
        .await?;
        Ok(row.map(|(a, b, c, d, e, f, g, error, t)| ((a, b, c, d, e, f, g), error, t)))
    }

    /// A run's events, in order, as stored.
    pub(crate) async fn event_rows(&self, run_id: &str) -> Result<Vec<EventTuple>> {
        Ok(sqlx::query_as(super::event_log::timeline_sql(self.dialect))
            .bind(run_id)
            .bind(i64::MIN)
            .bind(i64::MAX)
            .fetch_all(&self.read)
            .await?)
    }

    /// Every vote on a run's interrupts, in the order they were cast.
    pub(crate) async fn audit(&self, run_id: &str) -> Result<Vec<AuditTuple>> {
        let interrupts: Vec<(String, String, i64, String)> = sqlx::query_as(&self.q(
            "SELECT interrupt_id, node_id, visit, votes FROM interrupts WHERE run_id = ? AND votes <> '[]'",
        ))
        .bind(run_id)
        .fetch_all(&self.read)
        .await?;
        let mut cast = Vec::new();
        for (interrupt_id, node_id, visit, votes) in interrupts {
            for (seq, v) in super::votes::parse(&interrupt_id, &votes)?
                .into_iter()
                .enumerate()
            {
                cast.push(((v.decided_at, node_id.clone(), seq), visit, v));
            }
        }
        cast.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(cast
            .into_iter()
            .map(|((decided_at, node_id, _), visit, v)| {
                (
                    node_id,
                    visit,
                    v.principal,
                    v.action.as_str().to_string(),
                    v.eligible_via,
                    decided_at,
                    i64::from(v.superseded),
                    v.cast_by,
                )
            })
            .collect())
    }

    /// A tenant's principals, by id.
    pub(crate) async fn tenant_principals(&self, tenant: &str) -> Result<Vec<PrincipalTuple>> {
        Ok(sqlx::query_as(&self.q(TENANT_PRINCIPALS_SQL))
            .bind(tenant)
            .fetch_all(&self.read)
            .await?)
    }

    /// The keys of a tenant's principals, live first, newest first.
    pub(crate) async fn tenant_api_keys(&self, tenant: &str) -> Result<Vec<ApiKeyTuple>> {
        Ok(sqlx::query_as(&self.q(
            "SELECT k.key_hash, k.principal, k.scopes, k.label, k.created_at, k.revoked_at \
             FROM api_keys k JOIN principals p ON p.id = k.principal WHERE p.tenant = ? \
             ORDER BY k.revoked_at IS NOT NULL, k.created_at DESC",
        ))
        .bind(tenant)
        .fetch_all(&self.read)
        .await?)
    }

    /// (digest, tenant) of every key whose digest starts with `prefix`.
    pub(crate) async fn keys_by_prefix(&self, prefix: &str) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as(&self.q(
            "SELECT k.key_hash, p.tenant FROM api_keys k JOIN principals p ON p.id = k.principal \
             WHERE substr(k.key_hash, 1, CAST(? AS INTEGER)) = ?",
        ))
        .bind(prefix.len() as i64)
        .bind(prefix)
        .fetch_all(&self.read)
        .await?)
    }

    /// (principal, scopes, label, created_at, revoked_at) of one key.
    pub(crate) async fn api_key(
        &self,
        hash: &str,
    ) -> Result<(String, String, Option<String>, Millis, Option<Millis>)> {
        Ok(sqlx::query_as(
            &self.q(
                "SELECT principal, scopes, label, created_at, revoked_at FROM api_keys WHERE key_hash = ?",
            ),
        )
        .bind(hash)
        .fetch_one(&self.read)
        .await?)
    }
}
