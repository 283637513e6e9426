# mypy: disallow-subclassing-any=False
# (django.db.models.Model is untyped without django-stubs.)
"""Django's ORM and an alkstore Worker in one process on one SQLite file (SPEC §16).

usage: django_shared.py PATH N

Configures Django on PATH (the store's file), creates two tables through the
ORM, runs a Worker on a thread whose handler writes a Shipment row through the
ORM, and from the main thread writes N Order rows through the ORM, enqueueing
a job for each. Prints JSON: the order ids, the shipped order ids and the
queue's stats once every job is done (or after 60 s).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import django
from django.conf import settings

import alkstore

PATH, N = sys.argv[1], int(sys.argv[2])
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": PATH, "OPTIONS": {"timeout": 30}}},
    INSTALLED_APPS=["django.contrib.contenttypes"],
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
    USE_TZ=True,
)
django.setup()

from django.db import connection, connections, models  # noqa: E402  (needs the settings above)


class Order(models.Model):
    item = models.CharField(max_length=100)

    class Meta:
        app_label = "contenttypes"  # a script has no app of its own to hold models


class Shipment(models.Model):
    order_id = models.IntegerField()

    class Meta:
        app_label = "contenttypes"


def main() -> None:
    with connection.schema_editor() as editor:
        editor.create_model(Order)
        editor.create_model(Shipment)
    store = alkstore.open(PATH)
    q = store.queue("ship")
    worker = alkstore.Worker(store, concurrency=4)

    @worker.handler("ship")
    def ship(payload: dict[str, Any], _job: alkstore.JobHandle) -> None:
        Shipment.objects.create(order_id=payload["order_id"])
        connections.close_all()  # this handler thread's connection: open and close per job

    stop = alkstore.StopToken()
    runner = threading.Thread(target=worker.run, args=(stop,))
    runner.start()
    try:
        for i in range(N):
            order = Order.objects.create(item=f"item {i}")
            q.enqueue({"order_id": order.id})
        deadline = time.monotonic() + 60
        while Shipment.objects.count() < N and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.stop()
        runner.join(30)
    stats = q.stats()
    print(
        json.dumps(
            {
                "orders": sorted(Order.objects.values_list("id", flat=True)),
                "shipped": sorted(Shipment.objects.values_list("order_id", flat=True)),
                "pending": stats.pending,
                "processing": stats.processing,
                "dead": stats.dead,
            }
        ),
        flush=True,
    )
    store.close()
    connections.close_all()


if __name__ == "__main__":
    main()
