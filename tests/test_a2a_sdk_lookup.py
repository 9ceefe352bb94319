"""SdkLookup: find_sent's queries answered with an a2a-sdk client's get_task and list_tasks."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2
from a2a.utils import errors as sdk

from a2a_client_errors.integrations.a2a_sdk.lookup import SdkLookup, message_ids, sent_of
from a2a_client_errors.lookup import ExactlyOnce, Found, NotFound, SentMessage


def task(task_id: str, *message_ids: str) -> Any:
    """An a2a-sdk Task whose history holds ``message_ids``."""
    return a2a_pb2.Task(
        id=task_id,
        context_id="ctx-1",
        history=[a2a_pb2.Message(message_id=m) for m in message_ids],
    )


class FakeClient:
    """An a2a-sdk client's get_task and list_tasks, recording what they are asked."""

    def __init__(self, tasks: list[Any], *, get_raises: Exception | None = None) -> None:
        self.tasks = tasks
        self.get_raises = get_raises
        self.asked: list[Any] = []

    async def get_task(self, request: Any, *, context: Any = None) -> Any:
        """GetTask."""
        self.asked.append(request)
        if self.get_raises is not None:
            raise self.get_raises
        return next(t for t in self.tasks if t.id == request.id)

    async def list_tasks(self, request: Any, *, context: Any = None) -> Any:
        """ListTasks: one page."""
        self.asked.append(request)
        return a2a_pb2.ListTasksResponse(tasks=self.tasks, next_page_token="")


async def no_sleep(seconds: float) -> None:
    """A pause that does not wait."""


def lookup(client: FakeClient, **settings: Any) -> SdkLookup:
    """An SdkLookup on ``client``."""
    return SdkLookup(client, a2a_pb2, None, ExactlyOnce(**settings), no_sleep)


def test_sent_of_and_message_ids() -> None:
    """The identity of an a2a-sdk Message (empty ids absent), and a Task's messageIds."""
    message = a2a_pb2.Message(message_id="m1", context_id="", task_id="t1")
    assert sent_of(message, 5.0) == SentMessage("m1", None, "t1", 5.0)
    assert list(message_ids(task("t", "a", "b"))) == ["a", "b"]


async def test_new_task_found_by_list_tasks_with_filters() -> None:
    """A new message is found by ListTasks; the request carries the context or the timestamp."""
    client = FakeClient([task("t1", "other"), task("t2", "m1")])
    found = await lookup(client, page_size=10).find(SentMessage("m1", "ctx-1"))
    assert found == Found(task("t2", "m1"))
    (request,) = client.asked
    assert (request.context_id, request.page_size, request.include_artifacts) == ("ctx-1", 10, True)
    assert not request.HasField("status_timestamp_after")
    client = FakeClient([])
    found = await lookup(client, clock_skew=0.0).find(SentMessage("m1", sent_at=12.5))
    assert found == NotFound()
    assert client.asked[0].status_timestamp_after.ToNanoseconds() == 12_500_000_000


async def test_follow_up_found_by_get_task() -> None:
    """A follow-up is found by GetTask of its task."""
    client = FakeClient([task("t1", "m0", "m1")])
    assert await lookup(client).find(SentMessage("m1", task_id="t1")) == Found(
        task("t1", "m0", "m1")
    )
    assert client.asked[0].id == "t1"


async def test_follow_up_whose_task_the_agent_says_is_missing_is_not_found() -> None:
    """TaskNotFoundError from the agent: not there, so not found (after the second look)."""
    client = FakeClient([], get_raises=sdk.TaskNotFoundError("gone"))
    assert await lookup(client).find(SentMessage("m1", task_id="t1")) == NotFound()
    assert len(client.asked) == 2


async def test_other_get_task_failures_propagate() -> None:
    """Any other GetTask failure ends the look-up (its caller makes it Unresolved)."""
    client = FakeClient([], get_raises=sdk.InternalError("boom"))
    with pytest.raises(sdk.InternalError):
        await lookup(client).find(SentMessage("m1", task_id="t1"))
