//! Forgetting a queue (SPEC §18, issue 44): the rows keyed by a queue that
//! holds nothing a caller may still read. One write transaction, so the
//! file's one writer orders it with every enqueue: an enqueue that commits
//! first leaves a job the checks see, and one that commits after inserts
//! into a queue whose listing is gone, which 0008's trigger writes again.
//! Every statement is a seek on an index that leads with the queue.

use alkstore_core::{Forget, ForgetOps, Result};
use rusqlite::{params, Connection};

use crate::conn::{atomic, now};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// Whether `?1` has a live row (pending, processing, waiting), a dead row,
/// and a result whose keep runs past `?2` or that a child still names.
pub(crate) const HOLDS: &str = "SELECT \
     EXISTS (SELECT 1 FROM __alkstore_jobs WHERE queue = ?1), \
     EXISTS (SELECT 1 FROM __alkstore_dead WHERE queue = ?1), \
     EXISTS (SELECT 1 FROM __alkstore_results r WHERE r.queue = ?1 AND r.expires_at IS NOT NULL \
             AND (r.expires_at > ?2 OR EXISTS (SELECT 1 FROM __alkstore_edges e WHERE e.parent_id = r.id)))";

/// The rows keyed by `?1`, each table in turn. Results kept for a child
/// (`expires_at` NULL) are the child's: its triggers delete them, whatever
/// the queue. A queue that passed [`HOLDS`] has only expired results left.
pub(crate) const FORGET: [&str; 6] = [
    "DELETE FROM __alkstore_queues WHERE queue = ?1",
    "DELETE FROM __alkstore_paused WHERE queue = ?1",
    "DELETE FROM __alkstore_limits WHERE queue = ?1",
    "DELETE FROM __alkstore_rate_log WHERE queue = ?1",
    "DELETE FROM __alkstore_completions WHERE queue = ?1",
    "DELETE FROM __alkstore_results WHERE queue = ?1 AND expires_at IS NOT NULL",
];

fn forget(c: &Connection, offset: i64, queue: &str) -> Result<Forget> {
    let now = now(c, offset)?;
    let (live, dead, results) = c
        .prepare_cached(HOLDS)
        .and_then(|mut s| s.query_row(params![queue, now], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))))
        .db()?;
    if live || dead || results {
        return Ok(Forget::Holds { live, dead, results });
    }
    let mut deleted = 0;
    for sql in FORGET {
        deleted += c.prepare_cached(sql).and_then(|mut s| s.execute([queue])).db()?;
    }
    Ok(Forget::Forgotten { known: deleted > 0 })
}

impl ForgetOps for SqliteEngine {
    fn forget_queue(&self, queue: &str) -> Result<Forget> {
        let offset = self.offset();
        self.write(None, |c, scope| atomic(c, scope, |c| forget(c, offset, queue)))
    }
}
