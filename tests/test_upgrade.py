"""A store written by an older alkstore opens, upgrades and keeps its jobs (SPEC §2).

Migrations 0001 and 0002 are the tables of the released schema version 2, so
a version-2 store is made the way that build left it: a store opened now, its
version row set back to 2, and the pending rows that version 2's retry and
release left holding their last lease.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tests.conftest import Target, pg_admin_connect


def raw(target: Target, statements: Sequence[str]) -> None:
    """Runs SQL on the store's database outside alkstore (the store is closed)."""
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            for sql in statements:
                conn.execute(sql)
        conn.close()
        return
    with pg_admin_connect() as pg:
        for sql in statements:
            pg.execute(sql.replace("__alkstore_", f'"{target.schema}".'))


def version(target: Target) -> str:
    if target.engine == "sqlite":
        with sqlite3.connect(target.location) as conn:
            row = conn.execute("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").fetchone()
        conn.close()
    else:
        with pg_admin_connect() as pg:
            row = pg.execute(
                f"SELECT value FROM \"{target.schema}\".meta WHERE key = 'schema_version'"
            ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_version_2_store_upgrades_and_keeps_its_jobs(target: Target) -> None:
    with target.open() as store:
        q = store.queue("q", visibility_timeout_s=300, max_attempts=5)
        retried, released, leased, fresh = q.enqueue_many([{"n": n} for n in range(4)])
        handles = [q.claim("w") for _ in range(3)]
        assert [h.id for h in handles if h is not None] == [retried, released, leased]
        assert handles[0] is not None and handles[0].retry("again", delay=0)
        assert handles[1] is not None and handles[1].release()
    raw(
        target,
        [
            # What version 2's retry and release left on the row.
            "UPDATE __alkstore_jobs SET worker_id = 'w', deadline = claimed_at + 300 "
            f"WHERE id IN ({retried}, {released})",
            "UPDATE __alkstore_meta SET value = '2' WHERE key = 'schema_version'",
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
