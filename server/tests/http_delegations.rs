//! Delegation and reassignment over REST against a real server: the
//! delegate votes in the delegator's seat, and every bypass (another
//! tenant, a key without the scope, a replayed revoke, bad bodies) is
//! refused with its status and nothing decided.

mod common;

use common::*;
use serde_json::{json, Value};

/// The common server, with addresses for the people (a delegate must be a
/// person: a console password or an email address).
async fn start() -> (Server, TestDir) {
    let dir = TestDir::new();
    dir.give_addresses(&["ann", "bob", "cat", "dan", "root", "eve"]);
    let server = Server::start(&dir).await;
    server
        .register(gate_workflow(
            "pair",
            json!({"requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
        ))
        .await;
    (server, dir)
}

fn until_next_week() -> String {
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(7 * 86_400);
    tollgate::clock::rfc3339(at.duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64)
}

fn field(r: &Resp) -> &str {
    r.body["details"]["field"].as_str().unwrap_or("")
}

fn counted(interrupt: &Value) -> Vec<(String, Option<String>)> {
    interrupt["votes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["counted"] == true)
        .map(|v| {
            (
                v["principal"].as_str().unwrap().to_string(),
                v["castBy"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_delegate_votes_in_the_delegators_seat_over_rest() {
    let (server, _dir) = start().await;
    let run = server.create("pair").await;
    // Dan is not in finance.
    server
        .resolve(&run, "gate", DAN, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
    let d = server
        .post(
            "/delegations",
            ANN,
            &json!({"delegate": "dan", "endsAt": until_next_week(), "reason": "leave"}),
        )
        .await;
    d.expect(201, None);
    assert_eq!(
        (d.body["state"].as_str(), d.body["delegator"].as_str()),
        (Some("active"), Some("ann"))
    );
    server
        .resolve(&run, "gate", DAN, json!({"action": "accept"}))
        .await
        .expect(200, None);
    assert_eq!(
        counted(&server.interrupt(&run, "gate").await),
        [("ann".into(), Some("dan".into()))]
    );
    // Dan again is still one seat; Bob's is the second.
    server
        .resolve(&run, "gate", DAN, json!({"action": "accept"}))
        .await
        .expect(200, None);
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");
    server
        .resolve(&run, "gate", BOB, json!({"action": "accept"}))
        .await
        .expect(200, None);
    assert_eq!(server.snapshot(&run).await["status"], "completed");

    // Both see it; the tenant's list is an admin's.
    let id = d.body["delegationId"].as_str().unwrap().to_string();
    for key in [ANN, DAN] {
        let list = server.get("/delegations", key).await;
        list.expect(200, None);
        assert_eq!(list.body["items"][0]["delegationId"], id.as_str());
    }
    assert_eq!(server.get("/delegations", CAT).await.body["items"], json!([]));
    server
        .get("/delegations?all=true", CAT)
        .await
        .expect(403, Some("forbidden"));
    server.get("/delegations?all=true", ADMIN).await.expect(200, None);
    server
        .get("/delegations?everyone=1", ANN)
        .await
        .expect(400, Some("validation_error"));

    // Revoked once by the delegate; again is a conflict; another tenant sees nothing.
    let path = format!("/delegations/{id}/revoke");
    server
        .post(&path, EVE, &json!({}))
        .await
        .expect(404, Some("not_found"));
    server
        .post(&path, CAT, &json!({}))
        .await
        .expect(404, Some("not_found"));
    let r = server.post(&path, DAN, &json!({})).await;
    r.expect(200, None);
    assert_eq!(r.body["state"], "revoked");
    server.post(&path, ANN, &json!({})).await.expect(409, None);
    let next = server.create("pair").await;
    server
        .resolve(&next, "gate", DAN, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
}

#[tokio::test]
async fn bad_delegations_are_refused_with_the_field_named() {
    let (server, _dir) = start().await;
    let week = until_next_week();
    for (body, want) in [
        (json!({"delegate": "dan"}), "endsAt"),
        (json!({"delegate": "dan", "endsAt": "soon"}), "endsAt"),
        (
            json!({"delegate": "dan", "endsAt": "2001-01-01T00:00:00Z"}),
            "endsAt",
        ),
        (json!({"delegate": "ann", "endsAt": week}), "delegate"),
        (json!({"delegate": "eve", "endsAt": week}), "delegate"),
        (json!({"delegate": "owner", "endsAt": week}), "delegate"),
        (json!({"delegate": "dan", "endsAt": week, "extra": 1}), "extra"),
        (
            json!({"delegate": "dan", "endsAt": week, "reason": "x".repeat(501)}),
            "reason",
        ),
    ] {
        let r = server.post("/delegations", ANN, &body).await;
        r.expect(400, Some("validation_error"));
        assert_eq!(field(&r), want, "{body}: {}", r.body);
    }
    // Someone else's decisions: only an admin; a key that cannot decide cannot delegate.
    let for_bob = json!({"delegate": "dan", "delegator": "bob", "endsAt": week});
    server
        .post("/delegations", ANN, &for_bob)
        .await
        .expect(403, Some("forbidden"));
    server
        .post("/delegations", ADMIN, &for_bob)
        .await
        .expect(201, None);
    server
        .post(
            "/delegations",
            READER,
            &json!({"delegate": "dan", "endsAt": week}),
        )
        .await
        .expect(403, Some("forbidden"));
    // Eve (tenant `other`) cannot reach acme's people.
    let r = server
        .post("/delegations", EVE, &json!({"delegate": "dan", "endsAt": week}))
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(field(&r), "delegate");
}

#[tokio::test]
async fn an_admin_reassigns_a_seat_on_one_pending_approval() {
    let (server, _dir) = start().await;
    let run = server.create("pair").await;
    let other = server.create("pair").await;
    let path = format!("/runs/{}/interrupts/gate/reassign", seg(&run));
    let body = json!({"from": "ann", "to": "cat", "reason": "Ann is away"});
    server
        .post(&path, ANN, &body)
        .await
        .expect(403, Some("forbidden"));
    server.post(&path, EVE, &body).await.expect(403, None);
    let r = server
        .post(&path, ADMIN, &json!({"from": "cat", "to": "dan"}))
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(field(&r), "from");
    let r = server.post(&path, ADMIN, &json!({"from": "ann"})).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(field(&r), "to");
    let r = server.post(&path, ADMIN, &body).await;
    r.expect(201, None);
    assert_eq!(r.body["interrupt"]["nodeId"], "gate");
    // Cat decides in Ann's place here, and nowhere else.
    server
        .resolve(&other, "gate", CAT, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
    server
        .resolve(&run, "gate", CAT, json!({"action": "reject"}))
        .await
        .expect(200, None);
    assert_eq!(server.snapshot(&run).await["status"], "failed");
    let resolved = of_type(&server.events(&run).await, "interrupt.resolved", Some("gate"))[0].clone();
    assert_eq!(resolved["payload"]["x-tollgate-onBehalfOf"], "ann", "{resolved}");
    // Closed now: nothing to reassign.
    server.post(&path, ADMIN, &body).await.expect(409, None);
}
