//! The store boundary: every statement the engine runs goes through here.
//!
//! Two back ends, chosen by the database URL:
//! - `sqlite://…` (the embedded default): one writer thread applies whole
//!   commands with group commit ([`sqlite`]);
//! - `postgres://…`: each command is its own transaction on a pooled
//!   connection, serialised against other instances by row locks ([`postgres`]).
//!
//! A write command is a synchronous closure over a [`Tx`]; the engine writes
//! its SQL once (`?` placeholders) and asks [`Tx::dialect`] for the few
//! statements that differ. Reads go through an sqlx `Any` pool.

pub(crate) mod admin;
pub(crate) mod changes;
mod checkpointer;
pub(crate) mod conversations;
pub(crate) mod delegations;
pub(crate) mod directory;
pub mod directory_cache;
mod event_log;
pub(crate) use event_log::NewestEvent;
pub(crate) mod idempotency;
pub(crate) mod inbox;
pub(crate) mod nodes;
pub(crate) mod notices;
pub(crate) mod outbox;
mod page_cache;
mod postgres;
mod prepared;
pub(crate) mod reads;
pub(crate) mod registry;
pub(crate) mod rows;
mod run_rowid;
pub mod sql;
mod sqlite;
pub mod testing;
pub(crate) mod token_keys;
mod value;
pub(crate) mod votes;
mod wal_buffer;

pub use sql::Dialect;
pub use sqlite::Durability;
pub use value::{json_text, FromVal, Row, ToVal, Val};

/// The SQLite writer's page cache, in MiB, unless configured
/// (`[database] cache_mib`). A larger one saves a large store's resolves
/// their reads through the kernel (1.02–1.13× the rate with 1 GiB at
/// 200,000 all-pending runs) but costs each page its first allocation while
/// it fills (0.83× the creates): docs/performance.md, sixteenth sitting.
/// The B-trees' interior pages are kept apart, up to four times this on
/// top (`page_cache`): at a million stored runs they fit whole.
pub const DEFAULT_CACHE_MIB: u32 = 16;

use crate::error::{EngineError, Result};
use checkpointer::WalLimits;
use sqlx::AnyPool;
use std::borrow::Cow;

/// One open transaction of one write command. Its statements are `'static`
/// texts: the SQLite writer finds a statement it prepared by the text's
/// address (`store::prepared`), so a text formatted per call would be
/// prepared again on every call.
pub trait Tx {
    fn dialect(&self) -> Dialect;
    /// Runs a statement and returns every row it produces.
    fn query_rows(&self, sql: &'static str, args: &[Val]) -> Result<Vec<Row>>;
    /// Runs a statement and returns the number of rows it changed.
    fn execute_args(&self, sql: &'static str, args: &[Val]) -> Result<u64>;
    /// Runs statements without arguments (savepoints).
    fn execute_batch(&self, sql: &str) -> Result<()>;
    /// The writer's people to notify per tenant (`directory_cache`).
    fn directory_cache(&self) -> &directory_cache::DirectoryCache;
    /// Runs writes as if one after the other. A back end where each
    /// statement is a round trip sends them as one; the caller only groups
    /// statements that need not see each other's rows (`changes::apply`).
    fn execute_together(&self, statements: &[(&'static str, &[Val])]) -> Result<()> {
        for (sql, args) in statements {
            self.execute_args(sql, args)?;
        }
        Ok(())
    }
}

/// The connection a write command sees (borrowed for the command only).
pub type WriteConn<'c> = dyn Tx + 'c;

impl dyn Tx + '_ {
    pub fn execute(&self, sql: &'static str, args: &[Val]) -> Result<usize> {
        Ok(self.execute_args(sql, args)? as usize)
    }

    /// The first row, mapped; `None` when there is none.
    pub fn query_opt<T>(
        &self,
        sql: &'static str,
        args: &[Val],
        map: impl FnOnce(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.query_rows(sql, args)?.first() {
            Some(row) => map(row).map(Some),
            None => Ok(None),
        }
    }

    /// Every row, mapped.
    pub fn query_map<T>(
        &self,
        sql: &'static str,
        args: &[Val],
        map: impl FnMut(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.query_rows(sql, args)?.iter().map(map).collect()
    }

    /// The first column of the first row; `None` when there is no row.
    pub fn query_scalar<T: FromVal>(&self, sql: &'static str, args: &[Val]) -> Result<Option<T>> {
        self.query_opt(sql, args, |r| r.get(0))
    }
}

/// How a failed command's writes are undone on SQLite, where commands
/// share a transaction (group commit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Undo {
    /// Inside its own savepoint: only its writes are undone.
    Savepoint,
    /// It fails only before writing, so there is nothing to undo; should it
    /// fail after writing, the whole batch is rolled back.
    Batch,
}

#[derive(Clone)]
enum Writer {
    Sqlite(sqlite::SqliteWriter),
    Postgres(postgres::PgWriter),
}

/// The database: a writer for commands and a pool of readers.
#[derive(Clone)]
pub struct Store {
    writer: Writer,
    pub(crate) read: AnyPool,
    dialect: Dialect,
}

impl Store {
    /// Opens (creating if missing) the database the URL names, applies its
    /// migrations and starts the writer.
    pub async fn open(url: &str, durability: Durability) -> Result<Store> {
        Store::open_with(url, durability, DEFAULT_CACHE_MIB).await
    }

    /// As [`Store::open`], with the SQLite writer's page cache at
    /// `cache_mib` MiB (PostgreSQL keeps its own buffers).
    pub async fn open_with(url: &str, durability: Durability, cache_mib: u32) -> Result<Store> {
        sqlx::any::install_default_drivers();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let (writer, read) = postgres::open(url, durability).await?;
            Ok(Store {
                writer: Writer::Postgres(writer),
                read,
                dialect: Dialect::Postgres,
            })
        } else if url.starts_with("sqlite:") {
            Store::open_sqlite(url, durability, WalLimits::DEFAULT, cache_mib).await
        } else {
            Err(EngineError::Storage(format!(
                "database url {url}: give sqlite://<file> or postgres://<user>@<host>/<database>"
            )))
        }
    }

    /// A SQLite store whose WAL is copied by `wal_limits`, its writer's
    /// page cache `cache_mib` MiB.
    pub(crate) async fn open_sqlite(
        url: &str,
        durability: Durability,
        wal_limits: WalLimits,
        cache_mib: u32,
    ) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let (writer, read) = sqlite::open(url, durability, wal_limits, cache_mib).await?;
        Ok(Store {
            writer: Writer::Sqlite(writer),
            read,
            dialect: Dialect::Sqlite,
        })
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A read statement in the pool's placeholder syntax.
    pub fn q<'s>(&self, sql: &'s str) -> Cow<'s, str> {
        self.dialect.placeholders(sql)
    }

    /// Runs `op` as one atomic command and answers after it is durable. An
    /// `Err` from `op` (or a panic in it) leaves nothing of it behind.
    pub async fn write<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        self.write_undone_by(Undo::Savepoint, op).await
    }

    /// [`Store::write`] for a command that decides before it writes: it
    /// reads, decides, then writes, and returns an `Err` only before its
    /// first write. On SQLite it then needs no savepoint of its own. Should
    /// it fail after writing all the same, every command committed with it
    /// is answered with an error and nothing of theirs is stored.
    pub async fn write_decided<T, F>(&self, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        self.write_undone_by(Undo::Batch, op).await
    }

    async fn write_undone_by<T, F>(&self, undo: Undo, op: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteConn) -> Result<T> + Send + 'static,
    {
        match &self.writer {
            Writer::Sqlite(w) => w.write(undo, op).await,
            // Each command is its own transaction there (nothing to save).
            Writer::Postgres(w) => w.write(op).await,
        }
    }
}

/// The dialect of a read connection from the pool.
pub fn any_dialect(conn: &sqlx::AnyConnection) -> Dialect {
    if conn.backend_name().eq_ignore_ascii_case("postgresql") {
        Dialect::Postgres
    } else {
        Dialect::Sqlite
    }
}

/// Runs a read on the read pool (or a connection of it) and decodes each row
/// with `decode`, the same decoder the writer's rows go through.
pub(crate) async fn fetch_rows<'q, 'c, T, E>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    conn: E,
    decode: fn(&Row) -> Result<T>,
) -> Result<Vec<T>>
where
    E: sqlx::Executor<'c, Database = sqlx::Any> + 'q,
    'c: 'q,
{
    query
        .fetch_all(conn)
        .await?
        .iter()
        .map(|r| decode(&Row::from_any(r)?))
        .collect()
}
