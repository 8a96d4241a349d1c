//! The inbox's statements (see `Engine::pending_for`): the groups of a
//! tenant's pending interrupts, a page over the groups that admit a person,
//! the counted votes of that page, and the rules an eligibility check reads.

use super::{Dialect, Store, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::engine::inbox::InboxSort;
use crate::error::{EngineError, Result};
use crate::ids::TenantRange;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::LazyLock;
use tollgate_wire::{ApprovalAction, InterruptKind};

/// Pending interrupts of a tenant that share a rule group (kind, stored
/// rules, workflow) and whether `me` started their run, with how many there are.
pub(crate) struct InboxGroup {
    pub group_key: String,
    pub kind: String,
    pub eligibility: String,
    pub workflow_id: String,
    /// 1 when `me` started the run.
    pub mine: i64,
    /// The runs' owner as the rules see it: `me` when `mine`, else nobody.
    pub owner: String,
    pub count: i64,
}

/// A group that admits the person, by the ref that admits them (`via`).
pub(crate) struct Admitted {
    pub group_key: String,
    pub mine: i64,
    pub via: String,
    /// The group's stored rules, which every row of it has (the inbox index
    /// does not carry them: migration 0027).
    pub eligibility: String,
}

/// The rule group of an interrupt: a digest of what decides who may answer it.
pub(crate) fn group_key(tenant: &str, kind: InterruptKind, workflow_id: &str, eligibility: &str) -> String {
    let mut h = Sha256::new();
    for part in [tenant, kind.as_str(), workflow_id, eligibility] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    hex::encode(&h.finalize()[..16])
}

/// The counter row a command adds to: one group's count is the sum of its
/// rows. On PostgreSQL each connection has its own (by backend process, of
/// which at most one command runs at a time), so that concurrent commands
/// never wait for each other's counter row; SQLite has one writer and one row.
fn slot(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "0",
        Dialect::Postgres => "(pg_backend_pid() % 256)",
    }
}

/// What both kinds of counter row conflict on (see migration 0024).
const COUNT_KEY: &str = "ON CONFLICT (per_owner, owner_subject, group_key, shard) \
     DO UPDATE SET pending = inbox_counts.pending + excluded.pending";

/// `INSERT … ON CONFLICT` adding `delta` (±1) to the group's count and to
/// its count of one person's requests, on this connection's counter rows
/// (binds the group key, the owner subject, the group key).
pub(crate) fn add_to_count(dialect: Dialect, delta: i64) -> &'static str {
    static SQL: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
        [Dialect::Sqlite, Dialect::Postgres].map(|d| {
            [1, -1].map(|delta| {
                let shard = slot(d);
                format!(
                    "{} inbox_counts (per_owner, owner_subject, group_key, shard, pending) \
                     VALUES (0, '', ?, {shard}, {delta}), (1, ?, ?, {shard}, {delta}) {COUNT_KEY}",
                    d.insert_rows()
                )
            })
        })
    });
    &SQL[usize::from(dialect == Dialect::Postgres)][usize::from(delta < 0)]
}

/// Both kinds of counter row (see migration 0024) for the pending
/// interrupts with a group that `only` keeps (`AND …`, its binds given twice),
/// as a `SELECT` of `sign` times their count on `shard`.
fn counted_rows(sign: &str, shard: &str, only: &str) -> String {
    let pending = format!("FROM interrupts WHERE status = 'pending' AND inbox_group IS NOT NULL{only}");
    format!(
        "SELECT 0, '', inbox_group, {shard}, {sign}COUNT(*) {pending} GROUP BY inbox_group \
         UNION ALL \
         SELECT 1, owner_subject, inbox_group, {shard}, {sign}COUNT(*) {pending} GROUP BY owner_subject, inbox_group"
    )
}

/// Takes a run's pending interrupts off their groups' counts and their
/// owners' (binds the run id twice; run it before they are closed).
pub(crate) fn uncount_run(dialect: Dialect) -> &'static str {
    static SQL: LazyLock<[String; 2]> = LazyLock::new(|| {
        [Dialect::Sqlite, Dialect::Postgres].map(|d| {
            format!(
                "{} inbox_counts (per_owner, owner_subject, group_key, shard, pending) {} {COUNT_KEY}",
                d.insert_rows(),
                counted_rows("-", slot(d), " AND run_id = ?")
            )
        })
    });
    &SQL[usize::from(dialect == Dialect::Postgres)]
}

/// Gives pending interrupts stored before the kept counts (migration 0011)
/// their group, and rebuilds the counts from the rows when it did. Returns
/// how many it gave a group.
pub(crate) fn backfill(conn: &WriteConn) -> Result<usize> {
    let rows: Vec<(String, String, InterruptKind, String, String)> = conn.query_map(
        "SELECT interrupt_id, run_id, kind, workflow_id, eligibility FROM interrupts WHERE status = 'pending' AND inbox_group IS NULL",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )?;
    if rows.is_empty() {
        return Ok(0);
    }
    if conn.dialect() == Dialect::Postgres {
        // Other instances' commands wait until the counts are whole again.
        conn.execute_batch("LOCK TABLE inbox_counts IN EXCLUSIVE MODE")?;
    }
    for (interrupt_id, run_id, kind, workflow_id, eligibility) in &rows {
        let tenant = crate::ids::tenant_of(run_id);
        let group = group_key(tenant, *kind, workflow_id, eligibility);
        conn.execute(
            "INSERT INTO inbox_groups (group_key, tenant, kind, workflow_id, eligibility) VALUES (?, ?, ?, ?, ?) ON CONFLICT (group_key) DO NOTHING",
            args![group, tenant, kind.as_str(), workflow_id, eligibility],
        )?;
        conn.execute(
            "UPDATE interrupts SET inbox_group = ? WHERE interrupt_id = ?",
            args![group, interrupt_id],
        )?;
    }
    conn.execute("DELETE FROM inbox_counts", &[])?;
    static RECOUNT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "INSERT INTO inbox_counts (per_owner, owner_subject, group_key, shard, pending) {}",
            counted_rows("", "0", "")
        )
    });
    conn.execute(&RECOUNT, &[])?;
    Ok(rows.len())
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
    /// From the row's group ([`Admitted::eligibility`]), not the statement.
    #[sqlx(skip)]
    pub eligibility: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct PendingRowOf {
    #[sqlx(flatten)]
    row: PendingRow,
    inbox_group: String,
    owner_subject: String,
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

/// What narrows the inbox beyond its groups: a deadline window and a
/// search pattern. Empty for the plain inbox, whose statements stay as they were.
#[derive(Default)]
pub(crate) struct Narrow {
    /// Deadline after this (exclusive).
    pub deadline_after: Option<Millis>,
    /// Deadline at or before this.
    pub deadline_by: Option<Millis>,
    /// Only interrupts without a deadline.
    pub no_deadline: bool,
    /// A `LIKE` pattern over the lower-cased title and request, `\` escaping.
    pub pattern: Option<String>,
    /// Leave out this person's own requests (a delegate's view of another's inbox).
    pub not_owner: Option<String>,
}

impl Narrow {
    pub fn is_empty(&self) -> bool {
        self.deadline_after.is_none()
            && self.deadline_by.is_none()
            && !self.no_deadline
            && self.pattern.is_none()
            && self.not_owner.is_none()
    }

    /// The `AND …` conditions, each with a `?` bound by [`Narrow::bind`].
    fn sql(&self) -> String {
        let mut sql = String::new();
        if self.deadline_after.is_some() {
            sql.push_str(" AND i.deadline_at > ?");
        }
        if self.deadline_by.is_some() {
            sql.push_str(" AND i.deadline_at <= ?");
        }
        if self.no_deadline {
            sql.push_str(" AND i.deadline_at IS NULL");
        }
        if self.pattern.is_some() {
            // LOWER folds ASCII only on both back ends; the pattern is folded the same way.
            sql.push_str(
                " AND (LOWER(i.title) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(i.request, '')) LIKE ? ESCAPE '\\')",
            );
        }
        if self.not_owner.is_some() {
            sql.push_str(" AND i.owner_subject <> ?");
        }
        sql
    }

    fn bind<'q, O>(
        &'q self,
        mut q: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
        for t in [self.deadline_after, self.deadline_by].into_iter().flatten() {
            q = q.bind(t);
        }
        if let Some(p) = &self.pattern {
            q = q.bind(p.as_str()).bind(p.as_str());
        }
        if let Some(o) = &self.not_owner {
            q = q.bind(o.as_str());
        }
        q
    }
}

/// `text` as a `LIKE` pattern matching it anywhere, ASCII lower-cased, with
/// `%`, `_` and the escape character `\` taken literally.
pub(crate) fn contains_pattern(text: &str) -> String {
    let mut p = String::with_capacity(text.len() + 2);
    p.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c.to_ascii_lowercase());
    }
    p.push('%');
    p
}

/// What one page asks for.
pub(crate) struct PageQuery<'a> {
    pub tenant: &'a str,
    pub me: &'a str,
    pub narrow: &'a Narrow,
    pub sort: InboxSort,
    pub limit: i64,
    pub offset: i64,
}

/// A range of the inbox read in one order: the rows `only` (`AND …`) keeps,
/// in `order`, on `index` (named to SQLite).
struct Part {
    only: &'static str,
    order: &'static str,
    index: &'static str,
}

impl Store {
    /// Pending interrupts over the whole instance, summed from the counts
    /// every write keeps (the groups' rows of `inbox_counts`, per shard)
    /// instead of counted row by row: a scrape costs the same at a million
    /// pending as at none. Every pending interrupt has a group (the engine
    /// gives older rows theirs when it opens, [`backfill`]).
    pub(crate) async fn pending_total(&self) -> Result<i64> {
        Ok(sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(pending), 0) AS BIGINT) FROM inbox_counts WHERE per_owner = 0",
        )
        .fetch_one(&self.read)
        .await?)
    }

    /// A tenant's rule groups with pending interrupts, each split by whether
    /// `me` started the run: the groups' counts and `me`'s, both kept with
    /// every write.
    pub(crate) async fn inbox_groups(&self, tenant: &str, me: &str) -> Result<Vec<InboxGroup>> {
        let totals: Vec<(String, String, String, String, i64)> = sqlx::query_as(&self.q(
            "SELECT g.group_key, g.kind, g.eligibility, g.workflow_id, CAST(SUM(c.pending) AS BIGINT) \
             FROM inbox_groups g JOIN inbox_counts c \
               ON c.per_owner = 0 AND c.owner_subject = '' AND c.group_key = g.group_key \
             WHERE g.tenant = ? GROUP BY g.group_key, g.kind, g.eligibility, g.workflow_id HAVING SUM(c.pending) > 0",
        ))
        .bind(tenant)
        .fetch_all(&self.read)
        .await?;
        let own: Vec<(String, i64)> =
            sqlx::query_as(&self.q("SELECT c.group_key, CAST(SUM(c.pending) AS BIGINT) \
             FROM inbox_counts c JOIN inbox_groups g ON g.group_key = c.group_key \
             WHERE c.per_owner = 1 AND c.owner_subject = ? AND g.tenant = ? \
             GROUP BY c.group_key HAVING SUM(c.pending) > 0"))
            .bind(me)
            .bind(tenant)
            .fetch_all(&self.read)
            .await?;
        let mut groups = Vec::with_capacity(totals.len() + own.len());
        for (group_key, kind, eligibility, workflow_id, total) in totals {
            let mine = own.iter().find(|(g, _)| *g == group_key).map_or(0, |(_, n)| *n);
            for (is_mine, count) in [(0, total - mine), (1, mine)] {
                if count > 0 {
                    groups.push(InboxGroup {
                        group_key: group_key.clone(),
                        kind: kind.clone(),
                        eligibility: eligibility.clone(),
                        workflow_id: workflow_id.clone(),
                        mine: is_mine,
                        owner: if is_mine == 1 {
                            me.to_string()
                        } else {
                            String::new()
                        },
                        count,
                    });
                }
            }
        }
        Ok(groups)
    }

    /// Where the kept counts of a tenant's groups, or of its people's own
    /// requests in them, differ from its pending rows, one line each (empty
    /// when they agree; see `verify_projection`).
    pub(crate) async fn inbox_drift(&self, tenant: &str) -> Result<Vec<String>> {
        let range = TenantRange::of(tenant);
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(&self.q(&format!(
            "SELECT g.group_key, CAST(COALESCE((SELECT SUM(c.pending) FROM inbox_counts c \
                 WHERE c.per_owner = 0 AND c.owner_subject = '' AND c.group_key = g.group_key), 0) AS BIGINT), \
               (SELECT COUNT(*) FROM interrupts i WHERE i.inbox_group = g.group_key AND i.status = 'pending') \
             FROM inbox_groups g WHERE g.tenant = ? \
             UNION ALL SELECT '(none)', 0, COUNT(*) FROM interrupts WHERE status = 'pending' AND inbox_group IS NULL AND {}",
            TenantRange::sql("run_id")
        )))
        .bind(tenant)
        .bind(&range.from)
        .bind(&range.to)
        .fetch_all(&self.read)
        .await?;
        let mut drift: Vec<String> = rows
            .into_iter()
            .filter(|(_, kept, actual)| kept != actual)
            .map(|(group, kept, actual)| {
                format!("inbox count of group {group}: kept {kept}, pending {actual}")
            })
            .collect();
        // Each person's own requests, by group: (kept, pending).
        let mut owners: std::collections::BTreeMap<(String, String), (i64, i64)> = Default::default();
        let kept: Vec<(String, String, i64)> = sqlx::query_as(&self.q(
            "SELECT c.owner_subject, c.group_key, CAST(SUM(c.pending) AS BIGINT) \
             FROM inbox_counts c JOIN inbox_groups g ON g.group_key = c.group_key \
             WHERE c.per_owner = 1 AND g.tenant = ? GROUP BY c.owner_subject, c.group_key",
        ))
        .bind(tenant)
        .fetch_all(&self.read)
        .await?;
        for (owner, group, n) in kept {
            owners.entry((owner, group)).or_default().0 = n;
        }
        let pending: Vec<(String, String, i64)> = sqlx::query_as(&self.q(&format!(
            "SELECT owner_subject, inbox_group, COUNT(*) FROM interrupts \
             WHERE status = 'pending' AND inbox_group IS NOT NULL AND {} GROUP BY owner_subject, inbox_group",
            TenantRange::sql("run_id")
        )))
        .bind(&range.from)
        .bind(&range.to)
        .fetch_all(&self.read)
        .await?;
        for (owner, group, n) in pending {
            owners.entry((owner, group)).or_default().1 = n;
        }
        drift.extend(
            owners
                .into_iter()
                .filter(|(_, (kept, actual))| kept != actual)
                .map(|((owner, group), (kept, actual))| {
                    format!(
                        "inbox count of {owner:?}'s requests in group {group}: kept {kept}, pending {actual}"
                    )
                }),
        );
        Ok(drift)
    }

    /// The condition picking a tenant's pending interrupts of the admitted
    /// groups, with the texts it binds in order (then the tenant range).
    /// A plain filter rather than a join, so that both planners walk the
    /// page's index in order and stop after the page (see docs/performance.md).
    fn admitted_filter<'a>(&self, admitted: &'a [Admitted], me: &'a str) -> (String, Vec<&'a str>) {
        let mut any = Vec::new();
        let mut terms = Vec::new();
        let mut binds = Vec::new();
        for a in admitted {
            let both = admitted
                .iter()
                .any(|b| b.group_key == a.group_key && b.mine != a.mine);
            if both {
                if a.mine == 0 {
                    any.push(a.group_key.as_str());
                }
            } else {
                let owner = if a.mine == 1 { "=" } else { "<>" };
                terms.push(format!("(i.inbox_group = ? AND i.owner_subject {owner} ?)"));
                binds.extend([a.group_key.as_str(), me]);
            }
        }
        if !any.is_empty() {
            terms.insert(
                0,
                format!("i.inbox_group IN ({})", vec!["?"; any.len()].join(", ")),
            );
            binds.splice(0..0, any);
        }
        let sql = format!(
            "i.status = 'pending' AND ({}) AND {}",
            terms.join(" OR "),
            TenantRange::sql("i.run_id")
        );
        (sql, binds)
    }

    /// How many pending interrupts of the admitted groups `narrow` keeps.
    pub(crate) async fn inbox_narrowed_count(
        &self,
        admitted: &[Admitted],
        tenant: &str,
        me: &str,
        narrow: &Narrow,
    ) -> Result<i64> {
        self.count_part(admitted, tenant, me, narrow, "").await
    }

    /// [`Store::inbox_narrowed_count`] of the rows `part` (`AND …`) keeps.
    async fn count_part(
        &self,
        admitted: &[Admitted],
        tenant: &str,
        me: &str,
        narrow: &Narrow,
        part: &str,
    ) -> Result<i64> {
        if admitted.is_empty() {
            return Ok(0);
        }
        let range = TenantRange::of(tenant);
        let (filter, binds) = self.admitted_filter(admitted, me);
        let sql = self
            .q(&format!(
                "SELECT COUNT(*) FROM interrupts i WHERE {filter}{}{part}",
                narrow.sql()
            ))
            .into_owned();
        let mut q = sqlx::query_as::<_, (i64,)>(&sql);
        for b in binds {
            q = q.bind(b);
        }
        q = q.bind(&range.from).bind(&range.to);
        Ok(narrow.bind(q).fetch_one(&self.read).await?.0)
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
        // Each order reads an index that serves it (migrations 0011 and
        // 0021, postgres/0002 and 0009).
        let all = Part {
            only: "",
            order: "i.created_at DESC, i.interrupt_id",
            index: "interrupts_inbox",
        };
        match page.sort {
            InboxSort::Newest => {
                self.page_part(admitted, page, &all, page.limit, page.offset)
                    .await
            }
            InboxSort::Oldest => {
                let oldest = Part {
                    order: "i.created_at ASC, i.interrupt_id",
                    ..all
                };
                self.page_part(admitted, page, &oldest, page.limit, page.offset)
                    .await
            }
            // Soonest deadline first, those without one last (oldest first):
            // two ranges, since only interrupts with a deadline are indexed by it.
            // The reads are separate snapshots; no row is in both, since a
            // deadline is never changed after the interrupt is raised, so a
            // write between them only moves the boundary, as between pages.
            InboxSort::Deadline => {
                let dated = Part {
                    only: " AND i.deadline_at IS NOT NULL",
                    order: "i.deadline_at, i.created_at, i.interrupt_id",
                    index: "interrupts_deadline",
                };
                let undated = Part {
                    only: " AND i.deadline_at IS NULL",
                    order: "i.created_at ASC, i.interrupt_id",
                    index: "interrupts_inbox",
                };
                let narrow = page.narrow;
                let mut rows = if narrow.no_deadline {
                    vec![]
                } else {
                    self.page_part(admitted, page, &dated, page.limit, page.offset)
                        .await?
                };
                let room = page.limit - rows.len() as i64;
                if room == 0 || narrow.deadline_after.is_some() || narrow.deadline_by.is_some() {
                    return Ok(rows);
                }
                // Where the undated range starts: past the dated rows before this page.
                let dated_total = if !rows.is_empty() {
                    page.offset + rows.len() as i64
                } else if narrow.no_deadline || page.offset == 0 {
                    0
                } else {
                    self.count_part(admitted, page.tenant, page.me, narrow, dated.only)
                        .await?
                };
                let offset = (page.offset - dated_total).max(0);
                rows.extend(self.page_part(admitted, page, &undated, room, offset).await?);
                Ok(rows)
            }
        }
    }

    /// Rows of one [`Part`] of the inbox, `limit` from `offset`.
    async fn page_part(
        &self,
        admitted: &[Admitted],
        page: &PageQuery<'_>,
        part: &Part,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<(PendingRow, String)>> {
        let range = TenantRange::of(page.tenant);
        let (filter, binds) = self.admitted_filter(admitted, page.me);
        let narrow = page.narrow.sql();
        // SQLite is told the index; PostgreSQL chooses by statistics.
        let hint = match self.dialect() {
            Dialect::Sqlite => format!("INDEXED BY {}", part.index),
            Dialect::Postgres => String::new(),
        };
        let (only, order) = (part.only, part.order);
        let sql = self
            .q(&format!(
                "SELECT i.interrupt_id, i.run_id, i.node_id, i.kind, i.title, i.workflow_id, \
                 i.created_at, i.deadline_at, i.inbox_group, i.owner_subject FROM interrupts i {hint} \
                 WHERE {filter}{narrow}{only} ORDER BY {order} LIMIT ? OFFSET ?"
            ))
            .into_owned();
        let mut q = sqlx::query_as::<_, PendingRowOf>(&sql);
        for b in binds {
            q = q.bind(b);
        }
        q = q.bind(&range.from).bind(&range.to);
        q = page.narrow.bind(q);
        let rows = q.bind(limit).bind(offset).fetch_all(&self.read).await?;
        rows.into_iter()
            .map(|mut r| {
                let mine = i64::from(r.owner_subject == page.me);
                let group = admitted
                    .iter()
                    .find(|a| a.group_key == r.inbox_group && a.mine == mine)
                    .ok_or_else(|| {
                        EngineError::Storage(format!("inbox row {} outside its groups", r.row.interrupt_id))
                    })?;
                r.row.eligibility = group.eligibility.clone();
                Ok((r.row, group.via.clone()))
            })
            .collect()
    }

    /// The counted votes on these interrupts, in one query.
    pub(crate) async fn counted_votes(&self, interrupt_ids: &[&str]) -> Result<Vec<CountedVote>> {
        if interrupt_ids.is_empty() {
            return Ok(vec![]);
        }
        let marks = vec!["?"; interrupt_ids.len()].join(", ");
        let sql = format!(
            "SELECT interrupt_id, votes, {} FROM interrupts WHERE interrupt_id IN ({marks}) AND votes <> '[]'",
            self.dialect().json_member("payload", "data.artifactData")
        );
        let sql = self.q(&sql).into_owned();
        let mut q = sqlx::query_as::<_, (String, String, Option<String>)>(&sql);
        for id in interrupt_ids {
            q = q.bind(*id);
        }
        let mut counted = Vec::new();
        for (interrupt_id, votes, original) in q.fetch_all(&self.read).await? {
            let votes: Vec<_> = super::votes::parse(&interrupt_id, &votes)?
                .into_iter()
                .filter(|v| v.counts())
                .collect();
            if votes.is_empty() {
                continue;
            }
            let original: Option<Value> = original
                .map(|o| serde_json::from_str(&o))
                .transpose()
                .map_err(|e| EngineError::Storage(format!("interrupts.payload of {interrupt_id}: {e}")))?;
            for vote in votes {
                counted.push(CountedVote {
                    interrupt_id: interrupt_id.clone(),
                    principal: vote.principal,
                    action: vote.action,
                    resume_value: vote.resume_value,
                    original: original.clone(),
                });
            }
        }
        Ok(counted)
    }

    /// What the inbox summarises of each interrupt: its payload's `data`
    /// (`{data: …}`), or of an approval only `data.description` (its
    /// artifact may be large and is not summarised). One query per page.
    pub(crate) async fn summary_payloads(&self, interrupt_ids: &[&str]) -> Result<Vec<(String, Value)>> {
        if interrupt_ids.is_empty() {
            return Ok(vec![]);
        }
        let marks = vec!["?"; interrupt_ids.len()].join(", ");
        let d = self.dialect();
        let sql = format!(
            "SELECT interrupt_id, kind, CASE WHEN kind = 'approval' THEN {} ELSE {} END \
             FROM interrupts WHERE interrupt_id IN ({marks})",
            d.json_member("payload", "data.description"),
            d.json_member("payload", "data"),
        );
        let sql = self.q(&sql).into_owned();
        let mut q = sqlx::query_as::<_, (String, String, Option<String>)>(&sql);
        for id in interrupt_ids {
            q = q.bind(*id);
        }
        q.fetch_all(&self.read)
            .await?
            .into_iter()
            .map(|(interrupt_id, kind, member)| {
                let member: Value = member
                    .map(|m| serde_json::from_str(&m))
                    .transpose()
                    .map_err(|e| EngineError::Storage(format!("interrupts.payload of {interrupt_id}: {e}")))?
                    .unwrap_or(Value::Null);
                let payload = if kind == InterruptKind::Approval.as_str() {
                    serde_json::json!({"data": {"description": member}})
                } else {
                    serde_json::json!({"data": member})
                };
                Ok((interrupt_id, payload))
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
}

#[cfg(test)]
mod tests {
    use crate::store::{Durability, Store};

    /// Migration 0024 (postgres/0012) on a store written before it: the
    /// groups' counts carry over as they were, and each person's own pending
    /// requests are counted from the rows (decided ones not).
    #[tokio::test]
    async fn the_migration_counts_each_persons_own_requests() {
        let dir = tempfile::tempdir().unwrap();
        let mut setup = String::from(
            "INSERT INTO inbox_groups (group_key, tenant, kind, workflow_id, eligibility) VALUES \
             ('g', 't', 'approval', 'w', 'null'), ('h', 'u', 'approval', 'w', 'null');\n\
             INSERT INTO inbox_counts (group_key, shard, pending) VALUES ('g', 0, 3), ('h', 0, 1);\n",
        );
        for (id, run, owner, status, group) in [
            ("t/i1", "t/r1", "t/ann", "pending", "g"),
            ("t/i2", "t/r2", "t/ann", "pending", "g"),
            ("t/i3", "t/r3", "t/bob", "pending", "g"),
            ("t/i4", "t/r4", "t/ann", "resolved", "g"),
            ("u/i5", "u/r5", "t/ann", "pending", "h"),
        ] {
            setup.push_str(&format!(
                "INSERT INTO interrupts (interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, eligibility, workflow_id, title, owner_subject, created_at, inbox_group) \
                 VALUES ('{id}', '{run}', 'gate', '{id}', 1, 'approval', '{status}', '{{}}', '{{}}', 'null', 'w', 't', '{owner}', 0, '{group}');\n"
            ));
        }
        let url = crate::store::testing::migrated_before(&dir.path().join("old.db"), "0024", "0012", &setup)
            .await
            .unwrap();
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let split = |groups: Vec<super::InboxGroup>| {
            groups
                .into_iter()
                .map(|g| (g.group_key, g.mine, g.count))
                .collect::<Vec<_>>()
        };
        let ann = split(store.inbox_groups("t", "t/ann").await.unwrap());
        assert_eq!(ann, [("g".to_string(), 0, 1), ("g".to_string(), 1, 2)]);
        let bob = split(store.inbox_groups("t", "t/bob").await.unwrap());
        assert_eq!(bob, [("g".to_string(), 0, 2), ("g".to_string(), 1, 1)]);
        // Another tenant's group is not in this one's counts, nor this one's in it.
        let other = split(store.inbox_groups("u", "t/ann").await.unwrap());
        assert_eq!(other, [("h".to_string(), 1, 1)]);
        assert!(store.inbox_drift("t").await.unwrap().is_empty());
    }
}
