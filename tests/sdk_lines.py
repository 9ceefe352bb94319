"""The a2a-sdk line a test is for: ``@pytest.mark.a2a_sdk("1")`` or ``("0.3")``.

The suite runs once per a2a-sdk line, each in its own environment. A test marked for a line
runs only where that line is installed; elsewhere it is left out of the run (deselected, never
skipped), and the terminal summary says how many were left out and why. Unmarked tests run on
every line. ``tests/conftest.py`` hooks this module into pytest.

Where a mark can be put:

* on a test or a class: the test is deselected after collection;
* on a module, ``pytestmark = pytest.mark.a2a_sdk("1")`` (alone or in a list) as a top-level
  statement: read from the source, so the module is not even imported on another line (its
  imports may be of one line only), and its test functions are counted from the source;
* on a directory, the same ``pytestmark`` line in its ``conftest.py``: the directory is not
  collected on another line (that conftest should import nothing of its line at its top,
  for a run that names the directory itself loads it all the same).

With no a2a-sdk installed at all, every marked test is left out.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

MARK: Final = "a2a_sdk"
LINES: Final = ("0.3", "1")
"""The a2a-sdk lines a test can be marked for."""
_VERSION: Final = re.compile(r"v?(\d+)\.(\d+)")


def line_of(version: str | None) -> str | None:
    """The line of an a2a-sdk version (``"0.3.26"``: ``"0.3"``, ``"1.3.0"``: ``"1"``)."""
    found = _VERSION.match(version or "")
    if found is None:
        return None
    major, minor = found.groups()
    return f"0.{int(minor)}" if int(major) == 0 else str(int(major))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _named(line: str) -> str:
    return f"a2a-sdk {line}.x"


def _checked(lines: Iterable[object], where: str) -> frozenset[str]:
    found = frozenset(str(line) for line in lines)
    if not found or not found <= set(LINES):
        named = ", ".join(sorted(found)) or "nothing"
        msg = f"{where}: a2a_sdk({named}) names no a2a-sdk line; use one of {', '.join(LINES)}"
        raise pytest.UsageError(msg)
    return found


# --- marks read from the source -----------------------------------------------------------------


def _mark_calls(value: ast.expr) -> Iterator[ast.Call]:
    for node in value.elts if isinstance(value, ast.List | ast.Tuple) else [value]:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == MARK
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "mark"
        ):
            yield node


@functools.cache
def source_lines(path: Path) -> frozenset[str] | None:
    """The lines a module's top-level ``pytestmark`` names (its last one), or None: none."""
    if not path.is_file():
        return None
    found = None
    for node in ast.parse(path.read_bytes(), filename=str(path)).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            calls = list(_mark_calls(node.value))
            args = [
                arg.value if isinstance(arg, ast.Constant) else "?" for c in calls for arg in c.args
            ]
            found = _checked(args, f"{path}:{node.lineno}") if calls else None
    return found


def directory_lines(directory: Path, root: Path) -> frozenset[str] | None:
    """The lines the nearest ``conftest.py`` from ``directory`` up to ``root`` names, if any."""
    for folder in (directory, *directory.parents):
        lines = source_lines(folder / "conftest.py")
        if lines is not None or folder == root or root not in folder.parents:
            return lines
    return None


def asked_for(path: Path, config: pytest.Config) -> bool:
    """Whether the run was asked for ``path`` (it lies in a path given, or is one).

    pytest looks at every file of a directory it enters, asked for or not: only those asked
    for count as left out.
    """
    for arg in config.args:
        given = (config.invocation_params.dir / arg.partition("::")[0]).resolve()
        if path == given or given in path.parents:
            return True
    return False


def count_tests(path: Path) -> int:
    """How many test functions a module's source defines (a parametrized one counts once)."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    count = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            count += node.name.startswith("test")
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            count += sum(
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                and item.name.startswith("test")
                for item in node.body
            )
    return count


# --- the run ------------------------------------------------------------------------------------


@dataclass
class LeftOut:
    """What one run leaves out, by the line it is for."""

    version: str | None
    modules: dict[str, list[int]] = field(default_factory=dict)
    """Per line: the test function count of each module not collected."""
    deselected: dict[str, int] = field(default_factory=dict)

    @property
    def line(self) -> str | None:
        """The installed a2a-sdk's line (None: not installed, or of no known line)."""
        return line_of(self.version)

    def runs(self, lines: frozenset[str]) -> bool:
        """Whether a test for ``lines`` runs here."""
        return self.line in lines

    def leave_module(self, lines: frozenset[str], functions: int) -> None:
        """Record a module not collected."""
        self.modules.setdefault("/".join(sorted(lines)), []).append(functions)

    def leave_tests(self, lines: frozenset[str], count: int) -> None:
        """Record tests deselected."""
        key = "/".join(sorted(lines))
        self.deselected[key] = self.deselected.get(key, 0) + count

    def summary(self) -> list[str]:
        """One line per a2a-sdk line whose tests were left out."""
        here = f"a2a-sdk {self.version} is installed" if self.version else "no a2a-sdk is installed"
        said = []
        for key in sorted({*self.modules, *self.deselected}):
            parts = []
            if modules := self.modules.get(key):
                parts.append(
                    f"{_count(len(modules), 'module')} not collected "
                    f"({_count(sum(modules), 'test function')})"
                )
            if tests := self.deselected.get(key):
                parts.append(f"{_count(tests, 'test')} deselected")
            lines = " or ".join(_named(line) for line in key.split("/"))
            said.append(
                f"tests for {lines} not run here: {', '.join(parts)}; {here}; "
                f"they run in the {lines} environment"
            )
        return said


def installed() -> str | None:
    """The installed a2a-sdk's version, None when it is not installed."""
    try:
        return metadata.version("a2a-sdk")
    except metadata.PackageNotFoundError:
        return None


def item_lines(item: pytest.Item, root: Path) -> frozenset[str] | None:
    """The lines a test is for: those its marks (and its directory's) all name; None: any."""
    marks = [_checked(mark.args, item.nodeid) for mark in item.iter_markers(MARK)]
    folder = directory_lines(item.path.parent, root)
    if folder is not None:
        marks.append(folder)
        item.add_marker(pytest.mark.a2a_sdk(*sorted(folder)))
    return common_lines(marks, item.nodeid)


def common_lines(marks: list[frozenset[str]], where: str) -> frozenset[str] | None:
    """The lines every one of ``marks`` names (None: no marks); none at all is a mistake."""
    if not marks:
        return None
    lines = frozenset.intersection(*marks)
    if not lines:
        msg = f"{where}: its a2a_sdk marks name no line in common"
        raise pytest.UsageError(msg)
    return lines
