"""Where `deduplicate` remembers the messages it has seen: in this process, or in Redis.

A store maps a key (a hash of the caller, the tenant, the messageId and the message's
fingerprint, made by `deduplicate`) to one of three states:

* absent: nobody sent this message yet (or its record expired): the next call *claims* it and
  runs;
* claimed: a first attempt is running and has not made its task yet; other calls wait. The
  claim holds the message's fingerprint (a different message under the same messageId has a
  key of its own);
* recorded: the first attempt's answer is known: a `DedupeRecord`, ids and a fingerprint, a
  few hundred bytes (the task itself stays in the agent's task store).

Both stores keep the word the card gives (``ttl``, `DEDUPLICATE_EXTENSION`): a claim is never
expired or dropped while its first attempt runs (however long it runs), and a record is kept
``ttl`` seconds from the moment its first attempt ended (its final `DedupeStore.record`), so at
least ``ttl`` seconds after the first send was received. A store never drops one message's
record to make room for another: when it cannot take a new message (full, unreachable, or
refusing writes), its `claim` says so (`Claim.degraded`, with a `Claim.retry_after` hint), and
`deduplicate` refuses that message, before running anything, as *not processed*.

`MemoryDedupeStore` (the default) is one process's memory: thread- and task-safe, bounded at
``max_entries`` entries and ``max_bytes`` bytes by its own accounting. When a bound is reached,
records past their ttl go first (counted in `MemoryDedupeStore.evictions`); when none is
left to go, the new message is refused, logged (a WARNING at most once per
``warn_interval``) and counted (`MemoryDedupeStore.refusals`).

`RedisDedupeStore` is shared by every replica of an agent: a claim is ``SET NX`` with a short
lease renewed while the first attempt runs (a stream's record too, until the stream ends),
the final record replaces it with the ttl, and a replica that meets a claim polls (bounded,
with backoff) until the record is there. When Redis cannot be reached, or refuses a write
(``maxmemory`` with the ``noeviction`` policy, a read-only replica), a new message is refused
(fail closed): the card promises deduplication, and a message processed without it could run
twice. Each refusal by Redis is logged (a WARNING every time) and counted
(`RedisDedupeStore.refusals`); each failure to reach Redis is counted
(`RedisDedupeStore.failures`) and logged at most once per ``warn_interval``. A final record
that cannot be written is tried again while the claim holds.

Neither store imports a2a-sdk; redis-py is imported only by `RedisDedupeStore.from_url`, and
to tell its refusals from its failures.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import heapq
import itertools
import json
import logging
import math
import sys
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol, runtime_checkable

from a2a_client_errors._redis_time import patience, run_bounded

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_RETRY_AFTER",
    "Claim",
    "DedupeRecord",
    "DedupeStore",
    "MemoryDedupeStore",
    "RedisDedupeStore",
]

_log = logging.getLogger("a2a_client_errors.server")

DEFAULT_MAX_ENTRIES: Final = 100_000
"""Entries a `MemoryDedupeStore` keeps by default."""
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
"""Bytes a `MemoryDedupeStore` holds by default (its own accounting; see `bytes_used`)."""
DEFAULT_RETRY_AFTER: Final = 1.0
"""Seconds a message refused by a store that cannot tell when it will take one is told to
wait before it is sent again."""


@dataclass(frozen=True, slots=True)
class DedupeRecord:
    """What a first attempt made, for the calls that resend its message.

    Exactly one of three answers: the task (``task_id``), the Message the first attempt
    answered with (``message``), or neither: the first attempt answered with a Message too
    large to keep, and a resend is told that its answer cannot be sent again.

    Attributes:
        task_id: the task the first attempt made, read back from the task store on a resend.
        fingerprint: the first message's fingerprint (``message_fingerprint``), also part of
            the key: kept to tell what the key stands for.
        message: the serialized ``Message`` the first attempt answered with, when it was no
            larger than the handler keeps; else empty.
    """

    task_id: str = ""
    fingerprint: str = ""
    message: bytes = b""


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer of `DedupeStore.claim`.

    Attributes:
        owned: this call holds the claim: it runs the first attempt, then calls `record`
            (or `release` if it failed before making anything).
        token: the owner's token, given back to `record` and `release`; empty when not owned.
        record: the first attempt's record, when it is known (not owned).
        fingerprint: the first message's fingerprint, when not owned (recorded or not).
        degraded: the store cannot take this message now: it is full (and holds nothing
            past its ttl), cannot be reached, or refused the write. Nothing is claimed, and
            nothing will be remembered: `deduplicate` refuses the message as not processed
            (or, with ``fail_open=True``, processes it without deduplication), whatever
            ``owned`` says.
        retry_after: when degraded, the seconds after which the store expects to take the
            message again (the answer's ``Retry-After``); None when it cannot tell.
    """

    owned: bool
    token: str = ""
    record: DedupeRecord | None = None
    fingerprint: str = ""
    degraded: bool = False
    retry_after: float | None = None


@runtime_checkable
class DedupeStore(Protocol):
    """The memory `deduplicate` keeps; see the module docstring for the states."""

    async def claim(self, key: str, fingerprint: str, ttl: float) -> Claim:
        """Claim ``key`` for a first attempt of a message, or tell what holds it.

        ``fingerprint`` is the message's (kept with the claim). Returns a `Claim` that is owned,
        or holds the record, or neither (a first attempt is running: `wait` for it); when not
        owned, it tells the first message's fingerprint. A claim is kept for as long as its
        first attempt runs (``ttl`` may bound how long it lives without word from its owner:
        a lease, renewed). When the store cannot take the message (full, unreachable,
        refusing writes) it answers a `Claim` that is ``degraded``, and never drops another
        message's claim or record to make room.
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
        """Record the first attempt's answer under the claim ``token`` holds.

        A first attempt may record twice: the task id as soon as it is known
        (``final=False``: the attempt still runs, and the record is kept while it does),
        then its answer; after a ``final`` record the token is spent, and the record is kept
        ``ttl`` seconds from then.
        """
        ...

    async def release(self, key: str, token: str) -> None:
        """Drop the claim ``token`` holds (the first attempt made nothing): others may run."""
        ...


# --------------------------------------------------------------------------------------------
# In memory
# --------------------------------------------------------------------------------------------

_ENTRY_OVERHEAD: Final = 352
"""Bytes an entry costs besides its strings: the entry object, its numbers, the map's slot and
order link, and its place in the expiry queue (measured with tracemalloc, rounded up: the
accounting errs on the large side)."""
_RECORD_OVERHEAD: Final = 64
"""Bytes a record object costs besides its strings."""
_RECORD_RESERVE: Final = _RECORD_OVERHEAD + sys.getsizeof("x" * 64) + sys.getsizeof(b"")
"""Bytes a claim sets aside for its record (a task id of up to 64 characters): a first attempt
that made its task always has room to record it."""

_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[DedupeRecord | None]"]


@dataclass(eq=False, slots=True)
class _Entry:
    token: str
    fingerprint: str
    base: int
    """The bytes of the claim, its record's reservation included."""
    cost: int
    expires_at: float = math.inf
    """When the record expires; never while the first attempt runs."""
    record: DedupeRecord | None = None
    waiters: list[_Waiter] | None = None


def _resolve(future: asyncio.Future[DedupeRecord | None], value: DedupeRecord | None) -> None:
    if not future.done():
        future.set_result(value)


def _unwait(entry: _Entry, waiter: _Waiter) -> None:
    """Take ``waiter`` off ``entry`` (gone already when the entry woke its waiters)."""
    waiters = entry.waiters
    if waiters is not None and waiter in waiters:
        waiters.remove(waiter)


def _record_extra(record: DedupeRecord) -> int:
    """The bytes a record adds to its entry past the claim's reservation."""
    cost = _RECORD_OVERHEAD + sys.getsizeof(record.task_id) + sys.getsizeof(record.message)
    return max(0, cost - _RECORD_RESERVE)


class MemoryDedupeStore:
    """One process's memory of the messages seen (the default store).

    Safe from several threads and event loops at once: the map is guarded by a lock, and a
    waiter is woken on its own loop. A claim is kept while its first attempt runs, however
    long; its record ``ttl`` seconds from the first attempt's final record. Entries hold ids
    and a fingerprint, and a Message answer only when the handler keeps it (small ones);
    `bytes_used` counts what they hold, the Python objects included (each claim sets aside
    room for its record, so that a first attempt can always record its task).

    At ``max_entries`` entries or ``max_bytes`` bytes, records past their ttl go (counted in
    `evictions`), and nothing else ever does: a running claim or a record within its ttl is
    never dropped for another message. When nothing can go, a new message's claim is refused
    (`Claim.degraded`, with the time until the next record expires as `Claim.retry_after`),
    counted in `refusals`, and logged at WARNING at most once per ``warn_interval`` seconds.
    A first attempt's Message answer that does not fit is recorded without it (a resend is
    then told that answer cannot be sent again, and is still never run). ``bytes_used`` may
    pass ``max_bytes`` only by task ids longer than 64 characters.

    Args:
        max_entries: the most entries kept.
        max_bytes: the most bytes kept, by the store's accounting (`bytes_used`).
        clock: a monotonic clock in seconds (inject one in tests).
        warn_interval: the least number of seconds between two warnings that the store is
            full.

    Attributes:
        evictions: records past their ttl dropped to make room, since the store was made.
        refusals: messages refused because the store was full, since the store was made.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
        warn_interval: float = 60.0,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.clock = clock
        self.warn_interval = float(warn_interval)
        self.evictions = 0
        self.refusals = 0
        self._bytes = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._expiring: list[tuple[float, int, str, _Entry]] = []  # a heap, by expiry
        self._order = itertools.count()
        self._warned_at: float | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def bytes_used(self) -> int:
        """The bytes the entries hold now, by the store's accounting (see the class)."""
        return self._bytes

    def _drop(self, key: str, value: DedupeRecord | None) -> None:
        """Forget ``key``, waking its waiters with ``value``. Lock held."""
        entry = self._entries.pop(key)
        self._bytes -= entry.cost
        self._wake(entry, value)

    def _live(self, key: str, now: float) -> _Entry | None:
        """The entry of ``key`` unless expired (an expired one is dropped). Lock held."""
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at <= now:
            self._drop(key, None)
            return None
        return entry

    def _within(self, entries: int, size: int) -> bool:
        """Whether ``entries`` more entries of ``size`` more bytes fit the bounds. Lock held."""
        return (
            len(self._entries) + entries <= self.max_entries
            and self._bytes + size <= self.max_bytes
        )

    def _next_expiry(self) -> float | None:
        """When the next record expires (the queue's stale heads dropped). Lock held."""
        queue = self._expiring
        while queue:
            expires_at, _, key, entry = queue[0]
            if self._entries.get(key) is entry and entry.expires_at == expires_at:
                return expires_at
            heapq.heappop(queue)  # released, expired on a read, or recorded again: stale
        return None

    def _fits(self, entries: int, size: int, now: float) -> bool:
        """Whether the bounds hold ``entries`` and ``size`` more, once expired records went."""
        if self._within(entries, size):
            return True
        while True:
            expires_at = self._next_expiry()
            if expires_at is None or expires_at > now:
                return self._within(entries, size)
            _, _, key, _ = heapq.heappop(self._expiring)
            self._drop(key, None)
            self.evictions += 1
            if self._within(entries, size):
                return True

    def _refuse(self, now: float) -> Claim:
        """The degraded claim of a full store: counted, and logged once per interval."""
        self.refusals += 1
        expires_at = self._next_expiry()
        hint = None if expires_at is None else max(0.0, expires_at - now)
        if self._warned_at is None or now - self._warned_at >= self.warn_interval:
            self._warned_at = now
            _log.warning(
                "deduplication store full (%d entries, %d bytes; max_entries=%d, max_bytes=%d), "
                "and no record is past its ttl: a new message is refused as not processed, "
                "to be sent again later (%d refused so far); raise max_entries or max_bytes, "
                "or lower the ttl",
                len(self._entries),
                self._bytes,
                self.max_entries,
                self.max_bytes,
                self.refusals,
            )
        return Claim(owned=False, degraded=True, retry_after=hint)

    @staticmethod
    def _wake(entry: _Entry, value: DedupeRecord | None) -> None:
        waiters, entry.waiters = entry.waiters, None
        for loop, future in waiters or ():
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future, value)

    async def claim(self, key: str, fingerprint: str, ttl: float) -> Claim:
        """See `DedupeStore.claim` (the claim never expires: its first attempt ends it)."""
        del ttl  # a claim lives as long as its first attempt; the record counts the ttl
        now = self.clock()
        with self._lock:
            entry = self._live(key, now)
            if entry is not None:
                return Claim(owned=False, record=entry.record, fingerprint=entry.fingerprint)
            token = uuid.uuid4().hex
            base = (
                _ENTRY_OVERHEAD
                + sys.getsizeof(key)
                + sys.getsizeof(token)
                + sys.getsizeof(fingerprint)
                + _RECORD_RESERVE
            )
            if not self._fits(1, base, now):
                return self._refuse(now)
            self._entries[key] = _Entry(token, fingerprint, base, base)
            self._bytes += base
            return Claim(owned=True, token=token)

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """See `DedupeStore.wait`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[DedupeRecord | None] = loop.create_future()
        waiter = (loop, future)
        with self._lock:
            entry = self._live(key, self.clock())
            if entry is None or entry.record is not None:
                return None if entry is None else entry.record
            if entry.waiters is None:
                entry.waiters = []
            entry.waiters.append(waiter)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            with self._lock:
                _unwait(entry, waiter)

    def _owned(self, key: str, token: str) -> _Entry | None:
        entry = self._entries.get(key)
        return entry if entry is not None and token and entry.token == token else None

    async def record(
        self, key: str, token: str, record: DedupeRecord, ttl: float, *, final: bool = True
    ) -> None:
        """See `DedupeStore.record`: kept while running, then ``ttl`` s from the final one."""
        now = self.clock()
        with self._lock:
            entry = self._owned(key, token)
            if entry is None:
                return
            extra = _record_extra(record)
            grow = extra - (entry.cost - entry.base)
            if grow > 0 and record.message and not self._fits(0, grow, now):
                record = replace(record, message=b"")  # the answer does not fit: not kept
                extra = _record_extra(record)
                grow = extra - (entry.cost - entry.base)
            entry.record = record
            entry.cost += grow
            self._bytes += grow
            if final:
                entry.token = ""  # spent
                entry.expires_at = now + ttl
                heapq.heappush(self._expiring, (entry.expires_at, next(self._order), key, entry))
            self._wake(entry, record)

    async def release(self, key: str, token: str) -> None:
        """See `DedupeStore.release`."""
        with self._lock:
            if self._owned(key, token) is not None:
                self._drop(key, None)

    def __repr__(self) -> str:
        return (
            f"MemoryDedupeStore(entries={len(self)}, bytes={self._bytes}, "
            f"max_entries={self.max_entries}, max_bytes={self.max_bytes})"
        )


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
-- KEYS[1]: the entry. ARGV: what this claim wrote last, the lease (ms). While that value is
-- there, it lives at least the lease from now (a longer expiry is never shortened).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  return 1
end
return 0
"""


@dataclass(frozen=True, slots=True)
class _Claimed:
    """A stored claim: its owner's token and the first message's fingerprint."""

    token: str
    fingerprint: str


def _claim_value(token: str, fingerprint: str) -> str:
    return json.dumps({"claim": token, "fp": fingerprint})


def _record_value(record: DedupeRecord) -> str:
    value = {"task": record.task_id, "fp": record.fingerprint}
    if record.message:
        value["msg"] = base64.b64encode(record.message).decode("ascii")
    return json.dumps(value)


def _parse(raw: object) -> DedupeRecord | _Claimed | None:
    """A stored value: the record, or the claim, or None if unreadable."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("fp"), str):
        return None
    fingerprint = str(value["fp"])
    if isinstance(value.get("claim"), str):
        return _Claimed(str(value["claim"]), fingerprint)
    task, message = value.get("task"), value.get("msg", "")
    if not isinstance(task, str) or not isinstance(message, str):
        return None
    try:
        return DedupeRecord(task, fingerprint, base64.b64decode(message, validate=True))
    except ValueError:
        return None


_CONSEQUENCES: Final = {
    "claim": (
        "the message cannot be remembered, and deduplicate refuses it as not processed "
        "(to be sent again later)"
    ),
    "read": "the message cannot be checked, and deduplicate refuses it as not processed",
    "record": "the record is written again while its claim holds",
    "renew": "the renewal is tried again at the next period",
    "release": "the claim ends with its lease",
}
"""What follows a refused write, by the command refused."""


@functools.cache
def _refusal_types() -> tuple[type[BaseException], ...]:
    """The errors by which Redis says no (an answer, not a failure to reach it)."""
    try:
        from redis.exceptions import ResponseError  # noqa: PLC0415 (only with a Redis client)
    except ImportError:
        return ()
    return (ResponseError,)


@dataclass(eq=False, slots=True)
class _Held:
    """A claim this process holds in Redis: what it wrote there last, and how it keeps it."""

    name: str
    value: str
    lease_ms: int
    pending: str = ""
    """A final record Redis did not take: written again at each renewal until it is."""
    ttl_ms: int = 0
    give_up_at: float = 0.0
    task: asyncio.Task[None] | None = None


class RedisDedupeStore:
    """A memory shared by every replica of an agent, on Redis (``redis.asyncio``).

    Keys are ``prefix`` + the hash `deduplicate` made (SHA-256 of the caller, the tenant and
    the messageId: no user name, credential or messageId is stored as such). A claim is
    ``SET key {"claim": token, "fp": fingerprint} NX PX lease``, renewed every ``lease / 3``
    while the first attempt runs (a renewal that fails is tried again at the next period;
    renewal stops only when the claim is provably gone: its lease expired or another took
    the key), so that a first attempt that runs longer than the ttl keeps its claim, and a
    replica that dies gives the message back within ``lease``. A stream's first record
    (``final=False``, at its first event) is renewed the same way until the stream ends. The
    final record (``{"task": id, "fp": fingerprint}``, and ``"msg"``, a small Message answer
    in base64, when kept) replaces the claim with the ttl, counted from then. Records hold
    ids only: every replica must read tasks from one shared task store. Redis must not evict
    them (``maxmemory-policy noeviction``: a full Redis then refuses writes, and new messages
    are refused, rather than records dropped).

    Every command is bounded by ``timeout`` of Redis's time: the event loop's own lag (a
    blocked or busy loop reading the answer late) does not count, up to a patience of
    ``max(1, 20 * timeout)`` seconds in all. When Redis refuses a write (an error answer: a
    full Redis under ``maxmemory`` with ``noeviction``, a read-only replica), the refusal is
    counted in `refusals` and logged at WARNING, every time; when a command fails or times
    out, it is counted in `failures`, and a WARNING says so at most once per
    ``warn_interval`` seconds. Either way a new message's claim is degraded (`Claim.degraded`,
    ``retry_after`` seconds as its hint): `deduplicate` refuses that message as not processed
    (fail closed). A final record that cannot be written is written again at each renewal
    period, for at most ``ttl`` seconds, while the claim holds (resends wait meanwhile).

    Args:
        client: a ``redis.asyncio.Redis`` (or anything with its ``set``, ``get`` and ``eval``
            coroutines). Give it a ``BlockingConnectionPool``, as `from_url` does: with the
            default pool, a burst of claims beyond its connections is refused.
        prefix: the prefix of every key.
        lease: seconds a claim lives without renewal.
        timeout: seconds one command may take.
        poll_initial: the first pause (seconds) between two reads of a claimed entry; doubled
            after each read, up to ``poll_max``.
        poll_max: the longest pause between two reads.
        warn_interval: the least number of seconds between two warnings that Redis cannot be
            reached (refusals are logged every time).
        retry_after: the seconds a message refused because Redis failed or refused is told
            to wait before it is sent again.
        sleep: the coroutine that pauses between two reads (inject one in tests).
        renew_sleep: the coroutine that pauses between two renewals of a claim (real time by
            default, as the lease is Redis's; inject one in tests).
        clock: a monotonic clock in seconds (deadlines and warnings; inject one in tests).

    Attributes:
        refusals: writes Redis refused since the store was made.
        failures: commands that failed or timed out since the store was made.
    """

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
        retry_after: float = DEFAULT_RETRY_AFTER,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        renew_sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if lease <= 0 or timeout <= 0 or poll_initial <= 0 or poll_max < poll_initial:
            raise ValueError("lease, timeout and poll_initial must be > 0, poll_max >= initial")
        if retry_after < 0:
            raise ValueError("retry_after must not be negative")
        self.client = client
        self.prefix = prefix
        self.lease = float(lease)
        self.timeout = float(timeout)
        self.poll_initial = float(poll_initial)
        self.poll_max = float(poll_max)
        self.warn_interval = float(warn_interval)
        self.retry_after = float(retry_after)
        self.sleep = sleep
        self.renew_sleep = renew_sleep
        self.clock = clock
        self.refusals = 0
        self.failures = 0
        self._warned_at: float | None = None
        self._held: dict[tuple[str, str], _Held] = {}
        pool = getattr(client, "connection_pool", None)
        size = getattr(pool, "max_connections", None)
        self._room = size if isinstance(size, int) and 0 < size < 2**20 else None
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None

    @classmethod
    def from_url(
        cls, url: str, *, timeout: float = 0.5, max_connections: int = 100, **options: Any
    ) -> RedisDedupeStore:
        """A store on a new ``redis.asyncio`` client for ``url`` (``redis://host:6379/0``).

        Its pool makes a command wait for a free connection (a thousand messages claimed at
        once queue for ``max_connections``): a full pool is this process's, not a broken
        Redis, and is never taken for one.

        Args:
            url: the Redis URL.
            timeout: the store's ``timeout``. The client's socket timeouts, and the longest
                wait for a connection, are its patience (``max(1, 20 * timeout)``): an
                asyncio client's would time the event loop, so the store times its commands.
            max_connections: the connections the client keeps at most.
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
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=patience(timeout),
            retry=redis.asyncio.retry.Retry(NoBackoff(), 0),
            socket_timeout=patience(timeout),
            socket_connect_timeout=patience(timeout),
        )
        client = redis.asyncio.Redis.from_pool(pool)  # closing the client closes the pool
        return cls(client, timeout=timeout, **options)

    async def aclose(self) -> None:
        """Stop renewing claims and close the client."""
        for held in list(self._held.values()):
            if held.task is not None:
                held.task.cancel()
        self._held.clear()
        closer = getattr(self.client, "aclose", None)
        if closer is not None:
            await closer()

    # -- when Redis fails or says no ---------------------------------------------------------

    def _failed(self, what: str, exc: BaseException) -> None:
        if isinstance(exc, _refusal_types()):
            self.refusals += 1
            _log.warning(
                "deduplication store refused a write (%s: %s); %s",
                what,
                type(exc).__name__,
                _CONSEQUENCES.get(what, _CONSEQUENCES["claim"]),
            )
            return
        self.failures += 1
        now = self.clock()
        if self._warned_at is None or now - self._warned_at >= self.warn_interval:
            self._warned_at = now
            _log.warning(
                "deduplication store unreachable (%s failed: %s); new messages are refused "
                "as not processed, to be sent again later, until it answers",
                what,
                type(exc).__name__,
            )

    def _degraded(self) -> Claim:
        return Claim(owned=False, degraded=True, retry_after=self.retry_after)

    def _slot(self) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        """A connection of the client's pool to wait for, in this process's own queue.

        Commands beyond the pool's connections wait here, before Redis's time starts: a
        burst of claims queued behind each other is this process's time, not Redis's.
        """
        if self._room is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self._room))
        return self._slots[1]

    async def _command(self, what: str, call: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
        """Run the command ``call`` makes, bounded; (False, None) if it failed or was refused."""
        try:
            async with self._slot():
                return True, await run_bounded(call, self.timeout)
        except Exception as exc:  # any client or network failure: counted, logged
            self._failed(what, exc)
            return False, None

    # -- the protocol ------------------------------------------------------------------------

    async def claim(self, key: str, fingerprint: str, ttl: float) -> Claim:
        """See `DedupeStore.claim`; degraded when Redis fails or refuses (fail closed)."""
        name = self.prefix + key
        for _ in range(2):  # the second time: the entry expired between the two commands
            token = uuid.uuid4().hex
            value = _claim_value(token, fingerprint)
            lease_ms = max(1, int(min(self.lease, ttl) * 1000))
            ok, won = await self._command(
                "claim", functools.partial(self.client.set, name, value, nx=True, px=lease_ms)
            )
            if not ok:
                return self._degraded()
            if won:
                held = _Held(name, value, lease_ms)
                self._held[(key, token)] = held
                held.task = asyncio.create_task(self._renew(key, token, held))
                return Claim(owned=True, token=token)
            ok, raw = await self._command("read", functools.partial(self.client.get, name))
            if not ok:
                return self._degraded()
            found = _parse(raw)
            if isinstance(found, DedupeRecord):
                return Claim(owned=False, record=found, fingerprint=found.fingerprint)
            if isinstance(found, _Claimed):
                return Claim(owned=False, fingerprint=found.fingerprint)
            if raw is not None:  # a value of no known form: the first attempt's, unreadable
                return Claim(owned=False)
        return Claim(owned=False)

    async def _swap(self, held: _Held, value: str, ttl_ms: int) -> tuple[bool, bool]:
        """Write ``value`` where ``held`` wrote last (or nothing is); (ok, written)."""
        ok, written = await self._command(
            "record",
            functools.partial(self.client.eval, _SWAP, 1, held.name, held.value, value, ttl_ms),
        )
        return ok, bool(written)

    async def _renew(self, key: str, token: str, held: _Held) -> None:
        """Keep the claim (or a stream's record) alive while its first attempt runs.

        Every third of the lease: extend it to the lease, or write the final record Redis did
        not take yet. Ends when stopped, when the claim is provably lost, or when a pending
        record could not be written for ``ttl`` seconds.
        """
        while True:
            await self.renew_sleep(held.lease_ms / 3000)
            if held.pending:
                ok, written = await self._swap(held, held.pending, held.ttl_ms)
                if ok or self.clock() >= held.give_up_at:
                    self._held.pop((key, token), None)
                    if not written:
                        _log.warning(
                            "the record of a deduplicated message could not be written (%s); "
                            "a resend of that message may run again",
                            "the key was taken" if ok else "Redis failed until the ttl passed",
                        )
                    return
                continue
            sent = held.value
            ok, renewed = await self._command(
                "renew",
                functools.partial(self.client.eval, _RENEW, 1, held.name, sent, held.lease_ms),
            )
            if ok and not renewed and sent == held.value and not held.pending:
                _log.warning(
                    "a deduplication claim was lost while its first attempt ran (its lease "
                    "expired, or the key was taken); a resend of that message may run again"
                )
                return

    def _finish(self, key: str, token: str) -> None:
        held = self._held.pop((key, token), None)
        if held is not None and held.task is not None:
            held.task.cancel()

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """See `DedupeStore.wait`: polls with backoff; None when Redis fails (claim again)."""
        name = self.prefix + key
        deadline = self.clock() + timeout
        pause = self.poll_initial
        while True:
            ok, raw = await self._command("read", functools.partial(self.client.get, name))
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
        """See `DedupeStore.record`; a failure is logged and counted.

        A record that is not final keeps being renewed while the attempt runs. A final
        record that cannot be written keeps the claim, and is written again at each renewal
        period (for at most ``ttl`` seconds): a resend meanwhile waits, never runs.
        """
        held = self._held.get((key, token))
        if held is None:  # a spent, released or unknown claim: nothing to record
            return
        value = _record_value(record)
        ttl_ms = max(1, int(ttl * 1000))
        ok, written = await self._swap(held, value, ttl_ms)
        if ok and written and not final:
            held.value = value  # renewed from now on as the record
            return
        if ok:  # written and spent, or the key is another's: nothing more to do
            self._finish(key, token)
            return
        if final:
            held.pending, held.ttl_ms = value, ttl_ms
            held.give_up_at = self.clock() + ttl
            if held.task is None or held.task.done():
                held.task = asyncio.create_task(self._renew(key, token, held))

    async def release(self, key: str, token: str) -> None:
        """See `DedupeStore.release`."""
        held = self._held.get((key, token))
        self._finish(key, token)
        if held is None:
            return
        await self._command(
            "release", functools.partial(self.client.eval, _DROP, 1, held.name, held.value)
        )

    def __repr__(self) -> str:
        return f"RedisDedupeStore(prefix={self.prefix!r}, lease={self.lease:g})"
