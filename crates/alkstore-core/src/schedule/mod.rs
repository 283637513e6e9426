//! Schedules (SPEC §8): the spec and its boundaries, registration through
//! the Store, the tick that fires due boundaries, and the runner that ticks.

pub mod cron;
pub mod register;
pub mod runner;
pub mod spec;
pub mod tick;
pub mod walk;
pub mod zone;

pub use spec::*;
