//! OpenWOP v2 run events as stored in the log and served to clients.

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
