//! Workflows (SPEC §25): what a job's `after`, `on_failure` and
//! `keep_result` may be, decided once for every engine and every surface.
//!
//! What only the database can tell — whether a parent id was ever issued,
//! and whether it is live, dead or gone — is the engine's; the rules here
//! run before anything is written.

use std::borrow::Cow;

use crate::engine::model::NewJob;
use crate::error::{Error, Result};
use crate::rules::duration::check_seconds;

/// The most parents one job may wait for. Fan-in of 10,000 is the SPEC's
/// benchmark; ten times that keeps one enqueue's edge insert bounded.
pub const MAX_PARENTS: usize = 100_000;

/// Checks one job's workflow fields: parent ids are positive, at most
/// [`MAX_PARENTS`] distinct ones, not combined with a unique key (a live
/// key returns the older job, whose parents cannot change), and a
/// `keep_result` within the duration bound.
pub fn check_job(job: &NewJob) -> Result<()> {
    if let Some(k) = job.keep_result_s {
        check_seconds("keep_result", k)?;
    }
    if job.after.is_empty() {
        return Ok(());
    }
    if let Some(bad) = job.after.iter().find(|id| **id < 1) {
        return Err(Error::Value(format!("after: {bad} is not a job id (ids are >= 1)")));
    }
    if job.after.len() > MAX_PARENTS {
        return Err(Error::Value(format!("after may name at most {MAX_PARENTS} jobs, got {}", job.after.len())));
    }
    if job.unique_key.is_some() {
        return Err(Error::Value("after cannot be combined with unique_key".into()));
    }
    Ok(())
}

/// SQLite's enqueue on a caller's own connection (ADR 0015) links parents
/// through a view that cannot take an upsert, so one call there cannot mix
/// jobs with parents and jobs with a unique key; refused before anything
/// is rendered.
pub fn check_foreign(jobs: &[NewJob], engine: &str) -> Result<()> {
    if jobs.iter().any(|j| !j.after.is_empty()) && jobs.iter().any(|j| j.unique_key.is_some()) {
        return Err(Error::Value(format!(
            "after and unique_key cannot share one conn= enqueue on {engine}: enqueue the keyed jobs in a call \
             of their own"
        )));
    }
    Ok(())
}

/// The jobs with every `after` sorted and without repeats, the form the
/// engines take (one edge per parent); borrowed when already so.
pub fn normalized(jobs: &[NewJob]) -> Cow<'_, [NewJob]> {
    let sorted = |a: &[i64]| a.windows(2).all(|w| w[0] < w[1]);
    if jobs.iter().all(|j| sorted(&j.after)) {
        return Cow::Borrowed(jobs);
    }
    Cow::Owned(
        jobs.iter()
            .map(|j| {
                let mut j = j.clone();
                j.after.sort_unstable();
                j.after.dedup();
                j
            })
            .collect(),
    )
}

/// The highest parent id of a batch, for the engine's one "was it ever
/// issued" check before any write.
pub fn highest_parent(jobs: &[NewJob]) -> Option<i64> {
    jobs.iter().filter_map(|j| j.after.last().copied()).max()
}

/// The error for a parent id this store never issued (SPEC §25): nothing
/// is written.
pub fn never_issued(id: i64) -> Error {
    Error::Value(format!("after: job {id} was never issued by this store"))
}

/// The last error of a child killed by a parent that left without an ack:
/// `parent job 7 died: <its error>` or `parent job 7 was cancelled`. The
/// engines' triggers write the same text (their migration 0012).
pub fn parent_failed(parent: i64, error: Option<&str>) -> String {
    match error {
        Some(e) => format!("parent job {parent} died: {e}"),
        None => format!("parent job {parent} was cancelled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(ids: &[i64]) -> NewJob {
        NewJob { after: ids.to_vec(), ..NewJob::of("{}") }
    }

    #[test]
    fn parents_are_checked_before_anything_is_written() {
        assert!(check_job(&after(&[1, 2])).is_ok());
        assert_eq!(check_job(&after(&[0])), Err(Error::Value("after: 0 is not a job id (ids are >= 1)".into())));
        let keyed = NewJob { unique_key: Some("k".into()), ..after(&[1]) };
        assert!(matches!(check_job(&keyed), Err(Error::Value(m)) if m.contains("unique_key")));
        let long = NewJob { keep_result_s: Some(-1), ..NewJob::of("{}") };
        assert!(check_job(&long).is_err());
    }

    #[test]
    fn parents_are_sorted_and_distinct_for_the_engine() {
        let jobs = [after(&[3, 1, 3]), after(&[2])];
        let n = normalized(&jobs);
        assert_eq!((n[0].after.as_slice(), n[1].after.as_slice()), (&[1, 3][..], &[2][..]));
        assert!(matches!(normalized(&[after(&[1, 2])]), Cow::Borrowed(_)));
        assert_eq!(highest_parent(&jobs), Some(3));
    }

    #[test]
    fn a_failed_parent_is_named() {
        assert_eq!(parent_failed(7, Some("boom")), "parent job 7 died: boom");
        assert_eq!(parent_failed(7, None), "parent job 7 was cancelled");
    }
}
