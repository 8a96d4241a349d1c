//! Where a run's events are stored and how they are read back, per back end.
//!
//! On SQLite each event names the id of its run's previous event (`prev`)
//! and the run names its newest (`runs.last_event`), instead of an index on
//! `(run_id, sequence)`: that index was filled in run order, so the events a
//! resolve appended to an older run split one of its full pages (≈ 2 of a
//! resolve's ≈ 10 pages written, issue #17; migration 0020). A run's events
//! are read by walking the chain back from `last_event`. PostgreSQL keeps
//! the index and reads it.

use std::sync::LazyLock;

use super::sql::Dialect;
use super::{Val, WriteConn};
use crate::error::Result;

/// Most rows one multi-row INSERT carries (7 parameters each, far below
/// SQLite's and PostgreSQL's parameter limits).
pub(super) const MAX_ROWS: usize = 64;

/// The parameters of one event row, in this order: run id, sequence, event
/// id, type, node id, payload, timestamp.
pub(super) const ROW_ARGS: usize = 7;

/// `INSERT INTO events (columns) VALUES (…), (…)` for 0..=MAX_ROWS rows of
/// one run, built once (on PostgreSQL each statement is a round trip).
fn inserts(dialect: Dialect, columns: &str) -> Vec<String> {
    let row = format!("({})", vec!["?"; columns.split(", ").count()].join(", "));
    (0..=MAX_ROWS)
        .map(|n| {
            format!(
                "{} events ({columns}) VALUES {}",
                dialect.insert_rows(),
                vec![row.as_str(); n].join(", ")
            )
        })
        .collect()
}

const ROW_COLUMNS: &str = "run_id, sequence, event_id, type, node_id, payload, timestamp";

static INSERT_INDEXED: LazyLock<Vec<String>> = LazyLock::new(|| inserts(Dialect::Postgres, ROW_COLUMNS));

/// The same rows on SQLite with their ids and links bound (see [`Chain`]).
static INSERT_CHAINED: LazyLock<Vec<String>> =
    LazyLock::new(|| inserts(Dialect::Sqlite, &format!("id, prev, {ROW_COLUMNS}")));

/// The statement appending `rows` (1..=MAX_ROWS) events of one run: on
/// SQLite each row starts with its id and its link (from [`Chain::append`]).
pub(super) fn insert(dialect: Dialect, rows: usize) -> &'static str {
    match dialect {
        Dialect::Sqlite => &INSERT_CHAINED[rows],
        Dialect::Postgres => &INSERT_INDEXED[rows],
    }
}

/// On SQLite, records a run's newest event when no `Run` change did (its one
/// parameter after the id: the run id).
pub(super) const LINK_RUN_SQL: &str = "UPDATE runs SET last_event = ? WHERE run_id = ?";

/// What a command knows of a run's newest event before it appends any: the
/// run's `last_event` as the command loaded the run (SQLite), so appending
/// need not read it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NewestEvent {
    #[default]
    Unknown,
    /// The run's newest event id (`None`: it has none, as a new run).
    Known(Option<i64>),
}

/// The ids of the events one command appends on SQLite. The next free id and
/// each run's newest event are read once, then counted here, so the rows
/// are plain inserts with their ids and links bound and the run's newest
/// event is recorded by the run's own update.
#[derive(Default)]
pub(super) struct Chain {
    next_id: Option<i64>,
    /// Per run: its newest event, and whether a statement records it yet.
    newest: Vec<(String, Option<i64>, bool)>,
    /// One run's newest event as its command loaded it, not yet appended to.
    known: Option<(String, Option<i64>)>,
}

impl Chain {
    /// A chain for a command that loaded `run_id` and knows its newest event.
    pub(super) fn knowing(run_id: &str, newest: NewestEvent) -> Chain {
        Chain {
            known: match newest {
                NewestEvent::Known(id) => Some((run_id.to_string(), id)),
                NewestEvent::Unknown => None,
            },
            ..Chain::default()
        }
    }

    /// Ids for `rows` new events of `run_id`: the first one's id and the id
    /// it follows (the run's newest so far, `None` for its first event).
    pub(super) fn append(
        &mut self,
        conn: &WriteConn,
        run_id: &str,
        rows: usize,
    ) -> Result<(i64, Option<i64>)> {
        let first = match self.next_id {
            Some(id) => id,
            None => conn
                .query_scalar::<i64>("SELECT coalesce(max(id), 0) + 1 FROM events", &[])?
                .unwrap_or(1),
        };
        let prev = match self.newest.iter().position(|(run, ..)| run == run_id) {
            Some(i) => self.newest.swap_remove(i).1,
            None => match self.known.take_if(|(run, _)| run == run_id) {
                Some((_, newest)) => {
                    // Nothing may append to the run between its load and here.
                    debug_assert_eq!(newest, stored_newest(conn, run_id)?, "run {run_id} loaded stale");
                    newest
                }
                None => stored_newest(conn, run_id)?,
            },
        };
        let last = first + rows as i64 - 1;
        self.newest.push((run_id.to_string(), Some(last), false));
        self.next_id = Some(last + 1);
        Ok((first, prev))
    }

    /// The newest event `run_id` got in this command, for its `Run` update
    /// to record (`None`: it got none).
    pub(super) fn record(&mut self, run_id: &str) -> Option<i64> {
        let (_, newest, recorded) = self.newest.iter_mut().find(|(run, ..)| run == run_id)?;
        *recorded = true;
        *newest
    }

    /// Runs whose newest event no statement records yet.
    pub(super) fn unrecorded(self) -> impl Iterator<Item = (String, i64)> {
        self.newest
            .into_iter()
            .filter_map(|(run, newest, recorded)| newest.filter(|_| !recorded).map(|id| (run, id)))
    }
}

/// Reads a run's newest event as stored: for a run the command did not load,
/// and in debug builds to check what it loaded.
pub(super) const STORED_NEWEST_SQL: &str = "SELECT last_event FROM runs WHERE run_id = ?";

/// A run's newest event as stored (its `last_event`).
fn stored_newest(conn: &WriteConn, run_id: &str) -> Result<Option<i64>> {
    Ok(conn
        .query_scalar::<Option<i64>>(STORED_NEWEST_SQL, &[Val::Text(Some(run_id.to_string()))])?
        .flatten())
}

/// Reads `columns` (qualified by `e.`) of a run's events with a sequence
/// above `?2`, in sequence order; `?1` is the run id, `?3` the most rows.
fn after_sql(dialect: Dialect, columns: &str) -> String {
    match dialect {
        // Each step must go to a lower sequence of the same run, so the walk
        // ends even on a damaged chain, and never leaves the run.
        Dialect::Sqlite => format!(
            "WITH RECURSIVE chain (id, below) AS (\
             SELECT last_event, 9223372036854775807 FROM runs WHERE run_id = ?1 \
             UNION ALL \
             SELECT e.prev, e.sequence FROM chain JOIN events e ON e.id = chain.id \
             WHERE e.run_id = ?1 AND e.sequence < chain.below AND e.sequence > ?2) \
             SELECT {columns} FROM chain JOIN events e ON e.id = chain.id \
             WHERE e.run_id = ?1 AND e.sequence < chain.below AND e.sequence > ?2 \
             ORDER BY e.sequence LIMIT ?3"
        ),
        Dialect::Postgres => {
            format!("SELECT {columns} FROM events e WHERE e.run_id = $1 AND e.sequence > $2 ORDER BY e.sequence LIMIT $3")
        }
    }
}

/// A run's events after a sequence, as `RunEvent` rows (binds: run id, after, limit).
pub(super) fn events_after_sql(dialect: Dialect) -> &'static str {
    static SQLITE: LazyLock<String> = LazyLock::new(|| after_sql(Dialect::Sqlite, EVENT_COLUMNS));
    static POSTGRES: LazyLock<String> = LazyLock::new(|| after_sql(Dialect::Postgres, EVENT_COLUMNS));
    match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Postgres => &POSTGRES,
    }
}

/// A run's events for the dashboard's timeline (binds: run id, after, limit).
pub(super) fn timeline_sql(dialect: Dialect) -> &'static str {
    static SQLITE: LazyLock<String> = LazyLock::new(|| after_sql(Dialect::Sqlite, TIMELINE_COLUMNS));
    static POSTGRES: LazyLock<String> = LazyLock::new(|| after_sql(Dialect::Postgres, TIMELINE_COLUMNS));
    match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Postgres => &POSTGRES,
    }
}

const EVENT_COLUMNS: &str = "e.run_id, e.sequence, e.event_id, e.type, e.node_id, e.payload, e.timestamp";
const TIMELINE_COLUMNS: &str = "e.sequence, e.type, e.node_id, e.timestamp, e.payload";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args;
    use crate::store::changes::{self, Change, NewEvent};
    use crate::store::{Durability, Store};
    use tollgate_wire::{EventType, RunId};

    const INSERT_RUN: &str = "INSERT INTO runs (run_id, tenant, workflow_id, workflow_digest, status, owner, inputs, next_sequence, created_at) \
                              VALUES (?, 't', 'w', 'd', 'running', '{}', '{}', 1, 0)";

    /// A store on `dir` holding the runs `runs` (without events).
    async fn store_with_runs(dir: &tempfile::TempDir, runs: &[&'static str]) -> Store {
        let url = format!("sqlite://{}", dir.path().join("events.db").display());
        let store = Store::open(&url, Durability::Full).await.unwrap();
        for &run in runs {
            store
                .write(move |c| c.execute(INSERT_RUN, args![run]))
                .await
                .unwrap();
        }
        store
    }

    /// Events `from..=to` of `run`, as one change.
    fn events_of(run: &str, from: i64, to: i64) -> Change {
        Change::Events {
            run_id: RunId::trusted(run.to_string()),
            events: (from..=to)
                .map(|sequence| NewEvent {
                    sequence,
                    event_type: EventType::NodeCompleted,
                    node_id: None,
                    payload: format!("{{\"n\":{sequence}}}"),
                })
                .collect(),
            at: 0,
        }
    }

    /// Appends events `from..=to` of `run` as one command.
    async fn append(store: &Store, run: &str, from: i64, to: i64) {
        let events = events_of(run, from, to);
        store
            .write(move |c| changes::apply(c, vec![events]))
            .await
            .unwrap();
    }

    async fn sequences(store: &Store, run: &str, after: i64, limit: i64) -> Vec<i64> {
        let events = store.events(run, after, limit).await.unwrap();
        assert!(
            events.iter().all(|e| e.run_id == run),
            "another run's event: {events:?}"
        );
        events.iter().map(|e| e.sequence).collect()
    }

    /// Two runs whose commands alternate, one command longer than a
    /// statement's rows: each run reads back exactly its own events, in
    /// order, from any point and with any limit.
    #[tokio::test]
    async fn a_runs_chain_holds_its_events_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_runs(&dir, &["t/a", "t/b", "t/a2"]).await;
        append(&store, "t/a", 1, 4).await;
        append(&store, "t/b", 1, 1).await;
        append(&store, "t/a", 5, 5).await;
        let long = MAX_ROWS as i64 + 6;
        append(&store, "t/b", 2, 1 + long).await;
        append(&store, "t/a", 6, 9).await;
        // Events followed by the run's own update, which records the newest.
        let run_id = RunId::trusted("t/a".to_string());
        let events = events_of("t/a", 10, 11);
        store
            .write(move |c| {
                let run = Change::Run {
                    run_id: run_id.clone(),
                    row_id: None,
                    status: tollgate_wire::RunStatus::Running,
                    current_node_id: None,
                    error: None,
                    next_sequence: 12,
                    completed_at: None,
                    nodes: None,
                };
                changes::apply(c, vec![events, run])
            })
            .await
            .unwrap();
        let statuses: Vec<String> = sqlx::query_scalar("SELECT status FROM runs WHERE run_id = 't/a'")
            .fetch_all(&store.read)
            .await
            .unwrap();
        assert_eq!(statuses, vec!["running"]);

        assert_eq!(
            sequences(&store, "t/a", 0, 100).await,
            (1..=11).collect::<Vec<_>>()
        );
        assert_eq!(
            sequences(&store, "t/a", 4, 100).await,
            vec![5, 6, 7, 8, 9, 10, 11]
        );
        assert_eq!(sequences(&store, "t/a", 5, 2).await, vec![6, 7]);
        assert_eq!(sequences(&store, "t/a", 11, 100).await, Vec::<i64>::new());
        assert_eq!(
            sequences(&store, "t/b", 0, 1000).await,
            (1..=1 + long).collect::<Vec<_>>()
        );
        assert_eq!(
            sequences(&store, "t/b", MAX_ROWS as i64, 3).await,
            vec![65, 66, 67]
        );
        // A run without events, and one that does not exist (a name one character off).
        assert!(sequences(&store, "t/a2", 0, 100).await.is_empty());
        assert!(sequences(&store, "t/a3", 0, 100).await.is_empty());

        let timeline: Vec<i64> = store
            .event_rows("t/a")
            .await
            .unwrap()
            .iter()
            .map(|e| e.0)
            .collect();
        assert_eq!(timeline, (1..=11).collect::<Vec<_>>());
        let payloads: Vec<String> = store
            .event_rows("t/b")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.4)
            .collect();
        assert_eq!(payloads.len() as i64, 1 + long);
        assert_eq!(payloads[66], "{\"n\":67}");

        // Every link points at the run's previous sequence, and the run at its newest.
        let links: Vec<(String, i64, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT e.run_id, e.sequence, e.prev, (SELECT p.sequence FROM events p WHERE p.id = e.prev AND p.run_id = e.run_id) \
             FROM events e ORDER BY e.id",
        )
        .fetch_all(&store.read)
        .await
        .unwrap();
        for (run, sequence, prev, prev_sequence) in links {
            match sequence {
                1 => assert_eq!(prev, None, "{run} {sequence}"),
                _ => assert_eq!(prev_sequence, Some(sequence - 1), "{run} {sequence}"),
            }
        }
        let newest: Vec<(String, Option<i64>)> = sqlx::query_as(
            "SELECT r.run_id, (SELECT e.sequence FROM events e WHERE e.id = r.last_event) FROM runs r ORDER BY r.run_id",
        )
        .fetch_all(&store.read)
        .await
        .unwrap();
        assert_eq!(
            newest,
            vec![
                ("t/a".into(), Some(11)),
                ("t/a2".into(), None),
                ("t/b".into(), Some(1 + long))
            ]
        );
    }

    /// A command that loaded its run links its first event to the newest
    /// the load saw, without reading it again; another run's events in the
    /// same command read their own.
    #[tokio::test]
    async fn a_loaded_runs_newest_event_links_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_runs(&dir, &["t/a", "t/b"]).await;
        append(&store, "t/a", 1, 2).await;
        append(&store, "t/b", 1, 1).await;
        let (a3, b2) = (events_of("t/a", 3, 3), events_of("t/b", 2, 2));
        let loaded = store
            .write(move |c| {
                let run = crate::store::rows::load_run_for_update(c, "t/a")?.expect("stored");
                changes::apply_for_run(c, vec![b2, a3], "t/a", run.newest_event)?;
                Ok(run.newest_event)
            })
            .await
            .unwrap();
        assert!(matches!(loaded, NewestEvent::Known(Some(_))), "{loaded:?}");
        assert_eq!(sequences(&store, "t/a", 0, 100).await, vec![1, 2, 3]);
        assert_eq!(sequences(&store, "t/b", 0, 100).await, vec![1, 2]);
        // A run created in the command has no newest event.
        store
            .write(|c| c.execute(INSERT_RUN, args!["t/c"]))
            .await
            .unwrap();
        let c1 = events_of("t/c", 1, 1);
        store
            .write(move |c| changes::apply_for_run(c, vec![c1], "t/c", NewestEvent::Known(None)))
            .await
            .unwrap();
        assert_eq!(sequences(&store, "t/c", 0, 100).await, vec![1]);
    }

    /// A chain damaged so that it loops (or points into another run) ends
    /// the walk instead of repeating rows or showing another run's events.
    #[tokio::test]
    async fn a_damaged_chain_ends_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_runs(&dir, &["t/a", "t/b"]).await;
        append(&store, "t/a", 1, 3).await;
        append(&store, "t/b", 1, 2).await;
        store
            .write(|c| {
                // a's first event points at a's newest; b's newest at a's second.
                c.execute("UPDATE events SET prev = (SELECT max(id) FROM events WHERE run_id = 't/a') WHERE run_id = 't/a' AND sequence = 1", args![])?;
                c.execute("UPDATE events SET prev = (SELECT id FROM events WHERE run_id = 't/a' AND sequence = 2) WHERE run_id = 't/b' AND sequence = 2", args![])
            })
            .await
            .unwrap();
        assert_eq!(sequences(&store, "t/a", 0, 100).await, vec![1, 2, 3]);
        assert_eq!(sequences(&store, "t/b", 0, 100).await, vec![2]);
    }

    /// Migration 0020 on a store written before it: every run's events are
    /// chained in sequence order, whatever order they were appended in.
    #[tokio::test]
    async fn the_migration_chains_stored_events() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            use sqlx::Connection;
            let mut conn = crate::store::testing::sqlite_migrated_before(&path, "0020")
                .await
                .unwrap();
            for run in ["t/a", "t/b", "t/c"] {
                sqlx::query(INSERT_RUN)
                    .bind(run)
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            // a and b interleaved, b's second event appended before a's.
            for (i, (run, sequence)) in [
                ("t/a", 1),
                ("t/b", 1),
                ("t/b", 2),
                ("t/a", 2),
                ("t/a", 3),
                ("t/b", 3),
            ]
            .into_iter()
            .enumerate()
            {
                sqlx::query(
                    "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, timestamp) VALUES (?, ?, ?, 'node.completed', NULL, '{}', 0)",
                )
                .bind(run)
                .bind(sequence)
                .bind(format!("e{i}"))
                .execute(&mut conn)
                .await
                .unwrap();
            }
            conn.close().await.unwrap();
        }
        let store = Store::open(&format!("sqlite://{}", path.display()), Durability::Full)
            .await
            .unwrap();
        assert_eq!(sequences(&store, "t/a", 0, 100).await, vec![1, 2, 3]);
        assert_eq!(sequences(&store, "t/b", 1, 100).await, vec![2, 3]);
        assert!(sequences(&store, "t/c", 0, 100).await.is_empty());
        // New events continue the migrated chain.
        append(&store, "t/a", 4, 5).await;
        assert_eq!(sequences(&store, "t/a", 0, 100).await, vec![1, 2, 3, 4, 5]);
        let ids: Vec<String> = store
            .events("t/b", 0, 100)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.event_id)
            .collect();
        assert_eq!(ids, vec!["e1", "e2", "e5"]);
    }
}
