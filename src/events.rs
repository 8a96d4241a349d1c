//! OpenWOP v2 run events as stored in the log and served to clients.

use crate::clock::{rfc3339, Millis};
use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_wire::EventType;

/// Event log schema version written by this host.
pub const EVENT_LOG_SCHEMA_VERSION: i64 = 3;
/// `schemaVersion` of each event document.
pub const EVENT_SCHEMA_VERSION: i64 = 1;

/// A RunEventDoc (closed object in v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    pub event_id: String,
    pub run_id: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub payload: Value,
    pub timestamp: String,
    pub sequence: i64,
    pub schema_version: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
}

impl RunEvent {
    pub fn is_terminal(&self) -> bool {
        self.event_type.is_terminal()
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct EventRow {
    pub run_id: String,
    pub sequence: i64,
    pub event_id: String,
    #[sqlx(rename = "type", try_from = "String")]
    pub event_type: EventType,
    pub node_id: Option<String>,
    pub payload: String,
    pub timestamp: Millis,
}

impl EventRow {
    /// The event as served; a stored payload that is not JSON is an error.
    pub fn into_event(self) -> Result<RunEvent> {
        let payload = serde_json::from_str(&self.payload).map_err(|e| {
            EngineError::Storage(format!(
                "event {} of run {}: payload is not JSON: {e}",
                self.sequence, self.run_id
            ))
        })?;
        Ok(RunEvent {
            event_id: self.event_id,
            run_id: self.run_id,
            event_type: self.event_type,
            payload,
            timestamp: rfc3339(self.timestamp),
            sequence: self.sequence,
            schema_version: EVENT_SCHEMA_VERSION,
            node_id: self.node_id,
        })
    }
}
