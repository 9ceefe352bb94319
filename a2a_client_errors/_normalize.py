"""Any wire shape in, one `CallError` (or None) out: pure, and never raises.

`normalize` accepts what an A2A client meets when a call goes wrong:

* an ``httpx.Response`` of any status, whose body may be a JSON-RPC envelope, a
  ``google.rpc.Status`` JSON body, RFC 9457 problem details, a pre-1.0 body, an SSE stream,
  HTML from a proxy, or nothing;
* a ``grpc.RpcError`` (its status, and the details in the ``grpc-status-details-bin`` trailer);
* an httpx transport exception, ``httpx.HTTPStatusError``, or an a2a-sdk client exception;
* an already parsed JSON body, such as the ``data`` of one SSE event.

It returns None when there is no call error: the result (a task, perhaps FAILED) is the answer.

Signals are read reason first (see ``docs`` and `Source`): auth statuses, then an ErrorInfo with
domain ``a2a-protocol.org`` anywhere in the details, then the JSON-RPC code, then a problem
``type`` URI, then a legacy body, then the HTTP status or gRPC code against both spec tables.
The message is never parsed.
"""

from __future__ import annotations

import contextlib
import json
import math
import socket
import ssl
import time
from dataclasses import dataclass, replace
from email.utils import parsedate_to_datetime
from itertools import islice
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import httpx

from a2a_client_errors._errors import (
    CallError,
    CallErrorSlots,
    ErrorKind,
    Source,
    WireShape,
    build_call_error,
    kept_versions,
)
from a2a_client_errors._foreign_codes import data_reason, data_retry_after, read_generation
from a2a_client_errors._httpx import header_triples, read_content
from a2a_client_errors._operations import OPERATIONS, ResultShape, rest_operation
from a2a_client_errors._parsing import INVALID, envelope, parse_json
from a2a_client_errors._reasons import (
    A2A_DOMAIN,
    ERROR_INFO_TYPE,
    GRPC_CODES,
    GRPC_NAMES,
    JSONRPC_CODES,
    NO_TASK_OPERATIONS,
    REASON_NAMES,
    UNKNOWN_DELIVERY_REASONS,
    Delivery,
    Reason,
    TransportFailure,
    canonical_reason,
    grpc_reason,
    status_delivery,
    status_reason,
    status_row,
)
from a2a_client_errors._redirects import (
    REFUSED,
    crosses_origin,
    followed_elsewhere,
    location_of,
)
from a2a_client_errors._sse import (
    DEFAULT_MAX_EVENT,
    DEFAULT_MAX_LINE,
    EventReader,
    SSEError,
    SSEParser,
    read_events,
)
from a2a_client_errors._wire import (
    MAX_ITEMS,
    MAX_TEXT,
    RETRY_INFO_TYPE,
    cut,
    parse_duration,
    string_map,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

__all__ = [
    "DEFAULT_LIMITS",
    "INVALID",
    "Limits",
    "NotSentError",
    "PeerAnswerError",
    "SSEParser",
    "StreamHead",
    "UnreadableAnswerError",
    "event_error",
    "event_reader",
    "no_event_error",
    "normalize",
    "normalize_body",
    "stream_error",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what `normalize` reads from a peer; everything past them is ignored.

    One more is fixed: a body nested deeper than 200 levels (``parsing.MAX_DEPTH``) is read as
    one that is not JSON.

    Attributes:
        max_body: bytes of a body that are parsed at all. A larger error body is read by its
            status alone; a larger success body is not inspected (and gives None).
        max_message: characters of a peer's message kept (the rest is cut, marked ``…``).
        max_details: entries of a details array that are read.
        max_metadata: entries of an ErrorInfo's metadata that are kept.
        max_sse_events: events of an SSE body that are read.
        max_sse_line: characters of one line of an event stream; a longer line stops the
            reading (INVALID_AGENT_RESPONSE).
        max_sse_event: characters of one event of an event stream (its lines together); a
            longer event stops the reading.
        max_sse_stream: bytes of an event stream read by `iter_events` / `aiter_events`
            before it is stopped (None: as long as it runs; memory is bounded by the two
            caps above whatever the length).

    """

    max_body: int = 32 * 1024 * 1024
    max_message: int = 4096
    max_details: int = 64
    max_metadata: int = 64
    max_sse_events: int = 10_000
    max_sse_line: int = DEFAULT_MAX_LINE
    max_sse_event: int = DEFAULT_MAX_EVENT
    max_sse_stream: int | None = None


DEFAULT_LIMITS: Final = Limits()

_AUTH_STATUSES: Final = frozenset({401, 403})
_AUTH_GRPC: Final = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
_AUTH_REASONS: Final = frozenset({Reason.UNAUTHENTICATED, Reason.UNAUTHORIZED})
_CODE_REASONS: Final = dict(JSONRPC_CODES)
_GRPC_NAME: Final = max(map(len, GRPC_CODES))
"""The longest gRPC code name: a longer ``status`` is none, and is never hashed to find out."""
_GRPC_STATUS_NAMES: Final = frozenset(GRPC_CODES)
"""The gRPC code names as a set: a read-only view is slower to ask, once per answer."""
_INVALID: Final = INVALID
_NO_METADATA: Final[Mapping[str, str]] = MappingProxyType({})
_STATUS_DETAILS_KEY: Final = "grpc-status-details-bin"
_PUSHBACK_KEY: Final = "grpc-retry-pushback-ms"
_SSE_SLICE: Final = 64 * 1024
_Response: Final = httpx.Response

# The enum members the hot path names, bound once: an attribute of an enum class is looked up
# through its metaclass (EnumType defines __getattr__), about 60 ns a name on CPython 3.11,
# where a module global costs a few.
_KIND_PROTOCOL: Final = ErrorKind.PROTOCOL
_KIND_AUTH: Final = ErrorKind.AUTH
_KIND_TRANSPORT: Final = ErrorKind.TRANSPORT
_SOURCE_INFO: Final = Source.ERROR_INFO
_SOURCE_CODE: Final = Source.JSONRPC_CODE
_SOURCE_PROBLEM: Final = Source.PROBLEM_TYPE
_SOURCE_LEGACY: Final = Source.LEGACY_BODY
_SOURCE_STATUS: Final = Source.STATUS_FALLBACK
_SOURCE_INVALID: Final = Source.INVALID_RESPONSE
_WIRE_JSONRPC: Final = WireShape.JSONRPC
_WIRE_STATUS: Final = WireShape.STATUS_JSON
_WIRE_BARE: Final = WireShape.BARE_STATUS
_UNKNOWN: Final = Delivery.UNKNOWN
_NOT_PROCESSED: Final = Delivery.NOT_PROCESSED
_MISMATCH: Final = Reason.TASK_GENERATION_MISMATCH
_new: Final = object.__new__


def normalize(
    x: object, *, limits: Limits = DEFAULT_LIMITS, operation: str | None = None
) -> CallError | None:
    """Reduce whatever a call produced to one `CallError`, or None when there is none.

    Args:
        x: an ``httpx.Response``, a ``grpc.RpcError``, an exception (httpx, a2a-sdk, OS), a
            parsed JSON body (``dict``/``list``), a raw body (``bytes``/``str``), or a
            ``google.rpc.Status`` message. Anything else is a result, and gives None.
        limits: caps on what is read from the peer.
        operation: the A2A operation the call was. When given, a successful JSON answer is
            also checked against the shape that operation returns (a Task for GetTask, a Task
            or a Message for SendMessage, ...): one that breaks it is INVALID_AGENT_RESPONSE.
            A status with no A2A body is read against it, and so is a bare -32010: only a
            send can be draft 1.1's TASK_GENERATION_MISMATCH (see `_foreign_codes`).

    Returns:
        The normalised call error, or None when ``x`` is a result (a task in any state,
        FAILED and REJECTED included, is a result).

    Never raises: an input that defeats every reader gives a `CallError` whose policy
    action is ``report``.

    """
    return normalize_into(x, limits, operation, None)


def normalize_body(
    x: object, *, limits: Limits = DEFAULT_LIMITS, operation: str | None = None
) -> tuple[CallError | None, object]:
    """`normalize`, and the JSON value of the body it read: for a caller that reads both.

    The body is parsed once, here: reading the result of a successful answer after
    classifying it costs no second parse.

    Returns:
        The call error (or None), and the parsed body: ``x`` itself for a parsed body (a
        ``dict`` or ``list``), else what the bytes parsed to; for an SSE stream, the data of
        the event that carried the error; or `INVALID` when no JSON body was read (a stream
        of results, a body past ``limits.max_body``, bytes that are not JSON, an exception).

    """
    kept: list[object] = []
    error = normalize_into(x, limits, operation, kept)
    return error, kept[0] if kept else INVALID


def normalize_into(
    x: object, limits: Limits, operation: str | None, keep: list[object] | None
) -> CallError | None:
    """`normalize`; the JSON body it parses, if it parses one, is appended to ``keep``."""
    try:
        if isinstance(x, _Response):
            found = from_response(x, limits, operation, keep)
        else:
            found = _dispatch(x, limits, operation, keep)
        if found is None or operation is None:
            return found
        if found.source is _SOURCE_STATUS:
            if found.wire is _WIRE_BARE and found.http_status is not None:
                return _against(found, found.http_status, operation)
        elif found.reason is _MISMATCH:
            # -32010 alone answering what draft 1.1's mismatch cannot answer (`_foreign_codes`).
            return read_generation(found, operation)
        return found
    except Exception as exc:  # the promise: never raise, whatever the input
        if keep:
            keep.clear()
        return defeated(x, exc)


def defeated(x: object, exc: Exception) -> CallError:
    """What `normalize` gives for an input whose reading raised ``exc`` (a bug, or a trap)."""
    if isinstance(x, BaseException):
        return _unreadable(x)
    return CallError(
        kind=ErrorKind.PROTOCOL,
        reason=None,
        source=Source.INVALID_RESPONSE,
        wire=WireShape.INVALID,
        message=f"unreadable input ({type(exc).__name__})",
    )


def _unreadable(exc: BaseException) -> CallError:
    """An exception that defeats its reader is no proof of a call error: it is not one.

    It is judged as any exception of unknown kind (a bug, the caller's own): the Guard lets
    it propagate as it is, rather than report a peer for it.
    """
    name = type(exc).__qualname__
    module = type(exc).__module__
    return CallError(
        kind=ErrorKind.TRANSPORT,
        reason=None,
        source=Source.TRANSPORT,
        wire=WireShape.TRANSPORT,
        message=name,
        exception=name if module == "builtins" else f"{module}.{name}",
        transport=TransportFailure.UNKNOWN,
    )


def _text(exc: BaseException) -> str:
    """``str(exc)``, or "" when its ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:
        return ""


def _dispatch(
    x: object, limits: Limits, operation: str | None = None, keep: list[object] | None = None
) -> CallError | None:
    """Every form of a body is one input: a parsed one, bytes and text get the same checks."""
    if isinstance(x, dict | list):
        parsed: object = x
    elif isinstance(x, BaseException):
        return _from_exception(x, limits)
    elif isinstance(x, bytes | bytearray | memoryview | str):
        raw = x.encode("utf-8", "surrogatepass") if isinstance(x, str) else bytes(x)
        parsed = _parse_json(raw, limits) if raw.strip() else _INVALID
        if parsed is _INVALID:
            if b"data:" in raw:
                return _sse(raw, limits, keep)
            return _invalid("the body is not JSON")
    elif _is_status_proto(x):
        return _from_status_proto(x, limits, http_status=None, pushback=None)
    else:
        return None
    if keep is not None:
        keep.append(parsed)
    found = _from_body(parsed, limits)
    if found is not None or operation is None:
        return found
    return _shaped(operation, parsed)


def _against(error: CallError, status: int, operation: str) -> CallError:
    """A status with no A2A body, read against the operation it answers (`status_row`)."""
    row = status_row(status, operation)
    if row is None:
        return error
    if row.transport is not None:
        return _endpoint(status, operation, error.wire, error.retry_after, row.transport)
    return CallError(
        ErrorKind.PROTOCOL,
        row.reason,
        Source.STATUS_AND_OPERATION,
        error.wire,
        http_status=status,
        message=error.message,
        retry_after=error.retry_after,
    )


def _endpoint(
    status: int,
    operation: str | None,
    wire: WireShape,
    retry_after: float | None,
    transport: TransportFailure = TransportFailure.ENDPOINT,
) -> CallError:
    """A status that says the URL answers as no A2A endpoint (`TransportFailure.ENDPOINT`).

    With the operation known, the status was read against it (``status_and_operation``);
    without, by the status and the body's shape alone (``status_fallback``).
    """
    return CallError(
        ErrorKind.TRANSPORT,
        None,
        Source.STATUS_FALLBACK if operation is None else Source.STATUS_AND_OPERATION,
        wire,
        http_status=status,
        message=f"{operation or 'the call'} was answered {status} with no A2A body: a wrong "
        "URL or route (no A2A endpoint there), not a missing task",
        retry_after=retry_after,
        transport=transport,
    )


# --- bodies ---------------------------------------------------------------------------------


def _parse_json(raw: bytes, limits: Limits) -> object:
    """Parse JSON strictly as UTF-8, once (`parse_json`), or return `INVALID`."""
    if len(raw) > limits.max_body:
        return _INVALID
    return parse_json(raw)


def _from_body(
    body: object, limits: Limits, http_status: int | None = None, hint: float | None = None
) -> CallError | None:
    """The call error a parsed JSON body carries, or None when it carries none.

    The envelope says which family the error is: a JSON-RPC error object (in its envelope, or
    alone), a ``google.rpc.Status`` (the HTTP+JSON ``{"error": Status}``, or one a hop relays
    at the top level as it got it), a problem details body (`_problem`), or a legacy body. The
    first two are read here, in one step; every family hands its signals to `_build`, the one
    precedence.
    """
    if type(body) is not dict:
        if isinstance(body, list):
            # A JSON-RPC batch: the first error in it.
            for item in body[: limits.max_details]:
                if isinstance(item, dict) and isinstance(item.get("error"), dict):
                    return _from_body(item, limits, http_status, hint)
            return None
        if not isinstance(body, dict):
            return None
    error = body.get("error")
    code: Any
    relayed = False
    if "jsonrpc" in body or ("id" in body and ("result" in body or "error" in body)):
        has_result = "result" in body
        if not isinstance(error, dict) or (has_result and body["result"] is not None):
            if has_result and error is None:
                return None
            what = "both result and error" if has_result else "neither result nor a valid error"
            return _invalid(f"the JSON-RPC response has {what}", http_status, hint)
        code = error.get("code")
        jsonrpc = True
    elif isinstance(error, dict):
        code = error.get("code")
        jsonrpc = type(code) is int and code < 0  # a JSON-RPC error object outside its envelope
    elif isinstance(error, str):
        legacy = _canonical(error)
        if isinstance(legacy, Reason):
            return _build(
                WireShape.LEGACY,
                limits,
                http_status=http_status,
                legacy=legacy,
                message=body.get("message"),
                retry_after=hint,
            )
        return None
    else:
        code = body.get("code")
        numbered = type(code) is int and "message" in body
        if numbered and code < 0:
            error, jsonrpc = body, True  # a JSON-RPC error object alone
        elif numbered and ("details" in body or 0 < code <= _GRPC_LAST):
            # A Status at the top level is no binding's own answer: a transcoder relays the
            # gRPC status it got, as it got it (grpc-gateway writes ``{"code": 14, ...}``).
            error, jsonrpc, relayed = body, False, True
        elif "type" in body or "title" in body or ("status" in body and "detail" in body):
            return _problem(body, limits, http_status, hint)
        else:
            return None
    message = error.get("message")
    if jsonrpc:
        if type(code) is not int:
            code = None
        data = error.get("data")
        if data is not None and isinstance(data, list):
            return _build(_WIRE_JSONRPC, limits, http_status, None, code, message, data, hint)
        if data is None or not isinstance(data, dict):  # no data (the common case), or junk
            return _build(_WIRE_JSONRPC, limits, http_status, None, code, message, None, hint)
        if "@type" in data or "reason" in data:  # one detail, not in a list
            return _build(_WIRE_JSONRPC, limits, http_status, None, code, message, [data], hint)
        return _own_data(code, message, data, limits, http_status=http_status, hint=hint)
    # A google.rpc.Status in JSON: AIP-193 (``code`` is the HTTP status), or relayed (``code``
    # is the gRPC code, and its delivery the status's, as a gRPC call's: see `status_delivery`).
    name = error.get("status")
    grpc_status = (
        name
        if isinstance(name, str) and len(name) <= _GRPC_NAME and name in _GRPC_STATUS_NAMES
        else None
    )
    if type(code) is int:
        if relayed and code <= _GRPC_LAST:
            grpc_status = grpc_status or GRPC_NAMES.get(code)
        elif http_status is None and 100 <= code <= 599:
            http_status = code
    details = error.get("details")
    if not isinstance(details, list):
        details = None
    if relayed:
        return _build(
            _WIRE_STATUS,
            limits,
            http_status,
            grpc_status,
            None,
            message,
            details,
            hint,
            relayed=True,
        )
    return _build(_WIRE_STATUS, limits, http_status, grpc_status, None, message, details, hint)


def _own_data(
    code: int | None,
    message: object,
    data: dict[str, Any],
    limits: Limits,
    *,
    http_status: int | None,
    hint: float | None,
) -> CallError:
    """A JSON-RPC error whose ``data`` is an object of the server's own, not a detail.

    crewai's ``{"retry_after": 30}``: its hint, and the reason the server's table gives the
    code beside it (`_foreign_codes`).
    """
    delay = data_retry_after(data)
    if delay is not None:
        hint = delay if hint is None else max(hint, delay)
    by_data = data_reason(code, data)
    return _build(
        _WIRE_JSONRPC, limits, http_status, None, code, message, None, hint, code_reason=by_data
    )


_GRPC_LAST: Final = 16
"""The last gRPC status code (UNAUTHENTICATED): a relayed Status's ``code`` up to it is one."""


def _problem(
    body: dict[str, Any], limits: Limits, http_status: int | None, hint: float | None
) -> CallError | None:
    """RFC 9457 problem details, the RC-era A2A shape, and bodies naming an error class."""
    type_ = body.get("type")
    problem_reason: Reason | None = None
    legacy: Reason | None = None
    if isinstance(type_, str):
        uri = type_.strip().rstrip("/")
        if uri.startswith(("https://a2a-protocol.org/errors/", "http://a2a-protocol.org/errors/")):
            slug = uri.rsplit("/", 1)[-1]
            found = _canonical(slug)
            problem_reason = found if isinstance(found, Reason) else None
        elif "/" not in uri and ":" not in uri:
            # Python v0.3 {"type": "TaskNotFoundError"}: a class name, not a URI.
            found = _canonical(uri)
            legacy = found if isinstance(found, Reason) else None
    status = body.get("status")
    if http_status is None and type(status) is int and 100 <= status <= 599:
        http_status = status
    message = body.get("detail")
    if not isinstance(message, str) or not message:
        message = body.get("title") if isinstance(body.get("title"), str) else body.get("message")
    versions = body.get("supportedVersions")
    errors = body.get("errors")
    violations = (
        [
            {"field": e.get("field"), "description": e.get("message") or e.get("detail")}
            for e in errors[: limits.max_details]
            if isinstance(e, dict)
        ]
        if isinstance(errors, list)
        else []
    )
    raw_details = (
        [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}]
        if violations
        else None
    )
    if problem_reason is None and legacy is None and http_status is None:
        return None
    wire = WireShape.LEGACY if legacy is not None else WireShape.PROBLEM_JSON
    return _build(
        wire,
        limits,
        http_status=http_status,
        problem=problem_reason,
        legacy=legacy,
        message=message,
        raw_details=raw_details,
        retry_after=hint,
        supported_versions=(
            # The first strings, up to the cap: the rest of a long list is never walked.
            tuple(islice((v for v in versions if isinstance(v, str)), limits.max_details))
            if isinstance(versions, list)
            else ()
        ),
    )


# --- results -------------------------------------------------------------------------------


def _task_like(value: object) -> bool:
    """A Task: its ``id`` and its ``status`` with a ``state`` (1.0; 0.3 adds ``kind: "task"``)."""
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        return False
    status = value.get("status")
    return (
        isinstance(status, dict)
        and isinstance(status.get("state"), str)
        and ("kind" not in value or value["kind"] == "task")  # 0.3's Message is not one
    )


def _message_like(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("messageId"), str)
        and isinstance(value.get("parts"), list)
    )


def _send_result(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    if "task" in value or "message" in value:
        return _task_like(value.get("task")) != _message_like(value.get("message"))
    return _task_like(value) or _message_like(value)  # 0.3 answered with the object itself


_SHAPE_CHECKS: Final[dict[ResultShape, Callable[[object], bool]]] = {
    ResultShape.TASK_OR_MESSAGE: _send_result,
    ResultShape.TASK: _task_like,
    ResultShape.TASK_LIST: lambda v: isinstance(v, dict) and isinstance(v.get("tasks", []), list),
    ResultShape.AGENT_CARD: lambda v: isinstance(v, dict) and isinstance(v.get("name"), str),
    ResultShape.PUSH_CONFIG: lambda v: isinstance(v, dict),
}
"""The result shapes a successful answer is checked against. Not a stream (its events are
read one by one), nor a list of push configurations or an empty answer (0.3 answered them with
a bare array and with null)."""

_RESULT_SHAPES: Final = {
    op.name: (op.result.value, _SHAPE_CHECKS[op.result])
    for op in OPERATIONS
    if op.result in _SHAPE_CHECKS
}


def _checked(operation: str, body: dict[str, Any], status: int | None = None) -> CallError | None:
    """INVALID_AGENT_RESPONSE when a successful answer is not what ``operation`` returns."""
    shape = _RESULT_SHAPES.get(operation)
    if shape is None:
        return None
    payload = body["result"] if "jsonrpc" in body and "result" in body else body
    what, valid = shape
    if valid(payload):
        return None
    return _invalid(f"the answer to {operation} is not {what}", status)


def _shaped(operation: str, parsed: object, status: int | None = None) -> CallError | None:
    """`_checked` of a successful answer that carries no error, whatever JSON value it is.

    A JSON array or a scalar answers no operation whose result has a shape; a list that is
    not JSON (the events of a stream, as SDK objects) is left alone.
    """
    if isinstance(parsed, dict):
        return _checked(operation, parsed, status)
    shape = _RESULT_SHAPES.get(operation)
    if shape is None or (isinstance(parsed, list) and not _is_json(parsed)):
        return None
    return _invalid(f"the answer to {operation} is not {shape[0]}", status)


_JSON_ITEMS: Final = (dict, list, str, int, float, bool, type(None))


def _is_json(value: object) -> bool:
    """Whether a list is a JSON array (not, say, the events of a stream as SDK objects)."""
    return isinstance(value, list) and all(isinstance(item, _JSON_ITEMS) for item in value)


# --- the precedence -------------------------------------------------------------------------


def _build(  # noqa: PLR0915, PLR0917 (the precedence, in one place; positions for the hot path)
    wire: WireShape,
    limits: Limits,
    http_status: int | None = None,
    grpc_status: str | None = None,
    jsonrpc_code: int | None = None,
    message: object = None,
    raw_details: list[Any] | None = None,
    retry_after: float | None = None,
    problem: Reason | None = None,
    legacy: Reason | None = None,
    supported_versions: tuple[str, ...] = (),
    relayed: bool = False,
    code_reason: Reason | None = None,
) -> CallError:
    """Apply the reason-first precedence to the signals one error carries.

    Every wire family's reader ends here, each with what it found: the details (read here,
    for an ErrorInfo with the A2A domain and a RetryInfo), a JSON-RPC code, a problem
    ``type``, a legacy class name, an HTTP status, a gRPC code. Auth signals come first, then
    the ErrorInfo, the code, the problem type, the legacy name, and the status last.

    ``relayed``: the status was passed on by a hop, not written by the server (`_from_body`).
    ``code_reason``: the reason the JSON-RPC code names by the ``data`` beside it, when the
    table does not name one (`_foreign_codes.data_reason`).
    """
    details: tuple[dict[str, Any], ...] = ()
    info_reason: Reason | str | None = None
    domain: str | None = None
    metadata: Any = _NO_METADATA  # a Mapping[str, str] once read
    if raw_details:
        if len(raw_details) > limits.max_details:
            raw_details = raw_details[: limits.max_details]
        objects_only = True
        max_metadata = limits.max_metadata
        if max_metadata > MAX_ITEMS:  # noqa: PLR1730 (no call to min on the hot path)
            max_metadata = MAX_ITEMS  # what a record keeps, whatever the limit
        for raw in raw_details:
            if type(raw) is not dict and not isinstance(raw, dict):
                objects_only = False  # a string or a number is no detail: the record drops it
                continue
            type_url = raw.get("@type")
            if type_url == ERROR_INFO_TYPE or (type_url is None and "reason" in raw):
                # The first ErrorInfo with the A2A domain, wherever it stands in the list.
                if info_reason is None and raw.get("domain") == A2A_DOMAIN:
                    reason_text = raw.get("reason")
                    if isinstance(reason_text, str) and reason_text:
                        # `_canonical`, inline; a reason sent by its name is looked up first.
                        info_reason = (
                            (REASON_NAMES.get(reason_text) or canonical_reason(reason_text))
                            if len(reason_text) <= MAX_TEXT
                            else cut(reason_text.strip())
                        )
                        domain = A2A_DOMAIN
                        metadata = raw.get("metadata")
                        # A map of short strings within the caps (what servers send) is kept
                        # as parsed, shared with its detail: the test `string_map` passes
                        # whole, without its copy; any other map is rebuilt by it.
                        if type(metadata) is dict and len(metadata) <= max_metadata:
                            for key, item in metadata.items():
                                if (
                                    type(item) is not str
                                    or len(item) > MAX_TEXT
                                    or len(key) > MAX_TEXT
                                ):
                                    metadata = string_map(metadata, max_metadata)
                                    break
                        else:
                            metadata = string_map(metadata, max_metadata)
            elif type_url == RETRY_INFO_TYPE:
                delay = parse_duration(raw.get("retryDelay"))
                if delay is not None:
                    retry_after = delay if retry_after is None else max(retry_after, delay)
        if objects_only:
            details = tuple(raw_details)
        else:
            details = tuple(raw for raw in raw_details if isinstance(raw, dict))

    reason: Reason | str | None
    source: Source
    by_code = None if jsonrpc_code is None else _CODE_REASONS.get(jsonrpc_code)
    if by_code is None:
        by_code = code_reason
    if (
        http_status in _AUTH_STATUSES
        or info_reason in _AUTH_REASONS
        or by_code in _AUTH_REASONS
        or grpc_status in _AUTH_GRPC
    ):
        kind = _KIND_AUTH
        if info_reason in _AUTH_REASONS:
            reason, source = info_reason, _SOURCE_INFO
        elif by_code in _AUTH_REASONS:
            reason, source = by_code, _SOURCE_CODE
        else:
            reason = (
                status_reason(http_status)
                if http_status in _AUTH_STATUSES
                else grpc_reason(grpc_status or "")
            )
            source = _SOURCE_STATUS
    else:
        kind = _KIND_PROTOCOL
        if info_reason is not None:
            reason, source = info_reason, _SOURCE_INFO
        elif by_code is not None:
            reason, source = by_code, _SOURCE_CODE
        elif problem is not None:
            reason, source = problem, _SOURCE_PROBLEM
        elif legacy is not None:
            reason, source = legacy, _SOURCE_LEGACY
        else:
            reason = _status_reason(http_status, grpc_status)
            # A code outside the table decides nothing itself, but it is what the peer said.
            source = _SOURCE_CODE if jsonrpc_code is not None and reason is None else _SOURCE_STATUS
            if reason is None and wire is _WIRE_BARE:
                kind = _KIND_TRANSPORT
    if type(message) is not str or len(message) > limits.max_message:
        message = _message(message, limits)
    if relayed and source is _SOURCE_STATUS:
        delivery = status_delivery(
            http_status, grpc_status, has_details=bool(details), hinted=retry_after is not None
        )
    elif type(reason) is Reason and source is not _SOURCE_STATUS:
        # The agent (or a hop speaking A2A) answered with an error it meant (`_delivery_of`).
        delivery = _UNKNOWN if reason in UNKNOWN_DELIVERY_REASONS else _NOT_PROCESSED
    else:
        return build_call_error(
            CallError,
            kind,
            reason,
            source,
            wire,
            jsonrpc_code,
            http_status,
            grpc_status,
            message,
            domain,
            metadata,
            details,
            retry_after,
            supported_versions,
            None,
            None,
            None,  # derived from the record's fields (`errors._delivery_of`)
        )
    if supported_versions:
        supported_versions = kept_versions(supported_versions)
    # `build_call_error`, inline: every value here is within the record's caps.
    self: Any = _new(CallErrorSlots)
    self.kind = kind
    self.reason = reason
    self.source = source
    self.wire = wire
    self.jsonrpc_code = jsonrpc_code
    self.http_status = http_status
    self.grpc_status = grpc_status
    self.message = message
    self.domain = domain
    self.metadata = metadata
    self.raw_details = details
    self.retry_after = retry_after
    self.supported_versions = supported_versions
    self.exception = None
    self.transport = None
    self.delivery = delivery
    self.location = None
    self.__class__ = CallError  # from here on, frozen
    return self  # type: ignore[no-any-return]


def _canonical(text: str) -> Reason | str:
    """`canonical_reason` of a peer's text; a text past `MAX_TEXT` is kept as sent, cut.

    A known reason is a short name, and the record keeps no more than `MAX_TEXT` characters
    of an unknown one: reading a 30 MB string through the case and separator rules (or only
    hashing it, for a set) would cost many times its parse. The cut is the record's own.
    """
    return canonical_reason(text) if len(text) <= MAX_TEXT else cut(text.strip())


def _status_reason(http_status: int | None, grpc_status: str | None) -> Reason | None:
    if http_status is not None:
        found = status_reason(http_status)
        if found is not None:
            return found
    return grpc_reason(grpc_status) if grpc_status is not None else None


def _message(value: object, limits: Limits) -> str:
    if not isinstance(value, str):
        return ""
    if len(value) > limits.max_message:
        return value[: limits.max_message] + "…"
    return value


def _invalid(
    why: str, http_status: int | None = None, retry_after: float | None = None
) -> CallError:
    """A success response that breaks the protocol: the client is the one that notices."""
    return CallError(
        kind=ErrorKind.PROTOCOL,
        reason=Reason.INVALID_AGENT_RESPONSE,
        source=Source.INVALID_RESPONSE,
        wire=WireShape.INVALID,
        http_status=http_status,
        message=why,
        retry_after=retry_after,
    )


# --- httpx ----------------------------------------------------------------------------------


def from_response(
    response: httpx.Response,
    limits: Limits,
    operation: str | None = None,
    keep: list[object] | None = None,
) -> CallError | None:
    """`normalize` of an ``httpx.Response``; the JSON body it parses is appended to ``keep``.

    Raises whatever a hostile input makes it raise: `normalize_into` is the caller that never
    raises.
    """
    if response.history:
        # An httpx client followed redirects: an answer from another origin is not the agent's.
        carried = followed_elsewhere(response)
        if carried is not None:
            return _redirected(carried, limits, _FOLLOWED_ELSEWHERE)
    status = response.status_code
    family = status // 100
    ok = family == 2  # 200 <= status < 300, in fewer steps
    if family == 3 and (REFUSED in response.extensions or crosses_origin(response)):
        # A redirect to another origin: whatever its body says, the call was not served here.
        return _redirected(response, limits, response.reason_phrase)
    body = read_content(response)
    if body is None:
        # A stream nobody has read: its events are classified one by one, as they come.
        return None if ok else _bare(response, limits, "")
    if not body:
        if not ok:
            return _bare(response, limits, "")
        if status in (204, 205) or _request_method(response) == "DELETE":
            return None
        return _invalid("the success response has an empty body", status, _hint(response))
    size = len(body)
    if size > limits.max_body:
        # Too large to read: an error is known by its status, a success is not inspected.
        return None if ok else _bare(response, limits, "")
    # JSON bodies start with { or [; sniffing spares a header lookup on the hot path.
    if body[0] in _JSON_FIRST or body.lstrip()[:1] in _JSON_STARTS:
        if ok and size >= _ENVELOPE_FROM and operation is None and keep is None:
            # Nothing but its error is kept of a 2xx body: its envelope may stand for it. Not
            # for one whose head names an error: an error is read faster by parsing it whole.
            head = (
                envelope(body)
                if body[0] == _BRACE and body.find(b'"error"', 0, _ERROR_WITHIN) == -1
                else None
            )
            if type(head) is dict:
                if "error" not in head and ("jsonrpc" not in head or "result" in head):
                    return None  # a result (below), its values never built
                parsed = head if _stands_for_body(head) else parse_json(body)
            else:  # INVALID: not JSON to the parser that would parse it whole
                parsed = parse_json(body) if head is None else head
        else:
            parsed = parse_json(body)
    else:
        content_type = response.headers.get("content-type", "")
        if content_type.startswith("text/event-stream"):
            found = _sse(body, limits, keep)
            if found is None or (found is _NO_EVENT and not ok):
                return None if ok else _bare(response, limits, "")
            if found is _NO_EVENT:
                # Comments, blank lines, ``retry:`` fields, keep-alives and nothing else: no
                # answer at all, as an empty body is none.
                return no_event_error(status, _hint(response))
            # An event's own status says more than the stream's 200 (which only opened it).
            return replace(
                found,
                http_status=found.http_status if ok else status,
                retry_after=_merge(found, _hint(response)),
            )
        parsed = _INVALID if ok else _parse_json(body, limits)
    if parsed is _INVALID:
        if ok:
            why = "the success response is not JSON (UTF-8)"
            return _invalid(why, status, _hint(response))
        return _bare(response, limits, "")
    if keep is not None:
        keep.append(parsed)
    if (
        ok
        and type(parsed) is dict
        and "error" not in parsed
        and ("jsonrpc" not in parsed or "result" in parsed)
    ):
        # A result (a task in any state, FAILED included), if it has the right shape.
        return None if operation is None else _checked(operation, parsed, status)
    # `_hint`, inline: most answers carry no hint, as a look at the lower-cased names says.
    for item in header_triples(response.headers):
        if item[1] in _HINT_HEADERS:
            hint = retry_after_from_headers(response.headers)
            break
    else:
        hint = None
    found = _from_body(parsed, limits, status, hint)
    if ok:
        if found is not None or operation is None:
            return found
        # No error in it (``{"error": "upstream timeout"}`` is none): is it the answer?
        return _shaped(operation, parsed, status)
    if found is None or found.source is _SOURCE_INVALID:
        message = parsed.get("message") if type(parsed) is dict else None
        return _bare(response, limits, message)
    return found


_JSON_FIRST: Final = frozenset(b"{[")
_BRACE: Final = ord("{")
_ENVELOPE_FROM: Final = 512
"""The smallest 2xx body whose envelope is read in its place (`_stands_for_body`): a smaller
one costs about as much to parse whole."""
_ERROR_WITHIN: Final = 128
"""The head of a body looked at for an ``"error"`` member before its envelope is read: a
JSON-RPC error names it after ``jsonrpc`` and ``id``, a result never. A guess, for speed only:
an envelope that holds an error stands for its body as well (`_stands_for_body`)."""


def _stands_for_body(head: dict[str, Any]) -> bool:
    """Whether a body's `envelope` tells what the body itself would, to `from_response`.

    It does for a result (no ``error``; a ``result`` if ``jsonrpc``), for a JSON-RPC
    response, whose error `_from_body` reads from ``error``, ``jsonrpc``, ``id`` and
    ``result`` alone (whether ``result`` is null), and for an HTTP+JSON error (``error`` an
    object: a Status) or a legacy one (``error`` a name, and ``message``). Any other body may
    be a problem details or a Status at the top level, read from members the envelope does
    not keep: it is parsed whole.
    """
    return (
        "jsonrpc" in head
        or "error" not in head
        or "id" in head
        or isinstance(head["error"], (dict, str))
    )


_JSON_STARTS: Final = frozenset({b"{", b"["})
_NOT_FOUND: Final = 404


def _bare(response: httpx.Response, limits: Limits, message: object) -> CallError:
    """An HTTP status with no error shape behind it (a proxy, a gateway, an empty body).

    A 404 with no error shape is a web server's page for a URL no route serves (nginx's HTML,
    Go's ``404 page not found``, Starlette's ``Not Found``, FastAPI's ``{"detail": ...}``), an
    empty body, or a gateway's JSON: a wrong URL, not TASK_NOT_FOUND, which an A2A answer (a
    JSON-RPC error, a ``google.rpc.Status`` body, problem details) says. One exception: a JSON
    object answering an HTTP+JSON route that names a task (``GET /v1/tasks/{id}``) is the
    agent's own answer there, as a2a-sdk 0.3's REST server gives it (``{"message": "Task not
    found"}``): read by its status, TASK_NOT_FOUND.
    """
    status = response.status_code
    if status == _NOT_FOUND and not _task_route_answer(response):
        return _endpoint(status, None, _WIRE_BARE, _hint(response))
    if status // 100 == 3:
        return _redirected(response, limits, message or response.reason_phrase)
    return _build(
        WireShape.BARE_STATUS,
        limits,
        http_status=response.status_code,
        message=message or response.reason_phrase,
        retry_after=_hint(response),
    )


_FOLLOWED_ELSEWHERE: Final = "the HTTP client followed the redirect to another origin"


def _redirected(response: httpx.Response, limits: Limits, message: object) -> CallError:
    """A 3xx answer with no A2A body, or one to another origin: ``fix_request``, its location.

    What is kept of its ``Location`` (`a2a_client_errors._redirects.location_of`) is the
    record's ``location``; its delivery is its status's (307 and 308 *not processed*, 301,
    302 and 303 *unknown*: see `Delivery`).
    """
    error = _build(
        WireShape.BARE_STATUS,
        limits,
        http_status=response.status_code,
        message=message or response.reason_phrase,
        retry_after=_hint(response),
    )
    location = location_of(response)
    return error if location is None else replace(error, location=location)


def _task_route_answer(response: httpx.Response) -> bool:
    """Whether a JSON object answers an HTTP+JSON request on a route that names a task."""
    if response.content.lstrip()[:1] != b"{":
        return False
    try:
        request = response.request
    except RuntimeError:  # a response built without its request
        return False
    operation = rest_operation(request.method, request.url.path)
    return operation is not None and operation not in NO_TASK_OPERATIONS


def _merge(error: CallError, hint: float | None) -> float | None:
    if hint is None:
        return error.retry_after
    return hint if error.retry_after is None else max(hint, error.retry_after)


def _hint(response: httpx.Response) -> float | None:
    headers = response.headers
    # Most responses carry no hint at all: a look at the lower-cased names says so.
    for item in header_triples(headers):
        if item[1] in _HINT_HEADERS:
            break
    else:
        return None
    return retry_after_from_headers(headers)


def _request_method(response: httpx.Response) -> str | None:
    try:
        return response.request.method
    except RuntimeError:
        return None


def retry_after_from_headers(headers: httpx.Headers, now: float | None = None) -> float | None:
    """The server's hint in seconds from ``retry-after-ms`` and ``Retry-After``.

    ``Retry-After`` may be delay-seconds or an HTTP-date; a date is read against the response's
    ``Date`` header when it has one, else against ``now`` (default: the wall clock). The larger
    of the two headers wins. Malformed or negative values are ignored.
    """
    found = _hint_headers(headers)
    if not found:
        return None
    millis, seconds, date = (
        found.get(b"retry-after-ms"),
        found.get(b"retry-after"),
        found.get(b"date"),
    )
    hints: list[float] = []
    if millis is not None:
        value_ms = _float(millis.decode("latin-1"))
        if value_ms is not None:
            hints.append(value_ms / 1000.0)
    if seconds is not None:
        text = seconds.decode("latin-1")
        delay = _float(text)
        if delay is None:
            delay = _http_date_delay(text, None if date is None else date.decode("latin-1"), now)
        if delay is not None:
            hints.append(delay)
    return max(hints) if hints else None


_HINT_HEADERS: Final = frozenset({b"retry-after", b"retry-after-ms"})


def _hint_headers(headers: httpx.Headers) -> dict[bytes, bytes]:
    """The hint headers (and Date, when there is a hint), by lower-cased name."""
    found = {name: value for _, name, value in header_triples(headers) if name in _HINT_HEADERS}
    if found:
        date = headers.get("date")
        if date is not None:
            found[b"date"] = date.encode("latin-1", "replace")
    return found


def _float(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _http_date_delay(raw: str, date: str | None, now: float | None) -> float | None:
    try:
        target = parsedate_to_datetime(raw.strip()).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    reference = now if now is not None else time.time()
    if date is not None:
        with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
            reference = parsedate_to_datetime(date.strip()).timestamp()
    return max(0.0, target - reference)


# --- SSE ------------------------------------------------------------------------------------


def event_error(
    name: str, data: str, limits: Limits = DEFAULT_LIMITS
) -> tuple[object, CallError | None]:
    """Judge one SSE event: its parsed data, and the call error it carries (if it carries one).

    A JSON-RPC error envelope, a ``{"error": ...}`` Status body, data that is not JSON, and an
    ``event: error`` that carries no error are all call errors.
    """
    parsed = _parse_json(data.encode("utf-8", "surrogatepass"), limits)
    if parsed is _INVALID:
        why = "an error event" if name == "error" else "an event"
        return None, _invalid(f"{why} of the stream is not JSON")
    found = _from_body(parsed, limits)
    if found is None and name == "error":
        found = _invalid("an error event of the stream carries no error")
    return parsed, found


def event_reader(limits: Limits = DEFAULT_LIMITS) -> EventReader:
    """The SSE reader (`a2a_client_errors._sse`) with the caps of ``limits``."""
    return EventReader(
        max_line=limits.max_sse_line,
        max_event=limits.max_sse_event,
        max_stream=limits.max_sse_stream,
    )


def stream_error(exc: SSEError) -> CallError:
    """The call error of an event stream the reader stopped (not UTF-8, or past a cap)."""
    return _invalid(str(exc))


def _slices(body: bytes) -> Iterator[bytes]:
    view = memoryview(body)
    for start in range(0, len(body), _SSE_SLICE):
        yield bytes(view[start : start + _SSE_SLICE])


def _sse(body: bytes, limits: Limits, keep: list[object] | None = None) -> CallError | None:
    """The first error event of an SSE body, or None when every event is a result.

    The parsed data of that event, when it is JSON, is appended to ``keep``.
    """
    events = 0
    try:
        for event in read_events(_slices(body), event_reader(limits)):
            events += 1
            if events > limits.max_sse_events:
                break
            parsed, found = event_error(*event, limits)
            if found is not None:
                if keep is not None and parsed is not None:
                    keep.append(parsed)
                return found
    except SSEError as exc:
        return stream_error(exc)
    return _NO_EVENT if events == 0 else None


_NO_EVENT_WHY: Final = "the event stream holds no event"


def no_event_error(http_status: int | None = None, retry_after: float | None = None) -> CallError:
    """The call error of an event stream that ended without one event with data.

    Comments (``: SSE stream established``), blank lines, ``id:`` and ``retry:`` fields carry
    no answer: such a stream is as unreadable as an empty body (INVALID_AGENT_RESPONSE).
    """
    return _invalid(_NO_EVENT_WHY, http_status, retry_after)


_NO_EVENT: Final = no_event_error()
"""What `_sse` gives for a body with no event (the one object, to be told apart)."""


class StreamHead:
    """Whether the head of an event stream tells it is a stream of results.

    Fed the decoded chunks of a stream in turn (``read_within``'s ``enough``): True once its
    first event is complete and carries no call error. An error event first, a stream that
    breaks the reader's caps, or one that has no event yet give False: the stream is then read
    on (to its end, within a size) and judged whole, as `normalize` judges an SSE body.

    Args:
        limits: the caps of the event reader.

    """

    __slots__ = ("_limits", "_reader", "_told", "parsed")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._limits = limits
        self._reader = event_reader(limits)
        self._told = False  # the first event came (or the stream broke): nothing more to tell
        self.parsed: object = None
        """The first event's data as parsed, once it came (what a journal reads it made)."""

    def __call__(self, chunk: bytes) -> bool:
        """Take one chunk; True when the first event, now complete, is a result."""
        if self._told:
            return False
        try:
            events = self._reader.feed(chunk)
        except SSEError:
            self._told = True
            return False
        if not events:
            return False
        self._told = True
        self.parsed, error = event_error(*events[0], self._limits)
        return error is None


# --- exceptions -----------------------------------------------------------------------------


class UnreadableAnswerError(Exception):
    """A client library could not read a peer's answer: the peer's broken answer.

    Raised by the integrations in place of what an SDK raised while parsing or validating an
    answer (a ``ValueError`` on a timestamp without a zone, a stream that ended without one
    event): `normalize` reads it as INVALID_AGENT_RESPONSE, with the SDK's complaint as the
    message, never as the caller's own bug.
    """


class PeerAnswerError(Exception):
    """The call error a door read from the peer's own answer (its bytes), raised in its place.

    A client library may keep less of an answer than the answer said: a2a-sdk 1.x keeps no
    code it has no class for (a2a-go's JSON-RPC -31401), and reads a2a-go's refused HTTP+JSON
    stream as one empty event. A door that read the answer itself raises this, chained from
    what the library raised (if it raised): `normalize` reads it as ``error``, as it is.

    Attributes:
        error: the call error read from the answer.
    """

    def __init__(self, error: CallError) -> None:
        super().__init__(error.message or "the peer answered with an error")
        self.error = error


class NotSentError(Exception):
    """A call that was never made: its connection could not be made first.

    Raised (or mixed into what is raised) by a door that waited for a connection before
    making a call and did not get one, so that nothing of the request left this machine.
    `normalize` reads it, and an exception raised from it, as *not sent* whatever else it is:
    a gRPC status keeps its code (`a2a_client_errors.integrations.grpc.NotConnectedError`),
    anything else is a connect failure.
    """


def _from_exception(exc: BaseException, limits: Limits) -> CallError | None:
    if isinstance(exc, PeerAnswerError):
        return exc.error
    if isinstance(exc, UnreadableAnswerError):
        return _invalid(_message(_text(exc) or "the peer's answer could not be read", limits))
    if isinstance(exc, httpx.HTTPStatusError):
        return from_response(exc.response, limits) or _bare(exc.response, limits, "")
    if _is_grpc_error(exc):
        found = _from_grpc(exc, limits)
        if found is not None and isinstance(exc, NotSentError):
            return replace(found, delivery=Delivery.NOT_SENT)
        return found
    module = type(exc).__module__
    if module == "a2a" or module.startswith("a2a."):
        return _from_sdk(exc, limits)
    if module.startswith("google.protobuf") and type(exc).__name__ in _PARSE_ERRORS:
        # An SDK parsing the peer's answer into A2A messages failed: the peer broke the contract.
        return _invalid("the peer's answer does not parse as the A2A message it should be")
    return _transport(exc, limits)


_PARSE_ERRORS: Final = frozenset({"ParseError", "DecodeError"})


_TRANSPORT_TYPES: tuple[
    tuple[type[BaseException] | tuple[type[BaseException], ...], TransportFailure], ...
] = (
    (ssl.SSLCertVerificationError, TransportFailure.TLS),
    (httpx.TimeoutException, TransportFailure.TIMEOUT),
    (httpx.ConnectError, TransportFailure.CONNECT),
    (
        (
            httpx.UnsupportedProtocol,
            httpx.LocalProtocolError,
            httpx.InvalidURL,
            httpx.TooManyRedirects,
        ),
        TransportFailure.CONFIG,
    ),
    (httpx.DecodingError, TransportFailure.DECODING),
    ((httpx.TransportError, httpx.StreamError), TransportFailure.NETWORK),
    (TimeoutError, TransportFailure.TIMEOUT),
    (
        (NotSentError, ConnectionRefusedError, ConnectionAbortedError, socket.gaierror),
        TransportFailure.CONNECT,
    ),
    ((ConnectionError, ssl.SSLError), TransportFailure.NETWORK),
)


_NOT_SENT_TYPES: tuple[type[BaseException], ...] = (
    # Raised before a byte of the request could reach the agent.
    NotSentError,
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
    httpx.LocalProtocolError,
    ConnectionRefusedError,
    socket.gaierror,
    ssl.SSLCertVerificationError,
)


_PHASES: tuple[tuple[type[BaseException], str], ...] = (
    # The most specific first: what failed, and in which phase. Never the exception's text,
    # which may hold a URL, a header value or a body.
    (NotSentError, "the connection could not be made; nothing was sent"),
    (httpx.ConnectTimeout, "the connection timed out"),
    (httpx.ReadTimeout, "the answer timed out"),
    (httpx.WriteTimeout, "sending the request timed out"),
    (httpx.PoolTimeout, "no connection was free in time"),
    (httpx.ConnectError, "the connection could not be made"),
    (httpx.ReadError, "reading the answer failed"),
    (httpx.WriteError, "sending the request failed"),
    (httpx.RemoteProtocolError, "the peer broke HTTP, or closed the connection early"),
    (httpx.LocalProtocolError, "the request could not be sent as built"),
    (httpx.ProxyError, "the proxy refused the connection"),
    (httpx.UnsupportedProtocol, "the URL's scheme is not supported"),
    (httpx.InvalidURL, "the URL is not valid"),
    (httpx.TooManyRedirects, "too many redirects"),
    (httpx.DecodingError, "the answer's content encoding is corrupt"),
    (httpx.TimeoutException, "the call timed out"),
    (httpx.TransportError, "the transport failed"),
    (httpx.StreamError, "the stream was used wrongly"),
    (ssl.SSLCertVerificationError, "the peer's certificate is not trusted"),
    (ssl.SSLError, "TLS failed"),
    (socket.gaierror, "the host name could not be resolved"),
    (ConnectionRefusedError, "the connection was refused"),
    (ConnectionResetError, "the connection was reset"),
    (ConnectionAbortedError, "the connection was aborted"),
    (BrokenPipeError, "the connection was closed while sending"),
    (TimeoutError, "the call timed out"),
    (ConnectionError, "the connection failed"),
)


def _phase(exc: BaseException) -> str:
    """What failed, in words of this package: the exception's text never becomes the message."""
    for cls, phrase in _PHASES:
        if isinstance(exc, cls):
            return phrase
    return "the call raised"


def _transport(exc: BaseException, limits: Limits) -> CallError:
    """A transport exception; the most telling exception in its chain names the failure.

    Its delivery is *not sent* when the exception, or one it was raised from (its explicit
    causes, never the exceptions it was raised while handling), is one raised before the
    request could leave (`_NOT_SENT_TYPES`), else *unknown*: a read or write error or timeout,
    a closed connection, a deadline that cut the attempt short may all come after the agent
    did the work. Its message names the failure and its type, never the exception's text: an
    httpx error may quote the URL or a header value it refused (a token with a newline).
    (A read error raised while handling an earlier connect error, a second try,
    is that read error's: unknown.)
    """
    failure = TransportFailure.UNKNOWN
    culprit = exc
    delivery = Delivery.UNKNOWN
    link: BaseException | None = exc
    for _ in range(16):
        if link is None:
            break
        if isinstance(link, _NOT_SENT_TYPES):
            delivery = Delivery.NOT_SENT
            break
        link = link.__cause__
    for link in _chain(exc):
        for types, found in _TRANSPORT_TYPES:
            if isinstance(link, types):
                if found is TransportFailure.TLS or failure is TransportFailure.UNKNOWN:
                    failure, culprit = found, link
                break
    cls = type(culprit)
    if failure is TransportFailure.UNKNOWN and cls.__name__ == "TimeoutError":
        failure = TransportFailure.TIMEOUT  # asyncio.TimeoutError on Python 3.10
    name = cls.__qualname__
    module = cls.__module__
    qualified = name if module == "builtins" else f"{module}.{name}"
    return CallError(
        kind=ErrorKind.TRANSPORT,
        reason=None,
        source=Source.TRANSPORT,
        wire=WireShape.TRANSPORT,
        message=_message(f"{_phase(culprit)} ({qualified})", limits),
        exception=qualified,
        transport=failure,
        delivery=delivery,
    )


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception, its causes and contexts, without cycles (capped)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 16 and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


_SDK_TIMEOUTS: Final = frozenset({"A2AClientTimeoutError"})
_SDK_BROKEN_ANSWERS: Final = frozenset(
    # a2a-sdk 0.3: the answer did not parse (JSON), or a stream broke its contract (a Message
    # after the first event, a second Task, an update before any Task): the peer's doing.
    {"A2AClientJSONError", "A2AClientInvalidStateError", "A2AClientInvalidArgsError"}
)


def _sdk_jsonrpc(exc: BaseException, limits: Limits) -> CallError | None:
    """The JSON-RPC error an a2a-sdk 0.3 exception kept (``.error``), read as a body's; or None.

    ``A2AClientJSONRPCError.error`` is the answer's error object (a pydantic model, or any
    object or dict with an int ``code``): its code, message and data are read by the same
    reader as a raw JSON-RPC body's, the message never parsed (a code a2a-sdk has no class
    for, a2a-go's -31401 / -31403, too). a2a-sdk 1.x keeps no code for a code it does not
    know (only its text says it): that answer is read from the bytes, by
    `AsyncGuardTransport` under the client.
    """
    error = getattr(exc, "error", None)
    if isinstance(error, dict):
        fields = {name: error.get(name) for name in ("code", "message", "data")}
    else:
        fields = {name: getattr(error, name, None) for name in ("code", "message", "data")}
    if type(fields["code"]) is not int:
        return None
    return _from_body({"jsonrpc": "2.0", "error": fields}, limits)


def _from_sdk(exc: BaseException, limits: Limits) -> CallError | None:
    """An a2a-sdk client exception: its cause when it kept one, else its class and data."""
    kept = _sdk_jsonrpc(exc, limits)
    if kept is not None:
        return kept
    cause = exc.__cause__
    # A cause that is the peer's data failing to parse (not an OS error such as a certificate
    # failure, which is a ValueError too) says the answer was broken.
    broken = isinstance(cause, (ValueError, KeyError, TypeError)) and not isinstance(cause, OSError)
    if cause is not None and not broken:
        found = _from_exception(cause, limits)
        if found is not None and (
            found.kind is not ErrorKind.TRANSPORT or found.transport is not TransportFailure.UNKNOWN
        ):
            return found
    names = [cls.__name__ for cls in type(exc).__mro__]
    if any(name in _SDK_TIMEOUTS for name in names):
        return CallError(
            kind=ErrorKind.TRANSPORT,
            reason=None,
            source=Source.TRANSPORT,
            wire=WireShape.TRANSPORT,
            message="the call timed out (a2a-sdk)",  # never the exception's text
            exception=f"{type(exc).__module__}.{type(exc).__qualname__}",
            transport=TransportFailure.TIMEOUT,
        )
    if any(name in _SDK_BROKEN_ANSWERS for name in names):
        return _invalid("the peer's answer is not what the A2A method returns (a2a-sdk)")
    message = getattr(exc, "message", None)
    if not isinstance(message, str):
        message = _text(exc)
    status = getattr(exc, "status_code", None)
    if type(status) is int and 100 <= status <= 599:
        return _build(WireShape.BARE_STATUS, limits, http_status=status, message=message)
    if broken and isinstance(cause, ValueError):
        # a2a-sdk raises A2AClientError from a JSONDecodeError when the peer's body is not JSON.
        return _invalid(_message(message, limits))
    for name in names:
        found_reason = canonical_reason(name)
        if isinstance(found_reason, Reason):
            data = getattr(exc, "data", None)
            metadata = _string_metadata(data, limits) if isinstance(data, dict) else {}
            return CallError(
                kind=ErrorKind.AUTH if found_reason in _AUTH_REASONS else ErrorKind.PROTOCOL,
                reason=found_reason,
                source=Source.SDK_EXCEPTION,
                wire=WireShape.TRANSPORT if cause is None else WireShape.INVALID,
                message=_message(message, limits),
                domain=A2A_DOMAIN,
                metadata=metadata,
                exception=f"{type(exc).__module__}.{type(exc).__qualname__}",
            )
    return CallError(
        kind=ErrorKind.PROTOCOL,
        reason=None,
        source=Source.SDK_EXCEPTION,
        wire=WireShape.INVALID,
        message=_message(message, limits),
        exception=f"{type(exc).__module__}.{type(exc).__qualname__}",
    )


def _string_metadata(data: dict[Any, Any], limits: Limits) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in list(data.items())[: limits.max_metadata]:
        if isinstance(value, str | int | float | bool):
            out[cut(str(key))] = cut(value if isinstance(value, str) else json.dumps(value))
    return out


# --- gRPC -----------------------------------------------------------------------------------


def _is_grpc_error(exc: BaseException) -> bool:
    return any(
        cls.__name__ == "RpcError" and cls.__module__.startswith("grpc")
        for cls in type(exc).__mro__
    )


def _is_status_proto(x: object) -> bool:
    descriptor = getattr(type(x), "DESCRIPTOR", None)
    return getattr(descriptor, "full_name", None) == "google.rpc.Status"


def _from_grpc(exc: BaseException, limits: Limits) -> CallError | None:
    code = _call(exc, "code")
    name = getattr(code, "name", None)
    if not isinstance(name, str) or name not in GRPC_CODES:
        name = "UNKNOWN"
    if name == "OK":
        return None
    message = _call(exc, "details")
    status_bin: bytes | None = None
    pushback: float | None = None
    metadata = _call(exc, "trailing_metadata") or ()
    try:
        for item in metadata:
            key, value = (item.key, item.value) if hasattr(item, "key") else item
            if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
                status_bin = value
            elif key == _PUSHBACK_KEY:
                text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
                millis = _float(text)
                # gRPC's retry design (A6): a negative or unreadable pushback means "do not
                # retry"; an endless wait says so to the policy, which then gives up.
                pushback = math.inf if millis is None else millis / 1000.0
    except (TypeError, ValueError):
        pass
    details: list[Any] = []
    if status_bin is not None and len(status_bin) <= limits.max_body:
        details = _status_bin_details(status_bin, limits)
    return _build(
        WireShape.GRPC,
        limits,
        grpc_status=name,
        message=message,
        raw_details=details,
        retry_after=pushback,
    )


def _call(obj: object, method: str) -> Any:
    func = getattr(obj, method, None)
    if not callable(func):
        return None
    try:
        return func()
    except Exception:
        return None


def _status_bin_details(raw: bytes, limits: Limits) -> list[Any]:
    """Decode the details of a ``grpc-status-details-bin`` trailer (corrupt ones give none)."""
    from google.protobuf.message import DecodeError  # noqa: PLC0415 (protobuf is slow to import)
    from google.rpc import status_pb2  # noqa: PLC0415

    status = status_pb2.Status()
    try:
        status.ParseFromString(raw)
    except (DecodeError, ValueError, RuntimeError):
        return []
    return _any_details(status.details, limits)


_DETAIL_MESSAGES: Final = (
    "ErrorInfo",
    "RetryInfo",
    "DebugInfo",
    "QuotaFailure",
    "PreconditionFailure",
    "BadRequest",
    "RequestInfo",
    "ResourceInfo",
    "Help",
    "LocalizedMessage",
)
"""The ``google.rpc`` detail messages a packed ``Any`` is read as; any other type is kept by its
URL alone. A registry, never an attribute lookup: a type URL names no attribute to call."""
_DETAIL_CLASSES: dict[str, Any] = {}


def _detail_classes() -> dict[str, Any]:
    """``"google.rpc.ErrorInfo"`` -> its message class, for the known detail messages."""
    if not _DETAIL_CLASSES:
        from google.rpc import error_details_pb2  # noqa: PLC0415 (protobuf is slow to import)

        for name in _DETAIL_MESSAGES:
            cls = getattr(error_details_pb2, name)
            _DETAIL_CLASSES[cls.DESCRIPTOR.full_name] = cls
    return _DETAIL_CLASSES


def _any_details(anys: Any, limits: Limits) -> list[Any]:
    """Packed ``Any`` details as their ProtoJSON objects (``@type`` first), as HTTP sends them.

    One entry that cannot be read is kept by its type URL; it never costs the others.
    """
    from google.protobuf import json_format  # noqa: PLC0415

    classes = _detail_classes()
    out: list[Any] = []
    for index, packed in enumerate(anys):
        if index >= limits.max_details:
            break
        try:
            type_url = str(packed.type_url)
            cls = classes.get(type_url.rsplit("/", 1)[-1])
            if cls is None:
                out.append({"@type": type_url[: limits.max_message]})
                continue
            message = cls()
            if not packed.Unpack(message):
                out.append({"@type": type_url})
                continue
            as_json = json_format.MessageToDict(message)
        except Exception:  # a corrupt Any is kept by its type, never raised
            out.append({"@type": "unreadable"})
            continue
        out.append({"@type": type_url, **as_json})
    return out


def _from_status_proto(
    status: Any, limits: Limits, *, http_status: int | None, pushback: float | None
) -> CallError | None:
    code = getattr(status, "code", 0)
    name = GRPC_NAMES.get(code, "UNKNOWN") if type(code) is int else "UNKNOWN"
    if name == "OK":
        return None
    return _build(
        WireShape.GRPC,
        limits,
        http_status=http_status,
        grpc_status=name,
        message=getattr(status, "message", ""),
        raw_details=_any_details(status.details, limits),
        retry_after=pushback,
    )
