"""fasta2a's ``A2AClient`` under a Guard: ``http_client=`` on ``AsyncGuardTransport``.

fasta2a's ``A2AClient(agent_url, http_client=...)`` posts JSON-RPC with 0.3 method names
(``message/send``, ``tasks/get``) with the ``httpx.AsyncClient`` it is given. Give it one whose
transport is ``AsyncGuardTransport``: every call goes through the Guard. With
``raise_failures=True`` an A2A error answer, which fasta2a hands back as a dict, is raised as
its typed `CallFailed` instead. fasta2a needs no a2a-sdk; the local agent is a2a-sdk's server,
which serves 0.3 clients beside 1.x ones.

fasta2a 2.1's client reads answers in A2A 1.0's shape (``{"result": {"task": ...}}``) while
sending 0.3's method names, which fasta2a's own server answers that way; a2a-sdk answers 0.3
methods in 0.3's shape (``{"result": {"kind": "task", ...}}``), which fasta2a's client reads
as an empty result. So this example checks what reached the agent, not the result's fields.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same bytes again (without it fasta2a raises ``UnexpectedResponseError``), the
message runs once. Then ``get_task``: fasta2a 2.1 sends it with a JSON-RPC ``"id": null``,
which a2a-sdk refuses as an invalid request (-32600 on HTTP 200, which fasta2a would hand back
as a dict): the Guard does not resend it, and raises `FixRequestNeeded` (INVALID_REQUEST).

    python examples/frameworks/fasta2a_client.py   # a venv with fasta2a and a2a-client-errors[a2a]
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
from _agent import LocalAgent, check
from fasta2a.client import A2AClient
from fasta2a.schema import Message

from a2a_client_errors import AsyncGuardTransport, FixRequestNeeded, Guard


async def ask(agent_url: str) -> tuple[bool, str | None]:
    """Send one message, then read a task: whether the send succeeded, the read's reason."""
    guarded = AsyncGuardTransport(Guard(), raise_failures=True)
    async with httpx.AsyncClient(transport=guarded, timeout=30) as http:
        client = A2AClient(agent_url, http_client=http)
        message = Message(role="user", parts=[{"text": "hello"}], message_id=uuid.uuid4().hex)
        answer = await client.send_message(message)
        try:
            await client.get_task("any-task")
        except FixRequestNeeded as failed:
            return "error" not in answer, failed.decision.reason
    return "error" not in answer, None


with LocalAgent(refuse=1) as agent:
    sent, reason = asyncio.run(ask(agent.url))
check(
    sent and reason == "INVALID_REQUEST" and agent.refused == 1 and len(agent.executions) == 1,
    f"fasta2a A2AClient: sent {sent}, 503 answered {agent.refused}, executions "
    f"{len(agent.executions)}; get_task -> FixRequestNeeded {reason}",
)
