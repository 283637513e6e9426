"""A FastAPI app on alkstore.contrib.asgi, served by a real uvicorn (SPEC §28).

usage: asgi_serve.py LOCATION SCHEMA|-

Binds 127.0.0.1 on a free port and prints ``port N``; the app runs the task
registry's worker in-process (``worker=True``) and mounts the dashboard at
/jobs. After uvicorn's shutdown (SIGTERM) it prints JSON: whether the store
was closed and the worker stopped, and the worker's counts.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from typing import Annotated, Any

import uvicorn
from fastapi import Depends, FastAPI

import alkstore
from alkstore.contrib.asgi import Alkstore

LOCATION, SCHEMA = sys.argv[1], sys.argv[2]
tasks = alkstore.Tasks()


@tasks.task(queue="greet")
def greet(name: str) -> str:
    return f"hello {name}"


options: dict[str, Any] = {} if SCHEMA == "-" else {"schema": SCHEMA}
alk = Alkstore(LOCATION, tasks=tasks, worker=True, concurrency=2, **options)
app = FastAPI(lifespan=alk.lifespan)
app.mount("/jobs", alk.dashboard())
seen: dict[str, Any] = {}


@app.post("/greet/{name}")
def post(name: str, store: Annotated[alkstore.Store, Depends(alk.dependency)]) -> dict[str, Any]:
    seen["store"], seen["worker"] = store, alk.worker
    return {"id": greet.enqueue(name), "engine": store.engine}


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    print(f"port {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="info"))
    # uvicorn raises the signal again once it has shut down, for the handler it
    # found: a no-op here, so this script lives on to report what shutdown did.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    server.run(sockets=[sock])
    store, worker = seen.get("store"), seen.get("worker")
    print(
        json.dumps(
            {
                "closed": store is not None and store.closed,
                "worker_stopped": worker is not None and not worker.running,
                "acked": worker.counts.acked if worker is not None else None,
            }
        ),
        flush=True,
    )


main()
