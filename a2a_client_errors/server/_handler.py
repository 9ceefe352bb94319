"""`with_a2a_errors`: an a2a-sdk agent raises `A2AError`, every binding answers it.

a2a-sdk's routes and its gRPC handler answer only a2a-sdk's own error classes; any other
exception (this library's `A2AError` among them) becomes a generic internal error, its text
included: VERSION_NOT_SUPPORTED raised by an executor leaves as ``-32603 "VERSION_NOT_SUPPORTED:
..."`` on JSON-RPC, a 500 "unknown exception" on HTTP+JSON, UNKNOWN on gRPC. Wrap the handler::

    handler = with_a2a_errors(DefaultRequestHandler(agent_executor=..., task_store=..., ...))

and pass the wrapper wherever the handler goes (``create_jsonrpc_routes``,
``create_rest_routes``, ``GrpcHandler``). Then, whatever raises under it (the executor, a
task store, a hook, another wrapper):

* An `A2AError` leaves as the A2A error it names, on every binding, unary or streaming,
  before or after the first event. Over JSON-RPC and HTTP+JSON it becomes the a2a-sdk error
  of its reason (``TaskNotFoundError``, ``VersionNotSupportedError``, ...) with its message,
  and its metadata as the ErrorInfo's metadata, which a2a-sdk's routes encode with the codes
  of the 1.0.1 table. Over gRPC (a2a-sdk's ``GrpcHandler`` sends no metadata) the call is
  aborted with the error's own ``google.rpc.Status``: code, message, ErrorInfo with its
  metadata, extra details.
* Any other exception leaves as the generic internal error (-32603 / 500 / INTERNAL) with a
  correlation id (`internal_error`): the traceback logged once, here, with that id; its text
  never sent.
* An `A2AError` that cannot be encoded takes `encode_or_internal`'s path (internal error).
* a2a-sdk's own errors, a gRPC abort already under way, and Starlette's ``HTTPException`` (an
  HTTP answer meant as it is: `deduplicate`'s 503 to a send it cannot take) pass through as
  they are.

What a2a-sdk's HTTP routes cannot carry: they send the ErrorInfo alone (extra details travel
on gRPC only), and only the reasons a2a-sdk knows; an `A2AError` of another reason (one of
your own, RATE_LIMITED...) leaves there as INTERNAL_ERROR with its message and metadata.

On a2a-sdk 0.3 the same wrapper answers through 0.3's ``ServerError`` (JSON-RPC: the code and
the details in ``data``) and gRPC as above; 0.3's HTTP+JSON routes send a status of their own
table and no details (``server/_sdk.py`` says what differs between the lines).

It composes with `deduplicate`, in either order. ``with_a2a_errors(deduplicate(handler))``
is the one to prefer: the deduplicating wrapper then sees a2a-sdk's errors from the handler,
as it expects, and every error it lets through is answered here.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

from a2a_client_errors.server._encoding import (
    A2AError,
    encode_or_internal,
    grpc_status,
    internal_error,
)
from a2a_client_errors.server._sdk import SDK_ERRORS, RequestHandler, sdk_error

if TYPE_CHECKING:
    import logging
    from collections.abc import AsyncGenerator, Awaitable, Callable

    from a2a.server.context import ServerCallContext
    from a2a.server.events.event_queue import Event
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        DeleteTaskPushNotificationConfigRequest,
        GetExtendedAgentCardRequest,
        GetTaskPushNotificationConfigRequest,
        GetTaskRequest,
        ListTaskPushNotificationConfigsRequest,
        ListTaskPushNotificationConfigsResponse,
        ListTasksRequest,
        ListTasksResponse,
        Message,
        SendMessageRequest,
        SubscribeToTaskRequest,
        Task,
        TaskPushNotificationConfig,
    )

__all__ = ["A2AErrorHandler", "to_sdk_error", "with_a2a_errors"]


def to_sdk_error(error: A2AError) -> Exception:
    """The a2a-sdk error a2a-sdk's routes encode as ``error`` (its reason, message, details).

    On a2a-sdk 1.x, a reason a2a-sdk does not know becomes its ``InternalError`` (-32603 / 500
    / INTERNAL); on 0.3, a ``JSONRPCError`` with the reason's code. The class is a2a-sdk's own,
    never a subclass: a2a-sdk looks its codes up by exact type.
    """
    return sdk_error(error)


def _grpc_context(context: ServerCallContext) -> Any:
    """The ``grpc.aio`` servicer context of a call a2a-sdk's ``GrpcHandler`` serves, or None."""
    state = getattr(context, "state", None)
    candidate = state.get("grpc_context") if isinstance(state, dict) else None
    return candidate if callable(getattr(candidate, "abort_with_status", None)) else None


def _is_abort(exc: BaseException) -> bool:
    aio = sys.modules.get("grpc.aio")
    return aio is not None and isinstance(exc, aio.AbortError)


def _is_http_exception(exc: BaseException) -> bool:
    """Whether ``exc`` is Starlette's ``HTTPException`` (only imported where it is used)."""
    module = sys.modules.get("starlette.exceptions")
    return module is not None and isinstance(exc, module.HTTPException)


class A2AErrorHandler(RequestHandler):
    """A ``RequestHandler`` whose errors leave as A2A errors (see the module docstring).

    Made by `with_a2a_errors`; every attribute it does not define is the wrapped handler's.

    Attributes:
        inner: the wrapped handler.
        logger: where unexpected exceptions are logged (see `internal_error`).
    """

    def __init__(self, inner: RequestHandler, *, logger: logging.Logger | None = None) -> None:
        self.inner = inner
        self.logger = logger

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: aclose, task_store, agent_executor, ...
        if name == "inner":  # not yet set (unpickling, copy): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"with_a2a_errors({self.inner!r})"

    @property
    def _untyped(self) -> Any:
        """The wrapped handler, for the methods only a2a-sdk 0.3 names (typed on 1.x's)."""
        return self.inner

    async def _fail(self, exc: Exception, context: ServerCallContext) -> None:
        """Raise the answer to ``exc``; return when ``exc`` is to go on as it is."""
        if isinstance(exc, SDK_ERRORS) or _is_abort(exc) or _is_http_exception(exc):
            return
        error = exc if isinstance(exc, A2AError) else internal_error(exc, logger=self.logger)
        servicer = _grpc_context(context)
        if servicer is not None:
            status = encode_or_internal(grpc_status, error, logger=self.logger)
            await servicer.abort_with_status(status)  # raises grpc.aio.AbortError
        raise encode_or_internal(to_sdk_error, error, logger=self.logger) from None

    async def _call(self, method: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        params, context = args
        try:
            return await method(params, context)
        except Exception as exc:
            await self._fail(exc, context)
            raise

    async def _stream(
        self, events: AsyncGenerator[Event], context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        async with contextlib.aclosing(events):
            try:
                async for event in events:
                    yield event
            except Exception as exc:
                await self._fail(exc, context)
                raise

    # -- every method of the interface, each answered the same way ---------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """SendMessage; its errors answered (see the module docstring)."""
        result: Task | Message = await self._call(self.inner.on_message_send, params, context)
        return result

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """SendStreamingMessage; an error before or after the first event answered."""
        async for event in self._stream(
            self.inner.on_message_send_stream(params, context), context
        ):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """SubscribeToTask; an error before or after the first event answered."""
        events = self.inner.on_subscribe_to_task(params, context)
        async for event in self._stream(events, context):
            yield event

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """GetTask; its errors answered."""
        result: Task | None = await self._call(self.inner.on_get_task, params, context)
        return result

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """ListTasks; its errors answered."""
        result: ListTasksResponse = await self._call(self.inner.on_list_tasks, params, context)
        return result

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """CancelTask; its errors answered."""
        result: Task | None = await self._call(self.inner.on_cancel_task, params, context)
        return result

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """CreateTaskPushNotificationConfig; its errors answered."""
        method = self.inner.on_create_task_push_notification_config
        result: TaskPushNotificationConfig = await self._call(method, params, context)
        return result

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """GetTaskPushNotificationConfig; its errors answered."""
        method = self.inner.on_get_task_push_notification_config
        result: TaskPushNotificationConfig = await self._call(method, params, context)
        return result

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """ListTaskPushNotificationConfigs; its errors answered."""
        method = self.inner.on_list_task_push_notification_configs
        result: ListTaskPushNotificationConfigsResponse = await self._call(method, params, context)
        return result

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """DeleteTaskPushNotificationConfig; its errors answered."""
        await self._call(self.inner.on_delete_task_push_notification_config, params, context)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """GetExtendedAgentCard; its errors answered."""
        result: AgentCard = await self._call(self.inner.on_get_extended_agent_card, params, context)
        return result

    # -- a2a-sdk 0.3's names for three of them -------------------------------------------------

    async def on_resubscribe_to_task(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Resubscribe (a2a-sdk 0.3); an error before or after the first event answered."""
        events = self._untyped.on_resubscribe_to_task(params, context)
        async for event in self._stream(events, context):
            yield event

    async def on_set_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        """SetTaskPushNotificationConfig (a2a-sdk 0.3); its errors answered."""
        return await self._call(self._untyped.on_set_task_push_notification_config, params, context)

    async def on_list_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        """ListTaskPushNotificationConfig (a2a-sdk 0.3); its errors answered."""
        return await self._call(
            self._untyped.on_list_task_push_notification_config, params, context
        )


def with_a2a_errors(
    handler: RequestHandler, *, logger: logging.Logger | None = None
) -> A2AErrorHandler:
    """Wrap an a2a-sdk ``RequestHandler`` so that `A2AError` leaves as the A2A error it names.

    Args:
        handler: the handler to wrap (a ``DefaultRequestHandler``, or another wrapper such as
            `deduplicate`'s).
        logger: where unexpected exceptions are logged (default: ``a2a_client_errors.server``).

    Returns:
        The wrapping handler, to pass to ``create_jsonrpc_routes``, ``create_rest_routes`` or
        ``GrpcHandler`` in place of ``handler``.
    """
    return A2AErrorHandler(handler, logger=logger)
