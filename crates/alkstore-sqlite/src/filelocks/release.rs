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
//! The check reads `/proc/locks` for POSIX locks of this process on the two
//! files. Two details make it exact:
//! - The files are found in `/proc/locks` by a marker lock this module takes
//!   at an offset no SQLite uses, not by `stat`, because on some file systems
//!   (overlayfs, btrfs subvolumes) `stat` reports another device number than
//!   the lock table does.
//! - While it looks and closes, it holds a write lock on the database's
//!   PENDING byte. Every SQLite takes a read lock there before it may read
//!   the file, so the other copy cannot start using the file in between
//!   (it gets SQLITE_BUSY for a moment and retries under its busy timeout);
//!   a `-shm` lock is only ever taken while holding a read lock on the file.

use libc::c_int;

use super::table::{Key, Table};

/// SQLite's PENDING byte (its default `sqlite3PendingByte`).
const PENDING_BYTE: i64 = 0x4000_0000;

/// Where the marker lock goes: far past any byte SQLite locks or stores,
/// distinct per process so the marker names this process's file.
fn marker_offset() -> i64 {
    (1 << 62) + (i64::from(std::process::id()) << 20)
}

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
/// close: rare events, while the check costs one read of `/proc/locks`).
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
    let marker = marker_offset();
    let marked = lock_fds.iter().all(|&fd| set_lock(fd, libc::F_RDLCK, marker));
    let others_hold = if marked { others_hold_locks() } else { None };
    if others_hold != Some(false) {
        for &fd in &lock_fds {
            set_lock(fd, libc::F_UNLCK, marker);
        }
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

/// Whether this process holds a POSIX lock on a file that carries its
/// marker; `None` when that cannot be told.
fn others_hold_locks() -> Option<bool> {
    // /proc must show this process under its own id (the lock table lists
    // pids as the /proc mount's namespace sees them).
    let me = std::process::id();
    let shown: u32 = std::fs::read_link("/proc/self").ok()?.to_str()?.parse().ok()?;
    if shown != me {
        return None;
    }
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    posix_locks_on_marked(&locks, me, marker_offset())
}

/// From the text of `/proc/locks`: does process `pid` hold a POSIX lock on
/// any file carrying an OFD marker lock at `marker`? `None` if no marker.
pub(super) fn posix_locks_on_marked(locks: &str, pid: u32, marker: i64) -> Option<bool> {
    // "1: POSIX  ADVISORY  WRITE 3787 fe:00:770190 0 EOF"; a waiter has "->" after the id.
    let rows: Vec<Vec<&str>> =
        locks.lines().map(|l| l.split_whitespace().skip(1).filter(|w| *w != "->").collect()).collect();
    let marker = marker.to_string();
    let marked: Vec<&str> = rows
        .iter()
        .filter(|r| r.len() >= 7 && r[0] == "OFDLCK" && r[5] == marker && r[6] == marker)
        .map(|r| r[4])
        .collect();
    if marked.is_empty() {
        return None;
    }
    let pid = pid.to_string();
    Some(rows.iter().any(|r| r.len() >= 7 && r[0] == "POSIX" && r[3] == pid && marked.contains(&r[4])))
}

#[cfg(test)]
mod tests {
    use super::posix_locks_on_marked;

    const MARK: i64 = (1 << 62) + (42 << 20);

    fn table(rows: &[&str]) -> String {
        rows.iter().enumerate().map(|(i, r)| format!("{}: {r}\n", i + 1)).collect()
    }

    #[test]
    fn a_posix_lock_of_this_process_on_a_marked_file_counts() {
        let m = MARK.to_string();
        let text = table(&[
            &format!("OFDLCK ADVISORY  READ  -1 fe:00:100 {m} {m}"),
            "POSIX  ADVISORY  READ  42 fe:00:100 1073741826 1073742335",
        ]);
        assert_eq!(posix_locks_on_marked(&text, 42, MARK), Some(true));
    }

    #[test]
    fn other_processes_and_other_files_do_not_count() {
        let m = MARK.to_string();
        let text = table(&[
            &format!("OFDLCK ADVISORY  READ  -1 fe:00:100 {m} {m}"),
            &format!("OFDLCK ADVISORY  READ  -1 fe:00:101 {m} {m}"),
            "POSIX  ADVISORY  READ  43 fe:00:100 1073741826 1073742335",
            "POSIX  ADVISORY  WRITE 42 fe:00:999 0 EOF",
            "OFDLCK ADVISORY  WRITE -1 fe:00:100 1073741824 1073741824",
            "FLOCK  ADVISORY  WRITE 42 fe:00:100 0 EOF",
        ]);
        assert_eq!(posix_locks_on_marked(&text, 42, MARK), Some(false));
    }

    #[test]
    fn a_waiting_lock_counts_and_a_missing_marker_is_unknown() {
        let m = MARK.to_string();
        let waiting = format!(
            "{}1: -> POSIX  ADVISORY  WRITE 42 fe:00:101 128 128\n",
            table(&[&format!("OFDLCK ADVISORY  READ  -1 fe:00:101 {m} {m}")])
        );
        assert_eq!(posix_locks_on_marked(&waiting, 42, MARK), Some(true));
        let unmarked = table(&["POSIX  ADVISORY  WRITE 42 fe:00:101 0 EOF"]);
        assert_eq!(posix_locks_on_marked(&unmarked, 42, MARK), None);
    }
}
