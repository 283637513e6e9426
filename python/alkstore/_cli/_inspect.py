"""The read-mostly commands: ``stats``, ``jobs``, ``job``, ``result``, ``sweep``, ``schedules``.

Each returns what to print: a table for a person, or JSON with ``as_json``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from alkstore._cli._limits import describe, limits_dict
from alkstore._cli._tables import compact_json, render, when
from alkstore._cli._target import CliError, open_existing, queue_view
from alkstore._core import Job
from alkstore._errors import PayloadError

__all__ = ["NO_RESULT", "job", "jobs", "payload_cell", "result", "schedules", "stats", "sweep"]

STATS_FIELDS = ("pending", "waiting", "scheduled", "processing", "dead", "oldest_ready_age_s", "paused")
#: The exit status of ``alkstore result`` for a job with no result (yet), and
#: of ``alkstore job`` for a job that is gone: not an error, but a script
#: polling for it must tell the two apart.
NO_RESULT = 3
SCHEDULE_FIELDS = (
    "name",
    "spec",
    "tz",
    "queue",
    "payload",
    "priority",
    "max_attempts",
    "expires",
    "next_fire_at",
)


def _json_value(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def _dump(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def job_dict(job: Job) -> dict[str, object]:
    """Every field of a ``Job``, timestamps as ISO 8601 text; a payload that
    cannot be decoded is null, with ``payload_text`` (as stored) and
    ``payload_error`` (why) beside it."""
    fields = (
        "id", "queue", "state", "payload", "priority", "attempts", "max_attempts", "enqueued_at", "run_at",
        "claimed_at", "deadline", "worker_id", "expires_at", "last_error", "died_at",
    )  # fmt: skip
    out: dict[str, object] = {}
    for f in fields:
        try:
            out[f] = _json_value(getattr(job, f))
        except PayloadError as exc:
            out.update(payload=None, payload_text=job._payload_text, payload_error=str(exc))
    return out


def payload_cell(job: Job) -> object:
    """A table's payload cell: the payload, or the stored text after a
    marker when it cannot be decoded."""
    try:
        return job.payload
    except PayloadError:
        return f"(cannot be decoded) {job._payload_text}"


def stats(target: str, schema: str | None, as_json: bool) -> str:
    """Every queue of the store with its ``QueueStats``."""
    with open_existing(target, schema) as store:
        rows = [(name, queue_view(store, name).stats()) for name in store.queues()]
    if as_json:
        return _dump(
            [
                {"queue": name, **{f: getattr(s, f) for f in STATS_FIELDS}, "limits": limits_dict(s.limits)}
                for name, s in rows
            ]
        )
    if not rows:
        return "no queues yet (a queue appears with its first job, or once paused or limited)"
    headers = ["queue", *STATS_FIELDS[:5], "oldest ready s", "paused", "limits"]
    numbers = STATS_FIELDS[:-1]
    return render(
        headers,
        [
            [name, *(getattr(s, f) for f in numbers), "yes" if s.paused else "no", describe(s.limits)]
            for name, s in rows
        ],
    )


def jobs(target: str, schema: str | None, queue: str, dead: bool, limit: int, as_json: bool) -> str:
    """The newest ``limit`` live jobs of ``queue`` (or dead ones with ``dead``)."""
    with open_existing(target, schema) as store:
        view = queue_view(store, queue)
        found = view.dead_jobs(limit=limit) if dead else view.live_jobs(limit=limit)
    if as_json:
        return _dump([job_dict(j) for j in found])
    if not found:
        return f"no {'dead' if dead else 'live'} jobs in {queue!r}"
    if dead:
        headers = ["id", "attempts", "priority", "died at", "last error", "payload"]
        rows = [
            [j.id, f"{j.attempts}/{j.max_attempts}", j.priority, j.died_at, j.last_error, payload_cell(j)]
            for j in found
        ]
    else:
        # A live job's last error is its latest failure (a retried job shows why).
        headers = [
            "id", "state", "attempts", "priority", "run at", "worker", "deadline", "last error", "payload",
        ]  # fmt: skip
        rows = [
            [
                j.id,
                j.state,
                f"{j.attempts}/{j.max_attempts}",
                j.priority,
                j.run_at,
                j.worker_id,
                j.deadline,
                j.last_error,
                payload_cell(j),
            ]
            for j in found
        ]
    return render(headers, rows)


def job(target: str, schema: str | None, job_id: int, as_json: bool) -> str:
    """``store.get_job(job_id)``: the live or dead job, whatever its queue (one read
    by id). None is a ``CliError`` with :data:`NO_RESULT`."""
    with open_existing(target, schema) as store:
        found = store.get_job(job_id)
    if found is None:
        raise CliError(
            f"no job {job_id}: it was acked, cancelled or purged (see `alkstore result`), or never was",
            NO_RESULT,
        )
    fields = job_dict(found)
    if as_json:
        return _dump(fields)
    width = max(len(name) for name in fields)
    try:
        payload = compact_json(found.payload)
    except PayloadError:
        payload = f"(cannot be decoded) {found._payload_text}"
    shown = {**fields, "payload": payload}
    for stamp in ("enqueued_at", "run_at", "claimed_at", "deadline", "expires_at", "died_at"):
        shown[stamp] = when(getattr(found, stamp))
    return "\n".join(
        f"{name.replace('_', ' '):<{width}}  {'-' if v is None else v}" for name, v in shown.items()
    )


def result(target: str, schema: str | None, job_id: int, as_json: bool) -> str:
    """``store.result(job_id)`` (SPEC §25): a finished job's state, value or
    error and when it finished. None is a ``CliError`` with :data:`NO_RESULT`."""
    with open_existing(target, schema) as store:
        got = store.result(job_id)
    if got is None:
        raise CliError(
            f"no result for job {job_id}: it has not finished, or its result was not kept "
            "(enqueue it with keep_result=SECONDS)",
            NO_RESULT,
        )
    if as_json:
        return _dump(
            {
                "id": job_id,
                "state": got.state,
                "value": got.value,
                "error": got.error,
                "finished_at": _json_value(got.finished_at),
            }
        )
    head = f"job {job_id}: {got.state} at {when(got.finished_at)}"
    if got.error is not None:
        return f"{head}: {got.error}"
    return f"{head}\n{_dump(got.value)}"


def sweep(target: str, schema: str | None, queue: str, as_json: bool) -> str:
    """Runs ``sweep_expired`` on one queue."""
    with open_existing(target, schema) as store:
        swept = queue_view(store, queue).sweep_expired()
    if as_json:
        return _dump({"queue": queue, "expired": swept.expired, "purged": swept.purged})
    return f"swept {queue!r}: {swept.expired} expired job(s) moved to dead, {swept.purged} dead job(s) purged"


def schedules(target: str, schema: str | None, as_json: bool) -> str:
    """Every registered schedule (SPEC §8)."""
    with open_existing(target, schema) as store:
        found = store.schedules()
    if as_json:
        return _dump(
            [
                {**{f: _json_value(getattr(s, f)) for f in SCHEDULE_FIELDS}, "next_fires": s._local_fires(3)}
                for s in found
            ]
        )
    if not found:
        return "no schedules"
    headers = [
        "name",
        "spec",
        "tz",
        "queue",
        "next fires (in tz)",
        "priority",
        "max attempts",
        "expires s",
        "payload",
    ]
    rows = [
        [
            s.name,
            s.spec,
            s.tz,
            s.queue,
            ", ".join(s._local_fires(3)),
            s.priority,
            s.max_attempts,
            s.expires,
            s.payload,
        ]
        for s in found
    ]
    return render(headers, rows)
