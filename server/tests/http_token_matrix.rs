//! The token verification ladder over HTTP, on both token routes
//! (`GET /interrupts/{token}`, `POST /interrupts/{token}`): each segment
//! tampered, unknown alg and kid, retired and rotated keys, expiry, reuse
//! after resolve, revocation, inspect intent, unknown interrupt.
//!
//! Tokens with chosen claims (expired, inspect, unknown interrupt, signed by a
//! retired key) are made with the engine's own `KeyRing` and the configured
//! secrets, exactly as the server would sign them.

mod common;

use common::*;
use reqwest::Method;
use serde_json::json;
use tollgate::token::{Claims, Intent, KeyRing, SigningKey};

const K0: &str = "0000000000000000retired-key-secret-00";
const K1: &str = "1111111111111111active-key-secret-111";
const K2: &str = "2222222222222222rotated-key-secret-22";

fn key(kid: &str, secret: &str, retired: bool) -> SigningKey {
    SigningKey {
        kid: kid.into(),
        secret: secret.into(),
        retired,
    }
}

/// Signs `claims` with one key (as that key's holder would).
fn sign(kid: &str, secret: &str, claims: &Claims) -> String {
    KeyRing::new(vec![key(kid, secret, false)]).sign(claims).unwrap()
}

/// The claims of a token this test can verify (any expiry).
fn claims_of(token: &str) -> Claims {
    KeyRing::new(vec![
        key("k0", K0, true),
        key("k1", K1, false),
        key("k2", K2, false),
    ])
    .verify(token, i64::MIN)
    .unwrap()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn with_keys(dir: &TestDir, keys: &str) {
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(keys);
    std::fs::write(dir.config_path(), config).unwrap();
}

const RETIRED_AND_ACTIVE: &str = r#"
[[token_keys]]
kid = "k0"
secret = "0000000000000000retired-key-secret-00"
retired = true

[[token_keys]]
kid = "k1"
secret = "1111111111111111active-key-secret-111"
"#;

async fn start() -> (Server, TestDir) {
    let dir = TestDir::new();
    with_keys(&dir, RETIRED_AND_ACTIVE);
    let s = Server::start(&dir).await;
    (s, dir)
}

/// A pending approval and a resolve token for `owner` (the inspect extension).
async fn pending(s: &Server) -> (String, String) {
    let run = s.create("conformance-approval").await;
    s.wait_status(&run, "waiting-approval", 20).await;
    let view = s.interrupt(&run, "gate").await;
    let token = view["token"]
        .as_str()
        .expect("a token for the caller")
        .to_string();
    (run, token)
}

async fn get(s: &Server, token: &str) -> Resp {
    s.call(Method::GET, &format!("/interrupts/{token}"), None, None, &[])
        .await
}

async fn post(s: &Server, token: &str) -> Resp {
    s.call(
        Method::POST,
        &format!("/interrupts/{token}"),
        None,
        Some(&json!({"resumeValue": {"action": "accept"}})),
        &[],
    )
    .await
}

/// Both routes answer `status` / `code`.
#[track_caller]
fn both(what: &str, got: (Resp, Resp), status: u16, code: &str) {
    for (route, r) in [("GET", got.0), ("POST", got.1)] {
        assert_eq!(r.status, status, "{what} ({route}): {}", r.body);
        assert_eq!(r.code(), code, "{what} ({route}): {}", r.body);
    }
}

/// Replaces the first character of a segment with another base64url character.
fn flip(seg: &str) -> String {
    let mut chars: Vec<char> = seg.chars().collect();
    chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

#[tokio::test]
async fn each_tampered_segment_unknown_alg_and_unknown_kid_are_401() {
    let (s, _dir) = start().await;
    let (run, token) = pending(&s).await;
    let segments: Vec<&str> = token.split('.').collect();
    assert_eq!(segments.len(), 5, "{token}");
    assert_eq!(&segments[..3], ["ow2", "hs256", "k1"]);

    for (i, name) in ["prefix", "alg", "kid", "payload", "mac"].iter().enumerate() {
        let mut altered: Vec<String> = segments.iter().map(|s| s.to_string()).collect();
        altered[i] = match i {
            0 => "ow3".into(),
            1 => "hs257".into(),
            2 => "k9".into(),
            _ => flip(&altered[i]),
        };
        let bad = altered.join(".");
        both(
            &format!("{name} altered"),
            (get(&s, &bad).await, post(&s, &bad).await),
            401,
            "interrupt_token_invalid",
        );
    }
    // Wrong segment counts and legacy (unprefixed) tokens.
    for bad in [
        format!("{token}.extra"),
        segments[..4].join("."),
        segments[1..].join("."),
        "ow2.hs256.nokid.eyJ9.00ff".to_string(),
    ] {
        both(
            &bad,
            (get(&s, &bad).await, post(&s, &bad).await),
            401,
            "interrupt_token_invalid",
        );
    }

    // Unknown alg with a correct MAC for it: still refused.
    let claims = claims_of(&token);
    let good = sign("k1", K1, &claims);
    for alg in ["none", "HS256", "hs512"] {
        let bad = good.replacen(".hs256.", &format!(".{alg}."), 1);
        both(
            alg,
            (get(&s, &bad).await, post(&s, &bad).await),
            401,
            "interrupt_token_invalid",
        );
    }
    // Unknown kid, well signed by its holder.
    let foreign = sign("k7", "7777777777777777unknown-key-secret-77", &claims);
    both(
        "unknown kid",
        (get(&s, &foreign).await, post(&s, &foreign).await),
        401,
        "interrupt_token_invalid",
    );
    // A known kid signed with the wrong secret.
    let wrong = sign("k1", K2, &claims);
    both(
        "wrong secret",
        (get(&s, &wrong).await, post(&s, &wrong).await),
        401,
        "interrupt_token_invalid",
    );

    // None of this touched the interrupt; the real token still works.
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    get(&s, &token).await.expect(200, None);
}

#[tokio::test]
async fn retired_key_verifies_until_expiry_and_expired_is_410() {
    let (s, _dir) = start().await;
    let (run, token) = pending(&s).await;
    let claims = claims_of(&token);

    // Signed by the retired key k0: verifies (GET and POST) while unexpired.
    let retired = sign("k0", K0, &claims);
    get(&s, &retired).await.expect(200, None);

    // Past expiresAt, with any key: 410 interrupt_expired on both routes.
    let expired_claims = Claims {
        e: now_ms() - 1_000,
        ..claims.clone()
    };
    for (kid, secret) in [("k0", K0), ("k1", K1)] {
        let expired = sign(kid, secret, &expired_claims);
        both(
            &format!("expired ({kid})"),
            (get(&s, &expired).await, post(&s, &expired).await),
            410,
            "interrupt_expired",
        );
    }
    // Expiry is judged after the MAC: an expired token with a bad MAC is 401.
    let expired = sign("k1", K1, &expired_claims);
    let bad_mac = format!(
        "{}.{}",
        expired.rsplit_once('.').unwrap().0,
        flip(expired.rsplit_once('.').unwrap().1)
    );
    get(&s, &bad_mac)
        .await
        .expect(401, Some("interrupt_token_invalid"));

    post(&s, &retired).await.expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "completed");
}

#[tokio::test]
async fn reuse_after_resolve_revocation_inspect_intent_and_unknown_interrupt() {
    let (s, dir) = start().await;

    // Reused after resolve: 409 on both routes.
    let (_run, token) = pending(&s).await;
    post(&s, &token).await.expect(200, None);
    both(
        "reused",
        (get(&s, &token).await, post(&s, &token).await),
        409,
        "interrupt_already_resolved",
    );

    // Revoked (recorded in revoked_tokens, as `Engine::revoke_token` does): 409.
    let (run, token) = pending(&s).await;
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", dir.dir.path().join("t.db").display()))
        .await
        .unwrap();
    sqlx::query("INSERT INTO revoked_tokens (jti, revoked_at) VALUES (?, ?)")
        .bind(claims_of(&token).j)
        .bind(now_ms())
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    both(
        "revoked",
        (get(&s, &token).await, post(&s, &token).await),
        409,
        "interrupt_already_resolved",
    );
    assert_eq!(
        s.snapshot(&run).await["status"],
        "waiting-approval",
        "revocation decides nothing"
    );

    // Inspect intent: GET works, resolving is 403 and changes nothing.
    let claims = claims_of(s.interrupt(&run, "gate").await["token"].as_str().unwrap());
    let inspect = sign(
        "k1",
        K1,
        &Claims {
            t: Intent::Inspect,
            ..claims.clone()
        },
    );
    let r = get(&s, &inspect).await;
    r.expect(200, None);
    assert_eq!(r.body["intent"], "inspect");
    post(&s, &inspect).await.expect(403, Some("forbidden"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");

    // A well-signed token for an interrupt that does not exist: 404.
    let ghost = sign(
        "k1",
        K1,
        &Claims {
            i: format!("{TENANT}/no-such-interrupt-0123456789"),
            ..claims.clone()
        },
    );
    both(
        "unknown interrupt",
        (get(&s, &ghost).await, post(&s, &ghost).await),
        404,
        "not_found",
    );
    // …or for a run and node that do not exist.
    let ghost_run = sign(
        "k1",
        K1,
        &Claims {
            r: format!("{TENANT}/no-such-run-0123456789"),
            ..claims
        },
    );
    both(
        "unknown run",
        (get(&s, &ghost_run).await, post(&s, &ghost_run).await),
        404,
        "not_found",
    );
}

#[tokio::test]
async fn after_key_rotation_old_kid_tokens_still_work() {
    let dir = TestDir::new();
    with_keys(
        &dir,
        r#"
[[token_keys]]
kid = "k1"
secret = "1111111111111111active-key-secret-111"
"#,
    );
    let mut s = Server::start(&dir).await;
    let (run, old) = pending(&s).await;
    assert!(old.starts_with("ow2.hs256.k1."), "{old}");
    s.kill9();

    // Rotate: k1 retired, k2 signs.
    let config = std::fs::read_to_string(dir.config_path()).unwrap();
    let config = config.replace(
        "secret = \"1111111111111111active-key-secret-111\"\n",
        "secret = \"1111111111111111active-key-secret-111\"\nretired = true\n\n[[token_keys]]\nkid = \"k2\"\nsecret = \"2222222222222222rotated-key-secret-22\"\n",
    );
    std::fs::write(dir.config_path(), config).unwrap();
    let s = Server::start(&dir).await;
    let fresh = s.interrupt(&run, "gate").await["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        fresh.starts_with("ow2.hs256.k2."),
        "new tokens use the new key: {fresh}"
    );
    get(&s, &old).await.expect(200, None);
    get(&s, &fresh).await.expect(200, None);
    post(&s, &old).await.expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "completed");
    both(
        "used old token",
        (get(&s, &old).await, post(&s, &old).await),
        409,
        "interrupt_already_resolved",
    );
}
