"""Every reach into a2a-sdk beyond its documented API, and the a2a-sdk names that differ by line.

The guarded client needs a few things a2a-sdk keeps to itself: the card, configuration,
transport and interceptors a ``Client`` was built with, the interface ``ClientFactory`` picks,
the gRPC metadata a transport sends. Each is one small function here, and only here; the rest
of the integration calls these functions and imports nothing from a2a-sdk itself.

`SUPPORTED` says once which a2a-sdk versions the integration supports; `guard_client` refuses
any other (`require_supported`). Every private name read here is listed in `REACHES`, and was
read in the source of a2a-sdk 1.0.0, 1.0.1, 1.0.2, 1.0.3, 1.1.0 and 1.2.0 and run against 1.3.0
(the tests' version): ``tests/test_a2a_sdk_compat.py`` holds the installed a2a-sdk to `REACHES`,
so an upgrade that renames one fails there, not in a user's call. Should an a2a-sdk object lack
one all the same, the function raises `UnsupportedSdkError`, naming the a2a-sdk version found
and `SUPPORTED`, never an ``AttributeError`` deep in a call. An object that is not a2a-sdk's (a
stand-in for a client) and lacks it reads as None: it has no card, no configuration.

a2a-sdk 0.3 (pydantic types, ``additional_interfaces``, other transports) is not supported yet;
when it is, this module is where the two lines differ.
"""

from __future__ import annotations

import functools
import operator
import re
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import ModuleType

    import httpx

__all__ = [
    "REACHES",
    "SUPPORTED",
    "TRANSPORT_BINDINGS",
    "Reach",
    "UnsupportedSdkError",
    "base_transport",
    "best_interface",
    "call_context",
    "client_binding",
    "client_card",
    "client_config",
    "client_factory",
    "client_factory_class",
    "client_interceptors",
    "client_transport",
    "fetch_card",
    "grpc_metadata",
    "install_grpc_metadata",
    "installed_version",
    "is_supported",
    "pb2",
    "queue_shut_down",
    "require_supported",
    "set_client_card",
    "set_not_append",
    "single_interface_card",
]

DISTRIBUTION: Final = "a2a-sdk"
SUPPORTED: Final = ">=1.0,<2"
"""The a2a-sdk versions the integration supports (a PEP 440 version specifier)."""
INSTALL_HINT: Final = "pip install 'a2a-client-errors[a2a]'"
_SUPPORTED_HINT: Final = f"pip install 'a2a-sdk{SUPPORTED}'"


@dataclass(frozen=True, slots=True)
class Reach:
    """One name a2a-sdk does not document, read by this module.

    Attributes:
        owner: where it lives: a module, or a class in one
            (``"a2a.client.client_factory.ClientFactory"``).
        name: the name read there.
        on_instances: whether each instance gets it (``__init__`` assigns it), not the class.
    """

    owner: str
    name: str
    on_instances: bool = False


REACHES: Final = (
    Reach("a2a.client.base_client.BaseClient", "_card", on_instances=True),
    Reach("a2a.client.base_client.BaseClient", "_config", on_instances=True),
    Reach("a2a.client.base_client.BaseClient", "_transport", on_instances=True),
    Reach("a2a.client.client.Client", "_interceptors", on_instances=True),
    Reach(
        "a2a.client.transports.tenant_decorator.TenantTransportDecorator",
        "_base",
        on_instances=True,
    ),
    Reach("a2a.client.transports.grpc.GrpcTransport", "_get_grpc_metadata"),
    Reach("a2a.compat.v0_3.grpc_transport.CompatGrpcTransport", "_get_grpc_metadata"),
    Reach("a2a.client.client_factory.ClientFactory", "_find_best_interface"),
    Reach("a2a.server.events.event_queue", "QueueShutDown"),
)
"""Every name this module reads that a2a-sdk does not document (its tests hold a2a-sdk to it)."""

TRANSPORT_BINDINGS: Final = {
    "JsonRpcTransport": "JSONRPC",
    "CompatJsonRpcTransport": "JSONRPC",
    "RestTransport": "HTTP+JSON",
    "CompatRestTransport": "HTTP+JSON",
    "GrpcTransport": "GRPC",
    "CompatGrpcTransport": "GRPC",
}
"""The binding each of a2a-sdk's client transports speaks, by class name (subclasses too)."""


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
        pb2()
    elif not is_supported(found):
        raise UnsupportedSdkError(found)


# --- private names ----------------------------------------------------------------------------


def _of_sdk(value: object) -> bool:
    """Whether ``value`` is an instance of a2a-sdk's classes (or of a subclass of one)."""
    return any(kind.__module__.partition(".")[0] == "a2a" for kind in type(value).__mro__)


def _missing(what: str) -> UnsupportedSdkError:
    """The error for a name the installed a2a-sdk lacks (``"BaseClient._card"``)."""
    return UnsupportedSdkError(installed_version(), what)


def _read(value: object, name: str) -> Any:
    """``value``'s attribute ``name``: if missing, None (a stand-in) or the error (a2a-sdk's)."""
    try:
        return getattr(value, name)
    except AttributeError:
        if _of_sdk(value):
            raise _missing(f"{type(value).__name__}.{name}") from None
        return None


def client_card(client: Any) -> Any:
    """The agent card an a2a-sdk ``Client`` holds (``BaseClient._card``).

    Checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        The card; None for a stand-in without one.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without it.
    """
    return _read(client, "_card")


def set_client_card(client: Any, card: Any) -> bool:
    """Make an a2a-sdk ``Client`` hold ``card`` from now on (``BaseClient._card``).

    a2a-sdk itself does so after ``get_extended_agent_card``; the calls made next read it.
    Checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        Whether the client holds it: False for a stand-in that holds no card at all.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without a card attribute.
    """
    if not hasattr(client, "_card"):
        if _of_sdk(client):
            raise _missing(f"{type(client).__name__}._card")
        return False
    client._card = card
    return True


def client_config(client: Any) -> Any:
    """The ``ClientConfig`` an a2a-sdk ``Client`` was built with (``BaseClient._config``).

    Checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        The configuration; None for a stand-in without one.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without it.
    """
    return _read(client, "_config")


def client_interceptors(client: Any) -> list[Any]:
    """The interceptors an a2a-sdk ``Client`` calls through (``Client._interceptors``).

    Checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        A new list of them; empty for a stand-in without any.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without them.
    """
    return list(_read(client, "_interceptors") or ())


def client_transport(client: Any) -> Any:
    """The transport an a2a-sdk ``Client`` calls over (``BaseClient._transport``), as it is.

    Under a tenant decorator when the card names a tenant for the interface (calls made
    through it carry the tenant). Checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        The transport; None for a stand-in without one.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without it.
    """
    return _read(client, "_transport")


def base_transport(client: Any) -> Any:
    """The binding's own transport of an a2a-sdk ``Client``, out of its tenant decorator.

    ``BaseClient._transport``, and ``TenantTransportDecorator._base`` under it; checked
    against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        The transport; None for a stand-in without one.

    Raises:
        UnsupportedSdkError: an a2a-sdk client or decorator without them.
    """
    transport = client_transport(client)
    if type(transport).__name__ == "TenantTransportDecorator" and _of_sdk(transport):
        return _read(transport, "_base")
    return transport


def client_binding(client: Any) -> str:
    """The protocol binding an a2a-sdk ``Client``'s transport speaks (`TRANSPORT_BINDINGS`).

    Checked against a2a-sdk 1.0.0 to 1.3.0 (the same six transport classes in each).

    Returns:
        ``"JSONRPC"``, ``"HTTP+JSON"`` or ``"GRPC"``; "" when the transport is none of
        a2a-sdk's (a stand-in's, a custom one).
    """
    return _binding_of(base_transport(client))


def _binding_of(transport: object) -> str:
    for kind in type(transport).__mro__:
        binding = TRANSPORT_BINDINGS.get(kind.__name__)
        if binding is not None and kind.__module__.startswith("a2a."):
            return binding
    return ""


def best_interface(interfaces: Sequence[Any], binding: str) -> Any:
    """The interface of ``binding`` that a2a-sdk's ``ClientFactory`` builds a client for.

    ``ClientFactory._find_best_interface`` (version 1.0 first, then newer, then 0.3, then
    none named); checked against a2a-sdk 1.0.0 to 1.3.0.

    Returns:
        The interface, or None when none is of that binding.

    Raises:
        UnsupportedSdkError: a ``ClientFactory`` without it.
    """
    from a2a.client import ClientFactory  # noqa: PLC0415 (the extra is installed here)

    find = getattr(ClientFactory, "_find_best_interface", None)
    if find is None:
        raise _missing("ClientFactory._find_best_interface")
    return find(list(interfaces), protocol_bindings=[binding])


def grpc_metadata(transport: Any) -> Callable[[Any], list[tuple[str, str]]] | None:
    """What a gRPC transport sends as metadata for a call context (``_get_grpc_metadata``).

    ``GrpcTransport`` and ``CompatGrpcTransport`` of a2a-sdk 1.0.0 to 1.3.0: a function of the
    ``ClientCallContext`` (or None) giving ``(key, value)`` pairs.

    Returns:
        The function; None for a transport of another binding, or none of a2a-sdk's.

    Raises:
        UnsupportedSdkError: an a2a-sdk gRPC transport without it.
    """
    if _binding_of(transport) != "GRPC":
        return None
    found: Callable[[Any], list[tuple[str, str]]] | None = _read(transport, "_get_grpc_metadata")
    return found


def install_grpc_metadata(
    transport: Any, metadata_of: Callable[[Any], list[tuple[str, str]]]
) -> None:
    """Make a gRPC transport send ``metadata_of(context)`` as each call's metadata.

    Replaces ``_get_grpc_metadata`` on that one transport object, which a2a-sdk 1.0.0 to 1.3.0
    call for every unary and streaming call.
    """
    transport._get_grpc_metadata = metadata_of


class _Replacing:
    """A transport's metadata with one value per key, the last one said (see `set_not_append`)."""

    __slots__ = ("metadata_of",)

    def __init__(self, metadata_of: Callable[[Any], list[tuple[str, str]]]) -> None:
        self.metadata_of = metadata_of

    def __call__(self, context: Any) -> list[tuple[str, str]]:
        entries: dict[str, str] = {}
        for key, value in self.metadata_of(context):
            entries.pop(key.lower(), None)
            entries[key.lower()] = value  # the last one said is the one meant
        return list(entries.items())


def set_not_append(client: Any) -> None:
    """Make the client's gRPC transport *set* service parameters, never append them.

    a2a-sdk's gRPC transport (1.0.0 to 1.3.0) sends ``a2a-version: 1.0`` and then appends the
    call's own service parameters, so an agent that reads the header as one value sees
    ``"1.0, 0.3"`` (or, after a version fix, ``"1.0, 1.0"``) and refuses both. Here the call's
    value replaces the default, one entry per key, as the HTTP bindings already do. Other
    bindings, and clients that are not a2a-sdk's, are left as they are; done twice, once.

    Raises:
        UnsupportedSdkError: an a2a-sdk client or gRPC transport without what it replaces.
    """
    transport = base_transport(client)
    metadata_of = grpc_metadata(transport)
    if metadata_of is not None and not isinstance(metadata_of, _Replacing):
        install_grpc_metadata(transport, _Replacing(metadata_of))


def queue_shut_down() -> type[Exception]:
    """The exception an a2a-sdk server's closed event queue raises (``QueueShutDown``).

    ``a2a.server.events.event_queue`` holds it in a2a-sdk 1.0.0 to 1.3.0 (asyncio's from Python
    3.13, culsans' before), without exporting it.

    Raises:
        UnsupportedSdkError: the module does not hold it.
    """
    from a2a.server.events import event_queue  # noqa: PLC0415 (the extra is installed here)

    found = getattr(event_queue, "QueueShutDown", None)
    if found is None:
        raise _missing("a2a.server.events.event_queue.QueueShutDown")
    shut_down: type[Exception] = found
    return shut_down


# --- public names that differ between a2a-sdk lines -------------------------------------------


def pb2() -> ModuleType:
    """a2a-sdk's protobuf messages (``a2a.types.a2a_pb2``; a2a-sdk 1.x, not 0.3).

    Raises:
        ImportError: a2a-sdk 1.x is not installed (with the extra's install line).
    """
    try:
        from a2a.types import a2a_pb2  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:
        msg = f"the a2a-sdk integration needs a2a-sdk {SUPPORTED}: {INSTALL_HINT}"
        raise ImportError(msg) from exc
    return a2a_pb2


def call_context(
    context: Any, service_parameters: Mapping[str, str], state: Mapping[str, Any] | None = None
) -> Any:
    """A ``ClientCallContext`` like ``context`` with these service parameters (and state).

    a2a-sdk 1.x carries ``A2A-Version`` and ``A2A-Extensions`` as service parameters (1.0.0 to
    1.3.0); ``context`` itself is never changed.

    Args:
        context: the call's ``ClientCallContext``, or None for a new one.
        service_parameters: all of the new context's service parameters.
        state: all of its state, when it changes.
    """
    update: dict[str, Any] = {"service_parameters": dict(service_parameters)}
    if state is not None:
        update["state"] = dict(state)
    if context is None:
        from a2a.client import ClientCallContext  # noqa: PLC0415 (the extra is installed here)

        return ClientCallContext(**update)
    return context.model_copy(update=update)


def client_factory(config: Any) -> Any:
    """a2a-sdk's ``ClientFactory`` with ``config`` (a ``ClientConfig``)."""
    from a2a.client import ClientFactory  # noqa: PLC0415 (the extra is installed here)

    return ClientFactory(config)


def client_factory_class() -> type[Any]:
    """a2a-sdk's ``ClientFactory`` class, to subclass (the same name on 0.3 and 1.x)."""
    from a2a.client import ClientFactory  # noqa: PLC0415 (the extra is installed here)

    factory: type[Any] = ClientFactory
    return factory


def single_interface_card(
    card: Any, *, url: str, binding: str, protocol_version: str = "", tenant: str = ""
) -> Any:
    """A copy of an ``AgentCard`` listing one interface only, so that a factory picks that one.

    a2a-sdk 1.x lists interfaces in ``supported_interfaces`` (1.0.0 to 1.3.0); ``card`` itself
    is never changed.
    """
    from a2a.types import AgentCard, AgentInterface  # noqa: PLC0415 (the extra is installed here)

    copy = AgentCard()
    copy.CopyFrom(card)
    del copy.supported_interfaces[:]
    copy.supported_interfaces.append(
        AgentInterface(
            url=url, protocol_binding=binding, protocol_version=protocol_version, tenant=tenant
        )
    )
    return copy


async def fetch_card(http: httpx.AsyncClient, url: str) -> Any:
    """The agent card at ``url`` exactly, read with a2a-sdk's ``A2ACardResolver``.

    Raises:
        Exception: what a2a-sdk raises for a card it cannot fetch or read.
    """
    from a2a.client import A2ACardResolver  # noqa: PLC0415 (the extra is installed here)

    return await A2ACardResolver(http, url, agent_card_path="").get_agent_card()
