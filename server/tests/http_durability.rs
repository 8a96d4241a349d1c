//! Durability: SIGKILL the server and restart it on the same database.

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn state_survives_kill_9_and_a_deadline_missed_while_down_fires_after_restart() {
    let dir = TestDir::new();
    let mut s = Server::start(&dir).await;
    let done = s.create("conformance-approval").await;
    let pending = s.create("conformance-approval").await;
    let r = s.resolve(&done, "gate", OWNER, json!({"action": "accept"})).await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "completed");
    // Created last, so its 1500 ms deadline is still ahead when the server dies.
    let timed = s.create("conformance-approval-timeout").await;
    let timed_at = tokio::time::Instant::now();
    let delayed = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-cancellable", "inputs": {"delayMs": 1000}}),
        )
        .await;
    assert_eq!(s.snapshot(&timed).await["status"], "waiting-approval");
    assert_eq!(s.snapshot(&delayed).await["status"], "running");
    s.kill9();

    // Stay down until the deadline has passed.
    tokio::time::sleep_until(timed_at + Duration::from_millis(1700)).await;

    let s = Server::start(&dir).await;
    let snap = s.snapshot(&done).await;
    assert_eq!(snap["status"], "completed", "an answered resolve is durable");
    let snap = s.snapshot(&pending).await;
    assert_eq!(snap["status"], "waiting-approval");
    assert_eq!(snap["currentNodeId"], "gate");

    // The missed deadline fires on the first timer sweeps after the start.
    let snap = s.wait_status(&timed, "failed", 15).await;
    assert_eq!(snap["status"], "failed", "{snap}");
    assert_eq!(snap["error"]["code"], "approval_rejected");
    let events = s.events(&timed).await;
    assert_eq!(count(&events, "interrupt.requested"), 1);
    let resolved = of_type(&events, "interrupt.resolved", None);
    assert_eq!(resolved.len(), 1, "{:?}", types(&events));
    assert_eq!(resolved[0]["payload"]["action"], "timeout");
    assert_eq!(resolved[0]["payload"]["decision"], "rejected");
    assert_eq!(resolved[0]["payload"]["reason"], "timeout");

    assert_v2_event_payloads(&events);
    // A durable delay that fell due while the server was down completes too.
    let snap = s.wait_status(&delayed, "completed", 15).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(
        of_type(&s.events(&delayed).await, "node.completed", Some("wait")).len(),
        1
    );

    // The pending run is still resolvable, exactly once.
    let r = s
        .resolve(&pending, "gate", ANN, json!({"action": "accept"}))
        .await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "completed");
    s.resolve(&pending, "gate", ANN, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));
    for run in [&done, &pending] {
        let events = s.events(run).await;
        assert_eq!(count(&events, "interrupt.requested"), 1);
        assert_eq!(count(&events, "interrupt.resolved"), 1);
        assert_eq!(types(&events).last().unwrap(), "run.completed");
        let seqs: Vec<i64> = events.iter().map(|e| e["sequence"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (0..events.len() as i64).collect::<Vec<_>>());
    }
    let resolved = of_type(&s.events(&done).await, "interrupt.resolved", None)[0].clone();
    assert_eq!(resolved["payload"]["resolvedBy"]["subjectId"], "owner");
    // Keys from the configuration still work, and the fixtures are still listed.
    s.get("/workflows/conformance-approval", READER)
        .await
        .expect(200, None);
}

#[tokio::test]
async fn idempotency_records_survive_a_restart() {
    let dir = TestDir::new();
    let mut s = Server::start(&dir).await;
    let key = "restart-key-0123456789abcdef";
    let body = json!({"workflowId": "conformance-approval"});
    let first = s
        .call(
            reqwest::Method::POST,
            "/runs",
            Some(OWNER),
            Some(&body),
            &[("idempotency-key", key)],
        )
        .await;
    first.expect(201, None);
    s.kill9();
    let s = Server::start(&dir).await;
    let replay = s
        .call(
            reqwest::Method::POST,
            "/runs",
            Some(OWNER),
            Some(&body),
            &[("idempotency-key", key)],
        )
        .await;
    replay.expect(201, None);
    assert_eq!(replay.header("openwop-idempotent-replay"), Some("true"));
    assert_eq!(replay.body, first.body);
    let list = s.get("/interrupts", OWNER).await;
    assert_eq!(list.body["interrupts"].as_array().unwrap().len(), 1);
}

/// A storm of resolves, the server killed while they are in flight: every
/// answered decision is there after the restart, and every unanswered one,
/// sent again, is decided exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn answered_resolves_survive_kill_9_mid_storm() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    const RUNS: usize = 300;
    let dir = TestDir::new();
    let mut s = Server::start(&dir).await;
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        runs.push(s.create("conformance-approval").await);
    }
    let answered = Arc::new(AtomicUsize::new(0));
    let storm: Vec<_> = runs
        .iter()
        .map(|run| {
            let request = s
                .client
                .post(s.url(&format!("/runs/{}/interrupts/gate", seg(run))))
                .bearer_auth(OWNER)
                .json(&json!({"resumeValue": {"action": "accept"}}));
            let answered = answered.clone();
            tokio::spawn(async move {
                let status = request.send().await.ok().map(|r| r.status().as_u16());
                if status.is_some() {
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                status
            })
        })
        .collect();
    while answered.load(Ordering::SeqCst) < 20 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    s.kill9();
    let mut statuses = Vec::with_capacity(RUNS);
    for request in storm {
        statuses.push(request.await.unwrap());
    }
    let unanswered = statuses.iter().filter(|s| s.is_none()).count();
    assert!(unanswered > 0, "the kill came after the storm");

    let s = Server::start(&dir).await;
    for (run, status) in runs.iter().zip(&statuses) {
        match status {
            Some(200) => {}
            Some(other) => panic!("{run}: {other} before the kill"),
            None => {
                // Lost with the process, or decided and its answer lost.
                let again = s.resolve(run, "gate", OWNER, json!({"action": "accept"})).await;
                if again.status != 200 {
                    again.expect(409, Some("interrupt_already_resolved"));
                }
            }
        }
        let snap = s.snapshot(run).await;
        assert_eq!(snap["status"], "completed", "{run}: {snap}");
        let events = s.events(run).await;
        assert_eq!(count(&events, "interrupt.resolved"), 1, "{run}");
        let seqs: Vec<i64> = events.iter().map(|e| e["sequence"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (0..events.len() as i64).collect::<Vec<_>>(), "{run}");
    }
}
