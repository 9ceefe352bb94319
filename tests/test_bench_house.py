"""bench/house.py: the house count, on a small package written here (never today's numbers)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _house() -> Any:
    spec = importlib.util.spec_from_file_location("house", ROOT / "bench" / "house.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _write(root: Path, name: str, source: str) -> None:
    (root / name).write_text(textwrap.dedent(source), encoding="utf-8")


def _package(root: Path) -> Path:
    package = root / "pkg"
    package.mkdir()
    long_body = "\n".join(f"    x{i} = {i}" for i in range(61))
    branchy_body = "\n".join(f"    if x == {i}:\n        return {i}" for i in range(21))
    _write(package, "__init__.py", "")
    _write(
        package,
        "twins.py",
        """\
        def read(x):
            return x


        async def aread(x):
            return x


        async def alone(x):
            return x


        class Transport:
            def handle_request(self, r):
                return r


        class AsyncTransport:
            async def handle_async_request(self, r):
                return r


        class Both:
            def close(self):
                pass

            async def aclose(self):
                pass


        class SpendLike:
            def spend(self):
                'A stub: a protocol signature.'
                ...


        class AsyncSpendLike:
            async def aspend(self):
                'A stub, which twins nothing.'
                ...
        """,
    )
    (package / "shapes.py").write_text(
        f"def long(x):\n{long_body}\n    return x\n\n\n"
        f"def branchy(x):\n{branchy_body}\n    return x and x or x\n\n\n"
        "def small(x):\n    return [y for y in x if y if not y]\n",
        encoding="utf-8",
    )
    return package


def test_the_count_finds_each_kind(tmp_path: Path) -> None:
    """Twins (module, class, Async class; stubs none), long and branchy functions, lines."""
    house = _house().count(_package(tmp_path))
    assert sorted((a.split(":")[1], b.split(":")[1]) for a, b, _ in house.twins) == [
        ("Both.close", "Both.aclose"),
        (
            "Transport|AsyncTransport.handle_request",
            "Transport|AsyncTransport.handle_async_request",
        ),
        ("read", "aread"),
    ]
    assert [where.split(" ")[1] for where, _ in house.long] == ["long"]
    assert [(where.split(" ")[1], size) for where, size in house.branchy] == [("branchy", 23)]
    assert house.files == 3
    assert house.lines > 100


def test_check_fails_only_when_a_target_is_missed(tmp_path: Path) -> None:
    """``--check`` exits 0 within the targets and 1 past one; ``--json`` prints the figures."""
    package = _package(tmp_path)
    within = subprocess.run(  # noqa: S603 (our own script, by this interpreter)
        [sys.executable, str(ROOT / "bench" / "house.py"), str(package), "--check", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert within.returncode == 0, within.stderr
    assert json.loads(within.stdout)["twins"] == 3
    for i in range(7):
        (package / f"more{i}.py").write_text((package / "shapes.py").read_text(), "utf-8")
    past = subprocess.run(  # noqa: S603 (our own script, by this interpreter)
        [sys.executable, str(ROOT / "bench" / "house.py"), str(package), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert past.returncode == 1
    assert "functions over 60 lines: 8 (target: at most 6)" in past.stdout
