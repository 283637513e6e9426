"""Runs the schedule runner until SIGTERM (a clean stop) or SIGINT (Ctrl-C).

usage: scheduler.py LOCATION SCHEMA|- [ADVANCE_S]

ADVANCE_S shifts this handle's clock first (store._advance_clock), as a
runner on a machine whose database clock reads later would see it.
Prints "running" just before it blocks, then how the run ended: "stopped"
(stop token, lease released), "lost" (LeadershipLost) or "interrupted"
(KeyboardInterrupt; exit code 130).
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import alkstore


def main() -> int:
    location, schema = sys.argv[1:3]
    advance = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    if advance:
        store._advance_clock(advance)
    stop = alkstore.StopToken()
    signal.signal(signal.SIGTERM, lambda *_: stop.stop())
    # Ctrl-C must reach us even when started from a background job, which
    # inherits SIGINT ignored (and Python then installs no handler of its own).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print("running", flush=True)
    try:
        store.run_schedules(stop)
    except alkstore.LeadershipLost:
        print("lost", flush=True)
        return 1
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        return 130
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
