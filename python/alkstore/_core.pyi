"""Type stub of the compiled module ``alkstore._core``."""

import os
from collections.abc import Awaitable, Iterable, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias, final, overload

from alkstore._outbox import Outbox

__all__ = [
    "CompletionCount",
    "ConsumerInfo",
    "Event",
    "Job",
    "JobHandle",
    "JobIterator",
    "Lock",
    "LockInfo",
    "Queue",
    "QueueLimits",
    "QueueStats",
    "Result",
    "Schedule",
    "StopToken",
    "Store",
    "Stream",
    "StreamInfo",
    "Subscription",
    "Swept",
    "Transaction",
    "backoff_range",
    "next_fires",
    "open",
]

_JSON: TypeAlias = dict[str, Any] | list[Any] | str | int | float | bool | None
_Seconds: TypeAlias = int | float
_Duration: TypeAlias = int | float | timedelta
_SqlParam: TypeAlias = bool | int | float | str | bytes | None

# `open()`: one overload per engine, so mypy refuses a misspelt option and an
# option of neither engine, and one of each engine together. Which engine a
# `str` names cannot be typed: either overload takes a `str`, only SQLite's an
# `os.PathLike`. The docstring is the runtime's too (`open` in
# crates/alkstore-py/src/store.rs, for help() and the API reference);
# tests/test_open_typing.py checks the two copies, and the overloads against
# the options the engines accept.
@overload
def open(
    target: str | os.PathLike[str],
    *,
    poll_interval_s: float = 1.0,
    max_payload_bytes: int = 1048576,
    watch_interval_ms: int = 1,
    busy_timeout_ms: int = 5000,
) -> Store:
    """Opens a store, creating or migrating its tables.

    A path (`str` or `os.PathLike`), `sqlite:///relative.db` or
    `sqlite:////absolute/path.db` opens a SQLite file; a `postgresql://` or
    `postgres://` URL opens Postgres. Opening creates or migrates the engine's
    tables (on Postgres in `schema`, under an advisory lock, so processes may
    open at once); a store written by a newer alkstore is refused. A store is
    shared by every thread of a process; each process opens its own.

    Every option is a keyword. Some apply to both engines, others to one
    (the type stub has one overload per engine, so a type checker refuses a
    misspelt option, or options of both engines together). A Postgres URL may
    also carry options in its query string, under the same names
    (`postgresql://app@pooler/db?statements=unnamed&schema=jobs`); an option
    given both there and as a keyword must have the same value in both.

    Args:
        target: The SQLite file, or the Postgres URL. `":memory:"` is refused:
            no other process could see it.

    Keyword Args:
        poll_interval_s (float): Both engines. How often a waiter looks again
            when no wake came, in seconds (> 0, at most 100 years): the safety
            net under the commit wakes, and the only wake of a store that does
            not listen. Defaults to 1.0.
        max_payload_bytes (int): Both engines. The largest payload, result or
            event accepted, in bytes of UTF-8 JSON text (>= 1). Defaults to
            1048576 (1 MiB).
        watch_interval_ms (int): SQLite only. How often the wake watcher reads
            the file's `PRAGMA data_version`, in milliseconds (1..=60000): for
            50 ms after each write on Linux, all the time where inotify is
            missing. Defaults to 1.
        busy_timeout_ms (int): SQLite only. How long a write waits for the
            file's write lock, held by another connection or process, before it
            fails, in milliseconds (0..=3600000). Defaults to 5000.
        schema (str): Postgres only. The engine-owned schema that holds every
            alkstore table: 1-63 ASCII letters, digits or `_`, not starting with
            a digit. Defaults to "alkstore".
        max_connections (int): Postgres only. The most pooled connections the
            store holds at once (1..=1000); the LISTEN session is not counted.
            Defaults to 4.
        pool_size (int): Postgres only. The older name of `max_connections`.
        listen (bool): Postgres only. Wake waiters at commit through
            LISTEN/NOTIFY, on one more session; `False` polls every
            `poll_interval_s` instead. Defaults to True.
        listen_url (str): Postgres only. A direct `postgresql://` server URL for
            the LISTEN session, when `target` is a transaction pooler. Without
            it the LISTEN session connects to `target`, except with
            `statements="unnamed"`: then the store polls, and logs once on the
            `alkstore` logger that it does.
        statements (Literal["named", "unnamed"]): Postgres only. `"named"`
            prepares each statement once per connection; `"unnamed"` keeps
            nothing in the server session, for a transaction pooler (PgBouncer
            `pool_mode=transaction` before 1.21, most managed poolers).
            Defaults to "named".

    Returns:
        The open store; `with alkstore.open(...) as store:` closes it at the
            end of the block.

    Raises:
        TypeError: A target that is no `str` or `os.PathLike`, an unknown
            option, or an option's value of the wrong type.
        ValueError: A target alkstore does not open (another URL scheme,
            `":memory:"`, a libpq `key=value` string, a SQLite `file:` URI), an
            option of the other engine (the message names the engine), a value
            out of range, or an option given in the URL and as a keyword with
            different values.
        DatabaseError: The file or the server cannot be opened, or the store
            was written by a newer alkstore.

    Warns:
        SharedFileWarning: On SQLite, where the platform cannot keep another
            SQLite library in this process (Python's `sqlite3`, an ORM) from
            overwriting the store's writes on the same file (outside Linux).
    """

@overload
def open(
    target: str,
    *,
    poll_interval_s: float = 1.0,
    max_payload_bytes: int = 1048576,
    schema: str = "alkstore",
    max_connections: int = 4,
    pool_size: int = ...,
    listen: bool = True,
    listen_url: str = ...,
    statements: Literal["named", "unnamed"] = "named",
) -> Store: ...
def backoff_range(attempt: int, base_s: float) -> tuple[int, int]:
    """The inclusive range of retry delays for attempt `attempt` with base `base_s`."""

def next_fires(spec: str, tz: str = "UTC", after: datetime | None = None, n: int = 5) -> list[datetime]:
    """`alkstore.next_fires(spec, tz="UTC", after=None, n=5)`: the first `n`
    fires of `spec` in zone `tz` strictly after `after` (an aware datetime;
    default now), as aware UTC datetimes. A pure function: no store.
    """

# The core's rules, for the package's own Python modules (not public API).
_MAX_NAME_CHARS: int
_MAX_BATCH: int
_MAX_READ: int
_MAX_PAYLOAD_DEPTH: int
_MAX_INT_DIGITS: int

def _validate_name(kind: str, name: str) -> None: ...
def _batch_size(what: str, n: int) -> int: ...
def _parse_target(target: str) -> tuple[str, str]: ...
def _outbox_of(queue: str) -> str | None: ...
def _duration(what: str, obj: _Duration) -> int: ...
def _check_json(value: object, root: str) -> None: ...
def _timeout(what: str, obj: _Duration) -> float: ...
def _check_queue_options(
    visibility_timeout_s: float | None = None,
    max_attempts: int | None = None,
    backoff_base_s: float | None = None,
    dead_letter_retention_s: float | None = None,
) -> None: ...

@final
class Store:
    """An open store: one SQLite file, or one schema of a Postgres database.

    Made by `alkstore.open(target, **options)`. Every handle it gives out
    (queues, streams, outboxes, locks, transactions) works through it and stops
    working once it is closed. One store is shared by every thread of a
    process; each process opens its own (a store is not inherited across
    `fork()`). It is a context manager: `with alkstore.open("app.db") as store:`
    closes it at the end of the block.
    """
    @property
    def engine(self) -> str:
        """`"sqlite"` or `"postgres"`."""
    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
    def queue(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Queue:
        """A handle on queue `name`; does no I/O.

        A queue is a name, not a created object: it appears in `queues()` with its
        first job. The options are stamped on each job this handle enqueues, and a
        job keeps its stamps for life; two handles with different options on one
        name simply stamp different jobs.

        Args:
            name: The queue name: a non-empty `str` of at most 200 characters,
                without NUL, not starting with `__alkstore`.
            visibility_timeout_s: The lease of one claim, in seconds (>= 1; default
                300): a job whose worker neither settles nor heartbeats it within
                that time is claimed again.
            max_attempts: Claims allowed per job, fresh or reclaim (>= 1; default
                3); past them the job goes to the dead letters.
            backoff_base_s: The base of the retry curve, in seconds (>= 0;
                default 5); see `alkstore.backoff_range`.
            dead_letter_retention_s: How long dead rows are kept before
                `sweep_expired()` purges them; None keeps them forever.

        Raises:
            InvalidName: `name` is not a valid name.
            ValueError: An option is out of range.
        """
    def queues(self) -> list[str]:
        """Every queue name with a live or dead row, sorted (ADR 0007): a scan
        for operators and the CLI, not for the hot path.
        """
    def forget_queue(self, name: str) -> bool:
        """Drops a queue that holds nothing a caller may read (no live, waiting
        or dead job, no result still kept) from `queues()`, `/metrics` and the
        dashboard, with its pause, limits and completion counts, in one
        transaction. True when the store knew it; a ValueError saying what it
        still holds, with nothing changed, otherwise. `name` as `queues()`
        lists it (an outbox's backing queue too).
        """
    def get_job(self, job_id: int) -> Job | None:
        """Job `job_id`, live or dead, whatever its queue; None when it is gone
        (acked, cancelled, purged) or never was. A primary-key read of each
        table, never a walk of the queues.
        """
    def result(self, job_id: int) -> Result | None:
        """The outcome of job `job_id`: its kept result once acked,
        its error once dead; None while it is live, or when nothing is kept.
        """
    def job_edges(self, job_id: int) -> tuple[list[int], list[int]]:
        """Job `job_id`'s place in its workflow: `(parents,
        children)`, ids ascending. For the dashboard; an empty pair for a job
        without either (or no such job).
        """
    def outbox(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Outbox:
        """An outbox: `alkstore.Outbox` over the queue
        `__alkstore_outbox:<name>`; does no I/O.
        """
    def _outbox_queue(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Queue: ...
    def stream(self, name: str) -> Stream:
        """A stream handle; does no I/O."""
    def transaction(self) -> Transaction:
        """A transaction for your own statements and alkstore's writes together.

        Use it as `with store.transaction() as tx:`, then pass `tx=tx` to
        `enqueue`, `ack`, `publish` and the other calls that take it: they land
        only if the block commits, and a rollback leaves no row and wakes nobody.
        The block commits on a clean exit and rolls back when it raises.
        """
    def schedule(
        self,
        name: str,
        spec: str,
        queue: str,
        payload: _JSON = None,
        *,
        priority: int = ...,
        max_attempts: int | None = None,
        expires: _Duration | None = None,
        tz: str = "UTC",
        tx: Transaction | None = None,
    ) -> None:
        """Registers a schedule, upserting by name: every boundary of `spec` enqueues
        `payload` into `queue`.

        Schedules fire while some process runs `run_schedules` (or
        `arun_schedules`); of several such processes, the one holding the
        leadership lease fires each boundary.

        Args:
            name: The schedule's name; registering it again replaces it, keeping
                its next fire when the spec is unchanged.
            spec: `@every <n><s|m|h|d>` (an interval), or five cron fields
                (`"0 9 * * mon-fri"`) read in the zone `tz`.
            queue: The queue each fire enqueues into.
            payload: The JSON payload of each fired job.
            priority: The fired jobs' priority (default 0).
            max_attempts: The fired jobs' attempt budget (None: the queue's).
            expires: Relative expiry of each fired job (seconds or a `timedelta`).
            tz: The IANA zone a cron spec is read in (`@every` ignores it).
            tx: Registers the schedule inside this transaction.

        Raises:
            InvalidSpec: `spec` or `tz` cannot be read.
        """
    def unschedule(self, name: str, tx: Transaction | None = None) -> bool:
        """Removes a schedule; False when there was none."""
    def streams(self) -> list[StreamInfo]:
        """Every stream with a head or a saved consumer offset, by name, with
        each consumer's lag (for operators: scans of the small head and
        offset tables, never of the events).
        """
    def locks(self) -> list[LockInfo]:
        """Every lease row by name, lapsed ones and the scheduler's leadership included."""
    def completions(self, minutes: int = 60) -> list[CompletionCount]:
        """Jobs acked per queue per minute over the last `minutes` minutes (1 to
        1440, the current minute included), by queue then minute; minutes
        without acks are absent. Each store writes its counts every few
        seconds and at close; this store's own are written first.
        """
    def schedules(self) -> list[Schedule]:
        """Every schedule, by name."""
    def run_schedules(self, stop: StopToken | None = None) -> None:
        """Runs the scheduler until `stop` is set: standby until it holds the
        leadership lease, then fires due boundaries. Raises `LeadershipLost`
        if the lease is lost, `StoreClosed` on close.
        """
    def arun_schedules(self, stop: StopToken | None = None) -> Awaitable[None]:
        """The asyncio twin of `run_schedules`; cancelling the task stops the runner."""
    def _run_schedules_blocking(self, stop: StopToken | None, cancel: StopToken) -> None: ...
    def lock(self, name: str, ttl_s: _Duration, owner: str | None = None) -> Lock:
        """A TTL lease on `name`, used as `with store.lock(name, ttl_s) as lock:`.

        Entering the block acquires the lease or raises `LockHeld`; leaving it
        releases the lease. A lease that is not renewed lapses after `ttl_s`, so a
        crashed holder never holds it for ever.

        Args:
            name: The lock's name.
            ttl_s: The lease length, seconds or a `timedelta`, asked for at each
                acquire and renew.
            owner: Who holds it; None draws a fresh random owner for this lock
                object. Lock objects with the same owner share one lease.
        """
    def close(self) -> None:
        """Closes the store; idempotent."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...
    def _advance_clock(self, seconds: _Seconds) -> None: ...

@final
class Transaction:
    """A transaction of the store's own connection, from `store.transaction()`.

    Use it as `with store.transaction() as tx:`; the block commits on a clean
    exit and rolls back when it raises. Run your own SQL with `execute` and
    `query` (placeholders `?` on SQLite, `$1` on Postgres), and pass `tx=tx` to
    alkstore's calls so that their writes commit or roll back with yours. While
    a thread holds one, a call of that store without `tx=` on the same thread,
    or a nested `store.transaction()`, raises `TransactionError` (it would wait
    on itself).
    """
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc: BaseException | None = None,
        _tb: TracebackType | None = None,
    ) -> bool: ...
    def execute(self, sql: str, params: Sequence[_SqlParam] | None = None) -> int:
        """Runs one statement of yours in the transaction; returns the number of rows
        it changed.

        Args:
            sql: One SQL statement, with `?` placeholders on SQLite and `$1`, `$2`,
                ... on Postgres.
            params: The placeholders' values: `bool`, `int`, `float`, `str`,
                `bytes` or None.

        Raises:
            TransactionClosed: The block has ended.
            DatabaseError: The database refused the statement (with `.code`, the
                SQLite code or the Postgres SQLSTATE). The transaction is doomed:
                the block rolls back, whatever the caller does with the error.
        """
    def query(self, sql: str, params: Sequence[_SqlParam] | None = None) -> list[dict[str, Any]]:
        """Runs one query of yours in the transaction; returns its rows, each a dict
        from column name to value.

        Args:
            sql: One SQL query, with `?` placeholders on SQLite and `$1`, `$2`, ...
                on Postgres.
            params: The placeholders' values: `bool`, `int`, `float`, `str`,
                `bytes` or None.
        """

@final
class Queue:
    """A queue handle, from `store.queue(name, ...)`: a name and the options it
    stamps on each job it enqueues, not a created object.

    It enqueues jobs, claims them (one, a batch, or as they come with `jobs()`),
    and reads and manages the queue: its counts, its dead letters, its pause and
    its limits. The handle does no I/O until one of these is called.
    """
    @property
    def name(self) -> str:
        """The queue name."""
    def enqueue(
        self,
        payload: _JSON,
        *,
        delay: _Duration | None = None,
        run_at: datetime | _Seconds | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        expires: _Duration | None = None,
        unique_key: str | None = None,
        group: str | None = None,
        after: Iterable[int] | None = None,
        on_failure: Literal["cancel", "run"] = "cancel",
        keep_result: _Duration | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> int:
        """Adds one job to the queue; returns its id.

        The id is a positive int, unique in the store and never reused. With `tx=`
        or `conn=` the job exists only once that transaction commits; otherwise it
        is committed before `enqueue` returns, and waiting claimers wake.

        Args:
            payload: Any JSON value (dict, list, str, int, float, bool or None). It
                comes back exactly as `json.loads(json.dumps(payload))` would
                (tuples become lists), on both engines.
            delay: Wait this long before the job can be claimed: seconds or a
                `timedelta`. Wins over `run_at` when both are given.
            run_at: Not claimable before this instant: an aware `datetime`, or Unix
                seconds.
            priority: A signed 32-bit int (default 0); higher is claimed first.
            max_attempts: This job's attempt budget, instead of the queue's.
            expires: Seconds or a `timedelta` from now; once past it,
                `sweep_expired()` moves the job to the dead letters with
                `last_error='expired'`, whatever its state.
            unique_key: At most one live (pending or processing) job per key in
                the queue: while a job with this key is live, enqueueing it again
                writes nothing and returns the live job's id.
            group: The job's group, for the queue's `group_concurrency` limit
                (`set_limits`).
            after: Ids of jobs (of any queue of the store) this job waits for: it
                stays `waiting` until every one of them is settled.
            on_failure: What a dead or cancelled parent (`after`) does to this job:
                `"cancel"` kills it too, `"run"` counts the parent as settled.
            keep_result: Keep the result its ack gives for this long after the ack
                (seconds or a `timedelta`), for `store.result(id)`.
            tx: Enqueue inside this alkstore transaction.
            conn: Enqueue on your own driver's connection, inside whatever
                transaction it has open: a `sqlite3` connection, psycopg 3, a
                SQLAlchemy `Connection` or `Session`, or Django's `connection`.

        Returns:
            The job's id (with `unique_key`, the live job's id when one exists).

        Raises:
            TypeError: `payload` is not JSON (a set, bytes, an object, a non-`str`
                key), or an option has the wrong type.
            PayloadError: `payload` is past a limit a worker could not read back:
                over `max_payload_bytes` (1 MiB by default), nested more than 500
                deep, an integer of more than 4,300 digits, NaN, Infinity or a
                number past the float range. Nothing is written.
            ValueError: An option out of range, or an `after` id the store never
                issued. Nothing is written.
            StoreClosed: The store is closed.

        Example:
            ```python
            q = store.queue("emails")
            job_id = q.enqueue({"to": "ada@example.com"}, delay=60, priority=10)
            ```
        """
    def enqueue_many(
        self,
        payloads: Iterable[_JSON],
        *,
        delay: _Duration | None = None,
        run_at: datetime | _Seconds | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        expires: _Duration | None = None,
        unique_key: str | Iterable[str | None] | None = None,
        group: str | Iterable[str | None] | None = None,
        after: Iterable[int] | None = None,
        on_failure: Literal["cancel", "run"] = "cancel",
        keep_result: _Duration | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> list[int]:
        """Adds many jobs in one transaction; returns their ids, in order.

        Every payload is validated before anything is written, so a bad one writes
        none of them. The options are those of `enqueue` and apply to every job;
        `unique_key` and `group` also take one value (or None) per payload, and a
        key repeated in one call keeps the first job and returns its id for each
        repeat.

        Args:
            payloads: An iterable of JSON values; not a `str`, a bytes-like object
                or a mapping (whose characters, bytes or keys would each become a
                job: a `TypeError`).
            unique_key: One key for every job, or one key (or None) per payload.
            group: One group for every job, or one group (or None) per payload.
            after: The parents every job of the batch waits for.
        """
    def aenqueue(
        self,
        payload: _JSON,
        *,
        delay: _Duration | None = None,
        run_at: datetime | _Seconds | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        expires: _Duration | None = None,
        unique_key: str | None = None,
        group: str | None = None,
        after: Iterable[int] | None = None,
        on_failure: Literal["cancel", "run"] = "cancel",
        keep_result: _Duration | None = None,
        conn: object | None = None,
    ) -> Awaitable[int]:
        """`enqueue` for async code: on an async driver's `conn`, or on a thread."""
    def aenqueue_many(
        self,
        payloads: Iterable[_JSON],
        *,
        delay: _Duration | None = None,
        run_at: datetime | _Seconds | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        expires: _Duration | None = None,
        unique_key: str | Iterable[str | None] | None = None,
        group: str | Iterable[str | None] | None = None,
        after: Iterable[int] | None = None,
        on_failure: Literal["cancel", "run"] = "cancel",
        keep_result: _Duration | None = None,
        conn: object | None = None,
    ) -> Awaitable[list[int]]:
        """`enqueue_many` for async code: on an async driver's `conn`, or on a thread."""
    def claim(
        self, worker_id: str, *, timeout: _Duration | None = 0, stop: StopToken | None = None
    ) -> JobHandle | None:
        """Claims one job: leases it to `worker_id` and returns its handle, or None.

        The claim sets the job `processing`, counts an attempt and sets its
        `deadline` to now plus its visibility timeout, on the database's clock.
        Jobs come out by priority (highest first), then ready time, then id.

        Args:
            worker_id: The name stamped on the claim (a valid name).
            timeout: `0` looks once; seconds (or a `timedelta`) wait up to that long
                for a job, woken by commits; None waits until a job arrives, `stop`
                is set or the store closes.
            stop: A `StopToken` that ends the wait early (returning None).

        Returns:
            The claimed job's handle, or None when none was claimable in time.
        """
    def claim_batch(
        self, worker_id: str, n: int, *, timeout: _Duration | None = 0, stop: StopToken | None = None
    ) -> list[JobHandle]:
        """Claims up to `n` jobs at once; returns as soon as any is claimable.

        Args:
            worker_id: The name stamped on the claims.
            n: The most jobs to claim, 1 to 1000.
            timeout: As for `claim`: `0` looks once, seconds wait, None waits for
                ever.
            stop: A `StopToken` that ends the wait early (returning `[]`).
        """
    def aclaim(self, worker_id: str, *, timeout: _Duration | None = 0) -> Awaitable[JobHandle | None]:
        """The asyncio twin of `claim`."""
    def aclaim_batch(
        self, worker_id: str, n: int, *, timeout: _Duration | None = 0
    ) -> Awaitable[list[JobHandle]]:
        """The asyncio twin of `claim_batch`."""
    def _claim_blocking(
        self, worker_id: str, n: int, timeout: _Duration | None, single: bool, cancel: StopToken
    ) -> JobHandle | list[JobHandle] | None: ...
    def jobs(self, worker_id: str, *, stop: StopToken | None = None, batch: int = 1) -> JobIterator:
        """Claimed jobs as they come, for `for` and `async for`; ends when `stop` is
        set or the store closes.

        Jobs claimed but not yet handed out go back to pending, attempt refunded,
        when the iterator is closed.

        Args:
            worker_id: The name stamped on the claims.
            stop: The `StopToken` that ends the iteration.
            batch: How many jobs one claim may take (1 to 1000).
        """
    def ack_batch(self, jobs: Iterable[JobHandle], tx: Transaction | None = None) -> int:
        """Acks many handles in one commit; returns how many landed.

        Handles that are no longer valid (lapsed, settled) and handles of another
        queue are skipped. A handle claimed through another store is a
        `ValueError`, and nothing is acked.
        """
    def _ack_then_claim(
        self, job: JobHandle, worker_id: str, n: int, *, result: _JSON = None
    ) -> tuple[bool, list[JobHandle]]: ...
    def get_job(self, job_id: int, tx: Transaction | None = None) -> Job | None:
        """A live or dead job of this queue, or None."""
    def cancel(self, job_id: int, tx: Transaction | None = None) -> bool:
        """Deletes a pending, waiting or processing job of this queue; False when
        there is no such live job.

        A `Worker` running the job learns it within one heartbeat (an `async def`
        handler is cancelled, a sync one sees `cancel_requested`); code that
        claimed the job itself finds that its next op on the handle returns False.
        Children waiting for the job follow their `on_failure`.

        Args:
            job_id: The job's id.
            tx: Cancel inside this alkstore transaction.
        """
    def sweep_expired(self) -> Swept:
        """Moves expired rows to dead and purges dead rows past retention."""
    def stats(self) -> QueueStats:
        """Counts of this queue's jobs by state."""
    def pause(self) -> None:
        """Claims of this queue hand out nothing, in every process, until
        `resume()`; everything else goes on. Idempotent.
        """
    def resume(self) -> None:
        """Claims hand out jobs again, and waiting claimers wake. Idempotent."""
    def is_paused(self) -> bool:
        """Whether the queue is paused."""
    def set_limits(
        self,
        *,
        concurrency: int | None = ...,
        rate: tuple[int, float] | None = ...,
        group_concurrency: int | None = ...,
    ) -> QueueLimits:
        """Limits the queue over every worker of every process:
        `concurrency` (processing jobs at once), `rate=(count, period_s)`
        (claims in any window of that length), `group_concurrency` (processing
        jobs per group key). The kinds given change, None clears one, the
        others stay. Returns the limits now in force.
        """
    def limits(self) -> QueueLimits:
        """The queue's limits (every kind None when it has none)."""
    def requeue_dead(
        self, ids: Iterable[int] | None = None, *, limit: int = 1000, tx: Transaction | None = None
    ) -> list[int]:
        """Dead jobs back to pending, ready now, attempts 0, in one transaction:
        those of `ids` that are dead here, or else the oldest `limit`. A job
        whose unique key is live again stays dead. Returns the ids moved.
        """
    def purge_dead(
        self,
        ids: Iterable[int] | None = None,
        *,
        older_than_s: _Duration | None = None,
        limit: int = 1000,
        tx: Transaction | None = None,
    ) -> int:
        """Deletes dead jobs: those of `ids`, or those dead for at least
        `older_than_s`, or (neither) the oldest `limit`. Returns how many.
        """
    def dead_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]:
        """Dead jobs, newest first; `before_id` pages."""
    def live_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]:
        """Pending and processing jobs, newest first; `before_id` pages (ADR 0007)."""

@final
class JobHandle:
    """A claimed job, from `claim`, `claim_batch`, `jobs()` or a Worker.

    Settle it with exactly one of `ack`, `retry`, `fail`, `release` or `snooze`,
    and keep its lease with `heartbeat` while the work runs. Every one of them
    is fenced by the claim: once the lease lapsed or another party took the row,
    it changes nothing and returns False. As a context manager, `with job:` acks
    on a clean exit and retries with `repr(exc)` when the block raises.
    """
    @property
    def id(self) -> int:
        """The job's id."""
    @property
    def queue(self) -> str:
        """The job's queue."""
    @property
    def payload(self) -> Any:
        """The payload, decoded once."""
    @property
    def attempts(self) -> int:
        """Claims of this job so far, this one included."""
    @property
    def max_attempts(self) -> int:
        """The job's attempt budget, as stamped at enqueue."""
    @property
    def priority(self) -> int:
        """The job's priority; higher is claimed first."""
    @property
    def worker_id(self) -> str:
        """The name this claim was made under."""
    @property
    def enqueued_at(self) -> datetime:
        """When the job was enqueued (aware UTC datetime, the database's clock)."""
    @property
    def run_at(self) -> datetime:
        """When the job became claimable (aware UTC datetime)."""
    @property
    def claimed_at(self) -> datetime:
        """When this claim was made (aware UTC datetime, the database's clock)."""
    @property
    def deadline(self) -> datetime:
        """When the lease lapses unless settled or renewed by `heartbeat` (aware UTC datetime)."""
    @property
    def expires_at(self) -> datetime | None:
        """When `sweep_expired()` will move the job to the dead letters, or None."""
    def ack(self, tx: Transaction | None = None, *, result: _JSON = None) -> bool:
        """Done: deletes the job's row; False when the handle is no longer valid.

        Args:
            tx: Ack inside this alkstore transaction: the ack lands only if it
                commits (and with it, the job's children are released).
            result: Any JSON value, kept for `store.result(id)` when the job was
                enqueued with `keep_result`, and for its children's
                `parent_results()` while they wait; otherwise dropped.
        """
    def parent_results(self, *, tx: Transaction | None = None) -> dict[int, Any]:
        """The results of the jobs this one was enqueued `after`:
        parent id → the value its ack kept (None for a parent acked without a
        result, or dead).
        """
    def retry(self, error: str = "", delay: _Duration | None = None, tx: Transaction | None = None) -> bool:
        """Back to pending, to run again later; or dead when its attempts are spent.

        Returns True in both cases, False when the handle is no longer valid.

        Args:
            error: Stored as the job's `last_error` (up to 8 KiB of UTF-8; a longer
                text is cut, never refused).
            delay: Seconds or a `timedelta` until it is claimable again; None
                follows the retry curve (`alkstore.backoff_range`).
            tx: Retry inside this alkstore transaction.
        """
    def fail(self, error: str = "", tx: Transaction | None = None) -> bool:
        """Straight to the dead letters with `error` as its `last_error`, whatever
        attempts are left; False when the handle is no longer valid.

        Args:
            error: Stored as the dead job's `last_error` (up to 8 KiB of UTF-8).
            tx: Fail inside this alkstore transaction.
        """
    def heartbeat(self, extend: _Duration | None = None) -> bool:
        """Resets the lease to now plus `extend` (seconds or a `timedelta`; default:
        the queue's visibility timeout stamped on the job); False when the lease had
        already lapsed.

        A `Worker` heartbeats its running jobs itself.
        """
    def release(self) -> bool:
        """Back to pending, claimable now, with the attempt refunded: for a worker that
        stops before it ran the job. False when the handle is no longer valid.
        """
    def snooze(self, delay: _Duration) -> bool:
        """Back to pending, ready after `delay` (seconds or a timedelta), with
        the attempt refunded: the job is put off, not retried (a task's
        `Snooze`). Fenced like every handle op.
        """
    @property
    def cancel_requested(self) -> bool:
        """Whether the job was cancelled while it ran (`q.cancel(id)` of a
        processing job): the Worker running it sets this within one
        heartbeat, and a sync handler that looks at it can stop early.
        """
    def _request_cancel(self) -> None: ...
    def _gone(self) -> bool: ...
    def _state(self) -> str | None: ...
    @property
    def _lease_s(self) -> int: ...
    @property
    def _settled(self) -> str | None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None = None,
        _tb: TracebackType | None = None,
    ) -> bool: ...

@final
class Job:
    """A job as `get_job`, `dead_jobs` and `live_jobs` read it: a snapshot of its
    row, live or dead.
    """
    @property
    def id(self) -> int:
        """The job's id."""
    @property
    def queue(self) -> str:
        """The job's queue."""
    @property
    def state(self) -> str:
        """`'waiting'` (for its parents), `'pending'`, `'processing'` or `'dead'`."""
    @property
    def unique_key(self) -> str | None:
        """The key it was enqueued with (`unique_key=`), or None."""
    @property
    def group(self) -> str | None:
        """The group it was enqueued with (`group=`), or None."""
    @property
    def payload(self) -> Any:
        """The payload, decoded."""
    @property
    def _payload_text(self) -> str: ...
    @property
    def priority(self) -> int:
        """The job's priority; higher is claimed first."""
    @property
    def attempts(self) -> int:
        """Claims of this job so far."""
    @property
    def max_attempts(self) -> int:
        """The job's attempt budget."""
    @property
    def enqueued_at(self) -> datetime:
        """When the job was enqueued (aware UTC datetime)."""
    @property
    def run_at(self) -> datetime:
        """When the job is or was claimable from (aware UTC datetime)."""
    @property
    def claimed_at(self) -> datetime | None:
        """When its current or last claim was made, or None if it was never claimed."""
    @property
    def deadline(self) -> datetime | None:
        """When a processing job's lease lapses, or None."""
    @property
    def worker_id(self) -> str | None:
        """Who holds or last held a claim on it, or None."""
    @property
    def expires_at(self) -> datetime | None:
        """When `sweep_expired()` moves it to the dead letters, or None."""
    @property
    def last_error(self) -> str | None:
        """Its last failure: the error of its last retry (live too), why it died
        (dead), `lease lapsed (worker W)` once a claim took back its lapsed
        lease; None for a job that never failed."""
    @property
    def died_at(self) -> datetime | None:
        """When a dead job died, or None for a live one."""

@final
class QueueStats:
    """Counts of one queue's jobs, its pause and its limits."""
    def __new__(
        cls,
        *,
        pending: int,
        scheduled: int,
        processing: int,
        dead: int,
        oldest_ready_age_s: int | None = None,
        paused: bool = False,
        limits: QueueLimits | None = None,
        waiting: int = 0,
    ) -> QueueStats: ...
    @property
    def pending(self) -> int:
        """Pending and ready now."""
    @property
    def scheduled(self) -> int:
        """Pending with a future `run_at`."""
    @property
    def processing(self) -> int:
        """Leased, lapsed leases included."""
    @property
    def dead(self) -> int:
        """In dead storage."""
    @property
    def oldest_ready_age_s(self) -> int | None:
        """Seconds since the oldest ready pending job became ready."""
    @property
    def paused(self) -> bool:
        """Paused: claims hand out nothing until resumed."""
    @property
    def waiting(self) -> int:
        """Waiting for their parents."""
    @property
    def limits(self) -> QueueLimits:
        """The queue's limits."""

@final
class Result:
    """A finished job's outcome, from `store.result(job_id)`.

    `state` is `"done"` (acked; `value` is what its ack gave as `result`) or
    `"dead"` (`error` is its last error). A result is kept for `keep_result`
    after the ack, or while a child of the job needs it.
    """
    @property
    def state(self) -> str:
        """ "done" or "dead"."""
    @property
    def value(self) -> Any:
        """The ack's result (None when none was given, or for a dead job)."""
    @property
    def error(self) -> str | None:
        """A dead job's last error."""
    @property
    def finished_at(self) -> datetime:
        """When it was acked or died (aware UTC datetime)."""

@final
class QueueLimits:
    """A queue's limits; None for a kind that is not limited."""
    def __new__(
        cls,
        *,
        concurrency: int | None = None,
        rate_count: int | None = None,
        rate_period_s: float | None = None,
        group_concurrency: int | None = None,
    ) -> QueueLimits: ...
    @property
    def concurrency(self) -> int | None:
        """At most this many of the queue's jobs processing at once."""
    @property
    def rate_count(self) -> int | None:
        """With `rate_period_s`: at most this many claims in any window of that length."""
    @property
    def rate_period_s(self) -> float | None:
        """The rate's window, seconds."""
    @property
    def group_concurrency(self) -> int | None:
        """At most this many processing jobs per group key."""

@final
class Swept:
    """What `sweep_expired` did."""
    def __new__(cls, expired: int = 0, purged: int = 0) -> Swept: ...
    @property
    def expired(self) -> int:
        """Rows moved to dead as 'expired'."""
    @property
    def purged(self) -> int:
        """Dead rows purged by retention."""

@final
class StopToken:
    """A "please stop" flag that every blocking call of alkstore accepts."""
    def __new__(cls) -> StopToken: ...
    def stop(self) -> None:
        """Sets the token; every waiter wakes. Idempotent."""
    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called."""
    def wait(self, timeout: _Seconds | None = None) -> bool:
        """Waits until stopped or `timeout` seconds pass; returns `stopped`.
        Wakes every 100 ms to let Ctrl-C through.
        """

@final
class JobIterator:
    """Yields claimed jobs until `stop` is set, `close()` or the store closes."""
    def __iter__(self) -> Self: ...
    def __next__(self) -> JobHandle: ...
    def __aiter__(self) -> Self: ...
    def __anext__(self) -> Awaitable[JobHandle]: ...
    def _next_blocking(self, cancel: StopToken) -> JobHandle: ...
    def close(self) -> None:
        """Ends the iteration; jobs claimed but not handed out go back to
        pending with their attempt refunded. Idempotent.
        """
    def aclose(self) -> Awaitable[None]:
        """The asyncio twin of `close` (for `contextlib.aclosing`)."""
    def _close_blocking(self, _cancel: StopToken) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None = None,
        _tb: TracebackType | None = None,
    ) -> bool: ...

@final
class Schedule:
    """A stored schedule as `store.schedules()` returns it."""
    @property
    def name(self) -> str:
        """The schedule's name."""
    @property
    def spec(self) -> str:
        """The spec text as last registered (`@every 1m` after re-registering `@every 60s` as it)."""
    @property
    def tz(self) -> str:
        """The IANA zone a cron spec is read in, as registered (`@every` ignores it)."""
    @property
    def queue(self) -> str:
        """The queue each fire enqueues into."""
    @property
    def payload(self) -> Any:
        """The payload of each fired job, decoded."""
    @property
    def priority(self) -> int:
        """The fired jobs' priority."""
    @property
    def max_attempts(self) -> int | None:
        """The fired jobs' attempt budget, or None for the queue's."""
    @property
    def expires(self) -> int | None:
        """Relative expiry of fired jobs, whole seconds."""
    @property
    def next_fire_at(self) -> datetime:
        """The next boundary to fire (aware UTC datetime)."""
    def next_fires(self, n: int = 3) -> list[datetime]:
        """The next `n` fires from `next_fire_at` on, as aware UTC datetimes."""
    def _local_fires(self, n: int = 3) -> list[str]: ...

@final
class Lock:
    """A lease on `name` for `owner`: `with store.lock(...) as lock:` acquires
    (or raises `LockHeld`) and releases on exit. Lock objects with the same
    owner share one lease.
    """
    @property
    def name(self) -> str:
        """The lock's name."""
    @property
    def owner(self) -> str:
        """Who holds the lease when this lock object is entered."""
    @property
    def ttl_s(self) -> int:
        """The lease length each acquire and renew asks for, whole seconds."""
    def renew(self) -> bool:
        """Extends the lease to `now + ttl_s`; False once it lapsed or was taken."""
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

@final
class Stream:
    """A durable, ordered, replayable stream; a name, not a created object."""
    @property
    def name(self) -> str:
        """The stream name."""
    def publish(
        self,
        payload: _JSON,
        *,
        key: str | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> int:
        """Appends one event; returns its offset. In `tx` (alkstore's
        transaction) or on `conn` (your own connection) it lands only if that
        transaction commits.
        """
    def apublish(
        self, payload: _JSON, *, key: str | None = None, conn: object | None = None
    ) -> Awaitable[int]:
        """`publish` for async code: on an async driver's `conn`, or on a thread."""
    def read(self, after: int = 0, limit: int = 1000, tx: Transaction | None = None) -> list[Event]:
        """Events with an offset above `after`, ascending, at most `limit` (1..=`MAX_READ`, 1000)."""
    def save_offset(self, consumer: str, offset: int, tx: Transaction | None = None) -> None:
        """Saves `consumer`'s position; an older offset never replaces a newer one."""
    def get_offset(self, consumer: str, tx: Transaction | None = None) -> int:
        """`consumer`'s saved offset, 0 when it never saved one."""
    def subscribe(self, consumer: str, *, stop: StopToken | None = None, batch: int = 100) -> Subscription:
        """Events after `consumer`'s saved offset as they come, for `for` and
        `async for`; ends when `stop` is set. At-least-once: an event's offset
        is saved when the next one is asked for, or when `stop` ends the loop.
        """
    def trim_to(self, offset: int) -> int:
        """Deletes the events with an offset below `offset`; returns how many."""

@final
class Event:
    """A stream event; frozen, compared by value."""
    @property
    def offset(self) -> int:
        """Position in the stream; increases in commit order."""
    @property
    def key(self) -> str | None:
        """The key it was published with (`key=`), or None."""
    @property
    def payload(self) -> Any:
        """The payload, decoded once."""
    @property
    def published_at(self) -> datetime:
        """Publish time (database clock), an aware UTC datetime."""

@final
class Subscription:
    """Yields a stream's events after a consumer's saved offset until `stop`."""
    def __iter__(self) -> Self: ...
    def __next__(self) -> Event: ...
    def __aiter__(self) -> Self: ...
    def __anext__(self) -> Awaitable[Event]: ...
    def _next_blocking(self, cancel: StopToken) -> Event: ...

@final
class StreamInfo:
    """One stream: its head (the last offset handed out) and its consumers."""
    @property
    def name(self) -> str:
        """The stream's name."""
    @property
    def head(self) -> int:
        """The last offset handed out; 0 when nothing was ever published."""
    @property
    def consumers(self) -> list[ConsumerInfo]:
        """Each consumer with a saved offset, by name."""

@final
class ConsumerInfo:
    """One consumer's saved offset in a stream, and how far behind the head it is."""
    @property
    def name(self) -> str:
        """The consumer's name."""
    @property
    def offset(self) -> int:
        """Its saved offset."""
    @property
    def lag(self) -> int:
        """Events published after its offset."""

@final
class CompletionCount:
    """Jobs of one queue acked during one minute (`store.completions()`)."""
    @property
    def queue(self) -> str:
        """The queue."""
    @property
    def minute(self) -> datetime:
        """The start of the minute (UTC, the database's clock)."""
    @property
    def count(self) -> int:
        """How many of its jobs were acked in that minute."""

@final
class LockInfo:
    """One lease row: its holder and until when it covers them (lapsed ones included)."""
    @property
    def name(self) -> str:
        """The lock's name."""
    @property
    def owner(self) -> str:
        """Who holds, or last held, it."""
    @property
    def expires_at(self) -> datetime:
        """The lease covers its owner until this instant (UTC)."""
