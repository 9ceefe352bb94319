"""The a2a-sdk versions the extras accept are those the integration says it supports.

``pyproject.toml``'s extras name a2a-sdk with a version specifier; ``_compat.SUPPORTED`` is the
range ``guard_client`` accepts. They must be one range, whatever it is: an extra that accepts an
a2a-sdk the integration refuses installs a broken pair, and the other way round hides a line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from a2a_client_errors.integrations.a2a_sdk._compat import SUPPORTED

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest needs tomli there
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _a2a_sdk_requirements() -> dict[str, Requirement]:
    """Each extra's a2a-sdk requirement, by ``extra: requirement`` text."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = {}
    for extra, requirements in project["optional-dependencies"].items():
        for text in requirements:
            requirement = Requirement(text)
            if requirement.name == "a2a-sdk":
                found[f"{extra}: {text}"] = requirement
    return found


def test_the_extras_name_a2a_sdk() -> None:
    """The a2a and probe extras (at least) install a2a-sdk."""
    extras = {where.partition(":")[0] for where in _a2a_sdk_requirements()}
    assert {"a2a", "probe"} <= extras


def test_every_extra_accepts_exactly_the_supported_a2a_sdk() -> None:
    """Each extra's a2a-sdk specifier is `SUPPORTED`, clause for clause."""
    supported = SpecifierSet(SUPPORTED)
    differing = {
        where: str(requirement.specifier)
        for where, requirement in _a2a_sdk_requirements().items()
        if requirement.specifier != supported
    }
    assert differing == {}, f"_compat.SUPPORTED is {SUPPORTED!r}"
