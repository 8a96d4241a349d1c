//! A VFS over the platform's default one that hands the writer's WAL frames
//! to the kernel in a few large writes per commit instead of two per page.
//!
//! SQLite writes each WAL frame with two `pwrite`s (its 24-byte header, then
//! the page): about 22 system calls per resolve, a large part of the
//! server's kernel time (docs/performance.md, seventh sitting). With
//! `synchronous=FULL` a commit syncs the WAL before it publishes the new
//! frames to other connections, and a crash before that sync loses nothing
//! that was answered; so the frames may wait in memory until then. This VFS
//! keeps the WAL's contiguous writes in a buffer and writes it out (in
//! pieces of at most [`MAX_WRITE`]) before anything that could observe the
//! file: a sync, a read, a truncation, a size query, a file control,
//! closing the file, a write elsewhere in the file, and the release of the
//! WAL's write lock (after a transaction given up with frames spilled:
//! another connection may append there next), and whenever the buffer
//! passes [`BUFFER_LIMIT`]. What reaches the disk before each sync, and
//! before another connection may write, is what reached it without the
//! buffer.
//!
//! Only for the writer with `Durability::Full` (`open_writer` checks that
//! the connection syncs in full): with `synchronous=NORMAL` a commit does
//! not sync, and buffered frames would be invisible to the readers and lost
//! with the process. A WAL whose database lacks power-safe overwrite (or is
//! on sequential-only storage) is passed through unbuffered: there SQLite
//! pads a commit to a sector boundary and writes its last piece after the
//! sync.

use rusqlite::ffi;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

/// The name the writer's connection opens its database with.
pub(super) const VFS_NAME: &CStr = c"tollgate-wal-buffer";

/// Written out once the buffer holds this much (a batch of a few hundred
/// commands; the WAL is checkpointed at 1,000 frames, ≈ 4 MiB).
const BUFFER_LIMIT: usize = 1 << 20;

/// The most one write hands to the default VFS: the unix VFS writes at most
/// 128 KiB − 1 bytes per call (it masks the length with 0x1ffff, and a
/// write cut short that way is reported as a full disk), about 31 frames.
const MAX_WRITE: usize = 0x1ffff;

/// An open file: SQLite's header first (SQLite sees a `*mut sqlite3_file`),
/// then the default VFS's own file object, which lives right after it in
/// the same allocation.
#[repr(C)]
struct File {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    /// Only a WAL has one.
    pending: *mut Pending,
    /// A database's WAL, a WAL's database (null until both are open).
    partner: *mut File,
}

/// The databases open through this VFS, by the address of the name SQLite
/// opened them with, so a WAL (whose name leads back to that address) finds
/// its database.
static DATABASES: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Bytes written by SQLite and not yet by the kernel: `bytes` belong at
/// file offset `start`.
struct Pending {
    start: i64,
    bytes: Vec<u8>,
    /// Times the buffer was written out (for the tests).
    flushes: u64,
}

/// Whether the VFS is registered (once per process; it lives as long as the process).
static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();

/// Registers the VFS; the writer then opens its connection with [`VFS_NAME`].
pub(super) fn register() -> Result<(), String> {
    REGISTERED.get_or_init(|| unsafe { register_once() }).clone()
}

unsafe fn register_once() -> Result<(), String> {
    // Makes sure SQLite is initialised before its default VFS is asked for.
    if ffi::sqlite3_initialize() != ffi::SQLITE_OK {
        return Err("sqlite3_initialize failed".into());
    }
    let inner = ffi::sqlite3_vfs_find(std::ptr::null());
    if inner.is_null() {
        return Err("SQLite has no default VFS".into());
    }
    let mut vfs: ffi::sqlite3_vfs = *inner;
    vfs.szOsFile = (std::mem::size_of::<File>() + (*inner).szOsFile as usize) as c_int;
    vfs.pNext = std::ptr::null_mut();
    vfs.zName = VFS_NAME.as_ptr();
    vfs.pAppData = inner.cast();
    vfs.xOpen = Some(open);
    vfs.xDelete = Some(delete);
    vfs.xAccess = Some(access);
    vfs.xFullPathname = Some(full_pathname);
    // The rest (randomness, time, sleep, extensions, system calls) are the
    // default VFS's own functions; they do not depend on the VFS object
    // they are called through, which is ours.
    let vfs = Box::leak(Box::new(vfs));
    let rc = ffi::sqlite3_vfs_register(vfs, 0);
    if rc != ffi::SQLITE_OK {
        return Err(format!("sqlite3_vfs_register failed: {rc}"));
    }
    Ok(())
}

unsafe fn inner_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    (*vfs).pAppData.cast()
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let inner_vfs = inner_vfs(vfs);
    let shell = file.cast::<File>();
    let inner = file
        .cast::<u8>()
        .add(std::mem::size_of::<File>())
        .cast::<ffi::sqlite3_file>();
    (*shell).base.pMethods = std::ptr::null();
    (*shell).inner = inner;
    (*shell).pending = std::ptr::null_mut();
    (*shell).partner = std::ptr::null_mut();
    let rc = ((*inner_vfs).xOpen.expect("xOpen"))(inner_vfs, name, inner, flags, out_flags);
    // SQLite calls xClose only when pMethods is set: leave it unset so the
    // inner file (closed or never opened) is not closed twice.
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    if (*inner).pMethods.is_null() {
        return ffi::SQLITE_CANTOPEN;
    }
    let methods = &*(*inner).pMethods;
    if methods.iVersion < 3 {
        (methods.xClose.expect("xClose"))(inner);
        return ffi::SQLITE_CANTOPEN;
    }
    if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 && !name.is_null() {
        databases().push((name as usize, shell as usize));
    }
    if flags & ffi::SQLITE_OPEN_WAL != 0 && !name.is_null() {
        // Only SQLite's pager opens a WAL, with a name that leads back to its
        // database's (`sqlite3_filename_database`).
        let database = ffi::sqlite3_filename_database(name) as usize;
        let db = databases()
            .iter()
            .find(|(n, _)| *n == database)
            .map_or(std::ptr::null_mut(), |&(_, db)| db as *mut File);
        if !db.is_null() {
            (*db).partner = shell;
            (*shell).partner = db;
            // Without power-safe overwrite on the database file (`psow=0`,
            // a file control) SQLite pads a commit to a sector boundary and
            // writes its last piece after the sync: such a WAL is written
            // through.
            let db_inner = (*db).inner;
            let device = ((*(*db_inner).pMethods)
                .xDeviceCharacteristics
                .expect("xDeviceCharacteristics"))(db_inner);
            if device & ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE != 0
                && device & ffi::SQLITE_IOCAP_SEQUENTIAL == 0
            {
                (*shell).pending = Box::into_raw(Box::new(Pending {
                    start: 0,
                    bytes: Vec::with_capacity(BUFFER_LIMIT),
                    flushes: 0,
                }));
            }
        }
    }
    (*shell).base.pMethods = &METHODS;
    ffi::SQLITE_OK
}

fn databases() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    DATABASES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

unsafe extern "C" fn delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, sync_dir: c_int) -> c_int {
    let inner = inner_vfs(vfs);
    ((*inner).xDelete.expect("xDelete"))(inner, name, sync_dir)
}

unsafe extern "C" fn access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    let inner = inner_vfs(vfs);
    ((*inner).xAccess.expect("xAccess"))(inner, name, flags, out)
}

unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    let inner = inner_vfs(vfs);
    ((*inner).xFullPathname.expect("xFullPathname"))(inner, name, n_out, out)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

unsafe fn inner(file: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) {
    let inner = (*file.cast::<File>()).inner;
    (inner, &*(*inner).pMethods)
}

/// Writes out what the buffer of `file` holds (if it has one), in one call.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    let pending = (*file.cast::<File>()).pending;
    if pending.is_null() {
        return ffi::SQLITE_OK;
    }
    let (inner, methods) = inner(file);
    write_out(inner, methods, &mut *pending)
}

/// Writes out the buffer of the WAL a database file opened, when its
/// connection gives up a lock: what is left there never committed, so a
/// failed write loses only frames no one will read.
unsafe fn flush_wal_of(database: *mut ffi::sqlite3_file) {
    let wal = (*database.cast::<File>()).partner;
    if !wal.is_null() {
        let _ = flush(wal.cast());
    }
}

unsafe fn write_out(
    inner: *mut ffi::sqlite3_file,
    methods: &ffi::sqlite3_io_methods,
    pending: &mut Pending,
) -> c_int {
    if pending.bytes.is_empty() {
        return ffi::SQLITE_OK;
    }
    let mut rc = ffi::SQLITE_OK;
    let mut offset = pending.start;
    for piece in pending.bytes.chunks(MAX_WRITE) {
        rc = (methods.xWrite.expect("xWrite"))(inner, piece.as_ptr().cast(), piece.len() as c_int, offset);
        if rc != ffi::SQLITE_OK {
            break;
        }
        offset += piece.len() as i64;
    }
    // On failure the frames are dropped with the error (the call that
    // flushed reports it, whichever write gave the bytes): SQLite gives up
    // the transaction, and frames past the last commit are never read.
    pending.bytes.clear();
    pending.flushes += 1;
    rc
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let flushed = flush(file);
    let shell = file.cast::<File>();
    if !(*shell).partner.is_null() {
        (*(*shell).partner).partner = std::ptr::null_mut();
        (*shell).partner = std::ptr::null_mut();
    }
    databases().retain(|&(_, f)| f != shell as usize);
    if !(*shell).pending.is_null() {
        drop(Box::from_raw((*shell).pending));
        (*shell).pending = std::ptr::null_mut();
    }
    let (inner, methods) = inner(file);
    let closed = (methods.xClose.expect("xClose"))(inner);
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let (inner, methods) = inner(file);
    (methods.xRead.expect("xRead"))(inner, buf, amount, offset)
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let (inner, methods) = inner(file);
    let pending = (*file.cast::<File>()).pending;
    if pending.is_null() || amount <= 0 {
        return (methods.xWrite.expect("xWrite"))(inner, buf, amount, offset);
    }
    let pending = &mut *pending;
    let data = std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize);
    let end = pending.start + pending.bytes.len() as i64;
    if !pending.bytes.is_empty() && offset >= pending.start && offset + amount as i64 <= end {
        // A frame of this transaction written again (SQLite does so when a
        // page changes again after the cache spilled it).
        let at = (offset - pending.start) as usize;
        pending.bytes[at..at + data.len()].copy_from_slice(data);
        return ffi::SQLITE_OK;
    }
    if !pending.bytes.is_empty() && offset != end {
        let rc = write_out(inner, methods, pending);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
    }
    if pending.bytes.is_empty() {
        pending.start = offset;
    }
    pending.bytes.extend_from_slice(data);
    if pending.bytes.len() >= BUFFER_LIMIT {
        return write_out(inner, methods, pending);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let (inner, methods) = inner(file);
    (methods.xTruncate.expect("xTruncate"))(inner, size)
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let (inner, methods) = inner(file);
    (methods.xSync.expect("xSync"))(inner, flags)
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let (inner, methods) = inner(file);
    (methods.xFileSize.expect("xFileSize"))(inner, size)
}

unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    let rc = flush(file);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let (inner, methods) = inner(file);
    (methods.xFileControl.expect("xFileControl"))(inner, op, arg)
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xLock.expect("xLock"))(inner, level)
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // In `locking_mode=EXCLUSIVE` the WAL's write lock is never released
    // through `shm_lock`; the database lock is, when the mode ends.
    flush_wal_of(file);
    let (inner, methods) = inner(file);
    (methods.xUnlock.expect("xUnlock"))(inner, level)
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xCheckReservedLock.expect("xCheckReservedLock"))(inner, out)
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xSectorSize.expect("xSectorSize"))(inner)
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xDeviceCharacteristics.expect("xDeviceCharacteristics"))(inner)
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xShmMap.expect("xShmMap"))(inner, page, page_size, extend, out)
}

unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // Giving up the WAL's write lock (lock 0): what the buffer still holds
    // belongs to a transaction that never committed (a commit writes the
    // buffer out at its sync). Written out now, as SQLite wrote it without
    // the buffer, before another connection may append where it lies.
    let releases_write_lock =
        flags == ffi::SQLITE_SHM_UNLOCK | ffi::SQLITE_SHM_EXCLUSIVE && offset <= 0 && offset + n > 0;
    if releases_write_lock {
        flush_wal_of(file);
    }
    let (inner, methods) = inner(file);
    (methods.xShmLock.expect("xShmLock"))(inner, offset, n, flags)
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    let (inner, methods) = inner(file);
    (methods.xShmBarrier.expect("xShmBarrier"))(inner)
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xShmUnmap.expect("xShmUnmap"))(inner, delete)
}

unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xFetch.expect("xFetch"))(inner, offset, amount, out)
}

unsafe extern "C" fn unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    let (inner, methods) = inner(file);
    (methods.xUnfetch.expect("xUnfetch"))(inner, offset, page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::{Connection, OpenFlags};

    fn open_buffered(path: &std::path::Path) -> Connection {
        // Every test that opens SQLite installs the page cache first, so
        // that it is installed in this test binary whichever test runs first.
        crate::store::page_cache::install();
        register().unwrap();
        let conn =
            Connection::open_with_flags_and_vfs(path, OpenFlags::default(), VFS_NAME.to_str().unwrap())
                .unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .unwrap();
        conn
    }

    /// The WAL's buffer (null when it is written through).
    fn wal_pending(conn: &Connection) -> *mut Pending {
        let mut wal: *mut ffi::sqlite3_file = std::ptr::null_mut();
        unsafe {
            let rc = ffi::sqlite3_file_control(
                conn.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_JOURNAL_POINTER,
                (&mut wal as *mut *mut ffi::sqlite3_file).cast(),
            );
            assert_eq!(rc, ffi::SQLITE_OK);
            assert!(
                !wal.is_null() && std::ptr::eq((*wal).pMethods, &METHODS),
                "the WAL is not ours"
            );
            (*wal.cast::<File>()).pending
        }
    }

    /// The times the WAL's buffer was written out so far.
    fn wal_flushes(conn: &Connection) -> u64 {
        let pending = wal_pending(conn);
        assert!(!pending.is_null(), "the WAL is not buffered");
        unsafe { (*pending).flushes }
    }

    fn insert_rows(conn: &Connection, from: i64, count: i64) {
        let tx = conn.unchecked_transaction().unwrap();
        for id in from..from + count {
            // Each row about a page: a commit of many frames.
            tx.execute("INSERT INTO t (id, body) VALUES (?1, ?2)", (id, "x".repeat(3000)))
                .unwrap();
        }
        tx.commit().unwrap();
    }

    #[test]
    fn a_commit_reaches_the_wal_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-write.db");
        let conn = open_buffered(&path);
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        insert_rows(&conn, 0, 10);
        let before = wal_flushes(&conn);
        insert_rows(&conn, 10, 40);
        // Forty pages and more, their headers too: one write at the commit's sync.
        assert_eq!(wal_flushes(&conn) - before, 1);
    }

    #[test]
    fn other_connections_see_every_commit_and_it_survives_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("visible.db");
        let conn = open_buffered(&path);
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        let reader = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let count = |c: &Connection| {
            c.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };
        for round in 0..30 {
            insert_rows(&conn, round * 20, 20);
            assert_eq!(count(&reader), (round + 1) * 20, "round {round}");
            if round % 7 == 6 {
                conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
            }
        }
        // A transaction given up leaves nothing behind for anyone.
        {
            let tx = conn.unchecked_transaction().unwrap();
            tx.execute("DELETE FROM t", []).unwrap();
            tx.rollback().unwrap();
        }
        insert_rows(&conn, 10_000, 5);
        assert_eq!(count(&reader), 605);
        drop(reader);
        drop(conn);
        let reopened = Connection::open(&path).unwrap();
        assert_eq!(count(&reopened), 605);
        let check: String = reopened
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }

    #[test]
    fn a_wal_without_power_safe_overwrite_is_written_through() {
        crate::store::page_cache::install();
        register().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("psow.db");
        let uri = format!("file:{}?psow=0", path.display());
        let flags = OpenFlags::default() | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags_and_vfs(uri, flags, VFS_NAME.to_str().unwrap()).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            .unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        insert_rows(&conn, 0, 10);
        assert!(wal_pending(&conn).is_null());
        let buffered = open_buffered(&dir.path().join("psow-default.db"));
        buffered
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        assert!(!wal_pending(&buffered).is_null());
    }

    #[test]
    fn frames_of_a_rolled_back_transaction_never_land_on_a_later_commit() {
        for exclusive in [false, true] {
            spill_give_up_and_let_another_connection_commit(exclusive);
        }
    }

    fn spill_give_up_and_let_another_connection_commit(exclusive: bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spill.db");
        let buffered = open_buffered(&path);
        buffered
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        insert_rows(&buffered, 0, 5);
        // Every page in the database file: giving up the next transaction
        // reads nothing back from the WAL (a read would write the buffer out).
        buffered.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        if exclusive {
            // The WAL's write lock is then taken and released without a call.
            buffered.execute_batch("PRAGMA locking_mode = EXCLUSIVE").unwrap();
        }
        // A transaction larger than the cache spills frames into the WAL
        // (here: into the buffer), then is given up.
        buffered.execute_batch("PRAGMA cache_size = 10").unwrap();
        {
            let tx = buffered.unchecked_transaction().unwrap();
            for id in 100..200 {
                tx.execute("INSERT INTO t (id, body) VALUES (?1, ?2)", (id, "s".repeat(3000)))
                    .unwrap();
            }
            tx.rollback().unwrap();
        }
        if exclusive {
            // Back to normal: the next read gives the locks up.
            buffered.execute_batch("PRAGMA locking_mode = NORMAL").unwrap();
            buffered
                .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap();
        }
        // Another connection (as the session store or the CLI would) commits
        // frames where the spilled ones were...
        let other = Connection::open(&path).unwrap();
        other.execute_batch("PRAGMA synchronous = FULL").unwrap();
        insert_rows(&other, 1_000, 3);
        // ...and the buffered connection commits after them.
        insert_rows(&buffered, 2_000, 2);
        drop(buffered);
        drop(other);
        let reopened = Connection::open(&path).unwrap();
        let check: String = reopened
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let ids: Vec<i64> = reopened
            .prepare("SELECT id FROM t ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ids, [0, 1, 2, 3, 4, 1_000, 1_001, 1_002, 2_000, 2_001]);
    }
}
