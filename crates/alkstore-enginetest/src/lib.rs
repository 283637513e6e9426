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

pub mod concurrency;
pub mod handle;
mod harness;
pub mod locks;
pub mod queue;
pub mod reads;
pub mod schedules;
pub mod streams;
pub mod sweep;
pub mod tx;
pub mod wake;

pub use harness::{job, opts, run, Db, Harness, TestResult};

/// Expands to one `#[test]` per conformance case, in one module per domain,
/// each on a fresh database of `$harness` (a type implementing [`Harness`]).
#[macro_export]
macro_rules! conformance {
    ($harness:ty) => {
        $crate::__cases! { $harness;
            queue {
                claims_follow_priority_then_fifo, claim_stamps_the_row, queues_are_separate,
                delayed_jobs_wait_for_the_clock, enqueue_many_returns_ids_in_order_and_stamps_options,
                payload_text_round_trips_byte_identically, ids_are_never_reused,
                ids_are_never_reused_after_dead_rows_are_purged, reclaims_compete_with_ready_rows_in_claim_order,
                a_lapsed_lease_in_another_queue_does_not_matter, exhaustion_by_reclaim_moves_to_dead,
                enqueue_refuses_durations_and_instants_past_the_bound,
            }
            handle {
                a_stale_handle_is_fenced, heartbeat_is_absolute_and_late_heartbeat_is_refused,
                retry_goes_back_to_pending_then_dead_at_budget, retry_delay_is_explicit_or_the_core_curve,
                fail_moves_to_dead_keeping_every_field, release_refunds_the_attempt_not_the_token,
                cancel_then_ack_is_false, ack_batch_counts_only_valid_handles,
                handle_lock_and_wait_arguments_are_bounded,
            }
            reads {
                get_job_sees_live_and_dead_rows_of_its_queue_only, dead_jobs_page_newest_first,
                stats_follow_the_spec_definitions, queue_names_lists_live_and_dead_queues_once_sorted,
                live_jobs_pages_pending_and_processing_rows_newest_first, now_moves_with_advance_clock,
            }
            sweep {
                sweep_moves_expired_rows_and_purges_by_retention, a_zero_retention_purges_in_the_same_sweep,
                expired_rows_are_not_claimable,
                boundaries_are_exact_to_the_second,
            }
            tx {
                commit_lands_business_write_and_jobs_together, rollback_leaves_nothing,
                dropping_an_open_transaction_rolls_back_and_frees_the_writer, a_transaction_begun_before_close_lands_nothing,
                handle_ops_in_a_transaction_land_only_on_commit, a_failed_statement_dooms_the_transaction,
                a_statement_that_ends_the_transaction_is_refused, a_foreign_or_other_store_transaction_is_refused,
                a_transaction_can_move_between_threads, the_caller_check_sees_a_transaction_of_this_thread,
            }
            locks { lock_lease_rules, a_lapsed_lease_is_not_renewed_even_when_nobody_took_it }
            schedules {
                upsert_keeps_the_boundary_for_the_same_interval, tick_fires_due_boundaries_with_the_row_stamps,
                catch_up_is_capped, rogue_tickers_fire_each_boundary_once,
            }
            streams {
                publish_read_offsets_trim, rolled_back_publish_leaves_no_gap,
                second_publisher_waits_for_the_first_commit,
            }
            wake {
                next_wake_is_the_earliest_future_ready_time_or_lease_end, commits_wake_the_hub_and_rollbacks_do_not,
                a_waiting_claim_is_woken_by_another_stores_commit, a_stopped_caller_claims_nothing_whatever_the_timeout,
            }
            concurrency {
                handles_claim_each_job_exactly_once, threads_sharing_one_handle_claim_each_job_once,
                concurrent_sweeps_never_double_move, concurrent_reclaims_and_exhaustion_are_exactly_once,
            }
        }
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
