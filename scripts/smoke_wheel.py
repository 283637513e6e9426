"""Smoke-tests a built wheel on each supported CPython (SPEC §21, ADR 0023).

    python scripts/smoke_wheel.py WHEEL [--python 3.12 | --python /path/to/python ...]

For each interpreter (default: 3.11, 3.12 and 3.13), in a fresh temporary
directory: make a virtualenv, pip-install the wheel, import alkstore and check
that it came from the venv's site-packages, use the store's file through
Python's own sqlite3 beside alkstore (ADR 0009: on Linux x86_64/aarch64 the
application's write lock must hold alkstore off; elsewhere `open()` must warn),
run the `alkstore` console script, and run `python -m alkstore demo`.

A version is looked up in pyenv's versions (newest patch release first), then
as pythonX.Y on PATH. One result line per interpreter, then a closing
`smoke: N passed, N failed` line. A missing interpreter is skipped, except
under CI (CI set and not "false"), where it fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_VERSIONS = ("3.11", "3.12", "3.13")
DEMO_TIMEOUT_S = 300
STEP_TIMEOUT_S = 180

# Run by the venv's python from an empty directory, so nothing but the venv can
# provide `alkstore`.
IMPORT_CHECK = """
import json, sys, sysconfig
from pathlib import Path
import alkstore, alkstore._core
site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
files = {"alkstore": alkstore.__file__, "alkstore._core": alkstore._core.__file__}
print(json.dumps({
    "python": sys.version.split()[0],
    "in_venv": sys.prefix != sys.base_prefix,
    "prefix": str(Path(sys.prefix).resolve()),
    "alkstore": alkstore.__version__,
    "files": files,
    "outside_site": [
        n for n, f in files.items() if not any(Path(f).resolve().is_relative_to(s) for s in site)
    ],
}))
"""

# The coexistence fix in one scenario (tests/test_shared_file.py has them all):
# while the application's sqlite3 holds BEGIN IMMEDIATE, an enqueue must fail
# SQLITE_BUSY after its busy timeout instead of "succeeding" under the lock.
SHARED_FILE_CHECK = """
import platform, sqlite3, sys, warnings
from contextlib import closing
import alkstore
path = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    store = alkstore.open(path, busy_timeout_ms=100)
warned = any(issubclass(w.category, alkstore.SharedFileWarning) for w in caught)
if not (sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64")):
    store.close()
    print("open() warns SharedFileWarning, as documented off Linux" if warned else "FAIL: no warning")
    sys.exit(0 if warned else 1)
if warned:
    sys.exit("FAIL: open() warned SharedFileWarning: the lock routing is not active in this build")
with store, closing(sqlite3.connect(path, timeout=5, isolation_level=None)) as app:
    q = store.queue("smoke")
    app.execute("CREATE TABLE biz(note TEXT NOT NULL)")
    app.execute("BEGIN IMMEDIATE")
    app.execute("INSERT INTO biz VALUES ('app')")
    try:
        q.enqueue({"under": "the application's write lock"})
        sys.exit("FAIL: enqueue went through while the application's sqlite3 held the write lock")
    except alkstore.DatabaseError as err:
        if not (err.code or "").startswith("SQLITE_BUSY"):
            raise
    app.execute("COMMIT")
    q.enqueue({"after": "commit"})
    pending = q.stats().pending
with closing(sqlite3.connect(path)) as check:
    app_rows = check.execute("SELECT count(*) FROM biz").fetchone()[0]
if (pending, app_rows) != (1, 1):
    sys.exit(f"FAIL: expected 1 job and 1 application row, found {pending} and {app_rows}")
print(f"sqlite3 {sqlite3.sqlite_version} beside the store: SQLITE_BUSY under its lock, both commits kept")
"""


@dataclass
class Result:
    """One interpreter's outcome: passed, failed or skipped, and the line to print."""

    status: str
    line: str


def ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def minor_of(python: str) -> str | None:
    """`X.Y` of an interpreter, or None if it does not run (a pyenv shim of an unselected version)."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError:
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def find_python(spec: str) -> str | None:
    """An interpreter for `spec`: a version such as 3.12, or a command or path."""
    if not re.fullmatch(r"3\.\d+", spec):
        found = shutil.which(spec)
        return found if found and minor_of(found) else None
    candidates: list[Path] = []
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    patches = [p for p in root.glob(f"{spec}.*") if re.fullmatch(rf"{re.escape(spec)}\.\d+", p.name)]
    for prefix in sorted(patches, key=lambda p: int(p.name.rsplit(".", 1)[1]), reverse=True):
        candidates.append(prefix / "bin" / f"python{spec}")
    on_path = shutil.which(f"python{spec}")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and minor_of(str(candidate)) == spec:
            return str(candidate)
    return None


def run(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Runs `cmd`; returns its exit code and its stdout and stderr together."""
    try:
        out = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.stdout if isinstance(exc.stdout, str) else ""
        return -1, f"{output}\n(timed out after {timeout:.0f} s)"
    return out.returncode, out.stdout


class StepFailed(Exception):
    """A step failed; the message is the result line, the output goes above it."""

    def __init__(self, what: str, output: str) -> None:
        super().__init__(what)
        self.output = output


def step(cmd: list[str], cwd: Path, what: str, timeout: float = STEP_TIMEOUT_S) -> str:
    code, output = run(cmd, cwd, timeout)
    if code != 0:
        raise StepFailed(f"{what} exited {code}", output)
    return output


def smoke(python: str, wheel: Path) -> Result:
    with tempfile.TemporaryDirectory(prefix="alkstore-smoke-") as tmp:
        base = Path(tmp)
        venv, work = base / "venv", base / "work"
        work.mkdir()
        step([python, "-m", "venv", str(venv)], base, "python -m venv")
        bindir = venv / ("Scripts" if os.name == "nt" else "bin")
        vpy = str(bindir / ("python.exe" if os.name == "nt" else "python"))
        step(
            [vpy, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
            base,
            "pip install",
        )

        seen = json.loads(step([vpy, "-c", IMPORT_CHECK], work, "import alkstore").strip().splitlines()[-1])
        inside = Path(seen["prefix"]).is_relative_to(venv.resolve())
        if not (seen["in_venv"] and inside) or seen["outside_site"]:
            raise StepFailed(f"import: alkstore not from the venv's site-packages: {seen['files']}", "")
        version = seen["python"]

        shared = step([vpy, "-c", SHARED_FILE_CHECK, str(work / "shared.db")], work, "shared-file check")
        script = bindir / ("alkstore.exe" if os.name == "nt" else "alkstore")
        step([str(script), "--help"], work, "the alkstore console script")

        # The demo keeps its file in a fresh temp dir: put that inside ours.
        env = dict(os.environ, TMPDIR=str(work), TEMP=str(work), TMP=str(work))
        code, output = run([vpy, "-m", "alkstore", "demo"], work, DEMO_TIMEOUT_S, env)
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        last = lines[-1] if lines else "(no output)"
        if code != 0:
            raise StepFailed(f"demo exited {code}, last line: {last}", output)
        return Result(
            "passed",
            f"PASS {version}: import OK from {Path(seen['files']['alkstore']).parent.parent}; "
            f"{shared.strip().splitlines()[-1]}; demo exit 0, last line: {last}",
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("wheel", type=Path)
    parser.add_argument(
        "--python", action="append", dest="pythons", help="a version (3.12) or an interpreter"
    )
    args = parser.parse_args(argv)
    wheel: Path = args.wheel.resolve()
    if not wheel.is_file():
        print(f"smoke: no wheel at {wheel} (run `make dist`)", file=sys.stderr)
        return 2

    results: list[Result] = []
    for spec in args.pythons or DEFAULT_VERSIONS:
        python = find_python(spec)
        if python is None:
            where = "pyenv's versions or PATH" if re.fullmatch(r"3\.\d+", spec) else "PATH"
            if ci():
                results.append(
                    Result("failed", f"FAIL {spec}: no interpreter found in {where} (CI needs every one)")
                )
            else:
                results.append(Result("skipped", f"SKIP {spec}: no interpreter found in {where}"))
            print(results[-1].line, flush=True)
            continue
        try:
            results.append(smoke(python, wheel))
        except StepFailed as failed:
            if failed.output.strip():
                print(failed.output.rstrip(), flush=True)
            results.append(Result("failed", f"FAIL {spec} ({python}): {failed}"))
        print(results[-1].line, flush=True)

    counts = {s: sum(r.status == s for r in results) for s in ("passed", "failed", "skipped")}
    skipped = f", {counts['skipped']} skipped" if counts["skipped"] else ""
    print(f"smoke: {counts['passed']} passed, {counts['failed']} failed{skipped}")
    return 1 if counts["failed"] or not counts["passed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
