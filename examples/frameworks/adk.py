"""google-adk's ``RemoteA2aAgent`` under a Guard: a guarded a2a-sdk client factory.

``RemoteA2aAgent`` builds its a2a-sdk clients with the ``ClientFactory`` it is given
(``a2a_client_factory=``). `guarded_factory` is one whose every client is `guard_client`'s:
each call to the remote agent goes through the Guard, streams and look-ups included. ADK calls
the remote agent itself: no model is needed. google-adk 2.13 runs on a2a-sdk 0.3 and 1.x, and
so does this example.

The local agent answers the first message with 503 (overloaded, ``Retry-After: 0``); the
Guard sends the same message again, and the run ends with the agent's answer, executed once.

Then a failure: an agent that answers 503 to every message, under a Guard of two attempts.
ADK catches what the Guard raises and yields an error event in its place; `FailedCalls`
(``a2a_client_errors.integrations.adk``) gives that event the decision: ``error_code``
``"retry"`` (the action; a 503 names no A2A reason), and under
``custom_metadata["a2a_client_errors"]`` the failure (``RetryExhausted``, given up after its
``attempts``), the action, the messageId ADK sent, ``maybe_processed`` (False: a 503 ran
nothing) and the error's HTTP status.

Last, an agent that runs the message and loses its answer (the connection closes after its
first bytes). On a2a-sdk 1.x the Guard looks the task up (ListTasks) and the run ends with the
agent's answer, executed once. On 0.3 it cannot (A2A 0.3 has no ListTasks) and does not resend:
the event carries `OutcomeUnknown`, ``maybe_processed`` True, and the messageId the agent ran.

    python examples/frameworks/adk.py   # in a venv with google-adk and a2a-client-errors[a2a]
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import httpx
from _agent import LINE, LocalAgent, check
from a2a.client import ClientConfig
from google.adk.agents.remote_a2a_agent import AGENT_CARD_WELL_KNOWN_PATH, RemoteA2aAgent
from google.adk.runners import InMemoryRunner

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guarded_factory
from a2a_client_errors.integrations.adk import METADATA_KEY, FailedCalls, request_message_id

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


async def fail(agent_url: str, guard: Guard) -> list[tuple[str | None, dict[str, Any]]]:
    """Run a RemoteA2aAgent once; each error event's code and metadata."""
    failures = FailedCalls()  # one for the process: its factory notes, its plugin tells
    async with httpx.AsyncClient(timeout=30) as http:
        factory = failures.factory(ClientConfig(httpx_client=http), guard)
        remote = RemoteA2aAgent(
            name="echo",
            agent_card=agent_url + AGENT_CARD_WELL_KNOWN_PATH,
            a2a_client_factory=factory,
        )
        runner = InMemoryRunner(agent=remote, plugins=[failures.plugin()])
        events = await runner.run_debug("hello", quiet=True)
    return [
        (event.error_code, event.custom_metadata or {}) for event in events if event.error_message
    ]


with LocalAgent(refuse=1) as agent:
    texts = asyncio.run(ask(agent.url))
check(
    "echo: hello" in texts and agent.refused == 1 and len(agent.executions) == 1,
    f"google-adk RemoteA2aAgent: {texts}; 503 answered {agent.refused}, "
    f"executions {len(agent.executions)}",
)

with LocalAgent(refuse=1000) as agent:
    errors = asyncio.run(fail(agent.url, Guard(max_attempts=2)))
code, metadata = errors[0] if errors else (None, {})
failed = metadata.get(METADATA_KEY, {})
check(
    len(errors) == 1
    and code == "retry"
    and (failed.get("failure"), failed.get("action")) == ("RetryExhausted", "retry")
    and (failed.get("give_up"), failed.get("http_status")) == ("attempts", 503)
    and failed.get("message_id") == request_message_id(metadata) is not None
    and failed.get("maybe_processed") is False
    and agent.refused == 2
    and agent.executions == [],
    f"google-adk failed call: error_code {code!r}; {METADATA_KEY} {failed}; "
    f"503 answered {agent.refused}, executions {len(agent.executions)}",
)

with LocalAgent(refuse=0, lose=1) as agent:
    errors = asyncio.run(fail(agent.url, Guard()))
lost = errors[0][1].get(METADATA_KEY, {}) if errors else {}
if LINE == "v1":  # the look-up found the task the lost answer was about
    check(
        errors == [] and agent.lost == 1 and len(agent.executions) == 1,
        f"google-adk lost answer (a2a-sdk 1.x): no error event, the task looked up; "
        f"executions {len(agent.executions)}",
    )
else:
    check(
        len(errors) == 1
        and (lost.get("failure"), lost.get("maybe_processed")) == ("OutcomeUnknown", True)
        and agent.executions == [lost.get("message_id")],
        f"google-adk lost answer (a2a-sdk 0.3): error_code {errors[0][0] if errors else None!r}; "
        f"{lost.get('failure')} messageId {lost.get('message_id')}, maybe_processed "
        f"{lost.get('maybe_processed')}; executions {len(agent.executions)}",
    )
