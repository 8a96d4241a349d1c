//! Interrupt kinds (defined with the wire types) and re-entry keys.

pub use tollgate_wire::InterruptKind;

/// The deterministic re-entry key of one invocation: run, node and visit index.
/// A node reached again over an edge gets a new visit index, hence a new key.
pub fn reentry_key(run_id: &str, node_id: &str, visit: i64) -> String {
    format!("{run_id}:{node_id}:{visit}")
}

/// The `$defs` member of the payload schema that describes each kind's `data`.
fn data_def(kind: InterruptKind) -> &'static str {
    match kind {
        InterruptKind::Approval => "ApprovalData",
        InterruptKind::Clarification => "ClarificationData",
        InterruptKind::ExternalEvent => "ExternalEventData",
        InterruptKind::Custom => "CustomData",
        InterruptKind::ConversationStart => "ConversationStartData",
        InterruptKind::ConversationExchange => "ConversationExchangeData",
        InterruptKind::ConversationClose => "ConversationCloseData",
        InterruptKind::LowConfidence => "LowConfidenceData",
        InterruptKind::Credential => "CredentialData",
    }
}

/// The OpenWOP `InterruptPayload` schema (`src/schemas/`), one validator per
/// kind whose `data` is that kind's closed shape (the shipped schema's union
/// would only say "not valid under any of the schemas"; this names the member).
static PAYLOAD_SCHEMAS: std::sync::LazyLock<Vec<(InterruptKind, jsonschema::Validator)>> =
    std::sync::LazyLock::new(|| {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("schemas/openwop-interrupt-payload.schema.json"))
                .expect("the shipped interrupt payload schema is JSON");
        InterruptKind::ALL
            .iter()
            .map(|&kind| {
                let mut one = schema.clone();
                one["properties"]["data"] =
                    serde_json::json!({ "$ref": format!("#/$defs/{}", data_def(kind)) });
                let validator = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&one)
                    .expect("the shipped interrupt payload schema compiles");
                (kind, validator)
            })
            .collect()
    });

/// Checks a payload (`{kind, key, data, resumeSchema?, timeoutMs?}`) of
/// `kind` against the closed per-kind schema; the error names the member
/// (`interrupt.data.correlation`).
pub fn check_payload(kind: InterruptKind, payload: &serde_json::Value) -> crate::error::Result<()> {
    let validator = PAYLOAD_SCHEMAS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, v)| v)
        .expect("a validator per kind");
    crate::contract::validate_with(validator, payload, "interrupt")?;
    // The schema admits any integer ≥ 0; a turn is recorded as a signed
    // 64-bit integer, so a larger one would be recorded as another turn.
    if kind == InterruptKind::ConversationExchange {
        if let Some(turn) = payload["data"].get("turnIndex") {
            if turn.as_i64().is_none() {
                return Err(crate::error::EngineError::validation(
                    "interrupt.data.turnIndex",
                    format!("interrupt.data.turnIndex: {turn} is greater than {}", i64::MAX),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_index_past_i64_is_refused_by_name() {
        let payload = |turn: serde_json::Value| {
            serde_json::json!({"kind": "conversation.exchange", "key": "k",
                "data": {"conversationId": "c", "prompt": "p", "turnIndex": turn}})
        };
        check_payload(InterruptKind::ConversationExchange, &payload(i64::MAX.into())).unwrap();
        for turn in [
            serde_json::json!(i64::MAX as u64 + 1),
            serde_json::json!(u64::MAX),
        ] {
            match check_payload(InterruptKind::ConversationExchange, &payload(turn)) {
                Err(crate::error::EngineError::Validation { field, .. }) => {
                    assert_eq!(field.as_deref(), Some("interrupt.data.turnIndex"))
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn keys_differ_per_visit() {
        assert_ne!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 1));
        assert_eq!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 0));
    }
}
