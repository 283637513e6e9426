//! Helpers shared by the integration tests: a fresh store file per test.
#![allow(dead_code)]

use std::sync::Arc;

use alkstore_core::{Claimed, Engine, NewJob, QueueOpts, ReadyAt, Result};
use alkstore_sqlite::SqliteOptions;
use tempfile::TempDir;

/// A store on a fresh temp file; the directory lives as long as this value.
pub struct Fixture {
    pub dir: TempDir,
    pub path: String,
    pub engine: Arc<dyn Engine>,
}

impl Fixture {
    pub fn new() -> Result<Self> {
        let dir = tempfile::tempdir().map_err(|e| alkstore_core::Error::database(None, e.to_string()))?;
        let path = dir.path().join("store.db").to_string_lossy().into_owned();
        let engine = alkstore_sqlite::open(&path, &SqliteOptions::default())?;
        Ok(Fixture { dir, path, engine })
    }

    /// Another engine handle on the same file (like another process).
    pub fn reopen(&self) -> Result<Arc<dyn Engine>> {
        alkstore_sqlite::open(&self.path, &SqliteOptions::default())
    }

    /// Enqueues one job with the given payload and default stamps.
    pub fn put(&self, queue: &str, payload: &str) -> Result<i64> {
        self.put_job(queue, &opts(), job(payload))
    }

    pub fn put_job(&self, queue: &str, opts: &QueueOpts, job: NewJob) -> Result<i64> {
        Ok(self.engine.enqueue(None, queue, opts, &[job])?[0])
    }

    /// Claims at most one job.
    pub fn one(&self, queue: &str, worker: &str) -> Result<Option<Claimed>> {
        Ok(self.engine.claim(queue, worker, 1)?.pop())
    }
}

/// Queue options with a short lease and no backoff, handy for tests.
pub fn opts() -> QueueOpts {
    QueueOpts { visibility_timeout_s: 30, max_attempts: 3, backoff_base_s: 0.0, dead_letter_retention_s: None }
}

/// A ready-now job with priority 0.
pub fn job(payload: &str) -> NewJob {
    NewJob { payload: payload.to_owned(), ready: ReadyAt::Now, priority: 0, max_attempts: None, expires_s: None }
}

/// `job.retry` as the Store resolves it: core decides dead or pending and
/// draws the delay; the engine runs the resolved op.
pub fn retry(
    engine: &dyn Engine,
    tx: Option<&mut dyn alkstore_core::Tx>,
    job: &Claimed,
    error: &str,
    delay_s: Option<i64>,
) -> alkstore_core::Result<bool> {
    use alkstore_core::rules::retry::{retry_to, RetryTo};
    match retry_to(job, delay_s) {
        RetryTo::Dead => engine.fail(tx, job, error),
        RetryTo::Pending { delay_s } => engine.retry(tx, job, delay_s),
    }
}

/// A claim as the Store hands it out: the engine's rows put in claim order
/// by core (the engine returns them in whatever order its statement did).
pub fn claim(engine: &dyn Engine, queue: &str, worker: &str, n: usize) -> alkstore_core::Result<Vec<Claimed>> {
    let mut got = engine.claim(queue, worker, n)?;
    alkstore_core::rules::claim_order::sort_claimed(&mut got);
    Ok(got)
}
