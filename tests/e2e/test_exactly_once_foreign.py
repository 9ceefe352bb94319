"""Exactly once against agents no snapshot can prove empty: the look-up finds, or says so.

The agents are ours (`tests.foreign`), each behaving as another server does: a task recorded
only when its work ends (@a2a-js/sdk), histories rewritten or compacted, a clock ten minutes
behind, timestamps without an offset, unstable paging (A2A #1263), no history (a2a-java). The
first send's answer is lost after the agent got the message (the client gave up waiting: its
request goes on in the background), through `AsyncGuardTransport` and through `guard_client`.
The Guard's clock is fake; its first pause lets the agent's work end (released, and the lost
request's answer awaited), so the verdict never depends on how busy the machine is.

Whatever the agent does: one executor run per logical send, never a task that is not the
message's own; the task is found where the agent shows it, and otherwise `OutcomeUnknown`
with what was sent, nothing resent.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import AsyncGuardTransport, Guard, OutcomeUnknown
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.types import Resolution
from tests.e2e.lossy import Unknowns
from tests.foreign import KINDS, Abandoning, ForeignAgent, first_send

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]

VERSION = {"A2A-Version": "1.0"}


def _guard(agent: ForeignAgent, transport: Abandoning, hook: Unknowns) -> Guard:
    """A Guard on a fake clock whose pauses let the agent's work end."""
    clock = FakeClock()

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        agent.release()  # the work ends ...
        await transport.settle()  # ... and the lost request's answer is in

    return Guard(clock=clock, sleep=sleep, hooks=[hook])


def _message(own_context: bool, *, held: bool = False) -> dict[str, Any]:
    """A message; ``held``: its work waits for the Guard's first pause, whatever the kind.

    Held, no look-up sees the work half done (a compacting agent's task before it is
    compacted), however busy the machine is.
    """
    message_id = f"{'hold-' if held else ''}m-{uuid.uuid4()}"
    message: dict[str, Any] = {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}],
    }
    if own_context:
        message["contextId"] = message_id  # a context of its own: found by it
    return message


@pytest.fixture(name="agent", params=KINDS)
def agent_fixture(request: pytest.FixtureRequest) -> Iterator[ForeignAgent]:
    """One agent of each kind, fresh for each test."""
    with ForeignAgent(request.param) as running:
        yield running


# What a lost answer becomes through AsyncGuardTransport: the caller's task, or unknown.
FOUND_BY_ID = {"lazy", "skewed", "naive", "unstable"}


async def _raw_send(agent: ForeignAgent, message: dict[str, Any]) -> tuple[Any, Unknowns]:
    hook, inner = Unknowns(), Abandoning(first_send())
    transport = AsyncGuardTransport(_guard(agent, inner, hook), inner, raise_failures=True)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    try:
        async with httpx.AsyncClient(transport=transport, headers=VERSION) as client:
            answer: Any = json.loads((await client.post(agent.url, json=body)).content)
    except OutcomeUnknown as unknown:
        answer = unknown
    finally:
        await inner.aclose()
    assert inner.sends == 1  # nothing was sent again
    return answer, hook


@pytest.mark.parametrize("own_context", [False, True], ids=["any context", "own context"])
async def test_the_transport_finds_or_says_so_and_never_runs_twice(
    agent: ForeignAgent, own_context: bool
) -> None:
    """One run per send; the caller's own task where the agent shows it, else OutcomeUnknown."""
    message = _message(own_context, held=True)
    answer, hook = await _raw_send(agent, message)
    assert agent.runs.counts[message["messageId"]] == 1
    listed = agent.listing()
    if agent.kind in FOUND_BY_ID or own_context:
        task = answer["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        (mine,) = [t for t in listed if t["id"] == task["id"]]
        assert mine["contextId"] == (message["contextId"] if own_context else mine["contextId"])
        assert hook.resolutions == [Resolution.FOUND]
    else:
        assert isinstance(answer, OutcomeUnknown)
        assert answer.sent is not None
        assert answer.message_id == message["messageId"]
        assert "not found" in answer.why
        assert hook.resolutions == [Resolution.UNRESOLVED]


async def test_a_task_recorded_late_is_found_when_the_deadline_allows() -> None:
    """The lazy agent lists nothing during its work; a later look finds it: one run, its task."""
    with ForeignAgent("lazy") as agent:
        message = _message(own_context=False)
        answer, hook = await _raw_send(agent, message)
        assert agent.runs.counts[message["messageId"]] == 1
        assert answer["result"]["task"]["history"][0]["messageId"] == message["messageId"]
        assert hook.resolutions == [Resolution.FOUND]
        assert len(agent.listing()) == 1


async def test_unstable_paging_never_makes_a_second_task() -> None:
    """Many tasks, listed by last update with offset tokens while others move: one run each."""
    with ForeignAgent("unstable") as agent:
        async with httpx.AsyncClient(headers=VERSION) as plain:
            for index in range(60):  # other callers' tasks
                body = {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "SendMessage",
                    "params": {"message": _message(own_context=False)},
                }
                await plain.post(agent.url, json=body)
        sent = [_message(own_context=False) for _ in range(5)]
        for message in sent:
            answer, _ = await _raw_send(agent, message)
            if not isinstance(answer, OutcomeUnknown):
                first = answer["result"]["task"]["history"][0]["messageId"]
                assert first == message["messageId"]  # never another caller's task
        for message in sent:
            assert agent.runs.counts[message["messageId"]] == 1


async def test_guard_client_finds_the_lazy_agents_task_and_the_own_context_one() -> None:
    """Through a2a-sdk's client: the lazy agent's task found; a2a-java's by its own context."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2
    from a2a.utils.constants import TransportProtocol

    from a2a_client_errors.integrations.a2a_sdk import guard_client

    for kind, own_context in (("lazy", False), ("no_history", True), ("own_id", False)):
        with ForeignAgent(kind) as agent:
            hook, inner = Unknowns(), Abandoning(first_send())
            async with httpx.AsyncClient(transport=inner, headers=VERSION) as http:
                config = ClientConfig(
                    streaming=False,
                    httpx_client=http,
                    supported_protocol_bindings=[TransportProtocol.JSONRPC],
                )
                client = guard_client(
                    ClientFactory(config).create(agent.card), _guard(agent, inner, hook)
                )
                message_id = f"m-{uuid.uuid4()}"
                message = a2a_pb2.Message(
                    role=a2a_pb2.Role.ROLE_USER,
                    message_id=message_id,
                    context_id=message_id if own_context else "",
                    parts=[a2a_pb2.Part(text="hello")],
                )
                request = a2a_pb2.SendMessageRequest(message=message)
                try:
                    events: Any = [e async for e in client.send_message(request)]
                except OutcomeUnknown as unknown:
                    events = unknown
                finally:
                    await client.close()
                    await inner.settle()
            assert agent.runs.counts[message_id] == 1, kind
            assert inner.sends == 1, kind
            if kind == "own_id":  # its history starts with another id: not found, not resent
                assert isinstance(events, OutcomeUnknown)
                assert hook.resolutions == [Resolution.UNRESOLVED]
                continue
            task = events[-1].task
            assert a2a_pb2.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED", kind
            assert [t["id"] for t in agent.listing()] == [task.id]
            assert hook.resolutions == [Resolution.FOUND]


def test_the_agents_behave_as_they_say() -> None:
    """Each agent departs from a2a-sdk as documented: checked on its own listing."""
    for kind in ("own_id", "compact", "skewed", "naive", "no_history"):
        with ForeignAgent(kind) as agent:
            message = _message(own_context=False)
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message},
            }
            httpx.post(agent.url, json=body, headers=VERSION, timeout=10)
            (task,) = agent.listing()
            history = task.get("history", [])
            stamp = task["status"].get("timestamp", "")
            if kind == "own_id":
                assert history[0]["role"] == "ROLE_USER"
                assert history[0]["messageId"] != message["messageId"]
            elif kind == "compact":
                assert [m["role"] for m in history] == ["ROLE_AGENT"]
            elif kind == "no_history":
                assert all(m["role"] != "ROLE_USER" for m in history)
            elif kind == "naive":
                assert stamp
                assert not stamp.endswith("Z")
                assert "+" not in stamp[10:]
            else:
                from datetime import datetime, timezone

                when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
                behind = datetime.now(timezone.utc) - when
                assert behind.total_seconds() > 500  # ten minutes behind, give or take


def test_an_unstable_listing_skips_one_task_and_repeats_another() -> None:
    """Paged two at a time while the oldest task is touched between pages (A2A #1263)."""
    with ForeignAgent("unstable") as agent:
        for index in range(6):
            body = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "SendMessage",
                "params": {"message": _message(own_context=False)},
            }
            httpx.post(agent.url, json=body, headers=VERSION, timeout=10)
        seen: list[str] = []
        token = ""
        total = 0
        while True:
            params: dict[str, Any] = {"pageSize": 2, **({"pageToken": token} if token else {})}
            body = {"jsonrpc": "2.0", "id": 9, "method": "ListTasks", "params": params}
            result = httpx.post(agent.url, json=body, headers=VERSION, timeout=10).json()["result"]
            seen.extend(task["id"] for task in result["tasks"])
            total = result["totalSize"]
            token = result.get("nextPageToken", "")
            if not token:
                break
        assert len(seen) == total == 6  # the count matches ...
        assert len(set(seen)) < total  # ... yet one task was read twice, and one never
