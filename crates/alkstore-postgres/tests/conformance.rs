//! The engine conformance suite (crates/alkstore-enginetest) on Postgres: a
//! fresh schema per case, dropped after it. Under ALKSTORE_REQUIRE_POSTGRES=1
//! a case fails when no server answers instead of passing empty.

mod common;

alkstore_enginetest::conformance!(common::TestDb);
