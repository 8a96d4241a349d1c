//! The statuses of runs, nodes, interrupts and outbox messages.

text_enum! {
    /// A run's status (OpenWOP v2 `RunSnapshot.status`).
    pub enum RunStatus("run status") {
        Queued = "queued",
        Running = "running",
        WaitingApproval = "waiting-approval",
        WaitingInput = "waiting-input",
        WaitingExternal = "waiting-external",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl RunStatus {
    /// A run in this status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// Suspended at an interrupt.
    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            RunStatus::WaitingApproval | RunStatus::WaitingInput | RunStatus::WaitingExternal
        )
    }
}

text_enum! {
    /// One node's status within a run.
    #[derive(Default)]
    pub enum NodeStatus("node status") {
        /// Not reached yet.
        #[default]
        Idle = "idle",
        Queued = "queued",
        Running = "running",
        /// A `core.delay` waiting for its timer.
        Waiting = "waiting",
        /// At an interrupt.
        Suspended = "suspended",
        Completed = "completed",
        Failed = "failed",
        Skipped = "skipped",
        Cancelled = "cancelled",
    }
}

impl NodeStatus {
    /// Fired and not yet ended.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            NodeStatus::Queued | NodeStatus::Running | NodeStatus::Waiting | NodeStatus::Suspended
        )
    }
}

text_enum! {
    /// An interrupt's status.
    pub enum InterruptStatus("interrupt status") {
        Pending = "pending",
        Resolved = "resolved",
        /// Closed because its run ended (failed or cancelled).
        Cancelled = "cancelled",
    }
}

text_enum! {
    /// An outbox message's delivery state.
    pub enum OutboxStatus("outbox status") {
        Pending = "pending",
        Sent = "sent",
        /// Given up after its last attempt.
        Failed = "failed",
        /// Not to be sent (no address, or refused by the egress policy).
        Dropped = "dropped",
    }
}

text_enum! {
    /// Why a mail was queued (an email's outbox `reason`; a callback's is
    /// the event type it reports).
    pub enum MailReason("mail reason") {
        /// An interrupt was raised and this person is told.
        Requested = "requested",
        /// The deadline is near and this person has not decided.
        Reminder = "reminder",
        /// The deadline passed without a decision.
        Escalation = "escalation",
        /// The person asked for a new link from an expired link's page.
        FreshLink = "fresh-link",
    }
}

text_enum! {
    /// What an outbox message is.
    pub enum OutboxKind("outbox kind") {
        Email = "email",
        Callback = "callback",
    }
}

text_enum! {
    /// How near a pending interrupt's deadline is, as the inbox marks it.
    pub enum DeadlineState("deadline state") {
        /// No deadline.
        None = "none",
        Overdue = "overdue",
        /// Due within a day.
        Soon = "soon",
        Ok = "ok",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_as_text_and_json() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
            assert_eq!(
                serde_json::from_value::<RunStatus>(s.as_str().into()).unwrap(),
                *s
            );
        }
        for s in NodeStatus::ALL {
            assert_eq!(s.as_str().parse::<NodeStatus>().unwrap(), *s);
        }
        assert_eq!(RunStatus::TEXTS.len(), RunStatus::ALL.len());
    }

    #[test]
    fn unknown_text_is_an_error_naming_the_choices() {
        let e = "paused".parse::<RunStatus>().unwrap_err();
        assert_eq!(e.what, "run status");
        assert!(e.to_string().contains("waiting-approval"), "{e}");
        let e = serde_json::from_value::<InterruptStatus>("done".into()).unwrap_err();
        assert!(e.to_string().contains("pending, resolved, cancelled"), "{e}");
    }

    #[test]
    fn terminal_and_active() {
        assert!(RunStatus::Cancelled.is_terminal());
        assert!(!RunStatus::WaitingInput.is_terminal());
        assert!(RunStatus::WaitingInput.is_waiting());
        assert!(NodeStatus::Waiting.is_active());
        assert!(!NodeStatus::Skipped.is_active());
    }
}
