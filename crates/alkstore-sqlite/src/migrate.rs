//! Numbered schema migrations, applied once each under the write lock, with
//! the highest applied number recorded as `schema_version` in `__alkstore_meta`.

use alkstore_core::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

use crate::conn::{atomic, Scope};
use crate::error::DbResult;

/// The migrations this build knows, in order: migration N is
/// `migrations/000N_*.sql`. Never edit a released one: add the next number
/// instead.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/0001_init.sql")),
    (2, include_str!("migrations/0002_locks_schedules_streams.sql")),
    (3, include_str!("migrations/0003_pending_holds_no_lease.sql")),
    (4, include_str!("migrations/0004_store_id.sql")),
    (5, include_str!("migrations/0005_stream_head_follows.sql")),
    (6, include_str!("migrations/0006_unique_pause.sql")),
    (7, include_str!("migrations/0007_completions.sql")),
    (8, include_str!("migrations/0008_queues.sql")),
    (9, include_str!("migrations/0009_cron_schedules.sql")),
    (10, include_str!("migrations/0010_limits.sql")),
    (11, include_str!("migrations/0011_slots.sql")),
    (12, include_str!("migrations/0012_workflows.sql")),
    (13, include_str!("migrations/0013_linked_enqueue.sql")),
    (14, include_str!("migrations/0014_fan_in_release.sql")),
    (15, include_str!("migrations/0015_fan_in_frames.sql")),
    (16, include_str!("migrations/0016_sole_child.sql")),
    (17, include_str!("migrations/0017_sole_acked_function.sql")),
    (18, include_str!("migrations/0018_live_index.sql")),
    (19, include_str!("migrations/0019_fan_in_run.sql")),
    (20, include_str!("migrations/0020_failure_cascade.sql")),
    (21, include_str!("migrations/0021_live_last_error.sql")),
    (22, include_str!("migrations/0022_payload_limits.sql")),
];

/// The schema version this build writes: the last migration's number. A
/// store with a higher one was written by a newer alkstore and is refused.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].0;

const CREATE_META: &str = "CREATE TABLE IF NOT EXISTS __alkstore_meta (key TEXT PRIMARY KEY, value TEXT)";
const META_EXISTS: &str = "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '__alkstore_meta'";
const READ_VERSION: &str = "SELECT value FROM __alkstore_meta WHERE key = 'schema_version'";
const WRITE_VERSION: &str = "INSERT INTO __alkstore_meta (key, value) VALUES ('schema_version', ?1) \
     ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// The store's identity: the id of migration 0004 and the file as SQLite
/// resolves its path (symlinks and `..` followed), so a copy of the file,
/// which keeps the id, is still another store. The foreign statements'
/// guard ([`crate::ops::enqueue::FOREIGN`]) computes the same expression on
/// the caller's connection.
const READ_STORE_ID: &str = concat!("SELECT ", store_identity!(), " FROM __alkstore_meta WHERE key = 'store_id'");

/// The store's identity (migration 0004, ADR 0015), read once at open.
pub(crate) fn store_id(conn: &Connection) -> Result<String> {
    let id: Option<String> = conn.query_row(READ_STORE_ID, [], |r| r.get(0)).optional().db()?;
    id.ok_or_else(|| Error::database(None, "__alkstore_meta has no store_id row".to_owned()))
}

/// Brings the file to [`SCHEMA_VERSION`], or refuses a newer one.
pub(crate) fn migrate(conn: &Connection) -> Result<()> {
    // The common case (already current) needs no write lock, so opening a
    // busy store does not queue behind its writers.
    if let Some(v) = read_version(conn)? {
        refuse_newer(v)?;
        if v == SCHEMA_VERSION {
            return Ok(());
        }
    }
    // BEGIN IMMEDIATE: two processes opening a fresh file at once migrate one
    // after the other; the second re-reads the version and finds nothing to do.
    atomic(conn, Scope::Own, |c| {
        c.execute_batch(CREATE_META).db()?;
        let current = read_version(c)?.unwrap_or(0);
        refuse_newer(current)?;
        for (n, sql) in MIGRATIONS {
            if *n > current {
                c.execute_batch(sql).db()?;
            }
        }
        c.execute(WRITE_VERSION, [SCHEMA_VERSION.to_string()]).db()?;
        Ok(())
    })
}

/// For `must_exist` opens: the file must already be a store of exactly this
/// build's schema version. Reads only, so a file that is not a store — or one
/// that a write would have to upgrade — is left as it was.
pub(crate) fn check_existing(conn: &Connection) -> Result<()> {
    let Some(v) = read_version(conn)? else {
        return Err(Error::database(
            None,
            "not an alkstore store: the file has no alkstore tables (nothing was written to it)",
        ));
    };
    refuse_newer(v)?;
    if v < SCHEMA_VERSION {
        return Err(Error::database(
            None,
            format!(
                "the store has schema version {v} and this alkstore writes {SCHEMA_VERSION}: open it once with \
                 alkstore.open() (a worker does) to upgrade it; this command writes nothing"
            ),
        ));
    }
    Ok(())
}

fn read_version(conn: &Connection) -> Result<Option<i64>> {
    let has_meta = conn.query_row(META_EXISTS, [], |_| Ok(())).optional().db()?.is_some();
    if !has_meta {
        return Ok(None);
    }
    let text: Option<Option<String>> = conn.query_row(READ_VERSION, [], |r| r.get(0)).optional().db()?;
    match text.flatten() {
        None => Ok(None),
        Some(t) => t.trim().parse::<i64>().map(Some).map_err(|_| {
            Error::database(None, format!("__alkstore_meta holds a schema_version that is not a number: {t:?}"))
        }),
    }
}

fn refuse_newer(version: i64) -> Result<()> {
    if version > SCHEMA_VERSION {
        return Err(Error::database(
            None,
            format!(
                "the database was written by a newer alkstore (schema version {version}, this \
                 alkstore knows up to {SCHEMA_VERSION}); upgrade alkstore to open it"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_files_are_numbered_one_to_n() -> alkstore_enginetest::TestResult {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/migrations");
        alkstore_enginetest::migrations::numbered_one_to_n(&dir, MIGRATIONS, SCHEMA_VERSION)
    }

    /// id, worker_id, deadline, claimed_at.
    type LeaseRow = (i64, Option<String>, Option<i64>, Option<i64>);

    /// A file as the build of schema `version` left it: its migrations and
    /// its version row.
    fn file_of_version(version: usize) -> Result<Connection> {
        let conn = Connection::open_in_memory().db()?;
        conn.execute_batch(CREATE_META).db()?;
        for (_, sql) in &MIGRATIONS[..version] {
            conn.execute_batch(sql).db()?;
        }
        conn.execute(WRITE_VERSION, [version.to_string()]).db()?;
        Ok(conn)
    }

    /// A file of schema version 2, as that build made it: its migrations,
    /// its version row, and a pending row its retry left holding a lease.
    #[test]
    fn version_2_pending_rows_lose_their_stale_lease() -> Result<()> {
        let conn = file_of_version(2)?;
        conn.execute_batch(
            "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, enqueued_at, run_at, claimed_at, deadline, worker_id) VALUES \
             (1, 'q', 'pending', '{}', 0, 1, 3, 1, 30, 5, 100, 200, 150, 180, 'w'), \
             (2, 'q', 'processing', '{}', 0, 1, 3, 1, 30, 5, 100, 100, 150, 180, 'w');",
        )
        .db()?;
        migrate(&conn)?;
        let rows: Vec<LeaseRow> = conn
            .prepare("SELECT id, worker_id, deadline, claimed_at FROM __alkstore_jobs ORDER BY id")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect())
            .db()?;
        assert_eq!(rows, vec![(1, None, None, Some(150)), (2, Some("w".into()), Some(180), Some(150))]);
        assert_eq!(read_version(&conn)?, Some(SCHEMA_VERSION));
        Ok(())
    }

    /// A file of schema version 17 whose pending row holds a lease (no path
    /// of this build leaves one, but 0018's ready scans seek `deadline IS
    /// NULL`, so such a row would never be claimed): 0018 clears it, and the
    /// claim takes the row.
    #[test]
    fn version_17_pending_rows_lose_a_stale_lease_and_stay_claimable() -> Result<()> {
        let conn = file_of_version(17)?;
        conn.execute_batch(
            "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, enqueued_at, run_at, claimed_at, deadline, worker_id) VALUES \
             (1, 'q', 'pending', '{}', 0, 1, 3, 1, 30, 5, 100, 0, 150, 180, 'w');",
        )
        .db()?;
        migrate(&conn)?;
        let claimed = crate::ops::claim::claim(&conn, 0, "q", "w2", 1)?;
        assert_eq!(claimed.iter().map(|c| c.id).collect::<Vec<_>>(), vec![1]);
        assert_eq!(read_version(&conn)?, Some(SCHEMA_VERSION));
        Ok(())
    }

    /// 0018 keeps the name `__alkstore_jobs_ready` so that a process of the
    /// previous version, still open on the file when a newer one migrates
    /// it, keeps claiming: its ready scan (0017's text, which names the
    /// index in `INDEXED BY` and has no `deadline IS NULL`) still prepares
    /// against the new index and takes the job.
    #[test]
    fn the_previous_version_s_claim_still_runs_on_a_migrated_file() -> Result<()> {
        use crate::ops::claim::CLAIM_READY_ONE;
        let conn = Connection::open_in_memory().db()?;
        migrate(&conn)?;
        conn.execute_batch(
            "INSERT INTO __alkstore_jobs (id, queue, state, payload, priority, attempts, max_attempts, claim_token, \
             visibility_timeout_s, backoff_base_s, enqueued_at, run_at) VALUES \
             (1, 'q', 'pending', '{}', 0, 0, 3, 0, 30, 5, 0, 0);",
        )
        .db()?;
        let previous = CLAIM_READY_ONE.replace(" AND deadline IS NULL", "");
        assert_ne!(previous, CLAIM_READY_ONE);
        let id: i64 = conn.query_row(&previous, rusqlite::params!["q", "old", 0], |r| r.get(0)).db()?;
        assert_eq!(id, 1);
        Ok(())
    }

    #[test]
    fn migrating_twice_is_a_no_op() -> Result<()> {
        let conn = Connection::open_in_memory().db()?;
        migrate(&conn)?;
        migrate(&conn)?;
        assert_eq!(read_version(&conn)?, Some(SCHEMA_VERSION));
        Ok(())
    }
}
