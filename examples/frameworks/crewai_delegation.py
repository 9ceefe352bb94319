"""crewai's A2A delegation under a Guard: a PATCH, since crewai exposes no hook for it.

crewai 1.15 delegates to a remote agent in ``crewai.a2a.utils.delegation``: each delegation
makes its own ``httpx.AsyncClient`` inside ``_create_a2a_client`` (a2a-sdk 0.3 underneath),
and no parameter takes a client, a transport or a factory. The smallest way in, until crewai
has one, is this monkeypatch of the one name that module builds clients with (its ``httpx``,
used for nothing else there; checked against crewai 1.15.30's source): every client it makes
then runs on ``AsyncGuardTransport``, one Guard for all. It is a patch of crewai's internals,
not an API: pin crewai, and check it again on an upgrade. It covers the sends; the agent card
is read elsewhere (``crewai.a2a.utils.agent_card``), unguarded, and so is gRPC.

No model is needed: the example calls ``aexecute_a2a_delegation``, the function a crewai agent
with ``a2a=`` configured calls when its model decides to delegate. The local agent answers the
first message with 503 (overloaded, ``Retry-After: 0``); the Guard sends the same bytes again,
and the delegation completes with one execution (without the patch, it ends failed).

    python examples/frameworks/crewai_delegation.py   # a venv with crewai[a2a]
"""

from __future__ import annotations

import asyncio
import os
import types
from typing import Any

# crewai's telemetry and version check would call out: this example talks to 127.0.0.1 only.
os.environ.update(CREWAI_DISABLE_TELEMETRY="true", CREWAI_DISABLE_VERSION_CHECK="true")

import httpx
from _agent import LocalAgent, check
from crewai.a2a.utils import delegation

from a2a_client_errors import AsyncGuardTransport, Guard


def guard_crewai_delegation(guard: Guard) -> None:
    """PATCH crewai: every httpx client its A2A delegation makes is guarded by ``guard``."""

    def guarded_client(**options: Any) -> httpx.AsyncClient:
        # crewai passes verify=: it belongs to the wire under the guard, not the client.
        inner = httpx.AsyncHTTPTransport(verify=options.pop("verify", True))
        return httpx.AsyncClient(transport=AsyncGuardTransport(guard, inner=inner), **options)

    delegation.httpx = types.SimpleNamespace(AsyncClient=guarded_client)  # type: ignore[assignment]


async def delegate(agent_url: str) -> tuple[str, str]:
    """Delegate one task as a crewai agent would; its status and result."""
    result = await delegation.aexecute_a2a_delegation(
        endpoint=agent_url, auth=None, timeout=30, task_description="hello"
    )
    status = result["status"]  # a2a-sdk 0.3's TaskState, a str enum
    return status.value, result.get("result", result.get("error", ""))


guard_crewai_delegation(Guard())  # once, at start-up
with LocalAgent(refuse=1) as agent:
    status, answer = asyncio.run(delegate(agent.url))
check(
    status == "completed" and agent.refused == 1 and len(agent.executions) == 1,
    f"crewai A2A delegation (patched): {status} {answer!r}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)
