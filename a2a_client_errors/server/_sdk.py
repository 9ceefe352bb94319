"""Every a2a-sdk name and shape the server adapters use that differs between 0.3 and 1.x.

`with_a2a_errors` and `deduplicate` wrap an a2a-sdk ``RequestHandler`` on either line; this
module is the only place that knows which line is installed (`LINE`, chosen once, at import)
and how it spells things:

* types: protobuf (``a2a.types.a2a_pb2``) on 1.x; pydantic (``a2a.types``) on 0.3;
* an A2A error: 1.x raises an exception per reason (``a2a.utils.errors.TaskNotFoundError``);
  0.3 a ``ServerError`` around a model per JSON-RPC code
  (``ServerError(error=TaskNotFoundError(...))``);
* reading a task: ``GetTaskRequest`` / 0.3 ``TaskQueryParams`` (``on_get_task`` on both);
* following a task: ``on_subscribe_to_task`` / 0.3 ``on_resubscribe_to_task``;
* listing tasks: ``on_list_tasks`` / 0.3 none (A2A 0.3 has no ListTasks);
* the tenant: ``context.tenant``, ``request.tenant`` / 0.3 none;
* task states: ``TASK_STATE_COMPLETED``... / 0.3 ``completed``...;
* a Message kept as bytes: its protobuf encoding / 0.3 its JSON (by alias);
* a copy of a Task or Message with an entry added to its ``metadata``: ``CopyFrom`` and the
  ``Struct`` / 0.3 ``model_copy`` with a new dict;
* the extensions a call activated: 0.3's ``context.activated_extensions`` (echoed in the
  response's extensions header); 1.x's context has none.

What the 0.3 line can carry of an `A2AError` (`sdk_error`): over JSON-RPC, the error's code and
message and, in ``data``, the details this library encodes (the ErrorInfo with its reason,
domain and metadata), as `to_jsonrpc` does; over gRPC the adapter aborts with the error's own
``google.rpc.Status`` on both lines. a2a-sdk 0.3's HTTP+JSON routes answer a ``ServerError``
with ``{"message": ...}`` and a status of their own table (404, 409, 415, 422, 500, 501, 502):
no ErrorInfo, no metadata, and 500 for the reasons 0.3 has no class for
(EXTENSION_SUPPORT_REQUIRED, VERSION_NOT_SUPPORTED, and the reasons of your own).
"""

from __future__ import annotations

import contextlib
import importlib
import json
from typing import TYPE_CHECKING, Any, Final

from a2a.server.request_handlers import RequestHandler

from a2a_client_errors._sdk_line import line_name, require_supported

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from a2a_client_errors.server._encoding import A2AError

__all__ = [
    "LINE",
    "MESSAGE_CLASS",
    "SDK_ERRORS",
    "SETTLED",
    "TASK_CLASS",
    "RequestHandler",
    "activate_extension",
    "agent_extension",
    "dump_message",
    "fingerprint_part",
    "get_task",
    "history_length",
    "list_tasks",
    "load_message",
    "marked",
    "put_extension",
    "sdk_error",
    "sdk_reason",
    "subscribe",
    "tenant_of",
]


def _line() -> str:
    """``"1"`` or ``"0.3"``: the installed a2a-sdk's line; refuse an a2a-sdk not supported."""
    require_supported()
    return "0.3" if line_name() == "0.3" else "1"


LINE: Final = _line()
"""The a2a-sdk line installed: ``"1"`` or ``"0.3"``."""

_errors: Any = importlib.import_module("a2a.utils.errors")
_types: Any = importlib.import_module("a2a.types" if LINE == "0.3" else "a2a.types.a2a_pb2")

TASK_CLASS: type[Any] = _types.Task
"""a2a-sdk's ``Task`` (protobuf or pydantic)."""
MESSAGE_CLASS: type[Any] = _types.Message
"""a2a-sdk's ``Message`` (protobuf or pydantic)."""
SDK_ERRORS: tuple[type[BaseException], ...] = (
    (_errors.ServerError,) if LINE == "0.3" else (_errors.A2AError,)
)
"""The exceptions a2a-sdk's own routes answer as A2A errors (they pass the adapters as they are)."""

_STATE = _types.TaskState
SETTLED: Final[frozenset[Any]] = frozenset(
    getattr(_STATE, name if LINE == "0.3" else f"TASK_STATE_{name.upper()}")
    for name in ("completed", "canceled", "failed", "rejected", "input_required", "auth_required")
)
"""Terminal and interrupted task states: a stream of the task ends there."""


# --- errors ------------------------------------------------------------------------------------

_MODELS: dict[str, Any]
if LINE == "0.3":
    _MODELS = {
        "TASK_NOT_FOUND": _types.TaskNotFoundError,
        "TASK_NOT_CANCELABLE": _types.TaskNotCancelableError,
        "PUSH_NOTIFICATION_NOT_SUPPORTED": _types.PushNotificationNotSupportedError,
        "UNSUPPORTED_OPERATION": _types.UnsupportedOperationError,
        "CONTENT_TYPE_NOT_SUPPORTED": _types.ContentTypeNotSupportedError,
        "INVALID_AGENT_RESPONSE": _types.InvalidAgentResponseError,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED": _types.AuthenticatedExtendedCardNotConfiguredError,
        "INVALID_PARAMS": _types.InvalidParamsError,
        "INVALID_REQUEST": _types.InvalidRequestError,
        "METHOD_NOT_FOUND": _types.MethodNotFoundError,
        "PARSE_ERROR": _types.JSONParseError,
        "INTERNAL_ERROR": _types.InternalError,
    }
else:
    _MODELS = {**_errors.A2A_REASON_TO_ERROR, "PARSE_ERROR": _errors.JSONParseError}
_REASONS: Final[dict[type[Any], str]] = {cls: reason for reason, cls in _MODELS.items()}


def sdk_error(error: A2AError) -> Exception:
    """The a2a-sdk exception its routes encode as ``error`` (its code, message, details).

    1.x: the exception of its reason (a2a-sdk's own class: it looks codes up by exact type),
    the metadata as its ``data`` (a2a-sdk builds the ErrorInfo); a reason it does not know is
    its ``InternalError``. 0.3: ``ServerError`` around the model of its reason, or a plain
    ``JSONRPCError`` with the reason's JSON-RPC code, the details in ``data``.
    """
    if LINE == "0.3":
        code, _, _ = error.codes
        model = _MODELS.get(error.reason)
        data = error.details() or None
        if model is None:
            body = _types.JSONRPCError(code=code, message=error.message, data=data)
        else:
            body = model(message=error.message, data=data)
        wrapped: Exception = _errors.ServerError(error=body)
        return wrapped
    cls = _MODELS.get(error.reason, _errors.InternalError)
    metadata: dict[str, str] = dict(error.metadata)
    if cls is _errors.InvalidParamsError:
        # a2a-sdk reads data["errors"] as its own list of field violations
        metadata.pop("errors", None)
    made: Exception = cls(message=error.message, data=metadata or None)
    return made


def sdk_reason(exc: BaseException) -> str | None:
    """The reason of an a2a-sdk error (``"TASK_NOT_FOUND"``), or None for any other exception."""
    if not isinstance(exc, SDK_ERRORS):
        return None
    kind = type(getattr(exc, "error", None)) if LINE == "0.3" else type(exc)
    return _REASONS.get(kind)


# --- requests ----------------------------------------------------------------------------------


def tenant_of(params: Any, context: Any) -> str:
    """The call's tenant (1.x: the context's, else the request's; 0.3 has none: ``""``)."""
    return str(getattr(context, "tenant", "") or getattr(params, "tenant", "") or "")


def history_length(params: Any) -> int | None:
    """The history length a send asked for, or None."""
    configuration = getattr(params, "configuration", None)
    if configuration is None:
        return None
    if LINE == "0.3":
        length = configuration.history_length
        return length if isinstance(length, int) else None
    return int(configuration.history_length) if configuration.HasField("history_length") else None


async def get_task(handler: Any, task_id: str, params: Any, context: Any) -> Any:
    """The task ``handler`` holds (``on_get_task``), with the history the send asked for."""
    length = history_length(params)
    if LINE == "0.3":
        request = _types.TaskQueryParams(id=task_id, history_length=length)
    else:
        request = _types.GetTaskRequest(id=task_id, tenant=tenant_of(params, context))
        if length is not None:
            request.history_length = length
    return await handler.on_get_task(request, context)


def subscribe(handler: Any, task: Any, params: Any, context: Any) -> AsyncGenerator[Any]:
    """The task as it stands, then its events from now on.

    1.x ``on_subscribe_to_task`` sends the task first itself (A2A 1.0's SubscribeToTask).
    0.3's ``on_resubscribe_to_task`` sends only the events that come next, so ``task`` (as
    just read) goes first: a subscriber to a task that is not moving hears of it at once.
    """
    if LINE == "0.3":
        return _task_then(
            task, handler.on_resubscribe_to_task(_types.TaskIdParams(id=task.id), context)
        )
    request = _types.SubscribeToTaskRequest(id=task.id, tenant=tenant_of(params, context))
    subscribed: AsyncGenerator[Any] = handler.on_subscribe_to_task(request, context)
    return subscribed


async def _task_then(task: Any, events: AsyncGenerator[Any]) -> AsyncGenerator[Any]:
    """``task``, then ``events`` (closed with this generator)."""
    async with contextlib.aclosing(events):
        yield task
        async for event in events:
            yield event


async def list_tasks(handler: Any, params: Any, context: Any, since: Any, limit: int) -> list[Any]:
    """Tasks changed since ``since`` in the send's context (1.x ``on_list_tasks``; 0.3: none)."""
    if LINE == "0.3":
        return []  # A2A 0.3 has no ListTasks
    request = _types.ListTasksRequest(tenant=tenant_of(params, context), page_size=limit)
    request.status_timestamp_after.FromDatetime(since)
    if params.message.context_id:
        request.context_id = params.message.context_id
    page = await handler.on_list_tasks(request, context)
    return list(page.tasks)


# --- messages ----------------------------------------------------------------------------------


def fingerprint_part(part: Any) -> bytes:
    """A part's bytes, the same for the same part over any binding (deterministic)."""
    if LINE == "0.3":
        shape = part.model_dump(mode="json", by_alias=True, exclude_none=True)
        return json.dumps(shape, sort_keys=True, ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
    data: bytes = part.SerializeToString(deterministic=True)
    return data


def dump_message(message: Any) -> bytes:
    """A Message as bytes to keep."""
    if LINE == "0.3":
        dumped: bytes = message.model_dump_json(by_alias=True, exclude_none=True).encode()
        return dumped
    serialized: bytes = message.SerializeToString()
    return serialized


def load_message(data: bytes) -> Any:
    """The Message `dump_message` kept (raises on bytes that are not one)."""
    if LINE == "0.3":
        return _types.Message.model_validate_json(data)
    message = _types.Message()
    message.ParseFromString(data)
    return message


def marked(event: Any, key: str, value: dict[str, Any]) -> Any:
    """A copy of a Task or Message with ``metadata[key] = value``; any other event as it is.

    The event itself is left untouched (it may be the task store's own object).
    """
    if not isinstance(event, (TASK_CLASS, MESSAGE_CLASS)):
        return event
    if LINE == "0.3":
        return event.model_copy(update={"metadata": {**(event.metadata or {}), key: value}})
    copy = type(event)()
    copy.CopyFrom(event)
    copy.metadata[key] = value
    return copy


def activate_extension(context: Any, uri: str) -> None:
    """Say that the call used the extension ``uri``, where the context can (0.3: echoed)."""
    activated = getattr(context, "activated_extensions", None)
    if isinstance(activated, set):
        activated.add(uri)


# --- the card ----------------------------------------------------------------------------------


def agent_extension(uri: str, description: str, params: dict[str, Any]) -> Any:
    """An a2a-sdk ``AgentExtension`` (never required)."""
    return _types.AgentExtension(uri=uri, description=description, required=False, params=params)


def put_extension(card: Any, extension: Any) -> None:
    """Put ``extension`` in ``card.capabilities.extensions``, replacing one of the same URI."""
    if LINE == "0.3":
        listed = list(card.capabilities.extensions or [])
        same = [i for i, e in enumerate(listed) if e.uri == extension.uri]
        if same:
            listed[same[0]] = extension
        else:
            listed.append(extension)
        card.capabilities.extensions = listed
        return
    for existing in card.capabilities.extensions:
        if existing.uri == extension.uri:
            existing.CopyFrom(extension)
            return
    card.capabilities.extensions.append(extension)
