"""Decide what to do about a call's outcome: pure, immutable, reason first.

A `Policy` maps a `CallError` to an `Action`. The defaults come from the table in
`a2a_client_errors.reasons`: per reason, else per transport failure, gRPC code or HTTP status.
Orchestrators override them per reason, and per operation, with ``with_*`` copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from a2a_client_errors.errors import ErrorKind, escape
from a2a_client_errors.normalize import DEFAULT_LIMITS, Limits, normalize
from a2a_client_errors.reasons import (
    REASON_ACTIONS,
    TRANSPORT_ACTIONS,
    Action,
    Reason,
    canonical_reason,
    grpc_code_action,
    http_status_action,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from a2a_client_errors.errors import CallError

__all__ = ["Action", "Decision", "Policy", "classify", "default_action"]


@dataclass(frozen=True, slots=True, init=False)
class Decision:
    """What to do about one outcome of a call.

    Attributes:
        action: what to do.
        reason: the canonical reason (a `Reason`), an unknown reason as the peer sent it, or
            None (no call error, or no signal named a reason).
        retry_after: the server's hint in seconds, or None.
        error: the normalised call error, or None when the call returned a result.
        operation: the A2A operation the call was (``"SendMessage"``, ...), if known.

    """

    action: Action
    reason: Reason | str | None
    retry_after: float | None
    error: CallError | None
    operation: str | None

    def __init__(
        self,
        action: Action,
        reason: Reason | str | None = None,
        retry_after: float | None = None,
        error: CallError | None = None,
        operation: str | None = None,
    ) -> None:
        # Slot descriptors, not the frozen __setattr__: one decision per call, on the hot path.
        _set_action(self, action)
        _set_reason(self, reason)
        _set_retry_after(self, retry_after)
        _set_error(self, error)
        _set_operation(self, operation)

    @property
    def ok(self) -> bool:
        """Whether the call returned a result (which may still be a FAILED task)."""
        return self.action is Action.OK

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the decision and its error."""
        return {
            "action": self.action.value,
            "reason": None if self.reason is None else str(self.reason),
            "retry_after": self.retry_after,
            "operation": self.operation,
            "error": None if self.error is None else self.error.to_dict(),
        }

    def __str__(self) -> str:
        head = f"{self.action.value}"
        if self.reason is not None:
            head += f" {escape(str(self.reason))}"
        if self.operation:
            head += f" on {escape(self.operation)}"
        if self.error is not None:
            head += f": {self.error}"
        return head


_set_action, _set_reason, _set_retry_after, _set_error, _set_operation = (
    vars(Decision)[f.name].__set__ for f in fields(Decision)
)

OK: Decision = Decision(Action.OK)


def default_action(error: CallError) -> Action:
    """The table's action for a call error, before any override.

    Auth first; then the reason (unknown reasons are reported); with no reason, the transport
    failure, the gRPC code or the HTTP status; with nothing at all, report.
    """
    if error.kind is ErrorKind.AUTH:
        return Action.AUTH
    if error.reason is not None:
        return REASON_ACTIONS.get(error.reason, Action.REPORT)
    if error.transport is not None:
        return TRANSPORT_ACTIONS[error.transport]
    if error.grpc_status is not None:
        return grpc_code_action(error.grpc_status)
    if error.http_status is not None and not 200 <= error.http_status < 300:
        return http_status_action(error.http_status)
    return Action.REPORT


def _key(reason: str) -> str:
    found = canonical_reason(reason)
    return found.value if isinstance(found, Reason) else found


@dataclass(frozen=True, slots=True)
class Policy:
    """Reason -> action, with overrides per reason and per operation. Immutable.

    Example:
        >>> from a2a_client_errors import Action, Policy, Reason
        >>> policy = Policy().with_action(Reason.TASK_NOT_FOUND, Action.REPORT)
        >>> policy = policy.with_action(
        ...     "UNSUPPORTED_OPERATION", Action.REPORT, operation="CancelTask"
        ... )

    Attributes:
        actions: reason -> action overrides, for every operation.
        operation_actions: (operation, reason) -> action overrides; these win.
        limits: caps on what is read from peers.

    """

    actions: Mapping[str, Action] = field(default_factory=lambda: MappingProxyType({}))
    operation_actions: Mapping[tuple[str, str], Action] = field(
        default_factory=lambda: MappingProxyType({})
    )
    limits: Limits = DEFAULT_LIMITS

    def with_action(
        self, reason: str, action: Action | str, *, operation: str | None = None
    ) -> Policy:
        """A copy that takes ``action`` for ``reason`` (on ``operation`` only, if given)."""
        chosen = Action(action)
        key = _key(reason)
        if operation is None:
            return replace(self, actions=MappingProxyType({**self.actions, key: chosen}))
        merged = {**self.operation_actions, (operation, key): chosen}
        return replace(self, operation_actions=MappingProxyType(merged))

    def with_actions(self, actions: Mapping[str, Action | str]) -> Policy:
        """A copy with several reason -> action overrides at once."""
        merged = {**self.actions, **{_key(r): Action(a) for r, a in actions.items()}}
        return replace(self, actions=MappingProxyType(merged))

    def with_limits(self, limits: Limits) -> Policy:
        """A copy that reads peers with other caps."""
        return replace(self, limits=limits)

    def action_for(self, error: CallError, operation: str | None = None) -> Action:
        """The action for ``error``: the most specific override, else the table's default."""
        reason = error.reason
        if reason is not None and (self.actions or self.operation_actions):
            key = reason.value if isinstance(reason, Reason) else reason
            if operation is not None and self.operation_actions:
                found = self.operation_actions.get((operation, key))
                if found is not None:
                    return found
            found = self.actions.get(key)
            if found is not None:
                return found
        return default_action(error)

    def decide(self, error: CallError | None, *, operation: str | None = None) -> Decision:
        """The decision for a normalised outcome (None: the call returned a result)."""
        if error is None:
            return OK if operation is None else Decision(Action.OK, operation=operation)
        return Decision(
            self.action_for(error, operation), error.reason, error.retry_after, error, operation
        )

    def classify(self, x: object, *, operation: str | None = None) -> Decision:
        """Normalise ``x`` and decide, in one step."""
        return self.decide(normalize(x, limits=self.limits), operation=operation)


DEFAULT_POLICY: Policy = Policy()


def classify(x: object, *, operation: str | None = None, policy: Policy | None = None) -> Decision:
    """Normalise what a call produced and decide what to do about it.

    Args:
        x: anything `normalize` accepts: an ``httpx.Response``, a ``grpc.RpcError``, an
            exception, a parsed JSON body.
        operation: the A2A operation (``"SendMessage"``, ``"CancelTask"``, ...), for
            per-operation overrides and for the record.
        policy: the policy to decide with (default: the table's).

    Returns:
        The `Decision`. Never raises.

    """
    chosen = policy or DEFAULT_POLICY
    return chosen.decide(normalize(x, limits=chosen.limits), operation=operation)
