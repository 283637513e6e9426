"""The Postgres SQL enqueue function from the application's own psycopg connection (SPEC §17).

`<schema>.enqueue(queue => ..., payload => ...)` runs in the caller's transaction:
the job exists exactly when that transaction commits, and a LISTENing claimer wakes
then. Its Rust tests (crates/alkstore-postgres/tests/sql_enqueue.rs) pin every
refusal to the Store's message; these pin the Python side of the same contract.
"""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

import alkstore
from tests.conftest import PG_URL, Target
from tests.workers import claimed_after


@pytest.fixture
def engine() -> str:
    """Overrides the conftest's engine parameter: the SQL function is Postgres-only."""
    return "postgres"


def enqueue_sql(target: Target) -> str:
    return f'SELECT "{target.schema}".enqueue(queue => %s, payload => %s, priority => %s)'


def test_the_job_commits_with_the_callers_transaction(store: alkstore.Store, target: Target) -> None:
    q = store.queue("emails")
    orders = target.table("orders")
    with psycopg.connect(PG_URL) as app:
        app.execute(f"CREATE TABLE {orders} (id bigserial PRIMARY KEY, email text)")
        app.commit()
        with app.transaction():
            app.execute(f"INSERT INTO {orders} (email) VALUES ('a@b')")
            row = app.execute(enqueue_sql(target), ("emails", Jsonb({"to": "a@b"}), 5)).fetchone()
            assert row is not None
            job_id = row[0]
            assert q.get_job(job_id) is None, "invisible until the caller commits"
        job = q.claim("w")
        assert job is not None and job.id == job_id
        assert (job.payload, job.priority) == ({"to": "a@b"}, 5)
        assert job.ack()

        with pytest.raises(RuntimeError, match="changed my mind"), app.transaction():
            app.execute(f"INSERT INTO {orders} (email) VALUES ('c@d')")
            app.execute(enqueue_sql(target), ("emails", Jsonb({"to": "c@d"}), 0))
            raise RuntimeError("changed my mind")
    assert q.stats().pending == 0, "rolled back with the order"


def test_a_waiting_claim_wakes_when_the_caller_commits(store: alkstore.Store, target: Target) -> None:
    def commit() -> int:
        with psycopg.connect(PG_URL) as app:  # the block commits on exit
            row = app.execute(enqueue_sql(target), ("emails", Jsonb({}), 0)).fetchone()
        assert row is not None
        return int(row[0])

    job, job_id = claimed_after(target, "emails", commit)
    assert job is not None and job.id == job_id


def test_a_bad_argument_is_a_22023_error_and_writes_nothing(store: alkstore.Store, target: Target) -> None:
    bad = pytest.raises(psycopg.errors.InvalidParameterValue, match="max_attempts must be >= 1, got 0")
    with psycopg.connect(PG_URL, autocommit=True) as app, bad:
        app.execute(
            f'SELECT "{target.schema}".enqueue(queue => %s, payload => %s, max_attempts => 0)',
            ("emails", Jsonb({})),
        )
    assert store.queues() == []


def test_the_function_takes_a_group_key(store: alkstore.Store, target: Target) -> None:
    q = store.queue("sql-groups")
    sql = f'SELECT "{target.schema}".enqueue(queue => %s, payload => %s, group_key => %s)'
    with psycopg.connect(PG_URL, autocommit=True) as app:
        row = app.execute(sql, ("sql-groups", Jsonb({"n": 1}), "tenant-9")).fetchone()
        assert row is not None
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="group_key must be 1-200 characters"):
            app.execute(sql, ("sql-groups", Jsonb({"n": 2}), ""))
    job = q.get_job(int(row[0]))
    assert job is not None and job.group == "tenant-9"
    assert q.stats().pending == 1


def test_the_function_refuses_a_payload_a_worker_cannot_decode(store: alkstore.Store, target: Target) -> None:
    """Issue 44: jsonb takes 3,000 levels and `1e5000` (written back as an
    integer of 5,001 digits); the function refuses both with core's
    messages, SQLSTATE 22023, and writes nothing. At the limits it accepts,
    and the job reads back. (The Rust test
    `the_function_and_core_agree_on_payload_edge_cases` compares the two
    verdicts on a corpus.)"""
    sql = f'SELECT "{target.schema}".enqueue(queue => %s, payload => %s::jsonb)'
    refused = [
        ("[" * 3000 + "]" * 3000, "payload nests arrays and objects deeper than the limit of 500"),
        ('{"args": [1e5000]}', "payload has an integer of 5001 digits, over the limit of 4300"),
        ('{"args": [1' + "0" * 309 + ".5]}", "payload has a number past the float range"),
    ]
    deepest: list[object] = []
    for _ in range(499):
        deepest = [deepest]
    accepted = [
        ("[" * 500 + "]" * 500, deepest),
        # jsonb writes 1e308 in plain notation, an integer: it reads back exactly, as an int.
        ('{"args": [1e308]}', {"args": [10**308]}),
        ("[1" + "0" * 4299 + "]", [10**4299]),
    ]
    with psycopg.connect(PG_URL, autocommit=True) as app:
        for text, message in refused:
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
                app.execute(sql, ("app", text))
        assert store.queues() == [], "nothing written"
        ids = []
        for text, _ in accepted:
            row = app.execute(sql, ("app", text)).fetchone()
            assert row is not None
            ids.append(int(row[0]))
    q = store.queue("app")
    for job_id, (_, value) in zip(ids, accepted, strict=True):
        job = q.get_job(job_id)
        assert job is not None and job.payload == value
