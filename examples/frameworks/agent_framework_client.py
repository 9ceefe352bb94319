"""Microsoft Agent Framework's ``A2AAgent`` under a Guard: a failed call reaches the caller typed.

``A2AAgent`` (agent-framework-a2a) takes the Guard through either door: ``http_client=``, an
httpx client on ``AsyncGuardTransport``, or ``client=``, an a2a-sdk client from
`guard_client`. agent-framework-a2a pins a2a-sdk 1.x, and keeps the caller's messageId (the
framework ``Message``'s ``message_id`` is the A2A message's). No model is needed.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same message again, and the run succeeds with one execution. Then an agent
that answers 503 to every message, under a Guard of two attempts: ``A2AAgent.run`` raises the
Guard's `RetryExhausted` to its caller, with its decision and ``maybe_processed`` (False: a
503 ran nothing), nothing executed. On the httpx door that takes ``raise_failures=True``
(without it the transport hands the error answer to a2a-sdk, which raises its own
``A2AClientHTTPError``); `guard_client` raises its failures as they are.

    python examples/frameworks/agent_framework_client.py   # a venv with agent-framework-a2a
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from _agent import LocalAgent, check
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from agent_framework import Message
from agent_framework_a2a import A2AAgent

from a2a_client_errors import AsyncGuardTransport, CallFailed, Guard, RetryExhausted
from a2a_client_errors.integrations.a2a_sdk import guard_client

DOORS = ("http_client", "client")


async def ask(agent_url: str, door: str, guard: Guard, message_id: str) -> str:
    """Run an A2AAgent once, through ``door``; the text of its answer."""
    message = Message("user", ["hello"], message_id=message_id)
    if door == "http_client":
        guarded = AsyncGuardTransport(guard, raise_failures=True)
        async with httpx.AsyncClient(transport=guarded, timeout=30) as http:
            remote = A2AAgent(name="echo", url=agent_url + "/", http_client=http)
            response = await remote.run(message)
    else:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, agent_url).get_agent_card()
            # Not streaming, as the client A2AAgent makes itself for run(stream=False).
            config = ClientConfig(httpx_client=http, streaming=False)
            remote = A2AAgent(
                name="echo", client=guard_client(ClientFactory(config).create(card), guard)
            )
            response = await remote.run(message)
    return response.text


def fails(agent_url: str, door: str, message_id: str) -> CallFailed | None:
    """What the caller of a run that cannot succeed catches (None: it did not fail)."""
    try:
        asyncio.run(ask(agent_url, door, Guard(max_attempts=2), message_id))
    except CallFailed as failure:  # the Guard's own exception, through the framework
        return failure
    return None


for door in DOORS:
    with LocalAgent(refuse=1) as agent:
        answer = asyncio.run(ask(agent.url, door, Guard(), uuid.uuid4().hex))
    check(
        answer == "echo: hello" and agent.refused == 1 and len(agent.executions) == 1,
        f"agent-framework A2AAgent ({door}=): {answer!r}; 503 answered {agent.refused}, "
        f"executions {len(agent.executions)}",
    )
    message_id = uuid.uuid4().hex
    with LocalAgent(refuse=1000) as agent:
        failure = fails(agent.url, door, message_id)
    check(
        isinstance(failure, RetryExhausted)
        and failure.decision.give_up is not None
        and failure.decision.give_up.value == "attempts"
        and failure.maybe_processed is False
        and agent.refused == 2
        and agent.executions == [],
        f"agent-framework A2AAgent ({door}=), failed call: {type(failure).__name__} {failure}; "
        f"maybe_processed {getattr(failure, 'maybe_processed', None)}; 503 answered "
        f"{agent.refused}, executions {len(agent.executions)}",
    )
