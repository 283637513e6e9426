//! The alkstore contract, shared by every engine and the Python binding.
//!
//! This crate holds what must be identical on SQLite and Postgres: the value
//! types a queue hands out, the one error enum, the retry curve, name and
//! schedule-spec validation, the `StopToken`, and the [`Engine`] trait each
//! storage engine implements. It must never depend on pyo3 or on a database
//! driver: the engines depend on it, never the reverse.

pub mod engine;
pub mod error;
pub mod open;
pub mod rules;
pub mod schedule;
pub mod store;

pub use engine::model::*;
pub use engine::ops::{Event, Firing, LockOps, ScheduleOps, ScheduleRow, StreamOps};
pub use engine::sql::{SqlRow, SqlValue};
pub use engine::{Engine, Tx};
pub use error::{Error, Result};
pub use open::options::{parse_options, EngineOptions, OpenOptions, OptValue};
pub use open::redact::{redact_url, Redactor};
pub use open::target::{parse_target, Target};
pub use rules::backoff::{backoff_delay, backoff_range, checked_backoff_range, BACKOFF_CAP_S};
pub use rules::duration::{MAX_DURATION_S, MAX_INSTANT_S};
pub use rules::names::{validate_name, RESERVED_PREFIX};
pub use schedule::register::NewSchedule;
pub use schedule::tick::TickReport;
pub use store::stop::StopToken;
pub use store::txguard::TxThreads;
pub use store::waiting::WaitSpec;
pub use store::wake::WakeHub;
pub use store::{Store, TxSession};
