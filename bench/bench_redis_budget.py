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
3. Local decisions with Redis healthy, under concurrency: ``--bursts`` bursts of 150, 300 and
   1,000 (``--sizes``) concurrent ``Guard.acall`` (a ``redis.asyncio`` client) and of 128
   threads each making 20 ``Guard.call`` (a sync client), every call answered 503 then 200, so
   every call asks the budget once; default settings (``timeout`` 50 ms). Each load runs
   without lag, then with ``--lag-ms`` (100) of injected lag: for async calls, a task that
   blocks the event loop with ``time.sleep`` for that long, every 5 ms of loop time, while
   each burst runs; for threads, one more thread that holds the GIL for stretches as long,
   5 ms apart (one ``sum(range(n))``, a single call into C sized to last that long: a
   pure-Python busy loop would hand the GIL over every switch interval, 5 ms). Counted: the
   share of those decisions taken by the local fallback rather than the fleet bucket, the
   scripts Redis ran (its INFO commandstats), and those scripts per 1,000 spends; the lag
   column gives the stalls injected and their median length. Target: 0 %, lag or not.
4. Recovery after Redis stalls: ``--peers`` (20) peers of one async budget (capacity 1,000,
   so no bucket runs dry; other settings default), a call to each every ``--pace-ms`` (50)
   ms, each answered 503 then 200. Once every peer decides on its shared bucket, Redis is
   stopped (SIGSTOP) for ``--pause`` (1.5) s while the calls go on (they must decide locally),
   then resumed (SIGCONT) and the calls go on for ``--window`` (5) s. From the budget's
   fallback events: how many peers fell back, how many seconds after SIGCONT each was shared
   again (median, max, and how many never were within the window), and how often a peer fell
   back again after that. Then the largest gap between a shared peer's ``tokens`` and the
   level its bucket holds in Redis (HGET ``tokens``): as the calls end (``tokens`` counts the
   process's lease too), and after ``aflush`` (leases given back: a gap left is tokens the
   process lost track of). For context, the event loop's own delay (how late a 10 ms sleep
   wakes) and Redis's PING round trip (from a thread), at their worst, after SIGCONT: a stall
   of the loop or the machine longer than ``timeout`` sends peers local with Redis healthy.
   Target: every peer shared again within 1 s.

    python bench/bench_redis_budget.py [--calls 1280] [--rounds 15] [--number 2000]
        [--bursts 5] [--sizes 150,300,1000] [--lag-ms 100] [--peers 20] [--pause 1.5]
        [--window 5] [--pace-ms 50] [--parts 1,2,3,4] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import os
import shutil
import signal
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
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import BudgetRegistry, CallFailed, Guard, RetryBudget
from a2a_client_errors.integrations.redis import SCRIPT, RedisPeerBudget, RedisRetryBudget
from a2a_client_errors.types import BudgetState

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from a2a_client_errors.hooks import BudgetFallback

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

ASYNC_SIZES = (150, 300, 1000)
THREAD_COUNT = 128
THREAD_CALLS = 20
LAG = 0.1
LAG_EVERY = 0.005  # seconds of loop time (or of free GIL) between two stalls


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


async def _block_loop(lag: float, stop: asyncio.Event, stalls: list[float]) -> None:
    """Block the event loop for ``lag`` seconds, every LAG_EVERY s of loop time, until told."""
    while not stop.is_set():
        start = time.perf_counter()
        time.sleep(lag)  # what a blocking call in async code does to every task
        stalls.append(time.perf_counter() - start)
        await asyncio.sleep(LAG_EVERY)


def _gil_size(lag: float) -> int:
    """The ``n`` for which ``sum(range(n))`` lasts ``lag`` seconds here (best of five tries)."""
    probe = 1_000_000
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        sum(range(probe))
        best = min(best, time.perf_counter() - start)
    return max(1, int(probe * lag / best))


def _hog_gil(size: int, stop: threading.Event, stalls: list[float]) -> None:
    """Hold the GIL for stretches of one ``sum(range(size))``, LAG_EVERY apart, until told.

    A pure-Python loop would not do: the interpreter hands the GIL over every switch interval
    (5 ms). One call into C keeps it until it returns, as a blocked event loop keeps its tasks.
    """
    while not stop.is_set():
        start = time.perf_counter()
        sum(range(size))
        stalls.append(time.perf_counter() - start)
        time.sleep(LAG_EVERY)


async def _async_bursts(
    redis_url: str, size: int, bursts: int, lag: float
) -> tuple[int, int, list[float]]:
    store = RedisRetryBudget.from_url(
        redis_url, async_client=True, prefix=f"conc:async:{time.monotonic_ns()}:", capacity=1e6
    )
    guard = Guard(budget=store, sleep=lambda _: None)
    stalls: list[float] = []

    async def call() -> None:
        peer = _flaky()

        async def attempt() -> httpx.Response:
            return peer()

        with contextlib.suppress(CallFailed):
            await guard.acall(attempt, peer="agent.example")

    await call()  # a connection open, the script known: what is counted is the burst
    with _Counted() as counted:
        for _ in range(bursts):
            stop = asyncio.Event()
            lagging = asyncio.create_task(_block_loop(lag, stop, stalls)) if lag else None
            await asyncio.gather(*(call() for _ in range(size)))
            stop.set()
            if lagging is not None:
                await lagging
    await store.aclose()
    await store.client.aclose()
    return counted.local, bursts * size, stalls


def _run_async_bursts(
    redis_url: str, size: int, bursts: int, lag: float
) -> tuple[int, int, list[float]]:
    return asyncio.run(_async_bursts(redis_url, size, bursts, lag))


def _thread_bursts(redis_url: str, bursts: int, gil: int) -> tuple[int, int, list[float]]:
    store = RedisRetryBudget.from_url(
        redis_url, prefix=f"conc:threads:{time.monotonic_ns()}:", capacity=1e6
    )
    guard = Guard(budget=store, sleep=lambda _: None)
    stalls: list[float] = []
    with contextlib.suppress(CallFailed):
        guard.call(_flaky(), peer="agent.example")  # as for async calls: a warm client
    with _Counted() as counted:
        for _ in range(bursts):
            start = threading.Barrier(THREAD_COUNT)

            def work(start: threading.Barrier = start) -> None:
                start.wait(30)
                for _ in range(THREAD_CALLS):
                    with contextlib.suppress(CallFailed):
                        guard.call(_flaky(), peer="agent.example")

            threads = [threading.Thread(target=work) for _ in range(THREAD_COUNT)]
            stop = threading.Event()
            hog = threading.Thread(target=_hog_gil, args=(gil, stop, stalls)) if gil else None
            if hog is not None:
                hog.start()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            stop.set()
            if hog is not None:
                hog.join()
    store.close()
    store.client.close()
    return counted.local, bursts * THREAD_COUNT * THREAD_CALLS, stalls


def concurrency(
    redis_url: str, bursts: int, sizes: Sequence[int], lag: float
) -> list[dict[str, Any]]:
    """The share of retry decisions taken locally with Redis healthy, with and without lag."""
    admin = redis.Redis.from_url(redis_url)
    gil = _gil_size(lag) if lag else 0
    delays = (0.0, lag) if lag else (0.0,)
    runs: list[tuple[str, float, Callable[[], tuple[int, int, list[float]]]]] = [
        (
            f"{size} concurrent async calls",
            delay,
            functools.partial(_run_async_bursts, redis_url, size, bursts, delay),
        )
        for size in sizes
        for delay in delays
    ]
    runs.extend(
        (
            f"{THREAD_COUNT} threads x {THREAD_CALLS} calls",
            delay,
            functools.partial(_thread_bursts, redis_url, bursts, gil if delay else 0),
        )
        for delay in delays
    )
    rows = []
    for name, delay, run in runs:
        before = _exchanges(admin)
        started = time.perf_counter()
        local, decisions, stalls = run()
        scripts = _exchanges(admin) - before
        rows.append(
            {
                "load": name,
                "lag_ms": delay * 1000,
                "lag": "" if not delay else ("GIL held" if "threads" in name else "loop blocked"),
                "stalls": len(stalls),
                "stall_ms_median": statistics.median(stalls) * 1000 if stalls else 0.0,
                "seconds": time.perf_counter() - started,
                "decisions": decisions,
                "local": local,
                "local_share": local / decisions,
                "scripts": scripts,
                "scripts_per_1000": scripts * 1000 / decisions,
            }
        )
    admin.close()
    return rows


# --- 4. recovery after Redis stalls ---------------------------------------------------------------

RECOVERY_CAPACITY = 1000


def _recovered(
    history: list[tuple[float, BudgetState]], resumed: float
) -> tuple[float | None, int, bool]:
    """What a peer's fallback events since Redis was stopped say.

    The seconds after ``resumed`` of its first event back to shared (None: none came), its
    relapses (back to local after that), and whether it fell back at all.
    """
    fell = any(state is BudgetState.LOCAL for _, state in history)
    shared = [at for at, state in history if at >= resumed and state is BudgetState.SHARED]
    if not shared:
        return None, 0, fell
    relapses = sum(1 for at, state in history if at > shared[0] and state is BudgetState.LOCAL)
    return shared[0] - resumed, relapses, fell


class _Watch:
    """What the budget's ``timeout`` competes with while the calls run.

    How late the event loop wakes a 10 ms sleep, and how long Redis takes to answer a PING
    (from a thread).
    """

    def __init__(self, url: str) -> None:
        self.loop: list[float] = []
        self.ping: list[float] = []
        self._url = url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._ping)
        self._task: asyncio.Task[None] | None = None

    def _ping(self) -> None:
        client = redis.Redis.from_url(self._url, socket_timeout=5)
        while not self._stop.wait(0.01):
            start = time.monotonic()
            client.ping()
            self.ping.append(time.monotonic() - start)
        client.close()

    async def _sleeps(self) -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(0.01)
            self.loop.append(time.monotonic() - start - 0.01)

    def start(self) -> None:
        self._task = asyncio.create_task(self._sleeps())
        self._thread.start()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._stop.set()
        self._thread.join()


class _Calls:
    """Calls to every peer at a steady pace, each answered 503 then 200."""

    def __init__(self, guard: Guard, names: list[str], pace: float) -> None:
        self.made = 0
        self._guard = guard
        self._names = names
        self._pace = pace

    async def _call(self, name: str) -> None:
        peer = _flaky()

        async def attempt() -> httpx.Response:
            return peer()

        with contextlib.suppress(CallFailed):
            await self._guard.acall(attempt, peer=name)

    async def drive(self, seconds: float) -> None:
        """A call to each peer every ``pace`` seconds for ``seconds``; then waits for them all.

        No call waits for the one before.
        """
        running: list[asyncio.Task[None]] = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            running.extend(asyncio.create_task(self._call(name)) for name in self._names)
            self.made += len(self._names)
            await asyncio.sleep(self._pace)
        await asyncio.gather(*running)


async def _recovery(
    server: RedisServer, peers: int, pause: float, window: float, pace: float
) -> dict[str, Any]:
    store = RedisRetryBudget.from_url(
        server.url,
        async_client=True,
        prefix=f"recovery:{time.monotonic_ns()}:",
        capacity=RECOVERY_CAPACITY,
    )
    names = [f"agent-{index}.example" for index in range(peers)]
    history: dict[str, list[tuple[float, BudgetState]]] = {name: [] for name in names}

    def listen(event: BudgetFallback) -> None:
        history[event.peer].append((time.monotonic(), event.state))

    store.subscribe(listen)
    calls = _Calls(Guard(budget=store, sleep=lambda _: None), names, pace)
    drive = calls.drive

    # Every peer holds a lease from its shared bucket first (a fresh client's first exchanges
    # may time out: then the peers are local for a while, and the calls go on until they are not).
    warm = time.monotonic()
    await drive(1.0)
    while any(store.get(name).state is BudgetState.LOCAL for name in names):
        if time.monotonic() - warm > 10 * (1 + store.retry_interval):
            sys.exit("the recovery run's peers never decided on the shared bucket")
        await drive(0.1)
    warmup = time.monotonic() - warm
    watch = _Watch(server.url)
    with _Counted() as counted:
        stopped = time.monotonic()
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            before = calls.made
            await drive(pause)  # each call waits at most the budget's timeout
            stopped_calls = calls.made - before
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        resumed = time.monotonic()
        stopped_local = counted.local
    watch.start()
    await drive(window)
    watch.stop()
    admin = redis.Redis.from_url(server.url)
    gaps = [_gaps(store, admin, names)]
    await store.aflush()  # leases go back: what is left is what this process lost track of
    gaps.append(_gaps(store, admin, names))
    admin.close()
    await store.aclose()
    await store.client.aclose()
    return {
        "warmup_s": warmup,
        "stopped_calls": stopped_calls,
        "stopped_local": stopped_local,
        "recovered": {
            name: _recovered([e for e in history[name] if e[0] >= stopped], resumed)
            for name in names
        },
        "loop_delay_max_ms": max(watch.loop, default=0.0) * 1000,
        "ping_max_ms": max(watch.ping, default=0.0) * 1000,
        "shared_at_end": sum(1 for gap in gaps[0] if gap is not None),
        "tokens_gap_max": max((gap for gap in gaps[0] if gap is not None), default=None),
        "tokens_gap_max_flushed": max((gap for gap in gaps[1] if gap is not None), default=None),
    }


def _gaps(store: RedisRetryBudget, admin: redis.Redis, names: list[str]) -> list[float | None]:
    """How far each shared peer's ``tokens`` is from the level its bucket holds in Redis.

    None for a peer that decides locally (its ``tokens`` is its local bucket then).
    """
    gaps: list[float | None] = []
    for name in names:
        budget = store.get(name)
        held = admin.hget(store.prefix + name, "tokens")
        level = store.capacity if held is None else float(held)  # no key yet: a full bucket
        shared = budget.state is BudgetState.SHARED
        gaps.append(abs(budget.tokens - level) if shared else None)
    return gaps


def recovery(
    server: RedisServer, peers: int, pause: float, window: float, pace: float
) -> dict[str, Any]:
    """Peers of one async budget while Redis is stopped, then how soon each is shared again."""
    run = asyncio.run(_recovery(server, peers, pause, window, pace))
    recovered: dict[str, tuple[float | None, int, bool]] = run.pop("recovered")
    seconds = [at for at, _, fell in recovered.values() if fell and at is not None]
    return {
        "peers": peers,
        "pause_s": pause,
        "window_s": window,
        "pace_ms": pace * 1000,
        **run,
        "fell_back": sum(1 for _, _, fell in recovered.values() if fell),
        "never_recovered": sum(1 for at, _, fell in recovered.values() if fell and at is None),
        "relapses": sum(relapses for _, relapses, _ in recovered.values()),
        "recovery_s": {name: at for name, (at, _, fell) in recovered.items() if fell},
        "recovery_median_s": statistics.median(seconds) if seconds else None,
        "recovery_max_s": max(seconds) if seconds else None,
    }


# --- the report ---------------------------------------------------------------------------------


AMPLIFICATION_TARGET = 1.2
ADDED_TARGET_US = 50.0
RECOVERY_TARGET_S = 1.0


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _gap(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _recovery_met(r: dict[str, Any]) -> bool:
    """Every peer fell back while Redis was stopped, and was shared again within 1 s."""
    return (
        r["fell_back"] == r["peers"]
        and not r["never_recovered"]
        and r["recovery_max_s"] is not None
        and r["recovery_max_s"] <= RECOVERY_TARGET_S
    )


def _lag(r: dict[str, Any]) -> str:
    if not r["lag"]:
        return "none"
    return f"{r['lag']} {r['lag_ms']:.0f} ms x {r['stalls']} (median {r['stall_ms_median']:.0f} ms)"


def markdown(figures: dict[str, Any]) -> list[str]:
    """A table per part that ran."""
    lines: list[str] = []
    if "amplification" in figures:
        lines += ["Amplification under a full outage of the peer:", ""]
        lines += table(
            ["processes", "budget", "calls", "retries", "attempts/call", "target"],
            (
                [
                    r["processes"],
                    r["budget"],
                    r["calls"],
                    r["retries"],
                    f"{r['amplification']:.3f}",
                    f"≤ {AMPLIFICATION_TARGET}" if r["budget"].startswith("Redis") else "",
                ]
                for r in figures["amplification"]
            ),
            "rlrrrr",
        )
    if "latency" in figures:
        lines += ["", "The success path (`Guard.call` of a function that returns at once):", ""]
        lines += table(
            [
                "budget",
                "per call",
                "added vs in-process",
                "Redis scripts per 1,000 calls",
                "target",
            ],
            (
                [
                    r["budget"],
                    f"{r['us_per_call']:.1f} µs",
                    f"{r['added_us']:+.1f} µs",
                    f"{r['exchanges_per_1000']:.0f}",
                    f"< {ADDED_TARGET_US:.0f} µs" if r["budget"].startswith("Redis, lease") else "",
                ]
                for r in figures["latency"]
            ),
        )
    if "concurrency" in figures:
        lines += ["", "Local decisions with Redis healthy, under load:", ""]
        lines += table(
            [
                "load (Redis healthy)",
                "injected lag",
                "retry decisions",
                "decided locally",
                "scripts run",
                "per 1,000 spends",
                "target",
            ],
            (
                [
                    r["load"],
                    _lag(r),
                    r["decisions"],
                    f"{r['local_share']:.1%} ({r['local']})",
                    r["scripts"],
                    f"{r['scripts_per_1000']:.0f}",
                    "0 %",
                ]
                for r in figures["concurrency"]
            ),
            "llrrrrr",
        )
    if "recovery" in figures:
        r = figures["recovery"]
        stopped = r["stopped_local"] / max(1, r["stopped_calls"])
        seconds = sorted(at for at in r["recovery_s"].values() if at is not None)
        lines += ["", "Recovery after Redis stalls:", ""]
        lines += table(
            [
                f"Redis stopped {r['pause_s']:g} s, {r['peers']} peers, a call each every"
                f" {r['pace_ms']:g} ms",
                "",
            ],
            [
                ["peers that fell back", f"{r['fell_back']} of {r['peers']}"],
                [
                    "retry decisions taken locally while stopped",
                    f"{stopped:.0%} ({r['stopped_local']} of {r['stopped_calls']} calls)",
                ],
                ["shared again after SIGCONT, median", _seconds(r["recovery_median_s"])],
                [
                    f"shared again after SIGCONT, max (target ≤ {RECOVERY_TARGET_S:g} s)",
                    _seconds(r["recovery_max_s"]),
                ],
                [f"never shared again within {r['window_s']:g} s", r["never_recovered"]],
                ["relapses to local afterwards (all peers)", r["relapses"]],
                ["peers local at the end", r["peers"] - r["shared_at_end"]],
                [
                    "largest gap, tokens view vs Redis level (after flush)",
                    f"{_gap(r['tokens_gap_max'])} ({_gap(r['tokens_gap_max_flushed'])})",
                ],
                [
                    "after SIGCONT: event-loop delay, max; Redis PING, max",
                    f"{r['loop_delay_max_ms']:.0f} ms; {r['ping_max_ms']:.0f} ms",
                ],
            ],
        )
        lines += [
            "",
            "Seconds after SIGCONT until each peer was shared again: "
            + (", ".join(f"{at:.2f}" for at in seconds) or "none"),
        ]
    return lines


def targets(figures: dict[str, Any]) -> list[Target]:
    """Each part's target: amplification, added latency, local decisions, recovery."""
    found = []
    if "amplification" in figures:
        shared = [r for r in figures["amplification"] if r["budget"].startswith("Redis")]
        worst = max(r["amplification"] for r in shared)
        found.append(
            Target(
                f"full outage, Redis budget: ≤ {AMPLIFICATION_TARGET} attempts per call,"
                " whatever the number of processes",
                f"{worst:.3f} at worst",
                worst <= AMPLIFICATION_TARGET,
            )
        )
    if "latency" in figures:
        leased = [r for r in figures["latency"] if r["budget"].startswith("Redis, lease")]
        worst = max(r["added_us"] for r in leased)
        found.append(
            Target(
                f"success path, Redis budget with its lease: < {ADDED_TARGET_US:.0f} µs added",
                f"{worst:+.1f} µs at worst",
                worst < ADDED_TARGET_US,
            )
        )
    if "concurrency" in figures:
        rows = figures["concurrency"]
        local = sum(r["local"] for r in rows)
        decisions = sum(r["decisions"] for r in rows)
        found.append(
            Target(
                "Redis healthy: 0 % of retry decisions local, up to 1,000 concurrent callers",
                f"{local} of {decisions} local",
                local == 0,
            )
        )
    if "recovery" in figures:
        r = figures["recovery"]
        found.append(
            Target(
                f"every peer shared again within {RECOVERY_TARGET_S:g} s after Redis returns",
                f"{_seconds(r['recovery_max_s'])} at worst, {r['never_recovered']} never",
                _recovery_met(r),
            )
        )
    return found


def main() -> int:
    """Run the parts and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=1280, help="failing calls per fleet")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000, help="calls per round and budget")
    parser.add_argument("--bursts", type=int, default=5, help="bursts of concurrent calls")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, ASYNC_SIZES)),
        help="concurrent async calls per burst, comma-separated",
    )
    parser.add_argument(
        "--lag-ms", type=float, default=LAG * 1000, help="injected stalls (0: no lag rows)"
    )
    parser.add_argument("--peers", type=int, default=20, help="peers of the recovery run")
    parser.add_argument("--pause", type=float, default=1.5, help="seconds Redis is stopped")
    parser.add_argument(
        "--window", type=float, default=5.0, help="seconds of calls after Redis resumes"
    )
    parser.add_argument("--pace-ms", type=float, default=50.0, help="ms between calls to a peer")
    parser.add_argument("--parts", default="1,2,3,4", help="parts to run, comma-separated")
    add_json_option(parser)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, redis_url, prefix, calls = args.worker
        print(json.dumps(worker(kind, redis_url, prefix, int(calls))))
        return 0
    parts = set(args.parts.split(","))
    load = os.getloadavg()[0]  # others' work on this machine makes loops and Redis late
    server = RedisServer()
    try:
        results: dict[str, Any] = {"loadavg": load}
        if "1" in parts:
            results["amplification"] = [
                fleet(kind, processes, args.calls, server.url)
                for processes in PROCESS_COUNTS
                for kind in ("local", "redis")
            ]
        if "2" in parts:
            results["latency"] = latency(server.url, args.rounds, args.number)
        if "3" in parts:
            sizes = [int(size) for size in args.sizes.split(",") if size]
            results["concurrency"] = concurrency(server.url, args.bursts, sizes, args.lag_ms / 1000)
        if "4" in parts:
            results["recovery"] = recovery(
                server, args.peers, args.pause, args.window, args.pace_ms / 1000
            )
    finally:
        server.stop()
    if emit(args.json, results):
        return 0
    heading = (
        f"Python {sys.version.split()[0]}; {args.calls} failing calls per fleet, {THREADS} threads"
        f" per process, capacity {CAPACITY}; {args.rounds} rounds x {args.number} calls, medians;"
        f" {args.bursts} bursts per load, default budget settings (timeout 50 ms);"
        f" {os.cpu_count()} CPUs, load average {load:.2f} at the start"
    )
    show(heading, markdown(results), targets(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
