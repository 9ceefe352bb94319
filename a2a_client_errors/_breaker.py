"""A circuit breaker per peer that counts only what says the peer itself is unwell.

A retry budget stops the *retries* to a dead peer; every call still sends its first attempt and
waits for it to fail. A breaker stops the first attempts too: once most recent calls to a peer
failed in a way that says the peer (or the way to it) is down, calls fail fast with
`PeerUnavailable` (nothing sent, no sleep) until a probe shows the peer is back.

What counts (`peer_unwell`)
    Transport failures (connect, timeout, broken connection), HTTP 429 and 5xx but 501 and 505,
    gRPC ``UNAVAILABLE``, ``DEADLINE_EXCEEDED``, ``RESOURCE_EXHAUSTED``, ``INTERNAL``,
    ``UNKNOWN`` and ``DATA_LOSS``, and the reasons that mean the same (``RATE_LIMITED``,
    ``INTERNAL_ERROR``, ``UNKNOWN_ERROR``). Never an A2A call error (``TASK_NOT_FOUND``,
    invalid params, version, extension), never auth, never a wrong URL or an untrusted
    certificate (fixing them is not the peer's job), and never a task outcome: a FAILED task
    came back in a successful call, from a healthy peer saying no. Everything the peer
    answered that is not in the list counts as a success: the peer is up.

States, per peer
    * **closed**: calls go. Each outcome lands in a sliding window of ``window`` seconds (ten
      buckets). When at least ``min_calls`` outcomes are in it and the unwell share reaches
      ``failure_ratio``, the breaker opens.
    * **open**: calls fail fast for the cool-down: ``cooldown`` seconds, doubled each time a
      probe fails, capped at ``max_cooldown``, at least the server's ``Retry-After``, and
      jittered *down* by up to ``jitter`` of itself (so a fleet's probes spread, and the peer
      is probed no later than the cool-down says).
    * **half-open**: after the cool-down, one call at a time goes as a probe; the others fail
      fast. A probe the peer answers closes the breaker (the window starts empty); a probe that
      fails opens it again, for twice as long. A probe that ends without a verdict (a bug in the
      caller, a cancellation) frees the slot for the next call.

Defaults, and why
    ``failure_ratio=0.5`` over ``window=30`` s with ``min_calls=20``: a transient 20 % failure
    rate (the policy's retries handle it) never opens it, a peer failing every other call does;
    twenty outcomes keep one unlucky second of a quiet peer from opening it, and 30 s is long
    enough to hold them at one call a second and short enough to forget a past incident.
    ``cooldown=5`` s: a restarting process or a failing-over load balancer is back in seconds;
    one probe per five seconds costs a dead peer nothing. ``max_cooldown=120`` s: a long
    outage is probed every two minutes at worst, so recovery is seen within two minutes.
    ``jitter=0.2``: replicas that opened together probe up to a second apart.
    ``idle=600`` s, as `BudgetRegistry`'s: see below.

Forgetting idle peers
    A peer not asked about (`CircuitBreaker.admit` of a breaker that is not closed,
    `CircuitBreaker.record`) for ``idle`` seconds is forgotten, as its retry budget is: a
    process that calls many hosts (a host per tenant, hosts drawn from cards) keeps only the
    breakers of the peers it called lately, whatever their number. A forgotten peer called
    again starts closed, with an empty window, as after a restart. That holds for an open
    breaker too. ``idle`` is never shorter than ``window`` nor than ``max_cooldown``, so what
    is forgotten no longer decides anything: a closed breaker's outcomes have left its window,
    and an open breaker has ended its cool-down (it would let the next call through anyway,
    as the half-open probe); a breaker is never forgotten while it refuses calls. What
    forgetting an open breaker costs is the probe's discipline: up to ``min_calls`` calls,
    rather than one, find out that the peer is still down, once per ``idle`` seconds of
    silence, and the cool-down starts again from ``cooldown``. A process that wants every
    breaker kept gives ``idle=math.inf``.

The Guard knows breakers through `CircuitBreakerLike` only: `admit` before each attempt and
`record` after it. `CircuitBreaker` keeps every peer's state in this process;
`a2a_client_errors.integrations.redis.RedisCircuitBreaker` shares it across a fleet.
"""

from __future__ import annotations

import enum
import inspect
import logging
import math
import random as _random
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeGuard, runtime_checkable

from a2a_client_errors._errors import ErrorKind, safe_peer
from a2a_client_errors._reasons import Reason, TransportFailure
from a2a_client_errors._retry import IdlePeers, has_ability

if TYPE_CHECKING:
    from collections.abc import Callable

    from a2a_client_errors._errors import CallError
    from a2a_client_errors._retry import BudgetState

__all__ = [
    "Admission",
    "AsyncCircuitBreakerLike",
    "BreakerFallback",
    "BreakerFallbacksLike",
    "BreakerState",
    "BreakerTransition",
    "BreakerTransitionsLike",
    "CircuitBreaker",
    "CircuitBreakerLike",
    "Verdict",
    "admits_async",
    "peer_unwell",
    "verdict_of",
]

_log = logging.getLogger("a2a_client_errors")

_UNWELL_TRANSPORT: Final = frozenset(
    {TransportFailure.CONNECT, TransportFailure.TIMEOUT, TransportFailure.NETWORK}
)
_UNWELL_GRPC: Final = frozenset(
    {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "INTERNAL", "UNKNOWN", "DATA_LOSS"}
)
_UNWELL_REASONS: Final = frozenset(
    {Reason.RATE_LIMITED, Reason.INTERNAL_ERROR, Reason.UNKNOWN_ERROR}
)
_HEALTHY_5XX: Final = frozenset({501, 505})  # not implemented, version: the request, not the peer
_BUCKETS: Final = 10


def peer_unwell(error: CallError) -> bool:
    """Whether ``error`` says the peer itself (or the way to it) is unwell.

    True for transport failures that reach no answer (connect, timeout, network), HTTP 429
    and 5xx (but 501 and 505), the gRPC statuses of an overloaded or failing server, and the
    reasons that mean the same. False for every A2A call error, auth, a wrong URL, TLS trust.
    """
    kind = error.kind
    if kind is ErrorKind.AUTH:
        return False
    if kind is ErrorKind.TRANSPORT and error.transport is not None:
        return error.transport in _UNWELL_TRANSPORT
    reason = error.reason
    if isinstance(reason, Reason) and reason not in _UNWELL_REASONS:
        return False  # the agent understood the call and said no: it is up
    status = error.http_status
    if status is not None and (status == 429 or (status >= 500 and status not in _HEALTHY_5XX)):
        return True
    if error.grpc_status is not None and error.grpc_status.upper() in _UNWELL_GRPC:
        return True
    return reason in _UNWELL_REASONS


class Verdict(str, enum.Enum):
    """What one attempt says about the peer's health."""

    HEALTHY = "healthy"
    """The peer answered: a result, a task in any state, or a call error it meant."""
    UNWELL = "unwell"
    """The peer could not be reached, or said it is overloaded or failing (`peer_unwell`)."""
    ABANDONED = "abandoned"
    """No verdict: the attempt ended in a bug or a cancellation. Nothing is counted."""

    def __str__(self) -> str:
        return self.value


def verdict_of(error: CallError | None) -> Verdict:
    """The verdict on an attempt that ended in ``error`` (None: a result)."""
    if error is None or not peer_unwell(error):
        return Verdict.HEALTHY
    return Verdict.UNWELL


class BreakerState(str, enum.Enum):
    """Where a peer's breaker stands."""

    CLOSED = "closed"
    """Calls go; outcomes are counted."""
    OPEN = "open"
    """Calls fail fast with `PeerUnavailable` until the cool-down ends."""
    HALF_OPEN = "half_open"
    """One probe call at a time goes; the others fail fast."""

    def __str__(self) -> str:
        return self.value

    @property
    def level(self) -> int:
        """The state as a gauge's value: 0 closed, 1 half-open, 2 open."""
        return _LEVELS[self]


_LEVELS: Final = {BreakerState.CLOSED: 0, BreakerState.HALF_OPEN: 1, BreakerState.OPEN: 2}


@dataclass(frozen=True, slots=True)
class Admission:
    """The breaker's answer before an attempt.

    Attributes:
        allowed: whether the attempt may be sent.
        probe: whether it goes as the half-open probe (its `record` must follow).
        state: the peer's state when it was asked.
        retry_in: for a refusal, the seconds until the next probe may go (0.0 when a probe is
            in flight now and its verdict is awaited).

    """

    allowed: bool
    probe: bool = False
    state: BreakerState = BreakerState.CLOSED
    retry_in: float = 0.0


_ADMITTED: Final = Admission(True)


@dataclass(frozen=True, slots=True)
class BreakerTransition:
    """What a hook is told when a peer's breaker changes state.

    Attributes:
        peer: the peer's key.
        old: the state it left.
        new: the state it entered.
        cause: why, for humans and labels: ``failure_ratio`` (opened by the window),
            ``probe_failed``, ``cooldown_elapsed``, ``probe_succeeded``, ``shared`` (told by
            the fleet's shared state), ``reset``.
        retry_in: for ``open``, the cool-down: seconds until the next probe may go.
        failure_ratio: the unwell share of the window when it opened (None otherwise).
        calls: the outcomes in the window when it opened (0 otherwise).

    """

    peer: str
    old: BreakerState
    new: BreakerState
    cause: str
    retry_in: float = 0.0
    failure_ratio: float | None = None
    calls: int = 0


@dataclass(frozen=True, slots=True)
class BreakerFallback:
    """What a hook is told when a peer's shared breaker decides locally, or is shared again.

    Attributes:
        peer: the peer's key.
        state: `BudgetState.LOCAL` (the shared store cannot be reached: the local breaker
            alone decides) or `BudgetState.SHARED` (it answers again).
        cause: the name of the error's type when it fell back, never its message; None on
            recovery.

    """

    peer: str
    state: BudgetState
    cause: str | None


@runtime_checkable
class CircuitBreakerLike(Protocol):
    """What the Guard needs of a breaker: ask before each attempt, tell it how it went.

    Neither may block for long or raise. A breaker may offer more, each ability a protocol
    of its own: `AsyncCircuitBreakerLike` (admission that may wait for a shared store),
    `BreakerTransitionsLike` and `BreakerFallbacksLike` (it tells what changes).
    """

    def admit(self, peer: str) -> Admission:
        """Whether an attempt to ``peer`` may go now (and whether it is the probe)."""
        ...

    def record(
        self, peer: str, verdict: Verdict, *, probe: bool = False, retry_after: float | None = None
    ) -> None:
        """Count one attempt's verdict; ``probe`` when `admit` made it the probe."""
        ...

    def state(self, peer: str) -> BreakerState:
        """The state of ``peer``'s breaker now."""
        ...


@runtime_checkable
class AsyncCircuitBreakerLike(Protocol):
    """A breaker whose admission may wait for a shared store: ``Guard.acall`` awaits it.

    An async call asks `aadmit` instead of `CircuitBreakerLike.admit` when the breaker offers
    it (see `a2a_client_errors.integrations.redis.RedisCircuitBreaker`); verdicts are still
    given to ``record``, which must not block.
    """

    async def aadmit(self, peer: str) -> Admission:
        """`CircuitBreakerLike.admit`, awaited."""
        ...


@runtime_checkable
class BreakerTransitionsLike(Protocol):
    """A breaker that tells each change of a peer's state (a Guard's ``on_breaker`` hears it)."""

    def subscribe(self, listener: Callable[[BreakerTransition], object]) -> None:
        """Call ``listener`` with every `BreakerTransition` from now on (held weakly)."""
        ...


@runtime_checkable
class BreakerFallbacksLike(Protocol):
    """A shared breaker that tells when it falls back to local state, and recovers.

    A Guard's ``on_breaker_fallback`` hook hears it.
    """

    def subscribe_fallback(self, listener: Callable[[BreakerFallback], object]) -> None:
        """Call ``listener`` with every `BreakerFallback` from now on (held weakly)."""
        ...


def admits_async(breaker: CircuitBreakerLike) -> TypeGuard[AsyncCircuitBreakerLike]:
    """Whether ``breaker`` is an `AsyncCircuitBreakerLike` (asked once per type of breaker)."""
    return has_ability(type(breaker), AsyncCircuitBreakerLike)


class _Window:
    """Outcomes over the last ``window`` seconds, in ``_BUCKETS`` buckets of time."""

    __slots__ = ("calls", "failures", "slots", "span")

    def __init__(self, window: float) -> None:
        self.span = window / _BUCKETS
        self.slots: list[list[float]] = []  # [bucket index, calls, failures], oldest first
        self.calls = 0
        self.failures = 0

    def add(self, now: float, failed: bool) -> None:
        index = math.floor(now / self.span)
        self._expire(index)
        slots = self.slots
        if not slots or slots[-1][0] != index:
            slots.append([index, 0, 0])
        slot = slots[-1]
        slot[1] += 1
        self.calls += 1
        if failed:
            slot[2] += 1
            self.failures += 1

    def _expire(self, index: int) -> None:
        slots = self.slots
        while slots and slots[0][0] <= index - _BUCKETS:
            old = slots.pop(0)
            self.calls -= int(old[1])
            self.failures -= int(old[2])

    def clear(self) -> None:
        self.slots.clear()
        self.calls = self.failures = 0


class _Peer:
    """One peer's breaker state (guarded by the breaker's lock)."""

    __slots__ = ("opened_at", "probes_failed", "probing", "reopen_at", "state", "window")

    def __init__(self, window: float) -> None:
        self.window = _Window(window)
        self.close()

    def close(self) -> None:
        """Closed, with nothing counted: as a peer never seen."""
        self.state = BreakerState.CLOSED
        self.window.clear()
        self.reopen_at = 0.0  # when open: the time the next probe may go
        self.opened_at = 0.0
        self.probing = False
        self.probes_failed = 0


class CircuitBreaker:
    """One circuit breaker per peer, in this process, across threads and tasks.

    A `CircuitBreakerLike`. Give one to a Guard (``Guard(breaker=CircuitBreaker())``), or the
    same one to several Guards to share what they learn. The module's docstring tells what
    counts, the states and why the defaults are what they are.

    Args:
        failure_ratio: the unwell share of the window that opens the breaker (0 < r <= 1).
        min_calls: the fewest outcomes in the window before it may open.
        window: the seconds of outcomes the ratio is read over.
        cooldown: the first cool-down, in seconds, before a probe may go.
        max_cooldown: the longest cool-down, however many probes failed.
        jitter: the share of a cool-down drawn off at random (0: none).
        idle: seconds after which a peer not asked about is forgotten (``math.inf``: never);
            at least ``window`` and ``max_cooldown``.
        clock: a monotonic clock in seconds (``time.monotonic``).
        random: uniform floats in ``[0, 1)`` for the jitter (``random.random``).

    Example:
        >>> from a2a_client_errors import CircuitBreaker, Guard
        >>> guard = Guard(breaker=CircuitBreaker(min_calls=10))

    """

    def __init__(
        self,
        *,
        failure_ratio: float = 0.5,
        min_calls: int = 20,
        window: float = 30.0,
        cooldown: float = 5.0,
        max_cooldown: float = 120.0,
        jitter: float = 0.2,
        idle: float = 600.0,
        clock: Callable[[], float] | None = None,
        random: Callable[[], float] | None = None,
    ) -> None:
        if not (
            0 < failure_ratio <= 1
            and min_calls >= 1
            and window > 0
            and 0 <= cooldown <= max_cooldown
            and math.isfinite(max_cooldown)
            and 0 <= jitter < 1
            and idle >= max(window, max_cooldown)
        ):
            msg = (
                "CircuitBreaker needs 0 < failure_ratio <= 1, min_calls >= 1, window > 0,"
                " 0 <= cooldown <= max_cooldown (finite), 0 <= jitter < 1 and"
                " idle >= window and max_cooldown"
            )
            raise ValueError(msg)
        self.failure_ratio = float(failure_ratio)
        self.min_calls = int(min_calls)
        self.window = float(window)
        self.cooldown = float(cooldown)
        self.max_cooldown = float(max_cooldown)
        self.jitter = float(jitter)
        self.idle = float(idle)
        self.clock = clock or time.monotonic
        self.random = random or _random.random
        self._lock = threading.Lock()
        self._peers: IdlePeers[_Peer] = IdlePeers(
            lambda _peer: _Peer(self.window), idle=idle, clock=self.clock
        )
        self._listeners: list[Callable[[], Callable[[BreakerTransition], object] | None]] = []

    # --- what the Guard asks ----------------------------------------------------------------

    def admit(self, peer: str) -> Admission:
        """Whether an attempt to ``peer`` may go now; the half-open probe when it is due."""
        state = self._peers.peek(peer)
        if state is None or state.state is BreakerState.CLOSED:
            return _ADMITTED  # the common case: no lock to take (`record` tells it is in use)
        self._peers.get(peer)  # refusing calls, or probing: in use
        told = None
        with self._lock:
            now = self.clock()
            if state.state is BreakerState.OPEN:
                if now < state.reopen_at:
                    return Admission(False, False, BreakerState.OPEN, state.reopen_at - now)
                state.state = BreakerState.HALF_OPEN
                state.probing = False
                told = BreakerTransition(
                    peer, BreakerState.OPEN, BreakerState.HALF_OPEN, "cooldown_elapsed"
                )
            if state.state is BreakerState.HALF_OPEN:
                if state.probing:
                    answer = Admission(False, False, BreakerState.HALF_OPEN, 0.0)
                else:
                    state.probing = True
                    answer = Admission(True, True, BreakerState.HALF_OPEN)
            else:
                answer = _ADMITTED
        if told is not None:
            self._notify(told)
        return answer

    def record(
        self, peer: str, verdict: Verdict, *, probe: bool = False, retry_after: float | None = None
    ) -> None:
        """Count one attempt's verdict (see `Verdict`); ``probe`` when it was the probe."""
        if verdict is Verdict.ABANDONED and not probe:
            return
        told = None
        state = self._peers.get(peer)
        with self._lock:
            now = self.clock()
            if state.state is BreakerState.CLOSED:
                if verdict is not Verdict.ABANDONED:
                    state.window.add(now, verdict is Verdict.UNWELL)
                    told = self._maybe_open(peer, state, now, retry_after)
            elif state.state is BreakerState.HALF_OPEN and probe:
                state.probing = False
                if verdict is Verdict.HEALTHY:
                    state.close()
                    told = BreakerTransition(
                        peer, BreakerState.HALF_OPEN, BreakerState.CLOSED, "probe_succeeded"
                    )
                elif verdict is Verdict.UNWELL:
                    state.probes_failed += 1
                    told = self._open(peer, state, now, retry_after, "probe_failed")
            # Late outcomes of calls sent before it opened change nothing while it is open.
        if told is not None:
            self._notify(told)

    def state(self, peer: str) -> BreakerState:
        """The state of ``peer``'s breaker now (an open one whose cool-down ended: half-open)."""
        state = self._peers.peek(peer)
        if state is None:
            return BreakerState.CLOSED
        with self._lock:
            if state.state is BreakerState.OPEN and self.clock() >= state.reopen_at:
                return BreakerState.HALF_OPEN
            return state.state

    def retry_in(self, peer: str) -> float:
        """Seconds until ``peer``'s next probe may go (0.0 unless it is open)."""
        state = self._peers.peek(peer)
        if state is None or state.state is not BreakerState.OPEN:
            return 0.0
        return max(0.0, state.reopen_at - self.clock())

    def peers(self) -> list[str]:
        """The peers this breaker holds: those it counted outcomes of in the last ``idle`` s."""
        return self._peers.peers()

    def reset(self, peer: str, *, cause: str = "reset") -> None:
        """Close ``peer``'s breaker and forget its window (an operator's say, or the fleet's)."""
        state = self._peers.peek(peer)
        if state is None:
            return
        with self._lock:
            old = state.state
            state.close()
        if old is not BreakerState.CLOSED:
            self._notify(BreakerTransition(peer, old, BreakerState.CLOSED, cause))

    def open_until(self, peer: str, until: float) -> bool:
        """Open a closed breaker until ``until`` (this breaker's clock), on evidence from elsewhere.

        For a breaker shared across processes (`RedisCircuitBreaker`): once the fleet's cool-down
        ends, this process sends one probe of its own, not every call at once. No listener is
        told (the caller tells the change as it learnt it). True when it was closed and now is
        open; an open or half-open breaker is left as it is.
        """
        state = self._peers.get(peer)
        with self._lock:
            if state.state is not BreakerState.CLOSED:
                return False
            now = self.clock()
            state.state = BreakerState.OPEN
            state.opened_at = now
            state.reopen_at = max(until, now)
            state.window.clear()
            return True

    # --- opening ----------------------------------------------------------------------------

    def _maybe_open(
        self, peer: str, state: _Peer, now: float, retry_after: float | None
    ) -> BreakerTransition | None:
        window = state.window
        if window.calls < self.min_calls or window.failures < self.failure_ratio * window.calls:
            return None
        ratio, calls = window.failures / window.calls, window.calls
        told = self._open(peer, state, now, retry_after, "failure_ratio")
        return BreakerTransition(
            told.peer, told.old, told.new, told.cause, told.retry_in, ratio, calls
        )

    def _open(
        self, peer: str, state: _Peer, now: float, retry_after: float | None, cause: str
    ) -> BreakerTransition:
        old = state.state
        cooldown = self.cooldown_for(state.probes_failed, retry_after, self.random())
        state.state = BreakerState.OPEN
        state.opened_at = now
        state.reopen_at = now + cooldown
        state.window.clear()
        return BreakerTransition(peer, old, BreakerState.OPEN, cause, cooldown)

    def cooldown_for(self, probes_failed: int, retry_after: float | None, draw: float) -> float:
        """The cool-down after ``probes_failed`` failed probes, for a uniform ``draw``."""
        try:
            base = min(self.max_cooldown, self.cooldown * 2.0**probes_failed)
        except OverflowError:
            base = self.max_cooldown
        base *= 1.0 - self.jitter * min(max(draw, 0.0), 1.0)
        if retry_after is not None and math.isfinite(retry_after):
            base = max(base, min(retry_after, self.max_cooldown))
        return base

    # --- telling ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[BreakerTransition], object]) -> None:
        """Tell ``listener`` each change of a peer's state.

        A bound method is held weakly (a Guard subscribes its hooks, and may go away before
        the breaker); any other callable, strongly. A listener already subscribed (a hook of
        two Guards sharing this breaker) is told once. A listener that raises is logged.
        """
        listen(self._listeners, listener)

    def _notify(self, event: BreakerTransition) -> None:
        notify(self._listeners, event)


def listen(
    listeners: list[Callable[[], Callable[[Any], object] | None]],
    listener: Callable[[Any], object],
) -> None:
    """Add ``listener`` to ``listeners``, once: one hook that several Guards share is told once.

    A bound method is held weakly, any other callable strongly.
    """
    for ref in listeners:
        if ref() == listener:
            return
    listeners.append(held_listener(listener))


def held_listener(
    listener: Callable[[Any], object],
) -> Callable[[], Callable[[Any], object] | None]:
    """How a breaker holds ``listener``: call the result for the listener, or None once gone.

    A bound method is held weakly (its object may go away before the breaker); any other
    callable, strongly.
    """
    if inspect.ismethod(listener):
        return weakref.WeakMethod(listener)
    return lambda: listener


def notify(
    listeners: list[Callable[[], Callable[[BreakerTransition], object] | None]],
    event: BreakerTransition,
) -> None:
    """Log ``event`` (WARNING when a breaker opens, INFO when it closes) and tell listeners."""
    if event.new is BreakerState.OPEN:
        _log.warning(
            "a2a_client_errors: the circuit breaker of %s opened (%s; next probe in %.1f s)",
            safe_peer(event.peer),
            event.cause,
            event.retry_in,
        )
    elif event.new is BreakerState.CLOSED:
        _log.info(
            "a2a_client_errors: the circuit breaker of %s closed (%s)",
            safe_peer(event.peer),
            event.cause,
        )
    for ref in list(listeners):
        listener = ref()
        if listener is None:
            if ref in listeners:
                listeners.remove(ref)
            continue
        try:
            listener(event)
        except Exception:
            _log.exception("a2a_client_errors: a circuit breaker listener failed")
