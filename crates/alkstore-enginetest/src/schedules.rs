//! Schedules (SPEC §8): registration keeps or moves the next boundary, and a
//! tick fires each due boundary exactly once, capped.

use std::sync::Barrier;

use alkstore_core::schedule::{next_boundary_after, Timetable, MAX_CATCH_UP};
use alkstore_core::{NewSchedule, ScheduleRow, Store, TickReport};

use crate::{Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __schedules_cases { ($harness:ty) => { $crate::__cases! { $harness; schedules {
    upsert_keeps_the_boundary_for_the_same_interval, tick_fires_due_boundaries_with_the_row_stamps,
    catch_up_is_capped, rogue_tickers_fire_each_boundary_once,
    a_cron_schedule_fires_at_its_zones_wall_clock_and_keeps_its_next_fire,
} } } }

/// One tick: core's loop over the engine's due schedules, as the runner
/// calls it (the front has no tick of its own).
fn tick(s: &Store) -> alkstore_core::Result<TickReport> {
    alkstore_core::schedule::tick::tick(&**s.engine())
}

fn every(name: &str, spec: &str) -> NewSchedule {
    NewSchedule {
        name: name.to_owned(),
        spec: spec.to_owned(),
        queue: "q".to_owned(),
        payload: r#"{"tick":1}"#.to_owned(),
        priority: 7,
        max_attempts: Some(9),
        expires_s: None,
        tz: "UTC".to_owned(),
    }
}

fn stored(s: &Store, name: &str) -> TestResult<ScheduleRow> {
    Ok(s.schedules()?.into_iter().find(|r| r.name == name).ok_or("schedule stored")?)
}

pub fn upsert_keeps_the_boundary_for_the_same_interval<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let before = db.now()?;
    s.schedule(None, &every("s", "@every 60s"))?;
    let first = stored(s, "s")?;
    assert_eq!(first.interval_s, 60);
    assert!(first.next_fire_at > before && first.next_fire_at % 60 == 0);
    assert!(first.next_fire_at <= next_boundary_after(db.now()?, 60));
    db.clock(600)?;
    s.schedule(None, &NewSchedule { priority: 1, ..every("s", "@every 1m") })?;
    let again = stored(s, "s")?;
    assert_eq!(again.next_fire_at, first.next_fire_at, "kept");
    assert_eq!((again.spec.as_str(), again.priority), ("@every 1m", 1));
    s.schedule(None, &every("s", "@every 7s"))?;
    let changed = stored(s, "s")?;
    assert_eq!(changed.next_fire_at, next_boundary_after(db.now()?, 7));
    assert!(s.unschedule(None, "s")?);
    assert!(!s.unschedule(None, "s")?);
    Ok(())
}

pub fn tick_fires_due_boundaries_with_the_row_stamps<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.schedule(None, &every("s", "@every 10s"))?;
    let nf = stored(s, "s")?.next_fire_at;
    assert_eq!(tick(s)?.fired, 0, "nothing due yet");
    db.clock(nf - db.now()? + 25)?; // boundaries nf, nf+10, nf+20
    let r = tick(s)?;
    assert_eq!((r.fired, r.skipped, r.next_due), (3, 0, Some(nf + 30)));
    let jobs = s.claim("q", "w", 10)?;
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        assert_eq!((j.priority, j.max_attempts, j.visibility_timeout_s), (7, 9, 300));
        assert_eq!(j.payload, r#"{"tick":1}"#);
    }
    assert_eq!(tick(s)?.fired, 0, "a second tick fires nothing");
    Ok(())
}

pub fn catch_up_is_capped<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.schedule(None, &every("s", "@every 10s"))?;
    db.clock(200 * 10)?;
    let r = tick(s)?;
    assert_eq!(r.fired, MAX_CATCH_UP as i64);
    assert!(r.skipped >= 200 - 64);
    assert!(r.next_due.ok_or("a next boundary")? > db.now()?);
    assert_eq!(s.stats("q")?.pending, MAX_CATCH_UP as i64);
    Ok(())
}

/// Two tickers with no leadership lock, racing on every boundary: the
/// conditional advance under the row lock fires each boundary once.
pub fn rogue_tickers_fire_each_boundary_once<H: Harness>(db: &Db<H>) -> TestResult {
    let other = db.reopen()?;
    let stores = [&db.store, &other];
    db.store.schedule(None, &every("s", "@every 10s"))?;
    let first = stored(&db.store, "s")?.next_fire_at;
    let rounds = 30;
    let barrier = Barrier::new(stores.len());
    let fired = std::thread::scope(|scope| {
        let threads: Vec<_> = stores
            .iter()
            .map(|s| {
                let barrier = &barrier;
                scope.spawn(move || -> alkstore_core::Result<i64> {
                    let mut fired = 0;
                    for _ in 0..rounds {
                        s.advance_clock(10)?;
                        barrier.wait();
                        fired += tick(s)?.fired;
                    }
                    Ok(fired)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("ticker thread")).sum::<alkstore_core::Result<i64>>()
    })?;
    let last = stored(&db.store, "s")?.next_fire_at;
    let boundaries = (last - first) / 10;
    assert!(boundaries >= rounds - 1, "the clock moved {rounds} intervals");
    assert_eq!(fired, boundaries);
    assert_eq!(db.store.stats("q")?.pending, boundaries);
    Ok(())
}

/// SPEC §23: a cron schedule in a zone fires through the same tick; an equal
/// spec and zone (in other words: `1-5` is `MON-FRI`) keep the next fire, a
/// changed zone recomputes it, and `@every` ignores the zone.
pub fn a_cron_schedule_fires_at_its_zones_wall_clock_and_keeps_its_next_fire<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let berlin = |spec: &str| NewSchedule { tz: "Europe/Berlin".to_owned(), ..every("c", spec) };
    s.schedule(None, &berlin("0 9 * * MON-FRI"))?;
    let first = stored(s, "c")?;
    let table = Timetable::new("0 9 * * 1-5", "Europe/Berlin")?;
    assert_eq!((first.tz.as_str(), first.interval_s), ("Europe/Berlin", 0));
    assert_eq!(first.next_fire_at, table.next_after(db.now()?), "the first fire after now, in Berlin");
    db.clock(3600)?;
    s.schedule(None, &berlin("0 9 * * 1-5"))?;
    let again = stored(s, "c")?;
    assert_eq!((again.next_fire_at, again.spec.as_str()), (first.next_fire_at, "0 9 * * 1-5"), "kept");
    s.schedule(None, &NewSchedule { tz: "America/New_York".to_owned(), ..every("c", "0 9 * * 1-5") })?;
    let moved = stored(s, "c")?;
    let ny = Timetable::new("0 9 * * 1-5", "America/New_York")?.next_after(db.now()?);
    assert_eq!((moved.tz.as_str(), moved.next_fire_at), ("America/New_York", ny), "another zone: recomputed");
    // Due: the tick fires the boundary once and moves to the next weekday's 09:00.
    db.clock(moved.next_fire_at - db.now()? + 5)?;
    let r = tick(s)?;
    assert_eq!(r.fired, 1);
    let after = stored(s, "c")?;
    let table = Timetable::new("0 9 * * 1-5", "America/New_York")?;
    assert_eq!(after.next_fire_at, table.next_after(moved.next_fire_at));
    assert_eq!(s.claim("q", "w", 10)?.len(), 1);
    // @every ignores the zone: changing only the zone keeps its next fire.
    s.schedule(None, &every("e", "@every 60s"))?;
    let e = stored(s, "e")?;
    s.schedule(None, &NewSchedule { tz: "Asia/Tokyo".to_owned(), ..every("e", "@every 1m") })?;
    assert_eq!(stored(s, "e")?.next_fire_at, e.next_fire_at);
    Ok(())
}
