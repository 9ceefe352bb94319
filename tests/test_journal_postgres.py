"""`PostgresJournal`: the contract on a real PostgreSQL on 127.0.0.1, and what only it has.

The contract runs on one session-wide cluster, each test on a table of its own, with the
``clock`` fixture's time sent with each statement. The rest: the server's own clock, the
schema (made once, a newer one refused), the table's name, a stopped server, a restarted one,
several journal objects and threads, a fork.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING

import psycopg
import pytest
from psycopg import sql

from a2a_client_errors.integrations import postgres as postgres_module
from a2a_client_errors.integrations.postgres import PostgresJournal
from a2a_client_errors.journal import SCHEMA_VERSION, JournalError, State
from tests.journal_contract import (
    JournalContract,
    clock_fixture,  # noqa: F401 (the fixture)
    entry,
    every_operation,
    renewed_while_closed,
    roundtrip,
    watched_connections,
)
from tests.postgres_server import (  # noqa: F401 (the fixtures)
    postgres_server_fixture,
    shared_postgres_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from a2a_client_errors.testing import FakeClock
    from tests.postgres_server import PostgresServer


@pytest.fixture(name="table")
def table_fixture() -> str:
    """A table of this test's own: a journal of its own on the shared cluster."""
    return f"sends_{uuid.uuid4().hex}"


@pytest.fixture(name="journals")
def journals_fixture() -> Iterator[Callable[..., PostgresJournal]]:
    """Makes journals; each is closed after the test."""
    made: list[PostgresJournal] = []

    def make(dsn: str, **options: object) -> PostgresJournal:
        journal = PostgresJournal(dsn, **options)  # type: ignore[arg-type]
        made.append(journal)
        return journal

    yield make
    for journal in made:
        journal.close()


@pytest.fixture
def journal(
    shared_postgres: PostgresServer,
    journals: Callable[..., PostgresJournal],
    table: str,
    clock: FakeClock,
) -> PostgresJournal:
    """A fresh journal on the shared cluster, its time the ``clock`` fixture's."""
    return journals(shared_postgres.dsn, table=table, clock=clock, lease=10.0, retention=3600.0)


class TestPostgresContract(JournalContract):
    """The contract every store passes (tests/journal_contract.py)."""


def admin(server: PostgresServer) -> psycopg.Connection[tuple[object, ...]]:
    """A connection to look at the cluster with."""
    return psycopg.connect(server.dsn, autocommit=True, connect_timeout=5)


def test_the_servers_clock_by_default(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """Without a clock, a record's times are the server's (this machine's, here)."""
    journal = journals(shared_postgres.dsn, table=table, lease=30.0)
    before = time.time()
    record, mine = journal.claim(entry(), "alice")
    after = time.time()
    assert mine
    assert before - 1 <= record.started <= after + 1  # the server runs on this machine
    assert record.lease_until == pytest.approx(record.started + 30.0)
    assert not record.lapsed
    assert journal.settle("m-1", "alice", State.TASK, made="t")
    closed = journal.get("m-1")
    assert closed is not None
    assert closed.closed_at is not None
    assert record.started <= closed.closed_at <= after + 1


def test_the_schema_is_made_once_with_its_version(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """The first use makes the table, its indexes and the meta table with the version."""
    journals(shared_postgres.dsn, table=table).get("nothing")
    journals(shared_postgres.dsn, table=table).get("nothing")  # found, left as it is
    with admin(shared_postgres) as conn:
        meta = sql.Identifier(f"{table}_meta")
        row = conn.execute(sql.SQL("SELECT key, value FROM {}").format(meta)).fetchall()
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY indexname", (table,)
        ).fetchall()
    assert row == [("schema", str(SCHEMA_VERSION))]
    assert [name for (name,) in indexes] == sorted(
        [f"{table}_closed", f"{table}_open", f"{table}_owner", f"{table}_pkey"]
    )


def test_a_newer_schema_is_refused(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A newer schema version in the meta table fails every operation with JournalError."""
    journals(shared_postgres.dsn, table=table).claim(entry(), "alice")
    with admin(shared_postgres) as conn:
        conn.execute(
            sql.SQL("UPDATE {} SET value = %s WHERE key = 'schema'").format(
                sql.Identifier(f"{table}_meta")
            ),
            (str(SCHEMA_VERSION + 1),),
        )
    journal = journals(shared_postgres.dsn, table=table)
    for call in (lambda: journal.get("m-1"), lambda: journal.claim(entry("b"), "bob")):
        with pytest.raises(JournalError, match="newer"):
            call()


@pytest.mark.parametrize(
    "name",
    ["", "1sends", "sends; DROP TABLE x", 'se"nds', "public.sends", "s" * 57, "s\u00e9nds"],
)
def test_a_table_name_that_is_not_an_identifier_is_refused(name: str) -> None:
    """Only a plain identifier names the table (letters, digits, ``_``; at most 56)."""
    with pytest.raises(ValueError, match="table"):
        PostgresJournal("host=127.0.0.1", table=name)


def test_a_mixed_case_name_is_kept_as_it_is(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal]
) -> None:
    """The table's name is quoted: its case is kept."""
    name = f"Sends_{uuid.uuid4().hex[:8]}"
    journals(shared_postgres.dsn, table=name).claim(entry(), "alice")
    with admin(shared_postgres) as conn:
        found = conn.execute("SELECT to_regclass(%s)", (f'"{name}"',)).fetchone()
    assert found is not None
    assert found[0] is not None


def test_bad_settings_are_refused() -> None:
    """A bad lease, retention or connect_timeout is refused at once."""
    with pytest.raises(ValueError, match="lease"):
        PostgresJournal("", lease=0)
    with pytest.raises(ValueError, match="retention"):
        PostgresJournal("", retention=-1)
    with pytest.raises(ValueError, match="connect_timeout"):
        PostgresJournal("", connect_timeout=0)


def test_nothing_is_connected_until_first_used(journals: Callable[..., PostgresJournal]) -> None:
    """Making a journal connects to nothing: the first operation fails, with JournalError."""
    journal = journals("host=127.0.0.1 port=1 user=nobody dbname=none")
    with pytest.raises(JournalError, match="cannot connect"):
        journal.get("m-1")
    assert repr(journal) == "PostgresJournal(table='a2a_sends')"


def test_a_stopped_server_fails_every_call_with_journal_error_at_once(
    postgres_server: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A stopped server: every operation raises JournalError at once, not a hang."""
    journal = journals(postgres_server.dsn, table=table)
    journal.claim(entry(), "alice")
    postgres_server.stop()
    started = time.monotonic()
    for call in every_operation(journal):
        with pytest.raises(JournalError, match=r"cannot connect|could not"):
            call()
    assert time.monotonic() - started < 10


def test_a_restarted_server_is_reconnected_to(
    postgres_server: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """After a restart, the connection the server closed is replaced: reads and writes go on."""
    journal = journals(postgres_server.dsn, table=table)
    journal.claim(entry(), "alice")
    postgres_server.stop()
    postgres_server.start()
    # The connection the server closed is replaced before anything is sent on it.
    record = journal.get("m-1")
    assert record is not None
    assert record.owner == "alice"  # the record survived the crash (fsync=on)
    assert journal.settle("m-1", "alice", State.TASK, made="t")
    postgres_server.stop()
    postgres_server.start()
    assert journal.claim(entry("after"), "bob")[1]  # a write, too, on a fresh connection


def test_a_connection_broken_during_a_read_is_replaced_once(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A backend terminated under an idle connection: the next read gets a new connection."""
    journal = journals(shared_postgres.dsn, table=table)
    journal.claim(entry(), "alice")
    with admin(shared_postgres) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE pid <> pg_backend_pid() AND query LIKE %s",
            (f"%{table}%",),
        )
    record = journal.get("m-1")  # noticed while idle, or broken under the read: read again
    assert record is not None


def test_two_journal_objects_share_records(
    shared_postgres: PostgresServer,
    journals: Callable[..., PostgresJournal],
    table: str,
    clock: FakeClock,
) -> None:
    """Two journal objects on one table read each other's records; another table is apart."""
    journal = journals(shared_postgres.dsn, table=table, clock=clock)
    record = roundtrip(
        journal, lambda: PostgresJournal(shared_postgres.dsn, table=table, clock=clock)
    )
    assert record.owner == "alice"
    other = journals(shared_postgres.dsn, table=table + "_x", clock=clock)
    assert other.get("shared") is None  # another table is another journal


def test_each_thread_has_its_connection_closed_when_the_thread_ends(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A thread's connection is its own, closed when the thread is gone; close closes the rest."""
    journal = journals(shared_postgres.dsn, table=table)
    journal.get("warm")

    def connected() -> int:
        with admin(shared_postgres) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s AND pid <> "
                "pg_backend_pid()",
                (f"%{table}%",),
            ).fetchone()
        assert row is not None
        return int(row[0])

    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(journal.claim(entry(), "a")[0].attempts))
    thread.start()
    thread.join(30)
    assert seen == [1]
    assert connected() == 2  # the main thread's and the worker's
    del thread
    gc.collect()
    # The worker's connection was closed with its thread (psycopg closes it before the
    # server has seen the goodbye: the count may lag a moment, read again until it is 1).
    assert any(connected() == 1 for _ in range(200))
    journal.close()
    assert any(connected() == 0 for _ in range(200))


def test_close_waits_for_a_statement_another_thread_is_running(
    shared_postgres: PostgresServer,
    journals: Callable[..., PostgresJournal],
    table: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closed by one thread, the journal never frees libpq's connection under another's call.

    The renewing thread is held inside its use of its connection (where it looks its
    statement up); the closing thread waits for it, and the renewal ends as if nobody had
    closed anything.
    """
    watched = watched_connections(postgres_module._Connection)
    monkeypatch.setattr(postgres_module, "_Connection", watched)
    journal = journals(shared_postgres.dsn, table=table, lease=10.0)
    journal.claim(entry("m-1"), "a")
    inside, leave = threading.Event(), threading.Event()

    class Held(dict[str, str]):
        def __getitem__(self, key: str) -> str:
            if threading.current_thread().name == "renewer":
                inside.set()
                leave.wait(30)
            return super().__getitem__(key)

    assert journal._statements is not None
    monkeypatch.setattr(journal, "_statements", Held(journal._statements))
    renewed = renewed_while_closed(journal, watched.waited, inside, leave)
    assert renewed == [1]
    assert journal.get("m-1") is not None  # connected again after close


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_opens_its_own_connection(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A forked child connects anew and leaves the parent's connection alone."""
    journal = journals(shared_postgres.dsn, table=table)
    journal.claim(entry("parent"), "alice")
    pid = os.fork()
    if pid == 0:  # the child: exits with 0 when it could write through a connection of its own
        code = 1
        try:
            code = 0 if journal.claim(entry("child"), "bob")[1] else 2
            journal.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    child = journal.get("child")  # the parent's connection is untouched
    assert child is not None
    assert child.owner == "bob"


def test_what_the_server_refuses_is_a_journal_error(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A statement the server refuses (a NUL in text) is a JournalError; the connection goes on."""
    journal = journals(shared_postgres.dsn, table=table)
    with pytest.raises(JournalError, match="could not record the send"):
        journal.claim(entry("nul\x00byte"), "alice")
    assert journal.claim(entry(), "alice")[1]  # the connection is still good


def test_a_settle_the_server_refuses_leaves_its_connection_and_record_as_they_were(
    shared_postgres: PostgresServer, journals: Callable[..., PostgresJournal], table: str
) -> None:
    """A settle refused inside its transaction: a JournalError, rolled back, the record open."""
    journal = journals(shared_postgres.dsn, table=table)
    assert journal.claim(entry(), "alice")[1]
    with pytest.raises(JournalError, match="could not close the record"):
        journal.settle("m-1", "alice", State.TASK, made="nul\x00byte")
    still = journal.get("m-1")  # the same thread's connection, out of the failed transaction
    assert still is not None
    assert still.state is State.OPEN
    assert journal.settle("m-1", "alice", State.TASK, made="t")
    assert journal.get("m-1").made == "t"  # type: ignore[union-attr]


def test_psycopg_is_imported_only_when_the_journal_is_used() -> None:
    """Importing the module and making a journal import no psycopg (the extra is optional)."""
    code = (
        "import sys\n"
        "from a2a_client_errors.integrations.postgres import PostgresJournal\n"
        "PostgresJournal('host=127.0.0.1')\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'psycopg'], sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)  # noqa: S603
