"""An internal error answering an operation the agent card says is unsupported: the card's reason.

a2a-sdk 0.3 agents answer JSON-RPC -32603 (and a bare HTTP 500 on HTTP+JSON) for a push
configuration, a stream or the extended card their card does not offer. Read against the card,
that is PUSH_NOTIFICATION_NOT_SUPPORTED or UNSUPPORTED_OPERATION (``degrade``, source
``agent_card``), decided after one attempt. Here: the card reader (JSON in both layouts; a2a-sdk
objects in ``tests/test_card_claims_sdk.py`` and ``tests/sdk03``), the rule, the engine's
decision, and the httpx transports learning a card fetched through them (a real server on
127.0.0.1).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from a2a_client_errors import (
    Action,
    AsyncGuardTransport,
    CircuitBreaker,
    DegradeNeeded,
    Delivery,
    Guard,
    GuardTransport,
    Reason,
    RetryExhausted,
    normalize,
)
from a2a_client_errors._card_claims import (
    CardClaims,
    asks_for_push,
    card_interfaces,
    interface_key,
    keys_of,
    read_against_card,
    read_card_claims,
    unsupported_by_card,
)
from a2a_client_errors._engine import CallShape
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import Source
from tests.loopback import Loopback, Recorded, Reply, loopback_fixture  # noqa: F401 (the fixture)

INTERNAL = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "not supported"}}
NO_PUSH = {"name": "a", "capabilities": {"streaming": True, "pushNotifications": False}}
CARD_10 = {
    "name": "agent 1.0",
    "supportedInterfaces": [
        {"url": "https://agent.example/a2a/jsonrpc", "protocolBinding": "JSONRPC"},
        {"url": "https://agent.example/a2a/rest/", "protocolBinding": "HTTP+JSON"},
    ],
    "capabilities": {"streaming": False, "pushNotifications": True, "extendedAgentCard": True},
}
CARD_03 = {
    "name": "agent 0.3",
    "url": "http://agent.example:8080/jsonrpc",
    "additionalInterfaces": [
        {"url": "http://agent.example:8080/rest", "transport": "HTTP+JSON"},
        {"url": "agent.example:50051", "transport": "GRPC"},
    ],
    "capabilities": {"streaming": True, "pushNotifications": False},
    "supportsAuthenticatedExtendedCard": True,
}


def guard_on(clock: FakeClock, **kwargs: Any) -> Guard:
    """A Guard on the fake clock with a deterministic draw."""
    kwargs.setdefault("random", lambda: 0.5)
    return Guard(clock=clock.now, sleep=clock.sleep, **kwargs)


# --- reading a card ---------------------------------------------------------------------------


def test_a_10_card_in_json_is_read() -> None:
    """1.0 JSON: the three flags under ``capabilities``; its interfaces' URLs listed."""
    assert read_card_claims(CARD_10) == CardClaims(
        streaming=False, push_notifications=True, extended_card=True
    )
    assert card_interfaces(CARD_10) == [
        "https://agent.example/a2a/jsonrpc",
        "https://agent.example/a2a/rest/",
    ]


def test_a_03_card_in_json_is_read() -> None:
    """0.3 JSON: the extended card flag at the top level; ``url`` and the other interfaces."""
    assert read_card_claims(CARD_03) == CardClaims(
        streaming=True, push_notifications=False, extended_card=True
    )
    assert card_interfaces(CARD_03) == [
        "http://agent.example:8080/jsonrpc",
        "http://agent.example:8080/rest",
        "agent.example:50051",
    ]


def test_an_absent_or_non_true_flag_says_not_supported() -> None:
    """A flag false, absent, or anything but ``true`` (a string, a number) is no support."""
    assert read_card_claims({"capabilities": {}}) == CardClaims()
    claims = read_card_claims({"capabilities": {"streaming": "yes", "pushNotifications": 1}})
    assert claims == CardClaims()


@pytest.mark.parametrize(
    "value",
    [None, {}, [], "card", b"{}", 3, {"capabilities": None}, {"capabilities": []}, {"name": "x"}],
)
def test_what_is_no_card_gives_none(value: object) -> None:
    """Without capabilities there is nothing to read against: None (not "unsupported")."""
    assert read_card_claims(value) is None


def test_an_object_that_fights_being_read_is_no_card() -> None:
    """An object whose attributes raise is no card, and lists no interface."""

    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(name)

    assert read_card_claims(Hostile()) is None
    assert card_interfaces(Hostile()) == []


def test_a_card_lists_sixteen_interfaces_at_most() -> None:
    """A card with a thousand interfaces is read up to sixteen of them."""
    card = {"supportedInterfaces": [{"url": f"http://h/{i}"} for i in range(1000)]}
    assert len(card_interfaces(card)) == 16


# --- where a card is kept -------------------------------------------------------------------


def test_interface_keys() -> None:
    """Default ports filled in, no trailing slash, query or user; a gRPC target is no URL."""
    assert interface_key("https://Agent.Example/a2a/") == "https://agent.example:443/a2a"
    assert interface_key("http://u:p@h:8/x?q=1#f") == "http://h:8/x"
    assert interface_key("agent.example:50051") is None
    assert interface_key("http://[::1") is None
    assert list(keys_of("http://h/rest/v1/tasks/1")) == [
        "http://h:80/rest/v1/tasks/1",
        "http://h:80/rest/v1/tasks",
        "http://h:80/rest/v1",
        "http://h:80/rest",
        "http://h:80",
    ]
    assert list(keys_of("grpc-target:1")) == []


def test_learn_card_keeps_it_per_interface_and_for_the_peer() -> None:
    """`Guard.learn_card`: under each interface the card lists, and the peer key if given."""
    guard = Guard()
    assert not guard.cards_known
    assert guard.learn_card(CARD_03, peer="billing") == read_card_claims(CARD_03)
    assert guard.cards_known
    for key in ("http://agent.example:8080/jsonrpc", "http://agent.example:8080/rest", "billing"):
        assert guard.card_claims(key) == read_card_claims(CARD_03)
    assert guard.card_claims("http://agent.example:8080") is None
    assert guard.learn_card({"name": "no capabilities"}, peer="other") is None
    assert guard.card_claims("other") is None


def test_a_newer_card_replaces_and_the_oldest_is_crowded_out() -> None:
    """The newest card of an interface wins; at most 1024 interfaces are kept."""
    guard = Guard()
    guard.learn_card(NO_PUSH, peer="p")
    guard.learn_card({"capabilities": {"pushNotifications": True}}, peer="p")
    assert guard.card_claims("p") == CardClaims(push_notifications=True)
    for i in range(1024):
        guard.learn_card(NO_PUSH, peer=f"peer-{i}")
    assert guard.card_claims("p") is None
    assert guard.card_claims("peer-1023") is not None


def test_a_card_is_not_forgotten_when_the_agent_goes_idle() -> None:
    """Unlike `AgentFacts`, a card stays past ten idle minutes (a client fetches it once)."""
    clock = FakeClock()
    guard = guard_on(clock)
    guard.learn_card(NO_PUSH, peer="p")
    clock.advance(3600)
    guard.facts("another")  # a use that sweeps idle agents
    clock.advance(3600)
    guard.facts("yet another")
    assert guard.card_claims("p") == read_card_claims(NO_PUSH)


# --- the rule ---------------------------------------------------------------------------------

PUSH_OPERATIONS = [
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
]


@pytest.mark.parametrize("operation", PUSH_OPERATIONS)
def test_push_operations_need_push_notifications(operation: str) -> None:
    """Every push configuration operation, by a card without push notifications."""
    assert unsupported_by_card(CardClaims(), operation) is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert unsupported_by_card(CardClaims(push_notifications=True), operation) is None


@pytest.mark.parametrize("operation", ["SendMessage", "SendStreamingMessage"])
def test_a_send_that_asks_for_push(operation: str) -> None:
    """A send is refused for push only when it asks for push notifications."""
    streams = CardClaims(streaming=True)
    assert unsupported_by_card(streams, operation) is None
    reason = unsupported_by_card(streams, operation, asks_push=True)
    assert reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED


@pytest.mark.parametrize("operation", ["SendStreamingMessage", "SubscribeToTask"])
def test_streams_need_streaming(operation: str) -> None:
    """A stream, by a card without streaming: UNSUPPORTED_OPERATION."""
    assert unsupported_by_card(CardClaims(), operation) is Reason.UNSUPPORTED_OPERATION
    assert unsupported_by_card(CardClaims(streaming=True), operation) is None


def test_the_extended_card_needs_the_flag() -> None:
    """GetExtendedAgentCard, by a card that offers none: UNSUPPORTED_OPERATION."""
    operation = "GetExtendedAgentCard"
    assert unsupported_by_card(CardClaims(), operation) is Reason.UNSUPPORTED_OPERATION
    assert unsupported_by_card(CardClaims(extended_card=True), operation) is None


@pytest.mark.parametrize("operation", ["GetTask", "ListTasks", "CancelTask", None, "Custom"])
def test_other_operations_are_never_refused_by_the_card(operation: str | None) -> None:
    """The card has no flags for them."""
    assert unsupported_by_card(CardClaims(), operation, asks_push=True) is None


@pytest.mark.parametrize(
    "body",
    [
        {"method": "SendMessage", "params": {"configuration": {"taskPushNotificationConfig": {}}}},
        {"method": "message/send", "params": {"configuration": {"pushNotificationConfig": {}}}},
        {"configuration": {"pushNotification": {"url": "http://h/x"}}},
        {"configuration": {"taskPushNotificationConfig": {"url": "http://h/x"}}},
    ],
)
def test_a_body_that_asks_for_push(body: object) -> None:
    """1.0 and 0.3 field names, JSON-RPC and HTTP+JSON (an empty config is no ask)."""
    config = body["params"] if "method" in body else body  # type: ignore[index]
    asks = any(config["configuration"].values())
    assert asks_for_push(body) is asks


@pytest.mark.parametrize(
    "body",
    [None, [], {"params": None}, {"method": "x", "params": {"configuration": []}}, {"a": 1}],
)
def test_a_body_that_does_not(body: object) -> None:
    """Anything else asks for nothing."""
    assert asks_for_push(body) is False


def _error(answer: object, operation: str | None = None) -> Any:
    error = normalize(answer, operation=operation)
    assert error is not None
    return error


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json=INTERNAL),
        httpx.Response(500, json={"message": "unknown exception"}),
        httpx.Response(500, text="Internal Server Error"),
        httpx.Response(500, json={"error": {"code": 500, "status": "INTERNAL", "message": "x"}}),
    ],
    ids=["jsonrpc-32603", "rest-500-message", "rest-500-text", "status-internal"],
)
def test_an_internal_error_is_read_as_the_cards_reason(answer: httpx.Response) -> None:
    """-32603, or a 500 naming no reason: the card's reason, all else kept as it came."""
    operation = "CreateTaskPushNotificationConfig"
    error = _error(answer, operation)
    read = read_against_card(error, CardClaims(), operation)
    assert read.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert read.source is Source.AGENT_CARD
    assert (read.wire, read.jsonrpc_code, read.http_status, read.message) == (
        error.wire,
        error.jsonrpc_code,
        error.http_status,
        error.message,
    )
    assert read.delivery is error.delivery  # the card says why, not what reached the agent


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32001}}),
        httpx.Response(503, json={"message": "busy"}),
        httpx.Response(401),
        httpx.Response(500, json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32602}}),
    ],
    ids=["task-not-found", "503", "401", "invalid-params-on-500"],
)
def test_other_errors_stay_as_they_are(answer: httpx.Response) -> None:
    """Only an internal error that names nothing better is read against the card."""
    error = _error(answer, "CreateTaskPushNotificationConfig")
    assert read_against_card(error, CardClaims(), "CreateTaskPushNotificationConfig") is error


def test_no_card_or_a_card_that_offers_it_changes_nothing() -> None:
    """An internal error stays one without a card, or when the card offers the operation."""
    error = _error(httpx.Response(200, json=INTERNAL))
    assert read_against_card(error, None, "SubscribeToTask") is error
    assert read_against_card(error, CardClaims(streaming=True), "SubscribeToTask") is error


# --- the engine's decision ------------------------------------------------------------------


def test_guard_call_degrades_at_once_by_a_card_learnt_for_its_peer() -> None:
    """Guard.call: -32603 to a push operation of a peer whose card has none is one attempt."""
    clock = FakeClock()
    guard = guard_on(clock)
    guard.learn_card(NO_PUSH, peer="agent")
    calls: list[int] = []

    def set_push() -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, json=INTERNAL)

    with pytest.raises(DegradeNeeded) as caught:
        guard.call(set_push, operation="CreateTaskPushNotificationConfig", peer="agent")
    assert calls == [1]
    assert caught.value.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert caught.value.decision.error is not None
    assert caught.value.decision.error.source is Source.AGENT_CARD
    assert clock.sleeps == []


def test_without_a_card_an_internal_error_is_still_retried() -> None:
    """Another peer, or a card that offers the operation: -32603 is INTERNAL_ERROR, retried."""
    clock = FakeClock()
    guard = guard_on(clock)
    guard.learn_card(NO_PUSH, peer="agent")
    guard.learn_card({"capabilities": {"pushNotifications": True}}, peer="pushes")
    for peer in ("other", "pushes"):
        with pytest.raises(RetryExhausted) as caught:
            guard.call(
                lambda: httpx.Response(200, json=INTERNAL),
                operation="CreateTaskPushNotificationConfig",
                peer=peer,
            )
        assert caught.value.decision.reason is Reason.INTERNAL_ERROR
        assert caught.value.attempts == 3


def test_a_doors_shape_carries_the_card_and_a_send_that_asks_for_push() -> None:
    """`CallShape.card` and ``asks_push``: a send asking for push, refused with -32603."""
    guard = guard_on(FakeClock())
    shape = CallShape("SendMessage", card=CardClaims(), asks_push=True)
    call = guard.begin(peer="p", shape=shape)
    with pytest.raises(DegradeNeeded) as caught:
        call.run(lambda: httpx.Response(200, json=INTERNAL))
    assert caught.value.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert caught.value.maybe_processed  # a send: the card says why, not that none was made
    assert call.end().attempts == 1


def test_a_stream_answered_500_by_a_card_without_streaming() -> None:
    """HTTP+JSON: a bare 500 to SubscribeToTask, the card says no streaming: degrade."""
    guard = guard_on(FakeClock())
    guard.learn_card({"capabilities": {"streaming": False}}, peer="p")
    with pytest.raises(DegradeNeeded) as caught:
        guard.call(lambda: httpx.Response(500, text="oops"), operation="SubscribeToTask", peer="p")
    assert caught.value.decision.reason is Reason.UNSUPPORTED_OPERATION
    assert caught.value.decision.action is Action.DEGRADE


def test_a_refusal_read_by_the_card_does_not_count_against_the_peers_health() -> None:
    """The breaker hears a refusal (the agent answered), not an unwell peer."""
    clock = FakeClock()
    breaker = CircuitBreaker(min_calls=1, failure_ratio=0.1, clock=clock.now)
    guard = guard_on(clock, breaker=breaker)
    guard.learn_card(NO_PUSH, peer="p")
    for _ in range(3):
        with pytest.raises(DegradeNeeded):
            guard.call(
                lambda: httpx.Response(200, json=INTERNAL),
                operation="GetTaskPushNotificationConfig",
                peer="p",
            )
    assert breaker.admit("p").allowed
    with pytest.raises(RetryExhausted):  # the same answer from an agent with no card: unwell
        guard.call(
            lambda: httpx.Response(200, json=INTERNAL),
            operation="GetTaskPushNotificationConfig",
            peer="q",
        )
    assert not breaker.admit("q").allowed


# --- the transports learn a card that passes through ------------------------------------------


def _agent(card: dict[str, Any]) -> Any:
    """A scripted 0.3-like agent: its card, and -32603 to every JSON-RPC call."""

    def answer(request: Recorded) -> Reply:
        if request.method == "GET" and request.path.endswith("/.well-known/agent-card.json"):
            return Reply.json(200, card)
        return Reply.json(200, {**INTERNAL, "id": request.json()["id"]})

    return answer


def _push_set(task_id: str = "t1") -> dict[str, Any]:
    params = {"taskId": task_id, "pushNotificationConfig": {"url": "http://127.0.0.1:1/x"}}
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tasks/pushNotificationConfig/set",
        "params": params,
    }


def _card_at(base_url: str, **capabilities: bool) -> dict[str, Any]:
    return {
        "name": "agent",
        "url": base_url + "/jsonrpc",
        "capabilities": capabilities,
    }


def test_sync_transport_learns_the_card_it_fetched(loopback: Loopback) -> None:
    """A card GET through `GuardTransport` teaches the Guard: then -32603 is one request."""
    loopback.script(_agent(_card_at(loopback.url, streaming=True)))
    hook = RecordingHook()
    guard = guard_on(FakeClock(), hooks=[hook])
    with httpx.Client(transport=GuardTransport(guard), base_url=loopback.url) as client:
        before = client.post("/jsonrpc", json=_push_set())  # no card yet: retried
        assert hook.calls[-1].attempts == 3
        assert client.get("/.well-known/agent-card.json").status_code == 200
        assert guard.card_claims(loopback.url + "/jsonrpc") == CardClaims(streaming=True)
        count = len(loopback.requests)
        after = client.post("/jsonrpc", json=_push_set())
    assert before.json() == after.json()  # handed back as the client would see it
    assert len(loopback.requests) == count + 1
    record = hook.calls[-1]
    assert record.decision.action is Action.DEGRADE
    assert record.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert record.decision.error is not None
    assert record.decision.error.source is Source.AGENT_CARD


async def test_async_transport_learns_the_card_it_fetched(loopback: Loopback) -> None:
    """`AsyncGuardTransport` too, on the unwatched fast path (no hooks): one request."""
    loopback.script(_agent(_card_at(loopback.url)))
    guard = guard_on(FakeClock())
    transport = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(transport=transport, base_url=loopback.url) as client:
        await client.get("/.well-known/agent-card.json")
        count = len(loopback.requests)
        with pytest.raises(DegradeNeeded) as caught:
            await client.post("/jsonrpc", json=_push_set())
    assert len(loopback.requests) == count + 1
    assert caught.value.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED


def test_a_send_asking_for_push_through_the_transport(loopback: Loopback) -> None:
    """The transport reads the send's body: asking for push, -32603 is the card's refusal."""
    loopback.script(_agent(_card_at(loopback.url, streaming=True)))
    guard = guard_on(FakeClock())
    message = {"role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "hi"}]}
    config = {"pushNotificationConfig": {"url": "http://127.0.0.1:1/x"}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {"message": message, "configuration": config},
    }
    transport = GuardTransport(guard, raise_failures=True)
    with httpx.Client(transport=transport, base_url=loopback.url) as client:
        client.get("/.well-known/agent-card.json")
        with pytest.raises(DegradeNeeded) as caught:
            client.post("/jsonrpc", json=body)
    assert caught.value.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert caught.value.maybe_processed
    assert [r.method for r in loopback.requests] == ["GET", "POST"]


def test_a_card_that_is_not_one_or_not_read_teaches_nothing(loopback: Loopback) -> None:
    """An error status, a page, or JSON without capabilities at the card's path: no card."""
    replies = [
        Reply.json(404, {"capabilities": {}}),
        Reply(200, b"<html>hi</html>", {"content-type": "text/html"}),
        Reply.json(200, {"name": "no capabilities"}),
        Reply.json(200, {"capabilities": {}}),  # not at the card's path
    ]
    loopback.script(replies)
    guard = guard_on(FakeClock())
    with httpx.Client(transport=GuardTransport(guard), base_url=loopback.url) as client:
        for _ in range(3):
            client.get("/.well-known/agent-card.json")
        client.get("/elsewhere.json")
    assert not guard.cards_known


def test_a_card_found_under_a_rest_interface(loopback: Loopback) -> None:
    """An HTTP+JSON route under the card's interface URL is read against that card."""

    def answer(request: Recorded) -> Reply:
        if request.method == "GET" and request.path == "/.well-known/agent.json":
            card = {"url": loopback.url + "/rest/", "capabilities": {"streaming": True}}
            return Reply.json(200, card)
        return Reply.json(500, {"message": "unknown exception"})

    loopback.script(answer)
    guard = guard_on(FakeClock())
    transport = GuardTransport(guard, raise_failures=True)
    with httpx.Client(transport=transport, base_url=loopback.url) as client:
        client.get("/.well-known/agent.json")
        with pytest.raises(DegradeNeeded) as caught:
            client.get("/rest/v1/tasks/t1/pushNotificationConfigs")
    assert caught.value.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
    assert caught.value.decision.error is not None
    assert caught.value.decision.error.delivery is Delivery.UNKNOWN
    assert json.loads(caught.value.result.content) == {"message": "unknown exception"}
