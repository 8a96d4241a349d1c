//! The PostgreSQL back end, for any number of instances on one database.
//!
//! Each command is one transaction on one of the instance's write
//! connections. Commands on the same run are serialised by the run row's
//! lock (`SELECT … FOR UPDATE`, see `runtime::load_run_for_update`),
//! whichever instance runs them; a command that fails rolls back alone.
//! Commits wait for the WAL flush (`synchronous_commit = on`) under
//! [`Durability::Full`].
//!
//! Commands are synchronous closures (the same rules run on SQLite's writer
//! thread). Each write connection belongs to its own thread, which drives it
//! on a single-threaded runtime of its own: a command's statements are then
//! plain socket round trips on that thread, with no hand-off to another
//! thread per statement (which cost more than the statements; see
//! docs/performance.md). A command is handed over once and answered once.

use super::directory_cache::DirectoryCache;
use super::{Dialect, Durability, Row, Tx, Val, WriteConn};
use crate::error::{EngineError, Result};
use sqlx::any::AnyPoolOptions;
use sqlx::postgres::PgConnectOptions;
use sqlx::{AnyPool, Column, Connection, Executor, PgConnection, Row as _, TypeInfo, ValueRef};
use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use std::sync::{mpsc, Arc, Mutex};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Write connections (and their threads) per instance; each command holds
/// one for its transaction, so this bounds the commands in flight.
const WRITE_CONNECTIONS: usize = 16;
const READ_CONNECTIONS: u32 = 8;

/// A command, as its connection's thread runs it; `false` when it failed
/// (the thread then checks the connection is still good).
type Job = Box<dyn FnOnce(&Runtime, &mut PgConnection) -> bool + Send>;

#[derive(Clone)]
pub(super) struct PgWriter {
    jobs: mpsc::Sender<Job>,
    /// Shared by the write connections (`directory_cache`).
    directory: Arc<DirectoryCache>,
}

/// Connects, applies the PostgreSQL migrations and starts the write connections.
pub(super) async fn open(url: &str, durability: Durability) -> Result<(PgWriter, AnyPool)> {
    let options =
        PgConnectOptions::from_str(url).map_err(|e| EngineError::Storage(format!("database url: {e}")))?;
    let commit = match durability {
        Durability::Full => "on",
        Durability::Relaxed => "off",
    };
    let options = options.options([("synchronous_commit", commit)]);
    let mut conn = PgConnection::connect_with(&options).await?;
    // Instances starting together apply each migration once: sqlx's migrator
    // takes an advisory lock on the database while it runs.
    sqlx::migrate!("./migrations/postgres")
        .run(&mut conn)
        .await
        .map_err(|e| EngineError::Storage(format!("migrations: {e}")))?;
    conn.close().await?;
    let read = AnyPoolOptions::new()
        .max_connections(READ_CONNECTIONS)
        .min_connections(1)
        .connect(url)
        .await?;
    let (jobs, queue) = mpsc::channel::<Job>();
    let queue = Arc::new(Mutex::new(queue));
    for i in 0..WRITE_CONNECTIONS {
        let (queue, options) = (queue.clone(), options.clone());
        std::thread::Builder::new()
            .name(format!("tollgate-pg-writer-{i}"))
            .spawn(move || connection_thread(&queue, &options))
            .map_err(|e| EngineError::Storage(format!("write thread: {e}")))?;
    }
    Ok((
        PgWriter {
            jobs,
            directory: Arc::default(),
        },
        read,
    ))
}

/// Runs commands on one connection until the writer is dropped. Connects on
/// the first command, and again after a command that left the connection
/// broken (the database restarted, the network dropped).
fn connection_thread(queue: &Mutex<mpsc::Receiver<Job>>, options: &PgConnectOptions) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::error!("a PostgreSQL write thread could not start its runtime");
        return;
    };
    let mut conn: Option<PgConnection> = None;
    loop {
        let job = match queue.lock().map(|q| q.recv()) {
            Ok(Ok(job)) => job,
            _ => return, // the writer is gone
        };
        if conn.is_none() {
            match rt.block_on(PgConnection::connect_with(options)) {
                Ok(c) => conn = Some(c),
                Err(e) => {
                    // The job is dropped unanswered: its caller sees the error below.
                    tracing::warn!(error = %e, "connecting a write connection failed");
                    drop(job);
                    continue;
                }
            }
        }
        let Some(c) = conn.as_mut() else { continue };
        if !job(&rt, c) && rt.block_on(c.ping()).is_err() {
            conn = None;
        }
    }
}

impl PgWriter {
    /// Runs `op` in its own transaction and answers after the commit.
    pub(super) async fn write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let directory = self.directory.clone();
        let job: Job = Box::new(move |rt, conn| {
            let result = run_command(rt, conn, &directory, op);
            let ok = result.is_ok();
            let _ = answer.send(result);
            ok
        });
        self.jobs
            .send(job)
            .map_err(|_| EngineError::Storage("the PostgreSQL writer stopped".into()))?;
        answered
            .await
            .map_err(|_| EngineError::Storage("the database could not be reached for this write".into()))?
    }
}

fn run_command<T, F>(rt: &Runtime, conn: &mut PgConnection, directory: &DirectoryCache, op: F) -> Result<T>
where
    F: FnOnce(&WriteConn) -> Result<T>,
{
    rt.block_on(conn.execute("BEGIN"))?;
    let outcome = {
        let tx = PgTx {
            rt,
            conn: RefCell::new(&mut *conn),
            directory,
        };
        std::panic::catch_unwind(AssertUnwindSafe(|| op(&tx)))
    };
    match outcome {
        Ok(Ok(value)) => {
            rt.block_on(conn.execute("COMMIT"))?;
            Ok(value)
        }
        Ok(Err(e)) => {
            rt.block_on(conn.execute("ROLLBACK"))?;
            Err(e)
        }
        Err(_) => {
            rt.block_on(conn.execute("ROLLBACK"))?;
            Err(EngineError::Storage(
                "a write command panicked; nothing of it was kept".into(),
            ))
        }
    }
}

/// A command's transaction on one PostgreSQL connection.
struct PgTx<'c> {
    rt: &'c Runtime,
    conn: RefCell<&'c mut PgConnection>,
    directory: &'c DirectoryCache,
}

type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;

fn bind<'q>(mut query: PgQuery<'q>, args: &[Val]) -> PgQuery<'q> {
    for a in args {
        query = match a {
            Val::Int(v) => query.bind(*v),
            Val::Text(v) => query.bind(v.clone()),
            Val::Real(v) => query.bind(*v),
        };
    }
    query
}

fn decode(row: &sqlx::postgres::PgRow) -> Result<Row> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let raw = row.try_get_raw(i)?;
        let null = raw.is_null();
        let value = match column.type_info().name() {
            "INT8" => Val::Int(row.try_get(i)?),
            "INT4" => Val::Int(row.try_get::<Option<i32>, _>(i)?.map(i64::from)),
            "INT2" => Val::Int(row.try_get::<Option<i16>, _>(i)?.map(i64::from)),
            "BOOL" => Val::Int(row.try_get::<Option<bool>, _>(i)?.map(i64::from)),
            "FLOAT8" => Val::Real(row.try_get(i)?),
            "FLOAT4" => Val::Real(row.try_get::<Option<f32>, _>(i)?.map(f64::from)),
            "JSON" | "JSONB" => Val::Text(
                row.try_get::<Option<serde_json::Value>, _>(i)?
                    .map(|v| v.to_string()),
            ),
            _ if null => Val::Text(None),
            _ => Val::Text(Some(row.try_get(i)?)),
        };
        values.push(value);
    }
    Ok(Row { values })
}

impl PgTx<'_> {
    /// Runs one statement, built or not (PostgreSQL prepares by text itself).
    fn execute_text(&self, sql: &str, args: &[Val]) -> Result<u64> {
        let sql = Dialect::Postgres.placeholders(sql);
        let mut conn = self.conn.borrow_mut();
        let done = self
            .rt
            .block_on(bind(sqlx::query(&sql), args).execute(&mut **conn))?;
        Ok(done.rows_affected())
    }
}

impl Tx for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query_rows(&self, sql: &'static str, args: &[Val]) -> Result<Vec<Row>> {
        let sql = Dialect::Postgres.placeholders(sql);
        let mut conn = self.conn.borrow_mut();
        let rows = self
            .rt
            .block_on(bind(sqlx::query(&sql), args).fetch_all(&mut **conn))?;
        rows.iter().map(decode).collect()
    }

    fn execute_args(&self, sql: &'static str, args: &[Val]) -> Result<u64> {
        self.execute_text(sql, args)
    }

    /// One statement: every write but the last becomes a data-modifying
    /// `WITH` member (executed though never referenced), so a command's
    /// writes cost one round trip.
    fn execute_together(&self, statements: &[(&'static str, &[Val])]) -> Result<()> {
        let Some(((last_sql, last_args), members)) = statements.split_last() else {
            return Ok(());
        };
        if members.is_empty() {
            return self.execute_args(last_sql, last_args).map(drop);
        }
        let mut sql = String::from("WITH ");
        let mut args = Vec::with_capacity(statements.iter().map(|(_, a)| a.len()).sum());
        for (i, (member, member_args)) in members.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("w{i} AS ({member})"));
            args.extend_from_slice(member_args);
        }
        sql.push(' ');
        sql.push_str(last_sql);
        args.extend_from_slice(last_args);
        self.execute_text(&sql, &args).map(drop)
    }

    fn execute_batch(&self, sql: &str) -> Result<()> {
        let mut conn = self.conn.borrow_mut();
        self.rt.block_on((&mut **conn).execute(sql))?;
        Ok(())
    }

    fn directory_cache(&self) -> &DirectoryCache {
        self.directory
    }
}
