//! What every request passes through, as two middlewares around the routes
//! with `CatchPanicLayer` between them (`server::router`). Each concern is a
//! plain function in its own module; these only put them in order. Two
//! `from_fn` layers instead of one per concern: each such layer clones the
//! layers inside it and boxes a future per request (#17, docs/performance.md).

use crate::api::metrics::HttpTimer;
use crate::headers::{self, SecurityHeaders};
use crate::session;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tower::ServiceExt;
use tower_sessions::Session;

/// Outside the panic catcher: counts the request by route and status (a
/// caught panic as a 500) and sets the security headers on every answer.
pub async fn respond(State(options): State<SecurityHeaders>, req: Request, next: Next) -> Response {
    let is_asset = headers::is_static_asset(req.uri().path());
    let timer = HttpTimer::start(&req);
    let mut res = next.run(req).await;
    timer.finish(res.status());
    headers::apply(res.headers_mut(), options, is_asset);
    res
}

/// What [`admit`] needs: the application and the router of the console's
/// interrupt pages, which share their path with the REST API.
#[derive(Clone)]
pub struct Admission {
    pub state: AppState,
    pub console: Router,
}

/// Inside the panic catcher, in this order: the session's principal into the
/// request, the sign-in redirect and cross-site check, browsers' interrupt
/// pages to the console router, and server functions' argument errors as 400.
pub async fn admit(
    State(admission): State<Admission>,
    session: Session,
    req: Request,
    next: Next,
) -> Response {
    let req = session::load_principal(&admission.state, &session, req).await;
    if let Some(refused) = session::guard(&admission.state, &req) {
        return refused;
    }
    if session::is_interrupt_page(req.uri().path()) && session::is_browser(&req) {
        return match admission.console.oneshot(req).await {
            Ok(res) => res,
            Err(never) => match never {},
        };
    }
    if crate::server_fns::is_server_fn(req.uri().path()) {
        return crate::server_fns::args_status(next.run(req).await).await;
    }
    next.run(req).await
}
