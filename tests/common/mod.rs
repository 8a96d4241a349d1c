//! What the engine tests share: an engine on a fresh database (a SQLite
//! file, or a fresh PostgreSQL database when `TOLLGATE_TEST_POSTGRES` is
//! set, see `tollgate::store::testing`) with an injected clock, and people.
#![allow(dead_code)]

use std::sync::Arc;
use tollgate::{Engine, EngineOptions, ManualClock, Principal, RunId};

/// The tests' "now" at the start (an instant in 2027).
pub const T0: i64 = 1_800_000_000_000;

/// An engine with its clock; the database lives as long as this does.
pub struct TestEngine {
    pub engine: Engine,
    pub clock: ManualClock,
    _dir: tempfile::TempDir,
}

/// An engine on a fresh database with the clock at [`T0`].
pub async fn engine() -> TestEngine {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let engine = open(&dir, &clock).await;
    TestEngine {
        engine,
        clock,
        _dir: dir,
    }
}

async fn open(dir: &tempfile::TempDir, clock: &ManualClock) -> Engine {
    let mut opts = EngineOptions::new(
        tollgate::store::testing::database_url(&dir.path().join("t.db"))
            .await
            .unwrap(),
    );
    opts.clock = Arc::new(clock.clone());
    Engine::open(opts).await.unwrap()
}

impl TestEngine {
    /// Another engine on the same database and clock (another process: the CLI, a second instance).
    pub async fn open_again(&self) -> Engine {
        open(&self._dir, &self.clock).await
    }
}

/// A person of `tenant` named by their id, with an address when `email`.
pub fn person(id: &str, tenant: &str, groups: &[&str], roles: &[&str], email: bool) -> Principal {
    Principal {
        id: id.into(),
        tenant: tenant.into(),
        name: id.into(),
        email: email.then(|| format!("{id}@example.com")),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        is_override: false,
    }
}

/// Stores each principal.
pub async fn add(engine: &Engine, people: impl IntoIterator<Item = Principal>) {
    for p in people {
        engine.upsert_principal(p).await.unwrap();
    }
}

/// Who was queued a mail about `run` (of the latest 1,000), sorted.
pub async fn mailed(engine: &Engine, run: &RunId) -> Vec<String> {
    let mut to: Vec<String> = engine
        .outbox_recent(1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.run_id == run.as_str())
        .map(|m| m.recipient)
        .collect();
    to.sort();
    to
}
