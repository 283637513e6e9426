//! Completion counts (SPEC §19): one row per queue per minute, added to by
//! each process's flusher (`alkstore_core::store::completions`), read by
//! the dashboard's chart.

use alkstore_core::{CompletionOps, MinuteCount, Result, KEEP_MINUTES};
use rusqlite::params;

use crate::conn::atomic;
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// Adds `?2` to `?1`'s row of the current minute. `?3` clock offset.
pub(crate) const RECORD: &str = "INSERT INTO __alkstore_completions (queue, minute, n) \
     VALUES (?1, (unixepoch() + ?3) / 60, ?2) ON CONFLICT (queue, minute) DO UPDATE SET n = n + excluded.n";

/// Drops rows more than `?2` minutes old. `?1` clock offset.
pub(crate) const PRUNE: &str = "DELETE FROM __alkstore_completions WHERE minute < (unixepoch() + ?1) / 60 - ?2";

/// Every row from minute `?1` on.
pub(crate) const SINCE: &str =
    "SELECT queue, minute, n FROM __alkstore_completions WHERE minute >= ?1 ORDER BY queue, minute";

impl CompletionOps for SqliteEngine {
    fn record_completions(&self, counts: &[(String, u64)]) -> Result<()> {
        let offset = self.offset();
        self.write(None, |c, scope| {
            atomic(c, scope, |c| {
                let mut record = c.prepare_cached(RECORD).db()?;
                for (queue, n) in counts {
                    record.execute(params![queue, i64::try_from(*n).unwrap_or(i64::MAX), offset]).db()?;
                }
                c.prepare_cached(PRUNE).and_then(|mut s| s.execute(params![offset, KEEP_MINUTES])).db()?;
                Ok(())
            })
        })
    }

    fn completions_since(&self, since: i64) -> Result<Vec<MinuteCount>> {
        self.read(None, |c| {
            let mut stmt = c.prepare_cached(SINCE).db()?;
            let rows = stmt
                .query_map([since], |r| Ok(MinuteCount { queue: r.get(0)?, minute: r.get(1)?, count: r.get(2)? }))
                .db()?;
            rows.collect::<rusqlite::Result<Vec<_>>>().db()
        })
    }
}
