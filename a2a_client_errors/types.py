"""The vocabulary beside the top level: enums, results, protocols and the door API's types.

Import from here what the top level leaves out::

    from a2a_client_errors.types import ErrorKind, Source, CallShape

Nothing here is defined here: each name lives in the (private) module of its concept.
"""

from __future__ import annotations

from a2a_client_errors._breaker import (
    Admission,
    BreakerState,
    CircuitBreakerLike,
    Verdict,
    peer_unwell,
)
from a2a_client_errors._card_claims import CardClaims
from a2a_client_errors._engine import (
    AttemptCutShortError,
    AttemptOutcome,
    CallShape,
    GuardedCall,
    Lookup,
    Onward,
    failure_for,
)
from a2a_client_errors._errors import ErrorKind, Source, WireShape, escape
from a2a_client_errors._lookup import (
    AgentFacts,
    Deduplicates,
    Found,
    LookupAllowance,
    LookupResult,
    NotFound,
    Resolution,
    SentMessage,
    TaskReader,
    Unresolved,
)
from a2a_client_errors._normalize import DEFAULT_LIMITS, Limits
from a2a_client_errors._policy import default_action
from a2a_client_errors._reasons import (
    A2A_DOMAIN,
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    TransportFailure,
)
from a2a_client_errors._retry import (
    Backoff,
    BudgetRegistryLike,
    BudgetState,
    RetryBudgetLike,
)
from a2a_client_errors._transport import operation_of

__all__ = [
    "A2A_DOMAIN",
    "DEFAULT_LIMITS",
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "Admission",
    "AgentFacts",
    "AttemptCutShortError",
    "AttemptOutcome",
    "Backoff",
    "BreakerState",
    "BudgetRegistryLike",
    "BudgetState",
    "CallShape",
    "CardClaims",
    "CircuitBreakerLike",
    "Deduplicates",
    "ErrorKind",
    "Found",
    "GuardedCall",
    "Limits",
    "Lookup",
    "LookupAllowance",
    "LookupResult",
    "NotFound",
    "Onward",
    "Resolution",
    "RetryBudgetLike",
    "SentMessage",
    "Source",
    "TaskReader",
    "TransportFailure",
    "Unresolved",
    "Verdict",
    "WireShape",
    "default_action",
    "escape",
    "failure_for",
    "operation_of",
    "peer_unwell",
]
