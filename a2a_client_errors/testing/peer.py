"""An embedded a2a-sdk peer on 127.0.0.1 and raw captures of the errors it sends.

`EmbeddedPeer` starts a real a2a-sdk server (the official A2A Python SDK) in a background
thread: the JSON-RPC and HTTP+JSON bindings on one uvicorn server and the gRPC binding on a
``grpc.aio`` server, each on an ephemeral port of 127.0.0.1. Its agent executor behaves by the
first text part of the message it receives (see `EmbeddedPeer`).

The ``capture_*`` helpers run one named scenario from `SCENARIOS` against such a peer and return
what came back *as sent on the wire*: an ``httpx.Response`` for JSON-RPC and HTTP+JSON, the
``grpc.RpcError`` (with its trailing metadata) for gRPC, or the exception raised by a2a-sdk's own
client. They never interpret what they capture.

What a2a-sdk 1.3.0 enforces, and what it does not:

* ``A2A-Version`` is checked by the JSON-RPC and HTTP+JSON routes only (major version must be 1;
  a missing header counts as 0.3 and is rejected for 1.0 methods). The gRPC handler never reads
  the ``a2a-version`` metadata, so gRPC cannot produce ``VERSION_NOT_SUPPORTED``.
* A required extension (``capabilities.extensions[].required``) is advertised on the card, and
  the requested ``A2A-Extensions`` reach the executor, but no binding rejects a request that
  omits it: the SDK never raises ``ExtensionSupportRequiredError`` itself. The peer does not
  fake it, so ``EXTENSION_SUPPORT_REQUIRED`` is produced on no binding.
* Media types are checked against ``defaultInputModes`` only when the request handler is built
  with ``validate_input_modes=True``, which the peer does.

The SDK, uvicorn and grpcio are optional dependencies: they are imported only when a peer is
started or a capture is made, so importing this module never needs them.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import httpx

from a2a_client_errors._operations import BY_NAME, STREAMING_OPERATIONS, rest_request
from a2a_client_errors._sdk_line import UnsupportedSdkError, installed_version
from a2a_client_errors.testing._agent import (
    Ledger,
    LedgerTaskStore,
    PeerDialect,
    RequestRecorder,
    SeenRequest,
    queue_shut_down,
)

if TYPE_CHECKING:
    from collections import Counter
    from collections.abc import Awaitable, Callable, Coroutine, Mapping
    from types import ModuleType, TracebackType

    from a2a.server.agent_execution import RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.tasks import TaskUpdater
    from typing_extensions import Self

__all__ = [
    "BINDINGS",
    "DEFAULT_REQUIRED_EXTENSION",
    "DEFAULT_TIMEOUT",
    "GRPC",
    "HOLD",
    "JSONRPC",
    "PEER_SDK",
    "REST",
    "SCENARIOS",
    "EmbeddedPeer",
    "Ledger",
    "PeerDialect",
    "PeerSdkError",
    "Scenario",
    "SeenRequest",
    "capture",
    "capture_grpc",
    "capture_grpc_stream",
    "capture_jsonrpc",
    "capture_rest",
    "capture_sdk",
    "require_dependencies",
    "scenario",
]

JSONRPC: Final = "jsonrpc"
"""The JSON-RPC 2.0 binding."""
REST: Final = "rest"
"""The HTTP+JSON (REST) binding."""
GRPC: Final = "grpc"
"""The gRPC binding."""
BINDINGS: Final[tuple[str, ...]] = (JSONRPC, REST, GRPC)

DEFAULT_REQUIRED_EXTENSION: Final = "urn:a2a-client-errors:test:required"
HOLD: Final = "hold"
"""The first text part that holds a message's work until the test releases it."""
DEFAULT_TIMEOUT: Final = 10.0
"""Seconds any single capture (HTTP request, gRPC call, SDK call) may take."""

PROTOCOL_VERSION: Final = "1.0"
VERSION_HEADER: Final = "A2A-Version"
EXTENSIONS_HEADER: Final = "A2A-Extensions"
DEFAULT_INPUT_MODES: Final[tuple[str, ...]] = ("text/plain", "application/json")

_INSTALL_HINT: Final = "pip install 'a2a-client-errors[a2a]'"
PEER_SDK: Final = ">=1.0,<2"
"""The a2a-sdk versions the peer's servers are built on: the 1.x line."""
_JSONRPC_PATH: Final = "/jsonrpc"
_REST_PREFIX: Final = "/rest"
_CARD_PATH: Final = "/.well-known/agent-card.json"
_UNUSED_PUSH_URL: Final = "http://127.0.0.1:9/a2a-push"
"""A webhook URL that is never contacted (push notifications are off on the peer)."""

_T = TypeVar("_T")


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    """One error (or success) a client can meet, and where the real server can produce it.

    Attributes:
        name: Scenario id, e.g. ``"task_not_found"``.
        operation: The A2A 1.0 operation called (``"GetTask"``, ``"SendMessage"``, ...).
        expected_reason: The reason the A2A 1.0.1 spec assigns to the outcome, or None when the
            call succeeds (a task that FAILED is a result, not a call error).
        bindings: The wire bindings (`JSONRPC`, `REST`, `GRPC`) on which a2a-sdk's server
            produces the scenario; `capture` refuses the others.
        sdk_bindings: The bindings on which a2a-sdk's own client can send the request (it
            cannot send malformed JSON, for instance), whether or not the server then fails.
        accepted_on: Bindings on which the request is well formed but the server accepts it
            instead of producing the error (what a2a-sdk does not enforce); `capture` sends
            it there only with ``allow_unproduced=True``.
        streaming_peer: Whether the scenario runs against a peer with streaming on (True) or
            off (False).
        note: What is sent, and why a binding is missing when one is.

    """

    name: str
    operation: str
    expected_reason: str | None
    bindings: tuple[str, ...]
    sdk_bindings: tuple[str, ...]
    note: str
    streaming_peer: bool = True
    accepted_on: tuple[str, ...] = ()


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        "task_not_found",
        "GetTask",
        "TASK_NOT_FOUND",
        BINDINGS,
        BINDINGS,
        "GetTask with an id the peer never issued.",
    ),
    Scenario(
        "task_not_cancelable",
        "CancelTask",
        "TASK_NOT_CANCELABLE",
        BINDINGS,
        BINDINGS,
        "CancelTask on a task that already COMPLETED (created first with SendMessage).",
    ),
    Scenario(
        "push_not_supported",
        "CreateTaskPushNotificationConfig",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        BINDINGS,
        BINDINGS,
        "CreateTaskPushNotificationConfig for an existing task; the card declares "
        "pushNotifications=false.",
    ),
    Scenario(
        "unsupported_operation",
        "SendStreamingMessage",
        "UNSUPPORTED_OPERATION",
        BINDINGS,
        (),
        "SendStreamingMessage on a peer whose card declares streaming=false. The server answers "
        "before any stream starts (JSON-RPC: a plain JSON error, HTTP+JSON: a JSON error "
        "status). a2a-sdk's client reads capabilities.streaming from the card and falls back "
        "to SendMessage, so it never sends this request.",
        streaming_peer=False,
    ),
    Scenario(
        "subscribe_terminal",
        "SubscribeToTask",
        "UNSUPPORTED_OPERATION",
        BINDINGS,
        BINDINGS,
        "SubscribeToTask on a task that already COMPLETED; the error comes before any event.",
    ),
    Scenario(
        "extended_card_not_configured",
        "GetExtendedAgentCard",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        BINDINGS,
        BINDINGS,
        "GetExtendedAgentCard; the card declares extendedAgentCard=true but the server has no "
        "extended card configured.",
    ),
    Scenario(
        "extension_required",
        "SendMessage",
        "EXTENSION_SUPPORT_REQUIRED",
        (),
        BINDINGS,
        "SendMessage without A2A-Extensions although the card lists a required extension. "
        "a2a-sdk 1.3.0 does not enforce required extensions on any binding (it never raises "
        "ExtensionSupportRequiredError itself): the call succeeds.",
        accepted_on=BINDINGS,
    ),
    Scenario(
        "version_not_supported",
        "SendMessage",
        "VERSION_NOT_SUPPORTED",
        (JSONRPC, REST),
        (JSONRPC, REST),
        "SendMessage with A2A-Version: 99.0. a2a-sdk's gRPC handler never reads the "
        "a2a-version metadata, so gRPC accepts the call.",
        accepted_on=(GRPC,),
    ),
    Scenario(
        "version_header_missing",
        "SendMessage",
        "VERSION_NOT_SUPPORTED",
        (JSONRPC, REST),
        (),
        "SendMessage without an A2A-Version header: a2a-sdk reads a missing header as 0.3 and "
        "rejects the 1.0 method. gRPC accepts the call (the version is not checked there). "
        "a2a-sdk's client always sends A2A-Version, so it cannot omit it.",
        accepted_on=(GRPC,),
    ),
    Scenario(
        "content_type_not_supported",
        "SendMessage",
        "CONTENT_TYPE_NOT_SUPPORTED",
        BINDINGS,
        BINDINGS,
        "SendMessage with an image/png part; the card's defaultInputModes are text/plain and "
        "application/json and the handler validates input modes.",
    ),
    Scenario(
        "internal_error",
        "SendMessage",
        "INTERNAL_ERROR",
        BINDINGS,
        BINDINGS,
        "SendMessage 'raise': the executor raises a plain exception. JSON-RPC answers -32603 "
        "without ErrorInfo, HTTP+JSON a bare 500 INTERNAL body without details, gRPC the "
        "runtime's UNKNOWN status without a details trailer.",
    ),
    Scenario(
        "failed_task",
        "SendMessage",
        None,
        BINDINGS,
        BINDINGS,
        "SendMessage 'fail': the call succeeds and returns a task in TASK_STATE_FAILED.",
    ),
    Scenario(
        "stream_error_midway",
        "SendStreamingMessage",
        "INTERNAL_ERROR",
        BINDINGS,
        BINDINGS,
        "SendStreamingMessage 'stream-error': events (task, working status) then the executor "
        "raises. JSON-RPC and HTTP+JSON send an SSE 'error' event after the results; gRPC "
        "ends the stream with UNKNOWN after the events.",
    ),
    Scenario(
        "parse_error",
        "SendMessage",
        "PARSE_ERROR",
        (JSONRPC,),
        (),
        "A body that is not JSON. HTTP+JSON answers malformed JSON as INVALID_REQUEST (see "
        "invalid_request); gRPC has no JSON to parse.",
    ),
    Scenario(
        "invalid_request",
        "GetTask",
        "INVALID_REQUEST",
        (JSONRPC, REST),
        (),
        'JSON-RPC: a request object with "jsonrpc": "1.0". HTTP+JSON: a SendMessage body '
        "that is not JSON (a2a-sdk answers it 400 with reason INVALID_REQUEST). gRPC: a "
        "malformed protobuf never reaches the A2A handler.",
    ),
    Scenario(
        "method_not_found",
        "tasks/teleport",
        "METHOD_NOT_FOUND",
        (JSONRPC,),
        (),
        "A JSON-RPC method the peer does not know. HTTP+JSON answers an unknown route with "
        "Starlette's plain 404 and gRPC with the runtime's UNIMPLEMENTED, neither an A2A error.",
    ),
    Scenario(
        "invalid_params",
        "SendMessage",
        "INVALID_PARAMS",
        BINDINGS,
        BINDINGS,
        "SendMessage whose message lacks the required messageId and parts; a2a-sdk validates "
        "REQUIRED fields on every binding (ErrorInfo INVALID_PARAMS plus a BadRequest).",
    ),
    Scenario(
        "cancel_working",
        "CancelTask",
        None,
        BINDINGS,
        BINDINGS,
        "CancelTask on a 'slow' task that is still working: the call succeeds and returns the "
        "task in TASK_STATE_CANCELED.",
    ),
)

_BY_NAME: Final[Mapping[str, Scenario]] = MappingProxyType({s.name: s for s in SCENARIOS})


def scenario(name: str) -> Scenario:
    """Return the scenario record called ``name``.

    Args:
        name: A scenario name from `SCENARIOS`.

    Returns:
        The record.

    Raises:
        KeyError: If no scenario has that name.

    """
    try:
        return _BY_NAME[name]
    except KeyError:
        known = ", ".join(_BY_NAME)
        raise KeyError(f"unknown scenario {name!r}; known: {known}") from None


# --------------------------------------------------------------------------------------------
# Optional dependencies
# --------------------------------------------------------------------------------------------


def _missing(exc: ImportError, what: str) -> ImportError:
    name = exc.name or "a dependency"
    extra = " uvicorn" if name.split(".")[0] == "uvicorn" else ""
    return ImportError(
        f"{what} needs a2a-sdk (with its http-server and grpc extras), grpcio and uvicorn; "
        f"{name!r} is missing: {_INSTALL_HINT}{extra}"
    )


class PeerSdkError(UnsupportedSdkError):
    """The installed a2a-sdk is not of the line the peer is built on (`PEER_SDK`, 1.x)."""

    def __init__(self, version: str, what: str) -> None:
        super().__init__(version)
        self.args = (
            f"{what} is built on a2a-sdk 1.x servers and a2a-sdk {version} is installed: "
            f"pip install 'a2a-sdk[http-server,grpc]{PEER_SDK}'",
        )


def require_dependencies(what: str = "the embedded a2a-sdk peer") -> None:
    """Import the optional dependencies of the peer, or say how to install them.

    Args:
        what: Who needs them, for the error message.

    Raises:
        PeerSdkError: If the installed a2a-sdk is not 1.x (`PEER_SDK`): the message names it.
        ImportError: If a2a-sdk (with its http-server and grpc extras), grpcio or uvicorn is
            missing; the message names the module and the ``pip install`` line.

    """
    version = installed_version()
    if version is not None and version.split(".", 1)[0] != "1":
        raise PeerSdkError(version, what)
    try:
        import a2a.server.request_handlers  # noqa: PLC0415
        import a2a.server.routes  # noqa: F401, PLC0415
        import grpc.aio  # noqa: F401, PLC0415
        import starlette.applications  # noqa: F401, PLC0415
        import uvicorn  # noqa: F401, PLC0415
    except ImportError as exc:
        raise _missing(exc, what) from exc


def _import_grpc() -> ModuleType:
    try:
        import grpc  # noqa: PLC0415
    except ImportError as exc:
        raise _missing(exc, "gRPC captures") from exc
    module: ModuleType = grpc
    return module


# --------------------------------------------------------------------------------------------
# The agent executor
# --------------------------------------------------------------------------------------------


def _first_text(message: Any) -> str:
    """Return the first text part of a proto ``Message`` (empty when there is none)."""
    if message is None:
        return ""
    for part in message.parts:
        if part.HasField("text"):
            return str(part.text)
    return ""


def _make_executor(ledger: Ledger, dialect: PeerDialect) -> Any:
    """Build the scripted `AgentExecutor` (the SDK is imported here, lazily)."""
    from a2a.server.agent_execution import AgentExecutor  # noqa: PLC0415

    script = _Script(ledger, dialect)

    class ScriptedExecutor(AgentExecutor):
        """Behaves by the first text part (see `EmbeddedPeer`), as the dialect says."""

        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            await script.execute(context, event_queue)

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            await script.cancel(context, event_queue)

    return ScriptedExecutor()


class _Script:
    """What the scripted executor does, by the first text part and the dialect."""

    def __init__(self, ledger: Ledger, dialect: PeerDialect) -> None:
        self.ledger = ledger
        self.dialect = dialect
        self.release: dict[str, asyncio.Event] = {}
        self.cancel_seen: dict[str, asyncio.Event] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answer one message: a Message (message-only dialects) or a task scripted by text."""
        from a2a.server.tasks import TaskUpdater  # noqa: PLC0415
        from a2a.types import Part  # noqa: PLC0415

        dialect, ledger = self.dialect, self.ledger
        text = _first_text(context.message)
        message_id = context.message.message_id if context.message is not None else ""
        task_id = context.task_id or ""
        context_id = context.context_id or ""
        new_task = context.current_task is None and not dialect.message_only
        ledger.executed(message_id, task_id if new_task else None)
        held = text == HOLD or dialect.hold_all
        if dialect.message_only:
            await self._answer_message(message_id, context_id, text, held, event_queue)
            return
        if text == "raise":
            raise RuntimeError("the executor raised, as the 'raise' message asks")
        if text == "complete-on-cancel":  # registered before any event can reach a client
            self.cancel_seen.setdefault(task_id, asyncio.Event())
        if new_task:
            await self._open_task(context, event_queue)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if held:
            await updater.start_work(updater.new_agent_message([Part(text="held until released")]))
            await ledger.stored(task_id, "TASK_STATE_WORKING")  # held means stored
            await ledger.hold(message_id)
        scripted = self._SCRIPTED.get(text)
        if scripted is not None:
            await scripted(self, task_id, updater)
            return
        if not held:  # a held task's history already holds an agent message
            await updater.start_work(updater.new_agent_message([Part(text=f"on it: {text}")]))
        await updater.add_artifact([Part(text=f"echo: {text}")], name="echo")
        await updater.complete(updater.new_agent_message([Part(text=f"echo: {text}")]))

    async def _answer_message(
        self, message_id: str, context_id: str, text: str, held: bool, event_queue: EventQueue
    ) -> None:
        """A message-only agent's answer: a Message echoing the text (held first, if asked)."""
        from a2a.types import Message, Part, Role  # noqa: PLC0415

        if held:
            await self.ledger.hold(message_id)
        answer = Message(
            message_id=f"answer-{uuid.uuid4()}",
            context_id=context_id,
            role=Role.ROLE_AGENT,
            parts=[Part(text=f"echo: {text}")],
        )
        await event_queue.enqueue_event(answer)

    @staticmethod
    async def _open_task(context: RequestContext, event_queue: EventQueue) -> None:
        """The new task, SUBMITTED, its history the message that made it."""
        from a2a.types import Task, TaskState, TaskStatus  # noqa: PLC0415

        task = Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
        )
        if context.message is not None:
            task.history.append(context.message)
        await event_queue.enqueue_event(task)

    async def _fail(self, task_id: str, updater: TaskUpdater) -> None:
        """``fail``: the task ends FAILED (a result, in a successful call)."""
        from a2a.types import Part  # noqa: PLC0415

        await updater.failed(
            updater.new_agent_message([Part(text="the task failed, as 'fail' asks")])
        )

    async def _stream_error(self, task_id: str, updater: TaskUpdater) -> None:
        """``stream-error``: the executor raises once the task is WORKING."""
        await updater.start_work()
        raise RuntimeError("the executor raised mid-stream, as 'stream-error' asks")

    async def _slow(self, task_id: str, updater: TaskUpdater) -> None:
        """``slow``: the task stays WORKING until a cancel releases it."""
        await updater.start_work()
        release = self.release.setdefault(task_id, asyncio.Event())
        try:
            await release.wait()
        finally:
            self.release.pop(task_id, None)

    async def _complete_on_cancel(self, task_id: str, updater: TaskUpdater) -> None:
        """Work until a cancel reaches `cancel`, then complete instead (the lost race)."""
        from a2a.types import Part  # noqa: PLC0415

        cancel_seen = self.cancel_seen.setdefault(task_id, asyncio.Event())
        await updater.start_work()
        try:
            await cancel_seen.wait()
        finally:
            self.cancel_seen.pop(task_id, None)
        await updater.add_artifact([Part(text="done before the cancel")], name="result")
        await updater.complete(
            updater.new_agent_message([Part(text="completed while the cancel was in flight")])
        )

    _SCRIPTED: Final[dict[str, Callable[[_Script, str, TaskUpdater], Awaitable[None]]]] = {
        "fail": _fail,
        "stream-error": _stream_error,
        "slow": _slow,
        "complete-on-cancel": _complete_on_cancel,
    }

    @staticmethod
    async def _refuse_cancel(cancel_seen: asyncio.Event, event_queue: Any) -> None:
        """Let the task complete, wait until COMPLETED is stored, then refuse the cancel.

        Returning normally would make a2a-sdk answer the CancelTask with the COMPLETED task
        (a success), and raising while the task's event queue is open would make it write
        FAILED over COMPLETED. So: tap the queue, release `_complete_on_cancel`, and read
        the tap until the queue closes, which a2a-sdk does only after the consumer stored
        the terminal state. Then raise TaskNotCancelableError.
        """
        from a2a.utils.errors import TaskNotCancelableError  # noqa: PLC0415

        sink = await event_queue.tap()
        cancel_seen.set()
        with contextlib.suppress(queue_shut_down()):
            while True:
                await sink.dequeue_event()
                sink.task_done()
        raise TaskNotCancelableError(message="the task completed while the cancel was in flight")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task (a ``complete-on-cancel`` task's cancel is refused once it completes)."""
        from a2a.server.tasks import TaskUpdater  # noqa: PLC0415

        task_id = context.task_id or ""
        cancel_seen = self.cancel_seen.get(task_id)
        if cancel_seen is not None:
            await self._refuse_cancel(cancel_seen, event_queue)
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel()
        release = self.release.pop(task_id, None)
        if release is not None:
            release.set()


# --------------------------------------------------------------------------------------------
# The peer
# --------------------------------------------------------------------------------------------


def _cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the servers left on the loop (SSE watchers, agent tasks) and let it unwind."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.wait(pending, timeout=2.0))


def _quiet_sdk_logging() -> None:
    """Give a2a-sdk's logger a handler so its server-side error logs never hit stderr.

    A library must not configure logging; adding a `logging.NullHandler` only stops Python's
    last-resort handler from printing the server's own tracebacks. Records still propagate to
    whatever handlers the application (or pytest) installed on the root logger.
    """
    logger = logging.getLogger("a2a")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


@dataclass
class _Servers:
    """What the peer's event loop owns while it runs."""

    http: list[tuple[Any, asyncio.Task[None]]] = field(default_factory=list)
    """Each uvicorn server and the task that serves it."""
    sockets: list[Any] = field(default_factory=list)
    grpc_server: Any = None
    handlers: list[Any] = field(default_factory=list)
    """The request handlers to close (one, or one per binding)."""
    stores: dict[str, tuple[LedgerTaskStore, Any]] = field(default_factory=dict)
    """The task stores serving each binding: the one that notes saves, and the one served
    (the dialect's, around it)."""
    recorders: dict[str, RequestRecorder] = field(default_factory=dict)
    """The request recorder of each HTTP origin (with the ``other_origin`` dialect)."""


class EmbeddedPeer:
    """A real a2a-sdk server on 127.0.0.1 serving JSON-RPC, HTTP+JSON and gRPC.

    Use it as a context manager; it starts in a background thread with its own event loop and
    stops (bounded in time) on exit::

        with EmbeddedPeer() as peer:
            response = capture_jsonrpc(peer, "task_not_found")

    The agent executor behaves by the first text part of the incoming message:

    * ``"fail"``: the task ends in TASK_STATE_FAILED (the call itself succeeds);
    * ``"raise"``: the executor raises (the server answers with an internal error);
    * ``"stream-error"``: a working status update, then the executor raises mid-stream;
    * ``"slow"``: stays working until canceled (CancelTask works);
    * ``"complete-on-cancel"``: stays working until a CancelTask reaches the executor, which
      then completes the task (COMPLETED is stored before the answer) and refuses the cancel
      with TASK_NOT_CANCELABLE: the cancel race, lost deterministically;
    * ``"hold"`` (`HOLD`): the task is made and stored WORKING, its history the user's
      message and an agent message, until the test releases it (`release`); it then
      completes with an echo artifact. A held message to a ``MESSAGE_ONLY`` agent holds its
      answer (a Message) instead. Every held run is released when the peer stops;
    * anything else: a working status with an agent message, then an echo artifact and an
      echo status message: the task completes with the history (user message, agent
      message).

    The ``dialect`` (a `PeerDialect`, or a subclass of your own) makes the server behave as
    another server does: its hooks wrap a2a-sdk's task store, request handler, routes and gRPC
    server, so that tasks are stored or answered otherwise, ListTasks refused, one store kept
    per binding, ... With its ``hold_all``, every message but ``"raise"`` is held first, then
    runs its script.

    What the agent did is read from the test thread: `executions` (executor runs per
    messageId), `ledger` (tasks made per messageId, held runs, the state stored of each task,
    with waits bounded by a timeout), `task_ids` and `task` (its stores, whoever owns the
    tasks), `seen_requests` (the headers received, with the ``other_origin`` dialect).

    Attributes:
        streaming: ``capabilities.streaming`` of the card (enforced by the server).
        push_notifications: ``capabilities.pushNotifications`` (enforced by the server).
        extended_card: ``capabilities.extendedAgentCard``. No extended card is configured, so
            GetExtendedAgentCard fails with EXTENDED_AGENT_CARD_NOT_CONFIGURED when True.
        required_extension: URI listed under ``capabilities.extensions`` with required=true
            (advertised only: a2a-sdk does not enforce it).
        startup_timeout: Seconds `start` waits for all servers.
        deduplicate: whether the request handler is wrapped in
            `a2a_client_errors.server.deduplicate` (a resent messageId gets the first task),
            and the card advertises it (its ``DEDUPLICATE_EXTENSION`` entry). The HTTP app is
            then served under `A2AErrorMiddleware`, as a deduplicating agent should be (a
            send its store cannot take is answered 503 with ``Retry-After``).
        dedupe_options: more arguments for ``deduplicate`` (``store``, ``ttl``,
            ``credential_headers``, ``caller``, ...), when ``deduplicate`` is set.
        grpc_interceptors: ``grpc.aio`` server interceptors for the gRPC server (they see a
            call before the dialect's own).
        dialect: How the server departs from a2a-sdk (a `PeerDialect`; the default, the base
            class itself, does not).
        ledger: What the agent did (a `Ledger`).
        jsonrpc_url: URL of the JSON-RPC endpoint.
        rest_url: Base URL of the HTTP+JSON routes.
        other_rest_url: Base URL of the HTTP+JSON routes on the other origin ("" without the
            ``other_origin`` dialect).
        grpc_target: ``"127.0.0.1:PORT"`` of the gRPC server.
        card_url: URL of the public agent card.
        agent_card: The card (an a2a-sdk ``AgentCard`` protobuf message).

    """

    def __init__(
        self,
        *,
        streaming: bool = True,
        push_notifications: bool = False,
        extended_card: bool = True,
        required_extension: str | None = DEFAULT_REQUIRED_EXTENSION,
        startup_timeout: float = 10.0,
        deduplicate: bool = False,
        dedupe_options: Mapping[str, Any] | None = None,
        grpc_interceptors: tuple[Any, ...] = (),
        dialect: PeerDialect | None = None,
    ) -> None:
        if dialect is None:
            dialect = PeerDialect()
        if not isinstance(dialect, PeerDialect):
            raise TypeError(f"dialect must be a PeerDialect, not {type(dialect).__name__}")
        self.streaming = streaming
        self.push_notifications = push_notifications
        self.extended_card = extended_card
        self.required_extension = required_extension
        self.startup_timeout = startup_timeout
        self.deduplicate = deduplicate
        self.dedupe_options = dict(dedupe_options or {})
        self.grpc_interceptors = tuple(grpc_interceptors)
        self.dialect = dialect
        self.ledger = Ledger()
        self.jsonrpc_url = ""
        self.rest_url = ""
        self.other_rest_url = ""
        self.grpc_target = ""
        self.card_url = ""
        self.agent_card: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._stop_requested = threading.Event()
        self._startup_error: BaseException | None = None
        self._servers = _Servers()

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the servers are up and `stop` has not been called."""
        return (
            self._ready.is_set()
            and self._startup_error is None
            and not self._stop_requested.is_set()
            and self._thread is not None
            and self._thread.is_alive()
        )

    def start(self) -> None:
        """Start the servers in a background thread and wait until they listen.

        Raises:
            ImportError: If a2a-sdk, uvicorn or grpcio is not installed.
            RuntimeError: If the servers are not up within ``startup_timeout`` or fail to
                start, or if the peer was already started.

        """
        if self._thread is not None:
            raise RuntimeError("an EmbeddedPeer can be started only once")
        require_dependencies("EmbeddedPeer")
        _quiet_sdk_logging()
        self._thread = threading.Thread(
            target=self._run, name="a2a-client-errors-embedded-peer", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError(
                f"the embedded a2a-sdk peer did not start within {self.startup_timeout:g}s"
            )
        if self._startup_error is not None:
            error = self._startup_error
            self.stop()
            raise RuntimeError(f"the embedded a2a-sdk peer failed to start: {error}") from error

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop all servers and join the thread (bounded by ``timeout`` seconds).

        Every held run is released first (its task completes if the servers still answer).
        Safe to call more than once, and while the peer is still starting: the thread then
        stops the servers as soon as they are up.

        Args:
            timeout: Seconds to wait for the servers to stop and the thread to end.

        Returns:
            Whether the servers' thread has ended (also True for a peer never started).

        """
        self._stop_requested.set()
        self.ledger.close()
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(stop.set)
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def http_target(self) -> str:
        """``"127.0.0.1:PORT"`` of the HTTP server (JSON-RPC and HTTP+JSON), "" before start."""
        return httpx.URL(self.jsonrpc_url).netloc.decode() if self.jsonrpc_url else ""

    @property
    def origin(self) -> str:
        """``"http://127.0.0.1:PORT"`` of the HTTP server, "" before start."""
        return _origin_of(self.jsonrpc_url)

    @property
    def other_origin(self) -> str:
        """The other origin's ``"http://127.0.0.1:PORT"`` (``other_origin`` dialect), or ""."""
        return _origin_of(self.other_rest_url)

    def via(self, origin: str) -> Any:
        """A copy of the agent card whose HTTP interfaces point at ``origin`` (a proxy's).

        Args:
            origin: ``"http://127.0.0.1:PORT"`` of what stands between a client and the agent.
        """
        from a2a.types import AgentCard  # noqa: PLC0415

        card = AgentCard()
        card.CopyFrom(self.agent_card)
        here = httpx.URL(self.jsonrpc_url)
        there = httpx.URL(origin)
        for interface in card.supported_interfaces:
            url = httpx.URL(interface.url)
            if url.scheme == "http" and url.netloc == here.netloc:
                interface.url = str(url.copy_with(host=there.host, port=there.port))
        return card

    # -- what the agent did ------------------------------------------------------------------

    @property
    def executions(self) -> Counter[str]:
        """Executor runs per messageId, over every binding (a copy, safe from any thread).

        What a test counts as "runs per logical send" for agents that make no task.
        """
        return self.ledger.executions

    def release(self, message_id: str | None = None) -> int:
        """Let held work go on (``ledger.release``: a release before the run is kept).

        Args:
            message_id: The messageId of the held message (remembered if not held yet), or
                None for every run held now.

        Returns:
            How many held runs were released.
        """
        return self.ledger.release(message_id)

    def _stores(self, binding: str | None) -> list[tuple[LedgerTaskStore, Any]]:
        """The distinct stores serving ``binding``, or every binding (None): (noted, served)."""
        stores = self._servers.stores
        if binding is None:
            return list(dict.fromkeys(stores.values()))
        if binding not in BINDINGS:
            raise ValueError(f"unknown binding {binding!r}; use one of {BINDINGS}")
        return [stores[binding]] if binding in stores else []

    def task_ids(self, binding: str | None = None) -> list[str]:
        """The ids of every task the agent holds, read from its task stores (not the wire).

        What the exactly-once tests count: how many tasks the agent made, whatever its
        clients saw, whoever owns them. Sub-tasks and `fill`'s tasks are included.

        Args:
            binding: Only the store serving this binding (`JSONRPC`, `REST`, `GRPC`); they
                differ with the ``separate_stores`` dialect. None: every store.
        """
        stores = self._stores(binding)

        async def read() -> list[str]:
            return list(dict.fromkeys(i for noted, _ in stores for i in noted.task_ids()))

        return self.call(read())

    def task(self, task_id: str, binding: str | None = None) -> Any:
        """Task ``task_id`` as the agent's store holds it (an a2a-sdk ``Task``), or None.

        As stored: shaped by the dialect (e.g. no user message), never trimmed as GetTask
        answers it.

        Args:
            task_id: A task id.
            binding: Only the store serving this binding; None: the first store holding it.
        """
        stores = self._stores(binding)

        async def read() -> Any:
            for noted, _ in stores:
                found = await noted.read(task_id)
                if found is not None:
                    return found
            return None

        return self.call(read())

    def fill(
        self,
        count: int,
        *,
        artifact_bytes: int = 400 * 1024,
        context_id: str | None = None,
        binding: str | None = None,
        spread: float = 300.0,
    ) -> list[str]:
        """Store ``count`` completed tasks with large artifacts, at once (a busy agent).

        Each task has a history of a user message and an agent message, one text artifact of
        ``artifact_bytes`` characters, and a ``status.timestamp`` spread evenly over the last
        ``spread`` seconds, oldest first. They are stored through the dialect (no user message
        or no timestamp if it says so), as the anonymous caller's, and no executor runs.

        Args:
            count: How many tasks to store.
            artifact_bytes: Size of each task's artifact text, in bytes.
            context_id: The contextId of every task; None: each its own.
            binding: The binding whose store takes them (None: the JSON-RPC one, which is
                every binding's unless the stores are separate).
            spread: Seconds before now that the oldest task's timestamp lies.

        Returns:
            The ids of the tasks stored, oldest first.

        Raises:
            ValueError: For a negative count or size, or an unknown binding.
            RuntimeError: If the peer is not running.
        """
        if count < 0 or artifact_bytes < 0 or spread < 0:
            raise ValueError("count, artifact_bytes and spread must not be negative")
        stores = self._stores(binding or JSONRPC)
        if not stores:
            raise RuntimeError("the embedded peer is not running")
        _, store = stores[0]  # through the dialect's store, as the agent's own saves

        async def write() -> list[str]:
            from a2a.server.context import ServerCallContext  # noqa: PLC0415

            now = time.time_ns()
            ids = []
            for index in range(count):
                stamp = now - int(spread * 1e9) + int(index * spread * 1e9 / max(count, 1))
                task = _filled_task(index, artifact_bytes, context_id, stamp)
                await store.save(task, ServerCallContext())
                ids.append(task.id)
            return ids

        return self.call(write(), timeout=DEFAULT_TIMEOUT + count * 0.1)

    def seen_requests(self, origin: str | None = None) -> list[SeenRequest]:
        """The HTTP requests an origin received, oldest first (``other_origin`` dialect).

        Args:
            origin: `origin` (None) or `other_origin`.

        Raises:
            ValueError: Without the ``other_origin`` dialect (nothing is recorded), or for an
                origin that is not the peer's.
        """
        recorders = self._servers.recorders
        if not recorders:
            raise ValueError("requests are recorded only with the other_origin dialect")
        wanted = self.origin if origin is None else origin.rstrip("/")
        if wanted not in recorders:
            raise ValueError(f"{origin!r} is not one of the peer's origins: {sorted(recorders)}")
        return recorders[wanted].seen()

    def call(self, coro: Coroutine[Any, Any, _T], timeout: float = DEFAULT_TIMEOUT) -> _T:
        """Run ``coro`` on the peer's event loop and wait for it (bounded).

        Args:
            coro: The coroutine to run.
            timeout: Seconds to wait for its result.

        Returns:
            The coroutine's result.

        Raises:
            RuntimeError: If the peer is not running.
            TimeoutError: If the coroutine does not finish in time (it is then cancelled).

        """
        loop = self._loop
        if loop is None or not self.running:
            coro.close()
            raise RuntimeError("the embedded peer is not running")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"the call did not finish within {timeout:g}s") from None

    # -- the background thread ---------------------------------------------------------------

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self._main(loop))
        except BaseException as exc:  # reported to the thread that called start()
            if self._startup_error is None and not self._ready.is_set():
                self._startup_error = exc
        finally:
            try:
                _cancel_remaining_tasks(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()
                self._ready.set()

    async def _main(self, loop: asyncio.AbstractEventLoop) -> None:
        self._stop = asyncio.Event()
        self._loop = loop
        try:
            if not self._stop_requested.is_set():
                await self._start_servers()
        except BaseException as exc:
            self._startup_error = exc
            await self._stop_servers()
            self._ready.set()
            return
        self._ready.set()
        # stop() may have run before self._stop existed: it always sets the thread-safe flag.
        if not self._stop_requested.is_set():
            await self._stop.wait()
        await self._stop_servers()

    def _build_card(self, base_url: str, grpc_target: str, other_url: str) -> Any:
        """The peer's card: its interfaces (and the other origin's), capabilities, one skill."""
        from a2a.types import (  # noqa: PLC0415
            AgentCapabilities,
            AgentCard,
            AgentExtension,
            AgentInterface,
            AgentSkill,
        )

        extensions = []
        if self.required_extension:
            extensions.append(
                AgentExtension(
                    uri=self.required_extension,
                    description="A test extension the card declares as required.",
                    required=True,
                )
            )
        served = [
            (base_url + _JSONRPC_PATH, "JSONRPC"),
            (base_url + _REST_PREFIX, "HTTP+JSON"),
            (grpc_target, "GRPC"),
        ]
        if other_url:
            served.append((other_url + _REST_PREFIX, "HTTP+JSON"))
        interfaces = [
            AgentInterface(url=url, protocol_binding=binding, protocol_version=PROTOCOL_VERSION)
            for url, binding in served
        ]
        return AgentCard(
            name="a2a-client-errors embedded peer",
            description="A real a2a-sdk server that produces A2A errors on request.",
            version="1.0.0",
            supported_interfaces=interfaces,
            capabilities=AgentCapabilities(
                streaming=self.streaming,
                push_notifications=self.push_notifications,
                extended_agent_card=self.extended_card,
                extensions=extensions,
            ),
            default_input_modes=list(DEFAULT_INPUT_MODES),
            default_output_modes=["text/plain"],
            skills=[
                AgentSkill(
                    id="echo",
                    name="echo",
                    description="Echoes the text; 'fail', 'raise', 'stream-error' and 'slow' "
                    "trigger errors, 'hold' waits until released.",
                    tags=["test"],
                )
            ],
        )

    def _handlers(self, card: Any) -> dict[str, Any]:
        """The request handler serving each binding: one, or one per binding (own store)."""
        from a2a.server.request_handlers import DefaultRequestHandler  # noqa: PLC0415
        from a2a.server.tasks import (  # noqa: PLC0415
            InMemoryPushNotificationConfigStore,
            InMemoryTaskStore,
        )

        servers = self._servers
        handlers: dict[str, Any] = {}
        for binding in BINDINGS:
            if handlers and not self.dialect.separate_stores:
                handlers[binding] = handlers[JSONRPC]
                servers.stores[binding] = servers.stores[JSONRPC]
                continue
            noted = LedgerTaskStore(InMemoryTaskStore(), self.ledger)
            store = self.dialect.task_store(noted, self.ledger)
            handler: Any = DefaultRequestHandler(  # the store is a TaskStore by its methods
                agent_executor=_make_executor(self.ledger, self.dialect),
                task_store=cast("Any", store),
                agent_card=card,
                push_config_store=(
                    InMemoryPushNotificationConfigStore() if self.push_notifications else None
                ),
                validate_input_modes=True,
            )
            servers.handlers.append(handler)
            servers.stores[binding] = (noted, store)
            handler = self.dialect.request_handler(handler)
            if self.deduplicate:
                from a2a_client_errors.server import deduplicate  # noqa: PLC0415

                handler = deduplicate(handler, card=card, **self.dedupe_options)
            handlers[binding] = handler
        return handlers

    async def _start_servers(self) -> None:
        import grpc.aio  # noqa: PLC0415
        from a2a.server.request_handlers import GrpcHandler  # noqa: PLC0415
        from a2a.server.routes import create_agent_card_routes  # noqa: PLC0415
        from a2a.types import a2a_pb2_grpc  # noqa: PLC0415
        from starlette.applications import Starlette  # noqa: PLC0415

        servers = self._servers
        dialect = self.dialect
        interceptors = (*self.grpc_interceptors, *dialect.grpc_interceptors())
        grpc_server = grpc.aio.server(interceptors=interceptors or None)
        servers.grpc_server = grpc_server
        grpc_port = int(grpc_server.add_insecure_port("127.0.0.1:0"))
        if grpc_port == 0:
            raise RuntimeError("could not bind the gRPC server to 127.0.0.1")
        base_url = self._listen()
        other_url = self._listen() if dialect.other_origin else ""
        grpc_target = f"127.0.0.1:{grpc_port}"

        card = self._build_card(base_url, grpc_target, other_url)
        handlers = self._handlers(card)
        stubs: Any = a2a_pb2_grpc  # generated code without annotations
        stubs.add_A2AServiceServicer_to_server(
            GrpcHandler(handlers[GRPC], context_builder=dialect.grpc_context_builder()),
            grpc_server,
        )
        await grpc_server.start()

        rest = dialect.rest_routes(handlers[REST], _REST_PREFIX)
        middleware: list[Any] = []
        if self.deduplicate:
            from starlette.middleware import Middleware  # noqa: PLC0415

            from a2a_client_errors.server import A2AErrorMiddleware  # noqa: PLC0415

            middleware.append(Middleware(A2AErrorMiddleware, binding="jsonrpc"))
        app: Any = Starlette(
            routes=[
                *create_agent_card_routes(card, card_url=_CARD_PATH),
                *dialect.jsonrpc_routes(handlers[JSONRPC], _JSONRPC_PATH),
                *rest,
            ],
            middleware=middleware,
        )
        apps: list[Any] = [app]
        if other_url:
            apps = [RequestRecorder(app), RequestRecorder(Starlette(routes=rest))]
            servers.recorders = dict(zip((base_url, other_url), apps, strict=True))
        for served, sock in zip(apps, servers.sockets, strict=True):
            await self._serve_http(served, sock)

        self.agent_card = card
        self.jsonrpc_url = base_url + _JSONRPC_PATH
        self.rest_url = base_url + _REST_PREFIX
        self.other_rest_url = other_url + _REST_PREFIX if other_url else ""
        self.grpc_target = grpc_target
        self.card_url = base_url + _CARD_PATH

    def _listen(self) -> str:
        """Bind a socket on an ephemeral port of 127.0.0.1; return its origin."""
        import socket  # noqa: PLC0415

        # IPPROTO_TCP (not 0): asyncio then sets TCP_NODELAY on every accepted connection, so
        # a response's headers and body never wait for the client's delayed ACK (~40 ms).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._servers.sockets.append(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{int(sock.getsockname()[1])}"

    async def _serve_http(self, app: Any, sock: Any) -> None:
        """Serve ``app`` with uvicorn on ``sock``; return once it listens."""
        import uvicorn  # noqa: PLC0415

        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        self._servers.http.append((server, task))
        deadline = asyncio.get_running_loop().time() + self.startup_timeout
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped before it started listening")
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError("uvicorn did not start listening in time")
            await asyncio.sleep(0.01)

    async def _stop_servers(self) -> None:
        """Release held work, then stop uvicorn, gRPC and the handlers, each step bounded."""
        self.ledger.close()
        servers = self._servers
        for server, _ in servers.http:
            server.should_exit = True
        if servers.http:
            _, pending = await asyncio.wait({task for _, task in servers.http}, timeout=3.0)
            for server, task in servers.http:
                if task in pending:
                    server.force_exit = True
                    task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=2.0)
        if servers.grpc_server is not None:
            await _bounded(servers.grpc_server.stop(0.5), 3.0)
        closing = (handler.aclose() for handler in servers.handlers)
        await _bounded(asyncio.gather(*closing, return_exceptions=True), 3.0)
        for sock in servers.sockets:
            sock.close()
        servers.sockets.clear()


def _origin_of(url: str) -> str:
    """``scheme://host:port`` of ``url``, or "" for ""."""
    if not url:
        return ""
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.netloc.decode()}"


def _filled_task(index: int, artifact_bytes: int, context_id: str | None, stamp_ns: int) -> Any:
    """One completed task of `EmbeddedPeer.fill`, its status stamped ``stamp_ns``."""
    from a2a.types import (  # noqa: PLC0415
        Artifact,
        Message,
        Part,
        Role,
        Task,
        TaskState,
        TaskStatus,
    )

    task_id = f"filled-{uuid.uuid4()}"
    context = context_id or f"ctx-{uuid.uuid4()}"
    user = Message(
        message_id=f"msg-{uuid.uuid4()}",
        context_id=context,
        task_id=task_id,
        role=Role.ROLE_USER,
        parts=[Part(text=f"filled task {index}")],
    )
    agent = Message(
        message_id=f"agent-{uuid.uuid4()}",
        context_id=context,
        task_id=task_id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=f"done: filled task {index}")],
    )
    artifact = Artifact(artifact_id=f"artifact-{index}", name="result")
    artifact.parts.add(text="x" * artifact_bytes)
    task = Task(
        id=task_id,
        context_id=context,
        status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
        history=[user, agent],
        artifacts=[artifact],
    )
    task.status.timestamp.FromNanoseconds(stamp_ns)
    return task


async def _bounded(step: Awaitable[Any], timeout: float) -> None:
    """Run one shutdown step; a step that fails or hangs must not block the others."""
    try:
        await asyncio.wait_for(step, timeout)
    except Exception:  # teardown of a test server: nothing to act on
        logging.getLogger("a2a_client_errors.peer").debug(
            "embedded peer shutdown step failed", exc_info=True
        )


# --------------------------------------------------------------------------------------------
# What each scenario sends
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    """The request a scenario makes, independent of the binding."""

    operation: str
    params: Mapping[str, Any]
    version: str = PROTOCOL_VERSION
    """The A2A-Version to send; empty to send none."""
    send_extension: bool = True
    raw_body: bytes | None = None
    jsonrpc_version: str = "2.0"


def _user_message(text: str) -> dict[str, Any]:
    return {
        "messageId": f"msg-{uuid.uuid4()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }


def _http_headers(peer: EmbeddedPeer, call: _Call, *, stream: bool) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream" if stream else "application/json",
    }
    if call.version:
        headers[VERSION_HEADER] = call.version
    if call.send_extension and peer.required_extension:
        headers[EXTENSIONS_HEADER] = peer.required_extension
    return headers


def _jsonrpc_result(peer: EmbeddedPeer, method: str, params: Mapping[str, Any]) -> Any:
    """Make one well-formed JSON-RPC call and return its ``result`` (setup only)."""
    call = _Call(method, params)
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": dict(params)}
    with httpx.Client(timeout=DEFAULT_TIMEOUT) as client:
        response = client.post(
            peer.jsonrpc_url, json=body, headers=_http_headers(peer, call, stream=False)
        )
    payload = response.json()
    if "result" not in payload:
        raise RuntimeError(f"setup call {method} failed on the embedded peer: {payload!r}")
    return payload["result"]


def _new_task(peer: EmbeddedPeer, text: str, *, return_immediately: bool = False) -> str:
    params: dict[str, Any] = {"message": _user_message(text)}
    if return_immediately:
        params["configuration"] = {"returnImmediately": True}
    result = _jsonrpc_result(peer, "SendMessage", params)
    return str(result["task"]["id"])


def _plan(peer: EmbeddedPeer, spec: Scenario, binding: str) -> _Call:
    """Prepare the peer for ``spec`` (create tasks) and return the request to send."""
    name = spec.name
    if name == "task_not_found":
        return _Call("GetTask", {"id": f"task-never-issued-{uuid.uuid4()}"})
    if name == "task_not_cancelable":
        return _Call("CancelTask", {"id": _new_task(peer, "hello")})
    if name == "push_not_supported":
        task_id = _new_task(peer, "hello")
        return _Call(
            "CreateTaskPushNotificationConfig", {"taskId": task_id, "url": _UNUSED_PUSH_URL}
        )
    if name == "unsupported_operation":
        return _Call("SendStreamingMessage", {"message": _user_message("hello")})
    if name == "subscribe_terminal":
        return _Call("SubscribeToTask", {"id": _new_task(peer, "hello")})
    if name == "extended_card_not_configured":
        return _Call("GetExtendedAgentCard", {})
    if name == "extension_required":
        return _Call("SendMessage", {"message": _user_message("hello")}, send_extension=False)
    if name == "version_not_supported":
        return _Call("SendMessage", {"message": _user_message("hello")}, version="99.0")
    if name == "version_header_missing":
        return _Call("SendMessage", {"message": _user_message("hello")}, version="")
    if name == "content_type_not_supported":
        message = _user_message("hello")
        message["parts"] = [
            {
                "raw": base64.b64encode(b"\x89PNG\r\n\x1a\n").decode("ascii"),
                "mediaType": "image/png",
                "filename": "pixel.png",
            }
        ]
        return _Call("SendMessage", {"message": message})
    if name == "internal_error":
        return _Call("SendMessage", {"message": _user_message("raise")})
    if name == "failed_task":
        return _Call("SendMessage", {"message": _user_message("fail")})
    if name == "stream_error_midway":
        return _Call("SendStreamingMessage", {"message": _user_message("stream-error")})
    if name == "parse_error":
        return _Call("SendMessage", {}, raw_body=b'{"jsonrpc": "2.0", "method": "SendMessage", ')
    if name == "invalid_request":
        if binding == REST:
            return _Call("SendMessage", {}, raw_body=b'{"message": {"messageId": ')
        return _Call("GetTask", {"id": "any"}, jsonrpc_version="1.0")
    if name == "method_not_found":
        return _Call("tasks/teleport", {})
    if name == "invalid_params":
        return _Call("SendMessage", {"message": {"role": "ROLE_USER"}})
    if name == "cancel_working":
        return _Call("CancelTask", {"id": _new_task(peer, "slow", return_immediately=True)})
    raise KeyError(f"no request is defined for scenario {name!r}")


def _check(peer: EmbeddedPeer, spec: Scenario, binding: str, *, allow_unproduced: bool) -> None:
    if not peer.running:
        raise RuntimeError("the embedded peer is not running")
    if spec.streaming_peer != peer.streaming:
        wanted = "on" if spec.streaming_peer else "off"
        raise ValueError(f"scenario {spec.name!r} needs a peer with streaming {wanted}")
    if binding in spec.bindings or (allow_unproduced and binding in spec.accepted_on):
        return
    if binding in spec.accepted_on:
        raise ValueError(
            f"a2a-sdk's server accepts the request of {spec.name!r} on {binding} "
            f"(pass allow_unproduced=True to send it anyway): {spec.note}"
        )
    raise ValueError(f"scenario {spec.name!r} has no request on {binding}: {spec.note}")


# --------------------------------------------------------------------------------------------
# Captures
# --------------------------------------------------------------------------------------------


def capture_jsonrpc(
    peer: EmbeddedPeer,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> httpx.Response:
    """POST the scenario's request to the JSON-RPC endpoint and return the raw response.

    Streaming methods are read to the end: the returned response's body is then the SSE text
    (or a plain JSON error when the server refuses before streaming).

    Args:
        peer: A running peer with the streaming setting the scenario needs.
        scenario_name: A name from `SCENARIOS`.
        timeout: Seconds the whole exchange may take.
        allow_unproduced: Also send the request on a binding of ``accepted_on``, where the
            server accepts it instead of failing (to observe what it does instead).

    Returns:
        The ``httpx.Response``, body read.

    """
    spec = scenario(scenario_name)
    _check(peer, spec, JSONRPC, allow_unproduced=allow_unproduced)
    call = _plan(peer, spec, JSONRPC)
    stream = call.operation in STREAMING_OPERATIONS
    if call.raw_body is not None:
        content = call.raw_body
    else:
        envelope = {
            "jsonrpc": call.jsonrpc_version,
            "id": f"req-{uuid.uuid4()}",
            "method": call.operation,
            "params": dict(call.params),
        }
        content = json.dumps(envelope).encode("utf-8")
    with httpx.Client(timeout=timeout) as client:
        return client.post(
            peer.jsonrpc_url, content=content, headers=_http_headers(peer, call, stream=stream)
        )


def capture_rest(
    peer: EmbeddedPeer,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> httpx.Response:
    """Send the scenario's request to the HTTP+JSON routes and return the raw response.

    Args:
        peer: A running peer with the streaming setting the scenario needs.
        scenario_name: A name from `SCENARIOS`.
        timeout: Seconds the whole exchange may take.
        allow_unproduced: Also send the request on a binding of ``accepted_on``, where the
            server accepts it instead of failing (to observe what it does instead).

    Returns:
        The ``httpx.Response``, body read (SSE text for streaming routes).

    """
    spec = scenario(scenario_name)
    _check(peer, spec, REST, allow_unproduced=allow_unproduced)
    call = _plan(peer, spec, REST)
    method, path, body = rest_request(call.operation, call.params)
    stream = call.operation in STREAMING_OPERATIONS
    headers = _http_headers(peer, call, stream=stream)
    content: bytes | None
    if call.raw_body is not None:
        content = call.raw_body
    elif body is not None:
        content = json.dumps(body).encode("utf-8")
    else:
        content = None
        headers.pop("Content-Type")
    with httpx.Client(timeout=timeout) as client:
        return client.request(method, peer.rest_url + path, content=content, headers=headers)


def _grpc_metadata(peer: EmbeddedPeer, call: _Call) -> list[tuple[str, str]]:
    metadata = []
    if call.version:
        metadata.append((VERSION_HEADER.lower(), call.version))
    if call.send_extension and peer.required_extension:
        metadata.append((EXTENSIONS_HEADER.lower(), peer.required_extension))
    return metadata


def capture_grpc(
    peer: EmbeddedPeer,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> Any:
    """Call the peer's gRPC service for the scenario and return what happened.

    Args:
        peer: A running peer with the streaming setting the scenario needs.
        scenario_name: A name from `SCENARIOS`.
        timeout: gRPC deadline in seconds.
        allow_unproduced: Also send the request on a binding of ``accepted_on``, where the
            server accepts it instead of failing (to observe what it does instead).

    Returns:
        The raised ``grpc.RpcError`` (also a ``grpc.Call``: ``code()``, ``details()`` and
        ``trailing_metadata()`` with ``grpc-status-details-bin`` when the server sent one), or
        the response message on success (a list of ``StreamResponse`` for streaming calls).
        For a stream that fails after some events, the error is returned and the events are
        lost; use `capture_grpc_stream` to keep both.

    """
    _events, outcome = capture_grpc_stream(
        peer, scenario_name, timeout=timeout, allow_unproduced=allow_unproduced
    )
    return outcome


def capture_grpc_stream(
    peer: EmbeddedPeer,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> tuple[list[Any], Any]:
    """Like `capture_grpc`, but also return the stream events received before an error.

    Args:
        peer: A running peer with the streaming setting the scenario needs.
        scenario_name: A name from `SCENARIOS`.
        timeout: gRPC deadline in seconds.
        allow_unproduced: Also send the request on a binding of ``accepted_on``, where the
            server accepts it instead of failing (to observe what it does instead).

    Returns:
        ``(events, outcome)``: the ``StreamResponse`` messages received (empty for unary
        calls), and the ``grpc.RpcError`` or the response (the events list for a stream that
        ended normally).

    """
    grpc = _import_grpc()
    from a2a.types import a2a_pb2, a2a_pb2_grpc  # noqa: PLC0415
    from google.protobuf.json_format import ParseDict  # noqa: PLC0415

    spec = scenario(scenario_name)
    _check(peer, spec, GRPC, allow_unproduced=allow_unproduced)
    call = _plan(peer, spec, GRPC)
    request_type = getattr(a2a_pb2, BY_NAME[call.operation].grpc_request)
    request = ParseDict(dict(call.params), request_type())
    metadata = _grpc_metadata(peer, call)
    events: list[Any] = []
    with grpc.insecure_channel(peer.grpc_target) as channel:
        stubs: Any = a2a_pb2_grpc  # generated code without annotations
        stub = stubs.A2AServiceStub(channel)
        method = getattr(stub, call.operation)
        try:
            if call.operation in STREAMING_OPERATIONS:
                for event in method(request, timeout=timeout, metadata=metadata):
                    events.append(event)  # noqa: PERF402 - a stream, not a list to copy
                return events, events
            return events, method(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as error:
            return events, error


def capture(
    peer: EmbeddedPeer,
    binding: str,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> Any:
    """Dispatch to `capture_jsonrpc`, `capture_rest` or `capture_grpc` by ``binding``.

    Args:
        peer: A running peer.
        binding: `JSONRPC`, `REST` or `GRPC`.
        scenario_name: A name from `SCENARIOS`.
        timeout: Seconds the exchange may take.
        allow_unproduced: See `capture_jsonrpc`.

    Returns:
        The raw capture of that binding.

    Raises:
        ValueError: For an unknown binding.

    """
    captures: Mapping[str, Callable[..., Any]] = {
        JSONRPC: capture_jsonrpc,
        REST: capture_rest,
        GRPC: capture_grpc,
    }
    try:
        func = captures[binding]
    except KeyError:
        raise ValueError(f"unknown binding {binding!r}; use one of {BINDINGS}") from None
    return func(peer, scenario_name, timeout=timeout, allow_unproduced=allow_unproduced)


# --------------------------------------------------------------------------------------------
# a2a-sdk's own client
# --------------------------------------------------------------------------------------------


def capture_sdk(
    peer: EmbeddedPeer,
    binding: str,
    scenario_name: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    allow_unproduced: bool = False,
) -> Any:
    """Run the scenario through a2a-sdk's client (``ClientFactory``) on ``binding``.

    The client is built by ``ClientFactory`` from the peer's card, restricted to one binding,
    and runs on the peer's event loop.

    Args:
        peer: A running peer with the streaming setting the scenario needs.
        binding: `JSONRPC`, `REST` or `GRPC`.
        scenario_name: A name from `SCENARIOS`.
        timeout: Seconds the call may take.
        allow_unproduced: Also send the request on a binding of ``accepted_on``, where the
            server accepts it instead of failing (to observe what it does instead).

    Returns:
        The exception a2a-sdk's client raised, or its result on success (a list of
        ``StreamResponse`` for SendMessage and streaming calls, else the response message).

    Raises:
        ValueError: If the SDK client cannot send the scenario's request on ``binding``.

    """
    spec = scenario(scenario_name)
    if binding not in BINDINGS:
        raise ValueError(f"unknown binding {binding!r}; use one of {BINDINGS}")
    if binding not in spec.sdk_bindings:
        raise ValueError(
            f"a2a-sdk's client cannot send the request of {spec.name!r} on {binding}: {spec.note}"
        )
    _check(peer, spec, binding, allow_unproduced=allow_unproduced)
    call = _plan(peer, spec, binding)
    return peer.call(_sdk_call(peer, binding, call, timeout), timeout=timeout + 5.0)


async def _sdk_call(peer: EmbeddedPeer, binding: str, call: _Call, timeout: float) -> Any:
    from a2a.client import ClientCallContext, ClientConfig, ClientFactory  # noqa: PLC0415
    from a2a.types import a2a_pb2  # noqa: PLC0415
    from a2a.utils.constants import TransportProtocol  # noqa: PLC0415
    from google.protobuf.json_format import ParseDict  # noqa: PLC0415

    protocol = {
        JSONRPC: TransportProtocol.JSONRPC,
        REST: TransportProtocol.HTTP_JSON,
        GRPC: TransportProtocol.GRPC,
    }[binding]
    headers = {VERSION_HEADER: call.version}
    extension_params: dict[str, str] = {}
    if call.send_extension and peer.required_extension:
        extension_params[EXTENSIONS_HEADER] = peer.required_extension
    http = httpx.AsyncClient(timeout=timeout, headers=headers)
    channel_factory = None
    if binding == GRPC:
        import grpc.aio  # noqa: PLC0415

        channel_factory = grpc.aio.insecure_channel
    config = ClientConfig(
        streaming=call.operation in STREAMING_OPERATIONS,
        httpx_client=http,
        grpc_channel_factory=channel_factory,
        supported_protocol_bindings=[protocol],
    )
    context = ClientCallContext(timeout=timeout, service_parameters=extension_params)
    request_type = getattr(a2a_pb2, BY_NAME[call.operation].grpc_request)
    request = ParseDict(dict(call.params), request_type())
    try:
        client = ClientFactory(config).create(peer.agent_card)
        try:
            return await asyncio.wait_for(
                _invoke(client, call.operation, request, context), timeout=timeout
            )
        except Exception as exc:  # the exception is the capture
            return exc
        finally:
            await client.close()
    finally:
        await http.aclose()


async def _invoke(client: Any, operation: str, request: Any, context: Any) -> Any:
    if operation in ("SendMessage", "SendStreamingMessage"):
        return [event async for event in client.send_message(request, context=context)]
    if operation == "SubscribeToTask":
        return [event async for event in client.subscribe(request, context=context)]
    method = {
        "GetTask": client.get_task,
        "CancelTask": client.cancel_task,
        "CreateTaskPushNotificationConfig": client.create_task_push_notification_config,
        "GetExtendedAgentCard": client.get_extended_agent_card,
    }[operation]
    return await method(request, context=context)
