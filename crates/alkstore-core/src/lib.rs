//! The alkstore contract, shared by every engine and the Python binding.
//!
//! This crate holds what must be identical on SQLite and Postgres, decided
//! here once; it must never depend on pyo3 or on a database driver: the
//! engines depend on it, never the reverse. By concept:
//! - [`engine`]: the traits each storage engine implements ([`Engine`],
//!   [`Tx`], [`LockOps`], [`ScheduleOps`], [`StreamOps`]) next to the values
//!   they exchange. Engines receive resolved inputs and only run SQL.
//! - [`store`]: the [`Store`] front every binding call goes through — queue
//!   ops, the caller's transaction ([`TxSession`] and the doomed-transaction
//!   rule), waits and wakes, locks, streams.
//! - [`schedule`]: the spec and its boundaries, registration, the tick loop
//!   and what a fire enqueues, and the runner.
//! - [`rules`]: rules that cut across surfaces — names, durations (and the
//!   clamp), batch sizes, the retry curve and retry-at-budget, claim order.
//! - [`open`]: which engine a target selects, the options every engine
//!   shares (each engine crate parses its own), options in a URL, URL
//!   redaction.
//! - [`error`]: the one error enum.

pub mod engine;
pub mod error;
pub mod open;
pub mod rules;
pub mod schedule;
pub mod store;

pub use engine::completions::{CompletionOps, MinuteCount, KEEP_MINUTES};
pub use engine::locks::{LockOps, LockRow};
pub use engine::model::*;
pub use engine::paramstyle::{ParamStyle, Rendered};
pub use engine::queue::{
    foreign_params, foreign_rows, CancelOps, ClaimOps, DeadPick, EnqueueOps, ForgetOps, HandleOps, LimitOps, PauseOps,
    ReadOps, RedriveOps, SweepOps,
};
pub use engine::schedules::{Firing, ScheduleOps, ScheduleRow};
pub use engine::sql::{SqlRow, SqlValue};
pub use engine::streams::{foreign_publish_params, Event, StreamOps};
pub use engine::workflows::WorkflowOps;
pub use engine::{Engine, Tx};
pub use error::{Error, Result};
pub use open::options::{parse_options, EngineOptions, OpenOptions, OptKind, OptValue};
pub use open::redact::{redact_url, Redactor};
pub use open::target::{parse_target, Target};
pub use open::url_options::parse_url_options;
pub use rules::backoff::{backoff_delay, backoff_range, checked_backoff_range, BACKOFF_CAP_S};
pub use rules::duration::{MAX_DURATION_S, MAX_INSTANT_S};
pub use rules::limits::{LimitChange, QueueLimits};
pub use rules::names::{validate_name, RESERVED_PREFIX};
pub use schedule::register::NewSchedule;
pub use schedule::tick::TickReport;
pub use store::stop::StopToken;
pub use store::txguard::TxThreads;
pub use store::waiting::WaitSpec;
pub use store::wake::WakeHub;
pub use store::{Store, TxSession};
