//! What one write command decided, as typed changes, and the one place that
//! turns them into statements.
//!
//! The runtime's rules (firing nodes, raising and resolving interrupts,
//! tallying votes, routing, settling the run) work on loaded state and say
//! what to write as a list of [`Change`]s; [`apply`] writes them in order
//! inside the command's transaction. The rules never see SQL, and a rule's
//! unit test can read what it decided without a database.

use super::rows::NodeRow;
use super::{Val, WriteConn};
use crate::clock::Millis;
use crate::error::Result;
use std::sync::LazyLock;
use tollgate_wire::{ApprovalAction, EventType, InterruptKind, NodeId, RunId, RunStatus};

/// A new pending interrupt (the `interrupts` row `raise` stores).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewInterrupt {
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
    pub owner_subject: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
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
    /// The run row of a run being started.
    NewRun(Box<crate::runtime::RunRow>),
    Interrupt(Box<NewInterrupt>),
    /// The pending interrupt is decided (`resolution`: the `interrupt.resolved` payload).
    Resolve {
        interrupt_id: String,
        at: Millis,
        resolution: String,
    },
    /// Every pending interrupt of the run is closed (the run ended).
    CancelPending {
        run_id: RunId,
        at: Millis,
    },
    /// The person's earlier counted vote is replaced by the one that follows.
    SupersedeVotes {
        interrupt_id: String,
        principal: String,
    },
    Vote {
        interrupt_id: String,
        seq: i64,
        principal: String,
        action: ApprovalAction,
        resume_value: String,
        eligible_via: String,
        decided_at: Millis,
    },
    /// A mail to one person about an interrupt (`reason`: requested, reminder, escalation).
    Email {
        reason: &'static str,
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
    /// A node's scheduler state as the command left it.
    Node {
        run_id: RunId,
        row: NodeRow,
        /// The row exists already (update) or not (insert).
        stored: bool,
    },
    /// The run's projection after the command.
    Run {
        run_id: RunId,
        status: RunStatus,
        current_node_id: Option<NodeId>,
        error: Option<String>,
        next_sequence: i64,
        completed_at: Option<Millis>,
    },
}

static INSERT_RUN: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO runs ({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        crate::runtime::RUN_COLUMNS
    )
});

static INSERT_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO interrupts ({}) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
        crate::runtime::INTERRUPT_COLUMNS
    )
});

/// Most rows one multi-row INSERT carries (7 parameters each, far below
/// SQLite's and PostgreSQL's parameter limits).
const MAX_ROWS: usize = 64;

/// `INSERT INTO events … VALUES (…), (…)` for 0..=MAX_ROWS rows, built once:
/// on PostgreSQL each statement is a round trip.
static INSERT_EVENTS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let row = "(?, ?, ?, ?, ?, ?, ?)";
    (0..=MAX_ROWS)
        .map(|n| {
            format!(
                "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, timestamp) VALUES {}",
                vec![row; n].join(", ")
            )
        })
        .collect()
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

/// Writes `changes` in order on the command's connection.
pub(crate) fn apply(conn: &WriteConn, changes: Vec<Change>) -> Result<()> {
    for change in changes {
        apply_one(conn, change)?;
    }
    Ok(())
}

fn apply_one(conn: &WriteConn, change: Change) -> Result<()> {
    match change {
        Change::NewRun(run) => {
            conn.execute(
                &INSERT_RUN,
                &[
                    text(&run.run_id),
                    text(run.tenant.as_str()),
                    text(run.workflow_id),
                    text(run.workflow_digest),
                    text(run.status.as_str()),
                    text(run.owner.to_string()),
                    opt_text(run.current_node_id),
                    opt_text(run.error.as_ref().map(|e| e.to_string())),
                    text(run.inputs.to_string()),
                    opt_text(run.configurable.as_ref().map(|v| v.to_string())),
                    opt_text(run.tags.as_ref().map(|v| v.to_string())),
                    opt_text(run.metadata.as_ref().map(|v| v.to_string())),
                    opt_text(run.callback_url),
                    int(run.next_sequence),
                    int(run.created_at),
                    opt_int(run.completed_at),
                ],
            )?;
        }
        Change::Interrupt(i) => {
            conn.execute(
                &INSERT_INTERRUPT,
                &[
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
                ],
            )?;
        }
        Change::Resolve {
            interrupt_id,
            at,
            resolution,
        } => {
            conn.execute(
                "UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ? WHERE interrupt_id = ? AND status = 'pending'",
                &[int(at), text(resolution), text(interrupt_id)],
            )?;
        }
        Change::CancelPending { run_id, at } => {
            conn.execute(
                "UPDATE interrupts SET status = 'cancelled', resolved_at = ? WHERE run_id = ? AND status = 'pending'",
                &[int(at), text(run_id)],
            )?;
        }
        Change::SupersedeVotes {
            interrupt_id,
            principal,
        } => {
            conn.execute(
                "UPDATE votes SET superseded = 1 WHERE interrupt_id = ? AND principal = ? AND action <> 'ask'",
                &[text(interrupt_id), text(principal)],
            )?;
        }
        Change::Vote {
            interrupt_id,
            seq,
            principal,
            action,
            resume_value,
            eligible_via,
            decided_at,
        } => {
            conn.execute(
                "INSERT INTO votes (interrupt_id, seq, principal, action, resume_value, eligible_via, decided_at, superseded) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                &[
                    text(interrupt_id),
                    int(seq),
                    text(principal),
                    text(action.as_str()),
                    text(resume_value),
                    text(eligible_via),
                    int(decided_at),
                ],
            )?;
        }
        Change::Email {
            reason,
            run_id,
            node_id,
            interrupt_id,
            recipient,
            address,
            at,
        } => {
            conn.execute(
                "INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at) VALUES ('email', ?, ?, ?, ?, ?, ?, 'pending', ?, ?)",
                &[
                    text(reason),
                    text(run_id),
                    text(node_id),
                    text(interrupt_id),
                    text(recipient),
                    opt_text(address),
                    int(at),
                    int(at),
                ],
            )?;
        }
        Change::Callback {
            event_type,
            run_id,
            node_id,
            interrupt_id,
            url,
            body,
            at,
        } => {
            conn.execute(
                "INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at, body) VALUES ('callback', ?, ?, ?, ?, '', ?, 'pending', ?, ?, ?)",
                &[
                    text(event_type.as_str()),
                    text(run_id),
                    text(node_id.map(String::from).unwrap_or_default()),
                    text(interrupt_id.unwrap_or_default()),
                    text(url),
                    int(at),
                    int(at),
                    text(body),
                ],
            )?;
        }
        Change::Events { run_id, events, at } => {
            for chunk in events.chunks(MAX_ROWS) {
                let mut args = Vec::with_capacity(chunk.len() * 7);
                for e in chunk {
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
                conn.execute(&INSERT_EVENTS[chunk.len()], &args)?;
            }
        }
        Change::Node { run_id, row, stored } => {
            let sql = if stored {
                "UPDATE node_states SET status = ?, visits = ?, output = ?, pending_in = ?, due_at = ?, waiting = ? WHERE run_id = ? AND node_id = ?"
            } else {
                "INSERT INTO node_states (status, visits, output, pending_in, due_at, waiting, run_id, node_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            };
            conn.execute(
                sql,
                &[
                    text(row.status.as_str()),
                    int(row.visits),
                    opt_text(row.output),
                    text(row.pending_in),
                    opt_int(row.due_at),
                    opt_text(row.waiting.map(RunStatus::as_str)),
                    text(run_id),
                    text(row.node_id),
                ],
            )?;
        }
        Change::Run {
            run_id,
            status,
            current_node_id,
            error,
            next_sequence,
            completed_at,
        } => {
            conn.execute(
                "UPDATE runs SET status = ?, current_node_id = ?, error = ?, next_sequence = ?, completed_at = ? WHERE run_id = ?",
                &[
                    text(status.as_str()),
                    opt_text(current_node_id),
                    opt_text(error),
                    int(next_sequence),
                    opt_int(completed_at),
                    text(run_id),
                ],
            )?;
        }
    }
    Ok(())
}

/// Rows a change set would leave, for tests that read what a rule decided.
#[cfg(test)]
pub(crate) fn votes_of(changes: &[Change]) -> Vec<(&str, ApprovalAction)> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Vote {
                principal, action, ..
            } => Some((principal.as_str(), *action)),
            _ => None,
        })
        .collect()
}
