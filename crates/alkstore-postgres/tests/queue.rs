//! Queue semantics (SPEC §4) against a real server, fresh schema each.

mod common;

use alkstore_core::{JobState, NewJob, QueueOpts, QueueStats, ReadyAt};
use common::{job, opts, TestDb, TestResult};

#[test]
fn fifo_then_priority_order() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = QueueOpts::default();
    let a = db.put("q", &q, "1")?;
    let b = db.put("q", &q, "2")?;
    let hi = db.engine.enqueue(None, "q", &q, &[NewJob { priority: 5, ..job("3") }])?[0];
    let c = db.put("q", &q, "4")?;
    let got: Vec<i64> = common::claim(&*db.engine, "q", "w", 10)?.iter().map(|j| j.id).collect();
    assert_eq!(got, vec![hi, a, b, c]);
    assert!(common::claim(&*db.engine, "q", "w", 10)?.is_empty());
    Ok(())
}

#[test]
fn single_claims_follow_order_and_other_queues_are_untouched() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = QueueOpts::default();
    let ids = db.engine.enqueue(None, "q", &q, &[job("1"), job("2"), job("3")])?;
    db.put("other", &q, "x")?;
    for id in &ids {
        assert_eq!(db.take("q", "w")?.id, *id);
    }
    assert!(common::claim(&*db.engine, "q", "w", 1)?.is_empty());
    assert_eq!(db.engine.stats("other")?.pending, 1);
    Ok(())
}

#[test]
fn claim_stamps_the_lease() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 3), "{}")?;
    let now = db.engine.now()?;
    let c = db.take("q", "w1")?;
    assert_eq!((c.id, c.attempts, c.claim_token, c.worker_id.as_str()), (id, 1, 1, "w1"));
    assert!(c.claimed_at >= now && c.claimed_at <= now + 1);
    assert_eq!(c.deadline, c.claimed_at + 30);
    assert_eq!(c.visibility_timeout_s, 30);
    let j = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(j.state, JobState::Processing);
    assert_eq!(j.worker_id.as_deref(), Some("w1"));
    Ok(())
}

#[test]
fn delayed_job_needs_the_clock_advanced() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = QueueOpts::default();
    let id = db.engine.enqueue(None, "q", &q, &[NewJob { ready: ReadyAt::Delay(60), ..job("1") }])?[0];
    let now = db.engine.now()?;
    let at = db.engine.enqueue(None, "q", &q, &[NewJob { ready: ReadyAt::At(now + 120), ..job("2") }])?[0];
    assert!(common::claim(&*db.engine, "q", "w", 5)?.is_empty());
    assert_eq!(db.engine.stats("q")?.scheduled, 2);
    db.engine.advance_clock(61);
    assert_eq!(common::claim(&*db.engine, "q", "w", 5)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![id]);
    db.engine.advance_clock(60);
    assert_eq!(common::claim(&*db.engine, "q", "w", 5)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![at]);
    Ok(())
}

#[test]
fn reclaim_after_lapse_eats_an_attempt() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(10, 3), "{}")?;
    let first = db.take("q", "w1")?;
    assert!(common::claim(&*db.engine, "q", "w2", 1)?.is_empty(), "a live lease is not claimable");
    db.engine.advance_clock(11);
    let second = db.take("q", "w2")?;
    assert_eq!((second.id, second.attempts, second.claim_token), (id, 2, 2));
    // A lapsed processing row keeps its run_at.
    assert_eq!(second.run_at, first.run_at);
    assert!(db.engine.heartbeat(&first, 30)?.is_none(), "the old holder is fenced off");
    assert_eq!(db.engine.ack(None, &[&first])?, 0);
    assert_eq!(db.engine.ack(None, &[&second])?, 1);
    Ok(())
}

#[test]
fn reclaims_follow_priority_order_not_deadline_order() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let low = db.engine.enqueue(None, "q", &opts(10, 3), &[NewJob { priority: 0, ..job("low") }])?[0];
    db.take("q", "w")?;
    let high = db.engine.enqueue(None, "q", &opts(20, 3), &[NewJob { priority: 9, ..job("high") }])?[0];
    db.take("q", "w")?;
    db.engine.advance_clock(21);
    // Both leases lapsed; the low one lapsed first, the high one ranks first.
    assert_eq!(db.take("q", "w2")?.id, high);
    assert_eq!(db.take("q", "w2")?.id, low);
    Ok(())
}

#[test]
fn exhaustion_by_reclaim_goes_to_dead() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(10, 1), r#"{"k":1}"#)?;
    let c = db.take("q", "w1")?;
    db.engine.advance_clock(11);
    assert!(common::claim(&*db.engine, "q", "w2", 5)?.is_empty());
    let dead = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("attempts exhausted"));
    assert_eq!(dead.attempts, 1);
    assert_eq!(dead.worker_id.as_deref(), Some("w1"));
    assert_eq!(dead.deadline, Some(c.deadline));
    assert_eq!(dead.payload, r#"{"k":1}"#);
    assert!(dead.died_at.is_some());
    let s = db.engine.stats("q")?;
    assert_eq!((s.pending, s.processing, s.dead), (0, 0, 1));
    Ok(())
}

#[test]
fn stale_handle_is_refused() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    db.put("q", &opts(10, 5), "{}")?;
    let old = db.take("q", "w")?;
    db.engine.advance_clock(11);
    let new = db.take("q", "w")?;
    assert_eq!(new.claim_token, old.claim_token + 1);
    // Same worker, now within the new lease: only the token tells them apart.
    assert!(!common::retry(&*db.engine, None, &old, "x", Some(0))?);
    assert!(!db.engine.fail(None, &old, "x")?);
    assert!(!db.engine.release(&old)?);
    assert_eq!(db.engine.heartbeat(&old, 30)?, None);
    assert_eq!(db.engine.ack(None, &[&old])?, 0);
    assert_eq!(db.engine.ack(None, &[&new])?, 1);
    Ok(())
}

#[test]
fn heartbeat_is_absolute_and_late_one_is_refused() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    db.put("q", &opts(10, 3), "{}")?;
    let c = db.take("q", "w")?;
    db.engine.advance_clock(5);
    let now = db.engine.now()?;
    let d = db.engine.heartbeat(&c, 100)?.ok_or("heartbeat refused")?;
    assert!(d >= now + 100 && d <= now + 101);
    let d2 = db.engine.heartbeat(&c, 20)?.ok_or("heartbeat refused")?;
    assert!(d2 < d, "absolute from now, not additive");
    db.engine.advance_clock(d2 - db.engine.now()? + 1);
    assert_eq!(db.engine.heartbeat(&c, 20)?, None, "a late heartbeat never steals the job back");
    assert_eq!(db.engine.ack(None, &[&c])?, 0);
    Ok(())
}

/// Sets the engine's clock so that `now == target`, runs `check`, and
/// reports whether the clock still read `target` afterwards (a real-clock
/// tick in between makes the run inconclusive, and the caller tries again).
fn at_second(db: &TestDb, target: i64, check: impl FnOnce() -> TestResult) -> Result<bool, Box<dyn std::error::Error>> {
    db.engine.advance_clock(target - db.engine.now()?);
    check()?;
    Ok(db.engine.now()? == target)
}

#[test]
fn boundaries_are_exact_to_the_second() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(30, 3);
    // A lease is valid through its deadline second (now <= deadline).
    let mut conclusive = false;
    for _ in 0..5 {
        db.put("lease", &q, "{}")?;
        let c = db.take("lease", "w")?;
        let mut landed = 0;
        if at_second(&db, c.deadline, || {
            landed = db.engine.ack(None, &[&c])?;
            Ok(())
        })? {
            assert_eq!(landed, 1, "an ack at the deadline second lands");
            conclusive = true;
            break;
        }
        db.engine.cancel(None, "lease", c.id)?;
    }
    assert!(conclusive, "the clock ticked during every try");
    // A job is claimable while now < expires_at and swept once now >= expires_at.
    let mut conclusive = false;
    for _ in 0..5 {
        let id = db.engine.enqueue(None, "exp", &q, &[NewJob { expires_s: Some(100), ..job("{}") }])?[0];
        let expires_at = db.engine.get_job(None, "exp", id)?.ok_or("job")?.expires_at.ok_or("expiry")?;
        let mut swept = -1;
        if !at_second(&db, expires_at - 1, || {
            swept = db.engine.sweep_expired("exp")?.expired;
            Ok(())
        })? {
            db.engine.cancel(None, "exp", id)?;
            continue;
        }
        assert_eq!(swept, 0, "one second before expires_at the job stays");
        let mut claimed = Vec::new();
        if at_second(&db, expires_at - 1, || {
            claimed = common::claim(&*db.engine, "exp", "w", 1)?;
            Ok(())
        })? {
            assert_eq!(claimed.len(), 1, "and is still claimable");
            assert!(db.engine.release(&claimed[0])?);
        }
        if at_second(&db, expires_at, || {
            assert!(common::claim(&*db.engine, "exp", "w", 1)?.is_empty(), "not claimable at expires_at");
            swept = db.engine.sweep_expired("exp")?.expired;
            Ok(())
        })? {
            assert_eq!(swept, 1, "swept at expires_at");
            conclusive = true;
            break;
        }
    }
    assert!(conclusive, "the clock ticked during every try");
    Ok(())
}

#[test]
fn retry_goes_back_to_pending_then_dead_at_budget() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 2), "{}")?;
    let c = db.take("q", "w")?;
    assert!(common::retry(&*db.engine, None, &c, "boom", Some(10))?);
    let j = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(j.state, JobState::Pending);
    assert!(common::claim(&*db.engine, "q", "w", 1)?.is_empty(), "delay respected");
    db.engine.advance_clock(10);
    let c2 = db.take("q", "w")?;
    assert_eq!(c2.attempts, 2);
    assert!(common::retry(&*db.engine, None, &c2, "boom again", None)?, "valid at budget: still true");
    let dead = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(dead.state, JobState::Dead);
    assert_eq!(dead.last_error.as_deref(), Some("boom again"));
    assert!(!common::retry(&*db.engine, None, &c2, "twice", None)?);
    Ok(())
}

#[test]
fn retry_without_delay_uses_the_core_curve() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = QueueOpts { backoff_base_s: 100.0, ..opts(30, 5) };
    let id = db.put("q", &q, "{}")?;
    let c = db.take("q", "w")?;
    let now = db.engine.now()?;
    assert!(common::retry(&*db.engine, None, &c, "", None)?);
    let run_at = db.engine.get_job(None, "q", id)?.ok_or("job")?.run_at;
    let (lo, hi) = alkstore_core::backoff_range(1, 100.0);
    assert!(run_at >= now + lo && run_at <= now + hi + 1, "{run_at} vs {now}+[{lo},{hi}]");
    Ok(())
}

#[test]
fn fail_goes_straight_to_dead() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 5), "{}")?;
    let c = db.take("q", "w")?;
    assert!(db.engine.fail(None, &c, "bad input")?);
    assert!(!db.engine.fail(None, &c, "again")?);
    let dead = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((dead.state, dead.last_error.as_deref(), dead.attempts), (JobState::Dead, Some("bad input"), 1));
    Ok(())
}

#[test]
fn release_refunds_the_attempt_not_the_token() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 1), "{}")?;
    let c = db.take("q", "w")?;
    assert!(db.engine.release(&c)?);
    assert!(!db.engine.release(&c)?);
    let j = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((j.state, j.attempts), (JobState::Pending, 0));
    let again = db.take("q", "w")?;
    assert_eq!((again.attempts, again.claim_token), (1, 2));
    assert_eq!(db.engine.ack(None, &[&c])?, 0, "the released handle stays dead");
    assert_eq!(db.engine.ack(None, &[&again])?, 1);
    Ok(())
}

#[test]
fn cancel_then_ack_is_false() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 3), "{}")?;
    let c = db.take("q", "w")?;
    assert!(!db.engine.cancel(None, "other", id)?, "cancel touches this queue only");
    assert!(db.engine.cancel(None, "q", id)?);
    assert!(!db.engine.cancel(None, "q", id)?);
    assert_eq!(db.engine.ack(None, &[&c])?, 0);
    assert!(db.engine.get_job(None, "q", id)?.is_none(), "cancel records no dead row");
    Ok(())
}

#[test]
fn ack_batch_counts_only_valid_handles() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    db.engine.enqueue(None, "q", &opts(30, 3), &[job("1"), job("2"), job("3")])?;
    let got = common::claim(&*db.engine, "q", "w", 3)?;
    assert!(db.engine.cancel(None, "q", got[1].id)?);
    let refs: Vec<_> = got.iter().chain(got.iter().take(1)).collect();
    assert_eq!(db.engine.ack(None, &refs)?, 2);
    assert_eq!(db.engine.stats("q")?, QueueStats::default());
    Ok(())
}

#[test]
fn get_job_sees_live_and_dead_rows_of_its_queue_only() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let id = db.put("q", &opts(30, 3), "[1]")?;
    let j = db.engine.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((j.state, j.attempts, j.claimed_at, j.worker_id.clone()), (JobState::Pending, 0, None, None));
    assert_eq!((j.last_error.clone(), j.died_at), (None, None));
    assert!(db.engine.get_job(None, "other", id)?.is_none());
    let c = db.take("q", "w")?;
    db.engine.fail(None, &c, "x")?;
    assert_eq!(db.engine.get_job(None, "q", id)?.ok_or("job")?.state, JobState::Dead);
    assert!(db.engine.get_job(None, "other", id)?.is_none());
    assert!(db.engine.get_job(None, "q", id + 1000)?.is_none());
    Ok(())
}

#[test]
fn dead_jobs_pages_newest_first() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(30, 3);
    let ids = db.engine.enqueue(None, "q", &q, &(0..5).map(|i| job(&i.to_string())).collect::<Vec<_>>())?;
    for c in common::claim(&*db.engine, "q", "w", 5)? {
        assert!(db.engine.fail(None, &c, "x")?);
    }
    let other = db.put("other", &q, "o")?;
    db.engine.fail(None, &db.take("other", "w")?, "x")?;
    let page1: Vec<i64> = db.engine.dead_jobs("q", 2, None)?.iter().map(|j| j.id).collect();
    assert_eq!(page1, vec![ids[4], ids[3]]);
    let page2: Vec<i64> = db.engine.dead_jobs("q", 2, Some(ids[3]))?.iter().map(|j| j.id).collect();
    assert_eq!(page2, vec![ids[2], ids[1]]);
    let page3: Vec<i64> = db.engine.dead_jobs("q", 2, Some(ids[1]))?.iter().map(|j| j.id).collect();
    assert_eq!(page3, vec![ids[0]]);
    assert!(db.engine.dead_jobs("q", 2, Some(ids[0]))?.is_empty());
    assert_eq!(db.engine.dead_jobs("other", 10, None)?.iter().map(|j| j.id).collect::<Vec<_>>(), vec![other]);
    assert!(db.engine.dead_jobs("q", 10, None)?.iter().all(|j| j.state == JobState::Dead));
    Ok(())
}

#[test]
fn stats_follow_the_spec() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    assert_eq!(db.engine.stats("q")?, QueueStats::default());
    let q = opts(10, 3);
    db.put("q", &q, "a")?;
    db.engine.advance_clock(5);
    db.put("q", &q, "b")?;
    db.engine.enqueue(None, "q", &q, &[NewJob { ready: ReadyAt::Delay(100), ..job("later") }])?;
    db.engine.enqueue(None, "q", &q, &[job("leased"), job("dead")])?;
    let s = db.engine.stats("q")?;
    assert_eq!((s.pending, s.scheduled, s.processing, s.dead), (4, 1, 0, 0));
    assert!(matches!(s.oldest_ready_age_s, Some(5 | 6)), "{s:?}");
    let leased = db.take("q", "w")?;
    let doomed = db.take("q", "w")?;
    db.engine.fail(None, &doomed, "x")?;
    db.engine.advance_clock(11);
    // A lapsed lease still counts as processing.
    let s = db.engine.stats("q")?;
    assert_eq!((s.pending, s.scheduled, s.processing, s.dead), (2, 1, 1, 1), "{leased:?}");
    db.engine.advance_clock(100);
    let s = db.engine.stats("q")?;
    assert_eq!((s.pending, s.scheduled), (3, 0));
    Ok(())
}

#[test]
fn sweep_moves_pending_and_processing_and_purges_by_retention() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let keep = opts(300, 3);
    let short = QueueOpts { dead_letter_retention_s: Some(50), ..keep };
    let zero = QueueOpts { dead_letter_retention_s: Some(0), ..keep };
    let exp = |p: &str| NewJob { expires_s: Some(10), ..job(p) };
    let p = db.engine.enqueue(None, "q", &keep, &[exp("pending")])?[0];
    let w = db.engine.enqueue(None, "q", &short, &[exp("processing")])?[0];
    let z = db.engine.enqueue(None, "q", &zero, &[exp("zero")])?[0];
    let forever = db.put("q", &keep, "no expiry")?;
    let other = db.engine.enqueue(None, "other", &keep, &[exp("other queue")])?[0];
    // Claim order is FIFO: the pending one first, so put it back.
    let first = db.take("q", "w")?;
    assert_eq!(first.id, p);
    assert!(db.engine.release(&first)?);
    let held = common::claim(&*db.engine, "q", "w", 4)?;
    let held_w = held.iter().find(|c| c.id == w).ok_or("w claimed")?.clone();
    for c in held.iter().filter(|c| c.id != w) {
        assert!(db.engine.release(c)?);
    }
    assert_eq!(db.engine.sweep_expired("q")?, alkstore_core::Swept { expired: 0, purged: 0 });
    // Margins of seconds: the real clock ticks under the test too (the exact
    // boundary is checked in `boundaries_are_exact_to_the_second`).
    db.engine.advance_clock(6);
    assert_eq!(db.engine.sweep_expired("q")?.expired, 0, "not yet");
    db.engine.advance_clock(4);
    assert!(
        common::claim(&*db.engine, "q", "x", 10)?.iter().all(|c| c.id == forever),
        "expired rows are not claimable"
    );
    let swept = db.engine.sweep_expired("q")?;
    assert_eq!((swept.expired, swept.purged), (3, 1), "the zero-retention row is purged at once");
    for id in [p, w] {
        let j = db.engine.get_job(None, "q", id)?.ok_or("job")?;
        assert_eq!((j.state, j.last_error.as_deref()), (JobState::Dead, Some("expired")));
    }
    assert!(db.engine.get_job(None, "q", z)?.is_none());
    assert_eq!(db.engine.get_job(None, "q", w)?.ok_or("job")?.worker_id.as_deref(), Some("w"));
    assert_eq!(db.engine.get_job(None, "other", other)?.ok_or("job")?.state, JobState::Pending);
    // The holder of an expired-and-swept job finds it gone.
    assert_eq!(db.engine.ack(None, &[&held_w])?, 0);
    assert_eq!(db.engine.sweep_expired("q")?, alkstore_core::Swept { expired: 0, purged: 0 });
    db.engine.advance_clock(50);
    assert_eq!(db.engine.sweep_expired("q")?, alkstore_core::Swept { expired: 0, purged: 1 });
    assert!(db.engine.get_job(None, "q", w)?.is_none());
    assert_eq!(db.engine.get_job(None, "q", p)?.ok_or("kept forever")?.state, JobState::Dead);
    Ok(())
}

#[test]
fn concurrent_sweeps_never_double_move() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(300, 3);
    let jobs: Vec<NewJob> = (0..400).map(|i| NewJob { expires_s: Some(1), ..job(&i.to_string()) }).collect();
    db.engine.enqueue(None, "q", &q, &jobs)?;
    let engines = [db.reopen()?, db.reopen()?, db.reopen()?];
    for e in &engines {
        e.advance_clock(5);
    }
    let total: i64 = std::thread::scope(|s| {
        let hs: Vec<_> = engines.iter().map(|e| s.spawn(move || e.sweep_expired("q"))).collect();
        hs.into_iter().map(|h| h.join().expect("sweeper panicked").map(|s| s.expired)).sum::<Result<i64, _>>()
    })?;
    assert_eq!(total, 400);
    assert_eq!(db.engine.stats("q")?.dead, 400);
    Ok(())
}

#[test]
fn ids_are_never_reused() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let q = opts(30, 3);
    let a = db.put("q", &q, "a")?;
    assert!(db.engine.cancel(None, "q", a)?);
    let b = db.put("q", &q, "b")?;
    db.engine.ack(None, &[&db.take("q", "w")?])?;
    let c = db.put("q", &q, "c")?;
    assert!(a > 0 && a < b && b < c);
    Ok(())
}

#[test]
fn enqueue_many_returns_ids_in_input_order() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let jobs: Vec<NewJob> = (0..50)
        .map(|i| NewJob { priority: i % 3, max_attempts: Some(1 + i64::from(i)), ..job(&format!("[{i}]")) })
        .collect();
    let ids = db.engine.enqueue(None, "q", &opts(30, 3), &jobs)?;
    assert_eq!(ids.len(), 50);
    for (i, id) in ids.iter().enumerate() {
        let j = db.engine.get_job(None, "q", *id)?.ok_or("job")?;
        assert_eq!(j.payload, format!("[{i}]"));
        assert_eq!(j.max_attempts, 1 + i as i64);
    }
    Ok(())
}

#[test]
fn payload_text_round_trips_byte_identically() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let texts = [
        r#"{"b":1,"a":[1.0,"x"]}"#,
        r#"{ "z" : 1 ,  "a":{"y":2,"b":[ 1.50, -0.0 ]} }"#,
        r#""unicode \u00e9 é ✓ 😀""#,
        "null",
        "12345678901234567890.000",
    ];
    let q = opts(30, 3);
    for t in texts {
        let id = db.put("q", &q, t)?;
        assert_eq!(db.engine.get_job(None, "q", id)?.ok_or("job")?.payload, t);
        let c = db.take("q", "w")?;
        assert_eq!(c.payload, t);
        db.engine.fail(None, &c, "x")?;
        assert_eq!(db.engine.get_job(None, "q", id)?.ok_or("job")?.payload, t);
    }
    Ok(())
}

#[test]
fn stamped_options_are_per_job() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let a = db.put("q", &opts(10, 3), "a")?;
    let b = db.put("q", &opts(99, 7), "b")?;
    let ca = db.take("q", "w")?;
    let cb = db.take("q", "w")?;
    assert_eq!((ca.id, ca.deadline - ca.claimed_at, ca.max_attempts), (a, 10, 3));
    assert_eq!((cb.id, cb.deadline - cb.claimed_at, cb.max_attempts), (b, 99, 7));
    Ok(())
}

#[test]
fn queue_names_lists_live_and_dead_queues_once_sorted() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    assert!(db.engine.queue_names()?.is_empty(), "a fresh schema has no queues");
    for (queue, payload) in [("b", "1"), ("b", "2"), ("a", "3"), ("Z", "4"), ("dead-only", "5")] {
        db.put(queue, &opts(30, 3), payload)?;
    }
    let job = db.take("dead-only", "w")?;
    assert!(db.engine.fail(None, &job, "boom")?);
    // Byte order whatever the database locale, as on SQLite.
    assert_eq!(db.engine.queue_names()?, ["Z", "a", "b", "dead-only"]);
    Ok(())
}

#[test]
fn live_jobs_pages_pending_and_processing_rows_newest_first() -> TestResult {
    let Some(db) = TestDb::new()? else { return Ok(()) };
    let o = opts(30, 3);
    let a = db.put("q", &o, "1")?;
    let b = db.put("q", &o, "2")?;
    let c = db.put("q", &o, "3")?;
    db.put("other", &o, "4")?;
    let claimed = db.take("q", "w")?;
    assert_eq!(claimed.id, a);
    let all = db.engine.live_jobs("q", 10, None)?;
    assert_eq!(all.iter().map(|j| j.id).collect::<Vec<_>>(), [c, b, a]);
    assert_eq!(all[2].state, JobState::Processing);
    assert_eq!(all[0].state, JobState::Pending);
    let page = db.engine.live_jobs("q", 1, Some(c))?;
    assert_eq!(page.iter().map(|j| j.id).collect::<Vec<_>>(), [b]);
    assert!(db.engine.fail(None, &claimed, "x")?);
    assert_eq!(db.engine.live_jobs("q", 10, None)?.len(), 2);
    Ok(())
}
