//! The caller's transaction (SPEC §6).

mod common;

use std::any::Any;

use alkstore_core::{Error, JobState, Result, SqlRow, SqlValue, Tx};
use common::{job, opts, Fixture};

fn create_orders(tx: &mut dyn Tx) -> Result<()> {
    tx.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, user_id INTEGER, note TEXT UNIQUE)", &[])?;
    Ok(())
}

#[test]
fn commit_lands_business_write_and_job_together() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    create_orders(tx.as_mut())?;
    assert_eq!(tx.execute("INSERT INTO orders (user_id) VALUES (?)", &[SqlValue::Int(42)])?, 1);
    let rows = tx.query("SELECT id FROM orders WHERE user_id = ?", &[SqlValue::Int(42)])?;
    assert_eq!(rows, vec![vec![("id".to_owned(), SqlValue::Int(1))]]);
    let ids = f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1"), job("2")])?;
    // A tx-side read sees the tx's own writes; the reader does not yet.
    assert_eq!(f.engine.get_job(Some(tx.as_mut()), "q", ids[0])?.map(|j| j.state), Some(JobState::Pending));
    assert!(f.engine.get_job(None, "q", ids[0])?.is_none());
    tx.commit()?;
    assert_eq!(f.engine.stats("q")?.pending, 2);
    Ok(())
}

#[test]
fn rollback_leaves_nothing() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    create_orders(tx.as_mut())?;
    tx.execute("INSERT INTO orders (user_id) VALUES (1)", &[])?;
    let ids = f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")])?;
    tx.rollback()?;
    assert!(f.engine.get_job(None, "q", ids[0])?.is_none());
    assert_eq!(f.engine.stats("q")?.pending, 0);
    let mut tx = f.engine.begin()?;
    let err = tx.query("SELECT * FROM orders", &[]).unwrap_err();
    assert!(matches!(err, Error::Database { .. }), "the table was rolled back too: {err:?}");
    tx.rollback()?;
    Ok(())
}

#[test]
fn dropping_an_open_transaction_rolls_back() -> Result<()> {
    let f = Fixture::new()?;
    {
        let mut tx = f.engine.begin()?;
        f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")])?;
    }
    assert_eq!(f.engine.stats("q")?.pending, 0);
    // And the writer is free again.
    f.put("q", "2")?;
    Ok(())
}

#[test]
fn handle_ops_in_a_transaction_land_only_on_commit() -> Result<()> {
    let f = Fixture::new()?;
    let a = f.put("q", "a")?;
    let b = f.put("q", "b")?;
    let c = f.put("q", "c")?;
    let js = common::claim(&*f.engine, "q", "w", 3)?;
    let (ja, jb, jc) = (&js[0], &js[1], &js[2]);
    let mut tx = f.engine.begin()?;
    assert_eq!(f.engine.ack(Some(tx.as_mut()), &[ja])?, 1);
    assert!(f.engine.fail(Some(tx.as_mut()), jb, "nope")?);
    assert!(common::retry(&*f.engine, Some(tx.as_mut()), jc, "later", Some(0))?);
    tx.rollback()?;
    for id in [a, b, c] {
        assert_eq!(f.engine.get_job(None, "q", id)?.map(|j| j.state), Some(JobState::Processing));
    }
    let mut tx = f.engine.begin()?;
    assert_eq!(f.engine.ack(Some(tx.as_mut()), &[ja])?, 1);
    assert!(f.engine.fail(Some(tx.as_mut()), jb, "nope")?);
    assert!(common::retry(&*f.engine, Some(tx.as_mut()), jc, "later", Some(0))?);
    assert!(f.engine.cancel(Some(tx.as_mut()), "q", c)?);
    tx.commit()?;
    assert!(f.engine.get_job(None, "q", a)?.is_none());
    assert_eq!(f.engine.get_job(None, "q", b)?.map(|j| j.state), Some(JobState::Dead));
    assert!(f.engine.get_job(None, "q", c)?.is_none());
    Ok(())
}

#[test]
fn user_sql_errors_carry_the_sqlite_code() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    create_orders(tx.as_mut())?;
    tx.execute("INSERT INTO orders (note) VALUES ('x')", &[])?;
    match tx.execute("INSERT INTO orders (note) VALUES ('x')", &[]) {
        Err(Error::Database { code, .. }) => {
            assert_eq!(code.as_deref(), Some("SQLITE_CONSTRAINT_UNIQUE"))
        }
        r => panic!("expected a unique violation, got {r:?}"),
    }
    match tx.query("SELEC 1", &[]) {
        Err(Error::Database { code, .. }) => assert_eq!(code.as_deref(), Some("SQLITE_ERROR")),
        r => panic!("expected a syntax error, got {r:?}"),
    }
    assert!(matches!(tx.execute("SELECT ?", &[]), Err(Error::Database { .. })), "wrong parameter count");
    tx.rollback()?;
    Ok(())
}

#[test]
fn values_map_by_storage_class_and_bools_bind_as_integers() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    let rows: Vec<SqlRow> = tx.query(
        "SELECT ? AS n, ? AS i, ? AS f, ? AS t, ? AS b, ? AS yes, ? AS no",
        &[
            SqlValue::Null,
            SqlValue::Int(-7),
            SqlValue::Float(1.5),
            SqlValue::Text("héllo".into()),
            SqlValue::Bytes(vec![0, 255]),
            SqlValue::Bool(true),
            SqlValue::Bool(false),
        ],
    )?;
    let expected = vec![
        ("n".to_owned(), SqlValue::Null),
        ("i".to_owned(), SqlValue::Int(-7)),
        ("f".to_owned(), SqlValue::Float(1.5)),
        ("t".to_owned(), SqlValue::Text("héllo".into())),
        ("b".to_owned(), SqlValue::Bytes(vec![0, 255])),
        ("yes".to_owned(), SqlValue::Int(1)),
        ("no".to_owned(), SqlValue::Int(0)),
    ];
    assert_eq!(rows, vec![expected]);
    tx.execute("CREATE TABLE t (x)", &[])?;
    assert_eq!(tx.execute("INSERT INTO t VALUES (1), (2) RETURNING x", &[])?, 2, "RETURNING rows are drained");
    tx.rollback()?;
    Ok(())
}

#[test]
fn a_statement_that_ends_the_transaction_is_refused() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    assert!(matches!(tx.execute("COMMIT", &[]), Err(Error::Transaction(_))));
    tx.rollback()?;
    f.put("q", "writer still usable")?;
    Ok(())
}

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

#[test]
fn a_foreign_or_other_store_transaction_is_refused() -> Result<()> {
    let f = Fixture::new()?;
    let mut foreign = Foreign;
    assert!(matches!(f.engine.enqueue(Some(&mut foreign), "q", &opts(), &[job("1")]), Err(Error::Transaction(_))));
    let g = Fixture::new()?;
    let mut tx = g.engine.begin()?;
    assert!(matches!(f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")]), Err(Error::Transaction(_))));
    tx.rollback()?;
    Ok(())
}

#[test]
fn a_transaction_can_move_between_threads() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")])?;
    let tx = std::thread::spawn(move || -> Result<Box<dyn Tx>> {
        let mut tx = tx;
        tx.execute("SELECT 1", &[])?;
        Ok(tx)
    })
    .join()
    .map_err(|_| Error::database(None, "thread panicked"))??;
    tx.commit()?;
    assert_eq!(f.engine.stats("q")?.pending, 1);
    Ok(())
}

#[test]
fn execute_counts_rows_changed_else_returned() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    tx.execute("CREATE TABLE t (x)", &[])?;
    assert_eq!(tx.execute("INSERT INTO t VALUES (1), (2), (3)", &[])?, 3);
    assert_eq!(tx.execute("CREATE INDEX t_x ON t (x)", &[])?, 0, "DDL changes no row");
    assert_eq!(tx.execute("SELECT * FROM t", &[])?, 3, "a SELECT counts the rows it returned, as on Postgres");
    assert_eq!(tx.execute("UPDATE t SET x = x + 1 WHERE x > 1", &[])?, 2);
    assert_eq!(tx.execute("DELETE FROM t WHERE x > 100", &[])?, 0);
    tx.rollback()?;
    Ok(())
}

#[test]
fn commit_after_close_lands_nothing() -> Result<()> {
    let f = Fixture::new()?;
    let mut tx = f.engine.begin()?;
    f.engine.enqueue(Some(tx.as_mut()), "q", &opts(), &[job("1")])?;
    f.engine.close();
    assert_eq!(tx.execute("SELECT 1", &[]), Err(Error::StoreClosed));
    assert_eq!(tx.commit(), Err(Error::StoreClosed));
    assert_eq!(f.reopen()?.stats("q")?.pending, 0);
    Ok(())
}
