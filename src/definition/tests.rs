//! Registration rules: what a definition may say, and how each refusal names the node.
use super::*;
use crate::contract::object_schema;

fn wf(nodes: Value, edges: Value) -> Result<Workflow> {
    compile(json!({"id": "w", "nodes": nodes, "edges": edges}))
}

/// As a definition offered for registration is compiled.
fn wf_new(nodes: Value, edges: Value) -> Result<Workflow> {
    compile_new(
        json!({"id": "w", "nodes": nodes, "edges": edges}),
        &Capabilities::ALL,
    )
}

fn message(r: Result<Workflow>) -> String {
    match r {
        Err(EngineError::Validation { message, .. }) => message,
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("accepted"),
    }
}

/// Compiles every `*.json` in `dir` (relative to the crate) under `caps`; how many there were.
fn compile_dir(dir: &str, caps: &Capabilities) -> usize {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let raw: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        compile_with(raw, caps).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        n += 1;
    }
    n
}

#[test]
fn loads_every_shipped_fixture() {
    assert!(compile_dir("workflows/conformance", &Capabilities::default()) >= 8);
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
    assert!(compile_dir("demo/workflows", &Capabilities::default()) >= 3);
}

#[test]
fn typed_only_when_a_schema_is_declared() {
    let w = wf(json!([
        {"id": "plain", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept", "reject"]}},
        {"id": "typed", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "resumeSchema": {"type": "object"}}}
    ]), json!([])).unwrap();
    let spec = |id: &str| match &w.node(id).unwrap().behaviour {
        NodeBehaviour::Interrupt(s) => s.contract.contract().clone(),
        _ => panic!(),
    };
    assert!(!spec("plain").typed);
    assert_eq!(spec("plain").outcomes, vec!["accept", "reject"]);
    assert!(spec("typed").typed);
}

fn refusal(r: Result<Workflow>) -> EngineError {
    match r {
        Err(e) => e,
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn bound_members_are_checked_at_registration_and_rules_cannot_be_bound() {
    let gate = |extra: Value| {
        let mut config = json!({"title": {"$bind": {"type": "template", "template": "Invoice {{ inputs.invoice }}"}}, "actions": ["accept"]});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        wf(
            json!([{"id": "g", "typeId": "core.approvalGate", "config": config}]),
            json!([]),
        )
    };
    let w = gate(json!({})).unwrap();
    let spec = w.nodes[0].behaviour.interrupt().unwrap();
    assert!(crate::binding::is_bound(&spec.data["title"]));
    assert!(message(gate(
        json!({"description": {"$bind": {"type": "template", "template": "{{ x"}}})
    ))
    .starts_with("node \"g\": config.description: template:"));
    let m = message(gate(
        json!({"approversList": {"$bind": {"type": "variable", "variableName": "approvers"}}}),
    ));
    assert!(m.contains("config.approversList cannot be bound"), "{m}");
    let m = message(wf(
        json!([{"id": "e", "typeId": "core.interrupt", "config": {"kind": "approval", "data": {"title": "t", "actions": ["accept"], "requiredApprovals": {"$bind": {"type": "static", "value": 1}}}}}]),
        json!([]),
    ));
    assert!(m.contains("config.data.requiredApprovals cannot be bound"), "{m}");
    // A nodeOutput binding must name a node of the workflow.
    let m = message(wf(
        json!([{"id": "e", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "x", "correlation": {"id": {"$bind": {"type": "nodeOutput", "nodeId": "ghost"}}}}}}]),
        json!([]),
    ));
    assert!(m.contains("reads unknown node \"ghost\""), "{m}");
    // A bound correlation is accepted; a fixed one must still be an object.
    assert!(wf(
        json!([{"id": "e", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "x", "correlation": {"$bind": {"type": "variable", "variableName": "c"}}}}}]),
        json!([])
    )
    .is_ok());
    assert!(message(wf(
        json!([{"id": "e", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "x", "correlation": "o-1"}}}]),
        json!([])
    ))
    .contains("correlation must be an object"));
}

#[test]
fn a_static_payload_is_checked_against_its_kind_at_registration() {
    let m = message(wf(
        json!([{"id": "c", "typeId": "core.interrupt", "config": {"kind": "custom", "data": {"customKind": "k", "extra": 1}}}]),
        json!([]),
    ));
    assert!(
        m.starts_with("node \"c\": the custom payload does not match its kind: interrupt.data: "),
        "{m}"
    );
    assert!(m.contains("extra"), "{m}");
    // onTimeout "approve" is recorded as reject: a timeout never grants.
    let w = wf(
        json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "onTimeout": "approve", "timeoutMs": 10}}]),
        json!([]),
    )
    .unwrap();
    assert_eq!(
        w.nodes[0].behaviour.interrupt().unwrap().data["onTimeout"],
        "reject"
    );
}

#[test]
fn waits_are_bounded_at_ten_years() {
    for (type_id, config) in [
        ("core.approvalGate", json!({"title": "t", "actions": ["accept"]})),
        ("core.delay", json!({})),
    ] {
        let member = if type_id == "core.delay" {
            "delayMs"
        } else {
            "timeoutMs"
        };
        let def = |ms: Value| {
            let mut config = config.clone();
            config[member] = ms;
            json!({"id": "w", "nodes": [{"id": "n", "typeId": type_id, "config": config}], "edges": []})
        };
        for too_long in [json!(MAX_WAIT_MS + 1), json!(i64::MAX), json!(u64::MAX)] {
            let m = message(compile_new(def(too_long.clone()), &Capabilities::ALL));
            assert_eq!(
                m,
                format!("node \"n\": {member} must be at most {MAX_WAIT_MS} (ten years)")
            );
            // A version stored before the bound still compiles: its runs go on.
            compile(def(too_long)).unwrap();
        }
        compile_new(def(json!(MAX_WAIT_MS)), &Capabilities::ALL).unwrap();
    }
}

#[test]
fn edges_take_conditions_and_refuse_members_they_do_not_support() {
    let nodes = json!([{"id": "a", "typeId": "core.noop"}, {"id": "b", "typeId": "core.noop"}]);
    let w = wf(
        nodes.clone(),
        json!([{"id": "ab", "sourceNodeId": "a", "targetNodeId": "b", "condition": "output.x > 1", "label": "big"}]),
    )
    .unwrap();
    assert_eq!(w.edges[0].condition.as_ref().unwrap().source(), "output.x > 1");
    for (member, value, says) in [
        ("sourceOutput", json!("out"), "sourceOutput is not supported"),
        ("targetInput", json!("in"), "targetInput is not supported"),
        ("weight", json!(3), "weight is not an edge member"),
        ("condition", json!("action =="), "condition:"),
        (
            "condition",
            json!({"op": "eq"}),
            "condition must be an expression",
        ),
    ] {
        let mut edge = json!({"id": "ab", "sourceNodeId": "a", "targetNodeId": "b"});
        edge[member] = value;
        match refusal(wf(nodes.clone(), json!([edge]))) {
            EngineError::Validation {
                message,
                field,
                details,
            } => {
                assert!(message.starts_with("edge \"ab\": "), "{message}");
                assert!(message.contains(says), "{message}");
                assert_eq!(field.as_deref(), Some(format!("edges[0].{member}").as_str()));
                assert_eq!(details.unwrap()["edgeId"], "ab");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn optional_kinds_need_their_capability() {
    let conversation = json!([{"id": "c", "typeId": "core.interrupt", "config": {"kind": "conversation.start", "data": {"conversationId": "x"}}}]);
    let credential = json!([{"id": "c", "typeId": "core.interrupt", "config": {"kind": "credential", "data": {"provider": "p", "scopes": ["s"], "connectUrl": "https://x.example/connect", "reason": "missing"}}}]);
    let none = Capabilities {
        conversation: false,
        credential: false,
    };
    for (nodes, capability) in [
        (&conversation, "conversationPrimitive"),
        (&credential, "oauth.credentialInterrupt"),
    ] {
        let raw = json!({"id": "w", "nodes": nodes});
        match compile_with(raw.clone(), &none) {
            Err(e @ EngineError::CapabilityRequired { .. }) => {
                assert_eq!(e.http_status(), 422);
                assert_eq!(e.code(), "capability_required");
                assert_eq!(e.details().unwrap()["capability"], capability);
            }
            other => panic!("{other:?}"),
        }
        assert!(compile_with(raw, &Capabilities::ALL).is_ok());
    }
    // The default instance offers conversations, not credential interrupts.
    assert!(compile_with(
        json!({"id": "w", "nodes": conversation}),
        &Capabilities::default()
    )
    .is_ok());
    assert!(compile_with(json!({"id": "w", "nodes": credential}), &Capabilities::default()).is_err());
}

#[test]
fn a_credential_interrupt_resumes_with_exactly_its_outcome() {
    let node = |resume: Option<Value>| {
        let mut config = json!({"kind": "credential", "data": {"provider": "p", "scopes": ["s"], "connectUrl": "https://x.example/c", "reason": "expired"}});
        if let Some(r) = resume {
            config["resumeSchema"] = r;
        }
        wf(
            json!([{"id": "c", "typeId": "core.interrupt", "config": config}]),
            json!([]),
        )
    };
    let w = node(None).unwrap();
    let c = &w.nodes[0].behaviour.interrupt().unwrap().contract;
    assert_eq!(c.contract().resume_schema, credential_resume_schema());
    assert!(c.validate_resume(&json!({"outcome": "authorized"})).is_ok());
    assert!(c
        .validate_resume(&json!({"outcome": "authorized", "accessToken": "x"}))
        .is_err());
    assert!(node(Some(credential_resume_schema())).is_ok());
    let widened = json!({"type": "object", "required": ["outcome"], "properties": {"outcome": {"enum": ["authorized", "declined"]}, "token": {"type": "string"}}});
    assert!(message(node(Some(widened))).contains("resumes with exactly {outcome"));
}

#[test]
fn no_interrupt_may_ask_for_credential_material() {
    let m = message(wf(
        json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "resumeSchema": {"type": "object", "required": ["action"], "properties": {"action": {"type": "string"}, "pin": {"type": "string", "format": "password"}}}}}]),
        json!([]),
    ));
    assert!(
        m.starts_with("node \"g\": resumeSchema: /properties/pin: format \"password\""),
        "{m}"
    );
    let m = message(wf(
        json!([{"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "region", "question": "Where?"}, {"id": "db_password", "question": "And?"}]}}]),
        json!([]),
    ));
    assert!(
        m.starts_with("node \"q\": config.questions[1]: id \"db_password\""),
        "{m}"
    );
    let m = message(wf(
        json!([{"id": "x", "typeId": "core.interrupt", "config": {"kind": "custom", "data": {"customKind": "k"}, "requestSchema": {"type": "object", "properties": {"apiKey": {"type": "string"}}}}}]),
        json!([]),
    ));
    assert!(m.contains("requestSchema: /properties/apiKey"), "{m}");
    let m = message(wf(
        json!([{"id": "x", "typeId": "core.interrupt", "config": {"kind": "conversation.exchange", "data": {"conversationId": "c", "prompt": "p", "outcomeSchema": {"type": "object", "properties": {"secret": {"type": "string"}}}}}}]),
        json!([]),
    ));
    assert!(m.contains("/properties/secret"), "{m}");
}

#[test]
fn an_exchange_answers_to_its_outcome_schema() {
    let w = wf(
        json!([{"id": "x", "typeId": "core.interrupt", "config": {"kind": "conversation.exchange", "data": {"conversationId": "c", "prompt": "Which size?", "outcomeSchema": {"type": "object", "required": ["size"], "properties": {"size": {"type": "string", "enum": ["S", "M"]}}}}}}]),
        json!([]),
    )
    .unwrap();
    let c = &w.nodes[0].behaviour.interrupt().unwrap().contract;
    assert!(c.validate_resume(&json!({"size": "M"})).is_ok());
    assert!(c.validate_resume(&json!({"size": "XL"})).is_err());
}

#[test]
fn an_agent_decision_needs_its_agent_and_inputs() {
    let node = |config: Value, inputs: Value| {
        wf(
            json!([{"id": "d", "typeId": "core.agentDecision", "config": config, "inputs": inputs}]),
            json!([]),
        )
    };
    let inputs = json!({"decision": {"type": "variable", "variableName": "route"}, "confidence": {"type": "variable", "variableName": "confidence"}});
    let w = node(json!({"agentId": "router", "threshold": 0.8}), inputs.clone()).unwrap();
    match &w.nodes[0].behaviour {
        NodeBehaviour::Decision(d) => {
            assert_eq!(d.threshold, Some(0.8));
            assert_eq!(d.escalation.kind, InterruptKind::LowConfidence);
            assert!(d.escalation.contract.contract().outcomes_declared);
        }
        other => panic!("{other:?}"),
    }
    assert!(message(node(json!({}), inputs.clone())).contains("config.agentId is required"));
    assert!(
        message(node(json!({"agentId": "a", "threshold": 2}), inputs)).contains("threshold must be a number")
    );
    assert!(message(node(
        json!({"agentId": "a"}),
        json!({"decision": {"type": "static", "value": 1}})
    ))
    .contains("inputs.confidence"));
}

#[test]
fn declared_outcomes_of_an_approval_are_its_actions() {
    let m = message(wf(
        json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept", "reject"], "outcomes": ["accept", "maybe"]}}]),
        json!([]),
    ));
    assert!(m.contains("\"maybe\" is not one of the gate's actions"), "{m}");
}

#[test]
fn loads_every_kind_fixture() {
    assert!(compile_dir("workflows/kinds", &Capabilities::ALL) >= 7);
}

#[test]
fn a_schema_pattern_too_costly_to_check_is_refused_where_it_stands() {
    // Matching this one simulates 1,002 states per byte: seconds on the
    // shared writer for a large answer (the security review's F1).
    let costly =
        json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "a[ab]{1000}[^ab]"}}});
    for (schema, said) in [
        ("resumeSchema", "resumeSchema"),
        ("requestSchema", "requestSchema"),
    ] {
        let m = message(wf_new(
            json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], schema: costly}}]),
            json!([]),
        ));
        assert!(
            m.starts_with(&format!(
                "node \"g\": {said}: pattern \"a[ab]{{1000}}[^ab]\" is too costly"
            )),
            "{m}"
        );
    }
    let m = message(wf_new(
        json!([{"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "code", "question": "?", "schema": {"type": "string", "pattern": "a[ab]{1000}[^ab]"}}]}}]),
        json!([]),
    ));
    assert!(
        m.contains("config.questions[0].schema: pattern") && m.contains("too costly"),
        "{m}"
    );
    // Anchored, the same repetition is cheap and accepted.
    wf_new(
        json!([{"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "code", "question": "?", "schema": {"type": "string", "pattern": "^a[ab]{1000}[^ab]"}}]}}]),
        json!([]),
    )
    .unwrap();
    // A limit for new definitions: a stored one compiles as it was accepted,
    // so its runs go on after an upgrade.
    wf(
        json!([{"id": "g", "typeId": "core.approvalGate", "config": {"title": "t", "actions": ["accept"], "resumeSchema": costly}},
               {"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "code", "question": "?", "schema": {"type": "string", "pattern": "a[ab]{1000}[^ab]"}}]}}]),
        json!([]),
    )
    .unwrap();
}

#[test]
fn a_questions_answer_schema_cannot_be_bound() {
    let bind = json!({"$bind": {"type": "variable", "variableName": "schema"}});
    let m = message(wf(
        json!([{"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "code", "question": "?", "schema": bind}]}}]),
        json!([]),
    ));
    assert!(m.contains("config.questions[0].schema cannot be bound"), "{m}");
    let m = message(wf(
        json!([{"id": "q", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "code", "question": "?", "schema": {"type": "string", "pattern": bind}}]}}]),
        json!([]),
    ));
    assert!(m.contains("config.questions[0].schema cannot be bound"), "{m}");
    let m = message(wf(
        json!([{"id": "q", "typeId": "core.interrupt", "config": {"kind": "clarification", "data": {"questions": bind}}}]),
        json!([]),
    ));
    assert!(
        m.contains("config.data.questions cannot be bound as a whole"),
        "{m}"
    );
    // A question's text may be bound.
    wf(
        json!([{"id": "q", "typeId": "core.interrupt", "config": {"kind": "clarification", "data": {"questions": [
            {"id": "code", "question": {"$bind": {"type": "template", "template": "Code for {{ inputs.who }}?"}}, "schema": {"type": "string"}}]}}}]),
        json!([]),
    )
    .unwrap();
}
