"""The probe against agents on ``httpx.MockTransport``: a conformant one, and odd answers.

`FakeAgent` is a conformant A2A agent (JSON-RPC and HTTP+JSON) whose errors are encoded with
the package's own server encoders; each test replaces the answers it is about. The real
a2a-sdk server is in ``tests/e2e/test_probe.py``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors._dedupe_card import DedupeParams
from a2a_client_errors._reasons import Reason
from a2a_client_errors.probe import (
    CHECKS,
    SCHEMA,
    CheckStatus,
    ProbeReport,
    _host_of,
    _public,
    probe,
)
from a2a_client_errors.probe import _checks as probe_checks
from a2a_client_errors.probe._wire import _grpc_hops, _grpc_target
from a2a_client_errors.server import A2AError, to_http, to_jsonrpc
from tests.loopback import Loopback, Recorded, Reply, loopback_fixture  # noqa: F401 (the fixture)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

AGENT = "http://agent.test"
CARD = "/.well-known/agent-card.json"
EXTENSION = "urn:example:required"


def _card(**capabilities: Any) -> dict[str, Any]:
    caps = {
        "streaming": False,
        "pushNotifications": False,
        "extendedAgentCard": False,
        "extensions": [{"uri": EXTENSION, "required": True}],
        **capabilities,
    }
    return {
        "name": "fake agent",
        "supportedInterfaces": [
            {"url": f"{AGENT}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": f"{AGENT}/api", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": caps,
    }


class FakeAgent:
    """A conformant agent: JSON-RPC at /rpc, HTTP+JSON at /api, its card at the well-known path.

    ``overrides`` maps ``(binding, operation)`` to a function that may answer instead. It
    answers a resent messageId with the first task unless ``deduplicate=False``.
    """

    def __init__(
        self,
        card: dict[str, Any] | None = None,
        overrides: dict[tuple[str, str], Callable[[httpx.Request], httpx.Response | None]]
        | None = None,
        task_state: str = "TASK_STATE_COMPLETED",
        *,
        deduplicate: bool = True,
    ) -> None:
        self.card = card if card is not None else _card()
        self.overrides = overrides or {}
        self.task_state = task_state
        self.deduplicate = deduplicate
        self.requests: list[httpx.Request] = []
        self.tasks: dict[str, dict[str, Any]] = {}
        self.by_message: dict[str, dict[str, Any]] = {}
        self.tenants: list[str] = []

    def transport(self) -> httpx.MockTransport:
        """The transport to give `probe`."""
        return httpx.MockTransport(self)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request, as the agent would (or as an override says)."""
        self.requests.append(request)
        path = request.url.path
        if path == CARD:
            return httpx.Response(200, json=self.card)
        if path.endswith("/rpc"):
            return self._jsonrpc(request)
        if "/api/" in path:
            return self._rest(request, path.split("/api", 1)[1])
        return httpx.Response(404, text="Not Found")

    # -- what the agent does, whatever the binding ---------------------------------------

    def _answer(self, operation: str, params: dict[str, Any], request: httpx.Request) -> Any:
        if request.headers.get("A2A-Version") != "1.0":
            raise A2AError(Reason.VERSION_NOT_SUPPORTED, "only 1.0")
        if operation in ("SendStreamingMessage", "SubscribeToTask"):
            raise A2AError(Reason.UNSUPPORTED_OPERATION, "no streaming")
        if operation == "CreateTaskPushNotificationConfig":
            raise A2AError(Reason.PUSH_NOTIFICATION_NOT_SUPPORTED, "no push")
        if operation == "GetExtendedAgentCard":
            raise A2AError(Reason.UNSUPPORTED_OPERATION, "no extended card")
        if operation == "SendMessage":
            message = params.get("message") or {}
            if "messageId" not in message or not message.get("parts"):
                raise A2AError(Reason.INVALID_PARAMS, "messageId and parts are required")
            required = [e["uri"] for e in self.card["capabilities"]["extensions"] if e["required"]]
            if any(uri not in request.headers.get("A2A-Extensions", "") for uri in required):
                raise A2AError(Reason.EXTENSION_SUPPORT_REQUIRED, "declare the extension")
            if self.deduplicate and message["messageId"] in self.by_message:
                return {"task": self.by_message[message["messageId"]]}
            task = {"id": str(uuid.uuid4()), "status": {"state": self.task_state}}
            self.tasks[task["id"]] = task
            self.by_message[message["messageId"]] = task
            return {"task": task}
        task = self.tasks.get(str(params.get("id")))
        if task is None:
            raise A2AError(Reason.TASK_NOT_FOUND, "no such task", {"taskId": params.get("id")})
        if operation == "CancelTask":
            raise A2AError(Reason.TASK_NOT_CANCELABLE, "already terminal")
        return task

    def _jsonrpc(self, request: httpx.Request) -> httpx.Response:
        try:
            body = json.loads(request.content)
        except ValueError:
            error = {"code": -32700, "message": "Parse error"}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": None, "error": error})
        if not isinstance(body.get("method"), str):
            error = {"code": -32600, "message": "Invalid request"}
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body.get("id"), "error": error}
            )
        operation = body["method"]
        params = body.get("params") or {}
        if isinstance(params.get("tenant"), str):
            self.tenants.append(params["tenant"])
        override = self.overrides.get(("jsonrpc", operation))
        answer = override(request) if override is not None else None
        if answer is not None:
            return answer
        if operation not in _OPERATIONS:
            error = {"code": -32601, "message": "Method not found"}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "error": error})
        try:
            result = self._answer(operation, params, request)
        except A2AError as exc:
            return httpx.Response(200, json=to_jsonrpc(exc, body.get("id")))
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    def _rest(self, request: httpx.Request, path: str) -> httpx.Response:
        if path.startswith("/t-") and "/" in path[1:]:
            tenant, path = path[1:].split("/", 1)
            self.tenants.append(tenant)
            path = "/" + path
        operation, params = _rest_operation(request.method, path)
        override = self.overrides.get(("http+json", operation))
        answer = override(request) if override is not None else None
        if answer is not None:
            return answer
        if operation == "?":
            return httpx.Response(404, text="Not Found")
        if request.content:
            try:
                params.update(json.loads(request.content))
            except ValueError:
                status, headers, content = to_http(A2AError(Reason.PARSE_ERROR, "not JSON"))
                return httpx.Response(status, headers=headers, content=content)
        try:
            result = self._answer(operation, params, request)
        except A2AError as exc:
            status, headers, content = to_http(exc)
            return httpx.Response(status, headers=headers, content=content)
        return httpx.Response(200, json=result)


_OPERATIONS = {
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetExtendedAgentCard",
}


def _rest_operation(method: str, path: str) -> tuple[str, dict[str, Any]]:
    if path == "/message:send":
        return "SendMessage", {}
    if path == "/message:stream":
        return "SendStreamingMessage", {}
    if path == "/extendedAgentCard":
        return "GetExtendedAgentCard", {}
    if path.startswith("/tasks/"):
        rest = path[len("/tasks/") :]
        if rest.endswith("/pushNotificationConfigs"):
            return "CreateTaskPushNotificationConfig", {"id": rest.split("/")[0]}
        if rest.endswith(":cancel"):
            return "CancelTask", {"id": rest.removesuffix(":cancel")}
        if rest.endswith(":subscribe"):
            return "SubscribeToTask", {"id": rest.removesuffix(":subscribe")}
        if method == "GET":
            return "GetTask", {"id": rest}
    return "?", {}


def _statuses(report: ProbeReport) -> dict[tuple[str, str], str]:
    return {(r.check, r.binding): r.status.value for r in report.checks}


def _run(agent: FakeAgent, url: str = AGENT, **kwargs: Any) -> ProbeReport:
    return probe(url, transport=agent.transport(), **kwargs)


# --------------------------------------------------------------------------------------------
# A conformant agent
# --------------------------------------------------------------------------------------------


def test_a_conformant_agent_passes_every_check_it_can_be_given() -> None:
    """Every check passes on both bindings; those without an equivalent are skipped."""
    report = _run(FakeAgent())
    statuses = _statuses(report)
    skipped = {("invalid_request", "http+json"), ("method_not_found", "http+json")}
    assert {key for key, value in statuses.items() if value == "skipped"} == skipped
    assert {value for key, value in statuses.items() if key not in skipped} == {"passed"}
    assert len(statuses) == 2 * len(CHECKS)
    assert report.ok
    assert report.exit_status == 0
    assert report.error is None


def test_each_a2a_check_reads_reason_domain_and_table() -> None:
    """A passed check records the reason and domain it saw, and the table its status follows."""
    report = _run(FakeAgent())
    found = report.result("task_not_cancelable", "http+json")
    assert found.observed is not None
    assert found.observed.reason == "TASK_NOT_CANCELABLE"
    assert found.observed.domain == "a2a-protocol.org"
    assert found.observed.http_status == 400
    assert found.observed.grpc_status == "FAILED_PRECONDITION"
    assert found.table == "1.0.1"
    assert found.details_survived is True
    assert report.result("task_not_found", "http+json").table == "both"
    assert report.result("task_not_found", "jsonrpc").table is None


def test_the_probe_sends_the_interface_version_and_the_required_extensions() -> None:
    """Every request carries A2A-Version from the card and the required extension."""
    agent = FakeAgent()
    _run(agent, checks=["task_not_found"])
    calls = [r for r in agent.requests if r.url.path != CARD]
    assert len(calls) == 2
    for request in calls:
        assert request.headers["A2A-Version"] == "1.0"
        assert request.headers["A2A-Extensions"] == EXTENSION


def test_only_the_requests_a_check_needs_are_sent() -> None:
    """task_not_found sends one GetTask per interface and nothing else; no message is sent."""
    agent = FakeAgent()
    _run(agent, checks=["task_not_found", "version_not_supported"])
    assert agent.tasks == {}
    assert len(agent.requests) == 1 + 2 * 2


def test_one_terminal_task_per_interface_serves_every_check_that_needs_one() -> None:
    """Cancel, subscribe and push share the one task each interface created."""
    agent = FakeAgent()
    report = _run(
        agent, checks=["task_not_cancelable", "subscribe_not_supported", "push_not_supported"]
    )
    assert len(agent.tasks) == 2
    assert report.ok


# --------------------------------------------------------------------------------------------
# Odd answers never crash the probe
# --------------------------------------------------------------------------------------------


def _respond(response: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    return lambda request: response


def test_an_html_502_from_a_proxy_is_inconclusive_and_names_the_hop() -> None:
    """A gateway's HTML page where the error was: tried again, inconclusive, the hop named."""
    page = httpx.Response(
        502, headers={"Content-Type": "text/html", "Via": "1.1 edge-gw"}, text="<html>Bad</html>"
    )
    agent = FakeAgent(
        overrides={("jsonrpc", "GetTask"): _respond(page), ("http+json", "GetTask"): _respond(page)}
    )
    report = _run(agent, checks=["task_not_found"])
    for binding in ("jsonrpc", "http+json"):
        found = report.result("task_not_found", binding)
        assert found.status is CheckStatus.INCONCLUSIVE
        assert found.observed is not None
        assert found.observed.http_status == 502
        assert found.observed.wire == "bare_status"
        assert found.observed.hops == {"via": "1.1 edge-gw"}
        (note,) = found.notes
        assert "only a hop answered, 3 times" in note
        assert "HTTP 502, from via '1.1 edge-gw'" in note
    assert report.exit_status == 3
    assert "INCONCLUSIVE" in report.to_text()


def test_a_hop_that_answers_once_then_lets_the_call_through_is_judged() -> None:
    """A 503 once, then the agent's own answer: the check is judged on the agent's."""
    answers = [httpx.Response(503, text="busy")]

    def once(request: httpx.Request) -> httpx.Response | None:
        return answers.pop() if answers else None

    agent = FakeAgent(overrides={("jsonrpc", "GetTask"): once})
    report = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    assert report.result("task_not_found", "jsonrpc").status is CheckStatus.PASSED
    assert report.exit_status == 0


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200),
        httpx.Response(200, text="{not json"),
        httpx.Response(200, json=[1, 2]),
        httpx.Response(200, content=b"\xff\xfe"),
        httpx.Response(204),
        httpx.Response(500, text=""),
        httpx.Response(200, json={"jsonrpc": "2.0", "id": 1}),
        httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "error": "boom"}),
        httpx.Response(200, headers={"Content-Type": "text/event-stream"}, text="data: {}\n\n"),
    ],
    ids=[
        "empty",
        "invalid-json",
        "array",
        "not-utf8",
        "204",
        "500-empty",
        "no-result",
        "string-error",
        "sse",
    ],
)
def test_weird_bodies_fail_the_check_without_crashing(response: httpx.Response) -> None:
    """Whatever the body, the check ends failed (never passed, never a crash)."""
    agent = FakeAgent(overrides={("jsonrpc", "GetTask"): _respond(response)})
    report = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    found = report.result("task_not_found", "jsonrpc")
    assert found.status is CheckStatus.FAILED
    assert found.notes
    assert report.exit_status == 1
    json.loads(report.to_json())
    assert "task_not_found" in report.to_text()


def test_a_refused_connection_is_inconclusive_and_the_interface_is_not_hammered() -> None:
    """Connection refused on one interface: nothing reached the agent there; not sent again."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    agent = FakeAgent(overrides={("http+json", "GetTask"): refuse})
    report = _run(agent, checks=["task_not_found", "version_not_supported", "extended_card"])
    first = report.result("task_not_found", "http+json")
    assert first.status is CheckStatus.INCONCLUSIVE
    assert first.observed is not None
    assert first.observed.outcome == "no_answer"
    assert first.observed.delivery == "not_sent"
    later = report.result("extended_card", "http+json")
    assert later.status is CheckStatus.INCONCLUSIVE
    assert later.observed is None
    assert report.result("task_not_found", "jsonrpc").passed
    assert report.exit_status == 3
    refused = [r for r in agent.requests if r.url.path.startswith("/api/tasks")]
    assert len(refused) == 1  # tried once: the interface is then left alone


def test_an_exception_of_any_kind_from_the_transport_is_an_error() -> None:
    """A transport raising something odd: an error result, not a crash."""

    def explode(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("odd")

    agent = FakeAgent(overrides={("jsonrpc", "GetTask"): explode})
    report = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    assert report.result("task_not_found", "jsonrpc").status is CheckStatus.ERROR


def test_auth_refusals_are_errors_that_ask_for_credentials() -> None:
    """A 401 is not the agent's error path: the check errs and says to pass credentials."""
    agent = FakeAgent(
        overrides={("http+json", "GetTask"): _respond(httpx.Response(401, text="no"))}
    )
    report = _run(agent, checks=["task_not_found"], bindings=["http+json"])
    found = report.result("task_not_found", "http+json")
    assert found.status is CheckStatus.ERROR
    assert "credentials" in found.notes[0]


def test_peer_text_is_escaped_in_the_table() -> None:
    """Control characters a peer sends never reach the terminal as they are."""
    error = A2AError(Reason.INTERNAL_ERROR, "evil\x1b[2J\u202etext")
    agent = FakeAgent(
        overrides={("jsonrpc", "GetTask"): _respond(httpx.Response(200, json=to_jsonrpc(error, 1)))}
    )
    report = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    text = report.to_text()
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "evil\\x1b[2J\\u202etext" in text
    assert "\x1b" not in report.to_json()


# --------------------------------------------------------------------------------------------
# What is judged
# --------------------------------------------------------------------------------------------


def _stripped(reason: Reason) -> Callable[[httpx.Request], httpx.Response]:
    """The REST error without its details, as a stripping hop leaves it."""
    status, headers, content = to_http(A2AError(reason, "stripped"))
    body = json.loads(content)
    del body["error"]["details"]
    return _respond(httpx.Response(status, headers={**headers, "Via": "1.1 mesh"}, json=body))


def test_a_reason_right_by_status_only_fails_as_details_lost() -> None:
    """404 without ErrorInfo: TASK_NOT_FOUND by status only is a failure, with the hop named."""
    agent = FakeAgent(overrides={("http+json", "GetTask"): _stripped(Reason.TASK_NOT_FOUND)})
    report = _run(agent, checks=["task_not_found"], bindings=["http+json"])
    found = report.result("task_not_found", "http+json")
    assert found.status is CheckStatus.FAILED
    assert found.details_survived is False
    assert found.observed is not None
    assert found.observed.reason == "TASK_NOT_FOUND"
    assert found.observed.source == "status_fallback"
    assert found.notes[0] == (
        "ErrorInfo missing: a hop stripped the details, or the agent does not send them "
        "(the reason is right by its status only)"
    )
    assert "answered through: via '1.1 mesh'" in found.notes
    assert "LOST" in report.to_text()


def test_jsonrpc_without_error_data_fails_and_says_what_the_versions_ask() -> None:
    """-32001 without data: right by code only; 1.0.0 requires ErrorInfo, 1.0.1 recommends."""
    bare = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}
    agent = FakeAgent(overrides={("jsonrpc", "GetTask"): _respond(httpx.Response(200, json=bare))})
    found = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"]).result(
        "task_not_found", "jsonrpc"
    )
    assert found.status is CheckStatus.FAILED
    assert "right by its code only" in found.notes[0]
    assert "1.0.0 requires ErrorInfo" in found.notes[0]


def test_a_wrong_domain_or_reason_in_error_info_fails() -> None:
    """ErrorInfo of another domain, or with another reason, fails with what was sent."""
    other = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32001,
            "message": "gone",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "example.com",
                }
            ],
        },
    }
    wrong = to_jsonrpc(A2AError(Reason.TASK_NOT_CANCELABLE, "?"), 1)
    agent = FakeAgent(
        overrides={
            ("jsonrpc", "GetTask"): _respond(httpx.Response(200, json=other)),
            ("jsonrpc", "GetExtendedAgentCard"): _respond(httpx.Response(200, json=wrong)),
        }
    )
    report = _run(agent, checks=["task_not_found", "extended_card"], bindings=["jsonrpc"])
    domain = report.result("task_not_found", "jsonrpc")
    assert domain.status is CheckStatus.FAILED
    assert domain.observed is not None
    assert domain.observed.domain == "example.com"
    assert "ErrorInfo domain 'example.com'" in domain.notes[0]
    reason = report.result("extended_card", "jsonrpc")
    assert reason.status is CheckStatus.FAILED
    assert "JSON-RPC code -32002, expected -32004" in reason.notes
    assert "ErrorInfo reason 'TASK_NOT_CANCELABLE', expected UNSUPPORTED_OPERATION" in reason.notes


def test_an_alias_passes_and_is_noted() -> None:
    """A known alias of the reason passes; the report notes the spelling."""
    body = to_jsonrpc(A2AError(Reason.TASK_NOT_CANCELABLE, "no"), 1)
    body["error"]["data"][0]["reason"] = "TASK_NOT_CANCELLABLE"
    agent = FakeAgent(
        overrides={("jsonrpc", "CancelTask"): _respond(httpx.Response(200, json=body))}
    )
    found = _run(agent, checks=["task_not_cancelable"], bindings=["jsonrpc"]).result(
        "task_not_cancelable", "jsonrpc"
    )
    assert found.passed
    assert "reason sent as the alias TASK_NOT_CANCELLABLE" in found.notes


def test_a_problem_json_body_on_http_json_fails_for_its_shape() -> None:
    """The pre-1.0 problem+json shape: right reason, wrong shape for the 1.0 binding."""
    problem = httpx.Response(
        404,
        headers={"Content-Type": "application/problem+json"},
        json={"type": "https://a2a-protocol.org/errors/task-not-found", "status": 404},
    )
    agent = FakeAgent(overrides={("http+json", "GetTask"): _respond(problem)})
    found = _run(agent, checks=["task_not_found"], bindings=["http+json"]).result(
        "task_not_found", "http+json"
    )
    assert found.status is CheckStatus.FAILED
    assert "google.rpc.Status body (§11.6)" in found.notes[0]


def _legacy_cancel(request: httpx.Request) -> httpx.Response:
    """TASK_NOT_CANCELABLE with the 1.0.0 table's 409."""
    _, headers, content = to_http(A2AError(Reason.TASK_NOT_CANCELABLE, "no"))
    body = json.loads(content)
    body["error"]["code"] = 409
    return httpx.Response(409, headers=headers, json=body)


def test_either_table_passes_unless_one_is_required() -> None:
    """409 follows 1.0.0: passes by default, fails with strict_table 1.0.1."""
    agent = FakeAgent(overrides={("http+json", "CancelTask"): _legacy_cancel})
    lax = _run(agent, checks=["task_not_cancelable"], bindings=["http+json"])
    found = lax.result("task_not_cancelable", "http+json")
    assert found.passed
    assert found.table == "1.0.0"
    strict = _run(
        FakeAgent(overrides={("http+json", "CancelTask"): _legacy_cancel}),
        checks=["task_not_cancelable"],
        bindings=["http+json"],
        strict_table="1.0.1",
    )
    failed = strict.result("task_not_cancelable", "http+json")
    assert failed.status is CheckStatus.FAILED
    assert failed.table == "1.0.0"
    assert failed.expected is not None
    assert failed.expected.http_status == (400,)
    assert "HTTP 409, expected 400" in failed.notes
    assert strict.strict_table == "1.0.1"


def test_a_status_of_neither_table_fails() -> None:
    """TASK_NOT_FOUND answered 400 with its ErrorInfo: neither table."""
    _, headers, content = to_http(A2AError(Reason.TASK_NOT_FOUND, "gone"))
    body = json.loads(content)
    agent = FakeAgent(
        overrides={
            ("http+json", "GetTask"): _respond(httpx.Response(400, headers=headers, json=body))
        }
    )
    found = _run(agent, checks=["task_not_found"], bindings=["http+json"]).result(
        "task_not_found", "http+json"
    )
    assert found.status is CheckStatus.FAILED
    assert found.table == "neither"


def test_an_agent_that_does_not_enforce_a_required_extension_fails() -> None:
    """A message without the required extension accepted: failed, the extension named."""
    agent = FakeAgent()
    agent.card["capabilities"]["extensions"].append({"uri": "urn:other", "required": False})

    def accept(request: httpx.Request) -> httpx.Response | None:
        if "A2A-Extensions" in request.headers:
            return None
        return httpx.Response(
            200, json={"task": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}
        )

    agent.overrides[("http+json", "SendMessage")] = accept
    found = _run(agent, checks=["extension_required"], bindings=["http+json"]).result(
        "extension_required", "http+json"
    )
    assert found.status is CheckStatus.FAILED
    assert found.notes[0].startswith("the call succeeded (a task in TASK_STATE_COMPLETED)")
    assert f"required by the card: {EXTENSION}" in found.notes


def test_a_stream_opened_where_the_card_says_none_fails() -> None:
    """An event stream with a result event although streaming is off: failed."""
    event = {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}},
    }
    stream = httpx.Response(
        200,
        headers={"Content-Type": "text/event-stream"},
        content=b": keep-alive\n\ndata: " + json.dumps(event).encode() + b"\n\n",
    )
    agent = FakeAgent(overrides={("jsonrpc", "SendStreamingMessage"): _respond(stream)})
    found = _run(agent, checks=["streaming_not_supported"], bindings=["jsonrpc"]).result(
        "streaming_not_supported", "jsonrpc"
    )
    assert found.status is CheckStatus.FAILED
    assert "a task in TASK_STATE_WORKING" in found.notes[0]


def test_an_error_as_the_first_event_of_a_stream_passes() -> None:
    """UNSUPPORTED_OPERATION as an SSE error event (a2a-go's way): read and passed."""
    error = to_jsonrpc(A2AError(Reason.UNSUPPORTED_OPERATION, "no streaming"), 1)
    stream = httpx.Response(
        200,
        headers={"Content-Type": "text/event-stream"},
        content=b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n",
    )
    agent = FakeAgent(overrides={("jsonrpc", "SubscribeToTask"): _respond(stream)})
    found = _run(agent, checks=["subscribe_not_supported"], bindings=["jsonrpc"]).result(
        "subscribe_not_supported", "jsonrpc"
    )
    assert found.passed
    assert found.observed is not None
    assert found.observed.http_status == 200


def test_a_stream_that_closes_without_an_event_fails() -> None:
    """An empty event stream: a success with nothing in it, not the expected error."""
    stream = httpx.Response(200, headers={"Content-Type": "text/event-stream"}, content=b"")
    agent = FakeAgent(overrides={("http+json", "SendStreamingMessage"): _respond(stream)})
    found = _run(agent, checks=["streaming_not_supported"], bindings=["http+json"]).result(
        "streaming_not_supported", "http+json"
    )
    assert found.status is CheckStatus.FAILED


def test_the_version_check_says_when_the_version_was_ignored() -> None:
    """TASK_NOT_FOUND for A2A-Version 99.0: failed, and the hint says the version was ignored."""
    agent = FakeAgent()
    agent.overrides[("jsonrpc", "GetTask")] = lambda request: httpx.Response(
        200, json=to_jsonrpc(A2AError(Reason.TASK_NOT_FOUND, "gone"), 1)
    )
    found = _run(agent, checks=["version_not_supported"], bindings=["jsonrpc"]).result(
        "version_not_supported", "jsonrpc"
    )
    assert found.status is CheckStatus.FAILED
    assert "the agent ignored A2A-Version: 99.0 and looked the task up" in found.notes


# --------------------------------------------------------------------------------------------
# What cannot be triggered is skipped, and said
# --------------------------------------------------------------------------------------------


def test_capabilities_the_card_declares_are_skipped_with_the_reason() -> None:
    """Streaming and push on, no required extension: those checks are skipped, said why."""
    card = _card(streaming=True, pushNotifications=True, extensions=[])
    report = _run(FakeAgent(card), bindings=["jsonrpc"])
    notes = {r.check: r.notes[0] for r in report.checks if r.status is CheckStatus.SKIPPED}
    assert notes == {
        "streaming_not_supported": "skipped: the card says streaming is supported",
        "subscribe_not_supported": "skipped: the card says streaming is supported",
        "push_not_supported": "skipped: the card says push notifications are supported",
        "extension_required": "skipped: the card declares no required extension",
    }


def test_a_task_that_is_not_terminal_cannot_trigger_not_cancelable() -> None:
    """A task still WORKING: cancel skipped as 'cannot trigger'; push uses a random id."""
    report = _run(
        FakeAgent(task_state="TASK_STATE_WORKING"),
        checks=["task_not_cancelable", "push_not_supported"],
        bindings=["jsonrpc"],
    )
    cancel = report.result("task_not_cancelable", "jsonrpc")
    assert cancel.status is CheckStatus.SKIPPED
    assert cancel.notes[0].startswith("cannot trigger: the task came back in TASK_STATE_WORKING")
    push = report.result("push_not_supported", "jsonrpc")
    assert push.passed
    assert "a random task id was sent" in push.notes[0]


def test_a_message_answer_cannot_trigger_not_cancelable() -> None:
    """SendMessage answered with a Message: there is no task to cancel."""
    message = {"jsonrpc": "2.0", "id": 1, "result": {"message": {"messageId": "m", "parts": []}}}
    agent = FakeAgent(
        overrides={("jsonrpc", "SendMessage"): _respond(httpx.Response(200, json=message))}
    )
    found = _run(agent, checks=["task_not_cancelable"], bindings=["jsonrpc"]).result(
        "task_not_cancelable", "jsonrpc"
    )
    assert found.status is CheckStatus.SKIPPED
    assert found.notes == ("cannot trigger: the agent answered SendMessage with a Message",)


def test_a_failing_send_cannot_trigger_not_cancelable() -> None:
    """SendMessage refused: cancel is skipped, with what came back."""
    agent = FakeAgent(
        overrides={("jsonrpc", "SendMessage"): _respond(httpx.Response(503, text="busy"))}
    )
    found = _run(agent, checks=["task_not_cancelable"], bindings=["jsonrpc"]).result(
        "task_not_cancelable", "jsonrpc"
    )
    assert found.status is CheckStatus.SKIPPED
    assert found.notes[0].startswith("cannot trigger: SendMessage failed (503")


def test_the_extended_card_is_judged_by_what_the_card_declares() -> None:
    """Declared and served, or behind auth: skipped; declared but missing: judged."""
    card = _card(extendedAgentCard=True)
    served = {"jsonrpc": "2.0", "id": 1, "result": {"name": "x", "supportedInterfaces": []}}
    report = _run(
        FakeAgent(
            card,
            overrides={
                ("jsonrpc", "GetExtendedAgentCard"): _respond(httpx.Response(200, json=served)),
                ("http+json", "GetExtendedAgentCard"): _respond(httpx.Response(401)),
            },
        ),
        checks=["extended_card"],
    )
    assert report.result("extended_card", "jsonrpc").notes == (
        "skipped: the agent serves the extended card its card declares",
    )
    assert "needs credentials" in report.result("extended_card", "http+json").notes[0]
    assert report.exit_status == 2
    missing = to_jsonrpc(A2AError(Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED, "none"), 1)
    found = _run(
        FakeAgent(
            card,
            overrides={
                ("jsonrpc", "GetExtendedAgentCard"): _respond(httpx.Response(200, json=missing))
            },
        ),
        checks=["extended_card"],
        bindings=["jsonrpc"],
    ).result("extended_card", "jsonrpc")
    assert found.passed
    assert found.expected is not None
    assert found.expected.reason == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


# --------------------------------------------------------------------------------------------
# The card, and where requests go
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "said"),
    [
        (
            httpx.Response(502, headers={"Content-Type": "text/html", "Via": "1.1 gw"}, text="<b>"),
            "HTTP 502 text/html (answered through: via '1.1 gw')",
        ),
        (httpx.Response(200, text=""), "is not JSON"),
        (httpx.Response(200, text="{oops"), "is not JSON"),
        (httpx.Response(200, json=["a"]), "is not a JSON object"),
        (httpx.Response(200, json={"name": "x"}), "lists no interfaces"),
        (httpx.Response(302, headers={"Location": "https://elsewhere.test/card"}), "redirects"),
        (httpx.Response(200, content=b"{" + b" " * (1024 * 1024 + 10) + b"}"), "larger than"),
    ],
    ids=["html-502", "empty", "invalid-json", "array", "no-interfaces", "redirect", "huge"],
)
def test_a_card_that_cannot_be_read_means_the_probe_cannot_run(
    response: httpx.Response, said: str
) -> None:
    """The probe stops before any check, exit status 2, and says why."""
    report = probe(AGENT, transport=httpx.MockTransport(lambda request: response))
    assert report.exit_status == 2
    assert not report.ok
    assert report.error is not None
    assert said in report.error
    assert report.checks == ()
    assert "the probe could not run" in report.to_text()


def test_an_unreachable_card_means_the_probe_cannot_run() -> None:
    """Connection refused on the card: exit status 2, the failure named."""

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    report = probe(AGENT, transport=httpx.MockTransport(refuse))
    assert report.exit_status == 2
    assert report.error == (
        "cannot read the agent card at http://agent.test/.well-known/agent-card.json: "
        "connect: the connection could not be made (httpx.ConnectError)"
    )


def test_the_card_url_itself_is_read_as_given() -> None:
    """A URL that names the card is read as it is."""
    agent = FakeAgent()
    report = _run(agent, AGENT + CARD, checks=["task_not_found"])
    assert report.card_url == AGENT + CARD
    assert report.ok


def test_a_base_url_with_a_path_falls_back_to_the_origin_card() -> None:
    """No card under /agents/x: the origin's well-known card is read."""
    agent = FakeAgent()

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/agents/x" + CARD:
            return httpx.Response(404)
        return agent(request)

    report = probe(
        AGENT + "/agents/x/", transport=httpx.MockTransport(handler), checks=["task_not_found"]
    )
    assert report.card_url == AGENT + CARD
    assert report.ok


def test_interfaces_on_other_hosts_are_skipped_unless_followed() -> None:
    """The card points elsewhere: skipped and said; probed with follow_card_hosts."""
    card = _card()
    card["supportedInterfaces"][1]["url"] = "http://internal.test:8080/api"
    agent = FakeAgent(card)
    report = _run(agent, checks=["task_not_found"])
    skipped = report.interfaces[1]
    assert not skipped.probed
    assert skipped.note.startswith("on another host (internal.test) than the URL given")
    assert [r.binding for r in report.checks] == ["jsonrpc"]
    assert all(r.url.host == "agent.test" for r in agent.requests)
    followed = _run(FakeAgent(card), checks=["task_not_found"], follow_card_hosts=True)
    assert [r.binding for r in followed.checks] == ["jsonrpc", "http+json"]
    assert followed.interfaces[1].note == "on another host; follow_card_hosts is set"


def test_interfaces_the_probe_cannot_speak_are_listed_not_probed() -> None:
    """A custom binding, an A2A 0.3 interface, an unselected binding: listed with the reason."""
    card = _card()
    card["supportedInterfaces"] += [
        {"url": f"{AGENT}/ws", "protocolBinding": "urn:example:websocket"},
        {"url": f"{AGENT}/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"protocolBinding": "JSONRPC"},
        "not an interface",
    ]
    report = _run(FakeAgent(card), checks=["task_not_found"], bindings=["jsonrpc"])
    notes = [(i.binding, i.probed, i.note) for i in report.interfaces]
    assert notes == [
        ("jsonrpc", True, ""),
        ("http+json", False, "binding not selected"),
        (
            "urn:example:websocket",
            False,
            "a binding the probe does not speak (urn:example:websocket)",
        ),
        ("jsonrpc", False, "A2A 0.3; the probe checks A2A 1.x interfaces"),
    ]


def test_a_0_3_card_is_read_but_not_probed() -> None:
    """An A2A 0.3 card (url, preferredTransport): its interfaces are listed, no check runs."""
    card = {
        "name": "old",
        "url": f"{AGENT}/rpc",
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "additionalInterfaces": [
            {"url": f"{AGENT}/rpc", "transport": "JSONRPC"},
            {"url": f"{AGENT}/v1", "transport": "HTTP+JSON"},
        ],
        "supportsAuthenticatedExtendedCard": True,
    }
    report = probe(AGENT, transport=httpx.MockTransport(lambda r: httpx.Response(200, json=card)))
    assert [i.binding for i in report.interfaces] == ["jsonrpc", "http+json"]
    assert report.agent is not None
    assert report.agent.extended_agent_card is True
    assert report.exit_status == 2
    assert report.error == "no check could run: no interface was probed (see the interfaces)"


def test_a_tenant_is_copied_into_every_request() -> None:
    """The card's tenant: JSON-RPC params carry it, HTTP+JSON paths start with it."""
    card = _card()
    for interface in card["supportedInterfaces"]:
        interface["tenant"] = "t-42"
    agent = FakeAgent(card)
    report = _run(agent, checks=["task_not_found"])
    assert report.ok
    assert agent.tenants == ["t-42", "t-42"]
    assert report.interfaces[0].tenant == "t-42"


# --------------------------------------------------------------------------------------------
# Headers, arguments, the JSON report
# --------------------------------------------------------------------------------------------


def test_headers_are_sent_everywhere_and_their_values_never_reported() -> None:
    """Credentials go with every request; the report holds their names only."""
    agent = FakeAgent()
    report = _run(
        agent, headers={"Authorization": "Bearer s3cr3t-value"}, checks=["task_not_found"]
    )
    assert all(r.headers["Authorization"] == "Bearer s3cr3t-value" for r in agent.requests)
    assert report.headers_sent == ("Authorization",)
    assert "s3cr3t-value" not in report.to_json()
    assert "s3cr3t-value" not in report.to_text()
    assert "Authorization (values not shown)" in report.to_text()


def test_credentials_in_the_url_are_not_reported() -> None:
    """user:password in the URL given stays out of the report."""
    report = _run(FakeAgent(), "http://user:pw-secret@agent.test", checks=["task_not_found"])
    assert report.url == "http://agent.test"
    assert "pw-secret" not in report.to_json()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"checks": ["nope"]}, "unknown check"),
        ({"bindings": ["soap"]}, "unknown binding"),
        ({"strict_table": "2.0"}, "strict_table"),
        ({"timeout": 0}, "timeout"),
        ({"headers": {"A2A-Version": "1.0"}}, "sets A2A-Version itself"),
        ({"headers": [("", "x")]}, "a header name must be a token"),
        ({"headers": [("X", 1)]}, "names and values"),
        ({"headers": {"X-Key": "s3cret\r\nInjected: 1"}}, "X-Key must be printable ASCII"),
        ({"headers": {"X-Key": "sécret"}}, "X-Key must be printable ASCII"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_sent(
    kwargs: dict[str, Any], message: str
) -> None:
    """A misuse raises ValueError, and no request leaves."""
    agent = FakeAgent()
    with pytest.raises(ValueError, match=message):
        _run(agent, **kwargs)
    assert agent.requests == []


@pytest.mark.parametrize("url", ["ftp://agent.test", "agent.test", "http://", "http://[::1"])
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    """Only http(s) URLs with a host are probed."""
    with pytest.raises(ValueError, match="http"):
        probe(url, transport=FakeAgent().transport())


def test_the_json_report_has_its_documented_schema() -> None:
    """The top-level keys, a check's keys, expected and observed keys: as documented."""
    report = json.loads(_run(FakeAgent(), checks=["task_not_found"]).to_json())
    assert report["schema"] == SCHEMA
    assert set(report) == {
        "schema",
        "url",
        "card_url",
        "ok",
        "exit_status",
        "error",
        "strict_table",
        "headers_sent",
        "agent",
        "summary",
        "advisory_summary",
        "interfaces",
        "checks",
    }
    assert report["summary"] == {
        "passed": 2,
        "failed": 0,
        "skipped": 0,
        "error": 0,
        "inconclusive": 0,
    }
    assert report["advisory_summary"] == {
        "passed": 0,
        "failed": 0,
        "skipped": 0,
        "error": 0,
        "inconclusive": 0,
    }
    assert set(report["agent"]) == {
        "name",
        "streaming",
        "push_notifications",
        "extended_agent_card",
        "required_extensions",
        "deduplicate",
    }
    assert set(report["interfaces"][0]) == {
        "binding",
        "url",
        "protocol_version",
        "tenant",
        "probed",
        "note",
    }
    check = report["checks"][1]
    assert set(check) == {
        "check",
        "binding",
        "url",
        "operation",
        "status",
        "expected",
        "observed",
        "table",
        "details_survived",
        "notes",
        "advisory",
    }
    assert check["advisory"] is False
    assert check["expected"] == {
        "reason": "TASK_NOT_FOUND",
        "domain": "a2a-protocol.org",
        "jsonrpc_code": None,
        "http_status": [404],
        "grpc_status": ["NOT_FOUND"],
        "error_info": True,
    }
    assert set(check["observed"]) == {
        "outcome",
        "reason",
        "source",
        "wire",
        "jsonrpc_code",
        "http_status",
        "grpc_status",
        "error_info",
        "error_info_reason",
        "domain",
        "content_type",
        "message",
        "hops",
        "delivery",
    }
    assert check["observed"]["error_info"] is True


def test_result_names_a_missing_check() -> None:
    """Asking for a result that did not run raises KeyError."""
    report = _run(FakeAgent(), checks=["task_not_found"])
    with pytest.raises(KeyError, match="parse_error"):
        report.result("parse_error", "jsonrpc")


# --------------------------------------------------------------------------------------------
# The advisory check: a resent messageId
# --------------------------------------------------------------------------------------------

RESEND = "resend_deduplicated"


def _sends(agent: FakeAgent) -> list[str]:
    """The messageIds of the SendMessage requests the agent got, in order."""
    ids = []
    for request in agent.requests:
        body = json.loads(request.content) if request.content else {}
        if request.url.path.endswith("/message:send"):
            ids.append(body["message"]["messageId"])
        elif body.get("method") == "SendMessage":
            ids.append(body["params"]["message"]["messageId"])
    return ids


def _rpc(result: object) -> Callable[[httpx.Request], httpx.Response]:
    """A JSON-RPC success answering with ``result``."""

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": result})

    return answer


def _echo(request: httpx.Request) -> httpx.Response:
    """A Message answer that carries the messageId it was sent."""
    body = json.loads(request.content)
    sent = body["params"]["message"]["messageId"]
    message = {"messageId": sent, "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": message})


def _rpc_error(code: int, message: str) -> Callable[[httpx.Request], httpx.Response]:
    """A JSON-RPC error without details."""
    error = {"code": code, "message": message}
    return _respond(httpx.Response(200, json={"jsonrpc": "2.0", "id": "1", "error": error}))


def _timeout(request: httpx.Request) -> httpx.Response:
    """No answer: the read timed out."""
    raise httpx.ReadTimeout("timed out", request=request)


def _script(*answers: Callable[[httpx.Request], httpx.Response]) -> FakeAgent:
    """An agent whose JSON-RPC SendMessage answers are ``answers``, in order."""
    queue = list(answers)

    def next_answer(request: httpx.Request) -> httpx.Response:
        return queue.pop(0)(request)

    return FakeAgent(overrides={("jsonrpc", "SendMessage"): next_answer})


def _task(task_id: str | None) -> dict[str, Any]:
    task: dict[str, Any] = {"status": {"state": "TASK_STATE_COMPLETED"}}
    if task_id is not None:
        task["id"] = task_id
    return {"task": task}


def _message(message_id: str) -> dict[str, Any]:
    return {"message": {"messageId": message_id, "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}


def test_the_resend_check_is_the_one_advisory_check() -> None:
    """Deduplication is a MAY: its check, and only it, is advisory."""
    assert [spec.name for spec in CHECKS if spec.advisory] == [RESEND]
    assert CHECKS[-1].name == RESEND
    assert CHECKS[-1].operation == "SendMessage"


def test_an_agent_that_deduplicates_passes_the_resend_check() -> None:
    """Two sends with one messageId per interface; the first task comes back; one task each."""
    agent = FakeAgent()
    report = _run(agent, checks=[RESEND])
    assert _statuses(report) == {(RESEND, "jsonrpc"): "passed", (RESEND, "http+json"): "passed"}
    sends = _sends(agent)
    assert len(sends) == 4
    assert sends[0] == sends[1]
    assert sends[2] == sends[3]
    assert sends[0] != sends[2]
    assert len(agent.tasks) == 2
    found = report.result(RESEND, "jsonrpc")
    assert found.advisory is True
    assert found.operation == "SendMessage"
    assert found.expected is None
    assert found.observed is not None
    assert found.observed.outcome == "success"
    [task_id] = [t for t, task in agent.tasks.items() if agent.by_message[sends[0]] is task]
    assert found.notes == (
        f"the resend of messageId {sends[0]} got the first task back: {task_id}",
        "the agent deduplicates, but its card does not say so (no "
        "urn:a2a-client-errors:ext:deduplicate:v1 extension): clients cannot know to resend at "
        "once; a2a_client_errors.server.deduplicate(handler, card=card) adds it",
    )
    assert report.exit_status == 0
    assert report.agent is not None
    assert report.agent.deduplicate is None


ADVERTISED = {
    "uri": "urn:a2a-client-errors:ext:deduplicate:v1",
    "required": False,
    "params": {"ttl": 3600, "perCaller": True},
}


def test_a_card_that_advertises_deduplication_is_reported_and_held_to_it() -> None:
    """Advertised and kept: passed, counted (not advisory), the ttl in the notes and header."""
    card = _card(extensions=[{"uri": EXTENSION, "required": True}, ADVERTISED])
    report = _run(FakeAgent(card), checks=[RESEND])
    assert report.agent is not None
    assert report.agent.deduplicate == DedupeParams(ttl=3600.0)
    found = report.result(RESEND, "jsonrpc")
    assert found.status is CheckStatus.PASSED
    assert found.advisory is False
    assert found.notes[1] == (
        "the card advertises deduplication (urn:a2a-client-errors:ext:deduplicate:v1, ttl 3600 s)"
    )
    assert report.exit_status == 0
    assert "; deduplication advertised (ttl 3600 s)" in report.to_text().splitlines()[2]
    data = json.loads(report.to_json())
    assert data["agent"]["deduplicate"] == {
        "extension": "urn:a2a-client-errors:ext:deduplicate:v1",
        "ttl": 3600.0,
        "per_caller": True,
    }
    assert data["advisory_summary"]["passed"] == 0


def test_a_card_that_advertises_deduplication_falsely_fails_the_probe() -> None:
    """Advertised, yet the resend made a second task: a contradiction, and exit status 1."""
    card = _card(extensions=[{"uri": EXTENSION, "required": True}, ADVERTISED])
    report = _run(FakeAgent(card, deduplicate=False), checks=[RESEND])
    for binding in ("jsonrpc", "http+json"):
        found = report.result(RESEND, binding)
        assert found.status is CheckStatus.FAILED
        assert found.advisory is False
        assert found.notes[0].endswith("(the agent ran the message twice)")
        assert found.notes[1] == (
            "contradiction: the card advertises deduplication "
            "(urn:a2a-client-errors:ext:deduplicate:v1, ttl 3600 s), but its resend was run "
            "again: a client that trusts the card makes duplicate work"
        )
    assert report.exit_status == 1
    text = report.to_text()
    assert "    - contradiction: the card advertises deduplication" in text
    assert text.splitlines()[-1] == (
        "result: 0 checks passed, 2 failed, 0 errors, 0 skipped (exit status 1)"
    )


def test_two_tasks_fail_the_check_without_failing_the_probe() -> None:
    """An agent that runs the resend again: failed, marked advisory, exit status still 0."""
    agent = FakeAgent(deduplicate=False)
    report = _run(agent, checks=["task_not_found", RESEND])
    found = report.result(RESEND, "http+json")
    assert found.status is CheckStatus.FAILED
    assert found.advisory is True
    sent = _sends(agent)[2]
    first, second = (t for t in agent.tasks if t in found.notes[0])
    assert found.notes[0] == (
        f"two tasks for one messageId {sent}: {first}, then {second} (the agent ran the "
        "message twice)"
    )
    assert found.notes[1].startswith("deduplication is optional (SendMessage MAY be idempotent")
    assert "a2a_client_errors.server.deduplicate" in found.notes[1]
    assert len(agent.tasks) == 4
    assert report.exit_status == 0
    assert report.ok
    text = report.to_text()
    rows = [line.split() for line in text.splitlines() if line.startswith(RESEND)]
    assert [row[:4] for row in rows] == [
        [RESEND, "jsonrpc", "FAIL", "(advisory)"],
        [RESEND, "http+json", "FAIL", "(advisory)"],
    ]
    assert "    - two tasks for one messageId" in text
    assert text.splitlines()[-1] == (
        "result: 2 checks passed, 2 failed (2 advisory), 0 errors, 0 skipped (exit status 0)"
    )
    data = json.loads(report.to_json())
    assert data["exit_status"] == 0
    assert data["ok"] is True
    assert data["summary"] == {
        "passed": 2,
        "failed": 2,
        "skipped": 0,
        "error": 0,
        "inconclusive": 0,
    }
    assert data["advisory_summary"] == {
        "passed": 0,
        "failed": 2,
        "skipped": 0,
        "error": 0,
        "inconclusive": 0,
    }
    checks = {(c["check"], c["binding"]): c for c in data["checks"]}
    assert checks[RESEND, "jsonrpc"]["status"] == "failed"
    assert checks[RESEND, "jsonrpc"]["advisory"] is True
    assert checks[RESEND, "jsonrpc"]["expected"] is None
    assert checks[RESEND, "jsonrpc"]["observed"]["outcome"] == "success"
    assert checks["task_not_found", "jsonrpc"]["advisory"] is False


def test_a_failure_that_counts_still_exits_1_beside_an_advisory_one() -> None:
    """The advisory check changes nothing about the checks that count."""
    agent = FakeAgent(
        deduplicate=False,
        overrides={("jsonrpc", "GetTask"): _respond(httpx.Response(500, text="oops"))},
    )
    report = _run(agent, checks=["task_not_found", RESEND], bindings=["jsonrpc"])
    assert _statuses(report) == {
        ("task_not_found", "jsonrpc"): "failed",
        (RESEND, "jsonrpc"): "failed",
    }
    assert report.exit_status == 1
    assert report.to_text().splitlines()[-1] == (
        "result: 0 checks passed, 2 failed (1 advisory), 0 errors, 0 skipped (exit status 1)"
    )


def test_the_advisory_check_alone_exits_0_when_judged_and_2_when_not() -> None:
    """Run alone: a judged failure is a probe that ran (0); an error judged nothing (2)."""
    failed = _run(FakeAgent(deduplicate=False), checks=[RESEND])
    assert failed.exit_status == 0
    erred = _run(_script(_timeout), checks=[RESEND], bindings=["jsonrpc"])
    assert erred.result(RESEND, "jsonrpc").status is CheckStatus.ERROR
    assert erred.exit_status == 2
    assert erred.error is None
    assert erred.to_text().splitlines()[-1] == (
        "result: 0 checks passed, 0 failed, 1 errors (1 advisory), 0 skipped (exit status 2)"
    )
    [row] = [line for line in erred.to_text().splitlines() if line.startswith(RESEND)]
    assert row.split()[2:4] == ["ERROR", "(advisory)"]


@pytest.mark.parametrize(
    ("answers", "status", "notes"),
    [
        pytest.param(
            [_rpc(_message("m-1")), _rpc(_message("m-1"))],
            CheckStatus.PASSED,
            [
                "the resend of messageId {sent} got the first Message back: m-1",
                "the agent deduplicates, but its card does not say so*",
            ],
            id="the-same-message",
        ),
        pytest.param(
            [_rpc(_message("m-1")), _rpc(_message("m-2"))],
            CheckStatus.FAILED,
            [
                "two Messages for one messageId {sent}: m-1, then m-2 (the agent answered the "
                "message twice)",
                "deduplication is optional*",
            ],
            id="two-messages",
        ),
        pytest.param(
            [_rpc(_task("t-1")), _rpc(_message("m-2"))],
            CheckStatus.FAILED,
            [
                "the first send answered with task t-1, the resend with Message m-2",
                "deduplication is optional*",
            ],
            id="a-task-then-a-message",
        ),
        pytest.param(
            [_rpc_error(-32603, "boom")],
            CheckStatus.ERROR,
            ["SendMessage got an error: -32603 INTERNAL_ERROR: 'boom'", "nothing to resend"],
            id="the-first-send-errs",
        ),
        pytest.param(
            [_respond(httpx.Response(401, text="who?"))],
            CheckStatus.ERROR,
            [
                "SendMessage refused: 401 UNAUTHENTICATED (pass the credentials the agent needs "
                "with -H/headers=)",
                "nothing to resend",
            ],
            id="the-first-send-is-refused",
        ),
        pytest.param(
            [_rpc({"something": "else"})],
            CheckStatus.ERROR,
            [
                "the agent answered SendMessage with a JSON answer: no task or Message to tell "
                "a resend by"
            ],
            id="the-first-answer-is-neither",
        ),
        pytest.param(
            [_rpc(_task(None))],
            CheckStatus.ERROR,
            [
                "the agent answered SendMessage with a task in TASK_STATE_COMPLETED: no task or "
                "Message to tell a resend by"
            ],
            id="a-task-without-an-id",
        ),
        pytest.param(
            [_echo],
            CheckStatus.ERROR,
            [
                "the agent answered SendMessage with a Message with the messageId sent: no task "
                "or Message to tell a resend by"
            ],
            id="a-message-that-echoes-the-id",
        ),
        pytest.param(
            [_rpc(_task("t-1")), _rpc_error(-32600, "duplicate messageId")],
            CheckStatus.ERROR,
            [
                "the resend of messageId {sent} got an error: -32600 INVALID_REQUEST: "
                "'duplicate messageId'",
                "the first send answered with task t-1",
            ],
            id="the-resend-errs",
        ),
        pytest.param(
            [_rpc(_task("t-1")), _timeout],
            CheckStatus.ERROR,
            [
                "the resend of messageId {sent} got no answer: "
                "the answer timed out (httpx.ReadTimeout)",
                "the first send answered with task t-1",
            ],
            id="the-resend-gets-no-answer",
        ),
        pytest.param(
            [_rpc(_task("t-1")), _rpc(None)],
            CheckStatus.ERROR,
            [
                "the agent answered the resend with an answer without a body, not a task or "
                "Message",
                "the first send answered with task t-1",
            ],
            id="the-resend-answer-is-neither",
        ),
    ],
)
def test_scripted_answers_to_the_resend(
    answers: list[Callable[[httpx.Request], httpx.Response]],
    status: CheckStatus,
    notes: list[str],
) -> None:
    """Same answer passes, another fails, anything but a task or Message errs, saying why."""
    agent = _script(*answers)
    report = _run(agent, checks=[RESEND], bindings=["jsonrpc"])
    found = report.result(RESEND, "jsonrpc")
    assert found.status is status
    assert found.advisory is True
    sent = _sends(agent)[0]
    assert len(_sends(agent)) == len(answers)
    assert set(_sends(agent)) == {sent}
    assert len(found.notes) == len(notes)
    for note, wanted in zip(found.notes, notes, strict=True):
        if wanted.endswith("*"):
            assert note.startswith(wanted[:-1])
        else:
            assert note == wanted.format(sent=sent)


# --------------------------------------------------------------------------------------------
# Small parts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("127.0.0.1:5000", "127.0.0.1"),
        ("dns:///Agent.Example.com:443", "agent.example.com"),
        ("grpcs://agent.test", "agent.test"),
        ("https://[::1]:8443/a2a", "::1"),
        ("http://[::1", None),
    ],
)
def test_host_of_reads_urls_and_grpc_targets(url: str, host: str | None) -> None:
    """Hosts are compared case-insensitively, whatever form the interface URL takes."""
    assert _host_of(url) == host


@pytest.mark.parametrize(
    ("url", "scheme", "target"),
    [
        ("127.0.0.1:5000", "http", ("127.0.0.1:5000", False)),
        ("agent.test:443", "https", ("agent.test:443", True)),
        ("grpcs://agent.test", "http", ("agent.test:443", True)),
        ("https://agent.test", "http", ("agent.test:443", True)),
        ("http://agent.test", "https", ("agent.test:80", False)),
        ("grpc://agent.test:9000", "https", ("agent.test:9000", False)),
        ("dns:///agent.test:9000", "https", ("dns:///agent.test:9000", True)),
    ],
)
def test_grpc_targets_take_tls_from_their_scheme_else_the_url_given(
    url: str, scheme: str, target: tuple[str, bool]
) -> None:
    """A scheme on the interface decides TLS; without one, the URL given's scheme does."""
    assert _grpc_target(url, scheme) == target


# --------------------------------------------------------------------------------------------
# Edges
# --------------------------------------------------------------------------------------------


def test_a_bug_in_one_check_is_an_error_result_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that raises ends as an error naming the exception; the others still run."""

    def broken(session: object) -> object:
        raise LookupError("a bug")

    monkeypatch.setitem(probe_checks._RUNNERS, "task_not_found", broken)
    report = _run(FakeAgent(), checks=["task_not_found", "invalid_params"], bindings=["jsonrpc"])
    found = report.result("task_not_found", "jsonrpc")
    assert found.status is CheckStatus.ERROR
    assert found.notes == ("the probe failed on this check: LookupError: a bug",)
    assert report.result("invalid_params", "jsonrpc").passed


def test_a_body_that_breaks_off_is_no_answer() -> None:
    """The connection drops in the middle of the body: an error, said as no answer."""

    class Broken(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b'{"jsonrpc": '
            raise httpx.ReadError("connection reset")

    agent = FakeAgent(
        overrides={("jsonrpc", "GetTask"): lambda r: httpx.Response(200, stream=Broken())}
    )
    report = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    found = report.result("task_not_found", "jsonrpc")
    assert found.status is CheckStatus.ERROR
    assert found.notes == ("no answer: reading the answer failed (httpx.ReadError)",)
    assert "no answer" in report.to_text()


def test_an_endless_stream_without_events_is_read_only_so_far() -> None:
    """Keep-alive comments and nothing else: the probe stops reading, and the check fails."""
    stream = httpx.Response(
        200, headers={"Content-Type": "text/event-stream"}, content=b": ka\n" * 10_005
    )
    agent = FakeAgent(overrides={("jsonrpc", "SendStreamingMessage"): _respond(stream)})
    found = _run(agent, checks=["streaming_not_supported"], bindings=["jsonrpc"]).result(
        "streaming_not_supported", "jsonrpc"
    )
    assert found.status is CheckStatus.FAILED


def test_interfaces_without_a_usable_url_are_listed_not_probed() -> None:
    """An interface with no host, or an HTTP binding on a URL that is not http(s)."""
    card = _card()
    card["supportedInterfaces"] = [
        {"url": "/relative/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "ws://agent.test/api", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
    ]
    report = _run(FakeAgent(card))
    assert [i.note for i in report.interfaces] == [
        "the card gives no host for it",
        "not an http(s) URL (ws)",
    ]
    assert report.exit_status == 2


def test_a_grpc_interface_without_grpcio_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No grpcio (or no a2a-sdk): the gRPC interface is listed with the install line."""
    monkeypatch.setitem(sys.modules, "grpc", None)
    card = _card()
    card["supportedInterfaces"].append(
        {"url": "agent.test:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    )
    report = _run(FakeAgent(card), checks=["task_not_found"])
    grpc_interface = report.interfaces[2]
    assert not grpc_interface.probed
    assert grpc_interface.note == (
        "gRPC needs grpcio and a2a-sdk (grpc is missing): pip install 'a2a-client-errors[probe]'"
    )
    assert report.ok


@pytest.mark.a2a_sdk("1")  # the probe's gRPC calls are of the 1.0 proto (a2a-sdk 1.x)
def test_an_unreachable_grpc_interface_is_inconclusive_and_left_alone() -> None:
    """TLS gRPC on a closed port: the first check gets no answer, the others are not sent."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    card = _card()
    card["supportedInterfaces"] = [
        {"url": f"https://127.0.0.1:{port}", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
    ]
    report = probe(
        "http://127.0.0.1:9",
        transport=FakeAgent(card).transport(),
        checks=["task_not_found", "version_not_supported"],
        timeout=5,
    )
    first, second = report.checks
    assert first.status is CheckStatus.INCONCLUSIVE
    assert first.observed is not None
    assert first.observed.outcome == "no_answer"
    assert first.observed.grpc_status == "UNAVAILABLE"
    assert second.status is CheckStatus.INCONCLUSIVE
    assert report.exit_status == 3


def test_grpc_hops_name_envoy_and_survive_unreadable_metadata() -> None:
    """Metadata of a gRPC call names the hops; metadata that cannot be read names none."""

    class Call:
        def initial_metadata(self) -> list[tuple[str, str]]:
            return [("server", "envoy"), ("x-envoy-upstream-service-time", "3"), ("x", "y")]

        def trailing_metadata(self) -> list[tuple[str, str]]:
            raise RuntimeError("gone")

    assert _grpc_hops(Call()) == {"server": "envoy", "envoy": "x-envoy-*"}
    assert _grpc_hops(object()) == {}


def test_credentials_and_ports_in_urls() -> None:
    """The port stays in reported URLs; the credentials do not."""
    assert _public("http://u:p@agent.test:8080/a?b=1") == "http://agent.test:8080/a?b=1"
    assert _public("http://agent.test/a") == "http://agent.test/a"
    assert _public("http://u:p@[::1]:8080/x") == "http://[::1]:8080/x"
    assert _public("http://[::1") == "http://[::1"


def test_the_strict_table_is_shown() -> None:
    """A report made with a strict table says so."""
    report = _run(FakeAgent(), checks=["task_not_found"], strict_table="1.0.0")
    assert "strict table: 1.0.0" in report.to_text()
    assert report.ok


def test_a_refused_or_unanswered_send_is_an_error_not_a_skip() -> None:
    """No terminal task because SendMessage needs credentials: the checks needing it err."""
    agent = FakeAgent(
        overrides={("jsonrpc", "SendMessage"): _respond(httpx.Response(401, text="who?"))}
    )
    report = _run(agent, checks=["task_not_cancelable", "push_not_supported"], bindings=["jsonrpc"])
    for check in ("task_not_cancelable", "push_not_supported"):
        found = report.result(check, "jsonrpc")
        assert found.status is CheckStatus.ERROR
        assert found.notes[0].startswith("SendMessage refused: 401")
    sends = [r for r in agent.requests if b"SendMessage" in r.content]
    assert len(sends) == 1

    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    dropped = _run(
        FakeAgent(overrides={("jsonrpc", "SendMessage"): drop}),
        checks=["task_not_cancelable"],
        bindings=["jsonrpc"],
    )
    assert dropped.result("task_not_cancelable", "jsonrpc").notes == (
        "SendMessage got no answer: the answer timed out (httpx.ReadTimeout)",
    )


def test_a_user_agent_given_replaces_the_probe_s_own() -> None:
    """The probe names itself unless a User-Agent is given, and never sends two."""
    agent = FakeAgent()
    _run(agent, checks=["task_not_found"], bindings=["jsonrpc"])
    assert {r.headers.get_list("User-Agent")[0] for r in agent.requests} == {"a2a-errors-probe"}
    mine = FakeAgent()
    _run(mine, checks=["task_not_found"], bindings=["jsonrpc"], headers={"user-agent": "ci/1"})
    assert {tuple(r.headers.get_list("User-Agent")) for r in mine.requests} == {("ci/1",)}


def test_importing_the_probe_imports_no_optional_dependency() -> None:
    """Neither grpc nor a2a-sdk is imported until a gRPC interface is probed."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, a2a_client_errors.probe, a2a_client_errors.cli; "
            "print(sorted(m for m in ('grpc', 'a2a') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == "[]"


def test_a_hop_that_answers_503_to_everything_is_inconclusive_with_exit_status_3() -> None:
    """Nothing but the card gets past the hop: every check inconclusive, exit status 3."""
    sent: list[str] = []

    def hop(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("agent-card.json"):
            return httpx.Response(200, json=_card())
        sent.append(request.url.path)
        return httpx.Response(503, headers={"Server": "envoy"}, text="upstream connect error")

    report = probe(AGENT, transport=httpx.MockTransport(hop))
    statuses = {result.status for result in report.checks}
    assert CheckStatus.INCONCLUSIVE in statuses
    assert statuses <= {CheckStatus.INCONCLUSIVE, CheckStatus.SKIPPED}
    assert report.exit_status == 3
    assert "inconclusive" in report.to_text().splitlines()[-1]
    assert report.to_dict()["summary"]["inconclusive"] >= 1
    assert len(sent) <= 3 * len(report.checks)  # tried again a bounded number of times


# --------------------------------------------------------------------------------------------
# Streams read by the one SSE reader, and a run bounded by its timeout
# --------------------------------------------------------------------------------------------


def test_a_stream_event_holding_unicode_line_separators_is_read_whole() -> None:
    """An error event whose message holds U+2028, U+2029, U+0085 (raw) is read, and passes."""
    error = to_jsonrpc(A2AError(Reason.UNSUPPORTED_OPERATION, "no\u2028stream\u2029ing\x85"), 1)
    stream = httpx.Response(
        200,
        headers={"Content-Type": "text/event-stream"},
        content=b"event: error\r\ndata: "
        + json.dumps(error, ensure_ascii=False).encode()
        + b"\r\n\r\n",
    )
    agent = FakeAgent(overrides={("jsonrpc", "SubscribeToTask"): _respond(stream)})
    found = _run(agent, checks=["subscribe_not_supported"], bindings=["jsonrpc"]).result(
        "subscribe_not_supported", "jsonrpc"
    )
    assert found.passed


def test_a_stream_line_that_never_ends_is_an_invalid_answer() -> None:
    """A first event past the probe's cap is not buffered: the answer is invalid."""

    def endless() -> Iterator[bytes]:
        yield b"data: "
        for _ in range(2048):
            yield b"x" * 1024

    agent = FakeAgent(
        overrides={
            ("jsonrpc", "SubscribeToTask"): lambda request: httpx.Response(
                200, headers={"Content-Type": "text/event-stream"}, content=endless()
            )
        }
    )
    found = _run(agent, checks=["subscribe_not_supported"], bindings=["jsonrpc"]).result(
        "subscribe_not_supported", "jsonrpc"
    )
    assert found.observed is not None
    assert found.observed.reason == "INVALID_AGENT_RESPONSE"


def _dripping(loopback: Loopback, *, card: bool) -> None:
    """Every answer trickles a byte every 20 ms (the card too, when ``card``)."""
    body = _card()
    body["supportedInterfaces"] = [
        {"url": f"{loopback.url}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    drip = b'{"jsonrpc": "2.0", "id": 1, "result": {' + b" " * 4000 + b"}}"

    def answer(request: Recorded) -> Reply:
        if request.path == CARD:
            reply = Reply.json(200, body)
            return Reply(200, reply.body, reply.headers, pace=0.02) if card else reply
        if b"Stream" in request.body or b"Subscribe" in request.body:
            return Reply(200, b"data: " + drip, {"content-type": "text/event-stream"}, pace=0.02)
        return Reply(200, drip, {"content-type": "application/json"}, pace=0.02)

    loopback.script(answer)


def test_the_probe_timeout_bounds_the_whole_run_against_a_dripping_agent(
    loopback: Loopback,
) -> None:
    """Trickling bodies and events cannot stretch the run past its timeout (the rest: ERROR)."""
    _dripping(loopback, card=False)
    started = time.monotonic()
    report = probe(loopback.url, timeout=1.0, bindings=["jsonrpc"])
    elapsed = time.monotonic() - started
    assert elapsed < 4.0
    assert report.checks
    assert any(check.status is CheckStatus.ERROR for check in report.checks)


def test_the_probe_timeout_bounds_a_dripping_card(loopback: Loopback) -> None:
    """A card that trickles in is cut at the timeout; the command says it could not run."""
    _dripping(loopback, card=True)
    started = time.monotonic()
    done = subprocess.run(  # noqa: S603 (our own command)
        [sys.executable, "-m", "a2a_client_errors", "probe", loopback.url, "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 2
    assert "cannot read the agent card" in done.stderr
    assert elapsed < 8.0


def test_method_not_found_for_a_10_method_says_the_agent_likely_speaks_older_a2a() -> None:
    """A 0.3 agent behind a 1.0 card: the report says why the methods are not found."""
    unknown = httpx.Response(
        200,
        json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Unknown method"}},
    )
    agent = FakeAgent(overrides={("jsonrpc", "GetTask"): _respond(unknown)})
    found = _run(agent, checks=["task_not_found"], bindings=["jsonrpc"]).result(
        "task_not_found", "jsonrpc"
    )
    assert found.status is CheckStatus.FAILED
    assert any("older A2A" in note for note in found.notes)


def test_a_card_without_a_protocol_version_says_the_agent_likely_speaks_older_a2a() -> None:
    """An interface the card lists with no protocolVersion: the report says what it implies."""
    card = _card()
    for interface in card["supportedInterfaces"]:
        interface.pop("protocolVersion", None)
    report = _run(FakeAgent(card), checks=["task_not_found"])
    notes = [interface.note for interface in report.interfaces]
    assert notes
    assert all("likely speaks an older A2A" in note for note in notes)
    assert "likely speaks an older A2A" in report.to_text()
