"""``manage.py alkstore_migrate``: create or upgrade the store's tables now
(what ``migrate`` does through this app's migration), e.g. after upgrading
alkstore, or for a store that ``ALKSTORE['URL']`` puts on another database."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

import alkstore
from alkstore.contrib.django.conf import target


class Command(BaseCommand):  # type: ignore[misc]  # django ships no type information
    help = "Create or upgrade alkstore's tables in the project's store."

    def handle(self, *args: Any, **options: Any) -> None:
        where = target()
        with alkstore.open(where.location, **dict(where.options)) as s:
            self.stdout.write(f"alkstore: the store's tables are up to date ({s.engine})")
