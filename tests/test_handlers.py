"""The default decision handlers: what each action does when nobody overrides it."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import (
    Action,
    AuthFailed,
    CallFailed,
    Decision,
    DegradeNeeded,
    FixRequestNeeded,
    Reason,
    ReconcileNeeded,
    ReportNeeded,
)
from a2a_client_errors.handlers import LOST_RACE, DecisionHandlers, Situation


class FakeClient:
    """Answers GetTask with a completed task; has a public card, or not."""

    def __init__(self, card: Any = None) -> None:
        self.client = type("Inner", (), {"_card": card})()
        self.asked: list[str] = []

    async def get_task(self, request: a2a_pb2.GetTaskRequest) -> a2a_pb2.Task:
        """Return a completed task."""
        self.asked.append(request.id)
        return a2a_pb2.Task(
            id=request.id, status=a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_COMPLETED)
        )


def _situation(
    failure_type: type[CallFailed], action: Action, reason: str, operation: str, **kw: Any
) -> Situation:
    decision = Decision(action, Reason(reason) if reason in Reason.__members__ else reason)
    request = kw.pop("request", a2a_pb2.GetTaskRequest(id="t-1"))
    return Situation(failure_type(decision), operation, request, kw.pop("client", FakeClient()))


@pytest.mark.parametrize(
    ("failure_type", "action", "reason"),
    [
        (FixRequestNeeded, Action.FIX_REQUEST, "VERSION_NOT_SUPPORTED"),
        (ReportNeeded, Action.REPORT, "INVALID_AGENT_RESPONSE"),
        (AuthFailed, Action.AUTH, "UNAUTHENTICATED"),
        (DegradeNeeded, Action.DEGRADE, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (ReconcileNeeded, Action.RECONCILE, "SOMETHING_ELSE"),
    ],
)
async def test_actions_without_a_fallback_raise_the_failure(
    failure_type: type[CallFailed], action: Action, reason: str
) -> None:
    """fix_request, report, auth, and degrades or reconciles with no fallback raise as is."""
    situation = _situation(failure_type, action, reason, "CreateTaskPushNotificationConfig")
    with pytest.raises(failure_type) as raised:
        await DecisionHandlers().handle(situation)
    assert raised.value is situation.failure


async def test_a_lost_cancel_race_reads_and_marks_the_task() -> None:
    """CancelTask + TASK_NOT_CANCELABLE: GetTask, and the lost-race mark in the metadata."""
    client = FakeClient()
    situation = _situation(
        ReconcileNeeded,
        Action.RECONCILE,
        "TASK_NOT_CANCELABLE",
        "CancelTask",
        request=a2a_pb2.CancelTaskRequest(id="t-9"),
        client=client,
    )
    task = await DecisionHandlers().handle(situation)
    assert client.asked == ["t-9"]
    assert dict(task.metadata["a2a_client_errors"]) == LOST_RACE["a2a_client_errors"]


async def test_the_extended_card_without_a_public_card_raises() -> None:
    """GetExtendedAgentCard refused and no public card at hand: the failure stands."""
    situation = _situation(
        DegradeNeeded, Action.DEGRADE, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "GetExtendedAgentCard"
    )
    with pytest.raises(DegradeNeeded):
        await DecisionHandlers().handle(situation)


async def test_situation_exposes_the_decision() -> None:
    """A situation names its decision and reason."""
    situation = _situation(DegradeNeeded, Action.DEGRADE, "UNSUPPORTED_OPERATION", "ListTasks")
    assert situation.decision.action is Action.DEGRADE
    assert situation.reason is Reason.UNSUPPORTED_OPERATION
