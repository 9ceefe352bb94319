"""The checks: one function per error the probe triggers, each in terms of the session.

A check knows the `Session` (what to send, what to expect), never the wires. `run_check` runs one
by name, and turns a failure of the probe itself into a result that says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Final

from a2a_client_errors import Reason, task_outcome
from a2a_client_errors.probe._expect import SPECS, random_id, standard_expected, user_message
from a2a_client_errors.probe._report import (
    GRPC,
    HTTP_JSON,
    JSONRPC,
    CheckResult,
    CheckStatus,
    capped,
)
from a2a_client_errors.probe._session import NotCheckedError, Session
from a2a_client_errors.types import A2A_OPERATIONS, DEDUPLICATE_EXTENSION, OLDER_A2A_HINT, ErrorKind

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

_PUSH_URL: Final = "https://push.invalid/a2a-errors-probe"
"""A webhook URL that can never be reached (RFC 2606 ``.invalid``)."""


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


def _task_not_found(s: Session) -> CheckResult:
    answer = s.send("GetTask", {"id": random_id()})
    return s.a2a("task_not_found", Reason.TASK_NOT_FOUND, answer)


def _task_not_cancelable(s: Session) -> CheckResult:
    task_id, why = s.terminal_task()
    if task_id is None:
        return s.skip("task_not_cancelable", f"cannot trigger: {why}")
    answer = s.send("CancelTask", {"id": task_id})
    return s.a2a(
        "task_not_cancelable",
        Reason.TASK_NOT_CANCELABLE,
        answer,
        notes=[f"on {why}"],
        on_success="the agent canceled (or re-answered) a task in a terminal state",
    )


def _streaming_not_supported(s: Session) -> CheckResult:
    if s.agent.streaming:
        return s.skip("streaming_not_supported", "skipped: the card says streaming is supported")
    answer = s.send("SendStreamingMessage", {"message": user_message(s.options.message)})
    return s.a2a(
        "streaming_not_supported",
        Reason.UNSUPPORTED_OPERATION,
        answer,
        on_success="the agent streamed although its card says it does not",
    )


def _subscribe_not_supported(s: Session) -> CheckResult:
    if s.agent.streaming:
        return s.skip("subscribe_not_supported", "skipped: the card says streaming is supported")
    task_id, notes = s.some_task()
    answer = s.send("SubscribeToTask", {"id": task_id})
    return s.a2a(
        "subscribe_not_supported",
        Reason.UNSUPPORTED_OPERATION,
        answer,
        notes=notes,
        on_success="the agent streamed although its card says it does not",
    )


def _push_not_supported(s: Session) -> CheckResult:
    if s.agent.push_notifications:
        return s.skip(
            "push_not_supported", "skipped: the card says push notifications are supported"
        )
    task_id, notes = s.some_task()
    answer = s.send("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": _PUSH_URL})
    return s.a2a(
        "push_not_supported",
        Reason.PUSH_NOTIFICATION_NOT_SUPPORTED,
        answer,
        notes=notes,
        on_success="the agent took a push config although its card says it has no push "
        "notifications",
    )


def _extended_card(s: Session) -> CheckResult:
    answer = s.send("GetExtendedAgentCard", {})
    if not s.agent.extended_agent_card:
        return s.a2a(
            "extended_card",
            Reason.UNSUPPORTED_OPERATION,
            answer,
            notes=["the card declares no extended card (§3.3.4)"],
            on_success="the agent served an extended card its card does not declare",
        )
    error = answer.error
    if error is None:
        return s.skip(
            "extended_card", "skipped: the agent serves the extended card its card declares"
        )
    if error.kind is ErrorKind.AUTH:
        return s.skip(
            "extended_card",
            "skipped: the extended card needs credentials (§13.3); pass them with -H/headers=",
        )
    return s.a2a(
        "extended_card",
        Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED,
        answer,
        notes=["the card declares an extended card the agent does not serve"],
    )


def _extension_required(s: Session) -> CheckResult:
    required = s.agent.required_extensions
    if not required:
        return s.skip("extension_required", "skipped: the card declares no required extension")
    answer = s.send("SendMessage", {"message": user_message(s.options.message)}, extensions=False)
    return s.a2a(
        "extension_required",
        Reason.EXTENSION_SUPPORT_REQUIRED,
        answer,
        notes=[f"required by the card: {', '.join(required)}"],
        on_success="the agent does not enforce the extensions its card marks required",
    )


def _version_not_supported(s: Session) -> CheckResult:
    answer = s.send("GetTask", {"id": random_id()}, version="99.0")
    return s.a2a(
        "version_not_supported",
        Reason.VERSION_NOT_SUPPORTED,
        answer,
        on_success="the agent ignored A2A-Version: 99.0",
        hints={
            Reason.TASK_NOT_FOUND.value: "the agent ignored A2A-Version: 99.0 and looked the "
            "task up"
        },
    )


def _parse_error(s: Session) -> CheckResult:
    if s.binding == GRPC:
        return s.skip(
            "parse_error", "skipped: gRPC has no JSON to break (the runtime rejects bad bytes)"
        )
    if s.binding == JSONRPC:
        answer = s.send("SendMessage", {}, raw_body=b'{"jsonrpc": "2.0", "method": "SendMessage", ')
        expected = standard_expected(-32700, JSONRPC)
    else:
        answer = s.send("SendMessage", {}, raw_body=b'{"message": {"messageId": ')
        expected = standard_expected(0, HTTP_JSON)
    return s.judge("parse_error", "SendMessage", expected, answer)


def _invalid_request(s: Session) -> CheckResult:
    if s.binding != JSONRPC:
        return s.skip("invalid_request", "skipped: the spec defines no equivalent outside JSON-RPC")
    envelope = {"jsonrpc": "2.0", "id": random_id(), "params": {"id": random_id()}}
    answer = s.send("GetTask", {}, envelope=envelope)
    return s.judge("invalid_request", "GetTask", standard_expected(-32600, JSONRPC), answer)


def _method_not_found(s: Session) -> CheckResult:
    if s.binding != JSONRPC:
        return s.skip(
            "method_not_found",
            "skipped: the spec defines no equivalent outside JSON-RPC (an unknown route or "
            "method is the transport's own 404 or UNIMPLEMENTED)",
        )
    envelope = {
        "jsonrpc": "2.0",
        "id": random_id(),
        "method": "A2AErrorsProbeNoSuchMethod",
        "params": {},
    }
    answer = s.send("GetTask", {}, envelope=envelope)
    return s.judge("method_not_found", "-", standard_expected(-32601, JSONRPC), answer)


def _invalid_params(s: Session) -> CheckResult:
    answer = s.send("SendMessage", {"message": {"role": "ROLE_USER"}})
    return s.judge(
        "invalid_params",
        "SendMessage",
        standard_expected(-32602, s.binding),
        answer,
        on_success="the agent took a message without its required messageId and parts",
    )


_OPTIONAL: Final = (
    "deduplication is optional (SendMessage MAY be idempotent, §3.3.1): a client that lost an "
    "answer from this agent must look the task up before it resends; an a2a-sdk agent gains "
    "it with a2a_client_errors.server.deduplicate"
)
_UNSAID: Final = (
    "the agent deduplicates, but its card does not say so (no "
    f"{DEDUPLICATE_EXTENSION} extension): clients cannot know to resend at once; "
    "a2a_client_errors.server.deduplicate(handler, card=card) adds it"
)


def _advertised(s: Session) -> str | None:
    """What the card advertises about deduplication, in words, or None."""
    dedupe = s.agent.deduplicate
    if dedupe is None:
        return None
    return f"the card advertises deduplication ({DEDUPLICATE_EXTENSION}, ttl {dedupe.ttl:g} s)"


def _answered_with(payload: object) -> tuple[str, str] | None:
    """``("task", id)`` or ``("Message", messageId)`` of a SendMessage result, or None."""
    outcome = task_outcome(payload)
    if outcome is not None:
        return None if outcome.task_id is None else ("task", outcome.task_id)
    if isinstance(payload, dict):
        message = payload.get("message", payload)
        message_id = message.get("messageId") if isinstance(message, dict) else None
        if isinstance(message_id, str) and message_id:
            return "Message", message_id
    return None


def _resend_deduplicated(s: Session) -> CheckResult:
    check = "resend_deduplicated"
    message = user_message(s.options.message)
    sent = message["messageId"]
    first = s.send("SendMessage", {"message": message})
    seen = s.observe(first)
    why = s.no_result(first, "SendMessage")
    if why is not None:
        return s.concluded(check, CheckStatus.ERROR, seen, [why, "nothing to resend"])
    before = _answered_with(first.payload)
    if before is None or before == ("Message", sent):
        what = "a Message with the messageId sent" if before else seen.message
        return s.concluded(
            check,
            CheckStatus.ERROR,
            seen,
            [f"the agent answered SendMessage with {what}: no task or Message to tell a resend by"],
        )
    second = s.send("SendMessage", {"message": message})
    seen = s.observe(second)
    first_was = f"the first send answered with {before[0]} {before[1]}"
    why = s.no_result(second, f"the resend of messageId {sent}")
    if why is not None:
        return s.concluded(check, CheckStatus.ERROR, seen, [why, first_was])
    after = _answered_with(second.payload)
    if after is None:
        why = f"the agent answered the resend with {seen.message}, not a task or Message"
        return s.concluded(check, CheckStatus.ERROR, seen, [why, first_was])
    advertised = _advertised(s)
    if after == before:
        return s.concluded(
            check,
            CheckStatus.PASSED,
            seen,
            [
                f"the resend of messageId {sent} got the first {before[0]} back: {before[1]}",
                advertised or _UNSAID,
            ],
        )
    if after[0] != before[0]:
        twice = f"{first_was}, the resend with {after[0]} {after[1]}"
    else:
        twice = (
            f"two {before[0]}s for one messageId {sent}: {before[1]}, then {after[1]} "
            f"(the agent {'ran' if before[0] == 'task' else 'answered'} the message twice)"
        )
    if advertised is None:
        return s.concluded(check, CheckStatus.FAILED, seen, [twice, _OPTIONAL])
    contradiction = (
        f"contradiction: {advertised}, but its resend was run again: a client that trusts "
        "the card makes duplicate work"
    )
    return s.concluded(check, CheckStatus.FAILED, seen, [twice, contradiction])


_RUNNERS: Final[Mapping[str, Callable[[Session], CheckResult]]] = {
    "task_not_found": _task_not_found,
    "task_not_cancelable": _task_not_cancelable,
    "streaming_not_supported": _streaming_not_supported,
    "subscribe_not_supported": _subscribe_not_supported,
    "push_not_supported": _push_not_supported,
    "extended_card": _extended_card,
    "extension_required": _extension_required,
    "version_not_supported": _version_not_supported,
    "parse_error": _parse_error,
    "invalid_request": _invalid_request,
    "method_not_found": _method_not_found,
    "invalid_params": _invalid_params,
    "resend_deduplicated": _resend_deduplicated,
}


HOP_STATUSES: Final = frozenset({429, 502, 503, 504})
"""Statuses that, with no A2A body, are a hop's answer (a gateway, a load balancer), not the
agent's: a check that gets only these is tried again, then inconclusive."""
HOP_GRPC: Final = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED"})
TRIES: Final = 3
"""How many times a check that only a hop answered is sent, in all."""


def _from_a_hop(result: CheckResult) -> bool:
    """Whether only a hop answered: nothing that reached the agent to judge."""
    if result.status not in (CheckStatus.FAILED, CheckStatus.ERROR):
        return False
    observed = result.observed
    if observed is None:
        return any(
            note.startswith("not sent: the interface did not answer") for note in result.notes
        )
    if observed.outcome == "no_answer":
        # Refused (nothing reached the agent), or a gRPC channel that reached no server.
        return observed.delivery == "not_sent" or (
            observed.grpc_status in HOP_GRPC and not observed.error_info
        )
    if observed.error_info_reason is not None or observed.jsonrpc_code is not None:
        return False  # an A2A answer: the agent (or a hop speaking A2A) said it
    if observed.http_status in HOP_STATUSES:
        return observed.wire in (None, "bare_status", "invalid")
    return observed.http_status is None and observed.grpc_status in HOP_GRPC


def run_check(session: Session, check: str) -> CheckResult:
    """One check, marked advisory when its spec is; a failure of the probe's is an error.

    A check that only a hop answered is sent again, `TRIES` times in all; still so, it is
    inconclusive, never a failure of the agent's.
    """
    first: CheckResult | None = None
    for _ in range(TRIES):
        result = _run_one(session, check)
        if not _from_a_hop(result):
            break
        first = first or result  # what the hop said, before the interface was left alone
    else:
        result = first or result
        # What the agent was expected to say is not judged: the hop's answer says nothing of it.
        note = f"inconclusive: only a hop answered, {TRIES} times; nothing reached the agent"
        observed = result.observed
        if observed is not None:
            said = f"HTTP {observed.http_status}" if observed.http_status else observed.outcome
            hops = "; ".join(f"{name} '{value}'" for name, value in observed.hops.items())
            note += f" ({said}{', from ' + hops if hops else ''})"
        result = replace(result, status=CheckStatus.INCONCLUSIVE, notes=(note,))
    observed = result.observed
    if (
        observed is not None
        and observed.reason == Reason.METHOD_NOT_FOUND.value
        and check != "method_not_found"
        and result.operation in A2A_OPERATIONS
    ):
        result = replace(result, notes=(*result.notes, OLDER_A2A_HINT))
    return replace(result, advisory=True) if _advisory(session, check) else result


def _advisory(session: Session, check: str) -> bool:
    """Whether ``check`` is advisory here: optional in the spec, and not promised by the card."""
    promised = check == "resend_deduplicated" and session.agent.deduplicate is not None
    return SPECS[check].advisory and not promised


def _run_one(session: Session, check: str) -> CheckResult:
    """One check; the probe's own failure on it is an error result, never a crash."""
    if session.unreachable is not None:
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(f"not sent: the interface did not answer ({session.unreachable})",),
        )
    try:
        return _RUNNERS[check](session)
    except NotCheckedError as exc:
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(str(exc),),
        )
    except Exception as exc:  # the promise: one odd answer never ends the probe
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(f"the probe failed on this check: {type(exc).__name__}: {capped(str(exc))}",),
        )
