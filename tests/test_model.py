"""A stateful model of the job state machine, checked after every step (SPEC §4, §15).

The model lives on a virtual clock moved only by `_advance_clock` in steps of
1000 s, while every duration the machine uses (lease, delays, heartbeats,
expiry) is an odd multiple of 500 s. The real database clock also ticks during
an example, but by far less than 500 s, so no comparison the engine makes can
land on the other side of a threshold from the model's: the model stays exact
without ever reading the clock. Retries on the curve use `backoff_base_s=0`,
whose range is (0, 0), so they are deterministic too.

Where the contract leaves a choice open the model accepts every allowed
outcome: among jobs tied on (priority, ready time) any may be claimed first,
and a lapsed exhausted row may be moved to dead by any claim.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

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

VT = 1500
STEP = 1000


@dataclass
class MJob:
    id: int
    priority: int
    max_attempts: int
    run_at: int  # model time it became / becomes ready
    expires_at: int | None
    state: str = "pending"  # pending | processing | dead | gone
    attempts: int = 0
    token: int = 0
    deadline: int = 0
    worker: str | None = None
    last_error: str | None = None

    def expired(self, t: int) -> bool:
        return self.expires_at is not None and t >= self.expires_at

    def lapsed(self, t: int) -> bool:
        return self.state == "processing" and self.deadline < t

    def exhausted_lapsed(self, t: int) -> bool:
        return self.lapsed(t) and self.attempts >= self.max_attempts

    def claimable(self, t: int) -> bool:
        ready = (self.state == "pending" and self.run_at <= t) or self.lapsed(t)
        return ready and not self.expired(t) and not self.exhausted_lapsed(t)

    def key(self) -> tuple[int, int]:
        return (-self.priority, self.run_at)


class Rollback(Exception):
    """Raised inside a transaction block to make it roll back."""


@dataclass
class MHandle:
    handle: alkstore.JobHandle
    job_id: int
    token: int


def make_machine(open_store: Callable[[], Iterator[alkstore.Store]]) -> type[RuleBasedStateMachine]:
    class JobMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self._ctx = contextmanager(open_store)()
            self.store = self._ctx.__enter__()
            self.q = self.store.queue("m", visibility_timeout_s=VT, max_attempts=3, backoff_base_s=0)
            self.t = 0
            self.jobs: dict[int, MJob] = {}
            self.handles: list[MHandle] = []
            self.errors = itertools.count()

        def teardown(self) -> None:
            self._ctx.__exit__(None, None, None)

        # --- helpers ------------------------------------------------------------

        def live(self) -> list[MJob]:
            return [j for j in self.jobs.values() if j.state in ("pending", "processing")]

        def valid(self, mh: MHandle) -> bool:
            j = self.jobs[mh.job_id]
            return j.state == "processing" and j.token == mh.token and self.t < j.deadline

        def pick(self, i: int) -> MHandle:
            return self.handles[i % len(self.handles)]

        def to_dead(self, j: MJob, error: str) -> None:
            j.state, j.last_error = "dead", error

        # --- rules --------------------------------------------------------------

        @rule(
            priority=st.sampled_from([0, 0, 1]),
            delay=st.sampled_from([None, 0, 500, 1500]),
            max_attempts=st.sampled_from([None, 1, 2]),
            expires=st.sampled_from([None, None, 1500, 3500]),
            many=st.integers(1, 3),
        )
        def enqueue(
            self, priority: int, delay: int | None, max_attempts: int | None, expires: int | None, many: int
        ) -> None:
            opts = {"priority": priority, "delay": delay, "max_attempts": max_attempts, "expires": expires}
            if many == 1:
                ids = [self.q.enqueue({"n": len(self.jobs)}, **opts)]  # type: ignore[arg-type]
            else:
                ids = self.q.enqueue_many([{"n": len(self.jobs) + k} for k in range(many)], **opts)  # type: ignore[arg-type]
            assert len(ids) == many and len(set(ids)) == many
            assert all(i not in self.jobs for i in ids)
            assert all(i > max(self.jobs, default=0) for i in ids)
            for i in ids:
                self.jobs[i] = MJob(
                    id=i,
                    priority=priority,
                    max_attempts=max_attempts or 3,
                    run_at=self.t + (delay or 0),
                    expires_at=None if expires is None else self.t + expires,
                )

        @rule(worker=st.sampled_from(["w1", "w2"]), n=st.sampled_from([1, 1, 2, 3]))
        def claim(self, worker: str, n: int) -> None:
            before = {j.id for j in self.live() if j.claimable(self.t)}
            exhausted = {j.id for j in self.live() if j.exhausted_lapsed(self.t)}
            if n == 1:
                h = self.q.claim(worker)
                got = [] if h is None else [h]
            else:
                got = self.q.claim_batch(worker, n, timeout=0)
            ids = [h.id for h in got]
            assert len(ids) == len(set(ids)) == min(n, len(before)), (ids, before)
            assert set(ids) <= before, (ids, before)
            chosen = [self.jobs[i] for i in ids]
            passed = [self.jobs[i] for i in before - set(ids)]
            for c in chosen:
                for p in passed:
                    assert not p.key() < c.key(), f"claimed {c} ahead of {p}"
            for h, j in zip(got, chosen, strict=True):
                j.state, j.attempts, j.token = "processing", j.attempts + 1, j.token + 1
                j.deadline, j.worker = self.t + VT, worker
                assert (h.attempts, h.max_attempts, h.priority, h.worker_id) == (
                    j.attempts,
                    j.max_attempts,
                    j.priority,
                    worker,
                )
                self.handles.append(MHandle(h, j.id, j.token))
            # Exhausted lapsed rows: moved to dead by a claim (when it reached them), never handed out.
            for i in exhausted:
                job = self.q.get_job(i)
                assert job is not None
                if job.state == "dead":
                    # Past its expiry it dies as a sweep would record it (issue 11, item 15).
                    why = "expired" if self.jobs[i].expired(self.t) else "attempts exhausted"
                    assert job.last_error == why
                    self.to_dead(self.jobs[i], why)
                else:
                    assert job.state == "processing"
                    assert len(ids) == n or self.jobs[i].expired(self.t), (
                        "a claim left an exhausted row behind"
                    )

        @precondition(lambda self: self.handles)
        @rule(i=st.integers(0, 10**6))
        def ack(self, i: int) -> None:
            mh = self.pick(i)
            expect = self.valid(mh)
            assert mh.handle.ack() is expect
            if expect:
                self.jobs[mh.job_id].state = "gone"

        @precondition(lambda self: self.handles)
        @rule(i=st.integers(0, 10**6), delay=st.sampled_from([None, 0, 500, 1500]))
        def retry(self, i: int, delay: int | None) -> None:
            mh = self.pick(i)
            expect = self.valid(mh)
            err = f"retry-{next(self.errors)}"
            assert mh.handle.retry(err, delay=delay) is expect
            if expect:
                j = self.jobs[mh.job_id]
                if j.attempts >= j.max_attempts:
                    self.to_dead(j, err)
                else:
                    j.state, j.run_at = "pending", self.t + (delay or 0)

        @precondition(lambda self: self.handles)
        @rule(i=st.integers(0, 10**6))
        def fail(self, i: int) -> None:
            mh = self.pick(i)
            expect = self.valid(mh)
            err = f"fail-{next(self.errors)}"
            assert mh.handle.fail(err) is expect
            if expect:
                self.to_dead(self.jobs[mh.job_id], err)

        @precondition(lambda self: self.handles)
        @rule(i=st.integers(0, 10**6), extend=st.sampled_from([None, 500, 2500]))
        def heartbeat(self, i: int, extend: int | None) -> None:
            mh = self.pick(i)
            expect = self.valid(mh)
            assert mh.handle.heartbeat(extend=extend) is expect
            if expect:
                self.jobs[mh.job_id].deadline = self.t + (extend or VT)

        @precondition(lambda self: self.handles)
        @rule(i=st.integers(0, 10**6))
        def release(self, i: int) -> None:
            mh = self.pick(i)
            expect = self.valid(mh)
            assert mh.handle.release() is expect
            if expect:
                j = self.jobs[mh.job_id]
                j.state, j.run_at, j.attempts = "pending", self.t, j.attempts - 1

        @precondition(lambda self: self.jobs)
        @rule(i=st.integers(0, 10**6), bogus=st.booleans())
        def cancel(self, i: int, bogus: bool) -> None:
            ids = sorted(self.jobs)
            job_id = ids[-1] + 1000 if bogus else ids[i % len(ids)]
            j = self.jobs.get(job_id)
            expect = j is not None and j.state in ("pending", "processing")
            assert self.q.cancel(job_id) is expect
            if expect and j is not None:
                j.state = "gone"

        @rule(k=st.sampled_from([1, 1, 2]))
        def advance(self, k: int) -> None:
            self.store._advance_clock(k * STEP)
            self.t += k * STEP

        @precondition(lambda self: self.jobs)
        @rule(
            ops=st.lists(
                st.tuples(
                    st.sampled_from(["enqueue", "ack", "retry", "fail", "cancel"]), st.integers(0, 10**6)
                ),
                min_size=1,
                max_size=4,
            ),
            commit=st.booleans(),
        )
        def in_transaction(self, ops: list[tuple[str, int]], commit: bool) -> None:
            """Transactional completion: the ops land together on commit, not at all on rollback."""
            saved = copy.deepcopy(self.jobs)
            try:
                with self.store.transaction() as tx:
                    for op, i in ops:
                        self._tx_op(tx, op, i)
                    for j in self.jobs.values():
                        row = self.q.get_job(j.id, tx=tx)
                        assert (row is None) == (j.state == "gone"), (j, row)
                        assert row is None or row.state == j.state, (j, row)
                    if not commit:
                        raise Rollback
            except Rollback:
                self.jobs = saved

        def _tx_op(self, tx: alkstore.Transaction, op: str, i: int) -> None:
            if op == "enqueue":
                job_id = self.q.enqueue({"tx": i}, tx=tx)
                assert job_id not in self.jobs
                self.jobs[job_id] = MJob(
                    id=job_id, priority=0, max_attempts=3, run_at=self.t, expires_at=None
                )
                return
            if op == "cancel":
                ids = sorted(self.jobs)
                j = self.jobs[ids[i % len(ids)]]
                expect = j.state in ("pending", "processing")
                assert self.q.cancel(j.id, tx=tx) is expect
                if expect:
                    j.state = "gone"
                return
            if not self.handles:
                return
            mh = self.pick(i)
            expect = self.valid(mh)
            j = self.jobs[mh.job_id]
            err = f"tx-{op}-{next(self.errors)}"
            if op == "ack":
                assert mh.handle.ack(tx=tx) is expect
                if expect:
                    j.state = "gone"
            elif op == "fail":
                assert mh.handle.fail(err, tx=tx) is expect
                if expect:
                    self.to_dead(j, err)
            else:
                assert mh.handle.retry(err, delay=0, tx=tx) is expect
                if expect and j.attempts >= j.max_attempts:
                    self.to_dead(j, err)
                elif expect:
                    j.state, j.run_at = "pending", self.t

        @rule()
        def sweep(self) -> None:
            expired = [j for j in self.live() if j.expired(self.t)]
            got = self.q.sweep_expired()
            assert (got.expired, got.purged) == (len(expired), 0)
            for j in expired:
                self.to_dead(j, "expired")

        # --- invariants -----------------------------------------------------------

        @invariant()
        def rows_match_model(self) -> None:
            for j in self.jobs.values():
                row = self.q.get_job(j.id)
                if j.state == "gone":
                    assert row is None, (j, row)
                    continue
                assert row is not None, j
                assert (row.state, row.attempts, row.priority, row.max_attempts) == (
                    j.state,
                    j.attempts,
                    j.priority,
                    j.max_attempts,
                ), (j, row)
                if j.state == "dead":
                    assert row.last_error == j.last_error and row.died_at is not None
                else:
                    assert row.last_error is None and row.died_at is None
                if j.state == "processing":
                    assert row.worker_id == j.worker
                if j.attempts == 0 and j.token == 0:
                    assert row.claimed_at is None and row.worker_id is None

        @invariant()
        def stats_match_model(self) -> None:
            s = self.q.stats()
            live = self.live()
            pending = sum(1 for j in live if j.state == "pending" and j.run_at <= self.t)
            scheduled = sum(1 for j in live if j.state == "pending" and j.run_at > self.t)
            processing = sum(1 for j in live if j.state == "processing")
            dead = sum(1 for j in self.jobs.values() if j.state == "dead")
            assert (s.pending, s.scheduled, s.processing, s.dead) == (pending, scheduled, processing, dead)

    return JobMachine


def _sqlite_opener(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Iterator[alkstore.Store]]:
    def open_store() -> Iterator[alkstore.Store]:
        path = tmp_path_factory.mktemp("model") / "m.db"
        with alkstore.open(path) as store:
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
def test_job_state_machine(engine: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    if engine == "postgres":
        require_postgres()
        opener = _pg_opener()
    else:
        opener = _sqlite_opener(tmp_path_factory)
    machine = make_machine(opener)
    run_state_machine_as_test(machine, settings=settings(settings.default, stateful_step_count=30))
