"""What each check expects: the checks' specifications and the spec's tables, per binding.

`CHECKS` lists the checks `probe` runs (`CheckSpec`); `expected_for` and `standard_expected`
say what the spec wants back on a binding, and `shape_problems` / `reason_problems` compare an
`Observed` answer with it. The ids and messages the checks send are made here too, so that the
checks and the wires share them without knowing each other.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors import Reason
from a2a_client_errors.probe._report import GRPC, HTTP_JSON, JSONRPC, Expected, Observed, capped
from a2a_client_errors.types import A2A_DOMAIN, WireShape, canonical_reason

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["CHECKS", "TABLES", "CheckSpec"]

TABLES: Final[tuple[str, ...]] = ("1.0.1", "1.0.0")
"""The spec tables of statuses a probe can hold an agent to, as ``strict_table=`` names them."""


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check of the probe: its name, the operation it calls, and what it triggers.

    Attributes:
        name: the name ``checks=`` and ``--check`` take.
        operation: the A2A operation it calls.
        summary: what it sends and expects, in a line.
        advisory: whether it judges a behaviour the spec makes optional (a MAY): its
            failure is reported, but never makes the exit status 1, unless the card promises
            that behaviour (``resend_deduplicated`` on a card that advertises deduplication).

    """

    name: str
    operation: str
    summary: str
    advisory: bool = False


CHECKS: Final[tuple[CheckSpec, ...]] = (
    CheckSpec("task_not_found", "GetTask", "GetTask with a random id -> TASK_NOT_FOUND"),
    CheckSpec(
        "task_not_cancelable",
        "CancelTask",
        "CancelTask on a task that came back terminal from SendMessage -> TASK_NOT_CANCELABLE",
    ),
    CheckSpec(
        "streaming_not_supported",
        "SendStreamingMessage",
        "SendStreamingMessage when the card says no streaming -> UNSUPPORTED_OPERATION",
    ),
    CheckSpec(
        "subscribe_not_supported",
        "SubscribeToTask",
        "SubscribeToTask when the card says no streaming -> UNSUPPORTED_OPERATION",
    ),
    CheckSpec(
        "push_not_supported",
        "CreateTaskPushNotificationConfig",
        "a push config when the card says no push notifications -> PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    CheckSpec(
        "extended_card",
        "GetExtendedAgentCard",
        "GetExtendedAgentCard: UNSUPPORTED_OPERATION when the card declares none, "
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED when it declares one the agent does not have",
    ),
    CheckSpec(
        "extension_required",
        "SendMessage",
        "SendMessage without a required extension -> EXTENSION_SUPPORT_REQUIRED",
    ),
    CheckSpec(
        "version_not_supported",
        "GetTask",
        "GetTask with A2A-Version: 99.0 -> VERSION_NOT_SUPPORTED",
    ),
    CheckSpec("parse_error", "SendMessage", "a body that is not JSON -> -32700 / HTTP 400"),
    CheckSpec("invalid_request", "GetTask", "a JSON-RPC request without a method -> -32600"),
    CheckSpec("method_not_found", "-", "a JSON-RPC method nobody has -> -32601"),
    CheckSpec(
        "invalid_params",
        "SendMessage",
        "a message without its required messageId and parts -> -32602 / 400 / INVALID_ARGUMENT",
    ),
    CheckSpec(
        "resend_deduplicated",
        "SendMessage",
        "SendMessage twice with one messageId -> the first task again (advisory: SendMessage "
        "MAY be idempotent, §3.3.1; it counts when the card advertises deduplication)",
        advisory=True,
    ),
)
SPECS: Final[Mapping[str, CheckSpec]] = {spec.name: spec for spec in CHECKS}


# --------------------------------------------------------------------------------------------
# What the checks send: ids and messages (the wires use the ids too)
# --------------------------------------------------------------------------------------------


def random_id() -> str:
    """A fresh id for a task or a message the probe sends, recognisably the probe's."""
    return f"a2a-errors-probe-{uuid.uuid4()}"


def user_message(text: str) -> dict[str, Any]:
    """A user message of ``text`` with a fresh messageId, as SendMessage takes it."""
    return {"messageId": random_id(), "role": "ROLE_USER", "parts": [{"text": text}]}


# --------------------------------------------------------------------------------------------
# Judging one answer
# --------------------------------------------------------------------------------------------


def expected_for(reason: Reason, binding: str, strict: str | None) -> Expected:
    """What the spec wants back for ``reason`` on ``binding``, from either table or ``strict``."""
    row = reason.row
    use_new = strict in (None, "1.0.1")
    use_old = strict in (None, "1.0.0")
    http: list[int] = []
    grpc: list[str] = []
    for wanted, h, g in (
        (use_new, row.http, row.grpc),
        (use_old, row.http_legacy, row.grpc_legacy),
    ):
        if wanted:
            if h is not None and h not in http:
                http.append(h)
            if g is not None and g not in grpc:
                grpc.append(g)
    if binding == JSONRPC:
        return Expected(reason.value, jsonrpc_code=row.jsonrpc, error_info=True)
    if binding == HTTP_JSON:
        return Expected(
            reason.value, http_status=tuple(http), grpc_status=tuple(grpc), error_info=True
        )
    return Expected(reason.value, grpc_status=tuple(grpc), error_info=True)


def standard_expected(code: int, binding: str) -> Expected:
    """What the spec wants back for a standard JSON-RPC error ``code`` on ``binding``."""
    if binding == JSONRPC:
        return Expected(None, jsonrpc_code=code)
    if binding == HTTP_JSON:
        return Expected(None, http_status=(400,), grpc_status=("INVALID_ARGUMENT",))
    return Expected(None, grpc_status=("INVALID_ARGUMENT",))


def table_followed(reason: str | None, binding: str, observed: Observed) -> str | None:
    """Which table the status follows, for the nine A2A errors on HTTP+JSON and gRPC."""
    if reason is None or binding == JSONRPC or observed.outcome != "error":
        return None
    try:
        row = Reason(reason).row
    except ValueError:
        return None
    tables = {"1.0.1", "1.0.0"}
    if binding == HTTP_JSON:
        if observed.http_status is None:
            return "neither"
        if observed.http_status != row.http:
            tables.discard("1.0.1")
        if observed.http_status != row.http_legacy:
            tables.discard("1.0.0")
    if observed.grpc_status is not None or binding == GRPC:
        if observed.grpc_status != row.grpc:
            tables.discard("1.0.1")
        if observed.grpc_status != row.grpc_legacy:
            tables.discard("1.0.0")
    if len(tables) == 2:
        return "both"
    return tables.pop() if tables else "neither"


_WIRE_WORDS: Final[Mapping[str, str]] = {
    WireShape.JSONRPC.value: "a JSON-RPC error",
    WireShape.STATUS_JSON.value: "a google.rpc.Status body",
    WireShape.PROBLEM_JSON.value: "an RFC 9457 problem+json body (the pre-1.0 shape)",
    WireShape.LEGACY.value: "a pre-1.0 error body",
    WireShape.BARE_STATUS.value: "no A2A error body",
    WireShape.INVALID.value: "an answer that breaks the protocol",
}


def shape_problems(binding: str, expected: Expected, seen: Observed) -> list[str]:
    """How the code or status ``seen`` differs from ``expected`` (empty when it does not)."""
    problems: list[str] = []
    if binding == JSONRPC:
        if seen.jsonrpc_code is None:
            what = _WIRE_WORDS.get(seen.wire or "", "no JSON-RPC error")
            status = "" if seen.http_status is None else f"HTTP {seen.http_status} "
            problems.append(
                f"no JSON-RPC error came back: {status}{seen.content_type or ''} "
                f"with {what}".replace("  ", " ")
            )
        elif seen.jsonrpc_code != expected.jsonrpc_code:
            problems.append(f"JSON-RPC code {seen.jsonrpc_code}, expected {expected.jsonrpc_code}")
        return problems
    if binding == HTTP_JSON:
        if seen.wire != WireShape.STATUS_JSON.value:
            what = _WIRE_WORDS.get(seen.wire or "", "an unknown body")
            content = seen.content_type or "no content type"
            problems.append(
                f"HTTP {seen.http_status} {content} with {what}; the HTTP+JSON binding "
                "answers errors with a google.rpc.Status body (§11.6)"
            )
        elif seen.http_status not in expected.http_status:
            wanted = " or ".join(str(s) for s in expected.http_status)
            problems.append(f"HTTP {seen.http_status}, expected {wanted}")
        if (
            seen.wire == WireShape.STATUS_JSON.value
            and seen.grpc_status is not None
            and seen.grpc_status not in expected.grpc_status
        ):
            wanted = " or ".join(expected.grpc_status)
            problems.append(f"error.status {seen.grpc_status}, expected {wanted}")
        return problems
    if seen.grpc_status not in expected.grpc_status:
        wanted = " or ".join(expected.grpc_status)
        problems.append(f"gRPC status {seen.grpc_status}, expected {wanted}")
    return problems


def reason_problems(binding: str, expected: Expected, seen: Observed) -> list[str]:
    """How the reason and ErrorInfo ``seen`` differ from ``expected`` (empty when they do not)."""
    if expected.reason is None:
        return []
    if not seen.error_info:
        by = "its code" if binding == JSONRPC else "its status"
        if seen.reason == expected.reason:
            named = f"the reason is right by {by} only"
        elif seen.reason is not None:
            named = f"{by} names {seen.reason}"
        else:
            named = f"{by} names no reason"
        note = (
            "ErrorInfo missing: a hop stripped the details, or the agent does not send them "
            f"({named})"
        )
        if binding == JSONRPC:
            note += "; A2A 1.0.0 requires ErrorInfo in error.data, 1.0.1 recommends it"
        return [note]
    if seen.domain != A2A_DOMAIN:
        return [f"ErrorInfo domain '{capped(str(seen.domain))}', expected {A2A_DOMAIN!r}"]
    sent = seen.error_info_reason or ""
    if canonical_reason(sent) != Reason(expected.reason):
        return [f"ErrorInfo reason '{capped(sent)}', expected {expected.reason}"]
    return []
