"""The 0.3 line of the compatibility layer, against the installed a2a-sdk 0.3's own objects."""

from __future__ import annotations

import importlib

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    Message,
    MessageSendConfiguration,
    PushNotificationConfig,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TransportProtocol,
)

from a2a_client_errors.integrations.a2a_sdk import UnsupportedSdkError, guard_client
from a2a_client_errors.integrations.a2a_sdk._compat import (
    REACHES,
    REACHES_03,
    SUPPORTED,
    CardInterface,
    client_card,
    http_clients,
    installed_version,
    line,
    line_name,
    require_supported,
)
from a2a_client_errors.integrations.a2a_sdk._lookup import task_view

pytestmark = pytest.mark.a2a_sdk("0.3")


def card(**fields: object) -> AgentCard:
    """A 0.3 card: JSON-RPC preferred, HTTP+JSON and gRPC beside it."""
    given: dict[str, object] = {
        "name": "a",
        "description": "d",
        "version": "1",
        "url": "http://127.0.0.1:1/jsonrpc",
        "preferred_transport": "JSONRPC",
        "additional_interfaces": [
            AgentInterface(url="http://127.0.0.1:1/rest", transport="HTTP+JSON"),
            AgentInterface(url="127.0.0.1:2", transport="GRPC"),
        ],
        "capabilities": AgentCapabilities(streaming=True, push_notifications=False),
        "default_input_modes": ["text/plain"],
        "default_output_modes": ["text/plain"],
        "skills": [],
        **fields,
    }
    return AgentCard.model_validate(given)


def hello(**fields: object) -> Message:
    """A user message (``m1`` unless another id is given)."""
    given: dict[str, object] = {"message_id": "m1", **fields}
    return Message.model_validate(
        {"role": "user", "parts": [{"kind": "text", "text": "hi"}], **given}
    )


def test_the_installed_line_is_0_3_and_supported() -> None:
    """a2a-sdk 0.3.2x is in `SUPPORTED` and read as the 0.3 line; 0.3.19 is refused by name."""
    assert line_name() == "0.3"
    assert line().name == "0.3"
    assert REACHES == REACHES_03
    require_supported()
    with pytest.raises(UnsupportedSdkError) as raised:
        require_supported("0.3.19")
    assert "0.3.19" in str(raised.value)
    assert SUPPORTED in str(raised.value)
    assert installed_version() is not None


async def test_every_name_the_0_3_line_reaches_exists() -> None:
    """Each undocumented name of `REACHES_03` is on the objects a ClientFactory builds."""
    async with httpx.AsyncClient() as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card())
        for reach in REACHES_03:
            module, _, owner = reach.owner.rpartition(".")
            kind = getattr(importlib.import_module(module), owner)
            assert isinstance(client, kind)
            assert hasattr(client, reach.name), f"{reach.owner}.{reach.name}"
        assert client_card(client) is not None
        await client.close()


def test_a_0_3_card_lists_its_interfaces() -> None:
    """``url`` with ``preferred_transport`` first, then ``additional_interfaces``."""
    sdk = line()
    read = sdk.interfaces(card(supports_authenticated_extended_card=True))
    assert [(i.binding, i.url) for i in read] == [
        ("JSONRPC", "http://127.0.0.1:1/jsonrpc"),
        ("HTTP+JSON", "http://127.0.0.1:1/rest"),
        ("GRPC", "127.0.0.1:2"),
    ]
    assert {i.protocol_version for i in read} == {"0.3.0"}
    assert sdk.interfaces(None) == []


def test_the_factory_s_interface_is_the_last_of_its_binding() -> None:
    """a2a-sdk 0.3's ClientFactory maps each binding to the card's last URL for it."""
    twice = card(
        additional_interfaces=[
            AgentInterface(url="127.0.0.1:2", transport="GRPC"),
            AgentInterface(url="127.0.0.1:3", transport="GRPC"),
        ]
    )
    best = line().best_interface(twice, "GRPC")
    assert best == CardInterface("GRPC", "127.0.0.1:3", "", "0.3.0")
    assert line().best_interface(twice, "HTTP+JSON") is None


def test_a_single_interface_card_is_a_copy() -> None:
    """The copy names one interface; the card given is unchanged."""
    given = card()
    before = given.model_dump()
    copy = line().single_interface_card(given, CardInterface("HTTP+JSON", "http://h/rest"))
    assert (copy.url, copy.preferred_transport, copy.additional_interfaces) == (
        "http://h/rest",
        "HTTP+JSON",
        None,
    )
    assert given.model_dump() == before


def test_the_client_s_bindings_are_read_from_its_config() -> None:
    """``supported_transports`` (JSON-RPC when empty)."""
    sdk = line()
    assert sdk.client_bindings(ClientConfig()) == {"JSONRPC"}
    config = ClientConfig(supported_transports=[TransportProtocol.grpc, "HTTP+JSON"])
    assert sdk.client_bindings(config) == {"GRPC", "HTTP+JSON"}


def test_an_outgoing_send_is_a_copy_and_goes_without_blocking_when_asked() -> None:
    """A message without an id gets one; the caller's configuration keeps its fields."""
    sdk = line()
    message = hello(message_id="")
    given = MessageSendConfiguration(accepted_output_modes=["text/plain"])
    outgoing, options = sdk.outgoing(message, {"configuration": given}, non_blocking=True)
    assert message.message_id == ""
    assert outgoing.message_id
    assert options["configuration"].blocking is False
    assert options["configuration"].accepted_output_modes == ["text/plain"]
    assert given.model_fields_set == {"accepted_output_modes"}
    same, kept = sdk.outgoing(hello(), {}, non_blocking=False)
    assert same.message_id == "m1"
    assert kept == {}


def test_blocking_and_push_are_read_from_the_call_and_the_client() -> None:
    """The call's configuration first, then the client's (``polling``, push configs)."""
    sdk = line()
    assert sdk.blocking(hello(), {}, ClientConfig()) is True
    assert sdk.blocking(hello(), {}, ClientConfig(polling=True)) is False
    explicit = {"configuration": MessageSendConfiguration(blocking=True)}
    assert sdk.blocking(hello(), explicit, ClientConfig(polling=True)) is True
    push = PushNotificationConfig(url="http://x")
    assert not sdk.asks_for_push(hello(), {}, ClientConfig())
    assert sdk.asks_for_push(hello(), {}, ClientConfig(push_notification_configs=[push]))
    asked = {"configuration": MessageSendConfiguration(push_notification_config=push)}
    assert sdk.asks_for_push(hello(), asked, ClientConfig())


def test_events_and_tasks_are_read_as_0_3_gives_them() -> None:
    """``(task, update)`` pairs and Messages; a task's history and status time."""
    sdk = line()
    task = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.working, timestamp="2026-01-01T00:00:00Z"),
        history=[hello(), Message(role=Role.agent, message_id="a1", parts=[])],
    )
    status = TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=TaskStatus(state=TaskState.completed), final=True
    )
    artifact = TaskArtifactUpdateEvent.model_validate(
        {"taskId": "t1", "contextId": "c1", "artifact": {"artifactId": "x", "parts": []}}
    )
    assert sdk.event_kind((task, None)) == "task"
    assert sdk.event_kind((task, status)) == "status_update"
    assert sdk.event_kind((task, artifact)) == "artifact_update"
    assert sdk.event_kind(hello()) == "message"
    assert sdk.event_kind("something else") is None
    assert sdk.event_task((task, None)) is task
    assert sdk.task_event(task) == (task, None)
    view = task_view(task)
    assert view.history == (("m1", True), ("a1", False))
    assert view.updated_at == 1767225600.0
    assert not view.settled
    marked = sdk.marked(task, {"k": "v"})
    assert marked.metadata == {"k": "v"}
    assert task.metadata is None
    assert sdk.snapshot(task) != sdk.snapshot(marked)
    assert sdk.skill_of(hello(metadata={"skill": "s1"})) == "s1"
    assert sdk.skill_of(hello(metadata={"skill": 3})) is None
    assert sdk.skill_of(hello()) is None


def test_a_polling_send_asks_for_no_stream_push_or_blocking() -> None:
    """The fallback send: one MessageSendParams, non-blocking, the client's output modes."""
    args, kwargs = line().polling_send(
        hello(),
        {"request_metadata": {"r": 1}, "extensions": ["urn:x"]},
        ClientConfig(accepted_output_modes=["text/plain"]),
    )
    (params,) = args
    assert params.configuration.blocking is False
    assert params.configuration.push_notification_config is None
    assert params.configuration.accepted_output_modes == ["text/plain"]
    assert params.metadata == {"r": 1}
    assert kwargs == {"extensions": ["urn:x"]}
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.working))
    assert line().answer_events(task) == ((task, None), task)
    assert line().answer_events(hello()) == (hello(), None)


def test_a_call_context_cannot_carry_service_parameters() -> None:
    """0.3 sends no A2A-Version or A2A-Extensions per call: there is no context to make."""
    assert line().call_context(None, {"A2A-Version": "1.0"}, None) is None
    assert line().extended_card_request() is None


async def test_a_guarded_0_3_client_holds_the_wrapped_client_s_card() -> None:
    """guard_client takes a 0.3 client as it is; its card and route read the 0.3 shape."""
    async with httpx.AsyncClient() as http:
        config = ClientConfig(httpx_client=http, supported_transports=["JSONRPC", "HTTP+JSON"])
        guarded = guard_client(ClientFactory(config).create(card()))
        assert [i.binding for i in guarded.interfaces] == ["JSONRPC", "HTTP+JSON"]
        assert guarded.card_url == "http://127.0.0.1:1/.well-known/agent-card.json"
        await guarded.close()


async def test_the_httpx_clients_a_0_3_client_sends_with_are_each_named_once() -> None:
    """The configuration's client, which the 0.3 transport sends with too: named once."""
    async with httpx.AsyncClient() as http:
        for binding in ("JSONRPC", "HTTP+JSON"):
            config = ClientConfig(httpx_client=http, supported_transports=[binding])
            client = ClientFactory(config).create(card())
            assert http_clients(client) == [http]
            await client.close()
    own = ClientFactory(ClientConfig()).create(card())
    (made,) = http_clients(own)  # the one ClientFactory built for its transport
    assert isinstance(made, httpx.AsyncClient)
    await own.close()
