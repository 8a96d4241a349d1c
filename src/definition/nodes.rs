//! Node types: what each `typeId` may be configured with, checked at
//! registration, and the compiled behaviour the runtime executes.

use super::{node_err, Capabilities, DecisionSpec, InterruptSpec, NodeBehaviour};
use crate::approval::{ApprovalAction, ApprovalRules};
use crate::binding::{self, is_bound};
use crate::contract::{object_schema, CompiledContract, Contract};
use crate::error::{EngineError, Result};
use crate::interrupt::{self, InterruptKind};
use crate::secrets;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

pub const NODE_TYPES: [&str; 6] = [
    "core.noop",
    "core.delay",
    "core.approvalGate",
    "core.clarificationGate",
    "core.interrupt",
    "core.agentDecision",
];

/// The longest `timeoutMs` or `delayMs` a new definition or a bound input
/// may ask for: ten years. (Deadlines are added with saturation, so a longer
/// one stored before this bound still runs.)
pub const MAX_WAIT_MS: u64 = 10 * 365 * 24 * 60 * 60 * 1000;

/// The escalation threshold when neither the run nor the node sets one (interrupt.md).
pub const DEFAULT_ESCALATION_THRESHOLD: f64 = 0.7;

/// Approval members that decide who may decide and how: fixed at
/// registration, so a run's inputs can never choose its own approvers.
const RULE_MEMBERS: [&str; 8] = [
    "actions",
    "onTimeout",
    "requiredApprovals",
    "approversList",
    "rejectionPolicy",
    "overrideBypassesQuorum",
    "approverGroupRefs",
    "approverRoleRefs",
];

pub(super) struct Compiled {
    pub behaviour: NodeBehaviour,
    /// Nodes whose outputs the node's bound data reads.
    pub reads: Vec<String>,
}

fn plain(behaviour: NodeBehaviour) -> Compiled {
    Compiled {
        behaviour,
        reads: Vec::new(),
    }
}

pub(super) fn compile(
    node: &str,
    type_id: &str,
    config: &Value,
    inputs: &Map<String, Value>,
    caps: &Capabilities,
) -> Result<Compiled> {
    if type_id != "core.approvalGate" && config.get("profile").is_some() {
        return Err(node_err(
            node,
            "config.profile: only a core.approvalGate takes a profile (openwop-interrupt-auth-required)",
        ));
    }
    match type_id {
        "core.noop" => Ok(plain(NodeBehaviour::Noop)),
        "core.delay" => {
            let delay_ms = opt_u64(node, config, "delayMs")?;
            if delay_ms.is_none() && !inputs.contains_key("delayMs") {
                return Err(node_err(
                    node,
                    "core.delay needs config.delayMs or an inputs.delayMs binding",
                ));
            }
            Ok(plain(NodeBehaviour::Delay { delay_ms }))
        }
        "core.approvalGate" => approval_gate(node, config),
        "core.clarificationGate" => clarification_gate(node, config),
        "core.interrupt" => interrupt_node(node, config, caps),
        "core.agentDecision" => agent_decision(node, config, inputs),
        other => Err(node_err(node, format!("unknown typeId \"{other}\""))),
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

fn timeout(node: &str, config: &Value) -> Result<Option<u64>> {
    Ok(opt_u64(node, config, "timeoutMs")?.filter(|&t| t > 0))
}

/// Refuses bindings in approval rule members (checked before the rules are read).
fn refuse_bound_rules(node: &str, data: &Value, at: &str) -> Result<()> {
    for k in RULE_MEMBERS {
        if data.get(k).is_some_and(binding::has_bindings) {
            return Err(node_err(
                node,
                format!("{at}.{k} cannot be bound: who decides and how is fixed at registration"),
            ));
        }
    }
    Ok(())
}

/// Checks the bound members of `data` (at `at`); returns the nodes they read.
fn check_bindings(node: &str, data: &Value, at: &str) -> Result<Vec<String>> {
    binding::check_tree(data, at).map_err(|e| node_err(node, e))
}

/// A text member: a string (non-empty when `required`) or a bound member.
fn check_text(node: &str, config: &Value, name: &str, required: bool) -> Result<()> {
    match config.get(name) {
        None | Some(Value::Null) if required => Err(node_err(node, format!("config.{name} is required"))),
        None | Some(Value::Null) => Ok(()),
        Some(v) if is_bound(v) => Ok(()),
        Some(Value::String(s)) if !(required && s.is_empty()) => Ok(()),
        Some(_) => Err(node_err(
            node,
            format!(
                "config.{name} must be a {}string or a {{\"$bind\": …}}",
                if required { "non-empty " } else { "" }
            ),
        )),
    }
}

/// Checks a static payload against the closed per-kind schema at
/// registration (a bound payload is checked when the node runs).
fn check_static_payload(node: &str, kind: InterruptKind, data: &Value, contract: &Contract) -> Result<()> {
    if binding::has_bindings(data) {
        return Ok(());
    }
    let payload =
        json!({"kind": kind.as_str(), "key": "k", "data": data, "resumeSchema": contract.resume_schema});
    interrupt::check_payload(kind, &payload).map_err(|e| {
        node_err(
            node,
            format!("the {} payload does not match its kind: {e}", kind.as_str()),
        )
    })
}

/// Refuses schemas that ask a person for credential material.
fn refuse_credential_material(node: &str, contract: &Contract) -> Result<()> {
    let declared = [
        ("requestSchema", &contract.request_schema),
        ("resumeSchema", &contract.resume_schema),
    ];
    for (what, schema) in declared {
        if let Some(found) = secrets::solicited_by_schema(schema, "") {
            return Err(node_err(
                node,
                format!("{what}: {found} asks for credential material; no interrupt may solicit it (use a credential interrupt)"),
            ));
        }
    }
    Ok(())
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
    let (outcomes, outcomes_declared) = match config.get("outcomes") {
        None | Some(Value::Null) => (outcomes, false),
        Some(Value::Array(a)) if a.iter().all(Value::is_string) && !a.is_empty() => (
            a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            true,
        ),
        Some(_) => return Err(node_err(node, "outcomes must be a non-empty array of strings")),
    };
    let contract = Contract {
        request_schema: declared_request.unwrap_or_else(object_schema),
        resume_schema: declared_resume.unwrap_or(default_resume),
        outcomes,
        typed,
        outcomes_declared,
    };
    compile_contract(node, contract)
}

fn compile_contract(node: &str, contract: Contract) -> Result<CompiledContract> {
    let contract_err = |m: String| EngineError::Validation {
        field: Some(format!("nodes.{node}")),
        details: Some(json!({ "nodeId": node })),
        message: m,
    };
    refuse_credential_material(node, &contract)?;
    let compiled = CompiledContract::compile(contract, &format!("node \"{node}\"")).map_err(contract_err)?;
    // The console draws forms from these schemas: refuse what it cannot draw.
    for (what, schema) in [
        ("requestSchema", &compiled.contract().request_schema),
        ("resumeSchema", &compiled.contract().resume_schema),
    ] {
        tollgate_wire::schema_subset::check(schema)
            .map_err(|e| contract_err(format!("node \"{node}\": {what}: {e}")))?;
    }
    Ok(compiled)
}

/// Refuses an interrupt whose schemas (request, resume, each question's)
/// hold a pattern too costly to check ([`crate::patterns`]). A limit for
/// new definitions only: a stored one is compiled as it was accepted.
pub(super) fn refuse_costly_patterns(node: &str, spec: &InterruptSpec) -> Result<()> {
    let contract = spec.contract.contract();
    for (what, schema) in [
        ("requestSchema", &contract.request_schema),
        ("resumeSchema", &contract.resume_schema),
    ] {
        crate::patterns::refuse_costly(schema).map_err(|e| EngineError::Validation {
            field: Some(format!("nodes.{node}")),
            details: Some(json!({ "nodeId": node })),
            message: format!("node \"{node}\": {what}: {e}"),
        })?;
    }
    let questions = spec.data.get("questions").and_then(Value::as_array);
    for (i, q) in questions.into_iter().flatten().enumerate() {
        if let Some(schema) = q.get("schema") {
            crate::patterns::refuse_costly(schema)
                .map_err(|e| node_err(node, format!("config.questions[{i}].schema: {e}")))?;
        }
    }
    Ok(())
}

/// An approval gate's declared `outcomes` are its actions: any other is refused.
fn check_approval_outcomes(node: &str, contract: &Contract, actions: &[ApprovalAction]) -> Result<()> {
    if let Some(o) = contract
        .outcomes
        .iter()
        .find(|o| !actions.iter().any(|a| a.as_str() == o.as_str()))
    {
        return Err(node_err(
            node,
            format!(
                "outcomes: \"{o}\" is not one of the gate's actions (an approval's outcome is its action)"
            ),
        ));
    }
    Ok(())
}

/// `onTimeout: "approve"` is recorded as `reject`: a timeout never grants (RFC 0093).
fn never_approve_on_timeout(data: &mut Value) {
    if data.get("onTimeout").and_then(Value::as_str) == Some("approve") {
        data["onTimeout"] = json!("reject");
    }
}

fn approval_gate(node: &str, config: &Value) -> Result<Compiled> {
    check_text(node, config, "title", true)?;
    check_text(node, config, "description", false)?;
    refuse_bound_rules(node, config, "config")?;
    let rules = ApprovalRules::from_config(config).map_err(|e| node_err(node, format!("config.{e}")))?;
    let mut data = json!({
        "artifactId": config.get("artifactId").and_then(Value::as_str).unwrap_or(node),
        "artifactType": config.get("artifactType").and_then(Value::as_str).unwrap_or("approval"),
        "title": config["title"],
        "actions": rules.actions,
    });
    for k in ["description", "artifactData", "audience"] {
        if let Some(v) = config.get(k) {
            data[k] = v.clone();
        }
    }
    for k in RULE_MEMBERS.iter().skip(1) {
        if let Some(v) = config.get(*k) {
            data[*k] = v.clone();
        }
    }
    never_approve_on_timeout(&mut data);
    let reads = check_bindings(node, &data, "config")?;
    let contract = contract_from(
        node,
        config,
        rules.actions.iter().map(|a| a.to_string()).collect(),
        approval_resume_schema(&rules.actions),
    )?;
    check_approval_outcomes(node, contract.contract(), &rules.actions)?;
    check_static_payload(node, InterruptKind::Approval, &data, contract.contract())?;
    let bound = binding::has_bindings(&data);
    Ok(Compiled {
        behaviour: NodeBehaviour::Interrupt(Box::new(InterruptSpec::new(
            InterruptKind::Approval,
            data,
            contract,
            timeout(node, config)?,
            Some(rules),
            bound,
        )?)),
        reads,
    })
}

fn check_questions(node: &str, questions: &[Value]) -> Result<()> {
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
        if !(q.get("question").is_some_and(|t| t.is_string() || is_bound(t))) {
            return Err(node_err(
                node,
                format!("config.questions[{i}].question is required"),
            ));
        }
        if let Some(s) = q.get("schema") {
            // The answer's schema is the definition's: checked for cost at
            // registration, never chosen by a run's inputs.
            if binding::has_bindings(s) {
                return Err(node_err(
                    node,
                    format!("config.questions[{i}].schema cannot be bound: how an answer is checked is fixed at registration"),
                ));
            }
            jsonschema::meta::validate(s).map_err(|e| {
                node_err(
                    node,
                    format!("config.questions[{i}].schema: invalid JSON Schema: {e}"),
                )
            })?;
            // Compiled as an answer will be checked (its patterns included).
            crate::contract::build_validator(s)
                .map_err(|e| node_err(node, format!("config.questions[{i}].schema: {e}")))?;
        }
        if let Some(found) = secrets::solicited_by_question(q) {
            return Err(node_err(
                node,
                format!("config.questions[{i}]: {found} asks for credential material; no interrupt may solicit it (use a credential interrupt)"),
            ));
        }
    }
    Ok(())
}

fn clarification_gate(node: &str, config: &Value) -> Result<Compiled> {
    let questions = config
        .get("questions")
        .and_then(Value::as_array)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| node_err(node, "config.questions is required (a non-empty array)"))?;
    check_questions(node, questions)?;
    let mut data = json!({ "questions": questions });
    if let Some(c) = config.get("contextType") {
        data["contextType"] = c.clone();
    }
    let reads = check_bindings(node, &data, "config")?;
    let contract = contract_from(node, config, vec!["submitted".into()], object_schema())?;
    check_static_payload(node, InterruptKind::Clarification, &data, contract.contract())?;
    let bound = binding::has_bindings(&data);
    Ok(Compiled {
        behaviour: NodeBehaviour::Interrupt(Box::new(InterruptSpec::new(
            InterruptKind::Clarification,
            data,
            contract,
            timeout(node, config)?,
            None,
            bound,
        )?)),
        reads,
    })
}

/// The closed resume of a credential interrupt (RFC 0199): exactly `{outcome}`.
pub fn credential_resume_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["outcome"],
        "properties": {"outcome": {"enum": ["authorized", "declined"]}}
    })
}

fn capability_required(node: &str, kind: InterruptKind, capability: &str) -> EngineError {
    EngineError::CapabilityRequired {
        capability: capability.to_string(),
        message: format!(
            "node \"{node}\": kind {} needs the {capability} capability, which this instance does not offer",
            kind.as_str()
        ),
    }
}

fn interrupt_node(node: &str, config: &Value, caps: &Capabilities) -> Result<Compiled> {
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
    match kind {
        InterruptKind::ConversationStart
        | InterruptKind::ConversationExchange
        | InterruptKind::ConversationClose
            if !caps.conversation =>
        {
            return Err(capability_required(node, kind, "conversationPrimitive"))
        }
        InterruptKind::Credential if !caps.credential => {
            return Err(capability_required(node, kind, "oauth.credentialInterrupt"))
        }
        _ => {}
    }
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
        never_approve_on_timeout(&mut data);
    }
    for f in kind.required_data_fields() {
        if data.get(*f).is_none() {
            return Err(node_err(
                node,
                format!("config.data.{f} is required for kind {kind_str}"),
            ));
        }
    }
    if kind == InterruptKind::Approval {
        refuse_bound_rules(node, &data, "config.data")?;
    }
    let reads = check_bindings(node, &data, "config.data")?;
    let approval = if kind == InterruptKind::Approval {
        Some(ApprovalRules::from_config(&data).map_err(|e| node_err(node, format!("config.data.{e}")))?)
    } else {
        None
    };
    check_kind_data(node, kind, &data)?;
    if kind == InterruptKind::Clarification {
        if is_bound(&data["questions"]) {
            return Err(node_err(
                node,
                "config.data.questions cannot be bound as a whole (each answer's schema is fixed at registration); bind a question's text instead",
            ));
        }
        if let Some(q) = data["questions"].as_array() {
            check_questions(node, q)?;
        }
    }
    let contract = match (&approval, kind) {
        (Some(r), _) => {
            let c = contract_from(
                node,
                config,
                r.actions.iter().map(|a| a.to_string()).collect(),
                approval_resume_schema(&r.actions),
            )?;
            check_approval_outcomes(node, c.contract(), &r.actions)?;
            c
        }
        (None, InterruptKind::Credential) => credential_contract(node, config)?,
        (None, InterruptKind::ConversationExchange) => exchange_contract(node, config, &data)?,
        (None, InterruptKind::ExternalEvent) => {
            contract_from(node, config, vec!["received".into()], object_schema())?
        }
        _ => contract_from(node, config, vec!["submitted".into()], object_schema())?,
    };
    check_static_payload(node, kind, &data, contract.contract())?;
    let bound = binding::has_bindings(&data);
    Ok(Compiled {
        behaviour: NodeBehaviour::Interrupt(Box::new(InterruptSpec::new(
            kind,
            data,
            contract,
            timeout(node, config)?,
            approval,
            bound,
        )?)),
        reads,
    })
}

/// A credential interrupt resumes with exactly `{outcome}`: a definition cannot widen it.
fn credential_contract(node: &str, config: &Value) -> Result<CompiledContract> {
    let closed = credential_resume_schema();
    if let Some(declared) = config.get("resumeSchema") {
        if *declared != closed {
            return Err(EngineError::Validation {
                field: Some(format!("nodes.{node}")),
                details: Some(json!({ "nodeId": node, "resumeSchema": closed })),
                message: format!(
                    "node \"{node}\": resumeSchema: a credential interrupt resumes with exactly {{outcome: authorized|declined}} and carries no credential; leave resumeSchema out or declare exactly that schema"
                ),
            });
        }
    }
    if config.get("outcomes").is_some() {
        return Err(node_err(
            node,
            "outcomes: a credential interrupt's outcomes are authorized and declined",
        ));
    }
    let contract = Contract {
        request_schema: config.get("requestSchema").cloned().unwrap_or_else(object_schema),
        resume_schema: closed,
        outcomes: vec!["authorized".into(), "declined".into()],
        typed: true,
        outcomes_declared: true,
    };
    compile_contract(node, contract)
}

/// A conversation turn's answer is validated against `outcomeSchema`, its resume schema.
fn exchange_contract(node: &str, config: &Value, data: &Value) -> Result<CompiledContract> {
    match data.get("outcomeSchema") {
        None => contract_from(node, config, vec!["submitted".into()], object_schema()),
        Some(s) if binding::has_bindings(s) => Err(node_err(
            node,
            "config.data.outcomeSchema cannot be bound: the answer's shape is fixed at registration",
        )),
        Some(s) => {
            if config.get("resumeSchema").is_some_and(|r| r != s) {
                return Err(node_err(
                    node,
                    "config.data.outcomeSchema and config.resumeSchema differ: declare the answer's shape once (outcomeSchema)",
                ));
            }
            let mut with_outcome = config.clone();
            with_outcome["resumeSchema"] = s.clone();
            contract_from(node, &with_outcome, vec!["submitted".into()], object_schema())
        }
    }
}

fn check_kind_data(node: &str, kind: InterruptKind, data: &Value) -> Result<()> {
    let bad = |m: &str| Err(node_err(node, format!("config.data.{m}")));
    let fixed = |f: &str| data.get(f).filter(|v| !is_bound(v));
    match kind {
        InterruptKind::ExternalEvent => {
            if fixed("correlation").is_some_and(|c| !c.is_object()) {
                return bad("correlation must be an object");
            }
            if fixed("eventType").is_some_and(|c| !c.is_string()) {
                return bad("eventType must be a string");
            }
            Ok(())
        }
        InterruptKind::LowConfidence => {
            for f in ["threshold", "observed"] {
                if let Some(v) = fixed(f) {
                    match v.as_f64() {
                        Some(x) if (0.0..=1.0).contains(&x) => {}
                        _ => return bad(&format!("{f} must be a number between 0 and 1")),
                    }
                }
            }
            Ok(())
        }
        InterruptKind::Credential => {
            if fixed("connectUrl").is_some_and(|u| !u.as_str().is_some_and(|u| u.starts_with("https://"))) {
                return bad("connectUrl must be an https URL");
            }
            if fixed("reason")
                .is_some_and(|r| !matches!(r.as_str(), Some("missing" | "expired" | "insufficient_scope")))
            {
                return bad("reason must be missing, expired or insufficient_scope");
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The built-in resume schema of an approval gate: the spec's resume shape,
/// with `action` limited to the gate's actions.
pub fn approval_resume_schema(actions: &[ApprovalAction]) -> Value {
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

/// The built-in resume of a `low-confidence` escalation: confirm the agent's
/// decision, or replace it with `decision`.
fn decision_resume_schema() -> Value {
    json!({
        "type": "object",
        "required": ["outcome"],
        "properties": {
            "outcome": {"type": "string", "enum": ["confirmed", "replaced"]},
            "decision": {},
            "comment": {"type": "string"}
        }
    })
}

fn agent_decision(node: &str, config: &Value, inputs: &Map<String, Value>) -> Result<Compiled> {
    let agent_id = config
        .get("agentId")
        .and_then(Value::as_str)
        .filter(|a| crate::ids::is_node_id(a))
        .ok_or_else(|| node_err(node, "config.agentId is required (^[A-Za-z0-9._~:-]{1,128}$)"))?;
    for input in ["decision", "confidence"] {
        if !inputs.contains_key(input) {
            return Err(node_err(
                node,
                format!("core.agentDecision needs an inputs.{input} binding (the agent's {input})"),
            ));
        }
    }
    let threshold = match config.get("threshold") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => {
                return Err(node_err(
                    node,
                    "config.threshold must be a number between 0 and 1",
                ))
            }
        },
    };
    if config.get("outcomes").is_some() {
        return Err(node_err(
            node,
            "outcomes: an agent decision's outcomes are confirmed and replaced",
        ));
    }
    let mut with_outcomes = config.clone();
    with_outcomes["outcomes"] = json!(["confirmed", "replaced"]);
    let contract = contract_from(node, &with_outcomes, Vec::new(), decision_resume_schema())?;
    Ok(plain(NodeBehaviour::Decision(Box::new(DecisionSpec {
        agent_id: agent_id.to_string(),
        threshold,
        escalation: InterruptSpec::new(
            InterruptKind::LowConfidence,
            json!({ "agentId": agent_id }),
            contract,
            timeout(node, config)?,
            None,
            // Its data is the agent's, filled at run time (and checked then).
            true,
        )?,
    }))))
}
