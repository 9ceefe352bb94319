"""A peer goes down: watch the retry budget turn retries into fast failures.

Runs in fake time (no real sleeping) against an in-memory peer that answers 503.

Run it with ``python examples/retry_with_budget.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from a2a_client_errors import BudgetExhausted, Guard, Hook, RetryBudget, RetryExhausted
from a2a_client_errors.testing import FakeClock

if TYPE_CHECKING:
    from a2a_client_errors.hooks import GuardEvent


class Counter(Hook):
    """Counts what the guard did."""

    def __init__(self) -> None:
        self.retries = 0
        self.refused = 0

    def on_retry(self, event: GuardEvent) -> None:
        """Count a retry."""
        self.retries += 1

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """Count a retry the budget refused."""
        self.refused += 1


def main() -> None:
    """Send 50 GetTask calls to a peer that is down; print what it cost the peer."""
    sent = 0

    def peer(request: httpx.Request) -> httpx.Response:
        nonlocal sent
        sent += 1
        return httpx.Response(503, text="down")

    clock, counter = FakeClock(), Counter()
    guard = Guard(
        budget=RetryBudget(capacity=10),
        clock=clock.now,
        sleep=clock.sleep,
        random=lambda: 0.5,
        hooks=[counter],
    )
    outcomes = {"budget exhausted (failed fast)": 0, "retries exhausted": 0}
    with httpx.Client(base_url="http://agent.example", transport=httpx.MockTransport(peer)) as c:
        for n in range(50):
            body = {"jsonrpc": "2.0", "id": n, "method": "GetTask", "params": {"id": "t-1"}}
            try:
                guard.call(c.post, "/", json=body, operation="GetTask", peer="agent.example")
            except BudgetExhausted:
                outcomes["budget exhausted (failed fast)"] += 1
            except RetryExhausted:
                outcomes["retries exhausted"] += 1
    print(f"50 calls sent {sent} requests ({sent / 50:.2f} per call), {counter.retries} retries")
    print(f"retries refused by the budget: {counter.refused}")
    print(f"fake time spent sleeping: {sum(clock.sleeps):.1f}s")
    for outcome, count in outcomes.items():
        print(f"  {outcome}: {count}")


if __name__ == "__main__":
    main()
