"""A view for tests/test_contrib_prefork.py (``gunicorn --preload``): a task
enqueued in the request's transaction, read back through the store's own
connection, then the request held until ``?of=K`` jobs are pending (so K
requests held at once are served by K sync workers)."""

from __future__ import annotations

import os
import sys
import time

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from alkstore.contrib.django import store

from .jobs import ship

HOLD_S = 60.0


@csrf_exempt  # type: ignore[untyped-decorator]  # django ships no type information
def enqueue(request: HttpRequest, n: int) -> JsonResponse:
    loaded = sys.modules["djproject.wsgi"]  # the module gunicorn loaded in its master

    with transaction.atomic():
        job = ship.enqueue(n)  # on Django's connection: commits with the block
    q = store().queue("ship")
    assert q.get_job(job) is not None
    deadline = time.monotonic() + HOLD_S
    while q.stats().pending < int(request.GET["of"]):
        if time.monotonic() > deadline:
            raise TimeoutError("the other requests did not come")
        time.sleep(0.02)
    own = store() is not loaded.LOADED_STORE
    return JsonResponse({"job": job, "pid": os.getpid(), "loaded_in": loaded.LOADED_IN, "own_store": own})
