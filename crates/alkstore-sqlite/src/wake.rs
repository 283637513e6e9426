//! The wake feed (SPEC §5): one watcher thread per store handle reads
//! `PRAGMA data_version` on a connection of its own and bumps the store's
//! [`WakeHub`] whenever another connection — in this process or any other —
//! committed. `data_version` only moves for *other* connections' commits,
//! which is why the watcher cannot share the writer or the reader.
//!
//! Every commit writes the `-wal` file, so on Linux the watcher sleeps on
//! inotify until that file is written ([`crate::walwatch`]), then reads
//! `data_version` every `every` for [`SETTLE`] (the commit's last frame may
//! become visible a moment after the write that woke it), then sleeps again.
//! An idle waiting store so costs a wake-up per [`FALLBACK`] instead of one
//! per `every`. Where inotify is missing or refuses the file, it polls every
//! `every` as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{Error, Result, WakeHub};
use rusqlite::{Connection, OpenFlags};

use crate::conn::{with_slot, Slot};
use crate::error::DbResult;
use crate::walwatch::WalWatch;

const DATA_VERSION: &str = "PRAGMA data_version";

/// How long the watcher keeps polling after the WAL was written.
const SETTLE: Duration = Duration::from_millis(50);

/// The longest the watcher sleeps on inotify: a safety net for a write the
/// kernel did not report (and the bound on how long a closed store's
/// watcher lingers).
const FALLBACK: Duration = Duration::from_millis(100);

/// Starts the watcher thread on a connection of its own, kept in `slot` so
/// that `close` closes it (`conn.rs`); the thread ends once `closed` is set.
pub(crate) fn start(path: &str, every: Duration, hub: Arc<WakeHub>, slot: Slot, closed: Arc<AtomicBool>) -> Result<()> {
    // Opened here, not in the thread, so a failure reaches the caller.
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).db()?;
    let mut last = version(&conn)?;
    *slot.lock() = Some(conn);
    let wal = WalWatch::new(path);
    std::thread::Builder::new()
        .name("alkstore-watch".into())
        .spawn(move || {
            let mut busy_until = Instant::now() + SETTLE;
            while !closed.load(Ordering::Acquire) {
                match &wal {
                    Some(w) if Instant::now() >= busy_until => {
                        if w.wait(FALLBACK) {
                            busy_until = Instant::now() + SETTLE;
                        }
                    }
                    _ => std::thread::sleep(every),
                }
                match with_slot(&slot, &closed, version) {
                    Ok(v) if v != last => {
                        last = v;
                        hub.bump();
                        busy_until = Instant::now() + SETTLE;
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
