//! Claim throughput per engine (SPEC §14): claim + ack one job at a time, and
//! `claim(128)` + one `ack` of the batch, each at a backlog of 1k and 100k.
//!
//! The backlog is held near its nominal size: before every timed chunk the
//! queue is topped back up with batched `enqueue` calls (untimed), and a chunk
//! never drains more than a tenth of it. So the 100k figures really are claims
//! against 100k waiting rows — the number that shows whether claim cost grows
//! with the backlog.
//!
//! First, before criterion's groups, the floor (issue 31, [`floor`]):
//! claim + ack one at a time against a bare rusqlite and a bare
//! tokio-postgres loop running the engine's own statements, as ratios.
//! `ALKSTORE_FLOOR_ONLY=1` stops after it (for callgrind:
//! `benches/callgrind_claim.sh`); `ALKSTORE_FLOOR=0` skips it.
//!
//! Postgres runs against `ALKSTORE_TEST_DATABASE_URL` (default
//! `postgresql://postgres@127.0.0.1:5432/test`) in a fresh `bench_<random>`
//! schema that is dropped at the end; when nothing answers, those benchmarks
//! are skipped with the reason printed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{redact_url, Claimed, Engine, NewJob, QueueOpts};
use alkstore_postgres::PgOptions;
use alkstore_sqlite::SqliteOptions;
use criterion::{black_box, Criterion, Throughput};

#[path = "claim/floor.rs"]
mod floor;

const DEFAULT_PG_URL: &str = "postgresql://postgres@127.0.0.1:5432/test";
/// The same payload as the side-by-side Python benchmark.
const PAYLOAD: &str = r#"{"to":"alice@example.com","n":1}"#;
const BACKLOGS: [(usize, &str); 2] = [(1_000, "1k"), (100_000, "100k")];
/// Jobs per `enqueue` call while filling.
const FILL_BATCH: usize = 1_000;
const WORKER: &str = "bench-worker";

/// One queue held at a target backlog on one engine.
struct Rig {
    engine: Arc<dyn Engine>,
    queue: String,
    target: usize,
    /// Rows we believe are waiting (we are the only producer and consumer).
    level: usize,
}

impl Rig {
    fn new(engine: Arc<dyn Engine>, queue: String, target: usize) -> Self {
        Rig { engine, queue, target, level: 0 }
    }

    /// Tops the queue back up to its target backlog.
    fn refill(&mut self) {
        let opts = QueueOpts::default();
        while self.level < self.target {
            let n = FILL_BATCH.min(self.target - self.level);
            let jobs: Vec<NewJob> = (0..n).map(|_| NewJob::of(PAYLOAD)).collect();
            let ids = self.engine.enqueue(None, &self.queue, &opts, &jobs).expect("enqueue while filling");
            assert_eq!(ids.len(), n, "enqueue returned {} ids for {n} jobs", ids.len());
            self.level += n;
        }
    }

    /// One claim of up to `n` jobs, then one ack of all of them.
    fn claim_ack(&mut self, n: usize) {
        let claimed: Vec<Claimed> = self.engine.claim(&self.queue, WORKER, n).expect("claim");
        assert_eq!(claimed.len(), n, "claimed {} of {n} with {} waiting", claimed.len(), self.level);
        let refs: Vec<&Claimed> = claimed.iter().collect();
        let acked = self.engine.ack(None, &refs).expect("ack");
        assert_eq!(acked, n, "acked {acked} of {n} fresh claims");
        self.level -= n;
        black_box(claimed);
    }

    /// Times `iters` rounds of `claim_ack(per_round)`, topping the backlog up
    /// (untimed) whenever a tenth of it has been drained.
    fn timed(&mut self, iters: u64, per_round: usize) -> Duration {
        let rounds_per_chunk = ((self.target / 10) / per_round).max(1) as u64;
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            self.refill();
            let chunk = left.min(rounds_per_chunk);
            let start = Instant::now();
            for _ in 0..chunk {
                self.claim_ack(per_round);
            }
            total += start.elapsed();
            left -= chunk;
        }
        total
    }
}

/// Registers claim+ack one-at-a-time and batched benchmarks for one engine.
/// `rig_for` makes a fresh queue (and, for SQLite, a fresh file) per backlog.
fn bench_engine(c: &mut Criterion, engine_name: &str, mut rig_for: impl FnMut(&str, usize) -> Option<Rig>) {
    // Sample size and timings come from `main` so command-line flags can override them.
    let mut group = c.benchmark_group(format!("{engine_name}/claim_ack"));
    for (backlog, label) in BACKLOGS {
        let Some(mut rig) = rig_for(&format!("backlog-{label}"), backlog) else { return };
        // Fill before criterion starts its clock: its warm-up estimates the
        // per-iteration cost from wall time, which a 100k fill would swamp.
        rig.refill();
        for (per_round, mode) in [(1usize, "one"), (128, "batch128")] {
            group.throughput(Throughput::Elements(per_round as u64));
            group.bench_function(format!("{mode}/backlog_{label}"), |b| {
                b.iter_custom(|iters| rig.timed(iters, per_round));
            });
        }
    }
    group.finish();
}

fn sqlite_benches(c: &mut Criterion) {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            println!("skipping SQLite benchmarks: cannot create a temp dir: {e}");
            return;
        }
    };
    let mut skipped = false;
    bench_engine(c, "sqlite", |name, backlog| {
        if skipped {
            return None;
        }
        let path = dir.path().join(format!("{name}.db"));
        match alkstore_sqlite::open(&path.to_string_lossy(), &SqliteOptions::default()) {
            Ok(engine) => Some(Rig::new(engine, name.to_owned(), backlog)),
            Err(e) => {
                println!("skipping SQLite benchmarks: open failed: {e}");
                skipped = true;
                None
            }
        }
    });
}

/// A fresh schema name: RandomState is seeded randomly per process.
fn random_schema() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("bench_{:012x}", h.finish() & 0xffff_ffff_ffff)
}

fn postgres_benches(c: &mut Criterion) {
    let url = std::env::var("ALKSTORE_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned());
    let schema = random_schema();
    let options = PgOptions { schema: schema.clone(), ..PgOptions::default() };
    let engine = match alkstore_postgres::open(&url, &options) {
        Ok(engine) => engine,
        Err(e) => {
            println!(
                "skipping Postgres benchmarks: cannot open {} (ALKSTORE_TEST_DATABASE_URL): {e}",
                redact_url(&url)
            );
            return;
        }
    };
    bench_engine(c, "postgres", |name, backlog| Some(Rig::new(engine.clone(), name.to_owned(), backlog)));
    let dropped = engine.begin().and_then(|mut tx| {
        tx.execute(&format!("DROP SCHEMA {schema} CASCADE"), &[])?;
        tx.commit()
    });
    if let Err(e) = dropped {
        println!("could not drop benchmark schema {schema}: {e}");
    }
    engine.close();
}

/// The floor on both engines (see [`floor`]), each in a store of its own.
fn floor_benches() {
    let knobs = floor::Knobs::from_env();
    match tempfile::tempdir() {
        Ok(dir) => {
            let path = dir.path().join("floor.db").to_string_lossy().into_owned();
            match alkstore_sqlite::open(&path, &SqliteOptions::default()) {
                Ok(engine) => {
                    let mut bare = floor::BareSqlite::open(&path);
                    floor::compare("sqlite", &engine, &mut bare, knobs, PAYLOAD);
                    engine.close();
                }
                Err(e) => println!("skipping the SQLite floor: open failed: {e}"),
            }
        }
        Err(e) => println!("skipping the SQLite floor: cannot create a temp dir: {e}"),
    }
    let url = std::env::var("ALKSTORE_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_PG_URL.to_owned());
    let schema = random_schema();
    let options = PgOptions { schema: schema.clone(), ..PgOptions::default() };
    let engine = match alkstore_postgres::open(&url, &options) {
        Ok(engine) => engine,
        Err(e) => {
            println!("skipping the Postgres floor: cannot open {}: {e}", redact_url(&url));
            return;
        }
    };
    match floor::BarePostgres::connect(&url, &schema) {
        Ok(mut bare) => {
            floor::compare("postgres", &engine, &mut bare, knobs, PAYLOAD);
        }
        Err(e) => println!("skipping the Postgres floor: bare connect failed: {e}"),
    }
    let dropped = engine.begin().and_then(|mut tx| {
        tx.execute(&format!("DROP SCHEMA {schema} CASCADE"), &[])?;
        tx.commit()
    });
    if let Err(e) = dropped {
        println!("could not drop benchmark schema {schema}: {e}");
    }
    engine.close();
}

fn main() {
    if std::env::var("ALKSTORE_FLOOR").as_deref() != Ok("0") {
        floor_benches();
    }
    if std::env::var("ALKSTORE_FLOOR_ONLY").as_deref() == Ok("1") {
        return;
    }
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    sqlite_benches(&mut c);
    postgres_benches(&mut c);
    c.final_summary();
}
