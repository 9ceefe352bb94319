"""strands-agents' ``A2AAgent`` under a Guard: its httpx client on ``AsyncGuardTransport``.

``A2AAgent(endpoint, client_config=ClientConfig(httpx_client=...))`` reads the agent card and
sends every message with the httpx client of its ``ClientConfig``. Give it one whose transport
is ``AsyncGuardTransport``: the card read and each message go through the Guard (strands
streams: a stream is resent only before its first event). strands pins a2a-sdk 0.3; the
transport reads 0.3's method names. strands' vended ``a2a_client`` tool takes the same
``(url, ClientConfig)``. A2AAgent calls the remote agent itself: no model is needed.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same bytes again, and the call succeeds with one execution.

    python examples/frameworks/strands_agent.py   # a venv with strands-agents[a2a]
"""

from __future__ import annotations

import asyncio

import httpx
from _agent import LocalAgent, check
from a2a.client import ClientConfig
from strands.agent.a2a_agent import A2AAgent

from a2a_client_errors import AsyncGuardTransport, Guard


async def ask(agent_url: str) -> str:
    """Invoke an A2AAgent once; the text of its answer."""
    guarded = AsyncGuardTransport(Guard())
    async with httpx.AsyncClient(transport=guarded, timeout=30) as http:
        remote = A2AAgent(agent_url, client_config=ClientConfig(httpx_client=http))
        result = await remote.invoke_async("hello")
    return str(result).strip()


with LocalAgent(refuse=1) as agent:
    answer = asyncio.run(ask(agent.url))
check(
    answer == "echo: hello" and agent.refused == 1 and len(agent.executions) == 1,
    f"strands A2AAgent: {answer!r}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)
