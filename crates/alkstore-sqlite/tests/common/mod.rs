//! The one fixture of the SQLite tests: a fresh store file per test, and the
//! conformance suite's harness.
#![allow(dead_code)]

use std::sync::Arc;

use alkstore_core::{Claimed, Engine, NewJob, QueueOpts, Result};
pub use alkstore_enginetest::{job, opts};
use alkstore_enginetest::{Harness, TestResult};
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

impl Harness for Fixture {
    const FAIR_UNDER_CONTENTION: bool = false;

    fn fresh() -> TestResult<Option<Self>> {
        Ok(Some(Fixture::new()?))
    }

    fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    type Options = SqliteOptions;

    fn options(&self) -> SqliteOptions {
        SqliteOptions::default()
    }

    fn open(&self, options: &SqliteOptions) -> TestResult<Arc<dyn Engine>> {
        Ok(alkstore_sqlite::open(&self.path, options)?)
    }

    fn table(&self, name: &str) -> String {
        name.to_owned()
    }
}

/// A claim as the Store hands it out: the engine's rows put in claim order
/// by core (the engine returns them in whatever order its statement did).
pub fn claim(engine: &dyn Engine, queue: &str, worker: &str, n: usize) -> alkstore_core::Result<Vec<Claimed>> {
    let mut got = engine.claim(queue, worker, n)?;
    alkstore_core::rules::claim_order::sort_claimed(&mut got);
    Ok(got)
}
