//! What one write command decided, as typed changes, and the one place that
//! turns them into statements.
//!
//! The runtime's rules (firing nodes, raising and resolving interrupts,
//! tallying votes, routing, settling the run) work on loaded state and say
//! what to write as a list of [`Change`]s; [`apply`] writes them in order
//! inside the command's transaction. The rules never see SQL, and a rule's
//! unit test can read what it decided without a database.

use super::nodes::NodeDocument;
use super::{event_log, inbox, json_text, Dialect, NewestEvent, Val, WriteConn};
use crate::clock::Millis;
use crate::error::Result;
use std::sync::LazyLock;
use tollgate_wire::{EventType, InterruptKind, MailReason, NodeId, RunId, RunStatus};

/// A new pending interrupt (the `interrupts` row `raise` stores).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewInterrupt {
    /// The SQLite `rowid` its row gets, which its node state names
    /// (`nodes::InterruptRef`); `None` on PostgreSQL.
    pub row_id: Option<i64>,
    pub interrupt_id: String,
    pub run_id: RunId,
    pub node_id: NodeId,
    pub key: String,
    pub visit: i64,
    pub kind: InterruptKind,
    /// The `interrupt.requested` payload, serialised.
    pub payload: String,
    pub contract: String,
    pub request: String,
    /// Approval rules as JSON (`null` for other kinds).
    pub rules: String,
    pub workflow_id: String,
    pub title: String,
    /// Whose request this is: the run's `requestedBy`, else its owner
    /// (`RunRow::requester`); the inbox splits on it and mail never offers
    /// them a decision.
    pub owner_subject: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
}

/// Where a pending interrupt is counted in the inbox: its rule group, and
/// whose request it is (`interrupts.inbox_group`, `owner_subject`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InboxCount {
    pub group: String,
    pub owner_subject: String,
}

/// An event this command appends, serialised once.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewEvent {
    pub sequence: i64,
    pub event_type: EventType,
    pub node_id: Option<NodeId>,
    pub payload: String,
}

/// One write a command decided on.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// The row of a run this command starts, as the command leaves it (in
    /// place of a [`Change::Run`]: one statement writes the new row whole).
    NewRun {
        run: Box<crate::runtime::RunRow>,
        nodes: NodeDocument,
    },
    Interrupt(Box<NewInterrupt>),
    /// The pending interrupt is decided (`resolution`: the `interrupt.resolved` payload).
    Resolve {
        interrupt_id: String,
        /// SQLite's `rowid` of the interrupt, read by this command
        /// (`InterruptRow::row_id`): the update goes straight to the row.
        row_id: Option<i64>,
        /// Where it counted in the inbox (none for rows stored before the counts).
        inbox: Option<InboxCount>,
        at: Millis,
        resolution: String,
        /// The `votes` column to write with it (folded in from a `Votes` change).
        votes: Option<String>,
    },
    /// Every pending interrupt of the run is closed (the run ended).
    CancelPending {
        run_id: RunId,
        at: Millis,
    },
    /// The interrupt's votes after this one (`store::votes`): earlier votes
    /// it replaces marked superseded, the new vote last. When the same
    /// command resolves the interrupt, [`apply`] writes them in its update.
    Votes {
        interrupt_id: String,
        votes: Vec<super::votes::StoredVote>,
    },
    /// A mail to one person about an interrupt.
    Email {
        reason: MailReason,
        run_id: RunId,
        node_id: NodeId,
        interrupt_id: String,
        recipient: String,
        address: Option<String>,
        at: Millis,
    },
    /// A run callback for one event, with its body fixed now.
    Callback {
        event_type: EventType,
        run_id: RunId,
        node_id: Option<NodeId>,
        interrupt_id: Option<String>,
        url: String,
        body: String,
        at: Millis,
    },
    Events {
        run_id: RunId,
        events: Vec<NewEvent>,
        at: Millis,
    },
    /// An open conversation starts, takes a turn or ends (`store::conversations`).
    Conversation(super::conversations::ConversationChange),
    /// The run's projection after the command.
    Run {
        run_id: RunId,
        /// SQLite's `rowid` of the run's row, read by this command
        /// (`RunRow::row_id`): the update goes straight to the row.
        row_id: Option<i64>,
        status: RunStatus,
        current_node_id: Option<NodeId>,
        error: Option<String>,
        next_sequence: i64,
        completed_at: Option<Millis>,
        /// Every node's state, when the command changed any.
        nodes: Option<NodeDocument>,
    },
}

/// A new run's row with its node states: on SQLite with its newest event
/// too, at the rowid its id names unless another row is there (then the
/// next free one: `NULL`; `store::run_rowid`).
static INSERT_RUN: LazyLock<[String; 2]> = LazyLock::new(|| {
    let row = |extra: &str| {
        let columns = format!("{}, nodes, delay_due_at{extra}", crate::runtime::RUN_COLUMNS);
        let params = vec!["?"; columns.split(", ").count()].join(", ");
        (columns, params)
    };
    let (sqlite_columns, sqlite_params) = row(", last_event");
    let (columns, params) = row("");
    [
        format!(
            "INSERT INTO runs (rowid, {sqlite_columns}) VALUES \
             (CASE WHEN EXISTS (SELECT 1 FROM runs WHERE rowid = ?) THEN NULL ELSE ? END, {sqlite_params})"
        ),
        format!("INSERT INTO runs ({columns}) VALUES ({params})"),
    ]
});

/// A new interrupt's row: without and with the rowid its command chose.
static INSERT_INTERRUPT: LazyLock<[String; 2]> = LazyLock::new(|| {
    let row = |rowid: &str, param: &str| {
        format!(
            "INSERT INTO interrupts ({rowid}{}) VALUES ({param}?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)",
            crate::runtime::INTERRUPT_COLUMNS
        )
    };
    [row("", ""), row("rowid, ", "?, ")]
});

fn text(s: impl Into<String>) -> Val {
    Val::Text(Some(s.into()))
}

fn opt_text(s: Option<impl Into<String>>) -> Val {
    Val::Text(s.map(Into::into))
}

fn int(i: i64) -> Val {
    Val::Int(Some(i))
}

fn opt_int(i: Option<i64>) -> Val {
    Val::Int(i)
}

/// Writes `changes` in order on the command's connection: as few round
/// trips as the back end allows (see [`batches`]).
pub(crate) fn apply(conn: &WriteConn, changes: Vec<Change>) -> Result<()> {
    apply_with(conn, changes, event_log::Chain::default())
}

/// [`apply`] for the command that loaded `run_id` (or is creating it),
/// knowing the run's newest event as loaded.
pub(crate) fn apply_for_run(
    conn: &WriteConn,
    changes: Vec<Change>,
    run_id: &str,
    newest: NewestEvent,
) -> Result<()> {
    apply_with(conn, changes, event_log::Chain::knowing(run_id, newest))
}

fn apply_with(conn: &WriteConn, changes: Vec<Change>, mut chain: event_log::Chain) -> Result<()> {
    let dialect = conn.dialect();
    let mut statements = Vec::with_capacity(changes.len() + 2);
    for change in fold_votes(changes)? {
        // SQLite's events carry their ids and links (store::event_log).
        let ids = match (&change, dialect) {
            (Change::Events { run_id, events, .. }, Dialect::Sqlite) if !events.is_empty() => EventIds {
                appended: Some(chain.append(conn, run_id, events.len())?),
                newest: None,
            },
            (Change::Run { run_id, .. }, Dialect::Sqlite) => EventIds {
                appended: None,
                newest: chain.record(run_id),
            },
            (Change::NewRun { run, .. }, Dialect::Sqlite) => EventIds {
                appended: None,
                newest: chain.record(&run.run_id),
            },
            _ => EventIds::default(),
        };
        statements_of(change, dialect, ids, &mut statements)?;
    }
    for (run_id, newest) in chain.unrecorded() {
        push(
            &mut statements,
            event_log::LINK_RUN_SQL,
            vec![int(newest), text(&run_id)],
            Table::Runs,
            Rows::Update(run_id),
        );
    }
    for batch in batches(&statements) {
        let batch: Vec<(&str, &[Val])> = statements[batch]
            .iter()
            .map(|s| (s.sql, s.args.as_slice()))
            .collect();
        conn.execute_together(&batch)?;
    }
    Ok(())
}

/// A vote that decides its interrupt is written in the interrupt's one
/// update: a `Votes` change followed by the `Resolve` of the same interrupt
/// becomes that resolve's `votes`. (No statement reads the column, so it may
/// be written later in the command.)
fn fold_votes(changes: Vec<Change>) -> Result<Vec<Change>> {
    let mut out: Vec<Change> = Vec::with_capacity(changes.len());
    for mut change in changes {
        if let Change::Resolve {
            interrupt_id,
            votes: folded @ None,
            ..
        } = &mut change
        {
            let earlier = out
                .iter()
                .rposition(|c| matches!(c, Change::Votes { interrupt_id: id, .. } if id == interrupt_id));
            if let Some(Change::Votes { votes, .. }) = earlier.map(|i| out.remove(i)) {
                *folded = Some(super::votes::to_json(&votes)?);
            }
        }
        out.push(change);
    }
    Ok(out)
}

/// A table a statement reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Runs,
    Interrupts,
    Outbox,
    Events,
    InboxGroups,
    InboxCounts,
    Conversations,
}

/// Which rows of a table: the one with this key, or any number.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    One(String),
    Any,
}

impl Key {
    fn overlaps(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::One(a), Key::One(b)) => a == b,
            _ => true,
        }
    }
}

/// One statement of a change set, with the rows it writes and reads.
#[derive(Debug)]
struct Statement {
    sql: &'static str,
    args: Vec<Val>,
    table: Table,
    rows: Key,
    /// A plain insert, which reads nothing (an upsert reads the row it may update).
    insert: bool,
    /// Rows of another table the statement reads (in a subquery).
    reads: Option<(Table, Key)>,
}

impl Statement {
    /// Whether this statement, run after `earlier` in the same statement
    /// (where both see the same snapshot), could miss or doubly change a row
    /// `earlier` wrote: it reads, or updates, rows that overlap them.
    fn must_follow(&self, earlier: &Statement) -> bool {
        let wrote = |table: Table, key: &Key| table == earlier.table && key.overlaps(&earlier.rows);
        (!self.insert && wrote(self.table, &self.rows))
            || self.reads.as_ref().is_some_and(|(t, k)| wrote(*t, k))
    }
}

/// Most parameters one batch carries (PostgreSQL allows 65,535 per statement).
const MAX_BATCH_ARGS: usize = 8_192;

/// Splits the statements into runs that may travel as one: on PostgreSQL a
/// batch is one statement (data-modifying `WITH` members), whose parts all
/// see the snapshot from before it, so a statement that must see an earlier
/// one's rows starts a new batch. Order is kept within and across batches.
fn batches(statements: &[Statement]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut args) = (0, 0);
    for (i, s) in statements.iter().enumerate() {
        let conflicts = statements[start..i].iter().any(|e| s.must_follow(e));
        if i > start && (conflicts || args + s.args.len() > MAX_BATCH_ARGS) {
            out.push(start..i);
            (start, args) = (i, 0);
        }
        args += s.args.len();
    }
    if start < statements.len() {
        out.push(start..statements.len());
    }
    out
}

/// Marks the last statement as reading `key` of `table` first.
fn reads(out: &mut [Statement], table: Table, key: Key) {
    if let Some(last) = out.last_mut() {
        last.reads = Some((table, key));
    }
}

/// How a statement writes its table's rows (for [`Statement`]).
pub(crate) enum Rows {
    Insert(String),
    /// An insert that may update the existing row instead (`ON CONFLICT`).
    Upsert(String),
    Update(String),
    UpdateMany,
}

/// The update that decides an interrupt: by rowid (the id still compared
/// on the row) or by id, with its votes folded in or not.
fn resolve_sql(by_rowid: bool, with_votes: bool) -> &'static str {
    match (by_rowid, with_votes) {
        (false, false) => {
            "UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ? \
             WHERE interrupt_id = ? AND status = 'pending'"
        }
        (false, true) => {
            "UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ?, votes = ? \
             WHERE interrupt_id = ? AND status = 'pending'"
        }
        (true, false) => {
            "UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ? \
             WHERE rowid = ? AND interrupt_id = ? AND status = 'pending'"
        }
        (true, true) => {
            "UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ?, votes = ? \
             WHERE rowid = ? AND interrupt_id = ? AND status = 'pending'"
        }
    }
}

/// The update of a run's projection: with its node states or not, found by
/// rowid or by id; on SQLite it also records the run's newest event.
fn update_run_sql(dialect: Dialect, with_nodes: bool, by_rowid: bool) -> &'static str {
    static SQL: LazyLock<[String; 6]> = LazyLock::new(|| {
        let sql = |newest: &str, nodes: &str, rows: &str| {
            format!(
                "UPDATE runs SET status = ?, current_node_id = ?, error = ?, next_sequence = ?, completed_at = ?\
                 {newest}{nodes} WHERE {rows}"
            )
        };
        let (newest, nodes) = (
            ", last_event = coalesce(?, last_event)",
            ", nodes = ?, delay_due_at = ?",
        );
        let (by_id, by_rowid) = ("run_id = ?", "rowid = ? AND run_id = ?");
        [
            sql(newest, "", by_id),
            sql(newest, nodes, by_id),
            sql(newest, "", by_rowid),
            sql(newest, nodes, by_rowid),
            sql("", "", by_id),
            sql("", nodes, by_id),
        ]
    });
    let at = match (dialect, by_rowid) {
        (Dialect::Sqlite, false) => 0,
        (Dialect::Sqlite, true) => 2,
        // PostgreSQL has no rowid.
        (Dialect::Postgres, _) => 4,
    };
    &SQL[at + usize::from(with_nodes)]
}

fn push(out: &mut Vec<Statement>, sql: &'static str, args: Vec<Val>, table: Table, rows: Rows) {
    let (rows, insert) = match rows {
        Rows::Insert(k) => (Key::One(k), true),
        Rows::Upsert(k) | Rows::Update(k) => (Key::One(k), false),
        Rows::UpdateMany => (Key::Any, false),
    };
    out.push(Statement {
        sql,
        args,
        table,
        rows,
        insert,
        reads: None,
    });
}

/// On SQLite, the ids [`event_log::Chain`] gave a change's events.
#[derive(Default)]
struct EventIds {
    /// An `Events` change: its first event's id and the id that one follows.
    appended: Option<(i64, Option<i64>)>,
    /// A `Run` or `NewRun` change: the run's newest event, if the command appended any.
    newest: Option<i64>,
}

fn statements_of(change: Change, dialect: Dialect, ids: EventIds, out: &mut Vec<Statement>) -> Result<()> {
    match change {
        Change::NewRun { run, nodes } => {
            let key = run.run_id.to_string();
            let mut args = vec![
                    text(&run.run_id),
                    text(run.tenant.as_str()),
                    text(run.workflow_id),
                    text(run.workflow_digest),
                    text(run.status.as_str()),
                    text(json_text(&run.owner)),
                    opt_text(run.current_node_id),
                    opt_text(run.error.as_ref().map(json_text)),
                    text(json_text(&run.inputs)),
                    opt_text(run.configurable.as_ref().map(json_text)),
                    opt_text(run.tags.as_ref().map(json_text)),
                    opt_text(run.metadata.as_ref().map(json_text)),
                    opt_text(run.callback_url),
                    int(run.next_sequence),
                    int(run.created_at),
                    opt_int(run.completed_at),
                opt_text(run.requested_by),
                text(nodes.json),
                opt_int(nodes.delay_due_at),
            ];
            let sql = match dialect {
                Dialect::Sqlite => {
                    args.push(opt_int(ids.newest));
                    let row_id = opt_int(super::run_rowid::of(run.run_id.as_str()));
                    args.splice(0..0, [row_id.clone(), row_id]);
                    &INSERT_RUN[0]
                }
                Dialect::Postgres => &INSERT_RUN[1],
            };
            push(out, sql, args, Table::Runs, Rows::Insert(key));
        }
        Change::Interrupt(i) => {
            let key = i.interrupt_id.clone();
            let tenant = crate::ids::tenant_of(&i.run_id).to_string();
            let group = inbox::group_key(&tenant, i.kind, &i.workflow_id, &i.rules);
            push(
                out,
                "INSERT INTO inbox_groups (group_key, tenant, kind, workflow_id, eligibility) VALUES (?, ?, ?, ?, ?) ON CONFLICT (group_key) DO NOTHING",
                vec![
                    text(&group),
                    text(tenant),
                    text(i.kind.as_str()),
                    text(&i.workflow_id),
                    text(&i.rules),
                ],
                Table::InboxGroups,
                Rows::Upsert(group.clone()),
            );
            push(
                out,
                inbox::add_to_count(dialect, 1),
                vec![text(&group), text(&i.owner_subject), text(&group)],
                Table::InboxCounts,
                Rows::Upsert(group.clone()),
            );
            let mut args = Vec::with_capacity(17);
            let sql = match (i.row_id, dialect) {
                (Some(row_id), Dialect::Sqlite) => {
                    args.push(int(row_id));
                    &INSERT_INTERRUPT[1]
                }
                _ => &INSERT_INTERRUPT[0],
            };
            args.extend([
                    text(i.interrupt_id),
                    text(i.run_id),
                    text(i.node_id),
                    text(i.key),
                    int(i.visit),
                    text(i.kind.as_str()),
                    text(i.payload),
                    text(i.contract),
                    text(i.request),
                    text(i.rules),
                    text(i.workflow_id),
                    text(i.title),
                    text(i.owner_subject),
                    int(i.created_at),
                opt_int(i.deadline_at),
                text(group),
            ]);
            push(out, sql, args, Table::Interrupts, Rows::Insert(key));
        }
        Change::Resolve {
            interrupt_id,
            row_id,
            inbox,
            at,
            resolution,
            votes,
        } => {
            if let Some(InboxCount {
                group,
                owner_subject,
            }) = inbox
            {
                push(
                    out,
                    inbox::add_to_count(dialect, -1),
                    vec![text(&group), text(owner_subject), text(&group)],
                    Table::InboxCounts,
                    Rows::Upsert(group),
                );
            }
            let key = interrupt_id.clone();
            // By rowid where the command read it (SQLite): no search of the
            // id index, whose page is rarely cached in a large store. The id
            // is still compared, on the row itself.
            let row_id = row_id.filter(|_| dialect == Dialect::Sqlite);
            let sql = resolve_sql(row_id.is_some(), votes.is_some());
            let mut args = vec![int(at), text(resolution)];
            args.extend(votes.map(text));
            args.extend(row_id.map(int));
            args.push(text(interrupt_id));
            push(out, sql, args, Table::Interrupts, Rows::Update(key));
        }
        Change::Conversation(c) => {
            let (sql, args, rows) = super::conversations::statement(c);
            push(out, sql, args, Table::Conversations, rows);
        }
        Change::CancelPending { run_id, at } => {
            push(
                out,
                inbox::uncount_run(dialect),
                vec![text(&run_id), text(&run_id)],
                Table::InboxCounts,
                Rows::UpdateMany,
            );
            reads(out, Table::Interrupts, Key::Any);
            push(
                out,
                "UPDATE interrupts SET status = 'cancelled', resolved_at = ? WHERE run_id = ? AND status = 'pending'",
                vec![int(at), text(run_id)],
                Table::Interrupts,
                Rows::UpdateMany,
            );
        }
        Change::Votes { interrupt_id, votes } => {
            // Only when no resolve of the interrupt follows (see `fold_votes`).
            push(
                out,
                "UPDATE interrupts SET votes = ? WHERE interrupt_id = ?",
                vec![text(super::votes::to_json(&votes)?), text(&interrupt_id)],
                Table::Interrupts,
                Rows::Update(interrupt_id),
            );
        }
        Change::Email {
            reason,
            run_id,
            node_id,
            interrupt_id,
            recipient,
            address,
            at,
        } => push(
                out,
            "INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at) VALUES ('email', ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
            vec![
                text(reason.as_str()),
                text(run_id),
                text(node_id),
                text(interrupt_id),
                text(recipient),
                opt_text(address),
                int(at),
                int(at),
            ],
            Table::Outbox,
            Rows::Insert(String::new()),
        ),
        Change::Callback {
            event_type,
            run_id,
            node_id,
            interrupt_id,
            url,
            body,
            at,
        } => push(
                out,
            "INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at, body) VALUES ('callback', ?, ?, ?, ?, '', ?, 'pending', ?, ?, ?)",
            vec![
                text(event_type.as_str()),
                text(run_id),
                text(node_id.map(String::from).unwrap_or_default()),
                text(interrupt_id.unwrap_or_default()),
                text(url),
                int(at),
                int(at),
                text(body),
            ],
            Table::Outbox,
            Rows::Insert(String::new()),
        ),
        Change::Events { run_id, events, at } => {
            for (c, chunk) in events.chunks(event_log::MAX_ROWS).enumerate() {
                let mut args = Vec::with_capacity(chunk.len() * (event_log::ROW_ARGS + 2));
                for (i, e) in chunk.iter().enumerate() {
                    if let Some((first, prev)) = ids.appended {
                        let id = first + (c * event_log::MAX_ROWS + i) as i64;
                        args.extend([int(id), opt_int(if id == first { prev } else { Some(id - 1) })]);
                    }
                    args.extend([
                        text(&run_id),
                        int(e.sequence),
                        text(crate::ids::new_opaque()),
                        text(e.event_type.as_str()),
                        opt_text(e.node_id.as_ref()),
                        text(e.payload.as_str()),
                        int(at),
                    ]);
                }
                push(
                    out,
                    event_log::insert(dialect, chunk.len()),
                    args,
                    Table::Events,
                    Rows::Insert(String::new()),
                );
            }
        }
        Change::Run {
            run_id,
            row_id,
            status,
            current_node_id,
            error,
            next_sequence,
            completed_at,
            nodes,
        } => {
            let key = run_id.to_string();
            let mut args = vec![
                text(status.as_str()),
                opt_text(current_node_id),
                opt_text(error),
                int(next_sequence),
                opt_int(completed_at),
            ];
            if dialect == Dialect::Sqlite {
                args.push(opt_int(ids.newest));
            }
            let with_nodes = nodes.is_some();
            if let Some(nodes) = nodes {
                args.extend([text(nodes.json), opt_int(nodes.delay_due_at)]);
            }
            // By rowid where the command read it (SQLite), the id still compared.
            let row_id = row_id.filter(|_| dialect == Dialect::Sqlite);
            let sql = update_run_sql(dialect, with_nodes, row_id.is_some());
            args.extend(row_id.map(int));
            args.push(text(run_id));
            push(out, sql, args, Table::Runs, Rows::Update(key));
        }
    }
    Ok(())
}

/// The votes a change set casts (each `Votes` change's newest), for tests
/// that read what a rule decided.
#[cfg(test)]
pub(crate) fn votes_of(changes: &[Change]) -> Vec<(&str, tollgate_wire::ApprovalAction)> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Votes { votes, .. } => votes.last().map(|v| (v.principal.as_str(), v.action)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_id() -> RunId {
        RunId::trusted("t/r1".to_string())
    }

    fn events() -> Change {
        Change::Events {
            run_id: run_id(),
            events: vec![NewEvent {
                sequence: 1,
                event_type: EventType::NodeCompleted,
                node_id: None,
                payload: "{}".into(),
            }],
            at: 0,
        }
    }

    fn run() -> Change {
        Change::Run {
            run_id: run_id(),
            row_id: None,
            status: RunStatus::Completed,
            current_node_id: None,
            error: None,
            next_sequence: 2,
            completed_at: Some(0),
            nodes: Some(NodeDocument {
                json: "[]".into(),
                delay_due_at: None,
            }),
        }
    }

    fn resolve(id: &str) -> Change {
        Change::Resolve {
            interrupt_id: id.into(),
            inbox: Some(InboxCount {
                group: "g".into(),
                owner_subject: "owner".into(),
            }),
            at: 0,
            resolution: "{}".into(),
            votes: None,
            row_id: None,
        }
    }

    fn interrupt(id: &str) -> Change {
        Change::Interrupt(Box::new(NewInterrupt {
            row_id: None,
            interrupt_id: id.into(),
            run_id: run_id(),
            node_id: NodeId::trusted("gate".to_string()),
            key: id.into(),
            visit: 1,
            kind: InterruptKind::Approval,
            payload: "{}".into(),
            contract: "{}".into(),
            request: "{}".into(),
            rules: "{}".into(),
            workflow_id: "w".into(),
            title: "t".into(),
            owner_subject: "owner".into(),
            created_at: 0,
            deadline_at: None,
        }))
    }

    /// The votes of `interrupt` after `n` were cast.
    fn votes(interrupt: &str, n: usize) -> Change {
        let vote = super::super::votes::StoredVote {
            principal: "ann".into(),
            cast_by: None,
            action: tollgate_wire::ApprovalAction::Accept,
            eligible_via: "approvers".into(),
            decided_at: 0,
            superseded: false,
            resume_value: serde_json::json!({"action": "accept"}),
        };
        Change::Votes {
            interrupt_id: interrupt.into(),
            votes: vec![vote; n],
        }
    }

    fn statements(changes: Vec<Change>) -> Vec<Statement> {
        let mut statements = Vec::new();
        for c in fold_votes(changes).unwrap() {
            statements_of(c, Dialect::Postgres, EventIds::default(), &mut statements).unwrap();
        }
        statements
    }

    fn split(changes: Vec<Change>) -> Vec<std::ops::Range<usize>> {
        batches(&statements(changes))
    }

    #[test]
    fn a_resolve_finds_its_row_by_rowid_on_sqlite_only() {
        let with_row = || {
            let mut change = resolve("i1");
            if let Change::Resolve { row_id, .. } = &mut change {
                *row_id = Some(7);
            }
            change
        };
        let update = |dialect| {
            let mut out = Vec::new();
            statements_of(with_row(), dialect, EventIds::default(), &mut out).unwrap();
            out.pop().unwrap()
        };
        let sqlite = update(Dialect::Sqlite);
        assert!(
            sqlite.sql.contains("WHERE rowid = ? AND interrupt_id = ?"),
            "{}",
            sqlite.sql
        );
        assert_eq!(
            sqlite.args[2..],
            [Val::Int(Some(7)), Val::Text(Some("i1".into()))]
        );
        // PostgreSQL has no rowid: by id, whatever the command read.
        let postgres = update(Dialect::Postgres);
        assert!(
            postgres.sql.contains("WHERE interrupt_id = ?"),
            "{}",
            postgres.sql
        );
        assert!(!postgres.sql.contains("rowid"));
        assert_eq!(postgres.args[2..], [Val::Text(Some("i1".into()))]);
    }

    #[test]
    fn a_resolve_travels_as_one_statement() {
        let changes = vec![votes("i1", 2), resolve("i1"), events(), run()];
        // Count, resolve (with the votes), events, run (with its nodes).
        assert_eq!(split(changes), vec![0..4]);
    }

    #[test]
    fn a_deciding_vote_is_written_in_the_resolve() {
        let folded = fold_votes(vec![votes("i1", 2), votes("i2", 1), events(), resolve("i1")]).unwrap();
        assert!(matches!(&folded[0], Change::Votes { interrupt_id, .. } if interrupt_id == "i2"));
        match &folded[2] {
            Change::Resolve {
                interrupt_id,
                votes: Some(text),
                ..
            } => {
                assert_eq!(interrupt_id, "i1");
                assert_eq!(super::super::votes::parse("i1", text).unwrap().len(), 2);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(folded.len(), 3);
        // A vote that does not decide is written on its own.
        let recorded = statements(vec![votes("i1", 1)]);
        assert!(recorded[0].sql.starts_with("UPDATE interrupts SET votes = ?"));
    }

    #[test]
    fn an_update_of_a_row_written_earlier_starts_a_new_statement() {
        let new_run = crate::runtime::RunRow::sample("t/r1");
        let new_run = || Change::NewRun {
            run: Box::new(new_run.clone()),
            nodes: NodeDocument {
                json: "[]".into(),
                delay_due_at: None,
            },
        };
        // A create writes its run's row once, last: one statement.
        let created = vec![interrupt("i1"), events(), new_run()];
        // Group, count, interrupt, events, run.
        assert_eq!(split(created), vec![0..5]);
        // An update of a run inserted earlier must see the row.
        assert_eq!(split(vec![new_run(), run()]), vec![0..1, 1..2]);
        // Two interrupts of one group in one run count on the same row, one after the other.
        assert_eq!(split(vec![interrupt("i1"), interrupt("i2")]), vec![0..3, 3..6]);
        // Cancelling every pending interrupt must see the one resolved just before.
        let rejected = vec![
            votes("i1", 1),
            resolve("i1"),
            Change::CancelPending {
                run_id: run_id(),
                at: 0,
            },
            events(),
            run(),
        ];
        // Count, resolve with the vote | count, cancel, events, run.
        assert_eq!(split(rejected), vec![0..2, 2..6]);
        // The same run updated twice: the second must follow the first.
        assert_eq!(split(vec![run(), run()]), vec![0..1, 1..2]);
        // Two resolves counting on one counter row: the second decrement follows the first.
        assert_eq!(split(vec![resolve("i1"), resolve("i2")]), vec![0..2, 2..4]);
        // Different rows of one table share a statement: resolving one gate
        // and raising the next (another counter row) travel together.
        assert_eq!(split(vec![resolve("i1"), interrupt("i2")]), vec![0..5]);
    }

    #[test]
    fn a_batch_stays_under_the_parameter_limit() {
        // Two parameters each, on distinct rows: only the limit splits them.
        let statements = statements((0..5_000).map(|i| votes(&format!("i{i}"), 1)).collect());
        let batches = batches(&statements);
        assert!(batches.len() > 1);
        assert_eq!(batches.last().unwrap().end, statements.len());
        for b in batches {
            let args: usize = statements[b].iter().map(|s| s.args.len()).sum();
            assert!(args <= MAX_BATCH_ARGS, "{args}");
        }
    }
}
