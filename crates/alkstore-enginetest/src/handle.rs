//! What a claimed job's handle may do (SPEC §4.3): ack, retry, fail,
//! heartbeat, release, and the fencing that refuses a stale handle.

use std::time::Duration;

use alkstore_core::rules::error_text::MAX_ERROR_BYTES;
use alkstore_core::{
    backoff_range, JobState, NewJob, OnFailure, QueueOpts, QueueStats, ReadyAt, StopToken, WaitSpec, MAX_DURATION_S,
};

use crate::queue::names;
use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __handle_cases { ($harness:ty) => { $crate::__cases! { $harness; handle {
    a_stale_handle_is_fenced, heartbeat_is_absolute_and_late_heartbeat_is_refused,
    retry_goes_back_to_pending_then_dead_at_budget, retry_delay_is_explicit_or_the_core_curve,
    fail_moves_to_dead_keeping_every_field, a_long_error_is_stored_cut_to_its_bound,
    release_refunds_the_attempt_not_the_token,
    snooze_puts_the_job_back_for_later_without_counting_the_attempt,
    cancel_then_ack_is_false, ack_batch_counts_only_valid_handles, ack_batch_fences_each_handle_by_its_token,
    a_large_batch_of_many_workers_acks_each_valid_handle_once,
    handle_lock_and_wait_arguments_are_bounded, ack_then_claim_acks_and_claims_in_one_go,
    ack_then_claim_of_a_stale_handle_still_claims, ack_then_claim_claims_nothing_it_may_not,
    a_retried_job_reads_its_last_error_until_it_dies, a_reclaimed_lease_reads_that_it_lapsed,
} } } }

/// A reclaim after a lapse eats an attempt and fences the old handle.
pub fn a_stale_handle_is_fenced<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "x")?;
    let first = db.take("q", "w")?;
    assert!(s.claim("q", "w2", 1)?.is_empty(), "a live lease is not claimable");
    db.clock(31)?;
    // Same worker name, new claim: only the token tells the handles apart.
    let second = db.take("q", "w")?;
    assert_eq!(second.id, id);
    assert_eq!((first.claim_token, second.attempts, second.claim_token), (1, 2, 2));
    assert_eq!(second.run_at, first.run_at, "a lapsed row keeps its run_at");
    assert_eq!(s.ack(None, &[&first])?, 0, "stale handle refused");
    assert!(!s.retry(None, &first, "e", Some(0))?);
    assert!(!s.fail(None, &first, "e")?);
    assert_eq!(s.heartbeat(&first, Some(30))?, None);
    assert!(!s.release(&first)?);
    assert_eq!(s.ack(None, &[&second])?, 1);
    assert!(s.get_job(None, "q", id)?.is_none());
    Ok(())
}

pub fn heartbeat_is_absolute_and_late_heartbeat_is_refused<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("q", &opts(), "x")?;
    let j = db.take("q", "w")?;
    let d = s.heartbeat(&j, Some(25))?.ok_or("heartbeat refused")?;
    assert!(d < j.deadline, "absolute: now + 25 is before the 30 s claim deadline");
    db.clock(20)?;
    let now = db.now()?;
    let d2 = s.heartbeat(&j, Some(100))?.ok_or("heartbeat refused")?;
    assert!(d2 >= j.claimed_at + 120 && d2 >= now + 100 && d2 <= now + 101, "{d2} vs {now}");
    let d3 = s.heartbeat(&j, Some(20))?.ok_or("heartbeat refused")?;
    assert!(d3 < d2, "absolute from now, not additive");
    db.clock(d3 - db.now()? + 1)?;
    assert_eq!(s.heartbeat(&j, Some(100))?, None, "a late heartbeat never steals the job back");
    assert_eq!(s.ack(None, &[&j])?, 0);
    Ok(())
}

pub fn retry_goes_back_to_pending_then_dead_at_budget<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &QueueOpts { max_attempts: 2, backoff_base_s: 1000.0, ..opts() }, "x")?;
    let a = db.take("q", "w")?;
    let now = db.now()?;
    assert!(s.retry(None, &a, "boom", None)?);
    let row = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!(row.state, JobState::Pending);
    // Attempt 1 with base 1000: the curve draws from [500, 1000].
    assert!((now + 500..=now + 1001).contains(&row.run_at), "run_at {} now {now}", row.run_at);
    // A pending job holds no lease (SPEC §4.4); claimed_at keeps the last claim.
    assert_eq!((row.worker_id.as_deref(), row.deadline), (None, None));
    assert_eq!(row.claimed_at, Some(a.claimed_at));
    assert_eq!(row.last_error.as_deref(), Some("boom"), "a pending job reads its last retry's error (SPEC §30)");
    assert!(!s.retry(None, &a, "again", Some(0))?, "a handle is good for one op");
    assert!(db.one("q", "w")?.is_none());
    db.clock(1001)?;
    let b = db.take("q", "w")?;
    assert_eq!(b.attempts, 2);
    assert!(s.retry(None, &b, "final", Some(0))?, "at budget: still true");
    let dead = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("final")));
    assert!(db.one("q", "w")?.is_none());
    assert!(!s.retry(None, &b, "twice", None)?);
    // An explicit delay is respected; at budget, no delay given, still dead.
    let id = db.put("p", &QueueOpts { max_attempts: 2, ..opts() }, "{}")?;
    assert!(s.retry(None, &db.take("p", "w")?, "boom", Some(10))?);
    assert!(db.one("p", "w")?.is_none(), "delay respected");
    db.clock(10)?;
    let c = db.take("p", "w")?;
    assert!(s.retry(None, &c, "boom again", None)?, "valid at budget: still true");
    let dead = s.get_job(None, "p", id)?.ok_or("job")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("boom again")));
    Ok(())
}

/// A job's `last_error` is its last failure (SPEC §30, issue 43): none
/// before any; a retry's error while it is pending and while it runs again;
/// a release keeps it (it is no failure); the next retry replaces it; and a
/// dead row reads the reason it died for, as it always did. `live_jobs`
/// shows it as `get_job` does, inside a caller's transaction too.
pub fn a_retried_job_reads_its_last_error_until_it_dies<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "x")?;
    let error = |want: &str| -> TestResult {
        let row = s.get_job(None, "q", id)?.ok_or("job")?;
        assert_eq!(row.last_error.as_deref(), Some(want), "{row:?}");
        assert_eq!(row.died_at, None);
        let listed = s.live_jobs("q", 10, None)?;
        assert_eq!(listed.iter().map(|j| j.last_error.as_deref()).collect::<Vec<_>>(), vec![Some(want)]);
        Ok(())
    };
    assert_eq!(s.get_job(None, "q", id)?.ok_or("job")?.last_error, None, "a job that never failed");
    let a = db.take("q", "w")?;
    assert!(s.retry(None, &a, "connection refused", Some(0))?);
    error("connection refused")?;
    let b = db.take("q", "w")?;
    error("connection refused")?;
    assert!(s.release(&b)?);
    error("connection refused")?;
    let c = db.take("q", "w")?;
    let mut tx = s.begin()?;
    assert!(s.retry(Some(&mut tx), &c, "bank timed out", Some(0))?);
    tx.commit()?;
    error("bank timed out")?;
    let d = db.take("q", "w")?;
    assert_eq!(d.attempts, 3);
    assert!(s.fail(None, &d, "card stolen")?);
    let dead = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("card stolen")));
    Ok(())
}

/// A claim that takes back a lapsed lease records it (SPEC §30 counts the
/// lapse as a failed attempt): `last_error` says the lease lapsed and names
/// the worker that held it, whichever claim reclaimed it — the one-job and
/// batch claims, and those of queues with a rate, a group or a concurrency
/// limit. An exhausted lapsed lease still dies as 'attempts exhausted'.
pub fn a_reclaimed_lease_reads_that_it_lapsed<H: Harness>(db: &Db<H>) -> TestResult {
    use alkstore_core::LimitChange;
    let s = &db.store;
    let limited = |l: LimitChange| Some(l);
    let cases = [
        ("one", None, 1),
        ("batch", None, 5),
        ("rated", limited(LimitChange { rate: Some(Some((100, 1.0))), ..LimitChange::default() }), 1),
        ("grouped", limited(LimitChange { group_concurrency: Some(Some(1)), ..LimitChange::default() }), 5),
        ("capped", limited(LimitChange { concurrency: Some(Some(4)), ..LimitChange::default() }), 1),
    ];
    let mut ids = Vec::new();
    for (queue, limits, n) in &cases {
        if let Some(l) = limits {
            s.set_limits(queue, l)?;
        }
        let id = db.put_job(queue, &opts(), NewJob { group: Some("g".into()), ..job("x") })?;
        assert_eq!(s.claim(queue, "crashed", *n)?.len(), 1);
        ids.push(id);
    }
    let spent = db.put("spent", &QueueOpts { max_attempts: 1, ..opts() }, "x")?;
    db.take("spent", "crashed")?;
    db.clock(31)?;
    for ((queue, _, n), id) in cases.iter().zip(ids) {
        let again = s.claim(queue, "w", *n)?;
        assert_eq!(again.iter().map(|c| (c.id, c.attempts)).collect::<Vec<_>>(), vec![(id, 2)], "{queue}");
        let row = s.get_job(None, queue, id)?.ok_or("job")?;
        assert_eq!(row.state, JobState::Processing);
        assert_eq!(row.last_error.as_deref(), Some("lease lapsed (worker crashed)"), "{queue}");
        // Its next failure replaces it.
        assert!(s.retry(None, &again[0], "boom", Some(0))?);
        assert_eq!(s.get_job(None, queue, id)?.ok_or("job")?.last_error.as_deref(), Some("boom"), "{queue}");
    }
    assert!(s.claim("spent", "w", 1)?.is_empty());
    let dead = s.get_job(None, "spent", spent)?.ok_or("job")?;
    assert_eq!((dead.state, dead.last_error.as_deref()), (JobState::Dead, Some("attempts exhausted")));
    Ok(())
}

pub fn retry_delay_is_explicit_or_the_core_curve<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "x")?;
    let a = db.take("q", "w")?;
    let now = db.now()?;
    assert!(s.retry(None, &a, "", Some(50))?);
    let run_at = s.get_job(None, "q", id)?.ok_or("job")?.run_at;
    assert!((now + 50..=now + 51).contains(&run_at));
    let id = db.put("c", &QueueOpts { backoff_base_s: 100.0, max_attempts: 5, ..opts() }, "{}")?;
    let c = db.take("c", "w")?;
    let now = db.now()?;
    assert!(s.retry(None, &c, "", None)?);
    let run_at = s.get_job(None, "c", id)?.ok_or("job")?.run_at;
    let (lo, hi) = backoff_range(1, 100.0);
    assert!(run_at >= now + lo && run_at <= now + hi + 1, "{run_at} vs {now}+[{lo},{hi}]");
    Ok(())
}

pub fn fail_moves_to_dead_keeping_every_field<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put_job("q", &opts(), NewJob { priority: 7, expires_s: Some(1000), ..job(r#"{"k":"v"}"#) })?;
    let before = s.get_job(None, "q", id)?.ok_or("job")?;
    let j = db.take("q", "w")?;
    assert!(s.fail(None, &j, "bad input")?);
    assert!(!s.fail(None, &j, "twice")?);
    let dead = s.get_job(None, "q", id)?.ok_or("job")?;
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
    assert!(dead.died_at.ok_or("died_at")? >= j.claimed_at);
    assert!(!s.cancel(None, "q", id)?, "cancel never touches dead rows");
    Ok(())
}

/// A failure's text is stored, however long: cut to its bound, keeping its
/// start and its end, by `fail` and by a retry past the budget alike; a
/// child that dies with its parent quotes the cut text, so it stays bounded.
pub fn a_long_error_is_stored_cut_to_its_bound<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let huge = format!("ValueError: start{}€ the end", "x".repeat(5_000_000));
    let stored = |id: i64| -> TestResult<String> {
        Ok(s.get_job(None, "q", id)?.ok_or("the dead row")?.last_error.ok_or("its error")?)
    };
    let once = QueueOpts { max_attempts: 1, ..opts() };
    let failed = db.put("q", &once, "1")?;
    let child = db.put_job("q", &once, NewJob { after: vec![failed], on_failure: OnFailure::Cancel, ..job("c") })?;
    assert!(s.fail(None, &db.take("q", "w")?, &huge)?, "refused nothing");
    let retried = db.put("q", &once, "2")?;
    assert!(s.retry(None, &db.take("q", "w")?, &huge, Some(0))?, "past its budget: dead");
    for id in [failed, retried] {
        let text = stored(id)?;
        assert!(text.len() <= MAX_ERROR_BYTES, "job {id}: {} bytes", text.len());
        assert!(text.starts_with("ValueError: start") && text.ends_with("€ the end"), "{text:.100}");
        assert_eq!(s.result(id)?.ok_or("its result")?.error.as_deref(), Some(text.as_str()));
    }
    let quoted = stored(child)?;
    let prefix = format!("parent job {failed} died: ");
    assert!(quoted.starts_with(&format!("{prefix}ValueError: start")), "{quoted:.100}");
    assert!(quoted.len() <= MAX_ERROR_BYTES + prefix.len(), "{} bytes", quoted.len());
    Ok(())
}

pub fn release_refunds_the_attempt_not_the_token<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    // A budget of one: the refund is what lets the job be claimed again.
    let id = db.put("q", &QueueOpts { max_attempts: 1, ..opts() }, "x")?;
    let a = db.take("q", "w")?;
    assert!(s.release(&a)?);
    assert!(!s.release(&a)?);
    let row = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((row.state, row.attempts), (JobState::Pending, 0));
    assert_eq!((row.worker_id.as_deref(), row.deadline, row.claimed_at), (None, None, Some(a.claimed_at)));
    let b = db.take("q", "w")?;
    assert_eq!((b.attempts, b.claim_token), (1, 2));
    assert_eq!(s.ack(None, &[&a])?, 0, "the released handle stays fenced");
    assert_eq!(s.ack(None, &[&b])?, 1);
    Ok(())
}

/// SPEC §22: `raise alkstore.Snooze(s)` — a release that waits.
pub fn snooze_puts_the_job_back_for_later_without_counting_the_attempt<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    // A budget of one: a counted attempt would leave nothing to claim with.
    let id = db.put("q", &QueueOpts { max_attempts: 1, ..opts() }, "x")?;
    let a = db.take("q", "w")?;
    let before = db.now()?;
    assert!(s.snooze(&a, 60)?);
    assert!(!s.snooze(&a, 60)?, "fenced like any handle op");
    let row = s.get_job(None, "q", id)?.ok_or("job")?;
    assert_eq!((row.state, row.attempts, row.worker_id.as_deref(), row.deadline), (JobState::Pending, 0, None, None));
    assert!((before + 60..=before + 61).contains(&row.run_at), "ready a minute on: {}", row.run_at - before);
    assert!(s.claim("q", "w", 1)?.is_empty(), "not before its time");
    db.clock(61)?;
    let b = db.take("q", "w")?;
    assert_eq!((b.attempts, b.claim_token), (1, 2), "the attempt came back, the token did not");
    assert_eq!(s.ack(None, &[&a])?, 0);
    assert_eq!(s.ack(None, &[&b])?, 1);
    Ok(())
}

pub fn cancel_then_ack_is_false<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let pending = db.put("q", &opts(), "p")?;
    let held = db.put("q", &opts(), "h")?;
    let j = s.claim("q", "w", 2)?.into_iter().find(|j| j.id == held).ok_or("held")?;
    assert!(s.release(&j)?);
    let j = s.claim("q", "w", 2)?.into_iter().find(|j| j.id == held).ok_or("held")?;
    assert!(!s.cancel(None, "other", held)?, "cancel touches this queue only");
    assert!(s.cancel(None, "q", held)?);
    assert!(s.cancel(None, "q", pending)?);
    assert!(!s.cancel(None, "q", pending)?);
    assert_eq!(s.ack(None, &[&j])?, 0);
    assert_eq!(s.heartbeat(&j, Some(10))?, None);
    assert!(s.get_job(None, "q", held)?.is_none(), "cancel records no dead row");
    assert_eq!(s.stats("q")?, QueueStats::default());
    Ok(())
}

pub fn ack_batch_counts_only_valid_handles<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.enqueue(None, "q", &opts(), &[job("0"), job("1"), job("2"), job("3")])?;
    let js = s.claim("q", "w", 4)?;
    assert!(s.cancel(None, "q", js[1].id)?);
    assert!(s.release(&js[2])?);
    // The first handle twice: it lands once.
    let refs: Vec<_> = js.iter().chain(js.iter().take(1)).collect();
    assert_eq!(s.ack(None, &refs)?, 2);
    assert_eq!(s.ack(None, &refs)?, 0);
    let st = s.stats("q")?;
    assert_eq!((st.pending, st.scheduled, st.processing, st.dead), (1, 0, 0, 0), "only the released job is left");
    Ok(())
}

/// A batch holding a job's stale handle beside its live one, under the same
/// worker name, acks the live one only; a lapsed handle acks nothing.
pub fn ack_batch_fences_each_handle_by_its_token<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    s.enqueue(None, "q", &opts(), &[job("0"), job("1")])?;
    let old = s.claim("q", "w", 2)?;
    db.clock(31)?;
    // Same worker name, new claims: only the tokens tell the handles apart.
    let new = s.claim("q", "w", 2)?;
    assert_eq!(new.len(), 2);
    let (new0, new1) = if new[0].id == old[0].id { (&new[0], &new[1]) } else { (&new[1], &new[0]) };
    assert_eq!((new0.id, new1.id), (old[0].id, old[1].id));
    // The stale handle of job 0 first: the live one after it must be the one that lands.
    assert_eq!(s.ack(None, &[&old[0], new0, &old[1]])?, 1);
    let st = s.stats("q")?;
    assert_eq!((st.pending, st.processing), (0, 1), "job 1's live lease is untouched");
    db.clock(31)?;
    assert_eq!(s.ack(None, &[new1, &old[0]])?, 0, "a lapsed lease acks nothing");
    assert_eq!(s.stats("q")?.processing, 1, "the lapsed job is still there to reclaim");
    let again = s.claim("q", "w", 2)?;
    assert_eq!(again.len(), 1);
    assert_eq!(s.ack(None, &[&again[0], new1])?, 1);
    assert_eq!(s.stats("q")?, QueueStats::default());
    Ok(())
}

/// A batch larger than one statement's worth, from three workers, in no
/// order, holding stale, cancelled and repeated handles beside the valid
/// ones: each valid handle lands once, and an invalid one moves nothing.
pub fn a_large_batch_of_many_workers_acks_each_valid_handle_once<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let jobs: Vec<_> = (0..300).map(|i| job(&i.to_string())).collect();
    s.enqueue(None, "q", &opts(), &jobs)?;
    let mut held = Vec::new();
    for w in ["w1", "w2", "w3"] {
        held.extend(s.claim("q", w, 100)?);
    }
    assert_eq!(held.len(), 300);
    // Ten of w1's jobs go back and come again to w1: same ids, new tokens.
    let w1: Vec<_> = held.iter().filter(|j| j.worker_id == "w1").take(10).collect();
    for j in &w1 {
        assert!(s.release(j)?);
    }
    let again = s.claim("q", "w1", 10)?;
    assert_eq!(again.len(), 10);
    // Five of w2's jobs are cancelled.
    let cancelled: Vec<i64> = held.iter().filter(|j| j.worker_id == "w2").take(5).map(|j| j.id).collect();
    for id in &cancelled {
        assert!(s.cancel(None, "q", *id)?);
    }
    // Half of the new handles ride along; the other half's jobs have only
    // their stale handle in the batch, which must not ack them.
    let w3 = held.iter().filter(|j| j.worker_id == "w3").take(20);
    let mut batch: Vec<_> = held.iter().chain(&again[..5]).chain(w3).collect();
    batch.sort_by_key(|j| (j.id * 7919 + j.claim_token) % 1009);
    // 300 held, less 10 stale and 5 cancelled, plus 5 new handles.
    assert_eq!(s.ack(None, &batch)?, 290);
    assert_eq!(s.stats("q")?.processing, 5, "a stale handle acks nothing");
    assert_eq!(s.ack(None, &batch)?, 0);
    let rest: Vec<_> = again[5..].iter().collect();
    assert_eq!(s.ack(None, &rest)?, 5);
    assert_eq!(s.stats("q")?, QueueStats::default());
    // A batch of a few, where some were already acked, lands the rest only.
    s.enqueue(None, "q", &opts(), &jobs[..3])?;
    let few = s.claim("q", "w1", 3)?;
    assert_eq!(s.ack(None, &[&few[0]])?, 1);
    assert_eq!(s.ack(None, &[&few[2], &few[0], &few[1], &few[2]])?, 2);
    assert_eq!(s.stats("q")?, QueueStats::default());
    Ok(())
}

/// The front's duration bound on handle, lock and wait arguments (ADR 0011).
pub fn handle_lock_and_wait_arguments_are_bounded<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("q", &opts(), "x")?;
    let c = db.take("q", "w")?;
    names(s.heartbeat(&c, Some(MAX_DURATION_S + 1)), "extend");
    names(s.retry(None, &c, "", Some(i64::MAX)), "delay");
    names(s.lock_acquire("l", "me", MAX_DURATION_S + 1), "ttl_s");
    names(s.advance_clock(i64::MIN), "seconds");
    let never = || false;
    let spec = WaitSpec { timeout: Some(Duration::MAX), stops: &[], interrupted: &never };
    names(s.claim_wait("q", "w", 1, &spec), "timeout");
    // At the bound everything works.
    assert!(s.heartbeat(&c, Some(MAX_DURATION_S))?.is_some());
    s.lock_acquire("l", "me", MAX_DURATION_S)?;
    let stop = StopToken::default();
    stop.stop();
    let spec =
        WaitSpec { timeout: Some(Duration::from_secs(MAX_DURATION_S as u64)), stops: &[&stop], interrupted: &never };
    assert!(s.claim_wait("q", "w", 1, &spec)?.is_empty());
    assert!(s.retry(None, &c, "", Some(MAX_DURATION_S))?);
    Ok(())
}

/// The Worker's ack-then-claim (ADR 0022): the ack lands and counts as a
/// completion, the next jobs come in claim order, from any queue of the store.
pub fn ack_then_claim_acks_and_claims_in_one_go<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let done_id = db.put("a", &opts(), "1")?;
    let low = db.put("b", &opts(), "2")?;
    let high = db.put_job("b", &opts(), NewJob { priority: 5, ..job("3") })?;
    let done = db.take("a", "w")?;
    assert_eq!(done.id, done_id);
    let (landed, next) = s.ack_then_claim(&done, "b", "w", 2)?;
    assert!(landed);
    assert!(s.get_job(None, "a", done_id)?.is_none(), "acked: the row is gone");
    assert_eq!(next.iter().map(|j| j.id).collect::<Vec<_>>(), vec![high, low], "claim order");
    assert!(next.iter().all(|j| j.attempts == 1 && j.worker_id == "w" && j.queue == "b"));
    assert_eq!(s.stats("b")?.processing, 2);
    let (again, none) = s.ack_then_claim(&done, "b", "w", 1)?;
    assert!(!again, "a second ack lands nothing");
    assert!(none.is_empty(), "nothing is left to claim");
    assert_eq!(s.ack(None, &next.iter().collect::<Vec<_>>())?, 2, "the claimed handles are live");
    let counted: i64 = s.completions(60)?.iter().filter(|r| r.queue == "a").map(|r| r.count).sum();
    assert_eq!(counted, 1, "the landed ack is a completion, the refused one is not");
    Ok(())
}

/// A handle whose lease lapsed and was reclaimed acks nothing, but the claim
/// half still hands out what is ready.
pub fn ack_then_claim_of_a_stale_handle_still_claims<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let id = db.put("q", &opts(), "x")?;
    let stale = db.take("q", "w")?;
    db.clock(31)?;
    let fresh = db.take("q", "w2")?;
    assert_eq!(fresh.id, id);
    let other = db.put("q", &opts(), "y")?;
    let (landed, next) = s.ack_then_claim(&stale, "q", "w", 1)?;
    assert!(!landed, "fenced");
    assert_eq!(next.iter().map(|j| j.id).collect::<Vec<_>>(), vec![other]);
    assert_eq!(s.get_job(None, "q", id)?.ok_or("the reclaimed job is still there")?.state, JobState::Processing);
    Ok(())
}

/// The claim half never hands out what a claim may not: nothing of a paused
/// queue, nothing scheduled for later, and a bad worker name or batch size is
/// refused before anything is written.
pub fn ack_then_claim_claims_nothing_it_may_not<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    db.put("p", &opts(), "1")?;
    db.put_job("later", &opts(), NewJob { ready: ReadyAt::Delay(60), ..job("2") })?;
    for _ in 0..3 {
        db.put("a", &opts(), "x")?;
    }
    s.pause("p")?;
    let d1 = db.take("a", "w")?;
    let (landed, next) = s.ack_then_claim(&d1, "p", "w", 1)?;
    assert!(landed && next.is_empty(), "a paused queue hands out nothing");
    let d2 = db.take("a", "w")?;
    let (landed, next) = s.ack_then_claim(&d2, "later", "w", 1)?;
    assert!(landed && next.is_empty(), "a job not yet due is not claimed");
    let d3 = db.take("a", "w")?;
    assert!(s.ack_then_claim(&d3, "a", "", 1).is_err(), "an empty worker name is refused");
    assert!(s.ack_then_claim(&d3, "a", "w", 0).is_err(), "n is 1..=1000");
    assert!(s.get_job(None, "a", d3.id)?.is_some(), "a refused call acks nothing");
    Ok(())
}
