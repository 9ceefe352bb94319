"""The package's import graph: no cycle, and the pure core never reaches up to the outer rooms.

The graph is read from the source with `ast`, not from ``sys.modules``, so every import counts:
those at module level, those under ``if TYPE_CHECKING:`` (a type-only cycle is still a cycle
for the reader and for the type checker), and the lazy ones inside functions (an optional
dependency imported on first use is still a dependency of the module that imports it).

An edge goes from a module to each module it names (``from a2a_client_errors.x import y``
gives ``x``, and ``x.y`` too when ``y`` is a submodule). The package a module sits in is not
counted as imported by it: Python runs ``a2a_client_errors/__init__.py`` before any submodule,
but that is the facade re-exporting the rooms, not a dependency of the rooms on the facade.
An explicit ``from a2a_client_errors import name`` does count, as an edge to the facade.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import a2a_client_errors

PACKAGE = "a2a_client_errors"
ROOT = Path(a2a_client_errors.__file__).parent

# The pure core, and the rooms it must never import (design.md, "Layout").
CORE = (
    "_operations",
    "_reasons",
    "_parsing",
    "_wire",
    "_errors",
    "_sse",
    "_failures",
    "_outcomes",
    "_normalize",
    "_policy",
    "_retry",
    "_breaker",
    "_lookup",
    "hooks",
    "_engine_state",
    "_engine_decide",
    "_engine_journal",
    "_engine",
    "_guard",
)
OUTER = (
    "_transport",
    "_reading",
    "integrations",
    "server",
    "probe",
    "testing",
    "instrumentation",
    "_streaming",
    "cli",
    "demo",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _imports(name: str, path: Path) -> set[str]:
    """Every module of the package that ``name`` imports, wherever the import stands."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            # ``import a.b.c`` names the modules a.b.c; ``from a.b import c`` may name one.
            if target in MODULES and target != name:
                found.add(target)
    return found


GRAPH: dict[str, set[str]] = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph``, as the path that closes it, or None when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found is not None:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found is not None:
                return found
    return None


def _is_in(module: str, room: str) -> bool:
    full = f"{PACKAGE}.{room}"
    return module == full or module.startswith(full + ".")


def test_the_graph_is_read_from_every_module() -> None:
    """The walk finds the rooms (a guard against a test that passes on an empty graph)."""
    for room in (*CORE, *OUTER):
        assert any(_is_in(module, room) for module in MODULES), room
    assert f"{PACKAGE}._guard" in GRAPH[f"{PACKAGE}._transport"]
    assert f"{PACKAGE}._errors" in GRAPH[f"{PACKAGE}._normalize"]


def test_the_import_graph_has_no_cycle() -> None:
    """No module reaches itself through imports, type-only and lazy imports included."""
    assert _cycle(GRAPH) is None


def test_a_cycle_would_be_found() -> None:
    """The cycle finder itself: it sees a type-only loop such as errors -> policy -> errors."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("core", CORE)
def test_the_core_never_imports_the_outer_rooms(core: str) -> None:
    """The pure core imports only the core: no transport, integration, server, probe, ..."""
    name = f"{PACKAGE}.{core}"
    outer = sorted(target for target in GRAPH[name] if any(_is_in(target, room) for room in OUTER))
    assert outer == []
    assert PACKAGE not in GRAPH[name]  # nor the facade that re-exports everything


def test_errors_holds_the_result_and_not_the_decision() -> None:
    """``_errors`` (the normalised result) sits below ``_policy``: it imports no decision."""
    assert GRAPH[f"{PACKAGE}._errors"] <= {f"{PACKAGE}._reasons", f"{PACKAGE}._wire"}


# The probe's rooms, lowest first: each imports only rooms before it in this list.
PROBE_LAYERS = ("_report", "_expect", "_wire", "_session", "_checks")


@pytest.mark.parametrize("room", PROBE_LAYERS)
def test_the_probe_rooms_import_only_the_rooms_below(room: str) -> None:
    """The layers run report <- expect <- wire <- session <- checks <- probe(), never up."""
    name = f"{PACKAGE}.probe.{room}"
    below = {f"{PACKAGE}.probe.{lower}" for lower in PROBE_LAYERS[: PROBE_LAYERS.index(room)]}
    inside = {target for target in GRAPH[name] if _is_in(target, "probe")}
    assert inside <= below
    assert f"{PACKAGE}.probe" not in GRAPH[name]  # never the package, where probe() lives


def test_the_checks_know_the_session_and_never_the_wires() -> None:
    """A check speaks to its session; how the session reaches the agent is not its business."""
    assert f"{PACKAGE}.probe._session" in GRAPH[f"{PACKAGE}.probe._checks"]
    assert f"{PACKAGE}.probe._wire" not in GRAPH[f"{PACKAGE}.probe._checks"]


def test_the_report_knows_nothing_of_how_answers_are_obtained() -> None:
    """The report types import none of the probe's other rooms."""
    inside = {t for t in GRAPH[f"{PACKAGE}.probe._report"] if _is_in(t, "probe")}
    assert inside == set()


# The public namespaces: every module outside them is private (a leading underscore).
NAMESPACES = (
    "types",
    "hooks",
    "journal",
    "server",
    "integrations",
    "instrumentation",
    "testing",
    "probe",
)
PUBLIC_MODULES = {"__init__", "__main__", "cli", "demo", "types", "hooks"}


def test_implementation_modules_are_private() -> None:
    """Only the namespaces, the CLI and the demo are public modules; the rest start with ``_``.

    Inside the namespaces, the submodules a user imports by name (``testing.peer``,
    ``testing.lossy``, ``integrations.grpc``, ``integrations.redis``, ``integrations.postgres``,
    ``integrations.a2a_sdk``, ``integrations.adk``) are public; every other is private.
    """
    allowed_inside = {
        "testing.peer",
        "testing.lossy",
        "integrations.grpc",
        "integrations.redis",
        "integrations.postgres",
        "integrations.a2a_sdk",
        "integrations.adk",
    }
    public = []
    for name in MODULES:
        parts = name.split(".")[1:]
        if not parts or any(part.startswith("_") for part in parts):
            continue
        if len(parts) == 1 and (parts[0] in PUBLIC_MODULES or parts[0] in NAMESPACES):
            continue
        if ".".join(parts) in allowed_inside:
            continue
        public.append(name)
    assert public == []


@pytest.mark.parametrize("gone", ["a2a_client_errors.handlers", "a2a_client_errors.peer"])
def test_the_compatibility_shims_are_gone(gone: str) -> None:
    """The package was never released: old paths are not kept alive."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(gone)


def _private_outside(name: str, target: str) -> bool:
    """Whether ``target`` is a private module of another room than ``name``'s own namespace."""
    own = name.split(".")[:2]  # a2a_client_errors.probe: the probe's own rooms are its own
    parts = target.split(".")
    return parts[:2] != own and any(part.startswith("_") for part in parts[1:])


@pytest.mark.parametrize("user", ["probe", "demo"])
def test_the_probe_and_the_demo_use_public_names_only(user: str) -> None:
    """The best test of the public API: the probe and the demo import no other room's privates."""
    users = [name for name in GRAPH if _is_in(name, user)]
    assert users
    reached = {
        (name, target) for name in users for target in GRAPH[name] if _private_outside(name, target)
    }
    assert not reached


def test_a_private_import_would_be_seen() -> None:
    """The check itself: a private module of the core is seen; the probe's own rooms are not."""
    assert _private_outside("a2a_client_errors.probe._wire", "a2a_client_errors._normalize")
    assert not _private_outside("a2a_client_errors.probe._wire", "a2a_client_errors.probe._report")
    assert not _private_outside("a2a_client_errors.demo", "a2a_client_errors.testing.peer")


def test_the_client_and_server_wings_do_not_cross() -> None:
    """``server/`` imports nothing of ``integrations/``; the integrations no private server module.

    What both read of a2a-sdk (the installed line, the supported range) is ``_sdk_line``'s, a
    module of neither. The deprecated aliases in the integrations import the server's public
    names only.
    """
    server = [name for name in GRAPH if _is_in(name, "server")]
    integrations = [name for name in GRAPH if _is_in(name, "integrations")]
    assert server
    assert integrations
    crossing = {
        (name, target)
        for name in server
        for target in GRAPH[name]
        if _is_in(target, "integrations")
    }
    crossing |= {
        (name, target)
        for name in integrations
        for target in GRAPH[name]
        if _is_in(target, "server") and target != f"{PACKAGE}.server"
    }
    assert crossing == set()
    assert f"{PACKAGE}._sdk_line" in GRAPH[f"{PACKAGE}.server._sdk"]
    assert f"{PACKAGE}._sdk_line" in GRAPH[f"{PACKAGE}.integrations.a2a_sdk._compat"]


def test_no_room_imports_another_rooms_private_module() -> None:
    """A private module is its room's: no other room imports it.

    The root's private modules (``_sdk_line``, ``_reasons``, ...) belong to no room: every room
    may use them. The embedded peer reads a2a-sdk through its own code (``testing._agent``),
    never through the client door's compatibility module.
    """

    def room(module: str) -> str:
        return [*module.split("."), ""][1]

    found = {
        (name.removeprefix(f"{PACKAGE}."), target.removeprefix(f"{PACKAGE}."))
        for name, targets in GRAPH.items()
        for target in targets
        if room(name) != room(target)
        and any(part.startswith("_") for part in target.split(".")[2:])
    }
    assert found == set()
