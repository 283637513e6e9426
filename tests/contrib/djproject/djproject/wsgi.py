"""The test project's WSGI application, for ``gunicorn --preload``
(tests/test_contrib_prefork.py)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djproject.settings")
application = get_wsgi_application()

from alkstore.contrib.django import store  # noqa: E402 - after Django's setup

# A project may use the store where it loads the application (a start-up
# check, writing the periodic tasks' schedules): under --preload that is
# gunicorn's master, and every worker forked from it inherits this store.
LOADED_IN = os.getpid()
LOADED_STORE = store()
LOADED_STORE.queues()
