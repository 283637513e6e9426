"""A Flask application on alkstore.contrib.flask (SPEC §28), for
tests/test_contrib_flask.py: in-process, and as ``flask --app`` for the worker
command (``ALK_FLASK_LOCATION`` and ``ALK_FLASK_SCHEMA`` say where the store is)."""

from __future__ import annotations

import os

from flask import Flask

import alkstore
from alkstore.contrib.flask import Alkstore

tasks = alkstore.Tasks()


@tasks.task(queue="orders")
def confirm(order_id: int) -> str:
    return f"confirmed {order_id}"


def create_app(location: str | None = None, schema: str | None = None) -> Flask:
    app = Flask(__name__)
    app.config["ALKSTORE_URL"] = location or os.environ["ALK_FLASK_LOCATION"]
    schema = schema or os.environ.get("ALK_FLASK_SCHEMA")
    if schema and schema != "-":
        app.config["ALKSTORE_OPTIONS"] = {"schema": schema}
    alk = Alkstore(app, tasks=tasks)

    @app.post("/orders/<int:order_id>")
    def order(order_id: int) -> dict[str, object]:
        return {"job": confirm.enqueue(order_id), "engine": alk.store.engine}

    return app
