"""Circuit breaking and interface failover against a real a2a-sdk agent on 127.0.0.1.

The agent serves JSON-RPC and HTTP+JSON. Its JSON-RPC endpoint is reached through the real
loopback proxy, which can go down (connections refused: a dead endpoint, nothing reaches the
agent) and come back on the same port. The proxy's port is another origin than the agent's:
calls fail over to the agent's HTTP+JSON interface only where a test allows its origin. Time
is a fake clock shared by the Guard and the breaker; what is sent is counted by the httpx
client itself (a refused connection never reaches the proxy), and the tasks made are counted
in the agent's task store.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, AgentInterface, a2a_pb2

from a2a_client_errors import CircuitBreaker, Guard, PeerUnavailable, RetryExhausted
from a2a_client_errors.instrumentation import LoggingHook
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.testing.lossy import LossyProxy, lose_sends
from a2a_client_errors.testing.peer import EmbeddedPeer
from a2a_client_errors.types import BreakerState, Resolution
from tests.e2e.lossy import COMPLETED, new_tasks, sdk_state, sdk_task_ids, send_request

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.e2e

COOLDOWN = 5.0
MIN_CALLS = 3
REFUSED = MIN_CALLS - 1


@pytest.fixture(scope="module")
def agent() -> Iterator[EmbeddedPeer]:
    """An agent of this module's own: its task store holds only what these tests made."""
    with EmbeddedPeer(streaming=True) as running:
        yield running


class Sent:
    """Counts the requests the httpx client sends, by the URL path they go to."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, request: httpx.Request) -> None:
        """Note one request."""
        self.paths.append(request.url.path)

    def to(self, prefix: str) -> int:
        """How many went to a path under ``prefix``."""
        return sum(path.startswith(prefix) for path in self.paths)


def _card(agent: EmbeddedPeer, jsonrpc_origin: str) -> Any:
    """The agent's card, with JSON-RPC reached through ``jsonrpc_origin`` and gRPC left out."""
    card = AgentCard()
    card.CopyFrom(agent.agent_card)
    there = httpx.URL(jsonrpc_origin)
    kept = []
    for interface in card.supported_interfaces:
        if interface.protocol_binding == "JSONRPC":
            url = httpx.URL(interface.url).copy_with(host=there.host, port=there.port)
            interface.url = str(url)
        if interface.protocol_binding != "GRPC":
            kept.append(interface)
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return card


def _breaker(clock: FakeClock) -> CircuitBreaker:
    return CircuitBreaker(
        min_calls=MIN_CALLS, cooldown=COOLDOWN, clock=clock.now, random=lambda: 0.0
    )


def _client(
    card: Any,
    bindings: list[str],
    hook: RecordingHook,
    clock: FakeClock,
    sent: Sent,
    *,
    streaming: bool = False,
    breaker: CircuitBreaker | None = None,
    allow: tuple[str, ...] = (),
) -> tuple[GuardedClient, httpx.AsyncClient]:
    http = httpx.AsyncClient(
        timeout=10.0, headers={"A2A-Version": "1.0"}, event_hooks={"request": [sent]}
    )
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
        supported_protocol_bindings=bindings,
    )
    client = ClientFactory(config).create(card)
    guard = Guard(
        breaker=breaker,
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: 0.0,
        max_attempts=2,
        hooks=[hook, LoggingHook()],
    )
    return guard_client(client, guard, failover_origins=allow), http


async def _send(client: GuardedClient, text: str = "hello") -> list[Any]:
    return [event async for event in client.send_message(send_request(text))]


def _served_by(hook: RecordingHook) -> list[str]:
    """The interface (peer key) that served each call, in order: its ok decision's peer."""
    return [event.peer for event in hook.decisions if event.decision.action.value == "ok"]


async def test_an_agent_that_goes_down_is_not_sent_to_until_it_is_back(
    agent: EmbeddedPeer,
) -> None:
    """Down: the breaker opens and calls fail fast, nothing sent; back: one probe closes it."""
    clock, hook, sent = FakeClock(), RecordingHook(), Sent()
    before = agent.task_ids()
    with LossyProxy(agent.http_target) as proxy:
        card = _card(agent, proxy.url)
        client, http = _client(card, ["JSONRPC"], hook, clock, sent, breaker=_breaker(clock))
        try:
            assert len(client.interfaces) == 1  # the client speaks JSON-RPC only
            assert sdk_state((await _send(client))[-1]) == COMPLETED
            proxy.down()
            for _ in range(MIN_CALLS):
                with pytest.raises(RetryExhausted) as failed:
                    await _send(client)
                assert not failed.value.maybe_processed  # refused: nothing reached the agent
            tried = len(sent.paths)
            for _ in range(50):  # open: fail fast, nothing sent, no sleep
                with pytest.raises(PeerUnavailable) as refused:
                    await _send(client)
            assert len(sent.paths) == tried
            assert refused.value.retry_in == pytest.approx(COOLDOWN)
            proxy.up()
            clock.advance(COOLDOWN - 0.5)
            with pytest.raises(PeerUnavailable):  # back, but the cool-down is not over
                await _send(client)
            assert len(sent.paths) == tried
            clock.advance(0.5)
            events = await _send(client)  # the probe: the agent answers, the breaker closes
            assert sdk_state(events[-1]) == COMPLETED
            assert sdk_state((await _send(client))[-1]) == COMPLETED
        finally:
            await client.close()
            await http.aclose()
    assert [b.new for b in hook.breakers] == [
        BreakerState.OPEN,
        BreakerState.HALF_OPEN,
        BreakerState.CLOSED,
    ]
    # Every logical send that reached the agent made one task: the first, the probe, the last.
    assert len(new_tasks(agent, before)) == 3
    assert not hook.failovers  # one interface: nowhere to move


@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_dead_jsonrpc_endpoint_fails_over_to_http_json_and_comes_back(
    agent: EmbeddedPeer, streaming: bool
) -> None:
    """JSON-RPC dead: served over HTTP+JSON, same message; back: served over JSON-RPC again."""
    clock, hook, sent = FakeClock(), RecordingHook(), Sent()
    before = agent.task_ids()
    with LossyProxy(agent.http_target) as proxy:
        card = _card(agent, proxy.url)
        client, http = _client(
            card,
            ["JSONRPC", "HTTP+JSON"],
            hook,
            clock,
            sent,
            streaming=streaming,
            breaker=_breaker(clock),
            allow=(agent.rest_url,),
        )
        jsonrpc, rest = (interface.peer for interface in client.interfaces)
        try:
            assert [i.binding for i in client.interfaces] == ["JSONRPC", "HTTP+JSON"]
            assert client.peer == jsonrpc
            assert sdk_state((await _send(client))[-1]) == COMPLETED
            assert client.serving is not None
            assert client.serving.binding == "JSONRPC"

            proxy.down()
            # Refused over JSON-RPC, served over HTTP+JSON; two refusals beside the first
            # success are MIN_CALLS outcomes, two thirds unwell: JSON-RPC's breaker opens.
            for _ in range(REFUSED):
                events = await _send(client)
                assert sdk_state(events[-1]) == COMPLETED
            assert client.serving.binding == "HTTP+JSON"
            assert [f.why for f in hook.failovers] == ["not_sent"] * REFUSED
            assert {(f.peer, f.to) for f in hook.failovers} == {(jsonrpc, rest)}
            assert [b.new for b in hook.breakers] == [BreakerState.OPEN]
            assert [b.peer for b in hook.breakers] == [jsonrpc]  # its own breaker only

            tried = sent.to("/jsonrpc")
            for _ in range(10):  # JSON-RPC's breaker open: straight to HTTP+JSON
                assert sdk_state((await _send(client))[-1]) == COMPLETED
            assert sent.to("/jsonrpc") == tried
            assert [f.why for f in hook.failovers[REFUSED:]] == ["breaker_open"] * 10

            task_id = sdk_task_ids(events).pop()
            task = await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
            assert task.id == task_id  # a read moves alike

            proxy.up()
            clock.advance(COOLDOWN)
            assert sdk_state((await _send(client))[-1]) == COMPLETED  # the probe: JSON-RPC
            assert client.serving.binding == "JSONRPC"
            assert sdk_state((await _send(client))[-1]) == COMPLETED
        finally:
            await client.close()
            await http.aclose()
    served = _served_by(hook)
    # The first send, then REFUSED and 10 sends and the read over HTTP+JSON, then two sends.
    assert served == [jsonrpc] + [rest] * (REFUSED + 10 + 1) + [jsonrpc, jsonrpc]
    # One logical send, one task, whichever interface served it.
    assert len(new_tasks(agent, before)) == 1 + REFUSED + 10 + 2
    assert not any(name == "give_up" for name in hook.names())  # every call was served


async def test_a_lost_answer_is_looked_up_over_the_next_interface_and_not_resent(
    agent: EmbeddedPeer,
) -> None:
    """The answer is lost and JSON-RPC dies: found over HTTP+JSON, never sent twice."""
    clock, hook, sent = FakeClock(), RecordingHook(), Sent()
    before = agent.task_ids()
    with LossyProxy(agent.http_target, lose_sends(1)) as proxy:
        card = _card(agent, proxy.url)
        client, http = _client(
            card, ["JSONRPC", "HTTP+JSON"], hook, clock, sent, allow=(agent.rest_url,)
        )
        original = proxy.plan

        def then_down(seen: Any) -> str:
            action = original(seen)
            if action == "lose":
                proxy.plan = lambda _: "drop"  # from now on nothing gets through JSON-RPC
            return action

        proxy.plan = then_down
        try:
            events = await _send(client)
        finally:
            await client.close()
            await http.aclose()
    made = new_tasks(agent, before)
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert hook.resolutions == [Resolution.FOUND.value]
    assert sent.to("/jsonrpc") >= 2  # the send, then the look-up's first query (dropped)
    assert sent.to("/rest/tasks") >= 1  # the look-up, answered over HTTP+JSON
    assert not hook.failovers  # an unknown outcome never moves: it is looked up


async def test_without_failover_a_dead_interface_is_retried_where_it_is(
    agent: EmbeddedPeer,
) -> None:
    """failover=False: the call stays on JSON-RPC and fails there, nothing sent elsewhere."""
    clock, hook, sent = FakeClock(), RecordingHook(), Sent()
    with LossyProxy(agent.http_target) as proxy:
        card = _card(agent, proxy.url)
        http = httpx.AsyncClient(timeout=10.0, event_hooks={"request": [sent]})
        config = ClientConfig(
            streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC", "HTTP+JSON"]
        )
        guard = Guard(clock=clock.now, sleep=clock.sleep, max_attempts=2, hooks=[hook])
        client = guard_client(ClientFactory(config).create(card), guard, failover=False)
        proxy.down()
        try:
            with pytest.raises(RetryExhausted) as failed:
                await _send(client)
        finally:
            await client.close()
            await http.aclose()
    assert failed.value.attempts == 2
    assert sent.to("/rest") == 0
    assert not hook.failovers


def _dead_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _grpc_first(agent: EmbeddedPeer, grpc_url: str) -> Any:
    """The agent's card with its gRPC interface first, at ``grpc_url``."""
    card = AgentCard()
    card.CopyFrom(agent.agent_card)
    interfaces = [AgentInterface() for _ in card.supported_interfaces]
    for copy, interface in zip(interfaces, card.supported_interfaces, strict=True):
        copy.CopyFrom(interface)
        if copy.protocol_binding == "GRPC":
            copy.url = grpc_url
    interfaces.sort(key=lambda interface: interface.protocol_binding != "GRPC")
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(interfaces)
    return card


async def test_a_dead_grpc_endpoint_moves_calls_to_the_next_interface_at_once(
    agent: EmbeddedPeer,
) -> None:
    """A gRPC endpoint that refuses connections: its channel cannot connect, nothing is sent.

    So a read and a send go over JSON-RPC at once, with no look-up; the refusals still count
    in gRPC's breaker, which opens, and later calls go straight to JSON-RPC.
    """
    clock, hook, sent = FakeClock(), RecordingHook(), Sent()
    made, http_made = _client(agent.agent_card, ["JSONRPC"], RecordingHook(), clock, sent)
    try:
        (task_id,) = sdk_task_ids(await _send(made))
    finally:
        await made.close()
        await http_made.aclose()
    breaker = CircuitBreaker(min_calls=2, cooldown=COOLDOWN, clock=clock.now, random=lambda: 0.0)
    card = _grpc_first(agent, f"127.0.0.1:{_dead_port()}")
    client, http = _client(
        card, ["GRPC", "JSONRPC"], hook, clock, sent, breaker=breaker, allow=(agent.jsonrpc_url,)
    )
    before = agent.task_ids()
    try:
        assert [i.binding for i in client.interfaces] == ["GRPC", "JSONRPC"]
        assert (await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))).id == task_id
        assert client.serving is not None
        assert client.serving.binding == "JSONRPC"
        assert len(sdk_task_ids(await _send(client))) == 1
        assert [f.why for f in hook.failovers] == ["not_sent", "not_sent"]
        assert hook.resolutions == []  # nothing was looked up: nothing had been sent
        assert breaker.state(client.peer) is BreakerState.OPEN
        await client.get_task(a2a_pb2.GetTaskRequest(id=task_id))
        assert [f.why for f in hook.failovers][-1] == "breaker_open"
    finally:
        await client.close()
        await http.aclose()
    assert len(new_tasks(agent, before)) == 1  # the send made one task
