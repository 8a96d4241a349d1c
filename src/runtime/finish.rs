//! The end of a command: the run's status settled, callbacks queued, and
//! every change written in the caller's transaction.

use super::{Exec, NodeState};
use crate::error::Result;
use crate::events::payloads;
use crate::store::changes::{self, Change};
use crate::store::json_text;
use crate::store::nodes::{node_document, NodeDocument, NodeRow};
use crate::store::rows::RunRow;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use tollgate_wire::{EventType, NodeId, NodeStatus, RunStatus};

impl<'a> Exec<'a> {
    /// Decides the run's status after a step: failed, completed, or waiting.
    fn settle(&mut self) -> Result<()> {
        if self.run.is_terminal() {
            return Ok(());
        }
        let duration = (self.now - self.run.created_at).max(0);
        if let Some((node_id, error)) = self.unhandled.take() {
            self.stop_active("run failed")?;
            self.close_conversations("run-failed")?;
            let run_error = json!({ "code": error["code"], "message": error["message"] });
            self.emit(
                EventType::RunFailed,
                None,
                json!({ "error": run_error, "failedNodeId": node_id, "durationMs": duration }),
            )?;
            self.run.status = RunStatus::Failed;
            self.run.error = Some(run_error);
            self.run.current_node_id = None;
            self.run.completed_at = Some(self.now);
            return Ok(());
        }
        let wf = self.wf;
        let suspended = wf.nodes.iter().find(|n| {
            self.nodes
                .get(n.id.as_str())
                .is_some_and(|s| s.status == NodeStatus::Suspended)
        });
        if let Some(node) = suspended {
            self.run.status = self.nodes[node.id.as_str()]
                .waiting
                .unwrap_or(RunStatus::WaitingApproval);
            self.run.current_node_id = Some(NodeId::trusted(&node.id));
            return Ok(());
        }
        if wf
            .nodes
            .iter()
            .any(|n| self.nodes.get(n.id.as_str()).is_some_and(NodeState::is_active))
        {
            self.run.status = RunStatus::Running;
            self.run.current_node_id = None;
            return Ok(());
        }
        self.close_conversations("run-completed")?;
        let mut outputs = BTreeMap::new();
        for n in &wf.nodes {
            if wf.outgoing(&n.id).next().is_none() {
                if let Some(st) = self
                    .nodes
                    .get(n.id.as_str())
                    .filter(|s| s.status == NodeStatus::Completed)
                {
                    if let Some(o) = st
                        .output
                        .as_ref()
                        .filter(|o| o.as_object().is_some_and(|m| !m.is_empty()))
                    {
                        outputs.insert(n.id.as_str(), o);
                    }
                }
            }
        }
        let payload = serde_json::to_string(&payloads::RunCompleted {
            duration_ms: duration,
            outputs,
        })?;
        self.emit_text(EventType::RunCompleted, None, payload)?;
        self.run.status = RunStatus::Completed;
        self.run.current_node_id = None;
        self.run.completed_at = Some(self.now);
        Ok(())
    }

    /// Queues one `callback` outbox row per callback event of this command
    /// (see `crate::callback`), in the command's transaction.
    fn queue_callbacks(&mut self) -> Result<()> {
        let Some(url) = self.run.callback_url.as_deref() else {
            return Ok(());
        };
        let timestamp = crate::clock::rfc3339(self.now);
        let mut callbacks = Vec::new();
        for (i, event) in self.pending_events.iter().enumerate() {
            if !crate::callback::is_callback_event(event.event_type) {
                continue;
            }
            // `interrupt.requested` has no seat for the interrupt id; the
            // `node.suspended` that follows it names it.
            let interrupt_id = if event.event_type == EventType::InterruptRequested {
                self.pending_events[i + 1..]
                    .iter()
                    .find(|e| e.event_type == EventType::NodeSuspended && e.node_id == event.node_id)
                    .map(|e| serde_json::from_str::<Value>(&e.payload))
                    .transpose()?
                    .and_then(|p| p["interruptId"].as_str().map(str::to_string))
            } else {
                None
            };
            let body = crate::callback::body(crate::callback::CallbackEvent {
                event_type: event.event_type,
                sequence: event.sequence,
                run_id: &self.run.run_id,
                workflow_id: &self.run.workflow_id,
                node_id: event.node_id.as_deref(),
                interrupt_id: interrupt_id.as_deref(),
                run_status: self.run.status,
                timestamp: &timestamp,
                payload: serde_json::from_str(&event.payload)?,
            });
            callbacks.push(Change::Callback {
                event_type: event.event_type,
                run_id: self.run.run_id.clone(),
                node_id: event.node_id.clone(),
                interrupt_id,
                url: url.to_string(),
                body: body.to_string(),
                at: self.now,
            });
        }
        self.changes.append(&mut callbacks);
        Ok(())
    }

    /// Every node's state, in node order, as the run's row stores them.
    fn node_document(&self) -> Result<NodeDocument> {
        let mut ids: Vec<&NodeId> = self.nodes.keys().collect();
        ids.sort();
        let rows = ids
            .into_iter()
            .map(|node_id| {
                let st = &self.nodes[node_id];
                Ok(NodeRow {
                    node_id: node_id.clone(),
                    status: st.status,
                    visits: st.visits,
                    output: st.output.as_ref().map(json_text),
                    pending_in: serde_json::to_string(&st.pending_in)?,
                    due_at: st.due_at,
                    waiting: st.waiting,
                    interrupt: st.interrupt,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        node_document(&rows)
    }

    /// Settles the run and writes the projections. Call once at the end of a command.
    pub fn finish(mut self) -> Result<RunRow> {
        self.settle()?;
        self.queue_callbacks()?;
        let mut changes = std::mem::take(&mut self.changes);
        // One multi-row statement for the command's events.
        changes.push(Change::Events {
            run_id: self.run.run_id.clone(),
            events: std::mem::take(&mut self.pending_events),
            at: self.now,
        });
        if self.starting {
            // The new run's row is written once, as the command leaves it.
            changes.push(Change::NewRun {
                nodes: self.node_document()?,
                run: Box::new(self.run.clone()),
            });
        } else {
            // A command that changed a node rewrites the run's node states whole.
            let nodes = if self.nodes.values().any(|s| s.dirty) {
                Some(self.node_document()?)
            } else {
                None
            };
            changes.push(Change::Run {
                run_id: self.run.run_id.clone(),
                row_id: self.run.row_id,
                status: self.run.status,
                current_node_id: self.run.current_node_id.clone(),
                error: self.run.error.as_ref().map(json_text),
                next_sequence: self.run.next_sequence,
                completed_at: self.run.completed_at,
                nodes,
            });
        }
        // The returned row no longer knows its newest event.
        let newest = std::mem::take(&mut self.run.newest_event);
        changes::apply_for_run(self.conn, changes, self.run.run_id.as_str(), newest)?;
        Ok(self.run)
    }
}
