//! The wake feed (SPEC §5): one watcher thread per store handle polls
//! `PRAGMA data_version` on a connection of its own and bumps the store's
//! [`WakeHub`] whenever another connection — in this process or any other —
//! committed. `data_version` only moves for *other* connections' commits,
//! which is why the watcher cannot share the writer or the reader.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Error, Result, WakeHub};
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::DbResult;

const DATA_VERSION: &str = "PRAGMA data_version";

/// The earliest future `run_at` of a pending row, or the second the earliest
/// unexpired lease becomes reclaimable (`deadline + 1`: claimable once
/// `deadline < now`), of one queue. Lapsed leases are left out: they are
/// claimable already, or expired and waiting for a sweep. The lease side is a seek on `jobs_leased`; the
/// run_at side walks the queue's pending rows on `jobs_ready` (ordered by
/// priority first, so it cannot seek), which is why the core rate-limits
/// this query. A dedicated run_at index would answer it with a seek but
/// cost every enqueue and claim one more page write (measured: half the
/// per-op enqueue rate).
/// Aggregate `min` over a union, because scalar `min(a, b)` is NULL when
/// either side is.
pub(crate) const NEXT_WAKE: &str = "SELECT min(t) FROM (
       SELECT min(run_at) AS t FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready
        WHERE queue = ?1 AND state = 'pending' AND run_at > ?2
       UNION ALL
       SELECT min(deadline) + 1 FROM __alkstore_jobs
        WHERE queue = ?1 AND state = 'processing' AND deadline >= ?2)";

/// Starts the watcher thread; it ends once `closed` is set.
pub(crate) fn start(path: &str, every: Duration, hub: Arc<WakeHub>, closed: Arc<AtomicBool>) -> Result<()> {
    // Opened here, not in the thread, so a failure reaches the caller.
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).db()?;
    let mut last = version(&conn)?;
    std::thread::Builder::new()
        .name("alkstore-watch".into())
        .spawn(move || {
            while !closed.load(Ordering::Acquire) {
                std::thread::sleep(every);
                match version(&conn) {
                    Ok(v) if v != last => {
                        last = v;
                        hub.bump();
                    }
                    Ok(_) => {}
                    // A transient error (e.g. the file is busy being
                    // checkpointed): wake everyone so they re-read, and go on.
                    Err(_) => hub.bump(),
                }
            }
        })
        .map_err(|e| Error::database(None, format!("could not start the wake watcher thread: {e}")))?;
    Ok(())
}

fn version(conn: &Connection) -> Result<i64> {
    conn.prepare_cached(DATA_VERSION).and_then(|mut s| s.query_row([], |r| r.get(0))).db()
}

/// See [`NEXT_WAKE`].
pub(crate) fn next_wake(conn: &Connection, queue: &str, now: i64) -> Result<Option<i64>> {
    conn.prepare_cached(NEXT_WAKE)
        .and_then(|mut s| s.query_row(rusqlite::params![queue, now], |r| r.get(0)).optional())
        .db()
        .map(Option::flatten)
}
