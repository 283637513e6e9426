//! `sweep_expired` (SPEC §4.4): expired rows to dead, then the retention
//! purge, in one write transaction per queue. Two processes sweeping at once
//! serialise on the file's write lock, and the second finds nothing left to
//! move, so no row is ever moved twice or stranded.

use alkstore_core::{Error, Result, SweepOps, Swept};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// The sweep predicate: every live row of `?1` at or past its expiry `?2`
/// (pending and processing alike; a seek on `__alkstore_jobs_expiring`).
macro_rules! expired {
    () => {
        "queue = ?1 AND expires_at IS NOT NULL AND expires_at <= ?2"
    };
}

/// Sweep step 1: expired rows to dead as 'expired'.
pub(crate) const SWEEP_MOVE: &str = live_to_dead!("'expired'", "?2", expired!());
/// Sweep step 2: the same rows leave the live table.
pub(crate) const SWEEP_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", expired!());
/// Sweep step 3: dead rows of `?1` past their retention at `?2`.
pub(crate) const PURGE: &str =
    "DELETE FROM __alkstore_dead WHERE queue = ?1 AND purge_at IS NOT NULL AND purge_at <= ?2";

/// Sweeps `queue` at one instant; returns what moved and what was purged.
pub(crate) fn sweep_expired(conn: &Connection, offset: i64, queue: &str) -> Result<Swept> {
    atomic(conn, Scope::Own, |c| {
        let now = now(c, offset)?;
        let exec = |sql: &str| c.prepare_cached(sql).and_then(|mut s| s.execute(params![queue, now])).db();
        let moved = exec(SWEEP_MOVE)?;
        let deleted = if moved > 0 { exec(SWEEP_DELETE)? } else { 0 };
        if deleted != moved {
            return Err(Error::database(
                None,
                format!("sweep copied {moved} expired rows to dead but removed {deleted}; rolled back"),
            ));
        }
        let purged = exec(PURGE)?;
        // Kept results past their keep_result (SPEC §25) go with the sweep too.
        exec(super::workflows::PURGE_RESULTS)?;
        Ok(Swept { expired: moved as i64, purged: purged as i64 })
    })
}

impl SweepOps for SqliteEngine {
    fn sweep_expired(&self, queue: &str) -> Result<Swept> {
        let offset = self.offset();
        self.conns.with_writer(|c| sweep_expired(c, offset, queue))
    }
}
