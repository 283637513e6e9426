//! The transaction seam (SPEC §6) on Postgres.

mod common;

use alkstore_core::{Error, JobState, SqlValue, Store};
use common::{job, opts, TestDb, TestResult};

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
fn rollback_leaves_nothing() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    make_orders(&db)?;
    let mut tx = db.engine.begin()?;
    assert_eq!(tx.execute(&format!("INSERT INTO {} (user_id) VALUES ($1)", orders(&db)), &[SqlValue::Int(42)])?, 1);
    let id = db.engine.enqueue(Some(tx.as_mut()), "q", &opts(30, 3), &[job("{}")])?[0];
    let seen = db.engine.get_job(Some(tx.as_mut()), "q", id)?.ok_or("tx sees its own write")?;
    assert_eq!(seen.state, JobState::Pending);
    assert!(db.engine.get_job(None, "q", id)?.is_none(), "invisible outside the tx");
    tx.rollback()?;
    assert!(db.engine.get_job(None, "q", id)?.is_none());
    assert_eq!(count_orders(&db)?, 0);
    assert_eq!(db.engine.stats("q")?.pending, 0);
    Ok(())
}

#[test]
fn commit_lands_business_write_and_job_together() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    make_orders(&db)?;
    let mut tx = db.engine.begin()?;
    let rows = tx.query(
        &format!("INSERT INTO {} (user_id) VALUES ($1) RETURNING id, user_id", orders(&db)),
        &[SqlValue::Int(7)],
    )?;
    assert_eq!(rows[0][1], ("user_id".to_owned(), SqlValue::Int(7)));
    let id = db.engine.enqueue(Some(tx.as_mut()), "q", &opts(30, 3), &[job("{\"order\": 1}"), job("2")])?;
    tx.commit()?;
    assert_eq!(count_orders(&db)?, 1);
    assert_eq!(db.engine.get_job(None, "q", id[0])?.ok_or("committed")?.payload, "{\"order\": 1}");
    Ok(())
}

#[test]
fn handle_ops_inside_a_transaction_land_only_on_commit() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let ids = db.engine.enqueue(None, "q", &opts(30, 3), &[job("a"), job("b"), job("c"), job("d")])?;
    let got = common::claim(&*db.engine, "q", "w", 4)?;
    let mut tx = db.engine.begin()?;
    assert_eq!(db.engine.ack(Some(tx.as_mut()), &[&got[0]])?, 1);
    assert!(common::retry(&*db.engine, Some(tx.as_mut()), &got[1], "later", Some(5))?);
    assert!(db.engine.fail(Some(tx.as_mut()), &got[2], "bad")?);
    assert!(db.engine.cancel(Some(tx.as_mut()), "q", ids[3])?);
    tx.rollback()?;
    let s = db.engine.stats("q")?;
    assert_eq!((s.processing, s.dead), (4, 0), "rolled back: nothing changed");

    let mut tx = db.engine.begin()?;
    assert_eq!(db.engine.ack(Some(tx.as_mut()), &[&got[0]])?, 1);
    assert!(db.engine.fail(Some(tx.as_mut()), &got[2], "bad")?);
    tx.commit()?;
    assert!(db.engine.get_job(None, "q", ids[0])?.is_none());
    assert_eq!(db.engine.get_job(None, "q", ids[2])?.ok_or("dead")?.last_error.as_deref(), Some("bad"));
    Ok(())
}

#[test]
fn user_sql_error_carries_the_sqlstate_and_aborts_the_tx() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    make_orders(&db)?;
    let mut tx = db.engine.begin()?;
    let e = tx.execute("SELECT * FROM no_such_table_here", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "42P01"), "{e:?}");
    let e = tx.execute("SELECT 1", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "25P02"), "{e:?}");
    // Refusing the commit of a doomed transaction is the Store session's
    // rule (store_front_runs_the_seam_end_to_end), not the engine's.
    tx.rollback()?;

    let mut tx = db.engine.begin()?;
    tx.execute(&format!("INSERT INTO {} (user_id) VALUES (1)", orders(&db)), &[])?;
    let e = tx.execute(&format!("INSERT INTO {} (user_id) VALUES (1)", orders(&db)), &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "23505"), "{e:?}");
    tx.rollback()?;
    assert_eq!(count_orders(&db)?, 0);
    Ok(())
}

#[test]
fn parameters_and_columns_convert_by_type() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
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
    let Some(db) = TestDb::new()? else { return Ok(()) };
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

#[test]
fn a_dropped_transaction_rolls_back_and_frees_its_connection() -> TestResult {
    let Some(db) = TestDb::with_pool(1)? else { return Ok(()) };
    let mut tx = db.engine.begin()?;
    let id = db.engine.enqueue(Some(tx.as_mut()), "q", &opts(30, 3), &[job("{}")])?[0];
    drop(tx);
    // With one connection, this call waits for the background rollback to
    // return it, then must find it outside any transaction.
    assert!(db.engine.get_job(None, "q", id)?.is_none());
    let id2 = db.put("q", &opts(30, 3), "{}")?;
    assert!(db.engine.get_job(None, "q", id2)?.is_some());
    Ok(())
}

#[test]
fn a_transaction_of_another_store_is_refused() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let other = db.reopen()?;
    let mut tx = other.begin()?;
    let e = db.engine.enqueue(Some(tx.as_mut()), "q", &opts(30, 3), &[job("{}")]).unwrap_err();
    assert!(matches!(e, Error::Transaction(_)), "{e:?}");
    tx.rollback()?;
    Ok(())
}

#[test]
fn store_front_runs_the_seam_end_to_end() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let store = Store::new(db.reopen()?, db.options.common.clone());
    let mut tx = store.begin()?;
    let ids = store.enqueue(Some(&mut tx), "q", &opts(30, 3), &[job("1")])?;
    assert!(store.stats("q").is_err(), "a call without tx from the tx's thread is refused");
    let e = tx.execute("SELECT 1/0", &[]).unwrap_err();
    assert!(matches!(&e, Error::Database { code: Some(c), .. } if c == "22012"), "{e:?}");
    assert!(matches!(tx.commit(), Err(Error::Transaction(_))));
    assert!(store.get_job(None, "q", ids[0])?.is_none());
    Ok(())
}
