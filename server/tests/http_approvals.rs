//! Approvals with several API keys for several principals: quorum, rejection
//! policy, override, eligibility and self-approval, over HTTP.

mod common;

use common::*;
use serde_json::{json, Value};

fn votes(view: &Value) -> Vec<Value> {
    view["votes"].as_array().expect("votes").clone()
}

fn vote_summary(view: &Value) -> Vec<(String, String, bool)> {
    votes(view)
        .iter()
        .map(|v| {
            (
                v["principal"].as_str().unwrap().to_string(),
                v["eligibleVia"].as_str().unwrap().to_string(),
                v["counted"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// Asserts a vote answered 200 with `status`.
#[track_caller]
fn voted(r: &Resp, status: &str) {
    r.expect(200, None);
    assert_eq!(r.body["status"], status, "{}", r.body);
}

#[tokio::test]
async fn quorum_of_three_needs_three_distinct_people() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q3", json!({"requiredApprovals": 3})))
        .await;
    let run = s.create("q3").await;
    for (i, key) in [ANN, BOB].into_iter().enumerate() {
        voted(
            &s.resolve(&run, "gate", key, json!({"action": "accept"})).await,
            "waiting-approval",
        );
        // Immediately, without polling: still waiting, nothing resolved.
        assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
        assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 0);
        let view = s.interrupt(&run, "gate").await;
        assert_eq!(view["status"], "pending");
        assert_eq!(view["quorum"]["accepts"], i as u64 + 1);
        assert_eq!(view["quorum"]["requiredApprovals"], 3);
    }
    voted(
        &s.resolve(&run, "gate", CAT, json!({"action": "accept"})).await,
        "completed",
    );
    assert_eq!(s.wait_status(&run, "completed", 10).await["status"], "completed");
    let events = s.events(&run).await;
    let resolved = of_type(&events, "interrupt.resolved", None);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["payload"]["decision"], "granted");
    assert_eq!(resolved[0]["payload"]["resolvedBy"]["subjectId"], "cat");
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["status"], "resolved");
    assert_eq!(view["quorum"]["accepts"], 3);
    assert_eq!(
        vote_summary(&view),
        [
            ("ann".into(), "scope:approvals:respond".into(), true),
            ("bob".into(), "scope:approvals:respond".into(), true),
            ("cat".into(), "scope:approvals:respond".into(), true),
        ]
    );
    // No vendor vote events in the log.
    assert!(types(&events).iter().all(|t| !t.contains("vote")));
}

#[tokio::test]
async fn the_same_person_voting_twice_counts_once_even_with_two_keys() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q2", json!({"requiredApprovals": 2})))
        .await;
    let run = s.create("q2").await;
    for key in [ANN, ANN, ANN2, APPROVER_ONLY] {
        voted(
            &s.resolve(&run, "gate", key, json!({"action": "accept"})).await,
            "waiting-approval",
        );
    }
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["quorum"]["accepts"], 1);
    let counted: Vec<_> = votes(&view)
        .into_iter()
        .filter(|v| v["counted"] == true)
        .collect();
    assert_eq!(counted.len(), 1);
    assert_eq!(counted[0]["principal"], "ann");
    assert!(votes(&view).iter().all(|v| v["principal"] == "ann"));
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 0);
    voted(
        &s.resolve(&run, "gate", BOB, json!({"action": "accept"})).await,
        "completed",
    );
}

#[tokio::test]
async fn a_later_vote_replaces_the_earlier_one() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow(
        "q3m",
        json!({"requiredApprovals": 3, "rejectionPolicy": "majority"}),
    ))
    .await;
    let run = s.create("q3m").await;
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "reject"})).await,
        "waiting-approval",
    );
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["quorum"]["rejects"], 0);
    assert_eq!(view["quorum"]["accepts"], 1);
    // bob's reject alone is not a majority of three.
    voted(
        &s.resolve(&run, "gate", BOB, json!({"action": "reject"})).await,
        "waiting-approval",
    );
    assert_eq!(s.interrupt(&run, "gate").await["quorum"]["rejects"], 1);
}

#[tokio::test]
async fn single_veto_decides_on_one_reject() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q3", json!({"requiredApprovals": 3})))
        .await;
    let run = s.create("q3").await;
    assert_eq!(
        s.interrupt(&run, "gate").await["quorum"]["rejectionPolicy"],
        "single-veto"
    );
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    voted(
        &s.resolve(&run, "gate", BOB, json!({"action": "reject"})).await,
        "failed",
    );
    let snap = s.wait_status(&run, "failed", 10).await;
    assert_eq!(snap["error"]["code"], "approval_rejected");
    let events = s.events(&run).await;
    let resolved = of_type(&events, "interrupt.resolved", None);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["payload"]["decision"], "rejected");
    assert_eq!(resolved[0]["payload"]["action"], "reject");
    // Late votes are refused.
    s.resolve(&run, "gate", CAT, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));
}

#[tokio::test]
async fn rd4_majority_needs_more_than_half_of_the_quorum_to_reject() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow(
        "q3m",
        json!({"requiredApprovals": 3, "rejectionPolicy": "majority"}),
    ))
    .await;
    let run = s.create("q3m").await;
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "reject"})).await,
        "waiting-approval",
    );
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 0);
    voted(
        &s.resolve(&run, "gate", BOB, json!({"action": "reject"})).await,
        "failed",
    );
    let snap = s.wait_status(&run, "failed", 10).await;
    assert_eq!(snap["status"], "failed");
    assert_eq!(snap["error"]["code"], "approval_rejected");
    let events = s.events(&run).await;
    assert_eq!(count(&events, "interrupt.resolved"), 1);
    let failed = of_type(&events, "run.failed", None);
    assert_eq!(failed[0]["payload"]["failedNodeId"], "gate");
}

#[tokio::test]
async fn override_principal_decides_alone_only_where_the_gate_allows_it() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow(
        "ov",
        json!({"requiredApprovals": 3, "overrideBypassesQuorum": true}),
    ))
    .await;
    s.register(gate_workflow("nov", json!({"requiredApprovals": 3})))
        .await;
    let run = s.create("ov").await;
    // An ordinary voter still counts once.
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    voted(
        &s.resolve(&run, "gate", BOSS, json!({"action": "accept"})).await,
        "completed",
    );
    let events = s.events(&run).await;
    let resolved = of_type(&events, "interrupt.resolved", None);
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["payload"]["decision"], "overridden");
    assert_eq!(resolved[0]["payload"]["resolvedBy"]["subjectId"], "boss");

    // Without overrideBypassesQuorum the override principal is one vote.
    let run = s.create("nov").await;
    voted(
        &s.resolve(&run, "gate", BOSS, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["quorum"]["accepts"], 1);
    assert_eq!(votes(&view)[0]["principal"], "boss");
    assert_eq!(count(&s.events(&run).await, "interrupt.resolved"), 0);
}

#[tokio::test]
async fn eligibility_by_list_group_and_role_refuses_others_without_changes() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow(
        "el",
        json!({"requiredApprovals": 3, "approversList": ["cat"],
               "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"]}),
    ))
    .await;
    let run = s.create("el").await;
    let events_before = s.events(&run).await.len();
    // boss is in no list, group or role; owner may not approve their own run.
    for key in [BOSS, OWNER] {
        let r = s.resolve(&run, "gate", key, json!({"action": "accept"})).await;
        r.expect(403, Some("forbidden"));
    }
    let view = s.interrupt(&run, "gate").await;
    assert!(votes(&view).is_empty(), "{view}");
    assert_eq!(view["quorum"]["accepts"], 0);
    assert_eq!(view["quorum"]["approversList"], json!(["cat"]));
    assert_eq!(view["quorum"]["approverGroupRefs"], json!(["finance"]));
    assert_eq!(view["quorum"]["approverRoleRefs"], json!(["cfo"]));
    assert_eq!(view["status"], "pending");
    assert_eq!(s.events(&run).await.len(), events_before);
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");

    voted(
        &s.resolve(&run, "gate", CAT, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    voted(
        &s.resolve(&run, "gate", ANN, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    // A refusal after some votes leaves them as they were.
    s.resolve(&run, "gate", BOSS, json!({"action": "reject"}))
        .await
        .expect(403, Some("forbidden"));
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["quorum"]["accepts"], 2);
    assert_eq!(view["quorum"]["rejects"], 0);
    assert_eq!(votes(&view).len(), 2);
    voted(
        &s.resolve(&run, "gate", DAN, json!({"action": "accept"})).await,
        "completed",
    );
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["status"], "resolved");
    assert_eq!(
        vote_summary(&view),
        [
            ("cat".into(), "principal:cat".into(), true),
            ("ann".into(), "group:finance".into(), true),
            ("dan".into(), "role:cfo".into(), true),
        ]
    );
    for v in votes(&view) {
        assert!(v["decidedAt"].is_string());
        assert_eq!(v["action"], "accept");
    }
}

#[tokio::test]
async fn each_ref_kind_alone_admits_only_its_members() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("by-list", json!({"approversList": ["cat"]})))
        .await;
    s.register(gate_workflow(
        "by-qualified-list",
        json!({"approversList": ["tollgate:cat"]}),
    ))
    .await;
    s.register(gate_workflow(
        "by-group",
        json!({"approverGroupRefs": ["finance"]}),
    ))
    .await;
    s.register(gate_workflow("by-role", json!({"approverRoleRefs": ["cfo"]})))
        .await;
    // (workflow, refused keys, admitted key, eligibleVia)
    let cases = [
        ("by-list", vec![ANN, BOSS, OWNER], CAT, "principal:cat"),
        ("by-qualified-list", vec![ANN, DAN], CAT, "principal:cat"),
        ("by-group", vec![CAT, DAN, BOSS], ANN, "group:finance"),
        ("by-role", vec![ANN, CAT, BOSS], BOB, "role:cfo"),
    ];
    for (wf, refused, admitted, via) in cases {
        let run = s.create(wf).await;
        for key in refused {
            s.resolve(&run, "gate", key, json!({"action": "accept"}))
                .await
                .expect(403, Some("forbidden"));
        }
        assert!(votes(&s.interrupt(&run, "gate").await).is_empty(), "{wf}");
        assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
        voted(
            &s.resolve(&run, "gate", admitted, json!({"action": "accept"}))
                .await,
            "completed",
        );
        let view = s.interrupt(&run, "gate").await;
        assert_eq!(votes(&view)[0]["eligibleVia"], via, "{wf}");
    }
}

#[tokio::test]
async fn self_approval_is_refused_when_more_than_one_approval_is_required() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q2", json!({"requiredApprovals": 2})))
        .await;
    s.register(gate_workflow(
        "q2-self-ok",
        json!({"requiredApprovals": 2, "preventSelfApproval": false}),
    ))
    .await;
    let run = s.create("q2").await;
    let r = s.resolve(&run, "gate", OWNER, json!({"action": "accept"})).await;
    r.expect(403, Some("forbidden"));
    let view = s.interrupt(&run, "gate").await;
    assert!(votes(&view).is_empty());
    assert_eq!(view["quorum"]["preventSelfApproval"], true);
    // Whoever starts the run is its owner: root started this one.
    let anns = s.create_as(ADMIN, json!({"workflowId": "q2"})).await;
    s.resolve(&anns, "gate", ADMIN, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
    voted(
        &s.resolve(&anns, "gate", OWNER, json!({"action": "accept"})).await,
        "waiting-approval",
    );
    // With one approval required the owner may decide alone.
    let single = s.create("conformance-approval").await;
    voted(
        &s.resolve(&single, "gate", OWNER, json!({"action": "accept"}))
            .await,
        "completed",
    );
    // The gate can switch the rule off.
    let run = s.create("q2-self-ok").await;
    voted(
        &s.resolve(&run, "gate", OWNER, json!({"action": "accept"})).await,
        "waiting-approval",
    );
}

#[tokio::test]
async fn inspecting_an_interrupt_shows_contract_votes_and_quorum() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow(
        "insp",
        json!({"requiredApprovals": 2, "rejectionPolicy": "majority",
               "approverGroupRefs": ["finance"], "timeoutMs": 3600000}),
    ))
    .await;
    let run = s.create("insp").await;
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["runId"], run.as_str());
    assert_eq!(view["nodeId"], "gate");
    assert_eq!(view["workflowId"], "insp");
    assert_eq!(view["kind"], "approval");
    assert_eq!(view["status"], "pending");
    assert!(view["interruptId"].as_str().unwrap().starts_with("acme/"));
    assert!(view["key"].as_str().unwrap().ends_with(":gate:0"), "{view}");
    assert!(view["deadline"].is_string());
    assert!(view["resumeSchema"].is_object());
    assert_eq!(view["outcomes"], json!(["accept", "reject"]));
    assert_eq!(
        view["quorum"],
        json!({"requiredApprovals": 2, "rejectionPolicy": "majority", "accepts": 0, "rejects": 0,
               "approversList": [], "approverGroupRefs": ["finance"], "approverRoleRefs": [],
               "preventSelfApproval": true})
    );
    voted(
        &s.resolve(
            &run,
            "gate",
            BOB,
            json!({"action": "reject", "feedback": "too expensive"}),
        )
        .await,
        "waiting-approval",
    );
    let view = s.interrupt(&run, "gate").await;
    let v = &votes(&view)[0];
    assert_eq!(v["principal"], "bob");
    assert_eq!(v["action"], "reject");
    assert_eq!(v["eligibleVia"], "group:finance");
    assert_eq!(v["counted"], true);
    assert_eq!(v["resumeValue"]["feedback"], "too expensive");
    assert_eq!(view["quorum"]["rejects"], 1);
    // The host extension listing shows it as pending, with the same votes.
    let list = s.get("/interrupts?status=pending&workflowId=insp", READER).await;
    list.expect(200, None);
    let items = list.body["interrupts"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["votes"], view["votes"]);
    // Another tenant sees nothing of it.
    s.get(&format!("/runs/{}/interrupts/gate", seg(&run)), EVE)
        .await
        .expect(403, Some("id_tenant_mismatch"));
    let eve_list = s.get("/interrupts", EVE).await;
    eve_list.expect(200, None);
    assert!(eve_list.body["interrupts"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn concurrent_votes_of_five_people_on_a_quorum_of_three_decide_once() {
    let (s, _dir) = Server::start_fresh().await;
    s.register(gate_workflow("q3", json!({"requiredApprovals": 3})))
        .await;
    let s = std::sync::Arc::new(s);
    let run = s.create("q3").await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(5));
    let mut tasks = Vec::new();
    for key in [ANN, BOB, CAT, DAN, BOSS] {
        let (s, run, barrier) = (s.clone(), run.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.resolve(&run, "gate", key, json!({"action": "accept"})).await
        }));
    }
    let (mut waiting, mut completed, mut late) = (0, 0, 0);
    for t in tasks {
        let r = t.await.unwrap();
        match (r.status, r.body["status"].as_str()) {
            (200, Some("waiting-approval")) => waiting += 1,
            (200, Some("completed")) => completed += 1,
            (409, _) => {
                assert_eq!(r.code(), "interrupt_already_resolved");
                late += 1
            }
            _ => panic!("unexpected {} {}", r.status, r.body),
        }
    }
    assert_eq!((waiting, completed, late), (2, 1, 2));
    let events = s.events(&run).await;
    assert_eq!(count(&events, "interrupt.resolved"), 1);
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(view["quorum"]["accepts"], 3);
    assert_eq!(votes(&view).len(), 3);
}
