//! Workflows (SPEC §25): a child waits for its parents, is released by the
//! last parent's ack in that ack's transaction, dies (or runs) when a
//! parent fails, and reads its parents' results.

use std::sync::Barrier;

use alkstore_core::{Claimed, Error, JobState, NewJob, OnFailure, ParamStyle, QueueOpts};

use crate::concurrency::{on_threads, reopened};
use crate::{job, opts, Db, Harness, TestResult};

/// The cases of this domain: [`crate::conformance!`] makes each a `#[test]`.
#[rustfmt::skip] #[doc(hidden)] #[macro_export]
macro_rules! __workflows_cases { ($harness:ty) => { $crate::__cases! { $harness; workflows {
    a_child_waits_until_every_parent_is_acked, a_waiting_child_is_never_claimed,
    a_graph_in_one_transaction_lands_together_or_not_at_all, a_child_may_join_its_parents_transaction,
    a_three_level_chain_where_the_middle_dies_kills_the_rest, a_cancelled_parent_kills_its_descendants,
    on_failure_run_releases_the_child_once_every_parent_settled, an_issued_but_gone_parent_counts_as_done,
    a_never_issued_parent_is_a_value_error_and_writes_nothing, a_parent_dead_at_enqueue_applies_on_failure,
    exhaustion_at_claim_kills_the_children, expiry_kills_the_children,
    concurrent_acks_of_the_last_two_parents_release_the_child_once, fan_out_releases_every_child_in_one_ack,
    results_are_kept_for_keep_result_or_while_a_child_needs_them, parent_results_name_every_parent,
    a_dead_jobs_result_has_its_error, requeue_dead_child_waits_for_parents_not_acked, job_edges_list_parents_and_children,
    a_plain_ack_of_a_batch_with_workflow_jobs_settles_each, a_parent_expired_without_retention_still_kills,
    cancelling_a_processing_parent_kills_its_children, one_enqueue_many_links_each_job_to_its_own_parents,
    a_foreign_enqueue_links_its_parents, the_workers_ack_with_a_result_and_its_next_claim_are_one_step,
    a_child_linked_while_its_parent_runs_counts_on_its_ack, a_redriven_parent_s_ack_counts_once,
    a_running_parent_s_expiry_kills_its_one_child, a_fan_in_is_released_by_its_last_parent_in_any_order,
    a_parent_given_a_second_child_settles_both, a_fan_in_over_a_parent_with_an_earlier_child_is_released_by_its_ack,
    a_cancelled_parent_among_many_settles_a_run_child_once,
    a_redriven_parent_among_many_is_not_waited_for_again, a_child_born_dead_and_redriven_waits_for_its_dead_parent,
    a_parent_s_ack_releases_its_new_child_and_a_redriven_one,
} } } }

/// A job waiting for `after`, failing as `mode`.
fn child(payload: &str, after: &[i64], mode: OnFailure) -> NewJob {
    NewJob { after: after.to_vec(), on_failure: mode, ..job(payload) }
}

/// Claims and acks the one ready job of `queue`; its id.
fn run_one<H: Harness>(db: &Db<H>, queue: &str) -> TestResult<i64> {
    let c = db.take(queue, "w")?;
    assert_eq!(db.store.ack(None, &[&c])?, 1);
    Ok(c.id)
}

fn state<H: Harness>(db: &Db<H>, queue: &str, id: i64) -> TestResult<Option<JobState>> {
    Ok(db.store.get_job(None, queue, id)?.map(|j| j.state))
}

fn last_error<H: Harness>(db: &Db<H>, queue: &str, id: i64) -> TestResult<Option<String>> {
    Ok(db.store.get_job(None, queue, id)?.and_then(|j| j.last_error))
}

pub fn a_child_waits_until_every_parent_is_acked<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[a, b], OnFailure::Cancel))?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting));
    assert_eq!((s.stats("c")?.waiting, s.stats("c")?.pending), (1, 0));
    assert_eq!(run_one(db, "p")?, a);
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting), "one parent left");
    assert_eq!(run_one(db, "p")?, b);
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending), "released by the last ack");
    assert_eq!((s.stats("c")?.waiting, s.stats("c")?.pending), (0, 1));
    assert_eq!(run_one(db, "c")?, c);
    Ok(())
}

pub fn a_waiting_child_is_never_claimed<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    db.put_job("q", &opts(), child("waits", &[a], OnFailure::Run))?;
    let plain = db.put("q", &opts(), "plain")?;
    let got = db.store.claim("q", "w", 10)?;
    assert_eq!(got.iter().map(|c| c.id).collect::<Vec<_>>(), vec![plain]);
    assert!(db.store.claim("q", "w", 10)?.is_empty());
    Ok(())
}

pub fn a_graph_in_one_transaction_lands_together_or_not_at_all<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut tx = s.begin()?;
    let ps = s.enqueue(Some(&mut tx), "p", &opts(), &[job("a"), job("b")])?;
    let c = s.enqueue(Some(&mut tx), "c", &opts(), &[child("c", &ps, OnFailure::Cancel)])?[0];
    s.enqueue(Some(&mut tx), "d", &opts(), &[child("d", &[c], OnFailure::Cancel)])?;
    tx.rollback()?;
    for q in ["p", "c", "d"] {
        assert_eq!(s.stats(q)?, Default::default(), "nothing of {q} left");
    }
    assert!(s.job_edges(c)?.parents.is_empty(), "no edge left");
    Ok(())
}

pub fn a_child_may_join_its_parents_transaction<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let mut tx = s.begin()?;
    let ps = s.enqueue(Some(&mut tx), "p", &opts(), &[job("a"), job("b")])?;
    let c = s.enqueue(Some(&mut tx), "c", &opts(), &[child("c", &ps, OnFailure::Cancel)])?[0];
    tx.commit()?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting));
    run_one(db, "p")?;
    run_one(db, "p")?;
    assert_eq!(run_one(db, "c")?, c);
    Ok(())
}

pub fn a_three_level_chain_where_the_middle_dies_kills_the_rest<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("q", &opts(), "a")?;
    let b = db.put_job("q", &opts(), child("b", &[a], OnFailure::Cancel))?;
    let c = db.put_job("q", &opts(), child("c", &[b], OnFailure::Cancel))?;
    let d = db.put_job("q", &opts(), child("d", &[c], OnFailure::Cancel))?;
    let runs = db.put_job("r", &opts(), child("runs anyway", &[b], OnFailure::Run))?;
    assert_eq!(run_one(db, "q")?, a);
    let mid = db.take("q", "w")?;
    assert_eq!(mid.id, b);
    assert!(s.fail(None, &mid, "boom")?);
    assert_eq!(state(db, "q", c)?, Some(JobState::Dead));
    assert_eq!(last_error(db, "q", c)?.as_deref(), Some(format!("parent job {b} died: boom").as_str()));
    assert_eq!(state(db, "q", d)?, Some(JobState::Dead), "transitively");
    assert_eq!(
        last_error(db, "q", d)?.as_deref(),
        Some(format!("parent job {c} died: parent job {b} died: boom").as_str())
    );
    assert_eq!(state(db, "r", runs)?, Some(JobState::Pending), "on_failure=run counts the death as settled");
    assert_eq!(s.stats("q")?.dead, 3);
    Ok(())
}

pub fn a_cancelled_parent_kills_its_descendants<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("q", &opts(), "a")?;
    let b = db.put_job("q", &opts(), child("b", &[a], OnFailure::Cancel))?;
    let c = db.put_job("q", &opts(), child("c", &[b], OnFailure::Cancel))?;
    assert!(db.store.cancel(None, "q", a)?);
    assert_eq!(last_error(db, "q", b)?.as_deref(), Some(format!("parent job {a} was cancelled").as_str()));
    assert_eq!(state(db, "q", c)?, Some(JobState::Dead));
    // A cancelled waiting child is gone and so are its edges.
    let p = db.put("q", &opts(), "p")?;
    let w = db.put_job("q", &opts(), child("w", &[p], OnFailure::Cancel))?;
    assert!(db.store.cancel(None, "q", w)?);
    assert!(db.store.job_edges(p)?.children.is_empty());
    assert_eq!(run_one(db, "q")?, p, "the parent's ack finds no child");
    Ok(())
}

pub fn on_failure_run_releases_the_child_once_every_parent_settled<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[a, b], OnFailure::Run))?;
    let ha = db.take("p", "w")?;
    assert!(s.fail(None, &ha, "nope")?);
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting), "b has not settled");
    run_one(db, "p")?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending));
    let results = s.parent_results(None, c)?;
    assert_eq!(results.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![a, b]);
    let dead = results[0].1.as_ref().ok_or("a's outcome")?;
    assert_eq!((dead.state.as_str(), dead.error.as_deref()), ("dead", Some("nope")));
    Ok(())
}

pub fn an_issued_but_gone_parent_counts_as_done<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    run_one(db, "p")?;
    let live = db.put("p", &opts(), "live")?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending), "acked before the child: done");
    let d = db.put_job("c", &opts(), child("d", &[a, live], OnFailure::Cancel))?;
    assert_eq!(db.store.get_job(None, "c", d)?.map(|j| j.state), Some(JobState::Waiting));
    run_one(db, "p")?;
    assert_eq!(state(db, "c", d)?, Some(JobState::Pending));
    Ok(())
}

pub fn a_never_issued_parent_is_a_value_error_and_writes_nothing<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let never = a + 1_000_000;
    let err = s.enqueue(None, "c", &opts(), &[job("first"), child("c", &[a, never], OnFailure::Cancel)]);
    assert_eq!(err, Err(Error::Value(format!("after: job {never} was never issued by this store"))));
    assert_eq!(s.stats("c")?, Default::default(), "nothing written");
    assert!(s.job_edges(a)?.children.is_empty());
    // In a caller's transaction the refusal leaves the transaction usable.
    let mut tx = s.begin()?;
    assert!(matches!(
        s.enqueue(Some(&mut tx), "c", &opts(), &[child("c", &[never], OnFailure::Run)]),
        Err(Error::Value(_))
    ));
    let ok = s.enqueue(Some(&mut tx), "c", &opts(), &[child("c", &[a], OnFailure::Run)])?[0];
    tx.commit()?;
    assert_eq!(state(db, "c", ok)?, Some(JobState::Waiting));
    // Ids are checked in core first.
    assert!(matches!(s.enqueue(None, "c", &opts(), &[child("c", &[0], OnFailure::Run)]), Err(Error::Value(_))));
    Ok(())
}

pub fn a_parent_dead_at_enqueue_applies_on_failure<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let h = db.take("p", "w")?;
    assert!(db.store.fail(None, &h, "gone wrong")?);
    let killed = db.put_job("c", &opts(), child("k", &[a], OnFailure::Cancel))?;
    assert_eq!(state(db, "c", killed)?, Some(JobState::Dead));
    assert_eq!(last_error(db, "c", killed)?.as_deref(), Some(format!("parent job {a} died: gone wrong").as_str()));
    let runs = db.put_job("c", &opts(), child("r", &[a], OnFailure::Run))?;
    assert_eq!(state(db, "c", runs)?, Some(JobState::Pending));
    Ok(())
}

pub fn exhaustion_at_claim_kills_the_children<H: Harness>(db: &Db<H>) -> TestResult {
    let once = QueueOpts { max_attempts: 1, ..opts() };
    let a = db.put("p", &once, "a")?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    db.take("p", "w")?;
    db.clock(31)?;
    assert!(db.one("p", "w")?.is_none(), "the lapsed lease is exhausted");
    assert_eq!(last_error(db, "c", c)?.as_deref(), Some(format!("parent job {a} died: attempts exhausted").as_str()));
    Ok(())
}

pub fn expiry_kills_the_children<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put_job("p", &opts(), NewJob { expires_s: Some(10), ..job("a") })?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    let r = db.put_job("c", &opts(), child("r", &[a], OnFailure::Run))?;
    db.clock(11)?;
    assert_eq!(db.store.sweep_expired("p")?.expired, 1);
    assert_eq!(state(db, "c", c)?, Some(JobState::Dead));
    assert_eq!(state(db, "c", r)?, Some(JobState::Pending));
    Ok(())
}

pub fn concurrent_acks_of_the_last_two_parents_release_the_child_once<H: Harness>(db: &Db<H>) -> TestResult {
    let stores = reopened(db, 2)?;
    for round in 0..20 {
        let ps = db.store.enqueue(None, "p", &opts(), &[job("x"), job("y")])?;
        let c = db.put_job("c", &opts(), child(&round.to_string(), &ps, OnFailure::Cancel))?;
        let held: Vec<Claimed> = db.store.claim("p", "w", 2)?;
        assert_eq!(held.len(), 2);
        let barrier = Barrier::new(2);
        let landed = on_threads(&stores, |i, s| {
            barrier.wait();
            s.ack(None, &[&held[i]])
        })?;
        assert_eq!(landed, vec![1, 1]);
        assert_eq!(state(db, "c", c)?, Some(JobState::Pending), "round {round}");
        let got = db.store.claim("c", "w", 10)?;
        assert_eq!(got.iter().map(|g| g.id).collect::<Vec<_>>(), vec![c], "released exactly once");
        assert_eq!(db.store.ack(None, &[&got[0]])?, 1);
    }
    assert_eq!(db.store.stats("c")?, Default::default());
    Ok(())
}

pub fn fan_out_releases_every_child_in_one_ack<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let kids: Vec<NewJob> = (0..2000).map(|i| child(&i.to_string(), &[a], OnFailure::Cancel)).collect();
    db.store.enqueue(None, "c", &opts(), &kids)?;
    assert_eq!(db.store.stats("c")?.waiting, 2000);
    run_one(db, "p")?;
    let st = db.store.stats("c")?;
    assert_eq!((st.waiting, st.pending), (0, 2000));
    Ok(())
}

pub fn results_are_kept_for_keep_result_or_while_a_child_needs_them<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let kept = db.put_job("p", &opts(), NewJob { keep_result_s: Some(100), ..job("kept") })?;
    let h = db.take("p", "w")?;
    assert!(s.ack_result(None, &h, r#"{"sum": 3}"#)?);
    let r = s.result(kept)?.ok_or("kept")?;
    assert_eq!((r.state.as_str(), r.value.as_deref(), r.error), ("done", Some(r#"{"sum": 3}"#), None));
    // Without keep_result and without children the result is not kept.
    let plain = db.put("p", &opts(), "plain")?;
    let h = db.take("p", "w")?;
    assert!(s.ack_result(None, &h, "1")?);
    assert_eq!(s.result(plain)?, None);
    // A parent's result is kept while its child waits, and goes with the child.
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[a, b], OnFailure::Cancel))?;
    let h = db.take("p", "w")?;
    assert!(s.ack_result(None, &h, "\"A\"")?);
    assert_eq!(s.result(a)?.and_then(|r| r.value).as_deref(), Some("\"A\""));
    run_one(db, "p")?;
    let hc = db.take("c", "w")?;
    assert_eq!(hc.id, c);
    assert_eq!(s.ack(None, &[&hc])?, 1);
    assert_eq!(s.result(a)?, None, "no child needs it any more");
    // keep_result passes, and the sweep drops it.
    db.clock(101)?;
    assert_eq!(s.result(kept)?, None, "past keep_result");
    s.sweep_expired("p")?;
    db.clock(-101)?;
    assert_eq!(s.result(kept)?, None, "swept");
    Ok(())
}

pub fn parent_results_name_every_parent<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[b, a], OnFailure::Cancel))?;
    let ha = db.take("p", "w")?;
    assert!(s.ack_result(None, &ha, "1")?);
    let hb = db.take("p", "w")?;
    assert_eq!(s.ack(None, &[&hb])?, 1);
    let hc = db.take("c", "w")?;
    let got = s.parent_results(None, hc.id)?;
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].0, got[0].1.as_ref().and_then(|r| r.value.as_deref())), (a, Some("1")));
    assert_eq!((got[1].0, got[1].1.as_ref().and_then(|r| r.value.as_deref())), (b, None), "acked without a result");
    assert_eq!(hc.id, c);
    Ok(())
}

pub fn a_dead_jobs_result_has_its_error<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("q", &opts(), "a")?;
    let h = db.take("q", "w")?;
    assert!(db.store.fail(None, &h, "bad input")?);
    let r = db.store.result(a)?.ok_or("dead")?;
    assert_eq!((r.state.as_str(), r.error.as_deref(), r.value), ("dead", Some("bad input"), None));
    assert_eq!(db.store.result(a + 1000)?, None);
    Ok(())
}

pub fn requeue_dead_child_waits_for_parents_not_acked<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[a, b], OnFailure::Cancel))?;
    let ha = db.take("p", "w")?;
    assert!(s.fail(None, &ha, "x")?);
    assert_eq!(state(db, "c", c)?, Some(JobState::Dead));
    // a is dead, b still pending: the redriven child waits for both.
    assert_eq!(s.requeue_dead(None, "c", Some(&[c]), 10)?, vec![c]);
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting));
    assert_eq!(s.requeue_dead(None, "p", Some(&[a]), 10)?, vec![a]);
    run_one(db, "p")?;
    run_one(db, "p")?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending));
    // A child whose parents are all done goes straight to pending.
    let d = db.put("p", &opts(), "d")?;
    let e = db.put_job("c", &opts(), child("e", &[d], OnFailure::Cancel))?;
    run_one(db, "p")?;
    run_one(db, "c")?;
    let he = db.take("c", "w")?;
    assert_eq!(he.id, e);
    assert!(s.fail(None, &he, "flaky")?);
    assert_eq!(s.requeue_dead(None, "c", Some(&[e]), 10)?, vec![e]);
    assert_eq!(state(db, "c", e)?, Some(JobState::Pending));
    Ok(())
}

pub fn job_edges_list_parents_and_children<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[b, a, b], OnFailure::Cancel))?;
    let d = db.put_job("c", &opts(), child("d", &[a], OnFailure::Run))?;
    let e = db.store.job_edges(c)?;
    assert_eq!((e.parents, e.children), (vec![a, b], vec![]));
    assert_eq!(db.store.job_edges(a)?.children, vec![c, d]);
    Ok(())
}

pub fn a_plain_ack_of_a_batch_with_workflow_jobs_settles_each<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ps = s.enqueue(None, "p", &opts(), &[job("a"), job("plain"), job("b")])?;
    let c = db.put_job("c", &opts(), child("c", &[ps[0], ps[2]], OnFailure::Cancel))?;
    let held = s.claim("p", "w", 3)?;
    let refs: Vec<&Claimed> = held.iter().collect();
    assert_eq!(s.ack(None, &refs)?, 3);
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending));
    Ok(())
}

pub fn a_parent_expired_without_retention_still_kills<H: Harness>(db: &Db<H>) -> TestResult {
    let gone = QueueOpts { dead_letter_retention_s: Some(0), ..opts() };
    let a = db.put_job("p", &gone, NewJob { expires_s: Some(10), ..job("a") })?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    db.clock(11)?;
    db.store.sweep_expired("p")?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Dead), "an expiry is a death, whatever the retention");
    Ok(())
}

pub fn cancelling_a_processing_parent_kills_its_children<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    let r = db.put_job("c", &opts(), child("r", &[a], OnFailure::Run))?;
    let h = db.take("p", "w")?;
    let mut tx = db.store.begin()?;
    assert!(db.store.cancel(Some(&mut tx), "p", a)?);
    tx.commit()?;
    assert_eq!(db.store.ack(None, &[&h])?, 0, "the holder's ack finds the row gone");
    assert_eq!(last_error(db, "c", c)?.as_deref(), Some(format!("parent job {a} was cancelled").as_str()));
    assert_eq!(state(db, "c", r)?, Some(JobState::Pending));
    Ok(())
}

pub fn one_enqueue_many_links_each_job_to_its_own_parents<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p", &opts(), "b")?;
    let kept = NewJob { keep_result_s: Some(60), ..job("kept") };
    let jobs = [
        child("a1", &[a], OnFailure::Cancel),
        child("a2", &[a], OnFailure::Cancel),
        job("plain"),
        child("b1", &[b], OnFailure::Run),
        child("ab", &[a, b], OnFailure::Cancel),
        kept,
    ];
    let ids = db.store.enqueue(None, "c", &opts(), &jobs)?;
    let states: Vec<_> = ids.iter().map(|id| state(db, "c", *id)).collect::<TestResult<_>>()?;
    let (w, p) = (Some(JobState::Waiting), Some(JobState::Pending));
    assert_eq!(states, vec![w, w, p, w, w, p]);
    assert_eq!(db.store.job_edges(a)?.children, vec![ids[0], ids[1], ids[4]]);
    assert_eq!(db.store.job_edges(b)?.children, vec![ids[3], ids[4]]);
    let ha = db.take("p", "w")?;
    assert!(db.store.fail(None, &ha, "x")?);
    let states: Vec<_> = ids.iter().map(|id| state(db, "c", *id)).collect::<TestResult<_>>()?;
    assert_eq!(states, vec![Some(JobState::Dead), Some(JobState::Dead), p, w, Some(JobState::Dead), p]);
    Ok(())
}

/// `enqueue(conn=…)` (ADR 0015) with parents: one guarded statement links
/// them (a dead parent applies `on_failure`, an id never issued writes
/// nothing and lands as the ValueError); on SQLite a batch cannot also hold
/// unique keys.
pub fn a_foreign_enqueue_links_its_parents<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let (failed, live) = (db.put("p", &opts(), "failed")?, db.put("p", &opts(), "live")?);
    let h = db.take("p", "w")?;
    assert_eq!(h.id, failed);
    assert!(db.store.fail(None, &h, "gone wrong")?);
    let jobs = [
        child("waits", &[live], OnFailure::Run),
        child("killed", &[failed], OnFailure::Cancel),
        NewJob { keep_result_s: Some(60), ..job("kept") },
    ];
    let style = if s.engine_kind() == "sqlite" { ParamStyle::Qmark } else { ParamStyle::Dollar };
    let call = s.foreign_enqueue("c", &opts(), &jobs, style)?.ok_or("a statement")?;
    let ids = db.run_foreign(&call)?;
    assert_eq!(state(db, "c", ids[0])?, Some(JobState::Waiting), "waits for its live parent");
    assert_eq!(s.job_edges(ids[0])?.parents, vec![live]);
    assert_eq!(state(db, "c", ids[1])?, Some(JobState::Dead));
    assert_eq!(last_error(db, "c", ids[1])?.as_deref(), Some(format!("parent job {failed} died: gone wrong").as_str()));
    assert_eq!(state(db, "c", ids[2])?, Some(JobState::Pending));
    let never = ids[2] + 1_000;
    let call = s.foreign_enqueue("c", &opts(), &[child("no", &[live, never], OnFailure::Run)], style)?;
    let refused = db.run_foreign(&call.ok_or("a statement")?).map_err(|e| e.to_string());
    assert_eq!(refused, Err(format!("after: job {never} was never issued by this store")));
    assert_eq!(s.stats("c")?.waiting, 1, "nothing written");
    run_one(db, "p")?;
    assert_eq!(state(db, "c", ids[0])?, Some(JobState::Pending));
    let keyed = NewJob { unique_key: Some("k".into()), ..job("keyed") };
    let mixed = s.foreign_enqueue("c", &opts(), &[child("x", &[live], OnFailure::Run), keyed], style);
    if s.engine_kind() == "sqlite" {
        assert!(matches!(mixed, Err(Error::Value(m)) if m.contains("cannot share one conn= enqueue on SQLite")));
    } else {
        let ids = db.run_foreign(&mixed?.ok_or("a statement")?)?;
        assert_eq!(state(db, "c", ids[1])?, Some(JobState::Pending));
    }
    Ok(())
}

/// The Worker's ack of a handler's return value and its next claim are one
/// transaction: the claim sees what the ack did (the child it released),
/// the result is kept as `ack_result` keeps it, and a stale handle lands
/// nothing but still claims.
pub fn the_workers_ack_with_a_result_and_its_next_claim_are_one_step<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("q", &opts(), "a")?;
    let c = db.put_job("q", &opts(), NewJob { keep_result_s: Some(60), ..child("c", &[a], OnFailure::Cancel) })?;
    let done = db.take("q", "w")?;
    assert_eq!(done.id, a);
    let (landed, next) = s.ack_result_then_claim(&done, r#"{"x":1}"#, "q", "w", 1)?;
    assert!(landed);
    assert_eq!(next.iter().map(|j| j.id).collect::<Vec<_>>(), vec![c], "the child this ack released");
    let parents = s.parent_results(None, c)?;
    assert_eq!(parents.len(), 1);
    assert_eq!(parents[0].1.as_ref().and_then(|r| r.value.as_deref()), Some(r#"{"x":1}"#));
    let (landed, none) = s.ack_result_then_claim(&next[0], "2", "q", "w", 1)?;
    assert!(landed && none.is_empty());
    assert_eq!(s.result(c)?.and_then(|r| r.value).as_deref(), Some("2"), "kept for keep_result");
    let d = db.put("q", &opts(), "d")?;
    let (again, got) = s.ack_result_then_claim(&next[0], "3", "q", "w", 1)?;
    assert!(!again, "a stale handle's ack lands nothing");
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![d]);
    assert_eq!(s.result(c)?.and_then(|r| r.value).as_deref(), Some("2"), "and keeps nothing");
    let plain = db.put("q", &opts(), "plain")?;
    let (landed, got) = s.ack_result_then_claim(&got[0], "4", "q", "w", 1)?;
    assert!(landed, "a plain job's ack with a result lands (the result is dropped)");
    assert_eq!(got.iter().map(|j| j.id).collect::<Vec<_>>(), vec![plain]);
    assert!(s.result(d)?.is_none());
    Ok(())
}

/// A parent already claimed when its children are linked: the ack settles
/// one child (Postgres: the ack statement's own decrement) and several alike.
pub fn a_child_linked_while_its_parent_runs_counts_on_its_ack<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put("p", &opts(), "a")?;
    let ha = db.take("p", "w")?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    assert_eq!(db.store.ack(None, &[&ha])?, 1);
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending));
    let b = db.put("p", &opts(), "b")?;
    let hb = db.take("p", "w")?;
    let d = db.put_job("c", &opts(), child("d", &[b], OnFailure::Cancel))?;
    let e = db.put_job("c", &opts(), child("e", &[b], OnFailure::Cancel))?;
    assert_eq!(db.store.ack(None, &[&hb])?, 1);
    assert_eq!((state(db, "c", d)?, state(db, "c", e)?), (Some(JobState::Pending), Some(JobState::Pending)));
    Ok(())
}

/// A parent that died (its child counting the death, `run`) and was
/// redriven is not counted a second time by its ack.
pub fn a_redriven_parent_s_ack_counts_once<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let a = db.put("p", &opts(), "a")?;
    let b = db.put("p2", &opts(), "b")?;
    let c = db.put_job("c", &opts(), child("c", &[a, b], OnFailure::Run))?;
    let ha = db.take("p", "w")?;
    assert!(s.fail(None, &ha, "once")?);
    assert_eq!(s.requeue_dead(None, "p", Some(&[a]), 10)?, vec![a]);
    assert_eq!(run_one(db, "p")?, a);
    assert_eq!(state(db, "c", c)?, Some(JobState::Waiting), "a settled once, at its death; b is left");
    assert_eq!(run_one(db, "p2")?, b);
    assert_eq!(state(db, "c", c)?, Some(JobState::Pending));
    Ok(())
}

/// A claimed parent of one child expires: its death kills the child.
pub fn a_running_parent_s_expiry_kills_its_one_child<H: Harness>(db: &Db<H>) -> TestResult {
    let a = db.put_job("p", &opts(), NewJob { expires_s: Some(10), ..job("a") })?;
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    let ha = db.take("p", "w")?;
    db.clock(11)?;
    assert_eq!(db.store.sweep_expired("p")?.expired, 1);
    assert_eq!(db.store.ack(None, &[&ha])?, 0, "the expired row is gone");
    assert_eq!(last_error(db, "c", c)?.as_deref(), Some(format!("parent job {a} died: expired").as_str()));
    Ok(())
}

/// `n` parents of queue `p` in one call (consecutive ids), and when `gaps`,
/// a job of another queue enqueued between each two.
fn parents<H: Harness>(db: &Db<H>, n: usize, gaps: bool) -> TestResult<Vec<i64>> {
    if !gaps {
        return Ok(db.store.enqueue(None, "p", &opts(), &vec![job("p"); n])?);
    }
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(db.put("p", &opts(), "p")?);
        db.put("other", &opts(), "between")?;
    }
    Ok(ids)
}

/// Thirty parents acked in a scrambled order, enqueued together or with
/// other jobs between them: the child waits until the thirtieth ack, which
/// releases it.
pub fn a_fan_in_is_released_by_its_last_parent_in_any_order<H: Harness>(db: &Db<H>) -> TestResult {
    for gaps in [false, true] {
        let ids = parents(db, 30, gaps)?;
        let c = db.put_job("c", &opts(), child("c", &ids, OnFailure::Cancel))?;
        let held = db.store.claim("p", "w", 30)?;
        assert_eq!(held.len(), 30);
        for (i, k) in (0..30).map(|i| (i * 7) % 30).enumerate() {
            assert_eq!(state(db, "c", c)?, Some(JobState::Waiting), "{} of 30 acked (gaps: {gaps})", i);
            assert_eq!(db.store.ack(None, &[&held[k]])?, 1);
        }
        assert_eq!(state(db, "c", c)?, Some(JobState::Pending), "gaps: {gaps}");
        assert_eq!(run_one(db, "c")?, c);
    }
    Ok(())
}

/// A parent linked to a second child after the first: its ack settles both,
/// the first child waits for the parents it has left, and is released when
/// that parent's ack is the last.
pub fn a_parent_given_a_second_child_settles_both<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = parents(db, 3, false)?;
    let x = db.put_job("c", &opts(), child("x", &ids, OnFailure::Cancel))?;
    let y = db.put_job("c", &opts(), child("y", &[ids[1]], OnFailure::Cancel))?;
    let held = db.store.claim("p", "w", 3)?;
    for k in [0, 2] {
        assert_eq!(db.store.ack(None, &[&held[k]])?, 1);
        assert_eq!((state(db, "c", x)?, state(db, "c", y)?), (Some(JobState::Waiting), Some(JobState::Waiting)));
    }
    assert_eq!(db.store.ack(None, &[&held[1]])?, 1);
    assert_eq!((state(db, "c", x)?, state(db, "c", y)?), (Some(JobState::Pending), Some(JobState::Pending)));
    Ok(())
}

/// A parent that already had a child when a fan-in names it, acked last:
/// the fan-in child is released by that ack.
pub fn a_fan_in_over_a_parent_with_an_earlier_child_is_released_by_its_ack<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = parents(db, 3, false)?;
    let y = db.put_job("c", &opts(), child("y", &[ids[1]], OnFailure::Cancel))?;
    let x = db.put_job("c", &opts(), child("x", &ids, OnFailure::Cancel))?;
    let held = db.store.claim("p", "w", 3)?;
    for k in [0, 2] {
        assert_eq!(db.store.ack(None, &[&held[k]])?, 1);
        assert_eq!(state(db, "c", x)?, Some(JobState::Waiting));
    }
    assert_eq!(db.store.ack(None, &[&held[1]])?, 1);
    assert_eq!((state(db, "c", x)?, state(db, "c", y)?), (Some(JobState::Pending), Some(JobState::Pending)));
    Ok(())
}

/// One of three parents is cancelled, first or last: the `run` child counts
/// it settled once and is released when the last of the three has left.
pub fn a_cancelled_parent_among_many_settles_a_run_child_once<H: Harness>(db: &Db<H>) -> TestResult {
    let ids = parents(db, 3, false)?;
    let x = db.put_job("c", &opts(), child("x", &ids, OnFailure::Run))?;
    assert!(db.store.cancel(None, "p", ids[1])?);
    assert_eq!(state(db, "c", x)?, Some(JobState::Waiting));
    assert_eq!(run_one(db, "p")?, ids[0]);
    assert_eq!(state(db, "c", x)?, Some(JobState::Waiting), "the third is left");
    assert_eq!(run_one(db, "p")?, ids[2]);
    assert_eq!(state(db, "c", x)?, Some(JobState::Pending));
    let ids = parents(db, 3, false)?;
    let y = db.put_job("c", &opts(), child("y", &ids, OnFailure::Run))?;
    assert_eq!(run_one(db, "p")?, ids[0]);
    assert_eq!(run_one(db, "p")?, ids[1]);
    assert_eq!(state(db, "c", y)?, Some(JobState::Waiting), "the third is left");
    assert!(db.store.cancel(None, "p", ids[2])?);
    assert_eq!(state(db, "c", y)?, Some(JobState::Pending), "released by the last parent's cancel");
    Ok(())
}

/// The middle one of three parents dies (`run`: settled) and is redriven:
/// live again, it is not waited for a second time, so the other two's acks
/// release the child while it is still queued.
pub fn a_redriven_parent_among_many_is_not_waited_for_again<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let ids = parents(db, 3, false)?;
    let x = db.put_job("c", &opts(), child("x", &ids, OnFailure::Run))?;
    let held = s.claim("p", "w", 3)?;
    assert!(s.fail(None, &held[1], "once")?);
    assert_eq!(s.requeue_dead(None, "p", Some(&[ids[1]]), 10)?, vec![ids[1]]);
    assert_eq!(s.ack(None, &[&held[0]])?, 1);
    assert_eq!(state(db, "c", x)?, Some(JobState::Waiting), "the third is left");
    assert_eq!(s.ack(None, &[&held[2]])?, 1);
    assert_eq!(state(db, "c", x)?, Some(JobState::Pending), "the redriven parent settled at its death");
    assert_eq!(run_one(db, "p")?, ids[1]);
    assert_eq!(state(db, "c", x)?, Some(JobState::Pending));
    Ok(())
}

/// Parent `a` in queue `p`, failed to dead ("x"), and then child `c` in
/// queue `c` with `cancel`, born dead for it.
fn a_dead_parent_and_its_child_born_dead<H: Harness>(db: &Db<H>) -> TestResult<(i64, i64)> {
    let a = db.put("p", &opts(), "a")?;
    let ha = db.take("p", "w")?;
    assert!(db.store.fail(None, &ha, "x")?);
    let c = db.put_job("c", &opts(), child("c", &[a], OnFailure::Cancel))?;
    assert_eq!(state(db, "c", c)?, Some(JobState::Dead), "born dead");
    Ok((a, c))
}

/// A child enqueued after its parent died (born dead, `cancel`) and then
/// redriven waits for that parent as for any parent dead when a child is
/// redriven: the parent's redrive and ack release it, and a purge of the
/// parent's dead row kills it.
pub fn a_child_born_dead_and_redriven_waits_for_its_dead_parent<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    for purge in [false, true] {
        let (a, c) = a_dead_parent_and_its_child_born_dead(db)?;
        assert_eq!(s.requeue_dead(None, "c", Some(&[c]), 10)?, vec![c]);
        assert_eq!(state(db, "c", c)?, Some(JobState::Waiting), "waits for its dead parent");
        if purge {
            assert_eq!(s.purge_dead(None, "p", Some(&[a]), None, 10)?, 1);
            assert_eq!(last_error(db, "c", c)?.as_deref(), Some(format!("parent job {a} died: x").as_str()));
            continue;
        }
        assert_eq!(s.requeue_dead(None, "p", Some(&[a]), 10)?, vec![a]);
        assert_eq!(run_one(db, "p")?, a);
        assert_eq!(state(db, "c", c)?, Some(JobState::Pending), "released by the redriven parent's ack");
        assert_eq!(run_one(db, "c")?, c);
    }
    Ok(())
}

/// A parent back from dead gains a child (its only one, so far), and then a
/// child it had killed at birth is redriven and waits for it too: the
/// parent's ack releases both (the redrive makes the parent no longer a
/// parent of one).
pub fn a_parent_s_ack_releases_its_new_child_and_a_redriven_one<H: Harness>(db: &Db<H>) -> TestResult {
    let s = &db.store;
    let (a, c) = a_dead_parent_and_its_child_born_dead(db)?;
    assert_eq!(s.requeue_dead(None, "p", Some(&[a]), 10)?, vec![a]);
    let ha = db.take("p", "w")?;
    let d = db.put_job("c", &opts(), child("d", &[a], OnFailure::Cancel))?;
    assert_eq!(s.requeue_dead(None, "c", Some(&[c]), 10)?, vec![c]);
    assert_eq!((state(db, "c", c)?, state(db, "c", d)?), (Some(JobState::Waiting), Some(JobState::Waiting)));
    assert_eq!(s.ack(None, &[&ha])?, 1);
    assert_eq!((state(db, "c", c)?, state(db, "c", d)?), (Some(JobState::Pending), Some(JobState::Pending)));
    Ok(())
}
