//! The engine's typed errors. Adapters map each variant to a wire code once
//! (see `EngineError::code` and `EngineError::http_status`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Serialized (idempotency records store replayable errors) adjacently
/// tagged: an internally tagged enum cannot serialize its newtype variants
/// (`NotFound(String)`), which made every replayable error a 500. Unit
/// variants read the same in both forms.
#[derive(Debug, Clone, thiserror::Error, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum EngineError {
    /// Input failed validation; `field` names the offending member (JSON pointer-ish path).
    #[error("{message}")]
    Validation {
        message: String,
        field: Option<String>,
        details: Option<Value>,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("the run belongs to another tenant")]
    TenantMismatch,
    #[error("{0}")]
    AlreadyResolved(String),
    #[error("the run is already terminal ({0})")]
    RunTerminal(tollgate_wire::RunStatus),
    #[error("the Idempotency-Key was used with a different request")]
    IdempotencyMismatch,
    #[error("{0}")]
    IdempotencyKeyInvalid(String),
    #[error("{0}")]
    TokenInvalid(String),
    /// A valid link on a gate only a signed-in principal may decide.
    #[error("{0}")]
    SignInRequired(String),
    #[error("{0}")]
    Expired(String),
    #[error("{0}")]
    Conflict(String),
    /// The definition needs a protocol family this instance does not offer.
    #[error("{message}")]
    CapabilityRequired { capability: String, message: String },
    /// Throttled (sign-in attempts); `Retry-After` carries the wait.
    #[error("{message}")]
    TooManyAttempts { message: String, retry_after_secs: u64 },
    /// No capacity right now (password hashing slots); try again shortly.
    #[error("{message}")]
    Busy { message: String, retry_after_secs: u64 },
    #[error("storage error: {0}")]
    Storage(String),
    #[error("internal error: {0}")]
    Internal(String),
}

impl EngineError {
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        EngineError::Validation {
            message: message.into(),
            field: Some(field.into()),
            details: None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        EngineError::Validation {
            message: message.into(),
            field: None,
            details: None,
        }
    }

    /// The registered OpenWOP error code.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Validation { .. } => "validation_error",
            EngineError::NotFound(_) => "not_found",
            EngineError::Forbidden(_) => "forbidden",
            EngineError::TenantMismatch => "id_tenant_mismatch",
            EngineError::AlreadyResolved(_) => "interrupt_already_resolved",
            EngineError::RunTerminal(_) => "run_terminal",
            EngineError::IdempotencyMismatch => "idempotency_key_mismatch",
            EngineError::IdempotencyKeyInvalid(_) => "idempotency_key_invalid",
            EngineError::TokenInvalid(_) => "interrupt_token_invalid",
            EngineError::SignInRequired(_) => "auth_elevation_required",
            EngineError::Expired(_) => "interrupt_expired",
            EngineError::Conflict(_) => "run_state_conflict",
            EngineError::CapabilityRequired { .. } => "capability_required",
            EngineError::TooManyAttempts { .. } => "rate_limited",
            EngineError::Busy { .. } => "service_unavailable",
            EngineError::Storage(_) | EngineError::Internal(_) => "internal_error",
        }
    }

    pub fn http_status(&self) -> u16 {
        match self {
            EngineError::Validation { .. } | EngineError::IdempotencyKeyInvalid(_) => 400,
            EngineError::TokenInvalid(_) => 401,
            EngineError::Forbidden(_) | EngineError::TenantMismatch | EngineError::SignInRequired(_) => 403,
            EngineError::NotFound(_) => 404,
            EngineError::AlreadyResolved(_)
            | EngineError::RunTerminal(_)
            | EngineError::IdempotencyMismatch
            | EngineError::Conflict(_) => 409,
            EngineError::Expired(_) => 410,
            EngineError::CapabilityRequired { .. } => 422,
            EngineError::TooManyAttempts { .. } => 429,
            EngineError::Busy { .. } => 503,
            EngineError::Storage(_) | EngineError::Internal(_) => 500,
        }
    }

    /// Whether an idempotent replay may return this error instead of re-executing
    /// (idempotency.md: cache non-retryable 4xx, never 400/401/403/5xx).
    pub fn is_replayable(&self) -> bool {
        matches!(
            self,
            EngineError::NotFound(_)
                | EngineError::AlreadyResolved(_)
                | EngineError::RunTerminal(_)
                | EngineError::Expired(_)
                | EngineError::Conflict(_)
        )
    }

    /// Seconds for a `Retry-After` header, for errors that are worth retrying later.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            EngineError::TooManyAttempts { retry_after_secs, .. }
            | EngineError::Busy { retry_after_secs, .. } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// `details` for the error envelope.
    pub fn details(&self) -> Option<Value> {
        match self {
            EngineError::Validation { field, details, .. } => {
                let mut obj = match details {
                    Some(Value::Object(m)) => m.clone(),
                    _ => serde_json::Map::new(),
                };
                if let Some(f) = field {
                    obj.insert("field".into(), Value::String(f.clone()));
                }
                (!obj.is_empty()).then_some(Value::Object(obj))
            }
            EngineError::CapabilityRequired { capability, .. } => {
                Some(serde_json::json!({ "capability": capability }))
            }
            _ => None,
        }
    }
}

impl From<sqlx::Error> for EngineError {
    fn from(e: sqlx::Error) -> Self {
        // PostgreSQL's text cannot hold U+0000 (SQLSTATE 22021). What a run
        // is given is checked before (`text::refuse_nul`); anything else
        // that carries one is the caller's input, not a storage failure.
        if e.as_database_error()
            .and_then(|d| d.code())
            .is_some_and(|code| code == "22021")
        {
            return EngineError::invalid("text cannot contain the NUL character (U+0000)");
        }
        EngineError::Storage(e.to_string())
    }
}

impl From<rusqlite::Error> for EngineError {
    fn from(e: rusqlite::Error) -> Self {
        EngineError::Storage(e.to_string())
    }
}

impl From<serde_json::Error> for EngineError {
    fn from(e: serde_json::Error) -> Self {
        EngineError::Internal(format!("json: {e}"))
    }
}

/// A stored status, kind or action this build does not know: the row is
/// not what the schema says, so it is a storage error, never a default.
impl From<tollgate_wire::UnknownValue> for EngineError {
    fn from(e: tollgate_wire::UnknownValue) -> Self {
        EngineError::Storage(format!("stored value: {e}"))
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// An optional filter parameter (`?status=`, `?kind=`) as its enum: empty or
/// absent is no filter; anything else must be one of the enum's values
/// (400 `validation_error` naming `field` and the choices).
pub fn parse_param<T>(field: &str, value: Option<&str>) -> Result<Option<T>>
where
    T: std::str::FromStr<Err = tollgate_wire::UnknownValue>,
{
    match value.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|e: tollgate_wire::UnknownValue| {
            EngineError::validation(field, format!("{field}: {e}"))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_round_trips_through_json() {
        let all = [
            EngineError::validation("f", "m"),
            EngineError::NotFound("n".into()),
            EngineError::Forbidden("f".into()),
            EngineError::TenantMismatch,
            EngineError::AlreadyResolved("a".into()),
            EngineError::RunTerminal(tollgate_wire::RunStatus::Completed),
            EngineError::IdempotencyMismatch,
            EngineError::IdempotencyKeyInvalid("i".into()),
            EngineError::TokenInvalid("t".into()),
            EngineError::SignInRequired("s".into()),
            EngineError::Expired("e".into()),
            EngineError::Conflict("c".into()),
            EngineError::CapabilityRequired {
                capability: "conversationPrimitive".into(),
                message: "m".into(),
            },
            EngineError::Storage("s".into()),
            EngineError::Internal("i".into()),
        ];
        for e in all {
            let text = serde_json::to_string(&e).unwrap_or_else(|err| panic!("{e:?}: {err}"));
            let back: EngineError = serde_json::from_str(&text).unwrap();
            assert_eq!(back, e);
        }
        // A unit variant stored before the change still reads.
        let old: EngineError = serde_json::from_str(r#"{"kind":"idempotency_mismatch"}"#).unwrap();
        assert_eq!(old, EngineError::IdempotencyMismatch);
    }
}
