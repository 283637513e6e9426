//! The alkstore Postgres engine: the queue contract (SPEC §4, §6) on
//! tokio-postgres, with the schema, indexes and statements of ADR 0001.
//!
//! Every operation is one statement, prepared once per pooled connection,
//! so a call is one round trip; the sync [`alkstore_core::Engine`] methods
//! block on one process-wide tokio runtime ([`runtime()`]). All tables live
//! in an engine-owned schema (default `alkstore`) created and migrated at
//! [`open`].
//!
//! This crate is pure storage: it must never depend on pyo3 (the binding
//! crate converts and releases the GIL) and never re-implements contract
//! rules that `alkstore-core` owns (validation, the retry curve).

mod conn;
mod engine;
mod error;
mod maintain;
mod migrate;
mod open;
mod ops;
mod options;
mod params;
mod passfile;
mod pool;
mod prep;
mod rows;
mod runtime;
#[cfg(test)]
mod testing;
mod tx;
mod wake;

use std::sync::Arc;

use alkstore_core::{Engine, Result};

pub use engine::PgEngine;
pub use migrate::SCHEMA_VERSION;
pub use options::{PgOptions, StatementMode, DEFAULT_MAX_CONNECTIONS};
pub use runtime::{block_on, runtime, FORKED_MESSAGE};

/// Opens (creating or migrating) the Postgres store at `url`, in the schema
/// `options.schema`, with a pool of at most `options.max_connections` connections.
///
/// An unreachable server, a bad URL or a schema written by a newer alkstore
/// is an error naming the URL with its password masked.
pub fn open(url: &str, options: &PgOptions) -> Result<Arc<dyn Engine>> {
    Ok(Arc::new(PgEngine::open(url, options)?))
}

/// The text of the claim/ack hot path for a store in `schema`, so the
/// bare-driver floor of `benches/benches/claim.rs` runs exactly the
/// engine's statements against the engine's schema. Not API: it changes
/// whenever the statements do.
#[doc(hidden)]
pub mod hot_path {
    /// The claim and ack statements of one store.
    #[derive(Debug, Clone)]
    pub struct HotPath {
        /// The claim of one job (the fast claim; its row of NULLs, when it
        /// declines, never comes in a queue without lapsed leases or limits):
        /// `$1` clock offset, `$2` queue, `$3` worker.
        pub claim_one: String,
        /// The plain ack of one handle: `$1` offset, `$2` id, `$3` worker, `$4` claim token.
        pub ack_one: String,
    }

    /// The statements as the engine renders them for `schema` (unquoted).
    pub fn for_schema(schema: &str) -> HotPath {
        let sql = crate::ops::Statements::new(schema);
        HotPath { claim_one: sql.claim.fast, ack_one: sql.handle.ack_one }
    }
}
