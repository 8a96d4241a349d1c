//! The storage floor of a durable resolve (issue #17): what SQLite alone
//! costs to change as many random rows as a resolve changes B-tree leaves,
//! in group commits, with the engine's durability (`synchronous=FULL`, WAL),
//! and nothing else: no HTTP, no engine rules, statements prepared once.
//!
//!     cargo run --release -p tollgate --example storage_floor -- [ROWS] [RESOLVES] [TREES] [BATCH]
//!
//! ROWS rows (≈ 400-byte bodies) in each of TREES tables, then RESOLVES
//! "resolves" of one random row per table plus one appended event, BATCH per
//! commit. Prints the rate on this one thread and the process's CPU (user +
//! system, from /proc/self/stat) per resolve; the checkpoint runs on the
//! committing thread at SQLite's default 1,000 frames, so it is included.
use rusqlite::{params, Connection};
use std::time::Instant;

fn arg(i: usize, default: usize) -> usize {
    std::env::args()
        .nth(i)
        .map(|a| a.parse().expect("a whole number"))
        .unwrap_or(default)
}

/// User + system CPU of this process, in clock ticks (1/100 s).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let after_name = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

/// A small deterministic generator (xorshift): the same rows each run.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn main() -> rusqlite::Result<()> {
    let (rows, resolves, trees, batch) = (arg(1, 20_000), arg(2, 10_000), arg(3, 8), arg(4, 9));
    let dir = std::env::temp_dir().join(format!("tollgate-storage-floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let conn = Connection::open(dir.join("floor.db"))?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -16000;")?;
    let body = "x".repeat(400);
    for t in 0..trees {
        conn.execute_batch(&format!(
            "CREATE TABLE t{t} (id TEXT PRIMARY KEY, body TEXT NOT NULL)"
        ))?;
    }
    conn.execute_batch(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, payload TEXT NOT NULL)",
    )?;
    // Keys in creation order, as UUIDv7 run ids are; resolves pick at random.
    let id = |i: usize| format!("{i:012}-0000-7000-8000-000000000000");
    conn.execute_batch("BEGIN")?;
    for t in 0..trees {
        let mut insert = conn.prepare(&format!("INSERT INTO t{t} (id, body) VALUES (?, ?)"))?;
        for i in 0..rows {
            insert.execute(params![id(i), body])?;
        }
    }
    conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")?;

    let mut updates = (0..trees)
        .map(|t| conn.prepare(&format!("UPDATE t{t} SET body = ? WHERE id = ?")))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut append = conn.prepare("INSERT INTO events (run_id, payload) VALUES (?, ?)")?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (started, ticks) = (Instant::now(), cpu_ticks());
    let mut done = 0;
    while done < resolves {
        conn.execute_batch("BEGIN")?;
        for _ in 0..batch.min(resolves - done) {
            let run = id(rng.below(rows));
            let changed = format!("{done:08}{}", &body[8..]);
            for update in &mut updates {
                update.execute(params![changed, run])?;
            }
            append.execute(params![run, &body[..220]])?;
            done += 1;
        }
        conn.execute_batch("COMMIT")?;
    }
    let (seconds, ticks) = (started.elapsed().as_secs_f64(), cpu_ticks() - ticks);
    println!(
        "{rows} rows x {trees} tables, {resolves} resolves, {batch} per commit: {:.0} resolves/s on one thread, {:.3} ms CPU per resolve",
        resolves as f64 / seconds,
        ticks as f64 * 10.0 / resolves as f64
    );
    drop((updates, append));
    drop(conn);
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
    Ok(())
}
