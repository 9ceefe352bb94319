"""Print pip constraints that pin each requirement of the package to the lowest release it allows.

The runtime dependencies and those of the extras named on the command line (by default: every
extra that does not need a2a-sdk), each ``name>=X`` as ``name==X``, read from the installed
package's metadata (what pip reads). `.ci/run` tests with them the promise that metadata makes
to a user whose resolver picked the oldest releases (a framework's pins, a locked
application). a2a-sdk is left out: its lines have their own runs.

    python .ci/lowest.py [EXTRA ...] > constraints.txt
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

PACKAGE = "a2a-client-errors"
EXTRAS = ("grpc", "redis", "postgres", "prometheus", "otel")
_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;]*)"
    r"(?:;\s*(?P<marker>.*))?$"
)
_LOWER = re.compile(r">=\s*([^,\s]+)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def lowest(extras: tuple[str, ...] = EXTRAS, requires: list[str] | None = None) -> list[str]:
    """``name==X`` for each requirement (runtime, and of ``extras``) with a lower bound X."""
    if requires is None:
        requires = metadata.requires(PACKAGE) or []
    pins: dict[str, str] = {}
    for requirement in requires:
        found = _REQUIREMENT.match(requirement)
        if found is None:
            continue
        marker = found.group("marker") or ""
        extra = _EXTRA.search(marker)
        if extra is not None and extra.group(1) not in extras:
            continue
        name = found.group("name").lower().replace("_", "-")
        lower = _LOWER.search(found.group("spec"))
        if lower is not None and name != PACKAGE:
            pins.setdefault(name, lower.group(1))
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


if __name__ == "__main__":
    print("\n".join(lowest(tuple(sys.argv[1:]) or EXTRAS)))
