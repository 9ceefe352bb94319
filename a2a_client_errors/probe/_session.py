"""One interface under probe: the session a check talks to.

A `Session` sends a check's requests through its interface's wire, and judges each answer
against what the check expects (`a2a_client_errors.probe._expect`), into a `CheckResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a_client_errors import Reason, task_outcome
from a2a_client_errors.probe._expect import (
    SPECS,
    expected_for,
    random_id,
    reason_problems,
    shape_problems,
    table_followed,
    user_message,
)
from a2a_client_errors.probe._report import (
    AgentSummary,
    CheckResult,
    CheckStatus,
    Expected,
    Observed,
    capped,
)
from a2a_client_errors.probe._wire import (
    Answer,
    Deadline,
    GrpcWire,
    HttpWire,
    Interface,
    hops_text,
    observed_of,
    payload_summary,
)
from a2a_client_errors.types import A2A_DOMAIN, ErrorKind, TransportFailure, WireShape

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

# --------------------------------------------------------------------------------------------
# One interface
# --------------------------------------------------------------------------------------------


@dataclass
class Options:
    """What every session of one probe shares: its deadline, its table, the text it sends."""

    deadline: Deadline
    strict_table: str | None
    message: str


class NotCheckedError(Exception):
    """A check that got no answer to judge (the setup it needs was refused or unanswered)."""


class Session:
    """The checks on one interface, and what they share (one terminal task, reachability)."""

    def __init__(
        self,
        interface: Interface,
        wire: HttpWire | GrpcWire,
        agent: AgentSummary,
        options: Options,
    ) -> None:
        self.interface = interface
        self.binding = interface.binding
        self.wire = wire
        self.agent = agent
        self.options = options
        self.version = interface.version or "1.0"
        self.unreachable: str | None = None
        self._terminal: tuple[str | None, str] | NotCheckedError | None = None

    # -- exchanges -------------------------------------------------------------------------

    def send(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str | None = None,
        extensions: bool = True,
        **raw: Any,
    ) -> Answer:
        """One request, with the interface's version and the required extensions."""
        answer = self.wire.call(
            operation,
            params,
            version=version or self.version,
            extensions=self.agent.required_extensions if extensions else (),
            **raw,
        )
        error = answer.error
        if error is not None and (
            error.transport is TransportFailure.CONNECT
            or (error.wire is WireShape.GRPC and error.grpc_status == "UNAVAILABLE")
        ):
            self.unreachable = f"{error.transport or error.grpc_status}: {capped(error.message)}"
        return answer

    def terminal_task(self) -> tuple[str | None, str]:
        """A task of the agent's in a terminal state (its id), or why there is none."""
        if self._terminal is None:
            try:
                self._terminal = self._new_terminal_task()
            except NotCheckedError as exc:
                self._terminal = exc
        if isinstance(self._terminal, NotCheckedError):
            raise self._terminal
        return self._terminal

    def _new_terminal_task(self) -> tuple[str | None, str]:
        answer = self.send("SendMessage", {"message": user_message(self.options.message)})
        if answer.error is not None:
            seen = observed_of(answer)
            if seen.outcome == "no_answer":
                raise NotCheckedError(f"SendMessage got no answer: {capped(seen.message)}")
            if answer.error.kind is ErrorKind.AUTH:
                raise NotCheckedError(
                    f"SendMessage refused: {seen.text()} (pass the credentials the agent needs "
                    "with -H/headers=)"
                )
            return None, f"SendMessage failed ({seen.text()}: {capped(seen.message)})"
        outcome = task_outcome(answer.payload) if isinstance(answer.payload, dict) else None
        if outcome is None or outcome.task_id is None:
            return None, f"the agent answered SendMessage with {payload_summary(answer.payload)}"
        if not outcome.is_terminal:
            return None, (
                f"the task came back in {outcome.state}, not in a terminal state "
                "(the probe does not wait for it, and leaves it as it is)"
            )
        return outcome.task_id, (
            f"task {outcome.task_id}, which came back in {outcome.state} from SendMessage"
        )

    def some_task(self) -> tuple[str, list[str]]:
        """A terminal task's id when the agent gives one; else a random id, said in a note."""
        task_id, why = self.terminal_task()
        if task_id is not None:
            return task_id, [f"on {why}"]
        return random_id(), [
            f"no task of the agent's to name ({why}): a random task id was sent, so the agent "
            "may have looked the task up before the capability"
        ]

    def observe(self, answer: Answer) -> Observed:
        """What came back, as the report shows it."""
        return observed_of(answer)

    def no_result(self, answer: Answer, what: str) -> str | None:
        """Why ``answer`` is not a result (no answer, refused, an error), or None if it is one."""
        if answer.error is None:
            return None
        seen = observed_of(answer)
        if seen.outcome == "no_answer":
            return f"{what} got no answer: {capped(seen.message)}"
        if answer.error.kind is ErrorKind.AUTH:
            return (
                f"{what} refused: {seen.text()} (pass the credentials the agent needs with "
                "-H/headers=)"
            )
        said = f": '{capped(seen.message)}'" if seen.message else ""
        return f"{what} got an error: {seen.text()}{said}"

    # -- results ---------------------------------------------------------------------------

    def concluded(
        self, check: str, status: CheckStatus, seen: Observed, notes: Iterable[str]
    ) -> CheckResult:
        """A check that judged the answers itself (no spec table applies), and why."""
        return CheckResult(
            check,
            self.binding,
            self.interface.url,
            SPECS[check].operation,
            status,
            observed=seen,
            notes=tuple(notes),
        )

    def skip(self, check: str, note: str) -> CheckResult:
        """A check not run, and why."""
        return CheckResult(
            check,
            self.binding,
            self.interface.url,
            SPECS[check].operation,
            CheckStatus.SKIPPED,
            notes=(note,),
        )

    def judge(
        self,
        check: str,
        operation: str,
        expected: Expected,
        answer: Answer,
        *,
        notes: Iterable[str] = (),
        on_success: str = "",
        hints: Mapping[str, str] | None = None,
    ) -> CheckResult:
        """Compare an answer with what the spec expects."""
        seen = observed_of(answer)
        notes = list(notes)
        problems: list[str] = []
        status = CheckStatus.FAILED
        if seen.outcome == "success":
            said = f": {on_success}" if on_success else ""
            problems.append(f"the call succeeded ({seen.message}){said}")
        elif seen.outcome == "no_answer":
            status = CheckStatus.ERROR
            problems.append(f"no answer: {capped(seen.message)}")
        elif answer.error is not None and answer.error.kind is ErrorKind.AUTH:
            status = CheckStatus.ERROR
            problems.append(
                f"refused: {seen.text()} (pass the credentials the agent needs with -H/headers=)"
            )
        else:
            problems += shape_problems(self.binding, expected, seen)
            problems += reason_problems(self.binding, expected, seen)
            if hints and seen.reason is not None and seen.reason in hints:
                problems.append(hints[seen.reason])
            if problems and seen.message:
                problems.append(f"the peer said: '{capped(seen.message)}'")
        if problems and seen.hops and seen.outcome == "error":
            problems.append(f"answered through: {hops_text(seen.hops)}")
        if not problems:
            status = CheckStatus.PASSED
            if seen.error_info_reason and seen.error_info_reason != seen.reason:
                notes.append(f"reason sent as the alias {seen.error_info_reason}")
        survived: bool | None = None
        if expected.error_info and seen.outcome == "error":
            survived = seen.error_info and seen.domain == A2A_DOMAIN
        return CheckResult(
            check,
            self.binding,
            self.interface.url,
            operation,
            status,
            expected,
            seen,
            table_followed(expected.reason, self.binding, seen),
            survived,
            tuple(problems + notes),
        )

    def a2a(self, check: str, reason: Reason, answer: Answer, **kwargs: Any) -> CheckResult:
        """Judge an answer against one of the nine A2A errors."""
        expected = expected_for(reason, self.binding, self.options.strict_table)
        return self.judge(check, SPECS[check].operation, expected, answer, **kwargs)
