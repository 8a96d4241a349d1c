//! Delegation and reassignment (issue #16 point 5): a delegate votes in the
//! delegator's seat; eligibility, quorum by distinct seats, self-approval and
//! tenants hold. On SQLite, or on PostgreSQL when `TOLLGATE_TEST_POSTGRES` is
//! set (as `tests/engine.rs`).

mod common;

use common::{TestEngine, T0};
use serde_json::{json, Value};
use tollgate::engine::delegations::NewDelegation;
use tollgate::engine::inbox::InboxFilter;
use tollgate::wire::delegation::DelegationState;
use tollgate::{Actor, CreateRun, Engine, EngineError, Principal, RunId};

const DAY: i64 = 24 * 3_600_000;

async fn fixture() -> TestEngine {
    let t = common::engine().await;
    let engine = &t.engine;
    // Two tenants whose names differ in one letter.
    common::add(
        engine,
        [
            common::person("owner", "acme", &[], &[], true),
            common::person("ann", "acme", &["finance"], &[], true),
            common::person("bob", "acme", &["finance"], &[], true),
            common::person("dan", "acme", &[], &[], true),
            common::person("cat", "acme", &[], &[], true),
            common::person("root", "acme", &[], &["admin"], true),
            common::person("eve", "acmf", &["finance"], &["admin"], true),
        ],
    )
    .await;
    let gate = |id: &str, config: Value| json!({"id": id, "nodes": [{"id": "gate", "typeId": "core.approvalGate", "config": config}]});
    for def in [
        gate(
            "pair",
            json!({"title": "Two of finance", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
        ),
        gate(
            "one",
            json!({"title": "One of finance", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "preventSelfApproval": false}),
        ),
        gate("ask", json!({"title": "Anyone", "actions": ["accept", "reject"]})),
    ] {
        engine.register_workflow(def).await.unwrap();
    }
    t
}

async fn person(e: &Engine, id: &str) -> Principal {
    e.principal(id).await.unwrap().unwrap()
}

async fn session(e: &Engine, id: &str) -> Actor {
    Actor::session(person(e, id).await)
}

async fn start_as(e: &Engine, who: &str, workflow: &str) -> RunId {
    let req: CreateRun = serde_json::from_value(json!({"workflowId": workflow, "inputs": {}})).unwrap();
    let actor = Actor::api_key(person(e, who).await, tollgate::auth::ALL_SCOPES[..4].to_vec());
    e.create_run(req, &actor, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

async fn vote(e: &Engine, who: &str, run: &RunId, action: &str) -> Result<String, EngineError> {
    e.resolve(
        run,
        "gate",
        json!({"action": action}),
        &session(e, who).await,
        None,
    )
    .await
    .and_then(|o| o.result)
    .map(|r| r.status.to_string())
}

fn until(days: i64) -> NewDelegation {
    NewDelegation {
        ends_at: Some(tollgate::clock::rfc3339(T0 + days * DAY)),
        ..Default::default()
    }
}

async fn delegate(e: &Engine, from: &str, to: &str, days: i64) -> tollgate::wire::delegation::Delegation {
    let new = NewDelegation {
        delegate: to.into(),
        ..until(days)
    };
    e.delegate(&session(e, from).await, new).await.unwrap()
}

/// Counted votes of the gate: (seat, cast_by).
async fn seats(e: &Engine, run: &RunId) -> Vec<(String, Option<String>)> {
    let view = e
        .inspect_interrupt(run, "gate", &session(e, "root").await)
        .await
        .unwrap();
    view.votes
        .into_iter()
        .filter(|v| v.counted)
        .map(|v| (v.principal, v.cast_by))
        .collect()
}

fn field_of(e: EngineError) -> Option<String> {
    match e {
        EngineError::Validation { field, .. } => field,
        other => panic!("not a validation error: {other:?}"),
    }
}

#[tokio::test]
async fn a_delegate_votes_in_the_delegators_seat_and_quorum_counts_seats() {
    let f = fixture().await;
    let e = &f.engine;
    let run = start_as(e, "owner", "pair").await;
    // Dan is not in finance: refused until Ann hands him her decisions.
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    let d = delegate(e, "ann", "dan", 7).await;
    assert_eq!(d.state, DelegationState::Active);
    assert_eq!(vote(e, "dan", &run, "accept").await.unwrap(), "waiting-approval");
    assert_eq!(seats(e, &run).await, [("ann".into(), Some("dan".into()))]);
    // Dan again: his vote replaces his own, still one seat of two.
    assert_eq!(vote(e, "dan", &run, "accept").await.unwrap(), "waiting-approval");
    // Ann herself: the same seat, so hers replaces Dan's.
    assert_eq!(vote(e, "ann", &run, "accept").await.unwrap(), "waiting-approval");
    assert_eq!(seats(e, &run).await, [("ann".into(), None)]);
    // Dan once more: Ann has decided herself, and a delegate does not overrule her (409).
    let overrule = vote(e, "dan", &run, "reject").await.unwrap_err();
    assert!(matches!(overrule, EngineError::Conflict(_)), "{overrule}");
    assert_eq!(seats(e, &run).await, [("ann".into(), None)]);
    // Bob is the second seat: granted.
    assert_eq!(vote(e, "bob", &run, "accept").await.unwrap(), "completed");

    // The audit says whose seat Dan took, and that Ann's own vote replaced his.
    let timeline = e.run_timeline(&session(e, "root").await, &run).await.unwrap();
    let ann_seat: Vec<_> = timeline
        .audit
        .iter()
        .filter(|a| a.principal == "ann")
        .map(|a| (a.cast_by.as_deref(), a.counted))
        .collect();
    assert_eq!(
        ann_seat,
        [(Some("dan"), false), (Some("dan"), false), (None, true)]
    );
    // The deciding vote was Bob's own: no on-behalf-of on the event.
    let resolved = timeline
        .events
        .iter()
        .find(|ev| ev.event_type == tollgate::EventType::InterruptResolved)
        .unwrap();
    assert!(resolved.payload.get("x-tollgate-onBehalfOf").is_none());

    // A deciding vote by a delegate is marked on the event; the delegate is
    // mailed about new requests with the delegator, but not about their own.
    let run = start_as(e, "owner", "pair").await;
    assert_eq!(common::mailed(e, &run).await, ["ann", "bob", "dan"]);
    assert_eq!(
        common::mailed(e, &start_as(e, "dan", "pair").await).await,
        ["ann", "bob"]
    );
    vote(e, "bob", &run, "accept").await.unwrap();
    assert_eq!(vote(e, "dan", &run, "accept").await.unwrap(), "completed");
    let timeline = e.run_timeline(&session(e, "root").await, &run).await.unwrap();
    let resolved = timeline
        .events
        .iter()
        .find(|ev| ev.event_type == tollgate::EventType::InterruptResolved)
        .unwrap();
    assert_eq!(resolved.payload["x-tollgate-onBehalfOf"], "ann");
    assert_eq!(resolved.payload["resolvedBy"]["subjectId"], "dan");
}

#[tokio::test]
async fn one_person_never_fills_two_seats_nor_decides_their_own_or_the_delegators_request() {
    let f = fixture().await;
    let e = &f.engine;
    delegate(e, "ann", "dan", 7).await;
    delegate(e, "bob", "dan", 7).await;
    let run = start_as(e, "owner", "pair").await;
    // Dan holds Ann's and Bob's decisions, yet casts one vote: never a quorum alone.
    vote(e, "dan", &run, "accept").await.unwrap();
    assert_eq!(vote(e, "dan", &run, "accept").await.unwrap(), "waiting-approval");
    assert_eq!(seats(e, &run).await.len(), 1);

    // Dan's own request: no seat, his own or a delegated one.
    let his = start_as(e, "dan", "pair").await;
    assert!(matches!(
        vote(e, "dan", &his, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    // Ann's request: Ann may not approve it, so neither may her delegate in her seat;
    // Bob's seat is still open to Dan.
    let hers = start_as(e, "ann", "pair").await;
    assert_eq!(vote(e, "dan", &hers, "accept").await.unwrap(), "waiting-approval");
    assert_eq!(seats(e, &hers).await, [("bob".into(), Some("dan".into()))]);
    // And with only Ann's delegation, nothing.
    let f2 = fixture().await;
    let e2 = &f2.engine;
    delegate(e2, "ann", "dan", 7).await;
    let hers = start_as(e2, "ann", "pair").await;
    assert!(matches!(
        vote(e2, "dan", &hers, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(seats(e2, &hers).await.is_empty());
}

#[tokio::test]
async fn a_delegation_counts_only_inside_its_window_and_until_revoked() {
    let f = fixture().await;
    let e = &f.engine;
    let new = NewDelegation {
        delegate: "dan".into(),
        starts_at: Some(tollgate::clock::rfc3339(T0 + DAY)),
        ends_at: Some(tollgate::clock::rfc3339(T0 + 3 * DAY)),
        reason: Some("  holiday  ".into()),
        ..Default::default()
    };
    let d = e.delegate(&session(e, "ann").await, new).await.unwrap();
    assert_eq!(
        (d.state, d.reason.as_deref()),
        (DelegationState::Upcoming, Some("holiday"))
    );
    let run = start_as(e, "owner", "one").await;
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    f.clock.advance(DAY);
    let later = start_as(e, "owner", "one").await;
    assert_eq!(vote(e, "dan", &later, "accept").await.unwrap(), "completed");
    f.clock.advance(2 * DAY);
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));

    // Revoked: at once, by the delegate too; a second revoke is a conflict.
    let d = delegate(e, "ann", "dan", 5).await;
    let revoked = e
        .revoke_delegation(&session(e, "dan").await, &d.delegation_id)
        .await
        .unwrap();
    assert_eq!(
        (revoked.state, revoked.revoked_by.as_deref()),
        (DelegationState::Revoked, Some("dan"))
    );
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        e.revoke_delegation(&session(e, "ann").await, &d.delegation_id)
            .await,
        Err(EngineError::Conflict(_))
    ));
}

#[tokio::test]
async fn bad_delegations_are_refused_naming_the_field() {
    let f = fixture().await;
    let e = &f.engine;
    let ann = session(e, "ann").await;
    let ask = |delegate: &str, n: NewDelegation| NewDelegation {
        delegate: delegate.into(),
        ..n
    };
    assert_eq!(
        field_of(e.delegate(&ann, ask("ann", until(1))).await.unwrap_err()).as_deref(),
        Some("delegate")
    );
    assert_eq!(
        field_of(e.delegate(&ann, ask("nobody", until(1))).await.unwrap_err()).as_deref(),
        Some("delegate")
    );
    // Another tenant's person is as unknown as nobody.
    let eve = e.delegate(&ann, ask("eve", until(1))).await.unwrap_err();
    assert!(
        eve.to_string().contains("no person \"eve\" in this tenant"),
        "{eve}"
    );
    assert_eq!(
        field_of(
            e.delegate(&ann, ask("dan", NewDelegation::default()))
                .await
                .unwrap_err()
        )
        .as_deref(),
        Some("endsAt")
    );
    let bad_date = NewDelegation {
        ends_at: Some("next tuesday".into()),
        ..Default::default()
    };
    assert_eq!(
        field_of(e.delegate(&ann, ask("dan", bad_date)).await.unwrap_err()).as_deref(),
        Some("endsAt")
    );
    assert_eq!(
        field_of(e.delegate(&ann, ask("dan", until(400))).await.unwrap_err()).as_deref(),
        Some("endsAt")
    );
    // Only an admin hands on someone else's decisions.
    let for_bob = NewDelegation {
        delegator: Some("bob".into()),
        ..ask("dan", until(1))
    };
    assert!(matches!(
        e.delegate(&ann, for_bob.clone()).await,
        Err(EngineError::Forbidden(_))
    ));
    let d = e.delegate(&session(e, "root").await, for_bob).await.unwrap();
    assert_eq!((d.delegator.as_str(), d.created_by.as_str()), ("bob", "root"));
}

#[tokio::test]
async fn another_tenant_sees_and_changes_no_delegation() {
    let f = fixture().await;
    let e = &f.engine;
    let d = delegate(e, "ann", "dan", 7).await;
    let eve = session(e, "eve").await;
    assert!(matches!(
        e.delegation(&eve, &d.delegation_id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        e.revoke_delegation(&eve, &d.delegation_id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(e.delegations(&eve, true).await.unwrap().is_empty());
    // Nor does a person of the tenant who is not part of it (only an admin).
    let cat = session(e, "cat").await;
    assert!(matches!(
        e.revoke_delegation(&cat, &d.delegation_id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(e.delegations(&cat, false).await.unwrap().is_empty());
    assert!(matches!(
        e.delegations(&cat, true).await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(
        e.delegations(&session(e, "root").await, true)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        e.delegations(&session(e, "dan").await, false)
            .await
            .unwrap()
            .len(),
        1
    );
    // Eve's own tenant cannot name acme's people as delegators either.
    let reach = NewDelegation {
        delegator: Some("ann".into()),
        delegate: "eve".into(),
        ..until(1)
    };
    assert_eq!(
        field_of(e.delegate(&eve, reach).await.unwrap_err()).as_deref(),
        Some("delegator")
    );
}

#[tokio::test]
async fn a_delegates_inbox_lists_the_delegators_decisions_but_not_their_own_requests() {
    let f = fixture().await;
    let e = &f.engine;
    let theirs = start_as(e, "owner", "one").await;
    start_as(e, "dan", "one").await;
    let dan = person(e, "dan").await;
    let for_ann = InboxFilter {
        on_behalf_of: Some("ann".into()),
        ..Default::default()
    };
    // Without a delegation: not Dan's concern, refused, and his own inbox has no approvals of finance.
    assert!(!e.inbox_concerns(&dan, &theirs).await.unwrap());
    assert!(matches!(
        e.pending_for(&dan, &for_ann).await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(
        e.pending_for(&dan, &InboxFilter::default()).await.unwrap().total,
        0
    );
    delegate(e, "ann", "dan", 7).await;
    // Now a change to Ann's request concerns Dan's live inbox.
    assert!(e.inbox_concerns(&dan, &theirs).await.unwrap());
    let own = e.pending_for(&dan, &InboxFilter::default()).await.unwrap();
    assert_eq!((own.total, own.delegated.len()), (0, 1));
    let page = e.pending_for(&dan, &for_ann).await.unwrap();
    assert_eq!(page.total, 1, "Ann's decisions without Dan's own request");
    assert_eq!(page.items[0].run_id, theirs.to_string());
    assert_eq!(page.on_behalf_of.as_ref().map(|v| v.id.as_str()), Some("ann"));
    // Bulk decisions from that view go through the same seat rule.
    let pick = tollgate::wire::inbox::pick_value(&tollgate::ids::encode_path_id(&theirs), "gate");
    let done = e
        .decide_many(&session(e, "dan").await, "accept", &[pick])
        .await
        .unwrap();
    assert!(done[0].decided, "{done:?}");
    assert_eq!(seats(e, &theirs).await, [("ann".into(), Some("dan".into()))]);
    // Bob has delegated nothing to Dan.
    let for_bob = InboxFilter {
        on_behalf_of: Some("bob".into()),
        ..Default::default()
    };
    assert!(matches!(
        e.pending_for(&dan, &for_bob).await,
        Err(EngineError::Forbidden(_))
    ));
}

#[tokio::test]
async fn an_admin_reassigns_one_pending_seat_and_nothing_more() {
    let f = fixture().await;
    let e = &f.engine;
    let root = session(e, "root").await;
    let run = start_as(e, "owner", "pair").await;
    let other = start_as(e, "owner", "pair").await;
    // Only an admin; only a seat the gate admits; never to the requester.
    assert!(matches!(
        e.reassign(&session(e, "ann").await, &run, "gate", "ann", "cat", None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(
        field_of(
            e.reassign(&root, &run, "gate", "dan", "cat", None)
                .await
                .unwrap_err()
        )
        .as_deref(),
        Some("from")
    );
    assert_eq!(
        field_of(
            e.reassign(&root, &run, "gate", "ann", "owner", None)
                .await
                .unwrap_err()
        )
        .as_deref(),
        Some("to")
    );
    let d = e
        .reassign(&root, &run, "gate", "ann", "cat", Some("Ann is away".into()))
        .await
        .unwrap();
    assert_eq!(
        d.interrupt.as_ref().map(|i| i.run_id.clone()),
        Some(run.to_string())
    );
    // Cat is mailed, takes Ann's seat on this interrupt, and on no other.
    let mail = e.outbox_recent(20).await.unwrap();
    assert!(mail
        .iter()
        .any(|m| m.recipient == "cat" && m.run_id == run.as_str()));
    assert!(matches!(
        vote(e, "cat", &other, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    assert_eq!(vote(e, "cat", &run, "accept").await.unwrap(), "waiting-approval");
    assert_eq!(seats(e, &run).await, [("ann".into(), Some("cat".into()))]);
    assert_eq!(vote(e, "bob", &run, "accept").await.unwrap(), "completed");
    // Closed: nothing to reassign, and the reassignment has ended.
    assert!(matches!(
        e.reassign(&root, &run, "gate", "bob", "cat", None).await,
        Err(EngineError::AlreadyResolved(_))
    ));
    assert_eq!(
        e.delegation(&root, &d.delegation_id).await.unwrap().state,
        DelegationState::Ended
    );
    // Another tenant's admin cannot reach the run.
    let eve = session(e, "eve").await;
    assert!(e
        .reassign(&eve, &other, "gate", "ann", "cat", None)
        .await
        .is_err());
    assert!(seats(e, &other).await.is_empty());

    // A reassignment of this interrupt comes before an earlier delegation of the whole inbox.
    delegate(e, "ann", "dan", 7).await;
    let third = start_as(e, "owner", "pair").await;
    e.reassign(&root, &third, "gate", "bob", "dan", None)
        .await
        .unwrap();
    vote(e, "dan", &third, "accept").await.unwrap();
    assert_eq!(seats(e, &third).await, [("bob".into(), Some("dan".into()))]);
    // Dan's inbox names both: Ann's inbox, and the request reassigned to him while it is pending.
    let fourth = start_as(e, "owner", "pair").await;
    e.reassign(&root, &fourth, "gate", "bob", "dan", None)
        .await
        .unwrap();
    let page = e
        .pending_for(&person(e, "dan").await, &InboxFilter::default())
        .await
        .unwrap();
    let reassigned: Vec<_> = page
        .delegated
        .iter()
        .filter_map(|d| d.interrupt.clone())
        .collect();
    // The third run (still pending: one seat of two) and the fourth.
    assert_eq!(reassigned.len(), 2, "{:?}", page.delegated);
    assert!(reassigned.iter().any(|i| i.run_id == fourth.as_str()));
    assert_eq!(page.delegated.len(), 3);
}

fn new_hire(id: &str, name: &str, groups: &[&str]) -> tollgate::engine::admin::PrincipalEdit {
    tollgate::engine::admin::PrincipalEdit {
        id: id.into(),
        name: name.into(),
        email: Some(format!("{id}@new.example")),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: vec![],
        is_override: false,
    }
}

/// A person removed from the directory takes their delegations and keys
/// along: whoever is later given the same id — in this tenant or another —
/// inherits no seat, no key, and the tenant's listing never shows the other
/// tenant's name.
#[tokio::test]
async fn nothing_of_a_removed_person_passes_to_whoever_gets_their_id() {
    let f = fixture().await;
    let e = &f.engine;
    let root = session(e, "root").await;
    // Ann hands her decisions to Dan; Dan leaves and a new "dan" is hired.
    let given = delegate(e, "ann", "dan", 300).await;
    e.remove_principal("dan").await.unwrap();
    let listed = e.delegation(&root, &given.delegation_id).await.unwrap();
    assert_eq!(listed.state, DelegationState::Revoked, "{listed:?}");
    e.save_principal(&root, new_hire("dan", "Dan the new hire", &[]))
        .await
        .unwrap();
    let run = start_as(e, "owner", "one").await;
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    // The other way round: Ann leaves; her id's new holder lends Dan nothing.
    delegate(e, "ann", "cat", 300).await;
    e.remove_principal("ann").await.unwrap();
    e.save_principal(&root, new_hire("ann", "Ann the second", &["finance"]))
        .await
        .unwrap();
    assert!(matches!(
        vote(e, "cat", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(seats(e, &run).await.is_empty());

    // Cat's key and Cat's delegation, then Cat's id taken by the other tenant.
    e.create_api_key(
        &root,
        "cat",
        &["runs:read".to_string()],
        Some("acme payroll bot".into()),
    )
    .await
    .unwrap();
    let to_bob = delegate(e, "cat", "bob", 30).await;
    e.remove_principal("cat").await.unwrap();
    let eve = session(e, "eve").await;
    e.save_principal(&eve, new_hire("cat", "ACMF-SECRET Cat", &[]))
        .await
        .unwrap();
    let keys = e.api_keys(&eve).await.unwrap();
    assert!(
        keys.iter()
            .all(|k| k.label.as_deref() != Some("acme payroll bot")),
        "{keys:?}"
    );
    let listed = e.delegation(&root, &to_bob.delegation_id).await.unwrap();
    assert!(!format!("{listed:?}").contains("ACMF"), "{listed:?}");
}

/// A delegator lends their seat only while they could decide themselves:
/// once they are no longer a person (no password, no address), their
/// delegate cannot decide for them either.
#[tokio::test]
async fn a_delegator_who_can_no_longer_decide_lends_no_seat() {
    let f = fixture().await;
    let e = &f.engine;
    delegate(e, "ann", "dan", 7).await;
    let run = start_as(e, "owner", "one").await;
    common::add(e, [common::person("ann", "acme", &["finance"], &[], false)]).await;
    assert!(!e.holds_respond("ann").await.unwrap());
    assert!(matches!(
        vote(e, "dan", &run, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(seats(e, &run).await.is_empty());
    // An address again: the delegation (still live) counts again.
    common::add(e, [common::person("ann", "acme", &["finance"], &[], true)]).await;
    assert_eq!(vote(e, "dan", &run, "accept").await.unwrap(), "completed");
}

/// A delegate never decides the delegator's own request, even on a gate
/// that lets its requester approve: nobody votes for a delegator there.
#[tokio::test]
async fn a_delegate_does_not_decide_the_delegators_own_request() {
    let f = fixture().await;
    let e = &f.engine;
    delegate(e, "ann", "dan", 7).await;
    let hers = start_as(e, "ann", "one").await;
    assert!(matches!(
        vote(e, "dan", &hers, "accept").await,
        Err(EngineError::Forbidden(_))
    ));
    // Ann may, on this gate.
    assert_eq!(vote(e, "ann", &hers, "accept").await.unwrap(), "completed");
}

/// An unknown person is named back only when the text could be an id.
#[tokio::test]
async fn an_unknown_delegate_is_named_back_only_when_it_could_be_an_id() {
    let f = fixture().await;
    let e = &f.engine;
    let ann = session(e, "ann").await;
    for (delegate, said) in [
        ("zed", "delegate: no person \"zed\" in this tenant"),
        ("za\u{0}ed", "delegate: no person in this tenant"),
    ] {
        let new = NewDelegation {
            delegate: delegate.into(),
            ..until(3)
        };
        let refused = e.delegate(&ann, new).await.unwrap_err();
        assert_eq!(refused.to_string(), said);
    }
    let new = NewDelegation {
        delegate: "z".repeat(100_000),
        ..until(3)
    };
    let refused = e.delegate(&ann, new).await.unwrap_err();
    assert_eq!(refused.to_string(), "delegate: no person in this tenant");
}

/// A vote is judged by the directory as the resolve's command finds it, not
/// as it was when the request arrived: a change another process (or
/// instance) committed while the vote waited is seen — here a removal from
/// the approving group and a removal from the directory, made through a
/// second engine while this one's cached entry is still fresh.
#[tokio::test]
async fn a_vote_is_judged_by_the_directory_at_its_command() {
    let f = fixture().await;
    let e = &f.engine;
    let run = start_as(e, "owner", "one").await;
    // Warm this engine's cache of Ann and Bob (both in finance).
    let ann = session(e, "ann").await;
    let bob = session(e, "bob").await;
    let other = f.open_again().await;
    common::add(&other, [common::person("ann", "acme", &[], &[], true)]).await;
    other.remove_principal("bob").await.unwrap();
    assert!(matches!(
        e.resolve(&run, "gate", json!({"action": "accept"}), &ann, None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        e.resolve(&run, "gate", json!({"action": "accept"}), &bob, None)
            .await,
        Err(EngineError::Forbidden(_))
    ));
    assert!(seats(e, &run).await.is_empty());
}
