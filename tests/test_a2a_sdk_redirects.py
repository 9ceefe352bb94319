"""guard_client never lets a redirect carry a call to another origin (a2a-sdk 1.x).

a2a-sdk sends with the caller's ``httpx.AsyncClient``, which may follow redirects. Two origins
are two real HTTP servers on 127.0.0.1 (tests/loopback.py): the agent answers with a redirect,
and the other origin records what reaches it, and must receive nothing, whatever the client's
``follow_redirects``, over JSON-RPC and HTTP+JSON, unary and streaming, for the calls, the
look-up's reads and the card read again. Sleeps go to a fake clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, a2a_pb2

from a2a_client_errors import Delivery, FixRequestNeeded, Guard, OutcomeUnknown
from a2a_client_errors._redirects import refuse_redirects
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client
from a2a_client_errors.integrations.a2a_sdk._answers import read_answer
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.testing.lossy import LosingTransport, lose_sends
from tests.loopback import Loopback, Recorded, Reply

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.a2a_sdk("1")

KEY = "key-SECRET-91c2"
PATHS = {"JSONRPC": "/jsonrpc", "HTTP+JSON": "/rest"}
TASK = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "history": [{"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}],
}


def _card(url: str, binding: str = "JSONRPC") -> Any:
    return AgentCard(
        name="agent",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
        ],
    )


def _answered(request: Recorded) -> Reply:
    """A JSON-RPC agent that answers every call with the task (any stream: one event)."""
    rpc = request.json()
    result = {"task": TASK} if "Message" in rpc.get("method", "") else TASK
    answer = {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result}
    return Reply.sse(answer) if "Streaming" in rpc["method"] else Reply.json(200, answer)


def _message(message_id: str = "m-1") -> Any:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hi")]
        )
    )


def _client(
    url: str,
    http: httpx.AsyncClient,
    *,
    binding: str = "JSONRPC",
    streaming: bool = False,
) -> GuardedClient:
    config = ClientConfig(
        streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
    )
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.0)
    return guard_client(ClientFactory(config).create(_card(url, binding)), guard)


@pytest.fixture(name="other")
def other_fixture() -> Iterator[Loopback]:
    """The other origin: it answers every call with a task of its own, and records it."""
    with Loopback(_answered) as server:
        yield server


@pytest.fixture(name="agent")
def agent_fixture(other: Loopback) -> Iterator[Loopback]:
    """The agent: every request is answered with a 307 to the same path at the other origin."""

    def answer(request: Recorded) -> Reply:
        return Reply(307, headers={"Location": f"{other.url}{request.path}?token=t-SECRET"})

    with Loopback(answer) as server:
        yield server


@pytest.mark.parametrize("binding", list(PATHS))
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("follow", [True, False], ids=["follows", "does-not-follow"])
async def test_a_call_redirected_elsewhere_is_fix_request_and_goes_nowhere(
    agent: Loopback, other: Loopback, binding: str, streaming: bool, follow: bool
) -> None:
    """Whatever follow_redirects says: FixRequestNeeded naming the location; nothing elsewhere."""
    url = f"{agent.url}{PATHS[binding]}"
    async with httpx.AsyncClient(follow_redirects=follow, headers={"X-API-Key": KEY}) as http:
        client = _client(url, http, binding=binding, streaming=streaming)
        try:
            with pytest.raises(FixRequestNeeded) as failed:
                _ = [event async for event in client.send_message(_message())]
        finally:
            await client.close()
    error = failed.value.error
    assert error is not None
    assert error.http_status == 307
    assert error.location is not None
    assert error.location.startswith(f"{other.url}{PATHS[binding]}")
    assert "SECRET" not in error.location
    assert failed.value.decision.delivery is Delivery.NOT_PROCESSED
    assert len(agent.requests) == 1  # not resent
    assert other.requests == []


@pytest.fixture(name="moved")
def moved_fixture() -> Iterator[Loopback]:
    """An agent that moved its endpoint on its own origin: /old answers 307 to /jsonrpc."""

    def answer(request: Recorded) -> Reply:
        if request.path == "/old":
            return Reply(307, headers={"Location": "/jsonrpc"})
        return _answered(request)

    with Loopback(answer) as server:
        yield server


async def test_a_redirect_on_the_agent_s_own_origin_is_followed_when_the_client_follows(
    moved: Loopback,
) -> None:
    """Same origin, follow_redirects=True: the call is answered from where it moved."""
    async with httpx.AsyncClient(follow_redirects=True) as http:
        client = _client(f"{moved.url}/old", http)
        try:
            events = [event async for event in client.send_message(_message())]
        finally:
            await client.close()
    assert [event.task.id for event in events] == ["t-1"]
    assert [r.path for r in moved.requests] == ["/old", "/jsonrpc"]


async def test_a_redirect_on_the_agent_s_own_origin_not_followed_names_the_new_url(
    moved: Loopback,
) -> None:
    """Same origin, follow_redirects=False: FixRequestNeeded naming where the endpoint went."""
    async with httpx.AsyncClient() as http:
        client = _client(f"{moved.url}/old", http)
        try:
            with pytest.raises(FixRequestNeeded) as failed:
                _ = [event async for event in client.send_message(_message())]
        finally:
            await client.close()
    assert failed.value.error is not None
    assert failed.value.error.location == f"{moved.url}/jsonrpc"


def _lost_then_redirected(other: Loopback) -> Callable[[Recorded], Reply]:
    """An agent that answers the send (an answer lost on the way) and redirects every read."""

    def answer(request: Recorded) -> Reply:
        if request.method == "POST" and request.json().get("method") == "SendMessage":
            return _answered(request)
        return Reply(307, headers={"Location": f"{other.url}{request.path}"})

    return answer


async def test_the_look_up_of_a_lost_send_never_follows_a_redirect_elsewhere(
    other: Loopback,
) -> None:
    """The send's answer is lost; the reads that look for its task are redirected: not followed."""
    with Loopback(_lost_then_redirected(other)) as agent:
        losing = LosingTransport(lose_sends(1))
        async with httpx.AsyncClient(
            transport=losing, follow_redirects=True, headers={"X-API-Key": KEY}
        ) as http:
            client = _client(f"{agent.url}/jsonrpc", http)
            try:
                with pytest.raises(OutcomeUnknown):
                    _ = [event async for event in client.send_message(_message())]
            finally:
                await client.close()
        methods = [r.json()["method"] for r in agent.requests if r.method == "POST"]
    assert methods.count("SendMessage") == 1  # nothing resent
    assert len(methods) > 1  # the look-up read
    assert other.requests == []


async def test_the_card_read_again_never_follows_a_redirect_elsewhere(
    agent: Loopback, other: Loopback
) -> None:
    """read_card over the caller's following client: the card held is kept, nothing elsewhere."""
    async with httpx.AsyncClient(follow_redirects=True, headers={"X-API-Key": KEY}) as http:
        client = _client(f"{agent.url}/jsonrpc", http)
        held = client.card
        try:
            assert await client.read_card() is held
        finally:
            await client.close()
    assert [r.path for r in agent.requests][:1] == ["/.well-known/agent-card.json"]
    assert other.requests == []


async def test_the_refusal_is_installed_once_and_the_caller_s_hooks_stay() -> None:
    """Two guarded clients over one httpx client: one of each hook, after the caller's own."""
    seen: list[int] = []

    async def mine(response: httpx.Response) -> None:
        """A hook of the caller's."""
        seen.append(response.status_code)

    async with httpx.AsyncClient(event_hooks={"response": [mine]}) as http:
        first = _client("http://agent.test/jsonrpc", http)
        second = _client("http://agent.test/jsonrpc", http)
        assert http.event_hooks["response"] == [mine, refuse_redirects, read_answer]
        await first.close()
        await second.close()


async def test_the_caller_s_client_refuses_other_origins_for_its_other_requests_too(
    agent: Loopback, other: Loopback
) -> None:
    """The hook is the httpx client's: a request sent with it outside a call is not carried."""
    async with httpx.AsyncClient(follow_redirects=True, headers={"X-API-Key": KEY}) as http:
        client = _client(f"{agent.url}/jsonrpc", http)
        try:
            response = await http.get(f"{agent.url}/anything")
        finally:
            await client.close()
    assert response.status_code == 307
    assert not response.has_redirect_location
    assert other.requests == []
