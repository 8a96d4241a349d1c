//! Console sign-in in the engine against a real SQLite file: bounded
//! password hashing (503 when no slot frees up), throttling (429), the
//! password generation that sessions are bound to, and removing a person.

mod common;

use tollgate::sign_in::SignInLimits;
use tollgate::{Engine, EngineError, ManualClock};

async fn fixture() -> (Engine, ManualClock, common::TestEngine) {
    let t = common::engine().await;
    common::add(
        &t.engine,
        [
            common::person("ann", "acme", &[], &[], false),
            common::person("bob", "acme", &[], &[], false),
        ],
    )
    .await;
    let (engine, clock) = (t.engine.clone(), t.clock.clone());
    let phc = tollgate::passwords::hash("ann-password").unwrap();
    engine.set_password_hash("ann", Some(&phc)).await.unwrap();
    (engine, clock, t)
}

#[tokio::test]
async fn hashing_is_bounded_and_excess_is_busy() {
    let (engine, _clock, _dir) = fixture().await;
    engine.set_sign_in_limits(&SignInLimits {
        hash_concurrency: 1,
        hash_wait_ms: 1,
        account_attempts: 100,
        address_attempts: 100,
        ..SignInLimits::default()
    });
    // One argon2 check takes far longer than 1 ms: of eight at once, some
    // find no free slot in time and are refused with 503 and Retry-After.
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let e = engine.clone();
            tokio::spawn(async move { e.sign_in("ann", "ann-password", None).await })
        })
        .collect();
    let mut busy = 0;
    let mut signed_in = 0;
    for a in attempts {
        match a.await.unwrap() {
            Ok(Some(_)) => signed_in += 1,
            Err(e @ EngineError::Busy { .. }) => {
                assert_eq!((e.http_status(), e.retry_after_secs()), (503, Some(1)));
                busy += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(signed_in >= 1, "the slot holder signs in");
    assert!(busy >= 1, "the excess waits, then is refused");
}

#[tokio::test]
async fn attempts_are_throttled_and_a_success_refills_the_account() {
    let (engine, _clock, _dir) = fixture().await;
    engine.set_sign_in_limits(&SignInLimits {
        account_attempts: 2,
        ..SignInLimits::default()
    });
    assert!(engine.sign_in("ann", "wrong", None).await.unwrap().is_none());
    assert!(engine
        .sign_in("ann", "ann-password", None)
        .await
        .unwrap()
        .is_some());
    assert!(engine.sign_in("ann", "wrong", None).await.unwrap().is_none());
    assert!(engine.sign_in("ann", "wrong", None).await.unwrap().is_none());
    let e = engine.sign_in("ann", "ann-password", None).await.unwrap_err();
    assert_eq!(e.http_status(), 429);
    assert_eq!(e.code(), "rate_limited");
    // One more attempt a minute (governor's clock is real time; hashing takes a while).
    assert!(
        matches!(e.retry_after_secs(), Some(30..=60)),
        "{:?}",
        e.retry_after_secs()
    );
}

#[tokio::test]
async fn sessions_follow_the_password_generation() {
    let (engine, clock, dir) = fixture().await;
    let signed = engine
        .sign_in("ann", "ann-password", None)
        .await
        .unwrap()
        .unwrap();
    let g = signed.generation;
    assert!(engine.session_principal("ann", g).await.unwrap().is_some());
    assert!(engine
        .session_principal("ann", g.wrapping_add(1))
        .await
        .unwrap()
        .is_none());
    assert!(
        engine.session_principal("bob", 0).await.unwrap().is_none(),
        "no password, no session"
    );

    // A new password: this engine's own change ends the session at once.
    let new = tollgate::passwords::hash("another-pass").unwrap();
    engine.set_password_hash("ann", Some(&new)).await.unwrap();
    assert!(engine.session_principal("ann", g).await.unwrap().is_none());
    let g2 = engine
        .sign_in("ann", "another-pass", None)
        .await
        .unwrap()
        .unwrap()
        .generation;
    assert_ne!(g2, g, "a new password, a new generation");
    // Storing the same hash again (a restart syncing the configuration) keeps sessions.
    engine.set_password_hash("ann", Some(&new)).await.unwrap();
    assert!(engine.session_principal("ann", g2).await.unwrap().is_some());

    // Another process (the CLI) removes the password: seen after the recheck time.
    let cli = dir.open_again().await;
    cli.set_password_hash("ann", None).await.unwrap();
    if tollgate::store::testing::postgres_server().is_some() {
        // On PostgreSQL the other process's change is announced at its commit.
        let mut ended = false;
        for _ in 0..100 {
            if engine.session_principal("ann", g2).await.unwrap().is_none() {
                ended = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(ended, "the session ends within a second");
    } else {
        assert!(
            engine.session_principal("ann", g2).await.unwrap().is_some(),
            "cached briefly"
        );
        clock.advance(tollgate::engine::sign_in::DIRECTORY_RECHECK_MS);
        assert!(engine.session_principal("ann", g2).await.unwrap().is_none());
    }
    assert!(engine
        .sign_in("ann", "another-pass", None)
        .await
        .unwrap()
        .is_none());

    // bob is removed by the CLI: his key is revoked and his entry gone, here within the recheck time.
    cli.put_api_key(
        "bob-key-0123456789ab",
        "bob",
        &[tollgate::auth::Scope::RunsRead],
        None,
    )
    .await
    .unwrap();
    assert!(engine
        .authenticate("bob-key-0123456789ab")
        .await
        .unwrap()
        .is_some());
    cli.remove_principal("bob").await.unwrap();
    assert!(matches!(
        cli.remove_principal("bob").await,
        Err(EngineError::NotFound(_))
    ));
    clock.advance(tollgate::engine::API_KEY_RECHECK_MS);
    assert!(engine.principal("bob").await.unwrap().is_none());
    assert!(engine
        .authenticate("bob-key-0123456789ab")
        .await
        .unwrap()
        .is_none());
}

/// A session of a removed person never becomes a session of whoever is
/// later given the same id, in another tenant or the same: the password
/// generation a session is bound to is random, not a count that starts
/// again at the same numbers for the new person.
#[tokio::test]
async fn a_removed_persons_session_does_not_pass_to_the_next_holder_of_the_id() {
    let (engine, clock, _dir) = fixture().await;
    let signed = engine
        .sign_in("ann", "ann-password", None)
        .await
        .unwrap()
        .expect("ann signs in");
    assert!(engine
        .session_principal("ann", signed.generation)
        .await
        .unwrap()
        .is_some());
    engine.remove_principal("ann").await.unwrap();
    for tenant in ["acmf", "acme"] {
        common::add(&engine, [common::person("ann", tenant, &[], &["admin"], false)]).await;
        let phc = tollgate::passwords::hash("new-holder-password").unwrap();
        engine.set_password_hash("ann", Some(&phc)).await.unwrap();
        clock.advance(tollgate::engine::sign_in::DIRECTORY_RECHECK_MS);
        assert!(
            engine
                .session_principal("ann", signed.generation)
                .await
                .unwrap()
                .is_none(),
            "the old session acts as the new ann of {tenant}"
        );
        engine.remove_principal("ann").await.unwrap();
    }
}
