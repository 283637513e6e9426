"""The admin's pages for the store (SPEC §28): the queues with their counts, and
per queue its counts and dead letters, which a user with ``change_queue`` may
requeue or purge (POSTs, under Django's CSRF protection through
``admin_site.admin_view``). Nothing else changes; every read and action is the
public API's (``Queue.stats``, ``dead_jobs``, ``requeue_dead``, ``purge_dead``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from alkstore._cli._inspect import payload_cell
from alkstore._cli._target import queue_view
from alkstore._core import Queue as StoreQueue
from alkstore.contrib.django import store
from alkstore.contrib.django.models import Queue

#: Dead letters shown per page (older ones through the "older" link).
PAGE = 50
#: Ids acted on per call when "all" is asked (the API's own cap is 1000).
BATCH = 1000


def _act_on_all(q: StoreQueue, act: Any) -> None:
    """Page down the dead letters as they are now, one call per page: a job
    left dead (its unique key is live again) is never picked twice."""
    before: int | None = None
    while page := q.dead_jobs(limit=BATCH, before_id=before):
        act([j.id for j in page])
        before = page[-1].id


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):  # type: ignore[misc]  # django ships no type information
    def get_urls(self) -> list[URLPattern]:
        # Only the two pages: the model has no table, so the add, delete and
        # history views (which would read it) are not routed at all.
        info = f"{self.opts.app_label}_{self.opts.model_name}"
        wrap = self.admin_site.admin_view
        return [
            path("", wrap(self.changelist_view), name=f"{info}_changelist"),
            path("<path:object_id>/change/", wrap(self.change_view), name=f"{info}_change"),
        ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        s = store()
        rows = []
        for name in sorted(s.queues()):
            stats = queue_view(s, name).stats()
            url = reverse("admin:alkstore_queue_change", args=[quote(name)])
            rows.append({"name": name, "url": url, "stats": stats})
        context = {
            **self.admin_site.each_context(request),
            "title": "Queues",
            "opts": self.model._meta,
            "queues": rows,
            "engine": s.engine,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "alkstore/queues.html", context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        name = unquote(object_id)
        q = queue_view(store(), name)
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            self._apply(request, q)
            return HttpResponseRedirect(request.path)
        before = request.GET.get("before")
        dead = q.dead_jobs(limit=PAGE, before_id=int(before) if before and before.isdigit() else None)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Queue {name}",
            "opts": self.model._meta,
            "name": name,
            "stats": q.stats(),
            # With each its payload, or its stored text when it cannot be decoded.
            "dead": [(job, payload_cell(job)) for job in dead],
            "older": dead[-1].id if len(dead) == PAGE else None,
            "can_change": self.has_change_permission(request),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "alkstore/queue.html", context)

    def _apply(self, request: HttpRequest, q: StoreQueue) -> None:
        what = request.POST.get("action")
        if what not in {"requeue", "purge"}:
            self.message_user(request, f"unknown action {what!r}", messages.ERROR)
            return
        act = q.requeue_dead if what == "requeue" else q.purge_dead
        if request.POST.get("all") == "1":
            _act_on_all(q, act)
            self.message_user(request, f"{what}d every dead letter of {q.name!r}")
            return
        ids = [int(v) for v in request.POST.getlist("id") if v.isdigit()][:BATCH]
        if ids:
            act(ids)
        self.message_user(request, f"{what}d {len(ids)} dead letter(s) of {q.name!r}")
