"""A real a2a-sdk agent whose executor raises what its message asks for, behind `with_a2a_errors`.

The message's text is ``<when>:<what>``: ``when`` is ``early`` (raise before any event),
``late`` (make the task, then raise) or ``after`` (make the task, wait until the test has
received it (`RaisingExecutor.go`), then raise: a2a-sdk may otherwise deliver the error
before the events a new subscriber missed); ``what`` is a reason of the nine (an `A2AError` with a
message and metadata) or ``BUG`` (a ``RuntimeError`` holding a secret). Any other text
completes the task. The agent serves JSON-RPC (``/jsonrpc``) and HTTP+JSON (``/rest``) from
one Starlette app, and gRPC from `grpc_server`; `Agent.peers` records which connection each
request came on.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler, RequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette

from a2a_client_errors import A2AError, Reason
from a2a_client_errors.server import deduplicate, with_a2a_errors

if TYPE_CHECKING:
    from collections.abc import Callable

    import grpc.aio
    from a2a.server.events import EventQueue

JSONRPC_PATH = "/jsonrpc"
REST_PREFIX = "/rest"
SECRET = "token=sk-live-123"
NINE = [reason for reason in Reason if reason.is_a2a]


def error_for(reason: Reason) -> A2AError:
    """The error the executor raises for ``reason``: a message and two metadata entries."""
    return A2AError(reason, f"{reason.value.lower()} here", {"where": "executor", "n": 1})


class RaisingExecutor(AgentExecutor):
    """Raises what the message names (see the module docstring), else completes.

    Attributes:
        go: set by the test once it received the first event of an ``after`` stream (the
            server may run on another thread); the executor waits for it ten seconds at most.
    """

    def __init__(self) -> None:
        self.go = threading.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Raise early, make the task and raise late, or complete."""
        text = context.get_user_input()
        when, _, what = text.partition(":")
        if when == "early":
            self._raise(what)
        task = Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if when in ("late", "after"):
            await updater.start_work()
            if when == "after":
                await asyncio.get_running_loop().run_in_executor(None, self.go.wait, 10.0)
                self.go.clear()
            self._raise(what)
        await updater.add_artifact([Part(text="done")], name="echo")
        await updater.complete()

    @staticmethod
    def _raise(what: str) -> None:
        if what == "BUG":
            raise RuntimeError(f"the executor broke, {SECRET}")
        raise error_for(Reason(what))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def card(base_url: str = "http://127.0.0.1", grpc_target: str = "127.0.0.1:0") -> AgentCard:
    """The agent's card: streaming on, the three bindings."""
    return AgentCard(
        name="raising agent",
        description="Raises what it is asked to.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=base_url + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0"
            ),
            AgentInterface(
                url=base_url + REST_PREFIX, protocol_binding="HTTP+JSON", protocol_version="1.0"
            ),
            AgentInterface(url=grpc_target, protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="raise", name="raise", description="Raises.", tags=["test"])],
    )


@dataclass
class Agent:
    """One agent: its wrapped handler, its ASGI app, and the peers its requests came from."""

    executor: RaisingExecutor
    handler: RequestHandler
    app: Callable[..., Any]
    peers: list[str] = field(default_factory=list)


def build_agent(order: str = "errors") -> Agent:
    """The agent, its handler wrapped as ``order`` says.

    ``none`` (not wrapped), ``errors`` (``with_a2a_errors(h)``), ``errors-dedupe``
    (``with_a2a_errors(deduplicate(h))``) or ``dedupe-errors``
    (``deduplicate(with_a2a_errors(h))``).
    """
    executor = RaisingExecutor()
    inner = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card()
    )
    handler: RequestHandler
    if order == "none":
        handler = inner
    elif order == "errors":
        handler = with_a2a_errors(inner)
    elif order == "errors-dedupe":
        handler = with_a2a_errors(deduplicate(inner))
    else:
        handler = deduplicate(with_a2a_errors(inner))
    starlette = Starlette(
        routes=[
            *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
            *create_rest_routes(handler, path_prefix=REST_PREFIX),
        ]
    )
    peers: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host, port = scope["client"]
            peers.append(f"{host}:{port}")
        await starlette(scope, receive, send)

    return Agent(executor=executor, handler=handler, app=app, peers=peers)


def grpc_servicer(agent: Agent) -> GrpcHandler:
    """a2a-sdk's gRPC handler around the agent's handler, recording each call's peer."""

    class Recording(GrpcHandler):
        def _build_call_context(self, context: grpc.aio.ServicerContext, request: Any) -> Any:
            agent.peers.append(context.peer())
            return super()._build_call_context(context, request)

    return Recording(agent.handler)
