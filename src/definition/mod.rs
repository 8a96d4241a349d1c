//! OpenWOP workflow definitions: parsing, validation at registration time and
//! the compiled form the runtime executes. Node types are compiled in
//! [`nodes`]; bindings and conditions are [`crate::binding`] and [`crate::expr`].

mod nodes;

use crate::approval::ApprovalRules;
use crate::binding::{Binding, Scope};
use crate::contract::CompiledContract;
use crate::error::{EngineError, Result};
use crate::expr::Condition;
use crate::ids;
use crate::interrupt::InterruptKind;
use crate::FastMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

pub use nodes::{
    approval_resume_schema, credential_resume_schema, DEFAULT_ESCALATION_THRESHOLD, MAX_WAIT_MS, NODE_TYPES,
};

/// Optional protocol families an instance offers; a definition that needs
/// one the instance does not offer is refused at registration
/// (`422 capability_required`). Discovery advertises the same set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// `conversationPrimitive`: the `conversation.*` kinds.
    pub conversation: bool,
    /// `oauth.credentialInterrupt`: the `credential` kind.
    pub credential: bool,
}

impl Capabilities {
    /// Everything Tollgate can do (the CLI's offline `workflow validate`).
    pub const ALL: Capabilities = Capabilities {
        conversation: true,
        credential: true,
    };
}

impl Default for Capabilities {
    /// Conversations on; credential interrupts only when configured.
    fn default() -> Self {
        Capabilities {
            conversation: true,
            credential: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TriggerRule {
    #[default]
    AllSuccess,
    AnySuccess,
    AllComplete,
    NoneFailed,
    AnyFailed,
}

impl TriggerRule {
    /// Whether a failed source may pass over an edge with this rule.
    pub fn admits_failure(self) -> bool {
        matches!(self, TriggerRule::AllComplete | TriggerRule::AnyFailed)
    }
}

#[derive(Debug, Clone)]
pub struct Edge {
    pub id: String,
    pub source: String,
    pub target: String,
    pub rule: TriggerRule,
    /// Taken only when this holds over the source's facts (see `runtime`); else it delivers `skipped`.
    pub condition: Option<Condition>,
}

/// The edge members Tollgate reads; any other member is refused, never ignored.
const EDGE_MEMBERS: [&str; 6] = [
    "id",
    "sourceNodeId",
    "targetNodeId",
    "triggerRule",
    "condition",
    "label",
];

/// What an interrupt node asks and accepts.
#[derive(Debug, Clone)]
pub struct InterruptSpec {
    pub kind: InterruptKind,
    /// `data` as configured; members marked `{"$bind": …}` are bound when the node runs.
    pub data: Value,
    pub contract: CompiledContract,
    pub timeout_ms: Option<u64>,
    /// Read through [`InterruptSpec::approval`]: its stored text is made once.
    approval: Option<ApprovalRules>,
    /// `data` has bound members: its payload is checked when the node runs
    /// (an unbound payload was checked at registration).
    pub bound: bool,
    /// `approval` as the JSON text each interrupt's row stores (`null` when
    /// none), written once with the definition.
    rules_text: std::sync::Arc<str>,
}

impl InterruptSpec {
    pub fn new(
        kind: InterruptKind,
        data: Value,
        contract: CompiledContract,
        timeout_ms: Option<u64>,
        approval: Option<ApprovalRules>,
        bound: bool,
    ) -> crate::error::Result<Self> {
        let rules_text = serde_json::to_string(&approval)?.into();
        Ok(InterruptSpec {
            kind,
            data,
            contract,
            timeout_ms,
            approval,
            bound,
            rules_text,
        })
    }

    /// An approval gate's rules.
    pub fn approval(&self) -> Option<&ApprovalRules> {
        self.approval.as_ref()
    }

    /// The approval rules as stored with each interrupt (`null`: none).
    pub fn rules_text(&self) -> &str {
        &self.rules_text
    }
}

/// A `core.agentDecision` node: an agent's decision with its confidence,
/// escalated to a person (`low-confidence`) below the threshold.
#[derive(Debug, Clone)]
pub struct DecisionSpec {
    pub agent_id: String,
    /// The node's own threshold; the run's `configurable.run.escalationThreshold` wins.
    pub threshold: Option<f64>,
    /// The `low-confidence` interrupt raised below the threshold (its data is filled at run time).
    pub escalation: InterruptSpec,
}

#[derive(Debug, Clone)]
pub enum NodeBehaviour {
    Noop,
    Delay { delay_ms: Option<u64> },
    Interrupt(Box<InterruptSpec>),
    Decision(Box<DecisionSpec>),
}

impl NodeBehaviour {
    /// The interrupt this node may raise, if any.
    pub fn interrupt(&self) -> Option<&InterruptSpec> {
        match self {
            NodeBehaviour::Interrupt(spec) => Some(spec),
            NodeBehaviour::Decision(d) => Some(&d.escalation),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    pub type_id: String,
    pub name: String,
    pub config: Value,
    /// Input bindings, parsed (see [`crate::binding`]).
    pub inputs: Vec<(String, Binding)>,
    pub behaviour: NodeBehaviour,
}

/// A validated workflow, ready to run. Cheap to share.
#[derive(Debug)]
pub struct Workflow {
    pub id: String,
    pub name: String,
    pub version: String,
    pub raw: Value,
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub variables: Map<String, Value>,
    index: FastMap<String, usize>,
    incoming: FastMap<String, Vec<usize>>,
    outgoing: FastMap<String, Vec<usize>>,
}

pub type SharedWorkflow = Arc<Workflow>;

impl Workflow {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }
    pub fn incoming(&self, id: &str) -> impl Iterator<Item = &Edge> {
        self.incoming
            .get(id)
            .into_iter()
            .flatten()
            .map(|&i| &self.edges[i])
    }
    pub fn outgoing(&self, id: &str) -> impl Iterator<Item = &Edge> {
        self.outgoing
            .get(id)
            .into_iter()
            .flatten()
            .map(|&i| &self.edges[i])
    }
    /// Nodes with no incoming edge: they fire when the run starts.
    pub fn roots(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| !self.incoming.contains_key(&n.id))
    }
    /// The default value of a declared workflow variable.
    pub fn variable_default(&self, name: &str) -> Option<&Value> {
        self.variables.get(name)
    }
}

fn err(message: String) -> EngineError {
    EngineError::Validation {
        field: Some("definition".into()),
        details: None,
        message,
    }
}

pub(crate) fn node_err(node: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::Validation {
        field: Some(format!("nodes.{node}")),
        details: Some(json!({ "nodeId": node })),
        message: format!("node \"{node}\": {message}"),
    }
}

fn edge_err(i: usize, member: &str, eid: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::Validation {
        field: Some(format!("edges[{i}]{member}")),
        details: Some(json!({ "edgeId": eid })),
        message: format!("edge \"{eid}\": {message}"),
    }
}

/// A definition offered for registration or validation: [`compile_with`]
/// and the limits only new definitions must meet. A stored version is
/// compiled as it was accepted, so a run goes on under it after an upgrade.
pub fn compile_new(raw: Value, caps: &Capabilities) -> Result<Workflow> {
    crate::text::refuse_nul(&raw, "definition")?;
    let wf = compile_with(raw, caps)?;
    for node in &wf.nodes {
        if let Some(spec) = node.behaviour.interrupt() {
            nodes::refuse_costly_patterns(&node.id, spec)?;
        }
        let wait = match &node.behaviour {
            NodeBehaviour::Delay { delay_ms } => delay_ms.map(|ms| ("delayMs", ms)),
            other => other
                .interrupt()
                .and_then(|s| s.timeout_ms)
                .map(|ms| ("timeoutMs", ms)),
        };
        if let Some((name, _)) = wait.filter(|&(_, ms)| ms > MAX_WAIT_MS) {
            return Err(node_err(
                &node.id,
                format!("{name} must be at most {MAX_WAIT_MS} (ten years)"),
            ));
        }
    }
    Ok(wf)
}

/// [`compile_with`] under everything Tollgate can do.
pub fn compile(raw: Value) -> Result<Workflow> {
    compile_with(raw, &Capabilities::ALL)
}

/// Parses and validates a workflow definition for an instance offering
/// `caps`. Every error names the node or edge and what is wrong with it.
pub fn compile_with(raw: Value, caps: &Capabilities) -> Result<Workflow> {
    let obj = raw
        .as_object()
        .ok_or_else(|| err("a workflow definition must be a JSON object".into()))?;
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| EngineError::validation("id", "id is required (a string)"))?
        .to_string();
    if !ids::is_workflow_id(&id) {
        return Err(EngineError::validation(
            "id",
            format!("id \"{id}\" does not match ^[A-Za-z0-9._~:-]{{1,128}}$"),
        ));
    }
    let name = obj.get("name").and_then(Value::as_str).unwrap_or(&id).to_string();
    let version = match obj.get("version") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "1".to_string(),
    };
    let raw_nodes = obj
        .get("nodes")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| EngineError::validation("nodes", "nodes is required (a non-empty array)"))?;

    let mut variables = Map::new();
    if let Some(vars) = obj.get("variables").and_then(Value::as_array) {
        for v in vars {
            if let Some(n) = v.get("name").and_then(Value::as_str) {
                variables.insert(
                    n.to_string(),
                    v.get("defaultValue").cloned().unwrap_or(Value::Null),
                );
            }
        }
    }

    let mut nodes = Vec::with_capacity(raw_nodes.len());
    let mut index = FastMap::default();
    // Upstream nodes each node's bindings read, checked once every node is known.
    let mut reads: Vec<(String, String)> = Vec::new();
    for (i, rn) in raw_nodes.iter().enumerate() {
        let nid = rn.get("id").and_then(Value::as_str).ok_or_else(|| {
            EngineError::validation(format!("nodes[{i}].id"), format!("nodes[{i}]: id is required"))
        })?;
        if !ids::is_node_id(nid) {
            return Err(node_err(nid, "id does not match ^[A-Za-z0-9._~:-]{1,128}$"));
        }
        if index.insert(nid.to_string(), i).is_some() {
            return Err(node_err(nid, "duplicate node id"));
        }
        let type_id = rn
            .get("typeId")
            .and_then(Value::as_str)
            .ok_or_else(|| node_err(nid, "typeId is required"))?;
        if !NODE_TYPES.contains(&type_id) {
            return Err(node_err(
                nid,
                format!("unknown typeId \"{type_id}\"; known: {}", NODE_TYPES.join(", ")),
            ));
        }
        let config = match rn.get("config") {
            None | Some(Value::Null) => json!({}),
            Some(c @ Value::Object(_)) => c.clone(),
            Some(_) => return Err(node_err(nid, "config must be an object")),
        };
        let raw_inputs = match rn.get("inputs") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(node_err(nid, "inputs must be an object")),
        };
        let mut inputs = Vec::with_capacity(raw_inputs.len());
        for (name, binding) in &raw_inputs {
            let b = Binding::parse(binding).map_err(|e| node_err(nid, format!("inputs.{name}: {e}")))?;
            if let Some(up) = b.upstream() {
                reads.push((nid.to_string(), up.to_string()));
            }
            inputs.push((name.clone(), b));
        }
        let compiled = nodes::compile(nid, type_id, &config, &raw_inputs, caps)?;
        reads.extend(compiled.reads.into_iter().map(|up| (nid.to_string(), up)));
        nodes.push(Node {
            id: nid.to_string(),
            type_id: type_id.to_string(),
            name: rn.get("name").and_then(Value::as_str).unwrap_or(nid).to_string(),
            config,
            inputs,
            behaviour: compiled.behaviour,
        });
    }
    for (node, upstream) in &reads {
        if !index.contains_key(upstream) {
            return Err(node_err(
                node,
                format!("a nodeOutput binding reads unknown node \"{upstream}\""),
            ));
        }
    }

    let edges = compile_edges(obj.get("edges"), &index)?;
    let mut incoming: FastMap<String, Vec<usize>> = FastMap::default();
    let mut outgoing: FastMap<String, Vec<usize>> = FastMap::default();
    for (i, e) in edges.iter().enumerate() {
        incoming.entry(e.target.clone()).or_default().push(i);
        outgoing.entry(e.source.clone()).or_default().push(i);
    }
    if !nodes.iter().any(|n| !incoming.contains_key(&n.id)) {
        return Err(EngineError::validation(
            "edges",
            "no node without incoming edges: the workflow can never start",
        ));
    }

    Ok(Workflow {
        id,
        name,
        version,
        raw,
        nodes,
        edges,
        variables,
        index,
        incoming,
        outgoing,
    })
}

fn compile_edges(raw_edges: Option<&Value>, index: &FastMap<String, usize>) -> Result<Vec<Edge>> {
    let mut edges = Vec::new();
    let mut edge_ids = HashSet::new();
    let Some(raw_edges) = raw_edges else {
        return Ok(edges);
    };
    let arr = raw_edges
        .as_array()
        .ok_or_else(|| EngineError::validation("edges", "edges must be an array"))?;
    for (i, re) in arr.iter().enumerate() {
        let obj = re.as_object().ok_or_else(|| {
            EngineError::validation(format!("edges[{i}]"), format!("edges[{i}] must be an object"))
        })?;
        let field = |f: &str| {
            obj.get(f)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| {
                    EngineError::validation(format!("edges[{i}].{f}"), format!("edges[{i}]: {f} is required"))
                })
        };
        let source = field("sourceNodeId")?;
        let target = field("targetNodeId")?;
        let eid = obj
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{source}->{target}#{i}"));
        for member in obj.keys() {
            if EDGE_MEMBERS.contains(&member.as_str()) {
                continue;
            }
            let why = match member.as_str() {
                "sourceOutput" | "targetInput" => "is not supported: bind the target's input with {\"type\":\"nodeOutput\",\"nodeId\":…,\"path\":…} instead",
                _ => "is not an edge member Tollgate supports (id, sourceNodeId, targetNodeId, triggerRule, condition, label)",
            };
            return Err(edge_err(
                i,
                &format!(".{member}"),
                &eid,
                format!("{member} {why}"),
            ));
        }
        for end in [&source, &target] {
            if !index.contains_key(end) {
                return Err(edge_err(i, "", &eid, format!("refers to unknown node \"{end}\"")));
            }
        }
        if !edge_ids.insert(eid.clone()) {
            return Err(EngineError::validation(
                format!("edges[{i}].id"),
                format!("duplicate edge id \"{eid}\""),
            ));
        }
        let rule = match obj.get("triggerRule") {
            None | Some(Value::Null) => TriggerRule::AllSuccess,
            Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                edge_err(
                    i,
                    ".triggerRule",
                    &eid,
                    "triggerRule must be one of all_success, any_success, all_complete, none_failed, any_failed",
                )
            })?,
        };
        let condition = match obj.get("condition") {
            None | Some(Value::Null) => None,
            Some(Value::String(src)) => Some(
                Condition::compile(src)
                    .map_err(|e| edge_err(i, ".condition", &eid, format!("condition: {e}")))?,
            ),
            Some(_) => {
                return Err(edge_err(
                    i,
                    ".condition",
                    &eid,
                    "condition must be an expression (a string), e.g. \"action == 'refine'\"",
                ))
            }
        };
        if let Some(label) = obj.get("label") {
            if !label.is_string() {
                return Err(edge_err(i, ".label", &eid, "label must be a string"));
            }
        }
        edges.push(Edge {
            id: eid,
            source,
            target,
            rule,
            condition,
        });
    }
    Ok(edges)
}

/// Resolves a node's input bindings in `scope`. An unbound variable without
/// a default is absent, not null: the schema decides.
pub fn resolve_inputs(
    node: &Node,
    scope: &Scope,
) -> std::result::Result<Map<String, Value>, (String, String)> {
    let mut out = Map::new();
    for (name, binding) in &node.inputs {
        match binding.resolve(scope) {
            Ok(Some(v)) => {
                out.insert(name.clone(), v);
            }
            Ok(None) => {}
            Err(e) => return Err((format!("inputs.{name}"), e)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
