"""RedisRetryBudget against a real redis-server on 127.0.0.1 (started by the tests' fixtures).

The Lua script's semantics (server-time refill, capped credits, whole-retry grants, idle
expiry, key prefix), the lease and the batched credits (counted by Redis itself, in
``INFO commandstats``), fail open and fail closed, a slow server (frozen with SIGSTOP) and a
dead one, sync and asyncio clients, and the promise never to raise whatever the client does.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import subprocess
import sys
import threading
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis
import redis.asyncio
import redis.asyncio.retry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.backoff import NoBackoff
from redis.retry import Retry

from a2a_client_errors import BudgetExhausted, Guard, RetryExhausted
from a2a_client_errors.integrations.redis import SCRIPT, RedisPeerBudget, RedisRetryBudget
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import BudgetState
from tests.redis_counts import count_local, exchanges, flaky
from tests.redis_server import (  # noqa: F401 (the fixtures)
    RedisServer,
    free_port,
    redis_server_fixture,
    shared_redis_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a_client_errors.hooks import BudgetFallback

PEER = "http://agent.example:80"
_OPEN: list[redis.Redis] = []


def sync_client(url: str, *, socket_timeout: float | None = 5.0, **options: Any) -> redis.Redis:
    """A sync client that does not retry by itself (closed after the test)."""
    client = redis.Redis.from_url(
        url, socket_timeout=socket_timeout, retry=Retry(NoBackoff(), 0), **options
    )
    _OPEN.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Every sync client a test made is closed after it (no socket left to the collector)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def async_client(url: str, *, socket_timeout: float | None = 5.0) -> redis.asyncio.Redis:
    """An asyncio client that does not retry by itself."""
    return redis.asyncio.Redis.from_url(
        url, socket_timeout=socket_timeout, retry=redis.asyncio.retry.Retry(NoBackoff(), 0)
    )


@pytest.fixture(name="admin")
def admin_fixture(shared_redis: RedisServer) -> Iterator[redis.Redis]:
    """A client to look at the shared server with."""
    client = sync_client(shared_redis.url)
    yield client
    client.close()


@pytest.fixture(name="prefix")
def prefix_fixture() -> str:
    """A key prefix of this test's own."""
    return f"test:{uuid.uuid4().hex}:"


def run_script(
    client: redis.Redis,
    key: str,
    *,
    capacity: float = 10,
    rate: float = 0,
    credit: float = 0,
    want: float = 0,
    need: float = 1,
    idle_ms: int = 60_000,
) -> tuple[float, float]:
    """The script's (granted, left) for one call."""
    raw = client.eval(SCRIPT, 1, key, capacity, rate, credit, want, need, idle_ms)  # type: ignore[no-untyped-call]
    return float(raw[0]), float(raw[1])


def level(client: redis.Redis, key: str) -> float:
    """The tokens stored in a bucket."""
    raw = client.hget(key, "tokens")
    assert raw is not None
    return float(raw)


def drain(store: RedisRetryBudget) -> None:
    """Wait until the worker has run what was sent before (background sends included)."""
    assert store._worker.submit(lambda: None).result(10) is None


def server_time_us(client: redis.Redis) -> int:
    """The server's clock, in microseconds."""
    seconds, micros = client.time()
    return seconds * 1_000_000 + micros


def store_for(url: str, **options: Any) -> RedisRetryBudget:
    """A budget on a sync client of ``url``, with a generous timeout unless told otherwise."""
    options.setdefault("timeout", 5.0)
    return RedisRetryBudget(sync_client(url), **options)


# --- the script ---------------------------------------------------------------------------


def test_script_starts_a_new_peer_full_and_grants_what_is_asked(
    admin: redis.Redis, prefix: str
) -> None:
    """A peer without a key starts with a full bucket; a grant of 3 leaves capacity - 3."""
    assert run_script(admin, prefix + PEER, want=3) == (3.0, 7.0)
    assert level(admin, prefix + PEER) == 7.0


def test_script_grants_whole_retries_only(admin: redis.Redis, prefix: str) -> None:
    """With 2.5 tokens and a retry costing 1, a lease of 4 gets 2; then 0.5 grants nothing."""
    key = prefix + PEER
    admin.hset(key, mapping={"tokens": "2.5", "ts": str(server_time_us(admin))})
    assert run_script(admin, key, want=4) == (2.0, 0.5)
    assert run_script(admin, key, want=4) == (0.0, 0.5)
    assert run_script(admin, key, want=1, need=0.5) == (0.5, 0.0)


def test_script_refills_by_the_server_clock(admin: redis.Redis, prefix: str) -> None:
    """A bucket changed 10 s ago by the server's clock has refilled 10 s x rate, capped."""
    key = prefix + PEER
    ten_seconds_ago = server_time_us(admin) - 10_000_000
    admin.hset(key, mapping={"tokens": "0", "ts": str(ten_seconds_ago)})
    _, left = run_script(admin, key, rate=0.5)
    assert 5.0 <= left < 5.1  # 10 s x 0.5, plus the milliseconds this test took
    stored_ts = int(admin.hget(key, "ts") or 0)
    assert abs(stored_ts - server_time_us(admin)) < 1_000_000  # re-anchored on the server clock
    admin.hset(key, mapping={"tokens": "0", "ts": str(ten_seconds_ago)})
    assert run_script(admin, key, rate=100)[1] == 10.0  # never past capacity


def test_script_does_not_refill_from_a_clock_that_went_back(
    admin: redis.Redis, prefix: str
) -> None:
    """A stored time ahead of the server's (a failover to a skewed clock) refills nothing."""
    key = prefix + PEER
    an_hour_ahead = server_time_us(admin) + 3_600_000_000
    admin.hset(key, mapping={"tokens": "3", "ts": str(an_hour_ahead)})
    assert run_script(admin, key, rate=1.0) == (0.0, 3.0)
    assert int(admin.hget(key, "ts") or 0) <= server_time_us(admin)  # time counts from now on


def test_script_caps_credits_at_capacity(admin: redis.Redis, prefix: str) -> None:
    """Credits refill an emptied bucket, never past its capacity."""
    key = prefix + PEER
    assert run_script(admin, key, want=10) == (10.0, 0.0)
    assert run_script(admin, key, credit=2.5) == (0.0, 2.5)
    assert run_script(admin, key, credit=100) == (0.0, 10.0)


def test_script_expires_idle_keys_and_each_use_renews_them(admin: redis.Redis, prefix: str) -> None:
    """Each call sets the idle expiry; an expired (deleted) key starts again full."""
    key = prefix + PEER
    run_script(admin, key, want=4, idle_ms=60_000)
    assert 55_000 < admin.pttl(key) <= 60_000
    admin.pexpire(key, 5_000)
    run_script(admin, key, idle_ms=60_000)
    assert admin.pttl(key) > 55_000
    admin.delete(key)  # what the expiry does
    assert run_script(admin, key) == (0.0, 10.0)


def test_script_replies_are_read_whatever_the_client_decodes(
    shared_redis: RedisServer, prefix: str
) -> None:
    """A client that decodes replies to str works as one that returns bytes."""
    store = RedisRetryBudget(sync_client(shared_redis.url, decode_responses=True), prefix=prefix)
    assert store.get(PEER).try_spend()
    store.close()


# --- the lease and the batched credits ------------------------------------------------------


def test_a_retry_takes_a_lease_and_the_next_ones_are_local(redis_server: RedisServer) -> None:
    """With lease=3 the first retry takes 3 tokens in one exchange; the next two need none."""
    admin = sync_client(redis_server.url)
    store = store_for(redis_server.url, lease=3)
    budget = store.get(PEER)
    before = exchanges(admin)
    assert budget.try_spend()
    assert level(admin, budget.key) == 7.0
    assert budget.try_spend()
    assert budget.try_spend()
    assert exchanges(admin) - before == 1
    assert budget.try_spend()  # the lease is spent: one more exchange
    assert exchanges(admin) - before == 2
    assert level(admin, budget.key) == 4.0
    assert budget.tokens == 2.0 + 4.0  # the lease held, plus the fleet bucket as last seen
    store.close()


def test_an_empty_fleet_bucket_refuses_and_is_asked_again_after_sync_interval(
    redis_server: RedisServer,
) -> None:
    """Refused once, a process refuses locally until ``sync_interval`` has passed."""
    admin = sync_client(redis_server.url)
    clock = FakeClock()
    store = store_for(redis_server.url, capacity=1, lease=1, sync_interval=2.0, clock=clock)
    budget = store.get(PEER)
    assert budget.try_spend()
    before = exchanges(admin)
    assert not budget.try_spend()
    assert not budget.try_spend()
    assert exchanges(admin) - before == 1
    admin.hset(budget.key, "tokens", "1")  # another process's successes refilled it
    clock.advance(2.0)
    assert budget.try_spend()
    assert exchanges(admin) - before == 2
    store.close()


def test_a_refill_by_time_shortens_the_wait_before_asking_again(
    redis_server: RedisServer,
) -> None:
    """With a time refill, a refused process asks again once a token can have come back.

    At 0.01 token per second: after about 100 s, not after ``sync_interval`` (1000 s).
    """
    admin = sync_client(redis_server.url)
    clock = FakeClock()
    store = store_for(
        redis_server.url,
        capacity=1,
        lease=1,
        refill_per_second=0.01,
        sync_interval=1000,
        clock=clock,
    )
    budget = store.get(PEER)
    assert budget.try_spend()
    before = exchanges(admin)
    assert not budget.try_spend()
    clock.advance(99)
    assert not budget.try_spend()
    assert exchanges(admin) - before == 1
    clock.advance(1)
    budget.try_spend()
    assert exchanges(admin) - before == 2
    store.close()


def test_credits_are_sent_in_batches(redis_server: RedisServer) -> None:
    """Credits wait locally until they reach ``credit_batch`` tokens, then go in one exchange."""
    admin = sync_client(redis_server.url)
    store = store_for(redis_server.url, lease=2, success_credit=0.5, credit_batch=2.0)
    budget = store.get(PEER)
    for _ in range(4):
        assert budget.try_spend()
    assert level(admin, budget.key) == 6.0
    before = exchanges(admin)
    for _ in range(3):
        budget.credit()
    drain(store)
    assert exchanges(admin) == before  # 1.5 tokens pending: nothing sent
    budget.credit()  # 2.0: sent, in the background
    drain(store)
    assert exchanges(admin) - before == 1
    assert level(admin, budget.key) == 8.0
    store.close()


def test_credits_are_sent_after_sync_interval_even_below_the_batch(
    redis_server: RedisServer,
) -> None:
    """A lone credit does not wait forever: after ``sync_interval`` it is sent."""
    admin = sync_client(redis_server.url)
    clock = FakeClock()
    store = store_for(redis_server.url, lease=2, sync_interval=1.0, clock=clock)
    budget = store.get(PEER)
    assert budget.try_spend()
    assert budget.try_spend()
    budget.credit()
    clock.advance(1.0)
    budget.credit()
    drain(store)  # the background send is done
    assert level(admin, budget.key) == 9.0
    store.close()


def test_credits_are_not_sent_while_the_fleet_bucket_is_full(redis_server: RedisServer) -> None:
    """A healthy fleet (full bucket) costs one exchange per ``sync_interval``, not per call."""
    admin = sync_client(redis_server.url)
    clock = FakeClock()
    store = store_for(redis_server.url, sync_interval=1.0, clock=clock)
    budget = store.get(PEER)
    before = exchanges(admin)
    for _ in range(100):
        budget.credit()
    drain(store)
    assert exchanges(admin) - before == 1  # the first batch learned the bucket was full
    assert store.flush()  # nothing held: the full bucket's answer dropped what came before
    assert exchanges(admin) - before == 1
    clock.advance(1.0)
    for _ in range(100):
        budget.credit()
    drain(store)
    assert exchanges(admin) - before == 2
    store.close()


def test_an_unused_lease_goes_back_after_sync_interval(redis_server: RedisServer) -> None:
    """Tokens leased and not spent return to the fleet once ``sync_interval`` has passed."""
    admin = sync_client(redis_server.url)
    clock = FakeClock()
    store = store_for(redis_server.url, lease=3, sync_interval=1.0, clock=clock)
    budget = store.get(PEER)
    assert budget.try_spend()
    assert level(admin, budget.key) == 7.0
    clock.advance(1.0)
    budget.credit()  # 2 tokens of lease + 0.5 of credit: over the batch, sent
    drain(store)
    assert level(admin, budget.key) == 9.5
    assert budget.tokens == 9.5
    store.close()


def test_close_gives_back_leases_and_pending_credits(redis_server: RedisServer) -> None:
    """`close` sends what a process holds: its lease and its credits."""
    admin = sync_client(redis_server.url)
    store = store_for(redis_server.url, lease=3)
    budget = store.get(PEER)
    assert budget.try_spend()
    budget.credit()
    store.close()
    assert level(admin, budget.key) == 9.5


def test_threads_never_spend_more_than_the_fleet_bucket(redis_server: RedisServer) -> None:
    """8 threads x 20 retries against 50 tokens: exactly 50 granted, and none lost or made."""
    admin = sync_client(redis_server.url)
    store = store_for(redis_server.url, capacity=50, lease=3)
    budget = store.get(PEER)
    granted: list[bool] = []
    lock = threading.Lock()

    def spend() -> None:
        for _ in range(20):
            ok = budget.try_spend()
            with lock:
                granted.append(ok)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    store.close()
    assert len(granted) == 160
    assert sum(granted) + level(admin, budget.key) == pytest.approx(50.0)
    assert sum(granted) >= 50 - 3  # at most one lease's worth can have been held back


def test_keys_carry_the_prefix_and_prefixes_do_not_share(
    admin: redis.Redis, shared_redis: RedisServer
) -> None:
    """Two deployments (two prefixes) have buckets of their own for the same peer."""
    first, second = (f"test:{uuid.uuid4().hex}:" for _ in range(2))
    store_a = store_for(shared_redis.url, prefix=first)
    store_b = store_for(shared_redis.url, prefix=second)
    assert store_a.get(PEER).key == first + PEER
    assert store_a.get(PEER).try_spend()
    assert level(admin, first + PEER) == 8.0
    assert admin.exists(second + PEER) == 0
    assert store_b.get(PEER).try_spend()
    assert level(admin, second + PEER) == 8.0
    assert store_a.peers() == [PEER]
    assert store_a.get(PEER) is store_a.get(PEER)
    store_a.close()
    store_b.close()


# --- Redis down, Redis slow: fail open, fail closed --------------------------------------------


def test_fail_open_decides_with_a_local_bucket_when_redis_is_down() -> None:
    """No server: the local bucket (``fallback_capacity``) decides, the listeners are told once."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    store = store_for(dead, fallback_capacity=2, retry_interval=60)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    budget = store.get(PEER)
    assert [budget.try_spend() for _ in range(3)] == [True, True, False]
    budget.credit()
    assert budget.state is BudgetState.LOCAL
    assert budget.tokens == 0.5
    assert [(e.peer, e.state, e.cause, e.fail_open) for e in told] == [
        (PEER, BudgetState.LOCAL, "ConnectionError", True)
    ]
    store.close()


def test_fail_closed_refuses_every_retry_when_redis_is_down() -> None:
    """No server and ``fail_open=False``: no retry at all (first attempts are the Guard's)."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    store = store_for(dead, fail_open=False)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    budget = store.get(PEER)
    assert [budget.try_spend() for _ in range(5)] == [False] * 5
    assert budget.tokens == 0.0
    assert [e.fail_open for e in told] == [False]
    store.close()


class CountingClient:
    """A real client whose script calls are counted (to see what the breaker spares)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.calls = 0

    def register_script(self, script: str) -> Any:
        """Count each call of the registered script."""
        registered = self.client.register_script(script)

        def call(**kwargs: Any) -> Any:
            self.calls += 1
            return registered(**kwargs)

        return call


def test_a_failed_background_send_falls_back_too() -> None:
    """Credits sent in the background to a dead Redis: the budget falls back, and says so."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0", credit_batch=0)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    budget = store.get(PEER)
    budget.credit()
    drain(store)
    assert budget.state is BudgetState.LOCAL
    assert [(e.state, e.cause) for e in told] == [(BudgetState.LOCAL, "ConnectionError")]
    store.close()


def test_the_breaker_leaves_a_dead_redis_alone_for_retry_interval() -> None:
    """After a failure nothing is sent for ``retry_interval``; then one probe."""
    client = CountingClient(sync_client(f"redis://127.0.0.1:{free_port()}/0"))
    clock = FakeClock()
    store = RedisRetryBudget(client, timeout=5, retry_interval=3.0, clock=clock)
    budget = store.get(PEER)
    for _ in range(5):
        budget.try_spend()
        budget.credit()
    assert client.calls == 1
    clock.advance(3.0)
    budget.try_spend()
    assert client.calls == 2
    store.close()


def test_a_frozen_redis_costs_a_call_at_most_timeout_then_recovers(
    redis_server: RedisServer,
) -> None:
    """A frozen server (SIGSTOP) costs a retry ``timeout`` once, then the breaker decides.

    The client has no socket timeout at all: only the budget's own bound ends the wait. The
    hooks hear the fallback; once the server answers again and the breaker's interval is
    over, the fleet bucket decides again.
    """
    clock = FakeClock()
    hook = RecordingHook()
    client = sync_client(redis_server.url, socket_timeout=None)
    store = RedisRetryBudget(
        client,
        timeout=0.3,
        lease=1,
        credit_batch=0,
        retry_interval=2.0,
        fallback_capacity=5,
        clock=clock,
    )
    guard = Guard(budget=store, hooks=[hook])
    budget = store.get(PEER)
    assert budget.try_spend()  # connects while the server runs
    redis_server.pause()
    try:
        assert budget.try_spend()  # waited 0.3 s, then the local bucket said yes
        assert budget.try_spend()  # the breaker: no wait at all
        assert budget.state is BudgetState.LOCAL
        clock.advance(2.0)  # the breaker's interval is over, but the command is still stuck:
        assert budget.try_spend()  # nothing queues behind it, the local bucket decides at once
        budget.credit()
        budget.credit()  # a send that is due is not queued behind it either
        assert store._stalled
    finally:
        redis_server.resume()
    drain(store)  # the stuck command ended
    assert not store._stalled
    clock.advance(2.0)
    assert budget.try_spend()
    assert budget.state is BudgetState.SHARED
    assert [(e.state, e.cause) for e in hook.fallbacks] == [
        (BudgetState.LOCAL, "TimeoutError"),
        (BudgetState.SHARED, None),
    ]
    del guard
    store.close()


def test_an_asyncio_client_in_sync_code_decides_locally_and_says_why(
    shared_redis: RedisServer, prefix: str
) -> None:
    """An asyncio client cannot be awaited from sync code: local decision, told, no error."""
    store = RedisRetryBudget(async_client(shared_redis.url), prefix=prefix, fallback_capacity=1)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    budget = store.get(PEER)
    assert budget.try_spend()
    assert not budget.try_spend()
    budget.credit()
    budget.credit()
    budget.credit()
    budget.credit()
    assert store.flush() is False
    store.close()
    assert [e.cause for e in told] == ["AsyncClientInSyncCode"]


# --- async ---------------------------------------------------------------------------------


async def test_an_asyncio_client_shares_the_bucket(shared_redis: RedisServer, prefix: str) -> None:
    """``atry_spend`` takes leases over redis.asyncio; credits go in background tasks."""
    admin = sync_client(shared_redis.url)
    client = async_client(shared_redis.url)
    store = RedisRetryBudget(client, prefix=prefix, lease=2, timeout=5)
    budget = store.get(PEER)
    assert await budget.atry_spend()
    assert await budget.atry_spend()
    assert level(admin, budget.key) == 8.0
    for _ in range(4):
        budget.credit()  # 2 tokens: a background send
    assert await store.aflush()
    assert level(admin, budget.key) == 10.0
    await store.aclose()
    await client.aclose()


async def test_a_sync_client_never_blocks_the_event_loop(redis_server: RedisServer) -> None:
    """``atry_spend`` over a sync client waits on the worker thread, not on the event loop."""
    client = sync_client(redis_server.url, socket_timeout=None)
    store = RedisRetryBudget(client, timeout=0.5, lease=1, fail_open=False)
    budget = store.get(PEER)
    assert await budget.atry_spend()
    redis_server.pause()
    try:
        spending = asyncio.ensure_future(budget.atry_spend())
        await asyncio.sleep(0)  # one turn of the loop: the spend waits on Redis
        assert not spending.done()  # ...and this coroutine runs meanwhile
        assert await spending is False  # fail closed once the 0.5 s are over
    finally:
        redis_server.resume()
    await store.aclose()


async def test_a_frozen_redis_costs_an_asyncio_call_at_most_timeout(
    redis_server: RedisServer,
) -> None:
    """redis.asyncio against a frozen server: the wait ends at ``timeout``, locally decided."""
    client = async_client(redis_server.url, socket_timeout=None)
    store = RedisRetryBudget(client, timeout=0.3, lease=1, fallback_capacity=1)
    budget = store.get(PEER)
    assert await budget.atry_spend()
    redis_server.pause()
    try:
        assert await budget.atry_spend()  # the local bucket's one token
        assert not await budget.atry_spend()
        assert budget.state is BudgetState.LOCAL
    finally:
        redis_server.resume()
    await store.aclose()
    await client.aclose()


async def test_guard_acall_spends_from_the_fleet_bucket(
    shared_redis: RedisServer, prefix: str
) -> None:
    """Guard.acall awaits the budget: its retries come out of the Redis bucket."""
    admin = sync_client(shared_redis.url)
    client = async_client(shared_redis.url)
    store = RedisRetryBudget(client, prefix=prefix, capacity=3, lease=1, timeout=5)
    hook = RecordingHook()
    guard = Guard(budget=store, max_attempts=3, sleep=lambda _: None, hooks=[hook])

    async def unavailable() -> httpx.Response:
        return httpx.Response(503)

    with pytest.raises(RetryExhausted):
        await guard.acall(unavailable, peer=PEER)
    with pytest.raises(BudgetExhausted) as refused:
        await guard.acall(unavailable, peer=PEER)
    assert refused.value.attempts == 2  # one retry left in the fleet bucket, then refused
    assert level(admin, prefix + PEER) == 0.0
    assert hook.events[-1][1].budget_tokens == 0.0
    await store.aclose()
    await client.aclose()


# --- the Guard and its hooks ------------------------------------------------------------------


def test_guard_call_spends_from_the_fleet_bucket(shared_redis: RedisServer, prefix: str) -> None:
    """Guard.call with the Redis budget: retries come out of the bucket, hooks see the tokens."""
    admin = sync_client(shared_redis.url)
    store = store_for(shared_redis.url, prefix=prefix, capacity=2, lease=1)
    hook = RecordingHook()
    guard = Guard(budget=store, sleep=lambda _: None, hooks=[hook])
    with pytest.raises(RetryExhausted) as failed:
        guard.call(lambda: httpx.Response(503), peer=PEER)
    assert failed.value.attempts == 3
    assert level(admin, prefix + PEER) == 0.0
    assert [e.budget_tokens for name, e in hook.events if name == "retry"] == [1.0, 0.0]
    store.close()


def test_one_peer_budget_can_be_the_guards_only_budget(
    shared_redis: RedisServer, prefix: str
) -> None:
    """A `RedisPeerBudget` given as the Guard's one budget works, and subscribes its hooks."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0", fallback_capacity=0)
    hook = RecordingHook()
    guard = Guard(budget=store.get("everyone"), sleep=lambda _: None, hooks=[hook])
    with pytest.raises(BudgetExhausted):
        guard.call(lambda: httpx.Response(503), peer=PEER)
    assert [(e.peer, e.state) for e in hook.fallbacks] == [("everyone", BudgetState.LOCAL)]
    assert isinstance(guard.budget_for(PEER), RedisPeerBudget)
    store.close()


def test_a_guard_that_is_gone_is_no_longer_told() -> None:
    """The budget holds a Guard's subscription weakly: a collected Guard is dropped."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0")
    hook = RecordingHook()
    guard = Guard(budget=store, hooks=[hook])
    assert len(store._listeners) == 1
    del guard
    gc.collect()
    store.get(PEER).try_spend()  # falls back: the dead listener is pruned, nothing raises
    assert store._listeners == []
    assert hook.fallbacks == []
    store.close()


def test_a_listener_that_raises_is_logged_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exception in a listener never reaches the call."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0")

    def broken(event: BudgetFallback) -> None:
        raise RuntimeError(event.peer)

    store.subscribe(broken)
    assert store.get("peer\x1b[31m").try_spend()
    assert "listener failed" in caplog.text
    assert "\x1b" not in caplog.text  # peer text is escaped in the log
    store.close()


def test_guards_without_fallback_hooks_do_not_subscribe() -> None:
    """Only a Guard with an ``on_budget_fallback`` hook subscribes."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0")
    Guard(budget=store)
    assert store._listeners == []


# --- never raises ----------------------------------------------------------------------------


class JunkClient:
    """A stand-in whose script answers junk or raises: what no real client should do."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    def register_script(self, script: str) -> Any:
        """A script that answers, or raises, the next scripted thing."""
        del script

        def call(**kwargs: Any) -> Any:
            del kwargs
            answer = self.answers.pop(0) if self.answers else None
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return call


ANSWERS = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.one_of(st.binary(max_size=5), st.text(max_size=5), st.floats(), st.integers())),
    st.tuples(st.sampled_from(["1", b"2", "nan", "inf", "-1"]), st.sampled_from(["3", b"0"])),
    st.sampled_from(
        [
            redis.exceptions.ConnectionError("down"),
            redis.exceptions.ResponseError("NOSCRIPT"),
            redis.exceptions.TimeoutError(),
            OSError("reset"),
            ValueError("junk"),
            RuntimeError("bug"),
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answers=st.lists(ANSWERS, max_size=8),
    steps=st.lists(st.sampled_from(["spend", "credit", "tokens", "flush"]), max_size=20),
    peer=st.text(max_size=20),
    fail_open=st.booleans(),
)
def test_budget_never_raises_whatever_the_client_does(
    answers: list[Any], steps: list[str], peer: str, fail_open: bool
) -> None:
    """Junk replies and any exception from the client: the budget answers, never raises."""
    clock = FakeClock()
    store = RedisRetryBudget(
        JunkClient(answers), timeout=5, fail_open=fail_open, retry_interval=0.5, clock=clock
    )
    budget = store.get(peer)
    for step in steps:
        clock.advance(0.3)
        if step == "spend":
            assert isinstance(budget.try_spend(), bool)
        elif step == "credit":
            budget.credit()
        elif step == "tokens":
            assert budget.tokens >= 0.0
        else:
            assert isinstance(store.flush(), bool)
    store.close()


# --- settings and packaging ----------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        {"capacity": -1},
        {"retry_cost": 0},
        {"success_credit": -0.5},
        {"refill_per_second": float("nan")},
        {"lease": 0},
        {"lease": 1.5},
        {"credit_batch": -1},
        {"sync_interval": 0},
        {"idle_ttl": 0},
        {"timeout": 0},
        {"timeout": float("inf")},
        {"retry_interval": -1},
        {"fallback_capacity": -1},
    ],
)
def test_settings_are_checked(setting: dict[str, Any]) -> None:
    """A setting out of range is a ValueError at construction, naming the rule."""
    with pytest.raises(ValueError, match="RedisRetryBudget needs"):
        RedisRetryBudget(redis.Redis(), **setting)


def test_a_client_that_is_not_redis_py_is_refused() -> None:
    """Anything without ``register_script`` is a TypeError at construction."""
    with pytest.raises(TypeError, match="redis-py client"):
        RedisRetryBudget(object())


def _attempts(retry: Retry) -> int:
    """How many times ``retry`` runs a command that keeps failing to connect."""
    calls: list[None] = []

    def command() -> None:
        calls.append(None)
        raise redis.ConnectionError

    with pytest.raises(redis.ConnectionError):
        retry.call_with_retry(command, lambda _: None)
    return len(calls)


async def _aattempts(retry: redis.asyncio.retry.Retry) -> int:
    """`_attempts`, for an asyncio client's retry."""
    calls: list[None] = []

    async def command() -> None:
        calls.append(None)
        raise redis.ConnectionError

    async def failed(_: Exception) -> None:
        return None

    with pytest.raises(redis.ConnectionError):
        await retry.call_with_retry(command, failed)
    return len(calls)


def test_from_url_makes_clients_with_short_timeouts_and_no_retries(
    shared_redis: RedisServer, prefix: str
) -> None:
    """`from_url`: the socket timeouts are the budget's timeout, the client never retries."""
    store = RedisRetryBudget.from_url(shared_redis.url, prefix=prefix, timeout=0.25, capacity=3)
    settings_ = store.client.connection_pool.connection_kwargs
    assert settings_["socket_timeout"] == 0.25
    assert settings_["socket_connect_timeout"] == 0.25
    assert _attempts(store.client.get_retry()) == 1
    assert (store.timeout, store.capacity, store.is_async) == (0.25, 3.0, False)
    assert store.get(PEER).try_spend()
    store.close()
    _OPEN.append(store.client)
    asynchronous = RedisRetryBudget.from_url(shared_redis.url, async_client=True)
    assert isinstance(asynchronous.client, redis.asyncio.Redis)
    assert asynchronous.is_async
    assert asyncio.run(_aattempts(asynchronous.client.get_retry())) == 1


def test_importing_the_package_never_imports_redis() -> None:
    """``import a2a_client_errors`` (and its Redis integration) leaves redis unimported."""
    code = (
        "import sys, a2a_client_errors\n"
        "assert 'redis' not in sys.modules\n"
        "from a2a_client_errors.integrations.redis import RedisRetryBudget\n"
        "assert RedisRetryBudget.__name__ == 'RedisRetryBudget'\n"
        "assert 'redis' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)  # noqa: S603


def test_reprs_show_the_settings_and_the_state() -> None:
    """The reprs say what a budget is, without touching Redis."""
    store = RedisRetryBudget(redis.Redis(), capacity=5, lease=3)
    assert repr(store) == (
        "RedisRetryBudget(prefix='a2a:retry-budget:', capacity=5, lease=3, fail_open=True)"
    )
    assert repr(store.get(PEER)) == (
        "RedisPeerBudget(peer='http://agent.example:80', state=shared, tokens=5.00)"
    )


# --- a healthy Redis decides, however many spends wait at once --------------------------------


async def test_a_healthy_redis_decides_every_retry_of_150_concurrent_async_calls(
    shared_redis: RedisServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """150 calls at once, each retried, on a client pool of 100: no retry is decided locally.

    The spends that wait for the fleet bucket share one exchange (one in flight per peer).
    """
    local = count_local(monkeypatch)
    admin = sync_client(shared_redis.url)
    client = redis.asyncio.Redis.from_url(
        shared_redis.url, retry=redis.asyncio.retry.Retry(NoBackoff(), 0)
    )
    store = RedisRetryBudget(client, prefix=prefix, capacity=1000, timeout=0.5)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    guard = Guard(budget=store, sleep=lambda _: None)
    before = exchanges(admin)

    async def call() -> object:
        peer = flaky()

        async def attempt() -> httpx.Response:
            return peer()

        return await guard.acall(attempt, peer=PEER)

    for _ in range(3):
        results = await asyncio.gather(*(call() for _ in range(150)))
        assert all(r.status_code == 200 for r in results)  # type: ignore[attr-defined]
    await store.aclose()
    await client.aclose()
    assert (local[0], told) == (0, [])
    assert exchanges(admin) - before < 450 / 10  # shared: far fewer scripts than retries
    assert level(admin, store.prefix + PEER) == pytest.approx(1000 - 450 + 225)


def test_a_healthy_redis_decides_every_retry_of_128_threads(
    shared_redis: RedisServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """128 threads calling at once, each call retried: no retry is decided locally.

    With the default ``timeout`` (50 ms): the time a command waits in this process's own
    queue, behind 128 threads for the interpreter, is not Redis's time.
    """
    local = count_local(monkeypatch)
    store = RedisRetryBudget(sync_client(shared_redis.url), prefix=prefix, capacity=10_000)
    told: list[BudgetFallback] = []
    store.subscribe(told.append)
    guard = Guard(budget=store, sleep=lambda _: None)
    start = threading.Barrier(128)
    failed: list[BaseException] = []

    def work() -> None:
        start.wait(30)
        for _ in range(20):
            try:
                guard.call(flaky(), peer=PEER)
            except Exception as exc:  # noqa: PERF203 (what failed is the finding)
                failed.append(exc)

    threads = [threading.Thread(target=work) for _ in range(128)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    store.close()
    assert (local[0], told, failed) == (0, [], [])


async def test_a_spend_cancelled_while_it_waits_loses_no_token(
    shared_redis: RedisServer, prefix: str
) -> None:
    """The spend that sent the exchange gives up: the others still get theirs, none is lost."""
    admin = sync_client(shared_redis.url)
    client = async_client(shared_redis.url)
    store = RedisRetryBudget(client, prefix=prefix, capacity=10, lease=2, timeout=5)
    budget = store.get(PEER)
    spends = [asyncio.ensure_future(budget.atry_spend()) for _ in range(5)]
    await asyncio.sleep(0)  # each one is waiting: the first one sent the exchange
    spends[0].cancel()
    outcomes = await asyncio.gather(*spends, return_exceptions=True)
    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert outcomes[1:] == [True] * 4
    assert level(admin, budget.key) + budget._lease + 4 == pytest.approx(10)
    await store.aclose()
    assert level(admin, budget.key) == pytest.approx(6)
    await client.aclose()


def test_a_retry_never_sent_goes_back_to_the_fleet(shared_redis: RedisServer, prefix: str) -> None:
    """``refund`` puts the token back in the lease, and the lease goes back to Redis."""
    admin = sync_client(shared_redis.url)
    store = store_for(shared_redis.url, prefix=prefix, lease=2)
    budget = store.get(PEER)
    assert budget.try_spend()
    budget.refund()
    assert budget.tokens == pytest.approx(10)  # a lease of 2 and 8 in the fleet bucket
    store.close()
    assert level(admin, budget.key) == pytest.approx(10)


def test_a_refund_while_redis_is_down_goes_to_the_local_bucket() -> None:
    """Deciding locally, the token goes back where it came from."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0", fallback_capacity=2, retry_interval=60)
    budget = store.get(PEER)
    assert budget.try_spend()
    assert budget.state is BudgetState.LOCAL
    budget.refund()
    assert budget.tokens == 2
    store.close()


def test_an_idle_peer_is_forgotten_and_what_it_held_goes_back(
    shared_redis: RedisServer, prefix: str
) -> None:
    """A peer unused for ``idle_ttl`` leaves this process, its lease sent back to the fleet."""
    admin = sync_client(shared_redis.url)
    clock = FakeClock()
    store = store_for(shared_redis.url, prefix=prefix, lease=2, idle_ttl=60, clock=clock.now)
    budget = store.get(PEER)
    assert budget.try_spend()  # a lease of 2: one spent, one held
    for host in range(100):
        store.get(f"http://host-{host}.example")
    clock.advance(61)
    store.get("http://now.example")
    drain(store)
    assert store.peers() == ["http://now.example"]
    assert level(admin, budget.key) == pytest.approx(9)
    store.close()


def test_the_fallback_warning_never_logs_the_peer_keys_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A card URL as the key: its user info, query and fragment never reach the log."""
    store = store_for(f"redis://127.0.0.1:{free_port()}/0")
    key = "https://user:pw-SECRET@agent.example:8443/a2a?api_key=q-SECRET#frag-SECRET"
    with caplog.at_level(logging.INFO, logger="a2a_client_errors"):
        assert store.get(key).try_spend()  # Redis is down: decided locally, and logged
    assert "decides locally" in caplog.text
    assert "https://agent.example:8443/a2a" in caplog.text
    assert "SECRET" not in caplog.text
    store.close()
