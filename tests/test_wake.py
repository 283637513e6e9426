"""Wake-driven consumption across processes, at deadlines and after a lost
LISTEN connection (SPEC §5), and what an idle waiter costs.

Waiting stores use a 60 s safety-net poll, so anything that wakes within a few
seconds was woken by a commit or a known deadline. Bounds are generous: these
check behaviour (woken, not polled), not speed — speed is `benches/`.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

import alkstore

from .conftest import Target, pg_admin_connect
from .processes import HELPERS


@pytest.fixture
def waiter(store_factory: Callable[..., alkstore.Store]) -> alkstore.Store:
    return store_factory(poll_interval_s=60)


def test_job_from_another_process_is_claimed_promptly(waiter: alkstore.Store, target: Target) -> None:
    q = waiter.queue("q")
    child = subprocess.Popen(
        [sys.executable, str(HELPERS / "enqueuer.py"), *target.argv(), "q", "0.5"],
        stdout=subprocess.PIPE,
        text=True,
    )
    job = q.claim("w", timeout=30)
    got = time.time()
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert job is not None and job.payload == {"from": "another process"}
    committed = float(out.split()[1])
    assert got - committed < 5, "woken by the commit, not by the 60 s poll"


def test_reclaim_happens_when_the_lease_lapses(waiter: alkstore.Store, store: alkstore.Store) -> None:
    """No commit happens after the first claim: the waiter wakes at the lease's end."""
    first = store.queue("q", visibility_timeout_s=2)
    job_id = first.enqueue({"n": 1})
    held = first.claim("crashed-worker")
    assert held is not None
    started = time.monotonic()
    again = waiter.queue("q").claim("w", timeout=30)
    waited = time.monotonic() - started
    assert again is not None and again.id == job_id and again.attempts == 2
    assert 0.5 < waited < 10, f"reclaimed after {waited:.1f} s; the lease was 2 s"
    assert not held.ack()


def test_idle_waiter_uses_little_cpu(waiter: alkstore.Store) -> None:
    """A waiting claim sleeps on a wake signal: no busy loop burns a core."""
    q = waiter.queue("idle")
    cpu, wall = time.process_time(), time.monotonic()
    assert q.claim("w", timeout=2) is None
    share = (time.process_time() - cpu) / (time.monotonic() - wall)
    assert share < 0.3, f"an idle waiter used {share:.0%} of a core"


def listen_backends(schema: str) -> list[int]:
    with pg_admin_connect() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE query = %s AND state = 'idle'",
            (f'LISTEN "alkstore_{schema}"',),
        ).fetchall()
    return [int(str(r[0])) for r in rows]


def test_waiters_still_woken_after_listen_backend_is_killed(
    engine: str, target: Target, store_factory: Callable[..., alkstore.Store]
) -> None:
    if engine != "postgres":
        pytest.skip("LISTEN connections exist only on Postgres")
    assert target.schema is not None
    waiter = store_factory(poll_interval_s=60)
    producer = store_factory()
    q = waiter.queue("q")
    assert q.claim("w", timeout=0.2) is None  # starts the LISTEN connection
    pids: list[int] = []
    for _ in range(50):
        pids = listen_backends(target.schema)
        if pids:
            break
        time.sleep(0.1)
    assert pids, "the store's LISTEN connection was not found"
    # A waiter already waiting across the outage must still be woken after it.
    got: list[alkstore.JobHandle | None] = []
    t = threading.Thread(target=lambda: got.append(q.claim("w", timeout=30)))
    t.start()
    with pg_admin_connect() as conn:
        for pid in pids:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    remade: list[int] = []
    for _ in range(200):
        remade = [p for p in listen_backends(target.schema) if p not in pids]
        if remade:
            break
        time.sleep(0.1)
    assert remade, "the LISTEN connection was not re-made within 20 s"
    assert t.is_alive(), "the waiter returned before any job existed"
    enqueued = time.monotonic()
    producer.queue("q").enqueue({"after": "reconnect"})
    t.join(10)
    # The poll is 60 s: only the re-made LISTEN connection can wake it this soon.
    assert got and got[0] is not None, "the waiter was not woken after its LISTEN backend died"
    assert time.monotonic() - enqueued < 10
