"""Claims batches from a rate-limited queue (SPEC §24) until it is drained, acking
each batch at once, and prints one line per non-empty claim: ``BEFORE AFTER N``
(``time.monotonic()`` around the call, system-wide on Linux), so the test can
place every claim in time across processes.

usage: rate_claimer.py LOCATION SCHEMA|- QUEUE
"""

from __future__ import annotations

import sys
import time

import alkstore


def main() -> None:
    location, schema, queue = sys.argv[1:4]
    store = alkstore.open(location) if schema == "-" else alkstore.open(location, schema=schema)
    q = store.queue(queue)
    lines = []
    while True:
        before = time.monotonic()
        got = q.claim_batch("rate-claimer", 8, timeout=1.0)
        after = time.monotonic()
        if got:
            lines.append(f"{before:.6f} {after:.6f} {len(got)}")
            q.ack_batch(got)
            continue
        s = q.stats()
        if s.pending == 0 and s.processing == 0:
            break
    print("\n".join(lines), flush=True)
    store.close()


if __name__ == "__main__":
    main()
