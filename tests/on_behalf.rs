//! Engine tests of runs created on someone's behalf (`createRun.requestedBy`):
//! who may name another person, self-approval against that person as well
//! as the owner, and no decision link mailed to them. Against a real database
//! (SQLite, or PostgreSQL with `TOLLGATE_TEST_POSTGRES`).

mod common;

use serde_json::{json, Value};
use std::sync::Arc;
use tollgate::auth::Scope;
use tollgate::engine::inbox::InboxFilter;
use tollgate::token::Intent;
use tollgate::{Actor, CreateRun, Engine, EngineError, EngineOptions, ManualClock, Principal, RunId};

struct World {
    engine: Engine,
    _dir: tempfile::TempDir,
}

fn person(id: &str, tenant: &str, email: Option<&str>, groups: &[&str]) -> Principal {
    Principal {
        id: id.into(),
        tenant: tenant.into(),
        name: id.into(),
        email: email.map(String::from),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: vec![],
        is_override: false,
    }
}

/// A gate for the finance group; `quorum` 2 refuses self-approval by default.
fn gate(id: &str, quorum: u32) -> Value {
    json!({
        "id": id, "name": id, "version": "1.0.0",
        "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate",
            "config": {"title": "Expense claim", "actions": ["accept", "reject"],
                       "requiredApprovals": quorum, "approverGroupRefs": ["finance"]}}],
        "edges": []
    })
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let url = tollgate::store::testing::database_url(&dir.path().join("b.db"))
        .await
        .unwrap();
    let mut opts = EngineOptions::new(url);
    opts.clock = Arc::new(ManualClock::new(1_800_000_000_000));
    let engine = Engine::open(opts).await.unwrap();
    engine.set_token_keys(
        vec![tollgate::token::SigningKey {
            kid: "k1".into(),
            secret: "a-test-secret-of-at-least-32-characters".into(),
            retired_at: None,
        }],
        None,
    );
    for wf in [gate("claim-single", 1), gate("claim-quorum", 2)] {
        engine.register_workflow(wf).await.unwrap();
    }
    for p in [
        person("svc", "acme", None, &[]),
        person("linus", "acme", Some("linus@x"), &["finance"]),
        person("ann", "acme", Some("ann@x"), &["finance"]),
        person("bea", "acme", Some("bea@x"), &["finance"]),
        // Differs from `linus` of acme only by its tenant, which differs by one character.
        person("lin", "acmf", Some("lin@x"), &["finance"]),
    ] {
        engine.upsert_principal(p).await.unwrap();
    }
    World { engine, _dir: dir }
}

impl World {
    async fn actor(&self, id: &str, scopes: &[Scope]) -> Actor {
        let p = self.engine.principal(id).await.unwrap().unwrap();
        Actor::api_key(p, scopes.to_vec())
    }

    async fn create(
        &self,
        by: &Actor,
        workflow: &str,
        requested_by: Option<&str>,
    ) -> Result<RunId, EngineError> {
        let req: CreateRun =
            serde_json::from_value(json!({"workflowId": workflow, "requestedBy": requested_by})).unwrap();
        self.engine
            .create_run(req, by, None)
            .await
            .and_then(|o| o.result)
            .map(|c| c.run_id)
    }

    async fn vote(&self, run: &RunId, who: &str) -> Result<tollgate::Resolved, EngineError> {
        let actor = self.actor(who, &[Scope::RunsRead, Scope::ApprovalsRespond]).await;
        self.engine
            .resolve(run, "gate", json!({"action": "accept"}), &actor, None)
            .await
            .and_then(|o| o.result)
    }

    /// Who was queued a mail about `run`.
    async fn mailed(&self, run: &RunId) -> Vec<String> {
        common::mailed(&self.engine, run).await
    }
}

const CREATE: &[Scope] = &[Scope::RunsCreate, Scope::RunsRead, Scope::ApprovalsRespond];
const ON_BEHALF: &[Scope] = &[
    Scope::RunsCreate,
    Scope::RunsRead,
    Scope::ApprovalsRespond,
    Scope::RunsOnBehalf,
];

#[tokio::test]
async fn only_the_on_behalf_scope_names_another_person_of_the_same_tenant() {
    let w = world().await;
    let plain = w.actor("svc", CREATE).await;
    let err = w.create(&plain, "claim-single", Some("linus")).await.unwrap_err();
    assert!(
        matches!(&err, EngineError::Forbidden(m) if m.contains("runs:on-behalf")),
        "{err:?}"
    );
    // Naming oneself is no acting on behalf of anyone.
    w.create(&plain, "claim-single", Some("svc")).await.unwrap();

    let svc = w.actor("svc", ON_BEHALF).await;
    for (who, what) in [("nobody", "unknown"), ("lin", "of another tenant"), ("", "empty")] {
        let err = w.create(&svc, "claim-single", Some(who)).await.unwrap_err();
        assert!(
            matches!(&err, EngineError::Validation { field: Some(f), .. } if f == "requestedBy"),
            "{what}: {err:?}"
        );
        // The same answer whether the person does not exist or is another tenant's.
        assert!(!err.to_string().contains("acmf"), "{err}");
    }
    let before = w.engine.run_count().await.unwrap();
    assert_eq!(before, 1, "refused creates leave nothing behind");
}

#[tokio::test]
async fn the_person_a_run_is_for_is_recorded_and_may_not_approve_it() {
    let w = world().await;
    let svc = w.actor("svc", ON_BEHALF).await;
    let run = w.create(&svc, "claim-quorum", Some("linus")).await.unwrap();

    let admin = w.actor("ann", &[Scope::Admin]).await;
    let snapshot = w.engine.snapshot(&run, &admin).await.unwrap();
    assert_eq!(snapshot["extensions"]["tollgate.run"]["requestedBy"], "linus");
    assert_eq!(snapshot["owner"]["subject"]["subjectId"], "svc");
    let (events, _) = w.engine.events_after(&run, &admin, -1, 10).await.unwrap();
    assert_eq!(events[0].payload["x-tollgate-requestedBy"], "linus");

    // Neither the person it is for nor the owner (who holds approvals:respond) votes.
    for who in ["linus", "svc"] {
        let err = w.vote(&run, who).await.unwrap_err();
        assert!(matches!(err, EngineError::Forbidden(_)), "{who}: {err:?}");
    }
    // linus's inbox does not offer it; ann's does.
    let linus = w.engine.principal("linus").await.unwrap().unwrap();
    let ann = w.engine.principal("ann").await.unwrap().unwrap();
    let mine = w
        .engine
        .pending_for(&linus, &InboxFilter::default())
        .await
        .unwrap();
    assert!(mine.items.iter().all(|i| i.run_id != run.as_str()));
    let hers = w.engine.pending_for(&ann, &InboxFilter::default()).await.unwrap();
    assert!(hers.items.iter().any(|i| i.run_id == run.as_str()));
    // Two distinct others decide.
    w.vote(&run, "ann").await.unwrap();
    let done = w.vote(&run, "bea").await.unwrap();
    assert_eq!(done.status.as_str(), "completed");
}

#[tokio::test]
async fn the_person_a_run_is_for_is_never_mailed_a_decision_link() {
    let w = world().await;
    let svc = w.actor("svc", ON_BEHALF).await;
    // A single-approval gate allows self-approval, yet linus is not mailed
    // about his own claim; the other finance people are.
    let run = w.create(&svc, "claim-single", Some("linus")).await.unwrap();
    assert_eq!(w.mailed(&run).await, ["ann", "bea"]);
    let admin = w.actor("ann", &[Scope::Admin]).await;
    let view = w.engine.inspect_interrupt(&run, "gate", &admin).await.unwrap();
    let mailed_intent = |who: &'static str| {
        let (engine, interrupt_id) = (w.engine.clone(), view.interrupt_id.clone());
        async move {
            let person = engine.principal(who).await.unwrap().unwrap();
            engine.mail_link_for(&interrupt_id, &person).await.unwrap().intent
        }
    };
    assert_eq!(
        mailed_intent("linus").await,
        Intent::Inspect,
        "a link to him may only show the request"
    );
    assert_eq!(mailed_intent("ann").await, Intent::Resolve);

    // Without requestedBy the owner is the one not mailed (as before).
    let linus_key = w.actor("linus", CREATE).await;
    let own = w.create(&linus_key, "claim-single", None).await.unwrap();
    assert_eq!(w.mailed(&own).await, ["ann", "bea"]);
}
