"""Reason-first error handling for A2A (Agent2Agent) clients.

Normalise any wire shape a peer sends into one `CallError`, decide what to do about it with a
`Policy`, and carry the decision out with a `Guard`.

    >>> from a2a_client_errors import classify
    >>> body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
    >>> decision = classify(body)
    >>> decision.action.value, decision.reason.value
    ('reconcile', 'TASK_NOT_FOUND')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a_client_errors.breaker import (
    Admission,
    BreakerState,
    BreakerTransition,
    CircuitBreaker,
    CircuitBreakerLike,
    Verdict,
    peer_unwell,
)
from a2a_client_errors.errors import CallError, ErrorKind, Source, WireShape, escape
from a2a_client_errors.failures import (
    AuthFailed,
    BudgetExhausted,
    CallFailed,
    DeadlineExceeded,
    DegradeNeeded,
    FixRequestNeeded,
    OutcomeUnknown,
    PeerUnavailable,
    ReconcileNeeded,
    ReportNeeded,
    RetryAfterTooLong,
    RetryExhausted,
)
from a2a_client_errors.guard import (
    CallShape,
    FailoverEvent,
    Guard,
    GuardEvent,
    Hook,
    TaskOutcomeEvent,
    UnknownOutcomeEvent,
)
from a2a_client_errors.lookup import (
    ExactlyOnce,
    Found,
    NotFound,
    Resolution,
    SentMessage,
    Unresolved,
)
from a2a_client_errors.normalize import DEFAULT_LIMITS, Limits, normalize
from a2a_client_errors.outcomes import TaskOutcome, task_outcome
from a2a_client_errors.policy import Action, Decision, GiveUp, Policy, classify, default_action
from a2a_client_errors.reasons import (
    A2A_DOMAIN,
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    Delivery,
    Reason,
    TransportFailure,
)
from a2a_client_errors.retry import (
    Backoff,
    BudgetFallback,
    BudgetRegistry,
    BudgetState,
    RetryBudget,
)
from a2a_client_errors.server import (
    A2AError,
    from_failure,
    internal_error,
    to_grpc,
    to_http,
    to_jsonrpc,
)
from a2a_client_errors.transport import AsyncGuardTransport, GuardTransport

if TYPE_CHECKING:
    from a2a_client_errors.integrations.redis import RedisCircuitBreaker, RedisRetryBudget

__version__ = "0.1.0.dev0"

__all__ = [
    "A2A_DOMAIN",
    "DEFAULT_LIMITS",
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "A2AError",
    "Action",
    "Admission",
    "AsyncGuardTransport",
    "AuthFailed",
    "Backoff",
    "BreakerState",
    "BreakerTransition",
    "BudgetExhausted",
    "BudgetFallback",
    "BudgetRegistry",
    "BudgetState",
    "CallError",
    "CallFailed",
    "CallShape",
    "CircuitBreaker",
    "CircuitBreakerLike",
    "DeadlineExceeded",
    "Decision",
    "DegradeNeeded",
    "Delivery",
    "ErrorKind",
    "ExactlyOnce",
    "FailoverEvent",
    "FixRequestNeeded",
    "Found",
    "GiveUp",
    "Guard",
    "GuardEvent",
    "GuardTransport",
    "Hook",
    "Limits",
    "NotFound",
    "OutcomeUnknown",
    "PeerUnavailable",
    "Policy",
    "Reason",
    "ReconcileNeeded",
    "RedisCircuitBreaker",
    "RedisRetryBudget",
    "ReportNeeded",
    "Resolution",
    "RetryAfterTooLong",
    "RetryBudget",
    "RetryExhausted",
    "SentMessage",
    "Source",
    "TaskOutcome",
    "TaskOutcomeEvent",
    "TransportFailure",
    "UnknownOutcomeEvent",
    "Unresolved",
    "Verdict",
    "WireShape",
    "__version__",
    "classify",
    "default_action",
    "escape",
    "from_failure",
    "internal_error",
    "normalize",
    "peer_unwell",
    "task_outcome",
    "to_grpc",
    "to_http",
    "to_jsonrpc",
]


def __getattr__(name: str) -> Any:
    """Optional names, imported on first use (``RedisRetryBudget``, ``RedisCircuitBreaker``)."""
    if name in {"RedisRetryBudget", "RedisCircuitBreaker"}:
        from a2a_client_errors.integrations import redis  # noqa: PLC0415 (lazy by design)

        value = globals()[name] = getattr(redis, name)
        return value
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
