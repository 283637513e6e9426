"""Postgres across ``fork()`` (pre-fork servers, ``multiprocessing`` with fork).

A store opened in the parent cannot be used in a forked child (its runtime's
threads and its sockets stay with the parent), and says so; but the child may
open new stores of its own, whether the parent's store is still open or closed.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import selectors
import signal
import time
from collections.abc import Callable

import pytest

import alkstore
from tests.conftest import Target

# Python 3.12+ warns when a multi-threaded process forks; forking after the
# engine started its threads is exactly what these tests do.
pytestmark = pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")

CHILD_TIMEOUT_S = 60


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: every test here is Postgres-only."""
    return "postgres"


def in_forked_child(body: Callable[[], dict[str, object]]) -> dict[str, object]:
    """Runs ``body`` in a child made by ``os.fork()`` and returns what it returned.

    The child reports through a pipe and leaves with ``os._exit``, so no test
    machinery runs twice. A child that does not answer in time is killed and
    the test fails: a hang is the defect these tests look for.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        try:
            out: dict[str, object] = {"ok": True, **body()}
        except BaseException as exc:  # everything goes back to the parent
            out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        os.write(write_end, json.dumps(out).encode())
        os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    with selectors.DefaultSelector() as sel:
        sel.register(read_end, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(read_end)
                pytest.fail(f"the forked child did not finish within {CHILD_TIMEOUT_S}s")
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    result = json.loads(b"".join(chunks))
    assert isinstance(result, dict)
    assert result.pop("ok") is True, result
    return result


def use_a_new_store(target: Target) -> dict[str, object]:
    """In the child: a store opened there works end to end."""
    with target.open() as mine:
        q = mine.queue("child")
        job_id = q.enqueue({"from": "child"})
        h = q.claim("child-worker", timeout=5)
        assert h is not None and h.id == job_id
        assert h.ack()
        pending_after = q.stats().pending
    return {"job_id": job_id, "pending_after": pending_after}


def test_child_may_open_a_new_store_while_the_parents_is_open(target: Target) -> None:
    parent = target.open()
    try:
        pq = parent.queue("parent")
        parent_job = pq.enqueue({"from": "parent"})

        def child() -> dict[str, object]:
            with pytest.raises(alkstore.DatabaseError, match="open a new store"):
                pq.stats()  # the inherited store is refused, clearly
            with pytest.raises(alkstore.DatabaseError, match="open a new store"):
                pq.enqueue({"from": "child, through the parent's store"})
            out = use_a_new_store(target)
            parent.close()  # closing the inherited handle neither hangs nor harms the parent
            return out

        out = in_forked_child(child)
        assert out["pending_after"] == 0
        # The parent's store is untouched by all that.
        assert pq.stats().pending == 1
        h = pq.claim("parent-worker")
        assert h is not None and h.id == parent_job and h.ack()
        assert parent.queue("child").get_job(int(str(out["job_id"]))) is None  # acked in the child
    finally:
        parent.close()


def test_child_may_open_a_new_store_after_the_parent_closed_its_own(target: Target) -> None:
    with target.open() as parent:
        parent.queue("parent").enqueue({"from": "parent"})
        with parent.transaction() as tx:
            tx.query("SELECT 1 AS one")
    out = in_forked_child(lambda: use_a_new_store(target))
    assert out["pending_after"] == 0


def test_a_dropped_inherited_store_does_not_hang_the_child(target: Target) -> None:
    parent = target.open()
    try:
        parent.queue("q").enqueue({})
        tx = parent.transaction()
        tx.__enter__()  # a transaction open at fork time: its connection is the parent's
        try:

            def child() -> dict[str, object]:
                nonlocal parent, tx
                del tx, parent  # the child's copies go away without touching the parent's runtime
                return use_a_new_store(target)

            assert in_forked_child(child)["pending_after"] == 0
        finally:
            tx.__exit__(None, None, None)
        assert parent.queue("q").stats().pending == 1
    finally:
        parent.close()


def _multiprocessing_child(location: str, schema: str) -> None:
    with alkstore.open(location, schema=schema) as store:
        store.queue("mp").enqueue({"from": "multiprocessing"})


def test_multiprocessing_fork_children_open_their_own_stores(target: Target, store: alkstore.Store) -> None:
    assert target.schema is not None
    q = store.queue("mp")
    assert q.stats().pending == 0  # the parent has used Postgres: its runtime exists
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_multiprocessing_child, args=(target.location, target.schema)) for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(CHILD_TIMEOUT_S)
        if p.exitcode is None:
            p.kill()
            p.join()
            pytest.fail("a multiprocessing child hung")
        assert p.exitcode == 0
    assert q.stats().pending == 2
