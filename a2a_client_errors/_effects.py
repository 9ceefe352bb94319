"""The effects of the one machine: what a guarded call, and the look-ups in it, ask to be done.

A call's steps (`a2a_client_errors._engine.GuardedCall.steps`) and the reads of a look-up or
a wait (`a2a_client_errors._lookup.reading`) are sans-IO generators that yield these and are
sent what came of them; one driver pair (``drive``/``adrive`` in `a2a_client_errors._engine`)
carries them all out, with sync or async I/O:

* ``ADMIT``: ask the peer's breaker (an `Admission`);
* `Attempt`: make one attempt (an `AttemptOutcome`), cut short at ``timeout`` in ``adrive``;
* ``SPEND``: take one retry token of the peer's budget (a bool);
* `Sleep`: wait before a retry, or before a read is made again;
* ``YIELD``: give the event loop a turn before a retry (``adrive``; nothing in ``drive``);
* `Ask`: make one read of a look-up (the answer, or `Failed`: what the read raised);
* `Exchange`: carry out one of a door's own needs (send a read's request, close a response)
  through the one sender the door gives: a door whose reads are sans-IO steps
  (`a2a_client_errors._lookup.ReadSteps`) yields these, and no driver of its own;
* ``MAY_READ``: ask the peer's look-up allowance whether a read may be made (a bool);
* ``CHARGE``: charge a read the agent left unanswered to that allowance;
* `Look`: call a look-up that is a plain callable (a `LookupResult`);
* `Resolve`: the value a look-up found, awaited in ``adrive`` when it is an awaitable;
* `Record`: ask the journal, in ``adrive`` from a worker thread;
* and, in a call's steps, the engine's ``FailOver`` (ask the door for the agent's next
  interface) and ``Refresh`` (ask the caller's ``refresh_credentials``), which carry the
  call's decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ADMIT",
    "CHARGE",
    "MAY_READ",
    "SPEND",
    "YIELD",
    "Ask",
    "Attempt",
    "Charge",
    "Effect",
    "Exchange",
    "Failed",
    "Look",
    "MayRead",
    "Record",
    "Resolve",
    "Signal",
    "Sleep",
]


@dataclass(frozen=True, slots=True)
class Attempt:
    """Make one attempt; in ``adrive``, cut it short after ``timeout`` seconds (None: never)."""

    timeout: float | None


@dataclass(frozen=True, slots=True)
class Sleep:
    """Wait ``seconds`` (the Guard's sleep) before going on."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Ask:
    """Make one read: ``ask(query, timeout)``, in at most ``timeout`` seconds (None: no bound).

    The answer is the query's answer, or `Failed` holding what the read raised (a read's
    failure is judged by the reads, never thrown). ``ask`` is the door's
    (`a2a_client_errors._lookup.TaskReader.ask`); it is not part of the effect's equality.
    """

    query: Any  # a GetTaskQuery, a ListTasksQuery or a CardQuery (`a2a_client_errors._lookup`)
    timeout: float | None
    ask: Callable[[Any, float | None], Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Exchange:
    """Carry out ``need`` through the door's sender: ``sender(need)`` (awaited in ``adrive``).

    ``need`` is the door's own (for the httpx transports: a request to send and read within a
    bound, a request to open, a response to close); what ``sender`` raises is thrown into the
    steps that yielded it, which judge it. ``sender`` is not part of the effect's equality.
    """

    need: Any
    sender: Callable[[Any], Any] = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Failed:
    """What a read raised (sent back in place of an answer)."""

    exc: Exception


@dataclass(frozen=True, slots=True)
class MayRead:
    """Ask the peer's look-up allowance whether a read may be made. Answer: a bool."""


@dataclass(frozen=True, slots=True)
class Charge:
    """Charge one read the agent left unanswered to the peer's allowance (answer ignored)."""


@dataclass(frozen=True, slots=True)
class Look:
    """Call a look-up that is a plain callable with the seconds left until ``until``."""

    lookup: Callable[[float | None], Any]
    until: float


@dataclass(frozen=True, slots=True)
class Resolve:
    """``value`` itself, or in ``adrive`` what it resolves to when it is an awaitable."""

    value: Any


@dataclass(frozen=True, slots=True)
class Record:
    """Ask the journal: ``op()``, in ``adrive`` from a worker thread (the store's I/O is sync).

    ``undo`` is called with what ``op`` returned when the call was cancelled while it ran
    (the thread goes on): it takes back a claim nothing will be sent under.
    """

    op: Callable[[], Any]
    undo: Callable[[Any], None] | None = None


class Signal:
    """An effect with nothing to say but its name (``ADMIT``, ``SPEND``, ``YIELD``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ADMIT: Final = Signal("ADMIT")
SPEND: Final = Signal("SPEND")
YIELD: Final = Signal("YIELD")
MAY_READ: Final = MayRead()
CHARGE: Final = Charge()

Effect: TypeAlias = (
    "Attempt | Sleep | Ask | Exchange | MayRead | Charge | Look | Resolve | Record | Signal"
)
"""The effects every part of the machine may yield; a call's steps also yield the engine's
``FailOver`` and ``Refresh`` (`a2a_client_errors._engine_state.Effect`), which carry its
decision."""
