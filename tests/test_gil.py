"""SQL never runs with the GIL held (SPEC lineage: a honker defect; STYLE: `py.detach`).

A ticker thread counts while the main thread is inside one slow database call.
With the GIL released it ticks hundreds of times; with the GIL held it cannot
tick at all until the call returns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import alkstore

# About a second of work on either engine, inside the database.
SLOW_SQL = {
    "sqlite": (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) "
        "SELECT count(*) AS n FROM c"
    ),
    "postgres": "SELECT pg_sleep(1)::text AS n",
}


class Ticker:
    def __init__(self) -> None:
        self.ticks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.ticks += 1
            time.sleep(0.001)

    def __enter__(self) -> Ticker:
        self._thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(10)


def test_slow_query_releases_gil(store: alkstore.Store) -> None:
    with store.transaction() as tx, Ticker() as ticker:
        start_ticks = ticker.ticks
        started = time.monotonic()
        tx.query(SLOW_SQL[store.engine])
        elapsed = time.monotonic() - started
        during = ticker.ticks - start_ticks
    assert elapsed > 0.2, "the query was too fast to tell; make SLOW_SQL slower"
    assert during >= 20, f"only {during} ticks in {elapsed:.2f}s: the call held the GIL"


def test_waiting_for_the_writer_releases_gil(
    store: alkstore.Store, store_factory: Callable[..., alkstore.Store]
) -> None:
    """A call waiting behind another handle's open transaction (SQLite: the writer lock) lets Python run."""
    other = store_factory()
    q = other.queue("q")
    outcome: list[object] = []

    def blocked_enqueue() -> None:
        try:
            outcome.append(q.enqueue({"waited": True}))
        except BaseException as exc:
            outcome.append(exc)

    with store.transaction() as tx:
        store.queue("q").enqueue({"holder": True}, tx=tx)
        t = threading.Thread(target=blocked_enqueue)
        with Ticker() as ticker:
            t.start()
            time.sleep(0.5)
            ticks = ticker.ticks
        started = time.monotonic()
    t.join(30)
    assert ticks >= 50, f"only {ticks} ticks while another thread waited for the writer"
    assert len(outcome) == 1 and isinstance(outcome[0], int), outcome
    assert time.monotonic() - started < 5
    assert store.queue("q").stats().pending == 2
