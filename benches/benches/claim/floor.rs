//! The floor (issue 31): alkstore's claim + ack, one job at a time, against a
//! bare driver loop running the very same statements (the engines export
//! their text as `hot_path`) on the same schema, in one run, as ratios.
//!
//! Each engine gets one store and two queues of the same backlog: one the
//! engine drains through `Engine::claim` + `Engine::ack`, the other a bare
//! rusqlite connection (same file, same pragmas) or a bare tokio-postgres
//! client (same schema) drains with the engine's claim and ack text. Rounds
//! of `ops` claim+ack pairs alternate between the two, which one goes first
//! alternating too, and the queues are topped up between rounds (untimed),
//! so both see the same load on a shared machine. Reported: the median per-op
//! time of each and the ratio `floor time / alkstore time` (1.0 = at the floor).
//!
//! Instruction counts, which a loaded machine does not move:
//! `benches/callgrind_claim.sh` runs this under callgrind, which dumps its
//! counters at the `floor_mark_*` functions around each loop, so each
//! loop's count covers every thread of the process while it ran (client side
//! only for Postgres: the server is another process).

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::{Claimed, Engine, NewJob, QueueOpts};
use rusqlite::{params, Connection};

const WORKER: &str = "bench-worker";

/// Knobs from the environment: `ALKSTORE_FLOOR_OPS` claim+ack pairs per
/// round (default 2000), `ALKSTORE_FLOOR_ROUNDS` rounds (default 7),
/// `ALKSTORE_FLOOR_BACKLOG` jobs waiting in each queue (default 10000).
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    pub ops: usize,
    pub rounds: usize,
    pub backlog: usize,
}

impl Knobs {
    pub fn from_env() -> Self {
        let get = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        let ops = get("ALKSTORE_FLOOR_OPS", 2000).max(1);
        Knobs {
            ops,
            rounds: get("ALKSTORE_FLOOR_ROUNDS", 7).max(1),
            backlog: get("ALKSTORE_FLOOR_BACKLOG", 10_000).max(ops),
        }
    }
}

/// Tops `queue` up to `target` waiting jobs (the level we track).
fn refill(engine: &dyn Engine, queue: &str, level: &mut usize, target: usize, payload: &str) {
    let opts = QueueOpts::default();
    while *level < target {
        let n = 1000.min(target - *level);
        let jobs: Vec<NewJob> = (0..n).map(|_| NewJob::of(payload)).collect();
        let ids = engine.enqueue(None, queue, &opts, &jobs).expect("enqueue while filling");
        assert_eq!(ids.len(), n);
        *level += n;
    }
}

/// Markers for `benches/callgrind_claim.sh`: callgrind dumps its counters on
/// entering each (`--dump-before='*floor_mark_*'`), so the dump at an end
/// marker holds exactly the loop since the start marker, all threads. Each
/// body differs, so the linker cannot fold them into one symbol.
#[inline(never)]
pub fn floor_mark_start() {
    std::hint::black_box(0u8);
}

/// See [`floor_mark_start`].
#[inline(never)]
pub fn floor_mark_end_alkstore_sqlite() {
    std::hint::black_box(1u8);
}

/// See [`floor_mark_start`].
#[inline(never)]
pub fn floor_mark_end_bare_sqlite() {
    std::hint::black_box(2u8);
}

/// See [`floor_mark_start`].
#[inline(never)]
pub fn floor_mark_end_alkstore_postgres() {
    std::hint::black_box(3u8);
}

/// See [`floor_mark_start`].
#[inline(never)]
pub fn floor_mark_end_bare_postgres() {
    std::hint::black_box(4u8);
}

/// alkstore's per-op drain on SQLite (a function of its own for callgrind).
#[inline(never)]
pub fn floor_alkstore_sqlite_ops(engine: &dyn Engine, queue: &str, ops: usize) {
    // Distinct bodies, so the linker cannot fold the two into one symbol.
    std::hint::black_box("sqlite");
    alkstore_ops(engine, queue, ops);
}

/// alkstore's per-op drain on Postgres (a function of its own for callgrind).
#[inline(never)]
pub fn floor_alkstore_pg_ops(engine: &dyn Engine, queue: &str, ops: usize) {
    std::hint::black_box("postgres");
    alkstore_ops(engine, queue, ops);
}

/// alkstore's per-op drain: `ops` claims of one job, each acked.
#[inline(always)]
fn alkstore_ops(engine: &dyn Engine, queue: &str, ops: usize) {
    for _ in 0..ops {
        let mut got: Vec<Claimed> = engine.claim(queue, WORKER, 1).expect("claim");
        let job = got.pop().expect("a job with a backlog");
        assert_eq!(engine.ack(None, &[&job]).expect("ack"), 1, "fresh claim not acked");
        std::hint::black_box(job);
    }
}

/// A bare driver: the same statements, the rows read into owned values.
pub trait Bare {
    /// One claim of one job and its ack, `ops` times.
    fn ops(&mut self, queue: &str, ops: usize);
    /// Untimed upkeep between rounds (Postgres: VACUUM, autovacuum is off).
    fn between_rounds(&mut self) {}
}

/// The claimed row as a bare user would hold it: the engine's 15 columns.
type Row15 =
    (i64, String, String, i64, i64, i64, String, i64, i64, i64, Option<i64>, Option<i64>, Option<i64>, i64, f64);

/// The bare rusqlite loop.
pub struct BareSqlite {
    conn: Connection,
}

impl BareSqlite {
    /// A connection to the store's file with the engine's pragmas.
    pub fn open(path: &str) -> Self {
        let conn = Connection::open(path).expect("bare open");
        conn.busy_timeout(Duration::from_secs(5)).expect("busy_timeout");
        conn.pragma_update(None, "synchronous", "NORMAL").expect("synchronous");
        conn.pragma_update(None, "recursive_triggers", "ON").expect("recursive_triggers");
        conn.pragma_update(None, "foreign_keys", "ON").expect("foreign_keys");
        BareSqlite { conn }
    }
}

impl Bare for BareSqlite {
    fn ops(&mut self, queue: &str, ops: usize) {
        floor_bare_ops(self, queue, ops);
    }
}

/// The bare loop (SQLite), a function of its own for callgrind.
#[inline(never)]
pub fn floor_bare_ops(bare: &mut BareSqlite, queue: &str, ops: usize) {
    let mut claim = bare.conn.prepare_cached(alkstore_sqlite::hot_path::CLAIM_ONE).expect("prepare claim");
    let mut ack = bare.conn.prepare_cached(alkstore_sqlite::hot_path::ACK).expect("prepare ack");
    for _ in 0..ops {
        let row: Row15 = claim
            .query_row(params![queue, WORKER, 0i64], |r| {
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
            .expect("bare claim");
        let n = ack.execute(params![row.0, row.6, row.7, 0i64]).expect("bare ack");
        assert_eq!(n, 1);
        std::hint::black_box(row);
    }
}

/// The bare tokio-postgres loop: one client on a current-thread runtime, the
/// whole round inside one `block_on` (the cheapest way to drive the driver).
pub struct BarePostgres {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    claim: tokio_postgres::Statement,
    ack: tokio_postgres::Statement,
    vacuum: String,
}

impl BarePostgres {
    /// Connects to `url` and prepares the engine's statements for `schema`.
    pub fn connect(url: &str, schema: &str) -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let hot = alkstore_postgres::hot_path::for_schema(schema);
        let (client, claim, ack) = rt.block_on(async {
            let (client, conn) =
                tokio_postgres::connect(url, tokio_postgres::NoTls).await.map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            let claim = client.prepare(&hot.claim_one).await.map_err(|e| e.to_string())?;
            let ack = client.prepare(&hot.ack_one).await.map_err(|e| e.to_string())?;
            Ok::<_, String>((client, claim, ack))
        })?;
        Ok(BarePostgres { rt, client, claim, ack, vacuum: format!("VACUUM \"{schema}\".jobs") })
    }
}

impl Bare for BarePostgres {
    fn ops(&mut self, queue: &str, ops: usize) {
        floor_bare_pg_ops(self, queue, ops);
    }

    fn between_rounds(&mut self) {
        self.rt.block_on(self.client.batch_execute(&self.vacuum)).expect("vacuum");
    }
}

/// The bare loop (Postgres), a function of its own for callgrind.
#[inline(never)]
pub fn floor_bare_pg_ops(bare: &mut BarePostgres, queue: &str, ops: usize) {
    let (client, claim, ack) = (&bare.client, &bare.claim, &bare.ack);
    bare.rt.block_on(async {
        for _ in 0..ops {
            let row = client.query_one(claim, &[&0i64, &queue, &WORKER]).await.expect("bare claim");
            let r: Row15 = (
                row.get(0),
                row.get(1),
                row.get(2),
                row.get(3),
                row.get(4),
                row.get::<_, i32>(5).into(),
                row.get(6),
                row.get(7),
                row.get(8),
                row.get(9),
                row.get(10),
                row.get(11),
                row.get(12),
                row.get(13),
                row.get(14),
            );
            let n = client.execute(ack, &[&0i64, &r.0, &r.6, &r.7]).await.expect("bare ack");
            assert_eq!(n, 1);
            std::hint::black_box(r);
        }
    });
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the interleaved rounds on `engine` (already open on the store the
/// bare driver talks to) and prints per-op times and the ratio.
pub fn compare(label: &str, engine: &Arc<dyn Engine>, bare: &mut dyn Bare, knobs: Knobs, payload: &str) -> f64 {
    let (qa, qb) = (format!("floor-alkstore-{label}"), format!("floor-bare-{label}"));
    let (mut la, mut lb) = (0usize, 0usize);
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    // One untimed warm-up round each: statement caches, pool, page cache.
    for r in 0..=knobs.rounds {
        refill(engine.as_ref(), &qa, &mut la, knobs.backlog, payload);
        refill(engine.as_ref(), &qb, &mut lb, knobs.backlog, payload);
        bare.between_rounds();
        let sqlite = engine.kind() == "sqlite";
        let time_a = || {
            floor_mark_start();
            let t = Instant::now();
            if sqlite {
                floor_alkstore_sqlite_ops(engine.as_ref(), &qa, knobs.ops);
            } else {
                floor_alkstore_pg_ops(engine.as_ref(), &qa, knobs.ops);
            }
            let took = t.elapsed().as_secs_f64() / knobs.ops as f64;
            if sqlite {
                floor_mark_end_alkstore_sqlite();
            } else {
                floor_mark_end_alkstore_postgres();
            }
            took
        };
        let mut time_b = || {
            floor_mark_start();
            let t = Instant::now();
            bare.ops(&qb, knobs.ops);
            let took = t.elapsed().as_secs_f64() / knobs.ops as f64;
            if sqlite {
                floor_mark_end_bare_sqlite();
            } else {
                floor_mark_end_bare_postgres();
            }
            took
        };
        let (a, b) = if r % 2 == 0 {
            let a = time_a();
            (a, time_b())
        } else {
            let b = time_b();
            (time_a(), b)
        };
        la -= knobs.ops;
        lb -= knobs.ops;
        if r > 0 {
            ta.push(a);
            tb.push(b);
        }
    }
    let ratios: Vec<f64> = ta.iter().zip(&tb).map(|(a, b)| b / a).collect();
    let (a, b) = (median(&mut ta), median(&mut tb));
    let mut rs = ratios.clone();
    let ratio = median(&mut rs);
    println!(
        "floor {label:8} claim+ack per op: alkstore {:7.2} us, bare driver {:7.2} us, ratio {ratio:.3} \
         (median of {} rounds of {} ops at backlog {}; per round: {})",
        a * 1e6,
        b * 1e6,
        knobs.rounds,
        knobs.ops,
        knobs.backlog,
        ratios.iter().map(|r| format!("{r:.3}")).collect::<Vec<_>>().join(" "),
    );
    ratio
}
