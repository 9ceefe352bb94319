"""`deduplicate` around a fake a2a-sdk handler: one run per messageId, whatever is resent."""

from __future__ import annotations

import asyncio
import gc
import logging
import tracemalloc
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.types.a2a_pb2 import (
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ContentTypeNotSupportedError,
    InternalError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION, DedupeParams, read_dedupe_mark
from a2a_client_errors.server import (
    Claim,
    DedupeRecord,
    DedupeStore,
    DeduplicatingHandler,
    MemoryDedupeStore,
    deduplicate,
)
from a2a_client_errors.server import _dedupe as dedupe_module
from a2a_client_errors.server._dedupe import caller_of, message_key

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

# deduplicate over a2a-sdk 1.x request handlers.
pytestmark = pytest.mark.a2a_sdk("1")

WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        """__init__."""
        self.now = 1000.0

    def __call__(self) -> float:
        """The time now."""
        return self.now


class Named(User):
    """An authenticated user."""

    def __init__(self, name: str) -> None:
        """__init__."""
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        """Always."""
        return True

    @property
    def user_name(self) -> str:
        """The name given."""
        return self._name


class FakeHandler(RequestHandler):
    """Makes a task per send (counted); can wait for a gate, raise, or answer a Message."""

    def __init__(self) -> None:
        """__init__."""
        self.runs = 0
        self.tasks: dict[str, Task] = {}
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()  # set as the first run begins
        self.fail_before: Exception | None = None
        self.fail_after: Exception | None = None
        self.answer_message = False
        self.answer_text = "hi"
        self.updates: asyncio.Queue[TaskState] = asyncio.Queue()
        self.listing_fails = False
        self.closed = False

    def _new_task(self, params: SendMessageRequest, state: TaskState) -> Task:
        """_new_task."""
        task = Task(id=str(uuid.uuid4()), context_id="ctx", status=TaskStatus(state=state))
        task.history.append(params.message)
        self.tasks[task.id] = task
        return task

    async def on_message_send(self, params: Any, context: Any) -> Task | Message:
        """The fake's ``on_message_send``."""
        self.runs += 1
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_before is not None:  # once
            error, self.fail_before = self.fail_before, None
            raise error
        if self.answer_message:
            return Message(
                message_id="answer", role=Role.ROLE_AGENT, parts=[Part(text=self.answer_text)]
            )
        task = self._new_task(params, COMPLETED)
        if self.fail_after is not None:
            task.status.state = TaskState.TASK_STATE_FAILED
            raise self.fail_after
        return task

    async def on_message_send_stream(self, params: Any, context: Any) -> AsyncGenerator[Any]:
        """The fake's ``on_message_send_stream``."""
        self.runs += 1
        if self.fail_before is not None:
            raise self.fail_before
        task = self._new_task(params, TaskState.TASK_STATE_SUBMITTED)
        yield Task(id=task.id, context_id=task.context_id, status=task.status)
        while task.status.state != COMPLETED:
            state = await self.updates.get()
            task.status.state = state
            yield TaskStatusUpdateEvent(
                task_id=task.id, context_id=task.context_id, status=TaskStatus(state=state)
            )

    async def on_get_task(self, params: Any, context: Any) -> Task | None:
        """The fake's ``on_get_task``."""
        task = self.tasks.get(params.id)
        if task is None:
            raise TaskNotFoundError
        return task

    async def on_subscribe_to_task(self, params: Any, context: Any) -> AsyncGenerator[Any]:
        """The fake's ``on_subscribe_to_task``."""
        task = self.tasks[params.id]
        if task.status.state == COMPLETED:
            raise UnsupportedOperationError
        yield task
        while task.status.state != COMPLETED:
            await asyncio.sleep(0)
        yield TaskStatusUpdateEvent(task_id=task.id, status=TaskStatus(state=COMPLETED))

    async def on_list_tasks(self, params: Any, context: Any) -> ListTasksResponse:
        """The fake's ``on_list_tasks``."""
        if self.listing_fails:
            raise UnsupportedOperationError
        return ListTasksResponse(tasks=list(self.tasks.values()))

    async def on_cancel_task(self, params: Any, context: Any) -> Task | None:
        """The fake's ``on_cancel_task``."""
        return self.tasks.get(params.id)

    async def on_create_task_push_notification_config(self, params: Any, context: Any) -> Any:
        """The fake's ``on_create_task_push_notification_config``."""
        return params

    async def on_get_task_push_notification_config(self, params: Any, context: Any) -> Any:
        """The fake's ``on_get_task_push_notification_config``."""
        return "get-config"

    async def on_list_task_push_notification_configs(self, params: Any, context: Any) -> Any:
        """The fake's ``on_list_task_push_notification_configs``."""
        return "list-configs"

    async def on_delete_task_push_notification_config(self, params: Any, context: Any) -> None:
        """The fake's ``on_delete_task_push_notification_config``."""
        self.closed = True

    async def on_get_extended_agent_card(self, params: Any, context: Any) -> Any:
        """The fake's ``on_get_extended_agent_card``."""
        return "card"

    async def aclose(self) -> None:
        """The fake's ``aclose``."""
        self.closed = True


def send(message_id: str = "m-1", *, tenant: str = "", text: str = "hello") -> SendMessageRequest:
    """A SendMessage request."""
    return SendMessageRequest(
        tenant=tenant,
        message=Message(message_id=message_id, role=Role.ROLE_USER, parts=[Part(text=text)]),
    )


def anonymous() -> ServerCallContext:
    """The context of an unauthenticated call."""
    return ServerCallContext()


async def drain(stream: AsyncGenerator[Any]) -> list[Any]:
    """Every event of a stream."""
    return [event async for event in stream]


async def test_the_same_message_twice_runs_once() -> None:
    """The same message twice runs once."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    first = await handler.on_message_send(send(), anonymous())
    second = await handler.on_message_send(send(), anonymous())
    assert inner.runs == 1
    assert isinstance(first, Task)
    assert isinstance(second, Task)
    assert second.id == first.id


async def test_a_resend_answers_with_the_task_as_it_is_now() -> None:
    """A resend answers with the task as it is now."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    first = await handler.on_message_send(send(), anonymous())
    assert isinstance(first, Task)
    inner.tasks[first.id].status.state = TaskState.TASK_STATE_CANCELED
    again = await handler.on_message_send(send(), anonymous())
    assert isinstance(again, Task)
    assert again.status.state == TaskState.TASK_STATE_CANCELED


async def test_ten_concurrent_duplicates_make_one_task() -> None:
    """Ten concurrent duplicates make one task."""
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner)
    calls = [asyncio.create_task(handler.on_message_send(send(), anonymous())) for _ in range(10)]
    for _ in range(20):  # let every call reach the store
        await asyncio.sleep(0)
    assert inner.runs == 1
    inner.gate.set()
    results = await asyncio.gather(*calls)
    assert inner.runs == 1
    assert len({result.id for result in results if isinstance(result, Task)}) == 1
    assert all(isinstance(result, Task) for result in results)


async def test_callers_and_tenants_are_kept_apart() -> None:
    """Callers and tenants are kept apart."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    contexts = [
        anonymous(),
        ServerCallContext(user=Named("alice")),
        ServerCallContext(user=Named("bob")),
        ServerCallContext(user=Named("alice"), tenant="t2"),
    ]
    ids = set()
    for context in contexts:
        result = await handler.on_message_send(send(), context)
        assert isinstance(result, Task)
        ids.add(result.id)
    tenant_in_request = await handler.on_message_send(send(tenant="t3"), anonymous())
    assert isinstance(tenant_in_request, Task)
    ids.add(tenant_in_request.id)
    assert inner.runs == len(ids) == 5
    again = await handler.on_message_send(send(), ServerCallContext(user=Named("alice")))
    assert inner.runs == 5
    assert isinstance(again, Task)
    assert again.id in ids


def test_the_caller_and_the_key() -> None:
    """A user is its name; nobody is None; the key hashes caller, tenant, id, message apart."""
    assert caller_of(anonymous()) is None
    assert caller_of(ServerCallContext(user=Named("alice"))) == "user:alice"
    key = message_key("user:alice", "", "m-1", "fp")
    assert len(key) == 64
    assert "alice" not in key
    assert key != message_key("user:alice", "t", "m-1", "fp")
    assert key != message_key("user:alice", "", "m-1", "other")
    # no separator can make two different quadruples meet
    assert message_key("a", "b:c", "d", "e") != message_key("a:b", "c", "d", "e")
    assert message_key("a", "b", "c:d", "e") != message_key("a", "b", "c", "d:e")


async def test_an_entry_expires_after_its_ttl() -> None:
    """An entry expires after its ttl."""
    clock = Clock()
    inner = FakeHandler()
    handler = deduplicate(inner, store=MemoryDedupeStore(clock=clock), ttl=60)
    await handler.on_message_send(send(), anonymous())
    clock.now += 59
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 1
    clock.now += 2
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


async def test_a_full_store_refuses_the_new_message_and_keeps_the_others() -> None:
    """At max_entries: the third message is refused unrun; the first two still dedupe."""
    clock = Clock()
    inner = FakeHandler()
    store = MemoryDedupeStore(max_entries=2, clock=clock)
    handler = deduplicate(inner, store=store, ttl=60)
    for message_id in ("a", "b"):
        await handler.on_message_send(send(message_id), anonymous())
    clock.now += 10
    with pytest.raises(InternalError, match="cannot take this message now") as refused:
        await handler.on_message_send(send("c"), anonymous())
    assert refused.value.data == {"retryAfter": "50"}  # when "a" expires
    assert inner.runs == 2
    assert store.refusals == 1
    assert store.evictions == 0
    assert len(store) == 2
    for message_id in ("a", "b"):  # another caller's late resends: still answered
        await handler.on_message_send(send(message_id), anonymous())
    assert inner.runs == 2
    clock.now += 51  # past the ttl of both: they may go now
    await handler.on_message_send(send("c"), anonymous())
    assert inner.runs == 3
    assert store.evictions == 1
    assert "max_entries=2" in repr(store)


async def test_a_first_attempt_that_fails_before_a_task_lets_the_next_run() -> None:
    """A first attempt that fails before a task lets the next run."""
    inner = FakeHandler()
    inner.fail_before = ContentTypeNotSupportedError()
    handler = deduplicate(inner)
    with pytest.raises(ContentTypeNotSupportedError):
        await handler.on_message_send(send(), anonymous())
    inner.fail_before = None
    result = await handler.on_message_send(send(), anonymous())
    assert isinstance(result, Task)
    assert inner.runs == 2
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


async def test_concurrent_duplicates_of_a_failing_first_attempt_run_once_more() -> None:
    """Concurrent duplicates of a failing first attempt run once more."""
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    inner.fail_before = ContentTypeNotSupportedError()
    handler = deduplicate(inner)
    first = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    others = [asyncio.create_task(handler.on_message_send(send(), anonymous())) for _ in range(3)]
    for _ in range(10):
        await asyncio.sleep(0)
    inner.gate.set()
    with pytest.raises(ContentTypeNotSupportedError):
        await first
    results = await asyncio.gather(*others)
    assert inner.runs == 2
    assert len({result.id for result in results if isinstance(result, Task)}) == 1


async def test_a_first_attempt_that_raises_after_its_task_keeps_that_task() -> None:
    """A first attempt that raises after its task keeps that task."""
    inner = FakeHandler()
    inner.fail_after = RuntimeError("the executor raised")
    handler = deduplicate(inner)
    with pytest.raises(RuntimeError):
        await handler.on_message_send(send(), anonymous())
    inner.fail_after = None
    again = await handler.on_message_send(send(), anonymous())
    assert inner.runs == 1
    assert isinstance(again, Task)
    assert again.status.state == TaskState.TASK_STATE_FAILED


async def test_without_a_task_list_a_failed_first_attempt_is_forgotten() -> None:
    """Without a task list a failed first attempt is forgotten."""
    inner = FakeHandler()
    inner.fail_after = RuntimeError("the executor raised")
    inner.listing_fails = True
    handler = deduplicate(inner)
    with pytest.raises(RuntimeError):
        await handler.on_message_send(send(), anonymous())
    inner.fail_after = None
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


async def test_a_cancelled_first_attempt_gives_the_message_back() -> None:
    """A cancelled first attempt gives the message back."""
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner)
    first = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    for _ in range(5):
        await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    inner.gate.set()
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


async def test_messages_without_a_message_id_pass_through() -> None:
    """Messages without a message id pass through."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    await handler.on_message_send(send(""), anonymous())
    await handler.on_message_send(send(""), anonymous())
    assert inner.runs == 2
    inner.updates.put_nowait(COMPLETED)
    events = await drain(handler.on_message_send_stream(send(""), anonymous()))
    assert inner.runs == 3
    assert len(events) == 2


async def test_a_message_answer_is_answered_again() -> None:
    """A message answer is answered again."""
    inner = FakeHandler()
    inner.answer_message = True
    handler = deduplicate(inner)
    first = await handler.on_message_send(send(), anonymous())
    again = await handler.on_message_send(send(), anonymous())
    assert isinstance(again, Message)
    assert again == first
    streamed = await drain(handler.on_message_send_stream(send(), anonymous()))
    assert streamed == [first]
    assert inner.runs == 1


async def test_a_duplicate_that_waits_too_long_is_told_to_resend_later() -> None:
    """A duplicate that waits too long is told to resend later."""
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner, wait_timeout=0.001)
    first = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    await asyncio.sleep(0)
    with pytest.raises(InternalError, match="still being processed"):
        await handler.on_message_send(send(), anonymous())
    inner.gate.set()
    await first
    assert inner.runs == 1


async def test_a_streaming_resend_of_a_finished_task_sends_it_and_ends() -> None:
    """A streaming resend of a finished task sends it and ends."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    inner.updates.put_nowait(WORKING)
    inner.updates.put_nowait(COMPLETED)
    first = await drain(handler.on_message_send_stream(send(), anonymous()))
    assert [type(event).__name__ for event in first] == [
        "Task",
        "TaskStatusUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
    again = await drain(handler.on_message_send_stream(send(), anonymous()))
    assert inner.runs == 1
    assert len(again) == 1
    assert isinstance(again[0], Task)
    assert again[0].id == first[0].id
    assert again[0].status.state == COMPLETED
    unary = await handler.on_message_send(send(), anonymous())
    assert isinstance(unary, Task)
    assert unary.id == first[0].id
    assert inner.runs == 1


async def test_a_streaming_resend_while_the_first_runs_follows_the_task() -> None:
    """A streaming resend while the first runs follows the task."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    stream = handler.on_message_send_stream(send(), anonymous())
    opening = await anext(stream)
    assert isinstance(opening, Task)
    resend = handler.on_message_send_stream(send(), anonymous())
    resumed = await anext(resend)
    assert isinstance(resumed, Task)
    assert resumed.id == opening.id
    inner.updates.put_nowait(COMPLETED)
    assert len(await drain(stream)) == 1
    rest = await drain(resend)
    assert inner.runs == 1
    assert [event.status.state for event in rest] == [COMPLETED]


async def test_a_streaming_resend_that_loses_the_race_to_the_end_sends_the_task() -> None:
    """A streaming resend that loses the race to the end sends the task."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    stream = handler.on_message_send_stream(send(), anonymous())
    opening = await anext(stream)
    original = inner.on_get_task

    async def stale(params: Any, context: Any) -> Task | None:
        """The task, read just before it ends."""
        task = await original(params, context)
        assert task is not None
        copy = Task()
        copy.CopyFrom(task)
        inner.tasks[params.id].status.state = COMPLETED  # it ends right after this read
        return copy

    inner.on_get_task = stale  # type: ignore[method-assign]
    events = await drain(handler.on_message_send_stream(send(), anonymous()))
    assert [event.id for event in events] == [opening.id]
    await stream.aclose()
    assert inner.runs == 1


async def test_a_stream_that_fails_before_its_first_event_lets_the_next_run() -> None:
    """A stream that fails before its first event lets the next run."""
    inner = FakeHandler()
    inner.fail_before = ContentTypeNotSupportedError()
    handler = deduplicate(inner)
    with pytest.raises(ContentTypeNotSupportedError):
        await drain(handler.on_message_send_stream(send(), anonymous()))
    inner.fail_before = None
    inner.updates.put_nowait(COMPLETED)
    await drain(handler.on_message_send_stream(send(), anonymous()))
    assert inner.runs == 2


async def test_a_stream_dropped_after_its_first_event_keeps_its_task() -> None:
    """A stream dropped after its first event keeps its task."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    stream = handler.on_message_send_stream(send(), anonymous())
    opening = await anext(stream)
    await stream.aclose()  # the client went away
    again = await handler.on_message_send(send(), anonymous())
    assert isinstance(again, Task)
    assert again.id == opening.id
    assert inner.runs == 1


async def test_a_record_whose_task_is_gone_is_an_internal_error() -> None:
    """The task store lost the task (another replica's store, a purge): a clear InternalError."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    first = await handler.on_message_send(send(), anonymous())
    assert isinstance(first, Task)
    del inner.tasks[first.id]
    with pytest.raises(InternalError, match="not in this agent's task store"):
        await handler.on_message_send(send(), anonymous())
    with pytest.raises(InternalError, match="share one task store"):
        await drain(handler.on_message_send_stream(send(), anonymous()))
    assert inner.runs == 1


async def test_every_other_method_is_delegated() -> None:
    """Every other method is delegated."""
    inner = FakeHandler()
    handler = deduplicate(inner)
    assert isinstance(handler, RequestHandler)
    assert isinstance(handler, DeduplicatingHandler)
    context = anonymous()
    task = await handler.on_message_send(send(), context)
    assert isinstance(task, Task)
    from a2a.types.a2a_pb2 import (
        CancelTaskRequest,
        GetTaskRequest,
        ListTasksRequest,
        SubscribeToTaskRequest,
    )

    stored = inner.tasks[task.id]  # the answer is a marked copy of it
    assert (await handler.on_get_task(GetTaskRequest(id=task.id), context)) == stored
    assert len((await handler.on_list_tasks(ListTasksRequest(), context)).tasks) == 1
    assert (await handler.on_cancel_task(CancelTaskRequest(id=task.id), context)) == stored
    assert await handler.on_get_task_push_notification_config(None, context) == "get-config"  # type: ignore[arg-type]
    assert await handler.on_list_task_push_notification_configs(None, context) == "list-configs"  # type: ignore[arg-type]
    assert await handler.on_create_task_push_notification_config("c", context) == "c"  # type: ignore[arg-type]
    assert await handler.on_get_extended_agent_card(None, context) == "card"  # type: ignore[arg-type]
    await handler.on_delete_task_push_notification_config(None, context)  # type: ignore[arg-type]
    assert inner.closed
    inner.closed = False
    await handler.aclose()  # not defined by the wrapper: the inner handler's
    assert inner.closed
    inner.tasks[task.id].status.state = WORKING
    subscription = handler.on_subscribe_to_task(SubscribeToTaskRequest(id=task.id), context)
    assert (await anext(subscription)).id == task.id
    inner.tasks[task.id].status.state = COMPLETED
    assert len(await drain(subscription)) == 1
    assert "deduplicate(" in repr(handler)
    with pytest.raises(AttributeError):
        _ = handler.no_such_thing


def test_bad_settings_are_refused() -> None:
    """Bad settings are refused."""
    with pytest.raises(ValueError, match="positive"):
        deduplicate(FakeHandler(), ttl=0)
    with pytest.raises(ValueError, match="at least 1"):
        MemoryDedupeStore(max_entries=0)


def test_the_stores_are_dedupe_stores() -> None:
    """The stores are dedupe stores."""
    assert isinstance(MemoryDedupeStore(), DedupeStore)


async def test_the_memory_store_wakes_waiters_on_other_threads_loops() -> None:
    """The memory store wakes waiters on other threads loops."""
    store = MemoryDedupeStore()
    claim = await store.claim("k", "fp", 60)
    assert claim.owned
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()

    def other_thread() -> DedupeRecord | None:
        """Wait on another thread, in its own event loop."""

        async def waiting() -> DedupeRecord | None:
            """Start waiting, say so, wait."""
            waiter = asyncio.create_task(store.wait("k", 10))
            await asyncio.sleep(0)
            loop.call_soon_threadsafe(ready.set)
            return await waiter

        return asyncio.run(waiting())

    result = loop.run_in_executor(None, other_thread)
    await ready.wait()
    await store.record("k", claim.token, DedupeRecord(task_id="t"), 60)
    assert await asyncio.wait_for(result, 10) == DedupeRecord(task_id="t")
    assert (await store.claim("k", "fp", 60)).record == DedupeRecord(task_id="t")
    await store.release("k", "not-the-owner")  # only the owner may release
    await store.record("k", "not-the-owner", DedupeRecord(task_id="u"), 60)
    assert (await store.wait("k", 1)) == DedupeRecord(task_id="t")
    assert await store.wait("unknown", 1) is None


@given(
    st.text(),
    st.text(),
    st.text(),
    st.text(),
)
def test_message_key_never_raises(
    identity: str, tenant: str, message_id: str, fingerprint: str
) -> None:
    """Message key never raises."""
    key = message_key(identity, tenant, message_id, fingerprint)
    assert len(key) == 64


async def test_logging_never_shows_the_message(caplog: pytest.LogCaptureFixture) -> None:
    """Logging never shows the message."""
    inner = FakeHandler()
    inner.fail_after = RuntimeError("boom")
    handler = deduplicate(inner)
    with caplog.at_level(logging.DEBUG, logger="a2a_client_errors"), pytest.raises(RuntimeError):
        await handler.on_message_send(send(text="secret-body"), anonymous())
    assert "secret-body" not in caplog.text


# --------------------------------------------------------------------------------------------
# The memory store's bounds
# --------------------------------------------------------------------------------------------


class BigAnswers(FakeHandler):
    """Answers every send with a new task carrying a 100 KB artifact, kept nowhere here."""

    async def on_message_send(self, params: Any, context: Any) -> Task | Message:
        """A task with a large artifact."""
        self.runs += 1
        task = Task(id=str(uuid.uuid4()), context_id="ctx", status=TaskStatus(state=COMPLETED))
        task.artifacts.add(artifact_id="a", parts=[Part(raw=b"x" * 100_000)])
        return task


async def test_records_keep_ids_not_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,500 tasks of 100 KB: the store holds a few hundred bytes each, by tracemalloc too.

    The handler's own window of recent messageIds (at most REUSE_WINDOW, for counting reuses)
    is not the store's: it is shut here, so that tracemalloc sees the store alone.
    """
    monkeypatch.setattr(dedupe_module, "REUSE_WINDOW", 0)
    inner = BigAnswers()
    store = MemoryDedupeStore()
    handler = deduplicate(inner, store=store)
    context = ServerCallContext(user=Named("alice"))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(1500):
            await handler.on_message_send(send(f"m-{index}"), context)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert inner.runs == 1500
    assert len(store) == 1500
    assert store.bytes_used < 1500 * 1024
    assert grown <= store.bytes_used  # the accounting errs on the large side
    assert store.evictions == 0


async def test_the_memory_store_stays_under_its_byte_bound() -> None:
    """Records of 2 KB Messages up to max_bytes: then new claims are refused, none evicted."""
    clock = Clock()
    store = MemoryDedupeStore(max_bytes=256 * 1024, clock=clock)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = []
        for index in range(2000):
            claim = await store.claim(f"k-{index}", "fp", 60)
            if claim.degraded:
                continue
            record = DedupeRecord(fingerprint="fp", message=bytes([index % 256]) * 2048)
            await store.record(f"k-{index}", claim.token, record, 60)
            kept.append(index)
            assert store.bytes_used <= store.max_bytes
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown <= store.max_bytes
    assert 0 < len(store) == len(kept) < 2000
    assert store.refusals == 2000 - len(kept)
    assert store.evictions == 0
    whole = []
    for index in kept:  # every record within its ttl is still there
        found = (await store.claim(f"k-{index}", "fp", 60)).record
        assert found is not None
        # its answer whole, or (the last ones, once it no longer fit) not kept
        assert found.message in (b"", bytes([index % 256]) * 2048)
        whole.append(bool(found.message))
    assert whole[0]
    assert whole == sorted(whole, reverse=True)
    clock.now += 61
    assert (await store.claim("k-new", "fp", 60)).owned  # expired records made room
    assert store.evictions > 0
    assert "max_bytes=262144" in repr(store)


async def test_only_records_past_their_ttl_ever_make_room() -> None:
    """Full: an expired record goes; a live record or a running claim never does."""
    clock = Clock()
    store = MemoryDedupeStore(max_entries=3, clock=clock)
    old = await store.claim("old", "fp", 10)
    await store.record("old", old.token, DedupeRecord(task_id="t", fingerprint="fp"), 10)
    clock.now += 20  # "old" expired
    running = await store.claim("running", "fp", 1)  # its ttl is short; it runs on
    done = await store.claim("done", "fp", 60)
    await store.record("done", done.token, DedupeRecord(task_id="t", fingerprint="fp"), 60)
    assert (await store.claim("new-1", "fp", 60)).owned  # the expired one made room
    assert store.evictions == 1
    clock.now += 30  # the running claim outlives any ttl
    refused = await store.claim("new-2", "fp", 60)
    assert refused.degraded
    assert not refused.owned
    assert refused.retry_after == pytest.approx(30.0)  # when "done" expires
    assert store.refusals == 1
    assert not (await store.claim("running", "fp", 60)).owned  # still claimed
    assert (await store.claim("done", "fp", 60)).record is not None  # still recorded
    await store.record("running", running.token, DedupeRecord(task_id="r"), 5)
    clock.now += 4
    assert (await store.claim("running", "fp", 60)).record == DedupeRecord(task_id="r")
    clock.now += 2  # five seconds after its attempt ended
    assert (await store.claim("running", "fp", 60)).owned
    with pytest.raises(ValueError, match="max_bytes"):
        MemoryDedupeStore(max_bytes=0)


async def test_a_waiter_on_a_running_claim_of_a_full_store_is_not_woken() -> None:
    """A full store with one running claim refuses the next message; its waiter waits on."""
    full = MemoryDedupeStore(max_entries=1)
    claim = await full.claim("a", "fp", 60)
    assert claim.owned
    waiter = asyncio.create_task(full.wait("a", 10))
    await asyncio.sleep(0)  # let it wait
    assert (await full.claim("b", "fp", 60)).degraded
    assert (await full.claim("b", "fp", 60)).retry_after is None  # nothing expires: no hint
    assert not waiter.done()
    await full.record("a", claim.token, DedupeRecord(task_id="t"), 60)
    assert await waiter == DedupeRecord(task_id="t")
    assert full.evictions == 0


async def test_an_answer_that_does_not_fit_is_recorded_without_it() -> None:
    """The claim's room holds the task id; a Message answer too big for what is left is not."""
    store = MemoryDedupeStore(max_bytes=3000)
    claim = await store.claim("k", "fp", 60)
    await store.record("k", claim.token, DedupeRecord(fingerprint="fp", message=b"x" * 4096), 60)
    found = (await store.claim("k", "fp", 60)).record
    assert found == DedupeRecord(fingerprint="fp")
    assert store.bytes_used <= store.max_bytes


async def test_a_full_store_warns_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    """Each refusal counts; a WARNING says so at most once per warn_interval."""
    clock = Clock()
    store = MemoryDedupeStore(max_entries=1, clock=clock, warn_interval=60)
    await store.claim("a", "fp", 60)
    with caplog.at_level(logging.WARNING, logger="a2a_client_errors.server"):
        for _ in range(3):
            assert (await store.claim("b", "fp", 60)).degraded
        clock.now += 61
        assert (await store.claim("b", "fp", 60)).degraded
    assert store.refusals == 4
    warned = [record for record in caplog.records if "store full" in record.getMessage()]
    assert len(warned) == 2
    assert all(record.levelno == logging.WARNING for record in warned)
    assert "refused as not processed" in warned[0].getMessage()


# --------------------------------------------------------------------------------------------
# The ttl counts from the end of the first attempt; a running claim never ends
# --------------------------------------------------------------------------------------------


async def test_a_first_attempt_longer_than_the_ttl_keeps_its_claim() -> None:
    """A ttl of 2 s, a task of 4 s: the resend at 3 s waits and gets the task; one run."""
    clock = Clock()
    inner = FakeHandler()
    inner.gate = asyncio.Event()
    handler = deduplicate(inner, store=MemoryDedupeStore(clock=clock), ttl=2)
    first = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    await inner.started.wait()
    clock.now += 3
    resend = asyncio.create_task(handler.on_message_send(send(), anonymous()))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not resend.done()  # it waits for the first attempt
    clock.now += 1
    inner.gate.set()
    task, again = await first, await resend
    assert isinstance(task, Task)
    assert isinstance(again, Task)
    assert again.id == task.id
    assert inner.runs == 1
    clock.now += 1.9  # within the ttl, counted from the end of the first attempt
    assert (await handler.on_message_send(send(), anonymous())).id == task.id  # type: ignore[union-attr]
    assert inner.runs == 1
    clock.now += 0.2
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


async def test_a_stream_longer_than_the_ttl_keeps_its_record_until_it_ends() -> None:
    """A stream running past its ttl after its first event: a resend follows it, no run."""
    clock = Clock()
    inner = FakeHandler()
    handler = deduplicate(inner, store=MemoryDedupeStore(clock=clock), ttl=2)
    stream = handler.on_message_send_stream(send(), anonymous())
    opening = await anext(stream)
    clock.now += 10
    again = await handler.on_message_send(send(), anonymous())
    assert isinstance(again, Task)
    assert again.id == opening.id
    inner.updates.put_nowait(COMPLETED)
    await drain(stream)
    clock.now += 1.9
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 1
    clock.now += 0.2
    await handler.on_message_send(send(), anonymous())
    assert inner.runs == 2


# --------------------------------------------------------------------------------------------
# A store that cannot take the message: refused, not processed, per binding
# --------------------------------------------------------------------------------------------


class Refusing:
    """A store that takes nothing (a store of its own kind: owned and degraded)."""

    def __init__(self, retry_after: float | None = 7.0) -> None:
        """__init__."""
        self.retry_after = retry_after

    async def claim(self, key: str, fingerprint: str, ttl: float) -> Any:
        """Degraded, as an earlier store said it: owned."""
        return Claim(owned=True, degraded=True, retry_after=self.retry_after)

    async def wait(self, key: str, timeout: float) -> DedupeRecord | None:
        """Nothing to wait for."""
        return None

    async def record(
        self, key: str, token: str, record: DedupeRecord, ttl: float, *, final: bool = True
    ) -> None:
        """Nothing kept."""

    async def release(self, key: str, token: str) -> None:
        """Nothing held."""


class Servicer:
    """A gRPC servicer context that records its abort, and raises as grpc.aio's does."""

    def __init__(self) -> None:
        """__init__."""
        self.aborted: tuple[Any, ...] | None = None

    async def abort(self, code: Any, details: str, trailing_metadata: Any) -> None:
        """Record the abort; raise."""
        self.aborted = (code, details, trailing_metadata)
        raise RuntimeError("aborted")


async def test_a_refused_send_runs_nothing_on_any_binding() -> None:
    """Over gRPC an UNAVAILABLE abort with pushback; JSON-RPC a 503; HTTP+JSON an error."""
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    from starlette.exceptions import HTTPException

    inner = FakeHandler()
    handler = deduplicate(inner, store=Refusing(retry_after=7.2))
    servicer = Servicer()
    with pytest.raises(RuntimeError, match="aborted"):
        await handler.on_message_send(send(), ServerCallContext(state={"grpc_context": servicer}))
    assert servicer.aborted is not None
    code, details, trailers = servicer.aborted
    assert code is grpc.StatusCode.UNAVAILABLE
    assert "nothing was done" in details
    trailer = dict(trailers)
    assert trailer["grpc-retry-pushback-ms"] == "7200"
    status = status_pb2.Status.FromString(trailer["grpc-status-details-bin"])
    assert status.code == 14
    retry = error_details_pb2.RetryInfo()
    assert status.details[1].Unpack(retry)
    assert retry.retry_delay.ToMilliseconds() == 7200
    jsonrpc = ServerCallContext(state={"method": "SendMessage", "request_id": 3})
    with pytest.raises(HTTPException) as raised:
        await drain(handler.on_message_send_stream(send(), jsonrpc))
    assert raised.value.status_code == 503
    assert raised.value.headers == {"Retry-After": "8"}
    with pytest.raises(InternalError, match="send it again in 8 s") as refused:
        await handler.on_message_send(send(), anonymous())
    assert refused.value.data == {"retryAfter": "8"}
    assert inner.runs == 0


async def test_fail_open_processes_what_the_store_cannot_take_and_promises_nothing() -> None:
    """fail_open: the message runs (each resend again), unmarked; a card cannot go with it."""
    inner = FakeHandler()
    handler = deduplicate(inner, store=Refusing(), fail_open=True)
    first = await handler.on_message_send(send(), anonymous())
    await handler.on_message_send(send(), anonymous())
    inner.updates.put_nowait(COMPLETED)
    events = await drain(handler.on_message_send_stream(send(), anonymous()))
    assert inner.runs == 3
    assert read_dedupe_mark(first) is None
    assert all(read_dedupe_mark(event) is None for event in events)
    healthy = deduplicate(FakeHandler(), fail_open=True)
    assert read_dedupe_mark(await healthy.on_message_send(send(), anonymous())) is None
    from a2a.types.a2a_pb2 import AgentCard

    with pytest.raises(ValueError, match="cannot promise"):
        deduplicate(FakeHandler(), fail_open=True, card=AgentCard(name="agent"))


# --------------------------------------------------------------------------------------------
# The mark on every answer
# --------------------------------------------------------------------------------------------


async def test_every_answer_carries_the_mark_and_the_task_store_none() -> None:
    """First answer, resend, streamed Task events: marked with the ttl; stored task unmarked."""
    inner = FakeHandler()
    handler = deduplicate(inner, ttl=120)
    expected = DedupeParams(ttl=120.0, per_caller=True)
    first = await handler.on_message_send(send(), anonymous())
    again = await handler.on_message_send(send(), anonymous())
    assert read_dedupe_mark(first) == expected
    assert read_dedupe_mark(again) == expected
    assert isinstance(first, Task)
    assert dict(first.metadata[DEDUPLICATE_EXTENSION]) == {"ttl": 120.0, "perCaller": True}
    assert read_dedupe_mark(inner.tasks[first.id]) is None
    inner.updates.put_nowait(COMPLETED)
    streamed = await drain(handler.on_message_send_stream(send("m-2"), anonymous()))
    assert read_dedupe_mark(streamed[0]) == expected  # the Task
    assert read_dedupe_mark(streamed[1]) is None  # a status update carries no Task
    resumed = await drain(handler.on_message_send_stream(send("m-2"), anonymous()))
    assert [read_dedupe_mark(event) for event in resumed] == [expected]
    assert all(read_dedupe_mark(task) is None for task in inner.tasks.values())
    passed = await handler.on_message_send(send(""), anonymous())  # not deduplicated
    assert read_dedupe_mark(passed) is None


async def test_a_message_answer_is_marked_too() -> None:
    """A Message answer, first and resent: marked; what the store keeps is not."""
    inner = FakeHandler()
    inner.answer_message = True
    handler = deduplicate(inner)
    first = await handler.on_message_send(send(), anonymous())
    again = await handler.on_message_send(send(), anonymous())
    assert isinstance(again, Message)
    assert read_dedupe_mark(first) == read_dedupe_mark(again) == DedupeParams(ttl=86400.0)


async def test_with_a2a_errors_lets_the_refusal_through() -> None:
    """with_a2a_errors(deduplicate(...)): the 503 of a JSON-RPC refusal is not made internal."""
    from starlette.exceptions import HTTPException

    from a2a_client_errors.server import with_a2a_errors

    inner = FakeHandler()
    handler = with_a2a_errors(deduplicate(inner, store=Refusing()))
    jsonrpc = ServerCallContext(state={"method": "SendMessage"})
    with pytest.raises(HTTPException) as raised:
        await handler.on_message_send(send(), jsonrpc)
    assert raised.value.status_code == 503
    assert inner.runs == 0
