"""Which a2a-sdk is installed, and whether it is one this package supports.

Both sides of the package that run on a2a-sdk read it here: the client's integration
(`a2a_client_errors.integrations.a2a_sdk`), the server adapters (`a2a_client_errors.server`),
the embedded peer and the CLI. What differs between the lines past the version lives with each
side (the client's compatibility module, the server's ``_sdk``).

* `SUPPORTED`: the a2a-sdk versions supported (a PEP 440 specifier);
* `installed_version`, `is_supported`, `require_supported`: the installed version, and the
  check that refuses any other with `UnsupportedSdkError`;
* `line_name`: the installed line, ``"1.x"`` or ``"0.3"``.

Nothing here imports a2a-sdk at import time.
"""

from __future__ import annotations

import functools
import operator
import re
from importlib import metadata
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DISTRIBUTION",
    "INSTALL_HINT",
    "SUPPORTED",
    "UnsupportedSdkError",
    "installed_version",
    "is_supported",
    "line_name",
    "require_supported",
]

DISTRIBUTION: Final = "a2a-sdk"
SUPPORTED: Final = ">=0.3.20,<2"
"""The a2a-sdk versions the integration supports (a PEP 440 version specifier): the 0.3 line
from 0.3.20 (the first with a per-call ``configuration`` on ``send_message``) and the 1.x line.
No a2a-sdk release lies between 0.3.26 and 1.0.0."""
INSTALL_HINT: Final = "pip install 'a2a-client-errors[a2a]'"
_SUPPORTED_HINT: Final = f"pip install 'a2a-sdk{SUPPORTED}'"


class UnsupportedSdkError(RuntimeError):
    """The installed a2a-sdk is not one the integration supports, or lacks a name it reads.

    Attributes:
        version: the installed a2a-sdk's version (None when it cannot be read).
        missing: what it lacks (``"BaseClient._card"``), or "" when the version alone is refused.
    """

    def __init__(self, version: str | None, missing: str = "") -> None:
        found = f"a2a-sdk {version}" if version else "an a2a-sdk of unknown version"
        text = f"{found} is installed; the a2a-sdk integration supports a2a-sdk {SUPPORTED}"
        if missing:
            text += f" ({missing} is missing)"
        super().__init__(f"{text}: {_SUPPORTED_HINT}")
        self.version = version
        self.missing = missing


# --- the version ------------------------------------------------------------------------------


@functools.cache
def installed_version() -> str | None:
    """The installed a2a-sdk's version, from its distribution (None: not installed as one)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def is_supported(version: str) -> bool:
    """Whether a2a-sdk ``version`` is in `SUPPORTED`.

    Read with ``packaging`` (which a2a-sdk 1.x requires) when it can be imported, pre-releases
    included; else by release numbers alone (``1.4.0rc1`` as ``1.4.0``). A version that cannot
    be read is not supported.
    """
    try:
        from packaging.specifiers import SpecifierSet  # noqa: PLC0415 (a2a-sdk 1.x's)
        from packaging.version import InvalidVersion  # noqa: PLC0415
    except ImportError:
        return _within(version, SUPPORTED)
    try:
        return SpecifierSet(SUPPORTED).contains(version, prereleases=True)
    except InvalidVersion:
        return False


_RELEASE: Final = re.compile(r"\s*v?(\d+(?:\.\d+)*)")
_CLAUSE: Final = re.compile(r"\s*(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)\s*")


def _within(version: str, specifier: str) -> bool:
    """Whether ``version``'s release numbers meet every clause of ``specifier`` (no packaging)."""
    found = _RELEASE.match(version)
    if found is None:
        return False
    have = _numbers(found.group(1))
    for clause in specifier.split(","):
        matched = _CLAUSE.fullmatch(clause)
        if matched is None:
            return False
        sign, bound = matched.group(1), _numbers(matched.group(2))
        width = max(len(have), len(bound))
        ours, theirs = have + (0,) * (width - len(have)), bound + (0,) * (width - len(bound))
        if not _COMPARE[sign](ours, theirs):
            return False
    return True


def _numbers(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


_COMPARE: Final[dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


def require_supported(version: str | None = None) -> None:
    """Refuse an a2a-sdk the integration does not support; `guard_client` calls it.

    Args:
        version: the version to judge (default: the installed one, `installed_version`).
            One that cannot be read (a2a-sdk on the path without its distribution) is taken
            as it is: the names it lacks, if any, are said when they are read.

    Raises:
        ImportError: a2a-sdk is not installed.
        UnsupportedSdkError: its version is outside `SUPPORTED`.
    """
    found = installed_version() if version is None else version
    if found is None:
        try:
            import a2a  # noqa: F401, PLC0415 (an optional extra)
        except ImportError as exc:
            msg = f"the a2a-sdk integration needs a2a-sdk {SUPPORTED}: {INSTALL_HINT}"
            raise ImportError(msg) from exc
    elif not is_supported(found):
        raise UnsupportedSdkError(found)


def line_name(version: str | None = None) -> str:
    """The line of a2a-sdk ``version`` (default: the installed one): ``"1.x"`` or ``"0.3"``.

    A version that cannot be read (a2a-sdk on the path without its distribution) is told by
    what the package holds: 1.x's protobuf messages, or not.
    """
    found = installed_version() if version is None else version
    if found is not None:
        release = _RELEASE.match(found)
        return "0.3" if release is not None and _numbers(release.group(1))[0] == 0 else "1.x"
    try:
        from a2a.types import a2a_pb2  # noqa: F401, PLC0415 (only 1.x has it)
    except ImportError:
        return "0.3"
    return "1.x"
