"""Every reach into a2a-sdk beyond its documented API, and the a2a-sdk names that differ by line.

The guarded client needs a few things a2a-sdk keeps to itself: the card, configuration,
transport and interceptors a ``Client`` was built with, the interface ``ClientFactory`` picks,
the gRPC metadata a transport sends. Each is one small function here, and only here; the rest
of the integration calls these functions and imports nothing from a2a-sdk itself.

`SUPPORTED` says once which a2a-sdk versions the integration supports; `guard_client` refuses
any other (`require_supported`). Every private name read here is listed per line
(`REACHES_1`, `REACHES_03`; `REACHES` is the installed line's): 1.x's were read in the source of
a2a-sdk 1.0.0 to 1.2.0 and run against 1.3.0, 0.3's read in 0.3.20 and run against 0.3.26 (the
tests' versions). ``tests/test_a2a_sdk_compat.py`` and ``tests/sdk03/test_compat03.py`` hold
the installed a2a-sdk to them, so an upgrade that renames one fails there, not in a user's
call. Should an a2a-sdk object lack
one all the same, the function raises `UnsupportedSdkError`, naming the a2a-sdk version found
and `SUPPORTED`, never an ``AttributeError`` deep in a call. An object that is not a2a-sdk's (a
stand-in for a client) and lacks it reads as None: it has no card, no configuration.

Two a2a-sdk lines are supported (`SUPPORTED`): 1.x (protobuf messages, ``supported_interfaces``,
``SendMessageRequest``, ``subscribe``) and 0.3 (pydantic models, ``url`` with
``additional_interfaces``, ``Message`` sent as it is, ``resubscribe``, no ``list_tasks``). What
differs between them is a `Line`, chosen once from the installed a2a-sdk (`line`): the guarded
client asks it to build a request, read an event or a card, and never branches on versions.
"""

from __future__ import annotations

import functools
import importlib
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._sdk_line import (
    INSTALL_HINT,
    SUPPORTED,
    UnsupportedSdkError,
    installed_version,
    is_supported,
    line_name,
    require_supported,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from types import ModuleType

    import httpx

__all__ = [
    "REACHES",
    "REACHES_03",
    "REACHES_1",
    "SUPPORTED",
    "TRANSPORT_BINDINGS",
    "CardInterface",
    "Line",
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
    "http_clients",
    "install_grpc_metadata",
    "installed_version",
    "is_supported",
    "line",
    "line_name",
    "pb2",
    "require_supported",
    "set_client_card",
    "set_not_append",
    "single_interface_card",
]


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


REACHES_1: Final = (
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
)
"""Every name the 1.x line is read for that a2a-sdk does not document (checked 1.0.0 to 1.3.0)."""

REACHES_03: Final = (
    Reach("a2a.client.base_client.BaseClient", "_card", on_instances=True),
    Reach("a2a.client.base_client.BaseClient", "_config", on_instances=True),
    Reach("a2a.client.base_client.BaseClient", "_transport", on_instances=True),
    Reach("a2a.client.client.Client", "_middleware", on_instances=True),
)
"""Every name the 0.3 line is read for that a2a-sdk does not document (checked 0.3.20, 0.3.26)."""

TRANSPORT_BINDINGS: Final = {
    "JsonRpcTransport": "JSONRPC",
    "CompatJsonRpcTransport": "JSONRPC",
    "RestTransport": "HTTP+JSON",
    "CompatRestTransport": "HTTP+JSON",
    "GrpcTransport": "GRPC",
    "CompatGrpcTransport": "GRPC",
}
"""The binding each of a2a-sdk's client transports speaks, by class name (subclasses too)."""


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


def http_clients(client: Any) -> list[httpx.AsyncClient]:
    """The httpx clients an a2a-sdk ``Client`` sends with, each once.

    Its configuration's ``httpx_client`` (documented: the one the caller built, which card
    reads use too), and its binding's transport's ``httpx_client`` (a public attribute of
    the JSON-RPC and HTTP+JSON transports, read in a2a-sdk 1.3.0 and 0.3.26; the client
    ``ClientFactory`` builds when the configuration has none). A gRPC client, or a stand-in,
    has none of the second.

    Raises:
        UnsupportedSdkError: an a2a-sdk client without its configuration or transport.
    """
    import httpx  # noqa: PLC0415 (a type check; httpx is imported by whoever calls this)

    found: list[httpx.AsyncClient] = []
    owners = (client_config(client), base_transport(client))
    for http in (getattr(owner, "httpx_client", None) for owner in owners):
        if isinstance(http, httpx.AsyncClient) and all(http is not seen for seen in found):
            found.append(http)
    return found


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


# --- public names that differ between a2a-sdk lines -------------------------------------------


def pb2() -> ModuleType:
    """a2a-sdk's protobuf messages (``a2a.types.a2a_pb2``; a2a-sdk 1.x, not 0.3).

    Raises:
        ImportError: a2a-sdk 1.x is not installed (naming the version found, and the
            extra's install line).
    """
    try:
        from a2a.types import a2a_pb2  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:
        found = installed_version()
        have = f"a2a-sdk {found} is installed" if found else "a2a-sdk is not installed"
        msg = f"this needs a2a-sdk 1.x's protobuf messages ({have}): {INSTALL_HINT}"
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
    return client_factory_class()(config)


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


# --- the two lines ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardInterface:
    """One interface an agent card lists, as either line writes it.

    Attributes:
        binding: its protocol binding (``"JSONRPC"``, ``"HTTP+JSON"``, ``"GRPC"``).
        url: where it is served.
        tenant: the tenant named for it (1.x only), or "".
        protocol_version: the A2A version named for it (0.3: the card's own), or "".
    """

    binding: str
    url: str
    tenant: str = ""
    protocol_version: str = ""


JSONRPC: Final = "JSONRPC"


_GENERATION_FIELD: Final = "if_generation_match"
"""Draft A2A 1.1's precondition on a send (``SendMessageConfiguration``, field 5)."""


class Line:
    """What differs between a2a-sdk lines, for the guarded client (see the module).

    Attributes:
        name: ``"1.x"`` or ``"0.3"``.
        lists_tasks: whether its client has ``list_tasks`` (A2A 0.3 has no ListTasks).
        sets_service_parameters: whether a call context carries ``A2A-Version`` and
            ``A2A-Extensions`` (1.x's service parameters; 0.3 sends neither per call).
        methods: the client's method for each A2A operation it has.
        reaches: the undocumented names it is read for.
    """

    name: str = ""
    lists_tasks: bool = True
    sets_service_parameters: bool = True
    methods: Mapping[str, str] = {}
    reaches: tuple[Reach, ...] = ()

    # cards
    def interfaces(self, card: Any) -> list[CardInterface]:  # pragma: no cover (abstract)
        """The interfaces ``card`` lists, in its order (none for no card)."""
        raise NotImplementedError

    def client_bindings(self, config: Any) -> frozenset[str]:  # pragma: no cover (abstract)
        """The bindings a ``ClientConfig`` lets a client speak (JSON-RPC when it names none)."""
        raise NotImplementedError

    def best_interface(self, card: Any, binding: str) -> CardInterface | None:  # pragma: no cover
        """The interface of ``binding`` its ``ClientFactory`` builds a client for."""
        raise NotImplementedError

    def single_interface_card(self, card: Any, interface: CardInterface) -> Any:  # pragma: no cover
        """A copy of ``card`` listing ``interface`` only (``card`` itself is never changed)."""
        raise NotImplementedError

    def create(self, factory: Any, card: Any, client: Any) -> Any:  # pragma: no cover (abstract)
        """A client for ``card`` from ``factory``, with ``client``'s interceptors."""
        raise NotImplementedError

    async def fetch_card(self, http: httpx.AsyncClient, url: str) -> Any:  # pragma: no cover
        """The agent card at ``url`` exactly."""
        raise NotImplementedError

    def call_context(
        self, context: Any, service_parameters: Mapping[str, str], state: Mapping[str, Any] | None
    ) -> Any:
        """A call context like ``context`` with these service parameters (None: it cannot)."""
        return None

    def prepare_client(self, client: Any) -> None:
        """Ready a wrapped client (once; what it does is the line's)."""

    # requests
    def task_request(self, task_id: str) -> Any:  # pragma: no cover (abstract)
        """The request of GetTask for ``task_id``."""
        raise NotImplementedError

    def subscribe(self, client: Any, task_id: str, context: Any) -> Any:  # pragma: no cover
        """Subscribe ``client`` to the task's events (an async iterator)."""
        raise NotImplementedError

    async def list_tasks(self, client: Any, query: Any, context: Any) -> Any:  # pragma: no cover
        """One page of ListTasks (`a2a_client_errors._lookup.TaskPage`) for a query."""
        raise NotImplementedError

    def extended_card_request(self) -> Any:
        """The request of GetExtendedAgentCard (None: the method takes none)."""
        return None

    # sends
    def message_of(self, request: Any) -> Any:  # pragma: no cover (abstract)
        """The message a send carries."""
        raise NotImplementedError

    def with_message_id(self, message: Any, message_id: str) -> Any:  # pragma: no cover
        """A copy of the line's ``Message`` with ``message_id`` (TypeError: not its Message)."""
        raise NotImplementedError

    def blocking(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        """Whether a send waits for its task to settle (the caller's wish, or the client's)."""
        raise NotImplementedError  # pragma: no cover (abstract)

    def asks_for_push(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        """Whether a send asks for push notifications (itself, or by the client's config)."""
        raise NotImplementedError  # pragma: no cover (abstract)

    def generation_precondition(self, request: Any, options: Mapping[str, Any]) -> bool:
        """Whether a send carries draft A2A 1.1's ``if_generation_match``.

        Neither line's models have the field (1.x follows the 1.0 proto, 0.3 the 0.3 schema):
        False, unless a model that has it sets it.
        """
        raise NotImplementedError  # pragma: no cover (abstract)

    def outgoing(
        self, request: Any, options: Mapping[str, Any], *, non_blocking: bool
    ) -> tuple[Any, dict[str, Any]]:
        """The send to make: a copy with a message id, not blocking if asked (never in place)."""
        raise NotImplementedError  # pragma: no cover (abstract)

    def polling_send(
        self, request: Any, options: Mapping[str, Any], config: Any
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """What a transport's ``send_message`` is called with for a fallback send.

        Without streaming, push or blocking: the fallback then polls the task.
        """
        raise NotImplementedError  # pragma: no cover (abstract)

    def answer_events(self, response: Any) -> tuple[Any, Any]:  # pragma: no cover (abstract)
        """A unary send's answer as the stream event it stands for, and its task (or None)."""
        raise NotImplementedError

    def skill_of(self, message: Any) -> str | None:  # pragma: no cover (abstract)
        """The string a message's metadata holds under ``"skill"``, read without writing."""
        raise NotImplementedError

    # events and tasks
    def event_kind(self, event: Any) -> str | None:  # pragma: no cover (abstract)
        """``"task"``, ``"message"``, ``"status_update"``, ``"artifact_update"`` or None."""
        raise NotImplementedError

    def event_task(self, event: Any) -> Any:  # pragma: no cover (abstract)
        """The task a ``"task"`` event carries."""
        raise NotImplementedError

    def task_event(self, task: Any) -> Any:  # pragma: no cover (abstract)
        """The stream event that carries ``task``."""
        raise NotImplementedError

    def task_parts(self, task: Any) -> tuple[float | None, tuple[tuple[str, bool], ...]]:
        """A task's last status time and its history's messages.

        The time in seconds since the epoch (None: not said); each message as
        ``(message_id, from the user)``.
        """
        raise NotImplementedError  # pragma: no cover (abstract)

    def marked(self, task: Any, metadata: Mapping[str, Any]) -> Any:  # pragma: no cover
        """``task``, its metadata updated with ``metadata`` (a task this package read)."""
        raise NotImplementedError

    def snapshot(self, task: Any) -> bytes:  # pragma: no cover (abstract)
        """Bytes that change whenever the task does."""
        raise NotImplementedError


class _Line1(Line):
    """a2a-sdk 1.x: protobuf messages (1.0.0 to 1.3.0)."""

    name = "1.x"
    methods: Mapping[str, str] = {
        "SendMessage": "send_message",
        "SendStreamingMessage": "send_message",
        "GetTask": "get_task",
        "ListTasks": "list_tasks",
        "CancelTask": "cancel_task",
        "SubscribeToTask": "subscribe",
        "CreateTaskPushNotificationConfig": "create_task_push_notification_config",
        "GetTaskPushNotificationConfig": "get_task_push_notification_config",
        "ListTaskPushNotificationConfigs": "list_task_push_notification_configs",
        "DeleteTaskPushNotificationConfig": "delete_task_push_notification_config",
        "GetExtendedAgentCard": "get_extended_agent_card",
    }
    reaches = REACHES_1

    def interfaces(self, card: Any) -> list[CardInterface]:
        return [
            CardInterface(i.protocol_binding, i.url, i.tenant, i.protocol_version)
            for i in getattr(card, "supported_interfaces", None) or ()
        ]

    def client_bindings(self, config: Any) -> frozenset[str]:
        named = getattr(config, "supported_protocol_bindings", None) or ()
        return frozenset(named) or frozenset({JSONRPC})

    def best_interface(self, card: Any, binding: str) -> CardInterface | None:
        found = best_interface(list(getattr(card, "supported_interfaces", ())), binding)
        if found is None:
            return None
        return CardInterface(
            found.protocol_binding, found.url, found.tenant, found.protocol_version
        )

    def single_interface_card(self, card: Any, interface: CardInterface) -> Any:
        return single_interface_card(
            card,
            url=interface.url,
            binding=interface.binding,
            protocol_version=interface.protocol_version,
            tenant=interface.tenant,
        )

    def create(self, factory: Any, card: Any, client: Any) -> Any:
        return factory.create(card, client_interceptors(client))

    async def fetch_card(self, http: httpx.AsyncClient, url: str) -> Any:
        return await fetch_card(http, url)

    def call_context(
        self, context: Any, service_parameters: Mapping[str, str], state: Mapping[str, Any] | None
    ) -> Any:
        return call_context(context, service_parameters, state)

    def prepare_client(self, client: Any) -> None:
        set_not_append(client)

    def task_request(self, task_id: str) -> Any:
        return pb2().GetTaskRequest(id=task_id)

    def subscribe(self, client: Any, task_id: str, context: Any) -> Any:
        return client.subscribe(pb2().SubscribeToTaskRequest(id=task_id), context=context)

    async def list_tasks(self, client: Any, query: Any, context: Any) -> Any:
        from a2a_client_errors._lookup import TaskPage  # noqa: PLC0415 (no cycle at import)

        request = pb2().ListTasksRequest(
            page_size=query.page_size, include_artifacts=False, page_token=query.page_token
        )
        if query.context_id:
            request.context_id = query.context_id
        if query.history_length is not None:
            request.history_length = query.history_length
        response = await client.list_tasks(request, context=context)
        return TaskPage(
            tuple(response.tasks),
            response.next_page_token,
            response.total_size or None,  # 0: not said (proto3 has no presence for it)
            response.ByteSize(),
        )

    def extended_card_request(self) -> Any:
        return pb2().GetExtendedAgentCardRequest()

    def message_of(self, request: Any) -> Any:
        return request.message

    def with_message_id(self, message: Any, message_id: str) -> Any:
        kind = pb2().Message
        if not isinstance(message, kind):
            msg = f"not an a2a-sdk 1.x Message: {type(message).__name__}"
            raise TypeError(msg)
        copy = kind()
        copy.CopyFrom(message)
        copy.message_id = message_id
        return copy

    def blocking(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        return not request.configuration.return_immediately

    def asks_for_push(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        configuration = getattr(request, "configuration", None)
        if configuration is not None and configuration.HasField("task_push_notification_config"):
            return True
        return getattr(config, "push_notification_config", None) is not None

    def generation_precondition(self, request: Any, options: Mapping[str, Any]) -> bool:
        configuration: Any = getattr(request, "configuration", None)
        fields = getattr(getattr(configuration, "DESCRIPTOR", None), "fields_by_name", {})
        return _GENERATION_FIELD in fields and bool(configuration.HasField(_GENERATION_FIELD))

    def outgoing(
        self, request: Any, options: Mapping[str, Any], *, non_blocking: bool
    ) -> tuple[Any, dict[str, Any]]:
        outgoing = type(request)()  # always a copy: a2a-sdk's client writes its own config in
        outgoing.CopyFrom(request)
        if not outgoing.message.message_id:
            outgoing.message.message_id = str(uuid.uuid4())
        if non_blocking:
            outgoing.configuration.return_immediately = True
        return outgoing, dict(options)

    def polling_send(
        self, request: Any, options: Mapping[str, Any], config: Any
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        copy = type(request)()
        copy.CopyFrom(request)
        copy.configuration.return_immediately = True
        copy.configuration.ClearField("task_push_notification_config")
        return (copy,), {}

    def answer_events(self, response: Any) -> tuple[Any, Any]:
        types = pb2()
        if response.HasField("message"):
            return types.StreamResponse(message=response.message), None
        return types.StreamResponse(task=response.task), response.task

    def skill_of(self, message: Any) -> str | None:
        # Indexing a protobuf Struct by a missing key adds it (as null): ``get`` does not.
        fields = getattr(getattr(message, "metadata", None), "fields", None)
        if fields is None:
            return None
        value = fields.get("skill")
        text = value.string_value if value is not None else ""
        return text if isinstance(text, str) and text else None

    def event_kind(self, event: Any) -> str | None:
        kind: str | None = event.WhichOneof("payload")
        return kind

    def event_task(self, event: Any) -> Any:
        return event.task

    def task_event(self, task: Any) -> Any:
        return pb2().StreamResponse(task=task)

    def task_parts(self, task: Any) -> tuple[float | None, tuple[tuple[str, bool], ...]]:
        status = task.status
        stamped = status.HasField("timestamp")
        updated_at = status.timestamp.ToNanoseconds() / 1e9 if stamped else None
        return updated_at, tuple((m.message_id, m.role == _ROLE_USER) for m in task.history)

    def marked(self, task: Any, metadata: Mapping[str, Any]) -> Any:
        task.metadata.update(metadata)
        return task

    def snapshot(self, task: Any) -> bytes:
        found: bytes = task.SerializeToString(deterministic=True)
        return found


_ROLE_USER: Final = 1  # a2a_pb2.Role.ROLE_USER


class _Line03(Line):
    """a2a-sdk 0.3: pydantic models (0.3.20 to 0.3.26)."""

    name = "0.3"
    lists_tasks = False
    sets_service_parameters = False
    methods: Mapping[str, str] = {
        "SendMessage": "send_message",
        "SendStreamingMessage": "send_message",
        "GetTask": "get_task",
        "CancelTask": "cancel_task",
        "SubscribeToTask": "resubscribe",
        "CreateTaskPushNotificationConfig": "set_task_callback",
        "GetTaskPushNotificationConfig": "get_task_callback",
        "GetExtendedAgentCard": "get_card",
    }
    reaches = REACHES_03

    def interfaces(self, card: Any) -> list[CardInterface]:
        if card is None or not getattr(card, "url", None):
            return []
        version = str(getattr(card, "protocol_version", None) or "")
        preferred = CardInterface(str(card.preferred_transport or JSONRPC), card.url, "", version)
        others = getattr(card, "additional_interfaces", None) or ()
        return [preferred, *(CardInterface(str(i.transport), i.url, "", version) for i in others)]

    def client_bindings(self, config: Any) -> frozenset[str]:
        named = getattr(config, "supported_transports", None) or ()
        return frozenset(str(getattr(b, "value", b)) for b in named) or frozenset({JSONRPC})

    def best_interface(self, card: Any, binding: str) -> CardInterface | None:
        # 0.3's ClientFactory maps each binding to a URL, the card's later interfaces
        # overriding earlier ones of the same binding.
        found = None
        for interface in self.interfaces(card):
            if interface.binding == binding:
                found = interface
        return found

    def single_interface_card(self, card: Any, interface: CardInterface) -> Any:
        return card.model_copy(
            update={
                "url": interface.url,
                "preferred_transport": interface.binding,
                "additional_interfaces": None,
            }
        )

    def create(self, factory: Any, card: Any, client: Any) -> Any:
        return factory.create(card, interceptors=list(_read(client, "_middleware") or ()))

    async def fetch_card(self, http: httpx.AsyncClient, url: str) -> Any:
        response = await http.get(url)
        response.raise_for_status()
        return _types03().AgentCard.model_validate(response.json())

    def task_request(self, task_id: str) -> Any:
        return _types03().TaskQueryParams(id=task_id)

    def subscribe(self, client: Any, task_id: str, context: Any) -> Any:
        return client.resubscribe(_types03().TaskIdParams(id=task_id), context=context)

    async def list_tasks(self, client: Any, query: Any, context: Any) -> Any:
        from a2a_client_errors._lookup import ReadFailedError  # noqa: PLC0415 (no cycle)

        raise ReadFailedError("A2A 0.3 has no ListTasks")

    def message_of(self, request: Any) -> Any:
        return request

    def with_message_id(self, message: Any, message_id: str) -> Any:
        if not isinstance(message, _types03().Message):
            msg = f"not an a2a-sdk 0.3 Message: {type(message).__name__}"
            raise TypeError(msg)
        return message.model_copy(update={"message_id": message_id})

    def blocking(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        configuration = options.get("configuration")
        if configuration is not None and "blocking" in configuration.model_fields_set:
            return bool(configuration.blocking)
        return not getattr(config, "polling", False)

    def asks_for_push(self, request: Any, options: Mapping[str, Any], config: Any) -> bool:
        configuration = options.get("configuration")
        if getattr(configuration, "push_notification_config", None) is not None:
            return True
        return bool(getattr(config, "push_notification_configs", None))

    def generation_precondition(self, request: Any, options: Mapping[str, Any]) -> bool:
        configuration = options.get("configuration")
        return getattr(configuration, _GENERATION_FIELD, None) is not None

    def outgoing(
        self, request: Any, options: Mapping[str, Any], *, non_blocking: bool
    ) -> tuple[Any, dict[str, Any]]:
        kwargs = dict(options)
        if not request.message_id:
            request = request.model_copy(update={"message_id": str(uuid.uuid4())})
        if non_blocking:
            given = kwargs.get("configuration")
            kwargs["configuration"] = (
                _types03().MessageSendConfiguration(blocking=False)
                if given is None
                else given.model_copy(update={"blocking": False})
            )
        return request, kwargs

    def polling_send(
        self, request: Any, options: Mapping[str, Any], config: Any
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        types = _types03()
        given = options.get("configuration")
        modes = getattr(given, "accepted_output_modes", None) or getattr(
            config, "accepted_output_modes", None
        )
        params = types.MessageSendParams(
            message=request,
            configuration=types.MessageSendConfiguration(
                accepted_output_modes=modes or None, blocking=False
            ),
            metadata=options.get("request_metadata"),
        )
        return (params,), {"extensions": options.get("extensions")}

    def answer_events(self, response: Any) -> tuple[Any, Any]:
        if self.event_kind(response) == "message":
            return response, None
        return (response, None), response

    def skill_of(self, message: Any) -> str | None:
        metadata = getattr(message, "metadata", None)
        text = metadata.get("skill") if isinstance(metadata, dict) else None
        return text if isinstance(text, str) and text else None

    def event_kind(self, event: Any) -> str | None:
        if isinstance(event, tuple) and len(event) == 2:
            update = event[1]
            if update is None:
                return "task"
            return "status_update" if hasattr(update, "status") else "artifact_update"
        kind = getattr(event, "kind", None)
        if kind == "message":
            return "message"
        if kind == "task":
            return "task"
        return None

    def event_task(self, event: Any) -> Any:
        return event[0] if isinstance(event, tuple) else event

    def task_event(self, task: Any) -> Any:
        return (task, None)

    def task_parts(self, task: Any) -> tuple[float | None, tuple[tuple[str, bool], ...]]:
        from a2a_client_errors._lookup import parse_timestamp  # noqa: PLC0415 (no cycle)

        updated_at = parse_timestamp(task.status.timestamp)
        history = tuple((m.message_id, _value(m.role) == "user") for m in task.history or ())
        return updated_at, history

    def marked(self, task: Any, metadata: Mapping[str, Any]) -> Any:
        return task.model_copy(update={"metadata": {**(task.metadata or {}), **metadata}})

    def snapshot(self, task: Any) -> bytes:
        return str(task.model_dump_json()).encode()


def _types03() -> Any:
    """a2a-sdk 0.3's ``a2a.types`` (pydantic models), as Any: the type checker sees 1.x's."""
    return importlib.import_module("a2a.types")


def _value(member: Any) -> Any:
    """An enum member's value, or the value itself."""
    return getattr(member, "value", member)


_LINES: Final = {"1.x": _Line1(), "0.3": _Line03()}


@functools.cache
def line() -> Line:
    """The installed a2a-sdk's line (see `Line`)."""
    return _LINES[line_name()]


REACHES: Final = line().reaches
"""The undocumented names the installed line is read for (its tests hold a2a-sdk to them)."""
