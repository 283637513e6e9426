//! Schedules (SPEC §8): the spec and its boundaries, registration through
//! the Store, and the runner that fires them.

pub mod register;
pub mod runner;
pub mod spec;

pub use spec::*;
