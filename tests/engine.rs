//! Engine tests against a real SQLite file, with an injected clock.

use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use tollgate::{Actor, CreateRun, Engine, EngineError, EngineOptions, Idem, ManualClock, Principal};
use tollgate_wire::MailReason;

const T0: i64 = 1_800_000_000_000;

struct Fixture {
    engine: Engine,
    clock: ManualClock,
    _dir: tempfile::TempDir,
}

async fn open_at(path: &Path, clock: ManualClock) -> Engine {
    let mut opts = EngineOptions::new(tollgate::store::testing::database_url(path).await.unwrap());
    opts.clock = Arc::new(clock);
    Engine::open(opts).await.unwrap()
}

/// Undelivered messages of `kind`, oldest first (a view: nothing is claimed).
async fn pending_of(engine: &Engine, kind: &str) -> Vec<tollgate::engine::outbox::OutboxItem> {
    let mut items = engine
        .outbox_list(&tollgate::engine::outbox::OutboxFilter {
            kind: Some(kind.into()),
            status: Some("pending".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    items.sort_by_key(|i| i.id);
    items
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let engine = open_at(&dir.path().join("t.db"), clock.clone()).await;
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/conformance");
    for (path, r) in engine.load_workflow_dir(&conformance).await {
        r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for (id, groups, roles, is_override) in [
        ("owner", vec![], vec![], false),
        ("ann", vec!["finance"], vec![], false),
        ("bob", vec!["finance"], vec!["cfo"], false),
        ("cat", vec![], vec![], false),
        ("boss", vec![], vec![], true),
    ] {
        engine
            .upsert_principal(Principal {
                id: id.into(),
                tenant: "acme".into(),
                name: id.into(),
                email: None,
                groups: groups.into_iter().map(String::from).collect(),
                roles: roles.into_iter().map(String::from).collect(),
                is_override,
            })
            .await
            .unwrap();
        // Service principals: they respond while they hold a key that may.
        engine
            .put_api_key(
                &format!("{id}-key-0123456789"),
                id,
                &[
                    tollgate::auth::Scope::RunsRead,
                    tollgate::auth::Scope::ApprovalsRespond,
                ],
                None,
            )
            .await
            .unwrap();
    }
    Fixture {
        engine,
        clock,
        _dir: dir,
    }
}

async fn actor(engine: &Engine, id: &str) -> Actor {
    Actor::api_key(
        engine.principal(id).await.unwrap().unwrap(),
        tollgate::auth::ALL_SCOPES[..4].to_vec(),
    )
}

async fn start(engine: &Engine, workflow: &str, mut body: Value) -> tollgate::RunId {
    body["workflowId"] = json!(workflow);
    let req: CreateRun = serde_json::from_value(body).unwrap();
    let owner = actor(engine, "owner").await;
    engine
        .create_run(req, &owner, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

/// Starts a run of `workflow` as `who`.
async fn start_as(engine: &Engine, workflow: &str, who: &Actor) -> tollgate::RunId {
    let req = CreateRun {
        workflow_id: workflow.into(),
        ..Default::default()
    };
    engine
        .create_run(req, who, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

/// How many interrupts each of `people` has in their inbox.
async fn inbox_totals(engine: &Engine, people: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    for id in people {
        let p = engine.principal(id).await.unwrap().unwrap();
        let page = engine
            .pending_for(&p, &tollgate::engine::inbox::InboxFilter::default())
            .await
            .unwrap();
        out.push(page.total);
    }
    out
}

async fn resolve(
    engine: &Engine,
    run: &tollgate::RunId,
    node: &str,
    who: &str,
    rv: Value,
) -> Result<tollgate::Resolved, EngineError> {
    let a = actor(engine, who).await;
    engine
        .resolve(run, node, rv, &a, None)
        .await
        .and_then(|o| o.result)
}

async fn snapshot(engine: &Engine, run: &tollgate::RunId) -> Value {
    engine.snapshot(run, &actor(engine, "owner").await).await.unwrap()
}

async fn events(engine: &Engine, run: &tollgate::RunId) -> Vec<tollgate::RunEvent> {
    engine
        .events_after(run, &actor(engine, "owner").await, -1, 10_000)
        .await
        .unwrap()
        .0
}

fn types(evs: &[tollgate::RunEvent]) -> Vec<String> {
    evs.iter().map(|e| e.event_type.to_string()).collect()
}

async fn assert_projection_matches_log(engine: &Engine, run: &tollgate::RunId) {
    let diff = engine.verify_projection(run).await.unwrap();
    assert!(diff.is_empty(), "projection differs from the log: {diff:?}");
}

async fn register(engine: &Engine, def: Value) {
    engine.register_workflow(def).await.unwrap();
}

fn gate(id: &str, config: Value) -> Value {
    json!({"id": id, "typeId": "core.approvalGate", "config": config})
}

#[tokio::test]
async fn accept_completes_with_the_v2_event_order() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["status"], "waiting-approval");
    assert_eq!(s["currentNodeId"], "gate");
    assert_eq!(s["eventLogSchemaVersion"], 3);
    let r = resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(r.status, "completed");
    let evs = events(&f.engine, &run).await;
    assert_eq!(
        types(&evs),
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
    assert!(evs.iter().enumerate().all(|(i, e)| e.sequence == i as i64));
    let resolved = &evs[4].payload;
    assert_eq!(resolved["decision"], "granted");
    assert_eq!(resolved["action"], "accept");
    assert_eq!(resolved["resolvedBy"]["subjectId"], "ann");
    assert_eq!(evs[2].payload["kind"], "approval");
    assert!(evs[2].payload["key"].as_str().unwrap().ends_with(":gate:0"));
    assert_projection_matches_log(&f.engine, &run).await;
    // Completed: a second resolve is refused.
    let again = resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"})).await;
    assert!(matches!(again, Err(EngineError::AlreadyResolved(_))), "{again:?}");
}

#[tokio::test]
async fn reject_without_a_failure_edge_fails_the_run() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let r = resolve(
        &f.engine,
        &run,
        "gate",
        "ann",
        json!({"action": "reject", "feedback": "no"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, "failed");
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["error"]["code"], "approval_rejected");
    let evs = events(&f.engine, &run).await;
    let failed = evs.iter().find(|e| e.event_type == "node.failed").unwrap();
    assert_eq!(failed.payload["error"]["code"], "approval_rejected");
    assert_eq!(failed.payload["error"]["retryable"], false);
    let run_failed = evs.iter().find(|e| e.event_type == "run.failed").unwrap();
    assert_eq!(run_failed.payload["failedNodeId"], "gate");
    assert_eq!(run_failed.payload["error"]["code"], "approval_rejected");
    let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
    assert_eq!(resolved.payload["decision"], "rejected");
    assert_eq!(
        evs.iter().filter(|e| e.event_type == "node.started").count(),
        1,
        "never retried"
    );
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn reject_routed_over_any_failed_completes_and_skips_the_success_branch() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval-reject-routed", json!({})).await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
        .await
        .unwrap();
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["status"], "completed");
    let evs = events(&f.engine, &run).await;
    let on = |t: &str, n: &str| {
        evs.iter()
            .any(|e| e.event_type == t && e.node_id.as_deref() == Some(n))
    };
    assert!(on("node.completed", "on-reject"));
    assert!(!on("node.started", "on-accept"));
    assert!(on("node.skipped", "on-accept"));
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn loopback_reasks_with_a_new_key_and_one_resolution_per_visit() {
    let f = fixture().await;
    let run = start(
        &f.engine,
        "conformance-approval-reject-loopback",
        json!({"configurable": {"version": 1, "run": {"recursionLimit": 20}}}),
    )
    .await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
        .await
        .unwrap();
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-approval");
    let evs = events(&f.engine, &run).await;
    let keys: Vec<&str> = evs
        .iter()
        .filter(|e| e.event_type == "interrupt.requested")
        .map(|e| e.payload["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
    assert_eq!(
        evs.iter()
            .filter(|e| e.event_type == "interrupt.resolved")
            .count(),
        1
    );
    // The second visit is a fresh decision: accept ends the loop.
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(snapshot(&f.engine, &run).await["status"], "completed");
    let evs = events(&f.engine, &run).await;
    assert_eq!(
        evs.iter()
            .filter(|e| e.event_type == "interrupt.resolved")
            .count(),
        2
    );
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn recursion_limit_stops_a_runaway_loop() {
    let f = fixture().await;
    let run = start(
        &f.engine,
        "conformance-approval-reject-loopback",
        json!({"configurable": {"version": 1, "run": {"recursionLimit": 2}}}),
    )
    .await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
        .await
        .unwrap();
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
        .await
        .unwrap();
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "recursion_limit_exceeded");
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn timeout_rejects_whatever_on_timeout_says() {
    let f = fixture().await;
    for wf in [
        "conformance-approval-timeout",
        "conformance-approval-timeout-approve",
    ] {
        let run = start(&f.engine, wf, json!({})).await;
        f.clock.advance(1499);
        assert_eq!(f.engine.fire_due().await.unwrap(), 0);
        assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-approval");
        f.clock.advance(1);
        assert_eq!(f.engine.fire_due().await.unwrap(), 1);
        let s = snapshot(&f.engine, &run).await;
        assert_eq!(s["status"], "failed", "{wf}");
        assert_eq!(s["error"]["code"], "approval_rejected");
        let evs = events(&f.engine, &run).await;
        let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
        assert_eq!(resolved.payload["action"], "timeout");
        assert_eq!(resolved.payload["decision"], "rejected");
        assert_eq!(resolved.payload["reason"], "timeout");
        assert!(resolved.payload.get("resolvedBy").is_none());
        assert!(!types(&evs).contains(&"run.completed".to_string()));
        assert_projection_matches_log(&f.engine, &run).await;
    }
}

/// Between the deadline and the timer's sweep, no vote is taken: it could
/// grant what the timeout rejects.
#[tokio::test]
async fn no_vote_is_taken_once_the_deadline_has_passed() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval-timeout-approve", json!({})).await;
    f.clock.advance(1500);
    let err = resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::AlreadyResolved(_)), "{err:?}");
    assert!(err.to_string().contains("deadline"), "{err}");
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-approval");
    assert!(!types(&events(&f.engine, &run).await).contains(&"interrupt.resolved".to_string()));
    // The sweep then rejects it, as a timeout always does.
    assert_eq!(f.engine.fire_due().await.unwrap(), 1);
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "approval_rejected");
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn state_survives_a_restart_and_a_missed_deadline_fires_after_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let clock = ManualClock::new(T0);
    let (pending_run, timed_run);
    {
        let f = Fixture {
            engine: open_at(&db, clock.clone()).await,
            clock: clock.clone(),
            _dir: tempfile::tempdir().unwrap(),
        };
        let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/conformance");
        f.engine.load_workflow_dir(&conformance).await;
        f.engine
            .upsert_principal(Principal {
                id: "owner".into(),
                tenant: "acme".into(),
                name: "o".into(),
                email: None,
                groups: vec![],
                roles: vec![],
                is_override: false,
            })
            .await
            .unwrap();
        pending_run = start(&f.engine, "conformance-approval", json!({})).await;
        timed_run = start(&f.engine, "conformance-approval-timeout", json!({})).await;
    }
    // "Down" for ten seconds: the 1.5 s deadline passes meanwhile.
    clock.advance(10_000);
    let engine = open_at(&db, clock.clone()).await;
    assert_eq!(
        snapshot(&engine, &pending_run).await["status"],
        "waiting-approval"
    );
    assert_eq!(engine.fire_due().await.unwrap(), 1);
    assert_eq!(snapshot(&engine, &timed_run).await["status"], "failed");
    assert_eq!(engine.fire_due().await.unwrap(), 0, "never decided twice");
    resolve(
        &engine,
        &pending_run,
        "gate",
        "owner",
        json!({"action": "accept"}),
    )
    .await
    .unwrap();
    assert_eq!(snapshot(&engine, &pending_run).await["status"], "completed");
    // The log holds exactly one request and one resolution per interrupt.
    for run in [&pending_run, &timed_run] {
        let evs = events(&engine, run).await;
        assert_eq!(
            evs.iter()
                .filter(|e| e.event_type == "interrupt.requested")
                .count(),
            1
        );
        assert_eq!(
            evs.iter()
                .filter(|e| e.event_type == "interrupt.resolved")
                .count(),
            1
        );
        assert_projection_matches_log(&engine, run).await;
    }
}

#[tokio::test]
async fn quorum_needs_distinct_people_and_policies_decide_rejection() {
    let f = fixture().await;
    register(&f.engine, json!({"id": "q3", "nodes": [gate("gate", json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 3}))]})).await;
    register(&f.engine, json!({"id": "q3m", "nodes": [gate("gate", json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 3, "rejectionPolicy": "majority"}))]})).await;

    let run = start(&f.engine, "q3", json!({})).await;
    for who in ["ann", "ann", "bob"] {
        let r = resolve(&f.engine, &run, "gate", who, json!({"action": "accept"}))
            .await
            .unwrap();
        assert_eq!(r.status, "waiting-approval", "the same person never counts twice");
    }
    let evs = events(&f.engine, &run).await;
    assert!(
        !types(&evs).contains(&"interrupt.resolved".to_string()),
        "undecided votes emit nothing"
    );
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert_eq!(view.quorum.as_ref().unwrap()["accepts"], 2);
    assert_eq!(view.votes.len(), 3);
    assert_eq!(view.votes.iter().filter(|v| v.counted).count(), 2);
    let r = resolve(&f.engine, &run, "gate", "cat", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(r.status, "completed");

    // single-veto: one reject decides.
    let run = start(&f.engine, "q3", json!({})).await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(
        resolve(&f.engine, &run, "gate", "bob", json!({"action": "reject"}))
            .await
            .unwrap()
            .status,
        "failed"
    );

    // majority: one reject of three is not enough; two are.
    let run = start(&f.engine, "q3m", json!({})).await;
    assert_eq!(
        resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
            .await
            .unwrap()
            .status,
        "waiting-approval"
    );
    assert_eq!(
        resolve(&f.engine, &run, "gate", "bob", json!({"action": "reject"}))
            .await
            .unwrap()
            .status,
        "failed"
    );
    assert_eq!(
        snapshot(&f.engine, &run).await["error"]["code"],
        "approval_rejected"
    );

    // A later vote replaces the earlier one: a change of mind from reject to accept.
    let run = start(&f.engine, "q3m", json!({})).await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "reject"}))
        .await
        .unwrap();
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert_eq!(view.quorum.as_ref().unwrap()["rejects"], 0);
    assert_eq!(view.quorum.as_ref().unwrap()["accepts"], 1);
}

/// A refine is a rejecting vote: one refine on a two-approver gate fails the
/// gate with `approval_rejected` (feedback in the details) and only the
/// failure edge follows; with `majority` refines add up like rejects.
#[tokio::test]
async fn refine_never_grants_and_follows_only_failure_edges() {
    let f = fixture().await;
    let routed = |id: &str, policy: &str| {
        json!({"id": id, "nodes": [
            gate("gate", json!({"title": "R", "actions": ["accept", "reject", "refine"], "requiredApprovals": 2, "rejectionPolicy": policy})),
            {"id": "pay", "typeId": "core.noop"},
            {"id": "revise", "typeId": "core.noop"},
            {"id": "always", "typeId": "core.noop"}],
         "edges": [
            {"id": "ok", "sourceNodeId": "gate", "targetNodeId": "pay", "triggerRule": "all_success"},
            {"id": "back", "sourceNodeId": "gate", "targetNodeId": "revise", "triggerRule": "any_failed"},
            {"id": "done", "sourceNodeId": "gate", "targetNodeId": "always", "triggerRule": "all_complete"}]})
    };
    register(&f.engine, routed("refine-veto", "single-veto")).await;
    register(&f.engine, routed("refine-majority", "majority")).await;
    let feedback = json!({"scope": "section", "sectionPath": "amount", "text": "split the invoice"});

    let run = start(&f.engine, "refine-veto", json!({})).await;
    resolve(
        &f.engine,
        &run,
        "gate",
        "ann",
        json!({"action": "refine", "refineFeedback": feedback}),
    )
    .await
    .unwrap();
    let evs = events(&f.engine, &run).await;
    let on = |t: &str, n: &str| {
        evs.iter()
            .any(|e| e.event_type == t && e.node_id.as_deref() == Some(n))
    };
    let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
    assert_eq!(resolved.payload["action"], "refine");
    assert_eq!(resolved.payload["decision"], "rejected");
    assert_eq!(resolved.payload["refineFeedback"], feedback);
    let failed = evs
        .iter()
        .find(|e| e.event_type == "node.failed" && e.node_id.as_deref() == Some("gate"))
        .expect("the gate fails");
    assert_eq!(failed.payload["error"]["code"], "approval_rejected");
    assert_eq!(failed.payload["error"]["retryable"], false);
    assert_eq!(failed.payload["error"]["details"]["refineFeedback"], feedback);
    assert!(!on("node.completed", "gate"));
    assert!(on("node.skipped", "pay"), "all_success never follows a refine");
    assert!(on("node.completed", "revise"));
    assert!(on("node.completed", "always"));
    assert_eq!(snapshot(&f.engine, &run).await["status"], "completed");
    assert_projection_matches_log(&f.engine, &run).await;

    // majority of two: one refine is not a majority, a second rejecting vote is.
    let run = start(&f.engine, "refine-majority", json!({})).await;
    let r = resolve(
        &f.engine,
        &run,
        "gate",
        "ann",
        json!({"action": "refine", "refineFeedback": feedback}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, "waiting-approval");
    let r = resolve(&f.engine, &run, "gate", "bob", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(
        r.status, "waiting-approval",
        "a refine is no approval: one accept of two"
    );
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert_eq!(view.quorum.as_ref().unwrap()["accepts"], 1);
    assert_eq!(view.quorum.as_ref().unwrap()["rejects"], 1);
    resolve(
        &f.engine,
        &run,
        "gate",
        "cat",
        json!({"action": "refine", "refineFeedback": {"scope": "whole"}}),
    )
    .await
    .unwrap();
    let evs = events(&f.engine, &run).await;
    let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
    assert_eq!(resolved.payload["action"], "refine");
    assert_eq!(resolved.payload["decision"], "rejected");
    assert!(evs
        .iter()
        .any(|e| e.event_type == "node.skipped" && e.node_id.as_deref() == Some("pay")));
    assert_projection_matches_log(&f.engine, &run).await;
}

/// Approvals add up only when they approved the same artifact data.
#[tokio::test]
async fn a_quorum_counts_only_votes_that_approved_the_same_data() {
    let f = fixture().await;
    register(
        &f.engine,
        json!({"id": "edits", "nodes": [
        gate("gate", json!({"title": "E", "actions": ["accept", "edit-accept"], "requiredApprovals": 2,
                            "artifactData": {"amount": 100}}))]}),
    )
    .await;
    let run = start(&f.engine, "edits", json!({})).await;
    resolve(
        &f.engine,
        &run,
        "gate",
        "ann",
        json!({"action": "edit-accept", "editedArtifactData": {"amount": 90}}),
    )
    .await
    .unwrap();
    let r = resolve(
        &f.engine,
        &run,
        "gate",
        "bob",
        json!({"action": "edit-accept", "editedArtifactData": {"amount": 80}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, "waiting-approval", "two different edits are no quorum");
    let r = resolve(&f.engine, &run, "gate", "cat", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(
        r.status, "waiting-approval",
        "the unedited artifact is a third version"
    );
    let r = resolve(
        &f.engine,
        &run,
        "gate",
        "boss",
        json!({"action": "edit-accept", "editedArtifactData": {"amount": 80}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, "completed", "bob and boss approved the same data");
    let evs = events(&f.engine, &run).await;
    let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
    assert_eq!(resolved.payload["decision"], "granted");
    assert_eq!(resolved.payload["editedArtifactData"], json!({"amount": 80}));

    // An edit that changes nothing agrees with a plain accept.
    let run = start(&f.engine, "edits", json!({})).await;
    resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    let r = resolve(
        &f.engine,
        &run,
        "gate",
        "bob",
        json!({"action": "edit-accept", "editedArtifactData": {"amount": 100}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status, "completed");
    assert_projection_matches_log(&f.engine, &run).await;
}

#[tokio::test]
async fn override_and_self_approval() {
    let f = fixture().await;
    register(&f.engine, json!({"id": "ov", "nodes": [gate("gate", json!({"title": "O", "actions": ["accept", "reject"], "requiredApprovals": 3, "overrideBypassesQuorum": true}))]})).await;
    register(&f.engine, json!({"id": "nov", "nodes": [gate("gate", json!({"title": "O", "actions": ["accept", "reject"], "requiredApprovals": 2}))]})).await;
    let run = start(&f.engine, "ov", json!({})).await;
    assert_eq!(
        resolve(&f.engine, &run, "gate", "boss", json!({"action": "accept"}))
            .await
            .unwrap()
            .status,
        "completed"
    );
    let evs = events(&f.engine, &run).await;
    assert_eq!(
        evs.iter()
            .find(|e| e.event_type == "interrupt.resolved")
            .unwrap()
            .payload["decision"],
        "overridden"
    );

    let run = start(&f.engine, "nov", json!({})).await;
    assert_eq!(
        resolve(&f.engine, &run, "gate", "boss", json!({"action": "accept"}))
            .await
            .unwrap()
            .status,
        "waiting-approval"
    );
    // requiredApprovals > 1: self-approval is refused by default.
    let own = resolve(&f.engine, &run, "gate", "owner", json!({"action": "accept"})).await;
    assert!(matches!(own, Err(EngineError::Forbidden(_))), "{own:?}");
}

#[tokio::test]
async fn eligibility_by_list_group_and_role_leaves_state_unchanged_on_refusal() {
    let f = fixture().await;
    register(&f.engine, json!({"id": "el", "nodes": [gate("gate", json!({"title": "E", "actions": ["accept"], "requiredApprovals": 3,
        "approversList": ["cat"], "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"]}))]})).await;
    let run = start(&f.engine, "el", json!({})).await;
    let before = events(&f.engine, &run).await.len();
    let refused = resolve(&f.engine, &run, "gate", "boss", json!({"action": "accept"})).await;
    assert!(matches!(refused, Err(EngineError::Forbidden(_))));
    assert_eq!(events(&f.engine, &run).await.len(), before);
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert!(view.votes.is_empty());
    for who in ["cat", "ann", "bob"] {
        resolve(&f.engine, &run, "gate", who, json!({"action": "accept"}))
            .await
            .unwrap();
    }
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    let via: Vec<&str> = view.votes.iter().map(|v| v.eligible_via.as_str()).collect();
    assert_eq!(via, ["principal:cat", "group:finance", "group:finance"]);
    assert_eq!(view.status, "resolved");
}

#[tokio::test]
async fn resume_values_are_validated_before_anything_changes() {
    let f = fixture().await;
    register(&f.engine, json!({"id": "typed", "nodes": [gate("gate", json!({"title": "T", "actions": ["accept", "reject"],
        "resumeSchema": {"type": "object", "required": ["action", "comment"], "properties": {"action": {"type": "string"}, "comment": {"type": "string", "minLength": 3}}}}))]})).await;
    let run = start(&f.engine, "typed", json!({})).await;
    let before = events(&f.engine, &run).await.len();
    for (rv, field) in [
        (json!({"action": "accept"}), "resumeValue.comment"),
        (
            json!({"action": "accept", "comment": "no"}),
            "resumeValue.comment",
        ),
        (
            json!({"action": "maybe", "comment": "fine"}),
            "resumeValue.action",
        ),
        (
            json!({"action": "timeout", "comment": "fine"}),
            "resumeValue.action",
        ),
    ] {
        match resolve(&f.engine, &run, "gate", "ann", rv.clone()).await {
            Err(EngineError::Validation { field: Some(got), .. }) => assert_eq!(got, field, "{rv}"),
            other => panic!("{rv}: {other:?}"),
        }
    }
    assert_eq!(events(&f.engine, &run).await.len(), before);
    assert!(f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap()
        .votes
        .is_empty());
    assert_eq!(
        resolve(
            &f.engine,
            &run,
            "gate",
            "ann",
            json!({"action": "accept", "comment": "looks right"})
        )
        .await
        .unwrap()
        .status,
        "completed"
    );
}

#[tokio::test]
async fn a_bad_request_payload_fails_the_run_naming_node_and_field() {
    let f = fixture().await;
    register(&f.engine, json!({"id": "req", "variables": [{"name": "amount"}], "nodes": [{"id": "gate", "typeId": "core.approvalGate",
        "inputs": {"amount": {"type": "variable", "variableName": "amount"}},
        "config": {"title": "R", "actions": ["accept"], "requestSchema": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "number"}}}}}]})).await;
    let good = start(&f.engine, "req", json!({"inputs": {"amount": 12.5}})).await;
    assert_eq!(snapshot(&f.engine, &good).await["status"], "waiting-approval");
    let view = f
        .engine
        .inspect_interrupt(&good, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert_eq!(view.request, json!({"amount": 12.5}));
    assert!(view.typed);
    assert_eq!(view.payload["data"]["artifactData"], json!({"amount": 12.5}));
    let bad = start(&f.engine, "req", json!({"inputs": {"amount": "lots"}})).await;
    let s = snapshot(&f.engine, &bad).await;
    assert_eq!(s["status"], "failed");
    let msg = s["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("node \"gate\"") && msg.contains("request.amount"),
        "{msg}"
    );
    assert!(!types(&events(&f.engine, &bad).await).contains(&"interrupt.requested".to_string()));
}

#[tokio::test]
async fn clarification_and_external_event() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-clarification", json!({})).await;
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-input");
    let missing = resolve(&f.engine, &run, "ask", "ann", json!({"answers": {}})).await;
    assert!(
        matches!(missing, Err(EngineError::Validation { field: Some(ref f), .. }) if f == "resumeValue.answers.q1"),
        "{missing:?}"
    );
    assert_eq!(
        resolve(&f.engine, &run, "ask", "ann", json!({"answers": {"q1": "blue"}}))
            .await
            .unwrap()
            .status,
        "completed"
    );
    // The v2 reference host's shape (no `answers` wrapper) is accepted too.
    let run = start(&f.engine, "conformance-clarification", json!({})).await;
    assert_eq!(
        resolve(&f.engine, &run, "ask", "ann", json!({"q1": "blue"}))
            .await
            .unwrap()
            .status,
        "completed"
    );

    register(&f.engine, json!({"id": "ext", "nodes": [{"id": "wait", "typeId": "core.interrupt", "config": {"kind": "external-event",
        "data": {"eventType": "order.shipped", "correlation": {"orderId": "o-1"}}}}]})).await;
    let run = start(&f.engine, "ext", json!({})).await;
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-external");
    let wrong = resolve(&f.engine, &run, "wait", "ann", json!({"orderId": "o-2"})).await;
    assert!(
        matches!(wrong, Err(EngineError::Validation { field: Some(ref f), .. }) if f == "resumeValue.orderId"),
        "{wrong:?}"
    );
    assert_eq!(
        resolve(
            &f.engine,
            &run,
            "wait",
            "ann",
            json!({"orderId": "o-1", "ref": 7})
        )
        .await
        .unwrap()
        .status,
        "completed"
    );
}

#[tokio::test]
async fn cancel_closes_interrupts_and_unknown_targets_are_not_found() {
    let f = fixture().await;
    let owner = actor(&f.engine, "owner").await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let c = f
        .engine
        .cancel_run(&run, Some("done".into()), &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(c.status, "cancelled");
    let late = resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"})).await;
    assert!(matches!(late, Err(EngineError::AlreadyResolved(_))), "{late:?}");
    let again = f
        .engine
        .cancel_run(&run, None, &owner, None)
        .await
        .and_then(|o| o.result);
    assert!(matches!(again, Err(EngineError::RunTerminal(_))));
    let evs = events(&f.engine, &run).await;
    assert_eq!(&types(&evs)[evs.len() - 2..], ["node.cancelled", "run.cancelled"]);
    assert_projection_matches_log(&f.engine, &run).await;

    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let nf = resolve(
        &f.engine,
        &run,
        "no-such-node",
        "ann",
        json!({"action": "accept"}),
    )
    .await;
    assert!(matches!(nf, Err(EngineError::NotFound(_))));
    let nf = resolve(
        &f.engine,
        &tollgate::RunId::trusted("acme/0123456789abcdefunknown"),
        "gate",
        "ann",
        json!({"action": "accept"}),
    )
    .await;
    assert!(matches!(nf, Err(EngineError::NotFound(_))));
    let foreign = resolve(
        &f.engine,
        &tollgate::RunId::trusted("other/0123456789abcdefunknown"),
        "gate",
        "ann",
        json!({"action": "accept"}),
    )
    .await;
    assert!(matches!(foreign, Err(EngineError::TenantMismatch)));
}

#[tokio::test]
async fn of_32_concurrent_resolves_exactly_one_wins() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let ann = actor(&f.engine, "ann").await;
    let mut tasks = Vec::new();
    for i in 0..32 {
        let (e, r, a) = (f.engine.clone(), run.clone(), ann.clone());
        let action = if i % 2 == 0 { "accept" } else { "reject" };
        tasks.push(tokio::spawn(async move {
            e.resolve(&r, "gate", json!({"action": action}), &a, None)
                .await
                .and_then(|o| o.result)
        }));
    }
    let mut wins = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => wins += 1,
            Err(EngineError::AlreadyResolved(_)) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(wins, 1);
    let evs = events(&f.engine, &run).await;
    assert_eq!(
        evs.iter()
            .filter(|e| e.event_type == "interrupt.resolved")
            .count(),
        1
    );
}

#[tokio::test]
async fn idempotency_replays_and_refuses_a_different_body() {
    let f = fixture().await;
    let owner = actor(&f.engine, "owner").await;
    let body = json!({"workflowId": "conformance-approval"});
    let key = "key-0123456789abcdefghijkl";
    let create = |b: Value| {
        let (e, o) = (f.engine.clone(), owner.clone());
        async move {
            let idem = Idem::new(key, "createRun", &b).unwrap();
            e.create_run(serde_json::from_value(b).unwrap(), &o, Some(idem))
                .await
                .unwrap()
        }
    };
    let first = create(body.clone()).await;
    assert!(!first.replayed);
    let second = create(body.clone()).await;
    assert!(second.replayed);
    assert_eq!(first.result.unwrap(), second.result.unwrap());
    assert_eq!(f.engine.run_count().await.unwrap(), 1, "one run created");
    let other = create(json!({"workflowId": "conformance-noop"})).await;
    assert!(matches!(other.result, Err(EngineError::IdempotencyMismatch)));
    assert!(matches!(
        Idem::new("short", "createRun", &body),
        Err(EngineError::IdempotencyKeyInvalid(_))
    ));
}

/// A key stands for one caller's request: another caller presenting it is
/// refused as a mismatch and never given the stored answer.
#[tokio::test]
async fn an_idempotency_key_replays_only_to_its_own_caller() {
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let body = json!({"action": "accept"});
    let key = "shared-key-0123456789abcdef";
    let vote = |who: &'static str| {
        let (e, run, body) = (f.engine.clone(), run.clone(), body.clone());
        async move {
            let a = actor(&e, who).await;
            let idem = Idem::new(key, "resolveInterrupt", &body).unwrap();
            e.resolve(&run, "gate", body, &a, Some(idem)).await.unwrap()
        }
    };
    let first = vote("ann").await;
    assert!(!first.replayed);
    first.result.unwrap();
    // ann again: her own answer, replayed.
    let again = vote("ann").await;
    assert!(again.replayed);
    again.result.unwrap();
    // cat and bob with ann's key and body: no replay of her answer.
    for who in ["cat", "bob"] {
        let other = vote(who).await;
        assert!(!other.replayed, "{who}");
        assert!(
            matches!(other.result, Err(EngineError::IdempotencyMismatch)),
            "{who}"
        );
    }
}

#[tokio::test]
async fn a_definition_registered_through_another_engine_is_found_at_once() {
    let f = fixture().await;
    // A second engine on the same database, as a second instance: it has no
    // notice of what the first registers after it opened.
    let other = open_at(&f._dir.path().join("t.db"), f.clock.clone()).await;
    register(
        &f.engine,
        json!({"id": "late", "nodes": [gate("gate", json!({"title": "Late", "actions": ["accept"]}))]}),
    )
    .await;
    let run = start(&other, "late", json!({})).await;
    assert_eq!(snapshot(&other, &run).await["status"], "waiting-approval");

    // A tenant's definition, read again on a miss, stays its tenant's.
    let admin = Actor::api_key(
        f.engine.principal("owner").await.unwrap().unwrap(),
        tollgate::auth::ALL_SCOPES.to_vec(),
    );
    f.engine
        .put_tenant_workflow(&admin, json!({"id": "acme-only", "nodes": [gate("gate", json!({"title": "Mine", "actions": ["accept"]}))]}))
        .await
        .unwrap();
    other
        .upsert_principal(principal_in("eve", "acmf", &[], None))
        .await
        .unwrap();
    let eve = Actor::api_key(
        other.principal("eve").await.unwrap().unwrap(),
        tollgate::auth::ALL_SCOPES.to_vec(),
    );
    let req: CreateRun = serde_json::from_value(json!({"workflowId": "acme-only"})).unwrap();
    let refused = other.create_run(req, &eve, None).await;
    assert!(matches!(refused, Err(EngineError::NotFound(_))), "{refused:?}");
    assert!(matches!(
        other.workflow_for(&eve, "acme-only").await,
        Err(EngineError::NotFound(_))
    ));
    let found = other.workflow_for(&admin, "acme-only").await.unwrap();
    assert_eq!(found["id"], "acme-only");
}

#[tokio::test]
async fn durable_delay_completes_when_due() {
    let f = fixture().await;
    let run = start(
        &f.engine,
        "conformance-cancellable",
        json!({"inputs": {"delayMs": 5000}}),
    )
    .await;
    assert_eq!(snapshot(&f.engine, &run).await["status"], "running");
    f.clock.advance(4999);
    assert_eq!(f.engine.fire_due().await.unwrap(), 0);
    f.clock.advance(1);
    assert_eq!(f.engine.fire_due().await.unwrap(), 1);
    assert_eq!(snapshot(&f.engine, &run).await["status"], "completed");
    assert_projection_matches_log(&f.engine, &run).await;
    let noop = start(&f.engine, "conformance-noop", json!({})).await;
    assert_eq!(snapshot(&f.engine, &noop).await["status"], "completed");
}

/// A NUL character cannot be stored by PostgreSQL's text: what a run is
/// given, what it is answered and a definition holding one are refused
/// on every store alike, naming where.
#[tokio::test]
async fn nul_characters_are_refused_by_name_on_every_store() {
    let f = fixture().await;
    let gate_def = |title: Value| {
        json!({"id": "nul", "variables": [{"name": "t"}], "nodes": [gate("gate", json!({
            "title": title,
            "actions": ["accept"]
        }))]})
    };
    let field_of = |r: Result<(), EngineError>| match r {
        Err(EngineError::Validation { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field_of(
            f.engine
                .register_workflow(gate_def(json!("a\u{0}b")))
                .await
                .map(drop)
        )
        .as_deref(),
        Some("definition.nodes[0].config.title")
    );
    register(
        &f.engine,
        gate_def(json!({"$bind": {"type": "variable", "variableName": "t"}})),
    )
    .await;
    let owner = actor(&f.engine, "owner").await;
    for (req, field) in [
        (
            json!({"workflowId": "nul", "inputs": {"t": "a\u{0}b"}}),
            "inputs.t",
        ),
        (json!({"workflowId": "nul", "tags": ["x\u{0}"]}), "tags[0]"),
        (
            json!({"workflowId": "nul", "metadata": {"m": "\u{0}"}}),
            "metadata.m",
        ),
    ] {
        let req: CreateRun = serde_json::from_value(req).unwrap();
        let refused = f.engine.create_run(req, &owner, None).await.map(drop);
        assert_eq!(field_of(refused).as_deref(), Some(field));
    }
    let run = start(&f.engine, "nul", json!({"inputs": {"t": "fine"}})).await;
    let refused = resolve(
        &f.engine,
        &run,
        "gate",
        "ann",
        json!({"action": "accept", "comment": "c\u{0}d"}),
    )
    .await
    .map(drop);
    assert_eq!(field_of(refused).as_deref(), Some("resumeValue.comment"));
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-approval");
    let r = resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(r.status, "completed");
}

/// A bound delay past ten years fails the node by name; it neither
/// overflows the due time nor fires at once.
#[tokio::test]
async fn a_bound_delay_past_the_maximum_fails_the_node() {
    let f = fixture().await;
    for too_long in [
        json!(tollgate::definition::MAX_WAIT_MS + 1),
        json!(i64::MAX),
        json!(u64::MAX),
    ] {
        let run = start(
            &f.engine,
            "conformance-cancellable",
            json!({"inputs": {"delayMs": too_long}}),
        )
        .await;
        let snap = snapshot(&f.engine, &run).await;
        assert_eq!(snap["status"], "failed", "{too_long}: {snap}");
        assert!(
            snap.to_string().contains("delayMs is not an integer from 0 to"),
            "{snap}"
        );
    }
    let longest = start(
        &f.engine,
        "conformance-cancellable",
        json!({"inputs": {"delayMs": tollgate::definition::MAX_WAIT_MS}}),
    )
    .await;
    f.clock.advance(1_000_000);
    assert_eq!(f.engine.fire_due().await.unwrap(), 0);
    assert_eq!(snapshot(&f.engine, &longest).await["status"], "running");
}

#[tokio::test]
async fn a_replaced_definition_does_not_change_running_runs() {
    let f = fixture().await;
    register(
        &f.engine,
        json!({"id": "v", "nodes": [gate("gate", json!({"title": "one", "actions": ["accept"]}))]}),
    )
    .await;
    let run = start(&f.engine, "v", json!({})).await;
    register(
        &f.engine,
        json!({"id": "v", "nodes": [gate("other", json!({"title": "two", "actions": ["accept"]}))]}),
    )
    .await;
    assert_eq!(
        resolve(&f.engine, &run, "gate", "ann", json!({"action": "accept"}))
            .await
            .unwrap()
            .status,
        "completed"
    );
    assert_eq!(f.engine.workflow("v").unwrap()["nodes"][0]["id"], "other");
}

fn keys() -> Vec<tollgate::token::SigningKey> {
    vec![tollgate::token::SigningKey {
        kid: "k1".into(),
        secret: "s".repeat(40),
        retired_at: None,
    }]
}

#[tokio::test]
async fn token_links_follow_the_verification_ladder() {
    use tollgate::token::{Claims, Intent, KeyRing};
    let f = fixture().await;
    f.engine.set_token_keys(keys(), Some(60_000));
    register(&f.engine, json!({"id": "t2", "nodes": [gate("gate", json!({"title": "T", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"], "timeoutMs": 30_000}))]})).await;
    let run = start(&f.engine, "t2", json!({})).await;
    let ann = f.engine.principal("ann").await.unwrap().unwrap();
    let cat = f.engine.principal("cat").await.unwrap().unwrap();

    // Capped at the deadline (30 s) although the lifetime is 60 s.
    let (token, expires) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    assert_eq!(expires, T0 + 30_000);
    let (view, claims) = f.engine.inspect_by_token(&token).await.unwrap();
    assert_eq!(view.node_id, "gate");
    assert_eq!(claims.p, "ann");

    // A token votes as its recipient: eligibility applies.
    let (cat_token, _) = f
        .engine
        .mint_token(&run, "gate", &cat, Intent::Resolve)
        .await
        .unwrap();
    let refused = f
        .engine
        .resolve_by_token(&cat_token, json!({"action": "accept"}), None)
        .await
        .and_then(|o| o.result);
    assert!(matches!(refused, Err(EngineError::Forbidden(_))), "{refused:?}");
    let r = f
        .engine
        .resolve_by_token(&token, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(r.status, "waiting-approval");
    let view = f
        .engine
        .inspect_interrupt(&run, "gate", &actor(&f.engine, "owner").await)
        .await
        .unwrap();
    assert_eq!(view.votes[0].principal, "ann");

    // Inspect-only tokens cannot resolve.
    let (inspect, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Inspect)
        .await
        .unwrap();
    assert!(f.engine.inspect_by_token(&inspect).await.is_ok());
    let r = f
        .engine
        .resolve_by_token(&inspect, json!({"action": "accept"}), None)
        .await;
    assert!(matches!(r, Err(EngineError::Forbidden(_))));

    // Revoked → 409.
    let (revoked, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    f.engine.revoke_token(&revoked).await.unwrap();
    assert!(matches!(
        f.engine.inspect_by_token(&revoked).await,
        Err(EngineError::AlreadyResolved(_))
    ));

    // A well-signed token for an interrupt that does not exist → 404.
    let ring = KeyRing::new(keys());
    let ghost = ring
        .sign(&Claims {
            i: "acme/0123456789abcdefghost".into(),
            r: run.to_string(),
            n: "gate".into(),
            p: "ann".into(),
            t: Intent::Resolve,
            a: T0,
            e: T0 + 1000,
            j: "x".into(),
        })
        .unwrap();
    assert!(matches!(
        f.engine.inspect_by_token(&ghost).await,
        Err(EngineError::NotFound(_))
    ));

    // Tampered → 401; expired → 410.
    let tampered = format!("{}x", &token[..token.len() - 1]);
    assert!(matches!(
        f.engine.inspect_by_token(&tampered).await,
        Err(EngineError::TokenInvalid(_))
    ));
    f.clock.advance(29_999);
    assert!(f.engine.inspect_by_token(&token).await.is_ok());
    f.clock.advance(1);
    assert!(matches!(
        f.engine.inspect_by_token(&token).await,
        Err(EngineError::Expired(_))
    ));
}

#[tokio::test]
async fn tokens_die_with_their_interrupt_and_run() {
    use tollgate::token::Intent;
    let f = fixture().await;
    f.engine.set_token_keys(keys(), None);
    let ann = f.engine.principal("ann").await.unwrap().unwrap();
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let (t, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    let r = f
        .engine
        .resolve_by_token(&t, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(r.status, "completed");
    let again = f
        .engine
        .resolve_by_token(&t, json!({"action": "accept"}), None)
        .await
        .and_then(|o| o.result);
    assert!(matches!(again, Err(EngineError::AlreadyResolved(_))), "{again:?}");

    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let (t, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    f.engine
        .cancel_run(&run, None, &actor(&f.engine, "owner").await, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert!(matches!(
        f.engine.inspect_by_token(&t).await,
        Err(EngineError::AlreadyResolved(_))
    ));

    // Rotation: a token signed by a key that is now retired still works.
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let (old, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    let mut rotated = keys();
    rotated[0].retired_at = Some(f.engine.now() + 1);
    rotated.push(tollgate::token::SigningKey {
        kid: "k2".into(),
        secret: "t".repeat(40),
        retired_at: None,
    });
    f.engine.set_token_keys(rotated, None);
    let (new, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    assert!(new.starts_with("ow2.hs256.k2."));
    assert!(f.engine.inspect_by_token(&old).await.is_ok());
}

/// Every trigger rule against every source outcome: completed (gate accepted),
/// failed (gate rejected) and skipped (a node bypassed on the accept path).
#[tokio::test]
async fn trigger_rule_decision_table() {
    let f = fixture().await;
    // (rule, fires after completed, fires after failed, fires after skipped)
    let table = [
        ("all_success", true, false, false),
        ("any_success", true, false, false),
        ("all_complete", true, true, true),
        ("none_failed", true, false, true),
        ("any_failed", false, true, false),
    ];
    for (rule, on_completed, on_failed, on_skipped) in table {
        let direct = format!("direct-{rule}");
        register(
            &f.engine,
            json!({"id": direct, "nodes": [
            gate("g", json!({"title": "T", "actions": ["accept", "reject"]})),
            {"id": "t", "typeId": "core.noop"}
        ], "edges": [{"sourceNodeId": "g", "targetNodeId": "t", "triggerRule": rule}]}),
        )
        .await;
        let via_skip = format!("skip-{rule}");
        register(
            &f.engine,
            json!({"id": via_skip, "nodes": [
                gate("g", json!({"title": "T", "actions": ["accept", "reject"]})),
                {"id": "m", "typeId": "core.noop"},
                {"id": "t", "typeId": "core.noop"}
            ], "edges": [
                {"sourceNodeId": "g", "targetNodeId": "m", "triggerRule": "any_failed"},
                {"sourceNodeId": "m", "targetNodeId": "t", "triggerRule": rule}
            ]}),
        )
        .await;
        for (wf, action, fires) in [
            (&direct, "accept", on_completed),
            (&direct, "reject", on_failed),
            (&via_skip, "accept", on_skipped),
        ] {
            let run = start(&f.engine, wf, json!({})).await;
            resolve(&f.engine, &run, "g", "ann", json!({"action": action}))
                .await
                .unwrap();
            let evs = events(&f.engine, &run).await;
            let t_completed = evs
                .iter()
                .any(|e| e.event_type == "node.completed" && e.node_id.as_deref() == Some("t"));
            let t_skipped = evs
                .iter()
                .any(|e| e.event_type == "node.skipped" && e.node_id.as_deref() == Some("t"));
            assert_eq!(t_completed, fires, "{rule} after {action} ({wf})");
            let s = snapshot(&f.engine, &run).await;
            if fires {
                assert_eq!(s["status"], "completed", "{rule} {action}");
            } else if action == "reject" {
                // A rejected gate with no edge admitting failure fails the run.
                assert_eq!(s["status"], "failed", "{rule} {action}");
                assert_eq!(s["error"]["code"], "approval_rejected");
                assert!(!t_skipped);
            } else {
                assert!(t_skipped, "{rule} after {action}: t must be skipped");
                assert_eq!(s["status"], "completed");
            }
            assert_projection_matches_log(&f.engine, &run).await;
        }
    }
}

#[tokio::test]
async fn raising_an_interrupt_queues_mail_for_eligible_people_in_the_same_step() {
    let f = fixture().await;
    for (id, email, groups) in [
        ("fin1", Some("fin1@example.com"), vec!["finance"]),
        ("fin2", None, vec!["finance"]),
        ("ops1", Some("ops@example.com"), vec!["ops"]),
    ] {
        f.engine
            .upsert_principal(Principal {
                id: id.into(),
                tenant: "acme".into(),
                name: id.into(),
                email: email.map(String::from),
                groups: groups.into_iter().map(String::from).collect(),
                roles: vec![],
                is_override: false,
            })
            .await
            .unwrap();
    }
    register(&f.engine, json!({"id": "mail", "nodes": [gate("gate", json!({"title": "M", "actions": ["accept"], "approverGroupRefs": ["finance"], "timeoutMs": 60_000}))]})).await;
    let run = start(&f.engine, "mail", json!({})).await;
    let due = f.engine.outbox_due(10).await.unwrap();
    assert_eq!(due.len(), 1, "only finance people with an address");
    assert_eq!(due[0].recipient, "fin1");
    assert_eq!(due[0].run_id, run);
    f.engine
        .outbox_failed(due[0].id, "smtp down".into())
        .await
        .unwrap();
    assert!(
        f.engine.outbox_due(10).await.unwrap().is_empty(),
        "retried later, not now"
    );
    f.clock.advance(tollgate::engine::outbox::backoff_ms(1));
    let again = f.engine.outbox_due(10).await.unwrap();
    assert_eq!(again[0].attempts, 1);
    f.engine
        .outbox_delivered(again[0].id, "dev-outbox", "hello".into())
        .await
        .unwrap();
    assert_eq!(f.engine.outbox_backlog().await.unwrap(), 0);

    // A reminder goes out once, a configurable time before the deadline, to those who have not voted.
    assert_eq!(f.engine.queue_reminders(30_000).await.unwrap(), 0);
    f.clock.advance(30_000);
    assert_eq!(f.engine.queue_reminders(30_000).await.unwrap(), 1);
    assert_eq!(f.engine.queue_reminders(30_000).await.unwrap(), 0);
    let reminder = f.engine.outbox_due(10).await.unwrap();
    assert_eq!(reminder[0].mail_reason(), Some(MailReason::Reminder));

    // A gate without eligibility refs or audience tells the tenant's people
    // with an address (they all hold approvals:respond).
    let open = start(&f.engine, "conformance-approval", json!({})).await;
    assert_eq!(told(&f.engine, &open).await, ["fin1", "ops1"]);
}

/// Recipients of the emails queued for `run`'s interrupt, sorted.
async fn told(engine: &Engine, run: &tollgate::RunId) -> Vec<String> {
    let mut ids: Vec<String> = pending_of(engine, "email")
        .await
        .into_iter()
        .filter(|m| m.run_id == run.as_str())
        .map(|m| m.recipient)
        .collect();
    ids.sort();
    ids
}

/// A tenant `acme` with people (an address each) in finance and ops, one
/// without an address, an owner with an address, and a tenant `acmf` one
/// character apart with the same groups and ids that look alike.
async fn mail_fixture() -> Fixture {
    let f = fixture().await;
    for p in [
        principal_in("owner", "acme", &[], Some("owner@example.com")),
        principal_in("fin1", "acme", &["finance"], Some("fin1@example.com")),
        principal_in("fin2", "acme", &["finance"], None),
        principal_in("ops1", "acme", &["ops"], Some("ops1@example.com")),
        principal_in("fin1-acmf", "acmf", &["finance"], Some("fin1@example.com")),
        principal_in("ops1-acmf", "acmf", &["ops"], Some("ops1@example.com")),
    ] {
        f.engine.upsert_principal(p).await.unwrap();
    }
    f
}

#[tokio::test]
async fn who_is_told_follows_audience_eligibility_kind_and_tenant() {
    let f = mail_fixture().await;
    let e = &f.engine;
    // Eligibility refs, no audience: their union (here: finance people with an address).
    register(e, json!({"id": "refs", "nodes": [gate("gate", json!({"title": "R", "actions": ["accept"], "approverGroupRefs": ["finance"]}))]})).await;
    let run = start(e, "refs", json!({})).await;
    assert_eq!(told(e, &run).await, ["fin1"]);
    // An audience overrides the refs for notification; nobody of acmf is told
    // though the audience names them.
    register(e, json!({"id": "aud", "nodes": [gate("gate", json!({"title": "A", "actions": ["accept"], "approverGroupRefs": ["finance"],
        "audience": {"subjects": ["ops1", "fin1-acmf", "tollgate:ops1-acmf"], "groups": ["nobody"]}}))]})).await;
    let run = start(e, "aud", json!({})).await;
    assert_eq!(told(e, &run).await, ["ops1"]);
    // The owner is in the refs, yet never told about their own request,
    // whether or not the gate would let them approve it.
    f.engine
        .upsert_principal(principal_in(
            "owner",
            "acme",
            &["finance"],
            Some("owner@example.com"),
        ))
        .await
        .unwrap();
    let run = start(e, "refs", json!({})).await;
    assert_eq!(told(e, &run).await, ["fin1"]);
    register(e, json!({"id": "self", "nodes": [gate("gate", json!({"title": "S", "actions": ["accept"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}))]})).await;
    let run = start(e, "self", json!({})).await;
    assert_eq!(told(e, &run).await, ["fin1"]);
    // No refs, no audience: the tenant's people with an address, but the owner.
    let run = start(e, "conformance-approval", json!({})).await;
    assert_eq!(told(e, &run).await, ["fin1", "ops1"]);
    // Other kinds: likewise (they have no approval rules: anyone of the tenant may answer).
    for (id, node) in [
        (
            "k-clar",
            json!({"id": "n", "typeId": "core.clarificationGate", "config": {"questions": [{"id": "q", "question": "Why?"}]}}),
        ),
        (
            "k-ext",
            json!({"id": "n", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "order.shipped", "correlation": {"orderId": "o-1"}}}}),
        ),
        (
            "k-custom",
            json!({"id": "n", "typeId": "core.interrupt", "config": {"kind": "custom", "data": {"customKind": "x"}}}),
        ),
        (
            "k-low",
            json!({"id": "n", "typeId": "core.interrupt", "config": {"kind": "low-confidence", "data": {"agentId": "a", "threshold": 0.7, "observed": 0.2}}}),
        ),
    ] {
        register(e, json!({"id": id, "nodes": [node]})).await;
        let run = start(e, id, json!({})).await;
        assert_eq!(told(e, &run).await, ["fin1", "ops1"], "{id}");
    }
    // The same in acmf tells only acmf's people (its owner, too, is left out).
    let acmf_owner = principal_in("owner-acmf", "acmf", &[], Some("o@example.com"));
    f.engine.upsert_principal(acmf_owner.clone()).await.unwrap();
    let a = Actor::api_key(acmf_owner, vec![tollgate::auth::Scope::Admin]);
    for wf in ["conformance-approval", "conformance-clarification"] {
        let req: CreateRun = serde_json::from_value(json!({"workflowId": wf})).unwrap();
        let run = e.create_run(req, &a, None).await.unwrap().result.unwrap().run_id;
        assert_eq!(told(e, &run).await, ["fin1-acmf", "ops1-acmf"], "{wf}");
    }
    // Reminders go to the same people.
    register(e, json!({"id": "ext-remind", "nodes": [{"id": "n", "typeId": "core.interrupt", "config": {"kind": "external-event", "timeoutMs": 60_000, "data": {"eventType": "e", "correlation": {"k": "v"}}}}]})).await;
    let run = start(e, "ext-remind", json!({})).await;
    f.clock.advance(30_000);
    assert_eq!(e.queue_reminders(30_000).await.unwrap(), 2);
    let mut reminded: Vec<String> = pending_of(e, "email")
        .await
        .into_iter()
        .filter(|m| m.run_id == run.as_str() && m.mail_reason() == Some(MailReason::Reminder))
        .map(|m| m.recipient)
        .collect();
    reminded.sort();
    assert_eq!(reminded, ["fin1", "ops1"]);
}

#[tokio::test]
async fn a_mail_link_resolves_only_for_someone_who_may_decide() {
    use tollgate::token::Intent;
    let f = mail_fixture().await;
    let e = &f.engine;
    e.set_token_keys(keys(), Some(600_000));
    register(e, json!({"id": "aud", "nodes": [gate("gate", json!({"title": "A", "actions": ["accept"], "approverGroupRefs": ["finance"],
        "preventSelfApproval": true, "timeoutMs": 60_000, "audience": {"subjects": ["ops1", "owner", "fin1"]}}))]})).await;
    f.engine
        .upsert_principal(principal_in(
            "owner",
            "acme",
            &["finance"],
            Some("owner@example.com"),
        ))
        .await
        .unwrap();
    let run = start(e, "aud", json!({})).await;
    assert_eq!(told(e, &run).await, ["fin1", "ops1", "owner"]);
    let mails = pending_of(e, "email").await;
    let interrupt_id = mails[0].interrupt_id.clone();
    let link = |who: &'static str| {
        let interrupt_id = interrupt_id.clone();
        async move {
            let p = e.principal(who).await.unwrap().unwrap();
            e.mail_link_for(&interrupt_id, &p).await
        }
    };
    // Told only because the audience names them: view-only. The owner of a
    // gate that refuses self-approval: view-only. An eligible person: resolve.
    let ops = link("ops1").await.unwrap();
    let ops_token = ops.token;
    assert_eq!(ops.intent, Intent::Inspect);
    assert!(!ops.sign_in_to_decide);
    assert_eq!(ops.expires_at, T0 + 60_000, "capped at the deadline");
    assert_eq!(link("owner").await.unwrap().intent, Intent::Inspect);
    let fin = link("fin1").await.unwrap();
    let fin_token = fin.token;
    assert_eq!(fin.intent, Intent::Resolve);
    // Another tenant's principal gets no link at all.
    assert!(matches!(link("fin1-acmf").await, Err(EngineError::Forbidden(_))));
    // The view-only link shows but cannot decide; the other decides.
    e.inspect_by_token(&ops_token).await.unwrap();
    assert!(matches!(
        e.resolve_by_token(&ops_token, json!({"action": "accept"}), None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(snapshot(e, &run).await["status"], "waiting-approval");
    e.resolve_by_token(&fin_token, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(snapshot(e, &run).await["status"], "completed");
    // No longer pending: no link.
    assert!(matches!(link("fin1").await, Err(EngineError::NotFound(_))));

    // Other kinds: anyone of the tenant holding approvals:respond decides.
    let run = start(e, "conformance-clarification", json!({})).await;
    let view = e
        .inspect_interrupt(&run, "ask", &actor(e, "owner").await)
        .await
        .unwrap();
    let ops = e.principal("ops1").await.unwrap().unwrap();
    assert_eq!(
        e.mail_link_for(&view.interrupt_id, &ops).await.unwrap().intent,
        Intent::Resolve
    );
}

#[tokio::test]
async fn a_callback_carries_a_link_for_the_run_owner_minted_at_delivery() {
    use tollgate::token::Intent;
    let f = fixture().await;
    let e = &f.engine;
    e.set_callback_policy(Some(tollgate::egress::EgressPolicy::default()));
    let hooked = |wf: &str| -> CreateRun {
        serde_json::from_value(json!({"workflowId": wf, "callbackUrl": "https://example.com/hook"})).unwrap()
    };
    register(e, json!({"id": "ext", "nodes": [{"id": "wait", "typeId": "core.interrupt", "config": {"kind": "external-event", "timeoutMs": 45_000,
        "data": {"eventType": "order.shipped", "correlation": {"orderId": "o-1"}}}}]})).await;
    register(e, json!({"id": "fin", "nodes": [gate("gate", json!({"title": "F", "actions": ["accept"], "approverGroupRefs": ["finance"]}))]})).await;
    let owner = actor(e, "owner").await;
    let run = e
        .create_run(hooked("ext"), &owner, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id;
    let row = pending_of(e, "callback").await.pop().unwrap();
    assert_eq!(row.reason, "interrupt.requested");

    // No signing key: the stored body as it is.
    assert!(e.callback_link_for(&row.interrupt_id).await.unwrap().is_none());
    assert_eq!(
        e.callback_body_at_delivery(&row).await.unwrap(),
        row.body.clone().unwrap()
    );

    e.set_token_keys(keys(), Some(600_000));
    let body: Value = serde_json::from_str(&e.callback_body_at_delivery(&row).await.unwrap()).unwrap();
    let link = &body[tollgate::callback::TOKEN_MEMBER];
    assert_eq!(
        link["intent"], "resolve",
        "the owner holds approvals:respond: {body}"
    );
    assert_eq!(link["recipient"], "owner");
    assert_eq!(
        link["expiresAt"],
        tollgate::clock::rfc3339(T0 + 45_000),
        "capped at the deadline"
    );
    // Everything else is the stored body; the stored row has no token.
    let mut without = body.clone();
    without
        .as_object_mut()
        .unwrap()
        .remove(tollgate::callback::TOKEN_MEMBER);
    assert_eq!(
        without,
        serde_json::from_str::<Value>(row.body.as_deref().unwrap()).unwrap()
    );
    assert!(!e
        .outbox_item(row.id)
        .await
        .unwrap()
        .body
        .unwrap()
        .contains("ow2."));
    // The token acts as the owner: it resolves the external event without a key.
    let token = link["token"].as_str().unwrap();
    let (_, claims) = e.inspect_by_token(token).await.unwrap();
    assert_eq!((claims.p.as_str(), claims.t), ("owner", Intent::Resolve));
    e.resolve_by_token(token, json!({"orderId": "o-1"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(snapshot(e, &run).await["status"], "completed");
    // No longer pending: no link; a run's end carries none either.
    assert!(e.callback_link_for(&row.interrupt_id).await.unwrap().is_none());
    assert_eq!(
        e.callback_body_at_delivery(&row).await.unwrap(),
        row.body.clone().unwrap()
    );
    let end = pending_of(e, "callback").await.pop().unwrap();
    assert_eq!(end.reason, "run.completed");
    assert!(!e
        .callback_body_at_delivery(&end)
        .await
        .unwrap()
        .contains("interruptToken"));

    // An approval gate whose refs do not admit the owner: view-only.
    e.create_run(hooked("fin"), &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    let row = pending_of(e, "callback").await.pop().unwrap();
    let link = e.callback_link_for(&row.interrupt_id).await.unwrap().unwrap();
    assert_eq!((link.intent, link.recipient.as_str()), (Intent::Inspect, "owner"));
    // A gate without refs admits any holder of approvals:respond, the owner too
    // (single approval: self-approval is not refused)…
    e.create_run(hooked("conformance-approval"), &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    let row = pending_of(e, "callback").await.pop().unwrap();
    assert_eq!(
        e.callback_link_for(&row.interrupt_id)
            .await
            .unwrap()
            .unwrap()
            .intent,
        Intent::Resolve
    );
    // …but an owner whose key may not respond gets a view-only link.
    e.upsert_principal(principal_in("svc", "acme", &[], None))
        .await
        .unwrap();
    use tollgate::auth::Scope;
    e.put_api_key(
        "svc-key-0123456789ab",
        "svc",
        &[Scope::RunsCreate, Scope::RunsRead],
        None,
    )
    .await
    .unwrap();
    let svc = Actor::api_key(
        e.principal("svc").await.unwrap().unwrap(),
        vec![Scope::RunsCreate, Scope::RunsRead],
    );
    e.create_run(hooked("ext"), &svc, None)
        .await
        .unwrap()
        .result
        .unwrap();
    let row = pending_of(e, "callback").await.pop().unwrap();
    let link = e.callback_link_for(&row.interrupt_id).await.unwrap().unwrap();
    assert_eq!((link.intent, link.recipient.as_str()), (Intent::Inspect, "svc"));
}

#[tokio::test]
async fn escalate_on_timeout_rejects_and_notifies_but_never_grants() {
    let f = fixture().await;
    f.engine
        .upsert_principal(Principal {
            id: "esc".into(),
            tenant: "acme".into(),
            name: "Esc".into(),
            email: Some("esc@example.com".into()),
            groups: vec!["oncall".into()],
            roles: vec![],
            is_override: false,
        })
        .await
        .unwrap();
    register(&f.engine, json!({"id": "esc", "nodes": [gate("gate", json!({"title": "E", "actions": ["accept"], "approverGroupRefs": ["oncall"], "timeoutMs": 1000, "onTimeout": "escalate"}))]})).await;
    let run = start(&f.engine, "esc", json!({})).await;
    let first = f.engine.outbox_due(10).await.unwrap();
    f.engine
        .outbox_delivered(first[0].id, "dev-outbox", "x".into())
        .await
        .unwrap();
    f.clock.advance(1000);
    assert_eq!(f.engine.fire_due().await.unwrap(), 1);
    let s = snapshot(&f.engine, &run).await;
    assert_eq!(s["status"], "failed");
    assert_eq!(s["error"]["code"], "approval_rejected");
    let evs = events(&f.engine, &run).await;
    let resolved = evs.iter().find(|e| e.event_type == "interrupt.resolved").unwrap();
    assert_eq!(resolved.payload["decision"], "rejected");
    assert_eq!(resolved.payload["x-tollgate-escalated"], true);
    let due = f.engine.outbox_due(10).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].mail_reason(), Some(MailReason::Escalation));
    assert_eq!(due[0].recipient, "esc");
}

#[tokio::test]
async fn callbacks_are_queued_with_the_interrupt_and_the_run_end_in_the_same_step() {
    let f = fixture().await;
    let owner = actor(&f.engine, "owner").await;
    let req = |url: &str| -> CreateRun {
        serde_json::from_value(json!({"workflowId": "conformance-approval", "callbackUrl": url})).unwrap()
    };

    // Delivery off: callbackUrl is refused, naming the field; nothing is written.
    match f
        .engine
        .create_run(req("https://example.com/hook"), &owner, None)
        .await
    {
        Err(EngineError::Validation { field, message, .. }) => {
            assert_eq!(field.as_deref(), Some("callbackUrl"));
            assert!(message.contains("does not deliver callbacks"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    f.engine
        .set_callback_policy(Some(tollgate::egress::EgressPolicy::default()));
    // The guard refuses before anything is written.
    for url in [
        "https://127.0.0.1/x",
        "https://[::ffff:7f00:1]/",
        "http://example.com/",
    ] {
        match f.engine.create_run(req(url), &owner, None).await {
            Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("callbackUrl")),
            other => panic!("{url}: expected a refusal, got {other:?}"),
        }
    }
    assert_eq!(f.engine.run_count().await.unwrap(), 0);
    assert!(f
        .engine
        .outbox_due_of(tollgate::wire::OutboxKind::Callback, 10)
        .await
        .unwrap()
        .is_empty());

    // A run without callbackUrl queues no callback.
    start(&f.engine, "conformance-approval", json!({})).await;
    assert!(f
        .engine
        .outbox_due_of(tollgate::wire::OutboxKind::Callback, 10)
        .await
        .unwrap()
        .is_empty());

    // interrupt.requested: one row, committed with the event.
    let run = f
        .engine
        .create_run(req("https://Example.com/hook"), &owner, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id;
    let due = f
        .engine
        .outbox_due_of(tollgate::wire::OutboxKind::Callback, 10)
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    assert!(f.engine.outbox_due(10).await.unwrap().is_empty(), "not an email");
    let row = &due[0];
    assert_eq!(
        (row.kind.as_str(), row.reason.as_str()),
        ("callback", "interrupt.requested")
    );
    assert_eq!(row.address, "https://example.com/hook");
    let body: Value = serde_json::from_str(row.body.as_deref().unwrap()).unwrap();
    let events = f.engine.events_after(&run, &owner, -1, 1000).await.unwrap().0;
    let requested = events
        .iter()
        .find(|e| e.event_type == "interrupt.requested")
        .unwrap();
    assert_eq!(body["sequence"], json!(requested.sequence));
    assert_eq!(body["payload"], requested.payload);
    assert_eq!(body["runStatus"], "waiting-approval");
    assert_eq!(body["interruptId"], json!(row.interrupt_id));
    assert!(!row.interrupt_id.is_empty());

    // A refused resolve writes nothing; the accepting one ends the run: run.completed.
    assert!(
        resolve(&f.engine, &run, "gate", "owner", json!({"action": "nope"}))
            .await
            .is_err()
    );
    assert_eq!(pending_of(&f.engine, "callback").await.len(), 1);
    resolve(&f.engine, &run, "gate", "owner", json!({"action": "accept"}))
        .await
        .unwrap();
    let due = pending_of(&f.engine, "callback").await;
    assert_eq!(due.len(), 2);
    let end: Value = serde_json::from_str(due[1].body.as_deref().unwrap()).unwrap();
    assert_eq!(end["type"], "run.completed");
    assert_eq!(end["runStatus"], "completed");

    // Delivery bookkeeping: a failure keeps the status, a refusal gives up.
    f.engine
        .callback_failed(due[0].id, Some(302), "redirect".into(), true)
        .await
        .unwrap();
    f.engine
        .callback_failed(due[1].id, None, "refused".into(), false)
        .await
        .unwrap();
    let first = f.engine.outbox_item(due[0].id).await.unwrap();
    assert_eq!(
        (first.status.as_str(), first.attempts, first.response_status),
        ("pending", 1, Some(302))
    );
    let second = f.engine.outbox_item(due[1].id).await.unwrap();
    assert_eq!(second.status, "failed");
    f.engine.outbox_retry(due[1].id).await.unwrap();
    f.engine
        .callback_delivered(due[1].id, "https", 204, "ok".into())
        .await
        .unwrap();
    let second = f.engine.outbox_item(due[1].id).await.unwrap();
    assert_eq!(
        (second.status.as_str(), second.response_status),
        ("sent", Some(204))
    );

    // The admin's filtered view.
    use tollgate::engine::outbox::OutboxFilter;
    let only = |kind: &str, status: Option<&str>| OutboxFilter {
        tenant: Some("acme".into()),
        kind: Some(kind.into()),
        status: status.map(String::from),
        limit: None,
    };
    assert_eq!(
        f.engine.outbox_list(&only("callback", None)).await.unwrap().len(),
        2
    );
    assert_eq!(
        f.engine
            .outbox_list(&only("callback", Some("sent")))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(f
        .engine
        .outbox_list(&only("email", None))
        .await
        .unwrap()
        .is_empty());
    let other = OutboxFilter {
        tenant: Some("other".into()),
        ..OutboxFilter::default()
    };
    assert!(f.engine.outbox_list(&other).await.unwrap().is_empty());
    match f.engine.outbox_list(&only("fax", None)).await {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("kind")),
        other => panic!("{other:?}"),
    }
}

/// The live inbox asks the engine, per committed change, whether a person's
/// inbox can have changed: only people eligible for one of the run's
/// interrupts (pending or decided), never people of another tenant.
#[tokio::test]
async fn inbox_concerns_only_eligible_people() {
    let f = fixture().await;
    let e = &f.engine;
    register(
        e,
        json!({"id": "live-fin", "nodes": [gate("gate", json!({"title": "Live", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"]}))]}),
    )
    .await;
    let ann = e.principal("ann").await.unwrap().unwrap();
    let (before, elsewhere) = (e.change_count(&ann.tenant), e.change_count("other"));
    let run = start(e, "live-fin", json!({})).await;
    assert!(
        e.change_count(&ann.tenant) > before,
        "creating a run is a broadcast change"
    );
    assert_eq!(
        e.change_count("other"),
        elsewhere,
        "counted by tenant: another tenant's count shows nothing of it"
    );
    let cat = e.principal("cat").await.unwrap().unwrap();
    assert!(e.inbox_concerns(&ann, &run).await.unwrap(), "ann is in finance");
    assert!(!e.inbox_concerns(&cat, &run).await.unwrap(), "cat is not");
    let mut stranger = ann.clone();
    stranger.tenant = "other".into();
    assert!(
        !e.inbox_concerns(&stranger, &run).await.unwrap(),
        "another tenant"
    );
    // Decided: still her concern (the row leaves her inbox).
    resolve(e, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert!(e.inbox_concerns(&ann, &run).await.unwrap());
    assert!(!e
        .inbox_concerns(&ann, &tollgate::RunId::trusted("acme/no-such-run"))
        .await
        .unwrap());
}

/// The inbox query: only what the person may decide, counted over all pages,
/// cut into pages of 50, newest first, with the filter lists.
#[tokio::test]
async fn pending_for_pages_and_eligibility() {
    use tollgate::engine::inbox::{InboxFilter, InboxSort};
    let f = fixture().await;
    let e = &f.engine;
    register(
        e,
        json!({"id": "inbox-fin", "nodes": [gate("gate", json!({"title": "Fin", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"]}))]}),
    )
    .await;
    let mut runs = Vec::new();
    for _ in 0..60 {
        runs.push(start(e, "inbox-fin", json!({})).await);
        f.clock.advance(1);
    }
    let ann = e.principal("ann").await.unwrap().unwrap();
    let cat = e.principal("cat").await.unwrap().unwrap();
    let first = e.pending_for(&ann, &InboxFilter::default()).await.unwrap();
    assert_eq!(
        (first.total, first.pages, first.page, first.items.len()),
        (60, 2, 1, 50)
    );
    assert_eq!(first.items[0].run_id, runs[59], "newest first");
    assert_eq!(first.items[0].eligible_via, "group:finance");
    assert_eq!(first.workflows, vec!["inbox-fin".to_string()]);
    let second = e
        .pending_for(
            &ann,
            &InboxFilter {
                page: 2,
                sort: InboxSort::Oldest,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(second.items.len(), 10);
    assert_eq!(second.items[9].run_id, runs[59], "oldest first, last page");
    let none = e.pending_for(&cat, &InboxFilter::default()).await.unwrap();
    assert_eq!((none.total, none.items.len(), none.pages), (0, 0, 1));
    let other = e
        .pending_for(
            &ann,
            &InboxFilter {
                workflow_id: Some("nope".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(other.total, 0);
    // Decided ones leave the inbox.
    resolve(e, &runs[0], "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(
        e.pending_for(&ann, &InboxFilter::default()).await.unwrap().total,
        59
    );
}

/// Deadline order: soonest deadline first, then those without a deadline,
/// oldest first; pages cut across the two ranges (each read on its own index).
#[tokio::test]
async fn deadline_order_pages_over_dated_then_undated() {
    use tollgate::engine::inbox::{InboxDue, InboxFilter, InboxSort};
    let f = fixture().await;
    let e = &f.engine;
    for (id, timeout) in [
        ("dl-short", Some(10_000)),
        ("dl-long", Some(100_000)),
        ("dl-none", None),
    ] {
        let mut config =
            json!({"title": id, "actions": ["accept", "reject"], "approverGroupRefs": ["finance"]});
        if let Some(ms) = timeout {
            config["timeoutMs"] = json!(ms);
        }
        register(e, json!({"id": id, "nodes": [gate("gate", config)]})).await;
    }
    // Interleaved: creation order is neither deadline order nor grouped.
    let mut expected: Vec<(i64, i64, tollgate::RunId)> = Vec::new();
    for i in 0..120i64 {
        let (workflow, deadline) = match i % 4 {
            0 => ("dl-short", 10_000),
            1 => ("dl-long", 100_000),
            _ => ("dl-none", i64::MAX),
        };
        let run = start(e, workflow, json!({})).await;
        // Undated rows sort after every dated one, by age.
        expected.push((
            if deadline == i64::MAX {
                i64::MAX
            } else {
                i + deadline
            },
            i,
            run,
        ));
        f.clock.advance(1);
    }
    expected.sort();
    let ann = e.principal("ann").await.unwrap().unwrap();
    let mut seen = Vec::new();
    for page in 1..=3 {
        let filter = InboxFilter {
            sort: InboxSort::Deadline,
            page,
            ..Default::default()
        };
        let got = e.pending_for(&ann, &filter).await.unwrap();
        assert_eq!((got.total, got.pages, got.page), (120, 3, page));
        seen.extend(got.items.into_iter().map(|item| item.run_id));
    }
    let want: Vec<String> = expected.iter().map(|(_, _, run)| run.to_string()).collect();
    assert_eq!(seen, want, "60 dated by deadline, then 60 undated by age");
    // Narrowed: without a deadline only (oldest first), and a deadline window only.
    let never = InboxFilter {
        sort: InboxSort::Deadline,
        due: Some(InboxDue::Never),
        page: 2,
        ..Default::default()
    };
    let got = e.pending_for(&ann, &never).await.unwrap();
    assert_eq!((got.total, got.items.len()), (60, 10));
    assert_eq!(got.items.last().map(|i| &i.run_id), want.last());
    let day = InboxFilter {
        sort: InboxSort::Deadline,
        due: Some(InboxDue::Day),
        ..Default::default()
    };
    let got = e.pending_for(&ann, &day).await.unwrap();
    assert_eq!(got.total, 60);
    let dated: Vec<_> = got.items.into_iter().map(|item| item.run_id).collect();
    assert_eq!(dated, want[..50].to_vec());
}

fn principal_in(id: &str, tenant: &str, groups: &[&str], email: Option<&str>) -> Principal {
    Principal {
        id: id.into(),
        tenant: tenant.into(),
        name: id.into(),
        email: email.map(str::to_string),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: vec![],
        is_override: false,
    }
}

/// Definitions are keyed by tenant: instance-wide ones are read-only to
/// tenants, a tenant's own are invisible to the others, and a run executes
/// its own tenant's.
#[tokio::test]
async fn tenants_register_only_their_own_definitions() {
    use tollgate::auth::Scope;
    let f = fixture().await;
    let admin_of = |tenant: &str| {
        Actor::api_key(
            principal_in(&format!("admin-{tenant}"), tenant, &[], None),
            vec![Scope::Admin],
        )
    };
    let def = |required: u32| json!({"id": "mine", "nodes": [gate("gate", json!({"title": "M", "actions": ["accept"], "requiredApprovals": required}))]});
    let (dash, under) = (admin_of("acme-x"), admin_of("acme_x"));
    assert!(
        f.engine.put_tenant_workflow(&dash, def(2)).await.unwrap().1,
        "new"
    );
    assert!(
        f.engine.put_tenant_workflow(&under, def(1)).await.unwrap().1,
        "new in acme_x too"
    );
    assert!(
        !f.engine.put_tenant_workflow(&dash, def(2)).await.unwrap().1,
        "replaced"
    );
    assert_eq!(
        f.engine.workflow_for(&dash, "mine").await.unwrap()["nodes"][0]["config"]["requiredApprovals"],
        2
    );
    assert_eq!(
        f.engine.workflow_for(&under, "mine").await.unwrap()["nodes"][0]["config"]["requiredApprovals"],
        1
    );
    assert!(matches!(
        f.engine.workflow_for(&admin_of("ACME-X"), "mine").await,
        Err(EngineError::NotFound(_))
    ));
    assert!(f.engine.workflow("mine").is_none(), "not instance-wide");
    assert!(!f.engine.workflow_ids().contains(&"mine".to_string()));
    // Instance-wide: read-only to tenants.
    let before = f.engine.workflow("conformance-approval").unwrap();
    let mut changed = before.clone();
    changed["name"] = json!("replaced by a tenant");
    assert!(matches!(
        f.engine.put_tenant_workflow(&dash, changed).await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(f.engine.workflow("conformance-approval").unwrap(), before);
    // Only admins register.
    let ann = actor(&f.engine, "ann").await;
    assert!(matches!(
        f.engine.put_tenant_workflow(&ann, def(1)).await,
        Err(EngineError::Forbidden(_))
    ));
    // A run of acme has no "mine": neither acme-x's nor acme_x's.
    let req: CreateRun = serde_json::from_value(json!({"workflowId": "mine"})).unwrap();
    assert!(matches!(
        f.engine
            .create_run(req, &actor(&f.engine, "owner").await, None)
            .await,
        Err(EngineError::NotFound(_))
    ));
    let listed: Vec<String> = f
        .engine
        .workflows_for(&under)
        .unwrap()
        .into_iter()
        .map(|w| format!("{}:{}", w.id, w.scope))
        .collect();
    assert!(listed.contains(&"mine:tenant".to_string()), "{listed:?}");
    assert!(listed.contains(&"conformance-approval:instance".to_string()));
}

/// Scopes bind the engine: a read-only actor cannot resolve, gets only an
/// inspect link, and a resolve link of a principal that no longer holds
/// approvals:respond decides nothing.
#[tokio::test]
async fn links_and_resolves_follow_the_actors_scopes() {
    use tollgate::auth::Scope;
    use tollgate::token::Intent;
    let f = fixture().await;
    f.engine.set_token_keys(keys(), Some(600_000));
    f.engine
        .upsert_principal(principal_in("svc", "acme", &["finance"], None))
        .await
        .unwrap();
    register(&f.engine, json!({"id": "fin", "nodes": [gate("gate", json!({"title": "F", "actions": ["accept"], "approverGroupRefs": ["finance"]}))]})).await;
    let run = start(&f.engine, "fin", json!({})).await;
    let svc = f.engine.principal("svc").await.unwrap().unwrap();
    let reader = Actor::api_key(svc.clone(), vec![Scope::RunsRead]);
    assert!(matches!(
        f.engine
            .resolve(&run, "gate", json!({"action": "accept"}), &reader, None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    let (_, _, intent) = f
        .engine
        .link_for(&reader, &run, "gate", None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(intent, Intent::Inspect, "runs:read only");
    let (_, _, intent) = f
        .engine
        .link_for(&reader, &run, "gate", Some(Intent::Resolve))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(intent, Intent::Inspect, "asking is not enough");
    let ann = actor(&f.engine, "ann").await;
    assert_eq!(
        f.engine
            .link_for(&ann, &run, "gate", None)
            .await
            .unwrap()
            .unwrap()
            .2,
        Intent::Resolve
    );
    assert_eq!(
        f.engine
            .link_for(&ann, &run, "gate", Some(Intent::Inspect))
            .await
            .unwrap()
            .unwrap()
            .2,
        Intent::Inspect
    );
    let cat = actor(&f.engine, "cat").await;
    assert_eq!(
        f.engine
            .link_for(&cat, &run, "gate", None)
            .await
            .unwrap()
            .unwrap()
            .2,
        Intent::Inspect,
        "may respond, not eligible"
    );

    // svc holds no key at all: a resolve link minted for it by the operator decides nothing.
    assert!(!f.engine.holds_respond("svc").await.unwrap());
    let (token, _) = f
        .engine
        .mint_token(&run, "gate", &svc, Intent::Resolve)
        .await
        .unwrap();
    assert!(matches!(
        f.engine
            .resolve_by_token(&token, json!({"action": "accept"}), None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    // With a respond key it decides; a revoked key takes that back.
    f.engine
        .put_api_key("svc-key-0123456789ab", "svc", &[Scope::ApprovalsRespond], None)
        .await
        .unwrap();
    assert!(f.engine.holds_respond("svc").await.unwrap());
    let revoked = f
        .engine
        .operator_revoke_api_key(&tollgate::auth::hash_key("svc-key-0123456789ab")[..12])
        .await
        .unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(!f.engine.holds_respond("svc").await.unwrap());
    assert!(matches!(
        f.engine
            .resolve_by_token(&token, json!({"action": "accept"}), None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    // A person (an email address) holds it without a key.
    f.engine
        .upsert_principal(principal_in("svc", "acme", &["finance"], Some("svc@example.com")))
        .await
        .unwrap();
    assert!(f.engine.holds_respond("svc").await.unwrap());
    f.engine
        .resolve_by_token(&token, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(snapshot(&f.engine, &run).await["status"], "completed");
}

/// A gate without approver refs is open only to holders of approvals:respond.
#[tokio::test]
async fn open_gates_need_approvals_respond() {
    use tollgate::auth::Scope;
    let f = fixture().await;
    let run = start(&f.engine, "conformance-approval", json!({})).await;
    let ann = f.engine.principal("ann").await.unwrap().unwrap();
    let token_actor_without = Actor::token(ann.clone(), false);
    assert!(matches!(
        f.engine
            .resolve(
                &run,
                "gate",
                json!({"action": "accept"}),
                &token_actor_without,
                None
            )
            .await,
        Err(EngineError::Forbidden(_))
    ));
    let may = f
        .engine
        .may_decide(&run, "gate", &token_actor_without)
        .await
        .unwrap();
    assert!(may.is_err(), "{may:?}");
    let may = f
        .engine
        .may_decide(
            &run,
            "gate",
            &Actor::api_key(ann, vec![Scope::RunsRead, Scope::ApprovalsRespond]),
        )
        .await
        .unwrap();
    assert_eq!(may.unwrap().via, "scope:approvals:respond");
    assert_eq!(snapshot(&f.engine, &run).await["status"], "waiting-approval");
}

/// A link names one visit: after the node is asked again, the first
/// visit's link decides nothing.
#[tokio::test]
async fn a_link_decides_only_its_own_visit() {
    use tollgate::token::Intent;
    let f = fixture().await;
    f.engine.set_token_keys(keys(), Some(600_000));
    let run = start(&f.engine, "conformance-approval-reject-loopback", json!({})).await;
    let ann = f.engine.principal("ann").await.unwrap().unwrap();
    let (first, _) = f
        .engine
        .mint_token(&run, "gate", &ann, Intent::Resolve)
        .await
        .unwrap();
    let owner = actor(&f.engine, "owner").await;
    let visit1 = f.engine.inspect_interrupt(&run, "gate", &owner).await.unwrap();
    resolve(&f.engine, &run, "gate", "bob", json!({"action": "reject"}))
        .await
        .unwrap();
    let visit2 = f.engine.inspect_interrupt(&run, "gate", &owner).await.unwrap();
    assert_eq!(visit2.status, "pending");
    assert_ne!(visit2.interrupt_id, visit1.interrupt_id);
    assert!(matches!(
        f.engine
            .resolve_by_token(&first, json!({"action": "accept"}), None)
            .await,
        Err(EngineError::AlreadyResolved(_))
    ));
    let after = f.engine.inspect_interrupt(&run, "gate", &owner).await.unwrap();
    assert_eq!(after.status, "pending");
    assert!(after.votes.is_empty(), "nothing decided on the second visit");
    // Mail minted for the first visit's row links to nothing, not to the second visit.
    assert!(matches!(
        f.engine
            .mint_token_for(&visit1.interrupt_id, &ann, Intent::Resolve)
            .await,
        Err(EngineError::NotFound(_))
    ));
    let (second, _) = f
        .engine
        .mint_token_for(&visit2.interrupt_id, &ann, Intent::Resolve)
        .await
        .unwrap();
    f.engine
        .resolve_by_token(&second, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(snapshot(&f.engine, &run).await["status"], "completed");
}

/// Tenant scoping is an exact range, not a pattern: `acme_x` (where `_` is a
/// LIKE wildcard) and `ACME-X` (LIKE ignores case) see nothing of `acme-x`.
#[tokio::test]
async fn tenants_one_character_apart_see_nothing_of_each_other() {
    use tollgate::auth::Scope;
    let f = fixture().await;
    let tenants = ["acme-x", "acme_x", "ACME-X"];
    let mut runs = Vec::new();
    for t in tenants {
        let p = principal_in(&format!("fin-{t}"), t, &["finance"], Some("fin@example.com"));
        f.engine.upsert_principal(p.clone()).await.unwrap();
        let a = Actor::api_key(p, vec![Scope::Admin]);
        let req: CreateRun = serde_json::from_value(json!({"workflowId": "conformance-approval"})).unwrap();
        runs.push((
            a.clone(),
            f.engine
                .create_run(req, &a, None)
                .await
                .unwrap()
                .result
                .unwrap()
                .run_id,
        ));
    }
    for (actor, run) in &runs {
        let filter = tollgate::InterruptFilter {
            status: Some(tollgate::InterruptStatus::Pending),
            ..Default::default()
        };
        let listed: Vec<String> = f
            .engine
            .list_interrupts(actor, &filter)
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.run_id.into_string())
            .collect();
        assert_eq!(listed, vec![run.clone()], "{}", actor.tenant());
        let inbox = f
            .engine
            .pending_for(&actor.principal, &Default::default())
            .await
            .unwrap();
        assert_eq!(inbox.items.len(), 1, "{}", actor.tenant());
        assert_eq!(&inbox.items[0].run_id, run);
        let o = f.engine.admin_overview(actor, 14).await.unwrap();
        assert_eq!(o.pending_total, 1, "{}", actor.tenant());
        assert_eq!(o.pending.len(), 1);
        let page = f.engine.admin_runs(actor, &Default::default()).await.unwrap();
        assert_eq!(page.total, 1);
        for (_, other) in runs.iter().filter(|(_, r)| r != run) {
            assert!(!f.engine.inbox_concerns(&actor.principal, other).await.unwrap());
            assert!(matches!(
                f.engine.run_timeline(actor, other).await,
                Err(EngineError::NotFound(_))
            ));
        }
    }
    // Admin operations check the actor: a reader of acme-x is no admin.
    let reader = Actor::api_key(runs[0].0.principal.clone(), vec![Scope::RunsRead]);
    assert!(matches!(
        f.engine.admin_overview(&reader, 14).await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        f.engine.api_keys(&reader).await,
        Err(EngineError::Forbidden(_))
    ));
    // Tenant ids entering the directory follow one grammar.
    assert!(matches!(
        f.engine
            .upsert_principal(principal_in("bad", "a~2Fb", &[], None))
            .await,
        Err(EngineError::Validation { .. })
    ));
}

#[tokio::test]
async fn outbox_claims_are_leased_and_taken_over_when_the_lease_runs_out() {
    let f = fixture().await;
    for id in ["fin1", "fin2"] {
        f.engine
            .upsert_principal(Principal {
                id: id.into(),
                tenant: "acme".into(),
                name: id.into(),
                email: Some(format!("{id}@example.com")),
                groups: vec!["finance".into()],
                roles: vec![],
                is_override: false,
            })
            .await
            .unwrap();
    }
    register(&f.engine, json!({"id": "mail", "nodes": [gate("gate", json!({"title": "M", "actions": ["accept"], "approverGroupRefs": ["finance"]}))]})).await;
    for _ in 0..2 {
        start(&f.engine, "mail", json!({})).await;
    }
    let all = pending_of(&f.engine, "email").await;
    assert_eq!(all.len(), 4);
    // Two pollers at once (two instances): disjoint claims covering the due messages.
    let (a, b) = tokio::join!(f.engine.outbox_due(2), f.engine.outbox_due(100));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut ids: Vec<i64> = a.iter().chain(&b).map(|i| i.id).collect();
    ids.sort();
    let before = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), before, "a message was claimed twice");
    assert_eq!(ids, all.iter().map(|i| i.id).collect::<Vec<_>>());
    assert!(f.engine.outbox_due(100).await.unwrap().is_empty(), "all are held");
    // A failed attempt gives the message back after its backoff, not the lease.
    f.engine.outbox_failed(ids[0], "smtp down".into()).await.unwrap();
    f.clock.advance(tollgate::engine::outbox::backoff_ms(1));
    let retried = f.engine.outbox_due(100).await.unwrap();
    assert_eq!(retried.iter().map(|i| i.id).collect::<Vec<_>>(), vec![ids[0]]);
    // The holder died: the rest come back when the lease runs out, once.
    f.clock.advance(tollgate::engine::outbox::OUTBOX_LEASE_MS);
    let taken_over: Vec<i64> = f
        .engine
        .outbox_due(100)
        .await
        .unwrap()
        .iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(taken_over, ids, "every unrecorded claim is taken over");
    for id in &ids {
        f.engine
            .outbox_delivered(*id, "smtp", "sent".into())
            .await
            .unwrap();
    }
    f.clock.advance(tollgate::engine::outbox::OUTBOX_LEASE_MS);
    assert!(
        f.engine.outbox_due(100).await.unwrap().is_empty(),
        "delivered is never claimed again"
    );
}

/// Gates whose `artifactData` or `audience` is not an object are valid
/// definitions: the inbox counts their votes and the reminder scan goes on.
#[tokio::test]
async fn non_object_artifacts_do_not_break_the_inbox_or_reminders() {
    let f = fixture().await;
    let e = &f.engine;
    // `audience` is closed ({subjects, groups, roles}): a string is refused at registration.
    let refused = e
        .register_workflow(json!({"id": "plain-audience", "nodes": [gate("gate", json!({
            "title": "PO", "actions": ["accept"], "audience": "finance"
        }))]}))
        .await;
    assert!(
        matches!(&refused, Err(EngineError::Validation { message, .. }) if message.contains("node \"gate\"") && message.contains("audience")),
        "{refused:?}"
    );
    register(
        e,
        json!({"id": "plain-artifact", "nodes": [gate("gate", json!({
            "title": "PO", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"],
            "requiredApprovals": 2, "artifactData": "PO-7", "timeoutMs": 60_000
        }))]}),
    )
    .await;
    let run = start(e, "plain-artifact", json!({})).await;
    resolve(e, &run, "gate", "ann", json!({"action": "accept"}))
        .await
        .unwrap();
    let bob = e.principal("bob").await.unwrap().unwrap();
    let inbox = e.pending_for(&bob, &Default::default()).await.unwrap();
    let item = inbox
        .items
        .iter()
        .find(|i| i.run_id == run)
        .expect("listed for bob");
    assert_eq!((item.accepts, item.required_approvals), (Some(1), Some(2)));
    // Within the reminder window: the scan reads the stored row and claims it.
    f.clock.advance(50_000);
    assert!(e.queue_reminders(30_000).await.is_ok());
    assert_eq!(e.queue_reminders(30_000).await.unwrap(), 0, "reminded once");
}

/// The inbox's kept counts: pending interrupts stored without them (before
/// migration 0011, or with the counts lost) get their group and counts back
/// when the engine opens, and a person's own requests stay out of their inbox.
#[tokio::test]
async fn inbox_counts_are_rebuilt_when_the_engine_opens() {
    let Fixture { engine, clock, _dir } = fixture().await;
    register(
        &engine,
        json!({"id": "inbox-fin", "nodes": [gate("gate", json!({"title": "Fin", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}))]}),
    )
    .await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(start(&engine, "inbox-fin", json!({})).await);
    }
    let ann = actor(&engine, "ann").await;
    start_as(&engine, "inbox-fin", &ann).await;
    assert_eq!(
        inbox_totals(&engine, &["ann", "bob"]).await,
        vec![3, 4],
        "ann's own request is not in her inbox"
    );
    drop(engine);

    let path = _dir.path().join("t.db");
    let url = tollgate::store::testing::database_url(&path).await.unwrap();
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    for sql in [
        "UPDATE interrupts SET inbox_group = NULL",
        "DELETE FROM inbox_counts",
        "DELETE FROM inbox_groups",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let engine = open_at(&path, clock).await;
    assert_eq!(inbox_totals(&engine, &["ann", "bob"]).await, vec![3, 4]);
    assert_projection_matches_log(&engine, &runs[0]).await;
    resolve(&engine, &runs[0], "gate", "bob", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(inbox_totals(&engine, &["ann", "bob"]).await, vec![2, 3]);
    assert_projection_matches_log(&engine, &runs[0]).await;
}

/// A person's own requests are counted as they are raised and as they close
/// (decided by someone else, cancelled with their run, or a run cancelled
/// by its owner), and the kept counts agree with the pending rows throughout.
#[tokio::test]
async fn a_persons_own_requests_are_counted_as_they_are_raised_and_closed() {
    let f = fixture().await;
    let engine = &f.engine;
    register(
        engine,
        json!({"id": "own-fin", "nodes": [gate("gate", json!({"title": "Fin", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}))]}),
    )
    .await;
    let theirs = start(engine, "own-fin", json!({})).await;
    let ann = actor(engine, "ann").await;
    let mut hers = Vec::new();
    for _ in 0..3 {
        hers.push(start_as(engine, "own-fin", &ann).await);
    }
    // (ann's inbox, bob's inbox): ann never sees her own requests.
    let totals = || inbox_totals(engine, &["ann", "bob"]);
    assert_eq!(totals().await, vec![1, 4]);
    resolve(engine, &hers[0], "gate", "bob", json!({"action": "accept"}))
        .await
        .unwrap();
    assert_eq!(totals().await, vec![1, 3]);
    assert_projection_matches_log(engine, &hers[0]).await;
    engine
        .cancel_run(&hers[1], None, &ann, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(totals().await, vec![1, 2]);
    assert_projection_matches_log(engine, &hers[1]).await;
    let owner = actor(engine, "owner").await;
    engine
        .cancel_run(&theirs, None, &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert_eq!(totals().await, vec![0, 1]);
    assert_projection_matches_log(engine, &theirs).await;
    // The one left is still ann's own: bob decides it, she cannot.
    let refused = resolve(engine, &hers[2], "gate", "ann", json!({"action": "accept"})).await;
    assert!(refused.is_err(), "{refused:?}");
    resolve(engine, &hers[2], "gate", "bob", json!({"action": "reject"}))
        .await
        .unwrap();
    assert_eq!(totals().await, vec![0, 0]);
    assert_projection_matches_log(engine, &hers[2]).await;
}
