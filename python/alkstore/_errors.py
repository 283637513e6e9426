"""The exception hierarchy (SPEC §12).

Defined in Python because several classes have two bases, e.g.
``InvalidName(AlkstoreError, ValueError)``; the Rust binding raises these.
"""

from __future__ import annotations

__all__ = [
    "AlkstoreError",
    "ConnectionLost",
    "DatabaseError",
    "Fail",
    "InvalidName",
    "InvalidSpec",
    "LeadershipLost",
    "LockHeld",
    "SharedFileWarning",
    "StoreClosed",
    "TransactionClosed",
    "TransactionError",
]


class AlkstoreError(Exception):
    """Base of every error alkstore raises (besides plain TypeError/ValueError)."""


class InvalidName(AlkstoreError, ValueError):
    """A queue, stream, schedule, lock or worker name broke the naming rule."""


class InvalidSpec(AlkstoreError, ValueError):
    """A schedule spec outside the ``@every <n><s|m|h|d>`` grammar."""

    def __init__(self, message: str, spec: str = "") -> None:
        super().__init__(message)
        self.spec = spec


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
