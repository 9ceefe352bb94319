"""Fleet state on Redis: retry budgets, circuit breakers and deduplication shared by every process.

* `RedisRetryBudget`: one token bucket per peer for the whole fleet (see `_budget`'s notes on
  the local lease, many retries at once, and what happens when Redis is slow or down).
* `RedisCircuitBreaker`: one breaker per peer for the whole fleet.
* `RedisDedupeStore`: the store `a2a_client_errors.server.deduplicate` keeps claims in, for an
  agent that runs as several replicas.
* `RedisJournal`: the in-flight journal (`a2a_client_errors.journal.Journal`) for a fleet: each
  operation one Lua script, leases on the server's clock.

redis-py is never imported by these modules, only used through the client given (and imported
by each ``from_url``): importing ``a2a_client_errors`` never needs it.
"""

from __future__ import annotations

from a2a_client_errors.integrations.redis._breaker import BREAKER_SCRIPT, RedisCircuitBreaker
from a2a_client_errors.integrations.redis._budget import SCRIPT, RedisPeerBudget, RedisRetryBudget
from a2a_client_errors.integrations.redis._journal import RedisJournal
from a2a_client_errors.server._dedupe_store import RedisDedupeStore

__all__ = [
    "BREAKER_SCRIPT",
    "SCRIPT",
    "RedisCircuitBreaker",
    "RedisDedupeStore",
    "RedisJournal",
    "RedisPeerBudget",
    "RedisRetryBudget",
]
