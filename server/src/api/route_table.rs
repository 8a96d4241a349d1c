// The REST routes, one line each: the router is built from this table (see
// `api::router`) and the OpenAPI test reads the same table
// (`server/tests/http_openapi.rs` includes this file), so a route added here
// without an OpenAPI annotation fails that test. Add routes nowhere else.
//
// Format: `METHOD "path" => handler,` with the path in axum syntax; parameter
// names are those of the published API (camelCase).
macro_rules! api_route_table {
    ($callback:ident) => {
        $callback! {
            GET "/.well-known/openwop" => discovery::discovery,
            GET "/healthz" => ops::healthz,
            GET "/metrics" => metrics::render,
            GET "/openapi.json" => openapi::serve,
            POST "/runs" => runs::create_run,
            GET "/runs/{runId}" => runs::get_run,
            POST "/runs/{runId}/cancel" => runs::cancel_run,
            GET "/runs/{runId}/events" => events::stream,
            GET "/runs/{runId}/events/poll" => events::poll,
            POST "/runs/{runId}/interrupts/{nodeId}" => runs::resolve,
            POST "/runs/{runId}/interrupts/{nodeId}/reassign" => delegations::reassign,
            GET "/runs/{runId}/interrupts/{nodeId}" => runs::inspect,
            GET "/interrupts" => runs::list_interrupts,
            GET "/interrupts/{token}" => tokens::inspect,
            GET "/interrupts/{token}/context" => tokens::context,
            POST "/interrupts/{token}" => tokens::resolve,
            GET "/workflows" => workflows::list,
            GET "/workflows/{workflowId}" => workflows::get,
            PUT "/workflows/{workflowId}" => workflows::put,
            GET "/delegations" => delegations::list,
            POST "/delegations" => delegations::create,
            POST "/delegations/{delegationId}/revoke" => delegations::revoke,
            GET "/admin/outbox" => admin::list_outbox,
            POST "/admin/outbox/{outboxId}/retry" => admin::retry_outbox,
        }
    };
}
