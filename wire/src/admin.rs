//! What the admin dashboard shows: the engine builds these, the server
//! functions carry them to the browser as they are.

use crate::directory::Principal;
use crate::event::EventType;
use crate::kind::{ApprovalAction, InterruptKind};
use crate::status::{DeadlineState, OutboxKind, OutboxStatus, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusCount {
    pub status: RunStatus,
    pub count: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunRow {
    pub run_id: String,
    pub workflow_id: String,
    pub status: RunStatus,
    pub current_node_id: Option<String>,
    /// The owner's subject id.
    pub owner: String,
    pub created_at: String,
    pub completed_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunPage {
    pub items: Vec<RunRow>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    /// Runs per status over the whole tenant (not just this filter).
    pub by_status: Vec<StatusCount>,
    pub workflows: Vec<String>,
}

/// A pending interrupt as the dashboard lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PendingRow {
    pub run_id: String,
    pub node_id: String,
    pub kind: InterruptKind,
    pub title: String,
    pub workflow_id: String,
    pub created_at: String,
    pub age_ms: i64,
    pub deadline: Option<String>,
    /// Negative once overdue.
    pub deadline_in_ms: Option<i64>,
    pub deadline_state: DeadlineState,
    pub votes: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    pub label: String,
    pub count: i64,
}

/// Interrupts resolved on one (UTC) day, by how they ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct DayDecisions {
    /// `YYYY-MM-DD`.
    pub day: String,
    pub approved: i64,
    pub rejected: i64,
    pub timed_out: i64,
    /// Other kinds answered (clarifications, external events, …).
    pub answered: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdminOverview {
    pub runs_by_status: Vec<StatusCount>,
    pub pending_total: i64,
    pub overdue: i64,
    pub outbox_backlog: i64,
    pub age_buckets: Vec<Bucket>,
    pub decisions: Vec<DayDecisions>,
    /// The most urgent pending interrupts: overdue first, then by deadline, then oldest.
    pub pending: Vec<PendingRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEvent {
    pub sequence: i64,
    pub event_type: EventType,
    pub node_id: Option<String>,
    pub timestamp: String,
    pub payload: Value,
}

/// One vote (or `ask`) on one of the run's interrupts, with the ref that admitted it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuditRow {
    pub node_id: String,
    pub visit: i64,
    /// The seat: whose vote it counts as.
    pub principal: String,
    /// The delegate who cast it in `principal`'s place, if someone else did.
    #[serde(default)]
    pub cast_by: Option<String>,
    pub action: ApprovalAction,
    pub eligible_via: String,
    pub decided_at: String,
    /// False when a later vote of the same person replaced it.
    pub counted: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub run: RunRow,
    pub error: Option<Value>,
    pub events: Vec<TimelineEvent>,
    pub audit: Vec<AuditRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryEntry {
    pub principal: Principal,
    pub has_password: bool,
}

/// A group or a role with its members.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Membership {
    pub name: String,
    pub members: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Directory {
    pub people: Vec<DirectoryEntry>,
    pub groups: Vec<Membership>,
    pub roles: Vec<Membership>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRow {
    /// The first characters of the key's digest: names the key without revealing it.
    pub id: String,
    pub principal: String,
    pub scopes: Vec<String>,
    pub label: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// One outbox message (an email or a callback) as the dashboard lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRow {
    pub id: i64,
    pub kind: OutboxKind,
    pub reason: String,
    pub run_id: String,
    pub node_id: String,
    pub recipient: String,
    pub address: String,
    pub status: OutboxStatus,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}
