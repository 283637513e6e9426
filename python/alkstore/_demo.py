"""``python -m alkstore demo``: a short tour of alkstore on a local SQLite file.

1. A business insert and an enqueue commit together in one transaction; a
   rolled-back transaction leaves neither behind.
2. A worker drains an ``emails`` queue with ``max_attempts=2``: one job succeeds,
   one fails once and succeeds on its retry, one keeps failing and ends up as a
   dead letter with its last error kept.

Only the public API is used, so this file doubles as an example.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

import alkstore

if TYPE_CHECKING:
    from alkstore import Queue, Store

WORKER = "demo-worker"
# (recipient, how the pretend mail server treats it)
EMAILS = [("ada@example.com", "ok"), ("bob@example.com", "flaky"), ("eve@example.com", "broken")]


class PaymentDeclined(Exception):
    """Raised inside a transaction to show that a rollback leaves nothing behind."""


class SendFailed(Exception):
    """What the pretend mail server raises."""


def _field(payload: object, key: str) -> str:
    """One field of a job payload as text (payloads here are small dicts)."""
    return str(payload.get(key)) if isinstance(payload, dict) else "?"


def _count(store: Store, sql: str) -> int:
    with store.transaction() as tx:
        value = tx.query(sql)[0]["n"]
    return value if isinstance(value, int) else -1


def _transactional_enqueue(store: Store) -> None:
    print("\n1. The job and the business row commit together")
    fulfil = store.queue("fulfil")
    with store.transaction() as tx:
        tx.execute("CREATE TABLE IF NOT EXISTS orders(id INTEGER PRIMARY KEY, item TEXT NOT NULL)")

    with store.transaction() as tx:
        tx.execute("INSERT INTO orders(item) VALUES (?)", ["book"])
        order_id = tx.query("SELECT max(id) AS id FROM orders")[0]["id"]
        job_id = fulfil.enqueue({"order_id": order_id, "item": "book"}, tx=tx)
    print(f"   committed: order {order_id} and fulfil job {job_id}")

    try:
        with store.transaction() as tx:
            tx.execute("INSERT INTO orders(item) VALUES (?)", ["lamp"])
            fulfil.enqueue({"item": "lamp"}, tx=tx)
            raise PaymentDeclined("card declined")
    except PaymentDeclined as exc:
        print(f"   rolled back ({exc}): no lamp order, no lamp job")
    orders = _count(store, "SELECT count(*) AS n FROM orders")
    print(f"   orders in the table: {orders}; jobs waiting in 'fulfil': {fulfil.stats().pending}")

    job = fulfil.claim(WORKER)
    if job is not None:
        # Transactional completion: the ack lands only if the update commits.
        with store.transaction() as tx:
            tx.execute("UPDATE orders SET item = item || ' (shipped)' WHERE id = ?", [order_id])
            job.ack(tx=tx)
        print(f"   worker shipped order {_field(job.payload, 'order_id')} and acked job {job.id}")


def _send(payload: object, attempt: int) -> None:
    """A pretend mail server: 'flaky' fails on the first attempt, 'broken' always."""
    behaviour = _field(payload, "behaviour")
    if behaviour == "flaky" and attempt == 1:
        raise SendFailed("smtp timeout")
    if behaviour == "broken":
        raise SendFailed("mailbox does not exist")


def _worker_loop(emails: Queue) -> tuple[int, int]:
    print("\n2. A worker with retries and a dead letter (max_attempts=2)")
    for to, behaviour in EMAILS:
        emails.enqueue({"to": to, "behaviour": behaviour})

    acked = retried = 0
    while (job := emails.claim(WORKER)) is not None:
        to = _field(job.payload, "to")
        try:
            _send(job.payload, job.attempts)
        except SendFailed as exc:
            # delay=0: retry at once instead of on the backoff curve, to keep the tour short.
            job.retry(str(exc), delay=0)
            if job.attempts < job.max_attempts:
                retried += 1
                outcome = "retry"
            else:
                outcome = "dead letter"
            print(f"   {to:16s} attempt {job.attempts}/{job.max_attempts}: {exc} -> {outcome}")
        else:
            job.ack()
            acked += 1
            print(f"   {to:16s} attempt {job.attempts}/{job.max_attempts}: sent -> ack")
    return acked, retried


def run(path: str | None = None) -> int:
    """Runs the tour on `path` (default: a new file in a fresh temp dir); returns an exit status."""
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="alkstore-demo-"), "demo.db")
    print(f"alkstore demo on SQLite file {path}")

    with alkstore.open(path) as store:
        _transactional_enqueue(store)
        emails = store.queue("emails", max_attempts=2, backoff_base_s=0)
        acked, retried = _worker_loop(emails)

        print("\n3. Summary")
        print(f"   acked: {acked}, retried: {retried}")
        dead = emails.dead_jobs()
        for job in dead:
            print(f"   dead job {job.id} to {_field(job.payload, 'to')}: last_error={job.last_error!r}")
        stats = emails.stats()
        print(
            f"   emails stats: pending={stats.pending} scheduled={stats.scheduled} "
            f"processing={stats.processing} dead={stats.dead}"
        )

    print(f"\nThe file is kept for you to inspect: {path}")
    # bob is retried once then acked; eve is retried once then dead-lettered.
    expected = acked == 2 and retried == 2 and len(dead) == 1 and stats.dead == 1
    if not expected:
        print("unexpected outcome: expected 2 acked, 2 retried and 1 dead job")
    return 0 if expected else 1
