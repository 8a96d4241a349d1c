//! Starting the server: engine, configuration sync, routes, timers.

use crate::api;
use crate::config::Config;
use crate::console;
use crate::live;
use crate::state::AppState;
use axum::Router;
use leptos::prelude::*;
use leptos_axum::{generate_route_list, LeptosRoutes};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tollgate::{Engine, EngineOptions, Principal};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

pub async fn serve(config: Config) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn".into()),
        )
        .init();
    config.log_env_warnings();

    let mut options = EngineOptions::new(&config.database.url);
    options.durability = config.database.durability;
    options.cache_mib = config.database.cache_mib;
    options.capabilities = config.interrupts.capabilities();
    let engine = Engine::open(options).await?;
    crate::published::check_database(&engine, &config).await?;
    sync_config(&engine, &config).await?;

    let listener = tokio::net::TcpListener::bind(config.server.bind).await?;
    let addr = listener.local_addr()?;
    let site_root = find_site_root(config.server.site_root.as_deref());
    let leptos = LeptosOptions::builder()
        .output_name("tollgate")
        .site_root(site_root.to_string_lossy().to_string())
        .site_pkg_dir("pkg")
        .site_addr(addr)
        .build();
    if !site_root.join("pkg").exists() {
        tracing::warn!(site_root = %site_root.display(), "console assets not found; build them with `cargo leptos build`");
    }

    let interval = Duration::from_millis(config.server.timer_interval_ms.max(10));
    let mut config = config;
    if config.server.public_url.is_none() {
        config.server.public_url = Some(format!("http://{addr}"));
    }
    let state_config_notes = config.demo_notes.clone();
    let state = AppState::new(engine.clone(), Arc::new(config), leptos);
    let secure = public_url_is_https(&state.config);
    let sessions = crate::session::layer(&state.config.database.url, secure).await?;
    let mail_config = state.config.clone();
    let app = router(state).layer(sessions);

    let timers = tokio::spawn(run_timers(engine.clone(), interval));
    let callbacks = tokio::spawn(crate::callbacks::run(engine.clone(), mail_config.clone()));
    let mailer = tokio::spawn(crate::mailer::run(engine.clone(), mail_config));
    // Printed for people and for tests that bind port 0.
    println!("tollgate listening on http://{addr}");
    for note in &state_config_notes {
        println!("{note}");
    }
    tracing::info!(%addr, "listening");
    // The peer address is the client address sign-in throttling counts by.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(async {
        shutdown_signal().await;
        live::close_streams();
    })
    .await?;
    timers.abort();
    mailer.abort();
    callbacks.abort();
    Ok(())
}

/// Served over https: cookies are `Secure` and responses carry HSTS.
fn public_url_is_https(config: &Config) -> bool {
    config
        .server
        .public_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
}

/// What no route serves, answered here rather than by the console's
/// fallback: a path with a dot segment (which browsers resolve before they
/// send; the console's router would resolve it too, and draw a page the
/// sign-in check never saw), and any request that is neither a browser's
/// page nor a static file, which gets the API's JSON `404 not_found`.
fn unrouted(req: &axum::extract::Request) -> Option<axum::response::Response> {
    use axum::response::IntoResponse;
    let path = req.uri().path();
    let dot_segment = path.split('/').any(|segment| {
        let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
        decoded == "." || decoded == ".."
    });
    let not_found = |message: String| {
        let mut answer = api::error::ApiError::from(tollgate::EngineError::NotFound(message)).into_response();
        // A protocol answer like the API's own (`api::edge`).
        answer.headers_mut().insert(
            "openwop-version",
            axum::http::HeaderValue::from_static(api::PROTOCOL_VERSION),
        );
        Some(answer)
    };
    if dot_segment {
        return not_found("no such path: it has a \".\" or \"..\" segment".into());
    }
    if !crate::session::is_browser(req) && !crate::headers::is_static_asset(path) {
        return not_found(format!("no route for {} {path}", req.method()));
    }
    None
}

/// The whole application without the session layer (which `serve` adds
/// outermost): REST API, console pages and posts, static files.
pub fn router(state: AppState) -> Router {
    let leptos = state.leptos.clone();
    // The interrupt page shares its path with the REST API's
    // `GET|POST /runs/{runId}/interrupts/{nodeId}`; browsers (HTML wanted or a
    // form posted, no bearer key) are sent to a console router of its own.
    let (interrupt_pages, pages): (Vec<_>, Vec<_>) = generate_route_list(tollgate_app::App)
        .into_iter()
        .partition(|r| r.path().starts_with("/runs/"));
    // `/inbox/decide` is a form post (`console::decide_many`); its page is only drawn by it.
    let pages: Vec<_> = pages
        .into_iter()
        .filter(|r| r.path() != "/inbox/decide")
        .collect();
    let context = {
        let engine = state.engine.clone();
        move || provide_context(engine.clone())
    };
    let shell = {
        let leptos = leptos.clone();
        move || tollgate_app::shell(leptos.clone())
    };
    // Static files, and the console's own not-found page for browsers; the
    // pages it draws read the engine like every other.
    let files =
        leptos_axum::file_and_error_handler_with_context::<AppState, _>(context.clone(), tollgate_app::shell);
    let console: Router = Router::new()
        .leptos_routes_with_context(&state, interrupt_pages, context.clone(), shell.clone())
        .route(
            // The same path and parameter names as the page's route.
            "/runs/{run_id}/interrupts/{node_id}",
            axum::routing::post(console::decide_signed_in),
        )
        .with_state(state.clone());
    Router::new()
        .route("/signin", axum::routing::post(console::sign_in))
        .route("/signout", axum::routing::post(console::sign_out))
        .route("/inbox/stream", axum::routing::get(live::inbox_stream))
        .route("/inbox/decide", axum::routing::post(console::decide_many))
        .route("/t/{token}", axum::routing::post(console::decide_by_token))
        .route("/t/{token}/fresh", axum::routing::post(console::fresh_link))
        .merge(crate::dashboard::routes())
        .merge(crate::delegations::routes())
        .merge(api::router(&state))
        .leptos_routes_with_context(&state, pages, context.clone(), shell)
        .fallback(
            move |uri: axum::http::Uri,
                  state: axum::extract::State<AppState>,
                  req: axum::extract::Request| {
                let files = files.clone();
                async move {
                    match unrouted(&req) {
                        Some(answer) => answer,
                        None => files(uri, state, req).await,
                    }
                }
            },
        )
        // One stack, outermost first, applied to each route once: a layer
        // of its own per `Router::layer` would box every route once per
        // layer, and each `from_fn` clones what it wraps per request, so the
        // concerns share two (`middleware`, #17). Per route, so the metrics
        // and the API edge see the matched path.
        .layer(
            ServiceBuilder::new()
                .layer(TraceLayer::new_for_http().make_span_with(request_span))
                .layer(axum::middleware::from_fn_with_state(
                    crate::headers::SecurityHeaders {
                        https: public_url_is_https(&state.config),
                    },
                    crate::middleware::respond,
                ))
                // Inside `respond`, so a caught panic is counted as a 500.
                .layer(CatchPanicLayer::custom(api::error::panic_response))
                .layer(axum::middleware::from_fn_with_state(
                    crate::middleware::Admission {
                        state: state.clone(),
                        console,
                    },
                    crate::middleware::admit,
                )),
        )
        .with_state(state)
}

/// The request span: method and path, with any link token replaced by its id
/// (the query, which may carry a `next` or filters, is left out).
fn request_span(req: &axum::extract::Request) -> tracing::Span {
    tracing::debug_span!(
        "request",
        method = %req.method(),
        path = %tollgate::token::redact(req.uri().path()),
    )
}

/// Fires passed deadlines and due delays. Deadlines missed while the server
/// was down fire on the first tick.
async fn run_timers(engine: Engine, every: Duration) {
    let mut last_key_reload = tokio::time::Instant::now();
    loop {
        if let Err(e) = engine.fire_due().await {
            tracing::error!(error = %e, "timer sweep failed");
        }
        // Token keys changed by the CLI (or another instance) are picked up here.
        if last_key_reload.elapsed() >= TOKEN_KEY_RELOAD {
            last_key_reload = tokio::time::Instant::now();
            if let Err(e) = engine.reload_token_keys().await {
                tracing::error!(error = %e, "reloading token keys failed");
            }
        }
        tokio::time::sleep(every).await;
    }
}

/// How often the token signing keys are read again from the database: a key
/// revoked with the CLI stops verifying on a running server within this time.
const TOKEN_KEY_RELOAD: Duration = Duration::from_secs(5);

/// Puts the configured directory, keys and workflows into the engine.
async fn sync_config(engine: &Engine, config: &Config) -> anyhow::Result<()> {
    for p in &config.principals {
        engine
            .upsert_principal(Principal {
                id: p.id.clone(),
                tenant: p.tenant.clone().unwrap_or_else(|| config.server.tenant.clone()),
                name: p.name.clone().unwrap_or_else(|| p.id.clone()),
                email: p.email.clone(),
                groups: p.groups.clone(),
                roles: p.roles.clone(),
                is_override: p.r#override,
            })
            .await
            .map_err(|e| anyhow::anyhow!("principals {}: {e}", p.id))?;
        if let Some(phc) = &p.password_hash {
            engine
                .set_password_hash(&p.id, Some(phc))
                .await
                .map_err(|e| anyhow::anyhow!("principals {}: password_hash: {e}", p.id))?;
        }
    }
    let keys = engine
        .sync_token_keys(
            crate::cli::admin::configured_token_keys(config),
            Some(config.server.token_ttl_minutes as i64 * 60_000),
        )
        .await
        .map_err(|e| anyhow::anyhow!("[[token_keys]]: {e}"))?;
    for kid in &keys.removed {
        tracing::warn!(%kid, "token key no longer in [[token_keys]]: deleted; the links it signed no longer verify");
    }
    engine.set_mail_link_ttl(config.notifications.link_ttl_hours as i64 * 3_600_000);
    engine.set_callback_policy(crate::callbacks::policy(config));
    engine.set_sign_in_limits(&config.sign_in);
    if config.callbacks.secret.is_none() {
        tracing::info!(
            "no [callbacks] secret: callbackUrl is refused and discovery says callbackDelivery: false"
        );
    } else if config.callbacks.allow_loopback {
        tracing::warn!(
            "!!! [callbacks] allow_loopback = true: callbacks may go to http, localhost, loopback and private \
             addresses. This is a TEST switch; it opens the server to SSRF. Never use it in production. !!!"
        );
    }
    if !engine.can_mint_tokens() {
        tracing::warn!("no active token signing key: interrupt links cannot be issued");
    }
    for k in &config.api_keys {
        let scopes = tollgate::auth::parse_scopes(&k.scopes).map_err(anyhow::Error::msg)?;
        engine
            .put_api_key(&k.key, &k.principal, &scopes, k.label.clone())
            .await?;
    }
    for dir in &config.workflows.dirs {
        for (path, result) in engine.load_workflow_dir(dir).await {
            match result {
                Ok(info) => tracing::info!(workflow = %info.id, file = %path.display(), "workflow loaded"),
                Err(e) => tracing::error!(file = %path.display(), error = %e, "workflow refused; not listed"),
            }
        }
    }
    if !config.demo_runs.is_empty() && !engine.has_runs().await? {
        for r in &config.demo_runs {
            let principal = engine
                .principal(&r.principal)
                .await?
                .ok_or_else(|| anyhow::anyhow!("demo run: unknown principal {}", r.principal))?;
            // The configuration's demo runs: the operator starts them for the principal.
            let actor = tollgate::Actor::operator(principal);
            let req = tollgate::CreateRun {
                workflow_id: r.workflow.clone(),
                inputs: r.inputs.clone(),
                requested_by: r.requested_by.clone(),
                ..Default::default()
            };
            match engine.create_run(req, &actor, None).await.and_then(|o| o.result) {
                Ok(run) => tracing::info!(run = %run.run_id, workflow = %r.workflow, "demo run started"),
                Err(e) => tracing::warn!(workflow = %r.workflow, error = %e, "demo run not started"),
            }
        }
    }
    Ok(())
}

/// The console's built assets: configured, `LEPTOS_SITE_ROOT`, `./target/site`,
/// or `site` beside the binary's target directory.
fn find_site_root(configured: Option<&Path>) -> PathBuf {
    if let Some(p) = configured {
        return p.to_path_buf();
    }
    if let Ok(p) = std::env::var("LEPTOS_SITE_ROOT") {
        return PathBuf::from(p);
    }
    let mut candidates = vec![PathBuf::from("target/site")];
    if let Ok(exe) = std::env::current_exe() {
        // target/<profile>/tollgate → target/site
        if let Some(target) = exe.parent().and_then(Path::parent) {
            candidates.push(target.join("site"));
        }
        if let Some(dir) = exe.parent() {
            candidates.push(dir.join("site"));
        }
    }
    candidates
        .iter()
        .find(|c| c.join("pkg").exists())
        .cloned()
        .unwrap_or_else(|| candidates[0].clone())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
