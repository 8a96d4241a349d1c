//! Console sessions: tower-sessions with its sqlx store in the engine's
//! database (SQLite file or PostgreSQL, so every instance sees every
//! session), the signed-in principal put into request extensions, a
//! sign-in redirect for console pages, and the CSRF check on console posts
//! (SameSite=Lax cookies plus an Origin/Referer check).

use crate::state::AppState;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use std::str::FromStr;
use std::time::Duration;
use tollgate_app::admin::api::{Flash, FlashMessage};
use tollgate_app::api::{BulkDone, BulkOutcome, SignedIn};
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, ExpiredDeletion, SessionStore};
use tower_sessions::{Expiry, Session, SessionManagerLayer};
use tower_sessions_sqlx_store::{PostgresStore, SqliteStore};

/// The session key holding the principal id.
pub const PRINCIPAL_KEY: &str = "principal";
/// The session key holding the password generation signed in under.
pub const GENERATION_KEY: &str = "password_generation";

/// Sessions end after this long without a request.
pub const IDLE_HOURS: i64 = 12;

/// Sessions in the engine's database, whichever back end it is.
#[derive(Debug, Clone)]
pub enum DbSessionStore {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

#[async_trait::async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        match self {
            DbSessionStore::Sqlite(s) => s.create(record).await,
            DbSessionStore::Postgres(s) => s.create(record).await,
        }
    }
    async fn save(&self, record: &Record) -> session_store::Result<()> {
        match self {
            DbSessionStore::Sqlite(s) => s.save(record).await,
            DbSessionStore::Postgres(s) => s.save(record).await,
        }
    }
    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        match self {
            DbSessionStore::Sqlite(s) => s.load(id).await,
            DbSessionStore::Postgres(s) => s.load(id).await,
        }
    }
    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        match self {
            DbSessionStore::Sqlite(s) => s.delete(id).await,
            DbSessionStore::Postgres(s) => s.delete(id).await,
        }
    }
}

impl DbSessionStore {
    async fn open(database_url: &str) -> anyhow::Result<DbSessionStore> {
        if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(4)
                .connect(database_url)
                .await?;
            let store = PostgresStore::new(pool);
            store.migrate().await?;
            return Ok(DbSessionStore::Postgres(store));
        }
        let options = SqliteConnectOptions::from_str(database_url)?
            .create_if_missing(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        let store = SqliteStore::new(pool);
        store.migrate().await?;
        Ok(DbSessionStore::Sqlite(store))
    }

    async fn delete_expired(&self) -> session_store::Result<()> {
        match self {
            DbSessionStore::Sqlite(s) => s.delete_expired().await,
            DbSessionStore::Postgres(s) => s.delete_expired().await,
        }
    }
}

/// The session layer; sessions live in the engine's database (a pool of
/// their own on it).
pub async fn layer(database_url: &str, secure: bool) -> anyhow::Result<SessionManagerLayer<DbSessionStore>> {
    let store = DbSessionStore::open(database_url).await?;
    let sweeper = store.clone();
    tokio::spawn(async move {
        loop {
            if let Err(e) = sweeper.delete_expired().await {
                tracing::warn!(error = %e, "deleting expired sessions failed");
            }
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    Ok(SessionManagerLayer::new(store)
        .with_name("tollgate_session")
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_expiry(Expiry::OnInactivity(time::Duration::hours(IDLE_HOURS))))
}

/// Puts the session's principal (if any) into the request as [`SignedIn`].
/// The session ends (is flushed) when its principal was removed, lost their
/// password or changed it since signing in — checked on every request,
/// against a view of the directory at most a few seconds old.
pub async fn load_principal(state: &AppState, session: &Session, mut req: Request) -> Request {
    // Without a cookie there is no session to read (an API client's
    // request: the session layer would build an empty record for nothing).
    if !req.headers().contains_key(header::COOKIE) {
        return req;
    }
    if let Ok(Some(id)) = session.get::<String>(PRINCIPAL_KEY).await {
        // Sessions from before generations were kept have none: they end.
        let generation = session.get::<i64>(GENERATION_KEY).await.ok().flatten();
        let principal = match generation {
            Some(g) => state.engine.session_principal(&id, g).await,
            None => Ok(None),
        };
        match principal {
            Ok(Some(p)) => {
                req.extensions_mut().insert(SignedIn(p));
            }
            Ok(None) => {
                tracing::info!(principal = %id, "console session ended: the person or their password was removed, or the password changed");
                let _ = session.flush().await;
            }
            Err(e) => tracing::error!(error = %e, "session check failed"),
        }
    }
    // A dashboard post's message is shown by the page drawn next, once.
    let flashed = req.uri().path().starts_with("/dashboard") || req.uri().path() == "/me/delegations";
    if flashed && req.method() == Method::GET && is_browser(&req) {
        if let Ok(Some(flash)) = session.remove::<Flash>(crate::dashboard::FLASH_KEY).await {
            req.extensions_mut().insert(FlashMessage(flash));
        }
    }
    // A bulk decision's results are shown by the inbox drawn next, once.
    if req.uri().path() == "/" && req.method() == Method::GET && is_browser(&req) {
        if let Ok(Some(done)) = session.remove::<BulkOutcome>(crate::console::BULK_KEY).await {
            req.extensions_mut().insert(BulkDone(done));
        }
    }
    req
}

/// Whether a path is a console interrupt page (`/runs/{runId}/interrupts/{nodeId}`).
pub fn is_interrupt_page(path: &str) -> bool {
    // (Asked of every request: no allocation, and paths outside `/runs/` end at the prefix.)
    let Some(rest) = path.trim_start_matches('/').strip_prefix("runs/") else {
        return false;
    };
    let mut segs = rest.split('/');
    matches!(
        (segs.next(), segs.next(), segs.next(), segs.next()),
        (Some(run), Some("interrupts"), Some(node), None) if !run.is_empty() && !node.is_empty()
    )
}

/// A browser asking for a console page, not an API client: no bearer key,
/// and HTML wanted (GET) or a form posted (POST).
pub fn is_browser(req: &Request) -> bool {
    if req.headers().contains_key(header::AUTHORIZATION) {
        return false;
    }
    match *req.method() {
        Method::GET | Method::HEAD => req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.to_ascii_lowercase().contains("text/html")),
        Method::POST => content_type(req).starts_with("application/x-www-form-urlencoded"),
        _ => false,
    }
}

/// Console pages that need a signed-in person.
fn needs_sign_in(path: &str) -> bool {
    path == "/" || is_interrupt_page(path) || is_dashboard(path) || is_own(path)
}

/// The signed-in person's own pages (`/me/delegations`).
fn is_own(path: &str) -> bool {
    path.starts_with("/me/")
}

fn is_dashboard(path: &str) -> bool {
    path == "/dashboard" || path.starts_with("/dashboard/")
}

/// Sends people who are not signed in to the sign-in page, and refuses
/// cross-site posts to the console (forms and server functions): the
/// answer instead of the route's, or `None` to go on.
pub fn guard(state: &AppState, req: &Request) -> Option<Response> {
    let path = req.uri().path();
    let console_post = req.method() == Method::POST
        && !is_api_call(req)
        && (path == "/signin"
            || path == "/signout"
            || path.starts_with("/t/")
            || path.starts_with("/api/")
            || path == "/inbox/decide"
            || is_dashboard(path)
            || is_own(path)
            // The interrupt page shares its path with the REST resolve: form
            // posts are the console's, whatever the case of their header.
            || (is_interrupt_page(path) && is_form_post(req)));
    if console_post && !same_origin(state, req) {
        return Some((StatusCode::FORBIDDEN, "cross-site form posts are refused").into_response());
    }
    let page_get = matches!(*req.method(), Method::GET | Method::HEAD)
        && needs_sign_in(path)
        && (path == "/" || is_dashboard(path) || is_own(path) || is_browser(req));
    if page_get && req.extensions().get::<SignedIn>().is_none() {
        let next_url = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/".into());
        let target = format!("/signin?next={}", urlencode(&next_url));
        return Some(Redirect::to(&target).into_response());
    }
    None
}

/// A request an API key authenticates (`Authorization: Bearer`), which no
/// browser sends by itself across sites, and that no session signs in: only
/// such a request skips the cross-site check. A browser does send other
/// schemes by itself (Basic, Digest or Negotiate credentials it holds for a
/// proxy), and a signed-in session acts as its person whatever else a request carries.
fn is_api_call(req: &Request<Body>) -> bool {
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.get(..7))
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer "));
    bearer && req.extensions().get::<SignedIn>().is_none()
}

/// A form's body, by its media type; media types are case-insensitive, and
/// the console takes a form in any case ([`is_browser`]), so this must too.
fn is_form_post(req: &Request<Body>) -> bool {
    let media_type = content_type(req);
    media_type.starts_with("application/x-www-form-urlencoded")
        || media_type.starts_with("multipart/form-data")
}

/// The request's `Content-Type`, lower-cased ("" without one).
fn content_type(req: &Request<Body>) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The browser's `Sec-Fetch-Site` must say `same-origin`; browsers that do not
/// send it must name this server in the Origin (or, without one, the Referer).
/// `Sec-Fetch-Site` comes first because pages are served with
/// `Referrer-Policy: no-referrer`, under which browsers send `Origin: null`
/// even for the console's own form posts.
fn same_origin(state: &AppState, req: &Request<Body>) -> bool {
    let get = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = req.headers().get("sec-fetch-site") {
        return site == "same-origin";
    }
    let claimed = match get(header::ORIGIN) {
        Some(o) if o != "null" => o.to_string(),
        _ => match get(header::REFERER) {
            Some(r) => origin_of(r),
            None => return false,
        },
    };
    let mut allowed = Vec::new();
    if let Some(host) = get(header::HOST) {
        allowed.push(format!("http://{host}"));
        allowed.push(format!("https://{host}"));
    }
    if let Some(public) = &state.config.server.public_url {
        allowed.push(origin_of(public));
    }
    allowed.iter().any(|a| a.eq_ignore_ascii_case(&claimed))
}

/// `https://host:port/path?q` → `https://host:port`.
fn origin_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            format!("{scheme}://{host}")
        }
        None => String::new(),
    }
}

pub fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_pages_and_origins() {
        assert!(is_interrupt_page("/runs/demo~2Fabc/interrupts/gate"));
        assert!(!is_interrupt_page("/runs/demo~2Fabc/interrupts"));
        assert!(!is_interrupt_page("/runs/demo~2Fabc/events"));
        assert!(!is_interrupt_page("/runs/demo~2Fabc/interrupts/gate/more"));
        assert!(!is_interrupt_page("/runs//interrupts/gate"));
        assert!(!is_interrupt_page("/runs/demo~2Fabc/interrupts/"));
        assert!(!is_interrupt_page("/runsx/demo~2Fabc/interrupts/gate"));
        assert!(!is_interrupt_page("/v1/runs/demo~2Fabc/interrupts/gate"));
        assert!(is_interrupt_page("//runs/demo~2Fabc/interrupts/gate"));
        assert_eq!(origin_of("http://127.0.0.1:3000/x?y"), "http://127.0.0.1:3000");
        assert_eq!(urlencode("/?a=b"), "/%3Fa%3Db");
    }
}
