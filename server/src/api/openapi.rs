//! `GET /openapi.json`: the OpenAPI 3.1 description, generated from the
//! handlers' `#[utoipa::path]` annotations.

use super::schema;
use axum::Json;
use serde_json::{json, Value};
use std::sync::OnceLock;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tollgate",
        description = "Durable interrupt engine: the OpenWOP v2 REST surface and host extensions. \
Errors use the closed envelope `{error, message, details?}`; every protocol response carries \
`OpenWOP-Version: 2.0`. Mutating routes honour `Idempotency-Key`.",
        license(name = "see the repository")
    ),
    paths(
        super::discovery::discovery,
        super::ops::healthz,
        super::metrics::render,
        serve,
        super::runs::create_run,
        super::runs::get_run,
        super::runs::cancel_run,
        super::events::stream,
        super::events::poll,
        super::runs::resolve,
        super::runs::inspect,
        super::runs::list_interrupts,
        super::tokens::inspect,
        super::tokens::context,
        super::tokens::resolve,
        super::workflows::list,
        super::workflows::get,
        super::workflows::put,
        super::admin::list_outbox,
        super::admin::retry_outbox,
        super::delegations::list,
        super::delegations::create,
        super::delegations::revoke,
        super::delegations::reassign,
    ),
    components(schemas(
        schema::ErrorEnvelope,
        schema::ErrorCode,
        schema::CreateRunRequest,
        schema::CreateRunResponse,
        schema::RunStatus,
        schema::RunSnapshot,
        schema::CancelRequest,
        schema::CancelResponse,
        schema::RunEvent,
        schema::EventsResponse,
        schema::PollResponse,
        schema::ResolveRequest,
        schema::ResolveResponse,
        schema::Vote,
        schema::InterruptView,
        schema::InterruptList,
        schema::InterruptPayload,
        schema::TokenInterruptContext,
        schema::WorkflowInfo,
        schema::WorkflowList,
        schema::WorkflowDefinition,
        schema::Discovery,
        schema::Health,
        schema::JsonObject,
        schema::OutboxMessage,
        schema::OutboxList,
        schema::Configurable,
        schema::RunConfigurable,
        schema::WorkflowNode,
        schema::NodeType,
        schema::InterruptStatus,
        schema::InterruptKind,
        schema::StreamMode,
        schema::TokenIntent,
        schema::OutboxKind,
        schema::OutboxStatus,
        schema::EventStream,
        schema::DelegationRequest,
        schema::ReassignRequest,
        schema::ReassignedInterrupt,
        schema::DelegationState,
        schema::Delegation,
        schema::DelegationList,
    )),
    modifiers(&Security),
    tags(
        (name = "runs", description = "Runs, their events and cancellation"),
        (name = "interrupts", description = "Inspecting and resolving interrupts"),
        (name = "tokens", description = "Signed interrupt links: the token is the credential"),
        (name = "workflows", description = "Workflow definitions"),
        (name = "discovery", description = "OpenWOP discovery"),
        (name = "operations", description = "Health, metrics and this document"),
        (name = "admin", description = "Administration (scope `admin`): the outbox of emails and run callbacks"),
        (name = "delegations", description = "Delegation: a person's decisions taken by another person of the tenant for a period, and an admin's reassignment of one pending approval's seat"),
    )
)]
pub struct ApiDoc;

/// The `bearer` scheme: API keys; the scopes each operation lists are the
/// key's scopes (`admin` implies all).
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "API key from [[api_keys]]. Scopes: runs:create, runs:read, runs:cancel, \
approvals:respond, runs:on-behalf (createRun.requestedBy), admin (implies all). A missing or unknown key is 401 unauthenticated with \
`WWW-Authenticate: Bearer`; a missing scope is 403 forbidden.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document as JSON (built once).
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).expect("OpenAPI serializes");
        edge_facts(&mut doc);
        add_links(&mut doc);
        doc
    })
}

/// One OpenAPI link: `(path, method, status, link name, target operation,
/// [(parameter, runtime expression)])`.
type Link = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// OpenAPI links: how an answer's ids feed the next operations (clients and
/// stateful fuzzing follow them).
const LINKS: &[Link] = &[
    (
        "/runs",
        "post",
        "201",
        "GetRun",
        "getRun",
        &[("runId", "$response.body#/runId")],
    ),
    (
        "/runs",
        "post",
        "201",
        "CancelRun",
        "cancelRun",
        &[("runId", "$response.body#/runId")],
    ),
    (
        "/runs",
        "post",
        "201",
        "StreamRunEvents",
        "streamRunEvents",
        &[("runId", "$response.body#/runId")],
    ),
    (
        "/runs",
        "post",
        "201",
        "PollRunEvents",
        "pollRunEvents",
        &[("runId", "$response.body#/runId")],
    ),
    (
        "/runs/{runId}",
        "get",
        "200",
        "GetInterruptAtCurrentNode",
        "getInterruptByRun",
        &[
            ("runId", "$response.body#/runId"),
            ("nodeId", "$response.body#/currentNodeId"),
        ],
    ),
    (
        "/interrupts",
        "get",
        "200",
        "GetFirstInterrupt",
        "getInterruptByRun",
        &[
            ("runId", "$response.body#/interrupts/0/runId"),
            ("nodeId", "$response.body#/interrupts/0/nodeId"),
        ],
    ),
    (
        "/interrupts",
        "get",
        "200",
        "ResolveFirstInterrupt",
        "resolveInterruptByRun",
        &[
            ("runId", "$response.body#/interrupts/0/runId"),
            ("nodeId", "$response.body#/interrupts/0/nodeId"),
        ],
    ),
    (
        "/runs/{runId}/interrupts/{nodeId}",
        "get",
        "200",
        "InspectByToken",
        "getInterruptByToken",
        &[("token", "$response.body#/token")],
    ),
    (
        "/runs/{runId}/interrupts/{nodeId}",
        "get",
        "200",
        "InspectContextByToken",
        "getInterruptContextByToken",
        &[("token", "$response.body#/token")],
    ),
    (
        "/runs/{runId}/interrupts/{nodeId}",
        "get",
        "200",
        "ResolveByToken",
        "resolveInterruptByToken",
        &[("token", "$response.body#/token")],
    ),
    (
        "/admin/outbox",
        "get",
        "200",
        "RetryFirstMessage",
        "retryOutbox",
        &[("outboxId", "$response.body#/items/0/id")],
    ),
    (
        "/workflows/{workflowId}",
        "put",
        "201",
        "GetWorkflow",
        "getWorkflow",
        &[("workflowId", "$request.path.workflowId")],
    ),
    (
        "/workflows/{workflowId}",
        "put",
        "200",
        "GetWorkflow",
        "getWorkflow",
        &[("workflowId", "$request.path.workflowId")],
    ),
];

/// Drops `null` from a parameter schema: `type: [T, "null"]` becomes `T`,
/// `oneOf: [{type: null}, X]` becomes `X`.
fn not_null(schema: &mut Value) {
    if let Some(types) = schema["type"].as_array() {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        schema["type"] = match kept.len() {
            1 => kept[0].clone(),
            _ => Value::Array(kept),
        };
    }
    if let Some(one) = schema["oneOf"].as_array() {
        let kept: Vec<Value> = one.iter().filter(|s| s["type"] != "null").cloned().collect();
        if kept.len() == 1 {
            let only = kept[0].clone();
            let obj = schema.as_object_mut().expect("a schema object");
            obj.remove("oneOf");
            if let Some(m) = only.as_object() {
                for (k, v) in m {
                    obj.insert(k.clone(), v.clone());
                }
            }
        } else {
            schema["oneOf"] = Value::Array(kept);
        }
    }
}

fn add_links(doc: &mut Value) {
    for (path, method, status, name, target, params) in LINKS {
        let pointer = format!(
            "/paths/{}/{method}/responses/{status}",
            path.replace('~', "~0").replace('/', "~1")
        );
        let response = doc
            .pointer_mut(&pointer)
            .unwrap_or_else(|| panic!("a link from an undocumented response {pointer}"));
        let parameters: serde_json::Map<String, Value> =
            params.iter().map(|(p, e)| (p.to_string(), json!(e))).collect();
        response["links"][*name] = json!({ "operationId": target, "parameters": parameters });
    }
}

const IDEMPOTENCY_KEY_PATTERN: &str = "^[A-Za-z0-9._~-]{22,128}$";

/// States on every operation, in one place, what the REST edge
/// (`edge.rs`) does on every route: the `OpenWOP-Version` header and the
/// values it serves, the `Idempotency-Key` grammar, and the answers the edge
/// and the router can give (400 for an unknown query parameter, 401 on
/// routes with a credential, 405, 406, 500 for a caught panic).
fn edge_facts(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            if !op.is_object() {
                continue;
            }
            let bearer = op["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            if !op["parameters"].is_array() {
                op["parameters"] = json!([]);
            }
            let params = op["parameters"].as_array_mut().expect("array");
            let token = params.iter().any(|p| p["in"] == "path" && p["name"] == "token");
            if !params.iter().any(|p| p["name"] == "OpenWOP-Version") {
                params.push(json!({ "name": "OpenWOP-Version", "in": "header", "required": false }));
            }
            for p in params.iter_mut() {
                // A parameter is absent or a value on the wire, never `null`
                // (utoipa writes an `Option<T>` parameter as nullable).
                if let Some(schema) = p.get_mut("schema") {
                    not_null(schema);
                }
                match p["name"].as_str() {
                    Some("OpenWOP-Version") => {
                        p["description"] = json!(
                            "Requested protocol version: major 2 (`2`, `2.N`, `2.N.M`); anything else is 406"
                        );
                        p["schema"] = json!({ "type": "string", "pattern": super::edge::VERSION_PATTERN });
                    }
                    Some("Idempotency-Key") => {
                        p["schema"] = json!({ "type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN });
                    }
                    _ => {}
                }
            }
            if !op["responses"].is_object() {
                op["responses"] = json!({});
            }
            let responses = op["responses"].as_object_mut().expect("object");
            let envelope = |description: &str| {
                json!({
                    "description": description,
                    "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorEnvelope" } } },
                })
            };
            responses.entry("400").or_insert_with(|| {
                envelope("`validation_error`: an unknown query parameter (`details.field` names it)")
            });
            if bearer {
                responses.entry("401").or_insert_with(|| {
                    let mut r = envelope("`unauthenticated`: missing, malformed or unknown API key");
                    r["headers"] = json!({ "WWW-Authenticate": { "description": "`Bearer`", "schema": { "type": "string" } } });
                    r
                });
            } else if token {
                responses.entry("401").or_insert_with(|| {
                    envelope("`interrupt_token_invalid`: grammar, algorithm, key id or MAC")
                });
                responses
                    .entry("410")
                    .or_insert_with(|| envelope("`interrupt_expired`: the link has expired"));
            }
            responses
                .entry("405")
                .or_insert_with(|| envelope("`method_not_allowed`"));
            responses.entry("406").or_insert_with(|| {
                envelope("`protocol_version_unsupported`: `OpenWOP-Version` asks for another major; `details.protocolVersions`")
            });
            responses
                .entry("500")
                .or_insert_with(|| envelope("`internal_error`; see the server log"));
        }
    }
}

/// `GET /openapi.json`
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    operation_id = "openapi",
    summary = "This OpenAPI 3.1 document",
    responses(
        (status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object),
        (status = 405, description = "`method_not_allowed`", body = schema::ErrorEnvelope),
        (status = 406, description = "`protocol_version_unsupported`", body = schema::ErrorEnvelope),
    )
)]
pub async fn serve() -> Json<Value> {
    Json(document().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The routes the router serves and the operations documented are the same set.
    #[test]
    fn every_route_is_documented_and_every_operation_is_routed() {
        let routed: BTreeSet<(String, String)> = super::super::api_routes()
            .into_iter()
            .map(|(m, p)| (m.as_str().to_lowercase(), p.to_string()))
            .collect();
        let doc = document();
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if [
                    "get", "put", "post", "delete", "patch", "head", "options", "trace",
                ]
                .contains(&method.as_str())
                {
                    documented.insert((method.clone(), path.clone()));
                }
            }
        }
        assert_eq!(routed, documented);
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    }

    /// The documented bound on `timeoutMs` is the engine's.
    #[test]
    fn timeout_maximum_is_the_engines() {
        let timeout = &document()["components"]["schemas"]["InterruptPayload"]["properties"]["timeoutMs"];
        assert_eq!(
            timeout["maximum"].as_f64(),
            Some(tollgate::definition::MAX_WAIT_MS as f64),
            "{timeout}"
        );
    }
}
