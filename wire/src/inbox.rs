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
