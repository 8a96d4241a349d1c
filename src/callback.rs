//! Run callbacks (`createRun.callbackUrl`): which events are delivered, the
//! body that is POSTed, and its signature.
//!
//! A run with a `callbackUrl` gets one callback per event of
//! [`CALLBACK_EVENTS`]: `interrupt.requested` (a decision is waiting; resolve
//! it through the API or a token link) and the run's end (`run.completed`,
//! `run.failed`, `run.cancelled`). The outbox row is written in the same
//! transaction as the event, so a committed event always has its callback and
//! a rolled-back command has none.
//!
//! An `interrupt.requested` callback (and a `node.suspended` one, should it
//! ever be delivered) carries, in [`TOKEN_MEMBER`], a link for the
//! callback's recipient — the run's owner, the principal that created the
//! run — so a receiver can inspect or resolve through `/interrupts/{token}`
//! without an API key: `{"token", "expiresAt", "intent", "recipient"}`. It
//! is added at each delivery attempt ([`crate::Engine::callback_body_at_delivery`]),
//! never stored with the outbox row; `intent` is `resolve` only when the
//! owner may decide the interrupt by the engine's rules (self-approval and
//! the gate's refs included), else `inspect`. There is no token when the
//! interrupt is no longer pending or no signing key is configured.
//!
//! Signature: header `OpenWOP-Signature: t=<unix seconds>,v1=<hex>` where
//! `v1 = hex(HMAC-SHA256(secret, "<t>.<body>"))` over the exact body bytes.
//! Receivers recompute it, compare in constant time and refuse a `t` too far
//! from their clock (replay window).

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use tollgate_wire::{EventType, RunStatus};

/// The event types that cause a callback.
pub const CALLBACK_EVENTS: [EventType; 4] = [
    EventType::InterruptRequested,
    EventType::RunCompleted,
    EventType::RunFailed,
    EventType::RunCancelled,
];

/// The body member that carries the recipient's link (see the module docs).
pub const TOKEN_MEMBER: &str = "interruptToken";

/// Whether a callback about this event type carries a link for its recipient.
pub fn carries_token(event_type: EventType) -> bool {
    matches!(
        event_type,
        EventType::InterruptRequested | EventType::NodeSuspended
    )
}

/// Adds the recipient's link to a callback body, in [`TOKEN_MEMBER`].
pub fn with_token(body: &mut Value, link: &crate::engine::CallbackLink) {
    body[TOKEN_MEMBER] = json!({
        "token": link.token,
        "expiresAt": crate::clock::rfc3339(link.expires_at),
        "intent": link.intent,
        "recipient": link.recipient,
    });
}

/// Name of the signature header.
pub const SIGNATURE_HEADER: &str = "OpenWOP-Signature";

/// Does this event type cause a callback?
pub fn is_callback_event(event_type: EventType) -> bool {
    CALLBACK_EVENTS.contains(&event_type)
}

/// What a callback says about one event.
pub struct CallbackEvent<'a> {
    pub event_type: EventType,
    pub sequence: i64,
    pub run_id: &'a str,
    pub workflow_id: &'a str,
    pub node_id: Option<&'a str>,
    pub interrupt_id: Option<&'a str>,
    /// The run's status after the command that emitted the event.
    pub run_status: RunStatus,
    pub timestamp: &'a str,
    pub payload: Value,
}

/// The JSON body POSTed to the callback URL.
///
/// `id` (`<runId>#<sequence>`) is the same on every retry, so receivers can
/// drop duplicates; `payload` is the event's v2 payload.
pub fn body(e: CallbackEvent<'_>) -> Value {
    let mut b = json!({
        "id": format!("{}#{}", e.run_id, e.sequence),
        "type": e.event_type,
        "runId": e.run_id,
        "workflowId": e.workflow_id,
        "sequence": e.sequence,
        "timestamp": e.timestamp,
        "runStatus": e.run_status,
        "payload": e.payload,
    });
    if let Some(n) = e.node_id {
        b["nodeId"] = json!(n);
    }
    if let Some(i) = e.interrupt_id {
        b["interruptId"] = json!(i);
    }
    b
}

fn v1(secret: &str, t: i64, body: &[u8]) -> Vec<u8> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

/// The `OpenWOP-Signature` header value for `body` sent at unix second `t`.
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", hex::encode(v1(secret, t, body)))
}

/// Checks a signature header as a receiver would: the MAC (constant time) and
/// that `t` is within `tolerance_secs` of `now_secs`.
pub fn verify(
    secret: &str,
    header: &str,
    body: &[u8],
    now_secs: i64,
    tolerance_secs: i64,
) -> Result<(), String> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => sigs.push(v.to_string()),
            _ => {}
        }
    }
    let t = t.ok_or("no t= in the signature header")?;
    if (now_secs - t).abs() > tolerance_secs {
        return Err(format!("timestamp {t} is outside the {tolerance_secs} s window"));
    }
    let expected = v1(secret, t, body);
    let ok = sigs
        .iter()
        .filter_map(|s| hex::decode(s).ok())
        .any(|s| s.len() == expected.len() && bool::from(s.ct_eq(&expected)));
    if ok {
        Ok(())
    } else {
        Err("no v1 signature matches".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_and_tampering_does_not() {
        let body = br#"{"type":"run.completed"}"#;
        let h = sign("s3cret", 1_700_000_000, body);
        assert!(h.starts_with("t=1700000000,v1="));
        assert!(verify("s3cret", &h, body, 1_700_000_010, 300).is_ok());
        assert!(verify("other", &h, body, 1_700_000_010, 300).is_err());
        assert!(verify("s3cret", &h, br#"{"type":"run.failed"}"#, 1_700_000_010, 300).is_err());
        assert!(verify("s3cret", &h, body, 1_700_001_000, 300).is_err());
        assert!(verify("s3cret", "v1=00", body, 1_700_000_000, 300).is_err());
    }

    #[test]
    fn only_an_interrupts_callback_carries_a_token_and_it_is_added_whole() {
        assert!(carries_token(EventType::InterruptRequested));
        assert!(carries_token(EventType::NodeSuspended));
        for t in [
            EventType::RunCompleted,
            EventType::RunFailed,
            EventType::RunCancelled,
        ] {
            assert!(!carries_token(t));
        }
        let mut body = json!({"type": "interrupt.requested", "runId": "acme/r"});
        with_token(
            &mut body,
            &crate::engine::CallbackLink {
                token: "ow2.hs256.k.p.m".into(),
                expires_at: 0,
                intent: crate::token::Intent::Inspect,
                recipient: "owner".into(),
            },
        );
        assert_eq!(
            body[TOKEN_MEMBER],
            json!({"token": "ow2.hs256.k.p.m", "expiresAt": "1970-01-01T00:00:00.000Z", "intent": "inspect", "recipient": "owner"})
        );
        assert_eq!(body["runId"], "acme/r");
    }

    #[test]
    fn the_callback_events_are_the_interrupt_and_the_run_end() {
        for t in [
            "interrupt.requested",
            "run.completed",
            "run.failed",
            "run.cancelled",
        ] {
            assert!(is_callback_event(t.parse().unwrap()));
        }
        for t in [
            "run.started",
            "node.suspended",
            "interrupt.resolved",
            "node.failed",
        ] {
            assert!(!is_callback_event(t.parse().unwrap()));
        }
    }
}
