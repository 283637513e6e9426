"""Where the Django project's store is: the ``ALKSTORE`` setting, or the
database of a Django alias (``"default"``) when it names no URL (SPEC §28).

```python
ALKSTORE = {
    "URL": None,            # a path or URL alkstore.open() takes; None: the database's own
    "DATABASE": "default",  # the alias whose database holds the store (when URL is None),
                            # whose connection carries task enqueues and whose migrate makes the tables
    "OPTIONS": {},          # more alkstore.open() options: schema, pool_size, listen, ...
    "TASKS": None,          # "app.jobs:tasks": the registry manage.py alkstore_worker runs
}
```

Everything is read when asked, never at import: Django's test runner renames
the database (``test_<name>``) after the settings are loaded, and the store
must follow it there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections

__all__ = ["Target", "database_location", "location_of", "target"]

KEYS = {"URL", "DATABASE", "OPTIONS", "TASKS"}


@dataclass(frozen=True)
class Target:
    """Where to open the store and with what; equal targets share one store."""

    location: str
    options: tuple[tuple[str, Any], ...]
    #: The Django alias on the store's own database (its connection can carry
    #: enqueues), or None when ``URL`` puts the store elsewhere.
    alias: str | None
    #: The alias whose ``migrate`` creates the store's tables.
    migrate_alias: str
    tasks: str | None


def _setting() -> Mapping[str, Any]:
    value = getattr(settings, "ALKSTORE", None) or {}
    if not isinstance(value, Mapping):
        raise ImproperlyConfigured(f"ALKSTORE must be a dict, got {type(value).__name__}")
    unknown = sorted(set(value) - KEYS)
    if unknown:
        raise ImproperlyConfigured(f"ALKSTORE has unknown keys {unknown}; it takes {sorted(KEYS)}")
    return value


def target() -> Target:
    """The store's place as the settings say now."""
    conf = _setting()
    alias = conf.get("DATABASE", "default")
    if alias not in settings.DATABASES:
        raise ImproperlyConfigured(f"ALKSTORE['DATABASE'] is {alias!r}, which is not in DATABASES")
    options = conf.get("OPTIONS") or {}
    if not isinstance(options, Mapping):
        raise ImproperlyConfigured(f"ALKSTORE['OPTIONS'] must be a dict, got {type(options).__name__}")
    url = conf.get("URL")
    tasks = conf.get("TASKS")
    frozen = tuple(sorted(options.items()))
    if url is not None:
        return Target(str(url), frozen, None, alias, tasks)
    return Target(database_location(alias), frozen, alias, alias, tasks)


def database_location(alias: str) -> str:
    """What ``alkstore.open`` takes for the database of Django's ``alias``: its
    SQLite file, or a ``postgresql://`` URL built from its settings."""
    wrapper = connections[alias]
    return location_of(alias, wrapper.vendor, wrapper.settings_dict)


def location_of(alias: str, vendor: str, s: Mapping[str, Any]) -> str:
    """:func:`database_location` from a backend's ``vendor`` and settings dict."""
    if vendor == "sqlite":
        name = str(s.get("NAME") or "")
        if not name or name == ":memory:" or "mode=memory" in name:
            raise ImproperlyConfigured(
                f"alkstore needs the SQLite database of {alias!r} to be a file, not in memory (other "
                "processes cannot see it); for tests set DATABASES[...]['TEST']['NAME'] to a file path"
            )
        return name
    if vendor == "postgresql":
        user = quote(str(s.get("USER") or ""), safe="")
        password = s.get("PASSWORD")
        auth = f"{user}:{quote(str(password), safe='')}@" if password else (f"{user}@" if user else "")
        host, port = str(s.get("HOST") or ""), str(s.get("PORT") or "")
        query: dict[str, str] = {}
        if host.startswith("/"):  # a Unix socket directory
            query["host"], host = host, ""
        netloc = f"{auth}{host}{':' + port if port and host else ''}"
        if port and not host:
            query["port"] = port
        name = quote(str(s.get("NAME") or ""), safe="")
        return f"postgresql://{netloc}/{name}" + (f"?{urlencode(query)}" if query else "")
    raise ImproperlyConfigured(
        f"alkstore runs on SQLite or Postgres; the database {alias!r} is {vendor}: set ALKSTORE['URL']"
    )
