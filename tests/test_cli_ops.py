"""The commands that operate a queue (SPEC §18): pause, resume, cancel, requeue, purge.

Run as a user would, `python -m alkstore ...` in a subprocess, on both engines;
what they did is checked through the store.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from alkstore import Job, Queue, Store
from tests.conftest import Target
from tests.planted import raw
from tests.test_cli import cli, helpers_path, json_out, store_args

PROGRESS = re.compile(r"^(requeued|purged) (\d+) \(total (\d+)\)")


def make_dead(q: Queue, n: int) -> list[int]:
    """``n`` jobs of ``q`` (which must have max_attempts=1) claimed and failed, so dead; their ids."""
    before = q.stats().dead
    ids: list[int] = []
    for start in range(0, n, 1000):
        ids.extend(q.enqueue_many([{"n": i} for i in range(start, min(n, start + 1000))]))
    while handles := q.claim_batch("cli-ops", 1000):
        for h in handles:
            assert h.fail("boom")
    assert q.stats().dead == before + n
    return ids


def every_job(q: Queue) -> tuple[list[Job], list[Job]]:
    """All live and all dead jobs of ``q``, paging by id."""

    def walk(read: str) -> list[Job]:
        found: list[Job] = []
        while page := getattr(q, read)(limit=1000, before_id=found[-1].id if found else None):
            found.extend(page)
        return found

    return walk("live_jobs"), walk("dead_jobs")


def totals(stderr: str) -> list[int]:
    """The running totals of the progress lines."""
    return [int(m.group(3)) for m in map(PROGRESS.match, stderr.splitlines()) if m]


# -- pause / resume ----------------------------------------------------------------


def interrupted_after(argv: list[str], done: int) -> tuple[int, str, str]:
    """Runs the command, sends SIGINT once its progress on stderr reports `done`
    jobs, and returns its exit status, stdout and whole stderr."""
    env = dict(os.environ, PYTHONPATH=helpers_path())
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stderr is not None
            seen = []
            for line in proc.stderr:
                seen.append(line)
                if totals(line) and totals(line)[0] >= done:
                    break
            proc.send_signal(signal.SIGINT)
            # Not communicate(): it reads the pipe itself and would miss what the
            # line iteration above has already buffered.
            rest = proc.stderr.read()
            assert proc.stdout is not None
            out = proc.stdout.read()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.returncode, out, "".join(seen) + rest


def test_pause_and_resume_are_seen_by_every_handle(target: Target, store: Store) -> None:
    q = store.queue("emails")
    q.enqueue({"to": "ada"})
    paused = cli("pause", *store_args(target), "emails", "--json")
    assert json_out(paused) == {"queue": "emails", "paused": True, "was_paused": False, "seen": True}
    assert paused.stderr == "", "a queue with jobs is paused without a warning"
    assert q.is_paused() and q.claim("w") is None
    again = cli("pause", *store_args(target), "emails")
    assert again.returncode == 0 and again.stdout.strip() == "'emails' was already paused"

    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert [(r["queue"], r["pending"], r["paused"]) for r in rows] == [("emails", 1, True)]
    table = cli("stats", *store_args(target)).stdout.splitlines()
    assert table[0].split()[-2:] == ["PAUSED", "LIMITS"] and table[1].split()[-2:] == ["yes", "-"]

    resumed = cli("resume", *store_args(target), "emails")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "resumed 'emails': workers claim its jobs again"
    assert not q.is_paused()
    job = q.claim("w")
    assert job is not None and job.payload == {"to": "ada"}
    assert json_out(cli("resume", *store_args(target), "emails", "--json"))["was_paused"] is False


def test_a_queue_with_no_jobs_can_be_paused_and_is_listed(target: Target, store: Store) -> None:
    r = cli("pause", *store_args(target), "later", "--create")
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", "--create: meant, so no warning"
    assert r.stdout.startswith("paused 'later': workers claim none of its jobs")
    assert store.queues() == ["later"] and store.queue("later").is_paused()
    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert rows == [
        {
            "queue": "later",
            "pending": 0,
            "waiting": 0,
            "scheduled": 0,
            "processing": 0,
            "dead": 0,
            "oldest_ready_age_s": None,
            "paused": True,
            "limits": dict.fromkeys(("concurrency", "rate_count", "rate_period_s", "group_concurrency")),
        }
    ]


def test_pausing_a_queue_that_never_had_a_job_warns_and_still_pauses(target: Target, store: Store) -> None:
    """Issue 23: a typo (`invoicse`) used to pause a queue nobody uses, silently."""
    store.queue("invoices").enqueue({"n": 1})
    r = cli("pause", *store_args(target), "invoicse")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == (
        "warning: 'invoicse' has never had a job in this store (its queues: 'invoices'); "
        "paused it anyway, for jobs enqueued later (--create says this is meant)"
    )
    assert store.queue("invoicse").is_paused(), "the ability is kept (SPEC §18)"
    assert json_out(cli("pause", *store_args(target), "other", "--json"))["seen"] is False


def test_stats_keep_a_queue_whose_jobs_are_all_acked(target: Target, store: Store) -> None:
    """Issue 23: a used queue kept reporting zeros, instead of "no queues yet"."""
    q = store.queue("emails")
    q.enqueue({"n": 1})
    job = q.claim("w")
    assert job is not None and job.ack()
    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert [(r["queue"], r["pending"], r["processing"], r["dead"]) for r in rows] == [("emails", 0, 0, 0)]
    assert "no queues yet" not in cli("stats", *store_args(target)).stdout


def test_an_outbox_queue_is_paused_by_its_backing_name(target: Target, store: Store) -> None:
    store.outbox("webhooks").enqueue({"event": "a"})
    name = "__alkstore_outbox:webhooks"
    assert json_out(cli("pause", *store_args(target), name, "--json"))["paused"] is True
    rows = json_out(cli("stats", *store_args(target), "--json"))
    assert [(r["queue"], r["paused"]) for r in rows] == [(name, True)]


# -- cancel ------------------------------------------------------------------------


def test_cancel_deletes_pending_and_processing_jobs_and_skips_the_rest(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    [dead] = make_dead(q, 1)
    pending, processing, kept = q.enqueue_many(["a", "b", "c"])
    claimed = q.claim_batch("w", 2)
    assert [h.id for h in claimed] == [pending, processing]
    assert claimed[0].release()
    args = [*store_args(target), "q", "--id", str(pending), str(processing), str(dead), "--id", "999999"]
    out = json_out(cli("cancel", *args, "--json"))
    assert out == {
        "queue": "q",
        "cancelled": 2,
        "skipped": 2,
        "pages": 4,
        "interrupted": False,
        "in_doubt": 0,
        "cancelled_ids": [pending, processing],
        "skipped_ids": [dead, 999999],
    }
    assert q.get_job(pending) is None and q.get_job(processing) is None
    assert q.stats().pending == 1 and q.stats().dead == 1
    assert not claimed[1].ack()  # the holder of a cancelled job finds it gone

    r = cli("cancel", *store_args(target), "q", "--id", str(kept), str(kept))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "cancelled 1 job(s) of 'q'"
    r = cli("cancel", *store_args(target), "q", "--id", str(kept))
    assert r.returncode == 0  # nothing to cancel is not an error, as in the API
    assert (
        r.stdout.strip()
        == f"cancelled 0 job(s) of 'q'; skipped id(s) {kept} (not pending or processing in 'q')"
    )


# -- purge -------------------------------------------------------------------------


def test_purge_by_id_deletes_only_dead_jobs_of_the_queue(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    first, second, third = make_dead(q, 3)
    [other] = make_dead(store.queue("other", max_attempts=1), 1)
    live = q.enqueue("live")
    args = [*store_args(target), "q", "--id", str(first), str(third), str(live), str(other), "--json"]
    out = json_out(cli("purge", *args))
    assert out == {"queue": "q", "purged": 2, "skipped": 2, "pages": 1, "interrupted": False, "in_doubt": 0}
    assert [j.id for j in q.dead_jobs()] == [second]
    assert q.get_job(live) is not None and store.queue("other").stats().dead == 1
    r = cli("purge", *store_args(target), "q", "--id", str(second))
    assert r.returncode == 0 and r.stdout.strip() == "purged 1 dead job(s) of 'q'"


def test_purge_older_than_keeps_the_recent_dead(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    old_a, old_b, recent = make_dead(q, 3)
    raw(target, [f"UPDATE __alkstore_dead SET died_at = died_at - 7200 WHERE id IN ({old_a}, {old_b})"])
    r = cli("purge", *store_args(target), "q", "--older-than", "3600")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "purged 2 dead job(s) of 'q' that died more than 3600 s ago"
    assert totals(r.stderr) == [2]
    assert [j.id for j in q.dead_jobs()] == [recent]
    assert json_out(cli("purge", *store_args(target), "q", "--older-than", "3600", "--json"))["purged"] == 0


def test_purge_all_goes_page_by_page(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    make_dead(q, 5)
    live = q.enqueue("live")
    r = cli("purge", *store_args(target), "q", "--all", "--page-size", "2", "--json")
    out = json_out(r)
    assert out == {"queue": "q", "purged": 5, "skipped": 0, "pages": 3, "interrupted": False, "in_doubt": 0}
    assert totals(r.stderr) == [2, 4, 5]
    assert q.stats().dead == 0 and q.get_job(live) is not None
    again = cli("purge", *store_args(target), "q", "--all")
    assert again.returncode == 0 and again.stdout.strip() == "purged 0 dead job(s) of 'q'"


# -- requeue -----------------------------------------------------------------------


def test_requeue_by_id_moves_dead_jobs_back_and_skips_the_rest(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    first, second = make_dead(q, 2)
    live = q.enqueue("live")
    args = [*store_args(target), "q", "--id", str(second), str(live), str(second), "--json"]
    out = json_out(cli("requeue", *args))
    assert out == {
        "queue": "q",
        "requeued": 1,
        "skipped": 1,
        "pages": 1,
        "interrupted": False,
        "in_doubt": 0,
        "requeued_ids": [second],
        "skipped_ids": [live],
    }
    job = q.get_job(second)
    assert job is not None and (job.state, job.attempts, job.payload) == ("pending", 0, {"n": 1})
    r = cli("requeue", *store_args(target), "q", "--id", str(first))
    assert r.returncode == 0 and r.stdout.strip() == "requeued 1 dead job(s) of 'q' to pending"
    assert q.stats().dead == 0


def test_requeue_all_leaves_a_job_whose_unique_key_is_live_and_ends(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    keyed = q.enqueue("first", unique_key="invoice-42")
    handle = q.claim("w")
    assert handle is not None and handle.id == keyed and handle.fail("boom")
    plain = make_dead(q, 3)
    again = q.enqueue("second", unique_key="invoice-42")  # the key is live again
    # Pages of one: requeue_dead(ids=None) would pick the keyed row first every time.
    r = cli("requeue", *store_args(target), "q", "--all", "--page-size", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        "requeued 3 dead job(s) of 'q' to pending; 1 left dead (unique key live again, or no longer dead)"
    )
    assert totals(r.stderr) == [1, 2, 3, 3]
    assert r.stderr.splitlines()[-1] == "requeued 0 (total 3), 1 left dead"
    live, dead = every_job(q)
    assert sorted(j.id for j in live) == sorted([*plain, again])
    assert [j.id for j in dead] == [keyed]


def test_requeue_all_in_pages_moves_every_dead_job(target: Target, store: Store) -> None:
    q = store.queue("q", max_attempts=1)
    ids = make_dead(q, 7)
    r = cli("requeue", *store_args(target), "q", "--all", "--page-size", "3", "--json")
    out = json_out(r)
    assert out == {"queue": "q", "requeued": 7, "skipped": 0, "pages": 3, "interrupted": False, "in_doubt": 0}
    assert totals(r.stderr) == [3, 6, 7]
    live, dead = every_job(q)
    assert sorted(j.id for j in live) == ids and dead == []
    assert {(j.state, j.attempts) for j in live} == {("pending", 0)}


@pytest.mark.slow
def test_requeue_all_interrupted_half_way_requeues_each_job_at_most_once(
    target: Target, store: Store
) -> None:
    """Ctrl-C part-way: every job is pending or still dead, once, and the CLI said how many moved."""
    q = store.queue("q", max_attempts=1)
    ids = make_dead(q, 2500)
    # Pages of one job make the run long enough (thousands of transactions) to
    # interrupt reliably after some progress and well before the end.
    argv = [sys.executable, "-m", "alkstore", "requeue", *store_args(target), "q", "--all"]
    argv += ["--page-size", "1", "--json"]
    returncode, out, stderr = interrupted_after(argv, 1000)
    assert returncode == 130, stderr
    assert "Traceback" not in stderr
    report = json_out(subprocess.CompletedProcess(argv, 0, out, stderr))
    assert report["interrupted"] is True and report["in_doubt"] == 0 and report["skipped"] == 0
    moved = report["requeued"]
    assert 1000 <= moved < 2500
    assert totals(stderr) == list(range(1, moved + 1))  # a line per page, the last one says as much

    live, dead = every_job(q)
    assert len(live) == moved and len(dead) == 2500 - moved
    assert sorted(j.id for j in live + dead) == ids  # each job once, none lost
    assert {(j.state, j.attempts) for j in live} == {("pending", 0)}
    assert min(j.id for j in live) > max(j.id for j in dead)  # newest first, so the rest are older

    rest = cli("requeue", *store_args(target), "q", "--all", "--json")
    assert json_out(rest)["requeued"] == 2500 - moved
    stats = q.stats()
    assert (stats.pending, stats.dead) == (2500, 0)


def test_an_interrupted_requeue_by_id_says_what_it_did(target: Target, store: Store) -> None:
    """The line for a person: what moved, and that the rest stay dead."""
    q = store.queue("q", max_attempts=1)
    ids = make_dead(q, 2000)
    argv = [sys.executable, "-m", "alkstore", "requeue", *store_args(target), "q", "--page-size", "1"]
    argv += ["--id", *map(str, ids)]
    returncode, out, err = interrupted_after(argv, 10)
    assert returncode == 130, err
    moved = totals(err)[-1]
    assert out.strip() == (
        f"requeued {moved} dead job(s) of 'q' to pending; "
        f"interrupted after {moved} page(s): the rest stay dead"
    )
    assert "alkstore: interrupted" in err
    live, _ = every_job(q)
    assert sorted(j.id for j in live) == ids[:moved]  # in the order given


# -- usage ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["requeue", "x.db", "q"],
        ["requeue", "x.db", "q", "--all", "--id", "1"],
        ["requeue", "x.db", "q", "--all", "--page-size", "0"],
        ["requeue", "x.db", "q", "--all", "--page-size", "1001"],
        ["purge", "x.db", "q"],
        ["purge", "x.db", "q", "--all", "--older-than", "5"],
        ["purge", "x.db", "q", "--older-than", "-1"],
        ["cancel", "x.db", "q"],
        ["cancel", "x.db", "q", "--id", "seven"],
        ["pause", "x.db"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    r = cli(*argv)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "usage: alkstore" in r.stderr
