//! The caller's SQL on Postgres (SPEC §6): SQLSTATEs, the aborted
//! transaction, and type conversion as Postgres gives them. The transaction
//! contract itself is in the conformance suite.

mod common;

use alkstore_core::{Error, SqlValue};
use alkstore_postgres::StatementMode;
use common::{TestDb, TestResult};

/// A fresh store in each statement mode (none when no server answers).
fn both_modes() -> Result<Vec<TestDb>, Box<dyn std::error::Error>> {
    let named = TestDb::new()?;
    let unnamed = TestDb::with(4, StatementMode::Unnamed)?;
    Ok(named.into_iter().chain(unnamed).collect())
}

fn orders(db: &TestDb) -> String {
    format!("\"{}\".orders", db.schema)
}

fn make_orders(db: &TestDb) -> TestResult {
    let mut tx = db.engine.begin()?;
    tx.execute(&format!("CREATE TABLE {} (id serial PRIMARY KEY, user_id int NOT NULL UNIQUE)", orders(db)), &[])?;
    tx.commit()?;
    Ok(())
}

fn count_orders(db: &TestDb) -> Result<i64, Box<dyn std::error::Error>> {
    let mut tx = db.engine.begin()?;
    let rows = tx.query(&format!("SELECT count(*) AS n FROM {}", orders(db)), &[])?;
    tx.rollback()?;
    match rows[0][0].1 {
        SqlValue::Int(n) => Ok(n),
        ref other => Err(format!("count was {other:?}").into()),
    }
}

#[test]
fn user_sql_error_carries_the_sqlstate_and_aborts_the_tx() -> TestResult {
    for db in both_modes()? {
        sqlstates(&db)?;
    }
    Ok(())
}

fn sqlstates(db: &TestDb) -> TestResult {
    make_orders(db)?;
    let mut tx = db.engine.begin()?;
    let e = tx.execute("SELECT * FROM no_such_table_here", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "42P01"), "{e:?}");
    let e = tx.execute("SELECT 1", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "25P02"), "{e:?}");
    // Refusing the commit of a doomed transaction is the Store session's
    // rule (the conformance case tx::a_failed_statement_dooms_the_transaction), not the engine's.
    tx.rollback()?;
    let mut tx = db.engine.begin()?;
    let e = tx.execute("SELECT 1/0", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "22012"), "{e:?}");
    tx.rollback()?;

    let mut tx = db.engine.begin()?;
    tx.execute(&format!("INSERT INTO {} (user_id) VALUES (1)", orders(db)), &[])?;
    let e = tx.execute(&format!("INSERT INTO {} (user_id) VALUES (1)", orders(db)), &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "23505"), "{e:?}");
    tx.rollback()?;
    assert_eq!(count_orders(db)?, 0);
    Ok(())
}

#[test]
fn parameters_and_columns_convert_by_type() -> TestResult {
    for db in both_modes()? {
        convert_by_type(&db)?;
    }
    Ok(())
}

fn convert_by_type(db: &TestDb) -> TestResult {
    let mut tx = db.engine.begin()?;
    let rows = tx.query(
        "SELECT $1::int2 AS a, $2::int4 AS b, $3::int8 AS c, $4::float4 AS d, $5::float8 AS e, $6::numeric::text AS f, \
         $7::bool AS g, $8::text AS h, $9::varchar AS i, $10::bytea AS j, $11::int8 AS k, $12::json::text AS l, \
         $13::date::text AS m, $14::jsonb AS n, 'x'::name AS o, 'ab'::char(3) AS p, $15::float8 AS q",
        &[
            SqlValue::Int(1),
            SqlValue::Int(2),
            SqlValue::Int(3),
            SqlValue::Float(0.5),
            SqlValue::Float(2.25),
            SqlValue::Int(10),
            SqlValue::Bool(true),
            SqlValue::Text("héllo".into()),
            SqlValue::Text("v".into()),
            SqlValue::Bytes(vec![0, 1, 255]),
            SqlValue::Null,
            SqlValue::Text(r#"{"b":1, "a":2}"#.into()),
            SqlValue::Text("2024-02-29".into()),
            SqlValue::Text(r#"{"k": [1]}"#.into()),
            SqlValue::Int(3),
        ],
    )?;
    let got: Vec<SqlValue> = rows[0].iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(
        got,
        vec![
            SqlValue::Int(1),
            SqlValue::Int(2),
            SqlValue::Int(3),
            SqlValue::Float(0.5),
            SqlValue::Float(2.25),
            SqlValue::Text("10".into()),
            SqlValue::Bool(true),
            SqlValue::Text("héllo".into()),
            SqlValue::Text("v".into()),
            SqlValue::Bytes(vec![0, 1, 255]),
            SqlValue::Null,
            SqlValue::Text(r#"{"b":1, "a":2}"#.into()),
            SqlValue::Text("2024-02-29".into()),
            SqlValue::Text(r#"{"k": [1]}"#.into()),
            SqlValue::Text("x".into()),
            SqlValue::Text("ab ".into()),
            SqlValue::Float(3.0),
        ]
    );
    let names: Vec<&str> = rows[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..3], ["a", "b", "c"]);
    tx.rollback()?;
    Ok(())
}

#[test]
fn unsupported_types_name_the_type() -> TestResult {
    for db in both_modes()? {
        name_the_type(&db)?;
    }
    Ok(())
}

fn name_the_type(db: &TestDb) -> TestResult {
    let mut tx = db.engine.begin()?;
    let e = tx.query("SELECT 1.5::numeric AS x", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { message, .. } if message.contains("numeric")), "{e:?}");
    tx.rollback()?;
    let mut tx = db.engine.begin()?;
    let e = tx.query("SELECT $1::uuid", &[SqlValue::Int(1)]).unwrap_err();
    assert!(matches!(&e, Error::Database { message, .. } if message.contains("uuid")), "{e:?}");
    tx.rollback()?;
    let mut tx = db.engine.begin()?;
    let e = tx.query("SELECT $1::int2", &[SqlValue::Int(1 << 20)]).unwrap_err();
    assert!(matches!(&e, Error::Database { .. }), "{e:?}");
    tx.rollback()?;
    let mut tx = db.engine.begin()?;
    let e = tx.execute("SELECT $1::int, $2::int", &[SqlValue::Int(1)]).unwrap_err();
    assert!(matches!(&e, Error::Database { .. }), "{e:?}");
    tx.rollback()?;
    Ok(())
}

/// With unnamed statements, a result column of a non-built-in type makes
/// tokio-postgres look the type up with named statements of its own; the
/// transaction closes them again in the same session, and the connection,
/// whose driver cache still names them, does not go back to the pool.
#[test]
fn unnamed_leaves_no_statement_of_the_drivers_type_lookups() -> TestResult {
    let Some(db) = TestDb::with(1, StatementMode::Unnamed)? else { return Ok(()) };
    let mood = format!("\"{}\".mood", db.schema);
    let mut tx = db.engine.begin()?;
    tx.execute(&format!("CREATE TYPE {mood} AS ENUM ('calm', 'busy')"), &[])?;
    tx.commit()?;
    let prepared = "SELECT count(*) AS n FROM pg_prepared_statements";
    for _ in 0..2 {
        let mut tx = db.engine.begin()?;
        let rows =
            tx.query(&format!("SELECT 'busy'::{mood} AS m, $1::{mood}::text AS t"), &[SqlValue::Text("calm".into())])?;
        assert_eq!(rows[0], [("m".into(), SqlValue::Text("busy".into())), ("t".into(), SqlValue::Text("calm".into()))]);
        assert_eq!(tx.query(prepared, &[])?[0][0].1, SqlValue::Int(0));
        tx.commit()?;
    }
    Ok(())
}
