//! Every SQL statement of the engine, one named constant per operation
//! (ADR 0001). Keeping the text here, away from the Rust that binds it, lets a
//! reviewer hold it side by side with the Postgres engine's statements.
//!
//! Parameter conventions: `now` is either computed in the statement as
//! `unixepoch() + ?offset` (single-statement ops, so no extra round trip) or
//! bound as a value read once with [`NOW`] (multi-statement ops, so every
//! statement of one transaction judges against the same instant — a
//! move-to-dead must never insert one set of rows and delete another).

/// The database clock plus this handle's test offset.
pub const NOW: &str = "SELECT unixepoch() + ?1";

/// Starts an own write transaction: takes the file's write lock up front so
/// two processes never interleave, and waits `busy_timeout` for it.
pub const BEGIN_IMMEDIATE: &str = "BEGIN IMMEDIATE";
/// Ends an own write transaction.
pub const COMMIT: &str = "COMMIT";
/// Abandons an own write transaction.
pub const ROLLBACK: &str = "ROLLBACK";
/// Makes a multi-statement op atomic inside the caller's transaction.
pub const SAVEPOINT: &str = "SAVEPOINT __alkstore_op";
/// Keeps a savepoint's work (it still lands only if the caller commits).
pub const RELEASE: &str = "RELEASE __alkstore_op";
/// Undoes a savepoint's work; must be followed by [`RELEASE`].
pub const ROLLBACK_TO: &str = "ROLLBACK TO __alkstore_op";

/// One new job. `?8` offset, `?9` absolute run_at or NULL, `?10` delay,
/// `?11` expires_s or NULL (NULL + x is NULL: no expiry).
pub const ENQUEUE: &str = "\
INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, expires_at) \
VALUES (max(coalesce((SELECT max(id) FROM __alkstore_jobs), 0), (SELECT hwm FROM __alkstore_ids)) + 1, \
?1, 'pending', ?2, ?3, 0, ?4, 0, ?5, ?6, ?7, unixepoch() + ?8, \
coalesce(?9, unixepoch() + ?8 + ?10), unixepoch() + ?8 + ?11)";

/// The columns a move to dead copies; the SELECT side is `live_to_dead!`.
macro_rules! insert_dead {
    () => {
        "INSERT INTO __alkstore_dead (id, queue, state, payload, priority, attempts, max_attempts, \
         claim_token, visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, \
         claimed_at, deadline, worker_id, expires_at, last_error, died_at, purge_at) "
    };
}

/// `INSERT … SELECT` of live rows matching `$pred` into dead storage, every
/// field kept as it was, with `$err` as last_error and `$now` as died_at.
macro_rules! live_to_dead {
    ($err:literal, $now:literal, $pred:expr) => {
        concat!(
            insert_dead!(),
            "SELECT id, queue, 'dead', payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, dead_retention_s, enqueued_at, run_at, claimed_at, \
             deadline, worker_id, expires_at, ",
            $err,
            ", ",
            $now,
            ", ",
            $now,
            " + dead_retention_s FROM __alkstore_jobs WHERE ",
            $pred
        )
    };
}

/// Lapsed leases whose budget is spent: the exhaustion-by-reclaim predicate
/// (a seek on `__alkstore_jobs_leased`). `?1` queue, `?2` now.
macro_rules! exhausted {
    () => {
        "queue = ?1 AND state = 'processing' AND deadline < ?2 AND attempts >= max_attempts"
    };
}

/// Claim step 1: exhausted lapsed rows to dead, as 'attempts exhausted' —
/// or as 'expired' when the row is also past its expiry, the reason a sweep
/// at the same instant would give it ([`SWEEP_MOVE`]).
pub const EXHAUST_MOVE: &str = live_to_dead!(
    "CASE WHEN expires_at IS NOT NULL AND expires_at <= ?2 THEN 'expired' ELSE 'attempts exhausted' END",
    "?2",
    exhausted!()
);
/// Claim step 1, second half: the same rows leave the live table.
pub const EXHAUST_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", exhausted!());

/// The columns a claim hands back, in [`crate::rows::claimed`]'s order.
macro_rules! claim_returning {
    () => {
        " RETURNING id, queue, payload, attempts, max_attempts, priority, worker_id, claim_token, \
         enqueued_at, run_at, claimed_at, deadline, expires_at, visibility_timeout_s, backoff_base_s"
    };
}

/// Claim step 2: the best `?4` of (first `?4` ready rows by claim order) ∪
/// (every lapsed lease), both unexpired, updated in one statement. Each
/// candidate scan walks its partial index. Lapsed leases are not limited by
/// deadline: the claim order is priority first, so any of them may be the
/// best. This path only runs while some lease has lapsed (the fast path
/// below handles the rest), and its cost grows with the number of lapsed
/// leases, never with the backlog. `?1` queue, `?2` worker, `?3` now, `?4` n.
/// `INDEXED BY` pins the ready scan so no statistics can ever turn it into
/// a scan-and-sort of every ready row.
/// RETURNING order is unspecified: the caller sorts.
pub const CLAIM: &str = concat!(
    "\
UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, \
claim_token = claim_token + 1, worker_id = ?2, claimed_at = ?3, deadline = ?3 + visibility_timeout_s \
WHERE id IN (\
SELECT id FROM (\
SELECT id, priority, run_at FROM (\
SELECT id, priority, run_at FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready \
WHERE queue = ?1 AND state = 'pending' AND run_at <= ?3 \
AND (expires_at IS NULL OR expires_at > ?3) \
ORDER BY priority DESC, run_at, id LIMIT ?4) \
UNION ALL \
SELECT id, priority, run_at FROM (\
SELECT id, priority, run_at FROM __alkstore_jobs \
WHERE queue = ?1 AND state = 'processing' AND deadline < ?3 \
AND (expires_at IS NULL OR expires_at > ?3))) \
ORDER BY priority DESC, run_at, id LIMIT ?4)",
    claim_returning!()
);

/// The claim's SET clause with `now` computed in-statement (`?3` offset).
macro_rules! claim_set_sql_now {
    () => {
        "UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, \
         claim_token = claim_token + 1, worker_id = ?2, claimed_at = unixepoch() + ?3, \
         deadline = unixepoch() + ?3 + visibility_timeout_s WHERE "
    };
}

/// The ready-row candidate scan of [`CLAIM`], `now` computed in-statement.
/// `CAST(?1 AS TEXT)`: with an ORDER BY, SQLite's planner reads the value
/// bound to a bare `queue = ?1` and expires the statement whenever it is
/// rebound, so every claim was parsed again; the cast seeks the same index
/// without that (`hot_statements_are_never_reprepared`). [`CLAIM`] keeps the
/// bare parameter: it runs only while a lease has lapsed, and there the
/// re-plan lets ANALYZE statistics never mislead it.
macro_rules! ready_ids_sql_now {
    () => {
        "SELECT id FROM __alkstore_jobs INDEXED BY __alkstore_jobs_ready \
         WHERE queue = CAST(?1 AS TEXT) AND state = 'pending' AND run_at <= unixepoch() + ?3 AND (expires_at IS NULL OR expires_at > unixepoch() + ?3) \
         ORDER BY priority DESC, run_at, id LIMIT "
    };
}

/// The guard of the fast path: the queue has no lapsed lease right now.
macro_rules! no_lapsed_lease {
    () => {
        " AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing' \
         AND deadline < unixepoch() + ?3)"
    };
}

/// The claim's fast path, one autocommit statement: when the queue has no
/// lapsed lease at this instant, step 1 has nothing to move and the leased
/// candidate scan of [`CLAIM`] is empty, so the claim *is* the ready scan.
/// Same rows, same order, same stamps as [`CLAIM`]; a lapsed lease makes
/// it match nothing and the caller takes the full path. `?1` queue,
/// `?2` worker, `?3` offset, `?4` n (run through [`claim_ready_n`]).
pub const CLAIM_READY: &str =
    concat!(claim_set_sql_now!(), "id IN (", ready_ids_sql_now!(), "?4)", no_lapsed_lease!(), claim_returning!());

/// [`CLAIM_READY`] with the batch size written into the text instead of
/// bound: a bound LIMIT is read by the planner, so rebinding it expires the
/// statement and re-parses it on every call. One cached statement per batch
/// size in use (callers use one or two).
pub fn claim_ready_n(n: usize) -> String {
    CLAIM_READY.replacen("?4", &n.to_string(), 1)
}

/// [`CLAIM_READY`] for one job: `id = (…)` spares SQLite the temporary
/// table an `IN (…)` list needs, and the literal `LIMIT 1` keeps the
/// statement compiled: SQLite's planner reads a bound LIMIT, so rebinding it
/// expires the statement and every call would be parsed again (measured:
/// about a third of the per-op claim). It takes no `?4`.
pub const CLAIM_READY_ONE: &str =
    concat!(claim_set_sql_now!(), "id = (", ready_ids_sql_now!(), "1)", no_lapsed_lease!(), claim_returning!());

/// Whether the queue has a lapsed lease now (`?1` queue, `?2` offset): an
/// empty fast-path claim takes the full path only then, so an idle poll
/// stays two cheap statements.
pub const HAS_LAPSED: &str = "SELECT EXISTS (SELECT 1 FROM __alkstore_jobs WHERE queue = ?1 \
AND state = 'processing' AND deadline < unixepoch() + ?2)";

/// The validity predicate of every handle op, `now` computed in-statement.
/// `?1` id, `?2` worker, `?3` claim token, `?4` offset.
macro_rules! valid_sql_now {
    () => {
        "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_token = ?3 \
         AND deadline >= unixepoch() + ?4"
    };
}

/// The validity predicate with `now` bound as `?4` (multi-statement moves).
macro_rules! valid_bound_now {
    () => {
        "id = ?1 AND state = 'processing' AND worker_id = ?2 AND claim_token = ?3 AND deadline >= ?4"
    };
}

/// `ack`: a valid handle's row is deleted.
pub const ACK: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", valid_sql_now!());

/// `retry` under budget: back to pending after `?5` seconds. A pending job
/// holds no lease (SPEC §4.4): worker_id and deadline are cleared, while
/// claimed_at stays as the last claim's time. The claim token stays too, and
/// it alone fences off the old handle.
pub const RETRY: &str = concat!(
    "UPDATE __alkstore_jobs SET state = 'pending', run_at = unixepoch() + ?4 + ?5, worker_id = NULL, \
     deadline = NULL WHERE ",
    valid_sql_now!()
);

/// `heartbeat`: an absolute reset, `deadline = now + ?5`; a lapsed lease fails
/// the predicate, so a late heartbeat never steals the job back.
pub const HEARTBEAT: &str = concat!(
    "UPDATE __alkstore_jobs SET deadline = unixepoch() + ?4 + ?5 WHERE ",
    valid_sql_now!(),
    " RETURNING deadline"
);

/// `release`: pending now with the attempt refunded and the lease cleared
/// as by [`RETRY`]; the claim token is not refunded, so this handle stays
/// fenced off.
pub const RELEASE_JOB: &str = concat!(
    "UPDATE __alkstore_jobs SET state = 'pending', run_at = unixepoch() + ?4, attempts = attempts - 1, \
     worker_id = NULL, deadline = NULL WHERE ",
    valid_sql_now!()
);

/// `fail` / `retry` at budget: a valid handle's row to dead with `?5` as
/// last_error, `?4` now.
pub const HANDLE_MOVE: &str = live_to_dead!("?5", "?4", valid_bound_now!());
/// The second half of [`HANDLE_MOVE`], same predicate, same `now`.
pub const HANDLE_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", valid_bound_now!());

/// `cancel`: a live (pending or processing) row of this queue goes away.
pub const CANCEL: &str = "DELETE FROM __alkstore_jobs WHERE id = ?1 AND queue = ?2";

/// The columns of a [`alkstore_core::Job`], in [`crate::rows::job`]'s order.
macro_rules! job_cols {
    () => {
        "id, queue, state, payload, priority, attempts, max_attempts, enqueued_at, run_at, \
         claimed_at, deadline, worker_id, expires_at"
    };
}

/// `get_job`: the live row or else the dead one, this queue only (an id lives
/// in exactly one of the two tables).
pub const GET_JOB: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", NULL, NULL FROM __alkstore_jobs WHERE id = ?1 AND queue = ?2 UNION ALL SELECT ",
    job_cols!(),
    ", last_error, died_at FROM __alkstore_dead WHERE id = ?1 AND queue = ?2"
);

/// `dead_jobs`: newest first, ids below `?2`, at most `?3` (walks `__alkstore_dead_queue` backwards).
pub const DEAD_JOBS: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", last_error, died_at FROM __alkstore_dead WHERE queue = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
);

/// `live_jobs` (ADR 0007): pending and processing rows newest first, ids
/// below `?2`, at most `?3`. For operators: it walks the primary key
/// backwards and skips other queues' rows, so its cost grows with them.
pub const LIVE_JOBS: &str = concat!(
    "SELECT ",
    job_cols!(),
    ", NULL, NULL FROM __alkstore_jobs WHERE queue = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
);

/// `queue_names` (ADR 0007): every queue with a live or a dead row, sorted
/// by bytes (`BINARY`, as Postgres sorts with `COLLATE "C"`). `UNION`, not
/// `UNION ALL`, removes duplicates. It scans the job table: for operators.
pub const QUEUE_NAMES: &str =
    "SELECT queue FROM __alkstore_jobs UNION SELECT queue FROM __alkstore_dead ORDER BY queue";

/// `stats` (SPEC §4.4): ready pending (unswept expired included), scheduled,
/// processing (lapsed included), dead, age of the oldest ready row. One
/// statement, so `unixepoch()` is one instant for every count.
pub const STATS: &str = "\
SELECT r.ready, \
(SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'pending' AND run_at > unixepoch() + ?2), \
(SELECT count(*) FROM __alkstore_jobs WHERE queue = ?1 AND state = 'processing'), \
(SELECT count(*) FROM __alkstore_dead WHERE queue = ?1), \
unixepoch() + ?2 - r.oldest \
FROM (SELECT count(*) AS ready, min(run_at) AS oldest FROM __alkstore_jobs \
WHERE queue = ?1 AND state = 'pending' AND run_at <= unixepoch() + ?2) AS r";

/// The sweep predicate: every live row of `?1` at or past its expiry `?2`
/// (pending and processing alike; a seek on `__alkstore_jobs_expiring`).
macro_rules! expired {
    () => {
        "queue = ?1 AND expires_at IS NOT NULL AND expires_at <= ?2"
    };
}

/// Sweep step 1: expired rows to dead as 'expired'.
pub const SWEEP_MOVE: &str = live_to_dead!("'expired'", "?2", expired!());
/// Sweep step 2: the same rows leave the live table.
pub const SWEEP_DELETE: &str = concat!("DELETE FROM __alkstore_jobs WHERE ", expired!());
/// Sweep step 3: dead rows of `?1` past their retention at `?2`.
pub const PURGE: &str = "DELETE FROM __alkstore_dead WHERE queue = ?1 AND purge_at IS NOT NULL AND purge_at <= ?2";

#[cfg(test)]
mod tests {
    use alkstore_core::Result;
    use rusqlite::{params, Connection};

    use super::*;
    use crate::error::DbResult;
    use crate::migrate::migrate;

    /// The plan lines of `sql` (parameters bound to NULL: plans do not depend on them).
    fn plan(conn: &Connection, sql: &str) -> Result<Vec<String>> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).db()?;
        let nulls = std::iter::repeat_n(rusqlite::types::Null, stmt.parameter_count());
        let mut rows = stmt.query(rusqlite::params_from_iter(nulls)).db()?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().db()? {
            out.push(r.get::<_, String>(3).db()?);
        }
        Ok(out)
    }

    /// A file-backed-like table: rows in several queues and states.
    fn populated(analyze: bool) -> Result<Connection> {
        let conn = Connection::open_in_memory().db()?;
        migrate(&conn)?;
        for i in 0..2000 {
            let state = if i % 10 == 0 { "processing" } else { "pending" };
            conn.execute(
                "INSERT INTO __alkstore_jobs (queue, state, payload, priority, attempts, max_attempts, \
                 claim_token, visibility_timeout_s, backoff_base_s, enqueued_at, run_at, deadline, expires_at) \
                 VALUES (?1, ?2, '{}', 0, 0, 3, 0, 30, 5, 0, ?3, ?3, CASE WHEN ?3 % 7 = 0 THEN ?3 END)",
                params![format!("q{}", i % 4), state, i],
            )
            .db()?;
        }
        if analyze {
            conn.execute_batch("ANALYZE").db()?;
        }
        Ok(conn)
    }

    fn assert_no_table_scan(what: &str, lines: &[String]) {
        for line in lines {
            assert!(
                !line.starts_with("SCAN __alkstore_") || line.contains("INDEX"),
                "{what}: full scan in plan:\n{}",
                lines.join("\n")
            );
        }
    }

    /// Both claim candidate scans seek their partial index in its own order:
    /// no full scan and no sort of the jobs table; the one sort is the final
    /// merge of the ready candidates and the lapsed leases. Checked with and without ANALYZE
    /// statistics (a real store never runs ANALYZE).
    #[test]
    fn claim_plan_uses_the_partial_indexes() -> Result<()> {
        for analyze in [false, true] {
            let conn = populated(analyze)?;
            let lines = plan(&conn, CLAIM)?;
            let text = lines.join("\n");
            assert!(text.contains("SEARCH __alkstore_jobs USING INDEX __alkstore_jobs_ready (queue=?)"), "{text}");
            assert!(
                text.contains("SEARCH __alkstore_jobs USING INDEX __alkstore_jobs_leased (queue=? AND deadline<?)"),
                "{text}"
            );
            assert_no_table_scan("claim", &lines);
            let sorts: Vec<usize> =
                lines.iter().enumerate().filter(|(_, l)| l.contains("TEMP B-TREE")).map(|(i, _)| i).collect();
            assert_eq!(sorts, vec![lines.len() - 1], "the only sort must be the final candidate merge:\n{text}");
        }
        Ok(())
    }

    /// The fast-path claim statements seek the ready index in order and
    /// guard on a seek of the leased index: no scan, no sort.
    #[test]
    fn fast_claim_plans_use_the_partial_indexes() -> Result<()> {
        for analyze in [false, true] {
            let conn = populated(analyze)?;
            for sql in [CLAIM_READY, CLAIM_READY_ONE, &claim_ready_n(128)] {
                let lines = plan(&conn, sql)?;
                let text = lines.join("\n");
                assert!(
                    text.contains("USING COVERING INDEX __alkstore_jobs_leased (queue=? AND deadline<?)"),
                    "{text}"
                );
                assert!(text.contains("USING INDEX __alkstore_jobs_ready (queue=?)"), "{text}");
                assert_no_table_scan("fast claim", &lines);
                assert!(!text.contains("TEMP B-TREE"), "{text}");
            }
        }
        let lines = plan(&populated(false)?, HAS_LAPSED)?;
        assert!(lines.iter().any(|l| l.contains("COVERING INDEX __alkstore_jobs_leased")), "{}", lines.join("\n"));
        Ok(())
    }

    /// The other statements that run per claim or per sweep seek their indexes too.
    #[test]
    fn maintenance_plans_use_their_indexes() -> Result<()> {
        let conn = populated(false)?;
        let cases = [
            (EXHAUST_MOVE, "__alkstore_jobs_leased"),
            (EXHAUST_DELETE, "__alkstore_jobs_leased"),
            (SWEEP_MOVE, "__alkstore_jobs_expiring"),
            (SWEEP_DELETE, "__alkstore_jobs_expiring"),
            (PURGE, "__alkstore_dead_purge"),
            (DEAD_JOBS, "__alkstore_dead_queue"),
            (STATS, "COVERING INDEX __alkstore_jobs_ready"),
            (STATS, "COVERING INDEX __alkstore_jobs_leased"),
            (STATS, "COVERING INDEX __alkstore_dead_queue"),
        ];
        for (sql, index) in cases {
            let lines = plan(&conn, sql)?;
            assert!(lines.iter().any(|l| l.contains(index)), "{sql}\n{}", lines.join("\n"));
            assert_no_table_scan(sql, &lines);
            assert!(!lines.iter().any(|l| l.contains("TEMP B-TREE")), "{sql}\n{}", lines.join("\n"));
        }
        for sql in [ACK, RETRY, HEARTBEAT, RELEASE_JOB, HANDLE_MOVE, HANDLE_DELETE, CANCEL, GET_JOB] {
            let lines = plan(&conn, sql)?;
            assert!(lines.iter().all(|l| !l.starts_with("SCAN")), "{sql}\n{}", lines.join("\n"));
        }
        Ok(())
    }

    /// The per-op hot statements stay compiled across calls with new
    /// bindings: a bound value the planner reads (a LIMIT, say) would expire
    /// the statement and make SQLite parse it again on every call.
    #[test]
    fn hot_statements_are_never_reprepared() -> Result<()> {
        use rusqlite::StatementStatus;
        let conn = populated(false)?;
        for round in 0..3_i64 {
            let mut claim = conn.prepare_cached(CLAIM_READY_ONE).db()?;
            let mut rows = claim.query(params![format!("q{round}"), format!("w{round}"), round]).db()?;
            while rows.next().db()?.is_some() {}
            drop(rows);
            assert_eq!(claim.get_status(StatementStatus::RePrepare), 0, "claim re-prepared");
            drop(claim);
            let batch_sql = claim_ready_n(128);
            let mut batch = conn.prepare_cached(&batch_sql).db()?;
            let mut rows = batch.query(params![format!("q{round}"), format!("w{round}"), round]).db()?;
            while rows.next().db()?.is_some() {}
            drop(rows);
            assert_eq!(batch.get_status(StatementStatus::RePrepare), 0, "batch claim re-prepared");
            let mut ack = conn.prepare_cached(ACK).db()?;
            ack.execute(params![round, "w", round, round]).db()?;
            assert_eq!(ack.get_status(StatementStatus::RePrepare), 0, "ack re-prepared");
        }
        Ok(())
    }
}
