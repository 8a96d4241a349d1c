//! The embedded SQLite back end: one writer thread that owns the write
//! connection and applies whole commands with group commit, and a pool of
//! sqlx readers.
//!
//! Commands that arrive while a commit is in flight are applied together in
//! the next transaction, each inside its own SAVEPOINT (so one failing command
//! does not undo the others), then committed with a single fsync and only then
//! answered. With `synchronous=FULL` every answered command is durable. A
//! command that decides before it writes ([`Undo::Batch`]) runs without a
//! savepoint: SQLite copies every page a savepoint's command first changes,
//! 6 % of a resolve's instructions on the writer (docs/performance.md).
//!
//! The writer runs each command synchronously on its own thread (rusqlite on
//! the same SQLite library sqlx links): through sqlx every statement was a
//! hand-off to the connection's worker thread and back, and those hand-offs,
//! not SQLite, bounded throughput (see docs/performance.md).

use super::checkpointer::{Checkpoints, WalLimits};
use super::directory_cache::DirectoryCache;
use super::prepared::Prepared;
use super::{page_cache, wal_buffer, Dialect, Row, Tx, Undo, Val, WriteConn};
use crate::error::{EngineError, Result};
use sqlx::any::AnyPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{AnyPool, Connection, Executor, SqliteConnection};
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// An answered command survives power loss (SQLite `synchronous=FULL`,
    /// PostgreSQL `synchronous_commit=on`).
    #[default]
    Full,
    /// May lose the last moments on power loss, never on a crash (SQLite
    /// `synchronous=NORMAL`, PostgreSQL `synchronous_commit=off`).
    Relaxed,
}

/// Largest number of commands applied in one transaction.
const MAX_BATCH: usize = 256;

/// Statements rusqlite keeps prepared for [`run`] (the transaction's and
/// savepoints' own); the commands' statements are in [`Prepared`].
const STATEMENT_CACHE: usize = 16;

/// How long the writer waits for a lock another connection holds.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

type Reply = Box<dyn FnOnce(Option<EngineError>) + Send>;
/// Runs a command; says whether it succeeded and how to answer it.
type Command = Box<dyn FnOnce(&WriteConn) -> (bool, Reply) + Send>;

/// A command queued for the writer: it runs and says whether it succeeded,
/// and its reply is sent once the batch is committed (or has failed).
struct Job {
    undo: Undo,
    run: Command,
}

/// A write command's view of the writer's connection, with its prepared statements.
struct SqliteTx<'t, 'c> {
    conn: &'c rusqlite::Connection,
    prepared: &'t Prepared<'c>,
    directory: &'t DirectoryCache,
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value, ValueRef};
        Ok(match self {
            Val::Int(Some(i)) => ToSqlOutput::Owned(Value::Integer(*i)),
            Val::Real(Some(r)) => ToSqlOutput::Owned(Value::Real(*r)),
            Val::Text(Some(t)) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
            Val::Int(None) | Val::Real(None) | Val::Text(None) => ToSqlOutput::Owned(Value::Null),
        })
    }
}

impl Tx for SqliteTx<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn query_rows(&self, sql: &'static str, args: &[Val]) -> Result<Vec<Row>> {
        use rusqlite::types::ValueRef;
        #[cfg(test)]
        tests::record(self.conn, sql);
        self.prepared.with(sql, |statement| {
            let columns = statement.column_count();
            let mut rows = statement.query(rusqlite::params_from_iter(args))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let mut values = Vec::with_capacity(columns);
                for i in 0..columns {
                    values.push(match row.get_ref(i)? {
                        ValueRef::Null => Val::Text(None),
                        ValueRef::Integer(v) => Val::Int(Some(v)),
                        ValueRef::Real(v) => Val::Real(Some(v)),
                        // Everything stored was written from Rust strings, so
                        // the plain UTF-8 check (faster than the lossy one) passes.
                        ValueRef::Text(t) | ValueRef::Blob(t) => {
                            Val::Text(Some(match std::str::from_utf8(t) {
                                Ok(text) => text.to_owned(),
                                Err(_) => String::from_utf8_lossy(t).into_owned(),
                            }))
                        }
                    });
                }
                out.push(Row { values });
            }
            Ok(out)
        })
    }

    fn execute_args(&self, sql: &'static str, args: &[Val]) -> Result<u64> {
        #[cfg(test)]
        tests::record(self.conn, sql);
        self.prepared
            .with(sql, |statement| {
                statement.execute(rusqlite::params_from_iter(args))
            })
            .map(|changed| changed as u64)
    }

    fn execute_batch(&self, sql: &str) -> Result<()> {
        Ok(run(self.conn, sql)?)
    }

    fn directory_cache(&self) -> &DirectoryCache {
        self.directory
    }
}

/// Runs statements without parameters; a single one (a savepoint's `SAVEPOINT`,
/// `RELEASE`, the batch's `BEGIN`/`COMMIT`) from the statement cache, since
/// every command runs several and parsing them afresh showed in the writer's
/// profile.
fn run(conn: &rusqlite::Connection, sql: &str) -> rusqlite::Result<()> {
    if sql.contains(';') {
        conn.execute_batch(sql)
    } else {
        conn.prepare_cached(sql)?.execute([]).map(drop)
    }
}

/// The handle commands are sent through to the writer thread.
#[derive(Clone)]
pub(super) struct SqliteWriter {
    jobs: mpsc::Sender<Job>,
}

/// Opens (creating if missing) the database file, applies migrations and
/// starts the writer (its WAL copied by `wal_limits`, its page cache
/// `cache_mib` MiB); returns it with the read pool.
pub(super) async fn open(
    url: &str,
    durability: Durability,
    wal_limits: WalLimits,
    cache_mib: u32,
) -> Result<(SqliteWriter, AnyPool)> {
    let sync = match durability {
        Durability::Full => SqliteSynchronous::Full,
        Durability::Relaxed => SqliteSynchronous::Normal,
    };
    if url.contains(":memory:") || url.contains("mode=memory") {
        // The writer and the readers are separate connections; they must share a file.
        return Err(EngineError::Storage(format!(
            "database url {url}: an in-memory database is not supported, give a file path"
        )));
    }
    // Before the process's first SQLite connection, or never.
    if !page_cache::install() {
        tracing::debug!("SQLite was initialised before the store opened: its default page cache stays");
    }
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| EngineError::Storage(format!("database url {url}: {e}")))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(sync)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    let mut migrator = SqliteConnection::connect_with(&options).await?;
    sqlx::migrate!("./migrations")
        .run(&mut migrator)
        .await
        .map_err(|e| EngineError::Storage(format!("migrations: {e}")))?;
    migrator.close().await?;
    let path = options.get_filename().to_path_buf();
    let writer = open_writer(&path, durability, cache_mib)?;
    let synchronous = synchronous_level(durability);
    let read = AnyPoolOptions::new()
        .max_connections(8)
        .min_connections(1)
        .after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(
                    "PRAGMA busy_timeout = 10000; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;",
                )
                .await?;
                Ok(())
            })
        })
        .connect(&format!("sqlite://{}?mode=ro", path.display()))
        .await?;
    let (tx, rx) = mpsc::channel::<Job>(4096);
    // The writer runs whole commands on its own thread, synchronously:
    // no thread hand-off per statement, and never queued behind HTTP work.
    std::thread::Builder::new()
        .name("tollgate-writer".into())
        .spawn(move || {
            // The checkpoint runs beside the writer; if its thread cannot
            // start, SQLite's own (inside the commit) remains. `checkpoints`
            // is dropped before `writer`, whose WAL hook it removes.
            let checkpoints = Checkpoints::start(&writer, &path, synchronous, wal_limits)
                .map_err(|e| tracing::warn!(error = %e, "the checkpoint thread did not start"))
                .ok();
            writer_loop(&writer, checkpoints.as_ref(), rx);
            drop(checkpoints);
            drop(writer);
        })
        .map_err(|e| EngineError::Storage(format!("writer thread: {e}")))?;
    Ok((SqliteWriter { jobs: tx }, read))
}

impl SqliteWriter {
    /// Runs `op` on the writer in the next group commit and answers after
    /// the commit. An `Err` from `op` is undone as `undo` says.
    pub(super) async fn write<T, F>(&self, undo: Undo, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T>>();
        let run: Command = Box::new(move |conn: &WriteConn| {
            let result = op(conn);
            let ok = result.is_ok();
            let reply: Reply = Box::new(move |commit_error| {
                let _ = tx.send(match commit_error {
                    None => result,
                    Some(e) => Err(e),
                });
            });
            (ok, reply)
        });
        self.jobs
            .send(Job { undo, run })
            .await
            .map_err(|_| EngineError::Storage("the writer has stopped".into()))?;
        rx.await
            .map_err(|_| EngineError::Storage("the writer dropped a command".into()))?
    }
}

/// The write connection, with the same settings the readers get from sqlx.
fn open_writer(
    path: &std::path::Path,
    durability: Durability,
    cache_mib: u32,
) -> Result<rusqlite::Connection> {
    // The pragmas read the file's header, which settles the page size and
    // with it the cache: both inside, so that it is one that keeps interior pages.
    let conn = page_cache::keeping_interior_pages(|| -> Result<rusqlite::Connection> {
        let conn = match durability {
            // Every commit syncs the WAL before publishing it: its frames may
            // wait in memory until then (see `wal_buffer`).
            Durability::Full => {
                wal_buffer::register().map_err(|e| EngineError::Storage(format!("wal buffer: {e}")))?;
                let vfs = wal_buffer::VFS_NAME.to_str().expect("an ASCII name");
                rusqlite::Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), vfs)?
            }
            Durability::Relaxed => rusqlite::Connection::open(path)?,
        };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let sync = synchronous_level(durability);
        // A negative cache_size is in KiB (see `store::DEFAULT_CACHE_MIB`).
        let cache_kib = i64::from(cache_mib) * 1024;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; \
             PRAGMA temp_store = MEMORY; PRAGMA cache_size = -{cache_kib};"
        ))?;
        Ok(conn)
    })?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // The WAL buffer holds frames until the commit's sync: it needs every
    // commit to sync (FULL is 2).
    let synchronous: i64 = conn.query_row("PRAGMA synchronous", [], |row| row.get(0))?;
    if durability == Durability::Full && synchronous != 2 {
        return Err(EngineError::Storage(format!(
            "the writer's connection has synchronous={synchronous}, not FULL"
        )));
    }
    Ok(conn)
}

fn synchronous_level(durability: Durability) -> &'static str {
    match durability {
        Durability::Full => "FULL",
        Durability::Relaxed => "NORMAL",
    }
}

fn writer_loop(conn: &rusqlite::Connection, checkpoints: Option<&Checkpoints>, mut rx: mpsc::Receiver<Job>) {
    let prepared = Prepared::new(conn);
    let directory = DirectoryCache::default();
    let tx = SqliteTx {
        conn,
        prepared: &prepared,
        directory: &directory,
    };
    let mut batch: Vec<Job> = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        if !conn.is_autocommit() {
            // A failed ROLLBACK (or a command's own COMMIT/BEGIN) left a
            // transaction open: end it, or every BEGIN below would fail.
            tracing::error!("the writer's connection was left in a transaction; rolling it back");
            let _ = run(conn, "ROLLBACK");
        }
        if let (true, Some(checkpoints)) = (conn.is_autocommit(), checkpoints) {
            checkpoints.before_batch(conn);
        }
        let mut replies: Vec<Reply> = Vec::with_capacity(batch.len());
        if let Err(e) = run(conn, "BEGIN IMMEDIATE") {
            let err = EngineError::Storage(format!("begin: {e}"));
            for job in batch.drain(..) {
                let (_, reply) = run_isolated(&tx, job);
                reply(Some(err.clone()));
            }
            continue;
        }
        let mut broken: Option<EngineError> = None;
        for job in batch.drain(..) {
            if broken.is_some() {
                // The transaction is unusable; answer without applying.
                replies.push(run_isolated(&tx, job).1);
                continue;
            }
            let with_savepoint = job.undo == Undo::Savepoint;
            if with_savepoint {
                if let Err(e) = run(conn, "SAVEPOINT cmd") {
                    broken = Some(EngineError::Storage(format!("savepoint: {e}")));
                    replies.push(run_isolated(&tx, job).1);
                    continue;
                }
            }
            let changes_before = conn.total_changes();
            // A command that panics is rolled back and its caller told (its
            // reply is dropped); the others in the batch still commit.
            let (ok, reply) = match std::panic::catch_unwind(AssertUnwindSafe(|| (job.run)(&tx))) {
                Ok((ok, reply)) => (ok, Some(reply)),
                Err(_) => (false, None),
            };
            if with_savepoint {
                let undone = if ok { Ok(()) } else { run(conn, "ROLLBACK TO cmd") };
                if let Err(e) = undone.and_then(|()| run(conn, "RELEASE cmd")) {
                    broken = Some(EngineError::Storage(format!("savepoint: {e}")));
                }
            } else if !ok && conn.total_changes() != changes_before {
                // It broke its promise to fail only before writing: with no
                // savepoint to undo it alone, the whole batch is undone.
                tracing::error!("a command failed after it had written; its batch is rolled back");
                broken = Some(EngineError::Storage(
                    "a command in the same commit failed after writing; nothing was stored, try again".into(),
                ));
            }
            replies.extend(reply);
        }
        let commit_error = match broken {
            Some(e) => {
                let _ = run(conn, "ROLLBACK");
                Some(e)
            }
            None => match run(conn, "COMMIT") {
                Ok(()) => None,
                Err(e) => {
                    let _ = run(conn, "ROLLBACK");
                    Some(EngineError::Storage(format!("commit: {e}")))
                }
            },
        };
        let committed = commit_error.is_none();
        for reply in replies {
            reply(commit_error.clone());
        }
        if let (true, Some(checkpoints)) = (committed, checkpoints) {
            checkpoints.after_commit();
        }
    }
}

/// Produces a job's reply without keeping its effects (used when the batch failed).
fn run_isolated(tx: &SqliteTx, job: Job) -> (bool, Reply) {
    let _ = tx.conn.execute_batch("SAVEPOINT dead");
    let out = (job.run)(tx);
    let _ = tx.conn.execute_batch("ROLLBACK TO dead; RELEASE dead");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args;
    use crate::store::Store;
    use std::sync::Mutex;

    /// Every statement a writer ran, with its database file (tests run in parallel).
    static STATEMENTS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

    pub(super) fn record(conn: &rusqlite::Connection, sql: &str) {
        let path = conn.path().unwrap_or_default().to_string();
        STATEMENTS.lock().unwrap().push((path, sql.to_string()));
    }

    /// The statements the writer of the database at `path` ran, in order.
    fn statements_of(path: &std::path::Path) -> Vec<String> {
        let path = path.canonicalize().unwrap();
        let all = STATEMENTS.lock().unwrap();
        all.iter()
            .filter(|(p, _)| std::path::Path::new(p).canonicalize().ok().as_deref() == Some(path.as_path()))
            .map(|(_, sql)| sql.clone())
            .collect()
    }

    fn distinct(list: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in list {
            if !out.contains(s) {
                out.push(s.clone());
            }
        }
        out
    }

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::open(&url, Durability::Full).await.unwrap();
        store
            .write(|c| c.execute_batch("CREATE TABLE t (v INTEGER NOT NULL)"))
            .await
            .unwrap();
        (dir, store)
    }

    async fn values(store: &Store) -> Vec<i64> {
        sqlx::query_scalar("SELECT v FROM t ORDER BY v")
            .fetch_all(&store.read)
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_command_rolls_back_only_itself() {
        let (_dir, store) = store().await;
        let mut tasks = Vec::new();
        for v in 0..40i64 {
            let s = store.clone();
            tasks.push(tokio::spawn(async move {
                s.write(move |c| {
                    c.execute("INSERT INTO t (v) VALUES (?)", args![v])?;
                    if v % 4 == 0 {
                        return Err(EngineError::invalid(format!("{v} refused")));
                    }
                    Ok(v)
                })
                .await
            }));
        }
        let mut answered_ok = Vec::new();
        for t in tasks {
            if let Ok(v) = t.await.unwrap() {
                answered_ok.push(v);
            }
        }
        answered_ok.sort();
        let expected: Vec<i64> = (0..40).filter(|v| v % 4 != 0).collect();
        assert_eq!(answered_ok, expected);
        assert_eq!(
            values(&store).await,
            expected,
            "what was answered Ok is what is stored"
        );
    }

    /// Holds the writer inside a command until the returned sender is
    /// dropped or sent to, so that commands sent meanwhile share the next batch.
    async fn hold_writer(store: &Store) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<()>) {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (running, is_running) = oneshot::channel::<()>();
        let s = store.clone();
        let holder = tokio::spawn(async move {
            s.write(move |_| {
                let _ = running.send(());
                let _ = held.recv();
                Ok(())
            })
            .await
            .unwrap();
        });
        is_running.await.unwrap();
        (release, holder)
    }

    /// Waits until `n` commands are queued for the writer.
    async fn queued(store: &Store, n: usize) {
        let super::super::Writer::Sqlite(writer) = &store.writer else {
            unreachable!("a SQLite store")
        };
        while writer.jobs.max_capacity() - writer.jobs.capacity() < n {
            tokio::task::yield_now().await;
        }
    }

    /// Inserts `v` as a command that decides before it writes; refuses
    /// (before writing) when `refuse`, fails after writing when `break_promise`.
    fn decided(
        store: &Store,
        v: i64,
        refuse: bool,
        break_promise: bool,
    ) -> tokio::task::JoinHandle<Result<i64>> {
        let s = store.clone();
        tokio::spawn(async move {
            s.write_decided(move |c| {
                if refuse {
                    return Err(EngineError::invalid(format!("{v} refused")));
                }
                c.execute("INSERT INTO t (v) VALUES (?)", args![v])?;
                if break_promise {
                    return Err(EngineError::invalid(format!("{v} failed after writing")));
                }
                Ok(v)
            })
            .await
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_decided_command_that_refuses_leaves_its_batch_committed() {
        let (_dir, store) = store().await;
        let (release, holder) = hold_writer(&store).await;
        let tasks = [
            decided(&store, 1, false, false),
            decided(&store, 2, true, false),
            decided(&store, 3, false, false),
        ];
        queued(&store, 3).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.unwrap().map_err(|e| e.to_string()));
        }
        assert_eq!(answers, [Ok(1), Err("2 refused".into()), Ok(3)]);
        assert_eq!(values(&store).await, vec![1, 3]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_decided_command_that_fails_after_writing_undoes_its_whole_batch() {
        let (_dir, store) = store().await;
        let (release, holder) = hold_writer(&store).await;
        let before = decided(&store, 1, false, false);
        queued(&store, 1).await;
        let breaker = decided(&store, 2, false, true);
        queued(&store, 2).await;
        let s = store.clone();
        let after =
            tokio::spawn(async move { s.write(|c| c.execute("INSERT INTO t (v) VALUES (3)", &[])).await });
        queued(&store, 3).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        for answer in [
            before.await.unwrap(),
            breaker.await.unwrap(),
            after.await.unwrap().map(|_| 0),
        ] {
            assert!(matches!(answer, Err(EngineError::Storage(_))), "{answer:?}");
        }
        assert_eq!(
            values(&store).await,
            Vec::<i64>::new(),
            "nothing of the batch is stored"
        );
        // The writer goes on.
        assert_eq!(decided(&store, 4, false, false).await.unwrap().unwrap(), 4);
        assert_eq!(values(&store).await, vec![4]);
    }

    /// Multi-row inserts stop at a failing row and keep the rows before it
    /// (`Dialect::insert_rows`): the batch must still be undone whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_several_row_insert_that_fails_midway_undoes_its_whole_batch() {
        let (_dir, store) = store().await;
        let (release, holder) = hold_writer(&store).await;
        let before = decided(&store, 1, false, false);
        queued(&store, 1).await;
        let s = store.clone();
        let failing = tokio::spawn(async move {
            s.write_decided(|c| {
                let sql = format!("{} t (v) VALUES (2), (NULL), (4)", Dialect::Sqlite.insert_rows());
                c.execute(Box::leak(sql.into_boxed_str()), &[])
            })
            .await
        });
        queued(&store, 2).await;
        release.send(()).unwrap();
        holder.await.unwrap();
        let failed = failing.await.unwrap();
        assert!(failed.is_err(), "{failed:?}");
        let before = before.await.unwrap();
        assert!(matches!(before, Err(EngineError::Storage(_))), "{before:?}");
        assert_eq!(
            values(&store).await,
            Vec::<i64>::new(),
            "not even the row before the failing one"
        );
    }

    #[tokio::test]
    async fn a_panicking_command_is_rolled_back_and_the_writer_lives_on() {
        let (_dir, store) = store().await;
        let r: Result<()> = store
            .write(|c| {
                c.execute("INSERT INTO t (v) VALUES (1)", &[])?;
                panic!("a bug in one command");
            })
            .await;
        assert!(matches!(r, Err(EngineError::Storage(_))), "{r:?}");
        store
            .write(|c| c.execute("INSERT INTO t (v) VALUES (2)", &[]))
            .await
            .unwrap();
        assert_eq!(values(&store).await, vec![2]);
    }

    #[tokio::test]
    async fn the_writer_commits_with_the_configured_durability_in_wal_mode() {
        for (durability, level) in [(Durability::Full, 2), (Durability::Relaxed, 1)] {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("sqlite://{}", dir.path().join("d.db").display());
            let store = Store::open(&url, durability).await.unwrap();
            let (sync, mode): (i64, String) = store
                .write(|c| {
                    let sync: Option<i64> = c.query_scalar("PRAGMA synchronous", &[])?;
                    let mode: Option<String> = c.query_scalar("PRAGMA journal_mode", &[])?;
                    Ok((sync.unwrap_or_default(), mode.unwrap_or_default()))
                })
                .await
                .unwrap();
            assert_eq!((sync, mode.as_str()), (level, "wal"), "{durability:?}");
        }
    }

    #[tokio::test]
    async fn an_in_memory_database_is_refused_with_a_clear_error() {
        let err = Store::open("sqlite::memory:", Durability::Full)
            .await
            .err()
            .unwrap();
        assert!(err.to_string().contains("in-memory"), "{err}");
    }

    /// What SQLite's planner does with `sql` on the migrated schema.
    async fn plan(store: &Store, sql: &str) -> String {
        let rows: Vec<(i64, i64, i64, String)> = sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}"))
            .bind(0i64)
            .fetch_all(&store.read)
            .await
            .unwrap();
        rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("; ")
    }

    #[tokio::test]
    async fn the_timer_sweeps_range_over_their_partial_indexes() {
        let (_dir, store) = store().await;
        let deadlines = plan(&store, crate::store::reads::DUE_DEADLINES_SQL).await;
        assert!(
            deadlines.contains("USING INDEX interrupts_deadline ("),
            "{deadlines}"
        );
        let delays = plan(&store, crate::store::reads::DUE_DELAYS_SQL).await;
        assert!(delays.contains("USING INDEX runs_delay_due"), "{delays}");
        for (name, p) in [("deadlines", &deadlines), ("delays", &delays)] {
            // In index order: no pass over every pending row to sort them.
            assert!(!p.contains("TEMP B-TREE"), "{name}: {p}");
        }
        let reminders = plan(
            &store,
            &crate::store::outbox::reminders_due_sql(crate::store::Dialect::Sqlite),
        )
        .await;
        assert!(
            reminders.contains("USING INDEX interrupts_deadline ("),
            "{reminders}"
        );
    }

    /// The plan of `sql` with every parameter NULL (`?` or `$n`).
    async fn plan_any(store: &Store, sql: &str) -> String {
        let n = sql.matches('?').count();
        let mut q = sqlx::query_as::<_, (i64, i64, i64, String)>(Box::leak(
            format!("EXPLAIN QUERY PLAN {sql}").into_boxed_str(),
        ));
        for _ in 0..n {
            q = q.bind(None::<i64>);
        }
        let rows = q.fetch_all(&store.read).await.unwrap();
        rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("; ")
    }

    /// Every statement a create (a run that suspends at its gate) and a
    /// resolve run on the writer, with SQLite's plan: none may read a
    /// number of rows that grows with the store (issue #17).
    #[tokio::test]
    async fn create_and_resolve_plans_stay_on_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plans.db");
        let url = format!("sqlite://{}", path.display());
        let (engine, actor) = crate::store::testing::approval_engine(&url).await;
        let before = statements_of(&path).len();
        let run = crate::store::testing::start_approval_run(&engine, &actor).await;
        let middle = statements_of(&path).len();
        let created = distinct(&statements_of(&path)[before..]);
        crate::store::testing::accept_gate(&engine, &actor, &run).await;
        let resolved = distinct(&statements_of(&path)[middle..]);
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let mut report = String::new();
        let mut scans = Vec::new();
        for (phase, list) in [("create", &created), ("resolve", &resolved)] {
            for sql in list {
                let plan = plan_any(&store, sql).await;
                report.push_str(&format!("{phase}: {sql}\n    => {plan}\n"));
                if reads_a_whole_table(&plan) {
                    scans.push(format!("{phase}: {sql} => {plan}"));
                }
            }
        }
        println!("{report}");
        assert!(!created.is_empty() && !resolved.is_empty(), "{report}");
        assert!(scans.is_empty(), "scans: {scans:#?}");
        // The decision goes to the row it read by rowid, not through the id index.
        let decide = resolved
            .iter()
            .find(|sql| sql.starts_with("UPDATE interrupts SET status = 'resolved'"))
            .expect("the resolve's update");
        let plan = plan_any(&store, decide).await;
        assert!(
            plan.contains("USING INTEGER PRIMARY KEY (rowid=?)"),
            "{decide} => {plan}"
        );
        // The create stores the interrupt at the rowid its node state names,
        // and the resolve reads it there (debug builds, these tests, also
        // run the search through `interrupts_latest` to check the row).
        assert!(
            created
                .iter()
                .any(|sql| sql.starts_with("INSERT INTO interrupts (rowid, ")),
            "{report}"
        );
        let read = resolved
            .iter()
            .find(|sql| sql.contains("FROM interrupts WHERE rowid = ? AND run_id = ?"))
            .expect("the resolve reads its interrupt by rowid");
        let plan = plan_any(&store, read).await;
        assert!(
            plan.starts_with("SEARCH interrupts USING INTEGER PRIMARY KEY (rowid=?)"),
            "{read} => {plan}"
        );
        // The create stores the run at the rowid its id names; the resolve
        // reads and updates it there, never through the runs' id index.
        assert!(
            created
                .iter()
                .any(|sql| sql.starts_with("INSERT INTO runs (rowid, ")),
            "{report}"
        );
        // (Debug builds, these tests, also check the run's newest event as
        // stored, by id: a read release builds do not make.)
        let on_runs: Vec<&String> = resolved
            .iter()
            .filter(|sql| sql.contains(" runs ") && *sql != crate::store::event_log::STORED_NEWEST_SQL)
            .collect();
        assert!(on_runs.len() >= 2, "the run's read and update: {report}");
        for sql in on_runs {
            let plan = plan_any(&store, sql).await;
            assert!(
                plan.contains("SEARCH runs USING INTEGER PRIMARY KEY (rowid=?)")
                    && !plan.contains("sqlite_autoindex_runs"),
                "{sql} => {plan}"
            );
        }
    }

    /// A plan step that walks a whole table or index (SQLite's `SCAN`), other
    /// than the rows of a `VALUES` list, a subquery's own result (unnamed,
    /// or named by the `CO-ROUTINE`/`MATERIALIZE` step that computed it) or
    /// the elements of one JSON value (`json_each`, the schema's only
    /// virtual table: an interrupt's votes).
    fn reads_a_whole_table(plan: &str) -> bool {
        let steps: Vec<&str> = plan.split("; ").collect();
        let subqueries: Vec<&str> = steps
            .iter()
            .filter_map(|s| {
                s.strip_prefix("CO-ROUTINE ")
                    .or_else(|| s.strip_prefix("MATERIALIZE "))
            })
            .collect();
        steps.iter().any(|step| {
            step.strip_prefix("SCAN ").is_some_and(|scanned| {
                !scanned.ends_with("VALUES CLAUSE")
                    && !scanned.contains(" VIRTUAL TABLE INDEX ")
                    && !scanned.starts_with("(subquery-")
                    && !subqueries.contains(&scanned)
            })
        })
    }

    /// The writer's page cache is the size the store was opened with (a
    /// negative `cache_size` is KiB).
    #[tokio::test]
    async fn the_writers_page_cache_is_the_size_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("cache.db").display());
        for mib in [1, 64] {
            let store = Store::open_with(&url, Durability::Full, mib).await.unwrap();
            let size: Option<i64> = store
                .write(|conn| conn.query_scalar("PRAGMA cache_size", &[]))
                .await
                .unwrap();
            assert_eq!(size, Some(-i64::from(mib) * 1024));
        }
    }

    #[test]
    fn a_whole_table_read_is_told_from_a_search() {
        assert!(reads_a_whole_table(
            "SCAN principals USING INDEX sqlite_autoindex_principals_1"
        ));
        assert!(reads_a_whole_table("SEARCH runs USING INDEX a (x=?); SCAN runs"));
        assert!(!reads_a_whole_table("SCAN 4-ROW VALUES CLAUSE"));
        assert!(!reads_a_whole_table(
            "SEARCH p USING INDEX sqlite_autoindex_principals_1 (id=?); CORRELATED LIST SUBQUERY 1; SCAN v VIRTUAL TABLE INDEX 1:"
        ));
        assert!(!reads_a_whole_table(
            "SEARCH v USING INDEX i (interrupt_id=?); SCAN (subquery-1)"
        ));
        assert!(!reads_a_whole_table("CO-ROUTINE base; SEARCH events; SCAN base"));
        assert!(reads_a_whole_table("CO-ROUTINE base; SCAN events; SCAN base"));
        assert!(reads_a_whole_table("SCAN base"));
    }

    /// The dashboard reads one tenant's runs and people by the tenant's
    /// index, whatever the other tenants hold (issue #17 replaced the runs
    /// index by status, which no read searched).
    #[tokio::test]
    async fn dashboard_reads_search_the_tenants_index() {
        use crate::store::admin::{
            RUN_PAGE_COUNT_SQL, RUN_PAGE_SQL, RUN_STATUS_COUNTS_SQL, RUN_WORKFLOWS_SQL, TENANT_PRINCIPALS_SQL,
        };
        let (_dir, store) = store().await;
        for (sql, index) in [
            (RUN_STATUS_COUNTS_SQL, "runs_by_tenant"),
            (RUN_PAGE_COUNT_SQL, "runs_by_tenant"),
            (RUN_PAGE_SQL.as_str(), "runs_by_tenant"),
            (RUN_WORKFLOWS_SQL, "runs_by_tenant"),
            (TENANT_PRINCIPALS_SQL, "principals_by_tenant"),
            (
                crate::store::directory_cache::LOAD_DIRECTORY_SQL,
                "principals_by_tenant",
            ),
        ] {
            let plan = plan_any(&store, sql).await;
            assert!(
                plan.contains(&format!("USING INDEX {index} (tenant=?)")),
                "{sql} => {plan}"
            );
            assert!(!reads_a_whole_table(&plan), "{sql} => {plan}");
        }
        // A principal's keys, and a tenant's: by the keys' index, not a scan.
        for sql in [
            crate::store::directory::LIVE_KEY_SCOPES_SQL,
            crate::store::directory::TENANT_LIVE_KEYS_SQL,
        ] {
            let plan = plan_any(&store, sql).await;
            assert!(
                plan.contains("USING INDEX api_keys_by_principal (principal=?)"),
                "{sql} => {plan}"
            );
            assert!(!reads_a_whole_table(&plan), "{sql} => {plan}");
        }
        // What a notice reads every time: one tenant's directory version.
        let sql = crate::store::directory_cache::DIRECTORY_VERSION_SQL;
        let plan = plan_any(&store, sql).await;
        assert!(plan.contains("USING PRIMARY KEY (tenant=?)"), "{sql} => {plan}");
    }
}
