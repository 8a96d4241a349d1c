//! SQLite's own page cache, without a walk of all of it at every commit
//! (issue #17).
//!
//! When a B-tree page splits, SQLite renumbers the new pages into ascending
//! order and parks one of them under a temporary key meanwhile: the number
//! of the lock-byte page (262,145 with 4 KiB pages), which no database page
//! ever uses. The default cache (`pcache1`) remembers the largest key it was
//! ever given, and every commit truncates the cache to the database's size.
//! With that key remembered, the truncation cannot just shave the last few
//! keys: it walks every slot of its hash table and every page in it. That
//! walk was 2–4 % of the writer thread's time with a 16 MB cache and grows
//! with `cache_size` (a larger cache made the writer slower), until the
//! database passes 1 GiB and the key stops being larger than the database.
//!
//! This wrapper keeps its own largest key, leaving out renumberings to the
//! lock-byte page (the split renumbers that page again before it returns),
//! and passes a truncation on only when a page at or past the limit may be
//! cached; everything else goes straight to the default cache.

use rusqlite::ffi;
use std::ffi::{c_int, c_uint};
use std::sync::OnceLock;

/// SQLite's locking byte, 1 GiB into the file (`PENDING_BYTE`).
const PENDING_BYTE: u32 = 0x4000_0000;

/// The default cache's methods, saved before ours replace them.
static DEFAULT: OnceLock<Methods> = OnceLock::new();

struct Methods(ffi::sqlite3_pcache_methods2);

// SAFETY: plain function pointers and SQLite's own argument for them, which
// is only ever handed back to SQLite (that serialises its own caches).
unsafe impl Send for Methods {}
unsafe impl Sync for Methods {}

/// One connection's cache: the default cache and the largest key it may hold.
struct Cache {
    inner: *mut ffi::sqlite3_pcache,
    largest_key: c_uint,
    /// The lock-byte page's number at this cache's page size.
    lock_page: c_uint,
}

fn default() -> &'static ffi::sqlite3_pcache_methods2 {
    &DEFAULT.get().expect("installed before any cache is created").0
}

/// # Safety
/// `p` is a cache made by `create`, not yet destroyed.
unsafe fn cache<'a>(p: *mut ffi::sqlite3_pcache) -> &'a mut Cache {
    // SAFETY: per the function's contract; SQLite uses a cache from one
    // connection at a time.
    unsafe { &mut *(p as *mut Cache) }
}

unsafe extern "C" fn create(page_size: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
    // SAFETY: forwards to the default cache with SQLite's own arguments.
    let inner = unsafe { (default().xCreate.expect("xCreate"))(page_size, extra, purgeable) };
    if inner.is_null() {
        return inner;
    }
    let lock_page = u32::try_from(page_size)
        .ok()
        .filter(|size| *size > 0)
        .map_or(c_uint::MAX, |size| PENDING_BYTE / size + 1);
    Box::into_raw(Box::new(Cache {
        inner,
        largest_key: 0,
        lock_page,
    }))
    .cast()
}

unsafe extern "C" fn cache_size(p: *mut ffi::sqlite3_pcache, pages: c_int) {
    // SAFETY (this and the forwarding functions below): `p` came from
    // `create`; the default cache gets its own handle back.
    unsafe { (default().xCachesize.expect("xCachesize"))(cache(p).inner, pages) }
}

unsafe extern "C" fn page_count(p: *mut ffi::sqlite3_pcache) -> c_int {
    unsafe { (default().xPagecount.expect("xPagecount"))(cache(p).inner) }
}

unsafe extern "C" fn fetch(
    p: *mut ffi::sqlite3_pcache,
    key: c_uint,
    create_flag: c_int,
) -> *mut ffi::sqlite3_pcache_page {
    let cache = unsafe { cache(p) };
    let page = unsafe { (default().xFetch.expect("xFetch"))(cache.inner, key, create_flag) };
    if !page.is_null() && key > cache.largest_key {
        cache.largest_key = key;
    }
    page
}

unsafe extern "C" fn unpin(p: *mut ffi::sqlite3_pcache, page: *mut ffi::sqlite3_pcache_page, discard: c_int) {
    unsafe { (default().xUnpin.expect("xUnpin"))(cache(p).inner, page, discard) }
}

unsafe extern "C" fn rekey(
    p: *mut ffi::sqlite3_pcache,
    page: *mut ffi::sqlite3_pcache_page,
    old_key: c_uint,
    new_key: c_uint,
) {
    let cache = unsafe { cache(p) };
    unsafe { (default().xRekey.expect("xRekey"))(cache.inner, page, old_key, new_key) };
    #[cfg(test)]
    if new_key == cache.lock_page {
        tests::PARKED.with(|n| n.set(n.get() + 1));
    }
    // The split's temporary key is renumbered again before the split ends.
    if new_key != cache.lock_page && new_key > cache.largest_key {
        cache.largest_key = new_key;
    }
}

unsafe extern "C" fn truncate(p: *mut ffi::sqlite3_pcache, limit: c_uint) {
    let cache = unsafe { cache(p) };
    if limit <= cache.largest_key {
        #[cfg(test)]
        tests::FORWARDED.with(|n| n.set(n.get() + 1));
        unsafe { (default().xTruncate.expect("xTruncate"))(cache.inner, limit) };
        cache.largest_key = limit.saturating_sub(1);
    } else {
        #[cfg(test)]
        tests::assert_nothing_cached_from(cache, limit);
    }
}

unsafe extern "C" fn destroy(p: *mut ffi::sqlite3_pcache) {
    // SAFETY: made by `Box::into_raw` in `create`; SQLite never uses it again.
    let cache = unsafe { Box::from_raw(p as *mut Cache) };
    unsafe { (default().xDestroy.expect("xDestroy"))(cache.inner) }
}

unsafe extern "C" fn shrink(p: *mut ffi::sqlite3_pcache) {
    unsafe { (default().xShrink.expect("xShrink"))(cache(p).inner) }
}

/// Puts the wrapper in front of the default cache. SQLite accepts a cache
/// only before it initialises (the first connection in the process); after
/// that this returns `false` and the default cache stays, which is correct,
/// only slower. `sqlite3_config` must not race another thread's first use of
/// SQLite: call this before anything else in the process opens a database
/// (`store::sqlite::open` does, first thing).
pub(super) fn install() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let mut methods = std::mem::MaybeUninit::<ffi::sqlite3_pcache_methods2>::zeroed();
        // SAFETY: GETPCACHE2 writes the current methods into the struct.
        if unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, methods.as_mut_ptr()) }
            != ffi::SQLITE_OK
        {
            return false;
        }
        // SAFETY: filled in by SQLite just above.
        let default = unsafe { methods.assume_init() };
        let complete = default.xCreate.is_some()
            && default.xCachesize.is_some()
            && default.xPagecount.is_some()
            && default.xFetch.is_some()
            && default.xUnpin.is_some()
            && default.xRekey.is_some()
            && default.xTruncate.is_some()
            && default.xDestroy.is_some()
            && default.xShrink.is_some();
        if !complete || DEFAULT.set(Methods(default)).is_err() {
            return false;
        }
        let ours = ffi::sqlite3_pcache_methods2 {
            iVersion: 1,
            pArg: default.pArg,
            xInit: default.xInit,
            xShutdown: default.xShutdown,
            xCreate: Some(create),
            xCachesize: Some(cache_size),
            xPagecount: Some(page_count),
            xFetch: Some(fetch),
            xUnpin: Some(unpin),
            xRekey: Some(rekey),
            xTruncate: Some(truncate),
            xDestroy: Some(destroy),
            xShrink: Some(shrink),
        };
        // SAFETY: SQLite copies the struct; it fails (MISUSE) once initialised.
        unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_PCACHE2,
                &ours as *const ffi::sqlite3_pcache_methods2,
            ) == ffi::SQLITE_OK
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;
    use std::cell::Cell;

    thread_local! {
        /// Truncations this thread's connections passed on to the default cache.
        pub(super) static FORWARDED: Cell<u64> = const { Cell::new(0) };
        /// Pages this thread's splits parked under the lock-byte page's key.
        pub(super) static PARKED: Cell<u64> = const { Cell::new(0) };
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
        assert!(
            install(),
            "every test of this crate that opens SQLite installs the cache first"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA cache_size = -64000;
             CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, pad TEXT NOT NULL);
             CREATE UNIQUE INDEX t_k ON t (k);",
        )
        .unwrap();
        let mut committed = 0i64;
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 16
        };
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
}
