//! The wake feed: a commit from another handle bumps the hub; `next_wake`
//! finds the earliest future run_at or lease deadline.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{NewJob, QueueOpts, ReadyAt, Result, WakeHub};
use alkstore_sqlite::SqliteOptions;

fn job(ready: ReadyAt) -> NewJob {
    NewJob { payload: "{}".into(), ready, priority: 0, max_attempts: None, expires_s: None }
}

#[test]
fn commit_from_another_handle_bumps_the_hub() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("w.db");
    let path = path.to_str().expect("utf-8 path");
    let waiter = alkstore_sqlite::open(path, &SqliteOptions::default())?;
    let writer = alkstore_sqlite::open(path, &SqliteOptions::default())?;
    let hub = Arc::new(WakeHub::new());
    waiter.start_wakes(hub.clone())?;
    let seen = hub.generation();
    writer.enqueue(None, "q", &QueueOpts::default(), &[job(ReadyAt::Now)])?;
    assert!(hub.wait(seen, Instant::now() + Duration::from_secs(2)), "no wake within 2 s of a commit");
    waiter.close();
    Ok(())
}

#[test]
fn next_wake_is_the_earliest_deadline() -> Result<()> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("n.db");
    let e = alkstore_sqlite::open(path.to_str().expect("utf-8 path"), &SqliteOptions::default())?;
    assert_eq!(e.next_wake("q")?, None);
    let now = e.now()?;
    e.enqueue(None, "q", &QueueOpts::default(), &[job(ReadyAt::Delay(50)), job(ReadyAt::Delay(20))])?;
    assert_eq!(e.next_wake("q")?, Some(now + 20));
    assert_eq!(e.next_wake("other")?, None);
    // A lease that lapses sooner than any delayed job wins.
    let opts = QueueOpts { visibility_timeout_s: 5, ..QueueOpts::default() };
    e.enqueue(None, "q", &opts, &[job(ReadyAt::Now)])?;
    let c = e.claim("q", "w", 1)?;
    assert_eq!(e.next_wake("q")?, Some(c[0].deadline + 1));
    Ok(())
}
