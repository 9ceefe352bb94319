"""One replica of an orchestrator fleet, run as a process by tests/test_redis_fleet.py.

    python -m tests.fleet_worker --peer URL --budget shared|local [--redis URL]
        [--mode threads|tasks] [--workers 4] [--calls 8] [--capacity 10] [--lease 2]

Each of ``--workers`` threads (or asyncio tasks) makes ``--calls`` calls to the peer through
`GuardTransport` (or `AsyncGuardTransport`): three attempts per call, no sleeping (the sleep is
injected). The budget is the fleet's (`RedisRetryBudget` on ``--redis``, closed at the end so
that unused leases go back) or this process's own (one `RetryBudget` per peer). Prints one
JSON line: the calls made, their outcomes by type, what was unexpected, the fallbacks told.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
from collections import Counter

import httpx

from a2a_client_errors import (
    AsyncGuardTransport,
    BudgetRegistry,
    CallFailed,
    Guard,
    GuardTransport,
    RetryBudget,
)
from a2a_client_errors.integrations.redis import RedisRetryBudget
from a2a_client_errors.testing import RecordingHook

BODY = {"jsonrpc": "2.0", "id": 1, "method": "GetTask"}


class Tally:
    """The outcomes of a replica's calls, from any thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: Counter[str] = Counter()
        self.unexpected: list[str] = []

    def record(self, exc: BaseException | None) -> None:
        """Count one call's outcome: ok, a `CallFailed` by type, or anything else as a bug."""
        with self.lock:
            if exc is None:
                self.outcomes["ok"] += 1
            elif isinstance(exc, CallFailed):
                self.outcomes[type(exc).__name__] += 1
            else:
                self.unexpected.append(f"{type(exc).__name__}: {exc}")


def call_once(client: httpx.Client, tally: Tally) -> None:
    """One call, its outcome counted."""
    try:
        client.post("/", json=BODY)
    except Exception as exc:  # counted by type
        tally.record(exc)
    else:
        tally.record(None)


async def acall_once(client: httpx.AsyncClient, tally: Tally) -> None:
    """One async call, its outcome counted."""
    try:
        await client.post("/", json=BODY)
    except Exception as exc:  # counted by type
        tally.record(exc)
    else:
        tally.record(None)


def run_threads(args: argparse.Namespace, guard: Guard, tally: Tally) -> None:
    """``--workers`` threads, ``--calls`` calls each, through one GuardTransport."""
    transport = GuardTransport(guard, raise_failures=True)
    with httpx.Client(transport=transport, base_url=args.peer, timeout=30) as client:

        def work() -> None:
            for _ in range(args.calls):
                call_once(client, tally)

        threads = [threading.Thread(target=work) for _ in range(args.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)


async def run_tasks(args: argparse.Namespace, guard: Guard, tally: Tally) -> None:
    """``--workers`` asyncio tasks, ``--calls`` calls each, through one AsyncGuardTransport."""
    transport = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(transport=transport, base_url=args.peer, timeout=30) as client:

        async def work() -> None:
            for _ in range(args.calls):
                await acall_once(client, tally)

        await asyncio.gather(*(work() for _ in range(args.workers)))


def main() -> None:
    """Run one replica and print what happened."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", required=True)
    parser.add_argument("--budget", choices=["shared", "local"], required=True)
    parser.add_argument("--redis", default="")
    parser.add_argument("--prefix", default="fleet:")
    parser.add_argument("--mode", choices=["threads", "tasks"], default="threads")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--capacity", type=float, default=10.0)
    parser.add_argument("--lease", type=int, default=2)
    args = parser.parse_args()

    store: RedisRetryBudget | None = None
    budget: RedisRetryBudget | BudgetRegistry
    if args.budget == "shared":
        budget = store = RedisRetryBudget.from_url(
            args.redis,
            async_client=args.mode == "tasks",
            prefix=args.prefix,
            capacity=args.capacity,
            lease=args.lease,
            timeout=5.0,  # a loaded test machine must not make this a fallback test
        )
    else:
        budget = BudgetRegistry(lambda: RetryBudget(capacity=args.capacity))
    hook = RecordingHook()
    guard = Guard(budget=budget, max_attempts=3, sleep=lambda _: None, hooks=[hook])
    tally = Tally()
    if args.mode == "threads":
        run_threads(args, guard, tally)
        if store is not None:
            store.close()  # unused leases go back
            store.client.close()
    else:

        async def run() -> None:
            await run_tasks(args, guard, tally)
            if store is not None:
                await store.aclose()
                await store.client.aclose()

        asyncio.run(run())
    report = {
        "calls": args.workers * args.calls,
        "outcomes": dict(tally.outcomes),
        "unexpected": tally.unexpected,
        "fallbacks": len(hook.fallbacks),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
