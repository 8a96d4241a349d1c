//! Executes runs: fires nodes, raises and resolves interrupts, routes over
//! edges by `triggerRule`, and ends runs. A command loads a run's state
//! (`store::rows`), decides on it, and says what to write as typed changes
//! (`store::changes`), applied in the caller's transaction at `finish`, so a
//! command is one atomic step and the rules here hold no SQL.

use crate::binding::Scope;
use crate::clock::Millis;
use crate::definition::{resolve_inputs, NodeBehaviour, Workflow, MAX_WAIT_MS};
use crate::error::{EngineError, Result};
use crate::events::payloads;
use crate::store::changes::{Change, NewEvent};
use crate::store::conversations::OpenConversation;
pub(crate) use crate::store::directory_cache::load_directory;
use crate::store::nodes::{node_rows, InterruptRef, NodeRow};
pub(crate) use crate::store::rows::{
    latest_interrupt_for_update, load_run_for_update, pending_interrupt_for_update, InterruptRow, RunRow,
    INTERRUPT_COLUMNS, RUN_COLUMNS,
};
use crate::store::WriteConn;
use crate::store::{json_text, NewestEvent};
use crate::FastMap;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use tollgate_wire::{EventType, NodeId, NodeStatus, RunId, RunStatus, TenantId};

mod conversation;
mod decide;
mod finish;
mod flow;
mod interrupts;
#[cfg(test)]
mod tests;

pub(crate) use decide::{decide, timeout_resolution, Decision};

/// Default bound on how often one node may run in one run (a runaway loop guard).
pub const DEFAULT_RECURSION_LIMIT: i64 = 25;

#[derive(Debug, Clone, Default)]
struct NodeState {
    status: NodeStatus,
    visits: i64,
    output: Option<Value>,
    /// Edges delivered since this node last fired: edge id → source status.
    pending_in: BTreeMap<String, NodeStatus>,
    due_at: Option<Millis>,
    /// The run status while this node is suspended.
    waiting: Option<RunStatus>,
    /// Where the interrupt it raised last is stored (SQLite).
    interrupt: Option<InterruptRef>,
    dirty: bool,
}

impl NodeState {
    fn is_active(&self) -> bool {
        self.status.is_active()
    }
}

/// `configurable.run.recursionLimit`, or the default.
fn recursion_limit(run: &RunRow) -> i64 {
    run.configurable
        .as_ref()
        .and_then(|c| c["run"]["recursionLimit"].as_i64())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_RECURSION_LIMIT)
}

/// What a run start needs besides the definition.
pub struct NewRun {
    pub run_id: RunId,
    pub workflow_digest: String,
    pub inputs: Value,
    pub owner: Value,
    pub configurable: Option<Value>,
    pub tags: Option<Value>,
    pub metadata: Option<Value>,
    pub callback_url: Option<String>,
    /// The person the run is for (`createRun.requestedBy`), already checked.
    pub requested_by: Option<String>,
}

/// One command's view of one run.
pub(crate) struct Exec<'a> {
    conn: &'a WriteConn<'a>,
    wf: &'a Workflow,
    pub run: RunRow,
    nodes: FastMap<NodeId, NodeState>,
    now: Millis,
    queue: VecDeque<NodeId>,
    unhandled: Option<(NodeId, Value)>,
    recursion_limit: i64,
    /// Events appended by this command, written in one statement by `finish`.
    pending_events: Vec<NewEvent>,
    /// Other writes of this command, in order, applied with the events by `finish`.
    changes: Vec<Change>,
    /// What edge conditions see of each node that finished in this command
    /// (its status, outputs and, for an interrupt, the decision): see [`Exec::facts_of`].
    facts: FastMap<NodeId, Value>,
    /// Conversations this command opened, took turns in or closed (`None`:
    /// closed), over what the store holds.
    conversations: FastMap<String, Option<OpenConversation>>,
    /// This command starts the run: a refusal refuses the create itself.
    starting: bool,
    /// The rowid the next interrupt this command raises gets (`None` until
    /// the first is read from the table, `rows::next_interrupt_row`; then
    /// `Some(None)` where there is none to give: PostgreSQL).
    next_interrupt_row: Option<Option<i64>>,
}

impl<'a> Exec<'a> {
    /// Loads a run's scheduler state.
    pub fn load(conn: &'a WriteConn<'a>, wf: &'a Workflow, run: RunRow, now: Millis) -> Result<Exec<'a>> {
        let rows = node_rows(&run)?;
        Self::with_nodes(conn, wf, run, rows, now)
    }

    /// [`Exec::load`] with the run's node states already read from its row.
    pub(crate) fn with_nodes(
        conn: &'a WriteConn<'a>,
        wf: &'a Workflow,
        run: RunRow,
        rows: Vec<NodeRow>,
        now: Millis,
    ) -> Result<Exec<'a>> {
        let mut nodes = FastMap::with_capacity_and_hasher(wf.nodes.len(), Default::default());
        for r in rows {
            nodes.insert(
                r.node_id,
                NodeState {
                    status: r.status,
                    visits: r.visits,
                    output: r
                        .output
                        .map(|o| serde_json::from_str(&o))
                        .transpose()
                        .map_err(|e| EngineError::Storage(format!("node_states.output: {e}")))?,
                    pending_in: serde_json::from_str(&r.pending_in)
                        .map_err(|e| EngineError::Storage(format!("node_states.pending_in: {e}")))?,
                    due_at: r.due_at,
                    waiting: r.waiting,
                    interrupt: r.interrupt,
                    dirty: false,
                },
            );
        }
        Ok(Self::over(conn, wf, run, nodes, now, false))
    }

    /// A command's state over `run` with its node states, nothing done yet.
    fn over(
        conn: &'a WriteConn<'a>,
        wf: &'a Workflow,
        run: RunRow,
        nodes: FastMap<NodeId, NodeState>,
        now: Millis,
        starting: bool,
    ) -> Exec<'a> {
        let recursion_limit = recursion_limit(&run);
        Exec {
            conn,
            wf,
            run,
            nodes,
            now,
            queue: VecDeque::new(),
            unhandled: None,
            recursion_limit,
            pending_events: Vec::new(),
            changes: Vec::new(),
            facts: FastMap::default(),
            conversations: FastMap::default(),
            starting,
            next_interrupt_row: None,
        }
    }

    /// Creates the run row, emits `run.started` and fires the root nodes.
    pub fn start(conn: &'a WriteConn<'a>, wf: &'a Workflow, new: NewRun, now: Millis) -> Result<Exec<'a>> {
        let run = RunRow {
            tenant: TenantId::trusted(new.run_id.tenant()),
            run_id: new.run_id,
            workflow_id: wf.id.clone(),
            workflow_digest: new.workflow_digest,
            status: RunStatus::Running,
            owner: new.owner,
            current_node_id: None,
            error: None,
            inputs: new.inputs,
            configurable: new.configurable,
            tags: new.tags,
            metadata: new.metadata,
            callback_url: new.callback_url,
            next_sequence: 0,
            created_at: now,
            completed_at: None,
            requested_by: new.requested_by,
            nodes_json: None,
            newest_event: NewestEvent::Known(None),
            // Chosen by its insert (`store::run_rowid`).
            row_id: None,
        };
        let mut exec = Self::over(conn, wf, run, FastMap::default(), now, true);
        let started = serde_json::to_string(&payloads::RunStarted {
            inputs: &exec.run.inputs,
            owner: &exec.run.owner,
            transport: "rest",
            workflow_id: &wf.id,
            requested_by: exec.run.requested_by.as_deref(),
        })?;
        exec.emit_text(EventType::RunStarted, None, started)?;
        for root in wf.roots() {
            exec.state_mut(&root.id).status = NodeStatus::Queued;
            exec.queue.push_back(NodeId::trusted(&root.id));
        }
        exec.drain()?;
        Ok(exec)
    }

    fn state_mut(&mut self, node: &str) -> &mut NodeState {
        if !self.nodes.contains_key(node) {
            self.nodes.insert(NodeId::trusted(node), NodeState::default());
        }
        let st = self.nodes.get_mut(node).expect("inserted above");
        st.dirty = true;
        st
    }

    fn status_of(&self, node: &str) -> NodeStatus {
        self.nodes.get(node).map(|s| s.status).unwrap_or(NodeStatus::Idle)
    }

    pub fn emit(&mut self, event_type: EventType, node_id: Option<&str>, payload: Value) -> Result<i64> {
        self.emit_text(event_type, node_id, json_text(&payload))
    }

    /// [`Exec::emit`] with a typed payload (`crate::events::payloads`), written
    /// straight to text.
    fn emit_typed<T: serde::Serialize>(
        &mut self,
        event_type: EventType,
        node_id: Option<&str>,
        payload: &T,
    ) -> Result<i64> {
        self.emit_text(event_type, node_id, serde_json::to_string(payload)?)
    }

    /// [`Exec::emit`] with the payload already written as JSON text.
    fn emit_text(&mut self, event_type: EventType, node_id: Option<&str>, payload: String) -> Result<i64> {
        let sequence = self.run.next_sequence;
        self.run.next_sequence += 1;
        self.pending_events.push(NewEvent {
            sequence,
            event_type,
            node_id: node_id.map(NodeId::trusted),
            payload,
        });
        Ok(sequence)
    }

    fn drain(&mut self) -> Result<()> {
        while let Some(node) = self.queue.pop_front() {
            if self.unhandled.is_some() {
                break;
            }
            self.fire(&node)?;
        }
        Ok(())
    }

    fn fire(&mut self, node_id: &str) -> Result<()> {
        let wf = self.wf;
        let Some(node) = wf.node(node_id) else {
            return Err(EngineError::Internal(format!(
                "node {node_id} vanished from its workflow"
            )));
        };
        let visits = {
            let st = self.state_mut(node_id);
            st.visits += 1;
            st.status = NodeStatus::Running;
            st.output = None;
            st.visits
        };
        self.emit_typed(
            EventType::NodeStarted,
            Some(node_id),
            &payloads::NodeStarted {
                attempt: 0,
                node_id,
                type_id: &node.type_id,
            },
        )?;
        if visits > self.recursion_limit {
            let error = json!({
                "code": "recursion_limit_exceeded",
                "message": format!("node \"{node_id}\" ran more than {} times (configurable.run.recursionLimit)", self.recursion_limit),
                "retryable": false
            });
            self.state_mut(node_id).status = NodeStatus::Failed;
            self.emit(
                EventType::NodeFailed,
                Some(node_id),
                json!({ "nodeId": node_id, "error": error }),
            )?;
            self.unhandled = Some((NodeId::trusted(node_id), error));
            return Ok(());
        }
        match &node.behaviour {
            NodeBehaviour::Noop => self.complete(node_id, json!({})),
            NodeBehaviour::Delay { delay_ms } => {
                let bound = match self.bound_inputs(node_id) {
                    Ok(b) => b,
                    Err(error) => return self.fail(node_id, error),
                };
                let delay = delay_ms
                    .or_else(|| bound.get("delayMs").and_then(Value::as_u64))
                    .filter(|&ms| ms <= MAX_WAIT_MS);
                match delay {
                    Some(0) => self.complete(node_id, json!({ "delayedMs": 0 })),
                    Some(ms) => {
                        let due = after(self.now, ms);
                        let st = self.state_mut(node_id);
                        st.status = NodeStatus::Waiting;
                        st.due_at = Some(due);
                        Ok(())
                    }
                    None => {
                        self.fail(
                            node_id,
                            json!({"code": "validation_error", "message": format!("node \"{node_id}\": delayMs is not an integer from 0 to {MAX_WAIT_MS}"), "retryable": false}),
                        )
                    }
                }
            }
            NodeBehaviour::Interrupt(spec) => self.raise(node_id, visits - 1, spec, None),
            NodeBehaviour::Decision(spec) => self.agent_decides(node_id, visits - 1, spec),
        }
    }

    /// What bindings read in this run now (inputs, variables, node outputs, the run).
    fn scope(&self) -> Scope<'_> {
        let nodes = self
            .nodes
            .iter()
            .filter_map(|(id, st)| st.output.as_ref().map(|o| (id.to_string(), o.clone())))
            .collect();
        Scope {
            inputs: &self.run.inputs,
            defaults: &self.wf.variables,
            nodes,
            run_id: self.run.run_id.as_str(),
            workflow_id: &self.wf.id,
        }
    }

    /// The node's bound inputs, or the node error naming the input that could not be bound.
    fn bound_inputs(&self, node_id: &str) -> std::result::Result<Map<String, Value>, Value> {
        let node = self.wf.node(node_id).expect("checked by fire");
        // Most nodes bind nothing: no scope (a copy of every node's outputs) to build.
        if node.inputs.is_empty() {
            return Ok(Map::new());
        }
        resolve_inputs(node, &self.scope()).map_err(|(member, message)| {
            json!({
                "code": "validation_error",
                "message": format!("node \"{node_id}\": {member}: {message}"),
                "details": {"nodeId": node_id, "field": member},
                "retryable": false
            })
        })
    }
}

/// The time `ms` after `now`: far waits end at the end of time, never
/// wrap into the past (a definition stored before `MAX_WAIT_MS` may hold one).
fn after(now: i64, ms: u64) -> i64 {
    now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
}
