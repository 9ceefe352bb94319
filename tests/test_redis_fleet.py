"""A fleet against one failing peer: one Redis budget for all, or a budget per process.

Eight processes (tests/fleet_worker.py; half with four threads and a sync Redis client, half
with four asyncio tasks and redis.asyncio) call one loopback peer that always answers 503,
each call allowed three attempts. The peer counts every attempt it receives.

* Shared (`RedisRetryBudget`, capacity 10, no time refill, no success to credit): the whole
  fleet retries at most 10 times, and every token is accounted for: the retries the peer saw
  plus what is left in Redis (after the processes gave back unused leases) make exactly 10.
* Per process (`RetryBudget(10)` in each): each process retries 10 times, the fleet 80: the
  storm that grows with the number of replicas, which the shared budget prevents.

Then Redis is killed in the middle of a run, and brought back: calls go on, nothing raises but
the Guard's own verdicts, the hooks hear the fallback and the recovery, and the fleet bucket
decides again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis

from a2a_client_errors import (
    AsyncGuardTransport,
    BudgetExhausted,
    Guard,
    GuardTransport,
    RetryExhausted,
)
from a2a_client_errors.integrations.redis import RedisRetryBudget
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import BudgetState
from tests.loopback import Loopback, Recorded, Reply
from tests.redis_server import (  # noqa: F401 (the fixtures)
    redis_server_fixture,
    shared_redis_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
PROCESSES = 8
WORKERS = 4
CALLS = 8
CAPACITY = 10


def answer(request: Recorded) -> Reply:
    """503 for everything, but ``/ok``."""
    return Reply(200, b"{}") if request.path == "/ok" else Reply(503, b"busy")


@pytest.fixture(name="peer")
def peer_fixture() -> Iterator[Loopback]:
    """A loopback peer that answers 503 (``/ok``: 200), counting every attempt."""
    with Loopback(answer) as server:
        yield server


def run_fleet(peer: Loopback, budget: str, redis_url: str, prefix: str) -> list[dict[str, Any]]:
    """Start the fleet's processes together, wait for them (bounded), read their reports."""
    processes = [
        subprocess.Popen(  # noqa: S603 (our own worker)
            [
                sys.executable,
                "-m",
                "tests.fleet_worker",
                *("--peer", peer.url, "--budget", budget, "--redis", redis_url),
                *("--prefix", prefix, "--mode", "threads" if index % 2 else "tasks"),
                *("--workers", str(WORKERS), "--calls", str(CALLS)),
                *("--capacity", str(CAPACITY), "--lease", "2"),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for index in range(PROCESSES)
    ]
    reports = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise
        assert process.returncode == 0, err.decode(errors="replace")
        reports.append(json.loads(out.decode().strip().splitlines()[-1]))
    return reports


def test_a_shared_budget_caps_the_fleet_and_per_process_budgets_storm(
    shared_redis: RedisServer, peer: Loopback
) -> None:
    """8 processes x 4 workers x 8 failing calls: shared, 10 retries at most; per process, 80.

    Shared, every token is accounted for too: retries seen + tokens left in Redis = capacity.
    """
    prefix = f"fleet:{uuid.uuid4().hex}:"
    calls = PROCESSES * WORKERS * CALLS

    shared = run_fleet(peer, "shared", shared_redis.url, prefix)
    shared_attempts = len(peer.requests)
    shared_retries = shared_attempts - calls
    for report in shared:
        assert report["unexpected"] == []
        assert report["fallbacks"] == 0  # Redis answered throughout: this is the shared bucket
        assert sum(report["outcomes"].values()) == WORKERS * CALLS
        assert set(report["outcomes"]) <= {"RetryExhausted", "BudgetExhausted"}
    # The bound: capacity + refill_per_second x time (0 here) + credits (no success here).
    assert 0 < shared_retries <= CAPACITY
    admin = redis.Redis.from_url(shared_redis.url)
    left = float(admin.hget(prefix + peer.url, "tokens") or -1)  # the peer's key: its origin
    admin.close()
    assert shared_retries + left == pytest.approx(CAPACITY)  # no token made, none lost

    local = run_fleet(peer, "local", shared_redis.url, prefix)
    local_retries = len(peer.requests) - shared_attempts - calls
    assert all(report["unexpected"] == [] for report in local)
    assert local_retries == PROCESSES * CAPACITY  # 80: each process spent its own bucket
    assert shared_retries / calls <= 0.05 < local_retries / calls  # amplification 1.04 vs 1.31


def test_redis_killed_mid_run_and_back_sync(redis_server: RedisServer, peer: Loopback) -> None:
    """Sync Guard and client: Redis killed, calls go on locally; Redis back, shared again."""
    clock = FakeClock()
    hook = RecordingHook()
    store = RedisRetryBudget.from_url(
        redis_server.url,
        capacity=4,
        lease=1,
        fallback_capacity=2,
        sync_interval=1.0,
        retry_interval=5.0,
        timeout=5.0,
        clock=clock,
    )
    guard = Guard(budget=store, sleep=lambda _: None, hooks=[hook])
    admin = redis.Redis.from_url(redis_server.url)
    key = store.prefix + peer.url  # GuardTransport keys a peer by its origin
    client = httpx.Client(transport=GuardTransport(guard, raise_failures=True), base_url=peer.url)
    try:
        # Redis up: the fleet bucket pays for the retries.
        for _ in range(2):
            with pytest.raises(RetryExhausted):
                client.get("/")
        assert float(admin.hget(key, "tokens") or -1) == 0.0
        with pytest.raises(BudgetExhausted):
            client.get("/")

        # Redis killed: the next exchange fails, the local bucket (2 tokens) decides.
        redis_server.kill()
        clock.advance(1.0)  # the refusal above is forgotten: the fleet bucket is asked again
        with pytest.raises(RetryExhausted) as local:
            client.get("/")
        assert local.value.attempts == 3
        with pytest.raises(BudgetExhausted):
            client.get("/")
        for _ in range(4):
            assert client.get("/ok").status_code == 200  # successes go on, credited locally
        assert [(e.state, e.cause) for e in hook.fallbacks] == [
            (BudgetState.LOCAL, "ConnectionError")
        ]

        # Redis back (empty: a full bucket), and the breaker's interval over: shared again.
        redis_server.start()
        clock.advance(5.0)
        with pytest.raises(RetryExhausted):
            client.get("/")
        assert [e.state for e in hook.fallbacks] == [BudgetState.LOCAL, BudgetState.SHARED]
        admin.close()
        admin = redis.Redis.from_url(redis_server.url)
        assert float(admin.hget(key, "tokens") or -1) == 2.0  # 4, minus this call's 2 retries
    finally:
        client.close()
        admin.close()
        store.close()
        store.client.close()


async def test_redis_killed_mid_run_and_back_async(
    redis_server: RedisServer, peer: Loopback
) -> None:
    """Async Guard and redis.asyncio: the same story, never blocking the event loop."""
    clock = FakeClock()
    hook = RecordingHook()
    store = RedisRetryBudget.from_url(
        redis_server.url,
        async_client=True,
        capacity=4,
        lease=1,
        fallback_capacity=2,
        sync_interval=1.0,
        retry_interval=5.0,
        timeout=5.0,
        clock=clock,
    )
    guard = Guard(budget=store, sleep=lambda _: None, hooks=[hook])
    admin = redis.Redis.from_url(redis_server.url)
    key = store.prefix + peer.url
    transport = AsyncGuardTransport(guard, raise_failures=True)
    async with httpx.AsyncClient(transport=transport, base_url=peer.url) as client:
        for _ in range(2):
            with pytest.raises(RetryExhausted):
                await client.get("/")
        assert float(admin.hget(key, "tokens") or -1) == 0.0
        admin.close()

        redis_server.kill()
        clock.advance(1.0)
        with pytest.raises(RetryExhausted) as local:
            await client.get("/")
        assert local.value.attempts == 3
        with pytest.raises(BudgetExhausted):
            await client.get("/")
        assert [(e.state, e.cause) for e in hook.fallbacks] == [
            (BudgetState.LOCAL, "ConnectionError")
        ]

        redis_server.start()
        clock.advance(5.0)
        with pytest.raises(RetryExhausted):
            await client.get("/")
        assert [e.state for e in hook.fallbacks] == [BudgetState.LOCAL, BudgetState.SHARED]
        admin = redis.Redis.from_url(redis_server.url)
        assert float(admin.hget(key, "tokens") or -1) == 2.0
        admin.close()
    await store.aclose()
    await store.client.aclose()
