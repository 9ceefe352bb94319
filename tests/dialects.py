"""Dialects: how foreign A2A servers behave, applied to the embedded a2a-sdk peer (tests only).

A client that must never make two tasks of one logical send, and never hand back a wrong
task, meets servers that do not behave as a2a-sdk 1.x does: tasks without the user's message
in their history, listings without history or with trimmed history, no status timestamps,
agents that answer with a Message and make no task, sub-tasks that echo the user's message,
ListTasks refused to anonymous callers or missing altogether, a listing that is always empty,
one task store per binding, interfaces on another origin.

A `Dialect` is a set of such behaviours (fields, so that they combine: ``NO_TIMESTAMPS |
HELD``), a ``PeerDialect`` of `a2a_client_errors.testing.peer` whose hooks build the parts
below, and ``EmbeddedPeer(dialect=...)`` applies it to its real a2a-sdk server. Each behaviour
is made by wrapping a2a-sdk's own parts, never by writing a wire answer a2a-sdk can write
itself:

* `DialectTaskStore` wraps the ``TaskStore``: what is *stored* (no user message, no timestamp,
  the echoing sub-task);
* `DialectHandler` wraps the ``RequestHandler``: what is *answered* (the same shape on the
  answers of sends and streams, ListTasks without history, trimmed, or empty);
* `jsonrpc_routes` and `rest_routes` build a2a-sdk's Starlette routes as the dialect serves
  them (ListTasks gone, or refused to anonymous callers), `grpc_interceptors` and
  `grpc_context_builder` do the same for the gRPC binding.

What the agent did (``Ledger``) and the headers each request carried (``SeenRequest``) are the
peer's own, with or without a dialect.

The modules of a2a-sdk, Starlette and grpcio are imported when a part is built or called, never
when this module is imported.

The named dialects (module constants, and `trimmed_history` for any length):

* `A2A_SDK`: a2a-sdk 1.x as it is (the default);
* `NO_HISTORY`: a2a-java 1.2.0.Final, no user message in a task's history;
* `LIST_WITHOUT_HISTORY`: ListTasks leaves history out (GetTask keeps it);
* `TRIMMED_HISTORY`: GetTask and ListTasks answer the last message of history only;
* `NO_TIMESTAMPS`: no ``status.timestamp`` anywhere;
* `MESSAGE_ONLY`: every message answered with a Message, no task made;
* `SUBTASK_ECHO`, `SUBTASK_ECHO_FIRST`: a sub-task echoing the user's message, after an agent
  message or first;
* `LIST_NEEDS_USER`: a2a-go 2.3.1's default store, ListTasks refused to anonymous callers;
* `NO_LIST_TASKS`: A2A 0.3 agents, no ListTasks at all;
* `EMPTY_LIST`: a ListTasks stub that always answers an empty list;
* `SEPARATE_STORES`: one request handler and task store per binding;
* `OTHER_ORIGIN`: the card also lists an HTTP+JSON interface on another origin;
* `HELD`: every message held as ``"hold"`` is (see `EmbeddedPeer`).

`DIALECTS` maps a name to each, for parametrised tests.

Some peers answer in shapes a2a-sdk never writes; their captured wire shapes are module
constants, for test agents of your own (an ASGI app that answers with them):

* `EMPTY_EVENT_STREAM`: python-a2a 0.5.10, a ``200 text/event-stream`` holding one comment line
  and no event;
* `a2a_go_rest_stream_error`: a2a-go 2.3.1's HTTP+JSON stream refused before its first event
  (``200 text/event-stream``, one ``data: {"error": ...}`` event without an event name);
* `A2A_GO_NOT_FOUND`: a2a-go's (Go ``net/http``'s) plain-text page for a path no route serves;
* `A2A_GO_UNAUTHENTICATED_CODE`, `A2A_GO_UNAUTHORIZED_CODE`: a2a-go's JSON-RPC codes for auth
  failures, sent on HTTP 200.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from a2a_client_errors.testing.peer import PeerDialect

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping

    from a2a_client_errors.testing.peer import Ledger

__all__ = [
    "A2A_GO_NOT_FOUND",
    "A2A_GO_UNAUTHENTICATED_CODE",
    "A2A_GO_UNAUTHORIZED_CODE",
    "A2A_SDK",
    "DIALECTS",
    "EMPTY_EVENT_STREAM",
    "EMPTY_LIST",
    "HELD",
    "LIST_NEEDS_USER",
    "LIST_WITHOUT_HISTORY",
    "MESSAGE_ONLY",
    "NO_HISTORY",
    "NO_LIST_TASKS",
    "NO_TIMESTAMPS",
    "OTHER_ORIGIN",
    "SEPARATE_STORES",
    "SUBTASK_ECHO",
    "SUBTASK_ECHO_FIRST",
    "TRIMMED_HISTORY",
    "Dialect",
    "DialectHandler",
    "DialectTaskStore",
    "ListTasks",
    "SubtaskEcho",
    "a2a_go_rest_stream_error",
    "bearer_user",
    "grpc_context_builder",
    "grpc_interceptors",
    "jsonrpc_routes",
    "rest_routes",
    "trimmed_history",
]

ListTasks = Literal["served", "needs_user", "absent", "empty"]
"""How ListTasks is served: as a2a-sdk does, refused to anonymous callers, absent, or empty."""
SubtaskEcho = Literal["agent_first", "user_first"]
"""Where the echoed user message stands in the sub-task's history."""

_LIST_TASKS: Final = frozenset({"served", "needs_user", "absent", "empty"})
_SUBTASK_ECHO: Final = frozenset({"agent_first", "user_first"})
_TERMINAL: Final = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
_A2A_DOMAIN: Final = "a2a-protocol.org"
_ERROR_INFO_TYPE: Final = "type.googleapis.com/google.rpc.ErrorInfo"
_UNAUTHENTICATED: Final = "UNAUTHENTICATED"
A2A_GO_UNAUTHENTICATED_CODE: Final = -31401
"""a2a-go's JSON-RPC code for an unauthenticated caller (sent on HTTP 200)."""
A2A_GO_UNAUTHORIZED_CODE: Final = -31403
"""a2a-go's JSON-RPC code for a caller not allowed to (sent on HTTP 200)."""


# --------------------------------------------------------------------------------------------
# The dialect
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dialect(PeerDialect):
    """How a server departs from a2a-sdk 1.x; every field at its default is a2a-sdk itself.

    Dialects combine with ``|`` (``NO_TIMESTAMPS | HELD``): each field takes the value that
    departs from its default; two different departures of one field are refused.

    Attributes:
        user_message_in_history: False: the user's messages are never stored in a task's
            history, nor shown in any answer (agent messages stay).
        list_history: False: ListTasks answers every task with its history left out.
        history_limit: GetTask and ListTasks answer at most the last ``history_limit``
            messages of each task's history, whatever the request asks; None: no limit.
        timestamps: False: no ``status.timestamp`` is stored or answered, on tasks and on
            status updates.
        message_only: True: the agent answers every message with a Message; no task is made.
        subtask_echo: ``"agent_first"`` or ``"user_first"``: besides each task a message
            starts, the agent keeps a sub-task (id ``<task id>-sub``, same contextId) whose
            history holds an agent message and a copy of the user's message (same messageId),
            in that order or the other; it is updated after every update of its parent, so
            it is always the most recently updated of the two. None: no sub-task.
        list_tasks: ``"served"`` (a2a-sdk's ListTasks), ``"needs_user"`` (refused to a caller
            without an authenticated user, see `bearer_user`), ``"absent"`` (no such method or
            route), ``"empty"`` (always an empty list).
        separate_stores: True: each binding is served by its own request handler, executor
            and task store; a task made over one is unknown to the others.
        other_origin: True: a second HTTP server on another port of 127.0.0.1 serves the
            HTTP+JSON routes (same handler and store), listed last on the card, and both HTTP
            servers record the headers of every request (``EmbeddedPeer.seen_requests``).
        hold_all: True: every message is held as a message whose first text part is
            ``"hold"`` is.
    """

    user_message_in_history: bool = True
    list_history: bool = True
    history_limit: int | None = None
    timestamps: bool = True
    message_only: bool = False
    subtask_echo: SubtaskEcho | None = None
    list_tasks: ListTasks = "served"
    separate_stores: bool = False
    other_origin: bool = False
    hold_all: bool = False

    def __post_init__(self) -> None:
        limit: object = self.history_limit
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ValueError(f"history_limit must be None or an int >= 0: {self.history_limit!r}")
        if self.subtask_echo is not None and self.subtask_echo not in _SUBTASK_ECHO:
            raise ValueError(f"subtask_echo must be None or one of {sorted(_SUBTASK_ECHO)}")
        if self.list_tasks not in _LIST_TASKS:
            raise ValueError(f"list_tasks must be one of {sorted(_LIST_TASKS)}")

    def __or__(self, other: object) -> Dialect:
        if not isinstance(other, Dialect):
            return NotImplemented
        merged: dict[str, Any] = {}
        for spec in dataclasses.fields(self):
            mine, theirs = getattr(self, spec.name), getattr(other, spec.name)
            if theirs in (spec.default, mine):
                merged[spec.name] = mine
            elif mine == spec.default:
                merged[spec.name] = theirs
            else:
                raise ValueError(f"the dialects disagree on {spec.name}: {mine!r} and {theirs!r}")
        return Dialect(**merged)

    @property
    def shapes_tasks(self) -> bool:
        """Whether stored tasks differ from what a2a-sdk stores (user message or timestamp)."""
        return not (self.user_message_in_history and self.timestamps)

    # -- the peer's hooks (`PeerDialect`) ----------------------------------------------------

    def task_store(self, store: Any, ledger: Ledger) -> Any:
        """The peer's store, wrapped as the dialect stores tasks (`DialectTaskStore`)."""
        return DialectTaskStore(store, self, ledger)

    def request_handler(self, handler: Any) -> Any:
        """a2a-sdk's handler, wrapped as the dialect answers (`DialectHandler`)."""
        return DialectHandler(handler, self)

    def jsonrpc_routes(self, handler: Any, path: str) -> list[Any]:
        """The JSON-RPC routes as the dialect serves them (`jsonrpc_routes`)."""
        return jsonrpc_routes(handler, self, path)

    def rest_routes(self, handler: Any, prefix: str) -> list[Any]:
        """The HTTP+JSON routes as the dialect serves them (`rest_routes`)."""
        return rest_routes(handler, self, prefix)

    def grpc_interceptors(self) -> tuple[Any, ...]:
        """The gRPC interceptors that serve ListTasks as the dialect does (`grpc_interceptors`)."""
        return grpc_interceptors(self)

    def grpc_context_builder(self) -> Any:
        """The gRPC context builder of the dialect (`grpc_context_builder`), or None."""
        return grpc_context_builder(self)


def trimmed_history(keep: int = 1) -> Dialect:
    """GetTask and ListTasks answer at most the last ``keep`` messages of history.

    As servers that cap ``historyLength`` on their side: whatever the request asks, the older
    messages, the user's first among them, are left out.

    Args:
        keep: How many of the last messages to answer (0: none).
    """
    return Dialect(history_limit=keep)


A2A_SDK: Final = Dialect()
"""a2a-sdk 1.x (1.3.0) as it is: the user's message in history, timestamps, ListTasks."""
NO_HISTORY: Final = Dialect(user_message_in_history=False)
"""As a2a-java 1.2.0.Final: a new task's history never holds the user's message.

GetTask, ListTasks and the answers to sends show the task without it (agent messages stay):
a client cannot find the task by its messageId.
"""
LIST_WITHOUT_HISTORY: Final = Dialect(list_history=False)
"""A server whose ListTasks leaves history out (GetTask keeps it), as several servers do."""
TRIMMED_HISTORY: Final = trimmed_history(1)
"""A server that caps history on its side: GetTask and ListTasks keep the last message only."""
NO_TIMESTAMPS: Final = Dialect(timestamps=False)
"""Tasks without ``status.timestamp`` anywhere, as a2a-sdk's own ``new_task_from_user_message``
leaves them.

a2a-sdk's ``InMemoryTaskStore`` then drops such tasks from a ``statusTimestampAfter`` filter
and sorts them after every task that has a timestamp.
"""
MESSAGE_ONLY: Final = Dialect(message_only=True)
"""An agent that answers every message with a Message (no task, nothing to look up later),
as many simple agents built on any SDK do."""
SUBTASK_ECHO: Final = Dialect(subtask_echo="agent_first")
"""An orchestrating agent that keeps a sub-task in its store, in the same context, whose
history holds an agent message and then a copy of the user's message (same messageId); the
sub-task is updated after its parent, so it is the most recently updated task."""
SUBTASK_ECHO_FIRST: Final = Dialect(subtask_echo="user_first")
"""`SUBTASK_ECHO` whose sub-task's history starts with the copied user message: two tasks are
"started by" the same messageId."""
LIST_NEEDS_USER: Final = Dialect(list_tasks="needs_user")
"""As a2a-go 2.3.1's default task store: ListTasks from a caller without an authenticated user
is refused (JSON-RPC -31401 on HTTP 200, HTTP+JSON 401 UNAUTHENTICATED, gRPC UNAUTHENTICATED).

``Authorization: Bearer <token>`` (any non-empty token) makes the caller a user (see
`bearer_user`); tasks belong to the caller who made them, as in a2a-go.
"""
NO_LIST_TASKS: Final = Dialect(list_tasks="absent")
"""As A2A 0.3 agents (a2a-sdk 0.3, fasta2a, python-a2a): no ListTasks at all.

JSON-RPC answers -32601 (a2a-sdk's own method-not-found), HTTP+JSON has no route (Starlette's
plain 404, not an A2A body), gRPC answers UNIMPLEMENTED (the runtime's own).
"""
EMPTY_LIST: Final = Dialect(list_tasks="empty")
"""A server whose ListTasks is a stub: always ``tasks: []`` and an empty ``nextPageToken``."""
SEPARATE_STORES: Final = Dialect(separate_stores=True)
"""A deployment that serves each binding from its own process and store: a task made over
JSON-RPC is unknown over HTTP+JSON and gRPC, and so on."""
OTHER_ORIGIN: Final = Dialect(other_origin=True)
"""A card that also lists an HTTP+JSON interface on another origin (another port of
127.0.0.1, same handler and store), whose server records the headers it received."""
HELD: Final = Dialect(hold_all=True)
"""Every message's work is held (its task WORKING) until the test releases it."""

DIALECTS: Final[Mapping[str, Dialect]] = MappingProxyType(
    {
        "a2a_sdk": A2A_SDK,
        "no_history": NO_HISTORY,
        "list_without_history": LIST_WITHOUT_HISTORY,
        "trimmed_history": TRIMMED_HISTORY,
        "no_timestamps": NO_TIMESTAMPS,
        "message_only": MESSAGE_ONLY,
        "subtask_echo": SUBTASK_ECHO,
        "subtask_echo_first": SUBTASK_ECHO_FIRST,
        "list_needs_user": LIST_NEEDS_USER,
        "no_list_tasks": NO_LIST_TASKS,
        "empty_list": EMPTY_LIST,
        "separate_stores": SEPARATE_STORES,
        "other_origin": OTHER_ORIGIN,
        "held": HELD,
    }
)
"""Every named dialect by its name."""


# --- captured wire shapes of other peers ------------------------------------------------------

EMPTY_EVENT_STREAM: Final = b": SSE stream established\n\n"
"""python-a2a 0.5.10's stream body that holds no event (``200 text/event-stream``)."""

A2A_GO_NOT_FOUND: Final = b"404 page not found\n"
"""a2a-go's answer to a path no route serves: ``404``, ``text/plain; charset=utf-8``."""


def a2a_go_rest_stream_error(
    reason: str = "UNSUPPORTED_OPERATION",
    *,
    code: int = 400,
    status: str = "FAILED_PRECONDITION",
    message: str = "streaming is not supported",
) -> bytes:
    """The body of a2a-go's HTTP+JSON stream refused before its first event.

    a2a-go answers ``200 text/event-stream`` and writes the error as one SSE event with no
    event name, its data a ``{"error": google.rpc.Status}`` object whose ErrorInfo is the
    *last* detail (a2a-sdk 1.3's REST stream parser reads it as an empty event).
    """
    error = {
        "code": code,
        "status": status,
        "message": message,
        "details": [
            {
                "@type": _ERROR_INFO_TYPE,
                "reason": reason,
                "domain": _A2A_DOMAIN,
                "metadata": {},
            }
        ],
    }
    return b"data: " + json.dumps({"error": error}, separators=(",", ":")).encode() + b"\n\n"


# --------------------------------------------------------------------------------------------
# Callers and what they sent
# --------------------------------------------------------------------------------------------


def bearer_user(authorization: str | None) -> str | None:
    """The user an ``Authorization`` header makes of its caller, or None (anonymous).

    ``Bearer <token>`` with any non-empty token is a user named ``user-`` and the first 12
    hex digits of the token's SHA-256: one token, one user, and the token itself is never a
    name that could reach a log. Anything else (no header, another scheme, an empty token) is
    anonymous.

    Args:
        authorization: The header's value, or None when absent.
    """
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return "user-" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# The task store and the request handler
# --------------------------------------------------------------------------------------------


def _copy(message: Any) -> Any:
    """A copy of a protobuf message."""
    clone = type(message)()
    clone.CopyFrom(message)
    return clone


def _is_user(message: Any) -> bool:
    """Whether a proto ``Message`` is the user's."""
    from a2a.types import Role

    return bool(message.role == Role.ROLE_USER)


def _shaped(task: Any, dialect: Dialect) -> Any:
    """``task`` as the dialect stores and answers it: a copy when that differs, else itself."""
    if not dialect.shapes_tasks:
        return task
    strip_user = not dialect.user_message_in_history and any(_is_user(m) for m in task.history)
    strip_time = not dialect.timestamps and task.status.HasField("timestamp")
    if not (strip_user or strip_time):
        return task
    task = _copy(task)
    if strip_user:
        kept = [m for m in task.history if not _is_user(m)]
        del task.history[:]
        task.history.extend(kept)
    if strip_time:
        task.status.ClearField("timestamp")
    return task


def _trimmed(task: Any, keep: int | None, *, drop: bool = False) -> Any:
    """``task`` with no history (``drop``), or its last ``keep`` messages; a copy if changed."""
    if drop and task.history:
        task = _copy(task)
        task.ClearField("history")
    elif keep is not None and len(task.history) > keep:
        kept = list(task.history)[len(task.history) - keep :]
        task = _copy(task)
        del task.history[:]
        task.history.extend(kept)
    return task


def _state_name(task: Any) -> str:
    """The name of a task's state (``TASK_STATE_...``)."""
    from a2a.types import TaskState

    return str(TaskState.Name(task.status.state))


class DialectTaskStore:
    """An a2a-sdk ``TaskStore`` that stores tasks as the dialect does, and notes each save.

    * Every save is stored shaped: without the user's messages (``user_message_in_history``
      False) and without ``status.timestamp`` (``timestamps`` False). The task passed in is
      never changed (a2a-sdk keeps it as its working copy).
    * With ``subtask_echo``, each save of a task a run made (`Ledger.started_by`) is followed
      by a save of its sub-task (see `Dialect`), in the same owner's store, with a timestamp
      just after its parent's (or, without timestamps, an id that sorts before it).
    * Reads, listings and deletes are the wrapped store's.

    Args:
        inner: The store the peer gives (a2a-sdk's, behind its `LedgerTaskStore`).
        dialect: The dialect.
        ledger: Where the runs that made tasks are read.
    """

    def __init__(self, inner: Any, dialect: Dialect, ledger: Ledger) -> None:
        self.inner = inner
        self.dialect = dialect
        self.ledger = ledger

    async def save(self, task: Any, context: Any) -> None:
        """Store ``task`` as the dialect does (see the class).

        Args:
            task: The a2a-sdk ``Task``.
            context: The ``ServerCallContext`` of the call that saves it (its owner).
        """
        await self.inner.save(_shaped(task, self.dialect), context)
        if self.dialect.subtask_echo is not None and self.ledger.started_by(task.id) is not None:
            await self._echo(task, context)

    async def _echo(self, parent: Any, context: Any) -> None:
        """Save the sub-task of ``parent``, updated after it."""
        from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

        user = next((m for m in parent.history if _is_user(m)), None)
        if user is None:
            return
        sub_id = f"{parent.id}-sub"  # without timestamps, a2a-sdk lists by id, descending
        terminal = _state_name(parent) in _TERMINAL
        state = TaskState.TASK_STATE_COMPLETED if terminal else TaskState.TASK_STATE_WORKING
        echo = _copy(user)
        echo.task_id = sub_id
        agent = Message(
            message_id=f"{sub_id}-agent",
            context_id=parent.context_id,
            task_id=sub_id,
            role=Role.ROLE_AGENT,
            parts=[Part(text=f"a sub-task of {parent.id}")],
        )
        first_user = self.dialect.subtask_echo == "user_first"
        sub = Task(
            id=sub_id,
            context_id=parent.context_id,
            status=TaskStatus(state=state),
            history=[echo, agent] if first_user else [agent, echo],
        )
        if parent.status.HasField("timestamp"):
            after = parent.status.timestamp.ToNanoseconds() + 1_000  # 1 µs later
            sub.status.timestamp.FromNanoseconds(after)
        else:
            sub.status.timestamp.FromDatetime(datetime.now(timezone.utc))
        await self.inner.save(_shaped(sub, self.dialect), context)

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


class DialectHandler:
    """An a2a-sdk ``RequestHandler`` that answers as the dialect does.

    * The tasks in the answers of SendMessage, SendStreamingMessage and SubscribeToTask are
      shaped as the store keeps them (`DialectTaskStore`), and status updates lose their
      timestamp when the dialect has none: the answers show what GetTask would.
    * GetTask and ListTasks answer at most ``history_limit`` messages of history; ListTasks
      leaves history out when ``list_history`` is False, and answers an empty list, whatever
      the store holds, when ``list_tasks`` is ``"empty"``.

    Refusing ListTasks (``"needs_user"``, ``"absent"``) happens before the handler, at the
    binding's edge, where the wire answer is made (`jsonrpc_routes`, `rest_routes`,
    `grpc_interceptors`). Every attribute it does not define is the wrapped handler's.

    Args:
        inner: The wrapped a2a-sdk ``RequestHandler``.
        dialect: The dialect.
    """

    def __init__(self, inner: Any, dialect: Dialect) -> None:
        self.inner = inner
        self.dialect = dialect

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: on_cancel_task, aclose, task_store, ...
        if name == "inner":  # not yet set (copy, unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"DialectHandler({self.inner!r}, {self.dialect!r})"

    def _event(self, event: Any) -> Any:
        """A stream event as the dialect answers it."""
        from a2a.types import Task, TaskStatusUpdateEvent

        if isinstance(event, Task):
            return _shaped(event, self.dialect)
        if (
            isinstance(event, TaskStatusUpdateEvent)
            and not self.dialect.timestamps
            and event.status.HasField("timestamp")
        ):
            event = _copy(event)
            event.status.ClearField("timestamp")
        return event

    async def on_message_send(self, params: Any, context: Any) -> Any:
        """SendMessage, its task shaped.

        Args:
            params: The ``SendMessageRequest``.
            context: The ``ServerCallContext``.
        """
        return self._event(await self.inner.on_message_send(params, context))

    async def on_message_send_stream(self, params: Any, context: Any) -> AsyncIterator[Any]:
        """SendStreamingMessage, each event shaped.

        Args:
            params: The ``SendMessageRequest``.
            context: The ``ServerCallContext``.
        """
        async for event in self.inner.on_message_send_stream(params, context):
            yield self._event(event)

    async def on_subscribe_to_task(self, params: Any, context: Any) -> AsyncIterator[Any]:
        """SubscribeToTask, each event shaped.

        Args:
            params: The ``SubscribeToTaskRequest``.
            context: The ``ServerCallContext``.
        """
        async for event in self.inner.on_subscribe_to_task(params, context):
            yield self._event(event)

    async def on_get_task(self, params: Any, context: Any) -> Any:
        """GetTask, at most ``history_limit`` messages of history.

        Args:
            params: The ``GetTaskRequest``.
            context: The ``ServerCallContext``.
        """
        task = await self.inner.on_get_task(params, context)
        return task if task is None else _trimmed(task, self.dialect.history_limit)

    async def on_list_tasks(self, params: Any, context: Any) -> Any:
        """ListTasks as the dialect serves it (see the class).

        Args:
            params: The ``ListTasksRequest``.
            context: The ``ServerCallContext``.
        """
        if self.dialect.list_tasks == "empty":
            from a2a.types import ListTasksResponse
            from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE

            has_size = params.HasField("page_size")
            size = params.page_size if has_size else DEFAULT_LIST_TASKS_PAGE_SIZE
            return ListTasksResponse(tasks=[], next_page_token="", total_size=0, page_size=size)
        page = await self.inner.on_list_tasks(params, context)
        drop, keep = not self.dialect.list_history, self.dialect.history_limit
        if drop or keep is not None:
            shown = [_trimmed(task, keep, drop=drop) for task in page.tasks]
            del page.tasks[:]
            page.tasks.extend(shown)
        return page


# --------------------------------------------------------------------------------------------
# The bindings' edges
# --------------------------------------------------------------------------------------------


def _error_info() -> dict[str, Any]:
    """a2a-go's ErrorInfo for an unauthenticated caller (a timestamp in its metadata)."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "@type": _ERROR_INFO_TYPE,
        "reason": _UNAUTHENTICATED,
        "domain": _A2A_DOMAIN,
        "metadata": {"timestamp": stamp},
    }


def _authenticated(values: Iterable[str]) -> bool:
    """Whether ``Authorization`` values make the caller a user (`bearer_user`)."""
    return any(bearer_user(value) is not None for value in values)


@functools.cache
def _context_builders() -> tuple[Any, Any]:
    """a2a-sdk's HTTP and gRPC context builders, the caller's user read from its bearer."""
    from a2a.auth.user import UnauthenticatedUser, User
    from a2a.server.request_handlers import DefaultGrpcServerCallContextBuilder
    from a2a.server.routes.common import DefaultServerCallContextBuilder

    class BearerUser(User):
        """A caller that sent ``Authorization: Bearer <token>`` (see `bearer_user`)."""

        def __init__(self, name: str) -> None:
            self._name = name

        @property
        def is_authenticated(self) -> bool:
            return True

        @property
        def user_name(self) -> str:
            return self._name

    def user_of(values: Iterable[str]) -> Any:
        name = next((n for n in map(bearer_user, values) if n is not None), None)
        return UnauthenticatedUser() if name is None else BearerUser(name)

    class HttpBuilder(DefaultServerCallContextBuilder):
        """a2a-sdk's context builder, the caller's user read from ``Authorization``."""

        def build_user(self, request: Any) -> Any:
            return user_of(request.headers.getlist("authorization"))

    class GrpcBuilder(DefaultGrpcServerCallContextBuilder):
        """a2a-sdk's gRPC context builder, the caller's user read from ``authorization``."""

        def build_user(self, context: Any) -> Any:
            metadata = context.invocation_metadata() or ()
            return user_of(_metadata_values(metadata, "authorization"))

    return HttpBuilder(), GrpcBuilder()


def _metadata_values(metadata: Iterable[Any], name: str) -> list[str]:
    """The text values of gRPC metadata key ``name``."""
    values = []
    for key, value in metadata:
        if str(key).lower() == name:
            values.append(value.decode("latin-1") if isinstance(value, bytes) else str(value))
    return values


def jsonrpc_routes(handler: Any, dialect: Dialect, path: str) -> list[Any]:
    """a2a-sdk's JSON-RPC route for ``handler``, with ListTasks as the dialect serves it.

    * ``"absent"``: a2a-sdk's dispatcher without the ListTasks method, so a2a-sdk itself
      answers -32601 (method not found), as A2A 0.3 servers do.
    * ``"needs_user"``: a ListTasks from a caller without a user (`bearer_user`) is answered
      as a2a-go does: HTTP 200, ``error.code`` -31401, message ``"unauthenticated"``, an
      ErrorInfo UNAUTHENTICATED in ``error.data``; the request never reaches the handler.
      The caller's user is set on every call (tasks belong to who made them).

    Args:
        handler: The a2a-sdk ``RequestHandler`` (wrapped or not).
        dialect: The dialect.
        path: The endpoint's path, e.g. ``"/jsonrpc"``.
    """
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    if dialect.list_tasks in ("served", "empty"):
        return list(create_jsonrpc_routes(handler, rpc_url=path))
    if dialect.list_tasks == "absent":

        class WithoutListTasks(JsonRpcDispatcher):
            """a2a-sdk's dispatcher, knowing every method but ListTasks."""

            METHOD_TO_MODEL = {  # noqa: RUF012 - a2a-sdk's own class attribute
                name: model
                for name, model in JsonRpcDispatcher.METHOD_TO_MODEL.items()
                if name != "ListTasks"
            }

        return [Route(path, endpoint=WithoutListTasks(handler).handle_requests, methods=["POST"])]

    dispatcher = JsonRpcDispatcher(handler, context_builder=_context_builders()[0])

    async def endpoint(request: Any) -> Any:
        if not _authenticated(request.headers.getlist("authorization")):
            try:
                payload = json.loads(await request.body())
            except ValueError:
                payload = None  # a2a-sdk answers the parse error
            if isinstance(payload, dict) and payload.get("method") == "ListTasks":
                request_id = payload.get("id")
                if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
                    request_id = None
                error = {
                    "code": A2A_GO_UNAUTHENTICATED_CODE,
                    "message": "unauthenticated",
                    "data": [_error_info()],
                }
                return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error})
        return await dispatcher.handle_requests(request)

    return [Route(path, endpoint=endpoint, methods=["POST"])]


def rest_routes(handler: Any, dialect: Dialect, prefix: str) -> list[Any]:
    """a2a-sdk's HTTP+JSON routes for ``handler``, with ListTasks as the dialect serves it.

    * ``"absent"``: no ``GET {prefix}/tasks`` route at all: Starlette answers its own plain
      404, not an A2A body.
    * ``"needs_user"``: ``GET {prefix}/tasks`` from a caller without a user (`bearer_user`)
      is answered as a2a-go does: 401, ``application/json``, a ``google.rpc.Status`` body
      (``code`` 401, ``status`` UNAUTHENTICATED, an ErrorInfo UNAUTHENTICATED). The caller's
      user is set on every call.

    Args:
        handler: The a2a-sdk ``RequestHandler`` (wrapped or not).
        dialect: The dialect.
        prefix: The routes' path prefix, e.g. ``"/rest"``.
    """
    from a2a.server.routes import create_rest_routes
    from starlette.responses import JSONResponse
    from starlette.routing import Mount, Route

    users = _context_builders()[0] if dialect.list_tasks == "needs_user" else None
    routes = list(create_rest_routes(handler, context_builder=users, path_prefix=prefix))
    if dialect.list_tasks not in ("absent", "needs_user"):
        return routes
    list_path = f"{prefix}/tasks"

    def gate(endpoint: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def gated(request: Any) -> Any:
            if _authenticated(request.headers.getlist("authorization")):
                return await endpoint(request)
            body = {
                "error": {
                    "code": 401,
                    "status": _UNAUTHENTICATED,
                    "message": "unauthenticated",
                    "details": [_error_info()],
                }
            }
            return JSONResponse(body, status_code=401)

        return gated

    def edit(route: Any) -> Any:
        if isinstance(route, Mount):
            return Mount(route.path, routes=[r for r in map(edit, route.routes) if r is not None])
        listing = route.path == list_path and "GET" in (route.methods or ())
        if not (isinstance(route, Route) and listing):
            return route
        if dialect.list_tasks == "absent":
            return None
        return Route(route.path, endpoint=gate(route.endpoint), methods=["GET"])

    return [edited for edited in map(edit, routes) if edited is not None]


def grpc_context_builder(dialect: Dialect) -> Any:
    """The ``GrpcServerCallContextBuilder`` for a2a-sdk's ``GrpcHandler``, or None (its own).

    With ``list_tasks="needs_user"``, the caller's user is read from the ``authorization``
    metadata (`bearer_user`), so that tasks belong to who made them.

    Args:
        dialect: The dialect.
    """
    return _context_builders()[1] if dialect.list_tasks == "needs_user" else None


@functools.cache
def _interceptor_classes() -> tuple[type[Any], type[Any]]:
    """The ``grpc.aio`` interceptors that refuse ListTasks (built on first use)."""
    import grpc
    import grpc.aio
    from google.rpc import error_details_pb2, status_pb2

    def is_list(details: Any) -> bool:
        return str(details.method).endswith("/ListTasks")

    class NoListTasks(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        """No ListTasks method: the gRPC runtime answers UNIMPLEMENTED itself."""

        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            return None if is_list(details) else await continuation(details)

    class ListNeedsUser(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        """ListTasks without a bearer ``authorization`` aborts UNAUTHENTICATED, as a2a-go."""

        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            handler = await continuation(details)
            if handler is None or not is_list(details):
                return handler
            metadata = details.invocation_metadata or ()
            if _authenticated(_metadata_values(metadata, "authorization")):
                return handler

            async def refuse(request: Any, context: Any) -> Any:
                info = _error_info()
                packed = status_pb2.Status(
                    code=grpc.StatusCode.UNAUTHENTICATED.value[0], message="unauthenticated"
                )
                packed.details.add().Pack(
                    error_details_pb2.ErrorInfo(
                        reason=info["reason"], domain=info["domain"], metadata=info["metadata"]
                    )
                )
                await context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    "unauthenticated",
                    trailing_metadata=(("grpc-status-details-bin", packed.SerializeToString()),),
                )

            return grpc.unary_unary_rpc_method_handler(
                refuse,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

    return NoListTasks, ListNeedsUser


def grpc_interceptors(dialect: Dialect) -> tuple[Any, ...]:
    """The ``grpc.aio`` server interceptors that serve ListTasks as the dialect does.

    * ``"absent"``: the ListTasks method is not there: the gRPC runtime answers
      UNIMPLEMENTED, as for any method a server lacks.
    * ``"needs_user"``: a ListTasks without ``authorization: Bearer <token>`` metadata is
      aborted UNAUTHENTICATED (message ``"unauthenticated"``, an ErrorInfo UNAUTHENTICATED in
      ``grpc-status-details-bin``), as a2a-go does.

    Args:
        dialect: The dialect.

    Returns:
        The interceptors (none for the other dialects).
    """
    if dialect.list_tasks not in ("absent", "needs_user"):
        return ()
    no_list, needs_user = _interceptor_classes()
    return (no_list(),) if dialect.list_tasks == "absent" else (needs_user(),)
