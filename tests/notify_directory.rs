//! Engine tests of who is told and named about an interrupt, read from a
//! tenant's whole directory: who is mailed about a new interrupt while the
//! writer keeps each tenant's people in memory (`store::directory_cache`):
//! every change to the directory reaches the next interrupt's mail,
//! whichever instance makes it, and a tenant never gets another's people;
//! and who an approval's page names as still able to vote. Against a real
//! database (SQLite, or PostgreSQL with `TOLLGATE_TEST_POSTGRES`).

mod common;

use common::{add, mailed, person};
use serde_json::json;
use tollgate::auth::Scope;
use tollgate::{Actor, CreateRun, Engine, RunId};

const WORKFLOW: &str = "finance-gate";

/// The workflow every tenant may run, and `svc`, acme's service principal.
async fn register(engine: &Engine) {
    add(engine, [person("svc", "acme", &[], &[], false)]).await;
    engine
        .register_workflow(json!({
            "id": WORKFLOW, "name": WORKFLOW, "version": "1.0.0",
            "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate",
                "config": {"title": "Claim", "actions": ["accept", "reject"],
                           "approverGroupRefs": ["finance"]}}],
            "edges": []
        }))
        .await
        .unwrap();
}

/// Starts a run of `tenant` as its `svc`; the run waits at its gate.
async fn start(engine: &Engine, tenant: &str, svc: &str) -> RunId {
    start_of(engine, tenant, svc, WORKFLOW).await
}

/// Starts a run of `workflow` as `owner` of `tenant`.
async fn start_of(engine: &Engine, tenant: &str, owner: &str, workflow: &str) -> RunId {
    let owner = engine.principal(owner).await.unwrap().unwrap();
    assert_eq!(owner.tenant, tenant);
    let actor = Actor::api_key(owner, vec![Scope::RunsCreate]);
    let req: CreateRun = serde_json::from_value(json!({"workflowId": workflow})).unwrap();
    engine
        .create_run(req, &actor, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

#[tokio::test]
async fn every_directory_change_reaches_the_next_interrupts_mail() {
    let t = common::engine().await;
    let (a, b) = (&t.engine, t.open_again().await);
    register(a).await;
    add(a, [person("ann", "acme", &["finance"], &[], true)]).await;
    let first = start(a, "acme", "svc").await;
    assert_eq!(mailed(a, &first).await, ["ann"]);

    // Another instance adds a person: the first one's next interrupt sees them.
    add(&b, [person("bob", "acme", &["finance"], &[], true)]).await;
    let run = start(a, "acme", "svc").await;
    assert_eq!(mailed(a, &run).await, ["ann", "bob"]);

    // ... moves one out of the group,
    add(&b, [person("ann", "acme", &["legal"], &[], true)]).await;
    let run = start(a, "acme", "svc").await;
    assert_eq!(mailed(a, &run).await, ["bob"]);

    // ... takes an address away and gives one,
    add(
        &b,
        [
            person("bob", "acme", &["finance"], &[], false),
            person("cat", "acme", &["finance"], &[], true),
        ],
    )
    .await;
    let run = start(a, "acme", "svc").await;
    assert_eq!(mailed(a, &run).await, ["cat"]);

    // ... removes a person.
    b.remove_principal("cat").await.unwrap();
    let run = start(a, "acme", "svc").await;
    assert!(mailed(a, &run).await.is_empty());

    // An unchanged directory mails as before (the kept people).
    add(a, [person("dan", "acme", &["finance"], &[], true)]).await;
    for _ in 0..2 {
        let run = start(a, "acme", "svc").await;
        assert_eq!(mailed(a, &run).await, ["dan"]);
    }
}

#[tokio::test]
async fn a_tenant_never_gets_anothers_people() {
    let t = common::engine().await;
    let engine = &t.engine;
    register(engine).await;
    // `svc` is acme's; acmf's service principal has its own id.
    add(engine, [person("svc-f", "acmf", &[], &[], false)]).await;
    add(
        engine,
        [
            person("ann", "acme", &["finance"], &[], true),
            person("fay", "acmf", &["finance"], &[], true),
        ],
    )
    .await;
    // Both tenants' people are kept.
    let acme = start(engine, "acme", "svc").await;
    let acmf = start(engine, "acmf", "svc-f").await;
    assert_eq!(mailed(engine, &acme).await, ["ann"]);
    assert_eq!(mailed(engine, &acmf).await, ["fay"]);

    // A change in acmf leaves acme's mail alone, and the other way round.
    add(engine, [person("gus", "acmf", &["finance"], &[], true)]).await;
    assert_eq!(mailed(engine, &start(engine, "acme", "svc").await).await, ["ann"]);
    assert_eq!(
        mailed(engine, &start(engine, "acmf", "svc-f").await).await,
        ["fay", "gus"]
    );

    // A person moved to another tenant leaves the first one's mail.
    add(engine, [person("ann", "acmf", &["finance"], &[], true)]).await;
    assert!(mailed(engine, &start(engine, "acme", "svc").await)
        .await
        .is_empty());
    assert_eq!(
        mailed(engine, &start(engine, "acmf", "svc-f").await).await,
        ["ann", "fay", "gus"]
    );
}

/// Who the console's page of an approval names as still able to vote: the
/// run's tenant's principals the gate admits who hold `approvals:respond`
/// (every person; a service principal through a live key that grants it)
/// and have not voted, by name; never the requester where self-approval is
/// refused, never another tenant's people.
#[tokio::test]
async fn who_may_still_vote_on_a_page() {
    use tollgate::auth::Scope;
    let t = common::engine().await;
    let e = &t.engine;
    e.register_workflow(json!({
        "id": "pair", "name": "pair", "version": "1.0.0",
        "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate",
            "config": {"title": "Claim", "actions": ["accept", "reject"],
                       "approverGroupRefs": ["finance"], "requiredApprovals": 2}}],
        "edges": []
    }))
    .await
    .unwrap();
    let named = |id: &str, name: &str, groups: &[&str], email: bool| {
        let mut p = person(id, "acme", groups, &[], email);
        p.name = name.into();
        p
    };
    add(
        e,
        [
            named("owner", "Olga", &["finance"], true),
            named("ann", "Zoe Ann", &["finance"], true),
            named("bob", "Bob", &["legal"], true),
            named("dan", "Dan", &["finance"], true),
            named("svc-r", "A robot", &["finance"], false),
            named("svc-n", "B robot", &["finance"], false),
            named("svc-x", "C robot", &["finance"], false),
            person("fay", "acmf", &["finance"], &[], true),
        ],
    )
    .await;
    e.put_api_key(
        "key-r-0123456789abcdef",
        "svc-r",
        &[Scope::ApprovalsRespond],
        None,
    )
    .await
    .unwrap();
    e.put_api_key("key-n-0123456789abcdef", "svc-n", &[Scope::RunsRead], None)
        .await
        .unwrap();
    // A revoked key grants nothing.
    e.put_api_key("key-x-0123456789abcdef", "svc-x", &[Scope::Admin], None)
        .await
        .unwrap();
    let id = &tollgate::auth::hash_key("key-x-0123456789abcdef")[..12];
    e.operator_revoke_api_key(id).await.unwrap();

    let owner = Actor::api_key(
        e.principal("owner").await.unwrap().unwrap(),
        vec![Scope::RunsCreate, Scope::RunsRead],
    );
    let run = start_of(e, "acme", "owner", "pair").await;
    let dan = Actor::api_key(
        e.principal("dan").await.unwrap().unwrap(),
        vec![Scope::ApprovalsRespond],
    );
    e.resolve(&run, "gate", json!({"action": "accept"}), &dan, None)
        .await
        .unwrap()
        .result
        .unwrap();

    let still = e.may_still_vote(&run, "gate", &owner).await.unwrap();
    let named: Vec<(&str, &str, &str)> = still
        .iter()
        .map(|v| (v.id.as_str(), v.name.as_str(), v.eligible_via.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("svc-r", "A robot", "group:finance"),
            ("ann", "Zoe Ann", "group:finance")
        ]
    );
}
