//! The OpenWOP v2 run event types Tollgate writes.

text_enum! {
    /// `RunEventDoc.type`.
    pub enum EventType("event type") {
        RunStarted = "run.started",
        RunCompleted = "run.completed",
        RunFailed = "run.failed",
        RunCancelled = "run.cancelled",
        NodeStarted = "node.started",
        NodeCompleted = "node.completed",
        NodeFailed = "node.failed",
        NodeSkipped = "node.skipped",
        NodeCancelled = "node.cancelled",
        NodeSuspended = "node.suspended",
        NodeResumed = "node.resumed",
        InterruptRequested = "interrupt.requested",
        InterruptResolved = "interrupt.resolved",
        AgentDecided = "agent.decided",
        ConversationOpened = "conversation.opened",
        ConversationExchanged = "conversation.exchanged",
        ConversationClosed = "conversation.closed",
    }
}

impl EventType {
    /// Ends the run (nothing follows it in the log).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            EventType::RunCompleted | EventType::RunFailed | EventType::RunCancelled
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_types_round_trip() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        assert!(EventType::RunCancelled.is_terminal());
        assert!(!EventType::NodeSuspended.is_terminal());
        assert!("run.paused".parse::<EventType>().is_err());
    }
}
