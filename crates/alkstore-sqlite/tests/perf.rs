//! A timing print, not an assertion: claim + ack per second through the
//! engine vs. a bare rusqlite loop over the same file (SPEC §14 workload A's
//! "raw-SQL floor"), at backlog 1k and 100k. Run with
//! `cargo test -p alkstore-sqlite --release --test perf -- --ignored --nocapture`
//! (`PERF_DIR=/dev/shm` takes the disk out of the picture).
//!
//! The floor is the classic single-queue claim: one autocommit
//! `UPDATE … WHERE id = (SELECT … LIMIT 1) RETURNING` handing back the same
//! columns a job handle needs, and one autocommit `DELETE`. Rates are
//! measured on this thread's CPU time where the kernel reports it
//! (`/proc/thread-self/schedstat`), so other processes on a shared machine
//! disturb the ratio less; wall time is printed as well.

mod common;

use std::time::Instant;

use alkstore_core::{Error, NewJob, Result};
use alkstore_sqlite::SqliteOptions;
use common::{job, opts};
use rusqlite::{params, Connection};

const RAW_CLAIM: &str = "\
UPDATE __alkstore_jobs SET state = 'processing', attempts = attempts + 1, claim_token = claim_token + 1, \
worker_id = ?2, claimed_at = unixepoch(), deadline = unixepoch() + visibility_timeout_s \
WHERE id = (SELECT id FROM __alkstore_jobs WHERE queue = ?1 AND state = 'pending' AND run_at <= unixepoch() \
ORDER BY priority DESC, run_at, id LIMIT 1) \
RETURNING id, queue, payload, attempts, max_attempts, priority, worker_id, claim_token, \
enqueued_at, run_at, claimed_at, deadline, expires_at, visibility_timeout_s, backoff_base_s";
const RAW_ACK: &str = "DELETE FROM __alkstore_jobs WHERE id = ?1 AND claim_token = ?2";

fn db(e: rusqlite::Error) -> Error {
    Error::database(None, e.to_string())
}

/// This thread's CPU time in ns, if the kernel exposes it.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok().filter(|&n| n > 0)
}

/// (ops per CPU second, ops per wall second) of `f` run `ops` times.
fn timed(ops: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, f64)> {
    let (cpu0, wall0) = (cpu_ns(), Instant::now());
    for _ in 0..ops {
        f()?;
    }
    let wall = ops as f64 / wall0.elapsed().as_secs_f64();
    let cpu = match (cpu0, cpu_ns()) {
        (Some(a), Some(b)) if b > a => ops as f64 / ((b - a) as f64 / 1e9),
        _ => wall,
    };
    Ok((cpu, wall))
}

fn fill(path: &str, backlog: usize) -> Result<()> {
    let engine = alkstore_sqlite::open(path, &SqliteOptions::default())?;
    let batch: Vec<NewJob> = (0..1000).map(|i| job(&format!("{{\"n\":{i}}}"))).collect();
    for _ in 0..backlog.div_ceil(1000) {
        engine.enqueue(None, "q", &opts(), &batch)?;
    }
    engine.close();
    Ok(())
}

type RawRow = (i64, String, String, i64, i64, i32, String, i64, i64, i64, i64, i64, Option<i64>, i64, f64);

fn raw(path: &str, ops: usize) -> Result<(f64, f64)> {
    let conn = Connection::open(path).map_err(db)?;
    conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000").map_err(db)?;
    timed(ops, || {
        let r: RawRow = conn
            .prepare_cached(RAW_CLAIM)
            .and_then(|mut s| {
                s.query_row(params!["q", "w"], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                        r.get(11)?,
                        r.get(12)?,
                        r.get(13)?,
                        r.get(14)?,
                    ))
                })
            })
            .map_err(db)?;
        conn.prepare_cached(RAW_ACK).and_then(|mut s| s.execute(params![r.0, r.7])).map_err(db)?;
        Ok(())
    })
}

fn engine(path: &str, ops: usize) -> Result<(f64, f64)> {
    let engine = alkstore_sqlite::open(path, &SqliteOptions::default())?;
    timed(ops, || {
        let Some(j) = engine.claim("q", "w", 1)?.pop() else {
            return Err(Error::database(None, "ran out of jobs"));
        };
        if engine.ack(None, &[&j])? != 1 {
            return Err(Error::database(None, "ack did not land"));
        }
        Ok(())
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "timing print; run in release with --ignored --nocapture"]
fn claim_ack_rate_vs_raw_floor() -> Result<()> {
    const OPS: usize = 4000;
    const ROUNDS: usize = 5;
    let base = std::env::var("PERF_DIR").unwrap_or_else(|_| std::env::temp_dir().to_string_lossy().into_owned());
    let dir = tempfile::tempdir_in(base).map_err(|e| Error::database(None, e.to_string()))?;
    for backlog in [1_000, 100_000] {
        let (mut ratios, mut raw_rates, mut eng_rates, mut wall_ratios) = (vec![], vec![], vec![], vec![]);
        for round in 0..ROUNDS {
            let a = dir.path().join(format!("raw-{backlog}-{round}.db")).to_string_lossy().into_owned();
            let b = dir.path().join(format!("eng-{backlog}-{round}.db")).to_string_lossy().into_owned();
            fill(&a, backlog + OPS)?;
            fill(&b, backlog + OPS)?;
            // Alternate who goes first so neither side always gets the warmer machine.
            let (r, e) = if round % 2 == 0 {
                let r = raw(&a, OPS)?;
                (r, engine(&b, OPS)?)
            } else {
                let e = engine(&b, OPS)?;
                (raw(&a, OPS)?, e)
            };
            ratios.push(e.0 / r.0);
            wall_ratios.push(e.1 / r.1);
            raw_rates.push(r.0);
            eng_rates.push(e.0);
        }
        eprintln!(
            "backlog {backlog:>6}: raw {:>7.0}/s, engine {:>7.0}/s (claim+ack per CPU second, medians of {ROUNDS}); \
             engine/raw median {:.2} (rounds {:?}); by wall time {:.2}",
            median(raw_rates),
            median(eng_rates),
            median(ratios.clone()),
            ratios.iter().map(|x| (x * 100.0).round() / 100.0).collect::<Vec<_>>(),
            median(wall_ratios),
        );
    }
    Ok(())
}
