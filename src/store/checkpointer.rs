//! The SQLite checkpoint on its own thread (issue #17).
//!
//! SQLite copies committed WAL frames into the database file inside the
//! commit that passes `wal_autocheckpoint`, on the committing thread: a
//! quarter of the writer thread's time at 20,000 stored runs (a `pread` and a
//! `pwrite` per page and the database file's fsync; docs/performance.md).
//! Here the writer's connection never checkpoints by itself (its WAL hook,
//! which SQLite's own autocheckpoint is built on, only counts frames); a
//! `tollgate-checkpoint` thread with its own connection copies them with
//! `wal_checkpoint(PASSIVE)` while the writer goes on committing.
//!
//! SQLite starts the WAL over only at a commit that finds every frame
//! already copied, which a checkpointer running beside a busy writer rarely
//! leaves behind. So as the WAL grows long the checkpointer copies more
//! eagerly, and once it is long the checkpointer stops and the writer copies
//! what is left itself before its next batch; that batch's commit then
//! writes from the WAL's start. Reads that keep overlapping that moment can
//! hold the start over off, as with SQLite's own checkpoint; past
//! `WalLimits::backstop` the writer's copy waits briefly for them (`RESTART`).
//! Durability does not change: every commit still syncs the WAL before it
//! is answered, and a checkpoint syncs the WAL before and the database file
//! after copying, as SQLite's own.

use rusqlite::ffi;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the WAL may grow, in frames (pages), before each step of the
/// copy. Longer means fewer passes, fewer fsyncs of the database file and
/// more pages changed twice but copied once (1.04–1.16× the resolves per
/// second at 16,000 against 4,000 frames, 1.01–1.16× at C=16 at 32,000
/// against 16,000; docs/performance.md), for a WAL that reaches 128 MB
/// (256 MB when readers hold it off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalLimits {
    /// Frames the checkpointer lets gather before a pass.
    pub(crate) pass: u32,
    /// Past this many frames the WAL should start over: the checkpointer
    /// starts no more passes and the writer copies what is left, before its
    /// next batch.
    pub(crate) restart: u32,
}

impl WalLimits {
    pub(crate) const DEFAULT: WalLimits = WalLimits {
        pass: 8_000,
        restart: 32_000,
    };

    /// From this many frames on, the checkpointer copies without waiting for
    /// a pass's worth, so that little is left for the writer at `restart`.
    fn approach(self) -> u32 {
        self.restart / 2
    }

    /// Past this many frames readers have kept the WAL from starting over
    /// (each read that began before the writer's copy ended and was still
    /// running at its next commit holds it off): the writer's copy then
    /// waits for them, up to `BACKSTOP_WAIT`, as SQLite's `RESTART`
    /// checkpoint does.
    fn backstop(self) -> u32 {
        2 * self.restart
    }
}

impl Default for WalLimits {
    fn default() -> WalLimits {
        WalLimits::DEFAULT
    }
}

/// What the checkpointer leaves to the approach's next pass.
const TAIL_FRAMES: u32 = 128;
const BACKSTOP_WAIT: Duration = Duration::from_millis(100);
/// A quiet store's last frames are copied after this long.
const IDLE: Duration = Duration::from_secs(1);
/// Failed copies are logged at most this often (a failing disk fails them all).
const WARN_EVERY: Duration = Duration::from_secs(60);

/// What the writer and the checkpointer know of the WAL.
#[derive(Default)]
struct Progress {
    /// Bumped when the WAL starts over: a pass that began in an older
    /// generation reports frame numbers of a file that is gone.
    generation: u64,
    /// Frames in the WAL after the writer's last commit.
    frames: u32,
    /// Frames the writer's last commit added.
    last_commit: u32,
    /// Frames known to be copied into the database file, this generation.
    copied: u32,
    /// Commits so far (the checkpointer's idle pass leaves a busy writer be).
    commits: u64,
    stop: bool,
    limits: WalLimits,
}

impl Progress {
    fn behind(&self) -> u32 {
        self.frames.saturating_sub(self.copied)
    }

    /// Whether the checkpointer should start a pass now. Never once the WAL
    /// is long: a checkpointer that kept chasing the writer's commits would
    /// hold the checkpoint lock whenever the writer tried to copy the tail,
    /// and the WAL would never start over.
    fn pass_due(&self) -> bool {
        let behind = self.behind();
        if self.frames >= self.limits.restart {
            false
        } else if self.frames >= self.limits.approach() {
            behind > TAIL_FRAMES.max(self.last_commit)
        } else {
            behind >= self.limits.pass
        }
    }

    /// Whether the writer should copy what is left itself (if the
    /// checkpointer is still in its last pass, it tries before the next batch).
    fn tail_due(&self) -> bool {
        self.frames >= self.limits.restart && self.behind() > 0
    }

    /// Notes the WAL's length after a commit that handed `written` frames to
    /// it. A WAL holding no more than this commit's frames started over
    /// (or was empty: taking it for a new WAL then is harmless).
    fn committed(&mut self, frames: u32, written: u32) {
        if frames < self.frames || frames <= written {
            self.generation += 1;
            self.copied = 0;
            self.frames = 0;
        }
        self.last_commit = frames - self.frames;
        self.frames = frames;
        self.commits += 1;
    }
}

struct Shared {
    progress: Mutex<Progress>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        // Progress is plain counters: a panic elsewhere leaves it usable.
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a finished copy of `copied` frames that began in `generation`.
    fn copied(&self, generation: u64, copied: u32) {
        let mut progress = self.lock();
        if progress.generation == generation && copied > progress.copied {
            progress.copied = copied;
        }
    }
}

/// The writer's side: owns the WAL hook on the writer's connection and the
/// checkpointer thread. Dropped before the writer's connection closes.
pub(super) struct Checkpoints {
    writer_db: *mut ffi::sqlite3,
    /// Set by the WAL hook after each commit of the writer's connection.
    frames: *mut AtomicU32,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// When the writer last logged a failed copy (a failing disk fails
    /// every batch; one line a minute says so).
    warned: std::cell::Cell<Option<Instant>>,
}

/// SQLite's WAL hook: runs on the writer's thread after each of its commits.
unsafe extern "C" fn on_commit(
    frames_in_wal: *mut c_void,
    _db: *mut ffi::sqlite3,
    _schema: *const c_char,
    frames: c_int,
) -> c_int {
    // SAFETY: the pointer is the `AtomicU32` that `Checkpoints` keeps alive
    // until it has removed this hook.
    let frames_in_wal = unsafe { &*(frames_in_wal as *const AtomicU32) };
    frames_in_wal.store(u32::try_from(frames).unwrap_or(0), Ordering::Relaxed);
    // Always OK: anything else turns the durable commit that just happened
    // into an error for its callers.
    ffi::SQLITE_OK
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: copies what no reader still needs from
/// the WAL, never waiting for a lock; `None` if another checkpoint is running.
/// `RESTART` also waits (up to the connection's busy timeout) for readers
/// still using the WAL, so that the next commit can start it over.
fn copy_frames(conn: &rusqlite::Connection, restart: bool) -> rusqlite::Result<Option<u32>> {
    let sql = if restart {
        "PRAGMA wal_checkpoint(RESTART)"
    } else {
        "PRAGMA wal_checkpoint(PASSIVE)"
    };
    let copied: i64 = conn.prepare_cached(sql)?.query_row([], |row| row.get(2))?;
    Ok(u32::try_from(copied).ok())
}

/// Logs a failed copy at most once per `WARN_EVERY`.
fn warn_failed(warned: &mut Option<Instant>, who: &str, error: &rusqlite::Error) {
    let now = Instant::now();
    if warned.is_none_or(|at| now.duration_since(at) >= WARN_EVERY) {
        *warned = Some(now);
        tracing::warn!(%error, "{who}'s checkpoint failed");
    }
}

impl Checkpoints {
    /// Takes the checkpoint off `writer` (a connection in WAL mode): opens the
    /// checkpointer's connection to `path` with the same `synchronous` level
    /// and starts its thread, which copies by `limits`.
    pub(super) fn start(
        writer: &rusqlite::Connection,
        path: &std::path::Path,
        synchronous: &str,
        limits: WalLimits,
    ) -> Result<Checkpoints, Box<dyn std::error::Error + Send + Sync>> {
        use rusqlite::OpenFlags;
        let own = rusqlite::Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        own.execute_batch(&format!(
            "PRAGMA synchronous = {synchronous}; PRAGMA wal_autocheckpoint = 0;"
        ))?;
        let shared = Arc::new(Shared {
            progress: Mutex::new(Progress {
                limits,
                ..Progress::default()
            }),
            wake: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("tollgate-checkpoint".into())
                .spawn(move || checkpoint_loop(own, &shared))?
        };
        let frames = Box::into_raw(Box::new(AtomicU32::new(0)));
        // SAFETY: the handle is the writer's open connection, which outlives
        // `Checkpoints` (dropped first, removing the hook); `frames` lives
        // until then. Installing a WAL hook also turns SQLite's
        // autocheckpoint off for this connection.
        let writer_db = unsafe { writer.handle() };
        unsafe { ffi::sqlite3_wal_hook(writer_db, Some(on_commit), frames.cast()) };
        Ok(Checkpoints {
            writer_db,
            frames,
            shared,
            thread: Some(thread),
            warned: std::cell::Cell::new(None),
        })
    }

    /// Called on the writer's thread after a successful commit (its answers
    /// already sent): notes the WAL's length and wakes the checkpointer when
    /// a pass is due.
    pub(super) fn after_commit(&self) {
        // SAFETY: `frames` is alive while `self` is.
        let frames = unsafe { &*self.frames }.load(Ordering::Relaxed);
        let written = self.frames_written();
        let mut progress = self.shared.lock();
        progress.committed(frames, written);
        if progress.pass_due() {
            self.shared.wake.notify_one();
        }
    }

    /// Frames the writer's connection handed to the WAL since the last call
    /// (SQLite counts each page it writes there).
    fn frames_written(&self) -> u32 {
        let (mut current, mut highwater) = (0, 0);
        // SAFETY: the writer's connection is open while `self` is (see `start`).
        let rc = unsafe {
            ffi::sqlite3_db_status(
                self.writer_db,
                ffi::SQLITE_DBSTATUS_CACHE_WRITE,
                &mut current,
                &mut highwater,
                1,
            )
        };
        if rc == ffi::SQLITE_OK {
            u32::try_from(current).unwrap_or(0)
        } else {
            0
        }
    }

    /// Called on the writer's thread before it begins a batch: copies what
    /// the checkpointer left of a long WAL, so that this batch's commit
    /// writes from the WAL's start.
    pub(super) fn before_batch(&self, writer: &rusqlite::Connection) {
        let (generation, restart) = {
            let progress = self.shared.lock();
            if !progress.tail_due() {
                return;
            }
            (progress.generation, progress.frames >= progress.limits.backstop())
        };
        let copied = if restart {
            let wait = writer.busy_timeout(BACKSTOP_WAIT);
            let copied = wait.and_then(|()| copy_frames(writer, true));
            // The writer's own timeout (10 s) for everything else.
            let _ = writer.busy_timeout(super::sqlite::BUSY_TIMEOUT);
            copied
        } else {
            copy_frames(writer, false)
        };
        match copied {
            Ok(Some(copied)) => self.shared.copied(generation, copied),
            Ok(None) => {} // the checkpointer is copying; try before the next batch
            Err(e) => {
                let mut warned = self.warned.get();
                warn_failed(&mut warned, "the writer", &e);
                self.warned.set(warned);
            }
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        // SAFETY: the writer's connection is still open (see `start`).
        unsafe { ffi::sqlite3_wal_hook(self.writer_db, None, std::ptr::null_mut()) };
        // SAFETY: created by `Box::into_raw` in `start`; the hook that read it is gone.
        drop(unsafe { Box::from_raw(self.frames) });
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How much lower than the threads that commit and answer the checkpointer
/// runs (`nice` steps): its copying is background work with a backstop (the
/// writer copies a WAL past `restart` itself), and at full CPU it otherwise
/// takes turns with them (1.01–1.19× the resolves at C=16 on two cores,
/// docs/performance.md, eighteenth sitting). The price: a pass it started
/// holds SQLite's checkpoint lock while it waits for the CPU, and the
/// writer's copy of the tail waits for that pass, so on a busy host the WAL
/// can run past `restart` (the backstop bounds it; nineteenth sitting).
const NICER_BY: i32 = 10;

/// Lowers the calling thread's CPU priority by [`NICER_BY`] (up to the
/// lowest, 19). Raising a nice value needs no privilege; on Linux it is a
/// per-thread attribute, so only this thread changes. Elsewhere `nice`
/// would lower the whole process, so it is left alone there.
fn yield_cpu_to_commits() {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain system call about the calling thread; its result (the
    // new nice value, or -1) is not needed.
    unsafe {
        libc::nice(NICER_BY);
    }
}

fn checkpoint_loop(conn: rusqlite::Connection, shared: &Shared) {
    yield_cpu_to_commits();
    let mut stalled = false;
    let mut warned = None;
    loop {
        let (generation, before) = {
            let mut progress = shared.lock();
            loop {
                if progress.stop {
                    return;
                }
                // After a pass that copied nothing new (a reader holds an old
                // snapshot, or the writer was copying), wait for a commit.
                if progress.pass_due() && !stalled {
                    break;
                }
                let commits = progress.commits;
                let (guard, waited) = shared
                    .wake
                    .wait_timeout(progress, IDLE)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                progress = guard;
                stalled = false;
                // A quiet store's last frames; not a long WAL's that a busy
                // writer is about to copy itself.
                let quiet = progress.commits == commits || progress.frames < progress.limits.restart;
                if waited.timed_out() && quiet && progress.behind() > 0 {
                    break;
                }
            }
            (progress.generation, progress.copied)
        };
        match copy_frames(&conn, false) {
            Ok(Some(copied)) => {
                stalled = copied <= before;
                shared.copied(generation, copied);
            }
            Ok(None) => stalled = true,
            Err(e) => {
                warn_failed(&mut warned, "the checkpointer", &e);
                stalled = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: WalLimits = WalLimits::DEFAULT;

    /// Small enough that the tests below write a few times `restart`
    /// quickly; the rules do not depend on the sizes.
    const SMALL: WalLimits = WalLimits {
        pass: 1_000,
        restart: 4_000,
    };

    fn progress(frames: u32, copied: u32) -> Progress {
        Progress {
            frames,
            copied,
            ..Progress::default()
        }
    }

    /// A store on `dir/name` with a table of one-page rows.
    async fn page_store(dir: &std::path::Path, name: &str) -> crate::store::Store {
        use crate::store::{Durability, Store};
        let db = dir.join(name);
        let store = Store::open_sqlite(&format!("sqlite://{}", db.display()), Durability::Full, SMALL, 16)
            .await
            .unwrap();
        store
            .write(|c| c.execute_batch("CREATE TABLE t (v INTEGER PRIMARY KEY, pad TEXT NOT NULL)"))
            .await
            .unwrap();
        store
    }

    /// Writes `rounds` × 16 commands of ten one-page rows, sixteen at a
    /// time; returns the largest the WAL at `wal` grew to, in frames.
    async fn write_pages(store: &crate::store::Store, wal: &std::path::Path, rounds: i64) -> u64 {
        let mut largest_wal = 0;
        for round in 0..rounds {
            let mut tasks = Vec::new();
            for task in 0..16i64 {
                let s = store.clone();
                tasks.push(tokio::spawn(async move {
                    s.write(move |c| {
                        for row in 0..10i64 {
                            let v = (round * 16 + task) * 10 + row;
                            c.execute(
                                "INSERT INTO t (v, pad) VALUES (?, ?)",
                                crate::args![v, "x".repeat(3000)],
                            )?;
                        }
                        Ok(())
                    })
                    .await
                }));
            }
            for t in tasks {
                t.await.unwrap().unwrap();
            }
            largest_wal = largest_wal.max(std::fs::metadata(wal).unwrap().len());
        }
        largest_wal / (4096 + 24)
    }

    #[test]
    fn a_pass_waits_for_enough_frames_then_chases_then_stops() {
        assert!(!progress(L.pass - 1, 0).pass_due());
        assert!(progress(L.pass, 0).pass_due());
        // Approaching the restart: any more than a short tail or one commit.
        assert!(!progress(L.approach(), L.approach() - TAIL_FRAMES).pass_due());
        assert!(progress(L.approach(), L.approach() - TAIL_FRAMES - 1).pass_due());
        let one_large_commit = Progress {
            last_commit: 400,
            ..progress(L.approach(), L.approach() - 400)
        };
        assert!(!one_large_commit.pass_due());
        // Past it the writer copies; the checkpointer never holds it off.
        assert!(!progress(L.restart, 0).pass_due());
    }

    #[test]
    fn the_writer_copies_what_is_left_of_a_long_wal() {
        assert!(!progress(L.restart - 1, 0).tail_due(), "short WAL");
        assert!(progress(L.restart, 0).tail_due());
        assert!(progress(L.restart + 300, L.restart).tail_due());
        assert!(!progress(L.restart, L.restart).tail_due(), "nothing left");
    }

    #[test]
    fn a_commit_that_wrote_the_whole_wal_started_it_over() {
        let mut p = progress(2_400, 2_300);
        p.committed(2_480, 80);
        assert_eq!(
            (p.generation, p.frames, p.last_commit, p.copied),
            (0, 2_480, 80, 2_300)
        );
        // Started over with a commit as large as the old WAL: frames grew.
        p.committed(2_600, 2_600);
        assert_eq!((p.generation, p.frames, p.copied), (1, 2_600, 0));
        // Started over with a small commit: frames fell.
        p.committed(90, 90);
        assert_eq!((p.generation, p.frames, p.copied), (2, 90, 0));
    }

    #[test]
    fn a_copy_reported_for_an_older_wal_is_ignored() {
        let shared = Shared {
            progress: Mutex::new(progress(300, 0)),
            wake: Condvar::new(),
        };
        shared.lock().generation = 2;
        shared.copied(1, 5_000);
        assert_eq!(shared.lock().copied, 0);
        shared.copied(2, 250);
        assert_eq!(shared.lock().copied, 250);
        shared.copied(2, 200);
        assert_eq!(shared.lock().copied, 250, "never backwards");
    }

    /// Commands of about ten pages each, sixteen at a time, until the
    /// writer has written several times `L.restart`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_reach_the_database_file_and_the_wal_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("c.db");
        let store = page_store(dir.path(), "c.db").await;
        let autocheckpoint: Option<i64> = store
            .write(|c| c.query_scalar("PRAGMA wal_autocheckpoint", &[]))
            .await
            .unwrap();
        assert_eq!(autocheckpoint, Some(0), "the writer's commits do not checkpoint");
        let frames = write_pages(&store, &dir.path().join("c.db-wal"), 64).await;
        // 10,240 rows of a page each, 2.5 times SMALL.restart: a WAL that
        // never started over would hold them all.
        assert!(
            frames < u64::from(2 * SMALL.restart),
            "the WAL grew to {frames} frames: it did not start over"
        );
        // In WAL mode only a checkpoint writes the database file.
        let copied_pages = std::fs::metadata(&db).unwrap().len() / 4096;
        assert!(copied_pages >= 5_000, "{copied_pages} pages in the database file");
        let all: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&store.read)
            .await
            .unwrap();
        assert_eq!(all, 10_240);
    }

    /// The nice value of each thread of this process named `name` (as
    /// `/proc` shortens it).
    #[cfg(target_os = "linux")]
    fn nice_values(name: &str) -> Vec<i64> {
        let mut values = vec![];
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() != name {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
                continue; // the thread ended meanwhile
            };
            // After "pid (comm) " the fields start at the third; nice is the 19th.
            let rest = &stat[stat.rfind(") ").unwrap() + 2..];
            values.push(rest.split(' ').nth(16).unwrap().parse().unwrap());
        }
        values
    }

    /// The checkpointer runs `NICER_BY` below the thread that opened the
    /// store (up to the lowest, 19), whatever the process's own nice value.
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_checkpointer_yields_the_cpu_to_the_threads_that_commit() {
        // SAFETY: reads the calling thread's nice value (-1 is a valid answer,
        // and no error is possible for the calling thread).
        let opener = i64::from(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) });
        let expected = (opener + i64::from(NICER_BY)).min(19);
        let dir = tempfile::tempdir().unwrap();
        let _store = page_store(dir.path(), "n.db").await;
        // The thread lowers itself as it starts; other tests' checkpointers
        // (same process) do the same, so any one of them may be seen.
        let mut seen = vec![];
        for _ in 0..500 {
            seen = nice_values("tollgate-checkp");
            if seen.contains(&expected) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no checkpoint thread at nice {expected} (the opener's is {opener}): {seen:?}");
    }

    /// Two readers that keep a snapshot open nearly all the time: each
    /// commit after the writer's copy finds one of them on the WAL, so only
    /// the backstop's wait lets it start over.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readers_that_keep_overlapping_do_not_hold_the_wal_off() {
        use std::sync::atomic::AtomicBool;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.db");
        let store = page_store(dir.path(), "r.db").await;
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (db, stop) = (db.clone(), stop.clone());
                std::thread::spawn(move || {
                    let conn = rusqlite::Connection::open(&db).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        conn.execute_batch("BEGIN").unwrap();
                        let _: i64 = conn
                            .query_row("SELECT count(*) FROM t WHERE v < 10", [], |r| r.get(0))
                            .unwrap();
                        std::thread::sleep(Duration::from_millis(30));
                        conn.execute_batch("COMMIT").unwrap();
                    }
                })
            })
            .collect();
        let frames = write_pages(&store, &dir.path().join("r.db-wal"), 128).await;
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
        // 20,480 frames written; a WAL that never started over holds them all.
        assert!(
            frames < u64::from(SMALL.backstop() + SMALL.restart),
            "the WAL grew to {frames} frames"
        );
    }
}
