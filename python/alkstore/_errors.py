"""The exception hierarchy (SPEC §12).

Defined in Python because several classes have two bases, e.g.
``InvalidName(AlkstoreError, ValueError)``; the Rust binding raises these.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "AlkstoreError",
    "ConnectionLost",
    "DatabaseError",
    "Fail",
    "InvalidName",
    "InvalidSpec",
    "LeadershipLost",
    "LockHeld",
    "PayloadError",
    "Retry",
    "SharedFileWarning",
    "Snooze",
    "StoreClosed",
    "TransactionClosed",
    "TransactionError",
]


class AlkstoreError(Exception):
    """Base of every error alkstore raises (besides plain TypeError/ValueError)."""


class InvalidName(AlkstoreError, ValueError):
    """A queue, stream, schedule, lock or worker name broke the naming rule."""


class InvalidSpec(AlkstoreError, ValueError):
    """A schedule spec outside the ``@every <n><s|m|h|d>`` and five-field cron
    grammars; the message names the cron field at fault."""

    def __init__(self, message: str, spec: str = "") -> None:
        super().__init__(message)
        self.spec = spec


class PayloadError(AlkstoreError, ValueError):
    """A payload (or a result, or an event's payload) outside the limits every
    reader decodes: over ``max_payload_bytes``, nested more than 500 deep, an
    integer of more than 4,300 digits, or a number past the float range.
    Raised at enqueue, writing nothing; and when a payload written around
    those checks (a raw ``INSERT``, an older version) is read and cannot be
    decoded: a Worker then dead-letters that job with this message."""


class LeadershipLost(AlkstoreError):
    """The schedule runner lost its leadership lease."""


class LockHeld(AlkstoreError):
    """Another owner holds an unexpired lease on the lock."""


class StoreClosed(AlkstoreError):
    """The store was closed."""


class TransactionError(AlkstoreError):
    """Misuse of the transaction seam, or a transaction that could only roll back."""


class TransactionClosed(TransactionError):
    """A transaction used after its block ended."""


class Fail(AlkstoreError):
    """Raised by a handler: dead-letter the job now with this message."""


def _seconds(what: str, value: float | timedelta) -> int:
    # The core's one duration rule (whole seconds, rounded up, bounded); imported
    # here, not at the top: the binding imports this module while it loads.
    from alkstore._core import _duration

    return _duration(what, value)


class Retry(AlkstoreError):
    """Raised by a handler or task: retry the job, counting the attempt.

    ``after`` (seconds or a ``timedelta``, rounded up to whole seconds) is the
    delay instead of the retry curve's; ``None`` keeps the curve. ``error`` is
    the job's ``last_error`` (default: this exception's repr). On the job's last
    attempt it goes dead, as any retry does.
    """

    def __init__(self, after: float | timedelta | None = None, error: str | None = None) -> None:
        self.after = None if after is None else _seconds("after", after)
        if error is not None and not isinstance(error, str):
            raise TypeError(f"error must be a str or None, got {type(error).__name__}")
        self.error = error
        super().__init__(error if error is not None else f"retry after {self.after} s")

    def __repr__(self) -> str:
        return f"Retry(after={self.after!r}, error={self.error!r})"


class Snooze(AlkstoreError):
    """Raised by a handler or task: put the job back for ``seconds`` (or a
    ``timedelta``), **without** counting the attempt — "not now", not "failed"."""

    def __init__(self, seconds: float | timedelta) -> None:
        self.seconds = _seconds("seconds", seconds)
        super().__init__(f"snoozed for {self.seconds} s")

    def __repr__(self) -> str:
        return f"Snooze({self.seconds!r})"


class DatabaseError(AlkstoreError):
    """The database refused a statement. ``code`` is the SQLSTATE or SQLite code.

    ``transient`` says whether the same call may succeed when tried again: a
    lost connection, or contention (``SQLITE_BUSY``, a serialization failure,
    a deadlock, a server restarting). A Worker retries settling a job on these.
    """

    def __init__(self, message: str, code: str | None = None, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.transient = transient


class ConnectionLost(DatabaseError):
    """The connection to the database server was lost mid-call."""


class SharedFileWarning(UserWarning):
    """Issued by ``open()`` of a SQLite store where alkstore cannot keep its file locks
    apart from another SQLite library in the same process (Python's ``sqlite3``,
    SQLAlchemy, Django): there, the application must not use the store's file
    through its own driver while the store is open (docs/transactions.md)."""
