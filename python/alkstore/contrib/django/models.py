"""A model with no table, so the admin lists the store's queues (SPEC §28).

``managed = False``: ``migrate`` creates no table for it; its rows are never
read from the database. It gives the admin its place ("alkstore / Queues")
and Django's permissions: ``view_queue`` to see, ``change_queue`` to
requeue or purge dead letters.
"""

from __future__ import annotations

from django.db import models


class Queue(models.Model):  # type: ignore[misc]  # django ships no type information
    name = models.CharField(max_length=255, primary_key=True)

    class Meta:
        managed = False
        default_permissions = ("view", "change")
        verbose_name = "queue"
        verbose_name_plural = "queues"

    def __str__(self) -> str:
        return str(self.name)
