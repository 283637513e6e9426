"""The Django app ``alkstore.contrib.django`` (label ``alkstore``)."""

from __future__ import annotations

from django.apps import AppConfig


class AlkstoreConfig(AppConfig):  # type: ignore[misc]  # django ships no type information
    name = "alkstore.contrib.django"
    label = "alkstore"
    verbose_name = "alkstore"
    default_auto_field = "django.db.models.BigAutoField"
