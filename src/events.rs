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

/// Payloads of the events a resolve writes, serialised straight from
/// borrowed fields: no map is built and no value cloned on the writer
/// (issue #17). Fields are declared in the order serde_json's maps write
/// their keys (sorted), so the stored text is byte for byte what a
/// `json!` map of the same members writes.
pub mod payloads {
    use serde::Serialize;
    use serde_json::value::RawValue;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// `node.resumed`.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NodeResumed<'a> {
        pub interrupt_id: &'a str,
        pub node_id: &'a str,
        pub resume_value: &'a Value,
    }

    /// `node.completed`.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NodeCompleted<'a> {
        pub node_id: &'a str,
        pub outputs: &'a Value,
    }

    /// `run.started`. `requested_by`, the person a run is for, is a host
    /// extension member (the payload is closed but for `x-…` members).
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct RunStarted<'a> {
        pub inputs: &'a Value,
        pub owner: &'a Value,
        pub transport: &'a str,
        pub workflow_id: &'a str,
        #[serde(rename = "x-tollgate-requestedBy", skip_serializing_if = "Option::is_none")]
        pub requested_by: Option<&'a str>,
    }

    /// `node.started`.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NodeStarted<'a> {
        pub attempt: u32,
        pub node_id: &'a str,
        pub type_id: &'a str,
    }

    /// `interrupt.requested`: the interrupt's payload (`InterruptPayload`),
    /// which its row stores too; the `resumeSchema` is the text written once
    /// with the workflow.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InterruptRequested<'a> {
        pub data: &'a Value,
        pub key: &'a str,
        pub kind: &'a str,
        pub resume_schema: &'a RawValue,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub timeout_ms: Option<u64>,
    }

    /// `node.suspended`.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NodeSuspended<'a> {
        pub interrupt_id: &'a str,
        pub key: &'a str,
        pub kind: &'a str,
        pub node_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub reason: Option<&'a str>,
    }

    /// `run.completed`: the outputs of the run's completed end nodes, by node.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct RunCompleted<'a> {
        pub duration_ms: i64,
        pub outputs: BTreeMap<&'a str, &'a Value>,
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        fn text<T: Serialize>(payload: &T) -> String {
            serde_json::to_string(payload).unwrap()
        }

        /// The typed payloads write the bytes the maps wrote before them.
        #[test]
        fn typed_payloads_write_the_text_of_their_maps() {
            let value = json!({ "action": "accept", "z": [1, {"b": 2, "a": "é\""}], "a": null });
            assert_eq!(
                text(&NodeResumed {
                    interrupt_id: "i-1",
                    node_id: "gate",
                    resume_value: &value
                }),
                json!({ "nodeId": "gate", "interruptId": "i-1", "resumeValue": value }).to_string()
            );
            assert_eq!(
                text(&NodeCompleted {
                    node_id: "gate",
                    outputs: &value
                }),
                json!({ "nodeId": "gate", "outputs": value }).to_string()
            );
            let other = json!({ "resumeValue": { "action": "reject" } });
            let outputs = BTreeMap::from([("gate", &value), ("b-end", &other)]);
            assert_eq!(
                text(&RunCompleted {
                    duration_ms: 42,
                    outputs
                }),
                json!({ "outputs": { "gate": value, "b-end": other }, "durationMs": 42 }).to_string()
            );
            assert_eq!(
                text(&RunCompleted {
                    duration_ms: 0,
                    outputs: BTreeMap::new()
                }),
                json!({ "outputs": {}, "durationMs": 0 }).to_string()
            );
        }

        /// A create's payloads, each with and without its optional member.
        #[test]
        fn a_creates_payloads_write_the_text_of_their_maps() {
            let inputs = json!({ "amount": 12.5, "note": "é\"\n" });
            let owner = json!({ "tenant": "t", "subject": { "subjectId": "ann", "kind": "user" } });
            for person in [None, Some("bob")] {
                let mut map =
                    json!({ "workflowId": "wf", "inputs": inputs, "owner": owner, "transport": "rest" });
                if let Some(p) = person {
                    map["x-tollgate-requestedBy"] = json!(p);
                }
                let typed = RunStarted {
                    inputs: &inputs,
                    owner: &owner,
                    transport: "rest",
                    workflow_id: "wf",
                    requested_by: person,
                };
                assert_eq!(text(&typed), map.to_string());
            }
            assert_eq!(
                text(&NodeStarted {
                    attempt: 0,
                    node_id: "gate",
                    type_id: "core.approvalGate"
                }),
                json!({ "nodeId": "gate", "typeId": "core.approvalGate", "attempt": 0 }).to_string()
            );
            let data = json!({ "title": "Pay?", "actions": ["accept", "reject"] });
            let schema = json!({ "type": "object", "properties": { "action": { "enum": ["accept"] } } });
            let raw = serde_json::value::to_raw_value(&schema).unwrap();
            for timeout in [None, Some(60_000)] {
                let mut map =
                    json!({ "kind": "approval", "key": "r:gate:0", "data": data, "resumeSchema": schema });
                if let Some(t) = timeout {
                    map["timeoutMs"] = json!(t);
                }
                let typed = InterruptRequested {
                    data: &data,
                    key: "r:gate:0",
                    kind: "approval",
                    resume_schema: &raw,
                    timeout_ms: timeout,
                };
                assert_eq!(text(&typed), map.to_string());
            }
            for reason in [None, Some("low-confidence")] {
                let mut map =
                    json!({ "nodeId": "gate", "interruptId": "i-1", "kind": "approval", "key": "r:gate:0" });
                if let Some(r) = reason {
                    map["reason"] = json!(r);
                }
                let typed = NodeSuspended {
                    interrupt_id: "i-1",
                    key: "r:gate:0",
                    kind: "approval",
                    node_id: "gate",
                    reason,
                };
                assert_eq!(text(&typed), map.to_string());
            }
        }
    }
}
