"""Task outcomes: a returned task's state read as a result, never as an error."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import classify
from a2a_client_errors._outcomes import TaskOutcome, task_outcome


def _json_task(state: str) -> dict[str, object]:
    return {
        "id": "t-1",
        "contextId": "c-1",
        "status": {"state": state, "message": {"parts": [{"text": "why"}, {"data": {}}]}},
    }


@pytest.mark.parametrize(
    ("state", "terminal", "interrupted", "failed"),
    [
        ("TASK_STATE_COMPLETED", True, False, False),
        ("TASK_STATE_FAILED", True, False, True),
        ("TASK_STATE_REJECTED", True, False, True),
        ("TASK_STATE_CANCELED", True, False, False),
        ("TASK_STATE_INPUT_REQUIRED", False, True, False),
        ("TASK_STATE_AUTH_REQUIRED", False, True, False),
        ("TASK_STATE_WORKING", False, False, False),
    ],
)
def test_every_state_has_a_meaning(
    state: str, terminal: bool, interrupted: bool, failed: bool
) -> None:
    """Terminal, interrupted, failed: each state says what it is, and what comes next."""
    outcome = task_outcome(_json_task(state))
    assert outcome == TaskOutcome(state, "t-1", "c-1", "why")
    assert outcome.is_terminal is terminal
    assert outcome.is_interrupted is interrupted
    assert outcome.failed is failed
    assert outcome.resend_creates_a_new_task is terminal
    assert outcome.next_step


def test_a_failed_task_is_a_result_not_an_error() -> None:
    """FAILED in a successful call: classify says ok, the outcome says failed."""
    response = httpx.Response(
        200, json={"jsonrpc": "2.0", "id": 1, "result": {"task": _json_task("TASK_STATE_FAILED")}}
    )
    assert classify(response).action.value == "ok"
    outcome = task_outcome(response)
    assert outcome is not None
    assert outcome.failed
    assert "not an error" in outcome.next_step


def test_auth_required_is_a_task_state_not_a_401() -> None:
    """AUTH_REQUIRED asks for credentials inside the task; it is no HTTP auth failure."""
    outcome = task_outcome(
        {"statusUpdate": {"taskId": "t-2", "status": {"state": "auth-required"}}}
    )
    assert outcome is not None
    assert outcome.state == "TASK_STATE_AUTH_REQUIRED"
    assert outcome.task_id == "t-2"
    assert "not an HTTP 401" in outcome.next_step


@pytest.mark.a2a_sdk("1")
def test_a2a_sdk_objects_are_read() -> None:
    """Task, StreamResponse and SendMessageResponse from a2a-sdk give the same outcome."""
    from a2a.types import a2a_pb2

    task = a2a_pb2.Task(
        id="t-3",
        context_id="c-3",
        status=a2a_pb2.TaskStatus(
            state=a2a_pb2.TASK_STATE_REJECTED,
            message=a2a_pb2.Message(parts=[a2a_pb2.Part(text="no")]),
        ),
    )
    expected = TaskOutcome("TASK_STATE_REJECTED", "t-3", "c-3", "no")
    assert task_outcome(task) == expected
    assert task_outcome(a2a_pb2.StreamResponse(task=task)) == expected
    assert task_outcome(a2a_pb2.SendMessageResponse(task=task)) == expected
    update = a2a_pb2.TaskStatusUpdateEvent(
        task_id="t-3", status=a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_WORKING)
    )
    assert task_outcome(a2a_pb2.StreamResponse(status_update=update)).is_active  # type: ignore[union-attr]
    assert (
        task_outcome(a2a_pb2.SendMessageResponse(message=a2a_pb2.Message(message_id="m"))) is None
    )


@pytest.mark.parametrize(
    "answer",
    [
        {"message": {"messageId": "m", "parts": []}},
        httpx.Response(404, json={"error": {"code": 404}}),
        httpx.Response(200, content=b"not json"),
        None,
        42,
    ],
    ids=["json-message", "error", "not-json", "none", "int"],
)
def test_no_task_no_outcome(answer: object) -> None:
    """A message, an error or anything else: no task, no outcome."""
    assert task_outcome(answer) is None


@settings(deadline=None, max_examples=200)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_task_outcome_never_raises(value: object) -> None:
    """Whatever JSON comes back, reading its outcome never raises."""
    outcome = task_outcome(value)
    assert outcome is None or isinstance(outcome.state, str)
