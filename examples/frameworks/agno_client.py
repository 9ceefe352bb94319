"""agno's ``A2AClient`` under a Guard: agno's one global httpx client, guarded for the agent.

agno's ``A2AClient`` takes no client of its own: every call goes through agno's process-wide
``httpx.AsyncClient`` (``agno.utils.http.get_default_async_client``), the one its model
providers use too. Set that client once, at start-up, with ``set_default_async_client``, and
mount ``AsyncGuardTransport`` on the agent's origin only: calls to the agent go through the
Guard, everything else agno sends (a model provider's requests) goes out as before.

``raise_failures=True``: a call the Guard gives up on raises its typed `CallFailed`, which
agno lets through to its caller as it is (without it, agno raises httpx's
``HTTPStatusError``: the decision is lost).

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same bytes again, and the call succeeds with one execution. Then an agent that
answers 503 to every message, under a Guard of two attempts: the caller catches
`RetryExhausted`, nothing executed.

    python examples/frameworks/agno_client.py   # in a venv with agno and a2a-client-errors[a2a]
"""

from __future__ import annotations

import asyncio

import httpx
from _agent import LocalAgent, check
from agno.client.a2a import A2AClient
from agno.utils.http import set_default_async_client

from a2a_client_errors import AsyncGuardTransport, CallFailed, Guard, RetryExhausted


async def ask(agent_url: str, guard: Guard) -> tuple[str, str]:
    """Send one message with agno's client; its status and text."""
    guarded = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(mounts={agent_url: guarded}, timeout=30) as http:
        set_default_async_client(http)  # at start-up: agno's every call uses this client
        result = await A2AClient(agent_url, protocol="json-rpc").send_message("hello")
    return result.status, result.content


with LocalAgent(refuse=1) as agent:
    status, content = asyncio.run(ask(agent.url, Guard()))
check(
    status == "completed" and agent.refused == 1 and len(agent.executions) == 1,
    f"agno A2AClient: {status} {content!r}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)

with LocalAgent(refuse=1000) as agent:
    try:
        asyncio.run(ask(agent.url, Guard(max_attempts=2)))
    except CallFailed as caught:  # the Guard's own, through agno
        failure: CallFailed | None = caught
    else:
        failure = None
check(
    isinstance(failure, RetryExhausted)
    and failure.maybe_processed is False
    and agent.refused == 2
    and agent.executions == [],
    f"agno A2AClient, failed call: {type(failure).__name__} {failure}; "
    f"503 answered {agent.refused}, executions {len(agent.executions)}",
)
