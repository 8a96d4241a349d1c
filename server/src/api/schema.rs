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
    CapabilityRequired,
    InterruptExpired,
    InternalError,
}

/// `POST /runs` body (members as in OpenWOP v2 `RunCreateRequest`).
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRunRequest {
    /// A registered workflow id.
    #[schema(pattern = r"^[A-Za-z0-9._~:-]{1,128}$")]
    pub workflow_id: String,
    /// The run's inputs (checked against the workflow's input contract).
    pub inputs: Option<JsonObject>,
    pub residency: Option<Value>,
    /// Must be the caller's tenant when given (403 `id_tenant_mismatch` otherwise).
    pub tenant_id: Option<String>,
    pub scope_id: Option<Value>,
    /// An absolute `https` URL the egress guard allows; refused (400) unless
    /// `[callbacks] secret` is configured.
    #[schema(pattern = r"^https://", max_length = 2048)]
    pub callback_url: Option<String>,
    pub mode: Option<Value>,
    pub eval_suite_ref: Option<Value>,
    pub agent_id: Option<Value>,
    pub configurable: Option<Configurable>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<JsonObject>,
    /// Tollgate: the person of the caller's tenant the run is for (a principal
    /// id). Naming anyone but the caller needs `runs:on-behalf` (403); an
    /// unknown person is 400 naming `requestedBy`. Self-approval is refused
    /// to them as to the run's owner, and they are never mailed a decision link.
    #[schema(min_length = 1, max_length = 128)]
    pub requested_by: Option<String>,
}

/// Run configuration: `{"version": 1, "run": {"recursionLimit": 25}}`.
#[derive(ToSchema, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configurable {
    /// Always 1.
    #[schema(minimum = 1, maximum = 1)]
    pub version: i64,
    #[schema(nullable = false)]
    pub run: Option<RunConfigurable>,
}

/// `configurable.run`.
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunConfigurable {
    /// Visits allowed per node (default 25).
    #[schema(minimum = 1, maximum = 10000, nullable = false)]
    pub recursion_limit: Option<u64>,
    #[schema(minimum = 0.0, maximum = 1.0, nullable = false)]
    pub escalation_threshold: Option<f64>,
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
    /// An object; by kind: approval `{action, feedback?, refineFeedback?,
    /// editedArtifactData?}`; clarification `{answers}`; external-event: the
    /// correlation members; credential `{outcome}`. Checked against the
    /// interrupt's `resumeSchema`.
    pub resume_value: JsonObject,
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
    /// The seat: whose vote it counts as.
    pub principal: String,
    /// The delegate who cast it in `principal`'s place (delegation or reassignment), if someone else did.
    pub cast_by: Option<String>,
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

/// OpenWOP v2 `InterruptPayload` (`suspend-request.schema.json`, closed):
/// the body of `GET /interrupts/{token}` and the payload of
/// `interrupt.requested`. `data` is bound to `kind` by the OpenWOP schema.
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InterruptPayload {
    #[schema(value_type = InterruptKind)]
    pub kind: String,
    /// The deterministic re-entry key of this visit of the node.
    #[schema(min_length = 1, max_length = 256)]
    pub key: String,
    /// The per-kind data (`ApprovalData`, `ClarificationData`, …).
    pub data: JsonObject,
    /// JSON Schema the resume value must satisfy.
    #[schema(nullable = false)]
    pub resume_schema: Option<JsonObject>,
    /// The interrupt's deadline; a timeout rejects, never grants. At most ten
    /// years (`tollgate::definition::MAX_WAIT_MS`).
    #[schema(minimum = 0, maximum = 315360000000.0, nullable = false)]
    pub timeout_ms: Option<u64>,
}

/// Host extension `GET /interrupts/{token}/context`: what Tollgate knows
/// about a token's interrupt beyond the InterruptPayload.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct TokenInterruptContext {
    pub interrupt_id: String,
    pub run_id: String,
    pub node_id: String,
    /// `{requestSchema, resumeSchema, outcomes, typed}`.
    pub contract: JsonObject,
    /// The request the interrupt was raised with (checked against `requestSchema`).
    pub request: Value,
    /// When the token expires (RFC 3339).
    pub expires_at: String,
    /// `resolve` or `inspect`: what the token may do.
    pub intent: TokenIntent,
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
/// The graph (edges, per-kind fields, contracts) is checked at registration.
#[derive(ToSchema)]
pub struct WorkflowDefinition {
    /// Must equal the path's `workflowId` when present.
    #[schema(pattern = r"^[A-Za-z0-9._~:-]{1,128}$", nullable = false)]
    pub id: Option<String>,
    pub name: Option<String>,
    #[schema(value_type = Option<Value>)]
    pub version: Option<Value>,
    #[schema(min_items = 1)]
    pub nodes: Vec<WorkflowNode>,
    #[schema(nullable = false)]
    pub edges: Option<Vec<JsonObject>>,
}

/// One node of a definition.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct WorkflowNode {
    /// Unique within the definition.
    #[schema(pattern = r"^[A-Za-z0-9._~:-]{1,128}$")]
    pub id: String,
    pub type_id: NodeType,
    pub name: Option<String>,
    pub config: Option<JsonObject>,
    pub inputs: Option<JsonObject>,
}

/// The node types this host runs.
#[derive(ToSchema)]
pub enum NodeType {
    #[schema(rename = "core.noop")]
    Noop,
    #[schema(rename = "core.delay")]
    Delay,
    #[schema(rename = "core.approvalGate")]
    ApprovalGate,
    #[schema(rename = "core.clarificationGate")]
    ClarificationGate,
    #[schema(rename = "core.interrupt")]
    Interrupt,
}

/// Interrupt status.
#[derive(ToSchema, serde::Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
#[schema(rename_all = "lowercase")]
pub enum InterruptStatus {
    Pending,
    Resolved,
    Cancelled,
}

impl InterruptStatus {
    /// The engine's status this documents.
    pub fn typed(self) -> tollgate::InterruptStatus {
        match self {
            InterruptStatus::Pending => tollgate::InterruptStatus::Pending,
            InterruptStatus::Resolved => tollgate::InterruptStatus::Resolved,
            InterruptStatus::Cancelled => tollgate::InterruptStatus::Cancelled,
        }
    }
}

/// The nine OpenWOP interrupt kinds.
#[derive(ToSchema)]
pub enum InterruptKind {
    #[schema(rename = "approval")]
    Approval,
    #[schema(rename = "clarification")]
    Clarification,
    #[schema(rename = "external-event")]
    ExternalEvent,
    #[schema(rename = "custom")]
    Custom,
    #[schema(rename = "conversation.start")]
    ConversationStart,
    #[schema(rename = "conversation.exchange")]
    ConversationExchange,
    #[schema(rename = "conversation.close")]
    ConversationClose,
    #[schema(rename = "low-confidence")]
    LowConfidence,
    #[schema(rename = "credential")]
    Credential,
}

/// `streamMode` of the event routes.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum StreamMode {
    Updates,
    Debug,
}

/// A token's intent.
#[derive(ToSchema, serde::Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
#[schema(rename_all = "lowercase")]
pub enum TokenIntent {
    Resolve,
    Inspect,
}

/// Outbox message kind.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum OutboxKind {
    Email,
    Callback,
}

/// Outbox delivery status.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum OutboxStatus {
    Pending,
    Sent,
    Failed,
    Dropped,
}

/// One event of the `text/event-stream` answer: `id` the event's sequence,
/// `event` its type, `data` the event as JSON (a `RunEvent`). Comment lines
/// (`:`) are keep-alives; the stream ends after the run's terminal event.
#[derive(ToSchema)]
pub struct EventStream {
    #[schema(pattern = r"^-?[0-9]+$")]
    pub id: String,
    /// The event type, e.g. `run.started`.
    pub event: String,
    /// The `RunEvent` as JSON text.
    #[schema(content_media_type = "application/json")]
    pub data: String,
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
    /// The OpenWOP conformance fixtures loaded instance-wide (`conformance-…`
    /// ids); a deployment's own workflows are not listed.
    pub fixtures: Vec<String>,
    pub limits: JsonObject,
    pub signing_keys: Vec<JsonObject>,
    pub extensions: JsonObject,
    /// `{status, tokenAlgs, refKinds, …}`.
    pub interrupt: JsonObject,
    /// The `conversation.*` kinds, when offered (`[interrupts] conversation`).
    pub conversation_primitive: Option<JsonObject>,
    /// The `oauth` family with `credentialInterrupt: true`, when the `credential` kind is offered (`[interrupts] credential`).
    pub oauth: Option<JsonObject>,
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

/// `POST /delegations` body.
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegationRequest {
    /// The person who takes the decisions (a principal id of the caller's tenant with a console password or an email address).
    #[schema(min_length = 1, max_length = 128)]
    pub delegate: String,
    /// Whose decisions; default the caller. Anyone else needs `admin`.
    #[schema(min_length = 1, max_length = 128)]
    pub delegator: Option<String>,
    /// RFC 3339; default now (an earlier instant is now).
    pub starts_at: Option<String>,
    /// RFC 3339, exclusive; after `startsAt` and now, at most 366 days from now (wherever `startsAt` is).
    pub ends_at: String,
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

/// `POST /runs/{runId}/interrupts/{nodeId}/reassign` body.
#[derive(ToSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReassignRequest {
    /// The person whose seat moves: one the gate admits.
    #[schema(min_length = 1, max_length = 128)]
    pub from: String,
    /// The person who takes it (not one whose request the run is).
    #[schema(min_length = 1, max_length = 128)]
    pub to: String,
    #[schema(max_length = 500)]
    pub reason: Option<String>,
}

/// The interrupt a reassignment is for.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct ReassignedInterrupt {
    pub run_id: String,
    pub node_id: String,
    pub title: String,
}

/// Where a delegation stands.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum DelegationState {
    Upcoming,
    Active,
    Ended,
    Revoked,
}

/// A delegation (host extension): the delegate votes in the delegator's
/// seat; quorum counts seats, and one person holds at most one counted vote.
#[derive(ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct Delegation {
    pub delegation_id: String,
    pub delegator: String,
    pub delegator_name: String,
    pub delegate: String,
    pub delegate_name: String,
    pub starts_at: String,
    pub ends_at: Option<String>,
    /// Set for a reassignment of one pending interrupt.
    pub interrupt: Option<ReassignedInterrupt>,
    pub reason: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
    pub state: DelegationState,
}

/// `GET /delegations`.
#[derive(ToSchema)]
pub struct DelegationList {
    pub items: Vec<Delegation>,
}
