"""The public surface: ``__all__`` keeps the names the design card fixes, and they all exist."""

from __future__ import annotations

import enum

import a2a_client_errors

# The names the design card keeps for the core (design.md, "Public names"); the Guard and
# server names join ``__all__`` with their modules.
CORE_NAMES = {
    "classify",
    "normalize",
    "Decision",
    "Action",
    "Reason",
    "CallError",
    "Policy",
    "CallFailed",
}


def test_all_keeps_the_design_card_names() -> None:
    """Every core public name of the design card is exported in ``__all__``."""
    assert set(a2a_client_errors.__all__) >= CORE_NAMES


def test_every_name_in_all_exists() -> None:
    """Every name in ``__all__`` is an attribute of the package."""
    missing = [name for name in a2a_client_errors.__all__ if not hasattr(a2a_client_errors, name)]
    assert missing == []


def test_all_has_no_duplicates_and_no_private_names() -> None:
    """``__all__`` lists each name once and no private name (``__version__`` aside)."""
    names = a2a_client_errors.__all__
    assert len(names) == len(set(names))
    assert [n for n in names if n.startswith("_") and n != "__version__"] == []


def test_star_import_gives_exactly_all() -> None:
    """``from a2a_client_errors import *`` binds exactly the names in ``__all__``."""
    namespace: dict[str, object] = {}
    exec("from a2a_client_errors import *", namespace)  # noqa: S102 (a fixed, local statement)
    namespace.pop("__builtins__", None)
    assert set(namespace) == set(a2a_client_errors.__all__)


def test_public_kinds() -> None:
    """The functions are callable, Action and Reason are str enums, CallFailed is an exception."""
    assert callable(a2a_client_errors.classify)
    assert callable(a2a_client_errors.normalize)
    for enum_type in (a2a_client_errors.Action, a2a_client_errors.Reason):
        assert issubclass(enum_type, str)
        assert issubclass(enum_type, enum.Enum)
    assert issubclass(a2a_client_errors.CallFailed, Exception)


def test_version_is_a_string() -> None:
    """The package exposes its version as a string."""
    assert isinstance(a2a_client_errors.__version__, str)
    assert a2a_client_errors.__version__
