//! `GET /openapi.json`: the OpenAPI 3.1 description, generated from the
//! handlers' `#[utoipa::path]` annotations.

use super::schema;
use axum::Json;
use serde_json::Value;
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
        super::tokens::resolve,
        super::workflows::list,
        super::workflows::get,
        super::workflows::put,
        super::admin::list_outbox,
        super::admin::retry_outbox,
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
        schema::TokenInterrupt,
        schema::WorkflowInfo,
        schema::WorkflowList,
        schema::WorkflowDefinition,
        schema::Discovery,
        schema::Health,
        schema::JsonObject,
        schema::OutboxMessage,
        schema::OutboxList,
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
approvals:respond, admin (implies all). A missing or unknown key is 401 unauthenticated with \
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
    DOC.get_or_init(|| serde_json::to_value(ApiDoc::openapi()).expect("OpenAPI serializes"))
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
}
