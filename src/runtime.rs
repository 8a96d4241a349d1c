//! Executes runs: fires nodes, raises and resolves interrupts, routes over
//! edges by `triggerRule`, and ends runs. Every step appends v2 events and
//! updates the projections on the same connection, inside the caller's
//! transaction, so a command is one atomic step.

use crate::approval::{self, ApprovalAction, Ballot, OnTimeout, Verdict};
use crate::args;
use crate::clock::Millis;
use crate::contract::Contract;
use crate::definition::{resolve_inputs, NodeBehaviour, Workflow};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::ids;
use crate::interrupt::{reentry_key, InterruptKind};
use crate::routing::Trigger;
use crate::store::{fetch_rows, Dialect, Row, Val, WriteConn};
use serde_json::{json, Map, Value};
use sqlx::AnyConnection;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::LazyLock;
use tollgate_wire::{EventType, InterruptStatus, NodeId, NodeStatus, RunId, RunStatus, TenantId};

/// Default bound on how often one node may run in one run (a runaway loop guard).
pub const DEFAULT_RECURSION_LIMIT: i64 = 25;

/// A run as stored, each column decoded once: statuses as enums, JSON
/// columns as values (a column that is not what it should be is an error,
/// never a silent default).
#[derive(Debug, Clone)]
pub(crate) struct RunRow {
    pub run_id: RunId,
    pub tenant: TenantId,
    pub workflow_id: String,
    pub workflow_digest: String,
    pub status: RunStatus,
    /// `RunSnapshot.owner`.
    pub owner: Value,
    pub current_node_id: Option<NodeId>,
    pub error: Option<Value>,
    pub inputs: Value,
    pub configurable: Option<Value>,
    pub tags: Option<Value>,
    pub metadata: Option<Value>,
    pub callback_url: Option<String>,
    pub next_sequence: i64,
    pub created_at: Millis,
    pub completed_at: Option<Millis>,
    /// The run's node states as JSON, when loaded together with the run.
    pub nodes_json: Option<String>,
}

pub(crate) const RUN_COLUMNS: &str = "run_id, tenant, workflow_id, workflow_digest, status, owner, current_node_id, error, inputs, configurable, tags, metadata, callback_url, next_sequence, created_at, completed_at";

impl RunRow {
    /// Decodes a row selected with [`RUN_COLUMNS`] (and optionally `nodes_json`), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<RunRow> {
        Ok(RunRow {
            run_id: row.get(0)?,
            tenant: row.get(1)?,
            workflow_id: row.get(2)?,
            workflow_digest: row.get(3)?,
            status: row.get(4)?,
            owner: row.json(5)?,
            current_node_id: row.get(6)?,
            error: row.opt_json(7)?,
            inputs: row.json(8)?,
            configurable: row.opt_json(9)?,
            tags: row.opt_json(10)?,
            metadata: row.opt_json(11)?,
            callback_url: row.get(12)?,
            next_sequence: row.get(13)?,
            created_at: row.get(14)?,
            completed_at: row.get(15)?,
            nodes_json: if row.has(16) { row.get(16)? } else { None },
        })
    }

    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }

    /// The subject id of the run's owner (`owner.subject.subjectId`).
    pub fn owner_subject_id(&self) -> String {
        self.owner["subject"]["subjectId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn recursion_limit(&self) -> i64 {
        self.configurable
            .as_ref()
            .and_then(|c| c["run"]["recursionLimit"].as_i64())
            .filter(|&n| n > 0)
            .unwrap_or(DEFAULT_RECURSION_LIMIT)
    }
}

#[derive(Debug, Clone)]
struct NodeRow {
    node_id: NodeId,
    status: NodeStatus,
    visits: i64,
    output: Option<String>,
    pending_in: String,
    due_at: Option<Millis>,
    waiting: Option<RunStatus>,
}

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
    dirty: bool,
    stored: bool,
}

impl NodeState {
    fn is_active(&self) -> bool {
        self.status.is_active()
    }
}

/// An interrupt as stored, decoded once (see [`RunRow`]).
#[derive(Debug, Clone)]
#[allow(dead_code)] // every column is selected; not all are read yet
pub(crate) struct InterruptRow {
    pub interrupt_id: String,
    pub run_id: RunId,
    pub node_id: NodeId,
    pub key: String,
    pub visit: i64,
    pub kind: InterruptKind,
    pub status: InterruptStatus,
    /// The `interrupt.requested` payload (`kind`, `key`, `data`, `resumeSchema`, …).
    pub payload: Value,
    /// The contract's JSON text: compiled (and cached by this text) where it is used.
    pub contract: String,
    pub request: Option<Value>,
    /// Approval gates' rules; `None` for other kinds.
    pub rules: Option<approval::ApprovalRules>,
    pub workflow_id: String,
    pub title: String,
    pub owner_subject: String,
    pub created_at: Millis,
    pub deadline_at: Option<Millis>,
    pub resolved_at: Option<Millis>,
    pub resolution: Option<Value>,
    /// Votes as JSON `[principal, action, superseded, is_override, resume_value]`, when loaded with the interrupt.
    pub votes_json: Option<String>,
}

pub(crate) const INTERRUPT_COLUMNS: &str = "interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at, deadline_at, resolved_at, resolution";

impl InterruptRow {
    /// Decodes a row selected with [`INTERRUPT_COLUMNS`] (and optionally `votes_json`), from either pool.
    pub(crate) fn from_row(row: &Row) -> Result<InterruptRow> {
        let kind: InterruptKind = row.get(5)?;
        let rules = match row.opt_json(10)? {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                serde_json::from_value(v)
                    .map_err(|e| EngineError::Storage(format!("interrupts.eligibility: {e}")))?,
            ),
        };
        Ok(InterruptRow {
            interrupt_id: row.get(0)?,
            run_id: row.get(1)?,
            node_id: row.get(2)?,
            key: row.get(3)?,
            visit: row.get(4)?,
            kind,
            status: row.get(6)?,
            payload: row.json(7)?,
            contract: row.get(8)?,
            request: row.opt_json(9)?,
            rules,
            workflow_id: row.get(11)?,
            title: row.get(12)?,
            owner_subject: row.get(13)?,
            created_at: row.get(14)?,
            deadline_at: row.get(15)?,
            resolved_at: row.get(16)?,
            resolution: row.opt_json(17)?,
            votes_json: if row.has(18) { row.get(18)? } else { None },
        })
    }

    /// The stored contract; text that is not one is an error.
    pub fn contract_json(&self) -> Result<Contract> {
        serde_json::from_str(&self.contract)
            .map_err(|e| EngineError::Storage(format!("interrupts.contract of {}: {e}", self.interrupt_id)))
    }
}

pub(crate) async fn load_run(conn: &mut AnyConnection, run_id: &str) -> Result<Option<RunRow>> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE run_id = ?");
    let sql = crate::store::any_dialect(conn).placeholders(&sql);
    Ok(fetch_rows(sqlx::query(&sql).bind(run_id), conn, RunRow::from_row)
        .await?
        .pop())
}

// Statements the writer runs on every command, built once (they splice in
// the column lists) so the hot path neither formats nor allocates SQL text.
// Each loads related rows as one JSON column, in one round trip.
static LOAD_RUN_FOR_UPDATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, (SELECT json_group_array(json_array(node_id, status, visits, output, pending_in, due_at, waiting)) \
         FROM node_states WHERE node_states.run_id = runs.run_id) AS nodes_json FROM runs WHERE run_id = ?"
    )
});
/// The run row stays locked until the command commits: commands on one run
/// from any instance take turns, and each sees what the previous one wrote.
static LOAD_RUN_FOR_UPDATE_PG: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {RUN_COLUMNS}, (SELECT json_agg(json_build_array(node_id, status, visits, output, pending_in, due_at, waiting))::text \
         FROM node_states WHERE node_states.run_id = runs.run_id) AS nodes_json FROM runs WHERE run_id = $1 FOR UPDATE"
    )
});
/// The newest interrupt of a node with its votes as JSON (`votes_json`).
static LATEST_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, (SELECT json_group_array(json_array(principal, action, superseded, is_override, json(resume_value))) FROM \
           (SELECT v.principal, v.action, v.superseded, COALESCE(p.is_override, 0) AS is_override, v.resume_value FROM votes v \
            LEFT JOIN principals p ON p.id = v.principal WHERE v.interrupt_id = interrupts.interrupt_id ORDER BY v.seq)) AS votes_json \
         FROM interrupts WHERE run_id = ? AND node_id = ? ORDER BY visit DESC LIMIT 1"
    )
});
static LATEST_INTERRUPT_PG: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {INTERRUPT_COLUMNS}, (SELECT json_agg(json_build_array(v.principal, v.action, v.superseded, COALESCE(p.is_override, 0), v.resume_value::json) ORDER BY v.seq)::text \
           FROM votes v LEFT JOIN principals p ON p.id = v.principal WHERE v.interrupt_id = interrupts.interrupt_id) AS votes_json \
         FROM interrupts WHERE run_id = $1 AND node_id = $2 ORDER BY visit DESC LIMIT 1"
    )
});
fn latest_interrupt_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => &LATEST_INTERRUPT,
        Dialect::Postgres => &LATEST_INTERRUPT_PG,
    }
}
static PENDING_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ? AND status = 'pending'")
});
static INSERT_RUN: LazyLock<String> = LazyLock::new(|| {
    format!("INSERT INTO runs ({RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
});
static INSERT_INTERRUPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO interrupts ({INTERRUPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)"
    )
});

/// Most rows one multi-row INSERT carries (7 parameters each, far below
/// SQLite's and PostgreSQL's parameter limits).
const MAX_ROWS: usize = 64;

/// `INSERT INTO events … VALUES (…), (…)` for 0..=MAX_ROWS rows, built once.
static INSERT_EVENTS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let row = "(?, ?, ?, ?, ?, ?, ?)";
    (0..=MAX_ROWS)
        .map(|n| {
            format!(
                "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, timestamp) VALUES {}",
                vec![row; n].join(", ")
            )
        })
        .collect()
});

/// The run with its node states, in one statement (the writer's hot path),
/// locked for this command where the back end has row locks.
pub(crate) fn load_run_for_update(conn: &WriteConn, run_id: &str) -> Result<Option<RunRow>> {
    let sql: &str = match conn.dialect() {
        Dialect::Sqlite => &LOAD_RUN_FOR_UPDATE,
        Dialect::Postgres => &LOAD_RUN_FOR_UPDATE_PG,
    };
    conn.query_opt(sql, args![run_id], RunRow::from_row)
}

pub(crate) async fn latest_interrupt(
    conn: &mut AnyConnection,
    run_id: &str,
    node_id: &str,
) -> Result<Option<InterruptRow>> {
    let sql = latest_interrupt_sql(crate::store::any_dialect(conn));
    Ok(fetch_rows(
        sqlx::query(sql).bind(run_id).bind(node_id),
        conn,
        InterruptRow::from_row,
    )
    .await?
    .pop())
}

/// [`latest_interrupt`] on the writer, inside a command (after the run is locked).
pub(crate) fn latest_interrupt_for_update(
    conn: &WriteConn,
    run_id: &str,
    node_id: &str,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(
        latest_interrupt_sql(conn.dialect()),
        args![run_id, node_id],
        InterruptRow::from_row,
    )
}

/// A pending interrupt by id, on the writer.
pub(crate) fn pending_interrupt_for_update(
    conn: &WriteConn,
    interrupt_id: &str,
) -> Result<Option<InterruptRow>> {
    conn.query_opt(&PENDING_INTERRUPT, args![interrupt_id], InterruptRow::from_row)
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
}

/// An event this command appends, serialised once.
struct PendingEvent {
    sequence: i64,
    event_type: EventType,
    node_id: Option<NodeId>,
    payload: String,
}

/// One command's view of one run.
pub(crate) struct Exec<'a> {
    conn: &'a WriteConn<'a>,
    wf: &'a Workflow,
    pub run: RunRow,
    nodes: HashMap<NodeId, NodeState>,
    now: Millis,
    queue: VecDeque<NodeId>,
    unhandled: Option<(NodeId, Value)>,
    recursion_limit: i64,
    /// Events appended by this command, written in one statement by `finish`.
    pending_events: Vec<PendingEvent>,
    /// Other writes of this command, sent with the events by `finish`.
    writes: Batch,
}

impl<'a> Exec<'a> {
    /// Loads a run's scheduler state.
    pub fn load(conn: &'a WriteConn<'a>, wf: &'a Workflow, run: RunRow, now: Millis) -> Result<Exec<'a>> {
        let rows = match run.nodes_json.as_deref() {
            Some(text) => parse_node_rows(text)?,
            None => conn.query_map(
                "SELECT node_id, status, visits, output, pending_in, due_at, waiting FROM node_states WHERE run_id = ?",
                args![run.run_id],
                |r| {
                    Ok(NodeRow {
                        node_id: r.get(0)?,
                        status: r.get(1)?,
                        visits: r.get(2)?,
                        output: r.get(3)?,
                        pending_in: r.get(4)?,
                        due_at: r.get(5)?,
                        waiting: r.get(6)?,
                    })
                },
            )?,
        };
        let mut nodes = HashMap::with_capacity(wf.nodes.len());
        for r in rows {
            nodes.insert(
                r.node_id,
                NodeState {
                    status: r.status,
                    visits: r.visits,
                    output: r.output.map(|o| serde_json::from_str(&o)).transpose()?,
                    pending_in: serde_json::from_str(&r.pending_in)?,
                    due_at: r.due_at,
                    waiting: r.waiting,
                    dirty: false,
                    stored: true,
                },
            );
        }
        let recursion_limit = run.recursion_limit();
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
            writes: Batch::default(),
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
            nodes_json: None,
        };
        conn.execute(
            &INSERT_RUN,
            args![
                run.run_id,
                run.tenant,
                run.workflow_id,
                run.workflow_digest,
                run.status,
                run.owner.to_string(),
                run.current_node_id,
                run.error.as_ref().map(Value::to_string),
                run.inputs.to_string(),
                run.configurable.as_ref().map(Value::to_string),
                run.tags.as_ref().map(Value::to_string),
                run.metadata.as_ref().map(Value::to_string),
                run.callback_url,
                run.next_sequence,
                run.created_at,
                run.completed_at,
            ],
        )?;
        let recursion_limit = run.recursion_limit();
        let mut exec = Exec {
            conn,
            wf,
            run,
            nodes: HashMap::new(),
            now,
            queue: VecDeque::new(),
            unhandled: None,
            recursion_limit,
            pending_events: Vec::new(),
            writes: Batch::default(),
        };
        let started = json!({ "workflowId": wf.id, "inputs": exec.run.inputs, "owner": exec.run.owner, "transport": "rest" });
        exec.emit(EventType::RunStarted, None, started)?;
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
        let sequence = self.run.next_sequence;
        self.run.next_sequence += 1;
        self.pending_events.push(PendingEvent {
            sequence,
            event_type,
            node_id: node_id.map(NodeId::trusted),
            payload: payload.to_string(),
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
        self.emit(
            EventType::NodeStarted,
            Some(node_id),
            json!({ "nodeId": node_id, "typeId": node.type_id, "attempt": 0 }),
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
                let bound = resolve_inputs(wf, node, &self.run.inputs);
                let delay = delay_ms.or_else(|| bound.get("delayMs").and_then(Value::as_u64));
                match delay {
                    Some(0) => self.complete(node_id, json!({ "delayedMs": 0 })),
                    Some(ms) => {
                        let due = self.now + ms as i64;
                        let st = self.state_mut(node_id);
                        st.status = NodeStatus::Waiting;
                        st.due_at = Some(due);
                        Ok(())
                    }
                    None => {
                        self.fail(
                            node_id,
                            json!({"code": "validation_error", "message": format!("node \"{node_id}\": delayMs is not a non-negative integer"), "retryable": false}),
                        )
                    }
                }
            }
            NodeBehaviour::Interrupt(spec) => self.raise(node_id, visits - 1, spec),
        }
    }

    fn raise(&mut self, node_id: &str, visit: i64, spec: &crate::definition::InterruptSpec) -> Result<()> {
        let wf = self.wf;
        let node = wf.node(node_id).expect("checked by fire");
        let bound = resolve_inputs(wf, node, &self.run.inputs);
        let mut data = spec.data.clone();
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
        let key = reentry_key(&self.run.run_id, node_id, visit);
        let interrupt_id = ids::new_tenant_bound(&self.run.tenant);
        let mut payload = json!({
            "kind": spec.kind.as_str(),
            "key": key,
            "data": data,
            "resumeSchema": spec.contract.contract.resume_schema,
        });
        if let Some(t) = spec.timeout_ms {
            payload["timeoutMs"] = json!(t);
        }
        let title = data
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| data["questions"][0]["question"].as_str().map(str::to_string))
            .unwrap_or_else(|| node.name.clone());
        let rules = spec
            .approval
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?
            .unwrap_or_else(|| "null".into());
        let contract_text = serde_json::to_string(&spec.contract.contract)?;
        let owner_subject = self.run.owner_subject_id();
        let deadline = spec.timeout_ms.map(|t| self.now + t as i64);
        self.writes
            .sql(&INSERT_INTERRUPT)
            .text(&interrupt_id)
            .text(&self.run.run_id)
            .text(node_id)
            .text(&key)
            .int(visit)
            .text(spec.kind.as_str())
            .text(payload.to_string())
            .text(contract_text)
            .text(request.to_string())
            .text(rules)
            .text(&wf.id)
            .text(&title)
            .text(owner_subject)
            .int(self.now)
            .opt_int(deadline);
        self.queue_notifications(spec, &data, &interrupt_id, node_id, "requested")?;
        self.emit(EventType::InterruptRequested, Some(node_id), payload)?;
        self.emit(
            EventType::NodeSuspended,
            Some(node_id),
            json!({ "nodeId": node_id, "interruptId": interrupt_id, "kind": spec.kind.as_str(), "key": key }),
        )?;
        let st = self.state_mut(node_id);
        st.status = NodeStatus::Suspended;
        st.waiting = Some(spec.kind.waiting_status());
        Ok(())
    }

    fn complete(&mut self, node_id: &str, outputs: Value) -> Result<()> {
        {
            let st = self.state_mut(node_id);
            st.status = NodeStatus::Completed;
            st.output = Some(outputs.clone());
            st.due_at = None;
            st.waiting = None;
        }
        self.emit(
            EventType::NodeCompleted,
            Some(node_id),
            json!({ "nodeId": node_id, "outputs": outputs }),
        )?;
        self.propagate(node_id)
    }

    fn fail(&mut self, node_id: &str, error: Value) -> Result<()> {
        {
            let st = self.state_mut(node_id);
            st.status = NodeStatus::Failed;
            st.due_at = None;
            st.waiting = None;
        }
        self.emit(
            EventType::NodeFailed,
            Some(node_id),
            json!({ "nodeId": node_id, "error": error, "attempts": 1 }),
        )?;
        let handled = self.wf.outgoing(node_id).any(|e| e.rule.admits_failure());
        if handled {
            self.propagate(node_id)
        } else {
            if self.unhandled.is_none() {
                self.unhandled = Some((NodeId::trusted(node_id), error));
            }
            Ok(())
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
        let targets: Vec<(String, String)> = wf
            .outgoing(node_id)
            .map(|e| (e.id.clone(), e.target.clone()))
            .collect();
        for (edge_id, target) in &targets {
            self.state_mut(target).pending_in.insert(edge_id.clone(), status);
        }
        let mut seen = Vec::new();
        for (_, target) in targets {
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

    /// Queues an email for each person to notify (audience, or the eligibility
    /// refs), in the same transaction as the interrupt.
    fn queue_notifications(
        &mut self,
        spec: &crate::definition::InterruptSpec,
        data: &Value,
        interrupt_id: &str,
        node_id: &str,
        reason: &str,
    ) -> Result<()> {
        let audience = data.get("audience");
        let has_refs = spec.approval.as_ref().is_some_and(|r| {
            !(r.approvers_list.is_empty()
                && r.approver_group_refs.is_empty()
                && r.approver_role_refs.is_empty())
        });
        if !has_refs && audience.is_none() {
            return Ok(());
        }
        let directory = load_directory(self.conn, &self.run.tenant)?;
        for p in crate::notify::recipients(spec.approval.as_ref(), audience, &directory) {
            self.writes
                .sql("INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at) VALUES ('email', ?, ?, ?, ?, ?, ?, 'pending', ?, ?)")
                .text(reason)
                .text(&self.run.run_id)
                .text(node_id)
                .text(interrupt_id)
                .text(&p.id)
                .opt_text(p.email.clone())
                .int(self.now)
                .int(self.now);
        }
        Ok(())
    }

    /// Adds writes prepared before the run was loaded (a vote) to this command's batch.
    pub fn prepend_writes(&mut self, mut writes: Batch) {
        writes.append(std::mem::take(&mut self.writes));
        self.writes = writes;
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
        self.writes
            .sql("UPDATE interrupts SET status = 'resolved', resolved_at = ?, resolution = ? WHERE interrupt_id = ? AND status = 'pending'")
            .int(self.now)
            .text(resolved.to_string())
            .text(&interrupt.interrupt_id);
        self.emit(EventType::InterruptResolved, Some(node_id), resolved)?;
        if let Some(rv) = &resume_value {
            self.emit(
                EventType::NodeResumed,
                Some(node_id),
                json!({ "nodeId": node_id, "interruptId": interrupt.interrupt_id, "resumeValue": rv }),
            )?;
        }
        match failure {
            Some(error) => self.fail(node_id, error)?,
            None => {
                let outputs = json!({ "resumeValue": resume_value.unwrap_or(Value::Null) });
                self.complete(node_id, outputs)?
            }
        }
        self.drain()
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
        self.writes
            .sql("UPDATE interrupts SET status = 'cancelled', resolved_at = ? WHERE run_id = ? AND status = 'pending'")
            .int(self.now)
            .text(&self.run.run_id);
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
        let mut outputs = Map::new();
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
                        outputs.insert(n.id.clone(), o.clone());
                    }
                }
            }
        }
        self.emit(
            EventType::RunCompleted,
            None,
            json!({ "outputs": outputs, "durationMs": duration }),
        )?;
        self.run.status = RunStatus::Completed;
        self.run.current_node_id = None;
        self.run.completed_at = Some(self.now);
        Ok(())
    }

    /// Queues one `callback` outbox row per callback event of this command
    /// (see `crate::callback`), in the command's transaction.
    fn queue_callbacks(&self, batch: &mut Batch) -> Result<()> {
        let Some(url) = self.run.callback_url.as_deref() else {
            return Ok(());
        };
        let timestamp = crate::clock::rfc3339(self.now);
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
            batch
                .sql("INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at, body) VALUES ('callback', ?, ?, ?, ?, '', ?, 'pending', ?, ?, ?)")
                .text(event.event_type.as_str())
                .text(&self.run.run_id)
                .text(event.node_id.as_deref().unwrap_or_default())
                .text(interrupt_id.unwrap_or_default())
                .text(url)
                .int(self.now)
                .int(self.now)
                .text(body.to_string());
        }
        Ok(())
    }

    /// Settles the run and writes the projections. Call once at the end of a command.
    pub fn finish(mut self) -> Result<RunRow> {
        self.settle()?;
        let mut batch = std::mem::take(&mut self.writes);
        self.queue_callbacks(&mut batch)?;
        // One multi-row statement for the command's events: on PostgreSQL
        // each statement is a round trip.
        for chunk in self.pending_events.chunks(MAX_ROWS) {
            batch.sql(&INSERT_EVENTS[chunk.len()]);
            for event in chunk {
                batch
                    .text(&self.run.run_id)
                    .int(event.sequence)
                    .text(ids::new_opaque())
                    .text(event.event_type.as_str())
                    .opt_text(event.node_id.as_ref().map(String::from))
                    .text(&event.payload)
                    .int(self.now);
            }
        }
        let mut dirty: Vec<(&NodeId, &NodeState)> = self.nodes.iter().filter(|(_, s)| s.dirty).collect();
        dirty.sort_by(|a, b| a.0.cmp(b.0));
        for (node_id, st) in dirty {
            if st.stored {
                batch.sql("UPDATE node_states SET status = ?, visits = ?, output = ?, pending_in = ?, due_at = ?, waiting = ? WHERE run_id = ? AND node_id = ?");
            } else {
                batch.sql("INSERT INTO node_states (status, visits, output, pending_in, due_at, waiting, run_id, node_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
            }
            batch
                .text(st.status.as_str())
                .int(st.visits)
                .opt_text(st.output.as_ref().map(Value::to_string))
                .text(serde_json::to_string(&st.pending_in)?)
                .opt_int(st.due_at)
                .opt_text(st.waiting.map(|w| w.as_str().to_string()))
                .text(&self.run.run_id)
                .text(node_id);
        }
        batch
            .sql("UPDATE runs SET status = ?, current_node_id = ?, error = ?, next_sequence = ?, completed_at = ? WHERE run_id = ?")
            .text(self.run.status.as_str())
            .opt_text(self.run.current_node_id.as_ref().map(String::from))
            .opt_text(self.run.error.as_ref().map(Value::to_string))
            .int(self.run.next_sequence)
            .opt_int(self.run.completed_at)
            .text(&self.run.run_id);
        batch.execute(self.conn)?;
        Ok(self.run)
    }
}

/// A command's writes, collected while it decides and executed in order at
/// the end (each statement prepared once per connection).
#[derive(Default)]
pub(crate) struct Batch {
    statements: Vec<(&'static str, Vec<Val>)>,
}

impl Batch {
    fn append(&mut self, other: Batch) {
        self.statements.extend(other.statements);
    }

    /// Starts a statement; the following `text`/`int` calls bind its `?`s in order.
    pub fn sql(&mut self, statement: &'static str) -> &mut Self {
        self.statements.push((statement, Vec::new()));
        self
    }
    fn arg(&mut self, v: Val) -> &mut Self {
        self.statements
            .last_mut()
            .expect("sql() before arguments")
            .1
            .push(v);
        self
    }
    pub fn text(&mut self, v: impl Into<String>) -> &mut Self {
        self.arg(Val::Text(Some(v.into())))
    }
    pub fn opt_text(&mut self, v: Option<String>) -> &mut Self {
        self.arg(Val::Text(v))
    }
    pub fn int(&mut self, v: i64) -> &mut Self {
        self.arg(Val::Int(Some(v)))
    }
    pub fn opt_int(&mut self, v: Option<i64>) -> &mut Self {
        self.arg(Val::Int(v))
    }
    pub fn execute(self, conn: &WriteConn) -> Result<()> {
        for (sql, args) in self.statements {
            conn.execute(sql, &args)?;
        }
        Ok(())
    }
}

/// The result of checking a resolve against an interrupt: what to record.
pub(crate) enum Decision {
    /// A vote to record (the writes); the gate stays open.
    Recorded(Batch),
    /// The interrupt resolves with this `interrupt.resolved` payload, after `writes` (the vote, if any).
    Resolve {
        resolved: Value,
        resume_value: Value,
        failure: Option<Value>,
        writes: Batch,
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
    now: Millis,
) -> Result<Decision> {
    let kind = interrupt.kind;
    let payload = &interrupt.payload;
    let subject = serde_json::to_value(actor.subject())?;
    let mut resolved = json!({
        "nodeId": interrupt.node_id,
        "interruptId": interrupt.interrupt_id,
        "kind": kind.as_str(),
        "resumeValue": resume_value,
        "resolvedBy": subject,
    });

    if kind == InterruptKind::Approval {
        let rules = interrupt.rules.as_ref().ok_or_else(|| {
            EngineError::Storage(format!("approval {} has no rules", interrupt.interrupt_id))
        })?;
        let via = rules.eligibility(
            principal,
            &run.owner_subject_id(),
            actor.allows(crate::auth::Scope::ApprovalsRespond),
        )?;
        let parsed = approval::parse_resume(rules, resume_value)?;
        crate::contract::cached(&interrupt.contract)?.validate_resume(resume_value)?;
        let earlier: Vec<(String, ApprovalAction, i64, i64, Value)> =
            serde_json::from_str(interrupt.votes_json.as_deref().unwrap_or("[]"))?;
        let seq = earlier.len() as i64;
        let counts = |action: ApprovalAction, superseded: i64| superseded == 0 && action.is_vote();
        let replaces = earlier
            .iter()
            .any(|(p, a, sup, ..)| *p == principal.id && counts(*a, *sup));
        let mut writes = Batch::default();
        if parsed.action.is_vote() && replaces {
            // One vote per principal: a later vote replaces the earlier one.
            writes
                .sql("UPDATE votes SET superseded = 1 WHERE interrupt_id = ? AND principal = ? AND action <> 'ask'")
                .text(&interrupt.interrupt_id)
                .text(&principal.id);
        }
        writes
            .sql("INSERT INTO votes (interrupt_id, seq, principal, action, resume_value, eligible_via, decided_at, superseded) VALUES (?, ?, ?, ?, ?, ?, ?, 0)")
            .text(&interrupt.interrupt_id)
            .int(seq)
            .text(&principal.id)
            .text(parsed.action.as_str())
            .text(resume_value.to_string())
            .text(&via)
            .int(now);
        if !parsed.action.is_vote() {
            return Ok(Decision::Recorded(writes));
        }
        let original = payload["data"].get("artifactData");
        let mut ballots: Vec<Ballot> = earlier
            .into_iter()
            .filter(|(p, a, sup, ..)| counts(*a, *sup) && *p != principal.id)
            .map(|(principal, action, _, o, rv)| Ballot {
                approves: approval::approved_data(action, &rv, original),
                principal,
                action,
                is_override: o != 0,
            })
            .collect();
        ballots.push(Ballot {
            principal: principal.id.clone(),
            action: parsed.action,
            is_override: principal.is_override,
            approves: approval::approved_data(parsed.action, resume_value, original),
        });
        resolved["action"] = json!(parsed.action);
        resolved["x-tollgate-eligibleVia"] = json!(via);
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

    crate::contract::cached(&interrupt.contract)?.validate_resume(resume_value)?;
    let mut failure = None;
    match kind {
        InterruptKind::ExternalEvent => {
            if let Some(corr) = payload["data"]["correlation"].as_object() {
                for (k, expected) in corr {
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
            let questions = payload["data"]["questions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
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
                            let v = jsonschema::validator_for(schema)
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
        writes: Batch::default(),
    })
}

/// The tenant's principals that have an email address.
pub(crate) fn load_directory(conn: &WriteConn, tenant: &str) -> Result<Vec<Principal>> {
    let rows: Vec<(String, String, Option<String>, String, String, i64)> = conn.query_map(
        "SELECT id, name, email, groups, roles, is_override FROM principals WHERE tenant = ? AND email IS NOT NULL AND email <> '' ORDER BY id",
        args![tenant],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
    )?;
    rows.into_iter()
        .map(|(id, name, email, groups, roles, o)| {
            crate::directory::principal_from_columns(
                id,
                tenant.to_string(),
                name,
                email,
                &groups,
                &roles,
                o != 0,
            )
        })
        .collect()
}

/// Node states from `load_run_for_update`'s JSON column.
fn parse_node_rows(text: &str) -> Result<Vec<NodeRow>> {
    type Row = (
        NodeId,
        NodeStatus,
        i64,
        Option<String>,
        String,
        Option<Millis>,
        Option<RunStatus>,
    );
    let rows: Vec<Row> = serde_json::from_str(text)?;
    Ok(rows
        .into_iter()
        .map(
            |(node_id, status, visits, output, pending_in, due_at, waiting)| NodeRow {
                node_id,
                status,
                visits,
                output,
                pending_in,
                due_at,
                waiting,
            },
        )
        .collect())
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

#[cfg(test)]
mod tests {
    //! The per-kind resolve rules on loaded rows: no database.
    use super::*;
    use crate::auth::Scope;

    const RUN: &str = "acme/run1";

    fn run_row() -> RunRow {
        RunRow {
            run_id: RunId::trusted(RUN),
            tenant: TenantId::trusted("acme"),
            workflow_id: "w".into(),
            workflow_digest: "d".into(),
            status: RunStatus::WaitingApproval,
            owner: json!({"tenant": "acme", "subject": {"subjectId": "owner"}}),
            current_node_id: Some(NodeId::trusted("gate")),
            error: None,
            inputs: json!({}),
            configurable: None,
            tags: None,
            metadata: None,
            callback_url: None,
            next_sequence: 5,
            created_at: 0,
            completed_at: None,
            nodes_json: None,
        }
    }

    /// The interrupt row `raise` stores for `node` of a one-node workflow, with earlier `votes`.
    fn interrupt_row(node: Value, votes: Value) -> InterruptRow {
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
            payload: json!({"kind": spec.kind.as_str(), "data": spec.data}),
            contract: serde_json::to_string(&spec.contract.contract).unwrap(),
            request: Some(json!({})),
            rules: spec.approval.clone(),
            workflow_id: "w".into(),
            title: "t".into(),
            owner_subject: "owner".into(),
            created_at: 0,
            deadline_at: None,
            resolved_at: None,
            resolution: None,
            votes_json: Some(votes.to_string()),
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
        decide(&run_row(), interrupt, &rv, &actor, p, 10)
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
        assert!(matches!(
            vote(&ann, &first, json!({"action": "accept"})).unwrap(),
            Decision::Recorded(_)
        ));
        // Ann again: her vote replaces her earlier one, still one of two.
        let again = interrupt_row(
            node.clone(),
            json!([["ann", "accept", 0, 0, {"action": "accept"}]]),
        );
        assert!(matches!(
            vote(&ann, &again, json!({"action": "accept"})).unwrap(),
            Decision::Recorded(_)
        ));
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
