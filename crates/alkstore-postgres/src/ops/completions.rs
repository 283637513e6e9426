//! Completion counts (SPEC §19): one row per queue per minute, added to by
//! each process's flusher (`alkstore_core::store::completions`), read by
//! the dashboard's chart.

use alkstore_core::{CompletionOps, MinuteCount, Result, KEEP_MINUTES};

use crate::conn::NOW;
use crate::engine::PgEngine;
use crate::rows::col;

/// The completion statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// Adds `$3[i]` to `$2[i]`'s row of the current minute and drops rows
    /// more than `$4` minutes old, in one statement. `$1` clock offset. The
    /// queues come sorted, so concurrent writers lock rows in one order.
    pub(crate) record: String,
    /// Every row from minute `$1` on.
    pub(crate) since: String,
}

impl Sql {
    /// For the quoted schema `s`.
    pub(crate) fn new(s: &str) -> Self {
        Sql {
            record: format!(
                "{NOW}, old AS (DELETE FROM {s}.completions WHERE minute < (SELECT t FROM n) / 60 - $4::bigint) \
                 INSERT INTO {s}.completions (queue, minute, n) \
                 SELECT u.q, (SELECT t FROM n) / 60, u.c FROM unnest($2::text[], $3::bigint[]) AS u(q, c) \
                 ON CONFLICT (queue, minute) DO UPDATE SET n = {s}.completions.n + excluded.n"
            ),
            since: format!(
                "SELECT queue, minute, n FROM {s}.completions WHERE minute >= $1::bigint \
                 ORDER BY queue COLLATE \"C\", minute"
            ),
        }
    }
}

impl CompletionOps for PgEngine {
    fn record_completions(&self, counts: &[(String, u64)]) -> Result<()> {
        let queues: Vec<&str> = counts.iter().map(|(q, _)| q.as_str()).collect();
        let ns: Vec<i64> = counts.iter().map(|(_, n)| i64::try_from(*n).unwrap_or(i64::MAX)).collect();
        self.run(None, async |cx| {
            cx.execute(&cx.sql.completions.record, &[&cx.offset, &queues, &ns, &KEEP_MINUTES]).await.map(drop)
        })
    }

    fn completions_since(&self, since: i64) -> Result<Vec<MinuteCount>> {
        self.run(None, async |cx| {
            let rows = cx.query(&cx.sql.completions.since, &[&since]).await?;
            rows.iter().map(|r| Ok(MinuteCount { queue: col(r, 0)?, minute: col(r, 1)?, count: col(r, 2)? })).collect()
        })
    }
}
