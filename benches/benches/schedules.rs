//! The scheduler's tick (SPEC §23): 1,000 cron schedules against 1,000
//! `@every` schedules, every one due, on SQLite. A tick reads the due list,
//! then per schedule locks its row, plans its fires and enqueues one job;
//! the cron side adds the walk to the next fire in its zone (Europe/Berlin,
//! so the zone is looked up and read, not UTC's shortcut). The goal: a cron
//! tick costs at most 2× an `@every` one. The engine's clock moves a minute
//! before each timed tick, so every schedule is due again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alkstore_core::schedule::tick::tick;
use alkstore_core::{Engine, NewSchedule, OpenOptions, Store};
use alkstore_sqlite::SqliteOptions;
use criterion::{Criterion, Throughput};

const SCHEDULES: usize = 1_000;

fn store(dir: &tempfile::TempDir, spec: &str, tz: &str) -> (Store, Arc<dyn Engine>) {
    let path = dir.path().join(format!("{}.db", spec.replace([' ', '*', '@'], "_")));
    let engine = alkstore_sqlite::open(&path.to_string_lossy(), &SqliteOptions::default()).expect("open");
    let store = Store::new(engine.clone(), OpenOptions::default());
    for i in 0..SCHEDULES {
        let s = NewSchedule {
            name: format!("s{i:04}"),
            spec: spec.to_owned(),
            tz: tz.to_owned(),
            queue: "q".to_owned(),
            payload: "{}".to_owned(),
            priority: 0,
            max_attempts: None,
            expires_s: None,
        };
        store.schedule(None, &s).expect("schedule");
    }
    (store, engine)
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("schedule_tick_1000_due");
    g.throughput(Throughput::Elements(SCHEDULES as u64));
    for (label, spec, tz) in [("every", "@every 60s", "UTC"), ("cron", "* * * * *", "Europe/Berlin")] {
        let (_store, engine) = store(&dir, spec, tz);
        g.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    engine.advance_clock(60);
                    let t = Instant::now();
                    let report = tick(&*engine).expect("tick");
                    spent += t.elapsed();
                    assert_eq!(report.fired, SCHEDULES as i64, "every schedule fired once");
                }
                spent
            });
        });
        engine.close();
    }
    g.finish();
    c.final_summary();
}
