"""Every Python block of the README and of the pages under docs/ runs as written.

Each block runs on its own, but the tutorial's, which run in order, in one session, against an
embedded agent (tests/test_tutorial.py). The pages are also held to the site: every page under
docs/ is in the navigation of mkdocs.yml, and every page the navigation names exists.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
TUTORIAL = DOCS / "tutorial.md"
BLOCKS = [
    (page, index, source)
    for page in PAGES
    for index, source in enumerate(
        re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    )
]
RUN_ON_THEIR_OWN = [(page, index, source) for page, index, source in BLOCKS if page != TUTORIAL]
# The pages show a2a-sdk 1.x: a block that imports it, or the embedded peer (built on it),
# runs where a2a-sdk 1.x is installed.
FOR_1_X = re.compile(r"^\s*(?:from|import) a2a[. ]|a2a_client_errors\.testing\.peer", re.MULTILINE)
# Pages that show no Python: reference, figures, console sessions, or a page owned elsewhere.
WITHOUT_PYTHON = {
    "architecture.md",
    "benchmarks.md",
    "contributing.md",
    "demo.md",
    "install.md",
    *(f"api/{page.name}" for page in (DOCS / "api").glob("*.md")),
}


def _nav_pages(node: object) -> set[str]:
    """Every page file named in a mkdocs navigation (nested lists and mappings)."""
    if isinstance(node, str):
        return {node} if node.endswith(".md") else set()
    if isinstance(node, list):
        return set().union(*(_nav_pages(item) for item in node))
    if isinstance(node, dict):
        return set().union(*(_nav_pages(value) for value in node.values()))
    return set()


def _relative(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


def test_the_pages_have_python_blocks() -> None:
    """The README and every docs page meant to show code do, and this file finds it."""
    found = {page for page, _, _ in BLOCKS}
    expected = {ROOT / "README.md"} | {
        page for page in PAGES[1:] if _relative(page) not in WITHOUT_PYTHON
    }
    assert found >= expected
    assert len(expected) >= 10


def test_every_page_is_in_the_navigation() -> None:
    """mkdocs.yml's navigation lists every docs page, and nothing that is not there."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    in_nav = _nav_pages(config["nav"])
    on_disk = {_relative(page) for page in PAGES[1:]}
    assert in_nav == on_disk


def test_the_readme_is_a_front_door() -> None:
    """The README stays short and links into the docs instead of holding them."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for target in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / target).is_file(), target


def test_the_quick_start_is_what_ci_runs() -> None:
    """The README's test command is the one .ci/run calls, and so is its demo."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "$ python -m pytest " in readme
    assert "\npython -m pytest\n" in ci
    assert "\n  python -m pytest --cov-append\n" in ci  # again, under a2a-sdk 0.3
    assert "$ a2a-errors demo " in readme
    assert "a2a-errors demo > /dev/null" in ci
    assert "mkdocs build --strict" in ci


@pytest.mark.parametrize(
    ("page", "source"),
    [
        pytest.param(
            page,
            source,
            id=f"{page.stem}-{index}",
            marks=[pytest.mark.a2a_sdk("1")] if FOR_1_X.search(source) else [],
        )
        for page, index, source in RUN_ON_THEIR_OWN
    ],
)
def test_block_runs(page: Path, source: str) -> None:
    """A block runs without error (its asserts included)."""
    code = compile(source, str(page), "exec")
    exec(code, {"__name__": f"docs_{page.stem}"})  # noqa: S102 (our own documentation)
