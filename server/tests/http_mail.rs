//! Email: a real SMTP server on 127.0.0.1 receives the message raised with an
//! interrupt, and its link decides the interrupt.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A minimal SMTP receiver: accepts every message and hands over its DATA.
async fn smtp_server() -> (u16, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write.write_all(b"220 test ESMTP\r\n").await.unwrap();
                let mut in_data = false;
                let mut data = String::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    if in_data {
                        if line == "." {
                            in_data = false;
                            tx.send(std::mem::take(&mut data)).ok();
                            write.write_all(b"250 queued\r\n").await.unwrap();
                        } else {
                            data.push_str(&line);
                            data.push('\n');
                        }
                        continue;
                    }
                    let verb = line.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" | "HELO" => b"250 test\r\n",
                        "DATA" => {
                            in_data = true;
                            b"354 go ahead\r\n"
                        }
                        "QUIT" => {
                            write.write_all(b"221 bye\r\n").await.ok();
                            return;
                        }
                        _ => b"250 ok\r\n",
                    };
                    write.write_all(reply).await.unwrap();
                }
            });
        }
    });
    (port, rx)
}

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
