"""`RedisJournal`: the contract on a real redis-server on 127.0.0.1, and what only Redis has.

The contract runs on one session-wide server, each test under a prefix of its own, with the
``clock`` fixture's time sent to the scripts. The rest: the server's own clock, the layout
(expiry of closed records, the schema key), a dead server, NOSCRIPT, several journal objects
on one server.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from a2a_client_errors.integrations.redis import RedisJournal
from a2a_client_errors.journal import SCHEMA_VERSION, JournalError, State
from tests.journal_contract import (
    JournalContract,
    clock_fixture,  # noqa: F401 (the fixture)
    entry,
    every_operation,
    roundtrip,
)
from tests.redis_server import (  # noqa: F401 (the fixtures)
    redis_server_fixture,
    shared_redis_fixture,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from a2a_client_errors.testing import FakeClock
    from tests.redis_server import RedisServer


@pytest.fixture(name="clients")
def clients_fixture() -> Iterator[Callable[..., redis.Redis]]:
    """Makes clients that do not retry by themselves; each is closed after the test."""
    made: list[redis.Redis] = []

    def make(url: str, **options: Any) -> redis.Redis:
        settings: dict[str, Any] = {"socket_timeout": 2.0, "socket_connect_timeout": 2.0}
        client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **{**settings, **options})
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture(name="prefix")
def prefix_fixture() -> str:
    """A prefix of this test's own: a journal of its own on the shared server."""
    return f"test:journal:{uuid.uuid4().hex}:"


@pytest.fixture
def journal(
    shared_redis: RedisServer,
    clients: Callable[..., redis.Redis],
    prefix: str,
    clock: FakeClock,
) -> RedisJournal:
    """A fresh journal on the shared server, its time the ``clock`` fixture's."""
    return RedisJournal(
        clients(shared_redis.url), prefix=prefix, clock=clock, lease=10.0, retention=3600.0
    )


class TestRedisContract(JournalContract):
    """The contract every store passes (tests/journal_contract.py)."""


def test_the_servers_clock_by_default(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """Without a clock, a record's times are the server's (this machine's, here)."""
    journal = RedisJournal(clients(shared_redis.url), prefix=prefix, lease=30.0)
    before = time.time()
    record, mine = journal.claim(entry(), "alice")
    after = time.time()
    assert mine
    # The server runs on this machine: its clock is this one's, give or take a little.
    assert before - 1 <= record.started <= after + 1
    assert record.lease_until == pytest.approx(record.started + 30.0)
    assert not record.lapsed
    assert journal.get("m-1") == record  # the claim's record, as the server wrote it
    assert journal.settle("m-1", "alice", State.TASK, made="t")
    closed = journal.get("m-1")
    assert closed is not None
    assert closed.closed_at is not None
    assert record.started <= closed.closed_at <= after + 1


def test_a_closed_record_expires_after_retention_and_open_ones_never(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """The layout: a closed record expires after retention, an open one never; the sets hold ids."""
    admin = clients(shared_redis.url)
    journal = RedisJournal(admin, prefix=prefix, retention=600.0)
    journal.claim(entry("open"), "alice")
    journal.claim(entry("done"), "alice")
    journal.settle("done", "alice", State.MESSAGE)
    assert admin.ttl(f"{prefix}rec:open") == -1
    assert 590 <= admin.ttl(f"{prefix}rec:done") <= 600
    assert admin.zrange(f"{prefix}open", 0, -1) == [b"open"]
    assert admin.zrange(f"{prefix}closed", 0, -1) == [b"done"]
    assert admin.smembers(f"{prefix}owner:alice") == {b"open"}


def test_retention_zero_keeps_closed_records_until_purged(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str, clock: FakeClock
) -> None:
    """``retention=0``: no expiry; the next purge deletes the record."""
    admin = clients(shared_redis.url)
    journal = RedisJournal(admin, prefix=prefix, retention=0.0, clock=clock)
    journal.claim(entry(), "alice")
    journal.settle("m-1", "alice", State.TASK, made="t")
    assert admin.ttl(f"{prefix}rec:m-1") == -1
    assert journal.get("m-1") is not None
    assert journal.purge() == 1
    assert journal.get("m-1") is None


def test_purge_counts_what_it_deleted_in_batches(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str, clock: FakeClock
) -> None:
    """A purge past one script's batch goes on until all that is old is deleted, and counts it."""
    journal = RedisJournal(clients(shared_redis.url), prefix=prefix, retention=10.0, clock=clock)
    for n in range(1_205):
        journal.claim(entry(f"m{n}"), "alice")
        journal.settle(f"m{n}", "alice", State.TASK, made="t")
    clock.advance(11)
    assert journal.purge() == 1_205
    assert journal.purge() == 0


def test_a_record_redis_expired_is_not_counted(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str, clock: FakeClock
) -> None:
    """A record Redis already expired is not counted again by purge (its id is dropped)."""
    admin = clients(shared_redis.url)
    journal = RedisJournal(admin, prefix=prefix, retention=10.0, clock=clock)
    journal.claim(entry(), "alice")
    journal.settle("m-1", "alice", State.TASK, made="t")
    admin.delete(f"{prefix}rec:m-1")  # what Redis does when the expiry comes
    clock.advance(11)
    assert journal.purge() == 0
    assert admin.zcard(f"{prefix}closed") == 0


def test_the_schema_version_is_written(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """The first use writes the schema version under ``prefix + 'schema'``."""
    admin = clients(shared_redis.url)
    RedisJournal(admin, prefix=prefix).get("nothing")
    assert admin.get(f"{prefix}schema") == str(SCHEMA_VERSION).encode()


def test_a_newer_schema_is_refused(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """A newer schema fails every operation with JournalError, before anything is written."""
    admin = clients(shared_redis.url)
    journal = RedisJournal(admin, prefix=prefix)
    journal.claim(entry(), "alice")
    admin.set(f"{prefix}schema", SCHEMA_VERSION + 1)
    for call in (
        lambda: journal.get("m-1"),
        lambda: journal.claim(entry("other"), "bob"),
        lambda: journal.renew("alice"),
        journal.unsettled,
        journal.purge,
    ):
        with pytest.raises(JournalError, match="newer"):
            call()
    assert admin.exists(f"{prefix}rec:other") == 0  # refused before anything was written


def test_a_lost_script_cache_is_loaded_again(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], journal: RedisJournal
) -> None:
    """After SCRIPT FLUSH (a restart, a failover), the scripts are loaded again (NOSCRIPT)."""
    journal.claim(entry(), "alice")
    clients(shared_redis.url).script_flush()
    record = journal.get("m-1")
    assert record is not None
    assert record.owner == "alice"


def test_a_dead_server_fails_every_call_with_journal_error_at_once(
    redis_server: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """A killed server: every operation raises JournalError at once; a restarted one answers."""
    client = clients(redis_server.url, socket_timeout=0.5, socket_connect_timeout=0.5)
    journal = RedisJournal(client, prefix=prefix)
    journal.claim(entry(), "alice")
    redis_server.kill()
    started = time.monotonic()
    for call in every_operation(journal):
        with pytest.raises(JournalError, match="could not"):
            call()
    assert time.monotonic() - started < 8 * 0.5 + 2
    redis_server.start()  # back, empty: the journal answers again
    assert journal.get("m-1") is None


def test_a_frozen_server_fails_within_the_socket_timeout(
    redis_server: RedisServer, clients: Callable[..., redis.Redis], prefix: str
) -> None:
    """A server that answers nothing (SIGSTOP): JournalError within the client's socket timeout."""
    client = clients(redis_server.url, socket_timeout=0.2)
    journal = RedisJournal(client, prefix=prefix)
    journal.get("m-1")  # connected
    redis_server.pause()
    try:
        started = time.monotonic()
        with pytest.raises(JournalError, match="could not record the send"):
            journal.claim(entry(), "alice")
        assert time.monotonic() - started < 5
    finally:
        redis_server.resume()


def test_two_journal_objects_share_records(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str, clock: FakeClock
) -> None:
    """Two journal objects on one server and prefix share records; another prefix is apart."""
    journal = RedisJournal(clients(shared_redis.url), prefix=prefix, clock=clock)
    record = roundtrip(
        journal, lambda: RedisJournal(clients(shared_redis.url), prefix=prefix, clock=clock)
    )
    assert record.owner == "alice"
    other = RedisJournal(clients(shared_redis.url), prefix=prefix + "x:", clock=clock)
    assert other.get("shared") is None  # another prefix is another journal


def test_a_decoding_client_reads_the_same_records(
    shared_redis: RedisServer, clients: Callable[..., redis.Redis], prefix: str, clock: FakeClock
) -> None:
    """A client with ``decode_responses=True`` reads what a bytes client wrote, text intact."""
    raw = RedisJournal(clients(shared_redis.url), prefix=prefix, clock=clock)
    decoding = RedisJournal(
        clients(shared_redis.url, decode_responses=True), prefix=prefix, clock=clock
    )
    odd = "m-\u00e9-\U0001f600"
    written, _ = raw.claim(entry(odd), "o\u00e9")
    assert decoding.get(odd) == written
    assert [record.message_id for record in decoding.unsettled()] == [odd]
    claimed, mine = decoding.claim(entry("m-2"), "o")
    assert mine
    assert raw.get("m-2") == claimed


def test_from_url(shared_redis: RedisServer, prefix: str, clock: FakeClock) -> None:
    """``from_url`` makes a working journal on its own client, which ``close`` closes."""
    journal = RedisJournal.from_url(shared_redis.url, prefix=prefix, clock=clock, lease=5.0)
    try:
        record, mine = journal.claim(entry(), "alice")
        assert mine
        assert record.lease_until == pytest.approx(clock() + 5.0)
        assert prefix in repr(journal)
    finally:
        journal.close()
    journal.close()  # twice is fine


def test_nothing_is_connected_until_first_used(prefix: str) -> None:
    """Making a journal connects to nothing: the first operation fails, with JournalError."""
    journal = RedisJournal.from_url("redis://127.0.0.1:1/0", prefix=prefix, timeout=0.5)
    with pytest.raises(JournalError, match="could not read the record"):
        journal.get("m-1")
    journal.close()


def test_bad_arguments_are_refused() -> None:
    """Not a redis-py client, an asyncio client, a bad lease or retention: refused at once."""
    with pytest.raises(TypeError, match="redis-py client"):
        RedisJournal(object())
    with pytest.raises(ValueError, match="lease"):
        RedisJournal(redis.Redis(), lease=0)
    with pytest.raises(ValueError, match="retention"):
        RedisJournal(redis.Redis(), retention=-1)
    with pytest.raises(TypeError, match="sync"):
        RedisJournal(redis.asyncio.Redis())


def test_redis_is_imported_only_by_from_url() -> None:
    """Importing the integration imports no redis-py: only ``from_url`` does."""
    code = (
        "import sys\n"
        "from a2a_client_errors.integrations.redis import RedisJournal\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'redis'], sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)  # noqa: S603
