//! Operating queues (SPEC §18): unique keys, pause and resume, the dead
//! letters' redrive and purge, forgetting a queue.

use std::time::{Duration, Instant};

use alkstore_core::rules::names::outbox_queue;
use alkstore_core::{Error, JobState, LimitChange, NewJob, OnFailure, ParamStyle, QueueOpts, Store};

use crate::concurrency::{on_threads, reopened};
use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __operate_cases { ($harness:ty) => { $crate::__cases! { $harness; operate {
    a_live_key_returns_the_live_job_and_writes_nothing, a_key_is_free_again_once_its_job_is_gone,
    repeated_keys_in_one_call_share_the_first_job, concurrent_enqueues_of_one_key_make_one_job,
    a_foreign_enqueue_honours_unique_keys, a_paused_queue_hands_out_nothing_until_resumed,
    resume_wakes_waiting_claimers, requeue_dead_moves_rows_back_with_their_stamps,
    requeue_dead_leaves_a_job_whose_key_is_live_again, purge_dead_picks_by_ids_age_and_limit,
    redrive_in_a_rolled_back_transaction_changes_nothing, forget_queue_refuses_while_the_queue_holds_anything,
    forget_queue_drops_every_row_keyed_by_the_queue, forget_queue_waits_for_an_enqueue_in_flight,
} } } }

fn keyed(payload: &str, key: &str) -> NewJob {
    NewJob { unique_key: Some(key.to_owned()), ..job(payload) }
}

/// Claims `id` (the only ready job of `queue`) and fails it: dead.
fn kill<H: Harness>(db: &Db<H>, queue: &str, id: i64) -> TestResult {
    let c = db.take(queue, "w")?;
    assert_eq!(c.id, id);
    assert!(db.store.fail(None, &c, "boom")?);
    Ok(())
}

pub fn a_live_key_returns_the_live_job_and_writes_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let first = db.put_job("q", &opts(), keyed("1", "invoice-42"))?;
    assert_eq!(db.put_job("q", &opts(), keyed("2", "invoice-42"))?, first, "pending: the same job");
    let claimed = db.take("q", "w")?;
    assert_eq!(db.put_job("q", &opts(), keyed("3", "invoice-42"))?, first, "processing: still live");
    let job = s.get_job(None, "q", first)?.ok_or("the job")?;
    assert_eq!((job.payload.as_str(), job.unique_key.as_deref()), ("1", Some("invoice-42")), "nothing rewritten");
    assert_eq!((job.state, job.attempts, claimed.claim_token), (JobState::Processing, 1, 1), "nor its lease");
    let other = db.put_job("other", &opts(), keyed("4", "invoice-42"))?;
    assert_ne!(other, first, "a key is per queue");
    assert_eq!(s.stats("q")?.processing + s.stats("q")?.pending, 1);
    for bad in [String::new(), "x".repeat(201), "a\0b".to_owned()] {
        assert!(matches!(s.enqueue(None, "q", &opts(), &[keyed("5", &bad)]), Err(Error::Value(_))), "{bad:?}");
    }
    Ok(())
}

pub fn a_key_is_free_again_once_its_job_is_gone<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let acked = db.put_job("q", &opts(), keyed("1", "k"))?;
    s.ack(None, &[&db.take("q", "w")?])?;
    let cancelled = db.put_job("q", &opts(), keyed("2", "k"))?;
    assert_ne!(cancelled, acked, "acked: the key is free");
    assert!(s.cancel(None, "q", cancelled)?);
    let dead = db.put_job("q", &opts(), keyed("3", "k"))?;
    assert_ne!(dead, cancelled, "cancelled: the key is free");
    kill(db, "q", dead)?;
    assert_eq!(s.get_job(None, "q", dead)?.ok_or("dead row")?.unique_key.as_deref(), Some("k"), "dead keeps it");
    let live = db.put_job("q", &opts(), keyed("4", "k"))?;
    assert!(live != dead && s.get_job(None, "q", live)?.ok_or("row")?.state == JobState::Pending, "dead: free");
    Ok(())
}

pub fn repeated_keys_in_one_call_share_the_first_job<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let old = db.put_job("q", &opts(), keyed("old", "b"))?;
    let ids = s.enqueue(None, "q", &opts(), &[keyed("a1", "a"), job("x"), keyed("a2", "a"), keyed("b2", "b")])?;
    assert_eq!((ids[2], ids[3]), (ids[0], old), "{ids:?}");
    assert!(ids[0] < ids[1], "fresh ids ascend in input order: {ids:?}");
    assert_eq!(s.get_job(None, "q", ids[0])?.ok_or("row")?.payload, "a1", "the first is kept");
    assert_eq!(s.stats("q")?.pending, 3);
    Ok(())
}

/// Eight handles enqueue one key at once: one job, and every caller gets its id.
pub fn concurrent_enqueues_of_one_key_make_one_job<H: Harness>(db: &Db<H>) -> TestResult {
    let stores = reopened(db, 8)?;
    for round in 0..5 {
        let key = format!("k{round}");
        let ids = on_threads(&stores, |i, s| s.enqueue(None, "q", &opts(), &[keyed(&i.to_string(), &key)]))?;
        let first = ids[0][0];
        assert!(ids.iter().all(|v| v[0] == first), "round {round}: {ids:?}");
    }
    assert_eq!(db.store.stats("q")?.pending, 5);
    Ok(())
}

pub fn a_foreign_enqueue_honours_unique_keys<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let live = db.put_job("q", &opts(), keyed("live", "b"))?;
    let style = if s.engine_kind() == "sqlite" { ParamStyle::Qmark } else { ParamStyle::Dollar };
    let jobs = [keyed("a1", "a"), job("x"), keyed("a2", "a"), keyed("b2", "b")];
    let call = s.foreign_enqueue("q", &opts(), &jobs, style)?.ok_or("a statement")?;
    assert_eq!(call.rows(), 3, "the repeat is not written");
    let ids = db.run_foreign(&call)?;
    assert_eq!((ids[2], ids[3]), (ids[0], live), "{ids:?}");
    assert_eq!(s.stats("q")?.pending, 3);
    Ok(())
}

pub fn a_paused_queue_hands_out_nothing_until_resumed<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let held = db.put("q", &opts(), "held")?;
    let in_flight = db.take("q", "w")?;
    assert_eq!(in_flight.id, held);
    let lapsing = db.put("q", &opts(), "lapsing")?;
    assert_eq!(db.take("q", "w")?.id, lapsing);
    let a = db.put("q", &opts(), "a")?;
    s.pause("q")?;
    s.pause("q")?;
    assert!(s.is_paused("q")? && !s.is_paused("other")?);
    assert!(s.claim("q", "w", 1)?.is_empty() && s.claim("q", "w", 10)?.is_empty(), "nothing handed out");
    let b = db.put("q", &opts(), "b")?;
    assert!(s.heartbeat(&in_flight, Some(60))?.is_some(), "in-flight jobs go on");
    assert_eq!(s.ack(None, &[&in_flight])?, 1);
    db.clock(400)?;
    assert!(s.claim("q", "w", 10)?.is_empty(), "lapsed leases neither");
    let st = s.stats("q")?;
    assert!(st.paused && st.pending == 2 && !s.stats("other")?.paused, "{st:?}");
    s.pause("idle")?;
    assert_eq!(s.queue_names()?, ["idle", "q"], "a paused queue is listed, jobs or not");
    db.put("other", &opts(), "o")?;
    assert_eq!(db.take("other", "w")?.payload, "o", "other queues are untouched");
    s.resume("q")?;
    s.resume("q")?;
    assert!(!s.is_paused("q")? && !s.stats("q")?.paused);
    assert_eq!(s.claim("q", "w", 10)?.iter().map(|c| c.id).collect::<Vec<_>>(), [lapsing, a, b]);
    Ok(())
}

pub fn resume_wakes_waiting_claimers<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let hub = s.wakes()?;
    db.put("q", &opts(), "x")?;
    s.pause("q")?;
    let seen = hub.generation();
    let other: Store = db.reopen()?;
    other.resume("q")?;
    assert!(hub.wait(seen, Instant::now() + Duration::from_secs(5)), "the resume's commit wakes");
    assert_eq!(s.claim("q", "w", 1)?.len(), 1);
    Ok(())
}

pub fn requeue_dead_moves_rows_back_with_their_stamps<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = alkstore_core::QueueOpts { max_attempts: 1, visibility_timeout_s: 45, ..opts() };
    let ids: Vec<i64> = (0..4)
        .map(|i| db.put_job("q", &o, NewJob { priority: 0, ..job(&format!("[{i}]")) }))
        .collect::<TestResult<_>>()?;
    let mut handles = Vec::new();
    for id in &ids {
        let c = db.take("q", "w")?;
        assert_eq!(c.id, *id);
        assert!(s.fail(None, &c, "boom")?);
        handles.push(c);
    }
    let elsewhere = db.put("other", &o, "o")?;
    kill(db, "other", elsewhere)?;
    let moved = s.requeue_dead(None, "q", Some(&[ids[2], elsewhere, 999_999, ids[1]]), 1000)?;
    assert_eq!(moved, [ids[1], ids[2]], "other queues' and unknown ids are skipped");
    let row = s.get_job(None, "q", ids[1])?.ok_or("row")?;
    assert_eq!((row.state, row.attempts, row.max_attempts, row.payload.as_str()), (JobState::Pending, 0, 1, "[1]"));
    assert!(row.run_at <= db.now()? && row.last_error.is_none());
    assert_eq!(s.ack(None, &[&handles[1]])?, 0, "a handle from before its death stays fenced");
    assert_eq!(s.requeue_dead(None, "q", None, 1)?, [ids[0]], "the oldest first, at most limit");
    assert_eq!(s.stats("q")?.dead, 1);
    let c = s.claim("q", "w", 10)?;
    assert_eq!(c.len(), 3);
    assert!(c.iter().all(|c| c.deadline - c.claimed_at == 45 && c.attempts == 1), "stamps kept, attempts anew");
    assert!(s.requeue_dead(None, "q", Some(&[ids[0]]), 1000)?.is_empty(), "not dead: skipped");
    assert!(matches!(s.requeue_dead(None, "q", None, 0), Err(Error::Value(_))));
    Ok(())
}

pub fn requeue_dead_leaves_a_job_whose_key_is_live_again<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = alkstore_core::QueueOpts { max_attempts: 1, ..opts() };
    let first = db.put_job("q", &o, keyed("1", "k"))?;
    kill(db, "q", first)?;
    let second = db.put_job("q", &o, keyed("2", "k"))?;
    kill(db, "q", second)?;
    let live = db.put_job("q", &o, keyed("3", "k"))?;
    assert!(s.requeue_dead(None, "q", None, 1000)?.is_empty(), "the key is live");
    assert_eq!(s.stats("q")?.dead, 2);
    assert!(s.cancel(None, "q", live)?);
    assert_eq!(s.requeue_dead(None, "q", None, 1000)?, [first], "two dead rows of one key: only the oldest moves");
    assert_eq!(s.stats("q")?.dead, 1);
    Ok(())
}

pub fn purge_dead_picks_by_ids_age_and_limit<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = alkstore_core::QueueOpts { max_attempts: 1, ..opts() };
    let mut ids = Vec::new();
    for i in 0..5 {
        let id = db.put("q", &o, &i.to_string())?;
        kill(db, "q", id)?;
        ids.push(id);
        if i == 1 {
            db.clock(100)?;
        }
    }
    assert_eq!(s.purge_dead(None, "q", Some(&[ids[4], 999_999]), None, 1000)?, 1);
    assert_eq!(s.purge_dead(None, "q", None, Some(50), 1000)?, 2, "only those dead for 50 s");
    assert_eq!(s.purge_dead(None, "q", None, None, 1)?, 1, "the oldest, at most limit");
    assert_eq!(s.dead_jobs("q", 10, None)?.iter().map(|j| j.id).collect::<Vec<_>>(), [ids[3]]);
    assert!(matches!(s.purge_dead(None, "q", None, Some(-1), 10), Err(Error::Value(_))));
    Ok(())
}

pub fn redrive_in_a_rolled_back_transaction_changes_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let o = alkstore_core::QueueOpts { max_attempts: 1, ..opts() };
    let (a, b) = (db.put("q", &o, "a")?, db.put("q", &o, "b")?);
    kill(db, "q", a)?;
    kill(db, "q", b)?;
    let mut tx = s.begin()?;
    assert_eq!(s.requeue_dead(Some(&mut tx), "q", Some(&[a]), 1000)?, [a]);
    assert_eq!(s.purge_dead(Some(&mut tx), "q", Some(&[b]), None, 1000)?, 1);
    tx.rollback()?;
    assert_eq!(s.stats("q")?.dead, 2);
    let mut tx = s.begin()?;
    s.requeue_dead(Some(&mut tx), "q", Some(&[a]), 1000)?;
    tx.commit()?;
    assert_eq!((s.stats("q")?.dead, s.stats("q")?.pending), (1, 1));
    Ok(())
}

/// A refused forget, and that it changed nothing.
fn refused<H: Harness>(db: &Db<H>, queue: &str, holds: &str) -> TestResult {
    match db.store.forget_queue(queue) {
        Err(Error::Value(m)) if m.contains(holds) && m.ends_with("nothing was changed") => {}
        other => return Err(format!("forget of {queue:?} holding {holds}: {other:?}").into()),
    }
    assert!(db.store.queue_names()?.iter().any(|q| q == queue), "still listed");
    Ok(())
}

/// A live, waiting or dead job, or a result still kept, is what a caller may
/// read: a queue holding one is not forgotten, and nothing of it changes.
pub fn forget_queue_refuses_while_the_queue_holds_anything<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let once = QueueOpts { max_attempts: 1, ..opts() };
    let parent = db.put("q", &once, "p")?;
    refused(db, "q", "live jobs")?;
    let waiting = db.put_job("w", &once, NewJob { after: vec![parent], on_failure: OnFailure::Cancel, ..job("c") })?;
    assert!(db.one("w", "x")?.is_none(), "the child waits");
    refused(db, "w", "live jobs")?;
    let running = db.take("q", "w")?;
    s.pause("q")?;
    refused(db, "q", "live jobs")?;
    assert!(s.is_paused("q")?, "a refused forget kept the pause");
    assert!(s.fail(None, &running, "boom")?, "the parent dies, and its waiting child with it");
    refused(db, "q", "dead jobs")?;
    refused(db, "w", "dead jobs")?;
    assert_eq!(s.get_job(None, "w", waiting)?.map(|j| j.state), Some(JobState::Dead));
    assert_eq!(s.purge_dead(None, "q", None, None, 1000)? + s.purge_dead(None, "w", None, None, 1000)?, 2);
    assert!(s.forget_queue("w")?);

    let kept = db.put_job("r", &once, NewJob { keep_result_s: Some(100), ..job("k") })?;
    assert!(s.ack_result(None, &db.take("r", "w")?, "42")?);
    refused(db, "r", "kept results")?;
    db.clock(101)?;
    assert!(s.forget_queue("r")?, "its keep has passed");
    db.clock(-101)?;
    assert_eq!(s.result(kept)?, None, "the expired result went with the queue");
    assert!(s.forget_queue("q")?);
    assert!(!s.is_paused("q")?);
    Ok(())
}

/// Everything keyed by the queue goes: its listing, pause, limits, rate log
/// and completion counts. A later enqueue lists it again, as new.
pub fn forget_queue_drops_every_row_keyed_by_the_queue<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let hourly = LimitChange { rate: Some(Some((1, 3600.0))), ..LimitChange::default() };
    s.set_limits("q", &hourly)?;
    db.put("q", &opts(), "1")?;
    assert_eq!(s.ack(None, &[&db.take("q", "w")?])?, 1, "the one claim the hour's rate allows");
    s.pause("q")?;
    db.engine().record_completions(&[("q".to_owned(), 3), ("other".to_owned(), 1)])?;
    db.put("other", &opts(), "o")?;
    assert_eq!(s.queue_names()?, ["other", "q"]);

    assert!(s.forget_queue("q")?, "it was known");
    assert_eq!(s.queue_names()?, ["other"]);
    assert!(!s.is_paused("q")? && s.limits("q")? == Default::default());
    let counted: Vec<String> = s.completions(60)?.into_iter().map(|m| m.queue).collect();
    assert_eq!(counted, ["other"], "its completion counts went, the other queue's stayed");
    assert!(!s.forget_queue("q")?, "nothing left to forget");
    assert!(!s.forget_queue("never-seen")?);

    s.set_limits("q", &hourly)?;
    db.put("q", &opts(), "2")?;
    assert!(db.one("q", "w")?.is_some(), "the old claim left the rate log with the queue");
    assert_eq!(s.queue_names()?, ["other", "q"], "an enqueue lists it again");

    let backing = outbox_queue("hooks");
    db.put(&backing, &opts(), "h")?;
    assert_eq!(s.ack(None, &[&db.take(&backing, "w")?])?, 1);
    assert!(s.forget_queue(&backing)?, "a name as queue_names lists it, an outbox's too");
    for bad in ["", "__alkstore_scheduler", "__alkstore_outbox:", "a\0b"] {
        assert!(matches!(s.forget_queue(bad), Err(Error::InvalidName { .. })), "{bad:?}");
    }
    Ok(())
}

/// The race of a forget with an enqueue that has not committed: the forget
/// waits for it, then sees its job and refuses. Without the wait (Postgres
/// under READ COMMITTED does not see the uncommitted job) it would drop the
/// listing of a queue that is about to hold a job.
pub fn forget_queue_waits_for_an_enqueue_in_flight<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("q", &opts(), "known")?;
    assert_eq!(s.ack(None, &[&db.take("q", "w")?])?, 1, "the queue is listed and empty");
    let producer = db.reopen()?;
    let mut tx = producer.begin()?;
    let id = producer.enqueue(Some(&mut tx), "q", &opts(), &[job("in flight")])?[0];
    std::thread::scope(|scope| -> TestResult {
        let forget = scope.spawn(|| s.forget_queue("q"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(!forget.is_finished(), "the forget must wait for the enqueue in flight");
        tx.commit()?;
        let got = forget.join().map_err(|_| "the forget thread panicked")?;
        assert!(matches!(&got, Err(Error::Value(m)) if m.contains("live jobs")), "{got:?}");
        Ok(())
    })?;
    let c = db.take("q", "w")?;
    assert_eq!((c.id, s.ack(None, &[&c])?), (id, 1));
    assert!(s.queue_names()?.iter().any(|q| q == "q"), "still listed once its job is gone");
    Ok(())
}
