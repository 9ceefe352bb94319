"""What a probe found: the report types, and the report as text.

`ProbeReport` holds one `InterfaceResult` per interface of the card, and each of those one
`CheckResult` per check: what the spec `Expected` beside what was `Observed`. These types
know nothing of how the answers were obtained (`a2a_client_errors.probe._wire`).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors.types import (
    A2A_DOMAIN,
    DEDUPLICATE_EXTENSION,
    DedupeParams,
    WireShape,
    escape,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "BINDINGS",
    "SCHEMA",
    "AgentSummary",
    "CheckResult",
    "CheckStatus",
    "Expected",
    "InterfaceResult",
    "Observed",
    "ProbeReport",
]

SCHEMA: Final = "a2a-errors-probe/1"
"""The ``schema`` value of the JSON report; it changes only when the schema does."""

JSONRPC: Final = "jsonrpc"
HTTP_JSON: Final = "http+json"
GRPC: Final = "grpc"
BINDINGS: Final[tuple[str, ...]] = (JSONRPC, HTTP_JSON, GRPC)
"""The bindings the probe speaks, as ``bindings=`` and ``--binding`` name them."""

_MAX_NOTE: Final = 200


class CheckStatus(str, enum.Enum):
    """How one check ended.

    Attributes:
        PASSED: the error came back as the spec says, details included.
        FAILED: something else came back (the notes say what, and what was lost).
        SKIPPED: the probe could not trigger the error deterministically (the notes say why);
            nothing was judged.
        ERROR: the request got no answer to judge (timeout, credentials refused), or the
            probe itself failed on it.
        INCONCLUSIVE: only a hop answered, however often the check was tried: a 429, 502,
            503 or 504 with no A2A body, a bare gRPC UNAVAILABLE, or no answer at all
            (connection refused). Nothing conclusive reached the agent: nothing was judged.

    """

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Expected:
    """What the spec says should come back.

    Attributes:
        reason: the ErrorInfo reason, or None when the spec names none (standard JSON-RPC
            codes).
        jsonrpc_code: the JSON-RPC ``error.code`` (JSON-RPC binding only).
        http_status: the HTTP statuses accepted (HTTP+JSON only; both tables unless strict).
        grpc_status: the gRPC status names accepted (gRPC, and the HTTP+JSON body's
            ``error.status``).
        error_info: whether a ``google.rpc.ErrorInfo`` with domain ``a2a-protocol.org`` must
            come with it.

    """

    reason: str | None
    jsonrpc_code: int | None = None
    http_status: tuple[int, ...] = ()
    grpc_status: tuple[str, ...] = ()
    error_info: bool = False

    @property
    def domain(self) -> str | None:
        """The ErrorInfo domain expected (``a2a-protocol.org``), when ErrorInfo is."""
        return A2A_DOMAIN if self.error_info else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "reason": self.reason,
            "domain": self.domain,
            "jsonrpc_code": self.jsonrpc_code,
            "http_status": list(self.http_status),
            "grpc_status": list(self.grpc_status),
            "error_info": self.error_info,
        }

    def text(self) -> str:
        """The codes in a short human form: ``404 NOT_FOUND``, ``400|409 FAILED_PRECONDITION``."""
        parts = []
        if self.jsonrpc_code is not None:
            parts.append(str(self.jsonrpc_code))
        if self.http_status:
            parts.append("|".join(str(s) for s in self.http_status))
        if self.grpc_status:
            parts.append("|".join(self.grpc_status))
        return " ".join(parts) or "-"


@dataclass(frozen=True, slots=True)
class Observed:
    """What came back, read with `normalize`. Peer text is kept as sent: escape it to print.

    Attributes:
        outcome: ``"error"`` (a call error), ``"success"`` (a result), or ``"no_answer"``
            (transport failure).
        reason: the reason `normalize` found (from ErrorInfo, else from the code or status).
        source: which signal named it (`Source` value), for an error.
        wire: the shape the error came in (`WireShape` value), for an error.
        jsonrpc_code: the JSON-RPC code, if any.
        http_status: the HTTP status, if any.
        grpc_status: the gRPC status name (or the HTTP+JSON body's ``error.status``), if any.
        error_info_reason: the reason of the ErrorInfo in the details, as sent, if any.
        domain: the domain of that ErrorInfo, as sent, if any.
        content_type: the HTTP ``Content-Type``, if any.
        message: the peer's error message, or a summary of the result (``a task in
            TASK_STATE_COMPLETED``).
        hops: what the answer says about who answered: ``Via``, ``Server`` and the like.
        delivery: what reached the agent (`Delivery` value: ``not_sent``, ``not_processed``,
            ``unknown``), for an error.

    """

    outcome: str
    reason: str | None = None
    source: str | None = None
    wire: str | None = None
    jsonrpc_code: int | None = None
    http_status: int | None = None
    grpc_status: str | None = None
    error_info_reason: str | None = None
    domain: str | None = None
    content_type: str | None = None
    message: str = ""
    hops: Mapping[str, str] = field(default_factory=dict)
    delivery: str | None = None

    @property
    def error_info(self) -> bool:
        """Whether a ``google.rpc.ErrorInfo`` came with the error (any domain)."""
        return self.error_info_reason is not None or self.domain is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "source": self.source,
            "wire": self.wire,
            "jsonrpc_code": self.jsonrpc_code,
            "http_status": self.http_status,
            "grpc_status": self.grpc_status,
            "error_info": self.error_info,
            "error_info_reason": self.error_info_reason,
            "domain": self.domain,
            "content_type": self.content_type,
            "message": self.message,
            "hops": dict(self.hops),
            "delivery": self.delivery,
        }

    def text(self, expected_reason: str | None = None) -> str:
        """The codes in a few words, and the reason unless it is the one expected (unescaped)."""
        if self.outcome == "no_answer":
            return "no answer"
        parts = []
        if self.jsonrpc_code is not None:
            parts.append(str(self.jsonrpc_code))
        if self.http_status is not None and not (
            self.jsonrpc_code is not None and self.http_status == 200
        ):
            parts.append(str(self.http_status))
        if self.grpc_status is not None:
            parts.append(self.grpc_status)
        if self.outcome == "success":
            parts.append("success")
        elif self.reason is not None and self.reason != expected_reason:
            parts.append(self.reason)
        elif self.reason is None and self.wire == WireShape.BARE_STATUS.value:
            parts.append(f"({self.content_type or 'no body'})")
        return " ".join(parts) or "-"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check on one interface.

    Attributes:
        check: the check's name (see `CHECKS`).
        binding: ``jsonrpc``, ``http+json`` or ``grpc``.
        url: the interface's URL, as the card lists it.
        operation: the A2A operation called.
        status: passed, failed, skipped or error.
        expected: what the spec says should come back (None when skipped before judging).
        observed: what came back (None when nothing was sent).
        table: which spec table the status follows: ``"1.0.1"``, ``"1.0.0"``, ``"both"`` (the
            tables agree there), ``"neither"``, or None where no table applies (JSON-RPC
            codes, standard errors, no error).
        details_survived: whether the ErrorInfo (domain ``a2a-protocol.org``) arrived, when
            one is expected; None otherwise.
        notes: what went wrong, what was lost, why it was skipped (peer text unescaped).
        advisory: whether the check judges something the spec makes optional (`CheckSpec`):
            its failure or error is reported, but never makes the exit status 1.

    """

    check: str
    binding: str
    url: str
    operation: str
    status: CheckStatus
    expected: Expected | None = None
    observed: Observed | None = None
    table: str | None = None
    details_survived: bool | None = None
    notes: tuple[str, ...] = ()
    advisory: bool = False

    @property
    def passed(self) -> bool:
        """Whether the check passed."""
        return self.status is CheckStatus.PASSED

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "check": self.check,
            "binding": self.binding,
            "url": self.url,
            "operation": self.operation,
            "status": self.status.value,
            "expected": None if self.expected is None else self.expected.to_dict(),
            "observed": None if self.observed is None else self.observed.to_dict(),
            "table": self.table,
            "details_survived": self.details_survived,
            "notes": list(self.notes),
            "advisory": self.advisory,
        }


@dataclass(frozen=True, slots=True)
class InterfaceResult:
    """One interface of the card, and whether the probe spoke to it.

    Attributes:
        binding: ``jsonrpc``, ``http+json``, ``grpc``, or the card's name for another binding.
        url: the URL the card lists.
        protocol_version: the card's ``protocolVersion`` for it (sent as ``A2A-Version``).
        tenant: the card's ``tenant`` for it, copied into every request.
        probed: whether checks ran on it.
        note: why it was not probed, or how it was reached.

    """

    binding: str
    url: str
    protocol_version: str | None
    tenant: str | None
    probed: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "binding": self.binding,
            "url": self.url,
            "protocol_version": self.protocol_version,
            "tenant": self.tenant,
            "probed": self.probed,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class AgentSummary:
    """What the card says that decides which errors can be triggered, and what it promises.

    Attributes:
        name: the agent's name.
        streaming: ``capabilities.streaming``.
        push_notifications: ``capabilities.pushNotifications``.
        extended_agent_card: whether the card declares an extended card.
        required_extensions: the URIs of the extensions the card marks required.
        deduplicate: the deduplication the card advertises (the ``DEDUPLICATE_EXTENSION``
            extension's params), or None.
    """

    name: str | None
    streaming: bool
    push_notifications: bool
    extended_agent_card: bool
    required_extensions: tuple[str, ...]
    deduplicate: DedupeParams | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        dedupe = self.deduplicate
        return {
            "name": self.name,
            "streaming": self.streaming,
            "push_notifications": self.push_notifications,
            "extended_agent_card": self.extended_agent_card,
            "required_extensions": list(self.required_extensions),
            "deduplicate": None
            if dedupe is None
            else {
                "extension": DEDUPLICATE_EXTENSION,
                "ttl": dedupe.ttl,
                "per_caller": dedupe.per_caller,
            },
        }


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """The outcome of a probe: every check on every interface, and why any was skipped.

    Attributes:
        url: the URL given.
        card_url: where the card was read (None when it could not be read).
        agent: what the card says, when it was read.
        interfaces: every interface the card lists.
        checks: every check on every probed interface, in `CHECKS` order.
        error: why the probe could not run (card unreadable, nothing to probe), or None.
        headers_sent: the names of the headers given (never their values).
        strict_table: the spec table statuses had to follow (None: either).

    """

    url: str
    card_url: str | None = None
    agent: AgentSummary | None = None
    interfaces: tuple[InterfaceResult, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    error: str | None = None
    headers_sent: tuple[str, ...] = ()
    strict_table: str | None = None

    def count(self, status: CheckStatus, *, advisory: bool | None = None) -> int:
        """How many checks ended in ``status``.

        ``advisory=True`` counts the advisory checks only, ``False`` the others only.
        """
        return sum(
            1
            for check in self.checks
            if check.status is status and (advisory is None or check.advisory is advisory)
        )

    @property
    def ok(self) -> bool:
        """Whether the probe ran, a check was judged, and no check that counts failed or erred."""
        return self.exit_status == 0

    @property
    def exit_status(self) -> int:
        """0 conformant; 1 a check failed or erred; 2 the probe could not run; 3 inconclusive.

        An advisory check (`CheckResult.advisory`) never makes it 1: its failure is reported,
        and counts as a check that ran. "Could not run" covers a card that cannot be read, and
        a probe where no check was judged (every check skipped, or only advisory ones erred).
        "Inconclusive": no check failed, but a check that counts got only a hop's answer
        (`CheckStatus.INCONCLUSIVE`): nothing conclusive reached the agent.
        """
        if self.error is not None:
            return 2
        if self.count(CheckStatus.FAILED, advisory=False) or self.count(
            CheckStatus.ERROR, advisory=False
        ):
            return 1
        if self.count(CheckStatus.INCONCLUSIVE, advisory=False):
            return 3
        judged = self.count(CheckStatus.PASSED) + self.count(CheckStatus.FAILED, advisory=True)
        return 0 if judged else 2

    def result(self, check: str, binding: str) -> CheckResult:
        """The result of ``check`` on the (first) interface of ``binding``.

        Raises:
            KeyError: when that check did not run on such an interface.

        """
        for result in self.checks:
            if result.check == check and result.binding == binding:
                return result
        raise KeyError(f"no result for {check!r} on {binding!r}")

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (schema ``a2a-errors-probe/1``)."""
        return {
            "schema": SCHEMA,
            "url": self.url,
            "card_url": self.card_url,
            "ok": self.ok,
            "exit_status": self.exit_status,
            "error": self.error,
            "strict_table": self.strict_table,
            "headers_sent": list(self.headers_sent),
            "agent": None if self.agent is None else self.agent.to_dict(),
            "summary": {status.value: self.count(status) for status in CheckStatus},
            "advisory_summary": {
                status.value: self.count(status, advisory=True) for status in CheckStatus
            },
            "interfaces": [interface.to_dict() for interface in self.interfaces],
            "checks": [check.to_dict() for check in self.checks],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON report as text (ASCII: peer text is escaped by JSON itself)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=True)

    def to_text(self) -> str:
        """The report as a table for humans; peer text is escaped."""
        return _render(self)


def capped(text: str) -> str:
    """``text`` cut to the length of a note in the report."""
    return text if len(text) <= _MAX_NOTE else text[:_MAX_NOTE] + "…"


# --------------------------------------------------------------------------------------------
# The table for humans
# --------------------------------------------------------------------------------------------


def _render(report: ProbeReport) -> str:
    """The report as a table for humans: the peer, its interfaces, the checks, the sum."""
    lines = _head(report)
    if report.interfaces:
        lines += ["", "interfaces", *_columns(_interface_rows(report), indent="  ")]
    if report.checks:
        lines += ["", *_check_lines(report)]
    lines.append("")
    if report.error is not None:
        lines.append(f"the probe could not run: {escape(report.error)}")
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def _head(report: ProbeReport) -> list[str]:
    """The peer probed: its URL and card, the agent, the headers sent, the table held to."""
    lines = [f"a2a-errors probe {escape(report.url)}"]
    if report.card_url:
        lines.append(f"card: {escape(report.card_url)}")
    if report.agent is not None:
        lines.append(_agent_line(report.agent))
    if report.headers_sent:
        names = escape(", ".join(report.headers_sent))
        lines.append(f"headers sent: {names} (values not shown)")
    if report.strict_table:
        lines.append(f"strict table: {report.strict_table}")
    return lines


def _agent_line(agent: AgentSummary) -> str:
    """What the card says of the agent, on one line."""
    caps = [
        f"streaming {'on' if agent.streaming else 'off'}",
        f"push {'on' if agent.push_notifications else 'off'}",
        f"extended card {'declared' if agent.extended_agent_card else 'not declared'}",
    ]
    if agent.required_extensions:
        caps.append("required extensions: " + ", ".join(agent.required_extensions))
    if agent.deduplicate is not None:
        caps.append(f"deduplication advertised (ttl {agent.deduplicate.ttl:g} s)")
    return escape(f"agent: {agent.name or '(no name)'}; " + "; ".join(caps))


def _interface_rows(report: ProbeReport) -> list[list[str]]:
    """The interfaces' rows: binding, URL, protocol version, whether probed (and why not)."""
    return [
        [
            i.binding,
            i.url,
            i.protocol_version or "-",
            ("probed" if i.probed else "not probed") + (f" ({i.note})" if i.note else ""),
        ]
        for i in report.interfaces
    ]


_CHECK_HEADER: Final = (
    "check",
    "binding",
    "result",
    "reason",
    "expected",
    "observed",
    "table",
    "ErrorInfo",
)


def _check_lines(report: ProbeReport) -> list[str]:
    """The checks' table, each check that did not pass followed by its notes."""
    rows = [list(_CHECK_HEADER)]
    notes: list[list[str]] = [[]]
    for result in report.checks:
        rows.append(_check_row(result))
        notes.append(list(result.notes) if result.status is not CheckStatus.PASSED else [])
    lines: list[str] = []
    for line, extra in zip(_columns(rows), notes, strict=True):
        lines.append(line)
        lines += [f"    - {escape(note)}" for note in extra]
    return lines


def _check_row(result: CheckResult) -> list[str]:
    """One check's row: what was expected of the agent and what it answered."""
    wanted = result.expected.reason if result.expected else None
    return [
        result.check,
        result.binding,
        _result_word(result),
        (wanted or "-") if result.expected else "",
        result.expected.text() if result.expected else "",
        result.observed.text(wanted) if result.observed else "",
        "" if result.expected is None else result.table or "-",
        "" if result.expected is None else _details_word(result),
    ]


def _summary(report: ProbeReport) -> str:
    """The last line: the checks counted by their status, and the exit status."""
    counts = {status: report.count(status) for status in CheckStatus}
    advisory = {status: report.count(status, advisory=True) for status in CheckStatus}

    def of_which(status: CheckStatus) -> str:
        return f" ({advisory[status]} advisory)" if advisory[status] else ""

    return (
        f"result: {counts[CheckStatus.PASSED]} checks passed, "
        f"{counts[CheckStatus.FAILED]} failed{of_which(CheckStatus.FAILED)}, "
        f"{counts[CheckStatus.ERROR]} errors{of_which(CheckStatus.ERROR)}, "
        + (
            f"{counts[CheckStatus.INCONCLUSIVE]} inconclusive, "
            if counts[CheckStatus.INCONCLUSIVE]
            else ""
        )
        + f"{counts[CheckStatus.SKIPPED]} skipped (exit status {report.exit_status})"
    )


def _result_word(result: CheckResult) -> str:
    word = {
        CheckStatus.PASSED: "pass",
        CheckStatus.FAILED: "FAIL",
        CheckStatus.SKIPPED: "skip",
        CheckStatus.ERROR: "ERROR",
        CheckStatus.INCONCLUSIVE: "INCONCLUSIVE",
    }[result.status]
    if result.advisory and result.status in (CheckStatus.FAILED, CheckStatus.ERROR):
        return f"{word} (advisory)"
    return word


def _details_word(result: CheckResult) -> str:
    if result.details_survived is None:
        if result.observed is not None and result.observed.error_info:
            return "yes"
        return "-"
    return "yes" if result.details_survived else "LOST"


def _columns(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    escaped = [[escape(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in escaped) for i in range(len(escaped[0]))]
    return [
        indent
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in escaped
    ]
