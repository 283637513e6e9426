"""Many machines (SPEC §26): a store behind PgBouncer in transaction mode, wakes on a
direct session or by polling, and a bounded pool that an idle store gives back.

The queue, transaction and worker modules run whole through the pooler too (the
`pgbouncer` marker, tests/conftest.py); these are the behaviours only a pooler or a
connection budget has. The 64-process drain is tests/test_fleet.py.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import alkstore
from tests.conftest import (
    PG_URL,
    drop_schema,
    new_schema_name,
    pg_admin_connect,
    require_pgbouncer,
    require_postgres,
)
from tests.pgbouncer import PgBouncer
from tests.test_cli import HELPERS, helpers_path
from tests.workers import wait_for


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = new_schema_name()
    yield name
    drop_schema(name)


def _with_app(url: str, app: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={app}"


def _sessions(app: str) -> int:
    """How many server sessions carry `app` as their application_name."""
    with pg_admin_connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [app]
        ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_behind_a_pooler_without_listen_url_it_polls_and_says_so_once(
    pgbouncer: PgBouncer, schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="alkstore"):
        consumer = alkstore.open(pgbouncer.url(), schema=schema, statements="unnamed", poll_interval_s=0.1)
    notes = [r for r in caplog.records if r.name == "alkstore"]
    assert len(notes) == 1, notes
    assert "listen_url" in notes[0].getMessage() and "poll" in notes[0].getMessage()
    producer = alkstore.open(pgbouncer.url(), schema=schema, statements="unnamed", listen=False)
    try:
        started = threading.Event()

        def later() -> None:
            started.wait()
            producer.queue("q").enqueue({"n": 1})

        t = threading.Thread(target=later)
        t.start()
        started.set()
        # No LISTEN anywhere: only the poll can find the job.
        job = consumer.queue("q").claim("w", timeout=60)
        t.join()
        assert job is not None and job.payload == {"n": 1}
        assert job.ack()
        # Once, not per wait.
        assert len([r for r in caplog.records if r.name == "alkstore"]) == 1
    finally:
        producer.close()
        consumer.close()


def test_listen_url_wakes_a_pooled_store_at_commit(pgbouncer: PgBouncer, schema: str) -> None:
    # A poll an hour apart: a claim that returns its job was woken by the commit.
    consumer = alkstore.open(
        pgbouncer.url(), schema=schema, statements="unnamed", listen_url=PG_URL, poll_interval_s=3600
    )
    producer = alkstore.open(pgbouncer.url(), schema=schema, statements="unnamed", listen=False)
    try:
        q = consumer.queue("q")
        assert q.claim("w") is None  # the LISTEN session is up before the enqueue
        t = threading.Timer(0.2, lambda: producer.queue("q").enqueue({"n": 2}))
        t.start()
        job = q.claim("w", timeout=600)
        t.join()
        assert job is not None and job.payload == {"n": 2}
        assert job.ack()
    finally:
        producer.close()
        consumer.close()


def test_a_pooled_store_uses_no_session_state(pgbouncer: PgBouncer, schema: str) -> None:
    """Behind the pooler with one server connection, two stores' unnamed
    statements interleave on the same session; the server keeps no prepared
    statement of theirs afterwards."""
    require_pgbouncer()
    bouncer = PgBouncer(PG_URL, pool_size=1)
    app = "alk_" + uuid.uuid4().hex[:8]
    try:
        url = _with_app(bouncer.url(), app)
        a = alkstore.open(url, schema=schema, statements="unnamed", listen=False)
        b = alkstore.open(url, schema=schema, statements="unnamed", listen=False)
        try:
            for i in range(20):
                (a if i % 2 else b).queue("q").enqueue({"i": i})
            seen = []
            for i in range(20):
                job = (b if i % 2 else a).queue("q").claim("w")
                assert job is not None
                seen.append(job.payload["i"])
                assert job.ack()
            assert sorted(seen) == list(range(20))
            with a.transaction() as tx:
                a.queue("q").enqueue({"i": 99}, tx=tx)
                tx.execute("SELECT 1")
            job = b.queue("q").claim("w")
            assert job is not None and job.payload == {"i": 99} and job.ack()
        finally:
            a.close()
            b.close()
        # The one server session the pooler kept holds no statement of ours.
        import psycopg

        with psycopg.connect(bouncer.url(), autocommit=True, prepare_threshold=None) as conn:
            row = conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()
        assert row is not None and row[0] == 0
    finally:
        bouncer.close()


def test_an_idle_store_holds_one_connection_plus_listen(schema: str) -> None:
    app = "alk_" + uuid.uuid4().hex[:8]
    store = alkstore.open(_with_app(PG_URL, app), schema=schema, max_connections=4)
    try:
        q = store.queue("q")
        q.enqueue({"n": 0})
        assert q.claim("w", timeout=0.1) is not None  # starts the LISTEN session
        # Four transactions open at once: the pool grows to its bound.
        barrier = threading.Barrier(5)

        def hold() -> None:
            with store.transaction() as tx:
                tx.execute("SELECT 1")
                barrier.wait(60)
                barrier.wait(60)

        threads = [threading.Thread(target=hold) for _ in range(4)]
        for t in threads:
            t.start()
        barrier.wait(60)
        assert _sessions(app) == 4 + 1  # max_connections pooled, plus LISTEN
        barrier.wait(60)
        for t in threads:
            t.join()
        # Idle: the reaper closes all but one pooled connection (after 5 s unused).
        wait_for(lambda: _sessions(app) <= 2, timeout=60, what="the reaper to close idle connections")
        assert _sessions(app) == 1 + 1
        job = q.claim("w")  # the one kept is ready for the next call
        assert job is None
    finally:
        store.close()


def test_max_connections_bounds_the_pool(schema: str) -> None:
    app = "alk_" + uuid.uuid4().hex[:8]
    store = alkstore.open(_with_app(PG_URL, app), schema=schema, max_connections=2, listen=False)
    try:
        q = store.queue("q")
        q.enqueue_many([{"n": i} for i in range(200)])
        done: list[int] = []
        lock = threading.Lock()

        def drain() -> None:
            while (job := q.claim("w")) is not None:
                assert job.ack()
                with lock:
                    done.append(job.payload["n"])

        peak = 0
        threads = [threading.Thread(target=drain) for _ in range(8)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, _sessions(app))
        for t in threads:
            t.join()
        assert sorted(done) == list(range(200))
        assert peak <= 2
    finally:
        store.close()


def test_named_statements_behind_the_pooler_fail_with_a_hint(schema: str) -> None:
    """The failure `statements="unnamed"` exists for: two processes' default
    (named) statements meet on the pooler's one server session. Both number
    their statements from s0, so the second finds the first's name taken
    (SQLSTATE 42P05); the error says what to do."""
    alkstore.open(PG_URL, schema=schema).close()  # both opens below then run the same statements
    require_pgbouncer()
    bouncer = PgBouncer(PG_URL, pool_size=1)
    code = (
        "import sys, alkstore\n"
        "s = alkstore.open(sys.argv[1], schema=sys.argv[2], listen=False)\n"
        "s.queue('q').enqueue({'n': 1})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.readline()\n"
    )
    argv = [sys.executable, "-c", code, bouncer.url(), schema]
    try:
        with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as first:
            assert first.stdout is not None and first.stdin is not None
            # Its enqueue statement stays prepared on the one server session.
            assert first.stdout.readline().strip() == "ready"
            second = subprocess.run(argv, input="\n", capture_output=True, text=True, timeout=60)
            first.stdin.write("\n")
            first.stdin.flush()
        assert second.returncode != 0
        assert "42P05" in second.stderr and 'statements="unnamed"' in second.stderr, second.stderr[-2000:]
    finally:
        bouncer.close()


# --- the command line through the pooler (issue 43) ------------------------------

# What a worker process does first, as the reproduction: open the store by
# keyword with `statements="unnamed"`, then claim and ack a job.
_WORKER_START = (
    "import sys, alkstore\n"
    "with alkstore.open(sys.argv[1], schema=sys.argv[2], statements='unnamed', listen=False) as s:\n"
    "    q = s.queue('q')\n"
    "    q.enqueue({'n': 1})\n"
    "    job = q.claim('w')\n"
    "    assert job is not None and job.ack()\n"
    "print('started', flush=True)\n"
)


def _start_worker(url: str, schema: str) -> None:
    r = subprocess.run(
        [sys.executable, "-c", _WORKER_START, url, schema], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "started", r.stderr[-3000:]


def _prepared(url: str) -> list[str]:
    """The prepared statements of the server session a one-session pooler at `url` holds."""
    import psycopg

    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        return sorted(str(row[0]) for row in conn.execute("SELECT name FROM pg_prepared_statements"))


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alkstore", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_the_command_line_through_the_pooler_between_two_worker_starts(schema: str) -> None:
    """On the pooler's one server session: a worker starts; the command line runs,
    first as it always could (named statements, which it leaves in the session),
    then told `?statements=unnamed` in its URL, run after run; a worker starts again
    in the session that still holds the named run's statements, and adds none."""
    require_pgbouncer()
    bouncer = PgBouncer(PG_URL, pool_size=1)
    try:
        url = bouncer.url()
        _start_worker(url, schema)
        first = _cli("stats", url, "--schema", schema)
        assert first.returncode == 0, first.stderr
        # Its statements are still in the session: a second named run meets them,
        # and the hint says how the command line avoids that.
        second = _cli("jobs", url, "q", "--schema", schema)
        assert second.returncode == 1, second.stderr
        assert "42P05" in second.stderr and "?statements=unnamed" in second.stderr, second.stderr
        pooled = f"{url}?statements=unnamed"
        for _ in range(3):
            for args in (["stats"], ["jobs", "q"], ["jobs", "q", "--dead"], ["requeue", "q", "--all"]):
                r = _cli(args[0], pooled, *args[1:], "--schema", schema)
                assert r.returncode == 0, (args, r.stderr)
            r = _cli("stats", "--schema", schema, env=dict(os.environ, ALKSTORE_URL=pooled))
            assert r.returncode == 0, r.stderr
        # The second start meets named statements in the session: the first run's, or,
        # when the pooler replaced the session after the failed run's disconnect (it
        # does when the client leaves before the server's reply is read), a new run's.
        if not _prepared(url):
            r = _cli("stats", url, "--schema", schema)
            assert r.returncode == 0, r.stderr
        names = _prepared(url)
        assert names, "the session holds named statements (the case under test)"
        _start_worker(url, schema)
        assert _prepared(url) == names, "the worker added none"
    finally:
        bouncer.close()


def _named_runs_on_both_sessions(url: str, schema: str) -> None:
    """A named command-line run on each server session of a two-session pooler,
    each leaving its statements there: while one session is held by an open
    transaction, the run can only get the other."""
    import psycopg

    def hold() -> psycopg.Connection[tuple[object, ...]]:
        conn = psycopg.connect(url, prepare_threshold=None)
        conn.execute("SELECT 1")  # a transaction is open: the session is this client's
        return conn

    first = hold()
    r = _cli("stats", url, "--schema", schema)
    assert r.returncode == 0, r.stderr
    second = hold()  # the session the run used, the only one free
    first.rollback()
    r = _cli("stats", url, "--schema", schema)  # now on the first session
    assert r.returncode == 0, r.stderr
    second.rollback()
    first.close()
    second.close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_64_pooled_worker_processes_start_cleanly_after_command_line_runs(
    schema: str, tmp_path: Path
) -> None:
    """64 `alkstore worker` processes, each given its store by ALKSTORE_URL with
    `?statements=unnamed`, start through a two-session pooler whose sessions hold
    the named statements of earlier command-line runs, and drain the queue."""
    require_pgbouncer()
    n = 64
    with alkstore.open(PG_URL, schema=schema) as store:
        shout = alkstore.Tasks(store).task(queue="app", name="tasks_app.shout")(lambda text: text)
        for i in range(n):
            shout.enqueue(f"job{i}")
        bouncer = PgBouncer(PG_URL, pool_size=2)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            url = bouncer.url()
            _named_runs_on_both_sessions(url, schema)
            pooled = f"{url}?statements=unnamed&listen=false&poll_interval_s=0.5"
            for args in (["stats"], ["jobs", "app"], ["schedules"]):
                r = _cli(args[0], pooled, *args[1:], "--schema", schema)
                assert r.returncode == 0, (args, r.stderr)
            env = dict(os.environ, ALKSTORE_URL=pooled, PYTHONPATH=helpers_path())
            argv = [sys.executable, "-m", "alkstore", "worker", "--tasks", "tasks_app:tasks"]
            argv += ["--schema", schema, "--queues", "app", "--no-schedules", "--concurrency", "1"]
            logs = [tmp_path / f"worker{i}.err" for i in range(n)]
            for log in logs:
                with open(log, "wb") as err:
                    procs.append(
                        subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=HELPERS)
                    )

            def started() -> bool:
                dead = [p.args for p in procs if p.poll() is not None]
                assert not dead, [
                    log.read_text()[-2000:]
                    for log, p in zip(logs, procs, strict=True)
                    if p.poll() is not None
                ][:3]
                return all(b"queues app" in log.read_bytes() for log in logs)

            wait_for(started, timeout=300, what="64 workers to open their store and start")
            app = store.queue("app")
            wait_for(
                lambda: (app.stats().pending, app.stats().processing) == (0, 0),
                timeout=300,
                what="the workers to drain the queue",
            )
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            codes = [p.wait(60) for p in procs]
            bouncer.close()
        texts = [log.read_text() for log in logs]
        assert codes == [0] * n, [t[-2000:] for t, c in zip(texts, codes, strict=True) if c != 0][:3]
        for text in texts:
            assert "Traceback" not in text and "rror" not in text, text[-2000:]
        assert store.queue("app").stats().dead == 0
