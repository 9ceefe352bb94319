"""The journal against what callers and peers can hand it: any answer, any message, any URL.

Never a crash: `task_made` and `entry_for` read whatever they are given (hypothesis); a
record keeps no secret of the request (no query, no header, no body); one journal object
serves sync and async code at once, and processes racing on one file make one claim each.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from typing import TYPE_CHECKING, Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import Guard, GuardTransport
from a2a_client_errors.journal import Entry, SqliteJournal, State, entry_for, task_made
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.types import Found

if TYPE_CHECKING:
    from pathlib import Path

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["id", "kind", "task", "message", "result", "status", "taskId", "messageId", "role"]
            )
            | st.text(max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@given(JSON)
@settings(max_examples=300, deadline=None)
def test_task_made_never_raises(answer: object) -> None:
    """Whatever an answer holds, `task_made` says a task, a Message, or nothing."""
    made = task_made(answer)
    assert made is None or made.task_id is None or isinstance(made.task_id, str)


@given(JSON)
@settings(max_examples=300, deadline=None)
def test_entry_for_never_raises(message: object) -> None:
    """Whatever a caller passes as a message, `entry_for` gives an entry or None."""
    entry = entry_for(message)
    assert entry is None or (entry.message_id and len(entry.digest) == 32)


def test_the_digest_ignores_key_order_and_sees_content() -> None:
    """The same message in any key order is the same digest; another text is not."""
    one = entry_for({"messageId": "m", "role": "user", "parts": [{"text": "a"}]})
    two = entry_for({"parts": [{"text": "a"}], "role": "user", "messageId": "m"})
    other = entry_for({"messageId": "m", "role": "user", "parts": [{"text": "b"}]})
    assert one is not None
    assert two is not None
    assert other is not None
    assert one.digest == two.digest != other.digest


def test_a_record_keeps_no_secret_of_the_request(tmp_path: Path) -> None:
    """The URL's query, the headers and the body never reach the record."""

    def agent(request: httpx.Request) -> httpx.Response:
        task = {"id": "t-1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"task": task}})

    journal = SqliteJournal(tmp_path / "sends.db")
    transport = GuardTransport(Guard(journal=journal), httpx.MockTransport(agent))
    secret = "s3cret-token"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": secret}]}
        },
    }
    with httpx.Client(transport=transport, headers={"Authorization": secret}) as client:
        client.post(f"http://agent.example/a2a?key={secret}#frag", json=body)
    record = journal.get("m-1")
    assert record is not None
    assert record.state is State.TASK
    assert record.peer == "http://agent.example/a2a#SendMessage"
    journal.close()
    for path in tmp_path.iterdir():
        assert secret.encode() not in path.read_bytes()


async def test_one_journal_serves_sync_and_async_code_at_once(tmp_path: Path) -> None:
    """A sync call in a thread and an async one on the loop, the same messageId: one send."""
    journal = SqliteJournal(tmp_path / "sends.db")
    started, finish = threading.Event(), threading.Event()
    sent: list[str] = []
    task = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"kind": "task", "id": "t-1", "contextId": "c", "status": {"state": "completed"}},
    }
    message = {"messageId": "m-1", "role": "user", "parts": [{"text": "hi"}]}

    def slow_send() -> Any:
        sent.append("sync")
        started.set()
        finish.wait(30)
        return task

    clock = FakeClock()

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        finish.set()  # the other sender's send ends while this one waits
        await asyncio.to_thread(worker.join, 30)

    sync_guard = Guard(journal=journal)
    worker = threading.Thread(target=lambda: sync_guard.call(slow_send, sent=message))
    worker.start()
    assert await asyncio.to_thread(started.wait, 30)

    async def async_send() -> Any:
        sent.append("async")
        return task

    async_guard = Guard(journal=journal, clock=clock, sleep=sleep)
    found = await async_guard.acall(async_send, sent=message, lookup=lambda _left: Found(task))
    worker.join(30)
    assert sent == ["sync"]  # the second never made a first attempt
    assert found == task
    assert journal.get("m-1").state is State.TASK  # type: ignore[union-attr]


def _claim_all(path: str, owner: str, ids: list[str], out: Any) -> None:
    journal = SqliteJournal(path)
    won = [mid for mid in ids if journal.claim(Entry(mid, "d" * 32), owner)[1]]
    out.put((owner, won))
    journal.close()


def test_processes_racing_on_one_file_make_one_claim_each(tmp_path: Path) -> None:
    """Four processes claim the same 50 messageIds on one file: one winner per messageId."""
    path = str(tmp_path / "sends.db")
    SqliteJournal(path).get("warm")  # the schema, made once
    ids = [f"m-{index}" for index in range(50)]
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [context.Process(target=_claim_all, args=(path, f"p{n}", ids, out)) for n in range(4)]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    won = [mid for _, mids in results for mid in mids]
    assert sorted(won) == sorted(ids)  # every one claimed, none twice
    journal = SqliteJournal(path)
    owners = {owner for owner, _ in results}
    assert {journal.get(mid).owner for mid in ids} <= owners  # type: ignore[union-attr]
    assert len(journal.unsettled(limit=100)) == len(ids)
