"""The journal on the a2a-sdk 0.3 line: `guard_client` around a 0.3 client, and the raw door.

Against the real a2a-sdk 0.3 agent of ``tests/agent03.py`` on 127.0.0.1. A2A 0.3 has no
ListTasks: a send whose record holds its task is read back with ``tasks/get``; one left open
by a sender that is gone cannot be listed, so it is `OutcomeUnknown`, never sent twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
import pytest

from a2a_client_errors import Guard, GuardTransport, OutcomeUnknown
from a2a_client_errors.journal import SqliteJournal, State, entry_for
from a2a_client_errors.testing import FakeClock
from tests.sdk03.client03 import message
from tests.sdk03.test_guarded03 import guarded03, last_of

if TYPE_CHECKING:
    from pathlib import Path

    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")


def _guard(db: Path, *, ahead: float = 0.0) -> tuple[Guard, SqliteJournal]:
    """A Guard on a fake clock, its journal's clock ``ahead`` of the dead sender's."""
    journal = SqliteJournal(db, clock=lambda: 1_800_000_000.0 + ahead)
    clock = FakeClock()
    return Guard(journal=journal, clock=clock, sleep=clock.sleep), journal


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_recorded_send_is_read_back_not_sent_again(
    agent03: Running03, tmp_path: Path, binding: str
) -> None:
    """Sent once through guard_client: closed with its task; sent again: read back."""
    db = tmp_path / "sends.db"
    guard, journal = _guard(db)
    async with guarded03(agent03, binding, guard=guard) as client:
        first = await last_of(client.send_message(message("complete", message_id="m-03")))
    record = journal.get("m-03")
    assert record is not None
    assert record.state is State.TASK
    assert record.made == first.id
    again_guard, _ = _guard(db)
    async with guarded03(agent03, binding, guard=again_guard) as client:
        again = await last_of(client.send_message(message("complete", message_id="m-03")))
    assert again.id == first.id
    assert agent03.executor.executions["m-03"] == 1


async def test_a_send_left_open_cannot_be_listed_on_03(agent03: Running03, tmp_path: Path) -> None:
    """A sender gone after recording (A2A 0.3 lists nothing): OutcomeUnknown, nothing sent."""
    db = tmp_path / "sends.db"
    sent = message("complete", message_id="m-gone")
    dead = SqliteJournal(db, clock=lambda: 1_800_000_000.0)
    entry = entry_for(sent, "http://agent/")
    assert entry is not None
    dead.claim(entry, "a-dead-process")
    guard, _ = _guard(db, ahead=60.0)  # its lease has lapsed
    async with guarded03(agent03, "jsonrpc", guard=guard) as client:
        with pytest.raises(OutcomeUnknown) as raised:
            await last_of(client.send_message(sent))
    assert raised.value.journal_record is not None
    assert agent03.executor.executions["m-gone"] == 0  # never a second first attempt


async def test_the_raw_door_journals_03_method_names(agent03: Running03, tmp_path: Path) -> None:
    """``message/send`` through GuardTransport: recorded, then read back with ``tasks/get``."""
    db = tmp_path / "sends.db"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {"message": message("complete", message_id="m-raw").model_dump(mode="json")},
    }
    answers = []
    for _ in range(2):
        guard, journal = _guard(db)
        transport = GuardTransport(guard, raise_failures=True)
        with httpx.Client(transport=transport) as client:
            answers.append(client.post(agent03.card.url, json=body).json())
    assert answers[0]["result"]["id"] == answers[1]["result"]["id"]
    assert agent03.executor.executions["m-raw"] == 1
    record = journal.get("m-raw")
    assert record is not None
    assert record.peer.endswith("#message/send")
