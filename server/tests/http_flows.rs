//! Conformance-style flows (scenarios section H and the token-free parts of
//! section I) over HTTP, against the real binary and its conformance fixtures.

mod common;

use common::*;
use serde_json::{json, Value};

/// Asserts the RFC 0223 rejection record of a failed run at `gate`.
fn assert_rejected_at_gate(snapshot: &Value, events: &[Value], action: &str) {
    assert_v2_snapshot(snapshot);
    assert_v2_event_payloads(events);
    assert_eq!(snapshot["status"], "failed", "{snapshot}");
    assert_eq!(snapshot["error"]["code"], "approval_rejected", "{snapshot}");
    assert!(
        snapshot["error"].get("retryable").is_none(),
        "the snapshot error is closed"
    );
    let resolved = of_type(events, "interrupt.resolved", Some("gate"));
    assert_eq!(resolved.len(), 1, "{events:?}");
    assert_eq!(resolved[0]["payload"]["action"], action);
    assert_eq!(resolved[0]["payload"]["decision"], "rejected");
    let failed = of_type(events, "node.failed", Some("gate"));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["payload"]["error"]["code"], "approval_rejected");
    assert_eq!(failed[0]["payload"]["error"]["retryable"], false);
    let run_failed = of_type(events, "run.failed", None);
    assert_eq!(run_failed.len(), 1);
    assert_eq!(run_failed[0]["payload"]["failedNodeId"], "gate");
    assert_eq!(run_failed[0]["payload"]["error"]["code"], "approval_rejected");
    assert_eq!(count(events, "run.completed"), 0);
    assert_eq!(count(events, "node.started"), 1, "the gate is never retried");
    assert_eq!(types(events).last().unwrap(), "run.failed");
}

#[tokio::test]
async fn rd1_to_rd3_reject_fails_the_run_with_approval_rejected() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    assert_eq!(
        s.wait_status(&run, "waiting-approval", 10).await["status"],
        "waiting-approval"
    );
    let r = s
        .resolve(&run, "gate", OWNER, json!({"action": "reject", "feedback": "no"}))
        .await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "failed");
    let snap = s.wait_status(&run, "failed", 10).await;
    let events = s.events(&run).await;
    assert_rejected_at_gate(&snap, &events, "reject");
    let resolved = of_type(&events, "interrupt.resolved", None)[0];
    assert_eq!(resolved["payload"]["resolvedBy"]["subjectId"], "owner");
    assert_eq!(resolved["payload"]["resumeValue"]["feedback"], "no");
}

#[tokio::test]
async fn rd5_reject_routed_runs_on_reject_and_never_on_accept() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval-reject-routed").await;
    assert_eq!(s.snapshot(&run).await["currentNodeId"], "gate");
    s.resolve(&run, "gate", OWNER, json!({"action": "reject"}))
        .await
        .expect(200, None);
    let snap = s.wait_status(&run, "completed", 10).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert!(snap.get("error").is_none());
    let events = s.events(&run).await;
    let failed = of_type(&events, "node.failed", Some("gate"));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["payload"]["error"]["code"], "approval_rejected");
    assert_eq!(failed[0]["payload"]["error"]["retryable"], false);
    assert_eq!(of_type(&events, "node.completed", Some("on-reject")).len(), 1);
    assert!(of_type(&events, "node.started", Some("on-accept")).is_empty());
    assert!(of_type(&events, "node.completed", Some("on-accept")).is_empty());
    assert_eq!(of_type(&events, "node.skipped", Some("on-accept")).len(), 1);
    assert_eq!(count(&events, "run.failed"), 0);
    assert_eq!(types(&events).last().unwrap(), "run.completed");
}

async fn timeout_flow(workflow: &str) {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create(workflow).await;
    let snap = s.snapshot(&run).await;
    assert_eq!(snap["status"], "waiting-approval");
    let view = s.interrupt(&run, "gate").await;
    assert!(view["deadline"].is_string(), "{view}");
    // Real time: the 1500 ms deadline passes and the timer (every 50 ms) fires.
    let snap = s.wait_status(&run, "failed", 15).await;
    let events = s.events(&run).await;
    assert_rejected_at_gate(&snap, &events, "timeout");
    let resolved = &of_type(&events, "interrupt.resolved", None)[0]["payload"];
    assert_eq!(resolved["action"], "timeout");
    assert_eq!(resolved["decision"], "rejected");
    assert_eq!(resolved["reason"], "timeout");
    assert!(resolved.get("resolvedBy").is_none(), "{resolved}");
    // Too late for anyone now.
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["status"], "resolved");
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 1);
}

#[tokio::test]
async fn rd6_timeout_rejects_and_fails_the_run() {
    timeout_flow("conformance-approval-timeout").await;
}

#[tokio::test]
async fn rd7_timeout_with_on_timeout_approve_never_grants() {
    timeout_flow("conformance-approval-timeout-approve").await;
}

#[tokio::test]
async fn rd8_loopback_reasks_with_a_new_key_and_one_resolution() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval-reject-loopback",
                   "configurable": {"version": 1, "run": {"recursionLimit": 20}}}),
        )
        .await;
    assert_eq!(
        s.wait_status(&run, "waiting-approval", 10).await["currentNodeId"],
        "gate"
    );
    let r = s.resolve(&run, "gate", OWNER, json!({"action": "reject"})).await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "waiting-approval");
    let snap = s.snapshot(&run).await;
    assert_eq!(snap["status"], "waiting-approval");
    assert_eq!(snap["currentNodeId"], "gate");
    assert_eq!(snap["configurable"]["run"]["recursionLimit"], 20);
    let events = s.events(&run).await;
    let requested = of_type(&events, "interrupt.requested", Some("gate"));
    assert_eq!(requested.len(), 2, "{:?}", types(&events));
    let k1 = requested[0]["payload"]["key"].as_str().unwrap();
    let k2 = requested[1]["payload"]["key"].as_str().unwrap();
    assert_ne!(k1, k2);
    assert_eq!(count(&events, "interrupt.resolved"), 1);
    assert_eq!(of_type(&events, "node.completed", Some("revise")).len(), 1);
    // The inspection shows the second visit, pending and without votes.
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["key"], k2);
    assert_eq!(view["status"], "pending");
    assert!(view["votes"].as_array().unwrap().is_empty());
    // Cleanup as the scenario does; the second interrupt is closed with the run.
    s.post(&format!("/runs/{}/cancel", seg(&run)), OWNER, &json!({}))
        .await
        .expect(200, None);
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 1);
}

#[tokio::test]
async fn loopback_accept_on_the_second_visit_completes() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval-reject-loopback",
                   "configurable": {"version": 1, "run": {"recursionLimit": 20}}}),
        )
        .await;
    s.resolve(&run, "gate", OWNER, json!({"action": "reject"}))
        .await
        .expect(200, None);
    let r = s.resolve(&run, "gate", OWNER, json!({"action": "accept"})).await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "completed");
    let events = s.events(&run).await;
    let resolved = of_type(&events, "interrupt.resolved", Some("gate"));
    assert_eq!(resolved.len(), 2);
    assert_eq!(resolved[0]["payload"]["decision"], "rejected");
    assert_eq!(resolved[1]["payload"]["decision"], "granted");
}

#[tokio::test]
async fn recursion_limit_stops_the_loopback() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval-reject-loopback",
                   "configurable": {"version": 1, "run": {"recursionLimit": 2}}}),
        )
        .await;
    for _ in 0..2 {
        s.resolve(&run, "gate", OWNER, json!({"action": "reject"}))
            .await
            .expect(200, None);
    }
    let snap = s.wait_status(&run, "failed", 10).await;
    assert_eq!(snap["status"], "failed");
    assert_eq!(snap["error"]["code"], "recursion_limit_exceeded");
}

#[tokio::test]
async fn ic1_clarification_resolves_with_answers() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-clarification").await;
    let snap = s.wait_status(&run, "waiting-input", 10).await;
    assert_eq!(snap["status"], "waiting-input");
    assert_eq!(snap["currentNodeId"], "ask");
    let missing = s.resolve(&run, "ask", OWNER, json!({"answers": {}})).await;
    missing.expect(400, Some("validation_error"));
    assert_eq!(missing.body["details"]["field"], "resumeValue.answers.q1");
    let r = s
        .resolve(&run, "ask", OWNER, json!({"answers": {"q1": "blue"}}))
        .await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "completed");
    assert_eq!(s.wait_status(&run, "completed", 10).await["status"], "completed");
    let events = s.events(&run).await;
    let requested = of_type(&events, "interrupt.requested", Some("ask"));
    assert_eq!(requested[0]["payload"]["kind"], "clarification");
    assert_eq!(requested[0]["payload"]["data"]["questions"][0]["id"], "q1");
    let resolved = of_type(&events, "interrupt.resolved", Some("ask"));
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["payload"]["resumeValue"]["answers"]["q1"], "blue");
    // The v2 reference host's unwrapped shape is accepted too.
    let run = s.create("conformance-clarification").await;
    s.resolve(&run, "ask", OWNER, json!({"q1": "green"}))
        .await
        .expect(200, None);
    assert_eq!(s.wait_status(&run, "completed", 10).await["status"], "completed");
}

#[tokio::test]
async fn noop_fixture_completes() {
    let (s, _dir) = Server::start_fresh().await;
    let r = s
        .post("/runs", OWNER, &json!({"workflowId": "conformance-noop"}))
        .await;
    r.expect(201, None);
    let run = r.body["runId"].as_str().unwrap().to_string();
    let snap = s.wait_status(&run, "completed", 5).await;
    assert_eq!(snap["status"], "completed");
    let events = s.events(&run).await;
    assert_eq!(
        types(&events),
        ["run.started", "node.started", "node.completed", "run.completed"]
    );
    assert_eq!(events[3]["payload"]["outputs"], json!({}));
}

#[tokio::test]
async fn cancellable_fixture_completes_by_itself_after_a_short_delay() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-cancellable", "inputs": {"delayMs": 300}}),
        )
        .await;
    let snap = s.wait_status(&run, "completed", 15).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let events = s.events(&run).await;
    assert_eq!(of_type(&events, "node.completed", Some("wait")).len(), 1);
    assert_eq!(types(&events).last().unwrap(), "run.completed");
}

#[tokio::test]
async fn cancellable_fixture_with_a_long_delay_is_cancelled() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-cancellable", "inputs": {"delayMs": 60000}}),
        )
        .await;
    assert_eq!(s.snapshot(&run).await["status"], "running");
    let c = s
        .post(
            &format!("/runs/{}/cancel", seg(&run)),
            OWNER,
            &json!({"reason": "conformance-test"}),
        )
        .await;
    c.expect(200, None);
    let status = c.body["status"].as_str().unwrap();
    assert!(status == "cancelled" || status == "cancelling", "{}", c.body);
    let snap = s.wait_status(&run, "cancelled", 10).await;
    assert_eq!(snap["status"], "cancelled");
    let events = s.events(&run).await;
    assert_eq!(of_type(&events, "node.cancelled", Some("wait")).len(), 1);
    let cancelled = of_type(&events, "run.cancelled", None);
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0]["payload"]["reason"], "conformance-test");
    assert_eq!(count(&events, "run.completed"), 0);
}
