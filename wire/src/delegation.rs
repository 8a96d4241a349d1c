//! Delegations as the API and the console show them.

use serde::{Deserialize, Serialize};

text_enum! {
    /// Where a delegation stands now.
    pub enum DelegationState("delegation state") {
        /// Starts later.
        Upcoming = "upcoming",
        /// The delegate may decide in the delegator's place now.
        Active = "active",
        /// Its window has passed, or its interrupt is no longer pending.
        Ended = "ended",
        /// Withdrawn before it ended.
        Revoked = "revoked",
    }
}

/// One pending interrupt a reassignment is for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReassignedInterrupt {
    pub run_id: String,
    pub node_id: String,
    pub title: String,
}

/// A person's decisions handed to another person of the tenant: for a
/// period (out of office), or one interrupt's seat (an admin's reassignment).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Delegation {
    pub delegation_id: String,
    /// Whose seat the delegate takes.
    pub delegator: String,
    pub delegator_name: String,
    pub delegate: String,
    pub delegate_name: String,
    pub starts_at: String,
    /// Exclusive; `None` until revoked (reassignments end with their interrupt).
    pub ends_at: Option<String>,
    /// Set for a reassignment of one pending interrupt.
    pub interrupt: Option<ReassignedInterrupt>,
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
    pub state: DelegationState,
}
