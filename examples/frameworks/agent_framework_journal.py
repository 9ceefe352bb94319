"""Microsoft Agent Framework's ``A2AAgent`` with a crash-stable messageId, under a journaled Guard.

``A2AAgent.run(messages, session=...)`` turns the last framework ``Message`` into the A2A
message it sends, and keeps the caller's id: ``message_id=message.message_id or
uuid.uuid4().hex`` (``agent_framework_a2a._agent.A2AAgent._prepare_message_for_a2a``,
agent-framework-a2a 1.0.0b261022). So the caller sets the messageId: ``Message("user",
["hello"], message_id=message_id_for(run, step))``. The run is the framework's
``AgentSession`` (its ``session_id``), the step a turn counter the orchestrator keeps in the
session's ``state``; the orchestrator saves the session (``to_dict``) after each turn it
finished, so after a crash both are read back as they were before the interrupted turn, and the
restarted process computes the same messageId. agent-framework-a2a pins a2a-sdk 1.x.

The Guard has a journal (``SqliteJournal``), through either door the agent takes:
``A2AAgent(url=..., http_client=...)`` with an httpx client on ``AsyncGuardTransport``, or
``A2AAgent(client=guard_client(...))`` with an a2a-sdk client. The send is recorded before its
first byte and closed with its task before the agent sees the answer; the same messageId again
is answered with that task, read back from the agent, and is not sent a second time.

The check, for each door: run 1 (a process of its own) sends "hello" and dies right after the
answer reached it, before it saved the session. Run 2 (a new process: a new agent, a new Guard
over the same journal file, the session read back) runs the same turn again. The local agent
counts its executions: one per door, under the crash-stable messageId, and both runs name the
same task and answer. No model is needed.

    python examples/frameworks/agent_framework_journal.py   # a venv with agent-framework-a2a
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import httpx
from _agent import LocalAgent, check
from _restart import CRASHED, crash, report, run_child
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from agent_framework import AgentSession, Message
from agent_framework_a2a import A2AAgent

from a2a_client_errors import AsyncGuardTransport, Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.journal import SqliteJournal, State, message_id_for

DOORS = ("http_client", "client")


def step_of(agent_name: str, session: AgentSession) -> str:
    """The step of the session's next turn: the turns it finished, from its saved state."""
    return f"{agent_name}:{session.state.get('turns', 0)}"


async def turn(agent_url: str, workdir: Path, door: str, *, dies: bool) -> None:
    """One run of the orchestrator; dies right after the answer when ``dies``."""
    saved = workdir / f"session-{door}.json"
    if saved.exists():  # a restart: the session as it was saved before the interrupted turn
        session = AgentSession.from_dict(json.loads(saved.read_text()))
    else:  # a new job: its session is saved before its first turn
        session = AgentSession()
        saved.write_text(json.dumps(session.to_dict()))
    message_id = message_id_for(session.session_id, step_of("echo", session))
    message = Message("user", ["hello"], message_id=message_id)
    guard = Guard(journal=SqliteJournal(workdir / "sends.db"))
    if door == "http_client":
        async with httpx.AsyncClient(transport=AsyncGuardTransport(guard), timeout=30) as http:
            remote = A2AAgent(name="echo", url=agent_url + "/", http_client=http)
            response = await remote.run(message, session=session)
    else:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, agent_url).get_agent_card()
            # Not streaming, as the client A2AAgent makes itself for run(stream=False).
            config = ClientConfig(httpx_client=http, streaming=False)
            client = guard_client(ClientFactory(config).create(card), guard)
            remote = A2AAgent(name="echo", client=client)
            response = await remote.run(message, session=session)
    # The agent wrote the answer's task into the session (its service_session_id).
    held = session.service_session_id
    task = held.get("task_id") if isinstance(held, dict) else None
    seen = {"message_id": message_id, "task": task, "text": response.text}
    if dies:  # the answer is here; the session with this turn in it is not saved yet
        crash(**seen)
    session.state["turns"] = session.state.get("turns", 0) + 1
    saved.write_text(json.dumps(session.to_dict()))
    report(**seen)


def main(workdir: Path) -> None:
    """Start the local agent; for each door, run the orchestrator twice, crashing the first."""
    runs = {}
    with LocalAgent(refuse=0) as agent:
        for door in DOORS:
            runs[door] = (
                run_child(__file__, agent.url, str(workdir), door, "die"),
                run_child(__file__, agent.url, str(workdir), door),
            )
    journal = SqliteJournal(workdir / "sends.db")
    ok = True
    for door, ((first_status, first), (second_status, second)) in runs.items():
        print(f"{door}: run 1 (dies after the answer): exit {first_status}, {first}")
        print(f"{door}: run 2 (restarted, the same turn): exit {second_status}, {second}")
        record = journal.get(first.get("message_id", ""))
        ok = ok and (
            first_status == CRASHED
            and second_status == 0
            and first.get("message_id") == second.get("message_id")
            and first.get("task") is not None
            and first.get("task") == second.get("task")
            and first.get("text") == second.get("text") == "echo: hello"
            and record is not None
            and record.state is State.TASK
            and record.made == first.get("task")
        )
    journal.close()
    expected = [first.get("message_id") for (_, first), _ in runs.values()]
    check(
        ok and agent.executions == expected,
        f"agent-framework A2AAgent, a crash and a restart per door ({', '.join(DOORS)}): "
        f"executions {len(agent.executions)} for {len(DOORS)} turns, each under its "
        "crash-stable messageId",
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:  # a child: one run of the orchestrator
        url, where, which = sys.argv[1:4]
        asyncio.run(turn(url, Path(where), which, dies=sys.argv[4:] == ["die"]))
    else:
        with tempfile.TemporaryDirectory(prefix="agent-framework-journal-") as where:
            main(Path(where))
