"""`SqliteJournal`: the contract, on a real file, and what only SQLite has (paths, schema, WAL)."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
from typing import TYPE_CHECKING

import pytest

from a2a_client_errors._journal import HeldConnection, LeaseKeeper, ThreadConnections
from a2a_client_errors.journal import SCHEMA_VERSION, JournalError, SqliteJournal
from tests.journal_contract import (
    JournalContract,
    clock_fixture,  # noqa: F401 (the fixture)
    entry,
    every_operation,
    renewed_while_closed,
    roundtrip,
    watched_connections,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from a2a_client_errors.testing import FakeClock


@pytest.fixture
def journal(tmp_path: Path, clock: FakeClock) -> Iterator[SqliteJournal]:
    """A fresh journal in a new file, its time the ``clock`` fixture's."""
    store = SqliteJournal(tmp_path / "sends.db", clock=clock, lease=10.0, retention=3600.0)
    yield store
    store.close()


class TestSqliteContract(JournalContract):
    """The contract every store passes (tests/journal_contract.py)."""


class TestSqliteWithoutReturningContract(JournalContract):
    """The contract again, claims read then written (a SQLite before 3.35 has no RETURNING)."""

    @pytest.fixture
    def journal(
        self, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[SqliteJournal]:
        """A fresh journal whose claims take the steps an older SQLite needs."""
        monkeypatch.setattr("a2a_client_errors.journal._RETURNING", False)
        store = SqliteJournal(tmp_path / "sends.db", clock=clock, lease=10.0, retention=3600.0)
        yield store
        store.close()


def test_a_claim_is_committed_when_it_returns(tmp_path: Path) -> None:
    """Another connection sees the claim at once: its one statement is done, its commit run."""
    store = SqliteJournal(tmp_path / "sends.db")
    try:
        record, claimed = store.claim(entry("m-1"), "me")
        assert claimed
        other = sqlite3.connect(tmp_path / "sends.db")
        try:
            rows = other.execute("SELECT message_id, state, owner FROM a2a_sends").fetchall()
        finally:
            other.close()
        assert rows == [("m-1", "open", "me")]
        assert record.message_id == "m-1"
    finally:
        store.close()


def test_two_objects_on_one_file_share_records(tmp_path: Path, clock: FakeClock) -> None:
    """Two journal objects on one file read each other's records."""
    path = tmp_path / "shared.db"
    journal = SqliteJournal(path, clock=clock)
    record = roundtrip(journal, lambda: SqliteJournal(path, clock=clock))
    assert record.owner == "alice"
    journal.close()


def test_wal_and_full_sync(tmp_path: Path) -> None:
    """The file is in WAL mode."""
    journal = SqliteJournal(tmp_path / "w.db")
    journal.claim(entry(), "alice")
    conn = sqlite3.connect(tmp_path / "w.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    journal.close()


def test_no_body_is_kept(tmp_path: Path) -> None:
    """No request body is written: only its digest."""
    journal = SqliteJournal(tmp_path / "b.db")
    secret = "the-secret-text-of-the-message"
    journal.claim(entry(body=secret), "alice")
    journal.close()
    for name in os.listdir(tmp_path):
        assert secret.encode() not in (tmp_path / name).read_bytes()


def test_a_directory_or_a_foreign_file_fails_with_a_clear_error(tmp_path: Path) -> None:
    """A directory, or a file that is not a database, fails with a clear JournalError."""
    with pytest.raises(JournalError, match="cannot be opened"):
        SqliteJournal(tmp_path).claim(entry(), "alice")
    garbage = tmp_path / "not-a-db"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(JournalError, match="cannot be opened"):
        SqliteJournal(garbage).claim(entry(), "alice")


def test_unopenable_path_fails_each_call_with_journal_error(tmp_path: Path) -> None:
    """A path that cannot be opened fails every operation with JournalError."""
    journal = SqliteJournal(tmp_path / "missing-dir" / "x.db")
    for call in every_operation(journal):
        with pytest.raises(JournalError):
            call()


def test_a_read_only_file_refuses_writes(tmp_path: Path) -> None:
    """A file opened read-only refuses writes."""
    path = tmp_path / "ro.db"
    SqliteJournal(path).claim(entry("before"), "alice")
    uri = f"file:{path}?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO a2a_sends (message_id) VALUES ('x')")
    conn.close()


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    """A newer schema version is refused with JournalError."""
    path = tmp_path / "new.db"
    SqliteJournal(path).claim(entry(), "alice")
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE a2a_journal_meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION + 1,)
    )
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="newer"):
        SqliteJournal(path).get("m-1")


def test_schema_version_is_written(tmp_path: Path) -> None:
    """The first use writes the schema version."""
    path = tmp_path / "v.db"
    SqliteJournal(path).get("nothing")
    conn = sqlite3.connect(path)
    row = conn.execute("SELECT value FROM a2a_journal_meta WHERE key = 'schema'").fetchone()
    conn.close()
    assert int(row[0]) == SCHEMA_VERSION


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    """A bad lease or retention is refused at once."""
    with pytest.raises(ValueError, match="lease"):
        SqliteJournal(tmp_path / "x.db", lease=0)
    with pytest.raises(ValueError, match="retention"):
        SqliteJournal(tmp_path / "x.db", retention=-1)


def test_repr_names_the_path(tmp_path: Path) -> None:
    """The repr names the file."""
    assert "sends.db" in repr(SqliteJournal(tmp_path / "sends.db"))


class _Counted:
    """A connection that counts its closes, and the thread that closed it."""

    def __init__(self) -> None:
        self.closes: list[str] = []

    def close(self) -> None:
        self.closes.append(threading.current_thread().name)


def test_a_threads_connection_is_closed_when_the_thread_ends() -> None:
    """`ThreadConnections`: a thread that ends leaves no connection open behind it.

    Python 3.13 warns of an sqlite3 connection collected unclosed, as a worker thread's was
    (the journals open theirs unbound to their thread, so that another may close it).
    """
    pool = ThreadConnections()
    made: list[_Counted] = []

    def work() -> None:
        conn = _Counted()
        made.append(conn)
        pool.add(HeldConnection(conn))

    thread = threading.Thread(target=work, name="worker")
    thread.start()
    thread.join(30)
    mine = _Counted()
    pool.add(HeldConnection(mine))
    assert made[0].closes == []
    del thread
    gc.collect()
    assert len(made[0].closes) == 1  # closed once, its thread gone
    assert mine.closes == []  # this thread's is still in use
    assert len(pool.held) == 1
    pool.close_all()
    assert len(mine.closes) == 1
    assert len(made[0].closes) == 1  # never closed twice
    pool.close_all()
    assert len(mine.closes) == 1


def test_a_sqlite_journal_opened_by_threads_closes_their_connections(tmp_path: Path) -> None:
    """The journal's own: threads' connections, closed with their threads or with the journal."""
    journal = SqliteJournal(tmp_path / "journal.db")
    seen: list[int] = []
    threads = [
        threading.Thread(
            target=lambda i=i: seen.append(journal.claim(entry(f"m-{i}"), "a")[0].attempts)
        )
        for i in range(3)
    ]
    for thread in threads:
        thread.start()
        thread.join(30)
    assert seen == [1, 1, 1]
    del threads, thread
    gc.collect()
    assert journal.get("m-0") is not None  # this thread's connection, opened and kept
    journal.close()
    assert journal.get("m-1") is not None  # opened again after close
    journal.close()


def test_close_waits_for_a_statement_another_thread_is_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal closed by one thread never frees the connection under another's statement.

    The renewing thread is held inside its statement (its clock is read there); the closing
    thread waits for it, and its statement ends as if nobody had closed anything. Freeing an
    sqlite3 connection in the middle of a call takes the process down.
    """
    watched = watched_connections(HeldConnection)
    monkeypatch.setattr("a2a_client_errors.journal.HeldConnection", watched)
    inside, leave = threading.Event(), threading.Event()

    def clock() -> float:
        if threading.current_thread().name == "renewer":
            inside.set()
            leave.wait(30)
        return 1_800_000_000.0

    journal = SqliteJournal(tmp_path / "sends.db", clock=clock, lease=10.0)
    journal.claim(entry("m-1"), "a")
    renewed = renewed_while_closed(journal, watched.waited, inside, leave)
    assert renewed == [1]
    assert journal.get("m-1") is not None  # opened again after close
    journal.close()


def test_close_writes_the_closes_handed_over_first(tmp_path: Path, clock: FakeClock) -> None:
    """A release handed to the closer thread is written before `close` returns, not cut by it."""
    closing = threading.Event()

    class Late(SqliteJournal):
        def release(self, message_id: str, owner: str, note: str = "") -> bool:
            closing.wait(30)  # written only once the journal is being closed
            return super().release(message_id, owner, note)

        def close(self) -> None:
            closing.set()
            super().close()

    journal = Late(tmp_path / "sends.db", clock=clock, lease=10.0)
    keeper = LeaseKeeper(journal)
    journal.claim(entry("m-1"), keeper.owner)
    keeper.hold()
    keeper.close_soon("m-1", lambda: journal.release("m-1", keeper.owner, "unknown"))
    journal.close()
    keeper.stop()
    other = sqlite3.connect(tmp_path / "sends.db")  # not a journal: it waits for no close
    try:
        rows = other.execute("SELECT owner, note FROM a2a_sends").fetchall()
    finally:
        other.close()
    assert rows == [(None, "unknown")]
