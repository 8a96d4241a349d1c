//! The admin dashboard's form posts. Each checks the admin role, calls the
//! engine, leaves a one-time message in the session and redirects back
//! (post/redirect/get), so the dashboard works without JavaScript.

use crate::form_post::{ok, SignedInPost};
use crate::state::AppState;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use tollgate::engine::admin::{MembershipKind, PrincipalEdit};
use tollgate::EngineError;
use tollgate_app::admin::api::Flash;
use tollgate_app::admin::{CONFIRM_CANCEL, CONFIRM_REVOKE};
use tollgate_app::api::SignedIn;

/// The session key of the one-time message.
pub const FLASH_KEY: &str = "dashboard_flash";

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

fn all(fields: &[(String, String)], name: &str) -> Vec<String> {
    fields
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .collect()
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn checked(fields: &[(String, String)], name: &str) -> bool {
    !field(fields, name).is_empty()
}

/// A dashboard post by a signed-in admin ([`SignedInPost`] with the admin
/// role checked); anyone else is sent to sign in or refused.
pub struct AdminPost(SignedInPost);

impl<S: Send + Sync> FromRequest<S> for AdminPost {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if req.extensions().get::<SignedIn>().is_none() {
            return Err(Redirect::to("/signin?next=/dashboard").into_response());
        }
        let post = SignedInPost::from_request(req, state).await?;
        tollgate::engine::admin::require_admin(&post.me)
            .map_err(|e| (StatusCode::FORBIDDEN, e.to_string()).into_response())?;
        Ok(AdminPost(post))
    }
}

impl std::ops::Deref for AdminPost {
    type Target = SignedInPost;

    fn deref(&self) -> &SignedInPost {
        &self.0
    }
}

impl AdminPost {
    async fn finish(self, to: &str, outcome: Result<Flash, EngineError>) -> Response {
        self.0.finish(to, outcome).await
    }
}

pub async fn save_person(State(state): State<AppState>, post: AdminPost) -> Response {
    let edit = PrincipalEdit {
        id: post.field("id").to_string(),
        name: post.field("name").to_string(),
        email: Some(post.field("email").to_string()),
        groups: list(post.field("groups")),
        roles: list(post.field("roles")),
        is_override: checked(&post.fields, "override"),
    };
    let outcome = state
        .engine
        .save_principal(&post.actor(), edit)
        .await
        .map(|p| ok(format!("Saved {}.", p.id)));
    post.finish("/dashboard/people", outcome).await
}

pub async fn set_password(State(state): State<AppState>, post: AdminPost) -> Response {
    let id = post.field("id");
    let remove = post.field("op") == "remove";
    let password = (!remove).then(|| post.field("password"));
    let outcome = state
        .engine
        .admin_set_password(&post.actor(), id, password)
        .await
        .map(|()| {
            ok(if remove {
                format!("{id} can no longer sign in.")
            } else {
                format!("Password set for {id}.")
            })
        });
    post.finish("/dashboard/people", outcome).await
}

pub async fn membership(State(state): State<AppState>, post: AdminPost) -> Response {
    let kind = match post.field("kind") {
        "group" => MembershipKind::Group,
        "role" => MembershipKind::Role,
        other => {
            let e = EngineError::validation("kind", format!("kind \"{other}\" is not group or role"));
            return post.finish("/dashboard/people", Err(e)).await;
        }
    };
    let (principal, name) = (post.field("principal"), post.field("name"));
    let add = post.field("op") != "remove";
    let outcome = state
        .engine
        .set_membership(&post.actor(), principal, kind, name, add)
        .await
        .map(|_| {
            ok(if add {
                format!("{principal} is in {} now.", name.trim())
            } else {
                format!("{principal} left {}.", name.trim())
            })
        });
    post.finish("/dashboard/people", outcome).await
}

pub async fn create_key(State(state): State<AppState>, post: AdminPost) -> Response {
    let principal = post.field("principal");
    let label = Some(post.field("label").to_string());
    let outcome = state
        .engine
        .create_api_key(&post.actor(), principal, &all(&post.fields, "scope"), label)
        .await
        .map(|k| Flash {
            ok: true,
            message: format!("Key {} created for {principal}.", k.id),
            secret: Some(k.key),
        });
    post.finish("/dashboard/keys", outcome).await
}

/// A destructive post without its confirmation field acts on nothing: it
/// leads back to the confirmation step (see `tollgate_app::admin::confirm`).
fn unconfirmed(what: &str) -> EngineError {
    EngineError::validation(
        "confirm",
        format!("Nothing was {what}: confirm below, on the page that names it."),
    )
}

fn query_value(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

pub async fn revoke_key(State(state): State<AppState>, post: AdminPost) -> Response {
    let id = post.field("id").to_string();
    if post.field("confirm") != CONFIRM_REVOKE {
        let back = format!("/dashboard/keys?revoke={}", query_value(&id));
        return post.finish(&back, Err(unconfirmed("revoked"))).await;
    }
    let outcome = state
        .engine
        .revoke_api_key(&post.actor(), &id)
        .await
        .map(|k| ok(format!("Key {} is revoked.", k.id)));
    post.finish("/dashboard/keys", outcome).await
}

pub async fn cancel_run(State(state): State<AppState>, post: AdminPost) -> Response {
    let run = post.field("run").to_string();
    let page = format!("/dashboard/runs/{}", tollgate::ids::encode_path_id(&run));
    if post.field("confirm") != CONFIRM_CANCEL {
        return post
            .finish(&format!("{page}?cancel=1"), Err(unconfirmed("cancelled")))
            .await;
    }
    let reason = Some(post.field("reason").trim().to_string()).filter(|r| !r.is_empty());
    let outcome = match tollgate::ids::parse_run_id(&run) {
        Ok(run_id) => state
            .engine
            .cancel_run(&run_id, reason, &post.actor(), None)
            .await
            .and_then(|o| o.result)
            .map(|_| ok(format!("Run {run} is cancelled."))),
        Err(e) => Err(e),
    };
    post.finish(&page, outcome).await
}

pub async fn reassign(State(state): State<AppState>, post: AdminPost) -> Response {
    let run = post.field("run").to_string();
    let page = format!("/dashboard/runs/{}", tollgate::ids::encode_path_id(&run));
    let reason = Some(post.field("reason").trim().to_string()).filter(|r| !r.is_empty());
    let (from, to, node) = (post.field("from"), post.field("to"), post.field("node"));
    let outcome = match tollgate::ids::parse_run_id(&run) {
        Ok(run_id) => state
            .engine
            .reassign(&post.actor(), &run_id, node, from, to, reason)
            .await
            .map(|d| {
                ok(format!(
                    "{} now decides in {}'s place on this request.",
                    d.delegate_name, d.delegator_name
                ))
            }),
        Err(e) => Err(e),
    };
    post.finish(&page, outcome).await
}

pub async fn retry_outbox(State(state): State<AppState>, post: AdminPost) -> Response {
    let outcome = match post.field("id").parse::<i64>() {
        Ok(id) => state
            .engine
            .outbox_retry_for_tenant(&post.actor(), id)
            .await
            .map(|_| ok(format!("Message {id} is queued again."))),
        Err(_) => Err(EngineError::validation("id", "id must be a message number")),
    };
    post.finish("/dashboard/outbox", outcome).await
}

/// Routes of the dashboard's posts.
pub fn routes() -> axum::Router<AppState> {
    use axum::routing::post;
    axum::Router::new()
        .route("/dashboard/people", post(save_person))
        .route("/dashboard/people/password", post(set_password))
        .route("/dashboard/memberships", post(membership))
        .route("/dashboard/keys", post(create_key))
        .route("/dashboard/keys/revoke", post(revoke_key))
        .route("/dashboard/runs/cancel", post(cancel_run))
        .route("/dashboard/runs/reassign", post(reassign))
        .route("/dashboard/outbox/retry", post(retry_outbox))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields() {
        let f = vec![
            ("scope".to_string(), "runs:read".to_string()),
            ("scope".to_string(), "admin".to_string()),
            ("groups".to_string(), " ops, finance ,,".to_string()),
        ];
        assert_eq!(all(&f, "scope"), vec!["runs:read", "admin"]);
        assert_eq!(list(field(&f, "groups")), vec!["ops", "finance"]);
        assert_eq!(field(&f, "missing"), "");
        assert!(!checked(&f, "override"));
    }
}
