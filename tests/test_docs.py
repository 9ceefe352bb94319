"""Every Python block of the README and of the pages under docs/ runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    (page, index, source)
    for page in PAGES
    for index, source in enumerate(
        re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    )
]


def test_the_pages_have_python_blocks() -> None:
    """The README and every docs page show code, and this file finds it."""
    found = {page for page, _, _ in BLOCKS}
    assert found == set(PAGES)


@pytest.mark.parametrize(
    ("page", "source"),
    [(page, source) for page, _, source in BLOCKS],
    ids=[f"{page.stem}-{index}" for page, index, _ in BLOCKS],
)
def test_block_runs(page: Path, source: str) -> None:
    """A block runs without error (its asserts included)."""
    code = compile(source, str(page), "exec")
    exec(code, {"__name__": f"docs_{page.stem}"})  # noqa: S102 (our own documentation)
