"""compare.py's floor and alkstore, in interleaved rounds, as median ratios.

    python benches/compare_rounds.py [-n 5000] [--rounds 5] [--engine sqlite|postgres]

Imports ``../shared/bench/compare.py`` (or ``$ALKSTORE_COMPARE``) and runs
its raw-SQL floor and its alkstore workload A for one engine, one after the
other, ``--rounds`` times, so a noisy machine slows both alike. Printed per
phase (enqueue, drain): both medians, their ratio, and each round's ratio.
Postgres uses ``ALKSTORE_TEST_DATABASE_URL`` as compare.py does.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "bench" / "compare.py"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("compare", os.environ.get("ALKSTORE_COMPARE", DEFAULT))
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load compare.py from {DEFAULT}")
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    rates: dict[tuple[str, str], list[float]] = {}

    def record(name: str, engine: str, phase: str, n: int, seconds: float) -> None:
        rates.setdefault((name, phase), []).append(n / seconds)

    compare.record = record
    floor, ours = (
        (compare.raw_sqlite, compare.alkstore_sqlite)
        if args.engine == "sqlite"
        else (compare.raw_postgres, compare.alkstore_postgres)
    )
    for _ in range(args.rounds):
        floor(args.n)
        ours(args.n)
    for phase in ("enqueue", "drain"):
        f, a = rates[("raw-sql", phase)], rates[("alkstore", phase)]
        each = " ".join(f"{x / y:.2f}" for x, y in zip(a, f, strict=True))
        mf, ma = statistics.median(f), statistics.median(a)
        print(
            f"{args.engine} {phase:8s} floor {mf:7.0f}  alkstore {ma:7.0f} jobs/s"
            f"  median ratio {ma / mf:.3f}  rounds {each}",
            flush=True,
        )


if __name__ == "__main__":
    main()
