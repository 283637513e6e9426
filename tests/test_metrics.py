"""Prometheus metrics of a store (SPEC §19): names, labels and values on both engines.

The text is parsed back with prometheus_client's own parser, so what is checked
is what a Prometheus server would read.
"""

from __future__ import annotations

import subprocess
import sys

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import alkstore
from alkstore.metrics import registry


def scrape(store: alkstore.Store) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry(store)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_a_scrape_reports_every_queue_and_stream_consumer(store: alkstore.Store) -> None:
    emails = store.queue("emails", max_attempts=1)
    emails.enqueue_many([{"n": n} for n in range(3)])
    emails.enqueue({"later": True}, delay=3600)
    held = emails.claim("w")
    assert held is not None
    dead = emails.claim("w")
    assert dead is not None and dead.fail("boom")
    store._advance_clock(7)
    idle = store.queue("idle")
    idle.pause()
    orders = store.stream("orders")
    for n in range(5):
        orders.publish({"n": n})
    orders.save_offset("billing", 2)
    orders.save_offset("archive", 5)

    m = scrape(store)

    def jobs(queue: str, state: str) -> float:
        return m[("alkstore_jobs", (("queue", queue), ("state", state)))]

    assert [jobs("emails", s) for s in ("pending", "scheduled", "processing", "dead")] == [1, 1, 1, 1]
    assert [jobs("idle", s) for s in ("pending", "scheduled", "processing", "dead")] == [0, 0, 0, 0]
    assert m[("alkstore_oldest_ready_age_seconds", (("queue", "emails"),))] >= 7
    assert m[("alkstore_oldest_ready_age_seconds", (("queue", "idle"),))] == 0
    assert m[("alkstore_queue_paused", (("queue", "emails"),))] == 0
    assert m[("alkstore_queue_paused", (("queue", "idle"),))] == 1
    assert m[("alkstore_stream_lag", (("consumer", "billing"), ("stream", "orders")))] == 3
    assert m[("alkstore_stream_lag", (("consumer", "archive"), ("stream", "orders")))] == 0
    assert {name for name, _ in m} == {
        "alkstore_jobs",
        "alkstore_oldest_ready_age_seconds",
        "alkstore_queue_paused",
        "alkstore_stream_lag",
    }, "only the store's gauges: no process or platform collectors"


def test_a_queue_whose_jobs_are_all_acked_keeps_reporting_zeros(store: alkstore.Store) -> None:
    """Issue 23: the series vanished once the last job was acked, and an alert
    on an absent series cannot tell that from a dead exporter."""
    q = store.queue("emails")
    q.enqueue({"n": 1})
    job = q.claim("w")
    assert job is not None and job.ack()
    m = scrape(store)
    states = ("pending", "scheduled", "processing", "dead")
    assert [m[("alkstore_jobs", (("queue", "emails"), ("state", s)))] for s in states] == [0, 0, 0, 0]
    assert m[("alkstore_queue_paused", (("queue", "emails"),))] == 0


def test_an_empty_store_scrapes_to_no_samples(store: alkstore.Store) -> None:
    assert scrape(store) == {}


def test_streams_and_locks_are_listed_for_operators(store: alkstore.Store) -> None:
    store.stream("audit").publish({})
    store.stream("quiet").save_offset("early", 0)
    [audit, quiet] = store.streams()
    assert (audit.name, audit.head, audit.consumers) == ("audit", 1, [])
    assert (quiet.name, quiet.head, [(c.name, c.offset, c.lag) for c in quiet.consumers]) == (
        "quiet",
        0,
        [("early", 0, 0)],
    )
    with store.lock("reports", ttl_s=60, owner="cron-1"):
        [lock] = store.locks()
        assert (lock.name, lock.owner) == ("reports", "cron-1")
        assert lock.expires_at.tzinfo is not None
    assert store.locks() == []


def test_import_alkstore_does_not_import_prometheus_client() -> None:
    probe = "import sys, alkstore; print('prometheus_client' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"
