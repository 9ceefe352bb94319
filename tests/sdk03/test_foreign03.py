"""crewai's codes through the a2a-sdk door on the 0.3 line (crewai's own client line).

A real a2a-sdk 0.3 client, under `guard_client`, against `tests.crewai_agent.CrewaiAgent` on
127.0.0.1 (crewai 1.15.30's error bytes, over JSON-RPC).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Task, TransportProtocol

from a2a_client_errors import FixRequestNeeded, Guard, Reason
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import FakeClock, RecordingHook
from tests.asgi import serve
from tests.crewai_agent import (
    PATH,
    TASK_ID,
    CrewaiAgent,
    rate_limit_exceeded,
    unsupported_extension,
)
from tests.sdk03.client03 import message

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from a2a_client_errors.integrations.a2a_sdk import GuardedClient

pytestmark = pytest.mark.a2a_sdk("0.3")


def _card(url: str) -> AgentCard:
    return AgentCard(
        name="crewai agent",
        description="Answers as crewai's A2A error table does.",
        version="1.0.0",
        protocol_version="0.3.0",
        url=url,
        preferred_transport=TransportProtocol.jsonrpc,
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="do", name="do", description="Does it.", tags=["test"])],
    )


@contextlib.asynccontextmanager
async def guarded(agent: CrewaiAgent, guard: Guard) -> AsyncIterator[GuardedClient]:
    """A guarded 0.3 JSON-RPC client of ``agent``, served on 127.0.0.1 for the block."""
    with serve(agent.app()) as url:
        async with httpx.AsyncClient(timeout=10.0) as http:
            config = ClientConfig(
                streaming=False, httpx_client=http, supported_transports=[TransportProtocol.jsonrpc]
            )
            client = guard_client(ClientFactory(config).create(_card(url + PATH)), guard)
            try:
                yield client
            finally:
                await client.close()


async def _last(events: AsyncIterator[Any]) -> Any:
    last: Any = None
    async for event in events:
        last = event
    return last[0] if isinstance(last, tuple) else last


async def test_crewais_unsupported_extension_on_a_send_is_fix_request() -> None:
    """-32010 answering a 0.3 send (it can carry no generation precondition): fix_request.

    Not a generation mismatch: nothing is read again, nothing resent.
    """
    agent = CrewaiAgent(script=[unsupported_extension("https://example.com/ext/v1")])
    async with guarded(agent, Guard(sleep=lambda _: None)) as client:
        with pytest.raises(FixRequestNeeded) as raised:
            await _last(client.send_message(message("hi", task_id=TASK_ID)))
    assert raised.value.reason == Reason.EXTENSION_SUPPORT_REQUIRED
    assert [request["method"] for request in agent.requests] == ["message/send"]


async def test_crewais_rate_limit_is_retried_after_its_retry_after() -> None:
    """-32013 with ``data.retry_after`` 5: the send again after 5 s, its task the answer."""
    agent = CrewaiAgent(script=[rate_limit_exceeded(5), None])
    clock, hook = FakeClock(), RecordingHook()
    guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.5, hooks=[hook])
    async with guarded(agent, guard) as client:
        task = await _last(client.send_message(message("hi", message_id="m-1")))
    assert isinstance(task, Task)
    assert task.id == TASK_ID
    assert hook.actions[:2] == ["retry", "ok"]
    assert hook.decisions[0].decision.reason is Reason.RATE_LIMITED
    assert clock.sleeps == [5.0]
    assert [r["params"]["message"]["messageId"] for r in agent.requests] == ["m-1", "m-1"]
