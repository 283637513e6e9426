//! The queue operations, one file per concept.

pub(crate) mod claim;
pub(crate) mod enqueue;
pub(crate) mod handle;
pub(crate) mod locks;
pub(crate) mod reads;
pub(crate) mod schedules;
pub(crate) mod streams;
pub(crate) mod sweep;
