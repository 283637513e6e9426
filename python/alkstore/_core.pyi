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
def backoff_range(attempt: int, base_s: float) -> tuple[int, int]: ...
def next_fires(spec: str, tz: str = "UTC", after: datetime | None = None, n: int = 5) -> list[datetime]: ...

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
    @property
    def engine(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def queue(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Queue: ...
    def queues(self) -> list[str]: ...
    def forget_queue(self, name: str) -> bool: ...
    def get_job(self, job_id: int) -> Job | None: ...
    def result(self, job_id: int) -> Result | None: ...
    def job_edges(self, job_id: int) -> tuple[list[int], list[int]]: ...
    def outbox(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Outbox: ...
    def _outbox_queue(
        self,
        name: str,
        *,
        visibility_timeout_s: _Seconds | None = None,
        max_attempts: int | None = None,
        backoff_base_s: _Seconds | None = None,
        dead_letter_retention_s: _Seconds | None = None,
    ) -> Queue: ...
    def stream(self, name: str) -> Stream: ...
    def transaction(self) -> Transaction: ...
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
    ) -> None: ...
    def unschedule(self, name: str, tx: Transaction | None = None) -> bool: ...
    def streams(self) -> list[StreamInfo]: ...
    def locks(self) -> list[LockInfo]: ...
    def completions(self, minutes: int = 60) -> list[CompletionCount]: ...
    def schedules(self) -> list[Schedule]: ...
    def run_schedules(self, stop: StopToken | None = None) -> None: ...
    def arun_schedules(self, stop: StopToken | None = None) -> Awaitable[None]: ...
    def _run_schedules_blocking(self, stop: StopToken | None, cancel: StopToken) -> None: ...
    def lock(self, name: str, ttl_s: _Duration, owner: str | None = None) -> Lock: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...
    def _advance_clock(self, seconds: _Seconds) -> None: ...

@final
class Transaction:
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        _exc: BaseException | None = None,
        _tb: TracebackType | None = None,
    ) -> bool: ...
    def execute(self, sql: str, params: Sequence[_SqlParam] | None = None) -> int: ...
    def query(self, sql: str, params: Sequence[_SqlParam] | None = None) -> list[dict[str, Any]]: ...

@final
class Queue:
    @property
    def name(self) -> str: ...
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
    ) -> int: ...
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
    ) -> list[int]: ...
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
    ) -> Awaitable[int]: ...
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
    ) -> Awaitable[list[int]]: ...
    def claim(
        self, worker_id: str, *, timeout: _Duration | None = 0, stop: StopToken | None = None
    ) -> JobHandle | None: ...
    def claim_batch(
        self, worker_id: str, n: int, *, timeout: _Duration | None = 0, stop: StopToken | None = None
    ) -> list[JobHandle]: ...
    def aclaim(self, worker_id: str, *, timeout: _Duration | None = 0) -> Awaitable[JobHandle | None]: ...
    def aclaim_batch(
        self, worker_id: str, n: int, *, timeout: _Duration | None = 0
    ) -> Awaitable[list[JobHandle]]: ...
    def _claim_blocking(
        self, worker_id: str, n: int, timeout: _Duration | None, single: bool, cancel: StopToken
    ) -> JobHandle | list[JobHandle] | None: ...
    def jobs(self, worker_id: str, *, stop: StopToken | None = None, batch: int = 1) -> JobIterator: ...
    def ack_batch(self, jobs: Iterable[JobHandle], tx: Transaction | None = None) -> int: ...
    def _ack_then_claim(
        self, job: JobHandle, worker_id: str, n: int, *, result: _JSON = None
    ) -> tuple[bool, list[JobHandle]]: ...
    def get_job(self, job_id: int, tx: Transaction | None = None) -> Job | None: ...
    def cancel(self, job_id: int, tx: Transaction | None = None) -> bool: ...
    def sweep_expired(self) -> Swept: ...
    def stats(self) -> QueueStats: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def is_paused(self) -> bool: ...
    def set_limits(
        self,
        *,
        concurrency: int | None = ...,
        rate: tuple[int, float] | None = ...,
        group_concurrency: int | None = ...,
    ) -> QueueLimits: ...
    def limits(self) -> QueueLimits: ...
    def requeue_dead(
        self, ids: Iterable[int] | None = None, *, limit: int = 1000, tx: Transaction | None = None
    ) -> list[int]: ...
    def purge_dead(
        self,
        ids: Iterable[int] | None = None,
        *,
        older_than_s: _Duration | None = None,
        limit: int = 1000,
        tx: Transaction | None = None,
    ) -> int: ...
    def dead_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]: ...
    def live_jobs(self, limit: int = 100, before_id: int | None = None) -> list[Job]: ...

@final
class JobHandle:
    @property
    def id(self) -> int: ...
    @property
    def queue(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def priority(self) -> int: ...
    @property
    def worker_id(self) -> str: ...
    @property
    def enqueued_at(self) -> datetime: ...
    @property
    def run_at(self) -> datetime: ...
    @property
    def claimed_at(self) -> datetime: ...
    @property
    def deadline(self) -> datetime: ...
    @property
    def expires_at(self) -> datetime | None: ...
    def ack(self, tx: Transaction | None = None, *, result: _JSON = None) -> bool: ...
    def parent_results(self, *, tx: Transaction | None = None) -> dict[int, Any]: ...
    def retry(
        self, error: str = "", delay: _Duration | None = None, tx: Transaction | None = None
    ) -> bool: ...
    def fail(self, error: str = "", tx: Transaction | None = None) -> bool: ...
    def heartbeat(self, extend: _Duration | None = None) -> bool: ...
    def release(self) -> bool: ...
    def snooze(self, delay: _Duration) -> bool: ...
    @property
    def cancel_requested(self) -> bool: ...
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
    @property
    def id(self) -> int: ...
    @property
    def queue(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def unique_key(self) -> str | None: ...
    @property
    def group(self) -> str | None: ...
    @property
    def payload(self) -> Any: ...
    @property
    def _payload_text(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def attempts(self) -> int: ...
    @property
    def max_attempts(self) -> int: ...
    @property
    def enqueued_at(self) -> datetime: ...
    @property
    def run_at(self) -> datetime: ...
    @property
    def claimed_at(self) -> datetime | None: ...
    @property
    def deadline(self) -> datetime | None: ...
    @property
    def worker_id(self) -> str | None: ...
    @property
    def expires_at(self) -> datetime | None: ...
    @property
    def last_error(self) -> str | None: ...
    @property
    def died_at(self) -> datetime | None: ...

@final
class QueueStats:
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
    def pending(self) -> int: ...
    @property
    def scheduled(self) -> int: ...
    @property
    def processing(self) -> int: ...
    @property
    def dead(self) -> int: ...
    @property
    def oldest_ready_age_s(self) -> int | None: ...
    @property
    def paused(self) -> bool: ...
    @property
    def waiting(self) -> int: ...
    @property
    def limits(self) -> QueueLimits: ...

@final
class Result:
    @property
    def state(self) -> str: ...
    @property
    def value(self) -> Any: ...
    @property
    def error(self) -> str | None: ...
    @property
    def finished_at(self) -> datetime: ...

@final
class QueueLimits:
    def __new__(
        cls,
        *,
        concurrency: int | None = None,
        rate_count: int | None = None,
        rate_period_s: float | None = None,
        group_concurrency: int | None = None,
    ) -> QueueLimits: ...
    @property
    def concurrency(self) -> int | None: ...
    @property
    def rate_count(self) -> int | None: ...
    @property
    def rate_period_s(self) -> float | None: ...
    @property
    def group_concurrency(self) -> int | None: ...

@final
class Swept:
    def __new__(cls, expired: int = 0, purged: int = 0) -> Swept: ...
    @property
    def expired(self) -> int: ...
    @property
    def purged(self) -> int: ...

@final
class StopToken:
    def __new__(cls) -> StopToken: ...
    def stop(self) -> None: ...
    @property
    def stopped(self) -> bool: ...
    def wait(self, timeout: _Seconds | None = None) -> bool: ...

@final
class JobIterator:
    def __iter__(self) -> Self: ...
    def __next__(self) -> JobHandle: ...
    def __aiter__(self) -> Self: ...
    def __anext__(self) -> Awaitable[JobHandle]: ...
    def _next_blocking(self, cancel: StopToken) -> JobHandle: ...
    def close(self) -> None: ...
    def aclose(self) -> Awaitable[None]: ...
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
    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> str: ...
    @property
    def tz(self) -> str: ...
    @property
    def queue(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def priority(self) -> int: ...
    @property
    def max_attempts(self) -> int | None: ...
    @property
    def expires(self) -> int | None: ...
    @property
    def next_fire_at(self) -> datetime: ...
    def next_fires(self, n: int = 3) -> list[datetime]: ...
    def _local_fires(self, n: int = 3) -> list[str]: ...

@final
class Lock:
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def ttl_s(self) -> int: ...
    def renew(self) -> bool: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_exc: object) -> bool: ...

@final
class Stream:
    @property
    def name(self) -> str: ...
    def publish(
        self,
        payload: _JSON,
        *,
        key: str | None = None,
        tx: Transaction | None = None,
        conn: object | None = None,
    ) -> int: ...
    def apublish(
        self, payload: _JSON, *, key: str | None = None, conn: object | None = None
    ) -> Awaitable[int]: ...
    def read(self, after: int = 0, limit: int = 1000, tx: Transaction | None = None) -> list[Event]: ...
    def save_offset(self, consumer: str, offset: int, tx: Transaction | None = None) -> None: ...
    def get_offset(self, consumer: str, tx: Transaction | None = None) -> int: ...
    def subscribe(
        self, consumer: str, *, stop: StopToken | None = None, batch: int = 100
    ) -> Subscription: ...
    def trim_to(self, offset: int) -> int: ...

@final
class Event:
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> str | None: ...
    @property
    def payload(self) -> Any: ...
    @property
    def published_at(self) -> datetime: ...

@final
class Subscription:
    def __iter__(self) -> Self: ...
    def __next__(self) -> Event: ...
    def __aiter__(self) -> Self: ...
    def __anext__(self) -> Awaitable[Event]: ...
    def _next_blocking(self, cancel: StopToken) -> Event: ...

@final
class StreamInfo:
    @property
    def name(self) -> str: ...
    @property
    def head(self) -> int: ...
    @property
    def consumers(self) -> list[ConsumerInfo]: ...

@final
class ConsumerInfo:
    @property
    def name(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def lag(self) -> int: ...

@final
class CompletionCount:
    @property
    def queue(self) -> str: ...
    @property
    def minute(self) -> datetime: ...
    @property
    def count(self) -> int: ...

@final
class LockInfo:
    @property
    def name(self) -> str: ...
    @property
    def owner(self) -> str: ...
    @property
    def expires_at(self) -> datetime: ...
