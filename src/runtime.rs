//! Executes runs: fires nodes, raises and resolves interrupts, routes over
//! edges by `triggerRule`, and ends runs. A command loads a run's state
//! (`store::rows`), decides on it, and says what to write as typed changes
//! (`store::changes`), applied in the caller's transaction at `finish`, so a
//! command is one atomic step and the rules here hold no SQL.

use crate::approval::{self, ApprovalAction, Ballot, OnTimeout, Verdict};
use crate::binding::Scope;
use crate::clock::Millis;
use crate::definition::{resolve_inputs, DecisionSpec, InterruptSpec, NodeBehaviour, Workflow, MAX_WAIT_MS};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::events::payloads;
use crate::ids;
use crate::interrupt::{reentry_key, InterruptKind};
use crate::routing::Trigger;
use crate::store::changes::{self, Change, InboxCount, NewEvent, NewInterrupt};
use crate::store::conversations::{self, ConversationChange, OpenConversation};
pub(crate) use crate::store::directory_cache::load_directory;
use crate::store::nodes::{node_document, node_rows, InterruptRef, NodeDocument, NodeRow};
use crate::store::rows::next_interrupt_row;
pub(crate) use crate::store::rows::{
    latest_interrupt_for_update, load_run_for_update, pending_interrupt_for_update, InterruptRow, RunRow,
    INTERRUPT_COLUMNS, RUN_COLUMNS,
};
use crate::store::votes::{self, StoredVote};
use crate::store::WriteConn;
use crate::store::{json_text, NewestEvent};
use crate::FastMap;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use tollgate_wire::{EventType, MailReason, NodeId, NodeStatus, RunId, RunStatus, TenantId};

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

/// Why a conversation interrupt cannot be raised.
enum ConversationRefusal {
    /// The node fails (the run goes on or fails by its edges).
    Fail { member: String, message: String },
    /// The whole command is refused (a create whose conversation id is taken).
    Refuse(EngineError),
}

/// `configurable.run.escalationThreshold`, when the run sets one.
fn run_escalation_threshold(run: &RunRow) -> Option<f64> {
    run.configurable
        .as_ref()
        .and_then(|c| c["run"]["escalationThreshold"].as_f64())
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
        let recursion_limit = recursion_limit(&run);
        Ok(Exec {
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
            starting: false,
            next_interrupt_row: None,
        })
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
        let recursion_limit = recursion_limit(&run);
        let mut exec = Exec {
            conn,
            wf,
            run,
            nodes: FastMap::default(),
            now,
            queue: VecDeque::new(),
            unhandled: None,
            recursion_limit,
            pending_events: Vec::new(),
            changes: Vec::new(),
            facts: FastMap::default(),
            conversations: FastMap::default(),
            starting: true,
            next_interrupt_row: None,
        };
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

    /// A `core.agentDecision`: records `agent.decided`, then goes on with the
    /// agent's decision, or escalates to a person below the threshold.
    fn agent_decides(&mut self, node_id: &str, visit: i64, spec: &DecisionSpec) -> Result<()> {
        let bound = match self.bound_inputs(node_id) {
            Ok(b) => b,
            Err(error) => return self.fail(node_id, error),
        };
        let invalid = |field: &str, message: String| json!({"code": "validation_error", "message": format!("node \"{node_id}\": {message}"), "details": {"nodeId": node_id, "field": field}, "retryable": false});
        let Some(decision) = bound.get("decision").cloned() else {
            return self.fail(
                node_id,
                invalid(
                    "inputs.decision",
                    "inputs.decision is not bound to a value".into(),
                ),
            );
        };
        let confidence = match bound.get("confidence") {
            None => None,
            Some(c) => match c.as_f64() {
                Some(x) if (0.0..=1.0).contains(&x) => Some(x),
                _ => {
                    return self.fail(
                        node_id,
                        invalid(
                            "inputs.confidence",
                            format!("inputs.confidence must be a number between 0 and 1, not {c}"),
                        ),
                    )
                }
            },
        };
        let mut decided = json!({ "agentId": spec.agent_id, "decision": decision });
        if let Some(c) = confidence {
            decided["confidence"] = json!(c);
        }
        self.emit(EventType::AgentDecided, Some(node_id), decided)?;
        let threshold = run_escalation_threshold(&self.run)
            .or(spec.threshold)
            .unwrap_or(crate::definition::DEFAULT_ESCALATION_THRESHOLD);
        match confidence {
            // Absent confidence is "no signal": no escalation (agent.decided).
            Some(observed) if observed < threshold => {
                let data = json!({
                    "agentId": spec.agent_id,
                    "threshold": threshold,
                    "observed": observed,
                    "decision": decision,
                });
                self.raise(node_id, visit, &spec.escalation, Some(data))
            }
            _ => self.complete(
                node_id,
                json!({ "decision": decision, "confidence": confidence, "escalated": false }),
            ),
        }
    }

    /// Fails `node_id` because its interrupt payload could not be built or is not valid.
    fn fail_payload(&mut self, node_id: &str, member: &str, message: String) -> Result<()> {
        self.fail(
            node_id,
            json!({
                "code": "validation_error",
                "message": format!("node \"{node_id}\": {member}: {message}"),
                "details": {"nodeId": node_id, "field": member},
                "retryable": false
            }),
        )
    }

    /// Raises the node's interrupt: binds its data (or takes `data` as
    /// given), checks the payload against its kind and contract, and
    /// suspends. A payload that fails fails the node; nothing is requested.
    fn raise(&mut self, node_id: &str, visit: i64, spec: &InterruptSpec, data: Option<Value>) -> Result<()> {
        let wf = self.wf;
        let node = wf.node(node_id).expect("checked by fire");
        let bound = match self.bound_inputs(node_id) {
            Ok(b) => b,
            Err(error) => return self.fail(node_id, error),
        };
        let mut data = match data {
            Some(d) => d,
            None if spec.bound => match crate::binding::bind_tree(&spec.data, &self.scope(), "data") {
                Ok(d) => d,
                Err(e) => return self.fail_payload(node_id, &e.member, e.message),
            },
            None => spec.data.clone(),
        };
        let request = if !bound.is_empty() {
            Value::Object(bound)
        } else {
            match (spec.kind, data.get("artifactData"), data.get("payload")) {
                (InterruptKind::Approval, Some(a), _) if a.is_object() => a.clone(),
                (InterruptKind::Custom, _, Some(p)) if p.is_object() => p.clone(),
                _ => json!({}),
            }
        };
        if let Err(e) = spec.contract.validate_request(&request) {
            let message = format!("node \"{node_id}\": request payload does not match requestSchema: {e}");
            let field = match &e {
                EngineError::Validation { field, .. } => field.clone(),
                _ => None,
            };
            return self
                .fail(
                    node_id,
                    json!({"code": "validation_error", "message": message, "details": {"nodeId": node_id, "field": field}, "retryable": false}),
                );
        }
        match spec.kind {
            InterruptKind::Approval if request.as_object().is_some_and(|m| !m.is_empty()) => {
                data["artifactData"] = request.clone();
            }
            InterruptKind::Custom if request.as_object().is_some_and(|m| !m.is_empty()) => {
                data["payload"] = request.clone();
            }
            _ => {}
        }
        let conversation = match self.conversation_turn(spec.kind, &mut data) {
            Ok(c) => c,
            Err(ConversationRefusal::Fail { member, message }) => {
                return self.fail_payload(node_id, &member, message)
            }
            Err(ConversationRefusal::Refuse(e)) => return Err(e),
        };
        let key = reentry_key(&self.run.run_id, node_id, visit);
        // Written once: the interrupt's row and its `interrupt.requested` event store the same text.
        let payload = serde_json::to_string(&payloads::InterruptRequested {
            data: &data,
            key: &key,
            kind: spec.kind.as_str(),
            resume_schema: spec.contract.resume_schema_text(),
            timeout_ms: spec.timeout_ms,
        })?;
        // An unbound payload was checked at registration; what a run adds to it
        // (`artifactData`, `payload`, `turnIndex`) the kind's schema admits.
        let checked = if spec.bound {
            crate::interrupt::check_payload(spec.kind, &serde_json::from_str(&payload)?)
        } else {
            Ok(())
        };
        if let Err(e) = checked {
            let member = match &e {
                EngineError::Validation { field: Some(f), .. } => {
                    f.trim_start_matches("interrupt.").to_string()
                }
                _ => "data".to_string(),
            };
            return self.fail_payload(
                node_id,
                &member,
                format!("the interrupt payload does not match its kind: {e}"),
            );
        }
        let title = data
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| data["questions"][0]["question"].as_str().map(str::to_string))
            .or_else(|| data["prompt"].as_str().map(str::to_string))
            .unwrap_or_else(|| node.name.clone());
        let owner_subject = self.run.requester();
        let deadline = spec.timeout_ms.map(|t| after(self.now, t));
        let interrupt_id = ids::new_tenant_bound(&self.run.tenant);
        let row_id = self.next_interrupt_row()?;
        self.changes.push(Change::Interrupt(Box::new(NewInterrupt {
            row_id,
            interrupt_id: interrupt_id.clone(),
            run_id: self.run.run_id.clone(),
            node_id: NodeId::trusted(node_id),
            key: key.clone(),
            visit,
            kind: spec.kind,
            payload: payload.clone(),
            contract: spec.contract.text().to_string(),
            request: json_text(&request),
            rules: spec.rules_text().to_string(),
            workflow_id: wf.id.clone(),
            title,
            owner_subject,
            created_at: self.now,
            deadline_at: deadline,
        })));
        self.queue_notifications(spec, &data, &interrupt_id, node_id, MailReason::Requested)?;
        if let Some(opened) = conversation {
            self.emit(EventType::ConversationOpened, Some(node_id), opened)?;
        }
        self.emit_text(EventType::InterruptRequested, Some(node_id), payload)?;
        self.emit_typed(
            EventType::NodeSuspended,
            Some(node_id),
            &payloads::NodeSuspended {
                interrupt_id: &interrupt_id,
                key: &key,
                kind: spec.kind.as_str(),
                node_id,
                reason: (spec.kind == InterruptKind::LowConfidence).then_some("low-confidence"),
            },
        )?;
        let st = self.state_mut(node_id);
        st.status = NodeStatus::Suspended;
        st.waiting = Some(spec.kind.waiting_status());
        st.interrupt = row_id.map(|row_id| InterruptRef { row_id, visit });
        Ok(())
    }

    /// The rowid of the next interrupt this command inserts, on SQLite
    /// (`None` on PostgreSQL): the table's largest plus one, read at the
    /// first and counted on from there, since the inserts run only when the
    /// command finishes.
    fn next_interrupt_row(&mut self) -> Result<Option<i64>> {
        let next = match self.next_interrupt_row {
            Some(counted) => counted,
            None => next_interrupt_row(self.conn)?,
        };
        self.next_interrupt_row = Some(next.and_then(|n| n.checked_add(1)));
        Ok(next)
    }

    fn complete(&mut self, node_id: &str, outputs: Value) -> Result<()> {
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

    fn fail(&mut self, node_id: &str, error: Value) -> Result<()> {
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

    /// Queues an email for each person to notify (see [`crate::notify`]:
    /// the audience, or else the people who may decide), in the same
    /// transaction as the interrupt. The row names the recipient only; their
    /// link, and what it may do, is minted at delivery.
    fn queue_notifications(
        &mut self,
        spec: &crate::definition::InterruptSpec,
        data: &Value,
        interrupt_id: &str,
        node_id: &str,
        reason: MailReason,
    ) -> Result<()> {
        let requester = self.run.requester();
        let notice = crate::notify::Notice {
            tenant: self.run.tenant.as_str(),
            kind: spec.kind,
            rules: spec.approval(),
            audience: data.get("audience"),
            requester: &requester,
        };
        let directory = load_directory(self.conn, &self.run.tenant)?;
        let told = crate::notify::recipients(&notice, &directory);
        // Only someone told can have a delegate to tell as well.
        let delegations = if told.is_empty() {
            Vec::new()
        } else {
            crate::store::delegations::live_pairs(self.conn, &self.run.tenant, self.now)?
        };
        for p in crate::notify::with_delegates(told, &delegations, &directory, &requester) {
            self.changes.push(Change::Email {
                reason,
                run_id: self.run.run_id.clone(),
                node_id: NodeId::trusted(node_id),
                interrupt_id: interrupt_id.to_string(),
                recipient: p.id.clone(),
                address: p.email.clone(),
                at: self.now,
            });
        }
        Ok(())
    }

    /// Puts writes decided before the run was loaded (a vote) ahead of this command's own.
    pub fn prepend_changes(&mut self, mut earlier: Vec<Change>) {
        earlier.append(&mut self.changes);
        self.changes = earlier;
    }

    /// Resolves a pending interrupt: records the decision, resumes the node
    /// and runs on. `failure` carries the node error when the decision fails the node.
    pub fn resolve(
        &mut self,
        interrupt: &InterruptRow,
        resolved: Value,
        resume_value: Option<Value>,
        failure: Option<Value>,
    ) -> Result<()> {
        let node_id = interrupt.node_id.as_str();
        // Only a condition reads the facts.
        let routed = self.wf.outgoing(node_id).any(|e| e.condition.is_some());
        let facts = routed
            .then(|| resolution_facts(interrupt, &resolved))
            .transpose()?;
        // The interrupt's resolution is its `interrupt.resolved` payload: written once.
        let resolution = json_text(&resolved);
        drop(resolved);
        self.changes.push(Change::Resolve {
            interrupt_id: interrupt.interrupt_id.clone(),
            row_id: interrupt.row_id,
            inbox: interrupt.inbox_group.clone().map(|group| InboxCount {
                group,
                owner_subject: interrupt.owner_subject.clone(),
            }),
            at: self.now,
            resolution: resolution.clone(),
            votes: None,
        });
        self.emit_text(EventType::InterruptResolved, Some(node_id), resolution)?;
        if let Some(rv) = &resume_value {
            self.emit_typed(
                EventType::NodeResumed,
                Some(node_id),
                &payloads::NodeResumed {
                    interrupt_id: &interrupt.interrupt_id,
                    node_id,
                    resume_value: rv,
                },
            )?;
        }
        if failure.is_none() {
            self.conversation_answered(interrupt, resume_value.as_ref())?;
        }
        if let Some(facts) = facts {
            self.facts.insert(interrupt.node_id.clone(), facts);
        }
        match failure {
            Some(error) => self.fail(node_id, error)?,
            None => {
                let outputs = self.outputs_of(interrupt, resume_value.unwrap_or(Value::Null))?;
                self.complete(node_id, outputs)?
            }
        }
        self.drain()
    }

    /// A resumed node's outputs: `{resumeValue}`; an agent decision's also
    /// carry the decision it goes on with (the agent's, confirmed, or the
    /// person's replacement).
    fn outputs_of(&self, interrupt: &InterruptRow, resume_value: Value) -> Result<Value> {
        let decision_node = self
            .wf
            .node(interrupt.node_id.as_str())
            .is_some_and(|n| matches!(n.behaviour, NodeBehaviour::Decision(_)));
        if !decision_node {
            return Ok(json!({ "resumeValue": resume_value }));
        }
        let payload = interrupt.payload()?;
        let data = &payload["data"];
        let decision = if resume_value["outcome"] == "replaced" {
            resume_value["decision"].clone()
        } else {
            data["decision"].clone()
        };
        Ok(json!({
            "decision": decision,
            "confidence": data["observed"],
            "escalated": true,
            "resumeValue": resume_value,
        }))
    }

    /// The conversation `id` as this command left it (open with its run and turns, or not).
    fn conversation(&mut self, id: &str) -> Result<Option<OpenConversation>> {
        if let Some(known) = self.conversations.get(id) {
            return Ok(known.clone());
        }
        let stored = conversations::open(self.conn, self.run.tenant.as_str(), id)?;
        self.conversations.insert(id.to_string(), stored.clone());
        Ok(stored)
    }

    /// The conversation rules of a conversation kind being raised: a start
    /// opens an id unique in the tenant; an exchange or a close needs the
    /// run's open conversation (an exchange is numbered by its turn).
    /// Returns the `conversation.opened` payload for a start.
    fn conversation_turn(
        &mut self,
        kind: InterruptKind,
        data: &mut Value,
    ) -> std::result::Result<Option<Value>, ConversationRefusal> {
        if !kind.is_conversation() {
            return Ok(None);
        }
        // A missing or non-string id is named by the payload check that follows.
        let Some(id) = data["conversationId"].as_str().map(str::to_string) else {
            return Ok(None);
        };
        let open = self.conversation(&id).map_err(ConversationRefusal::Refuse)?;
        let member = "data.conversationId".to_string();
        if kind == InterruptKind::ConversationStart {
            if open.is_some() {
                let message = format!(
                    "conversation \"{id}\" is already open in this tenant; a conversationId is unique while its conversation is open"
                );
                return Err(if self.starting {
                    ConversationRefusal::Refuse(EngineError::Conflict(message))
                } else {
                    ConversationRefusal::Fail { member, message }
                });
            }
            let tenant = self.run.tenant.as_str().to_string();
            self.changes.push(Change::Conversation(ConversationChange::Open {
                tenant,
                id: id.clone(),
                run_id: self.run.run_id.clone(),
                at: self.now,
            }));
            self.conversations.insert(
                id.clone(),
                Some(OpenConversation {
                    run_id: self.run.run_id.clone(),
                    turns: 0,
                }),
            );
            return Ok(Some(json!({ "conversationId": id })));
        }
        match open {
            Some(c) if c.run_id == self.run.run_id => {
                if kind == InterruptKind::ConversationExchange && data.get("turnIndex").is_none() {
                    data["turnIndex"] = json!(c.turns);
                }
                Ok(None)
            }
            _ => Err(ConversationRefusal::Fail {
                member,
                message: format!("no open conversation \"{id}\" in this run (a conversation.start opens it)"),
            }),
        }
    }

    /// A conversation turn was answered, or its close acknowledged.
    fn conversation_answered(
        &mut self,
        interrupt: &InterruptRow,
        resume_value: Option<&Value>,
    ) -> Result<()> {
        if !matches!(
            interrupt.kind,
            InterruptKind::ConversationExchange | InterruptKind::ConversationClose
        ) {
            // Only these move a conversation on (the payload is not read for the others).
            return Ok(());
        }
        let payload = interrupt.payload()?;
        let data = &payload["data"];
        let (Some(id), node_id) = (data["conversationId"].as_str(), interrupt.node_id.as_str()) else {
            return Ok(());
        };
        let tenant = self.run.tenant.as_str().to_string();
        match interrupt.kind {
            InterruptKind::ConversationExchange => {
                let turn = data["turnIndex"].as_i64().unwrap_or(0);
                self.emit(
                    EventType::ConversationExchanged,
                    Some(node_id),
                    json!({ "conversationId": id, "turnIndex": turn, "outcome": resume_value }),
                )?;
                self.changes.push(Change::Conversation(ConversationChange::Turn {
                    tenant,
                    id: id.to_string(),
                }));
                if let Some(Some(c)) = self.conversations.get_mut(id) {
                    c.turns += 1;
                }
            }
            InterruptKind::ConversationClose => {
                let turns = self.conversation(id)?.map_or(0, |c| c.turns);
                let mut closed = json!({ "conversationId": id, "turnCount": turns });
                if let Some(reason) = data["reason"].as_str() {
                    closed["reason"] = json!(reason);
                }
                self.emit(EventType::ConversationClosed, Some(node_id), closed)?;
                self.changes.push(Change::Conversation(ConversationChange::Close {
                    tenant,
                    id: id.to_string(),
                }));
                self.conversations.insert(id.to_string(), None);
            }
            _ => {}
        }
        Ok(())
    }

    /// The run ends: its open conversations end with it (`conversation.closed`
    /// before the run's terminal event).
    fn close_conversations(&mut self, reason: &str) -> Result<()> {
        if !self.wf.nodes.iter().any(|n| {
            n.behaviour
                .interrupt()
                .is_some_and(|spec| spec.kind == InterruptKind::ConversationStart)
        }) {
            return Ok(());
        }
        let mut ids = conversations::of_run(self.conn, &self.run.run_id)?;
        for (id, state) in &self.conversations {
            let ours = state.as_ref().is_some_and(|c| c.run_id == self.run.run_id);
            if ours && !ids.contains(id) {
                ids.push(id.clone());
            } else if state.is_none() {
                ids.retain(|i| i != id);
            }
        }
        for id in &ids {
            self.emit(
                EventType::ConversationClosed,
                None,
                json!({ "conversationId": id, "reason": reason }),
            )?;
        }
        if !ids.is_empty() {
            self.changes
                .push(Change::Conversation(ConversationChange::CloseRun {
                    run_id: self.run.run_id.clone(),
                }));
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

    fn stop_active(&mut self, reason: &str) -> Result<()> {
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

/// What edge conditions see of a decided interrupt: the `interrupt.resolved`
/// members that say what was decided, and the `outcome` (an approval's action,
/// else the resume value's declared or only outcome).
fn resolution_facts(interrupt: &InterruptRow, resolved: &Value) -> Result<Value> {
    let mut facts = Map::new();
    for k in [
        "kind",
        "decision",
        "action",
        "reason",
        "resumeValue",
        "refineFeedback",
        "editedArtifactData",
    ] {
        if let Some(v) = resolved.get(k) {
            facts.insert(k.into(), v.clone());
        }
    }
    let outcome = if interrupt.kind == InterruptKind::Approval {
        resolved.get("action").cloned()
    } else {
        let contract = crate::contract::cached(&interrupt.contract)?;
        resolved
            .get("resumeValue")
            .and_then(|rv| contract.contract().outcome_of(rv).ok().flatten())
            .map(Value::String)
    };
    if let Some(o) = outcome {
        facts.insert("outcome".into(), o);
    }
    Ok(Value::Object(facts))
}

/// The result of checking a resolve against an interrupt: what to record.
pub(crate) enum Decision {
    /// A vote to record (the changes); the gate stays open.
    Recorded(Vec<Change>),
    /// The interrupt resolves with this `interrupt.resolved` payload, after `writes` (the vote, if any).
    Resolve {
        resolved: Value,
        resume_value: Value,
        failure: Option<Value>,
        writes: Vec<Change>,
    },
}

/// Applies one resolve to a pending interrupt's rules. Validation and
/// eligibility run before anything is written.
/// `principal` is the voter's directory entry as it is now (decision time).
pub(crate) fn decide(
    run: &RunRow,
    interrupt: &InterruptRow,
    resume_value: &Value,
    actor: &Actor,
    principal: &Principal,
    delegators: impl FnOnce() -> Result<Vec<Principal>>,
    now: Millis,
) -> Result<Decision> {
    let kind = interrupt.kind;
    let subject = serde_json::to_value(actor.subject())?;
    let mut resolved = json!({
        "nodeId": interrupt.node_id,
        "interruptId": interrupt.interrupt_id,
        "kind": kind.as_str(),
        "resumeValue": resume_value,
        "resolvedBy": subject,
    });

    if kind == InterruptKind::Approval {
        // Every recorded approval carries when it was decided: the server's time unless the client said.
        let stamped;
        let resume_value = if resume_value.get("decidedAt").is_none() && resume_value.is_object() {
            let mut v = resume_value.clone();
            v["decidedAt"] = json!(crate::clock::rfc3339(now));
            stamped = v;
            resolved["resumeValue"] = stamped.clone();
            &stamped
        } else {
            resume_value
        };
        let rules = interrupt.rules.as_ref().ok_or_else(|| {
            EngineError::Storage(format!("approval {} has no rules", interrupt.interrupt_id))
        })?;
        // The whole array is written back: an interrupt loaded without it
        // must not be taken for one nobody voted on.
        let earlier = votes::parse(
            &interrupt.interrupt_id,
            interrupt.votes_json.as_deref().ok_or_else(|| {
                EngineError::Storage(format!(
                    "interrupt {} loaded without its votes",
                    interrupt.interrupt_id
                ))
            })?,
        )?;
        let overrides: Vec<String> = match interrupt.override_voters.as_deref() {
            Some(ids) => serde_json::from_str::<Option<Vec<String>>>(ids)?.unwrap_or_default(),
            None => Vec::new(),
        };
        // An override counts as one only when its holder cast it.
        let is_override = |v: &StoredVote| v.cast_by.is_none() && overrides.contains(&v.principal);
        let seat = crate::delegation::seat(
            rules,
            principal,
            &run.requesters(),
            actor.allows(crate::auth::Scope::ApprovalsRespond),
            delegators,
            |holder| {
                earlier
                    .iter()
                    .any(|b| b.counts() && b.principal == holder && b.cast_by.is_none())
            },
        )?;
        let parsed = approval::parse_resume(rules, resume_value)?;
        let contract = crate::contract::cached(&interrupt.contract)?;
        contract.validate_resume(resume_value)?;
        if parsed.action == ApprovalAction::EditAccept {
            if let Some(edited) = resume_value.get("editedArtifactData") {
                contract.validate_edited(edited)?;
            }
        }
        // What this vote replaces: the seat's counted vote (its holder's or
        // their delegate's), and anything else this person cast, so that one
        // person holds at most one counted vote however many seats they may take.
        let replaced = |b: &StoredVote| {
            b.counts() && (b.principal == seat.holder || b.caster() == principal.id.as_str())
        };
        let mut votes = earlier.clone();
        if parsed.action.is_vote() {
            for v in votes.iter_mut().filter(|v| replaced(v)) {
                v.superseded = true;
            }
        }
        votes.push(StoredVote {
            principal: seat.holder.clone(),
            cast_by: seat.cast_by.clone(),
            action: parsed.action,
            eligible_via: seat.via.clone(),
            decided_at: now,
            superseded: false,
            resume_value: resume_value.clone(),
        });
        let writes = vec![Change::Votes {
            interrupt_id: interrupt.interrupt_id.clone(),
            votes,
        }];
        if !parsed.action.is_vote() {
            return Ok(Decision::Recorded(writes));
        }
        let original = interrupt.data_member("artifactData")?;
        let original = original.as_ref();
        let mut ballots: Vec<Ballot> = earlier
            .iter()
            .filter(|b| b.counts() && !replaced(b))
            .map(|b| Ballot {
                approves: approval::approved_data(b.action, &b.resume_value, original),
                principal: b.principal.clone(),
                action: b.action,
                is_override: is_override(b),
            })
            .collect();
        ballots.push(Ballot {
            principal: seat.holder.clone(),
            action: parsed.action,
            is_override: seat.is_override,
            approves: approval::approved_data(parsed.action, resume_value, original),
        });
        resolved["action"] = json!(parsed.action);
        resolved["x-tollgate-eligibleVia"] = json!(seat.via);
        if seat.cast_by.is_some() {
            // The deciding vote was a delegate's: whose seat it took.
            resolved["x-tollgate-onBehalfOf"] = json!(seat.holder);
        }
        for k in ["refineFeedback", "editedArtifactData"] {
            if let Some(v) = resume_value.get(k) {
                resolved[k] = v.clone();
            }
        }
        return Ok(match approval::tally(rules, &ballots) {
            Verdict::Pending { .. } => Decision::Recorded(writes),
            Verdict::Granted { action, decision } => {
                resolved["action"] = json!(action);
                resolved["decision"] = json!(decision);
                Decision::Resolve {
                    writes,
                    resolved,
                    resume_value: resume_value.clone(),
                    failure: None,
                }
            }
            Verdict::Rejected { action } => {
                resolved["decision"] = json!("rejected");
                let mut failure = json!({
                    "code": "approval_rejected",
                    "message": format!("approval gate \"{}\" was rejected", interrupt.node_id),
                    "retryable": false
                });
                if action == ApprovalAction::Refine {
                    // The feedback travels with the failure, for a revision loop or a notice.
                    failure["message"] = json!(format!(
                        "approval gate \"{}\" was sent back for changes",
                        interrupt.node_id
                    ));
                    failure["details"] = json!({
                        "action": "refine",
                        "refineFeedback": resume_value.get("refineFeedback").cloned().unwrap_or(Value::Null),
                    });
                } else {
                    // A reject decided: a refine's feedback from an earlier vote is not this decision's.
                    if let Some(m) = resolved.as_object_mut() {
                        m.remove("refineFeedback");
                    }
                }
                resolved["action"] = json!(action);
                Decision::Resolve {
                    writes,
                    resolved,
                    resume_value: resume_value.clone(),
                    failure: Some(failure),
                }
            }
        });
    }

    let contract = crate::contract::cached(&interrupt.contract)?;
    contract.validate_resume(resume_value)?;
    let outcome = contract.contract().outcome_of(resume_value)?;
    let mut failure = None;
    match kind {
        InterruptKind::LowConfidence
            if outcome.as_deref() == Some("replaced")
                && resume_value.get("decision").is_none_or(Value::is_null) =>
        {
            return Err(EngineError::validation(
                "resumeValue.decision",
                "resumeValue.decision is required when the outcome is replaced (the decision that replaces the agent's)",
            ));
        }
        InterruptKind::ExternalEvent => {
            if let Some(Value::Object(corr)) = interrupt.data_member("correlation")? {
                for (k, expected) in &corr {
                    if resume_value.get(k) != Some(expected) {
                        return Err(EngineError::Validation {
                            message: format!("resumeValue.{k} does not match the interrupt's correlation (expected {expected})"),
                            field: Some(format!("resumeValue.{k}")),
                            details: None,
                        });
                    }
                }
            }
        }
        InterruptKind::Clarification => {
            let answers = match resume_value.get("answers") {
                Some(a @ Value::Object(_)) => a,
                _ => resume_value,
            };
            let questions = match interrupt.data_member("questions")? {
                Some(Value::Array(questions)) => questions,
                _ => Vec::new(),
            };
            for q in &questions {
                let qid = q["id"].as_str().unwrap_or_default();
                let field = format!("resumeValue.answers.{qid}");
                match answers.get(qid) {
                    None | Some(Value::Null) => {
                        return Err(EngineError::validation(
                            field,
                            format!("question \"{qid}\" needs an answer"),
                        ))
                    }
                    Some(answer) => {
                        if let Some(schema) = q.get("schema") {
                            let v = crate::contract::build_validator(schema)
                                .map_err(|e| EngineError::Internal(format!("question schema: {e}")))?;
                            crate::contract::validate_with(&v, answer, &field)?;
                        }
                    }
                }
            }
        }
        InterruptKind::Credential if resume_value["outcome"] == "declined" => {
            failure = Some(json!({
                "code": "connector_auth_declined",
                "message": "the credential request was declined",
                "retryable": false
            }));
        }
        _ => {}
    }
    Ok(Decision::Resolve {
        resolved,
        resume_value: resume_value.clone(),
        failure,
        writes: Vec::new(),
    })
}

/// The `interrupt.resolved` a passed deadline records: always a rejection for
/// approvals, whatever `onTimeout` says.
pub(crate) fn timeout_resolution(interrupt: &InterruptRow) -> (Value, Value) {
    let kind = interrupt.kind;
    let mut resolved = json!({
        "nodeId": interrupt.node_id,
        "interruptId": interrupt.interrupt_id,
        "kind": kind.as_str(),
        "reason": "timeout",
    });
    let failure = if kind == InterruptKind::Approval {
        resolved["action"] = json!("timeout");
        resolved["decision"] = json!("rejected");
        if interrupt
            .rules
            .as_ref()
            .is_some_and(|r| r.on_timeout == OnTimeout::Escalate)
        {
            resolved["x-tollgate-escalated"] = json!(true);
        }
        json!({"code": "approval_rejected", "message": format!("approval gate \"{}\" timed out", interrupt.node_id), "retryable": false})
    } else {
        json!({"code": "interrupt_timeout", "message": format!("interrupt on \"{}\" timed out", interrupt.node_id), "retryable": false})
    };
    (resolved, failure)
}

/// The time `ms` after `now`: far waits end at the end of time, never
/// wrap into the past (a definition stored before `MAX_WAIT_MS` may hold one).
fn after(now: i64, ms: u64) -> i64 {
    now.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    //! The per-kind resolve rules on loaded rows: no database.
    use super::*;
    use crate::auth::Scope;
    use tollgate_wire::InterruptStatus;

    const RUN: &str = "acme/run1";

    fn run_row() -> RunRow {
        RunRow {
            status: RunStatus::WaitingApproval,
            owner: json!({"tenant": "acme", "subject": {"subjectId": "owner"}}),
            current_node_id: Some(NodeId::trusted("gate")),
            next_sequence: 5,
            ..RunRow::sample(RUN)
        }
    }

    #[test]
    fn far_waits_end_at_the_end_of_time() {
        assert_eq!(after(1_000, 5), 1_005);
        assert_eq!(after(1_000, i64::MAX as u64), i64::MAX);
        assert_eq!(after(1_000, u64::MAX), i64::MAX);
    }

    /// The interrupt row `raise` stores for `node` of a one-node workflow,
    /// with earlier `votes`: each `[seat, action, superseded, is_override,
    /// resume_value, cast_by?]` (an override as the directory says now).
    fn interrupt_row(node: Value, votes: Value) -> InterruptRow {
        let mut stored = Vec::new();
        let mut overrides = Vec::new();
        for v in votes.as_array().expect("an array of votes") {
            stored.push(json!([v[0], v[1], "approvers", 0, v[2], v[4], v.get(5)]));
            if v[3] == 1 {
                overrides.push(v[0].clone());
            }
        }
        let wf = crate::definition::compile(json!({"id": "w", "nodes": [node]})).unwrap();
        let NodeBehaviour::Interrupt(spec) = &wf.nodes[0].behaviour else {
            panic!("not an interrupt node")
        };
        InterruptRow {
            interrupt_id: "acme/i1".into(),
            run_id: RunId::trusted(RUN),
            node_id: NodeId::trusted(&wf.nodes[0].id),
            key: "k".into(),
            visit: 0,
            kind: spec.kind,
            status: InterruptStatus::Pending,
            payload: json!({"kind": spec.kind.as_str(), "data": spec.data}).to_string(),
            contract: spec.contract.text().to_string(),
            request: Some("{}".into()),
            rules: spec.approval().cloned(),
            workflow_id: "w".into(),
            title: "t".into(),
            owner_subject: "owner".into(),
            created_at: 0,
            deadline_at: None,
            resolved_at: None,
            resolution: None,
            inbox_group: None,
            votes_json: Some(json!(stored).to_string()),
            override_voters: Some(json!(overrides).to_string()),
            row_id: None,
        }
    }

    fn person(id: &str, groups: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: "acme".into(),
            name: id.into(),
            email: None,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            roles: vec![],
            is_override: false,
        }
    }

    fn vote(p: &Principal, interrupt: &InterruptRow, rv: Value) -> Result<Decision> {
        let actor = Actor::api_key(p.clone(), vec![Scope::ApprovalsRespond]);
        decide(&run_row(), interrupt, &rv, &actor, p, || Ok(vec![]), 10)
    }

    /// `p` votes with `delegators` having handed them their decisions.
    fn vote_for(
        p: &Principal,
        delegators: &[Principal],
        interrupt: &InterruptRow,
        rv: Value,
    ) -> Result<Decision> {
        let actor = Actor::api_key(p.clone(), vec![Scope::ApprovalsRespond]);
        decide(
            &run_row(),
            interrupt,
            &rv,
            &actor,
            p,
            || Ok(delegators.to_vec()),
            10,
        )
    }

    /// The earlier votes a decision marks replaced: "seat" or "seat by delegate".
    fn replaced(changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .flat_map(|c| match c {
                Change::Votes { votes, .. } => votes[..votes.len() - 1]
                    .iter()
                    .filter(|v| v.superseded)
                    .map(|v| match &v.cast_by {
                        Some(by) => format!("{} by {by}", v.principal),
                        None => v.principal.clone(),
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    fn written_votes(d: &Decision) -> Vec<(String, Option<String>)> {
        let writes = match d {
            Decision::Recorded(w) => w,
            Decision::Resolve { writes, .. } => writes,
        };
        writes
            .iter()
            .filter_map(|c| match c {
                Change::Votes { votes, .. } => votes.last().map(|v| (v.principal.clone(), v.cast_by.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn edited_data_is_checked_against_the_declared_request_schema() {
        let node = gate(json!({
            "title": "Q", "actions": ["accept", "edit-accept"], "approverGroupRefs": ["finance"],
            "requestSchema": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer", "maximum": 500}}}
        }));
        let row = interrupt_row(node, json!([]));
        let ann = person("ann", &["finance"]);
        let edit = |data: Value| {
            vote(
                &ann,
                &row,
                json!({"action": "edit-accept", "editedArtifactData": data}),
            )
        };
        for (data, field) in [
            (json!({"amount": "lots"}), "resumeValue.editedArtifactData.amount"),
            (json!({"amount": 900}), "resumeValue.editedArtifactData.amount"),
            (json!({}), "resumeValue.editedArtifactData.amount"),
        ] {
            match edit(data.clone()) {
                Err(EngineError::Validation { field: Some(f), .. }) => assert_eq!(f, field, "{data}"),
                Err(other) => panic!("{data}: {other}"),
                Ok(_) => panic!("{data}: accepted"),
            }
        }
        assert!(matches!(
            edit(json!({"amount": 300})),
            Ok(Decision::Resolve { .. })
        ));
        // Without a declared request schema the edited data is not judged by shape.
        let open = interrupt_row(
            gate(
                json!({"title": "Q", "actions": ["accept", "edit-accept"], "approverGroupRefs": ["finance"]}),
            ),
            json!([]),
        );
        let free = vote(
            &ann,
            &open,
            json!({"action": "edit-accept", "editedArtifactData": {"anything": [1]}}),
        );
        assert!(matches!(free, Ok(Decision::Resolve { .. })));
    }

    #[test]
    fn a_delegate_fills_the_delegators_seat_once_and_quorum_counts_seats() {
        let node = gate(
            json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
        );
        let (ann, bob, dan) = (
            person("ann", &["finance"]),
            person("bob", &["finance"]),
            person("dan", &[]),
        );
        // Dan, out of the finance group, votes in Ann's seat.
        let first = vote_for(
            &dan,
            std::slice::from_ref(&ann),
            &interrupt_row(node.clone(), json!([])),
            json!({"action": "accept"}),
        )
        .unwrap();
        assert!(matches!(first, Decision::Recorded(_)), "one seat of two");
        assert_eq!(
            written_votes(&first),
            [("ann".to_string(), Some("dan".to_string()))]
        );
        // Ann then votes herself: the same seat, so it replaces Dan's; still one of two.
        let after_dan = interrupt_row(
            node.clone(),
            json!([["ann", "accept", 0, 0, {"action": "accept"}, "dan"]]),
        );
        match vote(&ann, &after_dan, json!({"action": "accept"})).unwrap() {
            Decision::Recorded(changes) => assert_eq!(replaced(&changes), ["ann by dan"]),
            Decision::Resolve { .. } => panic!("Ann and her delegate are one seat"),
        }
        // Bob is a second seat: granted, and the event names whose seat Dan took.
        match vote(&bob, &after_dan, json!({"action": "accept"})).unwrap() {
            Decision::Resolve { resolved, .. } => {
                assert_eq!(resolved["decision"], "granted");
                assert!(
                    resolved.get("x-tollgate-onBehalfOf").is_none(),
                    "Bob voted for himself"
                );
            }
            Decision::Recorded(_) => panic!("two seats grant"),
        }
        // Dan holding Bob's seat too still casts one vote: his second replaces his first.
        let both = vote_for(
            &dan,
            &[bob.clone(), ann.clone()],
            &after_dan,
            json!({"action": "accept"}),
        )
        .unwrap();
        match &both {
            // Dan's vote in Ann's seat is replaced by his vote in Bob's.
            Decision::Recorded(changes) => {
                assert_eq!(replaced(changes), ["ann by dan"]);
                assert_eq!(
                    written_votes(&both),
                    [("bob".to_string(), Some("dan".to_string()))]
                );
            }
            Decision::Resolve { .. } => panic!("one person never fills two seats"),
        }
        // A delegate's deciding vote is marked with the seat it took.
        let bob_voted = interrupt_row(node, json!([["bob", "accept", 0, 0, {"action": "accept"}]]));
        match vote_for(&dan, &[ann], &bob_voted, json!({"action": "accept"})).unwrap() {
            Decision::Resolve { resolved, .. } => {
                assert_eq!(resolved["x-tollgate-onBehalfOf"], "ann");
                assert_eq!(resolved["resolvedBy"]["subjectId"], "dan");
            }
            Decision::Recorded(_) => panic!("Ann's seat (by Dan) and Bob's grant"),
        }
    }

    fn gate(config: Value) -> Value {
        json!({"id": "gate", "typeId": "core.approvalGate", "config": config})
    }

    #[test]
    fn a_quorum_records_votes_until_enough_distinct_people_agree() {
        let node = gate(
            json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
        );
        let ann = person("ann", &["finance"]);
        let first = interrupt_row(node.clone(), json!([]));
        match vote(&ann, &first, json!({"action": "accept"})).unwrap() {
            Decision::Recorded(changes) => {
                assert_eq!(changes::votes_of(&changes), [("ann", ApprovalAction::Accept)]);
                assert_eq!(changes.len(), 1, "nothing to replace: {changes:?}");
            }
            Decision::Resolve { .. } => panic!("one of two approvals does not grant"),
        }
        // Ann again: her vote replaces her earlier one, still one of two.
        let again = interrupt_row(
            node.clone(),
            json!([["ann", "accept", 0, 0, {"action": "accept"}]]),
        );
        match vote(&ann, &again, json!({"action": "accept"})).unwrap() {
            Decision::Recorded(changes) => {
                assert_eq!(replaced(&changes), ["ann"]);
                assert_eq!(changes::votes_of(&changes), [("ann", ApprovalAction::Accept)]);
                assert!(
                    matches!(&changes[0], Change::Votes { votes, .. } if votes.len() == 2 && !votes[1].superseded),
                    "appended after the vote it replaces"
                );
            }
            Decision::Resolve { .. } => panic!("one person is one vote"),
        }
        // Bob is the second person: granted.
        let bob = person("bob", &["finance"]);
        match vote(&bob, &again, json!({"action": "accept"})).unwrap() {
            Decision::Resolve {
                resolved, failure, ..
            } => {
                assert_eq!(resolved["decision"], "granted");
                assert!(failure.is_none());
            }
            Decision::Recorded(_) => panic!("two distinct approvals grant"),
        }
    }

    #[test]
    fn eligibility_self_approval_and_the_resume_shape_are_checked_before_anything_is_recorded() {
        let node = gate(
            json!({"title": "Q", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}),
        );
        let row = interrupt_row(node, json!([]));
        let outsider = person("cat", &[]);
        assert!(matches!(
            vote(&outsider, &row, json!({"action": "accept"})),
            Err(EngineError::Forbidden(_))
        ));
        let owner = person("owner", &["finance"]);
        assert!(
            matches!(
                vote(&owner, &row, json!({"action": "accept"})),
                Err(EngineError::Forbidden(_))
            ),
            "no self-approval"
        );
        let ann = person("ann", &["finance"]);
        match vote(&ann, &row, json!({"action": "maybe"})) {
            Err(EngineError::Validation { field, .. }) => {
                assert!(field.is_some_and(|f| f.contains("action")))
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_single_veto_rejects_and_fails_the_gate() {
        let node = gate(json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2}));
        let row = interrupt_row(node, json!([["ann", "accept", 0, 0, {"action": "accept"}]]));
        match vote(&person("bob", &[]), &row, json!({"action": "reject"})).unwrap() {
            Decision::Resolve {
                resolved, failure, ..
            } => {
                assert_eq!(resolved["decision"], "rejected");
                assert_eq!(failure.unwrap()["code"], "approval_rejected");
            }
            Decision::Recorded(_) => panic!("a reject under single-veto decides"),
        }
    }

    #[test]
    fn an_external_event_must_match_its_correlation() {
        let node = json!({"id": "wait", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "paid", "correlation": {"orderId": "o-1"}}}});
        let row = interrupt_row(node, json!([]));
        let ann = person("ann", &[]);
        match vote(&ann, &row, json!({"orderId": "o-2"})) {
            Err(EngineError::Validation { field, .. }) => {
                assert_eq!(field.as_deref(), Some("resumeValue.orderId"))
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        assert!(matches!(
            vote(&ann, &row, json!({"orderId": "o-1"})).unwrap(),
            Decision::Resolve { .. }
        ));
    }
}
