"""The in-flight journal on PostgreSQL (extra ``postgres``): one table shared by a fleet.

`PostgresJournal` implements `a2a_client_errors.journal.Journal` with the semantics of
`SqliteJournal` (the reference store), on psycopg 3::

    from a2a_client_errors.integrations.postgres import PostgresJournal

    journal = PostgresJournal("host=db dbname=orchestrator user=orchestrator")

Every operation is one statement (a claim that finds a record reads it with a second one,
and claims again if the record changed in between), atomic on its own: no transaction is
held open between round trips. A claim's commit waits for the server's WAL flush; a settle's
does not (``synchronous_commit`` off for it alone, one round trip in pipeline mode): it
survives the orchestrator's death, which is what it is for, and a settle a crash of the
server itself took back leaves the record open, so the next sender looks its task up.
Each statement reads the time once, from the server (``clock_timestamp()``), so leases are
compared on one clock across the fleet; a ``clock`` given (for tests) is sent as a
parameter instead.

The table (``table``, ``a2a_sends`` by default) and its meta table (``<table>_meta``, which
holds the schema version: a newer one is refused) are created on first use if absent.
Each thread has a connection of its own (autocommit), opened on first use, again after a
fork, and closed when the thread ends (or by ``close``). A connection the server closed
while it was idle (a restart, an idle timeout) is noticed before the next statement is
sent, and replaced; one that breaks during a statement fails that call with `JournalError`
(a read is tried once more on a new connection; whether a write landed is unknown then),
and the next call connects anew.

psycopg is never imported by this module until the journal is first used.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import re
import select
import threading
import weakref
from typing import TYPE_CHECKING, Any, Final, TypeVar

from a2a_client_errors._journal import (
    DEFAULT_LEASE,
    DEFAULT_RETENTION,
    SCHEMA_VERSION,
    Entry,
    HeldConnection,
    JournalError,
    JournalRecord,
    State,
    ThreadConnections,
    clip_note,
    lapsed_of,
    own_closes,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import psycopg

__all__ = ["PostgresJournal"]

T = TypeVar("T")

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME_MAX: Final = 56
"""The longest table name: its indexes' names (``<table>_closed``) must fit in 63 bytes."""
_CLAIM_TRIES: Final = 5
"""Claims tried when the record found changes before it is read (a refusal, a purge)."""
_LOCK_SPACE: Final = 0x0A2A
"""The first key of the advisory lock that serialises creating the schema."""

_COLUMNS: Final = (
    "message_id",
    "peer",
    "digest",
    "started",
    "state",
    "owner",
    "lease_until",
    "context_id",
    "task_id",
    "made",
    "note",
    "attempts",
    "closed_at",
)
_NOW: Final = (
    "WITH c AS (SELECT COALESCE(%(now)s::float8, "
    "extract(epoch FROM clock_timestamp())::float8) AS now)"
)
"""The statement's time (``{now}`` in each), read once: the clock given, or the server's."""

_TABLE: Final = """CREATE TABLE IF NOT EXISTS {table} (
    message_id text PRIMARY KEY,
    peer text NOT NULL,
    digest text NOT NULL,
    started double precision NOT NULL,
    state text NOT NULL,
    owner text,
    lease_until double precision NOT NULL,
    context_id text,
    task_id text,
    made text,
    note text NOT NULL DEFAULT '',
    attempts integer NOT NULL DEFAULT 1,
    closed_at double precision
)"""
_STATEMENTS: Final = {
    "claim": (
        "{now} INSERT INTO {table} AS r ({columns}) "
        "SELECT %(id)s, %(peer)s, %(digest)s, c.now, 'open', %(owner)s, c.now + %(lease)s, "
        "%(context_id)s, %(task_id)s, NULL, '', 1, NULL FROM c "
        "ON CONFLICT (message_id) DO UPDATE SET peer = excluded.peer, digest = excluded.digest, "
        "started = excluded.started, state = 'open', owner = excluded.owner, "
        "lease_until = excluded.lease_until, context_id = excluded.context_id, "
        "task_id = excluded.task_id, made = NULL, note = '', attempts = r.attempts + 1, "
        "closed_at = NULL WHERE r.state = 'refused' "
        "RETURNING {returned}, (SELECT now FROM c)"
    ),
    "get": "{now} SELECT {returned}, c.now FROM {table} AS r, c WHERE r.message_id = %(id)s",
    "take_over": (
        "{now} UPDATE {table} AS r SET owner = %(owner)s, lease_until = c.now + %(lease)s, "
        "attempts = r.attempts + 1 FROM c WHERE r.message_id = %(id)s AND r.state = 'open' "
        "AND (r.owner IS NULL OR r.lease_until <= c.now) RETURNING {returned}, c.now"
    ),
    "renew": (
        "{now} UPDATE {table} AS r SET lease_until = c.now + %(lease)s FROM c "
        "WHERE r.owner = %(owner)s AND r.state = 'open'"
    ),
    "settle": (
        "{now} UPDATE {table} AS r SET state = %(state)s, made = %(made)s, note = %(note)s, "
        "owner = NULL, closed_at = c.now FROM c "
        "WHERE r.message_id = %(id)s AND r.owner = %(owner)s AND r.state = 'open'"
    ),
    "release": (
        "{now} UPDATE {table} AS r SET owner = NULL, lease_until = c.now, note = %(note)s "
        "FROM c WHERE r.message_id = %(id)s AND r.owner = %(owner)s AND r.state = 'open'"
    ),
    "unsettled": (
        "{now} SELECT {returned}, c.now FROM {table} AS r, c WHERE r.state = 'open' "
        "ORDER BY r.started, r.message_id LIMIT %(limit)s"
    ),
    "purge": (
        "{now} DELETE FROM {table} AS r USING c "
        "WHERE r.state <> 'open' AND r.closed_at <= c.now - %(retention)s"
    ),
}


def _psycopg() -> Any:
    """psycopg, imported on first use (the extra ``postgres``)."""
    import psycopg  # noqa: PLC0415 (the extra is imported when used, never before)

    return psycopg


def _unflushed(conn: Any, statement: str, params: dict[str, Any]) -> int:
    """``statement``'s row count, committed without waiting for the WAL flush (one round trip).

    Without pipeline support in the installed libpq, the same transaction in four round trips.
    """
    pipeline = conn.pipeline() if _psycopg().Pipeline.is_supported() else contextlib.nullcontext()
    try:
        with pipeline:
            conn.execute("BEGIN")
            conn.execute("SET LOCAL synchronous_commit TO OFF")
            cursor = conn.execute(statement, params)
            conn.execute("COMMIT")
    except BaseException:
        if not conn.closed and conn.info.transaction_status != _psycopg().pq.TransactionStatus.IDLE:
            with contextlib.suppress(Exception):  # a broken connection is replaced by the caller
                conn.execute("ROLLBACK")
        raise
    count: int = cursor.rowcount
    return count


class PostgresJournal:
    """A journal in one PostgreSQL table, shared by every process that connects to it.

    The module docstring tells how each operation is atomic, whose clock it reads, and what
    happens to connections. Nothing is connected until first used; every failure of the
    server or of the driver (refused, down, a statement refused) is a `JournalError`.

    Args:
        dsn: the connection string (``"host=db dbname=app user=app"`` or a
            ``postgresql://`` URL), as psycopg takes it.
        table: the table's name (letters, digits and ``_``, at most 56; created if absent,
            with ``<table>_meta`` beside it).
        lease: seconds a sender's lease lasts unless renewed (a dead sender's lapses within).
        retention: seconds a closed record is kept before `purge` deletes it.
        clock: the time, in seconds since the epoch, sent with each statement (default:
            none, the server's clock).
        connect_timeout: seconds a connection may take to open (libpq counts whole seconds,
            two at least).

    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "a2a_sends",
        lease: float = DEFAULT_LEASE,
        retention: float = DEFAULT_RETENTION,
        clock: Callable[[], float] | None = None,
        connect_timeout: float = 5.0,
    ) -> None:
        if lease <= 0 or retention < 0:
            msg = "lease must be positive and retention not negative"
            raise ValueError(msg)
        if not (_IDENTIFIER.match(table) and len(table) <= _NAME_MAX):
            msg = (
                f"table must be a name of letters, digits and _ (not first), at most "
                f"{_NAME_MAX} characters: {table!r}"
            )
            raise ValueError(msg)
        if not connect_timeout > 0:
            msg = "connect_timeout must be positive"
            raise ValueError(msg)
        if importlib.util.find_spec("psycopg") is None:
            msg = "PostgresJournal needs psycopg: pip install 'a2a-client-errors[postgres]'"
            raise ImportError(msg, name="psycopg")
        self.dsn = dsn
        self.table = table
        self.lease = float(lease)
        self.retention = float(retention)
        self.clock = clock
        self.connect_timeout = float(connect_timeout)
        self._local = threading.local()
        self._pool = ThreadConnections()
        weakref.finalize(self, self._pool.close_all)  # a journal dropped unclosed
        self._statements: dict[str, str] | None = None
        self._ready = False
        self._ready_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresJournal(table={self.table!r})"

    # --- connections --------------------------------------------------------------------

    def _held(self) -> _Connection:
        """The calling thread's connection: opened (and the schema made ready) on first use.

        Used as ``with held as conn`` (`HeldConnection`).
        """
        held: _Connection | None = getattr(self._local, "conn", None)
        if held is not None and held.pid == os.getpid():
            if not held.gone():
                return held
            self._pool.drop(held)
        pg = _psycopg()
        try:
            conn: psycopg.Connection[Any] = pg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=max(2, math.ceil(self.connect_timeout)),
            )
        except pg.Error as exc:
            msg = f"the journal {self!r} cannot connect to PostgreSQL: {exc}"
            raise JournalError(msg) from exc
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        wrapper = _Connection(conn)
        self._pool.add(wrapper)
        self._local.conn = wrapper
        return wrapper

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        """Create the schema, or check the one found (once per journal object)."""
        with self._ready_lock:
            if self._ready:
                return
            pg = _psycopg()
            sql = pg.sql
            table = sql.Identifier(self.table)
            meta = sql.Identifier(self.table + "_meta")
            try:
                with conn.transaction():
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                        (_LOCK_SPACE, self.table),
                    )
                    found = conn.execute(
                        "SELECT to_regclass(%s) IS NOT NULL, to_regclass(%s) IS NOT NULL",
                        (table.as_string(conn), meta.as_string(conn)),
                    ).fetchone()
                    if found is None or not all(found):
                        self._create(conn)
                    row = conn.execute(
                        sql.SQL("SELECT value FROM {} WHERE key = 'schema'").format(meta)
                    ).fetchone()
            except pg.Error as exc:
                msg = f"the journal {self!r} cannot make its tables ready: {exc}"
                raise JournalError(msg) from exc
            version = "" if row is None else str(row[0])
            if not version.isdigit():
                msg = f"the journal {self!r} has a schema version it cannot read: {version!r}"
                raise JournalError(msg)
            if int(version) > SCHEMA_VERSION:
                msg = (
                    f"the journal {self!r} has schema {version}, newer than this version "
                    f"reads ({SCHEMA_VERSION}): upgrade a2a-client-errors"
                )
                raise JournalError(msg)
            columns = sql.SQL(", ").join(sql.Identifier(name) for name in _COLUMNS)
            returned = sql.SQL(", ").join(sql.Identifier("r", name) for name in _COLUMNS)
            self._statements = {
                name: sql.SQL(text)  # composed from constants
                .format(now=sql.SQL(_NOW), table=table, columns=columns, returned=returned)
                .as_string(conn)
                for name, text in _STATEMENTS.items()
            }
            self._ready = True

    def _create(self, conn: psycopg.Connection[Any]) -> None:
        """The tables and indexes, and the schema version (inside `_prepare`'s transaction)."""
        sql = _psycopg().sql
        table = sql.Identifier(self.table)
        meta = sql.Identifier(self.table + "_meta")
        conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value text NOT NULL)"
            ).format(meta)
        )
        conn.execute(sql.SQL(_TABLE).format(table=table))
        for suffix, definition in (
            ("_open", "(started) WHERE state = 'open'"),
            ("_owner", "(owner) WHERE state = 'open'"),
            ("_closed", "(closed_at) WHERE state <> 'open'"),
        ):
            conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} " + definition).format(
                    sql.Identifier(self.table + suffix), table
                )
            )
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (key, value) VALUES ('schema', %s) ON CONFLICT (key) DO NOTHING"
            ).format(meta),
            (str(SCHEMA_VERSION),),
        )

    def _do(self, doing: str, work: Callable[[Any, dict[str, str]], T], *, read: bool = False) -> T:
        """Run ``work`` on this thread's connection; a psycopg failure is a `JournalError`.

        ``read``: it writes nothing, so it is tried once more on a new connection when its
        connection broke under it.
        """
        pg = _psycopg()
        for attempt in range(2 if read else 1):
            held = self._held()
            conn = held.conn
            statements = self._statements
            assert statements is not None  # noqa: S101 (made ready with the connection)
            try:
                with held:
                    return work(conn, statements)
            except pg.Error as exc:
                broken = conn.closed
                if broken and getattr(self._local, "conn", None) is held:
                    self._pool.drop(held)
                    self._local.conn = None
                if broken and attempt == 0 and read:
                    continue
                raise JournalError(f"the journal {self!r} could not {doing}: {exc}") from exc
        raise AssertionError  # pragma: no cover (the loop returns or raises)

    def _now(self) -> float | None:
        return None if self.clock is None else float(self.clock())

    # --- the protocol -------------------------------------------------------------------

    def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
        """Record ``entry`` for ``owner`` unless it has a record (see `Journal.claim`)."""
        params = {
            "now": self._now(),
            "id": entry.message_id,
            "peer": entry.peer,
            "digest": entry.digest,
            "owner": owner,
            "lease": self.lease,
            "context_id": entry.context_id,
            "task_id": entry.task_id,
        }

        def work(conn: Any, statements: dict[str, str]) -> tuple[JournalRecord, bool] | None:
            for _ in range(_CLAIM_TRIES):
                row = conn.execute(statements["claim"], params).fetchone()
                if row is not None:
                    return _record(row), True
                row = conn.execute(statements["get"], params).fetchone()
                if row is not None and row[4] != State.REFUSED.value:
                    return _record(row), False
                # Refused or purged since the claim found it: claim again.
            return None

        claimed = self._do("record the send", work)
        if claimed is None:
            msg = f"the journal {self!r} could not record the send: its record kept changing"
            raise JournalError(msg)
        return claimed

    def take_over(self, message_id: str, owner: str) -> JournalRecord | None:
        """Lease an open record nobody holds to ``owner`` (see `Journal.take_over`)."""
        params = {"now": self._now(), "id": message_id, "owner": owner, "lease": self.lease}
        row = self._do(
            "take the send over",
            lambda conn, statements: conn.execute(statements["take_over"], params).fetchone(),
        )
        return None if row is None else _record(row)

    def renew(self, owner: str) -> int:
        """Renew every open record ``owner`` holds (see `Journal.renew`)."""
        params = {"now": self._now(), "owner": owner, "lease": self.lease}
        count: int = self._do(
            "renew its leases",
            lambda conn, statements: conn.execute(statements["renew"], params).rowcount,
        )
        return count

    def settle(
        self, message_id: str, owner: str, state: State, *, made: str | None = None, note: str = ""
    ) -> bool:
        """Close a record ``owner`` holds as ``state`` (see `Journal.settle`)."""
        if state is State.OPEN:
            return self.release(message_id, owner, note)
        params = {
            "now": self._now(),
            "id": message_id,
            "owner": owner,
            "state": State(state).value,
            "made": made,
            "note": clip_note(note),
        }
        count: int = self._do(
            "close the record",
            lambda conn, statements: _unflushed(conn, statements["settle"], params),
        )
        return count == 1

    def release(self, message_id: str, owner: str, note: str = "") -> bool:
        """Leave a record open, held by nobody (see `Journal.release`)."""
        params = {"now": self._now(), "id": message_id, "owner": owner, "note": clip_note(note)}
        count: int = self._do(
            "release the record",
            lambda conn, statements: conn.execute(statements["release"], params).rowcount,
        )
        return count == 1

    def get(self, message_id: str) -> JournalRecord | None:
        """The record of ``message_id``, if any (this process's close of it written first)."""
        own_closes(message_id)
        params = {"now": self._now(), "id": message_id}
        row = self._do(
            "read the record",
            lambda conn, statements: conn.execute(statements["get"], params).fetchone(),
            read=True,
        )
        return None if row is None else _record(row)

    def unsettled(self, *, limit: int = 100) -> list[JournalRecord]:
        """Open records, oldest first, at most ``limit`` (this process's closes written first)."""
        own_closes()
        params = {"now": self._now(), "limit": max(0, limit)}
        rows = self._do(
            "list its open records",
            lambda conn, statements: conn.execute(statements["unsettled"], params).fetchall(),
            read=True,
        )
        return [_record(row) for row in rows]

    def purge(self) -> int:
        """Delete the records closed longer than ``retention`` ago."""
        params = {"now": self._now(), "retention": self.retention}
        count: int = self._do(
            "delete its old records",
            lambda conn, statements: conn.execute(statements["purge"], params).rowcount,
        )
        return count

    def close(self) -> None:
        """Close this process's connections (the table and its records stay).

        The closes its sends handed over are written first (`own_closes`), and a statement
        another thread is running ends before its connection is closed.
        """
        own_closes()
        self._pool.close_all()
        self._local = threading.local()


class _Connection(HeldConnection["psycopg.Connection[Any]"]):
    """One thread's connection (`HeldConnection`), which can tell a server gone while it idled."""

    __slots__ = ()

    def gone(self) -> bool:
        """Whether the server closed it, or spoke, while it was idle (seen without waiting)."""
        conn = self.conn
        if conn.closed:
            return True
        try:
            fd = conn.fileno()
            if hasattr(select, "poll"):
                poll = select.poll()
                poll.register(fd, select.POLLIN)
                readable = bool(poll.poll(0))
            else:  # pragma: no cover (Windows)
                readable = bool(select.select([fd], [], [], 0)[0])
        except (OSError, ValueError):
            return True
        # Nothing is due on an idle connection: what came is the server's goodbye (a
        # shutdown, a terminated backend) and the end, or, rarely, a notice; replaced either
        # way (the cost of a new connection, against a statement sent into a closed one).
        return readable


def _record(row: tuple[Any, ...]) -> JournalRecord:
    """A record from a row of `_COLUMNS` and the statement's time."""
    (message_id, peer, digest, started, state, owner, lease_until) = row[:7]
    (context_id, task_id, made, note, attempts, closed_at, now) = row[7:14]
    until = float(lease_until)
    return JournalRecord(
        message_id=message_id,
        peer=peer,
        digest=digest,
        started=float(started),
        state=State(state),
        owner=owner,
        lease_until=until,
        context_id=context_id,
        task_id=task_id,
        made=made,
        note=note,
        attempts=int(attempts),
        closed_at=None if closed_at is None else float(closed_at),
        lapsed=lapsed_of(owner, until, float(now)),
    )
