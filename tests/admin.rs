//! The admin dashboard's engine side against a real SQLite file, with an
//! injected clock: overview and charts, runs and timelines, the directory,
//! API keys and the outbox (token signing keys: tests/token_keys.rs).

mod common;

use common::{TestEngine, T0};
use serde_json::json;
use std::sync::Arc;
use tollgate::engine::admin::{MembershipKind, PrincipalEdit, RunFilter};
use tollgate::{Actor, CreateRun, Engine, EngineError, EngineOptions, ManualClock, Principal};

const HOUR: i64 = 3_600_000;

async fn fixture() -> TestEngine {
    let t = common::engine().await;
    let engine = &t.engine;
    common::add(
        engine,
        [
            common::person("owner", "acme", &[], &[], true),
            common::person("ann", "acme", &["finance"], &[], true),
            common::person("bob", "acme", &["finance"], &[], true),
            common::person("eve", "other", &["finance"], &[], true),
        ],
    )
    .await;
    engine
        .register_workflow(json!({
            "id": "gate", "name": "Gate", "version": "1",
            "nodes": [{"id": "review", "typeId": "core.approvalGate", "config": {
                "title": "Review", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "timeoutMs": 2 * HOUR
            }}],
            "edges": []
        }))
        .await
        .unwrap();
    engine
        .register_workflow(json!({
            "id": "open-gate", "name": "Open gate", "version": "1",
            "nodes": [{"id": "review", "typeId": "core.approvalGate", "config": {
                "title": "Open review", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"]
            }}],
            "edges": []
        }))
        .await
        .unwrap();
    t
}

/// An admin of `tenant` (an API key with the admin scope).
fn admin(tenant: &str) -> Actor {
    Actor::api_key(
        Principal {
            id: format!("admin-of-{tenant}"),
            tenant: tenant.into(),
            name: "Admin".into(),
            email: None,
            groups: vec![],
            roles: vec![],
            is_override: false,
        },
        vec![tollgate::auth::Scope::Admin],
    )
}

async fn actor(engine: &Engine, id: &str) -> Actor {
    Actor::api_key(
        engine.principal(id).await.unwrap().unwrap(),
        tollgate::auth::ALL_SCOPES[..4].to_vec(),
    )
}

async fn start(engine: &Engine, workflow: &str) -> tollgate::RunId {
    let req: CreateRun = serde_json::from_value(json!({"workflowId": workflow})).unwrap();
    engine
        .create_run(req, &actor(engine, "owner").await, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

async fn vote(engine: &Engine, run: &tollgate::RunId, who: &str, action: &str) {
    engine
        .resolve(
            run,
            "review",
            json!({"action": action}),
            &actor(engine, who).await,
            None,
        )
        .await
        .unwrap()
        .result
        .unwrap();
}

/// The overview counts a quorum gate's standing votes: a person's second
/// vote replaces their first, an `ask` stands beside the votes.
#[tokio::test]
async fn overview_counts_the_standing_votes_of_a_pending_gate() {
    let f = fixture().await;
    f.engine
        .register_workflow(json!({
            "id": "quorum", "name": "Quorum", "version": "1",
            "nodes": [{"id": "review", "typeId": "core.approvalGate", "config": {
                "title": "Two of finance", "actions": ["accept", "reject", "ask"], "requiredApprovals": 2,
                "approverGroupRefs": ["finance"]
            }}],
            "edges": []
        }))
        .await
        .unwrap();
    let run = start(&f.engine, "quorum").await;
    let standing = |o: &tollgate::engine::admin::AdminOverview| {
        o.pending.iter().find(|p| p.run_id == run.as_str()).unwrap().votes
    };
    assert_eq!(
        standing(&f.engine.admin_overview(&admin("acme"), 14).await.unwrap()),
        0
    );
    vote(&f.engine, &run, "ann", "accept").await;
    vote(&f.engine, &run, "ann", "accept").await;
    assert_eq!(
        standing(&f.engine.admin_overview(&admin("acme"), 14).await.unwrap()),
        1
    );
    vote(&f.engine, &run, "bob", "ask").await;
    assert_eq!(
        standing(&f.engine.admin_overview(&admin("acme"), 14).await.unwrap()),
        2
    );
    // The timeline's audit keeps every vote in cast order, the replaced one marked.
    let t = f.engine.run_timeline(&admin("acme"), &run).await.unwrap();
    let audit: Vec<(&str, &str, bool)> = t
        .audit
        .iter()
        .map(|a| (a.principal.as_str(), a.action.as_str(), a.counted))
        .collect();
    assert_eq!(
        audit,
        [
            ("ann", "accept", false),
            ("ann", "accept", true),
            ("bob", "ask", true)
        ]
    );
}

#[tokio::test]
async fn overview_orders_pending_by_deadline_and_buckets_them_by_age() {
    let f = fixture().await;
    let old_open = start(&f.engine, "open-gate").await;
    f.clock.advance(5 * HOUR);
    let soon = start(&f.engine, "gate").await; // deadline T0 + 7 h
    f.clock.advance(HOUR);
    let later = start(&f.engine, "gate").await; // deadline T0 + 8 h
    let decided = start(&f.engine, "open-gate").await;
    vote(&f.engine, &decided, "ann", "accept").await;
    let rejected = start(&f.engine, "open-gate").await;
    vote(&f.engine, &rejected, "bob", "reject").await;
    f.clock.advance(HOUR / 2);

    let o = f.engine.admin_overview(&admin("acme"), 14).await.unwrap();
    let order: Vec<&str> = o.pending.iter().map(|p| p.run_id.as_str()).collect();
    assert_eq!(order, vec![soon.as_str(), later.as_str(), old_open.as_str()]);
    assert_eq!(o.pending_total, 3);
    assert_eq!(o.overdue, 0);
    // Now T0 + 6.5 h: the first deadline is half an hour away.
    assert_eq!(o.pending[0].deadline_state, "soon");
    assert_eq!(o.pending[1].deadline_state, "ok");
    assert_eq!(o.pending[2].deadline_state, "none");
    // Ages 0.5 h, 1.5 h and 6.5 h.
    let counts: Vec<i64> = o.age_buckets.iter().map(|b| b.count).collect();
    assert_eq!(counts, vec![1, 1, 1, 0, 0]);
    // Decisions: the day of T0 + 6 h holds one approval and one rejection.
    assert_eq!(o.decisions.len(), 14);
    let today = o.decisions.last().unwrap();
    assert_eq!((today.approved, today.rejected, today.timed_out), (1, 1, 0));
    let by_status: std::collections::HashMap<_, _> = o
        .runs_by_status
        .iter()
        .map(|s| (s.status.as_str(), s.count))
        .collect();
    assert_eq!(by_status["waiting-approval"], 3);
    assert_eq!(by_status["completed"], 1);
    assert_eq!(by_status["failed"], 1);

    // A passed deadline puts the gate first, marked overdue, until the timer fires.
    f.clock.advance(HOUR);
    let o = f.engine.admin_overview(&admin("acme"), 14).await.unwrap();
    assert_eq!(o.pending[0].run_id, soon);
    assert_eq!(o.pending[0].deadline_state, "overdue");
    assert_eq!(o.overdue, 1);
    // Once it fires it counts as timed out, never as approved.
    f.engine.fire_due().await.unwrap();
    let o = f.engine.admin_overview(&admin("acme"), 14).await.unwrap();
    assert_eq!(o.pending_total, 2);
    assert_eq!(o.decisions.last().unwrap().timed_out, 1);

    // Another tenant sees none of it.
    let other = f.engine.admin_overview(&admin("other"), 14).await.unwrap();
    assert_eq!(other.pending_total, 0);
    assert!(other.runs_by_status.iter().all(|s| s.count == 0));
}

#[tokio::test]
async fn runs_filter_and_timeline_with_audit() {
    let f = fixture().await;
    let a = start(&f.engine, "open-gate").await;
    f.clock.advance(1000);
    let b = start(&f.engine, "gate").await;
    vote(&f.engine, &b, "ann", "accept").await;

    let all = f
        .engine
        .admin_runs(&admin("acme"), &RunFilter::default())
        .await
        .unwrap();
    assert_eq!(all.total, 2);
    assert_eq!(all.items[0].run_id, b, "newest first");
    assert_eq!(all.workflows, vec!["gate", "open-gate"]);
    for far in [2, usize::MAX / 2, usize::MAX] {
        let past = f
            .engine
            .admin_runs(
                &admin("acme"),
                &RunFilter {
                    page: far,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert!(past.items.is_empty(), "page {far}");
        assert_eq!((past.total, past.pages), (2, 1), "page {far}");
    }
    let waiting = f
        .engine
        .admin_runs(
            &admin("acme"),
            &RunFilter {
                status: Some(tollgate::RunStatus::WaitingApproval),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(waiting.items.len(), 1);
    assert_eq!(waiting.items[0].run_id, a);
    assert_eq!(waiting.items[0].current_node_id.as_deref(), Some("review"));
    assert_eq!(waiting.items[0].owner, "owner");

    let t = f.engine.run_timeline(&admin("acme"), &b).await.unwrap();
    let types: Vec<&str> = t.events.iter().map(|e| e.event_type.as_str()).collect();
    assert!(
        types.contains(&"interrupt.requested") && types.contains(&"interrupt.resolved"),
        "{types:?}"
    );
    assert_eq!(t.events[0].sequence, 0);
    assert_eq!(t.audit.len(), 1);
    assert_eq!(t.audit[0].principal, "ann");
    assert_eq!(t.audit[0].action, "accept");
    assert!(
        t.audit[0].eligible_via.contains("finance"),
        "{}",
        t.audit[0].eligible_via
    );
    assert!(t.audit[0].counted);

    // Another tenant's admin cannot read it.
    assert!(matches!(
        f.engine.run_timeline(&admin("other"), &b).await,
        Err(EngineError::NotFound(_))
    ));
}

#[tokio::test]
async fn directory_edits_are_validated_and_scoped_to_the_tenant() {
    let f = fixture().await;
    let saved = f
        .engine
        .save_principal(
            &admin("acme"),
            PrincipalEdit {
                id: "dora".into(),
                name: "Dora".into(),
                email: Some("dora@example.com".into()),
                groups: vec!["ops".into(), " ops ".into(), "".into()],
                roles: vec!["admin".into()],
                is_override: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(saved.groups, vec!["ops"]);
    assert!(tollgate::engine::admin::is_admin(&saved));

    let bad_email = PrincipalEdit {
        id: "zed".into(),
        name: "Zed".into(),
        email: Some("not-an-address".into()),
        ..Default::default()
    };
    match f.engine.save_principal(&admin("acme"), bad_email).await {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("email")),
        other => panic!("{other:?}"),
    }
    assert!(
        f.engine.principal("zed").await.unwrap().is_none(),
        "nothing written"
    );
    // A NUL is refused by name (PostgreSQL's text cannot hold one), in the
    // name and the address alike.
    for (edit, field) in [
        (
            PrincipalEdit {
                id: "zed".into(),
                name: "Z\u{0}ed".into(),
                ..Default::default()
            },
            "name",
        ),
        (
            PrincipalEdit {
                id: "zed".into(),
                name: "Zed".into(),
                email: Some("z\u{0}@example.com".into()),
                ..Default::default()
            },
            "email",
        ),
    ] {
        match f.engine.save_principal(&admin("acme"), edit).await {
            Err(EngineError::Validation { field: got, .. }) => assert_eq!(got.as_deref(), Some(field)),
            other => panic!("{other:?}"),
        }
    }
    // Whatever still reaches PostgreSQL with a NUL is the caller's bad
    // input (400), never a storage failure (500); SQLite finds nobody.
    match f.engine.principal("z\u{0}ed").await {
        Ok(None) | Err(EngineError::Validation { .. }) => {}
        other => panic!("{other:?}"),
    }
    let bad_group = PrincipalEdit {
        id: "zed".into(),
        name: "Zed".into(),
        groups: vec!["has space".into()],
        ..Default::default()
    };
    match f.engine.save_principal(&admin("acme"), bad_group).await {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("groups")),
        other => panic!("{other:?}"),
    }
    // At most MAX_MEMBERSHIPS groups (repeats count once), and as many roles.
    let many: Vec<String> = (0..=tollgate::engine::admin::MAX_MEMBERSHIPS)
        .map(|i| format!("g{i}"))
        .collect();
    for field in ["groups", "roles"] {
        let mut edit = PrincipalEdit {
            id: "zed".into(),
            name: "Zed".into(),
            ..Default::default()
        };
        if field == "groups" {
            edit.groups = many.clone();
        } else {
            edit.roles = many.clone();
        }
        match f.engine.save_principal(&admin("acme"), edit).await {
            Err(EngineError::Validation { field: got, .. }) => assert_eq!(got.as_deref(), Some(field)),
            other => panic!("{other:?}"),
        }
    }
    let mut repeats = many[..tollgate::engine::admin::MAX_MEMBERSHIPS].to_vec();
    repeats.extend(repeats.clone());
    let zed = PrincipalEdit {
        id: "zed".into(),
        name: "Zed".into(),
        groups: repeats,
        ..Default::default()
    };
    let saved = f.engine.save_principal(&admin("acme"), zed).await.unwrap();
    assert_eq!(saved.groups.len(), tollgate::engine::admin::MAX_MEMBERSHIPS);
    // Adding one more, one at a time, is refused the same way.
    match f
        .engine
        .set_membership(&admin("acme"), "zed", MembershipKind::Group, "one-more", true)
        .await
    {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("group")),
        other => panic!("{other:?}"),
    }
    // The operator's paths (CLI `user add`, configured principals) write the
    // directory directly and meet the same bound.
    let mut direct = f.engine.principal("zed").await.unwrap().unwrap();
    direct.roles = many.clone();
    match f.engine.upsert_principal(direct).await {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("roles")),
        other => panic!("{other:?}"),
    }
    assert!(f.engine.principal("zed").await.unwrap().unwrap().roles.is_empty());
    // Someone of another tenant is not editable here.
    let steal = PrincipalEdit {
        id: "eve".into(),
        name: "Eve".into(),
        ..Default::default()
    };
    // A name or address is one line: a line break would end a mail header
    // (lettre cannot write one), on the dashboard and every other way in.
    for name in ["Pat\nX", "Pat\r\nBcc: x@evil.test", "Pat\u{85}X"] {
        let edit = PrincipalEdit {
            id: "pat".into(),
            name: name.into(),
            ..Default::default()
        };
        let err = f.engine.save_principal(&admin("acme"), edit).await.unwrap_err();
        assert!(
            matches!(&err, EngineError::Validation { field: Some(f), .. } if f == "name"),
            "{err:?}"
        );
        let err = f
            .engine
            .upsert_principal(Principal {
                id: "pat".into(),
                tenant: "acme".into(),
                name: name.into(),
                email: None,
                groups: vec![],
                roles: vec![],
                is_override: false,
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&err, EngineError::Validation { field: Some(f), .. } if f == "name"),
            "{err:?}"
        );
    }
    assert!(
        f.engine.principal("pat").await.unwrap().is_none(),
        "nothing saved"
    );
    let err = f.engine.save_principal(&admin("acme"), steal).await.unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err:?}");
    assert!(
        !err.to_string().contains("tenant"),
        "whose id it is stays unsaid: {err}"
    );

    // Memberships: the group list of the directory follows.
    f.engine
        .set_membership(&admin("acme"), "dora", MembershipKind::Group, "finance", true)
        .await
        .unwrap();
    f.engine
        .set_membership(&admin("acme"), "ann", MembershipKind::Group, "finance", false)
        .await
        .unwrap();
    let dir = f.engine.directory(&admin("acme")).await.unwrap();
    let finance = dir.groups.iter().find(|g| g.name == "finance").unwrap();
    assert_eq!(finance.members, vec!["bob", "dora"]);
    assert!(dir.people.iter().all(|p| p.principal.tenant == "acme"));
    assert!(matches!(
        f.engine
            .set_membership(&admin("acme"), "eve", MembershipKind::Role, "admin", true)
            .await,
        Err(EngineError::NotFound(_))
    ));

    // Passwords: too short or longer than a sign-in form can carry is
    // refused; set, then removed.
    for refused in ["short".to_string(), "x".repeat(tollgate::passwords::MAX_LEN + 1)] {
        match f
            .engine
            .admin_set_password(&admin("acme"), "dora", Some(&refused))
            .await
        {
            Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("password")),
            other => panic!("{other:?}"),
        }
    }
    f.engine
        .admin_set_password(&admin("acme"), "dora", Some("long enough pass"))
        .await
        .unwrap();
    assert!(f
        .engine
        .verify_password("dora", "long enough pass")
        .await
        .unwrap()
        .is_some());
    f.engine
        .admin_set_password(&admin("acme"), "dora", None)
        .await
        .unwrap();
    assert!(f
        .engine
        .verify_password("dora", "long enough pass")
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn api_keys_are_shown_once_and_revocation_takes_effect() {
    let f = fixture().await;
    let new = f
        .engine
        .create_api_key(&admin("acme"), "ann", &["runs:read".into()], Some("ci".into()))
        .await
        .unwrap();
    assert!(f.engine.authenticate(&new.key).await.unwrap().is_some());
    let listed = f.engine.api_keys(&admin("acme")).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, new.id);
    assert!(
        !serde_json::to_string(&listed).unwrap().contains(&new.key),
        "the key is never listed"
    );
    assert!(f.engine.api_keys(&admin("other")).await.unwrap().is_empty());

    // Bad input names its field.
    for (scopes, field) in [(vec![], "scopes"), (vec!["runs:fly".to_string()], "scopes")] {
        match f
            .engine
            .create_api_key(&admin("acme"), "ann", &scopes, None)
            .await
        {
            Err(EngineError::Validation { field: got, .. }) => assert_eq!(got.as_deref(), Some(field)),
            other => panic!("{other:?}"),
        }
    }
    let long_label = "l".repeat(tollgate::engine::admin::MAX_LABEL_CHARS + 1);
    match f
        .engine
        .create_api_key(&admin("acme"), "ann", &["runs:read".into()], Some(long_label))
        .await
    {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("label")),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        f.engine
            .create_api_key(&admin("acme"), "eve", &["runs:read".into()], None)
            .await,
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        f.engine.revoke_api_key(&admin("acme"), "abc").await,
        Err(EngineError::Validation { .. })
    ));
    assert!(matches!(
        f.engine.revoke_api_key(&admin("other"), &new.id).await,
        Err(EngineError::NotFound(_))
    ));

    let revoked = f.engine.revoke_api_key(&admin("acme"), &new.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(
        f.engine.authenticate(&new.key).await.unwrap().is_none(),
        "refused at once"
    );
    // Storing the same key again (a config re-sync) does not revive it.
    f.engine
        .put_api_key(&new.key, "ann", &[tollgate::auth::Scope::RunsRead], None)
        .await
        .unwrap();
    assert!(f.engine.authenticate(&new.key).await.unwrap().is_none());
}

#[tokio::test]
async fn a_key_revoked_elsewhere_is_refused_after_the_recheck_interval() {
    let dir = tempfile::tempdir().unwrap();
    let url = tollgate::store::testing::database_url(&dir.path().join("k.db"))
        .await
        .unwrap();
    let clock = ManualClock::new(T0);
    let open = |clock: ManualClock| {
        let mut o = EngineOptions::new(url.clone());
        o.clock = Arc::new(clock);
        Engine::open(o)
    };
    let server = open(clock.clone()).await.unwrap();
    server
        .upsert_principal(Principal {
            id: "ann".into(),
            tenant: "acme".into(),
            name: "Ann".into(),
            email: None,
            groups: vec![],
            roles: vec![],
            is_override: false,
        })
        .await
        .unwrap();
    // A key made by another process (the CLI) works on the server at once.
    let cli = open(clock.clone()).await.unwrap();
    let new = cli
        .create_api_key(&admin("acme"), "ann", &["runs:read".into()], None)
        .await
        .unwrap();
    assert!(server.authenticate(&new.key).await.unwrap().is_some());
    cli.operator_revoke_api_key(&new.id).await.unwrap();
    if tollgate::store::testing::postgres_server().is_some() {
        // On PostgreSQL the revoking instance tells the others at once.
        let mut refused = false;
        for _ in 0..100 {
            if server.authenticate(&new.key).await.unwrap().is_none() {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            refused,
            "a key revoked through another instance is refused within a second"
        );
        return;
    }
    // Cached for a moment, then refused.
    assert!(server.authenticate(&new.key).await.unwrap().is_some());
    clock.advance(tollgate::engine::API_KEY_RECHECK_MS);
    assert!(server.authenticate(&new.key).await.unwrap().is_none());
}

fn filter(tenant: &str, kind: Option<&str>, status: Option<&str>) -> tollgate::engine::outbox::OutboxFilter {
    tollgate::engine::outbox::OutboxFilter {
        tenant: Some(tenant.into()),
        kind: kind.map(String::from),
        status: status.map(String::from),
        limit: Some(50),
    }
}

#[tokio::test]
async fn outbox_is_listed_and_retried_per_tenant() {
    let f = fixture().await;
    let run = start(&f.engine, "open-gate").await;
    let rows = f.engine.outbox_list(&filter("acme", None, None)).await.unwrap();
    // ann and bob (group finance, with email) are mailed.
    let mut to: Vec<&str> = rows.iter().map(|r| r.recipient.as_str()).collect();
    to.sort();
    assert_eq!(to, vec!["ann", "bob"]);
    assert!(rows.iter().all(|r| r.run_id == run && r.kind == "email"));
    assert!(f
        .engine
        .outbox_list(&filter("other", None, None))
        .await
        .unwrap()
        .is_empty());
    assert!(f
        .engine
        .outbox_list(&filter("acme", Some("callback"), None))
        .await
        .unwrap()
        .is_empty());

    let id = rows[0].id;
    // Only failed or dropped messages are retried.
    assert!(matches!(
        f.engine.outbox_retry_for_tenant(&admin("acme"), id).await,
        Err(EngineError::NotFound(_))
    ));
    f.engine.outbox_drop(id, "test".into()).await.unwrap();
    assert_eq!(
        f.engine
            .outbox_list(&filter("acme", None, Some("dropped")))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(matches!(
        f.engine.outbox_retry_for_tenant(&admin("other"), id).await,
        Err(EngineError::NotFound(_))
    ));
    // The retry answers with the message as it queued it.
    let queued = f
        .engine
        .outbox_retry_for_tenant(&admin("acme"), id)
        .await
        .unwrap();
    assert_eq!(
        (queued.id, queued.status.as_str(), queued.attempts),
        (id, "pending", 0)
    );
    let again = f
        .engine
        .outbox_list(&filter("acme", None, Some("pending")))
        .await
        .unwrap();
    assert!(again.iter().any(|r| r.id == id));
}
