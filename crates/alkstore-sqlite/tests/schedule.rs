//! Locks (SPEC §10) and schedules (SPEC §8) at the engine level; the
//! Python conformance suite covers the same contract through `Store`.

mod common;

use std::sync::{Arc, Barrier};

use alkstore_core::schedule::{next_boundary_after, MAX_CATCH_UP};
use alkstore_core::{Engine, Result, ScheduleRow};
use common::Fixture;

fn every(name: &str, interval_s: i64) -> ScheduleRow {
    ScheduleRow {
        name: name.to_owned(),
        spec: format!("@every {interval_s}s"),
        interval_s,
        queue: "q".to_owned(),
        payload: r#"{"tick":1}"#.to_owned(),
        priority: 7,
        max_attempts: Some(9),
        expires_s: None,
        next_fire_at: 0,
    }
}

fn stored(e: &dyn Engine, name: &str) -> Result<ScheduleRow> {
    Ok(e.schedule_list()?.into_iter().find(|r| r.name == name).expect("schedule stored"))
}

#[test]
fn lock_lease_rules() -> Result<()> {
    let f = Fixture::new()?;
    let (a, b) = (&f.engine, f.reopen()?);
    assert!(a.lock_acquire("l", "me", 30)?);
    assert!(!b.lock_acquire("l", "you", 30)?, "held by another owner");
    assert!(b.lock_acquire("l", "me", 30)?, "the same owner re-acquires");
    assert!(a.lock_renew("l", "me", 30)?);
    assert!(!a.lock_renew("l", "you", 30)?);
    // Past the lease on b's clock: lapsed, so another owner takes it.
    b.advance_clock(31);
    assert!(b.lock_acquire("l", "you", 30)?);
    assert!(!a.lock_renew("l", "me", 30)?, "lost");
    assert!(!a.lock_release("l", "me")?);
    assert!(a.lock_release("l", "you")?);
    assert!(a.lock_acquire("l", "me", 30)?, "free again");
    Ok(())
}

#[test]
fn a_lapsed_lease_is_not_renewed_even_when_nobody_took_it() -> Result<()> {
    let f = Fixture::new()?;
    let b = f.reopen()?;
    assert!(f.engine.lock_acquire("l", "me", 10)?);
    b.advance_clock(11);
    assert!(!b.lock_renew("l", "me", 10)?, "past expires_at on b's clock");
    assert!(f.engine.lock_renew("l", "me", 10)?, "still inside it on a's");
    Ok(())
}

#[test]
fn upsert_keeps_the_boundary_for_the_same_interval() -> Result<()> {
    let f = Fixture::new()?;
    let e = &f.engine;
    let before = e.now()?;
    e.schedule_upsert(None, &every("s", 60))?;
    let first = stored(e.as_ref(), "s")?;
    assert!(first.next_fire_at > before && first.next_fire_at % 60 == 0);
    assert!(first.next_fire_at <= next_boundary_after(e.now()?, 60));
    e.advance_clock(600);
    e.schedule_upsert(None, &ScheduleRow { spec: "@every 1m".into(), priority: 1, ..every("s", 60) })?;
    let again = stored(e.as_ref(), "s")?;
    assert_eq!(again.next_fire_at, first.next_fire_at, "kept");
    assert_eq!((again.spec.as_str(), again.priority), ("@every 1m", 1));
    e.schedule_upsert(None, &every("s", 7))?;
    let changed = stored(e.as_ref(), "s")?;
    assert_eq!(changed.next_fire_at, next_boundary_after(e.now()?, 7));
    assert!(e.schedule_delete(None, "s")?);
    assert!(!e.schedule_delete(None, "s")?);
    Ok(())
}

#[test]
fn tick_fires_due_boundaries_with_the_row_stamps() -> Result<()> {
    let f = Fixture::new()?;
    let e = &f.engine;
    e.schedule_upsert(None, &every("s", 10))?;
    let nf = stored(e.as_ref(), "s")?.next_fire_at;
    assert_eq!(alkstore_core::schedule::tick::tick(&**e)?.fired, 0, "nothing due yet");
    e.advance_clock(nf - e.now()? + 25); // boundaries nf, nf+10, nf+20
    let r = alkstore_core::schedule::tick::tick(&**e)?;
    assert_eq!((r.fired, r.skipped, r.next_due), (3, 0, Some(nf + 30)));
    let jobs = e.claim("q", "w", 10)?;
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        assert_eq!((j.priority, j.max_attempts, j.visibility_timeout_s), (7, 9, 300));
        assert_eq!(j.payload, r#"{"tick":1}"#);
    }
    assert_eq!(alkstore_core::schedule::tick::tick(&**e)?.fired, 0, "a second tick fires nothing");
    Ok(())
}

#[test]
fn catch_up_is_capped() -> Result<()> {
    let f = Fixture::new()?;
    let e = &f.engine;
    e.schedule_upsert(None, &every("s", 10))?;
    e.advance_clock(200 * 10);
    let r = alkstore_core::schedule::tick::tick(&**e)?;
    assert_eq!(r.fired, MAX_CATCH_UP as i64);
    assert!(r.skipped >= 200 - 64);
    assert!(r.next_due.unwrap() > e.now()?);
    assert_eq!(e.stats("q")?.pending, MAX_CATCH_UP as i64);
    Ok(())
}

/// Two tickers with no leadership lock, racing on every boundary: the
/// conditional advance under the writer lock fires each boundary once.
#[test]
fn rogue_tickers_fire_each_boundary_once() -> Result<()> {
    let f = Fixture::new()?;
    let handles: Vec<Arc<dyn Engine>> = vec![f.engine.clone(), f.reopen()?];
    f.engine.schedule_upsert(None, &every("s", 10))?;
    let first = stored(f.engine.as_ref(), "s")?.next_fire_at;
    let rounds = 30;
    let barrier = Arc::new(Barrier::new(handles.len()));
    let threads: Vec<_> = handles
        .iter()
        .map(|h| {
            let (h, barrier) = (h.clone(), barrier.clone());
            std::thread::spawn(move || -> Result<i64> {
                let mut fired = 0;
                for _ in 0..rounds {
                    h.advance_clock(10);
                    barrier.wait();
                    fired += alkstore_core::schedule::tick::tick(&*h)?.fired;
                }
                Ok(fired)
            })
        })
        .collect();
    let fired: i64 = threads.into_iter().map(|t| t.join().expect("ticker thread")).sum::<Result<i64>>()?;
    let last = stored(f.engine.as_ref(), "s")?.next_fire_at;
    let boundaries = (last - first) / 10;
    assert!(boundaries >= rounds - 1, "the clock moved {rounds} intervals");
    assert_eq!(fired, boundaries);
    assert_eq!(f.engine.stats("q")?.pending, boundaries);
    Ok(())
}
