//! `GET /.well-known/openwop`: the v2 discovery document.

use super::schema::*;
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;

#[utoipa::path(
    get,
    path = "/.well-known/openwop",
    tag = "discovery",
    operation_id = "discovery",
    summary = "OpenWOP discovery document",
    params(
        ("If-None-Match" = Option<String>, Header, description = "An ETag from an earlier answer; 304 when it still matches"),
        ("OpenWOP-Version" = Option<String>, Header, description = "Requested protocol version; only major 2 is served"),
    ),
    responses(
        (status = 200, description = "Protocol versions, the loaded conformance fixtures, the interrupt family", body = Discovery, headers(("ETag" = String, description = "Strong ETag"))),
        (status = 304, description = "Not modified (`If-None-Match` matched)"),
        (status = 405, description = "`method_not_allowed`", body = ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`", body = ErrorEnvelope),
    )
)]
pub async fn discovery(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let mut doc = json!({
        "protocolVersions": [super::PROTOCOL_VERSION],
        "preferredVersion": super::PROTOCOL_VERSION,
        "minClientVersion": super::PROTOCOL_VERSION,
        "implementation": { "name": "tollgate", "version": env!("CARGO_PKG_VERSION") },
        "engineVersion": 1,
        "eventLogSchemaVersion": tollgate::events::EVENT_LOG_SCHEMA_VERSION,
        "fixtures": state.engine.conformance_fixtures(),
        "limits": { "maxPollTimeoutSeconds": 60, "maxIdempotencyKeyLength": 128 },
        "signingKeys": [],
        "extensions": {},
        "interrupt": {
            "status": "experimental",
            "since": "2.0",
            "until": "2.1",
            "witness": "witnessable-gated",
            "tokenAlgs": ["hs256"],
            "refKinds": ["principal", "group", "role"],
            "callbackDelivery": state.engine.callback_policy().is_some()
        }
    });
    // Optional families: presence is the claim (capabilities.md).
    let caps = state.engine.capabilities();
    if caps.conversation {
        doc["conversationPrimitive"] = json!({ "status": "experimental", "since": "2.0", "until": "2.1", "witness": "witnessable-gated" });
    }
    if caps.credential {
        // The `oauth` family with its `credentialInterrupt` facet (as `interrupt.callbackDelivery`).
        doc["oauth"] = json!({ "status": "experimental", "since": "2.0", "until": "2.1", "witness": "witnessable-gated", "credentialInterrupt": true });
    }
    super::with_etag(&headers, doc)
}
