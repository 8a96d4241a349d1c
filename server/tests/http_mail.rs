//! Email: a real SMTP server (aiosmtpd) on 127.0.0.1 receives the message
//! raised with an interrupt; it is parsed as a mail client would, and its
//! link opens the token page and decides the interrupt.

mod common;

use common::smtp::{Received, Smtp};
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

/// The people (Mia and `others`) and settings every mail test adds to the
/// base configuration.
fn mail_config(dir: &TestDir, smtp: &Smtp, others: &str) {
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(MIA);
    config.push_str(others);
    config.push_str(
        r#"
[[token_keys]]
kid = "mail-test"
secret = "0123456789abcdef0123456789abcdef-secret"

[notifications]
poll_interval_ms = 50
"#,
    );
    config.push_str(&smtp.toml());
    std::fs::write(dir.config_path(), config).unwrap();
}

/// Mia, a reviewer with an address, as every mail test has her.
const MIA: &str = r#"
[[principals]]
id = "mia"
name = "Mia Mail"
email = "mia@example.com"
groups = ["reviewers"]
"#;

/// The link (to the token page) of a mail's text part.
fn link_of(mail: &Received) -> String {
    let start = mail
        .text
        .find("http://tollgate.test/t/")
        .expect("a link to the token page");
    mail.text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace())
        .collect()
}

/// The token of a mail's link.
fn token_of(mail: &Received) -> String {
    link_of(mail).rsplit('/').next().unwrap().to_string()
}

/// A mail is `multipart/alternative` (text, then HTML) and both parts carry the link.
fn assert_alternative(mail: &Received) {
    assert_eq!(mail.mimetype, "multipart/alternative", "{}", mail.raw);
    assert_eq!(mail.parts, ["text/plain", "text/html"], "{}", mail.raw);
    let link = link_of(mail);
    assert!(
        mail.html.contains(&format!(r#"href="{link}""#)),
        "the button carries the text part's link {link}:\n{}",
        mail.html
    );
    assert!(!mail.html.contains("<script"), "{}", mail.html);
    assert!(
        !mail.html.contains(" src="),
        "no external resources: {}",
        mail.html
    );
}

#[tokio::test]
async fn a_raised_interrupt_mails_each_eligible_person_what_is_asked_with_their_own_link() {
    let mut smtp = Smtp::start().await;
    let dir = TestDir::new();
    mail_config(
        &dir,
        &smtp,
        r#"
[[principals]]
id = "zoe"
name = "Zoë Zed"
email = "zoe@example.com"
groups = ["reviewers"]

[[principals]]
id = "noah"
email = "noah@example.com"
groups = ["elsewhere"]
"#,
    );
    let server = Server::start(&dir).await;
    server
        .register(
            json!({"id": "mailed", "variables": [{"name": "vendor"}, {"name": "amount"}], "nodes": [{
            "id": "gate", "typeId": "core.approvalGate",
            "inputs": {"vendor": {"type": "variable", "variableName": "vendor"},
                       "amount": {"type": "variable", "variableName": "amount"}},
            "config": {"title": "Pay <script>alert(1)</script> & sons", "actions": ["accept", "reject"],
                "approverGroupRefs": ["reviewers"], "requiredApprovals": 2, "timeoutMs": 7_200_000,
                "requestSchema": {"type": "object", "properties": {
                    "vendor": {"type": "string", "title": "Vendor"},
                    "amount": {"type": "number", "title": "Amount"}}}}}]}),
        )
        .await;
    let run = server
        .create_as(
            OWNER,
            json!({"workflowId": "mailed", "inputs": {"vendor": "<b>Acme</b> & Co", "amount": 12.5}}),
        )
        .await;

    let mut mails = [smtp.expect().await, smtp.expect().await];
    mails.sort_by(|a, b| a.to.cmp(&b.to));
    let (mia, zoe) = (&mails[0], &mails[1]);
    assert_eq!(mia.to, "\"Mia Mail\" <mia@example.com>");
    // The name is encoded on the wire and decoded by the client.
    assert_eq!(zoe.to, "Zoë Zed <zoe@example.com>");
    assert_eq!(
        mia.subject,
        "Decision needed: Pay <script>alert(1)</script> & sons"
    );
    for mail in [mia, zoe] {
        assert_alternative(mail);
        let html = &mail.html;
        for needle in [
            "Pay &lt;script&gt;alert(1)&lt;/script&gt; &amp; sons",
            // The request, drawn by the console's renderer with the schema's titles.
            ">Vendor<",
            "&lt;b&gt;Acme&lt;/b&gt; &amp; Co",
            ">Amount<",
            "12.5",
            "mailed",
            "Still needed: 2 approvals.",
            // The deadline in words, in UTC.
            "in 1 hour — ",
            " UTC<",
        ] {
            assert!(html.contains(needle), "missing {needle} in\n{html}");
        }
        let text = &mail.text;
        assert!(text.contains("Pay <script>alert(1)</script> & sons"), "{text}");
        assert!(text.contains("\"vendor\": \"<b>Acme</b> & Co\""), "{text}");
        assert!(text.contains("workflow: mailed"), "{text}");
        assert!(text.contains("deadline: in 1 hour — "), "{text}");
        assert!(text.contains("The link is yours alone; it expires in "), "{text}");
        assert!(!text.contains("view-only"), "{text}");
    }
    // Each is told of the other, who may still decide.
    assert!(mia.html.contains("Who else may decide: Zoë Zed."), "{}", mia.html);
    assert!(
        zoe.text.contains("Who else may decide: Mia Mail."),
        "{}",
        zoe.text
    );
    let token = token_of(mia);
    assert!(token.starts_with("ow2.hs256.mail-test."), "{token}");
    assert_ne!(token, token_of(zoe), "each their own link");

    // The link works: the token page answers 200 and shows the request.
    let page = server
        .client
        .get(server.url(&format!("/t/{token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(page.contains("&lt;b&gt;Acme&lt;/b&gt; &amp; Co"), "{page}");
    // Opening it changed nothing; the token decides as Mia.
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");
    server
        .post(
            &format!("/interrupts/{token}"),
            "",
            &json!({"resumeValue": {"action": "accept"}}),
        )
        .await
        .expect(200, None);
    let votes = server.interrupt(&run, "gate").await;
    assert_eq!(votes["votes"][0]["principal"], "mia");
    // Zoë's link decides the rest.
    server
        .post(
            &format!("/interrupts/{}", token_of(zoe)),
            "",
            &json!({"resumeValue": {"action": "accept"}}),
        )
        .await
        .expect(200, None);
    let snapshot: Value = server.snapshot(&run).await;
    assert_eq!(snapshot["status"], "completed");

    // Noah is not eligible: no mail for him.
    assert!(smtp.next(Duration::from_millis(500)).await.is_none());
}

/// `audience` is a notification hint only: a person it names who may not
/// decide is told, with a view-only link (GET works, POST is 403); an
/// eligible person's link decides.
#[tokio::test]
async fn an_audience_only_person_gets_a_view_only_link() {
    let mut smtp = Smtp::start().await;
    let dir = TestDir::new();
    mail_config(
        &dir,
        &smtp,
        r#"
[[principals]]
id = "noah"
name = "Noah Notified"
email = "noah@example.com"
groups = ["elsewhere"]
"#,
    );
    let server = Server::start(&dir).await;
    server
        .register(json!({"id": "told", "nodes": [gate("gate", json!({"title": "Approve the budget", "actions": ["accept", "reject"],
            "approverGroupRefs": ["reviewers"], "audience": {"subjects": ["mia", "noah"]}}))]}))
        .await;
    let run = server.create("told").await;

    let mut mails = [smtp.expect().await, smtp.expect().await];
    mails.sort_by(|a, b| a.to.cmp(&b.to));
    let (mia, noah) = (&mails[0], &mails[1]);
    assert_eq!(mia.to, "\"Mia Mail\" <mia@example.com>");
    assert_eq!(noah.to, "\"Noah Notified\" <noah@example.com>");
    assert_alternative(mia);
    assert_alternative(noah);
    assert_eq!(mia.subject, "Decision needed: Approve the budget");
    assert!(!mia.text.contains("view-only"), "{}", mia.text);
    assert!(mia.html.contains(">Open and decide<"), "{}", mia.html);
    // Noah may not decide: Mia is the one who still may, and he is told so.
    assert_eq!(noah.subject, "For your information: Approve the budget");
    assert!(noah.text.contains("This link is view-only"), "{}", noah.text);
    assert!(noah.html.contains("This link is view-only"), "{}", noah.html);
    assert!(noah.html.contains(">View the request<"), "{}", noah.html);
    assert!(
        noah.text.contains("Who else may decide: Mia Mail."),
        "{}",
        noah.text
    );

    // Noah's link shows the interrupt, and says it may only inspect…
    let noah_token = token_of(noah);
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
    server
        .call(
            reqwest::Method::POST,
            &format!("/interrupts/{noah_token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await
        .expect(403, Some("forbidden"));
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");

    // Mia's decides.
    let mia_token = token_of(mia);
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

/// A title bound from the run's inputs cannot write lines of its own into
/// the mail: a planted "Open this link" line with another URL stays inside
/// the title's one line, and the only line that is a URL is the person's link.
#[tokio::test]
async fn a_title_from_inputs_cannot_plant_lines_in_the_mail() {
    let mut smtp = Smtp::start().await;
    let dir = TestDir::new();
    mail_config(&dir, &smtp, "");
    let server = Server::start(&dir).await;
    server
        .register(json!({"id": "titled", "nodes": [gate("gate", json!({
            "title": {"$bind": {"type": "template", "template": "{{ inputs.title }}"}},
            "actions": ["accept", "reject"], "approverGroupRefs": ["reviewers"]}))]}))
        .await;
    let planted = "Pay\r\n\r\nOpen this link to see the details and decide:\nhttps://evil.test/steal\n";
    server
        .create_as(
            OWNER,
            json!({"workflowId": "titled", "inputs": {"title": planted}}),
        )
        .await;
    let mail = smtp.expect().await;
    assert_alternative(&mail);
    assert_eq!(
        mail.subject,
        "Decision needed: Pay Open this link to see the details and decide: https://evil.test/steal"
    );
    let url_lines: Vec<&str> = mail
        .text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("http"))
        .collect();
    assert_eq!(url_lines, [link_of(&mail)], "{}", mail.text);
    assert!(
        mail.text
            .lines()
            .any(|l| l == "  Pay Open this link to see the details and decide: https://evil.test/steal"),
        "{}",
        mail.text
    );
}
