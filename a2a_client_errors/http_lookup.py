"""The look-up of a raw JSON-RPC or HTTP+JSON SendMessage whose answer was lost.

`HttpLookup` turns the queries of `a2a_client_errors.lookup.find_sent` into requests of the
same binding, to the same agent, with the original request's headers (its credentials and
service parameters included), and reads their answers; the transports send them through
their inner transport. When the task is found, it also builds what the lost answer would have
been: the SendMessage response holding the task, or, for a stream, the stream's one event
(a task already final) or the request that subscribes to it (a task still working).

JSON-RPC follows the method names of the request (1.0 ``SendMessage`` or 0.3
``message/send``); HTTP+JSON takes its routes from the request's path, under the same prefix
(a tenant, a ``/v1``).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final

import httpx

from a2a_client_errors.lookup import GetTaskQuery, ListTasksQuery, SentMessage, TaskPage
from a2a_client_errors.normalize import INVALID, normalize_body
from a2a_client_errors.outcomes import task_outcome
from a2a_client_errors.reasons import Reason

if TYPE_CHECKING:
    from collections.abc import Iterable

    from a2a_client_errors.errors import CallError

__all__ = ["CannotLookError", "HttpLookup", "message_ids", "sent_message"]

_SEND_METHODS: Final = {
    "SendMessage": False,
    "SendStreamingMessage": True,
    "message/send": False,
    "message/stream": True,
}
_LEGACY: Final = frozenset({"message/send", "message/stream"})
_SEND_ROUTES: Final = {"message:send": False, "message:stream": True}
_DROPPED_HEADERS: Final = frozenset({"content-length", "content-type", "transfer-encoding", "host"})
_SSE: Final = "text/event-stream"
_FRESH: Final = object()  # a look-up's own request id, not the caller's


class CannotLookError(Exception):
    """An answer to a look-up query that does not say whether the task is there."""


def _message_of(body: object) -> dict[str, Any] | None:
    if not isinstance(body, dict):
        return None
    params = body.get("params") if "method" in body else body
    message = params.get("message") if isinstance(params, dict) else None
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


def message_ids(task: object) -> Iterable[str]:
    """The messageIds in a JSON task's history."""
    history = task.get("history") if isinstance(task, dict) else None
    if not isinstance(history, list):
        return ()
    found = (m.get("messageId", m.get("message_id")) for m in history if isinstance(m, dict))
    return [message_id for message_id in found if isinstance(message_id, str)]


def _timestamp(seconds: float) -> str:
    """RFC 3339 in UTC, as ProtoJSON writes a Timestamp."""
    moment = datetime.fromtimestamp(max(seconds, 0.0), tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class HttpLookup:
    """The queries of one look-up, in the binding and route of ``request``.

    Args:
        request: the SendMessage (or SendStreamingMessage) request whose answer was lost.
        body: its parsed JSON body.

    Raises:
        CannotLookError: the request is not a SendMessage this module can look up.

    """

    def __init__(self, request: httpx.Request, body: object) -> None:
        self.request = request
        self.headers = [
            (name, value)
            for name, value in request.headers.raw
            if name.decode("latin-1").lower() not in _DROPPED_HEADERS
        ]
        self.rpc_id: Any = None
        self.method: str | None = None
        if isinstance(body, dict) and isinstance(body.get("method"), str):
            method = body["method"]
            if method not in _SEND_METHODS:
                raise CannotLookError(method)
            self.method = method
            self.rpc_id = body.get("id")
            self.streams = _SEND_METHODS[method]
            self.prefix = ""
        else:
            path = request.url.path
            head, _, last = path.rpartition("/")
            if last not in _SEND_ROUTES:
                raise CannotLookError(path)
            self.streams = _SEND_ROUTES[last]
            self.prefix = head

    # --- queries ----------------------------------------------------------------------------

    def query(self, query: GetTaskQuery | ListTasksQuery) -> httpx.Request:
        """The request that asks ``query`` of the agent."""
        if self.method is not None:
            legacy = self.method in _LEGACY
            if isinstance(query, GetTaskQuery):
                name, params = ("tasks/get" if legacy else "GetTask"), {"id": query.task_id}
            else:
                name, params = ("tasks/list" if legacy else "ListTasks"), self._list_params(query)
            return self._rpc(name, params)
        if isinstance(query, GetTaskQuery):
            return self._get(f"{self.prefix}/tasks/{query.task_id}", {})
        return self._get(f"{self.prefix}/tasks", self._list_params(query))

    @staticmethod
    def _list_params(query: ListTasksQuery) -> dict[str, Any]:
        params: dict[str, Any] = {"pageSize": query.page_size, "includeArtifacts": True}
        if query.context_id:
            params["contextId"] = query.context_id
        if query.status_after is not None:
            params["statusTimestampAfter"] = _timestamp(query.status_after)
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
            CannotLookError: the answer is an error, or not the shape the query returns.

        """
        # One parse: the body `normalize` read is the one read here.
        error, body = normalize_body(
            response, operation="GetTask" if isinstance(query, GetTaskQuery) else None
        )
        if error is not None:
            if isinstance(query, GetTaskQuery) and _names_missing_task(error):
                return None
            raise CannotLookError(str(error.reason or error.kind))
        if body is INVALID:
            raise CannotLookError("the answer is not JSON")
        if self.method is not None:
            body = body.get("result") if isinstance(body, dict) else None
        if isinstance(query, GetTaskQuery):
            if not isinstance(body, dict) or task_outcome(body) is None:
                raise CannotLookError("GetTask did not answer with a task")
            return body
        if not isinstance(body, dict) or not isinstance(body.get("tasks"), list):
            raise CannotLookError("ListTasks did not answer with tasks")
        tasks: list[Any] = body["tasks"]
        token = body.get("nextPageToken")
        return TaskPage(
            tuple(t for t in tasks if isinstance(t, dict)), token if isinstance(token, str) else ""
        )

    # --- the answer that was lost -----------------------------------------------------------

    def answer(self, task: dict[str, Any]) -> httpx.Response:
        """What the lost answer would have been: the response holding ``task``.

        A stream's answer is one event, the task; the caller resumes it, if it is not final,
        by subscribing (see `subscription`).
        """
        payload: Any = task if self.method in _LEGACY else {"task": task}
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
            method = "tasks/resubscribe" if self.method in _LEGACY else "SubscribeToTask"
            # The stream answers the caller's request: its events carry the caller's id.
            return self._rpc(method, {"id": task_id}, self.rpc_id)
        url = self.request.url.copy_with(
            path=f"{self.prefix}/tasks/{task_id}:subscribe", query=None
        )
        return httpx.Request(
            "POST", url, headers=self.headers, extensions=dict(self.request.extensions)
        )

    @staticmethod
    def opened(response: httpx.Response) -> bool:
        """Whether a subscription's answer is an event stream to hand over."""
        return 200 <= response.status_code < 300 and response.headers.get(
            "content-type", ""
        ).startswith(_SSE)


def _names_missing_task(error: CallError) -> bool:
    """Whether an error says the task is not there, in the agent's own words (not a 404 page)."""
    return error.reason is Reason.TASK_NOT_FOUND and error.source.value != "status_fallback"
