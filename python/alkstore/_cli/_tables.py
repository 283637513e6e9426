"""Plain-text tables for the command line: aligned columns, numbers on the right."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

__all__ = ["cell", "compact_json", "render", "when"]

#: Longest payload or error text shown in a table cell.
MAX_CELL = 60


def when(value: datetime | None) -> str:
    """A UTC timestamp to the second, or ``-``."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def compact_json(value: object) -> str:
    """``value`` as one line of JSON (non-JSON values fall back to ``str``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _clip(text: str) -> str:
    text = " ".join(text.split())  # one line, whatever the text held
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def cell(value: object) -> str:
    """How one value reads in a table."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}s"
    if isinstance(value, bool | str):
        return _clip(str(value))
    if isinstance(value, int | float):
        return str(value)
    return _clip(compact_json(value))


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def render(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """An aligned table with a header line; numeric columns align right."""
    texts = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in texts:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    right = [
        any(_numeric(row[i]) for row in rows) and all(_numeric(row[i]) or row[i] is None for row in rows)
        for i in range(len(headers))
    ]

    def line(parts: Sequence[str]) -> str:
        padded = [p.rjust(w) if r else p.ljust(w) for p, w, r in zip(parts, widths, right, strict=True)]
        return "  ".join(padded).rstrip()

    return "\n".join([line([h.upper() for h in headers]), *(line(row) for row in texts)])
