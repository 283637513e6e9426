"""A store written by an older alkstore opens, upgrades and keeps its jobs (SPEC §2).

Two ways to an older store. Version 2 is made the way that build left it: a
store opened now, the schema that later migrations added taken away again, its
version row set back to 2, and the pending rows that version 2's retry and
release left holding their last lease. The store of commit 7a91874 (the main
branch before unique jobs and pause) is a file that build wrote:
tests/fixtures/make_upgrade_fixtures.py says how.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import alkstore
from tests.conftest import PG_URL, Target, drop_schema, new_schema_name, pg_admin_connect, require_postgres
from tests.rewind import rewind, version

FIXTURES = Path(__file__).parent / "fixtures"
_CRATES = Path(__file__).parent.parent / "crates"


def latest(engine: str) -> str:
    """The schema version this build writes: its engine's last migration number."""
    migrations = _CRATES / f"alkstore-{engine}" / "src" / "migrations"
    return str(max(int(p.name[:4]) for p in migrations.glob("*.sql")))


def test_a_version_2_store_upgrades_and_keeps_its_jobs(target: Target) -> None:
    with target.open() as store:
        q = store.queue("q", visibility_timeout_s=300, max_attempts=5)
        retried, released, leased, fresh = q.enqueue_many([{"n": n} for n in range(4)])
        handles = [q.claim("w") for _ in range(3)]
        assert [h.id for h in handles if h is not None] == [retried, released, leased]
        assert handles[0] is not None and handles[0].retry("again", delay=0)
        assert handles[1] is not None and handles[1].release()
    rewind(
        target,
        2,
        # What version 2's retry and release left on the row.
        then=[
            "UPDATE __alkstore_jobs SET worker_id = 'w', deadline = claimed_at + 300 "
            f"WHERE id IN ({retried}, {released})"
        ],
    )
    assert version(target) == "2"

    with target.open() as store:
        assert version(target) != "2"
        q = store.queue("q", visibility_timeout_s=300, max_attempts=5)
        jobs = {j.id: j for j in q.live_jobs()}
        assert sorted(jobs) == [retried, released, leased, fresh]
        for job_id in (retried, released):
            job = jobs[job_id]
            assert (job.state, job.worker_id, job.deadline) == ("pending", None, None)
            assert job.claimed_at is not None
        assert (jobs[leased].state, jobs[leased].worker_id) == ("processing", "w")
        assert jobs[leased].deadline is not None
        assert jobs[fresh].claimed_at is None
        assert {j.payload["n"] for j in jobs.values()} == {0, 1, 2, 3}
        claimed = [h.id for h in q.claim_batch("w2", 10)]
        assert sorted(claimed) == sorted([retried, released, fresh])


def test_a_sqlite_store_of_the_previous_main_upgrades_and_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    path.write_bytes((FIXTURES / "store-7a91874.db").read_bytes())
    with alkstore.open(str(path)) as store:
        check_upgraded(store)
    target = Target("sqlite", str(path), None)
    assert version(target) == latest("sqlite")


def test_a_postgres_store_of_the_previous_main_upgrades_and_keeps_everything() -> None:
    require_postgres()
    schema = new_schema_name()
    dump = (FIXTURES / "store-7a91874.pg.sql").read_text(encoding="utf-8")
    try:
        with pg_admin_connect() as pg:
            pg.execute(dump.replace("upgrade_fixture", schema).encode())
        with alkstore.open(PG_URL, schema=schema) as store:
            check_upgraded(store)
        assert version(Target("postgres", PG_URL, schema)) == latest("postgres")
    finally:
        drop_schema(schema)


def check_upgraded(store: alkstore.Store) -> None:
    """The fixture's rows are all there, and what the new schema adds works on them."""
    q = store.queue("emails", max_attempts=1)
    live = {j.payload["to"]: j for j in q.live_jobs()}
    assert sorted(live) == ["a@x", "b@x", "held@x", "later@x"]
    assert (live["held@x"].state, live["held@x"].worker_id) == ("processing", "w")
    assert all(j.unique_key is None for j in live.values())
    [dead] = q.dead_jobs()
    assert (dead.payload, dead.last_error, dead.unique_key) == ({"to": "dead@x"}, "boom", None)
    # Migration 0008 registered the queues the old rows name: they stay listed once emptied.
    assert "emails" in store.queues()
    events = store.stream("orders")
    assert [(e.offset, e.key, e.payload) for e in events.read()] == [
        (1, None, {"order": 1}),
        (2, "c-7", {"order": 2}),
    ]
    assert events.publish({"order": 3}) == 3, "offsets go on from the old head"

    assert q.enqueue({"to": "k"}, unique_key="k") == q.enqueue({"to": "k2"}, unique_key="k")
    assert q.enqueue({}) > max(j.id for j in live.values()), "ids go on past the old ones"
    q.pause()
    assert q.claim("w2") is None and q.stats().paused
    q.resume()
    # An old job can be a parent (migration 0012): its ack releases the child.
    child = store.queue("after-old").enqueue({}, after=[live["b@x"].id])
    assert store.queue("after-old").stats().waiting == 1
    claimed = q.claim("w2")
    assert claimed is not None and claimed.payload == {"to": "b@x"}, "priority 5 first"
    assert claimed.ack(result={"sent": True})
    released = store.queue("after-old").claim("w2")
    assert released is not None and released.id == child
    assert released.parent_results()[live["b@x"].id] == {"sent": True}
    assert [(c.queue, c.count) for c in store.completions()] == [("emails", 1)]
    # The fixture's lease on "held@x" ended long ago with its one attempt spent:
    # that claim's exhaustion step moved it to dead letters.
    held = q.get_job(live["held@x"].id)
    assert held is not None and (held.state, held.last_error) == ("dead", "attempts exhausted")
    assert q.requeue_dead() == sorted([dead.id, held.id])
    assert q.stats().dead == 0


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_the_fixtures_are_older_than_this_schema(engine: str) -> None:
    """The upgrade tests above mean something only while their stores predate migration 0006."""
    if engine == "sqlite":
        with sqlite3.connect(FIXTURES / "store-7a91874.db") as c:
            row = c.execute("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").fetchone()
        c.close()
        assert row == ("4",)
    else:
        assert "VALUES ('schema_version', '5')" in (FIXTURES / "store-7a91874.pg.sql").read_text(
            encoding="utf-8"
        )
