"""Guard an a2a-sdk 0.3 client: the same door as on 1.x, against an a2a-sdk 0.3 agent.

An a2a-sdk 0.3 agent (``DefaultRequestHandler``, JSON-RPC) runs on 127.0.0.1; a 0.3 client
built by ``ClientFactory`` is wrapped by ``guard_client``. A message completes its task; a task
the agent does not know is ``ReconcileNeeded`` (TASK_NOT_FOUND, nothing retried); cancelling
the completed task returns it, marked as a lost race. Exits 1 if any of that did not happen.

Needs a2a-sdk 0.3 (``pip install 'a2a-client-errors[a2a]' 'a2a-sdk[http-server]>=0.3.20,<0.4'``).
Run it with ``python examples/a2a_sdk_03/guard_client.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    Message,
    Part,
    Role,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
    TaskStatus,
    TextPart,
)

from a2a_client_errors import Guard, ReconcileNeeded
from a2a_client_errors.integrations.a2a_sdk import guard_client

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a.server.events import EventQueue


class Echo(AgentExecutor):
    """Completes every task with one artifact."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Make the task, complete it."""
        task_id, context_id = context.task_id or "", context.context_id or ""
        await event_queue.enqueue_event(
            Task(id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.submitted))
        )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.add_artifact([Part(root=TextPart(text="done"))], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancel the task."""
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


@contextlib.contextmanager
def agent() -> Iterator[AgentCard]:
    """An a2a-sdk 0.3 agent on 127.0.0.1 (JSON-RPC), its card; stopped on exit."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    card = AgentCard(
        name="echo",
        description="Completes every task.",
        version="1.0.0",
        url=f"http://127.0.0.1:{listening.getsockname()[1]}/",
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore())
    app: Any = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[listening])))
    thread.start()
    try:
        yield card
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listening.close()


async def main(card: AgentCard) -> int:
    """Send, read an unknown task, cancel a completed one; 0 when each went as said."""
    async with httpx.AsyncClient(timeout=10) as http:
        sdk = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        client = guard_client(sdk, Guard(deadline=30.0))
        message = Message(
            role=Role.user, message_id=str(uuid.uuid4()), parts=[Part(root=TextPart(text="hi"))]
        )
        events = [event async for event in client.send_message(message)]
        task, _ = events[-1]
        print("sent:", task.status.state.value)
        try:
            await client.get_task(TaskQueryParams(id="no-such-task"))
            print("an unknown task was found")
            return 1
        except ReconcileNeeded as failed:
            print("unknown task:", failed.decision.action.value, failed.decision.reason)
        canceled = await client.cancel_task(TaskIdParams(id=task.id))
        print("cancel:", canceled.status.state.value, canceled.metadata)
        await client.close()
    lost_race = (canceled.metadata or {}).get("a2a_client_errors") == {"cancel": "lost_race"}
    return 0 if task.status.state is TaskState.completed and lost_race else 1


if __name__ == "__main__":
    with agent() as served:
        sys.exit(asyncio.run(main(served)))
