//! Many handles and threads on one database, as separate processes would
//! be (SPEC §4.2): every job is handed out exactly once.

use std::collections::HashSet;
use std::sync::Barrier;

use alkstore_core::{NewJob, QueueOpts, Result, Store};

use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __concurrency_cases { ($harness:ty) => { $crate::__cases! { $harness; concurrency {
    handles_claim_each_job_exactly_once, threads_sharing_one_handle_claim_each_job_once,
    concurrent_sweeps_never_double_move, concurrent_reclaims_and_exhaustion_are_exactly_once,
} } } }

const THREADS: usize = 4;
const PER_THREAD: usize = 500;

/// Runs `f(i, store_i)` on one thread per store, all released at once; the results in order.
pub(crate) fn on_threads<T: Send>(stores: &[Store], f: impl Fn(usize, &Store) -> Result<T> + Sync) -> Result<Vec<T>> {
    let barrier = Barrier::new(stores.len());
    std::thread::scope(|scope| {
        let threads: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (f, barrier) = (&f, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    f(i, s)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("worker thread panicked")).collect()
    })
}

/// `n` more handles on the database, each with its own connections.
pub(crate) fn reopened<H: Harness>(db: &Db<H>, n: usize) -> TestResult<Vec<Store>> {
    (0..n).map(|_| db.reopen()).collect()
}

/// Each handle its own connections, like another process.
pub fn handles_claim_each_job_exactly_once<H: Harness>(db: &Db<H>) -> TestResult {
    let jobs: Vec<NewJob> = (0..THREADS * PER_THREAD).map(|i| job(&i.to_string())).collect();
    let ids: HashSet<i64> = db.store.enqueue(None, "q", &opts(), &jobs)?.into_iter().collect();
    let per_thread = on_threads(&reopened(db, THREADS)?, |t, s| {
        let worker = format!("w{t}");
        let mut mine = Vec::new();
        // Mix single claims and batches so both shapes contend.
        let mut n = 1;
        loop {
            let got = s.claim("q", &worker, n)?;
            if got.is_empty() {
                return Ok(mine);
            }
            let refs: Vec<_> = got.iter().collect();
            assert_eq!(s.ack(None, &refs)?, got.len(), "every fresh claim acks");
            mine.extend(got.iter().map(|c| c.id));
            n = n % 7 + 1;
        }
    })?;
    let all: Vec<i64> = per_thread.iter().flatten().copied().collect();
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len(), THREADS * PER_THREAD, "no job handed out twice");
    assert_eq!(unique, ids, "every job handed out");
    eprintln!("claims per handle: {:?}", per_thread.iter().map(Vec::len).collect::<Vec<_>>());
    if H::FAIR_UNDER_CONTENTION {
        assert!(per_thread.iter().all(|v| !v.is_empty()), "all threads took part");
    }
    assert_eq!(db.store.stats("q")?, Default::default());
    Ok(())
}

pub fn threads_sharing_one_handle_claim_each_job_once<H: Harness>(db: &Db<H>) -> TestResult {
    let jobs: Vec<NewJob> = (0..1000).map(|i| job(&i.to_string())).collect();
    db.store.enqueue(None, "q", &opts(), &jobs)?;
    let s = &db.store;
    let per_thread = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                scope.spawn(move || -> Result<Vec<i64>> {
                    let mut mine = Vec::new();
                    while let Some(j) = s.claim("q", &format!("w{t}"), 1)?.pop() {
                        assert_eq!(s.ack(None, &[&j])?, 1);
                        mine.push(j.id);
                    }
                    Ok(mine)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("worker thread panicked")).collect::<Result<Vec<_>>>()
    })?;
    let mut seen = HashSet::new();
    for id in per_thread.into_iter().flatten() {
        assert!(seen.insert(id), "job {id} claimed twice");
    }
    assert_eq!(seen.len(), 1000);
    Ok(())
}

pub fn concurrent_sweeps_never_double_move<H: Harness>(db: &Db<H>) -> TestResult {
    let jobs: Vec<NewJob> = (0..400).map(|i| NewJob { expires_s: Some(5), ..job(&i.to_string()) }).collect();
    db.store.enqueue(None, "q", &opts(), &jobs)?;
    let stores = reopened(db, THREADS)?;
    for s in &stores {
        s.advance_clock(10)?;
    }
    let moved = on_threads(&stores, |_, s| Ok(s.sweep_expired("q")?.expired))?;
    assert_eq!(moved.iter().sum::<i64>(), 400);
    assert_eq!(db.store.stats("q")?.dead, 400);
    Ok(())
}

pub fn concurrent_reclaims_and_exhaustion_are_exactly_once<H: Harness>(db: &Db<H>) -> TestResult {
    // Half the jobs have one more attempt; half are exhausted once lapsed.
    let spare = QueueOpts { visibility_timeout_s: 10, max_attempts: 2, ..opts() };
    let last = QueueOpts { max_attempts: 1, ..spare };
    let a: Vec<NewJob> = (0..200).map(|i| job(&i.to_string())).collect();
    let spare_ids: HashSet<i64> = db.store.enqueue(None, "q", &spare, &a)?.into_iter().collect();
    db.store.enqueue(None, "q", &last, &a)?;
    while !db.store.claim("q", "first", 100)?.is_empty() {}
    let stores = reopened(db, THREADS)?;
    for s in &stores {
        s.advance_clock(11)?;
    }
    let got = on_threads(&stores, |_, s| {
        let mut mine = Vec::new();
        loop {
            let got = s.claim("q", "second", 3)?;
            if got.is_empty() {
                return Ok(mine);
            }
            mine.extend(got.iter().map(|c| (c.id, c.attempts)));
        }
    })?;
    let all: Vec<(i64, i64)> = got.into_iter().flatten().collect();
    let ids: HashSet<i64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(all.len(), 200);
    assert_eq!(ids, spare_ids, "only the jobs with budget left are reclaimed, each once");
    assert!(all.iter().all(|(_, attempts)| *attempts == 2));
    let s = db.store.stats("q")?;
    assert_eq!((s.processing, s.dead), (200, 200));
    Ok(())
}
