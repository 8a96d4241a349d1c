//! Routing between nodes: completing, failing and skipping them, delivering
//! edges by `triggerRule`; and stopping a run's active nodes.

use super::{Exec, NodeState};
use crate::error::Result;
use crate::events::payloads;
use crate::routing::Trigger;
use crate::store::changes::Change;
use serde_json::{json, Map, Value};
use tollgate_wire::{EventType, NodeId, NodeStatus, RunStatus};

impl<'a> Exec<'a> {
    pub(super) fn complete(&mut self, node_id: &str, outputs: Value) -> Result<()> {
        self.record_facts(node_id, NodeStatus::Completed, Some(&outputs), None);
        self.emit_typed(
            EventType::NodeCompleted,
            Some(node_id),
            &payloads::NodeCompleted {
                node_id,
                outputs: &outputs,
            },
        )?;
        {
            let st = self.state_mut(node_id);
            st.status = NodeStatus::Completed;
            st.output = Some(outputs);
            st.due_at = None;
            st.waiting = None;
        }
        self.propagate(node_id)
    }

    pub(super) fn fail(&mut self, node_id: &str, error: Value) -> Result<()> {
        {
            let st = self.state_mut(node_id);
            st.status = NodeStatus::Failed;
            st.due_at = None;
            st.waiting = None;
        }
        self.record_facts(node_id, NodeStatus::Failed, None, Some(&error));
        self.emit(
            EventType::NodeFailed,
            Some(node_id),
            json!({ "nodeId": node_id, "error": error, "attempts": 1 }),
        )?;
        let handled = self
            .wf
            .outgoing(node_id)
            .any(|e| e.rule.admits_failure() && self.edge_holds(e));
        if handled {
            self.propagate(node_id)
        } else {
            if self.unhandled.is_none() {
                self.unhandled = Some((NodeId::trusted(node_id), error));
            }
            Ok(())
        }
    }

    /// What edge conditions over `node_id` see: its `status`, `output` and
    /// `error`, the members of its output (an agent's `decision`), the
    /// decision of its interrupt (`decision`, `action`, `outcome`,
    /// `resumeValue`, `reason`; set by [`Exec::resolve`]) and the run's `inputs`.
    fn record_facts(
        &mut self,
        node_id: &str,
        status: NodeStatus,
        output: Option<&Value>,
        error: Option<&Value>,
    ) {
        if !self.wf.outgoing(node_id).any(|e| e.condition.is_some()) {
            return;
        }
        let mut facts = match self.facts.remove(node_id) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Some(Value::Object(out)) = output {
            for (k, v) in out {
                facts.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        facts.insert("status".into(), json!(status));
        facts.insert("output".into(), output.cloned().unwrap_or_else(|| json!({})));
        if let Some(e) = error {
            facts.insert("error".into(), e.clone());
        }
        facts.insert("inputs".into(), self.run.inputs.clone());
        self.facts.insert(NodeId::trusted(node_id), Value::Object(facts));
    }

    /// Whether `edge` may be taken: it has no condition, or its condition
    /// holds over the source's facts. A condition that cannot be evaluated
    /// does not hold (and is logged).
    fn edge_holds(&self, edge: &crate::definition::Edge) -> bool {
        let Some(condition) = &edge.condition else {
            return true;
        };
        let empty = json!({});
        let facts = self.facts.get(edge.source.as_str()).unwrap_or(&empty);
        match condition.holds(facts) {
            Ok(holds) => holds,
            Err(e) => {
                tracing::warn!(run = %self.run.run_id, edge = %edge.id, error = %e, "edge condition could not be evaluated; not taken");
                false
            }
        }
    }

    fn skip(&mut self, node_id: &str, reason: &str) -> Result<()> {
        self.state_mut(node_id).status = NodeStatus::Skipped;
        self.emit(
            EventType::NodeSkipped,
            Some(node_id),
            json!({ "nodeId": node_id, "reason": reason }),
        )?;
        self.propagate(node_id)
    }

    /// Delivers a terminal node's status over its outgoing edges and decides each target.
    fn propagate(&mut self, node_id: &str) -> Result<()> {
        let status = self.status_of(node_id);
        let wf = self.wf;
        // An edge whose condition does not hold delivers `skipped`.
        let targets: Vec<(String, String, NodeStatus)> = wf
            .outgoing(node_id)
            .map(|e| {
                let delivered = if status == NodeStatus::Skipped || self.edge_holds(e) {
                    status
                } else {
                    NodeStatus::Skipped
                };
                (e.id.clone(), e.target.clone(), delivered)
            })
            .collect();
        for (edge_id, target, delivered) in &targets {
            self.state_mut(target)
                .pending_in
                .insert(edge_id.clone(), *delivered);
        }
        let mut seen = Vec::new();
        for (_, target, _) in targets {
            if !seen.contains(&target) {
                self.evaluate(&target)?;
                seen.push(target);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, target: &str) -> Result<()> {
        if self.nodes.get(target).is_some_and(NodeState::is_active) {
            return Ok(());
        }
        let wf = self.wf;
        let pending = self
            .nodes
            .get(target)
            .map(|s| s.pending_in.clone())
            .unwrap_or_default();
        let decided = crate::routing::trigger(wf.incoming(target), &pending);
        match decided {
            Trigger::Fire => {
                let st = self.state_mut(target);
                st.pending_in.clear();
                st.status = NodeStatus::Queued;
                self.queue.push_back(NodeId::trusted(target));
            }
            Trigger::Skip => {
                self.state_mut(target).pending_in.clear();
                self.skip(target, "trigger rule not satisfied")?;
            }
            Trigger::Wait => {}
        }
        Ok(())
    }

    /// Completes a due `core.delay` node.
    pub fn finish_delay(&mut self, node_id: &str) -> Result<bool> {
        let due = self
            .nodes
            .get(node_id)
            .filter(|s| s.status == NodeStatus::Waiting)
            .and_then(|s| s.due_at);
        if due.is_none_or(|d| d > self.now) {
            return Ok(false);
        }
        self.complete(node_id, json!({}))?;
        self.drain()?;
        Ok(true)
    }

    /// Cancels a live run: active nodes get `node.cancelled`, open interrupts are closed.
    pub fn cancel(&mut self, reason: Option<String>, by: Option<String>) -> Result<()> {
        self.stop_active("run cancelled")?;
        self.close_conversations("run-cancelled")?;
        let mut payload = json!({ "durationMs": (self.now - self.run.created_at).max(0) });
        if let Some(r) = reason {
            payload["reason"] = json!(r);
        }
        if let Some(b) = by {
            payload["cancelledBy"] = json!(b);
        }
        self.emit(EventType::RunCancelled, None, payload)?;
        self.run.status = RunStatus::Cancelled;
        self.run.current_node_id = None;
        self.run.completed_at = Some(self.now);
        Ok(())
    }

    pub(super) fn stop_active(&mut self, reason: &str) -> Result<()> {
        let active: Vec<String> = self
            .wf
            .nodes
            .iter()
            .filter(|n| self.nodes.get(n.id.as_str()).is_some_and(NodeState::is_active))
            .map(|n| n.id.clone())
            .collect();
        for node_id in active {
            {
                let st = self.state_mut(&node_id);
                st.status = NodeStatus::Cancelled;
                st.due_at = None;
                st.waiting = None;
            }
            self.emit(
                EventType::NodeCancelled,
                Some(&node_id),
                json!({ "nodeId": node_id, "reason": reason }),
            )?;
        }
        self.queue.clear();
        self.changes.push(Change::CancelPending {
            run_id: self.run.run_id.clone(),
            at: self.now,
        });
        Ok(())
    }
}
