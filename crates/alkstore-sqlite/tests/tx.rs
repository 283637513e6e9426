//! The caller's SQL on SQLite (SPEC §6): result codes, value mapping and row
//! counts as SQLite gives them. The transaction contract itself is in the
//! conformance suite.

mod common;

use alkstore_core::{Error, Result, SqlRow, SqlValue, Tx};
use common::Fixture;

fn create_orders(tx: &mut dyn Tx) -> Result<()> {
    tx.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, user_id INTEGER, note TEXT UNIQUE)", &[])?;
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
