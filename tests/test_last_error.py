"""A retried job shows why (issue 43, SPEC §30): ``last_error`` of a live job
is its last failure — the error of its latest retry by ``job.retry``,
``Retry(error=)``, a handler's exception, a timeout or an unknown task name,
or a lapsed lease its claim reclaimed — in ``get_job``, ``live_jobs``,
``alkstore jobs`` and the dashboard's job page, on both engines. A dead row
keeps the reason it died for, as before.

Workers are waited on through what they report (their counts), never on sleeps.
"""

from __future__ import annotations

import threading

import alkstore
from alkstore import JobHandle, Store, Tasks, Worker
from alkstore.dashboard import create_app
from tests.conftest import Target
from tests.dashboards import browser_like
from tests.test_cli import cli, json_out, store_args
from tests.workers import running, wait_for


def pending_error(q: alkstore.Queue, job_id: int) -> tuple[str, int, str | None]:
    job = q.get_job(job_id)
    assert job is not None
    return job.state, job.attempts, job.last_error


def test_a_retried_job_reads_its_error_until_the_next_failure(store: Store) -> None:
    q = store.queue("q", max_attempts=3)
    job_id = q.enqueue({"n": 1})
    assert pending_error(q, job_id) == ("pending", 0, None), "a job that never failed"
    first = q.claim("w")
    assert first is not None and first.retry("connection refused", delay=0)
    assert pending_error(q, job_id) == ("pending", 1, "connection refused")
    assert [(j.id, j.last_error) for j in q.live_jobs()] == [(job_id, "connection refused")]
    by_id = store.get_job(job_id)  # whatever its queue
    assert by_id is not None and by_id.last_error == "connection refused"
    second = q.claim("w")
    assert second is not None
    # Running again: still its last failure.
    assert pending_error(q, job_id) == ("processing", 2, "connection refused")
    assert second.release()
    assert pending_error(q, job_id) == ("pending", 1, "connection refused"), "a release is no failure"
    third = q.claim("w")
    assert third is not None and third.retry("timeout talking to the bank", delay=0)
    assert pending_error(q, job_id) == ("pending", 2, "timeout talking to the bank")
    last = q.claim("w")
    assert last is not None and last.fail("card stolen")
    dead = q.get_job(job_id)
    assert dead is not None and (dead.state, dead.last_error) == ("dead", "card stolen")  # why it died


def test_a_reclaimed_lease_reads_that_it_lapsed(store: Store) -> None:
    q = store.queue("q", visibility_timeout_s=30)
    job_id = q.enqueue({})
    crashed = q.claim("crashed-worker")
    assert crashed is not None
    store._advance_clock(31)
    again = q.claim_batch("w", 5)
    assert [(j.id, j.attempts) for j in again] == [(job_id, 2)]
    assert pending_error(q, job_id) == ("processing", 2, "lease lapsed (worker crashed-worker)")


def test_a_workers_handler_error_retry_and_unknown_task_show_on_the_pending_job(store: Store) -> None:
    tasks = Tasks(store)
    q = store.queue("q", max_attempts=3, backoff_base_s=3600)

    @tasks.task(queue="q", max_attempts=3, backoff_base_s=3600)
    def flaky() -> None:
        raise ValueError("upstream said 503")

    @tasks.task(queue="q", max_attempts=3)
    def limited() -> None:
        raise alkstore.Retry(after=3600, error="rate limited by the API")

    raised = flaky.enqueue()
    retried = limited.enqueue()
    stranger = q.enqueue({"task": "mail.send_v2", "args": [], "kwargs": {}})
    worker = tasks.worker(concurrency=1)
    with running(worker):
        wait_for(lambda: worker.counts.retried == 3)
    assert pending_error(q, raised) == ("pending", 1, repr(ValueError("upstream said 503")))
    assert pending_error(q, retried) == ("pending", 1, "rate limited by the API")
    assert pending_error(q, stranger) == ("pending", 1, "unknown task 'mail.send_v2'")


def test_a_timed_out_handler_shows_the_timeout_on_the_pending_job(store: Store) -> None:
    release = threading.Event()
    worker = Worker(store, concurrency=1)
    q = store.queue("q", max_attempts=3, backoff_base_s=3600)
    job_id = q.enqueue({})

    @worker.handler("q", timeout=1.0)
    def stuck(_payload: object, _job: JobHandle) -> None:
        release.wait(60)

    try:
        with running(worker):
            wait_for(lambda: worker.counts.retried == 1)
            assert pending_error(q, job_id) == ("pending", 1, "timed out after 1 s")
    finally:
        release.set()


def test_the_command_line_and_the_dashboard_show_a_retried_jobs_error(target: Target, store: Store) -> None:
    q = store.queue("emails", max_attempts=3)
    job_id = q.enqueue({"to": "ada@example.com"})
    held = q.claim("w")
    assert held is not None and held.retry("mailbox full, try later", delay=3600)
    live = json_out(cli("jobs", *store_args(target), "emails", "--json"))
    got = [(j["id"], j["state"], j["last_error"]) for j in live]
    assert got == [(job_id, "pending", "mailbox full, try later")]
    one = json_out(cli("job", *store_args(target), str(job_id), "--json"))
    assert (one["state"], one["last_error"]) == ("pending", "mailbox full, try later")
    table = cli("jobs", *store_args(target), "emails")
    assert table.returncode == 0, table.stderr
    assert "LAST ERROR" in table.stdout and "mailbox full, try later" in table.stdout, table.stdout
    page = browser_like(create_app(store)).get("/job", params={"queue": "emails", "id": str(job_id)})
    assert page.status_code == 200
    assert "Last error" in page.text and "mailbox full, try later" in page.text, page.text
