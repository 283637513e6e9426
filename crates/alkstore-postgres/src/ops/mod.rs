//! The queue operations, one file per concept; the SQLite engine has the
//! same files under the same names: `enqueue`, `claim`, `handle` (ack,
//! retry, fail, heartbeat, release), `cancel`, `reads` (get_job, dead_jobs,
//! live_jobs, queue_names, stats, next_wake), `sweep`, `locks`, `schedules`,
//! `streams`, `pause`, `redrive` (requeue_dead, purge_dead), `forget`
//! (forget_queue), `completions` (the chart's per-minute ack counts). Each file
//! implements the core trait of its concept (`EnqueueOps`, `ClaimOps`,
//! `HandleOps`, `CancelOps`, `ReadOps`, `SweepOps`, `LockOps`, `ScheduleOps`,
//! `StreamOps`, `PauseOps`, `RedriveOps`, `ForgetOps`, `CompletionOps`) for the engine, right below its
//! statements; `engine.rs` keeps only the handle (connections, clock, close).
//!
//! The statement convention, shared by both engines: every ops file opens
//! with the SQL it runs, one named statement per step, then the functions
//! that bind and run them. A statement that does the same job carries the
//! same name in both engines (`retry` here, `RETRY` in SQLite's file). The
//! text names the store's schema, so here each file opens with a `Sql`
//! struct, one `String` per statement, and its `Sql::new` renders them for
//! the quoted schema (and the store's notification channel) once, at open;
//! [`Statements`] holds one `Sql` per file and every call reads its text
//! from the context (`cx.sql.handle.retry`), so a missing statement is a
//! compile error. The pool's `prepare_cached` parses each text once per
//! connection: each hot operation is one Bind/Execute round trip. (SQLite's
//! text is final at compile time: a `const` per statement.)
//!
//! Every statement that needs the clock reads it once, in the
//! `MATERIALIZED` CTE [`crate::conn::NOW`], because `clock_timestamp()` is
//! volatile and would otherwise be re-read per row. Parameter `$1` is always
//! the handle's clock offset when the statement has a clock.
//!
//! Adding an operation: its statement (a field of the file's `Sql`), function
//! and trait method in the file of its concept, and the same in the SQLite
//! engine (docs/architecture.md).

pub(crate) mod cancel;
pub(crate) mod claim;
pub(crate) mod completions;
pub(crate) mod enqueue;
pub(crate) mod forget;
pub(crate) mod handle;
pub(crate) mod limits;
pub(crate) mod locks;
pub(crate) mod pause;
pub(crate) mod reads;
pub(crate) mod redrive;
pub(crate) mod schedules;
pub(crate) mod slots;
pub(crate) mod streams;
pub(crate) mod sweep;
pub(crate) mod workflows;

// The move to dead, shared by the claim (exhaustion), `fail` (and a retry at
// budget) and the sweep.

/// Columns a dead row copies from the live row, in table order.
pub(crate) const LIVE_COLS: &str = "id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
                         visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
                         claimed_at, deadline, worker_id, expires_at, unique_key, group_key, \
                         parents_left, on_failure, keep_result_s, has_children";

/// [`LIVE_COLS`] as the SELECT side of a move to dead: the stored state
/// becomes 'dead' (as on SQLite); every other field is kept as it was.
pub(crate) const DEAD_SELECT: &str = "id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token, \
                           visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
                           claimed_at, deadline, worker_id, expires_at, unique_key, group_key, \
                         parents_left, on_failure, keep_result_s, has_children";

/// The `last_error` a claim that may reclaim sets on its row `j` (SPEC §30,
/// migration 0021): a lapsed lease it takes back records that it lapsed and
/// which worker held it (SET reads the row as it was); a pending row keeps
/// its last retry's error. The fast claim of one job never reclaims and
/// does not carry it.
pub(crate) const RECLAIM_ERROR: &str =
    "last_error = CASE WHEN j.state = 'processing' THEN 'lease lapsed (worker ' || j.worker_id || ')' \
     ELSE j.last_error END";

/// `died_at` and `purge_at` of a row moving to dead.
pub(crate) const DEAD_VALUES: &str = "(SELECT t FROM n), (SELECT t FROM n) + dead_retention_s";

/// The head of a move to dead into `s`'s dead table ([`LIVE_COLS`] plus the
/// three columns only a dead row has).
pub(crate) fn into_dead(s: &str) -> String {
    format!("INSERT INTO {s}.dead ({LIVE_COLS}, last_error, died_at, purge_at)")
}

/// The claims' exhaustion step (`$2` the queue, `n` the clock CTE), as a
/// CTE named `bury`: the function `bury_exhausted` (migration 0020) moves the
/// queue's lapsed leases with no attempt left to dead in a subtransaction of
/// its own, so a burial that fails leaves them processing and the claim
/// goes on (issue 43). Gated by an uncorrelated `EXISTS` of the same
/// condition over a range of `jobs_leased`, so nearly every claim, which
/// finds nothing exhausted, never calls it. A statement that has this CTE
/// must reference it through [`BURIED`] in a data-modifying step, which
/// Postgres runs whatever its result: a plain CTE runs only when read.
pub(crate) fn bury_step(s: &str) -> String {
    let cond =
        "queue = $2::text AND state = 'processing' AND deadline < (SELECT t FROM n) AND attempts >= max_attempts";
    format!(
        "bury AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT 1 FROM {s}.jobs WHERE {cond}) \
           THEN {s}.bury_exhausted($2::text, (SELECT t FROM n)) ELSE 0 END AS n)"
    )
}

/// The condition that runs [`bury_step`]: always true, and uncorrelated, so
/// Postgres evaluates it once, as a one-time filter, before the step's scan
/// (whether or not that scan finds a row).
pub(crate) const BURIED: &str = "(SELECT n FROM bury) IS NOT NULL";

/// A notification on the store's `channel` when `queue_expr`'s queue has
/// limits (SPEC §24): a statement that moves a row out of `processing` frees
/// a slot, and claimers held back by a limit must wake for it, as they wake
/// for an enqueue. A primary-key probe of `limits`; nothing for other queues.
/// `queue_expr` is read in a FROM-less subquery first, where a bare `queue`
/// can only mean the outer row's column (inside `FROM limits` it would mean
/// the limits row's own, and match every limited queue).
///
/// Inside a slot claim's transaction (`slots::QUIET` on) it notifies no one
/// and notes the freed slot and queue instead (`slots::FREED`): the claim
/// that follows in the transaction hands the slot to the next job.
pub(crate) fn slot_freed(s: &str, channel: &str, queue_expr: &str) -> String {
    format!(
        "(SELECT CASE WHEN current_setting('{quiet}', true) = 'on' \
           THEN set_config('{freed}', coalesce(x.k::text, '') || ':' || x.q, true) \
           ELSE pg_notify('{channel}', x.q)::text END \
         FROM (SELECT {queue_expr} AS q, slot AS k) x \
         WHERE EXISTS (SELECT 1 FROM {s}.limits l WHERE l.queue = x.q))",
        quiet = slots::QUIET,
        freed = slots::FREED,
    )
}

/// `schema` quoted as an identifier. The name is validated at open (ASCII
/// letters, digits, `_`), so this only guards against a future relaxation.
pub(crate) fn quote_ident(schema: &str) -> String {
    format!("\"{}\"", schema.replace('"', "\"\""))
}

/// Every statement of one store, schema-qualified: one `Sql` per ops file.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    /// `enqueue` / `enqueue_many`.
    pub(crate) enqueue: enqueue::Sql,
    /// The claim.
    pub(crate) claim: claim::Sql,
    /// ack, retry, fail, heartbeat, release.
    pub(crate) handle: handle::Sql,
    /// `cancel`.
    pub(crate) cancel: cancel::Sql,
    /// get_job, job_by_id, dead_jobs, live_jobs, queue_names, stats, next_wake.
    pub(crate) reads: reads::Sql,
    /// `sweep_expired`.
    pub(crate) sweep: sweep::Sql,
    /// pause, resume, is_paused (SPEC §18).
    pub(crate) pause: pause::Sql,
    /// requeue_dead, purge_dead (SPEC §18).
    pub(crate) redrive: redrive::Sql,
    /// forget_queue (SPEC §18).
    pub(crate) forget: forget::Sql,
    /// TTL locks (SPEC §10).
    pub(crate) locks: locks::Sql,
    /// Schedules (SPEC §8).
    pub(crate) schedules: schedules::Sql,
    /// Streams (SPEC §9).
    pub(crate) streams: streams::Sql,
    /// Per-minute ack counts (SPEC §19).
    pub(crate) completions: completions::Sql,
    /// Limits and the limited claim (SPEC §24).
    pub(crate) limits: limits::Sql,
    /// The claim of a queue limited by concurrency alone (SPEC §24).
    pub(crate) slots: slots::Sql,
    /// Workflows: links, the workflow ack, results and edges (SPEC §25).
    pub(crate) workflows: workflows::Sql,
}

impl Statements {
    /// The statements for the engine-owned `schema` (unquoted).
    pub(crate) fn new(schema: &str) -> Self {
        let s = quote_ident(schema);
        // The channel is ASCII letters, digits and `_` (from the validated
        // schema name), so it is safe inside a string literal.
        let channel = crate::wake::channel(schema);
        Statements {
            enqueue: enqueue::Sql::new(&s, &channel),
            claim: claim::Sql::new(&s),
            handle: handle::Sql::new(&s, &channel),
            cancel: cancel::Sql::new(&s, &channel),
            reads: reads::Sql::new(&s),
            sweep: sweep::Sql::new(&s, &channel),
            limits: limits::Sql::new(&s, schema, &channel),
            slots: {
                let (queue_key, slot_key) = limits::lock_keys(schema);
                slots::Sql::new(&s, &channel, &queue_key, &slot_key)
            },
            pause: pause::Sql::new(&s, &channel),
            redrive: redrive::Sql::new(&s, &channel),
            forget: forget::Sql::new(&s),
            locks: locks::Sql::new(&s, &channel),
            schedules: schedules::Sql::new(&s, &channel),
            streams: streams::Sql::new(&s, &channel),
            completions: completions::Sql::new(&s),
            workflows: workflows::Sql::new(&s),
        }
    }
}
