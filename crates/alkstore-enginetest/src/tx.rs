//! The caller's transaction (SPEC §6): jobs and business writes land
//! together or not at all, and the seam refuses misuse.

use std::any::Any;

use alkstore_core::{Error, JobState, NewJob, ParamStyle, QueueOpts, ReadyAt, Result, SqlRow, SqlValue, Store, Tx};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __tx_cases { ($harness:ty) => { $crate::__cases! { $harness; tx {
    commit_lands_business_write_and_jobs_together, rollback_leaves_nothing,
    dropping_an_open_transaction_rolls_back_and_frees_the_writer,
    a_transaction_begun_before_close_lands_nothing, handle_ops_in_a_transaction_land_only_on_commit,
    a_failed_statement_dooms_the_transaction, a_statement_that_ends_the_transaction_is_refused,
    a_foreign_or_other_store_transaction_is_refused, a_transaction_can_move_between_threads,
    the_caller_check_sees_a_transaction_of_this_thread,
    a_foreign_enqueue_lands_only_with_the_callers_commit_and_wakes, a_foreign_enqueue_for_another_store_writes_nothing,
} } } }

/// Creates table `name` (id, unique user_id) in its own transaction; returns its SQL name.
fn make_orders<H: Harness>(db: &Db<H>, name: &str) -> TestResult<String> {
    let t = db.harness.table(name);
    let mut tx = db.store.begin()?;
    tx.execute(&format!("CREATE TABLE {t} (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL UNIQUE)"), &[])?;
    tx.commit()?;
    Ok(t)
}

/// The committed row count of table `t`, read in a transaction of `s`.
fn count(s: &Store, t: &str) -> TestResult<i64> {
    let mut tx = s.begin()?;
    let rows = tx.query(&format!("SELECT count(*) AS n FROM {t}"), &[])?;
    tx.rollback()?;
    match rows[0][0].1 {
        SqlValue::Int(n) => Ok(n),
        ref other => Err(format!("count was {other:?}").into()),
    }
}

pub fn commit_lands_business_write_and_jobs_together<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let reader = db.reopen()?;
    let t = make_orders(db, "orders")?;
    let mut tx = s.begin()?;
    assert_eq!(tx.execute(&format!("INSERT INTO {t} (id, user_id) VALUES (1, $1)"), &[SqlValue::Int(42)])?, 1);
    let rows = tx.query(&format!("SELECT id FROM {t} WHERE user_id = $1"), &[SqlValue::Int(42)])?;
    assert_eq!(rows, vec![vec![("id".to_owned(), SqlValue::Int(1))]]);
    let rows =
        tx.query(&format!("INSERT INTO {t} (id, user_id) VALUES (2, $1) RETURNING id, user_id"), &[SqlValue::Int(7)])?;
    assert_eq!(rows[0][1], ("user_id".to_owned(), SqlValue::Int(7)));
    let ids = s.enqueue(Some(&mut tx), "q", &opts(), &[job(r#"{"order": 1}"#), job("2")])?;
    // A tx-side read sees the tx's own writes; another handle does not yet.
    assert_eq!(s.get_job(Some(&mut tx), "q", ids[0])?.map(|j| j.state), Some(JobState::Pending));
    assert!(reader.get_job(None, "q", ids[0])?.is_none(), "invisible outside the tx");
    tx.commit()?;
    assert_eq!(s.stats("q")?.pending, 2);
    assert_eq!(count(s, &t)?, 2);
    assert_eq!(s.get_job(None, "q", ids[0])?.ok_or("committed")?.payload, r#"{"order": 1}"#);
    Ok(())
}

pub fn rollback_leaves_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let reader = db.reopen()?;
    let t = make_orders(db, "orders")?;
    let fresh = db.harness.table("fresh");
    let mut tx = s.begin()?;
    tx.execute(&format!("CREATE TABLE {fresh} (x INTEGER)"), &[])?;
    assert_eq!(tx.execute(&format!("INSERT INTO {t} (id, user_id) VALUES (1, $1)"), &[SqlValue::Int(42)])?, 1);
    let id = s.enqueue(Some(&mut tx), "q", &opts(), &[job("{}")])?[0];
    let seen = s.get_job(Some(&mut tx), "q", id)?.ok_or("tx sees its own write")?;
    assert_eq!(seen.state, JobState::Pending);
    assert!(reader.get_job(None, "q", id)?.is_none(), "invisible outside the tx");
    tx.rollback()?;
    assert!(s.get_job(None, "q", id)?.is_none());
    assert_eq!(s.stats("q")?.pending, 0);
    assert_eq!(count(s, &t)?, 0);
    let mut tx = s.begin()?;
    let err = tx.query(&format!("SELECT * FROM {fresh}"), &[]).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "the table was rolled back too: {err:?}");
    tx.rollback()?;
    Ok(())
}

/// SPEC §2: any use after `close` raises StoreClosed, so a transaction
/// begun before it runs nothing more and its commit lands nothing.
pub fn a_transaction_begun_before_close_lands_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = db.reopen()?;
    let mut tx = s.begin()?;
    s.enqueue(Some(&mut tx), "q", &opts(), &[job("1")])?;
    s.close();
    assert_eq!(tx.execute("SELECT 1", &[]), Err(Error::StoreClosed));
    assert_eq!(s.enqueue(Some(&mut tx), "q", &opts(), &[job("2")]), Err(Error::StoreClosed));
    assert_eq!(tx.commit(), Err(Error::StoreClosed));
    assert_eq!(db.store.stats("q")?.pending, 0);
    Ok(())
}

/// With one connection (Postgres: a pool of one), the next call waits for
/// the dropped transaction's rollback to free it, then finds it clean.
pub fn dropping_an_open_transaction_rolls_back_and_frees_the_writer<H: Harness>(db: &Db<H>) -> TestResult {
    let one = db.reopen_with(H::one_connection)?;
    let id = {
        let mut tx = one.begin()?;
        one.enqueue(Some(&mut tx), "q", &opts(), &[job("1")])?[0]
    };
    assert!(one.get_job(None, "q", id)?.is_none());
    assert_eq!(one.stats("q")?.pending, 0);
    let id2 = one.enqueue(None, "q", &opts(), &[job("2")])?[0];
    assert!(one.get_job(None, "q", id2)?.is_some());
    // And the first handle's writer is free too.
    db.put("q", &opts(), "3")?;
    Ok(())
}

pub fn handle_ops_in_a_transaction_land_only_on_commit<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = s.enqueue(None, "q", &opts(), &[job("a"), job("b"), job("c"), job("d")])?;
    let js = s.claim("q", "w", 4)?;
    let mut tx = s.begin()?;
    assert_eq!(s.ack(Some(&mut tx), &[&js[0]])?, 1);
    assert!(s.fail(Some(&mut tx), &js[1], "nope")?);
    assert!(s.retry(Some(&mut tx), &js[2], "later", Some(0))?);
    assert!(s.cancel(Some(&mut tx), "q", ids[3])?);
    tx.rollback()?;
    for id in &ids {
        assert_eq!(s.get_job(None, "q", *id)?.map(|j| j.state), Some(JobState::Processing));
    }
    let st = s.stats("q")?;
    assert_eq!((st.processing, st.dead), (4, 0), "rolled back: nothing changed");
    let mut tx = s.begin()?;
    assert_eq!(s.ack(Some(&mut tx), &[&js[0]])?, 1);
    assert!(s.fail(Some(&mut tx), &js[1], "nope")?);
    assert!(s.retry(Some(&mut tx), &js[2], "later", Some(0))?);
    assert!(s.cancel(Some(&mut tx), "q", ids[2])?);
    tx.commit()?;
    assert!(s.get_job(None, "q", ids[0])?.is_none());
    let dead = s.get_job(None, "q", ids[1])?.ok_or("dead")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("nope")));
    assert!(s.get_job(None, "q", ids[2])?.is_none());
    assert_eq!(s.get_job(None, "q", ids[3])?.map(|j| j.state), Some(JobState::Processing));
    Ok(())
}

/// The seam's rules on the front: a call without `tx` from the tx's thread is
/// refused; a failed statement dooms the transaction, and commit rolls back.
pub fn a_failed_statement_dooms_the_transaction<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let t = make_orders(db, "orders")?;
    let mut tx = s.begin()?;
    let ids = s.enqueue(Some(&mut tx), "q", &opts(), &[job("1")])?;
    assert!(matches!(s.stats("q"), Err(Error::Transaction(_))), "a call without tx from the tx's thread");
    let e = tx.execute(&format!("SELECT * FROM {}", db.harness.table("no_such_table_here")), &[]).unwrap_err();
    assert!(matches!(e, Error::Database { .. }), "{e:?}");
    assert!(tx.is_doomed());
    assert!(matches!(tx.execute("SELECT 1", &[]), Err(Error::Transaction(_))));
    assert!(matches!(tx.commit(), Err(Error::Transaction(_))));
    assert!(s.get_job(None, "q", ids[0])?.is_none());
    let mut tx = s.begin()?;
    tx.execute(&format!("INSERT INTO {t} (id, user_id) VALUES (1, 1)"), &[])?;
    let e = tx.execute(&format!("INSERT INTO {t} (id, user_id) VALUES (2, 1)"), &[]).unwrap_err();
    assert!(matches!(e, Error::Database { code: Some(_), .. }), "a unique violation carries a code: {e:?}");
    tx.rollback()?;
    assert_eq!(count(s, &t)?, 0);
    Ok(())
}

pub fn a_statement_that_ends_the_transaction_is_refused<H: Harness>(db: &Db<H>) -> TestResult {
    let mut tx = db.store.begin()?;
    assert!(matches!(tx.execute("COMMIT", &[]), Err(Error::Transaction(_))));
    tx.rollback()?;
    db.put("q", &opts(), "writer still usable")?;
    Ok(())
}

/// A `Tx` no engine made.
struct Foreign;

impl Tx for Foreign {
    fn execute(&mut self, _: &str, _: &[SqlValue]) -> Result<u64> {
        Ok(0)
    }
    fn query(&mut self, _: &str, _: &[SqlValue]) -> Result<Vec<SqlRow>> {
        Ok(Vec::new())
    }
    fn commit(self: Box<Self>) -> Result<()> {
        Ok(())
    }
    fn rollback(self: Box<Self>) -> Result<()> {
        Ok(())
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

pub fn a_foreign_or_other_store_transaction_is_refused<H: Harness>(db: &Db<H>) -> TestResult {
    // Only the engine takes a bare `Tx`; the front only ever passes its own sessions.
    let e = db.engine().enqueue(Some(&mut Foreign), "q", &opts(), &[job("1")]).unwrap_err();
    assert!(matches!(e, Error::Transaction(_)), "{e:?}");
    // Another handle on this database, and another database.
    let elsewhere = H::fresh()?.ok_or("a second fresh database")?;
    for other in [db.reopen()?, Store::new(elsewhere.engine().clone(), crate::harness::common(elsewhere.options()))] {
        let mut tx = other.begin()?;
        let e = db.store.enqueue(Some(&mut tx), "q", &opts(), &[job("1")]).unwrap_err();
        assert!(matches!(e, Error::Transaction(_)), "{e:?}");
        tx.rollback()?;
    }
    Ok(())
}

pub fn a_transaction_can_move_between_threads<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut tx = s.begin()?;
    s.enqueue(Some(&mut tx), "q", &opts(), &[job("1")])?;
    let mut tx = std::thread::scope(|scope| {
        scope
            .spawn(move || -> Result<_> {
                tx.execute("SELECT 1", &[])?;
                Ok(tx)
            })
            .join()
            .map_err(|_| Error::database(None, "thread panicked"))
    })??;
    tx.commit()?;
    assert_eq!(s.stats("q")?.pending, 1);
    Ok(())
}

pub fn the_caller_check_sees_a_transaction_of_this_thread<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.check_caller()?;
    let mut tx = s.begin()?;
    assert!(matches!(s.check_caller(), Err(Error::Transaction(_))));
    // Another thread (the asyncio bridge's) holds none: the check must run on the caller's.
    std::thread::scope(|scope| scope.spawn(|| s.check_caller()).join().map_err(|_| "thread panicked"))??;
    tx.rollback()?;
    s.check_caller()?;
    s.close();
    assert!(matches!(s.check_caller(), Err(Error::StoreClosed)));
    Ok(())
}

/// The placeholder style of this engine's own caller SQL, to run a foreign
/// statement (ADR 0015) on a transaction of another handle, as a caller's
/// connection would.
fn native(s: &Store) -> ParamStyle {
    if s.engine_kind() == "sqlite" {
        ParamStyle::Qmark
    } else {
        ParamStyle::Dollar
    }
}

/// The ids a foreign statement returned (the first column of each row).
fn ids(rows: &[SqlRow]) -> TestResult<Vec<i64>> {
    rows.iter()
        .map(|r| match r.first() {
            Some((_, SqlValue::Int(id))) => Ok(*id),
            other => Err(format!("not an id: {other:?}").into()),
        })
        .collect()
}

/// ADR 0015: the foreign statement, run on another connection, makes the
/// same rows as `enqueue`, exactly when that connection's transaction commits,
/// and wakes waiters then.
pub fn a_foreign_enqueue_lands_only_with_the_callers_commit_and_wakes<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let hub = s.wakes()?;
    let caller = db.reopen()?;
    let q = QueueOpts { visibility_timeout_s: 45, dead_letter_retention_s: Some(100), ..opts() };
    let jobs = [
        NewJob { priority: 5, ..job(r#"{"a": "x\"y\\z 100%"}"#) },
        NewJob { ready: ReadyAt::Delay(60), expires_s: Some(600), max_attempts: Some(9), ..job("[1, 2]") },
        job("null"),
    ];
    let r = s.foreign_enqueue("q", &q, &jobs, native(s))?.ok_or("a statement")?;
    let seen = hub.generation();
    let mut tx = caller.begin()?;
    assert_eq!(tx.query(&r.rendered.sql, &r.rendered.params)?.len(), 3);
    tx.rollback()?;
    assert_eq!(s.stats("q")?.pending + s.stats("q")?.scheduled, 0, "rolled back: nothing");
    assert!(
        !hub.wait(seen, std::time::Instant::now() + std::time::Duration::from_millis(500)),
        "a rollback wakes nobody"
    );

    let mut tx = caller.begin()?;
    let got = ids(&tx.query(&r.rendered.sql, &r.rendered.params)?)?;
    assert!(s.get_job(None, "q", got[0])?.is_none(), "invisible until the caller commits");
    tx.commit()?;
    assert!(hub.wait(seen, std::time::Instant::now() + std::time::Duration::from_secs(5)), "the commit wakes");
    assert!(got.windows(2).all(|w| w[0] < w[1]), "ids ascend in input order: {got:?}");
    let plain = s.enqueue(None, "plain", &q, &jobs)?;
    for (f, p) in got.iter().zip(&plain) {
        let (f, p) = (s.get_job(None, "q", *f)?.ok_or("foreign row")?, s.get_job(None, "plain", *p)?.ok_or("row")?);
        assert_eq!(
            (&f.payload, f.priority, f.max_attempts, f.state),
            (&p.payload, p.priority, p.max_attempts, p.state)
        );
        assert_eq!(f.run_at - f.enqueued_at, p.run_at - p.enqueued_at);
        assert_eq!(f.expires_at.map(|e| e - f.enqueued_at), p.expires_at.map(|e| e - p.enqueued_at));
    }
    let claimed = s.claim("q", "w", 10)?;
    assert_eq!(
        claimed.iter().map(|c| c.id).collect::<Vec<_>>(),
        [got[0], got[2]],
        "priority first; the delayed one waits"
    );
    assert_eq!(claimed[0].deadline - claimed[0].claimed_at, 45, "the queue's stamps");
    Ok(())
}

/// ADR 0015: the statement checks the store's identity, so run where another
/// store answers (here: the identity changed) it writes nothing; bad jobs get
/// no statement at all, and no jobs need none.
pub fn a_foreign_enqueue_for_another_store_writes_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut r = s.foreign_enqueue("q", &opts(), &[job("{}")], native(s))?.ok_or("a statement")?;
    let me = SqlValue::Text(s.engine().store_id().to_owned());
    let forged = r.rendered.params.iter_mut().find(|v| **v == me).ok_or("the store_id value")?;
    *forged = SqlValue::Text("0".repeat(32));
    let caller = db.reopen()?;
    let mut tx = caller.begin()?;
    assert!(tx.query(&r.rendered.sql, &r.rendered.params)?.is_empty());
    tx.commit()?;
    assert_eq!(s.stats("q")?.pending, 0);
    let bad = QueueOpts { max_attempts: 0, ..opts() };
    assert!(matches!(s.foreign_enqueue("q", &bad, &[job("{}")], native(s)), Err(Error::Value(_))));
    assert_eq!(s.foreign_enqueue("q", &opts(), &[], native(s))?, None);
    Ok(())
}
