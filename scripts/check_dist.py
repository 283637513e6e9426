"""Checks what `make dist` built (SPEC §21, ADR 0023): `python scripts/check_dist.py DIR`.

- exactly one wheel and one sdist in DIR;
- the wheel is tagged cp311-abi3 and manylinux2014 (manylinux_2_17) x86_64;
- `auditwheel show` finds it consistent with manylinux_2_17_x86_64;
- its extension needs only libraries that manylinux2014 allows, none of them a
  system libsqlite3, and carries its own SQLite (ADR 0009: the OFD lock routing
  only exists in that bundled copy);
- the sdist carries what a build from source needs.

Needs auditwheel (and pyelftools, which auditwheel depends on) in this Python:
`make dist-tools` installs them.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

PLATFORM = "manylinux_2_17_x86_64"
# PEP 599's list for manylinux2014, plus the dynamic loader every executable names.
MANYLINUX2014_LIBS = frozenset(
    {
        "libgcc_s.so.1",
        "libstdc++.so.6",
        "libm.so.6",
        "libdl.so.2",
        "librt.so.1",
        "libc.so.6",
        "libnsl.so.1",
        "libutil.so.1",
        "libpthread.so.0",
        "libresolv.so.2",
        "libX11.so.6",
        "libXext.so.6",
        "libXrender.so.1",
        "libICE.so.6",
        "libSM.so.6",
        "libGL.so.1",
        "libgobject-2.0.so.0",
        "libgthread-2.0.so.0",
        "libglib-2.0.so.0",
        "ld-linux-x86-64.so.2",
    }
)
# What `pip install alkstore-*.tar.gz` needs to build; maturin rewrites the workspace
# members to the crates it packs, so benches/ is left out on purpose.
SDIST_NEEDS = (
    "pyproject.toml",
    "Cargo.toml",
    "Cargo.lock",
    "README.md",
    "crates/alkstore-core/Cargo.toml",
    "crates/alkstore-sqlite/Cargo.toml",
    "crates/alkstore-postgres/Cargo.toml",
    "crates/alkstore-py/Cargo.toml",
    "python/alkstore/__init__.py",
    "python/alkstore/py.typed",
)
SQLITE_MAGIC = b"SQLite format 3\x00"  # the file header string, compiled into every SQLite
SQLITE_VERSION = re.compile(rb"\x00(3\.\d+\.\d+)\x00")


class CheckFailed(Exception):
    """One check did not hold; the message says which."""


def one(paths: list[Path], what: str, directory: Path) -> Path:
    if len(paths) != 1:
        names = ", ".join(p.name for p in paths) or "none"
        raise CheckFailed(f"expected exactly one {what} in {directory}/ (run `make dist`), found: {names}")
    return paths[0]


def mib(size: int) -> str:
    return f"{size:,} bytes ({size / 2**20:.2f} MiB)"


def check_tags(wheel: Path) -> None:
    # name-version-python-abi-platform.whl; the platform part may hold several dotted tags.
    _name, _version, python, abi, platforms = wheel.name[: -len(".whl")].split("-")
    if (python, abi) != ("cp311", "abi3"):
        raise CheckFailed(f"{wheel.name}: expected cp311-abi3, got {python}-{abi}")
    if PLATFORM not in platforms.split("."):
        raise CheckFailed(f"{wheel.name}: no {PLATFORM} platform tag")
    print(f"wheel: {wheel.name}: {mib(wheel.stat().st_size)}; tags {python}-{abi}-{platforms}")


def check_auditwheel(wheel: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    text = " ".join(out.stdout.split())
    print("auditwheel show:", *(o.strip() for o in (out.stdout, out.stderr) if o.strip()), sep="\n")
    if out.returncode != 0:
        raise CheckFailed(f"auditwheel show exited {out.returncode}")
    if f'consistent with the following platform tag: "{PLATFORM}"' not in text:
        raise CheckFailed(f"auditwheel does not find the wheel consistent with {PLATFORM}")


def check_extension(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        libs = [n for n in zf.namelist() if n.endswith(".so") or ".so." in n]
        if not libs:
            raise CheckFailed(f"{wheel.name}: no extension module inside")
        for name in libs:
            data = zf.read(name)
            elf = ELFFile(io.BytesIO(data))
            needed: list[str] = []
            glibc: set[str] = set()
            for section in elf.iter_sections():
                if isinstance(section, DynamicSection):
                    # pyelftools sets `needed` on DT_NEEDED tags only, so its types do not know it.
                    needed += [str(t.needed) for t in section.iter_tags("DT_NEEDED")]  # type: ignore[attr-defined]
                elif isinstance(section, GNUVerNeedSection):
                    for _verneed, auxes in section.iter_versions():
                        glibc |= {a.name for a in auxes if a.name.startswith("GLIBC_")}
            newest = max(glibc, default="none", key=lambda v: tuple(map(int, v[len("GLIBC_") :].split("."))))
            print(f"{name}: needs {', '.join(needed)}; newest glibc symbol version {newest}")
            sqlite_libs = [lib for lib in needed if "sqlite" in lib.lower()]
            if sqlite_libs:
                raise CheckFailed(
                    f"{name} links a system SQLite: {sqlite_libs} (ADR 0009 needs the bundled one)"
                )
            outside = sorted(set(needed) - MANYLINUX2014_LIBS)
            if outside:
                raise CheckFailed(f"{name} needs libraries manylinux2014 does not allow: {outside}")
            if name.startswith("alkstore/_core"):
                if SQLITE_MAGIC not in data:
                    raise CheckFailed(f"{name}: no SQLite compiled in (rusqlite's `bundled` feature is off?)")
                version = SQLITE_VERSION.search(data)
                shown = version.group(1).decode() if version else "version not found"
                print(f"{name}: SQLite compiled in ({shown}); no system libsqlite3 needed")


def check_sdist(sdist: Path) -> None:
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    missing = [n for n in SDIST_NEEDS if n not in names]
    if missing:
        raise CheckFailed(f"{sdist.name} lacks {missing}")
    print(f"sdist: {sdist.name}: {mib(sdist.stat().st_size)}; {len(names)} files, {len(SDIST_NEEDS)} checked")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    directory = Path(argv[1])
    try:
        wheel = one(sorted(directory.glob("alkstore-*.whl")), "wheel", directory)
        sdist = one(sorted(directory.glob("alkstore-*.tar.gz")), "sdist", directory)
        check_tags(wheel)
        check_auditwheel(wheel)
        check_extension(wheel)
        check_sdist(sdist)
    except CheckFailed as failed:
        print(f"check_dist: FAILED: {failed}", file=sys.stderr)
        return 1
    print(f"check_dist: OK: {wheel.name} and {sdist.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
