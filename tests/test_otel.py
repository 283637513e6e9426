"""Worker telemetry and the enqueue span helpers through the OpenTelemetry API (SPEC §19).

Most tests hand the Worker's telemetry explicit SDK providers, so this process
never sets the global ones (they can be set once per process, and every later
test would then emit into them). The global path, the one ``telemetry=True``
uses, runs in subprocesses, as do the checks of what gets imported.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import alkstore
from alkstore import JobHandle, Store, Worker, _otel
from tests.conftest import Target
from tests.workers import running, wait_for

QUEUE = "emails"
COMMON = {
    "messaging.system": "alkstore",
    "messaging.destination.name": QUEUE,
    "messaging.operation.name": "process",
}


@dataclass
class Otel:
    """SDK providers whose output the test can read."""

    spans: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    tracer_provider: TracerProvider = field(default_factory=TracerProvider)
    meter_provider: MeterProvider = field(init=False)

    def __post_init__(self) -> None:
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self, name: str = f"process {QUEUE}") -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def points(self, metric: str) -> list[tuple[str, NumberDataPoint | HistogramDataPoint]]:
        """(unit, data point) of every point of ``metric`` collected now."""
        data = self.reader.get_metrics_data()
        found: list[tuple[str, NumberDataPoint | HistogramDataPoint]] = []
        for rm in data.resource_metrics if data is not None else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        found += [(m.unit or "", p) for p in m.data.data_points]  # type: ignore[misc]
        return found


@pytest.fixture
def otel() -> Iterator[Otel]:
    o = Otel()
    yield o
    o.tracer_provider.shutdown()
    o.meter_provider.shutdown()


def traced(store: Store, otel: Otel, **options: Any) -> Worker:
    """A ``telemetry=True`` Worker whose telemetry goes to ``otel`` rather than the global providers."""
    worker = Worker(store, telemetry=True, **options)
    worker._telemetry = _otel.Telemetry(
        worker.worker_id, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider
    )
    return worker


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def by_attempt(spans: list[ReadableSpan]) -> dict[tuple[str, int], ReadableSpan]:
    return {(attrs(s)["messaging.message.id"], attrs(s)["alkstore.job.attempt"]): s for s in spans}


def exception_types(span: ReadableSpan) -> list[str]:
    return [str((e.attributes or {}).get("exception.type")) for e in span.events if e.name == "exception"]


# -- spans -------------------------------------------------------------------


def test_an_acked_job_makes_one_consumer_span_with_every_attribute(store: Store, otel: Otel) -> None:
    job_id = store.queue(QUEUE).enqueue({"to": "ada"})
    worker = traced(store, otel, concurrency=1, worker_id="w-otel")

    @worker.handler(QUEUE)
    def handle(_payload: Any, _job: JobHandle) -> None:
        pass

    with running(worker):
        wait_for(lambda: worker.counts.acked == 1, what="the ack")
    (span,) = otel.finished()
    assert span.kind is SpanKind.CONSUMER
    assert attrs(span) == {
        **COMMON,
        "messaging.operation.type": "process",
        "messaging.message.id": str(job_id),
        "messaging.client.id": "w-otel",
        "alkstore.job.attempt": 1,
        "alkstore.job.outcome": "acked",
    }
    assert span.status.status_code is StatusCode.UNSET and not span.events
    assert span.parent is None, "no trace context travels in payloads: each job starts a trace"
    assert span.instrumentation_scope is not None
    assert (span.instrumentation_scope.name, span.instrumentation_scope.version) == (
        "alkstore",
        alkstore.__version__,
    )
    assert otel.spans.get_finished_spans() == (span,), "nothing else is emitted"


def test_a_raising_handler_is_retried_with_the_exception_on_its_span(store: Store, otel: Otel) -> None:
    job_id = store.queue(QUEUE, max_attempts=3, backoff_base_s=0).enqueue("flaky")
    worker = traced(store, otel, concurrency=1)

    @worker.handler(QUEUE)
    def handle(_payload: Any, job: JobHandle) -> None:
        if job.attempts == 1:
            raise ConnectionError("smtp timeout")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 1, what="the retry's ack")
    spans = by_attempt(otel.finished())
    assert set(spans) == {(str(job_id), 1), (str(job_id), 2)}
    first, second = spans[str(job_id), 1], spans[str(job_id), 2]
    assert attrs(first)["alkstore.job.outcome"] == "retried"
    assert attrs(first)["error.type"] == "ConnectionError"
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "smtp timeout"
    assert exception_types(first) == ["ConnectionError"]
    assert attrs(second)["alkstore.job.outcome"] == "acked" and "error.type" not in attrs(second)
    assert second.status.status_code is StatusCode.UNSET


def test_fail_and_the_last_attempt_are_dead(store: Store, otel: Otel) -> None:
    q = store.queue(QUEUE, max_attempts=1)
    doomed, spent = q.enqueue_many(["doomed", "spent"])
    worker = traced(store, otel, concurrency=2)

    @worker.handler(QUEUE)
    def handle(payload: str, _job: JobHandle) -> None:
        if payload == "doomed":
            raise alkstore.Fail("mailbox does not exist")
        raise ValueError("bad input")

    with running(worker):
        wait_for(lambda: worker.counts.dead == 2, what="two dead letters")
    spans = {attrs(s)["messaging.message.id"]: s for s in otel.finished()}
    assert attrs(spans[str(doomed)])["alkstore.job.outcome"] == "dead"
    assert attrs(spans[str(doomed)])["error.type"] == "alkstore.Fail"
    (recorded,) = exception_types(spans[str(doomed)])
    assert recorded.endswith("Fail")
    assert attrs(spans[str(spent)])["alkstore.job.outcome"] == "dead"
    assert attrs(spans[str(spent)])["error.type"] == "ValueError"
    assert all(s.status.status_code is StatusCode.ERROR for s in spans.values())


def test_async_handler_spans(store: Store, otel: Otel) -> None:
    q = store.queue(QUEUE, max_attempts=1)
    ok, bad = q.enqueue_many(["ok", "bad"])
    worker = traced(store, otel, concurrency=2)

    @worker.handler(QUEUE)
    async def handle(payload: str, _job: JobHandle) -> None:
        await asyncio.sleep(0.01)
        if payload == "bad":
            raise TimeoutError("slow endpoint")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 1 and worker.counts.dead == 1, what="two outcomes")
    spans = {attrs(s)["messaging.message.id"]: s for s in otel.finished()}
    assert attrs(spans[str(ok)])["alkstore.job.outcome"] == "acked"
    assert spans[str(ok)].status.status_code is StatusCode.UNSET
    assert attrs(spans[str(bad)])["alkstore.job.outcome"] == "dead"
    assert attrs(spans[str(bad)])["error.type"] == "TimeoutError"
    assert exception_types(spans[str(bad)]) == ["TimeoutError"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_spans_made_in_the_handler_are_children_of_its_process_span(
    store: Store, otel: Otel, kind: str
) -> None:
    store.queue(QUEUE).enqueue_many([1, 2])
    worker = traced(store, otel, concurrency=2)
    tracer = otel.tracer_provider.get_tracer("app")

    if kind == "sync":

        @worker.handler(QUEUE)
        def handle(payload: int, _job: JobHandle) -> None:
            with tracer.start_as_current_span(f"render {payload}"):
                pass

    else:

        @worker.handler(QUEUE)
        async def handle_async(payload: int, _job: JobHandle) -> None:
            await asyncio.sleep(0)
            with tracer.start_as_current_span(f"render {payload}"):
                await asyncio.sleep(0)

    with running(worker):
        wait_for(lambda: worker.counts.acked == 2, what="two acks")
    processes = {attrs(s)["messaging.message.id"]: s for s in otel.finished()}
    assert len(processes) == 2
    for payload in (1, 2):
        (child,) = otel.finished(f"render {payload}")
        assert child.parent is not None and child.context is not None
        (parent,) = [p for p in processes.values() if p.context and p.context.span_id == child.parent.span_id]
        assert child.context.trace_id == parent.context.trace_id


# -- metrics -------------------------------------------------------------------


def test_duration_and_consumed_metrics(store: Store, otel: Otel) -> None:
    store.queue(QUEUE, max_attempts=1).enqueue_many(["ok", "ok", "ok", "doomed"])
    worker = traced(store, otel, concurrency=2)

    @worker.handler(QUEUE)
    def handle(payload: str, _job: JobHandle) -> None:
        time.sleep(0.02)  # a floor for the duration sum, not a speed check
        if payload == "doomed":
            raise alkstore.Fail("no")

    with running(worker):
        wait_for(lambda: worker.counts.acked == 3 and worker.counts.dead == 1, what="four outcomes")

    consumed = otel.points("messaging.client.consumed.messages")
    assert [(unit, dict(p.attributes or {})) for unit, p in consumed] == [("{message}", COMMON)]
    (_, point) = consumed[0]
    assert isinstance(point, NumberDataPoint) and point.value == 4

    durations = {
        str((p.attributes or {}).get("error.type")): (unit, p)
        for unit, p in otel.points("messaging.process.duration")
    }
    assert set(durations) == {"None", "alkstore.Fail"}
    for errors, (unit, p) in durations.items():
        assert unit == "s" and isinstance(p, HistogramDataPoint)
        expected = COMMON if errors == "None" else {**COMMON, "error.type": errors}
        assert dict(p.attributes or {}) == expected
        assert tuple(p.explicit_bounds) == _otel.DURATION_BOUNDS
    ok, failed = durations["None"][1], durations["alkstore.Fail"][1]
    assert isinstance(ok, HistogramDataPoint) and isinstance(failed, HistogramDataPoint)
    assert ok.count == 3 and ok.sum >= 0.06
    assert failed.count == 1 and failed.sum >= 0.02


def test_a_stop_releases_a_running_job_and_ends_its_span(store: Store, otel: Otel) -> None:
    store.queue(QUEUE).enqueue("slow")
    worker = traced(store, otel, concurrency=1, grace_s=0)
    started: list[int] = []

    @worker.handler(QUEUE)
    async def handle(_payload: str, job: JobHandle) -> None:
        started.append(job.id)
        await asyncio.sleep(60)  # cancelled by the stop

    with running(worker):
        wait_for(lambda: bool(started), what="the handler to start")
    (span,) = otel.finished()
    assert attrs(span)["alkstore.job.outcome"] == "released"
    assert span.status.status_code is StatusCode.UNSET, "a release is not the handler's error"
    assert worker.counts.released == 1
    for _unit, p in otel.points("messaging.process.duration"):
        assert "error.type" not in (p.attributes or {}), "a cancelled handler did not fail"


class SlowEnd(SpanProcessor):
    """Takes its time over each ended span, as an exporter on a slow network would."""

    def on_end(self, span: ReadableSpan) -> None:
        time.sleep(0.3)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_every_span_has_ended_when_run_returns(store: Store, kind: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SlowEnd())  # runs before the exporting processor added by Otel
    otel = Otel(tracer_provider=provider)
    store.queue(QUEUE).enqueue_many([1, 2, 3])
    worker = traced(store, otel, concurrency=3)
    handled: list[int] = []

    if kind == "sync":

        @worker.handler(QUEUE)
        def handle(payload: int, _job: JobHandle) -> None:
            handled.append(payload)
            if len(handled) == 3:
                worker.stop()

    else:

        @worker.handler(QUEUE)
        async def handle_async(payload: int, _job: JobHandle) -> None:
            handled.append(payload)
            if len(handled) == 3:
                worker.stop()

    worker.run()
    assert worker.counts.acked == 3
    assert len(otel.finished()) == 3, "a process that flushes its exporter after run() loses no span"
    provider.shutdown()
    otel.meter_provider.shutdown()


# -- the producer helpers ------------------------------------------------------


def test_sent_sets_the_id_or_the_batch_size_and_records_an_error(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    one, many, failed = (tracer.start_span("send emails") for _ in range(3))
    _otel.sent(one, 41, None)
    _otel.sent(many, [1, 2, 3], None)
    _otel.sent(failed, None, ValueError("payload is not JSON"))
    _otel.sent(None, 7, None)  # what the binding gets back with no provider: nothing to end
    a, b, c = otel.spans.get_finished_spans()
    assert attrs(a) == {"messaging.message.id": "41"}
    assert attrs(b) == {"messaging.batch.message_count": 3}
    assert attrs(c) == {"error.type": "ValueError"}
    assert c.status.status_code is StatusCode.ERROR and exception_types(c) == ["ValueError"]


def run_python(code: str, *args: str, cwd: Path) -> Any:
    """Runs ``code`` in a fresh interpreter; returns the JSON of its last stdout line."""
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, f"--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


GLOBAL_PROVIDERS = """
    import json, sys

    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def set_global_providers():
        spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        return spans, reader

    def described(spans):
        return [
            {"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes),
             "parent": s.parent.span_id if s.parent else None, "status": s.status.status_code.name}
            for s in spans.get_finished_spans()
        ]

    def metric_values(reader):
        data = reader.get_metrics_data()
        values = {}
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    p, = m.data.data_points
                    values[m.name] = p.count if hasattr(p, "count") else p.value
        return values
"""


def sent_emails(extra: dict[str, object], parent: object, status: str = "UNSET") -> dict[str, object]:
    """A finished ``send emails`` PRODUCER span as ``described`` reports it."""
    attributes = {
        "messaging.system": "alkstore",
        "messaging.destination.name": "emails",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        **extra,
    }
    return {
        "name": "send emails",
        "kind": "PRODUCER",
        "attributes": attributes,
        "parent": parent,
        "status": status,
    }


def test_send_span_starts_a_producer_span_only_once_a_tracer_provider_is_set(tmp_path: Path) -> None:
    code = (
        GLOBAL_PROVIDERS
        + """
    from alkstore import _otel

    before = _otel.send_span("emails")
    spans, _ = set_global_providers()
    with trace.get_tracer("app").start_as_current_span("request") as request:
        single = _otel.send_span("emails")
        _otel.sent(single, 7, None)
    batch = _otel.send_span("emails")
    _otel.sent(batch, [1, 2], None)
    failed = _otel.send_span("emails")
    _otel.sent(failed, None, ValueError("payload is not JSON"))
    print(json.dumps({
        "before": before is None,
        "request": request.get_span_context().span_id,
        "spans": [s for s in described(spans) if s["name"] != "request"],
    }))
    """
    )
    out = run_python(code, cwd=tmp_path)
    assert out["before"], "no provider set: no span"
    assert out["spans"] == [
        sent_emails({"messaging.message.id": "7"}, out["request"]),
        sent_emails({"messaging.batch.message_count": 2}, None),
        sent_emails({"error.type": "ValueError"}, None, "ERROR"),
    ]


def test_enqueue_makes_a_producer_span_once_a_tracer_provider_is_set(target: Target, tmp_path: Path) -> None:
    """Through the native binding: enqueue, enqueue_many, aenqueue and a refused
    enqueue, each a ``send <queue>`` span, the first a child of the caller's span."""
    code = (
        GLOBAL_PROVIDERS
        + """
    import asyncio

    import alkstore

    location, schema = sys.argv[1:3]
    store = alkstore.open(location, **({} if schema == "-" else {"schema": schema}))
    q = store.queue("emails")
    q.enqueue({"before": "provider"})  # opentelemetry is imported, no provider yet: no span
    spans, _ = set_global_providers()
    with trace.get_tracer("app").start_as_current_span("request") as request:
        one = q.enqueue({"n": 1})
    many = q.enqueue_many([{"n": 2}, {"n": 3}])
    later = asyncio.run(q.aenqueue({"n": 4}))
    try:
        q.enqueue({"n": 5}, unique_key="")
    except ValueError:
        pass
    print(json.dumps({
        "request": request.get_span_context().span_id,
        "ids": [one, later],
        "spans": [s for s in described(spans) if s["name"] != "request"],
    }))
    """
    )
    out = run_python(code, *target.argv(), cwd=tmp_path)
    one, later = out["ids"]
    assert out["spans"] == [
        sent_emails({"messaging.message.id": str(one)}, out["request"]),
        sent_emails({"messaging.batch.message_count": 2}, None),
        sent_emails({"messaging.message.id": str(later)}, None),
        sent_emails({"error.type": "ValueError"}, None, "ERROR"),
    ]


def test_telemetry_uses_the_global_providers_and_is_off_by_default(target: Target, tmp_path: Path) -> None:
    code = (
        GLOBAL_PROVIDERS
        + """
    import alkstore

    location, schema = sys.argv[1:3]
    store = alkstore.open(location, **({} if schema == "-" else {"schema": schema}))

    def run(worker, queue, n):
        store.queue(queue).enqueue_many(list(range(n)))
        done = []

        @worker.handler(queue)
        def handle(payload, job):
            done.append(payload)
            if len(done) == n:
                worker.stop()  # the drain waits for this job's outcome

        worker.run()
        assert worker.counts.acked == n, worker.counts

    # Made before the providers are set, as an application module might: the
    # API's proxies forward to the providers set later.
    on = alkstore.Worker(store, concurrency=1, telemetry=True)
    spans, reader = set_global_providers()
    off = alkstore.Worker(store, concurrency=1)
    run(off, "quiet", 2)
    quiet = (described(spans), metric_values(reader))
    run(on, "loud", 3)
    print(json.dumps({"quiet": quiet, "spans": described(spans), "metrics": metric_values(reader)}))
    """
    )
    out = run_python(code, *target.argv(), cwd=tmp_path)
    # With a provider set, each enqueue_many is a PRODUCER span whatever the worker's setting.
    sends, quiet_metrics = out["quiet"]
    assert [(s["name"], s["kind"]) for s in sends] == [("send quiet", "PRODUCER")]
    assert quiet_metrics == {}, "worker telemetry is off by default"
    consumer = [s for s in out["spans"] if s["kind"] == "CONSUMER"]
    assert [(s["name"], s["attributes"]["alkstore.job.outcome"]) for s in consumer] == [
        ("process loud", "acked")
    ] * 3
    assert [s["name"] for s in out["spans"] if s["kind"] == "PRODUCER"] == ["send quiet", "send loud"]
    assert out["metrics"] == {"messaging.client.consumed.messages": 3, "messaging.process.duration": 3}


# -- what gets imported ----------------------------------------------------------


def test_without_telemetry_nothing_from_opentelemetry_is_imported(target: Target, tmp_path: Path) -> None:
    code = """
    import json, sys

    import alkstore

    location, schema = sys.argv[1:3]
    store = alkstore.open(location, **({} if schema == "-" else {"schema": schema}))
    q = store.queue("emails")
    q.enqueue(1)
    q.enqueue_many([2, 3])
    worker = alkstore.Worker(store, concurrency=1)

    @worker.handler("emails")
    def handle(payload, job):
        if payload == 3:
            worker.stop()

    worker.run()
    assert worker.counts.acked == 3, worker.counts
    telemetry = [m for m in sys.modules if m == "alkstore._otel" or m.split(".")[0] == "opentelemetry"]
    print(json.dumps(sorted(telemetry)))
    """
    assert run_python(code, *target.argv(), cwd=tmp_path) == []


def test_telemetry_without_the_extra_names_it(tmp_path: Path) -> None:
    code = """
    import json, sys

    sys.modules["opentelemetry"] = None  # as if the extra were not installed
    import alkstore

    store = alkstore.open("app.db")
    try:
        alkstore.Worker(store, telemetry=True)
    except ImportError as exc:
        print(json.dumps(str(exc)))
    else:
        print(json.dumps(None))
    """
    message = run_python(code, cwd=tmp_path)
    assert message is not None and "pip install 'alkstore[otel]'" in message


def test_telemetry_must_be_a_bool(store: Store) -> None:
    with pytest.raises(TypeError, match="telemetry must be a bool"):
        Worker(store, telemetry="yes")  # type: ignore[arg-type]
    assert Worker(store, telemetry=True).telemetry and not Worker(store).telemetry


def test_error_type_names_the_class() -> None:
    class Local(Exception):
        pass

    assert _otel.error_type(KeyError("k")) == "KeyError"
    assert _otel.error_type(alkstore.Fail("x")) == "alkstore.Fail"
    assert _otel.error_type(Local()) == f"{__name__}.{Local.__qualname__}"
