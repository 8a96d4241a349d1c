//! The closed OpenWOP error envelope `{error, message, details?}`; every
//! engine error is mapped to HTTP here and nowhere else.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tollgate::EngineError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
        }
    }
    pub fn validation(field: &str, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "validation_error",
            message: message.into(),
            details: Some(json!({ "field": field })),
        }
    }
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", message)
    }
    pub fn body(&self) -> Value {
        let mut body = json!({ "error": self.code, "message": self.message });
        if let Some(d) = &self.details {
            body["details"] = d.clone();
        }
        body
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        if matches!(e, EngineError::Storage(_) | EngineError::Internal(_)) {
            tracing::error!(error = %e, "internal error");
        }
        ApiError {
            status: StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            code: e.code(),
            message: match &e {
                EngineError::Storage(_) | EngineError::Internal(_) => {
                    "internal error; see the server log".into()
                }
                other => other.to_string(),
            },
            details: e.details(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (self.status, axum::Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED && self.code == "unauthenticated" {
            res.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        res
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// The answer to a panic anywhere in request handling (tower-http's
/// `CatchPanicLayer`, see `server::router`): logged with its message and
/// answered `500 internal_error` in the envelope, instead of a dropped
/// connection.
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    tracing::error!(panic = %what, "request handling panicked; answered 500 internal_error");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal_error",
        "internal error; see the server log",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    use tower_http::catch_panic::CatchPanicLayer;

    #[tokio::test]
    async fn a_panicking_handler_answers_the_500_envelope() {
        async fn boom() -> &'static str {
            panic!("a handler bug")
        }
        let app = axum::Router::new()
            .route("/boom", axum::routing::get(boom))
            .layer(CatchPanicLayer::custom(panic_response));
        let res = app
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"], "internal_error");
        assert!(body["message"].as_str().unwrap().contains("server log"));
    }
}
