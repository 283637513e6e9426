"""The store's tables, made by ``migrate`` (SPEC §28, ADR 0031).

Opening a store creates or upgrades its tables (the engine's own numbered
migrations, under an advisory lock on Postgres), so this migration opens it
on the database being migrated and closes it: ``migrate`` and Django's test
databases get the tables with nothing else to run. Not atomic: the engine
writes on its own connection, which must not wait behind a transaction of
Django's on the same SQLite file. Unapplying it leaves the tables (and the
jobs in them) alone.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import migrations, models

import alkstore


def create_store_tables(apps: Any, schema_editor: Any) -> None:
    from alkstore.contrib.django.conf import target

    where = target()
    if schema_editor.connection.alias != where.migrate_alias:
        return  # another database of the project: the store is not there
    alkstore.open(where.location, **dict(where.options)).close()


class Migration(migrations.Migration):  # type: ignore[misc]  # django ships no type information
    initial = True
    atomic = False
    dependencies: ClassVar[list[tuple[str, str]]] = []

    operations: ClassVar[list[Any]] = [
        migrations.CreateModel(
            name="Queue",
            fields=[("name", models.CharField(max_length=255, primary_key=True, serialize=False))],
            options={
                "verbose_name": "queue",
                "verbose_name_plural": "queues",
                "managed": False,
                "default_permissions": ("view", "change"),
            },
        ),
        migrations.RunPython(create_store_tables, migrations.RunPython.noop, elidable=False),
    ]
