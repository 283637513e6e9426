//! `alkstore.open` and the `Store` class.

use std::sync::Arc;

use alkstore_core::open::options::EngineKeys;
use alkstore_core::rules::names::outbox_queue;
use alkstore_core::{
    parse_options, parse_target, parse_url_options, redact_url, validate_name, Engine, EngineOptions, OpenOptions,
    OptValue, QueueOpts, Store as CoreStore, Target,
};
use alkstore_postgres::PgOptions;
use alkstore_sqlite::SqliteOptions;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::catalog::{CompletionCount, LockInfo, StreamInfo};
use crate::convert::{integer, number, Int};
use crate::errors::IntoPyResult;
use crate::exit;
use crate::lock::Lock;
use crate::queue::Queue;
use crate::repr;
use crate::schedule::{Priority, Schedule, ScheduleArgs};
use crate::stop::StopToken;
use crate::stream::Stream;
use crate::tx::Transaction;
use crate::views::Job;
use crate::workflows::JobResult;

/// An open alkstore: a SQLite file or a Postgres database.
#[pyclass(name = "Store", module = "alkstore", frozen)]
pub struct Store {
    pub(crate) inner: Arc<CoreStore>,
    target: String,
}

fn option_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<OptValue> {
    Ok(if let Ok(b) = v.cast::<PyBool>() {
        OptValue::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        OptValue::Int(integer(v, key)?)
    } else if v.is_instance_of::<PyFloat>() {
        OptValue::Float(number(v, key)?)
    } else if let Ok(s) = v.cast::<PyString>() {
        OptValue::Str(s.to_str()?.to_owned())
    } else {
        return Err(PyTypeError::new_err(format!("option {key:?} has unsupported type {}", v.get_type().name()?)));
    })
}

/// Queue options from `store.queue()` / `store.outbox()` keywords; None
/// keeps the derived default (vt 300 s, 3 attempts, base 5 s, keep dead rows).
pub(crate) fn queue_opts(
    visibility_timeout_s: Option<&Bound<'_, PyAny>>,
    max_attempts: Option<&Bound<'_, PyAny>>,
    backoff_base_s: Option<&Bound<'_, PyAny>>,
    dead_letter_retention_s: Option<&Bound<'_, PyAny>>,
) -> PyResult<QueueOpts> {
    let d = QueueOpts::default();
    let vt = visibility_timeout_s.map(|v| number(v, "visibility_timeout_s")).transpose()?;
    let ma = max_attempts.map(|v| integer(v, "max_attempts")).transpose()?;
    let base = backoff_base_s.map(|v| number(v, "backoff_base_s")).transpose()?;
    let keep = match dead_letter_retention_s {
        Some(v) if !v.is_none() => Some(number(v, "dead_letter_retention_s")?),
        _ => None,
    };
    QueueOpts::new(
        vt.unwrap_or(d.visibility_timeout_s as f64),
        ma.unwrap_or(d.max_attempts),
        base.unwrap_or(d.backoff_base_s),
        keep,
    )
    .py()
}

// The Python docstring of `alkstore.open` (help(), the API reference): the
// same text as the first `open` overload's in `_core.pyi`, which
// tests/test_open_typing.py checks. The signature stays `**options`: each
// engine's crate decides its keys, their types and their defaults, and an
// option is "given" only when the caller gives it, which is what lets the
// same option in a URL's query string be checked against the keyword (an
// explicit pyo3 signature would restate the keys here, with `None` for every
// default). The stub types each option; stubtest accepts the keywords of its
// overloads against the runtime's `**options`.
/// Opens a store, creating or migrating its tables.
///
/// A path (`str` or `os.PathLike`), `sqlite:///relative.db` or
/// `sqlite:////absolute/path.db` opens a SQLite file; a `postgresql://` or
/// `postgres://` URL opens Postgres. Opening creates or migrates the engine's
/// tables (on Postgres in `schema`, under an advisory lock, so processes may
/// open at once); a store written by a newer alkstore is refused. A store is
/// shared by every thread of a process; each process opens its own.
///
/// Every option is a keyword. Some apply to both engines, others to one
/// (the type stub has one overload per engine, so a type checker refuses a
/// misspelt option, or options of both engines together). A Postgres URL may
/// also carry options in its query string, under the same names
/// (`postgresql://app@pooler/db?statements=unnamed&schema=jobs`); an option
/// given both there and as a keyword must have the same value in both.
///
/// Args:
///     target: The SQLite file, or the Postgres URL. `":memory:"` is refused:
///         no other process could see it.
///
/// Keyword Args:
///     poll_interval_s (float): Both engines. How often a waiter looks again
///         when no wake came, in seconds (> 0, at most 100 years): the safety
///         net under the commit wakes, and the only wake of a store that does
///         not listen. Defaults to 1.0.
///     max_payload_bytes (int): Both engines. The largest payload, result or
///         event accepted, in bytes of UTF-8 JSON text (>= 1). Defaults to
///         1048576 (1 MiB).
///     watch_interval_ms (int): SQLite only. How often the wake watcher reads
///         the file's `PRAGMA data_version`, in milliseconds (1..=60000): for
///         50 ms after each write on Linux, all the time where inotify is
///         missing. Defaults to 1.
///     busy_timeout_ms (int): SQLite only. How long a write waits for the
///         file's write lock, held by another connection or process, before it
///         fails, in milliseconds (0..=3600000). Defaults to 5000.
///     schema (str): Postgres only. The engine-owned schema that holds every
///         alkstore table: 1-63 ASCII letters, digits or `_`, not starting with
///         a digit. Defaults to "alkstore".
///     max_connections (int): Postgres only. The most pooled connections the
///         store holds at once (1..=1000); the LISTEN session is not counted.
///         Defaults to 4.
///     pool_size (int): Postgres only. The older name of `max_connections`.
///     listen (bool): Postgres only. Wake waiters at commit through
///         LISTEN/NOTIFY, on one more session; `False` polls every
///         `poll_interval_s` instead. Defaults to True.
///     listen_url (str): Postgres only. A direct `postgresql://` server URL for
///         the LISTEN session, when `target` is a transaction pooler. Without
///         it the LISTEN session connects to `target`, except with
///         `statements="unnamed"`: then the store polls, and logs once on the
///         `alkstore` logger that it does.
///     statements (Literal["named", "unnamed"]): Postgres only. `"named"`
///         prepares each statement once per connection; `"unnamed"` keeps
///         nothing in the server session, for a transaction pooler (PgBouncer
///         `pool_mode=transaction` before 1.21, most managed poolers).
///         Defaults to "named".
///
/// Returns:
///     The open store; `with alkstore.open(...) as store:` closes it at the
///         end of the block.
///
/// Raises:
///     TypeError: A target that is no `str` or `os.PathLike`, an unknown
///         option, or an option's value of the wrong type.
///     ValueError: A target alkstore does not open (another URL scheme,
///         `":memory:"`, a libpq `key=value` string, a SQLite `file:` URI), an
///         option of the other engine (the message names the engine), a value
///         out of range, or an option given in the URL and as a keyword with
///         different values.
///     DatabaseError: The file or the server cannot be opened, or the store
///         was written by a newer alkstore.
///
/// Warns:
///     SharedFileWarning: On SQLite, where the platform cannot keep another
///         SQLite library in this process (Python's `sqlite3`, an ORM) from
///         overwriting the store's writes on the same file (outside Linux).
#[pyfunction]
#[pyo3(signature = (target, **options))]
pub fn open(py: Python<'_>, target: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Store> {
    let path = py.import("os")?.getattr("fspath")?.call1((target,)).map_err(|_| {
        PyTypeError::new_err(format!(
            "target must be a str path, an os.PathLike or a URL, got {}",
            target.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let text: String =
        path.extract().map_err(|_| PyTypeError::new_err("target must be a str path or URL, not bytes"))?;
    let parsed = parse_target(&text).py()?;
    let mut opts = Vec::new();
    if let Some(kw) = options {
        for (k, v) in kw.iter() {
            let key: String = k.extract()?;
            let value = option_value(&key, &v)?;
            opts.push((key, value));
        }
    }
    // Each engine parses its own options; the list of every engine's keys
    // lets a misplaced one be named as such, and messages list them all.
    let engines: EngineKeys<'_> = &[(PgOptions::ENGINE, PgOptions::KEYS), (SqliteOptions::ENGINE, SqliteOptions::KEYS)];
    let (engine, options): (PyResult<Arc<dyn Engine>>, OpenOptions) = match &parsed {
        Target::Sqlite(p) => {
            let o = parse_options::<SqliteOptions>(&opts, engines).py()?;
            (exit::detach(py, || alkstore_sqlite::open(p, &o)).py(), o.common)
        }
        Target::Postgres(u) => {
            // Options may also sit in the URL's query string; the driver gets the rest.
            let (url, o) = parse_url_options::<PgOptions>(u, &opts, engines).py()?;
            let engine = exit::detach(py, || alkstore_postgres::open(&url, &o)).py();
            if let (Ok(_), Some(note)) = (&engine, o.wake_note()) {
                // Once per store, at open (SPEC §26): the engine's words, Python's log.
                py.import("logging")?.getattr("getLogger")?.call1(("alkstore",))?.call_method1("warning", (note,))?;
            }
            (engine, o.common)
        }
    };
    let engine = engine?;
    if let (Target::Sqlite(p), Err(why)) = (&parsed, alkstore_sqlite::shared_file_protection()) {
        let message = format!(
            "{why}. While this store is open, do not use {p:?} through another SQLite library in this \
             process (Python's sqlite3, SQLAlchemy, Django): its writes and alkstore's could overwrite \
             each other. See docs/transactions.md."
        );
        crate::errors::warn(py, "SharedFileWarning", &message)?;
    }
    Ok(Store { inner: Arc::new(CoreStore::new(engine, options)), target: redact_url(&text) })
}

#[pymethods]
impl Store {
    /// `"sqlite"` or `"postgres"`.
    #[getter]
    fn engine(&self) -> &'static str {
        self.inner.engine_kind()
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// A queue handle; does no I/O. Options are stamped on each enqueued job.
    #[pyo3(signature = (name, *, visibility_timeout_s=None, max_attempts=None, backoff_base_s=None, dead_letter_retention_s=None))]
    fn queue(
        &self,
        name: &str,
        visibility_timeout_s: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        backoff_base_s: Option<&Bound<'_, PyAny>>,
        dead_letter_retention_s: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Queue> {
        validate_name("queue", name).py()?;
        let opts = queue_opts(visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s)?;
        Ok(Queue::new(self.inner.clone(), name.to_owned(), opts))
    }

    /// Every queue name with a live or dead row, sorted (ADR 0007): a scan
    /// for operators and the CLI, not for the hot path.
    fn queues(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let inner = self.inner.clone();
        exit::detach(py, move || inner.queue_names()).py()
    }

    /// Job `job_id`, live or dead, whatever its queue; None when it is gone
    /// (acked, cancelled, purged) or never was. A primary-key read of each
    /// table, never a walk of the queues.
    fn get_job(&self, py: Python<'_>, job_id: Int) -> PyResult<Option<Job>> {
        let id = job_id.get("job_id")?;
        let inner = self.inner.clone();
        Ok(exit::detach(py, move || inner.job_by_id(id)).py()?.map(Job::from))
    }

    /// Drops a queue that holds nothing a caller may read (no live, waiting
    /// or dead job, no result still kept) from `queues()`, `/metrics` and the
    /// dashboard, with its pause, limits and completion counts, in one
    /// transaction. True when the store knew it; a ValueError saying what it
    /// still holds, with nothing changed, otherwise. `name` as `queues()`
    /// lists it (an outbox's backing queue too).
    fn forget_queue(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let (inner, name) = (self.inner.clone(), name.to_owned());
        exit::detach(py, move || inner.forget_queue(&name)).py()
    }

    /// The outcome of job `job_id` (SPEC §25): its kept result once acked,
    /// its error once dead; None while it is live, or when nothing is kept.
    fn result(&self, py: Python<'_>, job_id: Int) -> PyResult<Option<JobResult>> {
        let id = job_id.get("job_id")?;
        let inner = self.inner.clone();
        let r = exit::detach(py, move || inner.result(id)).py()?;
        r.map(|r| JobResult::from_core(py, r)).transpose()
    }

    /// Job `job_id`'s place in its workflow (SPEC §25): `(parents,
    /// children)`, ids ascending. For the dashboard; an empty pair for a job
    /// without either (or no such job).
    fn job_edges(&self, py: Python<'_>, job_id: Int) -> PyResult<(Vec<i64>, Vec<i64>)> {
        let id = job_id.get("job_id")?;
        let inner = self.inner.clone();
        let e = exit::detach(py, move || inner.job_edges(id)).py()?;
        Ok((e.parents, e.children))
    }

    /// An outbox (SPEC §7): `alkstore.Outbox` over the queue
    /// `__alkstore_outbox:<name>`; does no I/O.
    #[pyo3(signature = (name, *, visibility_timeout_s=None, max_attempts=None, backoff_base_s=None, dead_letter_retention_s=None))]
    fn outbox(
        &self,
        py: Python<'_>,
        name: &str,
        visibility_timeout_s: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        backoff_base_s: Option<&Bound<'_, PyAny>>,
        dead_letter_retention_s: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let q =
            self._outbox_queue(name, visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s)?;
        let class = py.import("alkstore._outbox")?.getattr("Outbox")?;
        Ok(class.call1((Py::new(py, q)?, name))?.unbind())
    }

    /// The backing queue of outbox `name`: the one way to a queue under the
    /// reserved prefix (`store.queue()` refuses it).
    #[pyo3(signature = (name, *, visibility_timeout_s=None, max_attempts=None, backoff_base_s=None, dead_letter_retention_s=None))]
    fn _outbox_queue(
        &self,
        name: &str,
        visibility_timeout_s: Option<&Bound<'_, PyAny>>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        backoff_base_s: Option<&Bound<'_, PyAny>>,
        dead_letter_retention_s: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Queue> {
        validate_name("outbox", name).py()?;
        let opts = queue_opts(visibility_timeout_s, max_attempts, backoff_base_s, dead_letter_retention_s)?;
        Ok(Queue::new(self.inner.clone(), outbox_queue(name), opts))
    }

    /// A stream handle (SPEC §9); does no I/O.
    fn stream(&self, name: &str) -> PyResult<Stream> {
        validate_name("stream", name).py()?;
        Ok(Stream::new(self.inner.clone(), name.to_owned()))
    }

    /// A transaction block: `with store.transaction() as tx: ...`.
    fn transaction(&self) -> Transaction {
        Transaction::new(self.inner.clone())
    }

    /// Registers a schedule, upserting by name (SPEC §8): every boundary of
    /// `spec` (`@every <n><s|m|h|d>`, or five cron fields read in the IANA
    /// zone `tz`) enqueues `payload` into `queue`.
    #[pyo3(signature = (name, spec, queue, payload=None, *, priority=Priority(0), max_attempts=None, expires=None, tz="UTC", tx=None))]
    #[allow(clippy::too_many_arguments)]
    fn schedule(
        &self,
        py: Python<'_>,
        name: &str,
        spec: &str,
        queue: &str,
        payload: Option<&Bound<'_, PyAny>>,
        priority: Priority,
        max_attempts: Option<&Bound<'_, PyAny>>,
        expires: Option<&Bound<'_, PyAny>>,
        tz: &str,
        tx: Option<&Bound<'_, Transaction>>,
    ) -> PyResult<()> {
        let args = ScheduleArgs { name, spec, tz, queue, payload, priority, max_attempts, expires };
        crate::schedule::schedule(py, &self.inner, args, tx)
    }

    /// Removes a schedule; False when there was none.
    #[pyo3(signature = (name, tx=None))]
    fn unschedule(&self, py: Python<'_>, name: &str, tx: Option<&Bound<'_, Transaction>>) -> PyResult<bool> {
        crate::schedule::unschedule(py, &self.inner, name, tx)
    }

    /// Every stream with a head or a saved consumer offset, by name, with
    /// each consumer's lag (for operators: scans of the small head and
    /// offset tables, never of the events).
    fn streams(&self, py: Python<'_>) -> PyResult<Vec<StreamInfo>> {
        let inner = self.inner.clone();
        let rows = exit::detach(py, move || inner.streams()).py()?;
        rows.into_iter().map(|s| StreamInfo::new(py, s)).collect()
    }

    /// Every lease row by name, lapsed ones and the scheduler's leadership included.
    fn locks(&self, py: Python<'_>) -> PyResult<Vec<LockInfo>> {
        let inner = self.inner.clone();
        let rows = exit::detach(py, move || inner.locks()).py()?;
        rows.into_iter().map(|l| LockInfo::new(py, l)).collect()
    }

    /// Jobs acked per queue per minute over the last `minutes` minutes (1 to
    /// 1440, the current minute included), by queue then minute; minutes
    /// without acks are absent. Each store writes its counts every few
    /// seconds and at close; this store's own are written first.
    #[pyo3(signature = (minutes=60))]
    fn completions(&self, py: Python<'_>, minutes: i64) -> PyResult<Vec<CompletionCount>> {
        let inner = self.inner.clone();
        let rows = exit::detach(py, move || inner.completions(minutes)).py()?;
        rows.into_iter().map(|c| CompletionCount::new(py, c)).collect()
    }

    /// Every schedule, by name.
    fn schedules(&self, py: Python<'_>) -> PyResult<Vec<Schedule>> {
        crate::schedule::schedules(py, &self.inner)
    }

    /// Runs the scheduler until `stop` is set: standby until it holds the
    /// leadership lease, then fires due boundaries. Raises `LeadershipLost`
    /// if the lease is lost, `StoreClosed` on close.
    #[pyo3(signature = (stop=None))]
    fn run_schedules(&self, py: Python<'_>, stop: Option<&Bound<'_, StopToken>>) -> PyResult<()> {
        crate::schedule::run_schedules(py, &self.inner, stop, None)
    }

    /// The asyncio twin of `run_schedules`; cancelling the task stops the runner.
    #[pyo3(signature = (stop=None))]
    fn arun_schedules(slf: &Bound<'_, Self>, stop: Option<&Bound<'_, StopToken>>) -> PyResult<Py<PyAny>> {
        let run = slf.py().import("alkstore._aio")?.getattr("run_blocking")?;
        let step = slf.getattr("_run_schedules_blocking")?;
        Ok(run.call1((step, stop))?.unbind())
    }

    /// One blocking run for the asyncio bridge (`cancel` is set when the task is cancelled).
    fn _run_schedules_blocking(
        &self,
        py: Python<'_>,
        stop: Option<&Bound<'_, StopToken>>,
        cancel: &Bound<'_, StopToken>,
    ) -> PyResult<()> {
        crate::schedule::run_schedules(py, &self.inner, stop, Some(cancel))
    }

    /// A TTL lease on `name`, used as `with store.lock(name, ttl_s) as lock:`.
    /// `owner=None` draws a fresh random owner for this lock object.
    #[pyo3(signature = (name, ttl_s, owner=None))]
    fn lock(&self, py: Python<'_>, name: &str, ttl_s: &Bound<'_, PyAny>, owner: Option<String>) -> PyResult<Lock> {
        Lock::new(py, self.inner.clone(), name, ttl_s, owner)
    }

    /// Closes the store; idempotent.
    fn close(&self, py: Python<'_>) {
        let inner = self.inner.clone();
        exit::detach(py, move || inner.close());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// Shifts this handle's database clock by `seconds` (tests only).
    fn _advance_clock(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        let s = number(seconds, "seconds")?;
        self.inner.advance_clock(s.ceil() as i64).py()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let state = if self.inner.is_closed() { " closed" } else { "" };
        Ok(format!(
            "<alkstore.Store engine={} target={}{state}>",
            repr::text(py, self.inner.engine_kind())?,
            repr::text(py, &self.target)?
        ))
    }
}
