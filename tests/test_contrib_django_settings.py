"""Where the Django app puts the store when ``ALKSTORE`` names no URL: the
database's own file, or a URL built from its settings (SPEC §28). Each built
URL is one that ``alkstore.open`` reads back to the same place."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.exceptions import ImproperlyConfigured

from alkstore.contrib.django.conf import location_of


def test_a_sqlite_database_is_its_file() -> None:
    assert location_of("default", "sqlite", {"NAME": "/srv/app/db.sqlite3"}) == "/srv/app/db.sqlite3"


@pytest.mark.parametrize("name", [":memory:", "file:memorydb_default?mode=memory&cache=shared", ""])
def test_a_sqlite_database_in_memory_is_refused_with_the_fix(name: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=r"\['TEST'\]\['NAME'\]"):
        location_of("default", "sqlite", {"NAME": name})


def test_a_postgres_database_is_a_url_with_its_credentials_quoted() -> None:
    url = location_of(
        "default",
        "postgresql",
        {"NAME": "shop", "USER": "app", "PASSWORD": "p@ss/w:rd", "HOST": "db.internal", "PORT": "6432"},
    )
    parts = urlsplit(url)
    assert (parts.scheme, parts.hostname, parts.port, parts.path) == (
        "postgresql",
        "db.internal",
        6432,
        "/shop",
    )
    assert (parts.username, parts.password) == ("app", "p%40ss%2Fw%3Ard")


def test_a_unix_socket_directory_goes_to_the_query() -> None:
    url = location_of(
        "default",
        "postgresql",
        {"NAME": "shop", "USER": "app", "HOST": "/var/run/postgresql", "PORT": "5432"},
    )
    parts = urlsplit(url)
    assert parts.netloc == "app@" and parts.path == "/shop"
    assert parse_qs(parts.query) == {"host": ["/var/run/postgresql"], "port": ["5432"]}


def test_a_postgres_database_with_nothing_but_a_name() -> None:
    assert location_of("default", "postgresql", {"NAME": "shop"}) == "postgresql:///shop"


def test_another_vendor_needs_a_url() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"ALKSTORE\['URL'\]"):
        location_of("default", "mysql", {"NAME": "shop"})
