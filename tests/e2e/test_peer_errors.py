"""Every error a real a2a-sdk server sends, on every binding, normalised and classified.

The expectations below are what a2a-sdk 1.3.0 really puts on the wire (checked against the
raw captures, not taken from the spec), and what `normalize` / `classify` must make of it.

What the server does *not* produce, and therefore is not parametrised:

* ``EXTENSION_SUPPORT_REQUIRED`` on any binding: a2a-sdk advertises required extensions on the
  card but never rejects a request that omits them (see `test_server_accepts`).
* ``VERSION_NOT_SUPPORTED`` on gRPC: the gRPC handler never reads ``a2a-version``.
* ``PARSE_ERROR`` and ``METHOD_NOT_FOUND`` outside JSON-RPC, ``INVALID_REQUEST`` on gRPC: the
  other bindings have no JSON-RPC envelope (HTTP+JSON answers malformed JSON as
  INVALID_REQUEST; unknown routes and gRPC methods get non-A2A framework answers).
* ErrorInfo for internal errors: an executor exception becomes a JSON-RPC -32603 without
  ``data``, a bare HTTP 500 ``INTERNAL`` body without ``details``, and gRPC ``UNKNOWN`` without
  a ``grpc-status-details-bin`` trailer.
* HTTP 409/415/502 or gRPC UNIMPLEMENTED: a2a-sdk follows A2A 1.0.1 (400, FAILED_PRECONDITION).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest
from a2a.types import SendMessageResponse, TaskState
from google.rpc import error_details_pb2, status_pb2

from a2a_client_errors import classify, normalize
from a2a_client_errors.testing.peer import (
    BINDINGS,
    GRPC,
    JSONRPC,
    REST,
    SCENARIOS,
    EmbeddedPeer,
    Scenario,
    capture,
    capture_grpc_stream,
    capture_sdk,
    scenario,
)

if TYPE_CHECKING:
    from collections.abc import Callable

pytestmark = pytest.mark.e2e

A2A_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
DETAILS_KEY = "grpc-status-details-bin"

ACTIONS = {
    "TASK_NOT_FOUND": "reconcile",
    "TASK_NOT_CANCELABLE": "reconcile",
    "UNSUPPORTED_OPERATION": "degrade",
    "PUSH_NOTIFICATION_NOT_SUPPORTED": "degrade",
    "EXTENDED_AGENT_CARD_NOT_CONFIGURED": "degrade",
    "CONTENT_TYPE_NOT_SUPPORTED": "fix_request",
    "EXTENSION_SUPPORT_REQUIRED": "fix_request",
    "VERSION_NOT_SUPPORTED": "fix_request",
    "INVALID_AGENT_RESPONSE": "report",
    "INTERNAL_ERROR": "retry",
    "PARSE_ERROR": "fix_request",
    "INVALID_REQUEST": "fix_request",
    "METHOD_NOT_FOUND": "fix_request",
    "INVALID_PARAMS": "fix_request",
}


@dataclass(frozen=True)
class Wire:
    """What the server sends for one scenario on one binding.

    Attributes:
        code: JSON-RPC ``error.code`` (JSON-RPC), HTTP status (HTTP+JSON), status name (gRPC).
        error_info: Whether the error carries an A2A ``google.rpc.ErrorInfo``.
        reason: The reason `normalize` must find (None: the wire names none).
        action: The action `classify` must decide.
        source: The signal the reason (or, without one, the action) comes from.

    """

    code: int | str
    error_info: bool
    reason: str | None
    action: str
    source: str


def _a2a(reason: str, jsonrpc: int, http: int, grpc_name: str) -> dict[str, Wire]:
    """The three bindings of an error a2a-sdk sends with ErrorInfo everywhere."""
    action = ACTIONS[reason]
    return {
        JSONRPC: Wire(jsonrpc, True, reason, action, "error_info"),
        REST: Wire(http, True, reason, action, "error_info"),
        GRPC: Wire(grpc_name, True, reason, action, "error_info"),
    }


# An executor exception is not an A2AError: a2a-sdk sends no reason on HTTP+JSON and gRPC,
# only the JSON-RPC code says "internal error". Every binding must still decide "retry".
_INTERNAL = {
    JSONRPC: Wire(-32603, False, "INTERNAL_ERROR", "retry", "jsonrpc_code"),
    REST: Wire(500, False, None, "retry", "status_fallback"),
    GRPC: Wire("UNKNOWN", False, None, "retry", "status_fallback"),
}

EXPECTED_ERRORS: dict[str, dict[str, Wire]] = {
    "task_not_found": _a2a("TASK_NOT_FOUND", -32001, 404, "NOT_FOUND"),
    "task_not_cancelable": _a2a("TASK_NOT_CANCELABLE", -32002, 400, "FAILED_PRECONDITION"),
    "push_not_supported": _a2a(
        "PUSH_NOTIFICATION_NOT_SUPPORTED", -32003, 400, "FAILED_PRECONDITION"
    ),
    "unsupported_operation": _a2a("UNSUPPORTED_OPERATION", -32004, 400, "FAILED_PRECONDITION"),
    "subscribe_terminal": _a2a("UNSUPPORTED_OPERATION", -32004, 400, "FAILED_PRECONDITION"),
    "extended_card_not_configured": _a2a(
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED", -32007, 400, "FAILED_PRECONDITION"
    ),
    "content_type_not_supported": _a2a(
        "CONTENT_TYPE_NOT_SUPPORTED", -32005, 400, "INVALID_ARGUMENT"
    ),
    "invalid_params": _a2a("INVALID_PARAMS", -32602, 400, "INVALID_ARGUMENT"),
    # gRPC left out: a2a-sdk's gRPC handler does not check the version (test_server_accepts).
    "version_not_supported": {
        k: v
        for k, v in _a2a("VERSION_NOT_SUPPORTED", -32009, 400, "FAILED_PRECONDITION").items()
        if k != GRPC
    },
    "version_header_missing": {
        k: v
        for k, v in _a2a("VERSION_NOT_SUPPORTED", -32009, 400, "FAILED_PRECONDITION").items()
        if k != GRPC
    },
    "internal_error": _INTERNAL,
    # The same three shapes, after a task and a working status update were streamed.
    "stream_error_midway": _INTERNAL,
    # JSON-RPC only: a2a-sdk's JSONParseError / MethodNotFoundError carry no data.
    "parse_error": {JSONRPC: Wire(-32700, False, "PARSE_ERROR", "fix_request", "jsonrpc_code")},
    "method_not_found": {
        JSONRPC: Wire(-32601, False, "METHOD_NOT_FOUND", "fix_request", "jsonrpc_code")
    },
    # No gRPC: a malformed protobuf never reaches the A2A handler.
    "invalid_request": {
        JSONRPC: Wire(-32600, True, "INVALID_REQUEST", "fix_request", "error_info"),
        REST: Wire(400, True, "INVALID_REQUEST", "fix_request", "error_info"),
    },
}

SUCCESS_STATES = {"failed_task": "TASK_STATE_FAILED", "cancel_working": "TASK_STATE_CANCELED"}

ERROR_CASES = [
    pytest.param(name, binding, wire, id=f"{name}-{binding}")
    for name, by_binding in EXPECTED_ERRORS.items()
    for binding, wire in by_binding.items()
]
SUCCESS_CASES = [
    pytest.param(name, binding, id=f"{name}-{binding}")
    for name in SUCCESS_STATES
    for binding in BINDINGS
]
ACCEPTED_CASES = [
    pytest.param(spec.name, binding, id=f"{spec.name}-{binding}")
    for spec in SCENARIOS
    for binding in spec.accepted_on
]


# --------------------------------------------------------------------------------------------
# Reading the raw captures (independently of the package under test)
# --------------------------------------------------------------------------------------------


def _sse_events(text: str) -> list[tuple[str, Any]]:
    """Parse an SSE body into (event name, JSON data) pairs."""
    events: list[tuple[str, Any]] = []
    name, data = "message", list[str]()
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                events.append((name, json.loads("\n".join(data))))
            name, data = "message", []
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    return events


def _is_sse(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def _error_body(response: httpx.Response) -> dict[str, Any]:
    """The error object of a response: the JSON body, or the SSE error event's data."""
    if _is_sse(response):
        errors = [data for name, data in _sse_events(response.text) if name == "error"]
        assert len(errors) == 1, response.text
        body: dict[str, Any] = errors[0]
    else:
        body = response.json()
    assert isinstance(body.get("error"), dict), body
    return body


def _error_infos(details: object) -> list[dict[str, Any]]:
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, dict) and d.get("@type") == ERROR_INFO_TYPE]


def _grpc_error_infos(error: grpc.RpcError) -> list[error_details_pb2.ErrorInfo] | None:
    """The ErrorInfo details of the status trailer, or None when there is no trailer."""
    trailer = dict(error.trailing_metadata() or ()).get(DETAILS_KEY)
    if trailer is None:
        return None
    status = status_pb2.Status.FromString(trailer)
    assert status.code == error.code().value[0]
    infos = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            infos.append(info)
    return infos


def _task_state(raw: Any, binding: str) -> str:
    """The state of the task a successful SendMessage or CancelTask returned."""
    if binding == GRPC:
        assert not isinstance(raw, grpc.RpcError), raw
        # SendMessage answers a SendMessageResponse, CancelTask the Task itself.
        task = raw.task if isinstance(raw, SendMessageResponse) else raw
        return str(TaskState.Name(task.status.state))
    assert isinstance(raw, httpx.Response), raw
    assert raw.status_code == 200, raw.text
    body = raw.json()
    result = body["result"] if binding == JSONRPC else body
    task = result.get("task", result)
    return str(task["status"]["state"])


def _assert_wire(raw: object, binding: str, wire: Wire, spec: Scenario) -> None:
    """Check the raw capture against what a2a-sdk is expected to send."""
    if binding == GRPC:
        assert isinstance(raw, grpc.RpcError), raw
        assert raw.code().name == wire.code
        infos = _grpc_error_infos(raw)
        if wire.error_info:
            assert infos is not None, "no grpc-status-details-bin trailer"
            assert [(i.reason, i.domain) for i in infos] == [(spec.expected_reason, A2A_DOMAIN)]
        else:
            assert infos is None, "unexpected grpc-status-details-bin trailer"
        return
    assert isinstance(raw, httpx.Response), raw
    body = _error_body(raw)
    error = body["error"]
    if binding == JSONRPC:
        assert raw.status_code == 200
        assert body.get("jsonrpc") == "2.0"
        assert error["code"] == wire.code
        infos = _error_infos(error.get("data"))
    else:
        # HTTP+JSON: a google.rpc.Status in JSON; in an SSE error event the HTTP status is 200.
        assert raw.status_code == (200 if _is_sse(raw) else wire.code)
        assert error["code"] == wire.code
        infos = _error_infos(error.get("details"))
    if wire.error_info:
        assert [(i["reason"], i["domain"]) for i in infos] == [(spec.expected_reason, A2A_DOMAIN)]
    else:
        assert infos == []


# --------------------------------------------------------------------------------------------
# Wire captures
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "binding", "wire"), ERROR_CASES)
def test_wire_error(
    peer_for: Callable[[Scenario], EmbeddedPeer], name: str, binding: str, wire: Wire
) -> None:
    """The raw error is what a2a-sdk sends; normalize and classify read it right."""
    spec = scenario(name)
    raw = capture(peer_for(spec), binding, name)
    _assert_wire(raw, binding, wire, spec)

    error = normalize(raw)
    assert error is not None
    assert error.reason == wire.reason
    assert str(error.source) == wire.source
    if binding == JSONRPC:
        assert error.jsonrpc_code == wire.code
    elif binding == REST and not _is_sse(raw):
        # (In an SSE error event the code is inside the event; the HTTP status was 200.)
        assert error.http_status == wire.code
    elif binding == GRPC:
        assert error.grpc_status == wire.code

    decision = classify(raw, operation=spec.operation)
    assert str(decision.action) == wire.action
    assert decision.reason == wire.reason
    assert decision.error == error


@pytest.mark.parametrize(("name", "binding"), SUCCESS_CASES)
def test_wire_success(
    peer_for: Callable[[Scenario], EmbeddedPeer], name: str, binding: str
) -> None:
    """A task that FAILED (or was CANCELED) is a result: no call error, action ok."""
    spec = scenario(name)
    raw = capture(peer_for(spec), binding, name)
    assert _task_state(raw, binding) == SUCCESS_STATES[name]
    assert normalize(raw) is None
    decision = classify(raw, operation=spec.operation)
    assert str(decision.action) == "ok"
    assert decision.error is None


@pytest.mark.parametrize(("name", "binding"), ACCEPTED_CASES)
def test_server_accepts(
    peer_for: Callable[[Scenario], EmbeddedPeer], name: str, binding: str
) -> None:
    """What a2a-sdk 1.3.0 does not enforce: the request succeeds instead of failing.

    The server does not produce EXTENSION_SUPPORT_REQUIRED for a request without
    ``A2A-Extensions`` on any binding, although the card lists the extension as required; and
    the gRPC handler accepts ``a2a-version: 99.0`` or no version at all. The spec reason of
    these scenarios is therefore never seen from this server.
    """
    spec = scenario(name)
    raw = capture(peer_for(spec), binding, name, allow_unproduced=True)
    assert _task_state(raw, binding) == "TASK_STATE_COMPLETED"
    assert normalize(raw) is None
    assert str(classify(raw, operation=spec.operation).action) == "ok"


@pytest.mark.parametrize("binding", [JSONRPC, REST])
def test_stream_error_comes_after_events(peer: EmbeddedPeer, binding: str) -> None:
    """The SSE body carries result events first, then exactly one error event, last."""
    raw = capture(peer, binding, "stream_error_midway")
    assert isinstance(raw, httpx.Response)
    assert _is_sse(raw)
    events = _sse_events(raw.text)
    names = [name for name, _ in events]
    assert names[-1] == "error"
    assert names.count("error") == 1
    assert len(events) >= 2
    results = [data for name, data in events if name != "error"]
    if binding == JSONRPC:
        results = [data["result"] for data in results]
    assert any(
        r.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_WORKING"
        for r in results
    )


def test_grpc_stream_error_comes_after_events(peer: EmbeddedPeer) -> None:
    """On gRPC the stream delivers the task and a status update, then ends with UNKNOWN."""
    events, outcome = capture_grpc_stream(peer, "stream_error_midway")
    assert isinstance(outcome, grpc.RpcError)
    assert outcome.code() == grpc.StatusCode.UNKNOWN
    assert [e.WhichOneof("payload") for e in events][:1] == ["task"]
    assert any(e.HasField("status_update") for e in events)
    assert normalize(outcome) is not None
    assert str(classify(outcome, operation="SendStreamingMessage").action) == "retry"


# --------------------------------------------------------------------------------------------
# a2a-sdk's own client
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sdk:
    """What a2a-sdk's client raises for one scenario on one binding, and what we decide.

    Attributes:
        exception: The class name of the exception the client raises.
        reason: The reason `normalize` must find.
        action: The action `classify` must decide.
        source: ``sdk_exception`` when the exception is all there is (the JSON-RPC transport
            keeps only the code and drops ``error.data``); ``error_info`` when the exception is
            chained to the HTTP or gRPC error that carried the ErrorInfo.

    """

    exception: str
    reason: str | None
    action: str
    source: str


_SDK_CLASSES = {
    "task_not_found": "TaskNotFoundError",
    "task_not_cancelable": "TaskNotCancelableError",
    "push_not_supported": "PushNotificationNotSupportedError",
    "subscribe_terminal": "UnsupportedOperationError",
    "extended_card_not_configured": "ExtendedAgentCardNotConfiguredError",
    "content_type_not_supported": "ContentTypeNotSupportedError",
    "invalid_params": "InvalidParamsError",
    "version_not_supported": "VersionNotSupportedError",
}

EXPECTED_SDK: dict[str, dict[str, Sdk]] = {
    name: {
        binding: Sdk(
            cls,
            wire.reason,
            wire.action,
            "sdk_exception" if binding == JSONRPC else "error_info",
        )
        for binding, wire in EXPECTED_ERRORS[name].items()
        if binding in scenario(name).sdk_bindings
    }
    for name, cls in _SDK_CLASSES.items()
}
# Not A2AErrors on the server: the JSON-RPC transport maps -32603 to InternalError; the
# HTTP+JSON and gRPC transports raise a generic A2AClientError chained to the 500 / UNKNOWN.
EXPECTED_SDK["internal_error"] = {
    JSONRPC: Sdk("InternalError", "INTERNAL_ERROR", "retry", "sdk_exception"),
    REST: Sdk("A2AClientError", None, "retry", "status_fallback"),
    GRPC: Sdk("A2AClientError", None, "retry", "status_fallback"),
}
EXPECTED_SDK["stream_error_midway"] = {
    JSONRPC: Sdk("InternalError", "INTERNAL_ERROR", "retry", "sdk_exception"),
    # The HTTP+JSON transport turns the SSE error event into A2AClientError(<event data>)
    # with no cause and no structure: nothing but the class is left to decide on, and an
    # unknown client error is reported rather than retried.
    REST: Sdk("A2AClientError", None, "report", "sdk_exception"),
    GRPC: Sdk("A2AClientError", None, "retry", "status_fallback"),
}
# unsupported_operation is absent: a2a-sdk's client reads streaming=false from the card and
# sends SendMessage instead, so the server never answers UNSUPPORTED_OPERATION to it. The
# malformed-request scenarios (parse_error, invalid_request, method_not_found) and
# version_header_missing are absent: the client cannot send those requests.

SDK_ERROR_CASES = [
    pytest.param(name, binding, expected, id=f"{name}-sdk-{binding}")
    for name, by_binding in EXPECTED_SDK.items()
    for binding, expected in by_binding.items()
]
SDK_OK_CASES = [
    pytest.param(spec.name, binding, id=f"{spec.name}-sdk-{binding}")
    for spec in SCENARIOS
    for binding in spec.sdk_bindings
    if spec.expected_reason is None or binding in spec.accepted_on
]


@pytest.mark.parametrize(("name", "binding", "expected"), SDK_ERROR_CASES)
def test_sdk_error(
    peer_for: Callable[[Scenario], EmbeddedPeer], name: str, binding: str, expected: Sdk
) -> None:
    """The exception a2a-sdk's client raises normalises to the same decision as the wire."""
    from a2a.utils.errors import A2AError

    spec = scenario(name)
    raw = capture_sdk(peer_for(spec), binding, name)
    assert isinstance(raw, A2AError), raw
    assert type(raw).__name__ == expected.exception
    error = normalize(raw)
    assert error is not None
    assert error.reason == expected.reason
    assert str(error.source) == expected.source
    decision = classify(raw, operation=spec.operation)
    assert str(decision.action) == expected.action


@pytest.mark.parametrize(("name", "binding"), SDK_OK_CASES)
def test_sdk_success(peer_for: Callable[[Scenario], EmbeddedPeer], name: str, binding: str) -> None:
    """A FAILED or CANCELED task, or a request the server accepts, is no call error."""
    spec = scenario(name)
    raw = capture_sdk(peer_for(spec), binding, name, allow_unproduced=binding in spec.accepted_on)
    assert not isinstance(raw, BaseException), raw
    assert normalize(raw) is None
    assert str(classify(raw, operation=spec.operation).action) == "ok"


# --------------------------------------------------------------------------------------------
# The peer itself
# --------------------------------------------------------------------------------------------


def test_scenarios_cover_the_brief() -> None:
    """Every required scenario exists, bindings are consistent, names are unique."""
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names))
    required = {
        "task_not_found",
        "task_not_cancelable",
        "push_not_supported",
        "unsupported_operation",
        "subscribe_terminal",
        "extended_card_not_configured",
        "extension_required",
        "version_not_supported",
        "content_type_not_supported",
        "internal_error",
        "failed_task",
        "stream_error_midway",
        "parse_error",
        "invalid_request",
        "method_not_found",
        "invalid_params",
    }
    assert required <= set(names)
    for spec in SCENARIOS:
        assert set(spec.bindings) <= set(BINDINGS)
        assert not set(spec.bindings) & set(spec.accepted_on)
        assert spec.note
        # Every produced error is checked above; every accepted request too.
        if spec.expected_reason is not None:
            assert set(EXPECTED_ERRORS.get(spec.name, {})) == set(spec.bindings)


def test_agent_card(peer: EmbeddedPeer, peer_no_streaming: EmbeddedPeer) -> None:
    """The card lists the three interfaces (1.0) and the capabilities the flags set."""
    card = httpx.get(peer.card_url, timeout=10.0).json()
    interfaces = {i["protocolBinding"]: i for i in card["supportedInterfaces"]}
    assert set(interfaces) == {"JSONRPC", "HTTP+JSON", "GRPC"}
    assert {i["protocolVersion"] for i in interfaces.values()} == {"1.0"}
    assert interfaces["JSONRPC"]["url"] == peer.jsonrpc_url
    assert interfaces["HTTP+JSON"]["url"] == peer.rest_url
    assert interfaces["GRPC"]["url"] == peer.grpc_target
    assert peer.grpc_target.startswith("127.0.0.1:")
    capabilities = card["capabilities"]
    assert capabilities["streaming"] is True
    assert capabilities.get("pushNotifications", False) is False
    assert capabilities["extendedAgentCard"] is True
    assert capabilities["extensions"] == [
        {
            "uri": "urn:a2a-client-errors:test:required",
            "description": "A test extension the card declares as required.",
            "required": True,
        }
    ]
    other = httpx.get(peer_no_streaming.card_url, timeout=10.0).json()
    assert other["capabilities"].get("streaming", False) is False


def test_capture_refuses_what_the_server_cannot_produce(peer: EmbeddedPeer) -> None:
    """A binding a scenario has no request for, or the wrong peer, is refused up front."""
    with pytest.raises(ValueError, match="no request on grpc"):
        capture(peer, GRPC, "parse_error")
    with pytest.raises(ValueError, match="allow_unproduced"):
        capture(peer, GRPC, "version_not_supported")
    with pytest.raises(ValueError, match="streaming off"):
        capture(peer, JSONRPC, "unsupported_operation")
    with pytest.raises(ValueError, match="cannot send"):
        capture_sdk(peer, JSONRPC, "parse_error")
    with pytest.raises(ValueError, match="unknown binding"):
        capture(peer, "soap", "task_not_found")
    with pytest.raises(KeyError, match="unknown scenario"):
        scenario("no_such_scenario")


def test_peer_lifecycle() -> None:
    """A peer stops within its bound; a stopped peer refuses captures; restart is refused."""
    with EmbeddedPeer(required_extension=None, push_notifications=True) as fresh:
        was_running = fresh.running
        assert was_running
        card = httpx.get(fresh.card_url, timeout=10.0).json()
        assert "extensions" not in card["capabilities"]
        assert card["capabilities"]["pushNotifications"] is True
    assert not fresh.running
    assert fresh._thread is not None
    assert not fresh._thread.is_alive()
    with pytest.raises(RuntimeError, match="not running"):
        capture(fresh, JSONRPC, "task_not_found")
    with pytest.raises(RuntimeError, match="only once"):
        fresh.start()


def test_startup_timeout_is_bounded() -> None:
    """A peer that is not up within startup_timeout raises RuntimeError and is stopped."""
    slow = EmbeddedPeer(startup_timeout=0.0)
    with pytest.raises(RuntimeError, match="did not start"):
        slow.start()
    assert slow._thread is not None
    assert not slow._thread.is_alive()
    assert not slow.running


def test_import_without_optional_dependencies() -> None:
    """The module imports without a2a-sdk, grpcio and uvicorn; starting then says what to do."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('a2a', 'grpc', 'uvicorn'):\n"
        "            raise ImportError(name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Block())\n"
        "import a2a_client_errors.testing.peer as peer\n"
        "try:\n"
        "    peer.EmbeddedPeer().start()\n"
        "except ImportError as exc:\n"
        "    print('peer:', exc)\n"
        "try:\n"
        "    import a2a_client_errors.demo\n"
        "except ImportError as exc:\n"
        "    print('demo:', exc)\n"
    )
    done = subprocess.run(  # noqa: S603 - a fixed script run by this interpreter
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["peer", "demo"]
    assert all("pip install 'a2a-client-errors[a2a]'" in line for line in lines)


def test_demo_json() -> None:
    """``a2a-errors demo --json``: one row per capture, with the decisions above."""
    import io

    from a2a_client_errors.demo import run_demo

    out = io.StringIO()
    assert run_demo(json_output=True, out=out) == 0
    rows = json.loads(out.getvalue())["rows"]
    peer_name = {"jsonrpc": JSONRPC, "http+json": REST, "grpc": GRPC}  # the demo prints the spec's
    by_key = {(row["scenario"], peer_name[row["binding"]]): row for row in rows}
    for name, by_binding in EXPECTED_ERRORS.items():
        for binding, wire in by_binding.items():
            row = by_key[(name, binding)]
            assert row["reason"] == wire.reason
            assert row["action"] == wire.action
            assert row["source"] == wire.source
            assert row["accepted"] is False
    for spec in SCENARIOS:
        for binding in spec.accepted_on:
            assert by_key[(spec.name, binding)]["action"] == "ok"
            assert by_key[(spec.name, binding)]["accepted"] is True
    assert by_key[("internal_error", JSONRPC)]["jsonrpc_code"] == -32603
    assert by_key[("task_not_found", REST)]["http_status"] == 404
    assert by_key[("task_not_found", GRPC)]["grpc_status"] == "NOT_FOUND"


def test_demo_table() -> None:
    """The table has a header, a rule and one line per capture."""
    import io

    from a2a_client_errors.demo import collect_rows, render_table, run_demo

    out = io.StringIO()
    assert run_demo(out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("a2a-errors demo: ")
    assert any(line.startswith("GetTask: unknown task") and "reconcile" in line for line in lines)
    rows = collect_rows([scenario("task_not_found")])
    table = render_table(rows).splitlines()
    assert table[0].split("  ")[0] == "request"
    assert set(table[1]) <= {"-", " "}
    assert len(table) == 2 + len(rows)


def test_demo_sdk_rows() -> None:
    """With ``sdk=True`` the demo adds a2a-sdk client rows, accepted requests included."""
    from a2a_client_errors.demo import collect_rows

    rows = collect_rows([scenario("task_not_found"), scenario("extension_required")], sdk=True)
    by_key = {(row.scenario, row.binding): row for row in rows}
    assert by_key[("task_not_found", "sdk:http+json")].observed == "TaskNotFoundError"
    assert by_key[("task_not_found", "sdk:grpc")].action == "reconcile"
    accepted = by_key[("extension_required", "sdk:jsonrpc")]
    assert (accepted.observed, accepted.action, accepted.accepted) == ("result", "ok", True)
