"""The a2a-sdk line of each test, and builders for the wire shapes fed to `normalize`.

The suite runs against each a2a-sdk line (0.3 and 1.x), each in its own environment (CI makes
both). A test that needs one line says so: ``@pytest.mark.a2a_sdk("1")`` (or ``"0.3"``) on the
test or class, ``pytestmark = pytest.mark.a2a_sdk("1")`` at the top of a module, or that same
line in a directory's ``conftest.py`` (``tests/e2e`` is for 1.x). Where another line is
installed, such tests are deselected, never skipped (a module or directory marked for another
line is not even imported), and the summary says how many and why. Unmarked tests, the most,
run on both lines. The hooks below; the rules in ``tests/sdk_lines.py``.

Everything here builds real objects: ``httpx.Response`` values (sent through an
``httpx.MockTransport`` when a test needs a request behind them), google.rpc details in JSON as
the spec's examples show them (protocol notes section 7), and ``grpc.RpcError`` values carrying a
real ``grpc-status-details-bin`` trailer packed with googleapis-common-protos.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2

from a2a_client_errors import CallError, normalize
from tests.sdk_lines import (
    LeftOut,
    asked_for,
    common_lines,
    count_tests,
    directory_lines,
    installed,
    item_lines,
    source_lines,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path

# --- the a2a-sdk line of a test --------------------------------------------------------------

LEFT_OUT = pytest.StashKey[LeftOut]()


def pytest_configure(config: pytest.Config) -> None:
    """Read the installed a2a-sdk once."""
    config.stash[LEFT_OUT] = LeftOut(installed())


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A directory whose conftest marks it for another line is not collected."""
    lines = source_lines(collection_path / "conftest.py") if collection_path.is_dir() else None
    left = config.stash[LEFT_OUT]
    if lines is None or left.runs(lines):
        return None
    if asked_for(collection_path, config):
        for module in sorted(collection_path.rglob("test_*.py")):
            left.leave_module(lines, count_tests(module))
    return True


class NotCollected(pytest.File):
    """A module marked for another a2a-sdk line: not imported, no tests."""

    def collect(self) -> list[pytest.Item]:
        """Nothing."""
        return []


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """A module marked for another line (itself or by its directory) is not imported."""
    marks = [source_lines(module_path), directory_lines(module_path.parent, parent.config.rootpath)]
    lines = common_lines([mark for mark in marks if mark is not None], str(module_path))
    left = parent.config.stash[LEFT_OUT]
    if lines is None or left.runs(lines):
        return None
    if asked_for(module_path, parent.config):
        left.leave_module(lines, count_tests(module_path))
    return NotCollected.from_parent(parent, path=module_path)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests marked for another line."""
    left = config.stash[LEFT_OUT]
    kept, deselected = [], []
    for item in items:
        lines = item_lines(item, config.rootpath)
        if lines is None or left.runs(lines):
            kept.append(item)
        else:
            deselected.append(item)
            left.leave_tests(lines, 1)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which tests for another a2a-sdk line were not run, and why."""
    said = terminalreporter.config.stash[LEFT_OUT].summary()
    if said:
        terminalreporter.section("a2a-sdk lines")
        for line in said:
            terminalreporter.write_line(line)


# --- wire shapes ------------------------------------------------------------------------------

A2A_DOMAIN = "a2a-protocol.org"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
DEBUG_INFO = "type.googleapis.com/google.rpc.DebugInfo"
PROBLEM_PREFIX = "https://a2a-protocol.org/errors/"

# The nine A2A errors: (reason, JSON-RPC code, gRPC 1.0.1, HTTP 1.0.1, gRPC 1.0.0, HTTP 1.0.0),
# written out from protocol notes sections 2.1 and 2.4, not derived from the package.
NINE: tuple[tuple[str, int, str, int, str, int], ...] = (
    ("TASK_NOT_FOUND", -32001, "NOT_FOUND", 404, "NOT_FOUND", 404),
    ("TASK_NOT_CANCELABLE", -32002, "FAILED_PRECONDITION", 400, "FAILED_PRECONDITION", 409),
    ("PUSH_NOTIFICATION_NOT_SUPPORTED", -32003, "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400),
    ("UNSUPPORTED_OPERATION", -32004, "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400),
    ("CONTENT_TYPE_NOT_SUPPORTED", -32005, "INVALID_ARGUMENT", 400, "INVALID_ARGUMENT", 415),
    ("INVALID_AGENT_RESPONSE", -32006, "INTERNAL", 500, "INTERNAL", 502),
    (
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        -32007,
        "FAILED_PRECONDITION",
        400,
        "FAILED_PRECONDITION",
        400,
    ),
    ("EXTENSION_SUPPORT_REQUIRED", -32008, "FAILED_PRECONDITION", 400, "FAILED_PRECONDITION", 400),
    ("VERSION_NOT_SUPPORTED", -32009, "FAILED_PRECONDITION", 400, "UNIMPLEMENTED", 400),
)
NINE_REASONS: tuple[str, ...] = tuple(row[0] for row in NINE)

# The default action of every A2A reason (the brief's mapping, point 6).
NINE_ACTIONS: dict[str, str] = {
    "TASK_NOT_FOUND": "reconcile",
    "TASK_NOT_CANCELABLE": "reconcile",
    "UNSUPPORTED_OPERATION": "degrade",
    "PUSH_NOTIFICATION_NOT_SUPPORTED": "degrade",
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED": "degrade",
    "CONTENT_TYPE_NOT_SUPPORTED": "fix_request",
    "EXTENSION_SUPPORT_REQUIRED": "fix_request",
    "VERSION_NOT_SUPPORTED": "fix_request",
    "INVALID_AGENT_RESPONSE": "report",
}


# --- what is normalised ---------------------------------------------------------------------


def error_of(x: object) -> CallError:
    """normalize(x), which must be a CallError."""
    found = normalize(x)
    assert isinstance(found, CallError), f"expected a CallError, got {found!r}"
    return found


def raised_from(exc: BaseException, cause: BaseException) -> BaseException:
    """``exc`` as raised ``from cause`` (its traceback and ``__cause__`` set)."""
    try:
        raise exc from cause
    except BaseException as raised:
        return raised


# --- google.rpc details in JSON -------------------------------------------------------------


def error_info(
    reason: str,
    *,
    domain: str = A2A_DOMAIN,
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``google.rpc.ErrorInfo`` in ProtoJSON, as the spec's examples write it."""
    return {
        "@type": ERROR_INFO,
        "reason": reason,
        "domain": domain,
        "metadata": dict(metadata) if metadata is not None else {},
    }


def bad_request(*violations: tuple[str, str]) -> dict[str, Any]:
    """A ``google.rpc.BadRequest`` with ``(field, description)`` violations."""
    return {
        "@type": BAD_REQUEST,
        "fieldViolations": [{"field": f, "description": d} for f, d in violations],
    }


def retry_info(delay: str) -> dict[str, Any]:
    """A ``google.rpc.RetryInfo`` whose ``retryDelay`` is a ProtoJSON duration (``"1.5s"``)."""
    return {"@type": RETRY_INFO, "retryDelay": delay}


def debug_info(detail: str = "stack") -> dict[str, Any]:
    """A ``google.rpc.DebugInfo``: a detail that is neither ErrorInfo nor a hint."""
    return {"@type": DEBUG_INFO, "stackEntries": ["frame 1"], "detail": detail}


# --- bodies ---------------------------------------------------------------------------------

_UNSET: Any = object()


def jsonrpc_error(
    code: int | None = -32001,
    message: str | None = "Task not found",
    data: Any = _UNSET,
    *,
    request_id: Any = 1,
) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response (§9.5); ``data`` is left out unless given."""
    error: dict[str, Any] = {}
    if code is not None:
        error["code"] = code
    if message is not None:
        error["message"] = message
    if data is not _UNSET:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def jsonrpc_result(result: Any, *, request_id: Any = 1) -> dict[str, Any]:
    """A JSON-RPC 2.0 success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def status_body(
    code: int,
    status: str,
    message: str = "error",
    details: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    """A ``google.rpc.Status`` JSON body of the HTTP+JSON binding (§11.6, AIP-193)."""
    return {"error": {"code": code, "status": status, "message": message, "details": list(details)}}


def task(state: str, task_id: str = "task-123") -> dict[str, Any]:
    """A Task in ProtoJSON whose status is ``state``."""
    return {
        "id": task_id,
        "contextId": "ctx-1",
        "status": {"state": state, "message": {"role": "ROLE_AGENT", "parts": [{"text": "x"}]}},
    }


# --- HTTP -----------------------------------------------------------------------------------


def json_response(
    status: int,
    body: Any,
    *,
    content_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """An ``httpx.Response`` with a JSON body."""
    all_headers = {"content-type": content_type, **(headers or {})}
    return httpx.Response(status, content=json.dumps(body).encode(), headers=all_headers)


def agent_unavailable(headers: Mapping[str, str] | None = None) -> httpx.Response:
    """The agent's own 503: a ``google.rpc.Status`` UNAVAILABLE body, *not processed*."""
    return json_response(503, status_body(503, "UNAVAILABLE", "overloaded"), headers=headers)


def sse_response(events: Iterable[str], *, status: int = 200) -> httpx.Response:
    """An SSE (``text/event-stream``) response; each item is one event's raw lines."""
    text = "".join(event.rstrip("\n") + "\n\n" for event in events)
    return httpx.Response(
        status, content=text.encode(), headers={"content-type": "text/event-stream"}
    )


def sse_data(payload: Any, *, event: str | None = None, event_id: str | None = None) -> str:
    """The raw lines of one SSE event whose data is ``payload`` in JSON."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event is not None:
        lines.append(f"event: {event}")
    lines.append(f"data: {json.dumps(payload)}")
    return "\n".join(lines)


def send_through(
    response: httpx.Response, *, method: str = "POST", url: str = "https://agent.test/"
) -> httpx.Response:
    """``response`` as an httpx client returns it, through a ``MockTransport`` (no network)."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            response.status_code,
            content=response.content,
            headers=response.headers,
            request=request,
        )

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        return client.request(method, url)


@pytest.fixture(name="through_transport")
def through_transport_fixture() -> Callable[..., httpx.Response]:
    """`send_through`, as a fixture."""
    return send_through


# --- gRPC -----------------------------------------------------------------------------------


def packed_error_info(
    reason: str, *, domain: str = A2A_DOMAIN, metadata: Mapping[str, str] | None = None
) -> error_details_pb2.ErrorInfo:
    """A protobuf ``google.rpc.ErrorInfo``."""
    return error_details_pb2.ErrorInfo(reason=reason, domain=domain, metadata=metadata or {})


def packed_bad_request(field: str, description: str) -> error_details_pb2.BadRequest:
    """A protobuf ``google.rpc.BadRequest`` with one violation."""
    violation = error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
    return error_details_pb2.BadRequest(field_violations=[violation])


def packed_retry_info(seconds: int, nanos: int = 0) -> error_details_pb2.RetryInfo:
    """A protobuf ``google.rpc.RetryInfo``."""
    return error_details_pb2.RetryInfo(
        retry_delay=duration_pb2.Duration(seconds=seconds, nanos=nanos)
    )


def status_trailer(code: grpc.StatusCode, message: str, *details: Any) -> bytes:
    """The bytes of a ``grpc-status-details-bin`` trailer: a packed ``google.rpc.Status``."""
    status = status_pb2.Status(code=code.value[0], message=message)
    for detail in details:
        status.details.add().Pack(detail)
    return bytes(status.SerializeToString())


class FakeRpcError(grpc.RpcError):  # type: ignore[misc]  # grpc ships no types
    """A ``grpc.RpcError`` as a gRPC stub raises it: code, details and trailing metadata."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing: Iterable[tuple[str, str | bytes]] = (),
    ) -> None:
        super().__init__(details)
        self._code = code
        self._details = details
        self._trailing = tuple(trailing)

    def code(self) -> grpc.StatusCode:
        """The status code."""
        return self._code

    def details(self) -> str:
        """The status message."""
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, str | bytes], ...]:
        """The trailing metadata, as (key, value) pairs."""
        return self._trailing


def rpc_error(
    code: grpc.StatusCode,
    message: str = "",
    *details: Any,
    pushback_ms: str | None = None,
    trailer: bytes | None = None,
) -> FakeRpcError:
    """A ``FakeRpcError`` whose trailer packs ``details`` (or carries ``trailer`` as given)."""
    trailing: list[tuple[str, str | bytes]] = []
    if trailer is not None:
        trailing.append(("grpc-status-details-bin", trailer))
    elif details:
        trailing.append(("grpc-status-details-bin", status_trailer(code, message, *details)))
    if pushback_ms is not None:
        trailing.append(("grpc-retry-pushback-ms", pushback_ms))
    return FakeRpcError(code, message, trailing)
