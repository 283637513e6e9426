//! `sweep_expired` (SPEC §4.4): expired rows to dead, then the retention
//! purge, in one write transaction per queue. Two processes sweeping at once
//! serialise on the file's write lock, and the second finds nothing left to
//! move, so no row is ever moved twice or stranded.

use alkstore_core::{Error, Result, Swept};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now, Scope};
use crate::error::DbResult;
use crate::sql;

/// Sweeps `queue` at one instant; returns what moved and what was purged.
pub(crate) fn sweep_expired(conn: &Connection, offset: i64, queue: &str) -> Result<Swept> {
    atomic(conn, Scope::Own, |c| {
        let now = now(c, offset)?;
        let exec = |sql: &str| c.prepare_cached(sql).and_then(|mut s| s.execute(params![queue, now])).db();
        let moved = exec(sql::SWEEP_MOVE)?;
        let deleted = if moved > 0 { exec(sql::SWEEP_DELETE)? } else { 0 };
        if deleted != moved {
            return Err(Error::database(
                None,
                format!("sweep copied {moved} expired rows to dead but removed {deleted}; rolled back"),
            ));
        }
        let purged = exec(sql::PURGE)?;
        Ok(Swept { expired: moved as i64, purged: purged as i64 })
    })
}
