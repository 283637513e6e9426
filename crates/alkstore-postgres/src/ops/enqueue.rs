//! The producer side: putting jobs in (`enqueue`, `enqueue_many`).

use crate::prep::Arg;
use alkstore_core::rules::unique::place;
use alkstore_core::{foreign_params, Engine, EnqueueOps, Error, NewJob, QueueOpts, Result, SqlValue, Tx};
use tokio_postgres::Row;

use crate::conn::{now_cte, Ctx, NOW};
use crate::engine::PgEngine;
use crate::rows::col;

/// The enqueue statements of one store, schema-qualified.
#[derive(Debug, Clone)]
pub(crate) struct Sql {
    /// One job: `$2` queue, `$3` payload, `$4` priority, `$5` max_attempts,
    /// `$6` visibility timeout, `$7` backoff base, `$8` retention, `$9`
    /// absolute run_at or NULL, `$10` delay, `$11` expires_s or NULL.
    pub(crate) one: String,
    /// Many jobs from parallel arrays, ids returned in input order by `ord`.
    pub(crate) many: String,
    /// Jobs of which some carry a unique key (SPEC §18) or a group (§24):
    /// [`Sql::many`] plus `$12` the keys and `$13` the groups. A live key's conflict runs a no-op update, so
    /// RETURNING hands back the live row, committed or not yet (an
    /// uncommitted one is waited for, as a unique index does), in the same
    /// statement; rows come back as `(id, unique_key)`.
    pub(crate) keyed: String,
    /// For a caller's own connection (ADR 0015): `$1` store_id, `$2` queue,
    /// `$3` visibility timeout, `$4` backoff base, `$5` retention, `$6` clock
    /// offset, `$7` the jobs as JSON (`alkstore_core::foreign_params`), so any
    /// driver can pass them. Inserts only when the connection reaches this
    /// store; notifies like the others.
    pub(crate) foreign: String,
    /// [`Sql::foreign`] for jobs of which some are in a workflow (SPEC §25),
    /// plus `$8` the highest parent id (0 for none). Ids are drawn from the
    /// identity first, so each inserted row is matched to its job (by id, or
    /// by key for a live unique key: one text so the join hashes, a key
    /// prefixed so it never equals an id) and linked by 0012's `link`, in the same
    /// statement: atomic in autocommit too. A parent id above the highest
    /// issued writes nothing and returns the one row `(-issued, NULL)`, no
    /// error, so the caller's transaction stays usable.
    pub(crate) foreign_flow: String,
}

impl Sql {
    /// For the quoted schema `s`, and the store's notification `channel`.
    pub(crate) fn new(s: &str, channel: &str) -> Self {
        let notify = format!("pg_notify('{channel}', queue)");
        let cols = "queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at";
        let insert = format!("INSERT INTO {s}.jobs ({cols})");
        let insert_keyed = format!("INSERT INTO {s}.jobs ({cols}, unique_key, group_key)");
        let on_key = "ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL \
             DO UPDATE SET unique_key = excluded.unique_key";
        // Registers `$2` among the store's queues (migration 0008): once it is
        // known, an index probe that writes nothing.
        let seen = format!(
            ", seen AS (INSERT INTO {s}.queues (queue, seen_at) SELECT $2::text, t FROM n ON CONFLICT DO NOTHING)"
        );
        let identity = crate::migrate::STORE_IDENTITY;
        let guard = format!("EXISTS (SELECT 1 FROM {s}.meta WHERE key = 'store_id' AND {identity} = $1::text)");
        Sql {
            one: format!(
                "{NOW}{seen} {insert} SELECT $2::text, 'pending', $3::text, $4::int, 0, $5::bigint, 0, $6::bigint, $7::float8, $8::bigint, \
                 n.t, coalesce($9::bigint, n.t + $10::bigint), n.t + $11::bigint FROM n RETURNING id, {notify}"
            ),
            many: format!(
                "{NOW}{seen} {insert} SELECT $2::text, 'pending', u.payload, u.priority, 0, u.max_attempts, 0, $3::bigint, $4::float8, \
                 $5::bigint, n.t, coalesce(u.run_at, n.t + u.delay), n.t + u.expires_s \
                 FROM n, unnest($6::text[], $7::int[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[]) \
                 WITH ORDINALITY AS u(payload, priority, max_attempts, run_at, delay, expires_s, ord) \
                 ORDER BY u.ord RETURNING id, {notify}"
            ),
            keyed: format!(
                "{NOW}{seen} {insert_keyed} SELECT $2::text, 'pending', u.payload, u.priority, 0, u.max_attempts, 0, $3::bigint, \
                 $4::float8, $5::bigint, n.t, coalesce(u.run_at, n.t + u.delay), n.t + u.expires_s, u.unique_key, u.group_key \
                 FROM n, unnest($6::text[], $7::int[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[], \
                 $13::text[]) \
                 WITH ORDINALITY AS u(payload, priority, max_attempts, run_at, delay, expires_s, unique_key, group_key, ord) \
                 ORDER BY u.ord {on_key} RETURNING id, unique_key, {notify}"
            ),
            foreign: format!(
                "{now}, seen AS (INSERT INTO {s}.queues (queue, seen_at) SELECT $2::text, t FROM n WHERE {guard} \
                 ON CONFLICT DO NOTHING) {insert_keyed} SELECT $2::text, 'pending', u.j->>0, (u.j->>1)::int, 0, (u.j->>2)::bigint, 0, $3::bigint, \
                 $4::float8, $5::bigint, n.t, coalesce((u.j->>3)::bigint, n.t + (u.j->>4)::bigint), n.t + (u.j->>5)::bigint, \
                 u.j->>6, u.j->>7 FROM n, json_array_elements($7::json) WITH ORDINALITY AS u(j, ord) \
                 WHERE {guard} \
                 ORDER BY u.ord {on_key} RETURNING id, unique_key, {notify}::text AS notified",
                now = now_cte!("$6"),
            ),
            foreign_flow: format!(
                "{now}, ok AS (SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {s}.jobs_id_seq) \
                 AS issued WHERE {guard}), \
                 go AS (SELECT 1 FROM ok WHERE $8::bigint <= ok.issued), \
                 seen AS (INSERT INTO {s}.queues (queue, seen_at) SELECT $2::text, t FROM n \
                 WHERE EXISTS (SELECT 1 FROM go) ON CONFLICT DO NOTHING), \
                 u AS (SELECT u.j, u.ord, nextval('{s}.jobs_id_seq') AS id \
                 FROM json_array_elements($7::json) WITH ORDINALITY AS u(j, ord) \
                 WHERE EXISTS (SELECT 1 FROM go) ORDER BY u.ord), \
                 ins AS (INSERT INTO {s}.jobs (id, {cols}, unique_key, group_key) OVERRIDING SYSTEM VALUE \
                 SELECT u.id, $2::text, 'pending', u.j->>0, (u.j->>1)::int, 0, (u.j->>2)::bigint, 0, $3::bigint, \
                 $4::float8, $5::bigint, n.t, coalesce((u.j->>3)::bigint, n.t + (u.j->>4)::bigint), \
                 n.t + (u.j->>5)::bigint, u.j->>6, u.j->>7 FROM n, u ORDER BY u.ord {on_key} \
                 RETURNING id, unique_key, {notify}::text AS notified) \
                 SELECT ins.id, ins.unique_key, ins.notified, l.linked FROM n CROSS JOIN ins \
                 JOIN u ON coalesce('k' || ins.unique_key, ins.id::text) = coalesce('k' || (u.j->>6), u.id::text) \
                 LEFT JOIN LATERAL (SELECT {s}.link(ins.id, \
                 ARRAY(SELECT a::bigint FROM json_array_elements_text(u.j->8) AS a), u.j->>9, \
                 (u.j->>10)::bigint, n.t)::text AS linked WHERE json_array_length(u.j) > 8) l ON true \
                 UNION ALL SELECT -ok.issued, NULL, NULL, NULL FROM ok WHERE NOT EXISTS (SELECT 1 FROM go)",
                now = now_cte!("$6"),
            ),
        }
    }
}

/// Inserts `jobs`, returning their ids in input order. One statement either
/// way — a single INSERT, or one INSERT over arrays for many — so a batch is
/// atomic without BEGIN/COMMIT round trips and shares one `now`.
pub(crate) async fn enqueue(cx: &Ctx<'_>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
    if jobs.iter().any(|j| j.unique_key.is_some() || j.group.is_some()) {
        return keyed(cx, queue, opts, jobs).await;
    }
    if let [job] = jobs {
        let (run_at, delay) = job.ready.parts();
        let max_attempts = job.max_attempts.unwrap_or(opts.max_attempts);
        let expires = job.expires_s;
        let row = cx
            .query_one(
                &cx.sql.enqueue.one,
                &[
                    &cx.offset,
                    &queue,
                    &job.payload,
                    &job.priority,
                    &max_attempts,
                    &opts.visibility_timeout_s,
                    &opts.backoff_base_s,
                    &opts.dead_letter_retention_s,
                    &run_at,
                    &delay,
                    &expires,
                ],
            )
            .await?;
        return Ok(vec![col(&row, 0)?]);
    }
    let rows = batch(cx, queue, opts, jobs, false).await?;
    let mut ids = rows.iter().map(|r| col::<i64>(r, 0)).collect::<Result<Vec<_>>>()?;
    // RETURNING order is not promised. The identity sequence hands this
    // statement increasing values in insertion order (ORDER BY ord), so
    // ascending ids are the input order.
    ids.sort_unstable();
    Ok(ids)
}

/// Jobs of which some have a unique key or a group, in one statement ([`Sql::keyed`]);
/// the rows are matched back to the jobs by key.
async fn keyed(cx: &Ctx<'_>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
    let rows = batch(cx, queue, opts, jobs, true).await?;
    let rows =
        rows.iter().map(|r| Ok((col::<i64>(r, 0)?, col::<Option<String>>(r, 1)?))).collect::<Result<Vec<_>>>()?;
    place(jobs, rows).ok_or_else(|| Error::database(None, "an enqueue returned fewer rows than jobs".to_string()))
}

/// Runs [`Sql::many`], or with `keyed` [`Sql::keyed`] (the same values plus the keys).
async fn batch(cx: &Ctx<'_>, queue: &str, opts: &QueueOpts, jobs: &[NewJob], keyed: bool) -> Result<Vec<Row>> {
    let a = Arrays::of(opts, jobs);
    let mut params: Vec<&dyn Arg> = vec![
        &cx.offset,
        &queue,
        &opts.visibility_timeout_s,
        &opts.backoff_base_s,
        &opts.dead_letter_retention_s,
        &a.payloads,
        &a.priorities,
        &a.budgets,
        &a.run_ats,
        &a.delays,
        &a.expires,
    ];
    let (keys, groups): (Vec<Option<&str>>, Vec<Option<&str>>);
    let sql = if keyed {
        keys = jobs.iter().map(|j| j.unique_key.as_deref()).collect();
        groups = jobs.iter().map(|j| j.group.as_deref()).collect();
        params.push(&keys);
        params.push(&groups);
        &cx.sql.enqueue.keyed
    } else {
        &cx.sql.enqueue.many
    };
    cx.query(sql, &params).await
}

/// The per-job columns of a batch as the parallel arrays `unnest` takes.
struct Arrays<'a> {
    payloads: Vec<&'a str>,
    priorities: Vec<i32>,
    budgets: Vec<i64>,
    run_ats: Vec<Option<i64>>,
    delays: Vec<i64>,
    expires: Vec<Option<i64>>,
}

impl<'a> Arrays<'a> {
    fn of(opts: &QueueOpts, jobs: &'a [NewJob]) -> Self {
        let (run_ats, delays) = jobs.iter().map(|j| j.ready.parts()).unzip();
        Arrays {
            payloads: jobs.iter().map(|j| j.payload.as_str()).collect(),
            priorities: jobs.iter().map(|j| j.priority).collect(),
            budgets: jobs.iter().map(|j| j.max_attempts.unwrap_or(opts.max_attempts)).collect(),
            run_ats,
            delays,
            expires: jobs.iter().map(|j| j.expires_s).collect(),
        }
    }
}

/// Workflow jobs (SPEC §25): every parent id checked before any write, the
/// jobs inserted as any others, then each linked to its parents (0012's
/// `link`), in the caller's transaction or one of its own.
async fn enqueue_flow(cx: &Ctx<'_>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
    super::workflows::check_issued(cx, jobs).await?;
    let ids = enqueue(cx, queue, opts, jobs).await?;
    let now = crate::conn::now(cx).await?;
    super::workflows::link(cx, &ids, jobs, now).await?;
    Ok(ids)
}

impl EnqueueOps for PgEngine {
    fn enqueue(&self, tx: Option<&mut dyn Tx>, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<Vec<i64>> {
        if jobs.iter().any(NewJob::in_workflow) {
            return self.run_atomic(tx, async |cx| enqueue_flow(cx, queue, opts, jobs).await);
        }
        self.run(tx, async |cx| enqueue(cx, queue, opts, jobs).await)
    }

    fn foreign_enqueue(&self, queue: &str, opts: &QueueOpts, jobs: &[NewJob]) -> Result<(String, Vec<SqlValue>)> {
        let mut params =
            foreign_params(self.store_id(), queue, opts, self.offset.load(std::sync::atomic::Ordering::SeqCst), jobs);
        if !jobs.iter().any(NewJob::in_workflow) {
            return Ok((self.sql.enqueue.foreign.clone(), params));
        }
        let highest = alkstore_core::rules::workflows::highest_parent(jobs).unwrap_or(0);
        params.push(SqlValue::Int(highest));
        Ok((self.sql.enqueue.foreign_flow.clone(), params))
    }
}
