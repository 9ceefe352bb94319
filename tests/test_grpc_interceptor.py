"""GuardInterceptor against a real ``grpc.aio`` server of ours on 127.0.0.1, scripted per call.

The server answers each method from a script (fail with a status and trailers, or answer with
messages, then perhaps fail) and records the raw request bytes, so a test can check that every
attempt sent the same request. The Guard runs on a fake clock: no test sleeps for real.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import pytest
from a2a.client.errors import A2AClientError
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from a2a_client_errors import (
    AuthFailed,
    BudgetExhausted,
    CallFailed,
    DeadlineExceeded,
    DegradeNeeded,
    GiveUp,
    Guard,
    OutcomeUnknown,
    ReconcileNeeded,
    RetryExhausted,
    classify,
)
from a2a_client_errors._reasons import Delivery
from a2a_client_errors._retry import BudgetRegistry, RetryBudget
from a2a_client_errors.integrations.grpc import (
    GuardInterceptor,
    NotConnectedError,
    connect,
    operation_of,
)
from a2a_client_errors.testing import FakeClock, RecordingHook
from tests.relay import Relay, refused_port, silent_port

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

# A gRPC server of the 1.0 proto (a2a-sdk 1.x's a2a_pb2).
pytestmark = pytest.mark.a2a_sdk("1")

SERVICE = "lf.a2a.v1.A2AService"
LEGACY_SERVICE = "a2a.v1.A2AService"
OTHER_SERVICE = "other.v1.Other"
UNARY = (
    "SendMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "GetExtendedAgentCard",
    "DeleteTaskPushNotificationConfig",
    "GetAgentCard",  # 0.3
    "Ping",  # another service's method
)
STREAMS = ("SendStreamingMessage", "SubscribeToTask", "TaskSubscription")
HINT = "pip install 'a2a-client-errors[grpc]'"
CALL_TIMEOUT = 10.0
"""The gRPC timeout of every call a test makes (each attempt gets what is left of it)."""
WAIT = 5.0
"""The most a test waits for the server to observe something."""
SLACK = 0.05
"""How much a timeout may grow on the wire (gRPC sends it rounded up, in a few digits)."""


def path(method: str, service: str = SERVICE) -> str:
    """The full gRPC method path."""
    return f"/{service}/{method}"


# --- the scripted server --------------------------------------------------------------------


@dataclass(frozen=True)
class Fail:
    """End the call with a non-OK status and these trailers."""

    code: grpc.StatusCode
    details: str = "scripted failure"
    trailing: tuple[tuple[str, str | bytes], ...] = ()


@dataclass(frozen=True)
class Reply:
    """Answer with ``messages`` (one for a unary call), then end: OK, ``then``, or hold open.

    A unary call that holds waits before its answer, until its connection or the server ends.
    """

    messages: tuple[bytes, ...] = (b"",)
    then: Fail | None = None
    trailing: tuple[tuple[str, str | bytes], ...] = ()
    hold: bool = False


@dataclass
class ScriptedServer:
    """What the server will answer, per method path, and what it was sent."""

    target: str = ""
    script: dict[str, list[Fail | Reply]] = field(default_factory=lambda: defaultdict(list))
    requests: dict[str, list[bytes]] = field(default_factory=lambda: defaultdict(list))
    time_left: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def plan(self, method: str, *steps: Fail | Reply) -> None:
        """Answer the next calls of ``method`` (a full path) with ``steps``, in order."""
        self.script[method].extend(steps)

    def _next(self, method: str, request: bytes, context: Any) -> Fail | Reply:
        self.requests[method].append(request)
        self.time_left[method].append(context.time_remaining())
        self.arrived.set()
        steps = self.script[method]
        return steps.pop(0) if steps else Reply()

    def handlers(self) -> tuple[Any, ...]:
        """A generic handler per service; requests and responses stay raw bytes."""
        return tuple(
            grpc.method_handlers_generic_handler(
                service,
                {
                    **{name: self._unary(path(name, service)) for name in UNARY},
                    **{name: self._stream(path(name, service)) for name in STREAMS},
                },
            )
            for service in (SERVICE, LEGACY_SERVICE, OTHER_SERVICE)
        )

    def _unary(self, method: str) -> Any:
        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            step = self._next(method, request, context)
            if isinstance(step, Fail):
                await context.abort(step.code, step.details, trailing_metadata=step.trailing)
            assert isinstance(step, Reply)
            if step.hold:
                await asyncio.Event().wait()  # until the connection breaks or the server stops
            if step.trailing:
                context.set_trailing_metadata(step.trailing)
            return step.messages[0]

        return grpc.unary_unary_rpc_method_handler(handle)

    def _stream(self, method: str) -> Any:
        async def handle(request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
            step = self._next(method, request, context)
            if isinstance(step, Fail):
                await context.abort(step.code, step.details, trailing_metadata=step.trailing)
            assert isinstance(step, Reply)
            for message in step.messages:
                yield message
            if step.hold:
                try:
                    await asyncio.Event().wait()  # until the client cancels (or the server stops)
                except asyncio.CancelledError:
                    self.cancelled.set()
                    raise
            if step.then is not None:
                failure = step.then
                await context.abort(
                    failure.code, failure.details, trailing_metadata=failure.trailing
                )

        return grpc.unary_stream_rpc_method_handler(handle)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedServer]:
    """A scripted grpc.aio server on an ephemeral port of 127.0.0.1, stopped after the test."""
    scripted = ScriptedServer()
    running = grpc.aio.server()
    running.add_generic_rpc_handlers(scripted.handlers())
    port = running.add_insecure_port("127.0.0.1:0")
    assert port
    await running.start()
    scripted.target = f"127.0.0.1:{port}"
    try:
        yield scripted
    finally:
        await running.stop(None)


@dataclass
class Rig:
    """A Guard on a fake clock, its recorder, and a channel through a GuardInterceptor."""

    guard: Guard
    clock: FakeClock
    hook: RecordingHook
    channel: Any

    @property
    def stub(self) -> Any:
        """The A2A stub on the guarded channel."""
        return a2a_pb2_grpc.A2AServiceStub(self.channel)


@pytest.fixture
async def rig_for(server: ScriptedServer) -> AsyncIterator[Callable[..., Rig]]:
    """Build guarded channels to the server; every channel is closed after the test."""
    channels: list[Any] = []

    def build(
        *,
        draw: float = 0.5,
        peer: str | None = None,
        extra: Any = (),
        whole: bool = False,
        target: str | None = None,
        **kwargs: Any,
    ) -> Rig:
        clock = FakeClock()
        hook = RecordingHook()
        guard = Guard(
            clock=clock.now, sleep=clock.sleep, random=lambda: draw, hooks=[hook], **kwargs
        )
        interceptors = (
            GuardInterceptor(guard, peer=peer).interceptors
            if not whole
            else [GuardInterceptor(guard, peer=peer)]
        )
        channel = grpc.aio.insecure_channel(
            target or server.target, interceptors=[*interceptors, *extra]
        )
        channels.append(channel)
        return Rig(guard, clock, hook, channel)

    yield build
    for channel in channels:
        await channel.close()


def send_request(message_id: str = "msg-1", text: str = "hello") -> Any:
    """A SendMessageRequest (``message_id`` may be empty)."""
    message = a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
    )
    return a2a_pb2.SendMessageRequest(message=message)


def task_bytes(task_id: str = "task-1", state: int = a2a_pb2.TASK_STATE_COMPLETED) -> bytes:
    """A serialised Task."""
    return bytes(
        a2a_pb2.Task(id=task_id, status=a2a_pb2.TaskStatus(state=state)).SerializeToString()
    )


def event_bytes(task_id: str, state: int) -> bytes:
    """A serialised StreamResponse carrying a task in ``state``."""
    task = a2a_pb2.Task(id=task_id, status=a2a_pb2.TaskStatus(state=state))
    return bytes(a2a_pb2.StreamResponse(task=task).SerializeToString())


def a2a_failure(code: grpc.StatusCode, reason: str, message: str = "refused") -> Fail:
    """A status with an A2A ErrorInfo in ``grpc-status-details-bin``, as grpcio-status packs it."""
    status = status_pb2.Status(code=code.value[0], message=message)
    info = error_details_pb2.ErrorInfo(
        reason=reason, domain="a2a-protocol.org", metadata={"task_id": "task-1"}
    )
    status.details.add().Pack(info)
    rich = rpc_status.to_status(status)
    return Fail(rich.code, rich.details, tuple(rich.trailing_metadata))


UNAVAILABLE = Fail(grpc.StatusCode.UNAVAILABLE, "try later")


def server_unavailable(seconds: int = 0) -> Fail:
    """The server's own UNAVAILABLE, with a RetryInfo in the trailer: it did not do the work."""
    status = status_pb2.Status(code=grpc.StatusCode.UNAVAILABLE.value[0], message="try later")
    status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay={"seconds": seconds}))
    rich = rpc_status.to_status(status)
    return Fail(rich.code, rich.details, tuple(rich.trailing_metadata))


SAID_UNAVAILABLE = server_unavailable()


async def collect(call: Any, into: list[Any]) -> None:
    """Append every message of a stream to ``into`` (kept if the stream raises)."""
    async for response in call:
        into.append(response)  # noqa: PERF401 (a comprehension would lose them on an error)


# --- unary calls ----------------------------------------------------------------------------


async def test_unavailable_twice_then_ok_resends_the_same_request(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """Three attempts, the same bytes (the same messageId) each time, the backoff slept."""
    response = a2a_pb2.SendMessageResponse(task=a2a_pb2.Task(id="task-1"))
    server.plan(
        path("SendMessage"),
        SAID_UNAVAILABLE,
        SAID_UNAVAILABLE,
        Reply((response.SerializeToString(),)),
    )
    rig = rig_for(draw=0.5)
    request = send_request("msg-same")

    got = await rig.stub.SendMessage(request, timeout=CALL_TIMEOUT)

    assert got.task.id == "task-1"
    sent = server.requests[path("SendMessage")]
    assert sent == [request.SerializeToString()] * 3
    assert {a2a_pb2.SendMessageRequest.FromString(raw).message.message_id for raw in sent} == {
        "msg-same"
    }
    assert rig.clock.sleeps == [0.25, 0.5]  # full jitter at draw 0.5: 0.5 * 0.5, 0.5 * 1.0
    assert rig.hook.actions == ["retry", "retry", "ok"]
    assert [e.attempt for e in rig.hook.decisions] == [1, 2, 3]
    assert {e.operation for e in rig.hook.decisions} == {"SendMessage"}
    assert {e.peer for e in rig.hook.decisions} == {server.target}


async def test_a_bare_unavailable_on_a_send_is_never_resent_blindly(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """No details: the work may be done (a reset connection looks the same); OutcomeUnknown."""
    server.plan(path("SendMessage"), UNAVAILABLE, UNAVAILABLE)
    rig = rig_for()
    request = send_request("msg-once")

    with pytest.raises(OutcomeUnknown) as raised:
        await rig.stub.SendMessage(request, timeout=CALL_TIMEOUT)

    assert server.requests[path("SendMessage")] == [request.SerializeToString()]
    assert raised.value.maybe_processed
    assert raised.value.decision.give_up is GiveUp.OUTCOME_UNKNOWN
    assert rig.clock.sleeps == []


async def test_a_bare_unavailable_on_a_read_is_retried(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The same status on a GetTask is retried as it always was: reads are free to resend."""
    task = a2a_pb2.Task(id="task-1")
    server.plan(path("GetTask"), UNAVAILABLE, Reply((task.SerializeToString(),)))
    rig = rig_for()

    got = await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert got.id == "task-1"
    assert len(server.requests[path("GetTask")]) == 2


async def test_task_not_cancelable_in_the_trailer_reconciles_at_once(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """FAILED_PRECONDITION alone says fix_request; the ErrorInfo in the trailer decides."""
    server.plan(
        path("CancelTask"),
        a2a_failure(grpc.StatusCode.FAILED_PRECONDITION, "TASK_NOT_CANCELABLE"),
    )
    rig = rig_for()

    with pytest.raises(ReconcileNeeded) as raised:
        await rig.stub.CancelTask(a2a_pb2.CancelTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    failure = raised.value
    assert failure.attempts == 1
    assert isinstance(failure.__cause__, grpc.aio.AioRpcError)
    assert failure.__cause__.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert failure.reason == "TASK_NOT_CANCELABLE"
    assert failure.decision.operation == "CancelTask"
    assert failure.decision.error is not None
    assert failure.decision.error.source.value == "error_info"
    assert failure.decision.error.metadata["task_id"] == "task-1"
    assert len(server.requests[path("CancelTask")]) == 1
    assert rig.clock.sleeps == []


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED]
)
async def test_refused_credentials_are_auth_failed(
    server: ScriptedServer, rig_for: Callable[..., Rig], code: grpc.StatusCode
) -> None:
    """Auth is never retried in a loop."""
    server.plan(path("GetTask"), Fail(code, "who are you"))
    rig = rig_for()

    with pytest.raises(AuthFailed) as raised:
        await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert raised.value.attempts == 1
    assert isinstance(raised.value.__cause__, grpc.aio.AioRpcError)
    assert len(server.requests[path("GetTask")]) == 1


async def test_refreshed_credentials_get_one_more_attempt(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The Guard's refresh_credentials runs once; the request is sent again as it was."""
    server.plan(path("GetTask"), Fail(grpc.StatusCode.UNAUTHENTICATED), Reply((task_bytes(),)))
    refreshed: list[str] = []
    rig = rig_for(
        refresh_credentials=lambda decision: refreshed.append(decision.action.value) or True
    )

    got = await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert got.id == "task-1"
    assert refreshed == ["auth"]
    assert rig.hook.actions == ["auth", "ok"]
    assert len(set(server.requests[path("GetTask")])) == 1


async def test_retry_pushback_is_the_floor_of_the_delay(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """RESOURCE_EXHAUSTED with grpc-retry-pushback-ms: 1500 waits 1.5 s, over a 0.5 s backoff."""
    server.plan(
        path("GetTask"),
        Fail(
            grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down", (("grpc-retry-pushback-ms", "1500"),)
        ),
        Reply((task_bytes(),)),
    )
    rig = rig_for(draw=1.0)

    got = await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert got.id == "task-1"
    assert rig.clock.sleeps == [1.5]
    first = rig.hook.decisions[0].decision
    assert first.retry_after == 1.5
    assert first.delay == 1.5
    assert rig.hook.actions == ["retry", "ok"]


async def test_a_spent_budget_fails_fast(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The channel target's budget pays one retry; then calls fail after one attempt."""
    server.plan(path("GetTask"), *[UNAVAILABLE] * 3)
    rig = rig_for(max_attempts=5, budget=BudgetRegistry(lambda: RetryBudget(1.0)))
    request = a2a_pb2.GetTaskRequest(id="task-1")

    with pytest.raises(BudgetExhausted) as first:
        await rig.stub.GetTask(request, timeout=CALL_TIMEOUT)
    with pytest.raises(BudgetExhausted) as second:
        await rig.stub.GetTask(request, timeout=CALL_TIMEOUT)

    assert first.value.attempts == 2
    assert first.value.decision.give_up is GiveUp.BUDGET
    assert second.value.attempts == 1
    assert len(server.requests[path("GetTask")]) == 3
    assert rig.guard.budgets.peers() == [server.target]  # type: ignore[union-attr]


async def test_peer_names_the_budget_and_the_events(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """``peer=`` replaces the channel target as the budget's key."""
    server.plan(path("GetTask"), UNAVAILABLE, Reply((task_bytes(),)))
    rig = rig_for(peer="agent-b")

    await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert rig.guard.budgets.peers() == ["agent-b"]  # type: ignore[union-attr]
    assert {e.peer for e in rig.hook.decisions} == {"agent-b"}


async def test_send_message_without_message_id_is_sent_once(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """A resend could create a second task: the retry is refused, and says why."""
    server.plan(path("SendMessage"), UNAVAILABLE, Reply())
    rig = rig_for()

    with pytest.raises(RetryExhausted) as raised:
        await rig.stub.SendMessage(send_request(message_id=""), timeout=CALL_TIMEOUT)

    assert raised.value.decision.give_up is GiveUp.NO_MESSAGE_ID
    assert raised.value.attempts == 1
    assert len(server.requests[path("SendMessage")]) == 1


async def test_the_call_timeout_is_the_guards_deadline(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """A 0.4 s call cannot wait a 0.5 s backoff: it gives up at once."""
    server.plan(path("GetTask"), UNAVAILABLE, Reply((task_bytes(),)))
    rig = rig_for(draw=1.0)

    with pytest.raises(DeadlineExceeded) as raised:
        await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=0.4)

    assert raised.value.decision.give_up is GiveUp.DEADLINE
    assert raised.value.attempts == 1
    assert rig.clock.sleeps == []


async def test_each_attempt_gets_the_time_left(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """After a 0.5 s backoff, the second attempt of a 5 s call has at most 4.5 s."""
    server.plan(path("GetTask"), UNAVAILABLE, Reply((task_bytes(),)))
    rig = rig_for(draw=1.0)

    await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=5.0)

    first, second = server.time_left[path("GetTask")]
    assert first is not None
    assert second is not None
    # gRPC encodes a timeout with a few digits, rounded up: allow it SLACK.
    assert 3.0 < first <= 5.0 + SLACK
    assert 2.5 < second <= 4.5 + SLACK


async def test_the_guards_deadline_bounds_a_unary_call_without_timeout(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """Guard(deadline=7) sends a unary call with a 7 s timeout; a stream keeps none."""
    server.plan(
        path("SubscribeToTask"), Reply((event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING),))
    )
    rig = rig_for(deadline=7.0)

    await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"))
    events: list[Any] = []
    await collect(rig.stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id="task-1")), events)

    (left,) = server.time_left[path("GetTask")]
    assert left is not None
    assert 5.0 < left <= 7.0 + SLACK
    assert server.time_left[path("SubscribeToTask")] == [None]
    assert len(events) == 1


async def test_the_successful_call_is_handed_back(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The caller reads the status and trailers of the attempt that succeeded."""
    server.plan(
        path("GetTask"), UNAVAILABLE, Reply((task_bytes(),), trailing=(("x-answer", "42"),))
    )
    rig = rig_for()

    call = rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)
    got = await call

    assert got.id == "task-1"
    assert await call.code() is grpc.StatusCode.OK
    assert ("x-answer", "42") in tuple(await call.trailing_metadata())


@pytest.mark.parametrize(
    ("method", "operation"),
    [
        (path("GetAgentCard", LEGACY_SERVICE), "GetExtendedAgentCard"),
        (path("GetTask", LEGACY_SERVICE), "GetTask"),
        (path("Ping", OTHER_SERVICE), None),
    ],
)
async def test_other_method_paths_are_guarded(
    server: ScriptedServer, rig_for: Callable[..., Rig], method: str, operation: str | None
) -> None:
    """0.3's service is read with 1.0's names; another service's calls are guarded too."""
    server.plan(method, UNAVAILABLE, Reply((b"raw",)))
    rig = rig_for()

    got = await rig.channel.unary_unary(method)(b"ping", timeout=CALL_TIMEOUT)

    assert got == b"raw"
    assert server.requests[method] == [b"ping", b"ping"]
    assert {e.operation for e in rig.hook.decisions} == {operation}


async def test_an_exception_that_is_no_call_error_propagates_as_it_is(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """A bug below the interceptor is not judged, nor retried."""

    class Broken(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            raise RuntimeError("a bug")

    rig = rig_for(extra=(Broken(),))

    with pytest.raises(RuntimeError, match="a bug"):
        await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert server.requests[path("GetTask")] == []
    assert rig.hook.decisions == []


async def test_the_interceptor_itself_guards_unary_calls(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """``interceptors=[GuardInterceptor(guard)]``: grpcio files it as a unary-unary one."""
    server.plan(path("GetTask"), UNAVAILABLE, Reply((task_bytes(),)))
    rig = rig_for(whole=True)

    got = await rig.stub.GetTask(a2a_pb2.GetTaskRequest(id="task-1"), timeout=CALL_TIMEOUT)

    assert got.id == "task-1"
    assert rig.hook.actions == ["retry", "ok"]


def test_the_interceptors_have_one_arity_each() -> None:
    """So that a channel files each under its own kind, and none twice."""
    unary, stream = GuardInterceptor(Guard()).interceptors

    assert isinstance(unary, grpc.aio.UnaryUnaryClientInterceptor)
    assert not isinstance(unary, grpc.aio.UnaryStreamClientInterceptor)
    assert isinstance(stream, grpc.aio.UnaryStreamClientInterceptor)
    assert not isinstance(stream, grpc.aio.UnaryUnaryClientInterceptor)


# --- what reached the agent: nothing, a refusal, or maybe the work ----------------------------


@pytest.fixture
def refused() -> Iterator[str]:
    """A port of 127.0.0.1 that refuses connections (held for the test)."""
    sock, target = refused_port()
    with sock:
        yield target


async def test_a_refused_port_is_not_sent_and_a_send_is_resent_at_once(
    refused: str, rig_for: Callable[..., Rig]
) -> None:
    """The channel cannot connect: nothing was sent; a SendMessage is retried, never looked up."""
    rig = rig_for(target=refused, max_attempts=3)

    with pytest.raises(RetryExhausted) as raised:
        await rig.stub.SendMessage(send_request("msg-down"), timeout=CALL_TIMEOUT)

    failure = raised.value
    assert failure.decision.give_up is GiveUp.ATTEMPTS
    assert failure.attempts == 3
    assert not failure.maybe_processed
    assert isinstance(failure.__cause__, NotConnectedError)
    assert failure.__cause__.code() is grpc.StatusCode.UNAVAILABLE
    assert [e.decision.delivery for e in rig.hook.decisions] == [Delivery.NOT_SENT] * 3
    assert rig.hook.actions == ["retry"] * 3
    assert rig.clock.sleeps == [0.25, 0.5]


async def test_a_refused_port_is_not_sent_for_a_stream_too(
    refused: str, rig_for: Callable[..., Rig]
) -> None:
    """A stream that cannot be opened because nothing connects: not sent, reopened."""
    rig = rig_for(target=refused, max_attempts=2)

    with pytest.raises(RetryExhausted) as raised:
        await collect(rig.stub.SendStreamingMessage(send_request("msg-s")), [])

    assert raised.value.attempts == 2
    assert [e.decision.delivery for e in rig.hook.decisions] == [Delivery.NOT_SENT] * 2


async def test_an_agent_gone_from_a_ready_channel_is_not_sent(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """A channel that served calls, whose agent now refuses connections: not sent, not looked up."""
    server.plan(path("SendMessage"), Reply((b"",)))
    async with Relay(server.target) as relay:
        rig = rig_for(target=relay.target, max_attempts=2)
        await rig.stub.SendMessage(send_request("msg-1"), timeout=CALL_TIMEOUT)
        relay.refusing = True
        relay.cut()  # the idle connection breaks; no call is on it
        # Until gRPC notices, the channel still says READY, and a call would go on it
        # (and be unknown): that is the wait's limit, not this test's subject.
        ready = grpc.ChannelConnectivity.READY
        await asyncio.wait_for(rig.channel.wait_for_state_change(ready), WAIT)

        with pytest.raises(RetryExhausted) as raised:
            await rig.stub.SendMessage(send_request("msg-2"), timeout=CALL_TIMEOUT)

    assert len(server.requests[path("SendMessage")]) == 1
    assert [e.decision.delivery for e in rig.hook.decisions[1:]] == [Delivery.NOT_SENT] * 2
    assert not raised.value.maybe_processed


async def test_a_connection_reset_after_the_request_went_out_is_unknown(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The agent has the request when the connection resets: unknown, never resent blindly."""
    server.plan(path("SendMessage"), Reply(hold=True))
    async with Relay(server.target) as relay:
        rig = rig_for(target=relay.target)
        call = asyncio.ensure_future(
            rig.stub.SendMessage(send_request("msg-reset"), timeout=CALL_TIMEOUT)
        )
        await asyncio.wait_for(server.arrived.wait(), WAIT)
        relay.cut()

        with pytest.raises(OutcomeUnknown) as raised:
            await call

    assert len(server.requests[path("SendMessage")]) == 1
    assert raised.value.decision.delivery is Delivery.UNKNOWN
    assert raised.value.decision.error.grpc_status == "UNAVAILABLE"
    assert not isinstance(raised.value.__cause__, NotConnectedError)


async def test_a_server_stopped_mid_call_is_unknown(rig_for: Callable[..., Rig]) -> None:
    """A grpc.aio server stopping with the call under way sends UNAVAILABLE bare: unknown."""
    scripted = ScriptedServer()
    scripted.plan(path("SendMessage"), Reply(hold=True))
    running = grpc.aio.server()
    running.add_generic_rpc_handlers(scripted.handlers())
    port = running.add_insecure_port("127.0.0.1:0")
    await running.start()
    try:
        rig = rig_for(target=f"127.0.0.1:{port}")
        call = asyncio.ensure_future(
            rig.stub.SendMessage(send_request("msg-stop"), timeout=CALL_TIMEOUT)
        )
        await asyncio.wait_for(scripted.arrived.wait(), WAIT)
    finally:
        await running.stop(0)

    with pytest.raises(OutcomeUnknown) as raised:
        await call

    assert raised.value.decision.delivery is Delivery.UNKNOWN
    assert raised.value.decision.error.grpc_status == "UNAVAILABLE"
    assert len(scripted.requests[path("SendMessage")]) == 1


@pytest.mark.parametrize(
    "refusal",
    [
        SAID_UNAVAILABLE,
        Fail(grpc.StatusCode.UNAVAILABLE, "busy", (("grpc-retry-pushback-ms", "0"),)),
    ],
    ids=["details", "pushback"],
)
async def test_an_unavailable_the_server_says_is_not_processed(
    refusal: Fail, server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """UNAVAILABLE with details, or with a pushback: refused, the same bytes sent again."""
    server.plan(path("SendMessage"), refusal, Reply((b"",)))
    rig = rig_for()
    request = send_request("msg-busy")

    await rig.stub.SendMessage(request, timeout=CALL_TIMEOUT)

    assert server.requests[path("SendMessage")] == [request.SerializeToString()] * 2
    assert rig.hook.decisions[0].decision.delivery is Delivery.NOT_PROCESSED


async def test_an_unavailable_the_server_sends_bare_is_unknown(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The server's UNAVAILABLE with neither details nor pushback: unknown, as a reset is."""
    server.plan(path("SendMessage"), UNAVAILABLE)
    rig = rig_for()

    with pytest.raises(OutcomeUnknown) as raised:
        await rig.stub.SendMessage(send_request("msg-bare"), timeout=CALL_TIMEOUT)

    assert raised.value.decision.delivery is Delivery.UNKNOWN


# --- connect: the wait before a call ----------------------------------------------------------


async def test_connect_returns_once_the_channel_is_ready(server: ScriptedServer) -> None:
    """A fresh channel to a live server connects; a ready one returns at once."""
    async with grpc.aio.insecure_channel(server.target) as channel:
        await connect(channel, timeout=CALL_TIMEOUT)
        assert channel.get_state() is grpc.ChannelConnectivity.READY
        await connect(channel, timeout=0)


async def test_connect_to_a_refused_port_raises_unavailable_not_sent(refused: str) -> None:
    """The channel fails to connect: UNAVAILABLE, read as not sent, wrapped by a2a-sdk too."""
    async with grpc.aio.insecure_channel(refused) as channel:
        with pytest.raises(NotConnectedError) as raised:
            await connect(channel, timeout=CALL_TIMEOUT)

    error = raised.value
    assert error.code() is grpc.StatusCode.UNAVAILABLE
    assert isinstance(error, grpc.aio.AioRpcError)
    assert classify(error).delivery is Delivery.NOT_SENT
    assert classify(error).action.value == "retry"
    try:
        raise A2AClientError("gRPC Error UNAVAILABLE") from error
    except A2AClientError as wrapped:
        found = classify(wrapped)
    assert found.delivery is Delivery.NOT_SENT


async def test_connect_gives_up_at_its_timeout_not_sent() -> None:
    """A server that never speaks HTTP/2: the channel stays CONNECTING; at the timeout, not sent."""
    sock, target = silent_port()
    with sock:
        async with grpc.aio.insecure_channel(target) as channel:
            with pytest.raises(NotConnectedError) as raised:
                await connect(channel, timeout=0.05)
            with pytest.raises(NotConnectedError) as at_once:
                await connect(channel, timeout=0)

    for error in (raised.value, at_once.value):
        assert error.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        assert classify(error).delivery is Delivery.NOT_SENT


async def test_connect_waits_through_a_failing_channel_for_wait_for_ready(refused: str) -> None:
    """wait_for_ready: a refusing channel is waited on, as gRPC would, until the timeout."""
    async with grpc.aio.insecure_channel(refused) as channel:
        with pytest.raises(NotConnectedError) as raised:
            await connect(channel, timeout=0.05, wait_for_ready=True)

    assert raised.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED


async def test_connect_lets_a_closed_or_unknown_channel_call() -> None:
    """A closed channel, or a state it does not know: no wait, no error; gRPC decides."""
    channel = grpc.aio.insecure_channel("127.0.0.1:1")
    await channel.close()
    await connect(channel, timeout=CALL_TIMEOUT)

    class Odd:
        """A channel-like object in a state this package does not know."""

        def get_state(self, try_to_connect: bool = False) -> object:
            """A state that is none of gRPC's."""
            return "warming-up"

        async def wait_for_state_change(self, last: object) -> None:
            """Never called: the state is not one to wait on."""
            raise AssertionError(last)

    await connect(Odd(), timeout=CALL_TIMEOUT)


class _ChangedCore:
    """grpcio's core channel as a later grpcio might shape it: its state cannot be read."""

    target = "agent.test:443"

    def __init__(self, state: int | None) -> None:
        self.state = state

    def check_connectivity_state(self, try_to_connect: bool) -> int:
        """The state given, or an error when none was."""
        if self.state is None:
            raise RuntimeError("no such call")
        return self.state

    async def watch_connectivity_state(self, last: int, deadline: float | None) -> bool:
        """Always an error."""
        raise RuntimeError("no such call")


class _Answered:
    """A finished call: awaiting it gives nothing more."""

    def __await__(self) -> Any:
        return iter(())


@pytest.mark.parametrize("state", [None, grpc.ChannelConnectivity.CONNECTING.value[0], 99])
async def test_a_channel_whose_state_cannot_be_read_is_called_as_it_is(state: int | None) -> None:
    """Grpcio of another shape: no wait and no verdict of its own; the call goes as it would."""

    class Owner:
        """What grpc.aio binds an interceptor's continuation to: it holds the channel."""

        def __init__(self) -> None:
            self._channel = _ChangedCore(state)
            self.calls = 0

        async def run(self, details: Any, request: Any) -> _Answered:
            """The call itself."""
            self.calls += 1
            return _Answered()

    owner = Owner()
    details = grpc.aio.ClientCallDetails(path("GetTask").encode(), 5.0, None, None, None)
    guarded = GuardInterceptor(Guard())

    call = await guarded.intercept_unary_unary(
        functools.partial(owner.run), details, a2a_pb2.GetTaskRequest(id="task-1")
    )

    assert isinstance(call, _Answered)
    assert owner.calls == 1


# --- server streams -------------------------------------------------------------------------


async def test_a_stream_that_fails_before_its_first_message_is_reopened(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The same request opens it again; the caller sees one stream."""
    messages = (
        event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING),
        event_bytes("task-1", a2a_pb2.TASK_STATE_COMPLETED),
    )
    server.plan(path("SendStreamingMessage"), SAID_UNAVAILABLE, Reply(messages))
    rig = rig_for()
    request = send_request("msg-stream")
    events: list[Any] = []

    await collect(rig.stub.SendStreamingMessage(request, timeout=CALL_TIMEOUT), events)

    assert [e.SerializeToString() for e in events] == list(messages)
    assert server.requests[path("SendStreamingMessage")] == [request.SerializeToString()] * 2
    assert rig.hook.actions == ["retry", "ok"]
    assert rig.clock.sleeps == [0.25]


@pytest.mark.parametrize(
    ("failure", "raised", "give_up"),
    [
        (UNAVAILABLE, RetryExhausted, GiveUp.STREAM_STARTED),
        (a2a_failure(grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND"), ReconcileNeeded, None),
    ],
)
async def test_an_error_after_messages_is_raised_after_them_and_not_retried(
    server: ScriptedServer,
    rig_for: Callable[..., Rig],
    failure: Fail,
    raised: type[CallFailed],
    give_up: GiveUp | None,
) -> None:
    """Every message received is yielded; then the CallFailed; nothing is resent."""
    messages = (
        event_bytes("task-1", a2a_pb2.TASK_STATE_SUBMITTED),
        event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING),
    )
    server.plan(path("SubscribeToTask"), Reply(messages, then=failure))
    rig = rig_for()
    events: list[Any] = []

    with pytest.raises(raised) as caught:
        await collect(
            rig.stub.SubscribeToTask(
                a2a_pb2.SubscribeToTaskRequest(id="task-1"), timeout=CALL_TIMEOUT
            ),
            events,
        )

    assert [e.SerializeToString() for e in events] == list(messages)
    assert isinstance(caught.value.__cause__, grpc.aio.AioRpcError)
    assert caught.value.__cause__.code() is failure.code
    assert caught.value.decision.give_up is give_up
    assert caught.value.decision.operation == "SubscribeToTask"
    assert len(server.requests[path("SubscribeToTask")]) == 1
    assert rig.hook.actions[0] == "ok"
    assert len(rig.hook.actions) == 2
    assert rig.clock.sleeps == []


async def test_auth_refused_mid_stream_is_auth_failed_without_a_resend(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """The refresh runs (the caller resubscribes with it), but the stream is not reopened."""
    failure = Fail(grpc.StatusCode.UNAUTHENTICATED, "token expired")
    server.plan(
        path("SubscribeToTask"),
        Reply((event_bytes("t", a2a_pb2.TASK_STATE_WORKING),), then=failure),
    )
    refreshed: list[str] = []
    rig = rig_for(
        refresh_credentials=lambda decision: refreshed.append(decision.action.value) or True
    )
    events: list[Any] = []

    with pytest.raises(AuthFailed) as raised:
        await collect(
            rig.stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id="t"), timeout=CALL_TIMEOUT),
            events,
        )

    assert len(events) == 1
    assert refreshed == ["auth"]
    assert isinstance(raised.value.__cause__, grpc.aio.AioRpcError)
    assert len(server.requests[path("SubscribeToTask")]) == 1


async def test_a_stream_refused_before_its_first_message_raises_on_iteration(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """SubscribeToTask on a terminal task: UNSUPPORTED_OPERATION says degrade, at once."""
    server.plan(
        path("SubscribeToTask"),
        a2a_failure(grpc.StatusCode.FAILED_PRECONDITION, "UNSUPPORTED_OPERATION"),
    )
    rig = rig_for()
    events: list[Any] = []

    with pytest.raises(DegradeNeeded) as raised:
        await collect(
            rig.stub.SubscribeToTask(
                a2a_pb2.SubscribeToTaskRequest(id="task-1"), timeout=CALL_TIMEOUT
            ),
            events,
        )

    assert events == []
    assert raised.value.attempts == 1
    assert raised.value.reason == "UNSUPPORTED_OPERATION"
    assert isinstance(raised.value.__cause__, grpc.aio.AioRpcError)


async def test_a_streamed_message_without_message_id_is_sent_once(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """SendStreamingMessage follows SendMessage's rule."""
    server.plan(path("SendStreamingMessage"), UNAVAILABLE, Reply())
    rig = rig_for()

    with pytest.raises(RetryExhausted) as raised:
        await collect(
            rig.stub.SendStreamingMessage(send_request(message_id=""), timeout=CALL_TIMEOUT), []
        )

    assert raised.value.decision.give_up is GiveUp.NO_MESSAGE_ID
    assert len(server.requests[path("SendStreamingMessage")]) == 1


async def test_an_empty_stream_ends_quietly(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """No message, status OK: nothing to yield, nothing to judge but ok."""
    server.plan(path("SubscribeToTask"), Reply(messages=()))
    rig = rig_for()
    events: list[Any] = []

    await collect(
        rig.stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id="t"), timeout=CALL_TIMEOUT),
        events,
    )

    assert events == []
    assert rig.hook.actions == ["ok"]


async def test_cancel_reaches_the_reopened_stream(
    server: ScriptedServer, rig_for: Callable[..., Rig]
) -> None:
    """After a reopen, cancelling the caller's call cancels the attempt that is streaming."""
    server.plan(
        path("TaskSubscription", LEGACY_SERVICE),
        UNAVAILABLE,
        Reply((event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING),), hold=True),
    )
    rig = rig_for()
    call = rig.channel.unary_stream(path("TaskSubscription", LEGACY_SERVICE))(
        b"task-1", timeout=CALL_TIMEOUT
    )
    responses = aiter(call)

    first = await anext(responses)
    assert call.cancel()
    await asyncio.wait_for(server.cancelled.wait(), WAIT)

    assert first == event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING)
    assert {e.operation for e in rig.hook.decisions} == {"SubscribeToTask"}
    assert len(server.requests[path("TaskSubscription", LEGACY_SERVICE)]) == 2
    await responses.aclose()


async def test_a_relay_closed_early_cancels_its_call(server: ScriptedServer) -> None:
    """A consumer that stops reading ends the RPC.

    The continuation here is not grpc.aio's: with no channel to read a target from, the
    Guard's default peer is used.
    """
    event = event_bytes("task-1", a2a_pb2.TASK_STATE_WORKING)
    server.plan(path("SubscribeToTask"), Reply((event,), hold=True))
    hook = RecordingHook()
    clock = FakeClock()
    guard = Guard(clock=clock.now, sleep=clock.sleep, hooks=[hook])

    async with grpc.aio.insecure_channel(server.target) as plain:
        method = plain.unary_stream(path("SubscribeToTask"))

        class Continuation:
            """Calls the plain channel; its ``func`` cannot be read."""

            @property
            def func(self) -> Any:
                raise RuntimeError("not a functools.partial")

            async def __call__(self, details: Any, request: bytes) -> Any:
                return method(request, timeout=details.timeout)

        details = grpc.aio.ClientCallDetails(
            path("SubscribeToTask").encode(), CALL_TIMEOUT, None, None, None
        )
        relay = await GuardInterceptor(guard).intercept_unary_stream(
            Continuation(), details, b"task-1"
        )
        assert await anext(relay) == event
        await relay.aclose()
        await asyncio.wait_for(server.cancelled.wait(), WAIT)

    assert [(e.peer, e.operation) for e in hook.decisions] == [("default", "SubscribeToTask")]


# --- method paths and the extra -------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "operation"),
    [
        (b"/lf.a2a.v1.A2AService/SendMessage", "SendMessage"),
        ("/lf.a2a.v1.A2AService/SubscribeToTask", "SubscribeToTask"),
        (b"/a2a.v1.A2AService/TaskSubscription", "SubscribeToTask"),
        (b"/a2a.v1.A2AService/ListTaskPushNotificationConfig", "ListTaskPushNotificationConfigs"),
        (b"/a2a.v1.A2AService/GetAgentCard", "GetExtendedAgentCard"),
        (b"/a2a.v1.A2AService/SendMessage", "SendMessage"),
        (b"/grpc.health.v1.Health/Check", None),
        (b"/lf.a2a.v1.A2AService/", None),
        (b"/lf.a2a.v1.A2AService/a/b", None),
        (b"lf.a2a.v1.A2AService", None),
        (b"", None),
        (b"/\xff\xfe/x", None),
    ],
)
def test_operation_of_a_method_path(method: str | bytes, operation: str | None) -> None:
    """The 1.0 and 0.3 services name A2A operations; other paths name none."""
    assert operation_of(method) == operation


def test_without_grpcio_the_import_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ImportError names the extra."""
    monkeypatch.setitem(sys.modules, "grpc", None)
    monkeypatch.setitem(sys.modules, "grpc.aio", None)
    monkeypatch.delitem(sys.modules, "a2a_client_errors.integrations.grpc")

    with pytest.raises(ImportError, match=re.escape(HINT)) as raised:
        importlib.import_module("a2a_client_errors.integrations.grpc")

    assert raised.value.name == "grpc"


def test_the_package_imports_no_grpc() -> None:
    """Only the integration module imports grpcio; without it, the package still imports."""
    code = "\n".join(
        (
            "import sys",
            "import a2a_client_errors, a2a_client_errors.integrations",
            "loaded = sorted(m for m in sys.modules if m == 'grpc' or m.startswith('grpc.'))",
            "assert not loaded, loaded",
            "sys.modules['grpc'] = None",
            "try:",
            "    import a2a_client_errors.integrations.grpc",
            "except ImportError as exc:",
            "    print(exc)",
        )
    )
    done = subprocess.run(  # noqa: S603 (our own interpreter, our own code)
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert HINT in done.stdout
