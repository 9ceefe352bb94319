"""The a2a-sdk compatibility module, held to the installed a2a-sdk.

``integrations/a2a_sdk/_compat.py`` is the one module that reads what a2a-sdk does not document
(`REACHES`). These tests fail loudly when the installed a2a-sdk is outside `SUPPORTED`, or when
one of those names is gone (an upgrade that renamed it), rather than a user's call; and they run
each function of the module against real a2a-sdk clients of a real a2a-sdk peer on 127.0.0.1.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
import uuid
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.types import a2a_pb2

from a2a_client_errors import Guard
from a2a_client_errors import _sdk_line as sdk_line
from a2a_client_errors.integrations.a2a_sdk import UnsupportedSdkError, guard_client
from a2a_client_errors.integrations.a2a_sdk import _compat as compat
from a2a_client_errors.integrations.a2a_sdk._compat import (
    REACHES,
    REACHES_03,
    REACHES_1,
    SUPPORTED,
    TRANSPORT_BINDINGS,
    Reach,
    base_transport,
    best_interface,
    call_context,
    client_binding,
    client_card,
    client_config,
    client_factory,
    client_interceptors,
    client_transport,
    fetch_card,
    grpc_metadata,
    http_clients,
    install_grpc_metadata,
    installed_version,
    is_supported,
    require_supported,
    set_client_card,
    set_not_append,
    single_interface_card,
)
from a2a_client_errors.integrations.a2a_sdk._handlers import LOST_RACE
from a2a_client_errors.testing._agent import queue_shut_down
from a2a_client_errors.testing.peer import EmbeddedPeer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterable, Iterator

# The names _compat reads in a2a-sdk 1.x, against the embedded peer.
pytestmark = pytest.mark.a2a_sdk("1")

PACKAGE = Path(compat.__file__).resolve().parents[2]
COMPAT = Path(compat.__file__).resolve()
BINDINGS = ("JSONRPC", "HTTP+JSON", "GRPC")
UNSUPPORTED = ("0.3.19", "0.3.0", "0.2.0", "2.0.0", "2.1.0rc1", "3", "not a version")


@pytest.fixture(scope="module")
def peer() -> Iterator[EmbeddedPeer]:
    """A real a2a-sdk server on 127.0.0.1: JSON-RPC, HTTP+JSON and gRPC."""
    with EmbeddedPeer(streaming=False, push_notifications=False) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """The httpx client under the a2a-sdk clients of one test."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        yield client


def _config(http: httpx.AsyncClient, *bindings: str) -> ClientConfig:
    return ClientConfig(
        streaming=False,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=list(bindings),
    )


def _interface(card: Any, binding: str) -> Any:
    return next(i for i in card.supported_interfaces if i.protocol_binding == binding)


def _with_tenant(card: Any, tenant: str) -> Any:
    """A copy of ``card`` whose JSON-RPC interface names ``tenant``."""
    copy = a2a_pb2.AgentCard()
    copy.CopyFrom(card)
    _interface(copy, "JSONRPC").tenant = tenant
    return copy


def _hello(text: str = "hello") -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=str(uuid.uuid4()), role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
        )
    )


# --- the supported versions ---------------------------------------------------------------


def test_the_installed_a2a_sdk_is_a_supported_one() -> None:
    """The tests run against an a2a-sdk in the range the module declares, read from metadata."""
    version = metadata.version("a2a-sdk")
    assert installed_version() == version
    assert is_supported(version), f"a2a-sdk {version} is installed; supported: {SUPPORTED}"
    require_supported()


@pytest.mark.parametrize("version", UNSUPPORTED)
def test_an_unsupported_version_gives_the_clear_error(version: str) -> None:
    """A version outside the range: the error names it and the range, and nothing else."""
    assert not is_supported(version)
    with pytest.raises(UnsupportedSdkError) as raised:
        require_supported(version)
    assert (raised.value.version, raised.value.missing) == (version, "")
    assert version in str(raised.value)
    assert SUPPORTED in str(raised.value)


def test_guard_client_refuses_an_unsupported_installed_a2a_sdk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """guard_client checks the installed a2a-sdk before it wraps anything."""
    monkeypatch.setattr(sdk_line, "installed_version", lambda: "2.0.0")
    with pytest.raises(UnsupportedSdkError) as raised:
        guard_client(object(), Guard())
    assert raised.value.version == "2.0.0"


@pytest.mark.parametrize(
    "version",
    ["1.0", "1.0.0", "1.3.0", "1.3.0.post1", "1.4.0+local", "1.99.7", *UNSUPPORTED],
)
def test_the_range_reads_alike_without_packaging(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where packaging cannot be imported (a2a-sdk 0.3 does not need it), the same verdicts."""
    with_packaging = is_supported(version)
    monkeypatch.setitem(sys.modules, "packaging.specifiers", None)  # its import now fails
    assert is_supported(version) == with_packaging


# --- every private name relied on exists ------------------------------------------------------


def _owner(reach: Reach) -> Any:
    """The module, or the class in a module, that ``reach`` names."""
    try:
        return importlib.import_module(reach.owner)
    except ImportError:
        module, _, name = reach.owner.rpartition(".")
        return getattr(importlib.import_module(module), name)


def _instances(peer: EmbeddedPeer, http: httpx.AsyncClient) -> list[Any]:
    """Real a2a-sdk objects of every class whose instances `REACHES` reads."""
    config = _config(http, "JSONRPC")
    client = ClientFactory(config).create(_with_tenant(peer.agent_card, "t1"))
    return [client, client_transport(client)]


async def test_every_private_name_relied_on_exists_in_the_installed_a2a_sdk(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """Each name of `REACHES` is where the module reads it: an upgrade that renames one fails."""
    instances = _instances(peer, http)
    gone = []
    for reach in REACHES:
        owner = _owner(reach)
        if reach.on_instances:
            built = [value for value in instances if isinstance(value, owner)]
            assert built, f"no {reach.owner} was built to look at"
            present = all(hasattr(value, reach.name) for value in built)
        else:
            present = hasattr(owner, reach.name)
        if not present:
            gone.append(f"{reach.owner}.{reach.name}")
    assert not gone, f"a2a-sdk {installed_version()} lacks {gone}: update _compat.py"
    await instances[0].close()


def _private_names(tree: ast.AST) -> set[str]:
    """The ``_name`` attributes read or written, and the ``"_name"`` strings, in ``tree``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id == "self"
        ):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.add(node.value)
    return {name for name in found if name.startswith("_") and not name.startswith("__")}


def test_the_list_of_private_names_is_the_module_s_own() -> None:
    """The two lines' reaches list every ``_name`` the module reads of a2a-sdk, and only those."""
    listed = {reach.name for reach in (*REACHES_1, *REACHES_03) if reach.name.startswith("_")}
    assert _private_names(ast.parse(COMPAT.read_text(encoding="utf-8"))) == listed


def _a2a_imports(tree: ast.AST) -> list[str]:
    modules = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules.append(node.module)
    return [m for m in modules if m == "a2a" or m.startswith("a2a.")]


def test_no_other_module_reaches_into_a2a_sdk() -> None:
    """Outside _compat, no module reads those names or imports a private a2a-sdk module.

    The rest of the integration imports nothing from a2a-sdk at all.
    """
    names = {reach.name for reach in REACHES}
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.resolve() == COMPAT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PACKAGE.parent).as_posix()
        offences += [f"{where}: {name}" for name in sorted(_private_names(tree) & names)]
        imports = _a2a_imports(tree)
        offences += [f"{where}: imports {m}" for m in imports if "._" in m]
        if path.parent == COMPAT.parent:
            offences += [f"{where}: imports {m}" for m in imports]
    assert offences == []


# --- the functions, against real a2a-sdk objects ----------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_factory_made_client_is_read_as_it_was_built(
    peer: EmbeddedPeer, http: httpx.AsyncClient, binding: str
) -> None:
    """Card, configuration, interceptors, transport and binding: what ClientFactory was given."""
    config = _config(http, binding)
    interceptors: list[Any] = [object()]
    client = ClientFactory(config).create(peer.agent_card, interceptors)
    try:
        assert client_card(client) is peer.agent_card
        assert client_config(client) is config
        assert client_interceptors(client) == interceptors
        assert client_interceptors(client) is not client_interceptors(client)  # a copy
        assert client_transport(client) is base_transport(client)  # no tenant: no decorator
        assert client_binding(client) == binding
        assert type(base_transport(client)).__name__ in TRANSPORT_BINDINGS
    finally:
        await client.close()


async def test_the_httpx_clients_a_client_sends_with_are_each_named_once(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """The configuration's client (the transport's too); gRPC: the configuration's only."""
    for binding in BINDINGS:
        client = ClientFactory(_config(http, binding)).create(peer.agent_card)
        try:
            assert http_clients(client) == [http]
        finally:
            await client.close()
    own = ClientFactory(ClientConfig(streaming=False)).create(peer.agent_card)
    try:
        (made,) = http_clients(own)  # the one ClientFactory built for its transport
        assert isinstance(made, httpx.AsyncClient)
        assert made is base_transport(own).httpx_client
    finally:
        await own.close()
    assert http_clients(object()) == []


async def test_a_tenant_s_transport_is_read_under_its_decorator(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """The card names a tenant: the client calls through a decorator, around the binding's own."""
    client = ClientFactory(_config(http, "JSONRPC")).create(_with_tenant(peer.agent_card, "t1"))
    try:
        outer, inner = client_transport(client), base_transport(client)
        assert outer is not inner
        assert type(outer).__name__ == "TenantTransportDecorator"
        assert inner.url == peer.jsonrpc_url
        assert client_binding(client) == "JSONRPC"
    finally:
        await client.close()


def test_a_stand_in_without_the_names_reads_as_holding_nothing() -> None:
    """An object that is not a2a-sdk's: no card, configuration, transport; nothing changed."""
    stand_in = object()
    assert client_card(stand_in) is None
    assert client_config(stand_in) is None
    assert client_interceptors(stand_in) == []
    assert client_transport(stand_in) is None
    assert client_binding(stand_in) == ""
    assert grpc_metadata(client_transport(stand_in)) is None
    assert set_client_card(stand_in, a2a_pb2.AgentCard()) is False
    set_not_append(stand_in)


def _legacy_grpc(card: Any) -> Any:
    """A copy of ``card`` whose gRPC interface says A2A 0.3 (a2a-sdk's compat transport)."""
    copy = a2a_pb2.AgentCard()
    copy.CopyFrom(card)
    _interface(copy, "GRPC").protocol_version = "0.3"
    return copy


def _raised(read: Callable[[], object]) -> UnsupportedSdkError | None:
    try:
        read()
    except UnsupportedSdkError as error:
        return error
    return None


def _assert_clear(readers: Iterable[Callable[[], object]], reach: Reach) -> None:
    """At least one reader reads ``reach``; each says what is missing, the version, the range."""
    errors = [error for read in readers if (error := _raised(read)) is not None]
    assert errors, f"no function reads {reach.owner}.{reach.name}"
    owner = reach.owner.rpartition(".")[2]
    for error in errors:
        assert error.version == installed_version()
        assert error.missing.endswith(f"{owner}.{reach.name}")
        assert SUPPORTED in str(error)


@pytest.mark.parametrize("reach", [r for r in REACHES if r.on_instances], ids=str)
async def test_a_name_missing_from_an_a2a_sdk_object_is_the_clear_error(
    peer: EmbeddedPeer, http: httpx.AsyncClient, reach: Reach
) -> None:
    """An a2a-sdk object lacking a name: the error says it, the version and the range.

    Never an AttributeError deep in a call.
    """
    client = ClientFactory(_config(http, "JSONRPC")).create(_with_tenant(peer.agent_card, "t"))
    transport = client_transport(client)
    holder = client if isinstance(client, _owner(reach)) else transport
    saved = getattr(holder, reach.name)
    delattr(holder, reach.name)
    readers = (
        client_card,
        client_config,
        client_interceptors,
        client_transport,
        base_transport,
        client_binding,
        set_not_append,
        lambda client: set_client_card(client, peer.agent_card),
    )
    try:
        _assert_clear([functools.partial(read, client) for read in readers], reach)
    finally:
        setattr(holder, reach.name, saved)
        await client.close()


@pytest.mark.parametrize("reach", [r for r in REACHES if not r.on_instances], ids=str)
async def test_a_name_missing_from_an_a2a_sdk_class_is_the_clear_error(
    peer: EmbeddedPeer, http: httpx.AsyncClient, reach: Reach, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for a name a2a-sdk's classes or modules hold."""
    grpc_client = ClientFactory(_config(http, "GRPC")).create(peer.agent_card)
    legacy = ClientFactory(_config(http, "GRPC")).create(_legacy_grpc(peer.agent_card))
    assert type(base_transport(legacy)).__name__ == "CompatGrpcTransport"
    readers = (
        lambda: best_interface(list(peer.agent_card.supported_interfaces), "GRPC"),
        lambda: grpc_metadata(base_transport(grpc_client)),
        lambda: grpc_metadata(base_transport(legacy)),
    )
    monkeypatch.delattr(_owner(reach), reach.name)
    try:
        _assert_clear(readers, reach)
    finally:
        monkeypatch.undo()
        await grpc_client.close()
        await legacy.close()


async def test_a_client_holds_the_card_it_is_given(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """set_client_card: the client's later reads (and calls) use the new card."""
    client = ClientFactory(_config(http, "JSONRPC")).create(peer.agent_card)
    fresh = a2a_pb2.AgentCard()
    fresh.CopyFrom(peer.agent_card)
    fresh.name = "read again"
    try:
        assert set_client_card(client, fresh) is True
        assert client_card(client) is fresh
        task = (await client.send_message(_hello()).__anext__()).task
        assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    finally:
        await client.close()


def test_the_factory_s_best_interface_is_picked(peer: EmbeddedPeer) -> None:
    """best_interface: a2a-sdk's choice per binding (version 1.0 before 0.3), None for none."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer.agent_card)
    card.supported_interfaces.insert(
        0, a2a_pb2.AgentInterface(url="old:1", protocol_binding="GRPC", protocol_version="0.3")
    )
    interfaces = list(card.supported_interfaces)
    assert best_interface(interfaces, "GRPC") == _interface(peer.agent_card, "GRPC")
    assert best_interface(interfaces, "JSONRPC").url == peer.jsonrpc_url
    assert best_interface(interfaces, "SOAP") is None


async def test_the_grpc_metadata_is_a2a_sdk_s_and_can_be_replaced(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """grpc_metadata reads what a2a-sdk sends; a2a-sdk calls what install_grpc_metadata puts."""
    jsonrpc = ClientFactory(_config(http, "JSONRPC")).create(peer.agent_card)
    client = ClientFactory(_config(http, "GRPC")).create(peer.agent_card)
    transport = base_transport(client)
    try:
        assert grpc_metadata(base_transport(jsonrpc)) is None
        sent = grpc_metadata(transport)
        assert sent is not None
        assert ("a2a-version", "1.0") in sent(None)
        seen: list[Any] = []

        def recording(context: Any) -> list[tuple[str, str]]:
            seen.append(context)
            return sent(context)

        install_grpc_metadata(transport, recording)
        context = ClientCallContext()
        task = (await client.send_message(_hello(), context=context).__anext__()).task
        assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
        assert seen
    finally:
        await client.close()
        await jsonrpc.close()


async def test_service_parameters_are_set_not_appended_over_grpc(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """set_not_append: one a2a-version entry, the call's; done twice, the same replacement."""
    client = ClientFactory(_config(http, "GRPC")).create(peer.agent_card)
    transport = base_transport(client)
    try:
        set_not_append(client)
        replaced = grpc_metadata(transport)
        set_not_append(client)
        assert grpc_metadata(transport) is replaced
        assert replaced is not None
        context = ClientCallContext(service_parameters={"A2A-Version": "0.3", "X-Other": "x"})
        assert replaced(context) == [("a2a-version", "0.3"), ("x-other", "x")]
        assert replaced(None) == [("a2a-version", "1.0")]
    finally:
        await client.close()


def test_a_call_context_is_copied_with_new_service_parameters() -> None:
    """call_context: a new context, or a copy of the caller's; the caller's is never changed."""
    made = call_context(None, {"A2A-Version": "1.0"})
    assert isinstance(made, ClientCallContext)
    assert made.service_parameters == {"A2A-Version": "1.0"}
    theirs = ClientCallContext(timeout=5.0, service_parameters={"a": "1"}, state={"k": 1})
    kept = call_context(theirs, {"b": "2"})
    assert (kept.timeout, kept.service_parameters, kept.state) == (5.0, {"b": "2"}, {"k": 1})
    marked = call_context(theirs, {"b": "2"}, {"k": 1, "resent": True})
    assert marked.state == {"k": 1, "resent": True}
    assert (theirs.service_parameters, theirs.state) == ({"a": "1"}, {"k": 1})


async def test_a_client_is_built_for_one_interface_of_the_card(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """single_interface_card and client_factory: the factory can pick only that interface."""
    rest = _interface(peer.agent_card, "HTTP+JSON")
    card = single_interface_card(
        peer.agent_card, url=rest.url, binding="HTTP+JSON", protocol_version="1.0"
    )
    assert len(peer.agent_card.supported_interfaces) == 3  # the card given is untouched
    assert [i.url for i in card.supported_interfaces] == [rest.url]
    assert card.name == peer.agent_card.name
    client = client_factory(_config(http, "JSONRPC", "HTTP+JSON")).create(card)
    try:
        assert client_binding(client) == "HTTP+JSON"
        task = (await client.send_message(_hello()).__anext__()).task
        assert task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    finally:
        await client.close()


async def test_the_card_is_fetched_from_the_peer(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """fetch_card reads the card at the URL given, as a2a-sdk's resolver reads it."""
    card = await fetch_card(http, peer.card_url)
    assert card.name == peer.agent_card.name
    assert list(card.supported_interfaces) == list(peer.agent_card.supported_interfaces)


async def test_a_guarded_client_reads_its_card_again_and_holds_it(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """guard_client over a factory-made client: its route, and read_card, through _compat."""
    client = ClientFactory(_config(http, "JSONRPC", "HTTP+JSON")).create(peer.agent_card)
    guarded = guard_client(client, Guard(sleep=lambda _: None), card_url=peer.card_url)
    try:
        assert [i.binding for i in guarded.interfaces] == ["JSONRPC", "HTTP+JSON"]
        before = guarded.card
        card = await guarded.read_card()
        assert card is not before
        assert guarded.card is card
        assert client_card(client) is card
        events = [event async for event in guarded.send_message(_hello())]
        assert events[-1].task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    finally:
        await guarded.close()


def test_the_peer_s_one_unexported_name_missing_is_the_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The embedded peer reads ``QueueShutDown`` itself: an a2a-sdk without it is named."""
    from a2a.server.events import event_queue

    assert queue_shut_down() is event_queue.QueueShutDown
    monkeypatch.delattr(event_queue, "QueueShutDown")
    with pytest.raises(UnsupportedSdkError) as raised:
        queue_shut_down()
    assert raised.value.version == installed_version()
    assert raised.value.missing == "a2a.server.events.event_queue.QueueShutDown"
    assert SUPPORTED in str(raised.value)


async def test_a_lost_cancel_race_is_told_by_the_peer_s_closed_queue(
    peer: EmbeddedPeer, http: httpx.AsyncClient
) -> None:
    """queue_shut_down is what a2a-sdk's closed queue raises, as the peer's cancel race needs.

    The peer refuses the cancel only once COMPLETED is stored (its closed queue tells it); the
    guarded client then reads the task, marked as a lost race.
    """
    assert issubclass(queue_shut_down(), Exception)
    client = ClientFactory(_config(http, "JSONRPC")).create(peer.agent_card)
    guarded = guard_client(client, Guard(sleep=lambda _: None))
    try:
        request = _hello("complete-on-cancel")
        request.configuration.return_immediately = True
        (event,) = [event async for event in guarded.send_message(request)]
        task = event.task
        outcome = await guarded.cancel_task(a2a_pb2.CancelTaskRequest(id=task.id))
        assert outcome.status.state == a2a_pb2.TASK_STATE_COMPLETED
        assert dict(outcome.metadata)["a2a_client_errors"] == LOST_RACE["a2a_client_errors"]
    finally:
        await guarded.close()
