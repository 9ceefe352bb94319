"""Reason-first error handling for A2A (Agent2Agent) clients.

Normalise any wire shape a peer sends into one `CallError`, decide what to do about it with a
`Policy`, and carry the decision out with a `Guard`.

    >>> from a2a_client_errors import classify
    >>> body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
    >>> decision = classify(body)
    >>> decision.action.value, decision.reason.value
    ('reconcile', 'TASK_NOT_FOUND')

The top level holds what a user types. The rest sits in a few namespaces: `types` (the
vocabulary: enums, results, protocols, the door API's types), `hooks` (`Hook`, its events, the
call record), `server`, `integrations` (``a2a_sdk``, ``grpc``, ``redis``), `instrumentation`,
`testing` and `probe`. Every other module is private.
"""

from __future__ import annotations

from a2a_client_errors._breaker import CircuitBreaker
from a2a_client_errors._engine import recording
from a2a_client_errors._errors import CallError
from a2a_client_errors._failures import (
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
from a2a_client_errors._guard import Guard
from a2a_client_errors._lookup import ExactlyOnce
from a2a_client_errors._normalize import normalize
from a2a_client_errors._outcomes import TaskOutcome, task_outcome
from a2a_client_errors._policy import Action, Decision, GiveUp, Policy, classify
from a2a_client_errors._reasons import Delivery, Reason
from a2a_client_errors._retry import BudgetRegistry, RetryBudget
from a2a_client_errors._streaming import aiter_events, iter_events
from a2a_client_errors._transport import AsyncGuardTransport, GuardTransport
from a2a_client_errors.hooks import CallRecord, Hook
from a2a_client_errors.server import A2AError, to_grpc, to_http, to_jsonrpc

__version__ = "0.1.0.dev0"

__all__ = [
    "A2AError",
    "Action",
    "AsyncGuardTransport",
    "AuthFailed",
    "BudgetExhausted",
    "BudgetRegistry",
    "CallError",
    "CallFailed",
    "CallRecord",
    "CircuitBreaker",
    "DeadlineExceeded",
    "Decision",
    "DegradeNeeded",
    "Delivery",
    "ExactlyOnce",
    "FixRequestNeeded",
    "GiveUp",
    "Guard",
    "GuardTransport",
    "Hook",
    "OutcomeUnknown",
    "PeerUnavailable",
    "Policy",
    "Reason",
    "ReconcileNeeded",
    "ReportNeeded",
    "RetryAfterTooLong",
    "RetryBudget",
    "RetryExhausted",
    "TaskOutcome",
    "aiter_events",
    "classify",
    "iter_events",
    "normalize",
    "recording",
    "task_outcome",
    "to_grpc",
    "to_http",
    "to_jsonrpc",
]
