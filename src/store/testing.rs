//! Databases for the test suites, on the back end the test run asks for.
//!
//! Without `TOLLGATE_TEST_POSTGRES` a test gets the SQLite file it names.
//! With it set to a PostgreSQL server URL (the private server that
//! `scripts/pg.sh` starts), the same test gets a database of that server
//! named after the file path, so a test that reopens "its file" reopens its
//! database, and tests never share one.

use crate::error::{EngineError, Result};
use sha2::{Digest, Sha256};
use sqlx::{Connection, Executor, PgConnection};
use std::path::Path;

/// The variable naming the PostgreSQL server to test against.
pub const POSTGRES_ENV: &str = "TOLLGATE_TEST_POSTGRES";

/// The server URL when the test run is on PostgreSQL.
pub fn postgres_server() -> Option<String> {
    std::env::var(POSTGRES_ENV).ok().filter(|v| !v.is_empty())
}

/// The database URL for the test database "at" `path`, created on first use.
pub async fn database_url(path: &Path) -> Result<String> {
    let Some(server) = postgres_server() else {
        return Ok(format!("sqlite://{}", path.display()));
    };
    let digest = hex::encode(Sha256::digest(path.display().to_string().as_bytes()));
    let name = format!("t_{}", &digest[..24]);
    let mut admin = PgConnection::connect(&server).await?;
    let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut admin)
        .await?;
    if exists.is_none() {
        // The name is hex, so it needs no quoting.
        admin.execute(format!("CREATE DATABASE {name}").as_str()).await?;
    }
    admin.close().await?;
    let mut url =
        url::Url::parse(&server).map_err(|e| EngineError::Storage(format!("{POSTGRES_ENV}: {e}")))?;
    url.set_path(&name);
    Ok(url.to_string())
}

/// [`database_url`] for synchronous callers (it runs on its own thread, so it
/// may be called from inside an async test).
pub fn database_url_blocking(path: &Path) -> Result<String> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Storage(e.to_string()))?
            .block_on(database_url(&path))
    })
    .join()
    .map_err(|_| EngineError::Storage("test database thread panicked".into()))?
}

/// Copies the migrations of `dir` (under the crate) whose names sort before
/// `before` into `into`, for a store as an older release left it.
async fn older_migrations(dir: &str, before: &str, into: &Path) -> Result<sqlx::migrate::Migrator> {
    let io = |e: std::io::Error| EngineError::Storage(e.to_string());
    std::fs::create_dir_all(into).map_err(io)?;
    let all = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    for entry in std::fs::read_dir(all).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".sql") && name.as_str() < before {
            std::fs::copy(entry.path(), into.join(&name)).map_err(io)?;
        }
    }
    sqlx::migrate::Migrator::new(into)
        .await
        .map_err(|e| EngineError::Storage(e.to_string()))
}

/// A connection to a new SQLite file at `path`, migrated with the engine's
/// migrations whose names sort before `before` (a store as an older release
/// left it), for a test of the migrations that follow.
pub async fn sqlite_migrated_before(path: &Path, before: &str) -> Result<sqlx::SqliteConnection> {
    let migrator = older_migrations("migrations", before, &path.with_extension("migrations")).await?;
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await?;
    migrator
        .run(&mut conn)
        .await
        .map_err(|e| EngineError::Storage(e.to_string()))?;
    Ok(conn)
}

/// The test database "at" `path` on the back end the test run asks for (see
/// [`database_url`]), migrated only up to the SQLite migration `sqlite_before`
/// or the PostgreSQL one `postgres_before` (excluded), then given `setup`
/// (plain SQL that both back ends read alike). Returns its URL: opening a
/// `Store` there runs the migrations under test.
pub async fn migrated_before(
    path: &Path,
    sqlite_before: &str,
    postgres_before: &str,
    setup: &str,
) -> Result<String> {
    let url = database_url(path).await?;
    let older = path.with_extension("migrations");
    if postgres_server().is_some() {
        let migrator = older_migrations("migrations/postgres", postgres_before, &older).await?;
        let mut conn = PgConnection::connect(&url).await?;
        migrator
            .run(&mut conn)
            .await
            .map_err(|e| EngineError::Storage(e.to_string()))?;
        sqlx::raw_sql(setup).execute(&mut conn).await?;
        conn.close().await?;
    } else {
        let mut conn = sqlite_migrated_before(path, sqlite_before).await?;
        sqlx::raw_sql(setup).execute(&mut conn).await?;
        conn.close().await?;
    }
    Ok(url)
}

/// An engine on `url` with the conformance approval workflow registered (a
/// run of it suspends at its node `gate`) and Ann, an operator of tenant
/// `t` with an address, to act as.
#[cfg(test)]
pub(crate) async fn approval_engine(url: &str) -> (crate::Engine, crate::Actor) {
    let engine = crate::Engine::open(crate::EngineOptions::new(url.to_string()))
        .await
        .expect("engine");
    let ann = crate::Principal {
        id: "ann".into(),
        tenant: "t".into(),
        name: "Ann".into(),
        email: Some("ann@example.com".into()),
        groups: vec![],
        roles: vec![],
        is_override: false,
    };
    engine.upsert_principal(ann.clone()).await.expect("principal");
    let wf = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/workflows/conformance/conformance-approval.json"
    ))
    .expect("workflow file");
    engine
        .register_workflow(serde_json::from_str(&wf).expect("workflow JSON"))
        .await
        .expect("registered");
    (engine, crate::Actor::operator(ann))
}

/// Starts a run of the conformance approval workflow ([`approval_engine`]).
#[cfg(test)]
pub(crate) async fn start_approval_run(engine: &crate::Engine, actor: &crate::Actor) -> tollgate_wire::RunId {
    engine
        .create_run(
            crate::CreateRun {
                workflow_id: "conformance-approval".into(),
                ..Default::default()
            },
            actor,
            None,
        )
        .await
        .expect("create")
        .result
        .expect("created")
        .run_id
}

/// Ann accepts the run's approval at `gate` ([`approval_engine`]).
#[cfg(test)]
pub(crate) async fn accept_gate(engine: &crate::Engine, actor: &crate::Actor, run: &tollgate_wire::RunId) {
    engine
        .resolve(run, "gate", serde_json::json!({"action": "accept"}), actor, None)
        .await
        .expect("resolve")
        .result
        .expect("resolved");
}
