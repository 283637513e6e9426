//! The values a queue takes and hands out, engine-independent.
//!
//! All timestamps are whole Unix seconds from the database's clock (SPEC §4.7).

use crate::error::{Error, Result};
use crate::rules::duration;

/// Queue options, stamped onto each job at enqueue (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueOpts {
    /// Lease length of one claim, whole seconds (>= 1).
    pub visibility_timeout_s: i64,
    /// Claims allowed, fresh or reclaim (>= 1).
    pub max_attempts: i64,
    /// Base of the retry curve, seconds (>= 0).
    pub backoff_base_s: f64,
    /// How long dead rows are kept; `None` keeps them forever.
    pub dead_letter_retention_s: Option<i64>,
}

impl Default for QueueOpts {
    /// The derived engine defaults: 300 s lease, 3 attempts, 5 s base, keep dead rows.
    fn default() -> Self {
        QueueOpts { visibility_timeout_s: 300, max_attempts: 3, backoff_base_s: 5.0, dead_letter_retention_s: None }
    }
}

impl QueueOpts {
    /// Validates raw option values the way `store.queue()` must: SPEC §4's
    /// minimums, then the duration bound of ADR 0011.
    pub fn new(
        visibility_timeout_s: f64,
        max_attempts: i64,
        backoff_base_s: f64,
        dead_letter_retention_s: Option<f64>,
    ) -> Result<Self> {
        if !visibility_timeout_s.is_finite() || visibility_timeout_s < 1.0 {
            return Err(Error::Value(format!(
                "visibility_timeout_s must be a finite number >= 1, got {visibility_timeout_s}"
            )));
        }
        let retention = match dead_letter_retention_s {
            None => None,
            Some(r) if r.is_finite() && r >= 0.0 => Some(duration::seconds("dead_letter_retention_s", r)?),
            Some(r) => {
                return Err(Error::Value(format!(
                    "dead_letter_retention_s must be None or a finite number >= 0, got {r}"
                )))
            }
        };
        let opts = QueueOpts {
            visibility_timeout_s: duration::seconds("visibility_timeout_s", visibility_timeout_s)?,
            max_attempts,
            backoff_base_s,
            dead_letter_retention_s: retention,
        };
        opts.check()?;
        Ok(opts)
    }

    /// Checks options however they were built (the fields are public): every
    /// rule of [`QueueOpts::new`] on the stored whole seconds.
    pub fn check(&self) -> Result<()> {
        if self.visibility_timeout_s < 1 {
            return Err(Error::Value(format!("visibility_timeout_s must be >= 1, got {}", self.visibility_timeout_s)));
        }
        duration::check_seconds("visibility_timeout_s", self.visibility_timeout_s)?;
        if self.max_attempts < 1 {
            return Err(Error::Value(format!("max_attempts must be >= 1, got {}", self.max_attempts)));
        }
        duration::fractional_seconds("backoff_base_s", self.backoff_base_s)?;
        if let Some(r) = self.dead_letter_retention_s {
            duration::check_seconds("dead_letter_retention_s", r)?;
        }
        Ok(())
    }
}

/// When a new job becomes ready. `delay` wins over `run_at` (resolved by the caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyAt {
    /// Ready at enqueue time.
    Now,
    /// Ready this many whole seconds after enqueue (database clock).
    Delay(i64),
    /// Ready at this Unix second.
    At(i64),
}

impl ReadyAt {
    /// As (absolute run_at, delay), the pair every enqueue statement takes as
    /// `coalesce(run_at, now + delay)`, so both forms share one clock read.
    #[inline]
    pub fn parts(self) -> (Option<i64>, i64) {
        match self {
            ReadyAt::Now => (None, 0),
            ReadyAt::Delay(d) => (None, d),
            ReadyAt::At(t) => (Some(t), 0),
        }
    }
}

/// One job to enqueue. `payload` is already-validated JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// JSON text of the payload.
    pub payload: String,
    /// When it becomes claimable.
    pub ready: ReadyAt,
    /// Higher runs first.
    pub priority: i32,
    /// Overrides the queue's `max_attempts` when set (>= 1).
    pub max_attempts: Option<i64>,
    /// Dead-lettered as 'expired' by a sweep this many seconds after enqueue.
    pub expires_s: Option<i64>,
    /// At most one live job per (queue, key) (SPEC §18): enqueueing a live
    /// key returns that job's id and writes nothing.
    pub unique_key: Option<String>,
    /// The group whose processing jobs a queue's `group_concurrency` limits (SPEC §24).
    pub group: Option<String>,
    /// The jobs this one waits for (SPEC §25): ids of any queue of the store,
    /// sorted and distinct once the Store has checked them; empty for none.
    pub after: Vec<i64>,
    /// What a parent's death does to this job (meaningful with `after`).
    pub on_failure: OnFailure,
    /// How long the result of its ack is kept, whole seconds (None: only
    /// while a waiting child needs it).
    pub keep_result_s: Option<i64>,
}

impl NewJob {
    /// A job of `payload`, ready now, every other field at its default.
    pub fn of(payload: impl Into<String>) -> Self {
        NewJob {
            payload: payload.into(),
            ready: ReadyAt::Now,
            priority: 0,
            max_attempts: None,
            expires_s: None,
            unique_key: None,
            group: None,
            after: Vec::new(),
            on_failure: OnFailure::Cancel,
            keep_result_s: None,
        }
    }

    /// Whether its enqueue takes the workflow path (parents or a kept result).
    pub fn in_workflow(&self) -> bool {
        !self.after.is_empty() || self.keep_result_s.is_some()
    }
}

/// What a child does when one of its parents dies or is cancelled (SPEC §25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// The child (and its descendants) go dead, naming the parent.
    #[default]
    Cancel,
    /// The parent counts as settled; the child runs once every parent is.
    Run,
}

impl OnFailure {
    /// The stored and Python name.
    pub fn as_str(self) -> &'static str {
        match self {
            OnFailure::Cancel => "cancel",
            OnFailure::Run => "run",
        }
    }

    /// Parses `"cancel"` or `"run"`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cancel" => Ok(OnFailure::Cancel),
            "run" => Ok(OnFailure::Run),
            other => Err(Error::Value(format!("on_failure must be \"cancel\" or \"run\", got {other:?}"))),
        }
    }
}

/// What `store.result(id)` reads (SPEC §25): a finished job's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    /// `"done"` (acked) or `"dead"`.
    pub state: String,
    /// The ack's result as JSON text, if one was given and kept.
    pub value: Option<String>,
    /// A dead job's last error.
    pub error: Option<String>,
    /// When it was acked or died.
    pub finished_at: i64,
}

/// A job's place in its workflow graph (SPEC §25), for operators.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobEdges {
    /// The jobs it waits (or waited) for, ascending.
    pub parents: Vec<i64>,
    /// The jobs that wait (or waited) for it, ascending.
    pub children: Vec<i64>,
}

/// A claimed job: everything the handle needs, including the fencing token.
#[derive(Debug, Clone, PartialEq)]
pub struct Claimed {
    /// Job id.
    pub id: i64,
    /// Queue name.
    pub queue: String,
    /// JSON text.
    pub payload: String,
    /// Claims so far, this one included.
    pub attempts: i64,
    /// Claim budget stamped at enqueue.
    pub max_attempts: i64,
    /// Priority.
    pub priority: i32,
    /// Who holds the lease.
    pub worker_id: String,
    /// Increases on every claim, never refunded: fences stale handles.
    pub claim_token: i64,
    /// Enqueue time.
    pub enqueued_at: i64,
    /// Ready time.
    pub run_at: i64,
    /// This claim's time.
    pub claimed_at: i64,
    /// Lease end; valid while `now <= deadline`.
    pub deadline: i64,
    /// Expiry instant, if any.
    pub expires_at: Option<i64>,
    /// Stamped lease length.
    pub visibility_timeout_s: i64,
    /// Stamped retry curve base.
    pub backoff_base_s: f64,
}

/// The state of a job row as `get_job` and `dead_jobs` see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for its parents (SPEC §25): never claimed until released.
    Waiting,
    /// Ready, or scheduled for later.
    Pending,
    /// Leased to a worker (maybe lapsed).
    Processing,
    /// In dead storage.
    Dead,
}

impl JobState {
    /// The state's name as Python shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Pending => "pending",
            JobState::Processing => "processing",
            JobState::Dead => "dead",
        }
    }

    /// Parses the stored state text.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "waiting" => Ok(JobState::Waiting),
            "pending" => Ok(JobState::Pending),
            "processing" => Ok(JobState::Processing),
            "dead" => Ok(JobState::Dead),
            other => Err(Error::database(None, format!("unknown job state {other:?} in storage"))),
        }
    }
}

/// A read-only view of a job row, live or dead.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job id.
    pub id: i64,
    /// Queue name.
    pub queue: String,
    /// Current state.
    pub state: JobState,
    /// JSON text.
    pub payload: String,
    /// Priority.
    pub priority: i32,
    /// Claims so far.
    pub attempts: i64,
    /// Claim budget.
    pub max_attempts: i64,
    /// Enqueue time.
    pub enqueued_at: i64,
    /// Ready time.
    pub run_at: i64,
    /// Last claim time, None if never claimed.
    pub claimed_at: Option<i64>,
    /// Last lease end, None if never claimed.
    pub deadline: Option<i64>,
    /// Last holder, None if never claimed.
    pub worker_id: Option<String>,
    /// Expiry instant.
    pub expires_at: Option<i64>,
    /// Its last failure (SPEC §30): on a dead row why it died; on a live
    /// one its latest retry's error, or that a lapsed lease of it was
    /// reclaimed. None for a job that never failed.
    pub last_error: Option<String>,
    /// When it died (dead rows only).
    pub died_at: Option<i64>,
    /// Its unique key, if enqueued with one.
    pub unique_key: Option<String>,
    /// Its group, if enqueued with one (SPEC §24).
    pub group: Option<String>,
}

/// What `forget_queue` did (SPEC §18): forgot the queue, or found it
/// still holding what a caller may read, and changed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forget {
    /// Every row keyed by the queue is gone. `known`: there was one to
    /// delete (the queue was listed, paused, limited or counted).
    Forgotten {
        /// Whether anything was deleted.
        known: bool,
    },
    /// Refused, nothing changed: which of these the queue still holds.
    Holds {
        /// A pending, processing or waiting job.
        live: bool,
        /// A dead job.
        dead: bool,
        /// A result kept with `keep_result` that has not expired yet, or
        /// that a child still names.
        results: bool,
    },
}

/// Counts for `q.stats()` (SPEC §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueStats {
    /// Pending and ready now.
    pub pending: i64,
    /// Pending with a future `run_at`.
    pub scheduled: i64,
    /// Leased, lapsed leases included.
    pub processing: i64,
    /// Waiting for parents (SPEC §25).
    pub waiting: i64,
    /// Rows in dead storage.
    pub dead: i64,
    /// Whole seconds since the oldest ready pending row became ready.
    pub oldest_ready_age_s: Option<i64>,
    /// Paused (SPEC §18): claims hand out nothing until resumed.
    pub paused: bool,
}

/// What `sweep_expired` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Swept {
    /// Rows moved to dead as 'expired'.
    pub expired: i64,
    /// Dead rows purged by retention.
    pub purged: i64,
}
