//! Rules that cut across every surface: what a name, a duration, a batch
//! size and a retry delay may be. Decided here once; the Store applies them
//! before anything reaches an engine.

pub mod backoff;
pub mod batch;
pub mod claim_order;
pub mod duration;
pub mod error_text;
pub mod limits;
pub mod names;
pub mod payload;
pub mod retry;
pub mod unique;
pub mod workflows;
