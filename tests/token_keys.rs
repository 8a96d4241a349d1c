//! Token signing keys against a real SQLite file with an injected clock:
//! configuration sync (removed keys stop verifying), CLI-style add with a
//! generated secret, activate, retire (verifies only what it signed before),
//! revoke (verifies nothing), and never-activated keys.

use serde_json::json;
use std::sync::Arc;
use tollgate::auth::Scope;
use tollgate::engine::token_keys::{ConfiguredTokenKey, TokenKeySource, TokenKeyState};
use tollgate::token::{Claims, Intent, KeyRing, SigningKey};
use tollgate::{CreateRun, Engine, EngineError, EngineOptions, ManualClock, Principal};

const T0: i64 = 1_800_000_000_000;

struct Fixture {
    engine: Engine,
    clock: ManualClock,
    url: String,
    _dir: tempfile::TempDir,
}

async fn open(url: &str, clock: &ManualClock) -> Engine {
    let mut opts = EngineOptions::new(url);
    opts.clock = Arc::new(clock.clone());
    Engine::open(opts).await.unwrap()
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let url = tollgate::store::testing::database_url(&dir.path().join("k.db"))
        .await
        .unwrap();
    let engine = open(&url, &clock).await;
    engine
        .upsert_principal(Principal {
            id: "ann".into(),
            tenant: "acme".into(),
            name: "Ann".into(),
            email: None,
            groups: vec!["finance".into()],
            roles: vec![],
            is_override: false,
        })
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
    Fixture {
        engine,
        clock,
        url,
        _dir: dir,
    }
}

fn configured(kid: &str, retired: bool) -> ConfiguredTokenKey {
    ConfiguredTokenKey {
        kid: kid.into(),
        secret: secret(kid),
        retired,
    }
}

fn secret(kid: &str) -> String {
    format!("{kid}-secret-0123456789-0123456789-0123")
}

async fn start(f: &Fixture) -> tollgate::RunId {
    let actor = tollgate::Actor::api_key(
        f.engine.principal("ann").await.unwrap().unwrap(),
        vec![Scope::RunsCreate, Scope::RunsRead, Scope::ApprovalsRespond],
    );
    let req: CreateRun = serde_json::from_value(json!({"workflowId": "open-gate"})).unwrap();
    f.engine
        .create_run(req, &actor, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

async fn link(f: &Fixture, run: &tollgate::RunId) -> String {
    let ann = f.engine.principal("ann").await.unwrap().unwrap();
    f.engine
        .mint_token(run, "review", &ann, Intent::Inspect)
        .await
        .unwrap()
        .0
}

fn states(f: &[tollgate::engine::token_keys::TokenKeyRow]) -> Vec<(String, TokenKeyState)> {
    let mut v: Vec<_> = f.iter().map(|r| (r.kid.clone(), r.state)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn invalid<T: std::fmt::Debug>(r: Result<T, EngineError>) -> bool {
    matches!(r, Err(EngineError::TokenInvalid(_)))
}

/// Claims of `token`, re-signed by `kid` with its configured secret.
fn resign(kid: &str, token: &str, change: impl FnOnce(&mut Claims)) -> String {
    let any = KeyRing::new(vec![SigningKey {
        kid: token.split('.').nth(2).unwrap().into(),
        secret: secret(token.split('.').nth(2).unwrap()),
        retired_at: None,
    }]);
    let mut claims = any.verify(token, i64::MIN).unwrap();
    change(&mut claims);
    KeyRing::new(vec![SigningKey {
        kid: kid.into(),
        secret: secret(kid),
        retired_at: None,
    }])
    .sign(&claims)
    .unwrap()
}

#[tokio::test]
async fn config_sync_removes_keys_dropped_from_the_file() {
    let f = fixture().await;
    f.engine
        .sync_token_keys(vec![configured("k1", false), configured("k2", false)], None)
        .await
        .unwrap();
    let run = start(&f).await;
    let by_k2 = link(&f, &run).await;
    assert!(
        by_k2.starts_with("ow2.hs256.k2."),
        "the last key in the file signs"
    );
    let by_k1 = resign("k1", &by_k2, |_| {});
    assert!(f.engine.inspect_by_token(&by_k1).await.is_ok());

    // The next start without k1: deleted, its links are unknown.
    let sync = f
        .engine
        .sync_token_keys(vec![configured("k2", false)], None)
        .await
        .unwrap();
    assert_eq!(sync.removed, vec!["k1".to_string()]);
    assert!(invalid(f.engine.inspect_by_token(&by_k1).await));
    assert!(f.engine.inspect_by_token(&by_k2).await.is_ok());
    assert_eq!(
        states(&f.engine.token_keys().await.unwrap()),
        vec![("k2".into(), TokenKeyState::Signing)]
    );

    // A CLI key's kid cannot be taken over by the file; CLI keys survive syncs.
    f.engine.add_token_key("cli1", false).await.unwrap();
    match f
        .engine
        .sync_token_keys(vec![configured("cli1", false)], None)
        .await
    {
        Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("token_keys.kid")),
        other => panic!("{other:?}"),
    }
    f.engine.sync_token_keys(vec![], None).await.unwrap();
    assert_eq!(
        states(&f.engine.token_keys().await.unwrap()),
        vec![("cli1".into(), TokenKeyState::New)]
    );
}

#[tokio::test]
async fn cli_keys_rotate_retire_and_revoke() {
    let f = fixture().await;
    f.engine
        .sync_token_keys(vec![configured("k1", false)], None)
        .await
        .unwrap();
    let run = start(&f).await;
    let old = link(&f, &run).await;

    // Added, not active: verifies nothing, k1 still signs.
    let row = f.engine.add_token_key("k2", false).await.unwrap();
    assert_eq!((row.state, row.source), (TokenKeyState::New, TokenKeySource::Cli));
    let listed = serde_json::to_string(&f.engine.token_keys().await.unwrap()).unwrap();
    assert!(!listed.contains("secret") && !listed.contains("tg_"), "{listed}");
    assert!(link(&f, &run).await.starts_with("ow2.hs256.k1."));

    // Activated: k2 signs; k1 still verifies.
    f.clock.advance(1000);
    f.engine.activate_token_key("k2").await.unwrap();
    let new = link(&f, &run).await;
    assert!(new.starts_with("ow2.hs256.k2."));
    assert!(f.engine.inspect_by_token(&old).await.is_ok());

    // Retired: what k1 issued before verifies; a token dated after is refused.
    f.clock.advance(1000);
    f.engine.retire_token_key("k1").await.unwrap();
    f.clock.advance(1000);
    assert!(f.engine.inspect_by_token(&old).await.is_ok());
    let now = f.engine.now();
    let forged = resign("k1", &old, |c| {
        c.a = now;
        c.e = now + 60_000;
    });
    assert!(invalid(f.engine.inspect_by_token(&forged).await));
    // …and the config file cannot bring it back; retiring is one-way.
    f.engine
        .sync_token_keys(vec![configured("k1", false)], None)
        .await
        .unwrap();
    assert!(matches!(
        f.engine.activate_token_key("k1").await,
        Err(EngineError::Conflict(_))
    ));
    assert!(invalid(f.engine.inspect_by_token(&forged).await));

    // Revoked: nothing it signed verifies, even before its retirement.
    f.engine.revoke_token_key("k1").await.unwrap();
    assert!(invalid(f.engine.inspect_by_token(&old).await));
    assert!(f.engine.inspect_by_token(&new).await.is_ok());
    assert!(matches!(
        f.engine.revoke_token_key("k1").await,
        Err(EngineError::Conflict(_))
    ));
    assert!(matches!(
        f.engine.retire_token_key("nope").await,
        Err(EngineError::NotFound(_))
    ));
    // A restart with the revoked key still in the file keeps it revoked.
    f.engine
        .sync_token_keys(vec![configured("k1", false)], None)
        .await
        .unwrap();
    assert!(invalid(f.engine.inspect_by_token(&old).await));

    // Bad and duplicate kids name the field.
    for kid in ["bad kid", "a.b", "k2"] {
        match f.engine.add_token_key(kid, false).await {
            Err(EngineError::Validation { field, .. }) => assert_eq!(field.as_deref(), Some("kid"), "{kid}"),
            other => panic!("{kid}: {other:?}"),
        }
    }
    // Retiring the signing key leaves none: links cannot be issued, old ones verify.
    f.engine.retire_token_key("k2").await.unwrap();
    assert!(!f.engine.can_mint_tokens());
    assert!(f.engine.inspect_by_token(&new).await.is_ok());
}

#[tokio::test]
async fn another_process_changes_reach_the_ring_on_reload() {
    let f = fixture().await;
    f.engine
        .sync_token_keys(vec![configured("k1", false)], None)
        .await
        .unwrap();
    let run = start(&f).await;
    let old = link(&f, &run).await;
    // The CLI opens the same file and revokes k1.
    let cli = open(&f.url, &f.clock).await;
    cli.revoke_token_key("k1").await.unwrap();
    if tollgate::store::testing::postgres_server().is_some() {
        // On PostgreSQL the revoke is announced at its commit: the ring follows at once.
        let mut refused = false;
        for _ in 0..100 {
            if invalid(f.engine.inspect_by_token(&old).await) {
                refused = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            refused,
            "a key revoked by another process stops verifying within a second"
        );
        return;
    }
    // The server's ring changes at its next reload (the server reloads every few seconds).
    assert!(f.engine.inspect_by_token(&old).await.is_ok());
    f.engine.reload_token_keys().await.unwrap();
    assert!(invalid(f.engine.inspect_by_token(&old).await));
}
