//! Email: a real SMTP server on 127.0.0.1 receives the message raised with an
//! interrupt, and its link decides the interrupt.

mod common;

use common::smtp::smtp_server;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// Undoes quoted-printable soft line breaks and `=3D`.
fn unfold(message: &str) -> String {
    message.replace("=\n", "").replace("=3D", "=")
}

#[tokio::test]
async fn a_raised_interrupt_mails_each_eligible_person_their_own_link() {
    let (port, mut inbox) = smtp_server().await;
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(&format!(
        r#"
[[principals]]
id = "mia"
name = "Mia Mail"
email = "mia@example.com"
groups = ["reviewers"]

[[principals]]
id = "noah"
email = "noah@example.com"
groups = ["elsewhere"]

[[token_keys]]
kid = "mail-test"
secret = "0123456789abcdef0123456789abcdef-secret"

[smtp]
host = "127.0.0.1"
port = {port}
tls = "none"
from = "Tollgate <tollgate@example.com>"

[notifications]
poll_interval_ms = 50
"#
    ));
    std::fs::write(dir.config_path(), config).unwrap();
    let server = Server::start(&dir).await;
    server
        .register(json!({"id": "mailed", "nodes": [gate("gate", json!({"title": "Approve the mailing", "actions": ["accept", "reject"], "approverGroupRefs": ["reviewers"]}))]}))
        .await;
    let run = server.create("mailed").await;

    let message = tokio::time::timeout(Duration::from_secs(20), inbox.recv())
        .await
        .expect("mail arrives")
        .unwrap();
    let message = unfold(&message);
    assert!(
        message.contains("To: \"Mia Mail\" <mia@example.com>") || message.contains("mia@example.com"),
        "{message}"
    );
    assert!(
        message.contains("Subject: Decision needed: Approve the mailing"),
        "{message}"
    );
    let start = message.find("/t/").expect("a link to the token page") + 3;
    let token: String = message[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect();
    assert!(token.starts_with("ow2.hs256.mail-test."), "{token}");

    // API clients get a link for themselves from the inspect extension.
    let inspected = server.interrupt(&run, "gate").await;
    assert!(
        inspected["token"]
            .as_str()
            .unwrap()
            .starts_with("ow2.hs256.mail-test."),
        "{inspected}"
    );
    assert!(inspected["expiresAt"].is_string());

    // Opening the link changes nothing; the token inspects and then decides as Mia.
    let seen = server.get(&format!("/interrupts/{token}"), "").await;
    seen.expect(200, None);
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");
    let decided = server
        .post(
            &format!("/interrupts/{token}"),
            "",
            &json!({"resumeValue": {"action": "accept"}}),
        )
        .await;
    decided.expect(200, None);
    let snapshot: Value = server.snapshot(&run).await;
    assert_eq!(snapshot["status"], "completed");
    let votes = server.interrupt(&run, "gate").await;
    assert_eq!(votes["votes"][0]["principal"], "mia");

    // Noah is not eligible: no mail for him.
    assert!(tokio::time::timeout(Duration::from_millis(500), inbox.recv())
        .await
        .is_err());
}

/// The token in a mail's link to the token page.
fn link_token(message: &str) -> String {
    let start = message.find("/t/").expect("a link to the token page") + 3;
    message[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect()
}

/// `audience` is a notification hint only: a person it names who may not
/// decide is told, with a view-only link (GET works, POST is 403); an
/// eligible person's link decides.
#[tokio::test]
async fn an_audience_only_person_gets_a_view_only_link() {
    let (port, mut inbox) = smtp_server().await;
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(&format!(
        r#"
[[principals]]
id = "mia"
name = "Mia Mail"
email = "mia@example.com"
groups = ["reviewers"]

[[principals]]
id = "noah"
name = "Noah Notified"
email = "noah@example.com"
groups = ["elsewhere"]

[[token_keys]]
kid = "mail-test"
secret = "0123456789abcdef0123456789abcdef-secret"

[smtp]
host = "127.0.0.1"
port = {port}
tls = "none"
from = "Tollgate <tollgate@example.com>"

[notifications]
poll_interval_ms = 50
"#
    ));
    std::fs::write(dir.config_path(), config).unwrap();
    let server = Server::start(&dir).await;
    server
        .register(json!({"id": "told", "nodes": [gate("gate", json!({"title": "Approve the budget", "actions": ["accept", "reject"],
            "approverGroupRefs": ["reviewers"], "audience": {"subjects": ["mia", "noah"]}}))]}))
        .await;
    let run = server.create("told").await;

    let mut mia = None;
    let mut noah = None;
    while mia.is_none() || noah.is_none() {
        let message = tokio::time::timeout(Duration::from_secs(20), inbox.recv())
            .await
            .expect("both mails arrive")
            .unwrap();
        let message = unfold(&message);
        if message.contains("noah@example.com") {
            noah = Some(message);
        } else if message.contains("mia@example.com") {
            mia = Some(message);
        } else {
            panic!("mail for nobody told: {message}");
        }
    }
    let (mia, noah) = (mia.unwrap(), noah.unwrap());
    assert!(
        mia.contains("Subject: Decision needed: Approve the budget"),
        "{mia}"
    );
    assert!(!mia.contains("view-only"), "{mia}");
    assert!(
        noah.contains("Subject: For your information: Approve the budget"),
        "{noah}"
    );
    assert!(noah.contains("This link is view-only"), "{noah}");

    // Noah's link shows the interrupt, and says it may only inspect…
    let noah_token = link_token(&noah);
    let seen = server
        .call(
            reqwest::Method::GET,
            &format!("/interrupts/{noah_token}"),
            None,
            None,
            &[],
        )
        .await;
    seen.expect(200, None);
    assert_eq!(seen.header("x-tollgate-intent"), Some("inspect"), "{}", seen.body);
    // …but cannot decide.
    let refused = server
        .call(
            reqwest::Method::POST,
            &format!("/interrupts/{noah_token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await;
    refused.expect(403, Some("forbidden"));
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");

    // Mia's decides.
    let mia_token = link_token(&mia);
    let seen = server
        .call(
            reqwest::Method::GET,
            &format!("/interrupts/{mia_token}"),
            None,
            None,
            &[],
        )
        .await;
    seen.expect(200, None);
    assert_eq!(seen.header("x-tollgate-intent"), Some("resolve"));
    server
        .call(
            reqwest::Method::POST,
            &format!("/interrupts/{mia_token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await
        .expect(200, None);
    assert_eq!(server.snapshot(&run).await["status"], "completed");
    let votes = server.interrupt(&run, "gate").await;
    assert_eq!(votes["votes"][0]["principal"], "mia");
}
