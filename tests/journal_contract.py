"""What every journal store must do (`a2a_client_errors.journal.Journal`), for each store's tests.

A store's test module subclasses `JournalContract` and gives the ``journal`` fixture: a fresh,
empty store whose clock is the ``clock`` fixture (a `FakeClock` on the wall's scale), so
leases lapse when the test moves the clock, never by waiting.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from a2a_client_errors.journal import Entry, Journal, JournalRecord, State, entry_for
from a2a_client_errors.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import Callable

START = 1_800_000_000.0


def renewed_while_closed(
    journal: Journal, waited: threading.Event, inside: threading.Event, leave: threading.Event
) -> list[int | BaseException]:
    """Renew ``"a"``'s leases in a thread named ``renewer``, closing the journal meanwhile.

    The renewer is held (by the test) inside its use of its connection until ``leave`` is
    set: set here once ``inside`` is, and the closing thread waits for that connection
    (``waited``, from `watched_connections`). Returns what the renewal returned or raised.
    """
    renewed: list[int | BaseException] = []

    def renew() -> None:
        try:
            renewed.append(journal.renew("a"))
        except BaseException as exc:  # what the test reports, not a crash
            renewed.append(exc)

    renewer = threading.Thread(target=renew, name="renewer")
    renewer.start()
    assert inside.wait(30)  # inside its use of its connection
    closer = threading.Thread(target=journal.close, name="closer")
    closer.start()
    assert waited.wait(30)  # the close waits for that connection
    leave.set()
    renewer.join(30)
    closer.join(30)
    assert not renewer.is_alive()
    assert not closer.is_alive()
    return renewed


def watched_connections(base: type[Any]) -> Any:
    """A subclass of a store's `HeldConnection` whose ``waited`` tells of a wait for the renewer.

    ``waited`` is set when a thread other than the one named ``renewer`` waits for the
    connection that thread uses (to close it, say), whether or not the wait ends at once.
    """
    waited = threading.Event()

    class Watched(base):  # type: ignore[misc]
        __slots__ = ()

        def __init__(self, conn: Any) -> None:
            super().__init__(conn)
            own, lock = threading.current_thread(), self.lock

            class Lock:
                def acquire(self) -> bool:
                    if own.name == "renewer" and threading.current_thread() is not own:
                        waited.set()
                    return bool(lock.acquire())

                def release(self) -> None:
                    lock.release()

                __enter__ = acquire

                def __exit__(self, *exc: object) -> None:
                    lock.release()

            self.lock = Lock()  # type: ignore[misc]

    Watched.waited = waited
    return Watched


def entry(message_id: str = "m-1", *, body: str = "hello", peer: str = "http://a") -> Entry:
    """The journal's entry for a small user message (contextId ``c``)."""
    found = entry_for(
        {"messageId": message_id, "role": "user", "parts": [{"text": body}], "contextId": "c"},
        peer,
    )
    assert found is not None
    return found


@pytest.fixture(name="clock")
def clock_fixture() -> FakeClock:
    """A clock on the wall's scale (seconds since the epoch) that moves only when told."""
    return FakeClock(start=START)


class JournalContract:
    """The behaviour every store shares; subclasses provide the ``journal`` fixture."""

    def test_is_a_journal(self, journal: Journal) -> None:
        """The store is a `Journal` (the protocol, checked at run time) with a lease."""
        assert isinstance(journal, Journal)
        assert journal.lease > 0

    def test_first_claim_records_the_send_leased_to_its_owner(
        self, journal: Journal, clock: FakeClock
    ) -> None:
        """A first claim is the owner's: open, leased from now, attempt 1, read back as written."""
        record, mine = journal.claim(entry(), "alice")
        assert mine
        assert record.state is State.OPEN
        assert record.owner == "alice"
        assert not record.lapsed
        assert record.started == pytest.approx(START)
        assert record.lease_until == pytest.approx(START + journal.lease)
        assert record.context_id == "c"
        assert record.attempts == 1
        assert journal.get("m-1") == record

    def test_a_claim_is_the_record_read_back(self, journal: Journal, clock: FakeClock) -> None:
        """What a claim returns is what is read back: its ids, times and attempts, anew too."""
        message = {"messageId": "m-9", "role": "user", "parts": [{"text": "x"}]}
        sent = entry_for({**message, "contextId": "c-9", "taskId": "t-9"}, "http://a")
        assert sent is not None
        clock.advance(0.1)  # a time whose sum with the lease is not a round number
        record, mine = journal.claim(sent, "alice")
        assert mine
        assert (record.context_id, record.task_id) == ("c-9", "t-9")
        assert journal.get("m-9") == record
        journal.settle("m-9", "alice", State.REFUSED)
        clock.advance(0.7)
        again, mine = journal.claim(sent, "bob")
        assert mine
        assert again.attempts == 2
        assert journal.get("m-9") == again

    def test_second_claim_gets_the_record_that_stands(self, journal: Journal) -> None:
        """A second claim gets the first's record, not a claim of its own."""
        first, _ = journal.claim(entry(), "alice")
        second, mine = journal.claim(entry(), "bob")
        assert not mine
        assert second.owner == "alice"
        assert second.digest == first.digest

    def test_another_body_keeps_its_own_digest(self, journal: Journal) -> None:
        """A claim with another body gets the record that stands, with the first body's digest."""
        journal.claim(entry(), "alice")
        other = entry(body="something else")
        record, mine = journal.claim(other, "bob")
        assert not mine
        assert record.digest != other.digest

    def test_lease_lapses_unless_renewed(self, journal: Journal, clock: FakeClock) -> None:
        """A renewed lease holds; one not renewed lapses, and the record is unknown."""
        journal.claim(entry(), "alice")
        clock.advance(journal.lease * 0.9)
        assert journal.renew("alice") == 1
        clock.advance(journal.lease * 0.9)
        record = journal.get("m-1")
        assert record is not None
        assert not record.lapsed
        clock.advance(journal.lease * 0.2)
        record = journal.get("m-1")
        assert record is not None
        assert record.lapsed
        assert record.unknown

    def test_renew_touches_only_the_owners_open_records(self, journal: Journal) -> None:
        """Renewal counts only the open records the owner holds."""
        journal.claim(entry("a"), "alice")
        journal.claim(entry("b"), "alice")
        journal.claim(entry("c"), "bob")
        journal.settle("b", "alice", State.TASK, made="t")
        assert journal.renew("alice") == 1
        assert journal.renew("nobody") == 0

    def test_take_over_only_what_nobody_holds(self, journal: Journal, clock: FakeClock) -> None:
        """Only a record nobody holds (a lapsed lease) is taken over, once: an attempt more."""
        journal.claim(entry(), "alice")
        assert journal.take_over("m-1", "bob") is None  # alice's lease is live
        clock.advance(journal.lease + 1)
        taken = journal.take_over("m-1", "bob")
        assert taken is not None
        assert taken.owner == "bob"
        assert taken.attempts == 2
        assert not taken.lapsed
        assert journal.take_over("m-1", "carol") is None  # bob holds it now
        assert journal.take_over("absent", "bob") is None

    def test_released_record_is_open_held_by_nobody(self, journal: Journal) -> None:
        """Only its owner releases a record: open, held by nobody, noted, free to take over."""
        journal.claim(entry(), "alice")
        assert not journal.release("m-1", "bob")  # not bob's
        assert journal.release("m-1", "alice", "the answer was lost")
        record = journal.get("m-1")
        assert record is not None
        assert record.state is State.OPEN
        assert record.owner is None
        assert record.unknown
        assert record.note == "the answer was lost"
        taken = journal.take_over("m-1", "bob")
        assert taken is not None
        assert taken.owner == "bob"

    def test_settle_closes_what_the_owner_holds(self, journal: Journal) -> None:
        """Only its owner settles an open record; a closed one stands against claims, take-overs."""
        journal.claim(entry(), "alice")
        assert not journal.settle("m-1", "bob", State.TASK, made="t-1")
        assert journal.settle("m-1", "alice", State.TASK, made="t-1", note="ok")
        record = journal.get("m-1")
        assert record is not None
        assert record.state is State.TASK
        assert record.made == "t-1"
        assert record.owner is None
        assert record.closed_at is not None
        assert not journal.settle("m-1", "alice", State.MESSAGE)  # closed already
        assert journal.take_over("m-1", "bob") is None
        again, mine = journal.claim(entry(), "bob")
        assert not mine
        assert again.state is State.TASK

    def test_refused_record_is_claimed_anew(self, journal: Journal, clock: FakeClock) -> None:
        """A record closed as refused is replaced by the next claim, as attempt 2, from now."""
        journal.claim(entry(), "alice")
        journal.settle("m-1", "alice", State.REFUSED, note="INVALID_PARAMS")
        clock.advance(5)
        fixed = entry(body="fixed")
        record, mine = journal.claim(fixed, "bob")
        assert mine
        assert record.owner == "bob"
        assert record.digest == fixed.digest
        assert record.state is State.OPEN
        assert record.started == pytest.approx(START + 5)
        assert record.attempts == 2

    def test_unsettled_lists_open_records_oldest_first(
        self, journal: Journal, clock: FakeClock
    ) -> None:
        """Open records are listed oldest first, closed ones left out, at most ``limit``."""
        for name in ("c", "a", "b"):
            journal.claim(entry(name), "alice")
            clock.advance(1)
        journal.settle("a", "alice", State.MESSAGE)
        listed = journal.unsettled()
        assert [record.message_id for record in listed] == ["c", "b"]
        assert [record.message_id for record in journal.unsettled(limit=1)] == ["c"]

    def test_purge_deletes_closed_records_past_retention(
        self, journal: Journal, clock: FakeClock
    ) -> None:
        """Purge deletes what was closed past retention, never an open record or a recent one."""
        journal.claim(entry("old"), "alice")
        journal.settle("old", "alice", State.TASK, made="t")
        journal.claim(entry("open"), "alice")
        clock.advance(journal.retention + 1)
        journal.claim(entry("new"), "alice")
        journal.settle("new", "alice", State.TASK, made="t2")
        assert journal.purge() == 1
        assert journal.get("old") is None
        assert journal.get("open") is not None  # open records are never deleted
        assert journal.get("new") is not None

    def test_note_is_bounded(self, journal: Journal) -> None:
        """A note is cut to 200 characters."""
        journal.claim(entry(), "alice")
        journal.release("m-1", "alice", "x" * 10_000)
        record = journal.get("m-1")
        assert record is not None
        assert len(record.note) <= 200

    def test_text_is_kept_as_it_is(self, journal: Journal) -> None:
        """Quotes, SQL and characters outside ASCII are kept as they are, in keys and values."""
        odd = "m-\u00e9-'\"; DROP TABLE a2a_sends; --\U0001f600"
        record, mine = journal.claim(entry(odd, peer="http://h/\u00e9"), "o'wner")
        assert mine
        again = journal.get(odd)
        assert again == record
        assert again.peer == "http://h/\u00e9"

    def test_concurrent_claims_give_one_owner(self, journal: Journal) -> None:
        """Eight threads claiming at once: one owner, and the record is theirs."""
        winners: list[str] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(8)

        def claim(name: str) -> None:
            try:
                barrier.wait()
                _, mine = journal.claim(entry(), name)
                if mine:
                    winners.append(name)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=claim, args=(f"o{n}",)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors, errors
        assert len(winners) == 1
        record = journal.get("m-1")
        assert record is not None
        assert record.owner == winners[0]


def roundtrip(journal: Journal, make: Callable[[], Journal]) -> JournalRecord:
    """A record written through one store object, read through another on the same data."""
    journal.claim(entry("shared"), "alice")
    other = make()
    try:
        record = other.get("shared")
    finally:
        other.close()
    assert record is not None
    return record


def every_operation(journal: Journal) -> list[Callable[[], object]]:
    """Each operation of the protocol once, on messageId ``m-1`` (a claim of ``b``)."""
    return [
        lambda: journal.claim(entry("b"), "a"),
        lambda: journal.get("m-1"),
        lambda: journal.renew("a"),
        journal.unsettled,
        journal.purge,
        lambda: journal.take_over("m-1", "a"),
        lambda: journal.settle("m-1", "a", State.TASK),
        lambda: journal.release("m-1", "a"),
    ]
