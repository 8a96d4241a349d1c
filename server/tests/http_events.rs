//! The run event log over long polling, SSE and JSON, against the real binary.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;

fn poll_path(run: &str, after: i64, timeout: u32) -> String {
    format!(
        "/runs/{}/events/poll?afterSequence={after}&timeout={timeout}",
        seg(run)
    )
}

fn is_event_id(s: &str) -> bool {
    (16..=128).contains(&s.len())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-'))
}

/// Checks the closed RunEventDoc shape of every event and their sequence.
fn check_event_docs(run: &str, events: &[Value], first_sequence: i64) {
    for (i, e) in events.iter().enumerate() {
        let obj = e.as_object().expect("event object");
        for k in obj.keys() {
            assert!(
                [
                    "eventId",
                    "runId",
                    "type",
                    "payload",
                    "timestamp",
                    "sequence",
                    "schemaVersion",
                    "nodeId",
                    "engineVersion",
                    "causationId"
                ]
                .contains(&k.as_str()),
                "unexpected member {k} in {e}"
            );
        }
        assert!(is_event_id(e["eventId"].as_str().unwrap()), "{e}");
        assert_eq!(e["runId"], run);
        assert!(e["type"].is_string());
        assert!(e["payload"].is_object(), "{e}");
        assert!(e["timestamp"].as_str().is_some_and(|t| t.contains('T')), "{e}");
        assert_eq!(e["sequence"], first_sequence + i as i64, "{e}");
        assert!(e["schemaVersion"].as_i64().is_some_and(|v| v >= 1), "{e}");
        let t = e["type"].as_str().unwrap();
        if t.starts_with("node.") || t.starts_with("interrupt.") {
            assert!(e["nodeId"].is_string(), "{t} names its node: {e}");
        }
        assert!(e.get("seq").is_none() && e.get("data").is_none());
    }
    let ids: std::collections::HashSet<&str> =
        events.iter().map(|e| e["eventId"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");
}

#[tokio::test]
async fn poll_returns_the_closed_shape_and_the_v2_event_order() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let r = s.get(&poll_path(&run, -1, 1), OWNER).await;
    r.expect(200, None);
    assert_eq!(r.header("openwop-version"), Some("2.0"));
    let b = &r.body;
    let mut keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["events", "isTerminal", "lastSequence", "runId", "status"]);
    assert_eq!(b["runId"], run.as_str());
    assert_eq!(b["status"], "waiting-approval");
    assert_eq!(b["isTerminal"], false);
    let events = b["events"].as_array().unwrap().clone();
    check_event_docs(&run, &events, 0);
    assert_eq!(
        types(&events),
        [
            "run.started",
            "node.started",
            "interrupt.requested",
            "node.suspended"
        ]
    );
    assert_eq!(b["lastSequence"], 3);
    let requested = &events[2]["payload"];
    assert_eq!(requested["kind"], "approval");
    assert!(requested["key"].as_str().is_some_and(|k| !k.is_empty()));
    assert_eq!(requested["data"]["actions"], json!(["accept", "reject"]));
    let suspended = &events[3]["payload"];
    assert_eq!(suspended["nodeId"], "gate");
    // V2-ID-1: the interrupt id is tenant-bound.
    let iid = suspended["interruptId"].as_str().unwrap();
    let (tenant, opaque) = iid.split_once('/').expect("tenant-bound interruptId");
    assert_eq!(tenant, TENANT);
    assert!(opaque.len() >= 16);

    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    let r = s.get(&poll_path(&run, 3, 1), OWNER).await;
    r.expect(200, None);
    let events = r.body["events"].as_array().unwrap().clone();
    check_event_docs(&run, &events, 4);
    assert_eq!(
        types(&events),
        [
            "interrupt.resolved",
            "node.resumed",
            "node.completed",
            "run.completed"
        ]
    );
    assert_eq!(r.body["lastSequence"], 7);
    assert_eq!(r.body["status"], "completed");
    assert_eq!(r.body["isTerminal"], true);
    let resolved = &events[0]["payload"];
    assert_eq!(resolved["action"], "accept");
    assert_eq!(resolved["decision"], "granted");
    assert_eq!(resolved["interruptId"], iid);
    assert_eq!(resolved["resolvedBy"]["subjectId"], "owner");
    assert_eq!(events[1]["payload"]["resumeValue"]["action"], "accept");
    assert_eq!(events[2]["payload"]["outputs"]["resumeValue"]["action"], "accept");

    // Nothing after the end of a terminal run: an immediate empty answer.
    let r = s.get(&poll_path(&run, 7, 1), OWNER).await;
    r.expect(200, None);
    assert_eq!(r.body["events"], json!([]));
    assert_eq!(r.body["lastSequence"], -1);
    assert_eq!(r.body["isTerminal"], true);
}

#[tokio::test]
async fn poll_refuses_bad_parameters() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    for q in [
        "timeout=0",
        "timeout=61",
        "timeout=-1",
        "timeout=0.5",
        "afterSequence=-2&timeout=1",
    ] {
        let r = s
            .get(&format!("/runs/{}/events/poll?{q}", seg(&run)), OWNER)
            .await;
        r.expect(400, Some("validation_error"));
    }
    let r = s
        .get(
            &format!("/runs/{}/events/poll?timeout=1&streamMode=values", seg(&run)),
            OWNER,
        )
        .await;
    r.expect(400, Some("unsupported_stream_mode"));
    s.get(&poll_path("acme/0123456789abcdefunknown", -1, 1), OWNER)
        .await
        .expect(404, Some("not_found"));
    s.get(&poll_path("other/0123456789abcdefunknown", -1, 1), OWNER)
        .await
        .expect(403, Some("id_tenant_mismatch"));
    // Both bounds are allowed.
    s.get(&poll_path(&run, 3, 1), OWNER).await.expect(200, None);
    s.get(&poll_path(&run, -1, 60), OWNER).await.expect(200, None);
}

#[tokio::test]
async fn a_waiting_long_poll_is_woken_by_a_resolve() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let first = s.get(&poll_path(&run, -1, 1), OWNER).await;
    let last = first.body["lastSequence"].as_i64().unwrap();
    assert_eq!(last, 3);

    // Nothing new: a quiet poll times out empty.
    let quiet = s.get(&poll_path(&run, last, 1), OWNER).await;
    quiet.expect(200, None);
    assert_eq!(quiet.body["events"], json!([]));
    assert_eq!(quiet.body["lastSequence"], -1);
    assert_eq!(quiet.body["status"], "waiting-approval");

    // A poll long enough that only a wake-up can answer it with events.
    let waiting = {
        let client = s.client.clone();
        let url = s.url(&poll_path(&run, last, 30));
        tokio::spawn(async move {
            let r = client.get(url).bearer_auth(OWNER).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.json::<Value>().await.unwrap()
        })
    };
    // Give the poll time to reach its wait before the resolve commits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the poll waits while nothing happens");
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    let woken = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("the poll returns")
        .unwrap();
    let events = woken["events"].as_array().unwrap();
    assert!(!events.is_empty(), "woken with events: {woken}");
    assert_eq!(events[0]["sequence"], last + 1);
    assert_eq!(events[0]["type"], "interrupt.resolved");
    assert_eq!(woken["lastSequence"], events.last().unwrap()["sequence"].clone());
}

/// One parsed SSE frame.
#[derive(Debug)]
struct Frame {
    id: Option<String>,
    event: Option<String>,
    data: String,
}

fn parse_sse(text: &str) -> Vec<Frame> {
    let text = text.replace("\r\n", "\n");
    let mut frames = Vec::new();
    for block in text.split("\n\n") {
        let mut f = Frame {
            id: None,
            event: None,
            data: String::new(),
        };
        let mut any = false;
        for line in block.lines() {
            if line.is_empty() || line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            any = true;
            match field {
                "id" => f.id = Some(value.to_string()),
                "event" => f.event = Some(value.to_string()),
                "data" => {
                    if !f.data.is_empty() {
                        f.data.push('\n');
                    }
                    f.data.push_str(value);
                }
                _ => {}
            }
        }
        if any {
            frames.push(f);
        }
    }
    frames
}

/// Reads a whole SSE response (it must end by itself) and checks each frame.
async fn read_sse(s: &Server, run: &str, headers: &[(&str, &str)]) -> Vec<Value> {
    let mut req = s
        .client
        .get(s.url(&format!("/runs/{}/events", seg(run))))
        .bearer_auth(OWNER)
        .header("accept", "text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = tokio::time::timeout(Duration::from_secs(60), req.send())
        .await
        .expect("SSE answers")
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let text = tokio::time::timeout(Duration::from_secs(60), res.text())
        .await
        .expect("the stream closes after the terminal event")
        .unwrap();
    frames_to_events(run, &text)
}

fn frames_to_events(run: &str, text: &str) -> Vec<Value> {
    parse_sse(text)
        .into_iter()
        .map(|f| {
            let doc: Value = serde_json::from_str(&f.data).expect("data is a RunEventDoc");
            assert_eq!(f.id.as_deref(), Some(doc["sequence"].to_string().as_str()));
            assert_eq!(f.event.as_deref(), doc["type"].as_str());
            assert_eq!(doc["runId"], run);
            doc
        })
        .collect()
}

#[tokio::test]
async fn sse_frames_carry_sequence_and_type_and_close_after_the_terminal_event() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    let events = read_sse(&s, &run, &[]).await;
    check_event_docs(&run, &events, 0);
    assert_eq!(
        types(&events),
        [
            "run.started",
            "node.started",
            "interrupt.requested",
            "node.suspended",
            "interrupt.resolved",
            "node.resumed",
            "node.completed",
            "run.completed"
        ]
    );
    // Last-Event-ID resumes after that sequence.
    let tail = read_sse(&s, &run, &[("last-event-id", "3")]).await;
    check_event_docs(&run, &tail, 4);
    assert_eq!(tail.len(), 4);
    assert_eq!(tail[0]["type"], "interrupt.resolved");
    // Resuming after the terminal event ends at once with nothing.
    let none = read_sse(&s, &run, &[("last-event-id", "7")]).await;
    assert!(none.is_empty(), "{none:?}");
}

/// Opens a run's SSE stream and reads until the four events of the suspend
/// (the run waits at its gate, so the stream stays open); returns the open
/// response and the text read.
async fn stream_until_suspended(s: &Server, run: &str) -> (reqwest::Response, String) {
    let mut res = s
        .client
        .get(s.url(&format!("/runs/{}/events", seg(run))))
        .bearer_auth(OWNER)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let mut text = String::new();
    while parse_sse(&text).len() < 4 || !text.ends_with("\n\n") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), res.chunk())
            .await
            .expect("suspend events arrive")
            .unwrap()
            .expect("the stream stays open while the run waits");
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    (res, text)
}

#[tokio::test]
async fn sse_streams_live_events_and_ends_with_the_run() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let (mut res, mut text) = stream_until_suspended(&s, &run).await;
    let seen = frames_to_events(&run, &text);
    assert_eq!(types(&seen).last().unwrap(), "node.suspended");
    s.resolve(&run, "gate", OWNER, json!({"action": "reject"}))
        .await
        .expect(200, None);
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(30), res.chunk())
            .await
            .expect("the stream ends after the terminal event")
            .unwrap();
        match chunk {
            Some(c) => text.push_str(std::str::from_utf8(&c).unwrap()),
            None => break,
        }
    }
    let events = frames_to_events(&run, &text);
    check_event_docs(&run, &events, 0);
    let t = types(&events);
    assert_eq!(t.last().unwrap(), "run.failed");
    assert!(t.contains(&"interrupt.resolved".to_string()));
    assert!(t.contains(&"node.failed".to_string()));
}

#[tokio::test]
async fn events_as_json_when_asked_and_errors_before_streaming() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events", seg(&run)),
            Some(OWNER),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(200, None);
    assert!(r
        .header("content-type")
        .is_some_and(|c| c.starts_with("application/json")));
    let events = r.body["events"].as_array().unwrap().clone();
    check_event_docs(&run, &events, 0);
    assert_eq!(events.len(), 4);
    // afterSequence works on the JSON form too.
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events?afterSequence=1", seg(&run)),
            Some(OWNER),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(200, None);
    assert_eq!(r.body["events"][0]["sequence"], 2);
    // Errors come as the envelope, not as a stream.
    for (path, status, code) in [
        (
            "/runs/acme~2F0123456789abcdefunknown/events".to_string(),
            404,
            "not_found",
        ),
        (
            "/runs/other~2F0123456789abcdefunknown/events".to_string(),
            403,
            "id_tenant_mismatch",
        ),
        (
            format!("/runs/{}/events?streamMode=values", seg(&run)),
            400,
            "unsupported_stream_mode",
        ),
    ] {
        let r = s
            .call(
                Method::GET,
                &path,
                Some(OWNER),
                None,
                &[("accept", "text/event-stream")],
            )
            .await;
        r.expect(status, Some(code));
    }
    // bufferMs is ignored but still an int64 ≥ 0, as documented.
    for bad in ["-1", "9223372036854775808", "1.5", "soon"] {
        let r = s
            .call(
                Method::GET,
                &format!("/runs/{}/events?bufferMs={bad}", seg(&run)),
                Some(OWNER),
                None,
                &[("accept", "application/json")],
            )
            .await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], "bufferMs", "{bad}: {}", r.body);
    }
    s.call(
        Method::GET,
        &format!("/runs/{}/events?bufferMs=9223372036854775807", seg(&run)),
        Some(OWNER),
        None,
        &[("accept", "application/json")],
    )
    .await
    .expect(200, None);
}

#[tokio::test]
async fn event_payloads_and_snapshots_follow_the_closed_v2_schemas() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(json!({"id": "shapes", "variables": [{"name": "amount"}], "nodes": [
        {"id": "first", "typeId": "core.noop"},
        {"id": "gate", "typeId": "core.approvalGate",
         "inputs": {"amount": {"type": "variable", "variableName": "amount"}},
         "config": {"title": "Shapes", "description": "d", "actions": ["accept", "reject", "refine", "edit-accept"],
                    "requiredApprovals": 2, "rejectionPolicy": "majority", "overrideBypassesQuorum": true,
                    "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"], "approversList": ["boss"],
                    "timeoutMs": 3600000, "onTimeout": "reject",
                    "requestSchema": {"type": "object", "properties": {"amount": {"type": "number"}}}}},
        {"id": "after", "typeId": "core.noop"},
        {"id": "on-fail", "typeId": "core.noop"}],
        "edges": [
            {"id": "e1", "sourceNodeId": "first", "targetNodeId": "gate"},
            {"id": "e2", "sourceNodeId": "gate", "targetNodeId": "after"},
            {"id": "e3", "sourceNodeId": "gate", "targetNodeId": "on-fail", "triggerRule": "any_failed"}]}))
        .await;
    let mut runs = Vec::new();

    // accept, with typed request data, a partial vote and an override
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "shapes", "inputs": {"amount": 12.5},
                   "tags": ["t"], "metadata": {"m": 1}}),
        )
        .await;
    s.resolve(&run, "gate", ANN, json!({"action": "accept", "feedback": "ok"}))
        .await
        .expect(200, None);
    s.resolve(
        &run,
        "gate",
        BOSS,
        json!({"action": "edit-accept", "editedArtifactData": {"amount": 10}}),
    )
    .await
    .expect(200, None);
    runs.push(run);
    // majority reject, routed
    let run = s.create("shapes").await;
    for key in [ANN, BOB] {
        s.resolve(&run, "gate", key, json!({"action": "reject"}))
            .await
            .expect(200, None);
    }
    runs.push(run);
    // reject without a route: run.failed
    let run = s.create("conformance-approval").await;
    s.resolve(&run, "gate", OWNER, json!({"action": "reject"}))
        .await
        .expect(200, None);
    runs.push(run);
    // refine: a rejecting vote; two of them are a majority, the gate fails with the feedback
    let run = s.create("shapes").await;
    for key in [ANN, BOB] {
        s.resolve(
            &run,
            "gate",
            key,
            json!({"action": "refine", "refineFeedback": {"scope": "whole", "text": "more detail"}}),
        )
        .await
        .expect(200, None);
    }
    let resolved = s
        .events(&run)
        .await
        .into_iter()
        .find(|e| e["type"] == "interrupt.resolved");
    assert_eq!(
        resolved.as_ref().map(|e| &e["payload"]["action"]),
        Some(&json!("refine"))
    );
    assert_eq!(
        resolved.as_ref().map(|e| &e["payload"]["decision"]),
        Some(&json!("rejected"))
    );
    runs.push(run);
    // cancelled while suspended and while delaying
    let run = s.create("conformance-approval").await;
    s.post(
        &format!("/runs/{}/cancel", seg(&run)),
        OWNER,
        &json!({"reason": "r"}),
    )
    .await
    .expect(200, None);
    runs.push(run);
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-cancellable", "inputs": {"delayMs": 60000}}),
        )
        .await;
    s.post(&format!("/runs/{}/cancel", seg(&run)), OWNER, &json!({}))
        .await
        .expect(200, None);
    runs.push(run);
    // clarification, loopback, noop
    let run = s.create("conformance-clarification").await;
    s.resolve(&run, "ask", ANN, json!({"answers": {"q1": "blue"}}))
        .await
        .expect(200, None);
    runs.push(run);
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
    runs.push(run);
    runs.push(s.create("conformance-noop").await);

    let mut seen = std::collections::BTreeSet::new();
    for run in &runs {
        let snap = s.snapshot(run).await;
        assert_v2_snapshot(&snap);
        let events = s.events(run).await;
        check_event_docs(run, &events, 0);
        assert_v2_event_payloads(&events);
        for e in &events {
            if let Some(rb) = e["payload"].get("resolvedBy") {
                assert_subject("resolvedBy", rb);
            }
        }
        seen.extend(types(&events));
    }
    for t in [
        "run.started",
        "run.completed",
        "run.failed",
        "run.cancelled",
        "node.started",
        "node.completed",
        "node.failed",
        "node.suspended",
        "node.resumed",
        "node.skipped",
        "node.cancelled",
        "interrupt.requested",
        "interrupt.resolved",
    ] {
        assert!(seen.contains(t), "{t} was exercised: {seen:?}");
    }
}

#[tokio::test]
async fn an_open_event_stream_does_not_hold_up_a_graceful_shutdown() {
    let (mut s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let (mut res, mut text) = stream_until_suspended(&s, &run).await;
    // A long poll that would wait up to 60 s for the next event.
    let poll = s
        .client
        .get(s.url(&format!(
            "/runs/{}/events/poll?afterSequence=3&timeout=60",
            seg(&run)
        )))
        .bearer_auth(OWNER)
        .send();
    let poll = tokio::spawn(poll);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The run waits at its gate, so the stream would stay open (keep-alives
    // every 15 s) for as long as the client listens, and the poll for 60 s.
    // A hang guard below the poll's 60 s, not a timing check:
    let status = s.terminate(Duration::from_secs(40)).await;
    let status = status.expect("the server exits on SIGTERM while a stream and a long poll are open");
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
    // The stream ended cleanly, at a frame boundary.
    while let Ok(Some(chunk)) = res.chunk().await {
        text.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert_eq!(
        types(&frames_to_events(&run, &text)).last().unwrap(),
        "node.suspended"
    );
    // The long poll was answered, with nothing new, before the server went.
    let poll = poll.await.unwrap().expect("the long poll is answered");
    assert_eq!(poll.status().as_u16(), 200);
    let body: Value = poll.json().await.unwrap();
    assert_eq!(body["events"], json!([]), "{body}");
    assert_eq!(body["status"], "waiting-approval", "{body}");
}
