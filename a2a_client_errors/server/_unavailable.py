"""The answer of an agent that cannot take a message now: not processed, send it again later.

`deduplicate` refuses a send, before running anything, when its store cannot keep another
record (full, unreachable, refusing writes): its card promises that a resend is never run
twice, and a message it cannot remember could be. The answer says so in the terms every
client reads as *not processed*, to be retried after a delay (`Delivery.NOT_PROCESSED`,
``retry``; design.md, "A resend after an unknown outcome"):

* JSON-RPC: HTTP 503 with ``Retry-After``, and the JSON-RPC error -32000 (a server error of
  the implementation's own, outside the codes A2A reserves) whose ``data`` holds the details;
* HTTP+JSON: HTTP 503 with ``Retry-After``, and a ``google.rpc.Status`` body ``UNAVAILABLE``
  with the details;
* gRPC: ``UNAVAILABLE`` with the details in ``grpc-status-details-bin``, and
  ``grpc-retry-pushback-ms``.

The details: an ``ErrorInfo`` of this project's domain (`DOMAIN`, not A2A's: A2A has no error
for "not now"), with the reason (`STORE_UNAVAILABLE`) and ``retryAfter`` in its metadata, then
a ``RetryInfo`` with the delay.

a2a-sdk's HTTP routes cannot send a status or a header of a handler's choosing, so an HTTP
answer is completed by `A2AErrorMiddleware` around the app: the handler notes the refusal
(`note`) in the request's slot (`refusals`, a context variable the middleware sets), and the
middleware answers it in place of what the routes made. Without the middleware, a JSON-RPC
route answers what Starlette makes of the ``HTTPException`` the handler raises (503 with
``Retry-After``, a plain-text body: still *not processed*), and an HTTP+JSON route a 500
internal error (*unknown*: a client looks it up, and never makes a second task).
"""

from __future__ import annotations

import contextvars
import json
import math
from dataclasses import dataclass
from typing import Any, Final

from a2a_client_errors._reasons import ERROR_INFO_TYPE, GRPC_CODES
from a2a_client_errors.server._encoding import CONTENT_TYPE

__all__ = [
    "DOMAIN",
    "JSONRPC_CODE",
    "PUSHBACK_KEY",
    "RETRY_INFO_TYPE",
    "STORE_UNAVAILABLE",
    "Unavailable",
    "details",
    "grpc_answer",
    "http_answer",
    "http_exception",
    "jsonrpc_answer",
    "note",
    "refusals",
    "retry_after_header",
]

DOMAIN: Final = "a2a-client-errors"
"""The ErrorInfo domain of the refusal (this project's, like the extension's URI)."""
STORE_UNAVAILABLE: Final = "DEDUPE_STORE_UNAVAILABLE"
"""The reason of the refusal: the store is full (and holds nothing past its ttl), cannot be
reached, or refused the write (the store's own WARNING says which)."""
JSONRPC_CODE: Final = -32000
"""The JSON-RPC code of the refusal: a server error of the implementation's own."""
RETRY_INFO_TYPE: Final = "type.googleapis.com/google.rpc.RetryInfo"
PUSHBACK_KEY: Final = "grpc-retry-pushback-ms"
"""The gRPC trailer that tells a client when to retry, in milliseconds."""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A send refused before anything ran: the agent cannot take it now.

    Attributes:
        reason: the ErrorInfo reason (`STORE_UNAVAILABLE`).
        message: the message for humans.
        retry_after: the seconds after which to send it again.
        binding: ``"jsonrpc"``, ``"http+json"`` or ``"grpc"``: the binding it came over.
        request_id: the JSON-RPC id, when the handler knows it (else the middleware reads it).
    """

    reason: str
    message: str
    retry_after: float
    binding: str = "http+json"
    request_id: str | int | None = None


refusals: contextvars.ContextVar[list[Unavailable] | None] = contextvars.ContextVar(
    "a2a_client_errors_refusals", default=None
)
"""The refusals of the request being served (set by `A2AErrorMiddleware` for each request)."""


def note(refusal: Unavailable) -> bool:
    """Tell the middleware serving this request (if any) to answer ``refusal``."""
    slot = refusals.get()
    if slot is None:
        return False
    slot.append(refusal)
    return True


def retry_after_header(seconds: float) -> str:
    """``Retry-After``: whole seconds, at least one (HTTP has no finer unit)."""
    return str(max(1, math.ceil(seconds))) if math.isfinite(seconds) else "1"


def _duration(seconds: float) -> str:
    """A ``google.protobuf.Duration`` in ProtoJSON (``"1.500s"``)."""
    return f"{max(0.0, seconds):.3f}s" if math.isfinite(seconds) else "1.000s"


def details(refusal: Unavailable) -> list[dict[str, Any]]:
    """The ErrorInfo and the RetryInfo, in ProtoJSON."""
    return [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": refusal.reason,
            "domain": DOMAIN,
            "metadata": {"retryAfter": retry_after_header(refusal.retry_after)},
        },
        {"@type": RETRY_INFO_TYPE, "retryDelay": _duration(refusal.retry_after)},
    ]


def _headers(refusal: Unavailable, content_type: str) -> dict[str, str]:
    return {"Content-Type": content_type, "Retry-After": retry_after_header(refusal.retry_after)}


def jsonrpc_answer(
    refusal: Unavailable, request_id: str | int | None
) -> tuple[int, dict[str, str], bytes]:
    """(503, headers, the JSON-RPC error response)."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": JSONRPC_CODE, "message": refusal.message, "data": details(refusal)},
    }
    return 503, _headers(refusal, "application/json"), json.dumps(body).encode()


def http_answer(refusal: Unavailable) -> tuple[int, dict[str, str], bytes]:
    """(503, headers, the ``google.rpc.Status`` JSON body), for HTTP+JSON."""
    body = {
        "error": {
            "code": 503,
            "status": "UNAVAILABLE",
            "message": refusal.message,
            "details": details(refusal),
        }
    }
    return 503, _headers(refusal, CONTENT_TYPE), json.dumps(body).encode()


def grpc_answer(refusal: Unavailable) -> tuple[Any, str, tuple[tuple[str, str | bytes], ...]]:
    """(``grpc.StatusCode.UNAVAILABLE``, message, trailing metadata) for ``context.abort``.

    The trailers hold the ``google.rpc.Status`` with its details and the retry pushback.
    """
    import grpc  # noqa: PLC0415 (only gRPC servers get here)
    from google.protobuf import any_pb2, duration_pb2  # noqa: PLC0415
    from google.rpc import error_details_pb2, status_pb2  # noqa: PLC0415

    info = error_details_pb2.ErrorInfo(
        reason=refusal.reason,
        domain=DOMAIN,
        metadata={"retryAfter": retry_after_header(refusal.retry_after)},
    )
    delay = duration_pb2.Duration()
    delay.FromNanoseconds(int(max(0.0, refusal.retry_after) * 1e9))
    status = status_pb2.Status(code=GRPC_CODES["UNAVAILABLE"], message=refusal.message)
    for detail in (info, error_details_pb2.RetryInfo(retry_delay=delay)):
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    pushback = str(max(0, math.ceil(refusal.retry_after * 1000)))
    trailers = (("grpc-status-details-bin", status.SerializeToString()), (PUSHBACK_KEY, pushback))
    return grpc.StatusCode.UNAVAILABLE, refusal.message, trailers


def http_exception(refusal: Unavailable) -> Exception | None:
    """Starlette's ``HTTPException`` of the refusal (503, ``Retry-After``), or None.

    a2a-sdk's JSON-RPC routes let an ``HTTPException`` through (on both lines), and Starlette
    answers it with its status and headers; None where Starlette is not installed.
    """
    try:
        from starlette.exceptions import HTTPException  # noqa: PLC0415 (HTTP servers only)
    except ImportError:
        return None
    headers = {"Retry-After": retry_after_header(refusal.retry_after)}
    return HTTPException(503, detail=refusal.message, headers=headers)
