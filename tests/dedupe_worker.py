"""A real a2a-sdk agent whose executor counts its runs, wrapped by `deduplicate`.

Imported by the end-to-end tests (`build_agent`), and run as one replica of a fleet by
tests/test_redis_dedupe.py::

    python -m tests.dedupe_worker --redis URL [--prefix P] [--own-tasks]

The replica serves JSON-RPC (``/jsonrpc``) and HTTP+JSON (``/rest``) on a free 127.0.0.1
port, under `A2AErrorMiddleware`, with a `RedisDedupeStore` on ``--redis`` and a task store
shared by the fleet on the same Redis (`RedisTaskStore`), or, with ``--own-tasks``, an
``InMemoryTaskStore`` of its own;
``GET /runs`` tells how often its executor ran. It prints ``ready <base URL>`` once it
listens, and stops when its standard input closes.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ListTasksResponse,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a_client_errors.server import (
    A2AErrorMiddleware,
    DedupeStore,
    DeduplicatingHandler,
    deduplicate,
)

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.events import EventQueue
    from a2a.types import ListTasksRequest
    from starlette.requests import Request

JSONRPC_PATH = "/jsonrpc"
REST_PREFIX = "/rest"


class CountingExecutor(AgentExecutor):
    """Completes every task with an echo artifact, and counts how often it ran.

    A message whose text is ``raise`` makes its task, then the executor raises.

    While ``hold`` is given (a ``threading.Event``: the test runs on another thread), a run
    stays WORKING until it is set (at most ten seconds). ``started`` is set as a run begins.
    """

    def __init__(self) -> None:
        self.runs = 0
        self.hold: threading.Event | None = None
        self.started = threading.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Submitted, (held,) an artifact, completed."""
        self.runs += 1
        self.started.set()
        task = Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
        )
        if context.message is not None:
            task.history.append(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if any(part.text == "raise" for part in task.history[0].parts):
            raise RuntimeError("the executor raised after making its task")
        if self.hold is not None:
            await updater.start_work()
            await asyncio.get_running_loop().run_in_executor(None, self.hold.wait, 10.0)
        await updater.add_artifact([Part(text=f"run {self.runs}")], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


class RedisTaskStore(TaskStore):
    """Tasks on Redis, one key each: a task store the replicas share (a database's stand-in)."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Write the task."""
        await self.client.set(self.prefix + task.id, task.SerializeToString())

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """Read the task, or None."""
        raw = await self.client.get(self.prefix + task_id)
        if raw is None:
            return None
        task = Task()
        task.ParseFromString(raw)
        return task

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Every task, unfiltered (enough for a test fleet)."""
        tasks = []
        async for name in self.client.scan_iter(match=self.prefix + "*"):
            task = await self.get(name.decode()[len(self.prefix) :], context)
            if task is not None:
                tasks.append(task)
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task."""
        await self.client.delete(self.prefix + task_id)


def card(base_url: str = "http://127.0.0.1") -> AgentCard:
    """The agent's card: streaming on, JSON-RPC and HTTP+JSON."""
    return AgentCard(
        name="counting agent",
        description="Counts its executor's runs.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=base_url + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0"
            ),
            AgentInterface(
                url=base_url + REST_PREFIX, protocol_binding="HTTP+JSON", protocol_version="1.0"
            ),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="count", name="count", description="Counts.", tags=["test"])],
    )


@dataclass
class Agent:
    """One agent: its executor, its wrapped handler, its Starlette app."""

    executor: CountingExecutor
    handler: DeduplicatingHandler
    app: Starlette
    extra: dict[str, Any] = field(default_factory=dict)


def build_agent(
    store: DedupeStore | None = None,
    task_store: TaskStore | None = None,
    *,
    middleware: bool = True,
    **options: Any,
) -> Agent:
    """A DefaultRequestHandler (on an InMemoryTaskStore by default), wrapped by deduplicate.

    The app is served under `A2AErrorMiddleware` unless ``middleware`` is false. ``options``
    go to `deduplicate`.
    """
    executor = CountingExecutor()
    inner = DefaultRequestHandler(
        agent_executor=executor,
        task_store=task_store if task_store is not None else InMemoryTaskStore(),
        agent_card=card(),
    )
    handler = deduplicate(inner, store=store, **options)

    async def runs(_: Request) -> JSONResponse:
        return JSONResponse({"runs": executor.runs})

    app = Starlette(
        routes=[
            *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
            *create_rest_routes(handler, path_prefix=REST_PREFIX),
            Route("/runs", runs),
        ],
        middleware=[Middleware(A2AErrorMiddleware, binding="jsonrpc")] if middleware else [],
    )
    return Agent(executor=executor, handler=handler, app=app)


def main() -> None:
    """Serve one replica until standard input closes."""
    import redis.asyncio
    import uvicorn

    from a2a_client_errors.server import RedisDedupeStore

    parser = argparse.ArgumentParser()
    parser.add_argument("--redis", required=True)
    parser.add_argument("--prefix", default="a2a-dedupe:")
    parser.add_argument("--own-tasks", action="store_true")
    args = parser.parse_args()
    tasks = None
    if not args.own_tasks:
        tasks = RedisTaskStore(redis.asyncio.Redis.from_url(args.redis), args.prefix + "task:")
    store = RedisDedupeStore.from_url(args.redis, prefix=args.prefix + "dedupe:")
    agent = build_agent(store, tasks)
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    server = uvicorn.Server(
        uvicorn.Config(agent.app, log_level="error", lifespan="off", timeout_graceful_shutdown=1)
    )

    def stop_on_eof() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_on_eof, daemon=True).start()
    print(f"ready http://127.0.0.1:{listening.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[listening]))


if __name__ == "__main__":
    main()
