//! `enqueue` / `enqueue_many`: stamping the queue's options onto new rows.

use alkstore_core::{foreign_params, Engine, EnqueueOps, NewJob, QueueOpts, Result, SqlValue, Tx};
use rusqlite::{params, Connection};

use crate::conn::{atomic, Scope};
use crate::engine::SqliteEngine;
use crate::error::DbResult;
use crate::hot::Conn;

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

/// The FROM and guard of the statements for a caller's own connection
/// (ADR 0015), in that connection's SQLite, which may be older than the
/// bundled one: hence `strftime('%s')` for the clock. `$1` store_id, `$2`
/// queue, `$3` visibility timeout, `$4` backoff base, `$5` retention, `$6`
/// clock offset, `$7` the jobs (the values: `alkstore_core::foreign_params`,
/// a row `[payload, priority, max_attempts, run_at, delay, expires_s,
/// unique_key, group, after, on_failure, keep_result_s]`). Ids are allocated
/// as `enqueue` does, one past the highest ever, in input order; the guard on
/// the store's identity (`store_identity!`) makes a connection to another
/// file, or to a copy of this one, insert nothing.
macro_rules! foreign_from {
    ($guard:literal) => {
        concat!(
            " FROM json_each($7) AS j, (SELECT max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), \
             (SELECT hwm FROM __alkstore_ids)) AS base, CAST(strftime('%s', 'now') AS INTEGER) + $6 AS now) AS b \
             WHERE (SELECT ",
            store_identity!(),
            " FROM __alkstore_meta WHERE key = 'store_id') = $1",
            $guard,
            " ORDER BY j.key"
        )
    };
}

/// The values every new job takes from its row, after the id and the queue.
macro_rules! foreign_values {
    () => {
        "json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'), \
         $3, $4, $5, b.now, coalesce(json_extract(j.value, '$[3]'), b.now + json_extract(j.value, '$[4]')), \
         b.now + json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'), json_extract(j.value, '$[7]'), \
         json_extract(j.value, '$[10]')"
    };
}

/// The enqueue for a caller's own connection of jobs without parents. A live
/// unique key returns the live row, as in [`ENQUEUE_UNIQUE`].
pub(crate) const FOREIGN: &str = concat!(
    "INSERT INTO __alkstore_jobs (id, queue, payload, priority, max_attempts, visibility_timeout_s, \
     backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key, keep_result_s, \
     state, attempts, claim_token) SELECT b.base + j.key + 1, $2, ",
    foreign_values!(),
    ", 'pending', 0, 0",
    foreign_from!(""),
    " ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL \
     DO UPDATE SET unique_key = excluded.unique_key RETURNING id, unique_key"
);

/// The same for a batch where some job has parents (SPEC §25): through
/// migration 0013's view, whose trigger inserts and links each row, so the
/// one statement does both even in autocommit. `$8` is the highest parent:
/// above the highest id issued, nothing is written and no row comes back
/// ([`FOREIGN_REFUSAL`] then says why). No unique keys here (core's
/// `check_foreign`): a view takes no upsert.
pub(crate) const FOREIGN_LINKED: &str = concat!(
    "INSERT INTO __alkstore_jobs_linked (id, queue, payload, priority, max_attempts, visibility_timeout_s, \
     backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, unique_key, group_key, keep_result_s, \
     on_failure, after_ids) SELECT b.base + j.key + 1, $2, ",
    foreign_values!(),
    ", json_extract(j.value, '$[9]'), json_extract(j.value, '$[8]')",
    foreign_from!(" AND $8 <= b.base"),
    " RETURNING id, unique_key"
);

/// Why [`FOREIGN_LINKED`] returned no rows: `(-issued, NULL)` when the
/// connection reaches this store and the highest parent `$8` is above the
/// highest id it has issued; nothing when it reaches another database.
pub(crate) const FOREIGN_REFUSAL: &str = concat!(
    "SELECT -b.base, NULL FROM (SELECT max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), \
     (SELECT hwm FROM __alkstore_ids)) AS base) AS b WHERE (SELECT ",
    store_identity!(),
    " FROM __alkstore_meta WHERE key = 'store_id') = $1 AND $8 > b.base"
);

/// One workflow job of the store's own enqueue, through migration 0013's
/// view (the same trigger as [`FOREIGN_LINKED`]): the parameters of
/// [`ENQUEUE`] with `?13` keep_result_s, `?14` on_failure (NULL: no
/// parents) and `?15` the parents as a JSON array.
pub(crate) const ENQUEUE_LINKED: &str = "INSERT INTO __alkstore_jobs_linked (id, queue, payload, priority, \
     max_attempts, visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at, \
     group_key, keep_result_s, on_failure, after_ids) \
     VALUES (max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), (SELECT hwm FROM __alkstore_ids)) + 1, \
     ?1, ?2, ?3, ?4, ?5, ?6, ?7, unixepoch() + ?8, coalesce(?9, unixepoch() + ?8 + ?10), unixepoch() + ?8 + ?11, \
     ?12, ?13, ?14, ?15) RETURNING id";

/// A keyed job's kept result (`?2`, seconds) on its row `?1`: a keyed job has
/// no parents, so it does not go through the view.
pub(crate) const KEEP_RESULT_S: &str = "UPDATE __alkstore_jobs SET keep_result_s = ?2 WHERE id = ?1";

/// Inserts `jobs` (non-empty) and returns their ids in order. One job outside
/// a caller transaction is a single autocommit INSERT; several are one
/// transaction (or one savepoint inside the caller's).
pub(crate) fn enqueue<C: Conn + ?Sized>(
    conn: &C,
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
    // then each job inserted and linked by migration 0013's trigger.
    atomic(conn.conn(), scope, |c| {
        super::workflows::check_issued(c, jobs)?;
        jobs.iter()
            .map(|job| match (&job.unique_key, job.keep_result_s) {
                (None, _) => insert_linked(c, offset, queue, opts, job),
                (Some(_), keep) => {
                    let id = insert(c, offset, queue, opts, job)?;
                    if keep.is_some() {
                        c.prepare_cached(KEEP_RESULT_S).and_then(|mut s| s.execute(params![id, keep])).db()?;
                    }
                    Ok(id)
                }
            })
            .collect()
    })
}

/// One job through migration 0013's view ([`ENQUEUE_LINKED`]).
fn insert_linked(conn: &Connection, offset: i64, queue: &str, opts: &QueueOpts, job: &NewJob) -> Result<i64> {
    let (at, delay) = job.ready.parts();
    let (on_failure, after) = if job.after.is_empty() {
        (None, None)
    } else {
        (Some(job.on_failure.as_str()), Some(serde_json::to_string(&job.after).unwrap_or_else(|_| "[]".into())))
    };
    let mut stmt = conn.prepare_cached(ENQUEUE_LINKED).db()?;
    stmt.query_row(
        params![
            queue,
            job.payload,
            job.priority,
            job.max_attempts.unwrap_or(opts.max_attempts),
            opts.visibility_timeout_s,
            opts.backoff_base_s,
            opts.dead_letter_retention_s,
            offset,
            at,
            delay,
            job.expires_s,
            job.group,
            job.keep_result_s,
            on_failure,
            after
        ],
        |r| r.get(0),
    )
    .db()
}

#[inline]
fn insert<C: Conn + ?Sized>(conn: &C, offset: i64, queue: &str, opts: &QueueOpts, job: &NewJob) -> Result<i64> {
    let (at, delay) = job.ready.parts();
    let max_attempts = job.max_attempts.unwrap_or(opts.max_attempts);
    let (vt, base, keep) = (opts.visibility_timeout_s, opts.backoff_base_s, opts.dead_letter_retention_s);
    if let Some(key) = &job.unique_key {
        let mut stmt = conn.conn().prepare_cached(ENQUEUE_UNIQUE).db()?;
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
    // The per-op enqueue: its statement held by the writer (ADR 0035).
    conn.with_stmt(ENQUEUE, |stmt| {
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
        .db()
    })?;
    Ok(conn.conn().last_insert_rowid())
}

impl EnqueueOps for SqliteEngine {
    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
        let offset = self.offset();
        self.write(tx, |c, scope| enqueue(c, scope, offset, queue, opts, jobs))
    }

    fn foreign_enqueue(&self, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<(String, Vec<SqlValue>)> {
        alkstore_core::rules::workflows::check_foreign(jobs, "SQLite")?;
        let mut params = foreign_params(self.store_id(), queue, opts, self.offset(), jobs);
        let Some(highest) = alkstore_core::rules::workflows::highest_parent(jobs) else {
            return Ok((FOREIGN.to_owned(), params));
        };
        params.push(SqlValue::Int(highest));
        Ok((FOREIGN_LINKED.to_owned(), params))
    }

    fn foreign_refusal(&self, jobs: &[NewJob]) -> Option<String> {
        alkstore_core::rules::workflows::highest_parent(jobs).map(|_| FOREIGN_REFUSAL.to_owned())
    }
}
