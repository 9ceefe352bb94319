"""`deduplicate`: one task per message, however often a client sends it.

A2A lets a client resend SendMessage with the same messageId after a lost answer, and lets an
agent use the messageId to spot the duplicate (§3.3.1: MAY). No official SDK server does:
a2a-sdk's ``DefaultRequestHandler`` makes a second task and runs the executor again.
``deduplicate(handler)`` wraps any a2a-sdk ``RequestHandler`` so that it does::

    handler = deduplicate(DefaultRequestHandler(agent_executor=..., task_store=..., ...))

and the wrapper goes wherever a handler goes (the JSON-RPC and HTTP+JSON routes, ``GrpcHandler``).

The guarantee
    Within ``ttl`` seconds of the first attempt, and within one store, a SendMessage or
    SendStreamingMessage whose messageId the same caller already sent never reaches the
    wrapped handler: the executor runs once. A unary resend answers with the first attempt's
    task as it is now (``on_get_task``), or with the first answer itself when that was a
    Message. A streaming resend resumes: the task as it is now, then its events until it ends
    (``on_subscribe_to_task``); a task already terminal or interrupted is sent, and the stream
    ends. Every other method is delegated unchanged.

The key: the same caller, the same tenant, the same messageId
    The caller is ``user:<user_name>`` when ``ServerCallContext.user`` is authenticated, else
    one constant for everybody unauthenticated (`caller_identity`; pass ``identity=`` to key
    on something else, such as an API key's id). The tenant is the call's (``context.tenant``,
    else the request's ``tenant``). The three are hashed (SHA-256) into the key: two users who
    pick the same messageId get two tasks; no user name or messageId is stored as such. A
    message without a messageId is passed through.

Duplicates that arrive while the first attempt runs
    They wait (at most ``wait_timeout`` seconds) until it has made its task: a streaming first
    attempt records its task at its first event; a unary one when it answers (the handler
    interface tells the task id no sooner). A waiter that times out gets an ``InternalError``
    ("still being processed"): nothing ran, and resending later is safe.

When the first attempt fails
    * It raises before any task exists (an A2A error such as a bad taskId or content type,
      or anything else): the claim is released and the next resend runs, as a first attempt.
    * A unary attempt raises after its task was made (the executor raised: a2a-sdk has stored
      the task as FAILED, then raises): before releasing, the wrapper looks for that task with
      ``on_list_tasks`` (tasks of the caller changed since the attempt began, whose history
      holds the messageId). Found, it is recorded and every resend answers with it (a FAILED
      task is a result, not an error); not found, the claim is released.
    * A streaming attempt that raises or is disconnected after its first event keeps its
      record: the resend resumes that task.
    * A first attempt cancelled before it made anything (its client went away) releases the
      claim; a task a2a-sdk goes on making in the background then is not seen.

The limits
    * Across ``ttl``: an entry expires ``ttl`` seconds after the first attempt; a resend after
      that runs again. The default (24 h) outlasts any client's retry schedule, and an
      orchestrator that resends after its own restart, while keeping memory bounded; it should
      not outlast the task store's retention (a record of a purged task answers nothing).
    * Across stores: agents that do not share a store do not see each other's messages. The
      in-memory store is one process; `RedisDedupeStore` is a fleet.
    * Across task stores: a replica that does not hold the task (each replica with its own
      ``InMemoryTaskStore``) answers with the snapshot the Redis record keeps (the task as the
      first attempt answered it); a streaming resend there sends that snapshot and ends. A
      fleet that shares its task store answers with the live task.
    * The in-memory store keeps at most ``max_entries``; an evicted entry is forgotten.
    * A store that fails (Redis down) fails open: messages are processed without
      deduplication, and a WARNING says so.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any, Final

from a2a.server.request_handlers import RequestHandler
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import InternalError, TaskNotFoundError, UnsupportedOperationError

from a2a_client_errors.server.dedupe_store import (
    Claim,
    DedupeRecord,
    DedupeStore,
    MemoryDedupeStore,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable

    from a2a.server.context import ServerCallContext
    from a2a.server.events.event_queue import Event
    from a2a.types.a2a_pb2 import (
        AgentCard,
        CancelTaskRequest,
        DeleteTaskPushNotificationConfigRequest,
        GetExtendedAgentCardRequest,
        GetTaskPushNotificationConfigRequest,
        ListTaskPushNotificationConfigsRequest,
        ListTaskPushNotificationConfigsResponse,
        ListTasksResponse,
        SendMessageRequest,
        TaskPushNotificationConfig,
    )

__all__ = [
    "ANONYMOUS",
    "DEFAULT_TTL",
    "DEFAULT_WAIT_TIMEOUT",
    "DeduplicatingHandler",
    "caller_identity",
    "deduplicate",
    "message_key",
]

_log = logging.getLogger("a2a_client_errors.server")

DEFAULT_TTL: Final = 24 * 3600.0
"""Seconds a message is remembered (see the module docstring)."""
DEFAULT_WAIT_TIMEOUT: Final = 60.0
"""Seconds a duplicate waits for the first attempt to make its task."""
ANONYMOUS: Final = "anonymous"
"""The identity of every caller that is not authenticated."""

_SETTLED: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)
"""Terminal and interrupted states: a stream of the task ends there."""
_LOOKUP_PAGE: Final = 100


def caller_identity(context: ServerCallContext) -> str:
    """The caller part of the key: ``user:<user_name>`` if authenticated, else `ANONYMOUS`."""
    user = context.user
    if user.is_authenticated:
        return f"user:{user.user_name}"
    return ANONYMOUS


def message_key(identity: str, tenant: str, message_id: str) -> str:
    """The store key of one message: SHA-256 of the caller, the tenant and the messageId."""
    text = json.dumps([identity, tenant, message_id], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _decoded(record: DedupeRecord) -> SendMessageResponse | None:
    if not record.answer:
        return None
    answer = SendMessageResponse()
    try:
        answer.ParseFromString(record.answer)
    except Exception:  # a record from elsewhere: answer from the task store instead
        return None
    return answer


def _task_id_of(event: object) -> str:
    if isinstance(event, Task):
        return str(event.id)
    return str(getattr(event, "task_id", "") or "")


class DeduplicatingHandler(RequestHandler):
    """A ``RequestHandler`` that runs each message once (see the module docstring).

    Made by `deduplicate`; every attribute it does not define is the wrapped handler's.

    Attributes:
        inner: the wrapped handler.
        store: where messages are remembered.
        ttl: seconds a message is remembered.
        wait_timeout: seconds a duplicate waits for the first attempt's task.
        identity: the caller part of the key, from the call's context.
    """

    def __init__(
        self,
        inner: RequestHandler,
        *,
        store: DedupeStore,
        ttl: float,
        wait_timeout: float,
        identity: Callable[[ServerCallContext], str],
    ) -> None:
        self.inner = inner
        self.store = store
        self.ttl = ttl
        self.wait_timeout = wait_timeout
        self.identity = identity

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: aclose, task_store, agent_executor, ...
        if name == "inner":  # not yet set (unpickling, copy): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"deduplicate({self.inner!r}, store={self.store!r}, ttl={self.ttl:g})"

    # -- the key and the claim ---------------------------------------------------------------

    def key_of(self, params: SendMessageRequest, context: ServerCallContext) -> str | None:
        """The store key of a send, or None when its message has no messageId."""
        message_id = params.message.message_id
        if not message_id:
            return None
        tenant = context.tenant or params.tenant
        return message_key(self.identity(context), tenant, message_id)

    async def _claim(self, key: str) -> Claim:
        """Claim ``key``, or wait for the first attempt's record (claiming again if released)."""
        while True:
            claim = await self.store.claim(key, self.ttl)
            if claim.owned or claim.record is not None:
                return claim
            try:
                record = await self.store.wait(key, self.wait_timeout)
            except TimeoutError:
                raise InternalError(
                    message="a message with this messageId is still being processed; "
                    "resend it later"
                ) from None
            if record is not None:
                return Claim(owned=False, record=record)

    def _record_of(self, result: Task | Message) -> DedupeRecord:
        if isinstance(result, Message):
            answer = SendMessageResponse(message=result)
            return DedupeRecord(task_id=str(result.task_id), answer=answer.SerializeToString())
        if self.store.keeps_snapshots:
            answer = SendMessageResponse(task=result)
            return DedupeRecord(task_id=str(result.id), answer=answer.SerializeToString())
        return DedupeRecord(task_id=str(result.id))

    # -- answering a resend ------------------------------------------------------------------

    async def _current_task(
        self,
        record: DedupeRecord,
        params: SendMessageRequest,
        context: ServerCallContext,
    ) -> Task:
        """The first attempt's task as it is now, else as it was recorded."""
        if record.task_id:
            request = GetTaskRequest(id=record.task_id, tenant=params.tenant)
            if params.configuration.HasField("history_length"):
                request.history_length = params.configuration.history_length
            task: Task | None
            try:
                task = await self.inner.on_get_task(request, context)
            except TaskNotFoundError:
                task = None
            if task is not None:
                return task
        saved = _decoded(record)
        if saved is not None and saved.HasField("task"):
            return saved.task
        raise InternalError(
            message="the task this message made is not readable here; resend it later"
        )

    async def _answer(
        self, record: DedupeRecord, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        saved = _decoded(record)
        if saved is not None and saved.HasField("message"):
            return saved.message
        return await self._current_task(record, params, context)

    async def _resume(
        self, record: DedupeRecord, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        saved = _decoded(record)
        if saved is not None and saved.HasField("message"):
            yield saved.message
            return
        task = await self._current_task(record, params, context)
        if task.status.state in _SETTLED:
            yield task
            return
        subscription = self.inner.on_subscribe_to_task(
            SubscribeToTaskRequest(id=task.id, tenant=params.tenant), context
        )
        started = False
        async with contextlib.aclosing(subscription):
            try:
                async for event in subscription:
                    started = True
                    yield event
            except (UnsupportedOperationError, TaskNotFoundError):
                # settled between the read and the subscription, or running elsewhere
                if started:
                    raise
                yield await self._current_task(record, params, context)

    # -- after a failed first attempt --------------------------------------------------------

    async def _made_despite(
        self,
        params: SendMessageRequest,
        context: ServerCallContext,
        since: datetime.datetime,
    ) -> Task | None:
        """The task a failed unary attempt made, if the task list shows one."""
        request = ListTasksRequest(tenant=params.tenant, page_size=_LOOKUP_PAGE)
        request.status_timestamp_after.FromDatetime(since)
        if params.message.context_id:
            request.context_id = params.message.context_id
        try:
            page = await self.inner.on_list_tasks(request, context)
        except Exception:  # no listing here: nothing can be found
            _log.debug("task lookup after a failed first attempt failed", exc_info=True)
            return None
        message_id = params.message.message_id
        for task in page.tasks:
            if any(message.message_id == message_id for message in task.history):
                return task
        return None

    # -- SendMessage -------------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """SendMessage, run once per messageId (see the module docstring)."""
        key = self.key_of(params, context)
        if key is None:
            return await self.inner.on_message_send(params, context)
        claim = await self._claim(key)
        if claim.record is not None:
            return await self._answer(claim.record, params, context)
        since = datetime.datetime.now(datetime.timezone.utc)
        try:
            result = await self.inner.on_message_send(params, context)
        except Exception:
            made = await self._made_despite(params, context, since)
            if made is not None:
                await self.store.record(key, claim.token, self._record_of(made), self.ttl)
            else:
                await self.store.release(key, claim.token)
            raise
        except BaseException:  # cancelled: give the message back
            await self.store.release(key, claim.token)
            raise
        await self.store.record(key, claim.token, self._record_of(result), self.ttl)
        return result

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """SendStreamingMessage, run once per messageId; a resend resumes the first's task."""
        key = self.key_of(params, context)
        if key is None:
            async with contextlib.aclosing(
                self.inner.on_message_send_stream(params, context)
            ) as events:
                async for event in events:
                    yield event
            return
        claim = await self._claim(key)
        if claim.record is not None:
            async with contextlib.aclosing(self._resume(claim.record, params, context)) as rest:
                async for event in rest:
                    yield event
            return
        recorded: DedupeRecord | None = None
        try:
            async with contextlib.aclosing(
                self.inner.on_message_send_stream(params, context)
            ) as events:
                async for event in events:
                    if recorded is None and (isinstance(event, Message) or _task_id_of(event)):
                        recorded = self._first_record(event)
                        await self.store.record(key, claim.token, recorded, self.ttl, final=False)
                    yield event
        except BaseException:
            if recorded is None:
                await self.store.release(key, claim.token)
            else:
                await self.store.record(key, claim.token, recorded, self.ttl)
            raise
        if recorded is None:  # a stream that ended empty made nothing
            await self.store.release(key, claim.token)
            return
        await self.store.record(
            key, claim.token, await self._final_record(recorded, params, context), self.ttl
        )

    def _first_record(self, event: object) -> DedupeRecord:
        if isinstance(event, (Message, Task)):
            return self._record_of(event)
        return DedupeRecord(task_id=_task_id_of(event))

    async def _final_record(
        self, recorded: DedupeRecord, params: SendMessageRequest, context: ServerCallContext
    ) -> DedupeRecord:
        """What a finished stream leaves: for shared stores, the task as it ended."""
        saved = _decoded(recorded)
        if (saved is not None and saved.HasField("message")) or not self.store.keeps_snapshots:
            return recorded
        try:
            task = await self.inner.on_get_task(
                GetTaskRequest(id=recorded.task_id, tenant=params.tenant), context
            )
        except Exception:  # keep what the first event told
            _log.debug("reading the task at the end of its stream failed", exc_info=True)
            return recorded
        return recorded if task is None else self._record_of(task)

    # -- the rest, unchanged -----------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """Delegated."""
        return await self.inner.on_get_task(params, context)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """Delegated."""
        return await self.inner.on_list_tasks(params, context)

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """Delegated."""
        return await self.inner.on_cancel_task(params, context)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Delegated."""
        async with contextlib.aclosing(self.inner.on_subscribe_to_task(params, context)) as events:
            async for event in events:
                yield event

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Delegated."""
        return await self.inner.on_create_task_push_notification_config(params, context)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Delegated."""
        return await self.inner.on_get_task_push_notification_config(params, context)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Delegated."""
        return await self.inner.on_list_task_push_notification_configs(params, context)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Delegated."""
        await self.inner.on_delete_task_push_notification_config(params, context)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Delegated."""
        return await self.inner.on_get_extended_agent_card(params, context)


def deduplicate(
    handler: RequestHandler,
    *,
    store: DedupeStore | None = None,
    ttl: float = DEFAULT_TTL,
    wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
    identity: Callable[[ServerCallContext], str] = caller_identity,
) -> DeduplicatingHandler:
    """Wrap an a2a-sdk ``RequestHandler`` so that each message makes one task.

    Args:
        handler: the handler to wrap (a ``DefaultRequestHandler``, or another wrapper).
        store: where messages are remembered (default: a new `MemoryDedupeStore`; a
            `RedisDedupeStore` for a fleet of replicas).
        ttl: seconds a message is remembered after its first attempt (default 24 h).
        wait_timeout: seconds a duplicate waits for the first attempt to make its task.
        identity: the caller part of the key (default `caller_identity`).

    Returns:
        The wrapping handler, to pass to ``create_jsonrpc_routes``, ``create_rest_routes`` or
        ``GrpcHandler`` in place of ``handler``.

    Raises:
        ValueError: ``ttl`` or ``wait_timeout`` is not positive.
    """
    if ttl <= 0 or wait_timeout <= 0:
        raise ValueError("ttl and wait_timeout must be positive")
    return DeduplicatingHandler(
        handler,
        store=store if store is not None else MemoryDedupeStore(),
        ttl=float(ttl),
        wait_timeout=float(wait_timeout),
        identity=identity,
    )
