//! The fixture of the in-crate EXPLAIN tests, which need the crate-private
//! statements: a fresh schema on the test server, migrated, filled, dropped
//! at the end. Every other Postgres test uses `tests/common`.

use crate::options::PgOptions;
use rand::Rng;
use tokio_postgres::{Client, NoTls};

use crate::engine::PgEngine;
use crate::runtime;

/// What every unit test returns.
pub type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// The test server's URL once it answers; None when none answers and
/// `ALKSTORE_REQUIRE_POSTGRES` is not 1 (the test then passes, saying so).
pub fn admin_url() -> std::result::Result<Option<String>, Box<dyn std::error::Error>> {
    let url = std::env::var("ALKSTORE_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
    match runtime::block_on(tokio_postgres::connect(&url, NoTls))? {
        Ok(_) => Ok(Some(url)),
        Err(e) if std::env::var("ALKSTORE_REQUIRE_POSTGRES").as_deref() != Ok("1") => {
            eprintln!("skipped: no Postgres at ALKSTORE_TEST_DATABASE_URL ({e})");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// A migrated fresh schema plus a raw client for EXPLAIN.
pub struct Fixture {
    /// Created the schema's tables; closed when the fixture drops.
    pub(crate) engine: PgEngine,
    /// Its fresh schema, dropped with the fixture.
    pub schema: String,
    /// A raw connection for setup and EXPLAIN.
    pub client: Client,
}

impl Fixture {
    /// None when no server answers and `ALKSTORE_REQUIRE_POSTGRES` is not 1.
    pub fn new() -> std::result::Result<Option<Self>, Box<dyn std::error::Error>> {
        let url = std::env::var("ALKSTORE_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/test".to_owned());
        let (client, conn) = match runtime::block_on(tokio_postgres::connect(&url, NoTls))? {
            Ok(c) => c,
            Err(e) if std::env::var("ALKSTORE_REQUIRE_POSTGRES").as_deref() != Ok("1") => {
                eprintln!("skipped: no Postgres at ALKSTORE_TEST_DATABASE_URL ({e})");
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        runtime::runtime()?.spawn(async move {
            let _ = conn.await;
        });
        let schema = format!("alk_u_{:016x}", rand::thread_rng().gen::<u64>());
        let options = PgOptions { schema: schema.clone(), max_connections: 1, ..PgOptions::default() };
        let engine = PgEngine::open(&url, &options)?;
        Ok(Some(Fixture { engine, schema, client }))
    }

    /// Runs simple SQL on the raw client.
    pub fn batch(&self, sql: &str) -> TestResult {
        runtime::block_on(self.client.batch_execute(sql))??;
        Ok(())
    }

    /// The text of every row `sql` returns, first column.
    pub fn lines(&self, sql: &str) -> std::result::Result<Vec<String>, Box<dyn std::error::Error>> {
        let rows = runtime::block_on(self.client.simple_query(sql))??;
        Ok(rows
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .collect())
    }
}

impl Fixture {
    /// 20 000 rows over 20 queues, a quarter leased, some expiring, plus
    /// dead rows with retention; analyzed, so the planner sees a real table.
    pub fn fill(&self) -> TestResult {
        let s = crate::ops::quote_ident(&self.schema);
        self.batch(&format!(
            "INSERT INTO {s}.jobs (queue, state, payload, priority, attempts, max_attempts, claim_token, \
               visibility_timeout_s, backoff_base_s, enqueued_at, run_at, deadline, expires_at) \
             SELECT 'q' || (i % 20), CASE WHEN i % 4 = 0 THEN 'processing' ELSE 'pending' END, '{{}}', \
               i % 3, 1, 3, 1, 30, 5, 0, i, i, CASE WHEN i % 10 = 0 THEN i END \
             FROM generate_series(1, 20000) i; \
             INSERT INTO {s}.dead (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
               visibility_timeout_s, backoff_base_s, enqueued_at, run_at, last_error, died_at, purge_at) \
             SELECT 100000 + i, 'q' || (i % 20), 'processing', '{{}}', 0, 3, 3, 3, 30, 5, 0, 0, 'x', i, \
               CASE WHEN i % 2 = 0 THEN i + 100 END \
             FROM generate_series(1, 20000) i; \
             ANALYZE {s}.jobs; ANALYZE {s}.dead;"
        ))
    }

    /// The plans of `statement` (parameter types `types`, executed with
    /// `args`) under forced custom and forced generic planning.
    pub fn plans(&self, types: &str, statement: &str, args: &str) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        self.batch(&format!("DEALLOCATE ALL; PREPARE p({types}) AS {statement}"))?;
        let mut out = Vec::new();
        for mode in ["force_custom_plan", "force_generic_plan"] {
            self.batch(&format!("SET plan_cache_mode = {mode}"))?;
            out.push(format!("{mode}:\n{}", self.lines(&format!("EXPLAIN (COSTS OFF) EXECUTE p({args})"))?.join("\n")));
        }
        self.batch("RESET plan_cache_mode")?;
        Ok(out)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        use alkstore_core::Engine;
        self.engine.close();
        let _ = self.batch(&format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema));
    }
}
