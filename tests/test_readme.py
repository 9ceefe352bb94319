"""Every Python block of the README runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_readme_has_python_blocks() -> None:
    """The README shows code, and this file finds it."""
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(source: str) -> None:
    """A README block runs without error (its asserts included)."""
    code = compile(source, str(README), "exec")
    exec(code, {"__name__": "readme"})  # noqa: S102 (our own documentation)
