"""Workflows (SPEC §25): jobs that wait for other jobs, failure propagation and
results, as a user sees them, on both engines.

The rules are pinned engine by engine in the Rust conformance suite; these
check the Python surface: ``enqueue(after=..., on_failure=..., keep_result=...)``
in every form, ``ack(result=...)``, ``store.result``, ``job.parent_results()``,
the ``waiting`` counts, and the wake a released child gets. Racing processes
and the Worker and tasks end to end are in ``test_workflow_processes``.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

import alkstore
from alkstore import Store
from alkstore._cli import main as cli
from alkstore.metrics import registry
from alkstore.testing import enqueued
from tests.conftest import PG_URL, Target

AppConn = sqlite3.Connection | psycopg.Connection[tuple[object, ...]]


def settle(store: Store, queue: str, job_id: int, how: str = "ack", **kw: object) -> None:
    """Claims ``job_id`` (the only ready job of ``queue``) and settles it by ``how``."""
    job = store.queue(queue).claim("w")
    assert job is not None and job.id == job_id, f"expected job {job_id} ready in {queue!r}, got {job}"
    if how == "ack":
        assert job.ack(**kw)  # type: ignore[arg-type]
    else:
        assert job.fail(str(kw.get("error", "boom")))


def state(store: Store, queue: str, job_id: int) -> str | None:
    job = store.queue(queue).get_job(job_id)
    return None if job is None else job.state


def names(job_id: int, text: str | None) -> bool:
    """Whether ``text`` names job ``job_id`` (as a whole number, not a part of one)."""
    return text is not None and re.search(rf"(?<!\d){job_id}(?!\d)", text) is not None


# -- waiting and release ------------------------------------------------------------


def test_a_child_waits_unclaimed_until_every_parent_is_acked(store: Store) -> None:
    q, other = store.queue("parents"), store.queue("children")
    a, b = q.enqueue({"n": 1}), q.enqueue({"n": 2})
    c = other.enqueue({"n": 3}, after=[a, b], on_failure="cancel", keep_result=60)
    assert state(store, "children", c) == "waiting"
    assert other.claim("w") is None, "a waiting job is never claimed"
    assert other.stats().waiting == 1 and other.stats().pending == 0
    settle(store, "parents", a)
    assert state(store, "children", c) == "waiting", "one parent left"
    assert other.claim("w") is None
    settle(store, "parents", b)
    assert state(store, "children", c) == "pending"
    assert other.stats().waiting == 0
    job = other.claim("w")
    assert job is not None and job.id == c and job.attempts == 1


def test_a_released_child_wakes_a_waiting_claim(store: Store, target: Target) -> None:
    """The release commits with the parent's ack and wakes a claim blocked in
    another store handle, whose 60 s poll could not explain a prompt return."""
    parent = store.queue("p").enqueue({"n": 1})
    child = store.queue("c").enqueue({"n": 2}, after=[parent])
    held = store.queue("p").claim("w")
    assert held is not None and held.id == parent
    waiter = target.open(poll_interval_s=60)
    entered = threading.Event()
    got: list[alkstore.JobHandle | None] = []

    def claim() -> None:
        entered.set()
        got.append(waiter.queue("c").claim("waiter", timeout=30))

    t = threading.Thread(target=claim)
    try:
        t.start()
        assert entered.wait(10)
        assert held.ack()
        t.join(20)
        assert not t.is_alive(), "the claim was not woken by the release"
        assert got and got[0] is not None and got[0].id == child
    finally:
        t.join(30)
        waiter.close()


def test_fan_in_and_a_chain_across_queues(store: Store) -> None:
    parts = store.queue("parts").enqueue_many([{"part": i} for i in range(5)])
    total = store.queue("total").enqueue({"sum": True}, after=parts)
    report = store.queue("report").enqueue({"report": True}, after=[total])
    for pid in parts[:-1]:
        settle(store, "parts", pid)
        assert state(store, "total", total) == "waiting"
    settle(store, "parts", parts[-1])
    assert state(store, "total", total) == "pending"
    assert state(store, "report", report) == "waiting", "the chain's next link waits for its own parent"
    settle(store, "total", total)
    assert state(store, "report", report) == "pending"


def test_enqueue_many_and_aenqueue_take_after(store: Store) -> None:
    q = store.queue("forms")
    parent = q.enqueue({"n": 0})
    many = q.enqueue_many([{"n": 1}, {"n": 2}], after=[parent], keep_result=30)

    async def from_asyncio() -> tuple[int, list[int]]:
        one = await q.aenqueue({"n": 3}, after=[parent], on_failure="run")
        more = await q.aenqueue_many([{"n": 4}], after=[parent])
        return one, more

    one, more = asyncio.run(from_asyncio())
    children = [*many, one, *more]
    assert [state(store, "forms", c) for c in children] == ["waiting"] * 4
    assert q.stats().waiting == 4 and q.stats().pending == 1
    settle(store, "forms", parent)
    assert [state(store, "forms", c) for c in children] == ["pending"] * 4


def test_ack_batch_releases_children(store: Store) -> None:
    q = store.queue("batch")
    parents = q.enqueue_many([{"n": i} for i in range(3)])
    child = store.queue("after").enqueue({}, after=parents)
    jobs = q.claim_batch("w", 3)
    assert q.ack_batch(jobs) == 3
    assert state(store, "after", child) == "pending"


def test_a_graph_enqueued_in_one_transaction_commits_or_leaves_nothing(store: Store) -> None:
    q = store.queue("graph")
    with pytest.raises(RuntimeError, match="roll back"), store.transaction() as tx:
        a = q.enqueue({"step": "a"}, tx=tx)
        b = q.enqueue({"step": "b"}, after=[a], tx=tx)
        q.enqueue({"step": "c"}, after=[a, b], tx=tx)
        raise RuntimeError("roll back")
    assert q.stats().pending == q.stats().waiting == 0
    assert q.get_job(a) is None and q.get_job(b) is None
    assert "graph" not in store.queues()

    with store.transaction() as tx:
        a = q.enqueue({"step": "a"}, tx=tx)
        b = q.enqueue({"step": "b"}, after=[a], tx=tx)
        c = q.enqueue({"step": "c"}, after=[a, b], tx=tx)
    assert [state(store, "graph", i) for i in (a, b, c)] == ["pending", "waiting", "waiting"]
    settle(store, "graph", a)
    assert [state(store, "graph", i) for i in (b, c)] == ["pending", "waiting"]
    settle(store, "graph", b)
    assert state(store, "graph", c) == "pending"


# -- failure propagation ----------------------------------------------------------------


def test_the_middle_of_a_chain_dies_and_its_descendants_die_naming_it(store: Store) -> None:
    q = store.queue("chain", max_attempts=1)
    a = q.enqueue({"step": 1})
    b = q.enqueue({"step": 2}, after=[a])
    c = q.enqueue({"step": 3}, after=[b])
    d = q.enqueue({"step": 4}, after=[c])
    settle(store, "chain", a)
    settle(store, "chain", b, "fail", error="disk full")
    assert [state(store, "chain", i) for i in (b, c, d)] == ["dead"] * 3
    dead_c, dead_d = q.get_job(c), q.get_job(d)
    assert dead_c is not None and dead_c.last_error == f"parent job {b} died: disk full"
    assert dead_d is not None and dead_d.last_error == f"parent job {c} died: parent job {b} died: disk full"
    assert q.stats().dead == 3 and q.stats().waiting == 0
    assert q.claim("w") is None, "nothing of the chain runs"


@pytest.mark.parametrize("how", ["fail", "cancel"])
def test_a_diamonds_dying_root_kills_the_shared_child_once(store: Store, how: str) -> None:
    # SQLite's failure trigger once moved the shared child to dead twice
    # (UNIQUE constraint failed), so the root could not be failed or cancelled.
    q = store.queue("diamond", max_attempts=1)
    a = q.enqueue({"n": 1})
    b = q.enqueue({"n": 2}, after=[a])
    c = q.enqueue({"n": 3}, after=[a, b])
    if how == "fail":
        settle(store, "diamond", a, "fail", error="root cause")
    else:
        assert q.cancel(a)
    gone = "died: root cause" if how == "fail" else "was cancelled"
    dead_b, dead_c = q.get_job(b), q.get_job(c)
    assert dead_b is not None and dead_b.last_error == f"parent job {a} {gone}"
    assert dead_c is not None and dead_c.state == "dead", dead_c
    assert dead_c.last_error in (f"parent job {a} {gone}", f"parent job {b} died: parent job {a} {gone}")
    assert q.stats().dead == (3 if how == "fail" else 2) and q.stats().waiting == 0


def test_a_retry_under_budget_keeps_the_child_waiting(store: Store) -> None:
    q = store.queue("flaky", max_attempts=3, backoff_base_s=0)
    a = q.enqueue({"n": 1})
    c = store.queue("after-flaky").enqueue({}, after=[a])
    job = q.claim("w")
    assert job is not None and job.retry("try again", delay=0)
    assert state(store, "after-flaky", c) == "waiting", "a retried parent is still live"
    settle(store, "flaky", a)
    assert state(store, "after-flaky", c) == "pending"


def test_on_failure_run_runs_the_child_once_every_parent_is_settled(store: Store) -> None:
    q = store.queue("ran", max_attempts=1)
    ok, bad = q.enqueue({"n": 1}), q.enqueue({"n": 2})
    child = store.queue("cleanup").enqueue({"cleanup": True}, after=[ok, bad], on_failure="run")
    settle(store, "ran", ok)
    assert state(store, "cleanup", child) == "waiting"
    settle(store, "ran", bad, "fail", error="no")
    assert state(store, "cleanup", child) == "pending", "runs anyway"
    job = store.queue("cleanup").claim("w")
    assert job is not None and job.id == child
    assert job.parent_results() == {ok: None, bad: None}, "no result: one acked without, one dead"


def test_a_cancelled_parent_kills_or_releases_its_children(store: Store) -> None:
    q = store.queue("cancelled")
    parent = q.enqueue({"n": 1})
    killed = store.queue("kids").enqueue({"k": 1}, after=[parent])  # on_failure="cancel" is the default
    runs = store.queue("kids").enqueue({"k": 2}, after=[parent], on_failure="run")
    assert q.cancel(parent)
    dead = store.queue("kids").get_job(killed)
    assert (
        dead is not None and dead.state == "dead" and dead.last_error == f"parent job {parent} was cancelled"
    )
    assert state(store, "kids", runs) == "pending"


def test_a_cancelled_processing_parent_kills_its_child_too(store: Store) -> None:
    q = store.queue("running-cancel")
    parent = q.enqueue({"n": 1})
    child = store.queue("kid").enqueue({}, after=[parent])
    held = q.claim("w")
    assert held is not None and q.cancel(parent)
    assert state(store, "kid", child) == "dead"
    assert not held.ack(), "the holder's late ack lands nowhere and releases nothing"
    assert state(store, "kid", child) == "dead"


def test_an_expired_parent_kills_its_child(store: Store) -> None:
    q = store.queue("expiring")
    parent = q.enqueue({"n": 1}, expires=10)
    child = store.queue("kid2").enqueue({}, after=[parent])
    store._advance_clock(30)
    assert q.sweep_expired().expired == 1
    dead = store.queue("kid2").get_job(child)
    assert dead is not None and dead.state == "dead" and names(parent, dead.last_error)


def test_a_child_of_an_already_dead_parent_is_dead_or_runs_at_once(store: Store) -> None:
    q = store.queue("dead-before", max_attempts=1)
    parent = q.enqueue({"n": 1})
    settle(store, "dead-before", parent, "fail", error="gone wrong")
    killed = q.enqueue({"late": 1}, after=[parent])
    runs = q.enqueue({"late": 2}, after=[parent], on_failure="run")
    dead = q.get_job(killed)
    assert dead is not None and dead.state == "dead" and names(parent, dead.last_error)
    assert state(store, "dead-before", runs) == "pending"


def test_requeue_dead_of_a_child_whose_parents_are_done_makes_it_pending(store: Store) -> None:
    q = store.queue("fix", max_attempts=1)
    parent = q.enqueue({"n": 1})
    child = store.queue("fixed").enqueue({}, after=[parent])
    settle(store, "fix", parent, "fail", error="bug")
    assert state(store, "fixed", child) == "dead"
    assert q.requeue_dead([parent]) == [parent]
    settle(store, "fix", parent)
    assert store.queue("fixed").requeue_dead([child]) == [child]
    assert state(store, "fixed", child) == "pending"
    job = store.queue("fixed").claim("w")
    assert job is not None and job.id == child


# -- the ids of `after` -------------------------------------------------------------------


def test_an_id_issued_but_gone_counts_as_done(store: Store) -> None:
    q = store.queue("gone")
    acked = q.enqueue({"n": 1})
    settle(store, "gone", acked)
    cancelled = q.enqueue({"n": 2})
    assert q.cancel(cancelled)
    child = q.enqueue({"child": True}, after=[acked, cancelled])
    assert state(store, "gone", child) == "pending", "both finished before the child was enqueued"
    live = q.enqueue({"n": 3})
    mixed = q.enqueue({"child": 2}, after=[acked, live])
    assert state(store, "gone", mixed) == "waiting", "the live one still counts"


def test_an_id_never_issued_is_a_value_error_and_nothing_is_written(store: Store) -> None:
    q = store.queue("never")
    real = store.queue("elsewhere").enqueue({"n": 1})
    bogus = real + 1_000_000
    with pytest.raises(ValueError, match=str(bogus)):
        q.enqueue({"n": 2}, after=[real, bogus])
    with pytest.raises(ValueError, match=str(bogus)):
        q.enqueue_many([{"n": 3}, {"n": 4}], after=[bogus])
    with pytest.raises(ValueError), store.transaction() as tx:
        q.enqueue({"n": 5}, tx=tx)
        q.enqueue({"n": 6}, after=[bogus], tx=tx)
    assert "never" not in store.queues()
    s = q.stats()
    assert (s.pending, s.waiting, s.scheduled) == (0, 0, 0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"after": [1], "on_failure": "ignore"}, ValueError, "on_failure"),
        ({"after": [1], "on_failure": 1}, TypeError, "on_failure"),
        ({"after": ["1"]}, TypeError, "after"),
        ({"after": [1], "keep_result": -1}, ValueError, "keep_result"),
        ({"after": [1.5]}, TypeError, "after"),
    ],
)
def test_bad_workflow_arguments_write_nothing(
    store: Store, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    q = store.queue("bad")
    store.queue("first").enqueue({"n": 0})  # id 1 is issued
    with pytest.raises(error, match=match):
        q.enqueue({"n": 1}, **kwargs)  # type: ignore[arg-type]
    assert "bad" not in store.queues()


# -- results ------------------------------------------------------------------------------


def test_a_result_is_kept_for_keep_result_seconds(store: Store) -> None:
    q = store.queue("results")
    job_id = q.enqueue({"n": 1}, keep_result=3600)
    assert store.result(job_id) is None, "nothing before the ack"
    before = datetime.now(UTC)
    settle(store, "results", job_id, result={"rows": 42, "files": ["a.csv"]})
    got = store.result(job_id)
    assert got is not None
    assert (got.state, got.value, got.error) == ("done", {"rows": 42, "files": ["a.csv"]}, None)
    assert before - timedelta(seconds=5) <= got.finished_at <= datetime.now(UTC) + timedelta(seconds=5)
    store._advance_clock(3000)
    assert store.result(job_id) is not None, "still within keep_result"
    store._advance_clock(700)
    q.sweep_expired()
    assert store.result(job_id) is None, "gone once keep_result has passed"


def test_without_keep_result_a_result_lives_only_while_a_child_needs_it(store: Store) -> None:
    q = store.queue("needed")
    alone = q.enqueue({"n": 1})
    settle(store, "needed", alone, result=1)
    assert store.result(alone) is None, "nobody needs it: not kept"
    parent = q.enqueue({"n": 2})
    child = store.queue("needs").enqueue({}, after=[parent])
    settle(store, "needed", parent, result={"for": "the child"})
    got = store.result(parent)
    assert got is not None and got.value == {"for": "the child"}
    job = store.queue("needs").claim("w")
    assert job is not None and job.id == child
    assert job.parent_results() == {parent: {"for": "the child"}}
    assert job.ack()
    store.queue("needs").sweep_expired()
    q.sweep_expired()
    assert store.result(parent) is None, "its last child finished: no longer needed"


def test_parent_results_maps_every_parent_to_its_value(store: Store) -> None:
    q = store.queue("fan")
    parents = q.enqueue_many([{"n": i} for i in range(3)])
    child = store.queue("fan-in").enqueue({}, after=parents)
    for i, pid in enumerate(parents):
        settle(store, "fan", pid, result=[i, str(i)])
    job = store.queue("fan-in").claim("w")
    assert job is not None and job.id == child
    assert job.parent_results() == {pid: [i, str(i)] for i, pid in enumerate(parents)}
    plain = store.queue("plain").enqueue({})
    lone = store.queue("plain").claim("w")
    assert lone is not None and lone.id == plain and lone.parent_results() == {}


def test_a_dead_jobs_result_has_its_error(store: Store) -> None:
    q = store.queue("dies", max_attempts=1)
    job_id = q.enqueue({"n": 1}, keep_result=3600)
    settle(store, "dies", job_id, "fail", error="card declined")
    got = store.result(job_id)
    assert got is not None
    assert (got.state, got.value, got.error) == ("dead", None, "card declined")
    assert got.finished_at is not None


def test_ack_result_must_be_json_and_a_bad_one_acks_nothing(store: Store) -> None:
    q = store.queue("json")
    job_id = q.enqueue({"n": 1}, keep_result=60)
    job = q.claim("w")
    assert job is not None
    # The refusal names the result, not a payload.
    with pytest.raises(TypeError, match=r"^result\.when is not JSON-serialisable: object of type datetime"):
        job.ack(result={"when": datetime.now(UTC)})
    with pytest.raises(TypeError, match=r"^result\[0\] is not JSON-serialisable"):
        q._ack_then_claim(job, "w", 1, result=[object()])
    with pytest.raises(ValueError, match="NaN"):
        job.ack(result=float("nan"))
    assert state(store, "json", job_id) == "processing", "still held: nothing was acked"
    assert job.ack(result=None)
    got = store.result(job_id)
    assert got is not None and (got.state, got.value) == ("done", None)


def test_results_ride_a_transaction(store: Store) -> None:
    q = store.queue("tx-results")
    job_id = q.enqueue({"n": 1}, keep_result=60)
    job = q.claim("w")
    assert job is not None
    with pytest.raises(RuntimeError), store.transaction() as tx:
        assert job.ack(result="first", tx=tx)
        raise RuntimeError("roll back")
    assert store.result(job_id) is None and state(store, "tx-results", job_id) == "processing"
    with store.transaction() as tx:
        assert job.ack(result="second", tx=tx)
    got = store.result(job_id)
    assert got is not None and got.value == "second"


# -- what operators see --------------------------------------------------------------------


def test_waiting_shows_in_queues_and_stats(store: Store) -> None:
    parent = store.queue("upstream").enqueue({})
    store.queue("only-waiting").enqueue_many([{}, {}], after=[parent])
    assert "only-waiting" in store.queues(), "a queue holding only waiting jobs is listed"
    s = store.queue("only-waiting").stats()
    assert (s.waiting, s.pending, s.scheduled, s.processing, s.dead) == (2, 0, 0, 0, 0)
    assert s.oldest_ready_age_s is None, "a waiting job is not ready"
    assert "waiting=2" in repr(s)
    live = store.queue("only-waiting").live_jobs()
    assert [j.state for j in live] == ["waiting", "waiting"]


def test_the_cli_shows_waiting_and_a_result(
    store: Store, target: Target, capsys: pytest.CaptureFixture[str]
) -> None:
    q = store.queue("cli-flow", max_attempts=1)
    parent = q.enqueue({"n": 1}, keep_result=600)
    child = q.enqueue({"n": 2}, after=[parent])
    where = [target.location, *([] if target.schema is None else ["--schema", target.schema])]
    assert cli(["stats", *where, "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["pending"], row["waiting"]) == (1, 1)
    assert cli(["stats", *where]) == 0
    header, line = capsys.readouterr().out.splitlines()
    assert header.split()[:3] == ["QUEUE", "PENDING", "WAITING"] and line.split()[:3] == [
        "cli-flow",
        "1",
        "1",
    ]
    assert cli(["jobs", *where[:1], "cli-flow", *where[1:], "--json"]) == 0
    states = {j["id"]: j["state"] for j in json.loads(capsys.readouterr().out)}
    assert states == {parent: "pending", child: "waiting"}

    assert cli(["result", where[0], str(parent), *where[1:]]) == 3, "not finished: no result"
    assert "no result for job" in capsys.readouterr().err
    settle(store, "cli-flow", parent, result={"rows": [1, 2]})
    assert cli(["result", where[0], str(parent), *where[1:], "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["id"], got["state"], got["value"], got["error"]) == (parent, "done", {"rows": [1, 2]}, None)
    assert datetime.fromisoformat(got["finished_at"]) <= datetime.now(UTC) + timedelta(seconds=5)
    assert cli(["result", where[0], str(parent), *where[1:]]) == 0
    first, *value = capsys.readouterr().out.splitlines()
    assert first.startswith(f"job {parent}: done at ") and json.loads("\n".join(value)) == {"rows": [1, 2]}
    settle(store, "cli-flow", child, "fail", error="no space")
    assert cli(["result", where[0], str(child), *where[1:]]) == 0
    assert capsys.readouterr().out.strip().endswith(": no space")


def test_metrics_count_waiting_jobs(store: Store) -> None:
    parent = store.queue("m-up").enqueue({})
    store.queue("m-down").enqueue_many([{}, {}, {}], after=[parent])
    samples = {
        (s.labels["queue"], s.labels["state"]): s.value
        for family in registry(store).collect()
        if family.name == "alkstore_jobs"
        for s in family.samples
    }
    assert samples[("m-down", "waiting")] == 3 and samples[("m-up", "waiting")] == 0
    assert samples[("m-up", "pending")] == 1


def test_the_dashboard_shows_waiting_and_a_jobs_parents_and_children(store: Store) -> None:
    from alkstore.dashboard import create_app
    from tests.dashboards import browser_like

    client = browser_like(create_app(store))
    up = store.queue("dash-up")
    a, b = up.enqueue({"n": 1}), up.enqueue({"n": 2})
    child = store.queue("dash-down").enqueue({"n": 3}, after=[a, b], keep_result=600)
    overview = client.get("/").text
    assert "<th>Waiting</th>" in overview
    row = re.search(r'<tr>\s*<td><a href="/queue\?name=dash-down">.*?</tr>', overview, re.S)
    assert row is not None, overview
    assert re.findall(r"<td>(\d+)</td>", row.group(0))[:2] == ["0", "1"], row.group(0)
    assert "waiting 1" in client.get("/queue", params={"name": "dash-down"}).text
    page = client.get("/job", params={"queue": "dash-down", "id": child}).text
    parents = re.search(r'<dd id="parents">(.*?)</dd>', page, re.S)
    assert parents is not None and re.findall(r'href="/job\?id=(\d+)"', parents.group(1)) == [str(a), str(b)]
    parent_page = client.get("/job", params={"id": a})
    assert parent_page.status_code == 200, "found by id alone, in its own queue"
    children = re.search(r'<dd id="children">(.*?)</dd>', parent_page.text, re.S)
    assert children is not None and f'href="/job?id={child}"' in children.group(1)
    assert "dash-up" in parent_page.text
    settle(store, "dash-up", a)
    settle(store, "dash-up", b)
    settle(store, "dash-down", child, result={"total": 3})
    done = client.get("/job", params={"id": child})
    assert done.status_code == 200 and '<span class="state">done</span>' in done.text
    shown = re.search(r'<pre id="result">(.*?)</pre>', done.text, re.S)
    assert shown is not None and json.loads(html.unescape(shown.group(1))) == {"total": 3}
    assert client.get("/job", params={"id": child + 1000}).status_code == 404


# -- conn= ---------------------------------------------------------------------------------------


@pytest.fixture
def app(target: Target) -> Iterator[AppConn]:
    """The application's own connection to the store's database."""
    if target.engine == "sqlite":
        conn = sqlite3.connect(target.location, timeout=5)
        yield conn
        conn.close()
    else:
        with psycopg.connect(PG_URL) as pg:
            yield pg


def test_a_graph_on_the_applications_own_connection(store: Store, app: AppConn) -> None:
    q = store.queue("conn-graph")
    a = q.enqueue({"step": "a"}, conn=app)
    q.enqueue({"step": "b"}, after=[a], conn=app)
    app.rollback()
    assert q.get_job(a) is None and "conn-graph" not in store.queues()

    a = q.enqueue({"step": "a"}, conn=app)
    b, c = q.enqueue_many([{"step": "b"}, {"step": "c"}], after=[a], on_failure="run", conn=app)
    app.commit()
    assert [state(store, "conn-graph", i) for i in (a, b, c)] == ["pending", "waiting", "waiting"]
    assert store.job_edges(b) == ([a], []) and store.job_edges(a) == ([], [b, c])
    settle(store, "conn-graph", a)
    assert [state(store, "conn-graph", i) for i in (b, c)] == ["pending", "pending"]


def test_conn_enqueue_refuses_an_id_never_issued(store: Store, app: AppConn) -> None:
    q = store.queue("conn-bad")
    q.enqueue({"n": 0})
    first = q.enqueue({"n": 1}, conn=app)
    with pytest.raises(ValueError, match=rf"after: job {10**9} was never issued by this store"):
        q.enqueue({"n": 2}, after=[first, 10**9, 10**9 + 5], conn=app)
    assert q.get_job(first) is None, "not before the app commits"
    # Nothing failed on the app's connection: its transaction goes on and commits.
    second = q.enqueue({"n": 3}, after=[first], conn=app)
    app.commit()
    assert state(store, "conn-bad", first) == "pending" and state(store, "conn-bad", second) == "waiting"
    assert q.stats().pending == 2 and q.stats().waiting == 1


def test_conn_enqueue_after_a_dead_parent_applies_on_failure(store: Store, app: AppConn) -> None:
    q = store.queue("conn-dead", max_attempts=1)
    a, ok = q.enqueue({"n": 1}), q.enqueue({"n": 2})
    settle(store, "conn-dead", a, "fail", error="disk full")
    cancel = q.enqueue({"n": 3}, after=[a, ok], conn=app)
    run = q.enqueue({"n": 4}, after=[a, ok], on_failure="run", conn=app)
    app.commit()
    born_dead = q.get_job(cancel)
    assert born_dead is not None and born_dead.state == "dead"
    assert born_dead.last_error == f"parent job {a} died: disk full"
    assert state(store, "conn-dead", run) == "waiting", "the dead parent is settled; ok is not yet"
    settle(store, "conn-dead", ok)
    assert state(store, "conn-dead", run) == "pending"


def test_conn_enqueue_keeps_a_result_and_counts_an_issued_gone_parent_as_done(
    store: Store, app: AppConn
) -> None:
    q = store.queue("conn-kept")
    gone = q.enqueue({"n": 0})
    settle(store, "conn-kept", gone)
    kept = q.enqueue({"n": 1}, keep_result=600, conn=app)
    child = q.enqueue({"n": 2}, after=[gone], conn=app)
    app.commit()
    assert state(store, "conn-kept", child) == "pending", "a parent acked before counts as done"
    assert store.job_edges(child) == ([gone], [])
    job = q.claim("w")
    assert job is not None and job.id == kept and job.ack(result={"sum": 3})
    result = store.result(kept)
    assert result is not None and result.state == "done" and result.value == {"sum": 3}


def test_conn_enqueue_of_a_live_unique_key_with_keep_result_returns_the_live_job(
    store: Store, app: AppConn
) -> None:
    q = store.queue("conn-keyed")
    first = q.enqueue({"n": 1}, unique_key="k", keep_result=60, conn=app)
    again, plain = q.enqueue_many([{"n": 2}, {"n": 3}], keep_result=60, conn=app)
    same = q.enqueue({"n": 4}, unique_key="k", keep_result=60, conn=app)
    app.commit()
    assert same == first and len({first, again, plain}) == 3
    assert q.stats().pending == 3


def test_conn_enqueue_with_after_in_autocommit_is_one_statement(store: Store, target: Target) -> None:
    """In autocommit each statement commits alone, so the child must be linked by
    the statement that inserts it: it is never seen pending before its parents."""
    q = store.queue("conn-auto")
    a = q.enqueue({"n": 1})
    payloads = [{"n": i} for i in range(3)]
    if target.engine == "sqlite":
        lite = sqlite3.connect(target.location, timeout=5, isolation_level=None)
        try:
            children = q.enqueue_many(payloads, after=[a], conn=lite)
        finally:
            lite.close()
    else:
        with psycopg.connect(PG_URL, autocommit=True) as pg:
            children = q.enqueue_many(payloads, after=[a], conn=pg)
    assert [state(store, "conn-auto", i) for i in children] == ["waiting"] * 3
    assert q.stats().waiting == 3 and store.job_edges(a) == ([], children)
    settle(store, "conn-auto", a)
    assert q.stats().pending == 3 and q.stats().waiting == 0


def test_conn_enqueue_with_after_on_sqlalchemy(store: Store, target: Target) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    q = store.queue("conn-sa")
    url = (
        f"sqlite:///{target.location}"
        if target.engine == "sqlite"
        else PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    )
    db = create_engine(url)
    try:
        with db.connect() as c:
            a = q.enqueue({"n": 1}, conn=c)
            b = q.enqueue({"n": 2}, after=[a], conn=c)
            c.rollback()
            assert q.get_job(a) is None and q.get_job(b) is None
        with Session(db) as s:
            a = q.enqueue({"n": 1}, conn=s)
            b = q.enqueue({"n": 2}, after=[a], keep_result=60, conn=s)
            with pytest.raises(ValueError, match="never issued"):
                q.enqueue({"n": 3}, after=[b + 1000], conn=s)
            s.commit()
        assert [state(store, "conn-sa", i) for i in (a, b)] == ["pending", "waiting"]
    finally:
        db.dispose()


@pytest.mark.parametrize("driver", ["asyncpg", "psycopg"])
def test_aenqueue_with_after_on_an_async_driver(store: Store, target: Target, driver: str) -> None:
    if target.engine != "postgres":
        pytest.skip("asyncpg and psycopg reach only Postgres (aiosqlite: the test below)")
    import asyncpg

    q = store.queue("conn-async")

    async def on_asyncpg() -> tuple[int, list[int]]:
        conn = await asyncpg.connect(PG_URL)
        try:
            async with conn.transaction():
                a = await q.aenqueue({"n": 1}, conn=conn)
                kids = await q.aenqueue_many([{"n": 2}, {"n": 3}], after=[a], conn=conn)
            with pytest.raises(ValueError, match="never issued"):
                await q.aenqueue({"n": 4}, after=[kids[-1] + 1000], conn=conn)
            return a, kids
        finally:
            await conn.close()

    async def on_psycopg() -> tuple[int, list[int]]:
        async with await psycopg.AsyncConnection.connect(PG_URL) as conn:
            a = await q.aenqueue({"n": 1}, conn=conn)
            kids = await q.aenqueue_many([{"n": 2}, {"n": 3}], after=[a], conn=conn)
            with pytest.raises(ValueError, match="never issued"):
                await q.aenqueue({"n": 4}, after=[kids[-1] + 1000], conn=conn)
            await conn.commit()
            return a, kids

    a, kids = asyncio.run(on_asyncpg() if driver == "asyncpg" else on_psycopg())
    assert [state(store, "conn-async", i) for i in kids] == ["waiting", "waiting"]
    settle(store, "conn-async", a)
    assert [state(store, "conn-async", i) for i in kids] == ["pending", "pending"]


def test_aenqueue_with_after_on_an_aiosqlite_session(store: Store, target: Target) -> None:
    if target.engine != "sqlite":
        pytest.skip("aiosqlite reaches only SQLite files")
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    q = store.queue("conn-async")

    async def on_aiosqlite() -> tuple[int, list[int]]:
        db = create_async_engine(f"sqlite+aiosqlite:///{target.location}")
        try:
            async with AsyncSession(db) as s:
                a = await q.aenqueue({"n": 1}, conn=s)
                kids = await q.aenqueue_many([{"n": 2}, {"n": 3}], after=[a], conn=s)
                with pytest.raises(ValueError, match="never issued"):
                    await q.aenqueue({"n": 4}, after=[kids[-1] + 1000], conn=s)
                await s.commit()
            return a, kids
        finally:
            await db.dispose()

    a, kids = asyncio.run(on_aiosqlite())
    assert [state(store, "conn-async", i) for i in kids] == ["waiting", "waiting"]
    settle(store, "conn-async", a)
    assert [state(store, "conn-async", i) for i in kids] == ["pending", "pending"]


# -- tasks -------------------------------------------------------------------------------------


def test_task_options_take_after_on_failure_and_keep_result(store: Store) -> None:
    tasks = alkstore.Tasks(store)

    @tasks.task(queue="etl")
    def extract(source: str) -> list[int]:
        return [1, 2, 3] if source else []

    @tasks.task(queue="etl")
    def load() -> int:
        return 0

    first = extract.enqueue("db")
    call = load.options(after=[first], on_failure="run", keep_result=120)
    assert call.after == (first,) and call.on_failure == "run" and call.keep_result == 120
    child = call.enqueue()
    assert state(store, "etl", child) == "waiting"
    assert [c.job_id for c in enqueued(load)] == [child], "a waiting call is an enqueued one"

    async def from_asyncio() -> int:
        return await load.options(after=[first, child]).aenqueue()

    later = asyncio.run(from_asyncio())
    assert state(store, "etl", later) == "waiting"
    assert store.job_edges(later) == ([first, child], [])
    with pytest.raises(ValueError, match="on_failure"):
        load.options(after=[first], on_failure="sometimes").enqueue()  # type: ignore[arg-type]


def test_drain_keeps_a_tasks_return_value_as_its_result(store: Store) -> None:
    from alkstore.testing import drain

    tasks = alkstore.Tasks(store)

    @tasks.task(queue="math")
    def add(a: int, b: int) -> int:
        return a + b

    @tasks.task(queue="math")
    def total() -> int:
        return sum(int(str(v)) for v in alkstore.current_job().parent_results().values())

    x, y = add.enqueue(1, 2), add.enqueue(3, 4)
    t = total.options(after=[x, y], keep_result=60).enqueue()
    assert drain(tasks).acked == 3
    got = store.result(t)
    assert got is not None and got.value == 10


def test_a_non_json_return_acks_the_job_without_a_result(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The work happened: the job is acked, never run again, and the log says
    why no result was kept (docs/workflows.md)."""
    from alkstore.testing import drain

    tasks = alkstore.Tasks(store)

    @tasks.task(queue="odd")
    def make() -> object:
        return {"at": datetime.now(UTC)}

    @tasks.task(queue="odd")
    def after_it() -> object:
        # JSON object keys are text: a result keyed by the parents' ids says so.
        return {str(k): v for k, v in alkstore.current_job().parent_results().items()}

    job_id = make.options(keep_result=60).enqueue()
    child = after_it.options(after=[job_id], keep_result=60).enqueue()
    with caplog.at_level("WARNING", logger="alkstore.worker"):
        assert drain(tasks).acked == 2
    kept = store.result(job_id)
    assert kept is not None and (kept.state, kept.value) == ("done", None), "acked, without a value"
    assert any(
        "none is kept" in r.getMessage()
        and f"job {job_id} " in r.getMessage()
        and "result.at is not JSON-serialisable" in r.getMessage()
        for r in caplog.records
    )
    got = store.result(child)
    assert got is not None and got.value == {str(job_id): None}
