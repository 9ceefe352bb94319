"""The house count: how the package's code is shaped, read from its source with `ast`.

Prints, for the package ``a2a_client_errors/`` (or the folder given):

* **twins**: sync/async twin pairs. Two functions of one module are twins when one is
  ``async def`` and the other is not, and their names match once a leading ``a``/``async_``
  or a trailing ``_async`` is taken off the async one, or when they are methods of the same
  name in two classes of the module whose names differ only by a leading ``Async``
  (``GuardTransport.handle_request`` and ``AsyncGuardTransport.handle_async_request`` count
  too: a method named ``handle_async_*`` twins ``handle_*``). Each pair counts once, with the
  lines of both functions. A stub (a body of a docstring and ``...`` alone: a protocol's
  signature) holds no code to keep twice and twins nothing.
* **long functions**: functions (and methods, nested ones included) over 60 lines, from
  ``def`` to their last line.
* **branchy functions**: functions with over 20 branches, a branch being each ``if``/``elif``,
  ``for``, ``while``, ``except`` handler, ``match`` case, conditional expression, comprehension
  ``if``, and each operand of a boolean operator past the first; a nested function's
  branches are its own, not its parent's.
* **lines**: the package's lines, blank and comment lines included.

Targets (printed beside, the offenders named): at most 24 twins, 6 long functions, 5 branchy
ones. ``--check`` exits 1 when a target is missed.

    python bench/house.py [PATH] [--check] [--json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

LONG = 60
BRANCHY = 20
TARGETS = {"twins": 24, "long": 6, "branchy": 5}

Function = ast.FunctionDef | ast.AsyncFunctionDef
_ONE_BRANCH = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.IfExp,
    ast.ExceptHandler,
    ast.match_case,
)


@dataclass
class House:
    """What the count found."""

    twins: list[tuple[str, str, int]] = field(default_factory=list)
    long: list[tuple[str, int]] = field(default_factory=list)
    branchy: list[tuple[str, int]] = field(default_factory=list)
    lines: int = 0
    files: int = 0

    def figures(self) -> dict[str, int]:
        """The counts the targets are held against, and the lines."""
        return {
            "twins": len(self.twins),
            "twin_lines": sum(lines for _, _, lines in self.twins),
            "long": len(self.long),
            "branchy": len(self.branchy),
            "lines": self.lines,
            "files": self.files,
        }


def branches(function: Function) -> int:
    """The branches of ``function`` (see the module's docstring), nested functions left out."""
    count = 0
    stack: list[ast.AST] = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, _ONE_BRANCH):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += len(node.ifs)
        stack.extend(ast.iter_child_nodes(node))
    return count


def length(function: Function) -> int:
    """Lines from the ``def`` (decorators left out) to the function's last line."""
    return (function.end_lineno or function.lineno) - function.lineno + 1


def _sync_name(name: str) -> str:
    """The name an async function's sync twin would have."""
    for prefix, swap in (("handle_async_", "handle_"), ("async_", ""), ("a", "")):
        if name.startswith(prefix) and len(name) > len(prefix):
            return swap + name[len(prefix) :]
    return name.removesuffix("_async")


def _functions(body: list[ast.stmt]) -> dict[str, Function]:
    return {
        node.name: node
        for node in body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _stub(node)
    }


def _stub(function: Function) -> bool:
    """Whether a function's body is a docstring and ``...`` alone (a protocol's signature)."""
    return all(
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and (statement.value.value is Ellipsis or isinstance(statement.value.value, str))
        for statement in function.body
    )


def _pairs(
    scope: str, sync: dict[str, Function], both: dict[str, Function]
) -> list[tuple[str, str, int]]:
    """Twins between the sync functions of ``sync`` and the async ones of ``both``."""
    found = []
    for name, function in both.items():
        if not isinstance(function, ast.AsyncFunctionDef):
            continue
        for candidate in dict.fromkeys((_sync_name(name), name)):
            twin = sync.get(candidate)
            if isinstance(twin, ast.FunctionDef):
                found.append(
                    (f"{scope}{twin.name}", f"{scope}{name}", length(twin) + length(function))
                )
                break
    return found


def twins(tree: ast.Module, module: str) -> list[tuple[str, str, int]]:
    """The sync/async twin pairs of one module (see the module's docstring)."""
    found = _pairs(f"{module}:", _functions(tree.body), _functions(tree.body))
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for name, cls in classes.items():
        methods = _functions(cls.body)
        found += _pairs(f"{module}:{name}.", methods, methods)
        sync_class = classes.get(name.removeprefix("Async")) if name.startswith("Async") else None
        if sync_class is not None:
            found += [
                pair
                for pair in _pairs(
                    f"{module}:{sync_class.name}|{name}.", _functions(sync_class.body), methods
                )
                if pair not in found
            ]
    return found


def count(root: Path) -> House:
    """The house count of the package at ``root``."""
    house = House()
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        module = path.relative_to(root).as_posix()
        house.files += 1
        house.lines += len(source.splitlines())
        house.twins += twins(tree, module)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where = f"{module}:{node.lineno} {node.name}"
                if length(node) > LONG:
                    house.long.append((where, length(node)))
                if branches(node) > BRANCHY:
                    house.branchy.append((where, branches(node)))
    return house


def report(house: House) -> tuple[list[str], bool]:
    """The lines to print, and whether every target is met."""
    figures = house.figures()
    met = all(figures[key] <= limit for key, limit in TARGETS.items())
    lines = [
        f"package: {figures['lines']} lines in {figures['files']} files",
        f"twins: {figures['twins']} pairs, {figures['twin_lines']} lines "
        f"(target: at most {TARGETS['twins']})",
        f"functions over {LONG} lines: {figures['long']} (target: at most {TARGETS['long']})",
        f"functions over {BRANCHY} branches: {figures['branchy']} "
        f"(target: at most {TARGETS['branchy']})",
    ]
    lines += [f"  long: {where} ({size} lines)" for where, size in house.long]
    lines += [f"  branchy: {where} ({size} branches)" for where, size in house.branchy]
    lines += [f"  twins: {sync} / {async_} ({size} lines)" for sync, async_, size in house.twins]
    return lines, met


def main(argv: list[str] | None = None) -> int:
    """Print the count; with ``--check``, 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "path", nargs="?", default=str(Path(__file__).parents[1] / "a2a_client_errors")
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args(argv)
    house = count(Path(options.path))
    if options.json:
        print(json.dumps(house.figures()))
    lines, met = report(house)
    if not options.json:
        print("\n".join(lines))
    return 1 if options.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
