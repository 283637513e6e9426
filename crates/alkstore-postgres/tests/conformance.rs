//! The engine conformance suite (crates/alkstore-enginetest) on Postgres: a
//! fresh schema per case, dropped after it. Under ALKSTORE_REQUIRE_POSTGRES=1
//! a case fails when no server answers instead of passing empty. Named
//! statements (the default) here; the same suite with unnamed ones is
//! `tests/unnamed.rs`.

mod common;

alkstore_enginetest::conformance!(common::TestDb);
