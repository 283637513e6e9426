//! Pause and resume (SPEC §18): a row in `__alkstore_paused` per paused
//! queue. The claim statements check it (`not_paused!` in `claim.rs`); a
//! resume is a commit, which every waiting claimer's data_version watch
//! sees, so it wakes them like an enqueue.

use alkstore_core::{PauseOps, Result};
use rusqlite::params;

use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// Marks `?1` paused; a second pause keeps the first instant. `?2` clock offset.
pub(crate) const PAUSE: &str =
    "INSERT INTO __alkstore_paused (queue, paused_at) VALUES (?1, unixepoch() + ?2) ON CONFLICT (queue) DO NOTHING";

/// Clears the mark of `?1`.
pub(crate) const RESUME: &str = "DELETE FROM __alkstore_paused WHERE queue = ?1";

/// Whether `?1` is paused.
pub(crate) const IS_PAUSED: &str = "SELECT EXISTS (SELECT 1 FROM __alkstore_paused WHERE queue = ?1)";

impl PauseOps for SqliteEngine {
    fn pause(&self, queue: &str) -> Result<()> {
        let offset = self.offset();
        self.write(None, |c, _| c.prepare_cached(PAUSE).and_then(|mut s| s.execute(params![queue, offset])).db())?;
        Ok(())
    }

    fn resume(&self, queue: &str) -> Result<()> {
        self.write(None, |c, _| c.prepare_cached(RESUME).and_then(|mut s| s.execute([queue])).db())?;
        Ok(())
    }

    fn is_paused(&self, queue: &str) -> Result<bool> {
        self.read(None, |c| c.prepare_cached(IS_PAUSED).and_then(|mut s| s.query_row([queue], |r| r.get(0))).db())
    }
}
