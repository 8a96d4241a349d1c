//! `GET /.well-known/openwop`: the v2 discovery document.

use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use sha2::{Digest, Sha256};

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
    let etag = format!(
        "\"{}\"",
        &hex::encode(Sha256::digest(doc.to_string().as_bytes()))[..32]
    );
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut res = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        Json(doc).into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}
