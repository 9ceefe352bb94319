"""The a2a-sdk versions the extras accept start where the integration's support starts.

``pyproject.toml``'s extras name a2a-sdk with a version specifier; ``_compat.SUPPORTED`` is the
range ``guard_client`` accepts. The extras take its lower bound, clause for clause, and no upper
bound: pip settles an upper-bounded requirement before the frameworks named beside it (a2a-sdk
1.x first), then backtracks a framework that pins a2a-sdk 0.3 to a release a year old instead of
taking 0.3. An a2a-sdk past `SUPPORTED` (none is published) is refused by ``guard_client``,
which names `SUPPORTED`; an extra starting lower would install a pair that never works.
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


def test_every_extra_starts_where_support_starts_with_no_upper_bound() -> None:
    """Each extra's a2a-sdk specifier is `SUPPORTED`'s lower bound, and nothing else."""
    lower = SpecifierSet(",".join(str(s) for s in SpecifierSet(SUPPORTED) if s.operator == ">="))
    assert lower, "SUPPORTED has a lower bound"
    differing = {
        where: str(requirement.specifier)
        for where, requirement in _a2a_sdk_requirements().items()
        if requirement.specifier != lower
    }
    assert differing == {}, f"_compat.SUPPORTED is {SUPPORTED!r}"
