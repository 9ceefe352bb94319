"""The normalised result of a failed call: `CallError`, its enums, and `escape`.

`CallError` is not an exception: it is the typed record that `normalize` returns for every
wire shape, and that travels inside a `Decision` and a `CallFailed` (the exceptions live in
`a2a_client_errors._failures`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from a2a_client_errors._reasons import (
    A2A_DOMAIN,
    UNKNOWN_DELIVERY_REASONS,
    Delivery,
    Reason,
    TransportFailure,
    status_delivery,
)
from a2a_client_errors._wire import MAX_ITEMS, MAX_TEXT, cut, parse_detail

if TYPE_CHECKING:
    from collections.abc import Mapping

    from a2a_client_errors._wire import Detail

__all__ = [
    "CallError",
    "ErrorKind",
    "Source",
    "WireShape",
    "escape",
    "safe_peer",
]


class ErrorKind(str, enum.Enum):
    """The three kinds of failure this package keeps apart (task outcomes are not errors).

    Attributes:
        TRANSPORT: the call did not reach A2A semantics: connection, TLS, timeout, or a bare
            status from a proxy or gateway.
        AUTH: credentials were missing or insufficient (401/403, UNAUTHENTICATED,
            PERMISSION_DENIED, or an auth reason).
        PROTOCOL: the agent answered with an A2A call error (or broke the protocol).

    """

    TRANSPORT = "transport"
    AUTH = "auth"
    PROTOCOL = "protocol"

    def __str__(self) -> str:
        return self.value


class Source(str, enum.Enum):
    """Which signal decided the reason: the earlier in this list, the surer the answer.

    Attributes:
        ERROR_INFO: a ``google.rpc.ErrorInfo`` with domain ``a2a-protocol.org``.
        JSONRPC_CODE: the JSON-RPC ``error.code``.
        PROBLEM_TYPE: an RFC 9457 ``type`` URI under ``https://a2a-protocol.org/errors/``.
        LEGACY_BODY: a pre-1.0 body naming the error class.
        SDK_EXCEPTION: the class of an a2a-sdk exception that carried nothing better.
        STATUS_AND_OPERATION: the HTTP status read against the operation it answers (a 404
            to SendMessage is a wrong URL; a 409 to CancelTask is TASK_NOT_CANCELABLE).
        STATUS_FALLBACK: the HTTP status or gRPC code alone.
        INVALID_RESPONSE: a success response that breaks the protocol (the client noticed).
        TRANSPORT: a transport exception.

    """

    ERROR_INFO = "error_info"
    JSONRPC_CODE = "jsonrpc_code"
    PROBLEM_TYPE = "problem_type"
    LEGACY_BODY = "legacy_body"
    SDK_EXCEPTION = "sdk_exception"
    STATUS_AND_OPERATION = "status_and_operation"
    STATUS_FALLBACK = "status_fallback"
    INVALID_RESPONSE = "invalid_response"
    TRANSPORT = "transport"
    AGENT_CARD = "agent_card"

    def __str__(self) -> str:
        return self.value


class WireShape(str, enum.Enum):
    """The shape the error arrived in."""

    JSONRPC = "jsonrpc"
    """A JSON-RPC error object (``{"jsonrpc": "2.0", "error": {...}}``)."""
    STATUS_JSON = "status_json"
    """A ``google.rpc.Status`` in JSON (``{"error": {...}}``, the HTTP+JSON binding)."""
    PROBLEM_JSON = "problem_json"
    """An RFC 9457/7807 problem details body."""
    LEGACY = "legacy"
    """A pre-1.0 body (``{"type": "TaskNotFoundError"}``, ``{"error": "io.a2a...Error"}``)."""
    GRPC = "grpc"
    """A gRPC status, with details from the ``grpc-status-details-bin`` trailer."""
    BARE_STATUS = "bare_status"
    """An HTTP status whose body carries no error shape (proxies, gateways, empty bodies)."""
    INVALID = "invalid"
    """A response that breaks the protocol: not JSON, not UTF-8, a broken envelope."""
    TRANSPORT = "transport"
    """An exception raised before a response arrived."""
    NOT_SENT = "not_sent"
    """No wire at all: the agent card said the call would fail, so it was not sent."""

    def __str__(self) -> str:
        return self.value


_ESCAPES = {
    **{c: f"\\x{c:02x}" for c in range(0x20) if c not in (0x09,)},
    0x7F: "\\x7f",
    **{c: f"\\x{c:02x}" for c in range(0x80, 0xA0)},
    # Bidirectional overrides and isolates: they reorder what a terminal shows.
    **{c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))},
    0x2028: "\\u2028",
    0x2029: "\\u2029",
    # Invisible format characters that reorder or hide text: marks, joiners, the BOM.
    **{c: f"\\u{c:04x}" for c in (0x061C, 0x180E, *range(0x200B, 0x2010), *range(0x2060, 0x2065))},
    0xFEFF: "\\ufeff",
    # Lone surrogates: text that no encoder writes; escaped, a line with one always prints.
    **{c: f"\\u{c:04x}" for c in range(0xD800, 0xE000)},
}
_ESCAPES[0x09] = "\\t"
_ESCAPES[0x0A] = "\\n"
_ESCAPES[0x0D] = "\\r"


def escape(text: str) -> str:
    """Peer text made safe to print or log: control and bidi characters escaped."""
    return text.translate(_ESCAPES)


def _capped(value: Any, depth: int = 0) -> Any:
    """A JSON value with every string, list and object cut to the caps (for renderings)."""
    if isinstance(value, str):
        return cut(value)
    if depth >= 8:
        return None
    if isinstance(value, dict):
        items = list(value.items())[:MAX_ITEMS]
        return {cut(str(k)): _capped(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        return [_capped(v, depth + 1) for v in value[:MAX_ITEMS]]
    return value


_MAX_PEER: Final = 128


def safe_peer(peer: str) -> str:
    """A peer key fit for a label or a log line.

    A URL keeps its scheme, host, port and path, and loses any user info (credentials), query
    and fragment (tokens); control characters are escaped and the result is capped.

        >>> safe_peer("https://user:secret@agent.example:8443/a2a?api_key=k#x")
        'https://agent.example:8443/a2a'
        >>> safe_peer("HTTP+JSON https://user:secret@agent.example/rest?api_key=k")
        'HTTP+JSON https://agent.example/rest'
    """
    text = peer.strip()
    if "://" in text:  # every URL in it (``"HTTP+JSON https://..."`` names an interface)
        text = " ".join(_safe_url(word) if "://" in word else word for word in text.split())
    text = escape(text)
    return text if len(text) <= _MAX_PEER else text[: _MAX_PEER - 1] + "…"


def _safe_url(text: str) -> str:
    """A URL without user info, query and fragment (as it is when it cannot be read as one)."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    if not (parts.scheme and parts.netloc):
        return text
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}{parts.path}"


_NO_METADATA: Mapping[str, str] = MappingProxyType({})
_CALL_ERROR_FIELDS = (
    "kind",
    "reason",
    "source",
    "wire",
    "jsonrpc_code",
    "http_status",
    "grpc_status",
    "message",
    "domain",
    "metadata",
    "raw_details",
    "retry_after",
    "supported_versions",
    "exception",
    "transport",
    "delivery",
    "location",
)


_new: Final = object.__new__
"""Bound once: ``object.__new__`` looked up through the type on every record costs more."""


class CallErrorSlots:
    """The storage of `CallError`: its slots, with no frozen guard, so that they fill fast.

    A `CallError` is built as this plain object and then becomes a `CallError`, whose
    ``__setattr__`` refuses every change. On the hot path (one record per error classified)
    that is four times cheaper than the frozen guard's ``object.__setattr__`` per field.
    Whoever builds one (`build_call_error`, and the normaliser's precedence) sets every field of
    `CallError`, in order, and then its ``__class__``; the details cache stays unset until
    `CallError.details` is first read.
    """

    __slots__ = (*_CALL_ERROR_FIELDS, "_details")

    _details: tuple[Detail, ...]  # the typed details, parsed on first access; not a field


@dataclass(frozen=True, init=False)
class CallError(CallErrorSlots):
    """A call error, normalised from whatever wire shape it arrived in.

    Everything a peer sent is untrusted: ``message`` is kept as sent (capped in length) and must
    be rendered with `escape` (``str(error)`` does); ``metadata`` values are strings.

    Attributes:
        kind: transport, auth or protocol.
        reason: the canonical reason (a `Reason`), an unknown reason as the peer sent it, or
            None when no signal names one.
        source: which signal decided the reason (or, with no reason, the action).
        wire: the shape the error arrived in.
        jsonrpc_code: the JSON-RPC ``error.code``, if any.
        http_status: the HTTP status, if any.
        grpc_status: the gRPC status name (``"NOT_FOUND"``), if any.
        message: the peer's message, for humans; never parse it.
        domain: the ErrorInfo domain the reason came from, if any.
        metadata: the ErrorInfo metadata (str -> str); it may be the very map found in
            ``raw_details``, as parsed: read both, never change them.
        raw_details: every detail the peer sent, as ProtoJSON objects (gRPC details too).
        details: the same as typed models (parsed on first access).
        retry_after: the server's hint, in seconds (Retry-After, retry-after-ms, RetryInfo,
            grpc-retry-pushback-ms; the largest when several are sent). ``math.inf`` when the
            server asked not to retry at all (a negative or unreadable gRPC pushback).
        supported_versions: versions the peer says it supports (problem+json
            ``supportedVersions``), in its order.
        exception: the qualified name of the exception behind a transport error.
        transport: what kind of transport failure it was (connect, timeout, TLS, ...).
        delivery: what reached the agent: ``not_sent``, ``not_processed``, or ``unknown`` (it
            may have been processed: a call that creates work is looked up, never resent
            blindly). Derived from the other fields when not given.
        location: where a redirect (a 3xx answer) pointed, as kept of the peer's
            ``Location``: ``scheme://host:port/path``, percent-encoded, without user info,
            query or fragment (see `a2a_client_errors._redirects.safe_location`); None for
            any other answer. Render it with `escape`, as any peer text.

    """

    __slots__ = ()

    kind: ErrorKind
    reason: Reason | str | None
    source: Source
    wire: WireShape
    jsonrpc_code: int | None
    http_status: int | None
    grpc_status: str | None
    message: str
    domain: str | None
    metadata: Mapping[str, str] = field(hash=False)
    raw_details: tuple[Mapping[str, Any], ...] = field(repr=False, hash=False)
    retry_after: float | None = field()
    supported_versions: tuple[str, ...] = field()
    exception: str | None = field()
    transport: TransportFailure | None = field()
    delivery: Delivery = field()
    location: str | None = field()

    def __new__(  # noqa: PLR0917 (every field is a keyword; positions serve the hot path)
        cls,
        kind: ErrorKind,
        reason: Reason | str | None,
        source: Source,
        wire: WireShape,
        jsonrpc_code: int | None = None,
        http_status: int | None = None,
        grpc_status: str | None = None,
        message: str = "",
        domain: str | None = None,
        metadata: Mapping[str, str] = _NO_METADATA,
        raw_details: tuple[Mapping[str, Any], ...] = (),
        retry_after: float | None = None,
        supported_versions: tuple[str, ...] = (),
        exception: str | None = None,
        transport: TransportFailure | None = None,
        delivery: Delivery | None = None,
        location: str | None = None,
    ) -> CallError:
        """A new record, filled, then frozen."""
        return build_call_error(
            cls,
            kind,
            reason,
            source,
            wire,
            jsonrpc_code,
            http_status,
            grpc_status,
            message,
            domain,
            metadata,
            raw_details,
            retry_after,
            supported_versions,
            exception,
            transport,
            delivery,
            location,
        )

    def __reduce__(self) -> tuple[type[CallError], tuple[Any, ...]]:
        """Pickle and copy by the fields (the details cache is rebuilt on demand)."""
        values = [getattr(self, f.name) for f in fields(self) if f.init]
        values[_METADATA_INDEX] = dict(self.metadata)  # a read-only view does not pickle
        return (type(self), tuple(values))

    @property
    def details(self) -> tuple[Detail, ...]:
        """Every detail the peer sent, typed (``ErrorInfo``, ``BadRequest``, ...), in order.

        Parsed on first access: classifying an error never pays for it.
        """
        try:
            return self._details
        except AttributeError:  # not read yet
            found = tuple(parse_detail(raw) for raw in self.raw_details)
            _CALL_ERROR_DETAILS.__set__(self, found)  # a cache, invisible to eq and repr
            return found

    @property
    def is_a2a(self) -> bool:
        """Whether the reason is one of the nine errors the A2A spec defines."""
        return isinstance(self.reason, Reason) and self.reason.is_a2a

    @property
    def is_known(self) -> bool:
        """Whether the reason, if any, is one this package knows (A2A or a known SDK extra)."""
        return self.reason is None or isinstance(self.reason, Reason)

    @property
    def is_a2a_domain(self) -> bool:
        """Whether the reason came from an ErrorInfo with the A2A domain."""
        return self.domain == A2A_DOMAIN

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (for logs, the CLI and tests); the message is left as sent.

        The details are rendered within the caps (`MAX_TEXT` per string, `MAX_ITEMS` per list
        or object); ``raw_details`` keeps them as the peer sent them.
        """
        return {
            "kind": self.kind.value,
            "reason": None if self.reason is None else str(self.reason),
            "source": self.source.value,
            "wire": self.wire.value,
            "jsonrpc_code": self.jsonrpc_code,
            "http_status": self.http_status,
            "grpc_status": self.grpc_status,
            "message": self.message,
            "domain": self.domain,
            "metadata": dict(self.metadata),
            "details": [
                _capped({"type": type(d).__name__, **d.model_dump(mode="json")})
                for d in self.details[:MAX_ITEMS]
            ],
            "retry_after": self.retry_after,
            "supported_versions": list(self.supported_versions),
            "exception": self.exception,
            "transport": None if self.transport is None else self.transport.value,
            "delivery": self.delivery.value,
            "location": self.location,
        }

    def __str__(self) -> str:
        head = escape(str(self.reason)) if self.reason is not None else self.kind.value
        if self.reason is None and self.transport is not None:
            head += f" ({self.transport.value})"
        codes = ", ".join(
            f"{label} {value}"
            for label, value in (
                ("jsonrpc", self.jsonrpc_code),
                ("http", self.http_status),
                ("grpc", self.grpc_status),
            )
            if value is not None
        )
        if codes:
            head += f" [{codes}]"
        text = f"{head}: {escape(self.message)}" if self.message else head
        return f"{text} (to {escape(self.location)})" if self.location is not None else text


def build_call_error(  # noqa: PLR0917 (the fields in order: one call, no keywords, on the hot path)
    cls: type[CallError],
    kind: ErrorKind,
    reason: Reason | str | None,
    source: Source,
    wire: WireShape,
    jsonrpc_code: int | None,
    http_status: int | None,
    grpc_status: str | None,
    message: str,
    domain: str | None,
    metadata: Mapping[str, str],
    raw_details: tuple[Mapping[str, Any], ...],
    retry_after: float | None,
    supported_versions: tuple[str, ...],
    exception: str | None,
    transport: TransportFailure | None,
    delivery: Delivery | None,
    location: str | None = None,
) -> CallError:
    """``cls(...)`` with every field given in order: what `CallError` builds, with no class call.

    The normaliser builds its records here directly, which spares the call through the type
    (``__new__`` and ``__init__`` lookups, the arguments repacked): about a quarter of the
    record's cost; its precedence fills a record of a known reason with the same stores,
    inline. The record is filled as a plain slotted object and then becomes a ``cls``, whose
    ``__setattr__`` refuses every change.
    """
    self: Any = _new(CallErrorSlots)
    if type(reason) is str and len(reason) > MAX_TEXT:
        reason = cut(reason)
    # Metadata keys and values are cut as the map is built (`wire.string_map`); a map
    # handed in whole is held to the count here.
    if len(metadata) > MAX_ITEMS:
        metadata = {cut(str(k)): cut(str(v)) for k, v in list(metadata.items())[:MAX_ITEMS]}
    if supported_versions:
        supported_versions = kept_versions(supported_versions)
    self.kind = kind
    self.reason = reason
    self.source = source
    self.wire = wire
    self.jsonrpc_code = jsonrpc_code
    self.http_status = http_status
    self.grpc_status = grpc_status
    self.message = message
    self.domain = domain
    self.metadata = metadata
    self.raw_details = raw_details
    self.retry_after = retry_after
    self.supported_versions = supported_versions
    self.exception = exception
    self.transport = transport
    if delivery is None:
        if type(reason) is Reason and source in _A2A_SOURCES:  # the common case, inline
            unknown = reason in UNKNOWN_DELIVERY_REASONS
            delivery = _DELIVERY_UNKNOWN if unknown else _DELIVERY_NOT_PROCESSED
        else:
            delivery = _delivery_of(
                wire, source, reason, http_status, grpc_status, raw_details, retry_after
            )
    self.delivery = delivery
    self.location = location
    self.__class__ = cls  # from here on, frozen
    return self  # type: ignore[no-any-return]


def kept_versions(versions: tuple[str, ...]) -> tuple[str, ...]:
    """Supported versions as a record keeps them: `MAX_ITEMS` of them, each cut to `MAX_TEXT`."""
    if len(versions) > MAX_ITEMS or max(map(len, versions)) > MAX_TEXT:
        return tuple(cut(v) for v in versions[:MAX_ITEMS])
    return versions


# Bound once: an enum class's attribute is looked up through its metaclass (slow, see
# ``normalize``), and these are read for every record built.
_DELIVERY_UNKNOWN: Final = Delivery.UNKNOWN
_DELIVERY_NOT_PROCESSED: Final = Delivery.NOT_PROCESSED
_STATUS_SOURCES = frozenset({Source.STATUS_FALLBACK, Source.STATUS_AND_OPERATION, Source.TRANSPORT})
# The error bodies a server writes itself (see `status_delivery`); compared by identity, as
# hashing an enum member runs Python code.
_WIRE_JSONRPC: Final = WireShape.JSONRPC
_WIRE_STATUS: Final = WireShape.STATUS_JSON
_A2A_SOURCES = frozenset(
    {Source.ERROR_INFO, Source.JSONRPC_CODE, Source.PROBLEM_TYPE, Source.LEGACY_BODY}
)


def _delivery_of(  # noqa: PLR0917 (the fields it reads, in the record's order)
    wire: WireShape,
    source: Source,
    reason: Reason | str | None,
    http_status: int | None,
    grpc_status: str | None,
    raw_details: tuple[Mapping[str, Any], ...],
    retry_after: float | None,
) -> Delivery:
    """What reached the agent, from what the error record holds (see `Delivery`).

    A JSON-RPC error or a ``{"error": Status}`` body is the server's own answer (see
    `status_delivery`); a body that relays a gRPC status as it was is built with its delivery.
    """
    if wire is WireShape.NOT_SENT:
        return Delivery.NOT_SENT
    if source is Source.INVALID_RESPONSE:
        return Delivery.UNKNOWN  # the agent answered, so it did the work, whatever it was
    if isinstance(reason, Reason) and source not in _STATUS_SOURCES:
        # The agent (or a hop speaking A2A) answered with an error it meant.
        return Delivery.UNKNOWN if reason in UNKNOWN_DELIVERY_REASONS else Delivery.NOT_PROCESSED
    if wire in (WireShape.TRANSPORT, WireShape.INVALID):
        return Delivery.UNKNOWN  # a transport exception names its own (normalize passes it)
    return status_delivery(
        http_status,
        grpc_status,
        has_details=bool(raw_details),
        hinted=retry_after is not None,
        answered=wire is _WIRE_JSONRPC or wire is _WIRE_STATUS,
    )


_CALL_ERROR_DETAILS = vars(CallErrorSlots)["_details"]
_METADATA_INDEX = _CALL_ERROR_FIELDS.index("metadata")
assert tuple(f.name for f in fields(CallError)) == _CALL_ERROR_FIELDS  # noqa: S101
