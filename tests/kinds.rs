//! Engine tests of the interrupt kinds and of routing on decisions (bound
//! data, edge conditions, outcomes, conversations, low confidence,
//! credentials), against a real database (SQLite, or PostgreSQL with
//! `TOLLGATE_TEST_POSTGRES`).

use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use tollgate::auth::Scope;
use tollgate::definition::Capabilities;
use tollgate::{Actor, CreateRun, Engine, EngineError, EngineOptions, ManualClock, Principal, RunId};

struct Kinds {
    engine: Engine,
    _dir: tempfile::TempDir,
}

async fn open(capabilities: Capabilities) -> Kinds {
    let dir = tempfile::tempdir().unwrap();
    let url = tollgate::store::testing::database_url(&dir.path().join("k.db"))
        .await
        .unwrap();
    let mut opts = EngineOptions::new(url);
    opts.clock = Arc::new(ManualClock::new(1_800_000_000_000));
    opts.capabilities = capabilities;
    let engine = Engine::open(opts).await.unwrap();
    let kinds = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/kinds");
    for (path, r) in engine.load_workflow_dir(&kinds).await {
        if let Err(e) = r {
            // Only a kind the instance does not offer may be refused.
            assert!(
                matches!(e, EngineError::CapabilityRequired { .. }),
                "{}: {e}",
                path.display()
            );
        }
    }
    for id in ["owner", "ann"] {
        let p = Principal {
            id: id.into(),
            tenant: "acme".into(),
            name: id.into(),
            email: None,
            groups: vec![],
            roles: vec![],
            is_override: false,
        };
        engine.upsert_principal(p).await.unwrap();
    }
    Kinds { engine, _dir: dir }
}

impl Kinds {
    async fn actor(&self, id: &str) -> Actor {
        let scopes = vec![
            Scope::RunsCreate,
            Scope::RunsRead,
            Scope::RunsCancel,
            Scope::ApprovalsRespond,
        ];
        Actor::api_key(self.engine.principal(id).await.unwrap().unwrap(), scopes)
    }

    async fn create(&self, workflow: &str, inputs: Value) -> Result<RunId, EngineError> {
        let req: CreateRun =
            serde_json::from_value(json!({"workflowId": workflow, "inputs": inputs})).unwrap();
        let owner = self.actor("owner").await;
        self.engine
            .create_run(req, &owner, None)
            .await
            .and_then(|o| o.result)
            .map(|c| c.run_id)
    }

    async fn start(&self, workflow: &str, inputs: Value) -> RunId {
        self.create(workflow, inputs).await.unwrap()
    }

    async fn resolve(&self, run: &RunId, node: &str, rv: Value) -> Result<tollgate::Resolved, EngineError> {
        let ann = self.actor("ann").await;
        self.engine
            .resolve(run, node, rv, &ann, None)
            .await
            .and_then(|o| o.result)
    }

    async fn snapshot(&self, run: &RunId) -> Value {
        self.engine
            .snapshot(run, &self.actor("owner").await)
            .await
            .unwrap()
    }

    async fn events(&self, run: &RunId) -> Vec<tollgate::RunEvent> {
        let owner = self.actor("owner").await;
        self.engine.events_after(run, &owner, -1, 10_000).await.unwrap().0
    }

    async fn event(&self, run: &RunId, kind: &str) -> Option<Value> {
        let all = self.events(run).await;
        all.into_iter()
            .rev()
            .find(|e| e.event_type.as_str() == kind)
            .map(|e| e.payload)
    }

    async fn types(&self, run: &RunId) -> Vec<String> {
        self.events(run)
            .await
            .iter()
            .map(|e| e.event_type.to_string())
            .collect()
    }

    async fn payload(&self, run: &RunId, node: &str) -> Value {
        let owner = self.actor("owner").await;
        self.engine
            .inspect_interrupt(run, node, &owner)
            .await
            .unwrap()
            .payload
    }

    /// A node's status as its last `node.*` event says.
    async fn node_status(&self, run: &RunId, node: &str) -> String {
        let all = self.events(run).await;
        all.iter()
            .rev()
            .filter(|e| e.node_id.as_deref() == Some(node))
            .find_map(|e| match e.event_type.as_str() {
                "node.completed" => Some("completed"),
                "node.failed" => Some("failed"),
                "node.skipped" => Some("skipped"),
                "node.suspended" => Some("suspended"),
                "node.cancelled" => Some("cancelled"),
                _ => None,
            })
            .unwrap_or("idle")
            .to_string()
    }

    async fn check_log(&self, run: &RunId) {
        let diff = self.engine.verify_projection(run).await.unwrap();
        assert!(diff.is_empty(), "projection differs from the log: {diff:?}");
    }
}

fn field_of(r: Result<tollgate::Resolved, EngineError>) -> String {
    match r {
        Err(EngineError::Validation { field, .. }) => field.unwrap_or_default(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[tokio::test]
async fn bound_data_carries_each_runs_values() {
    let k = open(Capabilities::default()).await;
    let one = k.start("kind-external-event", json!({"orderId": "o-17"})).await;
    let two = k.start("kind-external-event", json!({"orderId": "o-18"})).await;
    assert_eq!(
        k.payload(&one, "paid").await["data"]["correlation"],
        json!({"orderId": "o-17"})
    );
    assert_eq!(
        k.payload(&two, "paid").await["data"]["correlation"],
        json!({"orderId": "o-18"})
    );
    // Each run is matched by its own order id.
    assert_eq!(
        field_of(
            k.resolve(&one, "paid", json!({"orderId": "o-18", "amount": 3}))
                .await
        ),
        "resumeValue.orderId"
    );
    k.resolve(&one, "paid", json!({"orderId": "o-17", "amount": 3}))
        .await
        .unwrap();
    assert_eq!(k.snapshot(&one).await["status"], "completed");

    let invoice = json!({"number": "INV-7", "amount": 120, "currency": "EUR", "supplier": "Acme <GmbH>"});
    let run = k.start("kind-approval-routed", json!({"invoice": invoice})).await;
    let data = k.payload(&run, "review").await["data"].clone();
    assert_eq!(data["title"], "Approve invoice INV-7 (120 EUR)");
    assert_eq!(data["description"], "Supplier: Acme <GmbH>");
    assert_eq!(data["artifactData"], invoice);
    k.check_log(&run).await;
}

#[tokio::test]
async fn a_payload_that_cannot_be_bound_or_fails_its_kind_fails_the_run_naming_the_member() {
    let k = open(Capabilities::default()).await;
    // The template names an input the run did not give.
    // The template names a member the run's invoice does not have.
    let run = k
        .start(
            "kind-approval-routed",
            json!({"invoice": {"number": "INV-9", "amount": 1, "currency": "EUR"}}),
        )
        .await;
    let s = k.snapshot(&run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "validation_error");
    let msg = s["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("node \"review\": data.description:") && msg.contains("undefined"),
        "{msg}"
    );
    assert!(!k.types(&run).await.contains(&"interrupt.requested".to_string()));
    let failed = k.event(&run, "node.failed").await.unwrap();
    assert_eq!(failed["error"]["details"]["field"], "data.description");

    // A bound correlation that is not an object fails the closed per-kind schema.
    let run = k
        .start("kind-external-event", json!({"orderId": {"nested": true}}))
        .await;
    assert_eq!(k.snapshot(&run).await["status"], "waiting-external");
    k.engine
        .register_workflow(json!({"id": "bad-corr", "variables": [{"name": "c"}], "nodes": [{"id": "w", "typeId": "core.interrupt",
            "config": {"kind": "external-event", "data": {"eventType": "x", "correlation": {"$bind": {"type": "variable", "variableName": "c"}}}}}]}))
        .await
        .unwrap();
    let run = k.start("bad-corr", json!({"c": "o-1"})).await;
    let s = k.snapshot(&run).await;
    assert_eq!(s["status"], "failed");
    let failed = k.event(&run, "node.failed").await.unwrap();
    assert_eq!(
        failed["error"]["details"]["field"], "data.correlation",
        "{failed}"
    );
    assert!(!k.types(&run).await.contains(&"interrupt.requested".to_string()));
}

#[tokio::test]
async fn a_refine_loops_back_for_revision_and_a_reject_fails() {
    let k = open(Capabilities::default()).await;
    let invoice = json!({"number": "INV-1", "amount": 10, "currency": "EUR", "supplier": "S"});
    let run = k.start("kind-approval-routed", json!({"invoice": invoice})).await;
    k.resolve(
        &run,
        "review",
        json!({"action": "refine", "refineFeedback": {"scope": "whole", "text": "wrong VAT"}}),
    )
    .await
    .unwrap();
    // Sent back: revise ran, the gate asks again with a new key.
    assert_eq!(k.snapshot(&run).await["status"], "waiting-approval");
    assert_eq!(k.node_status(&run, "revise").await, "completed");
    assert!(k.payload(&run, "review").await["key"]
        .as_str()
        .unwrap()
        .ends_with(":1"));
    assert!(!k.types(&run).await.contains(&"run.failed".to_string()));
    // Accepted the second time: pay runs.
    k.resolve(&run, "review", json!({"action": "accept"}))
        .await
        .unwrap();
    let s = k.snapshot(&run).await;
    assert_eq!(s["status"], "completed");
    assert_eq!(k.node_status(&run, "pay").await, "completed");
    k.check_log(&run).await;

    // A plain reject takes no edge: the run fails with the gate's error.
    let run = k.start("kind-approval-routed", json!({"invoice": invoice})).await;
    k.resolve(&run, "review", json!({"action": "reject"}))
        .await
        .unwrap();
    let s = k.snapshot(&run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "approval_rejected");
    assert_ne!(k.node_status(&run, "revise").await, "completed");
    k.check_log(&run).await;
}

#[tokio::test]
async fn declared_outcomes_are_enforced_and_route_the_run() {
    let k = open(Capabilities::default()).await;
    let run = k.start("kind-custom", json!({"document": "scan-1.pdf"})).await;
    assert_eq!(
        k.payload(&run, "label").await["data"]["payload"],
        json!({"document": "scan-1.pdf"})
    );
    assert_eq!(
        field_of(k.resolve(&run, "label", json!({"note": "?"})).await),
        "resumeValue.outcome"
    );
    assert_eq!(k.snapshot(&run).await["status"], "waiting-approval");
    k.resolve(&run, "label", json!({"outcome": "contract"}))
        .await
        .unwrap();
    assert_eq!(k.snapshot(&run).await["status"], "completed");
    assert_eq!(k.node_status(&run, "file").await, "completed");
    assert_eq!(k.node_status(&run, "book").await, "skipped");

    let run = k.start("kind-custom", json!({"document": "scan-2.pdf"})).await;
    k.resolve(&run, "label", json!({"outcome": "invoice"}))
        .await
        .unwrap();
    assert_eq!(k.node_status(&run, "book").await, "completed");
    assert_eq!(k.node_status(&run, "file").await, "skipped");
    k.check_log(&run).await;
}

#[tokio::test]
async fn approvals_record_when_they_were_decided() {
    let k = open(Capabilities::default()).await;
    let invoice = json!({"number": "INV-2", "amount": 10, "currency": "EUR", "supplier": "S"});
    let run = k.start("kind-approval-routed", json!({"invoice": invoice})).await;
    k.resolve(&run, "review", json!({"action": "accept"}))
        .await
        .unwrap();
    let resolved = k.event(&run, "interrupt.resolved").await.unwrap();
    assert_eq!(resolved["resumeValue"]["decidedAt"], "2027-01-15T08:00:00.000Z");
    // A client's own decidedAt is kept.
    let run = k.start("kind-approval-routed", json!({"invoice": invoice})).await;
    k.resolve(
        &run,
        "review",
        json!({"action": "accept", "decidedAt": "2027-01-01T00:00:00Z"}),
    )
    .await
    .unwrap();
    let resolved = k.event(&run, "interrupt.resolved").await.unwrap();
    assert_eq!(resolved["resumeValue"]["decidedAt"], "2027-01-01T00:00:00Z");
}

#[tokio::test]
async fn a_conversation_is_opened_numbered_answered_against_its_schema_and_closed() {
    let k = open(Capabilities::default()).await;
    let run = k.start("kind-conversation", json!({"topic": "boots"})).await;
    let conv = format!("conv-{run}");
    let start = k.payload(&run, "open").await;
    assert_eq!(start["data"]["conversationId"], conv);
    assert_eq!(start["data"]["title"], "About boots");
    assert_eq!(
        k.event(&run, "conversation.opened").await.unwrap()["conversationId"],
        conv
    );
    k.resolve(&run, "open", json!({})).await.unwrap();
    let turn = k.payload(&run, "turn").await;
    assert_eq!(turn["data"]["prompt"], "Which size of boots do you need?");
    assert_eq!(turn["data"]["turnIndex"], 0);
    assert_eq!(
        field_of(k.resolve(&run, "turn", json!({"size": "XXL"})).await),
        "resumeValue.size"
    );
    k.resolve(&run, "turn", json!({"size": "M"})).await.unwrap();
    let exchanged = k.event(&run, "conversation.exchanged").await.unwrap();
    assert_eq!(
        exchanged,
        json!({"conversationId": conv, "turnIndex": 0, "outcome": {"size": "M"}})
    );
    k.resolve(&run, "close", json!({})).await.unwrap();
    let closed = k.event(&run, "conversation.closed").await.unwrap();
    assert_eq!(
        closed,
        json!({"conversationId": conv, "reason": "goal-reached", "turnCount": 1})
    );
    assert_eq!(k.snapshot(&run).await["status"], "completed");
    k.check_log(&run).await;
}

#[tokio::test]
async fn an_open_conversation_id_is_unique_in_its_tenant() {
    let k = open(Capabilities::default()).await;
    k.engine
        .register_workflow(
            json!({"id": "fixed-conv", "nodes": [{"id": "open", "typeId": "core.interrupt",
            "config": {"kind": "conversation.start", "data": {"conversationId": "support-42"}}}]}),
        )
        .await
        .unwrap();
    let first = k.start("fixed-conv", json!({})).await;
    // A tenant whose name differs in one character has its own ids.
    let other = Principal {
        id: "olga".into(),
        tenant: "acmf".into(),
        name: "olga".into(),
        email: None,
        groups: vec![],
        roles: vec![],
        is_override: false,
    };
    k.engine.upsert_principal(other.clone()).await.unwrap();
    let olga = Actor::api_key(other, vec![Scope::RunsCreate, Scope::RunsRead]);
    let req: CreateRun = serde_json::from_value(json!({"workflowId": "fixed-conv"})).unwrap();
    let theirs = k
        .engine
        .create_run(req, &olga, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(theirs.status, tollgate::RunStatus::WaitingInput);
    match k.create("fixed-conv", json!({})).await {
        Err(e @ EngineError::Conflict(_)) => {
            assert_eq!(e.http_status(), 409);
            assert!(e.to_string().contains("support-42"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing of the refused run was kept: once the first run ends, the id is free again.
    let owner = k.actor("owner").await;
    k.engine
        .cancel_run(&first, None, &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert!(k.event(&first, "conversation.closed").await.is_some());
    let again = k.start("fixed-conv", json!({})).await;
    assert_eq!(k.snapshot(&again).await["status"], "waiting-input");
    k.check_log(&first).await;
}

#[tokio::test]
async fn low_confidence_escalates_below_the_threshold_and_goes_on_above_it() {
    let k = open(Capabilities::default()).await;
    // Above the node's threshold (0.8): no interrupt, the agent's decision routes.
    let run = k
        .start(
            "kind-low-confidence",
            json!({"queue": "billing", "confidence": 0.93}),
        )
        .await;
    assert_eq!(k.snapshot(&run).await["status"], "completed");
    let decided = k.event(&run, "agent.decided").await.unwrap();
    assert_eq!(
        decided,
        json!({"agentId": "ticket-router", "decision": "billing", "confidence": 0.93})
    );
    assert_eq!(k.node_status(&run, "billing").await, "completed");
    assert!(!k.types(&run).await.contains(&"interrupt.requested".to_string()));

    // Below it: agent.decided, then the low-confidence interrupt and node.suspended{reason}.
    let run = k
        .start(
            "kind-low-confidence",
            json!({"queue": "billing", "confidence": 0.41}),
        )
        .await;
    assert_eq!(k.snapshot(&run).await["status"], "waiting-approval");
    let types = k.types(&run).await;
    let at = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(
        at("agent.decided") < at("interrupt.requested") && at("interrupt.requested") < at("node.suspended")
    );
    assert_eq!(
        k.event(&run, "node.suspended").await.unwrap()["reason"],
        "low-confidence"
    );
    let data = k.payload(&run, "route").await["data"].clone();
    assert_eq!(
        data,
        json!({"agentId": "ticket-router", "threshold": 0.8, "observed": 0.41, "decision": "billing"})
    );
    // Replacing needs the replacement, validated against the node's resumeSchema.
    assert_eq!(
        field_of(k.resolve(&run, "route", json!({"outcome": "replaced"})).await),
        "resumeValue.decision"
    );
    assert_eq!(
        field_of(
            k.resolve(
                &run,
                "route",
                json!({"outcome": "replaced", "decision": "nowhere"})
            )
            .await
        ),
        "resumeValue.decision"
    );
    k.resolve(
        &run,
        "route",
        json!({"outcome": "replaced", "decision": "technical"}),
    )
    .await
    .unwrap();
    assert_eq!(k.node_status(&run, "elsewhere").await, "completed");
    assert_eq!(k.node_status(&run, "billing").await, "skipped");
    k.check_log(&run).await;

    // The run's configurable.run.escalationThreshold wins over the node's.
    let req: CreateRun = serde_json::from_value(json!({"workflowId": "kind-low-confidence",
        "inputs": {"queue": "sales", "confidence": 0.6},
        "configurable": {"version": 1, "run": {"escalationThreshold": 0.5}}}))
    .unwrap();
    let owner = k.actor("owner").await;
    let run = k
        .engine
        .create_run(req, &owner, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id;
    assert_eq!(k.snapshot(&run).await["status"], "completed");
    // Confirming keeps the agent's decision.
    let run = k
        .start(
            "kind-low-confidence",
            json!({"queue": "billing", "confidence": 0.2}),
        )
        .await;
    k.resolve(&run, "route", json!({"outcome": "confirmed"}))
        .await
        .unwrap();
    assert_eq!(k.node_status(&run, "billing").await, "completed");
}

#[tokio::test]
async fn a_credential_interrupt_is_offered_only_when_configured_and_carries_no_credential() {
    let off = open(Capabilities::default()).await;
    assert!(matches!(
        off.create("kind-credential", json!({})).await,
        Err(EngineError::NotFound(_))
    ));
    let k = open(Capabilities::ALL).await;
    let run = k.start("kind-credential", json!({})).await;
    assert_eq!(k.snapshot(&run).await["status"], "waiting-input");
    assert_eq!(
        field_of(
            k.resolve(
                &run,
                "connect",
                json!({"outcome": "authorized", "accessToken": "abc"})
            )
            .await
        ),
        "resumeValue"
    );
    k.resolve(&run, "connect", json!({"outcome": "authorized"}))
        .await
        .unwrap();
    assert_eq!(k.node_status(&run, "sync").await, "completed");
    let run = k.start("kind-credential", json!({})).await;
    k.resolve(&run, "connect", json!({"outcome": "declined"}))
        .await
        .unwrap();
    let s = k.snapshot(&run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "connector_auth_declined");
}

#[tokio::test]
async fn a_conversation_thread_is_read_in_order_and_only_in_the_callers_tenant() {
    let k = open(Capabilities::default()).await;
    let run = k.start("kind-conversation", json!({"topic": "boots"})).await;
    k.resolve(&run, "open", json!({})).await.unwrap();
    k.resolve(&run, "turn", json!({"size": "M"})).await.unwrap();
    let owner = k.actor("owner").await;
    let thread = k
        .engine
        .conversation_thread(&run, "close", &owner)
        .await
        .unwrap()
        .expect("a conversation has a thread");
    assert_eq!(thread.conversation_id, format!("conv-{run}"));
    assert_eq!(thread.title.as_deref(), Some("About boots"));
    let entries: Vec<(&str, Option<&str>, Option<Value>, bool)> = thread
        .entries
        .iter()
        .map(|e| {
            (
                e.node_id.as_str(),
                e.prompt.as_deref(),
                e.answer.clone(),
                e.current,
            )
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            (
                "open",
                Some("I have a few questions before I go on."),
                None,
                false
            ),
            (
                "turn",
                Some("Which size of boots do you need?"),
                Some(json!({"size": "M"})),
                false
            ),
            ("close", None, None, true),
        ]
    );
    assert_eq!(thread.closed, None);
    k.resolve(&run, "close", json!({})).await.unwrap();
    let thread = k
        .engine
        .conversation_thread(&run, "close", &owner)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(thread.closed, Some(Some("goal-reached".into())));

    // Not a conversation: no thread.
    let other = k.start("kind-custom", json!({"document": "d"})).await;
    assert_eq!(
        k.engine
            .conversation_thread(&other, "label", &owner)
            .await
            .unwrap(),
        None
    );
    // Another tenant's caller reads nothing.
    k.engine
        .upsert_principal(Principal {
            id: "eve".into(),
            tenant: "elsewhere".into(),
            name: "eve".into(),
            email: None,
            groups: vec![],
            roles: vec![],
            is_override: false,
        })
        .await
        .unwrap();
    let eve = k.actor("eve").await;
    assert!(matches!(
        k.engine.conversation_thread(&run, "close", &eve).await,
        Err(EngineError::TenantMismatch)
    ));
}
