//! Queue behaviour on one store (SPEC §4, ADR 0001).

mod common;

use alkstore_core::{JobState, NewJob, QueueOpts, QueueStats, ReadyAt, Result, Swept};
use common::{job, opts, Fixture};

#[test]
fn fifo_under_equal_priority_then_priority_first() -> Result<()> {
    let f = Fixture::new()?;
    let a = f.put("q", "1")?;
    let b = f.put("q", "2")?;
    let hi = f.put_job("q", &opts(), NewJob { priority: 5, ..job("hi") })?;
    let lo = f.put_job("q", &opts(), NewJob { priority: -5, ..job("lo") })?;
    let order: Vec<i64> =
        (0..4).map(|_| f.one("q", "w").map(|j| j.map(|j| j.id))).collect::<Result<Option<Vec<_>>>>()?.unwrap();
    assert_eq!(order, vec![hi, a, b, lo]);
    assert!(f.one("q", "w")?.is_none());
    Ok(())
}

#[test]
fn claim_batch_is_sorted_and_bounded() -> Result<()> {
    let f = Fixture::new()?;
    let mut ids = Vec::new();
    for p in [0, 3, 1, 3, 2] {
        ids.push(f.put_job("q", &opts(), NewJob { priority: p, ..job("x") })?);
    }
    let got = common::claim(&*f.engine, "q", "w", 4)?;
    let got: Vec<(i32, i64)> = got.iter().map(|j| (j.priority, j.id)).collect();
    assert_eq!(got, vec![(3, ids[1]), (3, ids[3]), (2, ids[4]), (1, ids[2])]);
    assert_eq!(common::claim(&*f.engine, "q", "w", 10)?.len(), 1);
    Ok(())
}

#[test]
fn claim_stamps_the_row() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put_job("q", &QueueOpts { visibility_timeout_s: 77, ..opts() }, job(r#"{"b":1,"a":[1.5,null]}"#))?;
    let j = f.one("q", "w1")?.unwrap();
    assert_eq!(j.id, id);
    assert_eq!(j.payload, r#"{"b":1,"a":[1.5,null]}"#, "payload text kept byte-for-byte");
    assert_eq!((j.attempts, j.claim_token, j.max_attempts), (1, 1, 3));
    assert_eq!(j.worker_id, "w1");
    assert_eq!(j.deadline - j.claimed_at, 77);
    assert_eq!(j.queue, "q");
    let row = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!(row.state, JobState::Processing);
    assert_eq!(row.deadline, Some(j.deadline));
    Ok(())
}

#[test]
fn queues_are_separate() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("a", "1")?;
    assert!(f.one("b", "w")?.is_none());
    assert!(f.engine.get_job(None, "b", id)?.is_none());
    assert!(!f.engine.cancel(None, "b", id)?);
    assert_eq!(f.one("a", "w")?.map(|j| j.id), Some(id));
    Ok(())
}

#[test]
fn delayed_job_waits_for_the_clock() -> Result<()> {
    let f = Fixture::new()?;
    let now = f.engine.now()?;
    let delayed = f.put_job("q", &opts(), NewJob { ready: ReadyAt::Delay(100), ..job("d") })?;
    let at = f.put_job("q", &opts(), NewJob { ready: ReadyAt::At(now + 200), ..job("a") })?;
    assert!(f.one("q", "w")?.is_none());
    let row = f.engine.get_job(None, "q", delayed)?.unwrap();
    assert!((now + 100..=now + 101).contains(&row.run_at), "run_at {} vs now {now}", row.run_at);
    assert_eq!(f.engine.get_job(None, "q", at)?.unwrap().run_at, now + 200);
    f.engine.advance_clock(101);
    let d = f.one("q", "w")?.unwrap();
    assert_eq!(d.id, delayed);
    assert_eq!(f.engine.ack(None, &[&d])?, 1);
    assert!(f.one("q", "w")?.is_none());
    f.engine.advance_clock(100);
    assert_eq!(f.one("q", "w")?.map(|j| j.id), Some(at));
    Ok(())
}

#[test]
fn reclaim_after_lapse_eats_an_attempt_and_fences_the_old_handle() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "x")?;
    let first = f.one("q", "w")?.unwrap();
    assert!(f.one("q", "w")?.is_none(), "a live lease is not claimable");
    f.engine.advance_clock(31);
    // Same worker name, new claim: only the token tells the handles apart.
    let second = f.one("q", "w")?.unwrap();
    assert_eq!(second.id, id);
    assert_eq!((second.attempts, second.claim_token), (2, 2));
    assert_eq!(second.run_at, first.run_at, "a lapsed row keeps its run_at");
    assert_eq!(f.engine.ack(None, &[&first])?, 0, "stale handle refused");
    assert!(!common::retry(&*f.engine, None, &first, "e", Some(0))?);
    assert!(!f.engine.fail(None, &first, "e")?);
    assert_eq!(f.engine.heartbeat(&first, 30)?, None);
    assert!(!f.engine.release(&first)?);
    assert_eq!(f.engine.ack(None, &[&second])?, 1);
    assert!(f.engine.get_job(None, "q", id)?.is_none());
    Ok(())
}

#[test]
fn exhaustion_by_reclaim_moves_to_dead() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put_job("q", &opts(), NewJob { max_attempts: Some(2), ..job("x") })?;
    let other = f.put_job("q", &opts(), NewJob { priority: -1, ..job("y") })?;
    let a = f.one("q", "w")?.unwrap();
    assert_eq!(a.id, id);
    f.engine.advance_clock(31);
    let b = f.one("q", "w")?.unwrap();
    assert_eq!((b.id, b.attempts), (id, 2));
    f.engine.advance_clock(31);
    // The exhausted row goes to dead and the claim goes on to the next job.
    let c = f.one("q", "w")?.unwrap();
    assert_eq!(c.id, other);
    let dead = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("attempts exhausted"));
    assert_eq!((dead.attempts, dead.max_attempts), (2, 2));
    assert_eq!(dead.worker_id.as_deref(), Some("w"));
    assert_eq!(dead.deadline, Some(b.deadline));
    assert!(dead.died_at.is_some());
    assert_eq!(f.engine.ack(None, &[&b])?, 0);
    Ok(())
}

#[test]
fn heartbeat_is_absolute_and_late_heartbeat_is_refused() -> Result<()> {
    let f = Fixture::new()?;
    f.put("q", "x")?;
    let j = f.one("q", "w")?.unwrap();
    let d = f.engine.heartbeat(&j, 25)?.unwrap();
    assert!(d < j.deadline, "absolute: now + 25 is before the 30 s claim deadline");
    f.engine.advance_clock(20);
    let d2 = f.engine.heartbeat(&j, 100)?.unwrap();
    assert!(d2 >= j.claimed_at + 120, "{d2}");
    f.engine.advance_clock(101);
    assert_eq!(f.engine.heartbeat(&j, 100)?, None, "late heartbeat never steals the job back");
    assert_eq!(f.engine.ack(None, &[&j])?, 0);
    Ok(())
}

#[test]
fn retry_goes_back_to_pending_then_dead_at_budget() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put_job("q", &QueueOpts { max_attempts: 2, backoff_base_s: 1000.0, ..opts() }, job("x"))?;
    let a = f.one("q", "w")?.unwrap();
    let now = f.engine.now()?;
    assert!(common::retry(&*f.engine, None, &a, "boom", None)?);
    let row = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!(row.state, JobState::Pending);
    // Attempt 1 with base 1000: the curve draws from [500, 1000].
    assert!((now + 500..=now + 1001).contains(&row.run_at), "run_at {} now {now}", row.run_at);
    // A pending job holds no lease (SPEC §4.4); claimed_at keeps the last claim.
    assert_eq!((row.worker_id.as_deref(), row.deadline), (None, None));
    assert_eq!(row.claimed_at, Some(a.claimed_at));
    assert_eq!(row.last_error, None);
    assert!(!common::retry(&*f.engine, None, &a, "again", Some(0))?, "a handle is good for one op");
    assert!(f.one("q", "w")?.is_none());
    f.engine.advance_clock(1001);
    let b = f.one("q", "w")?.unwrap();
    assert_eq!(b.attempts, 2);
    assert!(common::retry(&*f.engine, None, &b, "final", Some(0))?, "at budget: still true");
    let dead = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("final"));
    assert!(f.one("q", "w")?.is_none());
    Ok(())
}

#[test]
fn retry_with_explicit_delay() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "x")?;
    let a = f.one("q", "w")?.unwrap();
    let now = f.engine.now()?;
    assert!(common::retry(&*f.engine, None, &a, "", Some(50))?);
    let run_at = f.engine.get_job(None, "q", id)?.unwrap().run_at;
    assert!((now + 50..=now + 51).contains(&run_at));
    Ok(())
}

#[test]
fn fail_moves_to_dead_keeping_every_field() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put_job("q", &opts(), NewJob { priority: 7, expires_s: Some(1000), ..job(r#"{"k":"v"}"#) })?;
    let before = f.engine.get_job(None, "q", id)?.unwrap();
    let j = f.one("q", "w")?.unwrap();
    assert!(f.engine.fail(None, &j, "bad input")?);
    assert!(!f.engine.fail(None, &j, "twice")?);
    let dead = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.payload, r#"{"k":"v"}"#);
    assert_eq!((dead.priority, dead.attempts, dead.max_attempts), (7, 1, 3));
    assert_eq!(
        (dead.enqueued_at, dead.run_at, dead.expires_at),
        (before.enqueued_at, before.run_at, before.expires_at)
    );
    assert_eq!((dead.claimed_at, dead.deadline), (Some(j.claimed_at), Some(j.deadline)));
    assert_eq!(dead.worker_id.as_deref(), Some("w"));
    assert_eq!(dead.last_error.as_deref(), Some("bad input"));
    assert!(dead.died_at.unwrap() >= j.claimed_at);
    assert!(!f.engine.cancel(None, "q", id)?, "cancel never touches dead rows");
    Ok(())
}

#[test]
fn release_refunds_the_attempt_not_the_token() -> Result<()> {
    let f = Fixture::new()?;
    let id = f.put("q", "x")?;
    let a = f.one("q", "w")?.unwrap();
    assert!(f.engine.release(&a)?);
    assert!(!f.engine.release(&a)?);
    let row = f.engine.get_job(None, "q", id)?.unwrap();
    assert_eq!((row.state, row.attempts), (JobState::Pending, 0));
    assert_eq!((row.worker_id.as_deref(), row.deadline, row.claimed_at), (None, None, Some(a.claimed_at)));
    let b = f.one("q", "w")?.unwrap();
    assert_eq!((b.attempts, b.claim_token), (1, 2));
    assert_eq!(f.engine.ack(None, &[&a])?, 0, "the released handle stays fenced");
    assert_eq!(f.engine.ack(None, &[&b])?, 1);
    Ok(())
}

#[test]
fn cancel_then_ack_is_false() -> Result<()> {
    let f = Fixture::new()?;
    let pending = f.put("q", "p")?;
    let held = f.put("q", "h")?;
    let j = common::claim(&*f.engine, "q", "w", 2)?.into_iter().find(|j| j.id == held).unwrap();
    assert!(f.engine.release(&j)?);
    let j = common::claim(&*f.engine, "q", "w", 2)?.into_iter().find(|j| j.id == held).unwrap();
    assert!(f.engine.cancel(None, "q", held)?);
    assert!(f.engine.cancel(None, "q", pending)?);
    assert!(!f.engine.cancel(None, "q", pending)?);
    assert_eq!(f.engine.ack(None, &[&j])?, 0);
    assert_eq!(f.engine.heartbeat(&j, 10)?, None);
    assert!(f.engine.get_job(None, "q", held)?.is_none(), "cancel records no dead row");
    assert_eq!(f.engine.stats("q")?, QueueStats::default());
    Ok(())
}

#[test]
fn ack_batch_skips_invalid_handles() -> Result<()> {
    let f = Fixture::new()?;
    for i in 0..4 {
        f.put("q", &i.to_string())?;
    }
    let js = common::claim(&*f.engine, "q", "w", 4)?;
    assert!(f.engine.cancel(None, "q", js[1].id)?);
    assert!(f.engine.release(&js[2])?);
    let refs: Vec<_> = js.iter().collect();
    assert_eq!(f.engine.ack(None, &refs)?, 2);
    assert_eq!(f.engine.ack(None, &refs)?, 0);
    assert_eq!(f.engine.stats("q")?.pending, 1);
    Ok(())
}

#[test]
fn dead_jobs_page_newest_first() -> Result<()> {
    let f = Fixture::new()?;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(f.put("q", &i.to_string())?);
        let j = f.one("q", "w")?.unwrap();
        assert!(f.engine.fail(None, &j, &format!("e{i}"))?);
    }
    f.put("other", "x").and_then(|_| f.one("other", "w")).and_then(|j| f.engine.fail(None, &j.unwrap(), "o"))?;
    let page1 = f.engine.dead_jobs("q", 2, None)?;
    assert_eq!(page1.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[4], ids[3]]);
    let page2 = f.engine.dead_jobs("q", 2, Some(page1[1].id))?;
    assert_eq!(page2.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[2], ids[1]]);
    let page3 = f.engine.dead_jobs("q", 2, Some(page2[1].id))?;
    assert_eq!(page3.iter().map(|j| j.id).collect::<Vec<_>>(), vec![ids[0]]);
    assert!(f.engine.dead_jobs("q", 2, Some(ids[0]))?.is_empty());
    assert!(page1.iter().all(|j| j.state == JobState::Dead && j.queue == "q"));
    assert_eq!(page3[0].last_error.as_deref(), Some("e0"));
    Ok(())
}

#[test]
fn stats_follow_the_spec_definitions() -> Result<()> {
    let f = Fixture::new()?;
    assert_eq!(f.engine.stats("q")?, QueueStats::default());
    f.put("q", "a")?;
    f.put_job("q", &opts(), NewJob { expires_s: Some(5), ..job("expiring") })?;
    f.put_job("q", &opts(), NewJob { ready: ReadyAt::Delay(100), ..job("later") })?;
    f.put("q", "to-claim")?;
    f.put("q", "to-fail")?;
    f.put("elsewhere", "x")?;
    f.engine.advance_clock(10);
    // Claims take the first three by id: "a", "expiring" (not claimable: expired),
    // so "to-claim" and "to-fail"... take them explicitly by id.
    let mut claimed = common::claim(&*f.engine, "q", "w", 10)?;
    assert_eq!(claimed.len(), 3, "the expired pending row is not claimable");
    let failed = claimed.pop().unwrap();
    assert!(f.engine.fail(None, &failed, "x")?);
    let held = claimed.pop().unwrap();
    assert!(f.engine.release(&held)?);
    // Now: pending = released + expired-unswept; scheduled = later; processing = 1; dead = 1.
    let s = f.engine.stats("q")?;
    assert_eq!((s.pending, s.scheduled, s.processing, s.dead), (2, 1, 1, 1), "{s:?}");
    // The oldest ready row is the unswept expired one, ready since enqueue (10 s ago).
    let age = s.oldest_ready_age_s.unwrap();
    assert!((10..=11).contains(&age), "{age}");
    f.engine.advance_clock(31);
    let s = f.engine.stats("q")?;
    assert_eq!(s.processing, 1, "lapsed leases still count as processing");
    Ok(())
}

#[test]
fn sweep_moves_pending_and_processing_expired_rows_and_purges() -> Result<()> {
    let f = Fixture::new()?;
    let keep_forever = opts();
    let keep_100 = QueueOpts { dead_letter_retention_s: Some(100), ..opts() };
    let p = f.put_job("q", &keep_100, NewJob { expires_s: Some(60), ..job("pending") })?;
    let h = f.put_job("q", &keep_forever, NewJob { expires_s: Some(60), ..job("held") })?;
    let live = f.put_job("q", &opts(), NewJob { expires_s: Some(1000), ..job("live") })?;
    let other = f.put_job("other", &opts(), NewJob { expires_s: Some(60), ..job("other") })?;
    let held = common::claim(&*f.engine, "q", "w", 1)?.pop().unwrap();
    assert_eq!(held.id, p);
    // Make "pending" pending again and keep "held" leased past expiry.
    assert!(f.engine.release(&held)?);
    let held = common::claim(&*f.engine, "q", "w", 2)?.into_iter().find(|j| j.id == h);
    let held = held.unwrap();
    assert_eq!(f.engine.sweep_expired("q")?, Swept::default());
    f.engine.advance_clock(20);
    assert!(f.engine.heartbeat(&held, 500)?.is_some());
    f.engine.advance_clock(45);
    // Expired but unswept: the holder's handle is still valid (SPEC §4.3).
    assert!(f.engine.heartbeat(&held, 500)?.is_some());
    assert_eq!(f.engine.sweep_expired("q")?, Swept { expired: 2, purged: 0 });
    assert_eq!(f.engine.sweep_expired("q")?, Swept::default(), "nothing moves twice");
    for id in [p, h] {
        let d = f.engine.get_job(None, "q", id)?.unwrap();
        assert_eq!((d.state, d.last_error.as_deref()), (JobState::Dead, Some("expired")));
    }
    assert_eq!(f.engine.ack(None, &[&held])?, 0);
    assert_eq!(f.engine.get_job(None, "q", live)?.unwrap().state, JobState::Pending);
    assert_eq!(f.engine.get_job(None, "other", other)?.unwrap().state, JobState::Pending, "this queue only");
    f.engine.advance_clock(101);
    assert_eq!(f.engine.sweep_expired("q")?, Swept { expired: 0, purged: 1 });
    assert!(f.engine.get_job(None, "q", p)?.is_none(), "retention purged the dead row");
    assert!(f.engine.get_job(None, "q", h)?.is_some(), "no retention: kept forever");
    Ok(())
}

#[test]
fn expired_rows_are_not_claimable() -> Result<()> {
    let f = Fixture::new()?;
    f.put_job("q", &opts(), NewJob { expires_s: Some(10), ..job("x") })?;
    f.engine.advance_clock(11);
    assert!(f.one("q", "w")?.is_none());
    Ok(())
}

#[test]
fn ids_are_never_reused() -> Result<()> {
    let f = Fixture::new()?;
    f.put("q", "a")?;
    let top = f.put("q", "b")?;
    common::claim(&*f.engine, "q", "w", 2)?;
    assert!(f.engine.cancel(None, "q", top)?);
    let next = f.put("q", "c")?;
    assert!(next > top, "{next} after deleting {top}");
    // Also across a reopen (the high-water mark lives in the file).
    let j = common::claim(&*f.engine, "q", "w", 1)?.pop().unwrap();
    assert_eq!(f.engine.ack(None, &[&j])?, 1);
    f.engine.close();
    let again = f.reopen()?;
    let after = again.enqueue(None, "q", &opts(), &[job("d")])?[0];
    assert!(after > next);
    Ok(())
}

#[test]
fn ids_are_never_reused_after_dead_rows_are_purged() -> Result<()> {
    let f = Fixture::new()?;
    let keep_briefly = QueueOpts { dead_letter_retention_s: Some(1), ..opts() };
    let top = f.engine.enqueue(None, "q", &keep_briefly, &[job("x")])?[0];
    let j = common::claim(&*f.engine, "q", "w", 1)?.pop().unwrap();
    assert!(f.engine.fail(None, &j, "boom")?);
    f.engine.advance_clock(5);
    assert_eq!(f.engine.sweep_expired("q")?.purged, 1);
    let next = f.put("q", "y")?;
    assert!(next > top, "{next} after purging {top}");
    Ok(())
}

#[test]
fn enqueue_many_returns_ids_in_order_and_stamps_options() -> Result<()> {
    let f = Fixture::new()?;
    let o =
        QueueOpts { visibility_timeout_s: 9, max_attempts: 4, backoff_base_s: 2.5, dead_letter_retention_s: Some(7) };
    let jobs = vec![job("1"), NewJob { max_attempts: Some(1), ..job("2") }, job("3")];
    let ids = f.engine.enqueue(None, "q", &o, &jobs)?;
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let c = common::claim(&*f.engine, "q", "w", 3)?;
    assert_eq!(c.iter().map(|j| j.max_attempts).collect::<Vec<_>>(), vec![4, 1, 4]);
    assert!(c.iter().all(|j| j.visibility_timeout_s == 9 && j.backoff_base_s == 2.5 && j.deadline - j.claimed_at == 9));
    assert!(f.engine.enqueue(None, "q", &o, &[])?.is_empty());
    Ok(())
}

#[test]
fn now_moves_with_advance_clock() -> Result<()> {
    let f = Fixture::new()?;
    let a = f.engine.now()?;
    f.engine.advance_clock(1000);
    let b = f.engine.now()?;
    assert!((1000..=1001).contains(&(b - a)));
    // Another handle on the same file keeps its own clock.
    let other = f.reopen()?;
    assert!(other.now()? < b);
    Ok(())
}

#[test]
fn reclaims_compete_with_ready_rows_in_claim_order() -> Result<()> {
    let f = Fixture::new()?;
    let old = f.put("q", "old")?;
    let low = f.put_job("q", &opts(), NewJob { priority: -1, ..job("low") })?;
    let first = f.one("q", "w")?.unwrap();
    assert_eq!(first.id, old);
    f.engine.advance_clock(31);
    let fresh = f.put("q", "fresh")?;
    let high = f.put_job("q", &opts(), NewJob { priority: 9, ..job("high") })?;
    // Lapsed `old` (priority 0, oldest run_at) sits between `high` and `fresh`.
    let got: Vec<i64> = common::claim(&*f.engine, "q", "w2", 3)?.iter().map(|j| j.id).collect();
    assert_eq!(got, vec![high, old, fresh]);
    assert_eq!(f.one("q", "w2")?.map(|j| j.id), Some(low));
    Ok(())
}

#[test]
fn a_lapsed_lease_in_another_queue_does_not_matter() -> Result<()> {
    let f = Fixture::new()?;
    f.put("other", "x")?;
    f.one("other", "w")?.unwrap();
    f.engine.advance_clock(31);
    let id = f.put("q", "y")?;
    assert_eq!(f.one("q", "w")?.map(|j| j.id), Some(id));
    Ok(())
}

#[test]
fn queue_names_lists_live_and_dead_queues_once_sorted() -> Result<()> {
    let f = Fixture::new()?;
    assert!(f.engine.queue_names()?.is_empty(), "a fresh store has no queues");
    f.put("b", "1")?;
    f.put("b", "2")?;
    f.put("a", "3")?;
    f.put("Z", "4")?;
    f.put("dead-only", "5")?;
    let job = f.one("dead-only", "w")?.expect("a job");
    assert!(f.engine.fail(None, &job, "boom")?);
    // Byte order, as on Postgres: upper case before lower case.
    assert_eq!(f.engine.queue_names()?, ["Z", "a", "b", "dead-only"]);
    Ok(())
}

#[test]
fn live_jobs_pages_pending_and_processing_rows_newest_first() -> Result<()> {
    let f = Fixture::new()?;
    let a = f.put("q", "1")?;
    let b = f.put("q", "2")?;
    let c = f.put("q", "3")?;
    f.put("other", "4")?;
    let claimed = f.one("q", "w")?.expect("a job");
    assert_eq!(claimed.id, a);
    let all = f.engine.live_jobs("q", 10, None)?;
    assert_eq!(all.iter().map(|j| j.id).collect::<Vec<_>>(), [c, b, a]);
    assert_eq!(all[2].state, JobState::Processing);
    assert_eq!(all[0].state, JobState::Pending);
    let page = f.engine.live_jobs("q", 1, Some(c))?;
    assert_eq!(page.iter().map(|j| j.id).collect::<Vec<_>>(), [b]);
    // Dead rows are dead_jobs' business.
    assert!(f.engine.fail(None, &claimed, "x")?);
    assert_eq!(f.engine.live_jobs("q", 10, None)?.len(), 2);
    Ok(())
}
