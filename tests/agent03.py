"""A real a2a-sdk 0.3 agent for the tests: the 0.3 twin of ``tests/errors_agent.py``.

One ``DefaultRequestHandler`` with an ``InMemoryTaskStore`` serves JSON-RPC (``/jsonrpc``),
HTTP+JSON (``/rest/v1/...``) and gRPC, with a card in the 0.3 shape (``url``,
``preferred_transport``, ``additional_interfaces``). Its executor does what the message's text
says:

* ``complete`` (and any text not below): a task that completes with an artifact;
* ``fail`` / ``reject``: a task that ends FAILED / REJECTED, in a successful call;
* ``message``: a Message answer, no task;
* ``ask``: a task that stops in INPUT_REQUIRED (a follow-up message with its ``task_id``
  then does what its own text says);
* ``hold``: a task that stays WORKING until the test sets `Executor03.release` (ten seconds
  at most), then completes; `Executor03.holding` is set once it works;
* ``early:<what>`` (raise before any event) / ``late:<what>`` (make the task, then raise):
  ``what`` is a reason (an `A2AError` with a message and metadata) or ``BUG`` (a
  ``RuntimeError`` holding a secret).

`Executor03.executions` counts how often ``execute`` ran, per messageId.

`serve03` starts the agent on 127.0.0.1 (uvicorn and a ``grpc.aio`` server on one event loop,
in a thread) and stops it, bounded in time. `Unavailable` is an ASGI wrapper that answers 503
to the first sends; a lost answer is `a2a_client_errors.testing.lossy.LossyProxy`'s job (it
knows the 0.3 method names and routes).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc.aio
import uvicorn
from a2a.grpc import a2a_pb2_grpc
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler, RequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)

from a2a_client_errors import A2AError, Reason
from a2a_client_errors.testing.lossy import Seen

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a.server.events import EventQueue

__all__ = [
    "JSONRPC_PATH",
    "REST_PREFIX",
    "SECRET",
    "WRAPS",
    "Agent03",
    "Executor03",
    "Running03",
    "Unavailable",
    "build_agent03",
    "card03",
    "error_for",
    "serve03",
]

JSONRPC_PATH = "/jsonrpc"
REST_PREFIX = "/rest"
SECRET = "token=sk-live-123"
WRAPS = ("none", "errors", "dedupe", "errors-dedupe", "dedupe-errors")
"""How `build_agent03` may wrap the handler (see there)."""
HOLD_LIMIT = 10.0
"""Seconds a ``hold`` task waits for `Executor03.release` at most."""


def error_for(reason: Reason) -> A2AError:
    """The error the executor raises for ``reason``: a message and two metadata entries."""
    return A2AError(reason, f"{reason.value.lower()} here", {"where": "executor", "n": 1})


class Executor03(AgentExecutor):
    """Does what the message's text says (see the module docstring).

    Attributes:
        executions: how often ``execute`` ran, per messageId.
        release: set by a test to let ``hold`` tasks complete.
        holding: set once a ``hold`` task is working.
    """

    def __init__(self) -> None:
        self.executions: Counter[str] = Counter()
        self.release = threading.Event()
        self.holding = threading.Event()
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget the counts; clear both events."""
        with self._lock:
            self.executions.clear()
        self.release.clear()
        self.holding.clear()

    @property
    def total(self) -> int:
        """How often ``execute`` ran, in all."""
        with self._lock:
            return sum(self.executions.values())

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Do what the text says."""
        message_id = context.message.message_id if context.message else ""
        with self._lock:
            self.executions[message_id] += 1
        when, _, what = context.get_user_input().partition(":")
        if when == "early":
            _raise(what)
        task_id, context_id = context.task_id or "", context.context_id or ""
        if when == "message":
            await event_queue.enqueue_event(
                Message(
                    role=Role.agent,
                    message_id=f"answer-{message_id}",
                    parts=[Part(root=TextPart(text="an answer, no task"))],
                    context_id=context_id,
                )
            )
            return
        if context.current_task is None:  # a follow-up's task exists: it goes on working
            task = Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.submitted),
                history=[context.message] if context.message else None,
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        if when == "late":
            _raise(what)
        if when == "fail":
            await updater.failed(updater.new_agent_message([Part(root=TextPart(text="failed"))]))
            return
        if when == "reject":
            await updater.reject(updater.new_agent_message([Part(root=TextPart(text="no"))]))
            return
        if when == "ask":
            await updater.requires_input(
                updater.new_agent_message([Part(root=TextPart(text="and then?"))]), final=True
            )
            return
        if when == "hold":
            self.holding.set()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.release.wait, HOLD_LIMIT)
        await updater.add_artifact([Part(root=TextPart(text="done"))], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def _raise(what: str) -> None:
    if what == "BUG":
        raise RuntimeError(f"the executor broke, {SECRET}")
    raise error_for(Reason(what))


def card03(
    base_url: str = "http://127.0.0.1",
    grpc_target: str = "127.0.0.1:0",
    *,
    streaming: bool = True,
    push_notifications: bool = False,
    extended_card: bool = False,
    preferred: str = "JSONRPC",
) -> AgentCard:
    """The agent's 0.3 card: the three bindings, ``preferred`` first (``url``)."""
    urls = {
        "JSONRPC": base_url + JSONRPC_PATH,
        "HTTP+JSON": base_url + REST_PREFIX,
        "GRPC": grpc_target,
    }
    return AgentCard(
        name="agent 0.3",
        description="Does what its message says.",
        version="1.0.0",
        protocol_version="0.3.0",
        url=urls[preferred],
        preferred_transport=preferred,
        additional_interfaces=[AgentInterface(url=u, transport=t) for t, u in urls.items()],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=push_notifications),
        supports_authenticated_extended_card=extended_card,
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="do", name="do", description="Does it.", tags=["test"])],
    )


def _wrapped(
    inner: RequestHandler, wrap: str, card: AgentCard, options: dict[str, Any]
) -> RequestHandler:
    if wrap == "none":
        return inner
    from a2a_client_errors.server import deduplicate, with_a2a_errors

    wrapped: RequestHandler
    if wrap == "errors":
        wrapped = with_a2a_errors(inner)
    elif wrap == "dedupe":
        wrapped = deduplicate(inner, card=card, **options)
    elif wrap == "errors-dedupe":
        wrapped = with_a2a_errors(deduplicate(inner, card=card, **options))
    elif wrap == "dedupe-errors":
        wrapped = deduplicate(with_a2a_errors(inner), card=card, **options)
    else:
        msg = f"wrap must be one of {WRAPS}, not {wrap!r}"
        raise ValueError(msg)
    return wrapped


@dataclass
class Agent03:
    """One agent: its executor, its card, its (wrapped) handler, and its two servers' parts."""

    executor: Executor03
    card: AgentCard
    handler: RequestHandler
    app: Any
    servicer: GrpcHandler
    store: InMemoryTaskStore
    peers: list[str] = field(default_factory=list)


def build_agent03(
    *,
    streaming: bool = True,
    push_notifications: bool = False,
    extended_card: bool = False,
    wrap: str = "none",
    preferred: str = "JSONRPC",
    dedupe_options: dict[str, Any] | None = None,
) -> Agent03:
    """The agent, its handler wrapped as ``wrap`` says.

    Args:
        streaming: the card's ``capabilities.streaming``.
        push_notifications: the card's ``capabilities.push_notifications`` (the handler has
            no push store either way: push operations are refused).
        extended_card: the card's ``supports_authenticated_extended_card`` (none is served).
        wrap: ``none``, ``errors`` (``with_a2a_errors(h)``), ``dedupe`` (``deduplicate(h)``),
            ``errors-dedupe`` (``with_a2a_errors(deduplicate(h))``) or ``dedupe-errors``
            (``deduplicate(with_a2a_errors(h))``).
        preferred: the card's ``preferred_transport``.
        dedupe_options: more arguments for ``deduplicate`` (``store``, ``ttl``, ...).
    """
    executor = Executor03()
    card = card03(
        streaming=streaming,
        push_notifications=push_notifications,
        extended_card=extended_card,
        preferred=preferred,
    )
    store = InMemoryTaskStore()
    inner = DefaultRequestHandler(agent_executor=executor, task_store=store)
    handler = _wrapped(inner, wrap, card, dedupe_options or {})
    rest = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build(
        rpc_url=REST_PREFIX
    )
    jsonrpc = A2AStarletteApplication(agent_card=card, http_handler=handler)
    rest.router.routes.extend(jsonrpc.routes(rpc_url=JSONRPC_PATH))
    peers: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host, port = scope["client"]
            peers.append(f"{host}:{port}")
        await rest(scope, receive, send)

    servicer = GrpcHandler(agent_card=card, request_handler=handler)
    return Agent03(executor, card, handler, app, servicer, store, peers)


@dataclass
class Running03:
    """An agent being served: where, and the agent."""

    agent: Agent03
    base_url: str
    grpc_target: str

    @property
    def card(self) -> AgentCard:
        """The card, with the real addresses."""
        return self.agent.card

    @property
    def executor(self) -> Executor03:
        """The executor."""
        return self.agent.executor

    @property
    def http_target(self) -> str:
        """``127.0.0.1:<port>`` of the HTTP server (for a `LossyProxy`)."""
        return self.base_url.removeprefix("http://")

    @property
    def task_count(self) -> int:
        """How many tasks the task store holds."""
        return len(self.agent.store.tasks)


@contextlib.contextmanager
def serve03(agent: Agent03, *, app: Any = None, stop_timeout: float = 10.0) -> Iterator[Running03]:
    """Serve ``agent`` on 127.0.0.1 (HTTP and gRPC); stop both, bounded in time.

    The card's addresses are set to the real ones before anything is served.

    Args:
        agent: the agent.
        app: the ASGI app to serve in place of the agent's (a wrapper of it).
        stop_timeout: seconds to wait for the servers to start, and to stop.
    """
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    base_url = f"http://127.0.0.1:{listening.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app or agent.app, log_level="error", lifespan="off"))
    ready = threading.Event()
    port: list[int] = []
    failed: list[BaseException] = []

    async def main() -> None:
        grpc_server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(agent.servicer, grpc_server)
        port.append(grpc_server.add_insecure_port("127.0.0.1:0"))
        await grpc_server.start()
        ready.set()
        try:
            await server.serve(sockets=[listening])
        finally:
            await grpc_server.stop(grace=None)

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # told to the test, below
            failed.append(exc)
            ready.set()

    _address(agent.card, base_url, "127.0.0.1:0")
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert ready.wait(stop_timeout), "the gRPC server did not start in time"
        assert not failed, f"the servers did not start: {failed!r}"
        grpc_target = f"127.0.0.1:{port[0]}"
        _address(agent.card, base_url, grpc_target)
        yield Running03(agent, base_url, grpc_target)
    finally:
        agent.executor.release.set()  # a held task must not hold the server up
        server.should_exit = True
        thread.join(timeout=stop_timeout)
        listening.close()
        assert not thread.is_alive(), "the servers did not stop in time"


def _address(card: AgentCard, base_url: str, grpc_target: str) -> None:
    """Point the card's interfaces at the running servers (in place: the apps serve it)."""
    urls = {
        "JSONRPC": base_url + JSONRPC_PATH,
        "HTTP+JSON": base_url + REST_PREFIX,
        "GRPC": grpc_target,
    }
    for interface in card.additional_interfaces or []:
        interface.url = urls[interface.transport]
    card.url = urls[card.preferred_transport or "JSONRPC"]


class Unavailable:
    """An ASGI wrapper that answers 503 to the first ``count`` sends, then serves the app.

    A send is a SendMessage or SendStreamingMessage on any HTTP binding (`Seen.is_send`);
    the 503 comes before the app sees the request (nothing was processed).

    Attributes:
        refused: how many sends were answered 503 so far.
    """

    def __init__(self, app: Any, count: int, *, retry_after: str | None = None) -> None:
        self.app = app
        self.left = count
        self.retry_after = retry_after
        self.refused = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer 503, or replay the request to the app."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False) and message["type"] == "http.request"
        body = b"".join(chunks)
        seen = Seen(method=scope["method"], path=scope["path"], body=body)
        if seen.is_send and self.left > 0:
            self.left -= 1
            self.refused += 1
            headers = [(b"content-type", b"application/json")]
            if self.retry_after is not None:
                headers.append((b"retry-after", self.retry_after.encode("latin-1")))
            content = json.dumps({"message": "unavailable"}).encode()
            headers.append((b"content-length", str(len(content)).encode("latin-1")))
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": content})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
