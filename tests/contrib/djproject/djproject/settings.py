"""A minimal Django project on the store's database, for the framework tests (SPEC §28).

The environment picks the engine: ``ALK_DJ_ENGINE`` is ``sqlite`` (``ALK_DJ_NAME``
the file) or ``postgres`` (``ALK_DJ_PG_URL`` the server, ``ALK_DJ_NAME`` the
database); ``ALK_DJ_TEST_NAME`` names the test database Django's runner makes.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

SECRET_KEY = "alkstore-tests-only"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "djproject.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
TEST_RUNNER = "alkstore.contrib.django.test.DiscoverRunner"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "alkstore.contrib.django",
    "shop",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

ENGINE = os.environ.get("ALK_DJ_ENGINE", "sqlite")
NAME = os.environ["ALK_DJ_NAME"]
TEST_NAME = os.environ.get("ALK_DJ_TEST_NAME")
database: dict[str, Any]
if ENGINE == "sqlite":
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": NAME, "OPTIONS": {"timeout": 30}}
else:
    server = urlsplit(os.environ["ALK_DJ_PG_URL"])
    database = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": NAME,
        "USER": server.username or "",
        "PASSWORD": server.password or "",
        "HOST": server.hostname or "",
        "PORT": str(server.port or ""),
    }
if TEST_NAME:
    database["TEST"] = {"NAME": TEST_NAME}
DATABASES = {"default": database}
# No ALKSTORE setting: the store lives in the default database (test_<name> under the test runner).
