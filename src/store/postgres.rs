//! The PostgreSQL back end, for any number of instances on one database.
//!
//! Each command is one transaction on a pooled connection. Commands on the
//! same run are serialised by the run row's lock (`SELECT … FOR UPDATE`, see
//! `runtime::load_run_for_update`), whichever instance runs them; a command
//! that fails rolls back alone. Commits wait for the WAL flush
//! (`synchronous_commit = on`) under [`Durability::Full`].
//!
//! Commands are synchronous closures (the same rules run on SQLite's writer
//! thread), so each runs on a blocking thread that drives its connection.

use super::{Dialect, Durability, Row, Tx, Val, WriteConn};
use crate::error::{EngineError, Result};
use sqlx::any::AnyPoolOptions;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AnyPool, Column, Executor, PgConnection, PgPool, Row as _, TypeInfo, ValueRef};
use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::str::FromStr;
use tokio::runtime::Handle;

/// Connections for write commands per instance; each command holds one for
/// its transaction, so this bounds the commands in flight.
const WRITE_CONNECTIONS: u32 = 16;
const READ_CONNECTIONS: u32 = 8;

#[derive(Clone)]
pub(super) struct PgWriter {
    pool: PgPool,
}

/// Connects, applies the PostgreSQL migrations and opens the pools.
pub(super) async fn open(url: &str, durability: Durability) -> Result<(PgWriter, AnyPool)> {
    let options =
        PgConnectOptions::from_str(url).map_err(|e| EngineError::Storage(format!("database url: {e}")))?;
    let commit = match durability {
        Durability::Full => "on",
        Durability::Relaxed => "off",
    };
    let options = options.options([("synchronous_commit", commit)]);
    let pool = PgPoolOptions::new()
        .max_connections(WRITE_CONNECTIONS)
        .min_connections(1)
        .connect_with(options)
        .await?;
    // Instances starting together apply each migration once: sqlx's migrator
    // takes an advisory lock on the database while it runs.
    sqlx::migrate!("./migrations/postgres")
        .run(&pool)
        .await
        .map_err(|e| EngineError::Storage(format!("migrations: {e}")))?;
    let read = AnyPoolOptions::new()
        .max_connections(READ_CONNECTIONS)
        .min_connections(1)
        .connect(url)
        .await?;
    Ok((PgWriter { pool }, read))
}

impl PgWriter {
    /// Runs `op` in its own transaction and answers after the commit.
    pub(super) async fn write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        let mut conn = self.pool.acquire().await?;
        let handle = Handle::current();
        let (result, conn) = tokio::task::spawn_blocking(move || {
            let result = run_command(&handle, &mut conn, op);
            (result, conn)
        })
        .await
        .map_err(|e| EngineError::Storage(format!("write command: {e}")))?;
        drop(conn);
        result
    }
}

fn run_command<T, F>(handle: &Handle, conn: &mut PgConnection, op: F) -> Result<T>
where
    F: FnOnce(&WriteConn) -> Result<T>,
{
    handle.block_on(conn.execute("BEGIN"))?;
    let outcome = {
        let tx = PgTx {
            handle,
            conn: RefCell::new(&mut *conn),
        };
        std::panic::catch_unwind(AssertUnwindSafe(|| op(&tx)))
    };
    match outcome {
        Ok(Ok(value)) => {
            handle.block_on(conn.execute("COMMIT"))?;
            Ok(value)
        }
        Ok(Err(e)) => {
            handle.block_on(conn.execute("ROLLBACK"))?;
            Err(e)
        }
        Err(_) => {
            handle.block_on(conn.execute("ROLLBACK"))?;
            Err(EngineError::Storage(
                "a write command panicked; nothing of it was kept".into(),
            ))
        }
    }
}

/// A command's transaction on one PostgreSQL connection.
struct PgTx<'c> {
    handle: &'c Handle,
    conn: RefCell<&'c mut PgConnection>,
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

impl Tx for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query_rows(&self, sql: &str, args: &[Val]) -> Result<Vec<Row>> {
        let sql = Dialect::Postgres.placeholders(sql);
        let mut conn = self.conn.borrow_mut();
        let rows = self
            .handle
            .block_on(bind(sqlx::query(&sql), args).fetch_all(&mut **conn))?;
        rows.iter().map(decode).collect()
    }

    fn execute_args(&self, sql: &str, args: &[Val]) -> Result<u64> {
        let sql = Dialect::Postgres.placeholders(sql);
        let mut conn = self.conn.borrow_mut();
        let done = self
            .handle
            .block_on(bind(sqlx::query(&sql), args).execute(&mut **conn))?;
        Ok(done.rows_affected())
    }

    /// One statement: every write but the last becomes a data-modifying
    /// `WITH` member (executed though never referenced), so a command's
    /// writes cost one round trip.
    fn execute_together(&self, statements: &[(&str, &[Val])]) -> Result<()> {
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
        self.execute_args(&sql, &args).map(drop)
    }

    fn execute_batch(&self, sql: &str) -> Result<()> {
        let mut conn = self.conn.borrow_mut();
        self.handle.block_on((&mut **conn).execute(sql))?;
        Ok(())
    }
}
