"""An echo agent on a2a-sdk 1.x (JSON-RPC at ``/``, 0.3 clients served too), for the examples."""

from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.helpers import get_message_text, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette

if TYPE_CHECKING:
    from a2a.server.events import EventQueue


class Echo(AgentExecutor):
    """Completes each message's task with an echo; counts its runs by messageId."""

    def __init__(self, executions: list[str]) -> None:
        self.executions = executions

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run once per message that reaches the agent."""
        assert context.message is not None
        self.executions.append(context.message.message_id)
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = f"echo: {get_message_text(context.message)}"
        echo = [Part(text=text)]
        await updater.start_work(updater.new_agent_message(echo))
        await updater.add_artifact(echo, name="echo")
        await updater.complete(updater.new_agent_message(echo))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Nothing to cancel: every task completes at once."""
        raise NotImplementedError


def build_app(url: str, executions: list[str]) -> Starlette:
    """The agent's card (JSON-RPC at ``url``) and routes."""
    card = AgentCard(
        name="echo",
        description="Echoes the text it is sent.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url + "/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes text.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(executions), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)
    return Starlette(routes=[*create_agent_card_routes(card), *routes])
