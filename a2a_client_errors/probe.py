"""The error-path conformance probe: each A2A error, checked through every hop.

`probe` reads an agent's card, and on each interface the card lists (JSON-RPC, HTTP+JSON,
gRPC) triggers the errors it can trigger deterministically: an unknown task, a cancel of a
terminal task, streaming or a subscription when the card says no streaming, a push config when
the card says no push notifications, the extended card, a missing required extension,
``A2A-Version: 99.0``, and malformed requests. For each one it reads what came back with
`normalize` and compares the JSON-RPC code, the HTTP or gRPC status, the ErrorInfo reason and
domain with the spec's tables (A2A 1.0.1, and 1.0.0 where they differ)::

    report = probe("https://agent.example.com", headers={"Authorization": "Bearer ..."})
    assert report.ok, report.to_text()

What it cannot trigger it skips and says why ("skipped: the card says streaming is
supported"); it never reports a pass it did not see. An error whose reason is right by its code
or status only, without a ``google.rpc.ErrorInfo``, fails: a hop stripped the details, or the
agent does not send them. ``Via`` and ``Server`` headers name the hops that answered.

Where it sends requests:

* the card at the URL given (a card URL, or a base URL whose
  ``/.well-known/agent-card.json`` is read; for a base URL with a path, the origin's well-known
  path is tried when that one is missing);
* the interfaces the card lists on the host of that URL (any port: gRPC usually listens on a
  port of its own). Interfaces on other hosts are reported as skipped, and probed only with
  ``follow_card_hosts=True``: the headers given (credentials) go nowhere else unasked.

Requests with side effects, and only these: ``task_not_cancelable``, ``subscribe_not_supported``
and ``push_not_supported`` send one message (SendMessage, ``message`` text) per interface to get
a terminal task; ``extension_required`` sends one message without the required extension, and
``streaming_not_supported`` one streaming message; ``invalid_params`` sends a message without
its required fields. Leave them out with ``checks=`` when the agent must not see them.

The JSON report (`ProbeReport.to_json`, ``a2a-errors probe --json``) has a stable schema,
``"schema": "a2a-errors-probe/1"``; see the README.
"""

from __future__ import annotations

import enum
import json
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from a2a_client_errors.errors import CallError, ErrorKind, Source, WireShape, escape
from a2a_client_errors.normalize import SSEParser, event_error, normalize
from a2a_client_errors.outcomes import task_outcome
from a2a_client_errors.reasons import (
    A2A_DOMAIN,
    ERROR_INFO_TYPE,
    Reason,
    TransportFailure,
    canonical_reason,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "BINDINGS",
    "CHECKS",
    "DEFAULT_MESSAGE",
    "SCHEMA",
    "AgentSummary",
    "CheckResult",
    "CheckSpec",
    "CheckStatus",
    "Expected",
    "InterfaceResult",
    "Observed",
    "ProbeReport",
    "probe",
]

SCHEMA: Final = "a2a-errors-probe/1"
"""The ``schema`` value of the JSON report; it changes only when the schema does."""

JSONRPC: Final = "jsonrpc"
HTTP_JSON: Final = "http+json"
GRPC: Final = "grpc"
BINDINGS: Final[tuple[str, ...]] = (JSONRPC, HTTP_JSON, GRPC)
"""The bindings the probe speaks, as ``bindings=`` and ``--binding`` name them."""

DEFAULT_MESSAGE: Final = "a2a-errors probe: a test message, please ignore"
"""The text of the messages the probe sends (to get a terminal task, and the like)."""

CARD_PATH: Final = "/.well-known/agent-card.json"
TABLES: Final[tuple[str, ...]] = ("1.0.1", "1.0.0")

_MAX_BODY: Final = 1024 * 1024
_MAX_EVENT_LINES: Final = 10_000
_MAX_NOTE: Final = 200
_PUSH_URL: Final = "https://push.invalid/a2a-errors-probe"
"""A webhook URL that can never be reached (RFC 2606 ``.invalid``)."""
_GRPC_SERVICE: Final = "/lf.a2a.v1.A2AService/"
_STREAMING: Final = frozenset({"SendStreamingMessage", "SubscribeToTask"})
_OWN_HEADERS: Final = frozenset({"a2a-version", "a2a-extensions", "content-type"})
_HOP_HEADERS: Final = ("via", "server", "x-served-by", "x-cache", "cf-ray")
_GRPC_HOP_KEYS: Final = ("via", "server", "x-envoy-upstream-service-time")
_USER_AGENT: Final = ("User-Agent", "a2a-errors-probe")
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE: Final = re.compile(r"[\x20-\x7e\t]*")


class CheckStatus(str, enum.Enum):
    """How one check ended.

    Attributes:
        PASSED: the error came back as the spec says, details included.
        FAILED: something else came back (the notes say what, and what was lost).
        SKIPPED: the probe could not trigger the error deterministically (the notes say why);
            nothing was judged.
        ERROR: the request got no answer to judge (connection refused, timeout, credentials
            refused), or the probe itself failed on it.

    """

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check of the probe: its name, the operation it calls, and what it triggers."""

    name: str
    operation: str
    summary: str


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
)
_SPECS: Final[Mapping[str, CheckSpec]] = {spec.name: spec for spec in CHECKS}


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
    """What the card says that decides which errors can be triggered."""

    name: str | None
    streaming: bool
    push_notifications: bool
    extended_agent_card: bool
    required_extensions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "name": self.name,
            "streaming": self.streaming,
            "push_notifications": self.push_notifications,
            "extended_agent_card": self.extended_agent_card,
            "required_extensions": list(self.required_extensions),
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

    def count(self, status: CheckStatus) -> int:
        """How many checks ended in ``status``."""
        return sum(1 for check in self.checks if check.status is status)

    @property
    def ok(self) -> bool:
        """Whether the probe ran, at least one check passed, and none failed or erred."""
        return self.exit_status == 0

    @property
    def exit_status(self) -> int:
        """0: the checks that ran passed; 1: a check failed or erred; 2: the probe could not run.

        "Could not run" covers a card that cannot be read, and a probe where no check ran.
        """
        if self.error is not None:
            return 2
        if self.count(CheckStatus.FAILED) or self.count(CheckStatus.ERROR):
            return 1
        return 0 if self.count(CheckStatus.PASSED) else 2

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
            "interfaces": [interface.to_dict() for interface in self.interfaces],
            "checks": [check.to_dict() for check in self.checks],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON report as text (ASCII: peer text is escaped by JSON itself)."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=True)

    def to_text(self) -> str:
        """The report as a table for humans; peer text is escaped."""
        return _render(self)


# --------------------------------------------------------------------------------------------
# The card
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Interface:
    binding: str
    url: str
    version: str | None
    tenant: str | None


def _flag(value: object) -> bool:
    return value is True


def _summary_of(card: Mapping[str, Any]) -> AgentSummary:
    caps = card.get("capabilities")
    capabilities: Mapping[str, Any] = caps if isinstance(caps, dict) else {}
    extensions = capabilities.get("extensions")
    required = [
        extension["uri"]
        for extension in (extensions if isinstance(extensions, list) else ())
        if isinstance(extension, dict)
        and extension.get("required") is True
        and isinstance(extension.get("uri"), str)
        and extension["uri"]
    ]
    extended = capabilities.get("extendedAgentCard")
    if extended is None:  # 0.3 put it at the top level
        extended = card.get("supportsAuthenticatedExtendedCard")
    name = card.get("name")
    return AgentSummary(
        name=name if isinstance(name, str) else None,
        streaming=_flag(capabilities.get("streaming")),
        push_notifications=_flag(capabilities.get("pushNotifications")),
        extended_agent_card=_flag(extended),
        required_extensions=tuple(required),
    )


_BINDING_NAMES: Final[Mapping[str, str]] = {
    "JSONRPC": JSONRPC,
    "JSON-RPC": JSONRPC,
    "HTTP+JSON": HTTP_JSON,
    "HTTP_JSON": HTTP_JSON,
    "REST": HTTP_JSON,
    "GRPC": GRPC,
}


def _interfaces_of(card: Mapping[str, Any]) -> list[_Interface]:
    found: list[_Interface] = []
    listed = card.get("supportedInterfaces")
    if isinstance(listed, list):
        for item in listed:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            declared = item.get("protocolBinding")
            declared = declared if isinstance(declared, str) else ""
            version = item.get("protocolVersion")
            tenant = item.get("tenant")
            found.append(
                _Interface(
                    _BINDING_NAMES.get(declared.upper(), declared or "unknown"),
                    item["url"],
                    version if isinstance(version, str) and version else None,
                    tenant if isinstance(tenant, str) and tenant else None,
                )
            )
        return found
    # An A2A 0.3 card: url + preferredTransport (+ additionalInterfaces with transport).
    version = card.get("protocolVersion")
    version = version if isinstance(version, str) and version else "0.3"
    if isinstance(card.get("url"), str):
        preferred = card.get("preferredTransport")
        declared = preferred if isinstance(preferred, str) else "JSONRPC"
        found.append(
            _Interface(_BINDING_NAMES.get(declared.upper(), declared), card["url"], version, None)
        )
    extra = card.get("additionalInterfaces")
    if isinstance(extra, list):
        for item in extra:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                declared = item.get("transport")
                declared = declared if isinstance(declared, str) else "unknown"
                interface = _Interface(
                    _BINDING_NAMES.get(declared.upper(), declared), item["url"], version, None
                )
                if interface not in found:
                    found.append(interface)
    return found


def _host_of(url: str) -> str | None:
    """The host of a URL, or of a gRPC target (``host:port``, ``dns:///host:port``)."""
    text = url.strip()
    if text.startswith("dns:"):
        text = text[len("dns:") :].lstrip("/")
    if "://" not in text:
        text = "//" + text
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def _public(url: str) -> str:
    """The URL without credentials in it, for reports."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# --------------------------------------------------------------------------------------------
# What came back
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Answer:
    """One exchange: the error `normalize` found (None for a result), and the result."""

    error: CallError | None
    payload: object = None
    hops: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    http_status: int | None = None


def _error_info(error: CallError) -> tuple[str | None, str | None] | None:
    """(reason, domain) of the ErrorInfo in the details: the A2A one first, else any."""
    first: tuple[str | None, str | None] | None = None
    for detail in error.raw_details:
        type_url = detail.get("@type")
        if type_url == ERROR_INFO_TYPE or (type_url is None and "reason" in detail):
            reason, domain = detail.get("reason"), detail.get("domain")
            item = (
                reason if isinstance(reason, str) else None,
                domain if isinstance(domain, str) else None,
            )
            if item[1] == A2A_DOMAIN:
                return item
            first = first or item
    return first


def _summary(payload: object) -> str:
    """What a successful answer was, in a few words."""
    outcome = task_outcome(payload) if isinstance(payload, dict) else None
    if outcome is not None:
        return f"a task in {outcome.state}"
    if isinstance(payload, dict):
        if isinstance(payload.get("message"), dict) or "messageId" in payload:
            return "a Message"
        if "supportedInterfaces" in payload or "skills" in payload:
            return "an agent card"
        if "artifactUpdate" in payload:
            return "an artifact update"
        return "a JSON answer"
    if payload is None:
        return "an answer without a body"
    return "an answer"


def _observed(answer: _Answer) -> Observed:
    error = answer.error
    if error is None:
        return Observed(
            "success",
            http_status=answer.http_status,
            content_type=answer.content_type,
            message=_summary(answer.payload),
            hops=answer.hops,
        )
    info = _error_info(error)
    outcome = "no_answer" if _no_answer(error) else "error"
    return Observed(
        outcome,
        reason=None if error.reason is None else str(error.reason),
        source=error.source.value,
        wire=error.wire.value,
        jsonrpc_code=error.jsonrpc_code,
        http_status=error.http_status if error.http_status is not None else answer.http_status,
        grpc_status=error.grpc_status,
        error_info_reason=None if info is None else info[0],
        domain=None if info is None else info[1],
        content_type=answer.content_type,
        message=error.message,
        hops=answer.hops,
    )


def _no_answer(error: CallError) -> bool:
    """A transport failure, or a gRPC channel that never reached a server."""
    if error.wire is WireShape.TRANSPORT:
        return True
    return (
        error.wire is WireShape.GRPC
        and error.grpc_status in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
        and not error.raw_details
    )


def _hops_text(hops: Mapping[str, str]) -> str:
    return "; ".join(f"{name} '{value}'" for name, value in hops.items())


def _capped(text: str) -> str:
    return text if len(text) <= _MAX_NOTE else text[:_MAX_NOTE] + "…"


# --------------------------------------------------------------------------------------------
# Bindings: one exchange each
# --------------------------------------------------------------------------------------------


def _random_id() -> str:
    return f"a2a-errors-probe-{uuid.uuid4()}"


def _user_message(text: str) -> dict[str, Any]:
    return {"messageId": _random_id(), "role": "ROLE_USER", "parts": [{"text": text}]}


def _hops(headers: httpx.Headers) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in _HOP_HEADERS:
        values = headers.get_list(name)
        if values:
            found[name] = _capped(", ".join(values))
    return found


class _HttpWire:
    """JSON-RPC or HTTP+JSON over one httpx client."""

    def __init__(
        self, client: httpx.Client, binding: str, url: str, tenant: str | None, timeout: float
    ) -> None:
        self.client = client
        self.binding = binding
        self.url = url.rstrip("/") if binding == HTTP_JSON else url
        self.tenant = tenant
        self.timeout = timeout

    def call(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str,
        extensions: Sequence[str],
        raw_body: bytes | None = None,
        envelope: Mapping[str, Any] | None = None,
    ) -> _Answer:
        """Send one request; ``raw_body`` or ``envelope`` replace the well-formed body."""
        headers = {"A2A-Version": version}
        if extensions:
            headers["A2A-Extensions"] = ",".join(extensions)
        stream = operation in _STREAMING
        headers["Accept"] = "text/event-stream" if stream else "application/json"
        body: object
        if self.binding == JSONRPC:
            method, url = "POST", self.url
            payload = dict(params)
            if self.tenant:
                payload["tenant"] = self.tenant
            body = envelope or {
                "jsonrpc": "2.0",
                "id": _random_id(),
                "method": operation,
                "params": payload,
            }
        else:
            method, path, body = _rest_route(operation, params)
            prefix = f"/{quote(self.tenant, safe='')}" if self.tenant else ""
            url = self.url + prefix + path
        content: bytes | None = raw_body
        if content is None and body is not None:
            content = json.dumps(body).encode("utf-8")
        if content is not None:
            headers["Content-Type"] = "application/json"
        request = self.client.build_request(method, url, content=content, headers=headers)
        return _exchange(self.client, request, stream=stream, timeout=self.timeout)


def _rest_route(operation: str, params: Mapping[str, Any]) -> tuple[str, str, object]:
    """(method, path, JSON body) of an operation on the HTTP+JSON binding (§11.3)."""
    params = dict(params)
    if operation == "SendMessage":
        return "POST", "/message:send", params
    if operation == "SendStreamingMessage":
        return "POST", "/message:stream", params
    if operation == "GetTask":
        return "GET", f"/tasks/{quote(str(params.get('id', '')), safe='')}", None
    if operation == "CancelTask":
        return "POST", f"/tasks/{quote(str(params.get('id', '')), safe='')}:cancel", None
    if operation == "SubscribeToTask":
        return "POST", f"/tasks/{quote(str(params.get('id', '')), safe='')}:subscribe", None
    if operation == "CreateTaskPushNotificationConfig":
        task_id = quote(str(params.pop("taskId", "")), safe="")
        return "POST", f"/tasks/{task_id}/pushNotificationConfigs", params
    if operation == "GetExtendedAgentCard":
        return "GET", "/extendedAgentCard", None
    raise ValueError(f"no HTTP+JSON route for {operation}")


def _exchange(
    client: httpx.Client, request: httpx.Request, *, stream: bool, timeout: float
) -> _Answer:
    """Send ``request`` and read what came back (a stream up to its first event), capped."""
    try:
        response = client.send(request, stream=True)
    except Exception as exc:  # every transport failure is an observation, never a crash
        return _Answer(normalize(exc) or _transport_error(exc))
    status = response.status_code
    content_type = response.headers.get("content-type")
    hops = _hops(response.headers)
    try:
        if stream and 200 <= status < 300 and (content_type or "").startswith("text/event-stream"):
            return _first_event(response, hops, timeout)
        body = _read_capped(response)
    except Exception as exc:  # the body broke off: a transport failure
        return _Answer(normalize(exc) or _transport_error(exc), hops=hops, http_status=status)
    finally:
        response.close()
    kept = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")
    ]
    full = httpx.Response(status, headers=kept, content=body, request=request)
    error = normalize(full)
    payload: object = None
    if error is None and body:
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "jsonrpc" in payload:
            payload = payload.get("result")
    return _Answer(error, payload, hops, content_type, status)


def _read_capped(response: httpx.Response) -> bytes:
    """The body, read up to the cap and one byte more (so that a caller can tell it was cut)."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > _MAX_BODY:
            break
    return b"".join(chunks)[: _MAX_BODY + 1]


def _first_event(response: httpx.Response, hops: dict[str, str], timeout: float) -> _Answer:
    """Read an event stream up to its first event (bounded in time and size)."""
    deadline = time.monotonic() + timeout
    parser = SSEParser()
    status = response.status_code
    content_type = response.headers.get("content-type")
    event: tuple[str, str] | None = None
    for lines, line in enumerate(response.iter_lines(), 1):
        event = parser.feed(line)
        if event is not None or lines > _MAX_EVENT_LINES or time.monotonic() > deadline:
            break
    else:
        event = parser.end()
    if event is None:
        return _Answer(None, None, hops, content_type, status)
    parsed, error = event_error(*event)
    if error is not None:
        error = replace(error, http_status=status)
        return _Answer(error, None, hops, content_type, status)
    if isinstance(parsed, dict) and "jsonrpc" in parsed:
        parsed = parsed.get("result")
    return _Answer(None, parsed, hops, content_type, status)


def _transport_error(exc: BaseException) -> CallError:
    return CallError(
        ErrorKind.TRANSPORT,
        None,
        Source.TRANSPORT,
        WireShape.TRANSPORT,
        message=str(exc) or type(exc).__name__,
        transport=TransportFailure.UNKNOWN,
    )


_GRPC_MESSAGES: Final[Mapping[str, tuple[str, str]]] = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse"),
    "SendStreamingMessage": ("SendMessageRequest", "StreamResponse"),
    "GetTask": ("GetTaskRequest", "Task"),
    "CancelTask": ("CancelTaskRequest", "Task"),
    "SubscribeToTask": ("SubscribeToTaskRequest", "StreamResponse"),
    "CreateTaskPushNotificationConfig": (
        "TaskPushNotificationConfig",
        "TaskPushNotificationConfig",
    ),
    "GetExtendedAgentCard": ("GetExtendedAgentCardRequest", "AgentCard"),
}


class _GrpcWire:
    """The gRPC binding: generic calls on one channel, status and trailer read as they come."""

    def __init__(
        self,
        channel: Any,
        metadata: Sequence[tuple[str, str]],
        tenant: str | None,
        timeout: float,
    ) -> None:
        import grpc  # noqa: PLC0415 (optional: the grpc extra)
        from a2a.types import a2a_pb2  # noqa: PLC0415 (optional: a2a-sdk's messages)
        from google.protobuf import json_format  # noqa: PLC0415

        self.grpc: Any = grpc
        self.pb2: Any = a2a_pb2
        self.json_format: Any = json_format
        self.channel = channel
        self.metadata = list(metadata)
        self.tenant = tenant
        self.timeout = timeout

    def call(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str,
        extensions: Sequence[str],
    ) -> _Answer:
        """One call; the answer's status and ``grpc-status-details-bin`` read by `normalize`."""
        request_name, response_name = _GRPC_MESSAGES[operation]
        payload = dict(params)
        if self.tenant:
            payload["tenant"] = self.tenant
        request = self.json_format.ParseDict(payload, getattr(self.pb2, request_name)())
        metadata = [*self.metadata, ("a2a-version", version)]
        if extensions:
            metadata.append(("a2a-extensions", ",".join(extensions)))
        path = _GRPC_SERVICE + operation
        serialize = type(request).SerializeToString
        grpc = self.grpc
        try:
            if operation in _STREAMING:
                call = self.channel.unary_stream(path, request_serializer=serialize)(
                    request, timeout=self.timeout, metadata=metadata
                )
                try:
                    first = next(iter(call), None)
                    hops = _grpc_hops(call)
                finally:
                    call.cancel()
                data = first
            else:
                data, call = self.channel.unary_unary(path, request_serializer=serialize).with_call(
                    request, timeout=self.timeout, metadata=metadata
                )
                hops = _grpc_hops(call)
        except grpc.RpcError as exc:
            return _Answer(normalize(exc), hops=_grpc_hops(exc))
        return _Answer(None, self._decode(response_name, data), hops)

    def _decode(self, name: str, data: object) -> object:
        if not isinstance(data, bytes):
            return None
        try:
            message = getattr(self.pb2, name).FromString(data)
            decoded: object = self.json_format.MessageToDict(message)
        except Exception:  # a peer's bytes that are not the message: summarised as such
            return {"undecodable": len(data)}
        return decoded


def _grpc_hops(call: object) -> dict[str, str]:
    found: dict[str, str] = {}
    for method in ("initial_metadata", "trailing_metadata"):
        getter = getattr(call, method, None)
        try:
            items = getter() if callable(getter) else None
        except Exception:  # metadata that cannot be read names no hop
            items = None
        for item in items or ():
            key, value = (item.key, item.value) if hasattr(item, "key") else item
            if key in _GRPC_HOP_KEYS and isinstance(value, str):
                name = "envoy" if key.startswith("x-envoy") else key
                found.setdefault(name, _capped(value if name != "envoy" else "x-envoy-*"))
    return found


# --------------------------------------------------------------------------------------------
# Judging one answer
# --------------------------------------------------------------------------------------------


def _expected(reason: Reason, binding: str, strict: str | None) -> Expected:
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


def _standard(code: int, binding: str) -> Expected:
    if binding == JSONRPC:
        return Expected(None, jsonrpc_code=code)
    if binding == HTTP_JSON:
        return Expected(None, http_status=(400,), grpc_status=("INVALID_ARGUMENT",))
    return Expected(None, grpc_status=("INVALID_ARGUMENT",))


def _table(reason: str | None, binding: str, observed: Observed) -> str | None:
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


def _shape_problems(binding: str, expected: Expected, seen: Observed) -> list[str]:
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


def _reason_problems(binding: str, expected: Expected, seen: Observed) -> list[str]:
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
        return [f"ErrorInfo domain '{_capped(str(seen.domain))}', expected {A2A_DOMAIN!r}"]
    sent = seen.error_info_reason or ""
    if canonical_reason(sent) != Reason(expected.reason):
        return [f"ErrorInfo reason '{_capped(sent)}', expected {expected.reason}"]
    return []


# --------------------------------------------------------------------------------------------
# One interface
# --------------------------------------------------------------------------------------------


@dataclass
class _Options:
    timeout: float
    strict_table: str | None
    message: str


class _NotCheckedError(Exception):
    """A check that got no answer to judge (the setup it needs was refused or unanswered)."""


class _Session:
    """The checks on one interface, and what they share (one terminal task, reachability)."""

    def __init__(
        self,
        interface: _Interface,
        wire: _HttpWire | _GrpcWire,
        agent: AgentSummary,
        options: _Options,
    ) -> None:
        self.interface = interface
        self.binding = interface.binding
        self.wire = wire
        self.agent = agent
        self.options = options
        self.version = interface.version or "1.0"
        self.unreachable: str | None = None
        self._terminal: tuple[str | None, str] | _NotCheckedError | None = None

    # -- exchanges -------------------------------------------------------------------------

    def send(
        self,
        operation: str,
        params: Mapping[str, Any],
        *,
        version: str | None = None,
        extensions: bool = True,
        **raw: Any,
    ) -> _Answer:
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
            self.unreachable = f"{error.transport or error.grpc_status}: {_capped(error.message)}"
        return answer

    def terminal_task(self) -> tuple[str | None, str]:
        """A task of the agent's in a terminal state (its id), or why there is none."""
        if self._terminal is None:
            try:
                self._terminal = self._new_terminal_task()
            except _NotCheckedError as exc:
                self._terminal = exc
        if isinstance(self._terminal, _NotCheckedError):
            raise self._terminal
        return self._terminal

    def _new_terminal_task(self) -> tuple[str | None, str]:
        answer = self.send("SendMessage", {"message": _user_message(self.options.message)})
        if answer.error is not None:
            seen = _observed(answer)
            if seen.outcome == "no_answer":
                raise _NotCheckedError(f"SendMessage got no answer: {_capped(seen.message)}")
            if answer.error.kind is ErrorKind.AUTH:
                raise _NotCheckedError(
                    f"SendMessage refused: {seen.text()} (pass the credentials the agent needs "
                    "with -H/headers=)"
                )
            return None, f"SendMessage failed ({seen.text()}: {_capped(seen.message)})"
        outcome = task_outcome(answer.payload) if isinstance(answer.payload, dict) else None
        if outcome is None or outcome.task_id is None:
            return None, f"the agent answered SendMessage with {_summary(answer.payload)}"
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
        return _random_id(), [
            f"no task of the agent's to name ({why}): a random task id was sent, so the agent "
            "may have looked the task up before the capability"
        ]

    # -- results ---------------------------------------------------------------------------

    def skip(self, check: str, note: str) -> CheckResult:
        """A check not run, and why."""
        return CheckResult(
            check,
            self.binding,
            self.interface.url,
            _SPECS[check].operation,
            CheckStatus.SKIPPED,
            notes=(note,),
        )

    def judge(
        self,
        check: str,
        operation: str,
        expected: Expected,
        answer: _Answer,
        *,
        notes: Iterable[str] = (),
        on_success: str = "",
        hints: Mapping[str, str] | None = None,
    ) -> CheckResult:
        """Compare an answer with what the spec expects."""
        seen = _observed(answer)
        notes = list(notes)
        problems: list[str] = []
        status = CheckStatus.FAILED
        if seen.outcome == "success":
            said = f": {on_success}" if on_success else ""
            problems.append(f"the call succeeded ({seen.message}){said}")
        elif seen.outcome == "no_answer":
            status = CheckStatus.ERROR
            problems.append(f"no answer: {_capped(seen.message)}")
        elif answer.error is not None and answer.error.kind is ErrorKind.AUTH:
            status = CheckStatus.ERROR
            problems.append(
                f"refused: {seen.text()} (pass the credentials the agent needs with -H/headers=)"
            )
        else:
            problems += _shape_problems(self.binding, expected, seen)
            problems += _reason_problems(self.binding, expected, seen)
            if hints and seen.reason is not None and seen.reason in hints:
                problems.append(hints[seen.reason])
            if problems and seen.message:
                problems.append(f"the peer said: '{_capped(seen.message)}'")
        if problems and seen.hops and seen.outcome == "error":
            problems.append(f"answered through: {_hops_text(seen.hops)}")
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
            _table(expected.reason, self.binding, seen),
            survived,
            tuple(problems + notes),
        )

    def a2a(self, check: str, reason: Reason, answer: _Answer, **kwargs: Any) -> CheckResult:
        """Judge an answer against one of the nine A2A errors."""
        expected = _expected(reason, self.binding, self.options.strict_table)
        return self.judge(check, _SPECS[check].operation, expected, answer, **kwargs)


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


def _task_not_found(s: _Session) -> CheckResult:
    answer = s.send("GetTask", {"id": _random_id()})
    return s.a2a("task_not_found", Reason.TASK_NOT_FOUND, answer)


def _task_not_cancelable(s: _Session) -> CheckResult:
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


def _streaming_not_supported(s: _Session) -> CheckResult:
    if s.agent.streaming:
        return s.skip("streaming_not_supported", "skipped: the card says streaming is supported")
    answer = s.send("SendStreamingMessage", {"message": _user_message(s.options.message)})
    return s.a2a(
        "streaming_not_supported",
        Reason.UNSUPPORTED_OPERATION,
        answer,
        on_success="the agent streamed although its card says it does not",
    )


def _subscribe_not_supported(s: _Session) -> CheckResult:
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


def _push_not_supported(s: _Session) -> CheckResult:
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


def _extended_card(s: _Session) -> CheckResult:
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


def _extension_required(s: _Session) -> CheckResult:
    required = s.agent.required_extensions
    if not required:
        return s.skip("extension_required", "skipped: the card declares no required extension")
    answer = s.send("SendMessage", {"message": _user_message(s.options.message)}, extensions=False)
    return s.a2a(
        "extension_required",
        Reason.EXTENSION_SUPPORT_REQUIRED,
        answer,
        notes=[f"required by the card: {', '.join(required)}"],
        on_success="the agent does not enforce the extensions its card marks required",
    )


def _version_not_supported(s: _Session) -> CheckResult:
    answer = s.send("GetTask", {"id": _random_id()}, version="99.0")
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


def _parse_error(s: _Session) -> CheckResult:
    if s.binding == GRPC:
        return s.skip(
            "parse_error", "skipped: gRPC has no JSON to break (the runtime rejects bad bytes)"
        )
    if s.binding == JSONRPC:
        answer = s.send("SendMessage", {}, raw_body=b'{"jsonrpc": "2.0", "method": "SendMessage", ')
        expected = _standard(-32700, JSONRPC)
    else:
        answer = s.send("SendMessage", {}, raw_body=b'{"message": {"messageId": ')
        expected = _standard(0, HTTP_JSON)
    return s.judge("parse_error", "SendMessage", expected, answer)


def _invalid_request(s: _Session) -> CheckResult:
    if s.binding != JSONRPC:
        return s.skip("invalid_request", "skipped: the spec defines no equivalent outside JSON-RPC")
    envelope = {"jsonrpc": "2.0", "id": _random_id(), "params": {"id": _random_id()}}
    answer = s.send("GetTask", {}, envelope=envelope)
    return s.judge("invalid_request", "GetTask", _standard(-32600, JSONRPC), answer)


def _method_not_found(s: _Session) -> CheckResult:
    if s.binding != JSONRPC:
        return s.skip(
            "method_not_found",
            "skipped: the spec defines no equivalent outside JSON-RPC (an unknown route or "
            "method is the transport's own 404 or UNIMPLEMENTED)",
        )
    envelope = {
        "jsonrpc": "2.0",
        "id": _random_id(),
        "method": "A2AErrorsProbeNoSuchMethod",
        "params": {},
    }
    answer = s.send("GetTask", {}, envelope=envelope)
    return s.judge("method_not_found", "-", _standard(-32601, JSONRPC), answer)


def _invalid_params(s: _Session) -> CheckResult:
    answer = s.send("SendMessage", {"message": {"role": "ROLE_USER"}})
    return s.judge(
        "invalid_params",
        "SendMessage",
        _standard(-32602, s.binding),
        answer,
        on_success="the agent took a message without its required messageId and parts",
    )


_RUNNERS: Final[Mapping[str, Callable[[_Session], CheckResult]]] = {
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
}


def _run(session: _Session, check: str) -> CheckResult:
    """One check; the probe's own failure on it is an error result, never a crash."""
    if session.unreachable is not None:
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            _SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(f"not sent: the interface did not answer ({session.unreachable})",),
        )
    try:
        return _RUNNERS[check](session)
    except _NotCheckedError as exc:
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            _SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(str(exc),),
        )
    except Exception as exc:  # the promise: one odd answer never ends the probe
        return CheckResult(
            check,
            session.binding,
            session.interface.url,
            _SPECS[check].operation,
            CheckStatus.ERROR,
            notes=(f"the probe failed on this check: {type(exc).__name__}: {_capped(str(exc))}",),
        )


# --------------------------------------------------------------------------------------------
# The probe
# --------------------------------------------------------------------------------------------


def _card_urls(url: str) -> list[str]:
    parts = urlsplit(url)
    path = parts.path
    if path.endswith(".json") or "/.well-known/" in path:
        return [url]
    base = urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))
    urls = [base + CARD_PATH]
    if path.strip("/"):
        urls.append(urlunsplit((parts.scheme, parts.netloc, CARD_PATH, "", "")))
    return urls


def _fetch(client: httpx.Client, card_url: str) -> tuple[int, httpx.Headers, bytes] | str:
    """(status, headers, body up to the cap and one byte) of the card, or why there is none."""
    try:
        with client.stream("GET", card_url, headers={"Accept": "application/json"}) as response:
            return response.status_code, response.headers, _read_capped(response)
    except Exception as exc:  # unreachable, TLS, a broken URL: the probe cannot run
        error = normalize(exc)
        kind = error.transport.value if error and error.transport else type(exc).__name__
        detail = _capped(error.message if error else str(exc))
        return f"cannot read the agent card at {_public(card_url)}: {kind}: {detail}"


def _card(
    card_url: str, fetched: tuple[int, httpx.Headers, bytes] | str, missing: str
) -> tuple[str, dict[str, Any]] | str:
    """The card read at ``card_url``, or why it cannot be used."""
    if isinstance(fetched, str):
        return fetched
    status, headers, body = fetched
    where = _public(card_url)
    hops = _hops(headers)
    through = f" (answered through: {_hops_text(hops)})" if hops else ""
    if 300 <= status < 400:
        location = _public(headers.get("location", "")) or "nowhere"
        return f"the agent card at {where} redirects (HTTP {status}) to {location}: probe that URL"
    if status != 200:
        content = headers.get("content-type", "no content type")
        prior = f" ({missing})" if missing else ""
        return f"cannot read the agent card at {where}: HTTP {status} {content}{through}{prior}"
    if len(body) > _MAX_BODY:
        return f"the agent card at {where} is larger than {_MAX_BODY} bytes"
    try:
        card = json.loads(body)
    except (ValueError, RecursionError):
        return f"the agent card at {where} is not JSON{through}"
    if not isinstance(card, dict):
        return f"the agent card at {where} is not a JSON object"
    return card_url, card


def _read_card(client: httpx.Client, url: str) -> tuple[str, dict[str, Any]] | str:
    """The card and where it was read, or why it could not be read.

    A base URL with a path whose well-known card is missing (404) falls back to the origin's.
    """
    *first, last = _card_urls(url)
    missing = ""
    for card_url in first:
        fetched = _fetch(client, card_url)
        if not (isinstance(fetched, tuple) and fetched[0] == 404):
            return _card(card_url, fetched, "")
        missing = f"HTTP 404 at {_public(card_url)}"
    return _card(last, _fetch(client, last), missing)


def _validated(
    checks: Iterable[str] | None, bindings: Iterable[str] | None, strict_table: str | None
) -> tuple[list[str], list[str]]:
    chosen = list(_SPECS) if checks is None else list(dict.fromkeys(checks))
    unknown = [name for name in chosen if name not in _SPECS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}; known: {', '.join(_SPECS)}")
    wanted = list(BINDINGS) if bindings is None else list(dict.fromkeys(bindings))
    bad = [name for name in wanted if name not in BINDINGS]
    if bad:
        raise ValueError(f"unknown binding(s) {bad}; known: {', '.join(BINDINGS)}")
    if strict_table not in (None, *TABLES):
        raise ValueError(f"strict_table must be one of {TABLES} or None")
    order = {name: index for index, name in enumerate(_SPECS)}
    return sorted(chosen, key=order.__getitem__), wanted


def _header_items(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> list[tuple[str, str]]:
    if headers is None:
        return []
    items = list(headers.items()) if hasattr(headers, "items") else list(headers)
    out: list[tuple[str, str]] = []
    for raw_name, value in items:
        if not isinstance(raw_name, str) or not isinstance(value, str):
            raise ValueError("headers must be names and values, both strings")
        name = raw_name.strip()
        if not _TOKEN.fullmatch(name):
            raise ValueError("a header name must be a token (RFC 9110): letters, digits, -_.")
        if not _FIELD_VALUE.fullmatch(value):
            # Never the value itself in the message: it is likely a credential.
            raise ValueError(f"the value of header {name} must be printable ASCII (not shown)")
        if name.lower() in _OWN_HEADERS:
            raise ValueError(f"the probe sets {name} itself; leave it out of headers")
        out.append((name, value))
    return out


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise ValueError("the URL must be an http:// or https:// URL with a host")


def probe(
    url: str,
    *,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    timeout: float = 10.0,
    checks: Iterable[str] | None = None,
    bindings: Iterable[str] | None = None,
    strict_table: str | None = None,
    follow_card_hosts: bool = False,
    message: str = DEFAULT_MESSAGE,
    transport: httpx.BaseTransport | None = None,
) -> ProbeReport:
    """Trigger every error the agent at ``url`` can give deterministically, on every interface.

    Args:
        url: the agent's base URL, or its card's URL.
        headers: headers sent with every request (as gRPC metadata too), e.g. credentials.
            Their values never appear in the report.
        timeout: seconds each request may take.
        checks: the names of the checks to run (see `CHECKS`); all by default.
        bindings: the bindings to probe (``jsonrpc``, ``http+json``, ``grpc``); all by
            default.
        strict_table: ``"1.0.1"`` or ``"1.0.0"`` to accept only that table's statuses; by
            default a status of either table passes (the report says which it follows).
        follow_card_hosts: also probe interfaces the card lists on other hosts.
        message: the text of the messages the probe sends.
        transport: the httpx transport for HTTP requests (TLS settings, or a
            ``httpx.MockTransport`` in tests).

    Returns:
        The report; `ProbeReport.ok` for CI, `ProbeReport.to_text` and `ProbeReport.to_json`
        to show it. A card that cannot be read gives a report with ``error`` set (exit
        status 2), never an exception.

    Raises:
        ValueError: for a URL that is not http(s), an unknown check or binding, or headers
            the probe sets itself (A2A-Version, A2A-Extensions, Content-Type).

    """
    _check_url(url)
    chosen, wanted = _validated(checks, bindings, strict_table)
    items = _header_items(headers)
    if not timeout > 0:
        raise ValueError("timeout must be positive")
    names = tuple(dict.fromkeys(name for name, _ in items))
    base = ProbeReport(_public(url), headers_sent=names, strict_table=strict_table)
    client = httpx.Client(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        headers=[
            *([] if any(n.lower() == "user-agent" for n in names) else [_USER_AGENT]),
            *items,
        ],
    )
    with client:
        found = _read_card(client, url)
        if isinstance(found, str):
            return replace(base, error=found)
        card_url, card = found
        agent = _summary_of(card)
        base = replace(base, card_url=_public(card_url), agent=agent)
        declared = _interfaces_of(card)
        if not declared:
            return replace(base, error="the agent card lists no interfaces (supportedInterfaces)")
        options = _Options(timeout, strict_table, message)
        interfaces, results = _probe_interfaces(
            client,
            url,
            declared,
            agent,
            options=options,
            chosen=chosen,
            wanted=wanted,
            follow_card_hosts=follow_card_hosts,
            items=items,
        )
    report = replace(base, interfaces=tuple(interfaces), checks=tuple(results))
    if not results or all(r.status is CheckStatus.SKIPPED for r in results):
        why = "no interface was probed" if not results else "every check was skipped"
        report = replace(report, error=f"no check could run: {why} (see the interfaces)")
    return report


def _probe_interfaces(
    client: httpx.Client,
    url: str,
    declared: Sequence[_Interface],
    agent: AgentSummary,
    *,
    options: _Options,
    chosen: Sequence[str],
    wanted: Sequence[str],
    follow_card_hosts: bool,
    items: Sequence[tuple[str, str]],
) -> tuple[list[InterfaceResult], list[CheckResult]]:
    host = _host_of(url)
    given = urlsplit(url)
    interfaces: list[InterfaceResult] = []
    per_check: list[tuple[int, int, CheckResult]] = []
    for position, interface in enumerate(declared):
        skip = _why_not(interface, wanted, host, follow_card_hosts)
        if skip:
            interfaces.append(_interface_result(interface, probed=False, note=skip))
            continue
        note = ""
        where = _host_of(interface.url)
        if where != host:
            note = "on another host; follow_card_hosts is set"
        elif interface.binding != GRPC and urlsplit(interface.url).netloc != given.netloc:
            note = "another port of the host given: reached directly"
        elif interface.binding == GRPC:
            note = "reached directly: gRPC does not go through the URL given"
        with _WireContext(client, interface, given.scheme, items, options.timeout) as opened:
            wire, why = opened
            if wire is None:
                interfaces.append(_interface_result(interface, probed=False, note=why))
                continue
            interfaces.append(_interface_result(interface, probed=True, note=note))
            session = _Session(interface, wire, agent, options)
            for index, check in enumerate(chosen):
                per_check.append((index, position, _run(session, check)))
    per_check.sort(key=lambda item: (item[0], item[1]))
    return interfaces, [result for _, _, result in per_check]


def _interface_result(interface: _Interface, *, probed: bool, note: str) -> InterfaceResult:
    return InterfaceResult(
        interface.binding,
        _public(interface.url),
        interface.version,
        interface.tenant,
        probed,
        note,
    )


def _why_not(interface: _Interface, wanted: Sequence[str], host: str | None, follow: bool) -> str:
    if interface.binding not in BINDINGS:
        return f"a binding the probe does not speak ({interface.binding})"
    if interface.binding not in wanted:
        return "binding not selected"
    version = interface.version or "1.0"
    if not version.startswith("1."):
        return f"A2A {version}; the probe checks A2A 1.x interfaces"
    where = _host_of(interface.url)
    if where is None:
        return "the card gives no host for it"
    if where != host and not follow:
        return (
            f"on another host ({where}) than the URL given; pass "
            "--follow-card-hosts (follow_card_hosts=True) to probe it"
        )
    if interface.binding != GRPC:
        scheme = urlsplit(interface.url).scheme
        if scheme not in ("http", "https"):
            return f"not an http(s) URL ({scheme or 'no scheme'})"
    return ""


class _WireContext:
    """Opens the wire for an interface (a gRPC channel needs closing), or says why not."""

    def __init__(
        self,
        client: httpx.Client,
        interface: _Interface,
        scheme: str,
        items: Sequence[tuple[str, str]],
        timeout: float,
    ) -> None:
        self.client = client
        self.interface = interface
        self.scheme = scheme
        self.items = items
        self.timeout = timeout
        self.channel: Any = None

    def __enter__(self) -> tuple[_HttpWire | _GrpcWire | None, str]:
        interface = self.interface
        if interface.binding != GRPC:
            return (
                _HttpWire(
                    self.client, interface.binding, interface.url, interface.tenant, self.timeout
                ),
                "",
            )
        try:
            import grpc  # noqa: PLC0415 (optional: the grpc extra)
            from a2a.types import a2a_pb2  # noqa: F401, PLC0415 (optional: a2a-sdk)
        except ImportError as exc:
            return None, (
                f"gRPC needs grpcio and a2a-sdk ({exc.name or 'a module'} is missing): "
                "pip install 'a2a-client-errors[probe]'"
            )
        target, secure = _grpc_target(interface.url, self.scheme)
        try:
            if secure:
                self.channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
            else:
                self.channel = grpc.insecure_channel(target)
        except Exception as exc:  # a target grpc refuses: said, not raised
            return None, f"gRPC cannot open {target}: {type(exc).__name__}"
        metadata = [(name.lower(), value) for name, value in self.items]
        return _GrpcWire(self.channel, metadata, interface.tenant, self.timeout), ""

    def __exit__(self, *exc: object) -> None:
        if self.channel is not None:
            self.channel.close()


def _grpc_target(url: str, given_scheme: str) -> tuple[str, bool]:
    """(target, TLS?) for a gRPC interface URL: its scheme decides, else the URL given's."""
    text = url.strip()
    if text.startswith("dns:"):
        return text, given_scheme == "https"
    if "://" not in text:
        return text, given_scheme == "https"
    parts = urlsplit(text)
    secure = parts.scheme in ("https", "grpcs")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    if parts.port is None and (secure or parts.scheme == "http"):
        netloc += ":443" if secure else ":80"
    return netloc, secure


# --------------------------------------------------------------------------------------------
# The table for humans
# --------------------------------------------------------------------------------------------


def _render(report: ProbeReport) -> str:
    lines = [f"a2a-errors probe {escape(report.url)}"]
    if report.card_url:
        lines.append(f"card: {escape(report.card_url)}")
    agent = report.agent
    if agent is not None:
        caps = [
            f"streaming {'on' if agent.streaming else 'off'}",
            f"push {'on' if agent.push_notifications else 'off'}",
            f"extended card {'declared' if agent.extended_agent_card else 'not declared'}",
        ]
        if agent.required_extensions:
            caps.append("required extensions: " + ", ".join(agent.required_extensions))
        lines.append(escape(f"agent: {agent.name or '(no name)'}; " + "; ".join(caps)))
    if report.headers_sent:
        names = escape(", ".join(report.headers_sent))
        lines.append(f"headers sent: {names} (values not shown)")
    if report.strict_table:
        lines.append(f"strict table: {report.strict_table}")
    if report.interfaces:
        lines.append("")
        lines.append("interfaces")
        rows = [
            [
                i.binding,
                i.url,
                i.protocol_version or "-",
                ("probed" if i.probed else "not probed") + (f" ({i.note})" if i.note else ""),
            ]
            for i in report.interfaces
        ]
        lines += _columns(rows, indent="  ")
    if report.checks:
        lines.append("")
        header = [
            "check",
            "binding",
            "result",
            "reason",
            "expected",
            "observed",
            "table",
            "ErrorInfo",
        ]
        rows = [header]
        notes: list[list[str]] = [[]]
        for result in report.checks:
            wanted = result.expected.reason if result.expected else None
            rows.append(
                [
                    result.check,
                    result.binding,
                    _result_word(result.status),
                    (wanted or "-") if result.expected else "",
                    result.expected.text() if result.expected else "",
                    result.observed.text(wanted) if result.observed else "",
                    "" if result.expected is None else result.table or "-",
                    "" if result.expected is None else _details_word(result),
                ]
            )
            notes.append(list(result.notes) if result.status is not CheckStatus.PASSED else [])
        for line, extra in zip(_columns(rows), notes, strict=True):
            lines.append(line)
            lines += [f"    - {escape(note)}" for note in extra]
    lines.append("")
    if report.error is not None:
        lines.append(f"the probe could not run: {escape(report.error)}")
    counts = {status: report.count(status) for status in CheckStatus}
    lines.append(
        f"result: {counts[CheckStatus.PASSED]} checks passed, "
        f"{counts[CheckStatus.FAILED]} failed, {counts[CheckStatus.ERROR]} errors, "
        f"{counts[CheckStatus.SKIPPED]} skipped (exit status {report.exit_status})"
    )
    return "\n".join(lines) + "\n"


def _result_word(status: CheckStatus) -> str:
    return {
        CheckStatus.PASSED: "pass",
        CheckStatus.FAILED: "FAIL",
        CheckStatus.SKIPPED: "skip",
        CheckStatus.ERROR: "ERROR",
    }[status]


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
