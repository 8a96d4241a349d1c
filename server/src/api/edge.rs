//! The REST edge: one order of checks on every route. The router answers an
//! unknown route (404) or method (405); then this layer checks the credential
//! (401: the bearer key, or the token of `/interrupts/{token}`), the
//! requested protocol version (406) and the query parameters (400 naming an
//! unknown one); the handler then checks its own input (400). Which credential
//! a route takes and which query parameters it accepts are read from the
//! OpenAPI document, so what is documented is what is enforced.

use super::error::ApiError;
use super::extract::Authed;
use super::PROTOCOL_VERSION;
use crate::state::AppState;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::{request::Parts, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a route takes as its credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    None,
    /// `Authorization: Bearer <api key>` (the operation lists `bearer` security).
    Bearer,
    /// The `{token}` path parameter is the credential.
    Token,
}

#[derive(Debug)]
struct Rule {
    credential: Credential,
    /// The documented query parameters; any other is refused.
    query: Vec<String>,
}

/// `(METHOD, path template)` → rule, from the OpenAPI document.
fn rules() -> &'static HashMap<(String, String), Rule> {
    static RULES: OnceLock<HashMap<(String, String), Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        let mut rules = HashMap::new();
        let doc = super::openapi::document();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                let params = op["parameters"].as_array().cloned().unwrap_or_default();
                let bearer = op["security"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|req| req.get("bearer").is_some()));
                let token = params.iter().any(|p| p["in"] == "path" && p["name"] == "token");
                let credential = match (bearer, token) {
                    (true, _) => Credential::Bearer,
                    (false, true) => Credential::Token,
                    (false, false) => Credential::None,
                };
                let query = params
                    .iter()
                    .filter(|p| p["in"] == "query")
                    .filter_map(|p| p["name"].as_str().map(str::to_string))
                    .collect();
                rules.insert((method.to_uppercase(), path.clone()), Rule { credential, query });
            }
        }
        rules
    })
}

/// `OpenWOP-Version` values this host serves: major 2, as `2`, `2.N` or `2.N.M`.
pub fn is_supported_version(v: &str) -> bool {
    let mut parts = v.split('.');
    parts.next() == Some("2") && {
        let rest: Vec<&str> = parts.collect();
        rest.len() <= 2
            && rest
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// The pattern of `is_supported_version`, as the OpenAPI document states it.
pub const VERSION_PATTERN: &str = r"^2(\.[0-9]{1,9}){0,2}$";

fn version_unsupported(requested: &str) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::NOT_ACCEPTABLE,
        "protocol_version_unsupported",
        format!("this host speaks OpenWOP {PROTOCOL_VERSION}; requested {requested:?}"),
    );
    e.details = Some(serde_json::json!({ "protocolVersions": [PROTOCOL_VERSION] }));
    e
}

/// Runs the checks in order and stamps `OpenWOP-Version` on every answer.
pub async fn edge(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut res = match check(&state, req).await {
        Ok(req) => next.run(req).await,
        Err(e) => e.into_response(),
    };
    res.headers_mut()
        .insert("openwop-version", HeaderValue::from_static(PROTOCOL_VERSION));
    res
}

async fn check(state: &AppState, req: Request) -> Result<Request, ApiError> {
    let method = if req.method() == Method::HEAD {
        Method::GET
    } else {
        req.method().clone()
    };
    let rule = req
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| rules().get(&(method.as_str().to_string(), m.as_str().to_string())));
    // No rule: a method the route does not serve; the router answers 405.
    let Some(rule) = rule else { return Ok(req) };
    let (mut parts, body) = req.into_parts();
    match rule.credential {
        Credential::None => {}
        Credential::Bearer => {
            let authed = Authed::authenticate(&parts, state).await?;
            parts.extensions.insert(authed);
        }
        Credential::Token => {
            let token = path_param(&mut parts, state, "token").await.unwrap_or_default();
            state.engine.verify_token(&token)?;
        }
    }
    if let Some(v) = parts.headers.get("openwop-version") {
        let v = v.to_str().unwrap_or("");
        if !is_supported_version(v) {
            return Err(version_unsupported(v));
        }
    }
    if let Some(query) = parts.uri.query() {
        for (name, _) in url::form_urlencoded::parse(query.as_bytes()) {
            if !rule.query.iter().any(|q| *q == name) {
                let accepted = if rule.query.is_empty() {
                    "this route takes no query parameters".to_string()
                } else {
                    format!("this route accepts {}", rule.query.join(", "))
                };
                return Err(ApiError::validation(
                    &name,
                    format!("unknown query parameter {name:?}: {accepted}"),
                ));
            }
        }
    }
    Ok(Request::from_parts(parts, body))
}

async fn path_param(parts: &mut Parts, state: &AppState, name: &str) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.ok()?;
    params
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        for ok in ["2", "2.0", "2.1", "2.0.3"] {
            assert!(is_supported_version(ok), "{ok}");
        }
        for bad in ["", "3", "20", "2.", "2.x", "2.0.0.0", " 2", "2.0 ", "v2", "１"] {
            assert!(!is_supported_version(bad), "{bad:?}");
        }
    }

    #[test]
    fn every_routed_operation_has_a_rule() {
        for (method, path) in super::super::api_routes() {
            let rule = rules()
                .get(&(method.as_str().to_string(), path.to_string()))
                .unwrap_or_else(|| panic!("{method} {path} has no rule"));
            if path.contains("{token}") {
                assert_eq!(rule.credential, Credential::Token, "{path}");
            }
        }
        let list = &rules()[&("GET".to_string(), "/interrupts".to_string())];
        assert_eq!(list.credential, Credential::Bearer);
        assert!(list.query.iter().any(|q| q == "status"));
        let health = &rules()[&("GET".to_string(), "/healthz".to_string())];
        assert_eq!(health.credential, Credential::None);
        assert!(health.query.is_empty());
    }
}
