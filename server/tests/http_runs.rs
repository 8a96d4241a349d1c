//! Runs, resolves, idempotency, auth, workflows and discovery over HTTP,
//! against the real `tollgate` binary.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;

// ----- 1. runs, snapshots, ids in paths, protocol version ----------------------

#[tokio::test]
async fn create_run_answers_201_and_the_snapshot_names_the_gate() {
    let (s, _dir) = Server::start_fresh().await;
    let r = s
        .post("/runs", OWNER, &json!({"workflowId": "conformance-approval"}))
        .await;
    r.expect(201, None);
    assert_eq!(r.header("openwop-version"), Some("2.0"));
    let run = r.body["runId"].as_str().unwrap().to_string();
    let (tenant, opaque) = run.split_once('/').expect("tenant-bound runId");
    assert_eq!(tenant, TENANT);
    assert!(opaque.len() >= 16, "{run}");
    assert_eq!(r.body["status"], "waiting-approval");
    let events_url = r.body["eventsUrl"].as_str().unwrap();
    let status_url = r.body["statusUrl"].as_str().unwrap();
    assert_eq!(
        events_url,
        format!("http://tollgate.test/runs/{}/events", seg(&run))
    );
    assert_eq!(status_url, format!("http://tollgate.test/runs/{}", seg(&run)));

    let snap = s.get(&format!("/runs/{}", seg(&run)), OWNER).await;
    snap.expect(200, None);
    assert_eq!(snap.header("openwop-version"), Some("2.0"));
    let b = &snap.body;
    assert_eq!(b["runId"], run.as_str());
    assert_eq!(b["workflowId"], "conformance-approval");
    assert_eq!(b["status"], "waiting-approval");
    assert_eq!(b["currentNodeId"], "gate");
    assert_eq!(b["eventLogSchemaVersion"], 3);
    assert_eq!(b["owner"]["tenant"], TENANT);
    assert_eq!(b["owner"]["subject"]["subjectId"], "owner");
    assert!(
        b.get("interrupt").is_none(),
        "a v2 snapshot has no interrupt field"
    );

    // The clarification fixture waits for input, naming its node.
    let c = s.create("conformance-clarification").await;
    let cs = s.snapshot(&c).await;
    assert_eq!(cs["status"], "waiting-input");
    assert_eq!(cs["currentNodeId"], "ask");
}

#[tokio::test]
async fn run_id_is_accepted_as_tilde_and_percent_projection() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let tilde = s.get(&format!("/runs/{}", seg(&run)), OWNER).await;
    tilde.expect(200, None);
    let percent = s
        .get(&format!("/runs/{}", run.replacen('/', "%2F", 1)), OWNER)
        .await;
    percent.expect(200, None);
    let lower = s
        .get(&format!("/runs/{}", run.replacen('/', "%2f", 1)), OWNER)
        .await;
    lower.expect(200, None);
    assert_eq!(tilde.body["runId"], run.as_str());
    assert_eq!(percent.body["runId"], run.as_str());
    assert_eq!(lower.body["runId"], run.as_str());
    // Resolve through the %2F form as well.
    let r = s
        .post(
            &format!("/runs/{}/interrupts/gate", run.replacen('/', "%2F", 1)),
            OWNER,
            &json!({"resumeValue": {"action": "accept"}}),
        )
        .await;
    r.expect(200, None);
    assert_eq!(r.body["status"], "completed");
}

#[tokio::test]
async fn a_run_id_is_percent_decoded_only_once() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    // `%252F` decodes once to the literal `%2F`, which is not a tenant-bound
    // id: the spec says "decode once, then match". Not a run id: 400 naming it.
    let twice = s
        .get(&format!("/runs/{}", run.replacen('/', "%252F", 1)), OWNER)
        .await;
    twice.expect(400, Some("validation_error"));
    assert_eq!(twice.body["details"]["field"], "runId");
    s.post(
        &format!("/runs/{}/interrupts/gate", run.replacen('/', "%252F", 1)),
        OWNER,
        &json!({"resumeValue": {"action": "accept"}}),
    )
    .await
    .expect(400, Some("validation_error"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
}

/// Tenant-bound ids travel in the OpenWOP wire form (identity.md §5): `~` and
/// two hex digits are one byte. A `~` without them, or escapes that are not
/// UTF-8, is 400 `validation_error` naming the parameter on every run route,
/// never a lookup (404); a well-formed id of another tenant stays 403.
#[tokio::test]
async fn malformed_escapes_in_run_ids_are_400_naming_the_parameter_never_404() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let opaque = run.split_once('/').unwrap().1.to_string();
    let routes = |seg: &str| {
        vec![
            (Method::GET, format!("/runs/{seg}"), None),
            (
                Method::POST,
                format!("/runs/{seg}/interrupts/gate"),
                Some(json!({"resumeValue": {"action": "accept"}})),
            ),
            (Method::GET, format!("/runs/{seg}/interrupts/gate"), None),
            (Method::GET, format!("/runs/{seg}/events"), None),
            (Method::GET, format!("/runs/{seg}/events/poll?timeout=1"), None),
            (Method::POST, format!("/runs/{seg}/cancel"), Some(json!({}))),
        ]
    };
    let json_accept = [("accept", "application/json")];
    for seg in [
        format!("acme~2X{opaque}"),
        "acme~".to_string(),
        "acme~2".to_string(),
        format!("acme~2F{opaque}~"),
        format!("acme~2F{opaque}~7"),
        format!("acme~G0~2F{opaque}"),
        format!("acme~~2F{opaque}"),
        format!("acme~C3~2F{opaque}"),
        format!("other~2X{opaque}"),
    ] {
        for (method, path, body) in routes(&seg) {
            let r = s
                .call(method.clone(), &path, Some(OWNER), body.as_ref(), &json_accept)
                .await;
            r.expect(400, Some("validation_error"));
            assert_eq!(r.body["details"]["field"], "runId", "{method} {path}");
            assert!(
                r.body["message"]
                    .as_str()
                    .unwrap()
                    .contains("malformed `~` escape"),
                "{method} {path}: {}",
                r.body
            );
        }
    }
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");

    // Every spelling of the wire form names the same run.
    for seg in [
        format!("acme~2F{opaque}"),
        format!("acme~2f{opaque}"),
        format!("acme%2F{opaque}"),
        format!("~61cme~2F{opaque}"),
    ] {
        let r = s.get(&format!("/runs/{seg}"), OWNER).await;
        r.expect(200, None);
        assert_eq!(r.body["runId"], run.as_str(), "{seg}");
    }
    // A well-formed id of another tenant: 403, existing or not, on every route.
    for seg in [
        format!("other~2F{opaque}"),
        format!("anon~3Aacme~2F{opaque}"),
        "other~2F0123456789abcdef0123".to_string(),
    ] {
        for (method, path, body) in routes(&seg) {
            let r = s
                .call(method.clone(), &path, Some(OWNER), body.as_ref(), &json_accept)
                .await;
            r.expect(403, Some("id_tenant_mismatch"));
            assert!(
                r.body.get("details").is_none_or(|d| d.get("field").is_none()),
                "{method} {path}"
            );
        }
    }
    // A node id is not tenant-bound: `~` is one of its characters, and a
    // segment outside its grammar is 400 naming `nodeId`.
    for node in ["a%20b", "%C3%A9", "gate%2Fx"] {
        for method in [Method::GET, Method::POST] {
            let body = (method == Method::POST).then(|| json!({"resumeValue": {"action": "accept"}}));
            let r = s
                .call(
                    method.clone(),
                    &format!("/runs/{}/interrupts/{node}", seg(&run)),
                    Some(OWNER),
                    body.as_ref(),
                    &[],
                )
                .await;
            r.expect(400, Some("validation_error"));
            assert_eq!(r.body["details"]["field"], "nodeId", "{method} {node}");
        }
    }
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
}

#[tokio::test]
async fn foreign_tenant_is_403_id_tenant_mismatch_and_unknown_run_is_404() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    // Another tenant's id, existing or not, never reveals anything.
    let foreign = s.get("/runs/other~2F0123456789abcdef0123456789", OWNER).await;
    foreign.expect(403, Some("id_tenant_mismatch"));
    assert_eq!(foreign.header("openwop-version"), Some("2.0"));
    // eve (tenant other) reading acme's real run.
    s.get(&format!("/runs/{}", seg(&run)), EVE)
        .await
        .expect(403, Some("id_tenant_mismatch"));
    s.resolve(&run, "gate", EVE, json!({"action": "accept"}))
        .await
        .expect(403, Some("id_tenant_mismatch"));
    s.post(&format!("/runs/{}/cancel", seg(&run)), EVE, &json!({}))
        .await
        .expect(403, Some("id_tenant_mismatch"));
    // Still untouched.
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");

    // Unknown run in our tenant.
    let unknown = s.get("/runs/acme~2F0123456789abcdefunknown", OWNER).await;
    unknown.expect(404, Some("not_found"));
    // A malformed id is refused as input (nothing is looked up), naming it.
    for bad in [
        "not-a-run-id",
        "acme~0123456789abcdef",
        "acme~2F0123456789abcdef~",
        "%C3%A9%C3%A9",
    ] {
        let r = s.get(&format!("/runs/{bad}"), OWNER).await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], "runId", "{bad}");
    }
}

#[tokio::test]
async fn protocol_version_header_is_stamped_and_major_3_is_refused() {
    let (s, _dir) = Server::start_fresh().await;
    for v in ["2", "2.0"] {
        let r = s
            .call(
                Method::POST,
                "/runs",
                Some(OWNER),
                Some(&json!({"workflowId": "conformance-noop"})),
                &[("openwop-version", v)],
            )
            .await;
        r.expect(201, None);
        assert_eq!(r.header("openwop-version"), Some("2.0"));
    }
    let refused = s
        .call(
            Method::POST,
            "/runs",
            Some(OWNER),
            Some(&json!({"workflowId": "conformance-noop"})),
            &[("openwop-version", "3")],
        )
        .await;
    refused.expect(406, Some("protocol_version_unsupported"));
    assert_eq!(refused.body["details"]["protocolVersions"], json!(["2.0"]));
    assert_eq!(refused.header("openwop-version"), Some("2.0"));
    let refused_get = s
        .call(
            Method::GET,
            "/.well-known/openwop",
            None,
            None,
            &[("openwop-version", "3.0")],
        )
        .await;
    refused_get.expect(406, Some("protocol_version_unsupported"));
    // Error answers carry the header too.
    let e = s.get("/runs/acme~2F0123456789abcdefunknown", OWNER).await;
    assert_eq!(e.header("openwop-version"), Some("2.0"));
    let u = s.call(Method::GET, "/interrupts", None, None, &[]).await;
    assert_eq!(u.status, 401);
    assert_eq!(u.header("openwop-version"), Some("2.0"));
    // The refused request started nothing: only the two accepted ones made runs.
    let before = runs_started(&s).await.len();
    s.call(
        Method::POST,
        "/runs",
        Some(OWNER),
        Some(&json!({"workflowId": "conformance-approval"})),
        &[("openwop-version", "3")],
    )
    .await
    .expect(406, Some("protocol_version_unsupported"));
    assert_eq!(runs_started(&s).await.len(), before);
}

#[tokio::test]
async fn create_run_refuses_bad_bodies_naming_the_field() {
    let (s, _dir) = Server::start_fresh().await;
    let cases = [
        (json!({"workflowId": "conformance-noop", "bogus": 1}), "bogus"),
        (json!({}), "workflowId"),
        (json!({"workflowId": "conformance-noop", "inputs": [1]}), "inputs"),
        (
            json!({"workflowId": "conformance-noop", "configurable": {"version": 2}}),
            "configurable.version",
        ),
        (
            json!({"workflowId": "conformance-noop", "callbackUrl": "https://127.0.0.1/cb"}),
            "callbackUrl",
        ),
    ];
    for (body, field) in cases {
        let r = s.post("/runs", OWNER, &body).await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], field, "{body}: {}", r.body);
    }
    s.post("/runs", OWNER, &json!({"workflowId": "no-such-workflow"}))
        .await
        .expect(404, Some("not_found"));
    s.post(
        "/runs",
        OWNER,
        &json!({"workflowId": "conformance-noop", "tenantId": "other"}),
    )
    .await
    .expect(403, Some("id_tenant_mismatch"));
}

// ----- 2. resolving --------------------------------------------------------------

#[tokio::test]
async fn accept_answers_200_with_run_node_and_status() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let r = s.resolve(&run, "gate", OWNER, json!({"action": "accept"})).await;
    r.expect(200, None);
    assert_eq!(
        r.body,
        json!({"runId": run, "nodeId": "gate", "status": "completed"})
    );
    assert_eq!(r.header("openwop-version"), Some("2.0"));
    let snap = s.snapshot(&run).await;
    assert_eq!(snap["status"], "completed");
    assert!(snap.get("currentNodeId").is_none());
    assert!(snap["completedAt"].is_string());
}

#[tokio::test]
async fn invalid_action_is_400_naming_resume_value_action() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    for rv in [
        json!({"action": "maybe"}),
        json!({"action": "timeout"}),
        json!({"action": "refine", "refineFeedback": {"scope": "whole"}}),
        json!({}),
    ] {
        let r = s.resolve(&run, "gate", OWNER, rv.clone()).await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], "resumeValue.action", "{rv}");
    }
    let r = s.resolve(&run, "gate", OWNER, json!("accept")).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "resumeValue");
    // Nothing changed.
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 0);
    assert!(s.interrupt(&run, "gate").await["votes"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn unknown_node_and_unknown_run_are_404_not_found() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    s.resolve(&run, "no-such-node", OWNER, json!({"action": "accept"}))
        .await
        .expect(404, Some("not_found"));
    // RT-3: encodeURIComponent("<tenant>/openwopconformanceunknown<base36>").
    s.post(
        "/runs/acme%2Fopenwopconformanceunknown1x2y3z/interrupts/gate",
        OWNER,
        &json!({"resumeValue": {"action": "accept"}}),
    )
    .await
    .expect(404, Some("not_found"));
    s.get(&format!("/runs/{}/interrupts/no-such-node", seg(&run)), OWNER)
        .await
        .expect(404, Some("not_found"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
}

#[tokio::test]
async fn resolve_body_is_closed_and_names_the_offending_member() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let path = format!("/runs/{}/interrupts/gate", seg(&run));
    let r = s
        .post(
            &path,
            OWNER,
            &json!({"resumeValue": {"action": "accept"}, "extra": true}),
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "extra", "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("extra"));
    let r = s.post(&path, OWNER, &json!({"action": "accept"})).await;
    r.expect(400, Some("validation_error"));
    let field = r.body["details"]["field"].as_str().unwrap();
    assert!(field == "action" || field == "resumeValue", "{}", r.body);
    let r = s.post(&path, OWNER, &json!({})).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "resumeValue");
    // Not JSON at all.
    let raw = s
        .client
        .post(s.url(&path))
        .bearer_auth(OWNER)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status().as_u16(), 400);
    let body: Value = raw.json().await.unwrap();
    assert_eq!(body["error"], "validation_error");
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
}

#[tokio::test]
async fn resolve_after_completion_is_409_interrupt_already_resolved() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    assert_eq!(s.wait_status(&run, "completed", 10).await["status"], "completed");
    for rv in [json!({"action": "accept"}), json!({"action": "reject"})] {
        s.resolve(&run, "gate", OWNER, rv)
            .await
            .expect(409, Some("interrupt_already_resolved"));
    }
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 1);
}

#[tokio::test]
async fn resolve_after_cancel_is_409_and_cancelling_a_terminal_run_is_409_run_terminal() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let c = s
        .post(
            &format!("/runs/{}/cancel", seg(&run)),
            OWNER,
            &json!({"reason": "conformance-cleanup"}),
        )
        .await;
    c.expect(200, None);
    assert_eq!(c.body, json!({"runId": run, "status": "cancelled"}));
    assert_eq!(s.wait_status(&run, "cancelled", 10).await["status"], "cancelled");
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));
    s.post(&format!("/runs/{}/cancel", seg(&run)), OWNER, &json!({}))
        .await
        .expect(409, Some("run_terminal"));
    let evs = s.events(&run).await;
    let t = types(&evs);
    assert_eq!(&t[t.len() - 2..], ["node.cancelled", "run.cancelled"]);
    assert_eq!(evs.last().unwrap()["payload"]["reason"], "conformance-cleanup");
    assert_eq!(count(&evs, "interrupt.resolved"), 0);

    // A completed run cannot be cancelled either.
    let noop = s.create("conformance-noop").await;
    assert_eq!(s.wait_status(&noop, "completed", 10).await["status"], "completed");
    s.post(&format!("/runs/{}/cancel", seg(&noop)), OWNER, &json!({}))
        .await
        .expect(409, Some("run_terminal"));
    // Unknown body members of cancel are refused, naming them.
    let other = s.create("conformance-approval").await;
    let r = s
        .post(
            &format!("/runs/{}/cancel", seg(&other)),
            OWNER,
            &json!({"why": "x"}),
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "why");
}

// ----- 3. concurrent resolves ------------------------------------------------------

#[tokio::test]
async fn of_32_concurrent_resolves_exactly_one_wins() {
    let (s, _dir) = Server::start_fresh().await;
    let s = Arc::new(s);
    let run = s.create("conformance-approval").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(32));
    let keys = [OWNER, ANN, BOB, CAT];
    let mut tasks = Vec::new();
    for i in 0..32 {
        let (s, run, barrier) = (s.clone(), run.clone(), barrier.clone());
        let key = keys[i % keys.len()];
        let action = if i % 2 == 0 { "accept" } else { "reject" };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.resolve(&run, "gate", key, json!({"action": action})).await
        }));
    }
    let mut ok = 0;
    let mut conflicts = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            200 => ok += 1,
            409 => {
                assert_eq!(r.code(), "interrupt_already_resolved", "{}", r.body);
                conflicts += 1;
            }
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!((ok, conflicts), (1, 31));
    let evs = s.events(&run).await;
    assert_eq!(count(&evs, "interrupt.resolved"), 1);
    assert!(is_terminal(s.snapshot(&run).await["status"].as_str().unwrap()));
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["status"], "resolved");
    assert_eq!(view["votes"].as_array().unwrap().len(), 1);
}

// ----- 4. Idempotency-Key ---------------------------------------------------------

const IDEM: &str = "idem-key-0123456789abcdefghij";

async fn idem_post(s: &Server, path: &str, key: &str, idem: &str, body: &Value) -> Resp {
    s.call(
        Method::POST,
        path,
        Some(key),
        Some(body),
        &[("idempotency-key", idem)],
    )
    .await
}

async fn runs_started(s: &Server) -> HashSet<String> {
    let r = s.get("/interrupts?limit=500", OWNER).await;
    r.expect(200, None);
    r.body["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["runId"].as_str().unwrap().to_string())
        .collect()
}

/// Replayable errors (404, 409) are stored with the key and replayed; storing
/// them once failed to serialize and answered 500.
#[tokio::test]
async fn replayable_errors_are_stored_and_replayed() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let body = json!({"resumeValue": {"action": "approve"}});
    let path = format!("/runs/{}/interrupts/no-such-node", seg(&run));
    let first = idem_post(&s, &path, OWNER, IDEM, &body).await;
    first.expect(404, Some("not_found"));
    let again = idem_post(&s, &path, OWNER, IDEM, &body).await;
    again.expect(404, Some("not_found"));
    assert_eq!(again.header("openwop-idempotent-replay"), Some("true"));

    let cancel = format!("/runs/{}/cancel", seg(&run));
    idem_post(&s, &cancel, OWNER, "idem-cancel-0123456789abcdef", &json!({}))
        .await
        .expect(200, None);
    let late = "idem-late-0123456789abcdefgh";
    idem_post(&s, &cancel, OWNER, late, &json!({}))
        .await
        .expect(409, Some("run_terminal"));
    let replay = idem_post(&s, &cancel, OWNER, late, &json!({})).await;
    replay.expect(409, Some("run_terminal"));
    assert_eq!(replay.header("openwop-idempotent-replay"), Some("true"));
}

#[tokio::test]
async fn idempotency_key_with_bad_grammar_is_400() {
    let (s, _dir) = Server::start_fresh().await;
    let body = json!({"workflowId": "conformance-approval"});
    for bad in [
        "short",
        "has spaces in it 0123456789abc",
        "bang!0123456789abcdefghijk",
        &"x".repeat(129),
    ] {
        idem_post(&s, "/runs", OWNER, bad, &body)
            .await
            .expect(400, Some("idempotency_key_invalid"));
    }
    assert!(runs_started(&s).await.is_empty(), "no run was created");
    let run = s.create("conformance-approval").await;
    idem_post(
        &s,
        &format!("/runs/{}/interrupts/gate", seg(&run)),
        OWNER,
        "short",
        &json!({"resumeValue": {"action": "accept"}}),
    )
    .await
    .expect(400, Some("idempotency_key_invalid"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    // The boundaries of the grammar are accepted.
    idem_post(&s, "/runs", OWNER, &"a".repeat(22), &body)
        .await
        .expect(201, None);
    idem_post(&s, "/runs", OWNER, &"b".repeat(128), &body)
        .await
        .expect(201, None);
}

#[tokio::test]
async fn create_with_the_same_key_and_body_replays_without_a_second_run() {
    let (s, _dir) = Server::start_fresh().await;
    let body = json!({"workflowId": "conformance-approval", "inputs": {"n": 1}});
    let first = idem_post(&s, "/runs", OWNER, IDEM, &body).await;
    first.expect(201, None);
    assert_eq!(first.header("openwop-idempotent-replay"), None);
    let second = idem_post(&s, "/runs", OWNER, IDEM, &body).await;
    second.expect(201, None);
    assert_eq!(second.header("openwop-idempotent-replay"), Some("true"));
    assert_eq!(first.body, second.body);
    assert_eq!(runs_started(&s).await.len(), 1);
    // Same key, another body.
    let other = idem_post(
        &s,
        "/runs",
        OWNER,
        IDEM,
        &json!({"workflowId": "conformance-approval", "inputs": {"n": 2}}),
    )
    .await;
    other.expect(409, Some("idempotency_key_mismatch"));
    assert_eq!(other.header("openwop-idempotent-replay"), None);
    assert!(other.body.get("runId").is_none(), "never the cached body");
    assert_eq!(runs_started(&s).await.len(), 1);
    // Without the key the same body starts another run.
    s.create_as(OWNER, body).await;
    assert_eq!(runs_started(&s).await.len(), 2);
}

#[tokio::test]
async fn resolve_with_the_same_key_replays_and_another_body_is_a_mismatch() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let path = format!("/runs/{}/interrupts/gate", seg(&run));
    let accept = json!({"resumeValue": {"action": "accept"}});
    let first = idem_post(&s, &path, OWNER, IDEM, &accept).await;
    first.expect(200, None);
    assert_eq!(first.header("openwop-idempotent-replay"), None);
    let retry = idem_post(&s, &path, OWNER, IDEM, &accept).await;
    retry.expect(200, None);
    assert_eq!(retry.header("openwop-idempotent-replay"), Some("true"));
    assert_eq!(retry.body, first.body);
    let other = idem_post(
        &s,
        &path,
        OWNER,
        IDEM,
        &json!({"resumeValue": {"action": "reject"}}),
    )
    .await;
    other.expect(409, Some("idempotency_key_mismatch"));
    // A retry never votes twice.
    let evs = s.events(&run).await;
    assert_eq!(count(&evs, "interrupt.resolved"), 1);
    assert_eq!(
        s.interrupt(&run, "gate").await["votes"].as_array().unwrap().len(),
        1
    );
    // Without the key the late resolve is the plain conflict.
    s.post(&path, OWNER, &accept)
        .await
        .expect(409, Some("interrupt_already_resolved"));
}

#[tokio::test]
async fn eight_concurrent_creates_with_one_key_make_one_run() {
    let (s, _dir) = Server::start_fresh().await;
    let s = Arc::new(s);
    let body = json!({"workflowId": "conformance-approval"});
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (s, body, barrier) = (s.clone(), body.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            idem_post(&s, "/runs", OWNER, IDEM, &body).await
        }));
    }
    let mut run_ids = HashSet::new();
    let mut fresh = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            201 => {
                run_ids.insert(r.body["runId"].as_str().unwrap().to_string());
                if r.header("openwop-idempotent-replay").is_none() {
                    fresh += 1;
                }
            }
            409 => assert_eq!(r.code(), "idempotency_in_flight", "{}", r.body),
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!(fresh, 1, "exactly one request executed");
    assert_eq!(run_ids.len(), 1);
    assert_eq!(runs_started(&s).await, run_ids);
}

#[tokio::test]
async fn eight_concurrent_resolves_with_one_key_vote_once() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q2", json!({"requiredApprovals": 2})))
        .await;
    let s = Arc::new(s);
    let run = s.create("q2").await;
    let path = format!("/runs/{}/interrupts/gate", seg(&run));
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (s, path, barrier) = (s.clone(), path.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            idem_post(
                &s,
                &path,
                ANN,
                IDEM,
                &json!({"resumeValue": {"action": "accept"}}),
            )
            .await
        }));
    }
    let mut fresh = 0;
    for t in tasks {
        let r = t.await.unwrap();
        match r.status {
            200 => {
                assert_eq!(r.body["status"], "waiting-approval");
                if r.header("openwop-idempotent-replay").is_none() {
                    fresh += 1;
                }
            }
            409 => assert_eq!(r.code(), "idempotency_in_flight", "{}", r.body),
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!(fresh, 1, "exactly one request executed");
    assert_eq!(
        s.interrupt(&run, "gate").await["votes"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn refused_requests_are_not_recorded_under_their_idempotency_key() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("listed", json!({"approversList": ["ann"]})))
        .await;
    let run = s.create("listed").await;
    let path = format!("/runs/{}/interrupts/gate", seg(&run));
    let accept = json!({"resumeValue": {"action": "accept"}});
    // 400 and 403 are never cached: a retry with the same key executes.
    idem_post(&s, &path, ANN, IDEM, &json!({"resumeValue": {"action": "maybe"}}))
        .await
        .expect(400, Some("validation_error"));
    idem_post(&s, &path, BOB, IDEM, &accept)
        .await
        .expect(403, Some("forbidden"));
    let r = idem_post(&s, &path, ANN, IDEM, &accept).await;
    r.expect(200, None);
    assert_eq!(r.header("openwop-idempotent-replay"), None);
    assert_eq!(r.body["status"], "completed");
}

// ----- 5. authentication and scopes ----------------------------------------------

#[tokio::test]
async fn missing_or_wrong_credentials_are_401_with_www_authenticate() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let body = json!({"workflowId": "conformance-approval"});
    let no_header = s.call(Method::POST, "/runs", None, Some(&body), &[]).await;
    no_header.expect(401, Some("unauthenticated"));
    assert_eq!(no_header.header("www-authenticate"), Some("Bearer"));
    let wrong = s.post("/runs", "wrong-key-0123456789abcdef", &body).await;
    wrong.expect(401, Some("unauthenticated"));
    assert_eq!(wrong.header("www-authenticate"), Some("Bearer"));
    let basic = s
        .call(
            Method::GET,
            &format!("/runs/{}", seg(&run)),
            None,
            None,
            &[("authorization", "Basic b3duZXI6cHc=")],
        )
        .await;
    basic.expect(401, Some("unauthenticated"));
    assert_eq!(basic.header("www-authenticate"), Some("Bearer"));
    for (method, path) in [
        (Method::GET, format!("/runs/{}", seg(&run))),
        (Method::GET, format!("/runs/{}/events/poll?timeout=1", seg(&run))),
        (Method::GET, format!("/runs/{}/interrupts/gate", seg(&run))),
        (Method::GET, "/interrupts".to_string()),
        (Method::GET, "/workflows/conformance-approval".to_string()),
    ] {
        let r = s.call(method, &path, None, None, &[]).await;
        r.expect(401, Some("unauthenticated"));
    }
    s.call(
        Method::POST,
        &format!("/runs/{}/interrupts/gate", seg(&run)),
        None,
        Some(&json!({"resumeValue": {"action": "accept"}})),
        &[],
    )
    .await
    .expect(401, Some("unauthenticated"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    // Discovery needs no credentials.
    s.call(Method::GET, "/.well-known/openwop", None, None, &[])
        .await
        .expect(200, None);
}

#[tokio::test]
async fn missing_scopes_are_403_forbidden() {
    let (s, _dir) = Server::start_fresh().await;
    let run = s.create("conformance-approval").await;
    let body = json!({"workflowId": "conformance-approval"});
    s.post("/runs", READER, &body)
        .await
        .expect(403, Some("forbidden"));
    s.post("/runs", APPROVER_ONLY, &body)
        .await
        .expect(403, Some("forbidden"));
    let r = s.resolve(&run, "gate", READER, json!({"action": "accept"})).await;
    r.expect(403, Some("forbidden"));
    assert!(r.body["message"].as_str().unwrap().contains("approvals:respond"));
    s.post(&format!("/runs/{}/cancel", seg(&run)), READER, &json!({}))
        .await
        .expect(403, Some("forbidden"));
    s.post(&format!("/runs/{}/cancel", seg(&run)), APPROVER_ONLY, &json!({}))
        .await
        .expect(403, Some("forbidden"));
    // Reading is allowed.
    s.get(&format!("/runs/{}", seg(&run)), READER)
        .await
        .expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    assert!(s.interrupt(&run, "gate").await["votes"]
        .as_array()
        .unwrap()
        .is_empty());
    // Workflows are admin-only to write.
    let def = gate_workflow("by-non-admin", json!({}));
    for key in [OWNER, ANN, READER] {
        s.put("/workflows/by-non-admin", key, &def)
            .await
            .expect(403, Some("forbidden"));
    }
    s.get("/workflows/by-non-admin", OWNER)
        .await
        .expect(404, Some("not_found"));
    // The admin scope implies the others.
    let admin_run = s
        .create_as(ADMIN, json!({"workflowId": "conformance-noop"}))
        .await;
    s.get(&format!("/runs/{}", seg(&admin_run)), ADMIN)
        .await
        .expect(200, None);
}

// ----- 6. workflows and discovery ---------------------------------------------------

#[tokio::test]
async fn put_workflow_creates_then_replaces_and_get_returns_it() {
    let (s, _dir) = Server::start_fresh().await;
    let def = gate_workflow("put-me", json!({}));
    let r = s.put("/workflows/put-me", ADMIN, &def).await;
    r.expect(201, None);
    assert_eq!(r.body["id"], "put-me");
    let got = s.get("/workflows/put-me", OWNER).await;
    got.expect(200, None);
    assert_eq!(got.body["nodes"][0]["id"], "gate");
    assert_eq!(got.body["nodes"][0]["typeId"], "core.approvalGate");

    let mut replaced = gate_workflow("put-me", json!({"title": "Second version"}));
    replaced["version"] = json!("2");
    let r = s.put("/workflows/put-me", ADMIN, &replaced).await;
    r.expect(200, None);
    assert_eq!(r.body["version"], "2");
    let got = s.get("/workflows/put-me", OWNER).await;
    assert_eq!(got.body["nodes"][0]["config"]["title"], "Second version");
    // The id may come from the path alone.
    let mut no_id = gate_workflow("from-path", json!({}));
    no_id.as_object_mut().unwrap().remove("id");
    s.put("/workflows/from-path", ADMIN, &no_id)
        .await
        .expect(201, None);
    let run = s.create("from-path").await;
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    // A body id that differs from the path is refused.
    let r = s
        .put("/workflows/other-id", ADMIN, &gate_workflow("put-me", json!({})))
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "id");
    // Fixtures are served as loaded.
    let f = s.get("/workflows/conformance-approval", READER).await;
    f.expect(200, None);
    assert_eq!(f.body["nodes"][0]["id"], "gate");
    s.get("/workflows/nope", READER)
        .await
        .expect(404, Some("not_found"));
    let list = s.get("/workflows", READER).await;
    list.expect(200, None);
    let ids: Vec<&str> = list.body["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"put-me") && ids.contains(&"conformance-noop"),
        "{ids:?}"
    );
}

#[tokio::test]
async fn invalid_workflows_are_400_naming_the_node() {
    let (s, _dir) = Server::start_fresh().await;
    let cases = [
        (
            "dup",
            json!({"id": "dup", "nodes": [
                {"id": "a", "typeId": "core.noop"},
                {"id": "a", "typeId": "core.noop"}]}),
            "a",
        ),
        (
            "unknown-type",
            json!({"id": "unknown-type", "nodes": [{"id": "mystery", "typeId": "core.nope"}]}),
            "mystery",
        ),
        (
            "bad-resume",
            gate_workflow("bad-resume", json!({"resumeSchema": {"type": 12}})),
            "gate",
        ),
        (
            "resume-not-object",
            gate_workflow("resume-not-object", json!({"resumeSchema": {"type": "string"}})),
            "gate",
        ),
        (
            "no-title",
            json!({"id": "no-title", "nodes": [{"id": "g1", "typeId": "core.approvalGate", "config": {"actions": ["accept"]}}]}),
            "g1",
        ),
        (
            "bad-action",
            json!({"id": "bad-action", "nodes": [gate("g2", json!({"title": "t", "actions": ["approve"]}))]}),
            "g2",
        ),
    ];
    for (id, def, node) in cases {
        let r = s.put(&format!("/workflows/{id}"), ADMIN, &def).await;
        r.expect(400, Some("validation_error"));
        let msg = r.body["message"].as_str().unwrap();
        assert!(msg.contains(&format!("node \"{node}\"")), "{id}: {msg}");
        assert_eq!(r.body["details"]["nodeId"], node, "{id}: {}", r.body);
        s.get(&format!("/workflows/{id}"), OWNER)
            .await
            .expect(404, Some("not_found"));
    }
    // Edges to unknown nodes name the edge.
    let r = s
        .put(
            "/workflows/bad-edge",
            ADMIN,
            &json!({"id": "bad-edge", "nodes": [{"id": "a", "typeId": "core.noop"}],
                    "edges": [{"id": "e1", "sourceNodeId": "a", "targetNodeId": "ghost"}]}),
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert!(r.body["message"].as_str().unwrap().contains("ghost"));
    // Not an object.
    s.put("/workflows/arr", ADMIN, &json!([1, 2]))
        .await
        .expect(400, Some("validation_error"));
    // A refused replacement leaves the registered definition alone.
    s.register(gate_workflow("keep", json!({}))).await;
    s.put(
        "/workflows/keep",
        ADMIN,
        &json!({"id": "keep", "nodes": [{"id": "x", "typeId": "core.nope"}]}),
    )
    .await
    .expect(400, Some("validation_error"));
    assert_eq!(
        s.get("/workflows/keep", OWNER).await.body["nodes"][0]["id"],
        "gate"
    );
}

#[tokio::test]
async fn discovery_lists_fixtures_and_interrupt_facets_with_etag() {
    let (s, _dir) = Server::start_fresh().await;
    let r = s.call(Method::GET, "/.well-known/openwop", None, None, &[]).await;
    r.expect(200, None);
    assert_eq!(r.header("openwop-version"), Some("2.0"));
    let d = &r.body;
    assert_eq!(d["protocolVersions"], json!(["2.0"]));
    assert_eq!(d["preferredVersion"], "2.0");
    assert_eq!(d["eventLogSchemaVersion"], 3);
    let fixtures: Vec<&str> = d["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for f in [
        "conformance-approval",
        "conformance-approval-reject-loopback",
        "conformance-approval-reject-routed",
        "conformance-approval-timeout",
        "conformance-approval-timeout-approve",
        "conformance-cancellable",
        "conformance-clarification",
        "conformance-noop",
    ] {
        assert!(fixtures.contains(&f), "{f} missing from {fixtures:?}");
    }
    let i = &d["interrupt"];
    assert_eq!(i["tokenAlgs"], json!(["hs256"]));
    let kinds: Vec<&str> = i["refKinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"principal"));
    assert!(kinds.iter().all(|k| ["principal", "group", "role"].contains(k)));
    assert!(i["status"].is_string() && i["since"].is_string() && i["witness"].is_string());
    assert!(!r.body.to_string().contains("\"edit\""));

    let etag = r.header("etag").expect("ETag").to_string();
    let again = s
        .call(
            Method::GET,
            "/.well-known/openwop",
            None,
            None,
            &[("if-none-match", &etag)],
        )
        .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(again.header("openwop-version"), Some("2.0"));
    assert_eq!(again.body, Value::Null);
    let stale = s
        .call(
            Method::GET,
            "/.well-known/openwop",
            None,
            None,
            &[("if-none-match", "\"not-the-etag\"")],
        )
        .await;
    stale.expect(200, None);
}

#[tokio::test]
async fn discovery_lists_the_conformance_fixtures_only() {
    // A second instance-wide directory with a deployment's own workflow.
    let dir = TestDir::new();
    let private = dir.dir.path().join("private-workflows");
    std::fs::create_dir(&private).unwrap();
    let own = gate_workflow("expense-approval", json!({}));
    std::fs::write(private.join("expense-approval.json"), own.to_string()).unwrap();
    let config = std::fs::read_to_string(dir.config_path()).unwrap();
    let private = serde_json::to_string(&private.to_string_lossy()).unwrap();
    assert!(config.contains("dirs = ["));
    std::fs::write(
        dir.config_path(),
        config.replacen("dirs = [", &format!("dirs = [{private}, "), 1),
    )
    .unwrap();
    let s = Server::start(&dir).await;
    // A tenant's own workflow named like a fixture is not instance-wide.
    s.register(gate_workflow("conformance-of-acme", json!({}))).await;

    // Both are loaded and runnable...
    let listed = s.get("/workflows", OWNER).await;
    listed.expect(200, None);
    let scope_of = |id: &str| {
        listed.body["workflows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == id)
            .map(|w| w["scope"].clone())
    };
    assert_eq!(scope_of("expense-approval"), Some(json!("instance")));
    assert_eq!(scope_of("conformance-of-acme"), Some(json!("tenant")));
    s.create("expense-approval").await;

    // ...but discovery lists the conformance fixtures only.
    let d = s.call(Method::GET, "/.well-known/openwop", None, None, &[]).await;
    d.expect(200, None);
    let fixtures: Vec<&str> = d.body["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let mut expected: Vec<String> =
        std::fs::read_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../workflows/conformance"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| {
                let raw: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
                raw["id"].as_str().unwrap().to_string()
            })
            .collect();
    expected.sort();
    assert_eq!(fixtures, expected, "{}", d.body);
    assert!(!fixtures.contains(&"expense-approval"));
    assert!(!fixtures.contains(&"conformance-of-acme"));
}
