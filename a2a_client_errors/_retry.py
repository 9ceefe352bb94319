"""Backoff, server hints, deadlines and retry budgets: the arithmetic of a safe retry.

Defaults, and where they come from:

* Backoff: capped exponential with *full jitter* (``random() * min(cap, initial * multiplier **
  retry)``, the ceiling computed by tenacity's ``wait_exponential``), the variant the AWS
  Architecture Blog's "Exponential Backoff and Jitter" showed spreads a thundering herd best;
  initial 0.5 s, multiplier 2 and cap 20 s, as the AWS SDKs' standard retry mode (cap 20 s)
  and gRPC's retry policy examples (0.1 to 1 s initial, x2).
* Server hints: ``Retry-After`` & co. are a *floor* on the delay. A hint above
  ``max_retry_after`` (60 s) means "not soon": the call gives up at once rather than wait,
  as the OpenAI and Stripe SDKs do.
* Budget: a token bucket per peer in the spirit of gRPC retry throttling and Finagle's
  ``RetryBudget``: 10 tokens, each retry spends 1, each success returns 0.5. Under a full
  outage a peer sees at most ``10`` retries, then only first attempts (amplification tends to
  1.0); at 20 % transient failures successes keep the bucket full, so retries flow. First
  attempts are never refused: the budget caps the *extra* load retries add.

The Guard depends on two protocols only: `RetryBudgetLike` (one budget: spend for a retry,
credit a success, read what is left; ``atry_spend`` when spending may wait for a shared store)
and `BudgetRegistryLike` (one budget per peer). `RetryBudget` and `BudgetRegistry` are the
in-process defaults; `a2a_client_errors.integrations.redis.RedisRetryBudget` shares one
bucket per peer across a fleet of processes.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, TypeGuard, TypeVar, cast, runtime_checkable

import tenacity

if TYPE_CHECKING:
    from collections.abc import Callable

_log = logging.getLogger("a2a_client_errors")
B = TypeVar("B")

__all__ = [
    "AsyncRetryBudgetLike",
    "Backoff",
    "BudgetFallback",
    "BudgetFallbacksLike",
    "BudgetRegistry",
    "BudgetRegistryLike",
    "BudgetState",
    "IdlePeers",
    "RefundableBudgetLike",
    "RetryBudget",
    "RetryBudgetLike",
    "has_ability",
    "refunds",
    "spends_async",
]


class _Attempt:
    """The one field of tenacity's retry state that its wait strategies read."""

    __slots__ = ("attempt_number",)

    def __init__(self, attempt_number: int) -> None:
        self.attempt_number = attempt_number


# The largest exponent whose power of ``multiplier`` stays a float: past it tenacity's
# ``exp_base ** exponent`` overflows and it answers ``max``, although a tiny ``initial`` times
# that power may still be under the cap.
_LOG_FLOAT_MAX = math.log(sys.float_info.max)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff with full jitter.

    The ceiling is tenacity's ``wait_exponential`` (``multiplier=initial``,
    ``exp_base=multiplier``, ``max=cap``), called as a pure function of the retry number; the
    jitter is drawn from the caller's random source (the Guard's, injectable), which tenacity's
    ``wait_random_exponential`` cannot take.

    The retry number is bounded before tenacity sees it: growth stops at the last retry whose
    ``multiplier ** (retry - 1)`` is a float (retry 1,024 for x2). Every schedule has reached
    its cap long before, unless ``initial`` is under ``cap / 1.8e308``: such a schedule stops
    growing there, under its cap, where tenacity's arithmetic would jump to the cap.

    Attributes:
        initial: the ceiling of the first retry's delay, in seconds.
        multiplier: how much the ceiling grows with each retry.
        cap: the largest ceiling, in seconds.
        jitter: 1.0 for full jitter (a delay drawn in ``[0, ceiling)``), 0.0 for none; in
            between, the delay is drawn in ``[(1 - jitter) * ceiling, ceiling)``.

    """

    initial: float = 0.5
    multiplier: float = 2.0
    cap: float = 20.0
    jitter: float = 1.0
    _wait: tenacity.wait_exponential = field(init=False, repr=False, compare=False)
    _last: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.initial < 0 or self.cap < 0 or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            msg = "Backoff needs initial >= 0, cap >= 0, multiplier >= 1 and 0 <= jitter <= 1"
            raise ValueError(msg)
        wait = tenacity.wait_exponential(
            multiplier=self.initial, exp_base=self.multiplier, max=self.cap
        )
        growth = math.log(self.multiplier)
        last = int(_LOG_FLOAT_MAX / growth) if growth > 0 else 1
        object.__setattr__(self, "_wait", wait)
        object.__setattr__(self, "_last", last)

    def ceiling(self, retry: int) -> float:
        """The largest delay before retry number ``retry`` (1 for the first retry)."""
        state = _Attempt(min(max(retry, 1), self._last))
        return float(self._wait(cast("tenacity.RetryCallState", state)))

    def delay(self, retry: int, draw: float) -> float:
        """The delay before retry number ``retry``, for a uniform ``draw`` in ``[0, 1)``."""
        ceiling = self.ceiling(retry)
        return ceiling * (1.0 - self.jitter) + ceiling * self.jitter * min(max(draw, 0.0), 1.0)


@runtime_checkable
class RetryBudgetLike(Protocol):
    """What the Guard needs of a budget: spend for a retry, credit a success, read what is left.

    None of the three may block for long or raise: they run inside every guarded call. A
    budget may offer more, each ability a protocol of its own: `AsyncRetryBudgetLike`
    (spending that may wait for a shared store) and `RefundableBudgetLike` (a retry paid for
    and never sent is given back).
    """

    def try_spend(self) -> bool:
        """Take the cost of one retry; False (and nothing taken) when the budget cannot pay."""
        ...

    def credit(self) -> None:
        """Record a successful call."""
        ...

    @property
    def tokens(self) -> float:
        """Tokens left."""
        ...


@runtime_checkable
class AsyncRetryBudgetLike(Protocol):
    """A budget whose spending may wait for a shared store: ``Guard.acall`` awaits it.

    Where a budget offers ``atry_spend``, an async call spends with it instead of
    `RetryBudgetLike.try_spend` (see `a2a_client_errors.integrations.redis.RedisRetryBudget`);
    a sync call still spends with ``try_spend``.
    """

    async def atry_spend(self) -> bool:
        """`RetryBudgetLike.try_spend`, awaited: False (and nothing taken) when it cannot pay."""
        ...


@runtime_checkable
class RefundableBudgetLike(Protocol):
    """A budget that takes back the cost of a retry it paid for that was never sent.

    The Guard calls `refund` when the caller gave up during the backoff sleep or the sleep
    raised, so that tokens are spent only by retries that are sent; a budget without it keeps
    such a token spent. It must not raise (an exception is logged and swallowed).
    """

    def refund(self) -> None:
        """Give back the cost of one retry."""
        ...


@runtime_checkable
class BudgetFallbacksLike(Protocol):
    """A source of budgets that tells when a peer's shared bucket falls back, and recovers.

    A Guard with an ``on_budget_fallback`` hook subscribes to its budgets when they offer this
    (`a2a_client_errors.integrations.redis.RedisRetryBudget` does).
    """

    def subscribe(self, listener: Callable[[BudgetFallback], object]) -> None:
        """Call ``listener`` with every `BudgetFallback` from now on (held weakly)."""
        ...


def spends_async(budget: RetryBudgetLike) -> TypeGuard[AsyncRetryBudgetLike]:
    """Whether ``budget`` is an `AsyncRetryBudgetLike` (asked once per type of budget)."""
    return has_ability(type(budget), AsyncRetryBudgetLike)


def refunds(budget: RetryBudgetLike) -> TypeGuard[RefundableBudgetLike]:
    """Whether ``budget`` is a `RefundableBudgetLike` (asked once per type of budget)."""
    return has_ability(type(budget), RefundableBudgetLike)


@functools.lru_cache(maxsize=256)
def has_ability(kind: type, ability: type) -> bool:
    """Whether the class ``kind`` offers ``ability``, a protocol of methods (asked once a pair).

    `issubclass` reads the class, not each instance: an ability is a method of the class.
    """
    return issubclass(kind, ability)


class RetryBudget:
    """A token bucket shared by every call to one peer, across threads and tasks.

    Each retry spends ``retry_cost`` tokens; each successful call returns ``success_credit``,
    up to ``capacity``; optionally time refills ``refill_per_second``. It never blocks: a
    retry the bucket cannot pay is refused at once, and the call fails fast.

    Args:
        capacity: the most tokens the bucket holds (and its starting fill).
        retry_cost: tokens one retry takes.
        success_credit: tokens a successful call gives back.
        refill_per_second: tokens time gives back (0: only successes refill).
        clock: a monotonic clock in seconds, for the time refill.

    """

    __slots__ = (
        "_clock",
        "_last",
        "_lock",
        "_tokens",
        "capacity",
        "refill_per_second",
        "retry_cost",
        "success_credit",
    )

    def __init__(
        self,
        capacity: float = 10.0,
        *,
        retry_cost: float = 1.0,
        success_credit: float = 0.5,
        refill_per_second: float = 0.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if capacity < 0 or retry_cost <= 0 or success_credit < 0 or refill_per_second < 0:
            msg = "RetryBudget needs capacity >= 0, retry_cost > 0 and non-negative refills"
            raise ValueError(msg)
        import time  # noqa: PLC0415 (only the default clock needs it)

        self.capacity = float(capacity)
        self.retry_cost = float(retry_cost)
        self.success_credit = float(success_credit)
        self.refill_per_second = float(refill_per_second)
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._tokens = float(capacity)
        self._last = self._clock() if refill_per_second else 0.0

    def _refill(self) -> None:
        if self.refill_per_second:
            now = self._clock()
            elapsed = max(0.0, now - self._last)
            self._last = now
            self._tokens = min(self.capacity, self._tokens + elapsed * self.refill_per_second)

    def try_spend(self) -> bool:
        """Take one retry's cost; False, taking nothing, when the bucket cannot pay."""
        with self._lock:
            self._refill()
            if self._tokens < self.retry_cost:
                return False
            self._tokens -= self.retry_cost
            return True

    def refund(self) -> None:
        """Give back one retry's cost, for a retry paid for and never sent (up to ``capacity``)."""
        with self._lock:
            self._refill()
            self._tokens = min(self.capacity, self._tokens + self.retry_cost)

    def credit(self) -> None:
        """Return ``success_credit`` tokens for a successful call."""
        if self._tokens >= self.capacity:
            return  # full already (the common case): no lock to take
        with self._lock:
            self._refill()
            self._tokens = min(self.capacity, self._tokens + self.success_credit)

    @property
    def tokens(self) -> float:
        """Tokens left now."""
        with self._lock:
            self._refill()
            return self._tokens

    def __repr__(self) -> str:
        return f"RetryBudget(tokens={self.tokens:.2f}, capacity={self.capacity:g})"


class BudgetRegistryLike(Protocol):
    """What the Guard needs of a source of budgets: the budget of each peer."""

    def get(self, peer: str) -> RetryBudgetLike:
        """The budget of ``peer`` (the same object for the same peer)."""
        ...


class BudgetState(str, enum.Enum):
    """Where a shared budget decides now."""

    SHARED = "shared"
    """The shared store (the whole fleet's bucket) decides."""
    LOCAL = "local"
    """The shared store cannot be reached: a local bucket decides (or, failing closed, no retry)."""


@dataclass(frozen=True, slots=True)
class BudgetFallback:
    """What a hook is told when a peer's shared budget falls back to local, or recovers.

    Attributes:
        peer: the peer's key.
        state: `BudgetState.LOCAL` when it fell back, `BudgetState.SHARED` when it recovered.
        cause: why it fell back: the name of the error's type (``"ConnectionError"``,
            ``"TimeoutError"``, ...), never its message; None on recovery.
        fail_open: True when a local bucket grants retries meanwhile, False when every retry
            is refused until the shared store is back.
        tokens: the peer's retry tokens left, as the budget now counts them.

    """

    peer: str
    state: BudgetState
    cause: str | None
    fail_open: bool
    tokens: float


class IdlePeers(Generic[B]):
    """Per-peer objects, made on first use and forgotten once unused for ``idle`` seconds.

    The one map behind every source of per-peer budgets: a process that calls many peers
    (a host per tenant, random hosts) keeps only the budgets of the peers it used lately.
    A peer forgotten and called again starts afresh, as after a restart (a full bucket). The
    hot path is a dict read and a dict write; the sweep of idle peers runs at most once per
    ``idle / 4`` seconds, on a lookup, and hands each forgotten object to ``forget``.

    Thread-safe.

    Args:
        make: makes the object of a peer, given the peer.
        idle: seconds without a lookup after which a peer is forgotten (``math.inf``: never).
        clock: a monotonic clock in seconds.
        forget: called with each forgotten object (outside the lock); what it raises is logged.

    """

    __slots__ = ("_clock", "_forget", "_items", "_lock", "_make", "_sweep_at", "_used", "idle")

    def __init__(
        self,
        make: Callable[[str], B],
        *,
        idle: float = 600.0,
        clock: Callable[[], float] | None = None,
        forget: Callable[[B], object] | None = None,
    ) -> None:
        if not idle > 0:  # NaN included
            msg = "idle must be positive (math.inf: never forget)"
            raise ValueError(msg)
        import time  # noqa: PLC0415 (only the default clock needs it)

        self._make = make
        self.idle = float(idle)
        self._clock = clock or time.monotonic
        self._forget = forget
        self._items: dict[str, B] = {}
        self._used: dict[str, float] = {}
        self._lock = threading.Lock()
        self._sweep_at = self._clock() + self.idle / 4

    def get(self, peer: str) -> B:
        """The object of ``peer``: the same one while the peer is in use."""
        now = self._clock()
        item = self._items.get(peer)
        if item is None or now >= self._sweep_at:
            item = self._slow(peer, now)
        self._used[peer] = now
        return item

    def _slow(self, peer: str, now: float) -> B:
        forgotten: list[B] = []
        with self._lock:
            if now >= self._sweep_at:
                self._sweep_at = now + self.idle / 4
                cutoff = now - self.idle
                for name, used in list(self._used.items()):
                    if used <= cutoff and name != peer:
                        self._used.pop(name, None)
                        gone = self._items.pop(name, None)
                        if gone is not None:
                            forgotten.append(gone)
            item = self._items.get(peer)
            if item is None:
                item = self._items[peer] = self._make(peer)
        forget = self._forget
        if forget is not None:
            for gone in forgotten:
                _forget_one(forget, gone)
        return item

    def peek(self, peer: str) -> B | None:
        """The object of ``peer`` if one is held now; none is made, and it is not a use."""
        return self._items.get(peer)

    def peers(self) -> list[str]:
        """The peers held now."""
        with self._lock:
            return list(self._items)

    def values(self) -> list[B]:
        """The objects held now."""
        with self._lock:
            return list(self._items.values())

    def __len__(self) -> int:
        return len(self._items)


def _forget_one(forget: Callable[[B], object], item: B) -> None:
    try:
        forget(item)
    except Exception:
        _log.exception("a2a_client_errors: forgetting an idle peer's budget failed")


class BudgetRegistry:
    """One budget per peer, made on first use by ``factory`` (default: `RetryBudget()`).

    Thread-safe. Inject one into several Guards to share budgets between them. A peer's
    budget is forgotten once the peer has not been called for ``idle`` seconds (10 minutes;
    ``math.inf``: never), so a process that calls many hosts holds only the budgets of the
    hosts it called lately; a forgotten peer called again starts with a fresh budget, as a
    peer's Redis bucket does after ``idle_ttl``.

    Args:
        factory: makes one peer's budget.
        idle: seconds after which an unused peer's budget is forgotten.
        clock: a monotonic clock in seconds, for ``idle``.

    """

    __slots__ = ("_peers",)

    def __init__(
        self,
        factory: Callable[[], RetryBudgetLike] | None = None,
        *,
        idle: float = 600.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        make = factory or RetryBudget
        self._peers: IdlePeers[RetryBudgetLike] = IdlePeers(
            lambda _peer: make(), idle=idle, clock=clock
        )

    def get(self, peer: str) -> RetryBudgetLike:
        """The budget of ``peer``."""
        return self._peers.get(peer)

    def peers(self) -> list[str]:
        """The peers that have a budget now (those used in the last ``idle`` seconds)."""
        return self._peers.peers()
