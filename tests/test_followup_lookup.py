"""A follow-up message (it names a taskId) whose answer is lost is looked up with GetTask.

The embedded a2a-sdk agent cannot take a follow-up of a task it is still working on (the
second message waits behind the first), so this path runs against `httpx.MockTransport`
agents that answer GetTask by a script: through `GuardTransport` (JSON-RPC and HTTP+JSON) and
through `guard_client` (a2a-sdk's own client, JSON-RPC).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from a2a_client_errors import Guard, OutcomeUnknown
from a2a_client_errors._transport import AsyncGuardTransport, GuardTransport, operation_of
from a2a_client_errors.types import Resolution
from tests.e2e.lossy import Unknowns

# Guard_client against the embedded peer (a2a-sdk 1.x).
pytestmark = pytest.mark.a2a_sdk("1")

TASK_ID = "task-follow-7"
MESSAGE_ID = "msg-follow-up-1"


def _task(*message_ids: str, state: str = "TASK_STATE_COMPLETED") -> dict[str, Any]:
    history = [
        {"messageId": m, "role": "ROLE_USER", "parts": [{"text": "more"}]} for m in message_ids
    ]
    return {"id": TASK_ID, "contextId": "ctx-7", "status": {"state": state}, "history": history}


class Agent:
    """A scripted agent: the first send's answer is lost; GetTask answers by ``holds``."""

    def __init__(self, holds: str, binding: str = "jsonrpc") -> None:
        self.holds = holds  # "it": the task holds the message; "other": it does not; "gone"
        self.binding = binding
        self.operations: list[str | None] = []
        self.get_ids: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request."""
        operation = operation_of(request)
        self.operations.append(operation)
        if operation == "SendMessage":
            if self.operations.count("SendMessage") == 1:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response")
            return self._ok({"task": _task("msg-first", MESSAGE_ID)})
        assert operation == "GetTask"
        if self.binding == "jsonrpc":
            self.get_ids.append(json.loads(request.content)["params"]["id"])
        else:
            self.get_ids.append(request.url.path.rsplit("/", 1)[-1])
        if self.holds == "gone":
            error = {"code": -32001, "message": "Task not found"}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": "x", "error": error})
        ids = ("msg-first", MESSAGE_ID) if self.holds == "it" else ("msg-first",)
        return self._ok(_task(*ids))

    def _ok(self, result: dict[str, Any]) -> httpx.Response:
        if self.binding == "jsonrpc":
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": result})
        return httpx.Response(200, json=result)


def _follow_up(binding: str) -> tuple[str, dict[str, Any]]:
    message = {
        "messageId": MESSAGE_ID,
        "taskId": TASK_ID,
        "contextId": "ctx-7",
        "role": "ROLE_USER",
        "parts": [{"text": "more"}],
    }
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        return "http://agent.test/jsonrpc", body
    return "http://agent.test/rest/message:send", {"message": message}


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_lost_follow_up_is_found_with_get_task(binding: str) -> None:
    """GetTask of the named task, never ListTasks: found in its history, nothing resent."""
    agent = Agent("it", binding)
    hook = Unknowns()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    transport = GuardTransport(guard, httpx.MockTransport(agent))
    with httpx.Client(transport=transport) as client:
        url, body = _follow_up(binding)
        response = client.post(url, json=body)
    result = response.json()["result"] if binding == "jsonrpc" else response.json()
    assert result["task"]["id"] == TASK_ID
    assert MESSAGE_ID in [m["messageId"] for m in result["task"]["history"]]
    assert agent.operations.count("SendMessage") == 1
    assert "ListTasks" not in agent.operations
    assert set(agent.get_ids) == {TASK_ID}
    assert hook.resolutions == [Resolution.FOUND]
    assert hook.events[0].sent is not None
    assert hook.events[0].sent.task_id == TASK_ID


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
@pytest.mark.parametrize("holds", ["other", "gone"])
def test_a_lost_follow_up_not_in_its_task_is_never_resent(binding: str, holds: str) -> None:
    """Its task lacks it (or is gone): looked at again and again, then OutcomeUnknown."""
    agent = Agent(holds, binding)
    hook = Unknowns()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    transport = GuardTransport(guard, httpx.MockTransport(agent), raise_failures=True)
    url, body = _follow_up(binding)
    with httpx.Client(transport=transport) as client, pytest.raises(OutcomeUnknown) as caught:
        client.post(url, json=body)
    assert agent.operations.count("SendMessage") == 1
    assert "ListTasks" not in agent.operations
    assert agent.operations.count("GetTask") > 1
    assert caught.value.task_id == TASK_ID
    assert hook.resolutions == [Resolution.UNRESOLVED]


async def test_a_lost_follow_up_through_guard_client_is_found_with_get_task() -> None:
    """guard_client: the follow-up's task, read by GetTask, is the answer; nothing resent."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2
    from a2a.utils.constants import TransportProtocol

    from a2a_client_errors.integrations.a2a_sdk import guard_client

    agent = Agent("it")
    card = a2a_pb2.AgentCard(
        name="scripted",
        version="1.0.0",
        supported_interfaces=[
            a2a_pb2.AgentInterface(
                url="http://agent.test/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=a2a_pb2.AgentCapabilities(streaming=False),
    )
    hook = Unknowns()
    async with httpx.AsyncClient(transport=httpx.MockTransport(agent)) as http:
        config = ClientConfig(
            streaming=False,
            httpx_client=http,
            supported_protocol_bindings=[TransportProtocol.JSONRPC],
        )
        client = guard_client(
            ClientFactory(config).create(card), Guard(sleep=lambda _: None, hooks=[hook])
        )
        message = a2a_pb2.Message(
            role=a2a_pb2.Role.ROLE_USER,
            message_id=MESSAGE_ID,
            task_id=TASK_ID,
            context_id="ctx-7",
            parts=[a2a_pb2.Part(text="more")],
        )
        request = a2a_pb2.SendMessageRequest(message=message)
        events = [event async for event in client.send_message(request)]
        await client.close()
    assert [event.task.id for event in events] == [TASK_ID]
    assert agent.operations == ["SendMessage", "GetTask"]
    assert hook.resolutions == [Resolution.FOUND]


async def test_the_async_transport_looks_up_a_follow_up_with_get_task() -> None:
    """AsyncGuardTransport: the same GetTask look-up, through the async inner transport."""
    agent = Agent("it")
    transport = AsyncGuardTransport(Guard(sleep=lambda _: None), httpx.MockTransport(agent))
    async with httpx.AsyncClient(transport=transport) as client:
        url, body = _follow_up("jsonrpc")
        response = await client.post(url, json=body)
    assert response.json()["result"]["task"]["id"] == TASK_ID
    assert agent.operations == ["SendMessage", None, "GetTask"]  # None: its card, read once
