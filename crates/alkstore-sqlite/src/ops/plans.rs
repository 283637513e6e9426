//! Query-plan tests of the hot statements: each seeks the index it was
//! written for, with and without ANALYZE statistics, and stays compiled
//! across calls. Kept in one file because they share a populated table and
//! span the claim, handle, reads and sweep statements.

use alkstore_core::Result;
use rusqlite::{params, Connection};

use super::cancel::CANCEL;
use super::claim::{claim_ready_n, CLAIM, CLAIM_READY, CLAIM_READY_ONE, EXHAUST_DELETE, EXHAUST_MOVE, HAS_LAPSED};
use super::forget::{FORGET, HOLDS};
use super::handle::{ack_many_sql, ACK, FAIL_DELETE, FAIL_MOVE, HEARTBEAT, RELEASE, RETRY};
use super::reads::{DEAD_JOBS, GET_JOB, JOB_BY_ID, STATS};
use super::sweep::{PURGE, SWEEP_DELETE, SWEEP_MOVE};
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
             VALUES (?1, ?2, '{}', 0, 0, 3, 0, 30, 5, 0, ?3, CASE WHEN ?2 = 'processing' THEN ?3 END, \
             CASE WHEN ?3 % 7 = 0 THEN ?3 END)",
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

/// Runs `sql` twice with `params` on one prepared statement and asserts
/// SQLite never re-prepared it (a plan that read a bound value would be).
fn assert_never_reprepared(conn: &Connection, what: &str, sql: &str, params: &[rusqlite::types::Value]) -> Result<()> {
    let mut st = conn.prepare(sql).db()?;
    for _ in 0..2 {
        for (i, v) in params.iter().enumerate() {
            st.raw_bind_parameter(i + 1, v).db()?;
        }
        let mut rows = st.raw_query();
        while rows.next().db()?.is_some() {}
        drop(rows);
        st.clear_bindings();
    }
    assert_eq!(st.get_status(rusqlite::StatementStatus::RePrepare), 0, "{what} re-prepared");
    Ok(())
}

/// Both claim candidate scans seek their run of the live index (0018) in its own order:
/// no full scan and no sort of the jobs table; the one sort is the final
/// merge of the ready candidates and the lapsed leases; the pause check is a
/// primary-key probe. Checked with and without ANALYZE
/// statistics (a real store never runs ANALYZE).
#[test]
fn claim_plan_seeks_both_runs_of_the_live_index() -> Result<()> {
    for analyze in [false, true] {
        let conn = populated(analyze)?;
        let lines = plan(&conn, CLAIM)?;
        let text = lines.join("\n");
        assert!(
            text.contains(
                "SEARCH __alkstore_jobs USING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline=?)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "SEARCH __alkstore_jobs USING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline<?)"
            ),
            "{text}"
        );
        assert_no_table_scan("claim", &lines);
        let sorts: Vec<usize> =
            lines.iter().enumerate().filter(|(_, l)| l.contains("TEMP B-TREE")).map(|(i, _)| i).collect();
        let leased = lines.iter().position(|l| l.contains("deadline<?")).unwrap_or(usize::MAX);
        assert!(
            sorts.len() == 1 && sorts[0] > leased,
            "the only sort must be the final candidate merge, after both scans:\n{text}"
        );
        assert!(text.contains("SEARCH __alkstore_paused USING PRIMARY KEY (queue=?)"), "the pause probe: {text}");
    }
    Ok(())
}

/// The fast-path claim statements seek the pending run of the live index in
/// claim order and guard on a seek of its processing run: no scan, no sort.
#[test]
fn fast_claim_plans_seek_the_live_index() -> Result<()> {
    for analyze in [false, true] {
        let conn = populated(analyze)?;
        for sql in [CLAIM_READY, CLAIM_READY_ONE, &claim_ready_n(128)] {
            let lines = plan(&conn, sql)?;
            let text = lines.join("\n");
            assert!(
                text.contains("USING COVERING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline<?)"),
                "{text}"
            );
            assert!(text.contains("USING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline=?)"), "{text}");
            assert!(text.contains("SEARCH __alkstore_paused USING PRIMARY KEY (queue=?)"), "{text}");
            assert_no_table_scan("fast claim", &lines);
            assert!(!text.contains("TEMP B-TREE"), "{text}");
        }
    }
    let lines = plan(&populated(false)?, HAS_LAPSED)?;
    assert!(
        lines.iter().any(|l| l.contains("COVERING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline<?)")),
        "{}",
        lines.join("\n")
    );
    Ok(())
}

/// The other statements that run per claim or per sweep seek their indexes too.
#[test]
fn maintenance_plans_use_their_indexes() -> Result<()> {
    let conn = populated(false)?;
    let cases = [
        (EXHAUST_MOVE, "__alkstore_jobs_ready (queue=? AND state=? AND deadline<?)"),
        (EXHAUST_DELETE, "__alkstore_jobs_ready (queue=? AND state=? AND deadline<?)"),
        (SWEEP_MOVE, "__alkstore_jobs_expiring"),
        (SWEEP_DELETE, "__alkstore_jobs_expiring"),
        (PURGE, "__alkstore_dead_purge"),
        (DEAD_JOBS, "__alkstore_dead_queue"),
        (STATS, "COVERING INDEX __alkstore_jobs_ready (queue=? AND state=?)"),
        (STATS, "COVERING INDEX __alkstore_dead_queue"),
    ];
    for (sql, index) in cases {
        let lines = plan(&conn, sql)?;
        assert!(lines.iter().any(|l| l.contains(index)), "{sql}\n{}", lines.join("\n"));
        assert_no_table_scan(sql, &lines);
        assert!(!lines.iter().any(|l| l.contains("TEMP B-TREE")), "{sql}\n{}", lines.join("\n"));
    }
    // The operator's reads by id and forget_queue: seeks, never a walk of
    // the queues or of a table (issue 44).
    for sql in [ACK, RETRY, HEARTBEAT, RELEASE, FAIL_MOVE, FAIL_DELETE, CANCEL, GET_JOB, JOB_BY_ID, HOLDS]
        .into_iter()
        .chain(FORGET)
    {
        let lines = plan(&conn, sql)?;
        // A SELECT of EXISTS probes scans its one constant row, then seeks.
        let scans = |l: &&String| l.starts_with("SCAN") && l.as_str() != "SCAN CONSTANT ROW";
        assert!(!lines.iter().any(|l| scans(&l)), "{sql}\n{}", lines.join("\n"));
    }
    Ok(())
}

/// The batch ack seeks each id by primary key, and stays compiled when it
/// is bound again (every batch binds new ids and tokens).
#[test]
fn the_batch_ack_seeks_by_key_and_stays_compiled() -> Result<()> {
    let conn = populated(false)?;
    for n in [8, 128] {
        let sql = ack_many_sql(n);
        let lines = plan(&conn, &sql)?;
        assert!(lines.iter().any(|l| l.contains("INTEGER PRIMARY KEY (rowid=?)")), "{}", lines.join("\n"));
        assert!(lines.iter().all(|l| !l.starts_with("SCAN")), "{}", lines.join("\n"));
        let mut values: Vec<rusqlite::types::Value> = (0..2 * n as i64).map(rusqlite::types::Value::Integer).collect();
        values.extend([rusqlite::types::Value::Text("w".into()), rusqlite::types::Value::Integer(0)]);
        assert_never_reprepared(&conn, "batch ack", &sql, &values)?;
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

/// The limited claim's statements (SPEC §24) stay compiled too. rusqlite's
/// statement cache clears a statement's bindings when it takes it back, and
/// SQLite then expires any statement whose plan read a bound value, so each
/// statement runs twice with a clear in between and must not be re-prepared.
#[test]
fn the_limited_claim_is_never_reprepared() -> Result<()> {
    use super::limits::{CLAIM as LIMITED, GET, HIRES_NOW, LOG, LOG_ADD, PRUNE, READY_BEYOND, RECENT, RUNNING};
    use rusqlite::types::Value;
    let conn = populated(false)?;
    let q = || Value::Text("q1".into());
    let cases: [(&str, &str, Vec<Value>); 10] = [
        (
            "limited claim",
            LIMITED,
            vec![q(), Value::Text("w".into()), 100.into(), 2.into(), 1.into(), 64.into(), Value::Null],
        ),
        ("limits", GET, vec![q()]),
        ("hires clock", HIRES_NOW, vec![0.into()]),
        ("running", RUNNING, vec![q()]),
        ("recent", RECENT, vec![q(), Value::Real(1.5)]),
        ("log", LOG, vec![q(), Value::Real(1.5), 1.into()]),
        ("log add", LOG_ADD, vec![q(), Value::Real(1.5), 1.into()]),
        ("prune", PRUNE, vec![q(), Value::Real(0.5)]),
        ("ready beyond", READY_BEYOND, vec![q(), 100.into(), 64.into()]),
        ("exhaust", EXHAUST_MOVE, vec![q(), 100.into()]),
    ];
    for (what, sql, params) in cases {
        assert_never_reprepared(&conn, what, sql, &params)?;
    }
    let lines = plan(&conn, LIMITED)?;
    assert_no_table_scan("limited claim", &lines);
    assert!(
        lines.iter().any(|l| l.contains("USING INDEX __alkstore_jobs_ready (queue=? AND state=? AND deadline=?)")),
        "{lines:?}"
    );
    Ok(())
}

/// The workflow statements (SPEC §25) seek by key: a parent's ack, a link
/// and the reads touch the rows of one job and its edges, never a scan of
/// the jobs, the edges or the results; and so does every statement of every
/// trigger of the schema, read as the schema holds it ([`trigger_steps`]).
#[test]
fn workflow_plans_seek_by_key() -> Result<()> {
    use super::workflows::{
        CHILDREN, KEEP_RESULT, PARENTS, PARENT_RESULTS, PURGE_RESULTS, RELINK_CHILDREN, RELINK_DEAD_PARENTS,
        RELINK_EDGES, RELINK_PARENTS, RESULT,
    };
    for analyze in [false, true] {
        let conn = populated(analyze)?;
        let mut statements: Vec<String> = [
            KEEP_RESULT,
            super::handle::ACK_ANY,
            super::handle::ACK_DROP_RESULT,
            super::cancel::CANCEL_MARK,
            RESULT,
            PARENT_RESULTS,
            PARENTS,
            CHILDREN,
            RELINK_EDGES,
            RELINK_PARENTS,
            RELINK_DEAD_PARENTS,
            RELINK_CHILDREN,
        ]
        .map(str::to_owned)
        .into();
        let triggers: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .db()?;
        assert!(triggers.len() >= 20, "{triggers:?}");
        for name in &triggers {
            statements.extend(trigger_steps(&conn, name)?);
        }
        for sql in &statements {
            // json_each (a virtual table) is the link's input list, the walk's
            // working set and a grouped subquery hold the descendants only:
            // scanning those is the point; a table of the store, never.
            assert_no_table_scan(sql, &plan(&conn, sql)?);
        }
        let lines = plan(&conn, PURGE_RESULTS)?;
        assert!(lines.iter().any(|l| l.contains("__alkstore_results_expiring")), "{}", lines.join("\n"));
        let lines = plan(&conn, STATS)?;
        assert!(
            lines.iter().any(|l| l.contains("__alkstore_jobs_ready (queue=? AND state=?)")),
            "{}",
            lines.join("\n")
        );
    }
    Ok(())
}

/// The workflow ack's and the link's statements stay compiled across calls.
#[test]
fn workflow_statements_are_never_reprepared() -> Result<()> {
    use super::enqueue::ENQUEUE_LINKED;
    use super::workflows::KEEP_RESULT;
    use rusqlite::types::Value;
    let conn = populated(false)?;
    let linked = |after: &str| -> Vec<Value> {
        let mut v: Vec<Value> = vec![Value::Text("q".into()), Value::Text("{}".into()), 0.into(), 3.into()];
        v.extend([30.into(), Value::Real(1.0), Value::Null, 0.into(), Value::Null, 0.into(), Value::Null]);
        v.extend([Value::Null, Value::Null, Value::Text("cancel".into()), Value::Text(after.into())]);
        v
    };
    let cases: [(&str, Vec<Value>); 3] = [
        (KEEP_RESULT, vec![1.into(), Value::Text("w".into()), 1.into(), 0.into(), Value::Text("1".into())]),
        (ENQUEUE_LINKED, linked("[1,2]")),
        (ENQUEUE_LINKED, linked("[3]")),
    ];
    for (sql, params) in cases {
        assert_never_reprepared(&conn, sql, sql, &params)?;
    }
    Ok(())
}

/// The statements of trigger `name` as the migrated schema holds it, each
/// ready to EXPLAIN: `NEW.<col>` / `OLD.<col>` become numbered parameters,
/// so the plans read are those of the very text the triggers run (a
/// trigger body cannot be EXPLAINed as a whole).
fn trigger_steps(conn: &Connection, name: &str) -> Result<Vec<String>> {
    let sql: String = conn
        .query_row("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1", [name], |r| r.get(0))
        .db()?;
    let body = sql.split_once("\nBEGIN\n").map(|(_, b)| b).unwrap_or_default();
    let body = body.rsplit_once("\nEND").map(|(b, _)| b).unwrap_or(body);
    let mut names: Vec<String> = Vec::new();
    let mut steps = Vec::new();
    for step in body.split(";\n").map(str::trim).filter(|s| !s.is_empty()) {
        let mut out = String::new();
        let mut rest = step;
        while let Some(at) = row_ref(rest) {
            let (head, tail) = rest.split_at(at);
            let len = 4 + tail[4..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(tail.len() - 4);
            let field = tail[..len].to_owned();
            let n = names.iter().position(|f| *f == field).unwrap_or_else(|| {
                names.push(field);
                names.len() - 1
            });
            out.push_str(head);
            out.push_str(&format!("?{}", n + 1));
            rest = &tail[len..];
        }
        out.push_str(rest);
        steps.push(out.trim_end_matches(';').to_owned());
    }
    Ok(steps)
}

/// Where `text` first names a column of the trigger's row (`NEW.x`, `OLD.x`,
/// in either case), not inside a longer word.
fn row_ref(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    lower.char_indices().map(|(i, _)| i).find(|&i| {
        (lower[i..].starts_with("new.") || lower[i..].starts_with("old."))
            && lower[..i].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// The failure rule settles a death set-wise: its walk down
/// the unsettled edges, the doomed jobs' messages, dead rows and deletes,
/// the count of their 'run' children and the settling of their edges each
/// seek by key (the work is the descendants', never a scan of the store's
/// jobs or edges); and every statement of it compiles against the schema.
#[test]
fn the_failure_rule_settles_by_key() -> Result<()> {
    for analyze in [false, true] {
        let conn = populated(analyze)?;
        let steps = trigger_steps(&conn, "__alkstore_job_failed_settle")?;
        assert_eq!(steps.len(), 7, "{steps:#?}");
        for sql in steps.iter().chain(&trigger_steps(&conn, "__alkstore_dead_parent_left")?) {
            // The walk's working set (`down`) and a grouped subquery are
            // scanned by design: they hold the descendants only.
            assert_no_table_scan(sql, &plan(&conn, sql)?);
        }
    }
    Ok(())
}
