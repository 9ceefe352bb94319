"""-32010 and -32013 read as the table that sent them means them: crewai's or draft 1.1's.

The agents are ours (`tests.crewai_agent`), on 127.0.0.1, reproducing crewai 1.15.30's bytes
and a draft A2A 1.1 agent's; every call goes through `GuardTransport` (or its async twin) and
the normaliser, on the fake clock.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Action, AsyncGuardTransport, Guard, GuardTransport, Reason, classify
from a2a_client_errors._foreign_codes import generation_precondition, read_generation
from a2a_client_errors._policy import GiveUp
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.types import Source
from tests.asgi import serve
from tests.crewai_agent import (
    PATH,
    TASK_ID,
    CrewaiAgent,
    DraftAgent,
    rate_limit_exceeded,
    task,
    unsupported_extension,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

EXTENSION = "https://example.com/ext/a2ui/v0.9"


def send(message_id: str = "msg-1", generation: Any = None) -> dict[str, Any]:
    """A JSON-RPC SendMessage to the task, with ``ifGenerationMatch`` when given."""
    params: dict[str, Any] = {
        "message": {
            "messageId": message_id,
            "taskId": TASK_ID,
            "role": "ROLE_USER",
            "parts": [{"text": "go on"}],
        }
    }
    if generation is not None:
        params["configuration"] = {"ifGenerationMatch": generation}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}


def get_task() -> dict[str, Any]:
    """A JSON-RPC GetTask of the task."""
    return {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": TASK_ID}}


def guard_on(clock: FakeClock, hook: RecordingHook) -> Guard:
    """A Guard on the fake clock, with a fixed draw, telling ``hook``."""
    return Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 0.5, hooks=[hook])


@pytest.fixture
def crewai() -> Iterator[tuple[CrewaiAgent, str]]:
    """A crewai-like agent on 127.0.0.1 and its JSON-RPC URL."""
    agent = CrewaiAgent()
    with serve(agent.app()) as url:
        yield agent, url + PATH


def _post(url: str, body: dict[str, Any], clock: FakeClock, hook: RecordingHook) -> httpx.Response:
    with httpx.Client(transport=GuardTransport(guard_on(clock, hook))) as client:
        return client.post(url, json=body)


# --- crewai 1.15.30 -----------------------------------------------------------------------------


@pytest.mark.parametrize("body", [send(), get_task()], ids=["SendMessage", "GetTask"])
def test_crewais_unsupported_extension_is_the_extension_decision(
    crewai: tuple[CrewaiAgent, str], body: dict[str, Any]
) -> None:
    """The -32010 of crewai, answering a send without a precondition or a GetTask: fix_request.

    Never TASK_GENERATION_MISMATCH (no reconcile, no re-read), never resent.
    """
    agent, url = crewai
    agent.script = [unsupported_extension(EXTENSION)]
    clock, hook = FakeClock(), RecordingHook()
    response = _post(url, body, clock, hook)
    assert response.json()["error"]["code"] == -32010  # handed back as it came
    assert hook.actions == ["fix_request"]
    decision = hook.decisions[0].decision
    assert decision.reason is Reason.EXTENSION_SUPPORT_REQUIRED
    assert decision.error is not None
    assert decision.error.jsonrpc_code == -32010
    assert decision.error.source is Source.JSONRPC_CODE
    assert len(agent.requests) == 1
    assert clock.sleeps == []


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_crewais_rate_limit_is_retried_after_its_retry_after(
    crewai: tuple[CrewaiAgent, str], mode: str
) -> None:
    """-32013 with ``data.retry_after`` 7: RATE_LIMITED, the same bytes again after 7 s."""
    agent, url = crewai
    agent.script = [rate_limit_exceeded(7), None]
    clock, hook = FakeClock(), RecordingHook()
    guard = guard_on(clock, hook)
    if mode == "sync":
        with httpx.Client(transport=GuardTransport(guard)) as client:
            response = client.post(url, json=send())
    else:
        async with httpx.AsyncClient(transport=AsyncGuardTransport(guard)) as client:
            response = await client.post(url, json=send())
    assert response.json()["result"] == {"task": task()}
    assert hook.actions == ["retry", "ok"]
    first = hook.decisions[0].decision
    assert first.reason is Reason.RATE_LIMITED
    assert first.retry_after == 7.0
    assert clock.sleeps == [7.0]  # the hint, not the 0.25 s backoff
    assert agent.requests[0] == agent.requests[1]


def test_a_longer_retry_after_than_the_policy_allows_gives_up(
    crewai: tuple[CrewaiAgent, str],
) -> None:
    """-32013 asking for an hour: not retried (the policy's ``max_retry_after``), no sleep."""
    agent, url = crewai
    agent.script = [rate_limit_exceeded(3600), None]
    clock, hook = FakeClock(), RecordingHook()
    response = _post(url, send(), clock, hook)
    assert response.json()["error"]["data"] == {"retry_after": 3600}
    assert hook.decisions[-1].decision.give_up is GiveUp.HINT_TOO_LONG
    assert clock.sleeps == []
    assert len(agent.requests) == 1


def test_crewais_rate_limit_without_a_delay_names_no_reason(
    crewai: tuple[CrewaiAgent, str],
) -> None:
    """A bare -32013 (crewai sends no data without a delay) is a code A2A assigns nothing."""
    agent, url = crewai
    agent.script = [rate_limit_exceeded()]
    clock, hook = FakeClock(), RecordingHook()
    _post(url, get_task(), clock, hook)
    assert hook.actions == ["report"]
    assert hook.decisions[0].decision.reason is None
    assert len(agent.requests) == 1


# --- draft A2A 1.1 ----------------------------------------------------------------------------


@pytest.mark.parametrize("error_info", [False, True], ids=["bare", "error-info"])
@pytest.mark.parametrize("generation", [2, "2"], ids=["number", "string"])
def test_a_draft_mismatch_answering_a_send_with_its_precondition_is_reconciled(
    error_info: bool, generation: Any
) -> None:
    """-32010 answering SendMessage with ``ifGenerationMatch``: reconcile, nothing resent."""
    agent = DraftAgent(generation=3, error_info=error_info)
    clock, hook = FakeClock(), RecordingHook()
    with serve(agent.app()) as url:
        response = _post(url + PATH, send(generation=generation), clock, hook)
    assert response.json()["error"]["code"] == -32010
    assert hook.actions == ["reconcile"]
    decision = hook.decisions[0].decision
    assert decision.reason is Reason.TASK_GENERATION_MISMATCH
    assert decision.error is not None
    assert decision.error.source is (Source.ERROR_INFO if error_info else Source.JSONRPC_CODE)
    assert [request["method"] for request in agent.requests] == ["SendMessage"]
    assert agent.generation == 3


def test_a_draft_send_with_the_current_generation_succeeds() -> None:
    """The precondition met: the send is answered, the generation moves on."""
    agent = DraftAgent(generation=3)
    clock, hook = FakeClock(), RecordingHook()
    with serve(agent.app()) as url:
        response = _post(url + PATH, send(generation=3), clock, hook)
    assert response.json()["result"]["task"]["generation"] == 4
    assert hook.actions == ["ok"]


# --- the readings, without a server -------------------------------------------------------------

_BARE = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32010, "message": "m"}}


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        (None, Reason.TASK_GENERATION_MISMATCH),
        ("SendMessage", Reason.TASK_GENERATION_MISMATCH),
        ("SendStreamingMessage", Reason.TASK_GENERATION_MISMATCH),
        ("GetTask", Reason.EXTENSION_SUPPORT_REQUIRED),
        ("CancelTask", Reason.EXTENSION_SUPPORT_REQUIRED),
        ("ListTasks", Reason.EXTENSION_SUPPORT_REQUIRED),
    ],
)
def test_a_bare_minus_32010_is_a_mismatch_only_where_one_can_answer(
    operation: str | None, reason: Reason
) -> None:
    """The operation alone: only a send can be draft 1.1's mismatch (nothing known: as sent)."""
    assert classify(_BARE, operation=operation).reason is reason
    response = httpx.Response(200, content=json.dumps(_BARE).encode())
    assert classify(response, operation=operation).reason is reason


def test_an_error_info_mismatch_decides_whatever_it_answers() -> None:
    """An ErrorInfo reason is read first, as always: the peer named it."""
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_GENERATION_MISMATCH",
        "domain": "a2a-protocol.org",
    }
    body = {**_BARE, "error": {**_BARE["error"], "data": [info]}}
    assert classify(body, operation="GetTask").reason is Reason.TASK_GENERATION_MISMATCH


@pytest.mark.parametrize(
    ("operation", "precondition", "reason"),
    [
        ("SendMessage", True, Reason.TASK_GENERATION_MISMATCH),
        ("SendMessage", None, Reason.TASK_GENERATION_MISMATCH),
        ("SendMessage", False, Reason.EXTENSION_SUPPORT_REQUIRED),
        ("SendStreamingMessage", False, Reason.EXTENSION_SUPPORT_REQUIRED),
        ("GetTask", True, Reason.EXTENSION_SUPPORT_REQUIRED),
        (None, False, Reason.TASK_GENERATION_MISMATCH),
    ],
)
def test_the_request_says_whether_a_send_could_be_refused_for_its_generation(
    operation: str | None, precondition: bool | None, reason: Reason
) -> None:
    """`read_generation`: a send known to carry no ``ifGenerationMatch`` cannot mismatch."""
    error = classify(_BARE).error
    assert error is not None
    read = read_generation(error, operation, precondition)
    assert read.reason is reason
    assert (read.jsonrpc_code, read.delivery) == (error.jsonrpc_code, error.delivery)
    assert classify(read).action is not None  # a record the policy decides as any other
    other = classify({**_BARE, "error": {"code": -32001, "message": "m"}}).error
    assert other is not None
    assert read_generation(other, "GetTask", False) is other


@pytest.mark.parametrize(
    ("body", "carries"),
    [
        (send(generation=3), True),
        (send(generation="3"), True),
        (send(generation=0), True),
        (send(), False),
        ({"message": {}, "configuration": {"if_generation_match": 5}}, True),
        ({"message": {}, "configuration": {"ifGenerationMatch": None}}, False),
        ({"message": {}, "configuration": "x"}, False),
        ([send(generation=3)], False),
        (None, False),
    ],
)
def test_the_generation_precondition_is_read_from_a_send(body: object, carries: bool) -> None:
    """JSON-RPC params or an HTTP+JSON body; camel or snake case; null is no precondition."""
    assert generation_precondition(body) is carries


@pytest.mark.parametrize(
    ("retry_after", "hint"),
    [
        (30, 30.0),
        (1.5, 1.5),
        (0, 0.0),
        (-3, None),
        ("30", None),
        (float("nan"), None),
        (float("inf"), None),
        (10**400, None),
        (1e300, 1e300),
        (True, None),
        (None, None),
        ([5], None),
    ],
)
def test_odd_retry_afters_keep_the_rate_limit_and_drop_the_hint(
    retry_after: Any, hint: float | None
) -> None:
    """Only a finite, non-negative number is a hint; the rate limit is read all the same."""
    body = {
        "jsonrpc": "2.0",
        "error": {"code": -32013, "message": "m", "data": {"retry_after": retry_after}},
        "id": 1,
    }
    decision = classify(body)
    assert decision.reason is Reason.RATE_LIMITED
    assert decision.action is Action.RETRY
    assert decision.retry_after == hint


def test_data_retry_after_is_a_hint_on_any_code_and_the_larger_hint_wins() -> None:
    """-32603 with ``data.retry_after``: retried, the hint kept; a larger header wins."""
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m", "data": {}}}
    body["error"]["data"] = {"retry_after": 4}
    decision = classify(httpx.Response(200, json=body))
    assert (decision.reason, decision.retry_after) == (Reason.INTERNAL_ERROR, 4.0)
    hinted = classify(httpx.Response(200, json=body, headers={"Retry-After": "9"}))
    assert hinted.retry_after == 9.0
    other = {**body, "error": {"code": -32099, "message": "m", "data": {"retry_after": 2}}}
    assert classify(other).reason is None  # the data names no reason for another code
