"""OpenTelemetry spans and metrics for workers and enqueues (SPEC §19, ADR 0019).

Imported only when asked for: by ``Worker(..., telemetry=True)``, and by the
native binding around an enqueue once the application has imported
``opentelemetry.trace`` itself. Only the OpenTelemetry API is used; the
application picks the SDK, the providers and the exporters.

Consumer side, one :class:`Telemetry` per Worker (global providers unless
given): per job handed to a handler a span ``process <queue>`` (kind
CONSUMER), current while the handler runs and ended once the outcome is
known; the counter ``messaging.client.consumed.messages`` and the histogram
``messaging.process.duration`` (seconds the handler ran).

Producer side, the contract with the native binding (keep these signatures)::

    send_span(queue: str) -> Span | None
    sent(span: Span | None, ids: int | list[int] | None, error: BaseException | None) -> None
    sent_after(span: Span, pending: Awaitable[int | list[int]]) -> Awaitable[int | list[int]]

``send_span`` starts a span ``send <queue>`` (kind PRODUCER, a child of the
current span) when the application has set a tracer provider, and returns
None otherwise, after one provider look-up. ``sent`` ends it: ``ids`` is what
the call returned (an ``int`` from ``enqueue`` sets ``messaging.message.id``,
a ``list`` from ``enqueue_many`` sets ``messaging.batch.message_count``) or
None when it raised ``error``, which is recorded on the span. ``sent(None,
...)`` does nothing. ``sent_after`` is ``sent`` for ``aenqueue``: the span,
started when the call was made, ends when its awaitable is done.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from alkstore._core import JobHandle

__all__ = ["Processing", "Telemetry", "send_span", "sent", "sent_after"]

T = TypeVar("T")

SCOPE = "alkstore"
SYSTEM = "alkstore"
PROCESS_DURATION = "messaging.process.duration"
CONSUMED_MESSAGES = "messaging.client.consumed.messages"
OUTCOME = "alkstore.job.outcome"
ATTEMPT = "alkstore.job.attempt"
ERROR_TYPE = "error.type"

#: Bucket bounds (seconds) for the duration histogram, as the conventions advise.
DURATION_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)

# No trace context travels in payloads (ADR 0019), so each job's span starts
# a trace of its own rather than joining whatever the worker's thread runs in.
_NO_PARENT = Context()


def _version() -> str:
    # Looked up at use, not import: this module may be imported by the binding.
    from alkstore import __version__

    return __version__


def error_type(exc: BaseException) -> str:
    """``error.type`` of an exception: its class, qualified by module except for
    builtins, and by ``alkstore`` for the package's own public errors."""
    cls = type(exc)
    module = cls.__module__
    if module == "builtins":
        return cls.__qualname__
    if module.startswith("alkstore."):
        import alkstore

        if getattr(alkstore, cls.__qualname__, None) is cls:
            module = "alkstore"
    return f"{module}.{cls.__qualname__}"


def _record_error(span: Span, exc: BaseException) -> str:
    kind = error_type(exc)
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc) or None))
    span.set_attribute(ERROR_TYPE, kind)
    return kind


def _duration_histogram(meter: Meter) -> Histogram:
    description = "Seconds a handler ran for one job."
    try:
        return meter.create_histogram(
            PROCESS_DURATION,
            unit="s",
            description=description,
            explicit_bucket_boundaries_advisory=DURATION_BOUNDS,
        )
    except TypeError:  # an API from before the advisory (the extra allows it): the SDK's buckets
        return meter.create_histogram(PROCESS_DURATION, unit="s", description=description)


class Telemetry:
    """The tracer and instruments of one Worker."""

    def __init__(
        self,
        worker_id: str,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        # Made once: until the application sets its providers these are the
        # API's proxies, which forward to the real ones once they are set.
        version = _version()
        self.worker_id = worker_id
        self.tracer = trace.get_tracer(SCOPE, version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, version, meter_provider=meter_provider)
        self.duration = _duration_histogram(meter)
        self.consumed = meter.create_counter(
            CONSUMED_MESSAGES, unit="{message}", description="Jobs handed to a handler."
        )

    def start(self, job: JobHandle) -> Processing:
        """Opens the span of ``job``, as it is handed to a handler."""
        return Processing(self, job)


class Processing:
    """One job's span and measurements, from the hand-off to its outcome."""

    __slots__ = ("_attributes", "_span", "_telemetry")

    def __init__(self, telemetry: Telemetry, job: JobHandle) -> None:
        queue = job.queue
        self._telemetry = telemetry
        self._attributes = {
            "messaging.system": SYSTEM,
            "messaging.destination.name": queue,
            "messaging.operation.name": "process",
        }
        self._span = telemetry.tracer.start_span(
            f"process {queue}",
            context=_NO_PARENT,
            kind=SpanKind.CONSUMER,
            attributes={
                **self._attributes,
                "messaging.operation.type": "process",
                "messaging.message.id": str(job.id),
                "messaging.client.id": telemetry.worker_id,
                ATTEMPT: job.attempts,
            },
        )

    def run(self, call: Callable[[], T]) -> T:
        """Runs the handler call with the span current on this thread, and measures it."""
        self._telemetry.consumed.add(1, self._attributes)
        error: str | None = None
        with trace.use_span(self._span, record_exception=False, set_status_on_exception=False):
            start = time.perf_counter()
            try:
                return call()
            except BaseException as exc:
                error = _record_error(self._span, exc)
                raise
            finally:
                self._measure(time.perf_counter() - start, error)

    async def run_async(self, call: Awaitable[T]) -> T:
        """The coroutine twin of :meth:`run`; the span is current in this task only."""
        self._telemetry.consumed.add(1, self._attributes)
        error: str | None = None
        with trace.use_span(self._span, record_exception=False, set_status_on_exception=False):
            start = time.perf_counter()
            try:
                return await call
            except asyncio.CancelledError:
                raise  # the drain gave the job back: the outcome says so, no error
            except BaseException as exc:
                error = _record_error(self._span, exc)
                raise
            finally:
                self._measure(time.perf_counter() - start, error)

    def _measure(self, seconds: float, error: str | None) -> None:
        attributes = self._attributes if error is None else {**self._attributes, ERROR_TYPE: error}
        self._telemetry.duration.record(seconds, attributes)

    def end(self, outcome: str) -> None:
        """Ends the span with the job's outcome (a ``WorkerCounts`` field name)."""
        self._span.set_attribute(OUTCOME, outcome)
        self._span.end()


# -- producer -------------------------------------------------------------

#: The producer tracer and the provider it came from, remade if that changes.
_producer: tuple[TracerProvider, Tracer] | None = None


#: Whether the environment names a tracer provider for the API to load on first use.
_ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ


def send_span(queue: str) -> Span | None:
    """A started PRODUCER span ``send <queue>``, or None when no tracer provider is set."""
    global _producer
    # Every enqueue of an application that imported the API asks this. The
    # API keeps the provider set by set_tracer_provider in a module global;
    # reading it directly costs a fraction of get_tracer_provider(), which
    # also consults the environment. Should the global go away, the default
    # (True) falls through to the public call.
    if not _ENV_PROVIDER and getattr(trace, "_TRACER_PROVIDER", True) is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None
    cached = _producer
    if cached is None or cached[0] is not provider:
        cached = _producer = (provider, trace.get_tracer(SCOPE, _version(), tracer_provider=provider))
    return cached[1].start_span(
        f"send {queue}",
        kind=SpanKind.PRODUCER,
        attributes={
            "messaging.system": SYSTEM,
            "messaging.destination.name": queue,
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
        },
    )


def sent(span: Span | None, ids: int | list[int] | None, error: BaseException | None) -> None:
    """Ends a span from :func:`send_span` with what the enqueue returned or raised."""
    if span is None:
        return
    if isinstance(ids, int):
        span.set_attribute("messaging.message.id", str(ids))
    elif ids is not None:
        span.set_attribute("messaging.batch.message_count", len(ids))
    if error is not None:
        _record_error(span, error)
    span.end()


async def sent_after(span: Span, pending: Awaitable[int | list[int]]) -> int | list[int]:
    """Awaits an ``aenqueue``'s result, then ends its span as :func:`sent` does."""
    try:
        ids = await pending
    except BaseException as exc:
        sent(span, None, exc)
        raise
    sent(span, ids, None)
    return ids
