//! The one fixture of the Postgres tests: a fresh random schema per test on
//! the server named by `ALKSTORE_TEST_DATABASE_URL`, dropped when the
//! fixture drops; also the conformance suite's harness.
#![allow(dead_code, unused_imports)]

use std::sync::{Arc, Mutex};

use alkstore_core::{Claimed, Engine, QueueOpts};
use alkstore_enginetest::Harness;
pub use alkstore_enginetest::{job, opts, TestResult};
use alkstore_postgres::{PgOptions, StatementMode};
use rand::Rng;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// The server under test.
pub fn url() -> String {
    std::env::var("ALKSTORE_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned())
}

/// A fresh schema and an engine opened on it.
pub struct TestDb {
    /// The engine under test.
    pub engine: Arc<dyn Engine>,
    /// Its fresh schema, dropped with the fixture.
    pub schema: String,
    /// The options it was opened with (for `reopen`).
    pub options: PgOptions,
}

/// A raw client for setup and inspection, on the engine's runtime.
pub fn raw_client() -> Result<Client, Box<dyn std::error::Error>> {
    let (client, conn) = alkstore_postgres::block_on(tokio_postgres::connect(&url(), NoTls))??;
    alkstore_postgres::runtime()?.spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Runs simple SQL on a raw client.
pub fn admin(sql: &str) -> Result<(), Box<dyn std::error::Error>> {
    let c = raw_client()?;
    alkstore_postgres::block_on(c.batch_execute(sql))??;
    Ok(())
}

/// A random schema name unique to this test run.
pub fn fresh_schema() -> String {
    format!("alk_t_{:016x}", rand::thread_rng().gen::<u64>())
}

/// Whether a server answers. When none does, an error under
/// `ALKSTORE_REQUIRE_POSTGRES=1` (so CI fails instead of passing a test
/// that ran nothing), else `false` with a message saying the test skipped.
pub fn postgres_answers() -> Result<bool, Box<dyn std::error::Error>> {
    match raw_client() {
        Ok(_) => Ok(true),
        Err(e) if std::env::var("ALKSTORE_REQUIRE_POSTGRES").as_deref() == Ok("1") => Err(e),
        Err(e) => {
            eprintln!("skipped: no Postgres at ALKSTORE_TEST_DATABASE_URL ({e})");
            Ok(false)
        }
    }
}

impl TestDb {
    /// None (with a message) when no server answers and it is not required.
    pub fn new() -> Result<Option<Self>, Box<dyn std::error::Error>> {
        Self::with_pool(4)
    }

    /// Like `new` with a given pool size.
    pub fn with_pool(pool_size: usize) -> Result<Option<Self>, Box<dyn std::error::Error>> {
        Self::with(pool_size, StatementMode::Named)
    }

    /// Like `new` with a given pool size and statement mode.
    pub fn with(pool_size: usize, statements: StatementMode) -> Result<Option<Self>, Box<dyn std::error::Error>> {
        if !postgres_answers()? {
            return Ok(None);
        }
        let schema = fresh_schema();
        // Unnamed: wakes LISTEN on a direct session, as a pooled store is told to.
        let listen_url = (statements == StatementMode::Unnamed).then(url);
        let options = PgOptions {
            schema: schema.clone(),
            max_connections: pool_size,
            statements,
            listen_url,
            ..PgOptions::default()
        };
        let engine = alkstore_postgres::open(&url(), &options)?;
        Ok(Some(TestDb { engine, schema, options }))
    }

    /// Another engine (its own pool and clock) on the same schema.
    pub fn reopen(&self) -> Result<Arc<dyn Engine>, Box<dyn std::error::Error>> {
        Ok(alkstore_postgres::open(&url(), &self.options)?)
    }

    /// Enqueues one ready job with `payload`.
    pub fn put(&self, queue: &str, opts: &QueueOpts, payload: &str) -> Result<i64, Box<dyn std::error::Error>> {
        Ok(self.engine.enqueue(None, queue, opts, &[job(payload)])?[0])
    }

    /// Claims exactly one job, failing the test when there is none.
    pub fn take(&self, queue: &str, worker: &str) -> Result<Claimed, Box<dyn std::error::Error>> {
        self.engine.claim(queue, worker, 1)?.pop().ok_or_else(|| "expected a claimable job".into())
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        self.engine.close();
        if let Err(e) = admin(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema)) {
            eprintln!("could not drop test schema {}: {e}", self.schema);
        }
    }
}

impl Harness for TestDb {
    fn fresh() -> TestResult<Option<Self>> {
        TestDb::new()
    }

    fn engine(&self) -> &Arc<dyn Engine> {
        &self.engine
    }

    type Options = PgOptions;

    fn options(&self) -> PgOptions {
        self.options.clone()
    }

    fn open(&self, options: &PgOptions) -> TestResult<Arc<dyn Engine>> {
        Ok(alkstore_postgres::open(&url(), options)?)
    }

    fn one_connection(options: &mut PgOptions) {
        options.max_connections = 1;
    }

    fn table(&self, name: &str) -> String {
        format!("\"{}\".{name}", self.schema)
    }
}

/// How many named statements tokio-postgres has prepared in this process,
/// not counting this function's own. The driver names them `s0`, `s1`, …
/// from one process-wide counter, so a statement prepared here is named
/// after the count, which the session's `pg_prepared_statements` shows.
pub fn named_prepares_so_far() -> Result<usize, Box<dyn std::error::Error>> {
    static PROBES: Mutex<usize> = Mutex::new(0);
    let mut probes = PROBES.lock().map_err(|_| "a probe panicked")?;
    let c = raw_client()?;
    let _probe = alkstore_postgres::block_on(c.prepare("SELECT 1"))??;
    let rows = alkstore_postgres::block_on(c.simple_query("SELECT name FROM pg_prepared_statements"))??;
    let name = rows
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        })
        .ok_or("the probe's statement is not in its session")?;
    let n: usize = name.strip_prefix('s').ok_or("a statement name not of the form sN")?.parse()?;
    let others = n - *probes;
    *probes += 1;
    Ok(others)
}

/// The conformance suite's second Postgres harness: the same fixture with
/// `statements="unnamed"` (ADR 0030), as behind a transaction pooler. Its
/// test binary (`tests/unnamed.rs`) prepares nothing named itself, so each
/// case ends by checking that the engine did not either.
pub struct UnnamedDb(pub TestDb);

impl Drop for UnnamedDb {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        match named_prepares_so_far() {
            Ok(0) => {}
            Ok(n) => panic!("statements=\"unnamed\" prepared {n} named statement(s) in this process"),
            Err(e) => panic!("could not count named statements: {e}"),
        }
    }
}

impl Harness for UnnamedDb {
    fn fresh() -> TestResult<Option<Self>> {
        Ok(TestDb::with(4, StatementMode::Unnamed)?.map(UnnamedDb))
    }

    fn engine(&self) -> &Arc<dyn Engine> {
        &self.0.engine
    }

    type Options = PgOptions;

    fn options(&self) -> PgOptions {
        self.0.options.clone()
    }

    fn open(&self, options: &PgOptions) -> TestResult<Arc<dyn Engine>> {
        Ok(alkstore_postgres::open(&url(), options)?)
    }

    fn one_connection(options: &mut PgOptions) {
        options.max_connections = 1;
    }

    fn table(&self, name: &str) -> String {
        self.0.table(name)
    }
}
