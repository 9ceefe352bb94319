"""Backoff, server hints, deadlines and retry budgets: the arithmetic of a safe retry.

Defaults, and where they come from:

* Backoff: capped exponential with *full jitter* (``random() * min(cap, initial * multiplier **
  retry)``), the variant the AWS Architecture Blog's "Exponential Backoff and Jitter" showed
  spreads a thundering herd best; initial 0.5 s, multiplier 2 and cap 20 s, as the AWS SDKs'
  standard retry mode (cap 20 s) and gRPC's retry policy examples (0.1 to 1 s initial, x2).
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
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Backoff",
    "BudgetFallback",
    "BudgetRegistry",
    "BudgetRegistryLike",
    "BudgetState",
    "RetryBudget",
    "RetryBudgetLike",
]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff with full jitter.

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

    def __post_init__(self) -> None:
        if self.initial < 0 or self.cap < 0 or self.multiplier < 1 or not 0 <= self.jitter <= 1:
            msg = "Backoff needs initial >= 0, cap >= 0, multiplier >= 1 and 0 <= jitter <= 1"
            raise ValueError(msg)

    def ceiling(self, retry: int) -> float:
        """The largest delay before retry number ``retry`` (1 for the first retry)."""
        exponent = max(0, retry - 1)
        try:
            return min(self.cap, self.initial * self.multiplier**exponent)
        except OverflowError:  # the growth left floats behind; the cap won long before
            return self.cap if self.initial > 0 else 0.0

    def delay(self, retry: int, draw: float) -> float:
        """The delay before retry number ``retry``, for a uniform ``draw`` in ``[0, 1)``."""
        ceiling = self.ceiling(retry)
        return ceiling * (1.0 - self.jitter) + ceiling * self.jitter * min(max(draw, 0.0), 1.0)


@runtime_checkable
class RetryBudgetLike(Protocol):
    """What the Guard needs of a budget: spend for a retry, credit a success, read what is left.

    None of the three may block for long or raise: they run inside every guarded call. A
    budget whose spending may wait for a shared store can also offer
    ``async def atry_spend(self) -> bool``, which ``Guard.acall`` awaits instead of
    `try_spend` (see `a2a_client_errors.integrations.redis.RedisRetryBudget`).
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


class BudgetRegistry:
    """One budget per peer, made on first use by ``factory`` (default: `RetryBudget()`).

    Thread-safe. Inject one into several Guards to share budgets between them.
    """

    __slots__ = ("_budgets", "_factory", "_lock")

    def __init__(self, factory: Callable[[], RetryBudgetLike] | None = None) -> None:
        self._factory: Callable[[], RetryBudgetLike] = factory or RetryBudget
        self._budgets: dict[str, RetryBudgetLike] = {}
        self._lock = threading.Lock()

    def get(self, peer: str) -> RetryBudgetLike:
        """The budget of ``peer``."""
        budget = self._budgets.get(peer)
        if budget is None:
            with self._lock:
                budget = self._budgets.get(peer)
                if budget is None:
                    budget = self._budgets[peer] = self._factory()
        return budget

    def peers(self) -> list[str]:
        """The peers that have a budget so far."""
        with self._lock:
            return list(self._budgets)
