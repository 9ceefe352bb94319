"""SdkLookup: the look-up's reads through an a2a-sdk client's get_task and list_tasks."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2
from a2a.utils import errors as sdk

from a2a_client_errors._engine import adrive
from a2a_client_errors._guard import Guard
from a2a_client_errors._lookup import (
    ExactlyOnce,
    Found,
    GetTaskQuery,
    ListTasksQuery,
    SentMessage,
    TaskPage,
    TaskView,
    find_sent,
)
from a2a_client_errors.integrations.a2a_sdk._lookup import SdkLookup, sent_of, task_view
from a2a_client_errors.testing import FakeClock

# guard_client over a2a-sdk 1.x clients and types.
pytestmark = pytest.mark.a2a_sdk("1")

USER, AGENT = a2a_pb2.Role.ROLE_USER, a2a_pb2.Role.ROLE_AGENT


def task(
    task_id: str, *message_ids: str, state: int = a2a_pb2.TaskState.TASK_STATE_COMPLETED
) -> Any:
    """An a2a-sdk Task whose history holds user messages ``message_ids``."""
    return a2a_pb2.Task(
        id=task_id,
        context_id="ctx-1",
        status=a2a_pb2.TaskStatus(state=state),
        history=[a2a_pb2.Message(message_id=m, role=USER) for m in message_ids],
    )


class FakeClient:
    """An a2a-sdk client's get_task and list_tasks, recording what they are asked."""

    def __init__(
        self,
        tasks: list[Any],
        *,
        get_raises: Exception | None = None,
        list_raises: Exception | None = None,
    ) -> None:
        self.tasks = tasks
        self.get_raises = get_raises
        self.list_raises = list_raises
        self.asked: list[Any] = []
        self.contexts: list[Any] = []

    async def get_task(self, request: Any, *, context: Any = None) -> Any:
        """GetTask."""
        self.asked.append(request)
        self.contexts.append(context)
        if self.get_raises is not None:
            raise self.get_raises
        return next(t for t in self.tasks if t.id == request.id)

    async def list_tasks(self, request: Any, *, context: Any = None) -> Any:
        """ListTasks: one page."""
        self.asked.append(request)
        if self.list_raises is not None:
            raise self.list_raises
        return a2a_pb2.ListTasksResponse(tasks=self.tasks, next_page_token="", total_size=7)


def reader(
    client: FakeClient, *, others: tuple[FakeClient, ...] = (), finding: Any = None
) -> SdkLookup:
    """An SdkLookup on ``client``."""
    return SdkLookup(client, "ctx", SentMessage("m1"), finding=finding, others=others)


async def ask(look: SdkLookup, query: Any, timeout: float | None) -> Any:
    """One query's read: ``look.asking``'s steps, carried out by the engine's async driver."""
    return await adrive(look.asking(query, timeout), Guard(), "p")


def test_sent_of_a_message() -> None:
    """The identity of an a2a-sdk Message (empty ids absent)."""
    message = a2a_pb2.Message(message_id="m1", context_id="", task_id="t1")
    assert sent_of(message, 5.0) == SentMessage("m1", None, "t1", 5.0)


def test_task_view_of_a_sdk_task() -> None:
    """Id, context, status timestamp, history with roles, and settledness."""
    raw = task("t", "m1", state=a2a_pb2.TaskState.TASK_STATE_WORKING)
    raw.history.append(a2a_pb2.Message(message_id="a1", role=AGENT))
    raw.status.timestamp.FromNanoseconds(2_500_000_000)
    assert task_view(raw) == TaskView("t", "ctx-1", 2.5, (("m1", True), ("a1", False)), False)
    assert task_view(task("t")).settled
    assert task_view(task("t")).updated_at is None
    assert task_view("not a task") == TaskView()


async def test_list_tasks_asks_no_artifacts_and_the_bounds() -> None:
    """ListTasks: page size, no artifacts, the history bound, the context, the caller's context."""
    client = FakeClient([task("t1", "other"), task("t2", "m1")])
    page = await ask(reader(client), ListTasksQuery("ctx-1", "tok", 10, 4), None)
    assert isinstance(page, TaskPage)
    assert page.tasks == (task("t1", "other"), task("t2", "m1"))
    assert (page.total_size, page.next_page_token) == (7, "")
    assert page.size > 0
    (request,) = client.asked
    assert (request.context_id, request.page_size, request.page_token) == ("ctx-1", 10, "tok")
    assert not request.include_artifacts
    assert request.history_length == 4
    assert not request.HasField("status_timestamp_after")


async def test_list_tasks_without_context_or_history_bound() -> None:
    """No context and no bound: neither is set on the request."""
    client = FakeClient([])
    await ask(reader(client), ListTasksQuery(None, "", 50, None), 3.0)
    (request,) = client.asked
    assert request.context_id == ""
    assert not request.HasField("history_length")


async def test_get_task_reads_the_whole_history() -> None:
    """GetTask of a follow-up's task, without a history bound, with the caller's context."""
    client = FakeClient([task("t1", "m0", "m1")])
    assert await ask(reader(client), GetTaskQuery("t1"), None) == task("t1", "m0", "m1")
    assert client.asked[0].id == "t1"
    assert not client.asked[0].HasField("history_length")
    assert client.contexts == ["ctx"]


async def test_get_task_the_agent_says_is_missing_is_none() -> None:
    """TaskNotFoundError from the agent: the task is not there."""
    client = FakeClient([], get_raises=sdk.TaskNotFoundError("gone"))
    assert await ask(reader(client), GetTaskQuery("t1"), None) is None


async def test_other_failures_propagate_to_be_judged() -> None:
    """Any other failure is raised, for the Guard to retry or end the search."""
    client = FakeClient([], get_raises=sdk.InternalError("boom"))
    with pytest.raises(sdk.InternalError):
        await ask(reader(client), GetTaskQuery("t1"), None)


async def test_a_read_longer_than_its_time_is_cut() -> None:
    """A read is bounded by the time it is given."""

    class Hanging(FakeClient):
        async def list_tasks(self, request: Any, *, context: Any = None) -> Any:
            await asyncio.Event().wait()

    with pytest.raises(asyncio.TimeoutError):
        await ask(reader(Hanging([])), ListTasksQuery(None, "", 1, None), 0.01)


async def test_an_unwell_interface_is_left_for_the_next_and_the_look_up_is_elsewhere() -> None:
    """A read the interface cannot answer (not reached) goes over the next; elsewhere is set."""
    down = FakeClient([], list_raises=httpx.ConnectError("refused"))
    up = FakeClient([task("t2", "m1")])
    look = reader(down, others=(up,))
    page = await ask(look, ListTasksQuery(None, "", 5, None), None)
    assert page.tasks == (task("t2", "m1"),)
    assert look.elsewhere
    assert look.client is up


async def test_a_refusal_is_not_taken_elsewhere() -> None:
    """A failure that says nothing of the interface's health is raised, not moved."""
    refused = FakeClient([], list_raises=sdk.UnsupportedOperationError("no"))
    look = reader(refused, others=(FakeClient([]),))
    with pytest.raises(sdk.UnsupportedOperationError):
        await ask(look, ListTasksQuery(None, "", 5, None), None)
    assert not look.elsewhere


async def test_finding_builds_the_calls_answer() -> None:
    """finding() is the task itself, or what the door's steps build from it."""

    def built(raw: Any, whole: bool) -> Any:
        return ("built", raw.id, whole)
        yield  # steps with no effect of their own

    guard = Guard()
    assert await adrive(reader(FakeClient([])).finding(task("t")), guard, "p") == task("t")
    # a task from a listing: not read whole (the door reads it again)
    found = reader(FakeClient([]), finding=built).finding(task("t"))
    assert await adrive(found, guard, "p") == ("built", "t", False)


async def test_a_guard_runs_the_search_with_the_reader() -> None:
    """find_sent through Guard.reads, with an SdkLookup as steps, finds the task it started."""
    client = FakeClient([task("t1", "other"), task("t2", "m1")])
    look = reader(client)
    clock = FakeClock()
    guard = Guard(clock=clock, sleep=clock.sleep)
    search = find_sent(SentMessage("m1"), ExactlyOnce(), look.view)
    reads = guard.reads(search, None, agent="p", steps=look.asking)
    assert await adrive(reads, guard, "p") == Found(task("t2", "m1"))
