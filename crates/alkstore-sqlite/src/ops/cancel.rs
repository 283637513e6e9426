//! `cancel` (SPEC §4.4): another party deletes a live row. It is not an
//! interrupt and records no dead row; the holder's next handle op finds the
//! row gone and returns false.

use alkstore_core::{CancelOps, Result, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// `cancel`: a live (pending or processing) row of this queue goes away.
pub(crate) const CANCEL: &str = "DELETE FROM __alkstore_jobs WHERE id = ?1 AND queue = ?2";

/// A parent being cancelled is marked first, so migration 0012's trigger
/// fails its children instead of releasing them as an ack would (SPEC §25).
pub(crate) const CANCEL_MARK: &str =
    "UPDATE __alkstore_jobs SET state = 'cancelled' WHERE id = ?1 AND queue = ?2 AND has_children = 1";

/// Deletes a pending or processing row of `queue`; false when there is none.
pub(crate) fn cancel(conn: &Connection, scope: Scope, queue: &str, id: i64) -> Result<bool> {
    atomic(conn, scope, |c| {
        c.prepare_cached(CANCEL_MARK).and_then(|mut s| s.execute(params![id, queue])).db()?;
        let changed = c.prepare_cached(CANCEL).and_then(|mut s| s.execute(params![id, queue])).db()?;
        Ok(changed == 1)
    })
}

impl CancelOps for SqliteEngine {
    fn cancel(&self, tx: Option<&mut dyn Tx>, queue: &str, id: i64) -> Result<bool> {
        self.write(tx, |c, scope| cancel(c, scope, queue, id))
    }
}
