"""The 0.3 test agent itself, through a2a-sdk 0.3's own client on each binding."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types import (
    Message,
    MessageSendConfiguration,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskState,
)

from a2a_client_errors.testing.lossy import LossyProxy, lose_sends
from tests.agent03 import Unavailable
from tests.sdk03.client03 import BINDINGS, client03, message, send

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")


@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_task_completes_with_its_artifact(
    agent03: Running03, binding: str, streaming: bool
) -> None:
    """A plain text completes a task with an artifact, run once; the task reads back."""
    async with client03(agent03, binding, streaming=streaming) as client:
        task = await send(client, "complete", message_id="m-1")
        assert isinstance(task, Task)
        assert task.status.state is TaskState.completed
        assert task.artifacts is not None
        assert task.artifacts[0].parts[0].root.text == "done"  # type: ignore[union-attr]
        read = await client.get_task(TaskQueryParams(id=task.id))
        assert read.status.state is TaskState.completed
    assert agent03.executor.executions == {"m-1": 1}


@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize(
    ("text", "state"), [("fail", TaskState.failed), ("reject", TaskState.rejected)]
)
async def test_an_ending_task_comes_back_in_a_successful_call(
    agent03: Running03, binding: str, text: str, state: TaskState
) -> None:
    """``fail`` and ``reject`` end the task in a successful call."""
    async with client03(agent03, binding) as client:
        task = await send(client, text)
    assert isinstance(task, Task)
    assert task.status.state is state


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_a_message_answer_makes_no_task(agent03: Running03, binding: str) -> None:
    """``message`` answers with a Message: no task is stored."""
    async with client03(agent03, binding) as client:
        answer = await send(client, "message")
    assert isinstance(answer, Message)
    assert agent03.task_count == 0
    assert agent03.executor.total == 1


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_a_held_task_works_until_released_and_can_be_cancelled(
    agent03: Running03, binding: str
) -> None:
    """``hold`` keeps the task working (a non-blocking send sees it), and it can be cancelled."""
    async with client03(agent03, binding) as client:
        first = None
        async for event in client.send_message(
            message("hold"), configuration=MessageSendConfiguration(blocking=False)
        ):
            first = event
        assert isinstance(first, tuple)
        task = first[0]
        assert task.status.state in {TaskState.submitted, TaskState.working}
        assert agent03.executor.holding.wait(10.0)
        cancelled = await client.cancel_task(TaskIdParams(id=task.id))
        assert cancelled.status.state is TaskState.canceled
    agent03.executor.release.set()


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_an_executor_that_raises_is_an_error(agent03: Running03, binding: str) -> None:
    """An executor that raises makes the call fail (the handler not wrapped)."""
    async with client03(agent03, binding) as client:
        with pytest.raises((A2AClientError, grpc.RpcError)) as raised:
            await send(client, "early:TASK_NOT_FOUND")
    assert raised.value is not None


async def test_the_card_is_in_the_03_shape(agent03: Running03) -> None:
    """The card is served in the 0.3 shape, with the real addresses."""
    async with httpx.AsyncClient() as http:
        answer = await http.get(agent03.base_url + "/.well-known/agent-card.json")
    card = answer.json()
    assert card["url"] == agent03.base_url + "/jsonrpc"
    assert card["preferredTransport"] == "JSONRPC"
    assert {i["transport"] for i in card["additionalInterfaces"]} == {
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    }
    assert card["capabilities"] == {"streaming": True, "pushNotifications": False}


@pytest.mark.parametrize("retry_after", [None, "0"])
async def test_unavailable_answers_503_to_the_first_sends(
    start_agent03: Callable[..., Running03], retry_after: str | None
) -> None:
    """`Unavailable` answers 503 to the first send (before the agent), then serves."""
    wrapper: list[Unavailable] = []

    def wrap(app: object) -> Unavailable:
        wrapper.append(Unavailable(app, 1, retry_after=retry_after))
        return wrapper[0]

    running = start_agent03(wrap_app=wrap)
    sent = message("complete").model_dump(mode="json", by_alias=True, exclude_none=True)
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": sent}}
    async with httpx.AsyncClient() as http:
        first = await http.post(running.base_url + "/jsonrpc", json=body)
        second = await http.post(running.base_url + "/jsonrpc", json=body)
    assert first.status_code == 503
    assert first.headers.get("retry-after") == retry_after
    assert second.json()["result"]["status"]["state"] == "completed"
    assert running.executor.total == 1
    assert wrapper[0].refused == 1


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_a_lost_answer_leaves_the_task_made(agent03: Running03, binding: str) -> None:
    """A `LossyProxy` loses a 0.3 send's answer: the task was made, the client failed."""
    with LossyProxy(agent03.http_target, lose_sends(1)) as proxy:
        proxied = agent03.card.model_copy(deep=True)
        for interface in proxied.additional_interfaces or []:
            interface.url = interface.url.replace(agent03.base_url, proxy.url)
        proxied.url = proxied.url.replace(agent03.base_url, proxy.url)
        async with client03(agent03, binding, card=proxied) as client:
            with pytest.raises(A2AClientError):  # the client cannot know
                await send(client, "complete", message_id="lost")
    assert agent03.executor.executions == {"lost": 1}
    assert agent03.task_count == 1
