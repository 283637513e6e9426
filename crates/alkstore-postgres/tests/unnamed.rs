//! The engine conformance suite with `statements="unnamed"` (ADR 0030), as a
//! store behind a transaction pooler runs, in a test binary of its own: no
//! other code in this process prepares a named statement, so every case
//! ends by checking that the engine prepared none either (`UnnamedDb`'s
//! drop, `common::named_prepares_so_far`). Not one: a pooler's server
//! session may hold another client's `s0`, `s1`, … (ADR 0030's Revision).

mod common;

alkstore_enginetest::conformance!(common::UnnamedDb);
