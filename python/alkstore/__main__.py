"""``python -m alkstore`` and the ``alkstore`` console script; see ``alkstore._cli``."""

from __future__ import annotations

from alkstore._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
