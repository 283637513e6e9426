"""Claims every job of a queue, prints "claimed N", waits for a line on stdin,
then acks them one by one in id order and prints "acked N": two of these,
started on two queues whose jobs are the two parents of each child, race the
last two acks of every child (test_workflow_processes).

usage: parent_acker.py LOCATION SCHEMA|- QUEUE N
"""

from __future__ import annotations

import sys
from typing import Any

import alkstore


def main() -> int:
    location, schema, queue, n = sys.argv[1:5]
    options: dict[str, Any] = {} if schema == "-" else {"schema": schema}
    store = alkstore.open(location, **options)
    q = store.queue(queue)
    jobs = q.claim_batch("parent-acker", int(n))
    jobs.sort(key=lambda j: j.id)
    print(f"claimed {len(jobs)}", flush=True)
    sys.stdin.readline()
    acked = sum(1 for j in jobs if j.ack(result={"from": queue, "id": j.id}))
    print(f"acked {acked}", flush=True)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
