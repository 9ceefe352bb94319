"""``a2a-errors journal list|resolve`` on a real SQLite file, against a real a2a-sdk agent."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import httpx
import pytest

from a2a_client_errors.cli import main
from a2a_client_errors.journal import SqliteJournal, State, entry_for, message_id_for
from tests.foreign import PLAIN, ForeignAgent
from tests.journal_worker import VERSION, body

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]


@pytest.fixture(name="agent")
def agent_fixture() -> Iterator[ForeignAgent]:
    """A plain a2a-sdk agent, stopped after the test."""
    with ForeignAgent(PLAIN) as running:
        yield running


def _left_unknown(db: Path, agent: ForeignAgent, step: str) -> str:
    """A send the agent got, whose record was left open (its answer lost to its sender)."""
    message_id = message_id_for("run-cli", step)
    sent = body(message_id)
    entry = entry_for(sent["params"]["message"], f"{agent.url}#SendMessage")  # type: ignore[index]
    assert entry is not None
    journal = SqliteJournal(db)
    journal.claim(entry, "a-process-that-lost-the-answer")
    httpx.post(agent.url, json=sent, headers=VERSION, timeout=30).raise_for_status()
    journal.release(message_id, "a-process-that-lost-the-answer", "the answer was lost")
    journal.close()
    return message_id


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), out=out)
    return status, out.getvalue()


def test_list_then_resolve_by_look_up(tmp_path: Path, agent: ForeignAgent) -> None:
    """``list`` shows the open record; ``resolve`` finds its task and closes it."""
    db = str(tmp_path / "sends.db")
    message_id = _left_unknown(tmp_path / "sends.db", agent, "one")
    status, text = _run("journal", "list", "--sqlite", db)
    assert status == 0
    assert message_id in text
    assert "nobody (to look up)" in text
    assert "the answer was lost" in text
    status, text = _run(
        "journal", "resolve", "--sqlite", db, "-H", "A2A-Version:1.0", "-H", "Authorization:s3cret"
    )
    assert status == 0, text
    assert f"{message_id}: found task" in text
    assert "s3cret" not in text
    record = SqliteJournal(db).get(message_id)
    assert record is not None
    assert record.state is State.TASK
    status, text = _run("journal", "list", "--sqlite", db, "--json")
    assert status == 0
    assert json.loads(text) == []
    assert agent.runs.counts[message_id] == 1


def test_resolve_on_the_operators_word(tmp_path: Path, agent: ForeignAgent) -> None:
    """``resolve MESSAGE_ID --task`` closes it; a record that is not open is refused."""
    db = str(tmp_path / "sends.db")
    message_id = _left_unknown(tmp_path / "sends.db", agent, "two")
    status, text = _run("journal", "resolve", "--sqlite", db, message_id, "--task", "t-42")
    assert status == 0
    assert "task t-42" in text
    assert SqliteJournal(db).get(message_id).made == "t-42"  # type: ignore[union-attr]
    assert _run("journal", "resolve", "--sqlite", db, message_id, "--refused")[0] == 2
    assert _run("journal", "resolve", "--sqlite", db, "absent", "--refused")[0] == 2
    assert _run("journal", "resolve", "--sqlite", db, message_id)[0] == 2  # neither


def test_an_unreadable_journal_is_a_clear_error(tmp_path: Path) -> None:
    """A path that is no journal: exit 2, said on stderr."""
    status, _ = _run("journal", "list", "--sqlite", str(tmp_path))
    assert status == 2


def test_unknown_stays_open_when_the_agent_is_gone(tmp_path: Path) -> None:
    """Nobody answers the look-up: the record stays open, exit 1."""
    db = tmp_path / "sends.db"
    message_id = message_id_for("run-cli", "gone")
    entry = entry_for(body(message_id)["params"]["message"], "http://127.0.0.1:9/a2a#SendMessage")  # type: ignore[index]
    assert entry is not None
    journal = SqliteJournal(db)
    journal.claim(entry, "gone")
    journal.release(message_id, "gone")
    status, text = _run("journal", "resolve", "--sqlite", str(db), "--timeout", "0.5")
    assert status == 1
    assert f"{message_id}: unknown" in text
    assert SqliteJournal(db).get(message_id).state is State.OPEN  # type: ignore[union-attr]
