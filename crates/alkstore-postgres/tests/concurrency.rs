//! Exactly-once claiming under contention: four threads, each with its own
//! engine (own pool), drain one queue.

mod common;

use std::collections::HashSet;

use alkstore_core::NewJob;
use common::{job, opts, TestDb, TestResult};

const THREADS: usize = 4;
const PER_THREAD: usize = 500;

#[test]
fn four_threads_claim_every_job_exactly_once() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(300, 3);
    for t in 0..THREADS {
        let jobs: Vec<NewJob> = (0..PER_THREAD).map(|i| job(&format!("[{t},{i}]"))).collect();
        db.engine.enqueue(None, "q", &q, &jobs)?;
    }
    let engines = (0..THREADS).map(|_| db.reopen()).collect::<Result<Vec<_>, _>>()?;
    let per_thread: Vec<Vec<i64>> = std::thread::scope(|s| {
        let hs: Vec<_> = engines
            .iter()
            .enumerate()
            .map(|(t, e)| {
                s.spawn(move || -> Result<Vec<i64>, alkstore_core::Error> {
                    let worker = format!("w{t}");
                    let mut mine = Vec::new();
                    // Mix single claims and batches so both shapes contend.
                    let mut n = 1;
                    loop {
                        let got = e.claim("q", &worker, n)?;
                        if got.is_empty() {
                            return Ok(mine);
                        }
                        let refs: Vec<_> = got.iter().collect();
                        assert_eq!(e.ack(None, &refs)?, got.len(), "every fresh claim acks");
                        mine.extend(got.iter().map(|c| c.id));
                        n = n % 7 + 1;
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("claimer panicked")).collect::<Result<Vec<_>, _>>()
    })?;
    let all: Vec<i64> = per_thread.iter().flatten().copied().collect();
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(all.len(), THREADS * PER_THREAD, "no job handed out twice");
    assert_eq!(unique.len(), THREADS * PER_THREAD, "every job handed out");
    assert!(per_thread.iter().all(|v| !v.is_empty()), "all threads took part");
    let s = db.engine.stats("q")?;
    assert_eq!((s.pending, s.processing, s.dead), (0, 0, 0));
    Ok(())
}

#[test]
fn concurrent_reclaims_and_exhaustion_are_exactly_once() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    // Half the jobs have one more attempt; half are exhausted once lapsed.
    let spare = opts(10, 2);
    let last = opts(10, 1);
    let a: Vec<NewJob> = (0..200).map(|i| job(&i.to_string())).collect();
    let spare_ids: HashSet<i64> = db.engine.enqueue(None, "q", &spare, &a)?.into_iter().collect();
    db.engine.enqueue(None, "q", &last, &a)?;
    while !common::claim(&*db.engine, "q", "first", 100)?.is_empty() {}
    let engines = (0..THREADS).map(|_| db.reopen()).collect::<Result<Vec<_>, _>>()?;
    for e in &engines {
        e.advance_clock(11);
    }
    let got: Vec<Vec<(i64, i64)>> = std::thread::scope(|s| {
        let hs: Vec<_> = engines
            .iter()
            .map(|e| {
                s.spawn(move || -> Result<Vec<(i64, i64)>, alkstore_core::Error> {
                    let mut mine = Vec::new();
                    loop {
                        let got = e.claim("q", "second", 3)?;
                        if got.is_empty() {
                            return Ok(mine);
                        }
                        mine.extend(got.iter().map(|c| (c.id, c.attempts)));
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("claimer panicked")).collect::<Result<Vec<_>, _>>()
    })?;
    let all: Vec<(i64, i64)> = got.into_iter().flatten().collect();
    let ids: HashSet<i64> = all.iter().map(|(id, _)| *id).collect();
    assert_eq!(all.len(), 200);
    assert_eq!(ids, spare_ids, "only the jobs with budget left are reclaimed, each once");
    assert!(all.iter().all(|(_, attempts)| *attempts == 2));
    let s = db.engine.stats("q")?;
    assert_eq!((s.processing, s.dead), (200, 200));
    Ok(())
}
