//! Keeping the WAL file bounded under sustained load (SPEC §20).
//!
//! SQLite checkpoints on its own once a commit leaves 1000 frames (about
//! 4 MiB) in the WAL, but PASSIVE: it copies back only the frames no reader
//! still needs, and never waits. The WAL file starts over from its beginning
//! only after a checkpoint copied back *every* frame and no reader is left
//! on the old ones. With several processes that each run readers — a waiting
//! claim's watcher reads the file every millisecond — some reader nearly
//! always holds an older snapshot, so neither happens and the file only grows:
//! 290 MiB in 15 s with 4 processes churning jobs (docs/benchmarks.md).
//!
//! Two measures bound it:
//! - every [`CHECK_EVERY`] writes, the writer looks at the WAL file's size,
//!   and past [`TRUNCATE_AT`] runs a TRUNCATE checkpoint: it waits for the
//!   readers of old frames to finish (they are short) while new writers
//!   queue, copies every frame back, and cuts the file to zero. It keeps
//!   trying for at most [`CHECKPOINT_WAIT`]; if it could not finish by then,
//!   it gives up without harm and the next check tries again;
//! - `journal_size_limit`: when the WAL does start over on its own, the file
//!   is cut back to [`JOURNAL_SIZE_LIMIT`] instead of keeping its high-water
//!   size forever.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use alkstore_core::Result;
use parking_lot::Mutex;
use rusqlite::Connection;

use crate::error::DbResult;

/// Bytes the WAL file is cut back to when it starts over on its own: four
/// auto-checkpoints' worth, so a busy store does not shrink and regrow it.
pub(crate) const JOURNAL_SIZE_LIMIT: i64 = 16 << 20;

/// WAL size past which the writer forces a TRUNCATE checkpoint. Above the
/// size the auto-checkpoint keeps a healthy WAL at (about 4 MiB), so a store
/// whose auto-checkpoints work never pays for a forced one.
pub(crate) const TRUNCATE_AT: u64 = 16 << 20;

/// Writes between two looks at the WAL's size: a `stat` is about a
/// microsecond, so per op this costs nothing measurable, while a few dozen
/// writes add well under a MiB of frames.
const CHECK_EVERY: u32 = 32;

/// The longest a forced checkpoint keeps trying. Readers hold their
/// snapshots for milliseconds; a caller transaction of another process may
/// hold the write lock much longer, and then the checkpoint gives up rather
/// than stall this writer.
const CHECKPOINT_WAIT: Duration = Duration::from_millis(250);

/// The first pause after a forced checkpoint that could not finish, and the
/// longest one.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// One attempt's busy wait, for the write lock and for readers of old frames.
const ATTEMPT_WAIT: Duration = Duration::from_millis(20);

/// Between attempts that found the checkpoint lock taken.
const RETRY_PAUSE: Duration = Duration::from_millis(1);

/// The forced checkpoint; its first column is 1 when it could not finish.
const CHECKPOINT_TRUNCATE: &str = "PRAGMA wal_checkpoint(TRUNCATE)";

/// Sets the connection's WAL size limit. Per connection, and no write to the file.
pub(crate) fn configure(conn: &Connection) -> Result<()> {
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT).db()
}

/// The writer's watch over its WAL file.
pub(crate) struct WalBound {
    /// The WAL file: SQLite's own full name of the database plus `-wal`, so a
    /// later `chdir` of the process does not lose it.
    wal: Option<PathBuf>,
    /// Writes seen, for [`CHECK_EVERY`].
    writes: AtomicU32,
    /// The store's busy timeout, restored after a forced checkpoint.
    busy_timeout: Duration,
    /// After a forced checkpoint that could not finish: no new attempt before
    /// `.0`, and `.1` is the pause to set after the next failure.
    backoff: Mutex<Option<(Instant, Duration)>>,
}

impl WalBound {
    /// The watch for the database `writer` has open.
    pub(crate) fn new(writer: &Connection, busy_timeout: Duration) -> Self {
        let wal = writer.path().filter(|p| !p.is_empty()).map(|p| PathBuf::from(format!("{p}-wal")));
        WalBound { wal, writes: AtomicU32::new(0), busy_timeout, backoff: Mutex::new(None) }
    }

    /// Called on the writer after each of its writes, outside any transaction.
    #[inline]
    pub(crate) fn after_write(&self, conn: &Connection) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % CHECK_EVERY == CHECK_EVERY - 1 {
            self.check(conn);
        }
    }

    /// Forces a checkpoint when the WAL is past [`TRUNCATE_AT`]. Best effort:
    /// the write that led here has landed. A checkpoint that cannot finish
    /// (a long read transaction pins the old frames — the application's own,
    /// say) is not tried again before a pause that doubles from
    /// [`BACKOFF_MIN`] to [`BACKOFF_MAX`], so such a reader costs this writer
    /// at most one [`CHECKPOINT_WAIT`] per pause, not one per check.
    #[cold]
    fn check(&self, conn: &Connection) {
        let Some(wal) = &self.wal else { return };
        let too_big = std::fs::metadata(wal).is_ok_and(|m| m.len() > TRUNCATE_AT);
        if !too_big || !conn.is_autocommit() {
            return;
        }
        let mut backoff = self.backoff.lock();
        let now = Instant::now();
        if backoff.is_some_and(|(until, _)| now < until) {
            return;
        }
        *backoff = match self.truncate(conn) {
            Ok(true) => None,
            _ => {
                let pause = backoff.map_or(BACKOFF_MIN, |(_, p)| p);
                Some((Instant::now() + pause, (pause * 2).min(BACKOFF_MAX)))
            }
        };
    }

    /// Runs the TRUNCATE checkpoint, retrying for up to [`CHECKPOINT_WAIT`];
    /// whether it finished.
    ///
    /// Retried here rather than left to the busy handler: SQLite takes the
    /// checkpoint lock without waiting, and other processes' automatic
    /// checkpoints hold it for a moment after nearly every commit of a busy
    /// store (measured: with one attempt the forced checkpoint almost never
    /// ran and the WAL grew to 500 MiB; retried, each one finished within
    /// about 40 ms).
    fn truncate(&self, conn: &Connection) -> Result<bool> {
        let started = Instant::now();
        conn.busy_timeout(ATTEMPT_WAIT).db()?;
        let mut done = Ok(false);
        while started.elapsed() < CHECKPOINT_WAIT {
            done = conn.query_row(CHECKPOINT_TRUNCATE, [], |r| r.get::<_, i64>(0)).db().map(|busy| busy == 0);
            if !matches!(done, Ok(false)) {
                break;
            }
            std::thread::sleep(RETRY_PAUSE);
        }
        conn.busy_timeout(self.busy_timeout).db()?;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file store in WAL mode with `n` committed rows of padding.
    fn store(dir: &std::path::Path) -> Result<Connection> {
        let conn = Connection::open(dir.join("w.db")).db()?;
        let _: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).db()?;
        // No automatic checkpoints: the WAL keeps every frame until ours.
        conn.pragma_update(None, "wal_autocheckpoint", 0).db()?;
        conn.execute_batch("CREATE TABLE pad (b BLOB)").db()?;
        Ok(conn)
    }

    fn fill(conn: &Connection, bytes: usize) -> Result<()> {
        let blob = vec![7u8; 64 << 10];
        for _ in 0..bytes / blob.len() {
            conn.execute("INSERT INTO pad VALUES (?1)", [&blob]).db()?;
        }
        Ok(())
    }

    #[test]
    fn a_wal_past_the_threshold_is_truncated_at_the_next_check() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| alkstore_core::Error::database(None, e.to_string()))?;
        let conn = store(dir.path())?;
        let bound = WalBound::new(&conn, Duration::from_secs(5));
        let wal = bound.wal.clone().ok_or_else(|| alkstore_core::Error::database(None, "no WAL path"))?;
        fill(&conn, (TRUNCATE_AT as usize) + (1 << 20))?;
        let before = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert!(before > TRUNCATE_AT, "{before}");
        for _ in 0..CHECK_EVERY {
            bound.after_write(&conn);
        }
        let after = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        assert_eq!(after, 0, "TRUNCATE empties the WAL file");
        let rows: i64 = conn.query_row("SELECT count(*) FROM pad", [], |r| r.get(0)).db()?;
        assert!(rows > 0, "the frames were copied back, not lost");
        Ok(())
    }

    #[test]
    fn a_pinned_wal_backs_off_instead_of_waiting_at_every_check() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| alkstore_core::Error::database(None, e.to_string()))?;
        let conn = store(dir.path())?;
        let bound = WalBound::new(&conn, Duration::from_secs(5));
        // A second connection holds a read transaction on the old frames.
        let reader = Connection::open(dir.path().join("w.db")).db()?;
        fill(&conn, 1 << 20)?;
        reader.execute_batch("BEGIN; SELECT count(*) FROM pad;").db()?;
        fill(&conn, (TRUNCATE_AT as usize) + (1 << 20))?;
        for _ in 0..CHECK_EVERY * 10 {
            bound.after_write(&conn);
        }
        // Ten checks, one failed attempt: the pause it set is the first one,
        // and the next failure would double it.
        let next = bound.backoff.lock().map(|(_, next)| next);
        assert_eq!(next, Some(BACKOFF_MIN * 2));
        assert!(std::fs::metadata(dir.path().join("w.db-wal")).map(|m| m.len()).unwrap_or(0) > TRUNCATE_AT);
        reader.execute_batch("COMMIT").db()?;
        Ok(())
    }

    #[test]
    fn a_small_wal_is_left_alone() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| alkstore_core::Error::database(None, e.to_string()))?;
        let conn = store(dir.path())?;
        let bound = WalBound::new(&conn, Duration::from_secs(5));
        let wal = bound.wal.clone().ok_or_else(|| alkstore_core::Error::database(None, "no WAL path"))?;
        fill(&conn, 1 << 20)?;
        let before = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        for _ in 0..CHECK_EVERY {
            bound.after_write(&conn);
        }
        assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), before);
        Ok(())
    }

    #[test]
    fn the_limit_is_set_on_the_connection() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| alkstore_core::Error::database(None, e.to_string()))?;
        let conn = store(dir.path())?;
        configure(&conn)?;
        let limit: i64 = conn.query_row("PRAGMA journal_size_limit", [], |r| r.get(0)).db()?;
        assert_eq!(limit, JOURNAL_SIZE_LIMIT);
        Ok(())
    }
}
