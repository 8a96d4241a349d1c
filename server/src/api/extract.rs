//! Request extractors: bearer authentication and JSON bodies whose errors
//! name the field.

use super::error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{header, request::Parts, HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tollgate::auth::{Grant, Scope};
use tollgate::{Actor, Idem};

/// An authenticated API caller. The REST edge (`edge.rs`) authenticates
/// before anything else and leaves the caller in the request's extensions.
#[derive(Clone)]
pub struct Authed {
    pub actor: Actor,
    pub grant: Grant,
}

impl Authed {
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.grant.allows(scope) {
            Ok(())
        } else {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("this API key lacks the {} scope", scope.as_str()),
            ))
        }
    }

    /// Checks `Authorization: Bearer <api key>` (401 when missing, malformed or unknown).
    pub async fn authenticate(parts: &Parts, state: &AppState) -> Result<Self, ApiError> {
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthenticated("missing Authorization: Bearer <api key>"))?;
        let key = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| ApiError::unauthenticated("Authorization must be Bearer <api key>"))?;
        match state.engine.authenticate(key).await? {
            Some((actor, grant)) => Ok(Authed { actor, grant }),
            None => Err(ApiError::unauthenticated("unknown or revoked API key")),
        }
    }
}

impl FromRequestParts<AppState> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        match parts.extensions.remove::<Authed>() {
            Some(authed) => Ok(authed),
            None => Authed::authenticate(parts, state).await,
        }
    }
}

/// A JSON body; parse errors are 400 `validation_error` naming the field.
pub struct JsonBody<T>(pub T, pub Value);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|e| ApiError::validation("body", format!("unreadable body: {e}")))?;
        let raw: Value = if bytes.is_empty() {
            Value::Object(Default::default())
        } else {
            serde_json::from_slice(&bytes)
                .map_err(|e| ApiError::validation("body", format!("body is not valid JSON: {e}")))?
        };
        let typed = serde_path_to_error::deserialize::<_, T>(raw.clone()).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            // serde names a missing or unknown member in the message; surface it as the field.
            let field = if path == "." || path.is_empty() {
                extract_backticked(&inner).unwrap_or_else(|| "body".into())
            } else {
                path
            };
            ApiError::validation(&field, format!("{field}: {inner}"))
        })?;
        Ok(JsonBody(typed, raw))
    }
}

/// A query string; parse errors are 400 `validation_error` naming the
/// parameter (axum's own `Query` would answer plain text).
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let de = serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize::<_, T>(de)
            .map(ApiQuery)
            .map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner().to_string();
                // serde names an unknown member in the message; surface it as the field.
                let field = if path == "." || path.is_empty() {
                    extract_backticked(&inner).unwrap_or_else(|| "query".into())
                } else {
                    path
                };
                ApiError::validation(&field, format!("{field}: {inner}"))
            })
    }
}

/// Path parameters; a segment that is not valid UTF-8 once percent-decoded
/// is 400 `validation_error` naming the parameter (axum's own `Path` would
/// answer plain text).
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::path::ErrorKind;
        use axum::extract::rejection::PathRejection;
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e| {
                let text = e.body_text();
                let field = match &e {
                    PathRejection::FailedToDeserializePathParams(f) => match f.kind() {
                        ErrorKind::InvalidUtf8InPathParam { key }
                        | ErrorKind::ParseErrorAtKey { key, .. }
                        | ErrorKind::DeserializeError { key, .. } => key.clone(),
                        _ => "path".into(),
                    },
                    _ => "path".into(),
                };
                ApiError::validation(&field, format!("{field}: {text}"))
            })
    }
}

fn extract_backticked(msg: &str) -> Option<String> {
    let start = msg.find('`')? + 1;
    let end = msg[start..].find('`')? + start;
    Some(msg[start..end].to_string())
}

/// The `Idempotency-Key` of a mutating request, bound to its operation and body.
pub fn idempotency(headers: &HeaderMap, operation: &str, body: &Value) -> Result<Option<Idem>, ApiError> {
    match headers.get("idempotency-key") {
        None => Ok(None),
        Some(v) => {
            let key = v.to_str().unwrap_or("");
            Ok(Some(Idem::new(key, operation, body)?))
        }
    }
}
