"""`alkstore.open` is typed option by option (SPEC §2, §34): mypy, run over a
small file of calls, reports each misuse on its line and nothing else; the
stub's two overloads (SQLite's, Postgres's) hold exactly the options each
engine accepts; the docstring and docs/queues.md list the same options."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import alkstore
import alkstore._core
from tests.conftest import PG_URL, Target

SAMPLE = Path(__file__).parent / "typing" / "open_misuse.py"


def _mypy(sample: Path, cache: Path) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(cache),
            str(sample),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout


def test_mypy_flags_each_wrong_option_of_open_and_nothing_else(tmp_path: Path) -> None:
    expected = {
        (n, m.group(1))
        for n, line in enumerate(SAMPLE.read_text().splitlines(), 1)
        if (m := re.search(r"# expect: ([\w-]+)", line))
    }
    assert len(expected) == 8
    out = _mypy(SAMPLE, tmp_path)
    found = {
        (int(m.group(1)), m.group(2))
        for m in re.finditer(r"open_misuse\.py:(\d+): error: .*\[([\w-]+)\]$", out, re.M)
    }
    assert found == expected, out
    # A misspelt option is named, with the option meant.
    assert 'Unexpected keyword argument "busy_timeot_ms"' in out, out
    assert 'did you mean "busy_timeout_ms"' in out, out
    assert 'Unexpected keyword argument "bogus"' in out, out


# --- the stub's options are the options the engines accept ---------------------

STUB = Path(alkstore._core.__file__).with_name("_core.pyi")  # the installed wheel's
ENGINES = ("SQLite", "Postgres")  # the order of the overloads


@dataclass(frozen=True)
class Keyword:
    annotation: str
    default: object  # `...` when the stub gives no literal default


def _overloads() -> tuple[ast.FunctionDef, ...]:
    tree = ast.parse(STUB.read_text())
    found = tuple(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "open")
    assert len(found) == 2, "one `open` overload per engine"
    sqlite, postgres = (ast.unparse(f.args.args[0].annotation or ast.Constant(None)) for f in found)
    assert "PathLike" in sqlite and "PathLike" not in postgres, "SQLite's overload first, then Postgres's"
    return found


def _keywords(overload: ast.FunctionDef) -> dict[str, Keyword]:
    args = overload.args
    assert args.vararg is None and args.kwarg is None, "every option is a named keyword"
    return {
        a.arg: Keyword(ast.unparse(a.annotation or ast.Constant(None)), ast.literal_eval(d) if d else ...)
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    }


def _by_engine() -> dict[str, dict[str, Keyword]]:
    return dict(zip(ENGINES, map(_keywords, _overloads()), strict=True))


# Values for the keywords whose stub default is no literal (`...`).
SAMPLES: dict[str, object] = {"pool_size": 2, "listen_url": PG_URL}


def _values(name: str, kw: Keyword) -> list[object]:
    """Every value of a Literal, else the stub's default or a sample."""
    if kw.annotation.startswith("Literal["):
        literal = ast.parse(kw.annotation, mode="eval").body
        assert isinstance(literal, ast.Subscript)
        return [ast.literal_eval(e) for e in ast.walk(literal.slice) if isinstance(e, ast.Constant)]
    if kw.default is ...:
        assert name in SAMPLES, f"give {name!r} a sample value: its stub default is `...`"
        return [SAMPLES[name]]
    return [kw.default]


def test_each_keyword_of_an_engines_overload_opens_that_engine(target: Target) -> None:
    """Each keyword of the engine's overload, at its stub default (each value of a
    Literal), is accepted by that engine — except `schema`, whose default is
    the shared server's real schema: the test's own schema stands in."""
    name = "SQLite" if target.engine == "sqlite" else "Postgres"
    for key, kw in _by_engine()[name].items():
        for value in [target.schema] if key == "schema" else _values(key, kw):
            with target.open(**{key: value}) as store:
                assert store.engine == target.engine, key


def test_each_keyword_of_the_other_overload_is_refused_naming_its_engine(target: Target) -> None:
    mine = "SQLite" if target.engine == "sqlite" else "Postgres"
    (other,) = set(ENGINES) - {mine}
    keywords = _by_engine()
    theirs = keywords[other].keys() - keywords[mine].keys()
    assert theirs, "the engines' overloads differ"
    for key in sorted(theirs):
        message = f'option "{key}" applies to {other} only, not {mine}'
        with pytest.raises(ValueError, match=re.escape(message)):
            target.open(**{key: _values(key, keywords[other][key])[0]})


def test_every_option_the_engines_accept_is_in_an_overload(tmp_path: Path) -> None:
    """The runtime lists its options when refusing an unknown one: each is a keyword
    of the stub, and each keyword of the stub is one of them."""
    with pytest.raises(TypeError, match="unexpected option") as err:
        alkstore.open(tmp_path / "x.db", bogus=1)  # type: ignore[call-overload]
    accepted = str(err.value).split("accepted: ", 1)[1].split(", ")
    in_stub = {key for keywords in _by_engine().values() for key in keywords}
    assert sorted(accepted) == sorted(in_stub)


# --- the words about the options say what the stub says -------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs" / "queues.md"


def _all() -> dict[str, Keyword]:
    """Every keyword of either overload; one in both is the same in both."""
    found: dict[str, Keyword] = {}
    for keywords in _by_engine().values():
        for key, kw in keywords.items():
            assert found.setdefault(key, kw) == kw, f"{key!r} differs between the overloads"
    return found


def _which(key: str) -> str:
    engines = [e for e, keywords in _by_engine().items() if key in keywords]
    return "both" if len(engines) == 2 else engines[0]


def _shown(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _same_type(a: str, b: str) -> bool:
    return ast.unparse(ast.parse(a, mode="eval")) == ast.unparse(ast.parse(b, mode="eval"))


def test_the_docstring_is_the_runtimes_and_documents_every_keyword() -> None:
    first, second = _overloads()
    doc = ast.get_docstring(first)
    assert doc is not None and ast.get_docstring(second) is None, "one docstring, on the first overload"
    assert inspect.cleandoc(alkstore.open.__doc__ or "") == doc, "store.rs's `open` doc comment is the stub's"
    section = doc.split("\nKeyword Args:\n", 1)[1].split("\n\n", 1)[0]
    entries = {
        key: (kind, " ".join(text.split()))
        for key, kind, text in re.findall(r"^    (\w+) \((.+?)\): (.*?)(?=^    \w|\Z)", section, re.M | re.S)
    }
    keywords = _all()
    assert sorted(entries) == sorted(keywords)
    where = {"both": "Both engines.", "SQLite": "SQLite only.", "Postgres": "Postgres only."}
    for key, (kind, text) in entries.items():
        kw = keywords[key]
        assert _same_type(kind, kw.annotation), (key, kind, kw.annotation)
        assert text.startswith(where[_which(key)]), (key, text)
        if kw.default is not ...:
            assert re.search(rf"Defaults to {re.escape(_shown(kw.default))}(\.| \()", text), (key, text)


def test_the_docs_table_lists_every_keyword_with_its_engine_and_default() -> None:
    section = DOCS.read_text().split("\n## Opening a store\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \| .+? \| (.+?) \|", section, re.M)
    keywords = _all()
    assert sorted(key for key, _, _ in rows) == sorted(keywords)
    for key, engine, default in rows:
        assert engine == _which(key), key
        if keywords[key].default is not ...:
            assert default.startswith(f"`{_shown(keywords[key].default)}`"), (key, default)
