"""Fleet state under load: a healthy Redis is never taken for a broken one.

Against a real redis-server on 127.0.0.1, with the default ``timeout`` (50 ms). The load is
made on purpose, so no verdict depends on how busy the machine is: the event loop is
blocked by a callback of the test's own (60-200 ms, placed after 0 to 13 passes of the loop,
so before, while and after the command is written), hundreds of callers retry at once, 128
threads do. Decisions are counted (the local fallback's, and Redis's own count of scripts),
never timed. Recovery: Redis frozen (SIGSTOP), killed and restarted, or out of memory; the
budget's clock is injected, so "after the breaker's interval" is a step of the clock.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import TYPE_CHECKING

import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from a2a_client_errors import Guard
from a2a_client_errors.integrations.redis import RedisCircuitBreaker, RedisRetryBudget
from a2a_client_errors.server import RedisDedupeStore
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.types import BudgetState
from tests.redis_counts import count_local, exchanges, flaky
from tests.redis_server import (  # noqa: F401 (the fixtures)
    redis_server_fixture,
    shared_redis_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import httpx

    from a2a_client_errors._breaker import BreakerFallback
    from a2a_client_errors.hooks import BudgetFallback
    from tests.redis_server import RedisServer

PEER = "http://agent.example:80"
HOG_STRETCHES = 10
"""Stretches a thread holds the interpreter for, back to back (tens of ms each)."""
PASSES = (0, 1, 2, 3, 5, 8, 13)


@pytest.fixture(name="prefix")
def prefix_fixture() -> str:
    """Keys of this test's own on the shared server."""
    return f"test:{uuid.uuid4().hex}:"


@pytest.fixture(name="local")
def local_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the spends the local fallback decides (every local decision goes through it)."""
    return count_local(monkeypatch)


def block_after(passes: int, seconds: float) -> None:
    """Block the running event loop for ``seconds``, ``passes`` passes of the loop from now."""
    loop = asyncio.get_running_loop()

    def step(left: int) -> None:
        if left:
            loop.call_soon(step, left - 1)
        else:
            time.sleep(seconds)  # the lag injected: this process, not Redis, is slow

    loop.call_soon(step, passes)


# --- a blocked or busy event loop --------------------------------------------------------------


@pytest.mark.parametrize("block", [0.06, 0.2])
@pytest.mark.parametrize("passes", PASSES)
async def test_a_blocked_loop_is_not_a_slow_redis(
    shared_redis: RedisServer, prefix: str, local: list[int], block: float, passes: int
) -> None:
    """The loop is blocked before, while or after the spend's command is written: shared."""
    admin = redis.Redis.from_url(shared_redis.url)
    store = RedisRetryBudget.from_url(
        shared_redis.url, async_client=True, prefix=prefix, lease=1, capacity=100
    )
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    budget = store.get(PEER)
    assert await budget.atry_spend()  # connected
    before = exchanges(admin)
    block_after(passes, block)
    assert await budget.atry_spend()
    assert (local[0], told, budget.state) == (0, [], BudgetState.SHARED)
    assert exchanges(admin) - before == 1
    assert float(admin.hget(prefix + PEER, "tokens") or 0) == 98.0
    await store.aclose()
    await store.client.aclose()
    admin.close()


@pytest.mark.parametrize("callers", [150, 300, 1000])
async def test_a_healthy_redis_decides_every_retry_of_many_callers_on_a_lagging_loop(
    shared_redis: RedisServer, prefix: str, local: list[int], callers: int
) -> None:
    """Hundreds of retrying calls at once, the loop blocked for 100 ms again and again: shared.

    Concurrent spends share exchanges: Redis runs far fewer scripts than there are retries.
    """
    admin = redis.Redis.from_url(shared_redis.url)
    store = RedisRetryBudget.from_url(
        shared_redis.url, async_client=True, prefix=prefix, capacity=1e6
    )
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    guard = Guard(budget=store, sleep=lambda _: None)
    before = exchanges(admin)

    async def call() -> object:
        peer = flaky()

        async def attempt() -> httpx.Response:
            await asyncio.sleep(0)
            return peer()

        return await guard.acall(attempt, peer=PEER)

    async def lag(stop: asyncio.Event) -> None:
        while not stop.is_set():
            for _ in range(20):
                await asyncio.sleep(0)
            time.sleep(0.1)  # the lag injected

    stop = asyncio.Event()
    lagging = asyncio.ensure_future(lag(stop))
    results = await asyncio.gather(*(call() for _ in range(callers)))
    stop.set()
    await lagging
    assert all(r.status_code == 200 for r in results)  # type: ignore[attr-defined]
    assert (local[0], told) == (0, [])
    assert exchanges(admin) - before < callers / 5
    await store.aclose()
    await store.client.aclose()
    admin.close()


def test_a_healthy_redis_decides_every_retry_of_128_threads_with_the_defaults(
    shared_redis: RedisServer, prefix: str, local: list[int]
) -> None:
    """128 threads, a client from `from_url` (50 ms socket timeouts): the socket times Redis.

    The threads, and a thread that holds the interpreter in long stretches (one call into C
    at a time, never handing it over midway), make this process slow to read answers; Redis
    answers in time, so no retry is decided locally.
    """
    store = RedisRetryBudget.from_url(shared_redis.url, prefix=prefix, capacity=1e6)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    guard = Guard(budget=store, sleep=lambda _: None)
    start = threading.Barrier(129)
    done = threading.Event()
    failed: list[BaseException] = []

    def work() -> None:
        start.wait(30)
        for _ in range(20):
            try:
                guard.call(flaky(), peer=PEER)
            except Exception as exc:  # noqa: PERF203 (what failed is the finding)
                failed.append(exc)

    def hog() -> None:
        start.wait(30)
        for _ in range(HOG_STRETCHES):
            if done.is_set():
                break
            sum(range(3_000_000))  # one call into C: holds the interpreter throughout

    threads = [threading.Thread(target=work) for _ in range(128)]
    hogging = threading.Thread(target=hog)
    hogging.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    done.set()
    hogging.join(10)
    store.close()
    store.client.close()
    assert (local[0], told, failed) == (0, [], [])


async def test_a_frozen_redis_on_a_lagging_loop_is_given_up_within_patience(
    redis_server: RedisServer, local: list[int]
) -> None:
    """A loop too busy to ever keep time, and Redis frozen: the spend still ends, locally.

    Every window ends late (the loop blocks 30 ms per pass, more than half the 50 ms
    timeout), so none counts; patience (1 s) ends the wait.
    """
    store = RedisRetryBudget.from_url(redis_server.url, async_client=True, lease=1)
    budget = store.get(PEER)
    assert await budget.atry_spend()
    stop = asyncio.Event()

    async def lag() -> None:
        while not stop.is_set():
            await asyncio.sleep(0)
            time.sleep(0.03)  # the lag injected

    redis_server.pause()
    try:
        lagging = asyncio.ensure_future(lag())
        assert await budget.atry_spend()  # the local bucket's
        stop.set()
        await lagging
    finally:
        redis_server.resume()
    assert (local[0], budget.state) == (1, BudgetState.LOCAL)
    await store.aclose()
    await store.client.aclose()


@pytest.mark.parametrize("passes", PASSES)
async def test_the_fleet_breaker_reads_redis_through_a_blocked_loop(
    shared_redis: RedisServer, prefix: str, passes: int
) -> None:
    """`aadmit` reads the fleet's key while the loop is blocked for 200 ms: still shared."""
    client = redis.asyncio.Redis.from_url(shared_redis.url, socket_timeout=5)
    clock = FakeClock()
    breaker = RedisCircuitBreaker(client, prefix=prefix, clock=clock)
    told: list[BreakerFallback] = []
    breaker.subscribe_fallback(told.append)
    assert (await breaker.aadmit(PEER)).allowed  # connected
    clock.advance(breaker.sync_interval)  # the reading is old: the next admit reads again
    block_after(passes, 0.2)
    assert (await breaker.aadmit(PEER)).allowed
    assert told == []
    await breaker.aclose()
    await client.aclose()


async def test_the_fleet_breaker_reads_once_for_a_thousand_callers(
    shared_redis: RedisServer, prefix: str
) -> None:
    """1,000 `aadmit` at once on 3 peers, a pool of 100 connections: one read per peer.

    A read each would exhaust the pool, and a full pool is not a broken Redis.
    """
    admin = redis.Redis.from_url(shared_redis.url)
    client = redis.asyncio.Redis.from_url(shared_redis.url, max_connections=100)
    breaker = RedisCircuitBreaker(client, prefix=prefix)
    told: list[BreakerFallback] = []
    breaker.subscribe_fallback(told.append)
    before = exchanges(admin)
    admitted = await asyncio.gather(*(breaker.aadmit(f"peer-{n % 3}") for n in range(1000)))
    assert all(a.allowed for a in admitted)
    assert (told, exchanges(admin) - before) == ([], 3)
    await breaker.aclose()
    await client.aclose()
    admin.close()


async def test_the_dedupe_store_claims_a_thousand_messages_at_once(
    shared_redis: RedisServer, prefix: str
) -> None:
    """1,000 claims at once through `from_url`'s 100 connections: they queue, none degraded."""
    store = RedisDedupeStore.from_url(shared_redis.url, prefix=prefix)
    claims = await asyncio.gather(*(store.claim(f"m{n}", "fp", 60) for n in range(1000)))
    assert [c.owned and not c.degraded for c in claims] == [True] * 1000
    assert (store.failures, store.refusals) == (0, 0)
    await store.aclose()


@pytest.mark.parametrize("passes", PASSES)
async def test_the_dedupe_store_claims_through_a_blocked_loop(
    shared_redis: RedisServer, prefix: str, passes: int
) -> None:
    """A claim made while the loop is blocked for 200 ms is owned, not degraded."""
    store = RedisDedupeStore.from_url(shared_redis.url, prefix=prefix, timeout=0.05)
    assert (await store.claim("warm", "fp", 60)).owned
    block_after(passes, 0.2)
    claim = await store.claim("key", "fp", 60)
    assert (claim.owned, claim.degraded, store.failures) == (True, False, 0)
    await store.aclose()


# --- Redis back after an outage: every peer rejoins the fleet bucket ---------------------------


async def _rejoin_after(
    redis_server: RedisServer, outage: Callable[[], None], back: Callable[[], None]
) -> None:
    """20 peers go local in an outage; once Redis is back, one probe brings all 20 back."""
    admin = redis.Redis.from_url(redis_server.url)
    clock = FakeClock()
    store = RedisRetryBudget.from_url(
        redis_server.url,
        async_client=True,
        lease=1,
        capacity=50,
        fallback_capacity=100,
        timeout=1.0,  # Redis's time; one probe waits it out while frozen
        clock=clock,
    )
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    peers = [f"http://agent-{n}.example:80" for n in range(20)]
    for peer in peers:
        assert await store.get(peer).atry_spend()  # each bucket: 49
    outage()
    try:
        for peer in peers:
            assert await store.get(peer).atry_spend()  # the local bucket's
        assert {store.get(p).state for p in peers} == {BudgetState.LOCAL}
        assert all(store.get(p).tokens == 99 for p in peers)  # the local count
    finally:
        back()
    clock.advance(store.retry_interval)  # the breaker's interval is over
    assert await store.get(peers[0]).atry_spend()  # the probe: Redis answers
    await store.aflush()  # the other peers' reconciling exchanges landed
    assert {store.get(p).state for p in peers} == {BudgetState.SHARED}
    for peer in peers:
        assert store.get(peer).tokens == float(admin.hget(store.prefix + peer, "tokens") or -1)
    assert [e.state for e in told] == [BudgetState.LOCAL] * 20 + [BudgetState.SHARED] * 20
    await store.aclose()
    await store.client.aclose()
    admin.close()


async def test_every_peer_rejoins_after_redis_was_frozen(redis_server: RedisServer) -> None:
    """Frozen (SIGSTOP): its commands time out; thawed, every peer is shared again."""
    await _rejoin_after(redis_server, redis_server.pause, redis_server.resume)


async def test_every_peer_rejoins_after_redis_was_killed_and_restarted(
    redis_server: RedisServer,
) -> None:
    """Killed (SIGKILL): refused connections; restarted empty, every peer reads a full bucket."""
    await _rejoin_after(redis_server, redis_server.kill, redis_server.start)


async def test_every_peer_rejoins_after_redis_was_out_of_memory(
    redis_server: RedisServer,
) -> None:
    """A full Redis (``maxmemory`` reached, ``noeviction``) refuses writes: local, then back."""
    admin = redis.Redis.from_url(redis_server.url)
    admin.config_set("maxmemory-policy", "noeviction")

    def full() -> None:
        admin.config_set("maxmemory", 1)

    def freed() -> None:
        admin.config_set("maxmemory", 0)

    await _rejoin_after(redis_server, full, freed)
    admin.close()


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_every_peers_fleet_breaker_rejoins_after_redis_was_down(
    redis_server: RedisServer, asynchronous: bool
) -> None:
    """Redis killed: 20 peers' breakers go local in turn; back, one answer brings all 20 back."""
    if asynchronous:  # set up as the budget's from_url does: no retries of the client's own
        client: object = redis.asyncio.Redis.from_url(
            redis_server.url, socket_timeout=5, retry=AsyncRetry(NoBackoff(), 0)
        )
    else:
        client = redis.Redis.from_url(
            redis_server.url, socket_timeout=5, retry=Retry(NoBackoff(), 0)
        )
    clock = FakeClock()
    breaker = RedisCircuitBreaker(client, prefix="rejoin:", clock=clock, timeout=5)
    told: list[BreakerFallback] = []
    everyone_back = threading.Event()

    def listen(event: BreakerFallback) -> None:
        told.append(event)
        if sum(e.state is BudgetState.SHARED for e in told) == 20:
            everyone_back.set()

    breaker.subscribe_fallback(listen)
    peers = [f"http://agent-{n}.example:80" for n in range(20)]
    later = max(breaker.sync_interval, breaker.retry_interval)
    for peer in peers:
        assert (await breaker.aadmit(peer)).allowed  # each read once
    redis_server.kill()
    for peer in peers:  # each read after the breaker's interval: refused
        clock.advance(later)
        assert (await breaker.aadmit(peer)).allowed  # the local breaker's answer
    assert [e.peer for e in told] == peers
    assert {e.state for e in told} == {BudgetState.LOCAL}
    redis_server.start()
    clock.advance(later)
    assert (await breaker.aadmit(peers[0])).allowed  # Redis answers: all read again at once
    await breaker.aclose()  # the async reads landed
    assert everyone_back.wait(30)  # the sync worker's reads landed
    assert {e.peer for e in told if e.state is BudgetState.SHARED} == set(peers)
    if asynchronous:
        await client.aclose()  # type: ignore[attr-defined]
    else:
        client.close()  # type: ignore[attr-defined]
