//! `GET /.well-known/openwop`: the v2 discovery document.

use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::json;

pub async fn discovery(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let doc = json!({
        "protocolVersions": [super::PROTOCOL_VERSION],
        "preferredVersion": super::PROTOCOL_VERSION,
        "minClientVersion": super::PROTOCOL_VERSION,
        "implementation": { "name": "tollgate", "version": env!("CARGO_PKG_VERSION") },
        "engineVersion": 1,
        "eventLogSchemaVersion": tollgate::events::EVENT_LOG_SCHEMA_VERSION,
        "fixtures": state.engine.workflow_ids(),
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
            "callbackDelivery": false
        }
    });
    super::with_etag(&headers, doc)
}
