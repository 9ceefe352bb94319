"""RedisCircuitBreaker against a real redis-server on 127.0.0.1: one replica's evidence, all.

Two breakers stand for two replicas (each with its own fake clock); the key in Redis expires on
the server's clock. No test sleeps: the background exchanges are awaited through the worker.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from a2a_client_errors import Guard, PeerUnavailable
from a2a_client_errors.integrations.redis import RedisCircuitBreaker
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import BreakerState, BudgetState, Verdict
from tests.redis_server import (  # noqa: F401 (the fixtures)
    redis_server_fixture,
    shared_redis_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.redis_server import RedisServer

PEER = "https://agent.example:443"
_PREFIXES = itertools.count()


class Hooked(RecordingHook):
    """A RecordingHook that also keeps the breaker's fallbacks."""

    def __init__(self) -> None:
        super().__init__()
        self.breaker_fallbacks: list[Any] = []

    def on_breaker_fallback(self, event: Any) -> None:
        """Keep a fallback."""
        self.breaker_fallbacks.append(event)


@pytest.fixture(name="clients")
def clients_fixture() -> Iterator[list[redis.Redis]]:
    """The clients a test made, closed after it."""
    made: list[redis.Redis] = []
    yield made
    for client in made:
        client.close()


def _replica(
    url: str, clients: list[redis.Redis], prefix: str, **kwargs: Any
) -> RedisCircuitBreaker:
    client = redis.Redis.from_url(
        url, socket_timeout=2.0, socket_connect_timeout=2.0, retry=Retry(NoBackoff(), 0)
    )
    clients.append(client)
    settings: dict[str, Any] = {"min_calls": 2, "clock": FakeClock(), "random": lambda: 0.0}
    return RedisCircuitBreaker(client, prefix=prefix, timeout=2.0, **{**settings, **kwargs})


def _drain(breaker: RedisCircuitBreaker) -> None:
    """Wait (bounded) until what the breaker sent in the background is done."""
    breaker._worker.submit(lambda: None).result(5.0)


def _prefix() -> str:
    return f"test-breaker-{next(_PREFIXES)}:"


def test_one_replica_opening_makes_the_others_fail_fast(
    shared_redis: RedisServer, clients: list[redis.Redis]
) -> None:
    """A opens; B, which saw nothing fail, refuses too (told as a shared opening) until A closes."""
    prefix = _prefix()
    a, b = (_replica(shared_redis.url, clients, prefix) for _ in range(2))
    hook = Hooked()
    guard = Guard(breaker=b, hooks=[hook], max_attempts=1)
    a.record(PEER, Verdict.UNWELL)
    a.record(PEER, Verdict.UNWELL)
    assert a.state(PEER) is BreakerState.OPEN
    _drain(a)
    admission = asyncio.run(b.aadmit(PEER))
    assert not admission.allowed
    assert 4.0 < admission.retry_in <= 5.0  # the key's expiry, on the server's clock
    assert b.state(PEER) is BreakerState.OPEN
    assert [(e.new, e.cause) for e in hook.breakers] == [(BreakerState.OPEN, "shared")]

    async def ok() -> object:
        return {"jsonrpc": "2.0", "id": 1, "result": {}}

    with pytest.raises(PeerUnavailable):
        asyncio.run(guard.acall(ok, peer=PEER))
    # A's probe succeeds: the key goes, and B, reading again, lets calls through.
    a.local.clock.advance(5.0)  # type: ignore[attr-defined]
    assert a.admit(PEER).probe
    a.record(PEER, Verdict.HEALTHY, probe=True)
    _drain(a)
    b.local.clock.advance(1.0)  # type: ignore[attr-defined]
    assert asyncio.run(b.aadmit(PEER)).allowed
    # B held its breaker open for the fleet, and closed it when the fleet did: no probe of its own.
    assert [(e.new, e.cause) for e in hook.breakers] == [
        (BreakerState.OPEN, "shared"),
        (BreakerState.CLOSED, "shared"),
    ]
    a.close()
    b.close()


def test_when_the_fleets_cooldown_ends_each_replica_sends_one_probe(
    shared_redis: RedisServer, clients: list[redis.Redis]
) -> None:
    """B learnt of the opening from Redis: at the end of the cool-down it probes once, not all."""
    prefix = _prefix()
    a, b = (_replica(shared_redis.url, clients, prefix) for _ in range(2))
    a.record(PEER, Verdict.UNWELL)
    a.record(PEER, Verdict.UNWELL)
    _drain(a)
    assert not asyncio.run(b.aadmit(PEER)).allowed
    assert b.local.state(PEER) is BreakerState.OPEN  # held open, by the fleet's evidence
    clients[1].delete(prefix + PEER)  # the key expires, on the server's clock
    b.local.clock.advance(5.0)  # type: ignore[attr-defined]

    async def twenty() -> list[Any]:
        return [await b.aadmit(PEER) for _ in range(20)]

    admissions = asyncio.run(twenty())
    assert [x.allowed for x in admissions] == [True] + [False] * 19
    assert admissions[0].probe
    assert {x.state for x in admissions[1:]} == {BreakerState.HALF_OPEN}
    b.record(PEER, Verdict.HEALTHY, probe=True)
    assert all(x.allowed for x in asyncio.run(twenty()))
    a.close()
    b.close()


def test_sync_code_reads_in_the_background_and_never_waits(
    shared_redis: RedisServer, clients: list[redis.Redis]
) -> None:
    """Admit answers from the last reading at once; the reading it started refuses later calls."""
    prefix = _prefix()
    a, b = (_replica(shared_redis.url, clients, prefix) for _ in range(2))
    a.record(PEER, Verdict.UNWELL)
    a.record(PEER, Verdict.UNWELL)
    _drain(a)
    assert b.admit(PEER).allowed  # nothing read yet: the local breaker's answer
    _drain(b)
    refused = b.admit(PEER)
    assert not refused.allowed
    assert refused.state is BreakerState.OPEN
    a.close()
    b.close()


def test_redis_down_falls_back_to_the_local_breaker_and_comes_back(
    redis_server: RedisServer, clients: list[redis.Redis]
) -> None:
    """Redis killed: calls are decided locally, told once; Redis back: told it is shared again."""
    breaker = _replica(redis_server.url, clients, _prefix(), retry_interval=1.0)
    hook = Hooked()
    guard = Guard(breaker=breaker, hooks=[hook])
    redis_server.kill()
    assert asyncio.run(breaker.aadmit(PEER)).allowed
    assert asyncio.run(breaker.aadmit(PEER)).allowed  # left alone for retry_interval: no new word
    assert [(e.state, e.cause is not None) for e in hook.breaker_fallbacks] == [
        (BudgetState.LOCAL, True)
    ]
    breaker.record(PEER, Verdict.UNWELL)
    breaker.record(PEER, Verdict.UNWELL)
    assert breaker.state(PEER) is BreakerState.OPEN  # the local breaker still protects
    redis_server.start()
    breaker.local.clock.advance(5.0)  # type: ignore[attr-defined]
    assert asyncio.run(breaker.aadmit(PEER)).probe
    assert hook.breaker_fallbacks[-1].state is BudgetState.SHARED
    assert guard.breaker is breaker
    breaker.close()


def test_it_needs_a_redis_client() -> None:
    """Anything but a redis-py client is a TypeError; nonsense intervals a ValueError."""
    with pytest.raises(TypeError, match="redis-py client"):
        RedisCircuitBreaker(object())
    with pytest.raises(ValueError, match="sync_interval"):
        RedisCircuitBreaker(redis.Redis(), sync_interval=0)


def test_a_process_forgets_the_peers_it_no_longer_calls(
    shared_redis: RedisServer, clients: list[redis.Redis]
) -> None:
    """2,000 hosts, one new each 100 ms: the process holds those of the last idle seconds."""
    breaker = _replica(shared_redis.url, clients, _prefix(), idle=120.0)
    clock = breaker.local.clock
    held = []
    for n in range(2000):
        peer = f"https://tenant-{n}.example:443"
        assert breaker.admit(peer).allowed  # and a reading of the fleet's key, in the background
        breaker.record(peer, Verdict.HEALTHY)
        clock.advance(0.1)  # type: ignore[attr-defined]
        if n % 100 == 99:
            _drain(breaker)
            held.append(len(breaker.peers()))
    breaker.close()
    # Idle for 120 s, swept at most every 30 s: never more than 150 s of hosts.
    assert max(held) <= 150 / 0.1 + 1
    assert held[-1] >= 120 / 0.1
