"""alkstore.contrib.asgi with real FastAPI (SPEC §28): its TestClient runs the
lifespan in-process, and a real uvicorn process serves it and shuts it down."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

import alkstore
from alkstore.contrib.asgi import Alkstore
from tests.conftest import Target
from tests.workers import wait_for

HELPER = Path(__file__).parent / "helpers" / "asgi_serve.py"


def options(target: Target) -> dict[str, Any]:
    return {} if target.schema is None else {"schema": target.schema}


def make_app(target: Target, **kwargs: Any) -> tuple[FastAPI, Alkstore, alkstore.Tasks]:
    tasks = alkstore.Tasks()

    @tasks.task(queue="greet")
    def greet(name: str) -> str:
        return f"hello {name}"

    alk = Alkstore(target.location, tasks=tasks, **kwargs, **options(target))
    app = FastAPI(lifespan=alk.lifespan)
    app.mount("/jobs", alk.dashboard(allowed_hosts=["testserver"]))

    @app.post("/greet/{name}")
    # Depends as a default: an Annotated[...] naming the local `alk` would not
    # resolve from the string annotation (PEP 563) when FastAPI reads it.
    def post(name: str, store: alkstore.Store = Depends(alk.dependency)) -> dict[str, Any]:  # noqa: B008
        return {"id": greet.enqueue(name), "engine": store.engine}

    return app, alk, tasks


def closed(store: alkstore.Store) -> bool:
    return store.closed


def running(worker: alkstore.Worker) -> bool:
    return worker.running


def http(url: str, method: str = "GET") -> str:
    """The body of a 200 answer (anything else raises)."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=30) as reply:
        return str(reply.read().decode())


def test_the_lifespan_opens_and_closes_the_store(target: Target) -> None:
    app, alk, _ = make_app(target)
    with pytest.raises(RuntimeError, match="lifespan"):
        _ = alk.store
    with TestClient(app) as client:
        store = alk.store
        assert not closed(store) and alk.worker is None, "no worker unless asked"
        job_id = client.post("/greet/ada").json()["id"]
        assert store.queue("greet").get_job(job_id) is not None
        page = client.get("/jobs/")
        assert page.status_code == 200
        assert 'href="/jobs/queue?name=greet"' in page.text, "the dashboard links under its mount"
    assert closed(store)
    with pytest.raises(RuntimeError, match="lifespan"):
        _ = alk.store


def test_the_in_process_worker_runs_jobs_and_stops_with_the_app(target: Target) -> None:
    app, alk, _ = make_app(target, worker=True, concurrency=2)
    with TestClient(app) as client:
        worker = alk.worker
        assert worker is not None
        job_id = client.post("/greet/ada").json()["id"]
        q = alk.store.queue("greet")
        wait_for(lambda: q.get_job(job_id) is None, timeout=30, what="the in-process worker acks the job")
        assert running(worker)
    assert not running(worker) and worker.counts.acked == 1
    assert alk.worker is None


def test_worker_true_needs_a_registry(target: Target) -> None:
    with pytest.raises(TypeError, match="tasks="):
        Alkstore(target.location, worker=True)


def test_a_real_uvicorn_serves_the_app_and_shuts_the_worker_down(target: Target) -> None:
    target.open().close()  # the store exists before the server's own open, as a deployed app's does
    server = subprocess.Popen(
        [sys.executable, str(HELPER), *target.argv()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("port "), line + (server.stderr.read() if server.stderr else "")
        base = f"http://127.0.0.1:{int(line.split()[1])}"
        # The socket listens before uvicorn has run the lifespan: ask until it answers.
        replies: list[str] = []

        def answered() -> bool:
            try:
                replies.append(http(f"{base}/greet/ada", method="POST"))
            except (urllib.error.URLError, ConnectionError):
                return False
            return True

        wait_for(answered, timeout=60, what="uvicorn to answer")
        job_id = json.loads(replies[0])["id"]
        with target.open() as store:
            q = store.queue("greet")
            wait_for(lambda: q.get_job(job_id) is None, timeout=30, what="the server's worker acks the job")
        page = http(f"{base}/jobs/queue?name=greet")
        assert 'href="/jobs/queue?name=greet&amp;state=dead"' in page, "the dashboard links under its mount"
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert "Application shutdown complete" in err, err
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts == {"closed": True, "worker_stopped": True, "acked": 1}, (facts, err)


def test_shutdown_releases_a_job_still_running_past_the_grace(target: Target) -> None:
    """The server stopping loses nothing: the Worker gets its grace (none here),
    then puts the job back, its attempt refunded, before the store closes."""
    started, finish = threading.Event(), threading.Event()
    tasks = alkstore.Tasks()

    @tasks.task(queue="slow")
    def slow() -> str:
        started.set()
        finish.wait(60)
        return "done"

    def make_worker(store: alkstore.Store) -> alkstore.Worker:
        return tasks.worker(1, grace_s=0.0, store=store)

    alk = Alkstore(target.location, tasks=tasks, worker=make_worker, **options(target))
    with TestClient(FastAPI(lifespan=alk.lifespan)):
        job_id = slow.enqueue()
        assert started.wait(60), "the in-process worker started the job"
        worker = alk.worker
        assert worker is not None
    try:
        assert not running(worker) and worker.counts.released == 1
    finally:
        finish.set()
        wait_for(lambda: worker.counts.in_flight == 0, timeout=60, what="the handler's thread returns")
    with target.open() as store:
        job = store.queue("slow").get_job(job_id)
    assert job is not None and (job.state, job.attempts) == ("pending", 0)
