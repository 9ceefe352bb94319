"""The table: every A2A error, its code on each binding, and what to do about it.

One table, data not branches. Everything else in the package (the normaliser's lookups, the
default policy, the ``a2a-errors table`` command, the tests' completeness checks) derives from
the rows below.

Columns, per row:

* ``jsonrpc``: the JSON-RPC ``error.code`` (A2A §5.4, §9.5).
* ``grpc`` / ``http``: the gRPC status and HTTP status of A2A 1.0.1 (and HEAD).
* ``grpc_legacy`` / ``http_legacy``: the same in A2A 1.0.0, which the official TCK and a2a-java
  still follow (409, 415, 502, ``UNIMPLEMENTED``).
* ``problem_type``: the RFC 9457 ``type`` URI used before A2A 1.0 moved HTTP errors to
  ``google.rpc.Status`` (still shown in §6.4 and §6.5 of the spec).
* ``action``: the default decision.
* ``aliases``: other spellings of the same reason sent by real peers.

Rows with ``spec=True`` are the nine A2A errors; the others are reasons that real SDKs put in
``google.rpc.ErrorInfo`` with domain ``a2a-protocol.org`` although the spec does not define them
(a2a-python, a2a-go, a2a-rs), kept so that they are recognised rather than reported as unknown.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from a2a_client_errors._operations import OPERATIONS

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "A2A_DOMAIN",
    "A2A_JSONRPC_RANGE",
    "A2A_OPERATIONS",
    "ACTIVE_STATES",
    "ERROR_INFO_TYPE",
    "GRPC_CODES",
    "GRPC_NAMES",
    "INTERRUPTED_STATES",
    "JSONRPC_CODES",
    "NOT_PROCESSED_5XX",
    "NO_TASK_OPERATIONS",
    "PROBLEM_TYPES",
    "PROBLEM_TYPE_PREFIX",
    "REASON_ACTIONS",
    "RETRYABLE_HTTP_STATUSES",
    "ROWS",
    "SAID_5XX",
    "STATUS_ROWS",
    "TERMINAL_STATES",
    "TRANSPORT_ACTIONS",
    "UNKNOWN_3XX",
    "UNKNOWN_DELIVERY_REASONS",
    "Action",
    "Delivery",
    "Reason",
    "ReasonRow",
    "StatusRow",
    "TransportFailure",
    "canonical_reason",
    "canonical_task_state",
    "grpc_code_action",
    "grpc_reason",
    "http_status_action",
    "row_for",
    "status_delivery",
    "status_reason",
    "status_row",
]

A2A_DOMAIN = "a2a-protocol.org"
"""The ``google.rpc.ErrorInfo.domain`` of A2A errors (§9.5, §10.6, §11.6)."""

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
PROBLEM_TYPE_PREFIX = "https://a2a-protocol.org/errors/"


class Action(str, enum.Enum):
    """What a client should do about the outcome of a call.

    Attributes:
        OK: no call error; the result (a task, perhaps FAILED or REJECTED) is the answer.
        RETRY: resend the same request (same messageId) after a backoff.
        RECONCILE: the client's view of the task is stale; read the task (GetTask) and decide.
        DEGRADE: the peer lacks a capability; fall back (polling instead of streaming, ...).
        FIX_REQUEST: the request must change before it is sent again (version, extension,
            parameters, content type).
        REPORT: the peer broke the contract or sent something unknown; surface it.
        AUTH: credentials are missing or insufficient; refresh them once, never loop.

    """

    OK = "ok"
    RETRY = "retry"
    RECONCILE = "reconcile"
    DEGRADE = "degrade"
    FIX_REQUEST = "fix_request"
    REPORT = "report"
    AUTH = "auth"

    def __str__(self) -> str:
        return self.value


class Reason(str, enum.Enum):
    """The reasons this package knows, as the UPPER_SNAKE strings peers send.

    The first nine are the A2A errors (§5.4). The rest are reasons that real SDKs send in
    ``ErrorInfo`` with the A2A domain although the spec does not define them. Reasons that are
    neither are kept as plain strings, never forced into one of these.
    """

    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    TASK_NOT_CANCELABLE = "TASK_NOT_CANCELABLE"
    PUSH_NOTIFICATION_NOT_SUPPORTED = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    UNSUPPORTED_OPERATION = "UNSUPPORTED_OPERATION"
    CONTENT_TYPE_NOT_SUPPORTED = "CONTENT_TYPE_NOT_SUPPORTED"
    INVALID_AGENT_RESPONSE = "INVALID_AGENT_RESPONSE"
    EXTENDED_AGENT_CARD_NOT_CONFIGURED = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    EXTENSION_SUPPORT_REQUIRED = "EXTENSION_SUPPORT_REQUIRED"
    VERSION_NOT_SUPPORTED = "VERSION_NOT_SUPPORTED"
    PARSE_ERROR = "PARSE_ERROR"
    INVALID_REQUEST = "INVALID_REQUEST"
    METHOD_NOT_FOUND = "METHOD_NOT_FOUND"
    INVALID_PARAMS = "INVALID_PARAMS"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    UNAUTHORIZED = "UNAUTHORIZED"
    TASK_GENERATION_MISMATCH = "TASK_GENERATION_MISMATCH"

    def __str__(self) -> str:
        return self.value

    @property
    def row(self) -> ReasonRow:
        """The row of the table for this reason."""
        return _BY_REASON[self]

    @property
    def is_a2a(self) -> bool:
        """Whether this is one of the nine errors the A2A spec defines."""
        return _BY_REASON[self].spec

    @property
    def is_draft(self) -> bool:
        """Whether this error comes from the next revision of A2A (draft 1.1), not 1.0."""
        return _BY_REASON[self].draft


@dataclass(frozen=True, slots=True)
class ReasonRow:
    """One row of the table: a reason, its codes on every binding, and its default action."""

    reason: Reason
    error: str
    """The spec's (or the SDKs') name of the error, e.g. ``TaskNotFoundError``."""
    spec: bool
    jsonrpc: int | None
    grpc: str | None
    http: int | None
    grpc_legacy: str | None
    http_legacy: int | None
    action: Action
    aliases: tuple[str, ...] = ()
    note: str = ""
    draft: bool = False
    """Whether the row comes from the draft of A2A 1.1 (the ``dev-1.1`` branch), not 1.0."""

    @property
    def problem_type(self) -> str | None:
        """The RC-era problem+json ``type`` URI (only the nine A2A errors have one)."""
        if not self.spec:
            return None
        return PROBLEM_TYPE_PREFIX + self.reason.value.lower().replace("_", "-")


_A = Action
_R = Reason

# fmt: off
ROWS: tuple[ReasonRow, ...] = (
    # The nine A2A errors (§5.4; 1.0.0 columns from the v1.0.0 tag).
    ReasonRow(_R.TASK_NOT_FOUND, "TaskNotFoundError", True, -32001, "NOT_FOUND", 404,
              "NOT_FOUND", 404, _A.RECONCILE,
              note="unknown, inaccessible, expired or purged task"),
    ReasonRow(_R.TASK_NOT_CANCELABLE, "TaskNotCancelableError", True, -32002,
              "FAILED_PRECONDITION", 400, "FAILED_PRECONDITION", 409, _A.RECONCILE,
              aliases=("TASK_NOT_CANCELLABLE",), note="the task is already terminal"),
    ReasonRow(_R.PUSH_NOTIFICATION_NOT_SUPPORTED, "PushNotificationNotSupportedError", True,
              -32003, "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400, _A.DEGRADE,
              aliases=("PUSH_NOTIFICATIONS_NOT_SUPPORTED",), note="poll instead"),
    ReasonRow(_R.UNSUPPORTED_OPERATION, "UnsupportedOperationError", True, -32004,
              "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400, _A.DEGRADE,
              aliases=("OPERATION_NOT_SUPPORTED",),
              note="streaming, subscribe-to-terminal, extended card, ..."),
    ReasonRow(_R.CONTENT_TYPE_NOT_SUPPORTED, "ContentTypeNotSupportedError", True, -32005,
              "INVALID_ARGUMENT", 400, "INVALID_ARGUMENT", 415, _A.FIX_REQUEST,
              aliases=("UNSUPPORTED_CONTENT_TYPE", "INCOMPATIBLE_CONTENT_TYPES"),
              note="a part's media type is not accepted"),
    ReasonRow(_R.INVALID_AGENT_RESPONSE, "InvalidAgentResponseError", True, -32006,
              "INTERNAL", 500, "INTERNAL", 502, _A.REPORT,
              note="the peer broke the contract"),
    ReasonRow(_R.EXTENDED_AGENT_CARD_NOT_CONFIGURED, "ExtendedAgentCardNotConfiguredError",
              True, -32007, "FAILED_PRECONDITION", 400, "FAILED_PRECONDITION", 400, _A.DEGRADE,
              aliases=("EXTENDED_CARD_NOT_CONFIGURED",
                       "AUTHENTICATED_EXTENDED_CARD_NOT_CONFIGURED"),
              note="use the public card"),
    ReasonRow(_R.EXTENSION_SUPPORT_REQUIRED, "ExtensionSupportRequiredError", True, -32008,
              "FAILED_PRECONDITION", 400, "FAILED_PRECONDITION", 400, _A.FIX_REQUEST,
              aliases=("EXTENSION_REQUIRED",), note="declare the extension in A2A-Extensions"),
    ReasonRow(_R.VERSION_NOT_SUPPORTED, "VersionNotSupportedError", True, -32009,
              "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400, _A.FIX_REQUEST,
              aliases=("UNSUPPORTED_VERSION", "PROTOCOL_VERSION_NOT_SUPPORTED"),
              note="negotiate A2A-Version from the card"),
    # Reasons real SDKs send with the A2A domain although the spec does not define them.
    ReasonRow(_R.PARSE_ERROR, "JSONParseError", False, -32700, "INVALID_ARGUMENT", 400,
              "INVALID_ARGUMENT", 400, _A.FIX_REQUEST, aliases=("JSON_PARSE", "JSON_PARSE_ERROR"),
              note="a2a-go; JSON-RPC standard code"),
    ReasonRow(_R.INVALID_REQUEST, "InvalidRequestError", False, -32600, "INVALID_ARGUMENT", 400,
              "INVALID_ARGUMENT", 400, _A.FIX_REQUEST, note="a2a-python; JSON-RPC standard code"),
    ReasonRow(_R.METHOD_NOT_FOUND, "MethodNotFoundError", False, -32601, "NOT_FOUND", 404,
              "UNIMPLEMENTED", 501, _A.FIX_REQUEST,
              note="also a version mismatch (a 1.0 method name on a 0.3 peer)"),
    ReasonRow(_R.INVALID_PARAMS, "InvalidParamsError", False, -32602, "INVALID_ARGUMENT", 400,
              "INVALID_ARGUMENT", 422, _A.FIX_REQUEST, note="a2a-python; a2a-java sends 422"),
    ReasonRow(_R.INTERNAL_ERROR, "InternalError", False, -32603, "INTERNAL", 500, "INTERNAL", 500,
              _A.RETRY, aliases=("SERVER_ERROR", "INTERNAL"), note="transient server failure"),
    ReasonRow(_R.UNKNOWN_ERROR, "UnknownError", False, None, "UNKNOWN", 500, "UNKNOWN", 500,
              _A.RETRY, note="a2a-python's fallback for unexpected exceptions"),
    ReasonRow(_R.RATE_LIMITED, "RateLimitedError", False, None, "RESOURCE_EXHAUSTED", 429,
              "RESOURCE_EXHAUSTED", 429, _A.RETRY,
              aliases=("RATE_LIMIT_EXCEEDED", "TOO_MANY_REQUESTS"), note="honour Retry-After"),
    ReasonRow(_R.UNAUTHENTICATED, "UnauthenticatedError", False, -31401, "UNAUTHENTICATED", 401,
              "UNAUTHENTICATED", 401, _A.AUTH, aliases=("UNAUTHENTICATED_ERROR",),
              note="a2a-go; missing or invalid credentials"),
    ReasonRow(_R.UNAUTHORIZED, "UnauthorizedError", False, -31403, "PERMISSION_DENIED", 403,
              "PERMISSION_DENIED", 403, _A.AUTH, aliases=("PERMISSION_DENIED", "FORBIDDEN"),
              note="a2a-go; credentials lack permission"),
    # Draft A2A 1.1 (dev-1.1, A2A PR #1810): a write against a stale Task.generation.
    ReasonRow(_R.TASK_GENERATION_MISMATCH, "TaskGenerationMismatchError", False, -32010,
              "ABORTED", 409, "ABORTED", 409, _A.RECONCILE, draft=True,
              aliases=("GENERATION_MISMATCH",),
              note="draft 1.1: the task changed; re-read it, never resend as is"),
)
# fmt: on

_BY_REASON: Mapping[Reason, ReasonRow] = MappingProxyType({row.reason: row for row in ROWS})

REASON_ACTIONS: Mapping[str, Action] = MappingProxyType(
    {row.reason.value: row.action for row in ROWS}
)
"""Default action per known reason."""

JSONRPC_CODES: Mapping[int, Reason] = MappingProxyType(
    {row.jsonrpc: row.reason for row in ROWS if row.jsonrpc is not None}
)
"""JSON-RPC ``error.code`` -> reason: the nine A2A codes, the standard codes, Go's auth codes."""

A2A_JSONRPC_RANGE = range(-32099, -32000)
"""Codes the spec reserves for A2A errors (-32099..-32001); only -32001..-32009 are assigned."""

PROBLEM_TYPES: Mapping[str, Reason] = MappingProxyType(
    {row.problem_type: row.reason for row in ROWS if row.problem_type is not None}
)

REASON_NAMES: Final[dict[str, Reason]] = {
    **{alias: row.reason for row in ROWS for alias in row.aliases},
    **{row.error.upper(): row.reason for row in ROWS},
    **{row.reason.value: row.reason for row in ROWS},
}
"""Every exact name of a reason (canonical, aliases, the spec's error names), to its `Reason`.

`canonical_reason` reads it first; the normaliser reads it directly for a reason as it came.
A plain dict, not a read-only view (it is read for every reason classified): never change it.
"""

GRPC_CODES: Mapping[str, int] = MappingProxyType(
    {
        "OK": 0,
        "CANCELLED": 1,
        "UNKNOWN": 2,
        "INVALID_ARGUMENT": 3,
        "DEADLINE_EXCEEDED": 4,
        "NOT_FOUND": 5,
        "ALREADY_EXISTS": 6,
        "PERMISSION_DENIED": 7,
        "RESOURCE_EXHAUSTED": 8,
        "FAILED_PRECONDITION": 9,
        "ABORTED": 10,
        "OUT_OF_RANGE": 11,
        "UNIMPLEMENTED": 12,
        "INTERNAL": 13,
        "UNAVAILABLE": 14,
        "DATA_LOSS": 15,
        "UNAUTHENTICATED": 16,
    }
)
"""``google.rpc.Code`` names and numbers."""

GRPC_NAMES: Mapping[int, str] = MappingProxyType({v: k for k, v in GRPC_CODES.items()})

_GRPC_ACTIONS: Mapping[str, Action] = MappingProxyType(
    {
        "OK": _A.OK,
        # The caller (or a proxy acting for it) gave up: nothing automatic to do.
        "CANCELLED": _A.REPORT,
        "UNKNOWN": _A.RETRY,
        "INVALID_ARGUMENT": _A.FIX_REQUEST,
        "DEADLINE_EXCEEDED": _A.RETRY,
        "NOT_FOUND": _A.RECONCILE,
        "ALREADY_EXISTS": _A.FIX_REQUEST,
        "PERMISSION_DENIED": _A.AUTH,
        "RESOURCE_EXHAUSTED": _A.RETRY,
        # Six A2A reasons share it (1.0.1): alone it names none, and resending won't help.
        "FAILED_PRECONDITION": _A.FIX_REQUEST,
        # A concurrency conflict: gRPC's own guidance is to retry at a higher level, after
        # reading again (draft 1.1's TASK_GENERATION_MISMATCH); never resent as it is.
        "ABORTED": _A.RECONCILE,
        "OUT_OF_RANGE": _A.FIX_REQUEST,
        # 1.0.0's code for three "not supported" errors: fall back.
        "UNIMPLEMENTED": _A.DEGRADE,
        "INTERNAL": _A.RETRY,
        "UNAVAILABLE": _A.RETRY,
        "DATA_LOSS": _A.REPORT,
        "UNAUTHENTICATED": _A.AUTH,
    }
)

_STATUS_REASONS: Mapping[int, Reason] = MappingProxyType(
    {
        # Only statuses that name one reason in either table: 404 (both), 409 and 415 (1.0.0).
        404: _R.TASK_NOT_FOUND,
        409: _R.TASK_NOT_CANCELABLE,
        415: _R.CONTENT_TYPE_NOT_SUPPORTED,
        401: _R.UNAUTHENTICATED,
        403: _R.UNAUTHORIZED,
    }
)

_GRPC_REASONS: Mapping[str, Reason] = MappingProxyType(
    {
        "NOT_FOUND": _R.TASK_NOT_FOUND,
        # Draft 1.1's code for a stale generation: alone it is a conflict to re-read, never
        # a call to resend as it is.
        "ABORTED": _R.TASK_GENERATION_MISMATCH,
        "UNAUTHENTICATED": _R.UNAUTHENTICATED,
        "PERMISSION_DENIED": _R.UNAUTHORIZED,
    }
)


class TransportFailure(str, enum.Enum):
    """What went wrong below A2A, for errors of kind ``transport`` raised as exceptions."""

    CONNECT = "connect"
    """The connection could not be made (refused, DNS, unreachable)."""
    TIMEOUT = "timeout"
    """Connect, read, write or pool timeout."""
    NETWORK = "network"
    """The connection broke, or the peer spoke broken HTTP."""
    TLS = "tls"
    """The peer's certificate was not trusted: retrying will not help."""
    CONFIG = "config"
    """The request cannot be sent as built (bad URL, unsupported scheme, redirect loop)."""
    DECODING = "decoding"
    """The response's content encoding was corrupt."""
    ENDPOINT = "endpoint"
    """The URL answers as no A2A endpoint: a web server's own 404 or 405 page (no A2A body)
    for a call that has no task to lose. The URL or route is wrong."""
    UNKNOWN = "unknown"
    """An exception this package does not recognise as a transport failure."""

    def __str__(self) -> str:
        return self.value


TRANSPORT_ACTIONS: Mapping[TransportFailure, Action] = MappingProxyType(
    {
        TransportFailure.CONNECT: _A.RETRY,
        TransportFailure.TIMEOUT: _A.RETRY,
        TransportFailure.NETWORK: _A.RETRY,
        TransportFailure.TLS: _A.REPORT,
        TransportFailure.CONFIG: _A.FIX_REQUEST,
        TransportFailure.DECODING: _A.REPORT,
        TransportFailure.ENDPOINT: _A.FIX_REQUEST,
        TransportFailure.UNKNOWN: _A.REPORT,
    }
)


class Delivery(str, enum.Enum):
    """What reached the agent: whether a failed call may have been processed.

    The same messageId makes a resend *recognisable*, not *safe*: no official A2A server
    deduplicates by it. Only a failure that provably did not reach the agent's processing may
    be resent blindly; an unknown one must first be looked up (see `a2a_client_errors._lookup`).

    A status with no A2A reason behind it reads by `status_delivery`. A retry hint
    (``Retry-After``, ``retry-after-ms``, ``RetryInfo``, ``grpc-retry-pushback-ms``) or an error
    body the server wrote itself makes only 503 and gRPC UNAVAILABLE *not processed*: those
    two say "not now" by their meaning, and the hint or the body says who said it. It never
    turns 500, 502 or 504 into *not processed*: a hint says when to come back, not what was
    done, and those three may come after the work.
    """

    NOT_SENT = "not_sent"
    """Nothing reached the agent: DNS, connection refused, connect or pool timeout, TLS
    handshake, a request that could not be built, a gRPC channel that could not connect
    before the call was made (`a2a_client_errors.integrations.grpc`), or a call the agent
    card refused."""
    NOT_PROCESSED = "not_processed"
    """It reached the agent (or a hop), which refused it: an A2A error answer, a 4xx (429
    included), 501, 505, a 503 the server says itself (with a retry hint, or with an error
    body of its own: a ``google.rpc.Status`` or JSON-RPC error), a gRPC status that says the
    call was not carried out, UNAVAILABLE with details or a retry pushback."""
    UNKNOWN = "unknown"
    """It may have been processed: the answer was lost (read or write error or timeout, a
    connection closed before the answer), a hop's 500/502/504 (with a retry hint too), a bare
    503 (no hint, no error body of its own: a proxy may answer it after forwarding the
    request, as Envoy does for an upstream reset before headers), a 301/302/303 redirect (the
    answer to a POST already carried out), an internal error, gRPC UNKNOWN, INTERNAL,
    DEADLINE_EXCEEDED, CANCELLED, DATA_LOSS, UNAVAILABLE with neither details nor pushback (what
    grpcio reports for a connection reset mid-call, and what a server stopping mid-call
    sends), or a success that could not be read."""

    def __str__(self) -> str:
        return self.value


_D = Delivery

UNKNOWN_DELIVERY_REASONS: frozenset[Reason] = frozenset(
    {_R.INTERNAL_ERROR, _R.UNKNOWN_ERROR, _R.INVALID_AGENT_RESPONSE}
)
"""Reasons an agent may send after it did (part of) the work: the outcome is unknown."""

_GRPC_DELIVERY: Mapping[str, Delivery] = MappingProxyType(
    {
        "OK": _D.UNKNOWN,  # an error that claims OK contradicts itself
        "CANCELLED": _D.UNKNOWN,
        "UNKNOWN": _D.UNKNOWN,
        "DEADLINE_EXCEEDED": _D.UNKNOWN,
        "INTERNAL": _D.UNKNOWN,
        "DATA_LOSS": _D.UNKNOWN,
        # Unknown unless the server says it (see `status_delivery`): grpcio's own for a reset
        # connection, and a server's as it stops with calls under way, carry nothing.
        "UNAVAILABLE": _D.UNKNOWN,
    }
)

# Bound once: an enum class's attribute is looked up through its metaclass, slowly, and these
# are read for every status judged.
_UNKNOWN: Final = _D.UNKNOWN
_NOT_PROCESSED: Final = _D.NOT_PROCESSED

NOT_PROCESSED_5XX: frozenset[int] = frozenset({501, 505})
"""Server-error statuses that say by their HTTP meaning alone that the request was not
carried out."""

SAID_5XX: frozenset[int] = frozenset({503})
"""Server-error statuses that are *not processed* when the server says them itself (a retry
hint, or an error body of its own) and *unknown* when bare: a proxy answers 503 for an
upstream that reset after the request was forwarded (Envoy's "upstream connect error or
disconnect/reset before headers")."""

UNKNOWN_3XX: frozenset[int] = frozenset({301, 302, 303})
"""Redirects that may answer a POST already carried out (post/redirect/get): unknown. 307 and
308 ask for the same request again elsewhere; 300 offers choices: not processed."""


def status_delivery(
    http_status: int | None,
    grpc_status: str | None,
    *,
    has_details: bool = False,
    hinted: bool = False,
    answered: bool = False,
) -> Delivery:
    """What a status alone says reached the agent (no A2A reason behind it).

    Args:
        http_status: the HTTP status, if any.
        grpc_status: the gRPC status name, if any: a gRPC call's, or a ``google.rpc.Status``
            body's.
        has_details: whether ``google.rpc`` details came with it (a ``RetryInfo``, an
            ``ErrorInfo`` of another domain, ...): the server wrote them.
        hinted: whether the answer carried a retry hint (``Retry-After``, ``retry-after-ms``,
            ``RetryInfo``, ``grpc-retry-pushback-ms``).
        answered: whether the server wrote the error body itself in the binding's shape (a
            JSON-RPC error, a ``{"error": Status}`` body), rather than a hop's page, no body,
            or a gRPC status relayed as it was (``{"code": 14, ...}``, a transcoder's).

    Returns:
        *Not processed* for a refusal, *unknown* when the work may have been done: see
        `Delivery`. When both statuses are given, the more cautious decides, except that a
        2xx (gRPC answers errors on 200) says nothing.

    """
    said = has_details or hinted or answered
    if grpc_status is not None:
        if grpc_status == "UNAVAILABLE" and said:
            by_grpc = _NOT_PROCESSED
        else:
            by_grpc = _GRPC_DELIVERY.get(grpc_status, _NOT_PROCESSED)
        if by_grpc is _UNKNOWN or http_status is None or 200 <= http_status < 300:
            return by_grpc
    if http_status is None or 200 <= http_status < 300:
        return _UNKNOWN
    if http_status >= 500:
        if http_status in NOT_PROCESSED_5XX or (said and http_status in SAID_5XX):
            return _NOT_PROCESSED
        return _UNKNOWN
    return _UNKNOWN if http_status in UNKNOWN_3XX else _NOT_PROCESSED


NO_TASK_OPERATIONS: frozenset[str] = frozenset(op.name for op in OPERATIONS if not op.names_task)
"""Operations that name no task in their route: a web server's 404 for one cannot be
TASK_NOT_FOUND (there is no task to lose), whatever the status table says."""


@dataclass(frozen=True, slots=True)
class StatusRow:
    """How a status with no A2A body behind it reads when the operation it answers is known.

    Attributes:
        status: the HTTP status.
        operations: the operations the row is for.
        reason: the reason it names (None: no A2A reason; see ``transport``).
        transport: the failure it is instead, if it is no A2A answer at all.
        note: why, for the docs and ``a2a-errors table``.

    """

    status: int
    operations: frozenset[str]
    reason: Reason | None
    transport: TransportFailure | None
    note: str


A2A_OPERATIONS: Final[frozenset[str]] = frozenset(op.name for op in OPERATIONS)
"""The operations of A2A 1.0, by their JSON-RPC (and gRPC) names."""

# fmt: off
STATUS_ROWS: tuple[StatusRow, ...] = (
    StatusRow(404, NO_TASK_OPERATIONS, None, TransportFailure.ENDPOINT,
              "no task to lose: a web server's page for a wrong URL or route"),
    StatusRow(405, A2A_OPERATIONS, None, TransportFailure.ENDPOINT,
              "the route exists, not for this method: a wrong URL or binding"),
    StatusRow(409, frozenset({"CancelTask"}), _R.TASK_NOT_CANCELABLE, None,
              "the 1.0.0 column: only CancelTask can be refused this way"),
    StatusRow(409, A2A_OPERATIONS - {"CancelTask"}, _R.TASK_GENERATION_MISMATCH, None,
              "the draft 1.1 column: a stale task generation; re-read the task"),
)
# fmt: on
"""Statuses read against the operation they answer; the rows apply only to answers that carry
no A2A body (a reason from ErrorInfo, a code or a type always wins)."""

_STATUS_ROW_INDEX: Mapping[tuple[int, str], StatusRow] = MappingProxyType(
    {(row.status, operation): row for row in STATUS_ROWS for operation in row.operations}
)


def status_row(status: int, operation: str) -> StatusRow | None:
    """The operation-aware reading of a status with no A2A body, if the table has one."""
    return _STATUS_ROW_INDEX.get((status, operation))


RETRYABLE_HTTP_STATUSES: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses that mean "try again later" when no A2A reason says otherwise. A bare 502 is
usually a gateway, not INVALID_AGENT_RESPONSE."""


def http_status_action(status: int) -> Action:
    """The default action for an HTTP status with no A2A reason behind it."""
    if 200 <= status < 300:
        return _A.OK
    if status in (401, 403):
        return _A.AUTH
    if status in RETRYABLE_HTTP_STATUSES:
        return _A.RETRY
    reason = _STATUS_REASONS.get(status)
    if reason is not None:
        return _BY_REASON[reason].action
    if status == 501:
        return _A.DEGRADE
    if 400 <= status < 500 or 300 <= status < 400:
        # A final redirect or another client error: the request (or its URL) must change.
        return _A.FIX_REQUEST
    return _A.REPORT


def grpc_code_action(name: str) -> Action:
    """The default action for a gRPC status (by name) with no A2A reason behind it."""
    return _GRPC_ACTIONS.get(name, _A.REPORT)


def status_reason(status: int) -> Reason | None:
    """The reason an HTTP status names on its own in either table, if it names exactly one."""
    return _STATUS_REASONS.get(status)


def grpc_reason(name: str) -> Reason | None:
    """The reason a gRPC status names on its own in either table, if it names exactly one."""
    return _GRPC_REASONS.get(name)


def row_for(reason: str) -> ReasonRow | None:
    """The table row of a reason (canonical or alias), or None when the reason is unknown."""
    found = REASON_NAMES.get(reason)
    if found is None:
        canonical = canonical_reason(reason)
        found = canonical if isinstance(canonical, Reason) else None
    return None if found is None else _BY_REASON[found]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-.:/]+")


def canonical_reason(reason: str) -> Reason | str:
    """Canonicalise a reason string: aliases, case, separators and class names.

    ``"TASK_NOT_FOUND"``, ``"task-not-found"``, ``"TaskNotFoundError"`` and
    ``"a2a.TaskNotFoundError"`` all give `Reason.TASK_NOT_FOUND`. A reason this package does
    not know is returned as sent (stripped), never forced into a known one.
    """
    found = REASON_NAMES.get(reason)
    if found is not None:
        return found
    text = reason.strip()
    # A qualified class name (Java "io.a2a.spec.TaskNotFoundError") keeps its last segment.
    tail = text.rsplit(".", 1)[-1] if "." in text and " " not in text else text
    key = _SEPARATORS.sub("_", _CAMEL.sub("_", tail)).strip("_").upper()
    found = REASON_NAMES.get(key)
    if found is None and key.endswith("_ERROR"):
        found = REASON_NAMES.get(key[: -len("_ERROR")])
    if found is None and key.endswith("_EXCEPTION"):
        found = REASON_NAMES.get(key[: -len("_EXCEPTION")])
    return found if found is not None else text


# Task states (§4.1.3). JSON encodes the 1.0 enum names; 0.3 used lowercase kebab strings.
TERMINAL_STATES: frozenset[str] = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)
"""States a task never leaves; resending the message would create a second task."""

INTERRUPTED_STATES: frozenset[str] = frozenset(
    {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}
)
"""States where the task waits for the client; AUTH_REQUIRED is a task state, not an auth error."""

ACTIVE_STATES: frozenset[str] = frozenset({"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"})

_LEGACY_STATES: Mapping[str, str] = MappingProxyType(
    {
        "submitted": "TASK_STATE_SUBMITTED",
        "working": "TASK_STATE_WORKING",
        "completed": "TASK_STATE_COMPLETED",
        "failed": "TASK_STATE_FAILED",
        "canceled": "TASK_STATE_CANCELED",
        "cancelled": "TASK_STATE_CANCELED",
        "input-required": "TASK_STATE_INPUT_REQUIRED",
        "rejected": "TASK_STATE_REJECTED",
        "auth-required": "TASK_STATE_AUTH_REQUIRED",
        "unknown": "TASK_STATE_UNSPECIFIED",
    }
)


def canonical_task_state(state: str) -> str:
    """The 1.0 name of a task state, accepting 0.3's kebab strings (``"input-required"``)."""
    if state.startswith("TASK_STATE_"):
        return state
    return _LEGACY_STATES.get(state.lower(), state)
