"""The framework integrations under a real pre-fork server (SPEC §28, ADR 0031).

``gunicorn --preload`` loads the application once, in its master, and forks
the workers from it; uWSGI does the same by default. An integration that
opened its store while the application loaded hands every worker the
master's store, which a Postgres store refuses in a forked process and a
SQLite one must not share. Each test serves one of the integrations' apps from
a real gunicorn with several workers, sends real HTTP requests that several
workers serve at once, and checks the jobs they enqueued are in the store, on
both engines.

Flask and Django run on gunicorn's default sync workers: each serves one
request at a time, and every request is held until all of them have enqueued,
so ``WORKERS`` requests at once are ``WORKERS`` different processes. The ASGI
integration runs on ``uvicorn_worker.UvicornWorker`` with ``--preload``: that
is the pre-fork case for ASGI (the module and ``Alkstore(...)`` load in the
master, the workers fork from it). ``uvicorn --workers N`` is not: it starts
its workers with the ``spawn`` method, fresh interpreters that inherit nothing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import alkstore
from tests.conftest import Target
from tests.test_contrib_django import PROJECT, location, manage, project_env

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 3
LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+)")

# The forked workers run in other processes; this one only talks HTTP to them.


@contextmanager
def gunicorn(app: str, env: dict[str, str], cwd: Path, *options: str) -> Iterator[str]:
    """A real ``gunicorn --preload`` with ``WORKERS`` workers serving ``app``:
    its base URL. Stopped with SIGTERM after the block, and it must exit cleanly."""
    command = [
        sys.executable, "-m", "gunicorn", "--preload", "--workers", str(WORKERS),
        "--bind", "127.0.0.1:0", "--timeout", "120", "--graceful-timeout", "30", *options, app,
    ]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert server.stderr is not None
    seen: list[str] = []
    port = None
    while port is None:
        line = server.stderr.readline()
        if not line:  # it exited before listening
            server.wait(timeout=60)
            pytest.fail("gunicorn did not start:\n" + "".join(seen))
        seen.append(line)
        found = LISTENING.search(line)
        port = found.group(1) if found else None
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        _, rest = server.communicate(timeout=90)
    log = "".join(seen) + rest
    assert server.returncode == 0, log
    assert "Traceback" not in log, log


def post(url: str) -> dict[str, Any]:
    request = urllib.request.Request(url, method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=120) as reply:
        assert reply.status == 200
        body = json.loads(reply.read())
    assert isinstance(body, dict)
    return body


def post_at_once(base: str, n: int) -> list[dict[str, Any]]:
    """``n`` requests at once, each held by its worker until all ``n`` have enqueued."""
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda i: post(f"{base}/enqueue/{i}?of={n}"), range(n)))


def check_replies(replies: list[dict[str, Any]], workers: int) -> None:
    pids = {r["pid"] for r in replies}
    assert len(pids) == workers, f"served by {len(pids)} workers: {replies}"
    assert all(r["loaded_in"] not in pids for r in replies), "the app loaded in the master, not a worker"
    assert all(r["own_store"] for r in replies), f"a worker used the master's store: {replies}"


def check_jobs(store: alkstore.Store, queue: str, replies: list[dict[str, Any]]) -> None:
    q = store.queue(queue)
    for r in replies:
        job = q.get_job(r["job"])
        assert job is not None and job.state == "pending", (r, job)
    assert q.stats().pending == len(replies)


def app_env(target: Target) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ALK_PREFORK_LOCATION": target.location,
        "ALK_PREFORK_SCHEMA": target.schema or "-",
    }


def test_flask_under_gunicorn_preload(target: Target) -> None:
    """``Alkstore(app)`` opened the store in the master; each worker opens its own
    at its first request and its tasks enqueue there."""
    target.open().close()  # the store exists, as a deployed application's does
    with gunicorn("tests.contrib.prefork_flask:app", app_env(target), ROOT) as base:
        replies = post_at_once(base, WORKERS)
    check_replies(replies, WORKERS)
    with target.open() as store:
        check_jobs(store, "prefork", replies)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_django_under_gunicorn_preload(engine: str, tmp_path: Path) -> None:
    """The project's ``store()`` used while the WSGI application loaded (in the
    master); each worker's ``store()`` is its own, its tasks enqueue on Django's
    connection in ``atomic()``, and the store's own connection reads them."""
    with project_env(engine, tmp_path) as env:
        migrated = manage(env, "migrate", "--noinput")
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        served = {**env, "PYTHONPATH": str(ROOT)}
        with gunicorn("djproject.wsgi:application", served, PROJECT) as base:
            replies = post_at_once(base, WORKERS)
        check_replies(replies, WORKERS)
        with alkstore.open(location(env)) as s:
            check_jobs(s, "ship", replies)


def test_asgi_under_gunicorn_preload_with_uvicorn_workers(target: Target) -> None:
    """The ASGI integration opens its store in the lifespan, which each forked
    worker runs for itself: several workers serve, each on its own store."""
    target.open().close()
    pids: dict[int, list[dict[str, Any]]] = {}
    worker_class = ("--worker-class", "uvicorn_worker.UvicornWorker")
    with gunicorn("tests.contrib.prefork_asgi:app", app_env(target), ROOT, *worker_class) as base:
        # An async worker serves many requests at once, so nothing pins a
        # request to a worker: ask until two of them have answered.
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:
            with ThreadPoolExecutor(8) as pool:
                for r in pool.map(lambda i: post(f"{base}/enqueue/{i}"), range(8)):
                    pids.setdefault(r["pid"], []).append(r)
    replies = [r for rs in pids.values() for r in rs]
    assert len(pids) >= 2, f"one worker answered every request: {list(pids)}"
    assert all(r["loaded_in"] not in pids for r in replies)
    with target.open() as store:
        check_jobs(store, "prefork", replies)
