"""The in-flight journal: what a send is, as recorded before its first byte, and its protocol.

A journal keeps one record per messageId of a send that creates work. The Guard writes it
before the first attempt leaves (`Journal.claim`), keeps it leased while the call runs (the
`LeaseKeeper` renews every lease a process holds), and closes it with what came back
(`Journal.settle`): the task the answer named, a Message, or a refusal that proves nothing
was processed. A record whose answer is unknown stays open, its lease released
(`Journal.release`), for the next sender or `Guard.recover` to look up.

The stores (`a2a_client_errors.journal.SqliteJournal`, and `RedisJournal`, `PostgresJournal`
in the integrations) implement `Journal`; each keeps time by its own clock (the machine's for
SQLite, the server's for Redis and Postgres), so leases are compared on one clock. No store
keeps a request body: a record holds the body's digest (`digest_of`) and the message's ids.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import hashlib
import json
import logging
import os
import secrets
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

from a2a_client_errors._lookup import SentMessage
from a2a_client_errors._parsing import parse_json

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_RETENTION",
    "HEAD",
    "SCHEMA_VERSION",
    "Entry",
    "HeldConnection",
    "Journal",
    "JournalError",
    "JournalRecord",
    "LeaseKeeper",
    "Made",
    "Recovery",
    "State",
    "ThreadConnections",
    "digest_of",
    "entry_for",
    "message_id_for",
    "new_owner",
    "own_closes",
    "peer_key",
    "task_made",
]

_log = logging.getLogger("a2a_client_errors")

SCHEMA_VERSION: Final = 1
"""The version of the records' layout every store writes (and refuses to read past)."""
DEFAULT_LEASE: Final = 10.0
"""Seconds a sender's lease lasts unless renewed: a dead sender's lapses within this."""
DEFAULT_RETENTION: Final = 24 * 3600.0
"""Seconds a closed record is kept before it is deleted."""
CLOSER_IDLE: Final = 30.0
"""Seconds the closer thread waits for work before it ends (it starts again when needed)."""
PURGE_EVERY: Final = 60.0
"""Seconds between two purges of closed records past their retention, while sends run."""
HEAD: Final = "a2a_head"
"""Where an HTTP response of the doors keeps its stream's first event, parsed (``extensions``)."""
NOTE_MAX: Final = 200
"""Characters of a record's note that are kept."""


class State(str, enum.Enum):
    """Where a recorded send stands."""

    OPEN = "open"
    """Sent or being sent: held by its sender's lease, or (no owner, or the lease lapsed)
    waiting to be looked up: its answer is unknown."""
    TASK = "task"
    """Closed: its answer named a task (``made``)."""
    MESSAGE = "message"
    """Closed: the agent answered it with a Message, which leaves nothing to read back."""
    REFUSED = "refused"
    """Closed: nothing was processed (not sent, or refused by the agent or a hop): the same
    messageId may be sent again, as a new first attempt."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Entry:
    """What a send is, for the journal: recorded before its first byte.

    Attributes:
        message_id: the message's messageId (the record's key).
        digest: the digest of what is sent (`digest_of`): the same messageId with another
            body is refused.
        peer: where it goes (the Guard's peer key: the interface's URL for the httpx doors).
        context_id: its contextId, if it names one.
        task_id: its taskId, if it follows up a task.

    """

    message_id: str
    digest: str
    peer: str = "default"
    context_id: str | None = None
    task_id: str | None = None

    def sent_at(self, at: float | None) -> SentMessage:
        """The message's identity, sent at ``at`` (seconds since the epoch), for a look-up."""
        return SentMessage(self.message_id, self.context_id, self.task_id, at)


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One recorded send, as a store read it.

    Attributes:
        message_id: the messageId.
        peer: where it was sent.
        digest: the digest of what was sent (no body is kept).
        started: when it was first recorded, in seconds since the epoch (the store's clock).
        state: where it stands (`State`).
        owner: the sender holding its lease (None: nobody sends it now).
        lease_until: when that lease lapses (the store's clock).
        context_id: its contextId, if it named one.
        task_id: its taskId, if it followed up a task.
        made: the task its answer named (state ``task``), if known.
        note: why it ended as it did, for humans (our words, never the peer's).
        attempts: how many senders took it (the first, and each that took it over).
        closed_at: when it was closed (None while open).
        lapsed: whether, when read, nobody held it (no owner, or the lease had lapsed).

    """

    message_id: str
    peer: str
    digest: str
    started: float
    state: State
    owner: str | None
    lease_until: float
    context_id: str | None = None
    task_id: str | None = None
    made: str | None = None
    note: str = ""
    attempts: int = 1
    closed_at: float | None = None
    lapsed: bool = False

    @property
    def sent(self) -> SentMessage:
        """The message's identity, for a look-up (sent at ``started``)."""
        return SentMessage(self.message_id, self.context_id, self.task_id, self.started)

    @property
    def unknown(self) -> bool:
        """Whether it is open and nobody holds it: its outcome waits to be looked up."""
        return self.state is State.OPEN and self.lapsed

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (the shell's ``a2a-errors journal list --json``)."""
        return {
            "message_id": self.message_id,
            "peer": self.peer,
            "digest": self.digest,
            "started": self.started,
            "state": self.state.value,
            "owner": self.owner,
            "lease_until": self.lease_until,
            "context_id": self.context_id,
            "task_id": self.task_id,
            "made": self.made,
            "note": self.note,
            "attempts": self.attempts,
            "closed_at": self.closed_at,
            "lapsed": self.lapsed,
        }


class JournalError(Exception):
    """A journal could not be read or written (a read-only path, a store that is down).

    Raised by the stores; a guarded call turns it into `JournalUnavailable` before anything
    is sent.
    """


@runtime_checkable
class Journal(Protocol):
    """What the Guard asks of a journal store. Every method is atomic; each raises `JournalError`.

    Attributes:
        lease: seconds a lease lasts unless renewed.
        retention: seconds a closed record is kept.

    """

    lease: float
    retention: float

    def claim(self, entry: Entry, owner: str) -> tuple[JournalRecord, bool]:
        """Record ``entry`` for ``owner``, unless its messageId has a record.

        Returns the record and whether it is ``owner``'s new claim. A record closed as
        ``refused`` is replaced by the claim (nothing was processed); any other stands.
        """
        ...

    def take_over(self, message_id: str, owner: str) -> JournalRecord | None:
        """Lease an open record nobody holds to ``owner`` (None: it is held, closed, or gone)."""
        ...

    def renew(self, owner: str) -> int:
        """Renew the lease of every open record ``owner`` holds; returns how many."""
        ...

    def settle(
        self, message_id: str, owner: str, state: State, *, made: str | None = None, note: str = ""
    ) -> bool:
        """Close a record ``owner`` holds as ``state`` (False: ``owner`` does not hold it)."""
        ...

    def release(self, message_id: str, owner: str, note: str = "") -> bool:
        """Leave a record ``owner`` holds open, held by nobody: its outcome is unknown."""
        ...

    def get(self, message_id: str) -> JournalRecord | None:
        """The record of ``message_id``, if any."""
        ...

    def unsettled(self, *, limit: int = 100) -> list[JournalRecord]:
        """Open records, oldest first (held or not), at most ``limit``."""
        ...

    def purge(self) -> int:
        """Delete the records closed longer than ``retention`` ago; returns how many."""
        ...

    def close(self) -> None:
        """Let go of the store's connections (the records stay).

        The closes this process's sends handed over (`LeaseKeeper.close_soon`) are written
        first; a statement another thread is running is never cut under it.
        """
        ...


# --- keys, digests, what an answer made ------------------------------------------------------

_NAMESPACE: Final = uuid.UUID("5b0c43a4-5d0e-4b1e-9a55-a2a0c11e0e75")


def message_id_for(run_id: object, step: object) -> str:
    """A messageId derived from the orchestrator's own run and step: the same in any process.

    A crash does not mint a new one, so a restarted orchestrator sends the same step with the
    same messageId, and its journal knows it (a UUID, version 5, of ``run_id`` and ``step``).
    """
    return str(uuid.uuid5(_NAMESPACE, f"{run_id}\x1f{step}"))


def _as_json(value: object) -> Any:
    """``value`` as JSON data: a mapping as it is, a pydantic model or a protobuf message."""
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic (a2a-sdk 0.3)
        return dump(mode="json", by_alias=True, exclude_none=True)
    if hasattr(value, "DESCRIPTOR"):  # protobuf (a2a-sdk 1.x)
        from google.protobuf import json_format  # noqa: PLC0415 (only for protobuf)

        return json_format.MessageToDict(value)  # type: ignore[arg-type]
    msg = f"cannot read a {type(value).__name__} as a message"
    raise TypeError(msg)


def digest_of(value: object) -> str:
    """The digest a record keeps of what is sent: SHA-256 of its canonical JSON (32 hex digits).

    ``value`` is JSON data, a pydantic model or a protobuf message; the same content gives
    the same digest in any process, whatever its keys' order.
    """
    canonical = json.dumps(
        _as_json(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _field(data: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = data.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def entry_for(message: object, peer: str = "default") -> Entry | None:
    """The journal's entry for a message sent to ``peer`` (None: it has no messageId).

    ``message`` is a message as JSON (``messageId`` or ``message_id``), an a2a-sdk Message of
    either line, or a `SentMessage` (then its digest is of its ids alone).
    """
    if isinstance(message, SentMessage):
        if not message.message_id:
            return None
        ids = [message.message_id, message.context_id, message.task_id]
        return Entry(message.message_id, digest_of(ids), peer, message.context_id, message.task_id)
    try:
        data = _as_json(message)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    message_id = _field(data, "messageId", "message_id")
    if message_id is None:
        return None
    return Entry(
        message_id,
        digest_of(data),
        peer,
        _field(data, "contextId", "context_id"),
        _field(data, "taskId", "task_id"),
    )


@dataclass(frozen=True, slots=True)
class Made:
    """What a send's answer made: a task (``task_id``), or a Message (``task_id`` None)."""

    task_id: str | None


MESSAGE_MADE: Final = Made(None)


def _made_of(data: object, depth: int = 0) -> Made | None:
    if depth > 3 or not isinstance(data, dict) or "error" in data:
        return None
    if "result" in data:  # a JSON-RPC answer
        return _made_of(data["result"], depth + 1)
    for key in ("task", "statusUpdate", "status_update", "artifactUpdate", "artifact_update"):
        if isinstance(data.get(key), dict):  # an HTTP+JSON answer, a 1.x stream event
            return _made_of(data[key], depth + 1)
    if isinstance(data.get("message"), dict) and "status" not in data:
        return MESSAGE_MADE  # an HTTP+JSON answer holding a Message
    kind = data.get("kind")
    if kind == "message" or (_field(data, "messageId", "message_id") and "role" in data):
        return MESSAGE_MADE
    if kind in {"status-update", "artifact-update"} or ("id" not in data and "taskId" in data):
        task_id = _field(data, "taskId", "task_id")  # an update event names its task
    elif kind == "task" or "status" in data:
        task_id = _field(data, "id")
    else:
        return None
    return None if task_id is None else Made(task_id)


def task_made(value: object) -> Made | None:
    """What a send's answer made, read from the answer as a door hands it back (never raises).

    JSON data (a JSON-RPC answer, an HTTP+JSON one, a task or a message), an HTTP response
    (its JSON body, or the first event a door kept of a stream), an a2a-sdk object
    of either line (a Task, a Message, a 1.x ``SendMessageResponse`` or stream response, a
    0.3 ``(Task, update)`` pair). None when it cannot tell (then the record stays open, for
    the next sender to look up).
    """
    try:
        if isinstance(value, tuple) and value:
            value = value[0]
        if hasattr(value, "status_code"):  # an HTTP response: its body, or a stream's head
            head = getattr(value, "extensions", {}).get(HEAD)
            if head is not None:
                return _made_of(head)
            content = getattr(value, "content", None)  # a stream not read raises: unknown
            return _made_of(parse_json(content)) if isinstance(content, bytes) else None
        fields = getattr(value, "DESCRIPTOR", None)
        has_field = getattr(value, "HasField", None)
        if fields is not None and callable(has_field):  # a 1.x response: which field is set
            names = {field.name for field in getattr(fields, "fields", ())}
            for name in ("task", "message", "status_update", "artifact_update"):
                if name in names and has_field(name):
                    return task_made(getattr(value, name))
        if not isinstance(value, dict):
            value = _as_json(value)
        return _made_of(value)
    except Exception:  # an answer we cannot read tells nothing
        return None


@dataclass(frozen=True, slots=True)
class Recovery:
    """What `Guard.recover` made of one open record.

    Attributes:
        record: the record, as it stands after the recovery.
        outcome: ``found`` (its task was found: the record is closed with it), ``unknown``
            (the look-up could not tell: kept open, for a later recovery), ``absent`` (the
            agent's word says it made nothing: kept open, and the next send of the
            messageId goes out), ``held`` (a live sender holds it: left alone), ``skipped``
            (no look-up was given for it).
        answer: for ``found``, the task as the door answers it (the lost answer).
        why: for the others, why, for humans.

    """

    record: JournalRecord
    outcome: str
    answer: object = None
    why: str = ""

    @property
    def task_id(self) -> str | None:
        """The task the record holds, if found."""
        return self.record.made


# --- leases ---------------------------------------------------------------------------------


def new_owner() -> str:
    """A sender's name: the host, the process, and a random part (unique to each Guard)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class LeaseKeeper:
    """Renews the leases one owner holds, and writes the closes handed to it, off the callers' path.

    `hold` when a record is claimed. One daemon thread renews every ``lease / 3`` seconds
    while any is held, and purges closed records past their retention at most once a
    minute. A process that dies stops renewing: its leases lapse. After a fork the child
    is a sender of its own (a new owner), holding nothing.

    `close_soon` hands a record's close to a second daemon thread, which writes it at once
    while the caller goes on (a Guard hands it its releases, and the settles its store
    refused; a settle is otherwise written before the call returns). Until it is written
    the record stays held (renewed), so other senders wait for it; a send of the same
    messageId from this process waits for it first (`own_closes`), and `flush` waits for
    all. A crash before the write leaves the record open: the next sender takes it over and
    looks it up, never sending it twice. The closes left at the interpreter's exit are
    written first (at most 2 s).
    """

    def __init__(self, journal: Journal, *, interval: float | None = None) -> None:
        self.journal = journal
        self.interval = interval if interval is not None else max(journal.lease / 3, 0.05)
        self._lock = threading.Lock()
        self._held = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._owner = new_owner()
        self.renewals = 0
        self.failures = 0
        self.on_failure: Callable[[BaseException], None] | None = None
        self._deferred: list[Callable[[], object]] = []
        self._purged = time.monotonic()
        self._queue: deque[
            tuple[
                str,
                Callable[[], object],
                threading.Event,
                Callable[[BaseException | None], None] | None,
            ]
        ] = deque()
        self._work = threading.Condition(self._lock)
        self._closer: threading.Thread | None = None
        _KEEPERS.add(self)

    @property
    def owner(self) -> str:
        """The name this process holds its leases under (a new one after a fork)."""
        if os.getpid() != self._pid:
            with self._lock:
                if os.getpid() != self._pid:
                    self._pid, self._owner = os.getpid(), new_owner()
                    self._held, self._thread, self._closer = 0, None, None
                    self._wake = threading.Event()
                    self._queue.clear()
        return self._owner

    @property
    def held(self) -> int:
        """How many records this process holds now."""
        return self._held

    def hold(self) -> None:
        """One more record held: renewals run while any is."""
        _ = self.owner  # a fork's child renews under its own name
        with self._lock:
            self._held += 1
        self._start()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._wake.clear()
                thread = threading.Thread(target=self._run, name="a2a-journal-leases", daemon=True)
                self._thread = thread
                thread.start()

    def drop(self) -> None:
        """One record fewer held."""
        with self._lock:
            self._held = max(0, self._held - 1)

    def defer(self, write: Callable[[], object]) -> None:
        """A closing write that failed (or must not wait): retried from the thread until done.

        Until it is done, the record stays held and renewed: other senders wait for it.
        """
        with self._lock:
            self._deferred.append(write)
            self._held += 1  # the thread runs until the write is done
        self._start()

    def pending(self) -> int:
        """How many closing writes wait to be retried."""
        return len(self._deferred)

    def close_soon(
        self,
        message_id: str,
        write: Callable[[], object],
        then: Callable[[BaseException | None], None] | None = None,
    ) -> None:
        """Write a held record's close from the closer thread, at once; the caller goes on.

        The record is let go (`drop`) once written. A write that fails is retried from the
        lease thread (`defer`) until it is done. ``then`` is told, from the closer thread,
        None once written, or what the write raised.
        """
        done = threading.Event()
        with self._work:
            _CLOSING[message_id] = done
            self._queue.append((message_id, write, done, then))
            if self._closer is None or not self._closer.is_alive():
                closer = threading.Thread(
                    target=self._close_all, name="a2a-journal-closes", daemon=True
                )
                self._closer = closer
                closer.start()
            self._work.notify()
        self._start()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every close this process handed over is written (or deferred).

        False when ``timeout`` seconds were not enough (see `own_closes`).
        """
        return own_closes(timeout=timeout)

    def _close_all(self) -> None:
        _CLOSER.writing = True
        while True:
            with self._work:
                while not self._queue:
                    if not self._work.wait(CLOSER_IDLE) and not self._queue:
                        self._closer = None
                        return
                message_id, write, done, then = self._queue.popleft()
            failed: BaseException | None = None
            try:
                write()
            except Exception as exc:  # retried from the lease thread until it is written
                failed = exc
                self.defer(write)
                _log.warning(
                    "a2a_client_errors: the journal could not close %r: %s", message_id, exc
                )
            if then is not None:  # told before the close counts as done: a flush sees it
                try:
                    then(failed)
                except Exception:  # an observer's bug never stops the closes
                    _log.exception("a2a_client_errors: a journal observer failed")
            self.drop()
            with self._lock:
                if _CLOSING.get(message_id) is done:
                    del _CLOSING[message_id]
            done.set()

    def tick(self) -> int:
        """Renew now (what the thread does each ``interval``); returns how many were renewed.

        The closing writes deferred are tried first, each once.
        """
        with self._lock:
            deferred, self._deferred = self._deferred, []
        for write in deferred:
            self._retry(write)
        try:
            renewed = self.journal.renew(self.owner)
        except Exception as exc:  # the next tick tries again; the lease may lapse meanwhile
            self.failures += 1
            _log.warning("a2a_client_errors: the journal's leases could not be renewed: %s", exc)
            if self.on_failure is not None:
                self.on_failure(exc)
            return 0
        self.renewals += 1
        if time.monotonic() - self._purged >= PURGE_EVERY:
            self._purged = time.monotonic()
            try:
                self.journal.purge()
            except Exception as exc:  # the records stay until the next purge
                _log.warning("a2a_client_errors: the journal could not delete old records: %s", exc)
        return renewed

    def _retry(self, write: Callable[[], object]) -> None:
        try:
            write()
        except Exception:  # tried again at the next tick
            with self._lock:
                self._deferred.append(write)
        else:
            self.drop()

    def _run(self) -> None:
        wake = self._wake
        while not wake.wait(self.interval):
            with self._lock:
                if self._held == 0 or wake is not self._wake:
                    self._thread = None
                    return
            self.tick()

    def stop(self) -> None:
        """Stop renewing (a journal closed): the thread ends at its next wake."""
        self._wake.set()


def peer_key(where: str) -> str:
    """The Guard's peer key of where a recorded send went: a URL's origin, else as it is."""
    parts = urlsplit(where)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return where
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return where
    return f"{parts.scheme}://{parts.hostname}:{port}"


def lapsed_of(owner: str | None, lease_until: float, now: float) -> bool:
    """Whether nobody holds a record: no owner, or its lease lapsed by ``now``."""
    return owner is None or lease_until <= now


def clip_note(note: str) -> str:
    """A record's note, cut to `NOTE_MAX` characters."""
    return note if len(note) <= NOTE_MAX else note[: NOTE_MAX - 1] + "…"


_KEEPERS: Final[weakref.WeakSet[LeaseKeeper]] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:  # pragma: no cover (runs as the interpreter exits)
    """Write the closes still pending as the interpreter exits (2 s at most in all)."""
    deadline = time.monotonic() + 2.0
    for keeper in list(_KEEPERS):
        keeper.flush(max(0.0, deadline - time.monotonic()))


_CLOSING: Final[dict[str, threading.Event]] = {}
"""The closes this process handed over and has not written yet, by messageId."""
# A fork's child has none of its parent's closer threads: it waits for none of their closes.
os.register_at_fork(after_in_child=_CLOSING.clear)
_CLOSER: Final = threading.local()
"""``writing`` is True on a closer thread (`LeaseKeeper.close_soon`), which writes the closes
one after another: there, `own_closes` waits for none (they wait for that very thread)."""


def own_closes(message_id: str | None = None, timeout: float = 10.0) -> bool:
    """Wait until this process's pending closes of ``message_id`` (None: all) are written.

    What a store's reads call first (`Journal.get`, `Journal.unsettled`), and a send before
    its claim, so that this process sees what its own sends ended in. Costs a dict lookup
    when none is pending. False when ``timeout`` seconds were not enough.

    On a closer thread (an observer told of a close, reading the journal) it waits for
    nothing: that thread writes the closes still pending, once the observer returns.
    """
    if not _CLOSING or getattr(_CLOSER, "writing", False):
        return True
    if message_id is not None:
        done = _CLOSING.get(message_id)
        return done is None or done.wait(timeout)
    deadline = time.monotonic() + timeout
    return all(done.wait(max(0.0, deadline - time.monotonic())) for done in list(_CLOSING.values()))


class _Closable(Protocol):
    def close(self) -> object: ...


C = TypeVar("C", bound=_Closable)


class HeldConnection(Generic[C]):
    """One thread's connection to a store, and the process that opened it.

    A fork's child opens its own: the parent's is never used nor closed there. ``ending``
    is the finalizer that closes it when its thread is gone (`ThreadConnections.add`).

    Its thread uses it inside ``with held as conn:``, and `close` waits for that use to end:
    a store closed by one thread while another thread's statement runs closes that
    connection after the statement, never under it (an sqlite3 or libpq connection freed
    in the middle of a call takes the process down).
    """

    __slots__ = ("__weakref__", "conn", "ending", "lock", "pid")

    def __init__(self, conn: C) -> None:
        self.conn = conn
        self.pid = os.getpid()
        self.ending: weakref.finalize[Any, Any] | None = None
        self.lock = threading.RLock()

    def __enter__(self) -> C:
        self.lock.acquire()
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.lock.release()

    def close(self) -> None:
        """Close it, in the process that opened it (whatever closing it raises is moot).

        Waits for the statement its thread is running, if any.
        """
        if self.ending is not None:
            self.ending.detach()
        if self.pid == os.getpid():
            with self.lock, contextlib.suppress(Exception):  # closing what may be gone
                self.conn.close()


class ThreadConnections:
    """The connections one store opened, one per thread: closed with it, or with their thread.

    A thread that ends (a worker of a pool, a thread of the caller's) leaves no connection
    open behind it, to be collected unclosed (Python 3.13 warns of an sqlite3 one). A
    connection inherited through a fork is kept, never closed in the child (it is the
    parent's), so that it is not collected as an unclosed connection either.
    """

    __slots__ = ("held", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: set[HeldConnection[Any]] = set()

    def add(self, wrapper: HeldConnection[Any]) -> None:
        """Hold ``wrapper``, the calling thread's, until that thread is gone."""
        with self.lock:
            self.held.add(wrapper)
        wrapper.ending = weakref.finalize(threading.current_thread(), self.drop, wrapper)

    def drop(self, wrapper: HeldConnection[Any]) -> None:
        """Close ``wrapper`` and hold it no longer (in the process that opened it)."""
        if wrapper.pid != os.getpid():
            return
        with self.lock:
            self.held.discard(wrapper)
        wrapper.close()

    def close_all(self) -> None:
        """Close every connection this process opened."""
        pid = os.getpid()
        with self.lock:
            mine = [wrapper for wrapper in self.held if wrapper.pid == pid]
            self.held.difference_update(mine)
        for wrapper in mine:
            wrapper.close()
