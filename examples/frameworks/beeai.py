"""beeai-framework's ``A2AAgent`` under a Guard: its sends through ``AsyncGuardTransport``.

``A2AAgent.run(..., httpx_client=...)`` sends with the httpx client it is given (else with one
it makes per run from ``A2AAgentParameters(httpx_async_client=...)``). Give it one whose
transport is ``AsyncGuardTransport``: each message goes through the Guard. What it cannot
cover: the agent card, which ``A2AAgent`` reads with a plain ``httpx.AsyncClient`` of its own
(read it yourself through the guarded client and pass ``agent_card=``, as here); and gRPC,
whose channel it builds itself (``grpc.aio`` channels, no interceptor): an agent whose card
prefers gRPC is called unguarded. beeai pins a2a-sdk 0.3. No model is needed.

``raise_failures=True``: a call the Guard gives up on raises its typed `CallFailed`; beeai
wraps what a run raises in its ``FrameworkError``, whose ``__cause__`` is the Guard's failure
(without it, beeai raises ``AgentError`` over a2a-sdk's ``A2AClientHTTPError``: the decision is
lost).

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same bytes again, and the run succeeds with one execution. Then an agent that
answers 503 to every message, under a Guard of two attempts: the caller catches beeai's
``FrameworkError``, its cause the Guard's `RetryExhausted`, nothing executed.

    python examples/frameworks/beeai.py   # a venv with beeai-framework[a2a]
"""

from __future__ import annotations

import asyncio

import httpx
from _agent import LocalAgent, check
from a2a.client import A2ACardResolver
from beeai_framework.adapters.a2a.agents import A2AAgent
from beeai_framework.errors import FrameworkError
from beeai_framework.memory import UnconstrainedMemory

from a2a_client_errors import AsyncGuardTransport, Guard, RetryExhausted


async def ask(agent_url: str, guard: Guard) -> str:
    """Run an A2AAgent once; the text of its answer."""
    guarded = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(transport=guarded, timeout=30) as http:
        card = await A2ACardResolver(http, agent_url).get_agent_card()  # guarded too
        remote = A2AAgent(agent_card=card, memory=UnconstrainedMemory())
        output = await remote.run("hello", httpx_client=http)
    return output.last_message.text


with LocalAgent(refuse=1) as agent:
    answer = asyncio.run(ask(agent.url, Guard()))
check(
    answer == "echo: hello" and agent.refused == 1 and len(agent.executions) == 1,
    f"beeai A2AAgent: {answer!r}; 503 answered {agent.refused}, executions {len(agent.executions)}",
)

with LocalAgent(refuse=1000) as agent:
    try:
        asyncio.run(ask(agent.url, Guard(max_attempts=2)))
    except FrameworkError as caught:  # beeai's own, over the Guard's
        failure = caught.__cause__
    else:
        failure = None
check(
    isinstance(failure, RetryExhausted)
    and failure.maybe_processed is False
    and agent.refused == 2
    and agent.executions == [],
    f"beeai A2AAgent, failed call: FrameworkError from {type(failure).__name__} {failure}; "
    f"503 answered {agent.refused}, executions {len(agent.executions)}",
)
