"""A FastAPI application on alkstore.contrib.asgi, for ``gunicorn --preload -k
uvicorn_worker.UvicornWorker`` (tests/test_contrib_prefork.py): the module,
and ``Alkstore(...)``, load in gunicorn's master; each worker runs the lifespan,
which opens that worker's store."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI

import alkstore
from alkstore.contrib.asgi import Alkstore
from tests.contrib.prefork import answer, place

tasks = alkstore.Tasks()


@tasks.task(queue="prefork")
def hello(n: int) -> str:
    return f"hello {n}"


location, options = place()
alk = Alkstore(location, tasks=tasks, **options)
app = FastAPI(lifespan=alk.lifespan)


@app.post("/enqueue/{n}")
def enqueue(n: int, store: Annotated[alkstore.Store, Depends(alk.dependency)]) -> dict[str, Any]:
    # The master never opened a store: the lifespan opens each worker's.
    return answer(hello.enqueue(n), own_store=True)
