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
    QueueLimits,
    QueueStats,
    Result,
    Schedule,
    StopToken,
    Store,
    Stream,
    StreamInfo,
    Subscription,
    Swept,
    Transaction,
    backoff_range,
    next_fires,
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
    PayloadError,
    Retry,
    SharedFileWarning,
    Snooze,
    StoreClosed,
    TransactionClosed,
    TransactionError,
)
from alkstore._outbox import Outbox
from alkstore._runner import current_job
from alkstore._tasks import Task, TaskCall, Tasks
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
    "PayloadError",
    "Queue",
    "QueueLimits",
    "QueueStats",
    "Result",
    "Retry",
    "Schedule",
    "SharedFileWarning",
    "Snooze",
    "StopToken",
    "Store",
    "StoreClosed",
    "Stream",
    "StreamInfo",
    "Subscription",
    "Swept",
    "Task",
    "TaskCall",
    "Tasks",
    "Transaction",
    "TransactionClosed",
    "TransactionError",
    "Worker",
    "WorkerCounts",
    "backoff_range",
    "current_job",
    "next_fires",
    "open",
]

__version__ = "0.1.0"
