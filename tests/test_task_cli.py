"""``alkstore worker URL --tasks module:attr`` (SPEC §22): a real process runs a
registry's tasks and its periodic tasks' schedules, and SIGTERM stops it
cleanly, on both engines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from alkstore import Store, Tasks
from tests.conftest import Target
from tests.test_cli import HELPERS, cli, helpers_path, store_args


def test_the_worker_command_runs_a_registrys_tasks_and_schedules(target: Target, store: Store) -> None:
    # The producer's side: the same task name, enqueued through a registry of its own.
    producer = Tasks(store)
    shout = producer.task(queue="app", name="tasks_app.shout")(lambda text: text)
    job_id = shout.enqueue("hello")
    argv = [sys.executable, "-m", "alkstore", "worker", *store_args(target), "--tasks", "tasks_app:tasks"]
    env = dict(os.environ, PYTHONPATH=helpers_path())
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=HELPERS
    ) as proc:
        try:
            assert proc.stdout is not None
            seen = []
            for line in proc.stdout:
                seen.append(line.strip())
                if "shouted HELLO" in seen and "tick" in seen:
                    break
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "queues app, ticks" in err
    assert store.queue("app").get_job(job_id) is None, "acked"
    assert [s.name for s in store.schedules()] == ["tick"]


def test_the_worker_command_refuses_what_is_not_a_registry_or_a_store(
    target: Target, tmp_path: object
) -> None:
    r = cli("worker", *store_args(target), "--tasks", "tasks_app:shout")
    assert r.returncode != 0 and "is a Task, not an alkstore.Tasks registry" in r.stderr, r.stderr
    r = cli("worker", f"{tmp_path}/missing.db", "--tasks", "tasks_app:tasks")
    assert r.returncode != 0 and "no such file" in r.stderr, r.stderr
