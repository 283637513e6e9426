//! Opening a store: which engine a target selects, the options every
//! engine shares, and keeping secrets in URLs out of messages.

pub mod redact;
pub mod target;
