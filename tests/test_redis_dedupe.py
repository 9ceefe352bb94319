"""`RedisDedupeStore` on a real redis-server, and two agent processes sharing one.

The fleet: two replicas (tests/dedupe_worker.py, each a real a2a-sdk server on its own
127.0.0.1 port) and one redis-server, which holds both the dedupe records and the task store
the replicas share. Replicas that keep tasks of their own (``--own-tasks``) cannot answer for
each other: the second says so, clearly, and never runs the message again.
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
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState
from a2a.utils.errors import InternalError
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors.server import DedupeRecord, RedisDedupeStore, caller_of, deduplicate
from a2a_client_errors.server._dedupe import message_fingerprint, message_key
from a2a_client_errors.server._dedupe_store import _claim_value, _Claimed, _parse, _record_value
from tests.redis_server import (  # noqa: F401 (the fixtures)
    free_port,
    redis_server_fixture,
    shared_redis_fixture,
)
from tests.test_server_dedupe import FakeHandler, Named, anonymous, send

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.redis_server import RedisServer

# deduplicate over a2a-sdk 1.x request handlers.
pytestmark = pytest.mark.a2a_sdk("1")

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"A2A-Version": "1.0", "X-API-Key": "fleet-caller"}
COMPLETED = TaskState.TASK_STATE_COMPLETED
FP = "fingerprint"


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
    owner = await store.claim("k", FP, 60)
    assert owner.owned
    assert owner.token
    other = await store.claim("k", FP, 60)
    assert not other.owned
    assert other.record is None
    record = DedupeRecord(task_id="t-1", fingerprint=FP, message=b"\x00bytes")

    async def step() -> None:
        return None

    async def record_it() -> None:
        await store.record("k", owner.token, record, 60)

    pauses.on_pause = [step, step, step, record_it]
    assert await store.wait("k", 10) == record
    assert pauses.pauses == [0.01, 0.02, 0.04, 0.04]
    assert (await store.claim("k", FP, 60)).record == record
    await store.aclose()


async def test_a_released_claim_can_be_claimed_again(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Release: a waiter is told (None), and the next claim is owned."""
    store = store_on(shared_redis.url, pauses)
    owner = await store.claim("k", FP, 60)

    async def release() -> None:
        await store.release("k", owner.token)

    pauses.on_pause = [release]
    assert await store.wait("k", 10) is None
    assert (await store.claim("k", FP, 60)).owned
    await store.release("k", "not-a-token")  # nothing happens
    await store.aclose()


async def test_a_claim_nobody_records_times_the_waiter_out(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Still claimed past the timeout: TimeoutError (deduplicate says: resend later)."""
    store = store_on(shared_redis.url, pauses, poll_initial=0.5, poll_max=1.0)
    await store.claim("k", FP, 60)
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
    owner = await store.claim("k", FP, 3600)
    assert 0 < admin.pttl(store.prefix + "k") <= 5000
    await store.record(
        "k", owner.token, DedupeRecord(task_id="t", fingerprint=FP), 3600, final=False
    )
    assert 5000 < admin.pttl(store.prefix + "k") <= 3_600_000
    final = DedupeRecord(fingerprint=FP, message=b"x")
    await store.record("k", owner.token, final, 3600)
    assert (await store.claim("k", FP, 3600)).record == final
    # spent: a third record is refused
    await store.record("k", owner.token, DedupeRecord(task_id="other", fingerprint=FP), 3600)
    assert (await store.claim("k", FP, 3600)).record == final
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


async def test_redis_down_refuses_each_message_and_warns_once_per_interval(
    pauses: Pauses, caplog: pytest.LogCaptureFixture
) -> None:
    """Nobody listens: each message is refused unrun (retry after 2 s); one WARNING per interval."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)
    store = RedisDedupeStore(
        client, warn_interval=60, retry_after=2, sleep=pauses.sleep, clock=pauses.clock
    )
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    alice = ServerCallContext(user=Named("alice"))
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        for _ in range(2):
            with pytest.raises(InternalError, match="cannot take this message now") as refused:
                await handler.on_message_send(send(), alice)
            assert refused.value.data == {"retryAfter": "2"}
        assert inner.runs == 0
        assert len(caplog.records) == 1
        pauses.now += 61
        with pytest.raises(InternalError):
            await handler.on_message_send(send(), alice)
        assert len(caplog.records) == 2
    assert "new messages are refused as not processed" in caplog.records[0].getMessage()
    assert "m-1" not in caplog.text
    assert store.failures == 3
    assert store.refusals == 0
    assert await store.wait("k", 1) is None  # the waiter claims again, and is refused
    await store.aclose()


async def test_fail_open_processes_messages_while_redis_is_down(pauses: Pauses) -> None:
    """With fail_open=True the old way: processed without deduplication, each resend again."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.5)
    store = RedisDedupeStore(client, sleep=pauses.sleep, clock=pauses.clock)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store, fail_open=True)
    alice = ServerCallContext(user=Named("alice"))
    await handler.on_message_send(send(), alice)
    await handler.on_message_send(send(), alice)
    assert inner.runs == 2
    assert store.failures == 2
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
    await asyncio.wait_for(inner.started.wait(), 10)  # the claim went through Redis
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
    assert _parse(raw) is None or isinstance(_parse(raw), (_Claimed, DedupeRecord))


@given(st.text(), st.text(), st.binary())
def test_records_read_back_as_written(task_id: str, fingerprint: str, message: bytes) -> None:
    """A record's value reads back as the same record; a claim's as the same claim."""
    record = DedupeRecord(task_id=task_id, fingerprint=fingerprint, message=message)
    assert _parse(_record_value(record)) == record
    assert _parse(_record_value(record).encode()) == record
    assert _parse(_claim_value(task_id, fingerprint)) == _Claimed(task_id, fingerprint)


# --------------------------------------------------------------------------------------------
# Two replicas, one redis-server
# --------------------------------------------------------------------------------------------


class Replica:
    """One agent process (tests/dedupe_worker.py), stopped by closing its input."""

    def __init__(self, redis_url: str, prefix: str, *options: str) -> None:
        command = ["-m", "tests.dedupe_worker", "--redis", redis_url, "--prefix", prefix]
        self.process = subprocess.Popen(  # noqa: S603 (our own worker)
            [sys.executable, *command, *options],
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


@contextlib.contextmanager
def fleet(redis_url: str, *options: str) -> Iterator[tuple[Replica, Replica]]:
    """Two replicas on one redis-server, with a prefix of their own; both stopped after."""
    prefix = f"fleet-dedupe:{uuid.uuid4().hex}:"
    first = Replica(redis_url, prefix, *options)
    try:
        second = Replica(redis_url, prefix, *options)
    except BaseException:
        first.stop()
        raise
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


@pytest.fixture
def replicas(shared_redis: RedisServer) -> Iterator[tuple[Replica, Replica]]:
    """Two replicas sharing one redis-server for their records and their tasks."""
    with fleet(shared_redis.url) as pair:
        yield pair


def jsonrpc_send(
    url: str, message_id: str, *, method: str = "SendMessage", whole: bool = False
) -> Any:
    """SendMessage (or SendStreamingMessage: the events) to a replica over JSON-RPC.

    The task, or with ``whole`` the JSON-RPC response itself.
    """
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
            answer = client.post(url + "/jsonrpc", json=body).json()
            return answer if whole else answer["result"]["task"]
        with client.stream("POST", url + "/jsonrpc", json=body) as response:
            return [
                json.loads(line[5:])["result"]
                for line in response.iter_lines()
                if line.startswith("data:")
            ]


def test_two_replicas_make_one_task(replicas: tuple[Replica, Replica]) -> None:
    """The same message to each replica: one run; the second reads the first's task back."""
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


def test_replicas_with_task_stores_of_their_own_say_so(shared_redis: RedisServer) -> None:
    """The second replica does not hold the task: a clear InternalError, and no second run."""
    with fleet(shared_redis.url, "--own-tasks") as (first, second):
        task: dict[str, Any] = jsonrpc_send(first.url, "own-1")
        again = jsonrpc_send(second.url, "own-1", whole=True)
        assert again["error"]["code"] == -32603, again
        assert "share one task store" in again["error"]["message"]
        assert jsonrpc_send(first.url, "own-1")["id"] == task["id"]
        assert first.runs() + second.runs() == 1


# --------------------------------------------------------------------------------------------
# A stalled Redis, a full Redis
# --------------------------------------------------------------------------------------------


class Ticks:
    """An injected renewal pause that the test ends: each `tick` lets one renewal run."""

    def __init__(self) -> None:
        self.waiting: asyncio.Queue[float] = asyncio.Queue()
        self.go: asyncio.Queue[None] = asyncio.Queue()

    async def sleep(self, seconds: float) -> None:
        """The renewal loop's pause: says it waits, then waits for the test."""
        await self.waiting.put(seconds)
        await self.go.get()

    async def tick(self) -> float:
        """Let one renewal run; return when the loop waits again (bounded)."""
        await self.go.put(None)
        return await asyncio.wait_for(self.waiting.get(), 10)


class Warned(logging.Handler):
    """Sets an event when a WARNING holding ``text`` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.WARNING)
        self.text = text
        self.seen = asyncio.Event()
        self.loop = asyncio.get_running_loop()

    def emit(self, record: logging.LogRecord) -> None:
        """Note a matching record, on the test's loop."""
        if self.text in record.getMessage():
            self.loop.call_soon_threadsafe(self.seen.set)


API_KEY = ServerCallContext(state={"headers": {"x-api-key": "caller-a"}})


async def test_a_stall_during_a_long_first_attempt_does_not_run_the_message_twice(
    redis_server: RedisServer,
) -> None:
    """SIGSTOP during a renewal, SIGCONT: the next renewal extends the lease; one run.

    The first attempt waits on an event the test holds. The renewal period is the test's
    (injected pause): one renewal falls inside the stall (longer than a period) and times
    out; the lease (30 s) is far from over when Redis answers again (shorter than the lease).
    """
    ticks = Ticks()
    store = RedisDedupeStore(
        redis.asyncio.Redis.from_url(redis_server.url),
        prefix="stall:",
        lease=30,
        timeout=0.5,
        renew_sleep=ticks.sleep,
    )
    admin = redis.Redis.from_url(redis_server.url)
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner, store=store)
    first = asyncio.create_task(handler.on_message_send(send(), API_KEY))
    await asyncio.wait_for(inner.started.wait(), 10)
    assert await asyncio.wait_for(ticks.waiting.get(), 10) == pytest.approx(10.0)
    [key] = admin.keys("stall:*")
    redis_server.pause()
    try:
        await ticks.tick()  # this renewal times out: Redis is stopped
    finally:
        redis_server.resume()
    assert store.failures == 1
    admin.pexpire(key, 2000)  # as if the lease had nearly run out meanwhile
    await ticks.tick()  # renewing goes on: the lease is whole again
    assert admin.pttl(key) > 20_000
    resend = asyncio.create_task(handler.on_message_send(send(), API_KEY))
    await ticks.tick()
    assert inner.runs == 1
    inner.gate.set()
    task = await asyncio.wait_for(first, 10)
    again = await asyncio.wait_for(resend, 30)
    assert isinstance(task, Task)
    assert isinstance(again, Task)
    assert again.id == task.id
    assert inner.runs == 1
    admin.close()
    await store.aclose()


async def test_renewal_stops_when_the_claim_is_provably_lost(
    shared_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The key is no longer the claim (expired, taken): renewal stops, with a WARNING."""
    ticks = Ticks()
    store = store_on(shared_redis.url, Pauses(), renew_sleep=ticks.sleep)
    admin = redis.Redis.from_url(shared_redis.url)
    warned = Warned("claim was lost")
    logging.getLogger("a2a_client_errors.server").addHandler(warned)
    try:
        owner = await store.claim("k", FP, 60)
        await asyncio.wait_for(ticks.waiting.get(), 10)
        admin.set(store.prefix + "k", "another's")
        await ticks.go.put(None)
        await asyncio.wait_for(warned.seen.wait(), 10)
        assert ticks.waiting.empty()  # it does not pause for another round
        await store.record("k", owner.token, DedupeRecord(task_id="t", fingerprint=FP), 60)
        assert admin.get(store.prefix + "k") == b"another's"  # never overwritten
    finally:
        logging.getLogger("a2a_client_errors.server").removeHandler(warned)
        admin.close()
        await store.aclose()


def fill(server: RedisServer) -> redis.Redis:
    """Make the server full: maxmemory below what it uses, and no eviction."""
    admin = redis.Redis.from_url(server.url)
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", 1)
    return admin


async def test_a_full_redis_refuses_each_message_logged_and_counted(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A full Redis refuses each claim: the message is refused unrun, one WARNING and count each.

    ``maxmemory`` below what it uses, ``noeviction``: nothing is processed without
    deduplication; once Redis has room again, deduplication is back.
    """
    store = RedisDedupeStore(redis.asyncio.Redis.from_url(redis_server.url), timeout=5)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    admin = fill(redis_server)
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        for index in range(5):
            for _ in range(2):
                with pytest.raises(InternalError, match="cannot take this message now"):
                    await handler.on_message_send(send(f"full-{index}"), API_KEY)
    assert inner.runs == 0
    assert store.refusals == 10
    assert store.failures == 0
    refused = [r for r in caplog.records if "refused a write" in r.getMessage()]
    assert len(refused) == 10
    assert all(r.levelno == logging.WARNING for r in refused)
    assert "OutOfMemoryError" in refused[0].getMessage()
    assert "refuses it as not processed" in refused[0].getMessage()
    admin.config_set("maxmemory", 0)  # room again: deduplication is back
    await handler.on_message_send(send("full-0"), API_KEY)
    await handler.on_message_send(send("full-0"), API_KEY)
    assert inner.runs == 1
    admin.close()
    await store.aclose()


async def test_a_record_refused_keeps_the_claim_and_is_written_once_redis_has_room(
    redis_server: RedisServer,
) -> None:
    """Redis fills while the first attempt runs: the claim stays, resends are refused unrun.

    Once Redis has room, the next renewal writes the record: the resend gets the first task.
    """
    ticks = Ticks()
    store = RedisDedupeStore(
        redis.asyncio.Redis.from_url(redis_server.url),
        prefix="late:",
        timeout=5,
        renew_sleep=ticks.sleep,
    )
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner, store=store)
    first = asyncio.create_task(handler.on_message_send(send(), API_KEY))
    await asyncio.wait_for(inner.started.wait(), 10)
    await asyncio.wait_for(ticks.waiting.get(), 10)
    admin = fill(redis_server)
    inner.gate.set()
    task = await asyncio.wait_for(first, 10)
    assert isinstance(task, Task)
    assert store.refusals == 1
    [key] = admin.keys("late:*")
    assert "claim" in json.loads(admin.get(key))  # type: ignore[arg-type]
    with pytest.raises(InternalError, match="cannot take this message now"):
        await handler.on_message_send(send(), API_KEY)  # Redis refuses the claim too
    admin.config_set("maxmemory", 0)
    await ticks.go.put(None)  # the renewal writes the record

    async def recorded() -> None:
        while "task" not in json.loads(admin.get(key)):  # type: ignore[arg-type]
            await asyncio.sleep(0)

    await asyncio.wait_for(recorded(), 10)
    again = await handler.on_message_send(send(), API_KEY)
    assert isinstance(again, Task)
    assert again.id == task.id
    assert inner.runs == 1
    assert 3_500_000 < admin.pttl(key) <= 86_400_000  # the record's ttl
    admin.close()
    await store.aclose()


async def test_a_claim_and_a_streams_record_outlive_the_ttl_while_running(
    shared_redis: RedisServer,
) -> None:
    """A ttl of 2 s: renewal keeps the claim, then the stream's first record, alive past it.

    The key's expiry is cut short by hand (as if the time had passed); each renewal makes it
    whole again while the first attempt runs, and the end counts the ttl from then.
    """
    ticks = Ticks()
    store = store_on(shared_redis.url, Pauses(), renew_sleep=ticks.sleep)
    admin = redis.Redis.from_url(shared_redis.url)
    owner = await store.claim("k", FP, 2)
    name = store.prefix + "k"
    assert await asyncio.wait_for(ticks.waiting.get(), 10) == pytest.approx(2 / 3)
    for _ in range(3):
        admin.pexpire(name, 50)
        await ticks.tick()
        assert admin.pttl(name) > 1000
    assert not (await store.claim("k", FP, 2)).owned
    record = DedupeRecord(task_id="t", fingerprint=FP)
    await store.record("k", owner.token, record, 2, final=False)
    for _ in range(3):
        admin.pexpire(name, 50)
        await ticks.tick()
        assert admin.pttl(name) > 1000
        assert (await store.claim("k", FP, 2)).record == record
    admin.pexpire(name, 50_000)  # a longer expiry is never shortened by a renewal
    await ticks.tick()
    assert admin.pttl(name) > 10_000
    await store.record("k", owner.token, record, 2)
    assert 0 < admin.pttl(name) <= 2000
    assert ticks.waiting.empty()
    admin.close()
    await store.aclose()


async def test_a_stream_records_its_task_once_and_its_resend_resumes_it(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """A stream's task is written at its first event; the end counts the ttl from then."""
    store = store_on(shared_redis.url, pauses)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store)
    admin = redis.Redis.from_url(shared_redis.url)
    inner.updates.put_nowait(COMPLETED)
    first = [event async for event in handler.on_message_send_stream(send(), API_KEY)]
    [key] = admin.keys(store.prefix + "*")
    assert json.loads(admin.get(key))["task"] == first[0].id  # type: ignore[arg-type]
    assert 3_500_000 < admin.pttl(key) <= 86_400_000  # the record's ttl, not the lease
    again = [event async for event in handler.on_message_send_stream(send(), API_KEY)]
    assert [event.id for event in again] == [first[0].id]
    assert inner.runs == 1
    admin.close()
    await store.aclose()


async def test_a_value_of_no_known_form_holds_the_key_and_is_never_run_over(
    shared_redis: RedisServer, pauses: Pauses
) -> None:
    """Something else under the key: the message waits its wait_timeout, then resend-later."""
    store = store_on(shared_redis.url, pauses, poll_initial=1, poll_max=1)
    inner = FakeHandler()
    handler = deduplicate(inner, store=store, wait_timeout=3)
    admin = redis.Redis.from_url(shared_redis.url)
    key = message_key(caller_of(API_KEY) or "", "", "m-1", message_fingerprint(send().message))
    admin.set(store.prefix + key, b"\xff not ours", ex=60)
    with pytest.raises(InternalError, match="still being processed"):
        await handler.on_message_send(send(), API_KEY)
    assert inner.runs == 0
    assert sum(pauses.pauses) == pytest.approx(3)
    admin.close()
    await store.aclose()
