"""The same error model on the other side: one `A2AError`, encoded for each binding.

Servers and gateways raise (or build) one `A2AError` and encode it at the edge:

* `to_jsonrpc` — a JSON-RPC error response, ErrorInfo in ``error.data`` (recommended since
  A2A 1.0.1);
* `to_http` — the HTTP+JSON binding: status, headers (``Content-Type: application/a2a+json``)
  and a ``google.rpc.Status`` JSON body;
* `to_grpc` — a ``google.rpc.Status`` message with packed details, ready for grpc.aio's
  ``abort_with_status`` (``grpc_status.rpc_status.to_status``) and the
  ``grpc-status-details-bin`` trailer.

Codes come from the 1.0.1 table (`a2a_client_errors._reasons`). A gateway that must tell its
own caller about a peer's failure uses `from_failure`: a peer that broke the contract becomes
INVALID_AGENT_RESPONSE (-32006 / 500 / INTERNAL), never a generic -32603.

An exception nobody expected becomes `internal_error`: -32603 / 500 / INTERNAL with a generic
message and a correlation id in the ErrorInfo metadata, the original logged with that id,
never sent.

Adapters, each in its own module and importable from here:

* `with_a2a_errors` (``server/handler.py``) wraps an a2a-sdk ``RequestHandler``, so that an
  agent built on a2a-sdk's own server answers `A2AError` on each of its bindings;
* `A2AErrorMiddleware` and `exception_handlers` (``server/starlette.py``) for Starlette,
  FastAPI and other ASGI apps (JSON-RPC or HTTP+JSON);
* `A2AErrorInterceptor` (``server/grpc.py``) for ``grpc.aio`` servers (extra ``grpc``).

`deduplicate` (``server/dedupe.py``) wraps an a2a-sdk ``RequestHandler`` so that a resent
message runs once per caller, and says so in the card (`DEDUPLICATE_EXTENSION`) and on each
answer; it remembers messages in a `MemoryDedupeStore` or, for a fleet, a `RedisDedupeStore`,
and refuses a message its store cannot take as not processed (503 with ``Retry-After``, which
`A2AErrorMiddleware` completes over HTTP; gRPC ``UNAVAILABLE``).

A handler raises `A2AError`; the adapter answers in the binding's wire shape. An error that
cannot be encoded (a message that is not text, a lone surrogate, a detail the binding cannot
carry, a gRPC trailer too large for a client to accept) takes one path on every adapter,
`encode_or_internal`: the generic internal error with a correlation id, the original logged
with that id and never sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION
from a2a_client_errors.server._dedupe_store import (
    Claim,
    DedupeRecord,
    DedupeStore,
    MemoryDedupeStore,
    RedisDedupeStore,
)
from a2a_client_errors.server._encoding import (
    CONTENT_TYPE,
    CORRELATION_KEY,
    GRPC_TRAILER_BUDGET,
    RELAY_LIMITS,
    A2AError,
    RelayLimits,
    encode_or_internal,
    from_failure,
    grpc_status,
    internal_error,
    to_grpc,
    to_http,
    to_jsonrpc,
)

if TYPE_CHECKING:
    from a2a_client_errors.server._dedupe import (
        CREDENTIAL_HEADERS,
        DeduplicatingHandler,
        caller_of,
        dedupe_extension,
        deduplicate,
    )
    from a2a_client_errors.server._grpc import A2AErrorInterceptor
    from a2a_client_errors.server._handler import A2AErrorHandler, with_a2a_errors
    from a2a_client_errors.server._starlette import A2AErrorMiddleware, exception_handlers

__all__ = [
    "CONTENT_TYPE",
    "CORRELATION_KEY",
    "CREDENTIAL_HEADERS",
    "DEDUPLICATE_EXTENSION",
    "GRPC_TRAILER_BUDGET",
    "RELAY_LIMITS",
    "A2AError",
    "A2AErrorHandler",
    "A2AErrorInterceptor",
    "A2AErrorMiddleware",
    "Claim",
    "DedupeRecord",
    "DedupeStore",
    "DeduplicatingHandler",
    "MemoryDedupeStore",
    "RedisDedupeStore",
    "RelayLimits",
    "caller_of",
    "dedupe_extension",
    "deduplicate",
    "encode_or_internal",
    "exception_handlers",
    "from_failure",
    "grpc_status",
    "internal_error",
    "to_grpc",
    "to_http",
    "to_jsonrpc",
    "with_a2a_errors",
]


def __getattr__(name: str) -> Any:
    """The adapters, imported on first use (they need a2a-sdk, Starlette, or grpcio)."""
    module: Any
    if name in {
        "deduplicate",
        "DeduplicatingHandler",
        "caller_of",
        "dedupe_extension",
        "CREDENTIAL_HEADERS",
    }:
        from a2a_client_errors.server import _dedupe  # noqa: PLC0415 (lazy by design)

        module = _dedupe
    elif name in {"with_a2a_errors", "A2AErrorHandler"}:
        from a2a_client_errors.server import _handler  # noqa: PLC0415

        module = _handler
    elif name in {"exception_handlers", "A2AErrorMiddleware", "Binding"}:
        from a2a_client_errors.server import _starlette  # noqa: PLC0415

        module = _starlette
    elif name == "A2AErrorInterceptor":
        from a2a_client_errors.server import _grpc  # noqa: PLC0415

        module = _grpc
    else:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(module, name)
    globals()[name] = value
    return value
