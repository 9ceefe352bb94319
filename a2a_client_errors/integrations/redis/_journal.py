"""The in-flight journal on Redis: one record per send, shared by every process of a fleet.

`RedisJournal` implements `a2a_client_errors.journal.Journal` with the semantics of
`SqliteJournal` (the reference store). Every operation is one Lua script, so each is atomic
for every client of the server, and each reads the time once, from the server (``TIME``):
leases are compared on one clock across the fleet, whatever the skew of the machines' own.

The layout, under ``prefix``
    ``rec:<messageId>``: a hash per record (its fields; no request body, only its digest).
    ``open``: a sorted set of the open records' messageIds, scored by when they started
    (`RedisJournal.unsettled`, oldest first). ``owner:<owner>``: a set per owner of the
    records it holds (`RedisJournal.renew`, in one script). ``closed``: a sorted set of the
    closed records' messageIds, scored by when they were closed (`RedisJournal.purge`).
    ``schema``: the version of this layout (a newer one is refused).

    A closed record also expires after ``retention`` seconds of Redis's own clock (Redis
    deletes it; ``purge`` deletes and counts what is left past retention). Open records never
    expire. Redis must not evict keys (``maxmemory-policy noeviction``): an evicted open
    record is a send the journal forgot. For a Redis Cluster, put a hash tag in the prefix
    (``"{a2a:journal}:"``): every key of one journal must sit in one slot.

Durability is the server's: a record outlives a restart of Redis only with persistence on
(``appendonly yes``; ``appendfsync always`` puts each record on disk before the send it
records leaves, ``everysec`` may lose the last second of them).

redis-py is never imported by this module, only used through the client given (and imported
by `RedisJournal.from_url`).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from a2a_client_errors._journal import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    SCHEMA_VERSION,
    Entry,
    JournalError,
    JournalRecord,
    State,
    clip_note,
    lapsed_of,
    own_closes,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["RedisJournal"]

_SCHEMA_ERROR: Final = "A2A_JOURNAL_SCHEMA"
_PURGE_BATCH: Final = 1000
"""Records one purge script deletes at most (a purge runs as many as it needs)."""

# Every script: KEYS[1] the schema key; ARGV[1] the schema version this code writes, ARGV[2]
# the time to use ('' for the server's), ARGV[3] the prefix. Numbers go back as strings (Lua
# numbers would be cut to integers).
_PRELUDE: Final = """
if redis.replicate_commands then pcall(redis.replicate_commands) end
local found = redis.call('GET', KEYS[1])
if not found then
  redis.call('SET', KEYS[1], ARGV[1])
elseif not tonumber(found) or tonumber(found) > tonumber(ARGV[1]) then
  return redis.error_reply('A2A_JOURNAL_SCHEMA ' .. found)
end
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local prefix = ARGV[3]
local function num(x) return string.format('%.17g', x) end
local function reply(flag, key)
  local out = {flag, num(now)}
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields do out[#out + 1] = fields[i] end
  return out
end
"""

_CLAIM: Final = (
    _PRELUDE
    + """
-- KEYS: schema, record, open, closed, owner's set. ARGV[4..]: lease, messageId, owner,
-- peer, digest, then the optional fields as name, value pairs. Returns {'1', now, attempts}
-- for a new claim (the record is what was written), the record found otherwise.
local rec, id, owner = KEYS[2], ARGV[5], ARGV[6]
local state = redis.call('HGET', rec, 'state')
if state and state ~= 'refused' then return reply('0', rec) end
local attempts = 1
if state then
  attempts = (tonumber(redis.call('HGET', rec, 'attempts')) or 1) + 1
  redis.call('DEL', rec)
end
redis.call('ZREM', KEYS[4], id)
local fields = {'peer', ARGV[7], 'digest', ARGV[8], 'started', num(now), 'state', 'open',
  'owner', owner, 'lease_until', num(now + tonumber(ARGV[4])), 'note', '',
  'attempts', tostring(attempts)}
for i = 9, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', rec, unpack(fields))
redis.call('ZADD', KEYS[3], num(now), id)
redis.call('SADD', KEYS[5], id)
return {'1', num(now), tostring(attempts)}
"""
)

_TAKE_OVER: Final = (
    _PRELUDE
    + """
-- KEYS: schema, record, the new owner's set. ARGV[4..]: lease, messageId, owner.
local rec, id, owner = KEYS[2], ARGV[5], ARGV[6]
local held = redis.call('HMGET', rec, 'state', 'owner', 'lease_until')
if held[1] ~= 'open' then return {'0', num(now)} end
if held[2] then
  if (tonumber(held[3]) or 0) > now then return {'0', num(now)} end
  redis.call('SREM', prefix .. 'owner:' .. held[2], id)
end
redis.call('HSET', rec, 'owner', owner, 'lease_until', num(now + tonumber(ARGV[4])))
redis.call('HINCRBY', rec, 'attempts', 1)
redis.call('SADD', KEYS[3], id)
return reply('1', rec)
"""
)

_RENEW: Final = (
    _PRELUDE
    + """
-- KEYS: schema, the owner's set. ARGV[4..]: lease, owner. Returns how many were renewed.
local owner, n = ARGV[5], 0
local lease_until = num(now + tonumber(ARGV[4]))
for _, id in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local rec = prefix .. 'rec:' .. id
  local held = redis.call('HMGET', rec, 'state', 'owner')
  if held[1] == 'open' and held[2] == owner then
    redis.call('HSET', rec, 'lease_until', lease_until)
    n = n + 1
  else
    redis.call('SREM', KEYS[2], id)
  end
end
return n
"""
)

_SETTLE: Final = (
    _PRELUDE
    + """
-- KEYS: schema, record, open, closed, owner's set. ARGV[4..]: messageId, owner, state,
-- note, retention in ms, '1' and what it made (or '0').
local rec, id = KEYS[2], ARGV[4]
local held = redis.call('HMGET', rec, 'state', 'owner')
if held[1] ~= 'open' or held[2] ~= ARGV[5] then return 0 end
redis.call('HSET', rec, 'state', ARGV[6], 'note', ARGV[7], 'closed_at', num(now))
redis.call('HDEL', rec, 'owner')
if ARGV[9] == '1' then
  redis.call('HSET', rec, 'made', ARGV[10])
else
  redis.call('HDEL', rec, 'made')
end
redis.call('ZREM', KEYS[3], id)
redis.call('SREM', KEYS[5], id)
redis.call('ZADD', KEYS[4], num(now), id)
local keep = tonumber(ARGV[8])
if keep > 0 then redis.call('PEXPIRE', rec, keep) end
return 1
"""
)

_RELEASE: Final = (
    _PRELUDE
    + """
-- KEYS: schema, record, owner's set. ARGV[4..]: messageId, owner, note.
local rec, id = KEYS[2], ARGV[4]
local held = redis.call('HMGET', rec, 'state', 'owner')
if held[1] ~= 'open' or held[2] ~= ARGV[5] then return 0 end
redis.call('HDEL', rec, 'owner')
redis.call('HSET', rec, 'lease_until', num(now), 'note', ARGV[6])
redis.call('SREM', KEYS[3], id)
return 1
"""
)

_GET: Final = (
    _PRELUDE
    + """
-- KEYS: schema, record.
return reply('1', KEYS[2])
"""
)

_UNSETTLED: Final = (
    _PRELUDE
    + """
-- KEYS: schema, open. ARGV[4]: the most records to list. Returns the time, then each
-- record's messageId and fields, oldest first.
local out = {num(now)}
local limit = tonumber(ARGV[4])
if limit <= 0 then return out end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '+inf', 'LIMIT', 0, limit)) do
  local rec = prefix .. 'rec:' .. id
  if redis.call('HGET', rec, 'state') == 'open' then
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGETALL', rec)
  end
end
return out
"""
)

_PURGE: Final = (
    _PRELUDE
    + """
-- KEYS: schema, closed. ARGV[4..]: retention in seconds, the most records to look at.
-- Returns how many were looked at and how many deleted.
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', num(now - tonumber(ARGV[4])),
  'LIMIT', 0, tonumber(ARGV[5]))
local deleted = 0
for _, id in ipairs(ids) do
  local rec = prefix .. 'rec:' .. id
  local state = redis.call('HGET', rec, 'state')
  if state and state ~= 'open' then deleted = deleted + redis.call('DEL', rec) end
  redis.call('ZREM', KEYS[2], id)
end
return {#ids, deleted}
"""
)

_SCRIPTS: Final = {
    "claim": _CLAIM,
    "take_over": _TAKE_OVER,
    "renew": _RENEW,
    "settle": _SETTLE,
    "release": _RELEASE,
    "get": _GET,
    "unsettled": _UNSETTLED,
    "purge": _PURGE,
}


class RedisJournal:
    """A journal on Redis, shared by every process that uses the same server and ``prefix``.

    Each operation is one Lua script (sent by its SHA, loaded again if the server lost it),
    atomic for every client. Time is the server's (``TIME``, read by each script), unless a
    ``clock`` is given: then its value is sent with each script instead (for tests). The
    module docstring tells the layout. Nothing is sent until first used; every failure of
    Redis or of the client (refused, timed out, an error answer) is a `JournalError`.

    The journal sends each script once: give a client that does not retry by itself
    (`from_url` makes one), since a claim sent twice would find its own first claim and take
    it for another sender's.

    Args:
        client: a sync redis-py client (``redis.Redis``, or a cluster client), with a socket
            timeout: it bounds how long an operation waits for a Redis that does not answer.
        prefix: the prefix of every key (one per journal).
        lease: seconds a sender's lease lasts unless renewed (a dead sender's lapses within).
        retention: seconds a closed record is kept before it is deleted (0: until `purge`).
        clock: the time, in seconds since the epoch, sent to Redis with each script (default:
            none, Redis's own clock).

    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "a2a:journal:",
        lease: float = DEFAULT_LEASE,
        retention: float = DEFAULT_RETENTION,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if lease <= 0 or retention < 0:
            msg = "lease must be positive and retention not negative"
            raise ValueError(msg)
        register_script = getattr(client, "register_script", None)
        if not callable(register_script):
            msg = "RedisJournal needs a redis-py client (redis.Redis)"
            raise TypeError(msg)
        if inspect.iscoroutinefunction(getattr(client, "execute_command", None)):
            msg = "RedisJournal needs a sync redis-py client (redis.Redis), not an asyncio one"
            raise TypeError(msg)
        self.client = client
        self.prefix = prefix
        self.lease = float(lease)
        self.retention = float(retention)
        self.clock = clock
        self._scripts = {name: register_script(text) for name, text in _SCRIPTS.items()}
        self._owns_client = False

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 5.0, **options: Any) -> RedisJournal:
        """A journal on a new client for ``url`` (``redis://host:6379/0``).

        The client's socket and connect timeouts are ``timeout`` seconds, and it does not
        retry by itself; `close` closes it.

        Args:
            url: the Redis URL.
            timeout: seconds Redis has to accept a connection and to answer a script.
            options: the other settings of `RedisJournal` (``prefix``, ``lease``,
                ``retention``, ``clock``).

        """
        try:
            import redis  # noqa: PLC0415 (the extra is imported when used, never before)
            from redis.backoff import NoBackoff  # noqa: PLC0415
            from redis.retry import Retry  # noqa: PLC0415
        except ImportError as exc:  # the extra is not installed
            raise ImportError(
                "RedisJournal.from_url needs redis: pip install 'a2a-client-errors[redis]'",
                name=exc.name,
            ) from exc
        client = redis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )
        journal = cls(client, **options)
        journal._owns_client = True
        return journal

    def __repr__(self) -> str:
        return f"RedisJournal(prefix={self.prefix!r})"

    # --- running scripts ---------------------------------------------------------------

    def _key(self, *parts: str) -> str:
        return self.prefix + "".join(parts)

    def _run(self, name: str, doing: str, keys: list[str], args: Sequence[object]) -> Any:
        """Run the script ``name``: its reply, or `JournalError` saying what could not be done."""
        now = "" if self.clock is None else repr(float(self.clock()))
        try:
            return self._scripts[name](
                keys=[self._key("schema"), *keys],
                args=[str(SCHEMA_VERSION), now, self.prefix, *args],
            )
        except Exception as exc:  # any failure of Redis or of the client
            if _SCHEMA_ERROR in str(exc):
                found = str(exc).split(_SCHEMA_ERROR, 1)[1].split()[:1] or ["?"]
                raise JournalError(_schema_refused(self, found[0])) from exc
            raise JournalError(f"the journal {self!r} could not {doing}: {exc}") from exc

    # --- the protocol -------------------------------------------------------------------

    def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
        """Record ``entry`` for ``owner`` unless it has a record (see `Journal.claim`)."""
        optional: list[str] = []
        if entry.context_id is not None:
            optional += ["context_id", entry.context_id]
        if entry.task_id is not None:
            optional += ["task_id", entry.task_id]
        raw = self._run(
            "claim",
            "record the send",
            [
                self._key("rec:", entry.message_id),
                self._key("open"),
                self._key("closed"),
                self._key("owner:", owner),
            ],
            [repr(self.lease), entry.message_id, owner, entry.peer, entry.digest, *optional],
        )
        if _is_list(raw) and len(raw) == 3 and _text(raw[0]) == "1":
            return self._claimed(entry, owner, raw), True
        record = self._record(entry.message_id, raw)
        if record is None:
            raise self._unexpected("record the send")
        return record, False

    def _claimed(self, entry: Entry, owner: str, raw: Sequence[Any]) -> JournalRecord:
        """The record a new claim wrote: ``entry``'s, from the script's ``{'1', now, attempts}``.

        The record is built here rather than read back (the reply of every send's first
        round trip stays three short strings); ``lease_until`` is the same sum of doubles the
        script wrote.
        """
        try:
            now = float(_text(raw[1]))
            attempts = int(_text(raw[2]))
        except ValueError as exc:
            raise self._unexpected("record the send") from exc
        lease_until = now + self.lease
        return JournalRecord(
            message_id=entry.message_id,
            peer=entry.peer,
            digest=entry.digest,
            started=now,
            state=State.OPEN,
            owner=owner,
            lease_until=lease_until,
            context_id=entry.context_id,
            task_id=entry.task_id,
            attempts=attempts,
            lapsed=lapsed_of(owner, lease_until, now),
        )

    def take_over(self, message_id: str, owner: str) -> JournalRecord | None:
        """Lease an open record nobody holds to ``owner`` (see `Journal.take_over`)."""
        raw = self._run(
            "take_over",
            "take the send over",
            [self._key("rec:", message_id), self._key("owner:", owner)],
            [repr(self.lease), message_id, owner],
        )
        if not _is_list(raw) or not raw or _text(raw[0]) != "1":
            return None
        return self._record(message_id, raw)

    def renew(self, owner: str) -> int:
        """Renew every open record ``owner`` holds (see `Journal.renew`)."""
        raw = self._run(
            "renew", "renew its leases", [self._key("owner:", owner)], [repr(self.lease), owner]
        )
        return self._count(raw, "renew its leases")

    def settle(
        self, message_id: str, owner: str, state: State, *, made: str | None = None, note: str = ""
    ) -> bool:
        """Close a record ``owner`` holds as ``state`` (see `Journal.settle`)."""
        if state is State.OPEN:
            return self.release(message_id, owner, note)
        keep = round(self.retention * 1000)
        raw = self._run(
            "settle",
            "close the record",
            [
                self._key("rec:", message_id),
                self._key("open"),
                self._key("closed"),
                self._key("owner:", owner),
            ],
            [
                message_id,
                owner,
                State(state).value,
                clip_note(note),
                str(max(keep, 1) if self.retention > 0 else 0),
                "0" if made is None else "1",
                "" if made is None else made,
            ],
        )
        return self._count(raw, "close the record") == 1

    def release(self, message_id: str, owner: str, note: str = "") -> bool:
        """Leave a record open, held by nobody (see `Journal.release`)."""
        raw = self._run(
            "release",
            "release the record",
            [self._key("rec:", message_id), self._key("owner:", owner)],
            [message_id, owner, clip_note(note)],
        )
        return self._count(raw, "release the record") == 1

    def get(self, message_id: str) -> JournalRecord | None:
        """The record of ``message_id``, if any (this process's close of it written first)."""
        own_closes(message_id)
        raw = self._run("get", "read the record", [self._key("rec:", message_id)], [])
        return self._record(message_id, raw)

    def unsettled(self, *, limit: int = 100) -> list[JournalRecord]:
        """Open records, oldest first, at most ``limit`` (this process's closes written first)."""
        own_closes()
        raw = self._run(
            "unsettled", "list its open records", [self._key("open")], [str(max(0, limit))]
        )
        if not _is_list(raw) or not raw or len(raw) % 2 != 1:
            raise self._unexpected("list its open records")
        now = raw[0]
        records = []
        for index in range(1, len(raw), 2):
            fields = raw[index + 1]
            if not _is_list(fields):
                raise self._unexpected("list its open records")
            record = self._record(_text(raw[index]), ["1", now, *fields])
            if record is not None:
                records.append(record)
        return records

    def purge(self) -> int:
        """Delete the records closed longer than ``retention`` ago."""
        deleted = 0
        while True:
            raw = self._run(
                "purge",
                "delete its old records",
                [self._key("closed")],
                [repr(self.retention), str(_PURGE_BATCH)],
            )
            if not _is_list(raw) or len(raw) != 2:
                raise self._unexpected("delete its old records")
            seen = self._count(raw[0], "delete its old records")
            gone = self._count(raw[1], "delete its old records")
            deleted += gone
            if seen < _PURGE_BATCH:
                return deleted

    def close(self) -> None:
        """Close the client if `from_url` made it (a client given is the caller's to close).

        The closes its sends handed over are written first (`own_closes`).
        """
        own_closes()
        if self._owns_client:
            with contextlib.suppress(Exception):  # closing what may already be gone
                self.client.close()

    # --- replies ------------------------------------------------------------------------

    def _unexpected(self, doing: str) -> JournalError:
        return JournalError(f"the journal {self!r} could not {doing}: unexpected reply from Redis")

    def _count(self, raw: object, doing: str) -> int:
        """A script's count (an integer reply)."""
        if isinstance(raw, bool) or not isinstance(raw, (int, bytes, str)):
            raise self._unexpected(doing)
        try:
            return int(_text(raw))
        except ValueError:
            raise self._unexpected(doing) from None

    def _record(self, message_id: str, raw: object) -> JournalRecord | None:
        """A record from a script's ``{flag, now, field, value, ...}`` (None: no fields)."""
        if not _is_list(raw) or len(raw) < 2 or len(raw) % 2 != 0:
            raise self._unexpected("read the record")
        if len(raw) == 2:
            return None
        fields = {_text(raw[i]): _text(raw[i + 1]) for i in range(2, len(raw), 2)}
        try:
            now = float(_text(raw[1]))
            owner = fields.get("owner")
            lease_until = float(fields["lease_until"])
            closed_at = fields.get("closed_at")
            return JournalRecord(
                message_id=message_id,
                peer=fields["peer"],
                digest=fields["digest"],
                started=float(fields["started"]),
                state=State(fields["state"]),
                owner=owner,
                lease_until=lease_until,
                context_id=fields.get("context_id"),
                task_id=fields.get("task_id"),
                made=fields.get("made"),
                note=fields.get("note", ""),
                attempts=int(fields.get("attempts", "1")),
                closed_at=None if closed_at is None else float(closed_at),
                lapsed=lapsed_of(owner, lease_until, now),
            )
        except (KeyError, ValueError) as exc:
            msg = f"the journal {self!r} holds a record of {message_id!r} it cannot read: {exc}"
            raise JournalError(msg) from exc


def _is_list(raw: object) -> TypeGuard[Sequence[Any]]:
    return isinstance(raw, (list, tuple))


def _text(value: object) -> str:
    """A reply's item as text (bytes, or str when the client decodes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _schema_refused(journal: object, found: str) -> str:
    """Why a journal refuses the schema version it found."""
    if not found.isdigit():
        return f"the journal {journal!r} has a schema version it cannot read: {found!r}"
    return (
        f"the journal {journal!r} has schema {found}, newer than this version reads "
        f"({SCHEMA_VERSION}): upgrade a2a-client-errors"
    )
