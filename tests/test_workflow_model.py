"""A Hypothesis state machine for workflows (SPEC §25) on both engines.

Random graphs grow one enqueue at a time (parents drawn from every job so
far, live or finished, with either ``on_failure``), while jobs are acked,
failed (dead at once: one attempt), cancelled and redriven in any order. A plain
model of the rules predicts every job's state, and the store must agree
after each step:

- a child waits while a parent it counts is live; the last parent's ack (or,
  for ``"run"``, any settling) makes it pending;
- a dead or cancelled parent kills a ``"cancel"`` child, whose own waiting
  children then follow, transitively; its ``last_error`` names a parent that
  left without an ack;
- an id that is gone when the child is enqueued counts as done; a dead one
  kills a ``"cancel"`` child at birth.

Claims pick any ready job; the model only checks that the one handed out
is ready. One queue holds the parents and the children alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import alkstore
from tests.conftest import PG_URL, drop_schema, new_schema_name, require_postgres

STEPS = 40
LEFT = re.compile(r"parent job (\d+) (died|was cancelled)")


@dataclass
class WJob:
    id: int
    on_failure: str
    parents: list[int]
    counting: set[int] = field(default_factory=set)  # live parents it still waits for
    state: str = "pending"  # waiting | pending | processing | dead | gone
    error: str | None = None


def make_machine(open_store: Callable[[], Iterator[alkstore.Store]]) -> type[RuleBasedStateMachine]:
    class WorkflowMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self._ctx = contextmanager(open_store)()
            self.store = self._ctx.__enter__()
            self.q = self.store.queue("wf", max_attempts=1)
            self.jobs: dict[int, WJob] = {}
            self.held: dict[int, alkstore.JobHandle] = {}
            self.redriven: set[int] = set()  # jobs requeued from dead at least once

        def teardown(self) -> None:
            self._ctx.__exit__(None, None, None)

        # --- the model's rules ----------------------------------------------

        def settle(self, parent: int, acked: bool) -> None:
            """``parent`` left the live table: acked, or died / was cancelled."""
            for child in sorted(self.jobs.values(), key=lambda j: j.id):
                if child.state != "waiting" or parent not in child.counting:
                    continue
                child.counting.discard(parent)
                if acked or child.on_failure == "run":
                    if not child.counting:
                        child.state = "pending"
                else:
                    child.state, child.error = "dead", "parent left"
                    self.settle(child.id, acked=False)

        def ready(self) -> list[int]:
            return [j.id for j in self.jobs.values() if j.state == "pending"]

        # --- rules ----------------------------------------------------------------

        @rule(data=st.data(), on_failure=st.sampled_from(["cancel", "run"]), n=st.integers(0, 3))
        def enqueue(self, data: st.DataObject, on_failure: str, n: int) -> None:
            # The newest jobs, so graphs grow deep and diamonds (a child of a job
            # and of that job's child) are common; older ones are finished, mostly.
            known = sorted(self.jobs)[-6:]
            k = min(n, len(known))
            parents = (
                data.draw(st.lists(st.sampled_from(known), min_size=k, max_size=k, unique=True)) if k else []
            )
            # Older jobs rank higher, so a claim's pick never depends on run_at,
            # which a redrive sets to the clock's second: the same steps must make
            # the same picks in every run, or Hypothesis finds its draws flaky.
            job_id = self.q.enqueue(
                {"n": len(self.jobs)},
                after=parents,
                on_failure=on_failure,  # type: ignore[arg-type]
                priority=10_000 - len(self.jobs),
            )
            job = WJob(job_id, on_failure, sorted(parents))
            dead = [p for p in job.parents if self.jobs[p].state == "dead"]
            job.counting = {
                p for p in job.parents if self.jobs[p].state in ("waiting", "pending", "processing")
            }
            if dead and on_failure == "cancel":
                job.state, job.error = "dead", "parent left"
            elif job.counting:
                job.state = "waiting"
            self.jobs[job_id] = job

        @precondition(lambda self: bool(self.ready()))
        @rule()
        def claim(self) -> None:
            handle = self.q.claim("w")
            assert handle is not None, f"ready: {self.ready()}"
            assert handle.id in self.ready(), (handle.id, self.ready())
            self.jobs[handle.id].state = "processing"
            self.held[handle.id] = handle

        @precondition(lambda self: bool(self.held))
        @rule(data=st.data(), how=st.sampled_from(["ack", "ack", "fail"]))
        def finish(self, data: st.DataObject, how: str) -> None:
            job_id = data.draw(st.sampled_from(sorted(self.held)))
            handle = self.held.pop(job_id)
            job = self.jobs[job_id]
            if how == "ack":
                assert handle.ack(result={"id": job_id})
                job.state = "gone"
                self.settle(job_id, acked=True)
            else:
                assert handle.fail(f"boom {job_id}")
                job.state, job.error = "dead", f"boom {job_id}"
                self.settle(job_id, acked=False)

        @precondition(lambda self: any(j.state in ("waiting", "pending") for j in self.jobs.values()))
        @rule(data=st.data())
        def cancel(self, data: st.DataObject) -> None:
            live = sorted(j.id for j in self.jobs.values() if j.state in ("waiting", "pending"))
            # Mostly a job something waits for: a cancel of a leaf tells little.
            awaited = [i for i in live if any(i in j.counting for j in self.jobs.values())]
            pool = awaited if awaited and data.draw(st.integers(0, 3)) > 0 else live
            job_id = data.draw(st.sampled_from(pool))
            assert self.q.cancel(job_id)
            self.jobs[job_id].state = "gone"
            self.settle(job_id, acked=False)

        @precondition(lambda self: any(j.state == "dead" for j in self.jobs.values()))
        @rule(data=st.data())
        def requeue(self, data: st.DataObject) -> None:
            # A redriven job waits again for its parents that are live or dead
            # (their edges unsettled again); acked and cancelled ones stay done.
            # Its own children keep what they counted at its death: it is not
            # waited for a second time by them.
            job_id = data.draw(st.sampled_from(sorted(j.id for j in self.jobs.values() if j.state == "dead")))
            assert self.q.requeue_dead([job_id]) == [job_id]
            self.redriven.add(job_id)
            job = self.jobs[job_id]
            job.error = None
            job.counting = {
                p for p in job.parents if self.jobs[p].state in ("waiting", "pending", "processing", "dead")
            }
            job.state = "waiting" if job.counting else "pending"

        # --- invariants -------------------------------------------------------------

        @invariant()
        def every_job_is_where_the_model_says(self) -> None:
            for job in self.jobs.values():
                row = self.q.get_job(job.id)
                if job.state == "gone":
                    assert row is None, (job, row)
                    continue
                assert row is not None and row.state == job.state, (job, row)
                if job.state != "dead" or job.error != "parent left":
                    continue
                # Killed by a parent: one that left without an ack, named.
                m = LEFT.match(row.last_error or "")
                assert m is not None, (job, row.last_error)
                parent = self.jobs[int(m.group(1))]
                assert parent.id in job.parents, (job, parent)
                if parent.id in self.redriven:
                    continue  # it left, and is back (or gone) since
                assert parent.state in ("dead", "gone"), (job, parent)
                assert (m.group(2) == "died") == (parent.state == "dead"), (job, parent, row.last_error)

        @invariant()
        def waiting_is_counted(self) -> None:
            s = self.q.stats()
            states = [j.state for j in self.jobs.values()]
            assert (s.waiting, s.pending, s.processing, s.dead) == (
                states.count("waiting"),
                states.count("pending"),
                states.count("processing"),
                states.count("dead"),
            )

    return WorkflowMachine


def _sqlite_opener(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Iterator[alkstore.Store]]:
    def open_store() -> Iterator[alkstore.Store]:
        with alkstore.open(tmp_path_factory.mktemp("wf") / "m.db") as store:
            yield store

    return open_store


def _pg_opener() -> Callable[[], Iterator[alkstore.Store]]:
    def open_store() -> Iterator[alkstore.Store]:
        schema = new_schema_name()
        try:
            with alkstore.open(PG_URL, schema=schema) as store:
                yield store
        finally:
            drop_schema(schema)

    return open_store


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_workflow_state_machine(engine: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    if engine == "postgres":
        require_postgres()
        opener = _pg_opener()
    else:
        opener = _sqlite_opener(tmp_path_factory)
    machine = make_machine(opener)
    run_state_machine_as_test(machine, settings=settings(settings.default, stateful_step_count=STEPS))
