//! The routed system calls and their installation in the bundled SQLite's
//! unix VFS through `xSetSystemCall` (one table for every unix VFS variant).
//!
//! ABI note: SQLite calls its `fcntl` slot as the variadic
//! `int (*)(int, int, ...)`. Stable Rust cannot define a variadic function,
//! so [`routed_fcntl`] takes the third argument as a pointer-sized value.
//! On the x86-64 System V and AAPCS64 (Linux) ABIs a variadic integer or
//! pointer argument travels in the same register as a fixed one, which is
//! why this module is compiled for Linux on those two architectures only.
//! glibc's own `fcntl` reads its third argument the same way.

use std::ffi::CStr;

use libc::{c_char, c_int, c_void};
use parking_lot::Mutex;
use rusqlite::ffi;

use super::release;
use super::table::{self, Table};

/// Every tracked file and descriptor of this process.
static TABLE: Mutex<Table> = Mutex::new(Table::new());

/// Checks the kernel, then installs the routed calls. Runs once, before
/// this SQLite copy opens any file.
pub(super) fn route() -> Result<(), String> {
    ofd_locks_work()?;
    // SAFETY: sqlite3_vfs_find initialises SQLite if needed and returns a
    // registered VFS or null; the unix VFS lives for the whole process.
    let vfs = unsafe { ffi::sqlite3_vfs_find(c"unix".as_ptr()) };
    if vfs.is_null() {
        return Err("the bundled SQLite has no unix VFS".to_owned());
    }
    // SAFETY: `vfs` is non-null and points to SQLite's static VFS object.
    let Some(set) = (unsafe { (*vfs).xSetSystemCall }) else {
        return Err("the bundled SQLite's unix VFS cannot replace system calls".to_owned());
    };
    type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int;
    type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
    type FcntlFn = unsafe extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
    // SAFETY: SQLite stores each pointer and casts it back to the signature
    // of its slot: `open` (path, flags, mode), `close` (fd) and `fcntl` (see
    // the ABI note above).
    let calls: [(&CStr, ffi::sqlite3_syscall_ptr); 3] = unsafe {
        [
            (c"open", Some(std::mem::transmute::<OpenFn, unsafe extern "C" fn()>(routed_open))),
            (c"close", Some(std::mem::transmute::<CloseFn, unsafe extern "C" fn()>(routed_close))),
            (c"fcntl", Some(std::mem::transmute::<FcntlFn, unsafe extern "C" fn()>(routed_fcntl))),
        ]
    };
    for (name, call) in calls {
        // SAFETY: a valid VFS, a NUL-terminated name of one of its slots and
        // a function of that slot's signature. No file is open in this copy
        // yet (the caller runs first), so no lock is taken the old way.
        let rc = unsafe { set(vfs, name.as_ptr(), call) };
        if rc != ffi::SQLITE_OK {
            return Err(format!("the bundled SQLite refused to route {name:?} (code {rc})"));
        }
    }
    fork_safe();
    Ok(())
}

/// Kernels before 3.15 have no OFD locks; ask one, on a file of our own.
fn ofd_locks_work() -> Result<(), String> {
    // The raw system call, not glibc's wrapper (2.27+), so the extension
    // still loads on the glibc 2.17 of manylinux2014.
    // SAFETY: a NUL-terminated name and a flag; returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, c"alkstore-ofd-probe".as_ptr(), libc::MFD_CLOEXEC) };
    let fd = fd as c_int;
    if fd < 0 {
        return Err(format!("could not probe for OFD locks: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: zeroed is a valid flock (l_pid = 0, as OFD locks require).
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_len = 1;
    // SAFETY: a valid descriptor and flock.
    let rc = unsafe { libc::fcntl(fd, libc::F_OFD_GETLK, &mut lock) };
    let err = std::io::Error::last_os_error();
    // SAFETY: our own memfd; nobody else has it, so no lock can be lost.
    unsafe { libc::close(fd) };
    if rc != 0 {
        return Err(format!("this kernel has no open-file-description locks (F_OFD_GETLK: {err})"));
    }
    Ok(())
}

/// SQLite's `open` slot: hands out a parked descriptor of the same file
/// when there is one, else opens and records the new descriptor.
unsafe extern "C" fn routed_open(path: *const c_char, flags: c_int, mode: c_int) -> c_int {
    // SAFETY: SQLite passes a NUL-terminated path.
    let name = unsafe { CStr::from_ptr(path) };
    let access = flags & libc::O_ACCMODE;
    let kind = {
        let mut table = TABLE.lock();
        let kind = table.kind_of(name, flags);
        if kind.is_some() && table.has_parked() {
            if let Some(fd) = table::path_key(name).and_then(|key| table.reuse(key, access)) {
                return fd;
            }
        }
        kind
    };
    if kind.is_some() {
        table::occupy_std_descriptors();
    }
    // SAFETY: SQLite's own arguments, passed on.
    let fd = unsafe { libc::open(path, flags, mode as libc::c_uint) };
    if let (Some(kind), true) = (kind, fd >= 0) {
        let mut table = TABLE.lock();
        table.opened(fd, name, kind, access);
        release::retry_waiting(&mut table);
    }
    fd
}

/// SQLite's `close` slot: a database or `-shm` descriptor is parked, not
/// closed (closing it would drop the other SQLite's locks on the file).
unsafe extern "C" fn routed_close(fd: c_int) -> c_int {
    {
        let mut table = TABLE.lock();
        if let Some(key) = table.closing(fd) {
            release::settle(&mut table, key);
            release::retry_waiting(&mut table);
            return 0;
        }
    }
    // SAFETY: a descriptor SQLite owns and asked to close.
    unsafe { libc::close(fd) }
}

/// SQLite's `fcntl` slot: lock requests become OFD lock requests on the
/// file's one lock description; every other command passes through.
unsafe extern "C" fn routed_fcntl(fd: c_int, cmd: c_int, arg: *mut c_void) -> c_int {
    let ofd_cmd = match cmd {
        libc::F_SETLK => libc::F_OFD_SETLK,
        libc::F_SETLKW => libc::F_OFD_SETLKW,
        libc::F_GETLK => libc::F_OFD_GETLK,
        // SAFETY: SQLite's own arguments, passed on as glibc would.
        _ => return unsafe { libc::fcntl(fd, cmd, arg) },
    };
    let lock_fd = TABLE.lock().lock_fd(fd);
    let Some(lock_fd) = lock_fd else {
        // Not a database or -shm file: nothing another SQLite shares.
        // SAFETY: as above.
        return unsafe { libc::fcntl(fd, cmd, arg) };
    };
    // SAFETY: for the three lock commands SQLite passes a valid `struct flock *`.
    let theirs = unsafe { &mut *arg.cast::<libc::flock>() };
    // SQLite leaves l_pid unset; OFD requests must carry 0 there.
    // SAFETY: zeroed is a valid flock.
    let mut ours: libc::flock = unsafe { std::mem::zeroed() };
    ours.l_type = theirs.l_type;
    ours.l_whence = theirs.l_whence;
    ours.l_start = theirs.l_start;
    ours.l_len = theirs.l_len;
    // SAFETY: our own description of the file and a valid flock.
    let rc = unsafe { libc::fcntl(lock_fd, ofd_cmd, &mut ours) };
    if rc == 0 && cmd == libc::F_GETLK {
        *theirs = ours;
    }
    rc
}

/// Keeps the table usable across `fork()`: no other thread can hold its
/// mutex at the moment of the fork, and the child starts with an empty
/// table (its inherited lock descriptions are shared with the parent, so
/// using them would make parent and child one lock owner).
fn fork_safe() {
    extern "C" fn prepare() {
        std::mem::forget(TABLE.lock());
    }
    extern "C" fn parent() {
        // SAFETY: `prepare` left the mutex locked by this thread.
        unsafe { TABLE.force_unlock() };
    }
    extern "C" fn child() {
        // SAFETY: the child has one thread, this one, and `prepare` left the
        // mutex locked on its behalf, so nothing else can see the table.
        unsafe {
            (*TABLE.data_ptr()).forget();
            TABLE.force_unlock();
        }
    }
    // SAFETY: three plain functions; registration cannot fail in a way we could act on.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}
