"""`deduplicate`: one task per message, however often its caller sends it.

A2A lets a client resend SendMessage with the same messageId after a lost answer, and lets an
agent use the messageId to spot the duplicate (§3.3.1: MAY). No official SDK server does:
a2a-sdk's ``DefaultRequestHandler`` makes a second task and runs the executor again.
``deduplicate(handler)`` wraps any a2a-sdk ``RequestHandler`` so that it does::

    handler = deduplicate(DefaultRequestHandler(agent_executor=..., task_store=..., ...), card=card)

and the wrapper goes wherever a handler goes (the JSON-RPC and HTTP+JSON routes, ``GrpcHandler``).
With ``card=``, the card says so: the `DEDUPLICATE_EXTENSION` extension (never required), with
the ``ttl``, for clients to resend at once. Serve the HTTP app under `A2AErrorMiddleware`, so
that a refused send (below) is answered 503 with ``Retry-After`` on both HTTP bindings.

The guarantee
    Within one store, a SendMessage or SendStreamingMessage that the same caller already sent
    (the same messageId) never reaches the wrapped handler while the first attempt runs,
    however long it runs, and for ``ttl`` seconds after it ended: the executor runs once. So
    a resend received within ``ttl`` seconds of the first send's receipt is always covered,
    and a client's resend sent within ``ttl`` of its first send is covered unless it travels
    longer than the first send took to be answered (see `DEDUPLICATE_EXTENSION`'s module).
    A unary resend answers with the first attempt's task as it is now, read from the task
    store (``on_get_task``), or with the first answer itself when that was a small Message.
    A streaming resend resumes: the task as it is now, then its events until it ends
    (``on_subscribe_to_task``); a task already terminal or interrupted is sent, and the
    stream ends. Every other method is delegated unchanged.

The mark on each answer
    A card can be stale (cached, or served by a hop), so every Task or Message that a
    deduplicated SendMessage or SendStreamingMessage answers (first attempt or resend, every
    such event of a stream) carries the extension's params in its ``metadata``, under the
    extension's URI: ``{"urn:a2a-client-errors:ext:deduplicate:v1": {"ttl": 86400.0,
    "perCaller": true}}`` (read with ``_dedupe_card.read_dedupe_mark``). The mark is on a copy:
    the task store keeps the task as it was made. On a2a-sdk 0.3 the URI is also added to
    the call's ``activated_extensions`` (0.3's JSON-RPC routes echo it in the
    ``X-A2A-Extensions`` header; 1.x's context has no such set). A message passed through
    (no messageId, or ``fail_open`` with the store down) carries no mark.

When the store cannot take the message
    A store never drops another message's claim or record to make room. When it cannot take
    a new message (full, Redis unreachable or refusing writes), the send is refused before
    anything runs, as *not processed*, to be sent again later: over gRPC ``UNAVAILABLE`` with
    a ``RetryInfo`` and ``grpc-retry-pushback-ms``; over JSON-RPC and HTTP+JSON, under
    `A2AErrorMiddleware`, HTTP 503 with ``Retry-After`` and the binding's error body
    (``server/_unavailable.py``). Without the middleware a JSON-RPC route still answers 503
    with ``Retry-After`` (Starlette's plain-text answer to the ``HTTPException`` raised),
    and an HTTP+JSON route an ``InternalError`` (an unknown outcome to a client: it looks the
    message up rather than resend it). The store logs and counts each refusal. With
    ``fail_open=True`` such a message is processed without deduplication instead; a resend
    of it may run again, so that agent promises nothing: no card entry, no mark.

The key: the same caller, the same tenant, the same messageId, the same message
    The caller (`caller_of`) is the authenticated user (``ServerCallContext.user``); else the
    credentials the call presented, hashed: the headers named in `CREDENTIAL_HEADERS` (and
    ``credential_headers=``), as HTTP headers or gRPC metadata, and the client certificate a
    gRPC TLS connection verified. Pass ``caller=`` to name callers otherwise. Calls with none
    of these cannot be told apart: they share one key space (`ANONYMOUS`), and a WARNING says
    so once per handler. The tenant is the call's (``context.tenant``, else the request's).
    They are hashed (SHA-256), with the message's fingerprint (below), into the key: two
    callers who pick the same messageId get two tasks; no user name, credential, messageId or
    message text is stored as such. A message without a messageId is passed through.

A resend is the same message
    The same caller, tenant and messageId, and the first message's taskId, contextId and parts
    (`message_fingerprint`): the key is made of all of them (`message_key`). A different
    message under a messageId already used (other parts, a follow-up to another task, a test
    suite that reuses one messageId for several messages) is not a resend: it is processed as
    a new message, and deduplicated as such (its own resends get its own task), even while the
    first one still runs. It is never answered with the first message's task, and never
    refused for its messageId. The handler counts such reuses (`DeduplicatingHandler.reused`,
    among the last `REUSE_WINDOW` messageIds it saw, in this process) and logs the first at
    WARNING, the others at DEBUG: which fields differed, never the message.

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
      holds this message: its messageId and its parts; the message's own task, for a
      follow-up). Found, it is recorded and every resend answers with it (a FAILED
      task is a result, not an error); not found, the claim is released. a2a-sdk 0.3 has no
      ``on_list_tasks`` (A2A 0.3 has no ListTasks): there the claim is always released.
    * A streaming attempt that raises or is disconnected after its first event keeps its
      record: the resend resumes that task.
    * A first attempt cancelled before it made anything (its client went away) releases the
      claim; a task a2a-sdk goes on making in the background then is not seen.

What is kept, and the limits
    * A record holds ids and the fingerprint, never the task: a resend reads the task from the
      task store. A replica (or a process after a restart) whose task store does not hold it
      answers ``InternalError``: a fleet must share its task store. A Message answer is kept
      when it is at most ``max_message_bytes`` serialized; a resend of a larger one is refused
      with ``UnsupportedOperationError`` (it was processed; its answer cannot be sent again).
    * Across ``ttl``: a record expires ``ttl`` seconds after its first attempt ended; a
      resend after that runs again. The default (24 h) outlasts any client's retry schedule;
      it should not outlast the task store's retention.
    * Across stores: agents that do not share a store do not see each other's messages. The
      in-memory store is one process, bounded in entries and bytes (it refuses new messages
      rather than forget one within its ttl); `RedisDedupeStore` is a fleet.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import functools
import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, NoReturn

from a2a_client_errors._dedupe_card import DEDUPLICATE_EXTENSION, DedupeParams
from a2a_client_errors._reasons import Reason
from a2a_client_errors.server._dedupe_store import (
    DEFAULT_RETRY_AFTER,
    Claim,
    DedupeRecord,
    DedupeStore,
    MemoryDedupeStore,
)
from a2a_client_errors.server._encoding import A2AError
from a2a_client_errors.server._sdk import (
    MESSAGE_CLASS,
    SETTLED,
    TASK_CLASS,
    RequestHandler,
    activate_extension,
    agent_extension,
    dump_message,
    fingerprint_part,
    get_task,
    list_tasks,
    load_message,
    marked,
    put_extension,
    sdk_error,
    sdk_reason,
    subscribe,
    tenant_of,
)
from a2a_client_errors.server._unavailable import (
    STORE_UNAVAILABLE,
    Unavailable,
    grpc_answer,
    http_exception,
    note,
    retry_after_header,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Iterable

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

__all__ = [
    "ANONYMOUS",
    "CREDENTIAL_HEADERS",
    "DEDUPLICATE_EXTENSION",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_TTL",
    "DEFAULT_WAIT_TIMEOUT",
    "REUSE_WINDOW",
    "DeduplicatingHandler",
    "caller_of",
    "dedupe_extension",
    "deduplicate",
    "message_fingerprint",
    "message_key",
]

_log = logging.getLogger("a2a_client_errors.server")

DEFAULT_TTL: Final = 24 * 3600.0
"""Seconds a message is remembered (see the module docstring)."""
DEFAULT_WAIT_TIMEOUT: Final = 60.0
"""Seconds a duplicate waits for the first attempt to make its task."""
DEFAULT_MAX_MESSAGE_BYTES: Final = 8 * 1024
"""The largest Message answer (serialized) kept to answer a resend with."""
ANONYMOUS: Final = "anonymous"
"""The caller of every call that cannot be told apart (no user, no credentials)."""
CREDENTIAL_HEADERS: Final[tuple[str, ...]] = (
    "authorization",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
)
"""The headers (and gRPC metadata keys) whose values tell callers apart when no user is set."""

_LOOKUP_PAGE: Final = 100
_GONE: Final = frozenset({"UNSUPPORTED_OPERATION", "TASK_NOT_FOUND"})
"""The errors of a subscription to a task that settled, or runs elsewhere."""
_CLIENT_CERTIFICATE: Final = "x509_pem_cert"
"""The gRPC auth-context property holding the PEM certificate a TLS peer presented."""
_FINGERPRINT_FIELDS: Final = ("taskId", "contextId", "parts")
REUSE_WINDOW: Final = 4096
"""How many recent messageIds a handler remembers to notice one reused for another message."""


# --------------------------------------------------------------------------------------------
# The caller, the key, the fingerprint
# --------------------------------------------------------------------------------------------


def _header_credentials(headers: object, names: frozenset[str]) -> list[tuple[str, str]]:
    """The (name, value) pairs of ``headers`` (a mapping, or gRPC metadata) named in ``names``."""
    if isinstance(headers, Mapping):
        items: Iterable[Any] = headers.items()
    elif isinstance(headers, (list, tuple)):
        items = headers
    else:
        return []
    found = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2:  # not a (name, value) pair
            continue
        name, value = item
        if not isinstance(name, str) or name.lower() not in names:
            continue
        text = value.hex() if isinstance(value, bytes) else value
        if isinstance(text, str) and text.strip():
            found.append((name.lower(), text))
    return found


def _grpc_credentials(grpc_context: object, names: frozenset[str]) -> list[tuple[str, str]]:
    """The credential metadata of a gRPC call, and the client certificate TLS verified."""
    metadata = getattr(grpc_context, "invocation_metadata", None)
    found = _header_credentials(metadata() if callable(metadata) else None, names)
    auth_context = getattr(grpc_context, "auth_context", None)
    properties = auth_context() if callable(auth_context) else None
    if isinstance(properties, Mapping):
        for certificate in properties.get(_CLIENT_CERTIFICATE) or ():
            if isinstance(certificate, bytes) and certificate:
                found.append((_CLIENT_CERTIFICATE, certificate.hex()))
    return found


def caller_of(
    context: ServerCallContext, *, headers: Iterable[str] = CREDENTIAL_HEADERS
) -> str | None:
    """The caller part of the key, or None when this call's caller cannot be told apart.

    ``user:<user_name>`` when ``context.user`` is authenticated; else ``credentials:`` and the
    SHA-256 of the credentials the call presented: the values of ``headers`` (HTTP headers,
    as a2a-sdk puts them in ``context.state["headers"]``, or gRPC metadata), and the client
    certificate of a gRPC TLS connection (its auth context's ``x509_pem_cert``). Different
    credentials are different callers; the credentials themselves are neither kept nor logged.

    Args:
        context: the call's context.
        headers: the header names (case-insensitive) that carry credentials.

    Returns:
        The caller, or None (no user and no credentials).
    """
    user = context.user
    if user.is_authenticated:
        return f"user:{user.user_name}"
    names = frozenset(name.lower() for name in headers)
    state = context.state
    found = [
        *_header_credentials(state.get("headers"), names),
        *_grpc_credentials(state.get("grpc_context"), names),
    ]
    if not found:
        return None
    text = json.dumps(sorted(found), ensure_ascii=False)
    return "credentials:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def message_key(caller: str, tenant: str, message_id: str, fingerprint: str) -> str:
    """The store key of one message: SHA-256 of the caller, tenant, messageId and fingerprint.

    ``fingerprint`` is `message_fingerprint`'s: a resend (the same taskId, contextId and
    parts) has the key of the first send; another message under the same messageId has a key
    of its own.
    """
    text = json.dumps([caller, tenant, message_id, fingerprint], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _error(reason: Reason, message: str) -> Exception:
    """The a2a-sdk error of ``reason`` (its routes answer it as that A2A error)."""
    return sdk_error(A2AError(reason, message))


def message_fingerprint(message: Message) -> str:
    """What a resend must share with the first message: its taskId, contextId and parts.

    Three SHA-256 digests (their first 128 bits, in hex), joined by ``:``: of the taskId (UTF-8),
    of the contextId (UTF-8), and of the parts, in order, each as its deterministic protobuf
    encoding (``SerializeToString(deterministic=True)``; on a2a-sdk 0.3, its JSON with sorted
    keys) preceded by its length (8 bytes, big-endian). A message reads into the same object
    over JSON-RPC, HTTP+JSON and gRPC, so a resend over another binding has the same
    fingerprint. The messageId, role, metadata,
    extensions and referenced tasks are not part of it.

    Args:
        message: the message sent.

    Returns:
        ``"<taskId digest>:<contextId digest>:<parts digest>"``.
    """
    return ":".join(
        (
            _digest((message.task_id or "").encode("utf-8")),
            _digest((message.context_id or "").encode("utf-8")),
            _parts_digest(message),
        )
    )


def _parts_digest(message: Message) -> str:
    """The digest of a message's parts, in order (see `message_fingerprint`)."""
    parts = hashlib.sha256()
    for part in message.parts:
        data = fingerprint_part(part)
        parts.update(len(data).to_bytes(8, "big"))
        parts.update(data)
    return parts.hexdigest()[:32]


def _differences(first: str, other: str) -> list[str]:
    """The fields that differ between two fingerprints (all of them if one is unreadable)."""
    old, new = first.split(":"), other.split(":")
    if len(old) != len(new) or len(new) != len(_FINGERPRINT_FIELDS):
        return list(_FINGERPRINT_FIELDS)
    return [name for name, a, b in zip(_FINGERPRINT_FIELDS, old, new, strict=True) if a != b]


def dedupe_extension(ttl: float = DEFAULT_TTL) -> Any:
    """The card's `DEDUPLICATE_EXTENSION` entry for a handler with this ``ttl``.

    Never required: a client that does not know it loses nothing. ``ttl`` counts from the end
    of a message's first attempt, which is never forgotten while it runs: a resend sent
    within ``ttl`` seconds of the first send is answered with the first send's task.

    Args:
        ttl: the handler's ttl, in seconds.

    Returns:
        An a2a-sdk ``AgentExtension`` for ``card.capabilities.extensions``.
    """
    return agent_extension(
        DEDUPLICATE_EXTENSION,
        "SendMessage is idempotent per caller: a resend with the same messageId within "
        "ttl seconds of the first send is answered with the first send's task and never "
        "runs again (the agent keeps a message while its first attempt runs, and ttl "
        "seconds after it ended); a resend is the same message (the same messageId, taskId, "
        "contextId and parts): a different message under a messageId already used is "
        "processed as a new message; a message the agent cannot remember is refused as not "
        "processed (503 with Retry-After, gRPC UNAVAILABLE), to be sent again later.",
        DedupeParams(ttl=float(ttl)).to_params(),
    )


def _binding_of(context: ServerCallContext) -> tuple[str, Any]:
    """The binding a call came over, and its gRPC servicer context (None over HTTP)."""
    state = context.state
    servicer = state.get("grpc_context")
    if callable(getattr(servicer, "abort", None)):
        return "grpc", servicer
    return ("jsonrpc" if "method" in state else "http+json"), None


def _request_id(context: ServerCallContext) -> str | int | None:
    """The JSON-RPC id a2a-sdk 1.x keeps in the context, or None."""
    found = context.state.get("request_id")
    if isinstance(found, (str, int)) and not isinstance(found, bool):
        return found
    return None


def _task_id_of(event: object) -> str:
    if isinstance(event, TASK_CLASS):
        return str(event.id)
    return str(getattr(event, "task_id", "") or "")


# --------------------------------------------------------------------------------------------
# The handler
# --------------------------------------------------------------------------------------------


class DeduplicatingHandler(RequestHandler):
    """A ``RequestHandler`` that runs each message once (see the module docstring).

    Made by `deduplicate`; every attribute it does not define is the wrapped handler's.

    Attributes:
        inner: the wrapped handler.
        store: where messages are remembered.
        ttl: seconds a message is remembered.
        wait_timeout: seconds a duplicate waits for the first attempt's task.
        caller: the caller part of the key, from the call's context (None: cannot tell).
        max_message_bytes: the largest Message answer kept to answer a resend with.
        fail_open: whether a message the store cannot take is processed without
            deduplication (True) or refused as not processed (False, the default).
        mark: the mark put in the metadata of each answer (the extension's params), or
            None with ``fail_open``.
        reused: how many messages came under a messageId that this handler saw, among the
            last `REUSE_WINDOW`, with another message (another taskId, contextId or parts):
            each was processed as a new message. Counted in this process only.
    """

    def __init__(
        self,
        inner: RequestHandler,
        *,
        store: DedupeStore,
        ttl: float,
        wait_timeout: float,
        caller: Callable[[ServerCallContext], str | None],
        max_message_bytes: int,
        fail_open: bool = False,
    ) -> None:
        self.inner = inner
        self.store = store
        self.ttl = ttl
        self.wait_timeout = wait_timeout
        self.caller = caller
        self.max_message_bytes = max_message_bytes
        self.fail_open = fail_open
        self.mark: dict[str, Any] | None = (
            None if fail_open else DedupeParams(ttl=float(ttl)).to_params()
        )
        self.reused = 0
        self._warned = False
        self._warn_lock = threading.Lock()
        self._recent: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._reuse_warned = False

    def __getattr__(self, name: str) -> Any:
        # only called for what this class lacks: aclose, task_store, agent_executor, ...
        if name == "inner":  # not yet set (unpickling, copy): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"deduplicate({self.inner!r}, store={self.store!r}, ttl={self.ttl:g})"

    @property
    def _untyped(self) -> Any:
        """The wrapped handler, for the methods only a2a-sdk 0.3 names (typed on 1.x's)."""
        return self.inner

    # -- the key and the claim ---------------------------------------------------------------

    def _anonymous(self) -> str:
        """`ANONYMOUS`, with the WARNING the first time."""
        if not self._warned:
            with self._warn_lock:
                first, self._warned = not self._warned, True
            if first:
                _log.warning(
                    "deduplicate: a message came with no authenticated user and no credentials "
                    "(%s); callers that cannot be told apart share one key space, so one "
                    "caller's message can be answered with the task of another's message "
                    "with the same messageId and content. Authenticate users "
                    "(ServerCallContext.user), send credentials (credential_headers=), or name "
                    "callers with "
                    "deduplicate(..., caller=)",
                    ", ".join(CREDENTIAL_HEADERS),
                )
        return ANONYMOUS

    def _identity(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> tuple[str, str, str] | None:
        """The caller, tenant and messageId of a send, or None when it has no messageId."""
        message_id = params.message.message_id
        if not message_id:
            return None
        tenant = tenant_of(params, context)
        caller = self.caller(context) or self._anonymous()
        return caller, tenant, message_id

    def key_of(
        self, params: SendMessageRequest, context: ServerCallContext, fingerprint: str
    ) -> str | None:
        """The store key of a send, or None when its message has no messageId."""
        identity = self._identity(params, context)
        return None if identity is None else message_key(*identity, fingerprint)

    def _key(
        self, params: SendMessageRequest, context: ServerCallContext, fingerprint: str
    ) -> str | None:
        """`key_of`, noting a messageId this handler saw lately with another message."""
        identity = self._identity(params, context)
        if identity is None:
            return None
        self._note(message_key(*identity, ""), fingerprint)
        return message_key(*identity, fingerprint)

    def _note(self, sent: str, fingerprint: str) -> None:
        """Remember the fingerprint sent under this messageId; count and log a reuse."""
        with self._warn_lock:
            first = self._recent.pop(sent, None)
            self._recent[sent] = fingerprint if first is None else first
            if len(self._recent) > REUSE_WINDOW:
                self._recent.popitem(last=False)
            if first is None or first == fingerprint:
                return
            self.reused += 1
            loud, self._reuse_warned = not self._reuse_warned, True
        _log.log(
            logging.WARNING if loud else logging.DEBUG,
            "deduplicate: a messageId already used came with another message (different %s): "
            "it is processed as a new message, not as a resend (reuses so far: %d; "
            "clients should give each message its own messageId)",
            ", ".join(_differences(first, fingerprint)),
            self.reused,
        )

    async def _claim(self, key: str, fingerprint: str) -> Claim:
        """Claim ``key``, or wait for the first attempt's record (claiming again if released).

        A degraded claim (the store cannot take the message) is returned as it is.

        Raises:
            InternalError: the first attempt did not make its task within ``wait_timeout``.
        """
        while True:
            claim = await self.store.claim(key, fingerprint, self.ttl)
            if claim.owned or claim.degraded or claim.record is not None:
                return claim
            try:
                record = await self.store.wait(key, self.wait_timeout)
            except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
                raise _error(
                    Reason.INTERNAL_ERROR,
                    "a message with this messageId is still being processed; resend it later",
                ) from None
            if record is not None:
                return Claim(owned=False, record=record, fingerprint=record.fingerprint)

    async def _refuse(self, claim: Claim, context: ServerCallContext) -> NoReturn:
        """Refuse a message the store cannot take: not processed, to be sent again later.

        Raises:
            grpc.aio.AbortError: over gRPC (``UNAVAILABLE``, its details and pushback).
            HTTPException: over JSON-RPC (503, ``Retry-After``; completed by the middleware).
            InternalError: over HTTP+JSON (503 once `A2AErrorMiddleware` answers it).
        """
        retry_after = DEFAULT_RETRY_AFTER if claim.retry_after is None else claim.retry_after
        binding, servicer = _binding_of(context)
        refusal = Unavailable(
            STORE_UNAVAILABLE,
            "this agent cannot take this message now: its deduplication store cannot "
            "remember another message (full, unreachable or refusing writes); nothing was "
            f"done: send it again in {retry_after_header(retry_after)} s",
            retry_after,
            binding,
            _request_id(context),
        )
        if servicer is not None:
            await servicer.abort(*grpc_answer(refusal))  # raises grpc.aio.AbortError
        note(refusal)  # A2AErrorMiddleware answers it, where it serves the app
        if binding == "jsonrpc":
            exception = http_exception(refusal)
            if exception is not None:
                raise exception
        metadata = {"retryAfter": retry_after_header(retry_after)}
        raise sdk_error(A2AError(Reason.INTERNAL_ERROR, refusal.message, metadata))

    def _marked(self, event: Any, context: ServerCallContext) -> Any:
        """The answer, with the mark (a copy) when this handler gives its word."""
        if self.mark is None:
            return event
        activate_extension(context, DEDUPLICATE_EXTENSION)
        return marked(event, DEDUPLICATE_EXTENSION, self.mark)

    def _record_of(self, result: Task | Message, fingerprint: str) -> DedupeRecord:
        if isinstance(result, TASK_CLASS):
            return DedupeRecord(task_id=str(result.id), fingerprint=fingerprint)
        answer = dump_message(result)
        kept = answer if len(answer) <= self.max_message_bytes else b""
        return DedupeRecord(fingerprint=fingerprint, message=kept)

    # -- answering a resend ------------------------------------------------------------------

    async def _current_task(
        self,
        record: DedupeRecord,
        params: SendMessageRequest,
        context: ServerCallContext,
    ) -> Task:
        """The first attempt's task as it is now, from the task store."""
        task: Task | None
        try:
            task = await get_task(self.inner, record.task_id, params, context)
        except Exception as exc:
            if sdk_reason(exc) != Reason.TASK_NOT_FOUND:
                raise
            task = None
        if task is None:
            raise _error(
                Reason.INTERNAL_ERROR,
                "this message was already processed, but its task is not in this "
                "agent's task store (replicas must share one task store; a task must outlive "
                "the deduplication ttl)",
            )
        return task

    def _saved_message(self, record: DedupeRecord) -> Message | None:
        """The Message the first attempt answered with, or None when it made a task.

        Raises:
            UnsupportedOperationError: it answered with a Message too large to keep.
        """
        if record.task_id:
            return None
        if not record.message:
            raise _error(
                Reason.UNSUPPORTED_OPERATION,
                "this message was already processed and answered with a Message "
                f"larger than this agent keeps ({self.max_message_bytes} bytes): that answer "
                "cannot be sent again; send a new message (a new messageId) to ask again",
            )
        try:
            message: Message = load_message(record.message)
        except Exception:  # a store's bytes that are not a Message: no answer to repeat
            raise _error(
                Reason.INTERNAL_ERROR,
                "this message was already processed; its answer cannot be read back",
            ) from None
        return message

    async def _answer(
        self, record: DedupeRecord, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        saved = self._saved_message(record)
        if saved is not None:
            return saved
        return await self._current_task(record, params, context)

    async def _resume(
        self, record: DedupeRecord, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        saved = self._saved_message(record)
        if saved is not None:
            yield saved
            return
        task = await self._current_task(record, params, context)
        if task.status.state in SETTLED:
            yield task
            return
        subscription = subscribe(self.inner, task, params, context)
        sent = None
        async with contextlib.aclosing(subscription):
            try:
                async for event in subscription:
                    sent = event
                    yield event
            except Exception as exc:
                # settled between the read and the subscription, or running elsewhere
                if (sent is not None and sent is not task) or sdk_reason(exc) not in _GONE:
                    raise
                if sent is None:  # a stream holds one task: 0.3's was the task as read
                    yield await self._current_task(record, params, context)

    # -- after a failed first attempt --------------------------------------------------------

    async def _made_despite(
        self,
        params: SendMessageRequest,
        context: ServerCallContext,
        since: datetime.datetime,
    ) -> Task | None:
        """The task a failed unary attempt made, if the task list shows one."""
        try:
            tasks = await list_tasks(self.inner, params, context, since, _LOOKUP_PAGE)
        except Exception:  # no listing here: nothing can be found
            _log.debug("task lookup after a failed first attempt failed", exc_info=True)
            return None
        sent = params.message
        parts = _parts_digest(sent)
        for task in tasks:
            if sent.task_id and task.id != sent.task_id:
                continue
            if any(
                message.message_id == sent.message_id and _parts_digest(message) == parts
                for message in task.history or ()
            ):
                found: Task = task
                return found
        return None

    # -- SendMessage -------------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """SendMessage, run once per messageId (see the module docstring)."""
        fingerprint = message_fingerprint(params.message)
        key = self._key(params, context, fingerprint)
        if key is None:
            return await self.inner.on_message_send(params, context)
        claim = await self._claim(key, fingerprint)
        if claim.degraded:
            if not self.fail_open:
                await self._refuse(claim, context)
            return await self.inner.on_message_send(params, context)
        if claim.record is not None:
            answer: Task | Message = self._marked(
                await self._answer(claim.record, params, context), context
            )
            return answer
        since = datetime.datetime.now(datetime.timezone.utc)
        try:
            result = await self.inner.on_message_send(params, context)
        except Exception:
            made = await self._made_despite(params, context, since)
            if made is not None:
                record = self._record_of(made, fingerprint)
                await self.store.record(key, claim.token, record, self.ttl)
            else:
                await self.store.release(key, claim.token)
            raise
        except BaseException:  # cancelled: give the message back
            await self.store.release(key, claim.token)
            raise
        await self.store.record(key, claim.token, self._record_of(result, fingerprint), self.ttl)
        first: Task | Message = self._marked(result, context)
        return first

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """SendStreamingMessage, run once per messageId; a resend resumes the first's task."""
        fingerprint = message_fingerprint(params.message)
        key = self._key(params, context, fingerprint)
        if key is None:
            async with contextlib.aclosing(
                self.inner.on_message_send_stream(params, context)
            ) as events:
                async for event in events:
                    yield event
            return
        claim = await self._claim(key, fingerprint)
        if claim.degraded:
            if not self.fail_open:
                await self._refuse(claim, context)
            async with contextlib.aclosing(
                self.inner.on_message_send_stream(params, context)
            ) as unremembered:
                async for event in unremembered:
                    yield event
            return
        if claim.record is not None:
            async with contextlib.aclosing(self._resume(claim.record, params, context)) as rest:
                async for event in rest:
                    yield self._marked(event, context)
            return
        recorded: DedupeRecord | None = None
        try:
            async with contextlib.aclosing(
                self.inner.on_message_send_stream(params, context)
            ) as events:
                async for event in events:
                    if recorded is None and (
                        isinstance(event, MESSAGE_CLASS) or _task_id_of(event)
                    ):
                        recorded = self._first_record(event, fingerprint)
                        await self.store.record(key, claim.token, recorded, self.ttl, final=False)
                    yield self._marked(event, context)
        except BaseException:
            if recorded is None:
                await self.store.release(key, claim.token)
            else:
                await self.store.record(key, claim.token, recorded, self.ttl)
            raise
        if recorded is None:  # a stream that ended empty made nothing
            await self.store.release(key, claim.token)
            return
        await self.store.record(key, claim.token, recorded, self.ttl)

    def _first_record(self, event: object, fingerprint: str) -> DedupeRecord:
        if isinstance(event, (MESSAGE_CLASS, TASK_CLASS)):
            return self._record_of(event, fingerprint)
        return DedupeRecord(task_id=_task_id_of(event), fingerprint=fingerprint)

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

    # -- a2a-sdk 0.3's names for three of them, delegated too ----------------------------------

    async def on_resubscribe_to_task(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Delegated (a2a-sdk 0.3)."""
        async with contextlib.aclosing(
            self._untyped.on_resubscribe_to_task(params, context)
        ) as events:
            async for event in events:
                yield event

    async def on_set_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        """Delegated (a2a-sdk 0.3)."""
        return await self._untyped.on_set_task_push_notification_config(params, context)

    async def on_list_task_push_notification_config(
        self, params: Any, context: ServerCallContext
    ) -> Any:
        """Delegated (a2a-sdk 0.3)."""
        return await self._untyped.on_list_task_push_notification_config(params, context)


def _check_bounds(ttl: float, wait_timeout: float, max_message_bytes: int) -> None:
    """Refuse a ttl, a wait or a message bound `deduplicate` cannot keep."""
    if ttl <= 0 or wait_timeout <= 0:
        raise ValueError("ttl and wait_timeout must be positive")
    if max_message_bytes < 0:
        raise ValueError("max_message_bytes must not be negative")


def _key_caller(
    caller: Callable[[ServerCallContext], str | None] | None, credential_headers: Iterable[str]
) -> Callable[[ServerCallContext], str | None]:
    """The caller part of the key: the app's, or `caller_of` by the credentials named."""
    extra = tuple(credential_headers)
    if caller is not None and extra:
        raise ValueError("credential_headers applies to the default caller only")
    if caller is not None:
        return caller
    return functools.partial(caller_of, headers=(*CREDENTIAL_HEADERS, *extra))


def _advertise(card: AgentCard | None, ttl: float, *, fail_open: bool) -> None:
    """Add the deduplication entry to the card, when there is one and the agent can keep it."""
    if card is None:
        return
    if fail_open:
        raise ValueError(
            "fail_open processes some messages without deduplication: the card cannot "
            "promise it (leave card= out, or fail closed)"
        )
    put_extension(card, dedupe_extension(ttl))


def deduplicate(
    handler: RequestHandler,
    *,
    store: DedupeStore | None = None,
    ttl: float = DEFAULT_TTL,
    wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
    caller: Callable[[ServerCallContext], str | None] | None = None,
    credential_headers: Iterable[str] = (),
    card: AgentCard | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    fail_open: bool = False,
) -> DeduplicatingHandler:
    """Wrap an a2a-sdk ``RequestHandler`` so that each message makes one task.

    Args:
        handler: the handler to wrap (a ``DefaultRequestHandler``, or another wrapper).
        store: where messages are remembered (default: a new `MemoryDedupeStore`; a
            `RedisDedupeStore` for a fleet of replicas, which must share one task store).
        ttl: seconds a message is remembered after its first attempt ended (default 24 h);
            it is remembered while that attempt runs, however long.
        wait_timeout: seconds a duplicate waits for the first attempt to make its task.
        caller: the caller part of the key, a function of the call's context that returns a
            string, or None when it cannot tell the caller (default: `caller_of`, by the
            authenticated user, else by the credentials presented).
        credential_headers: more header names (API keys of your own) that carry
            credentials, besides `CREDENTIAL_HEADERS`; for the default ``caller`` only.
        card: the agent card the app serves (an a2a-sdk ``AgentCard``): the
            `DEDUPLICATE_EXTENSION` entry, with this ``ttl``, is added to its
            ``capabilities.extensions`` (replacing one of the same URI), so that clients
            know they may resend at once.
        max_message_bytes: the largest Message answer (serialized) kept to answer a resend
            with; a resend of a larger one is refused (``UnsupportedOperationError``).
        fail_open: process a message the store cannot take (full, unreachable, refusing
            writes) without deduplication, instead of refusing it as not processed (503
            with ``Retry-After``, gRPC ``UNAVAILABLE``). A resend of such a message may run
            again, so the agent then promises nothing: no ``card=`` entry, and no mark on
            its answers; clients treat its resends as unsafe.

    Returns:
        The wrapping handler, to pass to ``create_jsonrpc_routes``, ``create_rest_routes`` or
        ``GrpcHandler`` in place of ``handler``.

    Raises:
        ValueError: ``ttl`` or ``wait_timeout`` is not positive, ``max_message_bytes`` is
            negative, ``credential_headers`` is given with a ``caller`` of the app's, or
            ``card`` with ``fail_open`` (a card cannot promise what the agent may skip).
    """
    _check_bounds(ttl, wait_timeout, max_message_bytes)
    key_caller = _key_caller(caller, credential_headers)
    _advertise(card, ttl, fail_open=fail_open)
    return DeduplicatingHandler(
        handler,
        store=store if store is not None else MemoryDedupeStore(),
        ttl=float(ttl),
        wait_timeout=float(wait_timeout),
        caller=key_caller,
        max_message_bytes=max_message_bytes,
        fail_open=fail_open,
    )
