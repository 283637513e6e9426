"""Prometheus metrics of one store (SPEC §19): `registry(store)` for any Prometheus exporter.

A collector reads the store at each scrape: every queue's counts by state
(``waiting``: jobs waiting for their parents, SPEC §25), oldest ready
age and pause flag, and every stream consumer's lag. The reads are the
operator reads (``store.queues()``, ``q.stats()``, ``store.streams()``), all
indexed counts, never a scan of payloads. ``prometheus_client`` (the
``dashboard`` extra) writes the text format and escapes the label values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from alkstore import Store

__all__ = ["StoreCollector", "registry"]

#: The job states a queue's counts are labelled with, in ``stats()``'s order.
STATES = ("pending", "waiting", "scheduled", "processing", "dead")


class StoreCollector(Collector):
    """Yields the store's gauges, read afresh at every scrape."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        """The gauges of every queue and stream consumer, read from the store at each scrape."""
        jobs = GaugeMetricFamily("alkstore_jobs", "Jobs by queue and state.", labels=["queue", "state"])
        age = GaugeMetricFamily(
            "alkstore_oldest_ready_age_seconds",
            "Seconds since the oldest ready pending job became ready (0 when none is ready).",
            labels=["queue"],
        )
        paused = GaugeMetricFamily("alkstore_queue_paused", "1 while the queue is paused.", labels=["queue"])
        limit = GaugeMetricFamily(
            "alkstore_queue_limit",
            "A queue's flow-control limit by kind (SPEC §24); absent when that kind is not limited.",
            labels=["queue", "kind"],
        )
        for name in self._store.queues():
            s = self._store.queue(name).stats()
            counts = (s.pending, s.waiting, s.scheduled, s.processing, s.dead)
            for state, n in zip(STATES, counts, strict=True):
                jobs.add_metric([name, state], n)
            age.add_metric([name], s.oldest_ready_age_s or 0)
            paused.add_metric([name], 1 if s.paused else 0)
            lim = s.limits
            for kind, value in (
                ("concurrency", lim.concurrency),
                ("rate_count", lim.rate_count),
                ("rate_period_seconds", lim.rate_period_s),
                ("group_concurrency", lim.group_concurrency),
            ):
                if value is not None:
                    limit.add_metric([name, kind], value)
        lag = GaugeMetricFamily(
            "alkstore_stream_lag",
            "Events published after the consumer's saved offset.",
            labels=["stream", "consumer"],
        )
        for stream in self._store.streams():
            for c in stream.consumers:
                lag.add_metric([stream.name, c.name], c.lag)
        yield from (jobs, age, paused, limit, lag)


def registry(store: Store) -> CollectorRegistry:
    """A registry holding only this store's collector (no process or platform metrics)."""
    r = CollectorRegistry(auto_describe=False)
    r.register(StoreCollector(store))
    return r
