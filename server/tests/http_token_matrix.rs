//! The token verification ladder over HTTP, on the token routes
//! (`GET /interrupts/{token}`, `POST /interrupts/{token}` and the host
//! extension `GET /interrupts/{token}/context`): each segment
//! tampered, unknown alg and kid, retired, rotated, revoked, removed and
//! never-activated keys, expiry, reuse after resolve, revocation, inspect
//! intent, unknown interrupt; and the outbox listing holds no usable link.
//!
//! Tokens with chosen claims (expired, inspect, unknown interrupt, signed by a
//! retired key) are made with the engine's own `KeyRing` and the configured
//! secrets, exactly as the server would sign them.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::time::Duration;
use tollgate::token::{Claims, Intent, KeyRing, SigningKey};

const K0: &str = "0000000000000000retired-key-secret-00";
const K1: &str = "1111111111111111active-key-secret-111";
const K2: &str = "2222222222222222rotated-key-secret-22";

fn key(kid: &str, secret: &str) -> SigningKey {
    SigningKey {
        kid: kid.into(),
        secret: secret.into(),
        retired_at: None,
    }
}

/// Signs `claims` with one key (as that key's holder would).
fn sign(kid: &str, secret: &str, claims: &Claims) -> String {
    KeyRing::new(vec![key(kid, secret)]).sign(claims).unwrap()
}

/// The claims of a token this test can verify (any expiry).
fn claims_of(token: &str) -> Claims {
    KeyRing::new(vec![key("k0", K0), key("k2", K2), key("k1", K1)])
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

fn db_path(dir: &TestDir) -> String {
    dir.db_url()
}

/// `tollgate ARGS…` on the test's database; its JSON output.
fn cli(args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
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

const ONLY_K1: &str = r#"
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

/// `GET /interrupts/{token}`; the host extension `GET /interrupts/{token}/context`
/// is asked too and must answer with the same status and error code, so every
/// case of the matrix covers both read routes.
async fn get(s: &Server, token: &str) -> Resp {
    let r = s
        .call(Method::GET, &format!("/interrupts/{token}"), None, None, &[])
        .await;
    let c = context(s, token).await;
    assert_eq!(
        (c.status, c.code()),
        (r.status, r.code()),
        "the context route answers as GET /interrupts/{{token}}: {} / {}",
        c.body,
        r.body
    );
    r
}

async fn context(s: &Server, token: &str) -> Resp {
    s.call(
        Method::GET,
        &format!("/interrupts/{token}/context"),
        None,
        None,
        &[],
    )
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
async fn retired_key_verifies_only_what_it_issued_before_and_expired_is_410() {
    let started = now_ms();
    let (s, _dir) = start().await;
    let (run, token) = pending(&s).await;
    let claims = claims_of(&token);

    // k0 was retired when the server first started: a token it issued
    // before then verifies (GET and POST) while unexpired…
    let before = Claims {
        a: started - 60_000,
        e: now_ms() + 10 * 60_000,
        ..claims.clone()
    };
    let retired = sign("k0", K0, &before);
    get(&s, &retired).await.expect(200, None);
    // …one dated after its retirement does not, though its MAC is right.
    let after = sign(
        "k0",
        K0,
        &Claims {
            a: now_ms(),
            ..before.clone()
        },
    );
    both(
        "issued after retirement",
        (get(&s, &after).await, post(&s, &after).await),
        401,
        "interrupt_token_invalid",
    );
    // Nor one that claims a lifetime longer than any link gets (a mailed
    // link's 24 h is the longest here).
    let long = sign(
        "k0",
        K0,
        &Claims {
            e: started - 60_000 + 25 * 3_600_000,
            ..before.clone()
        },
    );
    get(&s, &long).await.expect(401, Some("interrupt_token_invalid"));

    // Past expiresAt, with any key: 410 interrupt_expired on both routes.
    let expired_claims = Claims {
        a: started - 10 * 60_000,
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

    assert_eq!(
        s.snapshot(&run).await["status"],
        "waiting-approval",
        "nothing refused decided"
    );
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
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&dir.db_url()).await.unwrap();
    sqlx::query("INSERT INTO revoked_tokens (jti, revoked_at) VALUES ($1, $2)")
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
    assert_eq!(r.header("x-tollgate-intent"), Some("inspect"));
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
    with_keys(&dir, ONLY_K1);
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
    // k1 was retired by this start: what it signs now is refused.
    let late = sign(
        "k1",
        K1,
        &Claims {
            a: now_ms(),
            ..claims_of(&old)
        },
    );
    get(&s, &late).await.expect(401, Some("interrupt_token_invalid"));
    post(&s, &old).await.expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "completed");
    both(
        "used old token",
        (get(&s, &old).await, post(&s, &old).await),
        409,
        "interrupt_already_resolved",
    );
}

#[tokio::test]
async fn a_key_removed_from_the_configuration_stops_verifying_at_the_next_start() {
    let dir = TestDir::new();
    with_keys(&dir, RETIRED_AND_ACTIVE);
    let started = now_ms();
    let mut s = Server::start(&dir).await;
    let (run, by_k1) = pending(&s).await;
    // Issued by k0 before its retirement: verifies while k0 is configured.
    let by_k0 = sign(
        "k0",
        K0,
        &Claims {
            a: started - 60_000,
            e: now_ms() + 20 * 60_000,
            ..claims_of(&by_k1)
        },
    );
    get(&s, &by_k0).await.expect(200, None);
    s.kill9();

    // Both keys gone from the file; k2 signs now.
    let config = std::fs::read_to_string(dir.config_path()).unwrap();
    let config = config.replace(RETIRED_AND_ACTIVE, "");
    std::fs::write(dir.config_path(), config).unwrap();
    with_keys(
        &dir,
        r#"
[[token_keys]]
kid = "k2"
secret = "2222222222222222rotated-key-secret-22"
"#,
    );
    let s = Server::start(&dir).await;
    for (what, token) in [("k1, was signing", &by_k1), ("k0, was retired", &by_k0)] {
        both(
            what,
            (get(&s, token).await, post(&s, token).await),
            401,
            "interrupt_token_invalid",
        );
    }
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
    let listed = cli(&["token-key", "list", "--db", &db_path(&dir)]);
    let kids: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, ["k2"], "{listed}");
    let fresh = s.interrupt(&run, "gate").await["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fresh.starts_with("ow2.hs256.k2."), "{fresh}");
    get(&s, &fresh).await.expect(200, None);
}

/// Polls `token` on GET until it answers `status`, for up to `secs` seconds.
async fn until_status(s: &Server, token: &str, status: u16, secs: u64) -> Resp {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        // Only the inspect route while the key ring may change under us (a
        // reload between the two routes would make them differ); both once settled.
        let r = s
            .call(Method::GET, &format!("/interrupts/{token}"), None, None, &[])
            .await;
        if r.status == status || tokio::time::Instant::now() > deadline {
            return get(s, token).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn cli_keys_new_keys_do_not_verify_and_revoked_keys_verify_nothing() {
    let dir = TestDir::new();
    with_keys(&dir, ONLY_K1);
    let s = Server::start(&dir).await;
    let db = db_path(&dir);
    let db = db.as_str();
    let (run, by_k1) = pending(&s).await;

    // Added with the CLI: the secret is generated and never printed.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["token-key", "add", "--db", db, "--kid", "k5"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (row["state"].as_str(), row["source"].as_str()),
        (Some("new"), Some("cli"))
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(db).await.unwrap();
    let secret: String = sqlx::query_scalar("SELECT secret FROM token_keys WHERE kid = 'k5'")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert!(secret.len() >= 32);
    assert!(!printed.contains(&secret), "the secret is never shown: {printed}");

    // Never activated: its tokens are refused, even after the server reloads keys.
    let by_k5 = sign("k5", &secret, &claims_of(&by_k1));
    tokio::time::sleep(Duration::from_secs(6)).await;
    both(
        "never activated",
        (get(&s, &by_k5).await, post(&s, &by_k5).await),
        401,
        "interrupt_token_invalid",
    );
    // Activated: it verifies within seconds, and signs new links.
    cli(&["token-key", "activate", "--db", db, "k5"]);
    until_status(&s, &by_k5, 200, 10).await.expect(200, None);
    let fresh = s.interrupt(&run, "gate").await["token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(fresh.starts_with("ow2.hs256.k5."), "{fresh}");

    // Revoked: k1's links (issued before, unexpired) are refused within seconds.
    get(&s, &by_k1).await.expect(200, None);
    let row = cli(&["token-key", "revoke", "--db", db, "k1"]);
    assert_eq!(row["state"], "revoked");
    until_status(&s, &by_k1, 401, 10)
        .await
        .expect(401, Some("interrupt_token_invalid"));
    post(&s, &by_k1)
        .await
        .expect(401, Some("interrupt_token_invalid"));
    assert_eq!(
        s.snapshot(&run).await["status"],
        "waiting-approval",
        "nothing decided"
    );
    // Revoking is one-way; unknown kids are refused.
    for (args, what) in [
        (vec!["token-key", "activate", "--db", db, "k1"], "revoked"),
        (vec!["token-key", "retire", "--db", db, "nope"], "nope"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(what), "{args:?}");
    }
    get(&s, &fresh).await.expect(200, None);
}

#[tokio::test]
async fn the_outbox_listing_holds_no_usable_link() {
    let dir = TestDir::new();
    with_keys(
        &dir,
        r#"
[[principals]]
id = "mia"
email = "mia@example.com"
groups = ["reviewers"]

[notifications]
poll_interval_ms = 50
"#,
    );
    with_keys(&dir, ONLY_K1);
    let s = Server::start(&dir).await;
    s.register(json!({"id": "mailed", "nodes": [gate("gate", json!({"title": "Mail me", "actions": ["accept", "reject"], "approverGroupRefs": ["reviewers"]}))]}))
        .await;
    let run = s.create_as(OWNER, json!({"workflowId": "mailed"})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let listing = loop {
        let r = s.get("/admin/outbox?kind=email&status=sent", ADMIN).await;
        r.expect(200, None);
        if r.body["items"].as_array().is_some_and(|a| !a.is_empty()) || tokio::time::Instant::now() > deadline
        {
            break r.body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = listing.to_string();
    let message = listing["items"][0]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(message.contains("/t/[link "), "{message}");
    assert!(!text.contains("ow2."), "no token anywhere in the listing: {text}");
    // What the listing shows in the link's place does not open anything.
    let shown = message
        .split("/t/")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    for candidate in [
        shown.to_string(),
        shown
            .trim_start_matches("[link ")
            .trim_end_matches(']')
            .to_string(),
    ] {
        let r = s
            .call(
                Method::GET,
                &format!("/interrupts/{}", candidate.replace(' ', "%20")),
                None,
                None,
                &[],
            )
            .await;
        assert!(
            [401, 404].contains(&r.status),
            "{candidate}: {} {}",
            r.status,
            r.body
        );
        let r = s
            .call(
                Method::POST,
                &format!("/interrupts/{}", candidate.replace(' ', "%20")),
                None,
                Some(&json!({"resumeValue": {"action": "accept"}})),
                &[],
            )
            .await;
        assert!(
            [401, 404].contains(&r.status),
            "{candidate}: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        s.snapshot(&run).await["status"],
        "waiting-approval",
        "nothing decided"
    );
}

/// The `$ref`s of the vendored OpenWOP schemas (`tests/spec/`), served
/// offline: `ids.schema.json` as copied; `credential-reference.schema.json`
/// was not available and is read as the empty schema.
struct SpecRefs;

impl jsonschema::Retrieve for SpecRefs {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        match uri.as_str() {
            "https://openwop.dev/spec/v2/ids.schema.json" => {
                Ok(serde_json::from_str(include_str!("spec/ids.schema.json"))?)
            }
            "https://openwop.dev/spec/v2/credential-reference.schema.json" => Ok(json!({})),
            other => Err(format!("unexpected $ref {other}").into()),
        }
    }
}

/// OpenWOP v2 `InterruptPayload` (`suspend-request.schema.json`, closed).
fn interrupt_payload_schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(include_str!("spec/suspend-request.schema.json")).unwrap();
    jsonschema::options()
        .with_retriever(SpecRefs)
        .should_validate_formats(true)
        .build(&schema)
        .expect("the OpenWOP InterruptPayload schema compiles")
}

#[track_caller]
fn assert_interrupt_payload(validator: &jsonschema::Validator, what: &str, body: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what}: not an OpenWOP InterruptPayload:\n{}\n{body}",
        errors.join("\n")
    );
}

/// `GET /interrupts/{token}` answers exactly the closed OpenWOP
/// `InterruptPayload` (validated against `suspend-request.schema.json`) for an
/// approval, a clarification and `core.interrupt` kinds; Tollgate's extras are
/// headers, and the rest is at the `/context` extension.
#[tokio::test]
async fn the_token_read_is_the_openwop_interrupt_payload_and_extras_are_elsewhere() {
    let (s, _dir) = start().await;
    let validator = interrupt_payload_schema();
    // The schema is the closed one: the members this route used to add, or a
    // member outside the kind's data, fail it.
    for bad in [
        json!({"kind": "approval", "key": "k", "data": {"artifactId": "a", "artifactType": "t", "title": "t", "actions": ["accept"]}, "intent": "resolve"}),
        json!({"kind": "custom", "key": "k", "data": {"customKind": "x", "prompt": "?"}}),
        json!({"kind": "clarification", "key": "k", "data": {"customKind": "x"}}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
    let interrupt = |id: &str, kind: &str, data: Value| {
        json!({
            "id": id, "name": id, "version": "1",
            "nodes": [{"id": "ask", "typeId": "core.interrupt", "config": {"kind": kind, "data": data}}]
        })
    };
    s.register(interrupt(
        "wire-external",
        "external-event",
        json!({"eventType": "stripe.checkout.completed", "correlation": {"orderId": "o-1"}}),
    ))
    .await;
    s.register(interrupt(
        "wire-custom",
        "custom",
        json!({"customKind": "amount", "payload": {"currency": "EUR"}}),
    ))
    .await;
    s.register(interrupt(
        "wire-low-confidence",
        "low-confidence",
        json!({"agentId": "triage", "threshold": 0.7, "observed": 0.4}),
    ))
    .await;
    let mut timed = gate_workflow("wire-timed-gate", json!({"timeoutMs": 600000}));
    timed["nodes"][0]["config"]["description"] = json!("With a deadline");

    s.register(timed).await;
    for (workflow, node, status, kind) in [
        ("conformance-approval", "gate", "waiting-approval", "approval"),
        ("wire-timed-gate", "gate", "waiting-approval", "approval"),
        (
            "conformance-clarification",
            "ask",
            "waiting-input",
            "clarification",
        ),
        ("wire-external", "ask", "waiting-external", "external-event"),
        ("wire-custom", "ask", "waiting-approval", "custom"),
        ("wire-low-confidence", "ask", "waiting-approval", "low-confidence"),
    ] {
        let run = s.create(workflow).await;
        assert_eq!(
            s.wait_status(&run, status, 20).await["status"],
            status,
            "{workflow}"
        );
        let view = s.interrupt(&run, node).await;
        let token = view["token"].as_str().expect("a token").to_string();

        let r = get(&s, &token).await;
        r.expect(200, None);
        assert_interrupt_payload(&validator, workflow, &r.body);
        assert_eq!(r.body["kind"], kind, "{workflow}");
        // The payload as recorded: the run-scoped view's and the event's.
        assert_eq!(r.body, view["payload"], "{workflow}");
        let requested = s.events(&run).await;
        let requested = of_type(&requested, "interrupt.requested", Some(node));
        assert_eq!(requested.len(), 1, "{workflow}");
        assert_eq!(r.body, requested[0]["payload"], "{workflow}");
        // The scalar extras are headers.
        assert_eq!(r.header("x-tollgate-interrupt-id"), view["interruptId"].as_str());
        assert_eq!(r.header("x-tollgate-run-id"), Some(run.as_str()));
        assert_eq!(r.header("x-tollgate-node-id"), Some(node));
        assert_eq!(r.header("x-tollgate-expires-at"), view["expiresAt"].as_str());
        assert_eq!(r.header("x-tollgate-intent"), view["intent"].as_str());
        assert_eq!(r.header("openwop-version"), Some("2.0"));

        // The rest is at the host extension, with the same identity.
        let c = context(&s, &token).await;
        c.expect(200, None);
        let mut members: Vec<&str> = c.body.as_object().unwrap().keys().map(String::as_str).collect();
        members.sort();
        assert_eq!(
            members,
            [
                "contract",
                "expiresAt",
                "intent",
                "interruptId",
                "nodeId",
                "request",
                "runId"
            ],
            "{workflow}: {}",
            c.body
        );
        assert_eq!(c.body["interruptId"], view["interruptId"]);
        assert_eq!(c.body["runId"], run.as_str());
        assert_eq!(c.body["nodeId"], node);
        assert_eq!(c.body["expiresAt"], view["expiresAt"]);
        assert_eq!(c.body["intent"], view["intent"]);
        assert_eq!(c.body["request"], view["request"]);
        assert_eq!(
            c.body["contract"],
            json!({
                "requestSchema": view["requestSchema"],
                "resumeSchema": view["resumeSchema"],
                "outcomes": view["outcomes"],
                "typed": view["typed"],
            }),
            "{workflow}"
        );
    }

    // The extension refuses what the GET refuses, with the same codes
    // (`get` compares the two routes on every call).
    let (run, token) = pending(&s).await;
    let claims = claims_of(&token);
    let tampered = format!(
        "{}.{}",
        token.rsplit_once('.').unwrap().0,
        flip(token.rsplit_once('.').unwrap().1)
    );
    get(&s, &tampered)
        .await
        .expect(401, Some("interrupt_token_invalid"));
    get(&s, "not-a-token")
        .await
        .expect(401, Some("interrupt_token_invalid"));
    let expired = sign(
        "k1",
        K1,
        &Claims {
            a: now_ms() - 10 * 60_000,
            e: now_ms() - 1_000,
            ..claims.clone()
        },
    );
    get(&s, &expired).await.expect(410, Some("interrupt_expired"));
    context(&s, &expired).await.expect(410, Some("interrupt_expired"));
    let ghost = sign(
        "k1",
        K1,
        &Claims {
            i: format!("{TENANT}/no-such-interrupt-0123456789"),
            ..claims.clone()
        },
    );
    get(&s, &ghost).await.expect(404, Some("not_found"));
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    get(&s, &token)
        .await
        .expect(409, Some("interrupt_already_resolved"));
    context(&s, &token)
        .await
        .expect(409, Some("interrupt_already_resolved"));
}
