"""Every Python block of the README and of the pages under docs/ runs as written.

Each block runs on its own, but the tutorial's, which run in order, in one session, against an
embedded agent (tests/test_tutorial.py). A block runs from a folder outside the repository, as
it would for someone who installed the package: no block reads the repository's files. The
blocks, the README and the examples import public names only: no private module
(``a2a_client_errors._x``, ``...a2a_sdk._handlers``), and only names the module lists in its
``__all__``.

The pages are also held to the site and to the repository: every page under docs/ is in the
navigation of mkdocs.yml, and every page the navigation names exists; every relative link
names a file that exists, and an anchor that both the site (mkdocs' ``toc``) and the
repository's rendering (GitHub's) make the same way, or an HTML ``id`` written in the page.
An attribute list (``## Title {#id}``) is not one: only the site reads it.
"""

from __future__ import annotations

import ast
import importlib
import re
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
TUTORIAL = DOCS / "tutorial.md"
EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))
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
def test_block_runs(
    page: Path, source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block runs without error (its asserts included), from a folder of its own."""
    monkeypatch.chdir(tmp_path)
    code = compile(source, str(page), "exec")
    exec(code, {"__name__": f"docs_{page.stem}"})  # noqa: S102 (our own documentation)


def test_blocks_run_outside_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder a block runs from is not the repository: a relative path there is not found."""
    monkeypatch.chdir(tmp_path)
    assert not Path("docs").exists()
    assert not Path.cwd().resolve().is_relative_to(ROOT)
    for _, _, source in BLOCKS:  # and no block names the repository's folders
        assert not re.search(r"[\"'](?:\./)?(?:docs|examples|bench|tests)/", source), source


# --- public names only ---------------------------------------------------------------------

PACKAGE = "a2a_client_errors"


def _imports(source: str) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) of every import of the package in a source; ``import m``: no names."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, tuple(alias.name for alias in node.names)))
    return [(module, names) for module, names in found if module.split(".")[0] == PACKAGE]


def _private_uses(source: str) -> list[str]:
    """Each import of a private module, or of a name its module leaves out of ``__all__``."""
    wrong = []
    for module, names in _imports(source):
        if any(part.startswith("_") for part in module.split(".")):
            wrong.append(f"{module} (a private module)")
            continue
        try:
            public = set(importlib.import_module(module).__all__)
        except ModuleNotFoundError as missing:  # an optional dependency not installed here
            if (missing.name or "").startswith(PACKAGE):
                raise
            continue
        wrong += [f"{module}.{name} (not in __all__)" for name in names if name not in public]
    return wrong


def _sources() -> list[tuple[str, str]]:
    """(where, source) of each docs block, of the README's, and of each example."""
    blocks = [(f"{page.relative_to(ROOT)}-{index}", source) for page, index, source in BLOCKS]
    examples = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in EXAMPLES]
    return blocks + examples


def test_the_checker_finds_private_imports() -> None:
    """A private module, a name left out of ``__all__``: both found; public names pass."""
    assert _private_uses("from a2a_client_errors._reasons import ROWS\n") == [
        "a2a_client_errors._reasons (a private module)"
    ]
    assert _private_uses("import a2a_client_errors._engine as engine\n") == [
        "a2a_client_errors._engine (a private module)"
    ]
    assert _private_uses("from a2a_client_errors.types import annotations\n") == [
        "a2a_client_errors.types.annotations (not in __all__)"
    ]
    assert _private_uses("from a2a_client_errors.types import ROWS\nimport httpx._api\n") == []


@pytest.mark.parametrize(
    ("where", "source"),
    [pytest.param(where, source, id=where) for where, source in _sources()],
)
def test_users_are_shown_public_names_only(where: str, source: str) -> None:
    """A docs block, the README or an example imports only what the package makes public."""
    assert _private_uses(source) == [], where


# --- links and anchors -----------------------------------------------------------------------

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HTML_ID = re.compile(r"""<[a-z][^>]*\s(?:id|name)=["']([^"']+)["']""")


def _prose(text: str) -> str:
    """A page without its fenced blocks and inline code spans' contents kept as text."""
    return FENCE.sub("", text)


def _heading_text(heading: str) -> str:
    """What both renderings slug: the heading as read, without its markup."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    return re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")


def site_slug(heading: str) -> str:
    """The anchor mkdocs' ``toc`` makes of a heading (Python-Markdown's ``slugify``)."""
    text = unicodedata.normalize("NFKD", _heading_text(heading))
    text = re.sub(r"[^\w\s-]", "", text.encode("ascii", "ignore").decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def repository_slug(heading: str) -> str:
    """The anchor GitHub's rendering of the repository makes of a heading."""
    text = re.sub(r"[^\w\- ]", "", _heading_text(heading).strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors a page has both on the site and in the repository."""
    prose = _prose(text)
    headings = HEADING.findall(prose)
    both = {site_slug(h) for h in headings} & {repository_slug(h) for h in headings}
    return both | set(HTML_ID.findall(prose))


def _links(page: Path) -> list[tuple[Path, str]]:
    """(target file, anchor) of every relative link of a page, in prose."""
    found = []
    for target in LINK.findall(re.sub(r"`[^`\n]*`", "", _prose(page.read_text(encoding="utf-8")))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        found.append(((page.parent / path).resolve() if path else page, anchor))
    return found


def test_the_slugs_are_the_renderers() -> None:
    """The two slugs agree on plain headings and part where the renderers do."""
    assert site_slug("What `classify` costs") == repository_slug("What `classify` costs")
    assert site_slug("What `classify` costs") == "what-classify-costs"
    assert site_slug("Failover across the card's interfaces") == (
        "failover-across-the-cards-interfaces"
    )
    assert site_slug("Retries / budgets") == "retries-budgets"
    assert repository_slug("Retries / budgets") == "retries--budgets"
    assert site_slug("Hooks {#hooks}") == "hooks-hooks"  # what the site makes of it is "hooks"
    page = '## Retries / budgets\n\n<a id="budgets"></a>\n\n## Hooks\n\n```\n## not code\n```\n'
    assert anchors(page) == {"budgets", "hooks"}


@pytest.mark.parametrize(
    "page", [pytest.param(page, id=str(page.relative_to(ROOT))) for page in PAGES]
)
def test_every_relative_link_resolves(page: Path) -> None:
    """Each relative link names a file of the repository, and an anchor it has in both."""
    wrong = []
    for target, anchor in _links(page):
        if not target.is_file():
            wrong.append(f"{target.relative_to(ROOT)}: no such file")
        elif anchor and anchor not in anchors(target.read_text(encoding="utf-8")):
            wrong.append(f"{target.relative_to(ROOT)}#{anchor}: no such anchor on both")
    assert wrong == []


def test_no_page_relies_on_an_attribute_list_anchor() -> None:
    """``{#id}`` after a heading is read by the site only: the pages write ``<a id>`` instead."""
    for page in PAGES:
        assert not re.search(r"^#+ .*\{#[\w-]+\}\s*$", _prose(page.read_text("utf-8")), re.M), page
