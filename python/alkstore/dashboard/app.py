"""The dashboard's routes (SPEC §19): server-rendered pages over the public reads,
POST actions over the public operations, ``/metrics`` and ``/healthz``.

Every endpoint is a plain function: Starlette runs it on its thread pool, so a
store call that waits on the database never blocks the event loop. Templates
are Jinja2 with autoescaping on, so every value from the database (payloads
above all) is shown as text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from alkstore import AlkstoreError, Job, PayloadError, Queue, QueueLimits, Store
from alkstore._cli._limits import describe
from alkstore._cli._target import queue_view
from alkstore.dashboard.chart import MINUTES, chart
from alkstore.dashboard.hosts import HostAllowList
from alkstore.dashboard.middleware import BodyLimit, Guard, Hardened, HostCheck
from alkstore.dashboard.security import CSRF_COOKIE, CsrfTokens
from alkstore.metrics import registry

__all__ = ["MAX_EDGES_SHOWN", "MAX_PAYLOAD_SHOWN", "create_app"]

HERE = Path(__file__).parent
#: A payload longer than this (in characters of pretty JSON) is cut, with a note.
MAX_PAYLOAD_SHOWN = 64 * 1024
PAGE = 50
#: The most parents (and children) a job's page links to; the rest are counted.
MAX_EDGES_SHOWN = 100
_log = logging.getLogger("alkstore.dashboard")


class _Dashboard(Starlette):
    """Starlette with :class:`Hardened` outside its error handler, so a 500 has the headers too."""

    def build_middleware_stack(self) -> ASGIApp:
        return Hardened(super().build_middleware_stack())


def create_app(
    store: Store,
    *,
    read_only: bool = False,
    auth: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The dashboard of ``store``. ``auth`` (``USER:PASSWORD``) is checked on every
    request but ``GET /healthz`` when given; ``read_only`` refuses every change.

    Requests are answered only when their ``Host`` is 127.0.0.1, localhost, [::1] or
    one of ``allowed_hosts`` (names or addresses, any port), against DNS rebinding:
    an app mounted behind a name, or driven by a test client, must list that name.
    A ValueError names an entry that is not a host."""
    allowed = HostAllowList(allowed_hosts or ())
    tokens = CsrfTokens()
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
    env.filters["pretty"] = pretty
    env.globals["shown_payload"] = shown_payload
    env.filters["limits_text"] = limits_text

    def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        cookie = request.cookies.get(CSRF_COOKIE)
        token = tokens.for_page(cookie)
        body = env.get_template(template).render(
            csrf=token,
            read_only=read_only,
            engine=store.engine,
            request=request,
            root=_root(request),
            **context,
        )
        response = HTMLResponse(body, status_code=status_code)
        if token != cookie:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict")
        return response

    def overview(request: Request) -> Response:
        done = chart(store.completions(MINUTES))
        # store.queues() lists every queue that has had a job, caught up or
        # not, until it is forgotten: a forgotten queue's last completion
        # counts (another process writes its last few seconds' late) add to
        # the chart, and list no queue.
        queues = [(name, queue_view(store, name).stats()) for name in store.queues()]
        return page(request, "overview.html", queues=queues, chart=done)

    def queue_page(request: Request) -> Response:
        q = queue_view(store, request.query_params.get("name", ""))
        dead = request.query_params.get("state") == "dead"
        before = _int(request.query_params.get("before"))
        jobs = (
            q.dead_jobs(limit=PAGE, before_id=before) if dead else q.live_jobs(limit=PAGE, before_id=before)
        )
        more = jobs[-1].id if len(jobs) == PAGE else None
        # A name typed into the address bar may be a typo: say so before anyone pauses it.
        seen = q.name in store.queues()
        stats = q.stats()
        return page(request, "queue.html", q=q, stats=stats, jobs=jobs, dead=dead, more=more, seen=seen)

    def job_page(request: Request) -> Response:
        job_id = _int(request.query_params.get("id")) or 0
        name = request.query_params.get("queue")
        # A workflow's links name only the id: the store reads it by id (one
        # read by primary key per table), and the job says its queue.
        job = queue_view(store, name).get_job(job_id) if name is not None else store.get_job(job_id)
        q = None if job is None else queue_view(store, job.queue)
        parents, children = store.job_edges(job_id)
        links: dict[str, Any] = {
            "parents": parents[:MAX_EDGES_SHOWN],
            "children": children[:MAX_EDGES_SHOWN],
            "more_parents": max(0, len(parents) - MAX_EDGES_SHOWN),
            "more_children": max(0, len(children) - MAX_EDGES_SHOWN),
        }
        if job is None or q is None:
            # Acked, or cancelled: its kept result (SPEC §25) is all there is to show.
            try:
                result, unreadable = store.result(job_id), None
            except PayloadError as exc:  # a result row written around the checks
                result, unreadable = None, str(exc)
            if result is not None or unreadable is not None:
                found: dict[str, Any] = {"result": result, "unreadable": unreadable}
                return page(request, "result.html", job_id=job_id, **found, **links)
            where = f" of {name}" if name is not None else ""
            what = f"job {request.query_params.get('id')!s}{where}"
            return page(request, "missing.html", status_code=404, what=what)
        return page(request, "job.html", q=q, job=job, **links)

    def catalog(request: Request) -> Response:
        return page(
            request, "catalog.html", schedules=store.schedules(), streams=store.streams(), locks=store.locks()
        )

    async def action(request: Request) -> Response:
        # The Host, auth, Origin and body size were checked before this runs (middleware.py).
        if read_only:
            return PlainTextResponse("this dashboard is read-only", status_code=403)
        form = await request.form()
        if not tokens.accepts(request.cookies.get(CSRF_COOKIE), form.get("csrf")):
            return PlainTextResponse("missing or wrong CSRF token: reload the page", status_code=403)
        name = str(form.get("queue", ""))
        what = str(form.get("action", ""))
        ids = [int(v) for v in form.getlist("id") if isinstance(v, str) and v.isdigit()]
        everything = form.get("all") == "1"
        result = await run_in_threadpool(_apply, store, name, what, ids, everything)
        if isinstance(result, Response):
            return result
        if what == "forget":  # the queue's page is gone with it
            return RedirectResponse(f"{_root(request)}/", status_code=303)
        target = f"{_root(request)}/queue?name={_quote(name)}" + (
            "&state=dead" if what in {"requeue", "purge"} else ""
        )
        return RedirectResponse(target, status_code=303)

    def metrics(_: Request) -> Response:
        return Response(generate_latest(registry(store)), media_type=CONTENT_TYPE_LATEST)

    def healthz(_: Request) -> Response:
        # Served to anyone (no auth, any Host): it says "ok" or "unavailable", never why.
        try:
            store.queues()  # one round trip: the store answers
        except AlkstoreError as exc:
            _log.warning("healthz: the store does not answer: %s", exc)
            return PlainTextResponse("unavailable", status_code=503)
        return PlainTextResponse("ok")

    routes = [
        Route("/", overview),
        Route("/queue", queue_page),
        Route("/job", job_page),
        Route("/catalog", catalog),
        Route("/action", action, methods=["POST"]),
        Route("/metrics", metrics),
        Route("/healthz", healthz),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    # The order of ADR 0025: the Host first, then auth and Origin, then the body size.
    middleware = [
        Middleware(HostCheck, allowed=allowed),
        Middleware(Guard, auth=auth),
        Middleware(BodyLimit),
    ]
    errors = {AlkstoreError: _bad_request, ValueError: _bad_request, TypeError: _bad_request}
    return _Dashboard(routes=routes, middleware=middleware, exception_handlers=errors)


async def _bad_request(_: Request, exc: Exception) -> Response:
    """An invalid name, id or argument: its one-line text, never a traceback."""
    return PlainTextResponse(f"{type(exc).__name__}: {exc}", status_code=400)


def _apply(store: Store, name: str, what: str, ids: list[int], everything: bool) -> Response | None:
    """One action on queue ``name``; a 400 response for an unknown one."""
    q: Queue = queue_view(store, name)
    if what == "forget":
        # Refused with a ValueError (400, its text) while the queue holds a job.
        store.forget_queue(name)
    elif what == "pause":
        q.pause()
    elif what == "resume":
        q.resume()
    elif what == "cancel":
        for job_id in ids:
            q.cancel(job_id)
    elif what in {"requeue", "purge"}:
        act = q.requeue_dead if what == "requeue" else q.purge_dead
        if everything:
            # Page by page down the dead letters as they are now, each page its
            # own transaction: a job left dead (its unique key is live again)
            # is never picked twice, and the walk ends.
            before: int | None = None
            while page := q.dead_jobs(limit=1000, before_id=before):
                act([j.id for j in page])
                before = page[-1].id
        elif ids:
            act(ids[:1000])
    else:
        return PlainTextResponse(f"unknown action {what!r}", status_code=400)
    return None


def limits_text(limits: QueueLimits) -> str:
    """A queue's limits in a few words (SPEC §24), or an en dash when it has none."""
    text = describe(limits)
    return "\N{EN DASH}" if text == "-" else text


def pretty(payload: object) -> str:
    """The payload as indented JSON, cut past :data:`MAX_PAYLOAD_SHOWN` characters."""
    return _cut(json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=False))


def _cut(text: str) -> str:
    """``text``, cut past :data:`MAX_PAYLOAD_SHOWN` characters with a note."""
    if len(text) > MAX_PAYLOAD_SHOWN:
        return text[:MAX_PAYLOAD_SHOWN] + f"\n… ({len(text) - MAX_PAYLOAD_SHOWN} more characters not shown)"
    return text


def shown_payload(job: Job) -> tuple[str, str | None]:
    """The job's payload as :func:`pretty` shows it, and None; or, when the
    stored text cannot be decoded (written around the enqueue checks), that
    text as stored, cut like a payload, and why it cannot be decoded."""
    try:
        return pretty(job.payload), None
    except PayloadError as exc:
        return _cut(job._payload_text), str(exc)


def _root(request: Request) -> str:
    """The prefix the dashboard is mounted under (``app.mount("/jobs", ...)``), or "":
    every link and form of its pages starts with it."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _quote(name: str) -> str:
    return quote(name, safe="")
