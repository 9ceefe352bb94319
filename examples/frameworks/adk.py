"""google-adk's ``RemoteA2aAgent`` under a Guard: a guarded a2a-sdk client factory.

``RemoteA2aAgent`` builds its a2a-sdk clients with the ``ClientFactory`` it is given
(``a2a_client_factory=``). `guarded_factory` is one whose every client is `guard_client`'s:
each call to the remote agent goes through the Guard, streams and look-ups included. ADK calls
the remote agent itself: no model is needed. google-adk 2.13 runs on a2a-sdk 0.3 and 1.x, and
so does this example.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same message again, and the run ends with the agent's answer, executed once.

    python examples/frameworks/adk.py   # in a venv with google-adk and a2a-client-errors[a2a]
"""

from __future__ import annotations

import asyncio
import warnings

import httpx
from _agent import LocalAgent, check
from a2a.client import ClientConfig
from google.adk.agents.remote_a2a_agent import AGENT_CARD_WELL_KNOWN_PATH, RemoteA2aAgent
from google.adk.runners import InMemoryRunner

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guarded_factory

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")  # ADK's A2A is experimental


async def ask(agent_url: str) -> list[str]:
    """Run a RemoteA2aAgent on one message; the texts of the events it yields."""
    async with httpx.AsyncClient(timeout=30) as http:
        # Every client the factory makes is guard_client's, under one Guard.
        factory = guarded_factory(ClientConfig(httpx_client=http), Guard())
        remote = RemoteA2aAgent(
            name="echo",
            agent_card=agent_url + AGENT_CARD_WELL_KNOWN_PATH,
            a2a_client_factory=factory,
        )
        events = await InMemoryRunner(agent=remote).run_debug("hello", quiet=True)
    return [
        part.text
        for event in events
        if event.content
        for part in event.content.parts or []
        if part.text
    ]


with LocalAgent(refuse=1) as agent:
    texts = asyncio.run(ask(agent.url))
check(
    "echo: hello" in texts and agent.refused == 1 and len(agent.executions) == 1,
    f"google-adk RemoteA2aAgent: {texts}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)
