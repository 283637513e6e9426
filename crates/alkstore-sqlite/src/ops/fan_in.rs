//! What a fan-in parent's ack writes (SPEC §25, issue 27, migration 0019).
//! Counted in rows, triggers included (`total_changes`): the same on every
//! machine, unlike a timing.

use alkstore_core::{Claimed, NewJob, QueueOpts, Result};
use rusqlite::Connection;

use super::{claim::claim, enqueue::enqueue, handle::ack};
use crate::conn::Scope;
use crate::error::DbResult;
use crate::migrate::migrate;

fn store() -> Result<Connection> {
    let conn = Connection::open_in_memory().db()?;
    conn.execute_batch("PRAGMA recursive_triggers = ON").db()?;
    migrate(&conn)?;
    Ok(conn)
}

fn put(conn: &Connection, queue: &str, jobs: &[NewJob]) -> Result<Vec<i64>> {
    enqueue(conn, Scope::Own, 0, queue, &QueueOpts::default(), jobs)
}

fn child_of(parents: &[i64]) -> NewJob {
    NewJob { after: parents.to_vec(), ..NewJob::of("{}") }
}

/// Rows written (inserted, updated, deleted, by any trigger too) by the ack of `job`.
fn ack_writes(conn: &Connection, job: &Claimed) -> Result<i64> {
    let before = conn.total_changes();
    assert_eq!(ack(conn, Scope::Own, 0, &[job])?, 1);
    Ok(i64::try_from(conn.total_changes() - before).unwrap_or(i64::MAX))
}

fn state(conn: &Connection, id: i64) -> Result<String> {
    conn.query_row("SELECT state FROM __alkstore_jobs WHERE id = ?1", [id], |r| r.get(0)).db()
}

/// Each parent of a fan-in over a run of ids but the last writes what a plain
/// ack writes (its own row): the child's row is written once, by the last.
#[test]
fn a_fan_in_parent_s_ack_writes_only_its_own_row_until_the_last() -> Result<()> {
    let conn = store()?;
    put(&conn, "plain", &[NewJob::of("{}")])?;
    let parents = put(&conn, "p", &vec![NewJob::of("{}"); 5])?;
    let child = put(&conn, "c", &[child_of(&parents)])?[0];
    let plain = claim(&conn, 0, "plain", "w", 1)?;
    let plain_writes = ack_writes(&conn, &plain[0])?;
    let held = claim(&conn, 0, "p", "w", 5)?;
    for job in &held[..4] {
        assert_eq!(ack_writes(&conn, job)?, plain_writes, "parent {} wrote more than a plain ack", job.id);
        assert_eq!(state(&conn, child)?, "waiting");
    }
    assert!(ack_writes(&conn, &held[4])? > plain_writes, "the last parent's ack releases the child");
    assert_eq!(state(&conn, child)?, "pending");
    Ok(())
}

/// Parents that are not a run of ids (another job between them) are counted
/// down on the child, one row more per ack, and release it alike.
#[test]
fn parents_with_a_gap_count_the_child_down() -> Result<()> {
    let conn = store()?;
    // First, so its ack is not the highest id's (whose leaving moves the
    // high-water mark of migration 0001: one row more).
    put(&conn, "plain", &[NewJob::of("{}")])?;
    let a = put(&conn, "p", &[NewJob::of("{}")])?[0];
    put(&conn, "other", &[NewJob::of("{}")])?;
    let b = put(&conn, "p", &[NewJob::of("{}")])?[0];
    let child = put(&conn, "c", &[child_of(&[a, b])])?[0];
    let plain = claim(&conn, 0, "plain", "w", 1)?;
    let plain_writes = ack_writes(&conn, &plain[0])?;
    let held = claim(&conn, 0, "p", "w", 2)?;
    assert_eq!(ack_writes(&conn, &held[0])?, plain_writes + 1, "the count on the child");
    assert_eq!(state(&conn, child)?, "waiting");
    ack_writes(&conn, &held[1])?;
    assert_eq!(state(&conn, child)?, "pending");
    Ok(())
}
