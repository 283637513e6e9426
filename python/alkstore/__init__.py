"""alkstore: durable background work without a broker, on SQLite or Postgres.

>>> import alkstore
>>> store = alkstore.open("app.db")
>>> q = store.queue("emails")
"""

from __future__ import annotations

from alkstore._core import (
    CompletionCount,
    ConsumerInfo,
    Event,
    Job,
    JobHandle,
    JobIterator,
    Lock,
    LockInfo,
    Queue,
    QueueStats,
    Schedule,
    StopToken,
    Store,
    Stream,
    StreamInfo,
    Subscription,
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
    SharedFileWarning,
    StoreClosed,
    TransactionClosed,
    TransactionError,
)
from alkstore._outbox import Outbox
from alkstore._worker import Worker, WorkerCounts

__all__ = [
    "AlkstoreError",
    "CompletionCount",
    "ConnectionLost",
    "ConsumerInfo",
    "DatabaseError",
    "Event",
    "Fail",
    "InvalidName",
    "InvalidSpec",
    "Job",
    "JobHandle",
    "JobIterator",
    "LeadershipLost",
    "Lock",
    "LockHeld",
    "LockInfo",
    "Outbox",
    "Queue",
    "QueueStats",
    "Schedule",
    "SharedFileWarning",
    "StopToken",
    "Store",
    "StoreClosed",
    "Stream",
    "StreamInfo",
    "Subscription",
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
