"""strands-agents' ``A2AAgent`` under a Guard: its httpx client on ``AsyncGuardTransport``.

``A2AAgent(endpoint, client_config=ClientConfig(httpx_client=...))`` reads the agent card and
sends every message with the httpx client of its ``ClientConfig``. Give it one whose transport
is ``AsyncGuardTransport``: the card read and each message go through the Guard (strands
streams: a stream is resent only before its first event). strands pins a2a-sdk 0.3; the
transport reads 0.3's method names. strands' vended ``a2a_client`` tool takes the same
``(url, ClientConfig)``. A2AAgent calls the remote agent itself: no model is needed.

``raise_failures=True``: a call the Guard gives up on raises its typed `CallFailed` (its
decision, ``maybe_processed``; an `OutcomeUnknown` names the messageId), which strands lets
through to its caller as it is. Without it, the transport hands strands the error answer, and
strands raises a2a-sdk's ``A2AClientHTTPError`` (or httpx's own ``RemoteProtocolError``,
``ReadTimeout``): the decision is lost.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same bytes again, and the call succeeds with one execution. Then an agent that
answers 503 to every message, under a Guard of two attempts: the strands caller catches
`RetryExhausted`, nothing executed. Last, an agent that runs the message and loses its answer
(the connection closes before the stream's first event): the Guard cannot tell whether it ran
(a2a-sdk 0.3's agent lists no tasks to look it up in), so it does not resend it, and the
caller catches `OutcomeUnknown`, with the messageId and ``maybe_processed`` (without
``raise_failures``, strands raises httpx's ``RemoteProtocolError`` and the Guard's verdict is
only logged).

    python examples/frameworks/strands_agent.py   # a venv with strands-agents[a2a]
"""

from __future__ import annotations

import asyncio

import httpx
from _agent import LocalAgent, check
from a2a.client import ClientConfig
from strands.agent.a2a_agent import A2AAgent

from a2a_client_errors import AsyncGuardTransport, CallFailed, Guard, OutcomeUnknown, RetryExhausted


async def ask(agent_url: str, guard: Guard) -> str:
    """Invoke an A2AAgent once; the text of its answer."""
    guarded = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(transport=guarded, timeout=30) as http:
        remote = A2AAgent(agent_url, client_config=ClientConfig(httpx_client=http))
        result = await remote.invoke_async("hello")
    return str(result).strip()


with LocalAgent(refuse=1) as agent:
    answer = asyncio.run(ask(agent.url, Guard()))
check(
    answer == "echo: hello" and agent.refused == 1 and len(agent.executions) == 1,
    f"strands A2AAgent: {answer!r}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)


def fails(agent_url: str, guard: Guard) -> CallFailed | None:
    """What the caller of an invocation that cannot succeed catches (None: it did not fail)."""
    try:
        asyncio.run(ask(agent_url, guard))
    except CallFailed as failure:  # the Guard's own exception, through strands
        return failure
    return None


with LocalAgent(refuse=1000) as agent:
    failure = fails(agent.url, Guard(max_attempts=2))
check(
    isinstance(failure, RetryExhausted)
    and failure.decision.give_up is not None
    and failure.decision.give_up.value == "attempts"
    and failure.maybe_processed is False
    and agent.refused == 2
    and agent.executions == [],
    f"strands A2AAgent, failed call: {type(failure).__name__} {failure}; maybe_processed "
    f"{getattr(failure, 'maybe_processed', None)}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)

with LocalAgent(refuse=0, lose=1) as agent:
    unknown = fails(agent.url, Guard())
check(
    isinstance(unknown, OutcomeUnknown)
    and unknown.maybe_processed is True
    and unknown.message_id is not None
    and agent.executions == [unknown.message_id]
    and agent.lost == 1
    and agent.posts == 1,
    f"strands A2AAgent, lost answer: {type(unknown).__name__} messageId "
    f"{getattr(unknown, 'message_id', None)}, maybe_processed "
    f"{getattr(unknown, 'maybe_processed', None)}; executions {len(agent.executions)}, "
    f"sent {agent.posts}",
)
