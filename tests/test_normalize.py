"""normalize: every wire shape of every binding reduces to one CallError, reason first."""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import ssl
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest
from google.rpc import status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, CallError, GiveUp, Guard, Policy, Reason, classify, normalize
from a2a_client_errors._engine import AttemptCutShortError
from a2a_client_errors._failures import ReportNeeded
from a2a_client_errors._normalize import Limits, NotSentError, PeerAnswerError
from a2a_client_errors._reasons import ROWS, Delivery, ReasonRow
from a2a_client_errors._wire import BadRequest, DebugInfo, ErrorInfo, RetryInfo
from a2a_client_errors.types import ErrorKind, Source, TransportFailure, WireShape, escape
from tests.conftest import (
    A2A_DOMAIN,
    NINE,
    NINE_ACTIONS,
    NINE_REASONS,
    PROBLEM_PREFIX,
    FakeRpcError,
    bad_request,
    debug_info,
    error_info,
    error_of,
    json_response,
    jsonrpc_error,
    jsonrpc_result,
    packed_bad_request,
    packed_error_info,
    packed_retry_info,
    raised_from,
    retry_info,
    rpc_error,
    send_through,
    sse_data,
    sse_response,
    status_body,
    task,
)

if TYPE_CHECKING:
    from collections.abc import Callable


SPEC_METADATA = {"taskId": "task-123", "timestamp": "2025-11-09T10:30:00.000Z"}
SPEC_INFO = error_info("TASK_NOT_FOUND", metadata=SPEC_METADATA)


# --- JSON-RPC (§9.5) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        [SPEC_INFO],
        [bad_request(("id", "unknown")), debug_info(), SPEC_INFO],
        [error_info("OTHER", domain="example.com"), SPEC_INFO, retry_info("1s")],
        SPEC_INFO,
    ],
    ids=["errorinfo-first", "errorinfo-last", "errorinfo-middle", "data-object"],
)
def test_jsonrpc_error_info_anywhere_in_data(data: Any) -> None:
    """The A2A ErrorInfo decides wherever it stands in ``data``, array or single object."""
    found = error_of(json_response(200, jsonrpc_error(-32001, "Task not found", data)))
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.ERROR_INFO
    assert found.wire is WireShape.JSONRPC
    assert found.kind is ErrorKind.PROTOCOL
    assert found.jsonrpc_code == -32001
    assert found.domain == A2A_DOMAIN
    assert dict(found.metadata) == SPEC_METADATA
    assert found.message == "Task not found"


@pytest.mark.parametrize(
    "error",
    [
        jsonrpc_error(-32001, "Task not found", "task-123 is gone"),
        jsonrpc_error(-32001, "Task not found", {"taskId": "task-123"}),
        jsonrpc_error(-32001, "Task not found"),
        jsonrpc_error(-32001, None),
        jsonrpc_error(-32001, "Task not found", None),
        jsonrpc_error(-32001, "Task not found", []),
    ],
    ids=["data-string", "data-v03-object", "no-data", "code-only", "data-null", "data-empty"],
)
def test_jsonrpc_code_decides_without_error_info(error: dict[str, Any]) -> None:
    """With no ErrorInfo, the JSON-RPC code names the reason."""
    found = error_of(error)
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.JSONRPC_CODE
    assert found.wire is WireShape.JSONRPC
    assert found.jsonrpc_code == -32001
    assert classify(error).action is Action.RECONCILE


@pytest.mark.parametrize("status", [200, 400, 404, 409, 500, 502, 503])
def test_jsonrpc_error_on_any_http_status(status: int) -> None:
    """A JSON-RPC error is read the same on HTTP 200 and on 4xx/5xx: the code wins the status."""
    found = error_of(json_response(status, jsonrpc_error(-32004, "Streaming is not supported")))
    assert found.reason is Reason.UNSUPPORTED_OPERATION
    assert found.source is Source.JSONRPC_CODE
    assert found.http_status == status
    assert classify(json_response(status, jsonrpc_error(-32004))).action is Action.DEGRADE


@pytest.mark.parametrize(("reason", "code"), [(r[0], r[1]) for r in NINE], ids=NINE_REASONS)
def test_jsonrpc_each_a2a_code(reason: str, code: int) -> None:
    """Each A2A JSON-RPC code, with and without its ErrorInfo, gives its reason and action."""
    bare = json_response(200, jsonrpc_error(code, "x"))
    full = json_response(200, jsonrpc_error(code, "x", [error_info(reason)]))
    assert error_of(bare).reason is Reason(reason)
    assert error_of(full).reason is Reason(reason)
    assert error_of(full).source is Source.ERROR_INFO
    assert classify(bare).action == Action(NINE_ACTIONS[reason])
    assert classify(full).action == Action(NINE_ACTIONS[reason])


def test_jsonrpc_validation_error_example() -> None:
    """The §9.5 validation example (-32602 + BadRequest) is INVALID_PARAMS with its violations."""
    body = jsonrpc_error(
        -32602,
        "Invalid parameters",
        [bad_request(("message.parts", "at least one part is required"))],
    )
    found = error_of(json_response(200, body))
    assert found.reason is Reason.INVALID_PARAMS
    assert found.source is Source.JSONRPC_CODE
    (detail,) = found.details
    assert isinstance(detail, BadRequest)
    assert [(v.field, v.description) for v in detail.field_violations] == [
        ("message.parts", "at least one part is required")
    ]
    assert classify(body).action is Action.FIX_REQUEST


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (-32700, "PARSE_ERROR"),
        (-32600, "INVALID_REQUEST"),
        (-32601, "METHOD_NOT_FOUND"),
        (-32602, "INVALID_PARAMS"),
    ],
    ids=["parse", "invalid-request", "method-not-found", "invalid-params"],
)
def test_standard_request_errors_fix_the_request(code: int, reason: str) -> None:
    """-32700/-32600/-32601/-32602, and their reasons in an ErrorInfo, are fix_request."""
    by_code = classify(jsonrpc_error(code, "x"))
    assert by_code.reason is Reason(reason)
    assert by_code.action is Action.FIX_REQUEST
    by_info = classify(status_body(400, "INVALID_ARGUMENT", "x", [error_info(reason)]))
    assert by_info.reason is Reason(reason)
    assert by_info.action is Action.FIX_REQUEST


def test_jsonrpc_internal_error_retries() -> None:
    """-32603 (and the INTERNAL_ERROR reason) is transient: retry."""
    for body in (
        jsonrpc_error(-32603, "Internal error"),
        jsonrpc_error(-32603, "Internal error", [error_info("INTERNAL_ERROR")]),
    ):
        decision = classify(json_response(500, body))
        assert decision.reason is Reason.INTERNAL_ERROR
        assert decision.action is Action.RETRY


def test_jsonrpc_unassigned_a2a_code_has_no_reason() -> None:
    """A code in the A2A range that the spec leaves unassigned names no reason."""
    found = error_of(json_response(200, jsonrpc_error(-32050, "custom")))
    assert found.reason is None
    assert found.jsonrpc_code == -32050


# --- google.rpc.Status JSON (HTTP+JSON, §11.6) ----------------------------------------------


@pytest.mark.parametrize("content_type", ["application/json", "application/a2a+json"])
def test_status_json_spec_example(content_type: str) -> None:
    """The §11.6 404 example gives TASK_NOT_FOUND from its ErrorInfo, on either content type."""
    body = status_body(
        404,
        "NOT_FOUND",
        "The specified task ID does not exist or is not accessible",
        [SPEC_INFO],
    )
    found = error_of(json_response(404, body, content_type=content_type))
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.ERROR_INFO
    assert found.wire is WireShape.STATUS_JSON
    assert found.http_status == 404
    assert found.grpc_status == "NOT_FOUND"
    assert dict(found.metadata) == SPEC_METADATA
    assert found.message == "The specified task ID does not exist or is not accessible"
    assert classify(json_response(404, body, content_type=content_type)).action is Action.RECONCILE


@pytest.mark.parametrize(
    ("reason", "grpc_name", "http"), [(r[0], r[2], r[3]) for r in NINE], ids=NINE_REASONS
)
def test_status_json_each_a2a_reason(reason: str, grpc_name: str, http: int) -> None:
    """Each A2A error on HTTP+JSON (1.0.1 status) is told apart by its ErrorInfo reason."""
    response = json_response(http, status_body(http, grpc_name, "x", [error_info(reason)]))
    found = error_of(response)
    assert found.reason is Reason(reason)
    assert found.source is Source.ERROR_INFO
    assert classify(response).action == Action(NINE_ACTIONS[reason])


@pytest.mark.parametrize(
    "details",
    [
        [bad_request(("x", "y")), debug_info(), error_info("UNSUPPORTED_OPERATION")],
        [
            error_info("TASK_NOT_FOUND", domain="googleapis.com"),
            error_info("UNSUPPORTED_OPERATION"),
        ],
        [retry_info("1s"), error_info("UNSUPPORTED_OPERATION"), bad_request(("a", "b"))],
    ],
    ids=["last", "after-foreign-errorinfo", "middle"],
)
def test_status_json_error_info_anywhere(details: list[dict[str, Any]]) -> None:
    """The A2A ErrorInfo is found anywhere in ``details``; other domains do not count."""
    found = error_of(json_response(400, status_body(400, "FAILED_PRECONDITION", "x", details)))
    assert found.reason is Reason.UNSUPPORTED_OPERATION
    assert found.source is Source.ERROR_INFO
    assert len(found.details) == len(details)


@pytest.mark.parametrize(
    ("status", "grpc_name", "foreign", "action"),
    [
        (400, "FAILED_PRECONDITION", "TASK_NOT_FOUND", Action.FIX_REQUEST),
        (429, "RESOURCE_EXHAUSTED", "RATE_LIMIT_EXCEEDED", Action.RETRY),
        (400, "INVALID_ARGUMENT", "VERSION_NOT_SUPPORTED", Action.FIX_REQUEST),
    ],
    ids=["400", "429", "400-version"],
)
def test_status_json_foreign_domain_error_info_is_ignored(
    status: int, grpc_name: str, foreign: str, action: Action
) -> None:
    """An ErrorInfo of another domain never names the reason, even with an A2A-looking one."""
    details = [error_info(foreign, domain="googleapis.com", metadata={"service": "x"})]
    response = json_response(status, status_body(status, grpc_name, "x", details))
    found = error_of(response)
    assert found.reason is None
    assert found.domain is None
    assert dict(found.metadata) == {}
    assert found.source is Source.STATUS_FALLBACK
    assert any(isinstance(d, ErrorInfo) and d.reason == foreign for d in found.details)
    assert classify(response).action is action


@pytest.mark.parametrize(
    ("status", "grpc_name"),
    [(500, "INTERNAL"), (502, "UNAVAILABLE"), (503, "UNAVAILABLE"), (500, "UNKNOWN")],
    ids=["500-internal", "502", "503", "500-unknown"],
)
def test_status_json_server_errors_without_reason_retry(status: int, grpc_name: str) -> None:
    """500/502/INTERNAL without an A2A reason are transient, never INVALID_AGENT_RESPONSE."""
    response = json_response(status, status_body(status, grpc_name, "boom"))
    decision = classify(response)
    assert decision.reason is None
    assert decision.action is Action.RETRY


@pytest.mark.parametrize(
    ("status", "grpc_name"),
    [(400, "FAILED_PRECONDITION"), (400, "INVALID_ARGUMENT")],
    ids=["failed-precondition", "invalid-argument"],
)
def test_status_json_400_alone_names_no_reason(status: int, grpc_name: str) -> None:
    """400 with FAILED_PRECONDITION and no ErrorInfo names none of the seven 400 reasons."""
    response = json_response(status, status_body(status, grpc_name, "Task cannot be canceled"))
    decision = classify(response)
    assert decision.reason is None
    assert decision.action is Action.FIX_REQUEST
    assert decision.error is not None
    assert decision.error.source is Source.STATUS_FALLBACK


# --- RFC 9457 problem+json (§6.4, §6.5, RC-era §11.6) -------------------------------------


def test_problem_version_negotiation_example() -> None:
    """The §6.4 example is VERSION_NOT_SUPPORTED with its supported versions."""
    body = {
        "type": "https://a2a-protocol.org/errors/version-not-supported",
        "title": "Protocol Version Not Supported",
        "status": 400,
        "detail": "The requested A2A protocol version 0.5 is not supported by this agent",
        "supportedVersions": ["0.3"],
    }
    response = json_response(400, body, content_type="application/problem+json")
    found = error_of(response)
    assert found.reason is Reason.VERSION_NOT_SUPPORTED
    assert found.source is Source.PROBLEM_TYPE
    assert found.wire is WireShape.PROBLEM_JSON
    assert found.supported_versions == ("0.3",)
    assert found.http_status == 400
    assert found.message == body["detail"]
    assert classify(response).action is Action.FIX_REQUEST


def test_problem_validation_example() -> None:
    """The §6.5 example becomes a BadRequest detail with one violation per ``errors`` entry."""
    body = {
        "status": 400,
        "detail": "Invalid parameters",
        "errors": [
            {"field": "pageSize", "message": "Must be between 1 and 100 inclusive"},
            {"field": "historyLength", "message": "Must be non-negative integer"},
            {"field": "status", "message": "Invalid status value 'TASK_STATE_RUNNING'"},
        ],
    }
    response = json_response(400, body, content_type="application/problem+json")
    found = error_of(response)
    bad = [d for d in found.details if isinstance(d, BadRequest)]
    assert len(bad) == 1
    assert [(v.field, v.description) for v in bad[0].field_violations] == [
        ("pageSize", "Must be between 1 and 100 inclusive"),
        ("historyLength", "Must be non-negative integer"),
        ("status", "Invalid status value 'TASK_STATE_RUNNING'"),
    ]
    assert found.reason is None
    assert found.http_status == 400
    assert found.message == "Invalid parameters"
    assert classify(response).action is Action.FIX_REQUEST


@pytest.mark.parametrize(("reason", "http"), [(r[0], r[5]) for r in NINE], ids=NINE_REASONS)
def test_problem_rc_type_uris(reason: str, http: int) -> None:
    """Each RC-era type URI, on its RC-era status, names its reason (over the status)."""
    body = {
        "type": PROBLEM_PREFIX + reason.lower().replace("_", "-"),
        "title": "t",
        "status": http,
        "detail": "d",
        "taskId": "task-1",
    }
    response = json_response(http, body, content_type="application/problem+json")
    found = error_of(response)
    assert found.reason is Reason(reason)
    assert found.source is Source.PROBLEM_TYPE
    assert classify(response).action == Action(NINE_ACTIONS[reason])


# --- legacy bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (400, {"type": "TaskNotFoundError", "message": "Task not found"}, "TASK_NOT_FOUND"),
        (
            400,
            {"type": "UnsupportedOperationError", "message": "no"},
            "UNSUPPORTED_OPERATION",
        ),
        (500, {"error": "io.a2a.spec.TaskNotFoundError", "message": "gone"}, "TASK_NOT_FOUND"),
        (
            400,
            {"error": "io.a2a.spec.PushNotificationNotSupportedError"},
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
    ],
    ids=["python-v03", "python-v03-unsupported", "java-fqcn", "java-push"],
)
def test_legacy_bodies_name_their_class(status: int, body: dict[str, Any], reason: str) -> None:
    """Pre-1.0 bodies naming an error class give that reason, from the body."""
    found = error_of(json_response(status, body))
    assert found.reason is Reason(reason)
    assert found.source is Source.LEGACY_BODY
    assert found.wire is WireShape.LEGACY


@pytest.mark.parametrize(
    ("status", "reason", "action"),
    [
        (404, Reason.TASK_NOT_FOUND, Action.RECONCILE),
        (400, None, Action.FIX_REQUEST),
        (500, None, Action.RETRY),
    ],
    ids=["404", "400", "500"],
)
def test_aspnet_problem_details_fall_back_to_status(
    status: int, reason: Reason | None, action: Action
) -> None:
    """An ASP.NET ProblemDetails with a non-A2A type URI is read by its status."""
    body = {
        "type": "https://tools.ietf.org/html/rfc9110#section-15.5.5",
        "title": "One or more errors occurred.",
        "status": status,
        "traceId": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
    }
    response = json_response(status, body, content_type="application/problem+json")
    found = error_of(response)
    assert found.reason is reason
    assert found.source is Source.STATUS_FALLBACK
    assert classify(response).action is action


# --- bare statuses from proxies ---------------------------------------------------------------

HTML = b"<html><body><h1>Bad Gateway</h1></body></html>"


@pytest.mark.parametrize(
    ("status", "content", "reason", "action", "kind"),
    [
        (502, HTML, None, Action.RETRY, ErrorKind.TRANSPORT),
        (503, HTML, None, Action.RETRY, ErrorKind.TRANSPORT),
        (504, HTML, None, Action.RETRY, ErrorKind.TRANSPORT),
        (500, HTML, None, Action.RETRY, ErrorKind.TRANSPORT),
        (408, b"", None, Action.RETRY, ErrorKind.TRANSPORT),
        (404, HTML, None, Action.FIX_REQUEST, ErrorKind.TRANSPORT),
        (409, b"", Reason.TASK_NOT_CANCELABLE, Action.RECONCILE, ErrorKind.PROTOCOL),
        (415, b"", Reason.CONTENT_TYPE_NOT_SUPPORTED, Action.FIX_REQUEST, ErrorKind.PROTOCOL),
        (401, b"", Reason.UNAUTHENTICATED, Action.AUTH, ErrorKind.AUTH),
        (403, HTML, Reason.UNAUTHORIZED, Action.AUTH, ErrorKind.AUTH),
        (429, b"Too Many Requests", None, Action.RETRY, ErrorKind.TRANSPORT),
        (400, HTML, None, Action.FIX_REQUEST, ErrorKind.TRANSPORT),
        (501, b"", None, Action.DEGRADE, ErrorKind.TRANSPORT),
    ],
    ids=["502", "503", "504", "500", "408", "404", "409", "415", "401", "403", "429", "400", "501"],
)
def test_bare_statuses(
    status: int, content: bytes, reason: Reason | None, action: Action, kind: ErrorKind
) -> None:
    """A status with no error shape (HTML, text, empty) is read by the status alone."""
    response = httpx.Response(status, content=content, headers={"content-type": "text/html"})
    found = error_of(response)
    assert found.reason is reason
    assert found.kind is kind
    assert found.wire is WireShape.BARE_STATUS
    assert found.source is Source.STATUS_FALLBACK
    assert found.http_status == status
    assert classify(response).action is action


def test_bare_502_is_not_invalid_agent_response() -> None:
    """A gateway's 502 is transient, not the 1.0.0 INVALID_AGENT_RESPONSE."""
    decision = classify(httpx.Response(502, content=HTML))
    assert decision.reason is not Reason.INVALID_AGENT_RESPONSE
    assert decision.action is Action.RETRY


def test_bare_status_message_is_never_parsed() -> None:
    """A 400 whose text names a reason still names none."""
    response = httpx.Response(400, text="TASK_NOT_FOUND: task-123 does not exist")
    decision = classify(response)
    assert decision.reason is None
    assert decision.action is Action.FIX_REQUEST


# --- gRPC (§10.6) ---------------------------------------------------------------------------


def test_grpc_full_trailer() -> None:
    """A real status trailer gives the ErrorInfo reason, its metadata, details and the hint."""
    exc = rpc_error(
        grpc.StatusCode.NOT_FOUND,
        "Task with ID 'task-123' not found",
        packed_bad_request("id", "unknown id"),
        packed_error_info("TASK_NOT_FOUND", metadata={"task_id": "task-123"}),
        packed_retry_info(1, 500_000_000),
        pushback_ms="2500",
    )
    found = error_of(exc)
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.ERROR_INFO
    assert found.wire is WireShape.GRPC
    assert found.grpc_status == "NOT_FOUND"
    assert found.message == "Task with ID 'task-123' not found"
    assert dict(found.metadata) == {"task_id": "task-123"}
    assert [type(d) for d in found.details] == [BadRequest, ErrorInfo, RetryInfo]
    bad = found.details[0]
    assert isinstance(bad, BadRequest)
    assert [(v.field, v.description) for v in bad.field_violations] == [("id", "unknown id")]
    assert found.retry_after == pytest.approx(2.5)
    decision = classify(exc)
    assert decision.action is Action.RECONCILE
    assert decision.retry_after == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("reason", "current", "legacy"), [(r[0], r[2], r[4]) for r in NINE], ids=NINE_REASONS
)
def test_grpc_each_a2a_reason_on_both_tables(reason: str, current: str, legacy: str) -> None:
    """The trailer's reason decides on the 1.0.1 and the 1.0.0 code alike."""
    for name in (current, legacy):
        exc = rpc_error(grpc.StatusCode[name], "x", packed_error_info(reason))
        found = error_of(exc)
        assert found.reason is Reason(reason)
        assert found.source is Source.ERROR_INFO
        assert found.grpc_status == name
        assert classify(exc).action == Action(NINE_ACTIONS[reason])


@pytest.mark.parametrize(
    ("name", "reason", "action"),
    [
        ("UNAVAILABLE", None, Action.RETRY),
        ("DEADLINE_EXCEEDED", None, Action.RETRY),
        ("RESOURCE_EXHAUSTED", None, Action.RETRY),
        ("INTERNAL", None, Action.RETRY),
        ("UNKNOWN", None, Action.RETRY),
        ("NOT_FOUND", Reason.TASK_NOT_FOUND, Action.RECONCILE),
        ("FAILED_PRECONDITION", None, Action.FIX_REQUEST),
        ("INVALID_ARGUMENT", None, Action.FIX_REQUEST),
        ("UNAUTHENTICATED", Reason.UNAUTHENTICATED, Action.AUTH),
        ("PERMISSION_DENIED", Reason.UNAUTHORIZED, Action.AUTH),
    ],
    ids=str,
)
def test_grpc_code_alone(name: str, reason: Reason | None, action: Action) -> None:
    """With no trailer, the gRPC code decides; only NOT_FOUND names an A2A reason."""
    exc = rpc_error(grpc.StatusCode[name], "x")
    found = error_of(exc)
    assert found.reason is reason
    assert found.source is Source.STATUS_FALLBACK
    assert found.grpc_status == name
    assert classify(exc).action is action


@pytest.mark.parametrize(
    ("name", "reason", "action"),
    [
        ("NOT_FOUND", Reason.TASK_NOT_FOUND, Action.RECONCILE),
        ("UNAVAILABLE", None, Action.RETRY),
        ("FAILED_PRECONDITION", None, Action.FIX_REQUEST),
        ("INTERNAL", None, Action.RETRY),
    ],
    ids=str,
)
def test_grpc_corrupt_trailer_is_classified_by_code(
    name: str, reason: Reason | None, action: Action
) -> None:
    """Garbage in ``grpc-status-details-bin`` is ignored; the code still decides."""
    exc = rpc_error(grpc.StatusCode[name], "x", trailer=b"\xff\x00garbage\x12\x99\x01")
    found = error_of(exc)
    assert found.reason is reason
    assert found.source is Source.STATUS_FALLBACK
    assert found.details == ()
    assert classify(exc).action is action


def test_grpc_error_info_at_the_end() -> None:
    """The trailer's ErrorInfo is found after other details (Go and a2a-rs append it)."""
    exc = rpc_error(
        grpc.StatusCode.FAILED_PRECONDITION,
        "x",
        packed_bad_request("a", "b"),
        packed_error_info("OTHER", domain="example.com"),
        packed_error_info("EXTENDED_CARD_NOT_CONFIGURED"),
    )
    decision = classify(exc)
    assert decision.reason is Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED
    assert decision.action is Action.DEGRADE


@pytest.mark.parametrize(
    ("retry_seconds", "pushback", "expected"),
    [
        (3, "1000", 3.0),
        (1, "2500", 2.5),
        (2, None, 2.0),
        (None, "750", 0.75),
        (1, "abc", math.inf),
        (None, "-1", math.inf),
    ],
    ids=[
        "retryinfo-larger",
        "pushback-larger",
        "retryinfo-only",
        "pushback-only",
        "unreadable-pushback",
        "negative-pushback",
    ],
)
def test_grpc_retry_hints(retry_seconds: int | None, pushback: str | None, expected: float) -> None:
    """RetryInfo and grpc-retry-pushback-ms become seconds; the largest wins.

    A negative or unreadable pushback means "do not retry" (gRPC A6): an endless wait.
    """
    details = [] if retry_seconds is None else [packed_retry_info(retry_seconds)]
    exc = rpc_error(grpc.StatusCode.UNAVAILABLE, "x", *details, pushback_ms=pushback)
    assert error_of(exc).retry_after == pytest.approx(expected)


def test_grpc_do_not_retry_pushback_gives_up_at_once() -> None:
    """A pushback of -1 on UNAVAILABLE: the policy plans no retry (the hint is too long)."""
    error = error_of(rpc_error(grpc.StatusCode.UNAVAILABLE, "x", pushback_ms="-1"))
    decision = Policy().decide(error, attempt=1, max_attempts=3)
    assert decision.action is Action.RETRY
    assert decision.give_up is GiveUp.HINT_TOO_LONG
    assert decision.delay is None


def test_grpc_ok_is_no_error() -> None:
    """An RpcError with status OK is not a call error."""
    assert normalize(rpc_error(grpc.StatusCode.OK)) is None


def test_google_rpc_status_message() -> None:
    """A ``google.rpc.Status`` protobuf is read like the gRPC trailer."""
    status = status_pb2.Status(code=9, message="x")
    status.details.add().Pack(packed_error_info("VERSION_NOT_SUPPORTED"))
    found = error_of(status)
    assert found.reason is Reason.VERSION_NOT_SUPPORTED
    assert found.grpc_status == "FAILED_PRECONDITION"


# --- transport exceptions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "failure", "action"),
    [
        (httpx.ConnectError("Connection refused"), TransportFailure.CONNECT, Action.RETRY),
        (httpx.ConnectTimeout("timed out"), TransportFailure.TIMEOUT, Action.RETRY),
        (httpx.ReadTimeout("timed out"), TransportFailure.TIMEOUT, Action.RETRY),
        (httpx.PoolTimeout("no connection"), TransportFailure.TIMEOUT, Action.RETRY),
        (httpx.RemoteProtocolError("peer closed"), TransportFailure.NETWORK, Action.RETRY),
        (httpx.UnsupportedProtocol("ftp://"), TransportFailure.CONFIG, Action.FIX_REQUEST),
        (TimeoutError("timed out"), TransportFailure.TIMEOUT, Action.RETRY),
        (ConnectionResetError(104, "reset"), TransportFailure.NETWORK, Action.RETRY),
        (
            raised_from(
                httpx.ConnectError("handshake failed"),
                ssl.SSLCertVerificationError(1, "certificate verify failed"),
            ),
            TransportFailure.TLS,
            Action.REPORT,
        ),
    ],
    ids=[
        "connect",
        "connect-timeout",
        "read-timeout",
        "pool-timeout",
        "remote-protocol",
        "unsupported-protocol",
        "builtin-timeout",
        "connection-reset",
        "tls-cause",
    ],
)
def test_transport_exceptions(
    exc: BaseException, failure: TransportFailure, action: Action
) -> None:
    """Transport exceptions are kind transport, named by failure; TLS is reported, not retried."""
    found = error_of(exc)
    assert found.kind is ErrorKind.TRANSPORT
    assert found.transport is failure
    assert found.reason is None
    assert found.source is Source.TRANSPORT
    assert found.wire is WireShape.TRANSPORT
    assert found.exception is not None
    assert classify(exc).action is action


def test_http_status_error_is_read_by_its_response() -> None:
    """An ``httpx.HTTPStatusError`` gives the error of the response it carries."""
    body = status_body(400, "FAILED_PRECONDITION", "x", [error_info("TASK_NOT_CANCELABLE")])
    response = send_through(json_response(400, body))
    with pytest.raises(httpx.HTTPStatusError) as info:
        response.raise_for_status()
    found = error_of(info.value)
    assert found.reason is Reason.TASK_NOT_CANCELABLE
    assert found.source is Source.ERROR_INFO
    assert found.http_status == 400


# --- SSE (§9.4.2, notes 8) --------------------------------------------------------------------

STATUS_UPDATE = jsonrpc_result({"statusUpdate": {"taskId": "t", "status": {"state": "x"}}})


def test_sse_jsonrpc_error_after_results() -> None:
    """Result events, keep-alives and id lines are skipped; the JSON-RPC error event decides."""
    error = jsonrpc_error(-32004, "no", [error_info("UNSUPPORTED_OPERATION")])
    response = sse_response(
        [
            ": keep-alive",
            sse_data(jsonrpc_result({"task": task("TASK_STATE_WORKING")}), event_id="1"),
            ": keep-alive",
            sse_data(STATUS_UPDATE, event_id="2"),
            sse_data(error, event="error", event_id="3"),
        ]
    )
    found = error_of(response)
    assert found.reason is Reason.UNSUPPORTED_OPERATION
    assert found.source is Source.ERROR_INFO
    assert found.jsonrpc_code == -32004
    assert classify(response).action is Action.DEGRADE


@pytest.mark.parametrize("event", ["error", None], ids=["event-error", "no-event-name"])
def test_sse_status_error_event(event: str | None) -> None:
    """A ``{"error": {...}}`` Status event is the error, with or without ``event: error``."""
    payload = status_body(404, "NOT_FOUND", "gone", [error_info("TASK_NOT_FOUND")])
    response = sse_response(
        [sse_data({"task": task("TASK_STATE_WORKING")}), sse_data(payload, event=event)]
    )
    found = error_of(response)
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.ERROR_INFO


def test_sse_all_results_is_none() -> None:
    """A stream of result events only carries no error."""
    response = sse_response(
        [
            ": keep-alive",
            sse_data(jsonrpc_result({"task": task("TASK_STATE_WORKING")}), event_id="1"),
            sse_data(jsonrpc_result({"task": task("TASK_STATE_FAILED")}), event_id="2"),
        ]
    )
    assert normalize(response) is None
    assert classify(response).action is Action.OK


def test_sse_non_json_data_is_invalid_agent_response() -> None:
    """An event whose data is not JSON breaks the protocol: INVALID_AGENT_RESPONSE."""
    response = sse_response([sse_data(STATUS_UPDATE), "data: {not json"])
    found = error_of(response)
    assert found.reason is Reason.INVALID_AGENT_RESPONSE
    assert classify(response).action is Action.REPORT


def test_sse_multiline_data_is_joined() -> None:
    """An event's ``data:`` lines are joined with newlines before parsing."""
    error = json.dumps(jsonrpc_error(-32001, "x"), indent=1).splitlines()
    response = sse_response(["\n".join(f"data: {line}" for line in error)])
    assert error_of(response).reason is Reason.TASK_NOT_FOUND


def test_sse_body_holding_unicode_line_separators_is_read_event_by_event() -> None:
    """U+2028, U+2029, U+0085 in an event (raw, as a2a-sdk writes it) do not split its line."""
    text = "one\u2028two\u2029three\x85four"
    working = task("TASK_STATE_WORKING")
    working["status"]["message"]["parts"] = [{"text": text}]
    result = jsonrpc_result({"task": working})
    valid = httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=f"data: {json.dumps(result, ensure_ascii=False)}\r\n\r\n".encode(),
    )
    assert normalize(valid) is None
    assert classify(valid).action is Action.OK
    error = jsonrpc_error(-32001, f"gone{text}")
    broken = httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=(
            f"data: {json.dumps(result, ensure_ascii=False)}\n\n"
            f"data: {json.dumps(error, ensure_ascii=False)}\n\n"
        ).encode(),
    )
    assert error_of(broken).reason is Reason.TASK_NOT_FOUND


def test_sse_body_with_a_line_past_its_cap_is_invalid() -> None:
    """The one reader's caps hold for a whole body too."""
    body = b"data: " + b"x" * 200 + b"\n\n"
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)
    found = normalize(response, limits=Limits(max_sse_line=100))
    assert found is not None
    assert found.reason is Reason.INVALID_AGENT_RESPONSE


def test_sse_event_data_as_dict() -> None:
    """One SSE event's parsed data is classified like a body."""
    assert error_of(jsonrpc_error(-32003, "push")).reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED


# --- success responses that break the protocol, and task outcomes ------------------------------


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"hello", "text/plain"),
        (b"<html>OK</html>", "text/html"),
        (b'{"jsonrpc": "2.0", "id": 1, "result": ', "application/json"),
        ('{"jsonrpc":"2.0","id":1,"result":{"t":"café"}}'.encode("latin-1"), "application/json"),
        (
            json.dumps({**jsonrpc_result({"x": 1}), "error": {"code": -32001}}).encode(),
            "application/json",
        ),
        (b'{"jsonrpc": "2.0", "id": 1}', "application/json"),
    ],
    ids=["text", "html", "truncated", "latin-1", "result-and-error", "neither"],
)
def test_broken_success_response_is_invalid_agent_response(
    content: bytes, content_type: str
) -> None:
    """A 200 that is not JSON, not UTF-8, or a broken envelope is INVALID_AGENT_RESPONSE."""
    response = httpx.Response(200, content=content, headers={"content-type": content_type})
    found = error_of(response)
    assert found.reason is Reason.INVALID_AGENT_RESPONSE
    assert found.source is Source.INVALID_RESPONSE
    assert found.kind is ErrorKind.PROTOCOL
    assert classify(response).action is Action.REPORT


@pytest.mark.parametrize(
    "state",
    [
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_AUTH_REQUIRED",
        "TASK_STATE_COMPLETED",
        "failed",
    ],
)
def test_task_outcomes_are_results(state: str) -> None:
    """A successful call whose task FAILED, was REJECTED or waits for input is not an error."""
    for response in (
        json_response(200, jsonrpc_result({"task": task(state)})),
        json_response(200, jsonrpc_result(task(state))),
        json_response(200, task(state), content_type="application/a2a+json"),
    ):
        assert normalize(response) is None
        decision = classify(response)
        assert decision.action is Action.OK
        assert decision.reason is None
        assert decision.ok


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"status": "OK"}},
        {"error": {"code": 0, "status": "OK", "message": "fine"}},
        {"code": 0, "message": "fine", "details": []},
    ],
    ids=["status-name", "code-and-name", "bare-status"],
)
def test_an_error_is_never_ok(body: dict[str, Any]) -> None:
    """A body classifies as ok exactly when it carries no CallError (never an ok error)."""
    for x in (body, json_response(200, body), json_response(400, body)):
        assert (normalize(x) is None) == (classify(x).action is Action.OK)


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_no_content_is_no_error(
    method: str, through_transport: Callable[..., httpx.Response]
) -> None:
    """A 204 (e.g. a deleted push config) is a result."""
    response = through_transport(httpx.Response(204), method=method)
    assert normalize(response) is None
    assert classify(response).action is Action.OK


@pytest.mark.parametrize("x", [None, 42, 1.5, object(), "  ", jsonrpc_result(None)], ids=repr)
def test_non_error_inputs(x: object) -> None:
    """Inputs that are no error at all do not raise."""
    decision = classify(x)
    assert isinstance(decision.action, Action)


def test_plain_values_are_results() -> None:
    """None, numbers and other objects are results: no call error."""
    for value in (None, 42, object()):
        assert normalize(value) is None


# --- precedence: reason first -----------------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [
        json_response(
            401, status_body(401, "UNAUTHENTICATED", "x", [error_info("TASK_NOT_FOUND")])
        ),
        json_response(403, jsonrpc_error(-32001, "x", [error_info("TASK_NOT_FOUND")])),
        json_response(403, status_body(404, "NOT_FOUND", "x", [error_info("TASK_NOT_FOUND")])),
        json_response(401, {"type": PROBLEM_PREFIX + "version-not-supported", "status": 401}),
        rpc_error(grpc.StatusCode.UNAUTHENTICATED, "x", packed_error_info("TASK_NOT_FOUND")),
        rpc_error(
            grpc.StatusCode.PERMISSION_DENIED, "x", packed_error_info("VERSION_NOT_SUPPORTED")
        ),
        status_body(400, "PERMISSION_DENIED", "x", [error_info("UNSUPPORTED_OPERATION")]),
        status_body(400, "FAILED_PRECONDITION", "x", [error_info("UNAUTHENTICATED")]),
    ],
    ids=[
        "401-status-json",
        "403-jsonrpc",
        "403-body-says-404",
        "401-problem",
        "grpc-unauthenticated",
        "grpc-permission-denied",
        "status-name-permission-denied",
        "auth-reason",
    ],
)
def test_auth_comes_first(x: object) -> None:
    """401/403, UNAUTHENTICATED/PERMISSION_DENIED and auth reasons are auth, whatever else."""
    found = error_of(x)
    assert found.kind is ErrorKind.AUTH
    assert classify(x).action is Action.AUTH


def test_error_info_beats_a_different_jsonrpc_code() -> None:
    """ErrorInfo's reason wins over a JSON-RPC code that names another reason."""
    body = jsonrpc_error(-32001, "Task not found", [error_info("TASK_NOT_CANCELABLE")])
    found = error_of(json_response(200, body))
    assert found.reason is Reason.TASK_NOT_CANCELABLE
    assert found.source is Source.ERROR_INFO
    assert found.jsonrpc_code == -32001


@pytest.mark.parametrize(
    ("status", "grpc_name", "reason", "action"),
    [
        (404, "NOT_FOUND", "UNSUPPORTED_OPERATION", Action.DEGRADE),
        (500, "INTERNAL", "VERSION_NOT_SUPPORTED", Action.FIX_REQUEST),
        (502, "UNAVAILABLE", "TASK_NOT_FOUND", Action.RECONCILE),
        (409, "ABORTED", "CONTENT_TYPE_NOT_SUPPORTED", Action.FIX_REQUEST),
        (503, "UNAVAILABLE", "INVALID_AGENT_RESPONSE", Action.REPORT),
    ],
    ids=["404", "500", "502", "409", "503"],
)
def test_error_info_beats_the_http_status(
    status: int, grpc_name: str, reason: str, action: Action
) -> None:
    """ErrorInfo's reason wins over an HTTP status (and gRPC name) that says otherwise."""
    response = json_response(status, status_body(status, grpc_name, "x", [error_info(reason)]))
    found = error_of(response)
    assert found.reason is Reason(reason)
    assert found.source is Source.ERROR_INFO
    assert classify(response).action is action


@pytest.mark.parametrize(
    "body",
    [
        {
            "type": PROBLEM_PREFIX + "version-not-supported",
            "status": 400,
            "code": -32001,
            "message": "Task not found",
        },
        jsonrpc_error(-32001, "x", {"type": PROBLEM_PREFIX + "version-not-supported"}),
    ],
    ids=["problem-with-code", "jsonrpc-with-problem-data"],
)
def test_jsonrpc_code_beats_problem_type(body: dict[str, Any]) -> None:
    """A JSON-RPC code wins over a problem type URI in the same body."""
    found = error_of(json_response(400, body, content_type="application/problem+json"))
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.JSONRPC_CODE


def test_jsonrpc_code_beats_http_status() -> None:
    """A JSON-RPC code wins over an HTTP status that names another reason."""
    found = error_of(json_response(404, jsonrpc_error(-32002, "x")))
    assert found.reason is Reason.TASK_NOT_CANCELABLE
    assert found.source is Source.JSONRPC_CODE


def test_problem_type_beats_http_status() -> None:
    """A problem type URI wins over the status (the 1.0.0 502 is not INVALID_AGENT_RESPONSE)."""
    body = {"type": PROBLEM_PREFIX + "task-not-found", "status": 502, "detail": "x"}
    found = error_of(json_response(502, body, content_type="application/problem+json"))
    assert found.reason is Reason.TASK_NOT_FOUND
    assert found.source is Source.PROBLEM_TYPE


@pytest.mark.parametrize(
    ("x", "reason"),
    [
        (jsonrpc_error(-32002, "Task not found"), Reason.TASK_NOT_CANCELABLE),
        (jsonrpc_error(-32050, "TASK_NOT_FOUND"), None),
        (status_body(400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"), None),
        (status_body(400, "FAILED_PRECONDITION", "VersionNotSupportedError"), None),
        ({"status": 400, "detail": "TASK_NOT_FOUND", "title": "Task not found"}, None),
    ],
    ids=["jsonrpc", "unassigned-code", "status-json", "class-name", "problem"],
)
def test_message_text_is_never_parsed(x: dict[str, Any], reason: Reason | None) -> None:
    """A message naming a reason never decides it."""
    assert error_of(x).reason is reason


@pytest.mark.parametrize(
    ("alias", "reason", "action"),
    [
        ("EXTENDED_CARD_NOT_CONFIGURED", Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED, Action.DEGRADE),
        ("UNSUPPORTED_CONTENT_TYPE", Reason.CONTENT_TYPE_NOT_SUPPORTED, Action.FIX_REQUEST),
        ("TaskNotFoundError", Reason.TASK_NOT_FOUND, Action.RECONCILE),
        ("task-not-cancelable", Reason.TASK_NOT_CANCELABLE, Action.RECONCILE),
    ],
    ids=str,
)
def test_error_info_aliases_canonicalise(alias: str, reason: Reason, action: Action) -> None:
    """An ErrorInfo reason alias decides as its canonical reason."""
    body = status_body(400, "FAILED_PRECONDITION", "x", [error_info(alias)])
    decision = classify(json_response(400, body))
    assert decision.reason is reason
    assert decision.action is action


@pytest.mark.parametrize(
    "x",
    [
        jsonrpc_error(-32001, "x", [error_info("QUOTA_GONE")]),
        status_body(503, "UNAVAILABLE", "x", [error_info("QUOTA_GONE")]),
        status_body(404, "NOT_FOUND", "x", [error_info("QUOTA_GONE")]),
    ],
    ids=["jsonrpc", "503", "404"],
)
def test_unknown_error_info_reason_is_kept_and_reported(x: dict[str, Any]) -> None:
    """An unknown A2A-domain reason is kept as sent, beats code and status, and is reported."""
    found = error_of(x)
    assert found.reason == "QUOTA_GONE"
    assert not isinstance(found.reason, Reason)
    assert found.source is Source.ERROR_INFO
    assert not found.is_known
    assert classify(x).action is Action.REPORT


def test_first_a2a_error_info_without_reason_is_skipped() -> None:
    """An A2A ErrorInfo with an empty reason does not hide a later one."""
    body = status_body(
        400, "FAILED_PRECONDITION", "x", [error_info(""), error_info("UNSUPPORTED_OPERATION")]
    )
    assert error_of(body).reason is Reason.UNSUPPORTED_OPERATION


# --- server hints ---------------------------------------------------------------------------

DATE = "Wed, 21 Oct 2015 07:28:00 GMT"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT", "Date": DATE}, 30.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:27:00 GMT", "Date": DATE}, 0.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:30 GMT"}, 0.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"Retry-After": "2", "retry-after-ms": "3500"}, 3.5),
        ({"Retry-After": "4", "retry-after-ms": "1000"}, 4.0),
        ({"Retry-After": "soon", "retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3", "retry-after-ms": "lots"}, 3.0),
        ({"Retry-After": "-5"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "Wed, 99 Foo 2015"}, None),
        ({}, None),
    ],
    ids=[
        "seconds",
        "http-date",
        "http-date-past",
        "http-date-past-no-date-header",
        "ms",
        "ms-larger",
        "seconds-larger",
        "bad-seconds",
        "bad-ms",
        "negative",
        "nan",
        "inf",
        "bad-date",
        "none",
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    """Retry-After (seconds or HTTP-date) and retry-after-ms become seconds; junk is ignored."""
    for status in (429, 503):
        found = error_of(httpx.Response(status, headers=headers))
        assert found.retry_after == (pytest.approx(expected) if expected is not None else None)
        assert classify(httpx.Response(status, headers=headers)).retry_after == found.retry_after


@pytest.mark.parametrize(
    ("delay", "headers", "expected"),
    [
        ("1.5s", {}, 1.5),
        ("10s", {"Retry-After": "2"}, 10.0),
        ("1s", {"Retry-After": "2"}, 2.0),
        ("junk", {"Retry-After": "2"}, 2.0),
    ],
    ids=["retryinfo", "retryinfo-larger", "header-larger", "bad-retryinfo"],
)
def test_retry_info_json_and_headers(delay: str, headers: dict[str, str], expected: float) -> None:
    """RetryInfo ``retryDelay`` in JSON counts as a hint; with headers, the largest wins."""
    body = status_body(503, "UNAVAILABLE", "x", [retry_info(delay)])
    assert error_of(json_response(503, body, headers=headers)).retry_after == pytest.approx(
        expected
    )
    rpc = jsonrpc_error(-32603, "x", [retry_info(delay)])
    found = error_of(json_response(200, rpc, headers=headers))
    assert found.retry_after == pytest.approx(expected)


# --- the CallError record -------------------------------------------------------------------


def test_call_error_is_frozen() -> None:
    """A CallError cannot be changed after it is built."""
    found = error_of(jsonrpc_error(-32001, "x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.reason = Reason.TASK_NOT_CANCELABLE  # type: ignore[misc]


def test_str_escapes_control_and_bidi_characters() -> None:
    """str(error) shows escape sequences and bidi overrides escaped, never raw."""
    found = error_of(jsonrpc_error(-32001, "red \x1b[31malert\u202e txt\nnext"))
    text = str(found)
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "\n" not in text
    assert "\\x1b[31malert" in text
    assert "\\u202e" in text
    assert text.startswith("TASK_NOT_FOUND")
    assert found.message == "red \x1b[31malert\u202e txt\nnext"


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("\x1b[31m", "\\x1b[31m"),
        ("a\u202eb", "a\\u202eb"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("a\tb\r\n", "a\\tb\\r\\n"),
        ("\x7f\x85", "\\x7f\\x85"),
        ("plain text, é ü 漢", "plain text, é ü 漢"),
    ],
    ids=["ansi", "rlo", "isolates", "whitespace", "del-c1", "plain"],
)
def test_escape(raw: str, escaped: str) -> None:
    """escape() renders control and bidi characters as escapes and keeps other text."""
    assert escape(raw) == escaped


def test_str_escapes_an_unknown_reason() -> None:
    """An unknown reason is peer text too: str(error) escapes it."""
    found = error_of(status_body(400, "X", "m", [error_info("EVIL\u202e\x1b[2J")]))
    assert found.reason == "EVIL\u202e\x1b[2J"
    text = str(found)
    assert "\u202e" not in text
    assert "\x1b" not in text


def test_call_error_copies_with_replace() -> None:
    """A CallError is a frozen dataclass: dataclasses.replace gives a changed copy."""
    found = error_of(jsonrpc_error(-32001, "x", [bad_request(("a", "b"))]))
    copy = dataclasses.replace(found, http_status=200, retry_after=1.0)
    assert (copy.http_status, copy.retry_after) == (200, 1.0)
    assert copy.reason is found.reason
    assert copy.details == found.details
    assert found.http_status is None


def test_decision_str_escapes_too() -> None:
    """A Decision's text escapes the peer's message and unknown reason."""
    text = str(classify(status_body(400, "X", "\x1b[2J", [error_info("EVIL\u202e")])))
    assert "\x1b" not in text
    assert "\u202e" not in text


def test_error_properties() -> None:
    """is_a2a, is_known and is_a2a_domain describe the reason and where it came from."""
    nine = error_of(status_body(400, "X", "x", [error_info("VERSION_NOT_SUPPORTED")]))
    assert (nine.is_a2a, nine.is_known, nine.is_a2a_domain) == (True, True, True)
    extra = error_of(jsonrpc_error(-32602, "x"))
    assert (extra.is_a2a, extra.is_known, extra.is_a2a_domain) == (False, True, False)


def test_debug_info_is_kept_but_not_rendered() -> None:
    """A DebugInfo detail is kept, and its stack never appears in str(error)."""
    found = error_of(jsonrpc_error(-32603, "boom", [debug_info("SECRET TRACE")]))
    assert any(isinstance(d, DebugInfo) for d in found.details)
    assert "SECRET TRACE" not in str(found)


# --- results checked against the operation's shape ----------------------------------------


def _ok(result: object) -> httpx.Response:
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": result})


TASK = {"id": "t-1", "status": {"state": "TASK_STATE_FAILED"}}
MESSAGE = {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}


@pytest.mark.parametrize(
    ("operation", "result", "valid"),
    [
        ("GetTask", TASK, True),
        ("GetTask", {"id": "t-1"}, False),
        ("CancelTask", {"status": {"state": "TASK_STATE_CANCELED"}}, False),
        ("SendMessage", {"task": TASK}, True),
        ("SendMessage", {"message": MESSAGE}, True),
        ("SendMessage", {"task": TASK, "message": MESSAGE}, False),
        ("SendMessage", {"task": {"id": 3}}, False),
        ("SendMessage", TASK, True),
        ("SendMessage", "done", False),
        ("ListTasks", {"tasks": [TASK]}, True),
        ("ListTasks", {"tasks": "none"}, False),
        ("GetExtendedAgentCard", {"name": "agent"}, True),
        ("GetExtendedAgentCard", [], False),
        ("CreateTaskPushNotificationConfig", {"url": "https://x"}, True),
        ("DeleteTaskPushNotificationConfig", None, True),
        ("SomethingElse", 42, True),
    ],
)
def test_a_result_is_checked_against_its_operation(
    operation: str, result: object, valid: bool
) -> None:
    """With an operation, a successful answer of the wrong shape is INVALID_AGENT_RESPONSE."""
    found = normalize(_ok(result), operation=operation)
    if valid:
        assert found is None
    else:
        assert found is not None
        assert found.reason is Reason.INVALID_AGENT_RESPONSE
        assert found.source is Source.INVALID_RESPONSE
        assert classify(_ok(result), operation=operation).action is Action.REPORT


def test_without_an_operation_a_result_is_not_checked() -> None:
    """No operation, no shape to check: any JSON-RPC result is a result."""
    assert normalize(_ok({"anything": True})) is None


def test_rest_and_parsed_bodies_are_checked_too() -> None:
    """An HTTP+JSON body and a parsed dict are checked the same way."""
    assert normalize(httpx.Response(200, json={"id": "x"}), operation="GetTask") is not None
    assert normalize({"id": "x"}, operation="GetTask") is not None
    assert normalize(TASK, operation="GetTask") is None


@pytest.mark.a2a_sdk("1")
def test_a_protobuf_parse_error_is_invalid_agent_response() -> None:
    """An SDK failing to parse the peer's answer: the peer broke the contract."""
    from a2a.types import a2a_pb2
    from google.protobuf import json_format

    with pytest.raises(json_format.ParseError) as raised:
        json_format.ParseDict({"id": ["not", "a", "string"]}, a2a_pb2.Task())
    found = normalize(raised.value)
    assert found is not None
    assert found.reason is Reason.INVALID_AGENT_RESPONSE


# --- statuses read against the operation they answer ----------------------------------------

NGINX_404 = (
    b"<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    b"<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
EXPRESS_404 = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Error</title>\n'
    b"</head>\n<body>\n<pre>Cannot POST /a/rest/message:send</pre>\n</body>\n</html>\n"
)


@pytest.mark.parametrize("page", [NGINX_404, EXPRESS_404, b""])
@pytest.mark.parametrize(
    "operation", ["SendMessage", "SendStreamingMessage", "ListTasks", "GetExtendedAgentCard"]
)
def test_a_web_servers_404_to_a_call_without_a_task_is_a_wrong_endpoint(
    page: bytes, operation: str
) -> None:
    """No task to lose: an HTML (or empty) 404 is a wrong URL, to fix, never TASK_NOT_FOUND."""
    response = httpx.Response(404, headers={"content-type": "text/html"}, content=page)
    decision = classify(response, operation=operation)
    assert decision.action is Action.FIX_REQUEST
    assert decision.reason is None
    error = decision.error
    assert error is not None
    assert error.transport is TransportFailure.ENDPOINT
    assert error.source is Source.STATUS_AND_OPERATION
    assert "wrong URL" in error.message


GO_404 = b"404 page not found\n"
STARLETTE_404 = b"Not Found"
FASTAPI_404 = b'{"detail":"Not Found"}'


@pytest.mark.parametrize(
    ("page", "content_type"),
    [
        (NGINX_404, "text/html"),
        (EXPRESS_404, "text/html; charset=utf-8"),
        (GO_404, "text/plain; charset=utf-8"),
        (STARLETTE_404, "text/plain; charset=utf-8"),
        (FASTAPI_404, "application/json"),
        (b"", ""),
    ],
    ids=["nginx", "express", "go", "starlette", "fastapi", "empty"],
)
@pytest.mark.parametrize("operation", [None, "GetTask", "CancelTask", "SubscribeToTask"])
def test_a_404_that_is_no_a2a_answer_is_a_wrong_endpoint_for_any_call(
    page: bytes, content_type: str, operation: str | None
) -> None:
    """A web server's page, an empty body or JSON without an error shape: fix the URL.

    Never TASK_NOT_FOUND (which would make an orchestrator drop its task handles), whether
    the operation is known or not (a GET on a JSON-RPC endpoint, a POST no route serves).
    """
    headers = {"content-type": content_type} if content_type else {}
    response = httpx.Response(404, headers=headers, content=page)
    for decision in (classify(response, operation=operation), Policy().classify(response)):
        assert decision.action is Action.FIX_REQUEST
        assert decision.reason is None
        error = decision.error
        assert error is not None
        assert error.transport is TransportFailure.ENDPOINT
        assert error.delivery is Delivery.NOT_PROCESSED
    assert classify(response).error.source is Source.STATUS_FALLBACK  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body",
    [
        jsonrpc_error(-32001, "Task not found"),
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "Task not found"}},
        status_body(404, "NOT_FOUND", "gone", [error_info("TASK_NOT_FOUND")]),
        status_body(404, "NOT_FOUND", "gone"),
        {"type": "https://a2a-protocol.org/errors/task-not-found", "status": 404},
    ],
    ids=["jsonrpc", "python-a2a", "status-errorinfo", "status", "problem"],
)
@pytest.mark.parametrize("operation", [None, "GetTask"])
def test_a_404_that_is_an_a2a_answer_keeps_its_reason(
    body: dict[str, Any], operation: str | None
) -> None:
    """A JSON-RPC error, a google.rpc.Status or A2A problem details on 404: TASK_NOT_FOUND."""
    decision = classify(json_response(404, body), operation=operation)
    assert (decision.reason, decision.action) == (Reason.TASK_NOT_FOUND, Action.RECONCILE)


def test_an_agents_own_not_found_on_get_task_stays_task_not_found() -> None:
    """A google.rpc.Status NOT_FOUND body (no ErrorInfo) answering GetTask: TASK_NOT_FOUND."""
    body = {"error": {"code": 404, "status": "NOT_FOUND", "message": "no such task"}}
    decision = classify(httpx.Response(404, json=body), operation="GetTask")
    assert (decision.reason, decision.action) == (Reason.TASK_NOT_FOUND, Action.RECONCILE)


@pytest.mark.parametrize(
    ("verb", "url"),
    [
        ("GET", "http://a/rest/v1/tasks/t-1"),
        ("POST", "http://a/rest/v1/tasks/t-1:cancel"),
        ("GET", "http://a/tasks/t-1"),
    ],
)
def test_a_json_404_on_an_http_json_task_route_is_the_agents_task_not_found(
    verb: str, url: str
) -> None:
    """A JSON 404 on an HTTP+JSON route that names a task is the agent's TASK_NOT_FOUND.

    a2a-sdk 0.3's REST server answers an unknown task ``404 {"message": ...}``.
    """
    request = httpx.Request(verb, url)
    response = httpx.Response(404, json={"message": "Task not found"}, request=request)
    decision = classify(response)
    assert (decision.reason, decision.action) == (Reason.TASK_NOT_FOUND, Action.RECONCILE)


@pytest.mark.parametrize(
    ("verb", "url", "content"),
    [
        ("POST", "http://a/jsonrpc", b'{"detail": "Not Found"}'),  # JSON-RPC: errors come on 200
        ("POST", "http://a/rest/v1/message:send", b'{"message": "no route"}'),  # names no task
        ("GET", "http://a/rest/v1/tasks/t-1", b"<html>Not Found</html>"),  # a web server's page
        ("GET", "http://a/elsewhere/t-1", b'{"message": "no route"}'),  # no A2A route
    ],
)
def test_a_404_elsewhere_stays_a_wrong_endpoint(verb: str, url: str, content: bytes) -> None:
    """JSON on a route that names no task, or a page on one that does: fix the URL."""
    response = httpx.Response(404, content=content, request=httpx.Request(verb, url))
    decision = classify(response)
    assert decision.action is Action.FIX_REQUEST
    assert decision.error is not None
    assert decision.error.transport is TransportFailure.ENDPOINT


def test_a_404_status_kept_by_a_client_exception_keeps_task_not_found() -> None:
    """No body to judge (an SDK exception kept the status alone): the status table decides."""

    class ClientHTTPError(Exception):
        __module__ = "a2a.client.errors"
        status_code = 404

    decision = classify(ClientHTTPError("Not Found"), operation="GetTask")
    assert decision.reason is Reason.TASK_NOT_FOUND


@pytest.mark.parametrize("operation", ["GetTask", "SendMessage", "CancelTask", "ListTasks"])
def test_a_405_is_a_wrong_endpoint_for_any_operation(operation: str) -> None:
    """The route exists, not for this method: fix the request."""
    decision = classify(httpx.Response(405), operation=operation)
    assert decision.action is Action.FIX_REQUEST
    assert decision.error is not None
    assert decision.error.transport is TransportFailure.ENDPOINT


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        ("CancelTask", Reason.TASK_NOT_CANCELABLE),
        ("SendMessage", Reason.TASK_GENERATION_MISMATCH),
        ("GetTask", Reason.TASK_GENERATION_MISMATCH),
        (None, Reason.TASK_NOT_CANCELABLE),
    ],
)
def test_a_bare_409_names_task_not_cancelable_only_for_cancel_task(
    operation: str | None, reason: Reason
) -> None:
    """The 1.0.0 column for CancelTask; the draft 1.1 column elsewhere; as before unknown."""
    decision = classify(httpx.Response(409), operation=operation)
    assert decision.reason is reason
    assert decision.action is Action.RECONCILE


def test_an_a2a_body_wins_over_the_operation_reading() -> None:
    """A 404 carrying an A2A reason is read by its reason, whatever the operation."""
    body = {
        "error": {
            "code": 404,
            "status": "NOT_FOUND",
            "message": "no such task",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                }
            ],
        }
    }
    decision = classify(httpx.Response(404, json=body), operation="SendMessage")
    assert decision.reason is Reason.TASK_NOT_FOUND
    assert decision.error is not None
    assert decision.error.source is Source.ERROR_INFO


# --- every form of a body is one input ------------------------------------------------------

_NOT_A_TASK = {"jsonrpc": "2.0", "id": 1, "result": {"id": "t-1"}}
_A_FAILED_TASK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {"id": "t-1", "status": {"state": "TASK_STATE_FAILED"}},
}


@pytest.mark.parametrize("form", [lambda b: b, json.dumps, lambda b: json.dumps(b).encode()])
def test_every_form_of_a_body_gets_the_operations_shape_check(form: Any) -> None:
    """dict, str and bytes: the same INVALID_AGENT_RESPONSE, and the same ok for a task."""
    assert classify(form(_NOT_A_TASK), operation="GetTask").reason is (
        Reason.INVALID_AGENT_RESPONSE
    )
    assert classify(form(_A_FAILED_TASK), operation="GetTask").action is Action.OK


@pytest.mark.parametrize("form", [lambda b: b, lambda b: json.dumps(b).encode()])
def test_a_json_array_answers_no_operation(form: Any) -> None:
    """A JSON array answering GetTask is not a Task."""
    decision = classify(form([{"id": "t-1"}]), operation="GetTask")
    assert decision.reason is Reason.INVALID_AGENT_RESPONSE
    assert classify(form([{"id": "t-1"}])).action is Action.OK  # no operation: no shape


# --- a 200 whose body is not what the operation returns -------------------------------------

_TASK_1_0 = {
    "id": "t-1",
    "contextId": "ctx-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2025-11-09T10:30:00Z"},
}
_TASK_0_3 = {"id": "t-1", "contextId": "ctx-1", "kind": "task", "status": {"state": "completed"}}
_UPSTREAM = {"error": "upstream timeout"}

_NOT_TASKS = [
    pytest.param(_UPSTREAM, id="a gateway's error text (HTTP+JSON)"),
    pytest.param({"error": None}, id="error null"),
    pytest.param({"error": ["x"]}, id="error a list"),
    pytest.param(jsonrpc_result(_UPSTREAM), id="JSON-RPC result: the error text"),
    pytest.param(jsonrpc_result({"id": "t-1"}), id="JSON-RPC result: no status"),
    pytest.param(
        jsonrpc_result({**_TASK_0_3, "kind": "message", "messageId": "m"}), id="0.3 Message"
    ),
    pytest.param({"messageId": "m-1", "role": "ROLE_AGENT", "parts": []}, id="1.0 Message"),
    pytest.param([_TASK_1_0], id="a JSON array"),
]


def _response(body: object) -> httpx.Response:
    return httpx.Response(200, content=json.dumps(body).encode(), headers=_JSON_TYPE)


_JSON_TYPE = {"content-type": "application/json"}


@pytest.mark.parametrize("body", _NOT_TASKS)
@pytest.mark.parametrize("form", [lambda b: b, _response], ids=["parsed", "httpx.Response"])
def test_a_200_that_is_not_a_task_answers_get_task_broken(form: Any, body: object) -> None:
    """GetTask answered 200 with no Task: INVALID_AGENT_RESPONSE (report), in either form."""
    found = normalize(form(body), operation="GetTask")
    assert found is not None
    assert found.reason is Reason.INVALID_AGENT_RESPONSE
    assert found.source is Source.INVALID_RESPONSE
    assert "GetTask" in found.message
    decision = classify(form(body), operation="GetTask")
    assert (decision.action, decision.reason) == (Action.REPORT, Reason.INVALID_AGENT_RESPONSE)


def test_the_response_keeps_its_status_on_the_broken_answer() -> None:
    """The 200 that carried the broken answer is on the error, as for any other."""
    found = normalize(_response(_UPSTREAM), operation="GetTask")
    assert found is not None
    assert found.http_status == 200


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_TASK_1_0, id="1.0 Task (HTTP+JSON)"),
        pytest.param(_TASK_0_3, id="0.3 Task (HTTP+JSON)"),
        pytest.param(jsonrpc_result(_TASK_1_0), id="1.0 Task (JSON-RPC)"),
        pytest.param(jsonrpc_result(_TASK_0_3), id="0.3 Task (JSON-RPC)"),
        pytest.param(
            jsonrpc_result({**_TASK_1_0, "status": {"state": "TASK_STATE_FAILED"}}), id="FAILED"
        ),
    ],
)
@pytest.mark.parametrize("form", [lambda b: b, _response], ids=["parsed", "httpx.Response"])
def test_a_real_task_still_answers_get_task(form: Any, body: object) -> None:
    """A 1.0 or 0.3 Task, in any state, is GetTask's answer: ok."""
    assert normalize(form(body), operation="GetTask") is None
    assert classify(form(body), operation="GetTask").action is Action.OK


@pytest.mark.parametrize("form", [lambda b: b, _response], ids=["parsed", "httpx.Response"])
def test_without_a_known_shape_the_body_is_not_judged(form: Any) -> None:
    """No operation, an unknown one, or one whose answer is not checked: as before, a result."""
    for operation in (None, "SomethingElse", "tasks/get", "DeleteTaskPushNotificationConfig"):
        assert normalize(form(_UPSTREAM), operation=operation) is None


def test_an_a2a_error_on_200_is_still_that_error() -> None:
    """The shape check comes after the error reading: a JSON-RPC error stays itself."""
    body = jsonrpc_error(-32001, "Task not found")
    for form in (body, _response(body)):
        found = normalize(form, operation="GetTask")
        assert found is not None
        assert found.reason is Reason.TASK_NOT_FOUND


def test_a_guarded_get_task_raises_on_a_broken_200() -> None:
    """Guard.call with operation="GetTask" raises instead of handing the body back as success."""
    guard = Guard(sleep=lambda _: None)
    with pytest.raises(ReportNeeded) as caught:
        guard.call(lambda: _response(_UPSTREAM), operation="GetTask")
    assert caught.value.decision.reason is Reason.INVALID_AGENT_RESPONSE
    assert guard.call(lambda: _response(_TASK_0_3), operation="GetTask").status_code == 200
    assert guard.call(lambda: _response(_UPSTREAM)).status_code == 200  # no operation: a result


# --- draft A2A 1.1 --------------------------------------------------------------------------


def test_the_draft_generation_mismatch_is_read_on_every_binding() -> None:
    """-32010, gRPC ABORTED with its ErrorInfo, HTTP 409 Status: TASK_GENERATION_MISMATCH."""
    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_GENERATION_MISMATCH",
        "domain": "a2a-protocol.org",
    }
    jsonrpc = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32010, "message": "stale"}}
    rest = {"error": {"code": 409, "status": "ABORTED", "message": "stale", "details": [info]}}
    for body in (jsonrpc, rest):
        decision = classify(body)
        assert (decision.reason, decision.action) == (
            Reason.TASK_GENERATION_MISMATCH,
            Action.RECONCILE,
        )
    status = status_pb2.Status(code=10, message="stale")
    from google.rpc import error_details_pb2

    status.details.add().Pack(
        error_details_pb2.ErrorInfo(reason="TASK_GENERATION_MISMATCH", domain="a2a-protocol.org")
    )
    assert classify(status).reason is Reason.TASK_GENERATION_MISMATCH
    assert Reason.TASK_GENERATION_MISMATCH.is_draft
    assert not Reason.TASK_GENERATION_MISMATCH.is_a2a


def test_a_bare_aborted_is_never_retried_as_is() -> None:
    """GRPC ABORTED alone: a conflict to re-read (reconcile), not a retry."""
    status = status_pb2.Status(code=10, message="conflict")
    decision = classify(status)
    assert decision.action is Action.RECONCILE
    assert decision.reason is Reason.TASK_GENERATION_MISMATCH


# --- codes of other tables: crewai's -32013 and its data.retry_after ---------------------------

_ODD_RETRY_AFTER = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.just(10**400),
    st.just(-(10**400)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(deadline=None, max_examples=300)
@given(
    code=st.sampled_from([-32013, -32010, -32603, -32099, 7]),
    retry_after=_ODD_RETRY_AFTER,
    missing=st.booleans(),
    extra=st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    header=st.sampled_from([None, "3", "bogus"]),
    operation=st.sampled_from([None, "SendMessage", "GetTask"]),
)
def test_odd_data_beside_a_code_never_raises_and_never_hints_wrongly(  # noqa: PLR0917
    code: int,
    retry_after: object,
    missing: bool,
    extra: dict[str, int],
    header: str | None,
    operation: str | None,
) -> None:
    """Whatever ``data.retry_after`` holds (negative, huge, NaN, a string, missing): a record.

    The hint is a finite number of seconds, not negative, or None; -32013 with the key is
    RATE_LIMITED, without it no reason; the record renders and serialises.
    """
    data: dict[str, object] = {k: v for k, v in extra.items() if k != "retry_after"}
    if not missing:
        data["retry_after"] = retry_after
    body = {"jsonrpc": "2.0", "error": {"code": code, "message": "m", "data": data}, "id": 1}
    headers = {"retry-after": header} if header else {}
    # NaN and infinities go on the wire as Python writes them (not JSON: read as no JSON).
    response = httpx.Response(200, content=json.dumps(body).encode(), headers=headers)
    standard = missing or not (isinstance(retry_after, float) and not math.isfinite(retry_after))
    for value in (body, response):
        error = normalize(value, operation=operation)
        assert error is not None
        hint = error.retry_after
        assert hint is None or (math.isfinite(hint) and hint >= 0)
        if code == -32013 and (standard or value is body):
            assert error.reason is (None if missing else Reason.RATE_LIMITED)
        json.dumps(error.to_dict(), allow_nan=False)
        assert str(error)
        decision = classify(value, operation=operation)
        assert decision.action is not None


# --- delivery: what reached the agent ---------------------------------------------------------

NOT_SENT, NOT_PROCESSED, UNKNOWN = Delivery.NOT_SENT, Delivery.NOT_PROCESSED, Delivery.UNKNOWN


def expected_delivery(reason: Reason) -> Delivery:
    """An A2A reason the agent sent: refused, but for the three that may follow done work."""
    unknown = (Reason.INTERNAL_ERROR, Reason.UNKNOWN_ERROR, Reason.INVALID_AGENT_RESPONSE)
    return UNKNOWN if reason in unknown else NOT_PROCESSED


GRPC_UNKNOWN = ("CANCELLED", "UNKNOWN", "DEADLINE_EXCEEDED", "INTERNAL", "DATA_LOSS", "UNAVAILABLE")


@pytest.mark.parametrize("code", [c for c in grpc.StatusCode if c is not grpc.StatusCode.OK])
def test_every_grpc_code_has_its_delivery(code: grpc.StatusCode) -> None:
    """A gRPC status without details: unknown for the codes that may follow done work."""
    expected = UNKNOWN if code.name in GRPC_UNKNOWN else NOT_PROCESSED
    assert error_of(rpc_error(code, "x")).delivery is expected


def test_grpc_unavailable_with_details_is_not_processed() -> None:
    """UNAVAILABLE with a status trailer is the server's; bare, it may be a reset connection."""
    with_details = rpc_error(grpc.StatusCode.UNAVAILABLE, "busy", packed_retry_info(1))
    assert error_of(with_details).delivery is NOT_PROCESSED
    assert error_of(rpc_error(grpc.StatusCode.UNAVAILABLE, "reset")).delivery is UNKNOWN


def test_grpc_unavailable_with_a_pushback_is_not_processed() -> None:
    """UNAVAILABLE with grpc-retry-pushback-ms is the server's "not now"; INTERNAL stays unknown."""
    assert error_of(rpc_error(grpc.StatusCode.UNAVAILABLE, "busy", pushback_ms="250")).delivery is (
        NOT_PROCESSED
    )
    assert error_of(rpc_error(grpc.StatusCode.UNAVAILABLE, "x", pushback_ms="-1")).delivery is (
        NOT_PROCESSED
    )
    assert error_of(rpc_error(grpc.StatusCode.INTERNAL, "x", pushback_ms="250")).delivery is UNKNOWN


class NotSentRpcError(FakeRpcError, NotSentError):
    """A gRPC error a door raised for a call it never made."""


def test_not_sent_error_is_a_connect_failure_not_sent() -> None:
    """NotSentError, alone or as a cause, is not sent; a gRPC one keeps its status."""
    alone = error_of(NotSentError("no connection"))
    assert (alone.kind, alone.transport, alone.delivery) == (
        ErrorKind.TRANSPORT,
        TransportFailure.CONNECT,
        NOT_SENT,
    )
    assert classify(NotSentError()).action is Action.RETRY
    assert error_of(raised_from(httpx.ReadError("x"), NotSentError())).delivery is NOT_SENT
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        found = error_of(NotSentRpcError(code, "the channel could not connect"))
        assert (found.grpc_status, found.delivery) == (code.name, NOT_SENT)
        assert classify(NotSentRpcError(code)).action is Action.RETRY
        assert error_of(rpc_error(code, "the same, sent")).delivery is UNKNOWN


# --- 503 and the server's own word -------------------------------------------------------------

ENVOY = "upstream connect error or disconnect/reset before headers. reset reason: overflow"
AGENT_503 = [
    json_response(503, status_body(503, "UNAVAILABLE", "overloaded")),
    json_response(
        503,
        {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}},
        content_type="application/a2a+json",
    ),
    json_response(503, jsonrpc_error(-32000, "server busy")),
]
BARE_503 = [
    httpx.Response(503),
    httpx.Response(503, text=ENVOY),
    httpx.Response(503, html="<html><body><h1>503 Service Unavailable</h1></body></html>"),
    json_response(503, {"message": "no healthy upstream"}),
    json_response(
        503,
        {"type": "about:blank", "title": "Service Unavailable", "status": 503},
        content_type="application/problem+json",
    ),
]
HINTS = [
    {"Retry-After": "1"},
    {"retry-after-ms": "250"},
    {"Retry-After": "Sun, 09 Nov 2025 10:30:05 GMT", "Date": "Sun, 09 Nov 2025 10:30:00 GMT"},
]


def _with(response: httpx.Response, headers: dict[str, str]) -> httpx.Response:
    """The same answer with more headers."""
    return httpx.Response(
        response.status_code, content=response.content, headers={**response.headers, **headers}
    )


@pytest.mark.parametrize("hint", [{}, *HINTS], ids=["no-hint", "retry-after", "ms", "date"])
@pytest.mark.parametrize("response", AGENT_503, ids=["status", "a2a-json", "jsonrpc"])
def test_the_agents_own_503_is_not_processed(
    response: httpx.Response, hint: dict[str, str]
) -> None:
    """A 503 with the server's own A2A-shaped body, hint or not: refused, resent at once."""
    decision = classify(_with(response, hint), operation="SendMessage")
    assert decision.action is Action.RETRY
    assert decision.delivery is NOT_PROCESSED


@pytest.mark.parametrize(
    "response", BARE_503, ids=["empty", "envoy-text", "html", "json-message", "problem"]
)
def test_a_bare_503_is_unknown_and_a_hint_makes_it_not_processed(response: httpx.Response) -> None:
    """A proxy's 503 may follow a forwarded request; a Retry-After says the server refused it."""
    assert error_of(response).delivery is UNKNOWN
    assert classify(response, operation="SendMessage").action is Action.RETRY
    for hint in HINTS:
        found = error_of(_with(response, hint))
        assert found.delivery is NOT_PROCESSED
        assert found.retry_after is not None


@pytest.mark.parametrize("hint", [{}, *HINTS], ids=["no-hint", "retry-after", "ms", "date"])
@pytest.mark.parametrize("status", [500, 502, 504])
def test_no_hint_or_body_makes_500_502_504_not_processed(status: int, hint: dict[str, str]) -> None:
    """500, 502 and 504 may come after the work: unknown, whatever hint or Status body."""
    answers = [
        httpx.Response(status),
        httpx.Response(status, text=ENVOY),
        json_response(status, status_body(status, "UNAVAILABLE", "x")),
        json_response(status, status_body(status, "INVALID_ARGUMENT", "x")),
        json_response(status, jsonrpc_error(-32000, "x")),
        json_response(status, {"code": 14, "message": "x", "details": []}),
    ]
    for response in answers:
        assert error_of(_with(response, hint)).delivery is UNKNOWN


@pytest.mark.parametrize(
    "body",
    [
        status_body(503, "INTERNAL", "x"),
        status_body(503, "UNKNOWN", "x"),
        status_body(503, "UNAVAILABLE", "x", [error_info("INTERNAL_ERROR")]),
        jsonrpc_error(-32603, "internal"),
    ],
    ids=["internal", "unknown", "internal-error-reason", "jsonrpc-internal"],
)
def test_a_503_whose_body_may_follow_done_work_stays_unknown(body: dict[str, Any]) -> None:
    """The server's own body on a 503 that says INTERNAL (or a reason like it): unknown."""
    for hint in ({}, {"Retry-After": "1"}):
        assert error_of(json_response(503, body, headers=hint)).delivery is UNKNOWN


def test_a_status_relayed_as_it_was_reads_as_its_grpc_code() -> None:
    """A top-level Status (a transcoder's relay, grpc-gateway) is judged as a gRPC call's."""
    relayed = {"code": 14, "message": "error reading from server: EOF", "details": []}
    assert error_of(json_response(503, relayed)).delivery is UNKNOWN
    assert error_of(relayed).delivery is UNKNOWN
    assert error_of(json_response(503, relayed, headers={"Retry-After": "1"})).delivery is (
        NOT_PROCESSED
    )
    with_retry_info = {**relayed, "details": [retry_info("1s")]}
    assert error_of(json_response(503, with_retry_info)).delivery is NOT_PROCESSED
    refused = {"code": 3, "message": "bad request", "details": []}
    assert error_of(json_response(400, refused)).delivery is NOT_PROCESSED
    wrapped = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}
    assert error_of(wrapped).delivery is NOT_PROCESSED


def test_a_503_event_in_a_stream_is_the_servers_word() -> None:
    """An SSE event carrying the server's UNAVAILABLE Status: not processed."""
    event = sse_data({"error": {"code": 503, "status": "UNAVAILABLE", "message": "busy"}})
    assert error_of(sse_response([event])).delivery is NOT_PROCESSED


def test_grpc_internal_with_details_stays_unknown() -> None:
    """INTERNAL is unknown with details too."""
    exc = rpc_error(grpc.StatusCode.INTERNAL, "x", packed_bad_request("f", "d"))
    assert error_of(exc).delivery is UNKNOWN


@pytest.mark.parametrize("reason", list(Reason), ids=str)
def test_grpc_a2a_reason_decides_the_delivery(reason: Reason) -> None:
    """A gRPC status with an A2A ErrorInfo: the reason decides, whatever the code."""
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.FAILED_PRECONDITION):
        exc = rpc_error(code, "x", packed_error_info(reason.value))
        assert error_of(exc).delivery is expected_delivery(reason)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (100, NOT_PROCESSED),
        (301, UNKNOWN),
        (303, UNKNOWN),
        (307, NOT_PROCESSED),
        (308, NOT_PROCESSED),
        (400, NOT_PROCESSED),
        (404, NOT_PROCESSED),
        (408, NOT_PROCESSED),
        (409, NOT_PROCESSED),
        (429, NOT_PROCESSED),
        (500, UNKNOWN),
        (501, NOT_PROCESSED),
        (502, UNKNOWN),
        (503, UNKNOWN),
        (504, UNKNOWN),
        (505, NOT_PROCESSED),
        (507, UNKNOWN),
        (599, UNKNOWN),
    ],
)
def test_bare_http_status_delivery(status: int, expected: Delivery) -> None:
    """A bare status: 501/505 refused the call; 500/502/503/504 may follow done work."""
    assert error_of(httpx.Response(status)).delivery is expected
    page = httpx.Response(status, text="<html>x</html>", headers={"content-type": "text/html"})
    assert error_of(page).delivery is expected


@pytest.mark.parametrize("reason", list(Reason), ids=str)
@pytest.mark.parametrize("status", [400, 500, 502, 503])
def test_error_info_reason_decides_the_delivery(reason: Reason, status: int) -> None:
    """An A2A ErrorInfo names the delivery whatever the HTTP status."""
    body = status_body(status, "INTERNAL", "x", [error_info(reason.value)])
    found = error_of(json_response(status, body))
    assert found.source is Source.ERROR_INFO
    assert found.delivery is expected_delivery(reason)


@pytest.mark.parametrize(
    "row", [row for row in ROWS if row.jsonrpc is not None], ids=lambda row: row.reason.value
)
def test_jsonrpc_code_decides_the_delivery(row: ReasonRow) -> None:
    """A JSON-RPC error code on HTTP 200 (or 500) names the delivery."""
    assert row.jsonrpc is not None
    for status in (200, 500):
        found = error_of(json_response(status, jsonrpc_error(row.jsonrpc, "x")))
        assert found.reason is row.reason
        assert found.delivery is expected_delivery(row.reason)


@pytest.mark.parametrize(
    "row", [row for row in ROWS if row.problem_type is not None], ids=lambda row: row.reason.value
)
def test_problem_type_decides_the_delivery(row: ReasonRow) -> None:
    """A problem+json type URI names the delivery, on a 500 too."""
    body = {"type": row.problem_type, "title": "x", "status": 500}
    found = error_of(json_response(500, body, content_type="application/problem+json"))
    assert found.source is Source.PROBLEM_TYPE
    assert found.delivery is expected_delivery(row.reason)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.reason.value)
def test_legacy_body_decides_the_delivery(row: ReasonRow) -> None:
    """A pre-1.0 body naming the error class names the delivery, on a 500 too."""
    for body in ({"type": row.error}, {"error": f"io.a2a.spec.{row.error}", "message": "x"}):
        found = error_of(json_response(500, body))
        assert found.source is Source.LEGACY_BODY
        assert found.delivery is expected_delivery(row.reason)


TRANSPORT_DELIVERY: list[tuple[BaseException, Delivery]] = [
    (httpx.ConnectError("refused"), NOT_SENT),
    (httpx.ConnectTimeout("connect timed out"), NOT_SENT),
    (httpx.PoolTimeout("no connection free"), NOT_SENT),
    (httpx.ProxyError("proxy said no"), NOT_SENT),
    (httpx.UnsupportedProtocol("ftp"), NOT_SENT),
    (httpx.InvalidURL("bad url"), NOT_SENT),
    (httpx.LocalProtocolError("bad header"), NOT_SENT),
    (httpx.ReadTimeout("read timed out"), UNKNOWN),
    (httpx.WriteTimeout("write timed out"), UNKNOWN),
    (httpx.ReadError("reset"), UNKNOWN),
    (httpx.WriteError("broken pipe"), UNKNOWN),
    (httpx.RemoteProtocolError("server disconnected"), UNKNOWN),
    (httpx.DecodingError("bad gzip"), UNKNOWN),
    (httpx.TooManyRedirects("loop"), UNKNOWN),
    (ConnectionRefusedError(111, "refused"), NOT_SENT),
    (socket.gaierror(-2, "Name or service not known"), NOT_SENT),
    (ssl.SSLCertVerificationError("certificate verify failed"), NOT_SENT),
    (ConnectionResetError(104, "reset by peer"), UNKNOWN),
    (ConnectionAbortedError(103, "aborted"), UNKNOWN),
    (BrokenPipeError(32, "broken pipe"), UNKNOWN),
    (ssl.SSLError("bad record mac"), UNKNOWN),
    (ssl.SSLEOFError("eof"), UNKNOWN),
    (TimeoutError("timed out"), UNKNOWN),
    (AttemptCutShortError("the deadline"), UNKNOWN),
]


@pytest.mark.parametrize(
    ("exc", "expected"), TRANSPORT_DELIVERY, ids=[type(e).__name__ for e, _ in TRANSPORT_DELIVERY]
)
def test_transport_exception_delivery(exc: BaseException, expected: Delivery) -> None:
    """Raised before a byte could reach the agent: not sent; anything later: unknown."""
    found = error_of(exc)
    assert found.kind is ErrorKind.TRANSPORT
    assert found.delivery is expected


def test_an_invalid_url_from_a_real_client_is_not_sent() -> None:
    """Httpx refusing a URL before sending: not sent."""
    with httpx.Client() as client, pytest.raises(httpx.UnsupportedProtocol) as caught:
        client.post("ftp://agent.test/")
    assert error_of(caught.value).delivery is NOT_SENT


def test_read_error_while_handling_a_connect_error_is_unknown() -> None:
    """A second try's read error raised inside the first's except block is unknown, not sent."""
    try:
        try:
            raise httpx.ConnectError("refused")
        except httpx.ConnectError:
            raise httpx.ReadError("reset by peer")  # noqa: B904 (the context is the point)
    except httpx.ReadError as exc:
        found = error_of(exc)
    assert found.delivery is UNKNOWN


@pytest.mark.a2a_sdk("1")
def test_sdk_error_with_a_status_code_has_the_status_delivery() -> None:
    """An a2a-sdk error carrying an HTTP status has that status's delivery."""
    from a2a.client.errors import AgentCardResolutionError

    assert error_of(AgentCardResolutionError("x", status_code=429)).delivery is NOT_PROCESSED
    assert error_of(AgentCardResolutionError("x", status_code=503)).delivery is UNKNOWN  # bare
    assert error_of(AgentCardResolutionError("x", status_code=502)).delivery is UNKNOWN


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, text="not json", headers={"content-type": "application/json"}),
        httpx.Response(200, content=b"\xff\xfe", headers={"content-type": "application/json"}),
        json_response(200, {"jsonrpc": "2.0", "id": 1}),
    ],
    ids=["not-json", "not-utf8", "no-result"],
)
def test_broken_success_body_is_unknown(response: httpx.Response) -> None:
    """A 2xx the client cannot read (INVALID_AGENT_RESPONSE): the agent answered, unknown."""
    found = error_of(response)
    assert found.reason is Reason.INVALID_AGENT_RESPONSE
    assert found.source is Source.INVALID_RESPONSE
    assert found.delivery is UNKNOWN


def test_card_refusal_is_not_sent() -> None:
    """A call the agent card refused never left: not sent, whatever its reason."""
    error = CallError(
        ErrorKind.PROTOCOL, Reason.INTERNAL_ERROR, Source.AGENT_CARD, WireShape.NOT_SENT
    )
    assert error.delivery is NOT_SENT
    assert error.to_dict()["delivery"] == "not_sent"


def test_delivery_given_is_kept_and_reported() -> None:
    """An explicit delivery overrides the derived one, in the record and its dict."""
    error = CallError(
        ErrorKind.TRANSPORT, None, Source.TRANSPORT, WireShape.TRANSPORT, delivery=NOT_SENT
    )
    assert error.delivery is NOT_SENT
    assert error.to_dict()["delivery"] == "not_sent"
    refused = httpx.Response(503, headers={"Retry-After": "1"})
    assert error_of(refused).to_dict()["delivery"] == "not_processed"


def test_dns_failure_is_a_connect_failure() -> None:
    """socket.gaierror (DNS) is a connect failure, retried, not an unjudged exception."""
    exc = socket.gaierror(-2, "Name or service not known")
    found = error_of(exc)
    assert found.transport is TransportFailure.CONNECT
    assert classify(exc).action is Action.RETRY


class _UnprintableError(ValueError):
    """An exception whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class _UnprintableConnect(httpx.ConnectError):
    """A transport exception whose ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_an_exception_that_cannot_be_printed_is_never_taken_for_a_call_error() -> None:
    """Unreadable exception text: a known transport failure stays one; anything else is unknown."""
    bug = normalize(_UnprintableError())
    assert bug is not None
    assert (bug.kind, bug.transport, bug.reason) == (
        ErrorKind.TRANSPORT,
        TransportFailure.UNKNOWN,
        None,
    )
    connect = normalize(_UnprintableConnect("x"))
    assert connect is not None
    assert connect.transport is TransportFailure.CONNECT
    assert connect.message.startswith("the connection could not be made (")  # never its text


def test_an_exception_that_defeats_every_reader_is_unknown_not_a_protocol_error() -> None:
    """Whatever raises while an exception is read, normalize answers "unknown", never raises."""

    class HostileError(Exception):
        @property
        def __cause__(self) -> BaseException | None:  # type: ignore[override]
            raise RuntimeError("no cause")

    error = normalize(HostileError())
    assert error is not None
    assert (error.kind, error.transport) == (ErrorKind.TRANSPORT, TransportFailure.UNKNOWN)
    assert error.exception.endswith("HostileError")


# --- details ---------------------------------------------------------------------------------

_INFO = [error_info("TASK_NOT_FOUND", metadata={"taskId": "t-1"})]


def test_details_that_are_not_objects_are_left_out_of_the_record() -> None:
    """Strings, numbers and nulls among the details: the record keeps the objects alone."""
    body = jsonrpc_error(-32001, "m", ["junk", 7, None, *_INFO, [1]])
    error = normalize(httpx.Response(200, json=body))
    assert error is not None
    assert error.reason == "TASK_NOT_FOUND"
    assert error.raw_details == tuple(_INFO)
    assert error.metadata == {"taskId": "t-1"}


# --- a2a-go's auth codes through an a2a-sdk exception -----------------------------------------


class _JSONRPCError:
    """What a2a-sdk 0.3's ``A2AClientJSONRPCError`` keeps of the error: its code."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.message = "unauthenticated"


class _ClientJSONRPCError(Exception):
    """A stand-in of a2a-sdk 0.3's ``A2AClientJSONRPCError`` (``exc.error`` kept)."""

    __module__ = "a2a.client.errors"

    def __init__(self, code: int) -> None:
        self.error = _JSONRPCError(code)
        super().__init__(f"JSON-RPC Error {code}: TASK_NOT_FOUND")  # the text never decides


@pytest.mark.parametrize(
    ("code", "reason"),
    [(-31401, Reason.UNAUTHENTICATED), (-31403, Reason.UNAUTHORIZED)],
)
def test_a_kept_go_auth_code_reads_as_auth(code: int, reason: Reason) -> None:
    """a2a-go's -31401 / -31403, kept by the SDK exception: auth, read from the code."""
    decision = classify(_ClientJSONRPCError(code))
    assert (decision.action, decision.reason) == (Action.AUTH, reason)
    assert decision.error is not None
    assert decision.error.kind is ErrorKind.AUTH
    assert decision.error.source is Source.JSONRPC_CODE
    assert decision.error.jsonrpc_code == code


def test_a_kept_code_the_table_does_not_know_decides_nothing() -> None:
    """A code outside the table is no reason: the exception reads as before (report)."""
    decision = classify(_ClientJSONRPCError(-32099))
    assert decision.reason is None
    assert decision.action is Action.REPORT


@pytest.mark.parametrize("code", [-31401, -31403])
def test_go_auth_codes_on_http_200_read_as_auth(code: int) -> None:
    """The raw body (HTTP 200, as a2a-go sends it): auth, by the code."""
    decision = classify(json_response(200, jsonrpc_error(code, "unauthenticated")))
    assert decision.action is Action.AUTH


# --- an answer a door read itself -------------------------------------------------------------


def test_a_peer_answer_error_is_read_as_the_error_it_carries() -> None:
    """PeerAnswerError stands for the answer a door read: normalize gives its error as it is."""
    error = normalize(json_response(200, jsonrpc_error(-31401, "unauthenticated")))
    assert error is not None
    answer = PeerAnswerError(error)
    answer.__cause__ = ValueError("what a library made of it")
    assert normalize(answer) is error
