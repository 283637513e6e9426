//! `conn=` (ADR 0015): the statements a binding runs on the caller's own
//! connection, and how their rows come back as ids. The checks are the
//! same as on the store's own connection; only the execution is elsewhere.

use crate::engine::model::{NewJob, QueueOpts};
use crate::engine::paramstyle::{render, ParamStyle, Rendered};
use crate::error::{Error, Result};
use crate::rules::unique::{place, Distinct};
use crate::store::Store;

/// A statement for the caller's connection, and how to read its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignCall {
    /// The text and values, in the driver's placeholder style.
    pub rendered: Rendered,
    /// What explains missing rows ([`crate::EnqueueOps::foreign_refusal`]).
    refusal: Option<Rendered>,
    expect: Expect,
}

#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// One row per job of `jobs` (no key twice), expanded to the caller's input by `distinct`.
    Jobs { jobs: Vec<NewJob>, distinct: Option<Distinct> },
    /// One row: a stream offset.
    Offset,
}

impl ForeignCall {
    /// The statement, taken out (the call keeps what reading its rows needs),
    /// so the binding hands the values to the driver without copying them.
    pub fn take_rendered(&mut self) -> Rendered {
        std::mem::take(&mut self.rendered)
    }

    /// The statement to run when fewer rows than [`ForeignCall::rows`] came
    /// back: its rows, when it returns any, are what to land.
    pub fn refusal(&self) -> Option<&Rendered> {
        self.refusal.as_ref()
    }

    /// How many rows the statement returns where the connection reaches this store.
    pub fn rows(&self) -> usize {
        match &self.expect {
            Expect::Jobs { jobs, .. } => jobs.len(),
            Expect::Offset => 1,
        }
    }

    /// The ids (or the offset) in the caller's input order, from the rows
    /// `(id, unique_key)` the statement returned; Ok(None) when rows are
    /// missing — the connection reaches another database. A workflow
    /// enqueue that wrote nothing because a parent id is above the highest
    /// this store has issued returns one row `(-issued, NULL)` instead (ids
    /// are >= 1): the `ValueError` of SPEC §25, the caller's transaction
    /// untouched.
    pub fn land(&self, rows: Vec<(i64, Option<String>)>) -> Result<Option<Vec<i64>>> {
        match &self.expect {
            Expect::Offset => Ok((rows.len() == 1).then(|| vec![rows[0].0])),
            Expect::Jobs { jobs, distinct } => {
                if let [(refused, None)] = rows.as_slice() {
                    if *refused <= 0 {
                        return Err(refused_parent(jobs, -refused));
                    }
                }
                let Some(ids) = place(jobs, rows) else { return Ok(None) };
                Ok(Some(distinct.as_ref().map_or(ids.clone(), |d| d.expand(&ids))))
            }
        }
    }
}

/// The error for a workflow enqueue refused because a parent id is above
/// `issued`, the highest id the store had issued: the lowest such id named.
fn refused_parent(jobs: &[NewJob], issued: i64) -> Error {
    let first = jobs.iter().flat_map(|j| j.after.iter()).copied().filter(|id| *id > issued).min();
    crate::rules::workflows::never_issued(first.unwrap_or(issued + 1))
}

impl Store {
    /// `enqueue(conn=…)`: the same validation as `enqueue`, then the
    /// engine's guarded statement in the caller's driver's `style`. None for
    /// no jobs.
    pub fn foreign_enqueue(
        &self,
        queue: &str,
        opts: &QueueOpts,
        jobs: &[NewJob],
        style: ParamStyle,
    ) -> Result<Option<ForeignCall>> {
        self.check_new_jobs(opts, jobs)?;
        self.open_check()?;
        if jobs.is_empty() {
            return Ok(None);
        }
        let jobs = &*crate::rules::workflows::normalized(jobs);
        let distinct = Distinct::of(jobs);
        let jobs = distinct.as_ref().map_or_else(|| jobs.to_vec(), |d| d.jobs.clone());
        let (sql, params) = self.engine().foreign_enqueue(queue, opts, &jobs)?;
        let rendered = render(&sql, &params, style)?;
        let refusal = self.engine().foreign_refusal(&jobs).map(|sql| render(&sql, &params, style)).transpose()?;
        Ok(Some(ForeignCall { rendered, refusal, expect: Expect::Jobs { jobs, distinct } }))
    }

    /// `stream.publish(conn=…)`: the same checks as `publish`, then the
    /// engine's guarded statement in the caller's driver's `style`.
    pub fn foreign_publish(
        &self,
        stream: &str,
        key: Option<&str>,
        payload: &str,
        style: ParamStyle,
    ) -> Result<ForeignCall> {
        self.check_event(stream, key, payload)?;
        self.open_check()?;
        let (sql, params) = self.engine().foreign_publish(stream, key, payload)?;
        Ok(ForeignCall { rendered: render(&sql, &params, style)?, refusal: None, expect: Expect::Offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::ReadyAt;

    fn call(keys: &[Option<&str>]) -> ForeignCall {
        let jobs: Vec<NewJob> = keys
            .iter()
            .map(|k| NewJob {
                payload: "{}".into(),
                ready: ReadyAt::Now,
                priority: 0,
                max_attempts: None,
                expires_s: None,
                unique_key: k.map(str::to_owned),
                group: None,
                ..NewJob::of(String::new())
            })
            .collect();
        let distinct = Distinct::of(&jobs);
        let jobs = distinct.as_ref().map_or(jobs, |d| d.jobs.clone());
        let rendered = Rendered { sql: String::new(), params: Vec::new() };
        ForeignCall { rendered, refusal: None, expect: Expect::Jobs { jobs, distinct } }
    }

    #[test]
    fn rows_land_in_input_order_with_repeats_sharing_an_id() {
        let c = call(&[Some("a"), None, Some("a")]);
        assert_eq!(c.rows(), 2, "the repeat is not written");
        assert_eq!(c.land(vec![(9, None), (4, Some("a".into()))]), Ok(Some(vec![4, 9, 4])));
        assert_eq!(c.land(vec![]), Ok(None), "another database returns nothing");
    }

    #[test]
    fn a_refused_workflow_enqueue_names_the_first_id_never_issued() {
        let mut c = call(&[None]);
        if let Expect::Jobs { jobs, .. } = &mut c.expect {
            jobs[0].after = vec![3, 12, 40];
        }
        assert_eq!(c.land(vec![(-10, None)]), Err(crate::rules::workflows::never_issued(12)));
        assert_eq!(c.land(vec![(5, None)]), Ok(Some(vec![5])));
    }
}
