//! Vacuuming the store's own queue table when the server does not keep up
//! (ADR 0024).
//!
//! Every job leaves two dead row versions in `jobs` (the claim's UPDATE and
//! the ack's DELETE). With autovacuum off, or tuned for tables that change
//! slowly, they pile up: the table and its indexes grow without bound and
//! every claim wades through dead index entries. So a store that claims
//! starts one task on its runtime which, every [`EVERY`], reads the table's
//! dead-tuple count from `pg_stat_user_tables` and runs
//! `VACUUM (SKIP_LOCKED) jobs` once it passes [`dead_limit`]. Where
//! autovacuum keeps up the count stays below the limit and the task only
//! reads; where a vacuum of the table already runs (autovacuum's, or another
//! store handle's), SKIP_LOCKED skips rather than waits.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::watch;

use crate::ops::quote_ident;

/// How often the dead-tuple count is read.
pub(crate) const EVERY: Duration = Duration::from_secs(10);

/// The longest pause after a failed look or vacuum (doubling from [`EVERY`]).
const MAX_PAUSE: Duration = Duration::from_secs(600);

/// Dead tuples past which the task vacuums: a fixed floor, so a small table
/// is not vacuumed for a handful of rows, plus a fifth of the live rows, so
/// a large backlog is not rescanned for a small share of dead ones (the
/// shape of autovacuum's own trigger, with a higher floor).
pub(crate) fn dead_limit(live: i64) -> i64 {
    10_000 + live / 5
}

/// The statements for the `jobs` table of `schema`.
pub(crate) struct Sql {
    /// Live and dead tuple counts (NULL-free: a missing stats row reads 0).
    counts: String,
    vacuum: String,
}

impl Sql {
    pub(crate) fn new(schema: &str) -> Self {
        let table = format!("{}.jobs", quote_ident(schema));
        // The regclass from a text literal: quoting is the schema's, done once here.
        let literal = table.replace('\'', "''");
        Sql {
            counts: format!(
                "SELECT coalesce(max(n_live_tup), 0), coalesce(max(n_dead_tup), 0) \
                 FROM pg_stat_user_tables WHERE relid = '{literal}'::regclass"
            ),
            vacuum: format!("VACUUM (SKIP_LOCKED) {table}"),
        }
    }
}

/// Starts the task on `rt`'s runtime; it ends when `stop` turns true.
pub(crate) fn start(runtime: &tokio::runtime::Runtime, pool: Pool, sql: Sql, stop: watch::Receiver<bool>) {
    runtime.spawn(run(pool, sql, stop));
}

async fn run(pool: Pool, sql: Sql, mut stop: watch::Receiver<bool>) {
    let mut pause = EVERY;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
        pause = match look(&pool, &sql).await {
            Ok(()) => EVERY,
            // A lost connection, a closed pool, a role that may not vacuum:
            // look again later, less often, and never bother a caller.
            Err(()) => (pause * 2).min(MAX_PAUSE),
        };
    }
}

/// One look: reads the counts and vacuums when past the limit.
pub(crate) async fn look(pool: &Pool, sql: &Sql) -> Result<(), ()> {
    let conn = pool.get().await.map_err(|_| ())?;
    // Unnamed (no parameters to type): nothing left in the session, which
    // may be a transaction pooler's (ADR 0030).
    let row = conn.query_typed_one(&sql.counts, &[]).await.map_err(|_| ())?;
    let (live, dead): (i64, i64) = (row.get(0), row.get(1));
    if dead > dead_limit(live) {
        conn.batch_execute(&sql.vacuum).await.map_err(|_| ())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Fixture, TestResult};

    /// `(vacuum_count + autovacuum_count, n_dead_tup)` of the fixture's `jobs`.
    fn vacuums_and_dead(f: &Fixture) -> Result<(i64, i64), Box<dyn std::error::Error>> {
        let s = quote_ident(&f.schema).replace('\'', "''");
        let line = f.lines(&format!(
            "SELECT (vacuum_count + autovacuum_count) || ' ' || n_dead_tup FROM pg_stat_user_tables \
             WHERE relid = '{s}.jobs'::regclass"
        ))?;
        let mut it = line.first().ok_or("no stats row")?.split(' ').map(str::parse::<i64>);
        Ok((it.next().ok_or("no count")??, it.next().ok_or("no count")??))
    }

    /// Waits (up to 15 s) until the statistics satisfy `ok`.
    fn until(f: &Fixture, ok: impl Fn((i64, i64)) -> bool) -> Result<(i64, i64), Box<dyn std::error::Error>> {
        for _ in 0..150 {
            let got = vacuums_and_dead(f)?;
            if ok(got) {
                return Ok(got);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(format!("statistics never got there: {:?}", vacuums_and_dead(f)?).into())
    }

    #[test]
    fn a_look_vacuums_the_table_once_the_dead_pass_the_limit_and_not_before() -> TestResult {
        let Some(f) = Fixture::new()? else { return Ok(()) };
        let s = quote_ident(&f.schema);
        let churn = |n: i64| {
            f.batch(&format!(
                "INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
                   visibility_timeout_s, backoff_base_s, enqueued_at, run_at) \
                 SELECT 'q', 'pending', '{{}}', 0, 0, 3, 0, 30, 5, 0, 0 FROM generate_series(1, {n}); \
                 DELETE FROM {s}.jobs;"
            ))
        };
        churn(2_000)?;
        let (before, _) = until(&f, |(_, dead)| dead >= 2_000)?;
        assert!(f.engine.maintain_once(), "the look itself succeeds");
        assert_eq!(vacuums_and_dead(&f)?.0, before, "below the limit: no vacuum");
        churn(12_000)?;
        until(&f, |(_, dead)| dead > dead_limit(0))?;
        assert!(f.engine.maintain_once());
        let (after, dead) = until(&f, |(v, _)| v > before)?;
        assert!(after > before);
        assert!(dead < 2_000, "the vacuum removed the dead rows: {dead} left");
        Ok(())
    }

    #[test]
    fn the_first_claim_starts_the_task_and_a_closed_store_claims_nothing() -> TestResult {
        use alkstore_core::{ClaimOps, Engine};
        let Some(f) = Fixture::new()? else { return Ok(()) };
        assert!(!f.engine.maintaining.load(std::sync::atomic::Ordering::SeqCst), "a store that never claims");
        assert!(f.engine.claim("q", "w", 1)?.is_empty());
        assert!(f.engine.maintaining.load(std::sync::atomic::Ordering::SeqCst));
        f.engine.close();
        assert!(f.engine.claim("q", "w", 1).is_err(), "closed");
        Ok(())
    }

    #[test]
    fn the_limit_has_a_floor_and_grows_with_the_live_rows() {
        assert_eq!(dead_limit(0), 10_000);
        assert_eq!(dead_limit(1_000_000), 210_000);
    }

    #[test]
    fn a_quoted_schema_name_stays_one_identifier() {
        let sql = Sql::new("we'ird \"s\"");
        assert!(sql.vacuum.ends_with("\"we'ird \"\"s\"\"\".jobs"), "{}", sql.vacuum);
        assert!(sql.counts.contains("'\"we''ird \"\"s\"\"\".jobs'::regclass"), "{}", sql.counts);
    }
}
