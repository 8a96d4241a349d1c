//! Rebuilds a run's projection from its event log alone. Used to check that
//! the projections written beside the log never drift from it.

use crate::events::RunEvent;
use crate::runtime::RunRow;
use serde_json::Value;
use std::collections::BTreeMap;
use tollgate_wire::{EventType, InterruptKind, InterruptStatus, NodeStatus, RunStatus};

#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    pub status: RunStatus,
    pub current_node_id: Option<String>,
    pub error: Option<Value>,
    /// node → (status, visits)
    pub nodes: BTreeMap<String, (NodeStatus, i64)>,
    /// interrupt id → status
    pub interrupts: BTreeMap<String, InterruptStatus>,
    waiting: BTreeMap<String, RunStatus>,
}

/// Folds events (in sequence order) into run, node and interrupt state.
pub fn fold(events: &[RunEvent]) -> Folded {
    let mut f = Folded {
        status: RunStatus::Queued,
        current_node_id: None,
        error: None,
        nodes: BTreeMap::new(),
        interrupts: BTreeMap::new(),
        waiting: BTreeMap::new(),
    };
    // Nodes in first-seen order decide which suspended node the snapshot names.
    let mut order: Vec<String> = Vec::new();
    for e in events {
        let node = e
            .node_id
            .clone()
            .or_else(|| e.payload["nodeId"].as_str().map(str::to_string));
        if let Some(n) = &node {
            if !order.contains(n) {
                order.push(n.clone());
            }
        }
        let set = |f: &mut Folded, status: NodeStatus| {
            if let Some(n) = &node {
                f.nodes.entry(n.clone()).or_insert((NodeStatus::Idle, 0)).0 = status;
            }
        };
        match e.event_type {
            EventType::RunStarted => f.status = RunStatus::Running,
            EventType::NodeStarted => {
                if let Some(n) = &node {
                    let st = f.nodes.entry(n.clone()).or_insert((NodeStatus::Idle, 0));
                    st.0 = NodeStatus::Running;
                    st.1 += 1;
                }
            }
            EventType::NodeSuspended => {
                set(&mut f, NodeStatus::Suspended);
                if let (Some(n), Some(id)) = (&node, e.payload["interruptId"].as_str()) {
                    f.interrupts.insert(id.to_string(), InterruptStatus::Pending);
                    let waiting = e.payload["kind"]
                        .as_str()
                        .and_then(InterruptKind::parse)
                        .map_or(RunStatus::WaitingApproval, InterruptKind::waiting_status);
                    f.waiting.insert(n.clone(), waiting);
                }
            }
            EventType::InterruptResolved => {
                if let Some(id) = e.payload["interruptId"].as_str() {
                    f.interrupts.insert(id.to_string(), InterruptStatus::Resolved);
                }
            }
            EventType::NodeCompleted => set(&mut f, NodeStatus::Completed),
            EventType::NodeFailed => set(&mut f, NodeStatus::Failed),
            EventType::NodeSkipped => set(&mut f, NodeStatus::Skipped),
            EventType::NodeCancelled => set(&mut f, NodeStatus::Cancelled),
            EventType::RunCompleted => f.status = RunStatus::Completed,
            EventType::RunFailed => {
                f.status = RunStatus::Failed;
                f.error = Some(e.payload["error"].clone());
            }
            EventType::RunCancelled => f.status = RunStatus::Cancelled,
            EventType::NodeResumed
            | EventType::InterruptRequested
            | EventType::AgentDecided
            | EventType::ConversationOpened
            | EventType::ConversationExchanged
            | EventType::ConversationClosed => {}
        }
        if matches!(e.event_type, EventType::RunFailed | EventType::RunCancelled) {
            for s in f.interrupts.values_mut() {
                if *s == InterruptStatus::Pending {
                    *s = InterruptStatus::Cancelled;
                }
            }
        }
    }
    if !f.status.is_terminal() {
        // A node still "running" after a command is a durable delay.
        let suspended = order
            .iter()
            .find(|n| f.nodes.get(*n).is_some_and(|s| s.0 == NodeStatus::Suspended));
        match suspended {
            Some(n) => {
                f.status = f.waiting.get(n).copied().unwrap_or(RunStatus::WaitingApproval);
                f.current_node_id = Some(n.clone());
            }
            None => f.status = RunStatus::Running,
        }
    }
    f
}

impl Folded {
    /// Differences between this fold and the stored projection.
    pub(crate) fn diff(
        &self,
        run: &RunRow,
        nodes: &[(String, NodeStatus, i64)],
        interrupts: &[(String, InterruptStatus)],
    ) -> Vec<String> {
        let mut out = Vec::new();
        if self.status != run.status {
            out.push(format!(
                "status: log says {}, projection {}",
                self.status, run.status
            ));
        }
        if self.current_node_id.as_deref() != run.current_node_id.as_deref() {
            out.push(format!(
                "currentNodeId: log {:?}, projection {:?}",
                self.current_node_id, run.current_node_id
            ));
        }
        let stored_error = run.error.clone();
        if self.error != stored_error {
            out.push(format!(
                "error: log {:?}, projection {:?}",
                self.error, stored_error
            ));
        }
        for (node, status, visits) in nodes {
            // A delay waiting on its timer has started but not finished.
            let stored = if *status == NodeStatus::Waiting {
                NodeStatus::Running
            } else {
                *status
            };
            match self.nodes.get(node) {
                Some((s, v)) if *s == stored && v == visits => {}
                Some((s, v)) if matches!(stored, NodeStatus::Skipped | NodeStatus::Queued) => {
                    if *s != stored && !(stored == NodeStatus::Queued && *s == NodeStatus::Idle) {
                        out.push(format!(
                            "node {node}: log ({s}, {v}), projection ({status}, {visits})"
                        ));
                    }
                }
                None if matches!(status, NodeStatus::Skipped | NodeStatus::Queued) => {}
                other => out.push(format!(
                    "node {node}: log {other:?}, projection ({status}, {visits})"
                )),
            }
        }
        let stored: BTreeMap<String, InterruptStatus> = interrupts.iter().cloned().collect();
        if stored != self.interrupts {
            out.push(format!(
                "interrupts: log {:?}, projection {:?}",
                self.interrupts, stored
            ));
        }
        out
    }
}
