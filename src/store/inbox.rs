//! The inbox's statements (see `Engine::pending_for`): the groups of a
//! tenant's pending interrupts, a page over the groups that admit a person,
//! the counted votes of that page, and the rules an eligibility check reads.

use super::{Dialect, Store};
use crate::clock::Millis;
use crate::engine::inbox::InboxSort;
use crate::error::{EngineError, Result};
use crate::ids::TenantRange;
use serde_json::Value;
use tollgate_wire::{ApprovalAction, InterruptKind};

/// Pending interrupts of a tenant that share a kind, stored rules, workflow
/// and whether `me` started their run, with how many there are.
pub(crate) struct InboxGroup {
    pub kind: String,
    pub eligibility: String,
    pub workflow_id: String,
    /// 1 when `me` started the run.
    pub mine: i64,
    /// One owner of the group (all are `me` when `mine`, none otherwise).
    pub owner: String,
    pub count: i64,
}

/// A group that admits the person, by the ref that admits them (`via`).
pub(crate) struct Admitted {
    pub kind: String,
    pub eligibility: String,
    pub workflow_id: String,
    pub mine: i64,
    pub via: String,
}

/// One row of an inbox page.
#[derive(sqlx::FromRow)]
pub(crate) struct PendingRow {
    pub interrupt_id: String,
    pub run_id: String,
    pub node_id: String,
    #[sqlx(try_from = "String")]
    pub kind: InterruptKind,
    pub title: String,
    pub workflow_id: String,
    pub eligibility: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct PendingRowVia {
    #[sqlx(flatten)]
    row: PendingRow,
    via: String,
}

/// A counted vote on one of a page's approvals, with the artifact it was asked about.
pub(crate) struct CountedVote {
    pub interrupt_id: String,
    pub principal: String,
    pub action: ApprovalAction,
    pub resume_value: Value,
    /// The approval's `data.artifactData`.
    pub original: Option<Value>,
}

/// Binds the admitted groups' `VALUES` rows, in the order `admitted_join` lists them.
macro_rules! bind_admitted {
    ($query:expr, $admitted:expr) => {{
        let mut q = $query;
        for a in $admitted {
            q = q
                .bind(&a.kind)
                .bind(&a.eligibility)
                .bind(&a.workflow_id)
                .bind(a.mine)
                .bind(&a.via);
        }
        q
    }};
}

/// What one page asks for.
pub(crate) struct PageQuery<'a> {
    pub tenant: &'a str,
    pub me: &'a str,
    /// Only interrupts whose deadline is at or before this.
    pub overdue_at: Option<Millis>,
    pub sort: InboxSort,
    pub limit: i64,
    pub offset: i64,
}

impl Store {
    /// SQLite's planner is told which index serves the inbox (see
    /// docs/performance.md); PostgreSQL's chooses by statistics.
    fn inbox_index_hint(&self) -> &'static str {
        match self.dialect() {
            Dialect::Sqlite => "INDEXED BY interrupts_inbox",
            Dialect::Postgres => "",
        }
    }

    pub(crate) async fn inbox_groups(&self, tenant: &str, me: &str) -> Result<Vec<InboxGroup>> {
        let range = TenantRange::of(tenant);
        let rows: Vec<(String, String, String, i64, String, i64)> = sqlx::query_as(&self.q(&format!(
            "SELECT kind, eligibility, workflow_id, CASE WHEN owner_subject = ? THEN 1 ELSE 0 END AS mine, MIN(owner_subject), COUNT(*) \
             FROM interrupts {} WHERE status = 'pending' AND {} \
             GROUP BY kind, eligibility, workflow_id, mine",
            self.inbox_index_hint(),
            TenantRange::sql("run_id")
        )))
        .bind(me)
        .bind(&range.from)
        .bind(&range.to)
        .fetch_all(&self.read)
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(kind, eligibility, workflow_id, mine, owner, count)| InboxGroup {
                    kind,
                    eligibility,
                    workflow_id,
                    mine,
                    owner,
                    count,
                },
            )
            .collect())
    }

    /// The join of a tenant's pending interrupts with the admitted groups
    /// (`ok`), with the `VALUES` list they are given in.
    fn admitted_join(&self, admitted: &[Admitted], overdue: bool) -> (String, String) {
        let values = vec!["(?, ?, ?, ?, ?)"; admitted.len()].join(", ");
        let overdue = if overdue { " AND i.deadline_at <= ?" } else { "" };
        // CROSS JOIN keeps `interrupts` the outer loop: the newest/oldest
        // page walks the covering index (migration 0005) in created_at
        // order and stops after the page.
        let from_where = format!(
            "FROM interrupts i {} {} ok ON i.kind = ok.kind AND i.eligibility = ok.eligibility \
             AND i.workflow_id = ok.workflow_id AND CASE WHEN i.owner_subject = ? THEN 1 ELSE 0 END = ok.mine \
             WHERE i.status = 'pending' AND {}{overdue}",
            self.inbox_index_hint(),
            match self.dialect() {
                Dialect::Sqlite => "CROSS JOIN",
                Dialect::Postgres => "JOIN",
            },
            TenantRange::sql("i.run_id")
        );
        let with = format!("WITH ok(kind, eligibility, workflow_id, mine, via) AS (VALUES {values}) ");
        (with, from_where)
    }

    /// How many pending interrupts of the admitted groups are overdue at `now`.
    pub(crate) async fn inbox_overdue(
        &self,
        admitted: &[Admitted],
        tenant: &str,
        me: &str,
        now: Millis,
    ) -> Result<i64> {
        if admitted.is_empty() {
            return Ok(0);
        }
        let range = TenantRange::of(tenant);
        let (with, from_where) = self.admitted_join(admitted, true);
        let sql = self
            .q(&format!("{with}SELECT COUNT(*) {from_where}"))
            .into_owned();
        let q = bind_admitted!(sqlx::query_scalar::<_, i64>(&sql), admitted);
        Ok(q.bind(me)
            .bind(&range.from)
            .bind(&range.to)
            .bind(now)
            .fetch_one(&self.read)
            .await?)
    }

    /// One page over the admitted groups, each row with the ref that admits the person.
    pub(crate) async fn inbox_page(
        &self,
        admitted: &[Admitted],
        page: &PageQuery<'_>,
    ) -> Result<Vec<(PendingRow, String)>> {
        if admitted.is_empty() {
            return Ok(vec![]);
        }
        let range = TenantRange::of(page.tenant);
        let (with, from_where) = self.admitted_join(admitted, page.overdue_at.is_some());
        let order = match page.sort {
            InboxSort::Newest => "i.created_at DESC, i.interrupt_id",
            InboxSort::Oldest => "i.created_at ASC, i.interrupt_id",
            InboxSort::Deadline => {
                "i.deadline_at IS NULL, i.deadline_at ASC, i.created_at ASC, i.interrupt_id"
            }
        };
        let sql = self
            .q(&format!(
                "{with}SELECT i.interrupt_id, i.run_id, i.node_id, i.kind, i.title, i.workflow_id, i.eligibility, \
                 i.created_at, i.deadline_at, ok.via {from_where} ORDER BY {order} LIMIT ? OFFSET ?"
            ))
            .into_owned();
        let mut q = bind_admitted!(sqlx::query_as::<_, PendingRowVia>(&sql), admitted);
        q = q.bind(page.me).bind(&range.from).bind(&range.to);
        if let Some(now) = page.overdue_at {
            q = q.bind(now);
        }
        Ok(q.bind(page.limit)
            .bind(page.offset)
            .fetch_all(&self.read)
            .await?
            .into_iter()
            .map(|r| (r.row, r.via))
            .collect())
    }

    /// The counted votes on these interrupts, in one query.
    pub(crate) async fn counted_votes(&self, interrupt_ids: &[&str]) -> Result<Vec<CountedVote>> {
        if interrupt_ids.is_empty() {
            return Ok(vec![]);
        }
        let marks = vec!["?"; interrupt_ids.len()].join(", ");
        let sql = format!(
            "SELECT v.interrupt_id, v.principal, v.action, v.resume_value, \
             (SELECT {} FROM interrupts i WHERE i.interrupt_id = v.interrupt_id) \
             FROM votes v WHERE v.superseded = 0 AND v.action <> 'ask' AND v.interrupt_id IN ({marks})",
            self.dialect().json_member("i.payload", "data.artifactData")
        );
        let sql = self.q(&sql).into_owned();
        let mut q = sqlx::query_as::<_, (String, String, String, String, Option<String>)>(&sql);
        for id in interrupt_ids {
            q = q.bind(*id);
        }
        q.fetch_all(&self.read)
            .await?
            .into_iter()
            .map(|(interrupt_id, principal, action, rv, original)| {
                Ok(CountedVote {
                    action: action.parse()?,
                    resume_value: serde_json::from_str(&rv)
                        .map_err(|e| EngineError::Storage(format!("votes.resume_value: {e}")))?,
                    original: original
                        .map(|o| serde_json::from_str(&o))
                        .transpose()
                        .map_err(|e| {
                            EngineError::Storage(format!("interrupts.payload of {interrupt_id}: {e}"))
                        })?,
                    interrupt_id,
                    principal,
                })
            })
            .collect()
    }

    /// (kind, stored rules, owner) of every interrupt of a run.
    pub(crate) async fn rules_of_run(&self, run_id: &str) -> Result<Vec<(InterruptKind, String, String)>> {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            &self.q("SELECT kind, eligibility, owner_subject FROM interrupts WHERE run_id = ?"),
        )
        .bind(run_id)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(kind, rules, owner)| Ok((kind.parse()?, rules, owner)))
            .collect()
    }

    /// (stored rules, owner) of one interrupt.
    pub(crate) async fn rules_of(&self, interrupt_id: &str) -> Result<Option<(String, String)>> {
        Ok(sqlx::query_as(
            &self.q("SELECT eligibility, owner_subject FROM interrupts WHERE interrupt_id = ?"),
        )
        .bind(interrupt_id)
        .fetch_optional(&self.read)
        .await?)
    }

    /// The ids of a tenant's principals, by name.
    pub(crate) async fn principal_ids(&self, tenant: &str) -> Result<Vec<String>> {
        Ok(
            sqlx::query_scalar(&self.q("SELECT id FROM principals WHERE tenant = ? ORDER BY name, id"))
                .bind(tenant)
                .fetch_all(&self.read)
                .await?,
        )
    }
}
