//! Interrupt kinds, their snapshot status, and re-entry keys.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InterruptKind {
    #[serde(rename = "approval")]
    Approval,
    #[serde(rename = "clarification")]
    Clarification,
    #[serde(rename = "external-event")]
    ExternalEvent,
    #[serde(rename = "custom")]
    Custom,
    #[serde(rename = "conversation.start")]
    ConversationStart,
    #[serde(rename = "conversation.exchange")]
    ConversationExchange,
    #[serde(rename = "conversation.close")]
    ConversationClose,
    #[serde(rename = "low-confidence")]
    LowConfidence,
    #[serde(rename = "credential")]
    Credential,
}

pub const ALL_KINDS: [InterruptKind; 9] = [
    InterruptKind::Approval,
    InterruptKind::Clarification,
    InterruptKind::ExternalEvent,
    InterruptKind::Custom,
    InterruptKind::ConversationStart,
    InterruptKind::ConversationExchange,
    InterruptKind::ConversationClose,
    InterruptKind::LowConfidence,
    InterruptKind::Credential,
];

impl InterruptKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InterruptKind::Approval => "approval",
            InterruptKind::Clarification => "clarification",
            InterruptKind::ExternalEvent => "external-event",
            InterruptKind::Custom => "custom",
            InterruptKind::ConversationStart => "conversation.start",
            InterruptKind::ConversationExchange => "conversation.exchange",
            InterruptKind::ConversationClose => "conversation.close",
            InterruptKind::LowConfidence => "low-confidence",
            InterruptKind::Credential => "credential",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ALL_KINDS.into_iter().find(|k| k.as_str() == s)
    }

    /// The run status while suspended on this kind (digest §2).
    pub fn waiting_status(self) -> &'static str {
        match self {
            InterruptKind::ExternalEvent => "waiting-external",
            InterruptKind::Clarification
            | InterruptKind::ConversationStart
            | InterruptKind::ConversationExchange
            | InterruptKind::ConversationClose
            | InterruptKind::Credential => "waiting-input",
            InterruptKind::Approval | InterruptKind::Custom | InterruptKind::LowConfidence => {
                "waiting-approval"
            }
        }
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

/// The deterministic re-entry key of one invocation: run, node and visit index.
/// A node reached again over an edge gets a new visit index, hence a new key.
pub fn reentry_key(run_id: &str, node_id: &str, visit: i64) -> String {
    format!("{run_id}:{node_id}:{visit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_map_to_statuses() {
        for k in ALL_KINDS {
            assert_eq!(InterruptKind::parse(k.as_str()), Some(k));
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(json, k.as_str());
        }
        assert_eq!(InterruptKind::ExternalEvent.waiting_status(), "waiting-external");
        assert_eq!(InterruptKind::Clarification.waiting_status(), "waiting-input");
        assert_eq!(InterruptKind::Approval.waiting_status(), "waiting-approval");
    }

    #[test]
    fn keys_differ_per_visit() {
        assert_ne!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 1));
        assert_eq!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 0));
    }
}
