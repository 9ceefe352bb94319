"""google-adk's ``RemoteA2aAgent`` with a crash-stable messageId, under a journaled Guard.

``RemoteA2aAgent`` builds each A2A message itself, with a new random messageId, so a
restarted process would send the same step as a new message. It lets a hook hand back another
message: ``config=A2aRemoteAgentConfig(request_interceptors=[RequestInterceptor(
before_request=...)])`` gets ``(ctx, message, params)`` and returns ``(message, params)``.
`stable_message_id` returns a copy of ADK's message (`with_message_id`; ADK's own is left as
it is) whose messageId is `message_id_for` of what the session says: the run is the session
(its app, user and id), the step the remote agent's name and the number of events the session
already holds. A persistent session service (``SqliteSessionService`` here) keeps both across
a crash, so the restarted process computes the same messageId for the same step. The
``guarded_factory`` Guard has a journal (``SqliteJournal``): the send is recorded before its
first byte and closed with its task before ADK sees the answer; the same messageId again is
answered with that task, read back from the agent, and is not sent a second time.

The check: run 1 (a process of its own) sends "hello" and dies right after the answer reached
it, before ADK put the answer in the session. Run 2 (a new process: a new Runner, a new Guard
over the same journal file, the same session) resumes the interrupted invocation, as ADK's
resumable apps do (``Runner.run_async(invocation_id=...)``); without the journal, ADK would send
the message again (its resumption is at-least-once). The local agent counts its executions:
one, under the crash-stable messageId, and both runs name the same task. google-adk 2.13 runs
on a2a-sdk 0.3 and 1.x, and so does this recipe. No model is needed.

    python examples/frameworks/adk_journal.py   # a venv with google-adk, a2a-client-errors[a2a]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

import httpx
from _agent import LocalAgent, check
from _restart import CRASHED, crash, report, run_child
from a2a.client import ClientConfig
from google.adk.a2a.agent.config import A2aRemoteAgentConfig, RequestInterceptor
from google.adk.agents.remote_a2a_agent import AGENT_CARD_WELL_KNOWN_PATH, RemoteA2aAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.runners import Runner
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guarded_factory, with_message_id
from a2a_client_errors.journal import SqliteJournal, State, message_id_for

warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")  # ADK's A2A is experimental
APP, USER = "recipes", "user-1"


def run_id_of(app: str, user: str, session_id: str) -> str:
    """The run a session is: its id is unique only within its app and user."""
    return f"{app}/{user}/{session_id}"


async def stable_message_id(ctx: Any, message: Any, params: Any) -> tuple[Any, Any]:
    """ADK's message, copied under a messageId the session decides (the same after a crash)."""
    session = ctx.session
    step = f"{ctx.agent.name}:{len(session.events)}"
    message_id = message_id_for(run_id_of(session.app_name, session.user_id, session.id), step)
    return with_message_id(message, message_id), params


async def turn(agent_url: str, workdir: Path, session_id: str, *, dies: bool) -> None:
    """One run of the orchestrator; dies right after the answer when ``dies``."""
    sessions = SqliteSessionService(str(workdir / "sessions.db"))
    seen: dict[str, Any] = {}

    async def note_message(ctx: Any, message: Any, params: Any) -> tuple[Any, Any]:
        seen["message_id"] = message.message_id
        return message, params

    async def after_answer(ctx: Any, answer: Any, event: Any) -> Any:
        if isinstance(answer, tuple) and answer[0] is not None:  # (task, update)
            seen.setdefault("task", answer[0].id)
        if dies:  # the answer is here; ADK has not put it in the session yet
            crash(**seen)
        return event

    hooks = RequestInterceptor(before_request=stable_message_id)
    # An interceptor sees the message the ones before it returned.
    probes = RequestInterceptor(before_request=note_message, after_request=after_answer)
    async with httpx.AsyncClient(timeout=30) as http:
        guard = Guard(journal=SqliteJournal(workdir / "sends.db"))
        remote = RemoteA2aAgent(
            name="echo",
            agent_card=agent_url + AGENT_CARD_WELL_KNOWN_PATH,
            a2a_client_factory=guarded_factory(ClientConfig(httpx_client=http), guard),
            config=A2aRemoteAgentConfig(request_interceptors=[hooks, probes]),
        )
        app = App(
            name=APP, root_agent=remote, resumability_config=ResumabilityConfig(is_resumable=True)
        )
        runner = Runner(app=app, session_service=sessions)
        session = await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id)
        if session is None:  # a new job: its session, then its first turn
            await sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)
            start: dict[str, Any] = {"new_message": types.UserContent("hello")}
        else:  # a restart: the last turn has no answer; resume its invocation
            start = {"invocation_id": session.events[-1].invocation_id}
        events = [
            event async for event in runner.run_async(user_id=USER, session_id=session_id, **start)
        ]
    texts = [
        part.text
        for event in events
        if event.content
        for part in event.content.parts or []
        if part.text
    ]
    report(**seen, texts=texts)


def main(workdir: Path) -> None:
    """Start the local agent; run the orchestrator twice, crashing the first; check."""
    session_id = str(uuid.uuid4())  # the job's id, which the orchestrator keeps
    with LocalAgent(refuse=0) as agent:
        first_status, first = run_child(__file__, agent.url, str(workdir), session_id, "die")
        second_status, second = run_child(__file__, agent.url, str(workdir), session_id)
    expected = message_id_for(run_id_of(APP, USER, session_id), "echo:1")
    journal = SqliteJournal(workdir / "sends.db")
    record = journal.get(expected)
    journal.close()
    print(f"run 1 (dies after the answer): exit {first_status}, {first}")
    print(f"run 2 (restarted, resumes the invocation): exit {second_status}, {second}")
    check(
        first_status == CRASHED
        and second_status == 0
        and first.get("message_id") == second.get("message_id") == expected
        and first.get("task") is not None
        and first.get("task") == second.get("task")
        and "echo: hello" in second.get("texts", [])
        and agent.executions == [expected]
        and record is not None
        and record.state is State.TASK
        and record.made == first.get("task"),
        f"google-adk RemoteA2aAgent, a crash and a restart: messageId {expected}, "
        f"task {first.get('task')} then {second.get('task')}, "
        f"executions {len(agent.executions)}",
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:  # a child: one run of the orchestrator
        url, where, session = sys.argv[1:4]
        asyncio.run(turn(url, Path(where), session, dies=sys.argv[4:] == ["die"]))
    else:
        with tempfile.TemporaryDirectory(prefix="adk-journal-") as where:
            main(Path(where))
