"""Reads a stream over and over while publishers run, checking commit order.

usage: stream_reader.py LOCATION SCHEMA|- STREAM TOTAL

Every round reads the whole stream (one statement per 1000 events, so one
snapshot for a small stream). An event seen for the first time must have an
offset above every offset seen in earlier rounds: a reader that has seen N
must never later find a newly committed event at or below N (SPEC §9).
Prints "ok <rounds>" once TOTAL events are seen, or "violation ..." (exit 1).
"""

from __future__ import annotations

import sys
from typing import Any

import alkstore


def main() -> int:
    location, schema, stream, total = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    with alkstore.open(location, **options) as store:
        s = store.stream(stream)
        seen: set[int] = set()
        max_seen = 0
        rounds = 0
        print("ready", flush=True)
        while len(seen) < int(total):
            rounds += 1
            events = []
            after = 0
            while page := s.read(after=after):
                events.extend(page)
                after = page[-1].offset
            fresh = [e.offset for e in events if e.offset not in seen]
            late = [o for o in fresh if o <= max_seen]
            if late:
                print(f"violation: saw up to {max_seen}, then found {late} in round {rounds}", flush=True)
                return 1
            seen.update(fresh)
            max_seen = max(seen, default=0)
        print(f"ok {rounds}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
