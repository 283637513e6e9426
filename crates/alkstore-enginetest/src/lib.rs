//! The engine conformance suite: the contract of SPEC §4–§10 written once,
//! run by every storage engine from one short `tests/conformance.rs`.
//!
//! An engine crate implements [`Harness`] (a fresh database, another handle
//! on it, a qualified table name for caller SQL) and expands
//! [`conformance!`] with it, which makes one `#[test]` per case, so a failure
//! names its case and cases run in parallel. Cases go through the
//! engine-independent front [`alkstore_core::Store`] wherever it has the
//! operation, so a rule that moves from the engines into the front keeps its
//! test; the few raw [`alkstore_core::Engine`] calls (what the front refuses
//! or does not offer) sit in one helper per domain.
//!
//! This crate depends on alkstore-core only: it must never name an engine.

// A case is named for the rule it checks; a doc comment only where the name
// cannot say why.
#![allow(missing_docs)]

pub mod cascade;
pub mod completions;
pub mod concurrency;
pub mod handle;
mod harness;
pub mod limits;
pub mod locks;
pub mod migrations;
pub mod operate;
pub mod queue;
pub mod reads;
pub mod schedules;
pub mod streams;
pub mod sweep;
pub mod tx;
pub mod wake;
pub mod workflows;

pub use harness::{job, opts, run, Db, Harness, TestResult};

/// Expands to one `#[test]` per conformance case, in one module per domain,
/// each on a fresh database of `$harness` (a type implementing [`Harness`]).
#[macro_export]
macro_rules! conformance {
    ($harness:ty) => {
        $crate::__queue_cases!($harness);
        $crate::__handle_cases!($harness);
        $crate::__reads_cases!($harness);
        $crate::__sweep_cases!($harness);
        $crate::__tx_cases!($harness);
        $crate::__locks_cases!($harness);
        $crate::__schedules_cases!($harness);
        $crate::__streams_cases!($harness);
        $crate::__wake_cases!($harness);
        $crate::__concurrency_cases!($harness);
        $crate::__operate_cases!($harness);
        $crate::__completions_cases!($harness);
        $crate::__limits_cases!($harness);
        $crate::__workflows_cases!($harness);
        $crate::__cascade_cases!($harness);
    };
}

/// The expansion behind [`conformance!`]; not for direct use.
#[doc(hidden)]
#[macro_export]
macro_rules! __cases {
    ($harness:ty; $($domain:ident { $($case:ident),* $(,)? })*) => {
        $(
            mod $domain {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    fn $case() {
                        $crate::run::<$harness>($crate::$domain::$case);
                    }
                )*
            }
        )*
    };
}
