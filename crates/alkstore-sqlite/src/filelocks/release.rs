//! When a parked descriptor may really be closed.
//!
//! Closing any descriptor of a file drops every POSIX lock the process holds
//! on it. So this copy closes the descriptors of a database (and its `-shm`)
//! only when it has none open there any more *and* the process holds no
//! POSIX lock on either file, that is, the other SQLite copy (the
//! application's `sqlite3`) has no connection using it. Until then they stay
//! parked: at most as many as this copy ever had open at once, since SQLite
//! reopening the file takes them back first.
//!
//! The check reads `/proc/self/fdinfo/N` of every descriptor of the process
//! open on either file: the kernel lists there the locks taken through that
//! open file, and a POSIX lock of the process always hangs on one of its open
//! descriptors (closing the last would have dropped it). Each of those reads
//! is consistent; the global `/proc/locks` is not (it is produced in pieces,
//! and a line can slip between two reads while other threads lock: a first
//! version read it and, under a churn of other files' locks, missed the
//! application's lock now and then).
//! While it looks and closes, the check holds a write lock on the database's
//! PENDING byte. Every SQLite takes a read lock there before it may read the
//! file, so the other copy cannot start using the file in between (it gets
//! SQLITE_BUSY for a moment and retries under its busy timeout); a `-shm`
//! lock is only ever taken while holding a read lock on the database.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use libc::c_int;

use super::table::{Key, Table};

/// SQLite's PENDING byte (its default `sqlite3PendingByte`).
const PENDING_BYTE: i64 = 0x4000_0000;

/// SQLite's descriptor `key` was just parked: release its database's
/// descriptors now if possible, else remember to try again.
pub(super) fn settle(table: &mut Table, key: Key) {
    if let Some(db) = table.db_of(key) {
        if !try_release(table, db) && idle(table, db) && !table.waiting.contains(&db) {
            table.waiting.push(db);
        }
    }
}

/// Tries again for every database still waiting (on each routed open and
/// close: rare events; the check reads the fdinfo of the descriptors open on the file).
pub(super) fn retry_waiting(table: &mut Table) {
    if table.waiting.is_empty() {
        return;
    }
    for db in std::mem::take(&mut table.waiting) {
        if idle(table, db) && !try_release(table, db) {
            table.waiting.push(db);
        }
    }
}

/// True when this copy has no descriptor open on the database or its `-shm`.
fn idle(table: &Table, db: Key) -> bool {
    let open = |k: Option<Key>| k.and_then(|k| table.files.get(&k)).map_or(0, |f| f.open);
    table.files.contains_key(&db) && open(Some(db)) == 0 && open(table.shm_of(db)) == 0
}

/// Closes every descriptor this module keeps for `db` and its `-shm` when
/// no lock of the process's other SQLite could be lost by it. True if done.
fn try_release(table: &mut Table, db: Key) -> bool {
    if !idle(table, db) {
        return false;
    }
    let shm = table.shm_of(db);
    let lock_fds: Vec<c_int> =
        [Some(db), shm].into_iter().flatten().filter_map(|k| table.files.get(&k)).map(|f| f.lock_fd).collect();
    let db_lock = lock_fds[0];
    if !set_lock(db_lock, libc::F_WRLCK, PENDING_BYTE) {
        return false; // somebody is acquiring a lock right now: try later
    }
    let keys: Vec<Key> = [Some(db), shm].into_iter().flatten().collect();
    if posix_locks_on(&keys) != Some(false) {
        set_lock(db_lock, libc::F_UNLCK, PENDING_BYTE);
        return false;
    }
    for key in [shm, Some(db)].into_iter().flatten() {
        if let Some(file) = table.files.remove(&key) {
            for parked in file.parked {
                // SAFETY: a descriptor SQLite closed and that only this table refers to.
                unsafe { libc::close(parked.fd) };
            }
            // SAFETY: our own description; closing the database's last drops the guard.
            unsafe { libc::close(file.lock_fd) };
        }
    }
    table.waiting.retain(|k| *k != db);
    true
}

/// Takes (or with `F_UNLCK` drops) a one-byte OFD lock without waiting.
fn set_lock(fd: c_int, kind: c_int, at: i64) -> bool {
    // SAFETY: flock is a plain C struct; zeroed (l_pid = 0) is what OFD locks require.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = at;
    lock.l_len = 1;
    // SAFETY: a valid flock for F_OFD_SETLK.
    unsafe { libc::fcntl(fd, libc::F_OFD_SETLK, &mut lock) == 0 }
}

/// Whether this process holds a POSIX lock on any of the files `keys`,
/// from the fdinfo of each of its descriptors open on them; `None` when
/// that cannot be told.
fn posix_locks_on(keys: &[Key]) -> Option<bool> {
    for entry in std::fs::read_dir("/proc/self/fd").ok()? {
        let fd = entry.ok()?.file_name();
        // Follows the link: the (device, inode) fstat gives, as in the table.
        // A descriptor closed meanwhile took its locks with it: skip it.
        let Ok(target) = std::fs::metadata(Path::new("/proc/self/fd").join(&fd)) else { continue };
        if !keys.contains(&(target.dev(), target.ino())) {
            continue;
        }
        match std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(&fd)) {
            Ok(info) if holds_posix_lock(&info) => return Some(true),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return None,
        }
    }
    Some(false)
}

/// From the text of `/proc/self/fdinfo/N`: is a POSIX lock listed?
/// ("lock:\t1: POSIX  ADVISORY  READ 4242 fe:00:77 1073741826 1073742335";
/// this module's own locks show as OFDLCK.)
pub(super) fn holds_posix_lock(fdinfo: &str) -> bool {
    fdinfo.lines().any(|line| line.starts_with("lock:") && line.split_whitespace().any(|w| w == "POSIX"))
}

#[cfg(test)]
mod tests {
    use super::holds_posix_lock;

    const HEAD: &str = "pos:\t0\nflags:\t02100002\nmnt_id:\t27\nino:\t10453172\n";

    #[test]
    fn a_posix_lock_in_the_fdinfo_counts() {
        let info = format!("{HEAD}lock:\t1: POSIX  ADVISORY  READ 42 fe:00:10453172 1073741826 1073742335\n");
        assert!(holds_posix_lock(&info));
    }

    #[test]
    fn ofd_locks_and_no_locks_do_not_count() {
        assert!(!holds_posix_lock(HEAD));
        let ofd = format!("{HEAD}lock:\t1: OFDLCK ADVISORY  WRITE -1 fe:00:10453172 1073741824 1073741824\n");
        assert!(!holds_posix_lock(&ofd));
        assert!(!holds_posix_lock("flags:\tPOSIX\n"), "only lock lines count");
    }
}
