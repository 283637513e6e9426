"""A stateful model of the job state machine, checked after every step (SPEC §4, §15, §18).

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

Flow control (§24) shares it too: a rule sets the queue's limits (concurrency
0-2, a rate of 2 claims per 1500 s, one job per group at a time, each or none),
jobs carry a group of "x", "y" or none, and a claim then must take exactly as
many jobs as the limits leave room for, never a job whose group is full.

The §18 operations share the model: unique keys are "a", "b" or None, so
they collide often; pause gates the claim (whose exhaustion step still runs,
on both engines, ADR 0016), and `requeue_dead` / `purge_dead` take ids drawn
from the model's plus a bogus one and a dead row of another queue. Stamped
times are checked against the model too: the store's clock at t = 0 is read
once, and a row's `run_at` or `died_at` must sit within SLACK of the model's.
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
# How far the real clock may run during one example: far below the 500 s between thresholds.
SLACK = 250
# Long enough for a job to die and come back (or be purged) within one example.
STEPS = 50
KEYS: list[str | None] = ["a", "b", None]
GROUPS: list[str | None] = ["x", "y", None, None]
#: The rate limit's window: an odd multiple of 500 s, like every other duration.
RATE_PERIOD = 1500


@dataclass
class MJob:
    id: int
    priority: int
    max_attempts: int
    run_at: int  # model time it became / becomes ready
    expires_at: int | None
    payload: int
    unique_key: str | None = None
    group: str | None = None
    state: str = "pending"  # pending | processing | dead | gone
    attempts: int = 0
    token: int = 0
    deadline: int = 0
    worker: str | None = None
    last_error: str | None = None
    died_at: int | None = None

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
            self.payloads = itertools.count()
            self.paused = False
            # The queue's limits: concurrency, rate count (per RATE_PERIOD), group concurrency.
            self.concurrency: int | None = None
            self.rate: int | None = None
            self.group_limit: int | None = None
            # (model time, jobs) of every claim made while a rate limit was set: the rate log.
            self.rate_log: list[tuple[int, int]] = []
            # A dead row of another queue: requeue and purge on "m" must pass it by.
            self.other = self.store.queue("other")
            self.foreign = self.other.enqueue({"other": 0})
            probe = self.other.get_job(self.foreign)
            assert probe is not None
            self.base = probe.enqueued_at.timestamp()
            h = self.other.claim("w0")
            assert h is not None and h.fail("foreign")

        def teardown(self) -> None:
            self._ctx.__exit__(None, None, None)

        # --- helpers ------------------------------------------------------------

        def live(self) -> list[MJob]:
            return [j for j in self.jobs.values() if j.state in ("pending", "processing")]

        def valid(self, mh: MHandle) -> bool:
            j = self.jobs[mh.job_id]
            return j.state == "processing" and j.token == mh.token and self.t < j.deadline

        def pick(self, i: int) -> MHandle:
            # From the newest: Hypothesis favours small i, and the newest handle is the likeliest valid.
            return self.handles[-1 - i % len(self.handles)]

        def to_dead(self, j: MJob, error: str) -> None:
            j.state, j.last_error, j.died_at = "dead", error, self.t

        def live_keys(self) -> dict[str, int]:
            return {j.unique_key: j.id for j in self.live() if j.unique_key is not None}

        def add_jobs(
            self,
            ids: list[int],
            keys: list[str | None],
            payloads: list[int],
            *,
            priority: int,
            max_attempts: int,
            run_at: int,
            expires_at: int | None,
            group: str | None = None,
        ) -> None:
            """Checks the ids an enqueue returned against the keys and records the new jobs."""
            live, fresh = self.live_keys(), max(self.jobs, default=self.foreign)
            for job_id, key, payload in zip(ids, keys, payloads, strict=True):
                if key is not None and key in live:
                    assert job_id == live[key], (ids, keys, live)
                    continue
                # Fresh ids ascend in input order; Postgres may skip some (ADR 0016).
                assert job_id > fresh, (ids, keys, fresh)
                fresh = job_id
                self.jobs[job_id] = MJob(
                    id=job_id,
                    priority=priority,
                    max_attempts=max_attempts,
                    run_at=run_at,
                    expires_at=expires_at,
                    payload=payload,
                    unique_key=key,
                    group=group,
                )
                if key is not None:
                    live[key] = job_id

        def dead_ids(self) -> list[int]:
            return sorted(j.id for j in self.jobs.values() if j.state == "dead")

        def draw_ids(self, sel: list[int] | None, extra: str) -> list[int] | None:
            """Ids for requeue/purge: an even i names a dead row, an odd one any known id.

            `extra` adds an id that names no row, or the dead row of the other queue.
            """
            if sel is None:
                return None
            known = sorted(self.jobs)
            pools = (self.dead_ids() or known, known)
            ids = [pools[i % 2][i // 2 % len(pools[i % 2])] for i in sel] if known else []
            return ids + {"": [], "bogus": [10**9], "foreign": [self.foreign]}[extra]

        def requeue(self, ids: list[int] | None, limit: int | None, tx: alkstore.Transaction | None) -> None:
            # The pick comes first (lowest ids, at most limit), then rows whose key is live stay dead.
            dead = self.dead_ids()
            pick = (dead if ids is None else sorted(set(ids) & set(dead)))[: limit or 1000]
            live, moved = set(self.live_keys()), []
            for job_id in pick:
                j = self.jobs[job_id]
                if j.unique_key in live:
                    continue
                moved.append(job_id)
                if j.unique_key is not None:
                    live.add(j.unique_key)
            opts = {} if limit is None else {"limit": limit}
            assert self.q.requeue_dead(ids, tx=tx, **opts) == moved, (ids, limit, pick)
            for job_id in moved:
                j = self.jobs[job_id]
                j.state, j.attempts, j.run_at, j.worker = "pending", 0, self.t, None
                j.last_error = j.died_at = None

        def purge(
            self, ids: list[int] | None, older: int | None, limit: int | None, tx: alkstore.Transaction | None
        ) -> None:
            def old_enough(j: MJob) -> bool:
                return older is None or (j.died_at is not None and self.t - j.died_at >= older)

            dead = [i for i in self.dead_ids() if (ids is None or i in ids) and old_enough(self.jobs[i])]
            pick = dead[: limit or 1000]
            opts = {} if limit is None else {"limit": limit}
            assert self.q.purge_dead(ids, older_than_s=older, tx=tx, **opts) == len(pick), (ids, older, limit)
            for i in pick:
                self.jobs[i].state = "gone"

        # --- rules --------------------------------------------------------------

        @rule(
            priority=st.sampled_from([0, 0, 1]),
            delay=st.sampled_from([None, 0, 500, 1500]),
            max_attempts=st.sampled_from([None, 1, 2]),
            expires=st.sampled_from([None, None, 1500, 3500]),
            many=st.integers(1, 3),
            keys=st.lists(st.sampled_from(KEYS), min_size=3, max_size=3),
            key_form=st.sampled_from(["each", "one", "omit"]),
            group=st.sampled_from(GROUPS),
        )
        def enqueue(
            self,
            priority: int,
            delay: int | None,
            max_attempts: int | None,
            expires: int | None,
            many: int,
            keys: list[str | None],
            key_form: str,
            group: str | None,
        ) -> None:
            opts = {
                "priority": priority,
                "delay": delay,
                "max_attempts": max_attempts,
                "expires": expires,
                "group": group,
            }
            payloads = [next(self.payloads) for _ in range(many)]
            # The key of each payload. "one" passes a single str, which enqueue_many applies to every payload.
            per: list[str | None] = keys[:many]
            if key_form != "each":
                per = [None if key_form == "omit" else keys[0]] * many
            if many == 1:
                ids = [self.q.enqueue({"n": payloads[0]}, unique_key=per[0], **opts)]  # type: ignore[arg-type]
            else:
                key_arg = None if key_form == "omit" else keys[0] if key_form == "one" else per
                ids = self.q.enqueue_many([{"n": p} for p in payloads], unique_key=key_arg, **opts)  # type: ignore[arg-type]
            assert len(ids) == many
            self.add_jobs(
                ids,
                per,
                payloads,
                priority=priority,
                max_attempts=max_attempts or 3,
                run_at=self.t + (delay or 0),
                expires_at=None if expires is None else self.t + expires,
                group=group,
            )

        def limited(self) -> bool:
            return self.concurrency is not None or self.rate is not None or self.group_limit is not None

        def check_limited_claim(self, n: int, ids: list[int], exhausted: set[int]) -> None:
            """A claim under limits took exactly the room they leave, and nothing beyond it."""
            live = [j for j in self.live() if j.id not in exhausted]  # the limited claim buries those first
            lapsed = {j.id for j in live if j.state == "processing" and j.claimable(self.t)}
            ready = [j for j in live if j.state == "pending" and j.claimable(self.t)]
            running = sum(1 for j in live if j.state == "processing")
            total = n
            if self.rate is not None:
                recent = sum(k for at, k in self.rate_log if at > self.t - RATE_PERIOD)
                total = min(n, max(0, self.rate - recent))
            fresh = total if self.concurrency is None else min(total, max(0, self.concurrency - running))
            room: dict[str | None, int] = {}
            if self.group_limit is not None:
                for name in {j.group for j in ready if j.group is not None}:
                    held = sum(1 for j in live if j.state == "processing" and j.group == name)
                    room[name] = max(0, self.group_limit - held)
            eligible = sum(1 for j in ready if j.group is None or j.group not in room) + sum(
                min(r, sum(1 for j in ready if j.group == g)) for g, r in room.items()
            )
            expect = 0 if self.paused else min(total, len(lapsed) + min(fresh, eligible))
            assert len(ids) == expect, (ids, expect, total, fresh, eligible, lapsed)
            started = [self.jobs[i] for i in ids if i not in lapsed]
            assert all(j in ready for j in started), (ids, ready)
            assert len(started) <= fresh, (ids, fresh)
            for g, r in room.items():
                assert sum(1 for j in started if j.group == g) <= r, f"group {g} over its limit: {ids}"
            # Within one group (or with no group limit, among all), the best ready jobs go first.
            passed = [j for j in ready if j.id not in ids]
            for c in started:
                for p in passed:
                    if self.group_limit is None or (p.group == c.group):
                        assert not p.key() < c.key(), f"claimed {c} ahead of {p}"
            if self.rate is not None:
                self.rate_log.append((self.t, len(ids)))

        @rule(worker=st.sampled_from(["w1", "w2"]), n=st.sampled_from([1, 1, 2, 3]))
        def claim(self, worker: str, n: int) -> None:
            # Paused: nothing is handed out, yet the exhaustion step below still runs, on both engines.
            before = set() if self.paused else {j.id for j in self.live() if j.claimable(self.t)}
            exhausted = {j.id for j in self.live() if j.exhausted_lapsed(self.t)}
            if n == 1:
                h = self.q.claim(worker)
                got = [] if h is None else [h]
            else:
                got = self.q.claim_batch(worker, n, timeout=0)
            ids = [h.id for h in got]
            assert len(ids) == len(set(ids))
            if self.limited():
                self.check_limited_claim(n, ids, exhausted)
            else:
                assert len(ids) == min(n, len(before)), (ids, before)
            assert set(ids) <= before, (ids, before)
            chosen = [self.jobs[i] for i in ids]
            passed = [self.jobs[i] for i in before - set(ids)]
            for c in chosen:
                for p in passed:
                    if not self.limited():
                        assert not p.key() < c.key(), f"claimed {c} ahead of {p}"
            for h, j in zip(got, chosen, strict=True):
                if j.state == "processing":  # a lapsed lease taken back records the lapse (SPEC §30)
                    j.last_error = f"lease lapsed (worker {j.worker})"
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
                    j.state, j.run_at, j.last_error = "pending", self.t + (delay or 0), err

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

        @rule(
            concurrency=st.sampled_from([None, None, 0, 1, 2]),
            rate=st.sampled_from([None, None, 2]),
            group=st.sampled_from([None, None, 1]),
        )
        def set_limits(self, concurrency: int | None, rate: int | None, group: int | None) -> None:
            got = self.q.set_limits(
                concurrency=concurrency,
                rate=None if rate is None else (rate, float(RATE_PERIOD)),
                group_concurrency=group,
            )
            self.concurrency, self.rate, self.group_limit = concurrency, rate, group
            assert got == self.q.limits() == self.model_limits()

        def model_limits(self) -> alkstore.QueueLimits:
            return alkstore.QueueLimits(
                concurrency=self.concurrency,
                rate_count=self.rate,
                rate_period_s=None if self.rate is None else float(RATE_PERIOD),
                group_concurrency=self.group_limit,
            )

        @rule(paused=st.sampled_from([True, False, False]))
        def pause(self, paused: bool) -> None:
            # Idempotent both ways: drawing the current state again is a repeat. Resume is drawn twice
            # as often as pause: a paused queue claims nothing, so nothing dies for redrive to move.
            if paused:
                self.q.pause()
            else:
                self.q.resume()
            self.paused = paused

        # Gated on a dead row so the steps go where something can move; the empty case runs in transactions.
        @precondition(lambda self: self.dead_ids())
        @rule(
            sel=st.none() | st.lists(st.integers(0, 10**6), max_size=4),
            extra=st.sampled_from(["", "", "bogus", "foreign"]),
            limit=st.sampled_from([None, 1, 2, 3]),
        )
        def requeue_dead(self, sel: list[int] | None, extra: str, limit: int | None) -> None:
            self.requeue(self.draw_ids(sel, extra), limit, None)

        @precondition(lambda self: self.dead_ids())
        @rule(
            sel=st.none() | st.lists(st.integers(0, 10**6), max_size=4),
            extra=st.sampled_from(["", "", "bogus", "foreign"]),
            older=st.sampled_from([None, None, 500, 1500, 2500]),
            limit=st.sampled_from([None, 1, 2, 3]),
        )
        def purge_dead(self, sel: list[int] | None, extra: str, older: int | None, limit: int | None) -> None:
            self.purge(self.draw_ids(sel, extra), older, limit, None)

        @rule(k=st.sampled_from([1, 1, 2]))
        def advance(self, k: int) -> None:
            self.store._advance_clock(k * STEP)
            self.t += k * STEP

        @precondition(lambda self: self.jobs)
        @rule(
            ops=st.lists(
                st.tuples(
                    st.sampled_from(["enqueue", "ack", "retry", "fail", "cancel", "requeue", "purge"]),
                    st.integers(0, 10**6),
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
                key, payload = KEYS[i % 3], next(self.payloads)
                job_id = self.q.enqueue({"n": payload}, unique_key=key, tx=tx)
                self.add_jobs(
                    [job_id], [key], [payload], priority=0, max_attempts=3, run_at=self.t, expires_at=None
                )
                return
            if op == "requeue":
                self.requeue(self.draw_ids(None if i % 2 else [i // 2], ""), 1 + i % 3, tx)
                return
            if op == "purge":
                self.purge(
                    self.draw_ids(None if i % 2 else [i // 2], ""), [None, 500][i % 4 // 2], 1 + i % 3, tx
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
                assert (
                    row.state,
                    row.attempts,
                    row.priority,
                    row.max_attempts,
                    row.unique_key,
                    row.group,
                ) == (
                    j.state,
                    j.attempts,
                    j.priority,
                    j.max_attempts,
                    j.unique_key,
                    j.group,
                ), (j, row)
                assert row.payload == {"n": j.payload}, (j, row)
                assert abs(row.run_at.timestamp() - self.base - j.run_at) < SLACK, (j, row)
                if j.state == "dead":
                    assert row.last_error == j.last_error and row.died_at is not None
                    assert abs(row.died_at.timestamp() - self.base - (j.died_at or 0)) < SLACK, (j, row)
                else:
                    # A live job reads its last failure (SPEC §30): a retry's error, a lapse.
                    assert row.last_error == j.last_error and row.died_at is None, (j, row)
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
            assert s.paused is self.paused and self.q.is_paused() is self.paused
            assert s.limits == self.model_limits()

        @invariant()
        def other_queue_untouched(self) -> None:
            row = self.other.get_job(self.foreign)
            assert row is not None and row.state == "dead" and self.q.get_job(self.foreign) is None

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
    run_state_machine_as_test(machine, settings=settings(settings.default, stateful_step_count=STEPS))
