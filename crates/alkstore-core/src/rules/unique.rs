//! Unique jobs (SPEC §18): what a key may be, and how one call's jobs map to
//! the rows an engine writes and returns.
//!
//! The engines see each key at most once per call: a repeat inside one
//! `enqueue_many` keeps the first job and gets its id, which is decided here
//! ([`Distinct`]), so no engine statement ever meets the same key twice (a
//! Postgres `ON CONFLICT DO UPDATE` may not touch one row twice). The rows an
//! engine returns are matched back to the jobs by key ([`place`]), because a
//! key that is already live returns the older job's id, out of id order.

use std::collections::HashMap;

use crate::engine::model::NewJob;
use crate::error::{Error, Result};

/// The longest unique key, in characters.
pub const MAX_UNIQUE_KEY_CHARS: usize = 200;

/// A unique key is 1–200 characters, without NUL (Postgres text cannot hold it).
pub fn check_unique_key(key: &str) -> Result<()> {
    check_key("unique_key", key)
}

/// A key-like text argument (`what`: a unique key, a group) is 1–200
/// characters, without NUL.
pub fn check_key(what: &str, key: &str) -> Result<()> {
    let n = key.chars().count();
    if n == 0 || n > MAX_UNIQUE_KEY_CHARS {
        return Err(Error::Value(format!("{what} must be 1-{MAX_UNIQUE_KEY_CHARS} characters, got {n}")));
    }
    if key.contains('\0') {
        return Err(Error::Value(format!("{what} must not contain NUL characters")));
    }
    Ok(())
}

/// One call's jobs with every repeated key after its first dropped, and
/// where each input job's id comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Distinct {
    /// The jobs the engine writes: no key twice.
    pub jobs: Vec<NewJob>,
    /// For each input job, the index in `jobs` whose id it gets.
    slots: Vec<usize>,
}

impl Distinct {
    /// None when no key repeats (the common case: the input goes to the engine as it is).
    pub fn of(jobs: &[NewJob]) -> Option<Distinct> {
        let keyed = jobs.iter().filter(|j| j.unique_key.is_some()).count();
        if keyed < 2 {
            return None;
        }
        let mut first: HashMap<&str, usize> = HashMap::with_capacity(keyed);
        let mut out = Distinct { jobs: Vec::with_capacity(jobs.len()), slots: Vec::with_capacity(jobs.len()) };
        for job in jobs {
            if let Some(k) = job.unique_key.as_deref() {
                if let Some(&slot) = first.get(k) {
                    out.slots.push(slot);
                    continue;
                }
                first.insert(k, out.jobs.len());
            }
            out.slots.push(out.jobs.len());
            out.jobs.push(job.clone());
        }
        (out.jobs.len() < jobs.len()).then_some(out)
    }

    /// The ids of the input jobs, from the ids of [`Distinct::jobs`].
    pub fn expand(&self, ids: &[i64]) -> Vec<i64> {
        self.slots.iter().map(|&s| ids[s]).collect()
    }
}

/// Matches the rows an engine returned for `jobs` (no key twice), as
/// `(id, unique_key)`, to the jobs: a keyed job gets the row with its key;
/// the others get the remaining ids in ascending order, which is their input
/// order (the engines allocate fresh ids so). None when a job has no row.
pub fn place(jobs: &[NewJob], rows: Vec<(i64, Option<String>)>) -> Option<Vec<i64>> {
    if rows.len() != jobs.len() {
        return None;
    }
    let mut by_key: HashMap<String, i64> = HashMap::new();
    let mut fresh: Vec<i64> = Vec::with_capacity(rows.len());
    for (id, key) in rows {
        match key {
            Some(k) => {
                by_key.insert(k, id);
            }
            None => fresh.push(id),
        }
    }
    fresh.sort_unstable();
    let mut fresh = fresh.into_iter();
    jobs.iter()
        .map(|j| match &j.unique_key {
            Some(k) => by_key.get(k).copied(),
            None => fresh.next(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::ReadyAt;

    fn job(key: Option<&str>) -> NewJob {
        NewJob {
            payload: "{}".into(),
            ready: ReadyAt::Now,
            priority: 0,
            max_attempts: None,
            expires_s: None,
            unique_key: key.map(str::to_owned),
            group: None,
            ..NewJob::of(String::new())
        }
    }

    #[test]
    fn keys_are_one_to_two_hundred_characters_without_nul() {
        assert!(check_unique_key("k").is_ok());
        assert!(check_unique_key(&"é".repeat(200)).is_ok(), "characters, not bytes");
        assert!(matches!(check_unique_key(""), Err(Error::Value(_))));
        assert!(matches!(check_unique_key(&"x".repeat(201)), Err(Error::Value(_))));
        assert!(matches!(check_unique_key("a\0b"), Err(Error::Value(_))));
    }

    #[test]
    fn a_repeated_key_keeps_the_first_job_and_shares_its_id() {
        assert_eq!(Distinct::of(&[job(Some("a")), job(Some("b")), job(None)]), None, "no repeat");
        let d = Distinct::of(&[job(Some("a")), job(None), job(Some("a")), job(Some("b")), job(Some("b"))]).unwrap();
        assert_eq!(d.jobs, vec![job(Some("a")), job(None), job(Some("b"))]);
        assert_eq!(d.expand(&[10, 11, 12]), vec![10, 11, 10, 12, 12]);
    }

    #[test]
    fn rows_find_their_jobs_by_key_and_fresh_ids_in_order() {
        let jobs = [job(None), job(Some("old")), job(None), job(Some("new"))];
        // "old" was live already (id 3); RETURNING order is not promised.
        let rows = vec![(21, None), (3, Some("old".into())), (22, Some("new".into())), (20, None)];
        assert_eq!(place(&jobs, rows), Some(vec![20, 3, 21, 22]));
        assert_eq!(place(&jobs, vec![(1, None)]), None, "a job without its row");
        assert_eq!(place(&[job(Some("k"))], vec![(1, Some("other".into()))]), None);
    }
}
