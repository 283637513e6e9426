//! The bookkeeping behind the routed calls: which descriptors SQLite holds on
//! which files, the one lock description per file that every lock of this
//! SQLite copy goes through, and the descriptors kept open instead of closed.
//!
//! Every method runs under the table's mutex (see `vfs.rs`); none blocks.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;

use libc::c_int;

/// A file as the kernel knows it: (device, inode).
pub(super) type Key = (u64, u64);

/// The two kinds of file SQLite locks; it never locks a `-wal` or `-journal`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Db,
    Shm,
}

/// One database or `-shm` file this copy has opened.
pub(super) struct File {
    /// The name SQLite opened it by (absolute: SQLite resolves names first).
    pub(super) path: CString,
    pub(super) kind: Kind,
    /// For a `-shm` file, the database it belongs to (resolved when opened).
    pub(super) db: Option<Key>,
    /// This module's own open of the file. Every lock the copy takes on the
    /// file goes through it, so all of the copy's connections are one lock
    /// owner, as they would be with POSIX locks.
    pub(super) lock_fd: c_int,
    /// SQLite's descriptors on the file that it has not closed.
    pub(super) open: usize,
    /// Descriptors SQLite closed, kept open: see `release.rs`.
    pub(super) parked: Vec<Parked>,
}

/// A descriptor SQLite closed and that is kept open for reuse.
#[derive(Clone, Copy, Debug)]
pub(super) struct Parked {
    pub(super) fd: c_int,
    /// `flags & O_ACCMODE` it was opened with: reused only for the same.
    pub(super) access: c_int,
}

/// A descriptor SQLite holds open on a tracked file.
#[derive(Clone, Copy)]
struct Held {
    key: Key,
    lock_fd: c_int,
    access: c_int,
}

/// All tracked files and descriptors of this process.
pub(super) struct Table {
    held: BTreeMap<c_int, Held>,
    pub(super) files: BTreeMap<Key, File>,
    /// Database files whose parked descriptors could not be released yet.
    pub(super) waiting: Vec<Key>,
}

impl Table {
    pub(super) const fn new() -> Self {
        Table { held: BTreeMap::new(), files: BTreeMap::new(), waiting: Vec::new() }
    }

    /// What SQLite is opening at `path`, or `None` for a file it never locks
    /// (its `-wal` and `-journal` files, exclusive temp files).
    pub(super) fn kind_of(&self, path: &CStr, flags: c_int) -> Option<Kind> {
        if flags & libc::O_EXCL != 0 {
            return None;
        }
        let bytes = path.to_bytes();
        // A suffix means a companion only when SQLite has the database
        // itself open under the stem: a database may be *named* `x-wal`.
        let companion_of = |suffix: &[u8]| bytes.strip_suffix(suffix).is_some_and(|stem| self.db_named(stem).is_some());
        if companion_of(b"-wal") || companion_of(b"-journal") {
            None
        } else if companion_of(b"-shm") {
            Some(Kind::Shm)
        } else {
            Some(Kind::Db)
        }
    }

    /// The tracked database file named `path`.
    pub(super) fn db_named(&self, path: &[u8]) -> Option<Key> {
        self.files.iter().find(|(_, f)| f.kind == Kind::Db && f.path.as_bytes() == path).map(|(k, _)| *k)
    }

    /// The tracked `-shm` file of the database `db`.
    pub(super) fn shm_of(&self, db: Key) -> Option<Key> {
        self.files.iter().find(|(_, f)| f.kind == Kind::Shm && f.db == Some(db)).map(|(k, _)| *k)
    }

    /// The database whose release covers the tracked file `key`.
    pub(super) fn db_of(&self, key: Key) -> Option<Key> {
        let file = self.files.get(&key)?;
        match file.kind {
            Kind::Db => Some(key),
            Kind::Shm => file.db,
        }
    }

    /// The database a `-shm` file at `path` belongs to: the tracked file
    /// now at the stem's path (a name can outlive a replaced file), else
    /// the tracked database of that name.
    fn db_for_shm(&self, path: &CStr) -> Option<Key> {
        let stem = path.to_bytes().strip_suffix(b"-shm")?;
        let at_path = CString::new(stem).ok().and_then(|p| path_key(&p)).filter(|k| self.files.contains_key(k));
        at_path.or_else(|| self.db_named(stem))
    }

    /// True when some descriptor is parked, so an open should look for it.
    pub(super) fn has_parked(&self) -> bool {
        self.files.values().any(|f| !f.parked.is_empty())
    }

    /// Hands out a parked descriptor of the file `key` opened with `access`.
    pub(super) fn reuse(&mut self, key: Key, access: c_int) -> Option<c_int> {
        let file = self.files.get_mut(&key)?;
        let at = file.parked.iter().position(|p| p.access == access)?;
        let parked = file.parked.swap_remove(at);
        file.open += 1;
        let lock_fd = file.lock_fd;
        self.held.insert(parked.fd, Held { key, lock_fd, access });
        self.waiting.retain(|k| self.files.get(k).is_some_and(|f| f.open == 0));
        Some(parked.fd)
    }

    /// Records `fd`, which SQLite just opened at `path`. Returns the file's
    /// lock description, or `None` when the file cannot be tracked.
    pub(super) fn opened(&mut self, fd: c_int, path: &CStr, kind: Kind, access: c_int) -> Option<c_int> {
        let key = regular_file_key(fd)?;
        let db = if kind == Kind::Shm { self.db_for_shm(path) } else { None };
        let file = match self.files.entry(key) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                let lock_fd = open_lock_description(fd, path)?;
                e.insert(File { path: path.to_owned(), kind, db, lock_fd, open: 0, parked: Vec::new() })
            }
        };
        file.open += 1;
        let lock_fd = file.lock_fd;
        self.held.insert(fd, Held { key, lock_fd, access });
        Some(lock_fd)
    }

    /// The lock description for SQLite's descriptor `fd`, or `None` when
    /// `fd` is not a lockable file of SQLite's.
    #[inline]
    pub(super) fn lock_fd(&mut self, fd: c_int) -> Option<c_int> {
        match self.held.get(&fd) {
            Some(held) => Some(held.lock_fd),
            None => self.adopt(fd),
        }
    }

    /// Tracks a descriptor that was opened before the calls were routed
    /// (only code that opens SQLite before any store does, such as a test).
    #[cold]
    fn adopt(&mut self, fd: c_int) -> Option<c_int> {
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        let path = CString::new(link.as_os_str().as_bytes()).ok()?;
        // SAFETY: F_GETFL takes no argument and only reads the descriptor's flags.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return None;
        }
        let kind = self.kind_of(&path, flags & !libc::O_EXCL)?;
        self.opened(fd, &path, kind, flags & libc::O_ACCMODE)
    }

    /// SQLite closes `fd`. A tracked descriptor is parked instead, and its
    /// file's key returned; `None` means `fd` is not ours to keep.
    pub(super) fn closing(&mut self, fd: c_int) -> Option<Key> {
        let held = self.held.remove(&fd)?;
        let file = self.files.get_mut(&held.key)?;
        file.open -= 1;
        file.parked.push(Parked { fd, access: held.access });
        if file.open == 0 {
            // With POSIX locks, closing the copy's last descriptor of a file
            // drops whatever it still holds there, and SQLite counts on that
            // for the -shm's DMS lock; do the same on our description.
            unlock_all(file.lock_fd);
        }
        Some(held.key)
    }

    /// Forgets everything: in a forked child, the descriptors are the
    /// parent's lock owners and must not be used (nor closed: that would
    /// drop the child's own POSIX locks on the files).
    pub(super) fn forget(&mut self) {
        std::mem::forget(std::mem::replace(self, Table::new()));
    }
}

/// Drops every lock held through the description `lock_fd`.
fn unlock_all(lock_fd: c_int) {
    // SAFETY: zeroed is a valid flock; l_start = l_len = 0 covers the whole file.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_UNLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: our own description and a valid flock.
    unsafe { libc::fcntl(lock_fd, libc::F_OFD_SETLK, &mut lock) };
}

/// The (device, inode) of `fd` when it is a regular file.
pub(super) fn regular_file_key(fd: c_int) -> Option<Key> {
    // SAFETY: `st` is a plain C struct that fstat fills in; zeroed is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable stat buffer.
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return None;
    }
    Some((st.st_dev, st.st_ino))
}

/// The (device, inode) of the file at `path`, following links as open does.
pub(super) fn path_key(path: &CStr) -> Option<Key> {
    // SAFETY: as in `regular_file_key`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is writable.
    if unsafe { libc::stat(path.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.st_dev, st.st_ino))
}

/// A new open file description of the file behind `fd` (opened at `path`),
/// read-write when allowed (a write lock needs it).
fn open_lock_description(fd: c_int, path: &CStr) -> Option<c_int> {
    // Through /proc first: it names the very inode even if the path was
    // replaced meanwhile; the path itself where /proc is not mounted.
    let proc_path = CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    for name in [proc_path.as_c_str(), path] {
        for mode in [libc::O_RDWR, libc::O_RDONLY] {
            // SAFETY: a NUL-terminated path and plain flags.
            let lock_fd = unsafe { libc::open(name.as_ptr(), mode | libc::O_CLOEXEC | libc::O_NOCTTY) };
            if lock_fd < 0 {
                continue;
            }
            // A lock on another file would protect nothing.
            if regular_file_key(lock_fd) == regular_file_key(fd) {
                return Some(lock_fd);
            }
            // SAFETY: our own descriptor of a file that replaced the database
            // at its path, which is not SQLite's file.
            unsafe { libc::close(lock_fd) };
        }
    }
    None
}

/// Opens /dev/null onto any of descriptors 0–2 that is closed, so no file
/// this module tracks can get one of them: a stray write to "stderr" would
/// then land in the database, and SQLite's own fix for that (close and
/// reopen) would drop the process's locks on it.
pub(super) fn occupy_std_descriptors() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only asks whether `fd` is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            // SAFETY: a constant path; open returns the lowest free descriptor, which is `fd` or lower.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(path: &std::path::Path) -> CString {
        CString::new(path.as_os_str().as_bytes()).expect("a path without NUL")
    }

    fn open(path: &CStr, flags: c_int) -> c_int {
        // SAFETY: a NUL-terminated path and plain flags.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CREAT | libc::O_CLOEXEC, 0o600) };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        fd
    }

    #[test]
    fn companions_are_told_by_their_database() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = name(&dir.path().join("x.db"));
        let wal = name(&dir.path().join("x.db-wal"));
        let mut table = Table::new();
        // No database of that stem is open: a file merely *named* like a WAL is a database.
        assert_eq!(table.kind_of(&wal, libc::O_RDWR), Some(Kind::Db));
        table.opened(open(&db, libc::O_RDWR), &db, Kind::Db, libc::O_RDWR).expect("tracked");
        assert_eq!(table.kind_of(&wal, libc::O_RDWR), None);
        assert_eq!(table.kind_of(&name(&dir.path().join("x.db-journal")), libc::O_RDWR), None);
        assert_eq!(table.kind_of(&name(&dir.path().join("x.db-shm")), libc::O_RDWR), Some(Kind::Shm));
        assert_eq!(table.kind_of(&db, libc::O_RDWR | libc::O_EXCL), None, "exclusive temp files are never shared");
    }

    #[test]
    fn every_descriptor_of_a_file_locks_through_one_description() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = name(&dir.path().join("x.db"));
        let mut table = Table::new();
        let first = table.opened(open(&db, libc::O_RDWR), &db, Kind::Db, libc::O_RDWR);
        let second = table.opened(open(&db, libc::O_RDONLY), &db, Kind::Db, libc::O_RDONLY);
        assert!(first.is_some());
        assert_eq!(first, second);
    }

    #[test]
    fn a_closed_descriptor_is_parked_and_handed_out_again_for_the_same_access() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = name(&dir.path().join("x.db"));
        let mut table = Table::new();
        let fd = open(&db, libc::O_RDWR);
        table.opened(fd, &db, Kind::Db, libc::O_RDWR).expect("tracked");
        let key = table.closing(fd).expect("parked, not closed");
        assert_eq!(table.files[&key].open, 0);
        assert!(table.has_parked());
        assert_eq!(table.reuse(key, libc::O_RDONLY), None, "a read-only open never gets a read-write descriptor");
        assert_eq!(table.reuse(key, libc::O_RDWR), Some(fd));
        assert_eq!(table.files[&key].open, 1);
        assert_eq!(table.closing(-1), None, "a descriptor never tracked is not ours to keep");
    }

    #[test]
    fn a_shm_file_belongs_to_the_database_at_its_stem() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let db = name(&dir.path().join("x.db"));
        let shm = name(&dir.path().join("x.db-shm"));
        let mut table = Table::new();
        let db_fd = open(&db, libc::O_RDWR);
        table.opened(db_fd, &db, Kind::Db, libc::O_RDWR).expect("tracked");
        let shm_fd = open(&shm, libc::O_RDWR);
        table.opened(shm_fd, &shm, Kind::Shm, libc::O_RDWR).expect("tracked");
        let (db_key, shm_key) = (regular_file_key(db_fd), regular_file_key(shm_fd));
        assert_eq!(table.db_of(shm_key.expect("a file")), db_key);
        assert_eq!(table.shm_of(db_key.expect("a file")), shm_key);
    }
}
