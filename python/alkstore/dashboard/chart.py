"""The overview's completions-per-minute chart: the store's acks per minute
over the last hour (``store.completions()``, ADR 0020), as an inline SVG the
server renders, so the page needs no script and loads nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

#: Minutes on the chart, the current one last.
MINUTES = 60
#: The drawing's size in SVG units (the page scales it to its width).
WIDTH, HEIGHT = 600, 120


class MinuteRow(Protocol):
    """What the chart reads of a row: ``alkstore.CompletionCount`` has it."""

    @property
    def queue(self) -> str: ...
    @property
    def minute(self) -> datetime: ...
    @property
    def count(self) -> int: ...


@dataclass(frozen=True)
class Bar:
    """One minute's column: where it is drawn and what its tooltip says."""

    x: float
    y: float
    width: float
    height: float
    minute: datetime
    count: int


@dataclass(frozen=True)
class Chart:
    """The bars, the largest minute, the hour's total and each queue's share."""

    bars: list[Bar]
    peak: int
    total: int
    per_queue: dict[str, int]
    width: int = WIDTH
    height: int = HEIGHT


def chart(rows: Sequence[MinuteRow], now: datetime | None = None) -> Chart:
    """Sums ``rows`` per minute over the hour ending at ``now``'s minute."""
    end = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    start = end - timedelta(minutes=MINUTES - 1)
    per_minute = [0] * MINUTES
    per_queue: dict[str, int] = {}
    for r in rows:
        i = int((r.minute - start).total_seconds() // 60)
        if 0 <= i < MINUTES:
            per_minute[i] += r.count
            per_queue[r.queue] = per_queue.get(r.queue, 0) + r.count
    peak = max(per_minute)
    step = WIDTH / MINUTES
    bars = []
    for i, n in enumerate(per_minute):
        h = 0.0 if peak == 0 else HEIGHT * n / peak
        bars.append(Bar(i * step + 0.5, HEIGHT - h, step - 1, h, start + timedelta(minutes=i), n))
    return Chart(bars, peak, sum(per_minute), per_queue)
