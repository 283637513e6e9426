"""The test app's tasks: shipping an order writes a Shipment through the ORM."""

from __future__ import annotations

from alkstore.contrib.django import Tasks

tasks = Tasks()


@tasks.task(queue="ship")
def ship(order_id: int) -> int:
    from .models import Shipment

    return int(Shipment.objects.create(order_id=order_id).pk)
