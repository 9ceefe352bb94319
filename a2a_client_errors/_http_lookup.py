"""The look-up of a raw JSON-RPC or HTTP+JSON SendMessage whose answer was lost.

`HttpLookup` turns the queries of `a2a_client_errors._lookup.find_sent` (and
`follow_task`) into requests of the same binding, to the same agent, with the original
request's headers (its credentials and service parameters included), and reads their
answers; the transports send them through their inner transport. When the task is found, it
also builds what the lost answer would have been: the SendMessage response holding the task,
or, for a stream, the stream's one event (a task already final) or the request that
subscribes to it (a task still working).

JSON-RPC follows the method names of the request (1.0 ``SendMessage`` or 0.3
``message/send``); HTTP+JSON takes its routes from the request's path, under the same prefix
(a tenant, a ``/v1``). A2A 0.3 has no ListTasks: a request in 0.3 method names is looked up
only through a follow-up's task (an HTTP+JSON route does not tell its version: ListTasks is
tried, and an agent without it is learnt as such).

It also builds the non-blocking twin of a unary send (`HttpLookup.non_blocking`): the same
message with A2A 1.0 ``configuration.returnImmediately`` (0.3 ``blocking: false``), whose task
is then waited for with reads.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Final

import httpx

from a2a_client_errors._lookup import (
    GetTaskQuery,
    ListTasksQuery,
    ReadFailedError,
    SentMessage,
    TaskPage,
    TaskView,
    parse_timestamp,
)
from a2a_client_errors._normalize import INVALID, normalize_body
from a2a_client_errors._operations import BY_NAME, OPERATION_OF_METHOD, OPERATIONS, params_of
from a2a_client_errors._outcomes import task_outcome
from a2a_client_errors._parsing import parse_json
from a2a_client_errors._reasons import Reason

if TYPE_CHECKING:
    from a2a_client_errors._errors import CallError
    from a2a_client_errors._operations import Operation

__all__ = [
    "WELL_KNOWN_CARD_PATH",
    "CannotLookError",
    "HttpLookup",
    "agent_of",
    "answer_kind",
    "sent_message",
    "task_view",
]

_SEND_ROUTES: Final = {op.route: op for op in OPERATIONS if op.creates_work}  # "/message:send"
_GET_TASK: Final = BY_NAME["GetTask"]
_LIST_TASKS: Final = BY_NAME["ListTasks"]
_SUBSCRIBE: Final = BY_NAME["SubscribeToTask"]
_DROPPED_HEADERS: Final = frozenset({"content-length", "content-type", "transfer-encoding", "host"})
_SSE: Final = "text/event-stream"
_FRESH: Final = object()  # a look-up's own request id, not the caller's
_USER_ROLES: Final = frozenset({"ROLE_USER", "user", "USER"})
WELL_KNOWN_CARD_PATH: Final = "/.well-known/agent-card.json"
_MAX_INTERFACES_READ: Final = 64
_NO_VIEW: Final = TaskView()


class CannotLookError(Exception):
    """A request that is not a SendMessage this module can look up."""


def _message_of(body: object) -> dict[str, Any] | None:
    params = params_of(body)
    message = None if params is None else params.get("message")
    return message if isinstance(message, dict) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def sent_message(body: object, sent_at: float | None) -> SentMessage | None:
    """The identity of the message a SendMessage body sends (None: no messageId)."""
    message = _message_of(body)
    if message is None:
        return None
    message_id = _text(message.get("messageId", message.get("message_id")))
    if message_id is None:
        return None
    return SentMessage(
        message_id,
        _text(message.get("contextId", message.get("context_id"))),
        _text(message.get("taskId", message.get("task_id"))),
        sent_at,
    )


def task_view(task: object) -> TaskView:
    """What a look-up reads of a JSON task (1.0 ProtoJSON or 0.3 names); never raises."""
    if not isinstance(task, dict):
        return _NO_VIEW
    status = task.get("status")
    history = task.get("history")
    entries: list[tuple[str, bool]] = []
    if isinstance(history, list):
        for message in history:
            if not isinstance(message, dict):
                continue
            message_id = message.get("messageId", message.get("message_id"))
            role = message.get("role")
            entries.append(
                (
                    message_id if isinstance(message_id, str) else "",
                    role in _USER_ROLES if isinstance(role, str) else role == 1,
                )
            )
    task_id = task.get("id")
    context_id = task.get("contextId", task.get("context_id"))
    outcome = task_outcome(task)
    return TaskView(
        task_id if isinstance(task_id, str) else "",
        context_id if isinstance(context_id, str) else "",
        parse_timestamp(status.get("timestamp")) if isinstance(status, dict) else None,
        tuple(entries),
        outcome is not None and outcome.is_final,
    )


def answer_kind(body: object) -> str | None:
    """What a SendMessage answer (JSON) holds: ``"task"``, ``"message"``, or None (neither).

    Reads the 1.0 shapes (``{"task": ...}``, ``{"message": ...}``, in a JSON-RPC ``result``
    or as the HTTP+JSON body) and the 0.3 ones (the Task or Message itself, with ``kind``; the
    0.3 HTTP+JSON ``{"msg": ...}``).
    """
    if not isinstance(body, dict):
        return None
    value = body.get("result") if "jsonrpc" in body else body
    if not isinstance(value, dict):
        return None
    for key, kind in (("task", "task"), ("message", "message"), ("msg", "message")):
        if isinstance(value.get(key), dict):
            return kind
    declared = value.get("kind")
    if declared in ("task", "message"):
        return str(declared)
    if isinstance(value.get("status"), dict):
        return "task"
    if "role" in value and isinstance(value.get("parts"), list):
        return "message"
    return None


class HttpLookup:
    """The queries of one look-up, in the binding and route of ``request``.

    Args:
        request: the SendMessage (or SendStreamingMessage) request whose answer was lost.
        body: its parsed JSON body.

    Attributes:
        lists: whether the agent's binding has ListTasks (A2A 0.3 has none).
        streams: whether the request is a streaming send.

    Raises:
        CannotLookError: the request is not a SendMessage this module can look up.

    """

    def __init__(self, request: httpx.Request, body: object) -> None:
        self.request = request
        self.body = body
        self.headers = [
            (name, value)
            for name, value in request.headers.raw
            if name.decode("latin-1").lower() not in _DROPPED_HEADERS
        ]
        self.rpc_id: Any = None
        self.method: str | None = None
        if isinstance(body, dict) and isinstance(body.get("method"), str):
            method = body["method"]
            send = BY_NAME.get(OPERATION_OF_METHOD.get(method, ""))
            if send is None or not send.creates_work:
                raise CannotLookError(method)
            self.method = method
            self.rpc_id = body.get("id")
            self.streams = send.streams
            self.prefix = ""
            self.legacy = method == send.legacy_method
        else:
            path = request.url.path
            head, slash, last = path.rpartition("/")
            send = _SEND_ROUTES.get(slash + last)
            if send is None:
                raise CannotLookError(path)
            self.streams = send.streams
            self.prefix = head
            self.legacy = False  # a route prefix does not tell the version: ListTasks is tried
        self.lists = not self.legacy

    # --- the card ---------------------------------------------------------------------------

    @property
    def interface(self) -> httpx.URL:
        """The URL of the interface the request went to (a JSON-RPC URL, an HTTP+JSON base)."""
        url = self.request.url
        path = url.path if self.method is not None else self.prefix
        return url.copy_with(path=path or "/", query=None, fragment=None)

    @property
    def agent(self) -> str:
        """The key what is learnt of the agent is kept under: its interface (`agent_of`)."""
        return _same(self.interface)

    def card_requests(self) -> list[httpx.Request]:
        """Where the agent's card may be read: beside the interface's path, then at the root.

        The original headers go along (the same origin the request went to).
        """
        url = self.interface
        beside = url.path.rstrip("/").rpartition("/")[0] + WELL_KNOWN_CARD_PATH
        paths = dict.fromkeys((beside, WELL_KNOWN_CARD_PATH))
        return [
            httpx.Request(
                "GET",
                url.copy_with(path=path),
                headers=self.headers,
                extensions=dict(self.request.extensions),
            )
            for path in paths
        ]

    def card_of(self, response: httpx.Response) -> dict[str, Any] | None:
        """The card a (read) answer holds, when it is this interface's agent's; else None.

        A card is this agent's when it lists the interface the request went to (1.0
        ``supportedInterfaces``, 0.3 ``url`` and ``additionalInterfaces``): a host serving
        several agents answers its root card for another.
        """
        if not 200 <= response.status_code < 300:
            return None
        card = parse_json(response.content)
        if not isinstance(card, dict):
            return None
        listed: list[object] = [card.get("url")]
        for key in ("supportedInterfaces", "additionalInterfaces"):
            entries = card.get(key)
            if isinstance(entries, list):
                listed += [
                    e.get("url") for e in entries[:_MAX_INTERFACES_READ] if isinstance(e, dict)
                ]
        here = _same(self.interface)
        return card if any(isinstance(u, str) and _same_text(u) == here for u in listed) else None

    # --- queries ----------------------------------------------------------------------------

    def query(self, query: GetTaskQuery | ListTasksQuery) -> httpx.Request:
        """The request that asks ``query`` of the agent.

        Raises:
            ReadFailedError: ListTasks of an A2A 0.3 agent, which has none.

        """
        if isinstance(query, ListTasksQuery) and not self.lists:
            raise ReadFailedError("A2A 0.3 has no ListTasks")
        if self.method is not None:
            if isinstance(query, GetTaskQuery):
                return self._rpc(self._method_of(_GET_TASK), {"id": query.task_id})
            return self._rpc(_LIST_TASKS.name, self._list_params(query))
        if isinstance(query, GetTaskQuery):
            return self._get(self.prefix + _GET_TASK.path(id=query.task_id), {})
        return self._get(self.prefix + _LIST_TASKS.route, self._list_params(query))

    def _method_of(self, operation: Operation) -> str:
        """The JSON-RPC method of ``operation`` in the version the request spoke."""
        return operation.legacy_method if self.legacy else operation.name

    @staticmethod
    def _list_params(query: ListTasksQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"pageSize": query.page_size, "includeArtifacts": False}
        if query.context_id:
            params["contextId"] = query.context_id
        if query.history_length is not None:
            params["historyLength"] = query.history_length
        if query.page_token:
            params["pageToken"] = query.page_token
        return params

    def _rpc(self, method: str, params: dict[str, Any], rpc_id: Any = _FRESH) -> httpx.Request:
        """A JSON-RPC request to the same URL, with the original headers (a fresh id by default)."""
        rpc_id = str(uuid.uuid4()) if rpc_id is _FRESH else rpc_id
        body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
        return httpx.Request(
            "POST",
            self.request.url,
            headers=[*self.headers, (b"content-type", b"application/json")],
            content=json.dumps(body).encode(),
            extensions=dict(self.request.extensions),
        )

    def _get(self, path: str, params: dict[str, Any]) -> httpx.Request:
        query = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items()}
        url = self.request.url.copy_with(path=path, query=None).copy_merge_params(query)
        return httpx.Request(
            "GET", url, headers=self.headers, extensions=dict(self.request.extensions)
        )

    def read(self, query: GetTaskQuery | ListTasksQuery, response: httpx.Response) -> Any:
        """The answer ``response`` gives ``query``: a task (or None: not found), a `TaskPage`.

        Raises:
            ReadFailedError: the answer is an error (its `CallError` attached, for the Guard to
                judge), or not the shape the query returns.

        """
        # One parse: the body `normalize` read is the one read here.
        operation = _GET_TASK.name if isinstance(query, GetTaskQuery) else _LIST_TASKS.name
        error, body = normalize_body(response, operation=operation)
        if error is not None:
            if isinstance(query, GetTaskQuery) and _names_missing_task(error):
                return None
            raise ReadFailedError(f"{operation}: {error.reason or error.kind!s}", error)
        if body is INVALID:
            raise ReadFailedError("the answer is not JSON")
        if self.method is not None:
            body = body.get("result") if isinstance(body, dict) else None
        if isinstance(query, GetTaskQuery):
            if not isinstance(body, dict) or task_outcome(body) is None:
                raise ReadFailedError("GetTask did not answer with a task")
            return body
        if not isinstance(body, dict) or not isinstance(body.get("tasks"), list):
            raise ReadFailedError("ListTasks did not answer with tasks")
        tasks: list[Any] = body["tasks"]
        token = body.get("nextPageToken")
        total = body.get("totalSize")
        return TaskPage(
            tuple(t for t in tasks if isinstance(t, dict)),
            token if isinstance(token, str) else "",
            total if isinstance(total, int) and not isinstance(total, bool) else None,
            len(response.content),
        )

    # --- the answer that was lost -----------------------------------------------------------

    def answer(self, task: dict[str, Any]) -> httpx.Response:
        """What the lost answer would have been: the response holding ``task``.

        A stream's answer is one event, the task; the caller resumes it, if it is not final,
        by subscribing (see `subscription`).
        """
        payload: Any = task if self.legacy else {"task": task}  # 0.3: the Task itself
        if self.method is not None:
            payload = {"jsonrpc": "2.0", "id": self.rpc_id, "result": payload}
        data = json.dumps(payload).encode()
        if self.streams:
            return httpx.Response(
                200,
                headers={"content-type": _SSE},
                content=b"data: " + data + b"\n\n",
                request=self.request,
            )
        return httpx.Response(
            200, headers={"content-type": "application/json"}, content=data, request=self.request
        )

    def subscription(self, task: dict[str, Any]) -> httpx.Request | None:
        """The request that resumes a stream on ``task``, when it is not final (else None)."""
        outcome = task_outcome(task)
        task_id = task.get("id")
        if not self.streams or outcome is None or outcome.is_final or not isinstance(task_id, str):
            return None
        if self.method is not None:
            # The stream answers the caller's request: its events carry the caller's id.
            return self._rpc(self._method_of(_SUBSCRIBE), {"id": task_id}, self.rpc_id)
        url = self.request.url.copy_with(path=self.prefix + _SUBSCRIBE.path(id=task_id), query=None)
        return httpx.Request(
            _SUBSCRIBE.verbs[0], url, headers=self.headers, extensions=dict(self.request.extensions)
        )

    @staticmethod
    def opened(response: httpx.Response) -> bool:
        """Whether a subscription's answer is an event stream to hand over."""
        return 200 <= response.status_code < 300 and response.headers.get(
            "content-type", ""
        ).startswith(_SSE)

    # --- sending without blocking -------------------------------------------------------------

    def non_blocking(self) -> httpx.Request | None:
        """The same unary send, asked not to block; None when it is a stream or does not block.

        A copy: the caller's request and body are left as they are. The message (its
        messageId) is the same; only ``configuration.returnImmediately`` (1.0) or
        ``configuration.blocking`` (0.3) is set.
        """
        if self.streams or not isinstance(self.body, dict):
            return None
        body = json.loads(json.dumps(self.body))  # a deep copy, of JSON only
        params = body.get("params") if self.method is not None else body
        if not isinstance(params, dict):
            return None
        configuration = params.get("configuration")
        if configuration is None:
            configuration = params["configuration"] = {}
        if not isinstance(configuration, dict):
            return None
        if self.legacy:
            if configuration.get("blocking") is False:
                return None
            configuration["blocking"] = False
        else:
            if configuration.get("returnImmediately") is True:
                return None
            configuration["returnImmediately"] = True
        return httpx.Request(
            self.request.method,
            self.request.url,
            headers=[*self.headers, (b"content-type", b"application/json")],
            content=json.dumps(body).encode(),
            extensions=dict(self.request.extensions),
        )

    def task_of(self, response: httpx.Response) -> dict[str, Any] | None:
        """The task a unary send's successful answer holds (None: a Message, or unreadable)."""
        try:
            body = parse_json(response.content)
        except Exception:  # an unreadable answer holds no task to wait for
            return None
        value = body.get("result") if self.method is not None and isinstance(body, dict) else body
        if isinstance(value, dict) and isinstance(value.get("task"), dict):
            value = value["task"]
        if not isinstance(value, dict) or task_outcome(value) is None:
            return None
        return value


def agent_of(request: httpx.Request) -> str:
    """The agent a send goes to, as `HttpLookup.agent` names it, without reading its body.

    ``scheme://host:port`` and the interface's path: a JSON-RPC URL's whole path, an HTTP+JSON
    send route's path less its last segment.
    """
    url = request.url
    path = url.path
    if path.endswith(_SEND_ROUTE_ENDS):
        path = path.rpartition("/")[0]
    return _same(url.copy_with(path=path or "/", query=None, fragment=None))


_SEND_ROUTE_ENDS: Final = tuple(_SEND_ROUTES)


def _same(url: httpx.URL) -> str:
    """A URL as compared with a card's: scheme, host, port (defaults filled), path unslashed."""
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{url.scheme}://{url.host}:{port}{url.path.rstrip('/')}"


def _same_text(text: str) -> str:
    """`_same` of a card's URL text ("" when it is not one)."""
    try:
        return _same(httpx.URL(text))
    except (httpx.InvalidURL, TypeError, ValueError):
        return ""


def _names_missing_task(error: CallError) -> bool:
    """Whether an error says the task is not there, in the agent's own words (not a 404 page)."""
    return error.reason is Reason.TASK_NOT_FOUND and error.source.value != "status_fallback"
