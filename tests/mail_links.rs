//! Engine tests of mailed links: they live a day (capped at the deadline),
//! and an expired one can ask for a fresh link, which goes to its own
//! recipient only, at most once every few minutes. Against a real database
//! (SQLite, or PostgreSQL with `TOLLGATE_TEST_POSTGRES`).

use serde_json::json;
use std::sync::Arc;
use tollgate::auth::Scope;
use tollgate::engine::fresh_link::FRESH_LINK_EVERY_MS;
use tollgate::token::{Claims, Intent, KeyRing, SigningKey, DEFAULT_MAIL_LINK_TTL_MS};
use tollgate::{Actor, CreateRun, Engine, EngineError, EngineOptions, ManualClock, Principal, RunId};

const T0: i64 = 1_800_000_000_000;
const HOUR: i64 = 3_600_000;

struct World {
    engine: Engine,
    clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

fn person(id: &str, email: Option<&str>) -> Principal {
    Principal {
        id: id.into(),
        tenant: "acme".into(),
        name: id.into(),
        email: email.map(String::from),
        groups: vec!["finance".into()],
        roles: vec![],
        is_override: false,
    }
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let url = tollgate::store::testing::database_url(&dir.path().join("m.db"))
        .await
        .unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let mut opts = EngineOptions::new(url);
    opts.clock = clock.clone();
    let engine = Engine::open(opts).await.unwrap();
    engine.set_token_keys(
        vec![SigningKey {
            kid: "k1".into(),
            secret: "a-test-secret-of-at-least-32-characters".into(),
            retired_at: None,
        }],
        None,
    );
    engine
        .register_workflow(json!({
            "id": "signed-in", "name": "signed-in", "version": "1.0.0",
            "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate",
                "config": {"title": "Claim", "actions": ["accept", "reject"],
                           "approverGroupRefs": ["finance"],
                           "profile": "openwop-interrupt-auth-required"}}],
            "edges": []
        }))
        .await
        .unwrap();
    for (id, timeout) in [("week", 7 * 24 * HOUR), ("soon", 2 * HOUR)] {
        engine
            .register_workflow(json!({
                "id": id, "name": id, "version": "1.0.0",
                "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate",
                    "config": {"title": "Claim", "actions": ["accept", "reject"],
                               "approverGroupRefs": ["finance"], "timeoutMs": timeout}}],
                "edges": []
            }))
            .await
            .unwrap();
    }
    for p in [
        person("svc", None),
        person("ann", Some("ann@x")),
        person("bob", Some("bob@x")),
    ] {
        engine.upsert_principal(p).await.unwrap();
    }
    World {
        engine,
        clock,
        _dir: dir,
    }
}

impl World {
    async fn start(&self, workflow: &str) -> (RunId, String) {
        let svc = self.engine.principal("svc").await.unwrap().unwrap();
        let actor = Actor::api_key(svc, vec![Scope::RunsCreate, Scope::RunsRead]);
        let req: CreateRun = serde_json::from_value(json!({"workflowId": workflow})).unwrap();
        let run = self
            .engine
            .create_run(req, &actor, None)
            .await
            .unwrap()
            .result
            .unwrap()
            .run_id;
        let view = self.engine.inspect_interrupt(&run, "gate", &actor).await.unwrap();
        (run, view.interrupt_id)
    }

    async fn link_for(&self, interrupt_id: &str, who: &str) -> (String, i64) {
        let p = self.engine.principal(who).await.unwrap().unwrap();
        let link = self.engine.mail_link_for(interrupt_id, &p).await.unwrap();
        (link.token, link.expires_at)
    }

    /// (reason, recipient, address) of the mail queued about `run`, oldest first.
    async fn mail(&self, run: &RunId) -> Vec<(String, String, String)> {
        let mut rows: Vec<_> = self
            .engine
            .outbox_recent(100)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.run_id == run.as_str())
            .map(|m| (m.id, m.reason, m.recipient, m.address))
            .collect();
        rows.sort();
        rows.into_iter().map(|(_, r, p, a)| (r, p, a)).collect()
    }
}

#[tokio::test]
async fn a_mailed_link_lives_a_day_capped_at_the_deadline() {
    let w = world().await;
    let (_, week) = w.start("week").await;
    let (token, expires) = w.link_for(&week, "ann").await;
    assert_eq!(expires, T0 + DEFAULT_MAIL_LINK_TTL_MS);
    // After lunch, and the next morning, it still opens.
    w.clock.advance(23 * HOUR);
    w.engine.inspect_by_token(&token).await.unwrap();
    w.clock.advance(HOUR);
    assert!(matches!(
        w.engine.inspect_by_token(&token).await.unwrap_err(),
        EngineError::Expired(_)
    ));
    let (_, soon) = w.start("soon").await;
    let (_, expires) = w.link_for(&soon, "ann").await;
    assert_eq!(expires, T0 + 24 * HOUR + 2 * HOUR, "never after the deadline");

    // Configurable; an API link keeps its own (shorter) lifetime.
    w.engine.set_mail_link_ttl(4 * HOUR);
    let (_, expires) = w.link_for(&week, "bob").await;
    assert_eq!(expires, w.clock_now() + 4 * HOUR);
}

impl World {
    fn clock_now(&self) -> i64 {
        use tollgate::Clock;
        self.clock.now_ms()
    }
}

#[tokio::test]
async fn an_expired_link_asks_for_a_fresh_one_for_its_own_recipient_only() {
    let w = world().await;
    let (run, interrupt) = w.start("week").await;
    let (token, _) = w.link_for(&interrupt, "ann").await;
    w.clock.advance(DEFAULT_MAIL_LINK_TTL_MS + 1);
    let before = w.mail(&run).await.len();

    w.engine.send_fresh_link(&token).await.unwrap();
    let mail = w.mail(&run).await;
    assert_eq!(mail.len(), before + 1);
    assert_eq!(
        mail.last().unwrap(),
        &(
            tollgate_wire::MailReason::FreshLink.as_str().to_string(),
            "ann".to_string(),
            "ann@x".to_string()
        )
    );
    // Asking again at once is throttled, and queues nothing.
    let err = w.engine.send_fresh_link(&token).await.unwrap_err();
    assert!(
        matches!(err, EngineError::TooManyAttempts { retry_after_secs, .. } if retry_after_secs > 0),
        "{err:?}"
    );
    assert_eq!(w.mail(&run).await.len(), before + 1);
    // Bob's throttle is his own.
    let (bobs, _) = w.link_for(&interrupt, "bob").await;
    w.engine.send_fresh_link(&bobs).await.unwrap();
    // A few minutes later Ann may ask again.
    w.clock.advance(FRESH_LINK_EVERY_MS);
    w.engine.send_fresh_link(&token).await.unwrap();
    assert_eq!(w.mail(&run).await.len(), before + 3);
}

#[tokio::test]
async fn no_fresh_link_for_a_forged_or_decided_link() {
    let w = world().await;
    let (run, interrupt) = w.start("week").await;
    let (token, _) = w.link_for(&interrupt, "ann").await;
    // One character changed in the MAC.
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    assert!(matches!(
        w.engine.send_fresh_link(&forged).await.unwrap_err(),
        EngineError::TokenInvalid(_)
    ));
    assert!(matches!(
        w.engine.send_fresh_link("not-a-token").await.unwrap_err(),
        EngineError::TokenInvalid(_)
    ));
    let before = w.mail(&run).await.len();
    w.engine
        .resolve_by_token(&token, json!({"action": "accept"}), None)
        .await
        .unwrap()
        .result
        .unwrap();
    assert!(matches!(
        w.engine.send_fresh_link(&token).await.unwrap_err(),
        EngineError::AlreadyResolved(_)
    ));
    assert_eq!(w.mail(&run).await.len(), before, "nothing queued");
}

/// `profile: "openwop-interrupt-auth-required"`: only a signed-in approver
/// decides; a mailed link only shows the request, a resolve link cannot be
/// minted, and one signed all the same is refused with nothing decided.
#[tokio::test]
async fn a_gate_that_requires_sign_in_is_decided_by_no_link() {
    let w = world().await;
    let (run, interrupt_id) = w.start("signed-in").await;
    let ann = w.engine.principal("ann").await.unwrap().unwrap();
    let link = w.engine.mail_link_for(&interrupt_id, &ann).await.unwrap();
    assert_eq!(link.intent, Intent::Inspect);
    assert!(link.sign_in_to_decide, "ann may decide, signed in");
    let (view, _) = w.engine.inspect_by_token(&link.token).await.unwrap();
    assert!(view.requires_sign_in);
    // A gate without the profile: the same person gets a decision link.
    let (_, week) = w.start("week").await;
    let plain = w.engine.mail_link_for(&week, &ann).await.unwrap();
    assert_eq!(plain.intent, Intent::Resolve);
    assert!(!plain.sign_in_to_decide);

    // The operator's mint refuses a decision link and gives an inspect one.
    assert!(matches!(
        w.engine
            .mint_token_for(&interrupt_id, &ann, Intent::Resolve)
            .await,
        Err(EngineError::SignInRequired(_))
    ));
    w.engine
        .mint_token_for(&interrupt_id, &ann, Intent::Inspect)
        .await
        .unwrap();

    // A decision link signed with the instance's key all the same.
    let claims = Claims {
        i: interrupt_id.clone(),
        r: run.to_string(),
        n: "gate".into(),
        p: "ann".into(),
        t: Intent::Resolve,
        a: T0,
        e: T0 + HOUR,
        j: "forged-by-the-operator".into(),
    };
    let key = SigningKey {
        kid: "k1".into(),
        secret: "a-test-secret-of-at-least-32-characters".into(),
        retired_at: None,
    };
    let token = KeyRing::new(vec![key]).sign(&claims).unwrap();
    let err = w
        .engine
        .resolve_by_token(&token, json!({"action": "accept"}), None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::SignInRequired(_)), "{err:?}");
    assert_eq!((err.http_status(), err.code()), (403, "auth_elevation_required"));

    // Signed in (an API key of a finance member), ann decides.
    let actor = Actor::api_key(ann, vec![Scope::ApprovalsRespond, Scope::RunsRead]);
    let before = w.engine.inspect_interrupt(&run, "gate", &actor).await.unwrap();
    assert!(before.votes.is_empty(), "the refused link cast no vote");
    w.engine
        .resolve(&run, "gate", json!({"action": "accept"}), &actor, None)
        .await
        .unwrap()
        .result
        .unwrap();
    let after = w.engine.inspect_interrupt(&run, "gate", &actor).await.unwrap();
    assert_eq!(after.status.as_str(), "resolved");
}

#[tokio::test]
async fn a_profile_is_refused_where_it_means_nothing() {
    let w = world().await;
    for (type_id, config, field) in [
        (
            "core.approvalGate",
            json!({"title": "t", "actions": ["accept"], "profile": "openwop-interrupt-quorum"}),
            "config.profile",
        ),
        (
            // A run's inputs never choose it.
            "core.approvalGate",
            json!({"title": "t", "actions": ["accept"], "profile": {"$bind": {"source": "input", "path": "profile"}}}),
            "config.profile",
        ),
        (
            "core.clarificationGate",
            json!({"questions": [{"id": "q1", "question": "?"}], "profile": "openwop-interrupt-auth-required"}),
            "config.profile",
        ),
    ] {
        let err = w
            .engine
            .register_workflow(json!({
                "id": "p", "name": "p", "version": "1.0.0",
                "nodes": [{"id": "n", "typeId": type_id, "name": "N", "config": config}],
                "edges": []
            }))
            .await
            .unwrap_err();
        assert_eq!(err.http_status(), 400, "{type_id}: {err:?}");
        assert!(err.to_string().contains(field), "{type_id}: {err}");
    }
}
