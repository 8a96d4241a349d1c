//! OpenWOP v2 run events as stored in the log and served to clients.

use crate::clock::{rfc3339, Millis};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Event log schema version written by this host.
pub const EVENT_LOG_SCHEMA_VERSION: i64 = 3;
/// `schemaVersion` of each event document.
pub const EVENT_SCHEMA_VERSION: i64 = 1;

pub const TERMINAL_EVENTS: [&str; 3] = ["run.completed", "run.failed", "run.cancelled"];

/// A RunEventDoc (closed object in v2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    pub event_id: String,
    pub run_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub payload: Value,
    pub timestamp: String,
    pub sequence: i64,
    pub schema_version: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
}

impl RunEvent {
    pub fn is_terminal(&self) -> bool {
        TERMINAL_EVENTS.contains(&self.event_type.as_str())
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct EventRow {
    pub run_id: String,
    pub sequence: i64,
    pub event_id: String,
    #[sqlx(rename = "type")]
    pub event_type: String,
    pub node_id: Option<String>,
    pub payload: String,
    pub timestamp: Millis,
}

impl EventRow {
    pub fn into_event(self) -> RunEvent {
        RunEvent {
            event_id: self.event_id,
            run_id: self.run_id,
            event_type: self.event_type,
            payload: serde_json::from_str(&self.payload).unwrap_or(Value::Null),
            timestamp: rfc3339(self.timestamp),
            sequence: self.sequence,
            schema_version: EVENT_SCHEMA_VERSION,
            node_id: self.node_id,
        }
    }
}
