"""guard_client never lets a redirect carry a call to another origin (a2a-sdk 0.3).

As tests/test_a2a_sdk_redirects.py on the 1.x line: two real HTTP servers on 127.0.0.1, the
agent answering with a redirect, the other origin recording what reaches it (nothing may).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard

from a2a_client_errors import Delivery, FixRequestNeeded, Guard
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guard_client
from a2a_client_errors.testing import FakeClock
from tests.loopback import Loopback, Recorded, Reply
from tests.sdk03.client03 import message

if TYPE_CHECKING:
    from collections.abc import Iterator

KEY = "key-SECRET-03aa"
PATHS = {"JSONRPC": "/jsonrpc", "HTTP+JSON": "/rest"}
TASK = {"kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "completed"}}


def _card(url: str, binding: str = "JSONRPC") -> Any:
    return AgentCard(
        name="agent",
        description="an agent that moved",
        version="1",
        url=url,
        preferred_transport=binding,
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[],
    )


def _answered(request: Recorded) -> Reply:
    """A 0.3 JSON-RPC agent that answers every call with the task (a stream: one event)."""
    rpc = request.json()
    answer = {"jsonrpc": "2.0", "id": rpc.get("id"), "result": TASK}
    return Reply.sse(answer) if rpc.get("method") == "message/stream" else Reply.json(200, answer)


def _client(
    url: str, http: httpx.AsyncClient, *, binding: str = "JSONRPC", streaming: bool = False
) -> GuardedClient:
    config = ClientConfig(streaming=streaming, httpx_client=http, supported_transports=[binding])
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
                _ = [event async for event in client.send_message(message("hi"))]
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


async def test_a_redirect_on_the_agent_s_own_origin_is_followed_when_the_client_follows() -> None:
    """Same origin, follow_redirects=True: the call is answered from where it moved."""

    def answer(request: Recorded) -> Reply:
        if request.path == "/old":
            return Reply(307, headers={"Location": "/jsonrpc"})
        return _answered(request)

    with Loopback(answer) as moved:
        async with httpx.AsyncClient(follow_redirects=True) as http:
            client = _client(f"{moved.url}/old", http)
            try:
                events = [event async for event in client.send_message(message("hi"))]
            finally:
                await client.close()
        paths = [r.path for r in moved.requests]
    assert [getattr(event[0], "id", None) for event in events] == ["t-1"]
    assert paths == ["/old", "/jsonrpc"]


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
    assert agent.requests
    assert other.requests == []
