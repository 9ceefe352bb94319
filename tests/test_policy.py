"""Classify and Policy: the default mapping, overrides per reason and operation, immutability."""

from __future__ import annotations

import dataclasses
from typing import Any

import grpc
import httpx
import pytest

from a2a_client_errors import (
    Action,
    CallError,
    CallFailed,
    Decision,
    Policy,
    Reason,
    classify,
    normalize,
)
from a2a_client_errors._policy import OK, succeeded
from a2a_client_errors.types import ErrorKind, Source, WireShape, default_action
from tests.conftest import (
    NINE_ACTIONS,
    error_info,
    json_response,
    jsonrpc_error,
    jsonrpc_result,
    rpc_error,
    status_body,
    task,
)


def _info_body(reason: str) -> dict[str, Any]:
    return status_body(400, "FAILED_PRECONDITION", "x", [error_info(reason)])


# --- the default mapping ----------------------------------------------------------------------


@pytest.mark.parametrize(("reason", "action"), NINE_ACTIONS.items(), ids=list(NINE_ACTIONS))
def test_default_action_per_a2a_reason(reason: str, action: str) -> None:
    """Each A2A reason classifies to the brief's default action."""
    decision = classify(_info_body(reason))
    assert decision.reason is Reason(reason)
    assert decision.action == Action(action)


@pytest.mark.parametrize(
    ("x", "action"),
    [
        (httpx.ConnectError("refused"), Action.RETRY),
        (httpx.ReadTimeout("slow"), Action.RETRY),
        (httpx.Response(408), Action.RETRY),
        (httpx.Response(429), Action.RETRY),
        (httpx.Response(500), Action.RETRY),
        (httpx.Response(502), Action.RETRY),
        (httpx.Response(503), Action.RETRY),
        (httpx.Response(504), Action.RETRY),
        (jsonrpc_error(-32603, "x"), Action.RETRY),
        (_info_body("INTERNAL_ERROR"), Action.RETRY),
        (rpc_error(grpc.StatusCode.UNAVAILABLE), Action.RETRY),
        (rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED), Action.RETRY),
        (rpc_error(grpc.StatusCode.RESOURCE_EXHAUSTED), Action.RETRY),
        (rpc_error(grpc.StatusCode.INTERNAL), Action.RETRY),
        (rpc_error(grpc.StatusCode.UNKNOWN), Action.RETRY),
        (jsonrpc_error(-32700, "x"), Action.FIX_REQUEST),
        (jsonrpc_error(-32600, "x"), Action.FIX_REQUEST),
        (jsonrpc_error(-32601, "x"), Action.FIX_REQUEST),
        (jsonrpc_error(-32602, "x"), Action.FIX_REQUEST),
        (httpx.Response(400), Action.FIX_REQUEST),
        (httpx.Response(405), Action.FIX_REQUEST),
        (httpx.Response(422), Action.FIX_REQUEST),
        (httpx.Response(401), Action.AUTH),
        (httpx.Response(403), Action.AUTH),
        (rpc_error(grpc.StatusCode.UNAUTHENTICATED), Action.AUTH),
        (rpc_error(grpc.StatusCode.PERMISSION_DENIED), Action.AUTH),
        (_info_body("SOMETHING_NEW"), Action.REPORT),
        (jsonrpc_error(-32006, "x"), Action.REPORT),
        (httpx.Response(200, content=b"<html>"), Action.REPORT),
        (jsonrpc_result({"task": task("TASK_STATE_FAILED")}), Action.OK),
        (httpx.Response(204), Action.OK),
    ],
    ids=[
        "connect",
        "read-timeout",
        "408",
        "429",
        "500",
        "502",
        "503",
        "504",
        "-32603",
        "INTERNAL_ERROR",
        "UNAVAILABLE",
        "DEADLINE_EXCEEDED",
        "RESOURCE_EXHAUSTED",
        "INTERNAL",
        "UNKNOWN",
        "-32700",
        "-32600",
        "-32601",
        "-32602",
        "400",
        "405",
        "422",
        "401",
        "403",
        "UNAUTHENTICATED",
        "PERMISSION_DENIED",
        "unknown-reason",
        "-32006",
        "200-not-json",
        "failed-task",
        "204",
    ],
)
def test_default_mapping(x: object, action: Action) -> None:
    """Each signal classifies to the brief's default action."""
    assert classify(x).action is action


def test_decision_carries_the_error_and_hint() -> None:
    """A Decision carries the reason, the hint, the CallError and the operation."""
    response = json_response(
        503, status_body(503, "UNAVAILABLE", "busy"), headers={"Retry-After": "5"}
    )
    decision = classify(response, operation="GetTask")
    assert decision.action is Action.RETRY
    assert decision.retry_after == 5.0
    assert decision.operation == "GetTask"
    assert isinstance(decision.error, CallError)
    assert decision.error.http_status == 503
    assert not decision.ok


def test_ok_decision_for_a_result() -> None:
    """A result gives an ok Decision with no reason, error or hint."""
    decision = classify(jsonrpc_result({"task": task("TASK_STATE_COMPLETED")}), operation="X")
    assert decision == Decision(Action.OK, operation="X")
    assert decision.ok


def _record(**fields: Any) -> CallError:
    base: dict[str, Any] = {
        "kind": ErrorKind.PROTOCOL,
        "reason": None,
        "source": Source.STATUS_FALLBACK,
        "wire": WireShape.BARE_STATUS,
    }
    return CallError(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "action"),
    [
        ({}, Action.REPORT),
        ({"http_status": 503}, Action.RETRY),
        ({"grpc_status": "UNAVAILABLE"}, Action.RETRY),
        ({"reason": Reason.TASK_NOT_FOUND, "http_status": 503}, Action.RECONCILE),
        ({"reason": "SOMETHING_NEW", "http_status": 503}, Action.REPORT),
        ({"kind": ErrorKind.AUTH, "reason": Reason.TASK_NOT_FOUND}, Action.AUTH),
    ],
    ids=["nothing", "http", "grpc", "reason-over-status", "unknown-reason", "auth-first"],
)
def test_default_action_of_a_record(fields: dict[str, Any], action: Action) -> None:
    """default_action reads auth, then the reason, then transport, gRPC and HTTP."""
    assert default_action(_record(**fields)) is action


# --- overrides ------------------------------------------------------------------------------


def test_with_action_overrides_a_reason() -> None:
    """with_action changes the action of one reason and leaves the others alone."""
    policy = Policy().with_action(Reason.TASK_NOT_FOUND, Action.REPORT)
    assert policy.classify(_info_body("TASK_NOT_FOUND")).action is Action.REPORT
    assert policy.classify(jsonrpc_error(-32001, "x")).action is Action.REPORT
    assert policy.classify(_info_body("TASK_NOT_CANCELABLE")).action is Action.RECONCILE
    assert classify(_info_body("TASK_NOT_FOUND"), policy=policy).action is Action.REPORT


def test_with_action_accepts_strings_and_aliases() -> None:
    """An override keyed by an alias or a class name applies to the canonical reason."""
    policy = Policy().with_action("EXTENDED_CARD_NOT_CONFIGURED", "report")
    decision = policy.classify(_info_body("EXTENDED_AGENT_CARD_NOT_CONFIGURED"))
    assert decision.action is Action.REPORT
    policy = Policy().with_action("TaskNotCancelableError", Action.DEGRADE)
    assert policy.classify(jsonrpc_error(-32002, "x")).action is Action.DEGRADE


def test_with_action_on_an_unknown_reason() -> None:
    """An unknown reason can be given an action of its own."""
    policy = Policy().with_action("QUOTA_GONE", Action.RETRY)
    assert policy.classify(_info_body("QUOTA_GONE")).action is Action.RETRY


def test_with_action_rejects_an_unknown_action() -> None:
    """An action outside the seven is refused."""
    with pytest.raises(ValueError, match="explode"):
        Policy().with_action(Reason.TASK_NOT_FOUND, "explode")


def test_operation_override_wins_over_global() -> None:
    """A per-operation override wins on that operation; the global one holds elsewhere."""
    policy = (
        Policy()
        .with_action(Reason.UNSUPPORTED_OPERATION, Action.REPORT)
        .with_action(Reason.UNSUPPORTED_OPERATION, Action.RECONCILE, operation="SubscribeToTask")
    )
    body = _info_body("UNSUPPORTED_OPERATION")
    assert policy.classify(body, operation="SubscribeToTask").action is Action.RECONCILE
    assert policy.classify(body, operation="SendStreamingMessage").action is Action.REPORT
    assert policy.classify(body).action is Action.REPORT
    assert classify(body, operation="SubscribeToTask", policy=policy).action is Action.RECONCILE


def test_operation_override_without_global() -> None:
    """A per-operation override leaves the default on other operations."""
    policy = Policy().with_action("TASK_NOT_FOUND", Action.OK, operation="CancelTask")
    body = jsonrpc_error(-32001, "x")
    assert policy.classify(body, operation="CancelTask").action is Action.OK
    assert policy.classify(body, operation="GetTask").action is Action.RECONCILE


def test_with_actions_sets_several() -> None:
    """with_actions overrides several reasons at once and keeps earlier overrides."""
    policy = (
        Policy()
        .with_action(Reason.INVALID_AGENT_RESPONSE, Action.RETRY)
        .with_actions(
            {
                Reason.PUSH_NOTIFICATION_NOT_SUPPORTED: Action.REPORT,
                "VERSION_NOT_SUPPORTED": "degrade",
            }
        )
    )
    assert policy.classify(_info_body("PUSH_NOTIFICATION_NOT_SUPPORTED")).action is Action.REPORT
    assert policy.classify(_info_body("VERSION_NOT_SUPPORTED")).action is Action.DEGRADE
    assert policy.classify(_info_body("INVALID_AGENT_RESPONSE")).action is Action.RETRY
    assert policy.classify(_info_body("UNSUPPORTED_OPERATION")).action is Action.DEGRADE


def test_policy_is_immutable() -> None:
    """with_* return new policies; the original is unchanged and cannot be assigned to."""
    original = Policy()
    changed = original.with_action(Reason.TASK_NOT_FOUND, Action.REPORT)
    per_op = original.with_action(Reason.TASK_NOT_FOUND, Action.REPORT, operation="GetTask")
    many = original.with_actions({Reason.TASK_NOT_FOUND: Action.REPORT})
    assert changed is not original
    assert per_op is not original
    assert many is not original
    assert original == Policy()
    assert original.classify(jsonrpc_error(-32001, "x")).action is Action.RECONCILE
    assert original.classify(jsonrpc_error(-32001, "x"), operation="GetTask").action is (
        Action.RECONCILE
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        original.actions = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        changed.actions["TASK_NOT_FOUND"] = Action.OK  # type: ignore[index]


def test_override_leaves_results_ok() -> None:
    """Overrides apply to reasons; a result stays ok."""
    policy = Policy().with_action(Reason.TASK_NOT_FOUND, Action.REPORT)
    assert policy.classify(jsonrpc_result({"task": task("TASK_STATE_FAILED")})).action is Action.OK


def test_decide_matches_classify() -> None:
    """Policy.decide(normalize(x)) is classify(x)."""
    for x in (jsonrpc_error(-32004, "x"), httpx.Response(503), None):
        assert Policy().decide(normalize(x)) == classify(x)


def test_call_failed_carries_the_decision() -> None:
    """CallFailed holds the Decision and its error."""
    decision = classify(jsonrpc_error(-32001, "x"))
    exc = CallFailed(decision)
    assert exc.decision is decision
    assert exc.error is decision.error
    assert "TASK_NOT_FOUND" in str(exc)


def test_decision_is_frozen() -> None:
    """A Decision cannot be changed after it is made."""
    decision = classify(jsonrpc_error(-32001, "x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.action = Action.OK  # type: ignore[misc]


def test_method_not_found_answering_a_10_method_says_the_peer_likely_speaks_older_a2a() -> None:
    """The decision's hint names the likely version mismatch; with no operation, none."""
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Unknown method"}}
    decision = classify(body, operation="GetTask")
    assert decision.hint is not None
    assert "older A2A" in decision.hint
    assert decision.to_dict()["hint"] == decision.hint
    assert "older A2A" in str(decision)
    assert classify(body).hint is None
    assert classify({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001}}).hint is None


@pytest.mark.parametrize("operation", [None, "GetTask", "SendMessage", "MyOwnOperation"])
@pytest.mark.parametrize("attempt", [None, 1, 2])
def test_a_success_decision_is_the_one_its_fields_make(
    operation: str | None, attempt: int | None
) -> None:
    """Shared for an A2A operation's first attempt, made anew otherwise: equal either way."""
    made = succeeded(operation, attempt)
    assert made == Decision(Action.OK, operation=operation, attempt=attempt)
    assert (made.operation, made.attempt, made.error, made.reason) == (
        operation,
        attempt,
        None,
        None,
    )
    shared = operation != "MyOwnOperation" and attempt != 2
    assert (made is succeeded(operation, attempt)) is shared
    assert succeeded() is OK
