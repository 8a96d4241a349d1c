//! Run callbacks over HTTP: the egress guard at `POST /runs`, signed delivery
//! to a local receiver (with `[callbacks] allow_loopback`), redirects not
//! followed, the guard applied again at delivery, and the admin outbox.
//!
//! The delivery-time re-check of a host NAME that resolves to a refused
//! address is tested in the server crate (`callbacks::tests`), where the
//! resolver is injectable; here the URL is re-judged after a policy change.

mod common;

use common::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const SECRET: &str = "callback-secret-0123456789abcdef-xyz";

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// A minimal HTTP/1.1 receiver on 127.0.0.1: records each request and answers
/// `status` with `extra` headers.
async fn receiver(status: &'static str, extra: String) -> (u16, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    let extra = Arc::new(extra);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (tx, extra) = (tx.clone(), extra.clone());
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                let mut line = String::new();
                if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let h = h.trim_end().to_string();
                    if h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let len = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; len];
                reader.read_exact(&mut body).await.unwrap();
                let _ = tx.send(Received { path, headers, body });
                let answer =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n{extra}\r\n");
                let _ = write.write_all(answer.as_bytes()).await;
            });
        }
    });
    (port, rx)
}

/// The common test configuration plus `[callbacks]` (and `extra`).
fn dir_with(callbacks: &str, extra: &str) -> TestDir {
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(&format!("\n{extra}\n[callbacks]\n{callbacks}\n"));
    std::fs::write(dir.config_path(), config).unwrap();
    dir
}

fn strict() -> TestDir {
    dir_with(&format!("secret = \"{SECRET}\"\npoll_interval_ms = 50"), "")
}

fn loose() -> TestDir {
    dir_with(
        &format!("secret = \"{SECRET}\"\nallow_loopback = true\npoll_interval_ms = 50\ntimeout_ms = 5000"),
        "",
    )
}

async fn outbox(s: &Server, query: &str) -> Vec<Value> {
    let r = s.get(&format!("/admin/outbox{query}"), ADMIN).await;
    r.expect(200, None);
    r.body["items"].as_array().expect("items").clone()
}

/// Polls the admin outbox until `pred` holds for some callback row.
async fn wait_callback(s: &Server, secs: u64, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let items = outbox(s, "?kind=callback").await;
        if let Some(found) = items.iter().find(|i| pred(i)) {
            return found.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no matching callback row in {items:?}\nserver output:\n{}",
            s.output()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a callback arrives")
        .expect("receiver alive")
}

/// URLs the egress guard refuses at create, each with the words its reason must contain.
const REFUSED: &[(&str, &str)] = &[
    ("http://example.com/hook", "https"),
    ("ftp://example.com/hook", "https"),
    ("not a url", "absolute URL"),
    ("https://localhost/hook", "localhost"),
    ("https://api.localhost/hook", "localhost"),
    ("https://127.0.0.1/hook", "loopback"),
    ("https://127.1/hook", "loopback"),
    ("https://2130706433/hook", "loopback"),
    ("https://0177.0.0.1/hook", "loopback"),
    ("https://0x7f.1/hook", "loopback"),
    ("https://[::1]/hook", "loopback"),
    ("https://[::ffff:7f00:1]/hook", "loopback"),
    ("https://[::ffff:127.0.0.1]/hook", "loopback"),
    ("https://[::127.0.0.1]/hook", "loopback"),
    ("https://[64:ff9b::7f00:1]/hook", "loopback"),
    ("https://[2002:7f00:1::]/hook", "loopback"),
    ("https://10.1.2.3/hook", "RFC 1918"),
    ("https://172.16.0.1/hook", "RFC 1918"),
    ("https://192.168.0.10/hook", "RFC 1918"),
    ("https://169.254.1.1/hook", "link-local"),
    ("https://[fe80::1]/hook", "link-local"),
    ("https://[fc00::1]/hook", "ULA"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://metadata.google.internal/computeMetadata/v1/", "metadata"),
    ("https://[fd00:ec2::254]/", "metadata"),
    ("https://0.0.0.0/hook", "0.0.0.0/8"),
    ("https://[::]/hook", "unspecified"),
    ("https://255.255.255.255/hook", "broadcast"),
    ("https://224.0.0.1/hook", "multicast"),
    ("https://100.64.0.1/hook", "CGNAT"),
    ("https://192.0.2.1/hook", "documentation"),
    ("https://198.18.0.1/hook", "benchmarking"),
    ("https://[2001:db8::1]/hook", "documentation"),
    (
        "https://user:secret@hooks.example.com/hook",
        "user name or password",
    ),
];

#[tokio::test]
async fn create_refuses_every_guarded_callback_url_naming_the_field_and_writes_nothing() {
    let dir = strict();
    let s = Server::start(&dir).await;
    let d = s
        .call(reqwest::Method::GET, "/.well-known/openwop", None, None, &[])
        .await;
    assert_eq!(d.body["interrupt"]["callbackDelivery"], true, "{}", d.body);

    for (url, words) in REFUSED {
        let r = s
            .post(
                "/runs",
                OWNER,
                &json!({"workflowId": "conformance-approval", "callbackUrl": url}),
            )
            .await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], "callbackUrl", "{url}: {}", r.body);
        let message = r.body["message"].as_str().unwrap();
        assert!(message.contains(words), "{url}: {message:?} should say {words:?}");
    }
    // Nothing was written: no run (hence no interrupt), no outbox row.
    let pending = s.get("/interrupts", ADMIN).await;
    pending.expect(200, None);
    assert_eq!(pending.body["interrupts"], json!([]), "no run was started");
    assert!(outbox(&s, "").await.is_empty());

    // A public https URL is accepted (normalized) and the run starts.
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval", "callbackUrl": "https://Example.COM:443/a/../hook"}),
        )
        .await;
    let row = wait_callback(&s, 10, |_| true).await;
    assert_eq!(row["address"], "https://example.com/hook");
    assert_eq!(row["runId"], run.as_str());
    assert_eq!(row["reason"], "interrupt.requested");
}

#[tokio::test]
async fn without_a_callbacks_secret_the_host_refuses_callback_url_and_does_not_advertise_delivery() {
    let (s, _dir) = Server::start_fresh().await;
    let d = s
        .call(reqwest::Method::GET, "/.well-known/openwop", None, None, &[])
        .await;
    assert_eq!(d.body["interrupt"]["callbackDelivery"], false);
    let r = s
        .post(
            "/runs",
            OWNER,
            &json!({"workflowId": "conformance-noop", "callbackUrl": "https://example.com/hook"}),
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "callbackUrl");
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("does not deliver callbacks"));
}

#[tokio::test]
async fn a_local_receiver_gets_signed_callbacks_for_the_interrupt_and_the_run_end() {
    let (port, mut inbox) = receiver("200 OK", String::new()).await;
    let dir = loose();
    let s = Server::start(&dir).await;
    let url = format!("http://127.0.0.1:{port}/hook?x=1");
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval", "callbackUrl": url}),
        )
        .await;

    let first = next(&mut inbox).await;
    assert_eq!(first.path, "/hook?x=1");
    assert_eq!(first.header("content-type"), Some("application/json"));
    let signature = first
        .header("openwop-signature")
        .expect("signature header")
        .to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // The receiver's check: HMAC-SHA256(secret, "<t>.<body>") in hex, t recent.
    tollgate::callback::verify(SECRET, &signature, &first.body, now, 300).expect("valid signature");
    assert!(tollgate::callback::verify(
        "another-secret-0123456789abcdef",
        &signature,
        &first.body,
        now,
        300
    )
    .is_err());
    let mut tampered = first.body.clone();
    tampered.push(b' ');
    assert!(tollgate::callback::verify(SECRET, &signature, &tampered, now, 300).is_err());
    // Independent recomputation of v1 (what a receiver in any language does).
    {
        use sha2::{Digest, Sha256};
        let t = signature.split(',').next().unwrap().trim_start_matches("t=");
        let v1 = signature.split(',').nth(1).unwrap().trim_start_matches("v1=");
        // HMAC per RFC 2104 with SHA-256 (block size 64).
        let mut key = SECRET.as_bytes().to_vec();
        key.resize(64, 0);
        let ipad: Vec<u8> = key.iter().map(|b| b ^ 0x36).collect();
        let opad: Vec<u8> = key.iter().map(|b| b ^ 0x5c).collect();
        let inner = Sha256::new()
            .chain_update(&ipad)
            .chain_update(t.as_bytes())
            .chain_update(b".")
            .chain_update(&first.body)
            .finalize();
        let outer = Sha256::new().chain_update(&opad).chain_update(inner).finalize();
        assert_eq!(hex::encode(outer), v1);
    }

    let b = first.json();
    assert_eq!(b["type"], "interrupt.requested");
    assert_eq!(b["runId"], run.as_str());
    assert_eq!(b["workflowId"], "conformance-approval");
    assert_eq!(b["nodeId"], "gate");
    assert_eq!(b["runStatus"], "waiting-approval");
    assert_eq!(b["payload"]["kind"], "approval");
    let view = s.interrupt(&run, "gate").await;
    assert_eq!(b["interruptId"], view["interruptId"]);
    assert_eq!(b["id"], format!("{run}#{}", b["sequence"]));
    assert!(first.header("openwop-delivery").is_some());
    // The sequence is the event's own.
    let events = s.events(&run).await;
    let requested = of_type(&events, "interrupt.requested", Some("gate"))[0];
    assert_eq!(requested["sequence"], b["sequence"]);

    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    let end = next(&mut inbox).await;
    let e = end.json();
    assert_eq!(e["type"], "run.completed");
    assert_eq!(e["runStatus"], "completed");
    assert!(e.get("nodeId").is_none());
    tollgate::callback::verify(
        SECRET,
        end.header("openwop-signature").unwrap(),
        &end.body,
        now,
        300,
    )
    .expect("valid signature");

    // Both rows are recorded as sent, with the receiver's status.
    wait_callback(&s, 10, |r| {
        r["reason"] == "run.completed" && r["status"] == "sent"
    })
    .await;
    let rows = outbox(&s, "?kind=callback&status=sent").await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["responseStatus"], 200);
        assert_eq!(r["attempts"], 1);
        assert_eq!(r["deliveredVia"], "http");
        assert_eq!(r["address"], url.as_str());
    }
    assert_eq!(rows[0]["reason"], "run.completed");
    assert_eq!(rows[1]["reason"], "interrupt.requested");
    assert!(
        tokio::time::timeout(Duration::from_millis(500), inbox.recv())
            .await
            .is_err(),
        "exactly two callbacks"
    );

    // A cancelled run reports its cancellation.
    let run2 = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval", "callbackUrl": url}),
        )
        .await;
    assert_eq!(next(&mut inbox).await.json()["type"], "interrupt.requested");
    s.post(&format!("/runs/{}/cancel", seg(&run2)), OWNER, &json!({}))
        .await
        .expect(200, None);
    let c = next(&mut inbox).await.json();
    assert_eq!(c["type"], "run.cancelled");
    assert_eq!(c["runId"], run2.as_str());
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_is_recorded_as_a_failure() {
    let (target_port, mut target) = receiver("200 OK", String::new()).await;
    let (port, mut redirector) = receiver(
        "302 Found",
        format!("location: http://127.0.0.1:{target_port}/stolen\r\n"),
    )
    .await;
    let dir = loose();
    let s = Server::start(&dir).await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval", "callbackUrl": format!("http://127.0.0.1:{port}/hook")}),
        )
        .await;
    let got = next(&mut redirector).await;
    assert_eq!(got.json()["runId"], run.as_str());
    let row = wait_callback(&s, 10, |r| r["attempts"] == 1).await;
    assert_eq!(row["status"], "pending", "a redirect is retried later: {row}");
    assert_eq!(row["responseStatus"], 302);
    let error = row["lastError"].as_str().unwrap();
    assert!(
        error.contains("redirect") && error.contains("not followed"),
        "{error}"
    );
    assert!(
        tokio::time::timeout(Duration::from_secs(1), target.recv())
            .await
            .is_err(),
        "the redirect target got nothing"
    );
}

/// An admin of tenant `other`, with a key and a console password.
const OTHER_ADMIN: &str = "olga-admin-key-012345";
const OTHER_PASSWORD: &str = "olga-test-password";

fn other_admin() -> String {
    let phc = tollgate::passwords::hash(OTHER_PASSWORD).expect("hash");
    format!(
        "[[principals]]\nid = \"olga\"\ntenant = \"other\"\nroles = [\"admin\"]\nemail = \"olga@example.com\"\n\
         password_hash = {}\n\n[[api_keys]]\nkey = \"{OTHER_ADMIN}\"\nprincipal = \"olga\"\nscopes = [\"admin\"]\n",
        serde_json::to_string(&phc).unwrap()
    )
}

#[tokio::test]
async fn the_guard_runs_again_at_delivery_and_admin_can_retry() {
    // Created while loopback is allowed, but the worker has not run yet…
    let dir = dir_with(
        &format!("secret = \"{SECRET}\"\nallow_loopback = true\npoll_interval_ms = 600000"),
        &other_admin(),
    );
    let mut s = Server::start(&dir).await;
    let (port, mut inbox) = receiver("200 OK", String::new()).await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "conformance-approval", "callbackUrl": format!("http://127.0.0.1:{port}/hook")}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rows = outbox(&s, "?kind=callback").await;
    let row = &rows[0];
    assert_eq!(row["status"], "pending");
    assert_eq!(row["attempts"], 0);
    s.kill9();

    // …and delivered after a restart without allow_loopback: refused, given up, nothing sent.
    let config = std::fs::read_to_string(dir.config_path())
        .unwrap()
        .replace("allow_loopback = true", "allow_loopback = false")
        .replace("poll_interval_ms = 600000", "poll_interval_ms = 50");
    std::fs::write(dir.config_path(), config).unwrap();
    let s = Server::start(&dir).await;
    let row = wait_callback(&s, 10, |r| r["status"] == "failed").await;
    assert_eq!(row["runId"], run.as_str());
    assert_eq!(row["attempts"], 1);
    let error = row["lastError"].as_str().unwrap().to_string();
    assert!(error.contains("refused at delivery"), "{error}");
    assert!(row.get("responseStatus").is_none());
    assert!(
        tokio::time::timeout(Duration::from_millis(500), inbox.recv())
            .await
            .is_err(),
        "nothing was sent"
    );

    // The admin outbox: admin only; filters are checked and name the parameter.
    s.get("/admin/outbox", OWNER).await.expect(403, Some("forbidden"));
    let r = s.get("/admin/outbox?kind=fax", ADMIN).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "kind");
    let r = s.get("/admin/outbox?status=lost", ADMIN).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "status");
    let r = s.get("/admin/outbox?limit=0", ADMIN).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "limit");
    assert_eq!(outbox(&s, "?status=failed&kind=callback").await.len(), 1);
    assert!(outbox(&s, "?kind=email").await.is_empty());

    // Retry: admin only; queued again, refused again.
    let id = row["id"].as_i64().unwrap();
    let path = format!("/admin/outbox/{id}/retry");
    s.post(&path, OWNER, &json!({}))
        .await
        .expect(403, Some("forbidden"));
    // Another tenant's admin finds no such message, by key or on the
    // dashboard, and the message stays as it was.
    let r = s.get("/admin/outbox", OTHER_ADMIN).await;
    r.expect(200, None);
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(0), "{}", r.body);
    s.post(&path, OTHER_ADMIN, &json!({}))
        .await
        .expect(404, Some("not_found"));
    let olga = Browser::sign_in(&s, "olga", OTHER_PASSWORD).await;
    let (status, _) = olga
        .post_form("/dashboard/outbox/retry", &[("id", &id.to_string())])
        .await;
    assert_eq!(status, 303, "the dashboard answers with the page again");
    let (status, page) = olga.page("/dashboard/outbox").await;
    assert_eq!(status, 200);
    assert!(page.contains(&format!("no outbox message {id}")), "{page}");
    let opaque = run.split('/').nth(1).unwrap();
    assert!(!page.contains(opaque), "another tenant's message shown");
    let rows = outbox(&s, "?kind=callback").await;
    let unchanged = rows.iter().find(|r| r["id"] == id).expect("the message");
    assert_eq!(
        (unchanged["status"].as_str(), unchanged["attempts"].as_i64()),
        (Some("failed"), Some(1))
    );
    let r = s.post(&path, ADMIN, &json!({})).await;
    r.expect(200, None);
    assert_eq!(r.body["id"], id);
    assert_eq!(r.body["attempts"], 0);
    let again = wait_callback(&s, 10, |r| {
        r["id"] == id && r["status"] == "failed" && r["attempts"] == 1
    })
    .await;
    assert!(again["lastError"]
        .as_str()
        .unwrap()
        .contains("refused at delivery"));
    // Unknown, malformed, or not failed: refused.
    s.post("/admin/outbox/999999/retry", ADMIN, &json!({}))
        .await
        .expect(404, Some("not_found"));
    let r = s.post("/admin/outbox/abc/retry", ADMIN, &json!({})).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "outboxId");
}

#[tokio::test]
async fn the_admin_outbox_lists_dev_outbox_mail_beside_callbacks() {
    let dir = dir_with(
        &format!("secret = \"{SECRET}\"\npoll_interval_ms = 50"),
        r#"
[[principals]]
id = "mia"
email = "mia@example.com"
groups = ["reviewers"]

[[token_keys]]
kid = "k1"
secret = "0123456789abcdef0123456789abcdef-token"

[notifications]
poll_interval_ms = 50
"#,
    );
    let s = Server::start(&dir).await;
    s.register(json!({"id": "mailed", "nodes": [gate("gate", json!({"title": "Mail me", "actions": ["accept", "reject"], "approverGroupRefs": ["reviewers"]}))]}))
        .await;
    let run = s
        .create_as(
            OWNER,
            json!({"workflowId": "mailed", "callbackUrl": "https://example.com/hook"}),
        )
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mail = loop {
        let mail = outbox(&s, "?kind=email&status=sent").await;
        if !mail.is_empty() || tokio::time::Instant::now() > deadline {
            break mail;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert_eq!(mail[0]["deliveredVia"], "dev-outbox");
    assert_eq!(mail[0]["recipient"], "mia");
    assert_eq!(mail[0]["address"], "mia@example.com");
    assert_eq!(mail[0]["runId"], run.as_str());
    // The stored message names the link by its token id; no usable token is kept.
    let message = mail[0]["message"].as_str().unwrap();
    assert!(message.contains("/t/[link "), "{message}");
    assert!(!message.contains("ow2."), "{message}");
    let callbacks = outbox(&s, "?kind=callback").await;
    assert_eq!(callbacks.len(), 1);
    assert_eq!(callbacks[0]["body"]["type"], "interrupt.requested");
    let all = outbox(&s, "?limit=10").await;
    assert_eq!(all.len(), 2);
    // Another tenant's admin view does not show this tenant's messages (eve is not admin: 403).
    s.get("/admin/outbox", EVE).await.expect(403, Some("forbidden"));
}

/// The callback configuration with delivery to loopback and a token signing key.
fn with_token_key() -> TestDir {
    dir_with(
        &format!("secret = \"{SECRET}\"\nallow_loopback = true\npoll_interval_ms = 50\ntimeout_ms = 5000"),
        "[[token_keys]]\nkid = \"cb\"\nsecret = \"0123456789abcdef0123456789abcdef-callback-token\"\n",
    )
}

/// `POST /interrupts/{token}` with no Authorization header.
async fn post_token(s: &Server, token: &str, resume_value: Value) -> Resp {
    s.call(
        reqwest::Method::POST,
        &format!("/interrupts/{token}"),
        None,
        Some(&json!({ "resumeValue": resume_value })),
        &[],
    )
    .await
}

/// An interrupt's callback carries a link for the run's owner, minted at
/// delivery and covered by the signature: the receiver resolves an external
/// event with it and no API key. An approval gate whose refs do not admit
/// the owner gets a view-only link. The stored body holds no token.
#[tokio::test]
async fn a_callback_carries_the_owners_token_which_resolves_without_an_api_key() {
    let (port, mut inbox) = receiver("200 OK", String::new()).await;
    let dir = with_token_key();
    let s = Server::start(&dir).await;
    s.register(json!({"id": "ext", "nodes": [{"id": "wait", "typeId": "core.interrupt", "config": {"kind": "external-event",
        "data": {"eventType": "order.shipped", "correlation": {"orderId": "o-1"}}}}]}))
        .await;
    s.register(json!({"id": "fin", "nodes": [gate("gate", json!({"title": "Finance only", "actions": ["accept"], "approverGroupRefs": ["finance"]}))]}))
        .await;
    let url = format!("http://127.0.0.1:{port}/hook");
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    };

    let run = s
        .create_as(OWNER, json!({"workflowId": "ext", "callbackUrl": url}))
        .await;
    let got = next(&mut inbox).await;
    // The signature covers the body as sent, token included.
    tollgate::callback::verify(
        SECRET,
        got.header("openwop-signature").unwrap(),
        &got.body,
        now(),
        300,
    )
    .expect("valid signature");
    let b = got.json();
    assert_eq!(b["type"], "interrupt.requested");
    assert_eq!(b["runId"], run.as_str());
    let link = &b["interruptToken"];
    assert_eq!(link["intent"], "resolve", "{b}");
    assert_eq!(link["recipient"], "owner");
    assert!(link["expiresAt"].is_string(), "{b}");
    let token = link["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("ow2.hs256.cb."), "{token}");

    // The receiver acts on it without an API key.
    let seen = s
        .call(
            reqwest::Method::GET,
            &format!("/interrupts/{token}"),
            None,
            None,
            &[],
        )
        .await;
    seen.expect(200, None);
    assert_eq!(seen.header("x-tollgate-intent"), Some("resolve"));
    post_token(&s, &token, json!({"orderId": "o-1"}))
        .await
        .expect(200, None);
    assert_eq!(s.snapshot(&run).await["status"], "completed");
    let end = next(&mut inbox).await.json();
    assert_eq!(end["type"], "run.completed");
    assert!(end.get("interruptToken").is_none(), "{end}");

    // Stored bodies hold no token.
    for row in outbox(&s, "?kind=callback").await {
        assert!(row["body"].get("interruptToken").is_none(), "{row}");
        assert!(!row.to_string().contains("ow2."), "{row}");
    }

    // An approval gate that does not admit the owner: a view-only link.
    let run = s
        .create_as(OWNER, json!({"workflowId": "fin", "callbackUrl": url}))
        .await;
    let got = next(&mut inbox).await;
    tollgate::callback::verify(
        SECRET,
        got.header("openwop-signature").unwrap(),
        &got.body,
        now(),
        300,
    )
    .expect("valid signature");
    let b = got.json();
    assert_eq!(b["runId"], run.as_str());
    let link = &b["interruptToken"];
    assert_eq!(link["intent"], "inspect", "{b}");
    assert_eq!(link["recipient"], "owner");
    let token = link["token"].as_str().unwrap();
    let seen = s
        .call(
            reqwest::Method::GET,
            &format!("/interrupts/{token}"),
            None,
            None,
            &[],
        )
        .await;
    seen.expect(200, None);
    assert_eq!(seen.header("x-tollgate-intent"), Some("inspect"));
    post_token(&s, token, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
    assert_eq!(s.snapshot(&run).await["status"], "waiting-approval");
}
