"""Interface failover: the route of a card's interfaces, the Guard's give-up, the hooks.

Real a2a-sdk clients (built by its ClientFactory) over `httpx.MockTransport`: the JSON-RPC
endpoint refuses connections (nothing sent) or loses answers, the HTTP+JSON one answers.
Where credentials go is tested over real sockets on 127.0.0.1: a recording server at another
origin, and ports that refuse connections.
The end-to-end tests against a real agent are in tests/e2e/test_failover.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.types import AgentCard, AgentInterface, a2a_pb2
from hypothesis import example, given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from a2a_client_errors import (
    CircuitBreaker,
    GiveUp,
    Guard,
    OutcomeUnknown,
    PeerUnavailable,
    RetryExhausted,
)
from a2a_client_errors._engine import adrive
from a2a_client_errors._lookup import ListTasksQuery
from a2a_client_errors.instrumentation import LoggingHook, PrometheusHook
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, Interface, guard_client
from a2a_client_errors.integrations.a2a_sdk._compat import client_config
from a2a_client_errors.integrations.a2a_sdk._interfaces import (
    MAX_INTERFACES,
    LeftOut,
    Route,
    named_origins,
    origin_of,
    route_of,
)
from a2a_client_errors.integrations.a2a_sdk._lookup import SdkLookup
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import BreakerState, CallShape, SentMessage
from tests.loopback import Loopback, Recorded, Reply
from tests.metrics_support import scrape, value
from tests.relay import refused_port

if TYPE_CHECKING:
    from collections.abc import Iterator

# guard_client over a2a-sdk 1.x clients and types.
pytestmark = pytest.mark.a2a_sdk("1")

JSONRPC_URL = "http://agent.test/jsonrpc"
REST_URL = "http://agent.test/rest"
OTHER_JSONRPC_URL = "http://backup.test/jsonrpc"
BACKUP = frozenset({"http://backup.test"})
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
        self.hosts: list[str] = []  # the host of each request that reached an endpoint

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """One request: refused, lost or answered, by its endpoint's mode."""
        prefix = "/" + request.url.path.strip("/").split("/")[0]
        mode = self.modes.get(prefix, "dead")
        if mode == "dead":
            raise httpx.ConnectError("connection refused", request=request)
        self.reached.append(request.url.path)
        self.hosts.append(request.url.host)
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
    route = route_of(_sdk_client(Agent(), card, ("JSONRPC", "HTTP+JSON")), None, origins=BACKUP)
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
    route = route_of(_sdk_client(Agent(), card), "billing", origins=BACKUP)
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
        route = route_of(client, None, origins={"http://agent.test"})
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
        guard.begin(peer="p", shape=CallShape("GetTask", failover=True)).run(_refused)
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
        guard.begin(peer="p", shape=CallShape("GetTask", failover=True)).run(lost)
    assert caught.value.decision.give_up is GiveUp.ATTEMPTS
    assert caught.value.attempts == 2
    assert "give_up" in hook.names()


def test_an_open_breaker_tells_no_give_up_when_the_call_goes_on() -> None:
    """PeerUnavailable under failover: counted as refused, not as a call that ended."""
    clock, hook = FakeClock(), RecordingHook()
    breaker = CircuitBreaker(min_calls=1, clock=clock.now, random=lambda: 0.0)
    guard = _guard(hook, clock, breaker=breaker, max_attempts=1)
    with contextlib.suppress(RetryExhausted):
        guard.begin(peer="p", shape=CallShape("GetTask")).run(_refused)
    with pytest.raises(PeerUnavailable):
        guard.begin(peer="p", shape=CallShape("GetTask", failover=True)).run(_refused)
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
    # One call, one record: it ended well over the second interface (the move is no end),
    # after one attempt over each.
    (record,) = [r for r in hook.calls if r.operation == "GetTask"]
    assert (record.ok, record.interface, record.attempts) == (True, REST_URL, 2)
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
    assert agent.reached.count("/jsonrpc") == 3  # the look-up's query, its reread, lost too
    assert "/rest/tasks" in agent.reached  # answered over HTTP+JSON
    assert agent.reached[-1] == "/rest/tasks/t1"  # the task found, read whole


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
        client = guard_client(
            _sdk_client(agent, card, ("GRPC", "JSONRPC")),
            _guard(hook, clock),
            failover_origins=(JSONRPC_URL,),  # another origin than the gRPC one: allowed
        )
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
    client = guard_client(
        _sdk_client(Agent(), card), Guard(), factory=Factory(), failover_origins=BACKUP
    )
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
    client_config(sdk).httpx_client = httpx.AsyncClient(transport=httpx.MockTransport(serve))
    client = guard_client(
        sdk,
        Guard(),
        card_url="http://agent.test/.well-known/agent-card.json",
        failover_origins=BACKUP,
    )
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
    lookup = SdkLookup(dead, None, SentMessage("m1", "c1", None, 0.0), others=[live])
    page = await adrive(lookup.asking(ListTasksQuery("c1", "", 50, None), None), Guard(), "p")
    assert [task.id for task in page.tasks] == ["t1"]
    assert (dead.asked, live.asked) == (1, 1)
    assert lookup.elsewhere


async def test_a_look_up_the_agent_refuses_does_not_move() -> None:
    """A look-up the agent refuses (401) is not asked elsewhere."""
    denied = httpx.HTTPStatusError("no", request=_req(), response=httpx.Response(401))
    refusing = _Answering(denied)
    live = _Answering()
    lookup = SdkLookup(refusing, None, SentMessage("m1", "c1", None, 0.0), others=[live])
    with pytest.raises(httpx.HTTPStatusError):
        await adrive(lookup.asking(ListTasksQuery("c1", "", 50, None), None), Guard(), "p")
    assert live.asked == 0
    assert not lookup.elsewhere


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


# --- origins: where the client's credentials may go -------------------------------------------

SECRET = "s3cr3t-t0ken"


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://agent.example/a2a", "https://agent.example:443"),
        ("HTTPS://user:secret@Agent.Example:443/x?key=k#f", "https://agent.example:443"),
        ("http://agent.example/jsonrpc", "http://agent.example:80"),
        ("http://agent.example:8080/", "http://agent.example:8080"),
        ("http://[::1]:8000/rest", "http://[::1]:8000"),
        ("http://bücher.example/", "http://xn--bcher-kva.example:80"),
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("[::1]:50051", "[::1]:50051"),
        ("agent.example", "agent.example"),
        ("dns:///agent.example:50051", "dns:///agent.example:50051"),
        ("unix:/run/agent.sock", "unix:/run/agent.sock"),
        ("http://", "http://"),
        ("", ""),
    ],
)
def test_an_origin_is_a_scheme_a_host_and_a_port(url: str, origin: str) -> None:
    """Default ports filled, case and user info dropped; a bare gRPC target is host:port."""
    assert origin_of(url) == origin
    assert origin_of(origin) == origin


def test_another_scheme_on_the_same_host_and_port_is_another_origin() -> None:
    """A gRPC host:port is never an http(s) URL's origin; http is never https's."""
    assert origin_of("127.0.0.1:8000") != origin_of("http://127.0.0.1:8000/jsonrpc")
    assert origin_of("agent.example:443") != origin_of("https://agent.example/")
    assert origin_of("http://agent.example:443/") != origin_of("https://agent.example/")
    assert origin_of("http://agent.example\\@evil.example/") == "http://evil.example:80"


@given(st.text())
@example("@\x850")  # a host after the user info that starts with a NEL
@example("x@ y")
def test_origin_of_never_raises_and_an_origin_is_its_own(url: str) -> None:
    """Whatever a card writes: a string, whose own origin is itself."""
    origin = origin_of(url)
    assert origin_of(origin) == origin


def test_the_origins_a_caller_names_are_checked() -> None:
    """One string, a non-string, an empty name: refused; URLs count by their origin."""
    assert named_origins(["https://b.example/rest", "127.0.0.1:50051"]) == {
        "https://b.example:443",
        "127.0.0.1:50051",
    }
    with pytest.raises(TypeError, match="not one string"):
        named_origins("https://b.example")
    with pytest.raises(TypeError, match="strings"):
        named_origins([None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="empty"):
        named_origins([" "])
    with pytest.raises(TypeError, match="not one string"):
        guard_client(_sdk_client(Agent()), Guard(), failover_origins="http://agent.test")


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
def test_max_interfaces_is_a_whole_number_of_at_least_one(bad: Any) -> None:
    """Anything else is a ValueError, before any call."""
    with pytest.raises(ValueError, match="max_interfaces"):
        guard_client(_sdk_client(Agent()), Guard(), max_interfaces=bad)
    with pytest.raises(ValueError, match="max_interfaces"):
        route_of(_sdk_client(Agent()), None, limit=bad)


OTHER_ORIGINS = (
    ("JSONRPC", "https://agent.test/jsonrpc"),  # another scheme
    ("JSONRPC", "http://agent.test:8080/jsonrpc"),  # another port
    ("HTTP+JSON", f"http://user:{SECRET}@backup.test/rest?key={SECRET}"),  # another host
)


async def test_the_route_keeps_to_the_preferred_interfaces_origin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Other schemes, ports and hosts are left out: listed, and logged once without secrets."""
    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL), *OTHER_ORIGINS)
    with caplog.at_level(logging.DEBUG, "a2a_client_errors"):
        client = guard_client(_sdk_client(Agent(), card), Guard())
    try:
        assert [i.url for i in client.interfaces] == [JSONRPC_URL, REST_URL]
        assert [(left.origin, left.why) for left in client.left_out] == [
            ("https://agent.test:443", "origin"),
            ("http://agent.test:8080", "origin"),
            ("http://backup.test:80", "origin"),
        ]
        assert isinstance(client.left_out[0], LeftOut)
        assert str(client.left_out[0]) == "JSONRPC https://agent.test/jsonrpc"
    finally:
        await client.close()
    lines = [r for r in caplog.records if "never go over" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.INFO]
    text = lines[0].getMessage()
    assert text.startswith(f"calls to {JSONRPC_URL} never go over 3 of the agent card's")
    assert "HTTP+JSON http://backup.test/rest" in text
    assert SECRET not in text


async def test_origins_named_by_the_caller_are_failed_over_to_within_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Allowed by name: listed in the card's order, up to max_interfaces; the rest left out."""
    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", REST_URL), *OTHER_ORIGINS)
    allowed = {"https://agent.test", "http://backup.test:80/any/path"}
    with caplog.at_level(logging.INFO, "a2a_client_errors"):
        client = guard_client(_sdk_client(Agent(), card), Guard(), failover_origins=allowed)
    try:
        assert [i.url for i in client.interfaces] == [
            JSONRPC_URL,
            REST_URL,
            "https://agent.test/jsonrpc",
        ]
        assert [(left.origin, left.why) for left in client.left_out] == [
            ("http://agent.test:8080", "origin"),
            ("http://backup.test:80", "max_interfaces"),
        ]
        assert client.failover_origins == {"https://agent.test:443", "http://backup.test:80"}
    finally:
        await client.close()
    lines = sorted(r.getMessage() for r in caplog.records if "never go over" in r.getMessage())
    assert len(lines) == 2
    assert "beyond max_interfaces=3" in lines[0]
    assert "not on its origin" in lines[1]


async def test_a_grpc_interface_on_the_same_host_and_port_is_left_out_unless_named() -> None:
    """JSON-RPC at http://127.0.0.1:50051 and gRPC at 127.0.0.1:50051: two origins."""
    card = _card(("JSONRPC", "http://127.0.0.1:50051/jsonrpc"), ("GRPC", "127.0.0.1:50051"))
    client = _sdk_client(Agent(), card, ("JSONRPC", "GRPC"))
    assert [i.binding for i in route_of(client, None)] == ["JSONRPC"]
    named = route_of(client, None, origins={"127.0.0.1:50051"})
    assert [(i.binding, i.origin) for i in named] == [
        ("JSONRPC", "http://127.0.0.1:50051"),
        ("GRPC", "127.0.0.1:50051"),
    ]


_SHARED_HTTP = httpx.AsyncClient(transport=httpx.MockTransport(Agent()))
"""The examples' clients' HTTP client: a route is drawn from the card, nothing is sent."""


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["JSONRPC", "HTTP+JSON", "GRPC"]),
            st.one_of(
                st.sampled_from(
                    [JSONRPC_URL, REST_URL, "https://agent.test/a", "http://backup.test/b"]
                ),
                st.text(max_size=30),
            ),
        ),
        max_size=12,
    ),
    st.sets(st.sampled_from(["https://agent.test", "http://backup.test", "agent.test:1"])),
    st.integers(min_value=1, max_value=4),
    st.sampled_from([None, "billing"]),
)
def test_a_route_never_leaves_its_origins_nor_its_bound(
    others: list[tuple[str, str]], allowed: set[str], limit: int, peer: str | None
) -> None:
    """Whatever the card lists: the preferred first, only allowed origins, at most the limit."""
    card = _card(("JSONRPC", JSONRPC_URL), *others)
    config = ClientConfig(httpx_client=_SHARED_HTTP, supported_protocol_bindings=["JSONRPC"])
    client = ClientFactory(config).create(card)
    route = route_of(client, peer, origins=allowed, limit=limit)
    origins = named_origins(allowed) | {origin_of(JSONRPC_URL)}
    assert route[0].url == JSONRPC_URL
    assert len(route) <= limit
    assert all(interface.origin in origins for interface in route)
    assert len({interface.peer for interface in route}) == len(route)
    left_out = Route.of(client, peer, origins=named_origins(allowed), limit=limit).left_out
    for left in left_out:
        assert (left.why == "origin") == (left.origin not in origins)
        assert left.why == "origin" or len(route) == limit


@pytest.fixture(name="refusing")
def refusing_fixture() -> Iterator[list[int]]:
    """300 ports on 127.0.0.1 that refuse connections (bound, never listening) for one test."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(300):
            sock = socket.socket()
            sockets.append(sock)
            sock.bind(("127.0.0.1", 0))
        yield [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class Attempts:
    """The requests an httpx client tried to send (a refused connect included), by port."""

    def __init__(self) -> None:
        self.ports: list[int | None] = []

    async def __call__(self, request: httpx.Request) -> None:
        """Note one attempt."""
        self.ports.append(request.url.port)


@pytest.mark.parametrize("origins", ["one", "many"])
@pytest.mark.parametrize("limit", [1, MAX_INTERFACES, 5])
async def test_a_card_of_300_refusing_interfaces_costs_a_call_the_bound(
    refusing: list[int], origins: str, limit: int
) -> None:
    """At most max_interfaces interfaces are tried, then the last one's retries: never 300."""
    if origins == "one":  # 300 paths on the preferred interface's origin
        urls = [f"http://127.0.0.1:{refusing[0]}/a2a/{n}" for n in range(300)]
    else:  # 300 origins, every one allowed by name
        urls = [f"http://127.0.0.1:{port}/a2a" for port in refusing]
    card = _card(*(("JSONRPC", url) for url in urls))
    attempts = Attempts()
    http = httpx.AsyncClient(event_hooks={"request": [attempts]})
    config = ClientConfig(
        streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
    )
    clock, hook = FakeClock(), RecordingHook()
    guard = _guard(hook, clock, max_attempts=3)
    client = guard_client(
        ClientFactory(config).create(card),
        guard,
        failover_origins=urls if origins == "many" else (),
        max_interfaces=limit,
    )
    try:
        with pytest.raises(RetryExhausted) as failed:
            await _get_task(client)
    finally:
        await client.close()
        await http.aclose()
    assert not failed.value.maybe_processed
    assert len(attempts.ports) == (limit - 1) + 3  # one per interface, the last one retried
    assert len(client.interfaces) == limit
    assert len(client.left_out) == 300 - limit
    assert {left.why for left in client.left_out} == {"max_interfaces"}
    assert len(hook.failovers) == limit - 1


def _answer_send(request: Recorded) -> Reply:
    """The other origin's agent: a completed task for any JSON-RPC call."""
    rpc = request.json()
    return Reply.json(200, {"jsonrpc": "2.0", "id": rpc["id"], "result": {"task": TASK}})


class _Token(CredentialService):
    """The caller's credential for the card's bearer scheme."""

    async def get_credentials(
        self, security_scheme_name: str, context: ClientCallContext | None
    ) -> str | None:
        """The token, for any scheme."""
        return SECRET


def _authorized(card: Any, attach: str, **kwargs: Any) -> tuple[GuardedClient, Any]:
    """A guarded client whose every request carries ``Bearer SECRET``, one way or the other."""
    headers = {"Authorization": f"Bearer {SECRET}"} if attach == "headers" else {}
    http = httpx.AsyncClient(headers=headers, timeout=5.0)
    interceptors = []
    if attach == "interceptor":  # a2a-sdk's own: from the card's security scheme
        card.security_schemes["bearer"].http_auth_security_scheme.scheme = "bearer"
        card.security_requirements.add().schemes["bearer"].SetInParent()
        interceptors = [AuthInterceptor(_Token())]
    config = ClientConfig(
        streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
    )
    sdk = ClientFactory(config).create(card, interceptors)
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.0, max_attempts=2)
    return guard_client(sdk, guard, **kwargs), http


def _send_request() -> Any:
    """A SendMessage with a messageId of its own."""
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id="m-credentials",
            role=a2a_pb2.ROLE_USER,
            parts=[a2a_pb2.Part(text="hi")],
        )
    )


@pytest.mark.parametrize("attach", ["headers", "interceptor"])
async def test_a_send_never_carries_credentials_to_another_origin_the_card_lists(
    refusing: list[int], attach: str
) -> None:
    """The preferred interface refuses: the other origin, listed by the card, sees nothing."""
    with Loopback(_answer_send) as other:
        card = _card(
            ("JSONRPC", f"http://127.0.0.1:{refusing[0]}/jsonrpc"),
            ("JSONRPC", f"{other.url}/jsonrpc"),
        )
        client, http = _authorized(card, attach)
        try:
            with pytest.raises(RetryExhausted) as failed:
                _ = [event async for event in client.send_message(_send_request())]
            assert [left.why for left in client.left_out] == ["origin"]
        finally:
            await client.close()
            await http.aclose()
        assert other.requests == []
    assert failed.value.attempts == 2
    assert not failed.value.maybe_processed


@pytest.mark.parametrize("attach", ["headers", "interceptor"])
async def test_a_send_fails_over_with_its_credentials_to_an_origin_named(
    refusing: list[int], attach: str
) -> None:
    """Allowed by name: the same message goes there, with the caller's credentials."""
    with Loopback(_answer_send) as other:
        card = _card(
            ("JSONRPC", f"http://127.0.0.1:{refusing[0]}/jsonrpc"),
            ("JSONRPC", f"{other.url}/jsonrpc"),
        )
        client, http = _authorized(card, attach, failover_origins={other.url})
        try:
            events = [event async for event in client.send_message(_send_request())]
            assert client.left_out == ()
        finally:
            await client.close()
            await http.aclose()
        (seen,) = other.requests
    assert [event.task.id for event in events] == ["t1"]
    assert seen.header("authorization") == f"Bearer {SECRET}"
    assert seen.json()["method"] == "SendMessage"
    assert seen.json()["params"]["message"]["messageId"] == "m-credentials"


async def test_the_look_up_of_a_lost_send_keeps_to_the_allowed_origins() -> None:
    """A lost answer is looked up over the allowed interfaces only; named, the other answers."""
    card = _card(("JSONRPC", JSONRPC_URL), ("HTTP+JSON", "http://backup.test/rest"))
    request = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id="m1",
            context_id="c1",
            role=a2a_pb2.ROLE_USER,
            parts=[a2a_pb2.Part(text="hi")],
        )
    )
    outcomes: list[tuple[object, list[str]]] = []
    for allowed in ((), BACKUP):
        agent, hook = Agent(jsonrpc="lost"), RecordingHook()
        client = guard_client(
            _sdk_client(agent, card), _guard(hook, FakeClock()), failover_origins=allowed
        )
        try:
            events = [event async for event in client.send_message(request)]
            outcomes.append(([event.task.id for event in events], agent.hosts))
        except OutcomeUnknown as unknown:  # the look-up could not look: nothing resent
            outcomes.append((unknown, agent.hosts))
        finally:
            await client.close()
    (kept, kept_hosts), (named, named_hosts) = outcomes
    assert isinstance(kept, OutcomeUnknown)
    # The send, then the look-up's read, retried as any read: never over backup.test.
    assert set(kept_hosts) == {"agent.test"}
    assert len(kept_hosts) >= 2
    assert named == ["t1"]
    assert "backup.test" in named_hosts  # the look-up, answered there
