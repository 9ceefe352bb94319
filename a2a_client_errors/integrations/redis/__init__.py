"""Fleet state on Redis: retry budgets, circuit breakers and the journal shared by every process.

* `RedisRetryBudget`: one token bucket per peer for the whole fleet (see `_budget`'s notes on
  the local lease, many retries at once, and what happens when Redis is slow or down).
* `RedisCircuitBreaker`: one breaker per peer for the whole fleet.
* `RedisJournal`: the in-flight journal (`a2a_client_errors.journal.Journal`) for a fleet: each
  operation one Lua script, leases on the server's clock.

redis-py is never imported by these modules, only used through the client given (and imported
by each ``from_url``): importing ``a2a_client_errors`` never needs it.

The store ``a2a_client_errors.server.deduplicate`` keeps claims in for an agent of several
replicas is the server's: `a2a_client_errors.server.RedisDedupeStore`. The name
``RedisDedupeStore`` here is a deprecated alias of it, kept for one release.
"""

from __future__ import annotations

import warnings
from typing import Any

from a2a_client_errors.integrations.redis._breaker import BREAKER_SCRIPT, RedisCircuitBreaker
from a2a_client_errors.integrations.redis._budget import SCRIPT, RedisPeerBudget, RedisRetryBudget
from a2a_client_errors.integrations.redis._journal import RedisJournal

__all__ = [
    "BREAKER_SCRIPT",
    "SCRIPT",
    "RedisCircuitBreaker",
    "RedisJournal",
    "RedisPeerBudget",
    "RedisRetryBudget",
]


def __getattr__(name: str) -> Any:
    """``RedisDedupeStore``, deprecated here: it is ``a2a_client_errors.server``'s."""
    if name == "RedisDedupeStore":
        warnings.warn(
            "a2a_client_errors.integrations.redis.RedisDedupeStore is deprecated: import it "
            "from a2a_client_errors.server (this alias goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        from a2a_client_errors.server import RedisDedupeStore  # noqa: PLC0415

        return RedisDedupeStore
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
