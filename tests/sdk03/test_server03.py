"""`with_a2a_errors` and `deduplicate` around a real a2a-sdk 0.3 handler, with 0.3's own client."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.grpc import a2a_pb2
from a2a.types import Message, Task, TaskState
from a2a.utils import proto_utils
from google.protobuf.json_format import MessageToDict

from a2a_client_errors import Action, Delivery, Reason, classify
from a2a_client_errors._dedupe_card import DedupeParams, read_dedupe_mark
from a2a_client_errors.server import DEDUPLICATE_EXTENSION, A2AErrorMiddleware, MemoryDedupeStore
from a2a_client_errors.types import Source
from tests.agent03 import JSONRPC_PATH, REST_PREFIX, SECRET
from tests.sdk03.client03 import BINDINGS, client03, message, send

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")

WRAPPED = ["errors", "errors-dedupe", "dedupe-errors"]
CARRIED = ["jsonrpc", "grpc"]
"""The bindings on which a2a-sdk 0.3 carries the error's details (its REST routes do not)."""


@pytest.mark.parametrize("wrap", WRAPPED)
@pytest.mark.parametrize("route", [(b, s) for b in CARRIED for s in (False, True)], ids=str)
@pytest.mark.parametrize("when", ["early", "late"])
@pytest.mark.parametrize(
    "reason", [Reason.TASK_NOT_FOUND, Reason.VERSION_NOT_SUPPORTED, Reason.UNSUPPORTED_OPERATION]
)
async def test_an_executors_a2a_error_reaches_the_client_with_its_error_info(
    start_agent03: Callable[..., Running03],
    wrap: str,
    route: tuple[str, bool],
    when: str,
    reason: Reason,
) -> None:
    """JSON-RPC and gRPC: the reason (ErrorInfo) and its metadata reach the 0.3 client."""
    binding, streaming = route
    running = start_agent03(wrap=wrap)
    async with client03(running, binding, streaming=streaming) as client:
        with pytest.raises(Exception) as raised:  # noqa: PT011 (each binding raises its own)
            await send(client, f"{when}:{reason.value}")
    decision = classify(raised.value)
    assert decision.reason == reason
    assert decision.error is not None
    assert decision.error.source is Source.ERROR_INFO
    assert dict(decision.error.metadata) == {"where": "executor", "n": "1"}


async def test_the_jsonrpc_code_is_the_reasons(start_agent03: Callable[..., Running03]) -> None:
    """The JSON-RPC answer has the reason's code, -32001 for TASK_NOT_FOUND."""
    running = start_agent03(wrap="errors")
    async with client03(running, "jsonrpc") as client:
        with pytest.raises(Exception) as raised:  # noqa: PT011
            await send(client, "early:TASK_NOT_FOUND")
    assert raised.value.error.code == -32001  # type: ignore[attr-defined]
    assert classify(raised.value).action is Action.RECONCILE


async def test_over_rest_0_3_carries_the_status_only(
    start_agent03: Callable[..., Running03],
) -> None:
    """a2a-sdk 0.3's REST routes answer with their own status: TASK_NOT_FOUND is a 404."""
    running = start_agent03(wrap="errors")
    async with client03(running, "rest") as client:
        with pytest.raises(Exception) as raised:  # noqa: PT011
            await send(client, "early:TASK_NOT_FOUND")
    decision = classify(raised.value, operation="SendMessage")
    assert decision.error is not None
    assert decision.error.http_status == 404


@pytest.mark.parametrize("binding", CARRIED)
async def test_an_unexpected_exception_is_an_internal_error_without_its_text(
    start_agent03: Callable[..., Running03], binding: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A RuntimeError leaves as INTERNAL_ERROR with a correlation id, its text kept here."""
    running = start_agent03(wrap="errors")
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        async with client03(running, binding) as client:
            with pytest.raises(Exception) as raised:  # noqa: PT011
                await send(client, "early:BUG")
    decision = classify(raised.value)
    assert decision.reason == Reason.INTERNAL_ERROR
    assert decision.error is not None
    assert "correlationId" in decision.error.metadata
    assert SECRET not in decision.error.message
    assert SECRET not in str(raised.value)


# --- deduplicate ---------------------------------------------------------------------------


@pytest.mark.parametrize("wrap", ["dedupe", "errors-dedupe", "dedupe-errors"])
@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_resend_makes_one_task(
    start_agent03: Callable[..., Running03], wrap: str, binding: str, streaming: bool
) -> None:
    """The same messageId sent twice: one execution, the first task both times."""
    running = start_agent03(wrap=wrap)
    async with client03(running, binding, streaming=streaming) as client:
        first = await send(client, "complete", message_id="once")
        second = await send(client, "complete", message_id="once")
    assert isinstance(first, Task)
    assert isinstance(second, Task)
    assert second.id == first.id
    assert second.status.state is TaskState.completed
    assert running.executor.executions == {"once": 1}
    assert running.task_count == 1


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_concurrent_sends_of_one_message_make_one_task(
    start_agent03: Callable[..., Running03], binding: str
) -> None:
    """Three sends of one messageId at once: one execution, one task, every answer its task."""
    running = start_agent03(wrap="errors-dedupe")
    async with client03(running, binding) as client:
        answers = await asyncio.gather(
            *(send(client, "complete", message_id="same") for _ in range(3))
        )
    assert {answer.id for answer in answers} == {answers[0].id}
    assert running.executor.executions == {"same": 1}
    assert running.task_count == 1


async def test_a_resend_of_a_message_answer_is_that_answer(
    start_agent03: Callable[..., Running03],
) -> None:
    """An agent that answered with a Message answers a resend with it, without running."""
    running = start_agent03(wrap="errors-dedupe")
    async with client03(running, "jsonrpc") as client:
        first = await send(client, "message", message_id="asked")
        second = await send(client, "message", message_id="asked")
    assert isinstance(first, Message)
    assert isinstance(second, Message)
    assert second.message_id == first.message_id
    assert running.executor.executions == {"asked": 1}


async def test_another_message_under_a_used_message_id_is_a_new_message(
    start_agent03: Callable[..., Running03],
) -> None:
    """Other parts under a messageId already used: it runs; each one's resend is its own."""
    running = start_agent03(wrap="errors-dedupe")
    async with client03(running, "jsonrpc") as client:
        first = await send(client, "complete", message_id="taken")
        other = await send(client, "fail", message_id="taken")
        again = await send(client, "fail", message_id="taken")
    assert isinstance(first, Task)
    assert isinstance(other, Task)
    assert isinstance(again, Task)
    assert other.id != first.id
    assert other.status.state is TaskState.failed
    assert first.status.state is TaskState.completed
    assert again.id == other.id
    assert running.executor.executions == {"taken": 2}


async def test_a_streaming_resend_of_a_working_task_resumes_it(
    start_agent03: Callable[..., Running03],
) -> None:
    """A resend while the first task works gets it at once, then follows it to its end.

    0.3's resubscription sends only what comes next: the task as it stands goes first, while
    the executor still holds it (no event would come until it moves).
    """
    running = start_agent03(wrap="errors-dedupe")
    async with client03(running, "jsonrpc", streaming=True) as client:
        stream = client.send_message(_held("held"))
        first = await anext(stream)
        assert running.executor.holding.wait(10.0)
        resent = client.send_message(_held("held"))
        resumed = await anext(resent)
        assert resumed[1] is None  # the task itself, not an update it made since
        assert resumed[0].status.state is TaskState.working
        assert not running.executor.release.is_set()
        running.executor.release.set()
        last = [event async for event in resent][-1]
        await stream.aclose()
    assert first[0].id == resumed[0].id == last[0].id
    assert last[0].status.state is TaskState.completed
    assert running.executor.executions == {"held": 1}


async def test_a_resubscription_that_finds_no_queue_after_the_task_sends_it_again(
    start_agent03: Callable[..., Running03], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task read goes first; a queue gone by the time of the tap ends the stream there.

    A stream holds one task (a2a-sdk 0.3's client refuses a second): it is not sent again.
    """
    from a2a.types import TaskNotFoundError
    from a2a.utils.errors import ServerError

    running = start_agent03(wrap="errors-dedupe")

    async def gone(*args: Any, **kwargs: Any) -> Any:
        raise ServerError(error=TaskNotFoundError())
        yield  # an async generator, as a2a-sdk's

    inner = running.agent.handler.inner.inner  # errors, then dedupe, then a2a-sdk's handler
    monkeypatch.setattr(inner, "on_resubscribe_to_task", gone)
    async with client03(running, "jsonrpc", streaming=True) as client:
        stream = client.send_message(_held("gone"))
        first = await anext(stream)
        assert running.executor.holding.wait(10.0)
        resent = [event async for event in client.send_message(_held("gone"))]
        running.executor.release.set()
        await stream.aclose()
    assert [(task.id, update) for task, update in resent] == [(first[0].id, None)]
    assert running.executor.executions == {"gone": 1}


def _held(message_id: str) -> Message:
    return message("hold", message_id=message_id)


def test_the_card_says_so(start_agent03: Callable[..., Running03]) -> None:
    """`deduplicate(card=)` puts the extension in the 0.3 card."""
    running = start_agent03(wrap="dedupe")
    extensions = running.card.capabilities.extensions or []
    assert [e.uri for e in extensions] == [DEDUPLICATE_EXTENSION]
    assert extensions[0].required is False
    assert extensions[0].params == {"ttl": 86400.0, "perCaller": True}


# --- deduplicate's word: the mark, the refusal ---------------------------------------------

MARK = DedupeParams(ttl=86400.0, per_caller=True)


@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("streaming", [False, True])
async def test_every_answer_carries_the_mark(
    start_agent03: Callable[..., Running03], binding: str, streaming: bool
) -> None:
    """First send and resend, unary and streamed, each binding: marked; the stored task not."""
    running = start_agent03(wrap="errors-dedupe")
    async with client03(running, binding, streaming=streaming) as client:
        first = await send(client, "complete", message_id="marked")
        second = await send(client, "complete", message_id="marked")
    assert read_dedupe_mark(first) == MARK
    assert read_dedupe_mark(second) == MARK
    assert all(read_dedupe_mark(task) is None for task in running.agent.store.tasks.values())


async def test_jsonrpc_echoes_the_extension_in_its_header(
    start_agent03: Callable[..., Running03],
) -> None:
    """0.3's JSON-RPC routes echo the activated extension; the result's JSON carries the mark."""
    running = start_agent03(wrap="dedupe")
    async with httpx.AsyncClient(timeout=10.0) as http:
        answer = await http.post(running.base_url + JSONRPC_PATH, json=jsonrpc03("echoed"))
    assert answer.status_code == 200, answer.text
    assert DEDUPLICATE_EXTENSION in answer.headers["x-a2a-extensions"]
    assert read_dedupe_mark(answer.json()) == MARK


def jsonrpc03(message_id: str, method: str = "message/send") -> dict[str, Any]:
    """A 0.3 JSON-RPC send of a message that completes."""
    sent = message("complete", message_id=message_id)
    return {
        "jsonrpc": "2.0",
        "id": 5,
        "method": method,
        "params": {"message": sent.model_dump(mode="json", by_alias=True, exclude_none=True)},
    }


def rest03(message_id: str) -> dict[str, Any]:
    """A 0.3 HTTP+JSON send body (the protobuf JSON of its SendMessageRequest)."""
    sent = proto_utils.ToProto.message(message("complete", message_id=message_id))
    return MessageToDict(a2a_pb2.SendMessageRequest(request=sent))


async def test_a_full_store_refuses_on_every_binding_as_not_processed(
    start_agent03: Callable[..., Running03],
) -> None:
    """One record within its ttl fills the store: every new send is 503 or UNAVAILABLE, unrun."""
    running = start_agent03(
        wrap="errors-dedupe",
        dedupe_options={"store": MemoryDedupeStore(max_entries=1), "ttl": 30},
        wrap_app=lambda app: A2AErrorMiddleware(app, binding="jsonrpc"),
    )
    async with client03(running, "jsonrpc") as client:
        await send(client, "complete", message_id="kept")
    async with httpx.AsyncClient(timeout=10.0) as http:
        url = running.base_url + JSONRPC_PATH
        answers = [
            await http.post(url, json=jsonrpc03("new", method))
            for method in ("message/send", "message/stream")
        ]
        for route in ("message:send", "message:stream"):
            url = f"{running.base_url}{REST_PREFIX}/v1/{route}"
            answers.append(await http.post(url, json=rest03("new")))
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert 29 <= int(answer.headers["retry-after"]) <= 30
        decision = classify(answer, operation="SendMessage")
        assert decision.error is not None
        assert decision.error.delivery is Delivery.NOT_PROCESSED
        assert decision.action is Action.RETRY
    assert answers[0].json()["id"] == 5
    for streaming in (False, True):
        async with client03(running, "grpc", streaming=streaming) as client:
            with pytest.raises(Exception) as raised:  # noqa: PT011 (the 0.3 client's own)
                await send(client, "complete", message_id="new")
        decision = classify(raised.value, operation="SendMessage")
        assert decision.error is not None
        assert decision.error.delivery is Delivery.NOT_PROCESSED
        assert decision.action is Action.RETRY
    assert running.executor.executions == {"kept": 1}
