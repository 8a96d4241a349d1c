//! Delivers the engine's outbox: email over SMTP (lettre), or into the dev
//! outbox (its text part) when no `[smtp]` is configured. Each message is
//! `multipart/alternative` (`tollgate_app::mail`) and carries the
//! recipient's own link to the console's token page, minted at delivery by
//! `Engine::mail_link_for`: resolve-capable for someone who may decide,
//! view-only (and said so) for anyone else.

use crate::config::{Config, SmtpConfig, SmtpTls};
use futures_util::FutureExt;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use tollgate::engine::outbox::OutboxItem;
use tollgate::engine::MailLink;
use tollgate::text::headline;
use tollgate::token::Intent;
use tollgate::wire::when;
use tollgate::wire::MailReason;
use tollgate::{Engine, EngineError};
use tollgate_app::mail::{Link, Mail};

pub fn transport(smtp: &SmtpConfig) -> anyhow::Result<AsyncSmtpTransport<Tokio1Executor>> {
    let builder = match smtp.tls {
        SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&smtp.host),
        SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host)?,
        SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host)?,
    };
    let mut builder = builder.port(smtp.port).timeout(Some(Duration::from_secs(20)));
    if let (Some(user), Some(password)) = (&smtp.user, &smtp.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(builder.build())
}

/// Delivers due messages until the process stops.
pub async fn run(engine: Engine, config: Arc<Config>) {
    let smtp = match &config.smtp {
        Some(s) => match transport(s) {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::error!(error = %e, "smtp configuration unusable; mail stays in the outbox");
                return;
            }
        },
        None => {
            tracing::warn!("no [smtp] configured: mail goes to the dev outbox (the outbox table, delivered_via = dev-outbox)");
            None
        }
    };
    let reminder_ms = config
        .notifications
        .reminder_before_minutes
        .map(|m| m as i64 * 60_000);
    loop {
        if let Some(before) = reminder_ms {
            if let Err(e) = engine.queue_reminders(before).await {
                tracing::error!(error = %e, "queueing reminders failed");
            }
        }
        // A claim holds its messages for the outbox lease: few enough that
        // even at the SMTP timeout each is sent before the lease runs out.
        match engine.outbox_due(MAIL_BATCH).await {
            Ok(items) => {
                let full = items.len() as i64 == MAIL_BATCH;
                for item in items {
                    // A message that panics (a header lettre cannot write)
                    // fails on its own; the worker goes on with the others.
                    let id = item.id;
                    let delivered = AssertUnwindSafe(deliver(&engine, &config, smtp.as_ref(), item))
                        .catch_unwind()
                        .await;
                    if delivered.is_err() {
                        tracing::error!(id, "building or sending a mail panicked; it is retried later");
                        let _ = engine
                            .outbox_failed(id, "the mail could not be built".into())
                            .await;
                    }
                }
                if full {
                    continue;
                }
            }
            Err(e) => tracing::error!(error = %e, "reading the outbox failed"),
        }
        tokio::time::sleep(Duration::from_millis(
            config.notifications.poll_interval_ms.max(50),
        ))
        .await;
    }
}

/// Messages claimed at a time (see `OUTBOX_LEASE_MS`: 5 × the 20 s SMTP timeout fits).
const MAIL_BATCH: i64 = 5;

async fn deliver(
    engine: &Engine,
    config: &Config,
    smtp: Option<&AsyncSmtpTransport<Tokio1Executor>>,
    item: OutboxItem,
) {
    let recipient = match engine.principal(&item.recipient).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            let _ = engine
                .outbox_drop(item.id, "recipient no longer exists".into())
                .await;
            return;
        }
        Err(e) => return tracing::error!(error = %e, "directory read failed"),
    };
    if item.mail_reason() == Some(MailReason::Escalation) {
        let mail = Mail {
            recipient: headline(&recipient.name),
            intro: format!(
                "The approval \"{node}\" in run {run} reached its deadline without a decision.",
                node = item.node_id,
                run = item.run_id,
            ),
            title: format!("Approval \"{}\" timed out", item.node_id),
            workflow: None,
            request: None,
            deadline: None,
            others: Vec::new(),
            approvals_needed: None,
            link: None,
            note: "It was rejected, as every timeout is; nothing more can be decided on it.".into(),
        };
        let subject = format!("Escalation: approval \"{}\" timed out", item.node_id);
        return send(engine, config, smtp, &item, &recipient, subject, &mail).await;
    }
    // The link is minted at delivery time so it never outlives the
    // interrupt; the engine decides what it may do for this recipient.
    let mail_link = match engine.mail_link_for(&item.interrupt_id, &recipient).await {
        Ok(link) => link,
        Err(EngineError::NotFound(_)) => {
            let _ = engine
                .outbox_drop(item.id, "the interrupt is no longer open".into())
                .await;
            return;
        }
        Err(EngineError::Forbidden(why)) => {
            let _ = engine.outbox_drop(item.id, why).await;
            return;
        }
        Err(e) => {
            let _ = engine.outbox_failed(item.id, e.to_string()).await;
            return;
        }
    };
    let base = config
        .server
        .public_url
        .as_deref()
        .unwrap_or_default()
        .trim_end_matches('/');
    let link = format!("{base}/t/{}", mail_link.token);
    let (view, still) = match (
        engine.inspect_by_token(&mail_link.token).await,
        engine.still_open_for(&item.interrupt_id, &recipient.id).await,
    ) {
        (Ok((view, _)), Ok(still)) => (view, still),
        // Decided between the mint and now: nothing left to ask.
        (
            Err(EngineError::NotFound(_) | EngineError::AlreadyResolved(_) | EngineError::RunTerminal(_)),
            _,
        )
        | (_, Err(EngineError::NotFound(_))) => {
            let _ = engine
                .outbox_drop(item.id, "the interrupt is no longer open".into())
                .await;
            return;
        }
        (Err(e), _) | (_, Err(e)) => {
            let _ = engine.outbox_failed(item.id, e.to_string()).await;
            return;
        }
    };
    let MailLink {
        token: _,
        expires_at: expires,
        intent,
        sign_in_to_decide,
    } = mail_link;
    let decides = intent == Intent::Resolve || sign_in_to_decide;
    // Titles are one line since they are made; one stored before may not be.
    let title = headline(&view.title);
    let reminder = item.mail_reason() == Some(MailReason::Reminder);
    let subject = match (reminder, decides) {
        (true, _) => format!("Reminder: {title}"),
        (_, true) => format!("Decision needed: {title}"),
        (_, false) => format!("For your information: {title}"),
    };
    let intro = match (reminder, decides) {
        (true, true) => "A decision you can make is still open and its deadline is near:",
        (true, false) => "A request you were told about is still open and its deadline is near:",
        (false, true) => "A workflow is waiting for your decision:",
        (false, false) => "A workflow is waiting for a decision, and you were asked to be told:",
    };
    let (open, what, label) = if sign_in_to_decide {
        (
            "Open this link to see the details, then sign in to Tollgate to decide:",
            "This gate is decided only by signed-in approvers: the link shows the request but cannot decide it.",
            "View the request",
        )
    } else if decides {
        (
            "Open this link to see the details and decide:",
            "Opening it changes nothing; deciding happens on the page.",
            "Open and decide",
        )
    } else {
        (
            "Open this link to see the details (view only):",
            "This link is view-only: it shows the request, but you may not decide it.",
            "View the request",
        )
    };
    // Said in UTC, naming the zone: the server does not know the reader's.
    let say = |at| when::describe(at, engine.now(), &jiff::tz::TimeZone::UTC);
    let deadline = view.deadline.as_deref().and_then(when::parse_rfc3339).map(say);
    let has_request = view.request.as_object().is_some_and(|m| !m.is_empty());
    let mail = Mail {
        recipient: headline(&recipient.name),
        intro: intro.into(),
        title,
        workflow: Some(view.workflow_id.clone()),
        request: has_request.then(|| (view.request.clone(), view.request_schema.clone())),
        deadline,
        others: still.others.iter().map(|name| headline(name)).collect(),
        approvals_needed: still.approvals_needed,
        link: Some(Link {
            url: link,
            label: label.into(),
            open: open.into(),
        }),
        note: format!("The link is yours alone; it expires {}. {what}", say(expires)),
    };
    send(engine, config, smtp, &item, &recipient, subject, &mail).await
}

async fn send(
    engine: &Engine,
    config: &Config,
    smtp: Option<&AsyncSmtpTransport<Tokio1Executor>>,
    item: &OutboxItem,
    recipient: &tollgate::Principal,
    subject: String,
    mail: &Mail,
) {
    let text = mail.text();
    // A header ends at a line break: the subject is one line.
    let subject = headline(&subject);
    // The outbox keeps the text part (with its link redacted).
    let rendered = format!("To: {}\nSubject: {subject}\n\n{text}", item.address);
    let Some(smtp) = smtp else {
        if let Err(e) = engine.outbox_delivered(item.id, "dev-outbox", rendered).await {
            tracing::error!(error = %e, "recording delivery failed");
        }
        return;
    };
    let from = config.smtp.as_ref().map(|s| s.from.clone()).unwrap_or_default();
    let message = (|| -> anyhow::Result<Message> {
        Ok(Message::builder()
            .from(from.parse::<Mailbox>()?)
            .to(Mailbox::new(
                Some(headline(&recipient.name)),
                item.address.parse()?,
            ))
            .subject(subject)
            .multipart(MultiPart::alternative_plain_html(text, mail.html()))?)
    })();
    let result = match message {
        Ok(m) => smtp.send(m).await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let recorded = match result {
        Ok(()) => engine.outbox_delivered(item.id, "smtp", rendered).await,
        Err(e) => {
            tracing::warn!(id = item.id, error = %e, "mail delivery failed; will retry");
            engine.outbox_failed(item.id, e).await
        }
    };
    if let Err(e) = recorded {
        tracing::error!(error = %e, "recording delivery state failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name with a line break makes lettre panic as it writes the `To`
    /// header; the mailer writes it as one line.
    #[test]
    fn a_name_or_subject_with_line_breaks_is_written_as_one_line() {
        let name = "Pat\r\nBcc: x@evil.test";
        assert_eq!(headline(name), "Pat Bcc: x@evil.test");
        let message = Message::builder()
            .from("tollgate@example.test".parse::<Mailbox>().unwrap())
            .to(Mailbox::new(
                Some(headline(name)),
                "pat@example.test".parse().unwrap(),
            ))
            .subject(headline("Pay\nX-Evil: 1"))
            .body(String::from("hello"))
            .unwrap();
        let head = String::from_utf8(message.formatted()).unwrap();
        let headers: Vec<&str> = head.split("\r\n\r\n").next().unwrap().split("\r\n").collect();
        assert!(
            !headers
                .iter()
                .any(|h| h.starts_with("Bcc") || h.starts_with("X-Evil")),
            "{headers:?}"
        );
    }
}
