"""Fleet-wide retry budgets: amplification of a fleet, and the cost of the Redis budget per call.

Starts its own ``redis-server`` on a free port of 127.0.0.1 (the binary on PATH, or
``/usr/bin/redis-server``), and stops it at the end.

1. Amplification under a full outage of the peer. The same load, ``--calls`` calls in all, is
   spread over 1, 8 and 32 processes (two threads each), every call failing with a 503 and
   allowed three attempts, the sleep injected (no waiting). Each fleet runs twice: with a
   budget per process (`RetryBudget`, 10 tokens) and with one `RedisRetryBudget` (10 tokens for
   the fleet). Attempts per call are counted by the processes themselves (every attempt calls
   the peer function once). Target: at most 1.2 with Redis, whatever the number of processes.
2. The added latency per call on the success path: ``Guard.call`` of a function that returns
   a result at once, with the in-process budget, with the Redis budget (its local lease and
   batched credits), and with the Redis budget without them (``lease=1, credit_batch=0``: every
   success is sent), in a healthy fleet (the bucket is full) and in a recovering one (the
   bucket is low, so credits are sent); plus, for reference, what one synchronous script round
   trip per call would cost. Interleaved round by round; medians. Target: under 50 µs added
   with the lease. Then, at a realistic pace (a call every 0.5 ms), how many scripts per 1000
   calls Redis runs for each.
3. Local decisions with Redis healthy, under concurrency: ``--bursts`` bursts of 150 concurrent
   ``Guard.acall`` (a ``redis.asyncio`` client, its pool of 100 connections) and of 128 threads
   each making 20 ``Guard.call`` (a sync client), every call answered 503 then 200, so every
   call asks the budget once; default settings (``timeout`` 50 ms). Counted: the share of
   those decisions taken by the local fallback rather than the fleet bucket, and the scripts
   Redis ran. Target: 0 %.

    python bench/bench_redis_budget.py [--calls 1280] [--rounds 15] [--number 2000]
        [--bursts 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import redis

from a2a_client_errors import BudgetRegistry, CallFailed, Guard, RedisRetryBudget, RetryBudget
from a2a_client_errors.integrations.redis import SCRIPT, RedisPeerBudget

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

CAPACITY = 10
PACED = 400
PROCESS_COUNTS = (1, 8, 32)
THREADS = 2


# --- a redis-server of our own ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """redis-server on a free loopback port, without persistence, ready when it says so."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            sys.exit("redis-server is not installed (apt-get install -y redis-server)")
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(  # noqa: S603 (a fixed command)
            [
                *(binary, "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--logfile", ""),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 10
        for line in self.process.stdout:
            if b"Ready to accept connections" in line:
                break
            if time.monotonic() > deadline:
                self.stop()
                sys.exit("redis-server did not start")
        threading.Thread(target=self.process.stdout.read, daemon=True).start()  # keep draining

    def stop(self) -> None:
        """Stop the server."""
        self.process.terminate()
        self.process.wait(10)


# --- 1. amplification ---------------------------------------------------------------------------


def worker(kind: str, redis_url: str, prefix: str, calls: int) -> dict[str, int]:
    """One process of a fleet: ``calls`` failing calls over THREADS threads; attempts counted."""
    store: RedisRetryBudget | None = None
    budget: RedisRetryBudget | BudgetRegistry
    if kind == "redis":
        budget = store = RedisRetryBudget.from_url(
            redis_url, prefix=prefix, capacity=CAPACITY, timeout=5.0
        )
    else:
        budget = BudgetRegistry(lambda: RetryBudget(capacity=CAPACITY))
    guard = Guard(budget=budget, max_attempts=3, sleep=lambda _: None)
    attempts = [0] * THREADS

    def work(index: int, count: int) -> None:
        def peer() -> httpx.Response:
            attempts[index] += 1
            return httpx.Response(503)

        for _ in range(count):
            with contextlib.suppress(CallFailed):  # every call fails: what counts is attempts
                guard.call(peer, peer="agent.example")

    shares = [calls // THREADS + (1 if i < calls % THREADS else 0) for i in range(THREADS)]
    threads = [threading.Thread(target=work, args=(i, n)) for i, n in enumerate(shares)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if store is not None:
        store.close()
        store.client.close()
    return {"calls": calls, "attempts": sum(attempts)}


def fleet(kind: str, processes: int, total: int, redis_url: str) -> dict[str, Any]:
    """Run one fleet; its amplification and retries."""
    prefix = f"bench:{kind}:{processes}:{time.monotonic_ns()}:"
    shares = [total // processes + (1 if i < total % processes else 0) for i in range(processes)]
    running = [
        subprocess.Popen(  # noqa: S603 (this very script)
            [sys.executable, __file__, "--worker", kind, redis_url, prefix, str(share)],
            stdout=subprocess.PIPE,
        )
        for share in shares
    ]
    reports = [json.loads(process.communicate(timeout=600)[0]) for process in running]
    calls = sum(r["calls"] for r in reports)
    attempts = sum(r["attempts"] for r in reports)
    return {
        "budget": "per process" if kind == "local" else "Redis (shared)",
        "processes": processes,
        "calls": calls,
        "retries": attempts - calls,
        "amplification": attempts / calls,
    }


# --- 2. the success path ------------------------------------------------------------------------


def _timed(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def _exchanges(client: redis.Redis) -> int:
    """Scripts the server ran, by its own count."""
    stats = client.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
        - int(stats.get(f"cmdstat_{name}", {}).get("failed_calls", 0))
        for name in ("eval", "evalsha")
    )


def _low(store: RedisRetryBudget, client: redis.Redis) -> None:
    """Keep the bucket far from full, so that credits are sent (a recovering fleet)."""
    client.hset(store.prefix + "agent.example", mapping={"tokens": "0", "ts": "0"})


def latency(redis_url: str, rounds: int, number: int) -> list[dict[str, Any]]:
    """Seconds per successful Guard.call with each budget, interleaved round by round."""
    admin = redis.Redis.from_url(redis_url)
    result = {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t", "status": {}}}}
    leased = RedisRetryBudget.from_url(redis_url, prefix="lat:leased:", timeout=1.0)
    unleased = RedisRetryBudget.from_url(
        redis_url, prefix="lat:unleased:", lease=1, credit_batch=0, timeout=1.0
    )
    big = 1e9  # a bucket that successes never fill: every credit has somewhere to go
    leased_low = RedisRetryBudget.from_url(
        redis_url, prefix="lat:leased-low:", capacity=big, timeout=1.0
    )
    unleased_low = RedisRetryBudget.from_url(
        redis_url, prefix="lat:unleased-low:", capacity=big, lease=1, credit_batch=0, timeout=1.0
    )
    for store in (leased_low, unleased_low):
        _low(store, admin)
    script = admin.register_script(SCRIPT)
    args = [str(CAPACITY), "0", "0.5", "0", "1", "600000"]
    variants: dict[str, Callable[[], object]] = {}
    guards = {
        "in-process RetryBudget": Guard(),
        "Redis, lease (bucket full)": Guard(budget=leased),
        "Redis, no lease (bucket full)": Guard(budget=unleased),
        "Redis, lease (bucket low)": Guard(budget=leased_low),
        "Redis, no lease (bucket low)": Guard(budget=unleased_low),
    }
    for name, guard in guards.items():
        variants[name] = lambda guard=guard: guard.call(lambda: result, peer="agent.example")
    plain = guards["in-process RetryBudget"]
    variants["reference: one EVALSHA per call"] = lambda: (
        script(keys=["lat:sync:agent.example"], args=args),
        plain.call(lambda: result, peer="agent.example"),
    )
    stores = {name: guard.budgets for name, guard in guards.items()}
    load: dict[str, float] = {}
    for name, fn in variants.items():
        _timed(fn, 500)  # warm up connections and caches
        # Redis's load at a realistic pace (a call every 0.5 ms): at full speed, credits
        # sent in the background coalesce while one exchange is in flight.
        store = stores.get(name)
        before = _exchanges(admin)
        for _ in range(PACED):
            fn()
            time.sleep(0.0005)
        if isinstance(store, RedisRetryBudget):  # wait for what was sent in the background
            store._worker.submit(lambda: None).result(10)
        load[name] = (_exchanges(admin) - before) * 1000 / PACED
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            samples[name].append(_timed(fn, number))
        for store in (leased_low, unleased_low):
            _low(store, admin)
    for store in (leased, unleased, leased_low, unleased_low):
        store.close()
        store.client.close()
    admin.close()
    base = statistics.median(samples["in-process RetryBudget"])
    return [
        {
            "budget": name,
            "us_per_call": statistics.median(values) * 1e6,
            "added_us": (statistics.median(values) - base) * 1e6,
            "exchanges_per_1000": load[name],
        }
        for name, values in samples.items()
    ]


# --- 3. local decisions under concurrency, Redis healthy ----------------------------------------

ASYNC_CALLS = 150
THREAD_COUNT = 128
THREAD_CALLS = 20


def _flaky() -> Callable[[], httpx.Response]:
    """A peer that answers 503 once, then 200: each call asks the budget for one retry."""
    answers = iter([503])
    body = {"jsonrpc": "2.0", "id": 1, "result": {}}
    return lambda: httpx.Response(next(answers, 200), json=body)


class _Counted:
    """Counts the spends the local fallback decides (every local decision goes through it)."""

    def __init__(self) -> None:
        self.local = 0
        self._original = RedisPeerBudget._spend_locally

    def __enter__(self) -> _Counted:
        original = self._original

        def counting(budget: RedisPeerBudget) -> bool:
            self.local += 1
            return original(budget)

        RedisPeerBudget._spend_locally = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        RedisPeerBudget._spend_locally = self._original  # type: ignore[method-assign]


async def _async_bursts(redis_url: str, bursts: int) -> tuple[int, int]:
    store = RedisRetryBudget.from_url(
        redis_url, async_client=True, prefix=f"conc:async:{time.monotonic_ns()}:", capacity=1e6
    )
    guard = Guard(budget=store, sleep=lambda _: None)

    async def call() -> None:
        peer = _flaky()

        async def attempt() -> httpx.Response:
            return peer()

        with contextlib.suppress(CallFailed):
            await guard.acall(attempt, peer="agent.example")

    with _Counted() as counted:
        for _ in range(bursts):
            await asyncio.gather(*(call() for _ in range(ASYNC_CALLS)))
    await store.aclose()
    await store.client.aclose()
    return counted.local, bursts * ASYNC_CALLS


def _thread_bursts(redis_url: str, bursts: int) -> tuple[int, int]:
    store = RedisRetryBudget.from_url(
        redis_url, prefix=f"conc:threads:{time.monotonic_ns()}:", capacity=1e6
    )
    guard = Guard(budget=store, sleep=lambda _: None)
    with _Counted() as counted:
        for _ in range(bursts):
            start = threading.Barrier(THREAD_COUNT)

            def work(start: threading.Barrier = start) -> None:
                start.wait(30)
                for _ in range(THREAD_CALLS):
                    with contextlib.suppress(CallFailed):
                        guard.call(_flaky(), peer="agent.example")

            threads = [threading.Thread(target=work) for _ in range(THREAD_COUNT)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
    store.close()
    store.client.close()
    return counted.local, bursts * THREAD_COUNT * THREAD_CALLS


def concurrency(redis_url: str, bursts: int) -> list[dict[str, Any]]:
    """The share of retry decisions taken locally with Redis healthy, async and threaded."""
    admin = redis.Redis.from_url(redis_url)
    rows = []
    for name, run in (
        (
            f"{ASYNC_CALLS} concurrent async calls",
            lambda: asyncio.run(_async_bursts(redis_url, bursts)),
        ),
        (
            f"{THREAD_COUNT} threads x {THREAD_CALLS} calls",
            lambda: _thread_bursts(redis_url, bursts),
        ),
    ):
        before = _exchanges(admin)
        local, decisions = run()
        rows.append(
            {
                "load": name,
                "decisions": decisions,
                "local": local,
                "local_share": local / decisions,
                "scripts": _exchanges(admin) - before,
            }
        )
    admin.close()
    return rows


# --- the report ---------------------------------------------------------------------------------


def _rows(results: dict[str, Any]) -> Iterator[str]:
    yield "| processes | budget | calls | retries | attempts/call | target |"
    yield "|---:|---|---:|---:|---:|---:|"
    for r in results["amplification"]:
        target = "≤ 1.2" if r["budget"].startswith("Redis") else ""
        met = " (met)" if target and r["amplification"] <= 1.2 else ""
        yield (
            f"| {r['processes']} | {r['budget']} | {r['calls']} | {r['retries']} |"
            f" {r['amplification']:.3f} | {target}{met} |"
        )
    yield ""
    yield "| budget | per call | added vs in-process | scripts per 1000 calls (paced) | target |"
    yield "|---|---:|---:|---:|---:|"
    for r in results["latency"]:
        target = "< 50 µs" if r["budget"].startswith("Redis, lease") else ""
        yield (
            f"| {r['budget']} | {r['us_per_call']:.1f} µs | {r['added_us']:+.1f} µs |"
            f" {r['exchanges_per_1000']:.0f} | {target} |"
        )
    yield ""
    yield "| load (Redis healthy) | retry decisions | decided locally | scripts run | target |"
    yield "|---|---:|---:|---:|---:|"
    for r in results["concurrency"]:
        met = " (met)" if r["local"] == 0 else ""
        yield (
            f"| {r['load']} | {r['decisions']} | {r['local_share']:.1%} ({r['local']}) |"
            f" {r['scripts']} | 0 %{met} |"
        )


def main() -> int:
    """Run both parts and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1280, help="failing calls per fleet")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000, help="calls per round and budget")
    parser.add_argument("--bursts", type=int, default=5, help="bursts of concurrent calls")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, redis_url, prefix, calls = args.worker
        print(json.dumps(worker(kind, redis_url, prefix, int(calls))))
        return 0
    server = RedisServer()
    try:
        amplification = [
            fleet(kind, processes, args.calls, server.url)
            for processes in PROCESS_COUNTS
            for kind in ("local", "redis")
        ]
        results = {
            "amplification": amplification,
            "latency": latency(server.url, args.rounds, args.number),
            "concurrency": concurrency(server.url, args.bursts),
        }
    finally:
        server.stop()
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"Python {sys.version.split()[0]}; {args.calls} failing calls per fleet, {THREADS} threads"
        f" per process, capacity {CAPACITY}; {args.rounds} rounds x {args.number} calls, medians"
    )
    print()
    for row in _rows(results):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
