"""An orchestrator really killed mid-send, restarted: one logical send, one task.

The orchestrator is a process of its own (`tests.journal_worker`: `GuardTransport` under a
Guard whose journal is a SQLite file), sending to a real a2a-sdk 1.x agent on 127.0.0.1
(`tests.foreign`, kind ``plain``: a2a-sdk as it is, its work held while the test needs it).
It is killed (SIGKILL) while the agent works. The restarted orchestrator (this process, a new
Guard on the same file) sends the same step again: the journal knows it, the dead sender's
lease has lapsed (the restarted store's clock is a minute ahead, so nothing waits ten
seconds), and the task is looked up, never sent twice.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Guard, GuardTransport
from a2a_client_errors.journal import SqliteJournal, State, message_id_for
from a2a_client_errors.testing import FakeClock
from tests.foreign import PLAIN, ForeignAgent
from tests.journal_worker import DIED, VERSION, body

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]

BOUND = 60.0  # seconds any one wait may take, at most


@pytest.fixture(name="agent")
def agent_fixture() -> Iterator[ForeignAgent]:
    """A plain a2a-sdk agent, stopped after the test."""
    with ForeignAgent(PLAIN) as running:
        yield running


def _killed_mid_send(db: Path, agent: ForeignAgent, message_id: str) -> None:
    """Start an orchestrator sending ``message_id``; kill it once the agent works on it."""
    child = subprocess.Popen(  # noqa: S603 (our own worker, with our own arguments)
        [sys.executable, "-m", "tests.journal_worker", str(db), agent.url, message_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert agent.runs.wait_ran(message_id, BOUND), "the agent never got the message"
    finally:
        child.kill()
        child.communicate(timeout=BOUND)
    assert child.returncode == -9  # killed, before any answer


def _finished(agent: ForeignAgent, message_id: str) -> dict[str, Any]:
    """Let the agent's work end; the task once it shows completed (bounded)."""
    agent.release(message_id)
    for _ in range(2000):
        for task in agent.listing():
            history = task.get("history", [])
            started = bool(history) and history[0].get("messageId") == message_id
            if started and task["status"]["state"] == "TASK_STATE_COMPLETED":
                return task
    pytest.fail("the agent's work did not end")


def _restarted(db: Path) -> tuple[Guard, SqliteJournal]:
    """The restarted orchestrator: a new Guard on the same journal file."""
    journal = SqliteJournal(db, clock=lambda: time.time() + 60)  # the dead lease has lapsed
    clock = FakeClock()
    return Guard(journal=journal, clock=clock, sleep=clock.sleep), journal


def test_killed_while_the_agent_works_the_restart_gets_the_one_task(
    tmp_path: Path, agent: ForeignAgent
) -> None:
    """Killed while the agent works: the restart gets the task, the executor ran once."""
    db = tmp_path / "sends.db"
    message_id = "hold-" + message_id_for("run-7", "summarise")
    _killed_mid_send(db, agent, message_id)
    left = SqliteJournal(db).get(message_id)
    assert left is not None
    assert left.state is State.OPEN  # recorded before the first byte, never closed
    task = _finished(agent, message_id)
    guard, journal = _restarted(db)
    with httpx.Client(
        transport=GuardTransport(guard, raise_failures=True), headers=VERSION
    ) as client:
        answer = client.post(agent.url, json=body(message_id)).json()
    assert answer["result"]["task"]["id"] == task["id"]
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert agent.runs.counts[message_id] == 1  # one logical send, one executor run
    record = journal.get(message_id)
    assert record is not None
    assert record.state is State.TASK
    assert record.made == task["id"]
    assert record.attempts == 2  # the dead sender, and the one that took it over


def test_recover_closes_what_a_dead_sender_left_open(tmp_path: Path, agent: ForeignAgent) -> None:
    """`Guard.recover` finds the dead sender's task; the next send of the step replays it."""
    db = tmp_path / "sends.db"
    message_id = "hold-" + message_id_for("run-8", "summarise")
    _killed_mid_send(db, agent, message_id)
    task = _finished(agent, message_id)
    guard, journal = _restarted(db)
    transport = GuardTransport(guard, raise_failures=True)
    recovered = guard.recover(lambda record: transport.lookup_for(record, headers=VERSION))
    assert [(r.outcome, r.task_id) for r in recovered] == [("found", task["id"])]
    assert journal.unsettled() == []
    with httpx.Client(transport=transport, headers=VERSION) as client:
        again = client.post(agent.url, json=body(message_id)).json()
    assert again["result"]["task"]["id"] == task["id"]  # read back with GetTask
    assert agent.runs.counts[message_id] == 1


def _answered(db: Path, agent: ForeignAgent, message_id: str, *flags: str) -> int:
    """Run an orchestrator to its answer (``--die``: dying the moment it has it); its status."""
    done = subprocess.run(  # noqa: S603 (our own worker)
        [sys.executable, "-m", "tests.journal_worker", str(db), agent.url, message_id, *flags],
        capture_output=True,
        timeout=BOUND,
        check=False,
    )
    assert done.stdout.strip() == b"200"
    return done.returncode


def _read_back(db: Path, agent: ForeignAgent, message_id: str) -> dict[str, Any]:
    """The restarted orchestrator sends the step again: its recorded task, read back, run once."""
    guard, journal = _restarted(db)
    record = journal.get(message_id)
    assert record is not None
    assert record.state is State.TASK
    with httpx.Client(
        transport=GuardTransport(guard, raise_failures=True), headers=VERSION
    ) as client:
        again = client.post(agent.url, json=body(message_id)).json()
    task: dict[str, Any] = again["result"]["task"]
    assert task["id"] == record.made
    assert agent.runs.counts[message_id] == 1
    return task


def test_a_step_answered_before_the_crash_is_read_back(tmp_path: Path, agent: ForeignAgent) -> None:
    """An orchestrator that got its answer, then died: the restart reads the task back."""
    db = tmp_path / "sends.db"
    message_id = message_id_for("run-9", "summarise")  # not held: answered at once
    assert _answered(db, agent, message_id) == 0
    task = _read_back(db, agent, message_id)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_step_answered_the_moment_before_a_crash_is_read_back_without_a_listing(
    tmp_path: Path,
) -> None:
    """Dead the moment its answer was back, its agent keeping no history: the task read back.

    The record is settled before the caller has its answer, so nothing depends on a look-up
    (this agent, as Java's, keeps no history: a look-up could not confirm the messageId).
    """
    db = tmp_path / "sends.db"
    message_id = message_id_for("run-13", "summarise")
    with ForeignAgent("no_history") as agent:
        assert _answered(db, agent, message_id, "--die") == DIED
        _read_back(db, agent, message_id)


async def _sdk_send(agent: ForeignAgent, guard: Guard, message_id: str) -> Any:
    """One SendMessage through `guard_client` (a2a-sdk 1.x, JSON-RPC): its last event."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2
    from a2a.utils.constants import TransportProtocol

    from a2a_client_errors.integrations.a2a_sdk import guard_client

    async with httpx.AsyncClient(headers=VERSION, timeout=BOUND) as http:
        config = ClientConfig(
            streaming=False,
            httpx_client=http,
            supported_protocol_bindings=[TransportProtocol.JSONRPC],
        )
        client = guard_client(ClientFactory(config).create(agent.card), guard)
        message = a2a_pb2.Message(
            role=a2a_pb2.Role.ROLE_USER,
            message_id=message_id,
            parts=[a2a_pb2.Part(text="summarise")],
        )
        try:
            events = [
                e async for e in client.send_message(a2a_pb2.SendMessageRequest(message=message))
            ]
        finally:
            await client.close()
    return events[-1]


async def test_guard_client_journals_its_sends(tmp_path: Path, agent: ForeignAgent) -> None:
    """Through a2a-sdk's client: recorded, closed with its task, read back on a second send."""
    db = tmp_path / "sends.db"
    message_id = message_id_for("run-10", "summarise")
    first = await _sdk_send(agent, Guard(journal=SqliteJournal(db)), message_id)
    record = SqliteJournal(db).get(message_id)
    assert record is not None
    assert record.state is State.TASK
    assert record.made == first.task.id
    guard, _ = _restarted(db)
    again = await _sdk_send(agent, guard, message_id)
    assert again.task.id == first.task.id  # read back with GetTask, not sent again
    assert agent.runs.counts[message_id] == 1


async def test_guard_client_takes_over_a_dead_senders_send(
    tmp_path: Path, agent: ForeignAgent
) -> None:
    """A send a killed orchestrator left open is looked up through a2a-sdk's client."""
    db = tmp_path / "sends.db"
    message_id = "hold-" + message_id_for("run-11", "summarise")
    _killed_mid_send(db, agent, message_id)
    task = _finished(agent, message_id)
    guard, journal = _restarted(db)
    answer = await _sdk_send(agent, guard, message_id)
    assert answer.task.id == task["id"]
    assert agent.runs.counts[message_id] == 1
    assert journal.get(message_id).state is State.TASK  # type: ignore[union-attr]


def test_a_journaled_stream_is_closed_with_the_task_its_first_event_names(
    tmp_path: Path,
) -> None:
    """SendStreamingMessage through GuardTransport: its record holds the stream's task."""
    from a2a_client_errors.testing.peer import EmbeddedPeer

    db = tmp_path / "sends.db"
    message_id = message_id_for("run-12", "stream")
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        },
    }
    with EmbeddedPeer() as peer:
        guard = Guard(journal=SqliteJournal(db))
        client = httpx.Client(transport=GuardTransport(guard), headers=VERSION)
        with client, client.stream("POST", peer.jsonrpc_url, json=body) as response:
            assert response.status_code == 200
            streamed = b"".join(response.iter_bytes())
        record = SqliteJournal(db).get(message_id)
        assert record is not None
        assert record.state is State.TASK
        assert record.made is not None
        assert record.made.encode() in streamed
        assert peer.task_ids() == [record.made]
