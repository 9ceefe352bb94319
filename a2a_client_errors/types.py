"""The vocabulary beside the top level: enums, results, protocols and the door API's types.

Also here: the typed details of an error (``ErrorInfo``, ``BadRequest``, ...: what
``CallError.details`` holds and ``A2AError(extra_details=...)`` takes), the reasons table
(``ROWS``, ``row_for``, ``canonical_reason``), and the readers of the deduplication extension
an agent advertises in its card and marks on its answers (``read_dedupe_params``,
``read_dedupe_mark``).

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
from a2a_client_errors._dedupe_card import DedupeParams, read_dedupe_mark, read_dedupe_params
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
    ROWS,
    TERMINAL_STATES,
    ReasonRow,
    TransportFailure,
    canonical_reason,
    row_for,
)
from a2a_client_errors._retry import (
    Backoff,
    BudgetRegistryLike,
    BudgetState,
    RetryBudgetLike,
)
from a2a_client_errors._transport import operation_of
from a2a_client_errors._wire import (
    BadRequest,
    DebugInfo,
    Detail,
    ErrorInfo,
    FieldViolation,
    Help,
    HelpLink,
    LocalizedMessage,
    PreconditionFailure,
    PreconditionViolation,
    QuotaFailure,
    QuotaViolation,
    RequestInfo,
    ResourceInfo,
    RetryInfo,
    UnknownDetail,
)

__all__ = [
    "A2A_DOMAIN",
    "DEFAULT_LIMITS",
    "INTERRUPTED_STATES",
    "ROWS",
    "TERMINAL_STATES",
    "Admission",
    "AgentFacts",
    "AttemptCutShortError",
    "AttemptOutcome",
    "Backoff",
    "BadRequest",
    "BreakerState",
    "BudgetRegistryLike",
    "BudgetState",
    "CallShape",
    "CardClaims",
    "CircuitBreakerLike",
    "DebugInfo",
    "DedupeParams",
    "Deduplicates",
    "Detail",
    "ErrorInfo",
    "ErrorKind",
    "FieldViolation",
    "Found",
    "GuardedCall",
    "Help",
    "HelpLink",
    "Limits",
    "LocalizedMessage",
    "Lookup",
    "LookupAllowance",
    "LookupResult",
    "NotFound",
    "Onward",
    "PreconditionFailure",
    "PreconditionViolation",
    "QuotaFailure",
    "QuotaViolation",
    "ReasonRow",
    "RequestInfo",
    "Resolution",
    "ResourceInfo",
    "RetryBudgetLike",
    "RetryInfo",
    "SentMessage",
    "Source",
    "TaskReader",
    "TransportFailure",
    "UnknownDetail",
    "Unresolved",
    "Verdict",
    "WireShape",
    "canonical_reason",
    "default_action",
    "escape",
    "failure_for",
    "operation_of",
    "peer_unwell",
    "read_dedupe_mark",
    "read_dedupe_params",
    "row_for",
]
