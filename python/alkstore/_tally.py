"""What a Worker has done so far: counts of outcomes, safe to read from any thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["Tally", "WorkerCounts"]


@dataclass(frozen=True)
class WorkerCounts:
    """Outcomes of the jobs a Worker ran, since it was made.

    ``acked``: the handler returned and the ack landed. ``retried``: it raised
    (``alkstore.Retry`` included) or ran past its timeout, and the job went back
    to pending. ``dead``: it raised ``Fail``, or raised on the job's last
    attempt. ``snoozed``: it raised ``alkstore.Snooze``, the attempt refunded.
    ``released``: still running at shutdown, given back with the attempt
    refunded. ``cancelled``: another party cancelled the job while it ran
    (never a settle whose reply was lost: that counts as what the job's row
    shows landed, see ``alkstore._runner``). ``lost``: the outcome did not land
    because the lease had lapsed (it may run again elsewhere).
    ``in_flight``: handlers running now. ``settle_retries``: how many times an
    ack, retry or fail that failed for a moment (``DatabaseError.transient``,
    e.g. SQLite busy) was tried again while the job's lease held.
    """

    acked: int = 0
    retried: int = 0
    dead: int = 0
    released: int = 0
    lost: int = 0
    in_flight: int = 0
    settle_retries: int = 0
    snoozed: int = 0
    cancelled: int = 0

    def line(self) -> str:
        """A one-line summary, e.g. for a status line."""
        return (
            f"{self.acked} acked, {self.retried} retried, {self.dead} dead, "
            f"{self.released} released, {self.lost} lost, {self.in_flight} in flight"
            + (f", {self.snoozed} snoozed" if self.snoozed else "")
            + (f", {self.cancelled} cancelled" if self.cancelled else "")
            + (f", {self.settle_retries} settle retries" if self.settle_retries else "")
        )


class Tally:
    """The mutable counters behind :class:`WorkerCounts`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = {
            "acked": 0,
            "retried": 0,
            "dead": 0,
            "released": 0,
            "lost": 0,
            "snoozed": 0,
            "cancelled": 0,
        }
        self._in_flight = 0
        self._settle_retries = 0

    def add(self, outcome: str) -> None:
        """Counts one ``acked`` / ``retried`` / ``dead`` / ``released`` / ``lost`` /
        ``snoozed`` / ``cancelled``."""
        with self._lock:
            self._counts[outcome] += 1

    def settle_retried(self) -> None:
        """Counts one settle tried again after a transient error."""
        with self._lock:
            self._settle_retries += 1

    def started(self) -> None:
        with self._lock:
            self._in_flight += 1

    def finished(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def snapshot(self) -> WorkerCounts:
        with self._lock:
            return WorkerCounts(
                in_flight=self._in_flight, settle_retries=self._settle_retries, **self._counts
            )
