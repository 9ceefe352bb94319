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
from a2a_client_errors.integrations.a2a_sdk._handlers import LOST_RACE, DecisionHandlers, Situation

# The decision handlers over a2a-sdk 1.x types.
pytestmark = pytest.mark.a2a_sdk("1")


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


class CardClient:
    """A guarded-client stand-in: a card, and a get_task that records its context."""

    def __init__(self, card: a2a_pb2.AgentCard) -> None:
        self.client = type("Inner", (), {"_card": card})()
        self.contexts: list[Any] = []

    async def get_task(self, request: a2a_pb2.GetTaskRequest, *, context: Any = None) -> str:
        """Record the context of the resend."""
        self.contexts.append(context)
        return "resent"

    async def read_card(self) -> Any:
        """The card, as read again (the held one: these tests are about choosing)."""
        self.cards_read = getattr(self, "cards_read", 0) + 1
        return self.client._card


def _card(*, versions: tuple[str, ...] = ("1.0",), required: tuple[str, ...] = ()) -> Any:
    card = a2a_pb2.AgentCard(name="peer")
    for version in versions:
        card.supported_interfaces.add(url="http://peer", protocol_version=version)
    for uri in required:
        card.capabilities.extensions.add(uri=uri, required=True)
    card.capabilities.extensions.add(uri="urn:optional", required=False)
    return card


def _fix(reason: str, client: CardClient, context: Any = None) -> Situation:
    decision = Decision(Action.FIX_REQUEST, Reason(reason))
    return Situation(
        FixRequestNeeded(decision), "GetTask", a2a_pb2.GetTaskRequest(id="t-1"), client, context
    )


async def test_a_required_extension_is_declared_and_resent_once() -> None:
    """EXTENSION_SUPPORT_REQUIRED: the allowed required URI joins A2A-Extensions; resent."""
    from a2a.client import ClientCallContext

    client = CardClient(_card(required=("urn:needed",)))
    context = ClientCallContext(service_parameters={"A2A-Extensions": "urn:mine"})
    handlers = DecisionHandlers(allowed_extensions={"urn:needed"})
    outcome = await handlers.handle(_fix("EXTENSION_SUPPORT_REQUIRED", client, context))
    assert await outcome == "resent"
    sent = client.contexts[0]
    assert sent.service_parameters["A2A-Extensions"] == "urn:mine,urn:needed"
    assert sent.state["a2a_client_errors.resent"] is True
    assert context.service_parameters == {"A2A-Extensions": "urn:mine"}  # the caller's, intact


async def test_an_extension_not_allowed_is_never_declared() -> None:
    """A required extension outside allowed_extensions: the failure stands, nothing resent."""
    client = CardClient(_card(required=("urn:needed",)))
    with pytest.raises(FixRequestNeeded):
        await DecisionHandlers().handle(_fix("EXTENSION_SUPPORT_REQUIRED", client))
    assert client.contexts == []


async def test_a_fix_is_tried_once() -> None:
    """A request already resent by a fix is not fixed again."""
    from a2a.client import ClientCallContext

    client = CardClient(_card(versions=("0.3", "1.0")))
    context = ClientCallContext(state={"a2a_client_errors.resent": True})
    with pytest.raises(FixRequestNeeded):
        await DecisionHandlers().handle(_fix("VERSION_NOT_SUPPORTED", client, context))
    assert client.contexts == []


@pytest.mark.parametrize(
    ("ours", "theirs", "refused", "allow", "chosen"),
    [
        (("1.0",), ("1.0",), "0.3", False, "1.0"),
        (("1.1", "1.0"), ("1.0", "1.1"), None, False, "1.1"),
        (("1.0",), ("1.0",), "2.0", True, "1.0"),
        (("1.0",), ("1.0",), "2.0", False, None),
        (("1.0",), ("0.3",), "1.0", True, None),
        (("1.0",), ("1.0",), "1.0", False, None),
    ],
    ids=["upgrade", "preferred", "allowed-downgrade", "no-downgrade", "nothing-common", "same"],
)
async def test_version_negotiation(
    ours: tuple[str, ...],
    theirs: tuple[str, ...],
    refused: str | None,
    allow: bool,
    chosen: str | None,
) -> None:
    """The best common version, never an older one unless allowed, never the refused one."""
    from a2a.client import ClientCallContext

    client = CardClient(_card(versions=theirs))
    parameters = {} if refused is None else {"A2A-Version": refused}
    context = ClientCallContext(service_parameters=parameters)
    handlers = DecisionHandlers(versions=ours, allow_downgrade=allow)
    situation = _fix("VERSION_NOT_SUPPORTED", client, context)
    if chosen is None:
        with pytest.raises(FixRequestNeeded):
            await handlers.handle(situation)
        return
    assert await (await handlers.handle(situation)) == "resent"
    assert client.contexts[0].service_parameters["A2A-Version"] == chosen


async def test_other_fixes_raise() -> None:
    """CONTENT_TYPE_NOT_SUPPORTED has no automatic fix: the failure (with its details) stands."""
    client = CardClient(_card())
    with pytest.raises(FixRequestNeeded):
        await DecisionHandlers().handle(_fix("CONTENT_TYPE_NOT_SUPPORTED", client))


class PollingClient:
    """A guarded-client stand-in whose task works for a while, on a fake clock."""

    def __init__(self, working_for: int) -> None:
        from a2a_client_errors import Guard
        from a2a_client_errors.testing import FakeClock

        self.clock = FakeClock()
        self.guard = Guard(clock=self.clock.now, sleep=self.clock.sleep)
        self.left = working_for
        self.reads = 0

    async def get_task(self, request: a2a_pb2.GetTaskRequest) -> a2a_pb2.Task:
        """WORKING until the time is up, then COMPLETED."""
        self.reads += 1
        state = a2a_pb2.TASK_STATE_WORKING if self.left > 0 else a2a_pb2.TASK_STATE_COMPLETED
        self.left -= 1
        return a2a_pb2.Task(id=request.id, status=a2a_pb2.TaskStatus(state=state))


async def test_poll_task_backs_off_until_a_final_state() -> None:
    """GetTask until COMPLETED, the pauses doubling from the first, capped."""
    from a2a_client_errors.integrations.a2a_sdk._handlers import poll_task

    client = PollingClient(working_for=4)
    task = await poll_task(client, "t-1", initial=0.5, cap=2.0)
    assert a2a_pb2.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert client.reads == 5
    assert client.clock.sleeps == [0.5, 1.0, 2.0, 2.0]


async def test_poll_task_is_bounded() -> None:
    """A task that never ends: max_polls reads, and the last task read is returned."""
    from a2a_client_errors.integrations.a2a_sdk._handlers import poll_task

    client = PollingClient(working_for=1000)
    task = await poll_task(client, "t-1", max_polls=3)
    assert a2a_pb2.TaskState.Name(task.status.state) == "TASK_STATE_WORKING"
    assert client.reads == 3
    assert len(client.clock.sleeps) == 2  # no pause after the last read


def _context(**parameters: str) -> Any:
    from a2a.client import ClientCallContext

    return ClientCallContext(service_parameters=parameters or None, state={"kept": True})


def test_prepare_declares_the_required_extensions_that_are_allowed() -> None:
    """Allowed required extensions join what the context declares; the rest of it is kept."""
    handlers = DecisionHandlers(allowed_extensions=["urn:a", "urn:b", "urn:optional"])
    card = _card(required=("urn:a", "urn:b", "urn:not-allowed"))
    prepared = handlers.prepare(card, _context(**{"A2A-Extensions": "urn:mine", "X": "y"}))
    assert prepared.service_parameters == {"A2A-Extensions": "urn:a,urn:b,urn:mine", "X": "y"}
    assert prepared.state == {"kept": True}
    fresh = handlers.prepare(card, None)
    assert fresh.service_parameters == {"A2A-Extensions": "urn:a,urn:b"}


def test_prepare_leaves_the_context_alone_when_nothing_is_to_add() -> None:
    """No card, no required extension allowed, or all declared already: the same context."""
    handlers = DecisionHandlers(allowed_extensions=["urn:a"])
    context = _context(**{"A2A-Extensions": " urn:a , urn:z"})
    assert handlers.prepare(None, context) is context
    assert handlers.prepare(_card(required=("urn:b",)), context) is context
    assert handlers.prepare(_card(required=("urn:a",)), context) is context
    assert DecisionHandlers().prepare(_card(required=("urn:a",)), None) is None


async def test_version_and_extension_fixes_read_the_card_again() -> None:
    """Both fixes decide with the card as read again, not the one held when they began."""
    client = CardClient(_card(versions=("1.0",), required=("urn:a",)))
    resent = await DecisionHandlers().handle(_fix("VERSION_NOT_SUPPORTED", client, _context()))
    assert await resent == "resent"
    resent = await DecisionHandlers(allowed_extensions=["urn:a"]).handle(
        _fix("EXTENSION_SUPPORT_REQUIRED", client, _context())
    )
    assert await resent == "resent"
    assert client.cards_read == 2


async def test_polling_yields_each_change_once() -> None:
    """A Polling reads until final, yields a task only when it changed, and polls afresh."""
    from a2a_client_errors.integrations.a2a_sdk._handlers import Polling

    client = PollingClient(working_for=3)
    decision = Decision(Action.DEGRADE, Reason.PUSH_NOTIFICATION_NOT_SUPPORTED)
    polling = Polling(client, "t-1", decision, initial=1.0, cap=1.0)
    states = [a2a_pb2.TaskState.Name(task.status.state) async for task in polling]
    assert states == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert client.reads == 4
    assert client.clock.sleeps == [1.0, 1.0, 1.0]
    again = [task.id async for task in polling]
    assert again == ["t-1"]  # the task is final now: one read
    assert repr(polling) == "Polling(task_id='t-1', reason=PUSH_NOTIFICATION_NOT_SUPPORTED)"


async def test_a_push_refusal_without_a_task_raises() -> None:
    """CreateTaskPushNotificationConfig refused for no task id: nothing to poll, so raise."""
    decision = Decision(Action.DEGRADE, Reason.PUSH_NOTIFICATION_NOT_SUPPORTED)
    situation = Situation(
        DegradeNeeded(decision),
        "CreateTaskPushNotificationConfig",
        a2a_pb2.TaskPushNotificationConfig(url="http://127.0.0.1:9/x"),
        FakeClient(),
    )
    with pytest.raises(DegradeNeeded):
        await DecisionHandlers().handle(situation)


class RereadClient:
    """Answers GetTask with the task as it is now (generation moved on), or fails."""

    def __init__(self, *, fails: bool = False) -> None:
        self.asked: list[tuple[str, Any]] = []
        self.fails = fails

    async def get_task(self, request: a2a_pb2.GetTaskRequest, *, context: Any = None) -> Any:
        """Return the working task read again (or raise)."""
        self.asked.append((request.id, context))
        if self.fails:
            raise ConnectionError("gone")
        return a2a_pb2.Task(
            id=request.id, status=a2a_pb2.TaskStatus(state=a2a_pb2.TASK_STATE_WORKING)
        )


@pytest.mark.parametrize(
    ("operation", "sent"),
    [
        ("CancelTask", a2a_pb2.CancelTaskRequest(id="t-9")),
        (
            "SendMessage",
            a2a_pb2.SendMessageRequest(message=a2a_pb2.Message(message_id="m-1", task_id="t-9")),
        ),
    ],
)
async def test_a_stale_generation_reads_the_task_again_and_never_resends(
    operation: str, sent: Any
) -> None:
    """TASK_GENERATION_MISMATCH: ReconcileNeeded carries the fresh task; nothing is resent."""
    client = RereadClient()
    decision = Decision(Action.RECONCILE, Reason.TASK_GENERATION_MISMATCH)
    situation = Situation(ReconcileNeeded(decision), operation, sent, client, "ctx")
    with pytest.raises(ReconcileNeeded) as raised:
        await DecisionHandlers().handle(situation)
    assert client.asked == [("t-9", "ctx")]
    assert raised.value.task is not None
    assert raised.value.task.id == "t-9"  # type: ignore[attr-defined]


async def test_a_stale_generation_whose_task_cannot_be_read_raises_without_it() -> None:
    """The re-read fails: the same ReconcileNeeded, with no task, and a log line."""
    client = RereadClient(fails=True)
    decision = Decision(Action.RECONCILE, Reason.TASK_GENERATION_MISMATCH)
    failure = ReconcileNeeded(decision)
    situation = Situation(failure, "CancelTask", a2a_pb2.CancelTaskRequest(id="t-9"), client)
    with pytest.raises(ReconcileNeeded) as raised:
        await DecisionHandlers().handle(situation)
    assert raised.value is failure
    assert raised.value.task is None


async def test_a_stale_generation_on_a_message_without_a_task_is_raised_as_is() -> None:
    """A new message names no task: there is nothing to read again."""
    client = RereadClient()
    decision = Decision(Action.RECONCILE, Reason.TASK_GENERATION_MISMATCH)
    request = a2a_pb2.SendMessageRequest(message=a2a_pb2.Message(message_id="m-1"))
    situation = Situation(ReconcileNeeded(decision), "SendMessage", request, client)
    with pytest.raises(ReconcileNeeded):
        await DecisionHandlers().handle(situation)
    assert client.asked == []
