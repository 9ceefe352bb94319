"""The exceptions a guarded call raises: the `CallFailed` tree, one class per final action.

Exception tree::

    Exception
     └── CallFailed                 a guarded call ended in a decision other than ok (.decision)
          ├── RetryExhausted        action retry, but no more attempts (or none safe)
          │    ├── BudgetExhausted  ... the peer's retry budget refused the retry (fail fast)
          │    ├── DeadlineExceeded ... the next attempt could not start before the deadline
          │    ├── RetryAfterTooLong ... the peer asked to wait longer than the policy allows
          │    │                        (.retry_after: its hint, in seconds)
          │    ├── OutcomeUnknown   ... a message may have made a task, and the look-up
          │    │                        could not tell: nothing was resent
          │    └── PeerUnavailable  ... the peer's circuit breaker is open: nothing was sent
          │                             (.retry_in: seconds until the next probe)
          ├── ReconcileNeeded       action reconcile: read the task (TASK_NOT_FOUND, ...)
          ├── DegradeNeeded         action degrade: the peer lacks a capability
          │    └── AlreadySent      ... a journaled messageId was sent before: nothing sent
          ├── FixRequestNeeded      action fix_request: change the request before resending
          │    └── RequestMismatch  ... a journaled messageId recorded with another body
          ├── ReportNeeded          action report: the peer broke the contract, or unknown
          ├── AuthFailed            action auth: credentials missing or refused
          └── JournalUnavailable    the journal could not record the send: nothing was sent

Each carries the `Decision` that ended the call; ``decision.error`` is the `CallError`
(`a2a_client_errors._errors`), the normalised record of what the peer said.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from a2a_client_errors._policy import Decision, GiveUp
from a2a_client_errors._reasons import Action, Delivery

if TYPE_CHECKING:
    from a2a_client_errors._breaker import BreakerState
    from a2a_client_errors._errors import CallError
    from a2a_client_errors._journal import JournalRecord
    from a2a_client_errors._lookup import SentMessage
    from a2a_client_errors._reasons import Reason
    from a2a_client_errors.hooks import CallRecord

__all__ = [
    "AlreadySent",
    "AuthFailed",
    "BudgetExhausted",
    "CallFailed",
    "DeadlineExceeded",
    "DegradeNeeded",
    "FixRequestNeeded",
    "JournalUnavailable",
    "OutcomeUnknown",
    "PeerUnavailable",
    "ReconcileNeeded",
    "ReportNeeded",
    "RequestMismatch",
    "RetryAfterTooLong",
    "RetryExhausted",
]


class CallFailed(Exception):  # noqa: N818 (the public name the design card fixes)
    """A guarded call ended in a decision other than ``ok``.

    Catch the subclass of the action you handle (`ReconcileNeeded`, `DegradeNeeded`, ...);
    catch `CallFailed` for all of them. The exception that ended the last attempt, if any, is
    the ``__cause__`` (a client library's own, also when the door judged the answer from its
    bytes; `a2a_client_errors._normalize.PeerAnswerError` when the library raised nothing).

    Attributes:
        decision: the `Decision` that ended the call; ``decision.error`` is the `CallError`.
        attempts: how many attempts the call made.
        result: what the last attempt returned (an error response, say), or None when it
            raised.
        maybe_processed: whether any attempt of the call may have been processed by the agent
            (its delivery was unknown), this one included.
        record: the call's `CallRecord` (attempts, delivery, look-up, duration), set by the
            Guard when the call ended; None on a failure made outside a guarded call.

    """

    record: CallRecord | None = None

    def __init__(
        self,
        decision: Decision,
        *,
        attempts: int = 1,
        result: object = None,
        maybe_processed: bool | None = None,
    ) -> None:
        self.decision = decision
        self.attempts = attempts
        self.result = result
        self.maybe_processed = (
            decision.delivery is Delivery.UNKNOWN if maybe_processed is None else maybe_processed
        )
        super().__init__(str(decision))

    @property
    def error(self) -> CallError | None:
        """The call error behind the decision."""
        return self.decision.error

    @property
    def reason(self) -> Reason | str | None:
        """The reason of the decision (canonical, or as the peer sent it)."""
        return self.decision.reason


class RetryExhausted(CallFailed):
    """The failure was transient, but the call will not be sent again.

    Every attempt it was allowed failed, or a resend would have been unsafe: the decision's
    ``give_up`` says which (``attempts``, ``not_replayable``, ``no_message_id``,
    ``stream_started``).
    """


class BudgetExhausted(RetryExhausted):
    """The peer's retry budget refused the retry: the call failed fast, without sleeping."""


class DeadlineExceeded(RetryExhausted):
    """The next attempt could not have started before the call's deadline."""


class RetryAfterTooLong(RetryExhausted):
    """The peer asked to wait longer than the policy allows: the call gave up, without sleeping.

    Its hint (``Retry-After``, ``retry-after-ms``, ``RetryInfo``, ``grpc-retry-pushback-ms``)
    was past ``Policy.max_retry_after``; ``decision.give_up`` is ``hint_too_long``. That holds
    with or without a deadline: a hint within the cap that would pass the deadline is
    `DeadlineExceeded` instead.
    """

    @property
    def retry_after(self) -> float | None:
        """The peer's hint, in seconds (``inf``: a gRPC pushback that says not to retry)."""
        return self.decision.retry_after


class OutcomeUnknown(RetryExhausted):
    """A message may have made a task, and it could not be found out: nothing was resent.

    The attempt's answer was lost (or its delivery is otherwise unknown), the peer is not
    known to deduplicate, and the look-up for the task it may have made could not conclude
    (ListTasks refused, unsupported or failing, no time left, too many tasks to search). A
    blind resend could make a second task, so the orchestrator decides, with what it needs to
    look again itself.

    Attributes:
        sent: the message's identity (messageId, contextId, taskId, when it was sent), if known.
        why: what stood in the way of the look-up, for humans.
        journal_record: the send's record, under a Guard with a journal (left open: the next
            sender, or `Guard.recover`, looks it up again); None without one.

    """

    journal_record: JournalRecord | None = None

    def __init__(
        self,
        decision: Decision,
        *,
        attempts: int = 1,
        result: object = None,
        maybe_processed: bool | None = True,
        sent: SentMessage | None = None,
        why: str = "",
    ) -> None:
        super().__init__(
            decision, attempts=attempts, result=result, maybe_processed=maybe_processed
        )
        self.sent = sent
        self.why = why

    @property
    def message_id(self) -> str | None:
        """The messageId of the message whose outcome is unknown."""
        return None if self.sent is None else self.sent.message_id

    @property
    def context_id(self) -> str | None:
        """Its contextId, if it named one."""
        return None if self.sent is None else self.sent.context_id

    @property
    def task_id(self) -> str | None:
        """Its taskId, if it was a follow-up of a task."""
        return None if self.sent is None else self.sent.task_id


class PeerUnavailable(RetryExhausted):
    """The peer's circuit breaker is open (or its one probe is in flight): nothing was sent.

    The call failed fast, without sleeping. Earlier attempts of the same call, if any, were
    sent (``attempts``, ``maybe_processed``); the refused one was not.

    Attributes:
        peer: the peer's key.
        state: the breaker's state (`BreakerState`: ``open``, or ``half_open`` while the
            probe of another call is in flight).
        retry_in: seconds until the next probe may go (0.0 while a probe is in flight).

    """

    def __init__(
        self,
        decision: Decision,
        *,
        attempts: int = 0,
        result: object = None,
        maybe_processed: bool | None = False,
        peer: str = "default",
        state: BreakerState | None = None,
        retry_in: float = 0.0,
    ) -> None:
        super().__init__(
            decision, attempts=attempts, result=result, maybe_processed=maybe_processed
        )
        self.peer = peer
        self.state = state
        self.retry_in = retry_in


class ReconcileNeeded(CallFailed):
    """The client's view of the task is stale (TASK_NOT_FOUND, TASK_NOT_CANCELABLE, ...).

    Attributes:
        task: the task as it is now, when it was read again (a TASK_GENERATION_MISMATCH
            handled by the guarded a2a-sdk client), else None.

    """

    task: object = None


class DegradeNeeded(CallFailed):
    """The peer lacks a capability (streaming, push, extended card): fall back."""


class FixRequestNeeded(CallFailed):
    """The request must change before it is sent again (version, extension, parameters)."""


class ReportNeeded(CallFailed):
    """The peer broke the contract, or sent a reason nobody knows: surface it."""


class AuthFailed(CallFailed):
    """Credentials are missing or refused; a refresh, if any, did not help."""


_STATE_TASK: Final = "task"


class JournalUnavailable(CallFailed):
    """The journal could not record the send (or read its record): nothing was sent.

    The store's `JournalError` is the ``__cause__``. Never a send without its record.
    """

    def __init__(self, operation: str | None, why: str) -> None:
        super().__init__(
            Decision(Action.RETRY, operation=operation, give_up=GiveUp.JOURNAL),
            attempts=0,
            maybe_processed=False,
        )
        self.why = why

    def __str__(self) -> str:
        return f"the journal could not record the send, so nothing was sent: {self.why}"


class RequestMismatch(FixRequestNeeded):
    """The messageId has a record of another body: refused before anything was sent.

    Attributes:
        journal_record: the record that stands.

    """

    def __init__(self, operation: str | None, record: JournalRecord) -> None:
        super().__init__(
            Decision(Action.FIX_REQUEST, operation=operation), attempts=0, maybe_processed=False
        )
        self.journal_record = record

    def __str__(self) -> str:
        return (
            f"messageId {self.journal_record.message_id!r} was recorded with another request "
            "body: send it with a new messageId, or the same body"
        )


class AlreadySent(ReconcileNeeded):
    """The messageId was sent before, and what it made cannot be handed back here.

    Its record was closed with a Message (which leaves nothing to read back), or with a
    task this door cannot read (`Guard.call` without a look-up): ``journal_record.made``
    names it. Nothing was sent again.

    Attributes:
        journal_record: the record.

    """

    def __init__(self, operation: str | None, record: JournalRecord) -> None:
        super().__init__(
            Decision(Action.RECONCILE, operation=operation), attempts=0, maybe_processed=True
        )
        self.journal_record = record

    def __str__(self) -> str:
        record = self.journal_record
        if record.state == _STATE_TASK:
            return f"messageId {record.message_id!r} was sent before: it made task {record.made!r}"
        return f"messageId {record.message_id!r} was sent before and answered with a message"
