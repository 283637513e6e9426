"""Forgetting a queue, and a job read by id (issue 44, item 6), on both engines.

Every queue that ever held a job stays in ``store.queues()``, and so in
``/metrics`` and on the dashboard's overview: thousands of throw-away queues
grew a scrape by megabytes. ``store.forget_queue(name)`` drops one that holds
nothing a caller may read, from the API, ``alkstore forget`` and the
dashboard. ``store.get_job(id)`` reads a job by id alone, which the dashboard's
``/job?id=`` and ``alkstore job`` use instead of asking each queue in turn.
The storage contract (what goes, the race with an enqueue in flight) is the
conformance suite's (``operate::forget_queue_*``, ``reads::a_job_is_found_by_id_*``).
"""

from __future__ import annotations

import threading

import psycopg
import pytest
from prometheus_client import generate_latest

import alkstore
from alkstore.dashboard import create_app
from alkstore.metrics import registry
from tests.conftest import PG_URL, Target, pg_admin_connect
from tests.dashboards import browser_like, csrf, post
from tests.test_cli import assert_one_line_error, cli, json_out, store_args


def done(q: alkstore.Queue) -> None:
    """Runs every ready job of ``q`` to its ack: the queue is empty, and listed."""
    while (job := q.claim("w")) is not None:
        assert job.ack()


# -- the API ----------------------------------------------------------------------------


def test_forgetting_throw_away_queues_shrinks_the_metrics_scrape(store: alkstore.Store) -> None:
    keep = store.queue("emails")
    keep.enqueue({})
    for n in range(200):
        q = store.queue(f"tmp-{n}")
        q.enqueue({"n": n})
        done(q)
    before = generate_latest(registry(store)).decode()
    assert 'queue="tmp-199"' in before and len(store.queues()) == 201

    assert all(store.forget_queue(f"tmp-{n}") for n in range(200))
    after = generate_latest(registry(store)).decode()
    assert "tmp-" not in after and 'alkstore_jobs{queue="emails",state="pending"} 1.0' in after
    assert store.queues() == ["emails"]
    assert len(after) * 50 < len(before), (len(before), len(after))


def test_a_queue_holding_a_job_is_refused_and_kept(store: alkstore.Store) -> None:
    q = store.queue("emails", max_attempts=1)
    q.enqueue({})
    q.pause()
    with pytest.raises(ValueError, match='cannot forget queue "emails": it still holds live jobs') as refused:
        store.forget_queue("emails")
    assert str(refused.value).endswith("nothing was changed")
    q.resume()
    job = q.claim("w")
    assert job is not None and job.fail("boom")
    with pytest.raises(ValueError, match="dead jobs: purge them"):
        store.forget_queue("emails")
    assert store.queues() == ["emails"] and q.stats().dead == 1
    assert q.purge_dead() == 1
    assert store.forget_queue("emails") is True
    assert store.forget_queue("emails") is False, "nothing left to forget"
    with pytest.raises(alkstore.InvalidName):
        store.forget_queue("__alkstore_scheduler")


def test_a_job_is_read_by_id_whatever_its_queue(store: alkstore.Store) -> None:
    a = store.queue("a").enqueue({"n": 1})
    dead_q = store.queue("b", max_attempts=1)
    dead = dead_q.enqueue({"n": 2})
    job = dead_q.claim("w")
    assert job is not None and job.fail("boom")
    outbox = store.outbox("hooks")
    hooked = outbox.enqueue({"n": 3})

    found = store.get_job(a)
    assert found is not None and (found.queue, found.state, found.payload) == ("a", "pending", {"n": 1})
    gone = store.get_job(dead)
    assert gone is not None and (gone.queue, gone.state, gone.last_error) == ("b", "dead", "boom")
    backing = store.get_job(hooked)
    assert backing is not None and backing.queue == "__alkstore_outbox:hooks"
    assert store.get_job(dead + 1000) is None
    with pytest.raises(TypeError):
        store.get_job("1")  # type: ignore[arg-type]


def test_a_forget_waits_for_an_enqueue_of_the_applications_transaction(
    store: alkstore.Store, target: Target
) -> None:
    """The race of the conformance suite, through ``conn=`` as an application
    has it: its transaction enqueued and is still open when the operator
    forgets the queue. The forget waits for it (on Postgres, at most 2 s; here
    it commits first) and then sees the job."""
    if target.engine != "postgres":
        pytest.skip("the application's own Postgres connection; the SQLite race is the conformance suite's")
    q = store.queue("emails")
    q.enqueue({})
    done(q)
    with psycopg.connect(PG_URL) as app:
        q.enqueue({"in": "flight"}, conn=app)
        outcome: list[BaseException | bool] = []
        forget = threading.Thread(target=lambda: outcome.append(_outcome(store, "emails")))
        forget.start()
        _wait_for_a_lock_wait(target)
        app.commit()
        forget.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], ValueError), outcome
    assert "live jobs" in str(outcome[0])
    done(q)
    assert store.queues() == ["emails"], "the queue stays listed once its job is done"


def test_a_forget_behind_a_transaction_that_stays_open_gives_up_and_changes_nothing(
    store: alkstore.Store, target: Target
) -> None:
    if target.engine != "postgres":
        pytest.skip(
            "Postgres's bounded lock wait; SQLite waits busy_timeout_ms for its writer as every write does"
        )
    q = store.queue("emails")
    q.enqueue({})
    done(q)
    q.pause()
    with psycopg.connect(PG_URL) as app:
        store.queue("other").enqueue({}, conn=app)  # any enqueue holds the forget off
        with pytest.raises(alkstore.DatabaseError, match="waited 2s for enqueues in flight") as gave_up:
            store.forget_queue("emails")
        assert gave_up.value.code == "55P03"
        app.rollback()
    assert q.is_paused() and "emails" in store.queues(), "nothing was changed"
    assert store.forget_queue("emails") is True


def _outcome(store: alkstore.Store, name: str) -> BaseException | bool:
    try:
        return store.forget_queue(name)
    except Exception as exc:
        return exc


def _wait_for_a_lock_wait(target: Target) -> None:
    """Until a session waits for a lock on the test schema's queue table: the forget."""
    with pg_admin_connect() as admin:
        for _ in range(2000):
            waiting = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
                (f'"{target.schema}".queues',),
            ).fetchone()
            if waiting is not None and isinstance(waiting[0], int) and waiting[0] > 0:
                return
            admin.execute("SELECT pg_sleep(0.01)")
    raise AssertionError("the forget never waited for the enqueue in flight")


# -- the command line -----------------------------------------------------------------


def test_alkstore_forget_drops_an_empty_queue_and_refuses_one_with_jobs(
    target: Target, store: alkstore.Store
) -> None:
    q = store.queue("emails")
    q.enqueue({})
    refused = cli("forget", *store_args(target), "emails")
    assert_one_line_error(refused, 'cannot forget queue "emails"', "live jobs")
    assert refused.returncode == 1
    done(q)
    q.pause()
    r = cli("forget", *store_args(target), "emails")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("forgot 'emails': it leaves `alkstore stats`")
    assert json_out(cli("stats", *store_args(target), "--json")) == []
    assert not q.is_paused(), "its pause went with it"
    assert json_out(cli("forget", *store_args(target), "emails", "--json")) == {
        "queue": "emails",
        "forgotten": False,
    }
    again = cli("forget", *store_args(target), "emails")
    assert again.returncode == 0 and "not known to this store" in again.stdout


def test_alkstore_job_reads_one_job_by_id(target: Target, store: alkstore.Store) -> None:
    q = store.queue("emails", max_attempts=1)
    first, second = q.enqueue_many([{"to": "a"}, {"to": "b"}])
    job = q.claim("cli-worker")
    assert job is not None and job.id == first and job.fail("mailbox full")
    dead = json_out(cli("job", *store_args(target), str(first), "--json"))
    assert (dead["queue"], dead["state"], dead["last_error"], dead["payload"]) == (
        "emails",
        "dead",
        "mailbox full",
        {"to": "a"},
    )
    lines = cli("job", *store_args(target), str(second))
    assert lines.returncode == 0, lines.stderr
    assert "queue" in lines.stdout and "emails" in lines.stdout and '{"to":"b"}' in lines.stdout
    missing = cli("job", *store_args(target), "999999")
    assert missing.returncode == 3 and "no job 999999" in missing.stderr


# -- the dashboard --------------------------------------------------------------------


def test_the_dashboard_forgets_an_empty_queue_from_its_page(store: alkstore.Store) -> None:
    q = store.queue("emails")
    q.enqueue({})
    client = browser_like(create_app(store))
    assert "Forget this queue" not in client.get("/queue?name=emails").text, "not while it holds a job"
    token = csrf(client)
    r = client.post("/action", data={"csrf": token, "queue": "emails", "action": "forget"})
    assert r.status_code == 400 and "live jobs" in r.text
    done(q)
    page = client.get("/queue?name=emails").text
    assert "Forget this queue" in page and 'data-confirm="Forget this queue?' in page
    answer = client.post(
        "/action", data={"csrf": token, "queue": "emails", "action": "forget"}, follow_redirects=False
    )
    assert answer.status_code == 303 and answer.headers["location"].endswith("/"), "to the overview"
    assert store.queues() == [] and "emails" not in client.get("/").text
    assert "emails" not in client.get("/metrics").text

    q.enqueue({})
    done(q)
    read_only = browser_like(create_app(store, read_only=True))
    assert post(read_only, csrf(read_only), queue="emails", action="forget") == 403
    assert store.queues() == ["emails"]


def test_the_dashboards_job_page_finds_a_job_by_its_id_alone(store: alkstore.Store) -> None:
    for n in range(20):
        store.queue(f"q{n}").enqueue({"n": n})
    dead_q = store.queue("zz", max_attempts=1)
    dead = dead_q.enqueue({"secret": "payload"})
    job = dead_q.claim("w")
    assert job is not None and job.fail("boom")
    client = browser_like(create_app(store))
    page = client.get("/job", params={"id": dead})
    assert page.status_code == 200 and "payload" in page.text and "boom" in page.text
    assert 'href="/queue?name=zz"' in page.text, "the job names its queue"
    assert client.get("/job", params={"id": dead + 1000}).status_code == 404
