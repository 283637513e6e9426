"""Interpreter exit while a daemon thread (or an asyncio task) waits in alkstore.

A waiting call runs with the GIL released and takes it back briefly every
~100 ms to let Ctrl-C through. Before the fix, a waiter that did so after the
interpreter had started to finalize panicked, and the panic aborted the
process (SIGABRT) — on every run. Now waiters stay out of a finalizing
interpreter and the process exits normally.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import Target

PRELUDE = """
import asyncio, sys, threading, time
import alkstore

location, schema = sys.argv[1:3]
store = alkstore.open(location, **({} if schema == "-" else {"schema": schema}))
q = store.queue("idle")
waiting = threading.Event()

def in_thread(fn):
    def run():
        waiting.set()
        fn()
    threading.Thread(target=run, daemon=True).start()
"""

SCENARIOS = {
    "claim": 'in_thread(lambda: q.claim("w", timeout=None))',
    "claim_batch": 'in_thread(lambda: q.claim_batch("w", 10, timeout=60))',
    "jobs": 'in_thread(lambda: [j for j in q.jobs("w")])',
    "subscribe": 'in_thread(lambda: [e for e in store.stream("s").subscribe("c")])',
    "stop_wait": "in_thread(lambda: alkstore.StopToken().wait())",
    "aclaim": """
async def claim():
    waiting.set()
    await q.aclaim("w", timeout=None)
in_thread(lambda: asyncio.run(claim()))
""",
    "worker": """
worker = alkstore.Worker(store, concurrency=2)
worker.handler("idle")(lambda payload, job: None)
in_thread(worker.run)
""",
}


def run_and_exit(target: Target, scenario: str) -> subprocess.CompletedProcess[str]:
    script = (
        textwrap.dedent(PRELUDE)
        + textwrap.dedent(SCENARIOS[scenario])
        + textwrap.dedent("""
        waiting.wait(10)
        time.sleep(0.3)  # well inside the wait, past several of its 100 ms slices
        print("exiting", flush=True)
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "RUST_BACKTRACE"}
    return subprocess.run(
        [sys.executable, "-c", script, *target.argv()],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exit_while_a_daemon_thread_waits_is_clean(target: Target, scenario: str) -> None:
    done = run_and_exit(target, scenario)
    assert "panicked" not in done.stderr, done.stderr
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr}"
    assert done.stdout == "exiting\n"


CLOSE_UNDER_WORKER = """
import sys, threading, time
import alkstore

location, schema = sys.argv[1:3]
store = alkstore.open(location, **({} if schema == "-" else {"schema": schema}))
q = store.queue("busy")
q.enqueue_many([{"n": n} for n in range(400)])
worker = alkstore.Worker(store, concurrency=4)
started = threading.Event()

@worker.handler("busy")
def handle(payload, job):
    started.set()
    time.sleep(0.001)  # short jobs: the handler threads are mostly inside an ack or a claim

threading.Thread(target=worker.run, daemon=True).start()
started.wait(10)
store.close()
print("exiting", flush=True)
"""

#: Runs of the close-then-exit scenario per engine in the suite; the fault
#: showed in about 1 run in 10 before the fix (the closing note of issue 23
#: reports a 100-run loop).
CLOSE_RUNS = 12


def test_exit_right_after_closing_the_store_under_a_running_worker_is_clean(target: Target) -> None:
    """Issue 23: handler and heartbeat threads inside an ack, a heartbeat or a
    claim when the interpreter finalized were killed with Rust frames on their
    stacks (SIGABRT, "FATAL: exception not rethrown")."""
    env = {k: v for k, v in os.environ.items() if k != "RUST_BACKTRACE"}
    for run in range(CLOSE_RUNS):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(CLOSE_UNDER_WORKER), *target.argv()],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        assert done.returncode == 0, f"run {run}: exit status {done.returncode}: {done.stderr[-2000:]}"
        assert done.stdout == "exiting\n"
        assert "FATAL" not in done.stderr and "panicked" not in done.stderr, done.stderr[-2000:]
