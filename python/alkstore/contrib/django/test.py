"""``TEST_RUNNER = "alkstore.contrib.django.test.DiscoverRunner"``: Django's
runner, closing the project's stores before the test databases are dropped
(Postgres refuses ``DROP DATABASE`` while the store's pool is connected)."""

from __future__ import annotations

from typing import Any

from django.test.runner import DiscoverRunner as _DiscoverRunner

from alkstore.contrib.django import close

__all__ = ["DiscoverRunner"]


class DiscoverRunner(_DiscoverRunner):  # type: ignore[misc]  # django ships no type information
    def teardown_databases(self, old_config: Any, **kwargs: Any) -> None:
        close()
        super().teardown_databases(old_config, **kwargs)
