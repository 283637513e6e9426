"""Framework integrations (SPEC §28): thin glue over alkstore's public API.

Each submodule imports its framework, so ``import alkstore`` (and this package)
imports none of them: ``alkstore.contrib.django`` (a Django app),
``alkstore.contrib.asgi`` (FastAPI / Starlette) and ``alkstore.contrib.flask``.
"""
