//! Expiry and retention (SPEC §4.5): what a sweep moves to dead and purges,
//! to the second.

use alkstore_core::{JobState, NewJob, QueueOpts, Swept};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __sweep_cases { ($harness:ty) => { $crate::__cases! { $harness; sweep {
    sweep_moves_expired_rows_and_purges_by_retention, a_zero_retention_purges_in_the_same_sweep,
    expired_rows_are_not_claimable, boundaries_are_exact_to_the_second,
} } } }

/// Expired pending and processing rows go to dead as 'expired'; the holder
/// of an expired row keeps a valid handle until the sweep.
pub fn sweep_moves_expired_rows_and_purges_by_retention<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let keep_forever = opts();
    let keep_100 = QueueOpts { dead_letter_retention_s: Some(100), ..opts() };
    let p = db.put_job("q", &keep_100, NewJob { expires_s: Some(60), ..job("pending") })?;
    let h = db.put_job("q", &keep_forever, NewJob { expires_s: Some(60), ..job("held") })?;
    // Below the others, so the two-job claim below takes "pending" and "held"
    // whatever second the release lands in (a release moves run_at to now).
    let live = db.put_job("q", &opts(), NewJob { priority: -1, expires_s: Some(1000), ..job("live") })?;
    let other = db.put_job("other", &opts(), NewJob { expires_s: Some(60), ..job("other") })?;
    let first = db.take("q", "w")?;
    assert_eq!(first.id, p);
    // Make "pending" pending again and keep "held" leased past expiry.
    assert!(s.release(&first)?);
    let held = s.claim("q", "w", 2)?.into_iter().find(|j| j.id == h).ok_or("held")?;
    assert_eq!(s.sweep_expired("q")?, Swept::default());
    db.clock(20)?;
    assert!(s.heartbeat(&held, Some(500))?.is_some());
    db.clock(45)?;
    // Expired but unswept: the holder's handle is still valid (SPEC §4.3).
    assert!(s.heartbeat(&held, Some(500))?.is_some());
    assert_eq!(s.sweep_expired("q")?, Swept { expired: 2, purged: 0 });
    assert_eq!(s.sweep_expired("q")?, Swept::default(), "nothing moves twice");
    for id in [p, h] {
        let d = s.get_job(None, "q", id)?.ok_or("dead row")?;
        assert_eq!((d.state, d.last_error.as_deref()), (JobState::Dead, Some("expired")));
    }
    assert_eq!(s.get_job(None, "q", h)?.ok_or("dead row")?.worker_id.as_deref(), Some("w"));
    // The holder of an expired-and-swept job finds it gone.
    assert_eq!(s.ack(None, &[&held])?, 0);
    assert_eq!(s.get_job(None, "q", live)?.ok_or("job")?.state, JobState::Pending);
    assert_eq!(s.get_job(None, "other", other)?.ok_or("job")?.state, JobState::Pending, "this queue only");
    db.clock(101)?;
    assert_eq!(s.sweep_expired("q")?, Swept { expired: 0, purged: 1 });
    assert!(s.get_job(None, "q", p)?.is_none(), "retention purged the dead row");
    assert!(s.get_job(None, "q", h)?.is_some(), "no retention: kept forever");
    Ok(())
}

/// A zero retention purges at once; expired rows are not claimable.
pub fn a_zero_retention_purges_in_the_same_sweep<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let keep = QueueOpts { visibility_timeout_s: 300, ..opts() };
    let short = QueueOpts { dead_letter_retention_s: Some(50), ..keep };
    let zero = QueueOpts { dead_letter_retention_s: Some(0), ..keep };
    let exp = |p: &str| NewJob { expires_s: Some(10), ..job(p) };
    let p = db.put_job("q", &keep, exp("pending"))?;
    let w = db.put_job("q", &short, exp("processing"))?;
    let z = db.put_job("q", &zero, exp("zero"))?;
    let forever = db.put("q", &keep, "no expiry")?;
    let held = s.claim("q", "w", 4)?;
    for c in held.iter().filter(|c| c.id != w) {
        assert!(s.release(c)?);
    }
    // Margins of seconds: the real clock ticks under the test too (the exact
    // boundary is checked in `boundaries_are_exact_to_the_second`).
    db.clock(6)?;
    assert_eq!(s.sweep_expired("q")?.expired, 0, "not yet");
    db.clock(4)?;
    assert!(s.claim("q", "x", 10)?.iter().all(|c| c.id == forever), "expired rows are not claimable");
    assert_eq!(s.sweep_expired("q")?, Swept { expired: 3, purged: 1 }, "the zero-retention row is purged at once");
    for id in [p, w] {
        let j = s.get_job(None, "q", id)?.ok_or("dead row")?;
        assert_eq!((j.state, j.last_error.as_deref()), (JobState::Dead, Some("expired")));
    }
    assert!(s.get_job(None, "q", z)?.is_none());
    assert_eq!(s.get_job(None, "q", w)?.ok_or("dead row")?.worker_id.as_deref(), Some("w"));
    let held_w = held.iter().find(|c| c.id == w).ok_or("w claimed")?;
    assert_eq!(s.ack(None, &[held_w])?, 0, "the holder of a swept job finds it gone");
    assert_eq!(s.sweep_expired("q")?, Swept::default());
    db.clock(50)?;
    assert_eq!(s.sweep_expired("q")?, Swept { expired: 0, purged: 1 });
    assert!(s.get_job(None, "q", w)?.is_none());
    assert_eq!(s.get_job(None, "q", p)?.ok_or("kept forever")?.state, JobState::Dead);
    Ok(())
}

pub fn expired_rows_are_not_claimable<H: Harness>(db: &Db<H>) -> TestResult {
    db.put_job("q", &opts(), NewJob { expires_s: Some(10), ..job("x") })?;
    db.clock(11)?;
    assert!(db.one("q", "w")?.is_none());
    Ok(())
}

/// Sets the store's clock so that `now == target`, runs `check`, and reports
/// whether the clock still read `target` afterwards (a real-clock tick in
/// between makes the run inconclusive, and the caller tries again).
fn at_second<H: Harness>(db: &Db<H>, target: i64, check: impl FnOnce() -> TestResult) -> TestResult<bool> {
    db.clock(target - db.now()?)?;
    check()?;
    Ok(db.now()? == target)
}

pub fn boundaries_are_exact_to_the_second<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    // A lease is valid through its deadline second (now <= deadline).
    let mut conclusive = false;
    for _ in 0..5 {
        db.put("lease", &opts(), "{}")?;
        let c = db.take("lease", "w")?;
        let mut landed = 0;
        if at_second(db, c.deadline, || {
            landed = s.ack(None, &[&c])?;
            Ok(())
        })? {
            assert_eq!(landed, 1, "an ack at the deadline second lands");
            conclusive = true;
            break;
        }
        s.cancel(None, "lease", c.id)?;
    }
    assert!(conclusive, "the clock ticked during every try");
    // A job is claimable while now < expires_at and swept once now >= expires_at.
    let mut conclusive = false;
    for _ in 0..5 {
        let id = db.put_job("exp", &opts(), NewJob { expires_s: Some(100), ..job("{}") })?;
        let expires_at = s.get_job(None, "exp", id)?.ok_or("job")?.expires_at.ok_or("expiry")?;
        let mut swept = -1;
        if !at_second(db, expires_at - 1, || {
            swept = s.sweep_expired("exp")?.expired;
            Ok(())
        })? {
            s.cancel(None, "exp", id)?;
            continue;
        }
        assert_eq!(swept, 0, "one second before expires_at the job stays");
        let mut claimed = Vec::new();
        if at_second(db, expires_at - 1, || {
            claimed = s.claim("exp", "w", 1)?;
            Ok(())
        })? {
            assert_eq!(claimed.len(), 1, "and is still claimable");
            assert!(s.release(&claimed[0])?);
        }
        if at_second(db, expires_at, || {
            assert!(s.claim("exp", "w", 1)?.is_empty(), "not claimable at expires_at");
            swept = s.sweep_expired("exp")?.expired;
            Ok(())
        })? {
            assert_eq!(swept, 1, "swept at expires_at");
            conclusive = true;
            break;
        }
    }
    assert!(conclusive, "the clock ticked during every try");
    Ok(())
}
