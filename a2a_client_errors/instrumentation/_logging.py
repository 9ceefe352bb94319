r"""One log line per decision, with the standard `logging` module.

`LoggingHook` is a `Hook`: pass it to ``Guard(hooks=[...])``. Each line is at the level its
action deserves, so that an operator's ERROR view shows only what needs a person:

======================================================  ===========  =========================
decision                                                level        why
======================================================  ===========  =========================
retry scheduled                                         INFO         the Guard handles it
retries spent (attempts, deadline, unsafe to resend)    WARNING      the call failed
retry refused by the retry budget                       WARNING      the peer is struggling
reconcile (TASK_NOT_CANCELABLE, TASK_NOT_FOUND)         INFO         a race, not an error
degrade (the peer lacks a capability)                   INFO         a fallback is planned
fix_request (version, extension, parameters)            WARNING      the request must change
auth (401/403, refused credentials)                     WARNING      credentials to fix
report (INVALID_AGENT_RESPONSE, unknown reasons)        ERROR        the peer broke the contract
a task came back FAILED or REJECTED                     INFO         a result, not an error
a task came back in any other final state               DEBUG
a shared retry budget fell back to a local bucket       WARNING      the fleet budget is split
a shared retry budget is shared again                   INFO         recovered
a peer's circuit breaker opened                         WARNING      the peer is down
... half-open (a probe may go)                          DEBUG
... closed again (a probe was answered)                 INFO         recovered
a call an open breaker failed fast (PeerUnavailable)    DEBUG        counted, one per call
a send that may have been processed: its task found     INFO         the look-up answered
... absent by a listing contract (resent, or not)       INFO         the caller's word
... not found by the end (OutcomeUnknown)               WARNING      a task may exist
a call moved to the agent's next interface (not sent)   WARNING      an endpoint is down
... (the interface's breaker is open)                   DEBUG        counted, one per call
a journaled send waited for, taken over, replayed       INFO         another sender's send
... left open (its outcome unknown), its body mismatched WARNING     to recover, or to fix
... the journal could not be written                    ERROR        nothing was sent
... recorded, settled, recovered                        DEBUG        every send has them
ok                                                      (no line)
======================================================  ===========  =========================

``levels=`` changes any of them. Every record carries structured extras for JSON formatters:
``reason``, ``action``, ``operation``, ``peer``, ``attempt``, ``delay``, ``source``,
``give_up``, ``elapsed``, ``peer_message`` (and, for task outcomes, ``state``, ``skill``,
``task_id``; for unknown outcomes, ``resolution``, ``message_id``, ``why``; for failovers,
``to``, ``why``; for the journal, ``event``, ``message_id``, ``state``, ``why``).

What never reaches a record: request bodies, headers, credentials (a peer URL loses its user
info, query and fragment), details and metadata the peer sent. The peer's message is for
humans: it is rendered with its control and bidi characters escaped (``\x1b``, ``\n``) and
capped in length, and never parsed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors._breaker import BreakerState
from a2a_client_errors._errors import escape
from a2a_client_errors._policy import GiveUp
from a2a_client_errors._reasons import Action
from a2a_client_errors._retry import BudgetState
from a2a_client_errors.hooks import Hook, first_time
from a2a_client_errors.instrumentation._labels import safe_peer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from a2a_client_errors._breaker import BreakerTransition
    from a2a_client_errors._policy import Decision
    from a2a_client_errors._retry import BudgetFallback
    from a2a_client_errors.hooks import (
        FailoverEvent,
        GuardEvent,
        JournalEvent,
        TaskOutcomeEvent,
        UnknownOutcomeEvent,
    )

__all__ = ["DEFAULT_LEVELS", "LoggingHook"]

DEFAULT_LEVELS: Final[Mapping[str, int]] = {
    "retry": logging.INFO,
    "retries_spent": logging.WARNING,
    "budget_exhausted": logging.WARNING,
    "reconcile": logging.INFO,
    "degrade": logging.INFO,
    "fix_request": logging.WARNING,
    "auth": logging.WARNING,
    "report": logging.ERROR,
    "task_failed": logging.INFO,
    "task": logging.DEBUG,
    "budget_fallback": logging.WARNING,
    "budget_recovered": logging.INFO,
    "outcome_found": logging.INFO,
    "outcome_resent": logging.INFO,
    "outcome_unresolved": logging.WARNING,
    "breaker_open": logging.WARNING,
    "breaker_half_open": logging.DEBUG,
    "breaker_closed": logging.INFO,
    "peer_unavailable": logging.DEBUG,
    "failover": logging.WARNING,
    "failover_breaker_open": logging.DEBUG,
    "journal": logging.INFO,
    "journal_open": logging.WARNING,
    "journal_failed": logging.ERROR,
    "journal_step": logging.DEBUG,
}
"""The level of each kind of line (see the module's table); ``LoggingHook(levels=...)``
overrides any of them."""


_JOURNAL_LEVELS: Final[Mapping[str, str]] = {
    "waited": "journal",
    "took_over": "journal",
    "replayed": "journal",
    "released": "journal_open",
    "mismatch": "journal_open",
    "failed": "journal_failed",
}


def _render(text: str, limit: int) -> str:
    """Peer text for a log line: escaped, then capped (the cut is marked)."""
    rendered = escape(text)
    if len(rendered) <= limit:
        return rendered
    return f"{rendered[:limit]}… ({len(rendered) - limit} more)"


class LoggingHook(Hook):
    """Log each decision of a Guard once, at a level that fits its action (see the table).

    Args:
        logger: the logger (default ``logging.getLogger("a2a_client_errors.decisions")``).
        levels: levels to change, by kind of line (keys of `DEFAULT_LEVELS`).
        max_message: the peer's message is cut after this many characters (escaped).

    Example:
        >>> import logging
        >>> from a2a_client_errors import Guard
        >>> from a2a_client_errors.instrumentation import LoggingHook
        >>> guard = Guard(hooks=[LoggingHook(levels={"retry": logging.DEBUG})])

    """

    def __init__(
        self,
        *,
        logger: logging.Logger | None = None,
        levels: Mapping[str, int] | None = None,
        max_message: int = 200,
    ) -> None:
        unknown = set(levels or ()) - set(DEFAULT_LEVELS)
        if unknown:
            msg = f"unknown kinds of line: {sorted(unknown)}; known: {sorted(DEFAULT_LEVELS)}"
            raise ValueError(msg)
        if max_message < 1:
            msg = "max_message must be at least 1"
            raise ValueError(msg)
        self.logger = logger or logging.getLogger("a2a_client_errors.decisions")
        self.levels: Mapping[str, int] = {**DEFAULT_LEVELS, **(levels or {})}
        self.max_message = max_message

    def _log(self, kind: str, event: GuardEvent, what: str) -> None:
        level = self.levels[kind]
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        decision = event.decision
        error = decision.error
        reason = None if decision.reason is None else escape(str(decision.reason))
        source = None if error is None else error.source.value
        message = "" if error is None or not error.message else error.message
        peer_message = _render(message, self.max_message) if message else None
        operation = None if event.operation is None else escape(event.operation)
        peer = safe_peer(event.peer)
        extra: dict[str, Any] = {
            "reason": reason,
            "action": decision.action.value,
            "operation": operation,
            "peer": peer,
            "attempt": event.attempt,
            "delay": decision.delay,
            "source": source,
            "give_up": None if decision.give_up is None else decision.give_up.value,
            "elapsed": event.elapsed,
            "peer_message": peer_message,
        }
        logger.log(
            level,
            "%s to %s: %s (%s, source %s, attempt %d)%s",
            operation or "call",
            peer,
            what,
            reason or _no_reason(decision),
            source,
            event.attempt,
            f": {peer_message}" if peer_message else "",
            extra=extra,
        )

    def on_retry(self, event: GuardEvent) -> None:
        """A retry was scheduled: INFO."""
        self._log("retry", event, f"retry in {event.decision.delay or 0.0:.3f}s")

    def on_give_up(self, event: GuardEvent) -> None:
        """The call ended in a decision other than ok: the level of its action."""
        decision = event.decision
        if decision.action is Action.RETRY:
            if decision.give_up is GiveUp.BUDGET:
                self._log("budget_exhausted", event, "retry refused by the retry budget")
                return
            if decision.give_up is GiveUp.PEER_UNAVAILABLE:
                wait = decision.retry_after or 0.0
                self._log("peer_unavailable", event, f"breaker open, next probe in {wait:.1f}s")
                return
            why = decision.give_up.value if decision.give_up is not None else "attempts"
            self._log("retries_spent", event, f"gave up retrying ({why})")
            return
        self._log(decision.action.value, event, decision.action.value)

    def on_budget_fallback(self, event: BudgetFallback) -> None:
        """A shared budget fell back to local (WARNING), or is shared again (INFO)."""
        local = event.state is BudgetState.LOCAL
        level = self.levels["budget_fallback" if local else "budget_recovered"]
        if not self.logger.isEnabledFor(level):
            return
        peer = safe_peer(event.peer)
        cause = None if event.cause is None else _render(event.cause, 64)
        if local:
            meanwhile = "a local bucket decides" if event.fail_open else "no retry is granted"
            what = f"the shared retry budget is unreachable ({cause}): {meanwhile}"
        else:
            what = "the shared retry budget answers again"
        self.logger.log(
            level,
            "retry budget of %s: %s",
            peer,
            what,
            extra={
                "peer": peer,
                "budget_state": event.state.value,
                "cause": cause,
                "fail_open": event.fail_open,
                "tokens": event.tokens,
            },
        )

    def on_breaker(self, event: BreakerTransition) -> None:
        """A breaker opened (WARNING), is half-open (DEBUG) or closed again (INFO).

        Logged once per logger, however many Guards and hooks share the breaker.
        """
        level = self.levels[f"breaker_{event.new.value}"]
        if not self.logger.isEnabledFor(level) or not first_time(self.logger, event):
            return
        peer = safe_peer(event.peer)
        if event.new is BreakerState.OPEN:
            what = f"opened ({event.cause}), next probe in {event.retry_in:.1f}s"
        elif event.new is BreakerState.HALF_OPEN:
            what = "half-open: one probe may go"
        else:
            what = f"closed ({event.cause})"
        self.logger.log(
            level,
            "circuit breaker of %s: %s",
            peer,
            what,
            extra={
                "peer": peer,
                "breaker_state": event.new.value,
                "previous_state": event.old.value,
                "cause": event.cause,
                "retry_in": event.retry_in,
                "failure_ratio": event.failure_ratio,
            },
        )

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """A send that may have been processed: how it was made known (INFO; WARNING unresolved).

        Names the messageId (an identifier, never the message's content) so that an operator
        can find the task; ``unresolved`` says what stood in the way of the look-up.
        """
        resolution = event.resolution.value
        kind = {
            "found": "outcome_found",
            "unresolved": "outcome_unresolved",
        }.get(resolution, "outcome_resent")
        level = self.levels[kind]
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        peer = safe_peer(event.peer)
        operation = None if event.operation is None else escape(event.operation)
        sent = event.sent
        message_id = None if sent is None else _render(sent.message_id, 64)
        what = _RESOLVED[resolution]
        if event.why:
            what += f" ({event.why})"
        logger.log(
            level,
            "%s to %s: attempt %d may have been processed; %s (message %s)",
            operation or "call",
            peer,
            event.attempt,
            what,
            message_id,
            extra={
                "operation": operation,
                "peer": peer,
                "attempt": event.attempt,
                "resolution": resolution,
                "message_id": message_id,
                "why": event.why or None,
                "elapsed": event.elapsed,
            },
        )

    def on_failover(self, event: FailoverEvent) -> None:
        """A call moved to the agent's next interface: WARNING (DEBUG when a breaker sent it)."""
        why = event.why
        level = self.levels["failover" if why == "not_sent" else "failover_breaker_open"]
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        peer, to = safe_peer(event.peer), safe_peer(event.to)
        operation = None if event.operation is None else escape(event.operation)
        if why == "not_sent":
            what = f"not reached ({_no_reason(event.decision)}, nothing sent)"
        else:
            what = "its breaker is open (nothing sent)"
        logger.log(
            level,
            "%s to %s: %s; sent over %s",
            operation or "call",
            peer,
            what,
            to,
            extra={"operation": operation, "peer": peer, "to": to, "why": why},
        )

    def on_journal(self, event: JournalEvent) -> None:
        """A step of a journaled send (see the module's table for its level)."""
        kind = event.kind
        level = self.levels[_JOURNAL_LEVELS.get(kind, "journal_step")]
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        peer = safe_peer(event.peer)
        message_id = _render(event.message_id, 128)
        why = _render(event.why, 200) if event.why else ""
        logger.log(
            level,
            "journal %s: messageId %s to %s%s",
            kind,
            message_id,
            peer,
            f" ({why})" if why else "",
            extra={
                "event": kind,
                "message_id": message_id,
                "peer": peer,
                "state": event.state,
                "why": why,
            },
        )

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """A task came back: FAILED or REJECTED at INFO (a result), others at DEBUG."""
        outcome = event.outcome
        level = self.levels["task_failed" if outcome.failed else "task"]
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        peer = safe_peer(event.peer)
        skill = None if event.skill is None else _render(event.skill, 64)
        task_id = None if outcome.task_id is None else _render(outcome.task_id, 64)
        operation = None if event.operation is None else escape(event.operation)
        state = escape(outcome.state)
        logger.log(
            level,
            "%s to %s: task %s came back %s (skill %s): a result, not a call error",
            operation or "call",
            peer,
            task_id,
            state,
            skill,
            extra={
                "operation": operation,
                "peer": peer,
                "state": state,
                "skill": skill,
                "task_id": task_id,
            },
        )


_RESOLVED: Final[Mapping[str, str]] = {
    "found": "its task was found and is the answer: nothing resent",
    "resent": "absent by the declared listing contract: the same message sent again",
    "not_found": "absent by the declared listing contract: not resent, the call ended first",
    "unresolved": "not found by the end of the look-up: nothing resent, the outcome is unknown",
    "deduplicating": "the peer deduplicates the resend: the same message sent again at once",
}


def _no_reason(decision: Decision) -> str:
    error = decision.error
    if error is not None and error.transport is not None:
        return f"transport {error.transport.value}"
    return "no reason"
