//! Interrupt kinds and approval actions.

use crate::status::RunStatus;

text_enum! {
    /// The kind of an interrupt (OpenWOP v2 `interrupt.kind`).
    pub enum InterruptKind("interrupt kind") {
        Approval = "approval",
        Clarification = "clarification",
        ExternalEvent = "external-event",
        Custom = "custom",
        ConversationStart = "conversation.start",
        ConversationExchange = "conversation.exchange",
        ConversationClose = "conversation.close",
        LowConfidence = "low-confidence",
        Credential = "credential",
    }
}

impl InterruptKind {
    /// The run status while suspended on this kind (digest §2).
    pub fn waiting_status(self) -> RunStatus {
        match self {
            InterruptKind::ExternalEvent => RunStatus::WaitingExternal,
            InterruptKind::Clarification
            | InterruptKind::ConversationStart
            | InterruptKind::ConversationExchange
            | InterruptKind::ConversationClose
            | InterruptKind::Credential => RunStatus::WaitingInput,
            InterruptKind::Approval | InterruptKind::Custom | InterruptKind::LowConfidence => {
                RunStatus::WaitingApproval
            }
        }
    }

    /// One of the `conversation.*` kinds (gated on `conversationPrimitive`).
    pub fn is_conversation(self) -> bool {
        matches!(
            self,
            InterruptKind::ConversationStart
                | InterruptKind::ConversationExchange
                | InterruptKind::ConversationClose
        )
    }

    /// Fields `data` must carry for this kind (the engine fills approval's
    /// `artifactId`/`artifactType` itself).
    pub fn required_data_fields(self) -> &'static [&'static str] {
        match self {
            InterruptKind::Approval => &["title", "actions"],
            InterruptKind::Clarification => &["questions"],
            InterruptKind::ExternalEvent => &["eventType", "correlation"],
            InterruptKind::Custom => &["customKind"],
            InterruptKind::ConversationStart | InterruptKind::ConversationClose => &["conversationId"],
            InterruptKind::ConversationExchange => &["conversationId", "prompt"],
            InterruptKind::LowConfidence => &["agentId", "threshold", "observed"],
            InterruptKind::Credential => &["provider", "scopes", "reason", "connectUrl"],
        }
    }
}

text_enum! {
    /// What an approver decided (`resumeValue.action` of an approval).
    pub enum ApprovalAction("approval action") {
        Accept = "accept",
        Reject = "reject",
        /// A rejection that carries `refineFeedback`.
        Refine = "refine",
        /// Approves `editedArtifactData` instead of the artifact as requested.
        EditAccept = "edit-accept",
        /// A question to the requester; not a vote.
        Ask = "ask",
        /// Recorded by the engine when a deadline passes; never requested.
        Timeout = "timeout",
    }
}

impl ApprovalAction {
    /// The actions a gate may offer (every one but the engine's `timeout`).
    pub const OFFERABLE: [ApprovalAction; 5] = [
        ApprovalAction::Accept,
        ApprovalAction::Reject,
        ApprovalAction::Refine,
        ApprovalAction::EditAccept,
        ApprovalAction::Ask,
    ];

    /// `accept` and `edit-accept` approve.
    pub fn approves(self) -> bool {
        matches!(self, ApprovalAction::Accept | ApprovalAction::EditAccept)
    }

    /// `reject` and `refine` reject: a refine never grants.
    pub fn rejects(self) -> bool {
        matches!(self, ApprovalAction::Reject | ApprovalAction::Refine)
    }

    /// Whether the action is a vote that counts towards the tally (`ask` is not).
    pub fn is_vote(self) -> bool {
        !matches!(self, ApprovalAction::Ask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_map_to_statuses() {
        for k in InterruptKind::ALL {
            assert_eq!(InterruptKind::parse(k.as_str()), Some(*k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(
            InterruptKind::ExternalEvent.waiting_status(),
            RunStatus::WaitingExternal
        );
        assert_eq!(
            InterruptKind::Clarification.waiting_status(),
            RunStatus::WaitingInput
        );
        assert_eq!(
            InterruptKind::Approval.waiting_status(),
            RunStatus::WaitingApproval
        );
    }

    #[test]
    fn actions_approve_reject_or_neither() {
        assert!(ApprovalAction::EditAccept.approves());
        assert!(ApprovalAction::Refine.rejects() && !ApprovalAction::Refine.approves());
        assert!(!ApprovalAction::Ask.is_vote());
        assert!(!ApprovalAction::OFFERABLE.contains(&ApprovalAction::Timeout));
        assert_eq!(
            "edit-accept".parse::<ApprovalAction>().unwrap(),
            ApprovalAction::EditAccept
        );
    }
}
