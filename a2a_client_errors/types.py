"""The vocabulary beside the top level: enums, results, protocols and the door API's types.

Also here: the typed details of an error (``ErrorInfo``, ``BadRequest``, ...: what
``CallError.details`` holds and ``A2AError(extra_details=...)`` takes), the reasons table
(``ROWS``, ``row_for``, ``canonical_reason``), and the readers of the deduplication extension
an agent advertises in its card and marks on its answers (``read_dedupe_params``,
``read_dedupe_mark``), the operation table (``OPERATIONS_BY_NAME``, ``rest_request``), the
normaliser's lower doors (``normalize_body``, ``event_error``, ``EventReader``) and what a
door's look-up reads and asks (``TaskView``, ``GetTaskQuery``, ``ListTasksQuery``,
``CardQuery``, ``TaskPage``), with the two ways a door asks (``TaskReader``, one call per
query; ``ReadSteps``, its reads as effects, each ``Exchange`` carried out by the one sender the
door gives).

Import from here what the top level leaves out::

    from a2a_client_errors.types import ErrorKind, Source, CallShape

Nothing here is defined here: each name lives in the (private) module of its concept.
"""

from __future__ import annotations

from a2a_client_errors._breaker import (
    Admission,
    AsyncCircuitBreakerLike,
    BreakerFallbacksLike,
    BreakerState,
    BreakerTransitionsLike,
    CircuitBreakerLike,
    Verdict,
    peer_unwell,
)
from a2a_client_errors._card_claims import CardClaims
from a2a_client_errors._dedupe_card import (
    DEDUPLICATE_EXTENSION,
    DedupeParams,
    read_dedupe_mark,
    read_dedupe_params,
)
from a2a_client_errors._effects import Exchange
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
    CardQuery,
    Deduplicates,
    Found,
    GetTaskQuery,
    ListTasksQuery,
    LookupAllowance,
    LookupResult,
    NotFound,
    ReadSteps,
    Resolution,
    SentMessage,
    TaskPage,
    TaskReader,
    TaskView,
    Unresolved,
)
from a2a_client_errors._normalize import (
    DEFAULT_LIMITS,
    INVALID,
    Limits,
    event_error,
    normalize_body,
    stream_error,
)
from a2a_client_errors._operations import (
    BY_NAME,
    GRPC_SERVICE,
    STREAMING_OPERATIONS,
    Operation,
    rest_request,
)
from a2a_client_errors._policy import DEFAULT_POLICY, OLDER_A2A_HINT, default_action, delivery_note
from a2a_client_errors._reasons import (
    A2A_DOMAIN,
    A2A_OPERATIONS,
    ERROR_INFO_TYPE,
    INTERRUPTED_STATES,
    ROWS,
    TERMINAL_STATES,
    ReasonRow,
    TransportFailure,
    canonical_reason,
    row_for,
)
from a2a_client_errors._retry import (
    AsyncRetryBudgetLike,
    Backoff,
    BudgetFallbacksLike,
    BudgetRegistryLike,
    BudgetState,
    RefundableBudgetLike,
    RetryBudgetLike,
)
from a2a_client_errors._sse import EventReader, SSEError
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

NO_BODY = INVALID
"""What `normalize_body` gives as the body when it read none (not JSON, too large, a stream
of results, an exception): compare with ``is``."""
OPERATIONS_BY_NAME = BY_NAME
"""The A2A 1.0 operations (`Operation`: bindings, streaming, what creates work) by name."""

__all__ = [
    "A2A_DOMAIN",
    "A2A_OPERATIONS",
    "DEDUPLICATE_EXTENSION",
    "DEFAULT_LIMITS",
    "DEFAULT_POLICY",
    "ERROR_INFO_TYPE",
    "GRPC_SERVICE",
    "INTERRUPTED_STATES",
    "NO_BODY",
    "OLDER_A2A_HINT",
    "OPERATIONS_BY_NAME",
    "ROWS",
    "STREAMING_OPERATIONS",
    "TERMINAL_STATES",
    "Admission",
    "AgentFacts",
    "AsyncCircuitBreakerLike",
    "AsyncRetryBudgetLike",
    "AttemptCutShortError",
    "AttemptOutcome",
    "Backoff",
    "BadRequest",
    "BreakerFallbacksLike",
    "BreakerState",
    "BreakerTransitionsLike",
    "BudgetFallbacksLike",
    "BudgetRegistryLike",
    "BudgetState",
    "CallShape",
    "CardClaims",
    "CardQuery",
    "CircuitBreakerLike",
    "DebugInfo",
    "DedupeParams",
    "Deduplicates",
    "Detail",
    "ErrorInfo",
    "ErrorKind",
    "EventReader",
    "Exchange",
    "FieldViolation",
    "Found",
    "GetTaskQuery",
    "GuardedCall",
    "Help",
    "HelpLink",
    "Limits",
    "ListTasksQuery",
    "LocalizedMessage",
    "Lookup",
    "LookupAllowance",
    "LookupResult",
    "NotFound",
    "Onward",
    "Operation",
    "PreconditionFailure",
    "PreconditionViolation",
    "QuotaFailure",
    "QuotaViolation",
    "ReadSteps",
    "ReasonRow",
    "RefundableBudgetLike",
    "RequestInfo",
    "Resolution",
    "ResourceInfo",
    "RetryBudgetLike",
    "RetryInfo",
    "SSEError",
    "SentMessage",
    "Source",
    "TaskPage",
    "TaskReader",
    "TaskView",
    "TransportFailure",
    "UnknownDetail",
    "Unresolved",
    "Verdict",
    "WireShape",
    "canonical_reason",
    "default_action",
    "delivery_note",
    "escape",
    "event_error",
    "failure_for",
    "normalize_body",
    "operation_of",
    "peer_unwell",
    "read_dedupe_mark",
    "read_dedupe_params",
    "rest_request",
    "row_for",
    "stream_error",
]
