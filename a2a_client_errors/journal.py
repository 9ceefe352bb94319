"""Durable in-flight sends: one logical send, one task, whatever process dies.

Give a Guard a journal and every door records each send that creates work before its first
byte leaves, and closes the record with what came back::

    from a2a_client_errors import Guard
    from a2a_client_errors.journal import SqliteJournal, message_id_for

    guard = Guard(journal=SqliteJournal("sends.db"))
    message_id = message_id_for(run_id, "summarise")  # the same after a restart

A send whose messageId already has a record never makes a second first attempt: the caller
gets the task the record holds, waits for the live process sending it, or (its sender dead)
gets the task looked up, or `OutcomeUnknown` carrying the record; it is sent again only on
the agent's word (see `a2a_client_errors.ExactlyOnce`). `Guard.recover` comes back to the
records dead senders left open. ``docs/journal.md`` says what is and is not covered.

Stores: `SqliteJournal` here (several processes on one machine);
`a2a_client_errors.integrations.redis.RedisJournal` and
`a2a_client_errors.integrations.postgres.PostgresJournal` for fleets.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from typing import TYPE_CHECKING, Final

from a2a_client_errors._failures import AlreadySent, JournalUnavailable, RequestMismatch
from a2a_client_errors._journal import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    SCHEMA_VERSION,
    Entry,
    HeldConnection,
    Journal,
    JournalError,
    JournalRecord,
    LeaseKeeper,
    Made,
    Recovery,
    State,
    ThreadConnections,
    clip_note,
    digest_of,
    entry_for,
    lapsed_of,
    message_id_for,
    own_closes,
    task_made,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_RETENTION",
    "SCHEMA_VERSION",
    "AlreadySent",
    "Entry",
    "Journal",
    "JournalError",
    "JournalRecord",
    "JournalUnavailable",
    "LeaseKeeper",
    "Made",
    "Recovery",
    "RequestMismatch",
    "SqliteJournal",
    "State",
    "digest_of",
    "entry_for",
    "message_id_for",
    "task_made",
]

_COLUMNS: Final = (
    "message_id, peer, digest, started, state, owner, lease_until, context_id, task_id, "
    "made, note, attempts, closed_at"
)
_CLAIM: Final = (
    f"INSERT INTO a2a_sends ({_COLUMNS}) "  # noqa: S608 (constants)
    "VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, NULL, '', 1, NULL) "
    "ON CONFLICT (message_id) DO UPDATE SET peer = excluded.peer, digest = excluded.digest, "
    "started = excluded.started, state = 'open', owner = excluded.owner, "
    "lease_until = excluded.lease_until, context_id = excluded.context_id, "
    "task_id = excluded.task_id, made = NULL, note = '', "
    "attempts = a2a_sends.attempts + 1, closed_at = NULL "
    f"WHERE a2a_sends.state = 'refused' RETURNING {_COLUMNS}"
)
"""A claim in one statement: a new record, or one written over a refused one (a refusal
means the agent did not take the message: it may be sent again)."""
_RETURNING: Final = sqlite3.sqlite_version_info >= (3, 35, 0)
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS a2a_journal_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS a2a_sends (
        message_id TEXT PRIMARY KEY,
        peer TEXT NOT NULL,
        digest TEXT NOT NULL,
        started REAL NOT NULL,
        state TEXT NOT NULL,
        owner TEXT,
        lease_until REAL NOT NULL,
        context_id TEXT,
        task_id TEXT,
        made TEXT,
        note TEXT NOT NULL DEFAULT '',
        attempts INTEGER NOT NULL DEFAULT 1,
        closed_at REAL
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS a2a_sends_open ON a2a_sends (state, started)",
    "CREATE INDEX IF NOT EXISTS a2a_sends_closed ON a2a_sends (closed_at)",
)


class SqliteJournal:
    """A journal in one SQLite file (the standard library's sqlite3, in WAL mode).

    Safe for several processes and threads on one machine: each thread has its connection
    (closed when the thread ends, or by `close`), each write is one transaction
    (``BEGIN IMMEDIATE``), and with ``durable`` (the default) a send's claim is on disk
    (``synchronous=FULL``: one fsync) before the send leaves.
    Leases are kept on this machine's wall clock (``clock``).

    Nothing is opened until first used: a path that cannot be written fails each call that
    needs it with `JournalError` (a guarded send: `JournalUnavailable`, nothing sent).

    Args:
        path: the database file (created with its schema if absent).
        lease: seconds a sender's lease lasts unless renewed (a dead sender's lapses within).
        retention: seconds a closed record is kept before it is deleted.
        timeout: seconds a write waits for another process's (SQLite's busy timeout).
        durable: the claim a send waits for is on disk (one fsync, ``synchronous=FULL``)
            before its first byte; closes and renewals ride on the next fsync. False: no
            fsync at all (``NORMAL``): a process crash loses nothing, a power cut may.
        clock: the wall clock, in seconds since the epoch (inject one in tests).

    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lease: float = DEFAULT_LEASE,
        retention: float = DEFAULT_RETENTION,
        timeout: float = 5.0,
        durable: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lease <= 0 or retention < 0:
            msg = "lease must be positive and retention not negative"
            raise ValueError(msg)
        self.path = os.fspath(path)
        self.lease = float(lease)
        self.retention = float(retention)
        self.timeout = timeout
        self.durable = durable
        self.clock = clock
        self._local = threading.local()
        self._connections = ThreadConnections()
        weakref.finalize(self, self._connections.close_all)  # a journal dropped unclosed
        self._ready = False
        self._ready_lock = threading.Lock()
        self._turn = threading.Event()  # never set: what a busy switch to WAL waits on

    def __repr__(self) -> str:
        return f"SqliteJournal({self.path!r})"

    # --- connections --------------------------------------------------------------------

    def _held(self) -> HeldConnection[sqlite3.Connection]:
        """The calling thread's connection, opened on first use; used as ``with held as conn``."""
        held: HeldConnection[sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held.pid == os.getpid():
            return held
        try:
            # Used by its thread alone; not bound to it, so that it is closed when the thread
            # is gone, from the thread that finds it gone (`ThreadConnections`).
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise JournalError(f"the journal {self.path!r} cannot be opened: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            with self._ready_lock:  # this object's threads switch one at a time
                mode = self._wal(conn)
            if mode.lower() != "wal":
                msg = f"the journal {self.path!r} cannot be put in WAL mode"
                raise JournalError(msg)
            conn.execute(f"PRAGMA synchronous = {'FULL' if self.durable else 'NORMAL'}")
            self._prepare(conn)
        except BaseException as exc:
            conn.close()  # not left to be collected open
            if isinstance(exc, sqlite3.Error):
                raise JournalError(f"the journal {self.path!r} cannot be opened: {exc}") from exc
            raise
        wrapper = HeldConnection(conn)
        self._local.conn = wrapper
        self._connections.add(wrapper)
        return wrapper

    def _wal(self, conn: sqlite3.Connection) -> str:
        """Put the file in WAL mode (once for the file), within ``timeout``.

        Switching needs the file to itself, and SQLite does not wait for that on its own:
        processes opening a new journal at once take turns here, every few milliseconds.
        """
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
            self._turn.wait(pause)  # another connection switches it now
            pause = min(pause * 2, 0.05)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Create the schema, or check the one found (once per journal object)."""
        with self._ready_lock:
            if self._ready:
                return
            with _transaction(conn):
                for statement in _SCHEMA:
                    conn.execute(statement)
                row = conn.execute(
                    "SELECT value FROM a2a_journal_meta WHERE key = 'schema'"
                ).fetchone()
                if row is None:
                    conn.execute(
                        "INSERT INTO a2a_journal_meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
                    )
                elif int(row[0]) > SCHEMA_VERSION:
                    msg = (
                        f"the journal {self.path!r} has schema {row[0]}, newer than this "
                        f"version reads ({SCHEMA_VERSION}): upgrade a2a-client-errors"
                    )
                    raise JournalError(msg)
            self._ready = True

    @staticmethod
    def _fail(exc: sqlite3.Error, doing: str) -> JournalError:
        return JournalError(f"the journal could not {doing}: {exc}")

    # --- the protocol -------------------------------------------------------------------

    def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
        """Record ``entry`` for ``owner`` unless it has a record (see `Journal.claim`).

        One statement (an upsert that writes only over a refused record, returning the row
        written) and one commit, the send's one fsync; a record already there is read after.
        """
        now = self.clock()
        values = (
            entry.message_id,
            entry.peer,
            entry.digest,
            now,
            owner,
            now + self.lease,
            entry.context_id,
            entry.task_id,
        )
        try:
            with self._held() as conn:
                if _RETURNING:
                    new = _upsert(conn, values)
                    if new is None:  # a record that is not refused: it stands
                        row = _select(conn, entry.message_id)
                        if row is not None:
                            return _record(row, now), False
                        new = _upsert(conn, values)  # purged since: claim anew
                else:
                    stepped = self._claim_in_steps(conn, values)
                    if isinstance(stepped, JournalRecord):
                        return stepped, False
                    new = stepped
        except sqlite3.Error as exc:
            raise self._fail(exc, "record the send") from exc
        assert new is not None  # noqa: S101 (just written)
        return _record(new, now), True

    def _claim_in_steps(
        self, conn: sqlite3.Connection, values: tuple[object, ...]
    ) -> tuple[object, ...] | JournalRecord | None:
        """`claim` on a SQLite without ``RETURNING`` (before 3.35): read, then write."""
        message_id, now = str(values[0]), float(values[3])  # type: ignore[arg-type]
        with _transaction(conn):
            row = _select(conn, message_id)
            if row is not None and row[4] != State.REFUSED.value:
                return _record(row, now)
            attempts = 1 if row is None else int(row[11]) + 1  # type: ignore[call-overload]
            conn.execute(
                f"INSERT OR REPLACE INTO a2a_sends ({_COLUMNS}) "  # noqa: S608 (constants)
                "VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?, NULL, '', ?, NULL)",
                (*values, attempts),
            )
            return _select(conn, message_id)

    def take_over(self, message_id: str, owner: str) -> JournalRecord | None:
        """Lease an open record nobody holds to ``owner`` (see `Journal.take_over`)."""
        try:
            with self._held() as conn, _transaction(conn):
                now = self.clock()
                cursor = conn.execute(
                    "UPDATE a2a_sends SET owner = ?, lease_until = ?, attempts = attempts + 1 "
                    "WHERE message_id = ? AND state = 'open' "
                    "AND (owner IS NULL OR lease_until <= ?)",
                    (owner, now + self.lease, message_id, now),
                )
                row = _select(conn, message_id) if cursor.rowcount == 1 else None
        except sqlite3.Error as exc:
            raise self._fail(exc, "take the send over") from exc
        return None if row is None else _record(row, now)

    def renew(self, owner: str) -> int:
        """Renew every open record ``owner`` holds (see `Journal.renew`)."""
        try:
            with self._held() as conn, _lazy(conn, lazy=self.durable):
                now = self.clock()
                cursor = conn.execute(
                    "UPDATE a2a_sends SET lease_until = ? WHERE owner = ? AND state = 'open'",
                    (now + self.lease, owner),
                )
        except sqlite3.Error as exc:
            raise self._fail(exc, "renew its leases") from exc
        return cursor.rowcount

    def settle(
        self, message_id: str, owner: str, state: State, *, made: str | None = None, note: str = ""
    ) -> bool:
        """Close a record ``owner`` holds as ``state`` (see `Journal.settle`)."""
        if state is State.OPEN:
            return self.release(message_id, owner, note)
        try:
            with self._held() as conn, _lazy(conn, lazy=self.durable):
                cursor = conn.execute(
                    "UPDATE a2a_sends SET state = ?, made = ?, note = ?, owner = NULL, "
                    "closed_at = ? WHERE message_id = ? AND owner = ? AND state = 'open'",
                    (State(state).value, made, clip_note(note), self.clock(), message_id, owner),
                )
        except sqlite3.Error as exc:
            raise self._fail(exc, "close the record") from exc
        return cursor.rowcount == 1

    def release(self, message_id: str, owner: str, note: str = "") -> bool:
        """Leave a record open, held by nobody (see `Journal.release`)."""
        try:
            with self._held() as conn, _lazy(conn, lazy=self.durable):
                cursor = conn.execute(
                    "UPDATE a2a_sends SET owner = NULL, lease_until = ?, note = ? "
                    "WHERE message_id = ? AND owner = ? AND state = 'open'",
                    (self.clock(), clip_note(note), message_id, owner),
                )
        except sqlite3.Error as exc:
            raise self._fail(exc, "release the record") from exc
        return cursor.rowcount == 1

    def get(self, message_id: str) -> JournalRecord | None:
        """The record of ``message_id``, if any (this process's close of it written first)."""
        own_closes(message_id)
        try:
            with self._held() as conn:
                row = _select(conn, message_id)
        except sqlite3.Error as exc:
            raise self._fail(exc, "read the record") from exc
        return None if row is None else _record(row, self.clock())

    def unsettled(self, *, limit: int = 100) -> list[JournalRecord]:
        """Open records, oldest first, at most ``limit`` (this process's closes written first)."""
        own_closes()
        try:
            with self._held() as conn:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM a2a_sends "  # noqa: S608 (constants)
                    "WHERE state = 'open' ORDER BY started LIMIT ?",
                    (max(0, limit),),
                ).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc, "list its open records") from exc
        now = self.clock()
        return [_record(row, now) for row in rows]

    def purge(self) -> int:
        """Delete the records closed longer than ``retention`` ago."""
        try:
            with self._held() as conn, _lazy(conn, lazy=self.durable):
                cursor = conn.execute(
                    "DELETE FROM a2a_sends WHERE state != 'open' AND closed_at <= ?",
                    (self.clock() - self.retention,),
                )
        except sqlite3.Error as exc:
            raise self._fail(exc, "delete its old records") from exc
        return cursor.rowcount

    def close(self) -> None:
        """Close this process's connections (the file and its records stay).

        The closes its sends handed over are written first (`own_closes`), and a statement
        another thread is running ends before its connection is closed.
        """
        own_closes()
        self._connections.close_all()
        self._local = threading.local()


class _transaction:  # noqa: N801 (a context manager, named as one uses it)
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an error): a read and a write as one."""

    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


class _lazy:  # noqa: N801 (a context manager, named as one uses it)
    """One statement in its own implicit transaction; ``lazy``: committed without an fsync.

    A renewal, close or purge is one statement: SQLite commits it as it ends, with no
    ``BEGIN``/``COMMIT`` of its own. A ``lazy`` one (a durable journal's) commits without
    its own fsync (``synchronous=NORMAL`` for it): what it writes is on disk at the next
    durable commit or checkpoint, and a process crash loses none of it. A power cut may: the
    record is then still open, and the next sender or `Guard.recover` looks its task up.
    The one fsync a send waits for is its claim's, before its first byte.
    """

    __slots__ = ("conn", "lazy")

    def __init__(self, conn: sqlite3.Connection, *, lazy: bool = False) -> None:
        self.conn = conn
        self.lazy = lazy

    def __enter__(self) -> sqlite3.Connection:
        if self.lazy:
            self.conn.execute("PRAGMA synchronous = NORMAL")
        return self.conn

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self.lazy:
            self.conn.execute("PRAGMA synchronous = FULL")


_BUSY_CODES: Final = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused for a lock another connection holds (it may be tried again)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in _BUSY_CODES
    return "locked" in str(exc)  # Python 3.10: SQLite's own words, not a peer's


def _upsert(conn: sqlite3.Connection, values: tuple[object, ...]) -> tuple[object, ...] | None:
    """`_CLAIM`, read to its end: the statement is done, so its implicit commit has run."""
    rows = conn.execute(_CLAIM, values).fetchall()
    return rows[0] if rows else None


def _select(conn: sqlite3.Connection, message_id: str) -> tuple[object, ...] | None:
    row: tuple[object, ...] | None = conn.execute(
        f"SELECT {_COLUMNS} FROM a2a_sends WHERE message_id = ?",  # noqa: S608 (constants)
        (message_id,),
    ).fetchone()
    return row


def _record(row: tuple[object, ...], now: float) -> JournalRecord:
    (message_id, peer, digest, started, state, owner, lease_until) = row[:7]
    (context_id, task_id, made, note, attempts, closed_at) = row[7:]
    owner_name = None if owner is None else str(owner)
    until = float(lease_until)  # type: ignore[arg-type]
    return JournalRecord(
        message_id=str(message_id),
        peer=str(peer),
        digest=str(digest),
        started=float(started),  # type: ignore[arg-type]
        state=State(state),
        owner=owner_name,
        lease_until=until,
        context_id=None if context_id is None else str(context_id),
        task_id=None if task_id is None else str(task_id),
        made=None if made is None else str(made),
        note=str(note),
        attempts=int(attempts),  # type: ignore[call-overload]
        closed_at=None if closed_at is None else float(closed_at),  # type: ignore[arg-type]
        lapsed=lapsed_of(owner_name, until, now),
    )
