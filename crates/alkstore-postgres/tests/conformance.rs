//! The engine conformance suite (crates/alkstore-enginetest) on Postgres: a
//! fresh schema per case, dropped after it. Under ALKSTORE_REQUIRE_POSTGRES=1
//! a case fails when no server answers instead of passing empty. Run twice:
//! named statements (the default) and unnamed ones (`unnamed::*`).

mod common;

alkstore_enginetest::conformance!(common::TestDb);

/// The same suite with unnamed statements (ADR 0030): nothing kept in the
/// server session, as a store behind a transaction pooler runs.
mod unnamed {
    alkstore_enginetest::conformance!(crate::common::UnnamedDb);
}
