//! A console form post by a signed-in person: who, the fields, and the
//! session its one-time message is left in. The dashboard's and the
//! delegations page's posts are read through it, call the engine, and
//! answer with a redirect back (post/redirect/get), so those pages work
//! without JavaScript.

use crate::dashboard::FLASH_KEY;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use tollgate::{EngineError, Principal};
use tollgate_app::admin::api::Flash;
use tollgate_app::api::SignedIn;
use tower_sessions::Session;

/// A post by a signed-in person; anyone else is sent to sign in at `/signin`.
pub struct SignedInPost {
    pub me: Principal,
    session: Session,
    pub fields: Vec<(String, String)>,
}

impl<S: Send + Sync> FromRequest<S> for SignedInPost {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let session = Session::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Some(SignedIn(me)) = parts.extensions.get::<SignedIn>().cloned() else {
            return Err(Redirect::to("/signin").into_response());
        };
        let Form(fields) =
            Form::<Vec<(String, String)>>::from_request(Request::from_parts(parts, body), state)
                .await
                .map_err(IntoResponse::into_response)?;
        Ok(SignedInPost { me, session, fields })
    }
}

impl SignedInPost {
    /// The signed-in person as the actor the engine checks.
    pub fn actor(&self) -> tollgate::Actor {
        tollgate::Actor::session(self.me.clone())
    }

    /// A field's value ("" when absent).
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Leaves the outcome for the next page and redirects there; a refusal
    /// names its field when the message does not already.
    pub async fn finish(self, to: &str, outcome: Result<Flash, EngineError>) -> Response {
        let flash = outcome.unwrap_or_else(|e| Flash {
            ok: false,
            message: match e.details().and_then(|d| d["field"].as_str().map(str::to_string)) {
                Some(f) if !e.to_string().contains(&f) => format!("{f}: {e}"),
                _ => e.to_string(),
            },
            secret: None,
        });
        if let Err(e) = self.session.insert(FLASH_KEY, &flash).await {
            tracing::warn!(error = %e, "could not keep the page's message");
        }
        Redirect::to(to).into_response()
    }
}

/// A message that something worked.
pub fn ok(message: String) -> Flash {
    Flash {
        ok: true,
        message,
        secret: None,
    }
}
