"""Interface failover: the route of a card's interfaces, the Guard's give-up, the hooks.

Real a2a-sdk clients (built by its ClientFactory) over `httpx.MockTransport`: the JSON-RPC
endpoint refuses connections (nothing sent) or loses answers, the HTTP+JSON one answers.
The end-to-end tests against a real agent are in tests/e2e/test_failover.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, AgentInterface, a2a_pb2
from prometheus_client import CollectorRegistry

from a2a_client_errors import (
    BreakerState,
    CallShape,
    CircuitBreaker,
    ExactlyOnce,
    GiveUp,
    Guard,
    PeerUnavailable,
    RetryExhausted,
    SentMessage,
)
from a2a_client_errors.instrumentation import LoggingHook, PrometheusHook
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, Interface, guard_client
from a2a_client_errors.integrations.a2a_sdk.interfaces import Route, route_of
from a2a_client_errors.integrations.a2a_sdk.lookup import SdkLookup
from a2a_client_errors.lookup import Found
from a2a_client_errors.testing import FakeClock, RecordingHook
from tests.metrics_support import scrape, value
from tests.relay import refused_port

JSONRPC_URL = "http://agent.test/jsonrpc"
REST_URL = "http://agent.test/rest"
OTHER_JSONRPC_URL = "http://backup.test/jsonrpc"
TASK = {
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "history": [
        {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c1"}
    ],
}


def _card(*interfaces: tuple[str, str]) -> Any:
    return AgentCard(
        name="agent",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
            for binding, url in interfaces
        ],
    )


CARD = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL), ("GRPC", "agent.test:50051"))


class Agent:
    """An agent whose JSON-RPC endpoint can be dead; counts what reached each endpoint."""

    def __init__(self, *, jsonrpc: str = "dead", rest: str = "up") -> None:
        self.modes = {"/jsonrpc": jsonrpc, "/rest": rest}
        self.reached: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """One request: refused, lost or answered, by its endpoint's mode."""
        prefix = "/" + request.url.path.strip("/").split("/")[0]
        mode = self.modes.get(prefix, "dead")
        if mode == "dead":
            raise httpx.ConnectError("connection refused", request=request)
        self.reached.append(request.url.path)
        if mode == "lost":
            raise httpx.ReadError("connection closed", request=request)
        if prefix == "/jsonrpc":
            rpc = json.loads(request.content)
            result = {"task": TASK} if rpc.get("method") == "SendMessage" else TASK
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": rpc["id"], "result": result})
        if request.url.path.endswith("/tasks"):
            return httpx.Response(200, json={"tasks": [TASK], "nextPageToken": ""})
        return httpx.Response(200, json=TASK)


def _sdk_client(
    agent: Agent, card: Any = CARD, bindings: tuple[str, ...] = ("JSONRPC", "HTTP+JSON")
) -> Any:
    http = httpx.AsyncClient(transport=httpx.MockTransport(agent))
    config = ClientConfig(
        streaming=False,
        httpx_client=http,
        supported_protocol_bindings=list(bindings),
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    return ClientFactory(config).create(card)


class _Refusing:
    """A factory that can build no client: every other interface is left out."""

    def create(self, card: Any, interceptors: Any) -> Any:
        """Refuse, as a ClientFactory does for a binding it has no transport for."""
        raise ValueError("no compatible transports found.")


def _guard(hook: RecordingHook, clock: FakeClock, **kwargs: Any) -> Guard:
    return Guard(hooks=[hook], clock=clock.now, sleep=clock.sleep, random=lambda: 0.0, **kwargs)


async def _get_task(client: GuardedClient) -> Any:
    return await client.get_task(a2a_pb2.GetTaskRequest(id="t1"))


# --- the route --------------------------------------------------------------------------------


def test_the_route_lists_what_the_client_speaks_the_preferred_first() -> None:
    """Bindings the client cannot speak are left out; each interface once; its own key."""
    card = _card(
        ("GRPC", "agent.test:50051"),
        ("HTTP+JSON", REST_URL),
        ("JSONRPC", JSONRPC_URL),
        ("JSONRPC", JSONRPC_URL + "/"),  # the same one again
        ("JSONRPC", OTHER_JSONRPC_URL),
    )
    route = route_of(_sdk_client(Agent(), card, ("JSONRPC", "HTTP+JSON")), None)
    assert [(i.binding, i.url) for i in route] == [
        ("HTTP+JSON", REST_URL),  # the factory picked it: first in the card it can speak
        ("JSONRPC", JSONRPC_URL),
        ("JSONRPC", OTHER_JSONRPC_URL),
    ]
    assert [i.peer for i in route] == [REST_URL, JSONRPC_URL, OTHER_JSONRPC_URL]
    assert str(route[0]) == f"HTTP+JSON {REST_URL}"


def test_a_given_peer_names_the_preferred_and_the_others_by_binding() -> None:
    """peer='billing': the preferred keeps it, the others add their binding (and a number)."""
    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL), ("JSONRPC", OTHER_JSONRPC_URL))
    route = route_of(_sdk_client(Agent(), card), "billing")
    assert [i.peer for i in route] == ["billing", "billing [HTTP+JSON]", "billing [JSONRPC]"]


def test_two_bindings_at_one_url_get_two_keys() -> None:
    """JSON-RPC and HTTP+JSON at one URL: two interfaces, two breakers."""
    card = _card(("JSONRPC", "http://agent.test/"), ("HTTP+JSON", "http://agent.test/"))
    route = route_of(_sdk_client(Agent(), card), None)
    assert [i.peer for i in route] == ["http://agent.test/", "http://agent.test/ [HTTP+JSON]"]


async def test_a_grpc_client_is_told_by_its_binding() -> None:
    """A gRPC client keeps no URL: its interface is the one the factory picks for the binding."""
    card = _card(("GRPC", "agent.test:50051"), ("JSONRPC", JSONRPC_URL))
    client = _sdk_client(Agent(), card, ("GRPC", "JSONRPC"))
    try:
        route = route_of(client, None)
        assert [i.binding for i in route] == ["GRPC", "JSONRPC"]
        assert route[0].peer == "agent.test:50051"
    finally:
        await client.close()


def test_a_client_that_is_not_a2a_sdks_has_a_route_of_one() -> None:
    """A transport that is none of a2a-sdk's: no failover, the old key."""

    class Custom:
        _card = CARD
        _transport = object()

    (only,) = route_of(Custom(), None)
    assert (only.binding, only.peer) == ("", JSONRPC_URL)
    assert route_of(object(), None)[0].peer == "a2a"
    assert route_of(object(), "named")[0].peer == "named"


async def test_an_interface_no_client_can_be_built_for_is_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A factory that refuses an interface: it is left out, logged once."""
    client = _sdk_client(Agent())
    route = Route(client, route_of(client, None), _Refusing())
    assert route.has_after(0)
    with caplog.at_level(logging.WARNING, "a2a_client_errors"):
        assert route.next_after(0) is None
        assert route.client_at(1) is None  # known: not built again, not logged again
    assert caplog.text.count("left out of the failover") == 1
    assert not route.has_after(0)
    assert route.built() == []


async def test_a_route_none_of_whose_others_can_be_built_retries_where_it_is() -> None:
    """Moving on finds no client to move to: the call goes on over the preferred interface."""
    clock, hook = FakeClock(), RecordingHook()
    agent = Agent(jsonrpc="dead")
    client = guard_client(
        _sdk_client(agent), _guard(hook, clock, max_attempts=2), factory=_Refusing()
    )
    try:
        with pytest.raises(RetryExhausted) as caught:
            await _get_task(client)
    finally:
        await client.close()
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert not hook.failovers


# --- the Guard's give-up --------------------------------------------------------------------


def _refused() -> Any:
    raise httpx.ConnectError("refused", request=httpx.Request("POST", JSONRPC_URL))


def test_a_not_sent_failure_ends_at_once_when_a_next_interface_exists() -> None:
    """give-up failover: no sleep, no retry token, no on_give_up (the call goes on)."""
    clock, hook = FakeClock(), RecordingHook()
    guard = _guard(hook, clock)
    with pytest.raises(RetryExhausted) as caught:
        guard._call_with(_refused, (), peer="p", shape=CallShape("GetTask", failover=True))
    assert caught.value.decision.give_up is GiveUp.FAILOVER
    assert caught.value.attempts == 1
    assert not caught.value.maybe_processed
    assert clock.sleeps == []
    assert hook.names() == ["decision"]
    assert guard.budget_for("p").tokens == guard.budget_for("q").tokens


def test_an_unknown_outcome_is_never_moved() -> None:
    """A lost answer stays where it happened: retried (a read) as without failover."""
    clock, hook = FakeClock(), RecordingHook()
    guard = _guard(hook, clock, max_attempts=2)

    def lost() -> Any:
        raise httpx.ReadError("closed", request=httpx.Request("POST", JSONRPC_URL))

    with pytest.raises(RetryExhausted) as caught:
        guard._call_with(lost, (), peer="p", shape=CallShape("GetTask", failover=True))
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert caught.value.attempts == 2
    assert "give_up" in hook.names()


def test_an_open_breaker_tells_no_give_up_when_the_call_goes_on() -> None:
    """PeerUnavailable under failover: counted as refused, not as a call that ended."""
    clock, hook = FakeClock(), RecordingHook()
    breaker = CircuitBreaker(min_calls=1, clock=clock.now, random=lambda: 0.0)
    guard = _guard(hook, clock, breaker=breaker, max_attempts=1)
    with contextlib.suppress(RetryExhausted):
        guard._call_with(_refused, (), peer="p", shape=CallShape("GetTask"))
    with pytest.raises(PeerUnavailable):
        guard._call_with(_refused, (), peer="p", shape=CallShape("GetTask", failover=True))
    assert hook.names()[-2:] == ["decision", "peer_unavailable"]


# --- the guarded client ---------------------------------------------------------------------


async def test_a_refused_interface_moves_the_call_to_the_next() -> None:
    """Refused over JSON-RPC, served over HTTP+JSON; told to hooks, metrics and logs."""
    clock, hook, agent = FakeClock(), RecordingHook(), Agent()
    registry = CollectorRegistry()
    guard = Guard(
        hooks=[hook, PrometheusHook(registry=registry), LoggingHook()],
        clock=clock.now,
        sleep=clock.sleep,
    )
    client = guard_client(_sdk_client(agent), guard)
    try:
        task = await _get_task(client)
    finally:
        await client.close()
    assert task.id == "t1"
    assert agent.reached == ["/rest/tasks/t1"]
    (moved,) = hook.failovers
    assert (moved.peer, moved.to, moved.why, moved.operation) == (
        JSONRPC_URL,
        REST_URL,
        "not_sent",
        "GetTask",
    )
    assert client.serving == client.interfaces[1]
    assert [e.peer for e in hook.decisions if e.decision.action.value == "ok"] == [REST_URL]
    samples = scrape(registry)
    labels = {"method": "GetTask", "peer": JSONRPC_URL, "to": REST_URL, "why": "not_sent"}
    assert value(samples, "a2a_client_failovers_total", **labels) == 1
    assert value(samples, "a2a_client_calls_total", method="GetTask", peer=REST_URL, outcome="ok")
    assert clock.sleeps == []


async def test_the_failover_line_names_both_interfaces(caplog: pytest.LogCaptureFixture) -> None:
    """One WARNING per move naming both interfaces; one INFO when the serving one changes."""
    guard = Guard(hooks=[LoggingHook()], sleep=lambda _: None)
    client = guard_client(_sdk_client(Agent()), guard)
    with caplog.at_level(logging.INFO):
        try:
            await _get_task(client)
        finally:
            await client.close()
    (line,) = [r for r in caplog.records if "sent over" in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert line.getMessage() == (
        f"GetTask to {JSONRPC_URL}: not reached (transport connect, nothing sent); "
        f"sent over {REST_URL}"
    )
    assert (line.peer, line.to, line.why) == (JSONRPC_URL, REST_URL, "not_sent")  # type: ignore[attr-defined]
    served = [r.getMessage() for r in caplog.records if "are served over" in r.getMessage()]
    assert served == [f"calls to {JSONRPC_URL} are served over HTTP+JSON {REST_URL}"]


async def test_every_interface_refused_ends_in_the_last_ones_retries() -> None:
    """All refused: the last interface retries as a route of one, then the call fails."""
    clock, hook = FakeClock(), RecordingHook()
    guard = _guard(hook, clock, max_attempts=3)
    client = guard_client(_sdk_client(Agent(jsonrpc="dead", rest="dead")), guard)
    try:
        with pytest.raises(RetryExhausted) as caught:
            await _get_task(client)
    finally:
        await client.close()
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert caught.value.attempts == 3  # the last interface retries as a route of one does
    assert [f.peer for f in hook.failovers] == [JSONRPC_URL]
    assert hook.names().count("retry") == 2
    assert client.serving is None


async def test_a_lost_send_is_looked_up_not_moved() -> None:
    """JSON-RPC loses the answer: the look-up runs (over JSON-RPC, then HTTP+JSON)."""
    clock, hook, agent = FakeClock(), RecordingHook(), Agent(jsonrpc="lost")
    guard = _guard(hook, clock)
    client = guard_client(_sdk_client(agent), guard)
    request = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id="m1",
            context_id="c1",
            role=a2a_pb2.ROLE_USER,
            parts=[a2a_pb2.Part(text="hi")],
        )
    )
    try:
        events = [event async for event in client.send_message(request)]
    finally:
        await client.close()
    assert [event.task.id for event in events] == ["t1"]
    assert hook.resolutions == ["found"]
    assert not hook.failovers
    assert agent.reached[0] == "/jsonrpc"  # the send (its answer lost)
    assert agent.reached.count("/jsonrpc") == 2  # then the look-up's query, lost too
    assert "/rest/tasks" in agent.reached  # answered over HTTP+JSON


def _send(message_id: str) -> Any:
    """A SendMessageRequest in its own context."""
    message = a2a_pb2.Message(
        message_id=message_id,
        context_id="c1",
        role=a2a_pb2.ROLE_USER,
        parts=[a2a_pb2.Part(text="hi")],
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def test_a_grpc_interface_that_cannot_connect_moves_a_send_to_the_next() -> None:
    """The gRPC channel cannot connect: nothing sent, so the send goes over JSON-RPC at once."""
    clock, hook, agent = FakeClock(), RecordingHook(), Agent(jsonrpc="up")
    sock, target = refused_port()
    with sock:
        card = _card(("GRPC", target), ("JSONRPC", JSONRPC_URL))
        client = guard_client(_sdk_client(agent, card, ("GRPC", "JSONRPC")), _guard(hook, clock))
        try:
            events = [event async for event in client.send_message(_send("m1"))]
        finally:
            await client.close()
    assert [event.task.id for event in events] == ["t1"]
    (moved,) = hook.failovers
    assert (moved.peer, moved.to, moved.why) == (target, JSONRPC_URL, "not_sent")
    assert agent.reached == ["/jsonrpc"]  # the send, once: nothing was looked up
    assert hook.resolutions == []


async def test_a_grpc_route_of_one_that_cannot_connect_retries_a_send_at_once() -> None:
    """No other interface: the send is retried where it is (not sent), never OutcomeUnknown."""
    clock, hook = FakeClock(), RecordingHook()
    sock, target = refused_port()
    with sock:
        card = _card(("GRPC", target))
        sdk = _sdk_client(Agent(), card, ("GRPC",))
        client = guard_client(sdk, _guard(hook, clock, max_attempts=2))
        try:
            with pytest.raises(RetryExhausted) as caught:
                await client.get_task(a2a_pb2.GetTaskRequest(id="t1"))
            with pytest.raises(RetryExhausted) as sent:
                _ = [event async for event in client.send_message(_send("m2"))]
        finally:
            await client.close()
    for failure in (caught.value, sent.value):
        assert failure.decision.give_up is GiveUp.ATTEMPTS
        assert failure.decision.delivery.value == "not_sent"
        assert not failure.maybe_processed
    assert hook.resolutions == []
    assert not hook.failovers


async def test_without_failover_the_route_is_the_preferred_only() -> None:
    """failover=False: the call stays on the preferred interface."""
    guard = Guard(sleep=lambda _: None, max_attempts=1)
    client = guard_client(_sdk_client(Agent()), guard, failover=False)
    try:
        with pytest.raises(RetryExhausted):
            await _get_task(client)
        assert len(client.interfaces) == 2  # listed, not used
    finally:
        await client.close()


async def test_a_breaker_per_interface_opens_only_the_dead_ones() -> None:
    """Each interface has its own breaker: the dead one opens, the live one serves."""
    clock, hook = FakeClock(), RecordingHook()
    breaker = CircuitBreaker(min_calls=2, clock=clock.now, random=lambda: 0.0)
    agent = Agent()
    client = guard_client(_sdk_client(agent), _guard(hook, clock, breaker=breaker))
    try:
        for _ in range(4):
            assert (await _get_task(client)).id == "t1"
    finally:
        await client.close()
    assert breaker.state(JSONRPC_URL) is BreakerState.OPEN
    assert breaker.state(REST_URL) is BreakerState.CLOSED
    assert [f.why for f in hook.failovers] == [
        "not_sent",
        "not_sent",
        "breaker_open",
        "breaker_open",
    ]
    assert agent.reached == ["/rest/tasks/t1"] * 4


async def test_close_closes_the_clients_built_for_other_interfaces() -> None:
    """close() closes every client built, one that will not close included."""
    closed: list[str] = []

    class Built:
        def __init__(self, name: str) -> None:
            self.name = name

        async def close(self) -> None:
            closed.append(self.name)
            if self.name == "broken":
                raise RuntimeError("will not close")

    class Factory:
        def __init__(self) -> None:
            self.names = iter(["broken", "fine"])

        def create(self, card: Any, interceptors: Any) -> Any:
            return Built(next(self.names))

    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL), ("JSONRPC", OTHER_JSONRPC_URL))
    client = guard_client(_sdk_client(Agent(), card), Guard(), factory=Factory())
    assert client._route.built() == []  # nothing is built before a call needs it
    assert client._route.next_after(0) == 1
    assert client._route.next_after(1) == 2
    await client.close()
    assert closed == ["broken", "fine"]


async def test_a_card_read_again_draws_the_route_again() -> None:
    """read_card: the new card's interfaces make the route; the old clients wait for close()."""
    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL))
    fresh = _card(("JSONRPC", JSONRPC_URL), ("JSONRPC", OTHER_JSONRPC_URL))

    def serve(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=json.loads(_json(fresh)))

    sdk = _sdk_client(Agent(), card)
    sdk._config.httpx_client = httpx.AsyncClient(transport=httpx.MockTransport(serve))
    client = guard_client(sdk, Guard(), card_url="http://agent.test/.well-known/agent-card.json")
    try:
        assert client._route.next_after(0) == 1  # built for the card held
        assert await client.read_card() is not None
        assert [i.url for i in client.interfaces] == [JSONRPC_URL, OTHER_JSONRPC_URL]
        assert len(client._retired) == 1
    finally:
        await client.close()


def _json(card: Any) -> str:
    from google.protobuf import json_format

    return json_format.MessageToJson(card)


# --- the look-up over the next interfaces ----------------------------------------------------


class _Answering:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.asked = 0

    async def list_tasks(self, request: Any, *, context: Any = None) -> Any:
        self.asked += 1
        if self.error is not None:
            raise self.error
        return a2a_pb2.ListTasksResponse(
            tasks=[
                a2a_pb2.Task(
                    id="t1",
                    context_id="c1",
                    history=[a2a_pb2.Message(message_id="m1", context_id="c1")],
                )
            ]
        )


async def _no_sleep(_: float) -> None:
    return None


async def test_a_look_up_asks_the_next_interface_when_one_is_unwell() -> None:
    """A look-up query refused by one interface is asked over the next."""
    dead = _Answering(httpx.ConnectError("refused"))
    live = _Answering()
    lookup = SdkLookup(dead, a2a_pb2, None, ExactlyOnce(), _no_sleep, others=[live])
    result = await lookup.find(SentMessage("m1", "c1", None, 0.0))
    assert isinstance(result, Found)
    assert result.value.id == "t1"
    assert (dead.asked, live.asked) == (1, 1)


async def test_a_look_up_the_agent_refuses_does_not_move() -> None:
    """A look-up the agent refuses (401) is not asked elsewhere."""
    denied = httpx.HTTPStatusError("no", request=_req(), response=httpx.Response(401))
    refusing = _Answering(denied)
    live = _Answering()
    lookup = SdkLookup(refusing, a2a_pb2, None, ExactlyOnce(), _no_sleep, others=[live])
    with pytest.raises(httpx.HTTPStatusError):
        await lookup.find(SentMessage("m1", "c1", None, 0.0))
    assert live.asked == 0


def _req() -> httpx.Request:
    return httpx.Request("POST", JSONRPC_URL)


def test_interface_is_exported() -> None:
    """Interface is importable from the integration."""
    assert Interface("JSONRPC", JSONRPC_URL, "k").peer == "k"


async def test_no_credential_in_an_interface_url_reaches_a_log_line_or_a_metric(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """User info and query tokens in the card's URLs are dropped from every line and label."""
    secret = "s3cr3t-t0ken"
    card = _card(
        ("JSONRPC", f"http://user:{secret}@agent.test/jsonrpc?api_key={secret}"),
        ("HTTP+JSON", f"http://user:{secret}@agent.test/rest?api_key={secret}"),
    )
    registry = CollectorRegistry()
    guard = Guard(hooks=[LoggingHook(), PrometheusHook(registry=registry)], sleep=lambda _: None)

    def agent(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/jsonrpc"):
            raise httpx.ConnectError(f"refused {request.url}", request=request)
        return httpx.Response(200, json=TASK)

    http = httpx.AsyncClient(transport=httpx.MockTransport(agent))
    config = ClientConfig(httpx_client=http, supported_protocol_bindings=["JSONRPC", "HTTP+JSON"])
    client = guard_client(ClientFactory(config).create(card), guard)
    with caplog.at_level(logging.DEBUG):
        try:
            assert (await _get_task(client)).id == "t1"
        finally:
            await client.close()
    ours = [r for r in caplog.records if r.name.startswith("a2a_client_errors")]
    rendered = [record.getMessage() for record in ours] + [str(vars(r)) for r in ours]
    assert any("sent over" in line for line in rendered)
    assert not [line for line in rendered if secret in line]
    from prometheus_client import generate_latest

    exposition = generate_latest(registry).decode()
    assert "failovers_total" in exposition
    assert secret not in exposition
