"""a2a-sdk's own client, guarded, against a real a2a-sdk peer on every binding."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import (
    DegradeNeeded,
    FixRequestNeeded,
    Guard,
    ReconcileNeeded,
    ReportNeeded,
    RetryExhausted,
)
from a2a_client_errors.integrations.a2a_sdk._handlers import DecisionHandlers, Polling, Situation
from a2a_client_errors.testing import RecordingHook
from tests.e2e.proxy import Proxy
from tests.e2e.sdk import BINDINGS, sdk_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from a2a_client_errors.integrations.a2a_sdk import GuardedClient
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e


class Recorder(httpx.AsyncBaseTransport):
    """Forwards every request and keeps what it carried; fails the first POSTs if told to.

    Attributes:
        bodies: the body of every POST.
        versions: the A2A-Version of every request but the agent card's.
        extensions: the A2A-Extensions of every request.
        calls: the JSON-RPC method of every request, or its path.
    """

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.bodies: list[bytes] = []
        self.versions: list[str | None] = []
        self.extensions: list[str | None] = []
        self.calls: list[str] = []
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record; answer 503 while failures remain, else forward."""
        body = await request.aread()
        self.extensions.append(request.headers.get("A2A-Extensions"))
        if request.url.path != "/.well-known/agent-card.json":
            self.versions.append(request.headers.get("A2A-Version"))
        method = json.loads(body).get("method", "") if body.startswith(b"{") else ""
        self.calls.append(method or request.url.path)
        if request.method == "POST":
            self.bodies.append(body)
            if len(self.bodies) <= self.failures:
                return httpx.Response(503, headers={"retry-after": "0"}, text="busy")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the forwarding transport."""
        await self.inner.aclose()


async def _client(
    peer: EmbeddedPeer,
    binding: str,
    *,
    streaming: bool = True,
    transport: httpx.AsyncBaseTransport | None = None,
    guard: Guard | None = None,
    raw: bool = False,
) -> tuple[GuardedClient, httpx.AsyncClient]:
    return await sdk_client(
        peer, binding, streaming=streaming, transport=transport, guard=guard, raw=raw
    )


def _message(text: str, message_id: str = "") -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
        )
    )


async def _events(stream: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in stream]


def _state(event: Any) -> str:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return str(a2a_pb2.TaskState.Name(event.task.status.state))
    if kind == "status_update":
        return str(a2a_pb2.TaskState.Name(event.status_update.status.state))
    return kind or ""


async def _completed_task(client: GuardedClient) -> str:
    events = await _events(client.send_message(_message("hello")))
    first = events[0]
    return str(first.task.id)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_unknown_task_is_reconcile(peer: EmbeddedPeer, binding: str) -> None:
    """GetTask of an unknown task raises ReconcileNeeded, chained from a2a-sdk's error."""
    client, http = await _client(peer, binding)
    try:
        with pytest.raises(ReconcileNeeded) as failed:
            await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"))
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "TASK_NOT_FOUND"
    assert failed.value.attempts == 1
    assert failed.value.__cause__ is not None
    assert type(failed.value.__cause__).__module__.startswith("a2a.")


@pytest.mark.parametrize("binding", BINDINGS)
async def test_cancel_of_a_completed_task_is_reconcile(peer: EmbeddedPeer, binding: str) -> None:
    """Without handlers, CancelTask of a completed task raises ReconcileNeeded."""
    client, http = await _client(peer, binding, raw=True)
    try:
        task_id = await _completed_task(client)
        with pytest.raises(ReconcileNeeded) as failed:
            await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "TASK_NOT_CANCELABLE"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_failed_task_is_a_result(peer: EmbeddedPeer, binding: str) -> None:
    """A task that ends FAILED comes back as events, not as an exception."""
    client, http = await _client(peer, binding)
    request = _message("fail")
    try:
        events = await _events(client.send_message(request))
    finally:
        await client.close()
        await http.aclose()
    assert _state(events[-1]) == "TASK_STATE_FAILED"
    # The messageId is assigned once, before the first attempt, on a copy: the caller's
    # request is never changed.
    assert not request.message.message_id
    tasks = [event.task for event in events if event.WhichOneof("payload") == "task"]
    assert tasks[0].history[0].message_id


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_message_id_is_kept(peer: EmbeddedPeer, binding: str) -> None:
    """A message that has a messageId keeps it."""
    client, http = await _client(peer, binding)
    request = _message("hello", message_id="m-fixed-1")
    try:
        events = await _events(client.send_message(request))
    finally:
        await client.close()
        await http.aclose()
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"
    assert request.message.message_id == "m-fixed-1"


@pytest.mark.parametrize("binding", ["jsonrpc", "grpc"])
async def test_a_stream_broken_midway_ends_with_the_task(peer: EmbeddedPeer, binding: str) -> None:
    """An error after the first events is resumed: the task is terminal, so GetTask ends it."""
    client, http = await _client(peer, binding)
    try:
        events = await _events(client.send_message(_message("stream-error")))
    finally:
        await client.close()
        await http.aclose()
    states = [_state(event) for event in events]
    assert states[:2] == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
    assert events[-1].WhichOneof("payload") == "task"
    assert states[-1] == "TASK_STATE_FAILED"


async def test_a_rest_stream_error_loses_its_status_inside_a2a_sdk(peer: EmbeddedPeer) -> None:
    """a2a-sdk's HTTP+JSON client keeps a stream error event only as text: it is reported.

    The SDK raises ``A2AClientError(<the event's data>)`` without a cause; the message is never
    parsed, so nothing says the failure was transient, and the stream is not resumed.
    """
    client, http = await _client(peer, "rest")
    seen: list[Any] = []

    async def read() -> None:
        async for event in client.send_message(_message("stream-error")):
            seen.append(event)  # noqa: PERF401 (the events before the error are the point)

    try:
        with pytest.raises(ReportNeeded) as failed:
            await read()
    finally:
        await client.close()
        await http.aclose()
    assert [_state(event) for event in seen] == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
    assert failed.value.decision.error is not None
    assert failed.value.decision.error.source.value == "sdk_exception"


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_transient_failures_before_the_first_event_resend_the_same_message(
    peer: EmbeddedPeer, binding: str
) -> None:
    """Two 503s, then the stream: three requests with one message (and messageId), and events.

    a2a-sdk's JSON-RPC transport gives every send a fresh JSON-RPC ``id``; the message itself
    is the same on every attempt. (Identical bytes are the httpx transports' promise.)
    """
    flaky = Recorder(failures=2)
    client, http = await _client(peer, binding, transport=flaky)
    try:
        events = await _events(client.send_message(_message("hello")))
    finally:
        await client.close()
        await http.aclose()
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"
    assert len(flaky.bodies) == 3
    sent = [json.loads(body) for body in flaky.bodies]
    messages = [b["params"]["message"] if binding == "jsonrpc" else b["message"] for b in sent]
    assert messages[0]["messageId"]
    assert messages == [messages[0]] * 3


async def test_retries_end_when_the_peer_stays_down(peer: EmbeddedPeer) -> None:
    """A peer that answers 503 to everything: the call gives up after its attempts."""
    flaky = Recorder(failures=100)
    client, http = await _client(peer, "jsonrpc", transport=flaky)
    try:
        with pytest.raises(RetryExhausted) as failed:
            await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"))
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.attempts == 3
    assert len(flaky.bodies) == 3


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_unary_send_of_a_working_task_is_the_whole_answer(
    peer: EmbeddedPeer, binding: str
) -> None:
    """Not streaming, ``return_immediately``: one answer, a working task; nothing resumed."""
    recording = Recorder()
    client, http = await sdk_client(peer, binding, streaming=False, transport=recording)
    request = _message("slow")
    request.configuration.return_immediately = True
    try:
        events = await _events(client.send_message(request))
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=events[0].task.id))
    finally:
        await client.close()
        await http.aclose()
    assert [_state(event) for event in events] in (
        ["TASK_STATE_SUBMITTED"],
        ["TASK_STATE_WORKING"],
    )
    assert len(recording.calls) == 2  # the message, then the cancel: no subscription between


def _claims_push(peer: EmbeddedPeer) -> a2a_pb2.AgentCard:
    """The peer's card, claiming push notifications its server refuses."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer.agent_card)
    card.capabilities.push_notifications = True
    return card


@pytest.mark.parametrize("binding", BINDINGS)
async def test_push_config_refused_by_the_server_is_degrade(
    peer: EmbeddedPeer, binding: str
) -> None:
    """Without handlers, a push configuration the server refuses raises DegradeNeeded."""
    client, http = await sdk_client(peer, binding, card=_claims_push(peer), raw=True)
    try:
        task_id = await _completed_task(client)
        config = a2a_pb2.TaskPushNotificationConfig(task_id=task_id, url="http://127.0.0.1:9/x")
        with pytest.raises(DegradeNeeded) as failed:
            await client.create_task_push_notification_config(config)
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    assert failed.value.attempts == 1  # the server said so: it was sent


@pytest.mark.parametrize("binding", BINDINGS)
async def test_push_config_refused_by_the_server_gives_polling(
    peer: EmbeddedPeer, binding: str
) -> None:
    """The default handlers answer a refused push configuration with a Polling of the task."""
    client, http = await sdk_client(peer, binding, card=_claims_push(peer), streaming=False)
    request = _message("slow")
    request.configuration.return_immediately = True
    try:
        events = await _events(client.send_message(request))
        task_id = events[0].task.id
        config = a2a_pb2.TaskPushNotificationConfig(task_id=task_id, url="http://127.0.0.1:9/x")
        polling = await client.create_task_push_notification_config(config)
        assert isinstance(polling, Polling)
        assert polling.decision.reason == "PUSH_NOTIFICATION_NOT_SUPPORTED"
        first = await anext(aiter(polling))
        assert first.id == task_id
        assert a2a_pb2.TaskState.Name(first.status.state) == "TASK_STATE_WORKING"
        await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
        reads = [task async for task in polling]
    finally:
        await client.close()
        await http.aclose()
    # A fresh iteration polls afresh: one read, final (canceled), so the polling ends there.
    assert [a2a_pb2.TaskState.Name(task.status.state) for task in reads] == ["TASK_STATE_CANCELED"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_message_asking_for_push_degrades_to_polling(
    peer: EmbeddedPeer, binding: str
) -> None:
    """A SendMessage asking for push, the card saying no push: sent without it, then polled.

    (a2a-sdk 1.3.0 servers accept such a message and ignore the push configuration, so the
    card is what tells the client; the handler is the same for a refusal by the server.)
    """
    recorder = RecordingHook()
    recording = Recorder()
    guard = Guard(sleep=lambda _: None, hooks=[recorder])
    client, http = await sdk_client(peer, binding, guard=guard, transport=recording)
    request = _message("hello")
    request.configuration.task_push_notification_config.url = "http://127.0.0.1:9/x"
    try:
        events = await _events(client.send_message(request))
    finally:
        await client.close()
        await http.aclose()
    first = recorder.decisions[0].decision
    assert (first.action, first.reason) == ("degrade", "PUSH_NOTIFICATION_NOT_SUPPORTED")
    assert first.error is not None
    assert first.error.source.value == "agent_card"
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"
    assert not any(b"127.0.0.1:9" in body for body in recording.bodies)  # push left out
    if binding != "grpc":
        assert recording.calls[0] in {"SendMessage", "/rest/message:send"}


@pytest.mark.parametrize("binding", BINDINGS)
async def test_extended_card_not_configured_is_degrade(peer: EmbeddedPeer, binding: str) -> None:
    """Without handlers, the extended card declared but not configured raises DegradeNeeded."""
    client, http = await _client(peer, binding, raw=True)
    try:
        with pytest.raises(DegradeNeeded) as failed:
            await client.get_extended_agent_card()
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


async def test_subscribe_to_a_completed_task_is_degrade(peer: EmbeddedPeer) -> None:
    """Without handlers, subscribing to a terminal task raises DegradeNeeded."""
    client, http = await _client(peer, "jsonrpc", raw=True)
    try:
        task_id = await _completed_task(client)
        with pytest.raises(DegradeNeeded) as failed:
            await _events(client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id)))
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "UNSUPPORTED_OPERATION"


async def test_other_methods_are_delegated(peer: EmbeddedPeer) -> None:
    """Methods the wrapper does not guard reach the wrapped client."""
    client, http = await _client(peer, "jsonrpc")
    try:
        assert client.peer.startswith("http://127.0.0.1:")
        assert client.add_interceptor == client.client.add_interceptor
        async with client as entered:
            assert entered is client
    finally:
        await http.aclose()


# --- the default decision handlers --------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_lost_cancel_race_returns_the_terminal_task(
    peer: EmbeddedPeer, binding: str
) -> None:
    """CancelTask of a completed task: GetTask, and the task marked as a lost race."""
    client, http = await _client(peer, binding)
    try:
        task_id = await _completed_task(client)
        task = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
    finally:
        await client.close()
        await http.aclose()
    assert task.id == task_id
    assert a2a_pb2.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert dict(task.metadata["a2a_client_errors"]) == {"cancel": "lost_race"}


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_unknown_task_is_handed_to_the_orchestrator(
    peer: EmbeddedPeer, binding: str
) -> None:
    """TASK_NOT_FOUND: task_gone is told, then ReconcileNeeded is raised (no re-creation)."""
    gone: list[str] = []

    class Handlers(DecisionHandlers):
        async def task_gone(self, situation: Situation) -> None:
            """Drop the handle."""
            gone.append(situation.request.id)

    client, http = await _client(peer, binding)
    client.handlers = Handlers()
    try:
        with pytest.raises(ReconcileNeeded):
            await client.get_task(a2a_pb2.GetTaskRequest(id="lost-task"))
    finally:
        await client.close()
        await http.aclose()
    assert gone == ["lost-task"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_extended_card_falls_back_to_the_public_card(
    peer: EmbeddedPeer, binding: str
) -> None:
    """EXTENDED_AGENT_CARD_NOT_CONFIGURED: the public card the client holds is returned."""
    client, http = await _client(peer, binding)
    try:
        card = await client.get_extended_agent_card()
    finally:
        await client.close()
        await http.aclose()
    assert card.name == peer.agent_card.name


async def test_subscribing_to_a_terminal_task_yields_the_task(peer: EmbeddedPeer) -> None:
    """SubscribeToTask refused (terminal): the task, read by GetTask, is the one event."""
    client, http = await _client(peer, "jsonrpc")
    try:
        task_id = await _completed_task(client)
        events = await _events(client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id)))
    finally:
        await client.close()
        await http.aclose()
    assert len(events) == 1
    assert events[0].task.id == task_id
    assert _state(events[0]) == "TASK_STATE_COMPLETED"


async def test_a_handler_can_decide_differently(peer: EmbeddedPeer) -> None:
    """An orchestrator's handler replaces a default: here, degrade returns a sentinel."""

    class Handlers(DecisionHandlers):
        async def degrade(self, situation: Situation) -> Any:
            """Decide differently."""
            return ("degraded", situation.operation, situation.reason)

    client, http = await _client(peer, "jsonrpc")
    client.handlers = Handlers()
    try:
        outcome = await client.get_extended_agent_card()
    finally:
        await client.close()
        await http.aclose()
    assert outcome == ("degraded", "GetExtendedAgentCard", "EXTENDED_AGENT_CARD_NOT_CONFIGURED")


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_an_older_version_is_upgraded_and_resent_once(
    peer: EmbeddedPeer, binding: str
) -> None:
    """A2A-Version 0.3 refused: the card says 1.0, which this client speaks; resent once."""
    from a2a.client import ClientCallContext

    recording = Recorder()
    client, http = await _client(peer, binding, transport=recording)
    context = ClientCallContext(service_parameters={"A2A-Version": "0.3"})
    try:
        events = await _events(client.send_message(_message("hello"), context=context))
    finally:
        await client.close()
        await http.aclose()
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"
    assert recording.versions == ["0.3", "1.0"]
    card_read = recording.calls.index("/.well-known/agent-card.json")  # the card, read again
    assert 0 < card_read < len(recording.calls) - 1


def _stale_card(peer: EmbeddedPeer, version: str) -> a2a_pb2.AgentCard:
    """The peer's card as it was once: every interface at ``version``."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer.agent_card)
    for interface in card.supported_interfaces:
        interface.protocol_version = version
    return card


async def test_the_card_is_read_again_before_picking_a_version(peer: EmbeddedPeer) -> None:
    """A client built from a stale card (2.0 only: the peer has since rolled back to 1.0).

    The fresh card says 1.0, which the client may take (downgrades allowed); the held card
    alone offered nothing.
    """
    from a2a.client import ClientCallContext

    recording = Recorder()
    client, http = await sdk_client(
        peer, "jsonrpc", transport=recording, card=_stale_card(peer, "2.0")
    )
    client.handlers = DecisionHandlers(versions=("2.0", "1.0"), allow_downgrade=True)
    context = ClientCallContext(service_parameters={"A2A-Version": "2.0"})
    try:
        with pytest.raises(ReconcileNeeded):  # 1.0 understood: the task does not exist
            await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"), context=context)
    finally:
        await client.close()
        await http.aclose()
    assert recording.calls == ["GetTask", "/.well-known/agent-card.json", "GetTask"]
    assert recording.versions == ["2.0", "1.0"]
    assert client.card.supported_interfaces[0].protocol_version == "1.0"  # held from now on


async def test_a_card_that_cannot_be_read_again_keeps_the_one_held(
    peer: EmbeddedPeer, caplog: pytest.LogCaptureFixture
) -> None:
    """The card URL answers 404: the held (stale) card decides, so the failure stands."""
    from a2a.client import ClientCallContext

    client, http = await sdk_client(peer, "jsonrpc", card=_stale_card(peer, "2.0"))
    client.handlers = DecisionHandlers(versions=("2.0", "1.0"), allow_downgrade=True)
    client.card_url = peer.jsonrpc_url + "/no-card-here"
    context = ClientCallContext(service_parameters={"A2A-Version": "2.0"})
    try:
        with pytest.raises(FixRequestNeeded) as failed:
            await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"), context=context)
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "VERSION_NOT_SUPPORTED"
    assert client.card.supported_interfaces[0].protocol_version == "2.0"
    assert "could not read the agent card again" in caplog.text


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_newer_version_is_never_downgraded_silently(
    peer: EmbeddedPeer, binding: str
) -> None:
    """A2A-Version 99.0 refused: 1.0 would be a downgrade, so the failure stands."""
    from a2a.client import ClientCallContext

    recording = Recorder()
    client, http = await _client(peer, binding, transport=recording)
    context = ClientCallContext(service_parameters={"A2A-Version": "99.0"})
    try:
        with pytest.raises(FixRequestNeeded) as failed:
            await client.get_task(a2a_pb2.GetTaskRequest(id="t-1"), context=context)
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.reason == "VERSION_NOT_SUPPORTED"
    assert recording.versions == ["99.0"]


async def test_a_downgrade_is_taken_when_allowed(peer: EmbeddedPeer) -> None:
    """With allow_downgrade, 99.0 refused becomes 1.0, resent once; the answer is the peer's."""
    from a2a.client import ClientCallContext

    recording = Recorder()
    client, http = await _client(peer, "jsonrpc", transport=recording)
    client.handlers = DecisionHandlers(allow_downgrade=True)
    context = ClientCallContext(service_parameters={"A2A-Version": "99.0"})
    try:
        with pytest.raises(ReconcileNeeded):  # 1.0 understood: the task does not exist
            await client.get_task(a2a_pb2.GetTaskRequest(id="no-such-task"), context=context)
    finally:
        await client.close()
        await http.aclose()
    assert recording.versions == ["99.0", "1.0"]


# --- calls the agent card says must fail are not sent ---------------------------------------


async def test_subscribing_without_streaming_reads_the_task_instead(
    peer_no_streaming: EmbeddedPeer,
) -> None:
    """The card says no streaming: no SubscribeToTask is sent; GetTask answers."""
    paths = Recorder()
    client, http = await _client(peer_no_streaming, "jsonrpc", transport=paths)
    try:
        task_id = await _completed_task(client)
        events = await _events(client.subscribe(a2a_pb2.SubscribeToTaskRequest(id=task_id)))
    finally:
        await client.close()
        await http.aclose()
    assert [event.task.id for event in events] == [task_id]
    assert "SubscribeToTask" not in paths.calls
    assert paths.calls[-1] == "GetTask"


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_push_config_without_push_is_not_sent(peer: EmbeddedPeer, binding: str) -> None:
    """The card says no push notifications: nothing sent; a Polling of the task instead."""
    paths = Recorder()
    client, http = await _client(peer, binding, transport=paths)
    try:
        task_id = await _completed_task(client)
        sent_before = len(paths.calls)
        config = a2a_pb2.TaskPushNotificationConfig(task_id=task_id, url="http://127.0.0.1:9/x")
        polling = await client.create_task_push_notification_config(config)
        assert len(paths.calls) == sent_before  # the configuration was never sent
        reads = [task async for task in polling]
    finally:
        await client.close()
        await http.aclose()
    assert isinstance(polling, Polling)
    assert polling.decision.error is not None
    assert polling.decision.error.source.value == "agent_card"
    assert [a2a_pb2.TaskState.Name(task.status.state) for task in reads] == ["TASK_STATE_COMPLETED"]
    assert len(paths.calls) == sent_before + 1  # one GetTask: the task was final already


async def test_push_config_without_push_raises_without_handlers(peer: EmbeddedPeer) -> None:
    """Without handlers, the card's refusal is raised as DegradeNeeded, after zero attempts."""
    client, http = await _client(peer, "jsonrpc", raw=True)
    try:
        config = a2a_pb2.TaskPushNotificationConfig(task_id="t-1", url="http://127.0.0.1:9/x")
        with pytest.raises(DegradeNeeded) as failed:
            await client.create_task_push_notification_config(config)
    finally:
        await client.close()
        await http.aclose()
    assert failed.value.attempts == 0
    assert failed.value.reason == "PUSH_NOTIFICATION_NOT_SUPPORTED"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_refused_stream_degrades_to_send_and_poll(
    peer_no_streaming: EmbeddedPeer, binding: str
) -> None:
    """A card that claims streaming the server refuses: sent without streaming, then polled."""
    card = a2a_pb2.AgentCard()
    card.CopyFrom(peer_no_streaming.agent_card)
    card.capabilities.streaming = True  # the card says so; the server says no
    recorder = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[recorder])
    client, http = await sdk_client(peer_no_streaming, binding, guard=guard, card=card)
    try:
        events = await _events(client.send_message(_message("hello")))
    finally:
        await client.close()
        await http.aclose()
    assert recorder.actions[0] == "degrade"  # the stream was refused first
    assert recorder.decisions[0].decision.reason == "UNSUPPORTED_OPERATION"
    assert all(event.WhichOneof("payload") == "task" for event in events)
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"


# --- extensions the card requires ------------------------------------------------------------


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_allowed_required_extensions_are_declared_up_front(
    peer: EmbeddedPeer, binding: str
) -> None:
    """The card requires an extension this client allows: declared on the first request."""
    assert peer.required_extension
    recording = Recorder()
    client, http = await _client(peer, binding, transport=recording)
    client.handlers = DecisionHandlers(allowed_extensions=[peer.required_extension])
    try:
        events = await _events(client.send_message(_message("hello")))
        await client.get_task(a2a_pb2.GetTaskRequest(id=events[0].task.id))
    finally:
        await client.close()
        await http.aclose()
    assert recording.extensions == [peer.required_extension] * 2  # two calls, each declared


async def test_required_extensions_not_allowed_are_not_declared(peer: EmbeddedPeer) -> None:
    """An extension the client does not allow is never declared for it (the call goes as is)."""
    recording = Recorder()
    client, http = await _client(peer, "jsonrpc", transport=recording)
    try:
        await _events(client.send_message(_message("hello")))
    finally:
        await client.close()
        await http.aclose()
    assert recording.extensions == [None]


def _through(proxy: Proxy, card: a2a_pb2.AgentCard) -> a2a_pb2.AgentCard:
    """``card`` with its HTTP interfaces moved behind ``proxy``."""
    moved = a2a_pb2.AgentCard()
    moved.CopyFrom(card)
    for interface in moved.supported_interfaces:
        url = httpx.URL(interface.url)
        if url.scheme == "http":
            interface.url = str(httpx.URL(proxy.url).copy_with(path=url.path))
    return moved


async def test_a_gateway_requiring_an_extension_gets_it_on_the_one_resend(
    peer: EmbeddedPeer,
) -> None:
    """A stale card (no extension required) and a gateway that enforces the current one.

    EXTENSION_SUPPORT_REQUIRED: the card is read again (through the gateway), its required
    extension is allowed, so it is declared and the message resent once.
    """
    upstream = peer.jsonrpc_url.rsplit("/", 1)[0]
    with Proxy(upstream, require_extension=peer.required_extension) as gateway:
        stale = _through(gateway, peer.agent_card)
        del stale.capabilities.extensions[:]
        recorder = RecordingHook()
        guard = Guard(sleep=lambda _: None, hooks=[recorder])
        client, http = await sdk_client(peer, "jsonrpc", card=stale, guard=guard)
        client.handlers = DecisionHandlers(allowed_extensions=[peer.required_extension])
        try:
            events = await _events(client.send_message(_message("hello")))
        finally:
            await client.close()
            await http.aclose()
    assert recorder.decisions[0].decision.reason == "EXTENSION_SUPPORT_REQUIRED"
    assert recorder.actions[0] == "fix_request"
    assert gateway.declared == [None, peer.required_extension]
    assert _state(events[-1]) == "TASK_STATE_COMPLETED"


async def test_a_gateway_requiring_an_extension_not_allowed_fails(peer: EmbeddedPeer) -> None:
    """The same gateway, the extension not allowed: FixRequestNeeded, nothing resent."""
    upstream = peer.jsonrpc_url.rsplit("/", 1)[0]
    with Proxy(upstream, require_extension=peer.required_extension) as gateway:
        client, http = await sdk_client(peer, "jsonrpc", card=_through(gateway, peer.agent_card))
        try:
            with pytest.raises(FixRequestNeeded) as failed:
                await _events(client.send_message(_message("hello")))
        finally:
            await client.close()
            await http.aclose()
    assert failed.value.reason == "EXTENSION_SUPPORT_REQUIRED"
    assert gateway.declared == [None]
