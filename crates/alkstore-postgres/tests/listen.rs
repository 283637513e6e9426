//! The Postgres wake feed (SPEC §5): LISTEN/NOTIFY into the store's hub,
//! one listener connection that survives its loss and ends with the store.
//! Commits waking waiters is in the conformance suite.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::WakeHub;
use alkstore_postgres::PgOptions;
use common::{admin, job, opts, raw_client, TestDb, TestResult};

/// Waits up to `within` for `hub` to move past `seen`.
fn bumped(hub: &WakeHub, seen: u64, within: Duration) -> bool {
    hub.wait(seen, Instant::now() + within)
}

fn listener_pids(db: &TestDb) -> Result<Vec<i64>, Box<dyn std::error::Error>> {
    let c = raw_client()?;
    let rows = alkstore_postgres::block_on(c.query(
        "SELECT pid::int8 FROM pg_stat_activity WHERE query = $1",
        &[&format!("LISTEN \"alkstore_{}\"", db.schema)],
    ))??;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

#[test]
fn a_lost_listen_connection_reconnects_and_wakes_everyone() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let hub = Arc::new(WakeHub::new());
    db.engine.start_wakes(hub.clone())?;
    let pids = listener_pids(&db)?;
    assert_eq!(pids.len(), 1, "{pids:?}");
    let seen = hub.generation();
    admin(&format!("SELECT pg_terminate_backend({})", pids[0]))?;
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "the loss itself wakes waiters");
    let deadline = Instant::now() + Duration::from_secs(10);
    while listener_pids(&db)?.iter().all(|p| *p == pids[0]) {
        assert!(Instant::now() < deadline, "the listener did not come back");
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = hub.generation();
    db.reopen()?.enqueue(None, "q", &opts(), &[job("{}")])?;
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "notifications flow again");
    Ok(())
}

#[test]
fn close_ends_the_listener_and_listen_false_never_starts_one() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let quiet = alkstore_postgres::open(&common::url(), &PgOptions { listen: false, ..db.options.clone() })?;
    quiet.start_wakes(Arc::new(WakeHub::new()))?;
    assert!(listener_pids(&db)?.is_empty());
    db.engine.start_wakes(Arc::new(WakeHub::new()))?;
    assert_eq!(listener_pids(&db)?.len(), 1);
    db.engine.close();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !listener_pids(&db)?.is_empty() {
        assert!(Instant::now() < deadline, "the listener outlived close");
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}
