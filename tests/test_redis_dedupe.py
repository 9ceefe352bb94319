"""`RedisDedupeStore` on a real redis-server, and two agent processes sharing one.

The fleet: two replicas (tests/dedupe_worker.py, each a real a2a-sdk server on its own
127.0.0.1 port with its own InMemoryTaskStore) and one redis-server. The second replica does
not hold the first's task: it answers with the snapshot the record keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import queue
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import redis
import redis.asyncio
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors.server import DedupeRecord, RedisDedupeStore, deduplicate
from a2a_client_errors.server.dedupe_store import _parse
from tests.redis_server import (  # noqa: F401 (the fixtures)
    free_port,
    redis_server_fixture,
    shared_redis_fixture,
)
from tests.test_server_dedupe import FakeHandler, Named, anonymous, send

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a.types.a2a_pb2 import Task

    from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"A2A-Version": "1.0"}


class Pauses:
    """An injected sleep and clock: each pause moves the clock, and may run a step."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []
        self.on_pause: list[Any] = []

    def clock(self) -> float:
        """The time now."""
        return self.now

    async def sleep(self, seconds: float) -> None:
        """Pause: the clock moves; the next step (if any) runs."""
        self.pauses.append(seconds)
        self.now += seconds
        if self.on_pause:
            await self.on_pause.pop(0)()


@pytest.fixture
def pauses() -> Pauses:
    """Time for one test."""
    return Pauses()


def store_on(url: str, pauses: Pauses, **options: Any) -> RedisDedupeStore:
    """A store with its own prefix, on an asyncio client of ``url``."""
    return RedisDedupeStore(
        redis.asyncio.Redis.from_url(url),
        prefix=f"dedupe-test:{uuid.uuid4().hex}:",
        sleep=pauses.sleep,
        clock=pauses.clock,
        **options,
    )


async def test_a_claim_then_a_wait_with_backoff_then_the_record(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """The second claimer waits, polling with doubling pauses, until the record is there."""
    store = store_on(shared_redis.url, pauses, poll_initial=0.01, poll_max=0.04)
    owner = await store.claim("k", 60)
    assert owner.owned
    assert owner.token
    other = await store.claim("k", 60)
    assert not other.owned
    assert other.record is None
    record = DedupeRecord(task_id="t-1", answer=b"\x00bytes")

    async def step() -> None:
        return None

    async def record_it() -> None:
        await store.record("k", owner.token, record, 60)

    pauses.on_pause = [step, step, step, record_it]
    assert await store.wait("k", 10) == record
    assert pauses.pauses == [0.01, 0.02, 0.04, 0.04]
    assert (await store.claim("k", 60)).record == record
    await store.aclose()


async def test_a_released_claim_can_be_claimed_again(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Release: a waiter is told (None), and the next claim is owned."""
    store = store_on(shared_redis.url, pauses)
    owner = await store.claim("k", 60)

    async def release() -> None:
        await store.release("k", owner.token)

    pauses.on_pause = [release]
    assert await store.wait("k", 10) is None
    assert (await store.claim("k", 60)).owned
    await store.release("k", "not-a-token")  # nothing happens
    await store.aclose()


async def test_a_claim_nobody_records_times_the_waiter_out(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Still claimed past the timeout: TimeoutError (deduplicate says: resend later)."""
    store = store_on(shared_redis.url, pauses, poll_initial=0.5, poll_max=1.0)
    await store.claim("k", 60)
    with pytest.raises(TimeoutError):
        await store.wait("k", 2.0)
    assert sum(pauses.pauses) == pytest.approx(2.0)
    await store.aclose()


async def test_the_record_expires_with_the_ttl_and_the_claim_with_the_lease(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """The claim lives ``lease``; the record ``ttl`` from when it is written."""
    store = store_on(shared_redis.url, pauses, lease=5)
    admin = redis.Redis.from_url(shared_redis.url)
    owner = await store.claim("k", 3600)
    assert 0 < admin.pttl(store.prefix + "k") <= 5000
    await store.record("k", owner.token, DedupeRecord(task_id="t"), 3600, final=False)
    assert 5000 < admin.pttl(store.prefix + "k") <= 3_600_000
    await store.record("k", owner.token, DedupeRecord(task_id="t", answer=b"x"), 3600)
    assert (await store.claim("k", 3600)).record == DedupeRecord(task_id="t", answer=b"x")
    # spent: a third record is refused
    await store.record("k", owner.token, DedupeRecord(task_id="other"), 3600)
    assert (await store.claim("k", 3600)).record == DedupeRecord(task_id="t", answer=b"x")
    admin.close()
    await store.aclose()


async def test_keys_are_prefixed_hashes_and_hold_no_name(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Around a handler: the key is prefix + SHA-256; neither it nor the value names the user."""
    store = store_on(shared_redis.url, pauses)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    context = anonymous()
    context.user = Named("alice@example.com")
    first = await handler.on_message_send(send("message-id-1"), context)
    again = await handler.on_message_send(send("message-id-1"), context)
    assert inner.runs == 1
    assert isinstance(again, type(first))
    admin = redis.Redis.from_url(shared_redis.url)
    keys = admin.keys(store.prefix + "*")
    assert len(keys) == 1
    key = keys[0].decode()
    assert len(key) == len(store.prefix) + 64
    value = admin.get(key)
    assert value is not None
    for secret in (b"alice", b"message-id-1"):
        assert secret not in keys[0]
        assert secret not in value
    assert json.loads(value)["task"] == first.id  # type: ignore[union-attr]
    admin.close()
    await store.aclose()


async def test_redis_down_fails_open_and_warns_once_per_interval(
    pauses: Pauses, caplog: pytest.LogCaptureFixture
) -> None:
    """Nobody listens: each message is processed (no dedup); one WARNING per interval."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)
    store = RedisDedupeStore(client, warn_interval=60, sleep=pauses.sleep, clock=pauses.clock)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        await handler.on_message_send(send(), anonymous())
        await handler.on_message_send(send(), anonymous())
        assert inner.runs == 2
        assert len(caplog.records) == 1
        pauses.now += 61
        await handler.on_message_send(send(), anonymous())
        assert len(caplog.records) == 2
    assert "without deduplication" in caplog.records[0].getMessage()
    assert "m-1" not in caplog.text
    assert await store.wait("k", 1) is None  # fails open too
    await store.aclose()


async def test_a_store_that_dies_mid_attempt_lets_the_attempt_finish(
    redis_server: RedisServer, pauses: Pauses
) -> None:
    """Redis killed after the claim: the record fails (logged), the answer still goes."""
    store = store_on(redis_server.url, pauses, timeout=0.5)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    gate = asyncio.Event()
    inner.gate = gate
    first = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    # The claim is a real round trip to Redis: yield until the handler runs (bounded in time,
    # not in loop turns, which a busy machine may need more of).
    loop = asyncio.get_running_loop()
    bound = loop.time() + 5.0
    while not inner.runs and loop.time() < bound:
        await asyncio.sleep(0)
    assert inner.runs == 1
    redis_server.kill()
    gate.set()
    result = await first
    assert result is not None
    await store.aclose()


def test_bad_redis_settings_are_refused() -> None:
    """Leases, timeouts and pauses must be positive."""
    with pytest.raises(ValueError, match="must be"):
        RedisDedupeStore(object(), lease=0)


@given(st.one_of(st.binary(), st.text(), st.none(), st.integers()))
def test_reading_any_stored_value_never_raises(raw: object) -> None:
    """Whatever a key holds, it reads as a record, a claim or nothing."""
    assert _parse(raw) is None or isinstance(_parse(raw), (str, DedupeRecord))


@given(st.text(), st.binary())
def test_records_read_back_as_written(task_id: str, answer: bytes) -> None:
    """A record's value reads back as the same record."""
    from a2a_client_errors.server.dedupe_store import _record_value

    record = DedupeRecord(task_id=task_id, answer=answer)
    assert _parse(_record_value(record)) == record
    assert _parse(_record_value(record).encode()) == record


# --------------------------------------------------------------------------------------------
# Two replicas, one redis-server
# --------------------------------------------------------------------------------------------


class Replica:
    """One agent process (tests/dedupe_worker.py), stopped by closing its input."""

    def __init__(self, redis_url: str, prefix: str) -> None:
        self.process = subprocess.Popen(  # noqa: S603 (our own worker)
            [sys.executable, "-m", "tests.dedupe_worker", "--redis", redis_url, "--prefix", prefix],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        lines: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        assert self.process.stdout is not None
        out = self.process.stdout
        threading.Thread(target=lambda: lines.put(out.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=30).decode()
        except queue.Empty:
            self.stop()
            raise RuntimeError("the replica did not start in time") from None
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"the replica did not start: {line!r}")
        self.url = line.split()[1]

    def runs(self) -> int:
        """How often this replica's executor ran."""
        return int(httpx.get(self.url + "/runs", timeout=10).json()["runs"])

    def stop(self) -> None:
        """Close its input; kill it if it does not end in time."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def replicas(shared_redis: RedisServer) -> Iterator[tuple[Replica, Replica]]:
    """Two replicas on one redis-server, with a prefix of this test's own."""
    prefix = f"fleet-dedupe:{uuid.uuid4().hex}:"
    first = Replica(shared_redis.url, prefix)
    try:
        second = Replica(shared_redis.url, prefix)
    except BaseException:
        first.stop()
        raise
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def jsonrpc_send(url: str, message_id: str, *, method: str = "SendMessage") -> Any:
    """SendMessage (or SendStreamingMessage: the events) to a replica over JSON-RPC."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "x"}]}
        },
    }
    with httpx.Client(timeout=10, headers=HEADERS) as client:
        if method == "SendMessage":
            return client.post(url + "/jsonrpc", json=body).json()["result"]["task"]
        with client.stream("POST", url + "/jsonrpc", json=body) as response:
            return [
                json.loads(line[5:])["result"]
                for line in response.iter_lines()
                if line.startswith("data:")
            ]


def test_two_replicas_make_one_task(replicas: tuple[Replica, Replica]) -> None:
    """The same message to each replica: one run; the second answers with the first's task."""
    first, second = replicas
    task: dict[str, Any] = jsonrpc_send(first.url, "fleet-1")
    again: dict[str, Any] = jsonrpc_send(second.url, "fleet-1")
    assert again["id"] == task["id"]
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    streamed = jsonrpc_send(second.url, "fleet-1", method="SendStreamingMessage")
    assert [event["task"]["id"] for event in streamed] == [task["id"]]
    assert first.runs() + second.runs() == 1


def test_two_replicas_at_once_make_one_task(replicas: tuple[Replica, Replica]) -> None:
    """Ten sends of one message, spread over both replicas at once: one run, one task id."""
    urls = [replica.url for replica in replicas]
    results: queue.SimpleQueue[Task | BaseException] = queue.SimpleQueue()

    def one(url: str) -> None:
        try:
            results.put(jsonrpc_send(url, "fleet-10"))
        except BaseException as exc:  # reported below
            results.put(exc)

    threads = [threading.Thread(target=one, args=(urls[i % 2],)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    answers = [results.get_nowait() for _ in range(10)]
    assert not [answer for answer in answers if isinstance(answer, BaseException)]
    assert len({answer["id"] for answer in answers}) == 1  # type: ignore[index]
    assert sum(replica.runs() for replica in replicas) == 1
