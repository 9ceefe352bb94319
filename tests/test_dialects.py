"""The dialects of the embedded a2a-sdk peer, seen on the wire of each binding.

Every test talks to a real a2a-sdk server on 127.0.0.1 (`EmbeddedPeer`) with raw clients:
httpx for JSON-RPC and HTTP+JSON, a generated gRPC stub for gRPC. Answers are compared as
JSON (gRPC messages through ``MessageToDict``), so one assertion holds for all three bindings.
Nothing sleeps: held work is awaited on the peer's ledger, with timeouts that only guard.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import uuid
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf.json_format import MessageToDict, ParseDict
from google.rpc import error_details_pb2, status_pb2
from hypothesis import given
from hypothesis import strategies as st

from a2a_client_errors.testing._agent import LedgerTaskStore, RequestRecorder
from a2a_client_errors.testing.lossy import LossyProxy, lose_sends
from a2a_client_errors.testing.peer import (
    BINDINGS,
    GRPC,
    HOLD,
    JSONRPC,
    REST,
    EmbeddedPeer,
    Ledger,
    PeerDialect,
    SeenRequest,
)
from tests.dialects import (
    A2A_SDK,
    DIALECTS,
    EMPTY_LIST,
    HELD,
    LIST_NEEDS_USER,
    LIST_WITHOUT_HISTORY,
    MESSAGE_ONLY,
    NO_HISTORY,
    NO_LIST_TASKS,
    NO_TIMESTAMPS,
    OTHER_ORIGIN,
    SEPARATE_STORES,
    SUBTASK_ECHO,
    SUBTASK_ECHO_FIRST,
    TRIMMED_HISTORY,
    Dialect,
    DialectHandler,
    bearer_user,
    trimmed_history,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

# The embedded peer (a2a-sdk 1.x).
pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]

VERSION = {"A2A-Version": "1.0"}
TIMEOUT = 10.0
COMPLETED = "TASK_STATE_COMPLETED"
WORKING = "TASK_STATE_WORKING"
ROLE_USER = "ROLE_USER"
ROLE_AGENT = "ROLE_AGENT"
BEARER = "Bearer the-token"


# --------------------------------------------------------------------------------------------
# Raw calls, one shape for every binding
# --------------------------------------------------------------------------------------------


class FailedCallError(Exception):
    """A raw call that did not succeed: what came back, as it came."""

    def __init__(self, answer: Any) -> None:
        super().__init__(repr(answer))
        self.answer = answer


def _headers(authorization: str | None) -> dict[str, str]:
    return {**VERSION, **({"Authorization": authorization} if authorization else {})}


def _metadata(authorization: str | None) -> list[tuple[str, str]]:
    pairs = [("a2a-version", "1.0")]
    if authorization:
        pairs.append(("authorization", authorization))
    return pairs


def _jsonrpc(
    url: str, method: str, params: dict[str, Any], authorization: str | None = None
) -> Any:
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    answer = httpx.post(url, json=body, headers=_headers(authorization), timeout=TIMEOUT)
    payload = answer.json()
    if "result" not in payload:
        raise FailedCallError(answer)
    return payload["result"]


def _grpc(peer: EmbeddedPeer, method: str, request: Any, authorization: str | None) -> Any:
    with grpc.insecure_channel(peer.grpc_target) as channel:
        stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
        try:
            answer = getattr(stub, method)(
                request, timeout=TIMEOUT, metadata=_metadata(authorization)
            )
        except grpc.RpcError as error:
            raise FailedCallError(error) from None
    return MessageToDict(answer)


def user_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A JSON user message with a fresh messageId."""
    return {"messageId": f"msg-{uuid.uuid4()}", "role": ROLE_USER, "parts": [{"text": text}]} | (
        fields
    )


def send(
    peer: EmbeddedPeer,
    binding: str,
    message: dict[str, Any],
    *,
    wait: bool = True,
    authorization: str | None = None,
) -> dict[str, Any]:
    """SendMessage over ``binding``: ``{"task": ...}`` or ``{"message": ...}``."""
    params = {"message": message, "configuration": {"returnImmediately": not wait}}
    if binding == JSONRPC:
        return dict(_jsonrpc(peer.jsonrpc_url, "SendMessage", params, authorization))
    if binding == REST:
        answer = httpx.post(
            peer.rest_url + "/message:send",
            json=params,
            headers=_headers(authorization),
            timeout=TIMEOUT,
        )
        if answer.status_code != 200:
            raise FailedCallError(answer)
        return dict(answer.json())
    return _grpc(
        peer, "SendMessage", ParseDict(params, a2a_pb2.SendMessageRequest()), authorization
    )


def get_task(
    peer: EmbeddedPeer,
    binding: str,
    task_id: str,
    *,
    history_length: int | None = None,
    authorization: str | None = None,
    rest_url: str | None = None,
) -> dict[str, Any]:
    """GetTask over ``binding``, the task as JSON."""
    params: dict[str, Any] = {"id": task_id}
    if history_length is not None:
        params["historyLength"] = history_length
    if binding == JSONRPC:
        return dict(_jsonrpc(peer.jsonrpc_url, "GetTask", params, authorization))
    if binding == REST:
        query = {} if history_length is None else {"historyLength": history_length}
        answer = httpx.get(
            f"{rest_url or peer.rest_url}/tasks/{task_id}",
            params=query,
            headers=_headers(authorization),
            timeout=TIMEOUT,
        )
        if answer.status_code != 200:
            raise FailedCallError(answer)
        return dict(answer.json())
    return _grpc(peer, "GetTask", ParseDict(params, a2a_pb2.GetTaskRequest()), authorization)


def list_tasks(
    peer: EmbeddedPeer, binding: str, *, authorization: str | None = None, **params: Any
) -> dict[str, Any]:
    """ListTasks over ``binding`` (camelCase params), the page as JSON."""
    if binding == JSONRPC:
        return dict(_jsonrpc(peer.jsonrpc_url, "ListTasks", params, authorization))
    if binding == REST:
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
        answer = httpx.get(
            peer.rest_url + "/tasks",
            params=query,
            headers=_headers(authorization),
            timeout=TIMEOUT,
        )
        if answer.status_code != 200:
            raise FailedCallError(answer)
        return dict(answer.json())
    request = ParseDict(params, a2a_pb2.ListTasksRequest())
    return _grpc(peer, "ListTasks", request, authorization)


def roles(task: dict[str, Any]) -> list[str]:
    """The roles of a JSON task's history, in order."""
    return [message["role"] for message in task.get("history", [])]


def message_ids(task: dict[str, Any]) -> list[str]:
    """The messageIds of a JSON task's history, in order."""
    return [message["messageId"] for message in task.get("history", [])]


def listed(page: dict[str, Any], task_id: str) -> dict[str, Any]:
    """The task ``task_id`` of a ListTasks page (fails the test when it is not there)."""
    found = [task for task in page.get("tasks", []) if task["id"] == task_id]
    assert len(found) == 1, (task_id, [task["id"] for task in page.get("tasks", [])])
    return found[0]


def grpc_details(error: Any) -> list[Any]:
    """The ErrorInfo details of a gRPC error's ``grpc-status-details-bin`` trailer."""
    trailer = dict(error.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(trailer)
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        assert detail.Unpack(info)
        infos.append(info)
    return infos


# --------------------------------------------------------------------------------------------
# Peers: one per dialect, started on first use, stopped when the module ends
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agent() -> Iterator[Callable[[Dialect], EmbeddedPeer]]:
    """The running peer of a dialect (each started once for the module, then stopped)."""
    with contextlib.ExitStack() as stack:
        started: dict[Dialect, EmbeddedPeer] = {}

        def get(dialect: Dialect) -> EmbeddedPeer:
            if dialect not in started:
                started[dialect] = stack.enter_context(EmbeddedPeer(dialect=dialect))
            return started[dialect]

        yield get
        for peer in started.values():
            assert peer.stop() is True  # every peer stops in bounded time


# --------------------------------------------------------------------------------------------
# The dialect as data
# --------------------------------------------------------------------------------------------


def test_the_default_dialect_is_a2a_sdk_itself() -> None:
    """A2A_SDK is every field at its default; a peer without a dialect departs in nothing."""
    assert Dialect() == A2A_SDK
    assert DIALECTS["a2a_sdk"] is A2A_SDK
    default = EmbeddedPeer().dialect
    assert type(default) is PeerDialect
    flags = ("message_only", "hold_all", "separate_stores", "other_origin")
    assert [getattr(default, flag) for flag in flags] == [getattr(A2A_SDK, f) for f in flags]
    assert not any(getattr(default, flag) for flag in flags)
    assert (default.grpc_interceptors(), default.grpc_context_builder()) == ((), None)
    assert (A2A_SDK.grpc_interceptors(), A2A_SDK.grpc_context_builder()) == ((), None)
    assert not A2A_SDK.shapes_tasks


def test_every_named_dialect_departs_from_a2a_sdk_once() -> None:
    """Each named dialect but A2A_SDK differs from the default, and all differ from each other."""
    named = [dialect for name, dialect in DIALECTS.items() if name != "a2a_sdk"]
    assert all(dialect != A2A_SDK for dialect in named)
    assert len(set(named)) == len(named)


def test_dialects_combine_field_by_field() -> None:
    """``|`` keeps each departure; A2A_SDK is neutral; the same departure twice is one."""
    combined = NO_TIMESTAMPS | HELD | LIST_NEEDS_USER
    assert combined == Dialect(timestamps=False, hold_all=True, list_tasks="needs_user")
    assert NO_HISTORY | A2A_SDK == NO_HISTORY
    assert A2A_SDK | NO_HISTORY == NO_HISTORY
    assert SUBTASK_ECHO | SUBTASK_ECHO == SUBTASK_ECHO


def test_dialects_that_disagree_do_not_combine() -> None:
    """Two different departures of one field are refused, naming the field."""
    with pytest.raises(ValueError, match="history_limit"):
        trimmed_history(1) | trimmed_history(2)
    with pytest.raises(ValueError, match="list_tasks"):
        NO_LIST_TASKS | EMPTY_LIST
    with pytest.raises(TypeError):
        NO_HISTORY | "no_history"  # type: ignore[operator]


@pytest.mark.parametrize(
    "fields",
    [
        {"history_limit": -1},
        {"history_limit": True},
        {"history_limit": 1.5},
        {"subtask_echo": "sideways"},
        {"list_tasks": "sometimes"},
    ],
)
def test_a_dialect_refuses_what_it_cannot_serve(fields: dict[str, Any]) -> None:
    """An impossible field value is a ValueError at construction, not a surprise later."""
    with pytest.raises(ValueError, match=next(iter(fields))):
        Dialect(**fields)


def test_a_peer_refuses_a_dialect_that_is_not_one() -> None:
    """``dialect=`` takes a PeerDialect (these dialects are ones); a name is a TypeError."""
    with pytest.raises(TypeError, match="PeerDialect"):
        EmbeddedPeer(dialect="no_history")  # type: ignore[arg-type]
    assert all(isinstance(dialect, PeerDialect) for dialect in DIALECTS.values())
    assert isinstance(EmbeddedPeer().dialect, PeerDialect)


def test_a_bearer_token_makes_a_user() -> None:
    """``Bearer <token>`` is a user named by the token's digest; anything else is anonymous."""
    user = bearer_user("Bearer abc")
    assert user is not None
    assert user.startswith("user-")
    assert "abc" not in user
    assert bearer_user("bearer   abc ") == user
    assert bearer_user("Bearer abd") != user
    for anonymous in (None, "", "Bearer", "Bearer   ", "Basic abc", "abc"):
        assert bearer_user(anonymous) is None


@given(st.one_of(st.none(), st.text()))
def test_bearer_user_never_raises(value: str | None) -> None:
    """Whatever the header holds, the answer is None or a ``user-`` name of 12 hex digits."""
    user = bearer_user(value)
    if user is not None:
        assert user.startswith("user-")
        assert len(user) == 17
        assert set(user[5:]) <= set("0123456789abcdef")


def test_the_recorder_keeps_the_last_requests_only() -> None:
    """A recorder keeps ``limit`` requests, the newest, and passes every request on."""
    served: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        served.append(scope.get("path", scope["type"]))

    recorder = RequestRecorder(app, limit=2)

    async def three() -> None:
        for path in ("/a", "/b", "/c"):
            scope = {"type": "http", "method": "GET", "path": path, "headers": [(b"X-A", b"1")]}
            await recorder(scope, None, None)
        await recorder({"type": "lifespan"}, None, None)

    asyncio.run(three())
    assert served == ["/a", "/b", "/c", "lifespan"]
    assert [(seen.path, seen.header("x-a")) for seen in recorder.seen()] == [
        ("/b", "1"),
        ("/c", "1"),
    ]


def test_a_seen_request_hides_credentials_when_printed() -> None:
    """Its repr shows header names and ordinary values, never a credential's value."""
    seen = SeenRequest(
        "GET", "/rest/tasks", (("authorization", "Bearer s3cret"), ("a2a-version", "1.0"))
    )
    assert "s3cret" not in repr(seen)
    assert "1.0" in repr(seen)
    assert seen.header("Authorization") == "Bearer s3cret"
    assert seen.header("cookie") is None
    assert seen.header_names == {"authorization", "a2a-version"}


# --------------------------------------------------------------------------------------------
# The ledger, on its own
# --------------------------------------------------------------------------------------------


def test_a_release_that_comes_before_the_hold_is_kept() -> None:
    """Releasing a messageId not held yet makes its later hold pass at once."""
    ledger = Ledger()
    assert ledger.release("m-1") == 0
    asyncio.run(asyncio.wait_for(ledger.hold("m-1"), TIMEOUT))
    assert ledger.held() == []


def test_a_closed_ledger_holds_nothing() -> None:
    """After close (the agent stopping), a hold passes at once."""
    ledger = Ledger()
    ledger.close()
    asyncio.run(asyncio.wait_for(ledger.hold("m-2"), TIMEOUT))


def test_the_ledger_waits_are_guarded_by_their_timeout() -> None:
    """A wait whose condition is not met raises TimeoutError when its timeout passes."""
    ledger = Ledger()
    with pytest.raises(TimeoutError):
        ledger.wait_held(1, timeout=0)
    with pytest.raises(TimeoutError, match="None"):
        ledger.wait_state("t-1", COMPLETED, timeout=0)
    ledger.saved("t-1", COMPLETED)
    ledger.wait_state("t-1", COMPLETED, timeout=0)
    assert ledger.state("t-1") == COMPLETED


def test_a_hold_waits_for_its_release_on_the_loop() -> None:
    """A held run resumes when released from a callback, and is no longer listed as held."""
    ledger = Ledger()

    async def held_then_released() -> list[str]:
        loop = asyncio.get_running_loop()
        seen: list[str] = []
        holding = asyncio.ensure_future(ledger.hold("m-3"))  # runs before the callbacks below
        loop.call_soon(lambda: seen.extend(ledger.held()))
        loop.call_soon(ledger.release, "m-3")
        await asyncio.wait_for(holding, TIMEOUT)
        return seen

    assert asyncio.run(held_then_released()) == ["m-3"]
    assert ledger.held() == []


def test_a_state_wait_on_the_loop_ends_when_stored_or_closed() -> None:
    """``stored`` returns for a state already stored, when it is stored, or when closed."""
    ledger = Ledger()
    ledger.saved("t-1", WORKING)

    async def waits() -> None:
        await asyncio.wait_for(ledger.stored("t-1", WORKING), TIMEOUT)
        loop = asyncio.get_running_loop()
        waiting = asyncio.ensure_future(ledger.stored("t-2", WORKING))  # waits before saved
        loop.call_soon(ledger.saved, "t-2", WORKING)
        await asyncio.wait_for(waiting, TIMEOUT)
        waiting = asyncio.ensure_future(ledger.stored("t-3", WORKING))
        loop.call_soon(ledger.close)
        await asyncio.wait_for(waiting, TIMEOUT)

    asyncio.run(waits())
    assert ledger.state("t-3") is None


def test_the_ledger_counts_runs_per_message() -> None:
    """Each run counts; the tasks it made are kept in order; a copy is handed out."""
    ledger = Ledger()
    ledger.executed("m-1", "t-1")
    ledger.executed("m-1", "t-2")
    ledger.executed("m-2", None)
    counts = ledger.executions
    counts["m-1"] = 99
    assert ledger.executions == {"m-1": 2, "m-2": 1}
    assert ledger.tasks_started_by("m-1") == ["t-1", "t-2"]
    assert ledger.tasks_started_by("m-2") == []
    assert ledger.started_by("t-2") == "m-1"
    assert ledger.started_by("t-3") is None


@pytest.mark.parametrize("name", list(DIALECTS))
def test_every_dialect_serves_its_card_and_stops_in_bounded_time(name: str) -> None:
    """Each named dialect's peer serves its card, and stop() ends its thread within the bound."""
    peer = EmbeddedPeer(dialect=DIALECTS[name])
    with peer:
        card = httpx.get(peer.card_url, timeout=TIMEOUT).json()
        assert card["supportedInterfaces"][0]["url"] == peer.jsonrpc_url
        assert peer.stop(timeout=TIMEOUT) is True
    assert not peer.running


# --------------------------------------------------------------------------------------------
# a2a-sdk as it is: what the other dialects depart from
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_a2a_sdk_shows_the_user_message_and_timestamps(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """The baseline: history (user message, agent message), a timestamp, a listing."""
    peer = agent(A2A_SDK)
    message = user_message()
    task = send(peer, binding, message)["task"]
    read = get_task(peer, binding, task["id"])
    assert roles(read) == [ROLE_USER, ROLE_AGENT]
    assert message_ids(read)[0] == message["messageId"]
    assert "timestamp" in read["status"]
    assert roles(listed(list_tasks(peer, binding), task["id"])) == [ROLE_USER, ROLE_AGENT]
    assert peer.ledger.tasks_started_by(message["messageId"]) == [task["id"]]
    assert peer.executions[message["messageId"]] == 1


def test_a_resent_message_runs_twice_and_is_counted(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """a2a-sdk does not deduplicate: the same messageId on two bindings is two runs, two tasks."""
    peer = agent(A2A_SDK)
    message = user_message()
    first = send(peer, JSONRPC, message)["task"]["id"]
    second = send(peer, GRPC, message)["task"]["id"]
    assert first != second
    assert peer.executions[message["messageId"]] == 2
    assert peer.ledger.tasks_started_by(message["messageId"]) == [first, second]
    assert {first, second} <= set(peer.task_ids())


def test_a_deduplicating_peer_keeps_its_dialect() -> None:
    """A deduplicating peer keeps its dialect: a resend gets the first task, shaped; one run."""
    with EmbeddedPeer(dialect=NO_HISTORY, deduplicate=True) as peer:
        message = user_message()
        first = send(peer, JSONRPC, message)["task"]
        again = send(peer, REST, message)["task"]
        assert again["id"] == first["id"]
        assert roles(again) == [ROLE_AGENT]
        assert peer.executions[message["messageId"]] == 1


# --------------------------------------------------------------------------------------------
# History
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_no_history_never_shows_the_user_message(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """As a2a-java: the send's answer, GetTask, ListTasks and the store hold agent messages only."""
    peer = agent(NO_HISTORY)
    message = user_message()
    answered = send(peer, binding, message)["task"]
    task_id = answered["id"]
    assert roles(answered) == [ROLE_AGENT]
    assert roles(get_task(peer, binding, task_id)) == [ROLE_AGENT]
    assert roles(listed(list_tasks(peer, binding), task_id)) == [ROLE_AGENT]
    stored = peer.task(task_id)
    assert [m.message_id for m in stored.history] == [answered["history"][0]["messageId"]]
    assert peer.ledger.tasks_started_by(message["messageId"]) == [task_id]


@pytest.mark.parametrize("binding", BINDINGS)
def test_list_without_history_leaves_history_out_of_listings_only(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """ListTasks shows the task without history; GetTask still shows the user message."""
    peer = agent(LIST_WITHOUT_HISTORY)
    message = user_message()
    task_id = send(peer, binding, message)["task"]["id"]
    assert roles(listed(list_tasks(peer, binding, historyLength=10), task_id)) == []
    assert message_ids(get_task(peer, binding, task_id))[0] == message["messageId"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_trimmed_history_keeps_the_last_message_whatever_is_asked(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """GetTask and ListTasks asking for 10 messages get the last one; the store keeps both."""
    peer = agent(TRIMMED_HISTORY)
    task_id = send(peer, binding, user_message())["task"]["id"]
    assert roles(get_task(peer, binding, task_id, history_length=10)) == [ROLE_AGENT]
    assert roles(get_task(peer, binding, task_id)) == [ROLE_AGENT]
    assert roles(listed(list_tasks(peer, binding, historyLength=10), task_id)) == [ROLE_AGENT]
    assert len(peer.task(task_id).history) == 2


def test_a_trimmed_history_of_zero_answers_none(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """trimmed_history(0): no message of history is answered."""
    peer = agent(trimmed_history(0))
    task_id = send(peer, JSONRPC, user_message())["task"]["id"]
    assert roles(get_task(peer, JSONRPC, task_id)) == []


# --------------------------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------------------------


def _sse_events(answer: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data:") :])
        for line in answer.text.splitlines()
        if line.startswith("data:")
    ]


@pytest.mark.parametrize("binding", BINDINGS)
def test_no_timestamps_anywhere(agent: Callable[[Dialect], EmbeddedPeer], binding: str) -> None:
    """Neither the send's answer, GetTask, ListTasks nor the store carry status.timestamp."""
    peer = agent(NO_TIMESTAMPS)
    answered = send(peer, binding, user_message())["task"]
    task_id = answered["id"]
    assert answered["status"]["state"] == COMPLETED
    assert "timestamp" not in answered["status"]
    assert "timestamp" not in get_task(peer, binding, task_id)["status"]
    assert "timestamp" not in listed(list_tasks(peer, binding), task_id)["status"]
    assert not peer.task(task_id).status.HasField("timestamp")


def test_stream_events_are_shaped_as_the_store(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """A streamed send's task and status updates carry no timestamp and no user message."""
    peer = agent(NO_TIMESTAMPS | NO_HISTORY)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": user_message()},
    }
    headers = {**VERSION, "Accept": "text/event-stream"}
    answer = httpx.post(peer.jsonrpc_url, json=body, headers=headers, timeout=TIMEOUT)
    events = [event["result"] for event in _sse_events(answer)]
    updates = [event["statusUpdate"] for event in events if "statusUpdate" in event]
    assert updates
    assert updates[-1]["status"]["state"] == COMPLETED
    assert all("timestamp" not in update["status"] for update in updates)
    tasks = [event["task"] for event in events if "task" in event]
    assert tasks
    assert all("timestamp" not in task["status"] for task in tasks)
    assert all(ROLE_USER not in roles(task) for task in tasks)


def test_a_timestamp_filter_drops_tasks_without_timestamps(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """a2a-sdk's store leaves tasks without a timestamp out of statusTimestampAfter."""
    peer = agent(NO_TIMESTAMPS)
    context_id = f"ctx-{uuid.uuid4()}"
    task_id = send(peer, JSONRPC, user_message(contextId=context_id))["task"]["id"]
    assert listed(list_tasks(peer, JSONRPC, contextId=context_id), task_id)
    after = list_tasks(
        peer, JSONRPC, contextId=context_id, statusTimestampAfter="1970-01-01T00:00:00Z"
    )
    assert after.get("tasks", []) == []


# --------------------------------------------------------------------------------------------
# Agents that make no task, and agents that make more
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_message_only_agent_makes_no_task(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """Every send is answered with a Message; the run is counted; no store holds a task."""
    peer = agent(MESSAGE_ONLY)
    message = user_message("fail")  # the scripts are off: even "fail" is answered
    answer = send(peer, binding, message)
    assert list(answer) == ["message"]
    assert answer["message"]["role"] == ROLE_AGENT
    assert peer.executions[message["messageId"]] == 1
    assert peer.ledger.tasks_started_by(message["messageId"]) == []
    assert peer.task_ids() == []
    assert list_tasks(peer, binding).get("tasks", []) == []


@pytest.mark.parametrize(
    ("dialect", "first"),
    [(SUBTASK_ECHO, ROLE_AGENT), (SUBTASK_ECHO_FIRST, ROLE_USER)],
    ids=["agent_first", "user_first"],
)
@pytest.mark.parametrize("binding", BINDINGS)
def test_a_subtask_echoes_the_user_message_and_is_the_most_recent(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str, dialect: Dialect, first: str
) -> None:
    """The sub-task shares the context, holds the same messageId, and is listed first."""
    peer = agent(dialect)
    context_id = f"ctx-{uuid.uuid4()}"
    message = user_message(contextId=context_id)
    parent = send(peer, binding, message)["task"]
    page = list_tasks(peer, binding, contextId=context_id)
    assert [task["id"] for task in page["tasks"]] == [f"{parent['id']}-sub", parent["id"]]
    sub, listed_parent = page["tasks"]
    assert roles(sub)[0] == first
    assert message["messageId"] in message_ids(sub)
    assert message_ids(listed_parent)[0] == message["messageId"]
    assert sub["status"]["state"] == COMPLETED
    assert sub["status"]["timestamp"] > listed_parent["status"]["timestamp"]
    assert peer.ledger.tasks_started_by(message["messageId"]) == [parent["id"]]


def test_a_subtask_without_timestamps_is_still_listed_first(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """Combined with no_timestamps, the sub-task's id keeps it first in a2a-sdk's order."""
    peer = agent(SUBTASK_ECHO | NO_TIMESTAMPS)
    context_id = f"ctx-{uuid.uuid4()}"
    parent = send(peer, REST, user_message(contextId=context_id))["task"]
    page = list_tasks(peer, REST, contextId=context_id)
    assert [task["id"] for task in page["tasks"]] == [f"{parent['id']}-sub", parent["id"]]
    assert all("timestamp" not in task["status"] for task in page["tasks"])


# --------------------------------------------------------------------------------------------
# ListTasks: refused, absent, empty
# --------------------------------------------------------------------------------------------


def test_list_needs_user_refuses_anonymous_jsonrpc_with_minus_31401(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """JSON-RPC: HTTP 200, code -31401, an ErrorInfo UNAUTHENTICATED in data, the request id."""
    peer = agent(LIST_NEEDS_USER)
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, JSONRPC)
    answer = failed.value.answer
    assert answer.status_code == 200
    payload = answer.json()
    assert payload["id"] == 7
    assert payload["error"]["code"] == -31401
    (info,) = payload["error"]["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == ("UNAUTHENTICATED", "a2a-protocol.org")


def test_list_needs_user_refuses_anonymous_rest_with_401(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """HTTP+JSON: 401 with a google.rpc.Status body UNAUTHENTICATED."""
    peer = agent(LIST_NEEDS_USER)
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, REST)
    answer = failed.value.answer
    assert answer.status_code == 401
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    assert (error["code"], error["status"]) == (401, "UNAUTHENTICATED")
    assert error["details"][0]["reason"] == "UNAUTHENTICATED"


def test_list_needs_user_refuses_anonymous_grpc_unauthenticated(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """gRPC: UNAUTHENTICATED, an ErrorInfo UNAUTHENTICATED in the status details trailer."""
    peer = agent(LIST_NEEDS_USER)
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, GRPC)
    error = failed.value.answer
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED
    (info,) = grpc_details(error)
    assert (info.reason, info.domain) == ("UNAUTHENTICATED", "a2a-protocol.org")


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_bearer_makes_the_caller_a_user_who_lists_its_own_tasks(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """With Authorization: Bearer, ListTasks answers the caller's tasks, not the anonymous ones."""
    peer = agent(LIST_NEEDS_USER)
    mine = send(peer, binding, user_message(), authorization=BEARER)["task"]["id"]
    anonymous = send(peer, binding, user_message())["task"]["id"]
    page = list_tasks(peer, binding, authorization=BEARER)
    ids = [task["id"] for task in page["tasks"]]
    assert mine in ids
    assert anonymous not in ids
    assert get_task(peer, binding, mine, authorization=BEARER)["id"] == mine
    assert {mine, anonymous} <= set(peer.task_ids())
    assert peer.task(mine) is not None


@pytest.mark.parametrize(
    ("body", "code"),
    [(b"{not json", -32700), (b'[{"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}]', -32600)],
    ids=["garbage", "batch"],
)
def test_list_needs_user_leaves_what_is_not_a_list_call_to_a2a_sdk(
    agent: Callable[[Dialect], EmbeddedPeer], body: bytes, code: int
) -> None:
    """A body that is not one ListTasks call passes the gate: a2a-sdk answers it itself."""
    peer = agent(LIST_NEEDS_USER)
    headers = {**VERSION, "Content-Type": "application/json"}
    answer = httpx.post(peer.jsonrpc_url, content=body, headers=headers, timeout=TIMEOUT)
    assert answer.json()["error"]["code"] == code


def test_list_needs_user_answers_a_bad_id_with_null(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """A refused ListTasks whose id is not a string or an integer is answered with id null."""
    peer = agent(LIST_NEEDS_USER)
    body = {"jsonrpc": "2.0", "id": True, "method": "ListTasks", "params": {}}
    answer = httpx.post(peer.jsonrpc_url, json=body, headers=VERSION, timeout=TIMEOUT)
    assert answer.json()["id"] is None
    assert answer.json()["error"]["code"] == -31401


def test_no_list_tasks_is_method_not_found_over_jsonrpc(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """JSON-RPC: a2a-sdk's own -32601; GetTask still works."""
    peer = agent(NO_LIST_TASKS)
    task_id = send(peer, JSONRPC, user_message())["task"]["id"]
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, JSONRPC)
    assert failed.value.answer.json()["error"]["code"] == -32601
    assert get_task(peer, JSONRPC, task_id)["id"] == task_id


def test_no_list_tasks_has_no_rest_route(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """HTTP+JSON: the framework's own plain 404, not an A2A body; GetTask still works."""
    peer = agent(NO_LIST_TASKS)
    task_id = send(peer, REST, user_message())["task"]["id"]
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, REST)
    answer = failed.value.answer
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/plain")
    assert answer.text == "Not Found"
    assert get_task(peer, REST, task_id)["id"] == task_id


def test_no_list_tasks_is_unimplemented_over_grpc(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """gRPC: the runtime's UNIMPLEMENTED; GetTask still works."""
    peer = agent(NO_LIST_TASKS)
    task_id = send(peer, GRPC, user_message())["task"]["id"]
    with pytest.raises(FailedCallError) as failed:
        list_tasks(peer, GRPC)
    assert failed.value.answer.code() == grpc.StatusCode.UNIMPLEMENTED
    assert get_task(peer, GRPC, task_id)["id"] == task_id


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_empty_list_stub_lists_nothing(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """ListTasks answers no task and no next page, though the store holds the task."""
    peer = agent(EMPTY_LIST)
    task_id = send(peer, binding, user_message())["task"]["id"]
    page = list_tasks(peer, binding)
    assert page.get("tasks", []) == []
    assert page.get("nextPageToken", "") == ""
    assert task_id in peer.task_ids()


# --------------------------------------------------------------------------------------------
# Stores and origins
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_separate_stores_know_only_their_own_tasks(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """A task made over one binding is TASK_NOT_FOUND over the others, and in its store only."""
    peer = agent(SEPARATE_STORES)
    task_id = send(peer, binding, user_message())["task"]["id"]
    assert get_task(peer, binding, task_id)["id"] == task_id
    for other in BINDINGS:
        if other == binding:
            continue
        with pytest.raises(FailedCallError):
            get_task(peer, other, task_id)
        assert task_id not in peer.task_ids(other)
        assert peer.task(task_id, other) is None
    assert task_id in peer.task_ids(binding)
    assert task_id in peer.task_ids()


def test_task_ids_refuses_an_unknown_binding(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """A binding name that is not one is a ValueError, not an empty answer."""
    with pytest.raises(ValueError, match="binding"):
        agent(A2A_SDK).task_ids("soap")


def test_the_other_origin_serves_the_same_store_and_records_headers(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """The card lists the other origin last; it reads the same tasks; it saw no Authorization."""
    peer = agent(OTHER_ORIGIN)
    interfaces = list(peer.agent_card.supported_interfaces)
    assert len(interfaces) == 4
    assert interfaces[-1].protocol_binding == "HTTP+JSON"
    assert interfaces[-1].url == peer.other_rest_url
    assert peer.other_origin != peer.origin
    assert peer.other_rest_url.startswith(peer.other_origin)
    task_id = send(peer, REST, user_message(), authorization=BEARER)["task"]["id"]
    read = get_task(peer, REST, task_id, rest_url=peer.other_rest_url)
    assert read["id"] == task_id
    there = peer.seen_requests(peer.other_origin)
    assert [seen.path for seen in there][-1] == f"/rest/tasks/{task_id}"
    assert all(seen.header("authorization") is None for seen in there)
    here = peer.seen_requests()
    assert here[-1].path == "/rest/message:send"
    assert here[-1].header("authorization") == BEARER
    assert "the-token" not in repr(here[-1])


def test_seen_requests_needs_the_other_origin_dialect(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """Without other_origin nothing is recorded: asking is a ValueError; so is a foreign origin."""
    with pytest.raises(ValueError, match="other_origin"):
        agent(A2A_SDK).seen_requests()
    with pytest.raises(ValueError, match="origins"):
        agent(OTHER_ORIGIN).seen_requests("http://127.0.0.1:9")


# --------------------------------------------------------------------------------------------
# Held work
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_held_work_stays_working_until_released(
    agent: Callable[[Dialect], EmbeddedPeer], binding: str
) -> None:
    """A "hold" message's task is stored WORKING with its history, then completes on release."""
    peer = agent(A2A_SDK)
    message = user_message(HOLD)
    task_id = send(peer, binding, message, wait=False)["task"]["id"]
    peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
    peer.ledger.wait_state(task_id, WORKING, timeout=TIMEOUT)
    held = get_task(peer, binding, task_id)
    assert held["status"]["state"] == WORKING
    assert message_ids(held)[0] == message["messageId"]
    assert "artifacts" not in held
    assert peer.release(message["messageId"]) == 1
    peer.ledger.wait_state(task_id, COMPLETED, timeout=TIMEOUT)
    done = get_task(peer, binding, task_id)
    assert done["artifacts"][0]["parts"][0]["text"] == f"echo: {HOLD}"
    assert roles(done) == [ROLE_USER, ROLE_AGENT]
    assert peer.executions[message["messageId"]] == 1


def test_a_held_task_can_be_canceled(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """CancelTask on a held task cancels it; its run is no longer held."""
    peer = agent(A2A_SDK)
    message = user_message(HOLD)
    task_id = send(peer, JSONRPC, message, wait=False)["task"]["id"]
    peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
    canceled = _jsonrpc(peer.jsonrpc_url, "CancelTask", {"id": task_id})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    peer.ledger.wait_state(task_id, "TASK_STATE_CANCELED", timeout=TIMEOUT)
    assert message["messageId"] not in peer.ledger.held()


def test_a_subscription_to_held_work_is_shaped(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """SubscribeToTask: the task, then its updates to the end, without timestamps."""
    peer = agent(HELD | NO_TIMESTAMPS)
    message = user_message()
    task_id = send(peer, JSONRPC, message, wait=False)["task"]["id"]
    peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    headers = {**VERSION, "Accept": "text/event-stream"}
    events = []
    with httpx.stream(
        "POST", peer.jsonrpc_url, json=body, headers=headers, timeout=TIMEOUT
    ) as answer:
        for line in answer.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[len("data:") :])["result"])
                if len(events) == 1:  # subscribed: the task as it is now
                    peer.release(message["messageId"])
    assert events[0]["task"]["status"]["state"] == WORKING
    assert events[-1]["statusUpdate"]["status"]["state"] == COMPLETED
    assert all("timestamp" not in json.dumps(event) for event in events)


def test_release_without_an_id_releases_everything_held(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """With the held dialect any text holds; release() lets every held run finish."""
    peer = agent(HELD | NO_TIMESTAMPS)
    sent = [send(peer, JSONRPC, user_message("anything"), wait=False) for _ in range(3)]
    peer.ledger.wait_held(3, timeout=TIMEOUT)
    assert peer.release() == 3
    for answer in sent:
        peer.ledger.wait_state(answer["task"]["id"], COMPLETED, timeout=TIMEOUT)
        assert not peer.task(answer["task"]["id"]).status.HasField("timestamp")
    assert peer.ledger.held() == []


def test_a_release_before_the_run_is_not_lost(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """Released before it is sent, a held message completes without being held."""
    peer = agent(A2A_SDK)
    message = user_message(HOLD)
    assert peer.release(message["messageId"]) == 0
    answer = send(peer, JSONRPC, message)
    assert answer["task"]["status"]["state"] == COMPLETED


def test_a_held_message_only_answer_waits_for_release(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """To a message-only agent, a held message's Message answer comes after the release."""
    peer = agent(MESSAGE_ONLY)
    message = user_message(HOLD)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(send, peer, REST, message)
        peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
        assert not pending.done()
        peer.release(message["messageId"])
        assert list(pending.result(TIMEOUT)) == ["message"]
    assert peer.task_ids() == []


def test_stopping_a_peer_releases_its_held_work() -> None:
    """A peer stopped with held work completes it, and its thread ends within the bound."""
    with EmbeddedPeer(dialect=HELD) as peer:
        message = user_message()
        task_id = send(peer, GRPC, message, wait=False)["task"]["id"]
        peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
        assert peer.stop() is True
    assert peer.ledger.state(task_id) == COMPLETED
    assert not peer.running


# --------------------------------------------------------------------------------------------
# A busy agent
# --------------------------------------------------------------------------------------------


def test_fill_stores_completed_tasks_with_large_artifacts(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """Fill makes N completed tasks: history (user, agent), an artifact of the size, ordered."""
    peer = agent(A2A_SDK)
    context_id = f"ctx-{uuid.uuid4()}"
    ids = peer.fill(3, artifact_bytes=4096, context_id=context_id)
    page = list_tasks(peer, REST, contextId=context_id, includeArtifacts=True)
    assert [task["id"] for task in page["tasks"]] == list(reversed(ids))  # newest first
    for task in page["tasks"]:
        assert task["status"]["state"] == COMPLETED
        assert roles(task) == [ROLE_USER, ROLE_AGENT]
        assert len(task["artifacts"][0]["parts"][0]["text"]) == 4096
    assert set(ids) <= set(peer.task_ids())
    assert all(peer.ledger.state(task_id) == COMPLETED for task_id in ids)


def test_fill_follows_the_dialect(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """Filled tasks are stored as the dialect stores tasks (here: no user message)."""
    peer = agent(NO_HISTORY)
    (task_id,) = peer.fill(1, artifact_bytes=10)
    assert roles(get_task(peer, JSONRPC, task_id)) == [ROLE_AGENT]


def test_fill_refuses_negative_sizes(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """A negative count or size is a ValueError before anything is stored."""
    peer = agent(A2A_SDK)
    with pytest.raises(ValueError, match="negative"):
        peer.fill(-1)
    with pytest.raises(ValueError, match="negative"):
        peer.fill(1, artifact_bytes=-5)


def test_the_store_forgets_a_task_only_when_its_owner_deletes_it() -> None:
    """A delete by another caller leaves the task; by its owner, it is gone from task_ids."""
    from a2a.auth.user import UnauthenticatedUser
    from a2a.server.context import ServerCallContext
    from a2a.server.tasks import InMemoryTaskStore

    class Named(UnauthenticatedUser):
        @property
        def user_name(self) -> str:
            return "someone-else"

    store = LedgerTaskStore(InMemoryTaskStore(), Ledger())
    owner, other = ServerCallContext(), ServerCallContext(user=Named())

    async def scenario() -> list[list[str]]:
        await store.save(a2a_pb2.Task(id="t-1", context_id="c-1"), owner)
        seen = [store.task_ids()]
        await store.delete("t-1", other)
        seen.append(store.task_ids())
        await store.delete("t-1", owner)
        seen.append(store.task_ids())
        return seen

    assert asyncio.run(scenario()) == [["t-1"], ["t-1"], []]
    assert "DialectHandler" in repr(DialectHandler(object(), A2A_SDK))


# --------------------------------------------------------------------------------------------
# The lossy proxy's cut
# --------------------------------------------------------------------------------------------


def test_a_cut_closes_the_client_and_lets_the_agent_finish(
    agent: Callable[[Dialect], EmbeddedPeer],
) -> None:
    """The client's connection closes before the answer; the agent still answers in full."""
    peer = agent(A2A_SDK)
    message = user_message(HOLD)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    with LossyProxy(peer.http_target, lose_sends(1, mode="cut")) as proxy:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(proxy.url + "/jsonrpc", json=body, headers=VERSION, timeout=TIMEOUT)
        # the agent had not answered: its run is held, after the client saw the close
        peer.ledger.wait_held(message_id=message["messageId"], timeout=TIMEOUT)
        (task_id,) = peer.ledger.tasks_started_by(message["messageId"])
        assert peer.ledger.state(task_id) == WORKING
        peer.release(message["messageId"])
        (answer,) = proxy.wait_cut_answers(1, timeout=TIMEOUT)
    assert answer.startswith(b"HTTP/1.1 200")
    assert COMPLETED.encode() in answer
    assert task_id.encode() in answer
    assert proxy.counts["cut"] == 1
    assert peer.ledger.state(task_id) == COMPLETED
    assert peer.executions[message["messageId"]] == 1


def test_waiting_for_cut_answers_is_guarded(agent: Callable[[Dialect], EmbeddedPeer]) -> None:
    """Waiting for an answer no request will give raises TimeoutError at its timeout."""
    with LossyProxy(agent(A2A_SDK).http_target) as proxy, pytest.raises(TimeoutError):
        proxy.wait_cut_answers(1, timeout=0)


# --------------------------------------------------------------------------------------------
# A dialect of one's own: the peer's hooks
# --------------------------------------------------------------------------------------------


class _Saves:
    """A task store that counts the saves going through it to the peer's store."""

    def __init__(self, inner: Any, seen: list[str]) -> None:
        self.inner = inner
        self.seen = seen

    async def save(self, task: Any, context: Any) -> None:
        """Count, then save through the peer's store."""
        self.seen.append(task.id)
        await self.inner.save(task, context)

    async def get(self, task_id: str, context: Any) -> Any:
        """The peer's store's."""
        return await self.inner.get(task_id, context)

    async def list(self, params: Any, context: Any) -> Any:
        """The peer's store's."""
        return await self.inner.list(params, context)

    async def delete(self, task_id: str, context: Any) -> None:
        """The peer's store's."""
        await self.inner.delete(task_id, context)


class _Own(PeerDialect):
    """A user's dialect: it counts saves, answers the handler it wraps, adds a JSON-RPC route."""

    def __init__(self) -> None:
        self.saves: list[str] = []
        self.handlers: list[Any] = []

    def task_store(self, store: Any, ledger: Ledger) -> Any:
        """The peer's store behind a counter."""
        assert isinstance(ledger, Ledger)
        return _Saves(store, self.saves)

    def request_handler(self, handler: Any) -> Any:
        """a2a-sdk's handler, kept to be seen."""
        self.handlers.append(handler)
        return handler

    def jsonrpc_routes(self, handler: Any, path: str) -> list[Any]:
        """a2a-sdk's JSON-RPC route, and one of the dialect's own beside it."""
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        async def ping(request: Any) -> Any:
            return PlainTextResponse("pong")

        return [*super().jsonrpc_routes(handler, path), Route("/ping", ping)]


def test_a_dialect_of_ones_own_is_built_from_its_hooks() -> None:
    """A PeerDialect subclass: its store takes every save, its route is served, one handler."""
    own = _Own()
    with EmbeddedPeer(dialect=own) as peer:
        answer = send(peer, JSONRPC, user_message("hello"))
        task_id = answer["task"]["id"]
        filled = peer.fill(1, artifact_bytes=10)
        pong = httpx.get(peer.origin + "/ping", timeout=TIMEOUT)
        assert peer.task_ids() == [task_id, *filled]
    assert pong.text == "pong"
    assert set(own.saves) == {task_id, *filled}  # the agent's saves and fill's, through it
    assert len(own.handlers) == 1  # one store, one handler: the bindings share them
