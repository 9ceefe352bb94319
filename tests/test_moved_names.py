"""Names that moved to the server side, still importable from their old place for one release.

``A2AErrorInterceptor`` (a grpc.aio *server* interceptor) and ``RedisDedupeStore`` (the store
an agent's `deduplicate` keeps claims in) are ``a2a_client_errors.server``'s. Their old names,
in the client's integrations, are the same objects, each read with a `DeprecationWarning`
that names the new place; nothing else of the old modules warns, and neither lists them.
"""

from __future__ import annotations

import importlib

import pytest

OLD_PLACES = [
    ("a2a_client_errors.integrations.grpc", "A2AErrorInterceptor"),
    ("a2a_client_errors.integrations.redis", "RedisDedupeStore"),
]


@pytest.mark.parametrize(("old", "name"), OLD_PLACES)
def test_the_old_name_is_the_server_one_and_warns(old: str, name: str) -> None:
    """The old name gives the server's object, with a warning naming where it lives now."""
    module = importlib.import_module(old)
    server = importlib.import_module("a2a_client_errors.server")
    moved_to = r"import it from a2a_client_errors\.server"
    with pytest.warns(DeprecationWarning, match=moved_to) as seen:
        moved = getattr(module, name)
    assert moved is getattr(server, name)
    assert len(seen) == 1
    assert f"{old}.{name} is deprecated" in str(seen[0].message)
    assert seen[0].filename == __file__  # the warning points at the caller's line


@pytest.mark.parametrize(("old", "name"), OLD_PLACES)
def test_the_old_module_does_not_list_it(old: str, name: str) -> None:
    """``__all__`` and a star import leave the deprecated name out (and so do not warn)."""
    module = importlib.import_module(old)
    assert name not in module.__all__
    namespace: dict[str, object] = {}
    exec(f"from {old} import *", namespace)  # noqa: S102 (a fixed, local statement)
    assert name not in namespace


@pytest.mark.parametrize(("old", "name"), OLD_PLACES)
def test_an_unknown_name_is_still_an_attribute_error(old: str, name: str) -> None:
    """The alias answers its own name only: any other missing name is an AttributeError."""
    module = importlib.import_module(old)
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        _ = module.Missing
    assert name not in vars(module)  # not cached: every read warns
