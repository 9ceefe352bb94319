"""Where `deduplicate` remembers the messages it has seen: in this process, or in Redis.

A store maps a key (a hash of the caller, the tenant and the messageId, made by
`deduplicate`) to one of three states:

* absent: nobody sent this message yet (or its entry expired): the next call *claims* it and
  runs;
* claimed: a first attempt is running and has not made its task yet; other calls wait;
* recorded: the first attempt's answer is known (a `DedupeRecord`: the task id and, where the
  store keeps them, a snapshot of the answer).

`MemoryDedupeStore` (the default) is one process's memory: thread- and task-safe, entries
expire after their ttl, at most ``max_entries`` are kept (the oldest is evicted first).
`RedisDedupeStore` is shared by every replica of an agent: a claim is ``SET NX`` with a short
lease renewed while the first attempt runs, the record replaces it with the ttl, and a replica
that meets a claim polls (bounded, with backoff) until the record is there. When Redis cannot
be reached the store *fails open*: calls are processed without deduplication (a WARNING is
logged at most once per ``warn_interval``), because an agent that stops answering while its
cache is down hurts more than the duplicate a client's resend may then make.

Neither store imports a2a-sdk; redis-py is imported only by `RedisDedupeStore.from_url`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "Claim",
    "DedupeRecord",
    "DedupeStore",
    "MemoryDedupeStore",
    "RedisDedupeStore",
]

_log = logging.getLogger("a2a_client_errors.server")

DEFAULT_MAX_ENTRIES: Final = 100_000
"""Entries a `MemoryDedupeStore` keeps by default (a few hundred bytes each)."""


@dataclass(frozen=True, slots=True)
class DedupeRecord:
    """What a first attempt made, for the calls that resend its message.

    Attributes:
        task_id: the task the first attempt made; empty when it answered with a Message that
            belongs to no task.
        answer: the serialized ``SendMessageResponse`` (a Task or a Message) the first attempt
            answered with, or empty. Always kept for a Message; for a Task only by stores that
            serve several processes (``keeps_snapshots``), so that a replica that cannot read
            the task can still answer.
    """

    task_id: str = ""
    answer: bytes = b""


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer of `DedupeStore.claim`.

    Attributes:
        owned: this call holds the claim: it runs the first attempt, then calls `record`
            (or `release` if it failed before making anything).
        token: the owner's token, given back to `record` and `release`; empty when not owned.
        record: the first attempt's record, when it is known (not owned).
        degraded: the store could not be reached; the claim is owned by default (fail open)
            and nothing will be remembered.
    """

    owned: bool
    token: str = ""
    record: DedupeRecord | None = None
    degraded: bool = False


@runtime_checkable
class DedupeStore(Protocol):
    """The memory `deduplicate` keeps; see the module docstring for the states.

    Attributes:
        keeps_snapshots: whether `deduplicate` should put the first answer's task in the
            record (stores shared by processes that may not share a task store).
    """

    keeps_snapshots: bool

    async def claim(self, key: str, ttl: float) -> Claim:
        """Claim ``key`` for a first attempt, or tell what holds it.

        Returns a `Claim` that is owned, or holds the record, or neither (a first attempt is
        running: `wait` for it).
        """
        ...

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """Wait until the claim on ``key`` is recorded or gone.

        Returns:
            The record, or None when the claim was released or expired (claim again).

        Raises:
            TimeoutError: still claimed, unrecorded, after ``timeout`` seconds.
        """
        ...

    async def record(
        self, key: str, token: str, record: DedupeRecord, ttl: float, *, final: bool = True
    ) -> None:
        """Record the first attempt's answer under the claim ``token`` holds, for ``ttl`` s.

        A first attempt may record twice: the task id as soon as it is known
        (``final=False``), then its answer; after a ``final`` record the token is spent.
        """
        ...

    async def release(self, key: str, token: str) -> None:
        """Drop the claim ``token`` holds (the first attempt made nothing): others may run."""
        ...


# --------------------------------------------------------------------------------------------
# In memory
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Entry:
    token: str
    expires_at: float
    record: DedupeRecord | None = None
    waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[DedupeRecord | None]]] = field(
        default_factory=list
    )


def _resolve(future: asyncio.Future[DedupeRecord | None], value: DedupeRecord | None) -> None:
    if not future.done():
        future.set_result(value)


class MemoryDedupeStore:
    """One process's memory of the messages seen (the default store).

    Safe from several threads and event loops at once: the map is guarded by a lock, and a
    waiter is woken on its own loop. An entry lives ``ttl`` seconds from its claim (its record
    does not extend it); past ``max_entries`` the oldest entries are evicted, even claimed
    ones (their owner still wakes whoever waits on them).

    Args:
        max_entries: the most entries kept.
        clock: a monotonic clock in seconds (inject one in tests).
    """

    keeps_snapshots = False

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _live(self, key: str, now: float) -> _Entry | None:
        """The entry of ``key`` unless expired (an expired one is dropped). Lock held."""
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at <= now:
            del self._entries[key]
            self._wake(entry, None)
            return None
        return entry

    @staticmethod
    def _wake(entry: _Entry, value: DedupeRecord | None) -> None:
        waiters, entry.waiters = entry.waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future, value)

    async def claim(self, key: str, ttl: float) -> Claim:
        """See `DedupeStore.claim`."""
        now = self.clock()
        with self._lock:
            entry = self._live(key, now)
            if entry is not None:
                return Claim(owned=False, record=entry.record)
            token = uuid.uuid4().hex
            self._entries[key] = _Entry(token=token, expires_at=now + ttl)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return Claim(owned=True, token=token)

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """See `DedupeStore.wait`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[DedupeRecord | None] = loop.create_future()
        with self._lock:
            entry = self._live(key, self.clock())
            if entry is None or entry.record is not None:
                return None if entry is None else entry.record
            entry.waiters.append((loop, future))
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            with self._lock:
                if (loop, future) in entry.waiters:
                    entry.waiters.remove((loop, future))

    def _owned(self, key: str, token: str) -> _Entry | None:
        entry = self._entries.get(key)
        return entry if entry is not None and entry.token == token else None

    async def record(
        self, key: str, token: str, record: DedupeRecord, ttl: float, *, final: bool = True
    ) -> None:
        """See `DedupeStore.record` (the entry keeps the expiry of its claim)."""
        del ttl, final  # the entry expires ttl seconds after its claim
        with self._lock:
            entry = self._owned(key, token)
            if entry is None:
                return
            entry.record = record
            self._wake(entry, record)

    async def release(self, key: str, token: str) -> None:
        """See `DedupeStore.release`."""
        with self._lock:
            entry = self._owned(key, token)
            if entry is None:
                return
            del self._entries[key]
            self._wake(entry, None)

    def __repr__(self) -> str:
        return f"MemoryDedupeStore(entries={len(self)}, max_entries={self.max_entries})"


# --------------------------------------------------------------------------------------------
# Redis
# --------------------------------------------------------------------------------------------

_SWAP: Final = """
-- KEYS[1]: the entry. ARGV: the value the caller wrote last, the new value, its expiry (ms).
-- Writes only where the caller's value is still there (or the key expired meanwhile).
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
_DROP: Final = """
-- KEYS[1]: the entry. ARGV[1]: the claim. Deletes the entry only while it is that claim.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_RENEW: Final = """
-- KEYS[1]: the entry. ARGV: the claim, the lease (ms). Extends the lease of that claim only.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


def _claim_value(token: str) -> str:
    return json.dumps({"claim": token})


def _record_value(record: DedupeRecord) -> str:
    return json.dumps(
        {"task": record.task_id, "answer": base64.b64encode(record.answer).decode("ascii")}
    )


def _parse(raw: object) -> DedupeRecord | str | None:
    """A stored value: the record, or the claim's token (a str), or None if unreadable."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("claim"), str):
        return str(value["claim"])
    task, answer = value.get("task"), value.get("answer")
    if not isinstance(task, str) or not isinstance(answer, str):
        return None
    try:
        return DedupeRecord(task_id=task, answer=base64.b64decode(answer, validate=True))
    except ValueError:
        return None


class RedisDedupeStore:
    """A memory shared by every replica of an agent, on Redis (``redis.asyncio``).

    Keys are ``prefix`` + the hash `deduplicate` made (SHA-256 of the caller, the tenant and
    the messageId: no user name, credential or messageId is stored as such). A claim is
    ``SET key {"claim": token} NX PX lease``, renewed every ``lease / 3`` while the first
    attempt runs (so a replica that dies gives the message back within ``lease``); the record
    (``{"task": id, "answer": base64}``) replaces it with the ttl, so the entry expires ttl
    seconds after the first answer. Records hold a snapshot of the first answer
    (``keeps_snapshots``): a replica whose task store does not hold the task answers with it.

    Every command is bounded by ``timeout``. A command that fails or times out makes the call
    fail open (processed without deduplication); a WARNING says so at most once per
    ``warn_interval`` seconds.

    Args:
        client: a ``redis.asyncio.Redis`` (or anything with its ``set``, ``get`` and ``eval``
            coroutines).
        prefix: the prefix of every key.
        lease: seconds a claim lives without renewal.
        timeout: seconds one command may take.
        poll_initial: the first pause (seconds) between two reads of a claimed entry; doubled
            after each read, up to ``poll_max``.
        poll_max: the longest pause between two reads.
        warn_interval: the least number of seconds between two fail-open warnings.
        sleep: the coroutine that pauses between two reads (inject one in tests).
        clock: a monotonic clock in seconds (deadlines and warnings; inject one in tests).
    """

    keeps_snapshots = True

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "a2a-dedupe:",
        lease: float = 30.0,
        timeout: float = 0.5,
        poll_initial: float = 0.01,
        poll_max: float = 0.5,
        warn_interval: float = 60.0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if lease <= 0 or timeout <= 0 or poll_initial <= 0 or poll_max < poll_initial:
            raise ValueError("lease, timeout and poll_initial must be > 0, poll_max >= initial")
        self.client = client
        self.prefix = prefix
        self.lease = float(lease)
        self.timeout = float(timeout)
        self.poll_initial = float(poll_initial)
        self.poll_max = float(poll_max)
        self.warn_interval = float(warn_interval)
        self.sleep = sleep
        self.clock = clock
        self._warned_at: float | None = None
        self._written: dict[tuple[str, str], str] = {}
        self._renewals: dict[tuple[str, str], asyncio.Task[None]] = {}

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 0.5, **options: Any) -> RedisDedupeStore:
        """A store on a new ``redis.asyncio`` client for ``url`` (``redis://host:6379/0``).

        Args:
            url: the Redis URL.
            timeout: the store's ``timeout`` and the client's socket timeouts.
            options: the other settings of `RedisDedupeStore`.

        Raises:
            ImportError: redis-py is not installed.
        """
        try:
            import redis.asyncio  # noqa: PLC0415 (the extra is imported when used, never before)
            import redis.asyncio.retry  # noqa: PLC0415
            from redis.backoff import NoBackoff  # noqa: PLC0415
        except ImportError as exc:  # the extra is not installed
            raise ImportError(
                "RedisDedupeStore.from_url needs redis: pip install 'a2a-client-errors[redis]'",
                name=exc.name,
            ) from exc
        client = redis.asyncio.Redis.from_url(
            url,
            retry=redis.asyncio.retry.Retry(NoBackoff(), 0),
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
        return cls(client, timeout=timeout, **options)

    async def aclose(self) -> None:
        """Stop renewing claims and close the client."""
        for task in list(self._renewals.values()):
            task.cancel()
        self._renewals.clear()
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            await closer()

    # -- failing open ------------------------------------------------------------------------

    def _fail_open(self, what: str, exc: BaseException) -> None:
        now = self.clock()
        if self._warned_at is None or now - self._warned_at >= self.warn_interval:
            self._warned_at = now
            _log.warning(
                "deduplication store unreachable (%s failed: %s); processing messages "
                "without deduplication",
                what,
                type(exc).__name__,
            )

    async def _command(self, what: str, call: Awaitable[Any]) -> tuple[bool, Any]:
        """Run one command, bounded; (False, None) when it failed (logged)."""
        try:
            return True, await asyncio.wait_for(call, self.timeout)
        except Exception as exc:  # any client or network failure: fail open
            self._fail_open(what, exc)
            return False, None

    # -- the protocol ------------------------------------------------------------------------

    async def claim(self, key: str, ttl: float, *, _retried: bool = False) -> Claim:
        """See `DedupeStore.claim`; fails open (owned, degraded) when Redis fails."""
        token = uuid.uuid4().hex
        name = self.prefix + key
        value = _claim_value(token)
        lease_ms = max(1, int(min(self.lease, ttl) * 1000))
        ok, won = await self._command("claim", self.client.set(name, value, nx=True, px=lease_ms))
        if not ok:
            return Claim(owned=True, degraded=True)
        if won:
            self._written[(key, token)] = value
            self._renewals[(key, token)] = asyncio.create_task(self._renew(name, value, lease_ms))
            return Claim(owned=True, token=token)
        ok, raw = await self._command("read", self.client.get(name))
        if not ok:
            return Claim(owned=True, degraded=True)
        found = _parse(raw)
        if isinstance(found, DedupeRecord):
            return Claim(owned=False, record=found)
        if raw is None and not _retried:  # expired between the two commands: claim again
            return await self.claim(key, ttl, _retried=True)
        return Claim(owned=False)

    async def _renew(self, name: str, value: str, lease_ms: int) -> None:
        """Extend the claim's lease every third of it until stopped (real time: a lease is)."""
        while True:
            await asyncio.sleep(lease_ms / 3000)
            ok, _ = await self._command("renew", self.client.eval(_RENEW, 1, name, value, lease_ms))
            if not ok:
                return

    def _stop_renewing(self, key: str, token: str) -> None:
        task = self._renewals.pop((key, token), None)
        if task is not None:
            task.cancel()

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """See `DedupeStore.wait`: polls with backoff; None when Redis fails (fail open)."""
        name = self.prefix + key
        deadline = self.clock() + timeout
        pause = self.poll_initial
        while True:
            ok, raw = await self._command("read", self.client.get(name))
            if not ok:
                return None
            found = _parse(raw)
            if isinstance(found, DedupeRecord):
                return found
            if raw is None:
                return None
            left = deadline - self.clock()
            if left <= 0:
                raise TimeoutError("the first attempt did not record its task in time")
            await self.sleep(min(pause, left))
            pause = min(pause * 2, self.poll_max)

    async def record(
        self, key: str, token: str, record: DedupeRecord, ttl: float, *, final: bool = True
    ) -> None:
        """See `DedupeStore.record`; a failure is logged and forgotten (fail open)."""
        self._stop_renewing(key, token)
        last = self._written.pop((key, token), None)
        if last is None:  # a degraded or spent claim: nothing to record
            return
        value = _record_value(record)
        ttl_ms = max(1, int(ttl * 1000))
        ok, written = await self._command(
            "record", self.client.eval(_SWAP, 1, self.prefix + key, last, value, ttl_ms)
        )
        if ok and written and not final:
            self._written[(key, token)] = value

    async def release(self, key: str, token: str) -> None:
        """See `DedupeStore.release`."""
        self._stop_renewing(key, token)
        last = self._written.pop((key, token), None)
        if last is None:
            return
        await self._command("release", self.client.eval(_DROP, 1, self.prefix + key, last))

    def __repr__(self) -> str:
        return f"RedisDedupeStore(prefix={self.prefix!r}, lease={self.lease:g})"
