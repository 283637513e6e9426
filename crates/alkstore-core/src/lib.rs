//! The alkstore contract, shared by every engine and the Python binding.
//!
//! This crate holds what must be identical on SQLite and Postgres: the value
//! types a queue hands out, the one error enum, the retry curve, name and
//! schedule-spec validation, the `StopToken`, and the [`Engine`] trait each
//! storage engine implements. It must never depend on pyo3 or on a database
//! driver: the engines depend on it, never the reverse.

pub mod backoff;
pub mod duration;
pub mod engine;
pub mod error;
pub mod lock;
pub mod model;
pub mod names;
pub mod ops;
pub mod redact;
pub mod runner;
pub mod schedule;
pub mod scheduling;
pub mod sql;
pub mod stop;
pub mod store;
pub mod stream;
pub mod target;
pub mod txguard;
pub mod waiting;
pub mod wake;

pub use backoff::{backoff_delay, backoff_range, checked_backoff_range, BACKOFF_CAP_S};
pub use duration::{MAX_DURATION_S, MAX_INSTANT_S};
pub use engine::{Engine, Tx};
pub use error::{Error, Result};
pub use model::*;
pub use names::{validate_name, RESERVED_PREFIX};
pub use ops::{Event, LockOps, ScheduleOps, ScheduleRow, StreamOps, TickReport};
pub use redact::{redact_url, Redactor};
pub use scheduling::NewSchedule;
pub use sql::{SqlRow, SqlValue};
pub use stop::StopToken;
pub use store::{Store, TxSession};
pub use target::{parse_target, OpenOptions, OptValue, Target};
pub use txguard::TxThreads;
pub use waiting::WaitSpec;
pub use wake::WakeHub;
