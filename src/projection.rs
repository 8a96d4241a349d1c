//! Rebuilds a run's projection from its event log alone. Used to check that
//! the projections written beside the log never drift from it.

use crate::events::RunEvent;
use crate::runtime::RunRow;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Folded {
    pub status: String,
    pub current_node_id: Option<String>,
    pub error: Option<Value>,
    /// node → (status, visits)
    pub nodes: BTreeMap<String, (String, i64)>,
    /// interrupt id → status
    pub interrupts: BTreeMap<String, String>,
    waiting: BTreeMap<String, String>,
}

fn waiting_status(kind: &str) -> &'static str {
    crate::interrupt::InterruptKind::parse(kind)
        .map(|k| k.waiting_status())
        .unwrap_or("waiting-approval")
}

/// Folds events (in sequence order) into run, node and interrupt state.
pub fn fold(events: &[RunEvent]) -> Folded {
    let mut f = Folded {
        status: "pending".into(),
        ..Default::default()
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
        let set = |f: &mut Folded, status: &str| {
            if let Some(n) = &node {
                f.nodes.entry(n.clone()).or_insert(("idle".into(), 0)).0 = status.to_string();
            }
        };
        match e.event_type.as_str() {
            "run.started" => f.status = "running".into(),
            "node.started" => {
                if let Some(n) = &node {
                    let st = f.nodes.entry(n.clone()).or_insert(("idle".into(), 0));
                    st.0 = "running".into();
                    st.1 += 1;
                }
            }
            "node.suspended" => {
                set(&mut f, "suspended");
                if let (Some(n), Some(id)) = (&node, e.payload["interruptId"].as_str()) {
                    f.interrupts.insert(id.to_string(), "pending".into());
                    f.waiting.insert(
                        n.clone(),
                        waiting_status(e.payload["kind"].as_str().unwrap_or("")).into(),
                    );
                }
            }
            "interrupt.resolved" => {
                if let Some(id) = e.payload["interruptId"].as_str() {
                    f.interrupts.insert(id.to_string(), "resolved".into());
                }
            }
            "node.completed" => set(&mut f, "completed"),
            "node.failed" => set(&mut f, "failed"),
            "node.skipped" => set(&mut f, "skipped"),
            "node.cancelled" => set(&mut f, "cancelled"),
            "run.completed" => f.status = "completed".into(),
            "run.failed" => {
                f.status = "failed".into();
                f.error = Some(e.payload["error"].clone());
            }
            "run.cancelled" => f.status = "cancelled".into(),
            _ => {}
        }
        if matches!(e.event_type.as_str(), "run.failed" | "run.cancelled") {
            for s in f.interrupts.values_mut() {
                if s == "pending" {
                    *s = "cancelled".into();
                }
            }
        }
    }
    if !crate::runtime::is_terminal_status(&f.status) {
        // A node still "running" after a command is a durable delay.
        let suspended = order
            .iter()
            .find(|n| f.nodes.get(*n).is_some_and(|s| s.0 == "suspended"));
        match suspended {
            Some(n) => {
                f.status = f
                    .waiting
                    .get(n)
                    .cloned()
                    .unwrap_or_else(|| "waiting-approval".into());
                f.current_node_id = Some(n.clone());
            }
            None => f.status = "running".into(),
        }
    }
    f
}

impl Folded {
    /// Differences between this fold and the stored projection.
    pub(crate) fn diff(
        &self,
        run: &RunRow,
        nodes: &[(String, String, i64)],
        interrupts: &[(String, String)],
    ) -> Vec<String> {
        let mut out = Vec::new();
        if self.status != run.status {
            out.push(format!(
                "status: log says {}, projection {}",
                self.status, run.status
            ));
        }
        if self.current_node_id != run.current_node_id {
            out.push(format!(
                "currentNodeId: log {:?}, projection {:?}",
                self.current_node_id, run.current_node_id
            ));
        }
        let stored_error = run
            .error
            .as_deref()
            .and_then(|e| serde_json::from_str::<Value>(e).ok());
        if self.error != stored_error {
            out.push(format!(
                "error: log {:?}, projection {:?}",
                self.error, stored_error
            ));
        }
        for (node, status, visits) in nodes {
            // A delay waiting on its timer has started but not finished.
            let stored = if status == "waiting" {
                "running"
            } else {
                status.as_str()
            };
            match self.nodes.get(node) {
                Some((s, v)) if s == stored && v == visits => {}
                Some((s, v)) if stored == "skipped" || stored == "queued" => {
                    if s != stored && !(stored == "queued" && s == "idle") {
                        out.push(format!(
                            "node {node}: log ({s}, {v}), projection ({status}, {visits})"
                        ));
                    }
                }
                None if status == "skipped" || status == "queued" => {}
                other => out.push(format!(
                    "node {node}: log {other:?}, projection ({status}, {visits})"
                )),
            }
        }
        let stored: BTreeMap<String, String> = interrupts.iter().cloned().collect();
        if stored != self.interrupts {
            out.push(format!(
                "interrupts: log {:?}, projection {:?}",
                self.interrupts, stored
            ));
        }
        out
    }
}
