//! The wake feed (SPEC §5): LISTEN/NOTIFY into the store's hub, and the
//! earliest future instant a queue gains work.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{NewJob, OpenOptions, ReadyAt, StopToken, Store, WaitSpec, WakeHub};
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
fn next_wake_is_the_earliest_future_ready_time_or_lease_end() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(100, 3);
    assert_eq!(db.engine.next_wake("q")?, None);
    db.put("q", &q, "ready now")?;
    assert_eq!(db.engine.next_wake("q")?, None, "ready work is not a future wake");
    let now = db.engine.now()?;
    let later = |p: i32, at: i64| NewJob { priority: p, ready: ReadyAt::At(at), ..job("later") };
    db.engine.enqueue(None, "q", &q, &[later(5, now + 500), later(0, now + 300), later(-2, now + 400)])?;
    assert_eq!(db.engine.next_wake("q")?, Some(now + 300));
    // Claiming the ready job adds a lease ending before the earliest run_at.
    let c = db.take("q", "w")?;
    assert!(c.deadline + 1 < now + 300);
    assert_eq!(db.engine.next_wake("q")?, Some(c.deadline + 1));
    assert_eq!(db.engine.next_wake("other")?, None);
    db.engine.advance_clock(1000);
    assert_eq!(db.engine.next_wake("q")?, None, "everything is due: nothing in the future");
    Ok(())
}

#[test]
fn commits_wake_the_hub_and_rollbacks_do_not() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let hub = Arc::new(WakeHub::new());
    db.engine.start_wakes(hub.clone())?;
    // Another store handle (its own pool) does the writing.
    let writer = db.reopen()?;
    let seen = hub.generation();
    let mut tx = writer.begin()?;
    writer.enqueue(Some(tx.as_mut()), "q", &opts(30, 3), &[job("{}")])?;
    assert!(!bumped(&hub, seen, Duration::from_millis(300)), "nothing before commit");
    tx.rollback()?;
    assert!(!bumped(&hub, seen, Duration::from_millis(300)), "nothing for a rollback");
    writer.enqueue(None, "q", &opts(30, 3), &[job("{}")])?;
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "an enqueue commit wakes");
    let seen = hub.generation();
    let c = writer.claim("q", "w", 1)?.pop().ok_or("claim")?;
    assert!(writer.release(&c)?);
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "a release makes work claimable");
    Ok(())
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
    db.reopen()?.enqueue(None, "q", &opts(30, 3), &[job("{}")])?;
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

#[test]
fn a_waiting_claim_is_woken_by_another_stores_commit() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    // A long safety-net poll, so only the notification can explain a quick wake.
    let options = OpenOptions { poll_interval_s: 30.0, ..db.options.common.clone() };
    let store = Store::new(db.reopen()?, options);
    let writer = db.reopen()?;
    let never = || false;
    let stop = StopToken::new();
    let (claimed, id) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            // Without a wake this would wait out the full timeout and return nothing.
            let spec = WaitSpec { timeout: Some(Duration::from_secs(20)), stops: &[&stop], interrupted: &never };
            store.claim_wait("q", "w", 1, &spec)
        });
        std::thread::sleep(Duration::from_millis(500));
        let id = writer.enqueue(None, "q", &opts(30, 3), &[job("{}")]);
        (waiter.join().expect("waiter panicked"), id)
    });
    assert_eq!(claimed?.iter().map(|c| c.id).collect::<Vec<_>>(), id?);
    Ok(())
}
