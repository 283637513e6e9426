"""``python -m alkstore demo``: a short tour of alkstore on a local SQLite file.

1. A business insert and an enqueue commit together; a rolled-back
   transaction leaves neither behind.
2. A ``Worker`` runs handlers: one job succeeds, one fails once and succeeds
   on its retry, one raises ``Fail`` and becomes a dead letter.
3. A schedule ``@every 1s`` fires into a queue while the runner runs.
4. An outbox message committed with an order is delivered by a relay.
5. A stream consumer stops, then resumes after its saved offset.

Only the public API is used, so this file doubles as an example.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import alkstore
from alkstore import JobHandle, StopToken, Store

WORKER = "demo-worker"


class PaymentDeclined(Exception):
    """Raised inside a transaction to show that a rollback leaves nothing behind."""


@dataclass
class Results:
    """What each section saw, checked at the end."""

    orders: int = 0
    fulfil_jobs: int = 0
    worker: alkstore.WorkerCounts = field(default_factory=alkstore.WorkerCounts)
    dead_errors: list[str] = field(default_factory=list)
    ticks: int = 0
    delivered: list[Any] = field(default_factory=list)
    published: list[int] = field(default_factory=list)
    first_read: list[int] = field(default_factory=list)
    resumed: list[int] = field(default_factory=list)

    def ok(self) -> bool:
        w = self.worker
        return (
            self.orders == 1
            and self.fulfil_jobs == 1
            and (w.acked, w.retried, w.dead) == (2, 1, 1)
            and self.dead_errors == ["mailbox does not exist"]
            and self.ticks >= 1
            and len(self.delivered) == 1
            and len(self.published) == 5
            and self.first_read == self.published[:2]
            and self.resumed == self.published[2:]
        )


def _say(line: str) -> None:
    """One write per line: handlers run on two threads, and print() writes the
    text and its newline separately, so their lines could interleave."""
    sys.stdout.write(line + "\n")


def _heading(n: int, title: str) -> None:
    print(f"\n{n}. {title}")


def _in_thread(fn: Any, *args: Any) -> threading.Thread:
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def transactional_enqueue(store: Store, r: Results) -> None:
    _heading(1, "The job and the business row commit together")
    fulfil = store.queue("fulfil")
    with store.transaction() as tx:
        tx.execute("CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders(item) VALUES (?)", ["book"])
        order_id = tx.query("SELECT max(id) AS id FROM orders")[0]["id"]
        job_id = fulfil.enqueue({"order_id": order_id}, tx=tx)
    print(f"   committed: order {order_id} and fulfil job {job_id}")
    try:
        with store.transaction() as tx:
            tx.execute("INSERT INTO orders(item) VALUES (?)", ["lamp"])
            fulfil.enqueue({"item": "lamp"}, tx=tx)
            raise PaymentDeclined("card declined")
    except PaymentDeclined as exc:
        print(f"   rolled back ({exc}): no lamp order, no lamp job")
    with store.transaction() as tx:
        r.orders = tx.query("SELECT count(*) AS n FROM orders")[0]["n"]
    r.fulfil_jobs = fulfil.stats().pending
    print(f"   orders in the table: {r.orders}; jobs waiting in 'fulfil': {r.fulfil_jobs}")


def worker_with_retry_and_dead_letter(store: Store, r: Results) -> None:
    _heading(2, "A Worker: an ack, a retry, a dead letter")
    # backoff_base_s=0 makes a retry ready at once, to keep the tour short.
    emails = store.queue("emails", max_attempts=3, backoff_base_s=0)
    emails.enqueue_many([{"to": "ada@example.com"}, {"to": "bob@example.com"}, {"to": "eve@example.com"}])
    worker = alkstore.Worker(store, concurrency=2, worker_id=WORKER)

    @worker.handler("emails")
    def send_email(payload: dict[str, str], job: JobHandle) -> None:
        to = payload["to"]
        if to == "bob@example.com" and job.attempts == 1:
            _say(f"   {to:16s} attempt {job.attempts}: smtp timeout -> retry")
            raise TimeoutError("smtp timeout")
        if to == "eve@example.com":
            _say(f"   {to:16s} attempt {job.attempts}: no such mailbox -> dead letter")
            raise alkstore.Fail("mailbox does not exist")
        _say(f"   {to:16s} attempt {job.attempts}: sent -> ack")

    stop = StopToken()
    t = _in_thread(worker.run, stop)
    deadline = time.monotonic() + 10
    while worker.counts.acked + worker.counts.dead < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.stop()
    t.join()
    r.worker = worker.counts
    r.dead_errors = [j.last_error or "" for j in emails.dead_jobs()]
    print(f"   worker: {r.worker.line()}; dead letter kept with last_error={r.dead_errors}")


def schedule_fires(store: Store, r: Results) -> None:
    _heading(3, "A schedule fires every second while the runner runs")
    store.schedule("tick", "@every 1s", "ticks", payload={"task": "tick"})
    stop = StopToken()
    t = _in_thread(store.run_schedules, stop)
    time.sleep(2.2)
    stop.stop()
    t.join()
    store.unschedule("tick")
    r.ticks = store.queue("ticks").stats().pending
    print(f"   the runner enqueued {r.ticks} job(s) into 'ticks' in 2.2 s; the schedule is removed")


def outbox_delivers(store: Store, r: Results) -> None:
    _heading(4, "An outbox message commits with its order and is delivered")
    webhooks = store.outbox("webhooks")
    with store.transaction() as tx:
        tx.execute("INSERT INTO orders(item) VALUES (?)", ["pen"])
        webhooks.enqueue({"event": "order.created", "item": "pen"}, tx=tx)
    stop = StopToken()

    def send(payload: Any) -> None:
        print(f"   POST https://example.com/hooks {payload}")
        r.delivered.append(payload)
        stop.stop()  # one message in this tour: end the relay after it

    timer = threading.Timer(10, stop.stop)  # never hang the tour
    timer.start()
    webhooks.deliver(send, worker_id="relay-1", stop=stop)
    timer.cancel()
    print(f"   delivered {len(r.delivered)}; left in the outbox: {webhooks.stats().pending}")


def stream_resumes(store: Store, r: Results) -> None:
    _heading(5, "A stream consumer resumes after its saved offset")
    orders = store.stream("orders")
    r.published = [orders.publish({"order": n}) for n in (1, 2, 3)]

    def consume(limit: int, into: list[int]) -> None:
        stop = StopToken()
        timer = threading.Timer(10, stop.stop)  # never hang the tour
        timer.start()
        for event in orders.subscribe("billing", stop=stop):
            into.append(event.offset)
            if len(into) == limit:
                stop.stop()  # the iterator ends at its next step and saves this offset
        timer.cancel()

    consume(2, r.first_read)
    saved = orders.get_offset("billing")
    print(f"   billing read offsets {r.first_read}, then stopped; its saved offset is {saved}")
    r.published += [orders.publish({"order": n}) for n in (4, 5)]
    consume(3, r.resumed)
    print(f"   billing came back and read {r.resumed}: nothing lost, nothing read twice")


def run(path: str | None = None) -> int:
    """Runs the tour on `path` (default: a new file in a fresh temp dir); returns an exit status."""
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="alkstore-demo-"), "demo.db")
    print(f"alkstore demo on SQLite file {path}")
    r = Results()
    started = time.monotonic()
    with alkstore.open(path) as store:
        transactional_enqueue(store, r)
        worker_with_retry_and_dead_letter(store, r)
        schedule_fires(store, r)
        outbox_delivers(store, r)
        stream_resumes(store, r)

    print("\nSummary")
    print(f"   transactions: {r.orders} order committed with its job; the rolled-back one left nothing")
    print(f"   worker: {r.worker.acked} acked, {r.worker.retried} retried, {r.worker.dead} dead")
    print(f"   schedule fires: {r.ticks}; outbox deliveries: {len(r.delivered)}")
    print(f"   stream: {len(r.first_read) + len(r.resumed)} events, each read once")
    print(f"   took {time.monotonic() - started:.1f} s; the file is kept for you to inspect: {path}")
    if not r.ok():
        print("unexpected outcome: see the sections above")
        return 1
    return 0
