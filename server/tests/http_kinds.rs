//! The interrupt kinds over HTTP: capabilities in discovery and at
//! registration (422), bound data, declared outcomes, conversations (a
//! taken id is 409 at create), low confidence and credentials, against the
//! real binary with `workflows/kinds` loaded.

mod common;

use common::*;
use serde_json::{json, Value};

/// A server with `workflows/kinds` loaded and `[interrupts]` as given.
async fn start_with(interrupts: &str) -> (Server, TestDir) {
    let dir = TestDir::new();
    let path = dir.config_path();
    let kinds = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workflows/kinds")
        .canonicalize()
        .expect("kind fixtures");
    let text = std::fs::read_to_string(&path).unwrap();
    let conformance_dir = text
        .lines()
        .find(|l| l.starts_with("dirs = ["))
        .expect("a dirs line")
        .to_string();
    let dirs = conformance_dir.replacen(
        "]",
        &format!(", {}]", serde_json::to_string(&kinds.to_string_lossy()).unwrap()),
        1,
    );
    let text = text.replace(&conformance_dir, &dirs) + &format!("\n[interrupts]\n{interrupts}\n");
    std::fs::write(&path, text).unwrap();
    let server = Server::start(&dir).await;
    (server, dir)
}

fn kind_def(id: &str, config: Value) -> Value {
    json!({"id": id, "nodes": [{"id": "n", "typeId": "core.interrupt", "config": config}]})
}

#[tokio::test]
async fn discovery_and_registration_follow_the_configured_capabilities() {
    let (s, _dir) = start_with("conversation = false\ncredential = false").await;
    let d = s.get("/.well-known/openwop", OWNER).await;
    d.expect(200, None);
    assert!(d.body.get("conversationPrimitive").is_none(), "{}", d.body);
    assert!(d.body.get("oauth").is_none(), "{}", d.body);
    for (config, capability) in [
        (
            json!({"kind": "conversation.start", "data": {"conversationId": "c"}}),
            "conversationPrimitive",
        ),
        (
            json!({"kind": "credential", "data": {"provider": "p", "scopes": ["s"], "reason": "missing", "connectUrl": "https://x.example/c"}}),
            "oauth.credentialInterrupt",
        ),
    ] {
        let r = s
            .put("/workflows/needs-cap", ADMIN, &kind_def("needs-cap", config))
            .await;
        r.expect(422, Some("capability_required"));
        assert_eq!(r.body["details"]["capability"], capability, "{}", r.body);
        assert!(
            r.body["message"].as_str().unwrap().contains("node \"n\""),
            "{}",
            r.body
        );
    }
    // The shipped conversation and credential fixtures were not loaded.
    let r = s
        .post(
            "/runs",
            OWNER,
            &json!({"workflowId": "kind-conversation", "inputs": {"topic": "x"}}),
        )
        .await;
    r.expect(404, Some("not_found"));

    let (s, _dir) = start_with("credential = true").await;
    let d = s.get("/.well-known/openwop", OWNER).await;
    assert_eq!(d.body["conversationPrimitive"]["status"], "experimental");
    assert_eq!(d.body["oauth"]["status"], "experimental");
    assert_eq!(d.body["oauth"]["credentialInterrupt"], true);
}

#[tokio::test]
async fn bound_data_outcomes_and_routing_over_http() {
    let (s, _dir) = start_with("").await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "kind-external-event", "inputs": {"orderId": "o-55"}}),
        )
        .await;
    let i = s.interrupt(&run, "paid").await;
    assert_eq!(i["payload"]["data"]["correlation"], json!({"orderId": "o-55"}));
    s.resolve(&run, "paid", ANN, json!({"orderId": "o-54", "amount": 1}))
        .await
        .expect(400, Some("validation_error"));

    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "kind-custom", "inputs": {"document": "d.pdf"}}),
        )
        .await;
    let r = s.resolve(&run, "label", ANN, json!({"outcome": "maybe"})).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "resumeValue.outcome", "{}", r.body);
    s.resolve(&run, "label", ANN, json!({"outcome": "invoice"}))
        .await
        .expect(200, None);
    let events = s.events(&run).await;
    assert_v2_event_payloads(&events);
    assert_eq!(of_type(&events, "node.completed", Some("book")).len(), 1);
    assert_eq!(of_type(&events, "node.skipped", Some("file")).len(), 1);

    // A payload that cannot be bound fails the run naming the member; nothing is requested.
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "kind-approval-routed", "inputs": {"invoice": {"amount": 3}}}),
        )
        .await;
    let snap = s.snapshot(&run).await;
    assert_v2_snapshot(&snap);
    assert_eq!(snap["status"], "failed");
    assert!(
        snap["error"]["message"].as_str().unwrap().contains("data."),
        "{snap}"
    );
    assert_eq!(count(&s.events(&run).await, "interrupt.requested"), 0);
}

#[tokio::test]
async fn a_conversation_over_http_and_a_taken_id_refused_with_409() {
    let (s, _dir) = start_with("").await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "kind-conversation", "inputs": {"topic": "boots"}}),
        )
        .await;
    assert_eq!(s.snapshot(&run).await["status"], "waiting-input");
    s.resolve(&run, "open", ANN, json!({})).await.expect(200, None);
    let r = s.resolve(&run, "turn", ANN, json!({"size": "XL"})).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "resumeValue.size");
    s.resolve(&run, "turn", ANN, json!({"size": "S"}))
        .await
        .expect(200, None);
    s.resolve(&run, "close", ANN, json!({})).await.expect(200, None);
    let events = s.events(&run).await;
    assert_v2_event_payloads(&events);
    let t = types(&events);
    for kind in [
        "conversation.opened",
        "conversation.exchanged",
        "conversation.closed",
        "run.completed",
    ] {
        assert!(t.contains(&kind.to_string()), "{t:?}");
    }

    s.register(kind_def(
        "fixed-conv",
        json!({"kind": "conversation.start", "data": {"conversationId": "helpdesk-1"}}),
    ))
    .await;
    s.create("fixed-conv").await;
    let r = s.post("/runs", OWNER, &json!({"workflowId": "fixed-conv"})).await;
    r.expect(409, Some("run_state_conflict"));
    assert!(
        r.body["message"].as_str().unwrap().contains("helpdesk-1"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn low_confidence_and_credential_over_http() {
    let (s, _dir) = start_with("credential = true").await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "kind-low-confidence", "inputs": {"queue": "sales", "confidence": 0.3}}),
        )
        .await;
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    let i = s.interrupt(&run, "route").await;
    assert_eq!(i["payload"]["kind"], "low-confidence");
    assert_eq!(i["payload"]["data"]["observed"], 0.3);
    s.resolve(&run, "route", ANN, json!({"outcome": "confirmed"}))
        .await
        .expect(200, None);
    let events = s.events(&run).await;
    assert_v2_event_payloads(&events);
    let suspended = of_type(&events, "node.suspended", Some("route"));
    assert_eq!(suspended[0]["payload"]["reason"], "low-confidence");

    let run = s.create("kind-credential").await;
    let i = s.interrupt(&run, "connect").await;
    assert_eq!(
        i["payload"]["resumeSchema"],
        json!({"type": "object", "additionalProperties": false, "required": ["outcome"], "properties": {"outcome": {"enum": ["authorized", "declined"]}}})
    );
    let r = s
        .resolve(
            &run,
            "connect",
            ANN,
            json!({"outcome": "authorized", "refreshToken": "r"}),
        )
        .await;
    r.expect(400, Some("validation_error"));
    s.resolve(&run, "connect", ANN, json!({"outcome": "authorized"}))
        .await
        .expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "completed");
}
