"""The Guard's look-up reads: a TaskReader's queries retried, paid for, bounded, and what is learnt.

The reader is scripted; sleeps go to a fake clock. Each test is run the sync and the async way.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors._effects import Exchange
from a2a_client_errors._failures import OutcomeUnknown
from a2a_client_errors._guard import CallShape, Guard
from a2a_client_errors._lookup import (
    CardQuery,
    ExactlyOnce,
    GetTaskQuery,
    ListTasksQuery,
    ReadFailedError,
    SentMessage,
    TaskPage,
    TaskView,
    follow_task,
)
from a2a_client_errors._normalize import normalize
from a2a_client_errors._retry import RetryBudget
from a2a_client_errors.testing import FakeClock, RecordingHook

if TYPE_CHECKING:
    from collections.abc import Generator

MID = "m-1"
REFUSED = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no such method"}}


def task(task_id: str, *history: tuple[str, bool], settled: bool = True) -> dict[str, Any]:
    """A test task, its view written out."""
    return {"id": task_id, "history": history, "settled": settled}


class Reader:
    """A scripted TaskReader: each ask answers (or raises) the next scripted outcome."""

    def __init__(self, *answers: object, elsewhere: bool = False, card: Any = None) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[Any, float | None]] = []
        self.cards = 0
        self.card = card
        self.sent = SentMessage(MID, "ctx")
        self.elsewhere = elsewhere
        self.agent = "agent"  # what is learnt is kept under this key

    @staticmethod
    def view(raw: Any) -> TaskView:
        """The view of a test task."""
        return TaskView(raw["id"], "", None, raw["history"], raw["settled"])

    def ask(self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None) -> Any:
        """One scripted answer (the card, when asked for it)."""
        if isinstance(query, CardQuery):
            self.cards += 1
            return self.card
        self.asked.append((query, timeout))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def found(self, raw: Any) -> Any:
        """The call's answer: the task's id."""
        return f"answer of {raw['id']}"


class AsyncReader(Reader):
    """The async twin: ask and found are coroutines."""

    async def ask(  # type: ignore[override]
        self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None
    ) -> Any:
        """One scripted answer, awaited."""
        await asyncio.sleep(0)
        return Reader.ask(self, query, timeout)

    async def found(self, raw: Any) -> Any:  # type: ignore[override]
        """The call's answer, awaited."""
        return Reader.found(self, raw)


class Peer:
    """An attempt whose answer is always lost, counting the attempts."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes) or [httpx.ReadError("reset")]
        self.calls = 0

    def __call__(self) -> object:
        """One attempt."""
        self.calls += 1
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def acall(self) -> object:
        """One async attempt."""
        return self()


class StepsReader:
    """The same script as a door's `ReadSteps`: each query one `Exchange` for its sender.

    It is no `TaskReader` (it has no ``ask`` and no ``found``): the engine carries out its
    reads, through the sender (sync, or a coroutine function), as effects of the call.
    """

    def __init__(self, script: Reader, *, sender_async: bool) -> None:
        self.script = script
        self.sent, self.elsewhere, self.agent = script.sent, script.elsewhere, script.agent
        self.view = script.view
        self.sender = self._asend if sender_async else self._send

    def __getattr__(self, name: str) -> Any:
        return getattr(self.script, name)  # what the tests read of the script (asked, cards)

    def _send(self, need: tuple[Any, float | None]) -> Any:
        return Reader.ask(self.script, *need)

    async def _asend(self, need: tuple[Any, float | None]) -> Any:
        await asyncio.sleep(0)
        return Reader.ask(self.script, *need)

    def asking(
        self, query: GetTaskQuery | ListTasksQuery | CardQuery, timeout: float | None
    ) -> Generator[Any, Any, Any]:
        """One query: one Exchange; what the sender raised goes through (the read failed)."""
        return (yield Exchange((query, timeout), self.sender))

    def finding(self, raw: Any) -> Generator[Any, Any, Any]:
        """The call's answer: nothing more to read."""
        yield from ()
        return Reader.found(self.script, raw)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])
LOOKUPS = pytest.mark.parametrize("mode", ["sync", "async", "steps", "asteps"])
"""A look-up's reader asked in one call (sync, async) or as steps (a sync or async sender)."""


def make(mode: str, *answers: object, elsewhere: bool = False, card: Any = None) -> Any:
    """A scripted reader of the mode."""
    if mode in ("steps", "asteps"):
        script = Reader(*answers, elsewhere=elsewhere, card=card)
        return StepsReader(script, sender_async=mode == "asteps")
    cls = Reader if mode == "sync" else AsyncReader
    return cls(*answers, elsewhere=elsewhere, card=card)


def guard(clock: FakeClock, **kwargs: Any) -> Guard:
    """A Guard on a fake clock, no jitter (unless given), one look-up look."""
    kwargs.setdefault("exactly_once", ExactlyOnce(recheck_after=0))
    kwargs.setdefault("random", lambda: 0.0)
    return Guard(clock=clock, sleep=clock.sleep, **kwargs)


async def call(mode: str, g: Guard, attempt: Peer, reader: Any, *, peer: str | None = None) -> Any:
    """A SendMessage under the Guard with the reader as its look-up."""
    shape = CallShape("SendMessage", sent=reader.sent, lookup=reader)
    if mode in ("sync", "steps"):
        return g.begin(peer=peer, shape=shape).run(attempt)
    return await g.begin(peer=peer, shape=shape).arun(attempt.acall)


def page(*tasks: dict[str, Any]) -> TaskPage:
    """One last page."""
    return TaskPage(tasks)


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    """A fake clock."""
    return FakeClock()


@LOOKUPS
async def test_a_found_task_is_the_readers_answer(mode: str, clock: FakeClock) -> None:
    """The search finds the task the message started; the reader builds the call's answer."""
    reader = make(mode, page(task("t-1", (MID, True))))
    peer = Peer()
    assert await call(mode, guard(clock), peer, reader) == "answer of t-1"
    assert peer.calls == 1
    assert [type(q) for q, _ in reader.asked] == [ListTasksQuery]


@LOOKUPS
async def test_a_failed_read_is_retried_after_its_backoff(mode: str, clock: FakeClock) -> None:
    """A look-up read lost to the network is asked again after the policy's backoff."""
    reader = make(mode, httpx.ReadError("reset"), page(task("t-1", (MID, True))))
    g = guard(clock, random=lambda: 0.5)
    assert await call(mode, g, Peer(), reader) == "answer of t-1"
    assert len(reader.asked) == 2
    assert clock.sleeps == [pytest.approx(g.policy.backoff.delay(1, 0.5))]


@LOOKUPS
async def test_each_read_is_bounded_by_the_look_ups_time(mode: str, clock: FakeClock) -> None:
    """Every query is asked with the time left before the look-up must end."""
    reader = make(mode, page(task("t-1", (MID, True))))
    await call(mode, guard(clock, exactly_once=ExactlyOnce(timeout=4.0)), Peer(), reader)
    assert reader.asked[0][1] == pytest.approx(4.0)


@LOOKUPS
async def test_a_refused_listing_is_not_retried_and_is_learnt(mode: str, clock: FakeClock) -> None:
    """ListTasks refused (no such method): no retry, OutcomeUnknown, the agent is unlisted."""
    error = normalize(httpx.Response(200, json=REFUSED), operation="ListTasks")
    reader = make(mode, ReadFailedError("refused", error))
    g = guard(clock)
    peer = Peer()
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, g, peer, reader, peer="agent")
    assert len(reader.asked) == 1
    assert peer.calls == 1
    assert "ListTasks failed (METHOD_NOT_FOUND)" in caught.value.why
    assert g.facts("agent").unlisted


@LOOKUPS
async def test_an_answer_of_the_wrong_shape_is_not_retried(mode: str, clock: FakeClock) -> None:
    """A read whose answer says nothing (no error in it) ends the search, unresolved."""
    reader = make(mode, ReadFailedError("ListTasks did not answer with tasks"))
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, guard(clock), Peer(), reader)
    assert "was not answered as asked (ListTasks did not answer with tasks)" in caught.value.why


CONTRACT = ExactlyOnce(recheck_after=0, listed_within={"agent": 0.0})
"""A listing contract for peer "agent": absence, read to the end, allows a resend at once."""


@LOOKUPS
async def test_not_there_is_never_resent_without_the_agents_word(
    mode: str, clock: FakeClock
) -> None:
    """Absent from every look: OutcomeUnknown after the looks, nothing resent, told why."""
    hook = RecordingHook()
    reader = make(mode, page(task("t-9", ("other", True))))
    peer = Peer(httpx.ReadError("reset"), "resent")
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, guard(clock, hooks=[hook]), peer, reader, peer="agent")
    assert peer.calls == 1
    assert len(reader.asked) == ExactlyOnce().max_looks
    assert "not found in 16 looks" in caught.value.why
    assert hook.resolutions == ["unresolved"]


@LOOKUPS
async def test_not_there_elsewhere_is_not_proof(mode: str, clock: FakeClock) -> None:
    """Absence seen on another interface (maybe its own store) is not proven: nothing resent."""
    reader = make(mode, page(task("t-9", ("other", True))), elsewhere=True)
    peer = Peer(httpx.ReadError("reset"), "resent")
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, guard(clock, exactly_once=CONTRACT), peer, reader, peer="agent")
    assert peer.calls == 1
    assert "another interface" in caught.value.why


@LOOKUPS
async def test_not_there_under_a_listing_contract_is_resent(mode: str, clock: FakeClock) -> None:
    """Absence read to the end, on an agent with a declared contract: the call goes again."""
    hook = RecordingHook()
    reader = make(mode, page(task("t-9", ("other", True))))
    peer = Peer(httpx.ReadError("reset"), "resent")
    g = guard(clock, hooks=[hook], exactly_once=CONTRACT)
    assert await call(mode, g, peer, reader, peer="agent") == "resent"
    assert hook.resolutions == ["resent"]


@LOOKUPS
async def test_a_listing_contract_waits_its_time_before_absence_counts(
    mode: str, clock: FakeClock
) -> None:
    """Under a 10 s contract, absence counts only once 10 s passed since the answer was lost."""
    reader = make(mode, page(task("t-9", ("other", True))))
    peer = Peer(httpx.ReadError("reset"), "resent")
    settings = ExactlyOnce(recheck_after=1.0, listed_within=lambda key: 10.0)
    assert await call(mode, guard(clock, exactly_once=settings), peer, reader) == "resent"
    assert clock.now() >= 10.0
    assert len(reader.asked) > 1


@LOOKUPS
async def test_an_agent_known_to_answer_with_messages_is_not_resent(
    mode: str, clock: FakeClock
) -> None:
    """Once the agent answered a message with a Message, nothing found proves nothing."""
    g = guard(clock, exactly_once=CONTRACT)
    g.facts("agent").answers_with_messages = True
    peer = Peer(httpx.ReadError("reset"), "resent")
    reader = make(mode, page(task("t-9", ("other", True))))
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, g, peer, reader, peer="agent")
    assert peer.calls == 1
    assert "answers messages with a Message" in caught.value.why


@LOOKUPS
async def test_an_agent_advertising_deduplication_is_resent_at_once(
    mode: str, clock: FakeClock
) -> None:
    """An agent known to deduplicate (card and answers say so) is resent without a look-up."""
    hook = RecordingHook()
    g = guard(clock, hooks=[hook])
    facts = g.facts("agent")
    facts.deduplicates, facts.dedupe_ttl, facts.dedupe_confirmed = True, 60.0, True
    reader = make(mode, page())
    peer = Peer(httpx.ReadError("reset"), "resent")
    assert await call(mode, g, peer, reader, peer="agent") == "resent"
    assert reader.asked == []
    assert hook.resolutions == ["deduplicating"]


@LOOKUPS
async def test_the_second_look_never_waits_past_the_deadline(mode: str, clock: FakeClock) -> None:
    """A recheck pause longer than the time left ends the look-up, unslept."""
    reader = make(mode, page(task("t-9", ("other", True))))
    g = guard(clock, deadline=2.0, exactly_once=ExactlyOnce(recheck_after=8.0))
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, g, Peer(), reader)
    assert "deadline" in caught.value.why
    assert all(seconds < 2.0 for seconds in clock.sleeps)
    assert clock.now() < 2.0


@LOOKUPS
async def test_a_full_outage_costs_about_one_request_per_call(mode: str, clock: FakeClock) -> None:
    """Every answer lost, every look-up read failing: once the budget is spent, one each."""
    budget = RetryBudget(clock=clock)
    g = guard(clock, budget=budget, max_attempts=3)
    requests = 0
    calls = 500
    for _ in range(calls):
        reader = make(mode, httpx.ConnectError("down"))
        peer = Peer()
        with pytest.raises(OutcomeUnknown):
            await call(mode, g, peer, reader)
        requests += peer.calls + len(reader.asked)
    assert requests / calls <= 1.2


async def test_run_reads_follows_a_task_until_it_settles(clock: FakeClock) -> None:
    """follow_task through run_reads: GetTask between growing pauses, until settled."""
    reader = Reader(task("t", settled=False), task("t", settled=True))
    g = guard(clock)
    settings = ExactlyOnce(poll_initial=1.0, poll_max=2.0)
    result = g.run_reads(
        follow_task(task("t", settled=False), settings, reader.view), reader.ask, peer="p"
    )
    assert result == task("t", settled=True)
    assert clock.sleeps == [1.0, 2.0]


async def test_arun_reads_ends_a_wait_at_the_deadline(clock: FakeClock) -> None:
    """A wait that would cross the deadline ends there, with the latest task read."""
    reader = AsyncReader(task("t", settled=False))
    g = guard(clock)
    result = await g.arun_reads(
        follow_task(task("t", settled=False), ExactlyOnce(), reader.view),
        reader.ask,
        peer="p",
        deadline_at=3.0,
        wait=True,
    )
    assert result == task("t", settled=False)
    assert clock.now() < 3.0


@MODES
async def test_a_wait_retries_lost_reads_until_the_task_settles(
    mode: str, clock: FakeClock
) -> None:
    """Three lost GetTask answers do not end a wait early: it reads on until settled."""
    lost = httpx.ReadError("reset")
    reader = make(mode, lost, lost, lost, task("t", settled=True))
    g = guard(clock)
    search = follow_task(task("t", settled=False), ExactlyOnce(), reader.view)
    if mode == "sync":
        result = g.run_reads(search, reader.ask, peer="p", deadline_at=30.0, wait=True)
    else:
        result = await g.arun_reads(search, reader.ask, peer="p", deadline_at=30.0, wait=True)
    assert result == task("t", settled=True)
    assert len(reader.asked) == 4


async def test_a_wait_without_a_deadline_gives_up_after_its_timeout(clock: FakeClock) -> None:
    """Reads failing for ExactlyOnce.timeout end a wait that has no deadline (the latest)."""
    reader = Reader(httpx.ReadError("reset"))
    g = guard(clock, exactly_once=ExactlyOnce(timeout=20.0))
    result = g.run_reads(
        follow_task(task("t", settled=False), g.exactly_once, reader.view),
        reader.ask,
        peer="p",
        wait=True,
    )
    assert result == task("t", settled=False)
    assert 20.0 <= clock.now() < 30.0


@LOOKUPS
async def test_answered_is_told_a_success_and_never_breaks_it(
    mode: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """CallShape.answered sees the successful answer; what it raises is logged, not raised."""
    seen: list[Any] = []

    def answered(value: Any) -> None:
        seen.append(value)
        raise RuntimeError("a door's bug")

    shape = CallShape("SendMessage", answered=answered)
    g = guard(clock)
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors"):
        if mode == "sync":
            result = g.begin(peer=None, shape=shape).run(lambda: "ok")
        else:
            result = await g.begin(peer=None, shape=shape).arun(Peer("ok").acall)
    assert result == "ok"
    assert seen == ["ok"]
    assert "answered failed" in caplog.text


def test_facts_are_kept_per_peer(clock: FakeClock) -> None:
    """The same facts object per peer; another peer has its own."""
    g = guard(clock)
    g.facts("a").unlisted = True
    assert g.facts("a").unlisted
    assert not g.facts("b").unlisted


CARD = {
    "capabilities": {
        "extensions": [{"uri": "urn:a2a-client-errors:ext:deduplicate:v1", "params": {"ttl": 60}}]
    }
}


@LOOKUPS
async def test_a_card_advertising_deduplication_resends_without_a_search(
    mode: str, clock: FakeClock
) -> None:
    """The card read first says it deduplicates, its answers confirmed it: resent, no search."""
    hook = RecordingHook()
    g = guard(clock, hooks=[hook])
    g.facts("agent").dedupe_confirmed = True  # an answer carried the extension's mark
    reader = make(mode, page(), card=CARD)
    peer = Peer(httpx.ReadError("reset"), "resent")
    assert await call(mode, g, peer, reader, peer="agent") == "resent"
    assert (reader.cards, reader.asked) == (1, [])
    assert hook.resolutions == ["deduplicating"]
    assert g.facts("agent").deduplicates


@LOOKUPS
async def test_a_card_alone_does_not_allow_a_resend(mode: str, clock: FakeClock) -> None:
    """A card claiming deduplication no answer confirmed (a stale card): searched, not resent."""
    hook = RecordingHook()
    g = guard(clock, hooks=[hook])
    reader = make(mode, page(task("t-1", (MID, True))), card=CARD)
    peer = Peer(httpx.ReadError("reset"), "resent")
    assert await call(mode, g, peer, reader, peer="agent") == "answer of t-1"
    assert peer.calls == 1
    assert hook.resolutions == ["found"]
    assert g.facts("agent").deduplicates
    assert g.facts("agent").dedupe_ttl == 60.0


@LOOKUPS
async def test_a_resend_past_the_advertised_ttl_is_not_made(mode: str, clock: FakeClock) -> None:
    """A confirmed deduplication covers a resend only inside its ttl: past it, looked up."""
    hook = RecordingHook()
    g = guard(clock, hooks=[hook])
    facts = g.facts("agent")
    facts.deduplicates, facts.dedupe_ttl, facts.dedupe_confirmed = True, 2.0, True
    facts.card_read = True
    slow = Peer(httpx.ReadError("reset"), "resent")

    def late() -> object:
        clock.advance(4.0)  # the work took longer than the agent keeps its records
        return slow()

    async def alate() -> object:
        return late()

    reader = make(mode, page(task("t-1", (MID, True))))
    shape = CallShape("SendMessage", sent=reader.sent, lookup=reader)
    if mode == "sync":
        result = g.begin(peer="agent", shape=shape).run(late)
    else:
        result = await g.begin(peer="agent", shape=shape).arun(alate)
    assert result == "answer of t-1"
    assert slow.calls == 1
    assert hook.resolutions == ["found"]


@LOOKUPS
async def test_the_card_is_read_once_per_peer(mode: str, clock: FakeClock) -> None:
    """A card that says nothing is not read again: the look-up searches."""
    g = guard(clock)
    for _ in range(2):
        reader = make(mode, page(task("t-1", (MID, True))), card={"capabilities": {}})
        assert await call(mode, g, Peer(), reader, peer="agent") == "answer of t-1"
    assert reader.cards == 0
    assert g.facts("agent").card_read


@LOOKUPS
async def test_a_deduplicating_agent_out_of_attempts_is_searched(
    mode: str, clock: FakeClock
) -> None:
    """Its card says it deduplicates, but no attempt is left: the search finds the task."""
    hook = RecordingHook()
    g = guard(clock, hooks=[hook], max_attempts=1)
    reader = make(mode, page(task("t-1", (MID, True))), card=CARD)
    assert await call(mode, g, Peer(), reader, peer="agent") == "answer of t-1"
    assert hook.resolutions == ["found"]
    assert g.facts("agent").deduplicates


class PlainSteps(StepsReader):
    """A door's ReadSteps written wrong: ``asking`` or ``finding`` returns a plain value."""

    def __init__(self, script: Reader, *, wrong: str) -> None:
        super().__init__(script, sender_async=False)
        self.wrong = wrong

    def asking(self, query: Any, timeout: float | None) -> Any:
        """A dict in place of a generator when ``asking`` is the wrong one."""
        if self.wrong == "asking":
            return {"id": "t-1", "status": {"state": "TASK_STATE_COMPLETED"}}
        return super().asking(query, timeout)

    def finding(self, raw: Any) -> Any:
        """The answer itself in place of a generator when ``finding`` is the wrong one."""
        if self.wrong == "finding":
            return {"task": raw}
        return super().finding(raw)


@pytest.mark.parametrize("wrong", ["asking", "finding"])
@pytest.mark.parametrize("mode", ["steps", "asteps"])
async def test_steps_that_are_no_generator_fail_the_look_up(
    wrong: str, mode: str, clock: FakeClock
) -> None:
    """A plain value is never carried out as effects: the look-up fails, nothing is resent."""
    reader = PlainSteps(Reader(page(task("t-1", (MID, True)))), wrong=wrong)
    peer = Peer(httpx.ReadError("reset"), "resent")
    with pytest.raises(OutcomeUnknown) as caught:
        await call(mode, guard(clock), peer, reader, peer="agent")
    assert peer.calls == 1
    assert "TypeError" in caught.value.why
