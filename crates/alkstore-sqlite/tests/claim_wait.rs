//! `Store::claim_wait` and its caller's stop token (SPEC §5, ADR 0010): a
//! caller that already stopped gets nothing, and nothing is claimed for it.

mod common;

use std::time::Duration;

use alkstore_core::{OpenOptions, Result, StopToken, Store, WaitSpec};
use common::Fixture;

fn spec<'a>(timeout: Option<Duration>, stops: &'a [&'a StopToken]) -> WaitSpec<'a> {
    WaitSpec { timeout, stops, interrupted: &|| false }
}

#[test]
fn a_stopped_caller_claims_nothing_whatever_the_timeout() -> Result<()> {
    let f = Fixture::new()?;
    let store = Store::new(f.reopen()?, OpenOptions::default());
    let id = f.put("q", "{}")?;
    let stop = StopToken::new();
    stop.stop();
    for timeout in [Some(Duration::ZERO), Some(Duration::from_secs(5)), None] {
        let got = store.claim_wait("q", "w", 1, &spec(timeout, &[&stop]))?;
        assert!(got.is_empty(), "claimed for a stopped caller with timeout {timeout:?}");
    }
    assert_eq!(store.stats("q")?.processing, 0);
    // The job is still there for a caller that has not stopped.
    let got = store.claim_wait("q", "w", 1, &spec(Some(Duration::ZERO), &[]))?;
    assert_eq!(got.iter().map(|c| (c.id, c.attempts)).collect::<Vec<_>>(), vec![(id, 1)]);
    Ok(())
}

#[test]
fn the_caller_check_sees_a_transaction_of_this_thread() -> Result<()> {
    let f = Fixture::new()?;
    let store = Store::new(f.reopen()?, OpenOptions::default());
    store.check_caller()?;
    let mut tx = store.begin()?;
    assert!(matches!(store.check_caller(), Err(alkstore_core::Error::Transaction(_))));
    // Another thread (the asyncio bridge's) holds none: the check must run on the caller's.
    std::thread::scope(|s| s.spawn(|| store.check_caller()).join().expect("thread"))?;
    tx.rollback()?;
    store.check_caller()?;
    store.close();
    assert!(matches!(store.check_caller(), Err(alkstore_core::Error::StoreClosed)));
    Ok(())
}
