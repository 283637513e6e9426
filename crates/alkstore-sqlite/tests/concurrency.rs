//! Many handles on one file, as separate processes would be (SPEC §4.2: exactly-once claim).

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread;

use alkstore_core::{Error, NewJob, Result};
use alkstore_sqlite::SqliteOptions;
use common::{job, opts, Fixture};

const THREADS: usize = 4;
const PER_THREAD: usize = 500;

#[test]
fn four_handles_claim_each_job_exactly_once() -> Result<()> {
    let f = Fixture::new()?;
    let jobs: Vec<NewJob> = (0..THREADS * PER_THREAD).map(|i| job(&i.to_string())).collect();
    let ids: HashSet<i64> = f.engine.enqueue(None, "q", &opts(), &jobs)?.into_iter().collect();
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let path = f.path.clone();
            let barrier = barrier.clone();
            thread::spawn(move || -> Result<Vec<i64>> {
                // Its own engine handle: its own writer, like another process.
                let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
                let worker = format!("w{t}");
                barrier.wait();
                let mut mine = Vec::new();
                loop {
                    // Mix single claims and small batches.
                    let n = if mine.len() % 3 == 0 { 4 } else { 1 };
                    let got = engine.claim("q", &worker, n)?;
                    if got.is_empty() {
                        break;
                    }
                    let refs: Vec<_> = got.iter().collect();
                    assert_eq!(engine.ack(None, &refs)?, got.len(), "a fresh claim acks");
                    mine.extend(got.iter().map(|j| j.id));
                }
                Ok(mine)
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut per_thread = Vec::new();
    for h in handles {
        let mine = h.join().map_err(|_| Error::database(None, "worker thread panicked"))??;
        per_thread.push(mine.len());
        for id in mine {
            assert!(seen.insert(id), "job {id} claimed twice");
        }
    }
    assert_eq!(seen, ids, "every job claimed exactly once");
    assert_eq!(f.engine.stats("q")?, Default::default());
    eprintln!("claims per handle: {per_thread:?}");
    Ok(())
}

#[test]
fn concurrent_opens_of_a_fresh_file_all_succeed() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::database(None, e.to_string()))?;
    let path = dir.path().join("fresh.db").to_string_lossy().into_owned();
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let path = path.clone();
            let barrier = barrier.clone();
            thread::spawn(move || -> Result<i64> {
                barrier.wait();
                let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
                Ok(engine.enqueue(None, "q", &opts(), &[job(&i.to_string())])?[0])
            })
        })
        .collect();
    let mut ids = HashSet::new();
    for h in handles {
        ids.insert(h.join().map_err(|_| Error::database(None, "thread panicked"))??);
    }
    assert_eq!(ids.len(), THREADS);
    Ok(())
}

#[test]
fn threads_sharing_one_handle_claim_each_job_once() -> Result<()> {
    let f = Fixture::new()?;
    let jobs: Vec<NewJob> = (0..1000).map(|i| job(&i.to_string())).collect();
    f.engine.enqueue(None, "q", &opts(), &jobs)?;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = f.engine.clone();
            thread::spawn(move || -> Result<Vec<i64>> {
                let mut mine = Vec::new();
                while let Some(j) = engine.claim("q", &format!("w{t}"), 1)?.pop() {
                    assert_eq!(engine.ack(None, &[&j])?, 1);
                    mine.push(j.id);
                }
                Ok(mine)
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for h in handles {
        for id in h.join().map_err(|_| Error::database(None, "thread panicked"))?? {
            assert!(seen.insert(id));
        }
    }
    assert_eq!(seen.len(), 1000);
    Ok(())
}

#[test]
fn concurrent_sweeps_never_double_move() -> Result<()> {
    let f = Fixture::new()?;
    let jobs: Vec<NewJob> = (0..300).map(|i| NewJob { expires_s: Some(5), ..job(&i.to_string()) }).collect();
    f.engine.enqueue(None, "q", &opts(), &jobs)?;
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let path = f.path.clone();
            let barrier = barrier.clone();
            thread::spawn(move || -> Result<i64> {
                let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
                engine.advance_clock(10);
                barrier.wait();
                Ok(engine.sweep_expired("q")?.expired)
            })
        })
        .collect();
    let mut total = 0;
    for h in handles {
        total += h.join().map_err(|_| Error::database(None, "thread panicked"))??;
    }
    assert_eq!(total, 300);
    assert_eq!(f.engine.stats("q")?.dead, 300);
    Ok(())
}
