//! OpenWOP workflow definitions: parsing, validation at registration time and
//! the compiled form the runtime executes.

use crate::approval::ApprovalRules;
use crate::contract::{object_schema, CompiledContract, Contract};
use crate::error::{EngineError, Result};
use crate::ids;
use crate::interrupt::InterruptKind;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub const NODE_TYPES: [&str; 5] = [
    "core.noop",
    "core.delay",
    "core.approvalGate",
    "core.clarificationGate",
    "core.interrupt",
];

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
}

/// What an interrupt node asks and accepts.
#[derive(Debug, Clone)]
pub struct InterruptSpec {
    pub kind: InterruptKind,
    /// `data` as configured (the engine adds run-specific members when raising).
    pub data: Value,
    pub contract: CompiledContract,
    pub timeout_ms: Option<u64>,
    pub approval: Option<ApprovalRules>,
}

#[derive(Debug, Clone)]
pub enum NodeBehaviour {
    Noop,
    Delay { delay_ms: Option<u64> },
    Interrupt(Box<InterruptSpec>),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: String,
    pub type_id: String,
    pub name: String,
    pub config: Value,
    /// Input bindings (`{"type":"variable","variableName":…}` or `{"type":"static","value":…}`).
    pub inputs: Map<String, Value>,
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
    index: HashMap<String, usize>,
    incoming: HashMap<String, Vec<usize>>,
    outgoing: HashMap<String, Vec<usize>>,
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

fn node_err(node: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::Validation {
        field: Some(format!("nodes.{node}")),
        details: Some(json!({ "nodeId": node })),
        message: format!("node \"{node}\": {message}"),
    }
}

/// Parses and validates a workflow definition. Every error names the node and
/// what is wrong with it.
pub fn compile(raw: Value) -> Result<Workflow> {
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
    let mut index = HashMap::new();
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
        let inputs = match rn.get("inputs") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return Err(node_err(nid, "inputs must be an object")),
        };
        for (name, binding) in &inputs {
            check_binding(binding).map_err(|e| node_err(nid, format!("inputs.{name}: {e}")))?;
        }
        let behaviour = compile_behaviour(nid, type_id, &config, &inputs)?;
        nodes.push(Node {
            id: nid.to_string(),
            type_id: type_id.to_string(),
            name: rn.get("name").and_then(Value::as_str).unwrap_or(nid).to_string(),
            config,
            inputs,
            behaviour,
        });
    }

    let mut edges = Vec::new();
    let mut edge_ids = HashSet::new();
    if let Some(raw_edges) = obj.get("edges") {
        let arr = raw_edges
            .as_array()
            .ok_or_else(|| EngineError::validation("edges", "edges must be an array"))?;
        for (i, re) in arr.iter().enumerate() {
            let field = |f: &str| {
                re.get(f)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        EngineError::validation(
                            format!("edges[{i}].{f}"),
                            format!("edges[{i}]: {f} is required"),
                        )
                    })
            };
            let source = field("sourceNodeId")?;
            let target = field("targetNodeId")?;
            let eid = re
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{source}->{target}#{i}"));
            for end in [&source, &target] {
                if !index.contains_key(end) {
                    return Err(EngineError::validation(
                        format!("edges[{i}]"),
                        format!("edge \"{eid}\" refers to unknown node \"{end}\""),
                    ));
                }
            }
            if !edge_ids.insert(eid.clone()) {
                return Err(EngineError::validation(
                    format!("edges[{i}].id"),
                    format!("duplicate edge id \"{eid}\""),
                ));
            }
            let rule = match re.get("triggerRule") {
                None | Some(Value::Null) => TriggerRule::AllSuccess,
                Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                    EngineError::validation(
                        format!("edges[{i}].triggerRule"),
                        format!("edge \"{eid}\": triggerRule must be one of all_success, any_success, all_complete, none_failed, any_failed"),
                    )
                })?,
            };
            edges.push(Edge {
                id: eid,
                source,
                target,
                rule,
            });
        }
    }

    let mut incoming: HashMap<String, Vec<usize>> = HashMap::new();
    let mut outgoing: HashMap<String, Vec<usize>> = HashMap::new();
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

fn check_binding(b: &Value) -> std::result::Result<(), String> {
    match b.get("type").and_then(Value::as_str) {
        Some("variable") => b
            .get("variableName")
            .and_then(Value::as_str)
            .map(|_| ())
            .ok_or_else(|| "a variable binding needs variableName".to_string()),
        Some("static") => Ok(()),
        _ => Err(
            "a binding is {\"type\":\"variable\",\"variableName\":…} or {\"type\":\"static\",\"value\":…}"
                .into(),
        ),
    }
}

fn opt_u64(node: &str, config: &Value, name: &str) -> Result<Option<u64>> {
    match config.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| node_err(node, format!("{name} must be a non-negative integer"))),
    }
}

fn contract_from(
    node: &str,
    config: &Value,
    outcomes: Vec<String>,
    default_resume: Value,
) -> Result<CompiledContract> {
    let declared_request = config.get("requestSchema").cloned();
    let declared_resume = config.get("resumeSchema").cloned();
    let typed = declared_request.is_some() || declared_resume.is_some();
    let outcomes = match config.get("outcomes") {
        None | Some(Value::Null) => outcomes,
        Some(Value::Array(a)) if a.iter().all(Value::is_string) && !a.is_empty() => {
            a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()
        }
        Some(_) => return Err(node_err(node, "outcomes must be a non-empty array of strings")),
    };
    let contract = Contract {
        request_schema: declared_request.unwrap_or_else(object_schema),
        resume_schema: declared_resume.unwrap_or(default_resume),
        outcomes,
        typed,
    };
    let contract_err = |m: String| EngineError::Validation {
        field: Some(format!("nodes.{node}")),
        details: Some(json!({ "nodeId": node })),
        message: m,
    };
    let compiled = CompiledContract::compile(contract, &format!("node \"{node}\"")).map_err(contract_err)?;
    // The console draws forms from these schemas: refuse what it cannot draw.
    for (what, schema) in [
        ("requestSchema", &compiled.contract.request_schema),
        ("resumeSchema", &compiled.contract.resume_schema),
    ] {
        tollgate_wire::schema_subset::check(schema)
            .map_err(|e| contract_err(format!("node \"{node}\": {what}: {e}")))?;
    }
    Ok(compiled)
}

fn compile_behaviour(
    node: &str,
    type_id: &str,
    config: &Value,
    inputs: &Map<String, Value>,
) -> Result<NodeBehaviour> {
    match type_id {
        "core.noop" => Ok(NodeBehaviour::Noop),
        "core.delay" => {
            let delay_ms = opt_u64(node, config, "delayMs")?;
            if delay_ms.is_none() && !inputs.contains_key("delayMs") {
                return Err(node_err(
                    node,
                    "core.delay needs config.delayMs or an inputs.delayMs binding",
                ));
            }
            Ok(NodeBehaviour::Delay { delay_ms })
        }
        "core.approvalGate" => {
            let title = config
                .get("title")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| node_err(node, "config.title is required"))?;
            let rules =
                ApprovalRules::from_config(config).map_err(|e| node_err(node, format!("config.{e}")))?;
            let timeout_ms = opt_u64(node, config, "timeoutMs")?;
            let mut data = json!({
                "artifactId": config.get("artifactId").and_then(Value::as_str).unwrap_or(node),
                "artifactType": config.get("artifactType").and_then(Value::as_str).unwrap_or("approval"),
                "title": title,
                "actions": rules.actions,
            });
            for k in ["description", "artifactData", "audience"] {
                if let Some(v) = config.get(k) {
                    data[k] = v.clone();
                }
            }
            copy_approval_fields(config, &mut data);
            let contract = contract_from(
                node,
                config,
                rules.actions.iter().map(|a| a.to_string()).collect(),
                approval_resume_schema(&rules.actions),
            )?;
            Ok(NodeBehaviour::Interrupt(Box::new(InterruptSpec {
                kind: InterruptKind::Approval,
                data,
                contract,
                timeout_ms: timeout_ms.filter(|&t| t > 0),
                approval: Some(rules),
            })))
        }
        "core.clarificationGate" => {
            let questions = config
                .get("questions")
                .and_then(Value::as_array)
                .filter(|q| !q.is_empty())
                .ok_or_else(|| node_err(node, "config.questions is required (a non-empty array)"))?;
            let mut seen = HashSet::new();
            for (i, q) in questions.iter().enumerate() {
                let qid = q
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| node_err(node, format!("config.questions[{i}].id is required")))?;
                if !seen.insert(qid) {
                    return Err(node_err(
                        node,
                        format!("config.questions[{i}]: duplicate id \"{qid}\""),
                    ));
                }
                if q.get("question").and_then(Value::as_str).is_none() {
                    return Err(node_err(
                        node,
                        format!("config.questions[{i}].question is required"),
                    ));
                }
                if let Some(s) = q.get("schema") {
                    jsonschema::meta::validate(s).map_err(|e| {
                        node_err(
                            node,
                            format!("config.questions[{i}].schema: invalid JSON Schema: {e}"),
                        )
                    })?;
                }
            }
            let mut data = json!({ "questions": questions });
            if let Some(c) = config.get("contextType") {
                data["contextType"] = c.clone();
            }
            let contract = contract_from(node, config, vec!["submitted".into()], object_schema())?;
            Ok(NodeBehaviour::Interrupt(Box::new(InterruptSpec {
                kind: InterruptKind::Clarification,
                data,
                contract,
                timeout_ms: opt_u64(node, config, "timeoutMs")?.filter(|&t| t > 0),
                approval: None,
            })))
        }
        "core.interrupt" => {
            let kind_str = config
                .get("kind")
                .and_then(Value::as_str)
                .ok_or_else(|| node_err(node, "config.kind is required"))?;
            let kind = InterruptKind::parse(kind_str).ok_or_else(|| {
                node_err(
                    node,
                    format!("config.kind \"{kind_str}\" is not an interrupt kind"),
                )
            })?;
            let mut data = match config.get("data") {
                None | Some(Value::Null) => json!({}),
                Some(d @ Value::Object(_)) => d.clone(),
                Some(_) => return Err(node_err(node, "config.data must be an object")),
            };
            if kind == InterruptKind::Approval {
                if let Some(m) = data.as_object_mut() {
                    m.entry("artifactId").or_insert_with(|| json!(node));
                    m.entry("artifactType").or_insert_with(|| json!("approval"));
                }
            }
            for f in kind.required_data_fields() {
                if data.get(*f).is_none() {
                    return Err(node_err(
                        node,
                        format!("config.data.{f} is required for kind {kind_str}"),
                    ));
                }
            }
            let approval = if kind == InterruptKind::Approval {
                Some(
                    ApprovalRules::from_config(&data)
                        .map_err(|e| node_err(node, format!("config.data.{e}")))?,
                )
            } else {
                None
            };
            check_kind_data(node, kind, &data)?;
            let (outcomes, default_resume) = match (&approval, kind) {
                (Some(r), _) => (
                    r.actions.iter().map(|a| a.to_string()).collect(),
                    approval_resume_schema(&r.actions),
                ),
                (None, InterruptKind::Credential) => (
                    vec!["authorized".into(), "declined".into()],
                    json!({"type": "object", "required": ["outcome"], "properties": {"outcome": {"enum": ["authorized", "declined"]}}}),
                ),
                (None, InterruptKind::ExternalEvent) => (vec!["received".into()], object_schema()),
                _ => (vec!["submitted".into()], object_schema()),
            };
            let contract = contract_from(node, config, outcomes, default_resume)?;
            Ok(NodeBehaviour::Interrupt(Box::new(InterruptSpec {
                kind,
                data,
                contract,
                timeout_ms: opt_u64(node, config, "timeoutMs")?.filter(|&t| t > 0),
                approval,
            })))
        }
        other => Err(node_err(node, format!("unknown typeId \"{other}\""))),
    }
}

fn copy_approval_fields(config: &Value, data: &mut Value) {
    for k in [
        "onTimeout",
        "requiredApprovals",
        "approversList",
        "rejectionPolicy",
        "overrideBypassesQuorum",
        "approverGroupRefs",
        "approverRoleRefs",
    ] {
        if let Some(v) = config.get(k) {
            data[k] = v.clone();
        }
    }
}

fn check_kind_data(node: &str, kind: InterruptKind, data: &Value) -> Result<()> {
    let bad = |m: &str| Err(node_err(node, format!("config.data.{m}")));
    match kind {
        InterruptKind::ExternalEvent if !data["correlation"].is_object() => {
            bad("correlation must be an object")
        }
        InterruptKind::ExternalEvent if !data["eventType"].is_string() => bad("eventType must be a string"),
        InterruptKind::LowConfidence => {
            for f in ["threshold", "observed"] {
                match data[f].as_f64() {
                    Some(x) if (0.0..=1.0).contains(&x) => {}
                    _ => return bad(&format!("{f} must be a number between 0 and 1")),
                }
            }
            Ok(())
        }
        InterruptKind::Credential => {
            if !data["connectUrl"]
                .as_str()
                .is_some_and(|u| u.starts_with("https://"))
            {
                return bad("connectUrl must be an https URL");
            }
            if !matches!(
                data["reason"].as_str(),
                Some("missing" | "expired" | "insufficient_scope")
            ) {
                return bad("reason must be missing, expired or insufficient_scope");
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The built-in resume schema of an approval gate: the spec's resume shape,
/// with `action` limited to the gate's actions.
pub fn approval_resume_schema(actions: &[crate::approval::ApprovalAction]) -> Value {
    json!({
        "type": "object",
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": actions},
            "feedback": {"type": "string"},
            "refineFeedback": {"type": "object"},
            "editedArtifactData": {},
            "decidedBy": {"type": "string"},
            "decidedAt": {"type": "string"}
        }
    })
}

/// Resolves a node's input bindings against the run's inputs and the
/// workflow's variable defaults.
pub fn resolve_inputs(wf: &Workflow, node: &Node, run_inputs: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, binding) in &node.inputs {
        let value = match binding.get("type").and_then(Value::as_str) {
            Some("variable") => {
                let var = binding
                    .get("variableName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                run_inputs
                    .get(var)
                    .cloned()
                    .or_else(|| wf.variable_default(var).cloned())
            }
            Some("static") => binding.get("value").cloned(),
            _ => None,
        };
        // An unbound variable without a default is absent, not null: the schema decides.
        if let Some(v) = value.filter(|v| !v.is_null()) {
            out.insert(name.clone(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wf(nodes: Value, edges: Value) -> Result<Workflow> {
        compile(json!({"id": "w", "nodes": nodes, "edges": edges}))
    }

    fn message(r: Result<Workflow>) -> String {
        match r {
            Err(EngineError::Validation { message, .. }) => message,
            Err(e) => panic!("{e:?}"),
            Ok(_) => panic!("accepted"),
        }
    }

    #[test]
    fn loads_every_shipped_fixture() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/conformance");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            compile(raw).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
        assert!(n >= 8);
    }

    #[test]
    fn refusals_name_node_and_problem() {
        assert!(message(wf(
            json!([{"id": "a", "typeId": "core.noop"}, {"id": "a", "typeId": "core.noop"}]),
            json!([])
        ))
        .contains("node \"a\": duplicate node id"));
        assert!(
            message(wf(json!([{"id": "a", "typeId": "core.magic"}]), json!([])))
                .contains("node \"a\": unknown typeId \"core.magic\"")
        );
        assert!(message(wf(
            json!([{"id": "a", "typeId": "core.noop"}]),
            json!([{"sourceNodeId": "a", "targetNodeId": "b"}])
        ))
        .contains("unknown node \"b\""));
        assert!(message(wf(
            json!([{"id": "g", "typeId": "core.approvalGate", "config": {"actions": ["accept"]}}]),
            json!([])
        ))
        .contains("node \"g\": config.title is required"));
        assert!(message(wf(json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "resumeSchema": {"type": "object", "properties": {"x": {"type": "bogus"}}}}}]), json!([]))).contains("node \"g\": resumeSchema: invalid JSON Schema"));
        assert!(message(wf(json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "requestSchema": {"type": "array"}}}]), json!([]))).contains("node \"g\": requestSchema: must describe a JSON object"));
        assert!(
            message(wf(json!([{"id": "d", "typeId": "core.delay"}]), json!([])))
                .contains("node \"d\": core.delay needs")
        );
        assert!(message(wf(json!([{"id": "e", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "x"}}}]), json!([]))).contains("config.data.correlation is required"));
        assert!(message(wf(
            json!([{"id": "a", "typeId": "core.noop"}]),
            json!([{"sourceNodeId": "a", "targetNodeId": "a", "triggerRule": "sometimes"}])
        ))
        .contains("triggerRule"));
    }

    #[test]
    fn refuses_schemas_the_console_cannot_draw() {
        let gate = |schema_key: &str, schema: Value| {
            let mut config = json!({"title": "t", "actions": ["accept"]});
            config[schema_key] = schema;
            wf(
                json!([{"id": "g", "typeId": "core.approvalGate", "config": config}]),
                json!([]),
            )
        };
        let m = message(gate(
            "requestSchema",
            json!({"type": "object", "properties": {"items": {"type": "object", "patternProperties": {"^x": {}}}}}),
        ));
        assert_eq!(
            m,
            "node \"g\": requestSchema: /properties/items: keyword \"patternProperties\" is not supported by the console"
        );
        let m = message(gate(
            "resumeSchema",
            json!({"type": "object", "properties": {"when": {"type": "string", "format": "ipv4"}}}),
        ));
        assert!(
            m.starts_with("node \"g\": resumeSchema: /properties/when: keyword \"format\""),
            "{m}"
        );
        match gate(
            "resumeSchema",
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}}),
        ) {
            Err(EngineError::Validation { field, details, .. }) => {
                assert_eq!(field.as_deref(), Some("nodes.g"));
                assert_eq!(details.unwrap()["nodeId"], "g");
            }
            other => panic!("{other:?}"),
        }
        // The same keywords inside the subset are fine, and so are the built-in schemas.
        assert!(gate(
            "resumeSchema",
            json!({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}})
        )
        .is_ok());
        assert!(wf(json!([
            {"id": "c", "typeId": "core.interrupt", "config": {"kind": "credential", "data": {"provider": "p", "scopes": ["s"], "connectUrl": "https://x", "reason": "missing"}}},
            {"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "a", "question": "?"}]}}
        ]), json!([])).is_ok());
    }

    #[test]
    fn the_engines_own_schemas_can_be_drawn() {
        use crate::approval::ApprovalAction;
        tollgate_wire::schema_subset::check(&object_schema()).unwrap();
        tollgate_wire::schema_subset::check(&approval_resume_schema(&ApprovalAction::OFFERABLE)).unwrap();
    }

    #[test]
    fn loads_every_demo_workflow() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/workflows");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            compile(raw).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            n += 1;
        }
        assert!(n >= 3);
    }

    #[test]
    fn typed_only_when_a_schema_is_declared() {
        let w = wf(json!([
            {"id": "plain", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept", "reject"]}},
            {"id": "typed", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "resumeSchema": {"type": "object"}}}
        ]), json!([])).unwrap();
        let spec = |id: &str| match &w.node(id).unwrap().behaviour {
            NodeBehaviour::Interrupt(s) => s.contract.contract.clone(),
            _ => panic!(),
        };
        assert!(!spec("plain").typed);
        assert_eq!(spec("plain").outcomes, vec!["accept", "reject"]);
        assert!(spec("typed").typed);
    }
}
