//! One row of a person's inbox, as the engine lists it and the console draws it.

use crate::kind::{ApprovalAction, InterruptKind};
use crate::status::DeadlineState;
use serde::{Deserialize, Serialize};

/// One row of the inbox.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub run_id: String,
    pub node_id: String,
    pub kind: InterruptKind,
    pub title: String,
    /// One line on what it asks, by kind (a prompt, the awaited event, the
    /// agent and its confidence, the provider); `None` when the title says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub workflow_id: String,
    pub created_at: String,
    pub age_ms: i64,
    pub deadline: Option<String>,
    /// Milliseconds until the deadline (negative: passed).
    pub deadline_in_ms: Option<i64>,
    /// `overdue`, `soon` (within an hour) or `ok`; `none` without a deadline.
    pub deadline_state: DeadlineState,
    /// The ref that makes this person eligible (`group:finance`, …).
    pub eligible_via: String,
    /// Approvals: the largest group of counted approvals of the same data, and the number required.
    pub accepts: Option<u32>,
    pub required_approvals: Option<u32>,
    /// This person's counted vote, if any (a new vote replaces it).
    pub my_vote: Option<ApprovalAction>,
}

/// What became of one pick of "Approve / Reject selected".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BulkResult {
    /// The pick as posted ([`pick_value`]).
    pub pick: String,
    /// The request's title, when the person may see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The vote was recorded through the ordinary resolve.
    pub decided: bool,
    /// What happened, or why it was refused.
    pub message: String,
}

/// The value of an inbox row's checkbox: the path-encoded run id and the
/// node id (the encoded run id has no `/`).
pub fn pick_value(encoded_run_id: &str, node_id: &str) -> String {
    format!("{encoded_run_id}/{node_id}")
}

/// A checkbox value back as (path-encoded run id, node id).
pub fn split_pick(pick: &str) -> Option<(&str, &str)> {
    pick.split_once('/')
        .filter(|(r, n)| !r.is_empty() && !n.is_empty())
}
