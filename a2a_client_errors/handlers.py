"""Decision handlers: what a guarded client does about a decision other than retry.

A `GuardedClient` (see `a2a_client_errors.integrations.a2a_sdk`) hands every final decision but
``ok`` and ``retry`` to its `DecisionHandlers`: one coroutine per action, each given the
`Situation` (the failure, the operation, the request, the client). A handler returns what the
operation returns instead, or raises (the failure itself, by default). Subclass and override
the actions you decide differently; what you do not override keeps the defaults below.

Defaults:

* reconcile:
    * CancelTask refused with TASK_NOT_CANCELABLE: the task has already ended (the cancel lost
      the race). The task is read with GetTask and returned, its metadata marked
      ``{"a2a_client_errors": {"cancel": "lost_race"}}`` so that nobody takes it for a
      successful cancel.
    * TASK_NOT_FOUND: `DecisionHandlers.task_gone` is told (drop your local handle there),
      and the failure is raised: whether to create the task again is the orchestrator's call.
* degrade:
    * GetExtendedAgentCard refused: the public card the client already has is returned.
    * SubscribeToTask refused with UNSUPPORTED_OPERATION (the task is terminal, or the peer
      does not stream): the task is read with GetTask and becomes the stream's one event.
    * anything else is raised (push notifications refused: poll instead; the orchestrator
      knows what to poll for).
* fix_request, report, auth: raised as they are (a version or extension to negotiate, a peer
  that broke the contract, credentials the Guard already tried to refresh once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors.reasons import Action, Reason

if TYPE_CHECKING:
    from a2a_client_errors.errors import CallFailed
    from a2a_client_errors.policy import Decision

__all__ = ["LOST_RACE", "DecisionHandlers", "Situation"]

LOST_RACE: Final = {"a2a_client_errors": {"cancel": "lost_race"}}
"""The metadata a task read after a lost cancel race carries."""


@dataclass(frozen=True, slots=True)
class Situation:
    """What a decision handler is given.

    Attributes:
        failure: the `CallFailed` the Guard raised; ``failure.decision`` is the decision.
        operation: the A2A operation (``"CancelTask"``, ...).
        request: the request the operation was called with.
        client: the `GuardedClient`, for follow-up calls (they are guarded too).
        context: the a2a-sdk call context, if any.
    """

    failure: CallFailed
    operation: str
    request: Any
    client: Any
    context: Any = None

    @property
    def decision(self) -> Decision:
        """The decision to carry out."""
        return self.failure.decision

    @property
    def reason(self) -> Reason | str | None:
        """The decision's reason."""
        return self.failure.decision.reason


class DecisionHandlers:
    """One handler per action; subclass to decide differently (see the module's defaults)."""

    async def handle(self, situation: Situation) -> Any:
        """Run the handler of the situation's action."""
        action = situation.decision.action
        if action is Action.RECONCILE:
            return await self.reconcile(situation)
        if action is Action.DEGRADE:
            return await self.degrade(situation)
        if action is Action.FIX_REQUEST:
            return await self.fix_request(situation)
        if action is Action.AUTH:
            return await self.auth(situation)
        return await self.report(situation)

    async def reconcile(self, situation: Situation) -> Any:
        """The client's view of the task is stale: read it, or let go of it."""
        if situation.operation == "CancelTask" and situation.reason == Reason.TASK_NOT_CANCELABLE:
            types = _types()
            task = await situation.client.get_task(types.GetTaskRequest(id=situation.request.id))
            task.metadata.update(LOST_RACE)
            return task
        if situation.reason == Reason.TASK_NOT_FOUND:
            await self.task_gone(situation)
        raise situation.failure

    async def task_gone(self, situation: Situation) -> None:
        """The peer knows no such task (any more): drop the local handle here. Default: none."""

    async def degrade(self, situation: Situation) -> Any:
        """The peer lacks a capability: fall back where the protocol offers a way."""
        operation = situation.operation
        if operation == "GetExtendedAgentCard":
            card = getattr(situation.client.client, "_card", None)
            if card is not None:
                return card
        if operation == "SubscribeToTask" and situation.reason == Reason.UNSUPPORTED_OPERATION:
            types = _types()
            task = await situation.client.get_task(types.GetTaskRequest(id=situation.request.id))
            return types.StreamResponse(task=task)
        raise situation.failure

    async def fix_request(self, situation: Situation) -> Any:
        """The request must change before it is sent again. Default: raise."""
        raise situation.failure

    async def report(self, situation: Situation) -> Any:
        """The peer broke the contract, or said something unknown. Default: raise."""
        raise situation.failure

    async def auth(self, situation: Situation) -> Any:
        """Credentials were refused (after the Guard's one refresh). Default: raise."""
        raise situation.failure


def _types() -> Any:
    from a2a.types import a2a_pb2  # noqa: PLC0415 (only a guarded a2a-sdk client calls here)

    return a2a_pb2
