"""No module of the package uses another module's private names (design.md, "Layout").

What one module needs of another is public: a name without a leading underscore, possibly
inside a private ``_module.py``. Every module of the package is read with `ast` (imports under
``if TYPE_CHECKING:`` and inside functions included), and each of these is reported, as
``file:line``:

(a) ``from a2a_client_errors.X import _name`` (or the relative form) in a module other than
    X. Importing a private *module* (``from a2a_client_errors import _httpx``) is not one: the
    names taken from it must be public.
(b) ``module._name``, where ``module`` is a module of the package this one imported
    (``import a2a_client_errors.guard as guard``, ``from a2a_client_errors import guard``).
(c) ``expr._name`` on any other object, where ``expr`` is not ``self`` or ``cls`` and ``_name``
    is not defined in the same module. Defined means: assigned as an attribute anywhere in the
    module (``x._name = ...``), the name of a function or class, a name assigned in a class
    body or at module level, or a string of a ``__slots__``. So a class may read the private
    attributes of another instance of itself (or of a class beside it), and nothing else's:
    an attribute the module never defines belongs to an object from elsewhere, the package's
    or a third party's. Dunder names (``__class__``) are not private.
(d) Reaches into a third party's objects are confined to a compatibility module each, and
    listed in `THIRD_PARTY_REACHES` with the reason: there, and only there, rule (c) allows
    them. Names of the package itself are never allowed.

The rule reads names, not types: it is a heuristic that errs on the side of reporting (an
attribute of the same name defined in the module hides a reach into another object's). A
string given to ``getattr`` is not read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import a2a_client_errors

PACKAGE = "a2a_client_errors"
ROOT = Path(a2a_client_errors.__file__).parent
ANY = frozenset({"*"})

# Where a third party's private attributes may be read: (path, names or ANY) -> why.
THIRD_PARTY_REACHES: dict[tuple[str, frozenset[str]], str] = {
    ("integrations/a2a_sdk/_compat.py", ANY): (
        "every reach into a2a-sdk (0.3 and 1.x) lives there, pinned to the versions it supports"
    ),
    ("_httpx.py", frozenset({"_content", "_list"})): (
        "Response._content and Headers._list on the classify hot path, where the public "
        "members cost 15-35 % on an error; verified at import, the public API as the fallback"
    ),
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Violation:
    """One use of a private name of another module, or of another object."""

    path: str
    line: int
    rule: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: ({self.rule}) {self.text}"


def _absolute(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The module an ``ImportFrom`` in module ``name`` reads from, made absolute."""
    if not node.level:
        return node.module or ""
    here = name.split(".") if is_package else name.split(".")[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


_LOCAL_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines: see the module docstring, rule (c)."""
    found: set[str] = set()

    def visit(node: ast.AST, outer: bool) -> None:
        # ``outer``: at module level or in a class body, not in a function's own scope.
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            found.add(node.attr)
        elif outer and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif outer and isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            found.update(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
        for child in ast.iter_child_nodes(node):
            visit(child, outer and not isinstance(node, _LOCAL_SCOPES))

    visit(tree, outer=True)
    return found


def violations(
    path: str,
    name: str,
    source: str,
    modules: set[str],
    allowed: frozenset[str] = frozenset(),
) -> list[Violation]:
    """Every use of a private name of another module or object in one module's ``source``.

    Args:
        path: the file, for the report.
        name: the module's dotted name (``a2a_client_errors.probe._wire``).
        source: its text.
        modules: the dotted names of every module of the package.
        allowed: third-party attributes this module may read (rule d); ``ANY`` for all.

    """
    tree = ast.parse(source)
    is_package = path.endswith("__init__.py")
    defined = _defined(tree)
    found: list[Violation] = []
    bound: dict[str, str] = {}  # a local name -> the module of the package it is

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source_module = _absolute(node, name, is_package)
            if not (source_module == PACKAGE or source_module.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                full = f"{source_module}.{alias.name}"
                if full in modules:  # a module: its own names are judged where they are used
                    bound[alias.asname or alias.name] = full
                elif _private(alias.name) and source_module != name:
                    text = f"from {source_module} import {alias.name}"
                    found.append(Violation(path, node.lineno, "a", text))

    def module_of(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute):
            outer = module_of(expr.value)
            if outer is not None and f"{outer}.{expr.attr}" in modules:
                return f"{outer}.{expr.attr}"
        return None

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        owner = module_of(node.value)
        if owner is not None:
            if f"{owner}.{node.attr}" not in modules and owner != name:
                found.append(Violation(path, node.lineno, "b", ast.unparse(node)))
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in defined or allowed == ANY or node.attr in allowed:
            continue
        found.append(Violation(path, node.lineno, "c", ast.unparse(node)))
    return sorted(found, key=lambda v: (v.line, v.rule, v.text))


def _package_modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _allowed(relative: str) -> frozenset[str]:
    names: set[str] = set()
    for where, allowed in THIRD_PARTY_REACHES:
        if where == relative:
            names |= allowed
    return frozenset(names)


def test_no_module_uses_another_modules_private_names() -> None:
    """Rules (a) to (d) of the module docstring, over every module of the package."""
    modules = _package_modules()
    found: list[Violation] = []
    for name, path in modules.items():
        relative = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        found += violations(f"{PACKAGE}/{relative}", name, source, set(modules), _allowed(relative))
    assert not found, "private names used across modules:\n" + "\n".join(map(str, found))


def test_every_third_party_reach_allowed_is_still_made() -> None:
    """The allowlist holds no stale entry: each name allowed is read where it is allowed."""
    for (where, allowed), reason in THIRD_PARTY_REACHES.items():
        assert reason
        path = ROOT / where
        if allowed == ANY:
            continue  # a whole compatibility module (a2a-sdk's is being written)
        read = {
            node.attr
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute)
        }
        assert allowed <= read, (where, sorted(allowed - read))


PLANTED = """
import a2a_client_errors.guard
import a2a_client_errors.errors as errors_module
from a2a_client_errors import guard, _httpx
from a2a_client_errors.guard import Guard, _observers
from . import _other, helpers
from .helpers import _secret, __version__
from a2a_client_errors.probe._wire import MAX_BODY

guard._emit(1)
errors_module._filled(2)
a2a_client_errors.guard._call_with(3)
_httpx.read_content(4)
_httpx._layout_known()
helpers.public(5)


class Mine:
    __slots__ = ("_slot",)
    _level: int = 0

    def __init__(self, other: Mine, client: object) -> None:
        self._own = other._own
        self.value = other._slot + Mine._level + cls._anything
        self.transport = client._transport
        self.kind = client.__class__
        super()._hidden()


_module_level = 1
thing._module_level
response._content
"""


def test_the_checker_finds_a_planted_violation_of_each_rule() -> None:
    """A module planted with one use of each kind: every one is found, and nothing else."""
    modules = {
        PACKAGE,
        f"{PACKAGE}.guard",
        f"{PACKAGE}.errors",
        f"{PACKAGE}._httpx",
        f"{PACKAGE}.probe",
        f"{PACKAGE}.probe._wire",
        f"{PACKAGE}.planted",
        f"{PACKAGE}._other",
        f"{PACKAGE}.helpers",
    }
    found = violations("planted.py", f"{PACKAGE}.planted", PLANTED, modules)
    assert [(v.line, v.rule, v.text) for v in found] == [
        (5, "a", "from a2a_client_errors.guard import _observers"),
        (7, "a", "from a2a_client_errors.helpers import _secret"),
        (10, "b", "guard._emit"),
        (11, "b", "errors_module._filled"),
        (12, "b", "a2a_client_errors.guard._call_with"),
        (14, "b", "_httpx._layout_known"),
        (25, "c", "client._transport"),
        (27, "c", "super()._hidden"),
        (32, "c", "response._content"),
    ]
    allowed = violations(
        "planted.py", f"{PACKAGE}.planted", PLANTED, modules, frozenset({"_transport"})
    )
    assert [v.text for v in allowed if v.rule == "c"] == ["super()._hidden", "response._content"]
    assert [v for v in violations("p.py", "p", PLANTED, modules, ANY) if v.rule == "c"] == []


def test_a_violation_names_its_file_and_line() -> None:
    """The failure message lists ``file:line`` for each use found."""
    found = violations("pkg/x.py", f"{PACKAGE}.x", "client._transport\n", {PACKAGE})
    assert [str(v) for v in found] == ["pkg/x.py:1: (c) client._transport"]
