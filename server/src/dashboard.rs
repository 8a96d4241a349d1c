//! The admin dashboard's form posts. Each checks the admin role, calls the
//! engine, leaves a one-time message in the session and redirects back
//! (post/redirect/get), so the dashboard works without JavaScript.

use crate::state::AppState;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use tollgate::engine::admin::{MembershipKind, PrincipalEdit};
use tollgate::{EngineError, Principal};
use tollgate_app::admin::api::Flash;
use tollgate_app::api::SignedIn;
use tower_sessions::Session;

/// The session key of the one-time message.
pub const FLASH_KEY: &str = "dashboard_flash";

/// Posted fields; repeated names (checkboxes) keep every value.
type Fields = Form<Vec<(String, String)>>;

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

/// Why a post is not an admin's.
enum Refused {
    SignIn,
    Forbidden(String),
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::SignIn => Redirect::to("/signin?next=/dashboard").into_response(),
            Refused::Forbidden(why) => (axum::http::StatusCode::FORBIDDEN, why).into_response(),
        }
    }
}

/// The signed-in admin; anyone else is sent to sign in or refused.
fn admin(signed: Option<Extension<SignedIn>>) -> Result<Principal, Refused> {
    let Some(Extension(SignedIn(p))) = signed else {
        return Err(Refused::SignIn);
    };
    tollgate::engine::admin::require_admin(&p).map_err(|e| Refused::Forbidden(e.to_string()))?;
    Ok(p)
}

/// Leaves the outcome for the next page and redirects there.
async fn finish(session: &Session, to: &str, outcome: Result<Flash, EngineError>) -> Response {
    let flash = outcome.unwrap_or_else(|e| Flash {
        ok: false,
        message: match e.details().and_then(|d| d["field"].as_str().map(str::to_string)) {
            Some(f) if !e.to_string().contains(&f) => format!("{f}: {e}"),
            _ => e.to_string(),
        },
        secret: None,
    });
    if let Err(e) = session.insert(FLASH_KEY, &flash).await {
        tracing::warn!(error = %e, "could not keep the dashboard message");
    }
    Redirect::to(to).into_response()
}

fn ok(message: String) -> Flash {
    Flash {
        ok: true,
        message,
        secret: None,
    }
}

pub async fn save_person(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let edit = PrincipalEdit {
        id: field(&f, "id").to_string(),
        name: field(&f, "name").to_string(),
        email: Some(field(&f, "email").to_string()),
        groups: list(field(&f, "groups")),
        roles: list(field(&f, "roles")),
        is_override: checked(&f, "override"),
    };
    let outcome = state
        .engine
        .save_principal(&me.tenant, edit)
        .await
        .map(|p| ok(format!("Saved {}.", p.id)));
    finish(&session, "/dashboard/people", outcome).await
}

pub async fn set_password(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let id = field(&f, "id");
    let remove = field(&f, "op") == "remove";
    let password = (!remove).then(|| field(&f, "password"));
    let outcome = state
        .engine
        .admin_set_password(&me.tenant, id, password)
        .await
        .map(|()| {
            ok(if remove {
                format!("{id} can no longer sign in.")
            } else {
                format!("Password set for {id}.")
            })
        });
    finish(&session, "/dashboard/people", outcome).await
}

pub async fn membership(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let kind = match field(&f, "kind") {
        "group" => MembershipKind::Group,
        "role" => MembershipKind::Role,
        other => {
            let e = EngineError::validation("kind", format!("kind \"{other}\" is not group or role"));
            return finish(&session, "/dashboard/people", Err(e)).await;
        }
    };
    let (principal, name) = (field(&f, "principal"), field(&f, "name"));
    let add = field(&f, "op") != "remove";
    let outcome = state
        .engine
        .set_membership(&me.tenant, principal, kind, name, add)
        .await
        .map(|_| {
            ok(if add {
                format!("{principal} is in {} now.", name.trim())
            } else {
                format!("{principal} left {}.", name.trim())
            })
        });
    finish(&session, "/dashboard/people", outcome).await
}

pub async fn create_key(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let principal = field(&f, "principal");
    let label = Some(field(&f, "label").to_string());
    let outcome = state
        .engine
        .create_api_key(&me.tenant, principal, &all(&f, "scope"), label)
        .await
        .map(|k| Flash {
            ok: true,
            message: format!("Key {} created for {principal}.", k.id),
            secret: Some(k.key),
        });
    finish(&session, "/dashboard/keys", outcome).await
}

pub async fn revoke_key(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let outcome = state
        .engine
        .revoke_api_key(Some(&me.tenant), field(&f, "id"))
        .await
        .map(|k| ok(format!("Key {} is revoked.", k.id)));
    finish(&session, "/dashboard/keys", outcome).await
}

pub async fn add_token_key(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    if let Err(r) = admin(signed) {
        return r.into_response();
    }
    let kid = field(&f, "kid").trim().to_string();
    let secret = Some(field(&f, "secret").to_string());
    let activate = checked(&f, "activate");
    let outcome = state
        .engine
        .add_token_key(&kid, secret, activate)
        .await
        .map(|()| {
            ok(if activate {
                format!("Token key {kid} added; it signs new links.")
            } else {
                format!("Token key {kid} added; activate it to sign new links.")
            })
        });
    finish(&session, "/dashboard/keys", outcome).await
}

pub async fn activate_token_key(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    if let Err(r) = admin(signed) {
        return r.into_response();
    }
    let kid = field(&f, "kid");
    let outcome = state
        .engine
        .activate_token_key(kid)
        .await
        .map(|()| ok(format!("Token key {kid} signs new links now.")));
    finish(&session, "/dashboard/keys", outcome).await
}

pub async fn retire_token_key(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    if let Err(r) = admin(signed) {
        return r.into_response();
    }
    let kid = field(&f, "kid");
    let outcome = state.engine.retire_token_key(kid).await.map(|()| {
        ok(format!(
            "Token key {kid} is retired; links it signed work until they expire."
        ))
    });
    finish(&session, "/dashboard/keys", outcome).await
}

pub async fn retry_outbox(
    State(state): State<AppState>,
    session: Session,
    signed: Option<Extension<SignedIn>>,
    Form(f): Fields,
) -> Response {
    let me = match admin(signed) {
        Ok(p) => p,
        Err(r) => return r.into_response(),
    };
    let outcome = match field(&f, "id").parse::<i64>() {
        Ok(id) => state
            .engine
            .outbox_retry_for_tenant(&me.tenant, id)
            .await
            .map(|()| ok(format!("Message {id} is queued again."))),
        Err(_) => Err(EngineError::validation("id", "id must be a message number")),
    };
    finish(&session, "/dashboard/outbox", outcome).await
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
        .route("/dashboard/token-keys", post(add_token_key))
        .route("/dashboard/token-keys/activate", post(activate_token_key))
        .route("/dashboard/token-keys/retire", post(retire_token_key))
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
