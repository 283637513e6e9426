//! Claim order (SPEC §4.2): `priority DESC, run_at, id`, applied once by the
//! Store to whatever an engine's claim returned. `UPDATE … RETURNING` hands
//! rows back in no defined order on either engine; a sort of at most
//! `MAX_BATCH` rows costs nothing next to the statement.

use std::cmp::Reverse;

use crate::engine::model::Claimed;

/// Sorts claimed jobs into claim order.
pub fn sort_claimed(jobs: &mut [Claimed]) {
    if jobs.len() > 1 {
        jobs.sort_unstable_by_key(|j| (Reverse(j.priority), j.run_at, j.id));
    }
}
