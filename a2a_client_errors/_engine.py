"""The call engine: every step of a guarded call, decided once; the I/O left to one driver pair.

A call is one `GuardedCall`, made of three parts, each in its own module and each built on
the one below:

* its state (`a2a_client_errors._engine_state.CallState`): the call's slots, what it has
  learnt, and how it ends (its `CallRecord`, its value or its `CallFailed`);
* its decision core (`a2a_client_errors._engine_decide.DecisionCore`): ``steps``, a
  generator that judges each attempt and yields the effects its decisions need
  (`a2a_client_errors._effects`: an admission, an attempt, a spend, a sleep, a look-up's
  reads, a fail-over, a credentials refresh);
* its journal's steps (`a2a_client_errors._engine_journal.JournalSteps`): a send the
  Guard's journal records, claimed before its first attempt and closed with its end, and
  ``recovering``, which comes back to an open record.

Here, `GuardedCall` adds the entry points a door calls, `run` and `arun`: the first attempt
is made directly, and judged; a success ends the call there (no generator, nothing to plan),
anything else goes on through the steps. `drive` and `adrive` carry the effects out, for a
call or for a door's reads outside one (a wait); what they raise (an interrupt, a
cancellation) is thrown into the generator, which frees the breaker's probe and refunds a
retry paid for and never sent. The generator returns the call's value or raises its
`CallFailed`; the hooks are told every decision on the way, and one `CallRecord` when the
call ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar

from a2a_client_errors._breaker import Verdict, admits_async
from a2a_client_errors._effects import (
    ADMIT,
    SPEND,
    Ask,
    Attempt,
    Charge,
    Exchange,
    Failed,
    Look,
    MayRead,
    Record,
    Resolve,
    Sleep,
)
from a2a_client_errors._engine_journal import JournalSteps
from a2a_client_errors._engine_state import (
    NO_SHAPE,
    TESTING,
    AttemptCutShortError,
    AttemptOutcome,
    CallShape,
    Configured,
    Effect,
    FailOver,
    Lookup,
    Onward,
    Refresh,
    failure_for,
    plain_success,
    recording,
    switch_testing,
    tell_record,
)
from a2a_client_errors._lookup import Unresolved
from a2a_client_errors._retry import spends_async

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Generator

    from a2a_client_errors._breaker import Admission
    from a2a_client_errors._lookup import LookupResult

__all__ = [
    "NO_KWARGS",
    "NO_SHAPE",
    "TESTING",
    "AttemptCutShortError",
    "AttemptOutcome",
    "CallShape",
    "GuardedCall",
    "Lookup",
    "Onward",
    "failure_for",
    "never_sent",
    "plain_success",
    "recording",
    "switch_testing",
    "tell_record",
]

R = TypeVar("R")


class GuardedCall(JournalSteps):
    """One guarded call: its state, its decision core, its journal's steps, and `run`/`arun`.

    Made by `Guard.begin`, for doors: fresh per call, shared by nothing. After the call ended,
    ``record`` is its `CallRecord`.
    """

    __slots__ = ()

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        first: AttemptOutcome | None = None,
    ) -> Any:
        """Run the call with sync I/O: ``fn(*args, **kwargs)`` per attempt; return or raise."""
        kwargs = kwargs if kwargs is not None else NO_KWARGS
        if first is None:
            if self.guard.journal is not None:
                entry = self.journal_entry()
                if entry is not None:
                    send = (fn, args, kwargs)
                    return drive(self.journaled(entry), self.guard, self.peer, self, send)
            first = self._first(fn, args, kwargs)
        steps = self.steps(first)
        try:
            effect = next(steps)  # the first attempt judged: a success ends here
        except StopIteration as stop:
            return stop.value
        return drive(steps, self.guard, self.peer, self, (fn, args, kwargs), effect=effect)

    async def arun(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        first: AttemptOutcome | None = None,
    ) -> Any:
        """`run`, awaiting what returns awaitables; the deadline cuts an attempt in flight."""
        kwargs = kwargs if kwargs is not None else NO_KWARGS
        if first is None:
            if self.guard.journal is not None:
                entry = self.journal_entry()
                if entry is not None:
                    send = (fn, args, kwargs)
                    return await adrive(self.journaled(entry), self.guard, self.peer, self, send)
            first = await self._afirst(fn, args, kwargs)
        steps = self.steps(first)
        try:
            effect = next(steps)  # the first attempt judged: a success ends here
        except StopIteration as stop:
            return stop.value
        return await adrive(steps, self.guard, self.peer, self, (fn, args, kwargs), effect=effect)

    def _first(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AttemptOutcome:
        """The first attempt, unless the peer's breaker refuses it (then nothing is sent)."""
        breaker = self.guard.breaker
        if breaker is None:
            return attempt_once(fn, args, kwargs)
        admission = self.admission = breaker.admit(self.peer)
        if not admission.allowed:
            return AttemptOutcome(refused=admission)
        try:
            return attempt_once(fn, args, kwargs)
        except BaseException:  # interrupted: no verdict, and the probe's slot is freed
            self.verdict(Verdict.ABANDONED)
            raise

    async def _afirst(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> AttemptOutcome:
        if self.guard.breaker is not None:
            admission = await self._aadmit()
            if not admission.allowed:
                return AttemptOutcome(refused=admission)
            try:
                return await _aattempt(fn, args, kwargs, self.attempt_time())
            except BaseException:  # cancelled: no verdict, and the probe's slot is freed
                self.verdict(Verdict.ABANDONED)
                raise
        return await _aattempt(fn, args, kwargs, self.attempt_time())

    async def _aadmit(self) -> Admission:
        breaker = self.guard.breaker
        assert breaker is not None  # noqa: S101 (asked only when set)
        admission = (
            await breaker.aadmit(self.peer) if admits_async(breaker) else breaker.admit(self.peer)
        )
        self.admission = admission
        return admission

    def _onward(self, effect: FailOver) -> Onward | Awaitable[Onward | None] | None:
        assert self.fail_over is not None  # noqa: S101 (asked only when given)
        return self.fail_over(effect.decision)


NO_KWARGS: Final[dict[str, Any]] = {}
"""The keyword arguments of an attempt without any (never written to)."""


def never_sent(*args: object, **kwargs: object) -> Any:
    """The attempt of a call that must never send (a recovery): a bug if ever made."""
    msg = "a recovery never sends"
    raise AssertionError(msg)


def attempt_once(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> AttemptOutcome:
    """Call ``fn`` once: its value or the exception it raised (an awaitable: `TypeError`)."""
    try:
        value = fn(*args, **kwargs)
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return AttemptOutcome(exc=exc)
    refuse_awaitable(value, "Guard.call() got an awaitable from fn: use `await guard.acall(...)`")
    return AttemptOutcome(value=value)


async def _aattempt(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    timeout: float | None = None,
) -> AttemptOutcome:
    try:
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await (value if timeout is None else _within(value, timeout))
    except Exception as exc:  # every failure is judged; non-call errors are re-raised there
        return AttemptOutcome(exc=exc)
    return AttemptOutcome(value=value)


async def aattempt_once(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
) -> AttemptOutcome:
    """`attempt_once`, awaiting what ``fn`` returns (cut short after ``timeout`` seconds)."""
    return await _aattempt(fn, args, kwargs if kwargs is not None else NO_KWARGS, timeout)


async def _within(awaitable: Awaitable[Any], timeout: float) -> Any:
    """Await ``awaitable`` for at most ``timeout`` seconds (then `AttemptCutShortError`)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError as exc:
        msg = "the call's deadline cut the attempt short"
        raise AttemptCutShortError(msg) from exc


def refuse_awaitable(value: object, message: str) -> None:
    """Sync code got an awaitable: close it (no "never awaited" warning) and say what to use."""
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):
            close()
        raise TypeError(message)


def _sync_result(value: object) -> bool:
    refuse_awaitable(
        value, "refresh_credentials returned an awaitable: use acall(), or a sync refresh"
    )
    return bool(value)


async def _async_result(value: object) -> bool:
    if inspect.isawaitable(value):
        value = await value
    return bool(value)


async def _in_thread(effect: Record) -> Any:
    """``effect.op()`` in a worker thread; a cancellation meanwhile hands its result to undo."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, contextvars.copy_context().run, effect.op)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        undo = effect.undo
        if undo is not None:

            def undone(done: asyncio.Future[Any]) -> None:
                if not done.cancelled() and done.exception() is None:
                    loop.run_in_executor(None, undo, done.result())

            future.add_done_callback(undone)
        raise


# --- the drivers ------------------------------------------------------------------------------

Send: TypeAlias = "tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]"
"""An attempt: ``fn(*args, **kwargs)``."""
_NOTHING_TO_SEND: Final[Send] = (never_sent, (), NO_KWARGS)


def drive(
    steps: Generator[Effect, Any, R],
    guard: Configured,
    peer: str,
    call: GuardedCall | None = None,
    send: Send = _NOTHING_TO_SEND,
    *,
    effect: Effect | None = None,
) -> R:
    """Carry out ``steps``' effects with sync I/O; return what it returns.

    The one sync driver: a call's steps (``call`` is the call, ``send`` its attempt) or a
    door's reads (`Configured.reads`, with no call), a door's own I/O (`Exchange`) among them.
    What carrying out an effect raises is thrown into ``steps``, but a failed `Ask`, which is
    sent as `Failed`. ``effect`` is the first effect of ``steps`` when the caller took it.
    """
    fn, args, kwargs = send
    try:
        effect = next(steps) if effect is None else effect
        while True:
            reply: Any = None  # the answer of an effect that has none (Sleep, Charge, YIELD)
            try:
                if isinstance(effect, Attempt):
                    reply = attempt_once(fn, args, kwargs)
                elif isinstance(effect, Ask):
                    reply = _ask(effect)
                elif isinstance(effect, Exchange):
                    reply = _exchange(effect)
                elif isinstance(effect, Sleep):
                    guard.sleep(effect.seconds)
                elif isinstance(effect, MayRead):
                    reply = guard.allowance_for(peer).open()
                elif isinstance(effect, Charge):
                    guard.allowance_for(peer).charge()
                elif isinstance(effect, Record):
                    reply = effect.op()
                elif effect is SPEND:
                    reply = call.budget_now().try_spend()  # type: ignore[union-attr]
                elif isinstance(effect, Look):
                    reply = _look(effect, guard)
                elif isinstance(effect, Resolve):
                    reply = effect.value
                elif isinstance(effect, FailOver):
                    reply = call._onward(effect)  # type: ignore[union-attr]
                    refuse_awaitable(reply, "a fail_over that returns an awaitable needs arun()")
                    if reply is not None:
                        fn, args, kwargs = reply.fn, reply.args, reply.kwargs or NO_KWARGS
                        peer = reply.peer  # the call goes on over the next interface
                elif isinstance(effect, Refresh):
                    reply = _sync_result(guard.refresh_credentials(effect.decision))  # type: ignore[misc]
                elif effect is ADMIT:
                    reply = guard.breaker.admit(peer)  # type: ignore[union-attr]
                # YIELD: no loop to yield to
            except BaseException as exc:
                effect = steps.throw(exc)
                continue
            effect = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def adrive(
    steps: Generator[Effect, Any, R],
    guard: Configured,
    peer: str,
    call: GuardedCall | None = None,
    send: Send = _NOTHING_TO_SEND,
    *,
    effect: Effect | None = None,
) -> R:
    """`drive`, awaiting what returns awaitables; the deadline cuts an attempt in flight."""
    fn, args, kwargs = send
    try:
        effect = next(steps) if effect is None else effect
        while True:
            reply: Any = None  # the answer of an effect that has none (Sleep, Charge, YIELD)
            try:
                if isinstance(effect, Attempt):
                    reply = await _aattempt(fn, args, kwargs, effect.timeout)
                elif isinstance(effect, Ask):
                    reply = await _aask(effect)
                elif isinstance(effect, Exchange):
                    reply = await _awaited(effect.sender(effect.need))
                elif isinstance(effect, Sleep):
                    await guard.asleep(effect.seconds)
                elif isinstance(effect, MayRead):
                    reply = guard.allowance_for(peer).open()
                elif isinstance(effect, Charge):
                    guard.allowance_for(peer).charge()
                elif isinstance(effect, Record):
                    reply = await _in_thread(effect)
                elif effect is SPEND:
                    budget = call.budget_now()  # type: ignore[union-attr]
                    reply = await _awaited(
                        budget.atry_spend() if spends_async(budget) else budget.try_spend()
                    )
                elif isinstance(effect, Look):
                    reply = await _alook(effect, guard)
                elif isinstance(effect, Resolve):
                    reply = await _awaited(effect.value)
                elif isinstance(effect, FailOver):
                    reply = await _awaited(call._onward(effect))  # type: ignore[union-attr]
                    if reply is not None:
                        fn, args, kwargs = reply.fn, reply.args, reply.kwargs or NO_KWARGS
                        peer = reply.peer  # the call goes on over the next interface
                elif isinstance(effect, Refresh):
                    reply = await _async_result(guard.refresh_credentials(effect.decision))  # type: ignore[misc]
                elif effect is ADMIT:
                    reply = await call._aadmit()  # type: ignore[union-attr]
                else:
                    await asyncio.sleep(0)  # YIELD
            except BaseException as exc:
                effect = steps.throw(exc)
                continue
            effect = steps.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def _awaited(value: Any) -> Any:
    """``value``, awaited when it is an awaitable."""
    return (await value) if inspect.isawaitable(value) else value


def _ask(effect: Ask) -> Any:
    """One read: its answer, or `Failed` (judged by the reads: retried, or the end)."""
    try:
        return effect.ask(effect.query, effect.timeout)  # type: ignore[misc]
    except Exception as exc:
        return Failed(exc)


async def _aask(effect: Ask) -> Any:
    """`_ask`, awaiting the answer."""
    try:
        answer = effect.ask(effect.query, effect.timeout)  # type: ignore[misc]
        return (await answer) if inspect.isawaitable(answer) else answer
    except Exception as exc:
        return Failed(exc)


def _exchange(effect: Exchange) -> Any:
    """A door's own need, carried out by its sender (a sync one: this is the sync driver)."""
    reply = effect.sender(effect.need)
    refuse_awaitable(reply, "a door's sender returned an awaitable: use adrive()")
    return reply


def _look(effect: Look, guard: Configured) -> LookupResult:
    """A look-up that is a plain callable, given the seconds left; a failure is `Unresolved`."""
    try:
        result = effect.lookup(effect.until - guard.clock())
    except Exception as exc:  # a look-up that fails could not look
        return Unresolved(f"the look-up failed ({type(exc).__name__})")
    # Misuse, not a failed look: said to the caller, as for ``fn``.
    refuse_awaitable(result, "a Guard.call() look-up returned an awaitable: use acall()")
    return result  # type: ignore[no-any-return]


async def _alook(effect: Look, guard: Configured) -> LookupResult:
    """`_look`, awaited within the seconds left."""
    time_left = effect.until - guard.clock()
    try:
        looked = effect.lookup(time_left)
        if inspect.isawaitable(looked):
            return await asyncio.wait_for(looked, time_left)
        return looked  # type: ignore[no-any-return]
    except asyncio.TimeoutError:
        return Unresolved("the look-up did not finish in time")
    except Exception as exc:  # a look-up that fails could not look
        return Unresolved(f"the look-up failed ({type(exc).__name__})")
