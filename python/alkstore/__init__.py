"""alkstore: durable background work without a broker, on SQLite or Postgres.

>>> import alkstore
>>> store = alkstore.open("app.db")
>>> q = store.queue("emails")
"""

from __future__ import annotations

from alkstore._core import (
    Job,
    JobHandle,
    JobIterator,
    Lock,
    Queue,
    QueueStats,
    Schedule,
    StopToken,
    Store,
    Swept,
    Transaction,
    backoff_range,
    open,
)
from alkstore._errors import (
    AlkstoreError,
    ConnectionLost,
    DatabaseError,
    Fail,
    InvalidName,
    InvalidSpec,
    LeadershipLost,
    LockHeld,
    StoreClosed,
    TransactionClosed,
    TransactionError,
)
from alkstore._worker import Worker, WorkerCounts

__all__ = [
    "AlkstoreError",
    "ConnectionLost",
    "DatabaseError",
    "Fail",
    "InvalidName",
    "InvalidSpec",
    "Job",
    "JobHandle",
    "JobIterator",
    "LeadershipLost",
    "Lock",
    "LockHeld",
    "Queue",
    "QueueStats",
    "Schedule",
    "StopToken",
    "Store",
    "StoreClosed",
    "Swept",
    "Transaction",
    "TransactionClosed",
    "TransactionError",
    "Worker",
    "WorkerCounts",
    "backoff_range",
    "open",
]

__version__ = "0.1.0"
