//! Storage: one writer task that owns the write connection and applies
//! commands with group commit, and a pool of readers.
//!
//! Commands that arrive while a commit is in flight are applied together in
//! the next transaction, each inside its own SAVEPOINT (so one failing command
//! does not undo the others), then committed with a single fsync and only then
//! answered. With `synchronous=FULL` every answered command is durable.

use crate::error::{EngineError, Result};
use futures_util::future::BoxFuture;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, SqliteConnection, SqlitePool};
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// `synchronous=FULL`: an answered command survives power loss.
    #[default]
    Full,
    /// `synchronous=NORMAL`: may lose the last moments on power loss (not on a crash).
    Relaxed,
}

/// Largest number of commands applied in one transaction.
const MAX_BATCH: usize = 256;

type Reply = Box<dyn FnOnce(Option<EngineError>) + Send>;
type Job = Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, (bool, Reply)> + Send>;

#[derive(Clone)]
pub struct Store {
    jobs: mpsc::Sender<Job>,
    pub(crate) read: SqlitePool,
}

impl Store {
    /// Opens (creating if missing) the database, applies migrations and starts the writer.
    pub async fn open(url: &str, durability: Durability) -> Result<Store> {
        let sync = match durability {
            Durability::Full => SqliteSynchronous::Full,
            Durability::Relaxed => SqliteSynchronous::Normal,
        };
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| EngineError::Storage(format!("database url {url}: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(sync)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("temp_store", "memory")
            .pragma("cache_size", "-16000");
        let mut writer = SqliteConnection::connect_with(&options).await?;
        sqlx::migrate!("./migrations")
            .run(&mut writer)
            .await
            .map_err(|e| EngineError::Storage(format!("migrations: {e}")))?;
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .connect_with(options.read_only(true))
            .await?;
        let (tx, rx) = mpsc::channel::<Job>(4096);
        tokio::spawn(writer_loop(writer, rx));
        Ok(Store { jobs: tx, read })
    }

    /// Runs `op` on the writer inside a savepoint of the next group commit and
    /// answers after the commit. An `Err` from `op` rolls back only its own changes.
    pub async fn write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |conn| {
            Box::pin(async move {
                let result = op(conn).await;
                let ok = result.is_ok();
                let reply: Reply = Box::new(move |commit_error| {
                    let _ = tx.send(match commit_error {
                        None => result,
                        Some(e) => Err(e),
                    });
                });
                (ok, reply)
            })
        });
        self.jobs
            .send(job)
            .await
            .map_err(|_| EngineError::Storage("the writer has stopped".into()))?;
        rx.await
            .map_err(|_| EngineError::Storage("the writer dropped a command".into()))?
    }
}

async fn exec(conn: &mut SqliteConnection, sql: &str) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(sql).execute(conn).await.map(|_| ())
}

async fn writer_loop(mut conn: SqliteConnection, mut rx: mpsc::Receiver<Job>) {
    let mut batch: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
        // Savepoint boundaries are sent together with the neighbouring
        // statement, so each command costs one extra round trip, not two.
        if let Err(e) = exec(&mut conn, "BEGIN IMMEDIATE; SAVEPOINT cmd").await {
            let _ = exec(&mut conn, "ROLLBACK").await;
            let err = EngineError::Storage(format!("begin: {e}"));
            for job in batch.drain(..) {
                let (_, reply) = run_isolated(&mut conn, job).await;
                reply(Some(err.clone()));
            }
            continue;
        }
        let mut broken: Option<EngineError> = None;
        let count = batch.len();
        for (i, job) in batch.drain(..).enumerate() {
            if broken.is_some() {
                // The transaction is unusable; answer without applying.
                replies.push(run_isolated(&mut conn, job).await.1);
                continue;
            }
            let (ok, reply) = job(&mut conn).await;
            let last = i + 1 == count;
            let end = match (ok, last) {
                (true, false) => "RELEASE cmd; SAVEPOINT cmd",
                (true, true) => "RELEASE cmd",
                (false, false) => "ROLLBACK TO cmd; RELEASE cmd; SAVEPOINT cmd",
                (false, true) => "ROLLBACK TO cmd; RELEASE cmd",
            };
            if let Err(e) = exec(&mut conn, end).await {
                broken = Some(EngineError::Storage(format!("savepoint: {e}")));
            }
            replies.push(reply);
        }
        let commit_error = match broken {
            Some(e) => {
                let _ = exec(&mut conn, "ROLLBACK").await;
                Some(e)
            }
            None => match exec(&mut conn, "COMMIT").await {
                Ok(()) => None,
                Err(e) => {
                    let _ = exec(&mut conn, "ROLLBACK").await;
                    Some(EngineError::Storage(format!("commit: {e}")))
                }
            },
        };
        for reply in replies {
            reply(commit_error.clone());
        }
    }
}

/// Produces a job's reply without keeping its effects (used when the batch failed).
async fn run_isolated(conn: &mut SqliteConnection, job: Job) -> (bool, Reply) {
    let _ = exec(conn, "SAVEPOINT dead").await;
    let out = job(conn).await;
    let _ = exec(conn, "ROLLBACK TO dead").await;
    let _ = exec(conn, "RELEASE dead").await;
    out
}
