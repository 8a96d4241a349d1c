//! Console sign-in over HTTP against the real binary: failed attempts are
//! throttled per account and per client address (429 with Retry-After),
//! the post-sign-in redirect stays on the site whatever `next` says, and a
//! password removed (or the person removed, or the password changed) with
//! the CLI on the database ends open sessions within seconds.

mod common;

use common::*;
use reqwest::header::{COOKIE, LOCATION, RETRY_AFTER, SET_COOKIE};
use std::net::IpAddr;
use std::time::Duration;

const ANN_PASS: &str = "ann-password-123";
const BOB_PASS: &str = "bob-password-456";

/// A server whose `ann` and `bob` have passwords, with the given `[sign_in]` lines.
async fn start(sign_in: &str) -> (Server, TestDir) {
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    for (id, pass) in [("ann", ANN_PASS), ("bob", BOB_PASS)] {
        let phc = tollgate::passwords::hash(pass).unwrap();
        // The harness's principals have no password; give these two one.
        config = config.replacen(
            &format!("[[principals]]\nid = \"{id}\"\n"),
            &format!("[[principals]]\nid = \"{id}\"\npassword_hash = \"{phc}\"\n"),
            1,
        );
    }
    config.push_str(&format!("\n[sign_in]\n{sign_in}\n"));
    std::fs::write(dir.config_path(), config).unwrap();
    let s = Server::start(&dir).await;
    (s, dir)
}

/// A browser-like client from `from` (any 127.x address reaches the server).
fn client(from: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(from.parse::<IpAddr>().unwrap())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

struct Answer {
    status: u16,
    location: Option<String>,
    retry_after: Option<String>,
    cookie: Option<String>,
}

async fn sign_in(s: &Server, c: &reqwest::Client, user: &str, password: &str, next: Option<&str>) -> Answer {
    let mut form = vec![("user", user), ("password", password)];
    if let Some(n) = next {
        form.push(("next", n));
    }
    let res = c
        .post(s.url("/signin"))
        .header("origin", "http://tollgate.test")
        .form(&form)
        .send()
        .await
        .unwrap();
    let h = |name| {
        res.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    Answer {
        status: res.status().as_u16(),
        location: h(LOCATION),
        retry_after: h(RETRY_AFTER),
        cookie: h(SET_COOKIE).map(|c| c.split(';').next().unwrap().to_string()),
    }
}

#[track_caller]
fn signed_in(a: &Answer) -> String {
    assert_eq!(a.status, 303, "signed in");
    assert!(
        !a.location.as_deref().unwrap_or("").contains("error"),
        "{:?}",
        a.location
    );
    a.cookie.clone().expect("a session cookie")
}

#[track_caller]
fn refused(a: &Answer) {
    assert_eq!(a.status, 303);
    assert!(
        a.location.as_deref().unwrap().starts_with("/signin?error=1"),
        "{:?}",
        a.location
    );
}

#[track_caller]
fn throttled(a: &Answer) -> u64 {
    assert_eq!(a.status, 429, "throttled");
    a.retry_after
        .as_deref()
        .expect("Retry-After")
        .parse::<u64>()
        .expect("Retry-After in seconds")
}

#[tokio::test]
async fn failed_attempts_are_throttled_per_account() {
    let (s, _dir) = start("account_attempts = 3\naccount_refill_seconds = 600\naddress_attempts = 50").await;
    let (here, there) = (client("127.0.0.1"), client("127.0.0.2"));
    for _ in 0..3 {
        refused(&sign_in(&s, &here, "ann", "wrong", None).await);
    }
    // The fourth try, from another address, even with the right password: 429.
    let wait = throttled(&sign_in(&s, &there, "ann", ANN_PASS, None).await);
    assert!((1..=600).contains(&wait), "{wait}");
    throttled(&sign_in(&s, &here, "ann", ANN_PASS, None).await);
    // The 429 page says why, and is the sign-in page again.
    let res = here
        .post(s.url("/signin"))
        .header("origin", "http://tollgate.test")
        .form(&[("user", "ann"), ("password", ANN_PASS)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 429);
    let page = res.text().await.unwrap();
    assert!(page.contains("Too many sign-in attempts"), "{page}");
    // Another account from the same address is not affected, and a success
    // refills that account's bucket: after 2 failures and a success, bob
    // has 3 failures to go before 429.
    for _ in 0..2 {
        refused(&sign_in(&s, &here, "bob", "wrong", None).await);
    }
    signed_in(&sign_in(&s, &here, "bob", BOB_PASS, None).await);
    for _ in 0..3 {
        refused(&sign_in(&s, &here, "bob", "wrong", None).await);
    }
    throttled(&sign_in(&s, &here, "bob", BOB_PASS, None).await);
    // An unknown name is throttled the same way (no hint that it does not exist).
    for _ in 0..3 {
        refused(&sign_in(&s, &here, "nobody", "x", None).await);
    }
    throttled(&sign_in(&s, &here, "nobody", "x", None).await);
}

#[tokio::test]
async fn failed_attempts_are_throttled_per_address() {
    let (s, _dir) = start("account_attempts = 50\naddress_attempts = 4\naddress_refill_seconds = 600").await;
    let (noisy, quiet) = (client("127.0.0.3"), client("127.0.0.4"));
    for user in ["cat", "dan", "boss", "eve"] {
        refused(&sign_in(&s, &noisy, user, "guess", None).await);
    }
    // Any account from that address now waits, the right password included.
    let wait = throttled(&sign_in(&s, &noisy, "ann", ANN_PASS, None).await);
    assert!((1..=600).contains(&wait), "{wait}");
    // The same account from another address signs in.
    signed_in(&sign_in(&s, &quiet, "ann", ANN_PASS, None).await);
}

#[tokio::test]
async fn the_redirect_after_sign_in_stays_on_the_site() {
    let (s, _dir) = start("account_attempts = 100\naddress_attempts = 100").await;
    let c = client("127.0.0.1");
    for (next, to) in [
        ("/dashboard", "/dashboard"),
        (
            "/runs/acme~2Fabc/interrupts/gate?x=1",
            "/runs/acme~2Fabc/interrupts/gate?x=1",
        ),
        ("/\t/evil.example", "/"),
        ("/%09/evil.example", "/"),
        ("/\r\n/evil.example", "/"),
        ("//evil.example", "/"),
        ("///evil.example", "/"),
        ("/\\evil.example", "/"),
        ("\\\\evil.example", "/"),
        ("/%2F/evil.example", "/"),
        ("/%5Cevil.example", "/"),
        ("/%252F%252Fevil.example", "/"),
        ("https://evil.example", "/"),
        ("http:evil.example", "/"),
        ("javascript:alert(1)", "/"),
        (" /evil", "/"),
        ("evil.example", "/"),
        ("", "/"),
    ] {
        let a = sign_in(&s, &c, "ann", ANN_PASS, Some(next)).await;
        signed_in(&a);
        assert_eq!(a.location.as_deref(), Some(to), "next={next:?}");
        // A failed attempt keeps only a safe `next` for the second try.
        let a = sign_in(&s, &c, "ann", "wrong", Some(next)).await;
        let back = a.location.unwrap();
        assert!(back.starts_with("/signin?error=1&next="), "{back}");
        let kept = back.split_once("&next=").unwrap().1;
        assert!(
            !kept.starts_with("%2F%2F") && !kept.contains("%5C") && !kept.contains("%09"),
            "{next:?} → {back}"
        );
    }
}

/// The inbox with `cookie`: 200 while signed in, a redirect to sign-in once the session ended.
async fn inbox(s: &Server, cookie: &str) -> u16 {
    client("127.0.0.1")
        .get(s.url("/"))
        .header("accept", "text/html")
        .header(COOKIE, cookie)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn ends_within(s: &Server, cookie: &str, secs: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    while tokio::time::Instant::now() < deadline {
        if inbox(s, cookie).await == 303 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    false
}

fn cli(args: &[&str], stdin: Option<&str>) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn directory_changes_by_the_cli_end_sessions_within_seconds() {
    let (s, dir) = start("account_attempts = 100\naddress_attempts = 100").await;
    let db = dir.db_url();
    let db = db.as_str();
    let c = client("127.0.0.1");
    let ann = signed_in(&sign_in(&s, &c, "ann", ANN_PASS, None).await);
    let ann_again = signed_in(&sign_in(&s, &c, "ann", ANN_PASS, None).await);
    let bob = signed_in(&sign_in(&s, &c, "bob", BOB_PASS, None).await);
    assert_eq!(inbox(&s, &ann).await, 200);
    assert_eq!(inbox(&s, &bob).await, 200);
    assert_eq!(inbox(&s, "tollgate_session=forged").await, 303);

    // ann's password is changed with the CLI: both of her sessions end, bob's stays.
    cli(
        &["user", "password", "--db", db, "--id", "ann", "--stdin"],
        Some("a-brand-new-pass\n"),
    );
    assert!(
        ends_within(&s, &ann, 12).await,
        "session ended after the password change"
    );
    assert!(ends_within(&s, &ann_again, 2).await);
    assert_eq!(inbox(&s, &bob).await, 200);
    refused(&sign_in(&s, &c, "ann", ANN_PASS, None).await);
    let ann = signed_in(&sign_in(&s, &c, "ann", "a-brand-new-pass", None).await);
    assert_eq!(inbox(&s, &ann).await, 200);

    // Removed: the session ends and the password no longer signs in.
    cli(&["user", "password", "--db", db, "--id", "ann", "--remove"], None);
    assert!(
        ends_within(&s, &ann, 12).await,
        "session ended after the password removal"
    );
    refused(&sign_in(&s, &c, "ann", "a-brand-new-pass", None).await);

    // bob is removed from the directory: his session ends, his API key stops working.
    s.get("/interrupts", BOB).await.expect(200, None);
    cli(&["user", "remove", "--db", db, "--id", "bob"], None);
    assert!(
        ends_within(&s, &bob, 12).await,
        "session ended after removing the person"
    );
    refused(&sign_in(&s, &c, "bob", BOB_PASS, None).await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = s.get("/interrupts", BOB).await;
        if r.status == 401 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "bob's key still works: {}",
            r.status
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
