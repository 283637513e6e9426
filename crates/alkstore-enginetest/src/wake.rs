//! Waking waiters (SPEC §5): commits feed the store's wake hub, and
//! `next_wake` names the earliest instant a queue gains work without one.

use std::time::{Duration, Instant};

use alkstore_core::{EngineOptions, LimitChange, NewJob, ReadyAt, StopToken, WaitSpec, WakeHub};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __wake_cases { ($harness:ty) => { $crate::__cases! { $harness; wake {
    next_wake_is_the_earliest_future_ready_time_or_lease_end, next_wake_names_the_instant_a_rate_window_opens,
    commits_wake_the_hub_and_rollbacks_do_not,
    a_waiting_claim_is_woken_by_another_stores_commit, a_stopped_caller_claims_nothing_whatever_the_timeout,
    a_lease_lapsing_between_a_look_and_the_next_wake_is_reclaimed_at_once,
} } } }

/// Waits up to `within` for `hub` to move past `seen`.
fn bumped(hub: &WakeHub, seen: u64, within: Duration) -> bool {
    hub.wait(seen, Instant::now() + within)
}

/// `next_wake` is engine-only (the front's wait loop calls it): this
/// domain's one raw engine call. It answers how long until the instant, in
/// seconds to the sub-second from the database clock's present instant:
/// never more than `at - now` for a whole-second clock that read `now`
/// before, and less only by that second's fraction and the time since (a
/// few seconds' slack for a loaded machine still tells the rows apart).
pub fn next_wake_is_the_earliest_future_ready_time_or_lease_end<H: Harness>(db: &Db<H>) -> TestResult {
    let next_wake = |q: &str| db.engine().next_wake(q);
    let near = |got: Option<f64>, at: i64, now: i64| {
        let away = (at - now) as f64;
        got.is_some_and(|s| s > away - 5.0 && s <= away)
    };
    let q = alkstore_core::QueueOpts { visibility_timeout_s: 100, ..opts() };
    assert_eq!(next_wake("q")?, None);
    db.put("q", &q, "ready now")?;
    assert_eq!(next_wake("q")?, None, "ready work is not a future wake");
    let now = db.now()?;
    let later = |p: i32, at: i64| NewJob { priority: p, ready: ReadyAt::At(at), ..job("later") };
    db.store.enqueue(None, "q", &q, &[later(5, now + 500), later(0, now + 300), later(-2, now + 400)])?;
    db.store.enqueue(None, "q", &q, &[NewJob { ready: ReadyAt::Delay(350), ..job("delayed") }])?;
    let got = next_wake("q")?;
    assert!(near(got, now + 300, now), "{got:?}: the job due 300 s on");
    assert_eq!(next_wake("other")?, None);
    // Claiming the ready job adds a lease ending before the earliest run_at:
    // a lease that lapses sooner than any delayed job wins.
    let c = db.take("q", "w")?;
    assert!(c.deadline + 1 < now + 300);
    let got = next_wake("q")?;
    assert!(near(got, c.deadline + 1, now), "{got:?}: the lease, reclaimable at {}", c.deadline + 1 - now);
    db.clock(1000)?;
    assert_eq!(next_wake("q")?, None, "everything is due: nothing in the future");
    Ok(())
}

/// A rate window opens between two whole seconds, and `next_wake` names that
/// instant, not the second after it (issue 43): after the one claim a
/// `rate=(1, 0.5)` window allows, the next is at most half a second away
/// (SQLite logs a claim at the end of its 1/64 slice of the window).
pub fn next_wake_names_the_instant_a_rate_window_opens<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("q", &opts(), "1")?;
    db.put("q", &opts(), "2")?;
    s.set_limits("q", &LimitChange { rate: Some(Some((1, 0.5))), ..LimitChange::default() })?;
    assert_eq!(db.engine().next_wake("q")?, None, "nothing claimed: the window is open");
    assert_eq!(s.claim("q", "w", 1)?.len(), 1);
    assert!(s.claim("q", "w", 1)?.is_empty(), "the window is full");
    let away = db.engine().next_wake("q")?.ok_or("the window opens")?;
    assert!(away > 0.0 && away <= 0.5 + 0.5 / 64.0, "opens {away:.3} s on");
    Ok(())
}

pub fn commits_wake_the_hub_and_rollbacks_do_not<H: Harness>(db: &Db<H>) -> TestResult {
    let hub = db.store.wakes()?;
    // Another store handle (its own connections) does the writing.
    let writer = db.reopen()?;
    let seen = hub.generation();
    let mut tx = writer.begin()?;
    writer.enqueue(Some(&mut tx), "q", &opts(), &[job("{}")])?;
    assert!(!bumped(&hub, seen, Duration::from_millis(300)), "nothing before commit");
    tx.rollback()?;
    assert!(!bumped(&hub, seen, Duration::from_millis(300)), "nothing for a rollback");
    writer.enqueue(None, "q", &opts(), &[job("{}")])?;
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "an enqueue commit wakes");
    let seen = hub.generation();
    let c = writer.claim("q", "w", 1)?.pop().ok_or("claim")?;
    assert!(writer.release(&c)?);
    assert!(bumped(&hub, seen, Duration::from_secs(5)), "a release makes work claimable");
    Ok(())
}

pub fn a_waiting_claim_is_woken_by_another_stores_commit<H: Harness>(db: &Db<H>) -> TestResult {
    // A long safety-net poll, so only the wake can explain a quick claim.
    let store = db.reopen_with(|o| o.common_mut().poll_interval_s = 30.0)?;
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
        let id = writer.enqueue(None, "q", &opts(), &[job("{}")]);
        (waiter.join().map_err(|_| "waiter panicked"), id)
    });
    assert_eq!(claimed??.iter().map(|c| c.id).collect::<Vec<_>>(), id?);
    Ok(())
}

/// A caller that already stopped gets nothing, and nothing is claimed for it (ADR 0010).
pub fn a_stopped_caller_claims_nothing_whatever_the_timeout<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "{}")?;
    let stop = StopToken::new();
    stop.stop();
    let never = || false;
    for timeout in [Some(Duration::ZERO), Some(Duration::from_secs(5)), None] {
        let got = s.claim_wait("q", "w", 1, &WaitSpec { timeout, stops: &[&stop], interrupted: &never })?;
        assert!(got.is_empty(), "claimed for a stopped caller with timeout {timeout:?}");
    }
    assert_eq!(s.stats("q")?.processing, 0);
    // The job is still there for a caller that has not stopped.
    let got =
        s.claim_wait("q", "w", 1, &WaitSpec { timeout: Some(Duration::ZERO), stops: &[], interrupted: &never })?;
    assert_eq!(got.iter().map(|c| (c.id, c.attempts)).collect::<Vec<_>>(), vec![(id, 1)]);
    Ok(())
}

/// A lease that lapses after a fruitless look but before the waiter reads
/// when to look again (a stalled machine: here the clock is moved past the
/// lease's end right after the look) is reclaimed at once, not after the
/// safety-net poll: that read no longer names the lapsed lease.
pub fn a_lease_lapsing_between_a_look_and_the_next_wake_is_reclaimed_at_once<H: Harness>(db: &Db<H>) -> TestResult {
    let store = db.reopen_with(|o| o.common_mut().poll_interval_s = 30.0)?;
    let id = store.enqueue(None, "q", &opts(), &[job("{}")])?[0];
    assert_eq!(store.claim("q", "crashed", 1)?.len(), 1);
    let never = || false;
    let spec = WaitSpec { timeout: Some(Duration::from_secs(20)), stops: &[], interrupted: &never };
    let mut looks = 0;
    let started = Instant::now();
    let got = store.wait_for(Some("q"), &spec, || {
        let got = store.claim("q", "w", 1)?;
        looks += 1;
        if looks == 1 {
            assert!(got.is_empty(), "the lease is live at the first look");
            store.advance_clock(opts().visibility_timeout_s + 1)?;
        }
        Ok((!got.is_empty()).then_some(got))
    })?;
    let waited = started.elapsed();
    let got = got.ok_or("reclaimed within the timeout")?;
    assert_eq!(got.iter().map(|c| (c.id, c.attempts)).collect::<Vec<_>>(), vec![(id, 2)]);
    assert!(waited < Duration::from_secs(10), "reclaimed after {waited:?}, not at once");
    Ok(())
}
