//! The rows the runtime works on, decoded once, and the statements that
//! load them: a run with its node states (locked for the command where the
//! back end has row locks), an interrupt with its votes, the tenant's
//! directory for notifications.

use crate::approval;
use crate::args;
use crate::clock::Millis;
use crate::directory::Principal;
use crate::error::{EngineError, Result};
use crate::interrupt::InterruptKind;
use crate::store::{Dialect, Row, WriteConn};
use serde_json::Value;
use std::sync::LazyLock;
use tollgate_wire::{InterruptStatus, NodeId, NodeStatus, RunId, RunStatus, TenantId};

/// A run as stored, each column decoded once: statuses as enums, JSON
/// columns as values (a column that is not what it should be is an error,
/// never a silent default).
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: RunId,
    pub tenant: TenantId,
    pub workflow_id: String,
    pub workflow_digest: String,
    pub status: RunStatus,
    /// `RunSnapshot.owner`.
    pub owner: Value,
    /// The person the run is for, when its creator acted on their behalf.
    pub requested_by: Option<String>,
    pub current_node_id: Option<NodeId>,
    pub error: Option<Value>,
    pub inputs: Value,
    pub configurable: Option<Value>,
    pub tags: Option<Value>,
    pub metadata: Option<Value>,
    pub callback_url: Option<String>,
    pub next_sequence: i64,
    pub created_at: Millis,
    pub completed_at: Option<Millis>,
    /// The run's node states as JSON, when loaded together with the run.
    pub nodes_json: Option<String>,
}

pub(crate) const RUN_COLUMNS: &str = "run_id, tenant, workflow_id, workflow_digest, status, owner, current_node_id, error, inputs, configurable, tags, metadata, callback_url, next_sequence, created_at, completed_at, requested_by";

impl RunRow {
    /// Decodes a row selected with [`RUN_COLUMNS`] (and optionally `nodes_json`), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<RunRow> {
        Ok(RunRow {
            run_id: row.get(0)?,
            tenant: row.get(1)?,
            workflow_id: row.get(2)?,
            workflow_digest: row.get(3)?,
            status: row.get(4)?,
            owner: row.json(5)?,
            current_node_id: row.get(6)?,
            error: row.opt_json(7)?,
            inputs: row.json(8)?,
            configurable: row.opt_json(9)?,
            tags: row.opt_json(10)?,
            metadata: row.opt_json(11)?,
            callback_url: row.get(12)?,
            next_sequence: row.get(13)?,
            created_at: row.get(14)?,
            completed_at: row.get(15)?,
            requested_by: row.get(16)?,
            nodes_json: if row.has(17) { row.get(17)? } else { None },
        })
    }

    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// The subject id of the run's owner (`owner.subject.subjectId`).
    pub fn owner_subject_id(&self) -> String {
        self.owner["subject"]["subjectId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The person whose request the run is: `requestedBy`, else the owner.
    pub fn requester(&self) -> String {
        self.requested_by
            .clone()
            .unwrap_or_else(|| self.owner_subject_id())
    }

    /// Everyone who may not approve the run's gates where self-approval is
    /// refused: the owner, and the person the run is for.
    pub fn requesters(&self) -> Vec<String> {
        let owner = self.owner_subject_id();
        match &self.requested_by {
            Some(person) if *person != owner => vec![owner, person.clone()],
            _ => vec![owner],
        }
    }
}

/// One `node_states` row.
#[derive(Debug, Clone)]
pub(crate) struct NodeRow {
    pub node_id: NodeId,
    pub status: NodeStatus,
    pub visits: i64,
    pub output: Option<String>,
    pub pending_in: String,
    pub due_at: Option<Millis>,
    pub waiting: Option<RunStatus>,
}

/// An interrupt as stored, decoded once (see [`RunRow`]).
#[derive(Debug, Clone)]
#[allow(dead_code)] // every column is selected; not all are read yet
pub(crate) struct InterruptRow {
    pub interrupt_id: String,
    pub run_id: RunId,
    pub node_id: NodeId,
    pub key: String,
    pub visit: i64,
    pub kind: InterruptKind,
    pub status: InterruptStatus,
    /// The `interrupt.requested` payload (`kind`, `key`, `data`, `resumeSchema`, …).
    pub payload: Value,
    /// The contract's JSON text: compiled (and cached by this text) where it is used.
    pub contract: String,
    pub request: Option<Value>,
    /// Approval gates' rules; `None` for other kinds.
    pub rules: Option<approval::ApprovalRules>,
    pub workflow_id: String,
    pub title: String,
    /// Whose request this is: the run's `requestedBy`, else its owner
    /// (`RunRow::requester`); the inbox splits on it and mail never offers
    /// them a decision.
    pub owner_subject: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
    pub resolved_at: Option<Millis>,
    pub resolution: Option<Value>,
    /// The inbox rule group the interrupt counts in while pending.
    pub inbox_group: Option<String>,
    /// Votes as JSON `[principal, action, superseded, is_override, resume_value]`, when loaded with the interrupt.
    pub votes_json: Option<String>,
}

pub(crate) const INTERRUPT_COLUMNS: &str = "interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at, deadline_at, resolved_at, resolution, inbox_group";

impl InterruptRow {
    /// Decodes a row selected with [`INTERRUPT_COLUMNS`] (and optionally `votes_json`), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<InterruptRow> {
        let kind: InterruptKind = row.get(5)?;
        let rules = match row.opt_json(10)? {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value(v)
                    .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?,
            ),
        };
        Ok(InterruptRow {
            interrupt_id: row.get(0)?,
            run_id: row.get(1)?,
            node_id: row.get(2)?,
            key: row.get(3)?,
            visit: row.get(4)?,
            kind,
            status: row.get(6)?,
            payload: row.json(7)?,
            contract: row.get(8)?,
            request: row.opt_json(9)?,
            rules,
            workflow_id: row.get(11)?,
            title: row.get(12)?,
            owner_subject: row.get(13)?,
            created_at: row.get(14)?,
            deadline_at: row.get(15)?,
            resolved_at: row.get(16)?,
            resolution: row.opt_json(17)?,
            inbox_group: row.get(18)?,
            votes_json: if row.has(19) { row.get(19)? } else { None },
        })
    }
}

// Statements the writer runs on every command, built once (they splice in
// the column lists) so the hot path neither formats nor allocates SQL text.
// Each loads related rows as one JSON column, in one round trip.
static LOAD_RUN_FOR_UPDATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, (SELECT json_group_array(json_array(node_id, status, visits, output, pending_in, due_at, waiting)) \
         FROM node_states WHERE node_states.run_id = runs.run_id) AS nodes_json FROM runs WHERE run_id = ?"
    )
});
/// The run row stays locked until the command commits: commands on one run
/// from any instance take turns, and each sees what the previous one wrote.
static LOAD_RUN_FOR_UPDATE_PG: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, (SELECT json_agg(json_build_array(node_id, status, visits, output, pending_in, due_at, waiting))::text \
         FROM node_states WHERE node_states.run_id = runs.run_id) AS nodes_json FROM runs WHERE run_id = $1 FOR UPDATE"
    )
});
/// The newest interrupt of a node with its votes as JSON (`votes_json`).
static LATEST_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, (SELECT json_group_array(json_array(principal, action, superseded, is_override, json(resume_value), cast_by)) FROM \
           (SELECT v.principal, v.action, v.superseded, CASE WHEN v.cast_by IS NULL THEN COALESCE(p.is_override, 0) ELSE 0 END AS is_override, v.resume_value, v.cast_by FROM votes v \
            LEFT JOIN principals p ON p.id = v.principal WHERE v.interrupt_id = interrupts.interrupt_id ORDER BY v.seq)) AS votes_json \
         FROM interrupts WHERE run_id = ? AND node_id = ? ORDER BY visit DESC LIMIT 1"
    )
});
static LATEST_INTERRUPT_PG: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, (SELECT json_agg(json_build_array(v.principal, v.action, v.superseded, CASE WHEN v.cast_by IS NULL THEN COALESCE(p.is_override, 0) ELSE 0 END, v.resume_value::json, v.cast_by) ORDER BY v.seq)::text \
           FROM votes v LEFT JOIN principals p ON p.id = v.principal WHERE v.interrupt_id = interrupts.interrupt_id) AS votes_json \
         FROM interrupts WHERE run_id = $1 AND node_id = $2 ORDER BY visit DESC LIMIT 1"
    )
});
pub(crate) fn latest_interrupt_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => &LATEST_INTERRUPT,
        Dialect::Postgres => &LATEST_INTERRUPT_PG,
    }
}
static PENDING_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ? AND status = 'pending'")
});
/// The run with its node states, in one statement (the writer's hot path),
/// locked for this command where the back end has row locks.
pub(crate) fn load_run_for_update(conn: &WriteConn, run_id: &str) -> Result<Option<RunRow>> {
    let sql: &str = match conn.dialect() {
        Dialect::Sqlite => &LOAD_RUN_FOR_UPDATE,
        Dialect::Postgres => &LOAD_RUN_FOR_UPDATE_PG,
    };
    conn.query_opt(sql, args![run_id], RunRow::from_row)
}

/// `Store::latest_interrupt` on the writer, inside a command (after the run is locked).
pub(crate) fn latest_interrupt_for_update(
    conn: &WriteConn,
    run_id: &str,
    node_id: &str,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(
        latest_interrupt_sql(conn.dialect()),
        args![run_id, node_id],
        InterruptRow::from_row,
    )
}

/// A pending interrupt by id, on the writer.
pub(crate) fn pending_interrupt_for_update(
    conn: &WriteConn,
    interrupt_id: &str,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(&PENDING_INTERRUPT, args![interrupt_id], InterruptRow::from_row)
}

/// The run's node states: from the JSON column `load_run_for_update`
/// selected, or read on their own.
pub(crate) fn node_rows(conn: &WriteConn, run: &RunRow) -> Result<Vec<NodeRow>> {
    match run.nodes_json.as_deref() {
        Some(text) => parse_node_rows(text),
        None => conn.query_map(
            "SELECT node_id, status, visits, output, pending_in, due_at, waiting FROM node_states WHERE run_id = ?",
            args![run.run_id],
            |r| {
                Ok(NodeRow {
                    node_id: r.get(0)?,
                    status: r.get(1)?,
                    visits: r.get(2)?,
                    output: r.get(3)?,
                    pending_in: r.get(4)?,
                    due_at: r.get(5)?,
                    waiting: r.get(6)?,
                })
            },
        ),
    }
}

/// Node states from `load_run_for_update`'s JSON column.
fn parse_node_rows(text: &str) -> Result<Vec<NodeRow>> {
    type Row = (
        NodeId,
        NodeStatus,
        i64,
        Option<String>,
        String,
        Option<Millis>,
        Option<RunStatus>,
    );
    let rows: Vec<Row> =
        serde_json::from_str(text).map_err(|e| EngineError::Storage(format!("node_states of a run: {e}")))?;
    Ok(rows
        .into_iter()
        .map(
            |(node_id, status, visits, output, pending_in, due_at, waiting)| NodeRow {
                node_id,
                status,
                visits,
                output,
                pending_in,
                due_at,
                waiting,
            },
        )
        .collect())
}

pub(crate) const LOAD_DIRECTORY_SQL: &str =
    "SELECT id, name, email, groups, roles, is_override FROM principals \
     WHERE tenant = ? AND email IS NOT NULL AND email <> '' ORDER BY id";

/// The tenant's principals that have an email address.
pub(crate) fn load_directory(conn: &WriteConn, tenant: &str) -> Result<Vec<Principal>> {
    let rows: Vec<(String, String, Option<String>, String, String, i64)> =
        conn.query_map(LOAD_DIRECTORY_SQL, args![tenant], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
        })?;
    rows.into_iter()
        .map(|(id, name, email, groups, roles, o)| {
            crate::directory::principal_from_columns(
                id,
                tenant.to_string(),
                name,
                email,
                &groups,
                &roles,
                o != 0,
            )
        })
        .collect()
}
