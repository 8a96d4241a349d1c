//! Console form posts: sign-in, sign-out, and deciding an interrupt as the
//! signed-in person or through a token link. Each is a plain HTML form post
//! (works without JavaScript); after a refused decision the page is drawn
//! again with the person's input and each error beside its field.

use crate::session::{self, GENERATION_KEY, PRINCIPAL_KEY};
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use leptos::prelude::provide_context;
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use tollgate::{Actor, EngineError, InterruptView};
use tollgate_app::api::{BulkDone, BulkOutcome, Posted, PostedForm, SignedIn};
use tollgate_app::form::{
    errors_for_form, field_tree, form_to_json, handle_row_action, pointer_to_path, resume_field_to_path,
};
use tower_sessions::Session;

#[derive(Deserialize)]
pub struct SignInForm {
    user: String,
    password: String,
    next: Option<String>,
}

/// `POST /signin`. Throttled per account and per client address (the TCP
/// peer): over the limit the page is drawn again with `429` and
/// `Retry-After`. After signing in, only a same-origin path is followed
/// (`tollgate::sign_in::safe_next`).
pub async fn sign_in(State(state): State<AppState>, session: Session, req: Request) -> Response {
    let (mut parts, body) = req.into_parts();
    let address = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| a.ip());
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "form too large").into_response();
    };
    let form: SignInForm = match serde_urlencoded::from_bytes(&bytes) {
        Ok(f) => f,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let next = tollgate::sign_in::safe_next(form.next.as_deref().unwrap_or("/")).to_string();
    match state
        .engine
        .sign_in(form.user.trim(), &form.password, address)
        .await
    {
        Ok(Some(signed)) => {
            // A new session id on sign-in (no fixation), bound to the password generation.
            let stored = session.cycle_id().await.is_ok()
                && session.insert(PRINCIPAL_KEY, &signed.principal.id).await.is_ok()
                && session.insert(GENERATION_KEY, signed.generation).await.is_ok();
            if !stored {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the session could not be stored",
                )
                    .into_response();
            }
            tracing::info!(principal = %signed.principal.id, "signed in");
            Redirect::to(&next).into_response()
        }
        Ok(None) => {
            Redirect::to(&format!("/signin?error=1&next={}", session::urlencode(&next))).into_response()
        }
        Err(e) => match e.retry_after_secs() {
            Some(secs) => {
                let kind = if e.http_status() == 429 {
                    "throttled"
                } else {
                    "busy"
                };
                let uri = format!(
                    "/signin?error={kind}&retry={secs}&next={}",
                    session::urlencode(&next)
                );
                parts.uri = uri.parse().unwrap_or_else(|_| "/signin".parse().expect("a path"));
                let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::TOO_MANY_REQUESTS);
                let mut res = redraw(&state, &parts, PostedForm::default(), status).await;
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(secs));
                tracing::warn!(status = e.http_status(), "sign-in refused: {e}");
                res
            }
            None => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        },
    }
}

pub async fn sign_out(session: Session) -> Response {
    let _ = session.flush().await;
    Redirect::to("/signin?signed_out=1").into_response()
}

/// Draws the console page at the request's path again, with `posted` as context.
async fn redraw(
    state: &AppState,
    parts: &axum::http::request::Parts,
    posted: PostedForm,
    status: StatusCode,
) -> Response {
    let engine = state.engine.clone();
    let leptos = state.leptos.clone();
    let shell_options = state.leptos.clone();
    let handler = leptos_axum::render_app_async_with_context(
        move || {
            provide_context(engine.clone());
            provide_context(leptos.clone());
            provide_context(Posted(posted.clone()));
        },
        move || tollgate_app::shell(shell_options.clone()),
    );
    let mut req = Request::builder()
        .method(Method::GET)
        .uri(parts.uri.clone())
        .body(Body::empty())
        .expect("request");
    *req.headers_mut() = parts.headers.clone();
    *req.extensions_mut() = parts.extensions.clone();
    let mut res = handler(req).await;
    *res.status_mut() = status;
    res
}

/// Turns the posted fields into a resume value and resolves with `resolve`.
async fn decide<F, Fut>(
    view: &InterruptView,
    fields: &[(String, String)],
    resolve: F,
) -> (PostedForm, StatusCode)
where
    F: FnOnce(Value) -> Fut,
    Fut: Future<Output = Result<tollgate::Outcome<tollgate::Resolved>, EngineError>>,
{
    // The form as the page drew it; the engine says which member, if any, the buttons set.
    let form = tollgate::present::answer_form(
        view.kind,
        &view.payload,
        &view.resume_schema,
        &view.request,
        &view.request_schema,
    );
    let tree = match field_tree(&form.schema) {
        Ok(t) => t,
        Err(e) => {
            return (
                PostedForm {
                    message: Some(format!("this form cannot be drawn: {e}")),
                    ..Default::default()
                },
                StatusCode::INTERNAL_SERVER_ERROR,
            )
        }
    };
    let member = form.choice.as_ref().map(|c| c.member.as_str());
    let values: tollgate_app::form::FormValues = fields
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != member)
        .cloned()
        .collect();
    if let Some(values) = handle_row_action(&tree, fields) {
        return (
            PostedForm {
                values,
                ..Default::default()
            },
            StatusCode::OK,
        );
    }
    let value = match form_to_json(&tree, fields) {
        Ok(v) => v,
        Err(errors) => {
            let errors = errors_for_form(&tree, errors.into_iter().map(|e| (e.path, e.message)));
            return (
                PostedForm {
                    values,
                    errors,
                    message: Some("Please correct the fields marked below.".into()),
                    done: false,
                },
                StatusCode::BAD_REQUEST,
            );
        }
    };
    let pressed = member.and_then(|m| fields.iter().find(|(k, _)| k == m).map(|(_, v)| v.as_str()));
    let value = tollgate::present::resume_from_form(view.kind, &form, value, pressed);
    let result = resolve(value).await.and_then(|o| o.result);
    match result {
        Ok(resolved) => (
            PostedForm {
                done: true,
                message: Some(
                    if resolved.status == "waiting" || resolved.status == "suspended" {
                        "Your decision was recorded.".to_string()
                    } else {
                        format!("Your decision was recorded. The run is now {}.", resolved.status)
                    },
                ),
                ..Default::default()
            },
            StatusCode::OK,
        ),
        Err(e) => {
            let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            let mut errors = Vec::new();
            if let Some(details) = e.details() {
                for err in details["errors"].as_array().into_iter().flatten() {
                    // The field the engine names (`resumeValue.answers.region`), else the pointer.
                    let path = err["field"]
                        .as_str()
                        .and_then(resume_field_to_path)
                        .or_else(|| err["pointer"].as_str().map(pointer_to_path));
                    if let (Some(p), Some(m)) = (path, err["message"].as_str()) {
                        errors.push((p, m.to_string()));
                    }
                }
                // A rule on one field (a missing answer, a correlation that does not match).
                if errors.is_empty() {
                    if let Some(p) = details["field"].as_str().and_then(resume_field_to_path) {
                        errors.push((p, e.to_string()));
                    }
                }
            }
            let message = if errors.is_empty() {
                e.to_string()
            } else {
                "Please correct the fields marked below.".into()
            };
            (
                PostedForm {
                    values,
                    errors: errors_for_form(&tree, errors),
                    message: Some(message),
                    done: false,
                },
                status,
            )
        }
    }
}

/// `POST /runs/{runId}/interrupts/{nodeId}` from the console form.
pub async fn decide_signed_in(State(state): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // Read from the path itself: this router is reached through the API
    // router's middleware, so `Path` would see both routers' parameters.
    let segs: Vec<&str> = parts.uri.path().trim_start_matches('/').split('/').collect();
    let (run, node) = match segs.as_slice() {
        [_, run, _, node] => (run.to_string(), node.to_string()),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let Some(SignedIn(principal)) = parts.extensions.get::<SignedIn>().cloned() else {
        return Redirect::to("/signin").into_response();
    };
    let fields = match read_form(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let actor = Actor::session(principal);
    let run_id = match tollgate::ids::parse_run_id(&run) {
        Ok(r) => r,
        Err(e) => return (StatusCode::NOT_FOUND, e.to_string()).into_response(),
    };
    let view = match state.engine.inspect_interrupt(&run_id, &node, &actor).await {
        Ok(v) => v,
        Err(e) => {
            let posted = PostedForm {
                message: Some(e.to_string()),
                ..Default::default()
            };
            return redraw(
                &state,
                &parts,
                posted,
                StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::NOT_FOUND),
            )
            .await;
        }
    };
    let engine = state.engine.clone();
    let (posted, status) = decide(&view, &fields, |value| async move {
        engine.resolve(&run_id, &node, value, &actor, None).await
    })
    .await;
    if posted.done {
        // Post/redirect/get: a reload does not post again.
        let to = format!("{}?decided=1", parts.uri.path());
        return Redirect::to(&to).into_response();
    }
    redraw(&state, &parts, posted, status).await
}

/// `POST /t/{token}`: decides as the link's recipient.
pub async fn decide_by_token(
    State(state): State<AppState>,
    Path(token): Path<String>,
    req: Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let fields = match read_form(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let view = match state.engine.inspect_by_token(&token).await {
        Ok((v, _)) => v,
        // The page explains an unusable link.
        Err(e) => {
            let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            return redraw(&state, &parts, PostedForm::default(), status).await;
        }
    };
    let engine = state.engine.clone();
    let t = token.clone();
    let (posted, status) = decide(&view, &fields, |value| async move {
        engine.resolve_by_token(&t, value, None).await
    })
    .await;
    redraw(&state, &parts, posted, status).await
}

/// `POST /t/{token}/fresh`: mails a fresh link to the expired link's own
/// recipient (never an address from the request; throttled by the engine),
/// and draws the link's page again with what became of it.
pub async fn fresh_link(State(state): State<AppState>, Path(token): Path<String>, req: Request) -> Response {
    let (mut parts, _) = req.into_parts();
    let (message, status) = match state.engine.send_fresh_link(&token).await {
        Ok(()) => (
            "A fresh link is on its way to the address this one was sent to.".to_string(),
            StatusCode::ACCEPTED,
        ),
        Err(e) => (
            e.to_string(),
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST),
        ),
    };
    // The page of the link itself (which still explains it has expired).
    parts.uri = format!("/t/{token}").parse().unwrap_or(parts.uri);
    let posted = PostedForm {
        message: Some(message),
        ..PostedForm::default()
    };
    redraw(&state, &parts, posted, status).await
}

/// The session key of a bulk decision's outcome, shown once by the inbox drawn next.
pub const BULK_KEY: &str = "inbox_bulk";

/// `POST /inbox/decide` ("Approve / Reject selected"): `action` and each
/// checked `pick` go to `Engine::decide_many`. Its results are left in the
/// session for the inbox (same filters and page) drawn after the redirect;
/// a refused call (400 naming its field) draws the inbox again at once.
pub async fn decide_many(State(state): State<AppState>, session: Session, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Some(SignedIn(principal)) = parts.extensions.get::<SignedIn>().cloned() else {
        return Redirect::to("/signin").into_response();
    };
    let fields = match read_form(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let action = fields
        .iter()
        .find(|(k, _)| k == "action")
        .map_or("", |(_, v)| v.as_str());
    let picks: Vec<String> = fields
        .iter()
        .filter(|(k, _)| k == "pick")
        .map(|(_, v)| v.clone())
        .collect();
    let back = match parts.uri.query() {
        Some(q) if !q.is_empty() => format!("/?{q}"),
        _ => "/".to_string(),
    };
    match state
        .engine
        .decide_many(&Actor::session(principal), action, &picks)
        .await
    {
        Ok(results) => {
            let outcome = BulkOutcome { results, error: None };
            if let Err(e) = session.insert(BULK_KEY, &outcome).await {
                tracing::warn!(error = %e, "could not keep the bulk decision's results");
            }
            Redirect::to(&back).into_response()
        }
        Err(e) => {
            let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
            let outcome = BulkOutcome {
                results: vec![],
                error: Some(e.to_string()),
            };
            let mut parts = parts;
            parts.extensions.insert(BulkDone(outcome));
            redraw(&state, &parts, PostedForm::default(), status).await
        }
    }
}

async fn read_form(body: Body) -> Result<Vec<(String, String)>, Response> {
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .map_err(|_| (StatusCode::PAYLOAD_TOO_LARGE, "form too large").into_response())?;
    serde_urlencoded::from_bytes(&bytes).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()).into_response())
}
