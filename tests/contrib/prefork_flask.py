"""A Flask application on alkstore.contrib.flask, for ``gunicorn --preload``
(tests/test_contrib_prefork.py): ``Alkstore(app)`` opens the store where the
application is made, in gunicorn's master, before the workers fork."""

from __future__ import annotations

from typing import Any

from flask import Flask, request

import alkstore
from alkstore.contrib.flask import Alkstore
from tests.contrib.prefork import answer, hold_until_pending, place

tasks = alkstore.Tasks()


@tasks.task(queue="prefork")
def hello(n: int) -> str:
    return f"hello {n}"


app = Flask(__name__)
app.config["ALKSTORE_URL"], app.config["ALKSTORE_OPTIONS"] = place()
alk = Alkstore(app, tasks=tasks)
LOADED_STORE = alk.store  # the master's


@app.post("/enqueue/<int:n>")
def enqueue(n: int) -> dict[str, Any]:
    job = hello.enqueue(n)
    hold_until_pending(alk.store.queue("prefork"), int(request.args["of"]))
    return answer(job, alk.store is not LOADED_STORE)
