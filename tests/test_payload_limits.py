"""Issue 44, item 1: one set of payload limits on every path that writes a
payload, and a payload that cannot be decoded fails its own job only.

The limits are core's (``rules::payload``, ADR 0003's revision): arrays and
objects nested at most 500 deep, integers of at most 4,300 digits (what
Python's ``int()`` reads by default), no number that would read as an
infinite float, and ``max_payload_bytes``. A refusal is a ``PayloadError``
(a ``ValueError``) naming the limit, and writes nothing. Text written around
those checks (a raw ``INSERT``, tests/planted.py) reads as a ``PayloadError``;
a Worker dead-letters that job with the reason and keeps serving the others.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

import alkstore
from alkstore import PayloadError, Tasks
from alkstore.dashboard import create_app
from alkstore.testing import DrainResult, drain
from tests.conftest import PG_URL, Target
from tests.dashboards import browser_like
from tests.planted import BIG_INT, DEEP, plant
from tests.test_cli import HELPERS, cli, helpers_path, store_args
from tests.workers import running, wait_for

#: The limits as the docs state them (docs/queues.md); core is their one source.
DEPTH = 500
DIGITS = 4300

TOO_DEEP = "nests arrays and objects deeper than the limit of 500"


def nested(n: int) -> Any:
    """``n`` lists inside one another, the innermost empty."""
    value: list[Any] = []
    for _ in range(n - 1):
        value = [value]
    return value


@contextmanager
def int_digits(limit: int) -> Iterator[None]:
    """This process converts ints of up to ``limit`` digits to text (0: any)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(limit)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


def test_the_limits_come_from_core() -> None:
    from alkstore import _core

    assert (_core._MAX_PAYLOAD_DEPTH, _core._MAX_INT_DIGITS) == (DEPTH, DIGITS)
    assert sys.int_info.default_max_str_digits == DIGITS


def writers(store: alkstore.Store) -> dict[str, Callable[[Any], object]]:
    """Every way a payload (or a result) gets written, each taking the value:
    jobs go to ``q`` and ``t`` (a task's), events to ``s``, a schedule ``sch``."""
    q = store.queue("q")
    tasks = Tasks(store)
    echo = tasks.task(queue="t", name="echo")(lambda value: value)

    def in_tx(value: Any) -> object:
        with store.transaction() as tx:
            job_id = q.enqueue(value, tx=tx)
        return job_id

    def as_result(value: Any) -> object:
        r = store.queue("r")
        r.enqueue("to ack")
        job = r.claim("w")
        assert job is not None
        try:
            return job.ack(result=value)
        finally:
            assert job.release(), "the refused ack left the job claimed"

    return {
        "enqueue": q.enqueue,
        "enqueue_many": lambda v: q.enqueue_many([1, v]),
        "tx": in_tx,
        "outbox": lambda v: store.outbox("o").enqueue(v),
        "stream": lambda v: store.stream("s").publish(v),
        "schedule": lambda v: store.schedule("sch", "@every 1h", "q", payload=v),
        "task": lambda v: echo.enqueue(v),
        "result": as_result,
    }


def nothing_written(store: alkstore.Store) -> None:
    assert (store.queue("q").stats().pending, store.queue("t").stats().pending) == (0, 0)
    assert store.outbox("o").stats().pending == 0
    assert store.stream("s").read() == []
    assert store.schedules() == []


def test_nesting_past_the_limit_is_refused_on_every_path(store: alkstore.Store) -> None:
    q = store.queue("deep")
    job_id = q.enqueue(nested(DEPTH))
    job = q.get_job(job_id)
    assert job is not None and job.payload == nested(DEPTH), "at the limit: kept, and read back"
    cycle: list[Any] = []
    cycle.append(cycle)
    for write in writers(store).values():
        with pytest.raises(PayloadError, match=TOO_DEEP):
            write(nested(DEPTH + 1))
        with pytest.raises(PayloadError, match="or contains a cycle"):
            write(cycle)
        with pytest.raises(PayloadError, match=TOO_DEEP):
            write({"kwargs": {"a": nested(DEPTH)}})
    nothing_written(store)


def test_an_integer_longer_than_python_reads_is_refused_even_where_this_process_writes_it(
    store: alkstore.Store,
) -> None:
    q = store.queue("ints")
    with int_digits(0):
        longest = 10**DIGITS - 1
        assert q.get_job(q.enqueue(longest)) is not None
        for write in writers(store).values():
            too_long = f"integer of {DIGITS + 1} digits, over the limit of {DIGITS}"
            with pytest.raises(PayloadError, match=too_long):
                write({"n": -(10**DIGITS)})
    with int_digits(1000), pytest.raises(PayloadError, match="integer too long to write"):
        q.enqueue(10**1000)  # what this process will not write, refused as a payload's error
    with pytest.raises(PayloadError, match="NaN and Infinity"):
        q.enqueue(float("inf"))
    nothing_written(store)
    with int_digits(0):
        assert q.live_jobs()[0].payload == longest


@pytest.fixture
def app(target: Target) -> Iterator[sqlite3.Connection | psycopg.Connection[tuple[object, ...]]]:
    """The application's own connection to the store's database."""
    if target.engine == "sqlite":
        conn = sqlite3.connect(target.location, timeout=5)
        yield conn
        conn.close()
    else:
        with psycopg.connect(PG_URL) as pg:
            yield pg


def test_the_applications_connection_meets_the_same_limits(
    store: alkstore.Store, target: Target, app: sqlite3.Connection | psycopg.Connection[tuple[object, ...]]
) -> None:
    q = store.queue("q")
    with pytest.raises(PayloadError, match=TOO_DEEP):
        q.enqueue(nested(DEPTH + 1), conn=app)
    with pytest.raises(PayloadError, match=TOO_DEEP):
        q.enqueue_many([1, {"args": nested(DEPTH)}], conn=app)
    with int_digits(0):
        with pytest.raises(PayloadError, match=f"integer of {DIGITS + 1} digits"):
            q.enqueue({"args": [10**DIGITS]}, conn=app)
        with pytest.raises(PayloadError, match=f"integer of {DIGITS + 1} digits"):
            store.stream("s").publish([10**DIGITS], conn=app)
        with pytest.raises(PayloadError, match=f"integer of {DIGITS + 1} digits"):
            store.outbox("o").enqueue(10**DIGITS, conn=app)
    assert q.enqueue(nested(DEPTH), conn=app) > 0
    app.commit()
    assert [j.payload for j in q.live_jobs()] == [nested(DEPTH)]
    assert store.stream("s").read() == []


def test_a_stored_payload_that_cannot_be_decoded_reads_as_a_payload_error(
    store: alkstore.Store, target: Target
) -> None:
    q = store.queue("app")
    q.enqueue({"task": "tasks_app.shout", "args": ["ok"]})
    deep, big = plant(target, "app", DEEP), plant(target, "app", BIG_INT)
    big_why = f"has an integer of 5001 digits, over the limit of {DIGITS}"
    for job_id, why in [(deep, TOO_DEEP), (big, big_why)]:
        job = q.get_job(job_id)
        assert job is not None
        with pytest.raises(PayloadError, match=f"the stored payload cannot be decoded: it {why}"):
            _ = job.payload
        assert job._payload_text in (DEEP, BIG_INT)
    claimed = q.claim_batch("w", 3)
    assert {j.id for j in claimed[:2]} == {deep, big}, "planted to be claimed first"
    for j in claimed[:2]:
        with pytest.raises(PayloadError, match="cannot be decoded"):
            _ = j.payload


def shouting(store: alkstore.Store) -> tuple[Tasks, list[str]]:
    """A registry with the task ``tasks_app.shout`` (tests/helpers/tasks_app.py)
    on queue ``app``, recording what it shouted."""
    tasks = Tasks(store)
    shouted: list[str] = []

    @tasks.task(queue="app", name="tasks_app.shout")
    def shout(text: str) -> str:
        shouted.append(text)
        return text.upper()

    return tasks, shouted


def plant_among_good_jobs(store: alkstore.Store, target: Target) -> tuple[list[int], list[int]]:
    """Two good jobs of ``app``, the two hostile ones planted before them in
    claim order, then two more good ones: (good ids, hostile ids)."""
    tasks, _ = shouting(store)
    shout = tasks["tasks_app.shout"]
    good = [shout.enqueue("a"), shout.enqueue("b")]
    hostile = [plant(target, "app", DEEP), plant(target, "app", BIG_INT)]
    good += [shout.enqueue("c"), shout.enqueue("d")]
    return good, hostile


def assert_dead_with_the_reason(store: alkstore.Store, hostile: list[int]) -> None:
    dead = {j.id: j for j in store.queue("app").dead_jobs()}
    assert sorted(dead) == sorted(hostile)
    assert TOO_DEEP in (dead[hostile[0]].last_error or "")
    assert "integer of 5001 digits" in (dead[hostile[1]].last_error or "")
    for j in dead.values():
        assert (j.last_error or "").startswith("the stored payload cannot be decoded: it "), j.last_error
        assert j.attempts == 1, "dead at once: no attempt could read it"


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_task_worker_dead_letters_an_undecodable_job_and_keeps_serving(
    store: alkstore.Store, target: Target, concurrency: int, caplog: pytest.LogCaptureFixture
) -> None:
    good, hostile = plant_among_good_jobs(store, target)
    tasks, shouted = shouting(store)
    worker = tasks.worker(concurrency=concurrency, grace_s=5)
    q = store.queue("app")
    with caplog.at_level(logging.ERROR, logger="alkstore.worker"), running(worker):
        wait_for(lambda: all(q.get_job(i) is None for i in good), what="the good jobs acked")
        wait_for(lambda: q.stats().dead == len(hostile), what="the hostile jobs dead")
    assert sorted(shouted) == ["a", "b", "c", "d"]
    assert_dead_with_the_reason(store, hostile)
    logged = [r.getMessage() for r in caplog.records if "dead-lettered" in r.getMessage()]
    assert len(logged) == 2 and all("cannot be decoded" in m for m in logged), logged
    assert worker.counts.dead == 2 and worker.counts.acked == 4


def test_a_plain_handler_s_undecodable_job_is_dead_at_once(store: alkstore.Store, target: Target) -> None:
    q = store.queue("app")
    good = [q.enqueue({"n": 1})]
    hostile = [plant(target, "app", DEEP), plant(target, "app", BIG_INT)]
    good.append(q.enqueue({"n": 2}))
    seen: list[Any] = []
    worker = alkstore.Worker(store, concurrency=2, grace_s=5)

    @worker.handler("app")
    def handle(payload: Any, _job: alkstore.JobHandle) -> None:
        seen.append(payload)

    with running(worker):
        wait_for(lambda: all(q.get_job(i) is None for i in good), what="the good jobs acked")
        wait_for(lambda: q.stats().dead == 2, what="the hostile jobs dead")
    assert sorted(p["n"] for p in seen) == [1, 2]
    assert_dead_with_the_reason(store, hostile)


def test_testing_drain_dead_letters_an_undecodable_job(store: alkstore.Store, target: Target) -> None:
    good, hostile = plant_among_good_jobs(store, target)
    tasks, shouted = shouting(store)
    assert drain(tasks) == DrainResult(acked=4, dead=2)
    assert sorted(shouted) == ["a", "b", "c", "d"]
    assert_dead_with_the_reason(store, hostile)
    assert all(store.queue("app").get_job(i) is None for i in good)


@pytest.mark.parametrize("concurrency", ["1", "2"])
def test_the_worker_command_keeps_serving_past_an_undecodable_job(
    store: alkstore.Store, target: Target, concurrency: str, tmp_path: Path
) -> None:
    good, hostile = plant_among_good_jobs(store, target)
    q = store.queue("app")
    argv = [
        sys.executable, "-m", "alkstore", "worker", *store_args(target),
        "--tasks", "tasks_app:tasks", "--concurrency", concurrency,
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=helpers_path())
    log = tmp_path / "worker.log"
    with (
        log.open("w") as err,
        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=HELPERS) as proc,
    ):
        try:
            wait_for(lambda: all(q.get_job(i) is None for i in good), what="the good jobs acked")
            wait_for(lambda: q.stats().dead == len(hostile), what="the hostile jobs dead")
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    logged = log.read_text()
    assert proc.returncode == 0, logged
    assert_dead_with_the_reason(store, hostile)
    for job_id in hostile:
        assert f"job {job_id} of 'app': the stored payload cannot be decoded" in logged, logged


def test_the_dashboard_and_the_command_line_show_an_undecodable_job(
    store: alkstore.Store, target: Target
) -> None:
    q = store.queue("app")
    q.enqueue({"task": "x"})
    hidden = '{"task": "<script>alert(1)</script>", "args": [1' + "0" * 5000 + "]}"
    job_id = plant(target, "app", hidden)
    deep = plant(target, "app", DEEP)
    client = browser_like(create_app(store))
    page = client.get(f"/job?id={job_id}&queue=app")
    assert page.status_code == 200, page.text
    assert "the stored payload cannot be decoded: it has an integer of 5001 digits" in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text and "<script>alert" not in page.text
    assert page.text.count("0" * 5000) == 1, "the text as stored"
    page = client.get(f"/job?id={deep}")
    assert page.status_code == 200, page.text
    assert f"it {TOO_DEEP}" in page.text and "[" * 3000 in page.text

    r = cli("jobs", *store_args(target), "app")
    assert r.returncode == 0, r.stderr
    assert "(cannot be decoded)" in r.stdout
    r = cli("jobs", *store_args(target), "app", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["id"]: row for row in json.loads(r.stdout)}
    assert rows[job_id]["payload"] is None and rows[job_id]["payload_text"] == hidden
    assert "integer of 5001 digits" in rows[job_id]["payload_error"]
    r = cli("job", *store_args(target), str(deep))
    assert r.returncode == 0, r.stderr
    assert "(cannot be decoded) [[[" in r.stdout
    r = cli("job", *store_args(target), str(job_id), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["payload_text"] == hidden
