"""Decide what to do about a call's outcome: pure, immutable, reason first.

A `Policy` maps a `CallError` to an `Action`. The defaults come from the table in
`a2a_client_errors._reasons`: per reason, else per transport failure, gRPC code or HTTP status.
Orchestrators override them per reason, and per operation, with ``with_*`` copies.

With a retry context (the attempt, the attempts allowed, the time left before the deadline,
the budget left, a random draw), the policy also plans the retry: its delay (capped
exponential backoff with full jitter, floored by the server's hint), or why it will not
happen (`GiveUp`). It stays pure: the Guard supplies the clock, the budget and the randomness.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import httpx

from a2a_client_errors._errors import ErrorKind, escape
from a2a_client_errors._lookup import WORK_OPERATIONS
from a2a_client_errors._normalize import (
    DEFAULT_LIMITS,
    Limits,
    defeated,
    from_response,
    normalize,
    normalize_into,
)
from a2a_client_errors._reasons import (
    A2A_OPERATIONS,
    REASON_ACTIONS,
    TRANSPORT_ACTIONS,
    Action,
    Delivery,
    Reason,
    canonical_reason,
    grpc_code_action,
    http_status_action,
)
from a2a_client_errors._retry import Backoff

if TYPE_CHECKING:
    from collections.abc import Mapping

    from a2a_client_errors._errors import CallError

__all__ = [
    "Action",
    "Decision",
    "GiveUp",
    "Policy",
    "classify",
    "default_action",
    "delivery_note",
]


class GiveUp(str, enum.Enum):
    """Why a retry the policy wanted will not happen."""

    ATTEMPTS = "attempts"
    """The call used every attempt it was allowed."""
    BUDGET = "budget"
    """The peer's retry budget is spent: the call fails fast."""
    DEADLINE = "deadline"
    """The next attempt could not start before the call's deadline."""
    HINT_TOO_LONG = "hint_too_long"
    """The server asked for a longer wait than ``Policy.max_retry_after``."""
    NOT_REPLAYABLE = "not_replayable"
    """The request's body was a stream that cannot be sent twice."""
    NO_MESSAGE_ID = "no_message_id"
    """A SendMessage without a messageId: a resend could create a second task."""
    STREAM_STARTED = "stream_started"
    """The stream had delivered events: resending would replay them; resubscribe instead."""
    OUTCOME_UNKNOWN = "outcome_unknown"
    """The attempt may have made a task and the look-up could not tell: a resend is unsafe."""
    PEER_UNAVAILABLE = "peer_unavailable"
    """The peer's circuit breaker is open: the attempt was not sent (`PeerUnavailable`)."""
    FAILOVER = "failover"
    """Nothing was sent over this interface of the agent; the call goes on over its next one
    (see `a2a_client_errors.integrations.a2a_sdk.guard_client`)."""
    JOURNAL = "journal"
    """The journal could not record the send (`a2a_client_errors.journal`): nothing was sent."""

    def __str__(self) -> str:
        return self.value


_DECISION_FIELDS = (
    "action",
    "reason",
    "retry_after",
    "error",
    "operation",
    "attempt",
    "delay",
    "give_up",
)


_new: Final = object.__new__
"""Bound once (see ``errors``)."""


class _DecisionSlots:
    """The storage of `Decision`, filled without the frozen guard (see ``CallError``)."""

    __slots__ = _DECISION_FIELDS


@dataclass(frozen=True, init=False)
class Decision(_DecisionSlots):
    """What to do about one outcome of a call.

    Attributes:
        action: what to do.
        reason: the canonical reason (a `Reason`), an unknown reason as the peer sent it, or
            None (no call error, or no signal named a reason).
        retry_after: the server's hint in seconds, or None.
        error: the normalised call error, or None when the call returned a result.
        operation: the A2A operation the call was (``"SendMessage"``, ...), if known.
        attempt: which attempt of the call this outcome came from (1 for the first), when the
            decision was made inside a retry loop.
        delay: for a retry that will happen, the seconds to wait before it.
        give_up: for a retry that will not happen, why.

    """

    action: Action
    reason: Reason | str | None
    retry_after: float | None
    error: CallError | None
    operation: str | None
    attempt: int | None
    delay: float | None
    give_up: GiveUp | None

    __slots__ = ()

    def __new__(  # noqa: PLR0917 (keywords for people, positions for the hot path)
        cls,
        action: Action,
        reason: Reason | str | None = None,
        retry_after: float | None = None,
        error: CallError | None = None,
        operation: str | None = None,
        attempt: int | None = None,
        delay: float | None = None,
        give_up: GiveUp | None = None,
    ) -> Decision:
        """A new record, filled, then frozen."""
        return _decided(cls, action, reason, retry_after, error, operation, attempt, delay, give_up)

    def __reduce__(self) -> tuple[type[Decision], tuple[Any, ...]]:
        """Pickle and copy by the fields."""
        return (type(self), tuple(getattr(self, name) for name in _DECISION_FIELDS))

    def given_up(self, why: GiveUp) -> Decision:
        """A copy of a retry that will not happen, and why (no delay)."""
        return Decision(
            self.action,
            self.reason,
            self.retry_after,
            self.error,
            self.operation,
            self.attempt,
            None,
            why,
        )

    @property
    def will_retry(self) -> bool:
        """Whether the call will be sent again (after ``delay`` seconds)."""
        return self.action is Action.RETRY and self.give_up is None and self.delay is not None

    @property
    def delivery(self) -> Delivery | None:
        """What reached the agent (`Delivery`), or None when the call returned a result."""
        error = self.error
        return None if error is None else error.delivery

    @property
    def hint(self) -> str | None:
        """What the decision suggests beyond its action, for humans (None: nothing more).

        METHOD_NOT_FOUND answering an A2A 1.0 method: the peer likely speaks an older A2A,
        whose methods had other names (``message/send``, ``tasks/get``).
        """
        if self.reason is Reason.METHOD_NOT_FOUND and self.operation in A2A_OPERATIONS:
            return OLDER_A2A_HINT
        return None

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
            "attempt": self.attempt,
            "delay": self.delay,
            "give_up": None if self.give_up is None else self.give_up.value,
            "delivery": None if self.error is None else self.error.delivery.value,
            "hint": self.hint,
            "error": None if self.error is None else self.error.to_dict(),
        }

    def __str__(self) -> str:
        head = f"{self.action.value}"
        if self.reason is not None:
            head += f" {escape(str(self.reason))}"
        if self.operation:
            head += f" on {escape(self.operation)}"
        if self.give_up is not None:
            head += f" (gave up: {self.give_up.value})"
        elif self.delay is not None:
            head += f" (in {self.delay:.3f}s)"
        if self.error is not None:
            head += f": {self.error}"
        hint = self.hint
        return f"{head} ({hint})" if hint else head


assert tuple(f.name for f in fields(Decision)) == _DECISION_FIELDS  # noqa: S101


def _decided(  # noqa: PLR0917 (the fields in order: one call, no keywords, on the hot path)
    cls: type[Decision],
    action: Action,
    reason: Reason | str | None,
    retry_after: float | None,
    error: CallError | None,
    operation: str | None,
    attempt: int | None,
    delay: float | None,
    give_up: GiveUp | None,
) -> Decision:
    """``cls(...)`` with every field in order, built with no class call, as `CallError`s are."""
    self: Any = _new(_DecisionSlots)
    self.action = action
    self.reason = reason
    self.retry_after = retry_after
    self.error = error
    self.operation = operation
    self.attempt = attempt
    self.delay = delay
    self.give_up = give_up
    self.__class__ = cls  # from here on, frozen
    return self  # type: ignore[no-any-return]


OLDER_A2A_HINT: Final = (
    "the peer likely speaks an older A2A (0.3 named its methods message/send, tasks/get, ...): "
    "read its card's protocolVersion, and send the version it speaks"
)
"""`Decision.hint` of a METHOD_NOT_FOUND that answers an A2A 1.0 method."""

_VERDICTS: Final = {
    Delivery.NOT_SENT: ("not sent", "nothing reached the agent"),
    Delivery.NOT_PROCESSED: ("not processed", "refused: nothing was done"),
    Delivery.UNKNOWN: ("unknown", "it may have been processed"),
}


def delivery_note(delivery: Delivery, action: Action, operation: str | None = None) -> str:
    """What reached the agent, in words, and what it means for a retry.

    A retry is no blind resend: a failure that did not reach the agent's processing is safe
    to resend, and a send (or a call not known to be something else) whose delivery is
    unknown is looked up before it is resent (docs/exactly-once.md).

    Args:
        delivery: the decision's `Delivery`.
        action: the decision's action: a retry says what a resend does.
        operation: the A2A operation, if known.

    Returns:
        ``"<verdict> - <meaning>"``, such as ``"not processed - safe to resend"``.

    """
    verdict, meaning = _VERDICTS[delivery]
    if action is Action.RETRY:
        if delivery is not Delivery.UNKNOWN:
            meaning = "safe to resend"
        elif operation is None or operation in WORK_OPERATIONS:
            meaning += ": a send is looked up before it is resent"
        else:
            meaning += f"; {operation} makes no task, so it is sent again"
    return f"{verdict} - {meaning}"


OK: Decision = Decision(Action.OK)

_SUCCEEDED: Final[dict[tuple[str | None, int | None], Decision]] = {
    (name, attempt): OK
    if name is None and attempt is None
    else Decision(Action.OK, operation=name, attempt=attempt)
    for name in (None, *sorted(A2A_OPERATIONS))
    for attempt in (None, 1)
}


def succeeded(operation: str | None = None, attempt: int | None = None) -> Decision:
    """The ``ok`` decision of a result: one made once for an A2A operation's first attempt.

    Decisions are frozen, so every success of a GetTask on its first attempt may share one
    (a success a hook observes makes none); any other is made anew.
    """
    found = _SUCCEEDED.get((operation, attempt))
    return Decision(Action.OK, operation=operation, attempt=attempt) if found is None else found


_DEFAULT_BACKOFF = Backoff()

# Bound once: an attribute of an enum class is looked up through its metaclass, which costs
# more than the rest of a decision's lookups together.
_AUTH_KIND: Final = ErrorKind.AUTH
_ACTION_AUTH: Final = Action.AUTH
_ACTION_REPORT: Final = Action.REPORT
_REASON_ACTIONS: Final = dict(REASON_ACTIONS)
_Response: Final = httpx.Response


def default_action(error: CallError) -> Action:
    """The table's action for a call error, before any override.

    Auth first; then the reason (unknown reasons are reported); with no reason, the transport
    failure, the gRPC code or the HTTP status; with nothing at all, report.
    """
    if error.kind is _AUTH_KIND:
        return _ACTION_AUTH
    reason = error.reason
    if reason is not None:
        return _REASON_ACTIONS.get(reason, _ACTION_REPORT)
    if error.transport is not None:
        return TRANSPORT_ACTIONS[error.transport]
    if error.grpc_status is not None:
        action = grpc_code_action(error.grpc_status)
        # An error that claims status OK contradicts itself: surface it, never call it ok.
        return Action.REPORT if action is Action.OK else action
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
        backoff: the delay schedule of retries.
        max_retry_after: the longest server hint honoured, in seconds; a longer one gives up.

    """

    actions: Mapping[str, Action] = field(default_factory=lambda: MappingProxyType({}))
    operation_actions: Mapping[tuple[str, str], Action] = field(
        default_factory=lambda: MappingProxyType({})
    )
    limits: Limits = DEFAULT_LIMITS
    backoff: Backoff = _DEFAULT_BACKOFF
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retry_after < 0:
            msg = "max_retry_after must be >= 0"
            raise ValueError(msg)

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

    def with_backoff(
        self,
        backoff: Backoff | None = None,
        *,
        max_retry_after: float | None = None,
    ) -> Policy:
        """A copy with another backoff schedule and/or another cap on server hints."""
        return replace(
            self,
            backoff=backoff or self.backoff,
            max_retry_after=self.max_retry_after if max_retry_after is None else max_retry_after,
        )

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

    def decide(
        self,
        error: CallError | None,
        *,
        operation: str | None = None,
        attempt: int | None = None,
        max_attempts: int | None = None,
        time_left: float | None = None,
        budget_left: float | None = None,
        draw: float = 1.0,
        unsafe: GiveUp | None = None,
        action: Action | None = None,
    ) -> Decision:
        """The decision for a normalised outcome (None: the call returned a result).

        Without ``attempt`` the decision only names the action. With it (inside a retry
        loop), a retry is planned: it gets a ``delay``, or a ``give_up`` saying why not.

        Args:
            error: the normalised outcome.
            operation: the A2A operation, for per-operation overrides.
            attempt: the attempt that produced ``error`` (1 for the first).
            max_attempts: how many attempts the call may make in all.
            time_left: seconds until the call's deadline (None: no deadline).
            budget_left: the retry tokens left for this peer (None: no budget).
            draw: a uniform random number in ``[0, 1)`` for the jitter (1.0: the ceiling).
            unsafe: a reason a resend would be unsafe, known to the caller.
            action: the action to take instead of the policy's own (an orchestrator's
                override); a retry is planned as any other.

        """
        if error is None:
            return succeeded(operation, attempt)
        if action is None:
            action = self.action_for(error, operation)
        if action is not Action.RETRY or attempt is None:
            return Decision(action, error.reason, error.retry_after, error, operation, attempt)
        give_up: GiveUp | None = unsafe
        delay: float | None = None
        hint = error.retry_after
        if give_up is None and max_attempts is not None and attempt >= max_attempts:
            give_up = GiveUp.ATTEMPTS
        if give_up is None and hint is not None and hint > self.max_retry_after:
            give_up = GiveUp.HINT_TOO_LONG
        if give_up is None:
            delay = self.backoff.delay(attempt, draw)
            if hint is not None and hint > delay:
                delay = hint
            if time_left is not None and delay >= time_left:
                give_up, delay = GiveUp.DEADLINE, None
        if give_up is None and budget_left is not None and budget_left <= 0:
            give_up, delay = GiveUp.BUDGET, None
        return Decision(action, error.reason, hint, error, operation, attempt, delay, give_up)

    def classify(self, x: object, *, operation: str | None = None) -> Decision:
        """Normalise ``x`` and decide, in one step."""
        return self.decide(
            normalize(x, limits=self.limits, operation=operation), operation=operation
        )


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
    if policy is not None:
        return policy.classify(x, operation=operation)
    # The table's own policy has no overrides: the default action is the action.
    if operation is None and type(x) is _Response:
        # `normalize` of a response, one call shorter (with no operation, nothing follows).
        try:
            error = from_response(x, DEFAULT_LIMITS)
        except Exception as exc:  # the promise: never raise, whatever the input
            error = defeated(x, exc)
    else:
        error = normalize_into(x, DEFAULT_LIMITS, operation, None)
    if error is None:
        # `succeeded`, its most common case first: no look-up on classify's success path
        return OK if operation is None else succeeded(operation)
    reason = error.reason
    if reason is not None and error.kind is not _AUTH_KIND:  # `default_action`, inline
        action = _REASON_ACTIONS.get(reason, _ACTION_REPORT)
    else:
        action = default_action(error)
    # `_decided`, inline: the one record every classified error costs.
    decision: Any = _new(_DecisionSlots)
    decision.action = action
    decision.reason = reason
    decision.retry_after = error.retry_after
    decision.error = error
    decision.operation = operation
    decision.attempt = None
    decision.delay = None
    decision.give_up = None
    decision.__class__ = Decision  # from here on, frozen
    return decision  # type: ignore[no-any-return]
