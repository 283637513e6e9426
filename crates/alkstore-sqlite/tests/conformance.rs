//! The engine conformance suite (crates/alkstore-enginetest) on SQLite: a
//! fresh store file per case.

mod common;

alkstore_enginetest::conformance!(common::Fixture);
