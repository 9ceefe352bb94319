"""`Guard(journal=...)` through `Guard.call` and `acall`, on a real SQLite file.

Every send is recorded before its first attempt and closed with its end; a messageId with a
record never makes a second first attempt. Time is a `FakeClock` (the Guard's) and the
journal's own clock; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import threading
import warnings
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import ExactlyOnce, Guard, Hook, OutcomeUnknown
from a2a_client_errors._journal import own_closes
from a2a_client_errors.journal import (
    AlreadySent,
    Entry,
    JournalError,
    JournalRecord,
    JournalUnavailable,
    RequestMismatch,
    SqliteJournal,
    State,
    entry_for,
    message_id_for,
    task_made,
)
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.types import Found, NotFound, Unresolved

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from a2a_client_errors.hooks import JournalEvent

MESSAGE = {"messageId": "m-1", "role": "user", "parts": [{"text": "hello"}]}
TASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "completed"}},
}


class Journaled(Hook):
    """A hook that keeps the journal's events."""

    def __init__(self) -> None:
        self.events: list[JournalEvent] = []

    def on_journal(self, event: JournalEvent) -> None:
        """On journal."""
        self.events.append(event)

    @property
    def kinds(self) -> list[str]:
        """The kinds told, in order."""
        return [event.kind for event in self.events]


class Sender:
    """A send that answers each attempt from a script, counting the attempts."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self) -> Any:
        """One attempt."""
        self.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def wall() -> FakeClock:
    """The wall clock the journal keeps its leases by."""
    return FakeClock(start=1_800_000_000.0)


@pytest.fixture
def journal(tmp_path: Path, wall: FakeClock) -> SqliteJournal:
    """A journal on a fresh SQLite file, on the fake wall clock."""
    return SqliteJournal(tmp_path / "sends.db", clock=wall, lease=10.0)


def _guard(journal: Any, hook: Hook | None = None, **kwargs: Any) -> Guard:
    clock = FakeClock()
    return Guard(
        journal=journal, clock=clock, sleep=clock.sleep, hooks=[hook] if hook else [], **kwargs
    )


def test_a_send_is_recorded_before_and_closed_with_its_task(journal: SqliteJournal) -> None:
    """A send is recorded before and closed with its task."""
    seen: list[JournalRecord | None] = []

    def send() -> Any:
        """Send."""
        seen.append(journal.get("m-1"))  # the record exists before the first byte
        return TASK

    hook = Journaled()
    assert _guard(journal, hook).call(send, sent=MESSAGE) == TASK
    assert seen[0] is not None
    assert seen[0].state is State.OPEN
    record = journal.get("m-1")
    assert record is not None
    assert record.state is State.TASK
    assert record.made == "t-1"
    assert hook.kinds == ["recorded", "settled"]
    assert _guard(journal).leases is not None


def test_a_recorded_task_is_never_sent_again(journal: SqliteJournal) -> None:
    """A recorded task is never sent again."""
    send = Sender(TASK)
    _guard(journal).call(send, sent=MESSAGE)
    with pytest.raises(AlreadySent) as raised:
        _guard(journal).call(send, sent=MESSAGE)
    assert send.calls == 1
    assert raised.value.journal_record.made == "t-1"
    assert "t-1" in str(raised.value)


def test_a_recorded_task_is_read_back_through_the_look_up(journal: SqliteJournal) -> None:
    """A recorded task is read back through the look up."""
    send = Sender(TASK)
    _guard(journal).call(send, sent=MESSAGE)
    asked: list[float | None] = []

    def lookup(time_left: float | None) -> Found:
        """Lookup."""
        asked.append(time_left)
        return Found({"read": "back"})

    again = _guard(journal).call(send, sent=MESSAGE, lookup=lookup)
    assert again == {"read": "back"}
    assert send.calls == 1
    assert len(asked) == 1


def test_a_message_answer_is_already_sent(journal: SqliteJournal) -> None:
    """A message answer is already sent."""
    reply = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"kind": "message", "messageId": "r", "role": "agent", "parts": []},
    }
    _guard(journal).call(Sender(reply), sent=MESSAGE)
    assert journal.get("m-1").state is State.MESSAGE  # type: ignore[union-attr]
    with pytest.raises(AlreadySent, match="answered with a message"):
        _guard(journal).call(Sender(reply), sent=MESSAGE)


def test_another_body_under_the_same_message_id_is_refused(journal: SqliteJournal) -> None:
    """Another body under the same message id is refused."""
    _guard(journal).call(Sender(TASK), sent=MESSAGE)
    send = Sender(TASK)
    hook = Journaled()
    with pytest.raises(RequestMismatch) as raised:
        _guard(journal, hook).call(send, sent={**MESSAGE, "parts": [{"text": "other"}]})
    assert send.calls == 0
    assert raised.value.decision.action.value == "fix_request"
    assert hook.kinds == ["mismatch"]


def test_a_refused_send_may_go_again_even_fixed(journal: SqliteJournal) -> None:
    """A refused send may go again even fixed."""
    refusal = httpx.Response(
        400,
        json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}},
        request=httpx.Request("POST", "http://agent/"),
    )
    with pytest.raises(Exception):  # noqa: B017, PT011 (the fix_request failure)
        _guard(journal).call(Sender(refusal), sent=MESSAGE)
    assert journal.get("m-1").state is State.REFUSED  # type: ignore[union-attr]
    fixed = {**MESSAGE, "parts": [{"text": "fixed"}]}
    assert _guard(journal).call(Sender(TASK), sent=fixed) == TASK
    assert journal.get("m-1").state is State.TASK  # type: ignore[union-attr]


def test_a_lost_answer_leaves_the_record_open_and_carries_it(journal: SqliteJournal) -> None:
    """A lost answer leaves the record open and carries it."""
    send = Sender(httpx.ReadTimeout("lost"))
    with pytest.raises(OutcomeUnknown) as raised:
        _guard(journal).call(send, sent=MESSAGE)
    record = raised.value.journal_record
    assert record is not None
    assert record.message_id == "m-1"
    assert record.state is State.OPEN
    stored = journal.get("m-1")
    assert stored is not None
    assert stored.unknown
    assert send.calls == 1  # nothing resent


def test_an_observer_of_a_release_reads_the_journal_without_waiting_for_itself(
    journal: SqliteJournal,
) -> None:
    """A hook told of a release (on the closer thread) may read the journal at once.

    The closer thread writes the pending closes one after the other: a read there that
    waited for them would wait for its own thread (10 s, then go on), holding up every close
    behind it.
    """
    told: list[tuple[str, bool, State | None]] = []

    class Reader(Hook):
        def on_journal(self, event: JournalEvent) -> None:
            if event.kind == "released":
                waited_for_nothing = own_closes(event.message_id, timeout=0)
                record = journal.get(event.message_id)
                state = None if record is None else record.state
                told.append((threading.current_thread().name, waited_for_nothing, state))

    guard = _guard(journal, Reader())
    with pytest.raises(OutcomeUnknown):
        guard.call(Sender(httpx.ReadTimeout("lost")), sent=MESSAGE)
    assert guard.leases is not None
    assert guard.leases.flush(timeout=30)
    assert told == [("a2a-journal-closes", True, State.OPEN)]
    assert own_closes("m-1", timeout=0)  # and for this thread, nothing is pending


def test_a_send_left_unknown_is_looked_up_by_the_next_sender(journal: SqliteJournal) -> None:
    """A send left unknown is looked up by the next sender."""
    with pytest.raises(OutcomeUnknown):
        _guard(journal).call(Sender(httpx.ReadTimeout("lost")), sent=MESSAGE)
    send = Sender(TASK)
    found = _guard(journal).call(send, sent=MESSAGE, lookup=lambda _left: Found(TASK))
    assert found == TASK
    assert send.calls == 0
    record = journal.get("m-1")
    assert record is not None
    assert record.state is State.TASK
    assert record.attempts == 2


def test_a_dead_senders_send_is_taken_over_and_looked_up(
    journal: SqliteJournal, wall: FakeClock
) -> None:
    """A dead senders send is taken over and looked up."""
    entry = entry_for(MESSAGE)
    assert entry is not None
    journal.claim(entry, "a-dead-process")
    wall.advance(journal.lease + 1)  # it renews no more
    hook = Journaled()
    send = Sender(TASK)
    guard = _guard(journal, hook)
    with pytest.raises(OutcomeUnknown) as raised:
        guard.call(send, sent=MESSAGE, lookup=lambda _left: Unresolved("nothing listed"))
    assert send.calls == 0  # never a second first attempt
    assert raised.value.why == "nothing listed"
    assert guard.leases is not None
    assert guard.leases.flush()  # the close is written off the caller's path
    assert hook.kinds == ["took_over", "released"]


def test_the_agents_word_allows_the_resend_after_a_dead_sender(
    journal: SqliteJournal, wall: FakeClock
) -> None:
    """The agents word allows the resend after a dead sender."""
    entry = entry_for(MESSAGE)
    assert entry is not None
    journal.claim(entry, "a-dead-process")
    wall.advance(journal.lease + 1)
    send = Sender(TASK)
    guard = _guard(journal, exactly_once=ExactlyOnce(deduplicating=["default"]))
    assert guard.call(send, sent=MESSAGE) == TASK
    assert send.calls == 1
    contract = Sender(TASK)
    journal.claim(entry_for({**MESSAGE, "messageId": "m-2"}), "gone")
    wall.advance(journal.lease + 1)
    assert (
        _guard(journal).call(
            contract, sent={**MESSAGE, "messageId": "m-2"}, lookup=lambda _left: NotFound()
        )
        == TASK
    )
    assert contract.calls == 1


def test_a_live_sender_is_waited_for(journal: SqliteJournal) -> None:
    """A live sender is waited for."""
    entry = entry_for(MESSAGE)
    assert entry is not None
    journal.claim(entry, "another-process")
    clock = FakeClock()
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        """Sleep."""
        waits.append(seconds)
        clock.advance(seconds)
        if len(waits) == 2:  # the other process's send ends meanwhile
            journal.settle("m-1", "another-process", State.TASK, made="t-9")

    hook = Journaled()
    guard = Guard(journal=journal, clock=clock, sleep=sleep, hooks=[hook])
    send = Sender(TASK)
    result = guard.call(send, sent=MESSAGE, lookup=lambda _left: Found({"task": "t-9"}))
    assert result == {"task": "t-9"}
    assert send.calls == 0
    assert waits[1] == 2 * waits[0]
    assert hook.kinds == ["waited", "replayed"]


def test_a_live_sender_is_waited_for_only_within_the_deadline(journal: SqliteJournal) -> None:
    """A live sender is waited for only within the deadline."""
    journal.claim(entry_for(MESSAGE), "another-process")
    send = Sender(TASK)
    with pytest.raises(OutcomeUnknown) as raised:
        _guard(journal, deadline=3.0).call(send, sent=MESSAGE)
    assert "still sending" in raised.value.why
    assert send.calls == 0
    assert raised.value.journal_record is not None


class Broken:
    """A journal whose store is down."""

    lease = 10.0
    retention = 60.0

    def __getattr__(self, name: str) -> Any:
        def fail(*args: object, **kwargs: object) -> Any:
            """Fail."""
            raise JournalError("the store is down")

        return fail


def test_a_journal_that_cannot_record_fails_the_call_before_anything_is_sent() -> None:
    """A journal that cannot record fails the call before anything is sent."""
    send = Sender(TASK)
    hook = Journaled()
    with pytest.raises(JournalUnavailable, match="nothing was sent") as raised:
        _guard(Broken(), hook).call(send, sent=MESSAGE)
    assert send.calls == 0
    assert not raised.value.maybe_processed
    assert raised.value.decision.give_up.value == "journal"  # type: ignore[union-attr]
    assert hook.kinds == ["failed"]


def test_a_close_that_fails_is_retried_by_the_lease_keeper(journal: SqliteJournal) -> None:
    """A close that fails is retried by the lease keeper."""

    class Flaky(SqliteJournal):
        """Flaky."""

        fail = True

        def settle(self, *args: Any, **kwargs: Any) -> bool:
            """Settle."""
            if self.fail:
                raise JournalError("blip")
            return super().settle(*args, **kwargs)

    flaky = Flaky(journal.path, clock=journal.clock)
    hook = Journaled()
    guard = _guard(flaky, hook)
    assert guard.call(Sender(TASK), sent=MESSAGE) == TASK  # the answer is handed back anyway
    assert guard.leases is not None
    assert guard.leases.flush()  # tried once, at once, off the caller's path
    assert hook.kinds == ["recorded", "failed"]
    assert guard.leases.pending() == 1
    assert flaky.get("m-1").state is State.OPEN  # type: ignore[union-attr]
    flaky.fail = False
    guard.leases.tick()
    assert guard.leases.pending() == 0
    assert flaky.get("m-1").state is State.TASK  # type: ignore[union-attr]


def test_calls_without_sent_are_not_journaled(journal: SqliteJournal) -> None:
    """Calls without sent are not journaled."""
    assert _guard(journal).call(lambda: TASK, operation="SendMessage") == TASK
    assert journal.unsettled() == []
    with pytest.raises(ValueError, match="messageId"):
        _guard(journal).call(lambda: TASK, sent={"role": "user"})


def test_interrupted_call_leaves_the_record_open_for_a_look_up(journal: SqliteJournal) -> None:
    """Interrupted call leaves the record open for a look up."""

    def interrupted() -> Any:
        """Interrupted."""
        raise KeyboardInterrupt

    guard = _guard(journal)
    with pytest.raises(KeyboardInterrupt):
        guard.call(interrupted, sent=MESSAGE)
    assert guard.leases is not None
    guard.leases.tick()  # the release is written from the keeper
    record = journal.get("m-1")
    assert record is not None
    assert record.unknown


async def test_acall_records_from_a_worker_thread(journal: SqliteJournal) -> None:
    """Acall records from a worker thread."""
    threads: list[str] = []

    class Watched(SqliteJournal):
        """Watched."""

        def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
            """Claim."""
            threads.append(threading.current_thread().name)
            return super().claim(entry, owner)

    watched = Watched(journal.path, clock=journal.clock)

    async def send() -> Any:
        """Send."""
        return TASK

    assert await _guard(watched).acall(send, sent=MESSAGE) == TASK
    assert threads
    assert threads[0] != threading.current_thread().name
    assert watched.get("m-1").state is State.TASK  # type: ignore[union-attr]


class _SettleWatched(SqliteJournal):
    """A journal that notes which thread wrote each settle, and how many are pending then."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settled_on: list[str] = []

    def settle(self, *args: Any, **kwargs: Any) -> bool:
        """Settle, noting the thread."""
        self.settled_on.append(threading.current_thread().name)
        return super().settle(*args, **kwargs)


def test_a_settle_is_written_before_the_caller_has_its_answer(journal: SqliteJournal) -> None:
    """A task's settle is written on the caller's thread: a crash after the return loses nothing."""
    watched = _SettleWatched(journal.path, clock=journal.clock)
    guard = _guard(watched)
    assert guard.call(Sender(TASK), sent=MESSAGE) == TASK
    assert watched.settled_on == [threading.current_thread().name]  # before the return
    assert guard.leases is not None
    assert guard.leases.held == 0  # let go once written, nothing left to renew


async def test_an_acalls_settle_is_written_before_it_returns(journal: SqliteJournal) -> None:
    """Acall: the settle is written by a worker thread, awaited, never the closer thread."""
    watched = _SettleWatched(journal.path, clock=journal.clock)

    async def send() -> Any:
        """Send."""
        return TASK

    guard = _guard(watched)
    assert await guard.acall(send, sent=MESSAGE) == TASK
    assert len(watched.settled_on) == 1  # before the return
    assert watched.settled_on[0] not in (threading.current_thread().name, "a2a-journal-closes")
    assert guard.leases is not None
    assert guard.leases.held == 0


async def test_a_claim_cancelled_midway_is_taken_back(journal: SqliteJournal) -> None:
    """Cancelled while its claim is written: once written, it is closed as never sent."""
    entered, leave, undone = threading.Event(), threading.Event(), threading.Event()

    class Slow(SqliteJournal):
        def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
            entered.set()
            leave.wait(10)
            return super().claim(entry, owner)

        def settle(self, *args: Any, **kwargs: Any) -> bool:
            try:
                return super().settle(*args, **kwargs)
            finally:
                undone.set()

    slow = Slow(journal.path, clock=journal.clock)
    sent = Sender(TASK)
    call = asyncio.ensure_future(_guard(slow).acall(sent, sent=MESSAGE))
    assert await asyncio.to_thread(entered.wait, 30)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    leave.set()
    assert await asyncio.to_thread(undone.wait, 30)  # the claim ended, then its undo ran
    record = slow.get("m-1")
    assert record is not None
    assert record.state is State.REFUSED
    assert record.note == "cancelled before it was sent"
    assert sent.calls == 0


def test_message_id_for_is_stable_and_distinct() -> None:
    """Message id for is stable and distinct."""
    assert message_id_for("run-1", "step-a") == message_id_for("run-1", "step-a")
    assert message_id_for("run-1", "step-a") != message_id_for("run-1", "step-b")
    assert message_id_for("run-1", 2) != message_id_for("run-12", "")
    assert len(message_id_for("r", "s")) == 36


@pytest.mark.parametrize(
    ("answer", "task_id"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "a", "status": {}}}}, "a"),
        ({"task": {"id": "b", "status": {}}}, "b"),
        ({"id": "c", "status": {}, "kind": "task"}, "c"),
        ({"kind": "status-update", "taskId": "d", "status": {}}, "d"),
        ({"statusUpdate": {"taskId": "e", "status": {}}}, "e"),
        ((({"id": "f", "status": {}}), None), "f"),
    ],
)
def test_task_made_reads_the_common_forms(answer: object, task_id: str) -> None:
    """Task made reads the common forms."""
    made = task_made(answer)
    assert made is not None
    assert made.task_id == task_id


@pytest.mark.parametrize(
    "answer",
    [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {"kind": "message", "messageId": "x", "role": "agent"},
        },
        {"message": {"messageId": "x", "role": "ROLE_AGENT"}},
    ],
)
def test_task_made_reads_messages(answer: object) -> None:
    """Task made reads messages."""
    made = task_made(answer)
    assert made is not None
    assert made.task_id is None


@pytest.mark.parametrize("answer", [None, 3, "text", {"error": {}}, {"result": {}}, object()])
def test_task_made_says_nothing_of_what_it_cannot_read(answer: object) -> None:
    """Task made says nothing of what it cannot read."""
    assert task_made(answer) is None


def test_every_journaled_call_ends_with_one_record(journal: SqliteJournal) -> None:
    """Read back, refused for another body: each call is told once, as any call's end."""
    from a2a_client_errors import recording

    _guard(journal).call(Sender(TASK), sent=MESSAGE)
    with recording() as calls:
        _guard(journal).call(Sender(TASK), sent=MESSAGE, lookup=lambda _left: Found(TASK))
        with pytest.raises(RequestMismatch) as raised:
            _guard(journal).call(Sender(TASK), sent={**MESSAGE, "parts": []})
    assert [record.outcome for record in calls] == ["ok", "fix_request"]
    assert raised.value.record is calls[1]


async def test_arecover_finds_holds_and_skips(journal: SqliteJournal, wall: FakeClock) -> None:
    """Open records come back: found (closed), held by a live sender, or no look-up for them."""
    for message_id, owner in (("found", "gone"), ("held", "alive"), ("skip", "gone")):
        entry = entry_for({**MESSAGE, "messageId": message_id}, f"http://agent/{message_id}")
        assert entry is not None
        journal.claim(entry, owner)
        if owner == "gone":
            journal.release(message_id, owner, "the answer was lost")
    journal.renew("alive")

    async def lookup(_left: float | None) -> Found:
        return Found(TASK)

    guard = _guard(journal)
    recovered = await guard.arecover(lambda record: None if record.message_id == "skip" else lookup)
    outcomes = {recovery.record.message_id: recovery.outcome for recovery in recovered}
    assert outcomes == {"found": "found", "held": "held", "skip": "skipped"}
    found = next(r for r in recovered if r.outcome == "found")
    assert found.task_id == "t-1"
    assert found.answer == TASK
    assert journal.get("found").state is State.TASK  # type: ignore[union-attr]
    assert [record.message_id for record in journal.unsettled()] == ["held", "skip"]


def test_recover_keeps_what_it_cannot_find(journal: SqliteJournal) -> None:
    """Not found: kept open, its why told; the agent's word that it is absent: kept, absent."""
    for message_id in ("unknown", "absent"):
        entry = entry_for({**MESSAGE, "messageId": message_id}, "http://agent/")
        assert entry is not None
        journal.claim(entry, "gone")
        journal.release(message_id, "gone")
    looks = {"unknown": Unresolved("nothing listed"), "absent": NotFound()}
    recovered = _guard(journal).recover(lambda record: lambda _left: looks[record.message_id])
    assert {r.record.message_id: (r.outcome, r.why) for r in recovered} == {
        "unknown": ("unknown", "nothing listed"),
        "absent": ("absent", "the agent's word says it made nothing: its next send goes out"),
    }
    assert len(journal.unsettled()) == 2
    with pytest.raises(ValueError, match="no journal"):
        Guard().recover(lambda _record: None)


def test_the_lease_keeper_renews_from_its_thread(journal: SqliteJournal) -> None:
    """While a record is held, the thread renews its lease; a fork's child is a new owner."""
    renewed = threading.Event()

    class Watched(SqliteJournal):
        def renew(self, owner: str) -> int:
            try:
                return super().renew(owner)
            finally:
                renewed.set()

    from a2a_client_errors.journal import LeaseKeeper

    watched = Watched(journal.path, clock=journal.clock)
    keeper = LeaseKeeper(watched, interval=0.01)
    keeper.hold()
    assert renewed.wait(30)
    assert keeper.renewals >= 1
    keeper.drop()
    keeper.stop()

    def in_the_child() -> bytes:  # read there: a sender of its own, holding nothing
        return f"{keeper.owner}|{keeper.held}".encode()

    owner, held = _in_child(in_the_child).decode().split("|")
    assert owner != keeper.owner
    assert held == "0"


def test_the_journal_is_logged(journal: SqliteJournal, caplog: pytest.LogCaptureFixture) -> None:
    """Recorded and settled at DEBUG, a record left open at WARNING, a failure at ERROR."""
    import logging

    from a2a_client_errors.instrumentation import LoggingHook

    hook = LoggingHook()
    with caplog.at_level(logging.DEBUG, logger=hook.logger.name):
        _guard(journal, hook).call(Sender(TASK), sent=MESSAGE)
        guard = _guard(journal, hook)
        with pytest.raises(OutcomeUnknown):
            guard.call(Sender(httpx.ReadTimeout("lost")), sent={**MESSAGE, "messageId": "m-2"})
        assert guard.leases is not None
        assert guard.leases.flush()  # its close is logged from the closer thread
        with pytest.raises(JournalUnavailable):
            _guard(Broken(), hook).call(Sender(TASK), sent=MESSAGE)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if "journal" in r.getMessage()]
    assert (logging.DEBUG, "journal recorded: messageId m-1 to default") in lines
    assert any(level == logging.WARNING and "released" in text for level, text in lines)
    assert any(level == logging.ERROR and "store is down" in text for level, text in lines)


def test_interrupted_while_taking_over_lets_the_record_go(
    journal: SqliteJournal, wall: FakeClock
) -> None:
    """Interrupted during a take-over's look-up: the record is left open, held by nobody."""
    entry = entry_for(MESSAGE)
    assert entry is not None
    journal.claim(entry, "a-dead-process")
    wall.advance(journal.lease + 1)

    def interrupted(_left: float | None) -> Any:
        raise KeyboardInterrupt

    guard = _guard(journal)
    with pytest.raises(KeyboardInterrupt):
        guard.call(Sender(TASK), sent=MESSAGE, lookup=interrupted)
    record = journal.get("m-1")
    assert record is not None
    assert record.unknown  # not held by this process, renewed forever
    assert record.note == "the call was interrupted: its outcome is unknown"
    assert guard.leases is not None
    assert guard.leases.held == 0


def test_a_forks_child_waits_for_none_of_its_parents_closes(journal: SqliteJournal) -> None:
    """A close pending in the parent when it forks: the child's reads do not wait for it."""
    entered, leave = threading.Event(), threading.Event()

    class Slow(SqliteJournal):
        def release(self, *args: Any, **kwargs: Any) -> bool:
            entered.set()
            leave.wait(30)
            return super().release(*args, **kwargs)

    slow = Slow(journal.path, clock=journal.clock)
    guard = _guard(slow)
    with pytest.raises(OutcomeUnknown):  # its record is released off the caller's path
        guard.call(Sender(httpx.ReadTimeout("lost")), sent=MESSAGE)
    assert entered.wait(30)  # the release is being written, and will wait

    def in_the_child() -> bytes:  # it waits for none of its parent's closes (that would be forever)
        own_closes("m-1", timeout=3600)
        record = SqliteJournal(journal.path, clock=journal.clock).get("m-1")
        return b"held" if record is not None and record.owner is not None else b"?"

    answer = _in_child(in_the_child)
    leave.set()
    assert answer == b"held"  # read before the parent's release was written
    assert guard.leases is not None
    assert guard.leases.flush()
    released = slow.get("m-1")
    assert released is not None
    assert released.state is State.OPEN
    assert released.owner is None


def _in_child(work: Callable[[], bytes]) -> bytes:
    """What ``work`` returns in a forked child of this process (b"" if it does not answer)."""
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns of a fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:
        try:
            os.write(write, work())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 120)  # a bound, not a speed: it answers at once
    answer = os.read(read, 512) if ready else b""
    if not ready:
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    os.close(read)
    return answer
