"""`A2AError` and its encoders: one error, the wire shape of each binding.

The error a server raises, the three encoders (`to_jsonrpc`, `to_http`, `to_grpc`), the
generic answer to an unexpected exception (`internal_error`), what a gateway relays of a
peer's failure (`from_failure`), and the one path every adapter takes for an error it cannot
encode (`encode_or_internal`). ``a2a_client_errors.server`` re-exports all of it.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from a2a_client_errors._errors import escape
from a2a_client_errors._failures import CallFailed
from a2a_client_errors._reasons import (
    A2A_DOMAIN,
    ERROR_INFO_TYPE,
    GRPC_CODES,
    Reason,
    canonical_reason,
    row_for,
)
from a2a_client_errors._wire import MAX_TEXT

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from a2a_client_errors._errors import CallError
    from a2a_client_errors._wire import Detail

__all__ = [
    "CONTENT_TYPE",
    "CORRELATION_KEY",
    "GRPC_TRAILER_BUDGET",
    "RELAY_LIMITS",
    "A2AError",
    "RelayLimits",
    "encode_or_internal",
    "from_failure",
    "grpc_status",
    "internal_error",
    "to_grpc",
    "to_http",
    "to_jsonrpc",
]

CONTENT_TYPE: Final = "application/a2a+json"
"""The HTTP+JSON binding's content type (§11.1, since A2A 1.0.1)."""

_FALLBACK: Final = (-32603, "INTERNAL", 500)
CORRELATION_KEY: Final = "correlationId"
"""The ErrorInfo metadata key of `internal_error`'s correlation id."""
_log = logging.getLogger("a2a_client_errors.server")


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


class A2AError(Exception):
    """An A2A error, to raise in a handler and encode at the edge.

    Args:
        reason: the reason (a `Reason`, an alias, or a reason of your own: unknown reasons
            are encoded as internal errors that keep their reason in ErrorInfo).
        message: the message for humans. Never a stack trace, never a secret.
        metadata: ErrorInfo metadata; every value becomes a string.
        extra_details: more google.rpc details, after the ErrorInfo (``BadRequest`` naming
            the part that is not supported, say), as models of `a2a_client_errors._wire` or as
            ProtoJSON objects with ``@type``.
    """

    def __init__(
        self,
        reason: Reason | str,
        message: str,
        metadata: Mapping[str, object] | None = None,
        extra_details: Iterable[Detail | Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(message)
        self.reason: str = str(canonical_reason(str(reason)))
        self.message = message
        self.metadata: dict[str, str] = {str(k): _text(v) for k, v in (metadata or {}).items()}
        self.extra_details: tuple[Detail | Mapping[str, Any], ...] = tuple(extra_details)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"

    @property
    def codes(self) -> tuple[int, str, int]:
        """(JSON-RPC code, gRPC status name, HTTP status) of the 1.0.1 table."""
        row = row_for(self.reason)
        if row is None:
            return _FALLBACK
        jsonrpc, grpc_name, http = _FALLBACK
        return (
            jsonrpc if row.jsonrpc is None else row.jsonrpc,
            grpc_name if row.grpc is None else row.grpc,
            http if row.http is None else row.http,
        )

    def details(self) -> list[dict[str, Any]]:
        """The details in ProtoJSON: the ErrorInfo first, then the extra details."""
        info = {
            "@type": ERROR_INFO_TYPE,
            "reason": self.reason,
            "domain": A2A_DOMAIN,
            "metadata": dict(self.metadata),
        }
        return [info, *(_proto_json(detail) for detail in self.extra_details)]


def _proto_json(detail: Detail | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(detail, dict):
        return dict(detail)
    dump = getattr(detail, "model_dump", None)
    if dump is None:
        return dict(detail)  # a Mapping
    data: dict[str, Any] = dump(by_alias=True, mode="json", exclude_defaults=True)
    type_url = data.pop("type_url", None) or (
        "type.googleapis.com/google.rpc." + type(detail).__name__
    )
    data.pop("fields", None)
    return {"@type": type_url, **data}


def to_jsonrpc(error: A2AError, request_id: str | int | None) -> dict[str, Any]:
    """The JSON-RPC error response (sent with HTTP 200, as the official SDKs do)."""
    code, _, _ = error.codes
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": error.message, "data": error.details()},
    }


def to_http(error: A2AError) -> tuple[int, dict[str, str], bytes]:
    """The HTTP+JSON error: (status, headers, ``google.rpc.Status`` JSON body)."""
    _, grpc_name, status = error.codes
    body = {
        "error": {
            "code": status,
            "status": grpc_name,
            "message": error.message,
            "details": error.details(),
        }
    }
    return status, {"Content-Type": CONTENT_TYPE}, json.dumps(body).encode()


def to_grpc(error: A2AError) -> Any:
    """A ``google.rpc.Status`` with packed details, for the gRPC binding."""
    from google.protobuf import any_pb2, json_format  # noqa: PLC0415 (protobuf is slow to import)
    from google.rpc import error_details_pb2, status_pb2  # noqa: PLC0415

    _, grpc_name, _ = error.codes
    status = status_pb2.Status(code=GRPC_CODES[grpc_name], message=error.message)
    for detail in error.details():
        type_url = detail.get("@type", "")
        cls = getattr(error_details_pb2, type_url.rsplit(".", 1)[-1], None)
        if cls is None:
            continue  # only google.rpc details can be packed without their descriptors
        message = json_format.ParseDict(
            {k: v for k, v in detail.items() if k != "@type"}, cls(), ignore_unknown_fields=True
        )
        packed = any_pb2.Any()
        packed.Pack(message)
        status.details.append(packed)
    return status


@dataclass(frozen=True, slots=True)
class RelayLimits:
    """What `from_failure` relays of a peer's error, at most.

    A peer's metadata and message are untrusted: a peer that answers with a huge map must not
    make the gateway answer its own caller with a huge body (or a gRPC trailer its client
    refuses). An entry whose key or value is too long is dropped, not cut (a cut task id is a
    wrong id); entries past the count or the total are dropped too. When any is dropped, the
    metadata says how many under ``droppedMetadata``.

    Attributes:
        max_entries: metadata entries relayed.
        max_key: characters of a key.
        max_value: characters of a value.
        max_total: characters of all keys and values together.
        max_message: characters of the peer's message (longer ones end in "...").
    """

    max_entries: int = 16
    max_key: int = 64
    max_value: int = 512
    max_total: int = 2048
    max_message: int = 512


RELAY_LIMITS: Final = RelayLimits()
"""The default limits of `from_failure`: with them, a relayed error fits any binding."""
DROPPED_KEY: Final = "droppedMetadata"


def _was_cut(text: str) -> bool:
    """Whether the error kept only the start of it (`MAX_TEXT`): too long to relay, dropped."""
    return len(text) == MAX_TEXT and text.endswith("…")


def _relayed(metadata: Mapping[str, str], limits: RelayLimits) -> dict[str, str]:
    """The peer's metadata within ``limits``, control characters escaped."""
    kept: dict[str, str] = {}
    total = dropped = 0
    for key, value in metadata.items():
        key_text, value_text = escape(str(key)), escape(str(value))
        size = len(key_text) + len(value_text)
        if (
            len(kept) >= limits.max_entries
            or len(key_text) > limits.max_key
            or len(value_text) > limits.max_value
            or _was_cut(str(key))
            or _was_cut(str(value))
            or total + size > limits.max_total
            or key_text == DROPPED_KEY
        ):
            dropped += 1
            continue
        kept[key_text] = value_text
        total += size
    if dropped:
        kept[DROPPED_KEY] = str(dropped)
    return kept


def _relayed_message(message: str, limits: RelayLimits) -> str:
    text = escape(message)
    if len(text) <= limits.max_message:
        return text
    return text[: max(0, limits.max_message - 3)] + "..."


def from_failure(
    failure: CallFailed | CallError, *, limits: RelayLimits = RELAY_LIMITS
) -> A2AError:
    """The error a gateway tells its own caller about a peer's failure.

    A peer that broke the contract (INVALID_AGENT_RESPONSE, a reason nobody knows, a response
    that was not A2A) becomes INVALID_AGENT_RESPONSE: -32006, HTTP 500, gRPC INTERNAL, with the
    peer's reason in the metadata, never a generic internal error. Every other A2A reason
    passes through with its metadata; transport failures become internal errors.

    What the peer sent is relayed within ``limits`` (see `RelayLimits`): its metadata entries
    and message are capped, and their control characters escaped.

    Args:
        failure: the `CallFailed` a Guard raised, or the `CallError` itself.
        limits: what is relayed at most (default `RELAY_LIMITS`).
    """
    error = failure.error if isinstance(failure, CallFailed) else failure
    if error is None:
        return A2AError(Reason.INTERNAL_ERROR, "the peer agent failed")
    reason = error.reason
    if isinstance(reason, Reason) and reason.is_a2a and reason is not Reason.INVALID_AGENT_RESPONSE:
        message = _relayed_message(error.message, limits) if error.message else reason.value
        return A2AError(reason, message, _relayed(error.metadata, limits))
    if reason is Reason.INVALID_AGENT_RESPONSE or (
        reason is not None and not isinstance(reason, Reason)
    ):
        metadata = dict(error.metadata)
        if reason is not Reason.INVALID_AGENT_RESPONSE:
            # what the peer said that nobody knows, first, so that the caps keep it
            metadata = {"peerReason": str(reason), **metadata}
        return A2AError(
            Reason.INVALID_AGENT_RESPONSE,
            "the peer agent's response broke the protocol",
            _relayed(metadata, limits),
        )
    return A2AError(Reason.INTERNAL_ERROR, "the peer agent failed")


def internal_error(
    exc: BaseException,
    *,
    correlation_id: str | None = None,
    logger: logging.Logger | None = None,
) -> A2AError:
    """The error a server answers for an exception it did not expect.

    -32603 / HTTP 500 / gRPC INTERNAL, with a generic message and a correlation id in the
    ErrorInfo metadata (``correlationId``). The exception itself, its message and its stack
    are logged at ERROR with that id, and never sent: the caller quotes the id, the operator
    finds the log line.

    Args:
        exc: the exception.
        correlation_id: the id to use (default: a new random one).
        logger: where the original goes (default: ``a2a_client_errors.server``).
    """
    return _internal(exc, f"unexpected {type(exc).__name__}", correlation_id, logger)


def _internal(
    exc: BaseException, what: str, correlation_id: str | None, logger: logging.Logger | None
) -> A2AError:
    correlation = correlation_id or uuid.uuid4().hex
    (logger or _log).error(
        "%s, answered as an internal error [%s=%s]",
        what,
        CORRELATION_KEY,
        correlation,
        exc_info=exc,
        extra={"correlation_id": correlation},
    )
    return A2AError(
        Reason.INTERNAL_ERROR,
        f"Internal error (reference {correlation}).",
        {CORRELATION_KEY: correlation},
    )


_T = TypeVar("_T")

GRPC_TRAILER_BUDGET: Final = 7 * 1024
"""Bytes of a gRPC error's trailers (``grpc-message`` and ``grpc-status-details-bin``), at most.

grpcio clients refuse received metadata past 8 KiB with a probability that grows to certainty
at 16 KiB (``RESOURCE_EXHAUSTED``, "received metadata size exceeds soft limit"): a status that
does not fit this budget is not sent (see `encode_or_internal`).
"""


def _check_encodable(error: A2AError) -> None:
    """Raise when the error holds what some binding cannot carry: all bindings then refuse it.

    Its text must be ``str`` and UTF-8 (no lone surrogate), its details must be JSON, and
    its google.rpc details must parse as their messages. Each binding answers the same error
    the same way, rather than one sending what another refuses.
    """
    message: object = error.message  # typed str, yet callers may pass anything
    if not isinstance(message, str):
        msg = f"the message is a {type(message).__name__}, not a str"
        raise TypeError(msg)
    for text in (error.reason, error.message, *error.metadata, *error.metadata.values()):
        text.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError
    if error.extra_details:
        json.dumps(error.details(), ensure_ascii=False).encode("utf-8")
        to_grpc(error)  # a google.rpc detail whose fields do not parse raises ParseError


def grpc_status(error: A2AError) -> Any:
    """The error as the ``grpc.Status`` that ``context.abort_with_status`` takes.

    `to_grpc`, checked against `GRPC_TRAILER_BUDGET`, then ``grpc_status.rpc_status.to_status``
    (extra ``grpc``). Adapters pass it to `encode_or_internal`.

    Raises:
        ValueError: the trailers would not fit the budget.
        Exception: whatever `to_grpc` raises for an error it cannot encode.
    """
    from grpc_status import rpc_status  # noqa: PLC0415 (part of the grpc extra)

    status = to_grpc(error)
    # grpc-message percent-encodes the message: at most three bytes per byte
    size = 3 * len(status.message.encode("utf-8")) + status.ByteSize()
    if size > GRPC_TRAILER_BUDGET:
        msg = f"the status takes up to {size} bytes of trailers, over {GRPC_TRAILER_BUDGET}"
        raise ValueError(msg)
    return rpc_status.to_status(status)


def encode_or_internal(
    encode: Callable[[A2AError], _T],
    error: A2AError,
    *,
    logger: logging.Logger | None = None,
) -> _T:
    """``encode(error)``, or the generic internal error's encoding when ``error`` cannot be.

    The one path every adapter takes. An `A2AError` that no binding can carry (a message
    that is not a ``str``, a lone surrogate in its text) or that this encoder refuses (an extra
    detail it cannot parse, a gRPC status past `GRPC_TRAILER_BUDGET`) is answered as
    `internal_error` answers an unexpected exception: -32603 / 500 / INTERNAL, a generic
    message, a correlation id; the failure is logged with that id, once, and never sent.

    Args:
        encode: the binding's encoder (``to_http``, ``grpc_status``, a lambda around
            ``to_jsonrpc``...).
        error: the error to encode.
        logger: where the failure is logged (default: ``a2a_client_errors.server``).
    """
    try:
        _check_encodable(error)
        return encode(error)
    except Exception as exc:  # whatever the encoder refuses: answered as internal, logged
        reason = escape(str(error.reason)).encode("utf-8", "backslashreplace").decode("utf-8")
        fallback = _internal(exc, f"an A2AError ({reason}) that cannot be encoded", None, logger)
        return encode(fallback)
