//! The wrapper against the real SQLite: truncations, kept interior pages
//! and what they save.

use super::*;
use rusqlite::Connection;
use std::cell::Cell;

thread_local! {
    /// Truncations this thread's connections passed on to the default cache.
    pub(super) static FORWARDED: Cell<u64> = const { Cell::new(0) };
    /// Pages this thread's splits parked under the lock-byte page's key.
    pub(super) static PARKED: Cell<u64> = const { Cell::new(0) };
    /// Kept interior pages this thread's caches evicted for others.
    pub(super) static EVICTED: Cell<u64> = const { Cell::new(0) };
}

/// The wrapper's invariant, checked whenever it skips a truncation: the
/// default cache holds no page at the limit or past it (checked for the
/// lock-byte page and the 256 keys from the limit on).
pub(super) fn assert_nothing_cached_from(cache: &Cache, limit: c_uint) {
    let fetch = default().xFetch.expect("xFetch");
    let keys = (limit..limit.saturating_add(256)).chain([cache.lock_page]);
    for key in keys.filter(|key| *key >= limit) {
        // SAFETY: a lookup (createFlag 0) in the cache being truncated.
        let page = unsafe { fetch(cache.inner, key, 0) };
        assert!(
            page.is_null(),
            "page {key} is cached past the truncation limit {limit}"
        );
    }
}

/// A repeatable sequence of pseudo-random numbers (an LCG's high bits).
fn random(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 16
    }
}

/// Inserts `rows` rows under random keys (splits all over the index).
fn insert_random(conn: &Connection, next: &mut impl FnMut() -> u64, rows: usize, pad: &str) {
    for _ in 0..rows {
        conn.execute(
            "INSERT INTO t (k, pad) VALUES (?, ?)",
            (format!("{:016x}", next()), pad),
        )
        .unwrap();
    }
}

/// Splits by the thousand (random keys into an index), transactions
/// rolled back after the file grew, savepoints undone: what is read back
/// is what was committed, and the file stays sound.
#[test]
fn a_cache_that_skips_needless_truncations_stays_correct() {
    exercise_splits_and_rollbacks(4096, -64000);
}

/// The same with a cache of 20 pages of 512 bytes: interior pages kept, evicted for
/// others, renumbered by splits and dropped by rollbacks, and dirty
/// pages spilled before their commit.
#[test]
fn a_small_cache_that_keeps_and_evicts_interior_pages_stays_correct() {
    let evicted = EVICTED.with(Cell::get);
    exercise_splits_and_rollbacks(512, 20);
    assert!(
        EVICTED.with(Cell::get) > evicted,
        "no kept page was evicted: the test tests nothing"
    );
}

fn exercise_splits_and_rollbacks(page_size: u32, cache_size: i64) {
    assert!(
        install(),
        "every test of this crate that opens SQLite installs the cache first"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    let conn = keeping_interior_pages(|| {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "PRAGMA page_size = {page_size}; PRAGMA journal_mode = WAL; PRAGMA cache_size = {cache_size};
             CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, pad TEXT NOT NULL);
             CREATE UNIQUE INDEX t_k ON t (k);"
        ))
        .unwrap();
        conn
    });
    let mut committed = 0i64;
    let mut next = random(7);
    let mut forwarded_by_commits = 0;
    for round in 0..30 {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        // Changes undone after the file grew (these rounds end in a
        // rollback, and its truncation is a real one).
        let undone = round % 3 == 2;
        if undone {
            conn.execute_batch("SAVEPOINT s").unwrap();
            insert_random(&conn, &mut next, 300, &"s".repeat(900));
            conn.execute_batch("ROLLBACK TO s; RELEASE s").unwrap();
        }
        let forwarded_before = FORWARDED.with(Cell::get);
        // Free pages in the middle of the file, for the inserts to reuse
        // out of order (which is when a split renumbers its pages).
        let from = next();
        let range = (format!("{from:016x}"), format!("{:016x}", from + (1 << 44)));
        let deleted = conn
            .execute("DELETE FROM t WHERE k >= ? AND k < ?", range)
            .unwrap() as i64;
        insert_random(&conn, &mut next, 400, &"p".repeat(200));
        if undone {
            // The file grew in this transaction; its pages must go.
            conn.execute_batch("ROLLBACK").unwrap();
        } else {
            conn.execute_batch("COMMIT").unwrap();
            committed += 400 - deleted;
            forwarded_by_commits += FORWARDED.with(Cell::get) - forwarded_before;
        }
        let (rows, stray): (i64, i64) = conn
            .query_row(
                "SELECT count(*), count(*) FILTER (WHERE pad LIKE 's%') FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rows, stray), (committed, 0), "round {round}");
    }
    // Hundreds of splits parked a page under the lock-byte page's key,
    // yet no commit had a cached page to drop.
    assert!(
        PARKED.with(Cell::get) > 0,
        "no split parked a page: the test tests nothing"
    );
    assert_eq!(forwarded_by_commits, 0, "truncations walked the whole cache");
    // The writer's pattern: a command's savepoint undone after it grew
    // the file, then the batch commits; the pages past the end go then.
    conn.execute_batch("BEGIN IMMEDIATE; SAVEPOINT cmd").unwrap();
    insert_random(&conn, &mut next, 300, &"s".repeat(900));
    conn.execute_batch("ROLLBACK TO cmd; RELEASE cmd").unwrap();
    conn.execute("INSERT INTO t (k, pad) VALUES ('last', 'p')", [])
        .unwrap();
    let forwarded_before = FORWARDED.with(Cell::get);
    conn.execute_batch("COMMIT").unwrap();
    committed += 1;
    assert_eq!(
        FORWARDED.with(Cell::get) - forwarded_before,
        1,
        "the commit drops the undone pages"
    );
    assert!(
        FORWARDED.with(Cell::get) > 0,
        "a rollback of a grown file drops its pages"
    );
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let reopened = Connection::open(&path).unwrap();
    let rows: i64 = reopened
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, committed);
}

/// Cache misses per lookup of `lookups` random keys of an index of
/// `rows` entries on 512-byte pages, with a cache an eighth larger than
/// the index's interior pages (an LRU of that size loses them to the
/// leaves), after as many lookups to warm it. Returns the interior pages too.
fn misses_per_lookup(keep_interior: bool, rows: u64, lookups: u64) -> (f64, i64) {
    assert!(install());
    let dir = tempfile::tempdir().unwrap();
    // The page size is settled as the writer's is (a new one makes a new cache).
    let open = || {
        let conn = Connection::open(dir.path().join("i.db")).unwrap();
        conn.execute_batch(
            "PRAGMA page_size = 512; PRAGMA journal_mode = WAL;
             CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL);
             CREATE UNIQUE INDEX t_k ON t (k);",
        )
        .unwrap();
        conn
    };
    let conn = if keep_interior {
        keeping_interior_pages(open)
    } else {
        open()
    };
    let key = |n: u64| format!("{:016x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    conn.execute_batch("BEGIN").unwrap();
    for n in 0..rows {
        conn.execute("INSERT INTO t (k) VALUES (?)", [key(n)]).unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    let interior: i64 = conn
        .query_row(
            "SELECT count(*) FROM dbstat WHERE name = 't_k' AND pagetype = 'internal'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute_batch(&format!("PRAGMA cache_size = {}", interior + interior / 8))
        .unwrap();
    let mut next = random(11);
    let mut look_up = |count: u64| {
        for _ in 0..count {
            let id: i64 = conn
                .query_row("SELECT id FROM t WHERE k = ?", [key(next() % rows)], |r| r.get(0))
                .unwrap();
            assert!(id > 0);
        }
    };
    // One read transaction: page 1 stays pinned throughout, so the
    // misses are the index's own (all connections of the process share
    // one LRU, and other tests' connections take pages from it).
    conn.execute_batch("BEGIN").unwrap();
    look_up(lookups);
    let misses = |reset: bool| {
        let (mut current, mut highest) = (0, 0);
        // SAFETY: a status query on an open connection's handle.
        let rc = unsafe {
            ffi::sqlite3_db_status(
                conn.handle(),
                ffi::SQLITE_DBSTATUS_CACHE_MISS,
                &mut current,
                &mut highest,
                c_int::from(reset),
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        current
    };
    misses(true);
    look_up(lookups);
    let per_lookup = f64::from(misses(false)) / lookups as f64;
    conn.execute_batch("COMMIT").unwrap();
    (per_lookup, interior)
}

/// The point of keeping interior pages: a lookup in an index larger than
/// the cache misses only its leaf, where an LRU of the same size loses
/// the interior pages to the leaves and misses those too. Run in a
/// process of its own (the next test): every connection of a process
/// shares one LRU (SQLite is built with memory management), so other
/// tests' connections would lend this one their pages.
#[test]
fn lookups_miss_only_their_leaves_when_interior_pages_are_kept() {
    let name = "store::page_cache::tests::misses_per_lookup_with_interior_pages_kept_and_not";
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--ignored", "--test-threads=1", "--nocapture"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{out}\n{err}");
    assert!(out.contains("1 passed"), "the measuring test did not run:\n{out}");
}

#[test]
#[ignore = "run by the test above, in a process of its own"]
fn misses_per_lookup_with_interior_pages_kept_and_not() {
    let (kept, interior) = misses_per_lookup(true, 20_000, 3_000);
    let (not_kept, _) = misses_per_lookup(false, 20_000, 3_000);
    eprintln!("{interior} interior pages: {kept:.2} misses per lookup kept, {not_kept:.2} not");
    // 0.93 and 1.49 with SQLite 3.46 (69 interior pages, 1,015 leaves).
    assert!(
        kept <= 1.0,
        "{kept:.2} misses per lookup with {interior} interior pages kept"
    );
    assert!(
        not_kept >= kept + 0.3,
        "{not_kept:.2} misses per lookup without, {kept:.2} with: the index is too small to tell"
    );
}
