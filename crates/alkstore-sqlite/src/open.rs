//! Opening a store file: connections, pragmas, the read-only check and the
//! migration, each failure turned into a `DatabaseError` naming the file.

use std::time::{Duration, Instant};

use alkstore_core::{Error, Result};

use crate::options::SqliteOptions;
use rusqlite::{Connection, OpenFlags, MAIN_DB};

use crate::conn::Conns;
use crate::error::{at_open, DbResult};
use crate::migrate;
use crate::wal::{self, WalBound};

/// How many prepared statements each connection keeps. The engine has about
/// twenty hot statements; the default of 16 would evict some of them.
const STATEMENT_CACHE: usize = 64;

/// Which connection of the handle is being opened.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Writer,
    Reader,
}

/// Opens the writer (creating and migrating the file) and the reader.
/// With `must_exist`, nothing is created or migrated and the journal mode is
/// left as found: a file that is not a current store is refused unchanged.
pub(crate) fn open_conns(path: &str, options: &SqliteOptions) -> Result<Conns> {
    let inner = || -> Result<Conns> {
        let writer = connect(path, options, Role::Writer)?;
        if options.common.must_exist {
            migrate::check_existing(&writer)?;
        } else {
            migrate::migrate(&writer)?;
        }
        // The reader opens after the migration so it never sees a half-made file.
        let reader = connect(path, options, Role::Reader)?;
        let wal = WalBound::new(&writer, Duration::from_millis(options.busy_timeout_ms));
        Ok(Conns::new(writer, reader, wal))
    };
    inner().map_err(|e| at_open(path, e))
}

fn connect(path: &str, options: &SqliteOptions, role: Role) -> Result<Connection> {
    // NO_MUTEX: each connection sits behind our own mutex, so SQLite's
    // per-connection mutex would only add cost. No URI flag: a path is a path,
    // even if it contains '?'.
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if role == Role::Writer && !options.common.must_exist {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).db()?;

    // busy_timeout: wait this long for another process's write lock before
    // giving up with SQLITE_BUSY (set first: the pragmas below may need a lock).
    conn.busy_timeout(Duration::from_millis(options.busy_timeout_ms)).db()?;

    // SQLite silently falls back to read-only when it cannot open the file for
    // writing; a queue store that cannot write is useless, so say so now
    // rather than at the first enqueue.
    if conn.is_readonly(MAIN_DB).db()? {
        return Err(Error::database(
            Some("SQLITE_READONLY".to_owned()),
            "the file is read-only: alkstore needs to write to it".to_owned(),
        ));
    }

    // journal_mode=WAL: readers never block the writer and a commit is one
    // append, which is what makes per-op claim + ack fast. It is also the
    // first statement that reads the file, so a non-SQLite file fails here.
    // Switching is a write to the file, which `must_exist` never does: a
    // store is in WAL already, and anything else is refused by the caller's
    // first read (`migrate::check_existing`).
    // A file of another schema version is refused before the switch, so a
    // pre-release or newer store (which may be in another journal mode) is
    // left exactly as it was.
    if role == Role::Writer {
        migrate::refuse_unopenable(&conn)?;
    }
    let stayed = if options.common.must_exist { None } else { switch_to_wal(&conn, options.busy_timeout_ms)? };
    if let Some(mode) = stayed {
        return Err(Error::database(
            None,
            format!("could not switch the file to WAL journal mode (it stayed in {mode:?})"),
        ));
    }
    // synchronous=NORMAL: in WAL mode a commit survives a process crash and
    // only the last commits may be lost on power failure; FULL would fsync
    // every commit and cost an order of magnitude in throughput.
    conn.pragma_update(None, "synchronous", "NORMAL").db()?;
    // foreign_keys=ON: the engine's tables use none, but the caller's own
    // tables in the same file (SPEC §6 transactions) get the checks they expect.
    conn.pragma_update(None, "foreign_keys", "ON").db()?;
    // recursive_triggers=ON: the failure rule (the baseline's
    // __alkstore_job_failed_settle) deletes a dead parent's descendants
    // inside the trigger program its own delete started, and their delete
    // triggers — the id high-water mark's above all — must still fire.
    conn.pragma_update(None, "recursive_triggers", "ON").db()?;
    if role == Role::Writer {
        // journal_size_limit: a WAL that starts over is cut back to a bounded
        // size. It acts on the connection that writes and checkpoints.
        wal::configure(&conn)?;
    }
    if role == Role::Reader {
        // query_only: the reader must never write, even by a bug.
        conn.pragma_update(None, "query_only", "ON").db()?;
    }
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Switches to WAL; the mode the file stayed in when it did not switch.
///
/// While a brand-new file is still in rollback mode, the switch needs an
/// exclusive lock, and SQLite answers SQLITE_BUSY at once instead of calling
/// the busy handler when another connection holds a shared lock on it (so
/// two waiters cannot deadlock). Several processes opening one fresh file
/// at the same moment hit exactly that, so the switch is retried here until
/// `busy_timeout_ms` has passed, as every other statement would wait.
fn switch_to_wal(conn: &Connection, busy_timeout_ms: u64) -> Result<Option<String>> {
    let give_up = Instant::now() + Duration::from_millis(busy_timeout_ms);
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(mode) => return Ok((!mode.eq_ignore_ascii_case("wal")).then_some(mode)),
            Err(e) if is_busy(&e) && Instant::now() < give_up => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err::<Option<String>, _>(e).db(),
        }
    }
}

/// SQLITE_BUSY, the one error the WAL switch waits out.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseBusy)
}
