//! The alkstore SQLite engine: the queue substrate on one embedded file.
//!
//! It implements [`alkstore_core::Engine`] and [`alkstore_core::Tx`] on
//! rusqlite with bundled SQLite, following ADR 0001 (the schema, indexes and
//! statements the Postgres engine shares). Correctness across threads and
//! processes comes from SQLite's single writer: every multi-statement write
//! runs under `BEGIN IMMEDIATE`, and a claim is one `UPDATE … RETURNING`.
//!
//! This crate is pure storage. It must never depend on pyo3 (the binding
//! crate depends on it, never the reverse) nor on the Postgres engine.
//!
//! Where this engine goes beyond the letter of ADR 0001 (behaviour unchanged):
//! - index names carry the `__alkstore_` prefix (`__alkstore_jobs_ready`, …):
//!   SQLite index names are file-wide and the caller's tables share the file;
//! - one index, `__alkstore_jobs_ready`, holds the ready and the leased rows
//!   (migration 0018): a claim and its ack write two index pages, not three;
//! - the claim has a single-statement fast path used while the queue has no
//!   lapsed lease (see `ops/claim.rs`), and the full ADR sequence otherwise;
//! - a dead row stores `state = 'dead'`; every other column is copied as is;
//! - durations are clamped to about 34,000 years so `now + d` never
//!   overflows SQLite's integers (a defence only: the Store front refuses
//!   durations over 100 years, ADR 0011).

use std::sync::Arc;

use alkstore_core::{Engine, Result};

/// The store's identity as one SQL expression over a row of `__alkstore_meta`
/// whose key is `store_id`: the random id joined with the main file's path as
/// the connection's SQLite resolved it. A copied file keeps the id but not the
/// path (ADR 0015). Defined first: the modules below use it.
macro_rules! store_identity {
    () => {
        "value || char(10) || (SELECT file FROM pragma_database_list WHERE name = 'main')"
    };
}

mod conn;
mod engine;
mod error;
mod filelocks;
mod hot;
mod migrate;
mod open;
mod ops;
mod options;
mod rows;
mod tx;
mod wake;
mod wal;
mod walwatch;

pub use filelocks::{shared_file_protection, LOCKS_ENV};
pub use options::SqliteOptions;

pub use migrate::SCHEMA_VERSION;

/// Opens (creating or migrating) the SQLite store at `path`.
///
/// A file that is not a SQLite database, is corrupt, cannot be written, or
/// was written by a newer alkstore gives `Error::Database` naming the file.
pub fn open(path: &str, options: &SqliteOptions) -> Result<Arc<dyn Engine>> {
    // Before the first file is opened; when it cannot hold, the binding
    // warns (see `shared_file_protection`).
    let _ = filelocks::install();
    let conns = open::open_conns(path, options)?;
    let store_id = conns.with_writer(|w| migrate::store_id(w))?;
    Ok(Arc::new(engine::SqliteEngine::new(conns, path, options, store_id)))
}

/// The text of the claim/ack hot path, so the bare-driver floor of
/// `benches/benches/claim.rs` runs exactly the engine's statements against
/// the engine's schema. Not API: it changes whenever the statements do.
#[doc(hidden)]
pub mod hot_path {
    /// The fast-path claim of one job: `?1` queue, `?2` worker, `?3` clock
    /// offset; returns the claimed row.
    pub const CLAIM_ONE: &str = crate::ops::claim::CLAIM_READY_ONE;
    /// The plain ack: `?1` id, `?2` worker, `?3` claim token, `?4` offset.
    pub const ACK: &str = crate::ops::handle::ACK;
    /// `BEGIN IMMEDIATE`, as the engine's own transactions open.
    pub const BEGIN: &str = crate::tx::BEGIN_IMMEDIATE;
    /// Their end.
    pub const COMMIT: &str = crate::tx::COMMIT;
}
