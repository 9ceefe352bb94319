"""The ``grpc.aio`` server interceptor: servicers raise `A2AError`, callers get its status.

grpcio is imported by this module only (extra ``grpc``), and this module only when
``a2a_client_errors.server.A2AErrorInterceptor`` is first read: importing
``a2a_client_errors.server`` never needs grpcio.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from a2a_client_errors.server._encoding import (
    A2AError,
    encode_or_internal,
    grpc_status,
    internal_error,
)

try:
    import grpc
    import grpc.aio
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "a2a_client_errors.server.A2AErrorInterceptor needs grpcio: "
        "pip install 'a2a-client-errors[grpc]'",
        name=exc.name,
    ) from exc

if TYPE_CHECKING:
    import logging
    from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["A2AErrorInterceptor"]


class A2AErrorInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """A ``grpc.aio`` server interceptor: servicers raise `A2AError`, callers get its status.

    An `A2AError` raised by a method (unary or streaming, before or after its first message)
    ends the call with its ``google.rpc.Status``: the code of the 1.0.1 table, the message,
    and the ErrorInfo (and any extra details) in the ``grpc-status-details-bin`` trailer. Any
    other exception becomes `a2a_client_errors.server.internal_error` (INTERNAL, a generic
    message, a correlation id; the original logged with it), and so does an `A2AError` that
    cannot be encoded (``a2a_client_errors.server.encode_or_internal``: a message that is not
    text, a detail protobuf cannot parse, trailers past ``GRPC_TRAILER_BUDGET``), never
    UNKNOWN with the exception's text. ``context.abort`` by the servicer itself passes
    through untouched::

        server = grpc.aio.server(interceptors=[A2AErrorInterceptor()])

    Args:
        logger: where unexpected exceptions are logged (see ``internal_error``).
    """

    def __init__(self, *, logger: logging.Logger | None = None) -> None:
        self.logger = logger

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[Any]],
        handler_call_details: Any,
    ) -> Any:
        """Wrap the method's handler so that its errors are encoded."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        serializers = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._unary(handler.unary_unary), **serializers
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._unary(handler.stream_unary), **serializers
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._streaming(handler.unary_stream), **serializers
            )
        return grpc.stream_stream_rpc_method_handler(
            self._streaming(handler.stream_stream), **serializers
        )

    def _unary(self, behavior: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        async def guarded(request: Any, context: Any) -> Any:
            try:
                result = behavior(request, context)
                return await result if inspect.isawaitable(result) else result
            except Exception as exc:  # encoded below; an abort passes through
                await self._abort(context, exc)
                raise  # pragma: no cover (abort_with_status always raises)

        return guarded

    def _streaming(self, behavior: Callable[..., Any]) -> Callable[..., AsyncIterator[Any]]:
        async def guarded(request: Any, context: Any) -> AsyncIterator[Any]:
            try:
                result = behavior(request, context)
                if hasattr(result, "__aiter__"):
                    async for message in result:
                        yield message
                elif inspect.isawaitable(result):
                    await result  # a method that writes with context.write
                else:
                    for message in result or ():
                        yield message
            except Exception as exc:  # encoded below; an abort passes through
                await self._abort(context, exc)
                raise  # pragma: no cover (abort_with_status always raises)

        return guarded

    async def _abort(self, context: Any, exc: Exception) -> None:
        """End the call with the error's status (an abort already under way goes on)."""
        if isinstance(exc, grpc.aio.AbortError):
            raise exc
        error = exc if isinstance(exc, A2AError) else internal_error(exc, logger=self.logger)
        await context.abort_with_status(encode_or_internal(grpc_status, error, logger=self.logger))
