"""The journal's steps of a guarded call: a send recorded before its first byte, closed at its end.

A send the Guard's journal records is run by `JournalSteps.journaled` from its start: the
record is claimed before the first attempt (a `Record` effect), the call's steps
(`a2a_client_errors._engine_decide.DecisionCore.steps`) run under it, and it is closed with
what the call ended in. A messageId that already has a record makes no second first attempt:
its task is read back, its live sender waited for, or a send nobody holds taken over and
looked up (`JournalSteps.recovering` comes back to one without a call). Like the decision
core, the steps only yield effects; the drivers (`a2a_client_errors._engine`) carry them out.

A slot-less part of `GuardedCall`, on the call's state and its decision core.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._effects import Record, Sleep
from a2a_client_errors._engine_decide import NO_LOOKUP, DecisionCore
from a2a_client_errors._failures import (
    AlreadySent,
    CallFailed,
    JournalUnavailable,
    OutcomeUnknown,
    RequestMismatch,
)
from a2a_client_errors._journal import (
    Entry,
    JournalError,
    JournalRecord,
    Recovery,
    State,
    own_closes,
    task_made,
)
from a2a_client_errors._lookup import (
    ANOTHER_TASK,
    READERS,
    Deduplicates,
    Found,
    GetTaskQuery,
    NotFound,
    Unanswered,
    Unresolved,
    same_task,
)
from a2a_client_errors._policy import Decision, GiveUp
from a2a_client_errors._reasons import Action
from a2a_client_errors.hooks import JournalEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from a2a_client_errors._engine_state import Configured, Effect
    from a2a_client_errors._lookup import LookupResult, Query, TaskView

__all__ = ["JournalSteps"]

_CANCELLED: Final = "cancelled before it was sent"
_INTERRUPTED: Final = "the call was interrupted: its outcome is unknown"
_NAMED_NOTHING: Final = "its answer named no task: to be looked up"
_STILL_SENDING: Final = "another process is still sending it, and the deadline came"


class JournalSteps(DecisionCore):
    """The journal's steps of a call (`journaled`, `recovering`), around its decision core."""

    __slots__ = ()

    def journal_entry(self) -> Entry | None:
        """The journal's entry of this call (a send), under a Guard that has a journal."""
        if self.entry_of is not None and self.describe is not None:
            return self.entry_of()  # the rest of the shape is read only if a decision needs it
        self.know()
        shape = self.shape
        return shape.entry if shape.makes_work else None

    def journaled(self, entry: Entry) -> Generator[Effect, Any, Any]:
        """A send the journal records: claimed before its first byte, closed with its end.

        A messageId that has a record makes no second first attempt (`_recorded`). A journal
        that cannot record the send fails the call before anything is sent.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (set together with leases)
        assert keeper is not None  # noqa: S101
        owner = keeper.owner
        self.entry = entry

        def claim() -> tuple[JournalRecord, bool]:
            own_closes(entry.message_id)  # this process's own close of it, if pending
            return journal.claim(entry, owner)

        def undo(claimed: tuple[JournalRecord, bool]) -> None:
            if claimed[1]:  # cancelled while claiming: nothing was sent under the claim
                journal.settle(entry.message_id, owner, State.REFUSED, note=_CANCELLED)

        try:
            record, mine = yield Record(claim, undo)
        except JournalError as exc:
            raise self._unavailable(exc) from exc
        if mine:
            keeper.hold()
            self.journal_record = record
            self._tell_journal("recorded", record)
        else:
            found = yield from self._known(entry, record, claim)
            if found is not None:
                return self._answered(found)
        return (yield from self._sent())

    def _known(
        self, entry: Entry, record: JournalRecord, claim: Callable[[], tuple[JournalRecord, bool]]
    ) -> Generator[Effect, Any, Found | None]:
        """`_recorded`, its failure told as the call's end; an interruption lets go of it."""
        try:
            return (yield from self._recorded(entry, record, claim))
        except CallFailed as failure:
            if failure.record is None:
                self._ended(failure)
            raise
        except BaseException:
            self._abandon()  # interrupted while it held a record it took over
            raise

    def _sent(self) -> Generator[Effect, Any, Any]:
        """The send of a record this call holds: its attempts, then its close."""
        try:
            outcome = yield from self.attempting()
            value = yield from self.steps(outcome)
        except CallFailed as failure:
            yield from self._close_failed(failure)
            raise
        except BaseException:
            self._abandon()  # interrupted: left open for a look-up, held by nobody
            raise
        yield from self._close(value)
        return value

    def _recorded(
        self, entry: Entry, record: JournalRecord, claim: Callable[[], tuple[JournalRecord, bool]]
    ) -> Generator[Effect, Any, Found | None]:
        """A messageId already recorded: its answer (`Found`), or None when it goes out now.

        A task recorded is read back (`_replay`); a live sender is waited for; a send nobody
        holds (its sender died, or its outcome was left unknown) is taken over and looked up
        (`_take_over`). It goes out only as the claim of a record closed as refused
        meanwhile, or where the agent's word allows a resend.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (set together with leases)
        assert keeper is not None  # noqa: S101
        self.know()  # its look-up, to read back or find what the record names
        owner = keeper.owner
        message_id = entry.message_id
        if record.digest != entry.digest:
            self._tell_journal("mismatch", record)
            raise RequestMismatch(self.operation, record)
        pause = guard.exactly_once.poll_initial
        waited = False
        while True:
            mine = False
            try:
                if record.state is State.TASK:
                    return (yield from self._replay(record))
                if record.state is State.MESSAGE:
                    self._tell_journal("replayed", record)
                    raise AlreadySent(self.operation, record)
                if record.state is State.OPEN and not record.lapsed:  # a live sender
                    if not waited:
                        waited = True
                        self._tell_journal("waited", record)
                    if self.deadline_at is not None and guard.clock() + pause > self.deadline_at:
                        raise self._unknown_recorded(record, _STILL_SENDING)
                    yield Sleep(pause)
                    pause = min(pause * 2, guard.exactly_once.poll_max)
                    latest = yield Record(lambda: journal.get(message_id))
                elif record.state is State.OPEN:
                    taken = yield Record(lambda: journal.take_over(message_id, owner))
                    if taken is not None:
                        keeper.hold()
                        self.journal_record = taken
                        self._tell_journal("took_over", taken)
                        # The latest its sender could have sent: when its lease lapsed.
                        return (yield from self._take_over(taken, record.lease_until))
                    latest = yield Record(lambda: journal.get(message_id))
                else:
                    latest = None
                if latest is None:  # refused (or gone) meanwhile: a new first attempt
                    latest, mine = yield Record(claim)
            except JournalError as exc:
                raise self._unavailable(exc) from exc
            if mine:
                keeper.hold()
                self.journal_record = latest
                self._tell_journal("recorded", latest)
                return None
            record = latest

    def _replay(self, record: JournalRecord) -> Generator[Effect, Any, Found]:
        """The task a record holds, read back (settled as a blocking send answers)."""
        lookup = self.shape.lookup
        if lookup is not None and record.made:
            search = _read_task(record.made, lookup.view) if isinstance(lookup, READERS) else None
            result = yield from self.looking(lookup, self._look_until(), search)
            if isinstance(result, Found):
                self._tell_journal("replayed", record)
                return result
        self._tell_journal("replayed", record)
        raise AlreadySent(self.operation, record)

    def _take_over(
        self, record: JournalRecord, held_until: float
    ) -> Generator[Effect, Any, Found | None]:
        """A send nobody holds, taken over: found, resent on the agent's word, or unknown.

        ``held_until``: see `_look_recorded`.
        """
        guard = self.guard
        self.maybe_processed = True
        wall = guard.exactly_once.wall_clock()
        if guard.exactly_once.deduplicates(self.peer) or guard.facts(
            self.agent_key()
        ).dedupe_covers(wall - record.started):
            return None  # the agent's deduplication covers the resend
        self.resends = True
        result = yield from self._look_recorded(record, held_until)
        if isinstance(result, Found):
            yield from self._close(result.value)
            return result
        if isinstance(result, (NotFound, Deduplicates)):
            return None  # the agent's word (its listing contract, its deduplication)
        why = result.why
        yield from self._write_close(State.OPEN, None, why)
        raise self._unknown_recorded(self.journal_record or record, why)

    def recovering(self, record: JournalRecord) -> Generator[Effect, Any, Recovery]:
        """Come back to an open record: take it over and look its task up; never send.

        Found: the record is closed with the task (`Recovery` ``found``). Otherwise it is
        left open, held by nobody: ``unknown``, or ``absent`` where the agent's word says
        the message made nothing (its next send then goes out). A record a live sender
        holds is left alone (``held``).
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        assert journal is not None  # noqa: S101 (recovered only with a journal)
        assert keeper is not None  # noqa: S101
        owner = keeper.owner
        message_id = record.message_id
        try:
            taken = yield Record(lambda: journal.take_over(message_id, owner))
        except JournalError as exc:
            raise self._unavailable(exc) from exc
        if taken is None:
            return Recovery(record, "held", why="a live sender holds it, or it was closed")
        keeper.hold()
        self.entry = Entry(message_id, taken.digest, taken.peer, taken.context_id, taken.task_id)
        self.journal_record = taken
        self.maybe_processed = True
        try:
            result = yield from self._look_recorded(taken, record.lease_until)
        except BaseException:
            self._abandon()  # interrupted: left open, held by nobody
            raise
        if isinstance(result, Found):
            yield from self._close(result.value)
            closed = self.journal_record or taken
            self._tell_journal("recovered", closed)
            return Recovery(closed, "found", result.value)
        if isinstance(result, (NotFound, Deduplicates)):
            why = "the agent's word says it made nothing: its next send goes out"
            yield from self._write_close(State.OPEN, None, why)
            return Recovery(self.journal_record or taken, "absent", why=why)
        yield from self._write_close(State.OPEN, None, result.why)
        return Recovery(self.journal_record or taken, "unknown", why=result.why)

    def _look_recorded(
        self, record: JournalRecord, held_until: float
    ) -> Generator[Effect, Any, LookupResult]:
        """Look up what a recorded send made, drawing on the look-up allowance.

        ``held_until`` is when the record stopped being held (its last sender's lease
        lapsed, or it was released): the latest the message could have been sent.
        """
        lookup = self.shape.lookup
        if lookup is None:
            return NO_LOOKUP
        guard = self.guard
        guard.allowance_for(self.peer).deposit()
        search = None
        if isinstance(lookup, READERS):
            search = self.search(lookup, record.sent, lambda: _since(guard, held_until))
        result: LookupResult = yield from self.looking(lookup, self._look_until(), search)
        return result

    def _look_until(self) -> float:
        """When a look-up ends: the deadline, or ``ExactlyOnce.timeout`` from now."""
        if self.deadline_at is not None:
            return self.deadline_at
        return self.guard.clock() + self.guard.exactly_once.timeout

    def _close(self, value: Any) -> Generator[Effect, Any, None]:
        """Close the record with what the answer made (a task, a Message; unknown: left open)."""
        made_of = self.shape.made or task_made
        try:
            made = made_of(value)
        except Exception:  # an answer its reader cannot read tells nothing
            made = None
        if made is None:
            yield from self._write_close(State.OPEN, None, _NAMED_NOTHING)
        elif made.task_id is None:
            yield from self._write_close(State.MESSAGE, None, "")
        else:
            yield from self._write_close(State.TASK, made.task_id, "")

    def _close_failed(self, failure: CallFailed) -> Generator[Effect, Any, None]:
        """Close the record of a send that failed: refused, or left open (its outcome unknown)."""
        decision = failure.decision
        summary = decision.action.value
        if decision.reason is not None:
            summary += f" {decision.reason}"
        if decision.give_up is not None:
            summary += f" (gave up: {decision.give_up.value})"
        if isinstance(failure, OutcomeUnknown):
            yield from self._write_close(State.OPEN, None, failure.why or summary)
            failure.journal_record = self.journal_record
        elif failure.maybe_processed:
            yield from self._write_close(State.OPEN, None, f"{summary}: its outcome is unknown")
        else:
            yield from self._write_close(State.REFUSED, None, summary)

    def _write_close(
        self, state: State, made: str | None, note: str
    ) -> Generator[Effect, Any, None]:
        """Write how the send ended: settled before the caller has its answer, released soon.

        A settle (a task, a Message, a refusal) is written before the call returns, so a
        process that dies once its caller has the answer leaves that answer recorded: a
        restart reads it back, whether or not the agent can list its tasks. A settle that
        fails is retried off the caller's path; a release (the outcome unknown) is always
        written off it, by the lease keeper's closer thread, at once.
        """
        guard = self.guard
        journal, keeper = guard.journal, guard.leases
        entry, record = self.entry, self.journal_record
        if journal is None or keeper is None or entry is None or record is None:
            return
        owner = keeper.owner
        message_id = entry.message_id

        def close() -> bool:
            if state is State.OPEN:
                return journal.release(message_id, owner, note)
            return journal.settle(message_id, owner, state, made=made, note=note)

        self.journal_record = record = replace(
            record, state=state, made=made, note=note, owner=None, lapsed=state is State.OPEN
        )
        self.entry = None  # closed once
        then = None
        if self.guard.observers["on_journal"]:
            kind = "released" if state is State.OPEN else "settled"

            def then(failed: BaseException | None) -> None:
                if failed is None:
                    self._tell_journal(kind, record)
                else:
                    self._tell_journal("failed", record, str(failed))

        if state is State.OPEN:
            keeper.close_soon(message_id, close, then)  # written at once, off the caller's path
            return

        def settle() -> None:
            """The settle, here; one that fails goes to the closer thread (retried there)."""
            try:
                close()
            except Exception:
                keeper.close_soon(message_id, close, then)
                return
            keeper.drop()
            if then is not None:
                then(None)  # observers are told through `Observers.tell`, which never raises

        yield Record(settle)  # it never raises; in arun its thread finishes it if cancelled

    def _abandon(self) -> None:
        """The call was interrupted while it held its record: left open, held by nobody."""
        guard = self.guard
        journal, keeper, entry = guard.journal, guard.leases, self.entry
        if journal is None or keeper is None or entry is None or self.journal_record is None:
            return
        self.entry = None
        owner, message_id = keeper.owner, entry.message_id
        keeper.close_soon(message_id, lambda: journal.release(message_id, owner, _INTERRUPTED))

    def _ended(self, failure: CallFailed) -> None:
        """A journaled call that ends before any attempt: told, and its record made."""
        guard = self.guard
        self.decision = failure.decision
        if guard.observers["on_give_up"]:
            guard.observers.tell("on_give_up", self.event_for(failure.decision, guard.clock()))
        failure.record = self.end()

    def _answered(self, found: Found) -> Any:
        """A journaled call answered by what its record names (read back, or found)."""
        guard = self.guard
        decision = self.decision = Decision(
            Action.OK, operation=self.operation, attempt=self.attempt
        )
        if guard.observers["on_decision"]:
            guard.observers.tell("on_decision", self.event_for(decision, guard.clock()))
        if not self.holds_end:
            self.end()
        return found.value

    def _unavailable(self, exc: JournalError) -> JournalUnavailable:
        """The journal failed before anything was sent: the call's failure, told and recorded."""
        guard = self.guard
        if guard.observers["on_journal"]:
            entry = self.entry
            event = JournalEvent(
                "failed", "" if entry is None else entry.message_id, self.peer, None, str(exc)
            )
            guard.observers.tell("on_journal", event)
        failure = JournalUnavailable(self.operation, str(exc))
        self._ended(failure)
        return failure

    def _unknown_recorded(self, record: JournalRecord, why: str) -> OutcomeUnknown:
        """`OutcomeUnknown` for a recorded send whose end could not be learnt here."""
        decision = Decision(Action.RETRY, operation=self.operation, give_up=GiveUp.OUTCOME_UNKNOWN)
        self.decision = decision
        self.why = why
        failure = OutcomeUnknown(decision, attempts=0, sent=record.sent, why=why)
        failure.journal_record = record
        self._ended(failure)
        return failure

    def _tell_journal(self, kind: str, record: JournalRecord, why: str = "") -> None:
        observers = self.guard.observers
        if observers["on_journal"]:
            event = JournalEvent(kind, record.message_id, self.peer, record.state.value, why)
            observers.tell("on_journal", event)


def _since(guard: Configured, held_until: float) -> float:
    """Seconds since a recorded send was last held (the latest its sender could have sent)."""
    return guard.exactly_once.wall_clock() - held_until


def _read_task(
    task_id: str, view: Callable[[Any], TaskView]
) -> Generator[Query, Any, LookupResult]:
    """Read the task a journal's record holds: `Found`, or `Unresolved` when it cannot be."""
    task = yield GetTaskQuery(task_id)
    if task is None or isinstance(task, Unanswered):
        return Unresolved(f"task {task_id!r} could not be read back")
    if same_task(task, task_id, view) is None:
        return ANOTHER_TASK
    return Found(task)
