//! Open conversations: a `conversationId` is unique in its tenant while its
//! conversation is open (`conversation.start` raised, not yet closed).

use super::changes::Rows;
use super::{Dialect, Val, WriteConn};
use crate::args;
use crate::clock::Millis;
use crate::error::Result;
use tollgate_wire::RunId;

/// The open conversation with this id in the tenant: its run and how many turns it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenConversation {
    pub run_id: RunId,
    pub turns: i64,
}

/// Reads the open conversation `id` of `tenant`. On PostgreSQL it first
/// waits for any other transaction deciding the same id, so two instances
/// cannot both open it.
pub(crate) fn open(conn: &WriteConn, tenant: &str, id: &str) -> Result<Option<OpenConversation>> {
    if conn.dialect() == Dialect::Postgres {
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('conversation/' || ? || '/' || ?, 0))",
            args![tenant, id],
        )?;
    }
    conn.query_opt(
        "SELECT run_id, turns FROM conversations WHERE tenant = ? AND conversation_id = ?",
        args![tenant, id],
        |r| {
            Ok(OpenConversation {
                run_id: r.get(0)?,
                turns: r.get(1)?,
            })
        },
    )
}

/// The ids of a run's open conversations.
pub(crate) fn of_run(conn: &WriteConn, run_id: &RunId) -> Result<Vec<String>> {
    conn.query_map(
        "SELECT conversation_id FROM conversations WHERE run_id = ? ORDER BY opened_at, conversation_id",
        args![run_id],
        |r| r.get(0),
    )
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConversationChange {
    Open {
        tenant: String,
        id: String,
        run_id: RunId,
        at: Millis,
    },
    /// A turn was answered.
    Turn {
        tenant: String,
        id: String,
    },
    Close {
        tenant: String,
        id: String,
    },
    /// The run ended: its open conversations close with it.
    CloseRun {
        run_id: RunId,
    },
}

fn key(tenant: &str, id: &str) -> String {
    format!("{}:{tenant}/{id}", tenant.len())
}

/// The statement that writes a change.
pub(crate) fn statement(change: ConversationChange) -> (&'static str, Vec<Val>, Rows) {
    let text = |s: &str| Val::Text(Some(s.to_string()));
    match change {
        ConversationChange::Open { tenant, id, run_id, at } => (
            "INSERT INTO conversations (tenant, conversation_id, run_id, turns, opened_at) VALUES (?, ?, ?, 0, ?)",
            vec![text(&tenant), text(&id), text(run_id.as_str()), Val::Int(Some(at))],
            Rows::Insert(key(&tenant, &id)),
        ),
        ConversationChange::Turn { tenant, id } => (
            "UPDATE conversations SET turns = turns + 1 WHERE tenant = ? AND conversation_id = ?",
            vec![text(&tenant), text(&id)],
            Rows::Update(key(&tenant, &id)),
        ),
        ConversationChange::Close { tenant, id } => (
            "DELETE FROM conversations WHERE tenant = ? AND conversation_id = ?",
            vec![text(&tenant), text(&id)],
            Rows::Update(key(&tenant, &id)),
        ),
        ConversationChange::CloseRun { run_id } => (
            "DELETE FROM conversations WHERE run_id = ?",
            vec![text(run_id.as_str())],
            Rows::UpdateMany,
        ),
    }
}
