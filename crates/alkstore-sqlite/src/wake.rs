//! The wake feed (SPEC §5): one watcher thread per store handle polls
//! `PRAGMA data_version` on a connection of its own and bumps the store's
//! [`WakeHub`] whenever another connection — in this process or any other —
//! committed. `data_version` only moves for *other* connections' commits,
//! which is why the watcher cannot share the writer or the reader.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{Error, Result, WakeHub};
use rusqlite::{Connection, OpenFlags};

use crate::error::DbResult;

const DATA_VERSION: &str = "PRAGMA data_version";

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
