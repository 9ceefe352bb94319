"""What the embedded a2a-sdk peer is made of, besides a2a-sdk: its ledger, stores and dialect.

* `Ledger` records what the agent did (executor runs per messageId, tasks made, held work, the
  last state stored of each task), thread-safe, for the test thread to read;
* `LedgerTaskStore` wraps a2a-sdk's ``TaskStore``: each save noted in the ledger, with its
  owner, so that the peer reads every task whoever owns it;
* `RequestRecorder` (an ASGI middleware) keeps the headers each request carried, and
  `SeenRequest` is one of them;
* `PeerDialect` is how the peer's server departs from a2a-sdk: its hooks are given a2a-sdk's
  own parts and return them (this base class: a2a-sdk as it is) or parts that wrap them;
* `queue_shut_down` is the one name of a2a-sdk the peer reads that a2a-sdk does not export
  (read here, not through the client door's compatibility module).

The modules of a2a-sdk and Starlette are imported when a part is built or called, never when
this module is imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._sdk_line import UnsupportedSdkError, installed_version

if TYPE_CHECKING:
    import builtins

__all__ = [
    "Ledger",
    "LedgerTaskStore",
    "PeerDialect",
    "RequestRecorder",
    "SeenRequest",
    "queue_shut_down",
]

_CREDENTIAL_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key"}
)
_RECORDER_LIMIT: Final = 10_000


# --------------------------------------------------------------------------------------------
# What requests carried
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeenRequest:
    """One HTTP request a recorded server received.

    Its ``repr`` hides the values of credential headers (``Authorization``, cookies, API
    keys), so that a failing assertion never prints them.

    Attributes:
        method: The HTTP method.
        path: The path, without the query.
        headers: ``(name, value)`` pairs as received, names lower-cased.
    """

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), or None.

        Args:
            name: The header's name.
        """
        wanted = name.lower()
        return next((value for key, value in self.headers if key == wanted), None)

    @property
    def header_names(self) -> frozenset[str]:
        """The lower-cased names of the headers received."""
        return frozenset(key for key, _ in self.headers)

    def __repr__(self) -> str:
        shown = tuple(
            (key, "<redacted>" if key in _CREDENTIAL_HEADERS else value)
            for key, value in self.headers
        )
        return f"SeenRequest(method={self.method!r}, path={self.path!r}, headers={shown!r})"


class RequestRecorder:
    """An ASGI middleware that keeps the method, path and headers of each HTTP request.

    It keeps the last ``limit`` requests (memory stays bounded under a benchmark) and never
    logs anything. Read them with `seen`, from any thread.

    Args:
        app: The ASGI app it stands in front of.
        limit: How many requests to keep.
    """

    def __init__(self, app: Any, *, limit: int = _RECORDER_LIMIT) -> None:
        self.app = app
        self._seen: deque[SeenRequest] = deque(maxlen=limit)
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Record an HTTP request's head, then let the app serve it."""
        if scope.get("type") == "http":
            headers = tuple(
                (bytes(key).decode("latin-1").lower(), bytes(value).decode("latin-1"))
                for key, value in scope.get("headers", ())
            )
            seen = SeenRequest(str(scope.get("method", "")), str(scope.get("path", "")), headers)
            with self._lock:
                self._seen.append(seen)
        await self.app(scope, receive, send)

    def seen(self) -> list[SeenRequest]:
        """The requests kept, oldest first."""
        with self._lock:
            return list(self._seen)


# --------------------------------------------------------------------------------------------
# What the agent did
# --------------------------------------------------------------------------------------------


@dataclass
class _Waiter:
    """One waiter on the agent's loop: a held run, or a run waiting for a stored state."""

    key: str
    """The messageId of a held run ("" for a state waiter)."""
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event


def _wake(hold: _Waiter) -> None:
    """Set a waiter's event on its own loop (from any thread)."""
    with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
        hold.loop.call_soon_threadsafe(hold.event.set)


class Ledger:
    """What an agent did, written from its event loop and read from any thread.

    * executor runs per messageId (`executions`), and the tasks each run made
      (`tasks_started_by`);
    * held work (`hold`, `release`, `held`, `wait_held`);
    * the last state stored of each task (`state`, `wait_state`, and `stored` on the loop).

    Waiting methods take a timeout, a guard against a test that would otherwise hang, and
    raise `TimeoutError` when it passes; they never sleep.
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._executions: Counter[str] = Counter()
        self._started: dict[str, list[str]] = {}
        self._origin: dict[str, str] = {}
        self._holds: list[_Waiter] = []
        self._released: set[str] = set()
        self._closed = False
        self._states: dict[str, str] = {}
        self._state_waits: list[tuple[str, str, _Waiter]] = []

    # -- executions --------------------------------------------------------------------------

    def executed(self, message_id: str, task_id: str | None) -> None:
        """Count one executor run for ``message_id``; ``task_id`` the task it makes, if any.

        Args:
            message_id: The messageId of the message run.
            task_id: The id of the new task the run makes, or None (a follow-up to an
                existing task, or an answer that is a Message).
        """
        with self._lock:
            self._executions[message_id] += 1
            if task_id:
                self._started.setdefault(message_id, []).append(task_id)
                self._origin[task_id] = message_id
            self._lock.notify_all()

    @property
    def executions(self) -> Counter[str]:
        """Executor runs per messageId (a copy: it does not change under the reader)."""
        with self._lock:
            return Counter(self._executions)

    def tasks_started_by(self, message_id: str) -> list[str]:
        """The ids of the tasks the runs of ``message_id`` made, in order.

        What "the right task" of a send is, whatever the task's history shows.

        Args:
            message_id: A messageId.
        """
        with self._lock:
            return list(self._started.get(message_id, ()))

    def started_by(self, task_id: str) -> str | None:
        """The messageId whose run made task ``task_id``, or None (not made by a run).

        Args:
            task_id: A task id.
        """
        with self._lock:
            return self._origin.get(task_id)

    # -- held work ---------------------------------------------------------------------------

    async def hold(self, message_id: str) -> None:
        """Wait, on the agent's loop, until ``message_id`` is released (or the ledger closes).

        Returns at once when ``message_id`` was released before it got here, or the ledger
        is closed.

        Args:
            message_id: The messageId of the message being run.
        """
        hold = _Waiter(message_id, asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            if self._closed or message_id in self._released:
                return
            self._holds.append(hold)
            self._lock.notify_all()
        try:
            await hold.event.wait()
        finally:
            with self._lock:
                if hold in self._holds:
                    self._holds.remove(hold)
                self._lock.notify_all()

    def release(self, message_id: str | None = None) -> int:
        """Let held work go on: that of ``message_id``, or all that is held now (None).

        A ``message_id`` not held yet is remembered: its run will not hold when it comes
        (the release cannot be lost to a race with the run). ``None`` releases only what is
        held at the time of the call.

        Args:
            message_id: A messageId, or None for every held run.

        Returns:
            How many held runs were released.
        """
        with self._lock:
            chosen = [h for h in self._holds if message_id is None or h.key == message_id]
            if message_id is not None and not chosen:
                self._released.add(message_id)
            for hold in chosen:
                self._holds.remove(hold)
                _wake(hold)
            self._lock.notify_all()
            return len(chosen)

    def close(self) -> None:
        """Release every held run and wait, now and from now on (the agent is stopping)."""
        with self._lock:
            self._closed = True
            waits, self._state_waits = self._state_waits, []
            for _, _, wait in waits:
                _wake(wait)
        self.release()

    def held(self) -> list[str]:
        """The messageIds of the runs held now, in the order they were held (repeats kept)."""
        with self._lock:
            return [hold.key for hold in self._holds]

    def wait_held(
        self, count: int = 1, *, message_id: str | None = None, timeout: float = 10.0
    ) -> list[str]:
        """Wait until at least ``count`` runs (of ``message_id``, or of any) are held.

        Args:
            count: How many held runs to wait for.
            message_id: Count only the runs of this messageId.
            timeout: Seconds to wait at most (a guard, not a measure).

        Returns:
            The messageIds held now (`held`).

        Raises:
            TimeoutError: If fewer are held when ``timeout`` passes.
        """

        def enough() -> bool:
            matching = [h for h in self._holds if message_id in (None, h.key)]
            return len(matching) >= count

        with self._lock:
            if not self._lock.wait_for(enough, timeout):
                raise TimeoutError(f"fewer than {count} runs were held within {timeout:g}s")
            return [hold.key for hold in self._holds]

    # -- task states -------------------------------------------------------------------------

    def saved(self, task_id: str, state: str) -> None:
        """Note that task ``task_id`` was stored in ``state`` (a ``TaskState`` name).

        Args:
            task_id: The task's id.
            state: Its state, e.g. ``"TASK_STATE_WORKING"``.
        """
        with self._lock:
            self._states[task_id] = state
            waits = [w for w in self._state_waits if (w[0], w[1]) == (task_id, state)]
            for wait in waits:
                self._state_waits.remove(wait)
                _wake(wait[2])
            self._lock.notify_all()

    async def stored(self, task_id: str, state: str) -> None:
        """Wait, on the agent's loop, until task ``task_id`` is stored in ``state``.

        What a run awaits before it holds, so that a held task is always in the store. Returns
        at once when the ledger is closed.

        Args:
            task_id: A task id.
            state: A ``TaskState`` name.
        """
        wait = _Waiter("", asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            if self._closed or self._states.get(task_id) == state:
                return
            self._state_waits.append((task_id, state, wait))
        try:
            await wait.event.wait()
        finally:
            with self._lock:
                self._state_waits = [w for w in self._state_waits if w[2] is not wait]

    def state(self, task_id: str) -> str | None:
        """The last state stored of task ``task_id``, or None (never stored).

        Args:
            task_id: A task id.
        """
        with self._lock:
            return self._states.get(task_id)

    def wait_state(self, task_id: str, state: str, *, timeout: float = 10.0) -> None:
        """Wait until task ``task_id`` is stored in ``state``.

        Args:
            task_id: A task id.
            state: A ``TaskState`` name, e.g. ``"TASK_STATE_COMPLETED"``.
            timeout: Seconds to wait at most (a guard, not a measure).

        Raises:
            TimeoutError: If it is not in that state when ``timeout`` passes.
        """
        with self._lock:
            if not self._lock.wait_for(lambda: self._states.get(task_id) == state, timeout):
                now = self._states.get(task_id)
                raise TimeoutError(f"task {task_id} is {now}, not {state}, after {timeout:g}s")


# --------------------------------------------------------------------------------------------
# The task store
# --------------------------------------------------------------------------------------------


def _state_name(task: Any) -> str:
    """The name of a task's state (``TASK_STATE_...``)."""
    from a2a.types import TaskState  # noqa: PLC0415

    return str(TaskState.Name(task.status.state))


class LedgerTaskStore:
    """An a2a-sdk ``TaskStore`` that notes each save in the ledger, and who owns each task.

    Each save is stored as it is in ``inner`` and noted (`Ledger.saved`), with the owner that
    made it, so that `task_ids` and `read` see every task whoever owns it.

    Args:
        inner: The a2a-sdk ``TaskStore`` that keeps the tasks (e.g. ``InMemoryTaskStore``).
        ledger: Where saves are noted.
    """

    def __init__(self, inner: Any, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger
        self._owners: dict[str, Any] = {}

    async def save(self, task: Any, context: Any) -> None:
        """Store ``task`` as it is, and note it.

        Args:
            task: The a2a-sdk ``Task``.
            context: The ``ServerCallContext`` of the call that saves it (its owner).
        """
        await self.inner.save(task, context)
        if task.id not in self._owners:  # the owner only, not the request's headers and state
            self._owners[task.id] = type(context)(user=context.user, tenant=context.tenant)
        self.ledger.saved(task.id, _state_name(task))

    async def get(self, task_id: str, context: Any) -> Any:
        """The task ``task_id`` of the caller, as stored, or None.

        Args:
            task_id: The task's id.
            context: The caller's ``ServerCallContext``.
        """
        return await self.inner.get(task_id, context)

    async def list(self, params: Any, context: Any) -> Any:
        """The caller's tasks, as the wrapped store lists them.

        Args:
            params: The ``ListTasksRequest``.
            context: The caller's ``ServerCallContext``.
        """
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: Any) -> None:
        """Delete task ``task_id`` of the caller.

        Args:
            task_id: The task's id.
            context: The caller's ``ServerCallContext``.
        """
        await self.inner.delete(task_id, context)
        if await self.inner.get(task_id, self._owners.get(task_id, context)) is None:
            self._owners.pop(task_id, None)

    def task_ids(self) -> builtins.list[str]:
        """The ids of every task stored, whoever owns it, in the order first stored.

        Call it on the agent's event loop (the store is written there).
        """
        return list(self._owners)

    async def read(self, task_id: str) -> Any:
        """Task ``task_id`` as stored, whoever owns it, or None.

        Args:
            task_id: A task id.
        """
        owner = self._owners.get(task_id)
        return None if owner is None else await self.inner.get(task_id, owner)


# --------------------------------------------------------------------------------------------
# The dialect
# --------------------------------------------------------------------------------------------


def queue_shut_down() -> type[Exception]:
    """The exception an a2a-sdk server's closed event queue raises (``QueueShutDown``).

    The one name of a2a-sdk the peer reads that a2a-sdk does not export:
    ``a2a.server.events.event_queue`` holds it in a2a-sdk 1.0.0 to 1.3.0 (asyncio's from
    Python 3.13, culsans' before).

    Raises:
        UnsupportedSdkError: the module does not hold it.
    """
    from a2a.server.events import event_queue  # noqa: PLC0415 (the extra is installed here)

    found = getattr(event_queue, "QueueShutDown", None)
    if found is None:
        what = "a2a.server.events.event_queue.QueueShutDown"
        raise UnsupportedSdkError(installed_version(), what)
    shut_down: type[Exception] = found
    return shut_down


class PeerDialect:
    """How the embedded peer's server departs from a2a-sdk 1.x; this class departs in nothing.

    ``EmbeddedPeer(dialect=...)`` takes an instance of it or of a subclass, which overrides the
    hooks below (and may make the flags fields of a dataclass): a server that stores tasks
    otherwise, answers ListTasks otherwise, refuses some callers, ... Every hook is given
    a2a-sdk's own part and returns it (as here) or a part that wraps it; the peer builds its
    servers from what they return.

    Attributes:
        message_only: True: the agent answers every message with a Message; no task is made.
        hold_all: True: every message is held as a message whose first text part is
            ``"hold"`` is (see `EmbeddedPeer`).
        separate_stores: True: each binding is served by its own request handler, executor
            and task store; a task made over one is unknown to the others.
        other_origin: True: a second HTTP server on another port of 127.0.0.1 serves the
            HTTP+JSON routes (same handler and store), listed last on the card, and both HTTP
            servers record the headers of every request (``EmbeddedPeer.seen_requests``).
    """

    __slots__ = ()

    message_only: bool = False
    hold_all: bool = False
    separate_stores: bool = False
    other_origin: bool = False

    def task_store(self, store: Any, ledger: Ledger) -> Any:
        """The ``TaskStore`` a binding's request handler is built on.

        Args:
            store: a2a-sdk's ``InMemoryTaskStore`` behind a `LedgerTaskStore` (every save
                noted); what is returned must save through it.
            ledger: What the agent did (which run made which task, say).
        """
        del ledger
        return store

    def request_handler(self, handler: Any) -> Any:
        """The ``RequestHandler`` the bindings serve: a2a-sdk's ``DefaultRequestHandler``.

        Args:
            handler: a2a-sdk's handler, on the store `task_store` returned.
        """
        return handler

    def jsonrpc_routes(self, handler: Any, path: str) -> list[Any]:
        """The Starlette routes of the JSON-RPC binding: a2a-sdk's own.

        Args:
            handler: The request handler (`request_handler`'s, maybe wrapped again).
            path: The endpoint's path, e.g. ``"/jsonrpc"``.
        """
        from a2a.server.routes import create_jsonrpc_routes  # noqa: PLC0415

        return list(create_jsonrpc_routes(handler, rpc_url=path))

    def rest_routes(self, handler: Any, prefix: str) -> list[Any]:
        """The Starlette routes of the HTTP+JSON binding: a2a-sdk's own.

        Args:
            handler: The request handler (`request_handler`'s, maybe wrapped again).
            prefix: The routes' path prefix, e.g. ``"/rest"``.
        """
        from a2a.server.routes import create_rest_routes  # noqa: PLC0415

        return list(create_rest_routes(handler, path_prefix=prefix))

    def grpc_interceptors(self) -> tuple[Any, ...]:
        """``grpc.aio`` server interceptors of the gRPC binding (after the peer's own): none."""
        return ()

    def grpc_context_builder(self) -> Any:
        """The context builder of a2a-sdk's ``GrpcHandler``; None: a2a-sdk's own."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
