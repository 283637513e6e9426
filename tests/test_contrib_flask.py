"""alkstore.contrib.flask with real Flask (SPEC §28): the extension's store in
a request, and ``flask alkstore worker`` as a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from flask import Flask

from alkstore.contrib.flask import Alkstore
from tests.conftest import Target
from tests.contrib.flaskapp import create_app
from tests.workers import wait_for

ROOT = Path(__file__).resolve().parent.parent


def test_the_extension_opens_the_store_and_binds_the_tasks(target: Target) -> None:
    app = create_app(target.location, target.schema)
    alk = app.extensions["alkstore"]
    reply = app.test_client().post("/orders/7")
    assert reply.status_code == 200, reply.text
    job_id = reply.get_json()["job"]
    job = alk.store.queue("orders").get_job(job_id)
    assert job is not None and job.payload["args"] == [7]
    assert reply.get_json()["engine"] == target.engine
    alk.store.close()


def test_the_extension_needs_a_url() -> None:
    with pytest.raises(RuntimeError, match="ALKSTORE_URL"):
        Alkstore(Flask(__name__))


def test_flask_alkstore_worker_runs_the_jobs(target: Target) -> None:
    app = create_app(target.location, target.schema)
    job_id = app.test_client().post("/orders/8").get_json()["job"]
    store = app.extensions["alkstore"].store
    env = {**os.environ, "ALK_FLASK_LOCATION": target.location, "ALK_FLASK_SCHEMA": target.schema or "-"}
    worker = subprocess.Popen(
        [sys.executable, "-m", "flask", "--app", "tests.contrib.flaskapp:create_app", "alkstore", "worker",
         "--status-every", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        q = store.queue("orders")
        wait_for(
            lambda: q.get_job(job_id) is None or worker.poll() is not None, timeout=60, what="the job runs"
        )
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
        store.close()
    assert worker.returncode == 0, err
    assert "stopped: 1 acked" in err, err
