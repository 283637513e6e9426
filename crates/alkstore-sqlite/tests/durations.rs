//! The Store front's duration bound (ADR 0011), over a real engine: every
//! duration past 100 years and every instant past year 9999 is a `Value`
//! error naming the argument, and nothing is written.

mod common;

use std::sync::Arc;
use std::time::Duration;

use alkstore_core::{
    Error, NewJob, OpenOptions, QueueOpts, ReadyAt, Result, StopToken, Store, WaitSpec, MAX_DURATION_S, MAX_INSTANT_S,
};
use common::{job, opts, Fixture};

fn store(f: &Fixture) -> Store {
    Store::new(Arc::clone(&f.engine), OpenOptions::default())
}

fn names(r: Result<impl std::fmt::Debug>, what: &str) {
    match r {
        Err(Error::Value(m)) => assert!(m.contains(what), "{what}: {m}"),
        other => panic!("{what}: expected a Value error, got {other:?}"),
    }
}

#[test]
fn enqueue_refuses_durations_and_instants_past_the_bound() -> Result<()> {
    let f = Fixture::new()?;
    let s = store(&f);
    let over = MAX_DURATION_S + 1;
    for (bad, what) in [
        (QueueOpts { visibility_timeout_s: over, ..opts() }, "visibility_timeout_s"),
        (QueueOpts { visibility_timeout_s: 0, ..opts() }, "visibility_timeout_s"),
        (QueueOpts { dead_letter_retention_s: Some(i64::MAX), ..opts() }, "dead_letter_retention_s"),
        (QueueOpts { backoff_base_s: 1e300, ..opts() }, "backoff_base_s"),
        (QueueOpts { backoff_base_s: f64::NAN, ..opts() }, "backoff_base_s"),
    ] {
        names(s.enqueue(None, "q", &bad, &[job("x")]), what);
    }
    for (bad, what) in [
        (NewJob { ready: ReadyAt::Delay(over), ..job("x") }, "delay"),
        (NewJob { ready: ReadyAt::Delay(-1), ..job("x") }, "delay"),
        (NewJob { ready: ReadyAt::At(MAX_INSTANT_S + 1), ..job("x") }, "run_at"),
        (NewJob { ready: ReadyAt::At(-1), ..job("x") }, "run_at"),
        (NewJob { expires_s: Some(i64::MAX), ..job("x") }, "expires"),
    ] {
        // Second in a batch: the whole batch is refused before any write.
        names(s.enqueue(None, "q", &opts(), &[job("ok"), bad]), what);
    }
    assert_eq!(s.stats("q")?.pending + s.stats("q")?.scheduled, 0);
    let at_bound =
        QueueOpts { visibility_timeout_s: MAX_DURATION_S, dead_letter_retention_s: Some(MAX_DURATION_S), ..opts() };
    let last = NewJob { ready: ReadyAt::At(MAX_INSTANT_S), expires_s: Some(MAX_DURATION_S), ..job("x") };
    s.enqueue(None, "q", &at_bound, &[job("now"), last])?;
    let c = s.claim("q", "w", 1)?.pop().expect("the ready job");
    assert_eq!(c.deadline - c.claimed_at, MAX_DURATION_S);
    Ok(())
}

#[test]
fn handle_lock_and_wait_arguments_are_bounded() -> Result<()> {
    let f = Fixture::new()?;
    let s = store(&f);
    s.enqueue(None, "q", &opts(), &[job("x")])?;
    let c = s.claim("q", "w", 1)?.pop().expect("a job");
    names(s.heartbeat(&c, Some(MAX_DURATION_S + 1)), "extend");
    names(s.retry(None, &c, "", Some(i64::MAX)), "delay");
    names(s.lock_acquire("l", "me", MAX_DURATION_S + 1), "ttl_s");
    names(s.advance_clock(i64::MIN), "seconds");
    let never = || false;
    let spec = WaitSpec { timeout: Some(Duration::MAX), stops: &[], interrupted: &never };
    names(s.claim_wait("q", "w", 1, &spec), "timeout");
    // At the bound everything works.
    assert!(s.heartbeat(&c, Some(MAX_DURATION_S))?.is_some());
    s.lock_acquire("l", "me", MAX_DURATION_S)?;
    let stop = StopToken::default();
    stop.stop();
    let spec =
        WaitSpec { timeout: Some(Duration::from_secs(MAX_DURATION_S as u64)), stops: &[&stop], interrupted: &never };
    assert!(s.claim_wait("q", "w", 1, &spec)?.is_empty());
    assert!(s.retry(None, &c, "", Some(MAX_DURATION_S))?);
    Ok(())
}
