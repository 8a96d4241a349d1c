//! OpenAPI schemas of the wire shapes. The engine crate stays free of
//! `utoipa`: its types are described here by mirror structs (documentation
//! only; the handlers serialize the engine's own types).

#![allow(dead_code)] // fields exist for the schema derive

use serde_json::Value;
use utoipa::ToSchema;

/// The closed error envelope.
#[derive(ToSchema)]
#[schema(example = json!({"error": "validation_error", "message": "resumeValue.action: must be one of accept, reject", "details": {"field": "resumeValue.action"}}))]
pub struct ErrorEnvelope {
    /// The error code.
    pub error: ErrorCode,
    /// A human-readable explanation.
    pub message: String,
    /// Machine-readable details: `field` (the offending member), `errors`
    /// (`{pointer, field, message}` for resume values failing `resumeSchema`),
    /// `protocolVersions` (406).
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

/// Error codes of the envelope.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum ErrorCode {
    ValidationError,
    IdempotencyKeyInvalid,
    UnsupportedStreamMode,
    Unauthenticated,
    InterruptTokenInvalid,
    Forbidden,
    IdTenantMismatch,
    NotFound,
    MethodNotAllowed,
    ProtocolVersionUnsupported,
    InterruptAlreadyResolved,
    RunTerminal,
    IdempotencyKeyMismatch,
    RunStateConflict,
    InterruptExpired,
    InternalError,
}

/// `POST /runs` body (members as in OpenWOP v2 `RunCreateRequest`).
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRunRequest {
    /// A registered workflow id.
    pub workflow_id: String,
    pub inputs: Option<JsonObject>,
    pub residency: Option<Value>,
    pub tenant_id: Option<String>,
    pub scope_id: Option<Value>,
    pub callback_url: Option<String>,
    pub mode: Option<Value>,
    pub eval_suite_ref: Option<Value>,
    pub agent_id: Option<Value>,
    /// Run configuration, for example `{"run": {"recursionLimit": 25}}`.
    pub configurable: Option<JsonObject>,
    pub tags: Option<Value>,
    pub metadata: Option<JsonObject>,
}

/// Any JSON object.
#[derive(ToSchema, serde::Deserialize)]
#[schema(value_type = Object)]
pub struct JsonObject(Value);

/// `201` of `POST /runs`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct CreateRunResponse {
    /// Tenant-bound run id `tenant/opaque`.
    pub run_id: String,
    pub status: RunStatus,
    pub events_url: String,
    pub status_url: String,
}

/// Run status.
#[derive(ToSchema)]
#[schema(rename_all = "kebab-case")]
pub enum RunStatus {
    Pending,
    Running,
    Paused,
    WaitingApproval,
    WaitingInput,
    WaitingExternal,
    Completed,
    Failed,
    Cancelling,
    Cancelled,
}

/// OpenWOP v2 RunSnapshot (closed; main members shown).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct RunSnapshot {
    pub run_id: String,
    pub workflow_id: String,
    pub status: RunStatus,
    /// `{tenant, subject}`.
    pub owner: JsonObject,
    pub current_node_id: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub node_states: Option<JsonObject>,
    pub inputs: Option<Value>,
    /// `{code, message, details?}` when the run failed.
    pub error: Option<JsonObject>,
    pub engine_version: Option<i64>,
    pub event_log_schema_version: i64,
    pub tags: Option<Value>,
    pub metadata: Option<JsonObject>,
    pub configurable: Option<JsonObject>,
}

/// `POST /runs/{runId}/cancel` body.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    pub reason: Option<String>,
}

/// `200` of a cancel.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct CancelResponse {
    pub run_id: String,
    /// `cancelled`.
    pub status: RunStatus,
}

/// A run event (`{sequence, type, nodeId?, payload, ...}`).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct RunEvent {
    pub sequence: i64,
    #[schema(rename = "type")]
    pub event_type: String,
    pub run_id: String,
    pub node_id: Option<String>,
    pub payload: JsonObject,
    pub timestamp: Option<String>,
}

/// JSON variant of `GET /runs/{runId}/events`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct EventsResponse {
    pub run_id: String,
    pub events: Vec<RunEvent>,
}

/// `GET /runs/{runId}/events/poll`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct PollResponse {
    pub run_id: String,
    pub events: Vec<RunEvent>,
    /// Sequence of the last event returned, -1 when none.
    pub last_sequence: i64,
    pub status: RunStatus,
    pub is_terminal: bool,
}

/// Body of a resolve.
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveRequest {
    /// By kind: approval `{action, feedback?, refineFeedback?, editedArtifactData?}`;
    /// clarification `{answers}`; external-event: the correlation members;
    /// credential `{outcome}`. Checked against the interrupt's `resumeSchema`.
    pub resume_value: Value,
}

/// `200` of a resolve; a vote that does not decide leaves `status` unchanged.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct ResolveResponse {
    pub run_id: String,
    pub node_id: String,
    pub status: RunStatus,
}

/// A vote as the audit shows it.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct Vote {
    pub principal: String,
    pub action: String,
    /// The eligibility ref that admitted the vote (`principal:…`, `group:…`, `role:…`, `override`).
    pub eligible_via: String,
    pub decided_at: String,
}

/// Host extension: an interrupt with its contract, votes and deadline.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct InterruptView {
    pub interrupt_id: String,
    pub run_id: String,
    pub node_id: String,
    pub workflow_id: String,
    pub key: String,
    /// approval, clarification, external-event, credential, …
    pub kind: String,
    /// pending or resolved.
    pub status: String,
    pub title: String,
    pub payload: JsonObject,
    pub request_schema: Value,
    pub resume_schema: Value,
    pub outcomes: Vec<String>,
    pub typed: bool,
    pub request: Value,
    pub created_at: String,
    pub deadline: Option<String>,
    pub resolved_at: Option<String>,
    pub resolution: Option<Value>,
    pub votes: Vec<Vote>,
    pub quorum: Option<JsonObject>,
    /// A link token for the caller (pending, signing key configured):
    /// resolve-capable only when the caller holds `approvals:respond` and may
    /// decide this interrupt, else (or with `?intent=inspect`) inspect-only.
    pub token: Option<String>,
    pub expires_at: Option<String>,
    /// `resolve` or `inspect`: what `token` may do.
    pub intent: Option<String>,
}

/// `GET /interrupts`.
#[derive(ToSchema)]
pub struct InterruptList {
    pub interrupts: Vec<InterruptView>,
}

/// `GET /interrupts/{token}`: the InterruptPayload plus the members below.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct TokenInterrupt {
    pub interrupt_id: String,
    pub run_id: String,
    pub node_id: String,
    pub kind: String,
    /// `{requestSchema, resumeSchema, outcomes, typed}`.
    pub contract: JsonObject,
    pub request: Value,
    pub expires_at: String,
    /// `resolve` or `inspect`.
    pub intent: String,
}

/// A registered workflow.
#[derive(ToSchema)]
pub struct WorkflowInfo {
    pub id: String,
    pub name: String,
    pub version: String,
    /// `instance` (loaded from `[workflows] dirs`; read-only to tenants) or `tenant` (the caller's tenant's own).
    pub scope: String,
}

/// `GET /workflows`.
#[derive(ToSchema)]
pub struct WorkflowList {
    pub workflows: Vec<WorkflowInfo>,
}

/// An OpenWOP workflow definition (`{id, name, version, nodes, edges?, …}`).
#[derive(ToSchema)]
pub struct WorkflowDefinition {
    pub id: Option<String>,
    pub name: String,
    pub version: String,
    pub nodes: Vec<JsonObject>,
    pub edges: Option<Vec<JsonObject>>,
}

/// `GET /.well-known/openwop`.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct Discovery {
    pub protocol_versions: Vec<String>,
    pub preferred_version: String,
    pub min_client_version: String,
    pub implementation: JsonObject,
    pub engine_version: i64,
    pub event_log_schema_version: i64,
    /// Loaded workflow ids.
    pub fixtures: Vec<String>,
    pub limits: JsonObject,
    pub signing_keys: Vec<JsonObject>,
    pub extensions: JsonObject,
    /// `{status, tokenAlgs, refKinds, …}`.
    pub interrupt: JsonObject,
}

/// `GET /healthz`.
#[derive(ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` with `error` (503).
    pub status: String,
    pub error: Option<String>,
}

/// One outbox message (email or run callback).
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct OutboxMessage {
    pub id: i64,
    /// `email` or `callback`.
    pub kind: String,
    /// Email: `requested`, `reminder` or `escalation`. Callback: the event
    /// type (`interrupt.requested`, `run.completed`, `run.failed`, `run.cancelled`).
    pub reason: String,
    pub run_id: String,
    pub node_id: Option<String>,
    pub interrupt_id: Option<String>,
    /// Email: the recipient principal.
    pub recipient: Option<String>,
    /// Email address, or the callback URL.
    pub address: String,
    /// `pending`, `sent`, `failed` or `dropped`.
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    /// Callback: HTTP status of the last attempt that got an answer.
    pub response_status: Option<i64>,
    /// Email: `smtp` or `dev-outbox`. Callback: the URL scheme (`https`; `http` only with `allow_loopback`).
    pub delivered_via: Option<String>,
    /// The message as delivered (email), or a delivery summary (callback).
    pub message: Option<String>,
    /// Callback: the JSON body POSTed.
    pub body: Option<JsonObject>,
    pub created_at: String,
    pub next_attempt_at: String,
    pub sent_at: Option<String>,
}

/// `GET /admin/outbox`.
#[derive(ToSchema)]
pub struct OutboxList {
    pub items: Vec<OutboxMessage>,
}
