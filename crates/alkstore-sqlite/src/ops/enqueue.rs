//! `enqueue` / `enqueue_many`: stamping the queue's options onto new rows.

use alkstore_core::{foreign_params, Engine, EnqueueOps, NewJob, QueueOpts, Result, SqlValue, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;

/// The columns and values of one new job. `?8` offset, `?9` absolute run_at
/// or NULL, `?10` delay, `?11` expires_s or NULL (NULL + x is NULL: no
/// expiry), `?12` group or NULL, `?13` unique key (its own statement,
/// [`ENQUEUE_UNIQUE`]).
macro_rules! insert_job {
    ($key_col:literal, $key_val:literal) => {
        concat!(
            "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, group_key",
            $key_col,
            ") VALUES (max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), (SELECT hwm FROM __alkstore_ids)) + 1, \
             ?1, 'pending', ?2, ?3, 0, ?4, 0, ?5, ?6, ?7, unixepoch() + ?8, \
             coalesce(?9, unixepoch() + ?8 + ?10), unixepoch() + ?8 + ?11, ?12",
            $key_val,
            ")"
        )
    };
}

/// One new job without a unique key.
pub(crate) const ENQUEUE: &str = insert_job!("", "");

/// One new job with a unique key (SPEC §18): when the key is live the
/// no-op update makes RETURNING hand back the live row's id, in the same
/// statement, and nothing else changes.
pub(crate) const ENQUEUE_UNIQUE: &str = concat!(
    insert_job!(", unique_key", ", ?13"),
    " ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO UPDATE SET unique_key = excluded.unique_key \
     RETURNING id"
);

/// The enqueue for a caller's own connection (ADR 0015), in that
/// connection's SQLite, which may be older than the bundled one: hence
/// `strftime('%s')` for the clock. `$1` store_id, `$2` queue, `$3` visibility
/// timeout, `$4` backoff base, `$5` retention, `$6` clock offset, `$7` the
/// jobs (the values: `alkstore_core::foreign_params`). Ids are allocated as `enqueue` does,
/// one past the highest ever, in input order; the guard on the store's identity
/// (`store_identity!`) makes a connection to another file, or to a copy of
/// this one, insert nothing. A live unique key returns the
/// live row, as in [`ENQUEUE_UNIQUE`].
pub(crate) const FOREIGN: &str = concat!(
    "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key) \
SELECT b.base + j.key + 1, $2, 'pending', json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), 0, \
json_extract(j.value, '$[2]'), 0, $3, $4, $5, b.now, coalesce(json_extract(j.value, '$[3]'), \
b.now + json_extract(j.value, '$[4]')), b.now + json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'), \
json_extract(j.value, '$[7]') \
FROM json_each($7) AS j, (SELECT max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), \
(SELECT hwm FROM __alkstore_ids)) AS base, CAST(strftime('%s', 'now') AS INTEGER) + $6 AS now) AS b \
WHERE (SELECT ",
    store_identity!(),
    " FROM __alkstore_meta WHERE key = 'store_id') = $1 \
ORDER BY j.key ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL \
DO UPDATE SET unique_key = excluded.unique_key RETURNING id, unique_key"
);

/// Inserts `jobs` (non-empty) and returns their ids in order. One job outside
/// a caller transaction is a single autocommit INSERT; several are one
/// transaction (or one savepoint inside the caller's).
pub(crate) fn enqueue(
    conn: &Connection,
    scope: Scope,
    offset: i64,
    queue: &str,
    opts: &QueueOpts,
    jobs: &[NewJob],
) -> Result<Vec<i64>> {
    if !jobs.iter().any(NewJob::in_workflow) {
        if let [job] = jobs {
            return Ok(vec![insert(conn, offset, queue, opts, job)?]);
        }
        return atomic(conn, scope, |c| jobs.iter().map(|job| insert(c, offset, queue, opts, job)).collect());
    }
    // Workflow jobs (SPEC §25): every parent id checked before any write,
    // then each job inserted and linked to its parents.
    atomic(conn, scope, |c| {
        super::workflows::check_issued(c, jobs)?;
        jobs.iter()
            .map(|job| {
                let id = insert(c, offset, queue, opts, job)?;
                if job.in_workflow() {
                    super::workflows::link(c, offset, id, job)?;
                }
                Ok(id)
            })
            .collect()
    })
}

#[inline]
fn insert(conn: &Connection, offset: i64, queue: &str, opts: &QueueOpts, job: &NewJob) -> Result<i64> {
    let (at, delay) = job.ready.parts();
    let max_attempts = job.max_attempts.unwrap_or(opts.max_attempts);
    let (vt, base, keep) = (opts.visibility_timeout_s, opts.backoff_base_s, opts.dead_letter_retention_s);
    if let Some(key) = &job.unique_key {
        let mut stmt = conn.prepare_cached(ENQUEUE_UNIQUE).db()?;
        let p = params![
            queue,
            job.payload,
            job.priority,
            max_attempts,
            vt,
            base,
            keep,
            offset,
            at,
            delay,
            job.expires_s,
            job.group,
            key
        ];
        return stmt.query_row(p, |r| r.get(0)).db();
    }
    let mut stmt = conn.prepare_cached(ENQUEUE).db()?;
    stmt.execute(params![
        queue,
        job.payload,
        job.priority,
        max_attempts,
        vt,
        base,
        keep,
        offset,
        at,
        delay,
        job.expires_s,
        job.group
    ])
    .db()?;
    Ok(conn.last_insert_rowid())
}

impl EnqueueOps for SqliteEngine {
    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
        let offset = self.offset();
        self.write(tx, |c, scope| enqueue(c, scope, offset, queue, opts, jobs))
    }

    fn foreign_enqueue(&self, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<(String, Vec<SqlValue>)> {
        alkstore_core::rules::workflows::check_foreign(jobs, "SQLite")?;
        let params = foreign_params(self.store_id(), queue, opts, self.offset(), jobs);
        Ok((FOREIGN.to_owned(), params))
    }
}
