"""The same error model on the other side: one `A2AError`, encoded for each binding.

Servers and gateways raise (or build) one `A2AError` and encode it at the edge:

* `to_jsonrpc` — a JSON-RPC error response, ErrorInfo in ``error.data`` (recommended since
  A2A 1.0.1);
* `to_http` — the HTTP+JSON binding: status, headers (``Content-Type: application/a2a+json``)
  and a ``google.rpc.Status`` JSON body;
* `to_grpc` — a ``google.rpc.Status`` message with packed details, ready for grpc.aio's
  ``abort_with_status`` (``grpc_status.rpc_status.to_status``) and the
  ``grpc-status-details-bin`` trailer.

Codes come from the 1.0.1 table (`a2a_client_errors.reasons`). A gateway that must tell its
own caller about a peer's failure uses `from_failure`: a peer that broke the contract becomes
INVALID_AGENT_RESPONSE (-32006 / 500 / INTERNAL), never a generic -32603.

An exception nobody expected becomes `internal_error`: -32603 / 500 / INTERNAL with a generic
message and a correlation id in the ErrorInfo metadata, the original logged with that id,
never sent.

Adapters: `exception_handlers` for Starlette and FastAPI (JSON-RPC or HTTP+JSON), and
``a2a_client_errors.integrations.grpc.A2AErrorInterceptor`` for ``grpc.aio`` servers. A
handler raises `A2AError`; the adapter answers in the binding's wire shape.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import TYPE_CHECKING, Any, Final, Literal

from a2a_client_errors.failures import CallFailed
from a2a_client_errors.reasons import (
    A2A_DOMAIN,
    ERROR_INFO_TYPE,
    GRPC_CODES,
    Reason,
    canonical_reason,
    row_for,
)
from a2a_client_errors.server.dedupe_store import (
    DedupeRecord,
    DedupeStore,
    MemoryDedupeStore,
    RedisDedupeStore,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping

    from a2a_client_errors.errors import CallError
    from a2a_client_errors.server.dedupe import DeduplicatingHandler, deduplicate
    from a2a_client_errors.wire import Detail

__all__ = [
    "CONTENT_TYPE",
    "A2AError",
    "DedupeRecord",
    "DedupeStore",
    "DeduplicatingHandler",
    "MemoryDedupeStore",
    "RedisDedupeStore",
    "deduplicate",
    "exception_handlers",
    "from_failure",
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
            the part that is not supported, say), as models of `a2a_client_errors.wire` or as
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


def from_failure(failure: CallFailed | CallError) -> A2AError:
    """The error a gateway tells its own caller about a peer's failure.

    A peer that broke the contract (INVALID_AGENT_RESPONSE, a reason nobody knows, a response
    that was not A2A) becomes INVALID_AGENT_RESPONSE: -32006, HTTP 500, gRPC INTERNAL, with the
    peer's reason in the metadata, never a generic internal error. Every other A2A reason
    passes through with its metadata; transport failures become internal errors.
    """
    error = failure.error if isinstance(failure, CallFailed) else failure
    if error is None:
        return A2AError(Reason.INTERNAL_ERROR, "the peer agent failed")
    reason = error.reason
    if isinstance(reason, Reason) and reason.is_a2a and reason is not Reason.INVALID_AGENT_RESPONSE:
        return A2AError(reason, error.message or reason.value, error.metadata)
    if reason is Reason.INVALID_AGENT_RESPONSE or (
        reason is not None and not isinstance(reason, Reason)
    ):
        metadata = dict(error.metadata)
        if reason is not Reason.INVALID_AGENT_RESPONSE:
            metadata["peerReason"] = str(reason)  # what the peer said that nobody knows
        return A2AError(
            Reason.INVALID_AGENT_RESPONSE, "the peer agent's response broke the protocol", metadata
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
    correlation = correlation_id or uuid.uuid4().hex
    (logger or _log).error(
        "unexpected %s, answered as an internal error [%s=%s]",
        type(exc).__name__,
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


Binding = Literal["jsonrpc", "http+json"]


def exception_handlers(
    binding: Binding, *, logger: logging.Logger | None = None
) -> dict[Any, Callable[[Any, Exception], Awaitable[Any]]]:
    """Starlette / FastAPI exception handlers that answer in one binding's wire shape.

    `A2AError` is encoded as it is; any other exception becomes `internal_error` (logged, then
    answered without a trace). Starlette's own ``HTTPException`` (a 404 route, say) keeps
    its handler. Pass the dict as it is::

        app = Starlette(routes=..., exception_handlers=exception_handlers("http+json"))
        app = FastAPI(exception_handlers=exception_handlers("jsonrpc"))

    The JSON-RPC handler answers with HTTP 200 and the request's ``id`` (read from the body,
    ``null`` when it cannot be read), as the official SDKs do.

    Args:
        binding: ``"jsonrpc"`` or ``"http+json"``.
        logger: where unexpected exceptions are logged (see `internal_error`).
    """
    if binding not in ("jsonrpc", "http+json"):
        msg = f"binding must be 'jsonrpc' or 'http+json', not {binding!r}"
        raise ValueError(msg)
    from starlette.responses import Response  # noqa: PLC0415 (only servers need Starlette)

    async def respond(request: Any, exc: Exception) -> Any:
        error = exc if isinstance(exc, A2AError) else internal_error(exc, logger=logger)
        if binding == "jsonrpc":
            body = to_jsonrpc(error, await _request_id(request))
            return Response(json.dumps(body), media_type="application/json")
        status, headers, content = to_http(error)
        return Response(content, status_code=status, headers=headers)

    return {A2AError: respond, Exception: respond}


async def _request_id(request: Any) -> str | int | None:
    """The JSON-RPC id of the request, when its body can still be read and carries one."""
    try:
        call = json.loads(await request.body())
    except Exception:  # consumed, cut short, not JSON: the id is unknown (JSON-RPC: null)
        return None
    request_id = call.get("id") if isinstance(call, dict) else None
    if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
        return request_id
    return None


def __getattr__(name: str) -> Any:
    """``deduplicate`` and its handler, imported on first use (they need a2a-sdk)."""
    if name in {"deduplicate", "DeduplicatingHandler"}:
        from a2a_client_errors.server import dedupe  # noqa: PLC0415 (lazy by design)

        value = getattr(dedupe, name)
        globals()[name] = value
        return value
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
