//! Opening a store: which engine a target selects, the options every
//! engine shares (each engine crate parses its own), and keeping secrets in
//! URLs out of messages.

pub mod options;
pub mod redact;
pub mod schema;
pub mod target;
pub(crate) mod url;
pub mod url_options;
