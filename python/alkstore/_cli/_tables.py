"""Plain-text tables for the command line: aligned columns, numbers on the right.

Stored text (queue and schedule names, worker ids, payloads, errors) is
anyone's who can write to the store, and a terminal acts on some of its
characters: ESC and the C1 controls start escape sequences that retitle the
window or erase and hide rows, BEL rings, CR overwrites, and the bidi controls
reorder what follows. :func:`visible` shows each of them as an escape
(``\\x1b``, ``\\x9b``, ``\\u202e``), the way Python's ``repr`` writes it; every
table cell passes through it, and the command line passes every line it prints
through it too. :func:`json_safe` does the same for ``--json`` with JSON's own
``\\u`` escapes, so a program still reads the exact text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

__all__ = ["cell", "compact_json", "json_safe", "render", "visible", "when"]

#: Longest payload or error text shown in a table cell.
MAX_CELL = 60

#: What a terminal acts on, or shows in another order: C0 controls, DEL, the
#: C1 controls (U+0080-U+009F; U+009B alone is CSI), the bidi controls
#: (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the line and
#: paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_BUT_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
#: The whitespace a table cell folds into one space.
_SPACES = re.compile("[ \t\n\r\f\v]+")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` with each character a terminal would act on written as an
    escape (``\\x1b``, ``\\u202e``); with ``newlines``, line breaks stay."""
    return (_UNSAFE_BUT_NEWLINE if newlines else _UNSAFE).sub(_escape, text)


def json_safe(text: str) -> str:
    """JSON text (from ``json.dumps``) with those characters as JSON ``\\u``
    escapes: the same document to a parser. ``json.dumps`` escapes C0 inside
    strings itself; a raw newline outside them is indentation, and stays."""
    return _UNSAFE_BUT_NEWLINE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def when(value: datetime | None) -> str:
    """A UTC timestamp to the second, or ``-``."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def compact_json(value: object) -> str:
    """``value`` as one line of JSON (non-JSON values fall back to ``str``)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _clip(text: str) -> str:
    # One line, whatever the text held, and nothing a terminal acts on.
    text = visible(_SPACES.sub(" ", text).strip(" "))
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
