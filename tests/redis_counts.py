"""What the Redis tests count: scripts Redis ran, decisions taken locally, and a flaky peer."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from a2a_client_errors.integrations.redis import RedisPeerBudget

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest
    import redis


def exchanges(client: redis.Redis) -> int:
    """How many times the server ran a script (EVAL, EVALSHA), by its own count.

    A first EVALSHA that finds the script not loaded yet (NOSCRIPT) failed: it ran nothing.
    """
    stats = client.info("commandstats")
    total = 0
    for name in ("eval", "evalsha"):
        stat = stats.get(f"cmdstat_{name}", {})
        total += int(stat.get("calls", 0)) - int(stat.get("failed_calls", 0))
    return total


def count_local(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the spends the fallback decides (every local decision goes through it)."""
    counted = [0]
    spend_locally = RedisPeerBudget._spend_locally

    def counting(self: RedisPeerBudget) -> bool:
        counted[0] += 1
        return spend_locally(self)

    monkeypatch.setattr(RedisPeerBudget, "_spend_locally", counting)
    return counted


def flaky() -> Callable[[], httpx.Response]:
    """A peer that answers 503 once, then 200: each call asks the budget for one retry."""
    answers = iter([503])
    body = {"jsonrpc": "2.0", "id": 1, "result": {}}
    return lambda: httpx.Response(next(answers, 200), json=body)
